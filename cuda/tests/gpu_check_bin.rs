//! The `gpu-check` binary where it cannot run: without an NVIDIA driver (CI,
//! laptops) it must print a table row per library saying what is missing,
//! fail with exit status 1 and never panic. On a GPU machine this test is
//! replaced by running `scripts/gpu-check` itself, which it does not try.

use std::process::Command;

use ddp_cuda::{availability, CudaLibrary};

#[test]
fn without_a_driver_gpu_check_names_what_is_missing_and_fails() {
    if availability().get(CudaLibrary::Driver).is_ok() {
        eprintln!(
            "SKIPPED (precondition): this machine has the CUDA driver; scripts/gpu-check is the \
             check to run here"
        );
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-check"))
        .env_remove("WORLD_SIZE")
        .env_remove("DDP_PROBE_TRACE_DIR")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let driver = stdout
        .lines()
        .find(|l| l.starts_with("gpu-check: the CUDA driver loads | FAIL | "))
        .unwrap_or_else(|| panic!("no failed driver row in:\n{stdout}"));
    assert!(driver.contains("libcuda.so.1"), "{driver}");
    // Every library has its row, and the run ends on a failed row that
    // says why it stopped (the driver is required).
    for lib in ["the CUDA driver", "NCCL", "CUPTI", "NVTX"] {
        assert!(
            stdout.contains(&format!("gpu-check: {lib} loads | ")),
            "{lib}: {stdout}"
        );
    }
    let last = stdout.lines().last().unwrap();
    assert!(
        last.starts_with("gpu-check: gpu-check ran to the end | FAIL | ")
            && last.contains("libcuda.so.1"),
        "{last}"
    );
}
