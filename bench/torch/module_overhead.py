"""CPU cost per step of ddp_probe_torch: a tiny-step PyTorch DDP job (gloo, 2 ranks) under
`ddp-probe run`, recording on and off (DDP_PROBE_TRACE=0), alternating, several rounds.

    .venv/bin/python bench/torch/module_overhead.py [--rounds 5] [--steps 3000]

A step is as small as DDP allows (two 16x16 linear layers, batch 4, a DataLoader, SGD), so
the recorder's own work dominates what changes. Each rank measures two CPU times over the
timed steps (rank 0's figures are used):

* process: every thread (training, autograd, gloo's, the recorder's daemon thread). gloo's
  threads poll while they wait, so this figure moves by +-150 us per step from run to run;
* training + recorder: the training thread (forward, backward and the hooks DDP and autograd
  call on it, the recorder's formatting and writes) and the recorder's daemon thread, read from
  /proc/self/task/<tid>/schedstat (nanoseconds). It leaves out the completion callbacks that
  gloo runs on its own threads (one per bucket and step).

Prints each round's CPU microseconds per step with recording on and off, the median differences
(the module's cost; goal <= 60 us, judged on the training + recorder figure) and writes
bench/results/module_overhead.json (or $MODULE_OVERHEAD_JSON). On a small shared VM the rounds
spread by hundreds of microseconds; bench/torch/module_instructions.py counts the instructions
the module adds per step instead, which that noise does not move.

Run as a rank (RANK set, by `ddp-probe run`) it is the training job itself.
"""

import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
GOAL_US = 60.0


def rank_main(steps, warmup):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, TensorDataset

    import ddp_probe_torch

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 16))
    model = ddp_probe_torch.instrument(DDP(model))
    data = TensorDataset(torch.randn(256, 16), torch.randn(256, 16))
    loader = DataLoader(data, batch_size=4, shuffle=False)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def batches():
        while True:
            yield from loader

    it = batches()

    def run(n):
        for _ in range(n):
            x, y = next(it)
            opt.zero_grad(set_to_none=True)
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()

    threads = [threading.get_native_id()]
    if ddp_probe_torch._ACTIVE:
        threads.append(ddp_probe_torch._ACTIVE[0].writer._thread.native_id)

    def threads_ns():
        total = 0
        for tid in threads:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        return total

    run(warmup)
    dist.barrier()
    cpu0, own0, wall0 = time.process_time(), threads_ns(), time.perf_counter()
    run(steps)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    own = (threads_ns() - own0) / 1e9
    if dist.get_rank() == 0:
        print(f"cpu_us_per_step {cpu / steps * 1e6:.2f} own_us_per_step {own / steps * 1e6:.2f} "
              f"wall_us_per_step {wall / steps * 1e6:.2f}")
    dist.barrier()
    dist.destroy_process_group()


def one_job(probe, steps, record, out):
    env = dict(os.environ)
    env.pop("DDP_PROBE_TRACE", None)
    if not record:
        env["DDP_PROBE_TRACE"] = "0"
    cmd = [probe, "run", "--nproc-per-node", "2", "--console", "rank0", "--out", out, "--",
           sys.executable, __file__, "--steps", str(steps)]
    text = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False).stdout
    m = re.search(r"cpu_us_per_step ([0-9.]+) own_us_per_step ([0-9.]+) wall_us_per_step ([0-9.]+)", text)
    if not m:
        sys.exit(f"module_overhead: a job failed (run directory {out}):\n{text[-2000:]}")
    return float(m.group(1)), float(m.group(3)), float(m.group(2))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    p.add_argument("--rounds", type=int, default=5,
                   help="pairs of jobs, recording on and off, alternating (default: 5)")
    p.add_argument("--steps", type=int, default=3000, help="timed steps per job (default: 3000)")
    p.add_argument("--warmup", type=int, default=200,
                   help="steps before the timed ones (default: 200)")
    p.add_argument("--probe", default=str(ROOT / "target/release/ddp-probe"),
                   help="the ddp-probe binary to launch with (default: target/release/ddp-probe)")
    args = p.parse_args()
    if "RANK" in os.environ:
        return rank_main(args.steps, args.warmup)
    on, off = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.rounds):
            a = one_job(args.probe, args.steps, True, f"{tmp}/on-{i}")
            b = one_job(args.probe, args.steps, False, f"{tmp}/off-{i}")
            on.append(a)
            off.append(b)
            print(f"round {i + 1}: CPU per step, process on {a[0]:7.1f} off {b[0]:7.1f} us; "
                  f"training + recorder threads on {a[2]:7.1f} off {b[2]:7.1f} us "
                  f"(wall {a[1]:.1f} / {b[1]:.1f} us)", flush=True)
    diffs = [a[0] - b[0] for a, b in zip(on, off)]
    own_diffs = [a[2] - b[2] for a, b in zip(on, off)]
    cost = statistics.median(own_diffs)
    process_cost = statistics.median(diffs)
    verdict = "OK" if cost <= GOAL_US else "over the goal"
    print(f"process CPU added per step: median {process_cost:.1f} us (rounds "
          f"{', '.join(f'{d:.1f}' for d in diffs)})")
    print(f"module CPU cost per step (training + recorder threads): median {cost:.1f} us (rounds "
          f"{', '.join(f'{d:.1f}' for d in own_diffs)}); goal <= {GOAL_US:.0f} us: {verdict}")
    path = pathlib.Path(os.environ.get("MODULE_OVERHEAD_JSON", ROOT / "bench/results/module_overhead.json"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({
        "benchmark": "module_cpu_per_step", "ranks": 2, "steps": args.steps,
        "on_cpu_us": [a[0] for a in on], "off_cpu_us": [b[0] for b in off],
        "on_thread_cpu_us": [a[2] for a in on], "off_thread_cpu_us": [b[2] for b in off],
        "on_wall_us": [a[1] for a in on], "off_wall_us": [b[1] for b in off],
        "cost_us": cost, "process_cost_us": process_cost, "goal_us": GOAL_US,
    }, indent=2) + "\n")


if __name__ == "__main__":
    main()
