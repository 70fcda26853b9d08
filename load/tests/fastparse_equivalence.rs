//! The hand-written parser of the common record shapes builds exactly the
//! model serde_json builds: on synthetic runs of several shapes, on the
//! format document's examples, on every JSON line the other tests of this
//! crate write by hand, and on thousands of damaged variants of them (same
//! run and warnings, or the same error message).

mod common;
mod model_eq;

use std::path::{Path, PathBuf};

use common::{header, to_bytes, T0};
use model_eq::{assert_same, lenient, load, parser, trace_files, Loaded};
use probe_load::synth::{generate_run, SynthConfig};
use probe_load::trace::{
    CounterRecord, EndRecord, GradReadyRecord, InstantRecord, KernelCategory, LogLevel, LogRecord,
    Record, SpanKind, SpanRecord,
};
use serde_json::json;

const MINIMAL_HEADER: &str = r#"{"type":"header","format":"ddp-probe-trace","version":"1.0","run_id":"m","rank":0,"world_size":1,"start_ns":1000}"#;

/// Loads `files` with the fast parser and with serde_json only, checks
/// that both ended the same way and returns the fast result.
/// The strict load of `files` with both parsers, which must agree; as every command loads them
/// (damaged lines skipped), the parsers must agree too.
fn both(files: &[PathBuf], what: &str) -> Loaded {
    let fast = load(files, &parser(true));
    let slow = load(files, &parser(false));
    assert_same(&fast, &slow, what);
    let fast_lenient = load(files, &lenient(true));
    let slow_lenient = load(files, &lenient(false));
    assert_same(
        &fast_lenient,
        &slow_lenient,
        &format!("{what} (damaged lines skipped)"),
    );
    fast
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn synthetic_runs_of_several_shapes() {
    let mut configs = Vec::new();
    configs.push(SynthConfig::new(2, 12, 3));
    let mut c = SynthConfig::new(3, 9, 5);
    c.gpu_kernels = true;
    c.straggler = Some((1, 1.5));
    c.data_stall_every = Some(3);
    c.seed = 7;
    configs.push(c);
    let mut c = SynthConfig::new(1, 5, 1);
    c.grad_ready = false;
    c.rebuild_at_step = None;
    c.end_status = None;
    c.max_clock_offset_ns = 0;
    configs.push(c);
    let mut c = SynthConfig::new(4, 4, 2);
    c.end_status = Some("error".to_owned());
    c.ranks_per_node = 2;
    c.max_clock_offset_ns = -3_000_000;
    c.gpu_kernels = true;
    configs.push(c);
    // Files of several read buffers (1 MiB each): lines of a known shape,
    // read where they lie in the buffer, cross the buffers' ends.
    configs.push(SynthConfig::new(2, 250, 40));
    for (i, c) in configs.iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        generate_run(c, dir.path()).unwrap();
        let (run, warnings) = both(&trace_files(dir.path()), &format!("synth config {i}"))
            .unwrap_or_else(|e| panic!("config {i}: {e}"));
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(run.span_count() as u64, c.total_spans());
    }
}

/// A rank using every record type, every span field, `args`, escapes,
/// non-ASCII text and `null`s.
fn every_field() -> Vec<u8> {
    let t = |n: u64| T0 + n;
    let s = |kind, a, b| SpanRecord::new(kind, 0, t(a), t(b));
    let mut bytes = to_bytes(&[
        Record::Header(header("eq", 0, 1, -250)),
        Record::Log(LogRecord {
            t: t(1),
            level: LogLevel::Warn,
            message: "ünï ✓ \"quoted\" \\ tab\t".to_owned(),
        }),
        Record::Span(s(SpanKind::Step, 10, 1000)),
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
            s(SpanKind::Collective, 905, 910)
                .op("send")
                .peer(1)
                .bytes(8)
                .seq(3)
                .transport("shm"),
        ),
        Record::Span(
            s(SpanKind::Kernel, 60, 290)
                .name("sgemm")
                .device(1)
                .stream(7)
                .category(KernelCategory::Compute)
                .correlation(11),
        ),
        Record::Span(s(SpanKind::Memcpy, 20, 40).device(0).stream(7).bytes(4096)),
        Record::Span(
            s(SpanKind::User, 100, 200)
                .name("my phase ✓")
                .lane("dataloader")
                .args(
                    json!({"batch": 3, "tags": ["a", "b"]})
                        .as_object()
                        .unwrap()
                        .clone(),
                ),
        ),
        Record::Span(s(SpanKind::Forward, 60, 70).lane("communication")),
        Record::Span(s(SpanKind::BucketReady, 320, 500).bucket(0).params(2)),
        Record::Span(s(SpanKind::CheckpointLoad, 5, 9).without_step()),
        Record::GradReady(GradReadyRecord {
            step: 0,
            t0: t(300),
            offsets_ns: vec![480, -1, 320, 200],
        }),
        Record::Instant(InstantRecord {
            name: "rebuild".into(),
            t: t(999),
            step: Some(0),
            args: Some(Box::new(json!({"why": "x"}).as_object().unwrap().clone())),
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
            value: 0.1 + 0.2,
        }),
        Record::Counter(CounterRecord {
            name: "nan".into(),
            t: t(1001),
            value: f64::NAN,
        }),
        Record::End(EndRecord {
            t: t(2000),
            status: "ok".to_owned(),
            message: Some("done".to_owned()),
        }),
    ]);
    for line in [
        r#"{"type":"span","kind":"prefetch","step":0,"start":1700000000000001150,"end":1700000000000001160,"name":"warm"}"#,
        r#"{"type":"span","kind":"kernel","start":1700000000000000001,"end":1700000000000000002,"category":"sparse","name":"a\u00e9\n"}"#,
        r#" { "type" : "span" , "kind" : "forward" , "step" : null , "start" : 1700000000000000003 , "end" : 1700000000000000004 } "#,
        r#"{"type":"counter","name":"big","t":1700000000000000005,"value":123456789012345678901234567890}"#,
        r#"{"type":"counter","name":"tiny","t":1700000000000000005,"value":-1.5e-300}"#,
        r#"{"type":"counter","name":"int","t":1700000000000000006,"value":42}"#,
        r#"{"type":"log","t":1700000000000000007,"level":"critical","message":"x"}"#,
        r#"{"type":"end","t":1700000000000000008,"status":"error","message":null}"#,
        r#"{"type":"grad_ready","step":2,"t0":1700000000000000009,"offsets_ns":[ 1 , -1 ,0],"t":5}"#,
        r#"{"type":"memory_snapshot","t":1,"blocks":[1,2]}"#,
        "",
        "   ",
    ] {
        bytes.extend_from_slice(line.as_bytes());
        bytes.extend_from_slice(b"\r\n");
    }
    bytes
}

#[test]
fn every_field_and_unusual_lines() {
    let dir = tempfile::tempdir().unwrap();
    let text = every_field();
    let path = write(dir.path(), "rank-0.jsonl", &text);
    let (run, warnings) = both(std::slice::from_ref(&path), "every field").unwrap();
    assert_eq!(run.ranks[0].counters.len(), 5);
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    // Every cut of the file: truncation warnings, skipped headers and
    // errors come out the same.
    let mut cuts: Vec<usize> = (0..text.len()).step_by(13).collect();
    cuts.extend(text.len() - 150..text.len());
    for cut in cuts {
        std::fs::write(&path, &text[..cut]).unwrap();
        let _ = both(std::slice::from_ref(&path), &format!("cut at {cut}"));
    }
}

#[test]
fn the_format_documents_examples() {
    const DOC: &str = include_str!("../../docs/trace-format.md");
    let dir = tempfile::tempdir().unwrap();
    let mut block = String::new();
    let mut lang: Option<&str> = None;
    let mut n = 0;
    for line in DOC.lines() {
        match lang {
            None => {
                let fence = line.trim_start().strip_prefix("```");
                if let Some(l @ ("json" | "jsonl")) = fence {
                    lang = Some(l);
                }
            }
            Some(l) => {
                if line.trim_start().starts_with("```") {
                    let text = if l == "json" && !block.contains("\"header\"") {
                        format!("{MINIMAL_HEADER}\n{block}")
                    } else {
                        block.clone()
                    };
                    n += 1;
                    let path = write(dir.path(), &format!("rank-{n}.jsonl"), text.as_bytes());
                    both(&[path], &format!("document block {n}")).unwrap();
                    block.clear();
                    lang = None;
                } else {
                    block.push_str(line);
                    block.push('\n');
                }
            }
        }
    }
    assert!(n >= 10, "only {n} blocks");
}

/// The JSON lines written by hand in the other tests of the trace format.
fn lines_of_other_tests() -> Vec<String> {
    let sources = [
        include_str!("roundtrip.rs"),
        include_str!("damage.rs"),
        include_str!("doc_example.rs"),
        include_str!("../../probe/tests/chrome.rs"),
        include_str!("recorder.rs"),
        include_str!("../../explain/tests/diagnosis.rs"),
    ];
    let mut out = Vec::new();
    for src in sources {
        let mut rest = src;
        while let Some(i) = rest.find("r#\"{") {
            let after = &rest[i + 3..];
            let Some(j) = after.find("\"#") else { break };
            out.push(after[..j].to_owned());
            rest = &after[j..];
        }
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn lines_written_by_the_other_tests() {
    let lines = lines_of_other_tests();
    assert!(lines.len() >= 20, "only {} lines found", lines.len());
    let dir = tempfile::tempdir().unwrap();
    let span = r#"{"type":"span","kind":"forward","start":1300,"end":1400}"#;
    for (i, line) in lines.iter().enumerate() {
        let texts = if line.contains("\"header\"") {
            vec![format!("{line}\n{span}\n"), format!("{line}\n{span}")]
        } else {
            vec![
                format!("{MINIMAL_HEADER}\n{line}\n{span}\n"),
                format!("{MINIMAL_HEADER}\n{span}\n{line}"),
                format!("{MINIMAL_HEADER}\n{line}\n{line}\n"),
            ]
        };
        for (k, text) in texts.iter().enumerate() {
            let path = write(dir.path(), "rank-0.jsonl", text.as_bytes());
            let _ = both(&[path], &format!("line {i} variant {k}: {line}"));
        }
    }
}

use fastrand::Rng;

/// A number below `n` (0 when `n` is 0).
fn below(rng: &mut Rng, n: usize) -> usize {
    rng.usize(..n.max(1))
}

const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-0",
    "-1",
    "01",
    "1.0",
    "1e3",
    "1E-2",
    "4294967294",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999",
    "null",
    "true",
    "\"5\"",
    "[]",
    "{}",
];

/// One random damage to `line`.
fn mutate(rng: &mut Rng, line: &[u8]) -> Vec<u8> {
    const ALPHABET: &[u8] = b"{}[]\":,-+.0123456789eEtnrufals \t\\/\x01\x7f\xc3\xa9\xff";
    let mut b = line.to_vec();
    let at = below(rng, b.len() + 1);
    match below(rng, 8) {
        0 if !b.is_empty() => {
            let i = at.min(b.len() - 1);
            b[i] = ALPHABET[below(rng, ALPHABET.len())];
        }
        1 => b.insert(at, ALPHABET[below(rng, ALPHABET.len())]),
        2 => {
            let end = (at + 1 + below(rng, 6)).min(b.len());
            b.drain(at.min(end)..end);
        }
        3 => b.truncate(at),
        4 => {
            // Replace the number (or value) after a random colon.
            let colons: Vec<usize> = (0..b.len()).filter(|&i| b[i] == b':').collect();
            if let Some(&c) = colons.get(below(rng, colons.len())) {
                let end = (c + 1..b.len())
                    .find(|&i| matches!(b[i], b',' | b'}'))
                    .unwrap_or(b.len());
                let n = NUMBERS[below(rng, NUMBERS.len())].as_bytes();
                b.splice(c + 1..end, n.iter().copied());
            }
        }
        5 => {
            // Repeat a key-value pair: a duplicate key.
            let commas: Vec<usize> = (0..b.len()).filter(|&i| b[i] == b',').collect();
            if commas.len() >= 2 {
                let k = below(rng, commas.len() - 1);
                let pair = b[commas[k]..commas[k + 1]].to_vec();
                let at = commas[k];
                b.splice(at..at, pair);
            }
        }
        6 => {
            let ws: &[u8] = [b" ".as_slice(), b"\t", b"\r", b"  \n"][below(rng, 4)];
            b.splice(at..at, ws.iter().copied());
        }
        _ => {
            // An escape inside a string.
            let quotes: Vec<usize> = (0..b.len()).filter(|&i| b[i] == b'"').collect();
            if let Some(&q) = quotes.get(below(rng, quotes.len())) {
                let esc: &[u8] = [b"\\n".as_slice(), b"\\u00e9", b"\\\"", b"\\x"][below(rng, 4)];
                b.splice(q + 1..q + 1, esc.iter().copied());
            }
        }
    }
    b
}

#[test]
fn damaged_lines_load_the_same_way() {
    let dir = tempfile::tempdir().unwrap();
    let mut corpus: Vec<Vec<u8>> = lines_of_other_tests()
        .into_iter()
        .filter(|l| !l.contains("\"header\""))
        .map(String::into_bytes)
        .collect();
    for line in every_field().split(|&b| b == b'\n').skip(1) {
        corpus.push(line.to_vec());
    }
    let mut c = SynthConfig::new(1, 2, 2);
    c.gpu_kernels = true;
    let mut synth = Vec::new();
    probe_load::synth::generate_to_writers(&c, vec![&mut synth]).unwrap();
    for line in synth.split(|&b| b == b'\n').skip(1) {
        corpus.push(line.to_vec());
    }
    let mut rng = Rng::with_seed(0x9e37_79b9_7f4a_7c15);
    let path = dir.path().join("rank-0.jsonl");
    let mut loaded = 0;
    for i in 0..1500 {
        let mut text = MINIMAL_HEADER.as_bytes().to_vec();
        text.push(b'\n');
        for _ in 0..below(&mut rng, 3) {
            text.extend_from_slice(&corpus[below(&mut rng, corpus.len())]);
            text.push(b'\n');
        }
        let mut line = corpus[below(&mut rng, corpus.len())].clone();
        for _ in 0..1 + below(&mut rng, 3) {
            line = mutate(&mut rng, &line);
        }
        text.extend_from_slice(&line);
        if below(&mut rng, 3) > 0 {
            text.push(b'\n');
        }
        std::fs::write(&path, &text).unwrap();
        if both(
            std::slice::from_ref(&path),
            &format!("case {i}: {}", String::from_utf8_lossy(&line)),
        )
        .is_ok()
        {
            loaded += 1;
        }
    }
    // Both outcomes are exercised.
    assert!(loaded > 150 && loaded < 1350, "{loaded} of 1500 loaded");
}

#[test]
fn thread_count_does_not_change_the_model() {
    let dir = tempfile::tempdir().unwrap();
    generate_run(&SynthConfig::new(5, 6, 3), dir.path()).unwrap();
    let files = trace_files(dir.path());
    let one = load(&files, &parser(true));
    let mut many = parser(true);
    many.threads = Some(4);
    assert_same(&one, &load(&files, &many), "1 vs 4 threads");
}

/// `line` with the integer after `"key":` replaced by `value`, if it has
/// one there.
fn with_integer(line: &str, key: &str, value: &str) -> String {
    let tag = format!("\"{key}\":");
    let Some(at) = line.find(&tag).map(|i| i + tag.len()) else {
        return line.to_owned();
    };
    let end = line[at..]
        .find(|c: char| !c.is_ascii_digit())
        .map_or(line.len(), |n| at + n);
    if end == at {
        return line.to_owned();
    }
    format!("{}{value}{}", &line[..at], &line[end..])
}

/// The integer after `"key":` in `line`.
fn integer(line: &str, key: &str) -> Option<u64> {
    let tag = format!("\"{key}\":");
    let at = line.find(&tag)? + tag.len();
    let digits: String = line[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Another line like `line`: its times moved together (sometimes with a
/// byte that is no digit among them), its other integers
/// picked anew (mostly of the same width, sometimes not, sometimes out of
/// range or with a leading zero), now and then an equally long string
/// swapped. Lines of one shape with other integers are what the reader's
/// shapes read; those that deviate must fall back to the same result.
fn variant(rng: &mut Rng, line: &str) -> String {
    let mut out = line.to_owned();
    // Mostly a small shift, which keeps the times' leading digits (the
    // reader reuses those of the line before).
    let shift = match below(rng, 3) {
        0 => rng.u64(..) % 1_000_000_000,
        _ => rng.u64(..) % 1_000,
    };
    for key in ["start", "end", "queued"] {
        if let Some(t) = integer(&out, key) {
            let mut moved = t.saturating_add(shift).to_string();
            match below(rng, 40) {
                0 => moved = format!("0{}", &moved[1..]),
                1 => moved = "9".repeat(moved.len()),
                2 => moved = (t / 10).to_string(),
                3 | 4 => {
                    // A byte that is no digit among the last eight, or
                    // anywhere (among the leading digits the reader reuses).
                    let at = match below(rng, 3) {
                        0 => below(rng, moved.len()),
                        _ => moved.len() - 1 - below(rng, 8.min(moved.len())),
                    };
                    let bad = ["x", " ", "-", "/", ":", "\u{e9}"][below(rng, 6)];
                    moved.replace_range(at..at + 1, bad);
                }
                _ => {}
            }
            out = with_integer(&out, key, &moved);
        }
    }
    if below(rng, 20) == 0 {
        // Ends before it starts (same widths).
        if let (Some(a), Some(b)) = (integer(&out, "start"), integer(&out, "end")) {
            out = with_integer(
                &with_integer(&out, "start", &b.to_string()),
                "end",
                &a.to_string(),
            );
        }
    }
    for key in [
        "step",
        "bucket",
        "bytes",
        "params",
        "seq",
        "peer",
        "device",
        "stream",
        "correlation",
    ] {
        let Some(v) = integer(&out, key) else {
            continue;
        };
        let width = v.to_string().len();
        let new = match below(rng, 24) {
            0 => format!("0{}", "1".repeat(width.saturating_sub(1))),
            23 => {
                // Same width, a byte that is no digit somewhere.
                let mut s = v.to_string();
                let at = below(rng, width);
                s.replace_range(at..at + 1, ["x", " ", "/", ":"][below(rng, 4)]);
                s
            }
            1 => "9".repeat(width),
            2 => {
                ["4294967295", "4294967296", "18446744073709551615", "7"][below(rng, 4)].to_owned()
            }
            3 => (v + 1).to_string(),
            _ => {
                // Same width, another value.
                let low = 10u64
                    .pow(width as u32 - 1)
                    .min(if width == 1 { 0 } else { u64::MAX });
                let span = 9 * 10u64.saturating_pow(width as u32 - 1);
                (low + rng.u64(..) % span.max(1)).to_string()
            }
        };
        out = with_integer(&out, key, &new);
    }
    if below(rng, 8) == 0 {
        for (a, b) in [
            ("tcp", "shm"),
            ("all_reduce", "all_gather"),
            ("ring", "tree"),
        ] {
            if out.contains(a) {
                out = out.replacen(a, b, 1);
            }
        }
    }
    out
}

/// Span lines of a few shapes, repeated with other integers: read by the
/// shapes the reader learns from the first of them, they load to the same
/// model as with serde_json, and lines that only look alike (out of range,
/// leading zeros, other widths, ends before starts, other strings) to the
/// same model or error.
#[test]
fn lines_of_one_shape_with_other_integers() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = SynthConfig::new(1, 3, 3);
    c.gpu_kernels = true;
    let mut synth = Vec::new();
    probe_load::synth::generate_to_writers(&c, vec![&mut synth]).unwrap();
    let mut bases: Vec<String> = String::from_utf8(synth)
        .unwrap()
        .lines()
        .chain(
            String::from_utf8(every_field())
                .unwrap()
                .lines()
                .map(|l| l.to_owned())
                .collect::<Vec<_>>()
                .iter()
                .map(String::as_str),
        )
        .filter(|l| l.starts_with(r#"{"type":"span""#))
        .map(str::to_owned)
        .collect();
    // Integers among the extra fields, and a kernel on a named lane.
    bases.push(format!(
        r#"{{"type":"span","kind":"collective","step":3,"start":{},"end":{},"queued":{},"bucket":2,"bytes":1024,"params":7,"seq":12,"op":"send","transport":"tcp","peer":1,"device":3,"stream":7}}"#,
        T0 + 5_000,
        T0 + 9_000,
        T0 + 4_000
    ));
    bases.push(format!(
        r#"{{"type":"span","kind":"kernel","step":1,"start":{},"end":{},"name":"gemm","lane":"gpu-main","device":2,"stream":13,"category":"compute","correlation":55}}"#,
        T0 + 1_000,
        T0 + 2_500
    ));
    bases.dedup();
    let mut rng = Rng::with_seed(0x2545_f491_4f6c_dd1d);
    let path = dir.path().join("rank-0.jsonl");
    let (mut loaded, mut lines) = (0, 0);
    for i in 0..600 {
        let picks: Vec<&String> = (0..2)
            .map(|_| &bases[below(&mut rng, bases.len())])
            .collect();
        let mut text = MINIMAL_HEADER.to_owned();
        text.push('\n');
        for base in &picks {
            text.push_str(base);
            text.push('\n');
        }
        for _ in 0..2 + below(&mut rng, 10) {
            let base = picks[below(&mut rng, picks.len())];
            let line = if below(&mut rng, 4) == 0 {
                base.clone()
            } else {
                variant(&mut rng, base)
            };
            text.push_str(&line);
            text.push('\n');
            lines += 1;
        }
        std::fs::write(&path, &text).unwrap();
        if both(std::slice::from_ref(&path), &format!("case {i}:\n{text}")).is_ok() {
            loaded += 1;
        }
    }
    assert!(lines > 3000, "{lines}");
    // Both outcomes are exercised.
    assert!(loaded > 100 && loaded < 550, "{loaded} of 600 loaded");
}

/// Lines of one shape whose integers have twenty digits (the reader reuses
/// the leading digits of the line before, and twenty digits may overflow a
/// `u64`): the same model or error as with serde_json.
#[test]
fn lines_of_one_shape_with_twenty_digit_integers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rank-0.jsonl");
    let line = |bytes: &str, correlation: &str| {
        format!(
            r#"{{"type":"span","kind":"kernel","step":1,"start":{},"end":{},"name":"gemm","lane":"gpu-main","bytes":{bytes},"device":2,"stream":13,"category":"compute","correlation":{correlation}}}"#,
            T0 + 1_000,
            T0 + 2_500
        )
    };
    let values = [
        "18446744073709551615",
        "18446744073709551614",
        "18446744073709551616",
        "10000000000000000000",
        "99999999999999999999",
        "18446744073799551615",
        "17446744073709551615",
    ];
    let mut loaded = 0;
    for (i, a) in values.iter().enumerate() {
        for b in &values {
            let mut text = MINIMAL_HEADER.to_owned();
            text.push('\n');
            // The first line (in the writer's order of keys) makes its kind
            // known, the second teaches the shape, the others are read by it.
            let first = line(values[0], values[0]);
            for l in [first.clone(), first, line(a, b), line(b, a)] {
                text.push_str(&l);
                text.push('\n');
            }
            std::fs::write(&path, &text).unwrap();
            if both(std::slice::from_ref(&path), &format!("case {i}:\n{text}")).is_ok() {
                loaded += 1;
            }
        }
    }
    // Values up to u64::MAX load, larger ones do not.
    assert_eq!(loaded, 4 * 4, "{loaded} of 49 loaded");
}
