//! End-to-end tests of the launcher: real rank processes (small shell and
//! Python scripts written into temporary directories), asserting on the run
//! directory, the manifest, the events and the exit status.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use probe_launch::{
    launch, ConsoleMode, Event, LaunchConfig, LaunchError, Outcome, RunDir, RunStatus, Stream,
    Termination,
};

/// Every run here must end well within this.
const QUICK: Duration = Duration::from_secs(10);

/// Writes an executable script into `dir`.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, body).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A configuration running `program` with output in `<tmp>/run`, a short
/// grace period and nothing inherited that would change the defaults.
fn config(tmp: &Path, program: &Path, nproc: usize) -> LaunchConfig {
    let mut c = LaunchConfig::new(program, Vec::<String>::new());
    c.nproc_per_node = nproc;
    c.out_dir = Some(tmp.join("run"));
    c.runs_root = tmp.join("runs");
    c.grace_period = Duration::from_millis(300);
    c
}

/// Launches, recording every event.
fn run(config: &LaunchConfig) -> (Result<Outcome, LaunchError>, Vec<Event>, Duration) {
    let mut events = Vec::new();
    let start = Instant::now();
    let result = launch(config, &mut |e: &Event| events.push(e.clone()));
    (result, events, start.elapsed())
}

/// Runs `config`, which must end well and quickly.
fn run_ok(config: &LaunchConfig) -> (Outcome, Vec<Event>) {
    let (result, events, took) = run(config);
    let outcome = result.unwrap();
    assert!(took < QUICK, "{took:?}");
    assert_eq!(
        outcome.status,
        RunStatus::Ok,
        "{}",
        outcome.render_summary()
    );
    assert_eq!(outcome.exit_code, 0);
    (outcome, events)
}

fn shown(events: &[Event], rank: usize) -> Vec<(Stream, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Output {
                rank: r,
                stream,
                text,
            } if *r == rank => Some((*stream, text.clone())),
            _ => None,
        })
        .collect()
}

/// Parses `KEY=VALUE` lines (the output of `env`).
fn env_lines(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

fn read(path: impl AsRef<Path>) -> String {
    fs::read_to_string(path.as_ref()).unwrap_or_else(|e| panic!("{}: {e}", path.as_ref().display()))
}

/// Waits until `cond` holds, failing the test after `limit`.
fn wait_for(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(20));
    }
}

fn wait_child(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the launcher did not end within {limit:?}");
        }
        thread::sleep(Duration::from_millis(20));
    }
}

fn signaled(t: &Termination, name: &str) -> bool {
    matches!(t, Termination::Signaled { signal, .. } if signal == name)
}

#[test]
fn python_ranks_get_torchrun_variables() {
    let tmp = tempfile::tempdir().unwrap();
    let prog = script(
        tmp.path(),
        "show_env.py",
        r#"#!/usr/bin/env python3
import json, os
keys = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
        "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME", "MASTER_ADDR",
        "MASTER_PORT", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT",
        "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_USE_AGENT_STORE", "OMP_NUM_THREADS",
        "PYTHONUNBUFFERED", "DDP_PROBE_RUN_ID", "DDP_PROBE_RUN_DIR", "DDP_PROBE_TRACE_DIR",
        "DDP_PROBE_STORE_TOKEN", "DDP_PROBE_BUCKET_CAP_MB", "NCCL_DEBUG", "NCCL_DEBUG_FILE",
        "TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_NCCL_DUMP_ON_TIMEOUT",
        "TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "TORCH_FR_BUFFER_SIZE", "TORCH_FR_DUMP_TEMP_FILE"]
print(json.dumps({k: os.environ.get(k) for k in keys}))
"#,
    );
    let mut c = config(tmp.path(), Path::new("python3"), 2);
    c.args = vec![prog.into()];
    c.bucket_cap_mb = Some(25.0);
    let (outcome, events) = run_ok(&c);
    let m = &outcome.manifest;
    let dir = &outcome.run_dir;
    let mut tokens = Vec::new();
    for rank in 0..2 {
        let line = read(dir.join(format!("logs/rank-{rank}.stdout")));
        let env: BTreeMap<String, Option<String>> = serde_json::from_str(line.trim()).unwrap();
        let get = |k: &str| env[k].clone().unwrap_or_else(|| panic!("{k} unset"));
        let r = rank.to_string();
        let port = m.master_port.to_string();
        for (k, v) in [
            ("RANK", r.as_str()),
            ("LOCAL_RANK", &r),
            ("WORLD_SIZE", "2"),
            ("LOCAL_WORLD_SIZE", "2"),
            ("GROUP_RANK", "0"),
            ("GROUP_WORLD_SIZE", "1"),
            ("ROLE_RANK", &r),
            ("ROLE_WORLD_SIZE", "2"),
            ("ROLE_NAME", "default"),
            ("MASTER_ADDR", "127.0.0.1"),
            ("MASTER_PORT", &port),
            ("TORCHELASTIC_RUN_ID", &m.run_id),
            ("TORCHELASTIC_RESTART_COUNT", "0"),
            ("TORCHELASTIC_MAX_RESTARTS", "0"),
            ("TORCHELASTIC_USE_AGENT_STORE", "False"),
            ("PYTHONUNBUFFERED", "1"),
            ("DDP_PROBE_RUN_ID", &m.run_id),
            ("DDP_PROBE_BUCKET_CAP_MB", "25"),
            ("NCCL_DEBUG", "INFO"),
            ("TORCH_NCCL_DUMP_ON_TIMEOUT", "1"),
        ] {
            assert_eq!(get(k), v, "{k} of rank {rank}");
        }
        // Under the name(s) python3's torch reads (both when it has none).
        let buffer: Vec<String> = ["TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE"]
            .iter()
            .filter_map(|k| env[*k].clone())
            .collect();
        assert!(
            !buffer.is_empty() && buffer.iter().all(|v| v == "2000"),
            "flight recorder buffer of rank {rank}: {buffer:?}"
        );
        if std::env::var_os("OMP_NUM_THREADS").is_none() {
            assert_eq!(get("OMP_NUM_THREADS"), "1");
        }
        assert_eq!(Path::new(&get("DDP_PROBE_RUN_DIR")), dir.as_path());
        assert_eq!(Path::new(&get("DDP_PROBE_TRACE_DIR")), dir.join("traces"));
        assert_eq!(
            Path::new(&get("NCCL_DEBUG_FILE")),
            dir.join(format!("logs/nccl-rank{rank}.log"))
        );
        assert_eq!(
            Path::new(&get("TORCH_NCCL_DEBUG_INFO_TEMP_FILE")),
            dir.join("logs/nccl_trace_rank_")
        );
        let token = get("DDP_PROBE_STORE_TOKEN");
        assert!(token.len() >= 32 && token.chars().all(|c| c.is_ascii_hexdigit()));
        tokens.push(token);
        let record = m.rank(rank).unwrap();
        assert_eq!(record.local_rank, rank);
        assert!(record.pid.is_some() && record.started_at.is_some());
        assert_eq!(record.env["RANK"], r);
        assert_eq!(record.env["DDP_PROBE_STORE_TOKEN"], "<redacted>");
        assert_eq!(
            record.end.as_ref().unwrap().termination,
            Termination::Exited { code: 0 }
        );
    }
    assert_eq!(
        tokens[0], tokens[1],
        "the ranks of a run share the store token"
    );
    assert!(dir.join("traces").is_dir());
    if std::env::var_os("OMP_NUM_THREADS").is_none() {
        assert!(events.iter().any(
            |e| matches!(e, Event::Notice { message } if message.contains("OMP_NUM_THREADS"))
        ));
    }
}

#[test]
fn default_run_dir_latest_link_and_manifest_read_back() {
    let tmp = tempfile::tempdir().unwrap();
    let prog = script(
        tmp.path(),
        "hello",
        "#!/bin/sh\necho \"out $RANK\"\necho \"err $RANK\" >&2\n",
    );
    let mut c = config(tmp.path(), &prog, 1);
    c.out_dir = None;
    let (result, _, _) = run(&c);
    let first = result.unwrap();
    assert_eq!(first.status, RunStatus::Ok);
    let name = first
        .run_dir
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let (stamp, program) = name.split_at(15);
    assert!(
        stamp.len() == 15
            && stamp.chars().enumerate().all(|(i, ch)| if i == 8 {
                ch == '-'
            } else {
                ch.is_ascii_digit()
            }),
        "{name}"
    );
    assert_eq!(program, "-hello");
    let runs = tmp.path().join("runs");
    assert_eq!(
        fs::read_link(runs.join("latest")).unwrap(),
        Path::new(&name)
    );
    let dir = &first.run_dir;
    assert_eq!(read(dir.join("logs/rank-0.stdout")), "out 0\n");
    assert_eq!(read(dir.join("logs/rank-0.stderr")), "err 0\n");
    assert_eq!(fs::read_dir(dir.join("traces")).unwrap().count(), 0);

    // Read back through the discovery the other commands use.
    let back = RunDir::open(Some(&runs.join("latest"))).unwrap();
    assert_eq!(back.path, fs::canonicalize(dir).unwrap());
    assert_eq!(back.manifest, first.manifest);
    let m = &back.manifest;
    assert_eq!(m.status, RunStatus::Ok);
    assert_eq!(m.exit_code, Some(0));
    assert_eq!(m.program, prog.to_string_lossy());
    assert_eq!(m.world_size, 1);
    assert!(!m.hostname.is_empty() && !m.cwd.is_empty());
    assert!(m.ended_at.is_some() && m.duration_s.is_some());
    assert_eq!(
        back.file(&m.ranks[0].stdout),
        back.path.join("logs/rank-0.stdout")
    );
    assert_eq!(back.trace(0), back.path.join("traces/rank-0.jsonl"));
    assert_eq!(RunDir::open(Some(&runs)).unwrap().path, back.path);

    // A second run takes over `latest`.
    let (result, _, _) = run(&c);
    let second = result.unwrap();
    assert_ne!(second.run_dir, first.run_dir);
    assert_eq!(
        RunDir::open(Some(&runs)).unwrap().path,
        fs::canonicalize(&second.run_dir).unwrap()
    );
}

#[test]
fn failing_rank_is_named_and_the_others_are_stopped() {
    let tmp = tempfile::tempdir().unwrap();
    let prog = script(
        tmp.path(),
        "fail1",
        "#!/bin/sh\nif [ \"$RANK\" = 1 ]; then sleep 0.2; echo 'error: rank 1 gives up' >&2; exit 3; fi\nexec sleep 30\n",
    );
    let (result, events, took) = run(&config(tmp.path(), &prog, 3));
    let outcome = result.unwrap();
    assert!(took < QUICK, "{took:?}");
    assert_eq!(outcome.status, RunStatus::Failed);
    assert_eq!(outcome.exit_code, 3);
    let failure = outcome.first_failure().unwrap();
    assert_eq!(failure.rank, 1);
    assert_eq!(failure.termination, Termination::Exited { code: 3 });
    for rank in [0, 2] {
        let end = outcome.manifest.rank(rank).unwrap().end.clone().unwrap();
        assert!(signaled(&end.termination, "SIGTERM"), "{end:?}");
        assert!(end.stopped_by_launcher);
    }
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::FirstFailure(f) if f.rank == 1)));
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::Stopping { ranks, .. } if ranks == &[0, 2])));
    assert_eq!(
        shown(&events, 1),
        [(Stream::Stderr, "error: rank 1 gives up".to_owned())]
    );
    // The failing rank's last words come before the launcher's message.
    let said = events
        .iter()
        .position(|e| matches!(e, Event::Output { rank: 1, .. }))
        .unwrap();
    let failed = events
        .iter()
        .position(|e| matches!(e, Event::FirstFailure(_)))
        .unwrap();
    assert!(said < failed, "{events:?}");
    let summary = outcome.render_summary();
    assert!(
        summary.contains("first failure: rank 1 exited with code 3"),
        "{summary}"
    );
    assert!(
        summary.contains("rank 0: killed by SIGTERM (stopped by ddp-probe)"),
        "{summary}"
    );
    let m = RunDir::open(Some(&outcome.run_dir)).unwrap().manifest;
    assert_eq!(m.status, RunStatus::Failed);
    assert_eq!(m.first_failure.unwrap().rank, 1);
}

#[test]
fn rank_exiting_with_its_own_status_after_the_sigterm_is_not_called_stopped() {
    // Rank 0 ends with a status of its own after ddp-probe's SIGTERM (a handler's exit, or
    // the same error as the first failure a moment later): the summary says when it ended,
    // not that ddp-probe stopped it, which only a signal shows.
    let tmp = tempfile::tempdir().unwrap();
    let prog = script(
        tmp.path(),
        "trapexit",
        "#!/bin/sh\nif [ \"$RANK\" = 1 ]; then sleep 0.3; exit 3; fi\ntrap 'exit 1' TERM\nsleep 30 &\nwait\n",
    );
    let (result, _, took) = run(&config(tmp.path(), &prog, 2));
    let outcome = result.unwrap();
    assert!(took < QUICK, "{took:?}");
    let end = outcome.manifest.rank(0).unwrap().end.clone().unwrap();
    assert_eq!(end.termination, Termination::Exited { code: 1 });
    assert!(end.stopped_by_launcher);
    let summary = outcome.render_summary();
    assert!(
        summary.contains("rank 0: exited with code 1 (after ddp-probe's SIGTERM)"),
        "{summary}"
    );
}

#[test]
fn rank_killed_by_a_signal_gives_128_plus_signal() {
    let tmp = tempfile::tempdir().unwrap();
    let prog = script(
        tmp.path(),
        "killself",
        "#!/bin/sh\nif [ \"$RANK\" = 1 ]; then kill -KILL $$; fi\nexec sleep 30\n",
    );
    let (result, _, took) = run(&config(tmp.path(), &prog, 2));
    let outcome = result.unwrap();
    assert!(took < QUICK, "{took:?}");
    assert_eq!(outcome.status, RunStatus::Failed);
    assert_eq!(outcome.exit_code, 128 + 9);
    let failure = outcome.first_failure().unwrap();
    assert_eq!(failure.rank, 1);
    assert!(signaled(&failure.termination, "SIGKILL"), "{failure:?}");
    assert!(outcome
        .render_summary()
        .contains("rank 1 killed by SIGKILL"));
}

#[test]
fn rank_ignoring_sigterm_and_its_children_get_sigkill() {
    let tmp = tempfile::tempdir().unwrap();
    let pid_file = tmp.path().join("child.pid");
    let prog = script(
        tmp.path(),
        "stubborn",
        &format!(
            "#!/bin/sh\npid_file='{}'\nif [ \"$RANK\" = 1 ]; then\n  while [ ! -s \"$pid_file\" ]; do sleep 0.05; done\n  exit 1\nfi\ntrap '' TERM\nsleep 30 &\necho $! > \"$pid_file.tmp\"\nmv \"$pid_file.tmp\" \"$pid_file\"\nwait\nwait\n",
            pid_file.display()
        ),
    );
    let (result, events, took) = run(&config(tmp.path(), &prog, 2));
    let outcome = result.unwrap();
    assert!(took < QUICK, "{took:?}");
    assert_eq!(outcome.first_failure().unwrap().rank, 1);
    assert_eq!(outcome.exit_code, 1);
    let end = outcome.manifest.rank(0).unwrap().end.clone().unwrap();
    assert!(signaled(&end.termination, "SIGKILL"), "{end:?}");
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::Killing { ranks } if ranks == &[0])));
    // The rank's own child was in its process group and died with it.
    let child: i32 = read(&pid_file).trim().parse().unwrap();
    wait_for("the rank's child to die", QUICK, || gone(child));
}

#[test]
fn hang_is_detected_and_names_the_rank_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let prog = script(
        tmp.path(),
        "hang",
        r#"#!/bin/sh
t="$DDP_PROBE_TRACE_DIR/rank-$RANK.jsonl"
printf '%s\n' '{"type":"instant","name":"collective_queued","t":1,"step":3,"args":{"seq":16,"op":"all_reduce","bucket":1,"bytes":1024}}' >> "$t"
printf '%s\n' '{"type":"span","kind":"collective","op":"all_reduce","step":3,"start":1,"end":2,"bucket":1,"bytes":1024,"seq":16}' >> "$t"
printf '%s\n' '{"type":"span","kind":"step","step":3,"start":0,"end":3}' >> "$t"
if [ "$RANK" = 0 ]; then
  printf '%s\n' '{"type":"instant","name":"collective_queued","t":4,"step":4,"args":{"seq":17,"op":"all_reduce","bucket":2,"bytes":4096}}' >> "$t"
fi
echo "rank $RANK at step 4"
exec sleep 30
"#,
    );
    let mut c = config(tmp.path(), &prog, 2);
    c.hang_timeout = Some(Duration::from_millis(800));
    let (result, events, took) = run(&c);
    let outcome = result.unwrap();
    assert!(took < QUICK, "{took:?}");
    assert_eq!(outcome.status, RunStatus::Hang);
    assert_eq!(outcome.exit_code, 124);
    let report = outcome.hang().unwrap();
    assert_eq!(report.behind, vec![1]);
    let r0 = report.ranks[0].trace_tail.as_ref().unwrap();
    let waiting = r0.waiting_in.as_ref().unwrap();
    assert_eq!(
        (waiting.seq, waiting.op.as_deref(), waiting.step),
        (17, Some("all_reduce"), Some(4))
    );
    let r1 = report.ranks[1].trace_tail.as_ref().unwrap();
    assert!(r1.waiting_in.is_none());
    assert_eq!(r1.last_completed.as_ref().unwrap().seq, 16);
    assert_eq!(
        report.ranks[1].last_output.as_deref(),
        Some("rank 1 at step 4")
    );
    let text = report.render();
    assert!(text.contains("rank 1 is behind"), "{text}");
    assert!(text.contains("waiting in all_reduce seq 17"), "{text}");
    assert!(events.iter().any(|e| matches!(e, Event::Hang(_))));
    for rank in 0..2 {
        let end = outcome.manifest.rank(rank).unwrap().end.clone().unwrap();
        assert!(end.stopped_by_launcher);
        assert!(outcome
            .run_dir
            .join(format!("traces/rank-{rank}.jsonl"))
            .is_file());
    }
    let m = RunDir::open(Some(&outcome.run_dir)).unwrap().manifest;
    assert_eq!(m.status, RunStatus::Hang);
    assert_eq!(m.hang.unwrap().behind, vec![1]);
}

/// Starts the harness launcher (with the options `extra`) on ranks that print
/// "ready" and then run `rest`, and waits until every rank is ready.
fn start_harness(tmp: &Path, nproc: usize, extra: &[&str], rest: &str) -> (Child, PathBuf) {
    let prog = script(tmp, "ready", &format!("#!/bin/sh\n{rest}\n"));
    let out = tmp.join("run");
    let child = Command::new(env!("CARGO_BIN_EXE_probe-launch-harness"))
        .args(["--nproc", &nproc.to_string(), "--grace-ms", "300"])
        .args(extra)
        .arg("--out")
        .arg(&out)
        .arg("--")
        .arg(&prog)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("every rank to be ready", QUICK, || {
        (0..nproc).all(|r| {
            fs::read_to_string(out.join(format!("logs/rank-{r}.stdout")))
                .is_ok_and(|s| s.contains("ready"))
        })
    });
    (child, out)
}

fn stderr_of(child: &mut Child) -> String {
    let mut text = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut text);
    }
    text
}

#[test]
fn ctrl_c_stops_all_ranks_and_keeps_the_run_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut child, out) = start_harness(tmp.path(), 2, &[], "echo ready\nexec sleep 30");
    let start = Instant::now();
    // SAFETY: plain kill(2) of the harness process this test started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let status = wait_child(&mut child, QUICK);
    assert!(start.elapsed() < QUICK);
    assert_eq!(status.code(), Some(130));
    let err = stderr_of(&mut child);
    assert!(err.contains("got SIGINT"), "{err}");
    let m = RunDir::open(Some(&out)).unwrap().manifest;
    assert_eq!(m.status, RunStatus::Interrupted);
    assert_eq!(m.exit_code, Some(130));
    assert_eq!(m.interrupted_by.as_deref(), Some("SIGINT"));
    for r in &m.ranks {
        let end = r.end.as_ref().unwrap();
        assert!(signaled(&end.termination, "SIGTERM"), "{end:?}");
        assert!(end.stopped_by_launcher);
    }
}

#[test]
fn sigterm_to_the_launcher_kills_stubborn_ranks_after_the_grace_period() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut child, out) = start_harness(
        tmp.path(),
        2,
        &[],
        "trap '' TERM\necho ready\nexec sleep 30",
    );
    // SAFETY: plain kill(2) of the harness process this test started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let status = wait_child(&mut child, QUICK);
    // 128 + SIGTERM, as a shell reports a process SIGTERM ended.
    assert_eq!(status.code(), Some(143));
    let m = RunDir::open(Some(&out)).unwrap().manifest;
    assert_eq!(m.status, RunStatus::Interrupted);
    assert_eq!(m.interrupted_by.as_deref(), Some("SIGTERM"));
    for r in &m.ranks {
        assert!(
            signaled(&r.end.as_ref().unwrap().termination, "SIGKILL"),
            "{r:?}"
        );
    }
}

#[test]
fn sighup_to_the_launcher_exits_129() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut child, out) = start_harness(tmp.path(), 2, &[], "echo ready\nexec sleep 30");
    // SAFETY: plain kill(2) of the harness process this test started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGHUP) }, 0);
    let status = wait_child(&mut child, QUICK);
    assert_eq!(status.code(), Some(129));
    let m = RunDir::open(Some(&out)).unwrap().manifest;
    assert_eq!(m.status, RunStatus::Interrupted);
    assert_eq!(m.exit_code, Some(129));
    assert_eq!(m.interrupted_by.as_deref(), Some("SIGHUP"));
}

#[test]
fn busy_master_port_is_refused_up_front() {
    let tmp = tempfile::tempdir().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut c = config(tmp.path(), Path::new("sh"), 2);
    c.args = vec!["-c".into(), "exit 0".into()];
    c.master_port = Some(port);
    let (result, _, took) = run(&c);
    let err = result.unwrap_err();
    assert!(
        matches!(err, LaunchError::PortInUse { port: p, .. } if p == port),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains(&format!("master port {port} is already in use")),
        "{text}"
    );
    assert!(text.contains("--master-port"), "{text}");
    assert!(!tmp.path().join("run").exists(), "nothing is created");
    assert!(took < Duration::from_secs(2));
}

#[test]
fn missing_command_fails_fast_with_its_name() {
    let tmp = tempfile::tempdir().unwrap();
    let (result, _, took) = run(&config(tmp.path(), Path::new("trian"), 2));
    let err = result.unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot run 'trian': no such file or directory; check the command after --"
    );
    assert_eq!(err.exit_code(), 127);
    assert!(!tmp.path().join("run").exists(), "nothing is created");
    assert!(took < Duration::from_secs(2));

    let plain = tmp.path().join("train.py");
    fs::write(&plain, "print('hi')\n").unwrap();
    let (result, _, _) = run(&config(tmp.path(), &plain, 1));
    let err = result.unwrap_err();
    assert!(
        matches!(err, LaunchError::CommandNotExecutable { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("chmod +x"), "{err}");
}

#[test]
fn console_shows_rank0_and_other_ranks_errors_safely() {
    let tmp = tempfile::tempdir().unwrap();
    let prog = script(
        tmp.path(),
        "chatty",
        r#"#!/bin/sh
echo "hello from $RANK"
echo "note on stderr $RANK" >&2
printf 'colour \033[31mred\033[0m bell \007 bad \377 end\n'
head -c 10000 /dev/zero | tr '\0' x
echo
if [ "$RANK" = 1 ]; then
  printf 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\nValueError: boom\nafter\n' >&2
fi
"#,
    );
    let mut c = config(tmp.path(), &prog, 2);
    let (result, events, _) = run(&c);
    let outcome = result.unwrap();
    let r0 = shown(&events, 0);
    assert_eq!(r0.len(), 4, "{r0:?}");
    assert!(r0.contains(&(Stream::Stdout, "hello from 0".to_owned())));
    assert!(r0.contains(&(Stream::Stderr, "note on stderr 0".to_owned())));
    assert!(r0.contains(&(
        Stream::Stdout,
        "colour red bell \\x07 bad \u{fffd} end".to_owned()
    )));
    let long = &r0.iter().find(|(_, t)| t.starts_with("xxx")).unwrap().1;
    assert!(
        long.len() < 4200 && long.ends_with("more bytes in the log]"),
        "{}",
        long.len()
    );
    let r1: Vec<String> = shown(&events, 1).into_iter().map(|(_, t)| t).collect();
    assert_eq!(
        r1,
        [
            "Traceback (most recent call last):",
            "  File \"x.py\", line 1, in <module>",
            "ValueError: boom"
        ]
    );
    // The logs keep the raw bytes.
    let raw = fs::read(outcome.run_dir.join("logs/rank-0.stdout")).unwrap();
    assert!(raw.windows(5).any(|w| w == b"\x1b[31m"));
    assert!(raw.contains(&0xff));
    assert!(raw.windows(10000).any(|w| w.iter().all(|&b| b == b'x')));

    c.console = ConsoleMode::All;
    c.out_dir = Some(tmp.path().join("all"));
    let (_, events, _) = run(&c);
    assert!(shown(&events, 1).contains(&(Stream::Stdout, "hello from 1".to_owned())));
    assert!(shown(&events, 1).contains(&(Stream::Stderr, "after".to_owned())));

    c.console = ConsoleMode::Quiet;
    c.out_dir = Some(tmp.path().join("quiet"));
    let (_, events, _) = run(&c);
    assert!(!events.iter().any(|e| matches!(e, Event::Output { .. })));
}

#[test]
fn python_exception_fails_the_run_and_shows_the_traceback() {
    let tmp = tempfile::tempdir().unwrap();
    let prog = script(
        tmp.path(),
        "boom.py",
        "#!/usr/bin/env python3\nimport os, time\nif os.environ['RANK'] == '1':\n    raise RuntimeError('rank 1 exploded')\ntime.sleep(30)\n",
    );
    let (result, events, took) = run(&config(tmp.path(), &prog, 2));
    let outcome = result.unwrap();
    assert!(took < QUICK, "{took:?}");
    assert_eq!(outcome.status, RunStatus::Failed);
    assert_eq!(outcome.first_failure().unwrap().rank, 1);
    assert_eq!(outcome.exit_code, 1);
    let r1: Vec<String> = shown(&events, 1).into_iter().map(|(_, t)| t).collect();
    assert_eq!(
        r1.first().map(String::as_str),
        Some("Traceback (most recent call last):")
    );
    assert_eq!(
        r1.last().map(String::as_str),
        Some("RuntimeError: rank 1 exploded")
    );
}

#[test]
fn user_environment_wins_over_the_defaults() {
    let tmp = tempfile::tempdir().unwrap();
    let prog = script(tmp.path(), "env", "#!/bin/sh\nenv\n");
    let mut c = config(tmp.path(), &prog, 2);
    for (k, v) in [
        ("NCCL_DEBUG", "WARN"),
        ("OMP_NUM_THREADS", "3"),
        ("TORCH_NCCL_TRACE_BUFFER_SIZE", "7"),
        ("MY_SETTING", "kept"),
    ] {
        c.env.push((k.into(), v.into()));
    }
    let (result, events, _) = run(&c);
    let outcome = result.unwrap();
    let env = env_lines(&read(outcome.run_dir.join("logs/rank-1.stdout")));
    assert_eq!(env["NCCL_DEBUG"], "WARN");
    assert_eq!(env["OMP_NUM_THREADS"], "3");
    assert_eq!(env["TORCH_NCCL_TRACE_BUFFER_SIZE"], "7");
    assert_eq!(env["MY_SETTING"], "kept");
    assert_eq!(
        Path::new(&env["NCCL_DEBUG_FILE"]),
        outcome.run_dir.join("logs/nccl-rank1.log")
    );
    assert!(!events
        .iter()
        .any(|e| matches!(e, Event::Notice { message } if message.contains("OMP_NUM_THREADS"))));
    assert_eq!(outcome.manifest.env["NCCL_DEBUG"], "WARN");
    assert!(!outcome.manifest.env.contains_key("MY_SETTING"));
}

#[test]
fn multi_node_runs_share_the_run_id_and_token() {
    let tmp = tempfile::tempdir().unwrap();
    let prog = script(tmp.path(), "env", "#!/bin/sh\nenv\n");
    let mut c = config(tmp.path(), &prog, 2);
    c.out_dir = None;
    c.nnodes = 2;
    let (result, _, _) = run(&c);
    assert!(matches!(
        result.unwrap_err(),
        LaunchError::MultiNodeNeedsEndpoint { nnodes: 2 }
    ));
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    c.rdzv_endpoint = Some(format!("127.0.0.1:{port}"));
    let (result, _, _) = run(&c);
    let err = result.unwrap_err();
    assert!(
        matches!(
            err,
            LaunchError::MultiNodeNeedsRunId {
                nnodes: 2,
                token_missing: true
            }
        ),
        "{err:?}"
    );
    // Both are said at once: a torchrun command line moved over learns all it lacks.
    let text = err.to_string();
    assert!(
        text.contains("--rdzv-id") && text.contains("DDP_PROBE_STORE_TOKEN"),
        "{text}"
    );
    c.rdzv_id = Some("job42".into());
    let (result, _, _) = run(&c);
    assert!(matches!(
        result.unwrap_err(),
        LaunchError::MultiNodeNeedsToken { nnodes: 2 }
    ));
    // Node 0 writes the token file, node 1 reads it.
    let token_file = tmp.path().join("token");
    c.store_token_file = Some(token_file.clone());

    let mut tokens = Vec::new();
    let mut dirs = Vec::new();
    for node in [0, 1] {
        c.node_rank = node;
        let (result, _, _) = run(&c);
        let outcome = result.unwrap();
        assert_eq!(outcome.status, RunStatus::Ok);
        let m = &outcome.manifest;
        assert_eq!(
            (m.run_id.as_str(), m.node_rank, m.nnodes),
            ("job42", node, 2)
        );
        assert!(outcome
            .run_dir
            .to_string_lossy()
            .ends_with(&format!("-node{node}")));
        for local in 0..2 {
            let rank = node * 2 + local;
            let env = env_lines(&read(
                outcome.run_dir.join(format!("logs/rank-{rank}.stdout")),
            ));
            assert_eq!(env["RANK"], rank.to_string());
            assert_eq!(env["LOCAL_RANK"], local.to_string());
            assert_eq!(env["GROUP_RANK"], node.to_string());
            assert_eq!(env["WORLD_SIZE"], "4");
            assert_eq!(env["MASTER_ADDR"], "127.0.0.1");
            assert_eq!(env["MASTER_PORT"], port.to_string());
            assert_eq!(env["TORCHELASTIC_RUN_ID"], "job42");
            tokens.push(env["DDP_PROBE_STORE_TOKEN"].clone());
        }
        dirs.push(outcome.run_dir.clone());
    }
    assert!(tokens.windows(2).all(|w| w[0] == w[1]), "{tokens:?}");
    let written = std::fs::read_to_string(&token_file).unwrap();
    assert_eq!(written.trim(), tokens[0]);
    assert_eq!(tokens[0].len(), 32);
    assert_ne!(dirs[0], dirs[1]);
}

#[test]
fn explicit_run_dir_holding_a_run_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let prog = script(tmp.path(), "ok", "#!/bin/sh\nexit 0\n");
    let c = config(tmp.path(), &prog, 1);
    assert_eq!(run(&c).0.unwrap().status, RunStatus::Ok);
    let err = run(&c).0.unwrap_err();
    assert!(matches!(err, LaunchError::RunDirTaken { .. }), "{err}");
    assert!(err.to_string().contains("choose another --out"), "{err}");
}

#[test]
fn invalid_options_are_explained() {
    let tmp = tempfile::tempdir().unwrap();
    let base = config(tmp.path(), Path::new("sh"), 1);
    let cases: Vec<(LaunchConfig, &str)> = vec![
        (
            LaunchConfig {
                nproc_per_node: 0,
                ..base.clone()
            },
            "--nproc-per-node",
        ),
        (
            LaunchConfig {
                node_rank: 1,
                ..base.clone()
            },
            "--node-rank",
        ),
        (
            LaunchConfig {
                rdzv_endpoint: Some("::1".into()),
                ..base.clone()
            },
            "--rdzv-endpoint",
        ),
        (
            LaunchConfig {
                bucket_cap_mb: Some(-1.0),
                ..base.clone()
            },
            "--bucket-cap-mb",
        ),
        (
            LaunchConfig {
                hang_timeout: Some(Duration::ZERO),
                ..base.clone()
            },
            "--hang-timeout",
        ),
        (
            LaunchConfig {
                master_port: Some(0),
                ..base.clone()
            },
            "--master-port",
        ),
        (
            LaunchConfig {
                program: "".into(),
                ..base.clone()
            },
            "after --",
        ),
    ];
    for (c, needle) in cases {
        let err = run(&c).0.unwrap_err();
        assert!(err.to_string().contains(needle), "{needle}: {err}");
        assert_eq!(err.exit_code(), 2, "{err}");
    }
    assert!(!tmp.path().join("run").exists());
}

#[test]
fn missing_interpreter_is_a_launch_error_recorded_in_the_manifest() {
    let tmp = tempfile::tempdir().unwrap();
    let prog = script(tmp.path(), "orphan", "#!/nonexistent/python9\nprint('x')\n");
    let (result, _, took) = run(&config(tmp.path(), &prog, 2));
    let err = result.unwrap_err();
    assert!(matches!(err, LaunchError::Spawn { rank: 0, .. }), "{err}");
    assert!(err.to_string().contains("#! line"), "{err}");
    assert!(took < QUICK, "{took:?}");
    let dir = err.run_dir().unwrap().to_path_buf();
    let m = RunDir::open(Some(&dir)).unwrap().manifest;
    assert_eq!(m.status, RunStatus::LaunchError);
    assert_eq!(m.exit_code, Some(1));
    assert!(m.launch_error.unwrap().contains("cannot start rank 0"));
    assert!(m.ranks.iter().all(|r| r.pid.is_none() && r.end.is_none()));
}

/// A rank program for the restart tests: every rank prints its restart
/// variables and appends its restart count to its trace; rank 0 also appends
/// it to `checkpoints/attempts`, which is shared by the attempts. While
/// `TORCHELASTIC_RESTART_COUNT` is below `succeed_at`, rank 1 fails with
/// status 3 and rank 0 waits to be stopped.
fn restarting_script(dir: &Path, succeed_at: u32) -> PathBuf {
    script(
        dir,
        "flaky",
        &format!(
            r#"#!/bin/sh
echo "TORCHELASTIC_RESTART_COUNT=$TORCHELASTIC_RESTART_COUNT"
echo "TORCHELASTIC_MAX_RESTARTS=$TORCHELASTIC_MAX_RESTARTS"
printf '{{"restart_count":%s}}\n' "$TORCHELASTIC_RESTART_COUNT" >> "$DDP_PROBE_TRACE_DIR/rank-$RANK.jsonl"
if [ "$RANK" = 0 ]; then
  mkdir -p "$DDP_PROBE_RUN_DIR/checkpoints"
  echo "$TORCHELASTIC_RESTART_COUNT" >> "$DDP_PROBE_RUN_DIR/checkpoints/attempts"
fi
if [ "$TORCHELASTIC_RESTART_COUNT" -lt {succeed_at} ]; then
  if [ "$RANK" = 1 ]; then
    sleep 0.1
    echo "rank 1 fails in attempt $TORCHELASTIC_RESTART_COUNT" >&2
    exit 3
  fi
  exec sleep 30
fi
echo "rank $RANK done"
"#
        ),
    )
}

fn restarts_of(events: &[Event]) -> Vec<&Event> {
    events
        .iter()
        .filter(|e| matches!(e, Event::Restarting { .. }))
        .collect()
}

#[test]
fn failed_attempts_are_restarted_and_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let prog = restarting_script(tmp.path(), 2);
    let mut c = config(tmp.path(), &prog, 2);
    c.max_restarts = 2;
    let (outcome, events) = run_ok(&c);
    let dir = &outcome.run_dir;

    // Each failed attempt is a run directory of its own under attempts/.
    for n in 0..2u32 {
        let kept = dir.join(format!("attempts/{n}"));
        let m = RunDir::open(Some(&kept)).unwrap().manifest;
        assert_eq!(m.status, RunStatus::Failed);
        assert_eq!(m.exit_code, Some(3));
        assert_eq!((m.restarts, m.max_restarts), (n, 2));
        assert_eq!(m.attempts.len(), n as usize);
        let failure = m.first_failure.as_ref().unwrap();
        assert_eq!(failure.rank, 1);
        assert_eq!(failure.termination, Termination::Exited { code: 3 });
        for rank in 0..2 {
            let env = env_lines(&read(kept.join(format!("logs/rank-{rank}.stdout"))));
            assert_eq!(
                env["TORCHELASTIC_RESTART_COUNT"],
                n.to_string(),
                "rank {rank}"
            );
            assert_eq!(env["TORCHELASTIC_MAX_RESTARTS"], "2", "rank {rank}");
            assert_eq!(
                read(kept.join(format!("traces/rank-{rank}.jsonl"))),
                format!("{{\"restart_count\":{n}}}\n")
            );
            assert_eq!(
                m.rank(rank).unwrap().env["TORCHELASTIC_RESTART_COUNT"],
                n.to_string()
            );
        }
        assert_eq!(
            read(kept.join("logs/rank-1.stderr")),
            format!("rank 1 fails in attempt {n}\n")
        );
    }
    assert!(!dir.join("attempts/2").exists());

    // The top level holds the last attempt, the one that succeeded.
    for rank in 0..2 {
        let stdout = read(dir.join(format!("logs/rank-{rank}.stdout")));
        let env = env_lines(&stdout);
        assert_eq!(env["TORCHELASTIC_RESTART_COUNT"], "2");
        assert_eq!(env["TORCHELASTIC_MAX_RESTARTS"], "2");
        assert!(stdout.contains(&format!("rank {rank} done")), "{stdout}");
        assert_eq!(
            read(dir.join(format!("traces/rank-{rank}.jsonl"))),
            "{\"restart_count\":2}\n"
        );
    }
    assert_eq!(read(dir.join("logs/rank-1.stderr")), "");
    // What the ranks write elsewhere in the run directory is shared.
    assert_eq!(read(dir.join("checkpoints/attempts")), "0\n1\n2\n");

    let m = RunDir::open(Some(dir)).unwrap().manifest;
    assert_eq!(m, outcome.manifest);
    assert_eq!(m.status, RunStatus::Ok);
    assert_eq!((m.restarts, m.max_restarts), (2, 2));
    assert!(m.first_failure.is_none());
    assert_eq!(m.attempt_text().as_deref(), Some("attempt 3 of 3"));
    assert_eq!(m.attempts.len(), 2);
    for (n, a) in m.attempts.iter().enumerate() {
        assert_eq!(a.restart_count as usize, n);
        assert_eq!(a.dir, format!("attempts/{n}"));
        assert_eq!(a.status, RunStatus::Failed);
        assert_eq!(a.exit_code, Some(3));
        assert_eq!(a.first_failure.as_ref().unwrap().rank, 1);
        assert!(a.ended_at.is_some());
    }

    // One console line per restart, after the failing rank's last words.
    let restarts = restarts_of(&events);
    assert_eq!(restarts.len(), 2, "{events:?}");
    assert_eq!(
        restarts[0].message().unwrap(),
        "attempt 1 of 3 failed (rank 1 exited with code 3); restarting all 2 workers \
         (TORCHELASTIC_RESTART_COUNT=1)"
    );
    assert!(matches!(
        restarts[1],
        Event::Restarting { attempt: 2, attempts: 3, restart_count: 2, workers: 2, kept_in, .. }
            if kept_in == "attempts/1"
    ));
    let last_words = events
        .iter()
        .position(|e| matches!(e, Event::LastWords { rank: 1, .. }))
        .unwrap();
    let first_restart = events
        .iter()
        .position(|e| matches!(e, Event::Restarting { .. }))
        .unwrap();
    assert!(last_words < first_restart, "{events:?}");
    let started = |e: &Event| matches!(e, Event::RankStarted { .. });
    assert_eq!(events.iter().filter(|e| started(e)).count(), 6);
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, Event::RunStarted { .. }))
            .count(),
        1
    );
    let summary = outcome.render_summary();
    assert!(
        summary.contains("attempt 3 of 3 (the workers were restarted 2 times)"),
        "{summary}"
    );
    assert!(
        summary.contains("attempt 1 failed: rank 1 exited with code 3"),
        "{summary}"
    );
}

#[test]
fn restarts_run_out_and_the_last_failure_is_the_outcome() {
    let tmp = tempfile::tempdir().unwrap();
    let prog = restarting_script(tmp.path(), u32::MAX);
    let mut c = config(tmp.path(), &prog, 2);
    c.max_restarts = 1;
    let (result, events, took) = run(&c);
    let outcome = result.unwrap();
    assert!(took < QUICK, "{took:?}");
    assert_eq!(outcome.status, RunStatus::Failed);
    assert_eq!(outcome.exit_code, 3);
    assert_eq!(outcome.first_failure().unwrap().rank, 1);
    let dir = &outcome.run_dir;
    assert_eq!(read(dir.join("checkpoints/attempts")), "0\n1\n");
    assert!(dir.join("attempts/0/logs/rank-1.stderr").is_file());
    assert!(!dir.join("attempts/1").exists());
    assert_eq!(
        read(dir.join("logs/rank-1.stderr")),
        "rank 1 fails in attempt 1\n"
    );
    let m = RunDir::open(Some(dir)).unwrap().manifest;
    assert_eq!(m.status, RunStatus::Failed);
    assert_eq!(m.exit_code, Some(3));
    assert_eq!((m.restarts, m.max_restarts, m.attempts.len()), (1, 1, 1));
    assert_eq!(restarts_of(&events).len(), 1);
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, Event::FirstFailure(_)))
            .count(),
        2
    );
}

#[test]
fn without_max_restarts_a_failure_ends_the_run_as_before() {
    let tmp = tempfile::tempdir().unwrap();
    let prog = restarting_script(tmp.path(), 1);
    let c = config(tmp.path(), &prog, 2);
    assert_eq!(c.max_restarts, 0);
    let (result, events, _) = run(&c);
    let outcome = result.unwrap();
    assert_eq!(outcome.status, RunStatus::Failed);
    assert_eq!(outcome.exit_code, 3);
    let dir = &outcome.run_dir;
    assert!(!dir.join("attempts").exists());
    assert_eq!(read(dir.join("checkpoints/attempts")), "0\n");
    let env = env_lines(&read(dir.join("logs/rank-0.stdout")));
    assert_eq!(env["TORCHELASTIC_RESTART_COUNT"], "0");
    assert_eq!(env["TORCHELASTIC_MAX_RESTARTS"], "0");
    assert!(restarts_of(&events).is_empty());
    // The manifest is written exactly as before restarts existed.
    let text = read(dir.join("manifest.json"));
    for key in ["\"max_restarts\"", "\"restarts\"", "\"attempts\""] {
        assert!(!text.contains(key), "{key} in {text}");
    }
    assert!(outcome.manifest.attempt_text().is_none());
    assert!(!outcome.render_summary().contains("attempt"));
}

#[test]
fn a_hang_is_not_restarted() {
    let tmp = tempfile::tempdir().unwrap();
    let prog = script(
        tmp.path(),
        "stuck",
        "#!/bin/sh\necho \"$TORCHELASTIC_RESTART_COUNT\" >> \"$DDP_PROBE_RUN_DIR/starts-$RANK\"\nexec sleep 30\n",
    );
    let mut c = config(tmp.path(), &prog, 2);
    c.max_restarts = 2;
    c.hang_timeout = Some(Duration::from_millis(600));
    let (result, events, took) = run(&c);
    let outcome = result.unwrap();
    assert!(took < QUICK, "{took:?}");
    assert_eq!(outcome.status, RunStatus::Hang);
    assert_eq!(outcome.exit_code, 124);
    assert!(restarts_of(&events).is_empty());
    assert!(!outcome.run_dir.join("attempts").exists());
    assert_eq!(read(outcome.run_dir.join("starts-0")), "0\n");
    assert_eq!(
        outcome.manifest.attempt_text().as_deref(),
        Some("attempt 1 of 3")
    );
}

#[test]
fn ctrl_c_is_not_restarted() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut child, out) = start_harness(
        tmp.path(),
        2,
        &["--max-restarts", "3"],
        "echo ready\nexec sleep 30",
    );
    // SAFETY: plain kill(2) of the harness process this test started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let status = wait_child(&mut child, QUICK);
    assert_eq!(status.code(), Some(130));
    let err = stderr_of(&mut child);
    assert!(!err.contains("restarting"), "{err}");
    assert!(!out.join("attempts").exists());
    let m = RunDir::open(Some(&out)).unwrap().manifest;
    assert_eq!(m.status, RunStatus::Interrupted);
    assert_eq!((m.restarts, m.max_restarts), (0, 3));
}

#[test]
fn shared_memory_a_killed_rank_left_is_removed_and_other_runs_files_are_not() {
    let shm = Path::new(probe_contract::shm_names::SHM_DIR);
    if !shm.is_dir() {
        eprintln!("skipping: {} does not exist here", shm.display());
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // A rank that creates a 2 MiB ring and its doorbell the way comm names them, and is killed
    // before it could unlink them (as a SIGKILL in the setup window does).
    let prog = script(
        tmp.path(),
        "dies_in_setup",
        "#!/bin/sh\n\
         p=\"/dev/shm/ddp-comm-${DDP_PROBE_RUN_ID}-n${GROUP_RANK}-$$-00000000000000aa\"\n\
         head -c 2097152 /dev/zero > \"$p-1to${RANK}\"\n\
         : > \"$p-bell${RANK}\"\n\
         kill -9 $$\n",
    );
    let other = shm.join(format!(
        "ddp-comm-another-run-{}-n0-1-bell0",
        std::process::id()
    ));
    fs::write(&other, b"x").unwrap();
    let mut c = config(tmp.path(), &prog, 2);
    c.rdzv_id = Some(format!("shm-leftovers-{}", std::process::id()));
    let (result, events, _) = run(&c);
    let outcome = result.unwrap();
    assert_eq!(outcome.status, RunStatus::Failed);
    let prefix = probe_contract::shm_names::run_prefix(c.rdzv_id.as_deref().unwrap(), 0);
    let left: Vec<String> = fs::read_dir(shm)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&prefix))
        .collect();
    let other_kept = other.exists();
    let _ = fs::remove_file(&other);
    assert!(left.is_empty(), "left in /dev/shm: {left:?}");
    assert!(other_kept, "another run's file was removed");
    let notice = events.iter().any(|e| {
        matches!(e, Event::Notice { message } if message.contains("shared-memory file") && message.contains("/dev/shm"))
    });
    assert!(notice, "the launcher says what it removed: {events:?}");
}

/// Whether process `pid` is gone (or a zombie).
fn gone(pid: i32) -> bool {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.is_empty() || stat.split(") ").nth(1).is_some_and(|s| s.starts_with('Z'))
}

#[test]
fn a_sigkilled_launcher_takes_the_children_of_non_exec_wrappers_with_it() {
    let tmp = tempfile::tempdir().unwrap();
    // A wrapper that does not exec: its child (the "training process") is the rank's
    // grandchild to the launcher and got no death signal of its own.
    let (mut child, out) = start_harness(
        tmp.path(),
        2,
        &[],
        "sleep 60 &\necho $! > \"$DDP_PROBE_RUN_DIR/grandchild-$RANK\"\necho ready\nwait",
    );
    let grandchildren: Vec<i32> = (0..2)
        .map(|r| {
            read(out.join(format!("grandchild-{r}")))
                .trim()
                .parse()
                .unwrap()
        })
        .collect();
    assert!(grandchildren.iter().all(|&p| !gone(p)));
    // SAFETY: plain kill(2) of the harness process this test started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGKILL) }, 0);
    let _ = child.wait();
    wait_for(
        "the wrappers' children to die with the launcher",
        QUICK,
        || grandchildren.iter().all(|&p| gone(p)),
    );
}
