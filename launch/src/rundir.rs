//! The run directory: its layout, its creation by the launcher, and finding
//! and reading it back for the other commands.
//!
//! ```text
//! runs/
//!   latest -> 20240501-120000-train        (replaced atomically by each run)
//!   20240501-120000-train/
//!     manifest.json                        (written at start, rewritten at the end)
//!     logs/rank-<R>.stdout, rank-<R>.stderr (complete raw output)
//!     logs/nccl-rank<R>.log                (NCCL_DEBUG_FILE, written by NCCL)
//!     logs/nccl_trace_rank_<R>             (PyTorch flight recorder dumps)
//!     logs/python-stack-rank-<R>.txt       (the training thread's Python stack, on a dump request)
//!     logs/processes-rank-<R>.txt          (the rank's process tree when the launcher stopped the run)
//!     logs/error-rank<R>.json              (torchelastic error file)
//!     traces/rank-<R>.jsonl                (written by the ranks' recorder)
//!     control/rank-<R>.listening           (a rank answers dump requests: python/ddp_probe_torch/__init__.py)
//!     control/dump-request                 (the launcher asks for dumps and stacks before a stop)
//!     control/rank-<R>.dumped              (the rank's answer: `ok PATH` or `error: WHY`)
//!     attempts/<N>/                        (--max-restarts: attempt N's manifest.json, logs/,
//!                                           traces/, control/, moved there
//!                                           before attempt N+1 starts)
//! ```
//!
//! Anything else the ranks write into the run directory (e.g. the example
//! trainer's `checkpoints/`) is shared by the attempts and stays where it is.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{LaunchError, RunDirError};
use crate::manifest::Manifest;
pub use probe_contract::manifest::read_manifest;

pub use probe_contract::run_dir::{
    module_notes, run_name, ATTEMPTS_DIR, CONTROL_DIR, DEFAULT_RUNS_ROOT, LATEST_LINK, LOGS_DIR,
    MANIFEST_FILE, TRACES_DIR,
};

/// The parts of a run directory that belong to one attempt of a run that
/// restarts its workers, moved to `attempts/<N>/` by [`keep_attempt`]
/// (what the ranks write elsewhere, e.g. checkpoints, is shared).
pub(crate) const ATTEMPT_PARTS: [&str; 3] = [LOGS_DIR, TRACES_DIR, CONTROL_DIR];

/// `attempts/<N>`, relative to the run directory: the files of the attempt
/// whose ranks saw `TORCHELASTIC_RESTART_COUNT=N`.
pub fn attempt_dir(restart_count: u32) -> String {
    format!("{ATTEMPTS_DIR}/{restart_count}")
}

/// `control/dump-request`, relative to the run directory: written before the launcher stops
/// the ranks (a hang, another rank's failure, an interrupt; the reason is its content) to ask
/// listening ranks for a flight-recorder dump and their Python stack.
pub fn dump_request() -> String {
    format!("{CONTROL_DIR}/dump-request")
}

/// `control/rank-<R>.listening`, relative to the run directory: the rank
/// answers dump requests.
pub fn rank_dump_listening(rank: usize) -> String {
    format!("{CONTROL_DIR}/rank-{rank}.listening")
}

/// The rank a file of the control folder named as [`rank_dump_listening`] names it says
/// listens (`rank-3.listening` → 3).
pub fn listening_rank(file_name: &str) -> Option<usize> {
    file_name
        .strip_prefix("rank-")?
        .strip_suffix(".listening")?
        .parse()
        .ok()
}

/// `control/rank-<R>.dumped`, relative to the run directory: the rank's
/// answer to a dump request (`ok PATH` or `error: WHY`).
pub fn rank_dump_answer(rank: usize) -> String {
    format!("{CONTROL_DIR}/rank-{rank}.dumped")
}

/// `logs/rank-<R>.stdout`, relative to the run directory.
pub fn rank_stdout(rank: usize) -> String {
    format!("{LOGS_DIR}/rank-{rank}.stdout")
}

/// `logs/rank-<R>.stderr`, relative to the run directory.
pub fn rank_stderr(rank: usize) -> String {
    format!("{LOGS_DIR}/rank-{rank}.stderr")
}

/// `traces/rank-<R>.jsonl`, relative to the run directory.
pub fn rank_trace(rank: usize) -> String {
    format!("{TRACES_DIR}/rank-{rank}.jsonl")
}

/// A run directory and its manifest, as read back by the other commands.
#[derive(Debug, Clone)]
pub struct RunDir {
    /// The run directory (symlinks such as `runs/latest` resolved).
    pub path: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
}

impl RunDir {
    /// Finds and reads the run the user named; see [`resolve_run_dir`].
    pub fn open(arg: Option<&Path>) -> Result<RunDir, RunDirError> {
        let path = resolve_run_dir(arg)?;
        let manifest = read_manifest(&path)?;
        Ok(RunDir { path, manifest })
    }

    /// A path from the manifest as a real path: relative ones are joined to
    /// the run directory, absolute ones are kept.
    pub fn file(&self, path: &str) -> PathBuf {
        self.path.join(path)
    }

    /// The trace file of a rank of this node.
    pub fn trace(&self, rank: usize) -> PathBuf {
        match self.manifest.rank(rank) {
            Some(r) => self.file(&r.trace),
            None => self.path.join(rank_trace(rank)),
        }
    }

    /// The traces directory.
    pub fn traces_dir(&self) -> PathBuf {
        self.file(&self.manifest.traces_dir)
    }
}

/// Resolves the RUN argument of a command to a run directory.
///
/// `None` means `runs/latest`. A path may be a run directory (one with a
/// `manifest.json`), or a runs root holding a `latest` link. Symlinks are
/// resolved, so the result names the run itself.
pub fn resolve_run_dir(arg: Option<&Path>) -> Result<PathBuf, RunDirError> {
    let given = match arg {
        Some(p) => p.to_path_buf(),
        None => Path::new(DEFAULT_RUNS_ROOT).join(LATEST_LINK),
    };
    if fs::symlink_metadata(&given).is_err() {
        return Err(RunDirError::NotFound { path: given });
    }
    let Ok(dir) = fs::canonicalize(&given) else {
        // A dangling link, e.g. `latest` after its run was deleted.
        return Err(RunDirError::NotFound { path: given });
    };
    if dir.join(MANIFEST_FILE).is_file() {
        return Ok(dir);
    }
    let latest = dir.join(LATEST_LINK);
    if let Ok(target) = fs::canonicalize(&latest) {
        if target.join(MANIFEST_FILE).is_file() {
            return Ok(target);
        }
    }
    Err(RunDirError::NotARun { path: given })
}

/// Creates a fresh default run directory `<root>/<stamp>-<name>` (adding
/// `-2`, `-3`, ... if taken) with its `logs/` and `traces/`.
pub(crate) fn create_default(root: &Path, stamp: &str, name: &str) -> Result<PathBuf, LaunchError> {
    fs::create_dir_all(root).map_err(|source| LaunchError::RunDir {
        path: root.to_path_buf(),
        source,
    })?;
    let mut n = 1u32;
    loop {
        let dir = if n == 1 {
            root.join(format!("{stamp}-{name}"))
        } else {
            root.join(format!("{stamp}-{name}-{n}"))
        };
        match fs::create_dir(&dir) {
            Ok(()) => {
                create_parts(&dir)?;
                return Ok(dir);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 1000 => n += 1,
            Err(source) => return Err(LaunchError::RunDir { path: dir, source }),
        }
    }
}

/// Creates (or reuses, if it holds no run) an explicitly given run directory.
pub(crate) fn create_explicit(dir: &Path) -> Result<(), LaunchError> {
    if dir.join(MANIFEST_FILE).exists() {
        return Err(LaunchError::RunDirTaken {
            path: dir.to_path_buf(),
        });
    }
    fs::create_dir_all(dir).map_err(|source| LaunchError::RunDir {
        path: dir.to_path_buf(),
        source,
    })?;
    create_parts(dir)
}

fn create_parts(dir: &Path) -> Result<(), LaunchError> {
    for part in [LOGS_DIR, TRACES_DIR] {
        let path = dir.join(part);
        fs::create_dir_all(&path).map_err(|source| LaunchError::RunDir { path, source })?;
    }
    Ok(())
}

/// Keeps a finished attempt before the next one starts: moves its
/// [`ATTEMPT_PARTS`] from the top of `run_dir` into `attempts/<N>/` (`N` =
/// its restart count), writes its final manifest there (so the attempt is a
/// run directory of its own) and creates empty `logs/` and `traces/` for the
/// next attempt. Returns the attempt's directory relative to `run_dir`.
pub(crate) fn keep_attempt(run_dir: &Path, manifest: &Manifest) -> io::Result<String> {
    let rel = attempt_dir(manifest.restarts);
    let dir = run_dir.join(&rel);
    let context =
        |path: &Path, e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    fs::create_dir_all(&dir).map_err(|e| context(&dir, e))?;
    for part in ATTEMPT_PARTS {
        let from = run_dir.join(part);
        if fs::symlink_metadata(&from).is_ok() {
            fs::rename(&from, dir.join(part)).map_err(|e| context(&from, e))?;
        }
    }
    let mut kept = manifest.clone();
    kept.run_dir = dir.to_string_lossy().into_owned();
    let path = dir.join(MANIFEST_FILE);
    kept.write_atomic(&path).map_err(|e| context(&path, e))?;
    for part in [LOGS_DIR, TRACES_DIR] {
        let path = run_dir.join(part);
        fs::create_dir_all(&path).map_err(|e| context(&path, e))?;
    }
    Ok(rel)
}

/// Points `<root>/latest` at `run_dir` (a sibling), replacing any previous
/// link atomically (new link under a temporary name, then renamed).
pub(crate) fn update_latest(root: &Path, run_dir: &Path) -> io::Result<()> {
    let target = run_dir
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "run directory has no name"))?;
    let tmp = root.join(format!(".{LATEST_LINK}.tmp-{}", std::process::id()));
    let _ = fs::remove_file(&tmp);
    std::os::unix::fs::symlink(target, &tmp)?;
    let result = fs::rename(&tmp, root.join(LATEST_LINK));
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_dirs_are_unique_and_latest_follows() {
        let root = tempfile::tempdir().unwrap();
        let a = create_default(root.path(), "20240101-000000", "t").unwrap();
        let b = create_default(root.path(), "20240101-000000", "t").unwrap();
        assert_ne!(a, b);
        assert!(b.ends_with("20240101-000000-t-2"));
        assert!(a.join("logs").is_dir() && a.join("traces").is_dir());
        update_latest(root.path(), &a).unwrap();
        update_latest(root.path(), &b).unwrap();
        let link = fs::read_link(root.path().join(LATEST_LINK)).unwrap();
        assert_eq!(link, Path::new("20240101-000000-t-2"));
    }

    #[test]
    fn resolve_errors_are_clear() {
        let root = tempfile::tempdir().unwrap();
        let missing = root.path().join("nope");
        let e = resolve_run_dir(Some(&missing)).unwrap_err();
        assert!(matches!(e, RunDirError::NotFound { .. }), "{e}");
        let e = resolve_run_dir(Some(root.path())).unwrap_err();
        assert!(
            e.to_string().contains("not a ddp-probe run directory"),
            "{e}"
        );
        fs::write(root.path().join(MANIFEST_FILE), "{\"format\": 99}").unwrap();
        let e = read_manifest(root.path()).unwrap_err();
        assert!(
            matches!(e, RunDirError::UnsupportedFormat { found: 99, .. }),
            "{e}"
        );
        fs::write(root.path().join(MANIFEST_FILE), "{").unwrap();
        let e = read_manifest(root.path()).unwrap_err();
        assert!(matches!(e, RunDirError::Parse { .. }), "{e}");
    }
}
