//! The hang report: what each rank waits in, read from the tail of its trace.
//!
//! A rank's trace (`traces/rank-<R>.jsonl`) is JSON Lines. This module relies
//! only on these records:
//!
//! * collective spans: `{"type":"span","kind":"collective","op":..,"step":..,"seq":..,"bucket":..,"bytes":..}`
//! * step spans: `{"type":"span","kind":"step","step":..}`
//! * queued collectives: `{"type":"instant","name":"collective_queued","step":..,"args":{"seq":..,"op":..,"bucket":..,"bytes":..}}`
//!
//! A rank *waits in* the first queued collective above its last completed
//! `seq` (collectives complete in order, so a rank that queued several, as
//! DDP does with its buckets, is blocked in the first); failing that, the
//! highest queued `seq` that has no collective span. The ranks *behind* are those that got the
//! least far (lowest last completed `seq`, then highest queued `seq`, then
//! step): the others wait for them. Only the last [`TRACE_TAIL_BYTES`] of a
//! file are read, and a cut or garbled line is skipped.
//!
//! Where DDP reduces over process groups smaller than the world (the header's
//! `ddp.group_ranks`, read from the file's first line), each group numbers its
//! own collectives: the ranks behind are found in each group on its own.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::termination::Termination;

/// How much of the end of a trace file is read.
pub const TRACE_TAIL_BYTES: u64 = 64 * 1024;

/// How much of the start of a trace file is read for its header (a header with a parameter
/// table of some thousands of tensors fits).
const HEADER_BYTES: u64 = 4 << 20;

/// A header's `ddp.group_ranks` (empty when absent).
fn group_ranks(header: &serde_json::Map<String, Value>) -> Vec<u32> {
    header
        .get("ddp")
        .and_then(|d| d.get("group_ranks"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_u64().and_then(|r| u32::try_from(r).ok()))
                .collect()
        })
        .unwrap_or_default()
}

/// One collective operation, identified by its sequence number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectiveRef {
    /// The collective's sequence number (the same on every rank).
    pub seq: u64,
    /// The operation, e.g. `all_reduce`.
    pub op: Option<String>,
    /// The training step it belongs to.
    pub step: Option<u64>,
    /// The DDP bucket it reduces.
    pub bucket: Option<u64>,
    /// Its payload in bytes.
    pub bytes: Option<u64>,
    /// Where the program called it (a collective of the program's own, recorded by the
    /// PyTorch module: `train.py:42 in main`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
}

impl fmt::Display for CollectiveRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} seq {}",
            self.op.as_deref().unwrap_or("collective"),
            self.seq
        )?;
        let mut details = Vec::new();
        if let Some(step) = self.step {
            details.push(format!("step {step}"));
        }
        if let Some(bucket) = self.bucket {
            details.push(format!("bucket {bucket}"));
        }
        if let Some(bytes) = self.bytes {
            details.push(format!("{bytes} bytes"));
        }
        if !details.is_empty() {
            write!(f, " ({})", details.join(", "))?;
        }
        if let Some(caller) = &self.caller {
            write!(f, " from {}", clip(caller, 240))?;
        }
        Ok(())
    }
}

/// The operations whose every rank passes a tensor of the same size (what the PyTorch module
/// records as a call's bytes: the all-reduced, broadcast or reduced tensor, an all-gather's or a
/// reduce-scatter's input). An all-to-all's splits may differ by rank, and the object
/// collectives record no size.
pub const SAME_SIZE_ON_EVERY_RANK: [&str; 7] = [
    "all_reduce",
    "broadcast",
    "reduce",
    "all_gather",
    "all_gather_into_tensor",
    "reduce_scatter",
    "reduce_scatter_tensor",
];

/// Whether two ranks' collectives of one sequence number are the same call: the same
/// operation and, for one of [`SAME_SIZE_ON_EVERY_RANK`] whose size both recorded, the same
/// size. (gloo aborts on an all-gather whose inputs differ in size, "Received data size doesn't
/// match expected size", after the rank with the larger input completed it with wrong data.)
pub fn same_call(
    a_op: Option<&str>,
    a_bytes: Option<u64>,
    b_op: Option<&str>,
    b_bytes: Option<u64>,
) -> bool {
    a_op == b_op
        && (!a_op.is_some_and(|op| SAME_SIZE_ON_EVERY_RANK.contains(&op))
            || a_bytes.is_none()
            || b_bytes.is_none()
            || a_bytes == b_bytes)
}

/// How the ranks' waits compare when every rank waits in a collective of one sequence number
/// ([`HangReport::shared_wait`]).
#[derive(Debug, PartialEq, Eq)]
pub enum SharedWait<'a> {
    /// The same call on every rank: the collective itself is stuck.
    Same(&'a CollectiveRef),
    /// Different calls at one sequence number (`broadcast` on rank 0, `barrier` on rank 1):
    /// the ranks' code took different paths. Each rank with its call.
    Different(Vec<(usize, &'a CollectiveRef)>),
}

/// Whether the ranks' calls differ in their operation (not only in size).
pub fn ops_differ(calls: &[(usize, &CollectiveRef)]) -> bool {
    calls.windows(2).any(|w| w[0].1.op != w[1].1.op)
}

/// "rank 0: broadcast, rank 1: barrier"; the sizes too when the operations agree
/// ("rank 0: all_reduce 4 bytes, rank 1: all_reduce 1048576 bytes").
pub fn different_calls(waits: &[(usize, &CollectiveRef)]) -> String {
    let ops_differ = ops_differ(waits);
    waits
        .iter()
        .map(|(rank, c)| {
            let op = c.op.as_deref().unwrap_or("collective");
            match c.bytes.filter(|_| !ops_differ) {
                Some(b) => format!("rank {rank}: {op} {b} bytes"),
                None => format!("rank {rank}: {op}"),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the tail of one rank's trace says.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceTail {
    /// JSON records parsed from the tail.
    pub records: usize,
    /// The highest step of any record.
    pub last_step: Option<u64>,
    /// The highest step with a completed step span.
    pub last_completed_step: Option<u64>,
    /// The completed collective with the highest `seq`.
    pub last_completed: Option<CollectiveRef>,
    /// The collective the rank waits in, if any.
    pub waiting_in: Option<CollectiveRef>,
    /// The status of the trace's `end` record, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_status: Option<String>,
    /// The ranks of the process group DDP reduces over, when the header names one smaller than
    /// the world (`ddp.group_ranks`); empty for the whole world.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub group: Vec<u32>,
}

impl TraceTail {
    /// Summarises JSON Lines text; lines that are not JSON objects are skipped.
    pub fn from_lines(text: &str) -> TraceTail {
        let mut tail = TraceTail::default();
        let mut completed: BTreeSet<u64> = BTreeSet::new();
        let mut queued: BTreeMap<u64, CollectiveRef> = BTreeMap::new();
        for line in text.lines() {
            let Ok(Value::Object(record)) = serde_json::from_str::<Value>(line.trim()) else {
                continue;
            };
            tail.records += 1;
            let step = record.get("step").and_then(Value::as_u64);
            if let Some(step) = step {
                tail.last_step = Some(tail.last_step.map_or(step, |s| s.max(step)));
            }
            let field = |k: &str| record.get(k).and_then(Value::as_str);
            match (field("type"), field("kind"), field("name")) {
                (Some("span"), Some("collective"), _) => {
                    let Some(seq) = record.get("seq").and_then(Value::as_u64) else {
                        continue;
                    };
                    // A collective that failed (`"args":{"error":true}`, the PyTorch
                    // module's record of a future that raised) was waited in, not completed.
                    if record
                        .get("args")
                        .and_then(|a| a.get("error"))
                        .and_then(Value::as_bool)
                        == Some(true)
                    {
                        continue;
                    }
                    completed.insert(seq);
                    if tail.last_completed.as_ref().is_none_or(|c| seq >= c.seq) {
                        tail.last_completed = Some(collective(seq, &record, step));
                    }
                }
                (Some("span"), Some("step"), _) => {
                    if let Some(step) = step {
                        tail.last_completed_step =
                            Some(tail.last_completed_step.map_or(step, |s| s.max(step)));
                    }
                }
                (Some("instant"), _, Some("collective_queued")) => {
                    let Some(Value::Object(args)) = record.get("args") else {
                        continue;
                    };
                    let Some(seq) = args.get("seq").and_then(Value::as_u64) else {
                        continue;
                    };
                    queued.insert(seq, collective(seq, args, step));
                }
                (Some("end"), _, _) => tail.end_status = field("status").map(str::to_owned),
                (Some("header"), _, _) => tail.group = group_ranks(&record),
                _ => {}
            }
        }
        tail.waiting_in = waits_in(&queued, &completed);
        tail
    }

    /// Reads and summarises the last [`TRACE_TAIL_BYTES`] of a trace file.
    pub fn read(path: &Path) -> io::Result<TraceTail> {
        TraceTail::read_last(path, TRACE_TAIL_BYTES)
    }

    /// Reads and summarises the last `max_bytes` of a trace file (the first,
    /// probably cut, line of that window is skipped).
    pub fn read_last(path: &Path, max_bytes: u64) -> io::Result<TraceTail> {
        let mut file = File::open(path)?;
        let len = file.metadata()?.len();
        let start = len.saturating_sub(max_bytes);
        file.seek(SeekFrom::Start(start))?;
        let mut bytes = Vec::with_capacity((len - start) as usize);
        file.by_ref().take(max_bytes).read_to_end(&mut bytes)?;
        let mut text = &bytes[..];
        if start > 0 {
            // The first line is probably cut: skip past its end.
            match text.iter().position(|&b| b == b'\n') {
                Some(i) => text = &text[i + 1..],
                None => text = &[],
            }
        }
        let mut tail = TraceTail::from_lines(&String::from_utf8_lossy(text));
        if start > 0 {
            // The header is the file's first line, outside the window.
            file.seek(SeekFrom::Start(0))?;
            let mut head = Vec::new();
            file.take(HEADER_BYTES).read_to_end(&mut head)?;
            if let Some(end) = head.iter().position(|&b| b == b'\n') {
                if let Ok(Value::Object(header)) = serde_json::from_slice::<Value>(&head[..end]) {
                    tail.group = group_ranks(&header);
                }
            }
        }
        Ok(tail)
    }

    /// The key its DDP process group's ranks share ([`crate::trace::group_key`]).
    fn group_key(&self) -> u32 {
        crate::trace::group_key(&self.group)
    }

    /// The order in which ranks got along: lower means further behind.
    fn position(&self) -> (Option<u64>, Option<u64>, Option<u64>) {
        (
            self.last_completed.as_ref().map(|c| c.seq),
            self.waiting_in.as_ref().map(|c| c.seq),
            self.last_step,
        )
    }
}

/// The collective a rank waits in, from the collectives it queued (by
/// `seq`) and the `seq`s it completed: the first queued one above the last
/// completed one (collectives complete in order, so a rank that queued
/// several, as DDP does with its buckets, is blocked in the first); failing
/// that, the highest queued one that never completed. The one rule the
/// launcher's hang watchdog and the diagnosis both use.
pub fn waits_in<T: Clone>(queued: &BTreeMap<u64, T>, completed: &BTreeSet<u64>) -> Option<T> {
    let last = completed.last().copied();
    queued
        .iter()
        .find(|(seq, _)| last.is_none_or(|l| **seq > l))
        .or_else(|| {
            queued
                .iter()
                .rev()
                .find(|(seq, _)| !completed.contains(seq))
        })
        .map(|(_, c)| c.clone())
}

fn collective(
    seq: u64,
    fields: &serde_json::Map<String, Value>,
    step: Option<u64>,
) -> CollectiveRef {
    CollectiveRef {
        seq,
        op: fields.get("op").and_then(Value::as_str).map(str::to_owned),
        step: fields.get("step").and_then(Value::as_u64).or(step),
        bucket: fields.get("bucket").and_then(Value::as_u64),
        bytes: fields.get("bytes").and_then(Value::as_u64),
        caller: fields
            .get("caller")
            .and_then(Value::as_str)
            .map(str::to_owned),
    }
}

/// One rank's state when the hang was detected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankHangState {
    /// The global rank.
    pub rank: usize,
    /// How it had ended, if it had (a rank that exited early can be the one
    /// the others wait for).
    pub ended: Option<Termination>,
    /// Seconds since its last progress (output or trace growth).
    pub idle_s: f64,
    /// Its trace file, relative to the run directory.
    pub trace: String,
    /// What the tail of its trace says; absent when it has no trace file.
    pub trace_tail: Option<TraceTail>,
    /// The last line it printed (console-safe), if any.
    pub last_output: Option<String>,
}

/// Why the watchdog stopped a run, per rank.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HangReport {
    /// The hang timeout in seconds.
    pub timeout_s: f64,
    /// Local time the hang was detected, RFC 3339.
    pub detected_at: String,
    /// The ranks the others wait for (empty when the traces do not tell).
    pub behind: Vec<usize>,
    /// Every rank of this node, and the ranks whose traces are in the run directory without
    /// being started by the launcher (started by a rank: `torch.multiprocessing.spawn`).
    pub ranks: Vec<RankHangState>,
}

impl HangReport {
    /// Builds the report and works out which ranks are behind.
    pub fn new(timeout_s: f64, detected_at: String, ranks: Vec<RankHangState>) -> HangReport {
        let behind = ranks_behind(&ranks);
        HangReport {
            timeout_s,
            detected_at,
            behind,
            ranks,
        }
    }

    /// Whether the traces name more than one DDP process group (each numbers its own
    /// collectives: a sequence number means nothing across groups).
    pub fn several_groups(&self) -> bool {
        let mut keys = self
            .ranks
            .iter()
            .filter_map(|r| r.trace_tail.as_ref().map(TraceTail::group_key));
        keys.next().is_some_and(|first| keys.any(|k| k != first))
    }

    /// When every rank has a trace and waits in a collective, all of one sequence number (of
    /// one DDP process group):
    /// whether they wait in the same call or in different ones.
    pub fn shared_wait(&self) -> Option<SharedWait<'_>> {
        if self.several_groups() {
            return None;
        }
        let waits: Vec<(usize, &CollectiveRef)> = self
            .ranks
            .iter()
            .map(|r| Some((r.rank, r.trace_tail.as_ref()?.waiting_in.as_ref()?)))
            .collect::<Option<_>>()?;
        let (_, first) = *waits.first()?;
        if waits.iter().any(|(_, c)| c.seq != first.seq) {
            return None;
        }
        let alike = |c: &CollectiveRef| {
            same_call(first.op.as_deref(), first.bytes, c.op.as_deref(), c.bytes)
        };
        Some(if waits.iter().all(|(_, c)| alike(c)) {
            SharedWait::Same(first)
        } else {
            SharedWait::Different(waits)
        })
    }

    /// The report as a few human-readable lines (no trailing newline).
    pub fn render(&self) -> String {
        let mut out = format!(
            "hang: no rank made progress for {:.1} s (hang timeout)",
            self.timeout_s
        );
        let traced: Vec<&RankHangState> = self
            .ranks
            .iter()
            .filter(|r| r.trace_tail.is_some())
            .collect();
        if !self.behind.is_empty() {
            let names: Vec<String> = self.behind.iter().map(|r| r.to_string()).collect();
            let (who, verb) = if names.len() == 1 {
                (format!("rank {}", names[0]), "is")
            } else {
                (format!("ranks {}", names.join(", ")), "are")
            };
            let _ = write!(out, "\n{who} {verb} behind: the other ranks wait for it");
            if self.several_groups() {
                out.push_str(" (each DDP process group's ranks compared with each other)");
            }
            let others: Vec<Option<&CollectiveRef>> = self
                .ranks
                .iter()
                .filter(|r| !self.behind.contains(&r.rank))
                .map(|r| r.trace_tail.as_ref().and_then(|t| t.waiting_in.as_ref()))
                .collect();
            if let Some(Some(c)) = others.first().filter(|_| !self.several_groups()) {
                if others.iter().all(|o| o.map(|x| x.seq) == Some(c.seq)) {
                    let _ = write!(out, " in {c}, which it has not started");
                }
            }
        } else if traced.len() == self.ranks.len() && !traced.is_empty() {
            match self.shared_wait() {
                Some(SharedWait::Same(_)) => out.push_str(
                    "\nall ranks wait in the same collective: the collective itself is stuck (check the network and the NCCL logs)",
                ),
                Some(SharedWait::Different(waits)) => {
                    let _ = write!(
                        out,
                        "\nthe ranks wait at one point (seq {}) in different collectives ({}): \
                         their code took different paths, such as a collective inside `if rank \
                         == 0:` or a forward of the DDP model (its buffer broadcast) on some \
                         ranks only; `ddp-probe explain` says where each rank was",
                        waits[0].1.seq,
                        different_calls(&waits)
                    );
                }
                None => out.push_str("\nall ranks got equally far; none is behind"),
            }
        } else if traced.is_empty() {
            out.push_str("\nno rank wrote a trace, so what they wait in is unknown");
        }
        for r in &self.ranks {
            let _ = write!(out, "\n  rank {}: ", r.rank);
            if let Some(end) = &r.ended {
                let _ = write!(out, "{end}; ");
            }
            match &r.trace_tail {
                None => out.push_str("no trace"),
                Some(t) => {
                    match t.last_step {
                        Some(s) => {
                            let _ = write!(out, "step {s}");
                        }
                        None => out.push_str("no step yet"),
                    }
                    match &t.last_completed {
                        Some(c) => {
                            let _ = write!(out, ", last completed seq {}", c.seq);
                        }
                        None => out.push_str(", no completed collective"),
                    }
                    match &t.waiting_in {
                        Some(c) => {
                            let _ = write!(out, ", waiting in {c}");
                        }
                        None => out.push_str(", not in a collective"),
                    }
                }
            }
            let _ = write!(out, ", idle {:.1} s", r.idle_s);
            if let Some(line) = &r.last_output {
                let _ = write!(out, ", last output: {}", clip(line, 120));
            }
        }
        out
    }
}

fn clip(s: &str, max_chars: usize) -> String {
    if s.chars().count() <= max_chars {
        s.to_owned()
    } else {
        let mut c: String = s.chars().take(max_chars).collect();
        c.push('…');
        c
    }
}

/// The ranks with the lowest position, when some rank has a trace and not all
/// are equally far. A rank without a trace counts as furthest behind. Where DDP
/// reduces over subgroups, each group's ranks are compared with each other (a
/// rank without a trace with every group).
fn ranks_behind(ranks: &[RankHangState]) -> Vec<usize> {
    let key = |r: &RankHangState| r.trace_tail.as_ref().map(TraceTail::group_key);
    let mut groups: Vec<u32> = ranks.iter().filter_map(key).collect();
    groups.sort_unstable();
    groups.dedup();
    if groups.len() > 1 {
        let mut behind: Vec<usize> = Vec::new();
        for g in groups {
            let members: Vec<RankHangState> = ranks
                .iter()
                .filter(|r| key(r).is_none_or(|k| k == g))
                .cloned()
                .collect();
            behind.extend(ranks_behind_among(&members));
        }
        behind.sort_unstable();
        behind.dedup();
        return behind;
    }
    ranks_behind_among(ranks)
}

/// [`ranks_behind`] among ranks of one sequence of collectives.
fn ranks_behind_among(ranks: &[RankHangState]) -> Vec<usize> {
    if ranks.iter().all(|r| r.trace_tail.is_none()) {
        return Vec::new();
    }
    let positions: Vec<(usize, _)> = ranks
        .iter()
        .map(|r| {
            (
                r.rank,
                r.trace_tail
                    .as_ref()
                    .map(TraceTail::position)
                    .unwrap_or((None, None, None)),
            )
        })
        .collect();
    // Every rank (none of them ended) waits in a collective of one sequence number: they got
    // equally far in the order of collectives, whatever their step counters say (a rank that
    // evaluated between steps counts one step fewer than one that went on to train);
    // `HangReport::shared_wait` compares their calls.
    let waiting: Vec<Option<u64>> = ranks
        .iter()
        .map(|r| {
            let tail = r.trace_tail.as_ref().filter(|_| r.ended.is_none())?;
            tail.waiting_in.as_ref().map(|c| c.seq)
        })
        .collect();
    if waiting.iter().all(|w| w.is_some() && *w == waiting[0]) {
        return Vec::new();
    }
    let Some(min) = positions.iter().map(|(_, p)| *p).min() else {
        return Vec::new();
    };
    if positions.iter().all(|(_, p)| *p == min) {
        return Vec::new();
    }
    positions
        .iter()
        .filter(|(_, p)| *p == min)
        .map(|(r, _)| *r)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn coll(seq: u64, step: u64) -> String {
        format!(
            r#"{{"type":"span","kind":"collective","op":"all_reduce","step":{step},"start":1,"end":2,"bucket":0,"bytes":64,"seq":{seq}}}"#
        )
    }

    fn queued(seq: u64, step: u64) -> String {
        format!(
            r#"{{"type":"instant","name":"collective_queued","t":5,"step":{step},"args":{{"seq":{seq},"op":"all_reduce","bucket":2,"bytes":4096}}}}"#
        )
    }

    #[test]
    fn a_program_collective_is_named_with_where_it_was_called() {
        let program = r#"{"type":"instant","name":"collective_queued","t":5,"step":4,"args":{"seq":17,"op":"barrier","bytes":0,"caller":"train.py:42 in main"}}"#;
        let tail = TraceTail::from_lines(&[coll(16, 3), program.to_owned()].join("\n"));
        let waiting = tail.waiting_in.expect("waits in the barrier");
        assert_eq!(waiting.caller.as_deref(), Some("train.py:42 in main"));
        assert_eq!(
            waiting.to_string(),
            "barrier seq 17 (step 4, 0 bytes) from train.py:42 in main"
        );
        // DDP's own collectives have no caller.
        let tail = TraceTail::from_lines(&queued(17, 4));
        assert_eq!(tail.waiting_in.and_then(|c| c.caller), None);
    }

    #[test]
    fn a_collective_that_failed_was_waited_in_not_completed() {
        let failed = r#"{"type":"span","kind":"collective","op":"all_reduce","step":4,"start":1,"end":2,"bucket":0,"bytes":64,"seq":17,"args":{"error":true}}"#;
        let text = [coll(16, 3), queued(17, 4), failed.to_owned()].join("\n");
        let tail = TraceTail::from_lines(&text);
        assert_eq!(tail.last_completed.map(|c| c.seq), Some(16));
        assert_eq!(tail.waiting_in.map(|c| c.seq), Some(17));
    }

    fn state(rank: usize, lines: &[String]) -> RankHangState {
        RankHangState {
            rank,
            ended: None,
            idle_s: 1.0,
            trace: format!("traces/rank-{rank}.jsonl"),
            trace_tail: Some(TraceTail::from_lines(&lines.join("\n"))),
            last_output: None,
        }
    }

    /// DDP over two process groups of 2 ranks (ranks 0, 2 and ranks 1, 3), each hung by a rank
    /// of its own: rank 0 never queued its group's collective 75, rank 3 never queued its
    /// group's 111. Both are behind within their groups; compared across groups (their
    /// sequence numbers are their own), rank 0 alone was named.
    #[test]
    fn each_ddp_process_group_is_searched_for_the_ranks_behind() {
        let header = |rank: u32| {
            let g = rank % 2;
            format!(
                r#"{{"type":"header","rank":{rank},"ddp":{{"backend":"gloo","group_ranks":[{g},{}]}}}}"#,
                g + 2
            )
        };
        let ranks = vec![
            state(0, &[header(0), coll(74, 11)]),
            state(1, &[header(1), coll(110, 17), queued(111, 18)]),
            state(2, &[header(2), coll(74, 11), queued(75, 12)]),
            state(3, &[header(3), coll(110, 17)]),
        ];
        let report = HangReport::new(30.0, "now".to_owned(), ranks);
        assert_eq!(report.behind, vec![0, 3]);
        assert!(report.several_groups());
        let text = report.render();
        assert!(
            text.contains(
                "ranks 0, 3 are behind: the other ranks wait for it (each DDP process group's \
                 ranks compared with each other)"
            ),
            "{text}"
        );
        // One group: as before.
        let one = HangReport::new(
            30.0,
            "now".to_owned(),
            vec![
                state(0, &[coll(74, 11)]),
                state(1, &[coll(74, 11), queued(75, 12)]),
            ],
        );
        assert_eq!(one.behind, vec![0]);
        assert!(!one.several_groups());
    }

    #[test]
    fn the_header_outside_the_tail_window_still_names_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rank-3.jsonl");
        let mut f = File::create(&path).unwrap();
        writeln!(
            f,
            r#"{{"type":"header","rank":3,"ddp":{{"backend":"gloo","group_ranks":[1,3]}}}}"#
        )
        .unwrap();
        for seq in 0..400 {
            writeln!(f, "{}", coll(seq, seq / 4)).unwrap();
        }
        drop(f);
        let tail = TraceTail::read_last(&path, 1024).unwrap();
        assert_eq!(tail.group, vec![1, 3]);
        assert_eq!(tail.last_completed.map(|c| c.seq), Some(399));
    }

    #[test]
    fn waiting_in_is_highest_queued_without_span() {
        let lines = [
            queued(16, 3),
            coll(16, 3),
            r#"{"type":"span","kind":"step","step":3}"#.to_owned(),
            queued(17, 4),
            "{\"type\":\"span\",\"kind\":\"coll".to_owned(),
        ];
        let t = TraceTail::from_lines(&lines.join("\n"));
        assert_eq!(t.records, 4);
        assert_eq!(t.last_step, Some(4));
        assert_eq!(t.last_completed_step, Some(3));
        assert_eq!(t.last_completed.as_ref().unwrap().seq, 16);
        let w = t.waiting_in.unwrap();
        assert_eq!(w.seq, 17);
        assert_eq!(w.op.as_deref(), Some("all_reduce"));
        assert_eq!(w.step, Some(4));
        assert_eq!(w.bucket, Some(2));
        assert_eq!(w.bytes, Some(4096));
    }

    #[test]
    fn waits_in_the_first_of_several_queued() {
        // DDP queues every bucket's all-reduce; the first blocks the rest.
        let lines = [
            queued(12, 2),
            coll(12, 2),
            queued(13, 3),
            queued(14, 3),
            queued(15, 3),
        ];
        let t = TraceTail::from_lines(&lines.join("\n"));
        assert_eq!(t.waiting_in.map(|c| c.seq), Some(13));
    }

    #[test]
    fn completed_queue_means_not_waiting() {
        let t = TraceTail::from_lines(&[queued(5, 1), coll(5, 1)].join("\n"));
        assert!(t.waiting_in.is_none());
        assert!(TraceTail::from_lines("not json\n\n[1,2]\n")
            .waiting_in
            .is_none());
    }

    #[test]
    fn behind_is_lowest_position() {
        let r0 = state(0, &[coll(16, 3), queued(17, 4)]);
        let r1 = state(1, &[coll(16, 3)]);
        let report = HangReport::new(1.0, "now".into(), vec![r0, r1]);
        assert_eq!(report.behind, vec![1]);
        let text = report.render();
        assert!(text.contains("rank 1 is behind"), "{text}");
        assert!(text.contains("waiting in all_reduce seq 17"), "{text}");
        assert!(text.contains("wait for it in all_reduce seq 17 (step 4, bucket 2, 4096 bytes), which it has not started"), "{text}");
    }

    #[test]
    fn equal_ranks_have_nobody_behind() {
        let r0 = state(0, &[coll(16, 3), queued(17, 4)]);
        let r1 = state(1, &[coll(16, 3), queued(17, 4)]);
        let report = HangReport::new(1.0, "now".into(), vec![r0, r1]);
        assert!(report.behind.is_empty());
        assert!(report.render().contains("same collective"));
    }

    #[test]
    fn different_calls_at_one_seq_are_not_the_same_collective() {
        let call = |op: &str, bytes: u64| {
            format!(
                r#"{{"type":"instant","name":"collective_queued","t":5,"step":4,"args":{{"seq":17,"op":"{op}","bytes":{bytes}}}}}"#
            )
        };
        let report = |a: String, b: String| {
            HangReport::new(
                1.0,
                "now".into(),
                vec![state(0, &[coll(16, 3), a]), state(1, &[coll(16, 3), b])],
            )
        };
        // Rank 0 in DDP's buffer broadcast, rank 1 in a barrier.
        let r = report(call("broadcast", 136), call("barrier", 0));
        assert!(r.behind.is_empty());
        assert!(matches!(r.shared_wait(), Some(SharedWait::Different(_))));
        let text = r.render();
        assert!(
            text.contains("the ranks wait at one point (seq 17) in different collectives (rank 0: broadcast, rank 1: barrier)")
                && !text.contains("same collective"),
            "{text}"
        );
        // An all-reduce of a loss against one of a bucket: the sizes tell them apart.
        let r = report(call("all_reduce", 4), call("all_reduce", 4096));
        assert!(r
            .render()
            .contains("(rank 0: all_reduce 4 bytes, rank 1: all_reduce 4096 bytes)"));
        // Rank 0 evaluates between steps (its barrier counts in step 4) while rank 1 went on to
        // step 5's first bucket: the step counters differ, the order of collectives does not,
        // so nobody is behind (torchvision's reference with the evaluation on rank 0 only).
        let step5 = r#"{"type":"instant","name":"collective_queued","t":5,"step":5,"args":{"seq":17,"op":"all_reduce","bucket":0,"bytes":4096}}"#;
        let r = report(call("barrier", 0), step5.to_owned());
        assert!(r.behind.is_empty(), "{:?}", r.behind);
        assert!(
            r.render()
                .contains("in different collectives (rank 0: barrier, rank 1: all_reduce)"),
            "{}",
            r.render()
        );
        // A broadcast passes one size on every rank (the sender's tensor, the receivers'
        // buffers), and so does an all-gather (evaluation predictions of different lengths:
        // gloo aborts one rank); the object collectives record no size, so never differ in it.
        let r = report(call("broadcast", 64), call("broadcast", 8));
        assert!(matches!(r.shared_wait(), Some(SharedWait::Different(_))));
        let r = report(call("all_gather", 408), call("all_gather", 400));
        assert!(
            r.render()
                .contains("(rank 0: all_gather 408 bytes, rank 1: all_gather 400 bytes)"),
            "{}",
            r.render()
        );
        let r = report(
            call("broadcast_object_list", 0),
            call("broadcast_object_list", 0),
        );
        assert!(matches!(r.shared_wait(), Some(SharedWait::Same(_))));
        assert!(r.render().contains("all ranks wait in the same collective"));
        // An all-to-all's splits may differ by rank.
        let r = report(call("all_to_all_single", 64), call("all_to_all_single", 8));
        assert!(matches!(r.shared_wait(), Some(SharedWait::Same(_))));
    }

    #[test]
    fn missing_trace_is_behind_when_others_have_one() {
        let r0 = state(0, &[coll(1, 0)]);
        let mut r1 = state(1, &[]);
        r1.trace_tail = None;
        let report = HangReport::new(1.0, "now".into(), vec![r0, r1]);
        assert_eq!(report.behind, vec![1]);
    }

    #[test]
    fn reads_only_the_tail_of_big_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rank-0.jsonl");
        let mut f = File::create(&path).unwrap();
        let mut seq = 0;
        while f.metadata().unwrap().len() < 3 * TRACE_TAIL_BYTES {
            writeln!(f, "{}", coll(seq, seq / 4)).unwrap();
            seq += 1;
        }
        writeln!(f, "{}", queued(seq, seq / 4)).unwrap();
        write!(f, "{{\"type\":\"span\",\"ki").unwrap();
        drop(f);
        let t = TraceTail::read(&path).unwrap();
        assert!(t.records > 10);
        assert!((t.records as u64) < 3 * TRACE_TAIL_BYTES / 100);
        assert_eq!(t.last_completed.unwrap().seq, seq - 1);
        assert_eq!(t.waiting_in.unwrap().seq, seq);
    }
}
