//! Analysis of a loaded run: where a data-parallel step's time goes, and
//! which `bucket_cap_mb` would make it shorter.
//!
//! * [`summarize`] → [`Summary`]: per rank and across ranks, the step-time
//!   breakdown (data wait, forward, backward, communication total /
//!   overlapped / exposed, optimizer, writeback, other) with median, p95 and
//!   mean; throughput; per-bucket and per-operation communication
//!   statistics with nccl-tests bandwidths; stragglers. Warm-up steps (the
//!   first iteration, the bucket rebuild step) are reported apart.
//!   [`Summary::render_text`] renders it for a terminal; the struct
//!   serializes with serde for `--json`.
//! * [`advise`] → [`Advice`]: fits a latency + bytes/bandwidth cost model to
//!   the observed collectives, replays PyTorch's bucket assignment
//!   ([`assign::assign_buckets`]) for candidate caps on the recorded
//!   per-parameter gradient-ready times, simulates the overlapped schedule
//!   and recommends a cap with the predicted gain and how sure it is.
//!   [`Advice::render_text`] renders it.
//!
//! * [`compare`] → [`Comparison`]: two runs side by side, where the step time changed.
//! * [`heatmap::heatmaps`] → [`heatmap::Heatmaps`]: rank × step grids of step time,
//!   exposed communication and arrival lateness, for jobs of hundreds of ranks.
//!
//! The definitions of every number are on the fields of
//! [`StepBreakdown`], [`Breakdown`], [`BucketStats`], [`OpStats`],
//! [`Stragglers`] and [`Advice`]. Everything works on rank 0's timeline as
//! loaded; the cost is a single pass over each rank's sorted lanes plus
//! linear-time grouping of the collectives.

#![warn(missing_docs)]

pub mod advice;
pub mod assign;
mod bucket_stats;
pub mod cap_list;
mod comm;
pub mod compare;
pub mod costmodel;
mod group;
pub mod heatmap;
pub mod interference;
pub mod intervals;
mod render;
mod scan;
mod slowdown;
pub mod stats;
mod stragglers;
mod summary;
pub mod tuning;

pub use advice::{
    advise, list_words, Advice, AdviceOptions, AssumedCost, Candidate, Confidence, Recommendation,
    SimCollective, WhatIf,
};
pub use assign::{assign_buckets, ParamSpec};
pub use bucket_stats::BucketStats;
pub use comm::{bus_factor, busbw_factor, OpStats};
pub use compare::{compare, Comparison};
pub use costmodel::CostFit;
pub use scan::{step_breakdowns, OtherSplit, StepBreakdown, WarmupReason};
pub use slowdown::{RankSlowdown, Slowdowns, StepSlowdown};
pub use stats::Dist;
pub use stragglers::{RankLateness, Straggler, StragglerCandidate, Stragglers, P_VALUE_THRESHOLD};
pub use summary::{
    between_steps_line, other_placement, part_recorded, parts_not_recorded,
    step_breakdowns_and_warnings, summarize, warnings, Breakdown, CommSplit, GapSaves, LongGaps,
    RankSummary, SamplesSource, StepGap, StragglerLine, Summary, SummaryOptions, Throughput,
    Totals, WarmupStep,
};

/// The counter of samples per step (declared with the trace format).
pub use crate::trace::SAMPLES_COUNTER;

/// The `schema_version` of `ddp-probe summary --json` (`{"schema_version",
/// "summary", "advice", ...}`) and `advise --json` (the [`Advice`] object with
/// `schema_version` added). Raised when a field changes meaning or goes away;
/// new fields do not raise it.
pub const JSON_SCHEMA_VERSION: u32 = 1;
