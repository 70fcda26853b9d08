#!/usr/bin/env python3
"""Writes a large Kineto trace for benchmarks: the events of a real trace repeated COPIES
times, each copy shifted in time by the source's span and given fresh correlation / External
ids and ProfilerStep numbers, so the result reads as one long profile of the same job.

usage: make_large.py SOURCE.json[.gz] OUT.json COPIES
"""
import gzip
import json
import sys


def main() -> None:
    src, out, copies = sys.argv[1], sys.argv[2], int(sys.argv[3])
    opener = gzip.open if src.endswith(".gz") else open
    with opener(src, "rt") as f:
        trace = json.load(f)
    events = trace.pop("traceEvents")
    timed = [e for e in events if isinstance(e.get("ts"), (int, float))]
    t0 = min(e["ts"] for e in timed)
    span = max(e["ts"] + e.get("dur", 0) for e in timed) - t0
    steps = [int(e["name"].split("#")[1]) for e in events if str(e.get("name", "")).startswith("ProfilerStep#")]
    nsteps = max(steps) - min(steps) + 1 if steps else 0
    id_stride = 10_000_000
    with open(out, "w") as f:
        f.write("{")
        for k, v in trace.items():
            f.write(json.dumps(k) + ": " + json.dumps(v) + ", ")
        f.write('"traceEvents": [\n')
        first = True
        for c in range(copies):
            shift = c * (span + 1000.0)
            for e in events:
                if c > 0 and e.get("ph") == "M":
                    continue
                e2 = dict(e)
                if isinstance(e2.get("ts"), (int, float)):
                    e2["ts"] = round(e2["ts"] + shift, 3)
                name = str(e2.get("name", ""))
                if name.startswith("ProfilerStep#"):
                    e2["name"] = "ProfilerStep#%d" % (int(name.split("#")[1]) + c * nsteps)
                if "id" in e2 and isinstance(e2["id"], int):
                    e2["id"] += c * id_stride
                args = e2.get("args")
                if isinstance(args, dict):
                    args = dict(args)
                    for key in ("correlation", "External id"):
                        if isinstance(args.get(key), int) and args[key] >= 0:
                            args[key] += c * id_stride
                    e2["args"] = args
                f.write(("" if first else ",\n") + json.dumps(e2))
                first = False
        f.write("\n]}\n")


if __name__ == "__main__":
    main()
