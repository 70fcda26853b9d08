"""PyTorch DDP features that change what a trace must record, one per --mode (CPU and gloo, or
CUDA and NCCL with ``--device cuda``).

A small model in the style of PyTorch's examples (an embedding, a
minGPT-like block: LayerNorm, self-attention, MLP; a BatchNorm whose buffers
DDP broadcasts; a classifier head), trained on a fixed random task through a
DataLoader. Reads torchrun's variables, so it runs under `torchrun` and under
`ddp-probe run`:

    ddp-probe run --nproc-per-node 2 examples/python/ddp_features.py --mode no_sync

Modes (each the way PyTorch's documentation writes it):

* ``plain``: the tutorial trainer's loop;
* ``prehook``: a communication hook registered *before* ``instrument``
  (``default_hooks.allreduce_hook``);
* ``fp16`` / ``bf16``: ``default_hooks.fp16_compress_hook`` /
  ``bf16_compress_hook`` registered after ``instrument``;
* ``no_sync``: gradient accumulation over ``--accum`` micro-batches, all but
  the last under ``model.no_sync()``;
* ``static_graph``: ``DDP(..., static_graph=True)``;
* ``unused``: ``find_unused_parameters=True`` with a branch used only on
  even steps;
* ``amp``: the forward under ``torch.autocast`` (bfloat16, on the job's device);
* ``compile``: ``torch.compile(model, backend="aot_eager")`` of the DDP model;
* ``straggler``: rank 1 busy-waits ``--slow-ms`` inside the block's backward, between the
  MLP's gradients and the attention's (a straggler that per-phase timers cannot see: the
  all-reduces even out the ranks' step times).
* ``uneven``: each rank reads its own shard of the data, and rank 1's has one batch fewer:
  its DataLoader runs out a step early and it leaves the loop and exits, as a script with
  shards of unequal length and no ``Join`` does; rank 0's last all-reduce loses its peer (the
  job fails).
* ``gather_sizes``: after training, an evaluation all-gathers each rank's predictions, 51 on
  rank 0 and 50 on rank 1 (an evaluation set split by hand, 101 samples): gloo completes the
  call on rank 0 with wrong data and aborts rank 1 (the job fails);
* ``early_exit``: rank 1's loss is NaN in step 3 and only rank 1 checks for it: it leaves its
  loop after that step's forward, saying why, and exits (a NaN check, early stopping or a step
  limit decided on one rank); rank 0's all-reduce of step 3 loses its peer (the job fails).
* ``join``: rank 1 has three batches fewer, and the loop runs inside DDP's ``Join`` context
  manager (``torch.distributed.algorithms.join.Join([model])``, PyTorch's answer to uneven
  inputs): rank 1 joins early and shadows rank 0's last three steps' collectives;
* ``closure``: every step is ``opt.step(closure)``, the closure running the forward and the
  backward (the pattern PyTorch's optimizers accept and PyTorch Lightning uses for every step);
* ``slow_save``: the process group's timeout is 5 s and rank 0 spends 15 s after its third
  step (a checkpoint on a slow disk, as the tutorial trainer's ``_save_snapshot`` on rank 0
  only); rank 1's next all-reduce times out (the job fails).
* ``worker_killed``: the ranks load through one DataLoader worker each, and rank 1's worker
  gets SIGKILL at its third batch (as from the out-of-memory killer); rank 1 raises PyTorch's
  "DataLoader worker (pid N) is killed by signal: Killed." and, as hydra's ``main`` does
  (minGPT-ddp in PyTorch's examples), the script prints the error and calls ``sys.exit(1)``
  (the job fails).
* ``bad_sample``: rank 1 loads through one DataLoader worker, and its dataset raises a
  ValueError for the first sample of its third batch; PyTorch re-raises it in rank 1 ("Caught
  ValueError in DataLoader worker process 0." with the original traceback; the job fails).
* ``worker_stuck``: rank 1 loads through one DataLoader worker, forked (``fork``, Linux's
  default before Python 3.14) while the rank held a lock that its dataset takes for the first
  sample of the third batch: in the worker the lock stays held, as a lock that another thread
  of a rank (gloo's, a logger's) held at the fork does, and rank 1 waits for that batch for good
  while rank 0 waits for rank 1 in the next all-reduce (a hang: run it with ``--hang-timeout``).
* ``model_differs``: rank 1 builds its model wider (``dim`` 128 against 96), as a size read
  per rank from a node-local configuration would; DDP's check when it wraps the model (against
  rank 0's parameters) fails on rank 1 (the job fails).
* ``slow_download``: the process group's timeout is 5 s and rank 0 spends 15 s before it wraps
  the model in DDP (a dataset download on rank 0 only, before ``instrument``); rank 1's wait in
  DDP's construction times out (the job fails).
* ``log_loss``: every step all-reduces the loss for logging between backward and the optimizer
  (``dist.all_reduce``) and ends with a ``dist.barrier()``: collectives of the program's own.
* ``loop_tail``: after each optimizer step the loop steps an LR scheduler, and every third step
  evaluates (two batches of a DataLoader of its own through the model unwrapped, as Hugging
  Face's Trainer does, the loss all-reduced by a helper ``evaluate`` calls; ``eval()`` on the
  DDP module and ``train()`` on the model inside it after, as PyTorch Lightning does) and
  writes a checkpoint
  to a slow disk (40 ms; both ranks): time between steps, in no step. Its epochs are 6 steps
  (an epoch ends in a gap with an evaluation, so that the long gaps keep their period); after
  each, the epoch's loss is all-reduced once the DataLoader ended (its StopIteration), as timm's
  ``train_one_epoch`` does after its loop. Rank 0 prints ``wall per step: N`` (ns, by its
  own clock, from the top of step 2's iteration to the top of the last one's).
* ``eval_train``: from step 2 on trains with the DDP model in ``eval()`` mode (BatchNorm's
  statistics frozen after a warm-up, as some fine-tuning scripts do): DDP reduces gradients all
  the same.
* ``checkpoint_frozen``: the embedding is frozen (as a LoRA fine-tuning freezes it) and the
  block runs under ``torch.utils.checkpoint.checkpoint(..., use_reentrant=True)``, with
  ``static_graph=True``: the block's input does not require grad, so the block gets no
  gradient and does not train (PyTorch warns once, "None of the inputs have
  requires_grad=True"), while DDP goes on all-reducing its buckets.
* ``zero``: the optimizer is ``ZeroRedundancyOptimizer`` (AdamW on each rank's shard, as
  PyTorch's ZeRO recipe builds it), whose step runs the shard's own optimizer's step and then
  broadcasts the updated parameters; rank 0 prints the time of each step's broadcasts
  (``zero broadcasts: START END``, ns on ddp_probe_torch's clock).
* ``subgroup``: run on 4 ranks; DDP reduces over a process group of the ranks of one parity
  (``DDP(model, process_group=dist.new_group([0, 2]))`` on ranks 0 and 2, ``[1, 3]`` on 1 and
  3: two data-parallel groups, as replicas beside pipeline or tensor parallelism are), and
  rank 3 busy-waits ``--slow-ms`` inside the block's backward, as in ``straggler``: only rank 1
  waits for it.

``--device cuda`` trains on ``cuda:LOCAL_RANK`` over NCCL instead (``scripts/gpu-check`` runs
the modes that record something there, one rank per GPU).

At the end rank 0 prints ``graph breaks: N`` (Dynamo's count; 0 without
``compile``) and ``samples: N`` (the samples it trained on), which the tests
compare with the trace.
"""

import argparse
import contextlib
import gc
import os
import signal
import sys
import threading
import time
import traceback

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

import ddp_probe_torch

MODES = ("plain", "prehook", "fp16", "bf16", "no_sync", "static_graph", "unused", "amp", "compile",
         "straggler", "uneven", "closure", "slow_save", "worker_killed",
         "model_differs", "slow_download", "bad_sample", "fsdp", "worker_stuck", "log_loss",
         "loop_tail", "eval_train", "zero", "checkpoint_frozen", "join", "subgroup",
         "early_exit", "gather_sizes")


class BusyBackward(torch.autograd.Function):
    """Identity forward; its backward busy-waits ``ms`` milliseconds (0: none)."""

    @staticmethod
    def forward(ctx, x, ms):
        ctx.ms = ms
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):

        end = time.perf_counter() + ctx.ms / 1000
        while time.perf_counter() < end:
            pass
        return grad, None


class Block(nn.Module):
    """minGPT's transformer block: pre-norm attention and MLP, residual."""

    def __init__(self, dim, heads, slow_ms=0.0):
        super().__init__()
        self.slow_ms = slow_ms
        self.ln1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        if self.slow_ms:
            # Backward reaches this after the MLP's gradients, before ln2's and the attention's.
            x = BusyBackward.apply(x, self.slow_ms)
        return x + self.mlp(self.ln2(x))


class Model(nn.Module):
    def __init__(self, vocab, dim, classes, unused_branch, slow_ms=0.0):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.block = Block(dim, heads=4, slow_ms=slow_ms)
        self.norm = nn.BatchNorm1d(dim)
        self.head = nn.Linear(dim, classes)
        self.extra = nn.Linear(dim, dim) if unused_branch else None
        self.checkpointed = False

    def forward(self, tokens, use_extra=False):
        x = self.embed(tokens)
        if self.checkpointed:
            x = torch.utils.checkpoint.checkpoint(self.block, x, use_reentrant=True)
        else:
            x = self.block(x)
        x = x.mean(dim=1)
        if self.extra is not None and use_extra:
            x = x + self.extra(x)
        return self.head(self.norm(x))


class KillsItsWorker(torch.utils.data.Dataset):
    """``data`` whose item ``at`` kills the DataLoader worker process that loads it."""

    def __init__(self, data, at):
        self.data, self.at = data, at

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        if i == self.at and torch.utils.data.get_worker_info() is not None:
            # The batch before this one waits in the queue until the rank takes it, and its
            # tensors' file descriptors come from this process then: killed at once, the worker
            # can die before that (the rank then says "exited unexpectedly", once in CI). Two
            # seconds let the rank take it first, so the rank reports the signal.
            time.sleep(2)
            os.kill(os.getpid(), signal.SIGKILL)
        return self.data[i]


class RaisesInItsWorker(torch.utils.data.Dataset):
    """``data`` whose item ``at`` raises in the DataLoader worker that loads it (a sample that
    fails to decode)."""

    def __init__(self, data, at):
        self.data, self.at = data, at

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        if i == self.at:
            raise ValueError(f"sample {i} cannot be decoded")
        return self.data[i]


class WaitsOnAForkedLock(torch.utils.data.Dataset):
    """``data`` whose item ``at`` takes ``lock`` in the DataLoader worker that loads it: a lock
    the rank held when the worker was forked stays held there for good."""

    def __init__(self, data, at):
        self.data, self.at = data, at
        self.lock = threading.Lock()

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        if i == self.at and torch.utils.data.get_worker_info() is not None:
            with self.lock:
                pass
        return self.data[i]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=MODES, default="plain")
    parser.add_argument("--steps", type=int, default=8, help="optimizer steps per rank")
    parser.add_argument("--batch-size", type=int, default=16, help="samples per micro-batch")
    parser.add_argument("--accum", type=int, default=2, help="micro-batches per step (no_sync)")
    parser.add_argument(
        "--bucket-cap-mb", type=float, default=None, help="DDP bucket_cap_mb (0.25; 1 with compile)"
    )
    parser.add_argument("--slow-ms", type=float, default=60.0,
                        help="how long rank 1 busy-waits in backward (straggler)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="cpu (gloo) or cuda (NCCL, cuda:LOCAL_RANK; scripts/gpu-check)")
    args = parser.parse_args()

    device, group_kwargs = torch.device("cpu"), {"backend": "gloo"}
    if args.device == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
        group_kwargs = {"backend": "nccl", "device_id": device}
    if args.mode in ("slow_save", "slow_download"):
        import datetime

        dist.init_process_group(**group_kwargs, timeout=datetime.timedelta(seconds=5))
    else:
        dist.init_process_group(**group_kwargs)
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    vocab, dim, seq, classes = 64, 96, 8, 5
    if args.mode == "model_differs" and rank == 1:
        dim = 128

    slow = args.slow_ms if args.mode == "straggler" and rank == 1 else 0.0
    if args.mode == "subgroup" and rank == 3:
        slow = args.slow_ms
    model = Model(vocab, dim, classes, unused_branch=args.mode == "unused", slow_ms=slow).to(device)
    # Dynamo's DDPOptimizer refuses a cap below DDP's 1 MiB first bucket.
    cap = args.bucket_cap_mb or (1.0 if args.mode == "compile" else 0.25)
    ddp_kwargs = {"bucket_cap_mb": cap}
    if device.type == "cuda":
        ddp_kwargs["device_ids"] = [device.index]
    if args.mode == "static_graph":
        ddp_kwargs["static_graph"] = True
    if args.mode == "checkpoint_frozen":
        model.embed.weight.requires_grad_(False)
        model.checkpointed = True
        ddp_kwargs["static_graph"] = True
    if args.mode == "unused":
        ddp_kwargs["find_unused_parameters"] = True
    if args.mode == "subgroup":
        # Every rank creates every group, in the same order (new_group is collective).
        groups = [dist.new_group(list(range(p, world, 2))) for p in (0, 1)]
        ddp_kwargs["process_group"] = groups[rank % 2]
    if args.mode == "slow_download" and rank == 0:
        time.sleep(15)  # rank 0 downloads the dataset before the model is wrapped
    if args.mode == "fsdp":
        # Sharded instead (FSDP2): ddp-probe records DDP only, so the one line below says so on
        # each rank and the training goes on unrecorded.
        from torch.distributed.fsdp import fully_shard

        fully_shard(model)
    else:
        model = DDP(model, **ddp_kwargs)

    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    if args.mode == "prehook":
        model.register_comm_hook(dist.group.WORLD, default_hooks.allreduce_hook)
    model = ddp_probe_torch.instrument(model)  # <- the one line for ddp-probe
    if args.mode == "fp16":
        model.register_comm_hook(dist.group.WORLD, default_hooks.fp16_compress_hook)
    if args.mode == "bf16":
        model.register_comm_hook(dist.group.WORLD, default_hooks.bf16_compress_hook)
    step_model = model
    if args.mode == "compile":
        step_model = torch.compile(model, backend="aot_eager")

    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, vocab, (2048, seq), generator=g)
    labels = tokens[:, 0] % classes
    data = TensorDataset(tokens, labels)
    if args.mode == "loop_tail":
        epoch = 6 * args.batch_size * world
        data = TensorDataset(tokens[:epoch], labels[:epoch])
    sampler = DistributedSampler(data, num_replicas=world, rank=rank, seed=0)
    if args.mode == "uneven":
        # Shards by hand, rank 1's one batch short of the others'.
        rows = (args.steps - (rank == 1)) * args.batch_size
        data = TensorDataset(tokens[rank * rows:(rank + 1) * rows], labels[rank * rows:(rank + 1) * rows])
        sampler = None
    workers = 0
    if args.mode == "worker_killed":
        workers = 1
        if rank == 1:
            data = KillsItsWorker(data, at=list(sampler)[2 * args.batch_size])
    if args.mode == "bad_sample":
        workers = 1
        if rank == 1:
            data = RaisesInItsWorker(data, at=list(sampler)[2 * args.batch_size])
    # The workers start by spawn, not fork (but in worker_stuck): once in CI, rank 1 waited for
    # its forked worker's first batch until the process group's 30 minutes ran out (forking a
    # process that runs threads, gloo's here, can leave the child stuck on a lock one of them
    # held; Python 3.14 no longer forks by default on Linux for this reason).
    context = "spawn" if workers else None
    if args.mode == "worker_stuck":
        workers, context = 1, "fork"
        if rank == 1:
            data = WaitsOnAForkedLock(data, at=list(sampler)[2 * args.batch_size])
            data.lock.acquire()  # released once the worker is forked, below
    loader = DataLoader(data, batch_size=args.batch_size, sampler=sampler, drop_last=True,
                        num_workers=workers, multiprocessing_context=context)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    if args.mode == "zero":
        from torch.distributed.optim import ZeroRedundancyOptimizer

        opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW,
                                      lr=1e-3)
        broadcast = opt._sync_params  # what its step runs after the shard's optimizer's step

        def timed_broadcast():
            start = ddp_probe_torch.now_ns()
            broadcast()
            if rank == 0:
                print(f"zero broadcasts: {start} {ddp_probe_torch.now_ns()}")

        opt._sync_params = timed_broadcast
    eval_loader = DataLoader(TensorDataset(tokens[:32], labels[:32]), batch_size=args.batch_size)

    def summed_over_ranks(metric):
        # A metric's reduction in a helper of its own, as torchmetrics' and Lightning's are.
        dist.all_reduce(metric)
        return metric

    def evaluate():
        # As PyTorch Lightning's validation leaves it: eval() on the DDP module, then train()
        # on the model inside it only (the DDP module's own flag stays off while it trains).
        model.eval()
        with torch.no_grad():
            total = torch.zeros(())
            for x, y in eval_loader:
                total += F.cross_entropy(model.module(x.to(device)).float(), y.to(device)).cpu()
            total = summed_over_ranks(total.to(device))
        model.module.train()
        return total.item()

    micro = args.accum if args.mode == "no_sync" else 1

    def loss_of(x, y, step):
        ctx = (
            torch.autocast(device.type, dtype=torch.bfloat16)
            if args.mode == "amp"
            else contextlib.nullcontext()
        )
        with ctx:
            kwargs = {"use_extra": step % 2 == 0} if args.mode == "unused" else {}
            out = step_model(x.to(device), **kwargs)
        return F.cross_entropy(out.float(), y.to(device)) / micro

    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10) if args.mode == "loop_tail" else None
    tops = []  # the clock at the top of each iteration (loop_tail)
    step, samples, batches = 0, 0, iter(loader)
    if isinstance(data, WaitsOnAForkedLock):
        data.lock.release()  # in this process; the worker's copy stays held
    steps = args.steps
    joining = contextlib.ExitStack()
    if args.mode == "join":
        from torch.distributed.algorithms.join import Join

        steps = args.steps - 3 if rank == 1 else args.steps
        joining.enter_context(Join([model]))
    left = False  # uneven, early_exit: rank 1 leaves its loop
    while step < steps:
        if args.mode == "closure":
            x, y = next(batches)
            samples += x.shape[0]

            def closure(x=x, y=y, step=step):
                opt.zero_grad(set_to_none=True)
                loss = loss_of(x, y, step)
                loss.backward()
                return loss

            opt.step(closure)
            step += 1
            continue
        tops.append(time.perf_counter_ns())
        if args.mode == "eval_train" and step == 2:
            model.eval()  # BatchNorm's statistics frozen from here on
        opt.zero_grad(set_to_none=True)
        for m in range(micro):
            try:
                x, y = next(batches)
            except StopIteration:
                if args.mode == "uneven":
                    left = True  # out of data
                    break
                if args.mode == "loop_tail":
                    dist.all_reduce(torch.zeros((), device=device))  # the epoch's mean loss
                batches = iter(loader)
                x, y = next(batches)
            samples += x.shape[0]
            ctx = model.no_sync() if m < micro - 1 else contextlib.nullcontext()
            with ctx:
                loss = loss_of(x, y, step)
                if args.mode == "early_exit" and rank == 1 and step == 3:
                    loss = loss * float("nan")
                if args.mode == "early_exit" and torch.isnan(loss):
                    print(f"rank {rank}: the loss is NaN at step {step}, stopping", flush=True)
                    left = True
                    break
                loss.backward()
        if left:
            break
        if args.mode == "log_loss":
            logged = loss.detach().clone()
            dist.all_reduce(logged)
        opt.step()
        if args.mode == "log_loss":
            dist.barrier()
        step += 1
        if args.mode == "slow_save" and rank == 0 and step == 3:
            time.sleep(15)  # the checkpoint that only rank 0 writes
        if sched is not None:
            sched.step()
            if step % 3 == 0:
                evaluate()
                time.sleep(0.04)  # a checkpoint written to a slow disk

    joining.close()  # Join: shadows the other ranks' collectives until every rank is done
    if args.mode == "gather_sizes":
        predictions = torch.zeros(51 - rank, dtype=torch.int64)
        gathered = [torch.zeros_like(predictions) for _ in range(world)]
        dist.all_gather(gathered, predictions)
    if left:
        # Out of data, or stopped by its own NaN check: gone, without a barrier or Join. The
        # process then exits with code 0, or about as often gloo's teardown aborts it
        # ("terminate called without an active exception", SIGABRT): `explain` reads both as
        # the rank that left early.
        return
    if rank == 0:
        breaks = {}
        if args.mode == "compile":
            from torch._dynamo.utils import counters

            breaks = dict(counters["graph_break"])
        print(f"graph breaks: {sum(breaks.values()) if breaks else 0}", flush=True)
        for reason, n in sorted(breaks.items()):
            print(f"graph break x{n}: {reason.splitlines()[0][:160]}", flush=True)
        print(f"samples: {samples}", flush=True)
        if args.mode == "loop_tail" and len(tops) > 3:
            print(f"wall per step: {(tops[-1] - tops[2]) // (len(tops) - 3)}", flush=True)
    # The model goes before the process group, as in train_ddp.py (gloo's teardown during
    # the interpreter's finalization aborts a rank now and then).
    loss_of = step_model = model = opt = closure = None  # noqa: F841
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    if "worker_killed" in sys.argv:
        # What hydra's main does with an exception (hydra/_internal/utils.py run_and_report).
        try:
            main()
        except Exception:  # noqa: BLE001
            traceback.print_exc()
            sys.exit(1)
    else:
        main()
