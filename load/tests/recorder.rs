//! The recorder: records from several threads all land, a disabled recorder
//! writes nothing, flushing and ending work, and a process killed while
//! recording leaves a readable file.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::header;
use probe_load::clock::now_ns;
use probe_load::reader::load_run;
use probe_load::recorder::{Recorder, RecorderOptions, ENV_TRACE_DIR};
use probe_load::trace::{LogLevel, SpanKind};
use probe_load::Warning;

fn lines_in(path: &Path) -> usize {
    std::fs::read(path)
        .map(|b| b.iter().filter(|&&c| c == b'\n').count())
        .unwrap_or(0)
}

#[test]
fn spans_from_several_threads_all_land() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Recorder::create_in_dir(&dir.path().join("traces"), header("mt", 0, 1, 0)).unwrap();
    assert_eq!(
        rec.path().unwrap(),
        dir.path().join("traces/rank-0.jsonl").as_path()
    );
    const THREADS: u64 = 4;
    const PER_THREAD: u64 = 5_000;
    std::thread::scope(|s| {
        for i in 0..THREADS {
            let rec = rec.clone();
            s.spawn(move || {
                let name: &'static str = ["t0", "t1", "t2", "t3"][i as usize];
                for n in 0..PER_THREAD {
                    let t = now_ns();
                    rec.span(SpanKind::User, n, t, t + 10)
                        .name(name)
                        .seq(i * PER_THREAD + n)
                        .finish();
                }
                rec.counter("progress", i as f64);
            });
        }
    });
    rec.instant("done", None);
    rec.log(LogLevel::Info, format!("{} threads", THREADS));
    rec.finish("ok", None).unwrap();
    let stats = rec.stats();
    assert_eq!(stats.recorded, stats.written);
    assert_eq!(stats.rejected + stats.lost, 0);
    drop(rec);

    let (run, warnings) = load_run(&[dir.path()]).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let rank = &run.ranks[0];
    assert_eq!(rank.span_count() as u64, THREADS * PER_THREAD);
    let mut seqs: Vec<u64> = rank.spans().filter_map(|s| s.seq()).collect();
    seqs.sort_unstable();
    seqs.dedup();
    assert_eq!(seqs.len() as u64, THREADS * PER_THREAD, "every span once");
    for name in ["t0", "t1", "t2", "t3"] {
        let sym = run.strings.lookup(name).unwrap();
        let n = rank.spans().filter(|s| s.name() == Some(sym)).count() as u64;
        assert_eq!(n, PER_THREAD, "{name}");
    }
    assert_eq!(rank.counters.len(), THREADS as usize);
    assert_eq!(rank.instants.len(), 1);
    assert_eq!(rank.logs.len(), 1);
    assert_eq!(rank.end.as_ref().unwrap().status, "ok");
}

#[test]
fn disabled_recorder_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let traces = dir.path().join("traces");
    // The variable unset, or empty: disabled.
    for value in [None, Some("")] {
        let rec = Recorder::from_env_with(header("off", 0, 1, 0), |k| {
            (k == ENV_TRACE_DIR)
                .then(|| value.map(Into::into))
                .flatten()
        })
        .unwrap();
        assert!(!rec.is_enabled());
        assert!(rec.path().is_none());
        rec.span(SpanKind::Forward, 0, 1, 2).bytes(3).finish();
        let guard = rec.start(SpanKind::Backward, 0);
        drop(guard);
        rec.instant("x", Some(0));
        rec.counter("c", 1.0);
        rec.log(LogLevel::Error, "nothing");
        rec.grad_ready(0, 1, vec![1, 2]);
        rec.finish("ok", None).unwrap();
        assert_eq!(rec.stats().recorded, 0);
    }
    assert!(!traces.exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn trace_off_disables_recording_even_with_a_trace_directory() {
    let dir = tempfile::tempdir().unwrap();
    let traces = dir.path().join("traces");
    for off in ["0", "off", "FALSE"] {
        let rec = Recorder::from_env_with(header("off", 0, 1, 0), |k| match k {
            ENV_TRACE_DIR => Some(traces.clone().into_os_string()),
            probe_load::recorder::ENV_TRACE => Some(off.into()),
            _ => None,
        })
        .unwrap();
        assert!(!rec.is_enabled(), "DDP_PROBE_TRACE={off}");
    }
    assert!(!traces.exists());
}

#[test]
fn from_env_writes_rank_file_in_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let traces = dir.path().join("traces");
    let rec = Recorder::from_env_with(header("env", 1, 2, 0), |k| {
        (k == ENV_TRACE_DIR).then(|| traces.clone().into_os_string())
    })
    .unwrap();
    assert!(rec.is_enabled());
    rec.span(SpanKind::Step, 0, 10, 20).finish();
    drop(rec);
    let path = traces.join("rank-1.jsonl");
    assert_eq!(lines_in(&path), 3, "header, span, end");
    let (run, _) = load_run(&[dir.path()]).unwrap();
    assert_eq!(run.ranks[0].rank(), 1);
    // Dropped without finish: an end record says so.
    assert_eq!(run.ranks[0].end.as_ref().unwrap().status, "dropped");
}

#[test]
fn flush_and_periodic_writes_reach_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rank-0.jsonl");
    let rec = Recorder::create_with(
        &path,
        header("fl", 0, 1, 0),
        RecorderOptions {
            flush_interval: Duration::from_millis(10),
            ..RecorderOptions::default()
        },
    )
    .unwrap();
    // The header is written at once.
    assert_eq!(lines_in(&path), 1);
    rec.span(SpanKind::Forward, 0, 1, 2).finish();
    rec.flush().unwrap();
    assert_eq!(lines_in(&path), 2);
    // Without flush, within a few intervals.
    rec.span(SpanKind::Backward, 0, 2, 3).finish();
    let deadline = Instant::now() + Duration::from_secs(5);
    while lines_in(&path) < 3 {
        assert!(
            Instant::now() < deadline,
            "the periodic flush did not happen"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    rec.finish("ok", None).unwrap();
    drop(rec);
    assert_eq!(lines_in(&path), 4, "finish wrote the only end record");
}

#[test]
fn invalid_spans_are_refused_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Recorder::create_in_dir(dir.path(), header("bad", 0, 1, 0)).unwrap();
    rec.span(SpanKind::Forward, 0, 10, 5).finish();
    rec.span(SpanKind::Forward, 0, 10, 15).finish();
    let err = rec.flush().unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(err.to_string().contains("before it starts"), "{err}");
    assert_eq!(rec.stats().rejected, 1);
    // Reported once.
    rec.flush().unwrap();
    drop(rec);
    let (run, _) = load_run(&[dir.path()]).unwrap();
    assert_eq!(run.span_count(), 1);
}

#[test]
fn span_guard_measures_until_drop() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Recorder::create_in_dir(dir.path(), header("g", 0, 1, 0)).unwrap();
    {
        let mut g = rec.start(SpanKind::Optimizer, 4);
        g.record_mut().unwrap().name = Some("adam".into());
        std::thread::sleep(Duration::from_millis(2));
    }
    rec.start(SpanKind::CheckpointSave, 4).finish();
    drop(rec);
    let (run, _) = load_run(&[dir.path()]).unwrap();
    let rank = &run.ranks[0];
    let opt = rank.spans_of_kind(SpanKind::Optimizer).next().unwrap();
    assert!(opt.duration() >= 2_000_000, "{}", opt.duration());
    assert_eq!(run.str(opt.name().unwrap()), "adam");
    assert_eq!(opt.step(), Some(4));
    let ckpt = rank.spans_of_kind(SpanKind::CheckpointSave).next().unwrap();
    assert!(ckpt.end() >= ckpt.start());
}

const CHILD_ENV: &str = "PROBE_TEST_KILLED_CHILD_DIR";
const CHILD_TEST: &str = "child_records_until_killed";

/// Runs only as the child of `killed_process_leaves_a_readable_file`:
/// records spans forever, until the parent kills it.
#[test]
fn child_records_until_killed() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let rec = Recorder::create_with(
        &Path::new(&dir).join("rank-0.jsonl"),
        header("killed", 0, 1, 0),
        RecorderOptions {
            flush_interval: Duration::from_millis(2),
            buffer_bytes: 8 * 1024,
        },
    )
    .unwrap();
    for step in 0.. {
        for bucket in 0..64 {
            let t = now_ns();
            rec.span(SpanKind::Collective, step, t, t + 100)
                .op("all_reduce")
                .bucket(bucket)
                .name("all-reduce ✓ ünïcødé 日本語")
                .finish();
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

#[test]
fn killed_process_leaves_a_readable_file() {
    let dir = tempfile::tempdir().unwrap();
    let traces = dir.path().join("traces");
    let path = traces.join("rank-0.jsonl");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([CHILD_TEST, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, &traces)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while lines_in(&path) < 5_000 {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the child wrote {} lines in 60 s", lines_in(&path));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // SIGKILL: no destructor, no flush.
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success());

    let (run, warnings) = load_run(&[dir.path()]).unwrap();
    let rank = &run.ranks[0];
    assert!(rank.span_count() >= 4_999, "{}", rank.span_count());
    assert!(rank.end.is_none(), "a killed process writes no end record");
    match &warnings[..] {
        [] => assert!(!rank.truncated),
        [Warning::Truncated { .. }] => assert!(rank.truncated),
        other => panic!("{other:?}"),
    }
}

#[test]
fn panics_are_recorded_by_the_hook() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Recorder::create_in_dir(dir.path(), header("p", 0, 1, 0)).unwrap();
    rec.record_panics();
    let worker = rec.clone();
    let joined = std::thread::spawn(move || {
        worker.span(SpanKind::Forward, 0, 1, 2).finish();
        panic!("loss is NaN");
    })
    .join();
    assert!(joined.is_err());
    drop(rec);
    let (run, _) = load_run(&[dir.path()]).unwrap();
    let rank = &run.ranks[0];
    let end = rank.end.as_ref().unwrap();
    assert_eq!(end.status, "panic");
    assert!(end.message.as_deref().unwrap().contains("loss is NaN"));
    assert_eq!(rank.logs[0].level, LogLevel::Fatal);
    assert_eq!(rank.span_count(), 1);
}
