//! HTML reports of ddp-probe runs.
pub mod charts;
pub mod error;
pub mod html;
pub mod units;
