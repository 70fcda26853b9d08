"""How far `ddp-probe advise` is from reality: a sweep of bucket caps measured on a shaped
multi-node cluster (see cluster.py), and every recorded trace's predictions compared with it.

    sudo .venv/bin/python bench/whatif/accuracy.py [--nodes 2,4] [--rates 1gbit,400mbit]
        [--caps 0.25,1,2,8,25] [--repeats 2] [--steps 25] [--keep DIR [--reuse]]

For each cluster shape (nodes × one rank, link rate) it runs the `lm` example once per cap and
repeat under `ddp-probe run` (one run directory per node), takes each run's median steady step
from `ddp-probe summary --json`, and the measured step of a cap as the median over its repeats.
Each trace's `ddp-probe advise --json` predicts the step of every measured cap (the candidate with
that cap and the first bucket the measured run used). It prints, per shape and overall:
- replay error: the trace's simulation of its own layout against its own measured step;
- mean and max |error| of predicted against measured median step over every (trace, cap);
- regret: the measured step of each trace's pick against the best measured step;
- the noise floor: the spread (max − min over median) of a cap's repeats;
- compute drift: each run's median forward against its shape's median (no collective overlaps
  DDP's forward, so it says how fast the machine computed during the run), with the traces of
  the largest errors: a trace predicts from its own run, so one recorded while the machine ran
  slow predicts every cap slow by about as much.
Results go to bench/results/whatif.json. Without root, `ip` or `tc` it says so and stops."""
import argparse
import datetime
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from cluster import ROOT, Cluster  # noqa: E402

DDP_PROBE = str(ROOT / "target/release/ddp-probe")
LM = str(ROOT / "target/release/lm")
MIB = 1024 * 1024


def probe_json(cmd, dirs, extra=()):
    r = subprocess.run([DDP_PROBE, cmd, "--json", *extra, *map(str, dirs)], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise RuntimeError(f"ddp-probe {cmd} failed: {r.stderr}")
    return json.loads(r.stdout)


def run_medians(dirs):
    """The run's median step and median forward (ms). DDP's forward overlaps no collective, so
    against the other runs of its shape it says how fast the machine computed during this
    run."""
    s = probe_json("summary", dirs)["summary"]["overall"]
    return s["step"]["median"] / 1e6, s["forward"]["median"] / 1e6


def predictions(dirs, caps):
    """cap (MiB) -> predicted step (ms) for the candidate with first bucket = cap (what an
    explicit bucket_cap_mb gives), plus the replay error and the pick."""
    a = probe_json("advise", dirs, ["--candidates", ",".join(map(str, caps))])
    a = a.get("advice", a)
    out = {"missing": a.get("missing", []), "pred": {}, "pick": None, "replay_ms": None,
           "step_ms": None}
    for c in a.get("candidates", []):
        if c["first_bucket_bytes"] == int(c["cap_mb"] * MIB) or (
                c["cap_mb"] * MIB < 1 and c["first_bucket_bytes"] == int(c["cap_mb"] * MIB)):
            out["pred"][c["cap_mb"]] = c["predicted_step_ns"] / 1e6
    rec = a.get("recommendation")
    out["list_pick"] = None
    if rec:
        if not rec["worth_changing"]:
            out["pick"] = a["current"]["bucket_cap_mb"]
        elif rec.get("cap_list_mb"):
            # A per-bucket list is not among the measured caps: the measured cap it predicts
            # fastest stands for it (the list is reported apart).
            out["list_pick"] = rec["cap_list_mb"]
            out["pick"] = min(out["pred"], key=out["pred"].get) if out["pred"] else None
        else:
            out["pick"] = rec["cap_mb"]
    replay = a.get("replay")
    if replay:
        out["replay_ms"] = replay["predicted_step_ns"] / 1e6
        out["step_ms"] = replay["measured_step_ns"] / 1e6
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", default="2,4")
    ap.add_argument("--rates", default="1gbit,400mbit")
    ap.add_argument("--caps", default="0.25,1,2,8,25")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--steps", type=int, default=25)
    ap.add_argument("--model", default="--dim 256 --layers 6", help="lm's model arguments")
    ap.add_argument("--out", default=str(ROOT / "bench/results/whatif.json"))
    ap.add_argument("--keep", help="keep the run directories here")
    ap.add_argument("--cores", type=int,
                    help="pin the nodes round robin onto this many cores (default: all), to see "
                         "what nodes sharing a core do to the predictions")
    ap.add_argument("--reuse", action="store_true",
                    help="with --keep: analyse the runs already there instead of running them "
                         "again (to compare versions of the model on the same measurements)")
    args = ap.parse_args()
    why = None if args.reuse else Cluster.check()
    if why:
        sys.exit(f"bench/whatif/accuracy.py: the shaped cluster {why}; nothing was measured")
    caps_all = [float(c) for c in args.caps.split(",")]
    work = pathlib.Path(args.keep or tempfile.mkdtemp(prefix="ddp-probe-whatif-"))
    out_path = pathlib.Path(args.out).resolve()
    results = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
               # Where the runs were kept is this machine's business, not the result's.
               "config": {**vars(args), "keep": None,
                          "out": (str(out_path.relative_to(ROOT))
                                  if out_path.is_relative_to(ROOT) else None)},
               "shapes": []}
    all_err, all_regret, all_replay = [], [], []
    for nodes in [int(n) for n in args.nodes.split(",")]:
        for rate in args.rates.split(","):
            shape = f"{nodes} nodes × 1 rank, {rate}"
            caps = caps_all
            runs = []  # (cap, repeat, dirs, measured step ms, forward ms)
            if args.reuse:
                for rep in range(args.repeats):
                    for cap in caps:
                        out = work / f"n{nodes}-{rate}" / f"cap{cap}-r{rep}"
                        dirs = [out / f"node{k}" for k in range(nodes)]
                        if all((d / "traces").is_dir() for d in dirs):
                            runs.append((cap, rep, dirs, *run_medians(dirs)))
                if not runs:
                    print(f"{shape}: no kept runs under {work}; skipped")
                    continue
            else:
                with Cluster(nodes, rate, cores=args.cores) as cluster:
                    for rep in range(args.repeats):
                        for cap in caps:
                            out = work / f"n{nodes}-{rate}" / f"cap{cap}-r{rep}"
                            dirs = cluster.run([LM, *args.model.split(), "--steps",
                                                str(args.steps), "--bucket-cap-mb", str(cap),
                                                "--log-every", "1000"], out)
                            ms, fwd = run_medians(dirs)
                            runs.append((cap, rep, dirs, ms, fwd))
                            print(f"{shape}: cap {cap} MiB repeat {rep}: {ms:.1f} ms", flush=True)
            caps = sorted({r[0] for r in runs})
            measured = {c: statistics.median(r[3] for r in runs if r[0] == c) for c in caps}
            spread = {c: (max(r[3] for r in runs if r[0] == c) - min(r[3] for r in runs if r[0] == c))
                      / measured[c] for c in caps}
            best = min(measured.values())
            typical_forward = statistics.median(r[4] for r in runs)
            traces = []
            for cap, rep, dirs, ms, fwd in runs:
                p = predictions(dirs, caps)
                # Its own cap is the replay (reported apart), not a prediction.
                errs = {c: (p["pred"][c] - measured[c]) / measured[c] for c in caps
                        if c in p["pred"] and c != cap}
                pick = p["pick"]
                regret = None
                if pick is not None:
                    near = min(caps, key=lambda c: abs(c - pick))
                    regret = measured[near] / best - 1 if abs(near - pick) < 1e-9 else None
                replay = None if p["replay_ms"] is None else (p["replay_ms"] - ms) / ms
                traces.append({"cap": cap, "repeat": rep, "measured_ms": ms, "missing": p["missing"],
                               "predicted_ms": p["pred"], "errors": errs, "pick": pick,
                               "list_pick": p["list_pick"],
                               "regret": regret, "replay_error": replay,
                               "forward_ms": fwd, "compute_drift": fwd / typical_forward - 1})
                all_err += [abs(e) for e in errs.values()]
                if regret is not None:
                    all_regret.append(regret)
                if replay is not None:
                    all_replay.append(abs(replay))
            errs = [abs(e) for t in traces for e in t["errors"].values()]
            regrets = [t["regret"] for t in traces if t["regret"] is not None]
            no_pick = sum(1 for t in traces if t["pick"] is None)
            row = {"shape": shape, "nodes": nodes, "rate": rate, "measured_ms": measured,
                   "noise_floor": statistics.mean(spread.values()), "spread": spread,
                   "best_cap": min(measured, key=measured.get),
                   "mean_abs_error": statistics.mean(errs) if errs else None,
                   "max_abs_error": max(errs) if errs else None,
                   "max_regret": max(regrets) if regrets else None,
                   "traces_without_advice": no_pick, "traces": traces}
            results["shapes"].append(row)
            print(f"\n{shape}: measured median step per cap: "
                  + " · ".join(f"{c:g} MiB {measured[c]:.0f} ms" for c in caps))
            print(f"  noise floor (repeat spread, mean over caps): {row['noise_floor']:.1%}")
            if errs:
                print(f"  |predicted − measured| over {len(errs)} predictions from {len(traces)} traces:"
                      f" mean {row['mean_abs_error']:.1%}, max {row['max_abs_error']:.1%}")
            if regrets:
                print(f"  regret of the traces' picks: max {row['max_regret']:.1%}"
                      f" (best measured: {row['best_cap']:g} MiB)")
            if no_pick:
                print(f"  {no_pick} traces gave no advice")
            # A trace predicts from its own run's compute: one recorded while the machine ran
            # slow predicts every cap slow by as much. Its forward says so (no collective
            # overlaps it), so the worst predictions are shown with it.
            drifts = [abs(t["compute_drift"]) for t in traces]
            row["max_compute_drift"] = max(drifts)
            print(f"  compute drift (a run's median forward against the shape's median): "
                  f"max {row['max_compute_drift']:.1%}")
            for t in sorted(traces, key=lambda t: -max(map(abs, t["errors"].values()), default=0))[:2]:
                if t["errors"]:
                    worst = max(t["errors"].values(), key=abs)
                    print(f"    the {t['cap']:g} MiB trace of repeat {t['repeat']}: largest error "
                          f"{worst:+.1%}, forward {t['compute_drift']:+.1%}")
            pathlib.Path(args.out).write_text(json.dumps(results, indent=1))
    if all_err:
        print(f"\nall shapes: mean |error| {statistics.mean(all_err):.1%}, max {max(all_err):.1%};"
              f" max regret {max(all_regret, default=float('nan')):.1%};"
              f" replay |error| mean {statistics.mean(all_replay) if all_replay else float('nan'):.1%}")
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
