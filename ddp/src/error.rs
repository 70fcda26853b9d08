//! The crate-level error type: every module's error converts into
//! [`DdpError`], so code assembling the pieces can use `?` throughout.

use crate::buckets::BucketError;
use crate::hooks::HookError;
use crate::sampler::SamplerError;

/// Any error of this crate.
#[derive(Debug, thiserror::Error)]
pub enum DdpError {
    /// From [`crate::hooks`].
    #[error(transparent)]
    Hook(#[from] HookError),
    /// From [`crate::buckets`].
    #[error(transparent)]
    Bucket(#[from] BucketError),
    /// From [`crate::sampler`].
    #[error(transparent)]
    Sampler(#[from] SamplerError),
    /// An error libtorch reported through tch.
    #[error("libtorch: {0}")]
    Torch(#[from] tch::TchError),
    /// From [`crate::optim`]: libtorch, or optimizer state that does not fit.
    #[error(transparent)]
    Optim(#[from] crate::optim::OptimError),
    /// A collective failed (a peer died or stalled, a mismatch, a timeout).
    #[error(transparent)]
    Comm(#[from] comm::CommError),
    /// Parameters got no gradient in a synchronised backward without `find_unused_parameters`.
    #[error(
        "these parameters received no gradient in this backward pass: {0}. DDP needs every \
         parameter to take part in producing the loss; if some parameters are legitimately unused \
         in a step, enable find_unused_parameters (DdpOptions::find_unused_parameters(true))"
    )]
    UnusedParameters(String),
    /// The ranks built different models.
    #[error("{0}")]
    ParamMismatch(String),
    /// Something the reference DDP does not support.
    #[error("{0}")]
    Unsupported(String),
    /// From the GPU path ([`crate::cuda`]): a missing library, NCCL, CUPTI or the driver.
    #[cfg(feature = "cuda")]
    #[error(transparent)]
    Cuda(#[from] crate::cuda::CudaError),
    /// A configuration or environment problem.
    #[error("{0}")]
    Config(String),
    /// A checkpoint (or optimizer state) that does not fit what it is loaded into, or is
    /// malformed.
    #[error("checkpoint: {0}")]
    Checkpoint(String),
    /// From [`crate::amp`]: autocast or the loss scaler.
    #[error(transparent)]
    Amp(#[from] crate::amp::AmpError),
    /// A metric helper got values it cannot combine.
    #[error("metric: {0}")]
    Metric(String),
}

/// `Result` with [`DdpError`] as the default error.
pub type Result<T, E = DdpError> = std::result::Result<T, E>;
