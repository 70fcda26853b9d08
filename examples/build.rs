//! Build script of the `ddp-examples` crate: adds libtorch's `lib/` folder as
//! an rpath of the example binaries so they run with no `LD_LIBRARY_PATH`,
//! and links libtorch's CUDA library when it has one (see `ddp/build.rs`;
//! `DDP_LINK_TORCH_CUDA=0` skips that).
//!
//! The folder comes from torch-sys's build script (`DEP_TCH_LIBTORCH_LIB`;
//! torch-sys declares `links = "tch"`).

use std::path::PathBuf;
use std::process::ExitCode;

const SETUP_HINT: &str =
    "libtorch was not found: run scripts/setup first (it installs torch==2.13.0 \
into .venv and links .libtorch to it; .cargo/config.toml then sets LIBTORCH)";

fn main() -> ExitCode {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=LIBTORCH");
    println!("cargo:rerun-if-env-changed=DEP_TCH_LIBTORCH_LIB");
    println!("cargo:rerun-if-env-changed=DDP_LINK_TORCH_CUDA");
    let lib = match std::env::var_os("DEP_TCH_LIBTORCH_LIB") {
        Some(v) if !v.is_empty() => PathBuf::from(v),
        _ => {
            let msg = format!("torch-sys did not report a libtorch lib folder (DEP_TCH_LIBTORCH_LIB is unset); {SETUP_HINT}");
            println!("cargo::error={msg}");
            eprintln!("error: {msg}");
            return ExitCode::FAILURE;
        }
    };
    if !lib.join("libtorch_cpu.so").exists() && !lib.join("libtorch_cpu.dylib").exists() {
        let msg = format!(
            "{} holds no libtorch_cpu library; {SETUP_HINT}",
            lib.display()
        );
        println!("cargo::error={msg}");
        eprintln!("error: {msg}");
        return ExitCode::FAILURE;
    }
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
    if lib.join("libtorch_cuda.so").exists()
        && std::env::var("DDP_LINK_TORCH_CUDA").as_deref() != Ok("0")
    {
        println!("cargo:rustc-link-arg=-Wl,--no-as-needed,-ltorch_cuda,--as-needed");
    }
    ExitCode::SUCCESS
}
