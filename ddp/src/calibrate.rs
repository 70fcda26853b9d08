//! The start-up calibration of the communication cost: a short sweep of all-reduce sizes and an
//! interference probe, recorded in the trace so that `ddp-probe advise` has a cost model for
//! every run, including one whose gradients fit in a single bucket (one collective size).
//!
//! It runs in [`crate::Ddp::new`] after the initial broadcast, on every rank, when the recorder
//! writes a trace and `DDP_PROBE_CALIBRATE` is not off (`ddp-probe run --no-calibrate`):
//!
//! 1. **Sweep**: up to [`SWEEP_SIZES`] float32 all-reduce sizes from 4 KiB up to the gradients'
//!    size (geometric), [`SWEEP_REPEATS`] calls each, with nothing else running. Before each size
//!    the ranks agree (one tiny all-reduce) on how long the sweep took so far and on the last
//!    size's time, so that every rank makes the same choice of repeats and stops at the same size
//!    when the budget (`DDP_PROBE_CALIBRATE_MS`, default 1000 ms) would be exceeded.
//! 2. **Interference**: an all-reduce of the sweep (the largest whose round fits in the budget
//!    left; its time alone is the sweep's) runs while the rank multiplies matrices until it
//!    completes, and the same number of products runs alone; then the same loop while a chain
//!    of small all-reduces (the swept size closest to 256 KiB) runs, for the cost of each call.
//!    The slowdown of each while the other runs is what the advice's
//!    simulator applies where communication overlaps backward. Only on the CPU: on a GPU the
//!    compute is asynchronous and would need events (not done here).
//!
//! Cost on the shaped 2-node cluster of `bench/whatif` (1 Gbit/s, 19 MB of gradients): about
//! 0.9 s, once per run; `ddp-probe run --no-calibrate` skips it.

use std::time::Duration;

use comm::{Buffer, DType, ProcessGroup, ReduceOp, WorkInfo};
use probe_contract::recorder::Recorder;
use probe_contract::trace::{calibration, SpanKind};
use tch::{Device, Kind, Tensor};

use crate::error::Result;

/// Sizes of the sweep at most.
pub const SWEEP_SIZES: usize = 8;
/// Calls per size at most.
pub const SWEEP_REPEATS: usize = 3;
/// The smallest size of the sweep (bytes).
pub const SMALLEST_BYTES: u64 = 4096;
/// Rounds of the interference probe (the analysis takes the median: one round on a busy
/// machine can be off by 2×).
pub const PROBE_ROUNDS: usize = 3;
/// The size of the probe's small calls is the swept size closest to this.
pub const SMALL_BUCKET_BYTES: u64 = 256 * 1024;
/// At most this many small calls per round.
pub const MAX_SMALL_CALLS: usize = 400;
/// The budget when `DDP_PROBE_CALIBRATE_MS` is not set.
pub const DEFAULT_BUDGET: Duration = Duration::from_millis(1000);

/// Whether to calibrate, and for how long at most, from the environment.
pub fn budget_from_env() -> Option<Duration> {
    let off = std::env::var(probe_contract::env::CALIBRATE)
        .is_ok_and(|v| matches!(v.trim(), "0" | "off" | "false" | "no"));
    if off {
        return None;
    }
    let ms = std::env::var(probe_contract::env::CALIBRATE_MS)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok());
    Some(ms.map_or(DEFAULT_BUDGET, Duration::from_millis))
}

/// The sweep's sizes in bytes (multiples of 4, float32 elements): geometric from
/// [`SMALLEST_BYTES`] to `gradient_bytes`, at most [`SWEEP_SIZES`] distinct ones.
pub fn sweep_sizes(gradient_bytes: u64) -> Vec<u64> {
    let top = gradient_bytes.max(SMALLEST_BYTES) as f64;
    let n = SWEEP_SIZES;
    let ratio = (top / SMALLEST_BYTES as f64).powf(1.0 / (n - 1) as f64);
    let mut sizes: Vec<u64> = (0..n)
        .map(|i| {
            let b = SMALLEST_BYTES as f64 * ratio.powi(i as i32);
            ((b / 4.0).round() as u64).max(1) * 4
        })
        .collect();
    sizes.dedup();
    sizes
}

/// How many calls of a size that takes an estimated `call_ns` fit in `left_ns` (0: none, and the
/// sweep stops).
pub fn repeats_within(call_ns: f64, left_ns: f64) -> usize {
    if call_ns <= 0.0 {
        return SWEEP_REPEATS;
    }
    ((left_ns / call_ns).floor().max(0.0) as usize).min(SWEEP_REPEATS)
}

/// Runs the calibration (see the module documentation). Every rank must call it with the same
/// `gradient_bytes`; it returns early on every rank alike.
pub fn calibrate(
    pg: &ProcessGroup,
    recorder: &Recorder,
    gradient_bytes: u64,
    compute_on_cpu: bool,
    budget: Duration,
) -> Result<()> {
    if pg.world_size() < 2 || !recorder.is_enabled() {
        return Ok(());
    }
    let budget_ns = budget.as_nanos() as f64;
    let start = now();
    let record = |info: &WorkInfo, name: &'static str| {
        recorder
            .span(SpanKind::Collective, 0, info.started_ns, info.finished_ns)
            .op("all_reduce")
            .name(name)
            .queued(info.queued_ns)
            .bytes(info.bytes as u64)
            .seq(info.seq)
            .algo(info.algorithm.name())
            .transport(info.transport.name())
            .dtype(info.dtype.name())
            .finish();
    };
    // A first call of the smallest size (not recorded): connections and buffers warm.
    let mut warm = vec![0f32; (SMALLEST_BYTES / 4) as usize];
    let info = pg.all_reduce(&mut warm, ReduceOp::Sum)?;
    let mut call_ns = info.duration_ns() as f64;
    let mut last_bytes = SMALLEST_BYTES;
    let mut times: Vec<(u64, f64)> = Vec::new();
    for bytes in sweep_sizes(gradient_bytes) {
        // Agree on the time used so far and on the last call's time (the slowest rank's).
        let mut agreed = [now() - start, call_ns];
        pg.all_reduce(&mut agreed, ReduceOp::Max)?;
        let estimate = agreed[1] * bytes as f64 / last_bytes as f64;
        // Keep 40 % of the budget for the interference probe.
        let repeats = repeats_within(estimate, budget_ns * 0.6 - agreed[0]);
        if repeats == 0 {
            break;
        }
        let mut data = vec![0f32; (bytes / 4) as usize];
        let mut durations = Vec::with_capacity(repeats);
        for _ in 0..repeats {
            let info = pg.all_reduce(&mut data, ReduceOp::Sum)?;
            record(&info, calibration::SWEEP);
            durations.push(info.duration_ns() as f64);
        }
        durations.sort_by(f64::total_cmp);
        call_ns = durations[durations.len() / 2];
        last_bytes = bytes;
        times.push((bytes, call_ns));
    }
    if !compute_on_cpu {
        return Ok(());
    }
    // The probe's size: the largest sweep size whose round (compute and collective together,
    // then the compute alone: about 3.5 calls) fits in the budget left; the slowdown is a rate,
    // and a longer probe measures it better than a bucket-sized one. The ranks agree on the
    // time left and on the sizes' times.
    let mut agreed: Vec<f64> = std::iter::once(now() - start)
        .chain(times.iter().map(|t| t.1))
        .collect();
    pg.all_reduce(&mut agreed, ReduceOp::Max)?;
    let left = budget_ns - agreed[0];
    let Some((probe_bytes, probe_ns)) = times
        .iter()
        .zip(&agreed[1..])
        .filter(|(_, &ns)| 4.5 * ns * PROBE_ROUNDS as f64 <= left)
        .map(|((bytes, _), &ns)| (*bytes, ns))
        .next_back()
    else {
        return Ok(());
    };
    let a = Tensor::f_ones([128, 128], (Kind::Float, Device::Cpu))?;
    // Compute runs exactly as long as the collective it overlaps (the loop stops at the first
    // iteration that sees it done), then the same number of iterations alone: the slowdown is
    // then the ratio of two spans of the same work. A fixed count timed beforehand on each rank
    // (as before) made spans of 1–10 ms against a 10–25 ms collective, and the factor read
    // 1.1× to 6.2× over the 40 runs of `bench/whatif`; this way 1.4× to 2.5× (once 3.9×).
    let compute_until = |name: &'static str, done: &dyn Fn(u64) -> bool| -> Result<u64> {
        let t0 = probe_contract::clock::now_ns();
        let mut iters = 0u64;
        while !done(iters) {
            let _ = a.f_mm(&a)?;
            iters += 1;
        }
        let t1 = probe_contract::clock::now_ns();
        recorder.span(SpanKind::User, 0, t0, t1).name(name).finish();
        Ok(iters)
    };
    let compute_n = |name: &'static str, n: u64| compute_until(name, &|i| i >= n).map(|_| ());
    // The small calls: the swept size closest to a small bucket (256 KiB), as many back to
    // back as last about as long as the big call. Their compute slowdown beyond the big call's
    // is the cost of each call to the computing rank (wake-ups, system calls).
    let (small_bytes, small_ns) = times
        .iter()
        .zip(&agreed[1..])
        .map(|((bytes, _), &ns)| (*bytes, ns))
        .min_by(|a, b| {
            let d = |x: u64| (x as f64 / SMALL_BUCKET_BYTES as f64).ln().abs();
            d(a.0).total_cmp(&d(b.0))
        })
        .unwrap_or((probe_bytes, probe_ns));
    let small_calls = ((probe_ns / small_ns.max(1.0)).ceil() as usize).clamp(1, MAX_SMALL_CALLS);
    for _ in 0..PROBE_ROUNDS {
        // The ranks start the collective together (a small all-reduce first), so that its
        // time on each is transfer under contention, not waiting for a rank still computing.
        pg.all_reduce(&mut [0f32], ReduceOp::Sum)?;
        let work = pg.all_reduce_async(
            Buffer::zeros(DType::F32, (probe_bytes / 4) as usize),
            ReduceOp::Sum,
        );
        let iters = compute_until(calibration::COMPUTE_OVERLAPPED, &|i| {
            i > 0 && work.is_completed()
        })?;
        let (_, info) = work.wait()?;
        record(&info, calibration::OVERLAPPED);
        compute_n(calibration::COMPUTE, iters)?;
        pg.all_reduce(&mut [0f32], ReduceOp::Sum)?;
        let works: Vec<comm::Work> = (0..small_calls)
            .map(|_| {
                pg.all_reduce_async(
                    Buffer::zeros(DType::F32, (small_bytes / 4) as usize),
                    ReduceOp::Sum,
                )
            })
            .collect();
        // The same work as the big call's round: `covered` and the loss per call are read
        // against its time alone.
        compute_n(calibration::COMPUTE_OVERLAPPED_SMALL, iters)?;
        for work in works {
            let (_, info) = work.wait()?;
            record(&info, calibration::OVERLAPPED_SMALL);
        }
    }
    Ok(())
}

/// Nanoseconds of the recorder's clock, as a float.
fn now() -> f64 {
    probe_contract::clock::now_ns() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_run_from_4_kib_to_the_gradients_geometrically() {
        let s = sweep_sizes(19_110_060);
        assert_eq!(s.len(), SWEEP_SIZES);
        assert_eq!(s[0], 4096);
        assert!((*s.last().unwrap() as i64 - 19_110_060).abs() <= 4);
        // Each size about 3.3 times the last (19.1 MB / 4 KiB = 4666 = 3.34^7).
        for w in s.windows(2) {
            let r = w[1] as f64 / w[0] as f64;
            assert!((3.2..3.5).contains(&r), "{w:?}");
        }
        // Tiny models: fewer distinct sizes, never below 4 KiB.
        assert_eq!(sweep_sizes(100), vec![4096]);
        assert!(sweep_sizes(8192).iter().all(|b| b % 4 == 0 && *b >= 4096));
    }

    #[test]
    fn repeats_fit_the_budget_left() {
        assert_eq!(repeats_within(10.0, 1000.0), SWEEP_REPEATS);
        assert_eq!(repeats_within(400.0, 1000.0), 2);
        assert_eq!(repeats_within(1001.0, 1000.0), 0);
        assert_eq!(repeats_within(10.0, -5.0), 0);
    }
}
