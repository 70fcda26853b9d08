//! PyTorch profiler (Kineto) traces for ddp-probe.
//!
//! * [`parse`]: a streaming parser of the Chrome-trace JSON files `torch.profiler` /
//!   `tensorboard_trace_handler` write (one per rank, plain or gzipped), keeping the events
//!   the analyses use.
//! * [`import`]: those traces turned into a run directory in trace format v1, which every
//!   command of ddp-probe then reads like its own runs.
//! * [`hta`]: the GPU time breakdown and comm/comp overlap with Holistic Trace Analysis'
//!   definitions (`docs/hta-definitions.md`).
//! * [`fuzzing`]: the `kineto_import` fuzz target's entry point (hidden, not a stable API).

pub mod hta;
pub mod import;
pub mod parse;

#[doc(hidden)]
pub mod fuzzing;

use std::io;
use std::path::PathBuf;

/// Why an import failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// Reading or writing a file failed.
    #[error("cannot read or write {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },
    /// A path given does not exist.
    #[error("{} does not exist; pass PyTorch profiler traces (*.json, *.json.gz) or a folder of them", path.display())]
    NotFound {
        /// The path.
        path: PathBuf,
    },
    /// A folder holds no trace file.
    #[error("no PyTorch profiler trace (*.json or *.json.gz) in {}", path.display())]
    NoTraces {
        /// The folder.
        path: PathBuf,
    },
    /// The file is not JSON, or not valid JSON before its end.
    #[error("{}: not a readable PyTorch profiler trace: {message}; is it a Chrome-trace JSON file written by torch.profiler?", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The parser's message (with line and column).
        message: String,
    },
    /// The file ends before any event.
    #[error("{}: the file ends before its first trace event ({message}); it was probably cut off while the profiler wrote it", path.display())]
    CutOff {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        message: String,
    },
    /// A budget of the reader was reached (see `probe_contract::budget`).
    #[error("{}: {message}", path.display())]
    OverBudget {
        /// The file.
        path: PathBuf,
        /// Which budget, its limit and the variable that raises it.
        message: String,
    },
    /// The JSON is not a Kineto trace.
    #[error("{}: not a PyTorch profiler trace: {why}", path.display())]
    NotKineto {
        /// The file.
        path: PathBuf,
        /// What is missing.
        why: String,
    },
    /// Several files, and one of them does not say its rank.
    #[error("{}: the trace has no distributedInfo.rank, so with several files its rank is unknown; import it alone or use traces written by a distributed job", path.display())]
    NoRank {
        /// The file.
        path: PathBuf,
    },
    /// Two files claim the same rank.
    #[error("{} and {} are both rank {rank}; pass the traces of one job (one file per rank)", first.display(), second.display())]
    DuplicateRank {
        /// The rank.
        rank: u32,
        /// The first file.
        first: PathBuf,
        /// The second file.
        second: PathBuf,
    },
    /// The output directory already holds traces.
    #[error("{} already holds traces; choose a new output directory or remove it first", path.display())]
    OutputExists {
        /// The directory.
        path: PathBuf,
    },
}
