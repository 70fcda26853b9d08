//! The `gpu-check` binary prints a table row per library and never panics.
//! Without an NVIDIA driver (CI, laptops) the driver's row fails naming the
//! file, and the run stops with exit status 1 saying why; with one, the
//! driver's row passes (the full check is `scripts/gpu-check`).

use std::process::Command;

use ddp_cuda::{availability, CudaLibrary};

#[test]
fn gpu_check_names_each_library_and_never_panics() {
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-check"))
        .env_remove("WORLD_SIZE")
        .env_remove("DDP_PROBE_TRACE_DIR")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    // Every library has its row, whatever this machine has.
    for lib in ["the CUDA driver", "NCCL", "CUPTI", "NVTX"] {
        assert!(
            stdout.contains(&format!("gpu-check: {lib} loads | ")),
            "{lib}: {stdout}"
        );
    }
    if availability().get(CudaLibrary::Driver).is_ok() {
        // A GPU machine: the driver row passes and the run goes on to NCCL.
        assert!(
            stdout.contains("gpu-check: the CUDA driver loads | pass | "),
            "{stdout}"
        );
        return;
    }
    // No driver (CI): a failed driver row naming the file, exit status 1,
    // and a last row that says why the check stopped.
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let driver = stdout
        .lines()
        .find(|l| l.starts_with("gpu-check: the CUDA driver loads | FAIL | "))
        .unwrap_or_else(|| panic!("no failed driver row in:\n{stdout}"));
    assert!(driver.contains("libcuda.so.1"), "{driver}");
    let last = stdout.lines().last().unwrap();
    assert!(
        last.starts_with("gpu-check: gpu-check ran to the end | FAIL | ")
            && last.contains("libcuda.so.1"),
        "{last}"
    );
}
