//! Analysis of ddp-probe's runs, on the model `probe-load` reads (its
//! modules are re-exported here under their old paths: [`reader`], [`model`],
//! [`error`], [`synth`], and the contract's [`trace`], [`recorder`], [`clock`]).
//!
//! * [`analysis`]: the step breakdown and overlap ([`analysis::summarize`]),
//!   stragglers, per-bucket statistics, the cost model and the
//!   `bucket_cap_mb` advice ([`analysis::advise`]) with its tuning statistics.
//! * [`export::chrome`]: Chrome trace-event JSON for Perfetto.
//! * [`text`], [`units`] and [`wrap`]: the text helpers, number formats and word
//!   wrapping the views share.
//!
//! PyTorch profiler traces are imported by `probe-kineto`; failures are
//! explained by `probe-explain`.

pub mod analysis;
pub mod export;
pub use probe_contract::text;
pub mod units;
pub mod wrap;

pub use probe_load::{clock, error, model, open, reader, recorder, synth, trace};

pub use probe_load::{load_run, Error, Run, Warning};
pub use recorder::Recorder;
