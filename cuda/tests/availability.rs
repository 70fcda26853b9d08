//! The GPU path on any machine: `ddp_cuda::availability()` answers without
//! panicking, names what is missing and where it looked, and every entry
//! point turns a missing library into `CudaError::Unavailable` instead of a
//! panic. On a machine without an NVIDIA driver (CI) these are the checks
//! that matter; on a GPU machine the same assertions hold for whatever is
//! installed.

use std::sync::Arc;
use std::time::Duration;

use comm::{StoreClient, StoreServer, Token};
use ddp_cuda::cupti::{KernelTracer, TracerOptions};
use ddp_cuda::nccl::{NcclGroup, NcclOptions};
use ddp_cuda::{availability, nvtx, Availability, CudaError, CudaLibrary};
use probe_contract::recorder::Recorder;

#[test]
fn availability_reports_every_library_without_panicking() {
    let a = availability();
    println!("{a}");
    for lib in CudaLibrary::ALL {
        match a.get(lib) {
            Ok(found) => {
                assert_eq!(found.library, lib);
                assert!(!found.location().is_empty());
            }
            Err(e) => {
                assert_eq!(e.library, lib);
                let text = e.to_string();
                assert!(text.contains("was not found"), "{text}");
                assert!(text.contains(lib.file()), "{text}");
                assert!(text.contains("ddp-probe searched: "), "{text}");
                if lib == CudaLibrary::Driver {
                    assert!(text.contains("libcuda.so.1"), "{text}");
                } else {
                    for name in &e.searched_names {
                        assert!(text.contains(name.as_str()), "{text}");
                    }
                }
            }
        }
    }
    // A fresh probe agrees with the cached one.
    assert_eq!(Availability::probe(), a);
    let required = a.require(&CudaLibrary::ALL);
    assert_eq!(required.is_ok(), a.all_available());
}

#[test]
fn missing_driver_is_reported_by_every_entry_point() {
    let a = availability();
    let Err(missing) = &a.cuda else {
        println!("the CUDA driver is installed here; nothing to check");
        return;
    };
    let text = missing.to_string();
    assert!(
        text.starts_with("The CUDA driver (libcuda.so.1) was not found"),
        "{text}"
    );
    assert!(text.contains("libcuda.so.1"), "{text}");

    let token = Token::generate().unwrap();
    let server = StoreServer::bind("127.0.0.1:0", token.clone()).unwrap();
    let store = StoreClient::connect(server.local_addr(), &token, Duration::from_secs(5)).unwrap();
    let err = NcclGroup::new(0, 1, &store, NcclOptions::default()).unwrap_err();
    match &err {
        CudaError::Unavailable(u) => assert_eq!(u.library, CudaLibrary::Driver),
        other => panic!("expected Unavailable, got {other:?}"),
    }
    assert!(err.to_string().contains("was not found"), "{err}");

    let recorder = Arc::new(Recorder::disabled());
    let err = KernelTracer::start(recorder, TracerOptions::default()).unwrap_err();
    assert!(
        matches!(err, CudaError::Unavailable(ref u) if u.library == CudaLibrary::Driver),
        "{err:?}"
    );

    let err = ddp_cuda::nccl::nccl_version().unwrap_err();
    assert!(matches!(err, CudaError::Unavailable(_)), "{err:?}");
}

#[test]
fn nvtx_ranges_are_safe_whether_or_not_nvtx_loads() {
    assert_eq!(nvtx::is_enabled(), availability().nvtx.is_ok());
    let step = nvtx::range("step");
    {
        let _fwd = nvtx::range("forward");
    }
    let comm = nvtx::start("bucket 0 all_reduce seq 0");
    nvtx::mark("optimizer");
    comm.end();
    step.end();
}

#[test]
fn invalid_arguments_are_refused_before_any_library_call() {
    let token = Token::generate().unwrap();
    let server = StoreServer::bind("127.0.0.1:0", token.clone()).unwrap();
    let store = StoreClient::connect(server.local_addr(), &token, Duration::from_secs(5)).unwrap();
    let err = NcclGroup::new(2, 2, &store, NcclOptions::default()).unwrap_err();
    assert!(
        err.to_string()
            .contains("rank 2 is not in a world of size 2"),
        "{err}"
    );
    let bad_name = NcclOptions {
        name: String::new(),
        ..NcclOptions::default()
    };
    let err = NcclGroup::new(0, 1, &store, bad_name).unwrap_err();
    assert!(matches!(err, CudaError::InvalidArgument(_)), "{err:?}");
    let recorder = Arc::new(Recorder::disabled());
    let tiny = TracerOptions {
        buffer_bytes: 16,
        flush_interval: None,
    };
    let err = KernelTracer::start(recorder, tiny).unwrap_err();
    assert!(matches!(err, CudaError::InvalidArgument(_)), "{err:?}");
}
