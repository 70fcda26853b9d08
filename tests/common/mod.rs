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
/// after the training had finished, runs it once more into a fresh `run_dir` and says so.
/// That abort came once in CI on 2026-12-02 (after the scripts' barrier and
/// `destroy_process_group`, never in 11 reruns): an upstream teardown race, not what these
/// tests are about; any other failure is left to the test.
pub fn run_again_after_teardown_abort<T>(
    run: impl FnMut() -> T,
    aborted_after_training: impl Fn(&T) -> bool,
    run_dir: &Path,
) -> T {
    run_again_if_aborted_in_teardown(run, aborted_after_training, || {
        std::fs::remove_dir_all(run_dir).expect("remove the run directory")
    })
}

/// [`run_again_after_teardown_abort`] for a job that leaves no run directory (plain
/// torchrun): `before_again` clears what the first run left.
pub fn run_again_if_aborted_in_teardown<T>(
    mut run: impl FnMut() -> T,
    aborted_after_training: impl Fn(&T) -> bool,
    before_again: impl FnOnce(),
) -> T {
    let first = run();
    if !aborted_after_training(&first) {
        return first;
    }
    eprintln!("note: gloo aborted a rank in its teardown after training finished; running again");
    before_again();
    run()
}
