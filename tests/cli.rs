//! End-to-end tests of the `ddp-probe` binary: help texts, `export chrome` on a generated run,
//! and the errors a user gets for bad input.

use std::path::Path;
use std::process::{Command, Output};

use probe::synth::{generate_run, SynthConfig};
use serde_json::Value;

fn ddp_probe(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ddp-probe"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("the ddp-probe binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn help_lists_every_command_with_examples() {
    let dir = tempfile::tempdir().unwrap();
    let out = ddp_probe(&["--help"], dir.path());
    assert!(out.status.success());
    let help = text(&out.stdout);
    for needle in ["run", "export", "Examples:", "runs/latest"] {
        assert!(
            help.contains(needle),
            "`ddp-probe --help` lacks {needle:?}:\n{help}"
        );
    }
    let out = ddp_probe(&["run", "--help"], dir.path());
    let help = text(&out.stdout);
    for needle in [
        "--nproc-per-node",
        "--hang-timeout",
        "--rdzv-endpoint",
        "MASTER_ADDR",
    ] {
        assert!(
            help.contains(needle),
            "`ddp-probe run --help` lacks {needle:?}:\n{help}"
        );
    }
}

#[test]
fn export_chrome_writes_one_process_per_rank_with_microsecond_events() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    let summary = generate_run(&SynthConfig::new(3, 4, 2), &run_dir).unwrap();
    let out = ddp_probe(&["export", "chrome", "run", "-o", "trace.json"], dir.path());
    assert!(out.status.success(), "export failed: {}", text(&out.stderr));

    let json: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("trace.json")).unwrap()).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    let complete: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(
        complete.len() as u64,
        summary.spans,
        "every span becomes one complete event"
    );
    let mut pids: Vec<u64> = complete
        .iter()
        .map(|e| e["pid"].as_u64().unwrap())
        .collect();
    pids.sort_unstable();
    pids.dedup();
    assert_eq!(pids, [0, 1, 2], "one process per rank");
    let names: Vec<&str> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "process_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 3);
    assert!(names.iter().all(|n| n.starts_with("rank ")), "{names:?}");
    for e in &complete {
        let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
        assert!(ts >= 0.0 && dur >= 0.0, "{e}");
        // The synthetic steps last tens of milliseconds: in microseconds that is well under 1e6.
        assert!(dur < 1.0e6, "dur is not in microseconds: {e}");
    }
}

#[test]
fn a_mistyped_run_option_is_named_as_an_option_not_run_as_a_program() {
    // `--run-dir` is no option of `run` (`--out` is): the command starts at the first word
    // that is not an option, so without the check the launcher tried to start `--run-dir`.
    let dir = tempfile::tempdir().unwrap();
    let out = ddp_probe(
        &["run", "--nproc-per-node", "2", "--run-dir", "x", "train.py"],
        dir.path(),
    );
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("--run-dir is not an option of `ddp-probe run`")
            && err.contains("ddp-probe run --help"),
        "{err}"
    );
    assert!(!dir.path().join("runs").exists(), "nothing was launched");
}

/// torchrun reads its flags' `PET_` variables as numbers (`PET_STANDALONE=1`, `bool(int(...))`):
/// so does `run`, for every flag (before, `1` was refused as no boolean).
#[test]
fn run_reads_flags_from_their_variables_as_torchrun_writes_them() {
    let dir = tempfile::tempdir().unwrap();
    let with = |vars: &[(&str, &str)], args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_ddp-probe"))
            .arg("run")
            .args(args)
            .envs(vars.iter().copied())
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(!out.status.success());
        text(&out.stderr)
    };
    let err = with(&[("PET_STANDALONE", "1")], &["--nnodes", "2", "train.py"]);
    assert!(
        err.contains("--standalone is a single machine's run"),
        "{err}"
    );
    let err = with(
        &[("PET_NO_PYTHON", "1"), ("PET_MODULE", "1")],
        &["pkg.train"],
    );
    assert!(
        err.contains("-m runs a Python module and --no-python"),
        "{err}"
    );
    let err = with(
        &[("DDP_PROBE_AUTO_INSTRUMENT", "1")],
        &["--", "bash", "train.sh"],
    );
    assert!(
        err.contains("--auto-instrument runs a Python program") && err.contains("`bash`"),
        "{err}"
    );
    // `0` is off, as torchrun reads it: a two-node run is no standalone one.
    let err = with(
        &[("PET_STANDALONE", "0")],
        &["--nnodes", "2", "--node-rank", "5", "train.py"],
    );
    assert!(err.contains("invalid --node-rank"), "{err}");
    // torchrun takes the rendezvous from --rdzv-endpoint and ignores the master's address and
    // port (`get_rdzv_endpoint`), which an operator may set from its own variables.
    let err = with(
        &[
            ("PET_MASTER_PORT", "29611"),
            ("PET_MASTER_ADDR", "10.0.0.1"),
        ],
        &[
            "--rdzv_endpoint=10.0.0.1:29612",
            "--nnodes",
            "2",
            "--node-rank",
            "5",
            "train.py",
        ],
    );
    assert!(
        err.contains("--master-port 29611 ignored")
            && !err.contains("--master-addr 10.0.0.1")
            && !err.contains("disagrees"),
        "{err}"
    );
    assert!(err.contains("invalid --node-rank"), "{err}");
    // torchtitan's launch line (`run_train.sh`): a free port on one machine, its console
    // filter, its role and tee; port 0 cannot serve several nodes.
    let err = with(
        &[],
        &[
            "--rdzv_backend",
            "c10d",
            "--rdzv_endpoint=localhost:0",
            "--local-ranks-filter",
            "0",
            "--role",
            "rank",
            "--tee",
            "3",
            "--nnodes",
            "2",
            "--node-rank",
            "1",
            "train.py",
        ],
    );
    assert!(
        err.contains("--tee, --local-ranks-filter accepted for torchrun compatibility")
            && err.contains("port 0 (any free port) works on one machine only"),
        "{err}"
    );
    let err = with(&[("PET_VIRTUAL_LOCAL_RANK", "1")], &["train.py"]);
    assert!(
        err.contains("--virtual-local-rank is not supported"),
        "{err}"
    );
    assert!(!dir.path().join("runs").exists(), "nothing was launched");
}

#[test]
fn export_chrome_of_a_missing_run_says_what_to_pass() {
    let dir = tempfile::tempdir().unwrap();
    let out = ddp_probe(
        &["export", "chrome", "no-such-run", "-o", "t.json"],
        dir.path(),
    );
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("no-such-run") && err.contains("run directory"),
        "{err}"
    );
    let out = ddp_probe(&["export", "chrome", "-o", "t.json"], dir.path());
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("ddp-probe run"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn run_reports_the_failing_rank_and_propagates_its_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let out = ddp_probe(
        &[
            "run",
            "--nproc-per-node",
            "2",
            "--grace",
            "1",
            "--",
            "sh",
            "-c",
            "[ \"$RANK\" = 1 ] && exit 3; sleep 30",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(3), "stderr: {}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("rank 1") && err.contains("code 3"), "{err}");
    assert!(dir.path().join("runs/latest/manifest.json").is_file());
    // No rank recorded: the summary says why a run can lack traces and what still reads it.
    let out = ddp_probe(&["summary", "runs/latest"], dir.path());
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("no trace files")
            && err.contains("ddp_probe_torch.instrument(model)")
            && err.contains("`ddp-probe explain` still reads"),
        "{err}"
    );
}

#[test]
fn a_recorded_run_that_ended_well_names_the_commands_that_read_it() {
    let dir = tempfile::tempdir().unwrap();
    // Each rank leaves a trace file where the launcher asks for it; a job that records
    // nothing, and one that fails, get no such pointer (the failure gets its explanation).
    let records = "mkdir -p \"$DDP_PROBE_TRACE_DIR\" && \
                   echo '{\"type\":\"header\"}' > \"$DDP_PROBE_TRACE_DIR/rank-$RANK.jsonl\"";
    for (script, pointer) in [(records, true), ("true", false), ("exit 3", false)] {
        let out = ddp_probe(
            &[
                "run",
                "--nproc-per-node",
                "2",
                "--out",
                "my run",
                "--",
                "sh",
                "-c",
                script,
            ],
            dir.path(),
        );
        let err = text(&out.stderr);
        assert_eq!(
            err.contains("next:\n  ddp-probe summary"),
            pointer,
            "{script}: {err}"
        );
        if pointer {
            assert!(out.status.success(), "{err}");
            assert!(
                err.contains("ddp-probe tui '") && err.contains("my run/report.html'"),
                "{err}"
            );
        }
    }
}

/// Runs a 2-rank job of `script` (sh) through `ddp-probe run`, then `ddp-probe explain --json`
/// on it; returns the exit code of the run and the first finding's (category, ranks).
fn run_then_explain(dir: &Path, script: &str, extra: &[&str]) -> (Option<i32>, String, Vec<u64>) {
    let (code, report) = run_then_explain_report(dir, script, extra);
    let first = &report["findings"][0];
    let category = first["category"].as_str().unwrap_or_default().to_owned();
    let ranks = first["ranks"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default();
    (code, category, ranks)
}

/// As [`run_then_explain`], returning the whole `explain --json` report.
fn run_then_explain_report(dir: &Path, script: &str, extra: &[&str]) -> (Option<i32>, Value) {
    let mut args = vec!["--console", "quiet"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", "sh", "-c", script]);
    let (run, report) = run_two_ranks_then_explain(dir, &args);
    (run.status.code(), report)
}

/// `ddp-probe run --nproc-per-node 2 --grace 1 ARGS...`, then `explain --json`
/// on the run: the run's output and the report.
fn run_two_ranks_then_explain(dir: &Path, args: &[&str]) -> (Output, Value) {
    let mut run_args = vec!["run", "--nproc-per-node", "2", "--grace", "1"];
    run_args.extend_from_slice(args);
    let run = ddp_probe(&run_args, dir);
    let explain = ddp_probe(&["explain", "--json"], dir);
    assert!(
        explain.status.success(),
        "explain failed: {}",
        text(&explain.stderr)
    );
    (run, serde_json::from_slice(&explain.stdout).unwrap())
}

/// The `kill_evidence` the launcher recorded in rank `rank`'s end.
fn kill_evidence(dir: &Path, rank: usize) -> Value {
    let text = std::fs::read_to_string(dir.join("runs/latest/manifest.json")).unwrap();
    let m: Value = serde_json::from_str(&text).unwrap();
    m["ranks"][rank]["end"]["kill_evidence"].clone()
}

/// Whether the host has the host-wide OOM-kill counter (Linux 4.13 and later).
fn host_counts_oom_kills() -> bool {
    std::fs::read_to_string("/proc/vmstat")
        .is_ok_and(|t| t.lines().any(|l| l.starts_with("oom_kill ")))
}

#[test]
fn explain_names_the_cause_of_each_launcher_failure() {
    // A rank that exits with an error after printing a Python-style traceback.
    let dir = tempfile::tempdir().unwrap();
    let (code, category, ranks) = run_then_explain(
        dir.path(),
        "if [ \"$RANK\" = 1 ]; then echo 'Traceback (most recent call last):' >&2; \
         echo '  File \"train.py\", line 3, in <module>' >&2; \
         echo 'ValueError: bad batch' >&2; exit 3; fi; sleep 30",
        &[],
    );
    assert_eq!(code, Some(3));
    assert_eq!((category.as_str(), ranks), ("rank_crashed", vec![1]));

    // A rank killed by SIGKILL from outside (kill -9): the launcher reads the OOM-kill
    // counters at its start and its death; unchanged, they prove it was not the OOM killer.
    let dir = tempfile::tempdir().unwrap();
    let (code, report) = run_then_explain_report(
        dir.path(),
        "if [ \"$RANK\" = 1 ]; then sleep 0.5; kill -9 $$; fi; sleep 30",
        &[],
    );
    assert_eq!(code, Some(137));
    let evidence = kill_evidence(dir.path(), 1);
    let counters = evidence["oom_kill_counters"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let first = &report["findings"][0];
    let explanation = first["explanation"].as_str().unwrap_or_default();
    if host_counts_oom_kills() {
        assert!(
            !counters.is_empty(),
            "the counters are recorded: {evidence}"
        );
        assert_eq!(
            (first["category"].as_str(), first["ranks"].clone()),
            (Some("rank_crashed"), serde_json::json!([1])),
            "{report:#}"
        );
        assert!(
            explanation.contains(
                "rank 1 was killed by SIGKILL from outside the process (kill -9, a scheduler's \
                 preemption or a timeout); the out-of-memory killer did not act ("
            ) && explanation.contains("oom_kill unchanged)"),
            "{explanation}"
        );
    } else {
        eprintln!(
            "no oom_kill counter in /proc/vmstat here: expecting the unconfirmed OOM verdict"
        );
        assert_eq!(
            first["category"].as_str(),
            Some("host_oom_killed"),
            "{report:#}"
        );
        assert!(
            explanation.contains("could not be confirmed"),
            "{explanation}"
        );
    }

    // A hang: rank 0 queued all_reduce seq 5 and waits; rank 1 never gets there.
    let dir = tempfile::tempdir().unwrap();
    let trace = "mkdir -p \"$DDP_PROBE_TRACE_DIR\"; f=\"$DDP_PROBE_TRACE_DIR/rank-$RANK.jsonl\"; \
        echo '{\"type\":\"header\",\"format\":\"ddp-probe-trace\",\"version\":\"1.0\",\"run_id\":\"'$DDP_PROBE_RUN_ID'\",\"rank\":'$RANK',\"world_size\":2,\"start_ns\":1000}' > $f; \
        echo '{\"type\":\"span\",\"kind\":\"collective\",\"op\":\"all_reduce\",\"step\":0,\"start\":2000,\"end\":3000,\"seq\":4}' >> $f; \
        if [ \"$RANK\" = 0 ]; then echo '{\"type\":\"instant\",\"name\":\"collective_queued\",\"t\":4000,\"step\":1,\"args\":{\"seq\":5,\"op\":\"all_reduce\",\"bucket\":0,\"bytes\":64}}' >> $f; fi; \
        sleep 60";
    let (code, category, ranks) = run_then_explain(dir.path(), trace, &["--hang-timeout", "1"]);
    assert_eq!(code, Some(124));
    assert_eq!(category, "collective_timeout");
    assert_eq!(ranks, vec![1], "the rank behind is named");
}

/// A memory cgroup made for one test, removed when dropped.
struct TestCgroup {
    dir: std::path::PathBuf,
}

impl TestCgroup {
    /// A child of this process's memory cgroup limited to `bytes` (cgroup v1's memory
    /// controller, or cgroup v2 where this process's cgroup delegates `memory`); `Err` says
    /// why none could be made.
    fn create(bytes: u64) -> Result<TestCgroup, String> {
        let own = std::fs::read_to_string("/proc/self/cgroup").map_err(|e| e.to_string())?;
        let name = format!("ddp-probe-oom-test-{}", std::process::id());
        let mut tried = Vec::new();
        for line in own.lines() {
            let mut parts = line.splitn(3, ':');
            let (_, controllers, path) = match (parts.next(), parts.next(), parts.next()) {
                (Some(a), Some(b), Some(c)) => (a, b, c),
                _ => continue,
            };
            let (base, limit_file) = if controllers.split(',').any(|c| c == "memory") {
                ("/sys/fs/cgroup/memory", "memory.limit_in_bytes")
            } else if controllers.is_empty() {
                let v2 = if Path::new("/sys/fs/cgroup/cgroup.controllers").is_file() {
                    "/sys/fs/cgroup"
                } else {
                    "/sys/fs/cgroup/unified"
                };
                (v2, "memory.max")
            } else {
                continue;
            };
            let parent = Path::new(base).join(path.trim_start_matches('/'));
            let dir = parent.join(&name);
            if let Err(e) = std::fs::create_dir(&dir) {
                tried.push(format!("{}: {e}", dir.display()));
                continue;
            }
            let cg = TestCgroup { dir };
            match std::fs::write(cg.dir.join(limit_file), bytes.to_string()) {
                Ok(()) => {
                    // No swap to escape to (absent files are fine).
                    let _ = std::fs::write(cg.dir.join("memory.swap.max"), "0");
                    let _ = std::fs::write(
                        cg.dir.join("memory.memsw.limit_in_bytes"),
                        bytes.to_string(),
                    );
                    return Ok(cg);
                }
                Err(e) => tried.push(format!("{}: {e}", cg.dir.join(limit_file).display())),
            }
        }
        Err(if tried.is_empty() {
            "no memory cgroup found".to_owned()
        } else {
            tried.join("; ")
        })
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

#[test]
fn a_rank_killed_by_the_oom_killer_is_named_with_the_kernels_evidence() {
    // Rank 1 moves itself into a cgroup limited to 64 MiB, waits for the launcher to see it
    // there, and becomes `tail /dev/zero`, which holds an ever longer line in memory.
    let cg = match TestCgroup::create(64 << 20) {
        Ok(cg) => cg,
        Err(why) => {
            eprintln!("skipped: no writable memory cgroup to make a real OOM kill in ({why})");
            return;
        }
    };
    let procs = cg.dir.join("cgroup.procs");
    let script = format!(
        "if [ \"$RANK\" = 1 ]; then echo $$ > '{}' || exit 9; sleep 1; exec tail /dev/zero; fi; sleep 30",
        procs.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let (code, report) = run_then_explain_report(dir.path(), &script, &[]);
    assert_eq!(code, Some(137), "{report:#}");
    let evidence = kill_evidence(dir.path(), 1);
    let own = evidence["oom_kill_counters"]
        .as_array()
        .and_then(|c| {
            c.iter().find(|c| {
                c["file"]
                    .as_str()
                    .is_some_and(|f| f.contains("ddp-probe-oom-test-"))
            })
        })
        .cloned()
        .unwrap_or_else(|| panic!("the rank's own cgroup counter is recorded: {evidence:#}"));
    assert_eq!(own["scope"], "cgroup", "{own}");
    assert!(
        own["at_death"].as_u64() > own["at_start"].as_u64(),
        "the kernel counted the kill: {own}"
    );
    assert!(
        evidence["last_memory"]["rss_kib"].as_u64().is_some(),
        "the last memory sample is recorded: {evidence:#}"
    );
    let first = &report["findings"][0];
    assert_eq!(
        (first["category"].as_str(), first["ranks"].clone()),
        (Some("host_oom_killed"), serde_json::json!([1])),
        "{report:#}"
    );
    assert_eq!(
        first["title"].as_str(),
        Some("rank 1 was killed by the out-of-memory killer")
    );
    let explanation = first["explanation"].as_str().unwrap_or_default();
    if evidence["kernel_log_read"] == true {
        assert!(
            explanation.contains("the kernel log names its pid"),
            "{explanation}"
        );
    } else {
        assert!(explanation.contains("oom_kill rose from"), "{explanation}");
    }
    drop(cg);
}

#[test]
fn summary_answers_then_caches_the_traces_for_the_next_load() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    // Files over the 1 MiB below which traces are not cached.
    generate_run(&SynthConfig::new(2, 150, 20), &run_dir).unwrap();
    let traces = run_dir.join(probe::trace::TRACES_DIR);
    for r in 0..2 {
        let len = std::fs::metadata(traces.join(format!("rank-{r}.jsonl")))
            .unwrap()
            .len();
        assert!(len > 1 << 20, "rank {r}: {len} bytes");
    }
    let cache = |r: u32| traces.join(".cache").join(format!("rank-{r}.ddpc"));
    let first = ddp_probe(&["summary", "run", "--json"], dir.path());
    assert!(first.status.success(), "{}", text(&first.stderr));
    for r in 0..2 {
        assert!(cache(r).is_file(), "no cache for rank {r} after summary");
    }
    let second = Command::new(env!("CARGO_BIN_EXE_ddp-probe"))
        .args(["summary", "run", "--json"])
        .current_dir(dir.path())
        .env("DDP_PROBE_DEBUG", "1")
        .output()
        .unwrap();
    assert!(second.status.success(), "{}", text(&second.stderr));
    let debug = text(&second.stderr);
    assert_eq!(debug.matches("loaded from").count(), 2, "{debug}");
    assert_eq!(text(&first.stdout), text(&second.stdout));
}

/// Runs a 2-rank job of `cmd` with the default console; returns the console
/// (stderr) and `explain --json`'s first finding (category, title).
fn run_console_then_explain(dir: &Path, cmd: &[&str]) -> (String, String, String) {
    let mut args = vec!["--"];
    args.extend_from_slice(cmd);
    let (run, report) = run_two_ranks_then_explain(dir, &args);
    let first = &report["findings"][0];
    (
        text(&run.stderr),
        first["category"].as_str().unwrap_or_default().to_owned(),
        first["title"].as_str().unwrap_or_default().to_owned(),
    )
}

/// A failing rank's own words (its Python traceback, its `what():` line, a
/// missing script) reach the console in a block right after the launcher says
/// which rank failed first, and `explain` puts the cause they show first: a
/// signal is read for what it usually means (SIGSEGV a native crash, never a
/// timeout; SIGBUS a /dev/shm too small).
#[test]
fn a_failing_ranks_last_words_reach_the_console_and_explain() {
    let py = "python3";
    if Command::new(py).arg("-c").arg("pass").status().is_err() {
        panic!("python3 is needed for this test (the failing ranks are Python programs)");
    }
    // A Python exception in rank 1: the whole traceback, File line included.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("crash.py"),
        "import os, time\n\ndef step(x):\n    return 1 / x\n\nif os.environ['RANK'] == '1':\n    step(0)\ntime.sleep(30)\n",
    )
    .unwrap();
    let (console, category, title) = run_console_then_explain(dir.path(), &[py, "crash.py"]);
    let block = console
        .split("rank 1's last words (logs/rank-1.stderr):")
        .nth(1)
        .unwrap_or_else(|| panic!("no last-words block: {console}"));
    assert!(
        block.contains("|   File \"") && block.contains("crash.py\", line 7"),
        "{console}"
    );
    assert!(
        block.contains("| ZeroDivisionError: division by zero"),
        "{console}"
    );
    let failed_at = console.find("rank 1 failed first").unwrap();
    let block_at = console.find("rank 1's last words").unwrap();
    let sigterm_at = console.find("sent SIGTERM").unwrap();
    assert!(failed_at < block_at && block_at < sigterm_at, "{console}");
    assert_eq!(category, "rank_crashed");
    assert!(
        title.contains("ZeroDivisionError: division by zero"),
        "{title}"
    );

    // A script that is not there.
    let dir = tempfile::tempdir().unwrap();
    let (console, category, title) = run_console_then_explain(dir.path(), &[py, "missing.py"]);
    assert!(
        console.contains("last words") && console.contains("can't open file"),
        "{console}"
    );
    assert_eq!(category, "rank_crashed");
    assert!(title.contains("can't open file"), "{title}");

    // A native abort with gloo's what() line (the C++ runtime's format).
    let dir = tempfile::tempdir().unwrap();
    let abort = "if [ \"$RANK\" = 1 ]; then \
        echo \"terminate called after throwing an instance of 'gloo::EnforceNotMet'\" >&2; \
        echo \"  what():  [enforce fail at gloo/transport/tcp/pair.cc:456] op.preamble.length <= op.nbytes. 16 vs 4. Received data size doesn't match expected size. Is there a distributed collective mismatch in your code?\" >&2; \
        kill -ABRT $$; fi; sleep 30";
    let (console, category, _) = run_console_then_explain(dir.path(), &["sh", "-c", abort]);
    assert!(console.contains("|   what():  [enforce fail"), "{console}");
    assert_eq!(category, "collective_mismatch", "{console}");

    // Signals with no word of the rank's own.
    for (signal, want) in [("SEGV", "rank_crashed"), ("BUS", "shm_too_small")] {
        let dir = tempfile::tempdir().unwrap();
        let script =
            format!("if [ \"$RANK\" = 1 ]; then sleep 0.3; kill -{signal} $$; fi; sleep 30");
        let (console, category, _) = run_console_then_explain(dir.path(), &["sh", "-c", &script]);
        assert!(console.contains(&format!("SIG{signal}")), "{console}");
        assert_eq!(category, want, "SIG{signal}: {console}");
    }
}

/// The console of `ddp-probe run --nproc-per-node 2 --grace 1 --out run -- sh -c SCRIPT` in
/// `dir`, interrupted (SIGINT, as Ctrl-C sends) 1.5 s after its start.
fn interrupted_run(dir: &std::path::Path, script: &str) -> String {
    let child = Command::new(env!("CARGO_BIN_EXE_ddp-probe"))
        .args([
            "run",
            "--nproc-per-node",
            "2",
            "--grace",
            "1",
            "--out",
            "run",
        ])
        .args(["--", "sh", "-c", script])
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // SAFETY: kill(2) on the pid of a child we own and have not waited for.
    let sent = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(sent, 0);
    text(&child.wait_with_output().unwrap().stderr)
}

/// Ctrl-C to the launcher is its own finding, not a collective timeout.
#[test]
fn an_interrupted_launcher_is_named_as_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let console = interrupted_run(dir.path(), "sleep 30");
    assert!(console.contains("got SIGINT"), "{console}");
    let explain = ddp_probe(&["explain", "--json", "run"], dir.path());
    let report: Value = serde_json::from_slice(&explain.stdout).unwrap();
    let first = &report["findings"][0];
    assert_eq!(first["category"], "launcher_interrupted", "{report:#}");
    assert_eq!(
        first["title"],
        "the launcher got SIGINT and stopped the ranks"
    );

    // A job that recorded: after Ctrl-C the console points at what was recorded (the user
    // stopped it and knows why), with `explain` for a stop that was not theirs.
    let dir = tempfile::tempdir().unwrap();
    let traced = "mkdir -p \"$DDP_PROBE_TRACE_DIR\"; \
        echo '{\"type\":\"header\",\"format\":\"ddp-probe-trace\",\"version\":\"1.0\",\"run_id\":\"'$DDP_PROBE_RUN_ID'\",\"rank\":'$RANK',\"world_size\":2,\"start_ns\":1000}' \
        > \"$DDP_PROBE_TRACE_DIR/rank-$RANK.jsonl\"; sleep 30";
    let console = interrupted_run(dir.path(), traced);
    assert!(
        console.contains("next:\n  ddp-probe summary ")
            && console.contains("/run    why it stopped, if not by your Ctrl-C")
            && !console.contains("most likely cause"),
        "{console}"
    );
}

/// A run that `--max-restarts` restarted after a failure and that then finished: `explain`
/// explains the failed attempt (kept in `attempts/0/`) on its own, says why the run was
/// restarted in its headline, and its JSON lists every earlier attempt.
#[test]
fn explain_names_the_failure_that_made_a_run_restart() {
    let dir = tempfile::tempdir().unwrap();
    // Attempt 1: rank 1 runs out of GPU memory (PyTorch's own message); attempt 2 finishes.
    let script = "if [ \"$TORCHELASTIC_RESTART_COUNT\" = 0 ] && [ \"$RANK\" = 1 ]; then \
        echo 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has \
        a total capacity of 79.10 GiB of which 1.12 GiB is free.' >&2; exit 1; fi; \
        [ \"$TORCHELASTIC_RESTART_COUNT\" = 0 ] && exec sleep 30; echo done";
    let (code, report) = run_then_explain_report(dir.path(), script, &["--max-restarts", "1"]);
    assert_eq!(code, Some(0), "{report}");
    let attempts = report["attempts"].as_array().expect("attempts listed");
    assert_eq!(attempts.len(), 1, "{report}");
    assert_eq!(attempts[0]["attempt"], 1);
    assert_eq!(attempts[0]["status"], "failed");
    assert_eq!(attempts[0]["category"], "cuda_oom", "{report}");
    assert!(
        attempts[0]["dir"].as_str().unwrap().ends_with("attempts/0"),
        "{report}"
    );
    let headline = report["headline"].as_str().unwrap();
    assert!(
        headline.starts_with("finished after 1 restart; attempt 1 failed; most likely cause: "),
        "{headline}"
    );
    assert!(headline.contains("out of GPU memory"), "{headline}");
    let text = text(&ddp_probe(&["explain"], dir.path()).stdout);
    assert!(
        text.contains("earlier attempts (the workers were restarted):"),
        "{text}"
    );
    assert!(
        text.contains("attempt 1 (failed): most likely cause:"),
        "{text}"
    );

    // A run that never restarted lists no attempts.
    let (_, report) = run_then_explain_report(dir.path(), "exit 0", &[]);
    assert!(report.get("attempts").is_none(), "{report}");
}

/// `ddp-probe explain -` with `input` on its stdin (written from a thread, so a large input
/// does not block on a full pipe): its `--json` report.
fn explain_stdin(input: Vec<u8>) -> Value {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_ddp-probe"))
        .args(["explain", "--json", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn explain_reads_a_log_piped_to_it_as_it_reads_the_file() {
    // A real log (explain/tests/corpus: torchtune#392, a second job on the port 29500).
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("explain/tests/corpus/logs/torchtune-392.log");
    let log = std::fs::read(&path).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = ddp_probe(&["explain", "--json", path.to_str().unwrap()], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let from_file: Value = serde_json::from_slice(&out.stdout).unwrap();
    let piped = explain_stdin(log.clone());
    let first = |r: &Value| {
        (
            r["findings"][0]["category"].clone(),
            r["findings"][0]["title"].clone(),
        )
    };
    assert_eq!(first(&piped), first(&from_file));
    assert_eq!(first(&piped).0, "port_in_use");
    assert_eq!(piped["findings"][0]["evidence"][0]["file"], "stdin");

    // With other inputs it says what to do instead.
    let out = ddp_probe(&["explain", "-", path.to_str().unwrap()], dir.path());
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("save it to a file"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn compare_names_where_a_slower_run_lost_its_time_and_what_differs() {
    // Two generated runs of 3 ranks: the second's data loading is 8 ms slower per step and its
    // gradients are in 4 buckets instead of 2.
    let dir = tempfile::tempdir().unwrap();
    let base = SynthConfig::new(3, 20, 2);
    let mut slow = SynthConfig::new(3, 20, 4);
    slow.seed = 2;
    slow.data_ns += 8_000_000;
    generate_run(&base, &dir.path().join("before")).unwrap();
    generate_run(&slow, &dir.path().join("after")).unwrap();
    let out = ddp_probe(&["compare", "before", "after"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let flat = text(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(flat.contains("slower"), "{flat}");
    assert!(
        flat.contains("the largest part of it is data wait"),
        "{flat}"
    );
    assert!(flat.contains("buckets (steady): 2 → 4"), "{flat}");

    let out = ddp_probe(&["compare", "before", "after", "--json"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &json["comparison"];
    assert_eq!(c["beyond_noise"], true);
    assert_eq!(c["parts"][0]["part"], "data wait");
    let d =
        c["parts"][0]["run_ns"].as_f64().unwrap() - c["parts"][0]["baseline_ns"].as_f64().unwrap();
    assert!((d - 8e6).abs() < 0.1 * 8e6, "{d}");

    // A missing run says which side it is.
    let out = ddp_probe(&["compare", "before", "nowhere"], dir.path());
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("the run nowhere"),
        "{}",
        text(&out.stderr)
    );
}

/// Every shell script of the project answers `--help` (and `-h`) with its usage and exit status
/// 0, at once: none starts a build, a download or a run when asked for help (before
/// `scripts/usage.sh`, `scripts/demo --help` compiled libtorch's bindings and `bench/hta/run
/// --help` made a virtual environment).
#[test]
fn project_scripts_answer_help_without_running_anything() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for script in [
        "scripts/demo",
        "scripts/test",
        "scripts/setup",
        "scripts/wheel",
        "scripts/fuzz-ci",
        "scripts/gpu-check",
        "bench/run",
        "bench/overhead",
        "bench/hta/run",
    ] {
        for flag in ["--help", "-h"] {
            let out = Command::new(root.join(script))
                .arg(flag)
                .current_dir(root)
                .output()
                .unwrap_or_else(|e| panic!("{script} runs: {e}"));
            let usage = text(&out.stdout);
            assert!(
                out.status.success(),
                "{script} {flag}: {}\n{usage}{}",
                out.status,
                text(&out.stderr)
            );
            // The header comment, without its `#`s: its first line says what the script does.
            let first = usage.lines().next().unwrap_or_default();
            assert!(
                !first.is_empty() && !first.starts_with('#') && !first.starts_with("!/"),
                "{script} {flag} printed no usage:\n{usage}"
            );
            assert!(
                out.stderr.is_empty(),
                "{script} {flag} did more than print its usage:\n{}",
                text(&out.stderr)
            );
        }
    }
}
