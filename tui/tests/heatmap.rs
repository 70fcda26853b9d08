//! The heatmap view (`m`) on a synthetic run of 64 ranks × 20 steps with rank 37 slowed
//! 1.4×: in ASCII mode the screen is snapshot; rank 37's row is the hottest of the arrival
//! lateness map in every steady step column; Enter on its cell opens the timeline at that
//! step with rank 37's step selected; `c` cycles the three metrics; `m` goes back.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use probe::analysis::heatmap::Metric;
use probe::synth::{generate_run, SynthConfig};
use probe::trace::SpanKind;
use probe_tui::{App, Mode, Options, Timeline};

fn key(app: &mut App, code: KeyCode) {
    app.handle_key(KeyEvent::new(code, KeyModifiers::NONE));
}

fn screen(app: &App, w: u16, h: u16) -> Vec<String> {
    use ratatui::buffer::Buffer;
    use ratatui::layout::Rect;
    use ratatui::widgets::Widget;
    let area = Rect::new(0, 0, w, h);
    let mut buf = Buffer::empty(area);
    app.render(area, &mut buf);
    probe_tui::buffer_text(&buf)
}

fn app(ascii: bool) -> App {
    let dir = tempfile::tempdir().unwrap();
    let mut c = SynthConfig::new(64, 20, 3);
    c.straggler = Some((37, 1.4));
    generate_run(&c, dir.path()).unwrap();
    let (run, _) = probe::reader::load_run(&[dir.path()]).unwrap();
    let mut app = App::new(Timeline::new(run), &Options { ascii });
    app.resize(100, 40);
    app
}

#[test]
fn the_lateness_map_shows_the_slow_rank_and_enter_opens_it_in_the_timeline() {
    let mut a = app(true);
    key(&mut a, KeyCode::Char('m'));
    assert_eq!(a.mode(), Mode::Heatmap);
    assert_eq!(a.heat_cursor().metric, Metric::StepTime);
    key(&mut a, KeyCode::Char('c'));
    key(&mut a, KeyCode::Char('c'));
    assert_eq!(a.heat_cursor().metric, Metric::Lateness);
    let s = screen(&a, 100, 40);
    insta::assert_snapshot!("heatmap-lateness-ascii-100x40", s.join("\n") + "\n");
    assert!(
        s.iter().all(|l| l.is_ascii()),
        "ASCII mode draws ASCII only"
    );
    // 64 ranks on 35 rows: two ranks per row, rank 37 on the row of r36. Its cells are the
    // darkest ('@', the top of the scale) in every steady step, and no other row's are.
    let row = |label: &str| {
        s.iter()
            .find(|l| l.starts_with(&format!("{label} ")))
            .cloned()
            .unwrap_or_else(|| panic!("no row {label}:\n{}", s.join("\n")))
    };
    let hot = row("r36");
    let cells: Vec<char> = hot.chars().skip(4).collect();
    assert!(cells[2..20].iter().all(|&c| c == '@' || c == '%'), "{hot}");
    for other in ["r0", "r34", "r38", "r62"] {
        assert!(!row(other).contains('@'), "{}", row(other));
    }
    // The cursor onto rank 37's row, step 10, then Enter.
    for _ in 0..18 {
        key(&mut a, KeyCode::Char('j'));
    }
    for _ in 0..10 {
        key(&mut a, KeyCode::Char('l'));
    }
    let (ranks, _, m) = a.heat_block().expect("a block under the cursor");
    assert_eq!(ranks, 36..38);
    assert_eq!(a.heatmaps().unwrap().ranks[m.rank_index], 37);
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.mode(), Mode::Timeline);
    let step = a.timeline().steps()[a.current_step().unwrap()].number;
    assert_eq!(step, Some(10));
    let span = a.selected_span().expect("the rank's step is selected");
    assert_eq!(span.kind(), SpanKind::Step);
    let rank_of_row = a
        .timeline()
        .rank_of(a.selection().unwrap().row)
        .unwrap()
        .rank();
    assert_eq!(rank_of_row, 37);
    assert!(a
        .message()
        .unwrap()
        .contains("rank 37, step 10: arrival lateness"));
    // Back to the heatmap, and out again.
    key(&mut a, KeyCode::Char('m'));
    assert_eq!(a.mode(), Mode::Heatmap);
    key(&mut a, KeyCode::Esc);
    assert_eq!(a.mode(), Mode::Timeline);
}

#[test]
fn the_unicode_heatmap_draws_every_cell_and_the_cursor() {
    let mut a = app(false);
    key(&mut a, KeyCode::Char('m'));
    let s = screen(&a, 100, 40);
    let text = s.join("\n");
    assert!(
        text.contains("heatmap: step time per rank and step"),
        "{text}"
    );
    assert!(text.contains('◆'), "{text}");
    let cells = s
        .iter()
        .filter(|l| l.starts_with('r') && l.contains('█'))
        .count();
    assert_eq!(cells, 32, "{text}");
}
