"""Instructions per step that ddp_probe_torch adds, counted by valgrind: a figure the machine's
noise does not move (bench/torch/module_overhead.py's CPU times on a 2-core VM spread by
hundreds of microseconds from one job to the next, more than the 60 us goal itself).

    .venv/bin/python bench/torch/module_instructions.py [--steps 100,600] [--jobs 2]

The tiny-step job of module_overhead.py (two 16x16 linear layers, batch 4, a DataLoader, SGD),
one rank (a gloo group of one), runs under `valgrind --tool=cachegrind --cache-sim=no` at two
step counts; the difference of the two totals over the difference of the steps is the
instructions of one steady step (start-up, warm-up and the layout's settling cancel out). Three
variants:

* plain: DDP as it is;
* hooks: the hooks ddp_probe_torch installs (forward pre/post, a tensor hook on the output that
  queues a backward-end callback, optimizer step pre/post, a Python communication hook that
  all-reduces and chains a `then`), each doing nothing: what PyTorch's hook machinery costs;
* floor: the same hooks and the DataLoader's `next` wrapped, each taking the clock and appending a
  tuple to a list, the communication hook also reading the bucket's index and the group's
  sequence number: what any Python recorder of these events pays before it formats or writes
  anything;
* recording: `ddp_probe_torch.instrument` writing a trace.

Prints instructions per step of each and the differences, and the microseconds they stand for at
the plain job's own rate (its CPU time per step, measured outside valgrind, over its
instructions per step). Writes bench/results/module_instructions.json (or
$MODULE_INSTRUCTIONS_JSON). Needs valgrind; without it says so and stops.

Run with --rank VARIANT STEPS it is the job itself.
"""

import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = pathlib.Path(__file__).resolve().parents[2]
VARIANTS = ("plain", "hooks", "floor", "recording")


def job(variant, steps, port, trace_dir):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", WORLD_SIZE="1",
                      DDP_PROBE_CALIBRATE="0")
    sys.path.insert(0, str(ROOT / "python"))
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, TensorDataset

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 16)))
    if variant == "hooks":
        install_empty_hooks(model)
    elif variant == "floor":
        install_floor_hooks(model)
    elif variant == "recording":
        import ddp_probe_torch

        model = ddp_probe_torch.instrument(model, trace_dir=trace_dir)
    loader = DataLoader(TensorDataset(torch.randn(256, 16), torch.randn(256, 16)), batch_size=4)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def batches():
        while True:
            yield from loader

    it = batches()
    t0 = time.process_time()
    for _ in range(steps):
        x, y = next(it)
        opt.zero_grad(set_to_none=True)
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    print(f"cpu_s {time.process_time() - t0:.6f}")
    dist.destroy_process_group()


def install_empty_hooks(model):
    """The kinds of hooks ddp_probe_torch installs, doing nothing."""
    import torch
    import torch.distributed as dist
    from torch.optim.optimizer import (
        register_optimizer_step_post_hook,
        register_optimizer_step_pre_hook,
    )

    engine = torch.autograd.Variable._execution_engine

    def comm_hook(group, bucket):
        buf = bucket.buffer()
        buf.div_(group.size())
        return group.allreduce([buf]).get_future().then(lambda f: f.value()[0])

    def backward_end():
        pass

    def on_output_grad(grad):
        engine.queue_callback(backward_end)

    def forward(module, args, output):
        output.register_hook(on_output_grad)

    model.register_comm_hook(dist.group.WORLD, comm_hook)
    model.register_forward_pre_hook(lambda module, args, kwargs: None, with_kwargs=True)
    model.register_forward_hook(forward)
    register_optimizer_step_pre_hook(lambda opt, args, kwargs: None)
    register_optimizer_step_post_hook(lambda opt, args, kwargs: None)


def install_floor_hooks(model):
    """The hooks of install_empty_hooks and a wrapped DataLoader ``next``, each keeping its times
    (and the bucket's index and sequence number) as a tuple in a list."""
    import torch
    import torch.distributed as dist
    import torch.utils.data.dataloader as dataloader
    from torch.optim.optimizer import (
        register_optimizer_step_post_hook,
        register_optimizer_step_pre_hook,
    )

    clock = time.perf_counter_ns
    engine = torch.autograd.Variable._execution_engine
    kept = []
    keep = kept.append
    sequence_number = dist.group.WORLD._get_sequence_number_for_group
    original_next = dataloader._BaseDataLoaderIter.__next__

    def next_batch(it):
        t = clock()
        try:
            return original_next(it)
        finally:
            keep(("data", t, clock()))

    dataloader._BaseDataLoaderIter.__next__ = next_batch

    def comm_hook(group, bucket):
        t = clock()
        buf = bucket.buffer()
        buf.div_(group.size())
        fut = group.allreduce([buf]).get_future()
        seq, index = sequence_number(), bucket.index()

        def then(f):
            keep(("collective", index, seq, t, clock()))
            return f.value()[0]

        return fut.then(then)

    def backward_end():
        keep(("backward end", clock()))

    def on_output_grad(grad):
        keep(("backward", clock()))
        engine.queue_callback(backward_end)

    def forward(module, args, output):
        keep(("forward end", clock()))
        output.register_hook(on_output_grad)

    model.register_comm_hook(dist.group.WORLD, comm_hook)
    model.register_forward_pre_hook(lambda module, args, kwargs: keep(("forward", clock())),
                                    with_kwargs=True)
    model.register_forward_hook(forward)
    register_optimizer_step_pre_hook(lambda opt, args, kwargs: keep(("optimizer", clock())))
    register_optimizer_step_post_hook(lambda opt, args, kwargs: keep(("optimizer end", clock())))


def count(variant, steps, port, tmp):
    """Instructions of a whole job under cachegrind."""
    cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
           sys.executable, __file__, "--rank", variant, str(steps), str(port), f"{tmp}/trace-{port}"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    m = re.search(r"I\s+refs:\s+([0-9,]+)", out.stderr)
    if out.returncode != 0 or not m:
        sys.exit(f"module_instructions: the {variant} job of {steps} steps failed:\n{out.stderr[-2000:]}")
    return int(m.group(1).replace(",", ""))


def plain_cpu_per_step(steps, port):
    """CPU seconds per step of the plain job outside valgrind (the machine's own rate)."""
    times = []
    for n in steps:
        out = subprocess.run([sys.executable, __file__, "--rank", "plain", str(n), str(port), ""],
                             capture_output=True, text=True, check=True).stdout
        times.append(float(re.search(r"cpu_s ([0-9.]+)", out).group(1)))
    return (times[1] - times[0]) / (steps[1] - steps[0])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    p.add_argument("--steps", default="100,600", help="the two step counts (default 100,600)")
    p.add_argument("--jobs", type=int, default=2, help="valgrind jobs at once (default 2)")
    p.add_argument("--rank", nargs=4, metavar=("VARIANT", "STEPS", "PORT", "TRACE_DIR"),
                   help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.rank:
        variant, steps, port, trace_dir = args.rank
        return job(variant, int(steps), int(port), trace_dir)
    if shutil.which("valgrind") is None:
        sys.exit("module_instructions: valgrind is not installed (apt-get install valgrind); "
                 "nothing measured")
    steps = [int(s) for s in args.steps.split(",")]
    if len(steps) != 2 or steps[0] >= steps[1]:
        sys.exit("module_instructions: --steps takes two step counts, the smaller first (100,600)")
    runs = [(v, n) for v in VARIANTS for n in steps]
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(args.jobs) as pool:
        totals = list(pool.map(lambda i: count(*runs[i], 29700 + i, tmp), range(len(runs))))
    per_step = {}
    for (variant, n), total in zip(runs, totals):
        per_step.setdefault(variant, {})[n] = total
    per_step = {v: (t[steps[1]] - t[steps[0]]) / (steps[1] - steps[0]) for v, t in per_step.items()}
    cpu = plain_cpu_per_step(steps, 29790)
    ns_per_instr = cpu * 1e9 / per_step["plain"]
    for v in VARIANTS:
        print(f"{v:10s} {per_step[v]:12,.0f} instructions per step")
    result = {"benchmark": "module_instructions_per_step", "steps": steps,
              "instructions_per_step": per_step, "plain_cpu_us_per_step": cpu * 1e6,
              "ns_per_instruction": ns_per_instr}
    for name, a, b in (("hooks", "hooks", "plain"), ("floor", "floor", "plain"),
                       ("recording", "recording", "plain"),
                       ("recording beyond the hooks", "recording", "hooks"),
                       ("recording beyond the floor", "recording", "floor")):
        added = per_step[a] - per_step[b]
        result[f"added_by_{name.replace(' ', '_')}"] = added
        print(f"added by {name}: {added:,.0f} instructions per step "
              f"({added / per_step[b]:+.1%}), about {added * ns_per_instr / 1e3:.0f} us at the "
              f"plain job's rate ({cpu * 1e6:.0f} us per step here)")
    path = pathlib.Path(os.environ.get("MODULE_INSTRUCTIONS_JSON",
                                       ROOT / "bench/results/module_instructions.json"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
