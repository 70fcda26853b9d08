//! [`NcclError`]: a failed NCCL call, by its `ncclResult_t`. Apart from
//! the group (`nccl.rs`) so that [`crate::CudaError`] can wrap it without a
//! module cycle.

/// A failed NCCL call, named after its `ncclResult_t` with the meaning the
/// NCCL documentation gives it. `detail` holds NCCL's own description
/// (`ncclGetErrorString`) and last error message (`ncclGetLastError`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NcclError {
    /// `ncclUnhandledCudaError` (1).
    #[error(
        "{call} failed with ncclUnhandledCudaError: a call to a CUDA function failed{}",
        suffix(.detail)
    )]
    UnhandledCudaError {
        /// The NCCL function.
        call: String,
        /// NCCL's description.
        detail: String,
    },
    /// `ncclSystemError` (2).
    #[error(
        "{call} failed with ncclSystemError: a call to the system failed (sockets, memory, \
         shared memory; often a network setting or a resource limit){}",
        suffix(.detail)
    )]
    SystemError {
        /// The NCCL function.
        call: String,
        /// NCCL's description.
        detail: String,
    },
    /// `ncclInternalError` (3).
    #[error(
        "{call} failed with ncclInternalError: an internal check failed, either a bug in NCCL \
         or memory corruption{}",
        suffix(.detail)
    )]
    InternalError {
        /// The NCCL function.
        call: String,
        /// NCCL's description.
        detail: String,
    },
    /// `ncclInvalidArgument` (4).
    #[error(
        "{call} failed with ncclInvalidArgument: one argument has an invalid value{}",
        suffix(.detail)
    )]
    InvalidArgument {
        /// The NCCL function.
        call: String,
        /// NCCL's description.
        detail: String,
    },
    /// `ncclInvalidUsage` (5).
    #[error(
        "{call} failed with ncclInvalidUsage: the call to NCCL is incorrect, usually a \
         programming error{}",
        suffix(.detail)
    )]
    InvalidUsage {
        /// The NCCL function.
        call: String,
        /// NCCL's description.
        detail: String,
    },
    /// `ncclRemoteError` (6).
    #[error(
        "{call} failed with ncclRemoteError: a call failed, possibly because of a network \
         error or a remote process exiting prematurely{}",
        suffix(.detail)
    )]
    RemoteError {
        /// The NCCL function.
        call: String,
        /// NCCL's description.
        detail: String,
    },
    /// `ncclInProgress` (7) where an operation had to be complete.
    #[error(
        "{call} returned ncclInProgress: the operation is still being enqueued and progressed \
         in the background{}",
        suffix(.detail)
    )]
    InProgress {
        /// The NCCL function.
        call: String,
        /// NCCL's description.
        detail: String,
    },
    /// A code this build does not name (a newer NCCL's).
    #[error("{call} failed with NCCL result code {code}{}", suffix(.detail))]
    Other {
        /// The NCCL function.
        call: String,
        /// The raw `ncclResult_t`.
        code: i32,
        /// NCCL's description.
        detail: String,
    },
}

fn suffix(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(" ({detail})")
    }
}

impl NcclError {
    /// The error for result `code` of `call`; `None` for `ncclSuccess`.
    pub fn from_code(
        call: impl Into<String>,
        code: i32,
        detail: impl Into<String>,
    ) -> Option<Self> {
        let call = call.into();
        let detail = detail.into();
        Some(match code {
            0 => return None,
            1 => NcclError::UnhandledCudaError { call, detail },
            2 => NcclError::SystemError { call, detail },
            3 => NcclError::InternalError { call, detail },
            4 => NcclError::InvalidArgument { call, detail },
            5 => NcclError::InvalidUsage { call, detail },
            6 => NcclError::RemoteError { call, detail },
            7 => NcclError::InProgress { call, detail },
            code => NcclError::Other { call, code, detail },
        })
    }

    /// The raw `ncclResult_t`.
    pub fn code(&self) -> i32 {
        match self {
            NcclError::UnhandledCudaError { .. } => 1,
            NcclError::SystemError { .. } => 2,
            NcclError::InternalError { .. } => 3,
            NcclError::InvalidArgument { .. } => 4,
            NcclError::InvalidUsage { .. } => 5,
            NcclError::RemoteError { .. } => 6,
            NcclError::InProgress { .. } => 7,
            NcclError::Other { code, .. } => *code,
        }
    }

    /// The code's name in `nccl.h` (`ncclSystemError`, ...).
    pub fn code_name(&self) -> &'static str {
        match self {
            NcclError::UnhandledCudaError { .. } => "ncclUnhandledCudaError",
            NcclError::SystemError { .. } => "ncclSystemError",
            NcclError::InternalError { .. } => "ncclInternalError",
            NcclError::InvalidArgument { .. } => "ncclInvalidArgument",
            NcclError::InvalidUsage { .. } => "ncclInvalidUsage",
            NcclError::RemoteError { .. } => "ncclRemoteError",
            NcclError::InProgress { .. } => "ncclInProgress",
            NcclError::Other { .. } => "unknown",
        }
    }

    /// The NCCL function that failed.
    pub fn call(&self) -> &str {
        match self {
            NcclError::UnhandledCudaError { call, .. }
            | NcclError::SystemError { call, .. }
            | NcclError::InternalError { call, .. }
            | NcclError::InvalidArgument { call, .. }
            | NcclError::InvalidUsage { call, .. }
            | NcclError::RemoteError { call, .. }
            | NcclError::InProgress { call, .. }
            | NcclError::Other { call, .. } => call,
        }
    }
}
