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

/// Found by `trace_file`: the reader accepted a `grad_ready` offset below
/// -1 that the writer refuses, so a loaded model could not be written back.
#[test]
fn a_negative_grad_ready_offset_is_refused_with_its_line() {
    let trace = concat!(
        r#"{"type":"header","format":"ddp-probe-trace","version":"1.0","run_id":"r","rank":0,"world_size":1,"start_ns":1700000000000000000}"#,
        "\n",
        r#"{"type":"grad_ready","step":3,"t0":1700000000103500000,"offsets_ns":[-3900000,2100000,-1]}"#,
        "\n",
    );
    for fast in [true, false] {
        let options = probe::reader::LoadOptions {
            fast_parser: fast,
            cache: false,
            ..probe::reader::LoadOptions::default()
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rank-0.jsonl");
        std::fs::write(&path, trace).unwrap();
        let e = probe::reader::load_files_with(&[&path], &options).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("rank-0.jsonl:2: invalid grad_ready record"),
            "{msg}"
        );
        assert!(msg.contains("offset -3900000 is negative"), "{msg}");
    }
    probe::fuzzing::trace_file(trace.as_bytes());
}
