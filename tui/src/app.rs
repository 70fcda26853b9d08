//! The timeline's state and every action on it, with no terminal involved:
//! the view window, the lane cursor, the selection, the current step, the
//! highlighted bucket, the open panel and the help overlay.
//!
//! Key and mouse events are mapped to these actions in `input.rs`; drawing
//! reads the state in `ui.rs`. Everything here is plain data and small
//! methods, so tests drive it directly.

use std::path::PathBuf;
use std::sync::mpsc;

use probe::analysis::heatmap::{Heatmaps, Metric};
use probe::analysis::{advise, summarize, Advice, AdviceOptions, SummaryOptions};
use probe::model::{LaneKind, Span};
use probe::trace::SpanKind;
use probe_explain::Report;
use ratatui::layout::Rect;

use crate::format::{self, clean};
use crate::timeline::{overlapping_indices, Timeline};
use probe::analysis::intervals::Cover;

/// Smallest view width (ns).
const MIN_VIEW_NS: i64 = 200;
/// Zoom factor of one key press.
const ZOOM_STEP: f64 = 1.5;
/// Zoom factor of one mouse wheel notch.
const WHEEL_ZOOM: f64 = 1.25;
/// Fraction of the view one pan key press moves.
const PAN_STEP: f64 = 0.125;
/// Space left around a step or span the view is fitted to.
const FIT_MARGIN: f64 = 0.04;
/// Rows of the details area (at least 20 rows on screen).
const DETAILS_ROWS: u16 = 3;
/// Smallest usable terminal.
pub const MIN_WIDTH: u16 = 40;
/// Smallest usable terminal.
pub const MIN_HEIGHT: u16 = 10;

/// What has the keyboard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The timeline.
    Timeline,
    /// The help overlay.
    Help,
    /// The rank × step heatmap (`heatmap.rs`).
    Heatmap,
}

/// Where the heatmap view (`heatmap.rs`) stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeatCursor {
    /// The metric shown.
    pub metric: Metric,
    /// The cursor's rank, as an index into [`Heatmaps::ranks`].
    pub rank_index: usize,
    /// The cursor's step, as an index into [`Heatmaps::steps`].
    pub step_index: usize,
}

/// The side panels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Panel {
    /// The breakdown of the current step, per rank.
    Breakdown,
    /// `bucket_cap_mb` advice for the run.
    Advice,
    /// The `explain` findings for the run.
    Explain,
    /// The warnings and notes `ddp-probe summary` prints for the run.
    Warnings,
}

impl Panel {
    /// The panel's title.
    pub fn title(self) -> &'static str {
        match self {
            Panel::Breakdown => "step breakdown",
            Panel::Advice => "bucket_cap_mb advice",
            Panel::Explain => "explain",
            Panel::Warnings => "warnings and notes",
        }
    }
}

/// How the view follows a growing run (live mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Follow {
    /// The view stays where the user put it.
    Off,
    /// The view shows the whole run as it grows.
    All,
    /// The view keeps its width and shows the latest time.
    Latest,
}

/// A selected span: its row and its index in the row's lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Selection {
    /// The row.
    pub row: usize,
    /// Index in the lane's spans.
    pub index: usize,
}

/// The highlighted bucket and its coverage per row.
#[derive(Clone, Debug)]
pub struct Highlight {
    /// The bucket id.
    pub bucket: u32,
    /// Per row, the spans of the bucket.
    pub rows: Vec<Option<Cover>>,
}

/// Where one row of the lanes is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowSlot {
    /// The row (index into [`Timeline::rows`]).
    pub row: usize,
    /// The first screen line.
    pub y: u16,
    /// Lines.
    pub height: u16,
}

/// A mouse drag in progress.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Drag {
    pub x: u16,
    pub y: u16,
    pub t0: i64,
    pub scroll: usize,
    pub moved: bool,
}

/// Which ranked jump was made last, and how far down the ranking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Jump {
    Slowest(usize),
    Exposed(usize),
}

/// What live mode shows about the run being recorded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LiveStatus {
    /// A line for the title bar.
    pub text: String,
    /// Whether the training has finished.
    pub finished: bool,
    /// Set when the user asks for a reload now (`r`).
    pub reload_requested: bool,
}

/// The screen regions of a frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Regions {
    /// Title bar.
    pub title: Rect,
    /// Time axis (timeline columns only).
    pub axis: Rect,
    /// Step boundaries (timeline columns only).
    pub steps: Rect,
    /// Lane labels.
    pub gutter: Rect,
    /// The lanes' cells.
    pub lanes: Rect,
    /// Details of the selection.
    pub details: Rect,
    /// Key hints and messages.
    pub footer: Rect,
    /// The open side panel.
    pub panel: Option<Rect>,
    /// Whether the terminal is too small to draw anything useful.
    pub too_small: bool,
}

/// Options of the viewer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Plain ASCII: no box drawing or block characters, no non-ASCII text.
    pub ascii: bool,
}

/// The timeline viewer's state.
pub struct App {
    pub(crate) tl: Timeline,
    pub(crate) ascii: bool,
    pub(crate) size: (u16, u16),
    pub(crate) t0: i64,
    pub(crate) t1: i64,
    pub(crate) scroll: usize,
    pub(crate) cursor: usize,
    pub(crate) selection: Option<Selection>,
    pub(crate) current_step: Option<usize>,
    pub(crate) highlight: Option<Highlight>,
    pub(crate) panel: Option<Panel>,
    pub(crate) panel_scroll: usize,
    pub(crate) mode: Mode,
    pub(crate) help_scroll: usize,
    pub(crate) follow: Follow,
    pub(crate) live: Option<LiveStatus>,
    pub(crate) message: Option<String>,
    pub(crate) drag: Option<Drag>,
    jump: Option<Jump>,
    pub(crate) advice: Option<Advice>,
    /// The notes `ddp-probe summary` prints for the run (the steps' wait for data, another
    /// DDP model unrecorded, the program's own collectives...), for the warnings panel.
    pub(crate) notes: Option<Vec<String>>,
    pub(crate) report: Option<Result<Report, String>>,
    /// The explain report being computed on its own thread: reading a large
    /// run's logs and traces takes seconds (7.6 s for 1,024 ranks × 200
    /// steps, 2026-11-28), and the view keeps answering meanwhile.
    explaining: Option<mpsc::Receiver<Result<Report, String>>>,
    pub(crate) sources: Vec<PathBuf>,
    pub(crate) heat: Option<Heatmaps>,
    pub(crate) heat_cursor: HeatCursor,
    quit: bool,
}

impl App {
    /// A viewer of `timeline` showing the whole run, on an 80×24 screen
    /// until [`App::resize`] says otherwise.
    pub fn new(timeline: Timeline, options: &Options) -> App {
        let mut app = App {
            tl: timeline,
            ascii: options.ascii,
            size: (80, 24),
            t0: 0,
            t1: 1,
            scroll: 0,
            cursor: 0,
            selection: None,
            current_step: None,
            highlight: None,
            panel: None,
            panel_scroll: 0,
            mode: Mode::Timeline,
            help_scroll: 0,
            follow: Follow::Off,
            live: None,
            message: None,
            drag: None,
            jump: None,
            advice: None,
            notes: None,
            report: None,
            explaining: None,
            sources: Vec::new(),
            heat: None,
            heat_cursor: HeatCursor {
                metric: Metric::StepTime,
                rank_index: 0,
                step_index: 0,
            },
            quit: false,
        };
        app.fit_all();
        app
    }

    /// The inputs `explain` reads for the explain panel (run directories or
    /// log files).
    pub fn set_sources(&mut self, sources: Vec<PathBuf>) {
        self.sources = sources;
    }

    /// The indexed run.
    pub fn timeline(&self) -> &Timeline {
        &self.tl
    }

    /// The view window `[t0, t1)` (ns, rank 0's timeline).
    pub fn view(&self) -> (i64, i64) {
        (self.t0, self.t1)
    }

    /// The row the cursor is on.
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// The first row on screen.
    pub fn scroll(&self) -> usize {
        self.scroll
    }

    /// The selected span.
    pub fn selection(&self) -> Option<Selection> {
        self.selection
    }

    /// The selected span itself.
    pub fn selected_span(&self) -> Option<&Span> {
        let s = self.selection?;
        self.tl.lane(s.row)?.spans().get(s.index)
    }

    /// The current step (index into [`Timeline::steps`]).
    pub fn current_step(&self) -> Option<usize> {
        self.current_step
    }

    /// The highlighted bucket.
    pub fn highlighted_bucket(&self) -> Option<u32> {
        self.highlight.as_ref().map(|h| h.bucket)
    }

    /// The open panel.
    pub fn panel(&self) -> Option<Panel> {
        self.panel
    }

    /// Who has the keyboard.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// How the view follows a growing run.
    pub fn follow(&self) -> Follow {
        self.follow
    }

    /// The message in the footer, if any.
    pub fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }

    /// Whether the user asked to quit.
    pub fn should_quit(&self) -> bool {
        self.quit
    }

    /// Asks the event loop to stop.
    pub fn quit(&mut self) {
        self.quit = true;
    }

    /// The terminal size the layout is computed for.
    pub fn size(&self) -> (u16, u16) {
        self.size
    }

    // ----- layout -----

    /// Width of the lane labels: the rank tag, a space, the lane name.
    pub(crate) fn gutter_width(&self) -> u16 {
        let ranks = self.tl.run().ranks.last().map_or(0, |r| r.rank());
        let tag = 1 + ranks.to_string().len();
        let label = self
            .tl
            .rows()
            .iter()
            .map(|r| r.label.chars().count())
            .max()
            .unwrap_or(4)
            .clamp(4, 12);
        (tag + 1 + label + 1) as u16
    }

    /// The regions of a frame of `area`.
    pub fn regions(&self, area: Rect) -> Regions {
        if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
            return Regions {
                too_small: true,
                ..Regions::default()
            };
        }
        let title = Rect::new(area.x, area.y, area.width, 1);
        let footer = Rect::new(area.x, area.bottom() - 1, area.width, 1);
        let main_h = area.height - 2;
        let (left_w, panel) = match self.panel {
            // Narrow screens: the panel covers the timeline.
            Some(_) if area.width < 72 => (
                area.width,
                Some(Rect::new(area.x, area.y + 1, area.width, main_h)),
            ),
            Some(_) => {
                let pw = (area.width * 9 / 20).clamp(36, 72);
                let lw = area.width - pw;
                (lw, Some(Rect::new(area.x + lw, area.y + 1, pw, main_h)))
            }
            None => (area.width, None),
        };
        let details_h = if area.height >= 20 { DETAILS_ROWS } else { 2 };
        let g = self.gutter_width().min(left_w / 3);
        let lanes_h = main_h.saturating_sub(2 + details_h);
        let x = area.x + g;
        let w = left_w - g;
        Regions {
            title,
            axis: Rect::new(x, area.y + 1, w, 1),
            steps: Rect::new(x, area.y + 2, w, 1),
            gutter: Rect::new(area.x, area.y + 3, g, lanes_h),
            lanes: Rect::new(x, area.y + 3, w, lanes_h),
            details: Rect::new(area.x, area.y + 3 + lanes_h, left_w, details_h),
            footer,
            panel,
            too_small: false,
        }
    }

    fn current_regions(&self) -> Regions {
        self.regions(Rect::new(0, 0, self.size.0, self.size.1))
    }

    /// Columns of the timeline on the current screen.
    pub(crate) fn columns(&self) -> i64 {
        i64::from(self.current_regions().lanes.width.max(1))
    }

    /// Rows of lanes on the current screen (all of them when they fit).
    fn lane_rows(&self) -> usize {
        let h = self.current_regions().lanes.height;
        match self.row_metrics(h) {
            (_, 1) => self.tl.rows().len().max(1),
            _ => usize::from(h.max(1)),
        }
    }

    /// Lines per lane and blank lines between ranks for a lanes region
    /// `height` lines high: taller lanes and a gap between ranks when
    /// everything fits, one line per lane and no gaps otherwise.
    pub(crate) fn row_metrics(&self, height: u16) -> (u16, u16) {
        let rows = self.tl.rows().len();
        let groups = self.tl.rows().iter().filter(|r| r.first_of_rank).count();
        let need = rows + groups.saturating_sub(1);
        let h = usize::from(height);
        if !self.ascii && rows > 0 && need + rows <= h {
            (2, 1)
        } else if need <= h {
            (1, 1)
        } else {
            (1, 0)
        }
    }

    /// Where each row on screen is drawn in the lanes region `lanes`.
    pub fn row_slots(&self, lanes: Rect) -> Vec<RowSlot> {
        let (lh, gap) = self.row_metrics(lanes.height);
        let rows = self.tl.rows();
        let mut out = Vec::new();
        let mut y = lanes.y;
        for (r, row) in rows.iter().enumerate().skip(self.scroll) {
            if r > self.scroll && row.first_of_rank {
                y += gap;
            }
            if y + lh > lanes.bottom() {
                break;
            }
            out.push(RowSlot {
                row: r,
                y,
                height: lh,
            });
            y += lh;
        }
        out
    }

    /// The row drawn at screen line `y`, if any.
    pub fn row_at(&self, y: u16) -> Option<usize> {
        self.row_slots(self.current_regions().lanes)
            .into_iter()
            .find(|s| y >= s.y && y < s.y + s.height)
            .map(|s| s.row)
    }

    /// Time at the left edge of column `c` of `cols`.
    pub(crate) fn col_time(&self, cols: i64, c: i64) -> i64 {
        let w = i128::from(self.t1 - self.t0);
        (i128::from(self.t0) + w * i128::from(c) / i128::from(cols.max(1))) as i64
    }

    /// Column of time `t` (may be off screen).
    pub(crate) fn time_col(&self, cols: i64, t: i64) -> i64 {
        let w = i128::from((self.t1 - self.t0).max(1));
        let d = i128::from(t) - i128::from(self.t0);
        (d * i128::from(cols))
            .div_euclid(w)
            .clamp(i128::from(i64::MIN / 4), i128::from(i64::MAX / 4)) as i64
    }

    /// The time at the left edge of screen column `x` (a column of the
    /// lanes region on the current screen).
    pub fn time_at_column(&self, x: u16) -> i64 {
        let r = self.current_regions();
        self.col_time(
            i64::from(r.lanes.width.max(1)),
            i64::from(x) - i64::from(r.lanes.x),
        )
    }

    /// The screen column showing time `t` (may be off screen).
    pub fn column_of_time(&self, t: i64) -> i64 {
        let r = self.current_regions();
        i64::from(r.lanes.x) + self.time_col(i64::from(r.lanes.width.max(1)), t)
    }

    // ----- resize -----

    /// The terminal is now `width` × `height`.
    pub fn resize(&mut self, width: u16, height: u16) {
        self.size = (width, height);
        self.clamp_view();
        self.reveal_cursor();
    }

    // ----- view -----

    /// The times the view may show: the run with a margin.
    fn bounds(&self) -> (i64, i64) {
        let (a, b) = (self.tl.origin(), self.tl.end());
        let pad = ((b - a) / 50).max(MIN_VIEW_NS);
        (a, b + pad)
    }

    fn min_width(&self) -> i64 {
        MIN_VIEW_NS.max(self.columns())
    }

    /// Puts the view back inside the bounds, keeping its width when it fits.
    fn clamp_view(&mut self) {
        let (lo, hi) = self.bounds();
        let mut w = (self.t1 - self.t0).clamp(self.min_width(), hi - lo);
        if w <= 0 {
            w = 1;
        }
        let mut t0 = self.t0;
        if t0 < lo {
            t0 = lo;
        }
        if t0 + w > hi {
            t0 = hi - w;
        }
        self.t0 = t0;
        self.t1 = t0 + w;
    }

    fn set_view(&mut self, t0: i64, t1: i64) {
        self.t0 = t0;
        self.t1 = t1.max(t0 + 1);
        self.clamp_view();
    }

    /// Shows the whole run.
    pub fn fit_all(&mut self) {
        let (lo, hi) = self.bounds();
        self.t0 = lo;
        self.t1 = hi;
        self.clamp_view();
        if self.live.is_some() {
            self.follow = Follow::All;
        }
    }

    /// Shows `[a, b)` with a small margin.
    pub fn fit(&mut self, a: i64, b: i64) {
        let w = (b - a).max(1);
        let pad = ((w as f64) * FIT_MARGIN) as i64;
        self.set_view(a - pad, b + pad);
    }

    /// Zooms by `factor` (> 1 zooms out) keeping time `anchor` at the same
    /// place on screen.
    pub fn zoom_at(&mut self, factor: f64, anchor: i64) {
        self.follow = Follow::Off;
        let w = (self.t1 - self.t0).max(1) as f64;
        let frac = ((anchor - self.t0) as f64 / w).clamp(0.0, 1.0);
        let (lo, hi) = self.bounds();
        let nw = (w * factor).clamp(self.min_width() as f64, (hi - lo) as f64);
        let t0 = anchor - (frac * nw).round() as i64;
        self.set_view(t0, t0 + nw.round() as i64);
    }

    /// The time keyboard zoom keeps in place: the selected span's middle
    /// when it is on screen, else the middle of the view.
    fn zoom_anchor(&self) -> i64 {
        if let Some(s) = self.selected_span() {
            let mid = s.start() + s.duration() / 2;
            if mid >= self.t0 && mid < self.t1 {
                return mid;
            }
        }
        self.t0 + (self.t1 - self.t0) / 2
    }

    /// Zooms in one step.
    pub fn zoom_in(&mut self) {
        self.zoom_at(1.0 / ZOOM_STEP, self.zoom_anchor());
    }

    /// Zooms out one step.
    pub fn zoom_out(&mut self) {
        self.zoom_at(ZOOM_STEP, self.zoom_anchor());
    }

    /// Zooms one mouse-wheel notch around screen column `col` of the lanes.
    pub fn wheel_zoom(&mut self, col: u16, zoom_in: bool) {
        let t = self.col_time(self.columns(), i64::from(col));
        let f = if zoom_in {
            1.0 / WHEEL_ZOOM
        } else {
            WHEEL_ZOOM
        };
        self.zoom_at(f, t);
    }

    /// Moves the view by `frac` of its width (negative: to the left).
    pub fn pan(&mut self, frac: f64) {
        let dt = ((self.t1 - self.t0) as f64 * frac).round() as i64;
        self.pan_ns(dt);
    }

    /// Moves the view by `dt` ns.
    pub fn pan_ns(&mut self, dt: i64) {
        self.follow = Follow::Off;
        self.set_view(self.t0 + dt, self.t1 + dt);
    }

    /// One pan step left.
    pub fn pan_left(&mut self) {
        self.pan(-PAN_STEP);
    }

    /// One pan step right.
    pub fn pan_right(&mut self) {
        self.pan(PAN_STEP);
    }

    /// The start of the run, keeping the width.
    pub fn go_start(&mut self) {
        let w = self.t1 - self.t0;
        let lo = self.bounds().0;
        self.follow = Follow::Off;
        self.set_view(lo, lo + w);
    }

    /// The end of the run, keeping the width; in live mode the view then
    /// follows the latest time.
    pub fn go_end(&mut self) {
        let w = self.t1 - self.t0;
        let hi = self.bounds().1;
        self.set_view(hi - w, hi);
        self.follow = if self.live.is_some() {
            Follow::Latest
        } else {
            Follow::Off
        };
    }

    /// Centres the view on `[a, b)` when it is not fully on screen (fits it
    /// when it is wider than the view).
    fn reveal(&mut self, a: i64, b: i64) {
        if a >= self.t0 && b <= self.t1 && !(a == b && a == self.t1) {
            return;
        }
        let w = self.t1 - self.t0;
        if b - a > w {
            self.fit(a, b);
        } else {
            let mid = a + (b - a) / 2;
            self.set_view(mid - w / 2, mid - w / 2 + w);
        }
    }

    // ----- rows -----

    /// Scrolls so that the cursor row is on screen.
    fn reveal_cursor(&mut self) {
        let n = self.lane_rows();
        let rows = self.tl.rows().len();
        if rows == 0 {
            self.cursor = 0;
            self.scroll = 0;
            return;
        }
        self.cursor = self.cursor.min(rows - 1);
        if self.cursor < self.scroll {
            self.scroll = self.cursor;
        } else if self.cursor >= self.scroll + n {
            self.scroll = self.cursor + 1 - n;
        }
        self.scroll = self.scroll.min(rows.saturating_sub(n));
    }

    /// Scrolls the lanes by `delta` rows, keeping the cursor on screen.
    pub fn scroll_rows(&mut self, delta: isize) {
        let n = self.lane_rows();
        let rows = self.tl.rows().len();
        let max = rows.saturating_sub(n);
        self.scroll = self.scroll.saturating_add_signed(delta).min(max);
        if self.cursor < self.scroll {
            self.cursor = self.scroll;
        } else if self.cursor >= self.scroll + n {
            self.cursor = (self.scroll + n).saturating_sub(1);
        }
    }

    /// Moves the cursor `delta` rows; a selection moves with it to the span
    /// of the new lane at the same time.
    pub fn move_cursor(&mut self, delta: isize) {
        let rows = self.tl.rows().len();
        if rows == 0 {
            return;
        }
        let to = self.cursor.saturating_add_signed(delta).min(rows - 1);
        let at = self
            .selected_span()
            .map(|s| (s.start(), s.start() + s.duration() / 2));
        self.cursor = to;
        if let Some((start, mid)) = at {
            self.selection = self
                .span_near(to, mid, start)
                .map(|index| Selection { row: to, index });
            self.sync_step_with_selection();
        }
        self.reveal_cursor();
    }

    /// Sets the cursor to `row`.
    pub fn set_cursor(&mut self, row: usize) {
        self.cursor = row;
        self.reveal_cursor();
    }

    /// The span of `row` at time `mid` (the shortest one containing it), else
    /// the one starting nearest to `start`.
    fn span_near(&self, row: usize, mid: i64, start: i64) -> Option<usize> {
        let lane = self.tl.lane(row)?;
        let spans = lane.spans();
        if spans.is_empty() {
            return None;
        }
        let inside = overlapping_indices(lane, mid, mid.saturating_add(1))
            .take(100_000)
            .min_by_key(|&k| spans[k].duration());
        if inside.is_some() {
            return inside;
        }
        let k = spans.partition_point(|s| s.start() < start);
        let cands = [k.checked_sub(1), (k < spans.len()).then_some(k)];
        cands
            .into_iter()
            .flatten()
            .min_by_key(|&i| (spans[i].start() - start).unsigned_abs())
    }

    // ----- selection -----

    /// Selects span `index` of `row`, moves the cursor there and brings it
    /// on screen.
    pub fn select(&mut self, row: usize, index: usize) {
        let Some(span) = self
            .tl
            .lane(row)
            .and_then(|l| l.spans().get(index))
            .copied()
        else {
            return;
        };
        self.selection = Some(Selection { row, index });
        self.cursor = row;
        self.reveal_cursor();
        self.follow = Follow::Off;
        self.reveal(span.start(), span.end());
        self.sync_step_with_selection();
    }

    /// The current step follows the selected span.
    fn sync_step_with_selection(&mut self) {
        if let Some(s) = self.selected_span() {
            let mid = s.start() + s.duration() / 2;
            let by_number = s.step().and_then(|n| {
                self.tl
                    .steps()
                    .iter()
                    .position(|st| st.number == Some(n) && st.start <= mid && st.end >= mid)
            });
            self.current_step = by_number.or_else(|| {
                self.tl
                    .step_near(mid)
                    .filter(|&i| self.tl.steps()[i].start <= mid && self.tl.steps()[i].end >= mid)
            });
        }
    }

    /// Selects the next (`dir` > 0) or previous span of the cursor's lane:
    /// after the selection, or from the left edge of the view.
    pub fn select_next(&mut self, dir: i32) {
        let row = self.cursor;
        let Some(lane) = self.tl.lane(row) else {
            return;
        };
        let spans = lane.spans();
        if spans.is_empty() {
            self.message = Some("this lane has no spans: move to another with j/k".into());
            return;
        }
        let next = match self.selection.filter(|s| s.row == row) {
            Some(s) if dir > 0 => (s.index + 1 < spans.len()).then_some(s.index + 1),
            Some(s) => s.index.checked_sub(1),
            None if dir > 0 => {
                let k = spans.partition_point(|s| s.start() < self.t0);
                Some(k.min(spans.len() - 1))
            }
            None => {
                let k = spans.partition_point(|s| s.start() < self.t1);
                Some(k.saturating_sub(1))
            }
        };
        match next {
            Some(i) => self.select(row, i),
            None => self.message = Some("no more spans in this lane".into()),
        }
    }

    /// Selects the span under screen cell (`x`, `y`) of the lanes region;
    /// an empty cell clears the selection.
    pub fn click(&mut self, x: u16, y: u16) {
        let r = self.current_regions();
        let Some(row) = self.row_at(y) else {
            return;
        };
        self.cursor = row;
        let cols = i64::from(r.lanes.width.max(1));
        let c = i64::from(x.saturating_sub(r.lanes.x));
        let hit = self
            .span_in_cells(row, cols, c, c + 1)
            .or_else(|| self.span_in_cells(row, cols, c - 1, c + 2));
        match hit {
            Some(i) => self.select(row, i),
            None => self.selection = None,
        }
        self.reveal_cursor();
    }

    /// The span to pick in columns `[c0, c1)` of `row`: the shortest one
    /// containing the middle of the window, else the one starting nearest to
    /// it.
    fn span_in_cells(&self, row: usize, cols: i64, c0: i64, c1: i64) -> Option<usize> {
        let lane = self.tl.lane(row)?;
        let a = self.col_time(cols, c0);
        let b = self.col_time(cols, c1).max(a + 1);
        let mid = a + (b - a) / 2;
        let spans = lane.spans();
        let mut best: Option<(bool, i64, usize)> = None;
        for k in overlapping_indices(lane, a, b).take(100_000) {
            let s = &spans[k];
            let contains = s.start() <= mid && s.end() > mid;
            let key = if contains {
                (true, s.duration(), k)
            } else {
                (false, (s.start() - mid).abs(), k)
            };
            best = match best {
                None => Some(key),
                Some(b) if (key.0 && !b.0) || (key.0 == b.0 && key.1 < b.1) => Some(key),
                Some(b) => Some(b),
            };
        }
        best.map(|(_, _, i)| i)
    }

    /// Fits the view to the selected span, else to the current step.
    pub fn zoom_to_selection(&mut self) {
        self.follow = Follow::Off;
        if let Some(s) = self.selected_span().copied() {
            self.fit(s.start(), s.end().max(s.start() + self.min_width() / 2));
        } else if let Some(i) = self.current_step {
            let st = &self.tl.steps()[i];
            let (a, b) = (st.start, st.end);
            self.fit(a, b);
        } else {
            self.message = Some("nothing selected: Tab or a click selects a span".into());
        }
    }

    // ----- steps -----

    /// Makes step `i` current and fits the view to it.
    pub fn go_to_step(&mut self, i: usize) {
        let Some(st) = self.tl.steps().get(i) else {
            return;
        };
        let (a, b) = (st.start, st.end);
        self.current_step = Some(i);
        self.follow = Follow::Off;
        if self
            .selected_span()
            .is_some_and(|s| s.end() < a || s.start() > b)
        {
            self.selection = None;
        }
        self.fit(a, b);
    }

    /// The next (`dir` > 0) or previous step, from the current step when it
    /// is on screen, else from the edge of the view.
    pub fn step_by(&mut self, dir: i32) {
        self.jump = None;
        let steps = self.tl.steps();
        if steps.is_empty() {
            self.message = Some("no steps recorded".into());
            return;
        }
        let visible = |i: usize| steps[i].end > self.t0 && steps[i].start < self.t1;
        let target = match self.current_step.filter(|&i| visible(i)) {
            Some(i) if dir > 0 => (i + 1 < steps.len()).then_some(i + 1),
            Some(i) => i.checked_sub(1),
            None if dir > 0 => {
                let k = steps.partition_point(|s| s.start < self.t0);
                Some(k.min(steps.len() - 1))
            }
            None => {
                let k = steps.partition_point(|s| s.end <= self.t1);
                Some(k.saturating_sub(1))
            }
        };
        match target {
            Some(i) => self.go_to_step(i),
            None => {
                self.message = Some(if dir > 0 {
                    "this is the last step".into()
                } else {
                    "this is the first step".into()
                })
            }
        }
    }

    /// Steps ranked by `key`, descending, warm-up steps left out unless
    /// there are no others.
    fn ranked_steps(&self, key: impl Fn(&crate::timeline::StepInfo) -> i64) -> Vec<usize> {
        let steps = self.tl.steps();
        let any_steady = steps.iter().any(|s| !s.warmup);
        let mut v: Vec<usize> = (0..steps.len())
            .filter(|&i| !any_steady || !steps[i].warmup)
            .collect();
        v.sort_by_key(|&i| (std::cmp::Reverse(key(&steps[i])), i));
        v
    }

    /// Jumps to the slowest step; pressed again, to the next slowest.
    pub fn jump_slowest(&mut self) {
        let ranked = self.ranked_steps(|s| s.time_ns);
        if ranked.is_empty() {
            self.message = Some("no steps recorded".into());
            return;
        }
        let n = match self.jump {
            Some(Jump::Slowest(k)) => (k + 1) % ranked.len(),
            _ => 0,
        };
        let i = ranked[n];
        self.go_to_step(i);
        let st = &self.tl.steps()[i];
        let rank = st.slowest_rank;
        let text = format!(
            "{} of {} by step time: {}, {} on rank {rank}{}  (s again: next)",
            ordinal(n + 1),
            ranked.len(),
            st.name(i),
            format::duration(st.time_ns, self.ascii),
            if st.warmup { " (warm-up)" } else { "" },
        );
        self.select_step_span(i, rank);
        self.jump = Some(Jump::Slowest(n));
        self.message = Some(text);
    }

    /// Jumps to the step with the most exposed communication; pressed
    /// again, to the next one.
    pub fn jump_exposed(&mut self) {
        let ranked = self.ranked_steps(|s| s.exposed_ns);
        if ranked.is_empty() {
            self.message = Some("no steps recorded".into());
            return;
        }
        let n = match self.jump {
            Some(Jump::Exposed(k)) => (k + 1) % ranked.len(),
            _ => 0,
        };
        let i = ranked[n];
        self.go_to_step(i);
        let st = &self.tl.steps()[i];
        let rank = st.exposed_rank;
        let text = if st.exposed_ns == 0 {
            "no step has exposed communication".to_owned()
        } else {
            format!(
                "{} of {} by exposed communication: {}, {} exposed on rank {rank}  (e again: next)",
                ordinal(n + 1),
                ranked.len(),
                st.name(i),
                format::duration(st.exposed_ns, self.ascii),
            )
        };
        self.select_step_span(i, rank);
        self.jump = Some(Jump::Exposed(n));
        self.message = Some(text);
    }

    /// Selects the `step` span of step `i` on global rank `rank` without
    /// moving the view.
    pub(crate) fn select_step_span(&mut self, i: usize, rank: u32) {
        let Some(st) = self.tl.steps().get(i) else {
            return;
        };
        let (a, b, number) = (st.start, st.end, st.number);
        let Some(ri) = self.tl.rank_index(rank) else {
            return;
        };
        let rows: Vec<usize> = (0..self.tl.rows().len())
            .filter(|&r| self.tl.rows()[r].rank == ri)
            .collect();
        for row in rows {
            let Some(lane) = self.tl.lane(row) else {
                continue;
            };
            let spans = lane.spans();
            let lo = spans.partition_point(|s| s.start() < a);
            let hi = spans.partition_point(|s| s.start() <= b);
            let found = (lo..hi).find(|&k| {
                spans[k].kind() == SpanKind::Step && (number.is_none() || spans[k].step() == number)
            });
            if let Some(k) = found {
                self.selection = Some(Selection { row, index: k });
                self.cursor = row;
                self.reveal_cursor();
                return;
            }
        }
    }

    // ----- bucket highlight -----

    /// Highlights a bucket on every rank: the selected span's bucket first,
    /// then the next (`dir` > 0) or previous bucket id on each press.
    pub fn cycle_highlight(&mut self, dir: i32) {
        let ids = self.tl.bucket_ids();
        if ids.is_empty() {
            self.message = Some("this run has no gradient buckets".into());
            return;
        }
        let selected = self.selected_span().and_then(Span::bucket);
        let current = self.highlighted_bucket();
        let bucket = match (selected, current) {
            (Some(b), c) if c != Some(b) => b,
            (_, Some(c)) => {
                let k = ids.partition_point(|&x| x < c);
                if dir > 0 {
                    let k = if ids.get(k) == Some(&c) { k + 1 } else { k };
                    ids[k % ids.len()]
                } else {
                    ids[(k + ids.len() - 1) % ids.len()]
                }
            }
            (_, None) => {
                if dir > 0 {
                    ids[0]
                } else {
                    ids[ids.len() - 1]
                }
            }
        };
        self.set_highlight(Some(bucket));
    }

    /// Highlights `bucket` (or nothing).
    pub fn set_highlight(&mut self, bucket: Option<u32>) {
        self.highlight = bucket.map(|b| Highlight {
            bucket: b,
            rows: self.tl.bucket_cover(b),
        });
        if let Some(b) = bucket {
            self.message = Some(match self.bucket_skew(b) {
                Some(text) => format!("bucket {b}: {text}  (b/B: next/previous, Esc: off)"),
                None => {
                    format!("bucket {b} highlighted on every rank (b/B: next/previous, Esc: off)")
                }
            });
        }
    }

    /// How far apart the ranks finished bucket `b` in the step at the
    /// middle of the view: ready ends and all-reduce ends.
    pub(crate) fn bucket_skew(&self, b: u32) -> Option<String> {
        let mid = self.t0 + (self.t1 - self.t0) / 2;
        let i = self.current_step.or_else(|| self.tl.step_near(mid))?;
        let st = self.tl.steps().get(i)?;
        let mut ready: Vec<(i64, u32)> = Vec::new();
        let mut done: Vec<(i64, u32)> = Vec::new();
        for rank in &self.tl.run().ranks {
            for lane in &rank.lanes {
                let target = match lane.kind {
                    LaneKind::Buckets => &mut ready,
                    LaneKind::Comm => &mut done,
                    _ => continue,
                };
                let hit = lane
                    .overlapping(st.start, st.end)
                    .filter(|s| {
                        s.bucket() == Some(b)
                            && matches!(s.kind(), SpanKind::BucketReady | SpanKind::Collective)
                    })
                    .map(|s| s.end())
                    .max();
                if let Some(t) = hit {
                    target.push((t, rank.rank()));
                }
            }
        }
        let spread = |v: &[(i64, u32)]| -> Option<(i64, u32)> {
            let lo = v.iter().min()?;
            let hi = v.iter().max()?;
            Some((hi.0 - lo.0, hi.1))
        };
        let mut parts = Vec::new();
        if let Some((d, last)) = spread(&ready).filter(|_| ready.len() > 1) {
            parts.push(format!(
                "ready skew {} (rank {last} last)",
                format::duration(d, self.ascii)
            ));
        }
        if let Some((d, _)) = spread(&done).filter(|_| done.len() > 1) {
            parts.push(format!(
                "all-reduce end skew {}",
                format::duration(d, self.ascii)
            ));
        }
        (!parts.is_empty()).then(|| format!("{} in {}", parts.join(", "), st.name(i)))
    }

    // ----- panels and overlays -----

    /// Opens `panel`, or closes it when it is open.
    pub fn toggle_panel(&mut self, panel: Panel) {
        if self.panel == Some(panel) {
            self.panel = None;
        } else {
            self.panel = Some(panel);
            self.panel_scroll = 0;
            self.compute_panel();
        }
        self.reveal_cursor();
        self.clamp_view();
    }

    /// Computes what the open panel shows, when not done yet.
    fn compute_panel(&mut self) {
        match self.panel {
            Some(Panel::Advice) if self.advice.is_none() => {
                self.advice = Some(advise(self.tl.run(), &AdviceOptions::default()));
            }
            Some(Panel::Warnings) if self.notes.is_none() => {
                self.notes = Some(summarize(self.tl.run(), &SummaryOptions::default()).notes);
            }
            Some(Panel::Explain) if self.report.is_none() && self.explaining.is_none() => {
                if self.sources.is_empty() {
                    self.report = Some(Err("no run directory or log files to read".into()));
                    return;
                }
                let (tx, rx) = mpsc::channel();
                let sources = self.sources.clone();
                let ascii = self.ascii;
                std::thread::spawn(move || {
                    let report = probe_explain::explain(&sources)
                        .map_err(|e| clean(&e.to_string(), ascii).into_owned());
                    // The viewer may have moved on (reloaded, quit): nobody to tell.
                    let _ = tx.send(report);
                });
                self.explaining = Some(rx);
            }
            _ => {}
        }
    }

    /// Takes the explain report when its thread has finished; true when it
    /// did (the screen has something new to draw).
    pub fn poll_background(&mut self) -> bool {
        let Some(rx) = &self.explaining else {
            return false;
        };
        let report = match rx.try_recv() {
            Ok(report) => report,
            Err(mpsc::TryRecvError::Empty) => return false,
            Err(mpsc::TryRecvError::Disconnected) => {
                Err("explain stopped before it finished (see the terminal's messages)".into())
            }
        };
        self.report = Some(report);
        self.explaining = None;
        true
    }

    /// Waits for what [`App::poll_background`] would take (benchmarks and
    /// tests that need the panel's content).
    pub fn wait_for_background(&mut self) {
        if let Some(rx) = self.explaining.take() {
            self.report = Some(rx.recv().unwrap_or_else(|_| {
                Err("explain stopped before it finished (see the terminal's messages)".into())
            }));
        }
    }

    /// Scrolls the open panel (or the help overlay) by `delta` lines.
    pub fn scroll_panel(&mut self, delta: isize) {
        if self.mode == Mode::Help {
            self.help_scroll = self.help_scroll.saturating_add_signed(delta);
        } else {
            self.panel_scroll = self.panel_scroll.saturating_add_signed(delta);
        }
    }

    /// Opens or closes the help overlay.
    pub fn toggle_help(&mut self) {
        self.mode = match self.mode {
            Mode::Help => Mode::Timeline,
            Mode::Timeline | Mode::Heatmap => {
                self.help_scroll = 0;
                Mode::Help
            }
        };
    }

    /// Esc: closes the help, else clears the selection, else the bucket
    /// highlight, else closes the panel.
    pub fn escape(&mut self) {
        if self.mode == Mode::Help {
            self.mode = Mode::Timeline;
        } else if self.selection.is_some() {
            self.selection = None;
        } else if self.highlight.is_some() {
            self.highlight = None;
        } else if self.panel.is_some() {
            self.panel = None;
            self.clamp_view();
        }
    }

    // ----- live mode -----

    /// Turns on live mode: the title shows `status` and the view follows
    /// the run as it grows.
    pub fn set_live(&mut self, status: LiveStatus) {
        if self.live.is_none() {
            self.follow = Follow::All;
        }
        self.live = Some(status);
    }

    /// The live status, if in live mode.
    pub fn live(&self) -> Option<&LiveStatus> {
        self.live.as_ref()
    }

    /// Whether the user asked for a reload (and clears the request).
    pub fn take_reload_request(&mut self) -> bool {
        match &mut self.live {
            Some(l) => std::mem::take(&mut l.reload_requested),
            None => false,
        }
    }

    /// Asks live mode to reload now.
    pub fn request_reload(&mut self) {
        match &mut self.live {
            Some(l) => l.reload_requested = true,
            None => self.message = Some("r reloads in live mode only".into()),
        }
    }

    /// Swaps in a newer version of the run, keeping the view, the cursor,
    /// the selection and the highlight where they still exist.
    pub fn replace_timeline(&mut self, tl: Timeline) {
        let key_of = |t: &Timeline, row: usize| {
            let r = t.rows().get(row)?;
            let rank = t.run().ranks.get(r.rank)?;
            let lane = rank.lanes.get(r.lane)?;
            Some((rank.rank(), lane.kind, lane.name.clone()))
        };
        let cursor_key = key_of(&self.tl, self.cursor);
        let sel = self.selection.and_then(|s| {
            let span = *self.tl.lane(s.row)?.spans().get(s.index)?;
            Some((key_of(&self.tl, s.row)?, span))
        });
        let step = self
            .current_step
            .and_then(|i| self.tl.steps().get(i))
            .map(|s| (s.number, s.start));
        let bucket = self.highlighted_bucket();
        self.tl = tl;
        let find_row = |t: &Timeline, key: &(u32, LaneKind, String)| {
            (0..t.rows().len()).find(|&r| key_of(t, r).as_ref() == Some(key))
        };
        self.cursor = cursor_key.and_then(|k| find_row(&self.tl, &k)).unwrap_or(0);
        self.selection = sel.and_then(|(key, span)| {
            let row = find_row(&self.tl, &key)?;
            let spans = self.tl.lane(row)?.spans();
            let lo = spans.partition_point(|s| s.start() < span.start());
            let index = (lo..spans.len())
                .take_while(|&k| spans[k].start() == span.start())
                .find(|&k| spans[k].kind() == span.kind() && spans[k].end() == span.end())?;
            Some(Selection { row, index })
        });
        self.current_step = step.and_then(|(n, start)| {
            self.tl
                .steps()
                .iter()
                .position(|s| s.number == n && (n.is_some() || s.start == start))
        });
        self.highlight = bucket.map(|b| Highlight {
            bucket: b,
            rows: self.tl.bucket_cover(b),
        });
        self.advice = None;
        self.notes = None;
        self.report = None;
        self.explaining = None;
        // The heatmaps follow a live run while their view is open; otherwise they are
        // computed again when it next opens.
        self.heat = (self.mode == Mode::Heatmap)
            .then(|| probe::analysis::heatmap::heatmaps(self.tl.run(), self.tl.breakdowns()));
        if let Some(h) = &self.heat {
            let c = &mut self.heat_cursor;
            c.rank_index = c.rank_index.min(h.ranks.len().saturating_sub(1));
            c.step_index = c.step_index.min(h.steps.len().saturating_sub(1));
        }
        self.compute_panel();
        match self.follow {
            Follow::All => {
                let (lo, hi) = self.bounds();
                self.t0 = lo;
                self.t1 = hi;
            }
            Follow::Latest => {
                let w = self.t1 - self.t0;
                let hi = self.bounds().1;
                self.t0 = hi - w;
                self.t1 = hi;
            }
            Follow::Off => {}
        }
        self.clamp_view();
        self.reveal_cursor();
    }
}

/// "1st", "2nd", "3rd", "4th"...
fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinals() {
        assert_eq!(ordinal(1), "1st");
        assert_eq!(ordinal(2), "2nd");
        assert_eq!(ordinal(3), "3rd");
        assert_eq!(ordinal(11), "11th");
        assert_eq!(ordinal(22), "22nd");
    }
}
