//! What the end-to-end tests with real PyTorch share: the repository root
//! and the project's venv Python (made by `scripts/setup`, which
//! `scripts/test` runs first).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The venv's Python, which must exist and import torch: without it a test
/// fails saying what to run (a missing input is not a pass).
pub fn venv_python() -> PathBuf {
    let py = repo().join(".venv/bin/python");
    assert!(
        py.is_file(),
        "{} is absent: run scripts/setup to create the venv with torch",
        py.display()
    );
    let ok = Command::new(&py)
        .args(["-c", "import torch, torch.distributed"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "{} cannot import torch: run scripts/setup",
        py.display()
    );
    py
}

/// What gloo's teardown prints when it aborts a rank (a joinable thread destroyed at exit).
pub const GLOO_TEARDOWN_ABORT: &str = "terminate called without an active exception";

/// Runs a job with `run`; when `aborted_after_training` says gloo's teardown aborted a rank
/// after the training had finished, runs it again into a fresh `run_dir` (at most
/// [`TEARDOWN_ATTEMPTS`] runs in all) and says so. That abort is an upstream teardown race
/// during the interpreter's finalization, not what these tests are about: train_ddp.py under
/// plain torchrun met it in 3 runs of 80 on this project's machine (2026-12-02), and CI met it
/// twice in a row once. Any other failure is left to the test.
pub fn run_again_after_teardown_abort<T>(
    run: impl FnMut() -> T,
    aborted_after_training: impl Fn(&T) -> bool,
    run_dir: &Path,
) -> T {
    run_again_if_aborted_in_teardown(run, aborted_after_training, || {
        std::fs::remove_dir_all(run_dir).expect("remove the run directory")
    })
}

/// How many runs [`run_again_after_teardown_abort`] makes at most.
pub const TEARDOWN_ATTEMPTS: usize = 3;

/// [`run_again_after_teardown_abort`] for a job that leaves no run directory (plain
/// torchrun): `before_again` clears what an aborted run left.
pub fn run_again_if_aborted_in_teardown<T>(
    mut run: impl FnMut() -> T,
    aborted_after_training: impl Fn(&T) -> bool,
    mut before_again: impl FnMut(),
) -> T {
    let mut out = run();
    for _ in 1..TEARDOWN_ATTEMPTS {
        if !aborted_after_training(&out) {
            break;
        }
        eprintln!(
            "note: gloo aborted a rank in its teardown after training finished; running again"
        );
        before_again();
        out = run();
    }
    out
}

/// The 1-based number of the first line of `text` that contains `marker` (a script's line that
/// `explain` names); panics saying which marker is missing.
#[allow(dead_code)] // not every test binary that shares this module uses it
pub fn line_of(text: &str, marker: &str) -> usize {
    text.lines()
        .position(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("no line contains {marker:?}"))
        + 1
}

/// `ddp-probe explain --json` of a run directory or a log.
#[allow(dead_code)] // not every test binary that shares this module uses it
pub fn explain_json(input: &Path) -> serde_json::Value {
    let report = Command::new(env!("CARGO_BIN_EXE_ddp-probe"))
        .args(["explain", "--json"])
        .arg(input)
        .output()
        .expect("run ddp-probe explain");
    serde_json::from_slice(&report.stdout).expect("explain --json prints JSON")
}
