//! Entry points of the fuzz targets in the repository's `fuzz/` folder and
//! of their regression tests; hidden from the documentation and not a
//! stable API.
//!
//! Each function takes arbitrary bytes, must never panic on them, and
//! asserts the properties that hold for every input (a failed assertion is
//! what the fuzzer reports as a crash):
//!
//! * [`trace_file`]: the fast parser and serde_json load the same model or
//!   fail with the same message; a loaded rank written to the binary cache
//!   decodes to the same model; the model written back as records loads to
//!   the same records again.
//! * [`cache_payload`]: the binary cache decoder on any payload.
//! * [`load_both_ways`]: a trace file loaded by both parsers, for the
//!   targets of other crates (`kineto_import` in `probe_kineto::fuzzing`;
//!   `log_file` in `probe_explain::fuzzing`).
//!
//! [`replay_corpus`] runs a target's checked-in inputs through its entry
//! point, for the ordinary regression tests of every crate with targets.

use std::path::Path;

use crate::model::Run;
use crate::reader::{self, Loaded};
use crate::trace::TraceWriter;

/// The name every fuzzed trace file is loaded under.
const TRACE_PATH: &str = "fuzz/rank-0.jsonl";

/// Every rank's records, as JSON lines: the canonical form of a model.
fn records(run: &Run) -> Vec<String> {
    run.ranks
        .iter()
        .flat_map(|r| run.to_records(r))
        .map(|r| serde_json::to_string(&r).unwrap_or_else(|e| format!("unserializable: {e}")))
        .collect()
}

/// Asserts that two loads ended alike: the same records and warnings, or
/// the same error message.
fn assert_same(a: &Loaded, b: &Loaded, what: &str) {
    match (a, b) {
        (Ok((ra, wa)), Ok((rb, wb))) => {
            assert_eq!(wa, wb, "{what}: warnings differ");
            assert_eq!(records(ra), records(rb), "{what}: models differ");
        }
        (Err(ea), Err(eb)) => assert_eq!(ea.to_string(), eb.to_string(), "{what}: errors"),
        (Ok(_), Err(e)) => panic!("{what}: the first loaded, the second failed: {e}"),
        (Err(e), Ok(_)) => panic!("{what}: the first failed ({e}), the second loaded"),
    }
}

/// Loads `data` as one trace file, with the fast parser and with serde_json
/// only, and checks the cache and record round trips of what loaded.
pub fn trace_file(data: &[u8]) {
    let path = Path::new(TRACE_PATH);
    let (fast, payload) = reader::load_bytes(path, data, true);
    let (slow, _) = reader::load_bytes(path, data, false);
    assert_same(&fast, &slow, "fast parser vs serde_json");
    let Ok((run, warnings)) = &fast else { return };
    if let Some(payload) = payload {
        match reader::load_cache_payload(path, &payload) {
            Ok((cached, cached_warnings)) => {
                assert_eq!(&cached_warnings, warnings, "cache: warnings differ");
                assert_eq!(records(&cached), records(run), "cache: models differ");
            }
            Err(e) => panic!("a cache payload just written does not decode: {e}"),
        }
    }
    // The model written back as a trace loads to the same records.
    for rank in &run.ranks {
        let mut w = TraceWriter::new(Vec::new());
        for r in run.to_records(rank) {
            if let Err(e) = w.write(&r) {
                panic!("a loaded record cannot be written back: {e}");
            }
        }
        let bytes = match w.into_inner() {
            Ok(b) => b,
            Err(e) => panic!("flushing the written trace: {e}"),
        };
        let (again, _) = reader::load_bytes(path, &bytes, true);
        match again {
            Ok((again, _)) => {
                let want: Vec<String> = run
                    .to_records(rank)
                    .iter()
                    .map(|r| serde_json::to_string(r).unwrap_or_default())
                    .collect();
                assert_eq!(records(&again), want, "records round trip");
            }
            Err(e) => panic!("a trace written from a loaded model does not load: {e}"),
        }
    }
}

/// Decodes `data` as a binary cache payload for a trace file.
pub fn cache_payload(data: &[u8]) {
    let _ = reader::load_cache_payload(Path::new(TRACE_PATH), data);
}

/// The binary cache payload the reader writes for the trace file `data`,
/// when it loads a rank (seeds for the `trace_cache` target).
pub fn cache_payload_of(data: &[u8]) -> Option<Vec<u8>> {
    reader::load_bytes(Path::new(TRACE_PATH), data, true).1
}

/// Loads the trace file `data` (named `path`) with the fast parser and with
/// serde_json only, asserts that both end alike, and returns the fast load.
pub fn load_both_ways(path: &Path, data: &[u8]) -> Result<Run, crate::Error> {
    let (fast, _) = reader::load_bytes(path, data, true);
    let (slow, _) = reader::load_bytes(path, data, false);
    assert_same(&fast, &slow, "fast parser vs serde_json");
    fast.map(|(run, _)| run)
}

pub use probe_contract::fuzz_corpus::replay_corpus;
