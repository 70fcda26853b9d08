"""Renders bench/results/suite.json (written by bench/run) as the markdown tables of the README's
"Benchmarks" section: every goal with its figure, then the collectives' bus bandwidth.

    .venv/bin/python bench/table.py [bench/results/suite.json]     (or: bench/run --table)"""
import json
import sys

suite = json.load(open(sys.argv[1] if len(sys.argv) > 1 else "bench/results/suite.json"))
m, v = suite["machine"], suite["versions"]
dates = sorted({p["date"][:10] for p in suite["parts"].values()})
print(f"Machine: {m['nproc']} CPUs ({m['cpu_model']}), {m['memory_gib']} GiB, {m.get('gpu') or 'no GPU'}; "
      f"{', '.join(dates)}; commit {v['git_commit'][:10]}{' (modified)' if v['git_dirty'] else ''}; "
      f"{v['rustc']}, torch {v['torch']}{'; QUICK configuration' if suite.get('quick') else ''}.\n")

print("| Part | Figure | Value | Goal | |")
print("|---|---|---:|---|---|")
for name, part in suite["parts"].items():
    for g in part["goals"]:
        print(f"| {name} | {g['name'].removeprefix(name + ' ')} | {g['value']:.3f} | "
              f"{g['op']} {g['goal']} | {'OK' if g['ok'] else 'MISSED'} |")
if "training" in suite["parts"]:  # the step times behind the ratios
    for model, r in suite["parts"]["training"]["results"].items():
        med = lambda xs: sorted(xs)[len(xs) // 2]
        print(f"| training | {model}: median step, ours / PyTorch (ms) | "
              f"{med(r['ours_ms']):.3f} / {med(r['torch_ms']):.3f} | | |")
if "tui" in suite["parts"]:
    r = suite["parts"]["tui"]["results"]
    print(f"| tui | open time at {r['spans']:,} spans (ms) | {r['open_ms']:.0f} | | |")
if "report" in suite["parts"]:
    r = suite["parts"]["report"]["results"]
    print(f"| report | {r['ranks']} ranks x {r['steps']} steps: generation (s) / size (KiB) | "
          f"{r['total_s']:.2f} / {r['bytes'] / 1024:.0f} | | |")
if "analysis" in suite["parts"]:
    for r in suite["parts"]["analysis"]["results"]:
        if r["mode"] == "cold":
            print(f"| analysis | {r['spans'] / 1e6:.0f}M spans, cold: peak memory (MiB) | "
                  f"{r['peak_mib']:.0f} | | |")

if "collectives" in suite["parts"]:
    rows = suite["parts"]["collectives"]["results"]
    impls = list(dict.fromkeys(r["impl"] for r in rows))
    # A few sizes; every size is in suite.json.
    sizes = {4096, 1 << 20, 16 << 20, 256 << 20}
    print("\nBus bandwidth (GB/s; 4 KB: time in µs) of comm against gloo "
          "(every size from 4 KB to 256 MB is in suite.json):\n")
    print("| op | ranks | bytes | " + " | ".join(impls) + " |")
    print("|---|---:|---:|" + "---:|" * len(impls))
    keys = list(dict.fromkeys((r["op"], r["world"], r["bytes"]) for r in rows))
    by = {(r["impl"], r["op"], r["world"], r["bytes"]): r for r in rows}
    for op, world, size in (k for k in keys if k[2] in sizes):
        cells = []
        for i in impls:
            r = by.get((i, op, world, size))
            cells.append("" if r is None else f"{r['time_us']:.0f} µs" if size == 4096
                         else f"{r['busbw_gbps']:.2f}")
        print(f"| {op} | {world} | {size:,} | " + " | ".join(cells) + " |")
