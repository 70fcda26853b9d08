//! What the ranks' traces say about collectives: per rank, the last completed
//! collective (the `collective` span with the highest `seq`) and the one it
//! waits in (the lowest `collective_queued` instant above the last completed
//! `seq`: collectives complete in order, so a rank that queued several, as
//! DDP does with its buckets, is blocked in the first of them).
//!
//! Traces are loaded with the probe reader ([`probe::reader::load_files`]).
//! When they are too large for that or do not load (a damaged file), the last
//! [`TAIL_BYTES`] of each file are parsed line by line instead, skipping lines
//! that are not JSON.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use probe_contract::hang::{waits_in as waiting, CollectiveRef, TraceTail};
use serde_json::Value;

use crate::lines::{for_each_line, ReadLimits};
use crate::sanitize::{display_path, sanitize};
use probe::model::{RankTrace, Run};
use probe::trace::SpanKind;

/// Bytes read from the end of each trace when the reader is not used.
pub(crate) const TAIL_BYTES: u64 = 1024 * 1024;

/// Largest trace file searched for the line number of a record.
const MAX_LOCATE_BYTES: u64 = 256 * 1024 * 1024;

/// A collective of a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Coll {
    /// Its sequence number.
    pub seq: u64,
    /// The operation.
    pub op: Option<String>,
    /// The training step.
    pub step: Option<u64>,
    /// Its payload in bytes, when recorded.
    pub bytes: Option<u64>,
    /// Where the program called it (a collective of the program's own).
    pub caller: Option<String>,
}

impl From<CollectiveRef> for Coll {
    fn from(c: CollectiveRef) -> Coll {
        Coll {
            seq: c.seq,
            op: c.op,
            step: c.step,
            bytes: c.bytes,
            caller: c.caller,
        }
    }
}

impl Coll {
    /// "all_reduce seq 17 (step 4)", "barrier seq 9 (step 2) from train.py:42 in main".
    pub fn describe(&self) -> String {
        let mut s = format!(
            "{} seq {}",
            sanitize(self.op.as_deref().unwrap_or("collective"), 40),
            self.seq
        );
        if let Some(step) = self.step {
            s.push_str(&format!(" (step {step})"));
        }
        if let Some(caller) = &self.caller {
            s.push_str(&format!(" from {}", sanitize(caller, 240)));
        }
        s
    }
}

/// A rank's last step-phase span to end, and where that leaves the rank.
#[derive(Debug, Clone)]
pub(crate) struct LastPhase {
    /// When it ended (Unix ns).
    pub t: i64,
    /// Its kind.
    pub kind: SpanKind,
    /// Its step.
    pub step: Option<u64>,
    /// What it was: "step 31", "step 32's forward".
    pub what: String,
    /// Where the rank was after it, if it recorded nothing more: "it was outside the
    /// training steps (...)", "it had its batch and was in step 32's forward".
    pub then: String,
}

/// A training DataLoader's pass that ran out (the PyTorch module's `data_pass_end` instant).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DataRanOut {
    /// The last step begun when it ran out.
    pub step: Option<u64>,
    /// The batches the pass gave.
    pub batches: Option<u64>,
}

/// How far one rank got.
#[derive(Debug, Clone)]
pub(crate) struct RankProgress {
    /// The global rank.
    pub rank: usize,
    /// Its trace file.
    pub path: PathBuf,
    /// The trace file for display.
    pub file: String,
    /// The completed collective with the highest `seq`.
    pub last_completed: Option<Coll>,
    /// The collective it waits in.
    pub waiting_in: Option<Coll>,
    /// How long it waited in that collective before the collective failed (its span records
    /// the failure), when it did.
    pub wait_failed_after_ns: Option<i64>,
    /// The highest step seen.
    pub last_step: Option<u64>,
    /// The status of its `end` record, when it finished recording.
    pub end_status: Option<String>,
    /// Its last step-phase span to end, when the whole trace was read.
    pub last_phase: Option<LastPhase>,
    /// Its training DataLoader's pass that ran out after the last step-phase span ended (the
    /// PyTorch module's `data_pass_end` instant), when the whole trace was read: nothing of a
    /// step followed it.
    pub data_ran_out: Option<DataRanOut>,
    /// DDP's parameters by index (the header's table), to name the indices PyTorch's errors
    /// give.
    pub param_names: Vec<(u32, String)>,
}

/// One rank's call of a collective that another rank of its process group called differently.
#[derive(Debug, Clone)]
pub(crate) struct RankCall {
    /// The global rank.
    pub rank: usize,
    /// Its trace file.
    pub path: PathBuf,
    /// The trace file for display.
    pub file: String,
    /// The call.
    pub call: Coll,
}

/// What the traces read under one directory say.
#[derive(Debug, Default)]
pub(crate) struct TraceFacts {
    /// How far each rank got.
    pub progress: Vec<RankProgress>,
    /// The first collective (by the time it was queued) that the ranks of one process group
    /// called differently at one sequence number: another operation, or another size of an
    /// operation that needs one size on every rank; each rank's call, when the whole traces
    /// were read. Completed calls count: gloo completes an all-gather of another size on the
    /// rank with the larger input, with wrong data, before the other rank aborts.
    pub different_call: Option<Vec<RankCall>>,
    /// What was worked around.
    pub notes: Vec<String>,
}

/// Reads the progress of every rank traced under `dir`; notes say what was
/// worked around.
pub(crate) fn read(dir: &Path, max_bytes: u64) -> TraceFacts {
    let mut notes = Vec::new();
    let Ok(files) = probe::reader::find_trace_files(&[dir]) else {
        return TraceFacts::default();
    };
    if files.is_empty() {
        return TraceFacts::default();
    }
    let total: u64 = files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    if total <= max_bytes {
        match probe::reader::load_files(&files) {
            Ok((run, warnings)) => {
                // Damaged lines were skipped: say so, as every command does.
                notes.extend(
                    warnings
                        .iter()
                        .filter(|w| matches!(w, probe::Warning::SkippedLines { .. }))
                        .map(|w| sanitize(&w.to_string(), 300)),
                );
                return TraceFacts {
                    progress: from_run(&run),
                    different_call: different_call(&run),
                    notes,
                };
            }
            Err(e) => notes.push(format!(
                "the traces did not load ({}); read the end of each trace file instead",
                sanitize(&e.to_string(), 300)
            )),
        }
    } else {
        notes.push(format!(
            "the traces are {total} bytes; read only the last {TAIL_BYTES} bytes of each file"
        ));
    }
    let progress = files.iter().filter_map(|f| from_tail(f)).collect();
    TraceFacts {
        progress,
        different_call: None,
        notes,
    }
}

/// The first collective the ranks of one process group called differently
/// ([`TraceFacts::different_call`], [`Run::first_different_call`]).
fn different_call(run: &Run) -> Option<Vec<RankCall>> {
    let calls = run.first_different_call()?;
    Some(
        calls
            .into_iter()
            .filter_map(|(r, c)| {
                let trace = run.rank(r)?;
                Some(RankCall {
                    rank: r as usize,
                    path: trace.path.clone(),
                    file: display_path(&trace.path),
                    call: Coll::from(c),
                })
            })
            .collect(),
    )
}

fn from_run(run: &Run) -> Vec<RankProgress> {
    let coll = Coll::from;
    let mut out = Vec::new();
    for rank in &run.ranks {
        let mut last_completed: Option<Coll> = None;
        let mut last_step: Option<u64> = None;
        let mut last_phase: Option<(i64, SpanKind, Option<u64>)> = None;
        let mut completed = BTreeSet::new();
        let mut failures: BTreeMap<u64, i64> = BTreeMap::new();
        for span in rank.spans() {
            if let Some(step) = span.step() {
                last_step = Some(last_step.map_or(step, |s| s.max(step)));
            }
            if PHASES.contains(&span.kind())
                && last_phase.is_none_or(|(t, k, _)| {
                    // A step ends with its last phase: the step names it.
                    span.end() > t
                        || (span.end() == t && span.kind() == SpanKind::Step && k != SpanKind::Step)
                })
            {
                last_phase = Some((span.end(), span.kind(), span.step()));
            }
            if span.kind() != SpanKind::Collective {
                continue;
            }
            if run.span(rank, span).failed() {
                if let Some(seq) = span.seq() {
                    failures.insert(seq, span.end() - span.start());
                }
                continue;
            }
            completed.extend(span.seq());
            if let Some(seq) = span
                .seq()
                .filter(|&q| last_completed.as_ref().is_none_or(|c| q > c.seq))
            {
                last_completed = Some(Coll {
                    seq,
                    op: span.op().map(|s| run.str(s).to_owned()),
                    step: span.step(),
                    bytes: span.bytes(),
                    caller: None,
                });
            }
        }
        for step in rank.instants.iter().filter_map(|i| i.step) {
            last_step = Some(last_step.map_or(step, |s| s.max(step)));
        }
        let queued: BTreeMap<u64, CollectiveRef> = run
            .queued_collectives(rank)
            .into_iter()
            .map(|(seq, (_, c))| (seq, c))
            .collect();
        let waiting_in = waiting(&queued, &completed).map(coll);
        let wait_failed_after_ns = waiting_in
            .as_ref()
            .and_then(|c| failures.get(&c.seq).copied());
        let last_phase = last_phase.map(|(t, kind, step)| {
            let of = |k: SpanKind| match step {
                Some(n) => format!("step {n}'s {}", k.as_str()),
                None => k.as_str().to_owned(),
            };
            let what = match (kind, step) {
                (SpanKind::Step, Some(n)) => format!("step {n}"),
                (k, _) => of(k),
            };
            // What follows the last phase that ended: where the rank was since.
            let then = match kind {
                SpanKind::Step | SpanKind::Optimizer => {
                    "it was outside the training steps (evaluation, checkpointing, logging, or \
                     waiting for its data loader)"
                        .to_owned()
                }
                SpanKind::DataWait => {
                    format!("it had its batch and was in {}", of(SpanKind::Forward))
                }
                SpanKind::Forward => format!(
                    "it was between {} and the end of its backward (the loss, or the backward \
                     itself)",
                    of(SpanKind::Forward)
                ),
                _ => format!(
                    "it was after {} and before its optimizer step (gradient clipping, a second \
                     backward, or code of its own)",
                    of(kind)
                ),
            };
            LastPhase {
                t,
                kind,
                step,
                what,
                then,
            }
        });
        let data_ran_out = data_ran_out(run, rank, last_phase.as_ref().map(|p| p.t));
        let param_names = rank
            .header
            .ddp
            .as_ref()
            .map(|d| d.params.iter().map(|p| (p.index, p.name.clone())).collect())
            .unwrap_or_default();
        out.push(RankProgress {
            param_names,
            rank: rank.rank() as usize,
            path: rank.path.clone(),
            file: display_path(&rank.path),
            last_completed,
            waiting_in,
            wait_failed_after_ns,
            last_step,
            end_status: rank.end.as_ref().map(|e| e.status.clone()),
            last_phase,
            data_ran_out,
        });
    }
    out
}

/// The PyTorch module's instant for a training DataLoader's pass that ran out.
pub(crate) const DATA_PASS_END: &str = "data_pass_end";

/// The rank's last `data_pass_end` instant, when it came after `after` (the end of its last
/// step-phase span; any time when it recorded none).
fn data_ran_out(run: &Run, rank: &RankTrace, after: Option<i64>) -> Option<DataRanOut> {
    let name = run.strings.lookup(DATA_PASS_END)?;
    let last = rank
        .instants
        .iter()
        .filter(|i| i.name == name)
        .max_by_key(|i| i.t)?;
    if after.is_some_and(|t| last.t < t) {
        return None;
    }
    let batches = run
        .instant_args(last)
        .and_then(|a| a.get("batches").and_then(Value::as_u64));
    Some(DataRanOut {
        step: last.step,
        batches,
    })
}

/// The spans of a training step's phases (and the step itself).
const PHASES: [SpanKind; 5] = [
    SpanKind::Step,
    SpanKind::DataWait,
    SpanKind::Forward,
    SpanKind::Backward,
    SpanKind::Optimizer,
];

/// Progress from the header line and the last [`TAIL_BYTES`] of a file,
/// read by the contract's [`TraceTail`] (the launcher's hang watchdog reads
/// traces the same way).
fn from_tail(path: &Path) -> Option<RankProgress> {
    let mut first = String::new();
    BufReader::new(File::open(path).ok()?.take(64 * 1024))
        .read_line(&mut first)
        .ok()?;
    let header: Value = serde_json::from_str(first.trim()).ok()?;
    let rank = header.get("rank").and_then(Value::as_u64)? as usize;
    let param_names = header
        .pointer("/ddp/params")
        .and_then(Value::as_array)
        .map(|ps| {
            ps.iter()
                .filter_map(|p| {
                    let index = u32::try_from(p.get("index")?.as_u64()?).ok()?;
                    Some((index, p.get("name")?.as_str()?.to_owned()))
                })
                .collect()
        })
        .unwrap_or_default();
    let tail = TraceTail::read_last(path, TAIL_BYTES).ok()?;
    let coll = Coll::from;
    Some(RankProgress {
        rank,
        path: path.to_path_buf(),
        file: display_path(path),
        last_completed: tail.last_completed.map(coll),
        waiting_in: tail.waiting_in.map(coll),
        wait_failed_after_ns: None,
        last_step: tail.last_step,
        end_status: tail.end_status,
        last_phase: None,
        data_ran_out: None,
        param_names,
    })
}

/// The 1-based number of the last line of `path` that contains every needle
/// (`None` for files over [`MAX_LOCATE_BYTES`] or when nothing matches).
pub(crate) fn locate(path: &Path, needles: &[&str]) -> Option<u64> {
    let limits = ReadLimits {
        head_bytes: MAX_LOCATE_BYTES,
        tail_bytes: 0,
        max_line_bytes: 64 * 1024,
    };
    if std::fs::metadata(path).ok()?.len() > MAX_LOCATE_BYTES {
        return None;
    }
    let mut found = None;
    for_each_line(path, &limits, |n, text| {
        if needles.iter().all(|k| text.contains(k)) {
            found = n;
        }
    })
    .ok()?;
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const HEADER: &str = r#"{"type":"header","format":"ddp-probe-trace","version":"1.0","run_id":"r","rank":1,"world_size":2,"start_ns":1000}"#;

    fn write(dir: &Path, lines: &[&str]) -> PathBuf {
        let traces = dir.join(probe_contract::run_dir::TRACES_DIR);
        std::fs::create_dir_all(&traces).unwrap();
        let p = traces.join("rank-1.jsonl");
        let mut f = File::create(&p).unwrap();
        for l in lines {
            writeln!(f, "{l}").unwrap();
        }
        p
    }

    #[test]
    fn reader_and_tail_agree_on_the_waiting_collective() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            &[
                HEADER,
                r#"{"type":"instant","name":"collective_queued","t":2000,"step":0,"args":{"seq":1,"op":"all_reduce"}}"#,
                r#"{"type":"span","kind":"collective","step":0,"start":2000,"end":3000,"seq":1,"op":"all_reduce"}"#,
                r#"{"type":"instant","name":"collective_queued","t":4000,"step":1,"args":{"seq":2,"op":"all_reduce"}}"#,
                // Queued after seq 2 (as DDP queues every bucket): seq 2 blocks it.
                r#"{"type":"instant","name":"collective_queued","t":4100,"step":1,"args":{"seq":3,"op":"all_reduce"}}"#,
            ],
        );
        let TraceFacts {
            progress: via_reader,
            notes,
            ..
        } = read(dir.path(), u64::MAX);
        assert!(notes.is_empty(), "{notes:?}");
        let tail = from_tail(&p).unwrap();
        for prog in [&via_reader[0], &tail] {
            assert_eq!(prog.rank, 1);
            assert_eq!(prog.last_completed.as_ref().unwrap().seq, 1);
            let w = prog.waiting_in.as_ref().unwrap();
            assert_eq!(
                (w.seq, w.op.as_deref(), w.step),
                (2, Some("all_reduce"), Some(1))
            );
        }
        assert_eq!(locate(&p, &["collective_queued", "\"seq\":2"]), Some(4));
        // Too big for the reader: the tail path gives the same answer.
        let TraceFacts {
            progress: small,
            notes,
            ..
        } = read(dir.path(), 10);
        assert_eq!(notes.len(), 1);
        assert_eq!(small[0].waiting_in.as_ref().unwrap().seq, 2);
    }

    #[test]
    fn a_program_collective_waited_in_is_described_with_its_caller() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            &[
                HEADER,
                r#"{"type":"instant","name":"collective_queued","t":2000,"step":3,"args":{"seq":9,"op":"all_gather","bytes":8,"caller":"accelerate/accelerator.py:3012 in gather <- transformers/trainer.py:5626 in _get_num_items_in_batch"}}"#,
            ],
        );
        let via_reader = read(dir.path(), u64::MAX).progress;
        let tail = from_tail(&p).unwrap();
        for prog in [&via_reader[0], &tail] {
            assert_eq!(
                prog.waiting_in.as_ref().unwrap().describe(),
                "all_gather seq 9 (step 3) from accelerate/accelerator.py:3012 in gather <- \
                 transformers/trainer.py:5626 in _get_num_items_in_batch"
            );
        }
    }
}
