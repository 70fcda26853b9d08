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
