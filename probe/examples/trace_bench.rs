//! Measures the trace reader (and the Chrome export) on a synthetic run.
//!
//! ```text
//! cargo run --release -p probe --example trace_bench -- gen DIR [RANKS STEPS BUCKETS]
//! cargo run --release -p probe --example trace_bench -- load DIR
//! cargo run --release -p probe --example trace_bench -- chrome DIR OUT.json
//! ```
//!
//! `gen` writes a run (default 8 ranks × 1000 steps × 40 buckets: 1,000,008
//! spans); `load` loads it and prints spans per second and the process's
//! peak resident memory; `chrome` also exports it. Run `load` in its own
//! process so the peak memory is the reader's alone.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn arg_u64(args: &[String], i: usize, default: u64) -> Result<u64, String> {
    match args.get(i) {
        None => Ok(default),
        Some(s) => s.parse().map_err(|_| format!("{s:?} is not a number")),
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let usage = "usage: trace_bench gen DIR [RANKS STEPS BUCKETS] | load DIR | chrome DIR OUT";
    let cmd = args.first().ok_or(usage)?;
    let dir = PathBuf::from(args.get(1).ok_or(usage)?);
    match cmd.as_str() {
        "gen" => {
            let ranks = arg_u64(args, 2, 8)? as u32;
            let steps = arg_u64(args, 3, 1000)?;
            let buckets = arg_u64(args, 4, 40)? as u32;
            let config = probe::synth::SynthConfig::new(ranks, steps, buckets);
            let t = Instant::now();
            let summary = probe::synth::generate_run(&config, &dir).map_err(|e| e.to_string())?;
            let bytes: u64 = summary
                .files
                .iter()
                .filter_map(|f| std::fs::metadata(f).ok())
                .map(|m| m.len())
                .sum();
            println!(
                "wrote {} spans ({} records, {:.1} MiB) in {:.2} s",
                summary.spans,
                summary.records,
                bytes as f64 / (1 << 20) as f64,
                t.elapsed().as_secs_f64()
            );
        }
        "load" | "chrome" => {
            let rss0 = peak_rss_mib().unwrap_or(0.0);
            let t = Instant::now();
            let (run, warnings) = probe::load_run(&[&dir]).map_err(|e| e.to_string())?;
            let secs = t.elapsed().as_secs_f64();
            let spans = run.span_count();
            for w in &warnings {
                println!("warning: {w}");
            }
            println!(
                "loaded {} ranks, {spans} spans, {} strings in {secs:.3} s: {:.2} M spans/s",
                run.ranks.len(),
                run.strings.len(),
                spans as f64 / secs / 1e6
            );
            if let Some(peak) = peak_rss_mib() {
                println!("peak RSS {peak:.1} MiB (before loading {rss0:.1} MiB)");
            }
            if cmd == "chrome" {
                let out = PathBuf::from(args.get(2).ok_or(usage)?);
                let t = Instant::now();
                let file = std::fs::File::create(&out).map_err(|e| e.to_string())?;
                probe::export::chrome::write_chrome_trace(&run, file).map_err(|e| e.to_string())?;
                let len = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
                println!(
                    "exported {:.1} MiB of Chrome JSON in {:.2} s",
                    len as f64 / (1 << 20) as f64,
                    t.elapsed().as_secs_f64()
                );
            }
        }
        _ => return Err(usage.to_owned()),
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
