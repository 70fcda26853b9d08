//! End-to-end tests of the `ddp-probe` binary: help texts, `export chrome` on a generated run,
//! and the errors a user gets for bad input.

use std::path::Path;
use std::process::{Command, Output};

use probe::synth::{generate_run, SynthConfig};
use serde_json::Value;

fn ddp_probe(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ddp-probe"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("the ddp-probe binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn help_lists_every_command_with_examples() {
    let dir = tempfile::tempdir().unwrap();
    let out = ddp_probe(&["--help"], dir.path());
    assert!(out.status.success());
    let help = text(&out.stdout);
    for needle in ["run", "export", "Examples:", "runs/latest"] {
        assert!(
            help.contains(needle),
            "`ddp-probe --help` lacks {needle:?}:\n{help}"
        );
    }
    let out = ddp_probe(&["run", "--help"], dir.path());
    let help = text(&out.stdout);
    for needle in [
        "--nproc-per-node",
        "--hang-timeout",
        "--rdzv-endpoint",
        "MASTER_ADDR",
    ] {
        assert!(
            help.contains(needle),
            "`ddp-probe run --help` lacks {needle:?}:\n{help}"
        );
    }
}

#[test]
fn export_chrome_writes_one_process_per_rank_with_microsecond_events() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    let summary = generate_run(&SynthConfig::new(3, 4, 2), &run_dir).unwrap();
    let out = ddp_probe(&["export", "chrome", "run", "-o", "trace.json"], dir.path());
    assert!(out.status.success(), "export failed: {}", text(&out.stderr));

    let json: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("trace.json")).unwrap()).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    let complete: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(
        complete.len() as u64,
        summary.spans,
        "every span becomes one complete event"
    );
    let mut pids: Vec<u64> = complete
        .iter()
        .map(|e| e["pid"].as_u64().unwrap())
        .collect();
    pids.sort_unstable();
    pids.dedup();
    assert_eq!(pids, [0, 1, 2], "one process per rank");
    let names: Vec<&str> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "process_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 3);
    assert!(names.iter().all(|n| n.starts_with("rank ")), "{names:?}");
    for e in &complete {
        let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
        assert!(ts >= 0.0 && dur >= 0.0, "{e}");
        // The synthetic steps last tens of milliseconds: in microseconds that is well under 1e6.
        assert!(dur < 1.0e6, "dur is not in microseconds: {e}");
    }
}

#[test]
fn export_chrome_of_a_missing_run_says_what_to_pass() {
    let dir = tempfile::tempdir().unwrap();
    let out = ddp_probe(
        &["export", "chrome", "no-such-run", "-o", "t.json"],
        dir.path(),
    );
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("no-such-run") && err.contains("run directory"),
        "{err}"
    );
    let out = ddp_probe(&["export", "chrome", "-o", "t.json"], dir.path());
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("ddp-probe run"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn run_reports_the_failing_rank_and_propagates_its_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let out = ddp_probe(
        &[
            "run",
            "--nproc-per-node",
            "2",
            "--grace",
            "1",
            "--",
            "sh",
            "-c",
            "[ \"$RANK\" = 1 ] && exit 3; sleep 30",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(3), "stderr: {}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("rank 1") && err.contains("code 3"), "{err}");
    assert!(dir.path().join("runs/latest/manifest.json").is_file());
}

/// Runs a 2-rank job of `script` (sh) through `ddp-probe run`, then `ddp-probe explain --json`
/// on it; returns the exit code of the run and the first finding's (category, ranks).
fn run_then_explain(dir: &Path, script: &str, extra: &[&str]) -> (Option<i32>, String, Vec<u64>) {
    let mut args = vec![
        "run",
        "--nproc-per-node",
        "2",
        "--grace",
        "1",
        "--console",
        "quiet",
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", "sh", "-c", script]);
    let run = ddp_probe(&args, dir);
    let explain = ddp_probe(&["explain", "--json"], dir);
    assert!(
        explain.status.success(),
        "explain failed: {}",
        text(&explain.stderr)
    );
    let report: Value = serde_json::from_slice(&explain.stdout).unwrap();
    let first = &report["findings"][0];
    let category = first["category"].as_str().unwrap_or_default().to_owned();
    let ranks = first["ranks"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default();
    (run.status.code(), category, ranks)
}

#[test]
fn explain_names_the_cause_of_each_launcher_failure() {
    // A rank that exits with an error after printing a Python-style traceback.
    let dir = tempfile::tempdir().unwrap();
    let (code, category, ranks) = run_then_explain(
        dir.path(),
        "if [ \"$RANK\" = 1 ]; then echo 'Traceback (most recent call last):' >&2; \
         echo '  File \"train.py\", line 3, in <module>' >&2; \
         echo 'ValueError: bad batch' >&2; exit 3; fi; sleep 30",
        &[],
    );
    assert_eq!(code, Some(3));
    assert_eq!((category.as_str(), ranks), ("rank_crashed", vec![1]));

    // A rank killed by SIGKILL with no word of its own: the host's OOM killer is the usual cause.
    let dir = tempfile::tempdir().unwrap();
    let (code, category, ranks) = run_then_explain(
        dir.path(),
        "if [ \"$RANK\" = 1 ]; then kill -9 $$; fi; sleep 30",
        &[],
    );
    assert_eq!(code, Some(137));
    assert_eq!((category.as_str(), ranks), ("host_oom_killed", vec![1]));

    // A hang: rank 0 queued all_reduce seq 5 and waits; rank 1 never gets there.
    let dir = tempfile::tempdir().unwrap();
    let trace = "mkdir -p \"$DDP_PROBE_TRACE_DIR\"; f=\"$DDP_PROBE_TRACE_DIR/rank-$RANK.jsonl\"; \
        echo '{\"type\":\"header\",\"format\":\"ddp-probe-trace\",\"version\":\"1.0\",\"run_id\":\"'$DDP_PROBE_RUN_ID'\",\"rank\":'$RANK',\"world_size\":2,\"start_ns\":1000}' > $f; \
        echo '{\"type\":\"span\",\"kind\":\"collective\",\"op\":\"all_reduce\",\"step\":0,\"start\":2000,\"end\":3000,\"seq\":4}' >> $f; \
        if [ \"$RANK\" = 0 ]; then echo '{\"type\":\"instant\",\"name\":\"collective_queued\",\"t\":4000,\"step\":1,\"args\":{\"seq\":5,\"op\":\"all_reduce\",\"bucket\":0,\"bytes\":64}}' >> $f; fi; \
        sleep 60";
    let (code, category, ranks) = run_then_explain(dir.path(), trace, &["--hang-timeout", "1"]);
    assert_eq!(code, Some(124));
    assert_eq!(category, "collective_timeout");
    assert_eq!(ranks, vec![1], "the rank behind is named");
}
