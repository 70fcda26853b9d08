//! Entry point of the fuzz target `tui_draw` (in the repository's `fuzz/` folder) and of its
//! regression test; hidden from the documentation and not a stable API.
//!
//! [`draw_trace`]: any bytes as a trace file; whatever the loader accepts, the viewer draws at a wide, a narrow and the smallest size and through every
//! navigation key a user would press, without a panic, and every drawn cell stays free of
//! raw control characters.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;

use crate::{buffer_text, App, Options, Timeline, MIN_HEIGHT, MIN_WIDTH};

/// Loads `data` as a trace file and, when that works, draws and navigates the run. Returns
/// whether it loaded (the regression test checks that its seeds are drawn).
pub fn draw_trace(data: &[u8]) -> bool {
    let inputs = vec![(std::path::PathBuf::from("fuzz/rank-0.jsonl"), data)];
    let Ok((run, _)) = probe::reader::load_from_readers(inputs) else {
        return false;
    };
    for (ascii, (w, h)) in [
        (false, (120, 40)),
        (true, (MIN_WIDTH, MIN_HEIGHT)),
        (false, (60, 20)),
    ] {
        let options = Options { ascii };
        let mut app = App::new(Timeline::new(run.clone()), &options);
        app.resize(w, h);
        draw(&app, w, h);
        for code in [
            KeyCode::Tab,
            KeyCode::Char('e'),
            KeyCode::Char('s'),
            KeyCode::Char('+'),
            KeyCode::Char('+'),
            KeyCode::Char('l'),
            KeyCode::Char('j'),
            KeyCode::Char('n'),
            KeyCode::Char('b'),
            KeyCode::Enter,
            KeyCode::Char('-'),
            KeyCode::End,
            KeyCode::Home,
            KeyCode::BackTab,
            KeyCode::Char('?'),
        ] {
            app.handle_key(KeyEvent::new(code, KeyModifiers::NONE));
            draw(&app, w, h);
        }
    }
    true
}

/// Draws `app` into a `w` x `h` buffer and checks every cell.
fn draw(app: &App, w: u16, h: u16) {
    let area = Rect::new(0, 0, w, h);
    let mut buf = Buffer::empty(area);
    app.render(area, &mut buf);
    for line in buffer_text(&buf) {
        if let Some(c) = line.chars().find(|c| c.is_control()) {
            panic!("the viewer drew U+{:04X}: {line:?}", c as u32);
        }
    }
}
