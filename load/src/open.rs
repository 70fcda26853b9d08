//! What never ended. Spans are recorded when they end, so a rank that hung, crashed or was
//! cut off leaves no record of what it was doing; this module reconstructs it from what the
//! rank did record, for every view to draw ([`Run::open_spans`]):
//!
//! * the collective it waits in: the first `collective_queued` above its last completed
//!   collective (the contract's one rule, [`probe_contract::hang::waits_in`], which the
//!   launcher's hang watchdog and `explain` use too), from when it was queued;
//! * the step it was in: the step after its last complete `step` span, from its earliest
//!   record of that step;
//! * the phase of that step it was in: the one after its last finished phase, in the order
//!   of its previous step's phases (data wait, forward, backward, optimizer when there is
//!   none), from the end of the finished one.
//!
//! Each ends at the end of the recording: the rank's end as the launcher recorded it in the
//! manifest ([`RankTrace::stopped_at`]), else the run's last timestamp. A rank whose trace ends
//! with an `end` record of status `ok` has nothing open.

use std::collections::{BTreeMap, BTreeSet};

use probe_contract::hang::{same_call, waits_in, CollectiveRef};
use serde_json::Value;

use crate::model::{LaneKind, RankTrace, Run};
use crate::trace::SpanKind;

/// A span that began and never ended.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenSpan {
    /// The rank.
    pub rank: u32,
    /// `Step`, a phase (`DataWait`, `Forward`, `Backward`, `Optimizer`) or `Collective`.
    pub kind: SpanKind,
    /// The lane it belongs to (`Compute`, `Data` or `Comm`).
    pub lane: LaneKind,
    /// When it began (ns, rank 0's timeline).
    pub start: i64,
    /// The end of the recording (ns, rank 0's timeline), never before `start`.
    pub end: i64,
    /// The step.
    pub step: Option<u64>,
    /// For a collective: which one.
    pub collective: Option<CollectiveRef>,
}

impl OpenSpan {
    /// What it is, e.g. "all_reduce seq 97 (step 10, bucket 0, 1078956 bytes)" or
    /// "forward of step 10".
    pub fn what(&self) -> String {
        match &self.collective {
            Some(c) => c.to_string(),
            None if self.kind == SpanKind::Step => match self.step {
                Some(s) => format!("step {s}"),
                None => "step".to_owned(),
            },
            None => match self.step {
                Some(s) => format!("{} of step {s}", self.kind.as_str()),
                None => self.kind.as_str().to_owned(),
            },
        }
    }
}

impl OpenSpan {
    /// A short name: "all_reduce seq 97", "backward", "step 10".
    pub fn short(&self) -> String {
        match (&self.collective, self.kind) {
            (Some(c), _) => format!("{} seq {}", c.op.as_deref().unwrap_or("collective"), c.seq),
            (None, SpanKind::Step) => self.what(),
            (None, k) => k.as_str().to_owned(),
        }
    }
}

/// The phases of a step in their usual order, for a rank with no complete step to copy.
const PHASES: [SpanKind; 4] = [
    SpanKind::DataWait,
    SpanKind::Forward,
    SpanKind::Backward,
    SpanKind::Optimizer,
];

impl Run {
    /// Every span that never ended, rank by rank (see the module doc).
    pub fn open_spans(&self) -> Vec<OpenSpan> {
        let last = self.time_range().map_or(0, |(_, b)| b);
        self.ranks
            .iter()
            .flat_map(|r| open_spans_of(self, r, last))
            .collect()
    }

    /// The first collective (by when it was queued) that the ranks of one process group queued
    /// differently at one sequence number: another operation, or another size of one that
    /// needs a single size ([`probe_contract::hang::same_call`]); each rank's call, by rank.
    /// Completed calls count: gloo completes an all-gather of another size on the rank with
    /// the larger input, with wrong data, before the other rank aborts, and NCCL's result is
    /// undefined.
    pub fn first_different_call(&self) -> Option<Vec<(u32, CollectiveRef)>> {
        type Calls = BTreeMap<u64, Vec<(u32, i64, CollectiveRef)>>;
        let mut groups: BTreeMap<u32, Calls> = BTreeMap::new();
        for rank in &self.ranks {
            let group = groups.entry(rank.seq_group()).or_default();
            for (seq, (t, c)) in self.queued_collectives(rank) {
                group.entry(seq).or_default().push((rank.rank(), t, c));
            }
        }
        let differ = |calls: &Vec<(u32, i64, CollectiveRef)>| {
            let (_, _, first) = &calls[0];
            calls.iter().any(|(_, _, c)| {
                !same_call(first.op.as_deref(), first.bytes, c.op.as_deref(), c.bytes)
            })
        };
        let (_, calls) = groups
            .values()
            .filter_map(|g| g.values().find(|calls| calls.len() >= 2 && differ(calls)))
            .map(|calls| (calls.iter().map(|(_, t, _)| *t).min().unwrap_or(0), calls))
            .min_by_key(|(t, _)| *t)?;
        Some(calls.iter().map(|(r, _, c)| (*r, c.clone())).collect())
    }

    /// The collectives `rank` queued (`collective_queued` instants), by `seq`.
    pub fn queued_collectives(&self, rank: &RankTrace) -> BTreeMap<u64, (i64, CollectiveRef)> {
        let mut queued = BTreeMap::new();
        for i in &rank.instants {
            if self.str(i.name) != "collective_queued" {
                continue;
            }
            let Some(Ok(Value::Object(args))) = i.args.map(|a| serde_json::from_str(self.str(a)))
            else {
                continue;
            };
            let Some(seq) = args.get("seq").and_then(Value::as_u64) else {
                continue;
            };
            let c = CollectiveRef {
                seq,
                op: args.get("op").and_then(Value::as_str).map(str::to_owned),
                step: args.get("step").and_then(Value::as_u64).or(i.step),
                bucket: args.get("bucket").and_then(Value::as_u64),
                bytes: args.get("bytes").and_then(Value::as_u64),
                caller: args
                    .get("caller")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            };
            queued.insert(seq, (i.t, c));
        }
        queued
    }
}

/// The `seq` of every collective `rank` completed.
pub fn completed_seqs(rank: &RankTrace) -> BTreeSet<u64> {
    rank.spans_of_kind(SpanKind::Collective)
        .filter_map(|s| s.seq())
        .collect()
}

fn open_spans_of(run: &Run, rank: &RankTrace, run_end: i64) -> Vec<OpenSpan> {
    if rank.end.as_ref().is_some_and(|e| e.status == "ok") {
        return Vec::new();
    }
    let stop = rank.stopped_at.unwrap_or(run_end);
    let open = |kind: SpanKind, lane: LaneKind, start: i64, step: Option<u64>| OpenSpan {
        rank: rank.rank(),
        kind,
        lane,
        start,
        end: stop.max(start),
        step,
        collective: None,
    };
    let mut out = Vec::new();
    let queued = run.queued_collectives(rank);
    let by_seq: BTreeMap<u64, CollectiveRef> =
        queued.iter().map(|(k, v)| (*k, v.1.clone())).collect();
    let waiting = waits_in(&by_seq, &completed_seqs(rank));
    let last_step = rank.steps().filter_map(|s| s.step()).max();
    let next = last_step.map_or(0, |s| s + 1);
    // The records of the step after the last complete one.
    let in_next: Vec<(SpanKind, i64, i64)> = rank
        .spans()
        .filter(|s| s.step() == Some(next) && s.kind() != SpanKind::Step)
        .map(|s| (s.kind(), s.start(), s.end()))
        .collect();
    let first_instant = rank
        .instants
        .iter()
        .filter(|i| i.step == Some(next))
        .map(|i| i.t)
        .min();
    let began = in_next.iter().map(|s| s.1).chain(first_instant).min();
    if let Some(began) = began {
        out.push(open(SpanKind::Step, LaneKind::Compute, began, Some(next)));
        // Its phases in the order of the previous step's, or the usual order.
        let order: Vec<SpanKind> = match last_step {
            Some(prev) => {
                let mut phases: Vec<(i64, SpanKind)> = rank
                    .spans()
                    .filter(|s| s.step() == Some(prev) && PHASES.contains(&s.kind()))
                    .map(|s| (s.start(), s.kind()))
                    .collect();
                phases.sort();
                phases.dedup_by_key(|p| p.1);
                phases.into_iter().map(|p| p.1).collect()
            }
            None => PHASES.to_vec(),
        };
        let done: Vec<&(SpanKind, i64, i64)> =
            in_next.iter().filter(|s| PHASES.contains(&s.0)).collect();
        let last_done = done.iter().max_by_key(|s| s.2);
        let pending = match last_done {
            Some(d) => order
                .iter()
                .position(|k| *k == d.0)
                .and_then(|i| order.get(i + 1))
                .map(|k| (*k, d.2)),
            None => order.first().map(|k| (*k, began)),
        };
        // A rank whose gradient all-reduce of the step failed or is still waited in was in its
        // backward's end (DDP waits there for every bucket), never in the optimizer that comes
        // next (a peer gone: the error was raised out of the backward).
        let buckets_broke = || {
            rank.spans_of_kind(SpanKind::Collective).any(|s| {
                s.step() == Some(next) && s.bucket().is_some() && run.span(rank, s).failed()
            }) || waiting
                .as_ref()
                .is_some_and(|c| c.step == Some(next) && c.bucket.is_some())
        };
        if let Some((kind, start)) = pending {
            let never_reached = kind == SpanKind::Optimizer && buckets_broke();
            if !done.iter().any(|d| d.0 == kind) && !never_reached {
                let lane = if kind == SpanKind::DataWait {
                    LaneKind::Data
                } else {
                    LaneKind::Compute
                };
                out.push(open(kind, lane, start, Some(next)));
            }
        }
    }
    if let Some(c) = waiting {
        let t = queued[&c.seq].0;
        let mut s = open(SpanKind::Collective, LaneKind::Comm, t, c.step);
        s.collective = Some(c);
        out.push(s);
    }
    out
}
