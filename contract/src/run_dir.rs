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
//! ```

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
