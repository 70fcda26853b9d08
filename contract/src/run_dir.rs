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
//! (`crate::manifest::read_manifest` reads one back).

use std::io;
use std::path::PathBuf;

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
