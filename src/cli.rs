//! Command-line definition of `ddp-probe` (clap derive): every command, flag and help text.
//!
//! Nothing here does work; `main.rs` turns the parsed arguments into calls of the
//! library crates.

use std::path::PathBuf;

use clap::builder::BoolishValueParser;
use clap::{Args, Parser, Subcommand, ValueEnum};

/// Top-level help, shown by `ddp-probe --help`.
const ABOUT: &str = "See why a data-parallel training step is slow or why the job died.";

const LONG_ABOUT: &str = "\
See why a data-parallel training step is slow or why the job died.

ddp-probe launches data-parallel training jobs the way torchrun does, records every
step of every rank down to each gradient bucket's all-reduce, and turns those
recordings into timelines and answers.";

const AFTER_HELP: &str = "\
Examples:
  ddp-probe run --nproc-per-node 2 -- target/release/train --epochs 3
  ddp-probe run --nproc-per-node 4 -- python train.py --lr 0.1
  ddp-probe summary runs/latest
  ddp-probe explain runs/latest
  ddp-probe export chrome runs/latest -o trace.json

A RUN argument is a run directory written by `ddp-probe run` (default: runs/latest).
Several directories of one multi-node run may be given; they are merged.";

/// `ddp-probe`: parsed command line.
#[derive(Debug, Parser)]
#[command(name = "ddp-probe", version, about = ABOUT, long_about = LONG_ABOUT, after_help = AFTER_HELP)]
#[command(propagate_version = true, arg_required_else_help = true)]
pub struct Cli {
    /// Log what ddp-probe itself does (-v: info, -vv: debug); RUST_LOG also works.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,

    /// Refuse a trace file with a damaged line in its middle (not JSON, or a record that breaks
    /// the format) instead of skipping the line with a warning that names the file and line;
    /// every command reads traces by the same rule (also DDP_PROBE_STRICT=1).
    #[arg(long, global = true)]
    pub strict: bool,

    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Every `ddp-probe` command.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Launch a training command on N ranks, like torchrun, and record everything.
    #[command(after_help = RUN_AFTER_HELP)]
    Run(Box<RunArgs>),
    /// Where the step time goes: compute, overlapped and exposed communication, per bucket.
    #[command(after_help = "\
Steps after warm-up only (the first iteration and the bucket rebuild are listed apart).
Overlapped + exposed communication = total communication. Bandwidths follow nccl-tests
(algbw = bytes / time; all_reduce busbw = algbw * 2(n-1)/n). The bucket_cap_mb advice of
`ddp-probe advise` is appended.

Examples:
  ddp-probe summary                 # runs/latest
  ddp-probe summary runs/20261122-101500-train --json > summary.json")]
    Summary(AnalyzeArgs),
    /// bucket_cap_mb advice from a single trace: predicted step time per candidate cap.
    #[command(after_help = "\
Takes the cost of a collective from the start-up calibration that `ddp-probe run` records (a
sweep of all-reduce sizes, and how compute and communication slow each other down), else fits
latency and bandwidth to the run's collectives. Replays the recorded run first (and prints how
close it gets), then replays PyTorch's bucket assignment over the recorded gradient-ready times
for each candidate cap and for per-bucket caps cut from those times (bucket_cap_mb_list),
simulates the overlapped schedule, and recommends the setting with the shortest predicted step,
with how sure it is.

Example:
  ddp-probe advise runs/latest
  ddp-probe export chrome --what-if runs/latest -o whatif.json   # the simulated schedules too")]
    Advise(AnalyzeArgs),
    /// Where the step time changed between two runs, and which settings differ.
    #[command(after_help = "\
Compares the steady steps of RUN with those of BASELINE: the median step with a 95% interval
of each median (a change inside the step-to-step spread, or under the 3% by which repeated
runs of one job differ, is said to be no change these runs can show), the mean of each
part of the step (data wait, forward, backward, exposed communication, optimizer, other) and
of the time between steps (the loop's tail: an evaluation or a checkpoint every N steps) with
the largest change first, every rank's median step, the straggler, and the settings that
differ (world size, hosts, command, DDP's bucket_cap_mb and buckets, the NCCL_/TORCH_/OMP_
environment the launcher recorded). When the time between steps changed, the answer starts
with the rate by the wall clock, which the median step cannot show.

Examples:
  ddp-probe compare runs/20261201-090000-train runs/latest
  ddp-probe compare before/ after/ --json")]
    Compare(CompareArgs),
    /// Why a run failed or hung: findings ranked root cause first, with evidence and fixes.
    #[command(after_help = "\
Reads the run's manifest (exit codes, signals, hang report), every rank's stdout/stderr,
NCCL_DEBUG logs and the traces' last collectives; plain log files work too, as pasted: rank
prefixes ([rank3]:, [default0]:, srun -l, mpirun --tag-output, docker compose), log collectors'
prefixes (time stamps, moreutils' ts, kubectl --prefix, the system log, Ray, SkyPilot,
Determined, pdsh), line numbers (cat -n, grep -n), a logger's prefix repeated on every line
(`... - root - ERROR - `, `INFO:root:`) or on every line of a traceback, a paste's Markdown
fences and colour codes are looked through; a log pasted newest line first (a log viewer's
order, told by its time stamps) is read oldest first. A log with no error in it is read for
where it ends (in the rendezvous, right after NCCL's set-up, after start-up), at low
confidence. Each finding says how sure it is (high, medium, low) and, when it is not sure, which
log would decide; a low-confidence first finding is headlined as a possible cause, not the most
likely one.

Examples:
  ddp-probe explain                 # runs/latest
  ddp-probe explain slurm-1234.out nccl.log --json
  kubectl logs POD | ddp-probe explain -")]
    Explain(ExplainArgs),
    /// Convert a recorded run into another tool's format.
    #[command(subcommand)]
    Export(ExportCommand),
    /// Interactive terminal timeline: every rank's steps, buckets and all-reduces.
    #[command(after_help = "\
One lane group per rank (compute, buckets, communication, data, GPU streams) on a time axis
with step boundaries; all-reduce time with no compute running (exposed communication) is red.
Zoom and pan with h/l/j/k, +/-, the arrows and the mouse; n/p step, s slowest step, e most
exposed communication, Tab or click selects, b highlights a bucket on every rank; panels with
the step breakdown (1), bucket_cap_mb advice (2) and explain findings (3); m shows heatmaps of
ranks × steps (step time, exposed communication, lateness; c changes the metric, Enter jumps to
a cell's step). ? lists every key.

Examples:
  ddp-probe tui                     # runs/latest
  ddp-probe tui runs/20261122-101500-train --ascii
  ddp-probe tui --live runs/latest  # while `ddp-probe run` records it")]
    Tui(TuiArgs),
    /// One self-contained HTML report of runs: breakdown, the median step, buckets, advice, failures.
    #[command(after_help = REPORT_AFTER_HELP)]
    Report(ReportArgs),
    /// Run a job at several world sizes and report how it scales.
    #[command(after_help = SCALE_AFTER_HELP)]
    Scale(ScaleArgs),
    /// Measure the step time for several bucket_cap_mb values and recommend one.
    #[command(after_help = TUNE_AFTER_HELP)]
    Tune(TuneArgs),
    /// Turn other tools' traces into a run (PyTorch profiler traces: `import kineto`).
    #[command(subcommand)]
    Import(ImportCommand),
    /// GPU time breakdown and comm/comp overlap of PyTorch profiler traces, as HTA defines them.
    #[command(after_help = BREAKDOWN_AFTER_HELP)]
    Breakdown(BreakdownArgs),
}

const BREAKDOWN_AFTER_HELP: &str = "\
Holistic Trace Analysis' temporal breakdown (idle, compute, non-compute time of each rank's GPU)
and communication/computation overlap, computed with HTA 0.5.0's rules: the last ProfilerStep
dropped, ns timestamps rounded inward, kernels classed by name (docs/hta-definitions.md).
TRACE is a PyTorch profiler trace (.json or .json.gz, one per rank), a folder of them, or a run
written by `ddp-probe import kineto` (its stored breakdown).

Examples:
  ddp-probe breakdown traces/            # one file per rank
  ddp-probe breakdown traces/ --include-last-step --json";

/// Arguments of `ddp-probe breakdown`.
#[derive(Debug, Args)]
pub struct BreakdownArgs {
    /// PyTorch profiler traces, folders of them, or an imported run.
    #[arg(value_name = "TRACE", required = true)]
    pub inputs: Vec<PathBuf>,

    /// Keep the last ProfilerStep (HTA's include_last_profiler_step=True).
    #[arg(long)]
    pub include_last_step: bool,

    /// Do not round ns-resolution timestamps inward (HTA_DISABLE_NS_ROUNDING=1).
    #[arg(long)]
    pub no_ns_rounding: bool,

    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `ddp-probe import ...`
#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// PyTorch profiler (Kineto) traces, one per rank, into a run directory.
    #[command(after_help = "\
Reads torch.profiler / tensorboard_trace_handler traces (.json or .json.gz, several GB are
streamed), one per rank (rank and world size from distributedInfo), and writes a run that
summary, tui, report and advise read: steps from ProfilerStep#N, GPU kernels per stream split
into compute and NCCL communication, collectives with their sizes, forward/backward/optimizer
from the profiler's annotations, gloo collectives of CPU-only jobs. A file cut off mid-write is
imported up to the cut, with a warning. The run also keeps the GPU time breakdown with HTA's
definitions (shown by `ddp-probe summary`).

Examples:
  ddp-probe import kineto ./log/ -o runs/profiled
  ddp-probe import kineto rank0.json.gz rank1.json.gz -o runs/profiled && ddp-probe summary runs/profiled")]
    Kineto(ImportKinetoArgs),
}

/// Arguments of `ddp-probe import kineto`.
#[derive(Debug, Args)]
pub struct ImportKinetoArgs {
    /// Trace files (.json, .json.gz) or folders of them.
    #[arg(value_name = "TRACE", required = true)]
    pub inputs: Vec<PathBuf>,

    /// The run directory to write (must not hold traces yet).
    #[arg(short, long, value_name = "RUN")]
    pub output: PathBuf,

    /// Print what was imported as JSON.
    #[arg(long)]
    pub json: bool,
}

const REPORT_AFTER_HELP: &str = "\
One HTML file with inline CSS and SVG charts: no scripts, nothing fetched, readable offline and
on a phone. Per run: configuration and environment, step-time breakdown per rank, the median
step as a per-rank timeline (buckets' ready windows, exposed communication in red), buckets,
communication per operation, stragglers, bucket_cap_mb advice, and why the run failed. Runs at
two or more world sizes add throughput against world size with the ideal line, scaling
efficiency and the share of exposed communication. A folder written by `ddp-probe scale` or
`ddp-probe tune` stands for all its runs.

Examples:
  ddp-probe report runs/latest -o report.html
  ddp-probe report runs/scale-20261122-101500 -o scaling.html";

const SCALE_AFTER_HELP: &str = "\
Runs the command once per world size on this machine (quiet console; every run keeps its own
run directory in the series directory), then writes the report with the scaling section.
`--steps N` is appended to the command when given. Unless OMP_NUM_THREADS is set, every run
gets OMP_NUM_THREADS=1 (the launcher sets it only for more than one rank per node), so the
runs compare like with like.

Example:
  ddp-probe scale --nproc 1,2,4 --steps 50 -- target/release/lm";

const TUNE_AFTER_HELP: &str = "\
Runs the command once per candidate cap and repeat (DDP_PROBE_BUCKET_CAP_MB), leaves out each
rank's warm-up steps, and prints the median step time with its spread per cap, the recommended
cap, and how the measurement compares with what `ddp-probe advise` predicted from the first
run's trace alone. --auto starts from that prediction and halves or doubles the cap while the
step gets faster. The report and tune.json go to the series directory.

Examples:
  ddp-probe tune --nproc-per-node 2 --steps 40 -- target/release/lm
  ddp-probe tune --auto --repeats 2 --nproc-per-node 2 --json -- target/release/lm";

/// Arguments of `ddp-probe report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Run directories, or folders of them [default: runs/latest].
    #[arg(value_name = "RUN")]
    pub runs: Vec<PathBuf>,

    /// Where to write the HTML.
    #[arg(short, long, value_name = "FILE", default_value = "report.html")]
    pub output: PathBuf,

    /// Leading steps of each rank counted as warm-up.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub warmup: u64,

    /// The report's title [default: from the program's name].
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
}

/// Arguments of `ddp-probe scale`.
#[derive(Debug, Args)]
pub struct ScaleArgs {
    /// World sizes to run, comma-separated (one machine).
    #[arg(long, value_name = "N,N,...", value_delimiter = ',', required = true)]
    pub nproc: Vec<usize>,

    /// Training steps per run, appended to the command as `--steps N`.
    #[arg(long, value_name = "N")]
    pub steps: Option<u64>,

    /// Gradient bucket size cap in MiB handed to every run (DDP_PROBE_BUCKET_CAP_MB).
    #[arg(long, value_name = "MB")]
    pub bucket_cap_mb: Option<f64>,

    /// Series directory [default: runs/scale-<time>].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,

    /// Where to write the report [default: <DIR>/report.html].
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Leading steps of each rank counted as warm-up.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub warmup: u64,

    /// Stop a run in which no rank made progress for this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub hang_timeout: Option<f64>,

    /// Print the scaling series as JSON on stdout.
    #[arg(long)]
    pub json: bool,

    /// The training command and its arguments, after `--`.
    #[arg(required = true, last = true, value_name = "CMD")]
    pub command: Vec<std::ffi::OsString>,
}

/// Arguments of `ddp-probe tune`.
#[derive(Debug, Args)]
pub struct TuneArgs {
    /// Candidate caps in MiB, comma-separated [default: 1,5,10,25,50].
    #[arg(
        long,
        value_name = "MB,MB,...",
        value_delimiter = ',',
        conflicts_with = "auto"
    )]
    pub bucket_cap_mb: Vec<f64>,

    /// Search instead of sweeping: start from advise's prediction, halve or double while faster.
    #[arg(long)]
    pub auto: bool,

    /// Training steps per run, appended to the command as `--steps N`.
    #[arg(long, value_name = "N")]
    pub steps: Option<u64>,

    /// Runs per candidate cap.
    #[arg(long, value_name = "K", default_value_t = 3)]
    pub repeats: usize,

    /// Ranks per run on this machine: a number, or `gpu`, `cpu` or `auto` as for `run`
    /// (`auto`: one per visible GPU, else one per CPU). Tuning needs at least 2: one rank
    /// all-reduces nothing.
    #[arg(long, alias = "nproc_per_node", value_name = "N|auto|gpu|cpu", default_value = "auto",
          value_parser = parse_nproc)]
    pub nproc_per_node: Nproc,

    /// Series directory [default: runs/tune-<time>].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,

    /// Where to write the report [default: <DIR>/report.html].
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Leading steps of each rank counted as warm-up.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub warmup: u64,

    /// Stop a run in which no rank made progress for this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub hang_timeout: Option<f64>,

    /// Print the result as JSON on stdout.
    #[arg(long)]
    pub json: bool,

    /// Record and tune a PyTorch program that builds its DistributedDataParallel model without
    /// ddp-probe's line or the cap variable (a framework's, the script's own), as `run
    /// --auto-instrument` does: each candidate cap replaces the program's own.
    #[arg(long, env = "DDP_PROBE_AUTO_INSTRUMENT", value_parser = BoolishValueParser::new())]
    pub auto_instrument: bool,

    /// The training command and its arguments, after `--`.
    #[arg(required = true, last = true, value_name = "CMD")]
    pub command: Vec<std::ffi::OsString>,
}

/// Arguments of `ddp-probe tui`.
#[derive(Debug, Args)]
pub struct TuiArgs {
    /// Run directories (several for a multi-node run) [default: runs/latest].
    #[arg(value_name = "RUN")]
    pub runs: Vec<PathBuf>,

    /// Draw with plain ASCII only (no block or box-drawing characters).
    #[arg(long)]
    pub ascii: bool,

    /// Keep reloading one run while it is recorded (e.g. `ddp-probe run` in another terminal).
    #[arg(long)]
    pub live: bool,
}

/// Arguments of `ddp-probe summary` and `ddp-probe advise`.
#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// Run directories (several for a multi-node run) [default: runs/latest].
    #[arg(value_name = "RUN")]
    pub runs: Vec<PathBuf>,

    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,

    /// Leading steps of each rank counted as warm-up.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub warmup: u64,

    /// For the advice: the fixed cost of one collective (e.g. 50us, 0.2ms), used with
    /// --bandwidth instead of the cost fitted to the trace (when all collectives have one
    /// size, or their times are too noisy to show the bandwidth).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_ns, requires = "bandwidth")]
    pub latency: Option<f64>,

    /// For the advice: the bus bandwidth of the network (as nccl-tests reports it, e.g.
    /// 10GB/s, 800MiB/s, 100Gbit/s), used with --latency.
    #[arg(long, value_name = "RATE", value_parser = parse_rate_bytes_per_s, requires = "latency")]
    pub bandwidth: Option<f64>,

    /// For the advice: the caps (MiB) to simulate, comma-separated, instead of the default
    /// 0.25,0.5,1,2,4,8,16,25,50,100 (the current cap is always added).
    #[arg(long, value_name = "MB,MB,...", value_delimiter = ',', value_parser = parse_positive_mb)]
    pub candidates: Vec<f64>,
}

/// A cap in MiB: a positive number.
fn parse_positive_mb(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(mb) if mb.is_finite() && mb > 0.0 => Ok(mb),
        _ => Err(format!(
            "{s:?} is not a positive number of MiB (e.g. 0.5 or 25)"
        )),
    }
}

/// Splits "12.5unit" into the number and the unit.
fn split_number(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E' || c == '+'))
        .unwrap_or(s.len());
    let v: f64 = s[..end].parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some((v, s[end..].trim()))
}

/// Parses a duration such as `50us`, `0.2ms`, `1s` or `800ns` into nanoseconds.
pub fn parse_duration_ns(s: &str) -> Result<f64, String> {
    let bad =
        || format!("{s:?} is not a duration: write a number and a unit, e.g. 50us, 0.2ms, 1s");
    let (v, unit) = split_number(s).ok_or_else(bad)?;
    let scale = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return Err(bad()),
    };
    Ok(v * scale)
}

/// Parses a rate such as `10GB/s`, `800MiB/s` or `100Gbit/s` into bytes per second
/// (must be above zero).
pub fn parse_rate_bytes_per_s(s: &str) -> Result<f64, String> {
    let bad = || {
        format!(
            "{s:?} is not a bandwidth: write a number and a unit, e.g. 10GB/s, 800MiB/s, 100Gbit/s"
        )
    };
    let (v, unit) = split_number(s).ok_or_else(bad)?;
    let scale = match unit {
        "B/s" => 1.0,
        "KB/s" | "kB/s" => 1e3,
        "MB/s" => 1e6,
        "GB/s" => 1e9,
        "KiB/s" => 1024.0,
        "MiB/s" => 1024.0 * 1024.0,
        "GiB/s" => 1024.0 * 1024.0 * 1024.0,
        "Mbit/s" | "Mb/s" => 1e6 / 8.0,
        "Gbit/s" | "Gb/s" => 1e9 / 8.0,
        _ => return Err(bad()),
    };
    let r = v * scale;
    if r > 0.0 {
        Ok(r)
    } else {
        Err(format!("{s:?}: the bandwidth must be above zero"))
    }
}

/// Arguments of `ddp-probe compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The run to compare against (a run directory).
    #[arg(value_name = "BASELINE")]
    pub baseline: PathBuf,

    /// The run to compare (a run directory).
    #[arg(value_name = "RUN")]
    pub run: PathBuf,

    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,

    /// Leading steps of each rank counted as warm-up.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub warmup: u64,
}

/// Arguments of `ddp-probe explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// Run directories or log files (`-`: a log on stdin) [default: runs/latest].
    #[arg(value_name = "RUN|LOGFILE")]
    pub inputs: Vec<PathBuf>,

    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

const RUN_AFTER_HELP: &str = "\
Every rank gets torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
GROUP_RANK, MASTER_ADDR, MASTER_PORT, ...), so torchrun programs, Python ones included,
run unchanged. The run directory keeps the manifest (command, ranks, exit statuses),
each rank's stdout/stderr, NCCL_DEBUG logs and the traces the reference DDP records.

When a rank fails, the others are stopped (TERM, then KILL after --grace) and ddp-probe
exits with that rank's status. Ctrl-C stops every rank and keeps the run directory.

torchrun's spellings work too (--nproc_per_node, --master_port, --rdzv_endpoint, -m,
--no-python, --standalone; PET_* variables), and so does a bare script: `train.py ARGS`
runs as `python3 -u train.py ARGS`, with the python3 beside ddp-probe when there is one (the
environment that pip-installed it), else from PATH (DDP_PROBE_PYTHON names another).

Examples:
  ddp-probe run --nproc-per-node 2 -- target/release/train --epochs 3
  ddp-probe run --nproc_per_node 2 train.py --lr 0.1
  ddp-probe run --nproc-per-node 2 --hang-timeout 60 -- python train.py
  # two machines, run on each with its node rank and the same secret token:
  export DDP_PROBE_STORE_TOKEN=$(openssl rand -hex 16)   # once, then on every node
  ddp-probe run --nnodes 2 --node-rank 0 --nproc-per-node 8 \\
      --rdzv-endpoint node0:29500 --rdzv-id job42 -- python train.py";

/// Arguments of `ddp-probe run`. Every flag also has torchrun's spelling
/// (`--nproc_per_node`) and is read from torchrun's `PET_` variable when not
/// given (`PET_NPROC_PER_NODE`: Kubeflow's PyTorchJob sets those).
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Ranks (processes) to start on this machine: a number, or `gpu` (one per visible GPU),
    /// `cpu` (one per CPU) or `auto` (`gpu` when GPUs are visible, else `cpu`), as in torchrun.
    #[arg(long, alias = "nproc_per_node", env = "PET_NPROC_PER_NODE", value_name = "N|auto|gpu|cpu",
          default_value = "1", value_parser = parse_nproc)]
    pub nproc_per_node: Nproc,

    /// Machines taking part in the run (`N`, or torchrun's `N:N`).
    #[arg(long, env = "PET_NNODES", value_name = "N", default_value = "1", value_parser = parse_nnodes)]
    pub nnodes: usize,

    /// This machine's index among the --nnodes machines (0 hosts the rendezvous).
    #[arg(
        long,
        alias = "node_rank",
        env = "PET_NODE_RANK",
        value_name = "R",
        default_value_t = 0
    )]
    pub node_rank: usize,

    /// Address of node 0, where rank 0 hosts the rendezvous store [default: 127.0.0.1].
    #[arg(
        long,
        alias = "master_addr",
        env = "PET_MASTER_ADDR",
        value_name = "ADDR"
    )]
    pub master_addr: Option<String>,

    /// Port of the rendezvous store on node 0 [default: a free port, single machine only].
    #[arg(
        long,
        alias = "master_port",
        env = "PET_MASTER_PORT",
        value_name = "PORT"
    )]
    pub master_port: Option<u16>,

    /// HOST:PORT of the rendezvous, as in torchrun: it takes the place of --master-addr and
    /// --master-port (and their PET_ variables), which are then ignored.
    #[arg(
        long,
        alias = "rdzv_endpoint",
        env = "PET_RDZV_ENDPOINT",
        value_name = "HOST:PORT"
    )]
    pub rdzv_endpoint: Option<String>,

    /// Identifier shared by all machines of one run [default: generated].
    #[arg(long, alias = "rdzv_id", env = "PET_RDZV_ID", value_name = "ID")]
    pub rdzv_id: Option<String>,

    /// File holding the run's secret store token, on a filesystem every node sees: node 0
    /// writes a new random token there (mode 600) when it is missing, the other nodes wait for
    /// it; a file other users can read is refused. Or set DDP_PROBE_STORE_TOKEN in every node's
    /// environment instead. The token itself is never taken on the command line, where `ps`
    /// shows it to every user. Needed on several nodes.
    #[arg(
        long,
        visible_alias = "rdzv-token",
        alias = "rdzv_token_file",
        alias = "rdzv_token",
        value_name = "FILE"
    )]
    pub rdzv_token_file: Option<PathBuf>,

    /// torchrun's rendezvous backend: `c10d` and `static` are accepted (both mean the store on
    /// node 0 that ddp-probe runs); others are refused.
    #[arg(
        long,
        alias = "rdzv_backend",
        env = "PET_RDZV_BACKEND",
        value_name = "BACKEND"
    )]
    pub rdzv_backend: Option<String>,

    /// torchrun's rendezvous options (accepted and ignored).
    #[arg(
        long,
        alias = "rdzv_conf",
        env = "PET_RDZV_CONF",
        value_name = "K=V,..."
    )]
    pub rdzv_conf: Option<String>,

    /// A single machine with its own rendezvous on a free local port (the default on one
    /// machine), as torchrun's --standalone.
    #[arg(long, env = "PET_STANDALONE", value_parser = BoolishValueParser::new())]
    pub standalone: bool,

    /// torchrun's restarts: when a rank fails (non-zero exit or a signal), stop all ranks and
    /// start them all again, up to N times (TORCHELASTIC_RESTART_COUNT=1, 2, ...), keeping each
    /// failed attempt in the run directory's attempts/<n>/; a hang or Ctrl-C is not restarted.
    #[arg(
        long,
        alias = "max_restarts",
        env = "PET_MAX_RESTARTS",
        value_name = "N",
        default_value_t = 0
    )]
    pub max_restarts: u32,

    /// torchrun's agent polling interval (accepted and ignored: ranks are watched continuously).
    #[arg(
        long,
        alias = "monitor_interval",
        env = "PET_MONITOR_INTERVAL",
        value_name = "SECONDS"
    )]
    pub monitor_interval: Option<f64>,

    /// Run the command as a Python module (`python -m CMD ...`), as torchrun's -m.
    #[arg(short = 'm', long, env = "PET_MODULE", value_parser = BoolishValueParser::new())]
    pub module: bool,

    /// Run the command as it is, not through Python, as torchrun's --no-python. Without it, a
    /// command ending in `.py` runs as `python3 CMD ...` (DDP_PROBE_PYTHON names another
    /// interpreter); any other command runs as it is.
    #[arg(long, alias = "no_python", env = "PET_NO_PYTHON", value_parser = BoolishValueParser::new())]
    pub no_python: bool,

    /// Record the PyTorch DistributedDataParallel model the program builds with no line added
    /// to it (Hugging Face's Trainer and Accelerate, PyTorch Lightning, the script's own DDP):
    /// every rank runs as `python -m ddp_probe_torch.auto SCRIPT ARGS` (or `-m MODULE`), which
    /// runs the program as Python would. For a script, a module, or a `python ...` command.
    #[arg(long, env = "DDP_PROBE_AUTO_INSTRUMENT", value_parser = BoolishValueParser::new())]
    pub auto_instrument: bool,

    /// torchrun's log directory: used as the run directory when --out is not given.
    #[arg(long, alias = "log_dir", env = "PET_LOG_DIR", value_name = "DIR")]
    pub log_dir: Option<PathBuf>,

    /// torchrun's --redirects and --tee (accepted: every rank's stdout and stderr are always
    /// kept in the run directory, whatever reaches the console).
    #[arg(long, short = 'r', env = "PET_REDIRECTS", value_name = "STD")]
    pub redirects: Option<String>,

    /// See --redirects.
    #[arg(long, short = 't', env = "PET_TEE", value_name = "STD")]
    pub tee: Option<String>,

    /// torchrun's role of the workers, handed to every rank as ROLE_NAME.
    #[arg(long, env = "PET_ROLE", value_name = "ROLE", default_value = "default")]
    pub role: String,

    /// torchrun's console filter of local ranks (accepted: the console shows rank 0's output
    /// and every rank's errors, `--console all` every rank's output, and every rank's output is
    /// kept in the run directory).
    #[arg(
        long,
        alias = "local_ranks_filter",
        env = "PET_LOCAL_RANKS_FILTER",
        value_name = "RANKS"
    )]
    pub local_ranks_filter: Option<String>,

    /// torchrun's time to wait for the workers to stop before SIGKILL: the same as --grace.
    #[arg(
        long,
        alias = "shutdown_timeout",
        env = "PET_SHUTDOWN_TIMEOUT",
        value_name = "SECONDS"
    )]
    pub shutdown_timeout: Option<f64>,

    /// torchrun's options of how it starts, binds and logs its workers (--start-method,
    /// --run-path, --numa-binding, --signals-to-handle, --event-log-handler, --logs-specs,
    /// --duplicate-stdout-filters, --duplicate-stderr-filters): accepted and ignored. ddp-probe
    /// starts every rank as its own process, binds none to CPUs, forwards Ctrl-C, SIGTERM and
    /// SIGHUP, and keeps every rank's output in the run directory.
    #[arg(
        long,
        alias = "start_method",
        env = "PET_START_METHOD",
        value_name = "METHOD"
    )]
    pub start_method: Option<String>,

    /// See --start-method.
    #[arg(long, alias = "run_path", env = "PET_RUN_PATH", value_parser = BoolishValueParser::new(), hide = true)]
    pub run_path: bool,

    /// See --start-method.
    #[arg(
        long,
        alias = "numa_binding",
        env = "PET_NUMA_BINDING",
        value_name = "MODE",
        hide = true
    )]
    pub numa_binding: Option<String>,

    /// See --start-method.
    #[arg(
        long,
        alias = "signals_to_handle",
        env = "PET_SIGNALS_TO_HANDLE",
        value_name = "SIGNALS",
        hide = true
    )]
    pub signals_to_handle: Option<String>,

    /// See --start-method.
    #[arg(
        long,
        alias = "event_log_handler",
        env = "PET_EVENT_LOG_HANDLER",
        value_name = "NAME",
        hide = true
    )]
    pub event_log_handler: Option<String>,

    /// See --start-method.
    #[arg(
        long,
        alias = "logs_specs",
        env = "PET_LOGS_SPECS",
        value_name = "NAME",
        hide = true
    )]
    pub logs_specs: Option<String>,

    /// See --start-method.
    #[arg(
        long,
        alias = "duplicate_stdout_filters",
        env = "PET_DUPLICATE_STDOUT_FILTERS",
        value_name = "RANKS",
        hide = true
    )]
    pub duplicate_stdout_filters: Option<String>,

    /// See --start-method.
    #[arg(
        long,
        alias = "duplicate_stderr_filters",
        env = "PET_DUPLICATE_STDERR_FILTERS",
        value_name = "RANKS",
        hide = true
    )]
    pub duplicate_stderr_filters: Option<String>,

    /// torchrun's virtual local rank (every rank sees LOCAL_RANK=0 and only its own GPU): not
    /// supported, refused with what to do.
    #[arg(long, alias = "virtual_local_rank", env = "PET_VIRTUAL_LOCAL_RANK", value_parser = BoolishValueParser::new(), hide = true)]
    pub virtual_local_rank: bool,

    /// torchrun's address of this machine for the rendezvous (accepted and ignored: ranks
    /// connect to --master-addr).
    #[arg(
        long,
        alias = "local_addr",
        env = "PET_LOCAL_ADDR",
        value_name = "ADDR"
    )]
    pub local_addr: Option<String>,

    /// Run directory [default: runs/<time>-<program>, linked from runs/latest].
    #[arg(long, short, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Gradient bucket size cap in MiB handed to the program (DDP_PROBE_BUCKET_CAP_MB).
    #[arg(long, value_name = "MB")]
    pub bucket_cap_mb: Option<f64>,

    /// Per-bucket caps in MiB, as PyTorch 2.13's `bucket_cap_mb_list`: the first bucket's cap,
    /// the second's, ..., the last one for every further bucket (DDP_PROBE_BUCKET_CAP_MB_LIST;
    /// the reference DDP reads it).
    #[arg(long, value_name = "MB,MB,...", value_delimiter = ',')]
    pub bucket_cap_mb_list: Vec<f64>,

    /// Skip the start-up calibration: a sweep of all-reduce sizes and an interference probe (at
    /// most about 1 s, recorded in the trace) that gives `ddp-probe advise` a cost model for
    /// every run, also one whose gradients fit in a single bucket (DDP_PROBE_CALIBRATE=0).
    #[arg(long)]
    pub no_calibrate: bool,

    /// Stop the job when no rank makes progress for this many seconds, naming who is stuck where.
    ///
    /// Before the ranks are stopped (here, after another rank's failure, or on Ctrl-C), each
    /// rank that imported ddp_probe_torch writes a flight-recorder dump and its Python stack,
    /// and the launcher lists each running rank's processes with their state (its DataLoader
    /// workers' too) into logs/; `ddp-probe explain` reads them.
    #[arg(long, value_name = "SECONDS")]
    pub hang_timeout: Option<f64>,

    /// Seconds between TERM and KILL when stopping ranks [default: 5].
    #[arg(long, value_name = "SECONDS")]
    pub grace: Option<f64>,

    /// Which ranks' output reaches the console (errors from any rank are always shown,
    /// except with `quiet`; every rank's full output is in the run directory).
    #[arg(long, value_enum, default_value_t = ConsoleArg::Rank0)]
    pub console: ConsoleArg,

    /// Show the terminal timeline while the job runs (rank output goes to the run directory only).
    #[arg(long)]
    pub tui: bool,

    /// The training command and its arguments: after `--`, or from the first word that is not
    /// an option of ddp-probe (`ddp-probe run train.py --lr 0.1`, as with torchrun).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    pub command: Vec<std::ffi::OsString>,
}

/// `--nproc-per-node`: a count, or how to find one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nproc {
    /// This many.
    Count(usize),
    /// One per visible GPU.
    Gpu,
    /// One per CPU.
    Cpu,
    /// One per visible GPU, or per CPU without GPUs.
    Auto,
}

fn parse_nproc(s: &str) -> Result<Nproc, String> {
    match s {
        "gpu" => Ok(Nproc::Gpu),
        "cpu" => Ok(Nproc::Cpu),
        "auto" => Ok(Nproc::Auto),
        n => match n.parse::<usize>() {
            Ok(0) => Err("0 ranks: give at least 1".to_owned()),
            Ok(n) => Ok(Nproc::Count(n)),
            Err(_) => Err(format!(
                "{n:?} is not a number of ranks: give a number, `gpu`, `cpu` or `auto`"
            )),
        },
    }
}

/// `N`, or torchrun's elastic `MIN:MAX` when both are equal (ddp-probe does not scale a job).
fn parse_nnodes(s: &str) -> Result<usize, String> {
    let number = |t: &str| {
        t.trim()
            .parse::<usize>()
            .map_err(|_| format!("{s:?} is not a number of machines"))
    };
    match s.split_once(':') {
        None => number(s),
        Some((min, max)) => {
            let (min, max) = (number(min)?, number(max)?);
            if min == max {
                Ok(min)
            } else {
                Err(format!(
                    "{s:?}: elastic sizes ({min} to {max} machines) are not supported; give one number"
                ))
            }
        }
    }
}

/// Console modes of `ddp-probe run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ConsoleArg {
    /// Rank 0's output, plus error lines from every rank.
    Rank0,
    /// Every rank's output, each line prefixed with its rank.
    All,
    /// Nothing but ddp-probe's own summary.
    Quiet,
}

/// `ddp-probe export ...`
#[derive(Debug, Subcommand)]
pub enum ExportCommand {
    /// Chrome trace-event JSON, for Perfetto (ui.perfetto.dev) or chrome://tracing.
    #[command(after_help = "\
One process per rank, one thread per lane (compute, communication, data, GPU streams),
timestamps in microseconds from the start of the run, all ranks on rank 0's clock.

Example:
  ddp-probe export chrome runs/latest -o trace.json")]
    Chrome(ExportChromeArgs),
}

/// Arguments of `ddp-probe export chrome`.
#[derive(Debug, Args)]
pub struct ExportChromeArgs {
    /// Run directories (several for a multi-node run) [default: runs/latest].
    #[arg(value_name = "RUN")]
    pub runs: Vec<PathBuf>,

    /// Where to write the JSON ('-' for standard output).
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,

    /// Add the simulated schedules beside the ranks, each as a process: the advice's (the
    /// recorded layout replayed and the recommended bucket setting, lined up with the first
    /// steady step) and, when a straggler held steps back, its median step as recorded and
    /// without its lateness.
    #[arg(long)]
    pub what_if: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn durations_and_rates_parse_with_their_units() {
        assert_eq!(parse_duration_ns("50us").unwrap(), 50_000.0);
        assert_eq!(parse_duration_ns("0.2ms").unwrap(), 200_000.0);
        assert_eq!(parse_duration_ns("1s").unwrap(), 1e9);
        assert_eq!(parse_rate_bytes_per_s("10GB/s").unwrap(), 1e10);
        assert_eq!(parse_rate_bytes_per_s("1MiB/s").unwrap(), 1_048_576.0);
        assert_eq!(parse_rate_bytes_per_s("100Gbit/s").unwrap(), 12.5e9);
        for bad in ["50", "fast", "-3us", "10 parsecs"] {
            let e = parse_duration_ns(bad).unwrap_err();
            assert!(e.contains("not a duration"), "{e}");
        }
        assert!(parse_rate_bytes_per_s("0GB/s")
            .unwrap_err()
            .contains("above zero"));
        assert!(parse_rate_bytes_per_s("10GB")
            .unwrap_err()
            .contains("e.g. 10GB/s"));
    }

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn run_takes_everything_after_the_double_dash_as_the_command() {
        let cli = Cli::parse_from([
            "ddp-probe",
            "run",
            "--nproc-per-node",
            "2",
            "--",
            "train",
            "--nproc-per-node",
            "7",
        ]);
        let Command::Run(run) = cli.command else {
            panic!("expected the run command");
        };
        assert_eq!(run.nproc_per_node, Nproc::Count(2));
        assert_eq!(run.command, ["train", "--nproc-per-node", "7"]);
    }

    #[test]
    fn run_accepts_torchruns_spellings_and_a_bare_script() {
        let cli = Cli::try_parse_from([
            "ddp-probe",
            "run",
            "--nproc_per_node",
            "auto",
            "--nnodes",
            "2:2",
            "--node_rank",
            "1",
            "--master_addr",
            "node0",
            "--master_port",
            "29500",
            "--max_restarts",
            "0",
            "--standalone",
            "train.py",
            "--lr",
            "0.1",
        ])
        .unwrap();
        let Command::Run(run) = cli.command else {
            panic!("expected the run command");
        };
        assert_eq!(run.nproc_per_node, Nproc::Auto);
        assert_eq!((run.nnodes, run.node_rank), (2, 1));
        assert_eq!(run.master_addr.as_deref(), Some("node0"));
        assert_eq!(run.master_port, Some(29500));
        assert!(run.standalone);
        assert_eq!(run.command, ["train.py", "--lr", "0.1"]);
        let cli =
            Cli::try_parse_from(["ddp-probe", "run", "-m", "pkg.train", "--epochs", "1"]).unwrap();
        let Command::Run(run) = cli.command else {
            panic!("expected the run command");
        };
        assert!(run.module);
        assert_eq!(run.command, ["pkg.train", "--epochs", "1"]);
        for bad in [
            ["--nnodes", "1:2"],
            ["--nproc_per_node", "0"],
            ["--nproc_per_node", "many"],
        ] {
            let err = Cli::try_parse_from(["ddp-probe", "run", bad[0], bad[1], "x"]).unwrap_err();
            assert_eq!(
                err.kind(),
                clap::error::ErrorKind::ValueValidation,
                "{bad:?}"
            );
        }
    }

    #[test]
    fn run_without_a_command_is_refused() {
        let err = Cli::try_parse_from(["ddp-probe", "run", "--nproc-per-node", "2"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::MissingRequiredArgument);
    }
}
