//! `ddp-probe summary`, `advise` and `compare`: the analysis of recorded runs, as text or JSON.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use probe::analysis::compare::{environment_changes, SettingChange};
use probe::analysis::{self, summarize, AdviceOptions, SummaryOptions};

use crate::cli::{AnalyzeArgs, CompareArgs};
use crate::commands::load;
use crate::commands::output::{print_block, terminal_width};

/// Prints the step breakdown (and the bucket advice under it).
pub fn summary(args: AnalyzeArgs) -> Result<ExitCode> {
    let (run, caches) = load::run(&args.runs)?;
    let options = SummaryOptions {
        warmup_steps: args.warmup,
        ..SummaryOptions::default()
    };
    let summary = summarize(&run, &options);
    let advice = analysis::advise(
        &run,
        &AdviceOptions {
            summary: options,
            assumed_cost: assumed_cost(&args),
            ..AdviceOptions::default()
        },
    );
    // A run imported from PyTorch profiler traces carries HTA's GPU time breakdown.
    let hta = crate::commands::import::stored_in_run(&args.runs);
    if args.json {
        let mut json = serde_json::json!({
            "schema_version": analysis::JSON_SCHEMA_VERSION,
            "summary": summary,
            "advice": advice,
        });
        if let Some(h) = &hta {
            json["gpu_time_breakdown_hta"] = h.clone();
        }
        println!(
            "{}",
            serde_json::to_string_pretty(&json).context("could not encode the summary")?
        );
    } else {
        let width = terminal_width();
        print_block(&summary.render_text(width));
        println!();
        print_block(&advice.render_text(width));
        if let Some(b) =
            hta.and_then(|h| serde_json::from_value::<probe_kineto::hta::HtaBreakdown>(h).ok())
        {
            println!();
            print_block(&b.render_text());
        }
    }
    load::write_caches(caches, &run);
    Ok(ExitCode::SUCCESS)
}

/// The cost the user stated with `--latency` and `--bandwidth` (clap makes them come together).
fn assumed_cost(args: &AnalyzeArgs) -> Option<analysis::AssumedCost> {
    Some(analysis::AssumedCost {
        latency_ns: args.latency?,
        busbw_bytes_per_s: args.bandwidth?,
    })
}

/// Prints the bucket_cap_mb advice alone.
pub fn advise(args: AnalyzeArgs) -> Result<ExitCode> {
    let (run, caches) = load::run(&args.runs)?;
    let options = AdviceOptions {
        summary: SummaryOptions {
            warmup_steps: args.warmup,
            ..SummaryOptions::default()
        },
        assumed_cost: assumed_cost(&args),
        ..AdviceOptions::default()
    };
    let options = AdviceOptions {
        candidate_caps_mib: if args.candidates.is_empty() {
            options.candidate_caps_mib
        } else {
            args.candidates.clone()
        },
        ..options
    };
    let advice = analysis::advise(&run, &options);
    if args.json {
        let mut json = serde_json::to_value(&advice).context("could not encode the advice")?;
        if let Some(object) = json.as_object_mut() {
            object.insert(
                "schema_version".to_owned(),
                analysis::JSON_SCHEMA_VERSION.into(),
            );
        }
        println!(
            "{}",
            serde_json::to_string_pretty(&json).context("could not encode the advice")?
        );
    } else {
        print_block(&advice.render_text(terminal_width()));
    }
    load::write_caches(caches, &run);
    Ok(ExitCode::SUCCESS)
}

/// Compares a run with a baseline: where the step time changed, and which settings differ.
pub fn compare(args: CompareArgs) -> Result<ExitCode> {
    let options = SummaryOptions {
        warmup_steps: args.warmup,
        ..SummaryOptions::default()
    };
    let (base, base_caches) = load::run(std::slice::from_ref(&args.baseline))
        .with_context(|| format!("the baseline {}", args.baseline.display()))?;
    let (run, run_caches) = load::run(std::slice::from_ref(&args.run))
        .with_context(|| format!("the run {}", args.run.display()))?;
    let (base_summary, run_summary) = (summarize(&base, &options), summarize(&run, &options));
    let mut comparison = analysis::compare((&base, &base_summary), (&run, &run_summary), &options);
    comparison
        .settings
        .extend(env_changes(&args.baseline, &args.run));
    if args.json {
        let json = serde_json::json!({
            "schema_version": analysis::JSON_SCHEMA_VERSION,
            "comparison": comparison,
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&json).context("could not encode the comparison")?
        );
    } else {
        print_block(&comparison.render_text(terminal_width()));
    }
    load::write_caches(base_caches, &base);
    load::write_caches(run_caches, &run);
    Ok(ExitCode::SUCCESS)
}

/// The relevant environment the ranks ran with that differs between two run directories; nothing when either has no manifest.
fn env_changes(a: &Path, b: &Path) -> Vec<SettingChange> {
    let env = |dir: &Path| {
        let dir = probe_launch::resolve_run_dir(Some(dir)).ok()?;
        probe_contract::manifest::read_manifest(&dir)
            .ok()
            .map(|m| m.ranks_environment())
    };
    match (env(a), env(b)) {
        (Some(a), Some(b)) => environment_changes(&a, &b),
        _ => Vec::new(),
    }
}
