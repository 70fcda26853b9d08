//! Finding and loading the runs a report covers.
//!
//! A path may be a run directory written by `ddp-probe run` (with
//! `manifest.json`), a directory with a `traces/` folder, a `traces/` folder
//! or trace file, a runs root with a `latest` link (the newest run), or a
//! folder of run directories (what `ddp-probe scale` and `ddp-probe tune`
//! write), which stands for every run inside it. Directories of different
//! nodes of one multi-node run (same run id, different ranks) are merged
//! into one run. A run whose traces cannot be loaded (a job that died before
//! recording anything) is kept with the error, so its failure can still be
//! explained.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use probe::model::Run;
use probe_contract::manifest::{read_manifest, Manifest};

use crate::error::ReportError;

/// The name of the manifest file in a run directory.
use probe_contract::run_dir::MANIFEST_FILE;

/// One run of a report: its traces, its manifest(s) and what went wrong
/// reading them.
#[derive(Debug, Clone)]
pub struct RunInput {
    /// A short name: the run directory's name.
    pub label: String,
    /// The run directories (several for the nodes of one multi-node run).
    pub dirs: Vec<PathBuf>,
    /// The manifests of the directories that have one.
    pub manifests: Vec<Manifest>,
    /// The loaded traces; `None` when they could not be loaded.
    pub run: Option<Run>,
    /// Why the traces could not be loaded.
    pub load_error: Option<String>,
    /// What the reader worked around (cut-off files, missing ranks...) and
    /// manifests that could not be read.
    pub warnings: Vec<String>,
}

impl RunInput {
    /// The number of ranks: from the traces, else from the manifest.
    pub fn world_size(&self) -> Option<u32> {
        self.run
            .as_ref()
            .map(|r| r.world_size)
            .or_else(|| {
                self.manifests
                    .first()
                    .and_then(|m| u32::try_from(m.world_size).ok())
            })
            .filter(|&n| n > 0)
    }

    /// The program's name: the manifest's program, else a trace header's.
    pub fn program(&self) -> Option<String> {
        if let Some(m) = self.manifests.first() {
            return Some(m.program.clone());
        }
        self.run
            .as_ref()?
            .ranks
            .iter()
            .find_map(|r| r.header.program.clone())
    }

    /// The command's arguments: the manifest's, else rank 0's `argv` minus
    /// the program.
    pub fn args(&self) -> Vec<String> {
        if let Some(m) = self.manifests.first() {
            return m.args.clone();
        }
        self.run
            .as_ref()
            .and_then(|r| r.ranks.iter().find_map(|r| r.header.argv.clone()))
            .map(|a| a.into_iter().skip(1).collect())
            .unwrap_or_default()
    }

    /// The run id: the traces', else the manifest's.
    pub fn run_id(&self) -> Option<String> {
        self.run
            .as_ref()
            .map(|r| r.run_id.clone())
            .or_else(|| self.manifests.first().map(|m| m.run_id.clone()))
    }
}

/// Loads the runs named by `paths` (see the module documentation), in the
/// order given (runs inside a folder by name).
pub fn load_runs(paths: &[PathBuf]) -> Result<Vec<RunInput>, ReportError> {
    if paths.is_empty() {
        return Err(ReportError::NoRuns);
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut seen = BTreeSet::new();
    for p in paths {
        for d in expand(p)? {
            let key = fs::canonicalize(&d).unwrap_or_else(|_| d.clone());
            if seen.insert(key.clone()) {
                dirs.push(key);
            }
        }
    }
    let singles: Vec<RunInput> = dirs
        .iter()
        .map(|d| load_one(std::slice::from_ref(d)))
        .collect();
    Ok(merge_nodes(singles))
}

/// The run locations a path stands for.
fn expand(p: &Path) -> Result<Vec<PathBuf>, ReportError> {
    if fs::symlink_metadata(p).is_err() {
        return Err(ReportError::NotFound {
            path: p.to_path_buf(),
        });
    }
    if p.is_file() {
        if !starts_like_a_trace(p) {
            return Err(ReportError::NotATrace {
                path: p.to_path_buf(),
            });
        }
        return Ok(vec![p.to_path_buf()]);
    }
    if is_run(p) || is_traces_folder(p) {
        return Ok(vec![p.to_path_buf()]);
    }
    if p.is_dir() {
        let latest = p.join(probe_contract::run_dir::LATEST_LINK);
        if let Ok(target) = fs::canonicalize(&latest) {
            if is_run(&target) {
                return Ok(vec![target]);
            }
        }
        let mut children: Vec<PathBuf> = fs::read_dir(p)
            .map_err(|e| ReportError::io("read", p, e))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|c| c.is_dir() && is_run(c))
            .collect();
        children.sort();
        if !children.is_empty() {
            return Ok(children);
        }
    }
    Err(ReportError::NotARun {
        path: p.to_path_buf(),
    })
}

/// Whether the file's first line (up to 64 KiB) is a ddp-probe trace header:
/// a report of a text file was a page saying why "the run" failed.
fn starts_like_a_trace(p: &Path) -> bool {
    use std::io::Read;
    let mut head = Vec::new();
    let read = fs::File::open(p).and_then(|f| f.take(64 << 10).read_to_end(&mut head));
    if read.is_err() {
        // Let the loader report the I/O error with its context.
        return true;
    }
    let first = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let first = String::from_utf8_lossy(first);
    first.contains("\"type\"") && first.contains(probe::trace::FORMAT_NAME)
}

/// Whether `d` is a run directory (a manifest or a `traces/` folder).
fn is_run(d: &Path) -> bool {
    d.join(MANIFEST_FILE).is_file() || d.join(probe::trace::TRACES_DIR).is_dir()
}

/// Whether `d` is a folder of trace files itself.
fn is_traces_folder(d: &Path) -> bool {
    fs::read_dir(d).is_ok_and(|mut it| {
        it.any(|e| {
            e.ok()
                .is_some_and(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        })
    })
}

/// Loads the directories of one run (several nodes are merged by the
/// reader).
fn load_one(dirs: &[PathBuf]) -> RunInput {
    let mut warnings = Vec::new();
    let mut manifests = Vec::new();
    for d in dirs {
        if d.join(MANIFEST_FILE).is_file() {
            match read_manifest(d) {
                Ok(m) => manifests.push(m),
                Err(e) => warnings.push(e.to_string()),
            }
        }
    }
    let (run, load_error) = match probe::reader::load_run(dirs) {
        Ok((run, w)) => {
            warnings.extend(w.iter().map(ToString::to_string));
            (Some(run), None)
        }
        // A launched run whose ranks recorded nothing (a script without `instrument`, or
        // ranks that never reached it) did not fail for that: its manifest says how it went.
        Err(probe::Error::NoTraces { .. }) if !manifests.is_empty() => {
            let notes: Vec<String> = dirs
                .iter()
                .flat_map(|d| probe_contract::run_dir::module_notes(d))
                .collect();
            warnings.push(if notes.is_empty() {
                "no rank recorded a trace: a PyTorch rank records from \
                 `ddp_probe_torch.instrument(model)` on, so the steps are not shown"
                    .to_owned()
            } else {
                format!(
                    "no rank recorded a trace, so the steps are not shown; the ranks' \
                     ddp_probe_torch said: {}",
                    notes.join("; ")
                )
            });
            (None, None)
        }
        Err(e) => (None, Some(e.to_string())),
    };
    let label = dirs
        .first()
        .map(|d| {
            let name = d
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if name == probe::trace::TRACES_DIR {
                d.parent()
                    .and_then(Path::file_name)
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or(name)
            } else {
                name
            }
        })
        .unwrap_or_default();
    RunInput {
        label: if dirs.len() > 1 {
            format!("{label} (+{} nodes)", dirs.len() - 1)
        } else {
            label
        },
        dirs: dirs.to_vec(),
        manifests,
        run,
        load_error,
        warnings,
    }
}

/// Merges loaded runs that are the nodes of one multi-node run: the same run
/// id, disjoint ranks, and together no more ranks than the world size.
fn merge_nodes(singles: Vec<RunInput>) -> Vec<RunInput> {
    let mut out: Vec<RunInput> = Vec::new();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, r) in singles.iter().enumerate() {
        let joinable = |g: &Vec<usize>| {
            let first = &singles[g[0]];
            let (Some(a), Some(b)) = (&first.run, &r.run) else {
                return false;
            };
            if a.run_id != b.run_id || a.world_size != b.world_size {
                return false;
            }
            let taken: BTreeSet<u32> = g
                .iter()
                .filter_map(|&k| singles[k].run.as_ref())
                .flat_map(|run| run.ranks.iter().map(|t| t.rank()))
                .collect();
            b.ranks.iter().all(|t| !taken.contains(&t.rank()))
        };
        match groups.iter_mut().find(|g| joinable(g)) {
            Some(g) => g.push(i),
            None => groups.push(vec![i]),
        }
    }
    let mut singles: Vec<Option<RunInput>> = singles.into_iter().map(Some).collect();
    for g in groups {
        if g.len() == 1 {
            if let Some(r) = singles[g[0]].take() {
                out.push(r);
            }
        } else {
            let dirs: Vec<PathBuf> = g
                .iter()
                .filter_map(|&k| singles[k].as_ref())
                .flat_map(|r| r.dirs.clone())
                .collect();
            out.push(load_one(&dirs));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use probe::synth::{generate_run, SynthConfig};

    #[test]
    fn folders_of_runs_expand_and_bad_paths_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let series = dir.path().join("series");
        for (name, ranks) in [("n1", 1), ("n2", 2)] {
            let mut c = SynthConfig::new(ranks, 4, 2);
            c.run_id = name.to_owned();
            generate_run(&c, &series.join(name)).unwrap();
        }
        let runs = load_runs(std::slice::from_ref(&series)).unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].label, "n1");
        assert_eq!(runs[1].world_size(), Some(2));
        assert!(runs.iter().all(|r| r.run.is_some()));
        assert!(matches!(
            load_runs(&[dir.path().join("nope")]),
            Err(ReportError::NotFound { .. })
        ));
        let empty = dir.path().join("empty");
        fs::create_dir(&empty).unwrap();
        assert!(matches!(
            load_runs(&[empty]),
            Err(ReportError::NotARun { .. })
        ));
        assert!(matches!(load_runs(&[]), Err(ReportError::NoRuns)));
        // A text file is not a run: an error, not a page about a failed run.
        let text = dir.path().join("hello.txt");
        fs::write(&text, "hello world\n").unwrap();
        let err = load_runs(std::slice::from_ref(&text)).unwrap_err();
        assert!(matches!(err, ReportError::NotATrace { .. }), "{err}");
        assert!(err.to_string().contains("ddp-probe explain"), "{err}");
        // A trace file is one.
        let trace = probe::trace::rank_file_path(&dir.path().join("series/n1"), 0);
        assert_eq!(load_runs(&[trace]).unwrap().len(), 1);
    }

    #[test]
    fn nodes_of_one_run_are_merged() {
        let dir = tempfile::tempdir().unwrap();
        let whole = dir.path().join("whole");
        generate_run(&SynthConfig::new(4, 3, 2), &whole).unwrap();
        // Split the ranks over two "node" directories.
        for (node, ranks) in [("node0", [0, 1]), ("node1", [2, 3])] {
            let t = dir.path().join(node).join("traces");
            fs::create_dir_all(&t).unwrap();
            for r in ranks {
                let name = format!("rank-{r}.jsonl");
                fs::copy(whole.join("traces").join(&name), t.join(&name)).unwrap();
            }
        }
        let runs = load_runs(&[dir.path().join("node0"), dir.path().join("node1")]).unwrap();
        assert_eq!(
            runs.len(),
            1,
            "{:?}",
            runs.iter().map(|r| &r.label).collect::<Vec<_>>()
        );
        assert_eq!(runs[0].run.as_ref().unwrap().ranks.len(), 4);
        assert_eq!(runs[0].dirs.len(), 2);
    }

    #[test]
    fn a_launched_run_that_recorded_nothing_is_not_failed_for_it() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("r");
        fs::create_dir_all(run.join("traces")).unwrap();
        // A real manifest of a run that ended ok (the manifest fuzzer's seed).
        fs::copy(
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../fuzz/corpus/manifest/seed-lm-run.json"
            ),
            run.join(MANIFEST_FILE),
        )
        .unwrap();
        let runs = load_runs(&[run]).unwrap();
        assert!(runs[0].run.is_none());
        assert_eq!(runs[0].load_error, None);
        assert!(
            runs[0]
                .warnings
                .iter()
                .any(|w| w.starts_with("no rank recorded a trace")),
            "{:?}",
            runs[0].warnings
        );
    }

    #[test]
    fn a_run_without_traces_is_kept_with_its_error() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("r");
        fs::create_dir_all(run.join("traces")).unwrap();
        let runs = load_runs(&[run]).unwrap();
        assert!(runs[0].run.is_none());
        assert!(runs[0]
            .load_error
            .as_deref()
            .unwrap()
            .contains("no trace files"));
    }
}
