//! Rank × step heatmaps, for seeing a job of hundreds of ranks at a glance: per rank and step,
//! the step time, the exposed communication (both as the step breakdown defines them,
//! [`StepBreakdown::step_ns`] and [`StepBreakdown::comm_exposed_ns`]) and the arrival
//! lateness: how much later than the earliest rank the rank started the step's collectives,
//! the mean over the step's collectives (by `seq`; the same arrival the straggler analysis
//! compares). Warm-up steps are included: a slow first step is part of the picture.
//!
//! Colours span a metric's values but at least a tenth of the median step time
//! ([`Heatmaps::scale`]), so noise stays pale. A view smaller than the grid shows blocks of ranks × steps, each the maximum of its cells
//! ([`Heatmap::block`]), so that one slow rank is not averaged away; the view reports the
//! cell that holds the maximum, to jump to.

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;

use super::scan::StepBreakdown;
use crate::model::Run;
use crate::trace::SpanKind;

/// What a heatmap shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Metric {
    /// The step's time on the rank.
    StepTime,
    /// The rank's exposed communication in the step.
    Exposed,
    /// How late the rank arrived at the step's collectives.
    Lateness,
}

impl Metric {
    /// Every metric, in the order views cycle through them.
    pub const ALL: [Metric; 3] = [Metric::StepTime, Metric::Exposed, Metric::Lateness];

    /// A short name.
    pub fn name(self) -> &'static str {
        match self {
            Metric::StepTime => "step time",
            Metric::Exposed => "exposed communication",
            Metric::Lateness => "arrival lateness",
        }
    }

    /// What a cell holds, in words.
    pub fn definition(self) -> &'static str {
        match self {
            Metric::StepTime => "the step's time on the rank",
            Metric::Exposed => {
                "the rank's communication in the step with no compute running (waiting included)"
            }
            Metric::Lateness => {
                "how much later than the earliest rank the rank started the step's collectives \
                 (mean over them)"
            }
        }
    }
}

/// One metric over ranks × steps; missing cells are NaN.
#[derive(Clone, Debug)]
pub struct Heatmap {
    /// What it shows.
    pub metric: Metric,
    /// Row-major by rank: `values[rank_index * steps + step_index]` (ns).
    values: Vec<f32>,
    steps: usize,
    /// The smallest and largest finite value (ns).
    pub range: Option<(f64, f64)>,
}

/// The largest value of a block and the cell that holds it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockMax {
    /// The value (ns).
    pub value: f64,
    /// Index of its rank in [`Heatmaps::ranks`].
    pub rank_index: usize,
    /// Index of its step in [`Heatmaps::steps`].
    pub step_index: usize,
}

impl Heatmap {
    fn new(metric: Metric, ranks: usize, steps: usize) -> Heatmap {
        Heatmap {
            metric,
            values: vec![f32::NAN; ranks * steps],
            steps,
            range: None,
        }
    }

    fn finish(&mut self) {
        let (lo, hi) = self
            .values
            .iter()
            .filter(|v| v.is_finite())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
                (lo.min(f64::from(v)), hi.max(f64::from(v)))
            });
        self.range = (lo <= hi).then_some((lo, hi));
    }

    /// The value of one cell (ns), `None` when the rank has no such step.
    pub fn value(&self, rank_index: usize, step_index: usize) -> Option<f64> {
        let v = *self.values.get(rank_index * self.steps + step_index)?;
        v.is_finite().then_some(f64::from(v))
    }

    /// The largest value in ranks `r` × steps `s` (index ranges), `None` when all are missing.
    pub fn block(&self, r: std::ops::Range<usize>, s: std::ops::Range<usize>) -> Option<BlockMax> {
        let mut best: Option<BlockMax> = None;
        for ri in r {
            let row = ri * self.steps;
            for si in s.clone() {
                let Some(&v) = self.values.get(row + si) else {
                    continue;
                };
                if v.is_finite() && best.is_none_or(|b| f64::from(v) > b.value) {
                    best = Some(BlockMax {
                        value: f64::from(v),
                        rank_index: ri,
                        step_index: si,
                    });
                }
            }
        }
        best
    }
}

/// The three heatmaps of a run over the same ranks and steps.
#[derive(Clone, Debug)]
pub struct Heatmaps {
    /// The ranks, ascending (rows).
    pub ranks: Vec<u32>,
    /// The step numbers, ascending (columns); a rank's steps without a number count by their
    /// position.
    pub steps: Vec<u64>,
    /// Step time.
    pub step_time: Heatmap,
    /// Exposed communication.
    pub exposed: Heatmap,
    /// Arrival lateness.
    pub lateness: Heatmap,
    /// The median step time over every rank and step (ns).
    pub median_step_ns: f64,
}

impl Heatmaps {
    /// The heatmap of `metric`.
    pub fn get(&self, metric: Metric) -> &Heatmap {
        match metric {
            Metric::StepTime => &self.step_time,
            Metric::Exposed => &self.exposed,
            Metric::Lateness => &self.lateness,
        }
    }

    /// The values the colours of `metric` span (ns): its smallest value to its largest, but
    /// at least a tenth of the median step time wide, so that differences that are noise next
    /// to a step (2% between the fastest and the slowest rank, microseconds of lateness) stay
    /// pale instead of filling the whole scale. `None` without values.
    pub fn scale(&self, metric: Metric) -> Option<(f64, f64)> {
        let (lo, hi) = self.get(metric).range?;
        Some((lo, hi.max(lo + 0.1 * self.median_step_ns)))
    }

    /// Which of `levels` colours (0 the lowest) `value` of `metric` gets on its
    /// [`Heatmaps::scale`]; the middle one when the scale has no width.
    pub fn level(&self, metric: Metric, value: f64, levels: usize) -> usize {
        let top = levels.saturating_sub(1);
        match self.scale(metric) {
            Some((lo, hi)) if hi > lo => ((((value - lo) / (hi - lo)).clamp(0.0, 1.0) * top as f64)
                .round() as usize)
                .min(top),
            _ => levels / 2,
        }
    }
}

/// The heatmaps of `run`, whose step breakdowns are `breakdowns` ([`super::step_breakdowns`]).
/// Linear in spans and steps.
pub fn heatmaps(run: &Run, breakdowns: &[StepBreakdown]) -> Heatmaps {
    let ranks: Vec<u32> = run.ranks.iter().map(|r| r.rank()).collect();
    let rank_index: HashMap<u32, usize> = ranks.iter().enumerate().map(|(i, r)| (*r, i)).collect();
    // Step keys: the number, else the position among the rank's steps.
    let mut position: HashMap<u32, u64> = HashMap::new();
    let keyed: Vec<(usize, u64, &StepBreakdown)> = breakdowns
        .iter()
        .filter_map(|b| {
            let pos = position.entry(b.rank).or_insert(0);
            let key = b.step.unwrap_or(*pos);
            *pos += 1;
            Some((*rank_index.get(&b.rank)?, key, b))
        })
        .collect();
    let steps: Vec<u64> = keyed
        .iter()
        .map(|k| k.1)
        .collect::<BTreeSet<u64>>()
        .into_iter()
        .collect();
    let step_index: HashMap<u64, usize> = steps.iter().enumerate().map(|(i, s)| (*s, i)).collect();
    let (nr, ns) = (ranks.len(), steps.len());
    let mut step_time = Heatmap::new(Metric::StepTime, nr, ns);
    let mut exposed = Heatmap::new(Metric::Exposed, nr, ns);
    let mut lateness = Heatmap::new(Metric::Lateness, nr, ns);
    for (ri, key, b) in &keyed {
        let cell = ri * ns + step_index[key];
        step_time.values[cell] = b.step_ns as f32;
        exposed.values[cell] = b.comm_exposed_ns as f32;
    }
    // Arrival: the earliest start of every collective (by seq, within its DDP process group),
    // then each rank's mean lateness over its collectives of each numbered step.
    let mut earliest: HashMap<(u32, u64), i64> = HashMap::new();
    for r in &run.ranks {
        let group = r.seq_group();
        for s in r.spans_of_kind(SpanKind::Collective) {
            if let Some(seq) = s.seq() {
                let e = earliest.entry((group, seq)).or_insert(s.start());
                *e = (*e).min(s.start());
            }
        }
    }
    let mut sums: Vec<(f64, u32)> = vec![(0.0, 0); nr * ns];
    for (ri, r) in run.ranks.iter().enumerate() {
        let group = r.seq_group();
        for s in r.spans_of_kind(SpanKind::Collective) {
            let (Some(seq), Some(step)) = (s.seq(), s.step()) else {
                continue;
            };
            let Some(&si) = step_index.get(&step) else {
                continue;
            };
            let cell = &mut sums[ri * ns + si];
            cell.0 += (s.start() - earliest[&(group, seq)]) as f64;
            cell.1 += 1;
        }
    }
    for (cell, (sum, n)) in sums.into_iter().enumerate() {
        if n > 0 {
            lateness.values[cell] = (sum / f64::from(n)) as f32;
        }
    }
    for h in [&mut step_time, &mut exposed, &mut lateness] {
        h.finish();
    }
    let mut times: Vec<f64> = breakdowns.iter().map(|b| b.step_ns as f64).collect();
    let median_step_ns = if times.is_empty() {
        0.0
    } else {
        super::stats::median(&mut times)
    };
    Heatmaps {
        ranks,
        steps,
        step_time,
        exposed,
        lateness,
        median_step_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{step_breakdowns, SummaryOptions};
    use crate::synth::{generate_run, SynthConfig};

    /// A synthetic run with rank 5 of 8 slowed by 1.5×: it is the latest at every step's
    /// collectives and, the others waiting for it, has the least exposed communication.
    #[test]
    fn a_slow_rank_is_the_hot_row() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = SynthConfig::new(8, 12, 3);
        c.straggler = Some((5, 1.5));
        generate_run(&c, dir.path()).unwrap();
        let (run, _) = crate::reader::load_run(&[dir.path()]).unwrap();
        let b = step_breakdowns(&run, &SummaryOptions::default());
        let h = heatmaps(&run, &b);
        assert_eq!(h.ranks, (0..8).collect::<Vec<u32>>());
        assert_eq!(h.steps.len(), 12);
        for si in 2..h.steps.len() {
            let late = h.lateness.block(0..8, si..si + 1).unwrap();
            assert_eq!(h.ranks[late.rank_index], 5, "step {si}");
            assert!(late.value > 0.0);
        }
        // The others wait for it: it has the least exposed communication in every step.
        for si in 2..h.steps.len() {
            let least = (0..8)
                .min_by(|&a, &b| {
                    let v = |r| h.exposed.value(r, si).unwrap();
                    v(a).total_cmp(&v(b))
                })
                .unwrap();
            assert_eq!(least, 5, "step {si}");
        }
        // Every cell is a step of the breakdown, bit for bit (as f32).
        for x in &b {
            let si = h.steps.iter().position(|s| Some(*s) == x.step).unwrap();
            assert_eq!(
                h.step_time.value(x.rank as usize, si),
                Some(f64::from(x.step_ns as f32))
            );
        }
    }
}
