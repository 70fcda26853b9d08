//! [`CudaError`], the error of everything in this crate.

use std::time::Duration;

use crate::availability::Unavailable;
use crate::nccl_error::NcclError;

/// Any error of the GPU path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CudaError {
    /// A library the operation needs cannot be loaded on this machine.
    #[error(transparent)]
    Unavailable(#[from] Unavailable),

    /// A CUDA driver call failed.
    #[error("CUDA driver: {call} failed: {message}")]
    Driver {
        /// What was being done.
        call: &'static str,
        /// The driver's error name and description.
        message: String,
    },

    /// An NCCL call failed.
    #[error(transparent)]
    Nccl(#[from] NcclError),

    /// A CUPTI call failed.
    #[error("CUPTI: {call} failed with result {code} ({message})")]
    Cupti {
        /// The CUPTI function.
        call: &'static str,
        /// Its `CUptiResult`.
        code: u32,
        /// CUPTI's description of the code.
        message: String,
    },

    /// The rendezvous through the store failed.
    #[error("NCCL group {group:?}: rendezvous through the store failed: {source}")]
    Store {
        /// The group name.
        group: String,
        /// The store's error.
        #[source]
        source: comm::CommError,
    },

    /// The ranks do not agree (NCCL versions, GPUs, unique id).
    #[error("NCCL group {group:?}: {message}")]
    Mismatch {
        /// The group name.
        group: String,
        /// What differs, naming the ranks.
        message: String,
    },

    /// An argument was out of range or inconsistent; nothing was launched.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// A collective did not finish within the group's timeout; the
    /// communicator was aborted.
    #[error(
        "NCCL group {group:?}: {op} (seq {seq}) did not finish within {}; the communicator was \
         aborted. A peer may have died, stalled, or issued a different collective",
        comm::fmt_duration(*.waited)
    )]
    Timeout {
        /// The group name.
        group: String,
        /// The operation.
        op: &'static str,
        /// Its sequence number.
        seq: u64,
        /// How long it was waited for.
        waited: Duration,
    },

    /// The group failed earlier and cannot run collectives any more.
    #[error("NCCL group {group:?} is unusable after an earlier failure: {reason}")]
    Broken {
        /// The group name.
        group: String,
        /// The first failure.
        reason: String,
    },

    /// A process-wide facility (CUPTI's activity callbacks) is already in use.
    #[error("{0}")]
    AlreadyActive(String),

    /// A panic inside a CUDA library wrapper was caught.
    #[error(
        "a panic was caught inside {context}: {message} (ddp-probe checks that the CUDA \
         libraries load before calling them; please report this)"
    )]
    Panicked {
        /// The entry point.
        context: &'static str,
        /// The panic message.
        message: String,
    },
}

impl CudaError {
    /// A driver error from cudarc.
    pub(crate) fn driver(call: &'static str, e: cudarc::driver::DriverError) -> CudaError {
        let description = e
            .error_string()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|_| "no description".to_owned());
        CudaError::Driver {
            call,
            message: format!("{:?}: {description}", e.0),
        }
    }
}
