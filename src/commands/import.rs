//! `ddp-probe import kineto` and `ddp-probe breakdown`: PyTorch profiler traces into a run, and
//! their GPU time breakdown with Holistic Trace Analysis' definitions.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use probe_kineto::hta::{hta_breakdown, HtaBreakdown, HtaOptions};
use probe_kineto::import::{self as kineto, IMPORT_JSON};

use crate::cli::{BreakdownArgs, ImportKinetoArgs};
use crate::commands::output::print_block;

/// Imports the traces and prints what became of them.
pub fn kineto(args: ImportKinetoArgs) -> Result<ExitCode> {
    let report = kineto::import(&args.inputs, &args.output)
        .with_context(|| format!("could not import into {}", args.output.display()))?;
    for w in &report.warnings {
        eprintln!("ddp-probe: warning: {w}");
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).context("could not encode the report")?
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "imported {} rank{} (world size {}) into {}",
        report.ranks.len(),
        if report.ranks.len() == 1 { "" } else { "s" },
        report.world_size,
        report.out.display()
    );
    for r in &report.ranks {
        println!(
            "  rank {}: {} steps, {} GPU kernels and copies, {} collectives, {} spans from {}{}",
            r.rank,
            r.steps,
            r.gpu_events,
            r.collectives,
            r.spans,
            r.source.display(),
            if r.truncated { " (cut off)" } else { "" }
        );
    }
    println!();
    print_block(&report.hta.render_text());
    println!(
        "\nnext: ddp-probe summary {0}   (also tui, report, advise)",
        report.out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Prints HTA's breakdown of traces (or the one stored in an imported run).
pub fn breakdown(args: BreakdownArgs) -> Result<ExitCode> {
    let stored = match args.inputs.as_slice() {
        [one] if one.join(IMPORT_JSON).is_file() => Some(stored_breakdown(one)?),
        _ => None,
    };
    let b = match stored {
        Some(b) => {
            if args.include_last_step || args.no_ns_rounding {
                eprintln!(
                    "ddp-probe: warning: {} holds the breakdown computed at import (last step dropped, ns rounded); give the trace files for other options",
                    args.inputs[0].display()
                );
            }
            b
        }
        None => {
            let files = kineto::find_traces(&args.inputs)?;
            let traces = kineto::load_traces(&files)?;
            for (_, t) in &traces {
                if let Some(w) = &t.truncated {
                    eprintln!("ddp-probe: warning: {w}");
                }
            }
            let pairs: Vec<_> = traces.iter().map(|(r, t)| (*r, t)).collect();
            hta_breakdown(
                &pairs,
                &HtaOptions {
                    include_last_step: args.include_last_step,
                    no_ns_rounding: args.no_ns_rounding,
                },
            )
        }
    };
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&b).context("could not encode the breakdown")?
        );
    } else {
        print_block(&b.render_text());
    }
    Ok(ExitCode::SUCCESS)
}

/// The HTA breakdown stored by `ddp-probe import kineto` in a run directory, if it has one.
pub fn stored_in_run(paths: &[PathBuf]) -> Option<serde_json::Value> {
    let dir: &Path = match paths {
        [one] => one,
        [] => Path::new("runs/latest"),
        _ => return None,
    };
    let text = std::fs::read_to_string(dir.join(IMPORT_JSON)).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get("hta").cloned()
}

fn stored_breakdown(dir: &Path) -> Result<HtaBreakdown> {
    let path = dir.join(IMPORT_JSON);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not valid JSON", path.display()))?;
    let hta = v
        .get("hta")
        .cloned()
        .with_context(|| format!("{} has no \"hta\" section", path.display()))?;
    serde_json::from_value(hta).with_context(|| {
        format!(
            "{} has an unreadable \"hta\" section; import the traces again",
            path.display()
        )
    })
}
