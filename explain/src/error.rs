//! Why a diagnosis could not be made at all.
//!
//! Problems with single files (unreadable, not a regular file, a damaged
//! manifest or trace) do not stop a diagnosis: they become notes in the
//! report. An [`Error`] means there was nothing to diagnose.

use std::io;
use std::path::PathBuf;

use crate::sanitize::display_path;

fn list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| display_path(p))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why [`crate::explain`] could not produce a report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No input was given.
    #[error("nothing to explain: pass a run directory written by `ddp-probe run` or log files")]
    NoInputs,

    /// An input does not exist.
    #[error("{} does not exist; pass a run directory (holding manifest.json) or log files", display_path(.path))]
    NotFound {
        /// The input.
        path: PathBuf,
    },

    /// An input exists but could not be inspected.
    #[error("cannot read {}: {source}", display_path(.path))]
    Io {
        /// The input.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },

    /// None of the inputs held anything readable.
    #[error("nothing readable in {}: expected a run directory (manifest.json, logs/, traces/) or regular log files", list(.paths))]
    NothingToRead {
        /// The inputs.
        paths: Vec<PathBuf>,
    },
}
