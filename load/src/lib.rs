//! Loading of ddp-probe's runs: the read side of the trace format
//! (`docs/trace-format.md`), whose records, recorder and clock live in
//! `probe-contract` (re-exported here as [`trace`], [`recorder`] and [`clock`]).
//!
//! * [`reader`]: a run directory (all ranks, several directories merged) read
//!   into a model, with its fast line parser (`fastparse`), its memory-mapped
//!   reading (`mapped`) and its binary cache (`cache`);
//! * [`model`]: the compact in-memory [`model::Run`] every analysis and view reads;
//! * [`open`]: what a rank began and never finished (hang, crash, cut trace), for the views;
//! * [`error`]: what loading refuses ([`Error`]) and what it notes ([`Warning`]);
//! * [`synth`]: deterministic synthetic runs for tests, snapshots and benchmarks;
//! * [`fill`]: the "read until full" loop this crate and the Kineto importer share.

mod cache;
pub mod error;
mod fastparse;
pub mod fill;
mod mapped;
pub mod model;
pub mod open;
pub mod reader;
pub mod synth;

#[doc(hidden)]
pub mod fuzzing;

/// The contract with the launcher and the ranks (trace records, clock,
/// recorder), re-exported from `probe-contract`.
pub use probe_contract::{clock, recorder, trace};

pub use error::{Error, Warning};
pub use model::Run;
pub use reader::load_run;
