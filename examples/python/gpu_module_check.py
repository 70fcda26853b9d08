"""The PyTorch module on a GPU: NCCL spans from CUDA events against torch.profiler.

Part of ``scripts/gpu-check``. Four modes:

``train --profile OUT.json [--batch N]`` (under ``ddp-probe run``, one rank per GPU, NCCL):
    trains an MLP of 8 layers of 1024x1024 (32 MiB of gradients, so DDP makes
    two or three buckets) on ``cuda:LOCAL_RANK`` with ``ddp_probe_torch.instrument``,
    for 20 steps, and records steps 10-14 with ``torch.profiler`` (CPU and
    CUDA activity), written as a Kineto trace to OUT.json. With the default
    batch of 8192 the GPU is busy and the host runs ahead of it, as in real
    training; with a batch of 256 the GPU waits for the host, and CUDA events
    (NCCL's own too) complete when the host records them, so a span holds
    NCCL's launch latency besides its kernel (scripts/gpu-check reports that
    case for information). The communication
    hook all-reduces with ``ReduceOp.AVG``: with one rank NCCL launches a
    kernel for an average (``oneRankReduce``) but none for an in-place sum,
    and the check needs a kernel to compare with (``--op sum`` for the
    default).

``compare --trace RANK.jsonl --kineto OUT.json [--label L] [--info]``:
    pairs the module's ``collective`` spans of the profiled steps with the
    profiler's NCCL kernels (the consecutive run of kernels whose starts sit at
    the most constant offset from the spans', within 100 us), and prints ``gpu-check:`` rows (name |
    pass/FAIL/info | figures) for scripts/gpu-check's table: the counts must
    agree and each span must last as long as its kernel within
    max(25 us, 15%) (the span also holds NCCL's work around the kernel on its
    stream, see ABS_TOLERANCE_US). ``--label``
    prefixes the rows' names; ``--info`` reports them without a verdict.

``features --mode MODE --run DIR [--off DIR] [--gpu] [--steps N] [--batch N] [--accum N]``:
    checks a run of ``examples/python/ddp_features.py --mode MODE`` (``--device cuda`` under
    ``ddp-probe run``; any world) and prints ``gpu-check:`` rows: every step, forward,
    optimizer and data wait recorded; the samples counted as the script counted them; each
    bucket's all-reduce once per step, in the dtype and bytes the hook sent (half the bucket's
    for ``fp16``/``bf16``), with ``--gpu`` timed on the GPU (NCCL's own events); for
    ``prehook`` a ready window in every step and no bucket collective; with ``--off`` (the same
    job with ``DDP_PROBE_TRACE=0``), no warning that recording added, and for ``compile`` the
    same graph breaks. tests/pytorch_features.rs runs it on CPU jobs.

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
#: A span may differ from its kernel by this much. A span lasts as long as NCCL's own start
#: and end events on its stream (``Work._get_duration``), which hold NCCL's work around the
#: kernel as well: on an H200 with one rank (NCCL 2.28) that was a median 19.5 us, max 39 us
#: (the first profiled step), above kernels of 4-24 us, with the GPU busy or waiting alike.
ABS_TOLERANCE_US = 25.0
REL_TOLERANCE = 0.15
#: Paired spans and kernels start at a constant clock offset within this much.
MAX_START_SPREAD_US = 100.0


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


def align(spans, kernels):
    """The kernels paired with the spans: the run of ``len(spans)`` consecutive kernels whose
    start times sit at the most constant offset from the spans' starts (the two clocks differ
    by a constant; the profiler's window can also hold the GPU work of the steps just before
    and after, which a GPU running behind the host puts there). Returns (kernels, spread_us):
    the spread is the largest distance of one pair's offset from the median offset."""
    best = None
    for k in range(len(kernels) - len(spans) + 1):
        run = kernels[k : k + len(spans)]
        offsets = sorted(kern[0] - span[0] / 1e3 for span, kern in zip(spans, run))
        mid = offsets[len(offsets) // 2]
        spread = max(abs(o - mid) for o in offsets)
        if best is None or spread < best[1]:
            best = (run, spread)
    return best if best is not None else ([], float("inf"))


def compare(spans, kernels, base_us=None):
    """Rows (name, outcome, figures) comparing spans with kernels, paired by :func:`align`.
    ``base_us``: the profiler trace's ``baseTimeNanoseconds`` in microseconds (its kernels'
    times are offsets from it, on the host's wall clock, as the spans' are); with it the first
    row also says how far the paired kernels start from their spans (information only: the
    two clocks are read by different code)."""
    rows = []
    paired, spread = align(spans, kernels) if spans else ([], float("inf"))
    # The spans' starts follow the kernels' within this much (one step is milliseconds).
    ok = bool(paired) and spread <= MAX_START_SPREAD_US
    rows.append(
        (
            "module: collectives vs profiler NCCL kernels",
            "pass" if ok else "FAIL",
            f"{len(spans)} collective spans in steps {PROFILED.start}-{PROFILED.stop - 1}, "
            f"{len(kernels)} NCCL kernels in the profiler's trace"
            + (f"; paired with starts within {spread:.1f} us of a constant offset" if paired else "")
            + (same_clock(spans, paired, base_us) if paired and base_us is not None else ""),
        )
    )
    host = sum(1 for s in spans if s[2] == "host")
    nccl = sum(1 for s in spans if s[2] == "nccl")
    rows.append(
        (
            "module: spans timed by CUDA events",
            "pass" if spans and host == 0 else "FAIL",
            f"{len(spans) - host} of {len(spans)} (the rest kept host times); "
            f"{nccl} with the duration of NCCL's own events",
        )
    )
    if not ok:
        return rows
    diffs = []
    bad = []
    for (_, span_us, _), (_, kernel_us, name) in zip(spans, paired):
        d = span_us - kernel_us
        diffs.append(d)
        if abs(d) > max(ABS_TOLERANCE_US, REL_TOLERANCE * kernel_us):
            bad.append(f"{span_us:.1f} us vs {name[:32]} {kernel_us:.1f} us")
    absd = sorted(abs(d) for d in diffs)
    kern = sorted(k[1] for k in paired)
    rows.append(
        (
            "module: span durations vs kernel durations",
            "pass" if not bad else "FAIL",
            f"kernels median {kern[len(kern) // 2]:.1f} us; span minus kernel (absolute) median "
            f"{absd[len(absd) // 2]:.1f} us, max {absd[-1]:.1f} us"
            + (f"; outside max({ABS_TOLERANCE_US:g} us, {REL_TOLERANCE:.0%}): " + "; ".join(bad[:3]) if bad else ""),
        )
    )
    return rows


def same_clock(spans, paired, base_us):
    """The paired kernels' starts less their spans' on one clock, as a row's figures."""
    d = sorted(base_us + kern[0] - span[0] / 1e3 for span, kern in zip(spans, paired))
    worst = max(d, key=abs)
    return f"; on one clock, kernel start minus span start: median {d[len(d) // 2]:.0f} us, worst {worst:.0f} us"


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
    x = torch.randn(args.batch, 1024, device=device)
    from torch.profiler import ProfilerActivity, profile, schedule

    prof = None
    for step in range(STEPS):
        if step == PROFILED.start - 1:
            # One warm-up step before the recorded ones: the profiler's first step runs
            # slower (its first collective's span was 40 us over the kernel on an H200).
            prof = profile(
                activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                schedule=schedule(wait=0, warmup=1, active=len(PROFILED), repeat=1),
                on_trace_ready=lambda p: p.export_chrome_trace(args.profile),
            )
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
            prof = None
    torch.cuda.synchronize()
    dist.destroy_process_group()
    print(f"trained {STEPS} steps of batch {args.batch}; profiler trace of steps {PROFILED.start}-{PROFILED.stop - 1} in {args.profile}")


def compare_files(args):
    with open(args.trace) as f:
        spans = module_collectives(f, set(PROFILED))
    with open(args.kineto) as f:
        trace = json.load(f)
    kernels = kineto_nccl_kernels(trace)
    base = trace.get("baseTimeNanoseconds") if isinstance(trace, dict) else None
    rows = compare(spans, kernels, base / 1e3 if isinstance(base, (int, float)) else None)
    failed = any(r[1] == "FAIL" for r in rows)
    if args.info:
        rows = [(n, "info", f) for n, _o, f in rows]
        failed = False
    if args.label:
        rows = [(f"{args.label}: {n}", o, f) for n, o, f in rows]
    print_rows(rows)
    return 1 if failed else 0


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
        json.dumps({"type": "span", "kind": "collective", "step": 11, "start": 491000, "end": 513000}),
        json.dumps({"type": "span", "kind": "collective", "step": 3, "start": 0, "end": 9}),
        json.dumps({"type": "span", "kind": "backward", "step": 10, "start": 0, "end": 9}),
    ]
    spans = module_collectives(lines, set(PROFILED))
    assert [round(s[1], 1) for s in spans] == [105.0, 22.0], spans
    rows = compare(spans, kernels)
    assert [r[1] for r in rows] == ["pass", "pass", "pass"], rows
    # The profiler's base time puts both on one clock: kernels 9 us after their spans' starts.
    rows = compare(spans, kernels, base_us=0.0)
    assert "kernel start minus span start: median 9 us, worst 9 us" in rows[0][2], rows
    # A host-timed NCCL span lasts microseconds while its kernel runs for 100.
    host = [(1000, 4.0, "host"), (491000, 22.0, "gpu")]
    rows = compare(host, kernels)
    assert [r[1] for r in rows] == ["pass", "FAIL", "FAIL"], rows
    assert "1 of 2" in rows[1][2] and "4.0 us vs ncclDevKernel" in rows[2][2], rows
    # A kernel of the step before in the profiler's window (a GPU behind the host): skipped.
    early = [(-300.0, 50.0, "ncclDevKernel_AllReduce_Sum_f32_RING_LL")] + kernels
    rows = compare(spans, early)
    assert [r[1] for r in rows] == ["pass", "pass", "pass"], rows
    # Starts that do not follow the kernels' (paired wrongly): a failed pairing.
    rows = compare([(1000, 105.0, "gpu"), (2000, 22.0, "gpu")], kernels)
    assert rows[0][1] == "FAIL" and "489.0 us" in rows[0][2], rows
    # A missing kernel is a failed count, and nothing is paired.
    rows = compare(spans, kernels[:1])
    assert [r[1] for r in rows] == ["FAIL", "pass"], rows
    timer_self_test()
    print("self-test passed")
    return 0


def timer_self_test():
    """The module's CUDA span arithmetic (CudaCollectiveTimer.poll) on stand-in events whose
    times are known, for the cases the check on an H200 showed: an idle GPU (events complete
    when the host records them, so only the process group's duration is exact), the host held
    after the issue, a busy GPU, back-to-back collectives, and no duration known."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    from ddp_probe_torch import CudaCollectiveTimer

    class Event:
        def __init__(self, ms):
            self.ms = ms

        def query(self):
            return True

        def elapsed_time(self, other):
            return other.ms - self.ms

    class Work:
        def __init__(self, ms):
            self.ms = ms

        def _get_duration(self):
            return self.ms

    class NoTiming:
        def _get_duration(self):
            raise RuntimeError("getDuration only works if timing was enabled")

    recorded = []

    class Writer:
        def record(self, span):
            recorded.append((span["start"], span["end"], span.get("args", {}).get("timing")))

    import collections
    import threading
    import time

    timer = object.__new__(CudaCollectiveTimer)
    timer.writer, timer.lock, timer.pending, timer.last_end_ns = Writer(), threading.Lock(), [], 0
    timer.windows = collections.deque(maxlen=CudaCollectiveTimer.WINDOWS_KEPT)
    timer.said_no_duration = False
    timer.anchor = (Event(0.0), 1_000_000, time.monotonic())  # event time 0 = host 1 ms
    us = lambda x: 1_000_000 + int(x * 1000)  # noqa: E731 - microseconds after the anchor
    # Idle GPU: the hook's Python between the events (300 us), a 4 us kernel; the end event
    # completed when recorded (310 us). The span starts in the middle of the 300 us window
    # and lasts the kernel's 4 us.
    timer.add({}, Event(0.0), Event(0.310), Event(0.300), [Work(0.004)])
    # Idle GPU, the host held 2.6 ms after the issue (the GIL): the window is capped at twice
    # the median of the earlier ones (300 us), so the span starts 300 us after the first event.
    timer.add({}, Event(1.0), Event(3.660), Event(3.600), [Work(0.004)])
    # Busy GPU: both start events complete when the stream reaches them (5 ms), the end one
    # when the 500 us all-reduce ends.
    timer.add({}, Event(5.0), Event(5.5), Event(5.0), [Work(0.5)])
    # Issued at 5.2 ms while the previous one runs: starts at its end, 5.5 ms.
    timer.add({}, Event(5.2), Event(6.0), Event(5.2), [Work(0.5)])
    # No duration (timing off): the middle of its 200 us window (capped at twice the median
    # of 300, 2600, 0, 0 us) to the end event.
    timer.add({}, Event(7.0), Event(7.5), Event(7.2), [NoTiming()])
    timer.poll()
    want = [
        (us(150), us(154)),
        (us(1300), us(1304)),
        (us(5000), us(5500)),
        (us(5500), us(6000)),
        (us(7100), us(7500)),
    ]
    assert [r[:2] for r in recorded] == want, (recorded, want)
    assert [r[2] for r in recorded] == ["nccl", "nccl", "nccl", "nccl", None], recorded


def read_run(run):
    """(records by rank, rank 0's stdout, stderr by rank) of a run directory."""
    import glob
    import re

    records, stderr = {}, {}
    for path in sorted(glob.glob(os.path.join(run, "traces", "rank-*.jsonl"))):
        rank = int(re.search(r"rank-(\d+)\.jsonl$", path).group(1))
        with open(path) as f:
            records[rank] = [json.loads(line) for line in f if line.strip()]
    for path in glob.glob(os.path.join(run, "logs", "rank-*.stderr")):
        rank = int(re.search(r"rank-(\d+)\.stderr$", path).group(1))
        with open(path, errors="replace") as f:
            stderr[rank] = f.read()
    try:
        with open(os.path.join(run, "logs", "rank-0.stdout"), errors="replace") as f:
            stdout = f.read()
    except OSError:
        stdout = ""
    return records, stdout, stderr


def printed(stdout, label):
    """The number after ``label`` in a rank's stdout (``samples: 128``), or None."""
    for line in stdout.splitlines():
        if line.startswith(label):
            try:
                return int(line[len(label):].strip())
            except ValueError:
                return None
    return None


def warning_lines(stderr):
    """A rank's warning lines without digits (time stamps, process ids), so two runs compare;
    the rule of tests/pytorch_features.rs."""
    out = set()
    for line in stderr.splitlines():
        low = line.lower()
        if "warn" in low or "deprecat" in low:
            out.add("".join(c for c in low if not c.isdigit()))
    return out


def check_features(mode, records, stdout, stderr, steps, batch, accum, off=None, gpu=False):
    """Rows (name, outcome, figures) for a ddp_features.py run in ``mode``; see the module's
    docstring. ``off``: (records, stdout, stderr) of the same job unrecorded, or None; ``gpu``:
    the job ran on CUDA, so every span must be timed by NCCL's events (a CPU job's are
    host-timed)."""
    rows = []
    label = f"module, {mode} job"
    if not records:
        return [(f"{label}: trace", "FAIL", "no traces/rank-*.jsonl in the run")]
    micro = accum if mode == "no_sync" else 1

    def spans(recs, kind):
        return [r for r in recs if r.get("type") == "span" and r.get("kind") == kind]

    # Steps, phases and samples.
    bad = []
    for rank, recs in sorted(records.items()):
        counts = {k: len(spans(recs, k)) for k in ("step", "optimizer", "forward", "data_wait")}
        want = {"step": steps, "optimizer": steps, "forward": steps * micro, "data_wait": steps * micro}
        for k in want:
            if counts[k] != want[k]:
                bad.append(f"rank {rank}: {counts[k]} {k} spans, not {want[k]}")
        samples = [r.get("value") for r in recs if r.get("type") == "counter" and r.get("name") == "samples"]
        if samples != [batch * micro] * steps:
            bad.append(f"rank {rank}: samples counted {samples[:4]}..., not {batch * micro} per step")
        elif rank == 0 and printed(stdout, "samples:") not in (None, sum(samples)):
            bad.append(f"rank 0 counted {sum(samples)} samples, the script {printed(stdout, 'samples:')}")
    rows.append(
        (
            f"{label}: steps, phases, samples",
            "FAIL" if bad else "pass",
            "; ".join(bad[:3]) if bad else f"{len(records)} rank(s) x {steps} steps of {micro} x {batch} samples",
        )
    )

    # The buckets' all-reduces against their ready windows.
    bad, figures = [], ""
    recs = records[min(records)]
    windows = {(w["step"], w["bucket"]): w.get("bytes") for w in spans(recs, "bucket_ready")}
    colls = [c for c in spans(recs, "collective") if c.get("bucket") is not None]
    if mode == "prehook":
        grad_ready = sum(1 for r in recs if r.get("type") == "grad_ready")
        window_steps = {k[0] for k in windows}
        if colls:
            bad.append(f"{len(colls)} bucket collectives from a hook registered before instrument()")
        if grad_ready != steps or len(window_steps) != steps:
            bad.append(f"{grad_ready} grad_ready records and windows in {len(window_steps)} steps, not {steps}")
        figures = f"ready windows in {len(window_steps)} of {steps} steps, no bucket collective"
    else:
        dtype = {"fp16": "float16", "bf16": "bfloat16"}.get(mode, "float32")
        shrink = 2 if mode in ("fp16", "bf16") else 1
        keys = [(c["step"], c["bucket"]) for c in colls]
        if not colls:
            bad.append("no bucket collective recorded")
        if len(set(keys)) != len(keys):
            bad.append("a bucket all-reduced twice in a step")
        if set(keys) != set(windows):
            bad.append(f"{len(set(keys))} bucket collectives for {len(windows)} ready windows")
        for c in colls:
            ready = windows.get((c["step"], c["bucket"]))
            if c.get("dtype") != dtype or ready is None or c.get("bytes", 0) * shrink != ready:
                bad.append(f"step {c['step']} bucket {c['bucket']}: {c.get('dtype')} {c.get('bytes')} B, bucket {ready} B")
                break
        timing = sorted({(c.get("args") or {}).get("timing", "host") for c in colls})
        n_gpu = sum(1 for c in colls if (c.get("args") or {}).get("timing") == "nccl")
        if gpu and n_gpu != len(colls):
            bad.append(f"{len(colls) - n_gpu} of {len(colls)} spans not timed by NCCL's events")
        durations = sorted((c["end"] - c["start"]) / 1e3 for c in colls)
        med = durations[len(durations) // 2] if durations else 0.0
        figures = (
            f"{len(colls)} bucket all-reduces in {dtype}, bytes {'half ' if shrink == 2 else ''}the bucket's; "
            f"timing {'/'.join(timing)}; median {med:.1f} us"
        )
    rows.append((f"{label}: bucket all-reduces", "FAIL" if bad else "pass", "; ".join(bad[:2]) if bad else figures))

    if mode == "log_loss":
        # The program's own collectives: the loss all-reduced before the optimizer (on the
        # job's device: NCCL's events on a GPU) and a barrier after it, plus the script's
        # closing barrier, each with where the script called it.
        bad = []
        for rank, rrecs in sorted(records.items()):
            program = [c for c in spans(rrecs, "collective") if (c.get("args") or {}).get("what") == "program"]
            for op, want in (("all_reduce", steps), ("barrier", steps + 1)):
                calls = [c for c in program if c.get("op") == op]
                if len(calls) != want:
                    bad.append(f"rank {rank}: {len(calls)} program {op} spans, not {want}")
                elif not all(c["args"].get("caller", "").startswith("ddp_features.py:") for c in calls):
                    bad.append(f"rank {rank}: a program {op} without the script as its caller")
            reduces = [c for c in program if c.get("op") == "all_reduce"]
            if gpu and any((c.get("args") or {}).get("timing") != "nccl" for c in reduces):
                bad.append(f"rank {rank}: a program all_reduce not timed by NCCL's events")
        rows.append(
            (
                f"{label}: the program's own collectives",
                "FAIL" if bad else "pass",
                "; ".join(bad[:2]) if bad else f"{steps} all_reduce + {steps + 1} barrier per rank, callers in the script",
            )
        )

    # What recording added, against the same job unrecorded.
    if off is not None:
        _off_records, off_stdout, off_stderr = off
        added = []
        for rank, text in sorted(stderr.items()):
            added += sorted(warning_lines(text) - warning_lines(off_stderr.get(rank, "")))
        rows.append(
            (
                f"{label}: warnings added by recording",
                "FAIL" if added else "pass",
                ("; ".join(w.strip()[:90] for w in added[:2])) if added else "none",
            )
        )
        if mode == "compile":
            on_b, off_b = printed(stdout, "graph breaks:"), printed(off_stdout, "graph breaks:")
            rows.append(
                (
                    f"{label}: Dynamo's graph breaks",
                    "pass" if on_b is not None and on_b == off_b else "FAIL",
                    f"{on_b} recorded, {off_b} unrecorded",
                )
            )
    return rows


def features(args):
    rows = check_features(
        args.job_mode,
        *read_run(args.run),
        steps=args.steps,
        batch=args.batch,
        accum=args.accum,
        off=read_run(args.off) if args.off else None,
        gpu=args.gpu,
    )
    print_rows(rows)
    return 1 if any(r[1] == "FAIL" for r in rows) else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="mode", required=True)
    t = sub.add_parser("train")
    t.add_argument("--profile", required=True, help="where to write the profiler's Kineto trace")
    t.add_argument("--op", choices=["avg", "sum"], default="avg")
    t.add_argument("--batch", type=int, default=8192, help="rows per step (8192: the GPU is busy)")
    c = sub.add_parser("compare")
    c.add_argument("--trace", required=True, help="the module's rank trace (rank-0.jsonl)")
    c.add_argument("--kineto", required=True, help="the profiler's trace written by train")
    c.add_argument("--label", default="", help="a prefix for the rows' names")
    c.add_argument("--info", action="store_true", help="report without a pass/FAIL verdict")
    f = sub.add_parser("features")
    f.add_argument("--mode", dest="job_mode", required=True, help="ddp_features.py's --mode of the run")
    f.add_argument("--run", required=True, help="the recorded run's directory")
    f.add_argument("--off", help="the same job's run with DDP_PROBE_TRACE=0")
    f.add_argument("--steps", type=int, default=8)
    f.add_argument("--batch", type=int, default=16)
    f.add_argument("--accum", type=int, default=2)
    f.add_argument("--gpu", action="store_true", help="a CUDA job: spans must be GPU-timed")
    sub.add_parser("self-test")
    args = p.parse_args()
    if args.mode == "train":
        train(args)
        return 0
    if args.mode == "compare":
        return compare_files(args)
    if args.mode == "features":
        return features(args)
    return self_test()


if __name__ == "__main__":
    sys.exit(main())
