//! End-to-end tests of `ddp-probe report`, `scale` and `tune`: the files they write, their
//! output, and the errors a user gets.

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
fn help_lists_report_scale_and_tune() {
    let dir = tempfile::tempdir().unwrap();
    let help = text(&ddp_probe(&["--help"], dir.path()).stdout);
    for needle in ["report", "scale", "tune"] {
        assert!(help.contains(needle), "{help}");
    }
    let help = text(&ddp_probe(&["tune", "--help"], dir.path()).stdout);
    for needle in [
        "--bucket-cap-mb",
        "--auto",
        "--repeats",
        "--steps",
        "--json",
        "1,5,10,25,50",
    ] {
        assert!(
            help.contains(needle),
            "`tune --help` lacks {needle}:\n{help}"
        );
    }
    let help = text(&ddp_probe(&["scale", "--help"], dir.path()).stdout);
    assert!(
        help.contains("--nproc") && help.contains("runs/scale-<time>"),
        "{help}"
    );
}

#[test]
fn report_writes_one_html_file() {
    let dir = tempfile::tempdir().unwrap();
    generate_run(&SynthConfig::new(2, 12, 2), &dir.path().join("r")).unwrap();
    let out = ddp_probe(
        &["report", "r", "-o", "out/r.html", "--title", "A <b> title"],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("wrote out/r.html (1 run"),
        "{}",
        text(&out.stderr)
    );
    let html = std::fs::read_to_string(dir.path().join("out/r.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<title>A &lt;b&gt; title</title>"));
    assert!(html.contains("<svg"));
}

#[test]
fn report_without_a_run_says_what_to_give() {
    let dir = tempfile::tempdir().unwrap();
    // Every command that reads a run says it once, with what to do.
    for command in ["report", "summary", "advise", "explain", "tui"] {
        let out = ddp_probe(&[command], dir.path());
        assert!(!out.status.success());
        let err = text(&out.stderr);
        assert!(err.contains("no run given"), "{command}: {err}");
        assert_eq!(err.matches("runs/latest").count(), 1, "{command}: {err}");
        assert_eq!(err.matches("ddp-probe run").count(), 1, "{command}: {err}");
    }
    let out = ddp_probe(&["report", "nowhere"], dir.path());
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("nowhere does not exist"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn bad_series_options_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = ddp_probe(
        &["tune", "--auto", "--bucket-cap-mb", "1", "--", "true"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let out = ddp_probe(&["scale", "--nproc", "0,2", "--", "true"], dir.path());
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("--nproc: 0 is out of range"),
        "{}",
        text(&out.stderr)
    );
    let out = ddp_probe(&["tune", "--repeats", "0", "--", "true"], dir.path());
    assert!(
        text(&out.stderr).contains("--repeats"),
        "{}",
        text(&out.stderr)
    );
    let out = ddp_probe(&["scale", "--", "true"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    // One rank all-reduces nothing: tune refuses it rather than tune for minutes.
    let out = ddp_probe(&["tune", "--nproc-per-node", "1", "--", "true"], dir.path());
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("give --nproc-per-node 2 or more"),
        "{}",
        text(&out.stderr)
    );
    assert!(!dir.path().join("runs").exists(), "nothing was run");
}

#[test]
fn tune_of_a_job_that_records_nothing_reports_why() {
    let dir = tempfile::tempdir().unwrap();
    let out = ddp_probe(
        &[
            "tune",
            "--nproc-per-node",
            "2",
            "--bucket-cap-mb",
            "1,2",
            "--repeats",
            "1",
            "--dir",
            "t",
            "--json",
            "--",
            "true",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert!(v["recommendation"].is_null());
    assert_eq!(v["candidates"].as_array().unwrap().len(), 2);
    assert!(text(&out.stderr).contains("no cap could be measured"));
    assert!(dir.path().join("t/report.html").is_file());
    assert!(dir.path().join("t/tune.json").is_file());
    assert!(dir.path().join("t/cap-2-r1/manifest.json").is_file());
    // The folder can be reported again, tuning section included.
    let out = ddp_probe(&["report", "t", "-o", "again.html"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(dir.path().join("again.html")).unwrap();
    assert!(html.contains("id=\"tune\""));
}
