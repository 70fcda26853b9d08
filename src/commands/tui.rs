//! `ddp-probe tui`: the interactive terminal timeline of a recorded run, or of one being recorded
//! (`--live`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use probe_launch::RunStatus;

use crate::cli::TuiArgs;
use crate::commands::load;

/// Shows the runs until the user quits.
pub fn tui(args: TuiArgs) -> Result<ExitCode> {
    let options = probe_tui::Options { ascii: args.ascii };
    if args.live {
        let dir = match args.runs.as_slice() {
            [] => super::load::latest_run("name the run directory to watch")?,
            // A directory that does not exist yet is waited for.
            [one] if one.is_dir() || !one.exists() => one.clone(),
            [one] => probe_launch::resolve_run_dir(Some(one))?,
            _ => bail!("--live watches one run directory; give just one"),
        };
        probe_tui::live(&dir, || finished(&dir), &options)
            .context("the terminal timeline failed")?;
        return Ok(ExitCode::SUCCESS);
    }
    let (run, caches) = load::run(&args.runs)?;
    // The timeline takes the run: its caches are written before it opens.
    load::write_caches(caches, &run);
    // What the explain panel reads: the run directories, resolved as for loading.
    let sources: Vec<PathBuf> = if args.runs.is_empty() {
        probe_launch::resolve_run_dir(None).into_iter().collect()
    } else {
        args.runs
            .into_iter()
            .map(|p| {
                if p.is_file() || p.join(probe::trace::TRACES_DIR).is_dir() {
                    p
                } else {
                    probe_launch::resolve_run_dir(Some(&p)).unwrap_or(p)
                }
            })
            .collect()
    };
    probe_tui::view(run, sources, &options).context("the terminal timeline failed")?;
    Ok(ExitCode::SUCCESS)
}

/// Whether the launcher has finished the run in `dir` (its manifest says so); a directory
/// without a manifest is never finished.
fn finished(dir: &Path) -> bool {
    probe_launch::read_manifest(dir).is_ok_and(|m| m.status != RunStatus::Running)
}
