//! The text of the details area, the side panels and the help overlay,
//! built from the [`App`]'s state as styled lines. Every string taken from
//! the run goes through [`clean`].

use probe::analysis::busbw_factor;
use probe::model::{LaneKind, SpanRef};
use probe::trace::SpanKind;
use probe::wrap::{wrap_lines, Layout};
use ratatui::style::Style;
use ratatui::text::{Line, Span as Text};

use crate::app::{App, Panel};
use crate::format::{self, clean, clip};
use crate::input::KEYS;
use crate::theme::{self, Class};
use crate::timeline::StepInfo;

/// The order of the legend: compute first, then gradients and
/// communication, then the rest.
const LEGEND_ORDER: [Class; 15] = [
    Class::Forward,
    Class::Backward,
    Class::Optimizer,
    Class::Data,
    Class::Ready,
    Class::Overlapped,
    Class::Exposed,
    Class::Writeback,
    Class::Checkpoint,
    Class::Kernel,
    Class::CommKernel,
    Class::Memcpy,
    Class::User,
    Class::Other,
    Class::Step,
];

impl App {
    /// Text from the run, safe to draw in the current character set.
    pub(crate) fn safe(&self, s: &str) -> String {
        clean(s, self.ascii).into_owned()
    }

    pub(crate) fn dur(&self, ns: i64) -> String {
        format::duration(ns, self.ascii)
    }

    /// Time `t` (rank 0's timeline) as shown to the user: since the start of
    /// the run, in the unit of the view's end.
    pub(crate) fn at(&self, t: i64) -> String {
        let res = ((self.t1 - self.t0) / 1000).max(1);
        let scale = (self.t1 - self.tl.origin()).abs();
        format::time_at(t - self.tl.origin(), res, scale, self.ascii)
    }

    /// The fields describing the selected span, or the cursor and the
    /// current step when nothing is selected.
    pub(crate) fn details_fields(&self) -> Vec<(String, Style)> {
        match self.selection {
            Some(sel) => self.span_fields(sel.row, sel.index),
            None => self.idle_fields(),
        }
    }

    fn span_fields(&self, row: usize, index: usize) -> Vec<(String, Style)> {
        let (Some(rank), Some(lane)) = (self.tl.rank_of(row), self.tl.lane(row)) else {
            return Vec::new();
        };
        let Some(span) = lane.spans().get(index) else {
            return Vec::new();
        };
        let run = self.tl.run();
        let sr: SpanRef<'_> = run.span(rank, span);
        let g = self.glyphs();
        let mut f: Vec<(String, Style)> = Vec::new();
        let text = theme::TEXT;
        let dim = theme::DIM;
        let kind = sr.kind_name();
        let what = match span.kind() {
            SpanKind::Collective => sr.op().unwrap_or(kind).to_owned(),
            SpanKind::Kernel | SpanKind::User | SpanKind::Other => {
                sr.name().unwrap_or(kind).to_owned()
            }
            _ => kind.to_owned(),
        };
        f.push((
            format!("{} {}", g.marker, self.safe(&clip(&what, 60, self.ascii))),
            theme::HEADING,
        ));
        let host = &rank.header.hostname;
        f.push((
            if host.is_empty() {
                format!("rank {}", rank.rank())
            } else {
                format!(
                    "rank {} ({})",
                    rank.rank(),
                    self.safe(&clip(host, 24, self.ascii))
                )
            },
            text,
        ));
        if lane.kind == LaneKind::Custom || matches!(lane.kind, LaneKind::Gpu { .. }) {
            f.push((format!("lane {}", self.safe(&lane.name)), dim));
        }
        if let Some(n) = span.step() {
            f.push((format!("step {n}"), text));
        }
        if let Some(b) = span.bucket() {
            f.push((format!("bucket {b}"), text));
        }
        if let Some(bytes) = span.bytes() {
            f.push((probe::units::bytes(bytes as f64), text));
        }
        if let Some(p) = sr.params() {
            f.push((format!("{p} params"), text));
        }
        let d = span.duration();
        f.push((self.dur(d), theme::HEADING));
        f.push((
            format!(
                "{} {} {}",
                self.at(span.start()),
                g.arrow,
                self.at(span.end())
            ),
            dim,
        ));
        if span.kind() == SpanKind::Step {
            self.step_span_fields(rank.rank(), span.start(), &mut f);
        }
        if let Some(seq) = span.seq() {
            f.push((format!("seq {seq}"), text));
        }
        let how: Vec<String> = [sr.algo(), sr.transport(), sr.dtype()]
            .into_iter()
            .flatten()
            .map(|s| self.safe(&clip(s, 16, self.ascii)))
            .collect();
        if !how.is_empty() {
            f.push((how.join("/"), dim));
        }
        if let Some(q) = span.queued() {
            let wait = span.start() - q;
            if wait > 0 {
                f.push((format!("queued {} before start", self.dur(wait)), dim));
            }
        }
        // Waiting for the last rank vs transfer: the same collective (sequence
        // number) on the other ranks.
        let split = (span.kind() == SpanKind::Collective)
            .then(|| self.collective_split(rank.rank(), span))
            .flatten();
        if let Some(sp) = &split {
            let line = match sp.last_rank {
                Some(last) if sp.waited > 0 => format!(
                    "waited {} for rank {last}; transfer {}",
                    self.dur(sp.waited),
                    self.dur(sp.transfer)
                ),
                _ => format!(
                    "arrived last of {} ranks; transfer {}",
                    sp.ranks,
                    self.dur(sp.transfer)
                ),
            };
            f.push((line, theme::HEADING));
        }
        if let (Some(bytes), true) = (span.bytes(), d > 0) {
            if span.kind() == SpanKind::Collective {
                // Bandwidth over the transfer where the other ranks are known:
                // over the whole call it would count the waiting as slow network.
                let (t, over) = match &split {
                    Some(sp) if sp.transfer > 0 => (sp.transfer, " over the transfer"),
                    _ => (d, ""),
                };
                let alg = bytes as f64 / (t as f64 / 1e9);
                // One rank moves nothing across a bus: algbw only, as the summary does.
                let line = match busbw_factor(sr.op().unwrap_or(""), run.world_size) {
                    Some(factor) => format!(
                        "algbw {}  busbw {}{over}",
                        probe::units::rate(alg),
                        probe::units::rate(alg * factor)
                    ),
                    None => format!(
                        "algbw {}{over} (one rank: no busbw)",
                        probe::units::rate(alg)
                    ),
                };
                f.push((line, text));
            }
        }
        let rank_index = self.tl.rows()[row].rank;
        if !matches!(
            span.kind(),
            SpanKind::Forward | SpanKind::Backward | SpanKind::Optimizer | SpanKind::Step
        ) && !matches!(lane.kind, LaneKind::Gpu { .. })
        {
            if let Some(compute) = self.tl.compute(rank_index) {
                let over = compute.covered(span.start(), span.end());
                if d > 0 {
                    let share = over as f64 / d as f64;
                    let mut s = format!("overlap with compute {}", probe::units::pct(share));
                    let style = if span.kind() == SpanKind::Collective && over < d {
                        s.push_str(&format!(", exposed {}", self.dur(d - over)));
                        theme::WARN
                    } else {
                        text
                    };
                    f.push((s, style));
                }
            }
        }
        if let (Some(b), Some(step)) = (span.bucket(), span.step()) {
            if let Some(names) = self.bucket_param_names(rank, b, step) {
                f.push((names, dim));
            }
        }
        if let Some(name) = sr.name() {
            if !matches!(
                span.kind(),
                SpanKind::Kernel | SpanKind::User | SpanKind::Other
            ) {
                f.push((
                    format!("name {}", self.safe(&clip(name, 40, self.ascii))),
                    dim,
                ));
            }
        }
        if let Some(c) = sr.correlation() {
            f.push((format!("correlation {c}"), dim));
        }
        if let Some(p) = sr.peer() {
            f.push((format!("peer {p}"), dim));
        }
        if let Some(args) = sr.args_json() {
            f.push((
                format!("args {}", self.safe(&clip(args, 80, self.ascii))),
                dim,
            ));
        }
        f
    }

    /// The call of `rank` to the collective `span` against the same collective
    /// (sequence number) on the other ranks: how long it waited for the last
    /// rank to arrive (latest start − its start) and its transfer (its end −
    /// the latest start), which add up to its duration. `None` without a
    /// sequence number or another rank's call. Where DDP reduces over
    /// subgroups, only the ranks of `rank`'s group share its numbers.
    fn collective_split(&self, rank: u32, span: &probe::model::Span) -> Option<CollectiveSplit> {
        let seq = span.seq()?;
        let run = self.tl.run();
        let group = run.rank(rank).map(|r| r.seq_group());
        let mut calls: Vec<(i64, i64, u32)> = Vec::new();
        for r in run.ranks.iter().filter(|r| Some(r.seq_group()) == group) {
            for lane in r.lanes.iter().filter(|l| l.kind == LaneKind::Comm) {
                // Every rank's call holds the transfer, at the end of this one.
                if let Some(c) = lane
                    .overlapping(span.start(), span.end())
                    .find(|c| c.seq() == Some(seq) && c.kind() == SpanKind::Collective)
                {
                    calls.push((c.start(), c.end(), r.rank()));
                    break;
                }
            }
        }
        if calls.len() < 2 {
            return None;
        }
        let latest = calls.iter().map(|c| c.0).max()?;
        let at_latest: Vec<u32> = calls
            .iter()
            .filter(|c| c.0 == latest)
            .map(|c| c.2)
            .collect();
        Some(CollectiveSplit {
            ranks: calls.len(),
            waited: (latest - span.start()).clamp(0, span.duration().max(0)),
            last_rank: (at_latest.len() == 1 && at_latest[0] != rank).then(|| at_latest[0]),
            transfer: (span.end() - latest.max(span.start())).max(0),
        })
    }

    /// The breakdown of a selected `step` span.
    fn step_span_fields(&self, rank: u32, start: i64, f: &mut Vec<(String, Style)>) {
        let Some(b) = self
            .tl
            .breakdowns()
            .iter()
            .find(|b| b.rank == rank && b.start_ns == start)
        else {
            return;
        };
        let parts = [
            ("data", b.data_wait_ns),
            ("fwd", b.forward_ns),
            ("bwd", b.backward_ns),
            ("opt", b.optimizer_ns),
            ("other", b.other_ns),
        ];
        let list: Vec<String> = parts
            .iter()
            .map(|(n, v)| format!("{n} {}", self.dur(*v)))
            .collect();
        f.push((list.join("  "), theme::TEXT));
        f.push((
            format!(
                "comm {} (overlapped {}, exposed {})",
                self.dur(b.comm_ns),
                self.dur(b.comm_overlapped_ns),
                self.dur(b.comm_exposed_ns)
            ),
            if b.comm_exposed_ns > 0 {
                theme::WARN
            } else {
                theme::TEXT
            },
        ));
        if let Some(w) = b.warmup {
            f.push((format!("warm-up: {}", w.describe()), theme::DIM));
        }
    }

    /// "params layers.3.weight, layers.3.bias, +2 more".
    fn bucket_param_names(
        &self,
        rank: &probe::model::RankTrace,
        bucket: u32,
        step: u64,
    ) -> Option<String> {
        let layout = rank.layout_at(step)?;
        let info = layout.buckets.iter().find(|b| b.id == bucket)?;
        let table = &rank.header.ddp.as_ref()?.params;
        let names: Vec<String> = info
            .params
            .iter()
            .take(3)
            .filter_map(|&i| table.get(i as usize))
            .map(|p| self.safe(&clip(&p.name, 40, self.ascii)))
            .collect();
        if names.is_empty() {
            return None;
        }
        let more = info.params.len().saturating_sub(names.len());
        let mut s = format!("params {}", names.join(", "));
        if more > 0 {
            s.push_str(&format!(", +{more} more"));
        }
        Some(s)
    }

    /// How a rank's recording ended, when not normally: no `end` record
    /// (killed, crashed or hung; not said while live mode still records) or
    /// a status other than `ok`.
    pub(crate) fn rank_end_problem(&self, rank: &probe::model::RankTrace) -> Option<String> {
        if self.live.as_ref().is_some_and(|l| !l.finished) {
            return None;
        }
        match &rank.end {
            None => Some(format!(
                "rank {} has no end record (killed, crashed or hung)",
                rank.rank()
            )),
            Some(e) if e.status != "ok" => {
                let mut s = format!(
                    "rank {} ended: {}",
                    rank.rank(),
                    self.safe(&clip(&e.status, 20, self.ascii))
                );
                if let Some(m) = &e.message {
                    s.push_str(&format!(": {}", self.safe(&clip(m, 80, self.ascii))));
                }
                Some(s)
            }
            Some(_) => None,
        }
    }

    /// With nothing selected: the cursor's lane and the current step.
    fn idle_fields(&self) -> Vec<(String, Style)> {
        let mut f = Vec::new();
        if let Some(row) = self.tl.rows().get(self.cursor) {
            let trace = &self.tl.run().ranks[row.rank];
            let rank = trace.rank();
            f.push((format!("r{rank} {}", self.safe(&row.label)), theme::HEADING));
            if let Some(problem) = self.rank_end_problem(trace) {
                f.push((problem, theme::WARN));
            }
        }
        let mid = self.t0 + (self.t1 - self.t0) / 2;
        let step = self.current_step.or_else(|| self.tl.step_near(mid));
        if let Some(i) = step {
            let st = &self.tl.steps()[i];
            f.push((
                format!(
                    "{} {} (rank {})",
                    st.name(i),
                    self.dur(st.time_ns),
                    st.slowest_rank
                ),
                theme::TEXT,
            ));
            if st.exposed_ns > 0 {
                f.push((
                    format!(
                        "exposed comm {} (rank {})",
                        self.dur(st.exposed_ns),
                        st.exposed_rank
                    ),
                    theme::WARN,
                ));
            }
        } else if self.tl.rows().is_empty() {
            f.push(("no spans recorded yet".to_owned(), theme::DIM));
        }
        f
    }

    /// The classes drawn anywhere in the run, in legend order (the odd
    /// bucket colour goes with the even one).
    pub(crate) fn legend_classes(&self) -> Vec<Class> {
        let mut present = [false; Class::COUNT];
        for r in self.tl.rows() {
            for (c, _) in &r.classes {
                present[c.index()] = true;
            }
        }
        if present[Class::ReadyAlt.index()] {
            present[Class::Ready.index()] = true;
        }
        LEGEND_ORDER
            .into_iter()
            .filter(|c| present[c.index()])
            .collect()
    }

    /// The legend: a swatch and a short name per class.
    pub(crate) fn legend(&self) -> Vec<Text<'static>> {
        let g = self.glyphs();
        let mut out = Vec::new();
        for c in self.legend_classes() {
            let swatch = |k: Class| {
                let s = if g.ascii {
                    k.letter().to_string()
                } else if k == Class::Step {
                    g.gap.to_owned()
                } else {
                    g.full.to_owned()
                };
                Text::styled(s, Style::new().fg(k.color()))
            };
            out.push(swatch(c));
            out.push(Text::styled(format!(" {}  ", c.name()), theme::DIM));
        }
        if !self.tl.open_spans().is_empty() {
            out.push(Text::styled(g.open.to_owned(), theme::OPEN));
            out.push(Text::styled(" unfinished  ".to_owned(), theme::DIM));
        }
        out
    }

    /// The lines of the open panel for an inner width of `width`.
    pub(crate) fn panel_lines(&self, panel: Panel, width: usize) -> Vec<Line<'static>> {
        match panel {
            Panel::Breakdown => self.breakdown_lines(width),
            Panel::Advice => match &self.advice {
                Some(a) => self.text_lines(&a.render_text(width), width),
                None => vec![Line::from("computing...")],
            },
            Panel::Explain => match &self.report {
                Some(Ok(r)) => self.text_lines(&r.render_text(width), width),
                Some(Err(e)) => vec![
                    Line::styled("explain could not read the run:", theme::WARN),
                    Line::from(wrap_text(&self.safe(e), width).join(" ")),
                ],
                None => self.text_lines(
                    "reading the run's logs and traces... (a large run takes a few seconds; the \
                     timeline keeps working meanwhile)",
                    width,
                ),
            },
            Panel::Warnings => self.warning_lines(width),
        }
    }

    /// The summary's warnings, each a paragraph (or what was checked when there is none), then
    /// its notes.
    fn warning_lines(&self, width: usize) -> Vec<Line<'static>> {
        let warnings = self.tl.warnings();
        let mut out = if warnings.is_empty() {
            self.text_lines(
                "no warnings: the checks of `ddp-probe summary` (the same input on every rank, \
                 gradient accumulation without no_sync, one file saved by several ranks, and \
                 the PyTorch module's own: a sampler never given its epoch, training in eval \
                 mode...) found nothing in this run",
                width,
            )
        } else {
            Vec::new()
        };
        let paragraphs = warnings
            .iter()
            .map(|w| (format!("warning: {w}"), true))
            .chain(
                self.notes
                    .iter()
                    .flatten()
                    .map(|n| (format!("note: {n}"), false)),
            );
        for (text, warning) in paragraphs {
            if !out.is_empty() {
                out.push(Line::from(""));
            }
            for (j, l) in wrap_text(&self.safe(&text), width).into_iter().enumerate() {
                out.push(if j == 0 && warning {
                    Line::styled(l, theme::WARN)
                } else {
                    Line::from(l)
                });
            }
        }
        out
    }

    fn text_lines(&self, text: &str, width: usize) -> Vec<Line<'static>> {
        text.lines()
            .flat_map(|l| wrap_text(&self.safe(l), width))
            .map(Line::from)
            .collect()
    }

    /// The step shown in the breakdown panel: the current one, else the one
    /// at the middle of the view.
    pub(crate) fn panel_step(&self) -> Option<usize> {
        let mid = self.t0 + (self.t1 - self.t0) / 2;
        self.current_step.or_else(|| self.tl.step_near(mid))
    }

    fn breakdown_lines(&self, width: usize) -> Vec<Line<'static>> {
        let Some(i) = self.panel_step() else {
            return vec![Line::from("no steps recorded")];
        };
        let st: &StepInfo = &self.tl.steps()[i];
        let mut out = vec![
            Line::styled(
                format!(
                    "{}{}",
                    st.name(i),
                    if st.warmup { " (warm-up)" } else { "" }
                ),
                theme::HEADING,
            ),
            Line::from(format!(
                "longest {} on rank {}",
                self.dur(st.time_ns),
                st.slowest_rank
            )),
        ];
        if st.exposed_ns > 0 {
            out.push(Line::styled(
                format!(
                    "most exposed comm {} on rank {}",
                    self.dur(st.exposed_ns),
                    st.exposed_rank
                ),
                theme::WARN,
            ));
        }
        out.push(Line::from(""));
        let parts: Vec<&probe::analysis::StepBreakdown> = st
            .parts
            .iter()
            .filter_map(|&k| self.tl.breakdowns().get(k))
            .collect();
        type Get = fn(&probe::analysis::StepBreakdown) -> i64;
        // Each row with the part of the step it reads, when the trace may lack that part.
        let metrics: [(&str, Option<&str>, Get); 11] = [
            ("step", None, |b| b.step_ns),
            ("data wait", Some("data wait"), |b| b.data_wait_ns),
            ("forward", None, |b| b.forward_ns),
            ("backward", None, |b| b.backward_ns),
            ("comm", Some("communication"), |b| b.comm_ns),
            (" overlapped", Some("communication"), |b| {
                b.comm_overlapped_ns
            }),
            (" exposed", Some("communication"), |b| b.comm_exposed_ns),
            ("optimizer", Some("optimizer"), |b| b.optimizer_ns),
            ("writeback", Some("writeback"), |b| b.writeback_ns),
            ("other", None, |b| b.other_ns),
            ("comm tail", Some("communication"), |b| b.comm_tail_ns),
        ];
        let not_recorded = self.tl.not_recorded();
        let label_w = 12;
        let col_w = 10;
        let fit = width.saturating_sub(label_w) / col_w;
        let per_rank = parts.len() <= fit.max(1);
        let mut head = format!("{:<label_w$}", "");
        if per_rank {
            for b in &parts {
                head.push_str(&format!("{:>col_w$}", format!("rank {}", b.rank)));
            }
        } else {
            for h in ["min", "median", "max"] {
                head.push_str(&format!("{h:>col_w$}"));
            }
        }
        out.push(Line::styled(head, theme::DIM));
        for (name, part, get) in metrics {
            let mut line = format!("{name:<label_w$}");
            if part.is_some_and(|p| !probe::analysis::part_recorded(not_recorded, p)) {
                let columns = if per_rank { parts.len() } else { 3 };
                for _ in 0..columns {
                    line.push_str(&format!("{:>col_w$}", "-"));
                }
                out.push(Line::styled(line, theme::DIM));
                continue;
            }
            let mut v: Vec<i64> = parts.iter().map(|b| get(b)).collect();
            if per_rank {
                for x in &v {
                    line.push_str(&format!("{:>col_w$}", self.dur(*x)));
                }
            } else {
                v.sort_unstable();
                let pick = [v[0], v[v.len() / 2], v[v.len() - 1]];
                for x in pick {
                    line.push_str(&format!("{:>col_w$}", self.dur(x)));
                }
            }
            let style = if name == " exposed" && v.iter().any(|&x| x > 0) {
                theme::WARN
            } else {
                theme::TEXT
            };
            out.push(Line::styled(line, style));
        }
        if !not_recorded.is_empty() {
            out.push(Line::styled(
                format!("-: not recorded ({})", not_recorded.join(", ")),
                theme::DIM,
            ));
        }
        if !per_rank {
            out.push(Line::from(""));
            out.push(Line::styled(
                format!("{} ranks: too many to list side by side", parts.len()),
                theme::DIM,
            ));
        }
        out.push(Line::from(""));
        out.push(Line::styled(
            "n/p: next/previous step, s: slowest, e: most exposed",
            theme::DIM,
        ));
        out
    }

    /// The help overlay's lines for an inner width of `width`: every key
    /// (in two columns when they fit), then the colours.
    pub(crate) fn help_lines(&self, width: usize) -> Vec<Line<'static>> {
        let kw = KEYS.iter().map(|(k, _)| k.len()).max().unwrap_or(8);
        let dw = KEYS.iter().map(|(_, d)| d.len()).max().unwrap_or(20);
        let entry = |(k, d): &(&str, &str)| {
            vec![
                Text::styled(format!("{k:<kw$}  "), theme::KEY),
                Text::styled(format!("{d:<dw$}"), theme::TEXT),
            ]
        };
        let mut out: Vec<Line<'static>> = Vec::new();
        if 2 * (kw + 2 + dw) + 2 <= width {
            let half = KEYS.len().div_ceil(2);
            for (i, left) in KEYS.iter().enumerate().take(half) {
                let mut spans = entry(left);
                if let Some(right) = KEYS.get(i + half) {
                    spans.push(Text::raw("  "));
                    spans.extend(entry(right));
                }
                out.push(Line::from(spans));
            }
        } else {
            out.extend(KEYS.iter().map(|e| Line::from(entry(e))));
        }
        out.push(Line::from(""));
        out.extend(wrap_spans(self.legend(), width));
        out.push(Line::styled(
            "red in a comm lane: all-reduce with no compute running (exposed)",
            Style::new().fg(Class::Exposed.color()),
        ));
        out
    }
}

/// Packs styled pieces into lines of at most `width` columns.
pub(crate) fn wrap_spans(items: Vec<Text<'static>>, width: usize) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let mut cur: Vec<Text<'static>> = Vec::new();
    let mut used = 0;
    // Pieces come in pairs (swatch, name): keep each pair on one line.
    for pair in items.chunks(2) {
        let w: usize = pair.iter().map(|t| t.width()).sum();
        if used > 0 && used + w > width {
            lines.push(Line::from(std::mem::take(&mut cur)));
            used = 0;
        }
        cur.extend(pair.iter().cloned());
        used += w;
    }
    if !cur.is_empty() {
        lines.push(Line::from(cur));
    }
    lines
}

/// Wraps one line of text to `width` columns at spaces; continuation lines
/// keep the line's indentation plus two spaces.
pub(crate) fn wrap_text(line: &str, width: usize) -> Vec<String> {
    let width = width.max(8);
    if line.chars().count() <= width {
        return vec![line.to_owned()];
    }
    let indent = line.len() - line.trim_start().len();
    let cont = " ".repeat((indent + 2).min(width / 2));
    let layout = Layout {
        first: &line[..indent],
        rest: &cont,
        cut_long_words: true,
    };
    let lines = wrap_lines(line.trim_start(), width, &layout);
    if lines.is_empty() {
        return vec![line.to_owned()];
    }
    lines
}

/// A collective call against the same collective on the other ranks
/// ([`App::collective_split`]).
struct CollectiveSplit {
    /// Ranks that recorded it.
    ranks: usize,
    /// How long this call waited for the last rank (ns).
    waited: i64,
    /// The rank that arrived last, when it is another one and alone.
    last_rank: Option<u32>,
    /// The rest of the call once every rank was there: end − latest start (ns).
    transfer: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_wraps_at_spaces_with_indentation() {
        let w = wrap_text("  alpha beta gamma delta", 12);
        assert_eq!(w, vec!["  alpha beta", "    gamma", "    delta"]);
        assert_eq!(wrap_text("short", 12), vec!["short"]);
        let long = wrap_text("abcdefghijklmnop", 8);
        // A word longer than a line is cut to the narrowest line's width.
        assert_eq!(long, vec!["abcdef", "  ghijkl", "  mnop"]);
        for l in wrap_text("x".repeat(100).as_str(), 10) {
            assert!(l.chars().count() <= 10);
        }
    }
}
