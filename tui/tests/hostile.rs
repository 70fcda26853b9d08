//! Hostile strings in a trace (terminal escapes, carriage returns, markup,
//! bidirectional overrides, names of megabytes) reach the screen only as
//! visible escapes, and do not move anything else on it: rendered to an
//! in-memory buffer and checked cell by cell.

mod common;

use common::{rank_records, screen, MS, T0};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use probe::trace::{LogLevel, LogRecord, Record, SpanKind, SpanRecord};
use probe_tui::{App, Options, Timeline};

const EVIL_HOST: &str = "node0\u{1b}]0;pwned\u{7}<script>alert(1)</script>\u{202e}";
const EVIL_LANE: &str = "\u{202e}evil\r\nlane\u{1b}[1A";

fn huge_name() -> String {
    format!("\u{1b}[31m{}\u{1b}[0m\r", "A".repeat(2 << 20))
}

/// The fixture with hostile strings in the header, a span's name and lane,
/// a log record and the end record.
fn hostile_records(rank: u32) -> Vec<Record> {
    let mut records = rank_records(rank);
    for r in &mut records {
        match r {
            Record::Header(h) => {
                h.hostname = EVIL_HOST.into();
                h.program = Some("tr\u{1b}[5mai\u{9b}n".into());
                h.argv = Some(vec![
                    "train".into(),
                    "--x=\r\u{1b}[2K".into(),
                    "\u{200f}evil".into(),
                ]);
            }
            Record::End(e) => {
                e.message = Some(format!("done\r\u{1b}[2J\u{1b}[H{}", "x".repeat(1 << 20)));
                e.status = "ok\u{1b}[8m".into();
            }
            _ => {}
        }
    }
    let t = |ms: u64| T0 + ms * MS + u64::from(rank) * MS;
    let end = records.pop().expect("an end record");
    records.push(Record::Span(
        SpanRecord::new(SpanKind::User, 0, t(2), t(20))
            .name(huge_name())
            .lane(EVIL_LANE),
    ));
    records.push(Record::Log(LogRecord {
        t: t(30),
        level: LogLevel::Error,
        message: format!(
            "50%\r100%\u{1b}[1A\u{1b}[2K<img src=x onerror=alert(1)>{}",
            "y".repeat(1 << 20)
        ),
    }));
    records.push(end);
    records
}

fn app_of(records: [Vec<Record>; 2], w: u16, h: u16, options: &Options) -> App {
    let (run, _) = probe::reader::load_records(&records).expect("the run loads");
    let mut app = App::new(Timeline::new(run), options);
    app.resize(w, h);
    app
}

fn key(app: &mut App, code: KeyCode) {
    app.handle_key(KeyEvent::new(code, KeyModifiers::NONE));
}

fn press(app: &mut App, s: &str) {
    for c in s.chars() {
        key(app, KeyCode::Char(c));
    }
}

/// No cell of the screen holds a character that must not reach a terminal.
fn assert_clean(lines: &[String], what: &str) {
    for (y, line) in lines.iter().enumerate() {
        if let Some(c) = line.chars().find(|&c| probe::text::needs_escape(c)) {
            panic!("{what}: U+{:04X} on line {y}: {line:?}", c as u32);
        }
    }
}

#[test]
fn hostile_strings_are_escaped_and_leave_the_layout_alone() {
    for (w, h) in [(80u16, 24u16), (160, 48)] {
        let opts = Options::default();
        let mut evil = app_of([hostile_records(0), hostile_records(1)], w, h, &opts);
        let benign = common::app(w, h);
        let s = screen(&evil, w, h);
        assert_clean(&s, "main screen");
        assert_eq!(s.len(), usize::from(h));
        // The lanes the hostile strings are not in are drawn exactly as in
        // the benign fixture: nothing was pushed sideways or down.
        let b = screen(&benign, w, h);
        for label in ["r0 compute", "r1 compute"] {
            let line = |lines: &[String]| lines.iter().find(|l| l.contains(label)).cloned();
            assert_eq!(line(&s), line(&b), "{w}x{h}: the {label} lane moved");
        }
        assert_eq!(s[1], b[1], "{w}x{h}: the time axis moved");

        // Select the hostile span: its lane, then the span.
        let row = evil
            .timeline()
            .rows()
            .iter()
            .position(|r| r.label.contains("evil"))
            .expect("the hostile lane is shown");
        while evil.cursor() < row {
            press(&mut evil, "j");
        }
        key(&mut evil, KeyCode::Tab);
        let s = screen(&evil, w, h);
        assert_clean(&s, "hostile span selected");
        let text = s.join("\n");
        assert!(text.contains("\\u{202e}evil\\r\\nlane"), "{w}x{h}:\n{text}");
        if w == 160 {
            assert!(text.contains("\\x1b[31mAAAA"), "{w}x{h}:\n{text}");
        }
        for panel in ["1", "2", "3", "?"] {
            press(&mut evil, panel);
            assert_clean(&screen(&evil, w, h), &format!("panel {panel}"));
            press(&mut evil, panel);
        }
    }
}

#[test]
fn hostile_strings_in_ascii_mode_are_plain_ascii() {
    let opts = Options { ascii: true };
    let mut evil = app_of([hostile_records(0), hostile_records(1)], 120, 40, &opts);
    key(&mut evil, KeyCode::Tab);
    for state in ["", "1", "2", "3"] {
        press(&mut evil, state);
        for line in screen(&evil, 120, 40) {
            assert!(line.is_ascii(), "{state}: {line:?}");
        }
    }
}
