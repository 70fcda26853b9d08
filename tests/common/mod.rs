//! What the end-to-end tests with real PyTorch share: the repository root
//! and the project's venv Python (made by `scripts/setup`, which
//! `scripts/test` runs first).

use std::path::PathBuf;
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
