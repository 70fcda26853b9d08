//! `bucket_cap_mb` advice from a single trace.
//!
//! [`advise`] answers "which bucket size would make my step shorter, by how
//! much, and how sure is that?" from what one run recorded:
//!
//! 1. **Cost model.** A line `latency + size / bandwidth` is fitted per
//!    transport to the observed collectives ([`super::costmodel`]). A
//!    collective's time is its duration on the rank that started it last
//!    (the others' durations include waiting for that rank); collectives of
//!    every step count, warm-up included, since the first iteration's
//!    differently sized buckets pin the line down. When the times of all
//!    of them do not rise with size, the line is fitted again to the calls
//!    during which their rank ran no compute (the sweep's exposed part is
//!    the whole call): a bucket reduced during backward competes with it
//!    for the cores (or the GPU) and can take longer than a larger one
//!    reduced after it, which is what a 2-rank CPU job on two cores shows.
//!    The tail that bucket sizes change is made of such calls. A line needs
//!    two sizes among them seen at least [`MIN_CALLS_PER_SIZE`] times each;
//!    with one, the line goes through the origin (latency taken as 0, which
//!    favours smaller buckets, said so in the advice and never with high
//!    confidence).
//! 2. **Gradient-ready times.** Every all-reduce waits for the last rank to
//!    be ready, so each steady step is seen from its *critical rank*: the
//!    rank whose backward ends last. For every parameter, the ready offset
//!    after backward start is the median over the critical ranks' `grad_ready`
//!    records (at most [`AdviceOptions::max_ready_samples`], evenly spread;
//!    all ranks' records when the critical ranks have none); the backward
//!    time and the measured tail are the critical ranks' medians too. Sizes
//!    and element types come from the header's parameter table.
//! 3. **Replay.** For each candidate cap (and first-bucket size 1 MiB or
//!    the same as the cap), PyTorch's rebuild assignment
//!    ([`super::assign::assign_buckets`], the reference DDP's own
//!    [`bucket_assignment`] code) is replayed on the parameters in ready order.
//!    Its keys are (dtype, device); the trace does not give the device, so it
//!    is the rank's GPU (`cuda:<local rank>` of the rank whose parameter table
//!    is used) with the NCCL backend and the CPU otherwise.
//! 4. **Schedule.** [`simulate_schedule`]: a bucket is ready when its last
//!    parameter is; buckets are launched strictly in order, one collective
//!    at a time, each costing the model's time. The *tail* is how long the
//!    last collective ends after backward ends; the *exposed* time is the
//!    collectives' time after backward ended.
//! 5. **Prediction.** The recorded layout is simulated the same way, and a
//!    candidate's predicted step time is the measured median step time plus
//!    the difference of the simulated tails: `step + tail(candidate) −
//!    tail(recorded layout)`. Everything the model does not capture (data,
//!    forward, optimizer, copies, framework overhead) therefore stays as
//!    measured.
//! 6. **Verdict.** The gain of the best candidate is compared with a noise
//!    threshold: the largest of 1 % of the step, half the robust standard
//!    deviation of the step time, and the model error (the fit's relative
//!    residual times the two tails compared, plus half the difference
//!    between the simulated and the measured tail of the recorded layout).
//!    Below it the advice is "not worth changing".
//!
//! Copies into and out of the buckets are not modelled (they stay in the
//! measured rest).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::assign::{assign_buckets, rebuild_limits, ParamSpec};
use super::comm::{bus_factor, LastCall, SeqTable};
use super::costmodel::{fit_bandwidth, fit_latency_bandwidth, CostFit, FitError, LinearFit};
use super::group::Groups;
use super::render::{self, num, text, Table};
use super::scan::{scan_run, CollObs, WindowCalls};
use super::stats::{median, robust_sigma};
use super::SummaryOptions;
use crate::model::{LaneKind, Run, Span, Sym};
use crate::trace::{ParamInfo, SpanKind};
use crate::units::mib;
use bucket_assignment::DeviceKey;

const MIB: f64 = 1024.0 * 1024.0;

/// Candidates whose predicted step time is within this fraction of the step
/// time of the best prediction count as equally good (the smallest change
/// among them is recommended).
pub const TIE_FRACTION: f64 = 0.001;

pub use bucket_assignment::{DEFAULT_BUCKET_CAP_MB, DEFAULT_FIRST_BUCKET_BYTES};

/// What [`advise`] tries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdviceOptions {
    /// Which steps are warm-up (as for the summary).
    pub summary: SummaryOptions,
    /// Candidate caps in MiB; the current cap is always added. Default 1, 2,
    /// 5, 10, 15, 25, 50, 100.
    pub candidate_caps_mib: Vec<f64>,
    /// At most this many `grad_ready` records (evenly spread over the steady
    /// steps) feed the per-parameter medians. Default 512.
    pub max_ready_samples: usize,
    /// A communication cost the user states (`ddp-probe advise --latency
    /// --bandwidth`), used instead of the one fitted to the trace: for runs
    /// whose collectives all have one size, or whose times are too noisy to
    /// show the bandwidth.
    #[serde(default)]
    pub assumed_cost: Option<AssumedCost>,
}

/// A communication cost stated by the user rather than fitted.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AssumedCost {
    /// Fixed cost of one collective call (ns).
    pub latency_ns: f64,
    /// Bus bandwidth (nccl-tests definition), bytes per second.
    pub busbw_bytes_per_s: f64,
}

impl Default for AdviceOptions {
    fn default() -> AdviceOptions {
        AdviceOptions {
            summary: SummaryOptions::default(),
            candidate_caps_mib: vec![1.0, 2.0, 5.0, 10.0, 15.0, 25.0, 50.0, 100.0],
            max_ready_samples: 512,
            assumed_cost: None,
        }
    }
}

/// The bucket configuration the trace ran with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CurrentSetting {
    /// `bucket_cap_mb`.
    pub bucket_cap_mb: f64,
    /// Whether the header gave it (else PyTorch's default is assumed).
    pub cap_from_trace: bool,
    /// First-bucket size in bytes.
    pub first_bucket_bytes: u64,
    /// Whether the header gave it (else PyTorch's default is assumed).
    pub first_from_trace: bool,
    /// Buckets of the layout in effect in the steady steps (0 when the trace
    /// has no layout).
    pub buckets: usize,
    /// Whether replaying the assignment with the current setting gives the
    /// recorded layout (`None` without a recorded layout).
    pub layout_matches_replay: Option<bool>,
}

/// What the steady steps measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Observed {
    /// Steady steps (for steps with a number, one per step: the critical
    /// rank's, see [`advise`]).
    pub steps: u64,
    /// Median step time over all ranks' steady steps (ns).
    pub step_ns: f64,
    /// Robust standard deviation of the step time over all ranks' steady
    /// steps (ns).
    pub step_sigma_ns: f64,
    /// Median backward time of the critical ranks (ns).
    pub backward_ns: f64,
    /// Median time from the critical rank's backward end to its last
    /// collective's end (ns).
    pub comm_tail_ns: f64,
    /// Median exposed communication of the critical ranks (ns).
    pub comm_exposed_ns: f64,
    /// Parameters with a gradient-ready time.
    pub params_ready: usize,
    /// Parameters that never got a gradient in the sampled steps.
    pub params_never_ready: usize,
    /// `grad_ready` records used.
    pub ready_records: usize,
}

/// One simulated bucket configuration. Times in ns; "after backward start"
/// unless said otherwise.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// The cap in MiB (for the recorded layout: the current cap).
    pub cap_mb: f64,
    /// First-bucket size in bytes.
    pub first_bucket_bytes: u64,
    /// Whether this is the recorded layout rather than a replay.
    pub recorded_layout: bool,
    /// Whether cap and first-bucket size are the current ones.
    pub is_current: bool,
    /// Number of buckets.
    pub buckets: usize,
    /// Largest bucket (bytes).
    pub largest_bucket_bytes: u64,
    /// When the last collective ends.
    pub comm_end_ns: f64,
    /// How long the last collective ends after backward ends (≥ 0).
    pub tail_ns: f64,
    /// Collective time after backward ended.
    pub exposed_ns: f64,
    /// Predicted median step time.
    pub predicted_step_ns: f64,
    /// `predicted_step_ns −` the measured median step time.
    pub delta_ns: f64,
}

/// How sure the advice is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// The gain is at least three times the noise threshold and the cost
    /// model fits within 10 %.
    High,
    /// The gain exceeds the noise threshold.
    Medium,
    /// The gain is within the noise: not worth changing.
    Low,
}

/// The advice.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    /// The best cap in MiB.
    pub cap_mb: f64,
    /// Its first-bucket size in bytes.
    pub first_bucket_bytes: u64,
    /// Whether it is the current setting.
    pub is_current: bool,
    /// Predicted step-time saving against the measured median (ns; ≥ 0).
    pub gain_ns: f64,
    /// `gain_ns` over the measured median step time.
    pub gain_frac: f64,
    /// The noise threshold the gain is compared with (ns).
    pub threshold_ns: f64,
    /// Whether the gain exceeds the threshold.
    pub worth_changing: bool,
    /// How sure.
    pub confidence: Confidence,
    /// The advice in words, one paragraph per entry.
    pub explanation: Vec<String>,
}

/// Everything `ddp-probe advise` reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Advice {
    /// The run id.
    pub run_id: String,
    /// What the trace lacks for advice; when not empty there is no
    /// recommendation.
    pub missing: Vec<String>,
    /// Assumptions and caveats.
    pub notes: Vec<String>,
    /// The configuration the trace ran with.
    pub current: Option<CurrentSetting>,
    /// Cost models, one per transport.
    pub fits: Vec<CostFit>,
    /// Index in `fits` of the model used for the buckets.
    pub fit_used: Option<usize>,
    /// Measured numbers.
    pub observed: Option<Observed>,
    /// The recorded layout, simulated.
    pub recorded: Option<Candidate>,
    /// The replayed candidates, by cap then first-bucket size.
    pub candidates: Vec<Candidate>,
    /// The recommendation.
    pub recommendation: Option<Recommendation>,
}

/// The result of [`simulate_schedule`] (ns after backward start).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Schedule {
    /// When the last collective ends (0 without buckets).
    pub comm_end_ns: f64,
    /// `max(0, comm_end − backward end)`.
    pub tail_ns: f64,
    /// Σ over collectives of their time after backward end.
    pub exposed_ns: f64,
}

/// Simulates DDP's overlapped reduction: `buckets` are `(bytes, ready)` in
/// launch order (ready in ns after backward start); bucket `i` starts at
/// `max(ready_i, end_{i−1})` (strictly in order, one collective at a time)
/// and ends `cost(bytes_i)` later; backward ends at `backward_ns`.
pub fn simulate_schedule(
    buckets: &[(u64, f64)],
    backward_ns: f64,
    cost: impl Fn(u64) -> f64,
) -> Schedule {
    let mut end = f64::NEG_INFINITY;
    let mut exposed = 0.0;
    for &(bytes, ready) in buckets {
        let start = if end > ready { end } else { ready };
        end = start + cost(bytes).max(0.0);
        exposed += (end - start.max(backward_ns)).max(0.0);
    }
    if buckets.is_empty() {
        return Schedule {
            comm_end_ns: 0.0,
            tail_ns: 0.0,
            exposed_ns: 0.0,
        };
    }
    Schedule {
        comm_end_ns: end,
        tail_ns: (end - backward_ns).max(0.0),
        exposed_ns: exposed,
    }
}

/// `(bytes, ready)` of each bucket of `layout` (parameter indices): bytes
/// summed from `params`, ready the latest ready time of its parameters
/// (`fallback` when none of them has one).
pub fn bucket_inputs(
    layout: &[Vec<u32>],
    params: &[ParamSpec<'_>],
    ready: &[Option<f64>],
    fallback: f64,
) -> Vec<(u64, f64)> {
    layout
        .iter()
        .map(|b| {
            let bytes = b
                .iter()
                .filter_map(|&i| params.get(i as usize))
                .map(|p| p.bytes)
                .fold(0u64, u64::saturating_add);
            let r = b
                .iter()
                .filter_map(|&i| ready.get(i as usize).copied().flatten())
                .fold(f64::NEG_INFINITY, f64::max);
            (bytes, if r.is_finite() { r } else { fallback })
        })
        .collect()
}

/// One collective time for the cost model.
struct FitPoint {
    bytes: u64,
    op: Option<Sym>,
    transport: Option<Sym>,
    time_ns: f64,
    /// Whether no compute of its rank ran during the call (see
    /// [`LastCall::alone`]).
    alone: bool,
}

/// The address of a span, to tell spans apart across passes.
fn span_addr(sp: &Span) -> usize {
    std::ptr::from_ref(sp) as usize
}

/// Every collective with a byte count, once per sequence number: its
/// duration on the rank that started it last (calls without `seq` count
/// each with their own duration). One pass over the lanes. `alone` holds
/// the sorted addresses ([`span_addr`]) of the calls the sweep saw run
/// with no compute of their rank.
fn fit_points(run: &Run, alone: &[usize]) -> Vec<FitPoint> {
    let mut seqs = SeqTable::<LastCall>::default();
    let mut out = Vec::new();
    for r in &run.ranks {
        for lane in r
            .lanes
            .iter()
            .filter(|l| !matches!(l.kind, LaneKind::Gpu { .. }))
        {
            // A lane's spans lie at rising addresses: a cursor into `alone`
            // follows them from the lane's first.
            let mut k = lane
                .spans()
                .first()
                .map_or(0, |sp| alone.partition_point(|&a| a < span_addr(sp)));
            for sp in lane
                .spans()
                .iter()
                .filter(|s| s.kind() == SpanKind::Collective)
            {
                let Some(bytes) = sp.bytes() else { continue };
                let addr = span_addr(sp);
                while alone.get(k).is_some_and(|&a| a < addr) {
                    k += 1;
                }
                let is_alone = alone.get(k) == Some(&addr);
                if sp.seq().is_none() {
                    out.push(FitPoint {
                        bytes,
                        op: sp.op(),
                        transport: r.extra(sp).and_then(|x| x.transport),
                        time_ns: sp.duration() as f64,
                        alone: is_alone,
                    });
                    continue;
                }
                // Only whether the call ran alone matters here: its
                // exposed part is then the whole call.
                let mut call = CollObs::unmeasured(sp);
                call.exposed = if is_alone { call.duration } else { -1 };
                seqs.add(&WindowCalls {
                    trace: r,
                    rank: r.rank(),
                    step: u32::MAX,
                    steady: true,
                    bwd_start: i64::MIN,
                    calls: &[call],
                });
            }
        }
    }
    out.extend(seqs.finish().with_last().map(|(_, last)| FitPoint {
        bytes: last.bytes,
        op: last.op,
        transport: last.transport,
        time_ns: last.duration as f64,
        alone: last.alone,
    }));
    out
}

/// How many calls of one size make it count for a latency-and-bandwidth
/// line fitted to the calls that ran alone.
const MIN_CALLS_PER_SIZE: usize = 3;

/// How many sizes (`x` of `obs`) have at least `min` observations.
fn sizes_seen(obs: &[(f64, f64)], min: usize) -> usize {
    let mut xs: Vec<f64> = obs.iter().map(|o| o.0).collect();
    xs.sort_unstable_by(f64::total_cmp);
    xs.chunk_by(|a, b| a == b)
        .filter(|run| run.len() >= min)
        .count()
}

fn sym_name(run: &Run, s: Option<Sym>) -> String {
    s.map_or("unknown", |s| run.str(s)).to_owned()
}

/// Fits one cost model per transport; `bucket_op`/`bucket_transport` say
/// which operation the buckets use, to fit that one where possible.
fn fit_all(
    run: &Run,
    points: &[FitPoint],
    bucket_op: Option<Sym>,
    bucket_transport: Option<Option<Sym>>,
    errors: &mut Vec<String>,
) -> (Vec<CostFit>, Option<usize>) {
    let n = run.world_size;
    let by_transport = Groups::by(points.len(), |i| {
        Some(points[i].transport.map_or(0, |s| s.index() as u64 + 1))
    });
    let mut fits = Vec::new();
    let mut used = None;
    for (_, items) in by_transport.iter() {
        let transport = points[items[0] as usize].transport;
        let carries_buckets = bucket_transport == Some(transport);
        // The op to fit: the buckets' op here, else the most frequent one.
        let op = if carries_buckets && bucket_op.is_some() {
            bucket_op
        } else {
            let g = Groups::by(items.len(), |j| {
                Some(
                    points[items[j] as usize]
                        .op
                        .map_or(0, |s| s.index() as u64 + 1),
                )
            });
            g.iter()
                .max_by_key(|(_, v)| v.len())
                .and_then(|(_, v)| points[items[v[0] as usize] as usize].op)
        };
        let op_name = sym_name(run, op);
        let x = |p: &FitPoint| p.bytes as f64 * bus_factor(&sym_name(run, p.op), n);
        // The op's calls, else every op's (`mixed`); all calls, else only
        // those that ran with no compute of their rank (`alone_only`).
        let obs_of = |alone_only: bool, mixed: bool| -> Vec<(f64, f64)> {
            items
                .iter()
                .map(|&i| &points[i as usize])
                .filter(|p| !alone_only || p.alone)
                .filter(|p| mixed || p.op == op)
                .map(|p| (x(p), p.time_ns))
                .collect()
        };
        let mut result = fit_latency_bandwidth(&obs_of(false, false));
        let mut mixed = false;
        if result.is_err() {
            if let Ok(f) = fit_latency_bandwidth(&obs_of(false, true)) {
                (result, mixed) = (Ok(f), true);
            }
        }
        let (mut compute_free, mut latency_unmeasured) = (false, false);
        if result == Err(FitError::NoBandwidth) {
            // The times fall with size: the calls that ran alone then. A
            // line needs two sizes seen several times each (a single
            // warm-up call fixes nothing); with one, only the bandwidth can
            // be told.
            for m in [false, true] {
                let obs = obs_of(true, m);
                let fit = match sizes_seen(&obs, MIN_CALLS_PER_SIZE) {
                    0 => continue,
                    1 => fit_bandwidth(&obs).map(|f| (f, true)),
                    _ => fit_latency_bandwidth(&obs).map(|f| (f, false)),
                };
                if let Ok((f, unmeasured)) = fit {
                    (result, mixed) = (Ok(f), m);
                    (compute_free, latency_unmeasured) = (true, unmeasured);
                    break;
                }
            }
        }
        match result {
            Ok(fit) => {
                if carries_buckets {
                    used = Some(fits.len());
                }
                fits.push(CostFit {
                    transport: sym_name(run, transport),
                    bus_factor: bus_factor(&op_name, n),
                    op: op_name,
                    mixed_ops: mixed,
                    fit,
                    assumed: false,
                    compute_free,
                    latency_unmeasured,
                });
            }
            Err(e) => {
                if carries_buckets {
                    errors.push(format!(
                        "no cost model for the buckets' {} over {}: {e}",
                        op_name,
                        sym_name(run, transport)
                    ));
                }
            }
        }
    }
    (fits, used)
}

/// The value with the largest total weight (ties: the first seen).
fn most_common<T: Copy + PartialEq>(items: impl Iterator<Item = (T, u64)>) -> Option<T> {
    let mut counts: Vec<(T, u64)> = Vec::new();
    for (v, w) in items {
        match counts.iter_mut().find(|(k, _)| *k == v) {
            Some((_, c)) => *c += w,
            None => counts.push((v, w)),
        }
    }
    let best = counts.iter().map(|(_, c)| *c).max()?;
    counts.into_iter().find(|(_, c)| *c == best).map(|(k, _)| k)
}

/// A collective's operation and transport.
type OpTransport = (Option<Sym>, Option<Sym>);

/// Computes the bucket-size advice (see the module documentation). When
/// the trace lacks what the advice needs, [`Advice::missing`] says what,
/// and there is no recommendation. Never panics.
pub fn advise(run: &Run, opts: &AdviceOptions) -> Advice {
    let mut advice = Advice {
        run_id: run.run_id.clone(),
        missing: Vec::new(),
        notes: Vec::new(),
        current: None,
        fits: Vec::new(),
        fit_used: None,
        observed: None,
        recorded: None,
        candidates: Vec::new(),
        recommendation: None,
    };
    if run.ranks.is_empty() {
        advice.missing.push("the run has no rank traces".to_owned());
        return advice;
    }
    // The operation and transport of the steady bucket collectives.
    let mut bucket_calls: Vec<(OpTransport, u64)> = Vec::new();
    // The calls that ran with no compute of their rank, warm-up included
    // (for the cost model).
    let mut alone: Vec<usize> = Vec::new();
    let scans = scan_run(run, &opts.summary, &mut |w| {
        alone.extend(
            w.calls
                .iter()
                .filter(|c| c.exposed >= c.duration)
                .map(|c| span_addr(c.span)),
        );
        if !w.steady {
            return;
        }
        for c in w.calls.iter().filter(|c| c.span.bucket().is_some()) {
            let key = (c.span.op(), w.transport(c));
            match bucket_calls.iter_mut().find(|(k, _)| *k == key) {
                Some((_, n)) => *n += 1,
                None => bucket_calls.push((key, 1)),
            }
        }
    });

    // Steady steps.
    let steady: Vec<&super::StepBreakdown> = scans
        .ranks
        .iter()
        .flat_map(|r| r.steps.iter())
        .filter(|s| s.warmup.is_none())
        .collect();
    if steady.is_empty() {
        advice.missing.push(
            "no steady steps: the trace needs `step` spans beyond the first iteration and the bucket rebuild"
                .to_owned(),
        );
    }
    // Per step, the rank whose backward ends last: every all-reduce waits
    // for it, so its ready times and its tail are what bucket sizes change.
    let critical: Vec<&super::StepBreakdown> = {
        let mut v: Vec<&super::StepBreakdown> = steady
            .iter()
            .filter(|s| s.step.is_some())
            .copied()
            .collect();
        v.sort_by_key(|s| {
            (
                s.step,
                std::cmp::Reverse(s.backward_end_ns.unwrap_or(i64::MIN)),
                s.rank,
            )
        });
        v.dedup_by_key(|s| s.step);
        v.extend(steady.iter().filter(|s| s.step.is_none()));
        v
    };
    let mut v: Vec<f64> = critical.iter().map(|s| s.backward_ns as f64).collect();
    let backward_ns = median(&mut v);
    if !steady.is_empty() && backward_ns <= 0.0 {
        advice
            .missing
            .push("no `backward` spans in the steady steps".to_owned());
    }

    // The configuration and the parameter table (rank 0 first).
    let ddp_rank = run
        .ranks
        .iter()
        .find(|r| r.header.ddp.as_ref().is_some_and(|d| !d.params.is_empty()))
        .or_else(|| run.ranks.iter().find(|r| r.header.ddp.is_some()));
    let ddp = ddp_rank.and_then(|r| r.header.ddp.as_ref());
    // The parameters' device, part of PyTorch's bucket key.
    let device = match ddp_rank {
        Some(r) if ddp.is_some_and(|d| d.backend == crate::trace::transport::NCCL) => {
            DeviceKey::cuda(i8::try_from(r.header.local_rank).unwrap_or(i8::MAX))
        }
        _ => DeviceKey::CPU,
    };
    let mut table: Vec<ParamInfo> = ddp.map(|d| d.params.clone()).unwrap_or_default();
    // Parameter indices are positions in the parameter list; entries whose
    // index is far beyond the table's length are malformed (and would make
    // the per-index arrays huge).
    let limit = 4 * table.len() as u64 + 1024;
    let before = table.len();
    table.retain(|p| u64::from(p.index) < limit);
    if table.len() < before {
        advice.notes.push(format!(
            "{} parameter table entries with an index far beyond the table's length were ignored",
            before - table.len()
        ));
    }
    if table.is_empty() {
        advice.missing.push(
            "the header has no parameter table (`ddp.params`: each parameter's index, size and dtype), so buckets cannot be re-assigned"
                .to_owned(),
        );
    }
    let cap_mb = ddp.and_then(|d| d.bucket_cap_mb).filter(|c| *c > 0.0);
    let first = ddp.and_then(|d| d.first_bucket_bytes).filter(|f| *f > 0);
    let cur_cap_mb = cap_mb.unwrap_or(DEFAULT_BUCKET_CAP_MB);
    let cur_first = first.unwrap_or(DEFAULT_FIRST_BUCKET_BYTES);
    if cap_mb.is_none() {
        advice.notes.push(format!(
            "the header does not give bucket_cap_mb; PyTorch's default of {DEFAULT_BUCKET_CAP_MB} MiB is assumed"
        ));
    }
    if first.is_none() {
        advice.notes.push(
            "the header does not give first_bucket_bytes; PyTorch's default of 1 MiB is assumed"
                .to_owned(),
        );
    }

    // Per-parameter ready offsets: the critical ranks' grad_ready records,
    // else every steady step's.
    let any_grad_ready = run.ranks.iter().any(|r| !r.grad_ready.is_empty());
    let record_of = |rank: u32, step: u64| {
        let r = run.rank(rank)?;
        let i = r.grad_ready.partition_point(|g| g.step < step);
        r.grad_ready.get(i).filter(|g| g.step == step)
    };
    let mut records: Vec<&[i64]> = critical
        .iter()
        .filter_map(|s| record_of(s.rank, s.step?))
        .map(|g| &*g.offsets_ns)
        .collect();
    if records.is_empty() {
        records = steady
            .iter()
            .filter_map(|s| record_of(s.rank, s.step?))
            .map(|g| &*g.offsets_ns)
            .collect();
    }
    if records.is_empty() {
        advice.missing.push(if any_grad_ready {
            "the `grad_ready` records (per-parameter gradient-ready times) cover only warm-up steps".to_owned()
        } else {
            "the trace has no `grad_ready` records (per-parameter gradient-ready times after backward start)".to_owned()
        });
    }
    let stride = records.len().div_ceil(opts.max_ready_samples.max(1)).max(1);
    let sampled: Vec<&[i64]> = records.iter().step_by(stride).copied().collect();
    let nparams = table
        .iter()
        .map(|p| p.index as usize + 1)
        .max()
        .unwrap_or(0);
    let mut ready: Vec<Option<f64>> = vec![None; nparams];
    let mut scratch = Vec::with_capacity(sampled.len());
    for (p, slot) in ready.iter_mut().enumerate() {
        scratch.clear();
        scratch.extend(
            sampled
                .iter()
                .filter_map(|rec| rec.get(p).copied())
                .filter(|&o| o >= 0)
                .map(|o| o as f64),
        );
        if !scratch.is_empty() {
            *slot = Some(median(&mut scratch));
        }
    }
    let params_ready = table
        .iter()
        .filter(|p| ready.get(p.index as usize).copied().flatten().is_some())
        .count();
    if !records.is_empty() && !table.is_empty() && params_ready == 0 {
        advice.missing.push(
            "the `grad_ready` records give no ready time for any parameter of the table".to_owned(),
        );
    }
    let never = table.len().saturating_sub(params_ready);
    if never > 0 && params_ready > 0 {
        advice.notes.push(format!(
            "{never} parameters never got a gradient in the sampled steps; they are left out of the replayed buckets"
        ));
    }

    // Cost model.
    let bucket_op = most_common(bucket_calls.iter().map(|(k, n)| (k.0, *n))).flatten();
    let bucket_transport = most_common(bucket_calls.iter().map(|(k, n)| (k.1, *n)));
    if bucket_calls.is_empty() && !steady.is_empty() {
        advice.notes.push(
            "no bucket collectives in the steady steps; the model assumes all_reduce".to_owned(),
        );
    }
    alone.sort_unstable();
    let points = fit_points(run, &alone);
    let mut fit_errors = Vec::new();
    let bucket_op = bucket_op.or_else(|| run.strings.lookup(crate::trace::op::ALL_REDUCE));
    let bucket_transport = bucket_transport.or_else(|| {
        // Without bucket collectives: the transport of the most all-reduces.
        most_common(
            points
                .iter()
                .filter(|p| p.op == bucket_op)
                .map(|p| (p.transport, 1)),
        )
    });
    let (mut fits, mut used) = fit_all(run, &points, bucket_op, bucket_transport, &mut fit_errors);
    if let Some(a) = opts.assumed_cost {
        let op = sym_name(run, bucket_op);
        fits.push(CostFit {
            transport: sym_name(run, bucket_transport.flatten()),
            bus_factor: bus_factor(&op, run.world_size),
            op,
            mixed_ops: false,
            fit: LinearFit::assumed(a.latency_ns, a.busbw_bytes_per_s),
            assumed: true,
            compute_free: false,
            latency_unmeasured: false,
        });
        used = Some(fits.len() - 1);
        fit_errors.clear();
    }
    advice.fits = fits;
    advice.fit_used = used;
    if used.is_none() {
        if fit_errors.is_empty() {
            // The buckets' operation when the trace names one ("no unknown
            // with a byte count" read as nonsense).
            let what = bucket_op.map_or_else(|| "collective".to_owned(), |s| run.str(s).to_owned());
            advice.missing.push(format!(
                "no {what} with a byte count was recorded to fit a communication cost model to"
            ));
        } else {
            advice.missing.append(&mut fit_errors);
            advice.missing.push(
                "to get advice anyway, state the network's cost: ddp-probe advise --latency 50us --bandwidth 10GB/s (bus bandwidth, as nccl-tests reports it)".to_owned(),
            );
        }
    }

    // The recorded layout of the steady steps.
    let first_steady = steady.iter().filter_map(|s| s.step).min();
    let recorded_layout: Option<Vec<Vec<u32>>> = run
        .ranks
        .iter()
        .find_map(|r| match first_steady {
            Some(s) => r.layout_at(s),
            None => r.layouts.last(),
        })
        .map(|l| {
            let mut b = l.buckets.clone();
            b.sort_by_key(|b| b.id);
            b.into_iter().map(|b| b.params).collect()
        })
        .filter(|l: &Vec<Vec<u32>>| !l.is_empty());

    let mut specs: Vec<ParamSpec<'_>> = vec![
        ParamSpec {
            bytes: 0,
            dtype: ""
        };
        nparams
    ];
    for p in &table {
        specs[p.index as usize] = ParamSpec {
            bytes: p.bytes,
            dtype: &p.dtype,
        };
    }
    // Ready order; ties: the later-registered parameter first.
    let mut order: Vec<u32> = table
        .iter()
        .map(|p| p.index)
        .filter(|&i| ready[i as usize].is_some())
        .collect();
    order.sort_unstable();
    order.dedup();
    order.sort_by(|&a, &b| {
        let ra = ready[a as usize].unwrap_or(f64::INFINITY);
        let rb = ready[b as usize].unwrap_or(f64::INFINITY);
        ra.total_cmp(&rb).then(b.cmp(&a))
    });
    let cap_bytes = |mb: f64| (mb * MIB) as u64;
    let replay_current = assign_buckets(
        &specs,
        &order,
        &rebuild_limits(cap_bytes(cur_cap_mb), cur_first),
        device,
    );
    advice.current = Some(CurrentSetting {
        bucket_cap_mb: cur_cap_mb,
        cap_from_trace: cap_mb.is_some(),
        first_bucket_bytes: cur_first,
        first_from_trace: first.is_some(),
        buckets: recorded_layout.as_ref().map_or(0, Vec::len),
        layout_matches_replay: recorded_layout
            .as_ref()
            .filter(|_| !order.is_empty())
            .map(|l| *l == replay_current),
    });

    let mut vals: Vec<f64> = steady.iter().map(|s| s.step_ns as f64).collect();
    let step_ns = median(&mut vals);
    let step_sigma_ns = robust_sigma(&mut vals);
    let mut tails: Vec<f64> = critical.iter().map(|s| s.comm_tail_ns as f64).collect();
    let mut exposed: Vec<f64> = critical.iter().map(|s| s.comm_exposed_ns as f64).collect();
    advice.observed = (!steady.is_empty()).then(|| Observed {
        steps: critical.len() as u64,
        step_ns,
        step_sigma_ns,
        backward_ns,
        comm_tail_ns: median(&mut tails),
        comm_exposed_ns: median(&mut exposed),
        params_ready,
        params_never_ready: never,
        ready_records: sampled.len(),
    });

    if !advice.missing.is_empty() {
        return advice;
    }
    let (Some(fit_idx), Some(obs)) = (advice.fit_used, advice.observed.clone()) else {
        return advice;
    };
    let fit = advice.fits[fit_idx].clone();
    let cost = |bytes: u64| fit.predict_ns(bytes);
    let simulate = |layout: &[Vec<u32>]| {
        let inputs = bucket_inputs(layout, &specs, &ready, obs.backward_ns);
        let sched = simulate_schedule(&inputs, obs.backward_ns, cost);
        let largest = inputs.iter().map(|b| b.0).max().unwrap_or(0);
        (sched, layout.len(), largest)
    };

    // Baseline: the recorded layout, else the replayed current setting.
    let (base_layout, base_is_recorded) = match &recorded_layout {
        Some(l) => (l.clone(), true),
        None => {
            advice.notes.push(
                "the trace has no bucket layout; the replayed current setting is the baseline"
                    .to_owned(),
            );
            (replay_current.clone(), false)
        }
    };
    let (base, base_n, base_largest) = simulate(&base_layout);
    let make = |cap: f64, first: u64, recorded: bool, s: Schedule, n: usize, largest: u64| {
        let predicted = obs.step_ns + s.tail_ns - base.tail_ns;
        Candidate {
            cap_mb: cap,
            first_bucket_bytes: first,
            recorded_layout: recorded,
            is_current: cap == cur_cap_mb && first == cur_first,
            buckets: n,
            largest_bucket_bytes: largest,
            comm_end_ns: s.comm_end_ns,
            tail_ns: s.tail_ns,
            exposed_ns: s.exposed_ns,
            predicted_step_ns: predicted,
            delta_ns: predicted - obs.step_ns,
        }
    };
    advice.recorded = Some(make(
        cur_cap_mb,
        cur_first,
        base_is_recorded,
        base,
        base_n,
        base_largest,
    ));

    let mut caps: Vec<f64> = opts
        .candidate_caps_mib
        .iter()
        .copied()
        .filter(|c| c.is_finite() && *c > 0.0)
        .collect();
    caps.push(cur_cap_mb);
    caps.sort_by(f64::total_cmp);
    caps.dedup();
    for &cap in &caps {
        let cb = cap_bytes(cap);
        let mut firsts = vec![DEFAULT_FIRST_BUCKET_BYTES, cb];
        if cap == cur_cap_mb {
            firsts.push(cur_first);
        }
        firsts.sort_unstable();
        firsts.dedup();
        for f in firsts {
            let layout = assign_buckets(&specs, &order, &rebuild_limits(cb, f), device);
            let (s, n, largest) = simulate(&layout);
            advice.candidates.push(make(cap, f, false, s, n, largest));
        }
    }

    // Best: the lowest predicted step; candidates within
    // `TIE_FRACTION` of the step of it are equally good, and among those
    // the smallest change wins: the current setting, else the cap closest
    // to the current one (by ratio), else the current first-bucket choice.
    let lowest = advice
        .candidates
        .iter()
        .map(|c| c.predicted_step_ns)
        .fold(f64::INFINITY, f64::min);
    let tie = (TIE_FRACTION * obs.step_ns).max(1e3);
    let distance = |c: &Candidate| (c.cap_mb / cur_cap_mb).ln().abs();
    let best = advice
        .candidates
        .iter()
        .filter(|c| c.predicted_step_ns <= lowest + tie)
        .min_by(|a, b| {
            b.is_current
                .cmp(&a.is_current)
                .then(distance(a).total_cmp(&distance(b)))
                .then((b.first_bucket_bytes == cur_first).cmp(&(a.first_bucket_bytes == cur_first)))
                .then(a.predicted_step_ns.total_cmp(&b.predicted_step_ns))
        })
        .cloned();
    let Some(best) = best else {
        return advice;
    };
    let gain = (obs.step_ns - best.predicted_step_ns).max(0.0);
    let rel = fit.fit.rel_rmse;
    let model_err =
        rel * (base.tail_ns + best.tail_ns) + 0.5 * (base.tail_ns - obs.comm_tail_ns).abs();
    let threshold = (0.01 * obs.step_ns)
        .max(0.5 * obs.step_sigma_ns)
        .max(model_err);
    let worth = !best.is_current && gain > threshold;
    let confidence = if !worth {
        Confidence::Low
    } else if gain >= 3.0 * threshold && rel <= 0.10 && !fit.assumed && !fit.latency_unmeasured {
        Confidence::High
    } else {
        Confidence::Medium
    };
    let explanation = explain(
        &advice, &fit, &obs, &base, &best, gain, threshold, worth, confidence,
    );
    advice.recommendation = Some(Recommendation {
        cap_mb: best.cap_mb,
        first_bucket_bytes: best.first_bucket_bytes,
        is_current: best.is_current,
        gain_ns: gain,
        gain_frac: if obs.step_ns > 0.0 {
            gain / obs.step_ns
        } else {
            0.0
        },
        threshold_ns: threshold,
        worth_changing: worth,
        confidence,
        explanation,
    });
    advice
}

fn first_words(first: u64, cap_mb: f64) -> String {
    if first as f64 == (cap_mb * MIB).floor() {
        "first bucket the same size".to_owned()
    } else {
        format!("first bucket {}", render::bytes(first as f64))
    }
}

#[allow(clippy::too_many_arguments)]
fn explain(
    advice: &Advice,
    fit: &CostFit,
    obs: &Observed,
    base: &Schedule,
    best: &Candidate,
    gain: f64,
    threshold: f64,
    worth: bool,
    confidence: Confidence,
) -> Vec<String> {
    let mut out = Vec::new();
    let cur = advice.current.as_ref();
    let cur_cap = cur.map_or(DEFAULT_BUCKET_CAP_MB, |c| c.bucket_cap_mb);
    out.push(format!(
        "With bucket_cap_mb={} the last bucket's {} ends {} after backward ends (median over {} steps, on the rank every step waits for; the model gives {}), and {} of communication per step is exposed.",
        mib(cur_cap),
        fit.op,
        render::ns(obs.comm_tail_ns),
        obs.steps,
        render::ns(base.tail_ns),
        render::ns(obs.comm_exposed_ns),
    ));
    let cap_bytes = (cur_cap * MIB) as u64;
    out.push(format!(
        "Cost model for {} over {}: {}{} per call plus {}size at {} bus bandwidth ({}); a {} MiB bucket takes {}.",
        fit.op,
        fit.transport,
        render::ns(fit.fit.latency_ns),
        if fit.fit.latency_clamped { " (clamped)" } else { "" },
        if (fit.bus_factor - 1.0).abs() > 1e-9 {
            format!("{:.2} × ", fit.bus_factor)
        } else {
            String::new()
        },
        render::rate(fit.busbw_bytes_per_s()),
        if fit.assumed {
            "as stated with --latency and --bandwidth, not fitted".to_owned()
        } else {
            format!(
                "fitted to {} sizes, residual {}{}",
                fit.fit.sizes,
                render::pct(fit.fit.rel_rmse),
                if fit.compute_free {
                    format!(
                        ", from the {} collectives that ran while their rank computed nothing: with all of them the time does not grow with size, because the ones that overlapped compute were slowed by it, both competing for the same cores or GPU",
                        fit.fit.calls,
                    )
                } else {
                    String::new()
                }
            )
        },
        mib(cur_cap),
        render::ns(fit.predict_ns(cap_bytes)),
    ));
    if fit.latency_unmeasured {
        out.push(format!(
            "The latency is taken as 0: the collectives that ran alone have too few sizes to tell a per-call latency from the bandwidth, and without one smaller buckets look cheaper than they are. To be sure, state both, e.g. ddp-probe advise --latency 50us --bandwidth {:.2}GB/s.",
            fit.busbw_bytes_per_s() / 1e9
        ));
    }
    let step_after = obs.step_ns - gain;
    if worth {
        out.push(format!(
            "With bucket_cap_mb={} ({}) the tail drops to {}: step {} ({}), from {} to {}.",
            mib(best.cap_mb),
            first_words(best.first_bucket_bytes, best.cap_mb),
            render::ns(best.tail_ns),
            render::signed_ns(-gain),
            format_args!("−{}", render::pct(gain / obs.step_ns.max(1.0))),
            render::ns(obs.step_ns),
            render::ns(step_after),
        ));
        let why = if best.cap_mb > cur_cap {
            "fewer, larger all-reduces pay the per-call latency less often"
        } else {
            "smaller buckets start reducing earlier during backward, so less is left after it ends"
        };
        out.push(format!(
            "Why: {why}. Confidence: {} (gain {} against a noise threshold of {}).",
            match confidence {
                Confidence::High => "high",
                Confidence::Medium => "medium",
                Confidence::Low => "low",
            },
            render::ns(gain),
            render::ns(threshold)
        ));
        let mut how = format!(
            "To try it: DistributedDataParallel(model, bucket_cap_mb={})",
            mib(best.cap_mb)
        );
        let cap_bytes = (best.cap_mb * MIB) as u64;
        if best.first_bucket_bytes == cap_bytes && cap_bytes != DEFAULT_FIRST_BUCKET_BYTES {
            how.push_str(
                "; for a first bucket of the same size set torch.distributed._DEFAULT_FIRST_BUCKET_BYTES before constructing DDP (recent PyTorch versions do this themselves when bucket_cap_mb is passed explicitly)",
            );
        }
        how.push('.');
        out.push(how);
    } else if best.is_current || gain <= 0.0 {
        out.push(format!(
            "Not worth changing: no candidate is predicted to beat the current setting (the best, bucket_cap_mb={} with {}, gives {}).",
            mib(best.cap_mb),
            first_words(best.first_bucket_bytes, best.cap_mb),
            render::ns(best.predicted_step_ns)
        ));
    } else {
        out.push(format!(
            "Not worth changing: the best candidate, bucket_cap_mb={} ({}), is predicted to save {} ({}), within the noise threshold of {}.",
            mib(best.cap_mb),
            first_words(best.first_bucket_bytes, best.cap_mb),
            render::ns(gain),
            render::pct(gain / obs.step_ns.max(1.0)),
            render::ns(threshold)
        ));
    }
    out
}

impl Advice {
    /// A compact report for a terminal `width` columns wide.
    pub fn render_text(&self, width: usize) -> String {
        let width = width.max(40);
        let mut out = String::new();
        let _ = writeln!(out, "bucket_cap_mb advice for run {}", self.run_id);
        if !self.missing.is_empty() {
            render::wrap(
                &mut out,
                "No advice: the trace lacks what it needs.",
                width,
                "",
            );
            for m in &self.missing {
                render::wrap(&mut out, &format!("- {m}"), width, "  ");
            }
        }
        if let Some(r) = &self.recommendation {
            out.push('\n');
            for p in &r.explanation {
                render::wrap(&mut out, p, width, "");
            }
        }
        if !self.candidates.is_empty() {
            out.push('\n');
            let _ = writeln!(out, "candidates (predicted; times after backward start):");
            let mut tb = Table::new(vec![
                text("cap", 0),
                text("first", 2),
                num("buckets", 3),
                num("last end", 4),
                num("tail", 0),
                num("exposed", 1),
                num("step", 0),
                num("Δ", 0),
            ]);
            let rec = self.recorded.iter();
            for c in rec.chain(self.candidates.iter()) {
                let mark = if c.recorded_layout {
                    " (recorded)"
                } else if c.is_current {
                    " (current)"
                } else {
                    ""
                };
                let best = self.recommendation.as_ref().is_some_and(|r| {
                    !c.recorded_layout
                        && r.cap_mb == c.cap_mb
                        && r.first_bucket_bytes == c.first_bucket_bytes
                });
                tb.row(vec![
                    format!(
                        "{} MiB{mark}{}",
                        mib(c.cap_mb),
                        if best { " *" } else { "" }
                    ),
                    render::bytes(c.first_bucket_bytes as f64),
                    c.buckets.to_string(),
                    render::ns(c.comm_end_ns),
                    render::ns(c.tail_ns),
                    render::ns(c.exposed_ns),
                    render::ns(c.predicted_step_ns),
                    render::signed_ns(c.delta_ns),
                ]);
            }
            tb.render(&mut out, width, "  ");
        }
        if !self.fits.is_empty() {
            out.push('\n');
            let _ = writeln!(
                out,
                "communication cost models (time = latency + bus bytes / busbw):"
            );
            let mut tb = Table::new(vec![
                text("transport", 0),
                text("op", 0),
                num("latency", 0),
                num("busbw", 0),
                num("sizes", 2),
                num("calls", 3),
                num("residual", 1),
                num("r²", 4),
            ]);
            for (i, f) in self.fits.iter().enumerate() {
                let used = if self.fit_used == Some(i) { " *" } else { "" };
                tb.row(vec![
                    format!("{}{used}", f.transport),
                    f.op_label(),
                    render::ns(f.fit.latency_ns),
                    render::rate(f.busbw_bytes_per_s()),
                    f.fit.sizes.to_string(),
                    f.fit.calls.to_string(),
                    render::pct(f.fit.rel_rmse),
                    format!("{:.3}", f.fit.r2),
                ]);
            }
            tb.render(&mut out, width, "  ");
        }
        if let Some(c) = &self.current {
            if c.layout_matches_replay == Some(false) {
                render::wrap(
                    &mut out,
                    "note: replaying PyTorch's assignment with the current setting does not give the recorded layout (different ready order, or the DDP implementation buckets differently); predictions compare against the recorded layout.",
                    width,
                    "",
                );
            }
        }
        for n in &self.notes {
            render::wrap(&mut out, &format!("note: {n}"), width, "");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_serializes_in_order() {
        // Ready at 1, 2, 10 ms; 1.5 ms each; backward ends at 10 ms.
        let b = [(1u64, 1e6), (1, 2e6), (1, 10e6)];
        let s = simulate_schedule(&b, 10e6, |_| 1.5e6);
        // 1→2.5, 2.5→4, 10→11.5.
        assert_eq!(s.comm_end_ns, 11.5e6);
        assert_eq!(s.tail_ns, 1.5e6);
        assert_eq!(s.exposed_ns, 1.5e6);
        // A queue that runs past backward end.
        let s = simulate_schedule(&[(1, 0.0), (1, 0.0)], 1e6, |_| 1e6);
        assert_eq!((s.comm_end_ns, s.tail_ns, s.exposed_ns), (2e6, 1e6, 1e6));
        let s = simulate_schedule(&[], 1e6, |_| 1.0);
        assert_eq!((s.comm_end_ns, s.tail_ns), (0.0, 0.0));
    }

    #[test]
    fn inputs_take_the_latest_ready_param() {
        let p = [
            ParamSpec {
                bytes: 10,
                dtype: "f",
            },
            ParamSpec {
                bytes: 5,
                dtype: "f",
            },
        ];
        let ready = [Some(3.0), None];
        assert_eq!(
            bucket_inputs(&[vec![0, 1], vec![1]], &p, &ready, 9.0),
            vec![(15, 3.0), (5, 9.0)]
        );
    }
}
