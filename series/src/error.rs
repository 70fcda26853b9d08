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

    /// A run of `tune` did not use the cap handed to it: every candidate would run the same
    /// buckets, and comparing them would measure noise.
    #[error(
        "the job did not use the bucket_cap_mb that tune handed it: asked for {asked} MiB \
         (DDP_PROBE_BUCKET_CAP_MB), its DDP recorded {recorded} MiB ({dir}); every candidate \
         would run the same buckets. Read the variable where the script builds DDP, e.g. \
         DistributedDataParallel(model, bucket_cap_mb=float(os.environ.get(\"DDP_PROBE_BUCKET_CAP_MB\", 25)))"
    )]
    CapNotApplied {
        /// The cap tune handed the run (MiB, as printed).
        asked: String,
        /// The cap its trace recorded (MiB, as printed).
        recorded: String,
        /// The run directory.
        dir: String,
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
