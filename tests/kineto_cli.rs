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
