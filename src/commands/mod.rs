//! One module per `ddp-probe` command: each turns parsed arguments into library calls and
//! prints the result.

pub mod analyze;
pub mod explain;
pub mod export;
pub mod import;
mod load;
pub mod output;
pub mod report;
pub mod run;
pub mod scale;
pub mod tui;
pub mod tune;
