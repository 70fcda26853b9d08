//! The heatmap view (`m`): ranks down, steps across, one of three metrics
//! ([`probe::analysis::heatmap`]: step time, exposed communication, arrival lateness) as
//! colour, for jobs of hundreds of ranks. When the grid is larger than the screen each cell
//! shows a block of ranks × steps, the largest value of the block, so a slow rank is never
//! averaged away. `c` cycles the metric, the arrow keys (or h j k l) move the cursor, Enter
//! opens the block's largest cell in the timeline (its step fitted, its rank's step
//! selected), `m` or Esc goes back.
//!
//! The heatmaps are computed when the view is first opened (one pass over the collectives;
//! the step breakdowns are the timeline's own) and dropped when a live run reloads. A frame
//! reads every cell once (`O(ranks × steps)`): 1,024 ranks × 200 steps is measured in
//! `benches/frame.rs`.

use crossterm::event::{KeyCode, KeyEvent};
use probe::analysis::heatmap::{heatmaps, BlockMax, Heatmaps, Metric};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};

use crate::app::{App, HeatCursor, Mode};
use crate::format;
use crate::theme;

/// Colours from low to high (256-colour palette: dark blue through green and yellow to red).
const RAMP: [u8; 9] = [17, 18, 25, 31, 37, 71, 142, 214, 196];
/// ASCII mode: characters from low to high.
const ASCII_RAMP: [char; 9] = ['.', ':', '-', '=', '+', '*', '#', '%', '@'];

/// How the grid maps onto a screen area: each cell shows `ranks_per_cell` ×
/// `steps_per_cell` of the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Grid {
    pub area: Rect,
    pub gutter: u16,
    pub ranks_per_cell: usize,
    pub steps_per_cell: usize,
    pub rows: usize,
    pub cols: usize,
}

impl App {
    /// Opens (or closes) the heatmap view.
    pub fn toggle_heatmap(&mut self) {
        if self.mode == Mode::Heatmap {
            self.mode = Mode::Timeline;
            return;
        }
        if self.heat.is_none() {
            self.heat = Some(heatmaps(self.tl.run(), self.tl.breakdowns()));
        }
        let empty = self
            .heat
            .as_ref()
            .is_none_or(|h| h.ranks.is_empty() || h.steps.is_empty());
        if empty {
            self.message = Some("no steps recorded: nothing to draw as a heatmap".into());
            return;
        }
        self.mode = Mode::Heatmap;
    }

    /// The heatmaps, once the view was opened.
    pub fn heatmaps(&self) -> Option<&Heatmaps> {
        self.heat.as_ref()
    }

    /// The heatmap view's metric and cursor.
    pub fn heat_cursor(&self) -> HeatCursor {
        self.heat_cursor
    }

    /// Keys of the heatmap view.
    pub(crate) fn heat_key(&mut self, key: KeyEvent) {
        let Some(grid) = self.heat_grid(self.heat_area()) else {
            self.mode = Mode::Timeline;
            return;
        };
        let (rb, sb) = (grid.ranks_per_cell as isize, grid.steps_per_cell as isize);
        match key.code {
            KeyCode::Char('q') => self.quit(),
            KeyCode::Char('m') | KeyCode::Esc => self.mode = Mode::Timeline,
            KeyCode::Char('c') | KeyCode::Tab => {
                let i = Metric::ALL
                    .iter()
                    .position(|m| *m == self.heat_cursor.metric)
                    .unwrap_or(0);
                self.heat_cursor.metric = Metric::ALL[(i + 1) % Metric::ALL.len()];
            }
            KeyCode::Char('j') | KeyCode::Down => self.move_heat(rb, 0),
            KeyCode::Char('k') | KeyCode::Up => self.move_heat(-rb, 0),
            KeyCode::Char('l') | KeyCode::Right => self.move_heat(0, sb),
            KeyCode::Char('h') | KeyCode::Left => self.move_heat(0, -sb),
            KeyCode::PageDown => self.move_heat(rb * grid.rows as isize, 0),
            KeyCode::PageUp => self.move_heat(-rb * grid.rows as isize, 0),
            KeyCode::Home => self.heat_cursor.step_index = 0,
            KeyCode::End => self.move_heat(0, isize::MAX / 2),
            KeyCode::Enter | KeyCode::Char('z') => self.open_heat_cell(),
            _ => {}
        }
    }

    fn move_heat(&mut self, dr: isize, ds: isize) {
        let Some(h) = &self.heat else { return };
        let c = &mut self.heat_cursor;
        c.rank_index = c
            .rank_index
            .saturating_add_signed(dr)
            .min(h.ranks.len().saturating_sub(1));
        c.step_index = c
            .step_index
            .saturating_add_signed(ds)
            .min(h.steps.len().saturating_sub(1));
    }

    /// The area the heatmap view draws in (the screen less title and footer).
    pub(crate) fn heat_area(&self) -> Rect {
        let (w, h) = self.size;
        Rect::new(0, 1, w, h.saturating_sub(2))
    }

    /// How the grid fits `area`: two header rows (title, step axis) and three rows below the
    /// cells (a blank, the details, the scale), rank labels on the left.
    pub(crate) fn heat_grid(&self, area: Rect) -> Option<Grid> {
        let h = self.heat.as_ref()?;
        let last = h.ranks.last().copied().unwrap_or(0);
        let gutter = (format!("r{last}").len() as u16 + 1).min(area.width / 3);
        let rows_avail = usize::from(area.height.saturating_sub(5)).max(1);
        let cols_avail = usize::from(area.width.saturating_sub(gutter)).max(1);
        let ranks_per_cell = h.ranks.len().div_ceil(rows_avail).max(1);
        let steps_per_cell = h.steps.len().div_ceil(cols_avail).max(1);
        Some(Grid {
            area,
            gutter,
            ranks_per_cell,
            steps_per_cell,
            rows: h.ranks.len().div_ceil(ranks_per_cell),
            cols: h.steps.len().div_ceil(steps_per_cell),
        })
    }

    /// The block under the cursor and its largest cell.
    pub fn heat_block(&self) -> Option<(std::ops::Range<usize>, std::ops::Range<usize>, BlockMax)> {
        let h = self.heat.as_ref()?;
        let g = self.heat_grid(self.heat_area())?;
        let c = self.heat_cursor;
        let r0 = c.rank_index / g.ranks_per_cell * g.ranks_per_cell;
        let s0 = c.step_index / g.steps_per_cell * g.steps_per_cell;
        let rr = r0..(r0 + g.ranks_per_cell).min(h.ranks.len());
        let ss = s0..(s0 + g.steps_per_cell).min(h.steps.len());
        let m = h.get(c.metric).block(rr.clone(), ss.clone())?;
        Some((rr, ss, m))
    }

    /// Enter: the timeline at the largest cell of the block under the cursor.
    fn open_heat_cell(&mut self) {
        let Some((_, _, m)) = self.heat_block() else {
            self.message = Some("no data in this cell".into());
            return;
        };
        let Some(h) = &self.heat else { return };
        let (rank, step) = (h.ranks[m.rank_index], h.steps[m.step_index]);
        let metric = self.heat_cursor.metric;
        let Some(i) = self.tl.steps().iter().position(|s| s.number == Some(step)) else {
            self.message = Some(format!("step {step} is not in the timeline"));
            return;
        };
        self.mode = Mode::Timeline;
        self.go_to_step(i);
        self.select_step_span(i, rank);
        self.message = Some(format!(
            "rank {rank}, step {step}: {} {}  (m: back to the heatmap)",
            metric.name(),
            format::duration(m.value as i64, self.ascii)
        ));
    }

    /// Draws the heatmap view over the main area.
    pub(crate) fn render_heatmap(&self, buf: &mut Buffer) {
        let area = self.heat_area();
        let (Some(h), Some(g)) = (self.heat.as_ref(), self.heat_grid(area)) else {
            return;
        };
        let metric = self.heat_cursor.metric;
        let map = h.get(metric);
        let put = |buf: &mut Buffer, x: u16, y: u16, s: &str, max: u16, st: Style| {
            if y < area.bottom() && x < area.right() {
                buf.set_stringn(x, y, s, usize::from(max.min(area.right() - x)), st);
            }
        };
        let times = if self.ascii { "x" } else { "×" };
        let cell_text = if g.ranks_per_cell * g.steps_per_cell > 1 {
            format!(
                " (each cell: the largest of {} rank{} {times} {} step{})",
                g.ranks_per_cell,
                if g.ranks_per_cell == 1 { "" } else { "s" },
                g.steps_per_cell,
                if g.steps_per_cell == 1 { "" } else { "s" }
            )
        } else {
            String::new()
        };
        put(
            buf,
            area.x,
            area.y,
            &format!(" heatmap: {} per rank and step{cell_text}", metric.name()),
            area.width,
            theme::HEADING,
        );
        // Step axis: a label every ten columns.
        let y_axis = area.y + 1;
        let x0 = area.x + g.gutter;
        let mut col = 0;
        while col < g.cols {
            let label = format!("s{}", h.steps[col * g.steps_per_cell]);
            put(
                buf,
                x0 + col as u16,
                y_axis,
                &label,
                label.len() as u16,
                theme::AXIS,
            );
            col += (label.len() + 2).max(10);
        }
        let (lo, hi) = h.scale(metric).unwrap_or((0.0, 1.0));
        let level = |v: f64| h.level(metric, v, RAMP.len());
        let cur = self.heat_cursor;
        let (cur_r, cur_s) = (
            cur.rank_index / g.ranks_per_cell,
            cur.step_index / g.steps_per_cell,
        );
        for row in 0..g.rows {
            let y = area.y + 2 + row as u16;
            let r0 = row * g.ranks_per_cell;
            let rr = r0..(r0 + g.ranks_per_cell).min(h.ranks.len());
            let label = format!("r{}", h.ranks[r0]);
            let style = if row == cur_r {
                theme::RANK
            } else {
                theme::LABEL
            };
            put(buf, area.x, y, &label, g.gutter.saturating_sub(1), style);
            for col in 0..g.cols {
                let s0 = col * g.steps_per_cell;
                let ss = s0..(s0 + g.steps_per_cell).min(h.steps.len());
                let x = x0 + col as u16;
                let here = row == cur_r && col == cur_s;
                let (sym, mut st) = match map.block(rr.clone(), ss) {
                    None => (" ".to_owned(), Style::new()),
                    Some(b) => {
                        let k = level(b.value).min(RAMP.len() - 1);
                        if self.ascii {
                            (ASCII_RAMP[k].to_string(), Style::new())
                        } else {
                            ("█".to_owned(), Style::new().fg(Color::Indexed(RAMP[k])))
                        }
                    }
                };
                let sym = if here {
                    st = Style::new()
                        .fg(Color::Black)
                        .bg(Color::White)
                        .add_modifier(Modifier::BOLD);
                    if self.ascii { "X" } else { "◆" }.to_owned()
                } else {
                    sym
                };
                put(buf, x, y, &sym, 1, st);
            }
        }
        // Details of the block under the cursor, the scale, the keys.
        let y = area.y + 2 + g.rows as u16 + 1;
        let d = |v: f64| format::duration(v as i64, self.ascii);
        let details = match self.heat_block() {
            Some((rr, ss, m)) => {
                let span = |a: u64, b: u64, what: &str| {
                    if a == b {
                        format!("{what} {a}")
                    } else {
                        format!("{what}s {a}-{b}")
                    }
                };
                format!(
                    " {} {times} {}: largest {} at rank {}, step {}",
                    span(
                        u64::from(h.ranks[rr.start]),
                        u64::from(h.ranks[rr.end - 1]),
                        "rank"
                    ),
                    span(h.steps[ss.start], h.steps[ss.end - 1], "step"),
                    d(m.value),
                    h.ranks[m.rank_index],
                    h.steps[m.step_index]
                )
            }
            None => " no data under the cursor".to_owned(),
        };
        put(buf, area.x, y, &details, area.width, theme::TEXT);
        let mut x = area.x + 1;
        put(buf, x, y + 1, &format!("{} ", d(lo)), 12, theme::DIM);
        x += d(lo).chars().count() as u16 + 1;
        for (k, c) in RAMP.iter().enumerate() {
            let (sym, st) = if self.ascii {
                (ASCII_RAMP[k].to_string(), Style::new())
            } else {
                ("█".to_owned(), Style::new().fg(Color::Indexed(*c)))
            };
            put(buf, x, y + 1, &sym, 1, st);
            x += 1;
        }
        put(
            buf,
            x + 1,
            y + 1,
            &format!("{}  {}: {}", d(hi), metric.name(), metric.definition()),
            area.width,
            theme::DIM,
        );
    }

    /// The heatmap view's keys, in the footer.
    pub(crate) fn render_heat_footer(&self, area: Rect, buf: &mut Buffer) {
        buf.set_style(area, theme::FOOTER);
        buf.set_stringn(
            area.x,
            area.y,
            " c metric  hjkl/arrows move  PgUp/PgDn page  Enter open in the timeline  m/Esc back  q quit",
            usize::from(area.width),
            theme::FOOTER,
        );
    }
}
