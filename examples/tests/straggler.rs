//! Straggler attribution on real runs of the reference DDP (`lm`, 2 CPU ranks under
//! `ddp-probe run`): a rank slowed inside backward by the fault injection
//! (`DDP_PROBE_FAULT=rank=1,action=slow,ms=N,param=P`) is named, with the bucket that holds
//! parameter `P` (the first whose gradient it readied late) and what the steps would take
//! without it; twenty clean runs name nobody, or (at most twice) a rank their trace files show
//! really was slower.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{ddp_probe_bin, job_lock, run_bounded};
use serde_json::Value;

/// Steps per run: 2 warm-up steps, 12 steady ones (enough for the arrival statistics to name
/// a rank that is last in every one of them).
const STEPS: &str = "14";

/// Runs `lm` with small buckets (several per step) and `fault`, returns the run directory.
fn lm(dir: &Path, out: &str, fault: Option<&str>) -> PathBuf {
    let mut cmd = Command::new(ddp_probe_bin());
    cmd.current_dir(dir)
        .args(["run", "--nproc-per-node", "2", "--out", out, "--"])
        .arg(env!("CARGO_BIN_EXE_lm"))
        .args([
            "--steps",
            STEPS,
            "--bucket-cap-mb",
            "0.5",
            "--log-every",
            "1000",
        ]);
    match fault {
        Some(f) => cmd.env("DDP_PROBE_FAULT", f),
        None => cmd.env_remove("DDP_PROBE_FAULT"),
    };
    let done = run_bounded(
        cmd,
        &dir.join(format!("{out}.log")),
        Duration::from_secs(300),
    );
    assert!(done.status.success(), "{}", done.output);
    dir.join(out)
}

fn summary(run: &Path) -> Value {
    let out = Command::new(ddp_probe_bin())
        .args(["summary", "--json"])
        .arg(run)
        .output()
        .expect("ddp-probe runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<Value>(&out.stdout).expect("JSON")["summary"].clone()
}

/// The steady layout of rank 0's trace: the last `buckets` record (else the header's).
fn layout(run: &Path) -> Vec<Vec<u64>> {
    let text = std::fs::read_to_string(run.join("traces/rank-0.jsonl")).unwrap();
    let mut buckets = Value::Null;
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if v["type"] == "header" {
            buckets = v["ddp"]["buckets"].clone();
        } else if v["type"] == "buckets" {
            buckets = v["buckets"].clone();
        }
    }
    let mut b: Vec<(u64, Vec<u64>)> = buckets
        .as_array()
        .expect("a layout")
        .iter()
        .map(|b| {
            (
                b["id"].as_u64().unwrap(),
                b["params"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| p.as_u64().unwrap())
                    .collect(),
            )
        })
        .collect();
    b.sort();
    b.into_iter().map(|(_, p)| p).collect()
}

#[test]
fn a_rank_slowed_inside_backward_is_named_with_its_first_late_bucket() {
    let _lock = job_lock();
    let dir = tempfile::tempdir().unwrap();
    // Parameter 10: a layer in the middle of lm's parameter list, so some buckets come before
    // it in backward and some after.
    let run = lm(
        dir.path(),
        "slow",
        Some("rank=1,action=slow,ms=60,param=10"),
    );
    let s = summary(&run);
    let v = &s["slowdowns"]["straggler"];
    assert_eq!(v["rank"], 1, "{}", s["slowdowns"]);
    assert_eq!(v["phase"], "backward", "{v}");
    let bucket = layout(&run)
        .iter()
        .position(|b| b.contains(&10))
        .expect("parameter 10 is in a bucket") as u64;
    assert_eq!(v["buckets"][0].as_u64(), Some(bucket), "{v}");
    // Late by what the trace files themselves show (computed here without the analysis), by
    // something of the order of the 60 ms injected (on two shared cores the other rank's own
    // backward runs faster while rank 1 sleeps, so the lateness seen ranges from about half
    // the sleep, 37.7 ms once in CI, to somewhat over it), and mostly over backward.
    let late = v["late_ns"].as_f64().unwrap();
    let total = raw_phase_lateness(&run, 1, "total");
    assert!(
        (late - total).abs() <= 0.25 * total,
        "analysis {late} vs trace {total}: {v}"
    );
    assert!((25e6..120e6).contains(&late), "{v}");
    let raw = raw_phase_lateness(&run, 1, "backward");
    assert!(raw >= 0.5 * late, "backward {raw} of {late}");
    // Without it the steps would be shorter by about that much.
    let saved = v["step_ns"].as_f64().unwrap() - v["without_ns"].as_f64().unwrap();
    assert!(saved > 0.5 * late, "{v}");
    let text = String::from_utf8(
        Command::new(ddp_probe_bin())
            .arg("summary")
            .arg(&run)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert!(text.contains("straggler: rank 1 held back"), "{text}");
    assert!(text.contains("after the other ranks'"), "{text}");
    // The straggler's median step as a timeline, as recorded and without its lateness: the
    // last all-reduce ends earlier without it, by at least half of that step's own lateness
    // as the trace files show it (µs in Chrome's format). The step's, not the run's median
    // lateness: the median step by step time can be one where rank 1 was late by less (once
    // 20.5 ms saved against a median of over 41 ms).
    let chrome = common::chrome_export(&run, &["--what-if"]);
    let events = chrome["traceEvents"].as_array().unwrap();
    let pid_of = |prefix: &str| {
        events
            .iter()
            .find(|e| {
                e["name"] == "process_name"
                    && e["args"]["name"]
                        .as_str()
                        .is_some_and(|n| n.starts_with(prefix))
            })
            .map(|e| e["pid"].clone())
            .unwrap_or_else(|| panic!("no process {prefix:?}"))
    };
    let last_end = |pid: &Value| {
        events
            .iter()
            .filter(|e| &e["pid"] == pid && e["name"] == "all_reduce")
            .map(|e| e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap())
            .fold(0.0, f64::max)
    };
    let names: Vec<&str> = events
        .iter()
        .filter(|e| e["name"] == "process_name")
        .filter_map(|e| e["args"]["name"].as_str())
        .collect();
    let rec = names
        .iter()
        .find(|n| n.contains("as recorded (rank 1 latest)"))
        .unwrap_or_else(|| panic!("{names:?}"));
    let wo = names
        .iter()
        .find(|n| n.contains("without rank 1's lateness"))
        .unwrap_or_else(|| panic!("{names:?}"));
    let step: u64 = rec
        .split_once("step ")
        .and_then(|(_, r)| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no step in {rec:?}"));
    let b = raw_boundaries(&run);
    let ready_end = |rank: usize| {
        b[rank]
            .get(&step)
            .unwrap_or_else(|| panic!("step {step} of rank {rank} is not a steady step"))[3]
    };
    let step_late = ready_end(1) - ready_end(0);
    assert!(
        step_late > 0.0,
        "rank 1 was late in step {step}: {step_late}"
    );
    let (rec, wo) = (pid_of(&rec[..]), pid_of(&wo[..]));
    assert!(
        last_end(&wo) + 0.5 * step_late / 1e3 < last_end(&rec),
        "{} vs {} (step {step} late by {step_late} ns)",
        last_end(&wo),
        last_end(&rec)
    );
}

/// Per steady step (from 2), per rank: the boundaries the attribution compares, on rank 0's
/// clock, read straight from the trace files: step start, forward start, backward start and the
/// last gradient-ready time.
fn raw_boundaries(run: &Path) -> Vec<std::collections::BTreeMap<u64, [f64; 4]>> {
    let mut ranks = Vec::new();
    for r in 0..2 {
        let text = std::fs::read_to_string(run.join(format!("traces/rank-{r}.jsonl"))).unwrap();
        let mut offset = 0.0;
        let mut steps: std::collections::BTreeMap<u64, [f64; 4]> = Default::default();
        for line in text.lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            if v["type"] == "header" {
                offset = v["offset_to_rank0_ns"].as_f64().unwrap_or(0.0);
                continue;
            }
            let (Some(step), Some(start), Some(end)) =
                (v["step"].as_u64(), v["start"].as_f64(), v["end"].as_f64())
            else {
                continue;
            };
            if step < 2 || v["type"] != "span" {
                continue;
            }
            let b = steps.entry(step).or_insert([f64::NAN; 4]);
            match v["kind"].as_str() {
                Some("step") => b[0] = start + offset,
                Some("forward") => b[1] = start + offset,
                Some("backward") => b[2] = start + offset,
                Some("bucket_ready") => b[3] = f64::max(b[3].max(0.0), end + offset),
                _ => {}
            }
        }
        ranks.push(steps);
    }
    ranks
}

/// How much `rank` fell behind the other rank in `phase`, computed from the trace files alone
/// (not through the analysis), as the analysis defines it: over the steady steps in which
/// `rank` was the later of the two at the last gradient-ready time, the mean of what the
/// phase added to its lateness (`"total"`: the lateness at the last gradient-ready time; its
/// mean is at least half its median, the lateness reported, since these steps' are positive).
fn raw_phase_lateness(run: &Path, rank: usize, phase: &str) -> f64 {
    let b = raw_boundaries(run);
    let (mine, theirs) = (&b[rank], &b[1 - rank]);
    let per_step: Vec<f64> = mine
        .iter()
        .filter_map(|(step, m)| {
            let t = theirs.get(step)?;
            let late = |k: usize| m[k] - t[k];
            if late(3).is_nan() || late(3) <= 0.0 {
                return None;
            }
            let d = match phase {
                "total" => late(3),
                "between steps" => late(0),
                "data wait" => late(1) - late(0),
                "forward" => late(2) - late(1),
                _ => late(3) - late(2),
            };
            d.is_finite().then_some(d)
        })
        .collect();
    // The mean: the analysis names the phase with the largest total over the steps.
    if per_step.is_empty() {
        return 0.0;
    }
    per_step.iter().sum::<f64>() / per_step.len() as f64
}

/// Clean runs on a shared two-core machine are not always symmetric: a busy neighbour can make
/// one rank really slower for a whole run. So a clean run may name a rank only when the trace
/// files themselves show that rank behind (by at least half the lateness reported, and in the
/// phase named by at least a tenth of it), and only a few of the 20 may name one at all
/// ([`CLEAN_RUNS_NAMING_AT_MOST`]).
/// How many of the 20 clean runs may name a rank that its trace shows really was behind. On
/// this project's 2-core machine 6 of 80 clean runs did (1, 1, 1 and 3 of 20 in four rounds,
/// 2026-12-03; the round of 3 failed CI under the earlier bound of 2, which a rate of 6 in 80
/// exceeds in about one round in five). At that rate 6 or more of 20 happen about once in 360
/// rounds (once in 90 at one in ten).
const CLEAN_RUNS_NAMING_AT_MOST: usize = 5;

#[test]
fn twenty_clean_runs_name_no_straggler() {
    let _lock = job_lock();
    let dir = tempfile::tempdir().unwrap();
    let mut named = Vec::new();
    for k in 0..20 {
        let run = lm(dir.path(), &format!("clean{k}"), None);
        let s = summary(&run);
        assert!(
            s["slowdowns"]["compared"].as_u64().unwrap() >= 10,
            "{}",
            s["slowdowns"]
        );
        let v = &s["slowdowns"]["straggler"];
        if !v.is_null() {
            let rank = v["rank"].as_u64().unwrap() as usize;
            let phase = v["phase"].as_str().unwrap();
            let late = v["late_ns"].as_f64().unwrap();
            let raw = raw_phase_lateness(&run, rank, phase);
            let total = raw_phase_lateness(&run, rank, "total");
            let all: Vec<(&str, f64)> = ["between steps", "data wait", "forward", "backward"]
                .into_iter()
                .map(|p| (p, raw_phase_lateness(&run, rank, p)))
                .collect();
            // Behind by about what was reported (its median), and falling behind in the phase
            // named (the analysis's per-step rule, a quarter of the lateness, only loosely
            // bounds the mean over steps).
            assert!(
                total >= 0.5 * late && raw >= 0.1 * late,
                "clean run {k} names rank {rank} late by {late} ns in {phase}, but its trace \
                 shows {total} ns late, {raw} ns of it there (per phase: {all:?}): {}",
                s["slowdowns"]
            );
            named.push(format!(
                "run {k}: rank {rank}, {phase}, {late:.0} ns ({raw:.0} raw)"
            ));
        }
        std::fs::remove_dir_all(&run).ok();
    }
    eprintln!("clean runs that named a (really slower) rank: {named:?}");
    assert!(named.len() <= CLEAN_RUNS_NAMING_AT_MOST, "{named:?}");
}
