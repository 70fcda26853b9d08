//! The GPU path of ddp-probe: NCCL collectives, NVTX ranges and CUPTI
//! kernel tracing, all loaded at run time so the crate builds and runs on
//! machines without CUDA. It links no libtorch: the `ddp` crate re-exports
//! it as `ddp::cuda` (feature `cuda`) and adds collectives on libtorch
//! tensors (`ddp::nccl_tensors`); the `gpu-check` binary (src/bin) runs it
//! on a GPU machine for `scripts/gpu-check`.
//!
//! * [`availability`]: which of the CUDA driver, NCCL, CUPTI and NVTX can be
//!   loaded here, found with `dlopen` **before** anything touches them; an
//!   absent library is an [`Unavailable`] error that says what was searched
//!   and what to install. Every entry point of this module checks it first.
//! * [`nccl`]: [`nccl::NcclGroup`], one NCCL communicator per process on its
//!   GPU (`LOCAL_RANK`), created through the same rendezvous store as the CPU
//!   [`comm::ProcessGroup`], with `all_reduce`, `broadcast`, `all_gather`,
//!   `reduce_scatter` and `barrier` on device buffers, sequence numbers like
//!   comm's, a watchdog timeout, and [`nccl::NcclWorkInfo`] timings.
//! * [`nvtx`]: push/pop and start/end ranges named like the spans of the
//!   trace (`forward`, `bucket 3 all_reduce seq 17`), no-ops without NVTX.
//! * [`cupti`]: [`cupti::KernelTracer`], CUPTI's activity API for kernels,
//!   memory copies and memory sets, converted to the trace clock and recorded
//!   as `kernel`/`memcpy` spans through a [`probe_contract::recorder::Recorder`].
//!
//! # Versions and loading
//!
//! The `cudarc` bindings are built for CUDA 13.0 (`cuda-13000`) and NCCL 2.29
//! (`nccl-02029`): the versions of the `torch==2.13.0` wheel (`+cu130`,
//! `nvidia-nccl-cu13` 2.29) that `scripts/setup` installs. Fixed version
//! features need no CUDA toolkit at build time, and `dynamic-loading` makes
//! cudarc open libraries only when first called.
//!
//! cudarc is used for the driver API (contexts, streams, events, device
//! memory: [`cudarc::driver`]) and for every FFI type (`cudarc::nccl::sys`,
//! `cudarc::cupti::sys`, `cudarc::nvtx::sys`). The NCCL, CUPTI and NVTX
//! *functions* are resolved by this module from the exact library file that
//! [`availability`] found, for two reasons:
//!
//! * cudarc's loader looks for `libnccl.so`, `libnccl.so.<cuda major>`, ...
//!   but never `libnccl.so.2`, the only name the NCCL wheel and the distro
//!   runtime packages ship, and for `libnvToolsExt` but not
//!   `libnvtx3interop.so.1`, which is how the CUDA 13 wheels provide the
//!   NVTX entry points; it also panics when a library is missing.
//! * Result codes are read as plain integers, so a code this build does not
//!   know (a newer NCCL's `ncclTimeout`, say) is reported instead of being
//!   undefined behaviour in a Rust enum.
//!
//! Loaded libraries stay loaded for the life of the process (NCCL and CUPTI
//! run threads of their own). cudarc's driver loader finds `libcuda.so.1`
//! itself; [`availability`] probes exactly the names it tries.
//!
//! As a second line of defence every entry point runs under
//! [`std::panic::catch_unwind`], so a panic inside cudarc becomes
//! [`CudaError::Panicked`] instead of unwinding into the caller (the panic
//! hook still prints it).

pub mod availability;
pub mod cupti;
mod dl;
mod error;
pub mod nccl;
mod nccl_error;
pub mod nvtx;

/// The cudarc this crate is built on (contexts, streams, device memory), so that
/// users of its buffers name the same version.
pub use cudarc;

pub use availability::{availability, Availability, CudaLibrary, Found, Unavailable};
pub use cupti::{KernelTracer, TracerOptions, TracerStats};
pub use error::CudaError;
pub use nccl::{DeviceBuffer, NcclError, NcclGroup, NcclOptions, NcclWorkInfo};

use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `f`, turning a panic into [`CudaError::Panicked`] naming `context`.
pub(crate) fn guarded<T>(
    context: &'static str,
    f: impl FnOnce() -> Result<T, CudaError>,
) -> Result<T, CudaError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(payload) => Err(CudaError::Panicked {
            context,
            message: panic_message(payload.as_ref()),
        }),
    }
}

/// The text of a panic payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-text payload".to_owned()
    }
}

/// Locks `m`, ignoring poisoning (every critical section here leaves the
/// state consistent).
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn handles_can_be_shared_between_threads() {
        assert_send_sync::<NcclGroup>();
        assert_send_sync::<KernelTracer>();
        assert_send_sync::<nvtx::StartedRange>();
        assert_send_sync::<CudaError>();
    }

    #[test]
    fn panics_become_errors() {
        let r: Result<(), CudaError> = guarded("a test", || panic!("boom {}", 7));
        match r {
            Err(CudaError::Panicked { context, message }) => {
                assert_eq!(context, "a test");
                assert_eq!(message, "boom 7");
            }
            other => panic!("unexpected {other:?}"),
        }
        let ok: Result<u32, CudaError> = guarded("fine", || Ok(3));
        assert_eq!(ok.unwrap(), 3);
    }
}
