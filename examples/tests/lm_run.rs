//! The main job, end to end: the `lm` example on 2 CPU ranks under `ddp-probe run`, then what
//! `ddp-probe summary --json` and `ddp-probe advise --json` make of it. The checks are the
//! summary's identities (overlapped + exposed communication is the total, the buckets hold
//! every parameter the header lists), overlap that must be there (`lm`'s first bucket is
//! reduced while backward still runs), and advice that comes with its reasoning.
//!
//! The job is bounded in wall time (an upper bound only, to keep CI from hanging).

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{ddp_probe_bin, job_lock, run_bounded};
use serde_json::Value;

/// Steps of the job: 2 warm-up steps (first iteration, bucket rebuild) and 18 steady ones.
const STEPS: u64 = 20;

/// `ddp-probe ARGS... RUN --json`, parsed.
fn json_of(args: &[&str], run: &Path) -> Value {
    let out = Command::new(ddp_probe_bin())
        .args(args)
        .arg("--json")
        .arg(run)
        .output()
        .expect("ddp-probe runs");
    assert!(
        out.status.success(),
        "ddp-probe {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("valid JSON")
}

/// The checks every advice with a recommendation passes.
fn assert_reasoned(advice: &Value) {
    let rec = &advice["recommendation"];
    assert!(rec["cap_mb"].as_f64().is_some_and(|c| c > 0.0), "{advice}");
    assert!(rec["worth_changing"].is_boolean(), "{advice}");
    let why: Vec<&str> = rec["explanation"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert!(why.len() >= 3, "the advice gives its reasoning: {rec}");
    // What the step waits for now, the cost model, and the verdict.
    assert!(why[0].contains("after backward ends"), "{why:?}");
    assert!(why[1].starts_with("Cost model for all_reduce"), "{why:?}");
}

#[test]
fn an_lm_run_is_summarised_with_its_overlap_and_advised() {
    let _lock = job_lock();
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(ddp_probe_bin());
    cmd.current_dir(dir.path())
        .args(["run", "--nproc-per-node", "2", "--out", "lm", "--"])
        .arg(env!("CARGO_BIN_EXE_lm"))
        .args(["--steps", &STEPS.to_string()])
        .env_remove("DDP_PROBE_FAULT");
    let done = run_bounded(cmd, &dir.path().join("lm.log"), Duration::from_secs(300));
    assert!(done.status.success(), "{}", done.output);
    let run = dir.path().join("lm");

    let v = json_of(&["summary"], &run);
    let s = &v["summary"];
    assert_eq!(s["world_size"].as_u64(), Some(2));
    let n = |totals: &Value, k: &str| {
        totals[k]
            .as_i64()
            .unwrap_or_else(|| panic!("{k} in {totals}"))
    };
    let totals = &s["overall"]["totals"];
    assert!(n(totals, "comm_ns") > 0, "{totals}");
    assert_eq!(
        n(totals, "comm_overlapped_ns") + n(totals, "comm_exposed_ns"),
        n(totals, "comm_ns"),
        "{totals}"
    );
    // The first bucket's all-reduce starts while backward still runs.
    assert!(n(totals, "comm_overlapped_ns") > 0, "{totals}");
    for r in s["ranks"].as_array().expect("per-rank summaries") {
        let t = &r["breakdown"]["totals"];
        assert_eq!(
            n(t, "comm_overlapped_ns") + n(t, "comm_exposed_ns"),
            n(t, "comm_ns"),
            "{r}"
        );
    }
    // The steady buckets hold every parameter of the header's table, each once.
    let header = std::fs::read_to_string(run.join("traces/rank-0.jsonl")).unwrap();
    let header: Value = serde_json::from_str(header.lines().next().unwrap()).unwrap();
    let params = header["ddp"]["params"].as_array().expect("parameter table");
    let param_bytes: u64 = params.iter().filter_map(|p| p["bytes"].as_u64()).sum();
    let buckets = s["buckets"].as_array().expect("per-bucket rows");
    assert!(buckets.len() >= 2, "lm's gradients fill several buckets");
    let bucket_bytes: u64 = buckets.iter().filter_map(|b| b["bytes"].as_u64()).sum();
    assert_eq!(bucket_bytes, param_bytes);
    let bucket_params: u64 = buckets.iter().filter_map(|b| b["params"].as_u64()).sum();
    assert_eq!(bucket_params, params.len() as u64);

    // The advice in the summary is the one `advise` gives (which adds the
    // schema_version that the summary's JSON carries at its top level).
    let mut advice = json_of(&["advise"], &run);
    assert_eq!(advice["schema_version"], v["schema_version"]);
    advice.as_object_mut().unwrap().remove("schema_version");
    assert_eq!(v["advice"], advice);
    // The start-up calibration gives the cost model every size it needs.
    assert_eq!(advice["missing"], serde_json::json!([]), "{advice}");
    assert_reasoned(&advice);
    let stated = json_of(
        &["advise", "--latency", "50us", "--bandwidth", "1GB/s"],
        &run,
    );
    assert_eq!(stated["missing"], serde_json::json!([]), "{stated}");
    assert_reasoned(&stated);
}

/// The calibration spans of a trace file: `(name, bytes)`.
fn calibration_spans(trace: &Path) -> Vec<(String, u64)> {
    std::fs::read_to_string(trace)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| {
            v["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("calibration"))
        })
        .map(|v| {
            (
                v["name"].as_str().unwrap().to_owned(),
                v["bytes"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

#[test]
fn a_one_bucket_run_is_advised_from_its_start_up_calibration() {
    let _lock = job_lock();
    let dir = tempfile::tempdir().unwrap();
    let run_lm = |out: &str, extra: &[&str]| {
        let mut cmd = Command::new(ddp_probe_bin());
        cmd.current_dir(dir.path())
            .args(["run", "--nproc-per-node", "2", "--out", out])
            .args(extra)
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_lm"))
            // lm's default model has about 3 MiB of gradients: one 25 MiB bucket.
            .args(["--steps", "12", "--bucket-cap-mb", "25"])
            .env_remove("DDP_PROBE_FAULT");
        let done = run_bounded(
            cmd,
            &dir.path().join(format!("{out}.log")),
            Duration::from_secs(300),
        );
        assert!(done.status.success(), "{}", done.output);
        dir.path().join(out)
    };
    let run = run_lm("calibrated", &[]);
    let v = json_of(&["summary"], &run);
    let buckets = v["summary"]["buckets"].as_array().expect("bucket rows");
    assert_eq!(buckets.len(), 1, "one bucket: {buckets:?}");
    // Every rank swept the same sizes, from 4 KiB up to the gradients' size.
    let header = std::fs::read_to_string(run.join("traces/rank-0.jsonl")).unwrap();
    let header: Value = serde_json::from_str(header.lines().next().unwrap()).unwrap();
    let gradient_bytes: u64 = header["ddp"]["params"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["bytes"].as_u64())
        .sum();
    let sweep = |rank: u32| -> Vec<u64> {
        let mut sizes: Vec<u64> = calibration_spans(&run.join(format!("traces/rank-{rank}.jsonl")))
            .into_iter()
            .filter(|(n, _)| n == "calibration")
            .map(|(_, b)| b)
            .collect();
        sizes.dedup();
        sizes
    };
    let sizes = sweep(0);
    assert_eq!(sizes, sweep(1));
    assert!(sizes.len() >= 4, "{sizes:?}");
    assert_eq!(sizes[0], 4096);
    assert!(sizes.windows(2).all(|w| w[0] < w[1]), "{sizes:?}");
    assert!(*sizes.last().unwrap() <= gradient_bytes + 4, "{sizes:?}");

    // The interference probe: each round's matrix products last until its all-reduce has
    // completed (a product later; 5 ms of slack for a loaded machine), and the same number
    // then runs alone.
    let trace = std::fs::read_to_string(run.join("traces/rank-0.jsonl")).unwrap();
    let ends = |name: &str, kind: &str| -> Vec<u64> {
        trace
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["name"] == name && v["kind"] == kind)
            .map(|v| v["end"].as_u64().unwrap())
            .collect()
    };
    let compute_ends = ends("calibration compute overlapped", "user");
    let call_ends = ends("calibration overlapped", "collective");
    assert!(!compute_ends.is_empty(), "the interference probe ran");
    assert_eq!(compute_ends.len(), call_ends.len());
    assert_eq!(
        ends("calibration compute", "user").len(),
        compute_ends.len()
    );
    for (&compute_end, &call_end) in compute_ends.iter().zip(&call_ends) {
        assert!(
            compute_end + 5_000_000 >= call_end,
            "compute ended {} ms before its collective",
            (call_end - compute_end) as f64 / 1e6
        );
    }

    // One bucket size of its own, yet a calibrated cost model, a replay close to the
    // measured step, and a recommendation with its reasoning.
    let advice = json_of(&["advise"], &run);
    assert_eq!(advice["missing"], serde_json::json!([]), "{advice}");
    let used = advice["fit_used"].as_u64().expect("a cost model") as usize;
    assert_eq!(advice["fits"][used]["calibrated"], true, "{advice}");
    assert!(advice["fits"][used]["table"].as_array().unwrap().len() >= 4);
    let replay = &advice["replay"];
    let (p, m) = (
        replay["predicted_step_ns"].as_f64().unwrap(),
        replay["measured_step_ns"].as_f64().unwrap(),
    );
    assert!(
        (p - m).abs() <= 0.25 * m,
        "replay {p} against {m}: {replay}"
    );
    assert_reasoned(&advice);

    // The simulated schedules beside the recorded ranks: the one bucket replayed, at the
    // first steady step.
    let out = Command::new(ddp_probe_bin())
        .args(["export", "chrome", "--what-if", "-o", "-"])
        .arg(&run)
        .output()
        .expect("ddp-probe export runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let chrome: Value = serde_json::from_slice(&out.stdout).expect("Chrome JSON");
    let events = chrome["traceEvents"].as_array().unwrap();
    let names: Vec<&str> = events
        .iter()
        .filter(|e| e["name"] == "process_name")
        .filter_map(|e| e["args"]["name"].as_str())
        .collect();
    assert!(
        names.contains(&"what-if: recorded layout (replayed)"),
        "{names:?}"
    );
    let simulated = |name: &str| {
        events
            .iter()
            .filter(|e| e["cat"] == "what-if" && e["name"] == name)
            .count()
    };
    assert!(simulated("backward") >= 1);
    assert!(simulated("all_reduce") >= 1);

    // Without the calibration the run's one bucket size fits no cost model.
    let plain = run_lm("plain", &["--no-calibrate"]);
    assert!(calibration_spans(&plain.join("traces/rank-0.jsonl")).is_empty());
    let advice = json_of(&["advise"], &plain);
    let missing = advice["missing"].to_string();
    assert!(missing.contains("same size"), "{missing}");
}
