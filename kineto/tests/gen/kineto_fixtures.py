#!/usr/bin/env python3
"""Writes the PyTorch profiler (Kineto) traces that the importer's tests read.

A 2-rank data-parallel job on CPU with the gloo backend: a tiny MLP wrapped in
DistributedDataParallel (small bucket cap, so several gradient buckets), SGD, 4 profiled
steps under torch.profiler with a schedule, traces written by tensorboard_trace_handler and
gzipped. The output folder gets rank-0.json.gz and rank-1.json.gz (renamed from the
handler's host/pid names; the importer reads the rank from `distributedInfo`, not the name).

usage: .venv/bin/python kineto/tests/gen/kineto_fixtures.py [OUT_DIR] [--steps N] [--width W]
(default OUT_DIR: kineto/tests/data/kineto/gloo-2rank)
"""
import argparse
import glob
import gzip
import os
import shutil
import socket
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank: int, world: int, port: int, tmp: str, steps: int, width: int) -> None:
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(16, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 1)
    )
    # A small cap: the gradients travel in several buckets, as in a real job.
    ddp = DDP(model, bucket_cap_mb=0.01)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(rank)
    out = os.path.join(tmp, f"rank{rank}")
    sched = torch.profiler.schedule(wait=1, warmup=1, active=steps, repeat=1)
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU],
        schedule=sched,
        on_trace_ready=torch.profiler.tensorboard_trace_handler(out, use_gzip=True),
        record_shapes=True,
    ) as prof:
        for _ in range(steps + 2):
            x = torch.randn(32, 16, generator=gen)
            y = torch.randn(32, 1, generator=gen)
            opt.zero_grad()
            loss = nn.functional.mse_loss(ddp(x), y)
            loss.backward()
            opt.step()
            prof.step()
    dist.barrier()
    dist.destroy_process_group()


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?", default=os.path.join(here, "..", "data", "kineto", "gloo-2rank"))
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--width", type=int, default=64)
    a = ap.parse_args()
    world = 2
    tmp = tempfile.mkdtemp(prefix="kineto-fixtures-")
    mp.spawn(worker, args=(world, free_port(), tmp, a.steps, a.width), nprocs=world, join=True)
    os.makedirs(a.out, exist_ok=True)
    for rank in range(world):
        files = sorted(glob.glob(os.path.join(tmp, f"rank{rank}", "*.json.gz")))
        assert len(files) == 1, files
        # Re-compress deterministically (no file name or time in the gzip header).
        with gzip.open(files[0], "rb") as f:
            data = f.read()
        with open(os.path.join(a.out, f"rank-{rank}.json.gz"), "wb") as f:
            with gzip.GzipFile(fileobj=f, mode="wb", filename="", mtime=0, compresslevel=9) as g:
                g.write(data)
    shutil.rmtree(tmp)
    print(f"wrote {a.out}/rank-0.json.gz and rank-1.json.gz")


if __name__ == "__main__":
    main()
