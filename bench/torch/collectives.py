"""torch.distributed (gloo) side of bench/run's collective benchmark, measured exactly as comm's
bench (comm/benches/allreduce.rs) measures ours: f32 buffers, 3 warm-up calls (1 from 64 MiB);
rank 0 times batches of 1, 2, 4, ... calls until a tenth of min-time has passed and sets the
iteration count (min-time / mean call, within [3, 20000]) for every rank; then --repeats timed
loops, each after a barrier and measured as the slowest rank's time; the fastest loop's time per call is reported (time_us; the
median loop's is time_us_median). Sizes are bytes; an all_gather's size is its output
(nccl-tests). Prints one JSON object per operation and size from rank 0.

    ddp-probe run --nproc-per-node N -- python collectives.py [--sizes 4096,...] [--ops ...]"""
import argparse
import warnings
import json
import time

import torch
import torch.distributed as dist

p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
p.add_argument("--sizes", default="4096,1048576",
               help="buffer sizes in bytes, comma-separated (default: 4096,1048576)")
p.add_argument("--ops", default="all_reduce,broadcast,all_gather",
               help="operations, comma-separated (default: all_reduce,broadcast,all_gather)")
p.add_argument("--min-time-ms", type=float, default=300,
               help="time each timed loop runs for, which sets its call count (default: 300)")
p.add_argument("--repeats", type=int, default=3,
               help="timed loops per operation and size; the fastest is reported (default: 3)")
args = p.parse_args()
torch.set_num_threads(1)
warnings.filterwarnings("ignore", category=FutureWarning)  # all_gather_into_tensor
dist.init_process_group("gloo")
rank, n = dist.get_rank(), dist.get_world_size()
# Bus bandwidth factors of nccl-tests.
BUS = {"all_reduce": 2 * (n - 1) / n, "all_gather": (n - 1) / n, "broadcast": 1.0}

for op in args.ops.split(","):
    for size in (int(s) for s in args.sizes.split(",")):
        buf = torch.ones(size // 4)
        inp = torch.ones(size // 4 // n)
        run = {"all_reduce": lambda: dist.all_reduce(buf),
               "broadcast": lambda: dist.broadcast(buf, 0),
               "all_gather": lambda: dist.all_gather_into_tensor(buf, inp)}[op]
        for _ in range(1 if size >= 64 << 20 else 3):
            run()
        timed, calls, batch, more = 0.0, 0, 1, torch.tensor([1])
        while int(more):  # batches of 1, 2, 4, ... calls; rank 0 says when to stop
            t = time.perf_counter()
            for _ in range(batch):
                run()
            timed += time.perf_counter() - t
            calls, batch = calls + batch, batch * 2
            more = torch.tensor([int(timed < args.min_time_ms / 1e4)])
            dist.broadcast(more, 0)
        one = max(timed / calls, 1e-6)
        iters = torch.tensor([min(max(int(args.min_time_ms / 1e3 / one), 3), 20000)])
        dist.broadcast(iters, 0)
        loops = []
        for _ in range(args.repeats):
            dist.barrier()
            t = time.perf_counter()
            for _ in range(int(iters)):
                run()
            el = torch.tensor([time.perf_counter() - t], dtype=torch.float64)
            dist.all_reduce(el, op=dist.ReduceOp.MAX)
            loops.append(el.item() / int(iters))
        loops.sort()
        per, median = loops[0], loops[len(loops) // 2]
        algbw = size / per / 1e9
        if rank == 0:
            print(json.dumps({"op": op, "world": n, "transport": "gloo", "bytes": size,
                              "iters": int(iters), "time_us": per * 1e6, "time_us_median": median * 1e6,
                              "repeats": args.repeats, "algbw_gbps": algbw,
                              "busbw_gbps": algbw * BUS[op]}), flush=True)
dist.barrier()  # no rank closes its connections while a peer still uses them
dist.destroy_process_group()
