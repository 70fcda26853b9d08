//! The launch itself: check the options, create the run directory, start the
//! ranks, watch them (failures, hangs, stop signals), stop them in order and
//! write the outcome into the manifest.
//!
//! With `--max-restarts N`, a failed attempt is kept in `attempts/<n>/` and
//! the whole group starts again (torchrun's restarts): [`launch`] is a loop
//! around one attempt, a [`Run`].

use std::collections::{BTreeMap, VecDeque};
use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread;
use std::time::{Duration, Instant};

use chrono::{DateTime, Local, SecondsFormat};

use crate::config::{LaunchConfig, DEFAULT_MASTER_ADDR, DEFAULT_RDZV_PORT, MAX_NPROC_PER_NODE};
use crate::console::{ConsoleFilter, LastWords, LineSplitter, Stream, MAX_CONSOLE_LINE_BYTES};
use crate::env::{self, RankEnvSpec};
use crate::error::LaunchError;
use crate::evidence::{self, KernelLog, Mounts, RankWatch};
use crate::hang::{HangReport, RankHangState, TraceTail};
use crate::manifest::{
    Attempt, Failure, KillEvidence, Manifest, RankEnd, RankRecord, RunStatus, Termination,
    MANIFEST_FORMAT,
};
use crate::observer::{Event, Observer};
use crate::process;
use crate::process_tree;
use crate::reaper::Reaper;
use crate::rundir::{self, LOGS_DIR, MANIFEST_FILE, TRACES_DIR};
use crate::signals::SignalGuard;
use crate::token;
use probe_contract::processes;

/// Exit status of a run stopped by the hang watchdog (as `timeout(1)`).
pub const EXIT_HANG: i32 = 124;
/// Exit status of a run stopped by Ctrl-C (128 + SIGINT, as a shell reports
/// it); SIGTERM and SIGHUP give 143 and 129 ([`exit_code_for_signal`]).
pub const EXIT_INTERRUPTED: i32 = 128 + libc::SIGINT;

/// The exit status of a launcher stopped by `signal`: 128 + its number, what
/// a shell reports for a process the signal killed (torchrun's agent exits
/// the same way).
pub fn exit_code_for_signal(signal: i32) -> i32 {
    128 + signal
}

/// How often the launch loop wakes up when nothing happens.
const TICK: Duration = Duration::from_millis(25);
/// How often trace files are checked for growth.
const TRACE_POLL: Duration = Duration::from_millis(200);
/// How long to wait for output still buffered in pipes once every rank ended.
const DRAIN_WAIT: Duration = Duration::from_secs(2);
/// How long a rank's end waits for its last output to be shown.
const OUTPUT_SETTLE: Duration = Duration::from_millis(250);
/// How long to wait for a rank to disappear after SIGKILL before giving up.
const KILL_WAIT: Duration = Duration::from_secs(10);
/// How long the hang watchdog waits for the ranks' flight-recorder dumps
/// before it stops them.
const DUMP_WAIT: Duration = Duration::from_secs(3);
/// How long a restart waits for the master port to be free again (a process
/// left over from the failed attempt may still hold it).
const RESTART_PORT_WAIT: Duration = Duration::from_secs(5);

/// How a launch ended.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The overall status.
    pub status: RunStatus,
    /// The exit status to end the command line with: 0 ok, the failing rank's
    /// exit code (128 + signal when it was killed), [`EXIT_HANG`] for a hang,
    /// [`EXIT_INTERRUPTED`] when interrupted.
    pub exit_code: i32,
    /// The run directory (absolute).
    pub run_dir: PathBuf,
    /// The final manifest, as written to `manifest.json`.
    pub manifest: Manifest,
}

impl Outcome {
    /// The first rank that failed, if one did.
    pub fn first_failure(&self) -> Option<&Failure> {
        self.manifest.first_failure.as_ref()
    }

    /// The hang report, if the watchdog stopped the run.
    pub fn hang(&self) -> Option<&HangReport> {
        self.manifest.hang.as_ref()
    }

    /// A few lines summing up the run: status, first failure, each rank's
    /// end, the run directory (no trailing newline).
    pub fn render_summary(&self) -> String {
        let m = &self.manifest;
        let mut out = format!("status: {} (exit code {})", self.status, self.exit_code);
        if let Some(attempt) = m.attempt_text() {
            let _ = write!(out, "\n{attempt}");
            match m.attempts.len() {
                0 => {}
                1 => out.push_str(" (the workers were restarted once)"),
                n => {
                    let _ = write!(out, " (the workers were restarted {n} times)");
                }
            }
            for a in &m.attempts {
                let _ = write!(
                    out,
                    "\n  attempt {} {}",
                    u64::from(a.restart_count) + 1,
                    a.status
                );
                if let Some(f) = &a.first_failure {
                    let _ = write!(out, ": {f}");
                }
                let _ = write!(out, "; its files are in {}", a.dir);
            }
        }
        if let Some(f) = &m.first_failure {
            let _ = write!(out, "\nfirst failure: {f}");
        }
        if let Some(h) = &m.hang {
            if !h.behind.is_empty() {
                let list: Vec<String> = h.behind.iter().map(usize::to_string).collect();
                let _ = write!(
                    out,
                    "\nhang: the others waited for rank(s) {}",
                    list.join(", ")
                );
            } else if h.ranks.iter().all(|r| r.trace_tail.is_none()) {
                let _ = write!(
                    out,
                    "\nhang: no rank made progress for {:.0} s and none wrote a trace; \
                     `ddp-probe explain` reads what the ranks left (their Python stacks and \
                     flight-recorder dumps, when they imported ddp_probe_torch: rerun with \
                     --auto-instrument if they did not)",
                    h.timeout_s
                );
            } else {
                let _ = write!(
                    out,
                    "\nhang: no rank made progress for {:.0} s; the traces do not say who \
                     waited for whom (`ddp-probe explain` reads the dumps and stacks)",
                    h.timeout_s
                );
            }
        }
        if let Some(sig) = &m.interrupted_by {
            let _ = write!(out, "\ninterrupted by {sig}");
        }
        if let Some(e) = &m.launch_error {
            let _ = write!(out, "\nlaunch error: {e}");
        }
        for r in &m.ranks {
            let _ = write!(out, "\n  rank {}: ", r.rank);
            match &r.end {
                Some(end) => {
                    let _ = write!(out, "{}", end.termination);
                    if end.stopped_by_launcher {
                        out.push_str(stopped_note(&end.termination));
                    }
                }
                None if r.pid.is_none() => out.push_str("never started"),
                None => out.push_str("did not exit after SIGKILL"),
            }
        }
        let _ = write!(out, "\nrun directory: {}", self.run_dir.display());
        out
    }
}

/// What the summary adds to a rank that ended after ddp-probe began to stop the ranks: killed
/// by a signal, it was ddp-probe's; exited with a status, the rank ended on its own (its own
/// error, often the same one as the first failure, or its SIGTERM handler's exit), so the note
/// says only when.
fn stopped_note(termination: &Termination) -> &'static str {
    match termination {
        Termination::Signaled { .. } => " (stopped by ddp-probe)",
        _ => " (after ddp-probe's SIGTERM)",
    }
}

/// Launches the command on this node's ranks and watches them until they all
/// ended; see the crate documentation for the behaviour.
///
/// Returns an error without starting anything when the options are invalid,
/// the command cannot be run or the master port is taken. Once the ranks run,
/// failures, hangs and interrupts are not errors: they are the [`Outcome`].
///
/// With [`LaunchConfig::max_restarts`] above 0, a failed attempt (a rank
/// exited non-zero or was killed by a signal) is kept in `attempts/<n>/` and
/// all ranks start again with the next `TORCHELASTIC_RESTART_COUNT`, on the
/// same master port, as torchrun does; the last attempt is the outcome.
pub fn launch(config: &LaunchConfig, observer: &mut dyn Observer) -> Result<Outcome, LaunchError> {
    let plan = Plan::new(config)?;
    // The ranks inherit it: a soft limit of 1,024 would cap a rank's peers, rings and files.
    probe_contract::rlimit::raise_open_file_limit();
    let mut signals = if config.handle_signals {
        Some(SignalGuard::install().map_err(|source| LaunchError::Signals { source })?)
    } else {
        None
    };
    let run_dir = create_run_dir(config, &plan, observer)?;
    // Kills the ranks' process groups if this process dies without stopping them; without it
    // (fork failed) the ranks still die with the launcher, only their own children may not.
    let reaper = Reaper::start().ok();
    if env::sets_omp_threads(&plan.user_env, config.nproc_per_node) {
        observer.on_event(&Event::Notice {
            message: env::OMP_NOTICE.to_owned(),
        });
    }
    if config.nnodes == 1 {
        if let Some(why) = process::not_an_address_here(&plan.master_addr) {
            observer.on_event(&Event::Notice {
                message: format!(
                    "master address {} {why}: in a run on one node rank 0 hosts the store on \
                     this machine, so the ranks will likely not reach it at that address; leave \
                     --master-addr out (127.0.0.1) or give one of this machine's addresses",
                    plan.master_addr
                ),
            });
        }
    }
    if let token::TokenSource::WroteFile(path) = &plan.token_source {
        observer.on_event(&Event::Notice {
            message: format!(
                "wrote a new store token to {} (mode 600); the other nodes read it there",
                path.display()
            ),
        });
    }
    let mut attempts: Vec<Attempt> = Vec::new();
    loop {
        let (outcome, stop_signal) = run_attempt(
            config,
            &plan,
            &run_dir,
            &attempts,
            signals.as_mut(),
            reaper.as_ref(),
            observer,
        )?;
        let m = &outcome.manifest;
        // Only a worker failure is restarted, as torchrun does. A stop signal
        // to the launcher is the user's (or the scheduler's) decision to end
        // the run. A hang is not restarted either: it is a bug in the program
        // (mismatched collectives, a rank stuck in I/O) that a new attempt
        // would most likely hit again, and restarting would bury the hang
        // report under attempts that use up the job's time. (torchrun never
        // sees a hang: with NCCL's own timeout it becomes a worker failure,
        // which is restarted here too.)
        if outcome.status != RunStatus::Failed || m.restarts >= config.max_restarts {
            return Ok(outcome);
        }
        let attempt = attempt_of(m);
        let stop_signal = stop_signal.or_else(|| {
            signals
                .as_mut()
                .and_then(SignalGuard::take)
                .map(process::signal_name)
        });
        if let Some(signal) = stop_signal {
            observer.on_event(&Event::Notice {
                message: format!("got {signal} after {attempt} failed; not restarting"),
            });
            return Ok(outcome);
        }
        let dir = match rundir::keep_attempt(&run_dir, m) {
            Ok(dir) => dir,
            Err(e) => {
                observer.on_event(&Event::Notice {
                    message: format!(
                        "could not move {attempt}'s files into {}: {e}; not restarting",
                        rundir::ATTEMPTS_DIR
                    ),
                });
                return Ok(outcome);
            }
        };
        observer.on_event(&Event::Restarting {
            attempt: u64::from(m.restarts) + 1,
            attempts: u64::from(config.max_restarts) + 1,
            failure: m.first_failure.clone(),
            workers: config.nproc_per_node,
            restart_count: m.restarts + 1,
            kept_in: dir.clone(),
        });
        attempts.push(Attempt {
            restart_count: m.restarts,
            dir,
            status: m.status,
            exit_code: m.exit_code,
            started_at: m.started_at.clone(),
            ended_at: m.ended_at.clone(),
            first_failure: m.first_failure.clone(),
        });
        if config.node_rank == 0 {
            wait_for_port(plan.master_port, config.nnodes > 1, observer);
        }
    }
}

/// `attempt 2 of 3` for messages.
fn attempt_of(m: &Manifest) -> String {
    m.attempt_text().unwrap_or_else(|| "the attempt".to_owned())
}

/// Runs one attempt: every rank of this node, from start to end. Returns its
/// outcome and the stop signal the launcher got while it ran, if any.
fn run_attempt(
    config: &LaunchConfig,
    plan: &Plan,
    run_dir: &Path,
    attempts: &[Attempt],
    signals: Option<&mut SignalGuard>,
    reaper: Option<&Reaper>,
    observer: &mut dyn Observer,
) -> Result<(Outcome, Option<String>), LaunchError> {
    let mut run = Run::new(config, plan.clone(), run_dir.to_path_buf(), attempts);
    run.write_manifest()?;
    if attempts.is_empty() {
        observer.on_event(&Event::RunStarted {
            run_dir: run.run_dir.clone(),
            run_id: run.plan.run_id.clone(),
            master_addr: run.plan.master_addr.clone(),
            master_port: run.plan.master_port,
            world_size: config.world_size(),
            ranks: run.slots.iter().map(|s| s.rank).collect(),
            console: config.console,
        });
    }
    let (tx, rx) = mpsc::channel();
    let spawn_error = run.spawn_all(config, &tx, reaper, observer);
    drop(tx);
    // The manifest now has the pids; a failure to rewrite it is not worth
    // abandoning running ranks for, the final write reports it.
    let _ = run.write_manifest();
    if spawn_error.is_some() {
        run.trigger = Some(Trigger::LaunchError);
        run.begin_stop(observer);
    }
    run.supervise(&rx, signals, observer);
    // Every rank's group was stopped and its rank reaped: the ids may be reused from now on.
    if let Some(reaper) = reaper {
        run.slots
            .iter()
            .filter_map(|s| s.pid)
            .for_each(|pid| reaper.forget_group(pid));
    }
    remove_shm_leftovers(
        Path::new(probe_contract::shm_names::SHM_DIR),
        &probe_contract::shm_names::run_prefix(&plan.run_id, config.node_rank),
        observer,
    );
    let stop_signal = run.stop_signal.take();
    Ok((run.finish(spawn_error)?, stop_signal))
}

/// Removes the shared-memory rings and doorbells the ranks of this node left in `dir` (files
/// named with `prefix`): ranks unlink them once their peers attached, so only a rank killed
/// during that setup leaves any. Called once every rank of the attempt has ended.
fn remove_shm_leftovers(dir: &Path, prefix: &str, observer: &mut dyn Observer) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let removed = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .filter(|e| std::fs::remove_file(e.path()).is_ok())
        .count();
    if removed > 0 {
        observer.on_event(&Event::Notice {
            message: format!(
                "removed {removed} shared-memory file{} a rank left in {} ({prefix}*)",
                if removed == 1 { "" } else { "s" },
                dir.display()
            ),
        });
    }
}

/// Before a restart on the node that hosts the store: waits up to
/// [`RESTART_PORT_WAIT`] for the master port to be free again. The ranks are
/// gone, so it normally is at once (a port in TIME_WAIT can be bound again);
/// if a leftover process still holds it, the next attempt starts anyway and
/// its rank 0 reports why it cannot listen.
fn wait_for_port(port: u16, multi_node: bool, observer: &mut dyn Observer) {
    let until = Instant::now() + RESTART_PORT_WAIT;
    while process::check_port_free(port, multi_node).is_err() {
        if Instant::now() >= until {
            observer.on_event(&Event::Notice {
                message: format!(
                    "the master port {port} is still in use {} s after the failed attempt; \
                     starting the next one anyway",
                    RESTART_PORT_WAIT.as_secs()
                ),
            });
            return;
        }
        thread::sleep(TICK);
    }
}

/// Everything decided before anything is created (shared by all attempts).
#[derive(Clone)]
struct Plan {
    program_path: PathBuf,
    master_addr: String,
    master_port: u16,
    run_id: String,
    store_token: String,
    /// How the token was chosen (said on the console when node 0 wrote a token file).
    token_source: token::TokenSource,
    stamp: String,
    started_at: DateTime<Local>,
    user_env: BTreeMap<OsString, OsString>,
    /// The flight-recorder variable names the ranks' torch reads.
    flight_recorder_names: env::FlightRecorderNames,
}

impl Plan {
    fn new(config: &LaunchConfig) -> Result<Plan, LaunchError> {
        if config.program.is_empty() {
            return Err(LaunchError::NoCommand);
        }
        let invalid =
            |option: &'static str, message: String| LaunchError::InvalidOption { option, message };
        if config.nproc_per_node == 0 || config.nproc_per_node > MAX_NPROC_PER_NODE {
            return Err(invalid(
                "--nproc-per-node",
                format!(
                    "{} is out of range; give 1 to {MAX_NPROC_PER_NODE} processes per node",
                    config.nproc_per_node
                ),
            ));
        }
        if config.nnodes == 0 {
            return Err(invalid(
                "--nnodes",
                "0 nodes cannot run anything; give at least 1".to_owned(),
            ));
        }
        if config.node_rank >= config.nnodes {
            return Err(invalid(
                "--node-rank",
                format!(
                    "{} is not below --nnodes {}; node ranks go from 0 to {}",
                    config.node_rank,
                    config.nnodes,
                    config.nnodes - 1
                ),
            ));
        }
        if let Some(mb) = config.bucket_cap_mb {
            if !(mb.is_finite() && mb > 0.0) {
                return Err(invalid(
                    "--bucket-cap-mb",
                    format!("{mb} is not a positive size in MB"),
                ));
            }
        }
        if config.hang_timeout.is_some_and(|t| t.is_zero()) {
            return Err(invalid(
                "--hang-timeout",
                "must be longer than 0 s".to_owned(),
            ));
        }
        let multi_node = config.nnodes > 1;
        let (ep_addr, ep_port) = match &config.rdzv_endpoint {
            Some(ep) => {
                let (a, p) = parse_endpoint(ep)?;
                // Port 0: a free port, as torchrun's c10d rendezvous binds it; the other nodes
                // could not know it.
                if p == 0 && multi_node {
                    return Err(invalid(
                        "--rdzv-endpoint",
                        format!(
                            "'{ep}': port 0 (any free port) works on one machine only; give \
                             every node the same port, e.g. {a}:29500"
                        ),
                    ));
                }
                (Some(a), (p != 0).then_some(p))
            }
            None => (None, None),
        };
        if let (Some(a), Some(b)) = (&config.master_addr, &ep_addr) {
            if a != b {
                return Err(invalid(
                    "--master-addr",
                    format!(
                        "'{a}' disagrees with --rdzv-endpoint's host '{b}'; give only one of them"
                    ),
                ));
            }
        }
        if let (Some(a), Some(b)) = (config.master_port, ep_port) {
            if a != b {
                return Err(invalid(
                    "--master-port",
                    format!("{a} disagrees with --rdzv-endpoint's port {b}; give only one of them"),
                ));
            }
        }
        let master_addr = match config.master_addr.clone().or(ep_addr) {
            Some(a) => a,
            None if multi_node => {
                return Err(LaunchError::MultiNodeNeedsEndpoint {
                    nnodes: config.nnodes,
                })
            }
            None => DEFAULT_MASTER_ADDR.to_owned(),
        };
        if master_addr.is_empty()
            || master_addr
                .chars()
                .any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(invalid(
                "--master-addr",
                format!("'{master_addr}' is not a host name or address"),
            ));
        }
        let port = config.master_port.or(ep_port);
        if port == Some(0) {
            return Err(invalid(
                "--master-port",
                "0 is not a port; give 1 to 65535 or leave it out".to_owned(),
            ));
        }
        if multi_node && port.is_none() {
            return Err(LaunchError::MultiNodeNeedsEndpoint {
                nnodes: config.nnodes,
            });
        }
        let started_at = Local::now();
        let stamp = started_at.format("%Y%m%d-%H%M%S").to_string();
        let run_id = match &config.rdzv_id {
            Some(id) => {
                if id.is_empty() || id.chars().any(|c| c.is_whitespace() || c.is_control()) {
                    return Err(invalid(
                        "--rdzv-id",
                        format!("'{id}' must be a non-empty word without spaces"),
                    ));
                }
                id.clone()
            }
            None if multi_node => String::new(),
            None => format!("{stamp}-{}", process::random_hex(4)),
        };
        for (k, v) in &config.env {
            let name = k.to_string_lossy();
            if name.is_empty()
                || name.contains('=')
                || name.contains('\0')
                || v.to_string_lossy().contains('\0')
            {
                return Err(invalid(
                    "environment variable",
                    format!("'{name}' cannot be passed to a process; names need no '=' and neither may hold NUL"),
                ));
            }
        }
        let user_env = env::user_env(&config.env);
        let token = token::resolve(
            config.store_token.as_deref(),
            config.store_token_file.as_deref(),
            &user_env,
            config.nnodes,
            config.node_rank,
        );
        if run_id.is_empty() {
            return Err(LaunchError::MultiNodeNeedsRunId {
                nnodes: config.nnodes,
                token_missing: matches!(token, Err(LaunchError::MultiNodeNeedsToken { .. })),
            });
        }
        let (store_token, token_source) = token?;
        let program_path = process::resolve_command(
            &config.program,
            user_env.get(OsStr::new("PATH")).map(OsString::as_os_str),
        )?;
        let master_port = match port {
            Some(p) => {
                if config.node_rank == 0 {
                    process::check_port_free(p, multi_node)?;
                }
                p
            }
            None => process::pick_free_port()?,
        };
        let flight_recorder_names = env::FlightRecorderNames::for_torch(
            env::installed_torch_version(&ranks_python(&program_path, &user_env)),
        );
        Ok(Plan {
            program_path,
            master_addr,
            master_port,
            run_id,
            store_token,
            token_source,
            stamp,
            started_at,
            user_env,
            flight_recorder_names,
        })
    }
}

/// Splits `HOST:PORT`, `[IPv6]:PORT` or `HOST` (port 29400).
/// The Python the ranks most likely run: the program itself when it is a
/// Python interpreter, else `DDP_PROBE_PYTHON`, else `python3` from `PATH`.
fn ranks_python(program: &Path, user_env: &BTreeMap<OsString, OsString>) -> OsString {
    let is_python = program
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("python"));
    if is_python {
        return program.as_os_str().to_owned();
    }
    user_env
        .get(OsStr::new("DDP_PROBE_PYTHON"))
        .cloned()
        .unwrap_or_else(|| "python3".into())
}

/// The host and port of a `--rdzv-endpoint` (`HOST`, `HOST:PORT`, `[IPv6]:PORT`; without a port,
/// torchrun's default for its c10d rendezvous; port 0, any free one, is the caller's to allow).
pub fn parse_endpoint(ep: &str) -> Result<(String, u16), LaunchError> {
    let bad = |why: &str| LaunchError::InvalidOption {
        option: "--rdzv-endpoint",
        message: format!("'{ep}' {why}; give HOST:PORT, e.g. 10.0.0.1:29500 (or [IPv6]:PORT)"),
    };
    let (host, port) = if let Some(rest) = ep.strip_prefix('[') {
        let Some((host, after)) = rest.split_once(']') else {
            return Err(bad("has no closing ']'"));
        };
        match after.strip_prefix(':') {
            Some(p) => (host, Some(p)),
            None if after.is_empty() => (host, None),
            None => return Err(bad("has text after ']' that is not :PORT")),
        }
    } else {
        match ep.matches(':').count() {
            0 => (ep, None),
            1 => {
                let (h, p) = ep.split_once(':').unwrap_or((ep, ""));
                (h, Some(p))
            }
            _ => return Err(bad("looks like a bare IPv6 address")),
        }
    };
    if host.is_empty() {
        return Err(bad("has no host"));
    }
    let port = match port {
        None => DEFAULT_RDZV_PORT,
        // Port 0 is torchrun's "any free port" (torchtitan's `--rdzv_endpoint=localhost:0`),
        // which only one machine can use: see `plan`.
        Some(p) => match p.parse::<u16>() {
            Ok(p) => p,
            _ => return Err(bad("has no valid port (0-65535)")),
        },
    };
    Ok((host.to_owned(), port))
}

fn create_run_dir(
    config: &LaunchConfig,
    plan: &Plan,
    observer: &mut dyn Observer,
) -> Result<PathBuf, LaunchError> {
    let absolute = |p: &Path| {
        std::path::absolute(p).map_err(|source| LaunchError::RunDir {
            path: p.to_path_buf(),
            source,
        })
    };
    match &config.out_dir {
        Some(dir) => {
            let dir = absolute(dir)?;
            rundir::create_explicit(&dir)?;
            Ok(dir)
        }
        None => {
            let root = absolute(&config.runs_root)?;
            let mut name = rundir::run_name(&config.program, &config.args);
            if config.nnodes > 1 {
                // Nodes sharing a file system must not collide.
                name = format!("{name}-node{}", config.node_rank);
            }
            let dir = rundir::create_default(&root, &plan.stamp, &name)?;
            if let Err(e) = rundir::update_latest(&root, &dir) {
                observer.on_event(&Event::Notice {
                    message: format!(
                        "could not point {} at this run: {e}",
                        root.join(rundir::LATEST_LINK).display()
                    ),
                });
            }
            Ok(dir)
        }
    }
}

/// What made the launcher stop the ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trigger {
    Failure,
    Hang,
    Interrupt,
    LaunchError,
}

/// The stopping sequence once begun.
#[derive(Debug)]
struct Stop {
    began: Instant,
    kill_at: Instant,
    killed_at: Option<Instant>,
}

/// Why the launcher asks the ranks for their dumps and stacks before it stops them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DumpReason {
    /// The hang watchdog found no progress.
    Hang,
    /// A rank failed first.
    Failure,
    /// The launcher got a stop signal (Ctrl-C).
    Interrupt,
}

impl DumpReason {
    /// The word written into the request.
    fn as_str(self) -> &'static str {
        match self {
            DumpReason::Hang => "hang",
            DumpReason::Failure => "failure",
            DumpReason::Interrupt => "interrupt",
        }
    }
}

/// A flight-recorder dump request the hang watchdog waits on.
#[derive(Debug)]
struct DumpWait {
    /// When the ranks are stopped even if not every one answered.
    until: Instant,
    /// The slots of the ranks asked (those that listen).
    slots: Vec<usize>,
    /// Ranks that listen but that no slot started: processes a launched one started
    /// (`torch.multiprocessing.spawn`'s ranks), whose answers are waited for too, or the
    /// launched process is stopped, and they with it, before they answer.
    others: Vec<usize>,
    /// Whether to say what each rank answered even when none wrote anything (a hang's
    /// request is announced; a failure's only reports the dumps it got).
    announced: bool,
}

/// One rank of this node.
struct Slot {
    rank: usize,
    local_rank: usize,
    env: BTreeMap<OsString, OsString>,
    pid: Option<u32>,
    end: Option<RankEnd>,
    last_progress: Instant,
    trace_len: Option<u64>,
    last_output: Option<String>,
    /// The last lines of its stderr, quoted if it fails first.
    last_words: LastWords,
    console: ConsoleFilter,
    open_readers: usize,
    /// Its process ended (its end may still wait in `pending_exits`).
    exited: bool,
    /// Its OOM-kill counters and last memory sample.
    watch: RankWatch,
}

/// A rank end not recorded yet; see [`Run::settle_exits`].
struct PendingExit {
    slot: usize,
    termination: Termination,
    at: DateTime<Local>,
    when: Instant,
    settle_until: Instant,
    kill_evidence: Option<KillEvidence>,
}

enum Msg {
    Output {
        slot: usize,
        stream: Stream,
        lines: Vec<String>,
    },
    ReaderDone {
        slot: usize,
        stream: Stream,
        log_error: Option<io::Error>,
    },
    Exited {
        slot: usize,
        termination: Termination,
        at: DateTime<Local>,
        when: Instant,
    },
}

/// One attempt of a launch, in progress.
struct Run {
    plan: Plan,
    run_dir: PathBuf,
    manifest: Manifest,
    slots: Vec<Slot>,
    start: Instant,
    grace: Duration,
    hang_timeout: Option<Duration>,
    trigger: Option<Trigger>,
    stop: Option<Stop>,
    dump_wait: Option<DumpWait>,
    first_failure: Option<Failure>,
    hang: Option<HangReport>,
    interrupted_by: Option<String>,
    /// The number of the signal that stopped the run (its exit status is 128 + it).
    interrupt_signal: Option<i32>,
    /// The first stop signal the launcher got, even one that only hurried a
    /// stop already under way (a failed attempt is then not restarted).
    stop_signal: Option<String>,
    pending_exits: VecDeque<PendingExit>,
    /// The cgroup mounts, to find each rank's OOM-kill counters.
    mounts: Mounts,
    /// The host's OOM-kill counter at the launch.
    host_oom_kills: Option<u64>,
    /// The kernel log from the launch on.
    kernel_log: KernelLog,
}

impl Run {
    /// The attempt after `attempts` (none: the first).
    fn new(config: &LaunchConfig, plan: Plan, run_dir: PathBuf, attempts: &[Attempt]) -> Run {
        let start = Instant::now();
        let restarts = u32::try_from(attempts.len()).unwrap_or(u32::MAX);
        let started_at = if attempts.is_empty() {
            plan.started_at
        } else {
            Local::now()
        };
        let world_size = config.world_size();
        let rel = |p: PathBuf| match p.strip_prefix(&run_dir) {
            Ok(r) => r.to_string_lossy().into_owned(),
            Err(_) => p.to_string_lossy().into_owned(),
        };
        let user_value = |name: &str| {
            plan.user_env
                .get(OsStr::new(name))
                .map(|v| v.to_string_lossy().into_owned())
        };
        let mut slots = Vec::new();
        let mut records = Vec::new();
        let python_dir = env::python_dir();
        for local_rank in 0..config.nproc_per_node {
            let rank = config.node_rank * config.nproc_per_node + local_rank;
            let spec = RankEnvSpec {
                rank,
                local_rank,
                world_size,
                nproc_per_node: config.nproc_per_node,
                node_rank: config.node_rank,
                nnodes: config.nnodes,
                master_addr: &plan.master_addr,
                master_port: plan.master_port,
                run_id: &plan.run_id,
                run_dir: &run_dir,
                store_token: &plan.store_token,
                bucket_cap_mb: config.bucket_cap_mb,
                restart_count: restarts,
                max_restarts: config.max_restarts,
                python_dir: python_dir.as_deref(),
                flight_recorder_names: plan.flight_recorder_names,
                role: &config.role,
            };
            let rank_env = env::rank_env(&plan.user_env, &spec);
            records.push(RankRecord {
                rank,
                local_rank,
                pid: None,
                started_at: None,
                stdout: rundir::rank_stdout(rank),
                stderr: rundir::rank_stderr(rank),
                nccl_log: user_value("NCCL_DEBUG_FILE")
                    .unwrap_or_else(|| rel(env::nccl_log_path(&run_dir, rank))),
                trace: rundir::rank_trace(rank),
                flight_recorder: match env::FLIGHT_RECORDER_FILE_VARS
                    .iter()
                    .find_map(|name| user_value(name))
                {
                    Some(prefix) => format!("{prefix}{rank}"),
                    None => format!("{}{rank}", rel(env::flight_recorder_prefix(&run_dir))),
                },
                error_file: user_value("TORCHELASTIC_ERROR_FILE")
                    .unwrap_or_else(|| rel(env::error_file_path(&run_dir, rank))),
                env: env::relevant(&rank_env),
                end: None,
            });
            slots.push(Slot {
                rank,
                local_rank,
                env: rank_env,
                pid: None,
                end: None,
                last_progress: start,
                trace_len: None,
                last_output: None,
                last_words: LastWords::default(),
                console: ConsoleFilter::new(config.console, local_rank == 0),
                open_readers: 0,
                exited: false,
                watch: RankWatch::default(),
            });
        }
        let cwd = std::env::current_dir()
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap_or_default();
        let manifest = Manifest {
            format: MANIFEST_FORMAT,
            ddp_probe_version: env!("CARGO_PKG_VERSION").to_owned(),
            status: RunStatus::Running,
            exit_code: None,
            program: config.program.to_string_lossy().into_owned(),
            args: config
                .args
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            cwd,
            run_id: plan.run_id.clone(),
            node_rank: config.node_rank,
            nnodes: config.nnodes,
            nproc_per_node: config.nproc_per_node,
            world_size,
            hostname: process::hostname(),
            master_addr: plan.master_addr.clone(),
            master_port: plan.master_port,
            run_dir: run_dir.to_string_lossy().into_owned(),
            started_at: started_at.to_rfc3339_opts(SecondsFormat::Millis, false),
            ended_at: None,
            duration_s: None,
            hang_timeout_s: config.hang_timeout.map(|t| t.as_secs_f64()),
            grace_period_s: config.grace_period.as_secs_f64(),
            bucket_cap_mb: config.bucket_cap_mb,
            logs_dir: LOGS_DIR.to_owned(),
            traces_dir: TRACES_DIR.to_owned(),
            ranks: records,
            first_failure: None,
            hang: None,
            interrupted_by: None,
            launch_error: None,
            env: env::relevant(&plan.user_env),
            max_restarts: config.max_restarts,
            restarts,
            attempts: attempts.to_vec(),
        };
        Run {
            plan,
            run_dir,
            manifest,
            slots,
            start,
            grace: config.grace_period,
            hang_timeout: config.hang_timeout,
            trigger: None,
            stop: None,
            dump_wait: None,
            first_failure: None,
            hang: None,
            interrupted_by: None,
            interrupt_signal: None,
            stop_signal: None,
            pending_exits: VecDeque::new(),
            mounts: Mounts::read(),
            host_oom_kills: evidence::host_counter(),
            kernel_log: KernelLog::open(),
        }
    }

    fn write_manifest(&self) -> Result<(), LaunchError> {
        let path = self.run_dir.join(MANIFEST_FILE);
        self.manifest
            .write_atomic(&path)
            .map_err(|source| LaunchError::Manifest { path, source })
    }

    /// Starts every rank; stops at the first that cannot be started.
    fn spawn_all(
        &mut self,
        config: &LaunchConfig,
        tx: &Sender<Msg>,
        reaper: Option<&Reaper>,
        observer: &mut dyn Observer,
    ) -> Option<LaunchError> {
        for idx in 0..self.slots.len() {
            let rank = self.slots[idx].rank;
            let mut logs = Vec::new();
            for rel in [rundir::rank_stdout(rank), rundir::rank_stderr(rank)] {
                let path = self.run_dir.join(rel);
                match File::create(&path) {
                    Ok(f) => logs.push(f),
                    Err(source) => return Some(LaunchError::LogFile { path, source }),
                }
            }
            let child = process::spawn_rank(
                &self.plan.program_path,
                &config.program,
                &config.args,
                &self.slots[idx].env,
            );
            let mut child = match child {
                Ok(c) => c,
                Err(e) => {
                    let source = if e.kind() == io::ErrorKind::NotFound {
                        io::Error::new(
                            e.kind(),
                            format!("{e}; the file exists, so the interpreter on its #! line is probably missing"),
                        )
                    } else {
                        e
                    };
                    return Some(LaunchError::Spawn {
                        rank,
                        program: config.program.to_string_lossy().into_owned(),
                        source,
                        run_dir: self.run_dir.clone(),
                    });
                }
            };
            let pid = child.id();
            // The reaper learns the rank's group (its pid) at once, not after every rank has
            // started: a launcher killed in between would leave this rank's children running
            // (seen once under load: both ranks ready, the launcher killed, no group sent).
            if let Some(reaper) = reaper {
                reaper.watch_group(pid);
            }
            let after_s = self.start.elapsed().as_secs_f64();
            let slot = &mut self.slots[idx];
            slot.pid = Some(pid);
            slot.last_progress = Instant::now();
            slot.watch.add_host_counter(self.host_oom_kills);
            slot.watch.refresh_cgroups(pid, &self.mounts);
            slot.watch.sample_memory(pid, after_s);
            self.manifest.ranks[idx].pid = Some(pid);
            self.manifest.ranks[idx].started_at =
                Some(Local::now().to_rfc3339_opts(SecondsFormat::Millis, false));
            let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
            let mut started = start_thread(format!("rank{rank}-wait"), {
                let tx = tx.clone();
                move || wait_child(idx, child, tx)
            });
            let mut logs = logs.into_iter();
            for (stream, pipe) in [
                (
                    Stream::Stdout,
                    stdout.map(|p| Box::new(p) as Box<dyn Read + Send>),
                ),
                (
                    Stream::Stderr,
                    stderr.map(|p| Box::new(p) as Box<dyn Read + Send>),
                ),
            ] {
                if let (Ok(()), Some(pipe), Some(log)) = (&started, pipe, logs.next()) {
                    let tx = tx.clone();
                    started = start_thread(format!("rank{rank}-{stream}"), move || {
                        read_stream(idx, stream, pipe, log, tx)
                    });
                    if started.is_ok() {
                        slot.open_readers += 1;
                    }
                }
            }
            if let Err(source) = started {
                // Without its threads the rank cannot be watched: stop it.
                process::signal_group(pid, libc::SIGKILL);
                return Some(LaunchError::Spawn {
                    rank,
                    program: config.program.to_string_lossy().into_owned(),
                    source,
                    run_dir: self.run_dir.clone(),
                });
            }
            observer.on_event(&Event::RankStarted {
                rank,
                local_rank: self.slots[idx].local_rank,
                pid,
            });
        }
        None
    }

    fn live_ranks(&self) -> Vec<usize> {
        self.slots
            .iter()
            .filter(|s| s.pid.is_some() && !s.exited)
            .map(|s| s.rank)
            .collect()
    }

    fn signal_all(&self, signal: i32) {
        for s in &self.slots {
            if let Some(pid) = s.pid {
                process::signal_group(pid, signal);
            }
        }
    }

    /// SIGTERM to every rank's process group, SIGKILL after the grace period.
    fn begin_stop(&mut self, observer: &mut dyn Observer) {
        if self.stop.is_some() {
            return;
        }
        let now = Instant::now();
        self.stop = Some(Stop {
            began: now,
            kill_at: now + self.grace,
            killed_at: None,
        });
        if self.grace.is_zero() {
            self.kill(observer);
            return;
        }
        // Exited ranks too: their leftover children (data loader workers...)
        // are in their group.
        self.signal_all(libc::SIGTERM);
        observer.on_event(&Event::Stopping {
            ranks: self.live_ranks(),
            grace: self.grace,
        });
    }

    fn kill(&mut self, observer: &mut dyn Observer) {
        if let Some(stop) = &mut self.stop {
            if stop.killed_at.is_some() {
                return;
            }
            stop.killed_at = Some(Instant::now());
        }
        self.signal_all(libc::SIGKILL);
        observer.on_event(&Event::Killing {
            ranks: self.live_ranks(),
        });
    }

    /// Runs until every started rank ended and its output was read.
    fn supervise(
        &mut self,
        rx: &Receiver<Msg>,
        mut signals: Option<&mut SignalGuard>,
        observer: &mut dyn Observer,
    ) {
        let mut next_trace_poll = Instant::now();
        let mut drain_until: Option<Instant> = None;
        loop {
            let now = Instant::now();
            let all_ended = self
                .slots
                .iter()
                .all(|s| s.pid.is_none() || s.end.is_some());
            if all_ended {
                if self.slots.iter().all(|s| s.open_readers == 0) {
                    break;
                }
                let until = *drain_until.get_or_insert(now + DRAIN_WAIT);
                if now >= until {
                    observer.on_event(&Event::Notice {
                        message: "a process started by a rank still holds its output open; not waiting for it (what it writes after ddp-probe exits is not kept)".to_owned(),
                    });
                    break;
                }
            }
            if let Some(killed_at) = self.stop.as_ref().and_then(|s| s.killed_at) {
                if now.duration_since(killed_at) >= KILL_WAIT && !all_ended {
                    let ranks: Vec<String> =
                        self.live_ranks().iter().map(usize::to_string).collect();
                    observer.on_event(&Event::Notice {
                        message: format!(
                            "rank(s) {} did not exit {} s after SIGKILL (stuck in the kernel or a driver?); giving up on them",
                            ranks.join(", "),
                            KILL_WAIT.as_secs()
                        ),
                    });
                    break;
                }
            }
            match rx.recv_timeout(TICK) {
                Ok(msg) => self.handle(msg, observer),
                Err(RecvTimeoutError::Timeout) => {}
                // Every reader and waiter is gone: nothing more can happen.
                Err(RecvTimeoutError::Disconnected) => break,
            }
            self.settle_exits(observer);
            if let Some(guard) = signals.as_deref_mut() {
                if let Some(signal) = guard.take() {
                    self.on_signal(signal, observer);
                }
            }
            if let Some(stop) = &self.stop {
                if stop.killed_at.is_none() && Instant::now() >= stop.kill_at {
                    self.kill(observer);
                }
            }
            if Instant::now() >= next_trace_poll {
                next_trace_poll = Instant::now() + TRACE_POLL;
                self.poll_traces();
                self.sample_ranks();
                self.check_hang(observer);
            }
            self.check_dump_wait(observer);
        }
        // Whatever ended but was not recorded yet (the loop gave up waiting).
        while let Some(exit) = self.pending_exits.pop_front() {
            self.record_exit(exit, observer);
        }
    }

    fn handle(&mut self, msg: Msg, observer: &mut dyn Observer) {
        match msg {
            Msg::Output {
                slot,
                stream,
                lines,
            } => {
                let s = &mut self.slots[slot];
                s.last_progress = Instant::now();
                for text in lines {
                    if stream == Stream::Stderr {
                        s.last_words.push(&text);
                    }
                    if s.console.show(stream, &text) {
                        observer.on_event(&Event::Output {
                            rank: s.rank,
                            stream,
                            text: text.clone(),
                        });
                    }
                    if !text.trim().is_empty() {
                        s.last_output = Some(text);
                    }
                }
            }
            Msg::ReaderDone {
                slot,
                stream,
                log_error,
            } => {
                let s = &mut self.slots[slot];
                s.open_readers = s.open_readers.saturating_sub(1);
                if let Some(e) = log_error {
                    observer.on_event(&Event::Notice {
                        message: format!("could not write rank {}'s {stream} log: {e}", s.rank),
                    });
                }
            }
            Msg::Exited {
                slot,
                termination,
                at,
                when,
            } => {
                self.slots[slot].exited = true;
                let kill_evidence = self.kill_evidence(slot, &termination);
                self.pending_exits.push_back(PendingExit {
                    slot,
                    termination,
                    at,
                    when,
                    settle_until: Instant::now() + OUTPUT_SETTLE,
                    kill_evidence,
                });
            }
        }
    }

    /// For a rank that died of a SIGKILL the launcher did not send, the
    /// evidence about the sender, read now (the OOM killer raises its
    /// counters before it sends the signal, so they already show it). The
    /// same for a rank that failed with an error exit before the launcher
    /// stopped anything: a process of its own (a DataLoader worker) may have
    /// got the SIGKILL, and the rank's cgroup counts that kill too.
    fn kill_evidence(&mut self, slot: usize, termination: &Termination) -> Option<KillEvidence> {
        let sigkill =
            matches!(termination, Termination::Signaled { number, .. } if *number == libc::SIGKILL);
        let launcher_killed = self.stop.as_ref().is_some_and(|s| s.killed_at.is_some());
        let error_exit = matches!(termination, Termination::Exited { code } if *code != 0)
            && self.stop.is_none();
        if !(sigkill && !launcher_killed || error_exit) {
            return None;
        }
        let s = &self.slots[slot];
        let pid = s.pid?;
        Some(evidence::collect(&s.watch, &mut self.kernel_log, pid))
    }

    /// Records rank ends in the order they happened, each once the rank's
    /// last output was shown (or [`OUTPUT_SETTLE`] passed), so that a failing
    /// rank's error lines come before the launcher's message about it.
    fn settle_exits(&mut self, observer: &mut dyn Observer) {
        let now = Instant::now();
        while let Some(front) = self.pending_exits.front() {
            if self.slots[front.slot].open_readers > 0 && now < front.settle_until {
                break;
            }
            let Some(exit) = self.pending_exits.pop_front() else {
                break;
            };
            self.record_exit(exit, observer);
        }
    }

    fn record_exit(&mut self, exit: PendingExit, observer: &mut dyn Observer) {
        let PendingExit {
            slot,
            termination,
            at,
            when,
            kill_evidence,
            ..
        } = exit;
        let after_s = when.duration_since(self.start).as_secs_f64();
        let stopped_by_launcher = self.stop.as_ref().is_some_and(|s| s.began <= when);
        let end = RankEnd {
            termination: termination.clone(),
            at: at.to_rfc3339_opts(SecondsFormat::Millis, false),
            after_s,
            at_unix_ns: at.timestamp_nanos_opt(),
            stopped_by_launcher,
            kill_evidence,
        };
        let (rank, local_rank) = {
            let s = &mut self.slots[slot];
            s.end = Some(end.clone());
            (s.rank, s.local_rank)
        };
        self.manifest.ranks[slot].end = Some(end.clone());
        observer.on_event(&Event::RankEnded {
            rank,
            end: end.clone(),
        });
        if !termination.success() && self.trigger.is_none() {
            let failure = Failure {
                rank,
                local_rank,
                termination,
                at: end.at,
                after_s,
                kill_evidence: end.kill_evidence.clone(),
            };
            self.trigger = Some(Trigger::Failure);
            observer.on_event(&Event::FirstFailure(failure.clone()));
            let lines = self.slots[slot].last_words.quote();
            if !lines.is_empty() {
                observer.on_event(&Event::LastWords {
                    rank,
                    log: rundir::rank_stderr(rank),
                    lines,
                });
            }
            self.first_failure = Some(failure);
            // What the others were doing when a rank failed (a rank stuck in a checkpoint
            // while its peer's collective timed out) is in their stacks and dumps.
            if !self.request_dumps(DumpReason::Failure, observer) {
                self.begin_stop(observer);
            }
        }
    }

    fn on_signal(&mut self, signal: i32, observer: &mut dyn Observer) {
        if self.stop_signal.is_none() {
            self.stop_signal = Some(process::signal_name(signal));
        }
        if self.trigger.is_none() {
            let name = process::signal_name(signal);
            self.trigger = Some(Trigger::Interrupt);
            self.interrupt_signal = Some(signal);
            observer.on_event(&Event::Interrupted {
                signal: name.clone(),
            });
            self.interrupted_by = Some(name);
            // A job stopped by hand is often a hung one: where each rank was is worth the
            // moment it takes (a second signal stops the ranks at once).
            if !self.request_dumps(DumpReason::Interrupt, observer) {
                self.begin_stop(observer);
            }
        } else if self.dump_wait.take().is_some() {
            // A stop signal while waiting for dumps: stop the ranks now.
            self.begin_stop(observer);
        } else {
            // A second stop signal: no more grace.
            self.kill(observer);
        }
    }

    /// Counts a rank's trace growth as progress.
    fn poll_traces(&mut self) {
        let now = Instant::now();
        for s in &mut self.slots {
            if s.pid.is_none() || s.exited {
                continue;
            }
            let path = self.run_dir.join(rundir::rank_trace(s.rank));
            if let Ok(meta) = std::fs::metadata(&path) {
                let len = meta.len();
                if s.trace_len != Some(len) {
                    s.trace_len = Some(len);
                    s.last_progress = now;
                }
            }
        }
    }

    /// Samples each running rank's memory use and picks up cgroups it moved
    /// into (see [`crate::evidence`]).
    fn sample_ranks(&mut self) {
        let after_s = self.start.elapsed().as_secs_f64();
        for s in &mut self.slots {
            let Some(pid) = s.pid else {
                continue;
            };
            if s.exited {
                continue;
            }
            s.watch.refresh_cgroups(pid, &self.mounts);
            s.watch.sample_memory(pid, after_s);
        }
    }

    fn check_hang(&mut self, observer: &mut dyn Observer) {
        let Some(timeout) = self.hang_timeout else {
            return;
        };
        if self.trigger.is_some() {
            return;
        }
        let now = Instant::now();
        let newest = self
            .slots
            .iter()
            .filter(|s| s.pid.is_some() && !s.exited)
            .map(|s| s.last_progress)
            .max();
        let Some(newest) = newest else {
            return;
        };
        if now.duration_since(newest) < timeout {
            return;
        }
        let mut ranks: Vec<RankHangState> = self
            .slots
            .iter()
            .filter(|s| s.pid.is_some())
            .map(|s| {
                let trace = rundir::rank_trace(s.rank);
                RankHangState {
                    rank: s.rank,
                    ended: s.end.as_ref().map(|e| e.termination.clone()),
                    idle_s: now.duration_since(s.last_progress).as_secs_f64(),
                    trace_tail: TraceTail::read(&self.run_dir.join(&trace)).ok(),
                    trace,
                    last_output: s.last_output.clone(),
                }
            })
            .collect();
        ranks.extend(self.ranks_started_by_ranks());
        let report = HangReport::new(
            timeout.as_secs_f64(),
            Local::now().to_rfc3339_opts(SecondsFormat::Millis, false),
            ranks,
        );
        self.trigger = Some(Trigger::Hang);
        observer.on_event(&Event::Hang(report.clone()));
        self.hang = Some(report);
        if !self.request_dumps(DumpReason::Hang, observer) {
            self.begin_stop(observer);
        }
    }

    /// The ranks whose traces are in the run directory without being one this launcher
    /// started: a launched process that starts the ranks itself (`torch.multiprocessing.spawn`
    /// in PyTorch's DDP tutorial) leaves one trace per rank. Without them a hang report would
    /// take the launched rank's wait for everyone's.
    fn ranks_started_by_ranks(&self) -> Vec<RankHangState> {
        let Ok(dir) = std::fs::read_dir(self.run_dir.join(rundir::TRACES_DIR)) else {
            return Vec::new();
        };
        let mut out: Vec<RankHangState> = dir
            .flatten()
            .filter_map(|e| {
                let name = e.file_name();
                let rank: usize = name
                    .to_str()?
                    .strip_prefix("rank-")?
                    .strip_suffix(".jsonl")?
                    .parse()
                    .ok()?;
                if self.slots.iter().any(|s| s.rank == rank) {
                    return None;
                }
                let idle_s = e
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .map_or(0.0, |d| d.as_secs_f64());
                let trace = rundir::rank_trace(rank);
                Some(RankHangState {
                    rank,
                    ended: None,
                    idle_s,
                    trace_tail: TraceTail::read(&self.run_dir.join(&trace)).ok(),
                    trace,
                    last_output: None,
                })
            })
            .collect();
        out.sort_by_key(|r| r.rank);
        out
    }

    /// Asks the ranks that listen (`control/rank-<R>.listening`, written by
    /// `python/ddp_probe_torch/__init__.py`) for PyTorch flight-recorder dumps and their
    /// Python stacks before they are stopped, on a hang, when another rank failed first or on
    /// an interrupt (`reason`, written into the request): gloo never writes a dump on its own, a stopped
    /// NCCL job never reaches its timeout, and a rank the failed one waited for was
    /// somewhere its stack tells. Returns whether a request was made (the ranks are then
    /// stopped by [`Run::check_dump_wait`]).
    fn request_dumps(&mut self, reason: DumpReason, observer: &mut dyn Observer) -> bool {
        // What each live rank's processes were doing, read before any is asked or stopped: a
        // rank that waits for a batch waits for its DataLoader workers, and their state says
        // why (explain reads it beside the rank's Python stack).
        self.write_process_trees(reason);
        let slots: Vec<usize> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.pid.is_some() && !s.exited)
            .filter(|(_, s)| {
                self.run_dir
                    .join(rundir::rank_dump_listening(s.rank))
                    .is_file()
            })
            .map(|(i, _)| i)
            .collect();
        if slots.is_empty() {
            return false;
        }
        let request = self.run_dir.join(rundir::dump_request());
        if let Err(e) = std::fs::write(&request, format!("{}\n", reason.as_str())) {
            observer.on_event(&Event::Notice {
                message: format!(
                    "could not ask the ranks for flight-recorder dumps ({}): {e}",
                    request.display()
                ),
            });
            return false;
        }
        let others = self.listening_ranks_not_started();
        let ranks: Vec<String> = slots
            .iter()
            .map(|&i| self.slots[i].rank)
            .chain(others.iter().copied())
            .map(|r| r.to_string())
            .collect();
        // After a failure the ranks usually end on their own within moments (their peer is
        // gone): only dumps they did write are worth a line then.
        let announced = reason != DumpReason::Failure;
        if announced {
            let again = if reason == DumpReason::Interrupt {
                " (interrupt again to stop them now)"
            } else {
                ""
            };
            observer.on_event(&Event::Notice {
                message: format!(
                    "asked rank(s) {} for a flight-recorder dump and their Python stack; waiting up to {} s{again}",
                    ranks.join(", "),
                    DUMP_WAIT.as_secs()
                ),
            });
        }
        self.dump_wait = Some(DumpWait {
            until: Instant::now() + DUMP_WAIT,
            slots,
            others,
            announced,
        });
        true
    }

    /// Writes `logs/processes-rank-<R>.txt` for each rank still running: its process tree
    /// (best effort: a file that cannot be written is left out).
    fn write_process_trees(&self, reason: DumpReason) {
        let when = match reason {
            DumpReason::Hang => "stopped the job (no rank made progress)",
            DumpReason::Failure => "stopped the job (another rank failed)",
            DumpReason::Interrupt => "stopped the job (it was interrupted)",
        };
        let running: Vec<(usize, u32)> = self
            .slots
            .iter()
            .filter(|s| !s.exited)
            .filter_map(|s| Some((s.rank, s.pid?)))
            .collect();
        let pids: Vec<u32> = running.iter().map(|&(_, pid)| pid).collect();
        let trees = process_tree::process_trees(Path::new("/proc"), &pids);
        for ((rank, _), tree) in running.iter().zip(trees) {
            if tree.is_empty() {
                continue;
            }
            let path = self
                .run_dir
                .join(LOGS_DIR)
                .join(processes::file_name(*rank));
            let _ = std::fs::write(path, processes::render(*rank, when, &tree));
        }
    }

    /// The ranks with a `control/rank-<R>.listening` file that no slot of this node started
    /// (the ranks `torch.multiprocessing.spawn` starts in a launched process).
    fn listening_ranks_not_started(&self) -> Vec<usize> {
        let Ok(entries) = std::fs::read_dir(self.run_dir.join(rundir::CONTROL_DIR)) else {
            return Vec::new();
        };
        let mut ranks: Vec<usize> = entries
            .filter_map(Result::ok)
            .filter_map(|e| rundir::listening_rank(e.file_name().to_str()?))
            .filter(|r| self.slots.iter().all(|s| s.rank != *r))
            .collect();
        ranks.sort_unstable();
        ranks
    }

    /// Stops the ranks once every rank asked for a dump answered (or ended),
    /// or [`DUMP_WAIT`] passed; says what each answered.
    fn check_dump_wait(&mut self, observer: &mut dyn Observer) {
        let Some(wait) = &self.dump_wait else {
            return;
        };
        let answer = |rank: usize| {
            std::fs::read_to_string(self.run_dir.join(rundir::rank_dump_answer(rank))).ok()
        };
        // (rank, whether its process ended): the slots', then the ranks they started, whose
        // end this launcher does not see.
        let asked: Vec<(usize, bool)> = wait
            .slots
            .iter()
            .map(|&i| (self.slots[i].rank, self.slots[i].exited))
            .chain(wait.others.iter().map(|&r| (r, false)))
            .collect();
        let done = asked
            .iter()
            .all(|&(rank, exited)| exited || answer(rank).is_some());
        if !done && Instant::now() < wait.until {
            return;
        }
        let mut lines = Vec::new();
        let mut wrote_any = false;
        for &(rank, exited) in &asked {
            wrote_any |= answer(rank).is_some_and(|a| a.starts_with("ok "));
            let text = match answer(rank) {
                Some(a) => {
                    let a = a.trim();
                    match a.strip_prefix("ok ") {
                        Some(path) => {
                            let path = Path::new(path);
                            let shown = path.strip_prefix(&self.run_dir).unwrap_or(path);
                            format!("wrote {}", shown.display())
                        }
                        None => crate::console::sanitize(a.as_bytes())
                            .chars()
                            .take(200)
                            .collect(),
                    }
                }
                None if exited => "ended before it answered".to_owned(),
                None => format!("no answer within {} s", DUMP_WAIT.as_secs()),
            };
            lines.push(format!("rank {rank}: {text}"));
        }
        if wait.announced || wrote_any {
            observer.on_event(&Event::Notice {
                message: format!(
                    "flight-recorder dumps and Python stacks: {}",
                    lines.join("; ")
                ),
            });
        }
        self.dump_wait = None;
        self.begin_stop(observer);
    }

    /// Writes the final manifest and builds the outcome.
    fn finish(mut self, spawn_error: Option<LaunchError>) -> Result<Outcome, LaunchError> {
        let (status, exit_code) = match self.trigger {
            None => (RunStatus::Ok, 0),
            Some(Trigger::Failure) => (
                RunStatus::Failed,
                self.first_failure
                    .as_ref()
                    .map_or(1, |f| f.termination.exit_code()),
            ),
            Some(Trigger::Hang) => (RunStatus::Hang, EXIT_HANG),
            Some(Trigger::Interrupt) => (
                RunStatus::Interrupted,
                self.interrupt_signal
                    .map_or(EXIT_INTERRUPTED, exit_code_for_signal),
            ),
            Some(Trigger::LaunchError) => (
                RunStatus::LaunchError,
                spawn_error.as_ref().map_or(1, LaunchError::exit_code),
            ),
        };
        let ended = Local::now();
        let m = &mut self.manifest;
        m.status = status;
        m.exit_code = Some(exit_code);
        m.ended_at = Some(ended.to_rfc3339_opts(SecondsFormat::Millis, false));
        m.duration_s = Some(self.start.elapsed().as_secs_f64());
        m.first_failure = self.first_failure.take();
        m.hang = self.hang.take();
        m.interrupted_by = self.interrupted_by.take();
        m.launch_error = spawn_error.as_ref().map(ToString::to_string);
        self.write_manifest()?;
        if let Some(e) = spawn_error {
            return Err(e);
        }
        Ok(Outcome {
            status,
            exit_code,
            run_dir: self.run_dir,
            manifest: self.manifest,
        })
    }
}

/// Starts a named helper thread.
fn start_thread(name: String, f: impl FnOnce() + Send + 'static) -> io::Result<()> {
    thread::Builder::new().name(name).spawn(f).map(drop)
}

/// Copies one output stream of a rank into its log (raw) and to the launch
/// loop (as console-safe lines).
fn read_stream(slot: usize, stream: Stream, mut pipe: impl Read, mut log: File, tx: Sender<Msg>) {
    let mut splitter = LineSplitter::new(MAX_CONSOLE_LINE_BYTES);
    let mut buf = vec![0u8; 64 * 1024];
    let mut raw = Vec::new();
    let mut log_error = None;
    let mut loop_gone = false;
    loop {
        let n = match pipe.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        if log_error.is_none() {
            if let Err(e) = log.write_all(&buf[..n]) {
                log_error = Some(e);
            }
        }
        if loop_gone {
            // Keep draining the pipe so the rank never blocks on it.
            continue;
        }
        splitter.push(&buf[..n], &mut raw);
        let lines = raw.drain(..).map(|l| l.to_console()).collect();
        loop_gone = tx
            .send(Msg::Output {
                slot,
                stream,
                lines,
            })
            .is_err();
    }
    if !loop_gone {
        splitter.finish(&mut raw);
        if !raw.is_empty() {
            let lines = raw.drain(..).map(|l| l.to_console()).collect();
            let _ = tx.send(Msg::Output {
                slot,
                stream,
                lines,
            });
        }
    }
    let _ = tx.send(Msg::ReaderDone {
        slot,
        stream,
        log_error,
    });
}

/// Waits for a rank's process and reports how it ended.
fn wait_child(slot: usize, mut child: Child, tx: Sender<Msg>) {
    let termination = loop {
        match child.wait() {
            Ok(status) => break process::termination(status),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                break Termination::Unknown {
                    reason: format!("waiting for it failed: {e}"),
                }
            }
        }
    };
    let _ = tx.send(Msg::Exited {
        slot,
        termination,
        at: Local::now(),
        when: Instant::now(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        assert_eq!(
            parse_endpoint("node1:29500").unwrap(),
            ("node1".to_owned(), 29500)
        );
        assert_eq!(
            parse_endpoint("node1").unwrap(),
            ("node1".to_owned(), 29400)
        );
        assert_eq!(
            parse_endpoint("[::1]:1234").unwrap(),
            ("::1".to_owned(), 1234)
        );
        assert_eq!(
            parse_endpoint("[fe80::1]").unwrap(),
            ("fe80::1".to_owned(), 29400)
        );
        // Port 0 is a free port, which the plan allows on one machine only.
        assert_eq!(
            parse_endpoint("localhost:0").unwrap(),
            ("localhost".to_owned(), 0)
        );
        for bad in ["::1", "host:", "host:70000", ":29500", "[::1", "[::1]x"] {
            let e = parse_endpoint(bad).unwrap_err();
            assert!(e.to_string().contains("--rdzv-endpoint"), "{bad}: {e}");
        }
    }
}
