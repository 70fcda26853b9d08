//! The launcher of ddp-probe: a torchrun-compatible way to start one node's
//! ranks of a data-parallel training job, collect everything they produce,
//! and handle failures, hangs and interrupts.
//!
//! The command line fills in a [`LaunchConfig`] and calls [`launch`] with an
//! [`Observer`] (usually [`ConsoleObserver`]); the result is an [`Outcome`]
//! whose `exit_code` the command line ends with.
//!
//! * Every rank gets torchrun's environment (`RANK`, `LOCAL_RANK`,
//!   `WORLD_SIZE`, `MASTER_ADDR`, ...) plus ddp-probe's own (see [`mod@env`]).
//! * Everything goes into a run directory (see [`rundir`]): `manifest.json`,
//!   complete per-rank logs, NCCL logs, traces.
//! * Each rank runs in its own process group. When the first rank fails, or
//!   the hang watchdog fires, or the launcher gets Ctrl-C/SIGTERM/SIGHUP, all
//!   ranks get SIGTERM, then SIGKILL after the grace period.
//! * With `max_restarts` (torchrun's `--max-restarts`), a rank's failure
//!   stops all ranks and starts them all again, the failed attempt kept in
//!   `attempts/<n>/`; a hang or a stop signal is never restarted.
//! * When a rank dies of a SIGKILL the launcher did not send, the manifest
//!   records the evidence about its sender ([`KillEvidence`]: the cgroup and
//!   host `oom_kill` counters at its start and death, kernel log lines naming
//!   its pid, its last resident-set sample).
//! * The other commands find a run again with [`RunDir::open`] and read its
//!   [`Manifest`].
//!
//! Nothing here needs libtorch or CUDA.

pub mod config;
pub mod console;
pub mod env;
pub mod error;
mod evidence;
mod launch;
pub mod observer;
mod process;
mod process_tree;
mod reaper;
pub mod rundir;
mod signals;
pub mod token;

/// The manifest and the hang report, declared with the rest of the contract.
pub use probe_contract::{hang, manifest};

pub use config::{ConsoleMode, LaunchConfig};
pub use console::Stream;
pub use error::{LaunchError, RunDirError};
pub use hang::{CollectiveRef, HangReport, RankHangState, TraceTail};
pub use launch::{
    exit_code_for_signal, launch, parse_endpoint, Outcome, EXIT_HANG, EXIT_INTERRUPTED,
};
pub use manifest::{
    Attempt, CounterScope, Failure, KillEvidence, Manifest, MemorySample, OomKillCounter, RankEnd,
    RankRecord, RunStatus, Termination,
};
pub use observer::{ConsoleObserver, Event, NullObserver, Observer};
pub use process::signal_name;
pub use rundir::{read_manifest, resolve_run_dir, RunDir};
