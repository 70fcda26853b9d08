//! Series of runs through the launcher: `ddp-probe scale` (one run per world
//! size) and `ddp-probe tune` (runs per `bucket_cap_mb` candidate), each with
//! an indicatif progress bar on stderr and a report at the end.
//!
//! Every run goes to its own directory inside the series directory
//! (`n4/` for scale, `cap-10-r2/` for tune), with the launcher's console
//! quiet; failures and hangs are reported as one line each. Unless the
//! environment sets `OMP_NUM_THREADS`, `scale` sets it to 1 for every run:
//! the launcher (like torchrun) sets it only when a node runs more than one
//! rank, and a one-rank run with every core would not compare with the
//! others. Ctrl-C stops the
//! run in progress (the launcher stops its ranks) and ends the series; the
//! report then covers the runs that finished.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use probe::analysis::{advise, step_breakdowns, AdviceOptions, SummaryOptions};
use probe_launch::{launch, ConsoleMode, Event, LaunchConfig, RunStatus};

use probe::analysis::tuning::{
    auto_search, compare_with_advice, same_cap, Measurement, TuneCandidate, TuneMode, TuneResult,
    TuneRun,
};
use probe::units::{mib, ns};
use probe_reports::analyze::failure_reasons;
use probe_reports::{load_runs, render, write_html, ReportOptions, RunInput, Scaling};

pub use error::SeriesError;

mod error;

/// The most ranks one run of a series may start.
pub const MAX_NPROC: usize = probe_launch::config::MAX_NPROC_PER_NODE;
/// The smallest cap the `--auto` search tries (MiB).
pub const AUTO_MIN_CAP_MB: f64 = 1.0 / 16.0;
/// The largest cap the `--auto` search tries when the gradient size is not
/// known (MiB).
pub const AUTO_MAX_CAP_MB: f64 = 1024.0;

/// The training command of a series.
#[derive(Clone, Debug, PartialEq)]
pub struct JobCommand {
    /// The program.
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Appended as `--steps N` when given.
    pub steps: Option<u64>,
}

impl JobCommand {
    /// The program and the arguments actually run.
    pub fn words(&self) -> (OsString, Vec<OsString>) {
        let mut args = self.args.clone();
        if let Some(n) = self.steps {
            args.push("--steps".into());
            args.push(n.to_string().into());
        }
        (self.program.clone(), args)
    }

    /// The command as text, for reports.
    pub fn display(&self) -> Vec<String> {
        let (p, a) = self.words();
        std::iter::once(p)
            .chain(a)
            .map(|w| w.to_string_lossy().into_owned())
            .collect()
    }
}

/// Options shared by both kinds of series.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesOptions {
    /// Leading steps of each rank left out as warm-up (default 1).
    pub warmup_steps: u64,
    /// Stop a run in which no rank made progress for this long.
    pub hang_timeout: Option<Duration>,
    /// Show a progress bar and one line per run on stderr (default true).
    pub show_progress: bool,
}

impl Default for SeriesOptions {
    fn default() -> SeriesOptions {
        SeriesOptions {
            warmup_steps: 1,
            hang_timeout: None,
            show_progress: true,
        }
    }
}

/// `runs/<kind>-<YYYYmmdd-HHMMSS>` in local time, with `-2`, `-3`... when
/// taken.
pub fn default_series_dir(kind: &str) -> PathBuf {
    let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S").to_string();
    let root = Path::new(probe_launch::rundir::DEFAULT_RUNS_ROOT);
    let mut n = 1;
    loop {
        let dir = if n == 1 {
            root.join(format!("{kind}-{stamp}"))
        } else {
            root.join(format!("{kind}-{stamp}-{n}"))
        };
        if !dir.exists() || n >= 1000 {
            return dir;
        }
        n += 1;
    }
}

/// What `ddp-probe scale` runs.
#[derive(Clone, Debug, PartialEq)]
pub struct ScaleConfig {
    /// The training command.
    pub command: JobCommand,
    /// World sizes to run (one node each).
    pub nprocs: Vec<usize>,
    /// `bucket_cap_mb` handed to every run, if given.
    pub bucket_cap_mb: Option<f64>,
    /// The series directory.
    pub dir: PathBuf,
    /// Where the report goes (default `<dir>/report.html`).
    pub report: Option<PathBuf>,
    /// Shared options.
    pub options: SeriesOptions,
}

/// One run of a scaling series.
#[derive(Clone, Debug, PartialEq)]
pub struct ScaleRun {
    /// Ranks.
    pub world_size: usize,
    /// Its run directory.
    pub dir: PathBuf,
    /// How it ended.
    pub status: RunStatus,
}

/// What `ddp-probe scale` did.
#[derive(Clone, Debug)]
pub struct ScaleOutcome {
    /// The series directory.
    pub dir: PathBuf,
    /// The report.
    pub report: PathBuf,
    /// The runs, in order.
    pub runs: Vec<ScaleRun>,
    /// The scaling series (when two or more world sizes have steady steps).
    pub scaling: Option<Scaling>,
    /// The signal that interrupted the series, if one did.
    pub interrupted: Option<String>,
}

/// Runs the command once per world size and writes the report.
pub fn run_scale(cfg: &ScaleConfig) -> Result<ScaleOutcome, SeriesError> {
    let mut nprocs = cfg.nprocs.clone();
    if nprocs.is_empty() {
        return Err(SeriesError::InvalidOption {
            option: "--nproc",
            message: "give at least one world size, e.g. --nproc 1,2,4".into(),
        });
    }
    if let Some(&bad) = nprocs.iter().find(|&&n| n == 0 || n > MAX_NPROC) {
        return Err(SeriesError::InvalidOption {
            option: "--nproc",
            message: format!("{bad} is out of range; give 1 to {MAX_NPROC} ranks"),
        });
    }
    check_cap("--bucket-cap-mb", cfg.bucket_cap_mb)?;
    nprocs.sort_unstable();
    nprocs.dedup();
    fs::create_dir_all(&cfg.dir).map_err(|e| SeriesError::io("create", &cfg.dir, e))?;
    let progress = Progress::new(nprocs.len() as u64, cfg.options.show_progress);
    let one_thread: Vec<(OsString, OsString)> = if std::env::var_os("OMP_NUM_THREADS").is_none() {
        vec![("OMP_NUM_THREADS".into(), "1".into())]
    } else {
        Vec::new()
    };
    let mut runs = Vec::new();
    let mut interrupted = None;
    for &n in &nprocs {
        let dir = cfg.dir.join(format!("n{n}"));
        let what = format!("{n} rank{}", if n == 1 { "" } else { "s" });
        progress.start(&format!("running with {what}"));
        let outcome = launch_one(
            &cfg.command,
            n,
            cfg.bucket_cap_mb,
            &dir,
            &cfg.options,
            &progress,
            &what,
            one_thread.as_slice(),
        )?;
        let line = match measure_run(&outcome.run_dir, cfg.options.warmup_steps) {
            (Some(run), _, _) => run_line(&what, &run),
            (None, e, _) => format!("{what}: {}", e.unwrap_or_default()),
        };
        progress.done(&line);
        runs.push(ScaleRun {
            world_size: n,
            dir: outcome.run_dir.clone(),
            status: outcome.status,
        });
        if outcome.status == RunStatus::Interrupted {
            interrupted = Some(
                outcome
                    .manifest
                    .interrupted_by
                    .clone()
                    .unwrap_or_else(|| "a signal".into()),
            );
            break;
        }
    }
    progress.finish();
    let dirs: Vec<PathBuf> = runs.iter().map(|r| r.dir.clone()).collect();
    let inputs = load_runs(&dirs)?;
    let title = format!("ddp-probe scaling: {}", program_name(&cfg.command));
    let rendered = render(
        &inputs,
        None,
        &ReportOptions {
            title: Some(title),
            warmup_steps: cfg.options.warmup_steps,
            ..ReportOptions::default()
        },
    );
    let report = cfg
        .report
        .clone()
        .unwrap_or_else(|| cfg.dir.join("report.html"));
    write_html(&report, &rendered.html)?;
    Ok(ScaleOutcome {
        dir: cfg.dir.clone(),
        report,
        runs,
        scaling: rendered.scaling,
        interrupted,
    })
}

/// Which caps `ddp-probe tune` tries.
#[derive(Clone, Debug, PartialEq)]
pub enum TuneCaps {
    /// These caps (MiB).
    List(Vec<f64>),
    /// A search from advise's prediction.
    Auto,
}

/// What `ddp-probe tune` runs.
#[derive(Clone, Debug, PartialEq)]
pub struct TuneConfig {
    /// The training command.
    pub command: JobCommand,
    /// Ranks per run.
    pub nproc_per_node: usize,
    /// The caps.
    pub caps: TuneCaps,
    /// Runs per cap (at least 1).
    pub repeats: usize,
    /// The series directory.
    pub dir: PathBuf,
    /// Where the report goes (default `<dir>/report.html`).
    pub report: Option<PathBuf>,
    /// Shared options.
    pub options: SeriesOptions,
}

/// What `ddp-probe tune` did.
#[derive(Clone, Debug)]
pub struct TuneOutcome {
    /// Measurements, recommendation and comparison with advise.
    pub result: TuneResult,
    /// The report.
    pub report: PathBuf,
    /// `tune.json` in the series directory.
    pub json: PathBuf,
}

/// The file a tuning series leaves its result in.
pub const TUNE_JSON: &str = "tune.json";

/// Why the `--auto` search stopped early.
enum Stop {
    Interrupted(String),
    Error(SeriesError),
}

/// Runs the candidates, recommends a cap, compares with advise and writes
/// the report and `tune.json`.
pub fn run_tune(cfg: &TuneConfig) -> Result<TuneOutcome, SeriesError> {
    if cfg.nproc_per_node == 0 || cfg.nproc_per_node > MAX_NPROC {
        return Err(SeriesError::InvalidOption {
            option: "--nproc-per-node",
            message: format!(
                "{} is out of range; give 1 to {MAX_NPROC} ranks",
                cfg.nproc_per_node
            ),
        });
    }
    if cfg.repeats == 0 {
        return Err(SeriesError::InvalidOption {
            option: "--repeats",
            message: "give at least 1 run per cap".into(),
        });
    }
    let caps = match &cfg.caps {
        TuneCaps::List(list) => {
            if list.is_empty() {
                return Err(SeriesError::InvalidOption {
                    option: "--bucket-cap-mb",
                    message: "give at least one cap, e.g. --bucket-cap-mb 1,5,10,25,50, or --auto"
                        .into(),
                });
            }
            for &c in list {
                check_cap("--bucket-cap-mb", Some(c))?;
            }
            let mut v = list.clone();
            v.sort_by(f64::total_cmp);
            v.dedup_by(|a, b| same_cap(*a, *b));
            Some(v)
        }
        TuneCaps::Auto => None,
    };
    fs::create_dir_all(&cfg.dir).map_err(|e| SeriesError::io("create", &cfg.dir, e))?;
    let mut result = TuneResult {
        command: cfg.command.display(),
        nproc_per_node: cfg.nproc_per_node,
        steps: cfg.command.steps,
        repeats: cfg.repeats,
        warmup_steps: cfg.options.warmup_steps,
        mode: if caps.is_some() {
            TuneMode::Sweep
        } else {
            TuneMode::Auto
        },
        dir: cfg.dir.display().to_string(),
        candidates: Vec::new(),
        search: Vec::new(),
        recommendation: None,
        prediction: None,
        comparison: Vec::new(),
        accuracy: None,
        notes: Vec::new(),
        interrupted: None,
    };
    let runner = Runner { cfg };
    // The run whose trace advise reads: the first one.
    let first_run: Option<(PathBuf, Option<f64>)>;
    match caps {
        Some(caps) => {
            let total = (caps.len() * cfg.repeats) as u64;
            let progress = Progress::new(total, cfg.options.show_progress);
            result.candidates = caps.iter().map(|&c| TuneCandidate::new(Some(c))).collect();
            // Repeats interleaved over the caps, so slow drift in the
            // machine's speed spreads over every cap alike.
            'outer: for repeat in 1..=cfg.repeats {
                for (k, &cap) in caps.iter().enumerate() {
                    match runner.run(Some(cap), repeat as u32, &progress)? {
                        Ok(run) => result.candidates[k].runs.push(run),
                        Err(sig) => {
                            result.interrupted = Some(sig);
                            break 'outer;
                        }
                    }
                }
            }
            progress.finish();
            first_run = result
                .candidates
                .first()
                .and_then(|c| c.runs.first().map(|r| (PathBuf::from(&r.dir), c.cap_mb)));
        }
        None => {
            let progress = Progress::new(4 * cfg.repeats as u64, cfg.options.show_progress);
            // The job's own setting, as often as every candidate: advise reads
            // the first run, and the rest make it a fair reference.
            let mut baseline = TuneCandidate::new(None);
            for repeat in 1..=cfg.repeats {
                match runner.run(None, repeat as u32, &progress)? {
                    Ok(run) => baseline.runs.push(run),
                    Err(sig) => {
                        result.interrupted = Some(sig);
                        break;
                    }
                }
            }
            let base_dir = baseline.runs.first().map(|r| PathBuf::from(&r.dir));
            first_run = base_dir.clone().map(|d| (d, None));
            result.candidates.push(baseline);
            if result.interrupted.is_none() {
                if let Some(dir) = base_dir {
                    let (start, max_cap, note) = auto_start(&dir, cfg.options.warmup_steps);
                    result.notes.extend(note);
                    let mut measured: Vec<TuneCandidate> = Vec::new();
                    let mut done = cfg.repeats as u64;
                    let mut measure = |caps: &[f64]| -> Result<Vec<Option<Measurement>>, Stop> {
                        let mut batch: Vec<TuneCandidate> =
                            caps.iter().map(|&c| TuneCandidate::new(Some(c))).collect();
                        // Repeats interleaved over the caps of the batch.
                        for repeat in 1..=cfg.repeats {
                            for c in &mut batch {
                                done += 1;
                                progress.grow_to(done + 2 * cfg.repeats as u64);
                                let cap = c.cap_mb;
                                match runner.run(cap, repeat as u32, &progress) {
                                    Ok(Ok(run)) => c.runs.push(run),
                                    Ok(Err(sig)) => {
                                        measured.append(&mut batch);
                                        return Err(Stop::Interrupted(sig));
                                    }
                                    Err(e) => return Err(Stop::Error(e)),
                                }
                            }
                        }
                        let mut out = Vec::with_capacity(batch.len());
                        for mut c in batch {
                            c.measure();
                            out.push(c.measurement);
                            measured.push(c);
                        }
                        Ok(out)
                    };
                    result.notes.push(
                        "--auto interleaves the repeats of a cap's two neighbours, but measures each later step of the search after the one before: on a machine whose load changes, check the caps it found with a sweep (--bucket-cap-mb a,b,c), which interleaves every cap's repeats".into(),
                    );
                    match auto_search(start, AUTO_MIN_CAP_MB, max_cap, &mut measure) {
                        Ok((path, _)) => result.search = path,
                        Err(Stop::Interrupted(sig)) => result.interrupted = Some(sig),
                        Err(Stop::Error(e)) => return Err(e),
                    }
                    result.candidates.extend(measured);
                }
            }
            progress.finish();
        }
    }
    for c in &result.candidates {
        for r in &c.runs {
            if let Some(f) = &r.failure {
                result
                    .notes
                    .push(format!("{} run {} failed: {f}", c.label(), r.repeat));
            } else if r.steady_steps == 0 {
                result.notes.push(format!(
                    "{} run {} has no steady steps (every step is warm-up): give more --steps",
                    c.label(),
                    r.repeat
                ));
            }
        }
    }
    result.finish();
    // advise on the first run's trace, for every cap measured.
    let mut detail_dirs: Vec<PathBuf> = Vec::new();
    if let Some((dir, run_cap)) = &first_run {
        detail_dirs.push(dir.clone());
        let input = load_runs(std::slice::from_ref(dir))?.into_iter().next();
        if let Some(run) = input.as_ref().and_then(|i| i.run.as_ref()) {
            let caps: Vec<f64> = result.candidates.iter().filter_map(|c| c.cap_mb).collect();
            let advice = advise(
                run,
                &AdviceOptions {
                    summary: summary_options(cfg.options.warmup_steps),
                    candidate_caps_mib: if caps.is_empty() {
                        AdviceOptions::default().candidate_caps_mib
                    } else {
                        caps
                    },
                    ..AdviceOptions::default()
                },
            );
            let label = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let (prediction, comparison) =
                compare_with_advice(&advice, &label, *run_cap, &mut result.candidates);
            result.prediction = Some(prediction);
            result.comparison = comparison;
            result.compare_accuracy();
        } else {
            result
                .comparison
                .push("The first run left no loadable trace, so advise could not predict.".into());
        }
    }
    if let Some(r) = &result.recommendation {
        if let Some(run) = result
            .candidates
            .iter()
            .find(|c| c.cap_mb.is_some_and(|x| same_cap(x, r.cap_mb)))
            .and_then(|c| c.runs.iter().find(|r| r.failure.is_none()))
        {
            let d = PathBuf::from(&run.dir);
            if !detail_dirs.contains(&d) {
                detail_dirs.push(d);
            }
        }
    }
    let json = cfg.dir.join(TUNE_JSON);
    let text = serde_json::to_string_pretty(&result).map_err(|source| {
        SeriesError::Report(probe_reports::ReportError::Json {
            what: "the tuning result",
            source,
        })
    })?;
    fs::write(&json, text + "\n").map_err(|e| SeriesError::io("write", &json, e))?;
    let inputs: Vec<RunInput> = if detail_dirs.is_empty() {
        Vec::new()
    } else {
        load_runs(&detail_dirs)?
    };
    let rendered = render(
        &inputs,
        Some(&result),
        &ReportOptions {
            title: Some(format!(
                "ddp-probe bucket_cap_mb tuning: {}",
                program_name(&cfg.command)
            )),
            warmup_steps: cfg.options.warmup_steps,
            ..ReportOptions::default()
        },
    );
    let report = cfg
        .report
        .clone()
        .unwrap_or_else(|| cfg.dir.join("report.html"));
    write_html(&report, &rendered.html)?;
    Ok(TuneOutcome {
        result,
        report,
        json,
    })
}

/// Where the `--auto` search starts (advise's recommendation on the
/// baseline, else the cap the baseline ran with, else 25 MiB) and the
/// largest cap worth trying (the first power-of-two multiple of the start
/// that holds every gradient in one bucket).
fn auto_start(dir: &Path, warmup: u64) -> (f64, f64, Vec<String>) {
    let mut notes = Vec::new();
    let input = load_runs(&[dir.to_path_buf()])
        .ok()
        .and_then(|v| v.into_iter().next());
    let Some(run) = input.as_ref().and_then(|i| i.run.as_ref()) else {
        notes.push(
            "the baseline run left no trace; the search starts from PyTorch's default of 25 MiB"
                .into(),
        );
        return (25.0, AUTO_MAX_CAP_MB, notes);
    };
    let advice = advise(
        run,
        &AdviceOptions {
            summary: summary_options(warmup),
            ..AdviceOptions::default()
        },
    );
    let ddp = run.ranks.iter().find_map(|r| r.header.ddp.as_ref());
    let start = match &advice.recommendation {
        Some(r) => r.cap_mb,
        None => {
            let cap = ddp
                .and_then(|d| d.bucket_cap_mb)
                .filter(|c| *c > 0.0)
                .unwrap_or(25.0);
            notes.push(format!(
                "advise had no recommendation on the baseline ({}); the search starts from {} MiB",
                advice.missing.join("; "),
                mib(cap)
            ));
            cap
        }
    };
    let total_mib = ddp
        .map(|d| d.params.iter().map(|p| p.bytes).sum::<u64>() as f64 / (1024.0 * 1024.0))
        .filter(|t| *t > 0.0);
    let (start, max_cap) = match total_mib {
        Some(t) if t > start => {
            let k = (t / start).log2().ceil().max(0.0);
            (start, (start * k.exp2()).min(AUTO_MAX_CAP_MB.max(start)))
        }
        Some(t) => {
            // Every cap of at least the gradients' size gives one bucket: start
            // from the smallest of the halvings that still does, and go down.
            let mut c = start;
            while c / 2.0 >= t {
                c /= 2.0;
            }
            if c < start {
                notes.push(format!(
                    "{} MiB holds all {} of gradients in one bucket, as does {} MiB: the search starts from {} MiB and only goes down",
                    mib(start),
                    probe::units::bytes(t * 1024.0 * 1024.0),
                    mib(c),
                    mib(c)
                ));
            }
            (c, c)
        }
        None => (start, AUTO_MAX_CAP_MB.max(start)),
    };
    (start, max_cap, notes)
}

fn summary_options(warmup: u64) -> SummaryOptions {
    SummaryOptions {
        warmup_steps: warmup,
        ..SummaryOptions::default()
    }
}

/// Launches the runs of a tuning series.
struct Runner<'a> {
    cfg: &'a TuneConfig,
}

impl Runner<'_> {
    /// One run of `cap` (repeat `repeat`): `Ok(Err(signal))` when it was
    /// interrupted.
    fn run(
        &self,
        cap: Option<f64>,
        repeat: u32,
        progress: &Progress,
    ) -> Result<Result<TuneRun, String>, SeriesError> {
        let cfg = self.cfg;
        let (name, what) = match cap {
            Some(c) => (
                format!("cap-{}-r{repeat}", mib(c)),
                format!("bucket_cap_mb {} run {repeat}", mib(c)),
            ),
            None => (
                format!("default-r{repeat}"),
                "job default (baseline)".to_owned(),
            ),
        };
        let dir = cfg.dir.join(name);
        progress.start(&what);
        let outcome = launch_one(
            &cfg.command,
            cfg.nproc_per_node,
            cap,
            &dir,
            &cfg.options,
            progress,
            &what,
            &[],
        )?;
        if outcome.status == RunStatus::Interrupted {
            progress.done(&format!("{what}: interrupted"));
            return Ok(Err(outcome
                .manifest
                .interrupted_by
                .clone()
                .unwrap_or_else(|| "a signal".into())));
        }
        let (run, err, recorded_cap) = measure_run(&outcome.run_dir, cfg.options.warmup_steps);
        // A job that builds DDP with its own cap ignores the one handed to it: found on
        // PyTorch's tutorial trainer, whose "1 MiB" and "25 MiB" runs both recorded 25 MiB and
        // tune recommended one of two identical settings.
        if let (Some(asked), Some(recorded)) = (cap, recorded_cap) {
            if (asked - recorded).abs() > 1e-6 * asked.max(1.0) {
                progress.done(&format!("{what}: the job ignored the cap"));
                return Err(SeriesError::CapNotApplied {
                    asked: mib(asked),
                    recorded: mib(recorded),
                    dir: outcome.run_dir.display().to_string(),
                });
            }
        }
        let run = run.unwrap_or_else(|| TuneRun {
            dir: outcome.run_dir.display().to_string(),
            repeat,
            status: outcome.status.to_string(),
            steady_steps: 0,
            median_step_ns: None,
            failure: Some(err.unwrap_or_else(|| "could not be read".into())),
            step_times_ns: Vec::new(),
        });
        let mut run = run;
        run.repeat = repeat;
        progress.done(&run_line(&what, &run));
        Ok(Ok(run))
    }
}

/// Reads a finished run: its steady step times and whether it failed.
fn measure_run(dir: &Path, warmup: u64) -> (Option<TuneRun>, Option<String>, Option<f64>) {
    let input = match load_runs(&[dir.to_path_buf()]) {
        Ok(v) => match v.into_iter().next() {
            Some(i) => i,
            None => return (None, Some("no run found".into()), None),
        },
        Err(e) => return (None, Some(e.to_string()), None),
    };
    let recorded_cap = input.run.as_ref().and_then(|run| {
        run.ranks
            .iter()
            .find_map(|r| r.header.ddp.as_ref().and_then(|d| d.bucket_cap_mb))
    });
    let reasons = failure_reasons(&input);
    let mut times: Vec<f64> = input
        .run
        .as_ref()
        .map(|run| {
            step_breakdowns(run, &summary_options(warmup))
                .into_iter()
                .filter(|s| s.warmup.is_none())
                .map(|s| s.step_ns as f64)
                .collect()
        })
        .unwrap_or_default();
    let median = Measurement::of(&mut times.clone()).map(|m| m.median_ns);
    times.shrink_to_fit();
    let status = input
        .manifests
        .first()
        .map_or("unknown".to_owned(), |m| m.status.to_string());
    (
        Some(TuneRun {
            dir: dir.display().to_string(),
            repeat: 1,
            status,
            steady_steps: times.len() as u64,
            median_step_ns: median,
            failure: reasons.into_iter().next(),
            step_times_ns: times,
        }),
        None,
        recorded_cap,
    )
}

fn run_line(what: &str, run: &TuneRun) -> String {
    match (&run.failure, run.median_step_ns) {
        (Some(f), _) => format!("{what}: failed: {f} ({})", run.dir),
        (None, Some(m)) => format!(
            "{what}: median step {} over {} steady rank-steps ({})",
            ns(m),
            run.steady_steps,
            run.dir
        ),
        (None, None) => format!("{what}: no steady steps ({})", run.dir),
    }
}

fn program_name(cmd: &JobCommand) -> String {
    let (p, a) = cmd.words();
    probe_launch::rundir::run_name(&p, &a)
}

fn check_cap(option: &'static str, cap: Option<f64>) -> Result<(), SeriesError> {
    match cap {
        Some(c) if !(c.is_finite() && c > 0.0) => Err(SeriesError::InvalidOption {
            option,
            message: format!("{c} is not a usable cap; give a positive number of MiB"),
        }),
        _ => Ok(()),
    }
}

/// Launches one run with a quiet console and `env` added to every rank's
/// environment; the launcher's failure and hang messages go through
/// `progress`.
#[allow(clippy::too_many_arguments)]
fn launch_one(
    cmd: &JobCommand,
    nproc: usize,
    cap: Option<f64>,
    dir: &Path,
    opts: &SeriesOptions,
    progress: &Progress,
    what: &str,
    env: &[(OsString, OsString)],
) -> Result<probe_launch::Outcome, SeriesError> {
    let (program, args) = cmd.words();
    let mut config = LaunchConfig::new(program, args);
    config.nproc_per_node = nproc;
    config.out_dir = Some(dir.to_path_buf());
    config.bucket_cap_mb = cap;
    config.console = ConsoleMode::Quiet;
    config.hang_timeout = opts.hang_timeout;
    config.env.extend(env.iter().cloned());
    let mut observer = |e: &Event| {
        if matches!(
            e,
            Event::FirstFailure(_)
                | Event::LastWords { .. }
                | Event::Hang(_)
                | Event::Interrupted { .. }
        ) {
            if let Some(m) = e.message() {
                for line in m.lines() {
                    progress.line(&format!("{what}: {line}"));
                }
            }
        }
    };
    launch(&config, &mut observer).map_err(|source| SeriesError::Launch {
        what: what.to_owned(),
        source,
    })
}

/// The progress bar of a series, and its one-line messages (printed above
/// the bar on a terminal, as plain lines otherwise, not at all when
/// progress is off).
struct Progress {
    bar: ProgressBar,
    show: bool,
}

impl Progress {
    fn new(len: u64, show: bool) -> Progress {
        let target = if show {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(Some(len), target);
        let style = ProgressStyle::with_template(
            "{spinner} [{bar:28}] {pos}/{len} runs · {elapsed} · {wide_msg}",
        )
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        if show {
            bar.enable_steady_tick(Duration::from_millis(200));
        }
        Progress { bar, show }
    }

    fn start(&self, what: &str) {
        self.bar.set_message(what.to_owned());
    }

    fn line(&self, text: &str) {
        if !self.show {
            return;
        }
        if self.bar.is_hidden() {
            eprintln!("ddp-probe: {text}");
        } else {
            self.bar.println(format!("ddp-probe: {text}"));
        }
    }

    fn done(&self, text: &str) {
        self.line(text);
        self.bar.inc(1);
    }

    fn grow_to(&self, len: u64) {
        if self.bar.length().is_some_and(|l| l < len) {
            self.bar.set_length(len);
        }
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
