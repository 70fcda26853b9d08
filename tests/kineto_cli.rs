//! `ddp-probe import kineto`, `ddp-probe breakdown` and `ddp-probe summary` on an imported run,
//! end to end through the binary, on real PyTorch gloo traces checked into the repository.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn ddp_probe(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ddp-probe"))
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("kineto/tests/data/kineto/gloo-2rank")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn kineto_import_then_summary_and_breakdown() {
    let dir = tempfile::tempdir().unwrap();
    let src = fixtures();
    let out = ddp_probe(
        &["import", "kineto", src.to_str().unwrap(), "-o", "run"],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("imported 2 ranks (world size 2)"),
        "{stdout}"
    );
    assert!(stdout.contains("4 steps"), "{stdout}");

    let out = ddp_probe(&["summary", "run", "--json"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(json["summary"].is_object());
    assert_eq!(
        json["gpu_time_breakdown_hta"]["ranks"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    let out = ddp_probe(&["summary", "run"], dir.path());
    let s = text(&out.stdout);
    assert!(s.contains("GPU time breakdown (HTA definitions)"), "{s}");
    assert!(s.contains("all_reduce"), "{s}");

    // advise says clearly what an imported trace lacks.
    let out = ddp_probe(&["advise", "run"], dir.path());
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("grad_ready"));

    let out = ddp_probe(&["breakdown", src.to_str().unwrap(), "--json"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["step_filter"], true);
    assert_eq!(json["ranks"][0]["steps_kept"], serde_json::json!([2, 3, 4]));

    // A second import into the same run is refused, clearly.
    let out = ddp_probe(
        &["import", "kineto", src.to_str().unwrap(), "-o", "run"],
        dir.path(),
    );
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("already holds traces"));

    // A file that is not a trace: a clear error, no panic.
    std::fs::write(dir.path().join("x.json"), b"[1, 2").unwrap();
    let out = ddp_probe(&["import", "kineto", "x.json", "-o", "r2"], dir.path());
    assert!(!out.status.success());
    let e = text(&out.stderr);
    assert!(e.contains("x.json") && !e.contains("panicked"), "{e}");
}

#[test]
fn help_lists_the_kineto_commands() {
    let dir = tempfile::tempdir().unwrap();
    let help = text(&ddp_probe(&["--help"], dir.path()).stdout);
    assert!(
        help.contains("import") && help.contains("breakdown"),
        "{help}"
    );
    let help = text(&ddp_probe(&["import", "kineto", "--help"], dir.path()).stdout);
    assert!(help.contains("distributedInfo"), "{help}");
}

/// A profiler trace of `events` plain events, the first with a name of `name_bytes` bytes.
fn synthetic_trace(events: usize, name_bytes: usize) -> String {
    let mut t = String::from(r#"{"distributedInfo":{"rank":0,"world_size":1},"traceEvents":["#);
    for i in 0..events {
        if i > 0 {
            t.push(',');
        }
        let name = if i == 0 {
            "n".repeat(name_bytes)
        } else {
            format!("op{i}")
        };
        t.push_str(&format!(
            r#"{{"ph":"X","cat":"cpu_op","name":"{name}","pid":1,"tid":1,"ts":{},"dur":1}}"#,
            1000 + i
        ));
    }
    t.push_str("]}");
    t
}

/// `import kineto` of `trace` with `var=limit` set: the error, or `None` when it imported.
fn import_with_budget(trace: &str, var: &str, limit: &str) -> Option<String> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("trace.json"), trace).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ddp-probe"))
        .args(["import", "kineto", "trace.json", "-o", "run"])
        .current_dir(dir.path())
        .env(var, limit)
        .output()
        .unwrap();
    (!out.status.success()).then(|| text(&out.stderr))
}

#[test]
fn every_budget_of_the_profiler_reader_stops_it_naming_its_variable() {
    // One event with a 100 KiB name, under a 64 KiB event budget (default 16 MiB: a 4 GB string
    // in a 4 MB gzip ran out of memory before).
    let long_name = synthetic_trace(3, 100 << 10);
    let e = import_with_budget(&long_name, "DDP_PROBE_MAX_EVENT_BYTES", "64K").unwrap();
    assert!(e.contains("more than 65536 bytes in one event"), "{e}");
    assert!(
        e.contains("DDP_PROBE_MAX_EVENT_BYTES=<larger number>"),
        "{e}"
    );
    assert_eq!(
        import_with_budget(&long_name, "DDP_PROBE_MAX_EVENT_BYTES", "1M"),
        None
    );
    // 5,000 events under a budget of 1,000 (default 20 million: 40 million events in a 14 MB
    // gzip passed 3 GiB before).
    let many = synthetic_trace(5000, 4);
    let e = import_with_budget(&many, "DDP_PROBE_MAX_EVENTS", "1000").unwrap();
    assert!(
        e.contains("more than 1000 events in the profiler trace"),
        "{e}"
    );
    assert!(e.contains("DDP_PROBE_MAX_EVENTS="), "{e}");
    assert_eq!(
        import_with_budget(&many, "DDP_PROBE_MAX_EVENTS", "5000"),
        None
    );
    // The whole trace (about 400 KB) under a 256 KiB budget.
    let e = import_with_budget(&many, "DDP_PROBE_MAX_TRACE_BYTES", "256K").unwrap();
    assert!(
        e.contains("bytes in the profiler trace (decompressed)"),
        "{e}"
    );
    assert!(e.contains("DDP_PROBE_MAX_TRACE_BYTES="), "{e}");
}
