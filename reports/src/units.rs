//! The report's number formats: those of [`probe::units`], the one module
//! of human-readable numbers that the summary, the report and the terminal
//! timeline share.

pub use probe::units::{
    bytes, count_rate, group_thousands, mib, ns, pct, rate, signed_ns, signed_pct,
};
