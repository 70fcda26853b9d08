//! Compute and communication slowing each other down, and DDP's overlapped schedule with it.
//!
//! When a bucket's all-reduce runs during backward, both compete for the same cores (or the
//! GPU): backward takes longer and so does the collective. A schedule that assumes neither is
//! affected (dPRO's mistake, measured at 14 % average error by the Lumos authors) over-rates
//! small buckets, which overlap more. Here each is slowed by a constant factor while the other
//! runs, as Echo does:
//!
//! * **Measured** by the start-up calibration ([`crate::trace::calibration`]): a compute loop
//!   alone, while one swept-size all-reduce runs, and while a chain of small ones runs; that
//!   all-reduce's time against the cost model. [`calibration_factors`] reads them, the median
//!   over rounds and ranks.
//! * **Replayed** by [`simulate_interfered`]: gradients become ready in *pure* compute time
//!   (backward as it would run with no collective); while a collective is in flight, backward
//!   progresses at `1 / compute` of its speed and the collective at `1 / comm` of its own.
//! * **Recorded ready times** already contain the recorded layout's slowdown:
//!   [`replay_recorded`] replays the recorded layout in recorded time and [`pure_time`] removes
//!   it, so a candidate layout is simulated from the backward as it would run alone.
//!
//! With both factors 1 the schedule is the plain one: each side at full speed.

use serde::{Deserialize, Serialize};

use super::stats::median;
use crate::model::{Run, Span, Sym};
use crate::trace::{calibration, SpanKind};

/// Slowdown factors (≥ 1) while compute and communication overlap.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Interference {
    /// How much longer compute takes while a collective runs.
    pub compute: f64,
    /// How much longer a collective takes while its rank computes.
    pub comm: f64,
    /// The run's bucket calls `comm` was measured on (0: the calibration probe's call).
    #[serde(default)]
    pub comm_calls: usize,
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
    /// The probe's reading of `comm` (0 when not measured). The schedule does not use it: see
    /// [`comm_factor`].
    #[serde(default)]
    pub comm_probe: f64,
}

impl Interference {
    /// No interference.
    pub const NONE: Interference = Interference {
        compute: 1.0,
        comm: 1.0,
        comm_calls: 0,
        per_call_ns: 0.0,
        compute_measured: false,
        compute_probe: 0.0,
        comm_probe: 0.0,
    };
}

/// The collectives' slowdown while their rank computes, as the schedule takes it: what the
/// run's own bucket calls that ran entirely during compute show (`from_run`, see
/// `advice::advise`), and without enough of them none (1×), not the start-up probe's reading.
/// The probe's collective runs beside a compute loop written to keep every core busy, which
/// a training step's backward is not. Measured with `bench/whatif` (the 2026-12-04 sweep: 2
/// and 4 nodes at 1 Gbit/s and 400 Mbit/s, 40 traces): where a run had its own overlapped
/// calls they read 1.00× in 24 of 28 traces and at most 1.30×, while the probe read up to
/// 1.64× on the same shapes; taking the probe's reading for the one-bucket traces (which
/// have no such calls) predicted the smaller caps up to 19.3% slow (4 nodes, 1 Gbit/s),
/// taking 1× gave at most 9.1% there, and the mean over every trace went from 3.5% to 3.2%.
pub fn comm_factor(from_run: Option<f64>) -> f64 {
    from_run.unwrap_or(1.0)
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
    /// Every small call, `(start, end)`.
    small_calls: Vec<(i64, i64)>,
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

/// The interference factors the calibration measured, the median over the rounds of the ranks
/// that ran the probe; `isolated_ns(bytes)` is the cost model's time of an all-reduce that runs
/// alone.
/// `None` without a probe in the trace.
pub(crate) fn calibration_factors(
    run: &Run,
    names: &CalibrationNames,
    isolated_ns: impl Fn(u64) -> f64,
) -> Option<Interference> {
    names.compute_overlapped?;
    let (mut fc, mut fm, mut per_call) = (Vec::new(), Vec::new(), Vec::new());
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
                    p.small_calls.push((s, e));
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
            &mut p.small_calls,
        ] {
            v.sort_unstable();
        }
        p.comm_overlapped.sort_unstable();
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
                    .filter(|&&(a, b)| a < s1 && b > s0)
                    .map(|&(a, b)| (a.max(s0), b.min(s1)))
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
    let compute_probe = median(&mut fc);
    Some(Interference {
        compute: compute_probe.min(MAX_COMPUTE_FACTOR),
        compute_probe,
        comm_probe: median(&mut fm),
        comm: comm_factor(None),
        comm_calls: 0,
        compute_measured: true,
        per_call_ns: if per_call.is_empty() {
            0.0
        } else {
            median(&mut per_call)
        },
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
    let (fc, fm) = (f.compute.max(1.0), f.comm.max(1.0));
    let backward = backward_ns.max(0.0);
    let (mut t, mut p) = (0.0f64, 0.0f64); // time, pure compute progress
    let mut backward_end = if backward == 0.0 { Some(0.0) } else { None };
    let mut next = 0usize; // the next bucket to start
    let mut running: Option<f64> = None; // alone-work left of the running collective
    let mut comm_end = 0.0f64;
    let mut exposed = 0.0f64;
    let mut collectives = Vec::with_capacity(buckets.len());
    loop {
        let computing = backward_end.is_none();
        // Start the next bucket when the link is free and its gradients are ready.
        if running.is_none() && next < buckets.len() {
            let (bytes, ready) = buckets[next];
            if !computing || p >= ready {
                running = Some(cost(bytes).max(0.0));
                collectives.push((t, t));
                next += 1;
                if computing {
                    // The call costs compute its start-up: later gradients come that much later.
                    p = (p - f.per_call_ns.max(0.0)).max(0.0);
                }
            }
        }
        let Some(work) = running else {
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
            running = Some(left.max(0.0));
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
    let fm = f.comm.max(1.0);
    let mut end = f64::NEG_INFINITY;
    let mut exposed = 0.0;
    let mut overlapped = Vec::new();
    let mut collectives = Vec::with_capacity(buckets.len());
    for &(bytes, ready) in buckets {
        let start = end.max(ready);
        let work = cost(bytes).max(0.0);
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
            comm: 2.0,
            comm_calls: 0,
            per_call_ns: 0.0,
            compute_measured: true,
            compute_probe: 0.0,
            comm_probe: 0.0,
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
            comm: 2.0,
            comm_calls: 0,
            per_call_ns: 0.0,
            compute_measured: true,
            compute_probe: 0.0,
            comm_probe: 0.0,
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
