//! Replaying the checked-in inputs of the fuzz targets (`fuzz/corpus/`) in
//! the normal tests of every crate that has a target: test support, not part
//! of the contract, kept here because this is the one crate they all share.

use std::path::{Path, PathBuf};

/// Runs every checked-in input of the fuzz target `target`
/// (`fuzz/corpus/<target>/` at the repository root: the seeds and every input
/// that once crashed it) through `f`, in file-name order, naming each on
/// stderr; panics when the folder is missing or empty.
pub fn replay_corpus(target: &str, f: fn(&[u8])) {
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
    for path in files {
        eprintln!("{target}: {}", path.display());
        let bytes = std::fs::read(&path).expect("read corpus file");
        f(&bytes);
    }
}
