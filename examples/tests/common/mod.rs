//! Helpers of the end-to-end fault tests: the `ddp-probe` and `train` binaries, jobs run
//! through `ddp-probe run` with an upper bound on their wall time, `ddp-probe explain --json`,
//! and bit-exact comparison of checkpoints.
//!
//! `train` is this package's binary (`CARGO_BIN_EXE_train`). `ddp-probe` belongs to the root
//! package, whose binaries Cargo does not build for this package's tests: it is taken from
//! `DDP_PROBE_BIN` when set, else built here once with the same `cargo` into the same target
//! directory and profile as this test (`cargo build -p ddp-probe --bin ddp-probe`), which is
//! quick when it is up to date and keeps a clean clone working.

#![allow(dead_code)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use ddp::checkpoint::Checkpoint;
use serde_json::Value;
use tch::Kind;

/// The `train` example.
pub fn train_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_train"))
}

/// The `ddp-probe` binary (see the module doc).
pub fn ddp_probe_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(bin) = std::env::var_os("DDP_PROBE_BIN") {
            return PathBuf::from(bin);
        }
        // The test runs as <target>/<profile>/deps/<name>-<hash>.
        let exe = std::env::current_exe().expect("the test knows its own path");
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("the test binary lies in <target>/<profile>/deps");
        let target_dir = profile_dir
            .parent()
            .expect("the profile folder lies in the target folder");
        let profile = profile_dir
            .file_name()
            .and_then(|n| n.to_str())
            .expect("the profile folder has a name");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "--quiet", "-p", "ddp-probe", "--bin", "ddp-probe"])
            .arg("--manifest-path")
            .arg(&manifest)
            .arg("--target-dir")
            .arg(target_dir);
        match profile {
            "debug" => {}
            "release" => {
                cmd.arg("--release");
            }
            other => {
                cmd.args(["--profile", other]);
            }
        }
        let status = cmd.status().expect("cargo runs");
        assert!(status.success(), "building ddp-probe failed: {status}");
        let bin = profile_dir.join(format!("ddp-probe{}", std::env::consts::EXE_SUFFIX));
        assert!(bin.is_file(), "{} was not built", bin.display());
        bin
    })
    .clone()
}

/// Serialises the jobs of one test binary: two 2-rank jobs at once on a small CI machine would
/// only make the hang and timeout bounds tighter.
pub fn job_lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a finished `ddp-probe` invocation left.
#[derive(Debug)]
pub struct Finished {
    /// Its exit status.
    pub status: ExitStatus,
    /// Its standard output and error, together.
    pub output: String,
}

/// Spawns `cmd` with its output in `log`, waits at most `limit`; past that it is stopped
/// ([`stop`]) and the test fails: the bound keeps CI from hanging, it measures nothing.
pub fn run_bounded(mut cmd: Command, log: &Path, limit: Duration) -> Finished {
    let out = File::create(log).expect("the log file can be created");
    let err = out.try_clone().expect("the log file can be shared");
    cmd.stdin(Stdio::null()).stdout(out).stderr(err);
    let mut child = cmd.spawn().expect("the command starts");
    let status = wait_bounded(&mut child, limit, log);
    Finished {
        status,
        output: std::fs::read_to_string(log).unwrap_or_default(),
    }
}

/// Waits for `child` at most `limit`, killing it and failing the test past that.
pub fn wait_bounded(child: &mut Child, limit: Duration, log: &Path) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("waiting works") {
            return status;
        }
        if Instant::now() >= deadline {
            stop(child);
            panic!(
                "the command ran past its bound of {limit:?}; its output:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Stops `child`: SIGTERM first (`ddp-probe run` then stops its ranks, which run in their own
/// process groups), SIGKILL after 3 s.
pub fn stop(child: &mut Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// `ddp-probe run --nproc-per-node 2 --out <run> [extra...] -- train [train_args...]` with
/// `env` added, in `cwd`, bounded by `limit`.
pub fn run_train(
    cwd: &Path,
    run: &str,
    env: &[(&str, &str)],
    extra: &[&str],
    train_args: &[&str],
    limit: Duration,
) -> Finished {
    let cmd = train_command(cwd, run, env, extra, train_args);
    run_bounded(cmd, &cwd.join(format!("{run}.log")), limit)
}

/// The command [`run_train`] runs.
pub fn train_command(
    cwd: &Path,
    run: &str,
    env: &[(&str, &str)],
    extra: &[&str],
    train_args: &[&str],
) -> Command {
    let mut cmd = Command::new(ddp_probe_bin());
    cmd.current_dir(cwd)
        .args([
            "run",
            "--nproc-per-node",
            "2",
            "--grace",
            "1",
            "--console",
            "all",
        ])
        .args(["--out", run])
        .args(extra)
        .arg("--")
        .arg(train_bin())
        .args(train_args)
        .env_remove("DDP_PROBE_FAULT");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// `cmd` run inside `ulimit -n <files>` (soft and hard limit: it cannot raise it, and its
/// children inherit it), with the same arguments, environment and folder.
pub fn under_open_file_limit(cmd: &Command, files: u32) -> Command {
    let mut wrapped = Command::new("sh");
    wrapped
        .arg("-c")
        .arg(format!("ulimit -n {files} && exec \"$0\" \"$@\""))
        .arg(cmd.get_program())
        .args(cmd.get_args());
    if let Some(dir) = cmd.get_current_dir() {
        wrapped.current_dir(dir);
    }
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => wrapped.env(k, v),
            None => wrapped.env_remove(k),
        };
    }
    wrapped
}

/// One finding of `ddp-probe explain --json`: its category and ranks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The category id (`rank_crashed`, `collective_timeout`, ...).
    pub category: String,
    /// The ranks it names.
    pub ranks: Vec<u64>,
    /// The whole finding as JSON text, to look for what it says.
    pub json: String,
}

/// `ddp-probe ARGS...` in `cwd`, which must succeed: its standard output.
pub fn ddp_probe_ok(cwd: &Path, args: &[&std::ffi::OsStr]) -> Vec<u8> {
    let out = Command::new(ddp_probe_bin())
        .current_dir(cwd)
        .args(args)
        .output()
        .expect("ddp-probe runs");
    assert!(
        out.status.success(),
        "ddp-probe {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `ddp-probe export chrome [EXTRA...] -o - RUN` as JSON.
pub fn chrome_export(run: &Path, extra: &[&str]) -> Value {
    let mut args: Vec<&std::ffi::OsStr> = vec!["export".as_ref(), "chrome".as_ref()];
    args.extend(extra.iter().map(std::ffi::OsStr::new));
    args.extend(["-o".as_ref(), "-".as_ref(), run.as_os_str()]);
    serde_json::from_slice(&ddp_probe_ok(Path::new("."), &args)).expect("Chrome trace JSON")
}

/// `ddp-probe explain --json` over `inputs` (run directories), in `cwd`: the findings, most
/// likely first.
pub fn explain(cwd: &Path, inputs: &[&Path]) -> Vec<Finding> {
    let out = Command::new(ddp_probe_bin())
        .current_dir(cwd)
        .args(["explain", "--json"])
        .args(inputs)
        .output()
        .expect("ddp-probe explain runs");
    assert!(
        out.status.success(),
        "explain failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("explain --json prints JSON");
    report["findings"]
        .as_array()
        .map(|fs| {
            fs.iter()
                .map(|f| Finding {
                    category: f["category"].as_str().unwrap_or_default().to_owned(),
                    ranks: f["ranks"]
                        .as_array()
                        .map(|r| r.iter().filter_map(Value::as_u64).collect())
                        .unwrap_or_default(),
                    json: f.to_string(),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The entries of a checkpoint as (name, kind, shape, raw bytes), by name: equal lists mean
/// bit-for-bit equal checkpoints.
pub fn checkpoint_bits(path: &Path) -> Vec<(String, Kind, Vec<i64>, Vec<u8>)> {
    let ckpt = Checkpoint::load(path).expect("the checkpoint loads");
    let mut out: Vec<_> = ckpt
        .model
        .iter()
        .map(|(n, t)| (format!("model/{n}"), t))
        .chain(
            ckpt.optimizer
                .iter()
                .map(|(n, t)| (format!("optim/{n}"), t)),
        )
        .map(|(name, t)| {
            let t = t.contiguous();
            let mut raw = vec![0u8; t.numel() * t.kind().elt_size_in_bytes()];
            t.f_copy_data_u8(&mut raw, t.numel())
                .expect("the bytes can be copied out");
            (name, t.kind(), t.size(), raw)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}
