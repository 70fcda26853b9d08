//! The drawable index of a loaded run: one row per lane of every rank, each
//! with a [`Cover`] per class of span, and the run's steps merged across
//! ranks.
//!
//! Building it reads every span once (`O(spans)`); afterwards the time a
//! frame takes depends on the terminal size, not on the number of spans: a
//! cell's content is the coverage of its time window by each class, two
//! binary searches per class.

use std::collections::HashMap;

use probe::analysis::{
    parts_not_recorded, step_breakdowns_and_warnings, StepBreakdown, SummaryOptions,
};
use probe::model::{Lane, LaneKind, RankTrace, Run, Span};
use probe::open::OpenSpan;
use probe::trace::SpanKind;

use crate::format::clean;
use crate::theme::Class;
use probe::analysis::intervals::{Cover, Interval};

/// One lane of one rank, as a row of the screen.
#[derive(Clone, Debug)]
pub struct Row {
    /// Index of the rank in [`Run::ranks`].
    pub rank: usize,
    /// Index of the lane in [`RankTrace::lanes`].
    pub lane: usize,
    /// Short lane name, safe to draw.
    pub label: String,
    /// Whether this is the rank's first row.
    pub first_of_rank: bool,
    /// The coverage of each class present in the lane.
    pub classes: Vec<(Class, Cover)>,
}

/// A step number merged over the ranks that ran it.
#[derive(Clone, Debug, PartialEq)]
pub struct StepInfo {
    /// The step number (`None` for step spans without one; those are
    /// matched across ranks by their position).
    pub number: Option<u64>,
    /// Earliest start over the ranks (ns, rank 0's timeline).
    pub start: i64,
    /// Latest end over the ranks.
    pub end: i64,
    /// The longest of the ranks' step times (ns).
    pub time_ns: i64,
    /// The rank with the longest step time.
    pub slowest_rank: u32,
    /// The most exposed communication of any rank in this step (ns).
    pub exposed_ns: i64,
    /// The rank with the most exposed communication.
    pub exposed_rank: u32,
    /// Whether the summary counts it as warm-up (first iteration, bucket
    /// rebuild).
    pub warmup: bool,
    /// Indices into [`Timeline::breakdowns`], by rank.
    pub parts: Vec<usize>,
}

impl StepInfo {
    /// "step 12", or "step #3" for a step without a number.
    pub fn name(&self, index: usize) -> String {
        match self.number {
            Some(n) => format!("step {n}"),
            None => format!("step #{index}"),
        }
    }
}

/// A run with everything the timeline needs to draw it fast.
pub struct Timeline {
    run: Run,
    origin: i64,
    end: i64,
    rows: Vec<Row>,
    compute: Vec<Cover>,
    steps: Vec<StepInfo>,
    breakdowns: Vec<StepBreakdown>,
    buckets: Vec<u32>,
    spans: usize,
    open: Vec<(usize, OpenSpan)>,
    /// The parts of the step no rank recorded a span of.
    not_recorded: Vec<String>,
    /// The warnings `ddp-probe summary` prints for the run.
    warnings: Vec<String>,
}

impl Timeline {
    /// Indexes a loaded run (one pass over its spans).
    pub fn new(run: Run) -> Timeline {
        let (origin, end) = run.time_range().unwrap_or((0, 1_000_000_000));
        let end = end.max(origin.saturating_add(1));
        let mut rows = Vec::new();
        let mut compute = Vec::with_capacity(run.ranks.len());
        for (ri, rank) in run.ranks.iter().enumerate() {
            let (rank_rows, rank_compute) = index_rank(ri, rank);
            rows.extend(rank_rows);
            compute.push(rank_compute);
        }
        let (breakdowns, warnings) = step_breakdowns_and_warnings(&run, &SummaryOptions::default());
        let steps = merge_steps(&breakdowns);
        let buckets = bucket_ids(&run);
        let spans = run.span_count();
        let open = place_open_spans(&run, &rows);
        let not_recorded = parts_not_recorded(&run);
        Timeline {
            run,
            origin,
            end,
            rows,
            compute,
            steps,
            breakdowns,
            buckets,
            spans,
            open,
            not_recorded,
            warnings,
        }
    }

    /// The warnings `ddp-probe summary` prints for the run (the same input on every rank,
    /// accumulation without `no_sync`, one file saved by several ranks, the PyTorch module's
    /// own), in its order.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The run.
    pub fn run(&self) -> &Run {
        &self.run
    }

    /// Earliest timestamp of the run: time 0 of the axis.
    pub fn origin(&self) -> i64 {
        self.origin
    }

    /// Latest timestamp of the run.
    pub fn end(&self) -> i64 {
        self.end
    }

    /// The rows, rank by rank, each rank's lanes in display order.
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// The lane of a row.
    pub fn lane(&self, row: usize) -> Option<&Lane> {
        let r = self.rows.get(row)?;
        self.run.ranks.get(r.rank)?.lanes.get(r.lane)
    }

    /// The rank of a row.
    pub fn rank_of(&self, row: usize) -> Option<&RankTrace> {
        self.run.ranks.get(self.rows.get(row)?.rank)
    }

    /// The union of forward, backward and optimizer spans of a rank (by
    /// index in [`Run::ranks`]).
    pub fn compute(&self, rank: usize) -> Option<&Cover> {
        self.compute.get(rank)
    }

    /// The steps merged over ranks, by start.
    pub fn steps(&self) -> &[StepInfo] {
        &self.steps
    }

    /// The parts of the step no rank recorded (`data wait`, `communication`, `optimizer`,
    /// `writeback`): their zeros in [`Timeline::breakdowns`] are not measurements.
    pub fn not_recorded(&self) -> &[String] {
        &self.not_recorded
    }

    /// Every rank's step breakdowns (see [`StepInfo::parts`]).
    pub fn breakdowns(&self) -> &[StepBreakdown] {
        &self.breakdowns
    }

    /// The bucket ids of the run, ascending.
    pub fn bucket_ids(&self) -> &[u32] {
        &self.buckets
    }

    /// Number of spans.
    pub fn span_count(&self) -> usize {
        self.spans
    }

    /// What the ranks began and never finished ([`Run::open_spans`]), each with the row it is
    /// drawn on: its rank's lane of its kind, else the rank's first row.
    pub fn open_spans(&self) -> &[(usize, OpenSpan)] {
        &self.open
    }

    /// The step whose window contains `t`, else the one starting next, else
    /// the last.
    pub fn step_near(&self, t: i64) -> Option<usize> {
        if self.steps.is_empty() {
            return None;
        }
        let k = self.steps.partition_point(|s| s.start <= t);
        if k > 0 && self.steps[k - 1].end > t {
            return Some(k - 1);
        }
        Some(k.min(self.steps.len() - 1))
    }

    /// The index in [`Run::ranks`] of global rank `rank`.
    pub fn rank_index(&self, rank: u32) -> Option<usize> {
        self.run
            .ranks
            .binary_search_by_key(&rank, RankTrace::rank)
            .ok()
    }

    /// Per row, the coverage of the spans of bucket `bucket` (`None` for
    /// rows without any): one pass over the buckets and communication
    /// lanes.
    pub fn bucket_cover(&self, bucket: u32) -> Vec<Option<Cover>> {
        self.rows
            .iter()
            .map(|r| {
                let lane = &self.run.ranks[r.rank].lanes[r.lane];
                if !matches!(lane.kind, LaneKind::Buckets | LaneKind::Comm) {
                    return None;
                }
                let iv: Vec<Interval> = lane
                    .spans()
                    .iter()
                    .filter(|s| s.bucket() == Some(bucket))
                    .map(|s| (s.start(), s.end().max(s.start() + 1)))
                    .collect();
                (!iv.is_empty()).then(|| Cover::from_intervals(iv))
            })
            .collect()
    }
}

/// Each open span with its row (see [`Timeline::open_spans`]).
fn place_open_spans(run: &Run, rows: &[Row]) -> Vec<(usize, OpenSpan)> {
    run.open_spans()
        .into_iter()
        .filter_map(|o| {
            let ri = run
                .ranks
                .binary_search_by_key(&o.rank, RankTrace::rank)
                .ok()?;
            let rank = &run.ranks[ri];
            let of_rank = || rows.iter().enumerate().filter(move |(_, r)| r.rank == ri);
            let row = of_rank()
                .find(|(_, r)| rank.lanes[r.lane].kind == o.lane)
                .or_else(|| of_rank().next())?
                .0;
            Some((row, o))
        })
        .collect()
}

/// Indices of the spans of `lane` that overlap `[t0, t1)`, in start order:
/// [`Lane::overlapping`] by index.
pub fn overlapping_indices(lane: &Lane, t0: i64, t1: i64) -> impl Iterator<Item = usize> + '_ {
    let spans = lane.spans();
    let lo_start = t0.saturating_sub(lane.max_duration());
    let lo = spans.partition_point(|s| s.start() < lo_start);
    let hi = spans.partition_point(|s| s.start() < t1).max(lo);
    (lo..hi).filter(move |&k| spans[k].overlaps(t0, t1))
}

/// The short name of a lane, safe to draw.
pub fn lane_label(lane: &Lane) -> String {
    match lane.kind {
        LaneKind::Compute => "compute".into(),
        LaneKind::Buckets => "buckets".into(),
        LaneKind::Comm => "comm".into(),
        LaneKind::Data => "data".into(),
        LaneKind::Custom => clean(&lane.name, false).into_owned(),
        LaneKind::Gpu { device, stream } => format!("gpu{device} s{stream}"),
    }
}

fn is_compute(kind: SpanKind) -> bool {
    matches!(
        kind,
        SpanKind::Forward | SpanKind::Backward | SpanKind::Optimizer
    )
}

/// The rows of one rank and the union of its compute.
fn index_rank(ri: usize, rank: &RankTrace) -> (Vec<Row>, Cover) {
    let mut compute: Vec<Interval> = Vec::new();
    let mut per_lane: Vec<Vec<Vec<Interval>>> = Vec::with_capacity(rank.lanes.len());
    for lane in &rank.lanes {
        let mut by_class: Vec<Vec<Interval>> = vec![Vec::new(); Class::COUNT];
        let gpu = matches!(lane.kind, LaneKind::Gpu { .. });
        for s in lane.spans() {
            if s.end() > s.start() {
                by_class[Class::of(s).index()].push((s.start(), s.end()));
            }
            if !gpu && is_compute(s.kind()) {
                compute.push((s.start(), s.end()));
            }
        }
        per_lane.push(by_class);
    }
    let compute = Cover::from_intervals(compute);
    let mut rows = Vec::with_capacity(rank.lanes.len());
    for (li, (lane, by_class)) in rank.lanes.iter().zip(per_lane).enumerate() {
        let mut classes = Vec::new();
        for (ci, iv) in by_class.into_iter().enumerate() {
            let class = Class::ALL[ci];
            if iv.is_empty() {
                continue;
            }
            let cover = Cover::from_intervals(iv);
            if class == Class::Overlapped && !matches!(lane.kind, LaneKind::Gpu { .. }) {
                let exposed = cover.subtract(&compute);
                let overlapped = cover.intersect(&compute);
                if !overlapped.is_empty() {
                    classes.push((Class::Overlapped, overlapped));
                }
                if !exposed.is_empty() {
                    classes.push((Class::Exposed, exposed));
                }
            } else {
                classes.push((class, cover));
            }
        }
        rows.push(Row {
            rank: ri,
            lane: li,
            label: lane_label(lane),
            first_of_rank: li == 0,
            classes,
        });
    }
    (rows, compute)
}

/// Key of a step across ranks: its number, or its position on the rank.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum StepKey {
    Number(u64),
    Position(usize),
}

/// Merges the ranks' step breakdowns into one entry per step.
fn merge_steps(breakdowns: &[StepBreakdown]) -> Vec<StepInfo> {
    let mut index: HashMap<StepKey, usize> = HashMap::new();
    let mut steps: Vec<StepInfo> = Vec::new();
    let mut position: HashMap<u32, usize> = HashMap::new();
    for (i, b) in breakdowns.iter().enumerate() {
        let pos = position.entry(b.rank).or_insert(0);
        let key = match b.step {
            Some(n) => StepKey::Number(n),
            None => StepKey::Position(*pos),
        };
        *pos += 1;
        let end = b.start_ns.saturating_add(b.step_ns);
        match index.get(&key) {
            Some(&k) => {
                let s = &mut steps[k];
                s.start = s.start.min(b.start_ns);
                s.end = s.end.max(end);
                if b.step_ns > s.time_ns {
                    s.time_ns = b.step_ns;
                    s.slowest_rank = b.rank;
                }
                if b.comm_exposed_ns > s.exposed_ns {
                    s.exposed_ns = b.comm_exposed_ns;
                    s.exposed_rank = b.rank;
                }
                s.warmup |= b.warmup.is_some();
                s.parts.push(i);
            }
            None => {
                index.insert(key, steps.len());
                steps.push(StepInfo {
                    number: b.step,
                    start: b.start_ns,
                    end,
                    time_ns: b.step_ns,
                    slowest_rank: b.rank,
                    exposed_ns: b.comm_exposed_ns,
                    exposed_rank: b.rank,
                    warmup: b.warmup.is_some(),
                    parts: vec![i],
                });
            }
        }
    }
    steps.sort_by_key(|s| (s.start, s.end));
    steps
}

/// The bucket ids of the layouts, or of the spans when no rank has a
/// layout.
fn bucket_ids(run: &Run) -> Vec<u32> {
    let mut ids: Vec<u32> = run
        .ranks
        .iter()
        .flat_map(|r| r.layouts.iter())
        .flat_map(|l| l.buckets.iter().map(|b| b.id))
        .collect();
    if ids.is_empty() {
        let mut seen = std::collections::BTreeSet::new();
        for rank in &run.ranks {
            for lane in &rank.lanes {
                if matches!(lane.kind, LaneKind::Buckets | LaneKind::Comm) {
                    let mut last = None;
                    for s in lane.spans().iter().filter_map(Span::bucket) {
                        if last != Some(s) {
                            seen.insert(s);
                            last = Some(s);
                        }
                    }
                }
            }
        }
        ids = seen.into_iter().collect();
    }
    ids.sort_unstable();
    ids.dedup();
    ids
}
