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
fn store_frame_inputs() {
    run_all("store_frame", comm::fuzzing::frame_body);
}

#[test]
fn store_server_inputs() {
    run_all("store_server", comm::fuzzing::server_session);
}
