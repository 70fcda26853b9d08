//! Input handling without a terminal: zoom, pan, selection, step jumps,
//! bucket highlight, panels, resize and the mouse, on the hand-made run of
//! `common`.

mod common;

use common::{app, at_ms, MS};
use crossterm::event::{
    Event, KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};
use probe::model::{Run, Strings};
use probe::trace::SpanKind;
use probe_tui::{App, Follow, LiveStatus, Mode, Options, Panel, Timeline};

fn key(app: &mut App, code: KeyCode) {
    app.handle_key(KeyEvent::new(code, KeyModifiers::NONE));
}

fn ch(app: &mut App, c: char) {
    key(app, KeyCode::Char(c));
}

fn mouse(app: &mut App, kind: MouseEventKind, column: u16, row: u16) {
    app.handle_mouse(MouseEvent {
        kind,
        column,
        row,
        modifiers: KeyModifiers::NONE,
    });
}

fn mid(app: &App) -> i64 {
    let (a, b) = app.view();
    a + (b - a) / 2
}

fn width(app: &App) -> i64 {
    let (a, b) = app.view();
    b - a
}

fn selected_kind(app: &App) -> Option<SpanKind> {
    app.selected_span().map(|s| s.kind())
}

fn step_number(app: &App) -> Option<u64> {
    app.current_step()
        .and_then(|i| app.timeline().steps()[i].number)
}

#[test]
fn fit_all_shows_the_whole_run() {
    let mut a = app(120, 40);
    let (t0, t1) = a.view();
    assert!(t0 <= a.timeline().origin() && t1 >= a.timeline().end());
    ch(&mut a, '+');
    ch(&mut a, '0');
    assert_eq!(a.view(), (t0, t1));
    ch(&mut a, '+');
    ch(&mut a, 'f');
    assert_eq!(a.view(), (t0, t1));
}

#[test]
fn keyboard_zoom_stays_centred() {
    let mut a = app(120, 40);
    let centre = mid(&a);
    let w = width(&a);
    ch(&mut a, '+');
    assert!((mid(&a) - centre).abs() <= 1, "{} vs {centre}", mid(&a));
    assert!(width(&a) < w * 7 / 10);
    ch(&mut a, '=');
    ch(&mut a, '-');
    ch(&mut a, '-');
    assert!((mid(&a) - centre).abs() <= 2);
    assert!((width(&a) - w).abs() <= 2, "{} vs {w}", width(&a));
}

#[test]
fn keyboard_zoom_keeps_the_selection_in_place() {
    let mut a = app(120, 40);
    ch(&mut a, 'n');
    for _ in 0..3 {
        key(&mut a, KeyCode::Tab);
    }
    assert_eq!(selected_kind(&a), Some(SpanKind::Backward));
    let s = *a.selected_span().unwrap();
    let anchor = s.start() + s.duration() / 2;
    let col = a.column_of_time(anchor);
    ch(&mut a, '+');
    ch(&mut a, '+');
    assert!((a.column_of_time(anchor) - col).abs() <= 1);
}

#[test]
fn wheel_zooms_around_the_pointer() {
    let mut a = app(120, 40);
    let r = a.regions(ratatui::layout::Rect::new(0, 0, 120, 40));
    let x = r.lanes.x + r.lanes.width / 4;
    let t = a.time_at_column(x);
    let w = width(&a);
    mouse(&mut a, MouseEventKind::ScrollUp, x, r.lanes.y + 1);
    assert!(width(&a) < w);
    let ns_per_col = width(&a) / i64::from(r.lanes.width);
    assert!((a.time_at_column(x) - t).abs() <= ns_per_col + 1);
    mouse(&mut a, MouseEventKind::ScrollDown, x, r.lanes.y + 1);
    assert!((width(&a) - w).abs() <= 2);
    // With Shift the wheel pans instead.
    ch(&mut a, '+');
    let (t0, w) = (a.view().0, width(&a));
    a.handle_mouse(MouseEvent {
        kind: MouseEventKind::ScrollDown,
        column: x,
        row: r.lanes.y + 1,
        modifiers: KeyModifiers::SHIFT,
    });
    assert_eq!(width(&a), w);
    assert!(a.view().0 > t0);
}

#[test]
fn pan_stops_at_the_bounds() {
    let mut a = app(120, 40);
    for _ in 0..4 {
        ch(&mut a, '+');
    }
    let w = width(&a);
    for _ in 0..200 {
        ch(&mut a, 'h');
    }
    let (t0, _) = a.view();
    assert_eq!(
        t0,
        a.timeline().origin(),
        "the view stops at the start of the run"
    );
    key(&mut a, KeyCode::Left);
    assert_eq!(a.view().0, t0, "panning past the start moves nothing");
    assert_eq!(width(&a), w, "the width is kept");
    for _ in 0..200 {
        key(&mut a, KeyCode::Right);
    }
    let (_, t1) = a.view();
    assert!(t1 > a.timeline().end());
    ch(&mut a, 'L');
    assert_eq!(a.view().1, t1);
    assert_eq!(width(&a), w);
    ch(&mut a, 'H');
    assert_eq!(a.view().1, t1 - w);
}

#[test]
fn zoom_is_bounded_both_ways() {
    let mut a = app(120, 40);
    let all = width(&a);
    for _ in 0..20 {
        ch(&mut a, '-');
    }
    assert_eq!(width(&a), all);
    for _ in 0..200 {
        ch(&mut a, '+');
    }
    let w = width(&a);
    assert!((100..10_000).contains(&w), "{w}");
    ch(&mut a, '+');
    assert_eq!(width(&a), w);
}

#[test]
fn tab_walks_the_spans_of_the_lane() {
    let mut a = app(120, 40);
    assert_eq!(a.cursor(), 0);
    key(&mut a, KeyCode::Tab);
    assert_eq!(selected_kind(&a), Some(SpanKind::Step));
    key(&mut a, KeyCode::Tab);
    assert_eq!(selected_kind(&a), Some(SpanKind::Forward));
    key(&mut a, KeyCode::Tab);
    assert_eq!(selected_kind(&a), Some(SpanKind::Backward));
    key(&mut a, KeyCode::BackTab);
    assert_eq!(selected_kind(&a), Some(SpanKind::Forward));
    assert_eq!(
        step_number(&a),
        Some(0),
        "the current step follows the selection"
    );
    key(&mut a, KeyCode::Esc);
    assert_eq!(a.selection(), None);
}

#[test]
fn tab_brings_the_selection_on_screen() {
    let mut a = app(120, 40);
    ch(&mut a, 'n');
    for _ in 0..5 {
        ch(&mut a, '+');
    }
    for _ in 0..12 {
        key(&mut a, KeyCode::Tab);
        let s = *a.selected_span().unwrap();
        let (t0, t1) = a.view();
        assert!(s.end() > t0 && s.start() < t1, "selected span off screen");
    }
}

#[test]
fn arrows_move_the_selection_across_lanes() {
    let mut a = app(120, 40);
    ch(&mut a, 'n');
    for _ in 0..3 {
        key(&mut a, KeyCode::Tab);
    }
    assert_eq!(selected_kind(&a), Some(SpanKind::Backward));
    key(&mut a, KeyCode::Down);
    assert_eq!(a.cursor(), 1);
    assert_eq!(selected_kind(&a), Some(SpanKind::BucketReady));
    ch(&mut a, 'j');
    assert_eq!(selected_kind(&a), Some(SpanKind::Collective));
    ch(&mut a, 'k');
    ch(&mut a, 'k');
    assert_eq!(a.cursor(), 0);
    assert_eq!(selected_kind(&a), Some(SpanKind::Backward));
    key(&mut a, KeyCode::Up);
    assert_eq!(a.cursor(), 0, "the cursor stops at the first lane");
}

#[test]
fn slowest_step_and_most_exposed_step() {
    let mut a = app(120, 40);
    ch(&mut a, 's');
    assert_eq!(step_number(&a), Some(1), "step 1 waits 55 ms for data");
    let st = &a.timeline().steps()[a.current_step().unwrap()];
    let (t0, t1) = a.view();
    assert!(t0 <= st.start && t1 >= st.end, "the view shows the step");
    assert_eq!(st.time_ns, 141 * MS as i64);
    assert_eq!(selected_kind(&a), Some(SpanKind::Step));
    assert_eq!(a.selected_span().unwrap().step(), Some(1));
    assert!(a.message().unwrap().contains("step 1"));
    ch(&mut a, 's');
    assert_eq!(step_number(&a), Some(2), "s again: the next slowest");
    ch(&mut a, 's');
    assert_eq!(step_number(&a), Some(1), "warm-up step 0 is left out");

    ch(&mut a, 'e');
    assert_eq!(
        step_number(&a),
        Some(2),
        "step 2's all-reduce runs 30 ms after backward"
    );
    let st = &a.timeline().steps()[a.current_step().unwrap()];
    assert_eq!(st.exposed_ns, 30 * MS as i64);
}

#[test]
fn next_and_previous_step() {
    let mut a = app(120, 40);
    ch(&mut a, 'n');
    assert_eq!(step_number(&a), Some(0));
    ch(&mut a, ']');
    assert_eq!(step_number(&a), Some(1));
    ch(&mut a, 'n');
    assert_eq!(step_number(&a), Some(2));
    ch(&mut a, 'n');
    assert_eq!(step_number(&a), Some(2));
    assert!(a.message().unwrap().contains("last step"));
    ch(&mut a, 'p');
    assert_eq!(step_number(&a), Some(1));
    ch(&mut a, '[');
    assert_eq!(step_number(&a), Some(0));
    // After fitting the run, p starts from the last step on screen.
    ch(&mut a, '0');
    ch(&mut a, 'z');
    ch(&mut a, '0');
    key(&mut a, KeyCode::End);
    ch(&mut a, 'p');
    assert_eq!(
        step_number(&a),
        Some(0),
        "step 0 is still current and on screen"
    );
}

#[test]
fn resize_keeps_the_cursor_on_screen() {
    let mut a = app(120, 40);
    let rows = a.timeline().rows().len();
    assert_eq!(rows, 10);
    a.resize(80, 12);
    for _ in 0..rows {
        ch(&mut a, 'j');
    }
    assert_eq!(a.cursor(), rows - 1);
    let r = a.regions(ratatui::layout::Rect::new(0, 0, 80, 12));
    let visible = usize::from(r.lanes.height);
    assert!(a.scroll() + visible > a.cursor() && a.scroll() <= a.cursor());
    a.handle_event(&Event::Resize(160, 48));
    assert_eq!(a.size(), (160, 48));
    assert_eq!(a.scroll(), 0, "everything fits again");
    a.resize(20, 5);
    let text = common::screen(&a, 20, 5).join("\n");
    assert!(text.contains("too small"), "{text}");
    a.resize(0, 0);
    let _ = common::screen(&a, 1, 1);
}

#[test]
fn click_selects_and_drag_pans() {
    let mut a = app(120, 40);
    ch(&mut a, 'n');
    let r = a.regions(ratatui::layout::Rect::new(0, 0, 120, 40));
    let x = a.column_of_time(at_ms(45.0)) as u16;
    let slots = a.row_slots(r.lanes);
    let y = slots[0].y; // r0 compute
    mouse(&mut a, MouseEventKind::Down(MouseButton::Left), x, y);
    mouse(&mut a, MouseEventKind::Up(MouseButton::Left), x, y);
    assert_eq!(selected_kind(&a), Some(SpanKind::Backward));
    // The comm lane during forward: nothing there, the selection goes.
    let x = a.column_of_time(at_ms(20.0)) as u16;
    let y2 = slots[2].y + slots[2].height - 1; // r0 comm, its lower line
    mouse(&mut a, MouseEventKind::Down(MouseButton::Left), x, y2);
    mouse(&mut a, MouseEventKind::Up(MouseButton::Left), x, y2);
    assert_eq!(a.selection(), None);
    assert_eq!(a.cursor(), 2);

    let (t0, _) = a.view();
    let w = width(&a);
    mouse(&mut a, MouseEventKind::Down(MouseButton::Left), 60, y);
    mouse(&mut a, MouseEventKind::Drag(MouseButton::Left), 50, y);
    mouse(&mut a, MouseEventKind::Up(MouseButton::Left), 50, y);
    let moved = a.view().0 - t0;
    let expect = w * 10 / i64::from(r.lanes.width);
    assert!((moved - expect).abs() <= 1, "{moved} vs {expect}");
    assert_eq!(width(&a), w);
    assert_eq!(a.selection(), None, "a drag does not select");
}

#[test]
fn bucket_highlight_cycles_and_clears() {
    let mut a = app(120, 40);
    ch(&mut a, 'b');
    assert_eq!(a.highlighted_bucket(), Some(0));
    ch(&mut a, 'b');
    assert_eq!(a.highlighted_bucket(), Some(1));
    ch(&mut a, 'b');
    assert_eq!(a.highlighted_bucket(), Some(0));
    ch(&mut a, 'B');
    assert_eq!(a.highlighted_bucket(), Some(1));
    key(&mut a, KeyCode::Esc);
    assert_eq!(a.highlighted_bucket(), None);
    // With a collective of bucket 1 selected, b highlights bucket 1.
    ch(&mut a, 'e');
    ch(&mut a, 'j');
    ch(&mut a, 'j');
    let b = a.selected_span().and_then(|s| s.bucket());
    assert!(b.is_some(), "a span with a bucket is selected");
    ch(&mut a, 'b');
    assert_eq!(a.highlighted_bucket(), b);
    assert!(a.message().unwrap().contains("skew"), "{:?}", a.message());
}

#[test]
fn panels_help_and_escape() {
    let mut a = app(120, 40);
    ch(&mut a, '1');
    assert_eq!(a.panel(), Some(Panel::Breakdown));
    ch(&mut a, 't');
    assert_eq!(a.panel(), None);
    ch(&mut a, '2');
    assert_eq!(a.panel(), Some(Panel::Advice));
    ch(&mut a, 'x');
    assert_eq!(a.panel(), Some(Panel::Explain));
    ch(&mut a, '?');
    assert_eq!(a.mode(), Mode::Help);
    ch(&mut a, 'j');
    assert_eq!(a.mode(), Mode::Help, "j scrolls the help");
    ch(&mut a, 'w');
    assert_eq!(a.mode(), Mode::Timeline, "any other key closes it");
    key(&mut a, KeyCode::Tab);
    ch(&mut a, 'b');
    key(&mut a, KeyCode::Esc);
    assert!(a.selection().is_none() && a.highlighted_bucket().is_some());
    key(&mut a, KeyCode::Esc);
    assert!(a.highlighted_bucket().is_none() && a.panel().is_some());
    key(&mut a, KeyCode::Esc);
    assert_eq!(a.panel(), None);
    assert!(!a.should_quit());
    ch(&mut a, 'q');
    assert!(a.should_quit());
    let mut b = app(80, 24);
    b.handle_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    assert!(b.should_quit());
}

#[test]
fn live_reload_keeps_selection_and_follows() {
    let mut a = app(120, 40);
    a.set_live(LiveStatus {
        text: "reloading".into(),
        ..LiveStatus::default()
    });
    assert_eq!(a.follow(), Follow::All);
    ch(&mut a, 's');
    assert_eq!(a.follow(), Follow::Off, "jumping stops following");
    key(&mut a, KeyCode::Tab);
    let before = *a.selected_span().unwrap();
    let view = a.view();
    a.replace_timeline(Timeline::new(common::run()));
    assert_eq!(*a.selected_span().unwrap(), before);
    assert_eq!(a.view(), view);
    key(&mut a, KeyCode::End);
    assert_eq!(a.follow(), Follow::Latest);
    ch(&mut a, 'r');
    assert!(a.take_reload_request());
    assert!(!a.take_reload_request());
}

fn empty_run() -> Run {
    Run {
        run_id: "empty".into(),
        world_size: 1,
        ranks: Vec::new(),
        strings: Strings::new(),
    }
}

/// Every key and a few mouse events on `app` at several sizes: nothing
/// panics and every frame draws.
fn press_everything(mut a: App) {
    let keys: Vec<KeyCode> = "hlHLjk+-=_0fnp[]sezbB123tax?qr"
        .chars()
        .map(KeyCode::Char)
        .chain([
            KeyCode::Tab,
            KeyCode::BackTab,
            KeyCode::Left,
            KeyCode::Right,
            KeyCode::Up,
            KeyCode::Down,
            KeyCode::PageUp,
            KeyCode::PageDown,
            KeyCode::Home,
            KeyCode::End,
            KeyCode::Enter,
            KeyCode::Esc,
        ])
        .collect();
    for (w, h) in [(80, 24), (160, 48), (40, 10), (200, 12)] {
        a.resize(w, h);
        for k in &keys {
            if *k == KeyCode::Char('q') {
                continue;
            }
            key(&mut a, *k);
            let _ = common::screen(&a, w, h);
            if a.mode() == Mode::Help {
                key(&mut a, KeyCode::Esc);
            }
        }
        for (x, y) in [(w / 2, h / 2), (0, 0), (w - 1, h - 1), (w / 2, 2)] {
            mouse(&mut a, MouseEventKind::ScrollUp, x, y);
            mouse(&mut a, MouseEventKind::Down(MouseButton::Left), x, y);
            mouse(&mut a, MouseEventKind::Drag(MouseButton::Left), 0, 0);
            mouse(&mut a, MouseEventKind::Up(MouseButton::Left), 0, 0);
            mouse(&mut a, MouseEventKind::Down(MouseButton::Left), x, y);
            mouse(&mut a, MouseEventKind::Up(MouseButton::Left), x, y);
            let _ = common::screen(&a, w, h);
        }
    }
}

#[test]
fn an_empty_run_never_panics() {
    let a = App::new(Timeline::new(empty_run()), &Options::default());
    let text = common::screen(&a, 80, 24).join("\n");
    assert!(text.contains("no spans recorded"), "{text}");
    press_everything(a);
}

#[test]
fn the_fixture_never_panics() {
    press_everything(app(80, 24));
    press_everything(common::app_with(80, 24, &Options { ascii: true }));
}

#[test]
fn one_rank_with_zero_length_spans_never_panics() {
    use probe::trace::{Header, Record, SpanRecord};
    let t = common::T0;
    let mut h = Header::new("zero", 0, 1);
    h.start_ns = t;
    let mut recs = vec![Record::Header(h)];
    for k in 0..5u64 {
        recs.push(Record::Span(SpanRecord::new(
            SpanKind::Step,
            k,
            t + k,
            t + k,
        )));
        recs.push(Record::Span(SpanRecord::new(
            SpanKind::Forward,
            k,
            t + k,
            t + k,
        )));
        recs.push(Record::Span(
            SpanRecord::new(SpanKind::Collective, k, t + k, t + k).bucket(0),
        ));
    }
    let (run, _) = probe::reader::load_records(&[recs]).unwrap();
    let a = App::new(Timeline::new(run), &Options::default());
    let text = common::screen(&a, 80, 24).join("\n");
    assert!(text.contains("r0 compute"), "{text}");
    press_everything(a);
}

/// The summary's warnings in the viewer: a count in the title, the panel on `w` (or `4`), and
/// what was checked when there is none.
#[test]
fn the_summary_warnings_are_counted_in_the_title_and_shown_on_w() {
    use probe::trace::{LogLevel, LogRecord, Record};
    let said = "the training DataLoader's DistributedSampler began another pass with the epoch \
                of the pass before (0): call `sampler.set_epoch(epoch)`";
    let mut rank1 = common::rank_records(1);
    let at = rank1.len() - 1;
    rank1.insert(
        at,
        Record::Log(LogRecord {
            t: common::T0 + 200 * MS,
            level: LogLevel::Warn,
            message: said.to_owned(),
        }),
    );
    let (run, _) =
        probe::reader::load_records(&[common::rank_records(0), rank1]).expect("fixture loads");
    let (w, h) = (120, 40);
    let mut a = App::new(Timeline::new(run), &Options::default());
    a.resize(w, h);
    let title = &common::screen(&a, w, h)[0];
    assert!(title.contains("ddp-probe · 1 warning (w) · "), "{title}");
    ch(&mut a, 'w');
    assert_eq!(a.panel(), Some(Panel::Warnings));
    let text = common::screen(&a, w, h).join("\n");
    assert!(
        text.contains("warning: rank 1: the training DataLoader's"),
        "{text}"
    );
    assert!(text.contains("set_epoch(epoch)"), "{text}");
    ch(&mut a, '4');
    assert_eq!(a.panel(), None);

    // The fixture as it is has none: no count, and the panel says what was checked.
    let mut a = app(w, h);
    assert!(!common::screen(&a, w, h)[0].contains("warning"));
    ch(&mut a, '4');
    let text = common::screen(&a, w, h).join("\n");
    assert!(text.contains("no warnings: the checks of"), "{text}");

    // The summary's notes follow the warnings (here: another DDP model, unrecorded).
    let serde_json::Value::Object(args) =
        serde_json::json!({"module": "Discriminator", "parameters": 321})
    else {
        unreachable!()
    };
    let mut rank0 = common::rank_records(0);
    let at = rank0.len() - 1;
    rank0.insert(
        at,
        Record::Instant(probe::trace::InstantRecord {
            name: "unrecorded_ddp_model".into(),
            t: common::T0 + MS,
            step: None,
            args: Some(Box::new(args)),
        }),
    );
    let (run, _) =
        probe::reader::load_records(&[rank0, common::rank_records(1)]).expect("fixture loads");
    let mut a = App::new(Timeline::new(run), &Options::default());
    a.resize(w, h);
    ch(&mut a, 'w');
    let text = common::screen(&a, w, h).join("\n");
    assert!(
        text.contains("no warnings: the checks of")
            && text.contains("note: the program also trains another"),
        "{text}"
    );
}
