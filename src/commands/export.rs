//! `ddp-probe export chrome`: a recorded run as Chrome trace-event JSON (Perfetto, chrome://tracing).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::cli::ExportChromeArgs;
use crate::commands::load;

/// Loads the run (warning about anything cut off) and writes its Chrome trace.
pub fn chrome(args: ExportChromeArgs) -> Result<ExitCode> {
    let (run, caches) = load::run(&args.runs)?;
    let mut options = probe::export::chrome::ChromeOptions::default();
    if args.what_if {
        let advice = probe::analysis::advise(&run, &probe::analysis::AdviceOptions::default());
        if advice.schedules.is_empty() {
            eprintln!(
                "no what-if schedules: the advice has no model of this run ({})",
                advice.missing.join("; ")
            );
        }
        options.what_if = advice.schedules;
        // The straggler's median step, as recorded and without its lateness.
        let summary = probe::analysis::summarize(&run, &probe::analysis::SummaryOptions::default());
        if let Some(v) = summary.slowdowns.straggler {
            options.what_if.extend(v.timelines);
        }
    }
    let to_stdout = args.output == Path::new("-");
    if to_stdout {
        let stdout = io::stdout().lock();
        let mut out = BufWriter::with_capacity(1 << 20, stdout);
        probe::export::chrome::write_chrome_trace_with(&run, &mut out, &options)
            .and_then(|()| out.flush())
            .context("could not write the Chrome trace to standard output")?;
    } else {
        let file = File::create(&args.output)
            .with_context(|| format!("could not create {}", args.output.display()))?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        probe::export::chrome::write_chrome_trace_with(&run, &mut out, &options)
            .and_then(|()| out.flush())
            .with_context(|| format!("could not write {}", args.output.display()))?;
        let spans: usize = run
            .ranks
            .iter()
            .map(|r| r.lanes.iter().map(|l| l.spans().len()).sum::<usize>())
            .sum();
        eprintln!(
            "wrote {} ({} ranks, {spans} spans); open it in https://ui.perfetto.dev or chrome://tracing",
            args.output.display(),
            run.ranks.len()
        );
    }
    load::write_caches(caches, &run);
    Ok(ExitCode::SUCCESS)
}
