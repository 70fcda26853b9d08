//! [`SeriesError`]: why a series of runs (`scale`, `tune`) could not be done.

use std::io;
use std::path::PathBuf;

use probe_reports::ReportError;

/// Why a series of runs could not be done, or its report not written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SeriesError {
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

    /// Reading or writing a file of the series failed.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What was being done (`"write"`, `"create"`).
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

    /// Loading the runs or writing the report failed.
    #[error(transparent)]
    Report(#[from] ReportError),
}

impl SeriesError {
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        SeriesError::Io {
            action,
            path: path.into(),
            source,
        }
    }
}
