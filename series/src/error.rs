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

    /// Loading the runs, writing a file or the report failed.
    #[error(transparent)]
    Report(#[from] ReportError),
}

impl SeriesError {
    /// Reading or writing a file of the series failed.
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        SeriesError::Report(ReportError::io(action, path, source))
    }
}
