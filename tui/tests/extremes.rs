//! Values at the edge of what the loader accepts: the loader refuses what
//! is out of range (a clock offset of `i64::MIN`, a span ending at
//! 2^63 − 1 ns) with a message naming the field, and the viewer draws and
//! navigates the largest values it accepts without a panic. Loader and
//! viewer agree on what is valid.

mod common;

use common::{rank_records, screen, MS, T0};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use probe::reader::{MAX_CLOCK_OFFSET_NS, MAX_TIME_NS};
use probe::trace::{Record, SpanKind, SpanRecord};
use probe_tui::{App, Options, Timeline};

fn load(records: [Vec<Record>; 2]) -> Result<probe::Run, String> {
    probe::reader::load_records(&records)
        .map(|(run, _)| run)
        .map_err(|e| e.to_string())
}

/// Draws, then presses every navigation key a user would, drawing after each.
fn exercise(run: probe::Run, w: u16, h: u16) {
    let mut app = App::new(Timeline::new(run), &Options::default());
    app.resize(w, h);
    screen(&app, w, h);
    for code in [
        KeyCode::Tab,
        KeyCode::Tab,
        KeyCode::Char('e'),
        KeyCode::Char('+'),
        KeyCode::Char('-'),
        KeyCode::Char('0'),
        KeyCode::Char('l'),
        KeyCode::Char('h'),
        KeyCode::Char('j'),
        KeyCode::Char('n'),
        KeyCode::Char('b'),
        KeyCode::End,
        KeyCode::Home,
        KeyCode::BackTab,
    ] {
        app.handle_key(KeyEvent::new(code, KeyModifiers::NONE));
        screen(&app, w, h);
    }
}

fn with_offset(offset: i64) -> [Vec<Record>; 2] {
    let mut r1 = rank_records(1);
    if let Record::Header(h) = &mut r1[0] {
        h.offset_to_rank0_ns = offset;
    }
    [rank_records(0), r1]
}

fn with_late_spans(end: u64) -> [Vec<Record>; 2] {
    let mut r0 = rank_records(0);
    let last = r0.pop().unwrap();
    r0.push(Record::Span(SpanRecord::new(
        SpanKind::User,
        0,
        T0 + MS,
        end,
    )));
    r0.push(Record::Span(SpanRecord::new(
        SpanKind::Collective,
        1,
        end - 5,
        end,
    )));
    r0.push(last);
    [r0, rank_records(1)]
}

#[test]
fn a_clock_offset_of_i64_min_is_refused_at_load() {
    let err = load(with_offset(i64::MIN)).unwrap_err();
    assert!(err.contains("offset_to_rank0_ns"), "{err}");
    // The largest offset accepted (backwards: the rank's times minus 13
    // days still fall after 1970) loads and draws.
    let run = load(with_offset(-MAX_CLOCK_OFFSET_NS)).expect("the largest offset loads");
    exercise(run, 120, 40);
}

#[test]
fn a_span_ending_at_the_last_nanosecond_is_refused_and_the_last_valid_one_drawn() {
    // The record is refused (skipped as a damaged line, named in a warning; `--strict` makes
    // it an error) and the rest of the run draws.
    let (run, warnings) = probe::reader::load_records(&with_late_spans(i64::MAX as u64))
        .expect("the other records load");
    let warned = warnings
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(warned.contains("out of range"), "{warned}");
    assert!(warned.contains("skipped 2 damaged lines"), "{warned}");
    exercise(run, 120, 40);
    let run = load(with_late_spans(MAX_TIME_NS as u64)).expect("2^62 loads");
    exercise(run, 120, 40);
    exercise(load(with_late_spans(MAX_TIME_NS as u64)).unwrap(), 20, 8);
}
