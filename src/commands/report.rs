//! `ddp-probe report`: one self-contained HTML report of runs (and the scaling across them).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use probe::analysis::tuning::TuneResult;
use probe_reports::{load_runs, render, write_html, ReportOptions, RunInput};
use probe_series::TUNE_JSON;

use crate::cli::ReportArgs;

/// Loads the runs, renders the report and writes it.
pub fn report(args: ReportArgs) -> Result<ExitCode> {
    let paths: Vec<PathBuf> = if args.runs.is_empty() {
        vec![super::load::latest_run("name a run directory")?]
    } else {
        args.runs
    };
    let runs = load_runs(&paths)?;
    for r in &runs {
        for w in &r.warnings {
            eprintln!("ddp-probe: warning: {}: {w}", r.label);
        }
    }
    // A folder written by `ddp-probe tune` brings its measurements along.
    let tune: Option<TuneResult> = paths.iter().find_map(|p| {
        let text = std::fs::read_to_string(p.join(TUNE_JSON)).ok()?;
        match serde_json::from_str(&text) {
            Ok(t) => Some(t),
            Err(e) => {
                eprintln!(
                    "ddp-probe: warning: {} is not readable ({e}); the tuning section is left out",
                    p.join(TUNE_JSON).display()
                );
                None
            }
        }
    });
    let options = ReportOptions {
        title: args.title,
        warmup_steps: args.warmup,
        ..ReportOptions::default()
    };
    let rendered = render(&runs, tune.as_ref(), &options);
    write_html(&args.output, &rendered.html)?;
    let failed = rendered.failed.iter().filter(|f| **f).count();
    eprintln!(
        "wrote {} ({} run{}{}{}, {} KiB)",
        args.output.display(),
        runs.len(),
        if runs.len() == 1 { "" } else { "s" },
        if failed > 0 {
            format!(", {failed} failed")
        } else {
            String::new()
        },
        if rendered.scaling.is_some() {
            ", with scaling"
        } else {
            ""
        },
        rendered.html.len().div_ceil(1024)
    );
    // Under --strict a run whose traces were refused is an error, as in every other command
    // (the page still shows it); otherwise the page is the answer, saying why a run is missing.
    let strict = probe::reader::strict_from_env();
    let unloaded: Vec<&RunInput> = runs
        .iter()
        .filter(|r| strict && r.load_error.is_some())
        .collect();
    for r in &unloaded {
        eprintln!(
            "ddp-probe: error: {}: {}",
            r.label,
            r.load_error.as_deref().unwrap_or_default()
        );
    }
    Ok(if unloaded.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
