//! HTML reports of ddp-probe runs: a renderer, it runs nothing (the series
//! behind `ddp-probe scale` and `tune` are the `probe-series` crate). No
//! libtorch, no CUDA.
//!
//! * [`load_runs`] finds and loads runs ([`RunInput`]): run directories,
//!   folders of them, nodes of one multi-node run merged.
//! * [`render`] turns runs (and a tuning result) into one self-contained
//!   HTML document: inline CSS, SVG charts drawn with plotters, no script,
//!   nothing fetched. Per run: configuration and environment, step-time
//!   breakdown per rank, the median step as a per-rank Gantt chart with the
//!   buckets' ready windows and the exposed communication, buckets,
//!   communication statistics per operation, stragglers, the bucket_cap_mb
//!   advice of `probe::analysis::advise`, and for failed runs the findings
//!   of `probe_explain::explain`. Runs at two or more world sizes add a
//!   scaling section ([`scaling`]); exactly two runs, a section on what
//!   changed from the first to the second (`probe::analysis::compare`).
//!   [`write_html`] writes it atomically.
//! * [`tune`] draws a `ddp-probe tune` sweep (its statistics, search and
//!   comparison with advise are `probe::analysis::tuning`).
//!
//! Every string from logs, commands or traces is HTML-escaped
//! ([`html::escape`]).

pub mod analyze;
pub mod charts;
mod comparison;
pub mod error;
pub mod gantt;
pub mod html;
pub mod input;
pub mod options;
pub mod report;
mod run_section;
pub mod scaling;
pub mod tune;
pub mod units;

pub use analyze::RunAnalysis;
pub use error::ReportError;
pub use input::{load_runs, RunInput};
pub use report::{render, write_html, Rendered, ReportOptions};
pub use scaling::{scaling, Scaling, ScalingPoint, ThroughputUnit};
