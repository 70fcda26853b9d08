//! `ddp-probe run`: hands the arguments to the launcher and ends with the job's status.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use anyhow::{bail, Result};
use probe_launch::{launch, ConsoleMode, ConsoleObserver, Event, LaunchConfig};

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::cli::{ConsoleArg, Nproc, RunArgs};
use probe_contract::run_dir::is_python;

/// Launches the ranks, streams their console output, and returns the run's exit status.
pub fn run(args: RunArgs) -> Result<ExitCode> {
    check_torchrun_options(&args)?;
    let (program, words) = training_command(&args)?;
    let python = is_python(&program);
    let mut config = LaunchConfig::new(program, words);
    config.nproc_per_node = ranks_per_node(args.nproc_per_node)?;
    config.nnodes = args.nnodes;
    config.node_rank = args.node_rank;
    (config.master_addr, config.master_port) = master_unless_endpoint(&args);
    config.rdzv_endpoint = args.rdzv_endpoint.clone();
    config.rdzv_id = args.rdzv_id;
    config.store_token_file = args.rdzv_token_file;
    config.out_dir = args.out.or(args.log_dir);
    config.bucket_cap_mb = args.bucket_cap_mb;
    if !args.bucket_cap_mb_list.is_empty() {
        if let Some(bad) = args
            .bucket_cap_mb_list
            .iter()
            .find(|mb| !(mb.is_finite() && **mb > 0.0))
        {
            bail!(
                "--bucket-cap-mb-list: {bad} is not a positive number of MiB; write the caps as \
                 e.g. --bucket-cap-mb-list 1,4,25"
            );
        }
        let list: Vec<String> = args.bucket_cap_mb_list.iter().map(f64::to_string).collect();
        config.env.push((
            probe_contract::env::BUCKET_CAP_MB_LIST.into(),
            list.join(",").into(),
        ));
    }
    if args.no_calibrate {
        config
            .env
            .push((probe_contract::env::CALIBRATE.into(), "0".into()));
    }
    config.hang_timeout = args.hang_timeout.map(seconds).transpose()?;
    if let Some(grace) = args.grace.or(args.shutdown_timeout) {
        config.grace_period = seconds(grace)?;
    }
    config.role = args.role.clone();
    config.max_restarts = args.max_restarts;
    config.console = match args.console {
        ConsoleArg::Rank0 => ConsoleMode::Rank0,
        ConsoleArg::All => ConsoleMode::All,
        ConsoleArg::Quiet => ConsoleMode::Quiet,
    };

    let result = if args.tui {
        launch_with_viewer(config)?
    } else {
        launch(&config, &mut ConsoleObserver)
    };
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(err) => {
            eprintln!("ddp-probe: error: {err}");
            return Ok(exit_code(err.exit_code()));
        }
    };
    eprintln!("{}", outcome.render_summary());
    let traced = has_traces(&outcome.run_dir);
    if python && outcome.exit_code == 0 && !traced {
        eprintln!("{}", why_untraced(&outcome.run_dir, args.auto_instrument));
    }
    let run = warm_trace_cache(&outcome.run_dir);
    if outcome.exit_code != 0 {
        let ctrl_c = outcome.manifest.interrupted_by.as_deref() == Some("SIGINT");
        explain_briefly(&outcome.run_dir, ctrl_c && traced);
    } else if traced {
        if let Some(run) = &run {
            print_warnings(run);
        }
        eprintln!("{}", what_next(&outcome.run_dir));
    }
    Ok(exit_code(outcome.exit_code))
}

/// Why a Python job that ended well left no trace: what the ranks' module said (a model that is
/// not DistributedDataParallel, an optimizer stepping with none built), else what the launch
/// mode implies (without `--auto-instrument` the program must call `instrument`).
fn why_untraced(run_dir: &Path, auto_instrument: bool) -> String {
    if let Some(said) = super::load::ranks_said(&[run_dir.to_path_buf()]) {
        return format!("no rank recorded a trace; {said}");
    }
    if auto_instrument {
        "no rank recorded a trace: the program built no DistributedDataParallel model (or no \
         rank reached it); ddp-probe records DistributedDataParallel only"
            .to_owned()
    } else {
        "no rank recorded a trace: the program never called `ddp_probe_torch.instrument(model)`. \
         `ddp-probe run --auto-instrument ...` records its DistributedDataParallel model with no \
         change to it (also one that Hugging Face's Trainer, Accelerate or PyTorch Lightning \
         builds)."
            .to_owned()
    }
}

/// Whether any rank left a trace file in the run directory.
fn has_traces(run_dir: &Path) -> bool {
    std::fs::read_dir(run_dir.join("traces")).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
    })
}

/// After a recorded run that ended well: the commands that read it, so that a torchrun user
/// who swapped the launcher learns where the answers are (ready to paste: the run directory
/// quoted for a POSIX shell when it needs it).
fn what_next(run_dir: &Path) -> String {
    let dir = shell_word(&run_dir.to_string_lossy());
    let html = shell_word(&run_dir.join("report.html").to_string_lossy());
    format!(
        "next:\n  ddp-probe summary {dir}    where the step time went, bucket_cap_mb advice\n  \
         ddp-probe report {dir} -o {html}\n  ddp-probe tui {dir}"
    )
}

/// `word` as one word of a POSIX shell command: as it is when every character is plain, else
/// in single quotes (a quote inside written `'\''`).
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%,=".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Loads the run's traces once, now that every rank has ended, so that the reader writes its
/// binary cache: the user's first `summary`, `tui` or `report` then reads the cache instead of
/// parsing the JSON. Best effort: a trace that cannot be read is reported by the command that
/// reads it, not here. The run, when it loaded.
fn warm_trace_cache(run_dir: &std::path::Path) -> Option<probe::Run> {
    match probe::reader::load_run(&[run_dir.to_path_buf()]) {
        Ok((run, _)) => Some(run),
        Err(e) => {
            tracing::debug!("traces of {} not cached: {e}", run_dir.display());
            None
        }
    }
}

/// After a recorded run that ended well: what `summary` would put first, the mistakes that
/// defeat data parallelism or waste it (every rank fed the same batches, one checkpoint file
/// saved by every rank, the recorders' warnings), so that a job that "worked" is not left
/// unread. The summary's own words, each wrapped to the terminal.
fn print_warnings(run: &probe::Run) {
    let warnings = probe::analysis::warnings(run, &probe::analysis::SummaryOptions::default());
    if warnings.is_empty() {
        return;
    }
    let width = super::output::terminal_width();
    let mut out = String::new();
    for w in &warnings {
        probe::wrap::push_prose(&mut out, &format!("warning: {w}"), width, "");
    }
    eprint!("{out}");
}

/// After a failed run: the likely cause and the fix to try, from the diagnosis of the run
/// directory, and where to read more. `recorded_then_ctrl_c`: the job recorded traces and the
/// launcher got SIGINT; when the diagnosis finds nothing before that interrupt (no hang, no
/// failure), the user stopped the job at the terminal and knows why, and what was recorded is
/// what they want next (a hung job stopped so still gets its hang named).
fn explain_briefly(run_dir: &std::path::Path, recorded_then_ctrl_c: bool) {
    match probe_explain::explain(&[run_dir.to_path_buf()]) {
        Ok(report)
            if recorded_then_ctrl_c
                && report.findings.first().is_some_and(|f| {
                    f.category == probe_explain::Category::LauncherInterrupted
                }) =>
        {
            eprintln!("{}", what_next(run_dir));
            eprintln!(
                "  ddp-probe explain {}    why it stopped, if not by your Ctrl-C",
                shell_word(&run_dir.to_string_lossy())
            );
        }
        Ok(report) => {
            eprintln!("\n{}", report.headline);
            if let Some(first) = report.findings.first() {
                eprintln!("  fix: {}", first.fix);
            }
            eprintln!("  details: ddp-probe explain {}", run_dir.display());
        }
        Err(e) => eprintln!("(could not explain the failure: {e})"),
    }
}

/// `run --tui`: the launch runs on a thread while the terminal timeline follows the run
/// directory. The console stays silent while the viewer is open (its output is kept in the
/// run directory); closing the viewer leaves the job running, and from then on its console
/// (the `--console` choice) and the launcher's messages follow on the terminal as without
/// `--tui`. Ctrl-C stops the job.
fn launch_with_viewer(
    config: LaunchConfig,
) -> Result<Result<probe_launch::Outcome, probe_launch::LaunchError>> {
    let (tx, rx) = mpsc::channel();
    let done = Arc::new(AtomicBool::new(false));
    let viewer_closed = Arc::new(AtomicBool::new(false));
    let finished = Arc::clone(&done);
    let console_back = Arc::clone(&viewer_closed);
    let job = std::thread::Builder::new()
        .name("ddp-probe-launch".into())
        .spawn(move || {
            let mut console = ConsoleObserver;
            let mut observer = |event: &Event| {
                if let Event::RunStarted { run_dir, .. } = event {
                    let _ = tx.send(run_dir.clone());
                }
                if console_back.load(Ordering::SeqCst) {
                    probe_launch::Observer::on_event(&mut console, event);
                }
            };
            let result = launch(&config, &mut observer);
            finished.store(true, Ordering::SeqCst);
            result
        })?;
    if let Ok(run_dir) = rx.recv() {
        let options = probe_tui::Options::default();
        let viewed = probe_tui::live(&run_dir, || done.load(Ordering::SeqCst), &options);
        if !done.load(Ordering::SeqCst) {
            eprintln!(
                "ddp-probe: viewer closed; the job goes on and its console follows here \
                 (Ctrl-C stops it; `ddp-probe tui --live {}` opens the viewer again)",
                run_dir.display()
            );
        }
        viewer_closed.store(true, Ordering::SeqCst);
        viewed?;
    }
    job.join().map_err(|_| {
        anyhow::anyhow!("the launcher thread panicked; the run directory keeps what it recorded")
    })
}

/// The master address and port, unless `--rdzv-endpoint` names the rendezvous: torchrun then
/// ignores `--master-addr`/`--master-port` (`get_rdzv_endpoint` in `torch/distributed/run.py`),
/// which a Kubernetes operator may set from its own variables (`PET_MASTER_PORT`). Said once
/// when they name another place than the endpoint.
fn master_unless_endpoint(args: &RunArgs) -> (Option<String>, Option<u16>) {
    let Some(endpoint) = &args.rdzv_endpoint else {
        return (args.master_addr.clone(), args.master_port);
    };
    // A malformed endpoint is the launcher's to refuse, with its own message.
    let Ok((host, port)) = probe_launch::parse_endpoint(endpoint) else {
        return (None, None);
    };
    let mut ignored = Vec::new();
    if let Some(addr) = args.master_addr.as_deref().filter(|a| *a != host) {
        ignored.push(format!("--master-addr {addr}"));
    }
    if let Some(p) = args.master_port.filter(|p| *p != port) {
        ignored.push(format!("--master-port {p}"));
    }
    if !ignored.is_empty() {
        eprintln!(
            "ddp-probe: {} ignored (or its PET_ variable): --rdzv-endpoint {endpoint} names the \
             rendezvous, as in torchrun",
            ignored.join(" and ")
        );
    }
    (None, None)
}

/// torchrun's options that ddp-probe accepts but does not act on, or supports
/// only in part: refused with what to do, or noted once.
fn check_torchrun_options(args: &RunArgs) -> Result<()> {
    if let Some(backend) = &args.rdzv_backend {
        if !matches!(backend.as_str(), "c10d" | "static") {
            bail!(
                "--rdzv-backend {backend:?} is not supported: ddp-probe runs its own store on node 0 \
                 (what torchrun's `c10d` and `static` backends do); use one of those or leave it out"
            );
        }
    }
    if args.standalone && args.nnodes > 1 {
        bail!(
            "--standalone is a single machine's run, but --nnodes is {}",
            args.nnodes
        );
    }
    if args.virtual_local_rank {
        bail!(
            "--virtual-local-rank is not supported: ddp-probe gives every rank its own LOCAL_RANK \
             (0 to nproc-per-node - 1); leave the flag out and pick the GPU from LOCAL_RANK \
             (`torch.cuda.set_device(int(os.environ[\"LOCAL_RANK\"]))`)"
        );
    }
    if args.shutdown_timeout.is_some() && args.grace.is_some() {
        bail!("--shutdown-timeout and --grace are the same setting: give one of them");
    }
    if args.module && args.no_python {
        bail!(
            "-m runs a Python module and --no-python runs the command as it is: give one of them"
        );
    }
    let ignored: Vec<&str> = [
        ("--rdzv-conf", args.rdzv_conf.is_some()),
        ("--monitor-interval", args.monitor_interval.is_some()),
        ("--redirects", args.redirects.is_some()),
        ("--tee", args.tee.is_some()),
        ("--local-addr", args.local_addr.is_some()),
        ("--local-ranks-filter", args.local_ranks_filter.is_some()),
        ("--start-method", args.start_method.is_some()),
        ("--run-path", args.run_path),
        ("--numa-binding", args.numa_binding.is_some()),
        ("--signals-to-handle", args.signals_to_handle.is_some()),
        ("--event-log-handler", args.event_log_handler.is_some()),
        ("--logs-specs", args.logs_specs.is_some()),
        (
            "--duplicate-stdout-filters",
            args.duplicate_stdout_filters.is_some(),
        ),
        (
            "--duplicate-stderr-filters",
            args.duplicate_stderr_filters.is_some(),
        ),
    ]
    .into_iter()
    .filter_map(|(name, given)| given.then_some(name))
    .collect();
    if !ignored.is_empty() {
        eprintln!(
            "ddp-probe: {} accepted for torchrun compatibility and ignored: ddp-probe starts \
             every rank as its own process, binds none to CPUs, forwards Ctrl-C, SIGTERM and \
             SIGHUP to them, and keeps every rank's output in the run directory (the console \
             shows rank 0's output and every rank's errors; --console all, every rank's output)",
            ignored.join(", ")
        );
    }
    Ok(())
}

/// The program and its arguments, as torchrun would run them: `-m` runs a
/// Python module, a `.py` script runs under Python unless `--no-python`.
fn training_command(args: &RunArgs) -> Result<(OsString, Vec<OsString>)> {
    let mut words = args.command.iter().cloned();
    let Some(first) = words.next() else {
        bail!("no command given: name the training command, e.g. `ddp-probe run train.py`");
    };
    // The command starts at the first word that is not one of ddp-probe's options, so a
    // mistyped option lands here; no training program is named like an option.
    if first.to_string_lossy().starts_with('-') {
        bail!(
            "{} is not an option of `ddp-probe run` (see `ddp-probe run --help`), and a training \
             command cannot start with it; ddp-probe's options come first, then the command: \
             `ddp-probe run --nproc-per-node 2 train.py --lr 0.1`",
            first.to_string_lossy()
        );
    }
    if args.auto_instrument && args.no_python {
        bail!(
            "--auto-instrument runs a Python program through ddp_probe_torch, and --no-python runs the \
             command as it is: give one of them"
        );
    }
    if args.module {
        // `python -m MODULE`, through the runner with --auto-instrument.
        let mut rest: Vec<OsString> = vec!["-u".into()];
        if args.auto_instrument {
            rest.extend(["-m".into(), AUTO_RUNNER.into()]);
        }
        rest.extend(["-m".into(), first]);
        rest.extend(words);
        return Ok((default_python(), rest));
    }
    let words: Vec<OsString> = words.collect();
    if args.auto_instrument {
        return auto_instrumented(first, words);
    }
    if is_script(&first) && !args.no_python {
        let mut rest: Vec<OsString> = vec!["-u".into(), first];
        rest.extend(words);
        return Ok((default_python(), rest));
    }
    Ok((first, words))
}

/// Whether `program` is a Python script (`train.py`), which runs under Python.
fn is_script(program: &OsString) -> bool {
    Path::new(program)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("py"))
}

/// A command as given after `--` (`train.py ARGS`, `python [OPTIONS] train.py ARGS`, `python
/// -m MODULE ARGS`), run through [`AUTO_RUNNER`]: `run`'s and `tune`'s `--auto-instrument`.
pub(crate) fn auto_instrumented(
    program: OsString,
    words: Vec<OsString>,
) -> Result<(OsString, Vec<OsString>)> {
    if is_script(&program) {
        let mut rest: Vec<OsString> = vec!["-u".into(), "-m".into(), AUTO_RUNNER.into(), program];
        rest.extend(words);
        return Ok((default_python(), rest));
    }
    let rest = with_auto_runner(&program, words)?;
    Ok((program, rest))
}

/// The module `--auto-instrument` runs each rank's program through.
const AUTO_RUNNER: &str = probe_contract::run_dir::AUTO_INSTRUMENT_RUNNER;

/// `python [OPTIONS] SCRIPT ARGS` or `python [OPTIONS] -m MODULE ARGS` with
/// [`AUTO_RUNNER`] put before the script or `-m`; any other command is refused, saying what to
/// do instead.
fn with_auto_runner(program: &OsString, words: Vec<OsString>) -> Result<Vec<OsString>> {
    let name = Path::new(program)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let refuse = |why: &str| {
        anyhow::anyhow!(
            "--auto-instrument runs a Python program (`train.py`, `-m pkg.train` or `python \
             train.py`), and {why}; without --auto-instrument, add `model = \
             ddp_probe_torch.instrument(model)` after the model is wrapped in \
             DistributedDataParallel"
        )
    };
    if !is_python(program) {
        return Err(refuse(&format!("`{name}` is not a Python interpreter")));
    }
    let mut out = Vec::with_capacity(words.len() + 2);
    let mut words = words.into_iter();
    while let Some(w) = words.next() {
        let s = w.to_string_lossy();
        if s == "-c" {
            return Err(refuse("`python -c` runs no script"));
        }
        if s == "-m" || !s.starts_with('-') || s == "-" {
            if s == "-" {
                return Err(refuse("`python -` reads the program from its input"));
            }
            out.extend(["-m".into(), AUTO_RUNNER.into()]);
            out.push(w);
            out.extend(words);
            return Ok(out);
        }
        // Python's options that take a value as the next word.
        let takes_value = matches!(s.as_ref(), "-W" | "-X" | "--check-hash-based-pycs");
        out.push(w);
        if takes_value {
            out.extend(words.next());
        }
    }
    Err(refuse("the command names no script or module"))
}

/// The interpreter of a bare script or `-m MODULE`: `DDP_PROBE_PYTHON`, else the `python3`
/// beside this executable (a virtual environment that `pip install`ed the wheel holds both in
/// its `bin/`, as torchrun runs the environment's own `sys.executable`), else `python3` from
/// `PATH`.
fn default_python() -> OsString {
    if let Some(p) = std::env::var_os("DDP_PROBE_PYTHON") {
        return p;
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| {
            let dir = exe.parent()?.to_path_buf();
            ["python3", "python"]
                .iter()
                .map(|name| dir.join(name))
                .find(|p| p.is_file())
        })
        .map_or_else(|| "python3".into(), PathBuf::into_os_string)
}

/// `--nproc-per-node` as a count: `gpu` counts the GPUs this process may use
/// (CUDA_VISIBLE_DEVICES, else the NVIDIA driver's list), `cpu` the CPUs.
pub(crate) fn ranks_per_node(n: Nproc) -> Result<usize> {
    let cpus = || std::thread::available_parallelism().map_or(1, usize::from);
    Ok(match n {
        Nproc::Count(n) => n,
        Nproc::Cpu => cpus(),
        Nproc::Gpu => match visible_gpus() {
            0 => bail!(
                "--nproc-per-node gpu: no GPU is visible here (CUDA_VISIBLE_DEVICES, \
                 /proc/driver/nvidia/gpus); give a number or `cpu`"
            ),
            g => g,
        },
        Nproc::Auto => match visible_gpus() {
            0 => cpus(),
            g => g,
        },
    })
}

/// GPUs this process may use: the entries of CUDA_VISIBLE_DEVICES when it is
/// set, else the GPUs the NVIDIA driver lists.
fn visible_gpus() -> usize {
    if let Some(v) = std::env::var_os("CUDA_VISIBLE_DEVICES") {
        let v = v.to_string_lossy();
        // "-1" or an empty value hide every GPU.
        return v
            .split(',')
            .map(str::trim)
            .take_while(|d| !d.is_empty() && !d.starts_with('-'))
            .count();
    }
    std::fs::read_dir("/proc/driver/nvidia/gpus").map_or(0, |d| d.count())
}

/// A user-given number of seconds as a duration, refusing negative, infinite and NaN values.
fn seconds(value: f64) -> Result<Duration> {
    Duration::try_from_secs_f64(value).map_err(|_| {
        anyhow::anyhow!("{value} is not a usable number of seconds: give a positive number")
    })
}

/// A process exit status in 0..=255.
fn exit_code(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code.clamp(0, 255)).unwrap_or(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<OsString> {
        s.split_whitespace().map(OsString::from).collect()
    }

    /// The runner goes where Python would take the program, after the interpreter's own options.
    #[test]
    fn the_auto_runner_goes_before_the_program() {
        let run = |cmd: &str| {
            let mut w = words(cmd);
            let first = w.remove(0);
            with_auto_runner(&first, w).map(|v| {
                v.iter()
                    .map(|o| o.to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
        };
        assert_eq!(
            run("python -u train.py --lr 0.1").unwrap(),
            "-u -m ddp_probe_torch.auto train.py --lr 0.1"
        );
        assert_eq!(
            run("/v/bin/python3.12 -W ignore -m pkg.train -x").unwrap(),
            "-W ignore -m ddp_probe_torch.auto -m pkg.train -x"
        );
        for refused in [
            "python -c pass",
            "python -",
            "python -u",
            "accelerate launch t.py",
        ] {
            let e = run(refused).unwrap_err().to_string();
            assert!(
                e.contains("--auto-instrument runs a Python program"),
                "{refused}: {e}"
            );
        }
    }

    #[test]
    fn the_next_commands_quote_a_run_directory_only_when_a_shell_needs_it() {
        assert_eq!(
            shell_word("runs/20261204-191449-33c407a4"),
            "runs/20261204-191449-33c407a4"
        );
        assert_eq!(shell_word("/tmp/my runs/x"), "'/tmp/my runs/x'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
        let next = what_next(Path::new("/tmp/my runs/x"));
        assert!(
            next.contains("ddp-probe summary '/tmp/my runs/x'")
                && next
                    .contains("ddp-probe report '/tmp/my runs/x' -o '/tmp/my runs/x/report.html'")
                && next.contains("ddp-probe tui '/tmp/my runs/x'"),
            "{next}"
        );
    }
}
