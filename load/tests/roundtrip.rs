//! Writing records and reading them back: every record kind, clock offsets,
//! sorting, interning, merging of several run directories and tolerance of
//! unknown content.

mod common;

use common::{header, to_bytes, write_run, write_text_run, T0};
use probe_load::model::{LaneKind, Run};
use probe_load::reader::{load_records, load_run};
use probe_load::trace::{
    BucketInfo, BucketsRecord, CounterRecord, EndRecord, GradReadyRecord, InstantRecord,
    KernelCategory, LogLevel, LogRecord, Record, SpanKind, SpanRecord,
};
use probe_load::{Error, Warning};
use serde_json::json;

fn args(v: serde_json::Value) -> probe_load::trace::Args {
    v.as_object().unwrap().clone()
}

/// One rank's records using every record type and every span field.
fn all_records(rank: u32, offset: i64) -> Vec<Record> {
    let t = |ns: u64| T0 + ns;
    let s = |kind, a, b| SpanRecord::new(kind, 0, t(a), t(b));
    vec![
        Record::Header(header("rt", rank, 2, offset)),
        Record::Log(LogRecord {
            t: t(1),
            level: LogLevel::Info,
            message: "started ✓ \"quoted\"".to_owned(),
        }),
        Record::Span(s(SpanKind::Step, 10, 1000)),
        Record::Span(s(SpanKind::DataWait, 10, 50)),
        Record::Span(s(SpanKind::Forward, 50, 300)),
        Record::Span(s(SpanKind::Backward, 300, 800)),
        Record::Span(
            s(SpanKind::BucketReady, 320, 500)
                .bucket(0)
                .bytes(128)
                .params(2),
        ),
        Record::Span(
            s(SpanKind::BucketReady, 480, 780)
                .bucket(1)
                .bytes(128)
                .params(2),
        ),
        Record::Span(
            s(SpanKind::Collective, 510, 700)
                .queued(t(500))
                .op("all_reduce")
                .bucket(0)
                .bytes(128)
                .seq(1)
                .algo("ring")
                .transport("tcp")
                .dtype("float32"),
        ),
        Record::Span(
            s(SpanKind::Collective, 790, 900)
                .queued(t(780))
                .op("all_reduce")
                .bucket(1)
                .bytes(128)
                .seq(2)
                .algo("ring")
                .transport("tcp")
                .dtype("float32"),
        ),
        Record::Span(
            s(SpanKind::Collective, 905, 910)
                .op("send")
                .peer(1 - rank)
                .bytes(8)
                .seq(3)
                .transport("shm"),
        ),
        Record::Span(s(SpanKind::Writeback, 700, 720).bucket(0).bytes(128)),
        Record::Span(s(SpanKind::Optimizer, 910, 990)),
        Record::Span(s(SpanKind::CheckpointSave, 991, 995).name("ckpt-0")),
        Record::Span(s(SpanKind::CheckpointLoad, 5, 9).without_step()),
        Record::Span(
            s(SpanKind::Kernel, 60, 290)
                .name("sgemm")
                .device(0)
                .stream(7)
                .category(KernelCategory::Compute)
                .correlation(11),
        ),
        Record::Span(
            s(SpanKind::Kernel, 515, 690)
                .name("ncclAllReduce")
                .device(0)
                .stream(13)
                .category(KernelCategory::Comm)
                .correlation(12),
        ),
        Record::Span(s(SpanKind::Memcpy, 20, 40).device(0).stream(7).bytes(4096)),
        Record::Span(s(SpanKind::Memcpy, 41, 45).bytes(64)),
        Record::Span(
            s(SpanKind::User, 100, 200)
                .name("my phase")
                .lane("dataloader")
                .args(args(json!({"batch": 3, "ok": true, "tags": ["a", "b"]}))),
        ),
        Record::Span(s(SpanKind::Forward, 60, 70).lane("data")),
        Record::Span(s(SpanKind::Other, 1, 2)),
        Record::Buckets(BucketsRecord {
            step: 1,
            t: Some(t(999)),
            reason: "rebuild".to_owned(),
            buckets: vec![BucketInfo {
                id: 0,
                params: vec![0, 1, 2, 3],
                bytes: 256,
            }],
        }),
        Record::GradReady(GradReadyRecord {
            step: 0,
            t0: t(300),
            offsets_ns: vec![480, -1, 320, 200],
        }),
        Record::Instant(InstantRecord {
            name: "rebuild".into(),
            t: t(999),
            step: Some(0),
            args: Some(Box::new(args(json!({"why": "first step"})))),
        }),
        Record::Instant(InstantRecord {
            name: "plain".into(),
            t: t(3),
            step: None,
            args: None,
        }),
        Record::Counter(CounterRecord {
            name: "loss".into(),
            t: t(1000),
            value: 0.25,
        }),
        Record::Counter(CounterRecord {
            name: "mem".into(),
            t: t(1001),
            value: 1e12,
        }),
        Record::Log(LogRecord {
            t: t(1002),
            level: LogLevel::Warn,
            message: "slow".to_owned(),
        }),
        Record::End(EndRecord {
            t: t(2000),
            status: "ok".to_owned(),
            message: Some("done".to_owned()),
        }),
    ]
}

/// Records as sorted JSON lines, for order-independent comparison.
fn canonical(records: &[Record]) -> Vec<String> {
    let mut v: Vec<String> = records
        .iter()
        .map(|r| serde_json::to_string(r).unwrap())
        .collect();
    v.sort();
    v
}

fn load_dir(dir: &std::path::Path) -> (Run, Vec<Warning>) {
    load_run(&[dir]).unwrap()
}

#[test]
fn every_record_kind_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let ranks = vec![all_records(0, 0), all_records(1, -250)];
    write_run(dir.path(), &ranks);
    let (run, warnings) = load_dir(dir.path());
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(run.run_id, "rt");
    assert_eq!(run.world_size, 2);
    assert_eq!(run.ranks.len(), 2);
    for (i, original) in ranks.iter().enumerate() {
        let rank = run.rank(i as u32).unwrap();
        let back = run.to_records(rank);
        assert_eq!(canonical(&back), canonical(original), "rank {i}");
        assert!(rank.end.is_some());
        assert!(!rank.truncated);
    }
}

#[test]
fn model_fields_are_resolved() {
    let (run, _) = load_records(&[all_records(0, 0)]).unwrap();
    let rank = &run.ranks[0];
    let comm = rank.lane_id(LaneKind::Comm).unwrap();
    let colls: Vec<_> = rank
        .lane(comm)
        .unwrap()
        .spans()
        .iter()
        .filter(|s| s.kind() == SpanKind::Collective)
        .copied()
        .collect();
    assert_eq!(colls.len(), 3);
    let first = run.span(rank, &colls[0]);
    assert_eq!(first.kind(), SpanKind::Collective);
    assert_eq!(first.op(), Some("all_reduce"));
    assert_eq!(first.transport(), Some("tcp"));
    assert_eq!(first.algo(), Some("ring"));
    assert_eq!(first.dtype(), Some("float32"));
    assert_eq!(first.bucket(), Some(0));
    assert_eq!(first.bytes(), Some(128));
    assert_eq!(first.seq(), Some(1));
    assert_eq!(first.queued(), Some((T0 + 500) as i64));
    assert_eq!(first.step(), Some(0));
    assert_eq!(first.lane().unwrap().name, "communication");
    // The two all-reduces share their extra fields.
    assert_eq!(colls[0].extra_index(), colls[1].extra_index());

    let user = rank
        .spans_of_kind(SpanKind::User)
        .map(|s| run.span(rank, s))
        .next()
        .unwrap();
    assert_eq!(user.name(), Some("my phase"));
    assert_eq!(user.lane().unwrap().kind, LaneKind::Custom);
    assert_eq!(user.lane().unwrap().name, "dataloader");
    let a: serde_json::Value = serde_json::from_str(user.args_json().unwrap()).unwrap();
    assert_eq!(a, json!({"batch": 3, "ok": true, "tags": ["a", "b"]}));

    let stepless = rank.spans_of_kind(SpanKind::CheckpointLoad).next().unwrap();
    assert_eq!(stepless.step(), None);

    // Lanes: fixed ones first, then custom, then GPU streams.
    let kinds: Vec<LaneKind> = rank.lanes.iter().map(|l| l.kind).collect();
    assert_eq!(
        kinds,
        vec![
            LaneKind::Compute,
            LaneKind::Buckets,
            LaneKind::Comm,
            LaneKind::Data,
            LaneKind::Custom,
            LaneKind::Gpu {
                device: 0,
                stream: 7
            },
            LaneKind::Gpu {
                device: 0,
                stream: 13
            },
        ]
    );
    for (i, lane) in rank.lanes.iter().enumerate() {
        assert!(lane.spans().iter().all(|s| usize::from(s.lane()) == i));
    }
    let gpu7 = rank
        .lane(
            rank.lane_id(LaneKind::Gpu {
                device: 0,
                stream: 7,
            })
            .unwrap(),
        )
        .unwrap();
    assert_eq!(gpu7.name, "gpu 0 stream 7");
    assert_eq!(gpu7.spans().len(), 2, "kernel and memcpy with a stream");

    // Layouts: the header's, then the rebuild.
    assert_eq!(rank.layouts.len(), 2);
    assert_eq!(rank.layout_at(0).unwrap().reason, "initial");
    assert_eq!(rank.layout_at(1).unwrap().reason, "rebuild");
    assert_eq!(
        rank.layout_at(7).unwrap().buckets[0].params,
        vec![0, 1, 2, 3]
    );

    let g = &rank.grad_ready[0];
    assert_eq!(g.ready_at(0), Some((T0 + 300 + 480) as i64));
    assert_eq!(g.ready_at(1), None);
    assert_eq!(g.ready_at(9), None);

    assert_eq!(rank.counters.len(), 2);
    assert_eq!(run.str(rank.counters[0].name), "loss");
    assert_eq!(rank.logs[0].message.as_ref(), "started ✓ \"quoted\"");
    assert_eq!(rank.logs[1].level, LogLevel::Warn);
    assert_eq!(rank.instants[0].step, None);
    assert_eq!(run.str(rank.instants[1].name), "rebuild");
    assert_eq!(rank.end.as_ref().unwrap().message.as_deref(), Some("done"));
}

#[test]
fn clock_offsets_are_applied() {
    let (run, _) = load_records(&[all_records(0, 0), all_records(1, -250)]).unwrap();
    let step0 = run.rank(0).unwrap().steps().next().unwrap().start();
    let step1 = run.rank(1).unwrap().steps().next().unwrap().start();
    assert_eq!(step0, (T0 + 10) as i64);
    assert_eq!(step1, (T0 + 10) as i64 - 250);
    let r1 = run.rank(1).unwrap();
    assert_eq!(r1.offset_ns(), -250);
    assert_eq!(r1.instants[0].t, (T0 + 3) as i64 - 250);
    assert_eq!(r1.counters[0].t, (T0 + 1000) as i64 - 250);
    assert_eq!(r1.logs[0].t, (T0 + 1) as i64 - 250);
    assert_eq!(r1.grad_ready[0].t0, (T0 + 300) as i64 - 250);
    assert_eq!(r1.end.as_ref().unwrap().t, (T0 + 2000) as i64 - 250);
    assert_eq!(r1.layouts[1].t, Some((T0 + 999) as i64 - 250));
    let q = r1.spans().find_map(|s| s.queued()).unwrap();
    assert_eq!(q, (T0 + 500) as i64 - 250);
    let (lo, hi) = run.time_range().unwrap();
    assert_eq!(lo, (T0 + 1) as i64 - 250);
    assert_eq!(hi, (T0 + 2000) as i64);
}

#[test]
fn spans_are_sorted_by_start_parents_first() {
    // Written in end order, as a recorder does.
    let t = |n: u64| T0 + n;
    let recs = vec![
        Record::Header(header("s", 0, 1, 0)),
        Record::Span(SpanRecord::new(SpanKind::Forward, 0, t(10), t(20))),
        Record::Span(SpanRecord::new(SpanKind::Backward, 0, t(20), t(40))),
        Record::Span(SpanRecord::new(SpanKind::Step, 0, t(10), t(50))),
        Record::Span(SpanRecord::new(SpanKind::Forward, 1, t(50), t(60))),
        Record::Span(SpanRecord::new(SpanKind::Step, 1, t(50), t(90))),
        Record::Span(SpanRecord::new(SpanKind::User, 1, t(5), t(6))),
    ];
    let (run, _) = load_records(&[recs]).unwrap();
    let lane = &run.ranks[0].lanes[0];
    let got: Vec<(i64, SpanKind)> = lane
        .spans()
        .iter()
        .map(|s| (s.start() - T0 as i64, s.kind()))
        .collect();
    assert_eq!(
        got,
        vec![
            (5, SpanKind::User),
            (10, SpanKind::Step),
            (10, SpanKind::Forward),
            (20, SpanKind::Backward),
            (50, SpanKind::Step),
            (50, SpanKind::Forward),
        ]
    );
    let steps: Vec<u64> = run.ranks[0].steps().filter_map(|s| s.step()).collect();
    assert_eq!(steps, vec![0, 1]);
}

#[test]
fn strings_are_interned_across_ranks() {
    let (run, _) = load_records(&[all_records(0, 0), all_records(1, 0)]).unwrap();
    let all_reduce = run.strings.lookup("all_reduce").unwrap();
    let count = run
        .strings
        .iter()
        .filter(|(_, s)| *s == "all_reduce")
        .count();
    assert_eq!(count, 1);
    for rank in &run.ranks {
        let ops: Vec<_> = rank
            .spans_of_kind(SpanKind::Collective)
            .filter_map(|s| s.op())
            .collect();
        assert!(ops.contains(&all_reduce), "rank {}", rank.rank());
        // The symbols of the second rank were remapped to the run's table.
        let span = rank.spans_of_kind(SpanKind::Collective).next().unwrap();
        assert_eq!(run.span(rank, span).transport(), Some("tcp"));
    }
}

#[test]
fn several_run_directories_merge_by_run_id() {
    let node0 = tempfile::tempdir().unwrap();
    let node1 = tempfile::tempdir().unwrap();
    let r0 = all_records(0, 0);
    let r1 = all_records(1, 40);
    std::fs::create_dir_all(node0.path().join("traces")).unwrap();
    std::fs::write(node0.path().join("traces/rank-0.jsonl"), to_bytes(&r0)).unwrap();
    // Any *.jsonl under traces/, in a sub-folder too.
    std::fs::create_dir_all(node1.path().join("traces/host-b")).unwrap();
    std::fs::write(node1.path().join("traces/host-b/r1.jsonl"), to_bytes(&r1)).unwrap();
    let (run, warnings) = load_run(&[node1.path(), node0.path()]).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let ranks: Vec<u32> = run.ranks.iter().map(|r| r.rank()).collect();
    assert_eq!(ranks, vec![0, 1]);
    assert!(run.missing_ranks().is_empty());
    // Loading one node alone warns about the missing rank.
    let (run0, warnings) = load_run(&[node0.path()]).unwrap();
    assert_eq!(run0.ranks.len(), 1);
    assert_eq!(
        warnings,
        vec![Warning::MissingRanks {
            run_id: "rt".to_owned(),
            world_size: 2,
            missing: vec![1],
            count: 1,
        }]
    );
    assert!(warnings[0].to_string().contains("no trace of rank 1"));
    // The same directory twice is read once.
    let (again, _) = load_run(&[node0.path(), &node0.path().join("traces")]).unwrap();
    assert_eq!(again.ranks.len(), 1);
}

#[test]
fn different_runs_are_refused() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    write_run(a.path(), &[all_records(0, 0)]);
    let mut other = all_records(1, 0);
    if let Record::Header(h) = &mut other[0] {
        h.run_id = "another".to_owned();
    }
    std::fs::create_dir_all(b.path().join("traces")).unwrap();
    std::fs::write(b.path().join("traces/rank-1.jsonl"), to_bytes(&other)).unwrap();
    let err = load_run(&[a.path(), b.path()]).unwrap_err();
    assert!(matches!(err, Error::MixedRuns { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("\"rt\"") && msg.contains("\"another\""),
        "{msg}"
    );
}

#[test]
fn duplicate_ranks_are_refused() {
    let err = load_records(&[all_records(0, 0), all_records(0, 0)]).unwrap_err();
    assert!(matches!(err, Error::DuplicateRank { rank: 0, .. }), "{err}");
    assert!(err.to_string().contains("rank 0 has two traces"), "{err}");
}

#[test]
fn world_sizes_must_agree() {
    let mut other = all_records(1, 0);
    if let Record::Header(h) = &mut other[0] {
        h.world_size = 3;
    }
    let err = load_records(&[all_records(0, 0), other]).unwrap_err();
    assert!(matches!(err, Error::WorldSizeMismatch { .. }), "{err}");
}

const MINIMAL_HEADER: &str = r#"{"type":"header","format":"ddp-probe-trace","version":"1.0","run_id":"m","rank":0,"world_size":1,"start_ns":1000}"#;

#[test]
fn newer_minor_version_and_unknown_content_load() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{}\n{}\n{}\n{}\n{}\n{}\n",
        r#"{"type":"header","format":"ddp-probe-trace","version":"1.7","run_id":"m","rank":0,"world_size":1,"start_ns":1000,"new_header_field":{"x":[1,2]}}"#,
        r#"{"type":"span","kind":"forward","step":0,"start":1100,"end":1200,"future_field":"x","nested":{"a":[1,{"b":null}]}}"#,
        r#"{"type":"span","kind":"prefetch","step":0,"start":1150,"end":1160,"name":"warm"}"#,
        r#"{"type":"span","kind":"prefetch","step":1,"start":1170,"end":1180}"#,
        r#"{"type":"memory_snapshot","t":1300,"blocks":[1,2,3]}"#,
        r#"{"type":"future","start":"not a number"}"#,
    );
    write_text_run(dir.path(), "rank-0.jsonl", text.as_bytes());
    let (run, warnings) = load_dir(dir.path());
    assert_eq!(run.span_count(), 3);
    let rank = &run.ranks[0];
    assert_eq!(rank.version.minor, 7);
    let other: Vec<_> = rank
        .spans_of_kind(SpanKind::Other)
        .map(|s| run.span(rank, s))
        .collect();
    assert_eq!(other.len(), 2);
    assert_eq!(other[0].kind_name(), "prefetch");
    assert_eq!(other[0].label(), "warm");
    assert_eq!(other[1].label(), "prefetch");
    assert!(matches!(
        &warnings[0],
        Warning::NewerMinorVersion { found, .. } if found == "1.7"
    ));
    assert!(warnings.iter().any(|w| matches!(
        w,
        Warning::UnknownSpanKind { kind, count: 2, first_line: 3, .. } if kind == "prefetch"
    )));
    assert!(warnings.iter().any(|w| matches!(
        w,
        Warning::UnknownRecordType { record, count: 1, first_line: 5, .. } if record == "memory_snapshot"
    )));
    assert!(warnings.iter().any(|w| matches!(
        w,
        Warning::UnknownRecordType { record, count: 1, first_line: 6, .. } if record == "future"
    )));
}

#[test]
fn unknown_major_version_is_an_error_naming_file_and_versions() {
    let dir = tempfile::tempdir().unwrap();
    let text = MINIMAL_HEADER.replace("\"1.0\"", "\"2.1\"") + "\n";
    write_text_run(dir.path(), "rank-0.jsonl", text.as_bytes());
    let err = load_run(&[dir.path()]).unwrap_err();
    assert!(matches!(err, Error::UnsupportedVersion { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("rank-0.jsonl"), "{msg}");
    assert!(msg.contains("2.1") && msg.contains("1.0"), "{msg}");
}

#[test]
fn minimal_header_gets_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{MINIMAL_HEADER}\n{}\n",
        r#"{"type":"span","kind":"step","start":1100,"end":1200}"#
    );
    write_text_run(dir.path(), "x.jsonl", text.as_bytes());
    let (run, warnings) = load_dir(dir.path());
    assert!(warnings.is_empty(), "{warnings:?}");
    let rank = &run.ranks[0];
    assert_eq!(rank.header.local_world_size, 1);
    assert_eq!(rank.header.clock, "unix_ns");
    assert!(rank.layouts.is_empty());
    assert!(rank.end.is_none());
    assert_eq!(rank.spans().next().unwrap().step(), None);
}

#[test]
fn counters_accept_null_as_nan() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{MINIMAL_HEADER}\n{}\n",
        r#"{"type":"counter","name":"loss","t":1100,"value":null}"#
    );
    write_text_run(dir.path(), "rank-0.jsonl", text.as_bytes());
    let (run, _) = load_dir(dir.path());
    assert!(run.ranks[0].counters[0].value.is_nan());
}

#[test]
fn synthetic_run_has_the_expected_structure() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = probe_load::synth::SynthConfig::new(4, 5, 3);
    config.gpu_kernels = true;
    config.straggler = Some((2, 1.5));
    let summary = probe_load::synth::generate_run(&config, dir.path()).unwrap();
    assert_eq!(summary.files.len(), 4);
    let (run, warnings) = load_dir(dir.path());
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(run.span_count() as u64, config.total_spans());
    assert_eq!(run.ranks.len(), 4);
    for rank in &run.ranks {
        assert_eq!(rank.steps().count(), 5);
        assert_eq!(rank.grad_ready.len(), 5);
        assert_eq!(rank.end.as_ref().unwrap().status, "ok");
        assert_eq!(rank.layouts.len(), 2);
        for step in rank.steps() {
            let n = step.step().unwrap();
            let within = |k: SpanKind| {
                rank.spans_of_kind(k)
                    .filter(|s| s.step() == Some(n))
                    .all(|s| s.start() >= step.start() && s.end() <= step.end())
            };
            for k in [
                SpanKind::DataWait,
                SpanKind::Forward,
                SpanKind::Backward,
                SpanKind::BucketReady,
                SpanKind::Collective,
                SpanKind::Optimizer,
            ] {
                assert!(
                    within(k),
                    "rank {} step {n}: {k} outside the step",
                    rank.rank()
                );
            }
            let bwd = rank
                .spans_of_kind(SpanKind::Backward)
                .find(|s| s.step() == Some(n))
                .unwrap();
            let first_coll = rank
                .spans_of_kind(SpanKind::Collective)
                .filter(|s| s.step() == Some(n))
                .map(|s| s.start())
                .min()
                .unwrap();
            assert!(first_coll < bwd.end(), "all-reduce overlaps backward");
        }
    }
    // All ranks finish each all-reduce at the same time on rank 0's clock.
    for seq in 1..=15u64 {
        let ends: Vec<i64> = run
            .ranks
            .iter()
            .map(|r| {
                r.spans_of_kind(SpanKind::Collective)
                    .find(|s| s.seq() == Some(seq))
                    .unwrap()
                    .end()
            })
            .collect();
        assert!(ends.iter().all(|&e| e == ends[0]), "seq {seq}: {ends:?}");
    }
    // The straggler makes the others wait in their collectives.
    let wait = |r: u32| -> i64 {
        run.rank(r)
            .unwrap()
            .spans_of_kind(SpanKind::Collective)
            .map(|s| s.duration())
            .sum()
    };
    assert!(wait(0) > wait(2));
}

#[test]
fn lanes_in_order_and_out_of_order_load_alike() {
    // (start, end) of comm-lane spans: in order, then the same shuffled,
    // with ties (same start: the longer first).
    let spans: [(u64, u64); 6] = [(0, 9), (0, 4), (2, 3), (5, 8), (5, 6), (7, 30)];
    let shuffled = [spans[3], spans[1], spans[5], spans[0], spans[4], spans[2]];
    let load = |list: &[(u64, u64)]| {
        let mut records = vec![Record::Header(header("order", 0, 1, 0))];
        // A step first so that the compute lane exists and the lanes are
        // renumbered into display order.
        records.push(Record::Span(SpanRecord::new(
            SpanKind::Step,
            0,
            T0,
            T0 + 40,
        )));
        for &(s, e) in list {
            records.push(Record::Span(SpanRecord::new(
                SpanKind::Writeback,
                0,
                T0 + s,
                T0 + e,
            )));
        }
        let (run, _) = load_records(&[records]).unwrap();
        run
    };
    for run in [load(&spans), load(&shuffled)] {
        let rank = &run.ranks[0];
        let id = rank.lane_id(LaneKind::Comm).unwrap();
        let lane = rank.lane(id).unwrap();
        let got: Vec<(i64, i64)> = lane
            .spans()
            .iter()
            .map(|s| (s.start() - T0 as i64, s.end() - T0 as i64))
            .collect();
        let want: Vec<(i64, i64)> = spans.iter().map(|&(s, e)| (s as i64, e as i64)).collect();
        assert_eq!(got, want);
        assert!(lane.spans().iter().all(|s| s.lane() == id));
        assert_eq!(lane.max_duration(), 23);
        assert_eq!(lane.time_range(), Some((T0 as i64, T0 as i64 + 30)));
    }
}

/// A value for a span field of each type the contract's field list uses.
trait Sample {
    fn sample(i: u64) -> Self;
}

impl Sample for u64 {
    fn sample(i: u64) -> u64 {
        1_000 + i
    }
}

impl Sample for u32 {
    fn sample(i: u64) -> u32 {
        100 + i as u32
    }
}

impl Sample for KernelCategory {
    fn sample(i: u64) -> KernelCategory {
        KernelCategory::ALL[i as usize % KernelCategory::ALL.len()]
    }
}

/// Every optional field of the contract's list (`span_optional_fields!`) set
/// on `span`, so a field added there is covered here without a word written.
macro_rules! set_every_field {
    ($( $(#[doc = $doc:literal])* $kind:ident $field:ident : $ty:ty ),+ $(,)?) => {
        fn set_every_field(mut span: SpanRecord) -> SpanRecord {
            let mut i = 0u64;
            $(
                i += 1;
                span = set_every_field!(@ $kind span, $field, $ty, i);
            )+
            let _ = i;
            span
        }
    };
    (@text $span:ident, $field:ident, $ty:ty, $i:expr) => {
        $span.$field(format!("{}-{}", stringify!($field), $i))
    };
    (@$kind:ident $span:ident, $field:ident, $ty:ty, $i:expr) => {
        $span.$field(<$ty as Sample>::sample($i))
    };
}

probe_load::trace::span_optional_fields!(set_every_field);

/// Every field the contract declares for a span survives loading, by the fast
/// parser and by serde_json alike, the binary cache and the model's way back
/// to records: a field the reader or the model forgot would be lost here.
#[test]
fn every_declared_span_field_survives_loading() {
    let span = set_every_field(SpanRecord::new(SpanKind::Collective, 3, T0 + 10, T0 + 90));
    let json = serde_json::to_value(&span).unwrap();
    let names = probe_load::trace::span_field_names();
    for name in &names[1..] {
        if *name != "args" {
            assert!(json.get(name).is_some(), "{name} not set: {json}");
        }
    }
    let records = vec![Record::Header(header("every", 0, 1, 0)), Record::Span(span)];
    let bytes = to_bytes(&records);
    // Fast parser and serde_json agree, the cache decodes to the same model,
    // and the model written back loads to the same records.
    probe_load::fuzzing::trace_file(&bytes);
    let (run, warnings) = load_records(std::slice::from_ref(&records)).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let back = run.to_records(run.rank(0).unwrap());
    assert_eq!(canonical(&back), canonical(&records));
}
