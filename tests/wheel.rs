//! The wheel, as a PyTorch user gets it: `scripts/wheel` builds it (maturin,
//! the CLI plus the `ddp_probe_torch` module), it is installed into a fresh
//! virtual environment that sees the project's torch, and then
//!
//! * that environment's `ddp-probe run --auto-instrument` trains PyTorch's DDP example
//!   (`examples/python/train_ddp.py`, 2 gloo ranks) and records spans: the module's runner
//!   (`python -m ddp_probe_torch.auto`) and the module both come from the wheel, and the
//!   script's own line is then a no-op;
//! * plain torchrun runs the same script: `import ddp_probe_torch` works
//!   (the module comes from the wheel) and each rank says once that it is not
//!   recording.
//!
//! Needs the project's venv (`scripts/setup`: torch and maturin); CI has it.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{
    repo, run_again_after_teardown_abort, run_again_if_aborted_in_teardown, venv_python,
    GLOO_TEARDOWN_ABORT,
};

/// Whether `out` is a job whose training finished (train_ddp.py's last line) and that gloo's
/// teardown then aborted (see [`common::run_again_after_teardown_abort`]).
fn aborted_after_training(out: &Output, stdout_of_rank0: &str) -> bool {
    !out.status.success()
        && stdout_of_rank0.contains("pytorch buckets:")
        && (String::from_utf8_lossy(&out.stderr).contains(GLOO_TEARDOWN_ABORT)
            || String::from_utf8_lossy(&out.stdout).contains(GLOO_TEARDOWN_ABORT))
}

fn check(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The project venv's site-packages (where torch is).
fn project_site_packages() -> PathBuf {
    let py = venv_python();
    let out = Command::new(&py)
        .args([
            "-c",
            "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))",
        ])
        .output()
        .unwrap();
    check(&out, "finding torch in the project's venv");
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

#[test]
fn the_wheel_installs_the_cli_and_the_module_for_pytorch_users() {
    let scratch = tempfile::tempdir().unwrap();
    let wheel = Command::new(repo().join("scripts/wheel"))
        .arg(scratch.path().join("wheels"))
        .output()
        .unwrap();
    check(&wheel, "scripts/wheel");
    let wheel = PathBuf::from(String::from_utf8_lossy(&wheel.stdout).trim());
    assert!(wheel.is_file(), "{}", wheel.display());

    // A fresh environment with the project's torch made visible (a .pth line).
    let venv = scratch.path().join("venv");
    let made = Command::new(repo().join(".venv/bin/python"))
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .output()
        .unwrap();
    check(&made, "python -m venv");
    let py = venv.join("bin/python");
    let site = Command::new(&py)
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ])
        .output()
        .unwrap();
    check(&site, "the new venv's site-packages");
    let site = PathBuf::from(String::from_utf8_lossy(&site.stdout).trim());
    std::fs::write(
        site.join("project_torch.pth"),
        format!("{}\n", project_site_packages().display()),
    )
    .unwrap();
    // pip of the project's venv installs into the new one (--target would skip the script).
    let installed = Command::new(repo().join(".venv/bin/python"))
        .args([
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "--quiet",
            "--prefix",
        ])
        .arg(&venv)
        .arg(&wheel)
        .output()
        .unwrap();
    check(&installed, "pip install the wheel");
    let cli = venv.join("bin/ddp-probe");
    assert!(
        cli.is_file(),
        "the wheel put no ddp-probe into {}",
        venv.join("bin").display()
    );

    let script = repo().join("examples/python/train_ddp.py");
    let work = scratch.path().join("work");
    std::fs::create_dir(&work).unwrap();
    // The environment's own ddp-probe, with nothing of the source tree: the module must come
    // from the wheel.
    let run_dir = work.join("run");
    let run = run_again_after_teardown_abort(
        || {
            Command::new(&cli)
                .args([
                    "run",
                    "--nproc_per_node",
                    "2",
                    "--auto-instrument",
                    "-o",
                    "run",
                ])
                .arg(&script)
                .args(["--steps", "4"])
                .current_dir(&work)
                // Not activated: the script runs under the environment's own python3, the
                // one beside its ddp-probe (as torchrun runs its own sys.executable), not the
                // python3 on PATH.
                .env_remove("DDP_PROBE_PYTHON")
                .env("DDP_PROBE_PYTHON_DIR", scratch.path().join("nowhere"))
                .env("PATH", "/usr/bin:/bin")
                .output()
                .unwrap()
        },
        |out| {
            let rank0 = std::fs::read_to_string(run_dir.join("logs/rank-0.stdout"));
            aborted_after_training(out, &rank0.unwrap_or_default())
        },
        &run_dir,
    );
    check(&run, "ddp-probe run from the wheel");
    let trace = std::fs::read_to_string(work.join("run/traces/rank-1.jsonl")).unwrap();
    let spans = trace
        .lines()
        .filter(|l| l.contains("\"type\":\"span\""))
        .count();
    assert!(spans > 10, "rank 1 recorded {spans} spans:\n{trace}");

    // Plain torchrun, the module from the wheel: it trains and says it does not record.
    // (torchrun prints every rank's output; the training's last line is rank 0's.)
    let plain = run_again_if_aborted_in_teardown(
        || {
            Command::new(&py)
                .args([
                    "-m",
                    "torch.distributed.run",
                    "--nproc_per_node",
                    "2",
                    "--master_port",
                    "29671",
                ])
                .arg(&script)
                .args(["--steps", "2"])
                .current_dir(&work)
                .output()
                .unwrap()
        },
        |out| aborted_after_training(out, &String::from_utf8_lossy(&out.stdout)),
        || {},
    );
    check(&plain, "torchrun with the module installed");
    let err = String::from_utf8_lossy(&plain.stderr);
    let said = err.matches("not recording").count();
    assert_eq!(said, 2, "once per rank:\n{err}");
    assert!(!Path::new(&work.join("traces")).exists());
}
