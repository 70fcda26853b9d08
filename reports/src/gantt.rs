//! The representative step: which step to draw (the median one) and its
//! per-rank timeline as Gantt bars.
//!
//! Steps are matched across ranks by step number (by position in the rank's
//! step list when the step spans have none). A step's duration is the time
//! from the earliest rank's start to the latest rank's end, since every
//! all-reduce waits for the last rank; the representative step is the median
//! of the steady steps by that duration (the lower middle one for an even
//! count), or of all steps when every step is a warm-up step.
//!
//! Each shown rank gets three rows: compute (the step in grey, data wait,
//! forward, backward, optimizer), the buckets' gradient-ready windows, and
//! communication, where each collective is drawn in the overlapped colour
//! and the parts of it during which no forward, backward or optimizer
//! compute ran (the exposed time, as the summary defines it) on top in the
//! exposed colour; writebacks are a thin band under it.

use std::collections::BTreeMap;

use probe::analysis::intervals::{difference, normalize, Interval};
use probe::analysis::StepBreakdown;
use probe::model::{LaneKind, Run};
use probe::open::OpenSpan;
use probe::trace::SpanKind;

use crate::charts::{palette, GanttBar, Rgb};

/// The step drawn as the representative one.
#[derive(Debug, Clone, PartialEq)]
pub struct StepChoice {
    /// Its step number, if the step spans have one.
    pub step: Option<u64>,
    /// Its position in the ranks' step lists (when there are no numbers).
    pub position: Option<u64>,
    /// Whether it is a warm-up step (only when there are no steady steps).
    pub warmup: bool,
    /// Per rank that has it: `(rank, start, end)`, ns on rank 0's timeline.
    pub windows: Vec<(u32, i64, i64)>,
    /// Earliest start to latest end (ns).
    pub duration_ns: i64,
    /// Steps it was chosen among.
    pub candidates: usize,
    /// The rank whose step took longest.
    pub slowest_rank: u32,
}

/// Chooses the median step (see the module documentation); `None` without
/// steps.
pub fn median_step(steps: &[StepBreakdown]) -> Option<StepChoice> {
    let any_steady = steps.iter().any(|s| s.warmup.is_none());
    let mut groups: BTreeMap<(u8, u64), Vec<&StepBreakdown>> = BTreeMap::new();
    let mut position: BTreeMap<u32, u64> = BTreeMap::new();
    for s in steps {
        let pos = position.entry(s.rank).or_insert(0);
        let key = match s.step {
            Some(n) => (0, n),
            None => (1, *pos),
        };
        *pos += 1;
        if any_steady && s.warmup.is_some() {
            continue;
        }
        groups.entry(key).or_default().push(s);
    }
    let mut ranked: Vec<((u8, u64), i64)> = groups
        .iter()
        .map(|(k, v)| {
            let start = v.iter().map(|s| s.start_ns).min().unwrap_or(0);
            let end = v
                .iter()
                .map(|s| s.start_ns.saturating_add(s.step_ns))
                .max()
                .unwrap_or(start);
            (*k, end.saturating_sub(start))
        })
        .collect();
    if ranked.is_empty() {
        return None;
    }
    ranked.sort_by_key(|&(k, d)| (d, k));
    let (key, duration_ns) = ranked[(ranked.len() - 1) / 2];
    let members = groups.get(&key)?;
    let slowest_rank = members
        .iter()
        .max_by_key(|s| (s.step_ns, std::cmp::Reverse(s.rank)))
        .map_or(0, |s| s.rank);
    let mut windows: Vec<(u32, i64, i64)> = members
        .iter()
        .map(|s| (s.rank, s.start_ns, s.start_ns.saturating_add(s.step_ns)))
        .collect();
    windows.sort_unstable();
    windows.dedup_by_key(|w| w.0);
    Some(StepChoice {
        step: (key.0 == 0).then_some(key.1),
        position: (key.0 == 1).then_some(key.1),
        warmup: !any_steady,
        windows,
        duration_ns,
        candidates: ranked.len(),
        slowest_rank,
    })
}

/// The window of the end of a run that left spans open ([`Run::open_spans`]): per rank,
/// from the start of its last complete step (else of its first open span) to the end of its
/// recording (else the run's); `None` when nothing is open. Drawn with [`gantt_data`] and the
/// open spans, it shows where each rank stopped.
pub fn end_of_run(run: &Run, open: &[OpenSpan]) -> Option<StepChoice> {
    if open.is_empty() {
        return None;
    }
    let run_end = run.time_range()?.1;
    let mut windows: Vec<(u32, i64, i64)> = run
        .ranks
        .iter()
        .filter_map(|r| {
            let last_step = r.steps().map(|s| s.start()).max();
            let first_open = open
                .iter()
                .filter(|o| o.rank == r.rank())
                .map(|o| o.start)
                .min();
            let start = last_step.or(first_open)?;
            let end = r.time_range().map_or(run_end, |(_, b)| b);
            let end = open
                .iter()
                .filter(|o| o.rank == r.rank())
                .map(|o| o.end)
                .fold(end, i64::max);
            Some((r.rank(), start, end.max(start)))
        })
        .collect();
    windows.sort_unstable();
    let t0 = windows.iter().map(|w| w.1).min()?;
    let t1 = windows.iter().map(|w| w.2).max()?;
    let behind = open
        .iter()
        .filter(|o| o.kind != SpanKind::Step)
        .min_by_key(|o| (o.step, o.collective.is_some()))
        .map_or(windows[0].0, |o| o.rank);
    Some(StepChoice {
        step: None,
        position: None,
        warmup: false,
        windows,
        duration_ns: t1 - t0,
        candidates: 1,
        slowest_rank: behind,
    })
}

/// The rows and bars of the representative step's Gantt chart.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GanttData {
    /// Row labels, top to bottom.
    pub rows: Vec<String>,
    /// Which rows are shaded (every other rank).
    pub shade: Vec<bool>,
    /// Rows with a separator line above them (each rank's first row).
    pub separators: Vec<usize>,
    /// The bars, in ms from the earliest shown rank's step start.
    pub bars: Vec<GanttBar>,
    /// The time axis' end (ms).
    pub t_max_ms: f64,
    /// The ranks drawn.
    pub ranks_shown: Vec<u32>,
    /// The ranks that have the step.
    pub ranks_total: usize,
    /// Exposed communication of each shown rank in this step (ns).
    pub exposed_ns: Vec<(u32, i64)>,
}

/// Rows per rank in the chart.
const ROWS_PER_RANK: usize = 3;

/// Builds the chart data for `choice`, drawing at most `max_ranks` ranks
/// (the lowest ranks plus the slowest one).
pub fn gantt_data(
    run: &Run,
    choice: &StepChoice,
    max_ranks: usize,
    open: &[OpenSpan],
) -> GanttData {
    let max_ranks = max_ranks.max(1);
    let mut shown: Vec<(u32, i64, i64)> = if choice.windows.len() <= max_ranks {
        choice.windows.clone()
    } else {
        let mut v: Vec<(u32, i64, i64)> =
            choice.windows.iter().take(max_ranks - 1).copied().collect();
        if let Some(w) = choice.windows.iter().find(|w| w.0 == choice.slowest_rank) {
            if !v.iter().any(|x| x.0 == w.0) {
                v.push(*w);
            } else if let Some(extra) = choice.windows.get(max_ranks - 1) {
                v.push(*extra);
            }
        }
        v
    };
    shown.sort_unstable();
    let t0 = shown.iter().map(|w| w.1).min().unwrap_or(0);
    let t1 = shown.iter().map(|w| w.2).max().unwrap_or(t0);
    let ms = |t: i64| t.saturating_sub(t0) as f64 / 1e6;
    let mut data = GanttData {
        t_max_ms: ms(t1),
        ranks_total: choice.windows.len(),
        ..GanttData::default()
    };
    let mut compute: Vec<Interval> = Vec::new();
    let mut colls: Vec<Interval> = Vec::new();
    for (k, &(rank, ws, we)) in shown.iter().enumerate() {
        let base = k * ROWS_PER_RANK;
        data.rows.push(format!("rank {rank}"));
        data.rows.push("buckets".to_owned());
        data.rows.push("comm".to_owned());
        for _ in 0..ROWS_PER_RANK {
            data.shade.push(k % 2 == 1);
        }
        data.separators.push(base);
        data.ranks_shown.push(rank);
        let Some(trace) = run.rank(rank) else {
            continue;
        };
        compute.clear();
        colls.clear();
        let clip = |a: i64, b: i64| (a.max(ws), b.min(we).max(a.max(ws)));
        let mut bar = |row: usize, (a, b): Interval, color: Rgb, band: (f64, f64)| {
            data.bars.push(GanttBar {
                row: base + row,
                start: ms(a),
                end: ms(b),
                color,
                band,
            });
        };
        for lane in trace
            .lanes
            .iter()
            .filter(|l| !matches!(l.kind, LaneKind::Gpu { .. }))
        {
            for sp in lane.overlapping(ws, we.max(ws.saturating_add(1))) {
                let iv = clip(sp.start(), sp.end());
                match sp.kind() {
                    SpanKind::Step => bar(0, iv, Rgb(0xd9, 0xd9, 0xd9), (0.08, 0.92)),
                    SpanKind::DataWait => bar(0, iv, palette::DATA, (0.08, 0.92)),
                    SpanKind::Forward => {
                        compute.push(iv);
                        bar(0, iv, palette::FORWARD, (0.08, 0.92));
                    }
                    SpanKind::Backward => {
                        compute.push(iv);
                        bar(0, iv, palette::BACKWARD, (0.08, 0.92));
                    }
                    SpanKind::Optimizer => {
                        compute.push(iv);
                        bar(0, iv, palette::OPTIMIZER, (0.08, 0.92));
                    }
                    SpanKind::BucketReady => {
                        let band = if sp.bucket().unwrap_or(0) % 2 == 0 {
                            (0.1, 0.5)
                        } else {
                            (0.5, 0.9)
                        };
                        bar(1, iv, palette::READY, band);
                    }
                    SpanKind::Collective => {
                        colls.push(iv);
                        bar(2, iv, palette::OVERLAPPED, (0.08, 0.72));
                    }
                    SpanKind::Writeback => bar(2, iv, palette::WRITEBACK, (0.74, 0.92)),
                    _ => {}
                }
            }
        }
        normalize(&mut compute);
        normalize(&mut colls);
        let mut exposed = 0i64;
        for iv in difference(&colls, &compute) {
            exposed += iv.1 - iv.0;
            bar(2, iv, palette::EXPOSED, (0.08, 0.72));
        }
        data.exposed_ns.push((rank, exposed));
        // What never ended, over everything else of its row (the step under its phase).
        for o in open.iter().filter(|o| o.rank == rank && o.end > ws) {
            let (row, color, band) = match o.lane {
                LaneKind::Comm => (2, palette::UNFINISHED, (0.08, 0.72)),
                _ if o.kind == SpanKind::Step => (0, palette::UNFINISHED_STEP, (0.08, 0.92)),
                _ => (0, palette::UNFINISHED, (0.25, 0.75)),
            };
            bar(row, clip(o.start, o.end), color, band);
        }
    }
    // Compute bars go over the grey step; keep the step first in each row.
    data.bars
        .sort_by_key(|b| (b.row, b.color != Rgb(0xd9, 0xd9, 0xd9)));
    data
}

#[cfg(test)]
mod tests {
    use super::*;
    use probe::analysis::{step_breakdowns, SummaryOptions};
    use probe::synth::{generate_run, SynthConfig};

    fn step(rank: u32, n: Option<u64>, start: i64, dur: i64, warm: bool) -> StepBreakdown {
        StepBreakdown {
            rank,
            step: n,
            start_ns: start,
            step_ns: dur,
            data_wait_ns: 0,
            forward_ns: 0,
            backward_ns: 0,
            sync_backward_ns: 0,
            comm_ns: 0,
            comm_overlapped_ns: 0,
            comm_exposed_ns: 0,
            optimizer_ns: 0,
            writeback_ns: 0,
            other_ns: 0,
            other_at: Default::default(),
            backward_end_ns: None,
            comm_tail_ns: 0,
            samples: None,
            warmup: warm.then_some(probe::analysis::WarmupReason::FirstSteps),
            between_ns: None,
        }
    }

    #[test]
    fn the_median_step_is_chosen_by_its_slowest_rank() {
        let steps = vec![
            step(0, Some(0), 0, 500, true),
            step(0, Some(1), 1000, 10, false),
            step(1, Some(1), 1000, 30, false),
            step(0, Some(2), 2000, 20, false),
            step(1, Some(2), 2000, 21, false),
            step(0, Some(3), 3000, 5, false),
            step(1, Some(3), 3000, 90, false),
        ];
        // Durations across ranks: step 1 → 30, step 2 → 21, step 3 → 90.
        let c = median_step(&steps).unwrap();
        assert_eq!(c.step, Some(1));
        assert_eq!(c.duration_ns, 30);
        assert_eq!(c.slowest_rank, 1);
        assert_eq!(c.candidates, 3);
        assert!(!c.warmup);
        assert!(median_step(&[]).is_none());
        let only_warm = median_step(&steps[..1]).unwrap();
        assert!(only_warm.warmup);
        let unnumbered = median_step(&[step(0, None, 0, 7, false)]).unwrap();
        assert_eq!((unnumbered.step, unnumbered.position), (None, Some(0)));
    }

    #[test]
    fn synthetic_step_has_every_kind_of_bar() {
        let dir = tempfile::tempdir().unwrap();
        generate_run(&SynthConfig::new(4, 6, 3), dir.path()).unwrap();
        let (run, _) = probe::reader::load_run(&[dir.path()]).unwrap();
        let steps = step_breakdowns(&run, &SummaryOptions::default());
        let choice = median_step(&steps).unwrap();
        let g = gantt_data(&run, &choice, 3, &[]);
        assert_eq!(g.ranks_shown.len(), 3);
        assert!(g.ranks_shown.contains(&choice.slowest_rank));
        assert_eq!(g.rows.len(), 9);
        for color in [
            palette::FORWARD,
            palette::BACKWARD,
            palette::READY,
            palette::OVERLAPPED,
            palette::EXPOSED,
            palette::OPTIMIZER,
        ] {
            assert!(g.bars.iter().any(|b| b.color == color), "{color:?}");
        }
        assert!(g
            .bars
            .iter()
            .all(|b| b.start >= 0.0 && b.end <= g.t_max_ms + 1e-9));
        assert!(g.exposed_ns.iter().all(|e| e.1 > 0));
    }
}
