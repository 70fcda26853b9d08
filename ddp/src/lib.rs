//! Reference DistributedDataParallel on libtorch (through the `tch` crate).
//!
//! This crate holds the pieces the DDP wrapper is assembled from, each matched
//! against PyTorch 2.13 itself:
//!
//! * [`hooks`]: post-accumulate-grad hooks on parameters (a C++ shim over
//!   libtorch's autograd, the mechanism PyTorch's reducer uses), which tell
//!   the reducer when each gradient is ready;
//! * [`buckets`]: the assignment of parameters to gradient buckets, at
//!   construction and in the one-time rebuild from the observed
//!   gradient-ready order;
//! * [`sampler`]: `DistributedSampler`, including PyTorch's CPU generator and
//!   `randperm`, so every rank sees the indices PyTorch would give it.
//!
//! Binaries linking this crate find libtorch through an rpath its build
//! script adds, so tests run with no `LD_LIBRARY_PATH`.

pub mod amp;
pub mod buckets;
pub mod calibrate;
pub mod checkpoint;
/// The GPU path (feature `cuda`): the `ddp-cuda` crate, which needs no libtorch.
#[cfg(feature = "cuda")]
pub use ddp_cuda as cuda;
pub mod ddp;
pub mod error;
pub mod fault;
pub mod hooks;
pub mod metrics;
#[cfg(feature = "cuda")]
pub mod nccl_tensors;
pub mod optim;
pub mod reducer;
pub mod sampler;

pub use crate::ddp::{
    init_process_group, named_parameters_and_buffers, Ddp, DdpOptions, BUCKET_CAP_ENV,
    BUCKET_CAP_LIST_ENV, COMPRESSION_ENV,
};
pub use buckets::{
    BucketCapConfig, BucketError, DeviceKeyExt, DtypeKeyExt, ParamSpec, ParamSpecExt,
};
pub use error::{DdpError, Result};
pub use hooks::{GradHookHandle, GradHooks, HookError};
pub use optim::{OptimError, Optimizer, OptimizerKind};
pub use reducer::Compression;
pub use sampler::{DistributedSampler, SamplerError};
