//! Compute and communication slowing each other down, and DDP's overlapped schedule with it.
//!
//! When a bucket's all-reduce runs during backward, both compete for the same cores (or the
//! GPU): backward takes longer and so does the collective. A schedule that assumes neither is
//! affected (dPRO's mistake, measured at 14 % average error by the Lumos authors) over-rates
//! small buckets, which overlap more. Here compute is slowed by a constant factor while a
//! collective runs, as Echo does, and a collective takes a constant time more than alone while
//! its rank computes, and at least a floor (each of its steps waits to be scheduled):
//!
//! * **Measured** by the start-up calibration ([`crate::trace::calibration`]): a compute loop
//!   alone, while one swept-size all-reduce runs, and while a chain of small ones runs.
//!   [`calibration_factors`] reads compute's factor from them, the median over rounds and
//!   ranks; [`fit_comm_overlap`] the collectives' extra time and floor from the run's own calls
//!   that ran during backward and the probe's small calls.
//! * **Replayed** by [`simulate_interfered`]: gradients become ready in *pure* compute time
//!   (backward as it would run with no collective); while a collective is in flight, backward
//!   progresses at `1 / compute` of its speed and the collective at `1 /`
//!   [`Interference::comm_slowdown`] of its own.
//! * **Recorded ready times** already contain the recorded layout's slowdown:
//!   [`replay_recorded`] replays the recorded layout in recorded time and [`pure_time`] removes
//!   it, so a candidate layout is simulated from the backward as it would run alone.
//!
//! With no interference the schedule is the plain one: each side at full speed.

use serde::{Deserialize, Serialize};

use super::stats::median;
use crate::model::{Run, Span, Sym};
use crate::trace::{calibration, SpanKind};

/// Compute and communication slowing each other down while they overlap.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Interference {
    /// How much longer compute takes while a collective runs.
    pub compute: f64,
    /// Time (ns) a collective takes beyond its time alone while its rank computes.
    #[serde(default)]
    pub comm_extra_ns: f64,
    /// The least time (ns) a collective takes while its rank computes, whatever its size.
    /// Together with `comm_extra_ns`: a call of `c` ns alone takes `max(c + extra, floor)`
    /// (see [`fit_comm_overlap`], [`Interference::comm_slowdown`]).
    #[serde(default)]
    pub comm_floor_ns: f64,
    /// The run's bucket calls that ran entirely during compute, which the two were fitted on.
    #[serde(default)]
    pub comm_calls: usize,
    /// The start-up probe's small calls that ran inside its compute, which the floor was
    /// fitted on besides.
    #[serde(default)]
    pub comm_probe_calls: usize,
    /// Compute time each collective costs the rank when it starts during compute, beyond the
    /// `compute` factor (ns): thread wake-ups and system calls, which many small buckets pay
    /// many times. From the probe's chain of small calls.
    #[serde(default)]
    pub per_call_ns: f64,
    /// Whether `compute` and `per_call_ns` were measured (by the start-up probe); without the
    /// probe in the trace they are taken as 1× and 0.
    #[serde(default)]
    pub compute_measured: bool,
    /// The probe's own reading of `compute` before the bound [`MAX_COMPUTE_FACTOR`] (0 when
    /// not measured).
    #[serde(default)]
    pub compute_probe: f64,
    /// The probe's big call's slowdown beside its compute loop (0 when not measured). Only
    /// reported: see [`fit_comm_overlap`].
    #[serde(default)]
    pub comm_probe: f64,
}

impl Interference {
    /// No interference.
    pub const NONE: Interference = Interference {
        compute: 1.0,
        comm_extra_ns: 0.0,
        comm_floor_ns: 0.0,
        comm_calls: 0,
        comm_probe_calls: 0,
        per_call_ns: 0.0,
        compute_measured: false,
        compute_probe: 0.0,
        comm_probe: 0.0,
    };

    /// How much longer than alone a collective that takes `alone_ns` alone takes while its
    /// rank computes: `max(alone + extra, floor) / alone`, within `1..=MAX_FACTOR`.
    pub fn comm_slowdown(&self, alone_ns: f64) -> f64 {
        if alone_ns <= 0.0 {
            return 1.0;
        }
        let with = (alone_ns + self.comm_extra_ns.max(0.0)).max(self.comm_floor_ns);
        (with / alone_ns).clamp(1.0, MAX_FACTOR)
    }
}

/// What the collectives' calls that ran entirely during compute say of their slowdown:
/// `extra_ns` more than alone, and at least `floor_ns` (see [`fit_comm_overlap`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CommOverlap {
    /// Time a call takes beyond its time alone (ns).
    pub extra_ns: f64,
    /// The least time a call takes (ns).
    pub floor_ns: f64,
}

/// Fits [`CommOverlap`] to calls that ran entirely during compute, each `(time, alone)` in
/// ns: a call takes `max(alone + extra, floor)`. `run_calls` are the run's own bucket calls
/// (each timed from its last rank's start to its last rank's end: a chain of calls advances by
/// that), `probe_calls` the start-up probe's small calls that ran inside its compute loop. The
/// floor comes from both, the extra from the run's calls only, and only when there are
/// `min_run_calls` of them. The fit minimises the summed |log| error (the calls of a step
/// disturbed by something else do not carry it); each is a calls' time or a quantile of them
/// (the optimum of such a fit lies at one); none is kept where none fits better than 0.
///
/// Why this shape, measured with `bench/whatif` (two kept sweeps of 2026-12-04, 80 traces of
/// 2 and 4 nodes at 1 Gbit/s and 400 Mbit/s, each predicting the others' steps):
/// * On the 4-node 1 Gbit/s shape (two nodes to a core), a 0.25 MiB run's 265 KB all-reduces
///   took 12 ms (median) during backward against 3.3 ms after it, its 789 KB ones 12.9 against
///   9.9, its 1 MB ones 15.8 against 13.1, and the 2 MiB run's 2 MB ones 27 against 26: a
///   floor of about 12 ms (six ring steps, each waiting ~2 ms to be scheduled beside a
///   computing rank, whatever it carries) and ~2.7 ms more per call, where one factor cannot
///   hold 3.6× and 1.04× at once. The 4-node 400 Mbit/s shape shows the same floor, the
///   2-node shapes (a core per node) none.
/// * A factor on the time alone (as before, from the same calls' summed times) instead of
///   the extra time: the largest regret of a trace's pick 7.8% against 4.3%; both with the
///   floor, and the mean error 2.1% either way. Without the floor (the factor alone, each
///   call timed on its last rank only, as before): mean 2.4%, largest 10.6%, and the 0.25 MiB
///   runs' replay of their own step 7–9% short, against 0.7–2.2% now.
/// * A squared error instead of the |log| one: mean 2.2% and 3.4% (the two sweeps) against
///   2.1% and 3.3%.
/// * The probe's big call read 1.1–1.6× beside a loop that keeps every core busy, which runs'
///   own calls have not borne out (taking it for one-bucket runs, which have no calls during
///   compute, predicted the small caps up to 19.3% slow); it is not used. Its small calls
///   show the floor lower than backward does (4–8 ms on the 4-node 1 Gbit/s shape), so a
///   run without small calls of its own during compute is still predicted up to ~10% fast
///   for small caps there.
/// * Why the probe reads low, measured on that shape (2026-12-05, single runs): its small
///   calls are 153 KB, which the reference DDP reduces by recursive doubling (two steps at
///   4 ranks) while buckets of 256 KiB and more take the ring (six steps), and only the first
///   call or two of each round's chain runs beside its compute, the rest alone after it. With
///   the compute going on until the chain ended, 153 KB calls took 8 ms (alone 2.4; the waits
///   come in steps of 4 ms, the kernel's tick), and 511 KB ring calls 14–16 ms (alone 6.4),
///   against 11 ms for a backward's 265 KB buckets, 13.5 for its 789 KB and 15 for its 1 MB
///   ones. The second probe made the fit take a 20 ms floor, and a 2 MiB trace then predicted
///   0.25 MiB 14% slow instead of 3–11% fast: a matrix-product loop is not a backward, and
///   neither probe was kept.
pub fn fit_comm_overlap(
    run_calls: &[(f64, f64)],
    probe_calls: &[(f64, f64)],
    min_run_calls: usize,
) -> CommOverlap {
    let usable = |&&(t, c): &&(f64, f64)| t > 0.0 && c > 0.0 && t.is_finite() && c.is_finite();
    let points: Vec<(f64, f64)> = run_calls
        .iter()
        .chain(probe_calls)
        .filter(usable)
        .copied()
        .collect();
    // The loss reads at most MAX_FIT_CALLS of them, each time's log taken once. Beyond that,
    // calls k·P mod n for a prime P: spread over the run without the aliasing of a plain
    // stride (the calls come step by step, bucket by bucket, and a stride that is a multiple
    // of the bucket count would read one bucket only).
    const SPREAD: usize = 2_654_435_761;
    let n = points.len();
    let sample: Vec<(f64, f64)> = if n <= MAX_FIT_CALLS {
        points.iter().map(|&(t, c)| (t.ln(), c)).collect()
    } else {
        (0..MAX_FIT_CALLS)
            .map(|k| points[k.wrapping_mul(SPREAD) % n])
            .map(|(t, c)| (t.ln(), c))
            .collect()
    };
    let loss = |o: CommOverlap| -> f64 {
        sample
            .iter()
            .map(|&(ln_t, c)| (ln_t - (c + o.extra_ns).max(o.floor_ns).ln()).abs())
            .sum()
    };
    let floors = with_zero(quantiles(points.iter().map(|p| p.0).collect(), 40));
    let extras = if run_calls.iter().filter(usable).count() >= min_run_calls {
        with_zero(quantiles(
            run_calls
                .iter()
                .filter(usable)
                .map(|&(t, c)| (t - c).max(0.0))
                .collect(),
            20,
        ))
    } else {
        vec![0.0]
    };
    let mut best = (CommOverlap::default(), loss(CommOverlap::default()));
    for &floor_ns in &floors {
        for &extra_ns in &extras {
            let o = CommOverlap { extra_ns, floor_ns };
            let l = loss(o);
            if l < best.1 * (1.0 - 1e-9) {
                best = (o, l);
            }
        }
    }
    best.0
}

/// The most calls [`fit_comm_overlap`]'s loss reads (a spread of them beyond): it is
/// evaluated for each of up to 41 × 21 candidate pairs, and a long run has many calls during
/// compute (1,000 steps of 25 buckets: 25,000). Measured on synthetic calls (release build):
/// all of 250,000 took 1.2 s, 50,000 took 235 ms; the kept runs of `bench/whatif` have
/// 200–450, all read; 250,000 read this way took 21 ms.
const MAX_FIT_CALLS: usize = 4096;

/// `n` evenly spaced order statistics of `v` (all of it when shorter), ascending, distinct.
fn quantiles(mut v: Vec<f64>, n: usize) -> Vec<f64> {
    v.sort_by(f64::total_cmp);
    let mut q: Vec<f64> = if v.len() <= n {
        v
    } else {
        (0..n).map(|k| v[k * (v.len() - 1) / (n - 1)]).collect()
    };
    q.dedup();
    q
}

/// 0 first, then `v` without any 0 it holds.
fn with_zero(v: Vec<f64>) -> Vec<f64> {
    std::iter::once(0.0)
        .chain(v.into_iter().filter(|&x| x > 0.0))
        .collect()
}

/// The factors are clamped to this range (a probe disturbed by something else must not make
/// the simulation absurd).
pub const MAX_FACTOR: f64 = 10.0;

/// The most compute is slowed while a collective runs, as the probe's reading is taken: the
/// collective is one more thread on the rank's cores (the comm engine's worker, gloo's or
/// NCCL's proxy thread), and the scheduler gives it at most an equal share of a core the
/// compute runs on, so compute keeps at least half its speed. The probe lasts tens of
/// milliseconds, a few scheduler slices, and on a busy machine can read beyond that. Measured
/// with `bench/whatif` on the 2-core VM (2026-12-02): the probe of before (a fixed count of
/// products timed beforehand) read 1.1× to 6.2× over 40 runs, while one constant factor of
/// 1.6× predicted every shape best; bounded at 2×, the predictions' mean error over those runs
/// fell from 5.1 % to 4.4 % and the largest from 23.7 % to 18.4 %. The probe of now (equal
/// work, see `ddp::calibrate`) read 1.4× to 2.5× over 40 runs, and once 3.9×.
pub const MAX_COMPUTE_FACTOR: f64 = 2.0;

/// The calibration probe's spans of one rank's trace, one entry per round, in time order.
#[derive(Default)]
struct Probe {
    compute: Vec<(i64, i64)>,
    compute_overlapped: Vec<(i64, i64)>,
    comm_overlapped: Vec<(i64, i64, u64)>,
    compute_small: Vec<(i64, i64)>,
    /// Every small call, `(start, end, bytes, seq)`.
    small_calls: Vec<(i64, i64, u64, Option<u64>)>,
}

/// The span names of the calibration, looked up once.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CalibrationNames {
    pub sweep: Option<Sym>,
    pub overlapped: Option<Sym>,
    pub overlapped_small: Option<Sym>,
    compute: Option<Sym>,
    compute_overlapped: Option<Sym>,
    compute_overlapped_small: Option<Sym>,
}

impl CalibrationNames {
    pub fn of(run: &Run) -> CalibrationNames {
        CalibrationNames {
            sweep: run.strings.lookup(calibration::SWEEP),
            overlapped: run.strings.lookup(calibration::OVERLAPPED),
            overlapped_small: run.strings.lookup(calibration::OVERLAPPED_SMALL),
            compute: run.strings.lookup(calibration::COMPUTE),
            compute_overlapped: run.strings.lookup(calibration::COMPUTE_OVERLAPPED),
            compute_overlapped_small: run.strings.lookup(calibration::COMPUTE_OVERLAPPED_SMALL),
        }
    }

    /// Whether the span is a call of the calibration's sweep.
    pub fn is_sweep(&self, sp: &Span) -> bool {
        self.is_sweep_name(sp.name())
    }

    /// Whether a span of this name is a call of the calibration's sweep.
    pub fn is_sweep_name(&self, name: Option<Sym>) -> bool {
        name.is_some() && name == self.sweep
    }

    /// Whether the span is one of the probe's collectives, which ran during compute on
    /// purpose (they measure the interference, not the cost).
    pub fn is_probe_call(&self, sp: &Span) -> bool {
        let n = sp.name();
        n.is_some() && (n == self.overlapped || n == self.overlapped_small)
    }
}

/// What the start-up probe measured: the interference factors, the median over the rounds of
/// the ranks that ran it, and its small calls that ran entirely during its compute,
/// `(time, alone)` in ns (for [`fit_comm_floor`]).
pub(crate) struct ProbeReading {
    pub factors: Interference,
    pub small_calls_inside: Vec<(f64, f64)>,
}

/// The start-up probe's reading; `isolated_ns(bytes)` is the cost model's time of an
/// all-reduce that runs alone. `None` without a probe in the trace.
pub(crate) fn calibration_factors(
    run: &Run,
    names: &CalibrationNames,
    isolated_ns: impl Fn(u64) -> f64,
) -> Option<ProbeReading> {
    names.compute_overlapped?;
    let (mut fc, mut fm, mut per_call) = (Vec::new(), Vec::new(), Vec::new());
    // The probe's small calls by sequence number: (last start, last end, bytes, whether the
    // rank that started it last ran it entirely inside its compute, as for the run's calls). A chain of calls advances by each one's
    // last start to last end (see `comm::Seqs::with_last`), not by one rank's duration.
    let mut small_by_seq: std::collections::BTreeMap<u64, (i64, i64, u64, bool)> =
        std::collections::BTreeMap::new();
    let mut small_calls_inside = Vec::new();
    for r in &run.ranks {
        let mut p = Probe::default();
        for lane in &r.lanes {
            for sp in lane.spans() {
                let (s, e) = (sp.start(), sp.end());
                let n = sp.name();
                if n.is_none() {
                    continue;
                }
                if sp.kind() == SpanKind::Collective && n == names.overlapped {
                    if let Some(b) = sp.bytes() {
                        p.comm_overlapped.push((s, e, b));
                    }
                } else if sp.kind() == SpanKind::Collective && n == names.overlapped_small {
                    if let Some(b) = sp.bytes() {
                        p.small_calls.push((s, e, b, sp.seq()));
                    }
                } else if n == names.compute_overlapped_small {
                    p.compute_small.push((s, e));
                } else if n == names.compute {
                    p.compute.push((s, e));
                } else if n == names.compute_overlapped {
                    p.compute_overlapped.push((s, e));
                }
            }
        }
        for v in [
            &mut p.compute,
            &mut p.compute_overlapped,
            &mut p.compute_small,
        ] {
            v.sort_unstable();
        }
        p.comm_overlapped.sort_unstable();
        p.small_calls.sort_unstable();
        for &(a, b, bytes, seq) in &p.small_calls {
            let inside = p
                .compute_small
                .iter()
                .any(|&(s0, s1)| a >= s0 && b <= s1 && b > a);
            match seq {
                Some(seq) => {
                    let e = small_by_seq.entry(seq).or_insert((a, b, bytes, inside));
                    let inside = if a >= e.0 { inside } else { e.3 };
                    *e = (e.0.max(a), e.1.max(b), bytes, inside);
                }
                None if inside => small_calls_inside.push(((b - a) as f64, isolated_ns(bytes))),
                None => {}
            }
        }
        let rounds = p
            .compute
            .iter()
            .zip(&p.compute_overlapped)
            .zip(&p.comm_overlapped);
        for (k, ((c, co), &(ms, me, bytes))) in rounds.enumerate() {
            let overlap = (co.1.min(me) - co.0.max(ms)).max(0) as f64;
            if overlap <= 0.0 {
                continue;
            }
            let tc = (c.1 - c.0) as f64;
            let tc_with = (co.1 - co.0) as f64;
            let tm = isolated_ns(bytes);
            let tm_with = (me - ms) as f64;
            let f = slowdown(overlap, tc, tc_with);
            fc.push(f);
            fm.push(slowdown(overlap, tm, tm_with));
            // The small calls of the same round: what compute lost beyond the factor, per call
            // that ran during it.
            if let Some(&(s0, s1)) = p.compute_small.get(k) {
                let during: Vec<(i64, i64)> = p
                    .small_calls
                    .iter()
                    .filter(|&&(a, b, _, _)| a < s1 && b > s0)
                    .map(|&(a, b, _, _)| (a.max(s0), b.min(s1)))
                    .collect();
                if !during.is_empty() {
                    let covered: f64 = during.iter().map(|&(a, b)| (b - a).max(0) as f64).sum();
                    let covered = covered.min((s1 - s0) as f64);
                    let lost = (s1 - s0) as f64 - tc - covered * (1.0 - 1.0 / f);
                    per_call.push((lost / during.len() as f64).clamp(0.0, tc));
                }
            }
        }
    }
    if fc.is_empty() {
        return None;
    }
    small_calls_inside.extend(
        small_by_seq
            .values()
            .filter(|c| c.3 && c.1 > c.0)
            .map(|&(a, b, bytes, _)| ((b - a) as f64, isolated_ns(bytes))),
    );
    let compute_probe = median(&mut fc);
    let factors = Interference {
        compute: compute_probe.min(MAX_COMPUTE_FACTOR),
        compute_probe,
        comm_probe: median(&mut fm),
        compute_measured: true,
        per_call_ns: if per_call.is_empty() {
            0.0
        } else {
            median(&mut per_call)
        },
        ..Interference::NONE
    };
    Some(ProbeReading {
        factors,
        small_calls_inside,
    })
}

/// The factor `f` for which work that takes `alone` ns on its own took `with` ns when `overlap`
/// ns of it ran slowed by `f`: `alone = overlap / f + (with − overlap)`. Clamped to
/// `1..=MAX_FACTOR`.
pub fn slowdown(overlap: f64, alone: f64, with: f64) -> f64 {
    let unslowed = (with - overlap).max(0.0);
    let progress = alone - unslowed;
    if progress <= overlap / MAX_FACTOR {
        return MAX_FACTOR;
    }
    (overlap / progress).clamp(1.0, MAX_FACTOR)
}

/// A simulated backward with its collectives (ns after backward start).
#[derive(Clone, Debug, PartialEq)]
pub struct Interfered {
    /// When backward ends (longer than the pure backward where collectives overlapped it).
    pub backward_end_ns: f64,
    /// When the last collective ends (0 without buckets).
    pub comm_end_ns: f64,
    /// `max(0, comm_end − backward_end)`.
    pub tail_ns: f64,
    /// Collective time after backward ended.
    pub exposed_ns: f64,
    /// Each bucket's collective, `(start, end)`, in launch order.
    pub collectives: Vec<(f64, f64)>,
}

/// DDP's overlapped reduction with interference: `buckets` are `(bytes, ready)` in launch order
/// with `ready` in pure compute time; backward needs `backward_ns` of pure compute. Buckets run
/// strictly in order, one at a time, each needing `cost(bytes)` alone. See the module
/// documentation for the rates.
pub fn simulate_interfered(
    buckets: &[(u64, f64)],
    backward_ns: f64,
    cost: impl Fn(u64) -> f64,
    f: Interference,
) -> Interfered {
    let fc = f.compute.max(1.0);
    let backward = backward_ns.max(0.0);
    let (mut t, mut p) = (0.0f64, 0.0f64); // time, pure compute progress
    let mut backward_end = if backward == 0.0 { Some(0.0) } else { None };
    let mut next = 0usize; // the next bucket to start
                           // The running collective: its alone-work left and its slowdown while compute runs.
    let mut running: Option<(f64, f64)> = None;
    let mut comm_end = 0.0f64;
    let mut exposed = 0.0f64;
    let mut collectives = Vec::with_capacity(buckets.len());
    loop {
        let computing = backward_end.is_none();
        // Start the next bucket when the link is free and its gradients are ready.
        if running.is_none() && next < buckets.len() {
            let (bytes, ready) = buckets[next];
            if !computing || p >= ready {
                let work = cost(bytes).max(0.0);
                running = Some((work, f.comm_slowdown(work)));
                collectives.push((t, t));
                next += 1;
                if computing {
                    // The call costs compute its start-up: later gradients come that much later.
                    p = (p - f.per_call_ns.max(0.0)).max(0.0);
                }
            }
        }
        let Some((work, fm)) = running else {
            if !computing {
                break; // nothing runs and nothing will
            }
            // Compute alone until the next bucket is ready or backward ends.
            let target = buckets
                .get(next)
                .map_or(backward, |b| b.1.min(backward))
                .max(p);
            t += target - p;
            p = target;
            if p >= backward {
                backward_end = Some(t);
            }
            continue;
        };
        if !computing {
            t += work;
            exposed += work;
            comm_end = t;
            running = None;
            if let Some(c) = collectives.last_mut() {
                c.1 = t;
            }
            continue;
        }
        // Both run: the collective at 1/fm, compute at 1/fc, until one of them finishes or the
        // next ready point (which matters only once the link is free) is reached.
        let to_comm_end = work * fm;
        let to_backward_end = (backward - p) * fc;
        let dt = to_comm_end.min(to_backward_end);
        t += dt;
        p += dt / fc;
        let left = work - dt / fm;
        if to_backward_end <= to_comm_end {
            p = backward;
            backward_end = Some(t);
        }
        if to_comm_end <= to_backward_end {
            running = None;
            comm_end = t;
            if let Some(c) = collectives.last_mut() {
                c.1 = t;
            }
        } else {
            running = Some((left.max(0.0), fm));
        }
    }
    let backward_end = backward_end.unwrap_or(t);
    Interfered {
        backward_end_ns: backward_end,
        comm_end_ns: if buckets.is_empty() { 0.0 } else { comm_end },
        tail_ns: if buckets.is_empty() {
            0.0
        } else {
            (comm_end - backward_end).max(0.0)
        },
        exposed_ns: exposed,
        collectives,
    }
}

/// Replays the recorded layout in recorded time: `buckets` are `(bytes, ready)` with ready
/// times as recorded (slowed where collectives overlapped), and backward ended at
/// `backward_ns`. Returns the replay and the intervals (recorded time) during which a collective
/// ran while backward computed, from which [`pure_time`] maps recorded times to pure compute
/// time.
pub fn replay_recorded(
    buckets: &[(u64, f64)],
    backward_ns: f64,
    cost: impl Fn(u64) -> f64,
    f: Interference,
) -> (Interfered, Vec<(f64, f64)>) {
    let mut end = f64::NEG_INFINITY;
    let mut exposed = 0.0;
    let mut overlapped = Vec::new();
    let mut collectives = Vec::with_capacity(buckets.len());
    for &(bytes, ready) in buckets {
        let start = end.max(ready);
        let work = cost(bytes).max(0.0);
        let fm = f.comm_slowdown(work);
        // Slowed while backward runs, at full speed after it.
        let slowed_span = (backward_ns - start).max(0.0);
        end = if work * fm <= slowed_span {
            start + work * fm
        } else {
            start.max(backward_ns) + (work - slowed_span / fm)
        };
        if start < backward_ns {
            overlapped.push((start, end.min(backward_ns)));
        }
        exposed += (end - start.max(backward_ns)).max(0.0);
        collectives.push((start, end));
    }
    let comm_end = if buckets.is_empty() { 0.0 } else { end };
    (
        Interfered {
            backward_end_ns: backward_ns,
            comm_end_ns: comm_end,
            tail_ns: if buckets.is_empty() {
                0.0
            } else {
                (comm_end - backward_ns).max(0.0)
            },
            exposed_ns: exposed,
            collectives,
        },
        overlapped,
    )
}

/// Pure compute time of recorded time `t` (≤ backward end): `t` less the part of the
/// overlapped intervals before it that compute lost to the collectives, and less the
/// per-call cost of each collective that started before it.
pub fn pure_time(t: f64, overlapped: &[(f64, f64)], f: Interference) -> f64 {
    let lost = 1.0 - 1.0 / f.compute.max(1.0);
    let covered: f64 = overlapped
        .iter()
        .map(|&(s, e)| (e.min(t) - s).max(0.0))
        .sum();
    let started = overlapped.iter().filter(|&&(s, _)| s < t).count() as f64;
    (t - lost * covered - started * f.per_call_ns.max(0.0)).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_interference_both_run_at_full_speed() {
        // Ready at 1, 2, 10 ms, 1.5 ms each, backward 10 ms: 1→2.5, 2.5→4, 10→11.5, in pure
        // time and in recorded time alike.
        let b = [(1u64, 1e6), (1, 2e6), (1, 10e6)];
        let s = simulate_interfered(&b, 10e6, |_| 1.5e6, Interference::NONE);
        assert_eq!(s.backward_end_ns, 10e6);
        assert_eq!(
            (s.comm_end_ns, s.tail_ns, s.exposed_ns),
            (11.5e6, 1.5e6, 1.5e6)
        );
        assert_eq!(
            s.collectives,
            vec![(1e6, 2.5e6), (2.5e6, 4e6), (10e6, 11.5e6)]
        );
        let (r, intervals) = replay_recorded(&b, 10e6, |_| 1.5e6, Interference::NONE);
        assert_eq!((r.comm_end_ns, r.tail_ns), (11.5e6, 1.5e6));
        assert_eq!(intervals, vec![(1e6, 2.5e6), (2.5e6, 4e6)]);
    }

    #[test]
    fn both_slow_down_while_they_overlap() {
        // Backward 10 ms of pure compute; one bucket ready at 2 ms needing 4 ms alone; both at
        // half speed while together. From 2 ms: the collective needs 8 ms at half speed; compute
        // has 8 ms of pure work left, 16 ms at half speed. The collective ends at 10 ms, having
        // cost compute 4 ms of progress: backward ends at 10 + 4 = 14 ms.
        let f = Interference {
            compute: 2.0,
            // Every call here takes 4 ms alone: 4 ms more is twice as long.
            comm_extra_ns: 4e6,
            compute_measured: true,
            ..Interference::NONE
        };
        let s = simulate_interfered(&[(1, 2e6)], 10e6, |_| 4e6, f);
        assert!((s.comm_end_ns - 10e6).abs() < 1.0, "{s:?}");
        assert!((s.backward_end_ns - 14e6).abs() < 1.0, "{s:?}");
        assert_eq!(s.tail_ns, 0.0);
        // A collective that outlives backward: ready at 8 ms, 4 ms alone. From 8 ms both at half
        // speed: compute's 2 ms left take 4 ms (to 12 ms), the collective does 2 ms of work by
        // then and its last 2 ms at full speed: ends at 14 ms, tail 2 ms, all of it exposed.
        let s = simulate_interfered(&[(1, 8e6)], 10e6, |_| 4e6, f);
        assert!((s.backward_end_ns - 12e6).abs() < 1.0, "{s:?}");
        assert!((s.comm_end_ns - 14e6).abs() < 1.0, "{s:?}");
        assert!((s.exposed_ns - 2e6).abs() < 1.0, "{s:?}");
    }

    #[test]
    fn recorded_times_map_back_to_pure_compute() {
        let f = Interference {
            compute: 2.0,
            // Every call here takes 4 ms alone: 4 ms more is twice as long.
            comm_extra_ns: 4e6,
            compute_measured: true,
            ..Interference::NONE
        };
        // The second case above as recorded: ready at 8 ms of pure time is recorded at 8 ms
        // (nothing ran before), backward recorded to end at 12 ms.
        let (r, intervals) = replay_recorded(&[(1, 8e6)], 12e6, |_| 4e6, f);
        assert_eq!(intervals, vec![(8e6, 12e6)]);
        assert!((r.comm_end_ns - 14e6).abs() < 1.0, "{r:?}");
        assert!((pure_time(12e6, &intervals, f) - 10e6).abs() < 1.0);
        assert_eq!(pure_time(8e6, &intervals, f), 8e6);
        // Replayed in pure time, the same layout gives the recorded backward end back.
        let s = simulate_interfered(&[(1, 8e6)], pure_time(12e6, &intervals, f), |_| 4e6, f);
        assert!((s.backward_end_ns - 12e6).abs() < 1.0, "{s:?}");
    }

    #[test]
    fn a_collective_during_compute_takes_its_extra_time_and_at_least_the_floor() {
        let f = Interference {
            comm_extra_ns: 2.7e6,
            comm_floor_ns: 12e6,
            ..Interference::NONE
        };
        // 3.3 ms alone: the floor, 12 ms; 13.1 ms alone: 15.8 ms.
        assert!((f.comm_slowdown(3.3e6) - 12.0 / 3.3).abs() < 1e-9);
        assert!((f.comm_slowdown(13.1e6) - 15.8 / 13.1).abs() < 1e-9);
        // Past the bound: at most MAX_FACTOR.
        assert_eq!(f.comm_slowdown(0.1e6), MAX_FACTOR);
        assert_eq!(Interference::NONE.comm_slowdown(5e6), 1.0);
    }

    #[test]
    fn the_fit_finds_the_extra_time_and_the_floor_the_calls_show() {
        // Calls of 3.3, 9.9, 13.1 and 26 ms alone (bench/whatif's 4-node 1 Gbit/s sizes) that
        // took max(alone + 2.7, 12) ms during compute: 12, 12.6, 15.8, 28.7.
        let calls: Vec<(f64, f64)> = [3.3, 9.9, 13.1, 26.0]
            .iter()
            .flat_map(|&c: &f64| std::iter::repeat_n((((c + 2.7f64).max(12.0)) * 1e6, c * 1e6), 5))
            .collect();
        let o = fit_comm_overlap(&calls, &[], 5);
        assert!((o.extra_ns - 2.7e6).abs() < 1.0, "{o:?}");
        assert!((o.floor_ns - 12e6).abs() < 1.0, "{o:?}");
        // Calls that took their time alone: neither.
        let alone: Vec<(f64, f64)> = calls.iter().map(|&(_, c)| (c, c)).collect();
        assert_eq!(fit_comm_overlap(&alone, &[], 5), CommOverlap::default());
        // Too few run calls for an extra time; the probe's small calls (2.5 ms alone, 8 ms
        // inside its compute) still give the floor.
        let probe = [(8e6, 2.5e6); 7];
        let o = fit_comm_overlap(&calls[..3], &probe, 5);
        assert_eq!(o.extra_ns, 0.0, "{o:?}");
        assert!((o.floor_ns - 8e6).abs() < 1.0, "{o:?}");
    }

    #[test]
    fn slowdown_solves_for_the_factor() {
        // 10 ms of work alone; 4 ms of it overlapped at factor 2 (2 ms of progress), 8 ms not:
        // took 12 ms.
        assert!((slowdown(4.0, 10.0, 12.0) - 2.0).abs() < 1e-9);
        // Not slowed (or faster, by noise): 1.
        assert_eq!(slowdown(4.0, 10.0, 9.0), 1.0);
        // Absurd: clamped.
        assert_eq!(slowdown(4.0, 10.0, 30.0), MAX_FACTOR);
    }
}
