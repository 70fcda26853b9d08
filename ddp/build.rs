//! Build script of the `ddp` crate.
//!
//! * Adds libtorch's `lib/` folder as an rpath of every binary this package
//!   links (tests, examples, benches), so they run with no `LD_LIBRARY_PATH`.
//! * When libtorch has CUDA (`libtorch_cuda.so`, as the default PyPI wheel
//!   does), links it with `--no-as-needed`: torch-sys asks for it, but nothing
//!   references its symbols, so the linker would drop it and
//!   `tch::Cuda::is_available()` would say false on a GPU machine. Set
//!   `DDP_LINK_TORCH_CUDA=0` to skip this (CPU-only binaries then start about
//!   half a second faster).
//! * Compiles the C++ shims against libtorch's headers: `csrc/hooks.cpp`
//!   (post-accumulate-grad hooks on parameters), `csrc/rng.cpp` (get/set of
//!   the default generators' states, for checkpoints) and `csrc/amp.cpp`
//!   (autocast enter/exit for any device type).
//!
//! The libtorch location comes from `torch-sys`, whose build script publishes
//! it as `DEP_TCH_LIBTORCH_LIB` (torch-sys declares `links = "tch"`). In this
//! workspace torch-sys finds libtorch through `LIBTORCH`, which
//! `.cargo/config.toml` points at `.libtorch`, the link `scripts/setup` creates.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// What to do when libtorch is not where it should be.
const SETUP_HINT: &str =
    "libtorch was not found: run scripts/setup first (it installs torch==2.13.0 \
into .venv and links .libtorch to it; .cargo/config.toml then sets LIBTORCH)";

fn main() -> ExitCode {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=csrc/hooks.cpp");
    println!("cargo:rerun-if-changed=csrc/rng.cpp");
    println!("cargo:rerun-if-changed=csrc/amp.cpp");
    println!("cargo:rerun-if-env-changed=LIBTORCH");
    println!("cargo:rerun-if-env-changed=LIBTORCH_CXX11_ABI");
    println!("cargo:rerun-if-env-changed=DEP_TCH_LIBTORCH_LIB");
    println!("cargo:rerun-if-env-changed=DDP_LINK_TORCH_CUDA");

    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            println!("cargo::error={msg}");
            eprintln!("error: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let lib = libtorch_lib_dir()?;
    let root = lib.parent().ok_or_else(|| {
        format!(
            "libtorch lib folder {} has no parent folder; {SETUP_HINT}",
            lib.display()
        )
    })?;
    let include = root.join("include");
    let api_include = include.join("torch/csrc/api/include");
    for dir in [&include, &api_include] {
        if !dir.is_dir() {
            return Err(format!(
                "libtorch headers are missing: {} is not a folder; {SETUP_HINT}",
                dir.display()
            ));
        }
    }

    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
    if lib.join("libtorch_cuda.so").exists()
        && std::env::var("DDP_LINK_TORCH_CUDA").as_deref() != Ok("0")
    {
        println!("cargo:rustc-link-arg=-Wl,--no-as-needed,-ltorch_cuda,--as-needed");
    }

    let abi = std::env::var("LIBTORCH_CXX11_ABI").unwrap_or_else(|_| "1".to_owned());
    cc::Build::new()
        .cpp(true)
        .pic(true)
        .std("c++17")
        // As system headers: libtorch's own headers are not warning-clean,
        // our code is compiled with -Wall.
        .flag("-isystem")
        .flag(include.to_string_lossy().as_ref())
        .flag("-isystem")
        .flag(api_include.to_string_lossy().as_ref())
        .define("_GLIBCXX_USE_CXX11_ABI", abi.as_str())
        .define("GLOG_USE_GLOG_EXPORT", None)
        .flag_if_supported("-Wall")
        .flag_if_supported("-Wextra")
        .file("csrc/hooks.cpp")
        .file("csrc/rng.cpp")
        .file("csrc/amp.cpp")
        .try_compile("ddp_hooks")
        .map_err(|e| format!("compiling the C++ shims in csrc/ against libtorch failed: {e}"))?;
    Ok(())
}

/// The libtorch `lib/` folder, as published by torch-sys's build script.
fn libtorch_lib_dir() -> Result<PathBuf, String> {
    let lib = match std::env::var_os("DEP_TCH_LIBTORCH_LIB") {
        Some(v) if !v.is_empty() => PathBuf::from(v),
        _ => {
            return Err(format!(
                "torch-sys did not report a libtorch lib folder (DEP_TCH_LIBTORCH_LIB is unset); {SETUP_HINT}"
            ))
        }
    };
    if !has_libtorch(&lib) {
        return Err(format!(
            "{} holds no libtorch_cpu.so (LIBTORCH={}); {SETUP_HINT}",
            lib.display(),
            std::env::var("LIBTORCH").unwrap_or_else(|_| "<unset>".to_owned())
        ));
    }
    Ok(lib)
}

fn has_libtorch(lib: &Path) -> bool {
    ["libtorch_cpu.so", "libtorch_cpu.dylib", "torch_cpu.lib"]
        .iter()
        .any(|f| lib.join(f).exists())
}
