//! Chrome trace export: structure, hand-computed timestamps, pid/tid mapping,
//! metadata, and proper nesting of the events of every thread.

#[path = "../../load/tests/common/mod.rs"]
mod common;

use std::collections::{BTreeMap, HashMap};

use common::{header, T0};
use probe::export::chrome::write_chrome_trace;
use probe::reader::load_records;
use probe::trace::{
    CounterRecord, EndRecord, InstantRecord, LogLevel, LogRecord, Record, SpanKind, SpanRecord,
};
use serde_json::{json, Value};

fn tiny_run() -> probe::Run {
    let t = |n: u64| T0 + n;
    let rank0 = vec![
        Record::Header(header("chrome", 0, 2, 0)),
        Record::Span(SpanRecord::new(SpanKind::Forward, 0, t(1_000), t(4_500))),
        Record::Span(SpanRecord::new(SpanKind::BucketReady, 0, t(2_000), t(6_000)).bucket(1)),
        Record::Span(SpanRecord::new(SpanKind::BucketReady, 0, t(5_500), t(8_000)).bucket(0)),
        Record::Span(
            SpanRecord::new(SpanKind::Collective, 0, t(5_000), t(9_000))
                .queued(t(4_800))
                .op("all_reduce")
                .bucket(1)
                .bytes(128)
                .seq(1)
                .transport("tcp"),
        ),
        Record::Span(SpanRecord::new(SpanKind::Step, 0, t(0), t(10_000))),
        Record::Instant(InstantRecord {
            name: "mark".into(),
            t: t(1_234),
            step: Some(0),
            args: None,
        }),
        Record::Log(LogRecord {
            t: t(7),
            level: LogLevel::Warn,
            message: "careful \"here\"".to_owned(),
        }),
        Record::End(EndRecord {
            t: t(10_001),
            status: "ok".to_owned(),
            message: None,
        }),
    ];
    // Rank 1's clock is 1 µs behind: its raw times are 1000 ns smaller.
    let rank1 = vec![
        Record::Header(header("chrome", 1, 2, 1_000)),
        Record::Span(SpanRecord::new(SpanKind::Step, 0, T0 - 500, T0 + 9_500)),
        Record::Counter(CounterRecord {
            name: "loss".into(),
            t: t(2_000),
            value: 0.5,
        }),
    ];
    load_records(&[rank0, rank1]).unwrap().0
}

fn export(run: &probe::Run) -> (String, Value) {
    let mut out = Vec::new();
    write_chrome_trace(run, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let v: Value = serde_json::from_str(&text).expect("valid JSON");
    (text, v)
}

/// `(pid, tid)` → thread name, from the metadata events.
fn thread_names(events: &[Value]) -> HashMap<(u64, u64), String> {
    events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| {
            (
                (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap()),
                e["args"]["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn tiny_trace_exports_as_computed_by_hand() {
    let run = tiny_run();
    let (text, v) = export(&run);
    assert_eq!(v["displayTimeUnit"], "ms");
    assert_eq!(v["metadata"]["run_id"], "chrome");
    assert_eq!(v["metadata"]["world_size"], 2);
    assert_eq!(v["metadata"]["time_origin_ns"], json!(T0));
    assert_eq!(v["metadata"]["ranks"][1]["offset_to_rank0_ns"], 1000);
    let events = v["traceEvents"].as_array().unwrap();

    // One process per rank, named and sorted.
    for rank in 0..2u64 {
        let name = events
            .iter()
            .find(|e| e["ph"] == "M" && e["name"] == "process_name" && e["pid"] == rank)
            .unwrap();
        assert_eq!(name["args"]["name"], format!("rank {rank} (host-a)"));
        let sort = events
            .iter()
            .find(|e| e["ph"] == "M" && e["name"] == "process_sort_index" && e["pid"] == rank)
            .unwrap();
        assert_eq!(sort["args"]["sort_index"], rank);
    }

    // One thread per lane; overlapping bucket windows get a second row.
    let names = thread_names(events);
    let mut rank0: Vec<(u64, &str)> = names
        .iter()
        .filter(|((p, _), _)| *p == 0)
        .map(|((_, t), n)| (*t, n.as_str()))
        .collect();
    rank0.sort();
    assert_eq!(
        rank0,
        vec![
            (1, "compute"),
            (2, "buckets"),
            (3, "buckets (2)"),
            (4, "communication")
        ]
    );

    let x = |pid: u64, cat: &str| -> Vec<&Value> {
        events
            .iter()
            .filter(|e| e["ph"] == "X" && e["pid"] == pid && e["cat"] == cat)
            .collect()
    };
    // Microseconds since the earliest timestamp (rank 0's step at T0).
    let fwd = x(0, "forward")[0];
    assert_eq!(fwd["tid"], 1);
    assert_eq!(fwd["ts"].as_f64(), Some(1.0));
    assert_eq!(fwd["dur"].as_f64(), Some(3.5));
    assert_eq!(fwd["args"]["step"], 0);
    assert!(text.contains(r#""ts":1.000,"dur":3.500"#), "exact decimals");

    let coll = x(0, "collective")[0];
    assert_eq!(coll["tid"], 4);
    assert_eq!(coll["name"], "all_reduce [bucket 1]");
    assert_eq!(coll["ts"].as_f64(), Some(5.0));
    assert_eq!(coll["dur"].as_f64(), Some(4.0));
    assert_eq!(coll["args"]["bucket"], 1);
    assert_eq!(coll["args"]["bytes"], 128);
    assert_eq!(coll["args"]["seq"], 1);
    assert_eq!(coll["args"]["op"], "all_reduce");
    assert_eq!(coll["args"]["transport"], "tcp");
    assert_eq!(coll["args"]["queue_wait_us"].as_f64(), Some(0.2));

    let windows = x(0, "bucket_ready");
    let tids: Vec<u64> = windows.iter().map(|e| e["tid"].as_u64().unwrap()).collect();
    assert_eq!(tids, vec![2, 3]);

    // Rank 1 is shifted onto rank 0's timeline: raw T0-500 + 1000.
    let step1 = x(1, "step")[0];
    assert_eq!(step1["ts"].as_f64(), Some(0.5));
    assert_eq!(step1["dur"].as_f64(), Some(10.0));
    assert_eq!(step1["tid"], 1);

    let counter = events.iter().find(|e| e["ph"] == "C").unwrap();
    assert_eq!(counter["pid"], 1);
    assert_eq!(counter["name"], "loss");
    assert_eq!(counter["ts"].as_f64(), Some(3.0));
    assert_eq!(counter["args"]["value"], 0.5);

    let instant = events
        .iter()
        .find(|e| e["ph"] == "i" && e["cat"] == "instant")
        .unwrap();
    assert_eq!(instant["name"], "mark");
    assert_eq!(instant["s"], "p");
    assert_eq!(instant["ts"].as_f64(), Some(1.234));
    assert_eq!(instant["args"]["step"], 0);

    let log = events.iter().find(|e| e["cat"] == "log").unwrap();
    assert_eq!(log["name"], "[warn] careful \"here\"");
    assert_eq!(log["ts"].as_f64(), Some(0.007));
    let end = events.iter().find(|e| e["cat"] == "end").unwrap();
    assert_eq!(end["name"], "end: ok");
    assert_eq!(end["ts"].as_f64(), Some(10.001));
}

/// Every X event has a named thread and the events of a thread nest.
fn check_well_formed(events: &[Value]) {
    let names = thread_names(events);
    let mut by_thread: BTreeMap<(u64, u64), Vec<(i64, i64)>> = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "X") {
        let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        assert!(names.contains_key(&key), "no thread_name for {key:?}");
        // Back to integer nanoseconds to compare exactly.
        let ns = |v: &Value| (v.as_f64().unwrap() * 1000.0).round() as i64;
        let ts = ns(&e["ts"]);
        by_thread
            .entry(key)
            .or_default()
            .push((ts, ts + ns(&e["dur"])));
    }
    for (key, mut spans) in by_thread {
        spans.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let mut stack: Vec<i64> = Vec::new();
        for (s, e) in spans {
            while stack.last().is_some_and(|&end| end <= s) {
                stack.pop();
            }
            if let Some(&end) = stack.last() {
                assert!(
                    e <= end,
                    "{key:?}: [{s}, {e}] overlaps its parent ending at {end}"
                );
            }
            stack.push(e);
        }
    }
}

#[test]
fn synthetic_run_exports_well_formed() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = probe::synth::SynthConfig::new(3, 4, 5);
    config.gpu_kernels = true;
    probe::synth::generate_run(&config, dir.path()).unwrap();
    let (run, _) = probe::load_run(&[dir.path()]).unwrap();
    let (_, v) = export(&run);
    let events = v["traceEvents"].as_array().unwrap();
    let spans = events.iter().filter(|e| e["ph"] == "X").count();
    assert_eq!(spans as u64, config.total_spans());
    check_well_formed(events);
    // GPU stream threads exist.
    let names = thread_names(events);
    assert!(names.values().any(|n| n == "gpu 0 stream 13"));
    // No timestamp before the origin.
    assert!(events
        .iter()
        .filter_map(|e| e["ts"].as_f64())
        .all(|ts| ts >= 0.0));
}

#[test]
fn tiny_trace_is_well_formed() {
    let (_, v) = export(&tiny_run());
    check_well_formed(v["traceEvents"].as_array().unwrap());
}
