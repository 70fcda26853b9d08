//! `Run::open_spans`: what a rank began and never finished, on hand-written traces with
//! hand-computed answers: the step after its last complete one, the phase after its last
//! finished one, the collective it waits in (the first queued above its last completed),
//! each from its start to the end of the recording (the run's last timestamp, or the rank's
//! end as the manifest records it, moved by the rank's clock offset); nothing for a rank
//! that ended `ok`.

mod common;

use common::{write_text_run, T0};
use probe_load::model::LaneKind;
use probe_load::reader::load_run;
use probe_load::trace::SpanKind;

fn header(rank: u32, offset: i64) -> String {
    format!(
        r#"{{"type":"header","format":"ddp-probe-trace","version":"1.0","run_id":"open","rank":{rank},"world_size":2,"start_ns":{T0},"offset_to_rank0_ns":{offset}}}"#
    )
}

fn span(kind: &str, step: u64, a: u64, b: u64) -> String {
    format!(
        r#"{{"type":"span","kind":"{kind}","step":{step},"start":{},"end":{}}}"#,
        T0 + a,
        T0 + b
    )
}

fn queued(step: u64, seq: u64, bucket: u64, t: u64) -> String {
    format!(
        r#"{{"type":"instant","name":"collective_queued","t":{},"step":{step},"args":{{"seq":{seq},"op":"all_reduce","bucket":{bucket},"bytes":4096}}}}"#,
        T0 + t
    )
}

fn collective(step: u64, seq: u64, a: u64, b: u64) -> String {
    format!(
        r#"{{"type":"span","kind":"collective","op":"all_reduce","lane":"comm","step":{step},"seq":{seq},"bucket":0,"bytes":4096,"start":{},"end":{}}}"#,
        T0 + a,
        T0 + b
    )
}

/// A complete step 0 (data, forward, backward with collective seq 1, optimizer), then `extra`.
fn step0(extra: &[String]) -> Vec<String> {
    let mut v = vec![
        span("data_wait", 0, 100, 110),
        span("forward", 0, 110, 200),
        queued(0, 1, 0, 250),
        collective(0, 1, 300, 390),
        span("backward", 0, 200, 400),
        span("optimizer", 0, 400, 450),
        span("step", 0, 100, 460),
    ];
    v.extend_from_slice(extra);
    v
}

/// One complete step 0 with collective seq 1; then rank 0 reads step 1's batch, runs its
/// forward, queues seq 2 and 3 and records nothing more; rank 1 (clock 100 ns ahead, offset
/// -100) completes step 1 and ends `ok` at 2,000.
fn write(dir: &std::path::Path) {
    let mut r0 = vec![header(0, 0)];
    r0.extend(step0(&[
        span("data_wait", 1, 470, 480),
        span("forward", 1, 480, 560),
        queued(1, 2, 0, 600),
        queued(1, 3, 1, 650),
    ]));
    let mut r1 = vec![header(1, -100)];
    r1.extend(step0(&[]));
    r1.push(format!(
        r#"{{"type":"end","t":{},"status":"ok"}}"#,
        T0 + 2100
    ));
    write_text_run(dir, "rank-0.jsonl", (r0.join("\n") + "\n").as_bytes());
    write_text_run(dir, "rank-1.jsonl", (r1.join("\n") + "\n").as_bytes());
}

#[test]
fn the_step_phase_and_collective_a_rank_never_finished_run_to_the_end_of_the_recording() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path());
    let (run, _) = load_run(&[dir.path()]).unwrap();
    let open = run.open_spans();
    let got: Vec<(u32, SpanKind, LaneKind, i64, i64, Option<u64>)> = open
        .iter()
        .map(|s| (s.rank, s.kind, s.lane, s.start, s.end, s.step))
        .collect();
    let t = |n: i64| T0 as i64 + n;
    // The recording ends at rank 1's end record: 2,100 on its clock, 2,000 on rank 0's.
    assert_eq!(
        got,
        [
            (
                0,
                SpanKind::Step,
                LaneKind::Compute,
                t(470),
                t(2000),
                Some(1)
            ),
            (
                0,
                SpanKind::Backward,
                LaneKind::Compute,
                t(560),
                t(2000),
                Some(1)
            ),
            (
                0,
                SpanKind::Collective,
                LaneKind::Comm,
                t(600),
                t(2000),
                Some(1)
            ),
        ]
    );
    let c = open[2].collective.as_ref().unwrap();
    assert_eq!((c.seq, c.bucket), (2, Some(0)));
    assert_eq!(
        open[2].what(),
        "all_reduce seq 2 (step 1, bucket 0, 4096 bytes)"
    );
    assert_eq!(open[1].what(), "backward of step 1");
}

#[test]
fn the_manifest_says_when_the_rank_was_stopped() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path());
    // The launcher stopped rank 0 at 5,000 on its node's clock (rank 0's own: offset 0).
    let manifest = format!(
        r#"{{"format":1,"status":"hang","exit_code":124,"world_size":2,"ranks":[{{"rank":0,"pid":1,"end":{{"how":"signaled","signal":"SIGTERM","number":15,"core_dumped":false,"at":"","after_s":5.0,"at_unix_ns":{}}}}}]}}"#,
        T0 + 5000
    );
    std::fs::write(dir.path().join("manifest.json"), manifest).unwrap();
    let (run, _) = load_run(&[dir.path()]).unwrap();
    let ends: Vec<i64> = run.open_spans().iter().map(|s| s.end).collect();
    assert_eq!(ends, [T0 as i64 + 5000; 3]);
    assert_eq!(run.time_range().unwrap().1, T0 as i64 + 5000);
    // An end on another clock than the trace's (a synthetic or imported trace beside a real
    // launcher's manifest: a year after the rank started recording, though the manifest says
    // the rank ended 5 s after the launch) is not believed.
    let other_clock = format!(
        r#"{{"format":1,"status":"hang","exit_code":124,"world_size":2,"ranks":[{{"rank":0,"pid":1,"end":{{"how":"signaled","signal":"SIGTERM","number":15,"core_dumped":false,"at":"","after_s":5.0,"at_unix_ns":{}}}}}]}}"#,
        T0 + 365 * 86_400 * 1_000_000_000
    );
    std::fs::write(dir.path().join("manifest.json"), other_clock).unwrap();
    let (run, _) = load_run(&[dir.path()]).unwrap();
    let ends: Vec<i64> = run.open_spans().iter().map(|s| s.end).collect();
    assert_eq!(ends, [T0 as i64 + 2000; 3]);
}

#[test]
fn a_rank_that_ended_ok_has_nothing_open() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path());
    let (run, _) = load_run(&[dir.path()]).unwrap();
    assert!(run.open_spans().iter().all(|s| s.rank == 0));
}

#[test]
fn a_rank_whose_gradient_all_reduce_failed_was_not_in_its_optimizer() {
    // Rank 0 finished step 1's backward; its bucket all-reduce then failed (a peer gone: the
    // PyTorch module marks the span `"error": true`) and the error left the backward. It never
    // reached the optimizer, which the previous step's order would put next; without the
    // failure it would have been there.
    let trace = |failed: bool| {
        let error = if failed {
            r#","args":{"error":true}"#
        } else {
            ""
        };
        let mut r0 = vec![header(0, 0)];
        r0.extend(step0(&[
            span("data_wait", 1, 470, 480),
            span("forward", 1, 480, 560),
            queued(1, 2, 0, 600),
            span("backward", 1, 560, 650),
        ]));
        r0.push(format!(
            r#"{{"type":"span","kind":"collective","op":"all_reduce","lane":"comm","step":1,"seq":2,"bucket":0,"bytes":4096,"start":{},"end":{}{error}}}"#,
            T0 + 600,
            T0 + 900
        ));
        r0.push(format!(
            r#"{{"type":"end","t":{},"status":"error"}}"#,
            T0 + 950
        ));
        let dir = tempfile::tempdir().unwrap();
        write_text_run(
            dir.path(),
            "rank-0.jsonl",
            (r0.join("\n") + "\n").as_bytes(),
        );
        let (run, _) = load_run(&[dir.path()]).unwrap();
        run.open_spans()
            .iter()
            .map(|s| (s.kind, s.step))
            .collect::<Vec<_>>()
    };
    assert_eq!(trace(true), [(SpanKind::Step, Some(1))]);
    assert_eq!(
        trace(false),
        [(SpanKind::Step, Some(1)), (SpanKind::Optimizer, Some(1))]
    );
}
