//! `ddp-probe tune`: measures the step time per bucket_cap_mb and recommends a cap.

use std::ffi::OsString;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use probe_launch::EXIT_INTERRUPTED;
use probe_series::{default_series_dir, run_tune, JobCommand, SeriesOptions, TuneCaps, TuneConfig};

use crate::cli::TuneArgs;

/// The caps tried when neither `--bucket-cap-mb` nor `--auto` is given.
const DEFAULT_CAPS: [f64; 5] = [1.0, 5.0, 10.0, 25.0, 50.0];

/// Runs the candidates, prints the table (or JSON), the recommendation and the report's path.
pub fn tune(args: TuneArgs) -> Result<ExitCode> {
    let mut words = args.command;
    if args.auto_instrument && !words.is_empty() {
        let program = words.remove(0);
        let (program, rest) = super::run::auto_instrumented(program, words)?;
        words = std::iter::once(program).chain(rest).collect();
    }
    let command = series_command(words, args.steps)?;
    let caps = if args.auto {
        TuneCaps::Auto
    } else if args.bucket_cap_mb.is_empty() {
        TuneCaps::List(DEFAULT_CAPS.to_vec())
    } else {
        TuneCaps::List(args.bucket_cap_mb)
    };
    let nproc_per_node = super::run::ranks_per_node(args.nproc_per_node)?;
    if nproc_per_node < 2 {
        bail!(
            "tune compares bucket sizes by what their all-reduces cost, and {nproc_per_node} rank \
             all-reduces nothing: give --nproc-per-node 2 or more"
        );
    }
    let config = TuneConfig {
        command,
        nproc_per_node,
        caps,
        repeats: args.repeats,
        dir: args.dir.unwrap_or_else(|| default_series_dir("tune")),
        report: args.output,
        options: SeriesOptions {
            warmup_steps: args.warmup,
            hang_timeout: args.hang_timeout.map(seconds).transpose()?,
            show_progress: true,
        },
    };
    let outcome = run_tune(&config)?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&outcome.result)
                .context("could not encode the tuning result")?
        );
    } else {
        println!("{}", outcome.result.render_text());
    }
    eprintln!("report: {}", outcome.report.display());
    if let Some(sig) = &outcome.result.interrupted {
        eprintln!("ddp-probe: interrupted by {sig}; the report covers the runs that finished");
        return Ok(exit_code(EXIT_INTERRUPTED));
    }
    if outcome.result.recommendation.is_none() {
        eprintln!("ddp-probe: no cap could be measured; see the report for why");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// The training command after `--`, with `--steps N` to append.
pub fn series_command(words: Vec<OsString>, steps: Option<u64>) -> Result<JobCommand> {
    let mut words = words.into_iter();
    let Some(program) = words.next() else {
        bail!("no command given: put the training command after `--`, e.g. `-- target/release/lm`");
    };
    Ok(JobCommand {
        program,
        args: words.collect(),
        steps,
    })
}

/// A user-given number of seconds as a duration, refusing negative, infinite and NaN values.
pub fn seconds(value: f64) -> Result<Duration> {
    Duration::try_from_secs_f64(value).map_err(|_| {
        anyhow::anyhow!("{value} is not a usable number of seconds: give a positive number")
    })
}

/// A process exit status in 0..=255.
pub fn exit_code(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code.clamp(0, 255)).unwrap_or(1))
}
