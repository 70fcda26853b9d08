//! The fuzz targets' checked-in inputs (`fuzz/corpus/<target>/`: the seeds
//! and every input that once crashed a target) run through the targets'
//! entry points as ordinary tests, so a fixed crash stays fixed without a
//! fuzzer.

use std::path::{Path, PathBuf};

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no inputs in {}", dir.display());
    files
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).expect("read corpus file");
            (p, bytes)
        })
        .collect()
}

fn run_all(target: &str, f: fn(&[u8])) {
    for (path, bytes) in corpus(target) {
        eprintln!("{target}: {}", path.display());
        f(&bytes);
    }
}

#[test]
fn trace_file_inputs() {
    run_all("trace_file", probe::fuzzing::trace_file);
}

#[test]
fn trace_cache_inputs() {
    run_all("trace_cache", probe::fuzzing::cache_payload);
}

#[test]
fn explain_log_inputs() {
    run_all("explain_log", probe::fuzzing::log_file);
}
