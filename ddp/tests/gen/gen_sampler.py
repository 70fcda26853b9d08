"""Writes ddp/tests/data/sampler.json: torch.randperm and
torch.utils.data.DistributedSampler outputs from the project's torch (2.13.0),
the fixture that ddp/tests/sampler.rs compares the Rust implementation with.

Run from the repository root:  .venv/bin/python ddp/tests/gen/gen_sampler.py
Add --huge to also record torch.randperm on both sides of the size at which
randperm switches from 32-bit to 64-bit draws (needs about 4 GB of memory and
a minute); the checked-in fixture was written with --huge.

Every index list is stored as its length, its `checksum` (see below, the Rust
test recomputes it) and its first and last few elements, or the whole list
when it is short.
"""

import argparse
import json
import os
import sys

import numpy as np
import torch
from torch.utils.data import DistributedSampler

MASK = (1 << 64) - 1
K = 0x9E3779B97F4A7C15
# randperm uses 32-bit draws for n < UINT32_MAX / 20 (integer division) and
# 64-bit draws from there on (aten/src/ATen/native/TensorFactories.cpp).
SWITCH = 0xFFFFFFFF // 20

FULL_MAX = 16  # lists up to this length are stored in full
HEAD = 8
TAIL = 4


def checksum(values) -> int:
    """sum over i of (x_i + 1) * ((i + 1) * K mod 2^64), mod 2^64.

    Any single transposition of distinct values below 2^32 changes it."""
    x = np.asarray(values, dtype=np.uint64)
    total = 0
    chunk = 1 << 22
    with np.errstate(over="ignore"):
        for start in range(0, x.size, chunk):
            part = x[start : start + chunk]
            w = (np.arange(start + 1, start + 1 + part.size, dtype=np.uint64)) * np.uint64(K)
            total = (total + int(np.sum((part + np.uint64(1)) * w, dtype=np.uint64))) & MASK
    return total


def summary(values, full_max=FULL_MAX, head=HEAD, tail=TAIL):
    """[len, checksum, head, tail]; head is the whole list when it is short
    (tail is then empty)."""
    n = len(values)
    c = str(checksum(values))
    if n <= full_max:
        return [n, c, [int(v) for v in values], []]
    return [n, c, [int(v) for v in values[:head]], [int(v) for v in values[n - tail :]]]


def randperm(n, seed):
    g = torch.Generator()
    g.manual_seed(seed)
    return torch.randperm(n, generator=g)


class Sized:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--huge", action="store_true")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "data", "sampler.json"))
    args = ap.parse_args()

    seeds = [0, 1, 42, 2**31 + 7, 2**32 + 5, 2**63 + 11, 2**64 - 1]
    perm_cases = []
    for n in [0, 1, 2, 3, 5, 7, 10, 100, 455, 569, 1000, 4096, 100003, 1 << 20]:
        for seed in seeds:
            p = randperm(n, seed).numpy()
            perm_cases.append([n, str(seed), *summary(p, full_max=100, head=16, tail=16)])
    huge_cases = []
    if args.huge:
        for n in [SWITCH - 1, SWITCH]:
            p = randperm(n, 0).numpy()
            huge_cases.append([n, "0", *summary(p, full_max=0, head=32, tail=32)])
            del p

    lengths = [0, 1, 7, 10, 455, 569, 1000, 100003]
    worlds = [1, 2, 3, 4, 8]
    epochs = [0, 1, 5]
    sampler_seeds = [0, 42, 2**31 + 7]
    rows = []
    for length in lengths:
        for world in worlds:
            for drop_last in [False, True]:
                for shuffle in [True, False]:
                    # Without shuffling the seed and the epoch do not matter;
                    # one epoch/seed is recorded and the Rust test checks that
                    # every epoch/seed gives it.
                    for seed in sampler_seeds if shuffle else [0]:
                        for epoch in epochs if shuffle else [0]:
                            for rank in range(world):
                                s = DistributedSampler(
                                    Sized(length),
                                    num_replicas=world,
                                    rank=rank,
                                    shuffle=shuffle,
                                    seed=seed,
                                    drop_last=drop_last,
                                )
                                s.set_epoch(epoch)
                                idx = list(iter(s))
                                rows.append(
                                    [
                                        length,
                                        world,
                                        rank,
                                        epoch,
                                        str(seed),
                                        shuffle,
                                        drop_last,
                                        len(s),
                                        s.total_size,
                                        *summary(idx),
                                    ]
                                )

    # Invalid ranks raise in PyTorch; the Rust constructor must refuse them too.
    invalid = []
    for world, rank in [(1, 1), (2, 2), (4, 7), (0, 0)]:
        try:
            DistributedSampler(Sized(10), num_replicas=world, rank=rank)
            invalid.append({"world": world, "rank": rank, "error": None})
        except ValueError as e:
            invalid.append({"world": world, "rank": rank, "error": str(e)})

    out = {
        "torch_version": torch.__version__,
        "checksum": "sum_i (x_i + 1) * ((i + 1) * 0x9E3779B97F4A7C15 mod 2^64) mod 2^64",
        "randperm_switch_n": SWITCH,
        # Rows are positional to keep the file small.
        "randperm_columns": ["n", "seed", "len", "checksum", "head", "tail"],
        "randperm": perm_cases,
        "randperm_huge": huge_cases,
        "sampler_columns": [
            "length", "world", "rank", "epoch", "seed", "shuffle", "drop_last",
            "num_samples", "total_size", "len", "checksum", "head", "tail",
        ],
        "sampler": rows,
        "invalid": invalid,
    }
    with open(args.out, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {args.out}: {len(perm_cases)} randperm, {len(huge_cases)} huge, {len(rows)} sampler rows", file=sys.stderr)


if __name__ == "__main__":
    main()
