//! Trace model and file format, recorder, analysis, diagnosis and launcher.
//!
//! The pieces that exist so far all revolve around the **trace format v1**
//! (specified in `docs/trace-format.md`):
//!
//! * [`trace`]: the records of the format as serde types, the version
//!   constants and [`trace::TraceWriter`], which writes records as whole JSON
//!   lines to any [`std::io::Write`].
//! * [`clock`]: the timestamp source of the format (nanoseconds since the Unix
//!   epoch, from a monotonic clock anchored once to the realtime clock).
//! * [`recorder`]: what a training process uses to record spans without
//!   blocking on I/O (a background writer thread per trace file).
//! * [`model`] and [`reader`]: a run directory (all ranks, several directories
//!   merged) loaded into one compact in-memory [`model::Run`].
//! * [`export::chrome`]: Chrome trace-event JSON for Perfetto and
//!   `chrome://tracing`.
//! * [`synth`]: deterministic synthetic runs for tests and benchmarks.
//! * [`import`]: PyTorch profiler (Kineto) traces turned into runs.

pub mod analysis;
mod cache;
pub mod diagnosis;
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

use probe_contract::run_dir as contract_run_dir;
/// The contract with the launcher and the ranks (trace records, clock,
/// recorder), re-exported from `probe-contract` under their old paths.
pub use probe_contract::{clock, recorder, trace};

pub use error::{Error, Warning};
pub use model::Run;
pub use reader::load_run;
pub use recorder::Recorder;
