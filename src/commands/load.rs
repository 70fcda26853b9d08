//! Loading the runs named on the command line, shared by every command that reads traces.

use std::path::PathBuf;

use anyhow::Result;
use probe::model::Run;
use probe::reader::{LoadOptions, PendingCaches};

/// `runs/latest`, for a command given no run: when there is none, one message
/// says so and what to do (`what`: what the command takes instead).
pub fn latest_run(what: &str) -> Result<PathBuf> {
    use probe_launch::rundir::{DEFAULT_RUNS_ROOT, LATEST_LINK};
    let latest = std::path::Path::new(DEFAULT_RUNS_ROOT).join(LATEST_LINK);
    if std::fs::symlink_metadata(&latest).is_err() {
        anyhow::bail!(
            "no run given, and no runs/latest here: {what}, or start one with `ddp-probe run`"
        );
    }
    Ok(probe_launch::resolve_run_dir(None)?)
}

/// The run directories given (default: `runs/latest`) loaded into one model; warnings (a rank's
/// trace cut off, ranks missing) go to stderr. The binary caches of the trace files that had to
/// be parsed come back unwritten: a command writes them ([`PendingCaches::write`]) once its
/// answer is out, so that the first look at a run does not wait for what only speeds up the next.
pub fn run(paths: &[PathBuf]) -> Result<(Run, PendingCaches)> {
    let dirs: Vec<PathBuf> = if paths.is_empty() {
        vec![latest_run("name a run directory")?]
    } else {
        paths
            .iter()
            .map(|p| {
                // A directory that holds traces (a run directory without a manifest, e.g. an
                // imported one) or a trace file is read as it is; anything else goes through
                // the run-directory lookup, which also accepts a runs root with `latest`.
                if p.is_file() || p.join(probe::trace::TRACES_DIR).is_dir() {
                    Ok(p.clone())
                } else {
                    probe_launch::resolve_run_dir(Some(p))
                }
            })
            .collect::<Result<_, _>>()?
    };
    let (run, warnings, caches) = probe::reader::load_run_deferred(&dirs, &LoadOptions::default())
        .map_err(|e| with_module_notes(e, &dirs))?;
    for warning in &warnings {
        eprintln!("ddp-probe: warning: {warning}");
    }
    Ok((run, caches))
}

/// A run directory without traces, with what its ranks' module said about why (a model that is
/// not DistributedDataParallel, an optimizer stepping with none built): the loader's error
/// alone cannot know.
fn with_module_notes(e: probe::Error, dirs: &[PathBuf]) -> anyhow::Error {
    if !matches!(e, probe::Error::NoTraces { .. }) {
        return e.into();
    }
    match ranks_said(dirs) {
        Some(said) => anyhow::anyhow!("{e}\n{said}"),
        None => e.into(),
    }
}

/// "the ranks' ddp_probe_torch said:" and each of the run directories' [`module_notes`] on a
/// line of its own, or None when the ranks' module said nothing.
///
/// [`module_notes`]: probe_launch::rundir::module_notes
pub fn ranks_said(dirs: &[PathBuf]) -> Option<String> {
    let notes: Vec<String> = dirs
        .iter()
        .flat_map(|d| probe_launch::rundir::module_notes(d))
        .collect();
    (!notes.is_empty())
        .then(|| format!("the ranks' ddp_probe_torch said:\n  {}", notes.join("\n  ")))
}

/// Writes the caches [`run`] left unwritten, after flushing what the command printed (the answer
/// is shown first).
pub fn write_caches(caches: PendingCaches, run: &Run) {
    if caches.is_empty() {
        return;
    }
    use std::io::Write;
    let _ = std::io::stdout().flush();
    caches.write(run);
}
