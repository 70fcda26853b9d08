//! Damaged input: cut-off files load their complete prefix with a warning;
//! damaged lines in the middle are skipped with a warning naming the file and
//! lines, and under `strict` (`--strict`) are errors naming the file and line,
//! as bad headers and empty directories always are.

mod common;

use common::{header, to_bytes, write_text_run, T0};
use probe_load::reader::{load_run, load_run_with, LoadOptions};
use probe_load::trace::{Record, SpanKind, SpanRecord};
use probe_load::{Error, Warning};

/// A trace whose last line holds multi-byte UTF-8 characters.
fn sample() -> Vec<u8> {
    let t = |n: u64| T0 + n;
    to_bytes(&[
        Record::Header(header("cut", 0, 1, 0)),
        Record::Span(SpanRecord::new(SpanKind::Forward, 0, t(1), t(2))),
        Record::Span(SpanRecord::new(SpanKind::Backward, 0, t(2), t(3))),
        Record::Span(SpanRecord::new(SpanKind::User, 0, t(3), t(4)).name("ünï ✓ 日本語 🚀")),
    ])
}

const MINIMAL_HEADER: &str = r#"{"type":"header","format":"ddp-probe-trace","version":"1.0","run_id":"m","rank":0,"world_size":1,"start_ns":1000}"#;

fn lines(text: &[&str]) -> Vec<u8> {
    let mut s = text.join("\n");
    s.push('\n');
    s.into_bytes()
}

/// Loads `text` as rank 0's trace with `strict` on: a damaged line is an error.
fn load_text(text: &[u8]) -> Result<(probe_load::Run, Vec<Warning>), Error> {
    let dir = tempfile::tempdir().unwrap();
    write_text_run(dir.path(), "rank-0.jsonl", text);
    let strict = LoadOptions {
        strict: true,
        ..LoadOptions::default()
    };
    load_run_with(&[dir.path()], &strict)
}

/// Loads `text` as rank 0's trace as every command does by default.
fn load_text_lenient(text: &[u8]) -> Result<(probe_load::Run, Vec<Warning>), Error> {
    let dir = tempfile::tempdir().unwrap();
    write_text_run(dir.path(), "rank-0.jsonl", text);
    load_run(&[dir.path()])
}

#[test]
fn damaged_middle_lines_are_skipped_counted_and_named() {
    let span = |n: u64| {
        format!(
            r#"{{"type":"span","kind":"forward","start":{},"end":{}}}"#,
            1000 + n * 100,
            1050 + n * 100
        )
    };
    let text = lines(&[
        MINIMAL_HEADER,
        &span(1),
        r#"{"type":"span","kind":"forward",,"start":1}"#,
        &span(2),
        "garbage \u{1b}[2J",
        r#"{"type":"span","kind":"forward","start":1300,"end":1200}"#,
        &span(3),
    ]);
    let (run, warnings) = load_text_lenient(&text).unwrap();
    assert_eq!(run.ranks[0].span_count(), 3, "the three good spans load");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    match &warnings[0] {
        Warning::SkippedLines {
            count,
            lines,
            first_problem,
            ..
        } => {
            assert_eq!((*count, lines.as_slice()), (3, &[3, 5, 6][..]));
            assert!(
                first_problem.contains("key must be a string"),
                "{first_problem}"
            );
        }
        other => panic!("unexpected warning: {other}"),
    }
    let msg = warnings[0].to_string();
    assert!(
        msg.contains("rank-0.jsonl:3: skipped 3 damaged lines (not valid JSON"),
        "{msg}"
    );
    assert!(msg.contains("also lines 5, 6"), "{msg}");
    assert!(msg.contains("--strict"), "{msg}");
    // Under strict, the first damaged line is the error.
    let err = load_text(&text).unwrap_err();
    assert!(matches!(err, Error::CorruptLine { line: 3, .. }), "{err}");
}

#[test]
fn a_line_past_the_budget_is_refused_naming_the_variable() {
    // 17 MiB in one line, past the default budget of 16 MiB; mapped and read through a buffer.
    let long = format!(
        r#"{{"type":"span","kind":"user","start":1100,"end":1200,"name":"{}"}}"#,
        "x".repeat(17 << 20)
    );
    let text = lines(&[MINIMAL_HEADER, &long]);
    let dir = tempfile::tempdir().unwrap();
    write_text_run(dir.path(), "rank-0.jsonl", &text);
    for map_files in [true, false] {
        let options = LoadOptions {
            map_files,
            cache: false,
            ..LoadOptions::default()
        };
        let err = load_run_with(&[dir.path()], &options).unwrap_err();
        assert!(matches!(err, Error::LineTooLong { line: 2, .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.contains("rank-0.jsonl:2:"), "{msg}");
        assert!(
            msg.contains("DDP_PROBE_MAX_LINE_BYTES=<larger number>"),
            "{msg}"
        );
    }
}

#[test]
fn cut_last_line_loads_the_prefix_and_warns() {
    let full = sample();
    let last_start = full[..full.len() - 1]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap()
        + 1;
    let mut mid_char_cuts = 0;
    // Every cut inside the last line, including inside multi-byte characters.
    for cut in last_start + 1..full.len() - 1 {
        let text = &full[..cut];
        if std::str::from_utf8(text).is_err() {
            mid_char_cuts += 1;
        }
        let (run, warnings) = load_text(text).unwrap_or_else(|e| panic!("cut {cut}: {e}"));
        assert_eq!(run.span_count(), 2, "cut at byte {cut}");
        assert!(run.ranks[0].truncated);
        match &warnings[..] {
            [Warning::Truncated {
                path,
                line,
                records,
            }] => {
                assert!(path.ends_with("rank-0.jsonl"));
                assert_eq!(*line, 4);
                assert_eq!(*records, 3);
            }
            other => panic!("cut {cut}: {other:?}"),
        }
        let msg = warnings[0].to_string();
        assert!(
            msg.contains("rank-0.jsonl:4") && msg.contains("cut off"),
            "{msg}"
        );
    }
    assert!(
        mid_char_cuts >= 5,
        "only {mid_char_cuts} cuts inside characters"
    );
    // The last line complete but without its newline: everything loads.
    let (run, warnings) = load_text(&full[..full.len() - 1]).unwrap();
    assert_eq!(run.span_count(), 3);
    assert!(warnings.is_empty(), "{warnings:?}");
    // A cut right after a newline leaves only complete lines.
    let (run, warnings) = load_text(&full[..last_start]).unwrap();
    assert_eq!(run.span_count(), 2);
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn cut_inside_the_header_skips_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let full = sample();
    let header_end = full.iter().position(|&b| b == b'\n').unwrap();
    write_text_run(dir.path(), "rank-0.jsonl", &full[..header_end / 2]);
    let err = load_run(&[dir.path()]).unwrap_err();
    assert!(matches!(err, Error::NoCompleteTrace { .. }), "{err}");
    assert!(err.to_string().contains("killed right after"), "{err}");

    // Next to a complete rank, the run loads with warnings.
    let mut other = vec![Record::Header(header("cut", 1, 2, 0))];
    other.push(Record::Span(SpanRecord::new(SpanKind::Step, 0, T0, T0 + 5)));
    std::fs::write(dir.path().join("traces/rank-1.jsonl"), to_bytes(&other)).unwrap();
    let (run, warnings) = load_run(&[dir.path()]).unwrap();
    assert_eq!(run.ranks.len(), 1);
    assert!(warnings
        .iter()
        .any(|w| matches!(w, Warning::NoHeader { path } if path.ends_with("rank-0.jsonl"))));
    assert!(warnings
        .iter()
        .any(|w| matches!(w, Warning::MissingRanks { missing, .. } if missing == &[0])));

    // An empty file too.
    std::fs::write(dir.path().join("traces/rank-0.jsonl"), b"").unwrap();
    let (_, warnings) = load_run(&[dir.path()]).unwrap();
    assert!(matches!(&warnings[0], Warning::NoHeader { .. }));
}

#[test]
fn corrupt_middle_line_names_file_line_and_problem() {
    let text = lines(&[
        MINIMAL_HEADER,
        r#"{"type":"span","kind":"forward","start":1100,"end":1200}"#,
        r#"{"type":"span","kind":"forward",,"start":1}"#,
        r#"{"type":"span","kind":"forward","start":1300,"end":1400}"#,
    ]);
    let err = load_text(&text).unwrap_err();
    assert!(matches!(err, Error::CorruptLine { line: 3, .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("rank-0.jsonl:3"), "{msg}");
    assert!(msg.contains("key must be a string (column 33)"), "{msg}");
    assert!(!msg.contains("line 1 column"), "{msg}");
}

#[test]
fn corrupt_last_line_with_newline_is_an_error() {
    let text = lines(&[MINIMAL_HEADER, r#"{"type":"span","kind":"#]);
    let err = load_text(&text).unwrap_err();
    assert!(matches!(err, Error::CorruptLine { line: 2, .. }), "{err}");
}

#[test]
fn wrong_field_types_and_missing_fields_are_invalid_records() {
    let cases: &[(&str, &str)] = &[
        (
            r#"{"type":"span","kind":"forward","start":"soon","end":1200}"#,
            "invalid type",
        ),
        (
            r#"{"type":"span","kind":"forward","start":1100}"#,
            "\"end\" field is missing",
        ),
        (
            r#"{"type":"span","kind":"forward","start":1300,"end":1200}"#,
            "before it starts",
        ),
        (
            r#"{"type":"span","kind":"forward","start":-5,"end":1200}"#,
            "invalid value",
        ),
        (
            r#"{"type":"span","kind":"user","start":1,"end":2,"args":[1]}"#,
            "must be a JSON object",
        ),
        (
            r#"{"type":"span","kind":"user","start":1,"end":2,"step":4294967295}"#,
            "larger than the maximum",
        ),
        (
            r#"{"type":"counter","name":"x","t":5}"#,
            "\"value\" field is missing",
        ),
        (r#"{"type":"grad_ready","step":1,"t0":5}"#, "offsets_ns"),
        (
            r#"{"type":"buckets","step":1,"reason":"r","buckets":[{"id":0,"params":[9],"bytes":4}]}"#,
            "grad_ready",
        ),
        (
            r#"{"kind":"forward","start":1,"end":2}"#,
            "no \"type\" field",
        ),
        (MINIMAL_HEADER, "second header"),
    ];
    for (i, (line, expected)) in cases.iter().enumerate() {
        let text = lines(&[MINIMAL_HEADER, line, MINIMAL_HEADER]);
        let result = load_text(&text);
        // The bucket case is valid here: the minimal header has no
        // parameter table to check against.
        if expected == &"grad_ready" {
            assert!(result.is_err(), "case {i}: a second header follows");
            continue;
        }
        let err = result.unwrap_err();
        assert!(
            matches!(err, Error::InvalidRecord { line: 2, .. }),
            "case {i}: {err}"
        );
        let msg = err.to_string();
        assert!(msg.contains("rank-0.jsonl:2"), "case {i}: {msg}");
        assert!(msg.contains(expected), "case {i}: {msg}");
    }
}

#[test]
fn bucket_layouts_must_name_known_parameters() {
    let mut text = to_bytes(&[Record::Header(header("b", 0, 1, 0))]);
    text.extend_from_slice(
        br#"{"type":"buckets","step":1,"reason":"rebuild","buckets":[{"id":0,"params":[9],"bytes":4}]}"#,
    );
    text.push(b'\n');
    let err = load_text(&text).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("parameter 9") && msg.contains("4 entries"),
        "{msg}"
    );
}

#[test]
fn header_problems() {
    let span_first = lines(&[r#"{"type":"span","kind":"forward","start":1,"end":2}"#]);
    let err = load_text(&span_first).unwrap_err();
    assert!(matches!(err, Error::MissingHeader { line: 1, .. }), "{err}");
    assert!(err.to_string().contains("\"span\" record"), "{err}");

    let not_ours = lines(&[&MINIMAL_HEADER.replace("ddp-probe-trace", "other-trace")]);
    let err = load_text(&not_ours).unwrap_err();
    assert!(matches!(err, Error::NotATrace { .. }), "{err}");

    let no_run_id = lines(&[&MINIMAL_HEADER.replace(r#""run_id":"m","#, "")]);
    let err = load_text(&no_run_id).unwrap_err();
    assert!(matches!(err, Error::InvalidHeader { .. }), "{err}");
    assert!(err.to_string().contains("run_id"), "{err}");

    let bad_version = lines(&[&MINIMAL_HEADER.replace("\"1.0\"", "\"one\"")]);
    let err = load_text(&bad_version).unwrap_err();
    assert!(err.to_string().contains("major.minor"), "{err}");

    let bad_rank = lines(&[&MINIMAL_HEADER.replace("\"rank\":0", "\"rank\":3")]);
    let err = load_text(&bad_rank).unwrap_err();
    assert!(
        err.to_string().contains("rank 3 is not below world_size 1"),
        "{err}"
    );

    // A DDP process group (`group_ranks`) of ranks outside the world, or without the rank.
    let with_group = |world: u32, group: &str| {
        lines(&[&MINIMAL_HEADER
            .replace("\"world_size\":1", &format!("\"world_size\":{world}"))
            .replace(
                "}",
                &format!(r#","ddp":{{"backend":"gloo","group_ranks":{group}}}}}"#),
            )])
    };
    for (world, group, says) in [
        (4, "[0,4]", "holds rank 4, which is not below world_size 4"),
        (4, "[0,2,2]", "lists rank 2 twice"),
        (4, "[1,3]", "does not hold rank 0"),
    ] {
        let err = load_text(&with_group(world, group)).unwrap_err();
        assert!(matches!(err, Error::InvalidHeader { .. }), "{err}");
        assert!(err.to_string().contains(says), "{group}: {err}");
    }
    assert!(load_text(&with_group(4, "[0,2]")).is_ok());

    let bad_clock = lines(&[&MINIMAL_HEADER.replace("}", r#","clock":"tsc"}"#)]);
    let err = load_text(&bad_clock).unwrap_err();
    assert!(err.to_string().contains("\"tsc\""), "{err}");

    // A text file is not a trace, not a damaged one.
    let garbage = lines(&["not json at all"]);
    let err = load_text(&garbage).unwrap_err();
    assert!(matches!(err, Error::MissingHeader { line: 1, .. }), "{err}");
    assert!(
        err.to_string().contains("is this a ddp-probe trace file?"),
        "{err}"
    );
}

#[test]
fn blank_lines_and_crlf_are_tolerated() {
    let text = format!(
        "\n{MINIMAL_HEADER}\r\n\r\n   \n{}\r\n",
        r#"{"type":"span","kind":"step","start":1100,"end":1200}"#
    );
    let (run, warnings) = load_text(text.as_bytes()).unwrap();
    assert_eq!(run.span_count(), 1);
    assert!(warnings.is_empty());
}

#[test]
fn missing_inputs_say_what_was_expected() {
    let dir = tempfile::tempdir().unwrap();
    let err = load_run(&[dir.path()]).unwrap_err();
    assert!(matches!(err, Error::NoTraces { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("traces/rank-<R>.jsonl"), "{msg}");
    assert!(msg.contains(&dir.path().display().to_string()), "{msg}");

    std::fs::create_dir_all(dir.path().join("traces")).unwrap();
    std::fs::write(dir.path().join("traces/notes.txt"), "x").unwrap();
    let err = load_run(&[dir.path()]).unwrap_err();
    assert!(matches!(err, Error::NoTraces { .. }), "{err}");

    let missing = dir.path().join("nope");
    let err = load_run(&[&missing]).unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    assert!(err.to_string().contains("does not exist"), "{err}");
}

#[test]
fn invalid_utf8_in_a_string_is_an_error_naming_file_and_line() {
    let mut text = to_bytes(&[
        Record::Header(header("utf8", 0, 1, 0)),
        Record::Span(SpanRecord::new(SpanKind::Forward, 0, T0 + 1, T0 + 2).name("ünï ✓")),
    ]);
    // A third line whose name holds a byte that is not UTF-8, then a valid
    // one after it (so it is not the cut-off last line).
    let bad = format!(
        r#"{{"type":"span","kind":"backward","step":0,"start":{},"end":{},"name":"ab"#,
        T0 + 2,
        T0 + 3
    );
    text.extend_from_slice(bad.as_bytes());
    text.extend_from_slice(b"\xff\xfe\"}\n");
    text.extend_from_slice(
        format!(
            r#"{{"type":"span","kind":"optimizer","step":0,"start":{},"end":{}}}"#,
            T0 + 3,
            T0 + 4
        )
        .as_bytes(),
    );
    text.push(b'\n');
    let err = load_text(&text).unwrap_err();
    match &err {
        Error::InvalidRecord {
            path,
            line,
            problem,
            ..
        } => {
            assert!(path.ends_with("rank-0.jsonl"), "{err}");
            assert_eq!(*line, 3, "{err}");
            assert!(problem.contains("UTF-8"), "{err}");
        }
        other => panic!("unexpected error: {other}"),
    }
    assert!(err.to_string().contains("rank-0.jsonl:3"), "{err}");
}

#[test]
fn non_ascii_names_load_through_the_fast_path() {
    let names = [
        "é",
        "ü✓ and more text after it",
        "0123456789abcdef€",
        "日本語",
    ];
    let mut records = vec![Record::Header(header("names", 0, 1, 0))];
    for (i, n) in names.iter().enumerate() {
        let t = T0 + 10 * i as u64;
        records.push(Record::Span(
            SpanRecord::new(SpanKind::User, 0, t, t + 5).name(*n),
        ));
    }
    let (run, _) = load_text(&to_bytes(&records)).unwrap();
    let got: Vec<&str> = run.ranks[0]
        .spans()
        .filter_map(|s| s.name())
        .map(|s| run.str(s))
        .collect();
    assert_eq!(got, names);
}
