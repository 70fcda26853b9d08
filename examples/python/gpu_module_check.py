"""The PyTorch module on a GPU: NCCL spans from CUDA events against torch.profiler.

Part of ``scripts/gpu-check``. Three modes:

``train --profile OUT.json`` (under ``ddp-probe run``, one rank per GPU, NCCL):
    trains an MLP of 8 layers of 1024x1024 (32 MiB of gradients, so DDP makes
    three buckets) on ``cuda:LOCAL_RANK`` with ``ddp_probe_torch.instrument``,
    for 20 steps, and records steps 10-14 with ``torch.profiler`` (CPU and
    CUDA activity), written as a Kineto trace to OUT.json. The communication
    hook all-reduces with ``ReduceOp.AVG``: with one rank NCCL launches a
    kernel for an average (``oneRankReduce``) but none for an in-place sum,
    and the check needs a kernel to compare with (``--op sum`` for the
    default).

``compare --trace RANK.jsonl --kineto OUT.json``:
    pairs the module's ``collective`` spans of the profiled steps with the
    profiler's NCCL kernels, in order, and prints ``gpu-check:`` rows (name |
    pass/FAIL/info | figures) for scripts/gpu-check's table: the counts must
    agree and each span must last as long as its kernel within
    max(15 us, 15%) (the span also holds NCCL's launch on the GPU).

``self-test``:
    the pairing and the verdict on constructed inputs; runs without a GPU
    (tests/python_ddp.rs runs it).
"""

import argparse
import json
import os
import sys

#: Steps the profiler records (the module numbers steps from 0).
PROFILED = range(10, 15)
STEPS = 20
#: A span may differ from its kernel by this much.
ABS_TOLERANCE_US = 15.0
REL_TOLERANCE = 0.15


def is_nccl_kernel(name):
    """NCCL's kernels as the profiler names them (``ncclDevKernel_...``, ``ncclKernel_...``,
    the one-rank ``oneRankReduce``)."""
    return "nccl" in name.lower() or "onerankreduce" in name.lower()


def kineto_nccl_kernels(trace):
    """(start_us, duration_us, name) of the NCCL kernels in a Kineto trace, in time order."""
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    out = []
    for e in events:
        if e.get("ph") != "X" or e.get("cat") != "kernel":
            continue
        name = e.get("name", "")
        if is_nccl_kernel(name):
            out.append((float(e["ts"]), float(e.get("dur", 0.0)), name))
    out.sort()
    return out


def module_collectives(lines, steps):
    """(start_ns, duration_us, timing) of the module's collective spans in ``steps``, in order."""
    out = []
    for line in lines:
        line = line.strip()
        if not line:
            continue
        r = json.loads(line)
        if r.get("type") != "span" or r.get("kind") != "collective" or r.get("step") not in steps:
            continue
        timing = (r.get("args") or {}).get("timing", "gpu")
        out.append((r["start"], (r["end"] - r["start"]) / 1e3, timing))
    out.sort()
    return out


def compare(spans, kernels):
    """Rows (name, outcome, figures) comparing spans with kernels, paired in order."""
    rows = []
    rows.append(
        (
            "module: collectives vs profiler NCCL kernels",
            "pass" if spans and len(spans) == len(kernels) else "FAIL",
            f"{len(spans)} collective spans in steps {PROFILED.start}-{PROFILED.stop - 1}, "
            f"{len(kernels)} NCCL kernels in the profiler's trace",
        )
    )
    host = sum(1 for s in spans if s[2] == "host")
    rows.append(
        (
            "module: spans timed by CUDA events",
            "pass" if spans and host == 0 else "FAIL",
            f"{len(spans) - host} of {len(spans)} (the rest kept host times)",
        )
    )
    if not spans or len(spans) != len(kernels):
        return rows
    diffs = []
    bad = []
    for (_, span_us, _), (_, kernel_us, name) in zip(spans, kernels):
        d = span_us - kernel_us
        diffs.append(d)
        if abs(d) > max(ABS_TOLERANCE_US, REL_TOLERANCE * kernel_us):
            bad.append(f"{span_us:.1f} us vs {name[:32]} {kernel_us:.1f} us")
    absd = sorted(abs(d) for d in diffs)
    kern = sorted(k[1] for k in kernels)
    rows.append(
        (
            "module: span durations vs kernel durations",
            "pass" if not bad else "FAIL",
            f"kernels median {kern[len(kern) // 2]:.1f} us; |span - kernel| median "
            f"{absd[len(absd) // 2]:.1f} us, max {absd[-1]:.1f} us"
            + (f"; outside max({ABS_TOLERANCE_US:g} us, {REL_TOLERANCE:.0%}): " + "; ".join(bad[:3]) if bad else ""),
        )
    )
    return rows


def print_rows(rows):
    for name, outcome, figures in rows:
        print(f"gpu-check: {name} | {outcome} | {figures}", flush=True)


def train(args):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    import ddp_probe_torch

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    dist.init_process_group("nccl", device_id=device)
    torch.manual_seed(0)
    layers = []
    for _ in range(8):
        layers += [nn.Linear(1024, 1024), nn.ReLU()]
    model = DDP(nn.Sequential(*layers).to(device), device_ids=[local_rank])
    model = ddp_probe_torch.instrument(model)
    if args.op == "avg":

        def avg_hook(state, bucket):
            work = dist.all_reduce(bucket.buffer(), op=dist.ReduceOp.AVG, async_op=True)
            return work.get_future().then(lambda f: f.value()[0])

        model.register_comm_hook(None, avg_hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(256, 1024, device=device)
    from torch.profiler import ProfilerActivity, profile

    prof = None
    for step in range(STEPS):
        if step == PROFILED.start:
            prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
            prof.__enter__()
        opt.zero_grad(set_to_none=True)
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        if prof is not None:
            prof.step()  # ProfilerStep#N annotations, which HTA's breakdown needs
        if step == PROFILED.stop - 1:
            torch.cuda.synchronize()
            prof.__exit__(None, None, None)
            prof.export_chrome_trace(args.profile)
            prof = None
    torch.cuda.synchronize()
    dist.destroy_process_group()
    print(f"trained {STEPS} steps; profiler trace of steps {PROFILED.start}-{PROFILED.stop - 1} in {args.profile}")


def compare_files(args):
    with open(args.trace) as f:
        spans = module_collectives(f, set(PROFILED))
    with open(args.kineto) as f:
        kernels = kineto_nccl_kernels(json.load(f))
    rows = compare(spans, kernels)
    print_rows(rows)
    return 1 if any(r[1] == "FAIL" for r in rows) else 0


def self_test():
    kernels = kineto_nccl_kernels(
        {
            "traceEvents": [
                {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ts": 10.0, "dur": 100.0},
                {"ph": "X", "cat": "kernel", "name": "void (anonymous namespace)::oneRankReduce<float>", "ts": 500.0, "dur": 20.0},
                {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_tn", "ts": 300.0, "dur": 50.0},
                {"ph": "X", "cat": "cpu_op", "name": "nccl:all_reduce", "ts": 5.0, "dur": 3.0},
            ]
        }
    )
    assert [k[2][:4] for k in kernels] == ["nccl", "void"], kernels
    lines = [
        json.dumps({"type": "span", "kind": "collective", "step": 10, "start": 1000, "end": 106000}),
        json.dumps({"type": "span", "kind": "collective", "step": 11, "start": 2000, "end": 24000}),
        json.dumps({"type": "span", "kind": "collective", "step": 3, "start": 0, "end": 9}),
        json.dumps({"type": "span", "kind": "backward", "step": 10, "start": 0, "end": 9}),
    ]
    spans = module_collectives(lines, set(PROFILED))
    assert [round(s[1], 1) for s in spans] == [105.0, 22.0], spans
    rows = compare(spans, kernels)
    assert [r[1] for r in rows] == ["pass", "pass", "pass"], rows
    # A host-timed NCCL span lasts microseconds while its kernel runs for 100.
    host = [(1000, 4.0, "host"), (2000, 22.0, "gpu")]
    rows = compare(host, kernels)
    assert [r[1] for r in rows] == ["pass", "FAIL", "FAIL"], rows
    assert "1 of 2" in rows[1][2] and "4.0 us vs ncclDevKernel" in rows[2][2], rows
    # A missing kernel is a failed count, and nothing is paired.
    rows = compare(spans, kernels[:1])
    assert [r[1] for r in rows] == ["FAIL", "pass"], rows
    print("self-test passed")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="mode", required=True)
    t = sub.add_parser("train")
    t.add_argument("--profile", required=True, help="where to write the profiler's Kineto trace")
    t.add_argument("--op", choices=["avg", "sum"], default="avg")
    c = sub.add_parser("compare")
    c.add_argument("--trace", required=True, help="the module's rank trace (rank-0.jsonl)")
    c.add_argument("--kineto", required=True, help="the profiler's trace written by train")
    sub.add_parser("self-test")
    args = p.parse_args()
    if args.mode == "train":
        train(args)
        return 0
    if args.mode == "compare":
        return compare_files(args)
    return self_test()


if __name__ == "__main__":
    sys.exit(main())
