//! The text of the details area, the side panels and the help overlay,
//! built from the [`App`]'s state as styled lines. Every string taken from
//! the run goes through [`clean`].

use probe::analysis::bus_factor;
use probe::model::{LaneKind, SpanRef};
use probe::trace::SpanKind;
use ratatui::style::{Style, Stylize};
use ratatui::text::{Line, Span as Text};

use crate::app::{App, Panel};
use crate::format::{self, clean, clip};
use crate::input::KEYS;
use crate::theme::{self, Class};
use crate::timeline::StepInfo;

impl App {
    /// Text from the run, safe to draw in the current character set.
    pub(crate) fn safe(&self, s: &str) -> String {
        clean(s, self.ascii).into_owned()
    }

    pub(crate) fn dur(&self, ns: i64) -> String {
        format::duration(ns, self.ascii)
    }

    /// Time `t` (rank 0's timeline) as shown to the user: since the start of
    /// the run.
    pub(crate) fn at(&self, t: i64) -> String {
        let res = ((self.t1 - self.t0) / 1000).max(1);
        format::time_at(t - self.tl.origin(), res, self.ascii)
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
                format!("rank {} ({})", rank.rank(), self.safe(&clip(host, 24, self.ascii)))
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
            f.push((format::bytes(bytes), text));
        }
        if let Some(p) = sr.params() {
            f.push((format!("{p} params"), text));
        }
        let d = span.duration();
        f.push((self.dur(d), theme::HEADING));
        f.push((
            format!("{} {} {}", self.at(span.start()), g.arrow, self.at(span.end())),
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
        if let (Some(bytes), true) = (span.bytes(), d > 0) {
            if span.kind() == SpanKind::Collective {
                let alg = bytes as f64 / (d as f64 / 1e9);
                let n = run.world_size.max(1);
                let bus = alg * bus_factor(sr.op().unwrap_or(""), n);
                f.push((
                    format!(
                        "algbw {}  busbw {}",
                        format::rate(alg),
                        format::rate(bus)
                    ),
                    text,
                ));
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
                    let mut s = format!("overlap with compute {}", format::pct(share));
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
                f.push((format!("name {}", self.safe(&clip(name, 40, self.ascii))), dim));
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

    /// With nothing selected: the cursor's lane and the current step.
    fn idle_fields(&self) -> Vec<(String, Style)> {
        let mut f = Vec::new();
        if let Some(row) = self.tl.rows().get(self.cursor) {
            let rank = self.tl.run().ranks[row.rank].rank();
            f.push((
                format!("lane r{rank} {}", self.safe(&row.label)),
                theme::HEADING,
            ));
        }
        let mid = self.t0 + (self.t1 - self.t0) / 2;
        let step = self.current_step.or_else(|| self.tl.step_near(mid));
        if let Some(i) = step {
            let st = &self.tl.steps()[i];
            f.push((
                format!(
                    "{}: {} (slowest rank {})",
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
        }
        f.push((
            "Tab or click: select a span  ? help".to_owned(),
            theme::DIM,
        ));
        f
    }

    /// The classes drawn anywhere in the run, in legend order.
    pub(crate) fn legend_classes(&self) -> Vec<Class> {
        let mut present = [false; Class::COUNT];
        for r in self.tl.rows() {
            for (c, _) in &r.classes {
                present[c.index()] = true;
            }
        }
        Class::ALL
            .into_iter()
            .filter(|c| present[c.index()])
            .collect()
    }

    /// The legend: a swatch and a name per class.
    pub(crate) fn legend(&self) -> Vec<Text<'static>> {
        let g = self.glyphs();
        let mut out = Vec::new();
        for c in self.legend_classes() {
            let swatch = if g.ascii {
                c.letter().to_string()
            } else if c == Class::Step {
                g.gap.to_owned()
            } else {
                g.full.to_owned()
            };
            out.push(Text::styled(swatch, Style::new().fg(c.color())));
            out.push(Text::styled(format!(" {}  ", c.name()), theme::DIM));
        }
        out
    }

    /// The lines of the open panel for an inner width of `width`.
    pub(crate) fn panel_lines(&self, panel: Panel, width: usize) -> Vec<Line<'static>> {
        match panel {
            Panel::Breakdown => self.breakdown_lines(width),
            Panel::Advice => match &self.advice {
                Some(a) => self.text_lines(&a.render_text(width.max(40))),
                None => vec![Line::from("computing...")],
            },
            Panel::Explain => match &self.report {
                Some(Ok(r)) => self.text_lines(&r.render_text(width.max(40))),
                Some(Err(e)) => vec![
                    Line::styled("explain could not read the run:", theme::WARN),
                    Line::from(self.safe(e)),
                ],
                None => vec![Line::from("reading...")],
            },
        }
    }

    fn text_lines(&self, text: &str) -> Vec<Line<'static>> {
        text.lines().map(|l| Line::from(self.safe(l))).collect()
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
        let metrics: [(&str, Get); 11] = [
            ("step", |b| b.step_ns),
            ("data wait", |b| b.data_wait_ns),
            ("forward", |b| b.forward_ns),
            ("backward", |b| b.backward_ns),
            ("comm", |b| b.comm_ns),
            (" overlapped", |b| b.comm_overlapped_ns),
            (" exposed", |b| b.comm_exposed_ns),
            ("optimizer", |b| b.optimizer_ns),
            ("writeback", |b| b.writeback_ns),
            ("other", |b| b.other_ns),
            ("comm tail", |b| b.comm_tail_ns),
        ];
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
        for (name, get) in metrics {
            let mut line = format!("{name:<label_w$}");
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

    /// The help overlay's lines: every key, then the colours.
    pub(crate) fn help_lines(&self) -> Vec<Line<'static>> {
        let key_w = KEYS.iter().map(|(k, _)| k.len()).max().unwrap_or(8) + 2;
        let mut out: Vec<Line<'static>> = KEYS
            .iter()
            .map(|(k, what)| {
                Line::from(vec![
                    Text::styled(format!("{k:<key_w$}"), theme::KEY),
                    Text::styled((*what).to_owned(), theme::TEXT),
                ])
            })
            .collect();
        out.push(Line::from(""));
        out.push(Line::styled("colours", theme::HEADING));
        let legend = self.legend();
        for pair in legend.chunks(2) {
            out.push(Line::from(pair.to_vec()));
        }
        out.push(Line::from(""));
        out.push(Line::from(
            "red in the comm lane: all-reduce time with no compute running (exposed)"
                .fg(theme::Class::Exposed.color()),
        ));
        out
    }
}
