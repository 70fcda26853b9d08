//! Where a slow step's time went: per steady step, the rank that held the step back, the phase
//! in which it fell behind, and what the step would have taken without it.
//!
//! DDP's all-reduces even out the step times (every rank waits for the last one at each bucket),
//! so per-rank phase timers cannot show a rank that is slow inside backward; its gradient-ready
//! times can. For each steady step recorded by at least two ranks, on rank 0's timeline:
//!
//! 1. **Boundaries** per rank: step start, forward start, backward start, each bucket's ready
//!    time (the end of its `bucket_ready` window, by bucket id: launch order) and backward end.
//! 2. **Lateness** at a boundary: the *critical* rank's time (the rank latest at the last
//!    bucket, whose all-reduce waits for it) minus the median over the other ranks.
//! 3. **Phase**: the critical rank's lateness grows segment by segment: before the step (the
//!    previous step's optimizer, or anything between steps), data wait, forward, backward up to
//!    each bucket. The segments that add at least [`SHARE`] of its final lateness are where it
//!    fell behind; backward ones are named by bucket range. Over the steps a rank held back,
//!    the phase named is the one that added the most lateness in total (the per-phase means
//!    add up to the mean lateness), not the one named in most steps.
//! 4. **Without it** (the re-simulation of the OSDI'25 straggler study, at bucket granularity):
//!    each bucket's all-reduce starts when the last rank is ready and the previous one ended, and
//!    takes its transfer time (the shortest duration across the ranks); with the critical rank at
//!    the other ranks' median ready times instead, the last all-reduce ends `saved` earlier, and
//!    the step would take `step − saved`.
//!
//! A rank is named when it was the critical rank in clearly more steps than chance (the
//! one-sided binomial tail at chance `1/ranks`, times the number of ranks, below
//! [`super::P_VALUE_THRESHOLD`], as for [`super::Stragglers`]) and the steps it was critical in
//! would be at least [`MIN_SAVING`] of the step shorter without it (the median saving against
//! the median step): a straggler that costs nothing is not worth a user's time, and one rank is
//! always last by a little. The median of the savings, not the difference of the medians of
//! the steps with and without it: on PyTorch's tutorial trainer (`multigpu_torchrun.py`, 2 CPU
//! ranks, 1.1 ms steps, 2026-12-02) rank 1 was critical in 97 of 158 steps by a median 47.6 µs,
//! and its long steps were long for other reasons too, so the medians said 1.2 ms → 1.0 ms (17%)
//! and named it; the median saving is 4%.
//!
//! Where DDP reduces over process groups smaller than the world, a step is each group's own:
//! its ranks wait only for each other, and the groups drift apart freely. A rank is compared
//! with its group's ranks, over its group's steps, at chance one over the group's ranks; of the
//! groups' stragglers, the one whose lateness costs most (steps × median saving) is named.

use serde::{Deserialize, Serialize};

use super::advice::{SimCollective, WhatIf};
use super::stats::{binomial_upper_tail, heaviest, median};
use super::stragglers::P_VALUE_THRESHOLD;
use crate::model::{LaneKind, Run, Span};
use crate::trace::SpanKind;

/// A segment counts as where the rank fell behind when it adds at least this share of the
/// rank's lateness at the last bucket.
pub const SHARE: f64 = 0.25;

/// A straggler is named only when removing it would shorten its steps by at least this share
/// of the step (median).
pub const MIN_SAVING: f64 = 0.05;

/// One step held back by one rank.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepSlowdown {
    /// The step.
    pub step: u64,
    /// The DDP process group's key ([`crate::model::RankTrace::seq_group`]: 0 for the world).
    #[serde(skip)]
    pub group: u32,
    /// The rank latest at the last bucket.
    pub rank: u32,
    /// How late it was there against the median rank (ns).
    pub late_ns: f64,
    /// Where it fell behind: `"between steps"`, `"data wait"`, `"forward"` or `"backward"`.
    pub phase: String,
    /// For `"backward"`: the first and last bucket whose gradients it readied late.
    pub buckets: Option<(u32, u32)>,
    /// The lateness each segment added in this step, by phase (ns; they sum to `late_ns`),
    /// for the verdict over steps (not in the JSON).
    #[serde(skip)]
    pub segments: Vec<(String, f64)>,
    /// The step as measured (the longest rank's, ns).
    pub step_ns: f64,
    /// The step re-simulated with every rank at the median ready times (ns).
    pub without_ns: f64,
    /// The step's all-reduces as recorded and re-simulated without the lateness, for
    /// timelines (not in the JSON).
    #[serde(skip)]
    pub timelines: Vec<WhatIf>,
}

/// The verdict over the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankSlowdown {
    /// The rank.
    pub rank: u32,
    /// Steady steps in which it was the critical rank.
    pub steps: u64,
    /// Steady steps compared.
    pub of_steps: u64,
    /// The phase that added most of its lateness over those steps (the largest mean of what
    /// each phase added: the means add up to the mean lateness, so this is where most of it
    /// sits).
    pub phase: String,
    /// For `"backward"`: the bucket range most often named among its steps that fell behind
    /// in backward.
    pub buckets: Option<(u32, u32)>,
    /// Median lateness at the last bucket in those steps (ns).
    pub late_ns: f64,
    /// Median step in those steps (ns).
    pub step_ns: f64,
    /// Median step in those steps less the median of their savings (ns).
    pub without_ns: f64,
    /// The timelines of its median step (see [`StepSlowdown::timelines`]), for
    /// `export chrome --what-if`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timelines: Vec<WhatIf>,
}

/// Every compared step's slowdown and the verdict.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Slowdowns {
    /// Per compared step (steps every rank recorded with bucket ready times); not in the JSON
    /// (one per step), [`Slowdowns::compared`] is.
    #[serde(skip)]
    pub steps: Vec<StepSlowdown>,
    /// Steps compared.
    pub compared: u64,
    /// The rank whose lateness costs the run most, when one does.
    pub straggler: Option<RankSlowdown>,
}

/// One rank's boundaries in one step (ns, rank 0's timeline).
#[derive(Clone, Debug, Default)]
struct Bounds {
    step: Option<(i64, i64)>,
    data: Option<i64>,
    forward: Option<i64>,
    backward: Option<(i64, i64)>,
    /// By bucket id: ready (end of the `bucket_ready` window).
    ready: Vec<Option<i64>>,
    /// By bucket id: the collective's (start, end).
    comm: Vec<Option<(i64, i64)>>,
}

fn set_at<T: Copy>(v: &mut Vec<Option<T>>, i: usize, x: T) {
    if i >= v.len() {
        v.resize(i + 1, None);
    }
    if v[i].is_none() {
        v[i] = Some(x);
    }
}

impl Bounds {
    fn add(&mut self, sp: &Span) {
        let (s, e) = (sp.start(), sp.end());
        match sp.kind() {
            SpanKind::Step => self.step = Some((s, e)),
            SpanKind::DataWait => self.data = Some(self.data.map_or(s, |d| d.min(s))),
            SpanKind::Forward => self.forward = Some(self.forward.map_or(s, |f| f.min(s))),
            SpanKind::Backward => {
                self.backward = Some(self.backward.map_or((s, e), |(a, b)| (a.min(s), b.max(e))));
            }
            SpanKind::BucketReady => {
                if let Some(b) = sp.bucket().filter(|&b| b < 1 << 16) {
                    set_at(&mut self.ready, b as usize, e);
                }
            }
            SpanKind::Collective => {
                if let Some(b) = sp.bucket().filter(|&b| b < 1 << 16) {
                    set_at(&mut self.comm, b as usize, (s, e));
                }
            }
            _ => {}
        }
    }
}

/// The slowdowns of the steady steps `steady` (`(rank, step)` pairs, sorted).
pub(crate) fn slowdowns(run: &Run, steady: &[(u32, u64)]) -> Slowdowns {
    // Steps by DDP process group and number, each with its ranks' boundaries.
    let mut by_step: std::collections::BTreeMap<(u32, u64), Vec<(u32, Bounds)>> =
        Default::default();
    // Per group key, how many ranks it has.
    let mut group_ranks: Vec<(u32, u64)> = Vec::new();
    for r in &run.ranks {
        let rank = r.rank();
        let group = r.seq_group();
        match group_ranks.iter_mut().find(|(g, _)| *g == group) {
            Some((_, n)) => *n += 1,
            None => group_ranks.push((group, 1)),
        }
        let mut mine: std::collections::BTreeMap<u64, Bounds> = Default::default();
        // GPU lanes hold kernels, never a boundary; other kinds are skipped before the lookup.
        for lane in r
            .lanes
            .iter()
            .filter(|l| !matches!(l.kind, LaneKind::Gpu { .. }))
        {
            for sp in lane.spans() {
                if !matches!(
                    sp.kind(),
                    SpanKind::Step
                        | SpanKind::DataWait
                        | SpanKind::Forward
                        | SpanKind::Backward
                        | SpanKind::BucketReady
                        | SpanKind::Collective
                ) {
                    continue;
                }
                let Some(step) = sp.step() else { continue };
                if steady.binary_search(&(rank, step)).is_err() {
                    continue;
                }
                mine.entry(step).or_default().add(sp);
            }
        }
        for (step, b) in mine {
            by_step.entry((group, step)).or_default().push((rank, b));
        }
    }
    let mut out = Slowdowns::default();
    for ((group, step), ranks) in by_step {
        if let Some(mut s) = step_slowdown(step, &ranks) {
            s.group = group;
            out.steps.push(s);
        }
    }
    out.compared = out.steps.len() as u64;
    // Per group, the rank critical in the most steps, if clearly more often than chance among
    // its group's ranks; of those, the one whose lateness costs most (one group but where DDP
    // reduces over subgroups).
    let mut counts: Vec<(u32, u32, u64)> = Vec::new();
    for s in &out.steps {
        match counts.iter_mut().find(|(r, _, _)| *r == s.rank) {
            Some((_, _, n)) => *n += 1,
            None => counts.push((s.rank, s.group, 1)),
        }
    }
    let compared_in = |group: u32| out.steps.iter().filter(|s| s.group == group).count() as u64;
    out.straggler = group_ranks
        .iter()
        .filter_map(|&(group, ranks)| {
            let &(rank, _, n) = counts
                .iter()
                .filter(|(_, g, _)| *g == group)
                .max_by_key(|(r, _, n)| (*n, std::cmp::Reverse(*r)))?;
            let ranks = ranks.max(2);
            let p = binomial_upper_tail(compared_in(group), n, 1.0 / ranks as f64) * ranks as f64;
            (p < P_VALUE_THRESHOLD)
                .then(|| verdict(&out.steps, rank, compared_in(group)))
                .flatten()
        })
        .max_by(|a, b| {
            let cost = |v: &RankSlowdown| v.steps as f64 * (v.step_ns - v.without_ns);
            cost(a).total_cmp(&cost(b)).then(b.rank.cmp(&a.rank))
        });
    out
}

/// The median of `xs` (0 for none).
fn med(xs: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = xs.collect();
    if v.is_empty() {
        0.0
    } else {
        median(&mut v)
    }
}

fn step_slowdown(step: u64, ranks: &[(u32, Bounds)]) -> Option<StepSlowdown> {
    if ranks.len() < 2 {
        return None;
    }
    let buckets = ranks.iter().map(|(_, b)| b.ready.len()).min()?;
    if buckets == 0
        || ranks
            .iter()
            .any(|(_, b)| b.ready[..buckets].iter().any(Option::is_none))
    {
        return None;
    }
    let ready = |k: usize| {
        ranks
            .iter()
            .map(move |(_, b)| b.ready[k].unwrap_or(0) as f64)
    };
    let last = buckets - 1;
    // The critical rank: latest at the last bucket.
    let (ci, _) = ranks
        .iter()
        .enumerate()
        .max_by_key(|(_, (_, b))| b.ready[last].unwrap_or(i64::MIN))?;
    let (rank, crit) = &ranks[ci];
    let others = || {
        ranks
            .iter()
            .enumerate()
            .filter(move |(i, _)| *i != ci)
            .map(|(_, (_, b))| b)
    };
    // Lateness at every boundary, in order; each with the segment it closes.
    let lateness = |pick: &dyn Fn(&Bounds) -> Option<i64>| -> Option<f64> {
        let mine = pick(crit)? as f64;
        let theirs: Vec<f64> = others().filter_map(pick).map(|t| t as f64).collect();
        (theirs.len() + 1 == ranks.len()).then(|| mine - med(theirs.into_iter()))
    };
    let mut segments: Vec<(String, Option<u32>, f64)> = Vec::new();
    let mut prev = 0.0;
    let mut push = |name: &str, bucket: Option<u32>, l: Option<f64>| {
        if let Some(l) = l {
            segments.push((name.to_owned(), bucket, l - prev));
            prev = l;
        }
    };
    push("between steps", None, lateness(&|b| b.step.map(|s| s.0)));
    push("data wait", None, lateness(&|b| b.forward));
    push("forward", None, lateness(&|b| b.backward.map(|x| x.0)));
    for k in 0..buckets {
        push("backward", Some(k as u32), lateness(&|b| b.ready[k]));
    }
    let late = prev;
    // Where it fell behind: the segments adding at least SHARE of the lateness.
    let big: Vec<&(String, Option<u32>, f64)> = segments
        .iter()
        .filter(|(_, _, d)| late > 0.0 && *d >= SHARE * late)
        .collect();
    let top = segments
        .iter()
        .max_by(|a, b| a.2.total_cmp(&b.2))
        .map(|s| s.0.clone())
        .unwrap_or_else(|| "backward".to_owned());
    let phase = if big.iter().any(|s| s.0 == top) {
        top
    } else {
        "backward".to_owned()
    };
    let bucket_range = {
        let ks: Vec<u32> = big
            .iter()
            .filter(|s| s.0 == "backward")
            .filter_map(|s| s.1)
            .collect();
        (phase == "backward" && !ks.is_empty())
            .then(|| (*ks.iter().min().unwrap(), *ks.iter().max().unwrap()))
    };
    // Re-simulation: transfer = the shortest duration of each bucket's all-reduce.
    let transfer = |k: usize| {
        ranks
            .iter()
            .filter_map(|(_, b)| b.comm.get(k).copied().flatten())
            .map(|(s, e)| (e - s) as f64)
            .fold(f64::INFINITY, f64::min)
    };
    // Each bucket's all-reduce, (start, end), on rank 0's timeline.
    let schedule = |ready_at: &dyn Fn(usize) -> f64| -> Vec<(f64, f64)> {
        let mut end = f64::NEG_INFINITY;
        (0..buckets)
            .map(|k| {
                let t = transfer(k);
                let t = if t.is_finite() { t } else { 0.0 };
                let start = end.max(ready_at(k));
                end = start + t;
                (start, end)
            })
            .collect()
    };
    let actual = schedule(&|k| ready(k).fold(f64::NEG_INFINITY, f64::max));
    let without = schedule(&|k| {
        others()
            .map(|b| b.ready[k].unwrap_or(0) as f64)
            .fold(f64::NEG_INFINITY, f64::max)
    });
    let end_of = |s: &[(f64, f64)]| s.last().map_or(0.0, |c| c.1);
    let saved = (end_of(&actual) - end_of(&without)).max(0.0);
    // The timelines of this step: backward of the critical rank and of the latest other rank.
    let backward_of = |b: &Bounds| b.backward.map(|(s, e)| (s as f64, e as f64));
    let others_backward = others()
        .filter_map(backward_of)
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let timelines = match (backward_of(crit), others_backward) {
        (Some(mine), Some(theirs)) => {
            let what_if = |label: String, (b0, b1): (f64, f64), sched: &[(f64, f64)]| WhatIf {
                label,
                anchor_ns: b0 as i64,
                backward_end_ns: b1 - b0,
                collectives: sched
                    .iter()
                    .enumerate()
                    .map(|(k, &(s, e))| SimCollective {
                        bucket: k as u32,
                        bytes: 0,
                        start_ns: s - b0,
                        end_ns: e - b0,
                    })
                    .collect(),
            };
            vec![
                what_if(
                    format!("step {step} as recorded (rank {rank} latest)"),
                    mine,
                    &actual,
                ),
                what_if(
                    format!("step {step} without rank {rank}'s lateness"),
                    theirs,
                    &without,
                ),
            ]
        }
        _ => Vec::new(),
    };
    let step_ns = ranks
        .iter()
        .filter_map(|(_, b)| b.step.map(|(s, e)| (e - s) as f64))
        .fold(0.0, f64::max);
    if step_ns <= 0.0 {
        return None;
    }
    Some(StepSlowdown {
        group: 0,
        step,
        rank: *rank,
        late_ns: late,
        phase,
        buckets: bucket_range,
        segments: segments.into_iter().map(|(p, _, d)| (p, d)).collect(),
        step_ns,
        without_ns: (step_ns - saved).max(0.0),
        timelines,
    })
}

/// The verdict on `rank`, critical in some of `steps`, of `of_steps` steps its group compared.
fn verdict(steps: &[StepSlowdown], rank: u32, of_steps: u64) -> Option<RankSlowdown> {
    let mine: Vec<&StepSlowdown> = steps.iter().filter(|s| s.rank == rank).collect();
    if mine.is_empty() {
        return None;
    }
    let step_ns = med(mine.iter().map(|s| s.step_ns));
    let saved_ns = med(mine.iter().map(|s| s.step_ns - s.without_ns));
    if step_ns <= 0.0 || saved_ns < MIN_SAVING * step_ns {
        return None;
    }
    let without_ns = step_ns - saved_ns;
    // Where the lateness sits: the phase with the largest total over its steps. Not the phase
    // named most often per step: in a clean run on a shared machine (CI, 2026-12-07) rank 1
    // fell behind in forward by a few µs in more steps than elsewhere, and "forward" was named
    // while the lateness (4.5 ms median) sat in backward and between steps.
    let phase = heaviest(
        mine.iter()
            .flat_map(|s| s.segments.iter().map(|(p, d)| (p.as_str(), *d))),
    )
    .unwrap_or("backward")
    .to_owned();
    // The bucket range named most often among the steps that fell behind in backward.
    let buckets = (phase == "backward")
        .then(|| heaviest(mine.iter().filter_map(|s| s.buckets).map(|r| (r, 1u32))))
        .flatten();
    // The median step of its steps, for the timelines.
    let mut by_len: Vec<&&StepSlowdown> = mine.iter().collect();
    by_len.sort_by(|a, b| a.step_ns.total_cmp(&b.step_ns));
    let timelines = by_len[by_len.len() / 2].timelines.clone();
    Some(RankSlowdown {
        timelines,
        rank,
        steps: mine.len() as u64,
        of_steps,
        phase,
        buckets,
        late_ns: med(mine.iter().map(|s| s.late_ns)),
        step_ns,
        without_ns,
    })
}

impl RankSlowdown {
    /// The verdict in words.
    pub fn sentence(&self, ns: impl Fn(f64) -> String) -> String {
        let what = match (self.phase.as_str(), self.buckets) {
            ("backward", Some((a, b))) if a == b => {
                format!("its gradients for bucket {a} were ready")
            }
            ("backward", Some((a, b))) => format!("its gradients for buckets {a}–{b} were ready"),
            ("backward", None) => "its backward ended".to_owned(),
            ("between steps", _) => {
                "it started its steps (after the previous optimizer step)".to_owned()
            }
            (p, _) => format!("it finished its {p}"),
        };
        format!(
            "rank {} held back {} of {} steps: {what} about {} after the other ranks'; without it those steps would take {} instead of {} (median).",
            self.rank,
            self.steps,
            self.of_steps,
            ns(self.late_ns),
            ns(self.without_ns),
            ns(self.step_ns)
        )
    }
}
