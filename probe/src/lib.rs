//! Loading, model, analysis and import of ddp-probe's runs: the
//! read side of the trace format (`docs/trace-format.md`), whose records,
//! recorder and clock live in `probe-contract` (re-exported here as
//! [`trace`], [`recorder`] and [`clock`]).
//!
//! * Loading: [`reader`] (a run directory, all ranks, several directories
//!   merged) with its fast line parser, its memory-mapped reading and its
//!   binary cache; [`model`], the compact in-memory [`model::Run`].
//! * [`analysis`]: the step breakdown and overlap ([`analysis::summarize`]),
//!   stragglers, per-bucket statistics, the cost model and the
//!   `bucket_cap_mb` advice ([`analysis::advise`]), HTA's GPU breakdown.
//! * [`import`]: PyTorch profiler (Kineto) traces turned into runs.
//! * [`export::chrome`]: Chrome trace-event JSON for Perfetto.
//! * [`synth`]: deterministic synthetic runs for tests and benchmarks;
//!   [`text`] and [`units`]: the text helpers and number formats the views share.

pub mod analysis;
mod cache;
pub mod error;
pub mod export;
mod fastparse;
mod fill;
mod hash;
pub mod import;
mod mapped;
pub mod model;
pub mod reader;
pub mod synth;
pub mod text;
pub mod units;

#[doc(hidden)]
pub mod fuzzing;

/// The contract with the launcher and the ranks (trace records, clock,
/// recorder), re-exported from `probe-contract` under their old paths.
pub use probe_contract::{clock, recorder, trace};

pub use error::{Error, Warning};
pub use model::Run;
pub use reader::load_run;
pub use recorder::Recorder;
