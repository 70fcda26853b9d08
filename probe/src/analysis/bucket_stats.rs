//! Per-bucket statistics: size, readiness, launch delay, duration (split
//! into waiting for the last rank and transfer), bandwidths, exposed time and
//! skew across ranks, by bucket id over the steady steps of all ranks.

use serde::{Deserialize, Serialize};

use super::comm::{busbw_factor, SeqView};
use super::group::IdMap;
use super::scan::{CollObs, WindowCalls};
use super::stats::{Dist, Samples};
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
    /// Per sequence number: the collective's own time, the shortest duration
    /// across the ranks (the last rank to arrive waits for nobody).
    #[serde(default)]
    pub transfer: Dist,
    /// Per sequence number: the mean over the ranks of duration − transfer,
    /// the time a call waited inside the collective for the last rank.
    #[serde(default)]
    pub waiting: Dist,
    /// Σ waiting / Σ duration over the calls of those sequence numbers.
    #[serde(default)]
    pub waiting_share: Option<f64>,
    /// Bus bandwidth over the transfer: median bytes × bus factor / median
    /// transfer (bytes/s), what the network did once every rank was there.
    #[serde(default)]
    pub busbw_transfer_bytes_per_s: Option<f64>,
}

/// Per-bucket accumulators, fed one call at a time (calls without a bucket
/// are ignored).
#[derive(Default)]
pub(crate) struct BucketTable {
    index: IdMap,
    accs: Vec<Acc>,
}

#[derive(Default)]
struct Acc {
    bucket: u32,
    ops: Vec<(Option<Sym>, u64)>,
    sum_bytes: u128,
    sum_dur: i128,
    /// Bytes of the calls that carry them.
    bytes: Samples,
    /// Ready after backward start, of the calls whose step has both.
    ready: Samples,
    /// Launch delay, of the calls with a ready time.
    delay: Samples,
    /// Duration of every call.
    duration: Samples,
    /// Exposed time of every call.
    exposed: Samples,
    exposed_total: i64,
    skew: Vec<i64>,
    transfer: Vec<i64>,
    waiting: Vec<i64>,
    /// Σ waiting and Σ duration of the compared sequence numbers' calls.
    seq_waiting: i64,
    seq_total: i64,
    /// The first call's rank and step, to find the bucket's layout.
    at: Option<(u32, u32)>,
}

impl BucketTable {
    /// Counts the calls of a window.
    pub fn add(&mut self, w: &WindowCalls<'_, '_>) {
        for c in w.calls {
            self.add_call(c, w);
        }
    }

    #[inline]
    fn add_call(&mut self, c: &CollObs<'_>, w: &WindowCalls<'_, '_>) {
        let sp = c.span;
        let Some(bucket) = sp.bucket() else { return };
        let i = self.index.id(u64::from(bucket)) as usize;
        if i == self.accs.len() {
            self.accs.push(Acc {
                bucket,
                at: Some((w.rank, w.step)),
                ..Acc::default()
            });
        }
        let a = &mut self.accs[i];
        let op = sp.op();
        match a.ops.first_mut() {
            // Usually a bucket's calls have one operation.
            Some((o, n)) if *o == op => *n += 1,
            _ => match a.ops.iter_mut().find(|(o, _)| *o == op) {
                Some((_, n)) => *n += 1,
                None => a.ops.push((op, 1)),
            },
        }
        let d = c.duration;
        if let Some(b) = sp.bytes() {
            a.sum_bytes += u128::from(b);
            a.sum_dur += i128::from(d);
            a.bytes.push(i64::try_from(b).unwrap_or(i64::MAX));
        }
        if c.ready != i64::MIN {
            if w.bwd_start != i64::MIN {
                a.ready.push(c.ready.saturating_sub(w.bwd_start));
            }
            a.delay.push(sp.start().saturating_sub(c.ready));
        }
        a.duration.push(d);
        a.exposed.push(c.exposed);
        a.exposed_total = a.exposed_total.saturating_add(c.exposed);
    }

    /// The statistics by bucket id, with the skews of the sequence views
    /// computed from the same calls.
    pub fn finish(self, run: &Run, seqs: impl Iterator<Item = SeqView>) -> Vec<BucketStats> {
        let mut accs = self.accs;
        let mut index = self.index;
        for s in seqs.filter(|s| s.ranks >= 2 && s.bucket != u32::MAX) {
            if let Some(a) = accs.get_mut(index.id(u64::from(s.bucket)) as usize) {
                a.skew.push(s.skew);
                a.transfer.push(s.transfer);
                a.waiting.push(s.waiting / i64::from(s.ranks.max(1)));
                a.seq_waiting = a.seq_waiting.saturating_add(s.waiting);
                a.seq_total = a.seq_total.saturating_add(s.total);
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
                let bytes_dist = a.bytes.dist();
                let bytes = (bytes_dist.n > 0).then(|| bytes_dist.median.round() as u64);
                let ready = a.ready.dist();
                let delay = a.delay.dist();
                let duration = a.duration.dist();
                let exposed = a.exposed.dist();
                let algbw = (a.sum_bytes > 0 && a.sum_dur > 0)
                    .then(|| a.sum_bytes as f64 / (a.sum_dur as f64 / 1e9));
                let busbw = busbw_factor(&op, run.ddp_group_size());
                let transfer = Dist::of_i64(&mut a.transfer);
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
                    calls: a.duration.len() as u64,
                    bytes,
                    params,
                    ready_after_backward_start: ready,
                    launch_delay: delay,
                    duration,
                    algbw_bytes_per_s: algbw,
                    busbw_bytes_per_s: busbw.and_then(|f| algbw.map(|v| v * f)),
                    exposed,
                    exposed_total_ns: a.exposed_total,
                    skew: Dist::of_i64(&mut a.skew),
                    waiting_share: (a.seq_total > 0)
                        .then(|| a.seq_waiting as f64 / a.seq_total as f64),
                    busbw_transfer_bytes_per_s: busbw
                        .zip(bytes)
                        .filter(|_| transfer.median > 0.0)
                        .map(|(f, b)| b as f64 * f / (transfer.median / 1e9)),
                    transfer,
                    waiting: Dist::of_i64(&mut a.waiting),
                }
            })
            .collect()
    }
}
