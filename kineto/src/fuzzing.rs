//! Entry point of the `kineto_import` fuzz target (the repository's `fuzz/`
//! folder) and of its regression tests; hidden from the documentation and not
//! a stable API. It must never panic on any input, and asserts what holds for
//! every input.

use std::path::Path;

use probe_load::fuzzing::load_both_ways;
use probe_load::trace::TraceWriter;

use crate::hta::{hta_breakdown, HtaOptions};
use crate::{import, parse};

/// Imports `data` as one PyTorch profiler trace (plain JSON, or gzip when it
/// starts with the gzip magic) the way `probe import` imports a single file,
/// in memory, and checks that the trace file written loads back as a run.
pub fn kineto_file(data: &[u8]) {
    let source = Path::new("fuzz/rank-0.json");
    let fast = parse::parse_bytes(source, data);
    // The scanner's fast path reads whatever serde_json reads, and the same events; so does
    // a parse split in two wherever it may be split.
    if let Ok(reference) = parse::parse_bytes_reference(source, data) {
        let gzip = data.starts_with(&[0x1f, 0x8b]);
        let split = parse::parse_split(source, gzip, data, false, 1);
        for (what, got) in [("the fast path", &fast), ("a split parse", &split)] {
            match got {
                Ok(t) => {
                    if let Err(e) = parse::same_events(&reference, t) {
                        panic!("{what} read other events than serde_json: {e}");
                    }
                }
                Err(e) => panic!("{what} failed where serde_json read the trace: {e}"),
            }
        }
    }
    let Ok(t) = fast else {
        return;
    };
    let Ok(rank) = import::rank_of(&t, true) else {
        return;
    };
    if import::check_time_range(&t).is_err() {
        return;
    }
    let traces = vec![(rank, t)];
    let world_size = import::world_size_of(&traces);
    assert!(rank < world_size, "rank {rank} of world size {world_size}");
    let mut w = TraceWriter::new(Vec::new());
    if let Err(e) = import::convert(&traces[0].1, rank, world_size, "kineto-fuzz", &mut w) {
        panic!("converting to memory failed: {e}");
    }
    let bytes = match w.into_inner() {
        Ok(b) => b,
        Err(e) => panic!("flushing the converted trace: {e}"),
    };
    let pairs: Vec<(u32, &parse::KinetoTrace)> = traces.iter().map(|(r, t)| (*r, t)).collect();
    let hta = hta_breakdown(&pairs, &HtaOptions::default());
    if let Err(e) = serde_json::to_vec_pretty(&hta) {
        panic!("the HTA breakdown does not serialize: {e}");
    }
    let path = format!("fuzz/traces/rank-{rank}.jsonl");
    let path = Path::new(&path);
    match load_both_ways(path, &bytes) {
        Ok(run) => {
            let ranks: Vec<u32> = run.ranks.iter().map(|r| r.header.rank).collect();
            assert_eq!(ranks, [rank], "the imported run's ranks");
        }
        Err(e) => panic!(
            "an imported trace does not load: {e}\n{}",
            String::from_utf8_lossy(&bytes)
        ),
    }
}
