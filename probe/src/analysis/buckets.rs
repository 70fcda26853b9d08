//! Per-bucket statistics: size, readiness, launch delay, duration,
//! bandwidths, exposed time and skew across ranks, by bucket id over the
//! steady steps of all ranks.

use serde::{Deserialize, Serialize};

use super::comm::{bus_factor, SeqView};
use super::scan::CollObs;
use super::stats::Dist;
use crate::hash::FxHashMap;
use crate::model::{Run, Sym};

/// What one gradient bucket's collectives did over the steady steps (every
/// rank's call counted once). Times in nanoseconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BucketStats {
    /// Bucket id.
    pub bucket: u32,
    /// The operation of its calls (the most frequent one).
    pub op: String,
    /// Number of calls (ranks × steps).
    pub calls: u64,
    /// Median bytes per call, `None` when no call carries a byte count.
    pub bytes: Option<u64>,
    /// Number of parameters in the bucket according to the bucket layout in
    /// effect, `None` when the trace has no layout with this id.
    pub params: Option<u32>,
    /// When the bucket became ready, after backward start: its
    /// `bucket_ready` span's end (else the call's `queued`) minus the start
    /// of the step's first backward span. Only calls whose step has both.
    pub ready_after_backward_start: Dist,
    /// Collective start minus bucket ready: how long a ready bucket waited
    /// for its launch (earlier buckets, the communication thread).
    pub launch_delay: Dist,
    /// Duration of the calls (waiting for late ranks inside the collective
    /// included).
    pub duration: Dist,
    /// Σ bytes / Σ duration over the calls with bytes (bytes/s): nccl-tests'
    /// algbw of the mean call.
    pub algbw_bytes_per_s: Option<f64>,
    /// `algbw × bus factor` of the op (bytes/s).
    pub busbw_bytes_per_s: Option<f64>,
    /// The part of each call (clipped to its step) that did not overlap
    /// forward, backward or optimizer compute.
    pub exposed: Dist,
    /// Σ of `exposed` over all calls.
    pub exposed_total_ns: i64,
    /// Per sequence number: latest start − earliest start across ranks.
    pub skew: Dist,
}

/// Per-bucket accumulators, fed one call at a time (calls without a bucket
/// are ignored).
#[derive(Default)]
pub(crate) struct BucketTable {
    index: FxHashMap<u32, u32>,
    accs: Vec<Acc>,
}

#[derive(Default)]
struct Acc {
    bucket: u32,
    calls: u64,
    ops: Vec<(Option<Sym>, u64)>,
    bytes: Vec<f64>,
    sum_bytes: u128,
    sum_dur: i128,
    ready: Vec<i64>,
    delay: Vec<i64>,
    duration: Vec<i64>,
    exposed: Vec<i64>,
    exposed_total: i64,
    skew: Vec<i64>,
    /// A call's rank and step, to find the bucket's layout.
    at: Option<(u32, u32)>,
}

impl BucketTable {
    /// Counts one call.
    pub fn add(&mut self, c: &CollObs) {
        let Some(bucket) = c.bucket() else { return };
        let next = self.accs.len() as u32;
        let i = *self.index.entry(bucket).or_insert(next) as usize;
        if i == self.accs.len() {
            self.accs.push(Acc {
                bucket,
                ..Acc::default()
            });
        }
        let a = &mut self.accs[i];
        a.calls += 1;
        match a.ops.iter_mut().find(|(o, _)| *o == c.op) {
            Some((_, n)) => *n += 1,
            None => a.ops.push((c.op, 1)),
        }
        if let Some(b) = c.bytes() {
            a.bytes.push(b as f64);
            a.sum_bytes += u128::from(b);
            a.sum_dur += i128::from(c.duration());
        }
        if c.ready != i64::MIN {
            a.delay.push(c.start.saturating_sub(c.ready));
            if c.bwd_start != i64::MIN {
                a.ready.push(c.ready.saturating_sub(c.bwd_start));
            }
        }
        a.duration.push(c.duration());
        a.exposed.push(c.exposed);
        a.exposed_total = a.exposed_total.saturating_add(c.exposed);
        a.at.get_or_insert((c.rank, c.step));
    }

    /// The statistics by bucket id, with the skews of the sequence views
    /// computed from the same calls.
    pub fn finish(self, run: &Run, seqs: &[SeqView]) -> Vec<BucketStats> {
        let mut accs = self.accs;
        for s in seqs.iter().filter(|s| s.ranks >= 2 && s.bucket != u32::MAX) {
            if let Some(&i) = self.index.get(&s.bucket) {
                accs[i as usize].skew.push(s.skew);
            }
        }
        accs.sort_unstable_by_key(|a| a.bucket);
        accs.into_iter()
            .map(|mut a| {
                let bucket = a.bucket;
                let op = a
                    .ops
                    .iter()
                    .max_by_key(|(_, n)| *n)
                    .and_then(|(o, _)| *o)
                    .map_or("unknown", |s| run.str(s))
                    .to_owned();
                let bytes = (!a.bytes.is_empty())
                    .then(|| super::stats::median(&mut a.bytes).round() as u64);
                let algbw = (a.sum_bytes > 0 && a.sum_dur > 0)
                    .then(|| a.sum_bytes as f64 / (a.sum_dur as f64 / 1e9));
                let factor = bus_factor(&op, run.world_size);
                let params = a.at.and_then(|(rank, step)| {
                    let rank = run.rank(rank)?;
                    let layout = if step == u32::MAX {
                        rank.layouts.last()?
                    } else {
                        rank.layout_at(u64::from(step))?
                    };
                    let b = layout.buckets.iter().find(|b| b.id == bucket)?;
                    u32::try_from(b.params.len()).ok()
                });
                BucketStats {
                    bucket,
                    op,
                    calls: a.calls,
                    bytes,
                    params,
                    ready_after_backward_start: Dist::of_i64(&mut a.ready),
                    launch_delay: Dist::of_i64(&mut a.delay),
                    duration: Dist::of_i64(&mut a.duration),
                    algbw_bytes_per_s: algbw,
                    busbw_bytes_per_s: algbw.map(|v| v * factor),
                    exposed: Dist::of_i64(&mut a.exposed),
                    exposed_total_ns: a.exposed_total,
                    skew: Dist::of_i64(&mut a.skew),
                }
            })
            .collect()
    }
}
