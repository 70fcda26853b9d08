//! The layout of a run directory, which the launcher creates and every
//! reader opens:
//!
//! ```text
//! runs/
//!   latest -> 20240501-120000-train        (replaced atomically by each run)
//!   20240501-120000-train/
//!     manifest.json                        (written at start, rewritten at the end)
//!     logs/rank-<R>.stdout, rank-<R>.stderr (complete raw output)
//!     logs/nccl-rank<R>.log                (NCCL_DEBUG_FILE, written by NCCL)
//!     logs/nccl_trace_rank_<R>             (PyTorch flight recorder dumps)
//!     logs/processes-rank-<R>.txt          (the rank's process tree when the launcher stopped the run)
//!     logs/error-rank<R>.json              (torchelastic error file)
//!     traces/rank-<R>.jsonl                (written by the ranks' recorder)
//!     control/rank-<R>.listening           (a rank answers dump requests)
//!     control/dump-request                 (the hang watchdog asks for flight-recorder dumps)
//!     control/rank-<R>.dumped              (the rank's answer: `ok PATH` or `error: WHY`)
//!     attempts/<N>/                        (with --max-restarts: attempt N's manifest.json,
//!                                           logs/, traces/ and control/, moved there
//!                                           before attempt N+1 started)
//! ```
//!
//! The top level always holds the latest attempt of a run that restarts its
//! workers, so every reader reads it unchanged; each `attempts/<N>` is itself
//! a run directory that the readers can open.
//!
//! [`RunDirError`] says what is wrong with a path that is not a run
//! (`crate::manifest::read_manifest` reads one back). [`run_name`] is the
//! name a run gets from its command: the launcher names the directory with
//! it, the report titles the run with it.
//! [`module_notes`] reads back what the ranks' `ddp_probe_torch` said on
//! their stderr, for a run that left no trace.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Where run directories go by default, relative to the working directory.
pub const DEFAULT_RUNS_ROOT: &str = "runs";
/// The link in the runs root that points at the newest run.
pub const LATEST_LINK: &str = "latest";
/// The manifest's file name in a run directory.
pub const MANIFEST_FILE: &str = "manifest.json";
/// The logs directory in a run directory.
pub const LOGS_DIR: &str = "logs";
/// The traces directory in a run directory.
pub const TRACES_DIR: &str = "traces";
/// The directory of the launcher's requests to the ranks and their answers.
pub const CONTROL_DIR: &str = "control";
/// The directory of a restarted run's earlier attempts, `attempts/<N>/`.
pub const ATTEMPTS_DIR: &str = "attempts";

/// Why a run directory could not be found or read back.
#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    /// The given path does not exist.
    #[error("{} does not exist; pass a run directory (e.g. runs/<time>-<program>) or run `ddp-probe run` first", path.display())]
    NotFound {
        /// The path given.
        path: PathBuf,
    },

    /// The given path exists but is not a run directory.
    #[error("{} is not a ddp-probe run directory (no manifest.json in it); pass a directory made by `ddp-probe run`, such as runs/latest", path.display())]
    NotARun {
        /// The path given.
        path: PathBuf,
    },

    /// The manifest could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The manifest file.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },

    /// The manifest is not valid JSON of the expected shape.
    #[error("{} is not a valid ddp-probe manifest: {source}", path.display())]
    Parse {
        /// The manifest file.
        path: PathBuf,
        /// The parse error.
        source: serde_json::Error,
    },

    /// The manifest was written by a newer ddp-probe.
    #[error("{} has manifest format {found}, newer than this ddp-probe understands ({supported}); update ddp-probe", path.display())]
    UnsupportedFormat {
        /// The manifest file.
        path: PathBuf,
        /// The format version in the file.
        found: u32,
        /// The newest format version this build reads.
        supported: u32,
    },
}

/// The Python module `ddp-probe run --auto-instrument` runs each rank's program through
/// (`python -m ddp_probe_torch.auto train.py ARGS`; `python/ddp_probe_torch/auto.py`).
pub const AUTO_INSTRUMENT_RUNNER: &str = "ddp_probe_torch.auto";

/// Whether `name` is `base` or `base` with a version (`python3`, `python3.12`).
fn is_named(name: &str, base: &str) -> bool {
    name.strip_prefix(base)
        .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// Whether `program` (a path or a name) is a Python interpreter: `python`, `python3`,
/// `/venv/bin/python3.12`.
pub fn is_python(program: &OsStr) -> bool {
    Path::new(program)
        .file_name()
        .is_some_and(|n| is_named(&n.to_string_lossy(), "python"))
}

/// The name a run directory gets from the command: the program's file name,
/// or for an interpreter (python, sh, ...) the script or module it runs.
/// Only `[A-Za-z0-9._-]` is kept, at most 40 characters.
pub fn run_name(program: &OsStr, args: &[OsString]) -> String {
    let base = |p: &OsStr| {
        Path::new(p)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let prog = base(program);
    let is_interpreter = [
        "python", "pypy", "sh", "bash", "zsh", "dash", "uv", "node", "perl", "ruby",
    ]
    .iter()
    .any(|i| is_named(&prog, i));
    let mut name = prog.clone();
    if is_interpreter {
        let mut it = args.iter().map(|a| a.to_string_lossy());
        while let Some(a) = it.next() {
            if a == "-m" {
                match it.next() {
                    // `ddp-probe run --auto-instrument`'s runner: the program follows it.
                    Some(module) if module == AUTO_INSTRUMENT_RUNNER => continue,
                    Some(module) => {
                        name = module.rsplit('.').next().unwrap_or(&module).to_owned();
                    }
                    None => {}
                }
                break;
            }
            if a == "-c" {
                // Inline code, not a script: the interpreter's name it is.
                break;
            }
            if a == "run" {
                continue;
            }
            if !a.starts_with('-') {
                let stem = Path::new(a.as_ref())
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                if !stem.is_empty() {
                    name = stem;
                }
                break;
            }
        }
    }
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    let clean = clean.trim_start_matches('.').to_owned();
    if clean.is_empty() {
        "run".to_owned()
    } else {
        clean
    }
}

/// What each rank's `ddp_probe_torch` module said on its stderr (`ddp_probe_torch: ...` lines:
/// why it records nothing, caps it was handed, a second model left out), ranks in order, each
/// different line once with the first rank that said it ("rank 0: ..."), at most
/// [`MODULE_NOTES`]: what a run that left no trace has to say for itself. Only the first
/// [`MODULE_NOTES_SCAN`] bytes of each log are read (the module speaks at its start); the lines
/// come from the program's output, so they are shown with control characters escaped.
pub fn module_notes(run_dir: &Path) -> Vec<String> {
    const PREFIX: &str = "ddp_probe_torch: ";
    let mut ranks: Vec<(usize, PathBuf)> = fs::read_dir(run_dir.join(LOGS_DIR))
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| {
                    let name = e.file_name();
                    let rank = name
                        .to_str()?
                        .strip_prefix("rank-")?
                        .strip_suffix(".stderr")?
                        .parse()
                        .ok()?;
                    Some((rank, e.path()))
                })
                .collect()
        })
        .unwrap_or_default();
    ranks.sort();
    let mut seen: Vec<String> = Vec::new();
    let mut notes = Vec::new();
    for (rank, path) in ranks {
        let Ok(file) = fs::File::open(&path) else {
            continue;
        };
        let mut head = Vec::new();
        use std::io::Read;
        if file.take(MODULE_NOTES_SCAN).read_to_end(&mut head).is_err() {
            continue;
        }
        for line in String::from_utf8_lossy(&head).lines() {
            let Some(said) = line.find(PREFIX).map(|at| line[at + PREFIX.len()..].trim()) else {
                continue;
            };
            if said.is_empty() || seen.iter().any(|s| s == said) {
                continue;
            }
            seen.push(said.to_owned());
            notes.push(format!(
                "rank {rank}: {}",
                crate::text::escape_controls(said)
            ));
            if notes.len() == MODULE_NOTES {
                return notes;
            }
        }
    }
    notes
}

/// The most lines [`module_notes`] gives.
pub const MODULE_NOTES: usize = 4;

/// How much of each rank's stderr [`module_notes`] reads (bytes).
pub const MODULE_NOTES_SCAN: u64 = 1 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    fn name(program: &str, args: &[&str]) -> String {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        run_name(OsStr::new(program), &args)
    }

    #[test]
    fn run_names() {
        assert_eq!(name("./train", &[]), "train");
        assert_eq!(
            name("/usr/bin/python3", &["-u", "scripts/train.py", "--lr", "1"]),
            "train"
        );
        assert_eq!(name("python3.11", &["-m", "pkg.trainer"]), "trainer");
        // Through --auto-instrument's runner: the program it runs.
        assert_eq!(
            name("python3", &["-u", "-m", AUTO_INSTRUMENT_RUNNER, "train.py"]),
            "train"
        );
        assert_eq!(
            name(
                "python3",
                &["-m", AUTO_INSTRUMENT_RUNNER, "-m", "pkg.trainer"]
            ),
            "trainer"
        );
        assert_eq!(name("sh", &["-c", "echo $RANK; exit 3"]), "sh");
        assert_eq!(name("python3", &["-c", "import torch"]), "python3");
        assert_eq!(name("my prog$", &[]), "my_prog_");
        assert_eq!(name("..", &[]), "run");
        assert_eq!(name("pythonic", &["x.py"]), "pythonic");
        assert!(is_python(OsStr::new("/v/bin/python3.12")) && !is_python(OsStr::new("pythonic")));
        assert_eq!(name(&"x".repeat(100), &[]).len(), 40);
    }

    #[test]
    fn the_modules_own_lines_are_read_once_each_in_rank_order() {
        let run = tempfile::tempdir().unwrap();
        let logs = run.path().join(LOGS_DIR);
        fs::create_dir_all(&logs).unwrap();
        let said = "ddp_probe_torch: instrument: got Net (not DistributedDataParallel)";
        fs::write(
            logs.join("rank-1.stderr"),
            format!("warning: x\n{said}\nddp_probe_torch: \x1b[31mred\n"),
        )
        .unwrap();
        fs::write(logs.join("rank-0.stderr"), format!("[rank0]: {said}\n")).unwrap();
        fs::write(logs.join("rank-0.stdout"), "ddp_probe_torch: not read\n").unwrap();
        assert_eq!(
            module_notes(run.path()),
            [
                "rank 0: instrument: got Net (not DistributedDataParallel)",
                "rank 1: \\x1b[31mred",
            ]
        );
        assert!(module_notes(&run.path().join("none")).is_empty());
    }
}
