"""A plain PyTorch DistributedDataParallel training on CPU (gloo), recorded by ddp-probe.

Reads torchrun's variables (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), so it
runs under `torchrun` and under `ddp-probe run`:

    target/release/ddp-probe run --nproc-per-node 2 -- .venv/bin/python examples/python/train_ddp.py

The only line that ddp-probe needs is the one marked below. The task: classify
points of a fixed random mixture of Gaussians (generated from --seed, so every
rank sees the same data set; DistributedSampler gives each rank its share) with
an MLP. At the end rank 0 prints PyTorch's own bucket layout (from DDP's
reducer), one line `pytorch buckets: id=bytes ...`.

A fault for ddp-probe's own tests (not needed to use ddp-probe):
TRAIN_DDP_HANG_AT_STEP=S with TRAIN_DDP_HANG_RANK=R makes rank R stop making
progress before the forward of step S (0-based, the step numbers of the
trace): it sleeps until it is stopped, and the other ranks wait for it in the
all-reduces of step S.
"""

import argparse
import gc
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

import ddp_probe_torch


def make_data(n, features, classes, seed):
    g = torch.Generator().manual_seed(seed)
    centers = torch.randn(classes, features, generator=g) * 2.0
    labels = torch.randint(0, classes, (n,), generator=g)
    points = centers[labels] + torch.randn(n, features, generator=g)
    return TensorDataset(points, labels)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30, help="optimizer steps per rank")
    parser.add_argument("--batch-size", type=int, default=32, help="samples per rank and step")
    parser.add_argument("--bucket-cap-mb", type=float, default=None, help="DDP bucket_cap_mb")
    parser.add_argument("--hidden", type=int, default=256, help="width of the hidden layers")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)

    features, classes = 32, 10
    model = nn.Sequential(
        nn.Linear(features, args.hidden),
        nn.ReLU(),
        nn.Linear(args.hidden, args.hidden),
        nn.ReLU(),
        nn.Linear(args.hidden, args.hidden // 2),
        nn.ReLU(),
        nn.Linear(args.hidden // 2, classes),
    )
    kwargs = {} if args.bucket_cap_mb is None else {"bucket_cap_mb": args.bucket_cap_mb}
    model = ddp_probe_torch.instrument(DDP(model, **kwargs))  # <- the one line for ddp-probe

    data = make_data(4096, features, classes, args.seed)
    sampler = DistributedSampler(data, num_replicas=world, rank=rank, seed=args.seed)
    loader = DataLoader(data, batch_size=args.batch_size, sampler=sampler, drop_last=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    hang_at = int(os.environ.get("TRAIN_DDP_HANG_AT_STEP", "-1"))
    hang_rank = int(os.environ.get("TRAIN_DDP_HANG_RANK", "-1"))

    step, epoch = 0, 0
    while step < args.steps:
        sampler.set_epoch(epoch)
        for x, y in loader:
            if step == hang_at and rank == hang_rank:
                print(f"rank {rank}: TRAIN_DDP_HANG_AT_STEP={hang_at}: not going on", flush=True)
                while True:
                    time.sleep(60)
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            step += 1
            if step % 10 == 0 or step == args.steps:
                avg = loss.detach().clone()
                dist.all_reduce(avg)
                if rank == 0:
                    print(f"step {step} loss {avg.item() / world:.4f}", flush=True)
            if step == args.steps:
                break
        epoch += 1

    if rank == 0:
        layout = model.reducer._get_zeros_like_grad_buckets()
        sizes = " ".join(
            f"{b.index()}={b.buffer().numel() * b.buffer().element_size()}" for b in layout
        )
        print(f"pytorch buckets: {sizes}", flush=True)
    # No rank closes its gloo connections while a peer still uses them (gloo may abort
    # with "terminate called without an active exception" otherwise). The model and its
    # optimizer go first, so that the process group is gone before the interpreter's
    # finalization, where gloo's teardown aborted rank 1 now and then (PYTHONFAULTHANDLER:
    # "<no Python frame>"): 3 runs in 80 of this script under torchrun without these lines,
    # 0 in 60 with them (2026-12-02).
    del model, opt
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
