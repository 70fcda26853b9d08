"""Generate the flight-recorder fixtures of probe's tests from real PyTorch jobs.

Each scenario runs a real 2-rank job on the gloo backend with PyTorch's
flight recorder on (``TORCH_FR_BUFFER_SIZE``); in torch 2.13 ProcessGroupGloo
records its collectives in the same flight recorder as ProcessGroupNCCL. Gloo
has no watchdog that dumps on a timeout, so each rank writes the dump itself
with ``torch._C._distributed_c10d._dump_fr_trace()`` -- the bytes the NCCL
watchdog writes on a timeout (a pickle of the layout of torch's
``FlightRecorder.hpp``, version "2.10": version, pg_config, pg_status,
entries with record_id, pg_id, collective_seq_id, p2p_seq_id,
profiling_name, input/output sizes and dtypes, state, times, frames) -- to
``<prefix><rank>``, as ``TORCH_FR_DUMP_TEMP_FILE`` names it.

Scenarios (folder under explain/tests/data/flight_recorder/):

* ``missing_rank``: 3 all-reduces; rank 1 stops after the second, rank 0
  waits in the third until the 3 s timeout. Truth: rank 1 did not join
  collective 3 of the default group (its last is 2); rank 0's last completed
  is 2.
* ``size_mismatch``: the second all-reduce has 4 elements on rank 0 and 8 on
  rank 1. Truth: collective 2 mismatches in size.
* ``dtype_mismatch``: the second all-reduce is float32 on rank 0, float64 on
  rank 1. Truth: collective 2 mismatches in dtype.
* ``p2p_hang``: rank 1 waits to receive from rank 0, which never sends, until
  the timeout. Gloo's recorder leaves point-to-point operations out, so the
  recv entry is added to rank 1's real dump by hand (``add_recv``, following
  fr_trace's layout) and that file is re-written with Python's pickle.
  Truth: rank 1 waits in recv from rank 0 (p2p seq 1), which rank 0 never
  posted.

Run from the repository root: ``.venv/bin/python python/gen_flight_recorder_fixtures.py``.
The time fields and call stacks differ between runs; the tests only use
what the scenario fixes.
"""

import datetime
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "probe", "tests", "data", "flight_recorder")
TIMEOUT_S = 3


def rank_main(scenario, rank, prefix):
    import torch
    import torch.distributed as dist
    import torch._C._distributed_c10d as c10d

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT_S))

    def dump():
        data = c10d._dump_fr_trace()
        with open(f"{prefix}{rank}.tmp", "wb") as f:
            f.write(data)
        os.replace(f"{prefix}{rank}.tmp", f"{prefix}{rank}")

    try:
        if scenario == "missing_rank":
            dist.all_reduce(torch.ones(4))
            dist.all_reduce(torch.ones(4))
            if rank == 0:
                dist.all_reduce(torch.ones(4))
        elif scenario in ("size_mismatch", "dtype_mismatch"):
            dist.all_reduce(torch.ones(4))
            if scenario == "size_mismatch":
                t = torch.ones(4 if rank == 0 else 8)
            else:
                t = torch.ones(4, dtype=torch.float32 if rank == 0 else torch.float64)
            # Gloo aborts a process on a size mismatch, so each rank dumps
            # right after enqueueing (the recorder has the entry from then on),
            # and rank 1 enqueues only once rank 0's dump is written.
            if rank == 1:
                while not os.path.exists(f"{prefix}0"):
                    time.sleep(0.05)
            work = dist.all_reduce(t, async_op=True)
            dump()
            if rank == 0:
                while not os.path.exists(f"{prefix}1"):
                    time.sleep(0.05)
            work.wait()
        elif scenario == "p2p_hang":
            dist.all_reduce(torch.ones(4))
            if rank == 1:
                dist.recv(torch.empty(4), src=0)
        else:
            raise SystemExit(f"unknown scenario {scenario}")
    except Exception as e:  # noqa: BLE001 - the hang or mismatch is the point
        print(f"rank {rank}: {type(e).__name__}: {str(e).splitlines()[0]}", file=sys.stderr)
    if (rank, scenario) in ((1, "missing_rank"), (0, "p2p_hang")):
        # The rank that went on stays alive until the other one timed out.
        time.sleep(TIMEOUT_S + 1)
    dump()
    os._exit(0)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(scenario):
    folder = os.path.join(OUT, scenario)
    os.makedirs(folder, exist_ok=True)
    prefix = os.path.join(folder, "nccl_trace_rank_")
    port = str(free_port())
    procs = []
    for rank in range(2):
        env = dict(os.environ)
        env.update(
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=port,
            RANK=str(rank),
            WORLD_SIZE="2",
            TORCH_FR_BUFFER_SIZE="100",
        )
        procs.append(
            subprocess.Popen(
                [sys.executable, __file__, "--rank", scenario, str(rank), prefix], env=env
            )
        )
    for p in procs:
        p.wait(timeout=60)
    if scenario == "p2p_hang":
        add_recv(prefix + "1")
    print(f"{scenario}: {prefix}0, {prefix}1")


def add_recv(path):
    """Adds the recv that rank 1 waits in to its real dump.

    Gloo's flight recorder does not record point-to-point operations, so this
    one entry is written by hand in the layout PyTorch's fr_trace reads
    (torch/distributed/flight_recorder/components/types.py: profiling_name
    "<backend>:recv <dst><-<src>", is_p2p, p2p_seq_id counting the group's
    point-to-point operations from 1), in the state a watchdog dump shows for
    an operation that started and never completed. The file is written with
    Python's pickle (protocol 4) instead of torch's C++ pickler.
    """
    import pickle

    with open(path, "rb") as f:
        dump = pickle.load(f)
    last = dump["entries"][-1]
    recv = dict(last)
    recv.update(
        record_id=last["record_id"] + 1,
        p2p_seq_id=1,
        op_id=last["op_id"] + 1,
        profiling_name="gloo:recv 1<-0",
        time_created_ns=last["time_created_ns"] + 1_000_000,
        input_sizes=[[4]],
        output_sizes=[[4]],
        state="started",
        time_discovered_started_ns=last["time_created_ns"] + 1_100_000,
        time_discovered_completed_ns=None,
        retired=False,
        is_p2p=True,
    )
    dump["entries"].append(recv)
    with open(path, "wb") as f:
        pickle.dump(dump, f, protocol=4)


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--rank":
        rank_main(sys.argv[2], int(sys.argv[3]), sys.argv[4])
        return
    for scenario in sys.argv[1:] or ["missing_rank", "size_mismatch", "dtype_mismatch", "p2p_hang"]:
        run(scenario)


if __name__ == "__main__":
    main()
