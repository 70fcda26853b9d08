//! The timestamp clock of [`crate::WorkInfo`]: the trace clock of `probe`
//! (nanoseconds since the Unix epoch from a monotonic clock anchored once per
//! process), so collective timings and the spans recorded around them share
//! one anchor.

pub use probe_contract::clock::{now_ns, to_unix_ns};
