//! The per-rank sweep that every analysis builds on: one pass over each
//! rank's sorted lanes that cuts the spans into step windows and measures
//! each step.
//!
//! A rank's steps are its `step` spans in the compute lane or a custom lane
//! (where a `lane` override puts them).
//! Every other span is assigned to the steps by **time**: the parts of it
//! that fall inside a step's window `[start, end)` count for that step, so
//! spans without a `step` field (or with a wrong one) still count, and
//! nothing outside a step window does (the initial parameter broadcast, a
//! checkpoint between steps). A collective counts as a *call* of the step
//! whose window contains its start.
//!
//! The sweep keeps one cursor per lane and a small list of spans that reach
//! past the next step's start (usually none), so it reads every span once:
//! `O(spans + steps)` with per-step scratch buffers reused across steps and
//! no allocation per span. Each span of a kind that keeps the step busy
//! goes into its kind's interval list and into its lane's, both merged as
//! the spans come (in start order within a lane), so the step's busy time
//! is the union of a few short per-lane lists. The collective calls that
//! start in a window are measured once every lane is read (exposed time
//! with a cursor over the compute intervals, ready time from the window's
//! `bucket_ready` ends) and handed to a callback window by window instead
//! of being stored.
//!
//! **What communication overlaps.** On a rank whose collectives are GPU
//! kernels (collective spans that name a `device`, as `import kineto` writes
//! for NCCL kernels) and whose trace has GPU compute kernels (`kernel` spans
//! of category `compute`) on those devices, overlapped communication is
//! measured against those compute kernels: the part of the collectives'
//! union during which a compute kernel of the same GPU runs (Holistic Trace
//! Analysis' comm/comp overlap, docs/hta-definitions.md). The CPU-side
//! forward / backward / optimizer ranges of such a rank only enqueue GPU work
//! and would show all communication as overlapped. Every other rank (the
//! reference DDP, CPU jobs) measures it against the union of its forward,
//! backward and optimizer spans.

use serde::{Deserialize, Serialize};

use super::intervals::{self, Covered, Interval, IntervalList};
use super::SummaryOptions;
use crate::model::{LaneKind, RankTrace, Run, Span, Sym};
use crate::trace::{KernelCategory, SpanKind};
use rustc_hash::FxHashMap;

/// Why a step is left out of the statistics and reported on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WarmupReason {
    /// One of the rank's first steps ([`SummaryOptions::warmup_steps`],
    /// by default only the first iteration).
    FirstSteps,
    /// The step from which a `buckets` record with reason `"rebuild"`
    /// applies (PyTorch rebuilds its buckets before the second iteration's
    /// forward).
    Rebuild,
    /// Both.
    FirstStepsAndRebuild,
    /// A step still on the initial layout when the first rebuild comes
    /// within the first [`EARLY_REBUILD_STEP`] steps: with
    /// `static_graph=True` PyTorch rebuilds before the third iteration, so
    /// the second one runs on the initial layout too.
    BeforeRebuild,
}

/// The latest step at which a first rebuild makes the steps before it
/// warm-up ([`WarmupReason::BeforeRebuild`]). PyTorch rebuilds its buckets
/// once, before step 1 (step 2 with `static_graph`); a later rebuild (another
/// reference DDP, a layout changed by hand) leaves the steps before it alone.
pub const EARLY_REBUILD_STEP: u64 = 3;

impl WarmupReason {
    /// Words for a report.
    pub fn describe(self) -> &'static str {
        match self {
            WarmupReason::FirstSteps => "first iteration",
            WarmupReason::Rebuild => "bucket rebuild",
            WarmupReason::FirstStepsAndRebuild => "first iteration, bucket rebuild",
            WarmupReason::BeforeRebuild => "initial buckets, before the rebuild",
        }
    }
}

/// Where a step's uncovered time ("other / idle") falls, by the phases around it (ns). A gap
/// before the first forward is the framework preparing the batch (moving it to the device, an
/// autocast context); between the forward and the backward, the loss; after backward and its
/// all-reduces but before the optimizer, code there (gradient clipping, a GradScaler's
/// unscale, a logging `.item()`); after the optimizer, the scheduler, `zero_grad` and the rest
/// of the loop; anything else (between micro-batches, a step without some phase) is elsewhere.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OtherSplit {
    /// Before the step's first forward.
    pub before_forward_ns: i64,
    /// Between the last forward and the first backward.
    pub forward_to_backward_ns: i64,
    /// After the last backward and the last collective, before the optimizer (or the step's
    /// end without one).
    pub backward_to_optimizer_ns: i64,
    /// After the optimizer.
    pub after_optimizer_ns: i64,
    /// Anywhere else.
    pub elsewhere_ns: i64,
}

/// The phase boundaries a gap is placed by ([`OtherSplit::add_gap`]).
struct PhaseMarks {
    forward: Option<Interval>,
    backward_start: Option<i64>,
    /// The later of the last backward's end and the last collective's.
    backward_done: Option<i64>,
    optimizer: Option<Interval>,
}

impl OtherSplit {
    /// Adds the gap `[a, b)`.
    fn add_gap(&mut self, a: i64, b: i64, m: &PhaseMarks) {
        let len = (b - a).max(0);
        let slot = match (m.forward, m.backward_start, m.backward_done, m.optimizer) {
            (Some((f0, _)), ..) if b <= f0 => &mut self.before_forward_ns,
            (Some((_, f1)), Some(b0), ..) if a >= f1 && b <= b0 => &mut self.forward_to_backward_ns,
            (_, _, Some(done), opt) if a >= done && opt.is_none_or(|(o0, _)| b <= o0) => {
                &mut self.backward_to_optimizer_ns
            }
            (.., Some((_, o1))) if a >= o1 => &mut self.after_optimizer_ns,
            _ => &mut self.elsewhere_ns,
        };
        *slot += len;
    }

    /// Adds `other`'s parts.
    pub fn add(&mut self, other: &OtherSplit) {
        self.before_forward_ns += other.before_forward_ns;
        self.forward_to_backward_ns += other.forward_to_backward_ns;
        self.backward_to_optimizer_ns += other.backward_to_optimizer_ns;
        self.after_optimizer_ns += other.after_optimizer_ns;
        self.elsewhere_ns += other.elsewhere_ns;
    }

    /// The parts in step order: name, what usually runs there, time.
    pub fn parts(&self) -> [(&'static str, &'static str, i64); 5] {
        [
            (
                "before the forward",
                "the batch's preparation: moving it to the device, an autocast context",
                self.before_forward_ns,
            ),
            (
                "between forward and backward",
                "the loss",
                self.forward_to_backward_ns,
            ),
            (
                "after backward and its all-reduces, before the optimizer",
                "DDP's copy of the reduced buckets into .grad unless gradient_as_bucket_view, \
                 then the loop's code before the optimizer: gradient clipping, unscaling, a \
                 logging .item()",
                self.backward_to_optimizer_ns,
            ),
            (
                "after the optimizer",
                "the scheduler, zero_grad, the rest of the loop",
                self.after_optimizer_ns,
            ),
            (
                "elsewhere",
                "between micro-batches, or in a step without some phase",
                self.elsewhere_ns,
            ),
        ]
    }
}

/// What one step of one rank spent its time on. All durations are integer
/// nanoseconds of the step's window `[start, start + step_ns)`; every span is
/// clipped to that window first, and each value is the length of the
/// **union** of the spans named (so nested or overlapping spans count once).
///
/// Exact identities: `comm_overlapped_ns + comm_exposed_ns == comm_ns`, the parts of
/// `other_at` add up to `other_ns`, and
/// `other_ns == step_ns −` length of the union of data wait, forward,
/// backward, optimizer, writeback and collective spans.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepBreakdown {
    /// The rank.
    pub rank: u32,
    /// The step number of the `step` span, if it has one.
    pub step: Option<u64>,
    /// Start of the step (ns, rank 0's timeline).
    pub start_ns: i64,
    /// Length of the `step` span.
    pub step_ns: i64,
    /// `data_wait` spans.
    pub data_wait_ns: i64,
    /// `forward` spans.
    pub forward_ns: i64,
    /// `backward` spans.
    pub backward_ns: i64,
    /// The step's last `backward` span: the backward DDP reduces the buckets in. It is the
    /// whole of `backward_ns` but under gradient accumulation, where the micro-batches before
    /// it ran their backwards under `no_sync` (or with `require_backward_grad_sync` off, as
    /// nanoGPT does) and all-reduced nothing: what bucket sizes can overlap is this one.
    pub sync_backward_ns: i64,
    /// `collective` spans: the time at least one collective was running.
    pub comm_ns: i64,
    /// The part of `comm_ns` during which forward, backward or optimizer
    /// compute also ran (the intersection of the collectives' union with the
    /// union of forward, backward and optimizer spans), or, on a rank whose
    /// collectives are GPU kernels, during which a compute kernel of the same
    /// GPU ran (see the module documentation).
    pub comm_overlapped_ns: i64,
    /// The part of `comm_ns` with no compute running: what the step waited
    /// for communication.
    pub comm_exposed_ns: i64,
    /// `optimizer` spans.
    pub optimizer_ns: i64,
    /// `writeback` spans.
    pub writeback_ns: i64,
    /// Step time not covered by any of the above (framework overhead, host
    /// gaps, unrecorded work, idling).
    pub other_ns: i64,
    /// Where in the step `other_ns` falls; its parts add up to it.
    #[serde(default)]
    pub other_at: OtherSplit,
    /// End of the step's last backward span (ns, rank 0's timeline), `None`
    /// when the step has no backward.
    pub backward_end_ns: Option<i64>,
    /// How long DDP's last bucket collective ended after the last backward span ended (any
    /// collective's end when none names a bucket; 0 when it ended before, or when the step has
    /// no backward or no collective). The program's own collectives after backward (a loss
    /// averaged for logging, ZeroRedundancyOptimizer's broadcasts) are no part of it.
    pub comm_tail_ns: i64,
    /// Samples processed by this rank in the step: the sum of the `samples`
    /// counters inside the step window (see the trace format, section
    /// "Conventions for analysis").
    pub samples: Option<f64>,
    /// Set when the step is a warm-up step, left out of the statistics.
    pub warmup: Option<WarmupReason>,
    /// From the step's end to the start of the rank's next step, when the next window is the
    /// next step: the loop's tail that no step window holds (a PyTorch program's step ends at
    /// its optimizer's and the next begins at the DataLoader's `next`; between them run an LR
    /// scheduler, logging, a progress bar, a checkpoint or an evaluation). `None` for a rank's
    /// last step.
    pub between_ns: Option<i64>,
}

/// One collective call that starts in a step window: the span and what the
/// sweep measured of it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CollObs<'a> {
    /// The collective span.
    pub span: &'a Span,
    /// `end − start` of the span (saturating).
    pub duration: i64,
    /// Part of the call (clipped to its step) not overlapped by compute.
    pub exposed: i64,
    /// When its bucket was ready (`bucket_ready` end of the same bucket in
    /// the same step, else the call's `queued`), `i64::MIN` when unknown.
    pub ready: i64,
}

impl<'a> CollObs<'a> {
    /// A call outside any step window: nothing measured.
    pub fn unmeasured(span: &'a Span) -> CollObs<'a> {
        CollObs {
            span,
            duration: span.duration(),
            exposed: 0,
            ready: i64::MIN,
        }
    }
}

/// The collective calls that start in one step window of one rank, handed
/// to the sweep's sink together (so that each table takes them in a loop
/// of its own).
#[derive(Clone, Copy, Debug)]
pub(crate) struct WindowCalls<'a, 's> {
    /// The rank's trace (for the spans' extra fields).
    pub trace: &'a RankTrace,
    pub rank: u32,
    /// Step number of the window (`u32::MAX` when the step span has none).
    pub step: u32,
    /// Whether the step counts in the statistics (is no warm-up step).
    pub steady: bool,
    /// Start of the step's last backward (the one DDP reduces in; see
    /// [`StepBreakdown::sync_backward_ns`]), `i64::MIN` when the step has none.
    pub bwd_start: i64,
    /// The calls, by lane and each lane's in start order.
    pub calls: &'s [CollObs<'a>],
}

impl<'a> WindowCalls<'a, '_> {
    /// The transport of call `c` (from its extra fields).
    pub fn transport(&self, c: &CollObs<'a>) -> Option<Sym> {
        self.trace.extra(c.span).and_then(|x| x.transport)
    }
}

/// The sweep's result for one rank.
#[derive(Clone, Debug)]
pub(crate) struct RankScan {
    pub rank: u32,
    /// Every step, in time order.
    pub steps: Vec<StepBreakdown>,
}

/// The sweep's result for a run.
#[derive(Clone, Debug, Default)]
pub(crate) struct RunScan {
    /// Per rank, in rank order.
    pub ranks: Vec<RankScan>,
}

/// The step numbers from which a `buckets` record with reason `"rebuild"`
/// applies, over all ranks, sorted.
pub(crate) fn rebuild_steps(run: &Run) -> Vec<u64> {
    let mut v: Vec<u64> = run
        .ranks
        .iter()
        .flat_map(|r| r.layouts.iter())
        .filter(|l| !l.from_header && l.reason == "rebuild")
        .map(|l| l.from_step)
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Runs the sweep over every rank. The collective calls that start inside
/// a step window are handed to `sink` window by window as they are measured
/// (rank by rank, each in step order), with `steady` telling whether the
/// step counts in the statistics; nothing per call is stored.
pub(crate) fn scan_run(
    run: &Run,
    opts: &SummaryOptions,
    sink: &mut impl FnMut(&WindowCalls<'_, '_>),
) -> RunScan {
    let rebuilds = rebuild_steps(run);
    let samples = run.strings.lookup(super::SAMPLES_COUNTER);
    let mut scratch = Scratch::default();
    let ranks = run
        .ranks
        .iter()
        .map(|r| {
            let blocking = blocking_collectives_of(run, r);
            scan_rank(r, opts, &rebuilds, samples, &blocking, &mut scratch, sink)
        })
        .collect();
    RunScan { ranks }
}

/// Every step of every rank with its breakdown, warm-up steps included
/// (marked), ranks in order and each rank's steps in time order.
pub fn step_breakdowns(run: &Run, opts: &SummaryOptions) -> Vec<StepBreakdown> {
    scan_run(run, opts, &mut |_| {})
        .ranks
        .into_iter()
        .flat_map(|r| r.steps)
        .collect()
}

#[derive(Default)]
struct Scratch<'a> {
    // The spans of each kind clipped to the current window, normalized as
    // they are added (the lanes are sorted).
    data: IntervalList,
    fwd: IntervalList,
    bwd: IntervalList,
    opt: IntervalList,
    wb: IntervalList,
    coll: IntervalList,
    /// Per lane (the last one shared by any further lanes): the spans of all
    /// the kinds above, so that the union of the lists is the time the step
    /// was busy. Spans come in start order within a lane, so each list
    /// merges them as they come, and the union takes a few lists of a few
    /// intervals instead of all the kinds' intervals.
    busy: Vec<IntervalList>,
    /// The union of forward, backward and optimizer.
    compute: Vec<Interval>,
    /// The GPU compute kernels inside the current window, on ranks whose
    /// collectives are GPU kernels.
    gpu_compute: Vec<Interval>,
    /// The blocking collectives inside the current window ([`blocking_collectives_of`]).
    blocking: Vec<Interval>,
    /// Collectives that start in the current window (measured once every
    /// lane is read).
    calls: Vec<CollObs<'a>>,
    /// Bucket id → latest `bucket_ready` end in the current window.
    ready: ReadyTable,
}

/// Latest `bucket_ready` end per bucket id within one window: a direct
/// table for ids below [`ReadyTable::DENSE`], a hash map above. An entry
/// holds the window it was set in, so that starting a window is a counter
/// increment rather than a reset of the entries.
#[derive(Default)]
struct ReadyTable {
    /// The current window (entries of other windows read as unset).
    window: u64,
    dense: Vec<(u64, i64)>,
    sparse: FxHashMap<u32, i64>,
}

impl ReadyTable {
    const DENSE: u32 = 1 << 16;

    fn clear(&mut self) {
        self.window += 1;
        if !self.sparse.is_empty() {
            self.sparse.clear();
        }
    }

    #[inline]
    fn set_max(&mut self, bucket: u32, t: i64) {
        if bucket < Self::DENSE {
            let b = bucket as usize;
            if b >= self.dense.len() {
                self.dense.resize(b + 1, (0, i64::MIN));
            }
            let e = &mut self.dense[b];
            if e.0 == self.window {
                e.1 = e.1.max(t);
            } else {
                *e = (self.window, t);
            }
        } else {
            let e = self.sparse.entry(bucket).or_insert(i64::MIN);
            *e = (*e).max(t);
        }
    }

    #[inline]
    fn get(&self, bucket: u32) -> Option<i64> {
        let v = if bucket < Self::DENSE {
            self.dense
                .get(bucket as usize)
                .filter(|e| e.0 == self.window)
                .map(|e| e.1)
        } else {
            self.sparse.get(&bucket).copied()
        };
        v.filter(|&t| t != i64::MIN)
    }
}

impl Scratch<'_> {
    fn clear(&mut self) {
        for v in [
            &mut self.data,
            &mut self.fwd,
            &mut self.bwd,
            &mut self.opt,
            &mut self.wb,
            &mut self.coll,
        ] {
            v.clear();
        }
        for v in &mut self.busy {
            v.clear();
        }
        self.compute.clear();
        self.gpu_compute.clear();
        self.blocking.clear();
        self.calls.clear();
        self.ready.clear();
    }
}

#[derive(Clone, Copy)]
struct Window {
    start: i64,
    end: i64,
    step: Option<u64>,
}

fn scan_rank<'a>(
    rank: &'a RankTrace,
    opts: &SummaryOptions,
    rebuilds: &[u64],
    samples_sym: Option<Sym>,
    blocking: &[Interval],
    s: &mut Scratch<'a>,
    sink: &mut impl FnMut(&WindowCalls<'a, '_>),
) -> RankScan {
    let lanes: Vec<&'a crate::model::Lane> = rank
        .lanes
        .iter()
        .filter(|l| !matches!(l.kind, LaneKind::Gpu { .. }))
        .collect();
    // Steps live in the compute lane (or a custom lane by override); the
    // big lanes (communication, buckets) are not searched for them.
    let mut windows: Vec<Window> = lanes
        .iter()
        .filter(|l| matches!(l.kind, LaneKind::Compute | LaneKind::Custom))
        .flat_map(|l| l.spans().iter())
        .filter(|sp| sp.kind() == SpanKind::Step)
        .map(|sp| Window {
            start: sp.start(),
            end: sp.end(),
            step: sp.step(),
        })
        .collect();
    windows.sort_by_key(|w| (w.start, std::cmp::Reverse(w.end)));

    let gpu_compute = gpu_compute_of(rank);

    s.busy
        .resize_with(lanes.len().clamp(1, MAX_BUSY_LISTS), IntervalList::default);
    let mut cursors = vec![0usize; lanes.len()];
    let mut carries: Vec<Vec<u32>> = vec![Vec::new(); lanes.len()];
    let mut steps = Vec::with_capacity(windows.len());

    for (k, w) in windows.iter().enumerate() {
        let next_start = windows.get(k + 1).map_or(i64::MAX, |n| n.start);
        s.clear();
        for (li, lane) in lanes.iter().enumerate() {
            let spans = lane.spans();
            let carry = &mut carries[li];
            let busy = li.min(MAX_BUSY_LISTS - 1);
            carry.retain(|&i| spans[i as usize].end() > w.start);
            for &i in carry.iter() {
                visit(&spans[i as usize], w, false, busy, s);
            }
            // A local cursor, stored back after the loop: the compiler keeps
            // it in a register.
            let mut cur = cursors[li];
            while let Some(sp) = spans.get(cur).filter(|sp| sp.start() < w.end) {
                let is_new = sp.start() >= w.start;
                if sp.end() > w.start || is_new {
                    visit(sp, w, is_new, busy, s);
                }
                if sp.end() > next_start {
                    carry.push(cur as u32);
                }
                cur += 1;
            }
            cursors[li] = cur;
        }
        let first = (k as u64) < opts.warmup_steps;
        let rebuild =
            opts.exclude_rebuild && w.step.is_some_and(|n| rebuilds.binary_search(&n).is_ok());
        let before_rebuild = opts.exclude_rebuild
            && rebuilds
                .first()
                .is_some_and(|&r| r <= EARLY_REBUILD_STEP && w.step.is_some_and(|n| n < r));
        let warmup = match (first, rebuild) {
            (true, true) => Some(WarmupReason::FirstStepsAndRebuild),
            (true, false) => Some(WarmupReason::FirstSteps),
            (false, true) => Some(WarmupReason::Rebuild),
            (false, false) if before_rebuild => Some(WarmupReason::BeforeRebuild),
            (false, false) => None,
        };
        if let Some(g) = &gpu_compute {
            clip_into(&mut s.gpu_compute, g, w.start, w.end);
        }
        if !blocking.is_empty() {
            clip_into(&mut s.blocking, blocking, w.start, w.end);
        }
        steps.push(measure(rank, w, warmup, gpu_compute.is_some(), s, sink));
    }

    // Samples counters, by time: t in [start, end], ties to the earlier step.
    if let Some(sym) = samples_sym {
        let mut k = 0usize;
        for c in rank.counters.iter().filter(|c| c.name == sym) {
            if c.value.is_nan() {
                continue;
            }
            while k < windows.len() && windows[k].end < c.t {
                k += 1;
            }
            if k < windows.len() && windows[k].start <= c.t {
                *steps[k].samples.get_or_insert(0.0) += c.value;
            }
        }
    }

    // The time between a step and the next, on this rank.
    for k in 1..steps.len() {
        let (prev, next) = (&steps[k - 1], &steps[k]);
        let consecutive = match (prev.step, next.step) {
            (Some(a), Some(b)) => b == a + 1,
            (None, None) => true,
            _ => false,
        };
        let end = prev.start_ns + prev.step_ns;
        if consecutive && next.start_ns >= end {
            steps[k - 1].between_ns = Some(next.start_ns - end);
        }
    }

    RankScan {
        rank: rank.rank(),
        steps,
    }
}

/// The collectives that block the training thread while they run, merged: those the PyTorch
/// module records outside DDP's buckets with `"what"` in their args (a `torch.distributed` call
/// of the program's own, DDP's buffer broadcast). A compute span around one did not compute
/// meanwhile: PyTorch Lightning runs `training_step` inside DDP's forward, so the barrier and
/// all-reduce of its `self.log(sync_dist=True)` fall inside the forward span (2026-12-06:
/// Lightning 2.6, 2 CPU ranks; they had counted as communication overlapped with compute).
fn blocking_collectives_of(run: &Run, rank: &RankTrace) -> Vec<Interval> {
    let mut v: Vec<Interval> = rank
        .lanes
        .iter()
        .filter(|l| !matches!(l.kind, LaneKind::Gpu { .. }))
        .flat_map(|l| l.spans().iter())
        .filter(|sp| {
            marked_collective_args(run, rank, sp).is_some_and(|a| {
                (a["what"] == "program" || a["what"] == "module buffers")
                    && !(a["async"] == true && a["via"].as_str().is_some_and(made_by_join))
            })
        })
        .map(|sp| (sp.start(), sp.end()))
        .collect();
    intervals::normalize(&mut v);
    v
}

/// Whether torch's function `via` (a collective's `args.via`) is DDP's Join context manager's:
/// a rank still training all-reduces a flag in each forward (`Join.notify_join_context`, torch
/// 2.13's algorithms/join.py) and another for the backward's gradient sync
/// (`_check_global_requires_backward_grad_sync`, nn/parallel/distributed.py), both with
/// async_op=True and never waited for on the training thread (the reducer reads the first at
/// the backward's end): they run beside the forward and backward, blocking neither. With
/// buffers to broadcast, DDP first agrees on the rank that sends them
/// (`_find_common_rank`, an all-reduce it waits for; only under Join). Before 2026-12-07 the
/// flags counted as blocking, and the breakdown of a Join job on 2 CPU ranks read a median
/// backward of 0 ns.
pub(crate) fn made_by_join(via: &str) -> bool {
    via.contains("algorithms/join.py")
        || via.ends_with(" in _check_global_requires_backward_grad_sync")
        || via.ends_with(" in _find_common_rank")
}

/// The args of a collective that the PyTorch module recorded outside DDP's buckets with a
/// `"what"` (`"program"`: a `torch.distributed` call of the program's own, with its
/// `"caller"`; `"module buffers"`: DDP's buffer broadcast), parsed; `None` for any other span.
/// Only args that name `"what"` are read as JSON.
pub(crate) fn marked_collective_args(
    run: &Run,
    rank: &RankTrace,
    sp: &Span,
) -> Option<serde_json::Value> {
    if sp.kind() != SpanKind::Collective || sp.bucket().is_some() {
        return None;
    }
    let args = run.span(rank, sp).args_json()?;
    if !args.contains("\"what\"") {
        return None;
    }
    serde_json::from_str::<serde_json::Value>(args)
        .ok()
        .filter(|a| a["what"].is_string())
}

/// The merged GPU compute kernels of a rank whose collectives are GPU kernels:
/// the `kernel` spans of category `compute` on the GPUs that its collective
/// spans name. `None` when no collective names a GPU, or when those GPUs ran
/// no compute kernel in the trace (then the CPU-side compute spans are the
/// reference, as for CPU jobs).
///
/// The spans are only read when the answer can be `Some`: a device is named
/// through the rank's shared extra fields, so when no extra names a device
/// on which a GPU lane ran a compute kernel, no collective can either.
fn gpu_compute_of(rank: &RankTrace) -> Option<Vec<Interval>> {
    let is_compute_kernel =
        |sp: &Span| sp.kind() == SpanKind::Kernel && sp.category() == Some(KernelCategory::Compute);
    // The devices any span's extra fields name (the extras are shared, so
    // few), then those of them with a compute kernel in a GPU lane.
    let mut named: Vec<u32> = rank.extras.iter().filter_map(|x| x.device).collect();
    named.sort_unstable();
    named.dedup();
    let with_kernels = |devices: &[u32]| {
        rank.lanes.iter().any(|l| {
            matches!(l.kind, LaneKind::Gpu { device, .. } if devices.binary_search(&device).is_ok())
                && l.spans().iter().any(is_compute_kernel)
        })
    };
    if named.is_empty() || !with_kernels(&named) {
        return None;
    }
    let mut devices: Vec<u32> = rank
        .lanes
        .iter()
        .filter(|l| !matches!(l.kind, LaneKind::Gpu { .. }))
        .flat_map(|l| l.spans().iter())
        .filter(|sp| sp.kind() == SpanKind::Collective)
        .filter_map(|sp| rank.extra(sp).and_then(|x| x.device))
        .collect();
    if devices.is_empty() {
        return None;
    }
    devices.sort_unstable();
    devices.dedup();
    let mut v: Vec<Interval> = rank
        .lanes
        .iter()
        .filter(|l| matches!(l.kind, LaneKind::Gpu { device, .. } if devices.binary_search(&device).is_ok()))
        .flat_map(|l| l.spans().iter())
        .filter(|sp| is_compute_kernel(sp))
        .map(|sp| (sp.start(), sp.end()))
        .collect();
    if v.is_empty() {
        return None;
    }
    intervals::normalize(&mut v);
    Some(v)
}

/// Sets `out` to the parts of the merged, sorted intervals `all` inside
/// `[lo, hi)`.
fn clip_into(out: &mut Vec<Interval>, all: &[Interval], lo: i64, hi: i64) {
    out.clear();
    let first = all.partition_point(|iv| iv.1 <= lo);
    for &(a, b) in &all[first..] {
        if a >= hi {
            break;
        }
        let (a, b) = (a.max(lo), b.min(hi));
        if b > a {
            out.push((a, b));
        }
    }
}

/// How many busy lists a window keeps at most (see [`Scratch::busy`]): the
/// union merges up to 8 lists without allocating.
const MAX_BUSY_LISTS: usize = 8;

/// Adds the part of `sp` inside `w` to the step's scratch buffers, and to
/// busy list `busy` for a kind that keeps the step busy (inlined into both
/// loops of the sweep: it runs once per span).
#[inline(always)]
fn visit<'a>(sp: &'a Span, w: &Window, is_new: bool, busy: usize, s: &mut Scratch<'a>) {
    let lo = sp.start().max(w.start);
    let hi = sp.end().min(w.end);
    let iv = (lo, hi);
    let list = match sp.kind() {
        SpanKind::DataWait => &mut s.data,
        SpanKind::Forward => &mut s.fwd,
        SpanKind::Backward => &mut s.bwd,
        SpanKind::Optimizer => &mut s.opt,
        SpanKind::Writeback => &mut s.wb,
        SpanKind::Collective => {
            if is_new {
                s.calls.push(CollObs::unmeasured(sp));
            }
            &mut s.coll
        }
        SpanKind::BucketReady => {
            if is_new {
                if let Some(b) = sp.bucket() {
                    s.ready.set_max(b, sp.end());
                }
            }
            return;
        }
        _ => return,
    };
    list.push(iv);
    s.busy[busy].push(iv);
}

/// Turns the scratch buffers of one window into its breakdown and hands its
/// collective calls to `sink`.
fn measure<'a>(
    trace: &'a RankTrace,
    w: &Window,
    warmup: Option<WarmupReason>,
    gpu: bool,
    s: &mut Scratch<'a>,
    sink: &mut impl FnMut(&WindowCalls<'a, '_>),
) -> StepBreakdown {
    let rank = trace.rank();
    use intervals::{split_len, total, union_into};
    let data = s.data.normalized();
    let fwd = s.fwd.normalized();
    let bwd = s.bwd.normalized();
    let opt = s.opt.normalized();
    let wb = s.wb.normalized();
    let coll = s.coll.normalized();
    union_into(&mut s.compute, &[fwd, bwd, opt]);
    // A blocking collective inside a compute span: that span did not compute meanwhile.
    let blocking = &s.blocking[..];
    let compute_len = |v: &[Interval]| {
        if blocking.is_empty() {
            total(v)
        } else {
            intervals::difference_len(v, blocking)
        }
    };
    let (forward_ns, backward_ns, optimizer_ns) =
        (compute_len(fwd), compute_len(bwd), compute_len(opt));
    if !blocking.is_empty() {
        s.compute = intervals::difference(&s.compute, blocking);
    }
    // The union of data wait, forward, backward, optimizer, writeback and
    // collectives, lane by lane.
    let n_busy = s.busy.len();
    let mut lanes: [&[Interval]; MAX_BUSY_LISTS] = [&[]; MAX_BUSY_LISTS];
    for (slot, list) in lanes.iter_mut().zip(s.busy.iter_mut()) {
        *slot = list.normalized();
    }
    // The backward DDP reduces in: the last (under gradient accumulation the micro-batches'
    // backwards before it all-reduce nothing).
    let sync_bwd = bwd.last().copied();
    let bwd_start = sync_bwd.map_or(i64::MIN, |iv| iv.0);
    let bwd_end = sync_bwd.map(|iv| iv.1);
    let coll_end = coll.last().map(|iv| iv.1);
    let marks = PhaseMarks {
        forward: fwd.first().zip(fwd.last()).map(|(a, b)| (a.0, b.1)),
        backward_start: bwd.first().map(|iv| iv.0),
        backward_done: bwd_end.map(|b| coll_end.map_or(b, |c| c.max(b))),
        optimizer: opt.first().zip(opt.last()).map(|(a, b)| (a.0, b.1)),
    };
    // The busy time, and the gaps between it placed by phase.
    let (mut busy, mut cursor) = (0i64, w.start);
    let mut other_at = OtherSplit::default();
    intervals::for_each_union(&lanes[..n_busy], |(a, b)| {
        busy += b - a;
        if a > cursor {
            other_at.add_gap(cursor, a, &marks);
        }
        cursor = cursor.max(b);
    });
    if w.end > cursor {
        other_at.add_gap(cursor, w.end, &marks);
    }
    // What communication overlaps: GPU compute kernels on GPU-collective
    // ranks, else the CPU-side compute spans.
    let reference: &[Interval] = if gpu { &s.gpu_compute } else { &s.compute };

    let step_ns = w.end.saturating_sub(w.start).max(0);
    let (comm_ns, comm_overlapped_ns, comm_exposed_ns) = split_len(coll, reference);
    // DDP's tail: its last bucket collective's end (a program's own collectives after backward,
    // ZeroRedundancyOptimizer's broadcasts in its optimizer step, are no bucket's and bucket
    // sizes do not move them); any collective's when none names a bucket.
    let bucket_end = s
        .calls
        .iter()
        .filter(|c| c.span.bucket().is_some())
        .map(|c| c.span.end().min(w.end))
        .max();
    let comm_tail_ns = match (bwd_end, bucket_end.or(coll_end)) {
        (Some(b), Some(c)) => (c - b).max(0),
        _ => 0,
    };
    let step_u32 = w
        .step
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(u32::MAX);
    // The part of each call covered by the reference, with a cursor into it
    // that moves forward while the calls come in start order (they do
    // within a lane).
    let mut cursor = Covered::new(reference);
    for c in &mut s.calls {
        let sp = c.span;
        let lo = sp.start().max(w.start);
        let hi = sp.end().min(w.end);
        c.exposed = (hi - lo).max(0) - cursor.covered_len(lo, hi);
        c.ready = sp
            .bucket()
            .and_then(|b| s.ready.get(b))
            .or_else(|| sp.queued())
            .unwrap_or(i64::MIN);
    }
    if !s.calls.is_empty() {
        sink(&WindowCalls {
            trace,
            rank,
            step: step_u32,
            steady: warmup.is_none(),
            bwd_start,
            calls: &s.calls,
        });
    }
    StepBreakdown {
        rank,
        step: w.step,
        start_ns: w.start,
        step_ns,
        data_wait_ns: total(data),
        forward_ns,
        backward_ns,
        sync_backward_ns: sync_bwd.map_or(0, |iv| compute_len(&[iv])),
        comm_ns,
        comm_overlapped_ns,
        comm_exposed_ns,
        optimizer_ns,
        writeback_ns: total(wb),
        other_ns: step_ns - busy,
        other_at,
        backward_end_ns: bwd_end,
        comm_tail_ns,
        samples: None,
        warmup,
        between_ns: None,
    }
}
