//! Rendering on an in-memory buffer: the main screens at 80×24 and 160×48
//! against plain-text snapshots in `tests/snapshots/`, the help overlay,
//! the details of a selected span, the panels, ASCII mode and the
//! sanitising of strings taken from the trace.
//!
//! The screens are insta snapshots: after an intended change,
//! `INSTA_UPDATE=always cargo test -p probe-tui --test render` (or
//! `cargo insta review`) rewrites them; review the diff.

mod common;

use common::{app, app_with, rank_records, screen, MS, T0};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use probe_tui::{App, Options, KEYS};

fn key(app: &mut App, code: KeyCode) {
    app.handle_key(KeyEvent::new(code, KeyModifiers::NONE));
}

fn keys(app: &mut App, s: &str) {
    for c in s.chars() {
        key(app, KeyCode::Char(c));
    }
}

/// Compares the screen with the insta snapshot `tests/snapshots/render__<name>.snap`.
fn snapshot(name: &str, lines: &[String]) {
    let text = lines.join("\n") + "\n";
    insta::assert_snapshot!(name, text);
}

fn joined(lines: &[String]) -> String {
    lines.join("\n")
}

#[test]
fn main_screen_80x24() {
    let a = app(80, 24);
    let s = screen(&a, 80, 24);
    snapshot("main-80x24", &s);
    let text = joined(&s);
    for label in [
        "r0 compute",
        "buckets",
        "comm",
        "data",
        "gpu0 s7",
        "r1 compute",
    ] {
        assert!(text.contains(label), "lane label {label} missing:\n{text}");
    }
    assert!(s[1].contains(" ms"), "the axis has units: {}", s[1]);
    assert!(s[2].contains("step 0") || s[2].contains('0'), "{}", s[2]);
    assert!(s[0].contains("run fixture") && s[0].contains("2 ranks"));
}

#[test]
fn main_screen_160x48_with_a_selected_all_reduce() {
    let mut a = app(160, 48);
    // The most exposed step, then the lane below the compute lane twice:
    // the all-reduce of bucket 1 that runs 30 ms after backward.
    keys(&mut a, "ejj");
    for _ in 0..10 {
        let s = a.selected_span().copied();
        if s.is_some_and(|s| {
            s.kind() == probe::trace::SpanKind::Collective && s.bucket() == Some(1)
        }) {
            break;
        }
        key(&mut a, KeyCode::Tab);
    }
    let s = screen(&a, 160, 48);
    snapshot("step2-160x48", &s);
    let text = joined(&s);
    for want in [
        "all_reduce",
        "rank 0 (node0)",
        "step 2",
        "bucket 1",
        "129.0 KiB",
        "seq 6",
        "ring/tcp/float32",
        "algbw",
        "busbw",
        "overlap with compute 0%, exposed 30.0 ms",
        "params fc1.bias, fc1.weight",
    ] {
        assert!(text.contains(want), "details lack {want:?}:\n{text}");
    }
}

#[test]
fn help_overlay_lists_every_key() {
    for (w, h) in [(80, 24), (160, 48)] {
        let mut a = app(w, h);
        keys(&mut a, "?");
        let s = screen(&a, w, h);
        if w == 80 {
            snapshot("help-80x24", &s);
        }
        let text = joined(&s);
        for (k, what) in KEYS {
            assert!(text.contains(k), "{k} missing at {w}x{h}:\n{text}");
            assert!(text.contains(what), "{what} missing at {w}x{h}");
        }
        assert!(text.contains("comm exposed"), "the legend is there");
    }
}

#[test]
fn breakdown_panel_shows_every_rank() {
    let mut a = app(160, 48);
    keys(&mut a, "s1");
    let s = screen(&a, 160, 48);
    snapshot("breakdown-160x48", &s);
    let text = joined(&s);
    for want in [
        "step breakdown",
        "step 1",
        "rank 0",
        "rank 1",
        "data wait",
        "60.0 ms",
        "exposed",
    ] {
        assert!(text.contains(want), "{want} missing:\n{text}");
    }
}

#[test]
fn breakdown_panel_shows_a_part_no_rank_recorded_as_a_dash_not_a_zero() {
    // A PyTorch program under the module: no data wait (its own loader) and no writeback
    // (inside PyTorch's reducer) are recorded on any rank.
    use probe::trace::{Record, SpanKind};
    let without = |rank| -> Vec<Record> {
        rank_records(rank)
            .into_iter()
            .filter(|r| {
                !matches!(r, Record::Span(s) if matches!(s.kind, SpanKind::DataWait | SpanKind::Writeback))
            })
            .collect()
    };
    let (run, _) = probe::reader::load_records(&[without(0), without(1)]).expect("loads");
    let mut a = App::new(probe_tui::Timeline::new(run), &Options::default());
    a.resize(160, 48);
    keys(&mut a, "s1");
    let s = screen(&a, 160, 48);
    let row = |label: &str| {
        s.iter()
            .find(|l| l.contains(label))
            .cloned()
            .unwrap_or_default()
    };
    for label in ["data wait", "writeback"] {
        let line = row(label);
        let cells: Vec<&str> = line
            .split_once(label)
            .map(|(_, rest)| rest.split_whitespace().take(2).collect())
            .unwrap_or_default();
        assert_eq!(cells, ["-", "-"], "{label}: {line}\n{}", joined(&s));
    }
    assert!(
        joined(&s).contains("-: not recorded (data wait, writeback)"),
        "{}",
        joined(&s)
    );
    // The parts that were recorded keep their figures.
    assert!(row("forward").contains(" ms"), "{}", row("forward"));
}

#[test]
fn advice_and_explain_panels_render() {
    let mut a = app(120, 40);
    keys(&mut a, "2");
    let text = joined(&screen(&a, 120, 40));
    assert!(text.contains("bucket_cap_mb"), "{text}");
    keys(&mut a, "3");
    let text = joined(&screen(&a, 120, 40));
    assert!(text.contains("explain"), "{text}");
    assert!(
        text.contains("no run directory"),
        "the fixture has no run directory to explain:\n{text}"
    );
}

#[test]
fn explain_is_read_on_its_own_thread_while_the_view_keeps_answering() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("rank1.log"),
        "RuntimeError: CUDA error: an illegal memory access was encountered\n",
    )
    .unwrap();
    let mut a = app(120, 40);
    a.set_sources(vec![dir.path().join("rank1.log")]);
    keys(&mut a, "3");
    // The key returned before the report was read; the panel says what is going on and the
    // timeline still zooms.
    let before = a.view();
    keys(&mut a, "+");
    assert_ne!(a.view(), before);
    a.wait_for_background();
    assert!(!a.poll_background(), "the report was taken already");
    let text = joined(&screen(&a, 120, 40));
    assert!(text.contains("cuda_error"), "{text}");
}

#[test]
fn strings_from_the_trace_are_sanitised() {
    let mut a = app(160, 48);
    // The custom lane (named with an escape sequence) of rank 1.
    let row = a
        .timeline()
        .rows()
        .iter()
        .position(|r| r.label.contains("loader"))
        .unwrap();
    for _ in 0..row {
        keys(&mut a, "j");
    }
    key(&mut a, KeyCode::Tab);
    let s = screen(&a, 160, 48);
    let text = joined(&s);
    assert!(text.contains("loader\\x1b[31m"), "{text}");
    assert!(text.contains("tokenize\\x1b[2J"), "{text}");
    for line in &s {
        assert!(
            !line.chars().any(char::is_control),
            "control char in {line:?}"
        );
    }
    // The kernel's name carries a BEL.
    keys(&mut a, "0");
    let row = a
        .timeline()
        .rows()
        .iter()
        .position(|r| r.label == "gpu0 s7")
        .unwrap();
    while a.cursor() > row {
        keys(&mut a, "k");
    }
    key(&mut a, KeyCode::Tab);
    let text = joined(&screen(&a, 160, 48));
    assert!(text.contains("fwd_gemm\\x07"), "{text}");
}

#[test]
fn ascii_mode_draws_only_ascii() {
    let opts = Options { ascii: true };
    for (w, h) in [(80, 24), (160, 48)] {
        let mut a = app_with(w, h, &opts);
        let check = |a: &App, what: &str| {
            for line in screen(a, w, h) {
                assert!(line.is_ascii(), "{what} at {w}x{h}: {line:?}");
            }
        };
        check(&a, "main screen");
        if w == 80 {
            snapshot("ascii-80x24", &screen(&a, w, h));
        }
        keys(&mut a, "e");
        key(&mut a, KeyCode::Tab);
        check(&a, "selection");
        keys(&mut a, "b");
        check(&a, "bucket highlight");
        for p in ["1", "2", "3"] {
            keys(&mut a, p);
            check(&a, "panel");
        }
        keys(&mut a, "?");
        check(&a, "help");
    }
}

/// The fixture with rank 1 hung in step 2: its data wait and forward recorded, the all-reduce
/// of bucket 0 queued (seq 5) at 276 ms, then nothing, and no end record.
fn hung_app(w: u16, h: u16) -> App {
    use probe::trace::{InstantRecord, Record, SpanKind};
    let mut r1: Vec<Record> = rank_records(1)
        .into_iter()
        .filter(|r| match r {
            Record::Span(s) => s.step.is_none_or(|st| {
                st < 2 || matches!(s.kind, SpanKind::DataWait | SpanKind::Forward)
            }),
            Record::End(_) => false,
            _ => true,
        })
        .collect();
    let serde_json::Value::Object(args) = serde_json::json!(
        {"seq": 5, "op": "all_reduce", "bucket": 0, "bytes": 10280}
    ) else {
        unreachable!()
    };
    r1.push(Record::Instant(InstantRecord {
        name: "collective_queued".into(),
        t: T0 + 276 * MS,
        step: Some(2),
        args: Some(Box::new(args)),
    }));
    let (run, _) = probe::reader::load_records(&[rank_records(0), r1]).expect("loads");
    let mut app = App::new(probe_tui::Timeline::new(run), &Options::default());
    app.resize(w, h);
    app
}

#[test]
fn a_hung_rank_s_open_phase_and_collective_are_drawn_to_the_end_of_the_recording() {
    let a = hung_app(200, 30);
    let s = screen(&a, 200, 30);
    snapshot("hung-200x30", &s);
    let row = |label: &str, nth: usize| {
        s.iter()
            .filter(|l| l.contains(label))
            .nth(nth)
            .cloned()
            .unwrap_or_else(|| panic!("no row {label} #{nth}:\n{}", joined(&s)))
    };
    // Rank 1's comm row: the queued all-reduce, open to the last column (the recording ends
    // with rank 0's end record at 345 ms).
    let comm = row(" comm ", 1);
    assert!(
        comm.contains("all_reduce seq 5") && comm.contains("unfinished"),
        "{comm}"
    );
    assert!(comm.trim_end().ends_with('\u{254c}'), "{comm}");
    // Its compute row: the phase after forward, backward, open too; rank 0 has nothing open.
    let compute = row("r1 compute", 0);
    assert!(
        compute.contains("backward of step 2 unfinished"),
        "{compute}"
    );
    assert!(!row("r0 compute", 0).contains("unfinished"));
    assert!(
        s.iter()
            .any(|l| l.contains("fwd") && l.contains("\u{254c} unfinished")),
        "the legend names it"
    );
}

#[test]
fn a_one_rank_collective_shows_algbw_and_no_busbw() {
    // One rank moves nothing across a bus (nccl-tests' factor 2(n-1)/n is 0): the details
    // give algbw only, as the summary and the report do.
    let mut records = rank_records(0);
    match records.first_mut() {
        Some(probe::trace::Record::Header(h)) => h.world_size = 1,
        other => panic!("the fixture starts with its header: {other:?}"),
    }
    let (run, _warnings) = probe::reader::load_records(&[records]).expect("one rank loads");
    let mut a = App::new(probe_tui::Timeline::new(run), &Options::default());
    a.resize(160, 48);
    keys(&mut a, "ejj");
    for _ in 0..10 {
        if a.selected_span()
            .is_some_and(|s| s.kind() == probe::trace::SpanKind::Collective)
        {
            break;
        }
        key(&mut a, KeyCode::Tab);
    }
    let text = joined(&screen(&a, 160, 48));
    assert!(
        text.contains("all_reduce"),
        "no collective selected:\n{text}"
    );
    assert!(text.contains("algbw"), "{text}");
    assert!(text.contains("(one rank: no busbw)"), "{text}");
    assert!(!text.contains("busbw 0"), "{text}");
}
