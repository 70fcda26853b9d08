//! Errors of building reports and running series of jobs.

use std::io;
use std::path::PathBuf;

/// Why a report could not be written or a series of runs could not be done.
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

    /// An option of a series (`scale`, `tune`) is unusable.
    #[error("{option}: {message}")]
    InvalidOption {
        /// The option, as on the command line.
        option: &'static str,
        /// What is wrong and what to give instead.
        message: String,
    },

    /// The launcher could not start a run of a series.
    #[error("could not launch {what}: {source}")]
    Launch {
        /// Which run of the series (`"the run with 4 ranks"`).
        what: String,
        /// The launcher's error.
        #[source]
        source: probe_launch::LaunchError,
    },

    /// The user interrupted a series (Ctrl-C); what ran so far was reported.
    #[error(
        "interrupted by {signal} during {what}; the report covers the runs that finished before"
    )]
    Interrupted {
        /// The signal's name.
        signal: String,
        /// Which run was going on.
        what: String,
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
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        ReportError::Io {
            action,
            path: path.into(),
            source,
        }
    }
}
