//! PyTorch's flight-recorder dumps: what each rank's process groups last
//! enqueued, started and completed, read by `explain`.
//!
//! A dump is one rank's pickle, written by the NCCL watchdog on a timeout
//! (`TORCH_NCCL_DUMP_ON_TIMEOUT`) or on request
//! (`torch._C._distributed_c10d._dump_fr_trace()`) to `<prefix><rank>`, the
//! prefix being `TORCH_FR_DUMP_TEMP_FILE` (older name
//! `TORCH_NCCL_DEBUG_INFO_TEMP_FILE`). Its layout is that of torch's
//! `FlightRecorder.hpp` (version "2.10" in torch 2.13): a dict with
//! `version`, `pg_config`, `pg_status` (per process group
//! `last_enqueued_collective`, `last_started_collective`,
//! `last_completed_collective`) and `entries`, each with `record_id`,
//! `pg_id`, `process_group` (name, description), `collective_seq_id`,
//! `p2p_seq_id`, `is_p2p`, `profiling_name` (`"nccl:all_reduce"`,
//! `"gloo:recv 1<-0"`), `input_sizes`, `input_dtypes`, `output_sizes`,
//! `state` (`scheduled`, `started`, `completed`), times, `retired` and
//! `frames`.
//!
//! From the dumps of several ranks this module finds, per process group:
//! ranks that never enqueued a collective the others did (their last
//! collective sequence number is behind: `collective_timeout`, the behind
//! rank as cause); a collective whose operation, sizes or dtypes differ
//! between ranks (`collective_mismatch`); point-to-point operations that wait
//! for a peer that never posted the matching one (`collective_timeout`, the
//! peer as cause; `p2p_hang` is kept for NCCL's GPU peer-to-peer transport
//! hanging, which a dump cannot tell); and for each
//! rank its last completed collective (in every finding's text).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use probe_contract::budget;

use crate::category::Category;
use crate::pickle::{self, Value};
use crate::report::{Evidence, Role};
use crate::sanitize::{display_path, sanitize};
use crate::signal::{Attach, Signal};

/// The file name prefix PyTorch's default writer and `ddp-probe run` use.
pub(crate) const DEFAULT_PREFIX: &str = "nccl_trace_rank_";
/// Longest text taken from a dump field.
const MAX_TEXT: usize = 200;

/// One recorded operation.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    record_id: i64,
    pg: String,
    collective_seq: i64,
    p2p_seq: i64,
    is_p2p: bool,
    /// The operation without the backend (`all_reduce`, `recv`).
    op: String,
    /// The peer part of a point-to-point name (`1<-0`, `0->1`).
    peers: Option<String>,
    input_sizes: String,
    input_dtypes: String,
    state: String,
    retired: bool,
}

impl Entry {
    fn describe(&self) -> String {
        if self.is_p2p {
            format!(
                "{} {} (p2p seq {}, {} {})",
                self.op,
                self.peers.as_deref().unwrap_or(""),
                self.p2p_seq,
                self.input_sizes,
                self.input_dtypes
            )
        } else {
            format!(
                "{} (collective seq {}, sizes {}, dtypes {})",
                self.op, self.collective_seq, self.input_sizes, self.input_dtypes
            )
        }
    }

    fn pending(&self) -> bool {
        self.state != "completed" && !self.retired
    }
}

/// What one rank's dump says.
#[derive(Debug, Clone)]
pub(crate) struct Dump {
    rank: usize,
    file: String,
    entries: Vec<Entry>,
    /// Per process group name: (last enqueued, last completed) collective seq.
    status: BTreeMap<String, (Option<i64>, Option<i64>)>,
}

/// The rank a dump file belongs to: the digits the writer appended to the prefix.
pub(crate) fn rank_of(path: &Path) -> Option<usize> {
    let name = path.file_name()?.to_str()?;
    let digits: String = name
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    if digits.is_empty() || digits.len() == name.len() {
        return None;
    }
    digits.parse().ok()
}

/// Whether a file name looks like a flight-recorder dump of the default prefix.
pub(crate) fn is_dump_name(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(DEFAULT_PREFIX) && rank_of(path).is_some())
}

/// Reads one dump; `Err` is a note for the report.
pub(crate) fn read(path: &Path, rank: usize) -> Result<Dump, String> {
    let file = display_path(path);
    let len = fs::metadata(path)
        .map_err(|e| format!("cannot read flight recorder dump {file}: {e}"))?
        .len();
    let max = budget::FLIGHT_RECORDER_FILE_BYTES.limit();
    if len > max {
        return Err(format!(
            "flight recorder dump {file}: {}",
            budget::FLIGHT_RECORDER_FILE_BYTES.exceeded_by(len, max)
        ));
    }
    let bytes =
        fs::read(path).map_err(|e| format!("cannot read flight recorder dump {file}: {e}"))?;
    read_bytes(&bytes, rank, file)
}

/// Reads one dump held in memory (`file` names it in messages).
pub(crate) fn read_bytes(bytes: &[u8], rank: usize, file: String) -> Result<Dump, String> {
    let root = pickle::loads(bytes).map_err(|e| {
        if e.over_budget {
            format!("flight recorder dump {file} was not read: {}", e.message)
        } else {
            format!("flight recorder dump {file} is not a readable dump ({e}); it may have been cut off while being written")
        }
    })?;
    parse(&root, rank, file)
}

fn parse(root: &Value, rank: usize, file: String) -> Result<Dump, String> {
    let Some(entries) = root.get("entries").and_then(Value::as_seq) else {
        return Err(format!(
            "flight recorder dump {file} has no `entries` list (version {}); is it a PyTorch flight recorder dump?",
            root.get("version").map(Value::render).unwrap_or_else(|| "unknown".into())
        ));
    };
    let int = |e: &Value, k: &str| e.get(k).and_then(Value::as_i64);
    let mut pg_names: BTreeMap<i64, String> = BTreeMap::new();
    let mut out = Vec::new();
    for e in entries {
        let name = e
            .get("profiling_name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let name = name.split_once(':').map_or(name, |(_, n)| n);
        let (op, peers) = match name.split_once(' ') {
            Some((op, peers)) => (op.to_owned(), Some(peers.to_owned())),
            None => (name.to_owned(), None),
        };
        let pg_id = int(e, "pg_id").unwrap_or(-1);
        let pg = match e.get("process_group").and_then(Value::as_seq) {
            Some([name, desc, ..]) => format!("{} ({})", name.render(), desc.render()),
            _ => format!("pg {pg_id}"),
        };
        pg_names.entry(pg_id).or_insert_with(|| pg.clone());
        let is_p2p = e
            .get("is_p2p")
            .and_then(Value::as_i64)
            .map(|v| v != 0)
            .unwrap_or_else(|| matches!(op.as_str(), "send" | "recv"));
        out.push(Entry {
            record_id: int(e, "record_id").unwrap_or(-1),
            pg,
            collective_seq: int(e, "collective_seq_id").unwrap_or(-1),
            p2p_seq: int(e, "p2p_seq_id").unwrap_or(-1),
            is_p2p,
            op: sanitize(&op, MAX_TEXT),
            peers: peers.map(|p| sanitize(&p, MAX_TEXT)),
            input_sizes: sanitize(
                &e.get("input_sizes").map(Value::render).unwrap_or_default(),
                MAX_TEXT,
            ),
            input_dtypes: sanitize(
                &e.get("input_dtypes").map(Value::render).unwrap_or_default(),
                MAX_TEXT,
            ),
            state: e
                .get("state")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            retired: e
                .get("retired")
                .and_then(Value::as_i64)
                .is_some_and(|v| v != 0),
        });
    }
    let mut status = BTreeMap::new();
    if let Some(Value::Dict(items)) = root.get("pg_status") {
        for (k, v) in items {
            let id = match k {
                Value::Str(s) => s.parse().unwrap_or(-1),
                other => other.as_i64().unwrap_or(-1),
            };
            let name = pg_names
                .get(&id)
                .cloned()
                .unwrap_or_else(|| format!("pg {id}"));
            let seq = |key| int(v, key).filter(|&s| s >= 0);
            status.insert(
                name,
                (
                    seq("last_enqueued_collective"),
                    seq("last_completed_collective"),
                ),
            );
        }
    }
    Ok(Dump {
        rank,
        file,
        entries: out,
        status,
    })
}

/// Finds the dumps among `paths` (rank from the name) and reads them;
/// returns the dumps and notes about those that could not be read.
pub(crate) fn read_all(paths: &[(PathBuf, usize)]) -> (Vec<Dump>, Vec<String>) {
    let mut dumps: Vec<Dump> = Vec::new();
    let mut notes = Vec::new();
    for (path, rank) in paths {
        if dumps.iter().any(|d| d.rank == *rank) {
            continue;
        }
        match read(path, *rank) {
            Ok(d) => dumps.push(d),
            Err(n) => notes.push(n),
        }
    }
    dumps.sort_by_key(|d| d.rank);
    (dumps, notes)
}

fn evidence(d: &Dump, e: &Entry) -> Evidence {
    Evidence {
        file: d.file.clone(),
        line: None,
        text: format!(
            "rank {}: record {} in {}: {} state {}{}",
            d.rank,
            e.record_id,
            e.pg,
            e.describe(),
            if e.state.is_empty() { "?" } else { &e.state },
            if e.retired { ", retired" } else { "" }
        ),
    }
}

/// The last enqueued and last completed collective seq of a rank in a group.
fn progress(d: &Dump, pg: &str) -> (Option<i64>, Option<i64>) {
    let from_entries = d
        .entries
        .iter()
        .filter(|e| e.pg == pg && !e.is_p2p)
        .map(|e| e.collective_seq)
        .max();
    let (enq, done) = d.status.get(pg).copied().unwrap_or((None, None));
    let done = done.or_else(|| {
        d.entries
            .iter()
            .filter(|e| e.pg == pg && !e.is_p2p && e.state == "completed")
            .map(|e| e.collective_seq)
            .max()
    });
    (enq.max(from_entries), done)
}

fn last_completed_text(d: &Dump, pg: &str) -> String {
    match progress(d, pg).1 {
        Some(s) => format!("rank {}'s last completed collective is seq {s}", d.rank),
        None => format!("rank {} completed no collective", d.rank),
    }
}

/// The signals of a set of dumps (one per rank).
pub(crate) fn signals(dumps: &[Dump], order: &mut u64) -> Vec<Signal> {
    let mut out = Vec::new();
    let mut push = |mut s: Signal, out: &mut Vec<Signal>| {
        *order += 1;
        s.order = *order;
        out.push(s);
    };
    let groups: BTreeSet<String> = dumps
        .iter()
        .flat_map(|d| d.entries.iter().map(|e| e.pg.clone()))
        .collect();
    for pg in &groups {
        let members: Vec<&Dump> = dumps
            .iter()
            .filter(|d| d.entries.iter().any(|e| &e.pg == pg) || d.status.contains_key(pg))
            .collect();
        // Mismatches: the same collective seq with another op, size or dtype.
        let mut by_seq: BTreeMap<i64, Vec<(&Dump, &Entry)>> = BTreeMap::new();
        for d in &members {
            for e in d.entries.iter().filter(|e| &e.pg == pg && !e.is_p2p) {
                by_seq.entry(e.collective_seq).or_default().push((d, e));
            }
        }
        let mut mismatched = BTreeSet::new();
        for (seq, list) in &by_seq {
            let key = |e: &Entry| (e.op.clone(), e.input_sizes.clone(), e.input_dtypes.clone());
            let mut counts: BTreeMap<_, usize> = BTreeMap::new();
            for (_, e) in list {
                *counts.entry(key(e)).or_default() += 1;
            }
            if counts.len() < 2 {
                continue;
            }
            mismatched.insert(*seq);
            let top = counts.values().copied().max().unwrap_or(0);
            let majority: Vec<_> = counts.iter().filter(|(_, &c)| c == top).collect();
            let odd: Vec<usize> = if majority.len() == 1 {
                list.iter()
                    .filter(|(_, e)| &key(e) != majority[0].0)
                    .map(|(d, _)| d.rank)
                    .collect()
            } else {
                list.iter().map(|(d, _)| d.rank).collect()
            };
            let a = list[0].1;
            let b = list.iter().map(|(_, e)| e).find(|e| key(e) != key(a));
            let what = match b {
                Some(b) if a.op != b.op => "operation",
                Some(b) if a.input_sizes != b.input_sizes => "size",
                _ => "dtype",
            };
            let mut s = Signal::new(
                "flight_recorder_mismatch",
                Category::CollectiveMismatch,
                Role::Cause,
                Attach::Standalone,
            );
            s.subjects = odd;
            s.detail = Some(format!(
                "the flight recorder shows collective seq {seq} of process group {pg} with a different {what} on different ranks: {}",
                list.iter()
                    .map(|(d, e)| format!("rank {} {} {} {}", d.rank, e.op, e.input_sizes, e.input_dtypes))
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
            s.evidence = list.iter().map(|(d, e)| evidence(d, e)).collect();
            push(s, &mut out);
        }
        // Ranks behind: their last collective is below the others'.
        let last: Vec<(&Dump, Option<i64>)> =
            members.iter().map(|d| (*d, progress(d, pg).0)).collect();
        let Some(max) = last.iter().filter_map(|(_, s)| *s).max() else {
            continue;
        };
        let ahead: Vec<usize> = last
            .iter()
            .filter(|(_, s)| *s == Some(max))
            .map(|(d, _)| d.rank)
            .collect();
        let behind: Vec<(&Dump, Option<i64>)> = last
            .iter()
            .copied()
            .filter(|(_, s)| *s != Some(max))
            .collect();
        if !behind.is_empty() && !mismatched.contains(&max) {
            // The first collective a rank behind never enqueued: collectives
            // of a group complete in order, so the ranks ahead are blocked
            // there even when they enqueued more (DDP enqueues every bucket).
            let first_missing = behind
                .iter()
                .map(|(_, s)| s.map_or(1, |s| s + 1))
                .min()
                .unwrap_or(max)
                .min(max);
            let stuck = ahead
                .first()
                .and_then(|r| dumps.iter().find(|d| d.rank == *r))
                .and_then(|d| {
                    d.entries
                        .iter()
                        .find(|e| &e.pg == pg && !e.is_p2p && e.collective_seq == first_missing)
                        .map(|e| (d, e))
                });
            for (d, seq) in &behind {
                let mut s = Signal::new(
                    "flight_recorder_behind",
                    Category::CollectiveTimeout,
                    Role::Cause,
                    Attach::Standalone,
                );
                s.subjects = vec![d.rank];
                s.observer = Some(d.rank);
                s.observer_explicit = true;
                let next = seq.map_or(1, |s| s + 1);
                s.detail = Some(format!(
                    "rank {} never enqueued collective seq {next}{} of process group {pg}: its last collective is {}, while rank{} {} reached seq {max}; {}",
                    d.rank,
                    stuck.map(|(_, e)| format!(" ({})", e.op)).unwrap_or_default(),
                    seq.map_or("none".to_owned(), |s| format!("seq {s}")),
                    if ahead.len() > 1 { "s" } else { "" },
                    ahead.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "),
                    last_completed_text(d, pg),
                ));
                if let Some(e) = d.entries.iter().rfind(|e| &e.pg == pg && !e.is_p2p) {
                    s.evidence.push(evidence(d, e));
                }
                if let Some((sd, se)) = stuck {
                    s.evidence.push(evidence(sd, se));
                }
                push(s, &mut out);
            }
            for r in &ahead {
                let Some(d) = dumps.iter().find(|d| d.rank == *r) else {
                    continue;
                };
                let (enq, done) = progress(d, pg);
                if done >= enq {
                    continue;
                }
                let mut s = Signal::new(
                    "flight_recorder_waiting",
                    Category::CollectiveTimeout,
                    Role::Symptom,
                    Attach::Standalone,
                );
                s.observer = Some(d.rank);
                s.observer_explicit = true;
                s.subjects = behind.iter().map(|(b, _)| b.rank).collect();
                let waits =
                    done.map_or(first_missing, |done| (done + 1).max(first_missing).min(max));
                let more = if waits < max {
                    format!(" (and enqueued up to seq {max})")
                } else {
                    String::new()
                };
                s.detail = Some(format!(
                    "rank {} waits in collective seq {waits} of process group {pg}{more}; {}",
                    d.rank,
                    last_completed_text(d, pg)
                ));
                if let Some((sd, se)) = stuck.filter(|(sd, _)| sd.rank == d.rank) {
                    s.evidence.push(evidence(sd, se));
                }
                push(s, &mut out);
            }
        }
        // Point-to-point: a pending op whose peer never posted its side.
        for d in &members {
            for e in d
                .entries
                .iter()
                .filter(|e| &e.pg == pg && e.is_p2p && e.pending())
            {
                let Some((me, peer, mine, theirs)) = p2p_peer(e) else {
                    continue;
                };
                if me != d.rank {
                    continue;
                }
                let posted_here = d
                    .entries
                    .iter()
                    .filter(|x| {
                        &x.pg == pg
                            && x.is_p2p
                            && x.op == e.op
                            && p2p_peer(x).map(|p| p.1) == Some(peer)
                    })
                    .count();
                let Some(pd) = dumps.iter().find(|x| x.rank == peer) else {
                    continue;
                };
                let posted_there = pd
                    .entries
                    .iter()
                    .filter(|x| {
                        &x.pg == pg
                            && x.is_p2p
                            && x.op == theirs
                            && p2p_peer(x).map(|p| p.1) == Some(me)
                    })
                    .count();
                if posted_there >= posted_here {
                    continue;
                }
                // A send/recv whose peer never posted its side: the same
                // story as a collective a rank never joined (`p2p_hang` is
                // NCCL's GPU peer-to-peer transport hanging, another matter).
                let mut s = Signal::new(
                    "flight_recorder_p2p",
                    Category::CollectiveTimeout,
                    Role::Cause,
                    Attach::Standalone,
                );
                s.subjects = vec![peer];
                s.observer = Some(d.rank);
                s.observer_explicit = true;
                s.detail = Some(format!(
                    "rank {} waits in {mine} {} of process group {pg} (p2p seq {}), but rank {peer} posted {posted_there} matching {theirs} for its {posted_here} {mine}; {}",
                    d.rank,
                    e.peers.as_deref().unwrap_or(""),
                    e.p2p_seq,
                    last_completed_text(d, pg)
                ));
                s.evidence.push(evidence(d, e));
                push(s, &mut out);
            }
        }
    }
    out
}

/// For a point-to-point entry: (this rank, the peer, this op, the peer's op).
/// Names are `send S->D` and `recv D<-S` (fr_trace's convention).
fn p2p_peer(e: &Entry) -> Option<(usize, usize, &'static str, &'static str)> {
    let peers = e.peers.as_deref()?;
    match e.op.as_str() {
        "send" => {
            let (s, d) = peers.split_once("->")?;
            Some((
                s.trim().parse().ok()?,
                d.trim().parse().ok()?,
                "send",
                "recv",
            ))
        }
        "recv" => {
            let (d, s) = peers.split_once("<-")?;
            Some((
                d.trim().parse().ok()?,
                s.trim().parse().ok()?,
                "recv",
                "send",
            ))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_come_from_the_suffix() {
        assert_eq!(rank_of(Path::new("logs/nccl_trace_rank_12")), Some(12));
        assert_eq!(rank_of(Path::new("fr/rank-3")), Some(3));
        assert_eq!(rank_of(Path::new("123")), None);
        assert!(is_dump_name(Path::new("nccl_trace_rank_0")));
        assert!(!is_dump_name(Path::new("nccl_trace_rank_0.tmp")));
    }

    #[test]
    fn a_dump_without_entries_is_a_clear_error() {
        let root = Value::Dict(vec![(
            Value::Str("version".into()),
            Value::Str("2.10".into()),
        )]);
        let e = parse(&root, 0, "x".into()).unwrap_err();
        assert!(e.contains("no `entries`"), "{e}");
    }
}
