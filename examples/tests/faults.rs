//! Injected faults, end to end: the `train` example on 2 CPU ranks under `ddp-probe run`, one
//! fault injected through `DDP_PROBE_FAULT` (see `ddp::fault`), then what a user gets:
//! `ddp-probe run`'s exit status, `ddp-probe explain`'s first finding (category and ranks), the
//! traces as probe's reader loads them, the checkpoints left, and a resumed run's final
//! parameters compared bit for bit with an uninterrupted run's.
//!
//! Every job is bounded in wall time (an upper bound only, to keep CI from hanging).

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use common::{checkpoint_bits, explain, job_lock, run_train, Finding};
use ddp::checkpoint::{Checkpoint, CheckpointManager};
use probe::trace::SpanKind;
use tch::Kind;

/// Epochs of every job; `train` does 28 steps per epoch with 2 ranks and batch 8.
const EPOCHS: &str = "3";
const STEPS_PER_EPOCH: u64 = 28;
/// The step of the final checkpoint (written after the last epoch).
const FINAL_STEP: u64 = 3 * STEPS_PER_EPOCH;
/// Bound on each job's wall time.
const JOB_LIMIT: Duration = Duration::from_secs(180);
/// The group timeout the ranks run with: failures end in seconds, not the default 5 minutes.
const COMM_TIMEOUT: (&str, &str) = ("DDP_PROBE_TIMEOUT", "30");

type Bits = Vec<(String, Kind, Vec<i64>, Vec<u8>)>;

fn train_args(ckpt_dir: &Path, resume: bool) -> Vec<String> {
    let mut args = vec![
        "--epochs".to_owned(),
        EPOCHS.to_owned(),
        "--checkpoint-every".to_owned(),
        "1".to_owned(),
        "--checkpoint-dir".to_owned(),
        ckpt_dir.display().to_string(),
    ];
    if resume {
        args.push("--resume".to_owned());
    }
    args
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// The final checkpoint of an uninterrupted run, as raw bits (computed once per test binary).
fn uninterrupted() -> &'static Bits {
    static BITS: OnceLock<Bits> = OnceLock::new();
    BITS.get_or_init(|| {
        let _lock = job_lock();
        let dir = tempfile::tempdir().unwrap();
        let ckpt = dir.path().join("ckpt");
        let done = run_train(
            dir.path(),
            "reference",
            &[COMM_TIMEOUT],
            &[],
            &strs(&train_args(&ckpt, false)),
            JOB_LIMIT,
        );
        assert!(
            done.status.success(),
            "reference run failed:\n{}",
            done.output
        );
        checkpoint_bits(&ckpt.join(format!("ckpt-{FINAL_STEP}.safetensors")))
    })
}

/// The first finding of `explain` over `run`, with every finding for the failure message.
fn first_finding(cwd: &Path, run: &Path) -> (Finding, Vec<Finding>) {
    let findings = explain(cwd, &[run]);
    let first = findings
        .first()
        .cloned()
        .unwrap_or_else(|| panic!("explain found nothing in {}", run.display()));
    (first, findings)
}

/// The manifest's first failure: (rank, how it ended).
fn first_failure(run: &Path) -> (u64, String) {
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("manifest.json")).unwrap()).unwrap();
    let f = &manifest["first_failure"];
    (
        f["rank"]
            .as_u64()
            .expect("the manifest names the first failure"),
        f.to_string(),
    )
}

/// What `explain` must say about rank `rank`'s SIGKILL, given the evidence the launcher recorded
/// at its death: `rank_crashed` "from outside" when the deciding OOM-kill counters (the rank's
/// own cgroup's, else any) were readable and none rose; `host_oom_killed` otherwise. Where the
/// host counts OOM kills (`/proc/vmstat`, Linux 4.13 and later) a counter must have been read.
fn expected_kill_verdict(run: &Path, rank: u64) -> (&'static str, &'static str) {
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("manifest.json")).unwrap()).unwrap();
    let ev = &manifest["ranks"][rank as usize]["end"]["kill_evidence"];
    let counters = ev["oom_kill_counters"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let readable = |c: &&serde_json::Value| c["at_death"].is_u64();
    let own = counters
        .iter()
        .filter(readable)
        .filter(|c| c["scope"] == "cgroup")
        .collect::<Vec<_>>();
    let decisive = if own.is_empty() {
        counters.iter().filter(readable).collect()
    } else {
        own
    };
    let host_counts = std::fs::read_to_string("/proc/vmstat")
        .is_ok_and(|t| t.lines().any(|l| l.starts_with("oom_kill ")));
    assert!(
        !decisive.is_empty() || !host_counts,
        "the launcher recorded no readable OOM-kill counter: {ev}"
    );
    if decisive.is_empty() {
        eprintln!("no OOM-kill counter was readable here: expecting the unconfirmed verdict");
        ("host_oom_killed", "could not be confirmed")
    } else if decisive
        .iter()
        .any(|c| c["at_death"].as_u64() > c["at_start"].as_u64())
    {
        eprintln!("an OOM kill happened on this host during the run: {ev}");
        ("host_oom_killed", "oom_kill rose")
    } else {
        (
            "rank_crashed",
            "from outside the process (kill -9, a scheduler",
        )
    }
}

/// Loads the run's traces with probe's reader: every rank's trace must load (a cut last line
/// is allowed and reported as a warning). Returns, per rank, the highest step of any span and
/// whether the trace has its `end` record.
fn traces(run: &Path) -> Vec<(u32, Option<u64>, bool, probe::model::RankTrace)> {
    let (loaded, _warnings) =
        probe::reader::load_run(&[run]).expect("the traces of the run load up to the fault");
    assert_eq!(loaded.world_size, 2);
    assert!(loaded.missing_ranks().is_empty(), "a rank has no trace");
    loaded
        .ranks
        .into_iter()
        .map(|t| {
            let max_step = t.spans().filter_map(|s| s.step()).max();
            (t.rank(), max_step, t.end.is_some(), t)
        })
        .collect()
}

/// A rank killed at `step` of `point`: its trace loads, ends without an `end` record, holds the
/// complete previous step (its optimizer span) and nothing after `step`.
fn assert_trace_stops_at(run: &Path, rank: u32, step: u64) {
    let all = traces(run);
    let (_, max_step, ended, trace) = all
        .iter()
        .find(|(r, ..)| *r == rank)
        .expect("the killed rank has a trace");
    assert!(!ended, "a killed rank cannot have written its end record");
    assert_eq!(
        *max_step,
        Some(step),
        "rank {rank}'s trace runs up to the fault's step"
    );
    assert!(
        trace
            .spans_of_kind(SpanKind::Optimizer)
            .any(|s| s.step() == Some(step - 1)),
        "rank {rank}'s trace holds the step before the fault complete"
    );
}

/// Resumes from `ckpt_dir` (no fault) and compares the final checkpoint bit for bit with the
/// uninterrupted run's.
fn assert_resume_matches(cwd: &Path, ckpt_dir: &Path) {
    uninterrupted();
    let _lock = job_lock();
    let done = run_train(
        cwd,
        "resumed",
        &[COMM_TIMEOUT],
        &[],
        &strs(&train_args(ckpt_dir, true)),
        JOB_LIMIT,
    );
    assert!(
        done.status.success(),
        "the resumed run failed:\n{}",
        done.output
    );
    assert!(
        done.output.contains("resumed from the checkpoint"),
        "the run did not resume:\n{}",
        done.output
    );
    assert_final_checkpoint_matches(ckpt_dir, "after resuming");
}

/// The final checkpoint in `ckpt_dir` equals the uninterrupted run's bit for bit.
fn assert_final_checkpoint_matches(ckpt_dir: &Path, what: &str) {
    let reference = uninterrupted();
    let done = checkpoint_bits(&ckpt_dir.join(format!("ckpt-{FINAL_STEP}.safetensors")));
    assert_eq!(done.len(), reference.len(), "same entries");
    for (a, b) in done.iter().zip(reference) {
        assert_eq!(
            (&a.0, a.1, &a.2),
            (&b.0, b.1, &b.2),
            "same entry, kind and shape"
        );
        assert!(
            a.3 == b.3,
            "{} differs from the uninterrupted run's {what}",
            a.0
        );
    }
}

/// The newest complete checkpoint in `dir`: its step, after loading it.
fn latest_checkpoint_step(dir: &Path) -> u64 {
    let latest = CheckpointManager::new(dir, 3)
        .unwrap()
        .latest()
        .unwrap()
        .expect("a complete checkpoint is left");
    Checkpoint::load(&latest)
        .expect("the last checkpoint loads")
        .step
}

/// Runs a job in which `fault` kills `rank`; checks the exit status, the manifest's first
/// failure and the diagnosis. Returns the temporary folder and the checkpoint folder.
fn kill_and_resume(fault: &str, rank: u64) -> (tempfile::TempDir, PathBuf) {
    // The reference first, so the two jobs do not run at once.
    uninterrupted();
    let dir = tempfile::tempdir().unwrap();
    let ckpt = dir.path().join("ckpt");
    let run = dir.path().join("killed");
    {
        let _lock = job_lock();
        let done = run_train(
            dir.path(),
            "killed",
            &[COMM_TIMEOUT, ("DDP_PROBE_FAULT", fault)],
            &[],
            &strs(&train_args(&ckpt, false)),
            JOB_LIMIT,
        );
        assert_eq!(
            done.status.code(),
            Some(128 + 9),
            "ddp-probe run exits with the killed rank's status:\n{}",
            done.output
        );
    }
    let (failed, how) = first_failure(&run);
    assert_eq!(failed, rank, "the killed rank fails first: {how}");
    assert!(how.contains("SIGKILL"), "{how}");
    let (first, all) = first_finding(dir.path(), &run);
    // The fault hook's kill -9 leaves the OOM-kill counters the launcher reads at the rank's
    // start and death unchanged: the diagnosis says the SIGKILL came from outside.
    let (expected, says) = expected_kill_verdict(&run, rank);
    assert_eq!(
        (first.category.as_str(), first.ranks.clone()),
        (expected, vec![rank]),
        "the SIGKILL names the killed rank: {all:?}"
    );
    assert!(first.json.contains(says), "{}", first.json);
    (dir, ckpt)
}

#[test]
fn kill_in_forward_names_the_rank_and_resume_is_bit_exact() {
    let step = STEPS_PER_EPOCH + 12;
    let (dir, ckpt) = kill_and_resume(&format!("rank=1,at=forward,step={step},action=kill"), 1);
    let run = dir.path().join("killed");
    assert_trace_stops_at(&run, 1, step);
    // The forward span of the fault's step was never finished.
    let all = traces(&run);
    let killed = &all.iter().find(|t| t.0 == 1).unwrap().3;
    assert!(!killed
        .spans_of_kind(SpanKind::Forward)
        .any(|s| s.step() == Some(step)));
    assert_eq!(latest_checkpoint_step(&ckpt), STEPS_PER_EPOCH);
    assert_resume_matches(dir.path(), &ckpt);
}

#[test]
fn kill_in_allreduce_wait_names_the_rank_and_resume_is_bit_exact() {
    let step = STEPS_PER_EPOCH + 17;
    let (dir, ckpt) = kill_and_resume(&format!("rank=1,at=allreduce,step={step},action=kill"), 1);
    let run = dir.path().join("killed");
    assert_trace_stops_at(&run, 1, step);
    // The rank got through forward and into the all-reduce of that step: its forward span and
    // the queued all-reduce are there, the optimizer span of the step is not.
    let all = traces(&run);
    let killed = &all.iter().find(|t| t.0 == 1).unwrap().3;
    assert!(killed
        .spans_of_kind(SpanKind::Forward)
        .any(|s| s.step() == Some(step)));
    assert!(!killed
        .spans_of_kind(SpanKind::Optimizer)
        .any(|s| s.step() == Some(step)));
    assert_eq!(latest_checkpoint_step(&ckpt), STEPS_PER_EPOCH);
    assert_resume_matches(dir.path(), &ckpt);
}

#[test]
fn kill_between_checkpoint_write_and_rename_keeps_the_previous_checkpoint() {
    // Rank 0 writes checkpoints; the one of step 56 (after epoch 2) is killed before its rename.
    let step = 2 * STEPS_PER_EPOCH;
    let (dir, ckpt) = kill_and_resume(&format!("rank=0,at=checkpoint,step={step},action=kill"), 0);
    // The temporary file was written completely (it loads as the checkpoint of that step) but
    // never renamed: the kill fell exactly between the two.
    let temps: Vec<PathBuf> = std::fs::read_dir(&ckpt)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&format!(".ckpt-{step}.safetensors.tmp-")))
        })
        .collect();
    assert_eq!(temps.len(), 1, "one temporary file is left: {temps:?}");
    assert_eq!(Checkpoint::load(&temps[0]).unwrap().step, step);
    assert!(!ckpt.join(format!("ckpt-{step}.safetensors")).exists());
    assert_eq!(latest_checkpoint_step(&ckpt), STEPS_PER_EPOCH);
    let run = dir.path().join("killed");
    let all = traces(&run);
    assert!(
        !all.iter().find(|t| t.0 == 0).unwrap().2,
        "rank 0 has no end record"
    );
    assert_resume_matches(dir.path(), &ckpt);
    assert!(
        !temps[0].exists(),
        "the next checkpoint write removes the dead writer's temporary file"
    );
}

#[test]
fn a_rank_that_stops_making_progress_is_stopped_and_named() {
    let _lock = job_lock();
    let dir = tempfile::tempdir().unwrap();
    let ckpt = dir.path().join("ckpt");
    let done = run_train(
        dir.path(),
        "hung",
        &[
            COMM_TIMEOUT,
            ("DDP_PROBE_FAULT", "rank=1,at=forward,step=10,action=hang"),
        ],
        &["--hang-timeout", "3"],
        &strs(&train_args(&ckpt, false)),
        JOB_LIMIT,
    );
    assert_eq!(done.status.code(), Some(124), "{}", done.output);
    let run = dir.path().join("hung");
    let (first, all) = first_finding(dir.path(), &run);
    assert_eq!(
        (first.category.as_str(), first.ranks.clone()),
        ("collective_timeout", vec![1]),
        "the rank behind is named: {all:?}"
    );
    // Both traces load; the hung rank got no further than the fault's step.
    let all = traces(&run);
    let hung = all.iter().find(|t| t.0 == 1).unwrap();
    assert!(hung.1.is_some_and(|s| s <= 10), "{:?}", hung.1);
    assert_open_collective_is_drawn(dir.path(), &run, &first.json);
}

/// The collective rank 0 waits in, as `explain` names it (`finding`), is drawn open in the
/// Chrome export: an unfinished all-reduce of rank 0 with that seq, from when it was queued to
/// when the launcher stopped the rank (the manifest's `at_unix_ns`); the report draws the end
/// of the run.
fn assert_open_collective_is_drawn(cwd: &Path, run: &Path, finding: &str) {
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("manifest.json")).unwrap()).unwrap();
    let stopped = manifest["ranks"][0]["end"]["at_unix_ns"]
        .as_i64()
        .expect("the manifest says when rank 0 was stopped");
    let chrome = common::chrome_export(run, &[]);
    let origin = chrome["metadata"]["time_origin_ns"].as_i64().unwrap();
    let open: Vec<&serde_json::Value> = chrome["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "unfinished" && e["pid"] == 0 && e["args"]["kind"] == "collective")
        .collect();
    assert_eq!(open.len(), 1, "{open:?}");
    let seq = open[0]["args"]["seq"].as_u64().unwrap();
    assert!(
        finding.contains(&format!("seq {seq}")),
        "explain names the same collective: {finding}"
    );
    assert!(finding.contains("drawn as unfinished"), "{finding}");
    let end_ns =
        origin as f64 + (open[0]["ts"].as_f64().unwrap() + open[0]["dur"].as_f64().unwrap()) * 1e3;
    assert!(
        (end_ns - stopped as f64).abs() < 1e6,
        "drawn to the rank's end: {end_ns} vs {stopped}"
    );
    let report = cwd.join("hung.html");
    common::ddp_probe_ok(
        cwd,
        &[
            "report".as_ref(),
            "-o".as_ref(),
            report.as_os_str(),
            run.as_os_str(),
        ],
    );
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.contains("Where the run stopped"));
    assert!(html.contains(&format!("all_reduce seq {seq}")));
}

#[test]
fn an_extra_collective_on_one_rank_is_a_collective_mismatch() {
    let _lock = job_lock();
    let dir = tempfile::tempdir().unwrap();
    let ckpt = dir.path().join("ckpt");
    let done = run_train(
        dir.path(),
        "extra",
        &[
            COMM_TIMEOUT,
            (
                "DDP_PROBE_FAULT",
                "rank=1,at=forward,step=10,action=extra_allreduce",
            ),
        ],
        &[],
        &strs(&train_args(&ckpt, false)),
        JOB_LIMIT,
    );
    assert_eq!(done.status.code(), Some(1), "{}", done.output);
    let run = dir.path().join("extra");
    let (first, all) = first_finding(dir.path(), &run);
    assert_eq!(first.category, "collective_mismatch", "{all:?}");
    // Two ranks that disagree are a pair: both are named, the one that issued the extra call
    // among them.
    assert!(first.ranks.contains(&1), "{all:?}");
    traces(&run);
}

#[test]
fn a_rank_with_another_world_size_is_a_world_size_mismatch() {
    let _lock = job_lock();
    let dir = tempfile::tempdir().unwrap();
    let ckpt = dir.path().join("ckpt");
    let done = run_train(
        dir.path(),
        "world",
        &[
            COMM_TIMEOUT,
            ("DDP_PROBE_FAULT", "rank=1,action=world_size,world_size=3"),
        ],
        &[],
        &strs(&train_args(&ckpt, false)),
        JOB_LIMIT,
    );
    assert_eq!(done.status.code(), Some(1), "{}", done.output);
    let run = dir.path().join("world");
    let (first, all) = first_finding(dir.path(), &run);
    assert_eq!(
        (first.category.as_str(), first.ranks.clone()),
        ("world_size_mismatch", vec![1]),
        "{all:?}"
    );
}

/// Connections a flooder without the token holds open against the store at `addr` until `stop`
/// is set: every one it loses is opened again; every fifth sends 64 random bytes, every seventh
/// half a hello. Returns how many connections it opened in all.
fn flood_store(addr: std::net::SocketAddr, held: usize, stop: &AtomicBool) -> usize {
    use std::io::{Read, Write};
    let mut conns: Vec<std::net::TcpStream> = Vec::with_capacity(held);
    let mut opened = 0usize;
    while !stop.load(Ordering::Relaxed) {
        // Drop the connections the server closed.
        conns.retain_mut(|c| {
            let mut b = [0u8; 256];
            match c.read(&mut b) {
                Ok(0) => false,
                Ok(_) => true,
                Err(e) => e.kind() == std::io::ErrorKind::WouldBlock,
            }
        });
        while conns.len() < held && !stop.load(Ordering::Relaxed) {
            let Ok(mut c) = std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200))
            else {
                std::thread::sleep(Duration::from_millis(20));
                break;
            };
            opened += 1;
            if opened.is_multiple_of(5) {
                let garbage: Vec<u8> = (0..64).map(|_| fastrand::u8(..)).collect();
                let _ = c.write_all(&garbage);
            } else if opened.is_multiple_of(7) {
                let _ = c.write_all(&[40, 0, 0, 0, 0x01, 0x01]);
            }
            let _ = c.set_nonblocking(true);
            conns.push(c);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    opened
}

/// Epochs of the flooded job and its undisturbed twin: long enough (7-12 s here) for the flood
/// to reach its size while the job trains and writes a checkpoint every epoch. With the store
/// as it was (10 s to present the token, up to 1,024 connections of two descriptors each)
/// the flooded job failed here: rank 0 could not write its checkpoint (too many open files).
const FLOOD_EPOCHS: &str = "150";

/// Runs `train` for [`FLOOD_EPOCHS`] under `ddp-probe run` with the store on `port`, inside
/// `ulimit -n 1024` (soft and hard limit: the launcher cannot raise it and the ranks inherit it);
/// returns the outcome and the bits of the final checkpoint.
fn run_limited(cwd: &Path, name: &str, port: u16) -> (common::Finished, Option<Bits>) {
    let ckpt = cwd.join(format!("{name}-ckpt"));
    let ckpt_arg = ckpt.display().to_string();
    let port_arg = port.to_string();
    let inner = common::train_command(
        cwd,
        name,
        &[COMM_TIMEOUT],
        &["--master-port", &port_arg],
        &[
            "--epochs",
            FLOOD_EPOCHS,
            "--checkpoint-every",
            "1",
            "--checkpoint-dir",
            &ckpt_arg,
        ],
    );
    let cmd = common::under_open_file_limit(&inner, 1024);
    let done = common::run_bounded(cmd, &cwd.join(format!("{name}.log")), JOB_LIMIT);
    let last = CheckpointManager::new(&ckpt, 3)
        .ok()
        .and_then(|m| m.latest().ok().flatten());
    (done, last.map(|p| checkpoint_bits(&p)))
}

/// A free TCP port on the loopback address.
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[test]
fn a_flood_on_the_store_under_ulimit_1024_leaves_training_bit_exact() {
    // The flooder's own connections need descriptors beyond the usual 1,024.
    let fds = probe_contract::rlimit::raise_open_file_limit();
    if fds < 1_700 {
        eprintln!("skipping: this process may open only {fds} files, the flood needs 1,700");
        return;
    }
    let _lock = job_lock();
    let dir = tempfile::tempdir().unwrap();
    let (calm, reference) = run_limited(dir.path(), "calm", free_port());
    assert!(
        calm.status.success(),
        "the undisturbed run failed:\n{}",
        calm.output
    );
    let reference = reference.expect("the undisturbed run wrote checkpoints");

    let port = free_port();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let stop = AtomicBool::new(false);
    let start = std::time::Instant::now();
    let ((done, flooded), opened) = std::thread::scope(|scope| {
        let flooder = scope.spawn(|| flood_store(addr, 1_500, &stop));
        let result = run_limited(dir.path(), "flooded", port);
        stop.store(true, Ordering::Relaxed);
        (result, flooder.join().unwrap())
    });
    eprintln!(
        "the flooder opened {opened} connections during the {:.1} s run",
        start.elapsed().as_secs_f64()
    );
    assert!(
        done.status.success(),
        "the flooded run failed:\n{}",
        done.output
    );
    assert!(
        opened >= 1_500,
        "the flood reached the store with only {opened} connections"
    );
    let flooded = flooded.expect("the flooded run wrote checkpoints");
    assert_eq!(flooded.len(), reference.len(), "same entries");
    for (a, b) in flooded.iter().zip(&reference) {
        assert!(
            a.0 == b.0 && a.3 == b.3,
            "{} differs from the undisturbed run's under the flood",
            a.0
        );
    }
}
