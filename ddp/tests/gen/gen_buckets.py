"""Writes ddp/tests/data/buckets.json: gradient bucket layouts computed by the
project's torch (2.13.0), the fixture ddp/tests/buckets.rs compares the Rust
implementation (ddp/src/buckets.rs) with.

Run from the repository root:  .venv/bin/python ddp/tests/gen/gen_buckets.py

Two kinds of cases:

* "assign": direct calls of torch.distributed._compute_bucket_assignment_by_size
  (the C++ compute_bucket_assignment_by_size of reducer.cpp) on parameter lists
  and size-limit lists, with and without tensor_indices (the rebuild form,
  where no sorting happens and the order of the per-(dtype, device) leftover
  buckets is the iteration order of the C++ unordered_map).
* "ddp": real DistributedDataParallel instances on a one-rank gloo group. A
  communication hook records the buckets each backward pass really reduces
  (the first pass uses the layout built at construction, the last one the
  layout after the one-time rebuild; for dense models the latter is also
  checked against the Reducer's own buckets), and post-accumulate-grad hooks
  record the gradient-ready order.

Parameters are stored as [numel, element_size, scalar_type, device_type,
device_index, sparse] where scalar_type is the c10::ScalarType number and
device_type the c10::DeviceType number.
"""

import contextlib
import json
import os
import random
import sys

import torch
import torch.distributed as dist
import torch.nn as nn

# c10::ScalarType numbering (torch/headeronly/core/ScalarType.h).
SCALAR_TYPE = {
    torch.uint8: 0,
    torch.int8: 1,
    torch.int16: 2,
    torch.int32: 3,
    torch.int64: 4,
    torch.float16: 5,
    torch.float32: 6,
    torch.float64: 7,
    torch.complex32: 8,
    torch.complex64: 9,
    torch.complex128: 10,
    torch.bool: 11,
    torch.bfloat16: 15,
    torch.bits8: 21,
    torch.bits16: 22,
    torch.float8_e5m2: 23,
    torch.float8_e4m3fn: 24,
    torch.float8_e5m2fnuz: 25,
    torch.float8_e4m3fnuz: 26,
    torch.uint16: 27,
    torch.uint32: 28,
    torch.uint64: 29,
    torch.float8_e8m0fnu: 44,
    torch.float4_e2m1fn_x2: 45,
}
# c10::DeviceType numbering (torch/headeronly/core/DeviceType.h).
DEVICE_TYPE = {"cpu": 0, "cuda": 1, "meta": 14}

MiB = 1024 * 1024


def spec(t, sparse=False):
    d = t.device
    index = -1 if d.index is None else d.index
    return [t.numel(), t.element_size(), SCALAR_TYPE[t.dtype], DEVICE_TYPE[d.type], index, bool(sparse)]


def make(shapes, dtype=torch.float32, device="cpu"):
    return [torch.empty(s, dtype=dtype, device=device) for s in shapes]


def assign_case(name, tensors, limits, sparse=None, order=None):
    """order: None for the initial form, else the tensor_indices (rebuild)."""
    sparse = sparse or [False] * len(tensors)
    if order is None:
        idx, lim = dist._compute_bucket_assignment_by_size(tensors, limits, sparse)
    else:
        idx, lim = dist._compute_bucket_assignment_by_size(
            [tensors[i] for i in order], limits, sparse, order
        )
    return {
        "name": name,
        "params": [spec(t, s) for t, s in zip(tensors, sparse)],
        "limits": [int(x) for x in limits],
        "tensor_indices": order,
        "buckets": idx,
        "bucket_limits": lim,
    }


def assign_cases():
    rng = random.Random(1234)
    out = []
    mlp = make([(512, 784), (512,), (256, 512), (256,), (10, 256), (10,)])
    for limits in (
        [dist._DEFAULT_FIRST_BUCKET_BYTES, 25 * MiB],
        [sys.maxsize],
        [MiB],
        [25 * MiB],
        [1],
        [0],
        [100, 1000],
        [4096, 2000, 600_000],
    ):
        out.append(assign_case(f"mlp limits={limits}", mlp, limits))
        out.append(assign_case(f"mlp reversed order limits={limits}", mlp, limits, order=list(range(len(mlp)))[::-1]))

    # A parameter larger than the cap, among small ones.
    big = make([(16,), (1 << 20,), (16,), (16,), (3 << 19,), (8,), (600_000,), (4,)])
    for limits in ([MiB, 2 * MiB], [MiB], [64, 2 * MiB], [sys.maxsize]):
        out.append(assign_case(f"big params limits={limits}", big, limits))
        order = list(range(len(big)))
        rng.shuffle(order)
        out.append(assign_case(f"big params shuffled order limits={limits}", big, limits, order=order))

    # Mixed dtypes interleaved: each (dtype, device) has its own stream of
    # buckets and its own position in the limit list.
    dtypes = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.float32, torch.float16]
    mixed = [torch.empty(rng.choice([3, 100, 1000, 5000, 40_000]), dtype=dtypes[i % len(dtypes)]) for i in range(30)]
    for limits in ([1000, 30_000], [sys.maxsize], [5000], [1, 10**6], [2000, 8000, 64_000]):
        out.append(assign_case(f"mixed dtypes limits={limits}", mixed, limits))
        for k in range(3):
            order = list(range(len(mixed)))
            rng.shuffle(order)
            out.append(assign_case(f"mixed dtypes order#{k} limits={limits}", mixed, limits, order=order))
        out.append(assign_case(f"mixed dtypes reversed limits={limits}", mixed, limits, order=list(range(len(mixed)))[::-1]))

    # Two dtypes, first appearance in either order (leftover order of the map).
    for first in (torch.float16, torch.float64, torch.float32):
        pair = [torch.empty(10, dtype=first)] + [
            torch.empty(10, dtype=d) for d in (torch.float32, torch.float64, torch.float16, torch.float32)
        ]
        out.append(assign_case(f"pair first={first}", pair, [sys.maxsize], order=list(range(len(pair)))))
        out.append(assign_case(f"pair first={first} reversed", pair, [sys.maxsize], order=list(range(len(pair)))[::-1]))

    # Sparse gradients: own bucket with limit 0, in iteration order.
    sp = make([(1000, 16), (16,), (50, 16), (16, 16), (16,), (2000, 16)])
    flags = [True, False, True, False, False, True]
    for limits in ([MiB, 25 * MiB], [100, 2000]):
        out.append(assign_case(f"sparse limits={limits}", sp, limits, sparse=flags))
        out.append(assign_case(f"sparse reversed limits={limits}", sp, limits, sparse=flags, order=[5, 4, 3, 2, 1, 0]))

    # Many (dtype, device) keys: exercises the growth of the C++ unordered_map
    # (13 -> 29 -> 59 -> 127 buckets), whose iteration order decides the order
    # of the leftover buckets when tensor_indices is given.
    keyed = []
    for dev in ("cpu", "meta"):
        for d in SCALAR_TYPE:
            keyed.append(torch.empty(rng.choice([1, 2, 5, 64]), dtype=d, device=dev))
    for n_keys in (2, 3, 5, 8, 12, 13, 14, 20, 29, 30, 40, 48):
        for k in range(2):
            sub = rng.sample(keyed, n_keys)
            order = list(range(len(sub)))
            rng.shuffle(order)
            out.append(assign_case(f"{n_keys} keys order#{k}", sub, [sys.maxsize], order=order))
    for k in range(4):
        sel = keyed[:]
        rng.shuffle(sel)
        # Several tensors per key and a small limit, so some keys close
        # buckets early and others only have leftovers.
        many = sel + [torch.empty(t.numel() * 3, dtype=t.dtype, device=t.device) for t in sel[:20]]
        order = list(range(len(many)))
        rng.shuffle(order)
        out.append(assign_case(f"all keys shuffled #{k}", many, [sys.maxsize], order=order))
        out.append(assign_case(f"all keys shuffled #{k} small limits", many, [8, 100], order=order))
        out.append(assign_case(f"all keys initial #{k}", many, [8, 100]))

    # Large sizes without allocating: meta tensors.
    huge = make([(25 * MiB,), (1,), (6 * MiB,), (6 * MiB,), (1,), (512, 4096), (4096,)], device="meta")
    for limits in ([MiB, 25 * MiB], [sys.maxsize], [25 * MiB]):
        out.append(assign_case(f"meta large limits={limits}", huge, limits))
        out.append(assign_case(f"meta large reversed limits={limits}", huge, limits, order=list(range(len(huge)))[::-1]))
    return out


class Stack(nn.Module):
    """Layers registered in one order, used in another (forward_order)."""

    def __init__(self, layers, forward_order=None, dtypes=None):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.forward_order = forward_order or list(range(len(layers)))
        self.dtypes = dtypes

    def forward(self, x):
        for i in self.forward_order:
            layer = self.layers[i]
            if self.dtypes is not None:
                x = x.to(self.dtypes[i])
            x = torch.tanh(layer(x))
        return x.float()


class WithEmbedding(nn.Module):
    def __init__(self, sparse):
        super().__init__()
        self.emb = nn.Embedding(5000, 64, sparse=sparse)
        self.fc1 = nn.Linear(64, 512)
        self.fc2 = nn.Linear(512, 512)
        self.head = nn.Linear(512, 3)

    def forward(self, ids):
        x = self.emb(ids).mean(1)
        return self.head(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


@contextlib.contextmanager
def env(name, value):
    old = os.environ.get(name)
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def ddp_case(name, build, make_input, config, set_last_bucket_cap=False, iterations=3):
    torch.manual_seed(0)
    model = build()
    kwargs = {}
    if config.get("bucket_cap_mb") is not None:
        kwargs["bucket_cap_mb"] = config["bucket_cap_mb"]
    if config.get("bucket_cap_mb_list") is not None:
        kwargs["bucket_cap_mb_list"] = config["bucket_cap_mb_list"]
    find_unused = bool(config.get("find_unused_parameters", False))
    static_graph = bool(config.get("static_graph", False))
    with env("DDP_SET_LAST_BUCKET_CAP", "1" if set_last_bucket_cap else None):
        ddp = nn.parallel.DistributedDataParallel(
            model, find_unused_parameters=find_unused, static_graph=static_graph, **kwargs
        )
        params, sparse = ddp._build_params_for_reducer()
        ident = {id(p): i for i, p in enumerate(params)}
        # The layout each backward pass really used, from a comm hook (works
        # for sparse buckets too, which have no flat buffer).
        seen = []

        def record(_state, bucket):
            seen.append((bucket.index(), [ident[id(p)] for p in bucket.parameters()]))
            fut = torch.futures.Future()
            fut.set_result(bucket.buffer())
            return fut

        ddp.register_comm_hook(None, record)
        ready = []
        handles = [p.register_post_accumulate_grad_hook(lambda _t, i=i: ready.append(i)) for i, p in enumerate(params)]
        orders, layouts = [], []
        for _ in range(iterations):
            ready.clear()
            seen.clear()
            ddp(make_input()).float().sum().backward()
            orders.append(list(ready))
            layouts.append([b for _, b in sorted(seen)])
            for p in params:
                p.grad = None
        for h in handles:
            h.remove()
        if not any(sparse):
            direct = [[ident[id(p)] for p in b.parameters()] for b in ddp.reducer._get_zeros_like_grad_buckets()]
            assert direct == layouts[-1], f"{name}: comm hook and reducer disagree"
    initial, final = layouts[0], layouts[-1]
    assert all(o == orders[0] for o in orders), f"{name}: ready order changed between iterations"
    return {
        "name": name,
        "params": [spec(p, s) for p, s in zip(params, sparse)],
        "config": {
            "bucket_cap_mb": config.get("bucket_cap_mb"),
            "bucket_cap_mb_list": config.get("bucket_cap_mb_list"),
            "find_unused_parameters": find_unused,
            "static_graph": static_graph,
            "set_last_bucket_cap": set_last_bucket_cap,
        },
        "ready_order": orders[0],
        "initial": initial,
        "after_rebuild": final,
    }


def ddp_cases():
    out = []
    mlp8 = lambda: Stack([nn.Linear(256, 256) for _ in range(8)])  # noqa: E731
    x256 = lambda: torch.randn(4, 256)  # noqa: E731
    configs = [
        {},
        {"bucket_cap_mb": 0.5},
        {"bucket_cap_mb": 25},
        {"bucket_cap_mb": 1},
        {"bucket_cap_mb": 0},
        {"bucket_cap_mb_list": [1, 2]},
        {"bucket_cap_mb_list": [0.3, 0.6, 0.9]},
        {"find_unused_parameters": True},
        {"find_unused_parameters": True, "bucket_cap_mb": 0.5},
        {"find_unused_parameters": True, "bucket_cap_mb": 0.8},
        {"find_unused_parameters": True, "bucket_cap_mb_list": [0.3, 0.6]},
        {"static_graph": True},
        {"static_graph": True, "bucket_cap_mb": 0.7},
        {"static_graph": True, "find_unused_parameters": True, "bucket_cap_mb": 0.7},
    ]
    for cfg in configs:
        out.append(ddp_case(f"mlp8 {cfg}", mlp8, x256, cfg))
    for cfg in ({}, {"bucket_cap_mb": 0.6}, {"bucket_cap_mb_list": [0.3, 0.6]}):
        out.append(ddp_case(f"mlp8 {cfg} DDP_SET_LAST_BUCKET_CAP=1", mlp8, x256, cfg, set_last_bucket_cap=True))

    # Forward order differs from registration order.
    shuffled = lambda: Stack([nn.Linear(256, 256) for _ in range(8)], forward_order=[3, 0, 7, 1, 6, 2, 5, 4])  # noqa: E731
    for cfg in ({}, {"bucket_cap_mb": 0.6}, {"find_unused_parameters": True, "bucket_cap_mb": 0.6}):
        out.append(ddp_case(f"shuffled forward {cfg}", shuffled, x256, cfg))

    # Big layers: defaults give a 1 MiB first bucket and 25 MiB buckets.
    wide = lambda: Stack([nn.Linear(1024, 1024) for _ in range(4)] + [nn.Linear(1024, 2048), nn.Linear(2048, 1024)])  # noqa: E731
    x1024 = lambda: torch.randn(2, 1024)  # noqa: E731
    for cfg in ({}, {"bucket_cap_mb": 3}, {"find_unused_parameters": True}, {"bucket_cap_mb": 2.5}):
        out.append(ddp_case(f"wide {cfg}", wide, x1024, cfg))

    # Mixed dtypes.
    dts = [torch.float32, torch.float64, torch.bfloat16, torch.float32, torch.float64, torch.bfloat16, torch.float32]

    def mixed():
        layers = [nn.Linear(128, 128).to(d) for d in dts]
        return Stack(layers, dtypes=dts)

    x128 = lambda: torch.randn(3, 128)  # noqa: E731
    for cfg in ({}, {"bucket_cap_mb": 0.1}, {"bucket_cap_mb": 0.05}, {"find_unused_parameters": True, "bucket_cap_mb": 0.1}):
        out.append(ddp_case(f"mixed dtypes {cfg}", mixed, x128, cfg))

    def mixed_shuffled():
        layers = [nn.Linear(128, 128).to(d) for d in dts]
        return Stack(layers, forward_order=[6, 2, 4, 0, 5, 1, 3], dtypes=dts)

    for cfg in ({"bucket_cap_mb": 0.1}, {"bucket_cap_mb": 0.2}):
        out.append(ddp_case(f"mixed dtypes shuffled forward {cfg}", mixed_shuffled, x128, cfg))

    # Embeddings, dense and sparse.
    ids = lambda: torch.randint(0, 5000, (4, 7))  # noqa: E731
    for sparse in (False, True):
        for cfg in ({}, {"bucket_cap_mb": 0.5}, {"find_unused_parameters": True, "bucket_cap_mb": 0.5}):
            out.append(ddp_case(f"embedding sparse={sparse} {cfg}", lambda s=sparse: WithEmbedding(s), ids, cfg))
    return out


def main():
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
    dist.init_process_group("gloo", rank=0, world_size=1)
    try:
        data = {
            "torch_version": torch.__version__,
            "default_first_bucket_bytes": dist._DEFAULT_FIRST_BUCKET_BYTES,
            "sys_maxsize": sys.maxsize,
            "assign": assign_cases(),
            "ddp": ddp_cases(),
        }
    finally:
        dist.destroy_process_group()
    path = os.path.join(os.path.dirname(__file__), "..", "data", "buckets.json")
    with open(path, "w") as f:
        json.dump(data, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {path}: {len(data['assign'])} assign cases, {len(data['ddp'])} ddp cases", file=sys.stderr)


if __name__ == "__main__":
    main()
