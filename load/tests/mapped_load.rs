//! Large trace files are mapped rather than read (`LoadOptions::map_files`):
//! the model is the same either way, for whole files, files whose pages are
//! given back as they are read, and files whose last line is cut off.

mod model_eq;

use std::io::Write;

use model_eq::{assert_same, load, mapping, trace_files};
use probe_load::reader::MAP_MIN_BYTES;
use probe_load::synth::{generate_run, SynthConfig};
use probe_load::Warning;

#[test]
fn mapped_and_read_files_load_the_same() {
    let dir = tempfile::tempdir().unwrap();
    // Two ranks of about 14 MB each: mapped, with pages given back every
    // 8 MiB on the way.
    let mut c = SynthConfig::new(2, 750, 40);
    c.gpu_kernels = true;
    generate_run(&c, dir.path()).unwrap();
    let files = trace_files(dir.path());
    for f in &files {
        let len = std::fs::metadata(f).unwrap().len();
        assert!(len > 3 * MAP_MIN_BYTES, "{} is {len} bytes", f.display());
    }
    let mapped = load(&files, &mapping(true));
    let read = load(&files, &mapping(false));
    assert_same(&mapped, &read, "whole files");
    let (run, _) = mapped.unwrap();
    assert_eq!(run.span_count() as u64, c.total_spans());

    // A cut-off last line (no newline, not JSON): everything before it
    // loads, with the same warning.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&files[1])
        .unwrap();
    f.write_all(br#"{"type":"span","kind":"forward","st"#)
        .unwrap();
    drop(f);
    let mapped = load(&files, &mapping(true));
    let read = load(&files, &mapping(false));
    assert_same(&mapped, &read, "a cut-off last line");
    let (run, warnings) = mapped.unwrap();
    assert_eq!(run.span_count() as u64, c.total_spans());
    assert!(
        warnings
            .iter()
            .any(|w| matches!(w, Warning::Truncated { .. })),
        "{warnings:?}"
    );
}
