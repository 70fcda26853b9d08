//! Keys and mouse events mapped to the [`App`]'s actions.
//!
//! Every binding is listed in [`KEYS`], which the help overlay shows, so the
//! overlay and the handlers cannot drift apart unnoticed: a test checks that
//! every key listed does something.

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton};
use crossterm::event::{MouseEvent, MouseEventKind};

use crate::app::{App, Drag, Mode, Panel};

/// The keys, as the help overlay lists them: (keys, what they do). Short
/// enough for two columns on an 80-column terminal.
pub const KEYS: &[(&str, &str)] = &[
    ("h l", "pan (or Left Right)"),
    ("H L", "pan a screen (S-arrows)"),
    ("+ - =", "zoom in / out"),
    ("wheel", "zoom at the pointer"),
    ("S-wheel", "pan"),
    ("drag", "pan time and lanes"),
    ("j k", "next / prev lane (Down Up)"),
    ("PgDn PgUp", "scroll lanes or panel"),
    ("0 f", "fit the whole run"),
    ("Home End", "run start / end (follow)"),
    ("n ] p [", "next / previous step"),
    ("s", "slowest step (again: next)"),
    ("e", "most exposed comm (again)"),
    ("Tab S-Tab", "next / previous span"),
    ("click", "select span at pointer"),
    ("z Enter", "zoom to the selection"),
    ("b B", "highlight a bucket"),
    ("1 t", "panel: step breakdown"),
    ("2 a", "panel: bucket advice"),
    ("3 x", "panel: explain findings"),
    ("4 w", "panel: warnings, notes"),
    ("m", "heatmap: ranks x steps"),
    ("r", "reload now (live)"),
    ("Esc", "close / clear"),
    ("?", "this help"),
    ("q C-c", "quit"),
];

impl App {
    /// Handles one terminal event.
    pub fn handle_event(&mut self, event: &Event) {
        match event {
            Event::Key(key) if key.kind != KeyEventKind::Release => self.handle_key(*key),
            Event::Mouse(mouse) => self.handle_mouse(*mouse),
            Event::Resize(w, h) => self.resize(*w, *h),
            _ => {}
        }
    }

    /// Handles a key press.
    pub fn handle_key(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        if ctrl && matches!(key.code, KeyCode::Char('c') | KeyCode::Char('q')) {
            self.quit();
            return;
        }
        if self.mode == Mode::Help {
            self.help_key(key);
            return;
        }
        self.message = None;
        if self.mode == Mode::Heatmap {
            self.heat_key(key);
            return;
        }
        match key.code {
            KeyCode::Char('q') => self.quit(),
            KeyCode::Char('?') => self.toggle_help(),
            KeyCode::Esc => self.escape(),
            KeyCode::Left if shift => self.pan(-1.0),
            KeyCode::Right if shift => self.pan(1.0),
            KeyCode::Char('h') | KeyCode::Left => self.pan_left(),
            KeyCode::Char('l') | KeyCode::Right => self.pan_right(),
            KeyCode::Char('H') => self.pan(-1.0),
            KeyCode::Char('L') => self.pan(1.0),
            KeyCode::Char('+') | KeyCode::Char('=') => self.zoom_in(),
            KeyCode::Char('-') | KeyCode::Char('_') => self.zoom_out(),
            KeyCode::Char('j') | KeyCode::Down => self.move_cursor(1),
            KeyCode::Char('k') | KeyCode::Up => self.move_cursor(-1),
            KeyCode::PageDown => self.page(1),
            KeyCode::PageUp => self.page(-1),
            KeyCode::Char('0') | KeyCode::Char('f') => self.fit_all(),
            KeyCode::Home => self.go_start(),
            KeyCode::End | KeyCode::Char('G') => self.go_end(),
            KeyCode::Char('n') | KeyCode::Char(']') => self.step_by(1),
            KeyCode::Char('p') | KeyCode::Char('[') => self.step_by(-1),
            KeyCode::Char('s') => self.jump_slowest(),
            KeyCode::Char('e') => self.jump_exposed(),
            KeyCode::Tab => self.select_next(1),
            KeyCode::BackTab => self.select_next(-1),
            KeyCode::Char('z') | KeyCode::Enter => self.zoom_to_selection(),
            KeyCode::Char('b') => self.cycle_highlight(1),
            KeyCode::Char('B') => self.cycle_highlight(-1),
            KeyCode::Char('1') | KeyCode::Char('t') => self.toggle_panel(Panel::Breakdown),
            KeyCode::Char('2') | KeyCode::Char('a') => self.toggle_panel(Panel::Advice),
            KeyCode::Char('3') | KeyCode::Char('x') => self.toggle_panel(Panel::Explain),
            KeyCode::Char('4') | KeyCode::Char('w') => self.toggle_panel(Panel::Warnings),
            KeyCode::Char('m') => self.toggle_heatmap(),
            KeyCode::Char('r') => self.request_reload(),
            _ => {}
        }
    }

    /// Keys while the help overlay is open: scrolling, else close it.
    fn help_key(&mut self, key: KeyEvent) {
        match key.code {
            KeyCode::Char('j') | KeyCode::Down => self.scroll_panel(1),
            KeyCode::Char('k') | KeyCode::Up => self.scroll_panel(-1),
            KeyCode::PageDown => self.scroll_panel(10),
            KeyCode::PageUp => self.scroll_panel(-10),
            KeyCode::Char('q') => self.quit(),
            _ => self.toggle_help(),
        }
    }

    /// PgDn/PgUp: scrolls the open panel, else the lanes, by a screen.
    fn page(&mut self, dir: isize) {
        let r = self.regions(self.area());
        match r.panel {
            Some(p) => self.scroll_panel(dir * p.height.saturating_sub(3).max(1) as isize),
            None => self.scroll_rows(dir * r.lanes.height.max(1) as isize),
        }
    }

    fn area(&self) -> ratatui::layout::Rect {
        ratatui::layout::Rect::new(0, 0, self.size.0, self.size.1)
    }

    /// Handles a mouse event: the wheel zooms around the pointer (pans with
    /// Shift, scrolls over the panel and the lane labels), a drag pans, a
    /// click selects.
    pub fn handle_mouse(&mut self, m: MouseEvent) {
        let r = self.regions(self.area());
        if r.too_small {
            return;
        }
        let (x, y) = (m.column, m.row);
        let inside = |rect: ratatui::layout::Rect| {
            x >= rect.x && x < rect.right() && y >= rect.y && y < rect.bottom()
        };
        let in_panel = r.panel.is_some_and(inside);
        let in_time = x >= r.lanes.x
            && x < r.lanes.right()
            && y >= r.axis.y
            && y < r.lanes.bottom()
            && !in_panel;
        if self.mode == Mode::Heatmap {
            return;
        }
        if self.mode == Mode::Help {
            match m.kind {
                MouseEventKind::ScrollDown => self.scroll_panel(3),
                MouseEventKind::ScrollUp => self.scroll_panel(-3),
                MouseEventKind::Down(_) => self.toggle_help(),
                _ => {}
            }
            return;
        }
        match m.kind {
            MouseEventKind::ScrollDown | MouseEventKind::ScrollUp => {
                let down = m.kind == MouseEventKind::ScrollDown;
                if m.modifiers.contains(KeyModifiers::SHIFT) && !in_panel {
                    self.pan(if down { 0.1 } else { -0.1 });
                } else if in_panel {
                    self.scroll_panel(if down { 3 } else { -3 });
                } else if in_time {
                    self.wheel_zoom(x - r.lanes.x, !down);
                } else if inside(r.gutter) {
                    self.scroll_rows(if down { 1 } else { -1 });
                }
            }
            MouseEventKind::ScrollLeft => self.pan(-0.1),
            MouseEventKind::ScrollRight => self.pan(0.1),
            MouseEventKind::Down(MouseButton::Left) => {
                self.message = None;
                if in_time && y >= r.lanes.y {
                    self.drag = Some(Drag {
                        x,
                        y,
                        t0: self.t0,
                        scroll: self.scroll,
                        moved: false,
                    });
                } else if in_time && y == r.steps.y {
                    let cols = i64::from(r.lanes.width.max(1));
                    let t = self.col_time(cols, i64::from(x - r.lanes.x));
                    if let Some(i) = self.tl.step_near(t) {
                        self.go_to_step(i);
                    }
                } else if inside(r.gutter) {
                    if let Some(row) = self.row_at(y) {
                        self.set_cursor(row);
                    }
                }
            }
            MouseEventKind::Drag(MouseButton::Left) => {
                if let Some(d) = &mut self.drag {
                    d.moved |= x != d.x || y != d.y;
                    let d = *d;
                    let cols = i64::from(r.lanes.width.max(1));
                    let w = self.t1 - self.t0;
                    let dx = i64::from(x) - i64::from(d.x);
                    let dt = (i128::from(dx) * i128::from(w) / i128::from(cols)) as i64;
                    self.pan_ns(d.t0 - dt - self.t0);
                    let dy = isize::from(d.y as i16) - isize::from(y as i16);
                    let target = d.scroll.saturating_add_signed(dy);
                    let delta = target as isize - self.scroll as isize;
                    self.scroll_rows(delta);
                }
            }
            MouseEventKind::Up(MouseButton::Left) => {
                if let Some(d) = self.drag.take() {
                    if !d.moved {
                        self.click(x, y);
                    }
                }
            }
            _ => {}
        }
    }
}
