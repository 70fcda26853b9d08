//! Per-bucket statistics: size, readiness, launch delay, duration,
//! bandwidths, exposed time and skew across ranks, by bucket id over the
//! steady steps of all ranks.

use serde::{Deserialize, Serialize};

use super::comm::{bus_factor, SeqView};
use super::group::IdMap;
use super::scan::CollObs;
use super::stats::Dist;
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
    index: IdMap,
    accs: Vec<Acc>,
}

/// Absent value in a [`Row`].
const NONE: i64 = i64::MIN;

/// One call, compactly: bytes, ready after backward start, launch delay,
/// duration, exposed time (one write stream per bucket, not five).
type Row = [i64; 5];

/// A [`Row`] in half the memory, while every value fits: [`NONE`] is
/// `i32::MIN`, other values must lie in `i32::MIN + 1..=i32::MAX` (about
/// ±2.1 s or 2 GiB, what calls usually take and move).
type SmallRow = [i32; 5];

/// A [`Row`] as a [`SmallRow`], if every value fits.
fn small_row(row: &Row) -> Option<SmallRow> {
    let mut out = [i32::MIN; 5];
    for (o, &v) in out.iter_mut().zip(row) {
        if v != NONE {
            *o = i32::try_from(v).ok().filter(|&x| x != i32::MIN)?;
        }
    }
    Some(out)
}

/// A [`SmallRow`]'s values.
fn wide_row(row: &SmallRow) -> Row {
    row.map(|v| if v == i32::MIN { NONE } else { i64::from(v) })
}

/// The calls of one bucket: small rows until a value needs 64 bits, then
/// all rows wide.
#[derive(Default)]
struct Rows {
    small: Vec<SmallRow>,
    wide: Vec<Row>,
}

impl Rows {
    fn push(&mut self, row: Row) {
        if self.wide.is_empty() {
            if let Some(r) = small_row(&row) {
                self.small.push(r);
                return;
            }
            self.wide = self.small.iter().map(wide_row).collect();
            self.small = Vec::new();
        }
        self.wide.push(row);
    }

    fn len(&self) -> usize {
        self.small.len() + self.wide.len()
    }

    /// Column `k` of every row, absent values left out, into `out`.
    fn column(&self, k: usize, out: &mut Vec<i64>) {
        out.clear();
        out.extend(
            self.small
                .iter()
                .map(|r| r[k])
                .filter(|&v| v != i32::MIN)
                .map(i64::from),
        );
        out.extend(self.wide.iter().map(|r| r[k]).filter(|&v| v != NONE));
    }
}

#[derive(Default)]
struct Acc {
    bucket: u32,
    ops: Vec<(Option<Sym>, u64)>,
    sum_bytes: u128,
    sum_dur: i128,
    rows: Rows,
    exposed_total: i64,
    skew: Vec<i64>,
    /// A call's rank and step, to find the bucket's layout.
    at: Option<(u32, u32)>,
}

impl BucketTable {
    /// Counts one call.
    pub fn add(&mut self, c: &CollObs) {
        let Some(bucket) = c.bucket() else { return };
        let i = self.index.id(u64::from(bucket)) as usize;
        if i == self.accs.len() {
            self.accs.push(Acc {
                bucket,
                ..Acc::default()
            });
        }
        let a = &mut self.accs[i];
        match a.ops.iter_mut().find(|(o, _)| *o == c.op) {
            Some((_, n)) => *n += 1,
            None => a.ops.push((c.op, 1)),
        }
        let d = c.duration();
        let bytes = match c.bytes() {
            Some(b) => {
                a.sum_bytes += u128::from(b);
                a.sum_dur += i128::from(d);
                i64::try_from(b).unwrap_or(i64::MAX)
            }
            None => NONE,
        };
        let (ready, delay) = if c.ready == i64::MIN {
            (NONE, NONE)
        } else {
            let ready = if c.bwd_start == i64::MIN {
                NONE
            } else {
                c.ready.saturating_sub(c.bwd_start)
            };
            (ready, c.start.saturating_sub(c.ready))
        };
        a.rows.push([bytes, ready, delay, d, c.exposed]);
        a.exposed_total = a.exposed_total.saturating_add(c.exposed);
        a.at.get_or_insert((c.rank, c.step));
    }

    /// The statistics by bucket id, with the skews of the sequence views
    /// computed from the same calls.
    pub fn finish(self, run: &Run, seqs: &[SeqView]) -> Vec<BucketStats> {
        let mut accs = self.accs;
        let mut index = self.index;
        for s in seqs.iter().filter(|s| s.ranks >= 2 && s.bucket != u32::MAX) {
            if let Some(a) = accs.get_mut(index.id(u64::from(s.bucket)) as usize) {
                a.skew.push(s.skew);
            }
        }
        accs.sort_unstable_by_key(|a| a.bucket);
        let mut col: Vec<i64> = Vec::new();
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
                let mut dist = |k: usize| {
                    a.rows.column(k, &mut col);
                    Dist::of_i64(&mut col)
                };
                let bytes_dist = dist(0);
                let bytes = (bytes_dist.n > 0).then(|| bytes_dist.median.round() as u64);
                let ready = dist(1);
                let delay = dist(2);
                let duration = dist(3);
                let exposed = dist(4);
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
                    calls: a.rows.len() as u64,
                    bytes,
                    params,
                    ready_after_backward_start: ready,
                    launch_delay: delay,
                    duration,
                    algbw_bytes_per_s: algbw,
                    busbw_bytes_per_s: algbw.map(|v| v * factor),
                    exposed,
                    exposed_total_ns: a.exposed_total,
                    skew: Dist::of_i64(&mut a.skew),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_widen_when_a_value_needs_64_bits() {
        let mut rows = Rows::default();
        rows.push([4, NONE, 2, 3, 0]);
        rows.push([i64::from(i32::MAX), -5, NONE, 1, 0]);
        assert!(rows.wide.is_empty());
        // i32::MIN stands for "absent" in small rows, so it widens too.
        rows.push([1, i64::from(i32::MIN), 0, 0, 0]);
        assert!(rows.small.is_empty());
        rows.push([1 << 40, 0, 0, 0, i64::MAX]);
        assert_eq!(rows.len(), 4);
        let mut col = Vec::new();
        rows.column(0, &mut col);
        assert_eq!(col, vec![4, i64::from(i32::MAX), 1, 1 << 40]);
        rows.column(1, &mut col);
        assert_eq!(col, vec![-5, i64::from(i32::MIN), 0]);
        rows.column(2, &mut col);
        assert_eq!(col, vec![2, 0, 0]);
        rows.column(4, &mut col);
        assert_eq!(col, vec![0, 0, 0, i64::MAX]);
    }
}
