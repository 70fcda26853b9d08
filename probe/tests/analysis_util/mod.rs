//! Helpers of the analysis tests: hand-made records on a millisecond grid
//! and loading them as a run, and generated runs.
#![allow(dead_code)]

use probe::trace::{DdpConfig, Header, Record, SpanKind, SpanRecord};
use probe::Run;

/// Base timestamp of the hand-made traces (ns).
pub const T0: u64 = 1_700_000_000_000_000_000;

/// `T0 + ms` milliseconds, in ns.
pub fn at(ms: f64) -> u64 {
    T0 + (ms * 1e6).round() as u64
}

/// Milliseconds to nanoseconds.
pub fn ns(ms: f64) -> i64 {
    (ms * 1e6).round() as i64
}

/// A span of `kind` in `step` from `a` to `b` ms.
pub fn span(kind: SpanKind, step: u64, a: f64, b: f64) -> SpanRecord {
    SpanRecord::new(kind, step, at(a), at(b))
}

/// A header for `rank` of `world` (fixed start, no machine values).
pub fn header(rank: u32, world: u32, ddp: Option<DdpConfig>) -> Record {
    let mut h = Header::new("hand-made", rank, world);
    h.start_ns = T0;
    h.hostname = "host".to_owned();
    h.pid = 1;
    h.argv = None;
    h.program = None;
    h.ddp = ddp;
    Record::Header(h)
}

/// Loads records held in memory (one list per rank, each starting with
/// its header).
pub fn load(ranks: &[Vec<Record>]) -> Run {
    probe::reader::load_records(ranks).expect("valid run").0
}

/// A generated run ([`probe::synth`]) loaded from memory.
pub fn synth(c: &probe::synth::SynthConfig) -> Run {
    let mut bufs: Vec<Vec<u8>> = vec![Vec::new(); c.ranks as usize];
    probe::synth::generate_to_writers(c, bufs.iter_mut().collect()).expect("generated");
    let inputs = bufs
        .into_iter()
        .enumerate()
        .map(|(i, b)| (format!("rank-{i}.jsonl").into(), std::io::Cursor::new(b)))
        .collect::<Vec<(std::path::PathBuf, _)>>();
    probe::reader::load_from_readers(inputs).expect("loads").0
}
