"""What the PyTorch twins of the `train` and `lm` examples share: the process group, batching
over a DistributedSampler as the Rust examples do, and the step-time line that bench/run reads.

Run under `ddp-probe run --nproc-per-node N` (torchrun's variables) or alone (one rank)."""
import argparse
import json
import os
import statistics
import time

import torch
import torch.distributed as dist
from torch.utils.data import DistributedSampler

# Steps left out of the statistics, as in the Rust examples (ddp_examples::WARMUP_STEPS).
WARMUP_STEPS = 3


def arguments(doc, lr):
    """The options both twins take, as the Rust examples name them; each adds its model's."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0].replace("\n", " "))
    p.add_argument("--steps", type=int, default=80, help="training steps (default: 80)")
    p.add_argument("--batch-size", type=int, default=8, help="batch per rank (default: 8)")
    p.add_argument("--lr", type=float, default=lr, help=f"Adam's learning rate (default: {lr})")
    p.add_argument("--seed", type=int, default=42, help="random seed (default: 42)")
    p.add_argument("--bucket-cap-mb", type=float, default=25,
                   help="DDP's bucket_cap_mb (default: 25)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch intra-op threads per rank (default: 1)")
    return p


def init(threads):
    """One intra-op thread per rank (like the Rust examples under the launcher) and a gloo group."""
    torch.set_num_threads(threads)
    if "RANK" not in os.environ:  # alone: a group of one
        os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="29511")
    dist.init_process_group("gloo")
    return dist.get_rank(), dist.get_world_size()


def log0(*args):
    if dist.get_rank() == 0:
        print(*args, flush=True)


def epoch_batches(sampler, batch):
    """The sampler's indices cut into `batch`-sized groups, the last incomplete one dropped."""
    idx = list(iter(sampler))
    return [idx[i:i + batch] for i in range(0, len(idx) - batch + 1, batch)]


def sampler(n, seed):
    return DistributedSampler(range(n), num_replicas=dist.get_world_size(), rank=dist.get_rank(),
                              shuffle=True, seed=seed, drop_last=False)


class Timer:
    """Per-step phase times (ms); `lap(name)` ends the phase that began at the previous lap."""

    def __init__(self):
        self.phases = {}
        self.steps = []

    def begin(self):
        self.t0 = self.t = time.perf_counter()

    def lap(self, name):
        now = time.perf_counter()
        self.phases.setdefault(name, []).append((now - self.t) * 1e3)
        self.t = now

    def end(self):
        self.steps.append((time.perf_counter() - self.t0) * 1e3)

    def report(self, name, params, tensors):
        """Prints, from rank 0, the median step time after the warm-up (averaged over the ranks,
        as the Rust examples do) and a machine-readable line with the phase medians."""
        steady = self.steps[WARMUP_STEPS:]
        med = torch.tensor([statistics.median(steady)], dtype=torch.float64)
        dist.all_reduce(med)
        med = med.item() / dist.get_world_size()
        threads = torch.get_num_threads()
        log0(f"step time: median {med:.3f} ms over {len(steady)} steps after {WARMUP_STEPS} "
             f"warm-up steps (mean of the ranks' medians; {threads} thread{'' if threads == 1 else 's'} per rank)")
        phases = {k: statistics.median(v[WARMUP_STEPS:]) for k, v in self.phases.items()}
        log0("bench: " + json.dumps({"model": name, "params": params, "tensors": tensors,
                                     "step_ms": med, "phases_ms": phases,
                                     "threads": torch.get_num_threads(),
                                     "torch": torch.__version__}))
