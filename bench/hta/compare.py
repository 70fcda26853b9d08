#!/usr/bin/env python3
"""Runs HTA and `ddp-probe breakdown` on the same trace folders, checks that they give the
same figures, and reports the time ratios (see bench/hta/run).

HTA's time is its load (TraceAnalysis) plus the temporal breakdown and the overlap, measured
inside the Python process (Python and library import left out, in HTA's favour). ddp-probe's
is the whole process, start to exit, measured from outside. Each is the median of REPEATS
fresh processes; peak RSS is the largest over the runs.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time


def run_child(cmd):
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed with status {p.returncode}")
    return out.decode(), wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss


def size_of(d):
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)
               if f.endswith(".json") or f.endswith(".json.gz"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hta-python", required=True)
    ap.add_argument("--ddp-probe", required=True)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", required=True)
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    results = []
    for d in a.dirs:
        name = os.path.basename(os.path.normpath(d))
        hta, ours = [], []
        for _ in range(a.repeats):
            out, wall, cpu, rss = run_child([a.hta_python, os.path.join(here, "hta_time.py"), d])
            r = json.loads(out.strip().splitlines()[-1])
            hta.append({"load_analysis_s": r["load_s"] + r["analysis_s"], "process_s": wall,
                        "cpu_s": cpu, "rss_kib": rss, "figures": r})
            out, wall, cpu, rss = run_child([a.ddp_probe, "breakdown", d, "--json"])
            ours.append({"process_s": wall, "cpu_s": cpu, "rss_kib": rss, "figures": json.loads(out)})
        h, o = hta[0]["figures"], ours[0]["figures"]
        same = (
            [x["idle_time_pctg"] for x in o["ranks"]] == h["idle_time_pctg"]
            and [x["compute_time_pctg"] for x in o["ranks"]] == h["compute_time_pctg"]
            and [x["comp_comm_overlap_pctg"] for x in o["ranks"]] == h["comp_comm_overlap_pctg"]
        )
        med = lambda xs, k: statistics.median(x[k] for x in xs)  # noqa: E731
        row = {
            "traces": name,
            "bytes": size_of(d),
            "ranks": h["ranks"],
            "same_figures": same,
            "hta_idle_compute_overlap_pctg": [h["idle_time_pctg"], h["compute_time_pctg"], h["comp_comm_overlap_pctg"]],
            "hta_load_analysis_s": med(hta, "load_analysis_s"),
            "hta_process_s": med(hta, "process_s"),
            "hta_cpu_s": med(hta, "cpu_s"),
            "hta_peak_rss_mib": max(x["rss_kib"] for x in hta) / 1024,
            "ddp_probe_process_s": med(ours, "process_s"),
            "ddp_probe_cpu_s": med(ours, "cpu_s"),
            "ddp_probe_peak_rss_mib": max(x["rss_kib"] for x in ours) / 1024,
        }
        row["ratio_wall"] = row["hta_load_analysis_s"] / row["ddp_probe_process_s"]
        row["ratio_cpu"] = row["hta_cpu_s"] / row["ddp_probe_cpu_s"] if row["ddp_probe_cpu_s"] > 0 else None
        results.append(row)
        print(f"{name:28} {row['bytes']/1e6:8.1f} MB  HTA {row['hta_load_analysis_s']:7.2f} s "
              f"({row['hta_peak_rss_mib']:6.0f} MiB)  ddp-probe {row['ddp_probe_process_s']:6.3f} s "
              f"({row['ddp_probe_peak_rss_mib']:5.1f} MiB)  ratio {row['ratio_wall']:6.1f}x wall, "
              f"{row['ratio_cpu'] or 0:6.1f}x cpu  same figures: {same}", flush=True)
    doc = {
        "what": "HTA 0.5.0 load + temporal breakdown + comm/comp overlap vs `ddp-probe breakdown` (whole process)",
        "repeats": a.repeats,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "loadavg_at_end": os.getloadavg()},
        "results": results,
        "min_ratio_wall": min(r["ratio_wall"] for r in results),
    }
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=2)
    print(f"smallest ratio {doc['min_ratio_wall']:.1f}x; wrote {a.out}")


if __name__ == "__main__":
    main()
