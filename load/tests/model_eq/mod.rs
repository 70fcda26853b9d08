//! Piece-by-piece comparison of loaded runs, for the tests of the fast
//! parser and the binary cache.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use probe_load::model::{RankTrace, Run};
use probe_load::reader::{load_files_with, LoadOptions};
use probe_load::{Error, Warning};

/// A load's result.
pub type Loaded = Result<(Run, Vec<Warning>), Error>;

/// Options with the cache off and the given parser, strict: a damaged line is an error, so
/// the parsers are compared on their errors too.
pub fn parser(fast: bool) -> LoadOptions {
    LoadOptions {
        threads: Some(1),
        cache: false,
        cache_min_bytes: 0,
        fast_parser: fast,
        map_files: true,
        strict: true,
    }
}

/// [`parser`] as every command loads by default: damaged lines skipped with a warning.
pub fn lenient(fast: bool) -> LoadOptions {
    LoadOptions {
        strict: false,
        ..parser(fast)
    }
}

/// Options with the cache off, the fast parser, and large files mapped or
/// read.
pub fn mapping(map_files: bool) -> LoadOptions {
    LoadOptions {
        map_files,
        ..parser(true)
    }
}

/// Options with the cache on for files of any size.
pub fn cached() -> LoadOptions {
    LoadOptions {
        threads: Some(1),
        cache: true,
        cache_min_bytes: 0,
        fast_parser: true,
        map_files: true,
        strict: false,
    }
}

/// Loads `files` with `options`.
pub fn load(files: &[PathBuf], options: &LoadOptions) -> Loaded {
    load_files_with(files, options)
}

/// The trace files of `<dir>/traces`, sorted.
pub fn trace_files(dir: &Path) -> Vec<PathBuf> {
    probe_load::reader::find_trace_files(&[dir]).expect("trace files")
}

fn assert_rank_eq(a: &RankTrace, b: &RankTrace, what: &str) {
    let r = a.rank();
    assert_eq!(a.header, b.header, "{what}: rank {r} header");
    assert_eq!(a.path, b.path, "{what}: rank {r} path");
    assert_eq!(a.version, b.version, "{what}: rank {r} version");
    assert_eq!(a.truncated, b.truncated, "{what}: rank {r} truncated");
    assert_eq!(a.layouts, b.layouts, "{what}: rank {r} layouts");
    assert_eq!(a.extras, b.extras, "{what}: rank {r} extras");
    assert_eq!(a.grad_ready, b.grad_ready, "{what}: rank {r} grad_ready");
    assert_eq!(a.instants, b.instants, "{what}: rank {r} instants");
    assert_eq!(
        a.counters.len(),
        b.counters.len(),
        "{what}: rank {r} counters"
    );
    for (x, y) in a.counters.iter().zip(&b.counters) {
        assert_eq!(
            (x.t, x.name, x.value.to_bits()),
            (y.t, y.name, y.value.to_bits()),
            "{what}: rank {r} counter"
        );
    }
    assert_eq!(a.logs, b.logs, "{what}: rank {r} logs");
    assert_eq!(a.end, b.end, "{what}: rank {r} end");
    assert_eq!(a.lanes.len(), b.lanes.len(), "{what}: rank {r} lanes");
    for (x, y) in a.lanes.iter().zip(&b.lanes) {
        assert_eq!(x.kind, y.kind, "{what}: rank {r} lane kind");
        assert_eq!(x.name, y.name, "{what}: rank {r} lane name");
        assert_eq!(
            x.max_duration(),
            y.max_duration(),
            "{what}: lane {}",
            x.name
        );
        assert_eq!(x.time_range(), y.time_range(), "{what}: lane {}", x.name);
        assert!(
            x.spans() == y.spans(),
            "{what}: rank {r} lane {} spans",
            x.name
        );
    }
}

/// Asserts that two runs are the same in every piece of the model, and
/// that they give the same records back.
pub fn assert_run_eq(a: &Run, b: &Run, what: &str) {
    assert_eq!(a.run_id, b.run_id, "{what}: run id");
    assert_eq!(a.world_size, b.world_size, "{what}: world size");
    let sa: Vec<(probe_load::model::Sym, &str)> = a.strings.iter().collect();
    let sb: Vec<(probe_load::model::Sym, &str)> = b.strings.iter().collect();
    assert_eq!(sa, sb, "{what}: strings");
    assert_eq!(a.ranks.len(), b.ranks.len(), "{what}: ranks");
    for (x, y) in a.ranks.iter().zip(&b.ranks) {
        assert_rank_eq(x, y, what);
        let rx: Vec<String> = a
            .to_records(x)
            .iter()
            .map(|r| serde_json::to_string(r).expect("serializes"))
            .collect();
        let ry: Vec<String> = b
            .to_records(y)
            .iter()
            .map(|r| serde_json::to_string(r).expect("serializes"))
            .collect();
        assert!(rx == ry, "{what}: rank {} records differ", x.rank());
    }
}

/// Asserts that two loads ended the same way: equal runs and warnings, or
/// the same error message.
pub fn assert_same(a: &Loaded, b: &Loaded, what: &str) {
    match (a, b) {
        (Ok((ra, wa)), Ok((rb, wb))) => {
            assert_eq!(wa, wb, "{what}: warnings");
            assert_run_eq(ra, rb, what);
        }
        (Err(ea), Err(eb)) => assert_eq!(ea.to_string(), eb.to_string(), "{what}: errors"),
        (Ok(_), Err(e)) => panic!("{what}: first loaded, second failed: {e}"),
        (Err(e), Ok(_)) => panic!("{what}: first failed ({e}), second loaded"),
    }
}
