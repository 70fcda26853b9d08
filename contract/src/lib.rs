//! The contract between ddp-probe's parts, in one place: what a training
//! rank writes, what the launcher writes and sets, and what every reader
//! relies on. The training side (`comm`, `ddp`, `ddp-cuda`) and the launcher
//! depend on this crate alone; the loading and analysis crate (`probe`)
//! reads what is declared here.
//!
//! * [`trace`]: the records of the trace format v1 (`docs/trace-format.md`)
//!   as serde types, their version constants and [`trace::TraceWriter`];
//! * [`clock`]: the format's timestamps (ns since the Unix epoch, from a
//!   monotonic clock anchored once to the realtime clock);
//! * [`recorder`]: how a training process records spans without blocking
//!   on I/O (a writer thread per trace file);
//! * [`env`]: the environment variables between launcher and ranks;
//! * [`run_dir`]: the layout of a run directory;
//! * [`rlimit`]: the open-file limit raised to the hard one at start;
//! * [`budget`]: the bounds of the readers of untrusted files, each with its variable;
//! * [`secret`]: the store token's rule and the OS randomness it is drawn from;
//! * [`checkpoint_format`]: the reference DDP's checkpoint file, read and checked without libtorch;
//! * [`shm_names`]: the names of the ranks' shared-memory files, for the launcher's clean-up;
//! * [`processes`]: a rank's processes when the launcher stopped the run, and their file;
//! * [`manifest`]: `manifest.json`, the launcher's record of a run, with
//!   [`termination`] (how a rank ended) and the [`hang`] report, whose
//!   [`hang::TraceTail`] holds the one rule for which collective a rank
//!   waits in ([`hang::waits_in`]).

pub mod budget;
pub mod checkpoint_format;
pub mod clock;
pub mod env;
pub mod hang;
pub mod manifest;
pub mod processes;
pub mod recorder;
pub mod rlimit;
pub mod run_dir;
pub mod secret;
pub mod shm_names;
pub mod termination;
pub mod text;
pub mod trace;

#[doc(hidden)]
pub mod fuzz_corpus;

pub use recorder::Recorder;
