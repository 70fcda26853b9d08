//! The Kineto scanner's fast path against serde_json on the same trace:
//! `cargo run --release -p probe-kineto --example scanner_vs_serde -- TRACE [REPEATS]`.
//!
//! Both parses stream the file the same way (gzip or plain, held in memory
//! here so the disk is out of the figure); the fast path reads the events'
//! fields itself, the reference decodes every event with serde_json. It
//! prints the median CPU time of each and their ratio: the figure behind
//! keeping the hand-written scanner (README, "The parts on their own").

use std::path::Path;
use std::time::Instant;

use probe_kineto::parse::{parse_bytes, parse_bytes_reference};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        return Err("usage: scanner_vs_serde TRACE.json[.gz] [REPEATS]".into());
    };
    let repeats: usize = args
        .get(2)
        .map_or(Ok(5), |r| r.parse())
        .map_err(|e| format!("REPEATS: {e}"))?;
    let data = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    let path = Path::new(path);
    let (mut fast, mut reference) = (Vec::new(), Vec::new());
    let mut events = 0;
    for _ in 0..repeats.max(1) {
        let t = Instant::now();
        let a = parse_bytes(path, &data).map_err(|e| e.to_string())?;
        fast.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let b = parse_bytes_reference(path, &data).map_err(|e| e.to_string())?;
        reference.push(t.elapsed().as_secs_f64());
        events = a.events_read;
        std::hint::black_box((a, b));
    }
    let (f, r) = (median(fast), median(reference));
    println!(
        "{} MB, {events} events: scanner {f:.3} s, serde_json {r:.3} s, serde_json / scanner {:.2}",
        data.len() / 1_000_000,
        r / f
    );
    Ok(())
}
