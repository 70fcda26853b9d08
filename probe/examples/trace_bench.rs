//! Measures the trace reader (and the Chrome export) on a synthetic run.
//!
//! ```text
//! cargo run --release -p probe --example trace_bench -- gen DIR [RANKS STEPS BUCKETS]
//! cargo run --release -p probe --example trace_bench -- load DIR
//! cargo run --release -p probe --example trace_bench -- chrome DIR OUT.json
//! cargo run --release -p probe --example trace_bench -- bench [--repeat N] [BASE_DIR] [SIZES...]
//! ```
//!
//! `gen` writes a run (default 8 ranks × 1000 steps × 40 buckets: 1,000,008
//! spans); `load` loads it (threads as `DDP_PROBE_LOAD_THREADS` says,
//! binary cache as usual) and prints spans per second and the process's
//! peak resident memory; `chrome` also exports it. Run `load` in its own
//! process so the peak memory is the reader's alone.
//!
//! `bench` is the benchmark to cite: for runs of 1 and 10 million spans
//! (8 ranks × 1,000 or 10,000 steps × 40 buckets; `SIZES` in millions of
//! spans picks others), generated under `BASE_DIR` (default: the system's
//! temporary folder) unless already there, it loads each run on ONE thread
//! three ways, each in a fresh process of its own so that its peak memory
//! is its own, and each `N` times (default 3, the modes in turn):
//!
//! * `parse`: no cache at all, the JSON parser alone;
//! * `cold`: the cache deleted first, so the load parses (what the first
//!   load of a run costs);
//! * `warm`: the cache written by `cold` is read instead of the JSON;
//!
//! and then summarises it with `probe::analysis::summarize`. Like the
//! commands (`summary`, `advise`...), it writes the caches of the files it
//! parsed after the summary, and times that apart (`cache s`). It prints the
//! wall time and the CPU time of the loading thread (the machine may be
//! busy: CPU time is the steadier number), spans per second and the peak
//! resident memory (`VmHWM`, the caches' writing included). For the run of
//! 10 million spans it then says, mode by mode, whether the goals hold on
//! the median of the repeats: loading and summarising in under 2 s of one
//! core's CPU time, with a peak under 1 GiB. It also says how much of that
//! time was the kernel's (copying the files out of the page cache, giving
//! the process fresh memory): the part that varies most between machines,
//! and on a virtual machine with its neighbours' load.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use probe::reader::LoadOptions;

fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// CPU time of the calling thread so far (s), from the scheduler.
fn thread_cpu_s() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: f64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns / 1e9)
}

/// System (kernel) CPU time of the calling thread so far (s), in clock
/// ticks of 10 ms: the part of [`thread_cpu_s`] spent in the kernel on the
/// thread's behalf (copying files out of the page cache, page faults).
fn thread_sys_s() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // The fields after the command name (which may hold spaces): stime is
    // the 15th field of the line, the 13th after `) `.
    let rest = &s[s.rfind(')')? + 2..];
    let ticks: f64 = rest.split_whitespace().nth(12)?.parse().ok()?;
    Some(ticks / 100.0)
}

fn arg_u64(args: &[String], i: usize, default: u64) -> Result<u64, String> {
    match args.get(i) {
        None => Ok(default),
        Some(s) => s.parse().map_err(|_| format!("{s:?} is not a number")),
    }
}

fn generate(dir: &Path, ranks: u32, steps: u64, buckets: u32) -> Result<(), String> {
    let config = probe::synth::SynthConfig::new(ranks, steps, buckets);
    let t = Instant::now();
    let summary = probe::synth::generate_run(&config, dir).map_err(|e| e.to_string())?;
    let written_s = t.elapsed().as_secs_f64();
    // The kernel writes the files out in the background for a while: on a
    // small machine that takes a core from the first measurements, so the
    // files are on disk before anything is timed.
    let mut bytes = 0u64;
    for f in &summary.files {
        let file = std::fs::File::open(f).map_err(|e| format!("{}: {e}", f.display()))?;
        file.sync_all()
            .map_err(|e| format!("{}: syncing: {e}", f.display()))?;
        bytes += file.metadata().map_err(|e| e.to_string())?.len();
    }
    println!(
        "wrote {} spans ({} records, {:.1} MiB) to {} in {written_s:.2} s, on disk after {:.2} s",
        summary.spans,
        summary.records,
        bytes as f64 / (1 << 20) as f64,
        dir.display(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// One measurement, in this process: `MODE DIR` → one line of numbers.
fn measure(mode: &str, dir: &Path) -> Result<(), String> {
    let mut options = LoadOptions {
        threads: Some(1),
        cache: true,
        ..LoadOptions::default()
    };
    match mode {
        "parse" => options.cache = false,
        "cold" => {
            let cache = dir.join(probe::trace::TRACES_DIR).join(".cache");
            if cache.exists() {
                std::fs::remove_dir_all(&cache).map_err(|e| e.to_string())?;
            }
        }
        "warm" => {}
        _ => return Err(format!("unknown mode {mode:?}")),
    }
    let cpu0 = thread_cpu_s().unwrap_or(0.0);
    let sys0 = thread_sys_s().unwrap_or(0.0);
    let t = Instant::now();
    // As the commands load: the caches of parsed files are written once the
    // answer is out, and timed apart.
    let (run, _warnings, caches) =
        probe::reader::load_run_deferred(&[dir], &options).map_err(|e| e.to_string())?;
    let load_s = t.elapsed().as_secs_f64();
    let cpu1 = thread_cpu_s().unwrap_or(0.0);
    let load_peak = peak_rss_mib().unwrap_or(0.0);
    let t = Instant::now();
    let summary = probe::analysis::summarize(&run, &probe::analysis::SummaryOptions::default());
    let sum_s = t.elapsed().as_secs_f64();
    let cpu2 = thread_cpu_s().unwrap_or(0.0);
    let sys2 = thread_sys_s().unwrap_or(0.0);
    std::hint::black_box(&summary);
    caches.write(&run);
    let cpu3 = thread_cpu_s().unwrap_or(0.0);
    // The process's peak, the caches' writing included.
    let peak = peak_rss_mib().unwrap_or(0.0);
    println!(
        "{} {load_s:.4} {:.4} {sum_s:.4} {:.4} {load_peak:.1} {peak:.1} {:.4} {:.2}",
        run.span_count(),
        cpu1 - cpu0,
        cpu2 - cpu1,
        cpu3 - cpu2,
        sys2 - sys0,
    );
    Ok(())
}

/// One measurement's numbers, as `measure` prints them.
struct Measured {
    spans: f64,
    load: f64,
    load_cpu: f64,
    summ: f64,
    summ_cpu: f64,
    load_peak: f64,
    peak: f64,
    cache_cpu: f64,
    /// The kernel's part of the load and summary's CPU time.
    sys_cpu: f64,
}

impl Measured {
    fn cpu(&self) -> f64 {
        self.load_cpu + self.summ_cpu
    }
}

/// Runs `measure MODE DIR` in a fresh process.
fn measure_in_child(exe: &Path, mode: &str, dir: &Path) -> Result<Measured, String> {
    let out = Command::new(exe)
        .arg("measure")
        .arg(mode)
        .arg(dir)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Vec<f64> = text
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    let [spans, load, load_cpu, summ, summ_cpu, load_peak, peak, cache_cpu, sys_cpu] = v[..] else {
        return Err(format!("unexpected output: {text}"));
    };
    Ok(Measured {
        spans,
        load,
        load_cpu,
        summ,
        summ_cpu,
        load_peak,
        peak,
        cache_cpu,
        sys_cpu,
    })
}

/// The goals' verdict for one mode: its best and median CPU time, its
/// highest peak and its cache writing time.
struct ModeResult {
    mode: &'static str,
    spans: f64,
    best_cpu: f64,
    median_cpu: f64,
    /// The kernel's part of the run of median CPU time.
    median_sys: f64,
    peak: f64,
    cache_cpu: f64,
}

fn bench(args: &[String]) -> Result<(), String> {
    let mut repeat = 3usize;
    let mut rest = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--repeat" {
            let n = it.next().ok_or("--repeat needs a number")?;
            repeat = n
                .parse()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("--repeat {n:?}: give a count of 1 or more"))?;
        } else {
            rest.push(a.clone());
        }
    }
    let base = rest
        .first()
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("ddp-probe-trace-bench"));
    let sizes: Vec<u64> = if rest.len() > 1 {
        rest[1..]
            .iter()
            .map(|s| s.parse().map_err(|_| format!("{s:?} is not a number")))
            .collect::<Result<_, _>>()?
    } else {
        vec![1, 10]
    };
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    println!("each mode {repeat} times, in turn; the row shows the run of least CPU time");
    println!(
        "{:>6} {:>5} | {:>8} {:>8} {:>9} {:>8} | {:>8} {:>8} | {:>8} {:>8} {:>8} | {:>8}",
        "spans",
        "mode",
        "load s",
        "cpu s",
        "M span/s",
        "peak MiB",
        "summ. s",
        "cpu s",
        "total s",
        "peak MiB",
        "med. cpu",
        "cache s"
    );
    for m in sizes {
        let dir = base.join(format!("{m}m"));
        let (ranks, buckets) = (8u32, 40u32);
        // 5 + 3 × buckets spans per step and rank.
        let steps = m * 1_000_000 / u64::from(ranks) / (5 + 3 * u64::from(buckets));
        let marker = dir.join(probe::trace::TRACES_DIR).join("rank-7.jsonl");
        if !marker.exists() {
            generate(&dir, ranks, steps, buckets)?;
        }
        const MODES: [&str; 3] = ["parse", "cold", "warm"];
        let mut runs: [Vec<Measured>; 3] = Default::default();
        // Round by round, so that a busy spell of the machine hits every
        // mode alike.
        for _ in 0..repeat {
            for (mode, runs) in MODES.iter().zip(&mut runs) {
                runs.push(measure_in_child(&exe, mode, &dir)?);
            }
        }
        let mut results = Vec::new();
        for (mode, mut runs) in MODES.into_iter().zip(runs) {
            runs.sort_by(|a, b| a.cpu().total_cmp(&b.cpu()));
            let median_cpu = runs[runs.len() / 2].cpu();
            let median_sys = runs[runs.len() / 2].sys_cpu;
            let peak = runs.iter().map(|r| r.peak).fold(0.0, f64::max);
            let best = &runs[0];
            println!(
                "{:>5.1}M {mode:>5} | {:>8.3} {:>8.3} {:>9.2} {:>8.1} | {:>8.3} {:>8.3} | {:>8.3} {:>8.1} {median_cpu:>8.3} | {:>8.3}",
                best.spans / 1e6,
                best.load,
                best.load_cpu,
                best.spans / best.load / 1e6,
                best.load_peak,
                best.summ,
                best.summ_cpu,
                best.load + best.summ,
                best.peak,
                best.cache_cpu,
            );
            results.push(ModeResult {
                mode,
                spans: best.spans,
                best_cpu: best.cpu(),
                median_cpu,
                median_sys,
                peak,
                cache_cpu: best.cache_cpu,
            });
        }
        let cache: u64 = std::fs::read_dir(dir.join(probe::trace::TRACES_DIR).join(".cache"))
            .map_err(|e| e.to_string())?
            .filter_map(|e| e.ok()?.metadata().ok())
            .map(|m| m.len())
            .sum();
        let json: u64 = probe::reader::find_trace_files(&[&dir])
            .map_err(|e| e.to_string())?
            .iter()
            .filter_map(|f| std::fs::metadata(f).ok())
            .map(|m| m.len())
            .sum();
        println!(
            "       traces {:.1} MiB, cache {:.1} MiB",
            json as f64 / (1 << 20) as f64,
            cache as f64 / (1 << 20) as f64
        );
        if m == GOAL_SPANS_M {
            print_goals(&results);
        }
    }
    Ok(())
}

/// The size of run the goals speak of, in millions of spans.
const GOAL_SPANS_M: u64 = 10;
/// Goal: CPU seconds of one core to load and summarise it.
const GOAL_CPU_S: f64 = 2.0;
/// Goal: peak resident memory (MiB).
const GOAL_PEAK_MIB: f64 = 1024.0;

/// Whether each load mode meets the goals, one line each: CPU time of the
/// load and the summary together, its median over the repeats (the least
/// too), and the highest peak memory of the process, the caches' writing
/// included. A first load writes its caches after the answer, as the
/// commands do: that time is shown apart.
fn print_goals(results: &[ModeResult]) {
    println!(
        "goals for {GOAL_SPANS_M}M spans: load + summary < {GOAL_CPU_S} s of one core (CPU time), \
         peak memory < {GOAL_PEAK_MIB:.0} MiB"
    );
    let verdict = |ok: bool| if ok { "OK" } else { "NOT MET" };
    for r in results {
        let what = match r.mode {
            "parse" => "parse, no cache",
            "cold" => "cold: first load, parse",
            _ => "warm: from the cache",
        };
        let after = if r.cache_cpu > 0.0005 {
            format!("; then {:.2} s writing the cache", r.cache_cpu)
        } else {
            String::new()
        };
        println!(
            "  {what:<24} {:.1}M spans: {:.2} s CPU median ({:.2} in the kernel), {:.2} least \
             (goal < {GOAL_CPU_S} s) {}; peak {:.0} MiB (goal < {GOAL_PEAK_MIB:.0} MiB) {}{after}",
            r.spans / 1e6,
            r.median_cpu,
            r.median_sys,
            r.best_cpu,
            verdict(r.median_cpu < GOAL_CPU_S),
            r.peak,
            verdict(r.peak < GOAL_PEAK_MIB),
        );
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let usage = "usage: trace_bench gen DIR [RANKS STEPS BUCKETS] | load DIR | chrome DIR OUT \
                 | bench [--repeat N] [BASE_DIR] [SIZES...]";
    let cmd = args.first().ok_or(usage)?;
    if cmd == "bench" {
        return bench(&args[1..]);
    }
    if cmd == "measure" {
        let mode = args.get(1).ok_or(usage)?;
        let dir = PathBuf::from(args.get(2).ok_or(usage)?);
        return measure(mode, &dir);
    }
    let dir = PathBuf::from(args.get(1).ok_or(usage)?);
    match cmd.as_str() {
        "gen" => {
            let ranks = arg_u64(args, 2, 8)? as u32;
            let steps = arg_u64(args, 3, 1000)?;
            let buckets = arg_u64(args, 4, 40)? as u32;
            generate(&dir, ranks, steps, buckets)?;
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
