//! `ddp-probe explain`: why a run failed or hung, from its manifest, logs and traces.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::cli::ExplainArgs;
use crate::commands::output::{print_block, terminal_width};

/// Prints the findings, likely root cause first.
pub fn explain(args: ExplainArgs) -> Result<ExitCode> {
    let inputs: Vec<PathBuf> = if args.inputs.is_empty() {
        vec![super::load::latest_run(
            "name a run directory or log files",
        )?]
    } else {
        args.inputs
    };
    let report = probe_explain::explain(&inputs)?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).context("could not encode the report")?
        );
    } else {
        print_block(&report.render_text(terminal_width()));
    }
    Ok(ExitCode::SUCCESS)
}
