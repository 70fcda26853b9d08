//! Why did the job die or hang? The diagnosis engine behind
//! `ddp-probe explain RUN|LOGFILE... [--json]`.
//!
//! [`explain`] reads run directories written by `ddp-probe run`
//! (`manifest.json`, `logs/rank-R.stdout|stderr`, `logs/nccl-rankR.log`,
//! `traces/rank-R.jsonl`) and plain log files (a torchrun console log, an
//! NCCL debug file, a saved stderr), and returns a [`Report`]: findings, each
//! with a [`Category`], the ranks involved, a plain-language explanation, the
//! evidence lines (file:line and sanitised text) and the fix to try, ordered
//! with the likely root cause first.
//!
//! How it works:
//!
//! 1. Every log line goes through a table of patterns (module `rules`): NCCL
//!    `WARN` messages and error codes, PyTorch and torchelastic error text,
//!    and the reference DDP's own messages. Python tracebacks whose
//!    exception no pattern explains count as a crash of that rank. NCCL
//!    `INFO` lines are read for a one-line summary per communicator (module
//!    `nccl`).
//! 2. The manifest adds how each rank ended (a `SIGKILL` without any error
//!    output is most likely the host's OOM killer), the first failure and the
//!    launcher's hang report; the traces add, per rank, the last completed
//!    collective and the one it waits in, so a hang names the rank that is
//!    behind.
//! 3. Observations are grouped by category; generic ones (an NCCL error code,
//!    an exit code, "Fatal Python error") support a more specific finding of
//!    the same rank when there is one. Findings are ranked: causes before
//!    symptoms before consequences, then the first failing rank, the rank
//!    that ended earliest, the category's specificity, and the order seen.
//!
//! Hostile input is expected: files are streamed line by line with a cap on
//! line length, huge files are read only at their start and end, invalid
//! UTF-8 is decoded lossily, and every string from an input is sanitised
//! (control characters escaped) before it reaches the report.
//!
//! ```no_run
//! use std::path::PathBuf;
//! let report = probe_explain::explain(&[PathBuf::from("runs/latest")])?;
//! print!("{}", report.render_text(100));
//! # Ok::<(), probe_explain::Error>(())
//! ```

mod category;
mod correlate;
mod desync_snapshot;
mod error;
mod flight_recorder;
#[doc(hidden)]
pub mod fuzzing;
mod lines;
mod manifest;
mod nccl;
mod pickle;
mod process_waits;
mod python_stack;
mod record_prefix;
mod report;
mod rules;
mod sanitize;
mod scan;
mod shape;
mod signal;
mod tool_output;
mod traces;

use std::collections::HashSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

pub use category::Category;
pub use error::Error;
pub use report::{
    AttemptFact, CommSummary, Confidence, Evidence, Finding, RankEndFact, RankStack, Report, Role,
    RunFacts, SCHEMA_VERSION,
};
pub use sanitize::sanitize;

use lines::{for_each_line, for_each_line_in, ReadLimits, ReadSummary};
use manifest::{LoadedManifest, MANIFEST_FILE};
use nccl::NcclCollector;
use sanitize::display_path;
use scan::{FileScan, PasteProbe, Scanner};
use signal::Signal;
use traces::RankProgress;

/// Limits of a diagnosis; [`Options::default`] suits real runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Bytes read from the start of a log larger than `head_bytes +
    /// tail_bytes` (default 8 MiB).
    pub head_bytes: u64,
    /// Bytes read from the end of such a log (default 56 MiB).
    pub tail_bytes: u64,
    /// Longest line kept, in bytes; longer lines are cut (default 64 KiB).
    pub max_line_bytes: usize,
    /// Evidence lines shown per finding (default 8).
    pub max_evidence: usize,
    /// Log files read in all (default 2000).
    pub max_files: usize,
    /// Total trace size loaded with the full reader; above it only the end
    /// of each trace is read (default 512 MiB).
    pub max_trace_bytes: u64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            head_bytes: 8 << 20,
            tail_bytes: 56 << 20,
            max_line_bytes: 64 << 10,
            max_evidence: 8,
            max_files: 2000,
            max_trace_bytes: 512 << 20,
        }
    }
}

/// Diagnoses run directories and log files with the default [`Options`].
///
/// Each input may be a run directory (with `manifest.json`), a directory of
/// logs (its files and those of its `logs/` folder are read, and its
/// `traces/`), a log file, or a trace file (`*.jsonl`).
pub fn explain(inputs: &[PathBuf]) -> Result<Report, Error> {
    explain_with(inputs, &Options::default())
}

/// Diagnoses one log held in memory as if it had been read from a file
/// named `name` (shown in the evidence; a name such as `rank-3.stderr` also
/// gives the rank), with the same limits as a file.
///
/// Any bytes are accepted: invalid UTF-8 is decoded lossily and every
/// string in the report is sanitised. A log with nothing recognisable gives
/// a report without findings, or with an `unknown` one.
pub fn explain_log_bytes(name: &str, bytes: &[u8], opts: &Options) -> Report {
    let path = PathBuf::from(name);
    let display = display_path(&path);
    let mut g = Gathered {
        inputs: vec![display.clone()],
        ..Gathered::default()
    };
    let len = bytes.len() as u64;
    scan_lines(display, rank_from_name(&path), opts, &mut g, |limits, f| {
        for_each_line_in(io::Cursor::new(bytes), len, limits, f)
    });
    correlate::build(g, opts)
}

/// Everything read from the inputs, before correlation.
#[derive(Debug, Default)]
pub(crate) struct Gathered {
    /// The inputs for display.
    pub inputs: Vec<String>,
    /// The manifests read.
    pub manifests: Vec<LoadedManifest>,
    /// Observations from the logs.
    pub signals: Vec<Signal>,
    /// NCCL set-up facts.
    pub nccl: NcclCollector,
    /// Whole-log shapes.
    pub shape: shape::LogShape,
    /// Per-file scan results.
    pub scans: Vec<FileScan>,
    /// Trace progress per rank.
    pub progress: Vec<RankProgress>,
    /// The first collective the ranks of one process group called differently, from the
    /// traces ([`traces::TraceFacts::different_call`]).
    pub different_call: Option<Vec<traces::RankCall>>,
    /// PyTorch flight-recorder dumps found, with their rank.
    pub flight_recorder: Vec<(PathBuf, usize)>,
    /// The Python stacks the PyTorch module wrote when the hang watchdog asked.
    pub python_stacks: Vec<python_stack::PyStack>,
    /// The ranks' process trees the launcher wrote when it stopped the run.
    pub rank_processes: Vec<process_waits::RankProcesses>,
    /// Things worked around.
    pub notes: Vec<String>,
    /// Observation counter.
    pub order: u64,
}

/// A log file to read and the rank it belongs to.
struct Source {
    path: PathBuf,
    rank: Option<usize>,
}

/// Diagnoses run directories and log files (see [`explain`]).
pub fn explain_with(inputs: &[PathBuf], opts: &Options) -> Result<Report, Error> {
    if inputs.is_empty() {
        return Err(Error::NoInputs);
    }
    let mut g = Gathered {
        inputs: inputs.iter().map(|p| display_path(p)).collect(),
        ..Gathered::default()
    };
    let mut sources: Vec<Source> = Vec::new();
    let mut trace_inputs: Vec<PathBuf> = Vec::new();
    let mut seen_inputs: HashSet<PathBuf> = HashSet::new();
    // Run directories given, whose earlier attempts (`attempts/<n>/`) are explained too.
    let mut run_dirs: Vec<PathBuf> = Vec::new();
    for input in inputs {
        let meta = fs::metadata(input).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => Error::NotFound {
                path: input.clone(),
            },
            _ => Error::Io {
                path: input.clone(),
                source: e,
            },
        })?;
        if !seen_inputs.insert(fs::canonicalize(input).unwrap_or_else(|_| input.clone())) {
            continue;
        }
        if meta.is_dir() {
            if input.join(MANIFEST_FILE).is_file() {
                run_dirs.push(input.clone());
            }
            gather_dir(input, &mut g, &mut sources, &mut trace_inputs);
        } else if input.extension().is_some_and(|e| e == "jsonl") {
            trace_inputs.push(input.clone());
        } else if let Some(stack) =
            python_stack::rank_of(input).and_then(|_| python_stack::read(input))
        {
            g.python_stacks.push(stack);
        } else if process_waits::is_processes_file(input) {
            g.rank_processes.extend(process_waits::read(input));
        } else if let Some(rank) = flight_recorder::is_dump_name(input)
            .then(|| flight_recorder::rank_of(input))
            .flatten()
        {
            g.flight_recorder.push((input.clone(), rank));
        } else {
            sources.push(Source {
                path: input.clone(),
                rank: rank_from_name(input),
            });
        }
    }
    let mut read_any = !g.manifests.is_empty();
    for t in &trace_inputs {
        let facts = traces::read(t, opts.max_trace_bytes);
        read_any |= !facts.progress.is_empty();
        merge_progress(&mut g.progress, facts.progress);
        g.different_call = g.different_call.take().or(facts.different_call);
        g.notes.extend(facts.notes);
    }
    let mut seen: HashSet<PathBuf> = HashSet::new();
    let mut skipped_files = 0usize;
    for src in sources {
        let key = fs::canonicalize(&src.path).unwrap_or_else(|_| src.path.clone());
        if !seen.insert(key) {
            continue;
        }
        if seen.len() > opts.max_files {
            skipped_files += 1;
            continue;
        }
        read_any |= scan_source(&src, opts, &mut g);
    }
    if !g.flight_recorder.is_empty() {
        let (dumps, notes) = flight_recorder::read_all(&g.flight_recorder);
        read_any |= !dumps.is_empty();
        g.notes.extend(notes);
        let signals = flight_recorder::signals(&dumps, &mut g.order);
        g.signals.extend(signals);
    }
    if skipped_files > 0 {
        g.notes.push(format!(
            "read only the first {} log files; {skipped_files} more were skipped",
            opts.max_files
        ));
    }
    if !read_any {
        return Err(Error::NothingToRead {
            paths: inputs.to_vec(),
        });
    }
    // What each rank's processes were doing where its stack alone does not say (its DataLoader
    // workers, its own process in uninterruptible I/O).
    // The rank's own list, unless another holds the stack's process and it does not (a rank
    // `torch.multiprocessing.spawn` started is in its launched process's list).
    for st in &mut g.python_stacks {
        let holds = |p: &&process_waits::RankProcesses| {
            st.pid
                .is_some_and(|pid| p.processes.iter().any(|q| q.pid == pid))
        };
        let own = g.rank_processes.iter().find(|p| p.rank == st.rank);
        let procs = own
            .filter(|p| st.pid.is_none() || holds(p))
            .or_else(|| g.rank_processes.iter().find(holds))
            .or(own);
        st.process_wait = process_waits::process_wait(st, procs);
    }
    let mut report = correlate::build(g, opts);
    add_earlier_attempts(&mut report, &run_dirs, opts);
    Ok(report)
}

/// For the run directory of a run that may restart its workers
/// (`--max-restarts`): which attempt its top level holds and how the earlier
/// ones ended, from its manifest, e.g. `attempt 2 of 3 (attempt 1: rank 1
/// exited with code 3)`. None for a run that may not restart, or whose
/// manifest cannot be read.
pub fn attempt_line(run_dir: &Path) -> Option<String> {
    let m = LoadedManifest::load(run_dir).ok()?.manifest;
    let mut line = m.attempt_text()?;
    let ended: Vec<String> = m
        .attempts
        .iter()
        .filter_map(|a| {
            let f = a.first_failure.as_ref()?;
            Some(format!(
                "attempt {}: rank {} {}",
                u64::from(a.restart_count) + 1,
                f.rank,
                manifest::describe(&f.termination)
            ))
        })
        .collect();
    if !ended.is_empty() {
        line.push_str(&format!(" ({})", ended.join("; ")));
    }
    Some(line)
}

/// Explains each earlier attempt of the run directories `run_dirs` (the
/// `attempts/<n>/` that `ddp-probe run --max-restarts` keeps, each a run
/// directory of its own) into `report.attempts`, in order. When the last
/// attempt shows no problem, the headline names the first failed attempt's
/// cause: it is why the run was restarted.
fn add_earlier_attempts(report: &mut Report, run_dirs: &[PathBuf], opts: &Options) {
    for dir in run_dirs {
        let Ok(entries) = fs::read_dir(dir.join("attempts")) else {
            continue;
        };
        let mut kept: Vec<(u32, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                let n = e.file_name().to_str()?.parse::<u32>().ok()?;
                let path = e.path();
                path.join(MANIFEST_FILE).is_file().then_some((n, path))
            })
            .collect();
        kept.sort();
        for (n, path) in kept {
            let fact = match explain_with(std::slice::from_ref(&path), opts) {
                Ok(r) => AttemptFact {
                    attempt: n + 1,
                    dir: display_path(&path),
                    status: r.run.and_then(|f| f.status),
                    headline: r.headline,
                    category: r.findings.first().map(|f| f.category),
                },
                Err(e) => AttemptFact {
                    attempt: n + 1,
                    dir: display_path(&path),
                    status: None,
                    headline: sanitize(&format!("could not be read: {e}"), 400),
                    category: None,
                },
            };
            report.attempts.push(fact);
        }
    }
    let failed = report
        .attempts
        .iter()
        .find(|a| a.status.as_deref() != Some("ok"));
    if let (true, Some(a)) = (report.findings.is_empty(), failed) {
        let restarts = report.attempts.len();
        report.headline = format!(
            "finished after {restarts} restart{}; attempt {} failed; {}",
            if restarts == 1 { "" } else { "s" },
            a.attempt,
            a.headline
        );
    }
}

/// Collects what a directory holds: a run directory's manifest, logs and
/// traces, or the log files of a plain directory.
fn gather_dir(
    dir: &Path,
    g: &mut Gathered,
    sources: &mut Vec<Source>,
    trace_inputs: &mut Vec<PathBuf>,
) {
    let mut listed: HashSet<PathBuf> = HashSet::new();
    let mut logs_dir = dir.join("logs");
    let mut traces_dir = dir.to_path_buf();
    if dir.join(MANIFEST_FILE).is_file() {
        match LoadedManifest::load(dir) {
            Ok(m) => {
                for (path, rank) in m.rank_files() {
                    if path.is_file() {
                        listed.insert(path.clone());
                        sources.push(Source {
                            path,
                            rank: Some(rank),
                        });
                    }
                }
                logs_dir = m.logs_dir();
                let t = m.traces_dir();
                if t.is_dir() {
                    traces_dir = t;
                }
                g.manifests.push(m);
            }
            Err(note) => g.notes.push(note),
        }
    }
    for folder in [dir.to_path_buf(), logs_dir] {
        for path in flight_recorder_files_in(&folder) {
            if let Some(rank) = flight_recorder::rank_of(&path) {
                if !g.flight_recorder.iter().any(|(p, _)| p == &path) {
                    g.flight_recorder.push((path, rank));
                }
            }
        }
        for path in python_stack_files_in(&folder) {
            if !g.python_stacks.iter().any(|s| s.path == path) {
                g.python_stacks.extend(python_stack::read(&path));
            }
        }
        for path in files_in(&folder, process_waits::is_processes_file) {
            if !g.rank_processes.iter().any(|p| p.path == path) {
                g.rank_processes.extend(process_waits::read(&path));
            }
        }
        for path in log_files_in(&folder) {
            if listed.insert(path.clone()) {
                let rank = rank_from_name(&path);
                sources.push(Source { path, rank });
            }
        }
    }
    if !g.manifests.is_empty() || dir.join(probe_contract::run_dir::TRACES_DIR).is_dir() {
        trace_inputs.push(traces_dir);
    }
}

/// The regular files of `dir` that `keep` accepts, sorted.
fn files_in(dir: &Path, keep: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .filter(|p| keep(p))
        .collect();
    out.sort();
    out
}

/// The regular files of `dir` that can be logs, by name: not traces,
/// manifests, flight-recorder dumps, Python stacks, process lists, archives, or reports and
/// images (`ddp-probe report -o RUN/report.html`, as `ddp-probe run` suggests).
fn log_files_in(dir: &Path) -> Vec<PathBuf> {
    files_in(dir, |p| {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        !(name == MANIFEST_FILE
            || name.starts_with('.')
            || name.starts_with("nccl_trace_rank_")
            || name.starts_with(python_stack::FILE_PREFIX)
            || name.starts_with(probe_contract::processes::FILE_PREFIX)
            || [
                ".jsonl", ".pkl", ".pickle", ".gz", ".zip", ".tar", ".pt", ".bin", ".html", ".htm",
                ".png", ".jpg", ".svg",
            ]
            .iter()
            .any(|ext| name.ends_with(ext)))
    })
}

/// The PyTorch module's Python stacks in `dir` (`python-stack-rank-<R>.txt`).
fn python_stack_files_in(dir: &Path) -> Vec<PathBuf> {
    files_in(dir, |p| python_stack::rank_of(p).is_some())
}

/// PyTorch flight-recorder dumps in `dir` (`nccl_trace_rank_<R>`, the
/// prefix `ddp-probe run` and PyTorch's default writer use).
fn flight_recorder_files_in(dir: &Path) -> Vec<PathBuf> {
    files_in(dir, flight_recorder::is_dump_name)
}

/// The rank in a file name: `rank-1.stderr`, `nccl-rank3.log`,
/// `error-rank0.json`, `rank_2.log`.
fn rank_from_name(path: &Path) -> Option<usize> {
    let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = name[from..].find("rank") {
        let rest = name[from + i + 4..].trim_start_matches(['-', '_', '.']);
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if !digits.is_empty() {
            return digits.parse().ok();
        }
        from += i + 4;
    }
    None
}

fn merge_progress(into: &mut Vec<RankProgress>, more: Vec<RankProgress>) {
    for p in more {
        if !into.iter().any(|q| q.rank == p.rank) {
            into.push(p);
        }
    }
}

/// Reads one log file; returns whether it could be read.
fn scan_source(src: &Source, opts: &Options, g: &mut Gathered) -> bool {
    let display = display_path(&src.path);
    if let Some(text) = torchelastic_error_text(&src.path) {
        let mut probe = PasteProbe::default();
        text.lines().for_each(|line| probe.line(line));
        let mut scanner = Scanner::new(display, src.rank, &mut g.nccl, &mut g.shape, &mut g.order);
        scanner.read_as_pasted(&probe);
        for line in text.lines() {
            scanner.line(None, line);
        }
        let mut scan = scanner.finish();
        g.signals.append(&mut scan.signals);
        g.scans.push(scan);
        return true;
    }
    scan_lines(display, src.rank, opts, g, |limits, f| {
        for_each_line(&src.path, limits, f)
    })
}

/// Scans the lines `read` hands out (it gets the limits and the callback)
/// for the log shown as `display`; false when it could not be read.
fn scan_lines(
    display: String,
    rank: Option<usize>,
    opts: &Options,
    g: &mut Gathered,
    read: impl Fn(&ReadLimits, &mut dyn FnMut(Option<u64>, &str)) -> io::Result<ReadSummary>,
) -> bool {
    let limits = ReadLimits {
        head_bytes: opts.head_bytes,
        tail_bytes: opts.tail_bytes,
        max_line_bytes: opts.max_line_bytes,
    };
    // A first pass finds how the log was pasted (hard-wrapped, indented); an error shows in
    // the second.
    let mut probe = PasteProbe::default();
    let _ = read(&limits, &mut |_, t| probe.line(t));
    let mut scanner = Scanner::new(
        display.clone(),
        rank,
        &mut g.nccl,
        &mut g.shape,
        &mut g.order,
    );
    scanner.read_as_pasted(&probe);
    let result = if probe.newest_first() {
        // Read oldest first, as it was written: the lines are kept (within the limits) and fed
        // back to front, numbered in that order (what comes after what is read from the
        // numbers).
        let mut lines: Vec<(Option<u64>, String)> = Vec::new();
        let result = read(&limits, &mut |n, t| lines.push((n, t.to_owned())));
        for (k, (n, t)) in lines.iter().rev().enumerate() {
            scanner.line(n.map(|_| k as u64 + 1), t);
        }
        g.notes.push(format!(
            "{display}'s time stamps run newest first (a log viewer's order): it was read oldest \
             first, and its line numbers here count from its last line"
        ));
        result
    } else {
        read(&limits, &mut |n, t| scanner.line(n, t))
    };
    let mut scan = scanner.finish();
    match result {
        Ok(summary) => {
            if let Some((a, b)) = summary.skipped {
                g.notes.push(format!(
                    "{display} is {} bytes: read its first {a} and last {} bytes only (lines from the end part have no line number)",
                    summary.file_bytes,
                    summary.file_bytes - b
                ));
            }
            if summary.cut_lines > 0 {
                g.notes.push(format!(
                    "{display}: {} lines longer than {} bytes were cut",
                    summary.cut_lines, opts.max_line_bytes
                ));
            }
            g.signals.append(&mut scan.signals);
            g.scans.push(scan);
            true
        }
        Err(e) => {
            g.notes.push(format!("cannot read {display}: {e}"));
            false
        }
    }
}

/// The message and Python call stack of a torchelastic error file
/// (`{"message": {"message": ..., "extraInfo": {"py_callstack": ...}}}`),
/// when `path` is one.
fn torchelastic_error_text(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
    if !name.ends_with(".json") {
        return None;
    }
    let meta = fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > 16 << 20 {
        return None;
    }
    let bytes = fs::read(path).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let message = v.get("message")?;
    let mut text = String::new();
    match message {
        serde_json::Value::String(s) => text.push_str(s),
        serde_json::Value::Object(o) => {
            if let Some(s) = o.get("message").and_then(|m| m.as_str()) {
                text.push_str(s);
            }
            if let Some(s) = o
                .get("extraInfo")
                .and_then(|e| e.get("py_callstack"))
                .and_then(|m| m.as_str())
            {
                text.push('\n');
                text.push_str(s);
            }
        }
        _ => return None,
    }
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_come_from_file_names() {
        assert_eq!(rank_from_name(Path::new("logs/rank-1.stderr")), Some(1));
        assert_eq!(rank_from_name(Path::new("nccl-rank12.log")), Some(12));
        assert_eq!(rank_from_name(Path::new("error-rank0.json")), Some(0));
        assert_eq!(rank_from_name(Path::new("train.log")), None);
        assert_eq!(rank_from_name(Path::new("ranking_rank_3.txt")), Some(3));
    }

    #[test]
    fn missing_and_empty_inputs_are_errors() {
        assert!(matches!(explain(&[]), Err(Error::NoInputs)));
        let err = explain(&[PathBuf::from("/nonexistent/ddp-probe/x")]).unwrap_err();
        assert!(matches!(err, Error::NotFound { .. }));
        let dir = tempfile::tempdir().unwrap();
        let err = explain(&[dir.path().to_path_buf()]).unwrap_err();
        assert!(matches!(err, Error::NothingToRead { .. }), "{err}");
    }
}
