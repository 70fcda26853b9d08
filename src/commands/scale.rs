//! `ddp-probe scale`: runs a job at several world sizes and writes the scaling report.

use std::process::ExitCode;

use anyhow::{Context, Result};
use probe_launch::{RunStatus, EXIT_INTERRUPTED};
use probe_series::{default_series_dir, run_scale, JobCommand, ScaleConfig, SeriesOptions};

use crate::cli::ScaleArgs;
use crate::commands::tune::{exit_code, seconds, series_command};

/// Runs the series, prints the scaling table (or JSON) and the report's path.
pub fn scale(args: ScaleArgs) -> Result<ExitCode> {
    let command: JobCommand = series_command(args.command, args.steps)?;
    let dir = args.dir.unwrap_or_else(|| default_series_dir("scale"));
    let config = ScaleConfig {
        command,
        nprocs: args.nproc,
        bucket_cap_mb: args.bucket_cap_mb,
        dir,
        report: args.output,
        options: SeriesOptions {
            warmup_steps: args.warmup,
            hang_timeout: args.hang_timeout.map(seconds).transpose()?,
            show_progress: true,
        },
    };
    let outcome = run_scale(&config)?;
    if args.json {
        let runs: Vec<serde_json::Value> = outcome
            .runs
            .iter()
            .map(|r| {
                serde_json::json!({
                    "world_size": r.world_size,
                    "dir": r.dir,
                    "status": r.status.name(),
                })
            })
            .collect();
        let json = serde_json::json!({
            "dir": outcome.dir,
            "report": outcome.report,
            "runs": runs,
            "scaling": outcome.scaling,
            "interrupted": outcome.interrupted,
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&json).context("could not encode the scaling series")?
        );
    } else {
        match &outcome.scaling {
            Some(s) => println!("{}", s.render_text()),
            None => println!(
                "no scaling series: fewer than two world sizes have steady steps (see the report)"
            ),
        }
    }
    eprintln!("report: {}", outcome.report.display());
    if let Some(sig) = &outcome.interrupted {
        eprintln!("ddp-probe: interrupted by {sig}; the report covers the runs that finished");
        return Ok(exit_code(EXIT_INTERRUPTED));
    }
    if !outcome.runs.is_empty() && outcome.runs.iter().all(|r| r.status != RunStatus::Ok) {
        eprintln!("ddp-probe: every run failed; see the report for why");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
