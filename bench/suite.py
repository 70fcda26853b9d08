"""The parts of bench/run. Each part runs the project's own benchmark programs, parses what they
print, and returns its exact configuration, its figures and its goals; the suite prints them and
writes bench/results/suite.json after every part (so an interrupted run keeps what it measured;
--quick writes suite-quick.json instead, so a smoke run leaves the figures of a full run alone).

    .venv/bin/python bench/suite.py [--quick] [--only PART,...]   (bench/run builds first)

Time of the full configuration on a busy 2-core machine (about 7 minutes in all, under the
20-minute budget): training 1.5-2.5 min, collectives 3-3.5 min, overhead 2 min, analysis 0.5 min
(plus 20 s the first time, to generate the 10M-span run), tui and report a few seconds each."""
import argparse
import atexit
import datetime
import json
import os
import pathlib
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
TARGET = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "release"
PY = str(ROOT / ".venv/bin/python")
OUT = ROOT / "bench/results/suite.json"
TMP = pathlib.Path(tempfile.mkdtemp(prefix="ddp-probe-bench-"))  # the run directories
atexit.register(shutil.rmtree, TMP, ignore_errors=True)
PARTS = ["training", "collectives", "overhead", "analysis", "tui", "report"]
# Full and --quick configurations of every part.
FULL = dict(train_steps=80, lm_steps=80, rounds=3, sizes=[4096 * 4**i for i in range(9)], worlds=[2, 4], min_time_ms=200,
            overhead=(5, 60), spans_m=[1, 10], tui=(8, 1000, 40), heatmap=(1024, 200, 4), report=(8, 1000, 40))
QUICK = dict(train_steps=20, lm_steps=20, rounds=1, sizes=[4096, 1 << 20], worlds=[2],
             min_time_ms=50, overhead=(1, 20), spans_m=[1], tui=(8, 100, 40), heatmap=(256, 50, 4), report=(8, 100, 40))


def sh(cmd, timeout=900, env=None, cwd=ROOT):
    """Runs a command, returns its stdout; a failure stops the suite with the command's stderr."""
    try:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                           env={**os.environ, **(env or {})})
    except subprocess.TimeoutExpired:
        sys.exit(f"bench/run: {' '.join(map(str, cmd))} took more than {timeout} s; stopped")
    if r.returncode != 0:
        sys.exit(f"bench/run: {' '.join(map(str, cmd))} failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return r.stdout


def launch(name, cmd, nproc=2, env=None):
    """Runs `cmd` on `nproc` ranks under `ddp-probe run` (torchrun's variables, OMP_NUM_THREADS=1);
    returns the run directory and rank 0's stdout."""
    for attempt in (1, 2):  # gloo at exit aborts now and then on a loaded machine: once more
        run_dir = TMP / f"{name}-{attempt}"
        r = subprocess.run([TARGET / "ddp-probe", "run", "--nproc-per-node", str(nproc), "--console",
                            "quiet", "--out", run_dir, "--", *cmd], cwd=ROOT, capture_output=True,
                           text=True, timeout=900, env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})})
        if r.returncode == 0:
            return run_dir, (run_dir / "logs/rank-0.stdout").read_text()
        logs = "".join(f"--- {f.name}\n" + f.read_text()[-1500:] for f in sorted((run_dir / "logs").glob("*")))
        print(f"bench/run: {name} failed (attempt {attempt}):\n{r.stdout[-1500:]}{logs}", file=sys.stderr)
    sys.exit(f"bench/run: {name} failed twice; see above")


def goal(name, value, op, target, unit=""):
    ok = value <= target if op == "<=" else value < target if op == "<" else value >= target
    return {"name": name, "value": value, "op": op, "goal": target, "unit": unit, "ok": ok}


def json_lines(text):
    return [json.loads(l[l.index("{"):]) for l in text.splitlines() if l.lstrip().startswith("{")]


# ---- 1. training step time: the reference DDP against PyTorch's DDP (gloo) ------------------
def training(cfg):
    res, goals = {}, []
    for model, steps in (("train", cfg["train_steps"]), ("lm", cfg["lm_steps"])):
        extra = ["--epochs", "100000", "--checkpoint-every", "0"] if model == "train" else ["--log-every", "100000"]
        ours_ms, torch_ms, ours_phases, torch_phases = [], [], [], []
        for r in range(cfg["rounds"]):  # alternate, so that both see the same machine state
            run_dir, out = launch(f"{model}-ours-{r}", [TARGET / model, "--steps", str(steps),
                                                        "--bucket-cap-mb", "25", *extra])
            ours_ms.append(float(re.search(r"step time: median ([\d.]+) ms", out).group(1)))
            ours_params = int(re.search(r"(\d+) parameters", out).group(1))
            s = json.loads(sh([TARGET / "ddp-probe", "summary", run_dir, "--json"]))["summary"]["overall"]
            ours_phases.append({k: s[k]["median"] / 1e6 for k in ("data_wait", "forward", "backward", "comm",
                                                        "comm_exposed", "writeback", "optimizer", "other")})
            _, out = launch(f"{model}-torch-{r}", [PY, f"bench/torch/{model}.py", "--steps", str(steps),
                                                   "--bucket-cap-mb", "25", "--threads", "1"])
            b = json.loads(out[out.index("bench: ") + 7:].splitlines()[0])
            if b["params"] != ours_params:  # the same model: the same parameter count
                sys.exit(f"bench/run: {model}: {ours_params} parameters here, {b['params']} in PyTorch")
            torch_ms.append(b["step_ms"])
            torch_phases.append(b["phases_ms"])
        med = lambda rows: {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        ratio = statistics.median(ours_ms) / statistics.median(torch_ms)
        res[model] = {"params": ours_params, "steps": steps, "warmup_steps": 3, "rounds": cfg["rounds"],
                      "ours_ms": ours_ms, "torch_ms": torch_ms, "ratio": ratio,
                      "ours_phases_ms": med(ours_phases), "torch_phases_ms": med(torch_phases),
                      "torch_version": b["torch"], "threads_per_rank": b["threads"]}
        goals.append(goal(f"training {model}: step time ours / PyTorch DDP", ratio, "<=", 1.0))
        print(f"  {model:5} ({ours_params} parameters, {steps} steps x {cfg['rounds']} rounds): "
              f"ours {statistics.median(ours_ms):.3f} ms, PyTorch {statistics.median(torch_ms):.3f} ms, "
              f"ratio {ratio:.3f}")
        o, t = res[model]["ours_phases_ms"], res[model]["torch_phases_ms"]
        print(f"        phases (medians, ms) ours: " + ", ".join(f"{k} {v:.3f}" for k, v in o.items()))
        print(f"        phases (medians, ms) PyTorch (backward includes its all-reduce wait): "
              + ", ".join(f"{k} {v:.3f}" for k, v in t.items()))
    config = {"ranks": 2, "threads_per_rank": 1, "bucket_cap_mb": 25, "batch_size": 8, "backend": "gloo",
              "launcher": "ddp-probe run (OMP_NUM_THREADS=1)", "statistic": "median of the rounds' "
              "medians of the step times after 3 warm-up steps (each the mean over ranks of the ranks' medians)"}
    return {"config": config, "results": res}, goals


# ---- 2. collectives: comm (shm, tcp) against torch.distributed gloo --------------------------
def collectives(cfg):
    ops = "all_reduce,broadcast,all_gather"
    sizes = ",".join(map(str, cfg["sizes"]))
    rows, goals = [], []
    for world in cfg["worlds"]:
        for transport in ("shm", "tcp"):
            out = sh(["cargo", "bench", "--locked", "-q", "-p", "comm", "--bench", "allreduce", "--",
                      "--world", str(world), "--transport", transport, "--ops", ops, "--sizes", sizes,
                      "--min-time-ms", str(cfg["min_time_ms"]), "--json"], timeout=1200)
            rows += [dict(r, impl=f"comm {transport}") for r in json_lines(out)]
        _, out = launch(f"gloo-{world}", [PY, "bench/torch/collectives.py", "--ops", ops, "--sizes", sizes,
                                         "--min-time-ms", str(cfg["min_time_ms"])], nproc=world)
        rows += [dict(r, impl="gloo") for r in json_lines(out)]
    gloo = {(r["op"], r["world"], r["bytes"]): r for r in rows if r["impl"] == "gloo"}
    for r in rows:
        g = gloo[(r["op"], r["world"], r["bytes"])]
        r["busbw_ratio_vs_gloo"] = r["busbw_gbps"] / g["busbw_gbps"]
        r["time_ratio_vs_gloo"] = r["time_us"] / g["time_us"]
    print(f"  {'impl':9} {'op':10} {'n':>2} {'bytes':>10} {'time us':>11} {'algbw GB/s':>10} "
          f"{'busbw GB/s':>10} {'x gloo busbw':>12}")
    for r in rows:
        print(f"  {r['impl']:9} {r['op']:10} {r['world']:>2} {r['bytes']:>10} {r['time_us']:>11.1f} "
              f"{r['algbw_gbps']:>10.3f} {r['busbw_gbps']:>10.3f} {r['busbw_ratio_vs_gloo']:>12.2f}")
    # The goals are judged on shared memory, what a job on one machine uses by default; loopback
    # TCP (the transport between machines) is in the results for information.
    for world in cfg["worlds"]:
        for impl in ("comm shm",):
            for op in ops.split(","):
                mine = [r for r in rows if (r["impl"], r["world"], r["op"]) == (impl, world, op)]
                big = [r["busbw_ratio_vs_gloo"] for r in mine if r["bytes"] >= 1 << 20]
                small = [r["time_ratio_vs_gloo"] for r in mine if r["bytes"] == 4096]
                if big:
                    goals.append(goal(f"{impl} {op} {world} ranks: busbw / gloo's, worst size >= 1 MB",
                                      min(big), ">=", 1.5))
                if small:
                    goals.append(goal(f"{impl} {op} {world} ranks: 4 KB time / gloo's", small[0], "<", 1.0))
    config = {"ranks": cfg["worlds"], "sizes_bytes": cfg["sizes"], "dtype": "float32",
              "min_time_ms": cfg["min_time_ms"], "threads_per_rank": 1,
              "repeats": 3,
              "method": "3 warm-up calls (1 from 64 MiB); rank 0 times batches of 1, 2, 4, ... calls until "
                        "min_time / 10 has passed; iterations = min_time / mean call, within [3, 20000]; "
                        "3 timed loops of that many calls, each after a barrier, timed as the slowest rank's; "
                        "time = the fastest loop's time / iterations (time_us_median: the median loop's)",
              "transports": "comm shm is what a job on one machine uses by default (the goals are judged on "
                            "it); comm tcp, the transport between machines, is run over loopback for "
                            "information",
              "definitions": "algbw = bytes / time; busbw = algbw x 2(n-1)/n (all_reduce), "
                             "x (n-1)/n (all_gather, bytes = output), x 1 (broadcast)"}
    return {"config": config, "results": rows}, goals


# ---- 3. recording overhead (bench/overhead) --------------------------------------------------
def overhead(cfg):
    rounds, steps = cfg["overhead"]
    print(sh(["bench/overhead", str(rounds), str(steps)], timeout=1800,
             env={"OVERHEAD_JSON": str(TMP / "overhead.json")}), end="")
    o = json.loads((TMP / "overhead.json").read_text())
    config = {"example": "lm", "ranks": 2, "threads_per_rank": 1, "rounds": rounds, "steps": steps}
    return {"config": config, "results": o}, [goal("recording on / off (lm step time)", o["ratio"], "<", 1.01)]


# ---- 4. analysis: load + summary of generated runs (probe's trace_bench) ---------------------
def analysis(cfg):
    base = pathlib.Path(tempfile.gettempdir()) / "ddp-probe-trace-bench"  # reused between runs
    out = sh([TARGET / "examples/trace_bench", "bench", base, *map(str, cfg["spans_m"])], timeout=1800)
    print(out, end="")
    rows, goals = [], []
    for line in out.splitlines():
        m = re.match(r"\s*([\d.]+)M\s+(\w+) \|" + r"\s+([\d.]+)" * 4 + r" \|" + r"\s+([\d.]+)" * 2
                     + r" \|" + r"\s+([\d.]+)" * 3 + r" \|" + r"\s+([\d.]+)", line)
        if m:
            v = [float(x) for x in m.groups()[2:]]
            spans = float(m.group(1)) * 1e6
            rows.append({"spans": spans, "mode": m.group(2), "load_s": v[0], "load_cpu_s": v[1],
                         "load_mspans_per_s": v[2], "load_peak_mib": v[3], "summary_s": v[4],
                         "summary_cpu_s": v[5], "total_s": v[6], "peak_mib": v[7],
                         "median_cpu_s": v[8], "cache_write_cpu_s": v[9],
                         "mspans_per_s": spans / v[6] / 1e6,
                         "mspans_per_cpu_s": spans / (v[1] + v[5]) / 1e6})
    for r in rows:
        if r["mode"] in ("cold", "warm"):
            goals.append(goal(f"analysis {r['spans'] / 1e6:.0f}M spans, {r['mode']} load + summary "
                              "(M spans/s)", r["mspans_per_s"], ">=", 5.0))
    config = {"generator": "probe::synth, 8 ranks x 40 buckets (125 spans per step and rank)",
              "spans_millions": cfg["spans_m"], "threads": 1,
              "repeats": "3 per mode, in turn; the row of least CPU time, with the median",
              "modes": "parse: no cache; cold: cache deleted first (parse; the cache is written "
                       "after the summary and timed apart); warm: cache read"}
    return {"config": config, "results": rows}, goals


# ---- 5. terminal timeline: open and frame time (tui's frame bench) ---------------------------
def tui(cfg):
    ranks, steps, buckets = cfg["tui"]
    out = sh(["cargo", "bench", "--locked", "-q", "-p", "probe-tui", "--bench", "frame", "--",
              str(ranks), str(steps), str(buckets)], timeout=1200)
    print(out, end="")
    m = re.search(r"open: (\d+) ms \(load (\d+) ms \+ index (\d+) ms\) for (\d+) spans", out)
    frames = [{"size": f, "view": v.strip(), "mean_ms": float(a), "worst_ms": float(b)} for f, v, a, b in
              re.findall(r"^\s+(\d+x\d+)\s+(.+?)\s+([\d.]+) ms /\s+([\d.]+) ms", out, re.M)]
    res = {"spans": int(m.group(4)), "open_ms": float(m.group(1)), "load_ms": float(m.group(2)),
           "index_ms": float(m.group(3)), "frames": frames}
    goals = [goal(f"tui frame at {size}, slowest view's mean (ms)",
                  max(f["mean_ms"] for f in frames if f["size"] == size), "<=", 16.0)
             for size in dict.fromkeys(f["size"] for f in frames)]
    # A job of many ranks: the heatmap view's open (load + index + heatmaps) and frames.
    hr, hs, hb = cfg["heatmap"]
    hout = sh(["cargo", "bench", "--locked", "-q", "-p", "probe-tui", "--bench", "frame", "--",
               str(hr), str(hs), str(hb)], timeout=1200)
    print(hout, end="")
    hm = re.search(r"open to the heatmap's first frame: (\d+) ms", hout)
    hframes = [{"size": f, "view": v.strip(), "mean_ms": float(a), "worst_ms": float(b)} for f, v, a, b in
               re.findall(r"^\s+(\d+x\d+)\s+(heatmap, .+?)\s+([\d.]+) ms /\s+([\d.]+) ms", hout, re.M)]
    res["heatmap"] = {"ranks": hr, "steps": hs, "buckets": hb, "open_ms": float(hm.group(1)),
                      "frames": hframes}
    goals.append(goal(f"tui heatmap of {hr} ranks x {hs} steps: open to its first frame (ms)",
                      float(hm.group(1)), "<=", 1000.0))
    goals.append(goal(f"tui heatmap of {hr} ranks x {hs} steps: slowest frame's mean (ms)",
                      max(f["mean_ms"] for f in hframes), "<=", 16.0))
    config = {"ranks": ranks, "steps": steps, "buckets": buckets, "frames_per_view": 30,
              "render": "whole screen into a ratatui buffer (as TestBackend), 5 views per size",
              "heatmap": {"ranks": hr, "steps": hs, "buckets": hb}}
    return {"config": config, "results": res}, goals


# ---- 6. HTML report of a synthetic run (reports' report_bench) -------------------------------
def report(cfg):
    ranks, steps, buckets = cfg["report"]
    r = json.loads(sh([TARGET / "examples/report_bench", str(ranks), str(steps), str(buckets)]))
    print(f"  {ranks} ranks x {steps} steps ({r['spans']} spans): load {r['load_s']:.2f} s, render "
          f"{r['render_s']:.2f} s, write {r['write_s']:.3f} s; {r['bytes'] / 1024:.0f} KiB")
    config = {"ranks": ranks, "steps": steps, "buckets": buckets, "load": "trace cache already written"}
    return {"config": config, "results": r}, []


def machine():
    cpu = open("/proc/cpuinfo").read()
    model = re.search(r"model name\s*:\s*(.*)", cpu)
    mem = int(re.search(r"MemTotal:\s+(\d+)", open("/proc/meminfo").read()).group(1))
    gpu = subprocess.run("nvidia-smi -L", shell=True, capture_output=True, text=True).stdout.strip()
    return {"nproc": os.cpu_count(), "cpu_model": model.group(1) if model else platform.machine(),
            "memory_gib": round(mem / 2**20, 1), "kernel": platform.release(), "gpu": gpu or None}


def versions():
    git = lambda *a: subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    import torch
    return {"git_commit": git("rev-parse", "HEAD"), "git_dirty": bool(git("status", "--porcelain")),
            "rustc": sh(["rustc", "--version"]).strip(), "python": platform.python_version(),
            "torch": torch.__version__}


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--quick", action="store_true", help="short configurations (a smoke run)")
    p.add_argument("--only", default=",".join(PARTS), help="parts to run: " + ",".join(PARTS))
    args = p.parse_args()
    cfg = QUICK if args.quick else FULL
    # A smoke run does not replace the figures of a full one.
    out = OUT.with_name("suite-quick.json") if args.quick else OUT
    only = args.only.split(",")
    if bad := set(only) - set(PARTS):
        sys.exit(f"bench/run: unknown part(s) {sorted(bad)}; the parts are {PARTS}")
    # --only keeps the other parts of an earlier suite.json (each part carries its own date).
    suite = json.loads(out.read_text()) if out.exists() and len(only) < len(PARTS) else {"parts": {}}
    suite.update(machine=machine(), versions=versions(), quick=args.quick)
    for name in only:
        print(f"== {name}", flush=True)
        t = datetime.datetime.now(datetime.timezone.utc)
        part, goals = globals()[name](cfg)
        part.update(date=t.isoformat(timespec="seconds"), commit=suite["versions"]["git_commit"],
                    quick=args.quick, seconds=round((datetime.datetime.now(datetime.timezone.utc) - t).total_seconds(), 1),
                    goals=goals)
        suite["parts"][name] = part
        suite["date"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(suite, indent=1) + "\n")
        print(f"   ({part['seconds']} s)", flush=True)
    print("== goals")
    for name, part in suite["parts"].items():
        for g in part["goals"]:
            print(f"  {'OK    ' if g['ok'] else 'MISSED'} {g['name']}: {g['value']:.3f} (goal {g['op']} {g['goal']})")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
