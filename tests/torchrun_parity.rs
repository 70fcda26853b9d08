//! `ddp-probe run` against torchrun itself (the project venv's, torch 2.13):
//! the same Python script, started with torchrun's own spellings
//! (`--nproc_per_node`, `--master_port`, a bare `script.py ARGS`), gets the
//! same torchrun variables with the same values, prints the same output, and
//! a failing rank gives the same exit status.
//!
//! Needs the project's venv (`<repo>/.venv/bin/torchrun`, made by
//! `scripts/setup`); CI has it. Without it the test fails and says so.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The venv's bin folder, with torchrun in it.
fn venv_bin() -> PathBuf {
    let bin = repo().join(".venv/bin");
    assert!(
        bin.join("torchrun").is_file(),
        "{} has no torchrun: run scripts/setup (it installs torch into the project's venv)",
        bin.display()
    );
    bin
}

/// Prints, per rank, the torchrun variables it got and its arguments, one
/// JSON object per line, and exits with FAIL_CODE on rank FAIL_RANK.
const SCRIPT: &str = r#"
import json, os, sys
keys = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
        "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME", "MASTER_ADDR",
        "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS",
        "TORCHELASTIC_USE_AGENT_STORE", "OMP_NUM_THREADS"]
print(json.dumps({"rank": os.environ["RANK"], "argv": sys.argv[1:],
                  "env": {k: os.environ.get(k) for k in keys}}), flush=True)
if os.environ.get("FAIL_RANK") == os.environ["RANK"]:
    sys.exit(int(os.environ.get("FAIL_CODE", "3")))
"#;

fn run(program: &Path, args: &[&str], dir: &Path, fail: bool) -> Output {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(dir)
        .env("DDP_PROBE_PYTHON", venv_bin().join("python"))
        .env_remove("OMP_NUM_THREADS");
    if fail {
        cmd.env("FAIL_RANK", "1").env("FAIL_CODE", "3");
    }
    cmd.output().unwrap()
}

/// Each rank's JSON line, by rank.
/// Each rank's JSON line, by rank. Under torchrun the ranks share one stdout: each object is one
/// write (atomic on a pipe), but an unbuffered Python writes its newline separately, so two
/// ranks printing at once can give `{..}{..}` on one line; every object of a line is read.
fn per_rank(stdout: &[u8]) -> BTreeMap<String, serde_json::Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| l.find('{').map(|i| l[i..].to_owned()))
        .flat_map(|json| {
            // ddp-probe prefixes rank output with "[rank N] " on the console.
            serde_json::Deserializer::from_str(&json)
                .into_iter::<serde_json::Value>()
                .map_while(Result::ok)
                .collect::<Vec<_>>()
        })
        .map(|v| (v["rank"].as_str().unwrap_or_default().to_owned(), v))
        .collect()
}

#[test]
fn the_same_script_sees_the_same_environment_under_torchrun_and_ddp_probe() {
    let bin = venv_bin();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("show_env.py"), SCRIPT).unwrap();
    let torchrun = bin.join("torchrun");
    let ddp_probe = PathBuf::from(env!("CARGO_BIN_EXE_ddp-probe"));
    let args = |port: &'static str| {
        vec![
            "--nproc_per_node",
            "2",
            "--master_port",
            port,
            "show_env.py",
            "--lr",
            "0.1",
        ]
    };
    let theirs = run(&torchrun, &args("29651"), dir.path(), false);
    let mut ours_args = vec!["run", "--console", "all"];
    ours_args.extend(args("29652"));
    let ours = run(&ddp_probe, &ours_args, dir.path(), false);
    assert!(
        theirs.status.success(),
        "torchrun: {}",
        String::from_utf8_lossy(&theirs.stderr)
    );
    assert!(
        ours.status.success(),
        "ddp-probe: {}",
        String::from_utf8_lossy(&ours.stderr)
    );
    let (theirs_out, theirs) = (
        String::from_utf8_lossy(&theirs.stdout).into_owned(),
        per_rank(&theirs.stdout),
    );
    let ours = per_rank(&ours.stdout);
    assert_eq!(theirs.len(), 2, "torchrun printed:\n{theirs_out}");
    assert_eq!(ours.len(), 2, "{ours:?}");
    for (rank, t) in &theirs {
        let o = &ours[rank];
        assert_eq!(o["argv"], t["argv"], "rank {rank}'s arguments");
        for (key, value) in t["env"].as_object().unwrap() {
            let ours = &o["env"][key];
            if key == "MASTER_PORT" {
                // Each was given its own port.
                assert!(ours.is_string(), "MASTER_PORT unset on rank {rank}");
                continue;
            }
            if key == "TORCHELASTIC_USE_AGENT_STORE" {
                // The one deliberate difference: torchrun's agent hosts the TCPStore
                // ("True"); under ddp-probe rank 0 hosts it, as PyTorch does when the
                // variable is "False", so the launcher needs no PyTorch inside.
                assert_eq!(ours, "False", "rank {rank}");
                continue;
            }
            assert_eq!(
                ours, value,
                "{key} on rank {rank}: torchrun {value}, ddp-probe {ours}"
            );
        }
    }

    // A failing rank: the same exit status.
    let theirs = run(&torchrun, &args("29653"), dir.path(), true);
    let mut ours_args = vec!["run", "--console", "quiet", "--grace", "1"];
    ours_args.extend(args("29654"));
    let ours = run(&ddp_probe, &ours_args, dir.path(), true);
    assert_eq!(
        theirs.status.code(),
        Some(1),
        "torchrun exits 1 when a worker fails"
    );
    assert_eq!(
        ours.status.code(),
        Some(3),
        "ddp-probe exits with the failed rank's own status: {}",
        String::from_utf8_lossy(&ours.stderr)
    );
}
