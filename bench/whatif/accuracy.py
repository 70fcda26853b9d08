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
- regret: the measured step of each trace's pick against the best measured step. A pick the
  sweep did not run (a first bucket other than the cap, or a per-bucket `bucket_cap_mb_list`) is
  run too, with as many repeats, after the sweep (kept as `pick-<caps>-r<N>`); with --reuse the
  kept ones are read and missing ones run when the cluster can be built, else such a pick's
  regret is left out and counted;
- the noise floor: the spread (max − min over median) of a cap's repeats;
- compute drift: each run's median forward against its shape's median (no collective overlaps
  DDP's forward, so it says how fast the machine computed during the run), with the traces of
  the largest errors: a trace predicts from its own run, so one recorded while the machine ran
  slow predicts every cap slow by about as much.
Results go to bench/results/whatif.json. Without root, `ip` or `tc` it says so and stops."""
import argparse
import contextlib
import datetime
import hashlib
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


def setting_of(cap_mb, first_bucket_bytes, cap_list_mb):
    """A bucket setting as the runs name it: ("cap", c) for an explicit bucket_cap_mb=c (its
    first bucket as large as the others), ("list", (c1, c2, ...)) for a per-bucket list; a first
    bucket other than the cap is the list (first, cap), as `ddp-probe advise` says to set it."""
    if cap_list_mb:
        return ("list", tuple(round(c, 6) for c in cap_list_mb))
    if first_bucket_bytes == int(cap_mb * MIB):
        return ("cap", cap_mb)
    return ("list", (round(first_bucket_bytes / MIB, 6), cap_mb))


def setting_name(setting):
    kind, value = setting
    return f"{value:g} MiB" if kind == "cap" else "list " + ",".join(f"{c:g}" for c in value)


def setting_short(setting):
    """The name, with a long list shortened to its length and ends (for the console)."""
    kind, value = setting
    if kind == "list" and len(value) > 4:
        return f"list of {len(value)} caps ({value[0]:g}, {value[1]:g}, … {value[-1]:g})"
    return setting_name(setting)


def setting_dir(setting):
    caps = setting[1]
    if len(caps) > 4:
        digest = hashlib.sha1(setting_name(setting).encode()).hexdigest()[:10]
        return f"pick-list{len(caps)}-{digest}"
    return "pick-" + "_".join(f"{c:g}" for c in caps)


def predictions(dirs, caps):
    """cap (MiB) -> predicted step (ms) for the candidate with first bucket = cap (what an
    explicit bucket_cap_mb gives), plus the replay error and the pick (its setting and
    predicted step)."""
    a = probe_json("advise", dirs, ["--candidates", ",".join(map(str, caps))])
    a = a.get("advice", a)
    out = {"missing": a.get("missing", []), "pred": {}, "pick": None, "replay_ms": None,
           "step_ms": None, "setting": None, "setting_pred_ms": None}
    for c in a.get("candidates", []):
        if c["first_bucket_bytes"] == int(c["cap_mb"] * MIB) or (
                c["cap_mb"] * MIB < 1 and c["first_bucket_bytes"] == int(c["cap_mb"] * MIB)):
            out["pred"][c["cap_mb"]] = c["predicted_step_ns"] / 1e6
    rec = a.get("recommendation")
    out["list_pick"] = None
    if rec:
        cur = a["current"]
        if rec["worth_changing"]:
            out["setting"] = setting_of(rec["cap_mb"], rec["first_bucket_bytes"],
                                        rec.get("cap_list_mb"))
        else:
            out["setting"] = ("cap", cur["bucket_cap_mb"])
        for c in a.get("candidates", []):
            if setting_of(c["cap_mb"], c["first_bucket_bytes"], c.get("cap_list_mb")) == \
                    out["setting"]:
                out["setting_pred_ms"] = c["predicted_step_ns"] / 1e6
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
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    ap.add_argument("--nodes", default="2,4",
                    help="cluster sizes to build, comma-separated (one rank per node; default: 2,4)")
    ap.add_argument("--rates", default="1gbit,400mbit",
                    help="link rates, as tc tbf takes them, comma-separated (default: 1gbit,400mbit)")
    ap.add_argument("--caps", default="0.25,1,2,8,25",
                    help="bucket_cap_mb values the sweep runs, comma-separated (default: "
                         "0.25,1,2,8,25)")
    ap.add_argument("--repeats", type=int, default=2,
                    help="runs per cap and shape; a cap's measured step is their median (default: 2)")
    ap.add_argument("--steps", type=int, default=25,
                    help="training steps per run (default: 25)")
    ap.add_argument("--model", default="--dim 256 --layers 6", help="lm's model arguments")
    ap.add_argument("--out", default=str(ROOT / "bench/results/whatif.json"),
                    help="where the results go as JSON (default: bench/results/whatif.json)")
    ap.add_argument("--keep", help="keep the run directories here")
    ap.add_argument("--cores", type=int,
                    help="pin the nodes round robin onto this many cores (default: all), to see "
                         "what nodes sharing a core do to the predictions")
    ap.add_argument("--reuse", action="store_true",
                    help="with --keep: analyse the runs already there instead of running them "
                         "again (to compare versions of the model on the same measurements)")
    args = ap.parse_args()
    why = Cluster.check()
    if why and not args.reuse:
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
            # The cluster stays up for the picks the sweep did not run (measured after it).
            stack = contextlib.ExitStack()
            cluster = None if args.reuse else stack.enter_context(
                Cluster(nodes, rate, cores=args.cores))

            def run_lm(out, buckets):
                return cluster.run([LM, *args.model.split(), "--steps", str(args.steps),
                                    *buckets, "--log-every", "1000"], out)

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
                for rep in range(args.repeats):
                    for cap in caps:
                        out = work / f"n{nodes}-{rate}" / f"cap{cap}-r{rep}"
                        dirs = run_lm(out, ["--bucket-cap-mb", str(cap)])
                        ms, fwd = run_medians(dirs)
                        runs.append((cap, rep, dirs, ms, fwd))
                        print(f"{shape}: cap {cap} MiB repeat {rep}: {ms:.1f} ms", flush=True)
            caps = sorted({r[0] for r in runs})
            measured = {c: statistics.median(r[3] for r in runs if r[0] == c) for c in caps}
            spread = {c: (max(r[3] for r in runs if r[0] == c) - min(r[3] for r in runs if r[0] == c))
                      / measured[c] for c in caps}
            typical_forward = statistics.median(r[4] for r in runs)
            preds = [predictions(dirs, caps) for _, _, dirs, _, _ in runs]
            # Every setting measured, by its name: the swept caps, then the picks they lack.
            measured_setting = {("cap", c): m for c, m in measured.items()}
            extra = sorted({p["setting"] for p in preds
                            if p["setting"] and p["setting"] not in measured_setting})
            extra_runs = {}
            for setting in extra:
                for rep in range(args.repeats):
                    out = work / f"n{nodes}-{rate}" / f"{setting_dir(setting)}-r{rep}"
                    dirs = [out / f"node{k}" for k in range(nodes)]
                    if not all((d / "traces").is_dir() for d in dirs):
                        if cluster is None and not why:
                            cluster = stack.enter_context(Cluster(nodes, rate, cores=args.cores))
                        if cluster is None:
                            continue
                        caps_arg = ",".join(f"{c:g}" for c in setting[1])
                        dirs = run_lm(out, ["--bucket-cap-mb-list", caps_arg])
                    ms, fwd = run_medians(dirs)
                    extra_runs.setdefault(setting, []).append((ms, fwd))
                    print(f"{shape}: pick {setting_short(setting)} repeat {rep}: {ms:.1f} ms, "
                          f"forward {fwd / typical_forward - 1:+.1%} against the sweep's",
                          flush=True)
            stack.close()
            # A pick runs after the sweep: its forward against the sweep's says whether the
            # machine computed as fast then.
            pick_drift = {}
            for setting, got in extra_runs.items():
                measured_setting[setting] = statistics.median(ms for ms, _ in got)
                pick_drift[setting] = statistics.median(f for _, f in got) / typical_forward - 1
            best_setting = min(measured_setting, key=measured_setting.get)
            best = measured_setting[best_setting]
            unmeasured_picks = 0
            traces = []
            for (cap, rep, dirs, ms, fwd), p in zip(runs, preds):
                # Its own cap is the replay (reported apart), not a prediction.
                errs = {c: (p["pred"][c] - measured[c]) / measured[c] for c in caps
                        if c in p["pred"] and c != cap}
                pick = p["pick"]
                regret = pick_error = None
                setting = p["setting"]
                if setting in measured_setting:
                    regret = measured_setting[setting] / best - 1
                    if p["setting_pred_ms"] is not None and setting != ("cap", cap):
                        pick_error = (p["setting_pred_ms"] - measured_setting[setting]) \
                            / measured_setting[setting]
                elif setting is not None:
                    unmeasured_picks += 1
                replay = None if p["replay_ms"] is None else (p["replay_ms"] - ms) / ms
                traces.append({"cap": cap, "repeat": rep, "measured_ms": ms, "missing": p["missing"],
                               "predicted_ms": p["pred"], "errors": errs, "pick": pick,
                               "list_pick": p["list_pick"],
                               "pick_setting": None if setting is None else setting_name(setting),
                               "pick_error": pick_error,
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
            pick_errs = [abs(t["pick_error"]) for t in traces if t["pick_error"] is not None]
            row = {"shape": shape, "nodes": nodes, "rate": rate, "measured_ms": measured,
                   "measured_picks_ms": {setting_name(k): v for k, v in measured_setting.items()
                                         if k[0] == "list"},
                   "picks_compute_drift": {setting_name(k): v for k, v in pick_drift.items()},
                   "unmeasured_picks": unmeasured_picks,
                   "max_pick_error": max(pick_errs) if pick_errs else None,
                   "noise_floor": statistics.mean(spread.values()), "spread": spread,
                   "best_cap": min(measured, key=measured.get),
                   "best_setting": setting_name(best_setting),
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
            for k, drift in pick_drift.items():
                print(f"  a pick the sweep did not run, measured after it: {setting_short(k)}: "
                      f"{measured_setting[k]:.0f} ms (forward {drift:+.1%} against the sweep's)")
            if regrets:
                print(f"  regret of the traces' picks: max {row['max_regret']:.1%}"
                      f" (best measured: {setting_short(best_setting)})")
            if pick_errs:
                print(f"  |predicted − measured| of the picks that were not the trace's own "
                      f"setting: max {row['max_pick_error']:.1%} over {len(pick_errs)}")
            if unmeasured_picks:
                print(f"  {unmeasured_picks} picks were not measured (kept runs only and no "
                      f"cluster: {why}); their regret is left out")
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
