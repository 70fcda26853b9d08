//! Generation time and size of the HTML report of a synthetic run (`probe::synth`), by default
//! 8 ranks × 1,000 steps × 40 buckets (about one million spans). What `bench/run` measures.
//!
//! ```text
//! cargo run --release -p probe-reports --example report_bench -- [RANKS STEPS BUCKETS]
//! ```
//!
//! Prints one JSON object: the run's shape, the time to load it ([`probe_reports::load_runs`],
//! the trace cache written by a first load, as after `ddp-probe summary`), to render it
//! ([`probe_reports::render`]) and to write it ([`probe_reports::write_html`]), and the
//! report's size in bytes.

use std::time::Instant;

fn arg(args: &[String], i: usize, default: u64) -> u64 {
    args.get(i).and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (ranks, steps, buckets) = (
        arg(&args, 0, 8) as u32,
        arg(&args, 1, 1000),
        arg(&args, 2, 40) as u32,
    );
    let dir = tempfile::tempdir().expect("temporary directory");
    let config = probe::synth::SynthConfig::new(ranks, steps, buckets);
    let summary = probe::synth::generate_run(&config, dir.path()).expect("synthetic run");
    let paths = vec![dir.path().to_path_buf()];
    // A first load writes the trace cache, as the first command on a run would.
    drop(probe_reports::load_runs(&paths).expect("load"));

    let t = Instant::now();
    let runs = probe_reports::load_runs(&paths).expect("load");
    let load_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let rendered = probe_reports::render(&runs, None, &probe_reports::ReportOptions::default());
    let render_s = t.elapsed().as_secs_f64();
    let out = dir.path().join("report.html");
    let t = Instant::now();
    probe_reports::write_html(&out, &rendered.html).expect("write");
    let write_s = t.elapsed().as_secs_f64();
    let bytes = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
    println!(
        "{{\"ranks\":{ranks},\"steps\":{steps},\"buckets\":{buckets},\"spans\":{},\"load_s\":{load_s:.4},\"render_s\":{render_s:.4},\"write_s\":{write_s:.4},\"total_s\":{:.4},\"bytes\":{bytes}}}",
        summary.spans,
        load_s + render_s + write_s
    );
}
