//! Communication statistics: nccl-tests bandwidths, per-operation totals and
//! the per-sequence-number view across ranks.
//!
//! Bandwidths follow nccl-tests (`doc/PERFORMANCE.md`): the **algorithm
//! bandwidth** is `algbw = bytes / time`, and the **bus bandwidth**
//! `busbw = algbw × factor` corrects it for the number of ranks `n` so that
//! it compares with link speeds: all-reduce `2(n−1)/n`, reduce-scatter,
//! all-gather (and all-to-all, gather, scatter) `(n−1)/n`, broadcast,
//! reduce, send and receive `1`.

use serde::{Deserialize, Serialize};

use super::group::IdMap;
use super::scan::{CollObs, WindowCalls};
use super::stats::{Dist, Samples};
use crate::model::{Run, Sym};
use crate::trace::op;

/// The nccl-tests bus-bandwidth factor of operation `op_name` among `n`
/// ranks (see the module documentation); `1` for operations it does not
/// define, and for every operation when `n < 2` would give a factor of 0.
pub fn bus_factor(op_name: &str, n: u32) -> f64 {
    let n = f64::from(n.max(1));
    let f = match op_name {
        op::ALL_REDUCE => 2.0 * (n - 1.0) / n,
        op::REDUCE_SCATTER | op::ALL_GATHER | op::ALL_TO_ALL | op::GATHER | op::SCATTER => {
            (n - 1.0) / n
        }
        _ => 1.0,
    };
    if f > 0.0 {
        f
    } else {
        1.0
    }
}

/// What busbw is algbw times for operation `op_name` among `n` ranks: [`bus_factor`], or `None`
/// for one rank, where nothing crosses a bus (nccl-tests' factor is 0) and no busbw is given.
/// ([`bus_factor`] itself stays 1 there, as the cost model divides by it.)
pub fn busbw_factor(op_name: &str, n: u32) -> Option<f64> {
    (n > 1).then(|| bus_factor(op_name, n))
}

/// Statistics of one collective operation (`op`) over the steady steps,
/// every call of every rank counted once.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpStats {
    /// The operation (`"unknown"` for collectives without `op`).
    pub op: String,
    /// Number of calls (all ranks).
    pub calls: u64,
    /// Calls that carry a byte count.
    pub calls_with_bytes: u64,
    /// Sum of the calls' bytes.
    pub bytes_total: u64,
    /// `bytes_total / calls_with_bytes`.
    pub bytes_mean: f64,
    /// Sum of the calls' durations (ns), waiting for late ranks included.
    pub latency_total_ns: i64,
    /// Durations of the calls (ns).
    pub latency: Dist,
    /// Algorithm bandwidth: total bytes over the total duration of the
    /// calls that carry bytes (bytes/s); `None` without bytes or time.
    pub algbw_bytes_per_s: Option<f64>,
    /// `algbw × bus_factor` (bytes/s).
    pub busbw_bytes_per_s: Option<f64>,
    /// The nccl-tests factor used for `busbw`: for the ranks of DDP's process group, or of the
    /// world for the calls outside it (by their bytes, where DDP reduces over a subgroup and
    /// the program's own calls span the world).
    pub bus_factor: f64,
}

/// Per-operation accumulators, fed one call at a time.
#[derive(Default)]
pub(crate) struct OpTable {
    ops: Vec<OpAcc>,
}

struct OpAcc {
    op: Option<Sym>,
    with_bytes: u64,
    bytes_total: u64,
    dur_with_bytes: i64,
    dur_total: i64,
    latencies: Samples,
    /// Bytes of the calls on a DDP process group smaller than the world (the
    /// sequence-numbered calls of a rank whose DDP reduces over a subgroup).
    sub_bytes: u64,
    /// The largest such group's size.
    sub_ranks: u32,
}

impl OpTable {
    /// Counts the calls of a window.
    pub fn add(&mut self, w: &WindowCalls<'_, '_>) {
        let sub_ranks = w.trace.ddp_group().map(|g| g.len() as u32);
        for c in w.calls {
            self.add_call(c, sub_ranks.filter(|_| c.span.seq().is_some()));
        }
    }

    #[inline]
    fn add_call(&mut self, c: &CollObs<'_>, sub_ranks: Option<u32>) {
        let op = c.span.op();
        let i = match self.ops.iter().position(|a| a.op == op) {
            Some(i) => i,
            None => {
                self.ops.push(OpAcc {
                    op,
                    with_bytes: 0,
                    bytes_total: 0,
                    dur_with_bytes: 0,
                    dur_total: 0,
                    latencies: Samples::default(),
                    sub_bytes: 0,
                    sub_ranks: 0,
                });
                self.ops.len() - 1
            }
        };
        let a = &mut self.ops[i];
        let d = c.duration;
        a.dur_total = a.dur_total.saturating_add(d);
        a.latencies.push(d);
        if let Some(b) = c.span.bytes() {
            a.with_bytes += 1;
            a.bytes_total = a.bytes_total.saturating_add(b);
            a.dur_with_bytes = a.dur_with_bytes.saturating_add(d);
            if let Some(n) = sub_ranks {
                a.sub_bytes = a.sub_bytes.saturating_add(b);
                a.sub_ranks = a.sub_ranks.max(n);
            }
        }
    }

    /// The statistics, most total time first.
    pub fn finish(self, run: &Run) -> Vec<OpStats> {
        let mut out: Vec<OpStats> = self
            .ops
            .into_iter()
            .map(|mut a| {
                let name = a.op.map_or("unknown", |s| run.str(s)).to_owned();
                // The calls on a DDP subgroup move data among its ranks, the others among the
                // world's: the factor weighs each by its bytes.
                let sub = if a.bytes_total > 0 {
                    a.sub_bytes as f64 / a.bytes_total as f64
                } else {
                    0.0
                };
                let mix = |f: &dyn Fn(u32) -> Option<f64>| match (sub > 0.0, sub < 1.0) {
                    (true, true) => Some(
                        sub * f(a.sub_ranks).unwrap_or(0.0)
                            + (1.0 - sub) * f(run.world_size).unwrap_or(0.0),
                    )
                    .filter(|&v| v > 0.0),
                    (true, false) => f(a.sub_ranks),
                    _ => f(run.world_size),
                };
                let factor = mix(&|n| Some(bus_factor(&name, n))).unwrap_or(1.0);
                let algbw = (a.with_bytes > 0 && a.dur_with_bytes > 0)
                    .then(|| a.bytes_total as f64 / (a.dur_with_bytes as f64 / 1e9));
                OpStats {
                    calls: a.latencies.len() as u64,
                    calls_with_bytes: a.with_bytes,
                    bytes_total: a.bytes_total,
                    bytes_mean: if a.with_bytes > 0 {
                        a.bytes_total as f64 / a.with_bytes as f64
                    } else {
                        0.0
                    },
                    latency_total_ns: a.dur_total,
                    latency: a.latencies.dist(),
                    algbw_bytes_per_s: algbw,
                    busbw_bytes_per_s: mix(&|n| busbw_factor(&name, n))
                        .and_then(|f| algbw.map(|v| v * f)),
                    bus_factor: factor,
                    op: name,
                }
            })
            .collect();
        out.sort_by(|a, b| {
            b.latency_total_ns
                .cmp(&a.latency_total_ns)
                .then(a.op.cmp(&b.op))
        });
        out
    }
}

/// One collective (one sequence number of one DDP process group) seen across ranks.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SeqView {
    /// The process group's key ([`RankTrace::seq_group`](crate::model::RankTrace::seq_group):
    /// 0 for the whole world).
    pub group: u32,
    /// Calls recorded with it (one per rank normally).
    pub ranks: u32,
    /// Latest start − earliest start (ns).
    pub skew: i64,
    /// The rank with the latest start, `None` when two or more share it
    /// or only one rank recorded it.
    pub last: Option<u32>,
    /// Σ over the other calls of (latest start − their start) (ns).
    pub wait: i64,
    /// Step number (`u32::MAX` when unknown) of the first call.
    pub step: u32,
    /// Bucket id of the first call (`u32::MAX` when absent).
    pub bucket: u32,
    /// The collective's own time: the shortest duration across the ranks
    /// (the last to arrive waits for nobody) (ns).
    pub transfer: i64,
    /// Σ over the calls of their duration (ns).
    pub total: i64,
    /// Σ over the calls of (duration − transfer): time spent waiting for the
    /// last rank inside the collective (ns).
    pub waiting: i64,
    /// Σ over the calls of their exposed part (not overlapped by compute).
    pub exposed: i64,
    /// The part of `exposed` that was waiting: a call's exposed part is its
    /// end (DDP's tail after backward), and its end is the transfer, so per
    /// call `exposed − min(exposed, transfer)`, here from the calls' mean.
    pub exposed_waiting: i64,
}

/// What the cost model needs of the call that started last (the first of
/// them on a tie): its duration is the collective's own time, without
/// waiting for others.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LastCall {
    pub duration: i64,
    pub bytes: u64,
    pub op: Option<Sym>,
    pub transport: Option<Sym>,
    /// Whether no compute of its rank ran while it did (its exposed part
    /// is the whole call): its time is the transport's alone, without
    /// contention for the CPU or the GPU.
    pub alone: bool,
    /// The span's name (the calibration's calls have one).
    pub name: Option<Sym>,
    /// Whether its rank computed during the whole call (none of it exposed).
    pub overlapped: bool,
}

/// What a [`SeqTable`] keeps of the call that started last: nothing (`()`,
/// for the summary) or a [`LastCall`] (for the cost model).
pub(crate) trait KeepLast: Copy {
    /// The value before any call.
    const NONE: Self;
    /// The value kept of call `c` of window `w`.
    fn of<'a>(c: &CollObs<'a>, w: &WindowCalls<'a, '_>) -> Self;
}

impl KeepLast for () {
    const NONE: () = ();
    #[inline]
    fn of<'a>(_: &CollObs<'a>, _: &WindowCalls<'a, '_>) {}
}

impl KeepLast for LastCall {
    const NONE: LastCall = LastCall {
        duration: 0,
        bytes: u64::MAX,
        op: None,
        transport: None,
        alone: false,
        name: None,
        overlapped: false,
    };
    #[inline]
    fn of<'a>(c: &CollObs<'a>, w: &WindowCalls<'a, '_>) -> LastCall {
        LastCall {
            duration: c.duration,
            bytes: c.span.bytes().unwrap_or(u64::MAX),
            op: c.span.op(),
            transport: w.transport(c),
            alone: c.exposed >= c.duration,
            name: c.span.name(),
            overlapped: c.exposed == 0 && c.duration > 0,
        }
    }
}

/// Per-sequence-number accumulators, fed one call at a time (calls without
/// `seq` are ignored), keeping `L` of each sequence number's last call. Each DDP
/// process group numbers its own collectives: a sequence number matches across
/// the ranks of one group only ([`RankTrace::seq_group`](crate::model::RankTrace::seq_group)).
pub(crate) struct SeqTable<L: KeepLast = ()> {
    /// The ids of the (group, sequence number) keys ([`seq_key`]).
    index: IdMap,
    accs: Vec<SeqAcc<L>>,
}

impl<L: KeepLast> Default for SeqTable<L> {
    fn default() -> SeqTable<L> {
        SeqTable {
            index: IdMap::default(),
            accs: Vec::new(),
        }
    }
}

/// One key for sequence number `seq` of the DDP process group with key `group`: the number
/// itself for group 0 (the whole world, or the group of rank 0), so that the usual run's keys
/// stay dense; a group's key in the bits above the 48 of the number otherwise (2^48 collectives
/// would take nine years at one a microsecond).
fn seq_key(group: u32, seq: u64) -> u64 {
    if group == 0 {
        seq
    } else {
        (u64::from(group) << 48) | (seq & ((1 << 48) - 1))
    }
}

#[derive(Clone, Copy)]
struct SeqAcc<L> {
    group: u32,
    seq: u64,
    first: i64,
    lo: i64,
    hi: i64,
    /// Σ (start − first).
    sum: i64,
    n: u32,
    hi_count: u32,
    rank_of_hi: u32,
    step: u32,
    bucket: u32,
    last: L,
    /// Shortest duration.
    min_dur: i64,
    /// Σ duration.
    sum_dur: i64,
    /// Σ exposed.
    sum_exposed: i64,
    /// The latest end.
    last_end: i64,
}

impl<L: KeepLast> SeqAcc<L> {
    fn view(&self) -> SeqView {
        let n = i64::from(self.n.max(1));
        let transfer = if self.n == 0 { 0 } else { self.min_dur.max(0) };
        let exposed_mean = self.sum_exposed / n;
        SeqView {
            group: self.group,
            transfer,
            total: self.sum_dur,
            waiting: self
                .sum_dur
                .saturating_sub(n.saturating_mul(transfer))
                .max(0),
            exposed: self.sum_exposed,
            exposed_waiting: n.saturating_mul(exposed_mean - exposed_mean.min(transfer)),
            ranks: self.n,
            skew: self.hi.saturating_sub(self.lo),
            last: (self.hi_count == 1 && self.n >= 2).then_some(self.rank_of_hi),
            wait: i64::from(self.n)
                .saturating_mul(self.hi.saturating_sub(self.first))
                .saturating_sub(self.sum)
                .max(0),
            step: self.step,
            bucket: self.bucket,
        }
    }
}

impl<L: KeepLast> SeqTable<L> {
    /// Counts the calls of a window.
    pub fn add(&mut self, w: &WindowCalls<'_, '_>) {
        let group = w.trace.seq_group();
        for c in w.calls {
            self.add_call(c, w, group);
        }
    }

    #[inline]
    fn add_call<'a>(&mut self, c: &CollObs<'a>, w: &WindowCalls<'a, '_>, group: u32) {
        let Some(seq) = c.span.seq() else { return };
        let start = c.span.start();
        let i = self.index.id(seq_key(group, seq)) as usize;
        if i == self.accs.len() {
            self.accs.push(SeqAcc {
                group,
                seq,
                first: start,
                lo: start,
                hi: i64::MIN,
                sum: 0,
                n: 0,
                hi_count: 0,
                rank_of_hi: w.rank,
                step: w.step,
                bucket: c.span.bucket().unwrap_or(u32::MAX),
                last: L::NONE,
                min_dur: i64::MAX,
                sum_dur: 0,
                sum_exposed: 0,
                last_end: i64::MIN,
            });
        }
        let a = &mut self.accs[i];
        a.n += 1;
        a.min_dur = a.min_dur.min(c.duration);
        a.sum_dur = a.sum_dur.saturating_add(c.duration);
        a.sum_exposed = a.sum_exposed.saturating_add(c.exposed);
        a.lo = a.lo.min(start);
        a.last_end = a.last_end.max(start.saturating_add(c.duration));
        a.sum = a.sum.saturating_add(start.saturating_sub(a.first));
        if start > a.hi {
            a.hi = start;
            a.hi_count = 1;
            a.rank_of_hi = w.rank;
            a.last = L::of(c, w);
        } else if start == a.hi {
            a.hi_count += 1;
        }
    }

    /// The sequence numbers seen, in order (by group, then sequence number).
    pub fn finish(self) -> Seqs<L> {
        let mut accs = self.accs;
        // Usually sorted already: the first rank's calls come in order.
        accs.sort_unstable_by_key(|a| (a.group, a.seq));
        Seqs { accs }
    }
}

/// The sequence numbers of a finished [`SeqTable`], in order; their views
/// are computed as they are read (nothing more is stored per sequence
/// number).
pub(crate) struct Seqs<L: KeepLast = ()> {
    accs: Vec<SeqAcc<L>>,
}

impl<L: KeepLast> Seqs<L> {
    /// The views, in sequence order (each group's in turn).
    pub fn views(&self) -> impl Iterator<Item = SeqView> + Clone + '_ {
        self.accs.iter().map(SeqAcc::view)
    }

    /// Per rank: the time its `calls` (rank, group key
    /// ([`RankTrace::seq_group`](crate::model::RankTrace::seq_group)), sequence
    /// number, duration) waited inside collectives for the last rank (Σ duration
    /// − transfer over its calls of sequence numbers that two or more ranks
    /// recorded) and those calls' Σ duration, in rank order.
    pub fn waiting_by_rank(&self, calls: &[(u32, u32, u64, i64)]) -> Vec<(u32, i64, i64)> {
        let mut by_rank: Vec<(u32, i64, i64)> = Vec::new();
        for &(rank, group, seq, dur) in calls {
            let key = (group, seq);
            let Ok(i) = self.accs.binary_search_by_key(&key, |a| (a.group, a.seq)) else {
                continue;
            };
            let a = &self.accs[i];
            if a.n < 2 {
                continue;
            }
            let wait = dur.saturating_sub(a.min_dur).max(0);
            match by_rank.binary_search_by_key(&rank, |r| r.0) {
                Ok(k) => {
                    by_rank[k].1 = by_rank[k].1.saturating_add(wait);
                    by_rank[k].2 = by_rank[k].2.saturating_add(dur.max(0));
                }
                Err(k) => by_rank.insert(k, (rank, wait, dur.max(0))),
            }
        }
        by_rank
    }

    /// The views with what was kept of each one's last call and the time from its last
    /// start to its last end (the call as a whole: a chain of calls advances by it), in
    /// sequence order.
    pub fn with_last(&self) -> impl Iterator<Item = (SeqView, L, i64)> + '_ {
        self.accs
            .iter()
            .map(|a| (a.view(), a.last, a.last_end.saturating_sub(a.hi).max(0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nccl_tests_factors() {
        assert_eq!(bus_factor("all_reduce", 2), 1.0);
        assert_eq!(bus_factor("all_reduce", 4), 1.5);
        assert_eq!(bus_factor("all_gather", 4), 0.75);
        assert_eq!(bus_factor("reduce_scatter", 2), 0.5);
        assert_eq!(bus_factor("broadcast", 8), 1.0);
        assert_eq!(bus_factor("reduce", 8), 1.0);
        assert_eq!(bus_factor("all_reduce", 1), 1.0);
        assert_eq!(bus_factor("my_op", 4), 1.0);
    }
}
