//! Drawing the [`App`]: title bar, time axis, step boundaries, one row per
//! lane, details of the selection, key hints, the side panel and the help
//! overlay.
//!
//! A lane row is drawn cell by cell from the coverage of the cell's time
//! window by each class of span ([`probe::analysis::intervals::Cover`]), so the cost of a
//! frame does not grow with the number of spans; labels are written over
//! spans only when few enough spans are in view to be wide.

use probe::model::{Lane, RankTrace, Span};
use probe::open::OpenSpan;
use probe::trace::SpanKind;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use crate::app::{App, Mode, Regions, MIN_HEIGHT, MIN_WIDTH};
use crate::format::{self, clip};
use crate::theme::{self, Class, Glyphs, ASCII, UNICODE};
use crate::timeline::Row;

/// What one cell of a lane shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fill {
    Empty,
    Boundary,
    Gap,
    Full(Class),
    Part(Class),
    Light(Class),
    Tiny(Class),
}

/// Spans in view above which no labels are drawn (they would be too
/// narrow anyway), per column.
const LABEL_SPANS_PER_COLUMN: usize = 2;

impl App {
    /// The glyphs of the character set in use.
    pub(crate) fn glyphs(&self) -> &'static Glyphs {
        if self.ascii {
            &ASCII
        } else {
            &UNICODE
        }
    }

    /// Writes `text` at (`x`, `y`), at most `max` columns; non-ASCII
    /// characters become `?` in ASCII mode.
    fn put(&self, buf: &mut Buffer, x: u16, y: u16, text: &str, max: u16, style: Style) -> u16 {
        if self.ascii && !text.is_ascii() {
            let t: String = text
                .chars()
                .map(|c| if c.is_ascii() { c } else { '?' })
                .collect();
            buf.set_stringn(x, y, t, usize::from(max), style).0
        } else {
            buf.set_stringn(x, y, text, usize::from(max), style).0
        }
    }

    fn render_title(&self, area: Rect, buf: &mut Buffer) {
        buf.set_style(area, theme::TITLE);
        let run = self.tl.run();
        let g = self.glyphs();
        let n = run.ranks.len();
        let mut left = vec!["ddp-probe".to_owned()];
        // Second, so that it is the last item a narrow screen drops.
        match self.tl.warnings().len() {
            0 => {}
            1 => left.push("1 warning (w)".to_owned()),
            n => left.push(format!("{n} warnings (w)")),
        }
        if !run.run_id.is_empty() {
            left.push(format!(
                "run {}",
                self.safe(&clip(&run.run_id, 24, self.ascii))
            ));
        }
        if n > 0 {
            left.push(format!("{n} rank{}", if n == 1 { "" } else { "s" }));
            left.push(format!("{} steps", self.tl.steps().len()));
            left.push(format!(
                "{} spans",
                probe::units::group_thousands(self.tl.span_count() as i64)
            ));
        }
        let missing = run.missing_ranks();
        if !missing.is_empty() {
            left.push(format!("{} ranks missing", missing.len()));
        }
        let mut right = vec![format!(
            "{} {} {} ({})",
            self.at(self.t0),
            g.arrow,
            self.at(self.t1),
            self.dur(self.t1 - self.t0)
        )];
        if let Some(live) = &self.live {
            let follow = match self.follow {
                crate::app::Follow::Off => "",
                crate::app::Follow::All => ", following",
                crate::app::Follow::Latest => ", following latest",
            };
            right.push(format!("LIVE{follow}"));
            right.push(self.safe(&live.text));
        }
        // Whole items are dropped from the ends until both sides fit.
        let width = usize::from(area.width);
        let join = |v: &[String]| format!(" {} ", v.join(g.dot));
        let len = |s: &str| s.chars().count();
        loop {
            let l = join(&left);
            let r = join(&right);
            if len(&l) + len(&r) <= width || (left.len() <= 1 && right.len() <= 1) {
                break;
            }
            if left.len() > 2 {
                left.pop();
            } else if right.len() > 1 {
                right.pop();
            } else if left.len() > 1 {
                left.pop();
            } else {
                break;
            }
        }
        let l = join(&left);
        let r = join(&right);
        let rw = (len(&r) as u16).min(area.width);
        self.put(
            buf,
            area.x,
            area.y,
            &l,
            area.width.saturating_sub(rw),
            theme::TITLE,
        );
        self.put(buf, area.right() - rw, area.y, &r, rw, theme::TITLE);
    }

    fn render_axis(&self, r: &Regions, buf: &mut Buffer) {
        let area = r.axis;
        let g = self.glyphs();
        self.put(buf, r.gutter.x, area.y, "time", r.gutter.width, theme::DIM);
        let cols = i64::from(area.width.max(1));
        let w = (self.t1 - self.t0).max(1);
        let origin = self.tl.origin();
        let scale = (self.t1 - origin).abs().max((self.t0 - origin).abs());
        let mut step = format::nice_step(w as f64 * 12.0 / cols as f64);
        for _ in 0..4 {
            let len =
                format::axis_label(self.t1 - origin, step, scale, self.ascii).len() as i64 + 3;
            let want = format::nice_step(w as f64 * len as f64 / cols as f64);
            if want <= step {
                break;
            }
            step = want;
        }
        let first = (self.t0 - origin).div_euclid(step) * step + step;
        let mut next_free = 0i64;
        let mut t = first - step;
        while t <= self.t1 - origin {
            let c = self.time_col(cols, origin + t);
            if (0..cols).contains(&c) && c >= next_free {
                let label = format::axis_label(t, step, scale, self.ascii);
                let x = area.x + c as u16;
                self.put(buf, x, area.y, g.tick, 1, theme::AXIS);
                let room = (cols - c - 1).max(0) as u16;
                if label.len() as u16 <= room {
                    self.put(buf, x + 1, area.y, &label, room, theme::AXIS);
                }
                next_free = c + label.len() as i64 + 2;
            }
            t += step;
        }
    }

    fn render_steps(&self, r: &Regions, buf: &mut Buffer) {
        let area = r.steps;
        let g = self.glyphs();
        self.put(buf, r.gutter.x, area.y, "steps", r.gutter.width, theme::DIM);
        let steps = self.tl.steps();
        let cols = i64::from(area.width.max(1));
        if let Some(i) = self.current_step {
            if let Some(st) = steps.get(i) {
                let c0 = self.time_col(cols, st.start).clamp(0, cols);
                let c1 = self.time_col(cols, st.end).clamp(-1, cols - 1);
                if c1 >= c0 {
                    let rect = Rect::new(area.x + c0 as u16, area.y, (c1 - c0 + 1) as u16, 1);
                    buf.set_style(rect, theme::STEP_CURRENT);
                }
            }
        }
        let mut next_free = 0i64;
        for c in 0..cols {
            let a = self.col_time(cols, c);
            let b = self.col_time(cols, c + 1);
            let k = steps.partition_point(|s| s.start < a);
            if k >= steps.len() || steps[k].start >= b {
                continue;
            }
            let x = area.x + c as u16;
            let current = self.current_step == Some(k);
            let style = if current {
                theme::STEP_CURRENT
            } else {
                theme::STEP
            };
            if c >= next_free {
                self.put(buf, x, area.y, g.boundary, 1, style);
            }
            if c + 1 < next_free {
                continue;
            }
            let st = &steps[k];
            let width_cells = self.time_col(cols, st.end) - c;
            let label = match st.number {
                Some(n) if width_cells >= 10 => format!("step {n}"),
                Some(n) => n.to_string(),
                None => format!("#{k}"),
            };
            let room = (cols - c - 1).max(0);
            let len = label.len() as i64;
            if len <= room && (width_cells > len || c + 1 >= next_free) {
                self.put(buf, x + 1, area.y, &label, room as u16, style);
                next_free = c + len + 2;
            }
        }
    }

    /// The fill of every cell of a row for the column boundaries `bounds`,
    /// and the colour of the class drawn in each.
    fn row_fills(&self, row: &Row, lane: &Lane, bounds: &[i64], edges: &[bool]) -> Vec<Fill> {
        let cols = bounds.len() - 1;
        let spans = lane.spans();
        let starts: Vec<usize> = bounds
            .iter()
            .map(|&t| spans.partition_point(|s| s.start() < t))
            .collect();
        let prefixes: Vec<(Class, Vec<i64>)> = row
            .classes
            .iter()
            .map(|(c, cov)| (*c, bounds.iter().map(|&t| cov.prefix(t)).collect()))
            .collect();
        let compute = self.tl.compute(row.rank);
        let mut out = Vec::with_capacity(cols);
        for c in 0..cols {
            let width = (bounds[c + 1] - bounds[c]).max(1);
            let mut best: Option<(Class, i64)> = None;
            let mut total = 0i64;
            let mut step = 0i64;
            for (class, pre) in &prefixes {
                let cov = pre[c + 1] - pre[c];
                if cov <= 0 {
                    continue;
                }
                if class.is_primary() {
                    total += cov;
                    if best.is_none_or(|(_, b)| cov > b) {
                        best = Some((*class, cov));
                    }
                } else {
                    step += cov;
                }
            }
            let fill = match best {
                Some((class, _)) if total * 4 >= width * 3 => Fill::Full(class),
                Some((class, _)) if total * 5 >= width * 2 => Fill::Part(class),
                Some((class, _)) => Fill::Light(class),
                None => {
                    let tiny = spans[starts[c]..starts[c + 1]]
                        .iter()
                        .take(8)
                        .find(|s| s.kind() != SpanKind::Step)
                        .map(|s| match Class::of(s) {
                            Class::Overlapped
                                if !compute.is_some_and(|cv| cv.contains(s.start())) =>
                            {
                                Class::Exposed
                            }
                            k => k,
                        });
                    match tiny {
                        Some(k) => Fill::Tiny(k),
                        None if step > 0 => Fill::Gap,
                        None if edges[c] => Fill::Boundary,
                        None => Fill::Empty,
                    }
                }
            };
            out.push(fill);
        }
        out
    }

    fn render_lanes(&self, r: &Regions, buf: &mut Buffer) {
        let area = r.lanes;
        let g = self.glyphs();
        let cols = usize::from(area.width);
        if cols == 0 || area.height == 0 {
            return;
        }
        let rows = self.tl.rows();
        if rows.is_empty() {
            self.put(
                buf,
                area.x,
                area.y,
                "no spans recorded (yet)",
                area.width,
                theme::DIM,
            );
            return;
        }
        let ncols = cols as i64;
        let bounds: Vec<i64> = (0..=ncols).map(|c| self.col_time(ncols, c)).collect();
        let steps = self.tl.steps();
        let edges: Vec<bool> = (0..cols)
            .map(|c| {
                let k = steps.partition_point(|s| s.start < bounds[c]);
                k < steps.len() && steps[k].start < bounds[c + 1]
            })
            .collect();
        let tag_w = r.gutter.width.saturating_sub(1);
        for slot in self.row_slots(area) {
            let (ri, y) = (slot.row, slot.y);
            let row = &rows[ri];
            let rank = &self.tl.run().ranks[row.rank];
            self.render_label(r.gutter.x, y, tag_w, ri, row, rank, buf);
            let Some(lane) = self.tl.lane(ri) else {
                continue;
            };
            let fills = self.row_fills(row, lane, &bounds, &edges);
            let hl = self
                .highlight
                .as_ref()
                .map(|h| (h.bucket, h.rows.get(ri).and_then(|c| c.as_ref())));
            let mut colors = vec![Color::Reset; cols];
            for (c, fill) in fills.iter().enumerate() {
                let x = area.x + c as u16;
                let bar = |k: Class, glyph: &str| {
                    (
                        self.cell_symbol(g, k, glyph),
                        Style::new().fg(k.color()),
                        k.color(),
                    )
                };
                let (sym, mut style, color) = match *fill {
                    Fill::Empty => continue,
                    Fill::Boundary => (
                        g.boundary.to_owned(),
                        Style::new().fg(Color::DarkGray),
                        Color::Reset,
                    ),
                    Fill::Gap => (
                        g.gap.to_owned(),
                        Style::new().fg(Class::Step.color()),
                        Color::DarkGray,
                    ),
                    Fill::Full(k) => bar(k, g.full),
                    Fill::Part(k) => bar(k, g.part),
                    Fill::Light(k) => bar(k, g.light),
                    Fill::Tiny(k) => bar(k, g.tiny),
                };
                if let Some((_, cover)) = hl {
                    let bucket_class = matches!(
                        fill,
                        Fill::Full(k) | Fill::Part(k) | Fill::Light(k) | Fill::Tiny(k)
                            if k.is_bucket_work()
                    );
                    let lit = cover.is_some_and(|cv| cv.covered(bounds[c], bounds[c + 1]) > 0);
                    if lit {
                        style = if g.ascii {
                            theme::HIGHLIGHT
                        } else {
                            Style::new().fg(Color::LightYellow)
                        };
                    } else if bucket_class {
                        style = theme::DIMMED;
                    }
                }
                colors[c] = color;
                self.put(buf, x, y, &sym, 1, style);
                // Taller lanes: a mostly covered cell goes on as an upper
                // half block, so that busier cells also look taller.
                for dy in 1..slot.height {
                    let lower = match fill {
                        Fill::Full(_) => "▀",
                        Fill::Boundary => g.boundary,
                        _ => continue,
                    };
                    self.put(buf, x, y + dy, lower, 1, style);
                }
            }
            self.render_span_labels(lane, rank, &bounds, &colors, area.x, y, buf);
            self.render_open_spans(ri, &bounds, &colors, area.x, y, buf);
            if let Some(sel) = self.selection.filter(|s| s.row == ri) {
                if let Some(span) = lane.spans().get(sel.index) {
                    self.render_selected(span, rank, &colors, area.x, y, buf);
                }
            }
        }
    }

    /// What never ended on row `ri`: a dashed line from its start to the end of the recording
    /// (an open step only over cells nothing else covers, so that its finished phases stay
    /// visible), labelled "<what> unfinished" (shorter where there is less room) up to where
    /// the next open span of the row begins.
    fn render_open_spans(
        &self,
        ri: usize,
        bounds: &[i64],
        colors: &[Color],
        x0: u16,
        y: u16,
        buf: &mut Buffer,
    ) {
        let cols = (bounds.len() - 1) as i64;
        let g = self.glyphs();
        let mut open: Vec<&OpenSpan> = self
            .tl
            .open_spans()
            .iter()
            .filter(|(r, o)| *r == ri && o.end >= self.t0 && o.start < self.t1)
            .map(|(_, o)| o)
            .collect();
        open.sort_by_key(|o| o.start);
        let cols_of = |o: &OpenSpan| {
            (
                self.time_col(cols, o.start).max(0),
                self.time_col(cols, o.end).min(cols - 1),
            )
        };
        for o in &open {
            let (c0, c1) = cols_of(o);
            for c in c0..=c1 {
                if o.kind != SpanKind::Step || colors[c as usize] == Color::Reset {
                    self.put(buf, x0 + c as u16, y, g.open, 1, theme::OPEN);
                }
            }
        }
        for (k, o) in open.iter().enumerate() {
            // An open step's label would cover its finished phases; its open phase says it.
            if o.kind == SpanKind::Step && open.len() > k + 1 {
                continue;
            }
            let (c0, c1) = cols_of(o);
            let stop = open.get(k + 1).map_or(c1, |n| cols_of(n).0.min(c1));
            let room = (stop - c0 - 1).max(0) as usize;
            let label = [
                format!(" {} unfinished ", self.safe(&o.what())),
                format!(" {} unfinished ", self.safe(&o.short())),
                " unfinished ".to_owned(),
            ]
            .into_iter()
            .find(|l| l.chars().count() <= room);
            if let Some(label) = label {
                self.put(
                    buf,
                    x0 + (c0 + 1) as u16,
                    y,
                    &label,
                    room as u16,
                    theme::OPEN,
                );
            }
        }
    }

    fn cell_symbol(&self, g: &Glyphs, class: Class, glyph: &str) -> String {
        if g.ascii {
            class.letter().to_string()
        } else {
            glyph.to_owned()
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn render_label(
        &self,
        x: u16,
        y: u16,
        width: u16,
        ri: usize,
        row: &Row,
        rank: &RankTrace,
        buf: &mut Buffer,
    ) {
        let tag = if row.first_of_rank {
            format!("r{}", rank.rank())
        } else {
            String::new()
        };
        let tag_w = 1 + self
            .tl
            .run()
            .ranks
            .last()
            .map_or(1, |r| r.rank().to_string().len());
        let label_w = usize::from(width).saturating_sub(tag_w + 1);
        let text = format!("{tag:<tag_w$} {}", clip(&row.label, label_w, self.ascii));
        let cursor = ri == self.cursor;
        let style = if cursor {
            theme::CURSOR
        } else if row.first_of_rank {
            theme::RANK
        } else {
            theme::LABEL
        };
        if cursor {
            buf.set_style(Rect::new(x, y, width, 1), theme::CURSOR);
        }
        self.put(buf, x, y, &text, width, style);
        // A rank that did not end normally has its name in red.
        if row.first_of_rank && self.rank_end_problem(rank).is_some() {
            let tag_style = if cursor {
                theme::CURSOR.fg(Color::Red)
            } else {
                theme::WARN
            };
            self.put(buf, x, y, &tag, tag_w as u16, tag_style);
        }
    }

    /// Labels written over spans wide enough to hold them.
    #[allow(clippy::too_many_arguments)]
    fn render_span_labels(
        &self,
        lane: &Lane,
        rank: &RankTrace,
        bounds: &[i64],
        colors: &[Color],
        x0: u16,
        y: u16,
        buf: &mut Buffer,
    ) {
        let cols = (bounds.len() - 1) as i64;
        let spans = lane.spans();
        let lo = spans.partition_point(|s| s.start() < self.t0.saturating_sub(lane.max_duration()));
        let hi = spans.partition_point(|s| s.start() < self.t1);
        if hi.saturating_sub(lo) > LABEL_SPANS_PER_COLUMN * cols as usize {
            return;
        }
        for s in lane.overlapping(self.t0, self.t1) {
            if s.kind() == SpanKind::Step {
                continue;
            }
            let c0 = self.time_col(cols, s.start()).max(0);
            let c1 = self.time_col(cols, s.end()).min(cols - 1);
            let cells = c1 - c0 + 1;
            if cells < 4 {
                continue;
            }
            let Some(label) = self.span_label(s, rank, (cells - 2) as usize) else {
                continue;
            };
            for (k, ch) in label.chars().enumerate() {
                let c = c0 + 1 + k as i64;
                if c > c1 || c >= cols {
                    break;
                }
                let bg = colors[c as usize];
                if bg == Color::Reset {
                    continue;
                }
                let mut tmp = [0u8; 4];
                self.put(
                    buf,
                    x0 + c as u16,
                    y,
                    ch.encode_utf8(&mut tmp),
                    1,
                    Style::new().fg(theme::ON_BAR).bg(bg),
                );
            }
        }
    }

    /// The longest label of `s` that fits in `room` cells.
    fn span_label(&self, s: &Span, rank: &RankTrace, room: usize) -> Option<String> {
        let sr = self.tl.run().span(rank, s);
        let d = self.dur(s.duration());
        let base = match s.kind() {
            SpanKind::Collective => sr.op().unwrap_or("collective").to_owned(),
            SpanKind::BucketReady => "ready".to_owned(),
            SpanKind::DataWait => "data".to_owned(),
            SpanKind::Kernel | SpanKind::User | SpanKind::Other => sr.label().to_owned(),
            _ => sr.kind_name().to_owned(),
        };
        let base = self.safe(&base);
        let bucket = s.bucket().map(|b| format!("b{b}"));
        let candidates: Vec<String> = match &bucket {
            Some(b) => vec![format!("{b} {base} {d}"), format!("{b} {base}"), b.clone()],
            None => vec![format!("{base} {d}"), base.clone()],
        };
        candidates
            .into_iter()
            .find(|c| c.chars().count() <= room)
            .or_else(|| (room >= 6 && bucket.is_none()).then(|| clip(&base, room, self.ascii)))
    }

    /// Marks the selected span's cells: a white band over the classes'
    /// colours (reversed letters in ASCII), with its label when it is not a
    /// whole step (a step's phases stay visible).
    #[allow(clippy::too_many_arguments)]
    fn render_selected(
        &self,
        span: &Span,
        rank: &RankTrace,
        colors: &[Color],
        x0: u16,
        y: u16,
        buf: &mut Buffer,
    ) {
        let cols = colors.len() as i64;
        let c0 = self.time_col(cols, span.start());
        let c1 = (self.time_col(cols, span.end()) - i64::from(span.end() > span.start())).max(c0);
        if c1 < 0 || c0 >= cols {
            return;
        }
        let (c0, c1) = (c0.max(0), c1.min(cols - 1));
        let cells = (c1 - c0 + 1) as usize;
        let label = if span.kind() == SpanKind::Step || cells < 3 {
            String::new()
        } else {
            self.span_label(span, rank, cells - 2).unwrap_or_default()
        };
        let label: Vec<char> = label.chars().collect();
        for k in 0..cells {
            let c = c0 as usize + k;
            let x = x0 + c as u16;
            let Some(cell) = buf.cell_mut((x, y)) else {
                continue;
            };
            if let Some(&ch) = (k >= 1).then(|| label.get(k - 1)).flatten() {
                let mut tmp = [0u8; 4];
                cell.set_symbol(ch.encode_utf8(&mut tmp))
                    .set_style(theme::SELECTED);
            } else if self.ascii {
                if cell.symbol() == " " {
                    cell.set_symbol("*");
                }
                cell.set_style(theme::SELECTED);
            } else if cells == 1 {
                cell.set_symbol("█")
                    .set_style(Style::new().fg(Color::White));
            } else {
                let fg = match colors[c] {
                    Color::Reset => Color::White,
                    c => c,
                };
                cell.set_symbol("▄")
                    .set_style(Style::new().fg(fg).bg(Color::White));
            }
        }
    }

    fn render_details(&self, area: Rect, buf: &mut Buffer) {
        if area.height == 0 {
            return;
        }
        let fields = self.details_fields();
        let width = usize::from(area.width);
        let mut lines: Vec<Vec<(String, Style)>> = vec![Vec::new()];
        let mut used = 0usize;
        for (text, style) in fields {
            let len = text.chars().count();
            let sep = if used == 0 { 1 } else { 2 };
            if used > 0 && used + sep + len > width {
                lines.push(Vec::new());
                used = 0;
            }
            let sep = if used == 0 { 1 } else { 2 };
            let last = lines.last_mut().expect("one line at least");
            last.push((" ".repeat(sep), Style::new()));
            let fit = width.saturating_sub(used + sep);
            last.push((clip(&text, fit, self.ascii), style));
            used += sep + len.min(fit);
        }
        let many = lines.len() > usize::from(area.height);
        for (i, line) in lines.iter().take(usize::from(area.height)).enumerate() {
            let y = area.y + i as u16;
            let mut x = area.x;
            for (text, style) in line {
                x = self.put(buf, x, y, text, area.right().saturating_sub(x), *style);
            }
            if many && i + 1 == usize::from(area.height) && x < area.right() {
                let more = if self.ascii { "~" } else { "…" };
                self.put(buf, area.right() - 1, y, more, 1, theme::DIM);
            }
        }
        if self.selection.is_none() && lines.len() < usize::from(area.height) {
            let room = usize::from(area.height) - lines.len();
            let legend = crate::panels::wrap_spans(self.legend(), width.saturating_sub(1));
            let inner = Rect::new(
                area.x + 1,
                area.y + lines.len() as u16,
                area.width - 1,
                room as u16,
            );
            self.render_lines(&legend, inner, buf);
        }
    }

    fn render_footer(&self, area: Rect, buf: &mut Buffer) {
        match &self.message {
            Some(m) => {
                buf.set_style(area, theme::MESSAGE);
                let text = format!(" {}", self.safe(m));
                self.put(buf, area.x, area.y, &text, area.width, theme::MESSAGE);
            }
            None => {
                buf.set_style(area, theme::FOOTER);
                let hints = [
                    ("q", "quit"),
                    ("?", "help"),
                    ("h/l", "pan"),
                    ("+/-", "zoom"),
                    ("j/k", "lane"),
                    ("Tab", "select"),
                    ("n/p", "step"),
                    ("s", "slowest"),
                    ("e", "exposed"),
                    ("b", "bucket"),
                    ("1-4", "panels"),
                    ("0", "fit"),
                ];
                let mut x = area.x + 1;
                for (k, what) in hints {
                    let len = (k.len() + what.len() + 3) as u16;
                    if x + len > area.right() {
                        break;
                    }
                    x = self.put(
                        buf,
                        x,
                        area.y,
                        k,
                        area.right() - x,
                        theme::FOOTER.add_modifier(ratatui::style::Modifier::BOLD),
                    );
                    x = self.put(
                        buf,
                        x,
                        area.y,
                        &format!(" {what}  "),
                        area.right() - x,
                        theme::FOOTER,
                    );
                }
            }
        }
    }

    fn border_block(&self, title: &str) -> Block<'static> {
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(theme::BORDER)
            .title(Line::styled(format!(" {title} "), theme::HEADING));
        if self.ascii {
            block.border_set(ratatui::symbols::border::Set {
                top_left: "+",
                top_right: "+",
                bottom_left: "+",
                bottom_right: "+",
                vertical_left: "|",
                vertical_right: "|",
                horizontal_top: "-",
                horizontal_bottom: "-",
            })
        } else {
            block
        }
    }

    fn render_panel(&self, area: Rect, buf: &mut Buffer) {
        let Some(panel) = self.panel else {
            return;
        };
        Clear.render(area, buf);
        let block = self.border_block(panel.title());
        let inner = block.inner(area);
        block.render(area, buf);
        let lines = self.panel_lines(panel, usize::from(inner.width));
        let max_scroll = lines.len().saturating_sub(usize::from(inner.height));
        let scroll = self.panel_scroll.min(max_scroll);
        self.render_lines(&lines[scroll..], inner, buf);
        if max_scroll > 0 {
            let text = format!(" {}/{} PgUp/PgDn ", scroll.min(max_scroll), max_scroll);
            let w = text.len() as u16;
            if w + 2 < area.width {
                self.put(
                    buf,
                    area.right() - w - 1,
                    area.bottom() - 1,
                    &text,
                    w,
                    theme::DIM,
                );
            }
        }
    }

    fn render_lines(&self, lines: &[Line<'static>], area: Rect, buf: &mut Buffer) {
        for (i, line) in lines.iter().take(usize::from(area.height)).enumerate() {
            let y = area.y + i as u16;
            let mut x = area.x;
            for t in &line.spans {
                if x >= area.right() {
                    break;
                }
                let style = line.style.patch(t.style);
                x = self.put(buf, x, y, &t.content, area.right() - x, style);
            }
        }
    }

    fn render_help(&self, area: Rect, buf: &mut Buffer) {
        let lines = self.help_lines(usize::from(area.width.saturating_sub(4)));
        let content_w = lines.iter().map(Line::width).max().unwrap_or(20) as u16;
        let w = (content_w + 4).min(area.width);
        let h = (lines.len() as u16 + 2).min(area.height);
        let rect = Rect::new(
            area.x + (area.width - w) / 2,
            area.y + (area.height - h) / 2,
            w,
            h,
        );
        Clear.render(rect, buf);
        let block = self.border_block("keys (any key closes)");
        let inner = block.inner(rect);
        block.render(rect, buf);
        let inner = Rect::new(
            inner.x + 1,
            inner.y,
            inner.width.saturating_sub(1),
            inner.height,
        );
        let max_scroll = lines.len().saturating_sub(usize::from(inner.height));
        let scroll = self.help_scroll.min(max_scroll);
        self.render_lines(&lines[scroll..], inner, buf);
        if max_scroll > 0 {
            let text = " j/k: more ";
            self.put(
                buf,
                rect.right().saturating_sub(text.len() as u16 + 1),
                rect.bottom() - 1,
                text,
                text.len() as u16,
                theme::DIM,
            );
        }
    }
}

impl Widget for &App {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let r = self.regions(area);
        if r.too_small {
            let text = format!("terminal too small: {MIN_WIDTH}x{MIN_HEIGHT} at least");
            Paragraph::new(text).render(area, buf);
            return;
        }
        self.render_title(r.title, buf);
        if self.mode == Mode::Heatmap {
            self.render_heatmap(buf);
            if self.message.is_some() {
                self.render_footer(r.footer, buf);
            } else {
                self.render_heat_footer(r.footer, buf);
            }
            return;
        }
        self.render_axis(&r, buf);
        self.render_steps(&r, buf);
        self.render_lanes(&r, buf);
        self.render_details(r.details, buf);
        self.render_footer(r.footer, buf);
        if let Some(p) = r.panel {
            self.render_panel(p, buf);
        }
        if self.mode == Mode::Help {
            self.render_help(area, buf);
        }
    }
}

/// The text of a buffer, one string per row (for tests and snapshots).
pub fn buffer_text(buf: &Buffer) -> Vec<String> {
    let area = buf.area;
    (area.y..area.bottom())
        .map(|y| {
            let mut line = String::new();
            for x in area.x..area.right() {
                line.push_str(buf[(x, y)].symbol());
            }
            line.trim_end().to_owned()
        })
        .collect()
}
