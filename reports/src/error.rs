//! Errors of loading runs and writing reports.

use std::io;
use std::path::PathBuf;

/// Why runs could not be loaded or a report not written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// No run was given.
    #[error("no run given: name one or more run directories written by `ddp-probe run`")]
    NoRuns,

    /// A path that was given does not exist.
    #[error("{} does not exist; give a run directory written by `ddp-probe run` (or a folder of them)", path.display())]
    NotFound {
        /// The path.
        path: PathBuf,
    },

    /// A directory holds neither a run (a manifest or traces) nor run
    /// directories.
    #[error("{} holds no run: expected manifest.json, a traces/ folder, or run directories inside it", path.display())]
    NotARun {
        /// The directory.
        path: PathBuf,
    },

    /// A file given as a run is not a ddp-probe trace (its first line is
    /// no trace header): a log, a profiler trace, anything else.
    #[error("{} is not a ddp-probe trace (its first line is not a trace header): give a run directory, or a trace file `ddp-probe run` wrote; `ddp-probe explain` reads failure logs, `ddp-probe import kineto` profiler traces", path.display())]
    NotATrace {
        /// The file.
        path: PathBuf,
    },

    /// Reading or writing a file failed.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What was being done (`"write"`, `"create"`, `"read"`).
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },

    /// Encoding JSON failed.
    #[error("could not encode {what} as JSON: {source}")]
    Json {
        /// What was being encoded.
        what: &'static str,
        /// The encoder's error.
        #[source]
        source: serde_json::Error,
    },
}

impl ReportError {
    /// An [`ReportError::Io`] for `action` on `path`.
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        ReportError::Io {
            action,
            path: path.into(),
            source,
        }
    }
}
