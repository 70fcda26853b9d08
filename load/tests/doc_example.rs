//! `docs/trace-format.md` cannot drift from the code: its complete example
//! (the ```jsonl blocks) loads with the real reader and means what the text
//! says, and every single-record example (the ```json blocks) is a valid
//! record.

use std::collections::BTreeSet;
use std::path::PathBuf;

use probe_load::reader::{load_from_readers, load_run};
use probe_load::trace::{Record, SpanKind};

const DOC: &str = include_str!("../../docs/trace-format.md");

/// The fenced blocks of `lang`, in document order.
fn blocks(lang: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in DOC.lines() {
        match &mut current {
            None => {
                if line.trim_start().strip_prefix("```") == Some(lang) {
                    current = Some(String::new());
                }
            }
            Some(text) => {
                if line.trim_start().starts_with("```") {
                    out.push(std::mem::take(text));
                    current = None;
                } else {
                    text.push_str(line);
                    text.push('\n');
                }
            }
        }
    }
    assert!(current.is_none(), "unterminated ```{lang} block");
    out
}

const B: i64 = 1_700_000_000_000_000_000;

#[test]
fn complete_example_loads_and_means_what_the_text_says() {
    let files = blocks("jsonl");
    assert_eq!(files.len(), 2, "one block per rank");
    let dir = tempfile::tempdir().unwrap();
    let traces = dir.path().join("traces");
    std::fs::create_dir_all(&traces).unwrap();
    for (i, text) in files.iter().enumerate() {
        std::fs::write(traces.join(format!("rank-{i}.jsonl")), text).unwrap();
    }
    let (run, warnings) = load_run(&[dir.path()]).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(run.run_id, "example-run");
    assert_eq!(run.world_size, 2);
    assert_eq!(run.ranks.len(), 2);
    for rank in &run.ranks {
        assert_eq!(rank.steps().count(), 1);
        assert_eq!(rank.spans_of_kind(SpanKind::BucketReady).count(), 2);
        assert_eq!(rank.spans_of_kind(SpanKind::Collective).count(), 2);
        assert_eq!(rank.layouts.len(), 1);
        assert_eq!(rank.layouts[0].buckets.len(), 2);
        assert_eq!(rank.header.ddp.as_ref().unwrap().params.len(), 4);
        assert_eq!(rank.end.as_ref().unwrap().status, "ok");
        // Every span lies inside the step.
        let step = rank.steps().next().unwrap();
        for s in rank.spans() {
            assert!(s.start() >= step.start() && s.end() <= step.end(), "{s:?}");
        }
        // The ready windows agree with the per-parameter ready times.
        let g = &rank.grad_ready[0];
        let layout = rank.layout_at(0).unwrap();
        for w in rank.spans_of_kind(SpanKind::BucketReady) {
            let bucket = &layout.buckets[w.bucket().unwrap() as usize];
            let times: Vec<i64> = bucket
                .params
                .iter()
                .map(|&p| g.ready_at(p as usize).unwrap())
                .collect();
            assert_eq!(
                w.start(),
                *times.iter().min().unwrap(),
                "rank {}",
                rank.rank()
            );
            assert_eq!(
                w.end(),
                *times.iter().max().unwrap(),
                "rank {}",
                rank.rank()
            );
        }
    }
    // On rank 0's timeline both all-reduces end together on both ranks.
    for (seq, end) in [(1, 4_900_000), (2, 8_300_000)] {
        for rank in &run.ranks {
            let c = rank
                .spans_of_kind(SpanKind::Collective)
                .find(|s| s.seq() == Some(seq))
                .unwrap();
            assert_eq!(c.end() - B, end, "rank {} seq {seq}", rank.rank());
        }
    }
    // "rank 0 ... runs 7.41 → 8.30 ms, of which 0.25 ms are spent waiting".
    let start = |r: u32| {
        run.rank(r)
            .unwrap()
            .spans_of_kind(SpanKind::Collective)
            .find(|s| s.seq() == Some(2))
            .unwrap()
            .start()
    };
    assert_eq!(start(0) - B, 7_410_000);
    assert_eq!(start(1) - start(0), 250_000);
}

const MINIMAL_HEADER: &str = r#"{"type":"header","format":"ddp-probe-trace","version":"1.0","run_id":"r42","rank":0,"world_size":1,"start_ns":1700000000000000000}"#;

#[test]
fn every_single_record_example_is_valid() {
    let examples = blocks("json");
    let mut types = BTreeSet::new();
    for text in &examples {
        let text = text.trim();
        let record: Record =
            serde_json::from_str(text).unwrap_or_else(|e| panic!("not a record: {e}\n{text}"));
        types.insert(record.type_name());
        // And the reader takes it, after a header where needed.
        let file = if record.type_name() == "header" {
            format!("{text}\n")
        } else {
            format!("{MINIMAL_HEADER}\n{text}\n")
        };
        let (_, warnings) = load_from_readers(vec![(
            PathBuf::from("doc.jsonl"),
            std::io::Cursor::new(file),
        )])
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert!(warnings.is_empty(), "{warnings:?}\n{text}");
    }
    let expected: BTreeSet<&str> = [
        "header",
        "buckets",
        "span",
        "grad_ready",
        "instant",
        "counter",
        "log",
        "end",
    ]
    .into_iter()
    .collect();
    assert_eq!(types, expected, "the document shows every record type");
}

#[test]
fn every_span_kind_and_field_is_documented() {
    for kind in SpanKind::ALL {
        assert!(
            DOC.contains(&format!("| `{}` |", kind.as_str())),
            "kind {kind} is not in the kinds table"
        );
    }
    // Every field the writer can emit has a table row.
    let span = probe_load::trace::SpanRecord::new(SpanKind::Kernel, 0, 1, 2)
        .queued(1)
        .name("n")
        .lane("l")
        .bucket(1)
        .bytes(1)
        .params(1)
        .seq(1)
        .op("o")
        .algo("a")
        .transport("t")
        .peer(1)
        .dtype("d")
        .device(1)
        .stream(1)
        .category(probe_load::trace::KernelCategory::Comm)
        .correlation(1)
        .args(serde_json::Map::new());
    let value = serde_json::to_value(Record::Span(span)).unwrap();
    for field in value.as_object().unwrap().keys() {
        assert!(
            DOC.contains(&format!("| `{field}` |")),
            "span field {field} has no table row"
        );
    }
    let header = serde_json::to_value(Record::Header(
        probe_load::trace::Header::new("r", 0, 1).with_ddp(probe_load::trace::DdpConfig {
            bucket_cap_mb_list: None,
            backend: "gloo".into(),
            bucket_cap_mb: Some(1.0),
            first_bucket_bytes: Some(1),
            find_unused_parameters: false,
            buffers: Vec::new(),
            static_graph: false,
            gradient_as_bucket_view: false,
            params: vec![],
            buckets: vec![],
            // Written only when not empty: one entry, so that its row is checked.
            group_ranks: vec![0],
        }),
    ))
    .unwrap();
    let obj = header.as_object().unwrap();
    for field in obj.keys().chain(obj["ddp"].as_object().unwrap().keys()) {
        assert!(
            DOC.contains(&format!("| `{field}` |")),
            "header field {field} has no table row"
        );
    }
}
