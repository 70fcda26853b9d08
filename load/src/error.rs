//! Errors and warnings of loading traces.
//!
//! An [`Error`] stops loading: the input is unusable as it is and the message
//! says what was wrong and what to do. A [`Warning`] is something the reader
//! worked around (a cut-off last line, a newer minor version, a missing
//! rank); the run still loads.

use std::io;
use std::path::PathBuf;

fn list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn ranks(r: &[u32]) -> String {
    r.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

/// ", ... (N in all)" when a list shows fewer than all `count` items.
fn more(count: u64, listed: usize) -> String {
    if count > listed as u64 {
        format!(", ... ({count} in all)")
    } else {
        String::new()
    }
}

/// Why a run could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading a file or listing a directory failed.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },

    /// A path given to the reader does not exist.
    #[error("{} does not exist; pass a run directory (holding traces/rank-<R>.jsonl), its traces/ folder or trace files", path.display())]
    NotFound {
        /// The path.
        path: PathBuf,
    },

    /// A directory holds no trace files.
    #[error("no trace files in {}: expected one file per rank at <run_dir>/traces/rank-<R>.jsonl (any *.jsonl under traces/ is read). Under `ddp-probe run` a PyTorch rank records from `ddp_probe_torch.instrument(model)` on, so ranks that never reached it (or a script without it) leave no trace (`ddp-probe run --auto-instrument` records a script's DDP model with no line in it); `ddp-probe explain` still reads such a run's logs, dumps and Python stacks", list(.paths))]
    NoTraces {
        /// The directories searched.
        paths: Vec<PathBuf>,
    },

    /// Every trace file was cut off before its header.
    #[error("no trace file in {} has a complete header; the processes were probably killed right after they started", list(.paths))]
    NoCompleteTrace {
        /// The files.
        paths: Vec<PathBuf>,
    },

    /// The first record of a file is not a header.
    #[error("{}:{line}: the first record must be the header (\"type\":\"header\") but it is {found}; is this a ddp-probe trace file?", path.display())]
    MissingHeader {
        /// The file.
        path: PathBuf,
        /// Line number (1-based).
        line: u64,
        /// What was found instead.
        found: String,
    },

    /// The header's `format` is not `ddp-probe-trace`.
    #[error("{}:{line}: not a ddp-probe trace: the header's \"format\" is {found}, expected \"ddp-probe-trace\"", path.display())]
    NotATrace {
        /// The file.
        path: PathBuf,
        /// Line number (1-based).
        line: u64,
        /// The format found, quoted, or a description of what is missing.
        found: String,
    },

    /// The file's major version is not the one this build reads.
    #[error("{}: trace format version {found} is not supported: this build reads version {supported} (any {major}.x); open the file with a ddp-probe release that reads version {found}", path.display(), major = crate::trace::VERSION_MAJOR)]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// The version in the file.
        found: String,
        /// The version this build writes.
        supported: String,
    },

    /// The header is not valid.
    #[error("{}:{line}: invalid header: {problem}", path.display())]
    InvalidHeader {
        /// The file.
        path: PathBuf,
        /// Line number (1-based).
        line: u64,
        /// What is wrong.
        problem: String,
    },

    /// A line is longer than the reader's budget allows.
    #[error("{}:{line}: {problem}", path.display())]
    LineTooLong {
        /// The file.
        path: PathBuf,
        /// Line number (1-based).
        line: u64,
        /// The budget's message (its limit and the variable that raises it).
        problem: String,
    },

    /// A line other than the last one is not valid JSON.
    #[error("{}:{line}: corrupt line, not valid JSON: {problem}; only the last line of a trace may be incomplete (when its writer was killed), so this file was damaged after it was written", path.display())]
    CorruptLine {
        /// The file.
        path: PathBuf,
        /// Line number (1-based).
        line: u64,
        /// serde_json's description.
        problem: String,
    },

    /// A record is valid JSON but breaks a rule of the format.
    #[error("{}:{line}: invalid {record} record: {problem}", path.display())]
    InvalidRecord {
        /// The file.
        path: PathBuf,
        /// Line number (1-based).
        line: u64,
        /// The record's type.
        record: String,
        /// What is wrong.
        problem: String,
    },

    /// Files of different runs were given together.
    #[error("the traces belong to different runs: {} has run_id {first_id:?} but {} has run_id {second_id:?}; load one run at a time", first.display(), second.display())]
    MixedRuns {
        /// A file of the first run.
        first: PathBuf,
        /// Its run id.
        first_id: String,
        /// A file of another run.
        second: PathBuf,
        /// Its run id.
        second_id: String,
    },

    /// The headers disagree on the number of ranks.
    #[error("the traces disagree on the world size: {} says {first_size} ranks but {} says {second_size}", first.display(), second.display())]
    WorldSizeMismatch {
        /// A file.
        first: PathBuf,
        /// Its world size.
        first_size: u32,
        /// A file that disagrees.
        second: PathBuf,
        /// Its world size.
        second_size: u32,
    },

    /// Two files claim the same rank.
    #[error("rank {rank} has two traces: {} and {}; pass each node's run directory only once", first.display(), second.display())]
    DuplicateRank {
        /// The rank.
        rank: u32,
        /// The first file.
        first: PathBuf,
        /// The second file.
        second: PathBuf,
    },
}

/// Something the reader worked around; the run still loaded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Warning {
    /// The last line of a file is incomplete (the writer was killed while
    /// writing it); everything before it was loaded.
    #[error("{}:{line}: the last line is cut off (the process was probably killed while writing it); loaded the {records} records before it", path.display())]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Line number of the cut line (1-based).
        line: u64,
        /// Records loaded from the file.
        records: u64,
    },

    /// A file is empty or ends inside its header line; it was skipped.
    #[error("{}: the file is empty or ends before its header line is complete (the process was probably killed right after it started); skipped it", path.display())]
    NoHeader {
        /// The file.
        path: PathBuf,
    },

    /// A file was written by a newer minor version.
    #[error("{}: written with trace format version {found}, newer than this build's {supported}; fields and records this build does not know were ignored", path.display())]
    NewerMinorVersion {
        /// The file.
        path: PathBuf,
        /// Its version.
        found: String,
        /// This build's version.
        supported: String,
    },

    /// Records of a type the reader does not know were skipped.
    #[error("{}: skipped {count} records of unknown type {record:?} (first on line {first_line}); they are probably from a newer version of the format", path.display())]
    UnknownRecordType {
        /// The file.
        path: PathBuf,
        /// The type name.
        record: String,
        /// How many.
        count: u64,
        /// The first one's line.
        first_line: u64,
    },

    /// Spans of an unknown kind were loaded as kind `other`.
    #[error("{}: loaded {count} spans of unknown kind {kind:?} (first on line {first_line}) as kind \"other\"", path.display())]
    UnknownSpanKind {
        /// The file.
        path: PathBuf,
        /// The kind name.
        kind: String,
        /// How many.
        count: u64,
        /// The first one's line.
        first_line: u64,
    },

    /// Lines in the middle of a file were damaged (not JSON, or a record that breaks the
    /// format) and were skipped; the rest of the file loaded. `--strict` refuses such files.
    #[error("{}:{}: skipped {count} damaged line{} ({}{}); the rest of the file was loaded (--strict refuses such files)", path.display(), lines.first().copied().unwrap_or(0), if *count == 1 { "" } else { "s" }, first_problem, later_lines(lines, *count))]
    SkippedLines {
        /// The file.
        path: PathBuf,
        /// How many lines were skipped.
        count: u64,
        /// The first [`SKIPPED_LISTED`] skipped line numbers (1-based).
        lines: Vec<u64>,
        /// What was wrong with the first one.
        first_problem: String,
    },

    /// Some ranks of the run have no trace.
    #[error("run {run_id:?} has {world_size} ranks but no trace of rank {}{}; pass every node's run directory", ranks(.missing), more(*.count, .missing.len()))]
    MissingRanks {
        /// The run.
        run_id: String,
        /// Its world size.
        world_size: u32,
        /// The ranks without a trace (the first [`crate::model::MISSING_LISTED`] of them).
        missing: Vec<u32>,
        /// How many ranks have no trace.
        count: u64,
    },
}

/// How many skipped line numbers a [`Warning::SkippedLines`] lists.
pub const SKIPPED_LISTED: usize = 8;

/// ", also lines 7, 9 and 3 more" after the first skipped line.
fn later_lines(lines: &[u64], count: u64) -> String {
    if lines.len() <= 1 {
        return String::new();
    }
    let listed: Vec<String> = lines[1..].iter().map(u64::to_string).collect();
    let more = count.saturating_sub(lines.len() as u64);
    let tail = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    format!(
        "; also line{} {}{tail}",
        if listed.len() == 1 { "" } else { "s" },
        listed.join(", ")
    )
}
