//! The run summary: step-time breakdown per rank and across ranks,
//! throughput, per-bucket and per-operation communication statistics and
//! stragglers, plus a compact text rendering of it.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::bucket_stats::{BucketStats, BucketTable};
use super::comm::{OpStats, OpTable, SeqTable};
use super::render::{self, num, text, Table};
use super::scan::{
    made_by_join, marked_collective_args, scan_run, OtherSplit, RunScan, StepBreakdown,
    WarmupReason,
};
use super::slowdown::{slowdowns, Slowdowns};
use super::stats::Dist;
use super::stragglers::{stragglers, Stragglers};
use crate::model::{LaneKind, Run};
use crate::trace::{LogLevel, SpanKind};

/// What [`summarize`] leaves out and assumes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SummaryOptions {
    /// How many of each rank's first steps (in time order) are warm-up and
    /// reported apart. Default 1: the first iteration.
    pub warmup_steps: u64,
    /// Whether the step a `buckets` record with reason `"rebuild"` applies
    /// from is reported apart too. Default true.
    pub exclude_rebuild: bool,
    /// Samples each rank processes per step, when the trace has no
    /// `samples` counters (a `--batch-size` option). Counters win when
    /// present.
    pub batch_size: Option<u64>,
}

impl Default for SummaryOptions {
    fn default() -> SummaryOptions {
        SummaryOptions {
            warmup_steps: 1,
            exclude_rebuild: true,
            batch_size: None,
        }
    }
}

/// Exact integer sums over the steps of a [`Breakdown`] (ns). They keep
/// the identities of [`StepBreakdown`]:
/// `comm_overlapped_ns + comm_exposed_ns == comm_ns`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Σ step time.
    pub step_ns: i64,
    /// Σ data wait.
    pub data_wait_ns: i64,
    /// Σ forward.
    pub forward_ns: i64,
    /// Σ backward.
    pub backward_ns: i64,
    /// Σ communication.
    pub comm_ns: i64,
    /// Σ communication overlapped with compute.
    pub comm_overlapped_ns: i64,
    /// Σ exposed communication.
    pub comm_exposed_ns: i64,
    /// Σ optimizer.
    pub optimizer_ns: i64,
    /// Σ writeback.
    pub writeback_ns: i64,
    /// Σ other / idle.
    pub other_ns: i64,
    /// Σ other / idle by where it falls in the step.
    #[serde(default)]
    pub other_at: OtherSplit,
    /// Σ time between a step and the next ([`StepBreakdown::between_ns`]), over the steps that
    /// have one.
    #[serde(default)]
    pub between_ns: i64,
}

/// Distributions of the [`StepBreakdown`] fields over a set of steps (ns).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    /// Number of steps (rank-steps when pooled over ranks).
    pub steps: u64,
    /// Step time.
    pub step: Dist,
    /// Data wait.
    pub data_wait: Dist,
    /// Forward.
    pub forward: Dist,
    /// Backward compute.
    pub backward: Dist,
    /// Communication total (union of collectives).
    pub comm: Dist,
    /// Communication overlapped with compute.
    pub comm_overlapped: Dist,
    /// Exposed communication (the step waited for it).
    pub comm_exposed: Dist,
    /// Optimizer.
    pub optimizer: Dist,
    /// Writeback.
    pub writeback: Dist,
    /// Other / idle.
    pub other: Dist,
    /// Last collective end after backward end.
    pub comm_tail: Dist,
    /// Time between a step and the next, over the steps followed by one (not part of the step).
    #[serde(default)]
    pub between: Option<Dist>,
    /// Exact sums.
    pub totals: Totals,
}

impl Breakdown {
    /// The breakdown of a set of steps; `None` when there are none.
    pub fn of<'a>(steps: impl IntoIterator<Item = &'a StepBreakdown> + Clone) -> Option<Breakdown> {
        let n = steps.clone().into_iter().count();
        if n == 0 {
            return None;
        }
        let mut scratch = Vec::with_capacity(n);
        let mut d = |f: fn(&StepBreakdown) -> i64| {
            Dist::of_ints(steps.clone().into_iter().map(f), &mut scratch)
        };
        let step = d(|s| s.step_ns);
        let data_wait = d(|s| s.data_wait_ns);
        let forward = d(|s| s.forward_ns);
        let backward = d(|s| s.backward_ns);
        let comm = d(|s| s.comm_ns);
        let comm_overlapped = d(|s| s.comm_overlapped_ns);
        let comm_exposed = d(|s| s.comm_exposed_ns);
        let optimizer = d(|s| s.optimizer_ns);
        let writeback = d(|s| s.writeback_ns);
        let other = d(|s| s.other_ns);
        let comm_tail = d(|s| s.comm_tail_ns);
        let between = steps
            .clone()
            .into_iter()
            .any(|s| s.between_ns.is_some())
            .then(|| {
                Dist::of_ints(
                    steps.clone().into_iter().filter_map(|s| s.between_ns),
                    &mut scratch,
                )
            });
        let mut t = Totals::default();
        for s in steps {
            t.step_ns += s.step_ns;
            t.data_wait_ns += s.data_wait_ns;
            t.forward_ns += s.forward_ns;
            t.backward_ns += s.backward_ns;
            t.comm_ns += s.comm_ns;
            t.comm_overlapped_ns += s.comm_overlapped_ns;
            t.comm_exposed_ns += s.comm_exposed_ns;
            t.optimizer_ns += s.optimizer_ns;
            t.writeback_ns += s.writeback_ns;
            t.other_ns += s.other_ns;
            t.other_at.add(&s.other_at);
            t.between_ns += s.between_ns.unwrap_or(0);
        }
        Some(Breakdown {
            steps: n as u64,
            step,
            data_wait,
            forward,
            backward,
            comm,
            comm_overlapped,
            comm_exposed,
            optimizer,
            writeback,
            other,
            comm_tail,
            between,
            totals: t,
        })
    }
}

/// One rank's steady steps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankSummary {
    /// The rank.
    pub rank: u32,
    /// Steady steps.
    pub steps: u64,
    /// Warm-up steps (reported apart).
    pub warmup_steps: u64,
    /// The breakdown of its steady steps; `None` without any.
    pub breakdown: Option<Breakdown>,
    /// Steady steps per second of step time: `steps / Σ step time`.
    pub steps_per_s: Option<f64>,
    /// Samples per second: Σ samples / Σ step time over the steady steps
    /// that have a sample count (or `batch_size × steps_per_s`).
    pub samples_per_s: Option<f64>,
    /// Time per steady step (mean) its collectives spent waiting for the last
    /// rank to arrive (duration − the collective's transfer time, see
    /// [`CommSplit`]); `None` without collectives that two ranks recorded.
    #[serde(default)]
    pub waiting_per_step_ns: Option<f64>,
    /// The share of its collectives' time spent waiting for the last rank.
    #[serde(default)]
    pub waiting_share: Option<f64>,
}

/// How the steady steps' collectives (those two or more ranks recorded,
/// matched by sequence number) split into waiting and transfer. A
/// collective's **transfer** is the shortest duration across the ranks (the
/// last rank to arrive waits for nobody); each call's **waiting** is its
/// duration minus that, time spent for the last rank, not for the network.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CommSplit {
    /// Collectives compared.
    pub collectives: u64,
    /// Σ over the calls of their duration (ns).
    pub total_ns: i64,
    /// Σ over the calls of duration − transfer (ns).
    pub waiting_ns: i64,
    /// Σ over the calls of their exposed part (ns).
    pub exposed_ns: i64,
    /// The exposed part that was waiting: a call's exposed part is its end
    /// (the tail after backward) and its end is the transfer, so waiting is
    /// exposed only beyond the transfer (ns).
    pub exposed_waiting_ns: i64,
}

/// A warm-up step, with its breakdown over the ranks that have it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WarmupStep {
    /// The step number (`None` when the step spans have none).
    pub step: Option<u64>,
    /// Why it is a warm-up step.
    pub reason: WarmupReason,
    /// Its breakdown over ranks (`steps` = ranks that have it).
    pub breakdown: Breakdown,
}

/// Where a samples-per-second figure comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SamplesSource {
    /// `samples` counters in the trace.
    Counter,
    /// [`SummaryOptions::batch_size`].
    BatchSize,
}

/// A time between two steps of one rank: after `step`, before the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepGap {
    /// The rank.
    pub rank: u32,
    /// The step it follows (`None` for unnumbered windows).
    pub step: Option<u64>,
    /// Its length.
    pub ns: i64,
}

/// The times between steady steps longer than the median step (a checkpoint, an evaluation).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LongGaps {
    /// The steps they follow, on any rank.
    pub after_steps: Vec<u64>,
    /// How many (rank, step) gaps.
    pub rank_gaps: u64,
    /// The ranks that had them.
    #[serde(default)]
    pub ranks: Vec<u32>,
    /// Of how many ranks with steady steps.
    #[serde(default)]
    pub of_ranks: u32,
    /// The shortest of them.
    pub min_ns: i64,
    /// The longest of them.
    pub max_ns: i64,
    /// The outermost recorded frames of the program's collectives called in them, most calls
    /// first (at most [`GAP_CALLERS_NAMED`]): those that no shorter gap has, when there are
    /// such.
    pub callers: Vec<String>,
    /// The `torch.save` calls the PyTorch module recorded in them ([`CHECKPOINT_SAVE`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saves: Option<GapSaves>,
}

/// The `torch.save` calls in the long gaps between steps: a checkpoint every N steps.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GapSaves {
    /// How many calls.
    pub calls: u64,
    /// Their time, summed.
    pub ns: i64,
    /// The file saved most often (escaped for the terminal), when the calls wrote files.
    pub file: Option<String>,
}

/// Training speed over the steady steps, by the wall clock: each step with the time from its end
/// to the next step's start ([`StepBreakdown::between_ns`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// `1e9 /` (mean step time + mean time between steps) over all ranks' steady steps.
    pub steps_per_s: Option<f64>,
    /// Σ over ranks of each rank's samples per second (ranks train
    /// concurrently, each on its own samples).
    pub samples_per_s: Option<f64>,
    /// Where the sample counts come from.
    pub samples_source: Option<SamplesSource>,
}

/// Everything `ddp-probe summary` reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The run id.
    pub run_id: String,
    /// Ranks the headers declare.
    pub world_size: u32,
    /// Ranks with a trace.
    pub ranks_loaded: u32,
    /// How many ranks of `0..world_size` have no trace.
    pub missing_rank_count: u64,
    /// The first of them (at most 64).
    pub missing_ranks: Vec<u32>,
    /// The process groups smaller than the world that DDP reduces over
    /// (`DDP(model, process_group=group)`), each's ranks; empty for the whole world.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ddp_groups: Vec<Vec<u32>>,
    /// Steady steps (the most of any rank).
    pub steady_steps: u64,
    /// All ranks' steady steps pooled; `None` without any.
    pub overall: Option<Breakdown>,
    /// Per rank.
    pub ranks: Vec<RankSummary>,
    /// Warm-up steps, reported apart from the statistics.
    pub warmup: Vec<WarmupStep>,
    /// Training speed.
    pub throughput: Throughput,
    /// Per gradient bucket, by id.
    pub buckets: Vec<BucketStats>,
    /// Per collective operation, most time first.
    pub ops: Vec<OpStats>,
    /// Arrival order at collectives.
    pub stragglers: Stragglers,
    /// Waiting for the last rank vs transfer inside the collectives.
    #[serde(default)]
    pub comm_split: Option<CommSplit>,
    /// Where the straggler's time went, step by step (see [`super::slowdown`]).
    #[serde(default)]
    pub slowdowns: Slowdowns,
    /// Things the reader should know (missing data, assumptions).
    pub notes: Vec<String>,
    /// What the program does that defeats data parallelism or wastes it, to fix before any
    /// tuning: the same input on every rank, gradient accumulation that all-reduces every
    /// micro-batch, the recorders' own warnings (DDP's forward bypassed).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Parts of the step no rank recorded a span of ([`Summary::recorded`]; `data wait`,
    /// `communication`, `optimizer`): their rows say "not recorded", not 0 ns
    /// (a PyTorch program whose own communication hook or data loader the
    /// module cannot see).
    #[serde(default)]
    pub not_recorded: Vec<String>,
    /// The longest time between a steady step and the next ([`StepBreakdown::between_ns`]).
    #[serde(default)]
    pub longest_between: Option<StepGap>,
    /// The times between steady steps longer than the median step.
    #[serde(default)]
    pub long_gaps: Option<LongGaps>,
}

/// One line of the straggler verdict, as the text summary and the HTML report print it.
#[derive(Clone, Debug, PartialEq)]
pub struct StragglerLine {
    /// The sentence, with its lead-in (`straggler: `, `arrivals: `, `no straggler: `).
    pub text: String,
    /// Whether it names a straggler (a warning, not a reassurance).
    pub names_straggler: bool,
    /// Whether it details the line above it (the arrival count under the rank that held the
    /// steps back).
    pub detail: bool,
}

/// Whether some rank recorded `part` of the step, given the parts none did
/// ([`parts_not_recorded`]'s names: `data wait`, `communication`, `optimizer`, `writeback`; any
/// other part is always recorded). The one lookup of the views that mark an unrecorded part.
pub fn part_recorded(not_recorded: &[String], part: &str) -> bool {
    !not_recorded.iter().any(|p| p == part)
}

impl Summary {
    /// Whether some rank recorded `part` of the step ([`part_recorded`]).
    pub fn recorded(&self, part: &str) -> bool {
        part_recorded(&self.not_recorded, part)
    }

    /// The straggler verdict in words: the rank that held the steps back (what its lateness
    /// cost and where it sat) first, then the arrival count at the collectives. Empty when
    /// neither was measured. One text for the summary and the report, so they cannot disagree.
    pub fn straggler_verdict(&self) -> Vec<StragglerLine> {
        let mut lines = Vec::new();
        let st = &self.stragglers;
        let held_back = self.slowdowns.straggler.as_ref();
        if let Some(v) = held_back {
            lines.push(StragglerLine {
                text: format!("straggler: {}", v.sentence(render::ns)),
                names_straggler: true,
                detail: false,
            });
        }
        if st.collectives > 0 {
            let prefix = match (held_back.is_some(), st.straggler.is_some()) {
                (true, _) => "arrivals: ",
                (false, true) => "straggler: ",
                (false, false) => "no straggler: ",
            };
            let mut text = format!("{prefix}{}", st.verdict());
            if st.straggler.is_none() {
                match held_back {
                    Some(v) if v.phase == "backward" && v.buckets.is_some() => {
                        text.push_str(" The straggler's lateness sits in some buckets only.");
                    }
                    Some(_) => text.push_str(
                        " The arrival count weighs every collective alike; the straggler above \
                         is named for what its lateness cost the steps.",
                    ),
                    None => {}
                }
                if let Some(t) = st.ranks.first() {
                    text.push_str(&format!(
                        " Most waited for: rank {} ({} in total).",
                        t.rank,
                        render::ns(t.wait_caused_ns as f64)
                    ));
                }
            }
            lines.push(StragglerLine {
                text,
                names_straggler: held_back.is_none() && st.straggler.is_some(),
                detail: held_back.is_some(),
            });
        }
        lines
    }
}

impl CommSplit {
    /// One sentence: the split of the collectives' time and of its exposed
    /// part; `None` when they took no time.
    pub fn sentence(&self) -> Option<String> {
        if self.total_ns <= 0 {
            return None;
        }
        let share = |a: i64, b: i64| render::pct(a as f64 / b.max(1) as f64);
        let mut line = format!(
            "Inside the collectives {} of the time was waiting for the last rank to arrive and {} \
             transfer",
            share(self.waiting_ns, self.total_ns),
            share(self.total_ns - self.waiting_ns, self.total_ns)
        );
        if self.exposed_ns > 0 {
            line.push_str(&format!(
                "; of the exposed part, {} was waiting",
                share(self.exposed_waiting_ns, self.exposed_ns)
            ));
        }
        line.push_str(&format!(" ({} collectives).", self.collectives));
        Some(line)
    }
}

/// Gradient accumulation that all-reduces every micro-batch: on some rank, a third of its
/// steps or more (3 at least, a last one without an optimizer step left out as possibly cut
/// short) ran a backward whose
/// communication ran (DDP's buckets, synchronised) with no optimizer step after it, while its
/// other steps (2 at least) had one. The module closes a step at a synchronised backward that
/// the next forward follows without an optimizer step, so each such micro-batch is a step of
/// its own; a program that never records an optimizer step (its own update) is not judged.
fn accumulation_without_no_sync(scans: &RunScan) -> Option<String> {
    let (rank, no_opt, with_opt, comm) = scans
        .ranks
        .iter()
        .filter_map(|r| {
            // A last step without an optimizer span may have been cut short: left out.
            let cut = r.steps.last().is_some_and(|s| s.optimizer_ns == 0);
            let steps = &r.steps[..r.steps.len() - usize::from(cut)];
            let synced_alone: Vec<&StepBreakdown> = steps
                .iter()
                .filter(|s| s.optimizer_ns == 0 && s.comm_ns > 0)
                .collect();
            let with_opt = steps.iter().filter(|s| s.optimizer_ns > 0).count();
            let n = synced_alone.len();
            (n >= 3 && with_opt >= 2 && 3 * n >= n + with_opt).then(|| {
                let comm = synced_alone.iter().map(|s| s.comm_ns as f64).sum::<f64>() / n as f64;
                (r.rank, n, with_opt, comm)
            })
        })
        .next()?;
    let per_step = (no_opt + with_opt) as f64 / with_opt as f64;
    Some(format!(
        "gradient accumulation all-reduces every micro-batch: {no_opt} of rank {rank}'s {} \
         steps ran a synchronised backward (DDP all-reduced its buckets) with no optimizer step \
         after it, about {per_step:.0} backwards per optimizer step, each counted here as a \
         step. Only the last micro-batch's all-reduce is needed: run the others under \
         `model.no_sync()` (or set `model.require_backward_grad_sync = False` for them) to save \
         about {} of communication each, {} per optimizer step",
        no_opt + with_opt,
        render::ns(comm),
        render::ns(comm * (per_step - 1.0))
    ))
}

/// The instant the PyTorch module writes for each `torch.save` call (`args`: `path`, the file's
/// absolute path when it was one, and `duration_ns`).
pub const CHECKPOINT_SAVE: &str = "checkpoint_save";

/// One `torch.save` call of a rank ([`CHECKPOINT_SAVE`] instant), read once for the checks
/// that use them.
struct SaveCall<'r> {
    rank: u32,
    host: &'r str,
    /// The step it followed.
    step: Option<u64>,
    /// The file's absolute path, when it wrote one.
    path: Option<String>,
    ns: i64,
}

/// Every rank's `torch.save` calls (none without the instant: one lookup).
fn checkpoint_saves(run: &Run) -> Vec<SaveCall<'_>> {
    let Some(name) = run.strings.lookup(CHECKPOINT_SAVE) else {
        return Vec::new();
    };
    let mut saves = Vec::new();
    for rank in &run.ranks {
        for i in rank.instants.iter().filter(|i| i.name == name) {
            let args = run.instant_args(i).unwrap_or_default();
            saves.push(SaveCall {
                rank: rank.header.rank,
                host: &rank.header.hostname,
                step: i.step,
                path: args["path"].as_str().map(str::to_owned),
                ns: args["duration_ns"].as_i64().unwrap_or(0),
            });
        }
    }
    saves
}

/// Ranks of one host that each saved the same file with `torch.save` (`saves`): every rank
/// writing the checkpoint, where one should (PyTorch's DDP tutorial saves on rank 0 only).
/// The writes race on the file and the job pays the I/O once per rank. The file saved by the
/// most ranks is named (then the most saves).
fn one_file_saved_by_several_ranks(saves: &[SaveCall<'_>]) -> Option<String> {
    // (host, path) -> (the ranks, their saves, their total time)
    let mut by_file: BTreeMap<(&str, &str), (BTreeSet<u32>, u64, i64)> = BTreeMap::new();
    for save in saves {
        let Some(path) = &save.path else { continue };
        let file = by_file.entry((save.host, path)).or_default();
        file.0.insert(save.rank);
        file.1 += 1;
        file.2 += save.ns;
    }
    let ((_, path), (ranks, calls, total_ns)) = by_file
        .into_iter()
        .filter(|(_, (ranks, _, _))| ranks.len() >= 2)
        .max_by_key(|(_, (ranks, calls, _))| (ranks.len(), *calls))?;
    let names: Vec<String> = ranks.iter().map(u32::to_string).collect();
    Some(format!(
        "ranks {} each saved {} with torch.save ({calls} saves in all, {} each on average): \
         every rank writes the same file, so the writes race (on a shared file system the file \
         can end up with parts of different writes) and the job pays the I/O {} times; save on \
         one rank (`if dist.get_rank() == 0:`) and have the others wait in `dist.barrier()` \
         before any of them reads it",
        names.join(", "),
        crate::text::escape_controls(path),
        render::ns(total_ns as f64 / calls as f64),
        ranks.len()
    ))
}

/// What [`Summary::warnings`] holds, for a caller that wants them alone (the end of
/// `ddp-probe run`): the run's scan and the checks of its instants and logs, without the rest
/// of the summary (its tables, stragglers and slowdowns).
pub fn warnings(run: &Run, opts: &SummaryOptions) -> Vec<String> {
    let scans = scan_run(run, opts, &mut |_| {});
    warnings_of(run, &scans, &checkpoint_saves(run))
}

/// [`crate::analysis::step_breakdowns`] and [`warnings`] from one scan of the run (the
/// terminal viewer indexes a run with both; the scan is most of the cost of either).
pub fn step_breakdowns_and_warnings(
    run: &Run,
    opts: &SummaryOptions,
) -> (Vec<StepBreakdown>, Vec<String>) {
    let scans = scan_run(run, opts, &mut |_| {});
    let warnings = warnings_of(run, &scans, &checkpoint_saves(run));
    let breakdowns = scans.ranks.into_iter().flat_map(|r| r.steps).collect();
    (breakdowns, warnings)
}

/// The summary's warnings, in the order it prints them.
fn warnings_of(run: &Run, scans: &RunScan, saves: &[SaveCall<'_>]) -> Vec<String> {
    let mut warnings: Vec<String> = same_input_on_every_rank(run).into_iter().collect();
    warnings.extend(parameters_without_gradient(run));
    warnings.extend(accumulation_without_no_sync(scans));
    warnings.extend(one_file_saved_by_several_ranks(saves));
    warnings.extend(collective_called_differently(run));
    warnings.extend(trace_warnings(run));
    warnings
}

/// The first collective the ranks of one process group called differently
/// ([`Run::first_different_call`]), in a run that may have ended well: gloo aborts a rank on
/// an all-gather whose sizes differ, but NCCL's result is undefined (wrong data, or a hang
/// later), and an evaluation's gather of predictions of different lengths passes silently.
fn collective_called_differently(run: &Run) -> Option<String> {
    let calls = run.first_different_call()?;
    let (_, first) = calls.first()?;
    let by_rank: Vec<(usize, &probe_contract::hang::CollectiveRef)> =
        calls.iter().map(|(r, c)| (*r as usize, c)).collect();
    let ops_differ = probe_contract::hang::ops_differ(&by_rank);
    // Where it was called, when the ranks made the same call (a caller is one rank's).
    let at = first
        .caller
        .as_deref()
        .filter(|_| !ops_differ)
        .map(|c| format!(" from {}", crate::text::escape_controls(c)))
        .unwrap_or_default();
    let step = first
        .step
        .map(|s| format!(" (step {s})"))
        .unwrap_or_default();
    let calls = probe_contract::hang::different_calls(&by_rank);
    let calls = crate::text::escape_controls(&calls);
    let name = if ops_differ {
        "collective".to_owned()
    } else {
        crate::text::escape_controls(first.op.as_deref().unwrap_or("collective")).into_owned()
    };
    let what = if ops_differ {
        format!(
            "as different operations ({calls}): their code took different paths (a collective \
             inside a branch some ranks skip)"
        )
    } else {
        format!(
            "with different sizes ({calls}): every rank must pass a tensor of the same size (pad \
             to the largest, or reduce fixed-size statistics); gloo aborts a rank on it, NCCL's \
             result is undefined (wrong data, or a hang later)"
        )
    };
    Some(format!(
        "the ranks called {name} seq {}{step}{at} {what}",
        first.seq
    ))
}

/// How many parameters [`parameters_without_gradient`] names before "and N more".
const NAMED_WITHOUT_GRADIENT: usize = 3;
/// The most parameters with a gradient it names ("Only head.weight and head.bias got one").
const NAMED_TRAINED: usize = 4;

/// Parameters of the DDP model that got no gradient in any recorded rank-step (`grad_ready`
/// offsets negative in every record of every rank, [`UNUSED_SEARCH_MIN_RECORDS`] records at
/// least) while others did: they do not train, and DDP still all-reduces their buckets, since
/// `find_unused_parameters` or `static_graph` lets it go on without the error it raises
/// otherwise. Found on a model whose blocks ran under `torch.utils.checkpoint` with
/// `use_reentrant=True` and an input without `requires_grad` (PyTorch warns once per rank, in
/// words that do not say the model stopped training): 24 of its 26 parameters never trained
/// and the summary said nothing.
fn parameters_without_gradient(run: &Run) -> Option<String> {
    let ddp = run.ranks.iter().find_map(|r| r.header.ddp.as_ref())?;
    let records: Vec<_> = run.ranks.iter().flat_map(|r| &r.grad_ready).collect();
    let params = ddp.params.len();
    if params == 0
        || records.len() < UNUSED_SEARCH_MIN_RECORDS
        || records.iter().any(|g| g.offsets_ns.len() != params)
    {
        return None;
    }
    // Whether each parameter got a gradient in any record: one pass, then both sides of it.
    let got: Vec<bool> = (0..params)
        .map(|i| records.iter().any(|g| g.offsets_ns[i] >= 0))
        .collect();
    let never: Vec<_> = ddp.params.iter().zip(&got).filter(|(_, g)| !**g).collect();
    // Every parameter without one says more about the recording than the model.
    if never.is_empty() || never.len() == params {
        return None;
    }
    let never_bytes: u64 = never.iter().map(|(p, _)| p.bytes).sum();
    let all_bytes: u64 = ddp.params.iter().map(|p| p.bytes).sum();
    let mut names: Vec<String> = never
        .iter()
        .take(NAMED_WITHOUT_GRADIENT)
        .map(|(p, _)| p.name.clone())
        .collect();
    if never.len() > NAMED_WITHOUT_GRADIENT {
        names.push(format!("{} more", never.len() - NAMED_WITHOUT_GRADIENT));
    }
    // The few that did train, when they are few: what the model has left.
    let trained: Vec<&str> = ddp
        .params
        .iter()
        .zip(&got)
        .filter(|(_, g)| **g)
        .map(|(p, _)| p.name.as_str())
        .collect();
    let only = if trained.len() <= NAMED_TRAINED {
        format!(" Only {} got one.", and_joined(&trained))
    } else {
        String::new()
    };
    // What DDP does about them: without either setting PyTorch's DDP stops at the next step
    // ("Expected to have finished reduction in the prior iteration").
    let setting = match (ddp.static_graph, ddp.find_unused_parameters) {
        (true, true) => "static_graph=True and find_unused_parameters=True let",
        (true, false) => "static_graph=True lets",
        (false, true) => "find_unused_parameters=True lets",
        (false, false) => "",
    };
    let ddp_goes_on = if setting.is_empty() {
        String::new()
    } else {
        format!(
            ", yet DDP all-reduces their buckets every step ({setting} it go on without an \
             error)"
        )
    };
    Some(format!(
        "{} of the DDP model's {params} parameters ({}, {} of the gradients' bytes) got no \
         gradient in any of the {} recorded rank-steps: {}.{only} They do not \
         train{ddp_goes_on}. Usual causes: activation \
         checkpointing with use_reentrant=True whose input does not require grad (PyTorch \
         warns \"None of the inputs have requires_grad=True\"; pass use_reentrant=False, or \
         in Hugging Face call model.enable_input_require_grads()), a layer built but never \
         called in forward, or part of the forward run under torch.no_grad() or on detached \
         tensors. Parameters meant to stay frozen should have requires_grad=False before DDP \
         is built",
        never.len(),
        render::bytes(never_bytes as f64),
        render::pct(never_bytes as f64 / all_bytes.max(1) as f64),
        records.len(),
        and_joined(&names),
    ))
}

/// `a`, `a and b`, `a, b and c`.
fn and_joined<S: AsRef<str>>(items: &[S]) -> String {
    match items.split_last() {
        Some((last, rest)) if !rest.is_empty() => {
            let rest: Vec<&str> = rest.iter().map(AsRef::as_ref).collect();
            format!("{} and {}", rest.join(", "), last.as_ref())
        }
        Some((last, _)) => last.as_ref().to_owned(),
        None => String::new(),
    }
}

/// The share of the mean steady step spent waiting for the next batch from which
/// [`steps_waiting_for_data`] speaks.
const DATA_WAIT_SHARE: f64 = 0.10;

/// The instant the PyTorch module writes with the settings of the DataLoader that feeds the
/// training steps (`num_workers`, `prefetch_factor`, `pin_memory`, `persistent_workers`, and
/// `cores`, the CPU cores the rank may run on).
pub const TRAINING_LOADER: &str = "training_loader";

/// Steady steps that wait for their data [`DATA_WAIT_SHARE`] of their time or more: the input
/// pipeline sets that part of the pace, and what to change depends on the training
/// DataLoader's settings ([`TRAINING_LOADER`]): workers when it has none (every batch then
/// loads on the training thread while the step waits), else more of them or less work per
/// sample. The mean, not the median: workers that mostly keep up but stall every few batches
/// cost the steps that stall.
fn steps_waiting_for_data(run: &Run, b: &Breakdown) -> Option<String> {
    let share = b.data_wait.mean / b.step.mean;
    if !share.is_finite() || share < DATA_WAIT_SHARE {
        return None;
    }
    let settings = run.strings.lookup(TRAINING_LOADER).and_then(|name| {
        run.ranks
            .iter()
            .flat_map(|r| &r.instants)
            .filter(|i| i.name == name)
            .find_map(|i| run.instant_args(i))
    });
    let nccl = run
        .ranks
        .iter()
        .filter_map(|r| r.header.ddp.as_ref())
        .any(|d| d.backend == "nccl");
    let ranks_here = run
        .ranks
        .first()
        .map_or(1, |r| r.header.local_world_size.max(1));
    let cores_sentence = |cores: u64| {
        if ranks_here > 1 {
            format!(
                "{cores} cores for this rank, which the node's {ranks_here} ranks share unless \
                 they are bound apart: about {} each",
                (cores / u64::from(ranks_here)).max(1)
            )
        } else {
            format!("{cores} cores for this rank")
        }
    };
    let mut text = format!(
        "the steps wait {} on average for their next batch, {} of the mean step ({} median \
         wait): the input pipeline, not the model or the network, sets that part of the pace. ",
        render::ns(b.data_wait.mean),
        render::pct(share),
        render::ns(b.data_wait.median),
    );
    match settings {
        Some(s) => {
            let workers = s["num_workers"].as_u64().unwrap_or(0);
            let cores = s["cores"].as_u64();
            if workers == 0 {
                text.push_str(
                    "The training DataLoader has num_workers=0: every batch is read, decoded and \
                     collated on the training thread while the step waits. Give it worker \
                     processes, which prepare the next batches during the step: \
                     DataLoader(..., num_workers=N, persistent_workers=True)",
                );
                if let Some(c) = cores {
                    text.push_str(&format!(
                        ", N up to the cores there are ({})",
                        cores_sentence(c)
                    ));
                }
            } else {
                text.push_str(&format!(
                    "The training DataLoader's {workers} worker{} (prefetch_factor {}) {} not \
                     keep up: more workers",
                    if workers == 1 { "" } else { "s" },
                    s["prefetch_factor"]
                        .as_u64()
                        .map_or("-".to_owned(), |p| p.to_string()),
                    if workers == 1 { "does" } else { "do" },
                ));
                if let Some(c) = cores {
                    text.push_str(&format!(" ({})", cores_sentence(c)));
                }
                if s["persistent_workers"].as_bool() == Some(false) {
                    text.push_str(
                        ", persistent_workers=True (each epoch otherwise starts its workers \
                         again)",
                    );
                }
                text.push_str(
                    ", less work per sample (decoding, augmentation) or data read from a \
                     faster place than a network file system",
                );
            }
            if nccl && s["pin_memory"].as_bool() == Some(false) {
                text.push_str("; on GPUs, pin_memory=True lets the copy to the GPU overlap");
            }
        }
        None => text.push_str(
            "Give the DataLoader worker processes (num_workers) if it has none, else more of \
             them, or less work per sample (decoding, augmentation)",
        ),
    }
    Some(text)
}

/// The instant the PyTorch module writes on a rank that ran out of inputs under DDP's Join
/// context manager, at its first shadow of the other ranks' all-reduces (`args`: `steps`, the
/// steps it had trained).
pub const DDP_JOINED: &str = "ddp_joined";

/// Ranks that ran out of inputs and joined under DDP's Join ([`DDP_JOINED`]): they shadowed
/// the others' collectives for the steps they lacked. The traces hold fewer steps for them, and
/// the steps they lacked trained on fewer ranks' batches: the uneven inputs Join makes up for,
/// said with how far apart the ranks' counts were (PyTorch's Join on 2 CPU ranks, one with 3
/// batches fewer, 2026-12-07: rank 1 had been told "training went on in eval mode").
fn ranks_that_joined(run: &Run) -> Option<String> {
    let name = run.strings.lookup(DDP_JOINED)?;
    let (most, fullest) = run
        .ranks
        .iter()
        .map(|r| (r.steps().count(), std::cmp::Reverse(r.rank())))
        .max()
        .map(|(n, r)| (n, format!("rank {}", r.0)))?;
    let mut said = Vec::new();
    for rank in &run.ranks {
        let joins: Vec<u64> = rank
            .instants
            .iter()
            .filter(|i| i.name == name)
            .filter_map(|i| run.instant_args(i)?["steps"].as_u64())
            .collect();
        let Some(&last) = joins.last() else { continue };
        let trained = rank.steps().count();
        let lacked = most.saturating_sub(trained);
        let when = if joins.len() == 1 {
            format!("after {}", plural(last as usize, "step", "steps"))
        } else {
            format!(
                "{} times (after steps {}), {} in all",
                joins.len(),
                joins
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                plural(trained, "step", "steps"),
            )
        };
        said.push(format!(
            "rank {} joined {when}, {lacked} fewer than {}'s {most}",
            rank.rank(),
            fullest,
        ));
    }
    if said.is_empty() {
        return None;
    }
    Some(format!(
        "Uneven inputs, made up for by DDP's Join context manager: {}. A rank that runs out of \
         batches joins and shadows the others' all-reduces with zeros for its gradients \
         until every rank is done, so those steps trained on fewer ranks' batches (with Join's \
         default, divide_by_initial_world_size=True, their averaged gradients are smaller) and \
         the joined rank waited meanwhile. Equal batches per rank (DistributedSampler pads \
         by default; drop_last=True drops the rest) avoid both, and Join itself (two flags \
         all-reduced every step, beside the forward and backward, and with buffers to \
         broadcast, an all-reduce before each forward to agree on the rank that sends them).",
        said.join("; ")
    ))
}

/// The instant the PyTorch module writes when the process builds another DDP model than the one
/// it records (`args`: `module`, its class name, and `parameters`, its parameter count).
pub const UNRECORDED_DDP_MODEL: &str = "unrecorded_ddp_model";

/// Another DDP model of the same processes, unrecorded ([`UNRECORDED_DDP_MODEL`]): a GAN's
/// discriminator, a teacher, an EMA copy wrapped in DDP. What it does inside the recorded steps
/// is time no span explains, and its all-reduces are in no figure (a DCGAN-shaped loop on 2
/// CPU ranks, 2026-12-07: 70% of the step other / idle, placed "before the forward (the
/// batch's preparation ...)" and "between forward and backward (the loss)", where the
/// discriminator's forward, backward and optimizer step ran).
fn unrecorded_ddp_models(run: &Run, b: &Breakdown) -> Option<String> {
    let name = run.strings.lookup(UNRECORDED_DDP_MODEL)?;
    let rank = run
        .ranks
        .iter()
        .find(|r| r.instants.iter().any(|i| i.name == name))?;
    let models: Vec<String> = rank
        .instants
        .iter()
        .filter(|i| i.name == name)
        .filter_map(|i| run.instant_args(i))
        .map(|a| {
            let module = crate::text::escape_controls(a["module"].as_str().unwrap_or("a module"))
                .into_owned();
            match a["parameters"].as_i64() {
                Some(n) => format!(
                    "{module} of {} parameters",
                    crate::units::group_thousands(n)
                ),
                None => module,
            }
        })
        .collect();
    let (what, its, it) = if models.len() == 1 {
        ("another DistributedDataParallel model", "its", "it")
    } else {
        (
            "other DistributedDataParallel models",
            "their",
            "one of them",
        )
    };
    let share = b.other.mean / b.step.mean;
    let other = if share.is_finite() {
        format!(" ({} of the mean step)", render::pct(share))
    } else {
        String::new()
    };
    Some(format!(
        "the program also trains {what}, not recorded ({}): only the first one built is, one \
         per trace. What {it} does inside the recorded steps ({its} forward, backward, \
         all-reduces, optimizer step) counts as other / idle{other}, and {its} communication \
         is in no figure here. To record {it} instead, call ddp_probe_torch.instrument on it \
         in the script (without --auto-instrument).",
        models.join("; "),
    ))
}

/// The instant the PyTorch module writes with a hash of each of the first steps' input.
pub const BATCH_FINGERPRINT: &str = "batch_fingerprint";

/// Whether every rank got the same input, step after step: the fingerprints of the first
/// steps' inputs ([`BATCH_FINGERPRINT`] instants: the DataLoader batch's tensors or the
/// forward's) equal across all recorded ranks in every step that each of them fingerprinted, two
/// steps at least. Then the data is not split across the ranks (no DistributedSampler), and
/// the job computes the same gradients on every rank.
fn same_input_on_every_rank(run: &Run) -> Option<String> {
    // A run without the instant (every reference-DDP run) is not scanned: one lookup, then
    // symbols compared, not strings, over every rank's instants (one per collective).
    let name = run
        .strings
        .lookup(BATCH_FINGERPRINT)
        .filter(|_| run.ranks.len() >= 2)?;
    let mut by_step: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for rank in &run.ranks {
        for i in &rank.instants {
            if i.name != name {
                continue;
            }
            let Some(step) = i.step else {
                continue;
            };
            let fingerprint = run
                .instant_args(i)
                .and_then(|v| v["fingerprint"].as_str().map(str::to_owned));
            if let Some(f) = fingerprint {
                by_step.entry(step).or_default().push(f);
            }
        }
    }
    let every_rank: Vec<(u64, &Vec<String>)> = by_step
        .iter()
        .filter(|(_, f)| f.len() == run.ranks.len())
        .map(|(s, f)| (*s, f))
        .collect();
    let same =
        every_rank.len() >= 2 && every_rank.iter().all(|(_, f)| f.iter().all(|x| *x == f[0]));
    if !same {
        return None;
    }
    let steps: Vec<u64> = every_rank.iter().map(|(s, _)| *s).collect();
    Some(format!(
        "every rank got the same input in steps {} (identical input tensors on all {} \
         ranks): the data is not split across the ranks, so each computes the same gradients \
         and the job trains no faster than one rank; give each rank its own share (a \
         DistributedSampler, or a dataset sharded by rank)",
        steps
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        run.ranks.len()
    ))
}

/// The most warnings of the traces [`trace_warnings`] gives.
const TRACE_WARNINGS: usize = 3;

/// What the ranks' recorders warned about in their traces (`log` records of level warning or
/// worse: the PyTorch module's "the optimizer stepped the model's parameters with gradients from
/// a backward that did not go through its forward"), each message once with the first rank that
/// wrote it, at most [`TRACE_WARNINGS`].
fn trace_warnings(run: &Run) -> Vec<String> {
    let mut seen: Vec<(&str, u32)> = Vec::new();
    for rank in &run.ranks {
        for log in rank.logs.iter().filter(|l| l.level >= LogLevel::Warn) {
            if !seen.iter().any(|(m, _)| *m == &*log.message) {
                seen.push((&log.message, rank.header.rank));
            }
        }
    }
    seen.into_iter()
        .take(TRACE_WARNINGS)
        .map(|(message, rank)| format!("rank {rank}: {message}"))
        .collect()
}

/// The parts of the step no rank recorded a span of: one pass over the spans,
/// ending as soon as every part was seen. Communication counts as recorded
/// when some collective is, except in a DDP trace (with `bucket_ready`
/// windows) whose collectives all lack a bucket: there the buckets'
/// all-reduces went unseen (a PyTorch hook registered before `instrument`)
/// and only other collectives, such as the buffer broadcast, were timed.
pub fn parts_not_recorded(run: &Run) -> Vec<String> {
    const PARTS: [(&str, SpanKind); 4] = [
        ("data wait", SpanKind::DataWait),
        ("communication", SpanKind::Collective),
        ("optimizer", SpanKind::Optimizer),
        // The reference DDP's copy of reduced buckets into the gradients;
        // PyTorch's DDP does it inside its reducer, unseen by the module.
        ("writeback", SpanKind::Writeback),
    ];
    let mut seen = [false; PARTS.len()];
    let (mut bucket_windows, mut bucket_collectives) = (false, false);
    'spans: for rank in &run.ranks {
        for span in rank.spans() {
            match span.kind() {
                SpanKind::BucketReady => bucket_windows = true,
                SpanKind::Collective if span.bucket().is_some() => bucket_collectives = true,
                _ => {}
            }
            if let Some(i) = PARTS.iter().position(|(_, k)| *k == span.kind()) {
                seen[i] = true;
                if seen.iter().all(|&s| s) && bucket_collectives {
                    break 'spans;
                }
            }
        }
    }
    if bucket_windows && !bucket_collectives {
        seen[1] = false;
    }
    PARTS
        .iter()
        .zip(seen)
        .filter(|(_, seen)| !seen)
        .map(|((name, _), _)| (*name).to_owned())
        .collect()
}

/// Summarizes a run: single passes over each rank's sorted lanes, then
/// linear-time grouping of the collectives. Never panics, whatever the run
/// holds (no ranks, ranks without steps, zero-length spans...).
pub fn summarize(run: &Run, opts: &SummaryOptions) -> Summary {
    let mut seq_table: SeqTable = SeqTable::default();
    let mut bucket_table = BucketTable::default();
    let mut op_table = OpTable::default();
    let mut steady_calls = 0u64;
    // Every steady call's (rank, group key, sequence number, duration), for the ranks'
    // waiting (24 bytes a call; the cost model's table does not keep them).
    let mut seq_calls: Vec<(u32, u32, u64, i64)> = Vec::new();
    let scans = scan_run(run, opts, &mut |w| {
        if w.steady {
            steady_calls += w.calls.len() as u64;
            let group = w.trace.seq_group();
            seq_calls.extend(
                w.calls
                    .iter()
                    .filter_map(|c| Some((w.rank, group, c.span.seq()?, c.duration))),
            );
            seq_table.add(w);
            bucket_table.add(w);
            op_table.add(w);
        }
    });
    let mut notes = Vec::new();

    let steady = |s: &&StepBreakdown| s.warmup.is_none();
    let overall = Breakdown::of(
        scans
            .ranks
            .iter()
            .flat_map(|r| r.steps.iter())
            .filter(steady),
    );

    let mut ranks = Vec::with_capacity(scans.ranks.len());
    let mut any_counter = false;
    let mut samples_total_rate = 0.0;
    let mut any_rate = false;
    for r in &scans.ranks {
        let st: Vec<&StepBreakdown> = r.steps.iter().filter(steady).collect();
        let breakdown = Breakdown::of(st.iter().copied());
        let time: i64 = st.iter().map(|s| s.step_ns).sum();
        // Steps take `time`; with the time between them, the wall clock runs longer by `wall`.
        let wall = breakdown.as_ref().map_or(1.0, wall_clock_factor);
        let steps_per_s = (time > 0).then(|| st.len() as f64 / (time as f64 * wall / 1e9));
        let (mut samples, mut samples_time) = (0.0, 0i64);
        let mut counted = false;
        for s in &st {
            if let Some(v) = s.samples {
                samples += v;
                samples_time += s.step_ns;
                counted = true;
            }
        }
        let samples_per_s = if counted && samples_time > 0 {
            any_counter = true;
            Some(samples / (samples_time as f64 * wall / 1e9))
        } else {
            opts.batch_size
                .and_then(|b| steps_per_s.map(|sps| b as f64 * sps))
        };
        if let Some(v) = samples_per_s {
            samples_total_rate += v;
            any_rate = true;
        }
        ranks.push(RankSummary {
            rank: r.rank,
            steps: st.len() as u64,
            warmup_steps: (r.steps.len() - st.len()) as u64,
            breakdown,
            steps_per_s,
            samples_per_s,
            waiting_per_step_ns: None,
            waiting_share: None,
        });
    }
    let steady_steps = ranks.iter().map(|r| r.steps).max().unwrap_or(0);

    // Warm-up steps grouped across ranks by step number (else by position).
    let mut warm: BTreeMap<(u8, u64), (WarmupReason, Vec<&StepBreakdown>)> = BTreeMap::new();
    for r in &scans.ranks {
        for (i, s) in r.steps.iter().filter(|s| s.warmup.is_some()).enumerate() {
            let key = match s.step {
                Some(n) => (0, n),
                None => (1, i as u64),
            };
            let reason = s.warmup.unwrap_or(WarmupReason::FirstSteps);
            warm.entry(key).or_insert((reason, Vec::new())).1.push(s);
        }
    }
    let warmup = warm
        .into_iter()
        .filter_map(|((kind, n), (reason, v))| {
            Some(WarmupStep {
                step: (kind == 0).then_some(n),
                reason,
                breakdown: Breakdown::of(v.iter().copied())?,
            })
        })
        .collect();

    let seqs = seq_table.finish();
    let buckets = bucket_table.finish(run, seqs.views());
    let ops = op_table.finish(run);
    let stragglers = stragglers(seqs.views());
    let mut split = CommSplit::default();
    for v in seqs.views().filter(|v| v.ranks >= 2) {
        split.collectives += 1;
        split.waiting_ns = split.waiting_ns.saturating_add(v.waiting);
        split.total_ns = split.total_ns.saturating_add(v.total);
        split.exposed_ns = split.exposed_ns.saturating_add(v.exposed);
        split.exposed_waiting_ns = split.exposed_waiting_ns.saturating_add(v.exposed_waiting);
    }
    let comm_split = (split.collectives > 0).then_some(split);
    if comm_split.is_some() {
        for (rank, wait, total) in seqs.waiting_by_rank(&seq_calls) {
            if let Some(r) = ranks.iter_mut().find(|r| r.rank == rank && r.steps > 0) {
                r.waiting_per_step_ns = Some(wait as f64 / r.steps as f64);
                r.waiting_share = (total > 0).then(|| wait as f64 / total as f64);
            }
        }
    }
    let mut steady_pairs: Vec<(u32, u64)> = scans
        .ranks
        .iter()
        .flat_map(|r| {
            r.steps
                .iter()
                .filter(|s| s.warmup.is_none())
                .filter_map(move |s| Some((r.rank, s.step?)))
        })
        .collect();
    steady_pairs.sort_unstable();
    let slowdowns = slowdowns(run, &steady_pairs);

    let step_ends: BTreeMap<(u32, u64), i64> = scans
        .ranks
        .iter()
        .flat_map(|r| r.steps.iter())
        .filter(steady)
        .filter_map(|s| Some(((s.rank, s.step?), s.start_ns + s.step_ns)))
        .collect();
    // The program's own collectives of the steady steps, read once: the long gaps name their
    // callers, the note on them counts the others.
    let program_calls = marked_calls(run, &steady_pairs, "program");
    let long_gap_list = overall
        .as_ref()
        .map(|b| gaps_after_steps(&scans, b.step.median, true))
        .unwrap_or_default();
    let saves = checkpoint_saves(run);
    let long_gaps = overall.as_ref().and_then(|b| {
        let mut gaps = long_gaps(
            &program_calls,
            &scans,
            &long_gap_list,
            b.step.median,
            &step_ends,
        )?;
        gaps.saves = saves_in_gaps(&saves, &long_gap_list);
        Some(gaps)
    });
    let longest_between = scans
        .ranks
        .iter()
        .flat_map(|r| r.steps.iter())
        .filter(steady)
        .filter_map(|s| {
            Some(StepGap {
                rank: s.rank,
                step: s.step,
                ns: s.between_ns?,
            })
        })
        .max_by_key(|g| (g.ns, std::cmp::Reverse((g.rank, g.step))));
    let throughput = Throughput {
        steps_per_s: overall
            .as_ref()
            .filter(|b| b.step.mean > 0.0)
            .map(|b| 1e9 / (b.step.mean * wall_clock_factor(b))),
        samples_per_s: any_rate.then_some(samples_total_rate),
        samples_source: any_rate.then_some(if any_counter {
            SamplesSource::Counter
        } else {
            SamplesSource::BatchSize
        }),
    };

    if run.ranks.is_empty() {
        notes.push("the run has no rank traces".to_owned());
    }
    let warnings = warnings_of(run, &scans, &saves);
    let no_steps: Vec<u32> = scans
        .ranks
        .iter()
        .filter(|r| r.steps.is_empty())
        .map(|r| r.rank)
        .collect();
    if !no_steps.is_empty() {
        notes.push(format!(
            "{} without `step` spans: {}",
            plural(no_steps.len(), "rank", "ranks"),
            list(&no_steps, no_steps.len() as u64)
        ));
    }
    if overall.is_none() && !run.ranks.is_empty() {
        notes.push(
            "no steady steps: every step is a warm-up step (first iteration or bucket rebuild)"
                .to_owned(),
        );
    }
    // Ranks of 0..world_size without a trace (the first MISSING_LISTED of them listed).
    let missing_count = run.missing_rank_count();
    let missing = run.missing_ranks();
    if missing_count > 0 {
        notes.push(format!(
            "{} of {} without a trace: {}",
            plural(missing_count as usize, "rank", "ranks"),
            run.world_size,
            list(&missing, missing_count),
        ));
    }
    if overall.is_some() && steady_calls == 0 {
        notes.push("no collective spans inside the steady steps".to_owned());
    }
    notes.extend(unused_search_for_nothing(run));
    notes.extend(collectives_after_their_steps(run));
    notes.extend(ranks_that_joined(run));
    if let Some(b) = &overall {
        notes.extend(steps_waiting_for_data(run, b));
        notes.extend(unrecorded_ddp_models(run, b));
        notes.extend(buffer_broadcast_cost(run, &steady_pairs, b.step.median));
        let long_gap_pairs: Vec<(u32, u64)> = long_gap_list
            .iter()
            .map(|&(rank, step, _)| (rank, step))
            .collect();
        notes.extend(program_collectives(
            &program_calls,
            &steady_pairs,
            b.step.median,
            &step_ends,
            &long_gap_pairs,
        ));
    }
    Summary {
        run_id: run.run_id.clone(),
        world_size: run.world_size,
        ranks_loaded: run.ranks.len() as u32,
        missing_rank_count: missing_count,
        missing_ranks: missing,
        ddp_groups: run.ddp_subgroups(),
        steady_steps,
        overall,
        ranks,
        warmup,
        throughput,
        buckets,
        ops,
        stragglers,
        comm_split,
        slowdowns,
        notes,
        warnings,
        not_recorded: parts_not_recorded(run),
        longest_between,
        long_gaps,
    }
}

/// Whether a collective of a step started after the step's end (between it and the next).
fn called_after_its_step(c: &MarkedCall, step_ends: &BTreeMap<(u32, u64), i64>) -> bool {
    step_ends
        .get(&(c.rank, c.step))
        .is_some_and(|&end| c.start >= end)
}

/// Kinds of callers named for the long gaps between steps at most.
const GAP_CALLERS_NAMED: usize = 2;

/// The steady steps followed by a gap (rank, step, the gap's ns), sorted, those whose gap
/// outlasts the median step (`long`) or the others.
fn gaps_after_steps(
    scans: &super::scan::RunScan,
    median_step_ns: f64,
    long: bool,
) -> Vec<(u32, u64, i64)> {
    let mut gaps: Vec<(u32, u64, i64)> = scans
        .ranks
        .iter()
        .flat_map(|r| r.steps.iter())
        .filter(|s| s.warmup.is_none())
        .filter_map(|s| Some((s.rank, s.step?, s.between_ns?)))
        .filter(|&(_, _, ns)| (ns as f64 > median_step_ns) == long)
        .collect();
    gaps.sort_unstable();
    gaps
}

/// The times between steady steps longer than the median step (a checkpoint, an evaluation
/// every N steps), with the outermost recorded frames of the program's collectives called in
/// them (Hugging Face's Trainer: `transformers/trainer.py:4696 in evaluation_loop`; a script's
/// top level passed over for the frame it called).
/// `gaps` are [`gaps_after_steps`]' long ones; `program_calls` the program's collectives of the
/// steady steps.
fn long_gaps(
    program_calls: &[MarkedCall],
    scans: &super::scan::RunScan,
    gaps: &[(u32, u64, i64)],
    median_step_ns: f64,
    step_ends: &BTreeMap<(u32, u64), i64>,
) -> Option<LongGaps> {
    if median_step_ns <= 0.0 || gaps.is_empty() {
        return None;
    }
    let mut after_steps: Vec<u64> = gaps.iter().map(|g| g.1).collect();
    after_steps.sort_unstable();
    after_steps.dedup();
    let pairs: Vec<(u32, u64)> = gaps.iter().map(|g| (g.0, g.1)).collect();
    let mut ranks: Vec<u32> = pairs.iter().map(|p| p.0).collect();
    ranks.dedup();
    let of_ranks = scans
        .ranks
        .iter()
        .filter(|r| r.steps.iter().any(|s| s.warmup.is_none()))
        .count() as u32;
    // The callers in the long gaps, and those in the others: a caller that every gap has (a
    // per-step broadcast of PyTorch Lightning's) does not say why some gaps are long.
    let long_callers = gap_callers(program_calls, &pairs, step_ends);
    let short_pairs: Vec<(u32, u64)> = gaps_after_steps(scans, median_step_ns, false)
        .into_iter()
        .map(|(rank, step, _)| (rank, step))
        .collect();
    let in_short_gaps = gap_callers(program_calls, &short_pairs, step_ends);
    let telling: BTreeMap<String, usize> = long_callers
        .iter()
        .filter(|(frame, _)| !in_short_gaps.contains_key(*frame))
        .map(|(frame, n)| (frame.clone(), *n))
        .collect();
    let frames = if telling.is_empty() {
        long_callers
    } else {
        telling
    };
    let mut frames: Vec<(String, usize)> = frames.into_iter().collect();
    frames.sort_by_key(|f| std::cmp::Reverse(f.1));
    Some(LongGaps {
        after_steps,
        rank_gaps: gaps.len() as u64,
        ranks,
        of_ranks,
        min_ns: gaps.iter().map(|g| g.2).min().unwrap_or(0),
        max_ns: gaps.iter().map(|g| g.2).max().unwrap_or(0),
        callers: frames
            .into_iter()
            .take(GAP_CALLERS_NAMED)
            .map(|f| f.0)
            .collect(),
        saves: None,
    })
}

/// The `torch.save` calls (`saves`, each with the step it followed) in the gaps after the
/// (rank, step, length) `gaps`.
fn saves_in_gaps(saves: &[SaveCall<'_>], gaps: &[(u32, u64, i64)]) -> Option<GapSaves> {
    let pairs: BTreeSet<(u32, u64)> = gaps.iter().map(|g| (g.0, g.1)).collect();
    let (mut calls, mut ns) = (0u64, 0i64);
    let mut files: BTreeMap<&str, u64> = BTreeMap::new();
    for save in saves
        .iter()
        .filter(|s| s.step.is_some_and(|step| pairs.contains(&(s.rank, step))))
    {
        calls += 1;
        ns += save.ns;
        if let Some(path) = &save.path {
            *files.entry(path).or_default() += 1;
        }
    }
    (calls > 0).then(|| GapSaves {
        calls,
        ns,
        file: files
            .into_iter()
            .max_by_key(|(_, n)| *n)
            .map(|(f, _)| crate::text::escape_controls(f).into_owned()),
    })
}

/// The outermost frames of the program's collectives (`program_calls`) called after their
/// step's end in the gaps after the (rank, step) `pairs` (sorted), with how many calls each.
fn gap_callers(
    program_calls: &[MarkedCall],
    pairs: &[(u32, u64)],
    step_ends: &BTreeMap<(u32, u64), i64>,
) -> BTreeMap<String, usize> {
    let mut frames: BTreeMap<String, usize> = BTreeMap::new();
    for c in program_calls {
        if pairs.binary_search(&(c.rank, c.step)).is_err() || !called_after_its_step(c, step_ends) {
            continue;
        }
        // The outermost frame that is neither a script's top level (`train.py:34 in <module>`,
        // where `trainer.train()` is called) nor the interpreter's (`<frozen runpy>:88 in
        // _run_code`, which ran the script; the module leaves it out since 2026-12-06).
        let outer = c.caller.as_deref().map(|f| {
            let frames: Vec<&str> = f.split(" <- ").collect();
            frames
                .iter()
                .rev()
                .find(|frame| !frame.ends_with(" in <module>") && !frame.starts_with('<'))
                .unwrap_or(&frames[0])
                .to_string()
        });
        if let Some(outer) = outer {
            *frames.entry(outer).or_default() += 1;
        }
    }
    frames
}

/// How much longer the wall clock runs than the steps: 1 + the mean time between steps over the
/// mean step (the mean over the steps followed by one; 1 without any).
fn wall_clock_factor(b: &Breakdown) -> f64 {
    match &b.between {
        Some(g) if b.step.mean > 0.0 && g.n > 0 => 1.0 + g.mean / b.step.mean,
        _ => 1.0,
    }
}

/// The share of the wall clock between steps above which the summary names it.
const BETWEEN_NAMED_SHARE: f64 = 0.02;

/// The time between steps, when it is [`BETWEEN_NAMED_SHARE`] of the wall clock or more, or one
/// gap is longer than the median step (a checkpoint or an evaluation every N steps). It is in no
/// step window, so the breakdown cannot show it, and a loop's tail can be slow.
pub fn between_steps_line(
    b: &Breakdown,
    longest: Option<&StepGap>,
    long: Option<&LongGaps>,
) -> Option<String> {
    let g = b.between.as_ref()?;
    let wall = b.step.mean + g.mean;
    let share = if wall > 0.0 { g.mean / wall } else { 0.0 };
    if share < BETWEEN_NAMED_SHARE && long.is_none() {
        return None;
    }
    let long = long.map_or(String::new(), |l| {
        let steps = &l.after_steps;
        let list = |v: &[u64]| {
            let shown: Vec<String> = v.iter().take(6).map(u64::to_string).collect();
            let more = v.len().saturating_sub(6);
            let more = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            format!("{}{more}", shown.join(", "))
        };
        let period = steps.windows(2).map(|w| w[1] - w[0]).collect::<Vec<_>>();
        let when = match period.first() {
            Some(&d) if period.iter().all(|&p| p == d) => {
                format!("every {d} steps (after steps {})", list(steps))
            }
            _ if steps.len() == 1 => format!("after step {}", steps[0]),
            _ => format!("after steps {}", list(steps)),
        };
        let (min, max) = (render::ns(l.min_ns as f64), render::ns(l.max_ns as f64));
        let range = if min == max {
            max
        } else {
            format!("{min}–{max}")
        };
        let only = if l.ranks.is_empty() || l.ranks.len() as u32 >= l.of_ranks {
            String::new()
        } else {
            let (which, it) = match &l.ranks[..] {
                [r] => (format!("rank {r}"), "it"),
                rs => (
                    format!(
                        "ranks {}",
                        rs.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
                    ),
                    "them",
                ),
            };
            format!(
                " on {which} only (the other ranks wait for {it} in the next step's first \
                 collective, as exposed communication)"
            )
        };
        let callers = if l.callers.is_empty() {
            String::new()
        } else {
            format!(
                "; the program's collectives there were called from {}",
                l.callers.join(" and from ")
            )
        };
        let saves = l.saves.as_ref().map_or(String::new(), |s| {
            let file = s
                .file
                .as_ref()
                .map_or(String::new(), |f| format!(", {f} the most"));
            let calls = if s.calls == 1 {
                "1 torch.save call".to_owned()
            } else {
                format!("{} torch.save calls", s.calls)
            };
            format!(
                "; {calls} there took {} in all (checkpoints{file})",
                render::ns(s.ns as f64)
            )
        });
        format!(" Longer than the median step {when}{only}: {range}{callers}{saves}.")
    });
    let longest = longest
        .map(|l| {
            let after = l.step.map_or(String::new(), |n| format!(" after step {n}"));
            format!(
                ", longest {} (rank {}{after})",
                render::ns(l.ns as f64),
                l.rank
            )
        })
        .unwrap_or_default();
    Some(format!(
        "Between steps (after a step's optimizer, before the next step's data wait; in no step, \
         so not in the table): median {}, mean {}{longest}; {} of the wall-clock time, which the \
         throughput counts. The loop's tail runs there: an LR scheduler, zero_grad at the loop's \
         end, logging and progress bars, and every N steps a checkpoint or an evaluation.{long}",
        render::ns(g.median),
        render::ns(g.mean),
        render::pct(share),
    ))
}

/// The fewest `grad_ready` records (over all ranks) that can say no parameter goes unused.
const UNUSED_SEARCH_MIN_RECORDS: usize = 3;

/// `find_unused_parameters=True` with every parameter given a gradient in every recorded step:
/// DDP then traverses the autograd graph after every forward to find parameters that are never
/// there (PyTorch says so once in each rank's log, where few read it; Hugging Face's `Trainer`
/// turns the flag on by default). The time it costs is inside the forward and is not measured
/// apart here.
fn unused_search_for_nothing(run: &Run) -> Option<String> {
    let flagged = run.ranks.iter().any(|r| {
        r.header
            .ddp
            .as_ref()
            .is_some_and(|d| d.find_unused_parameters)
    });
    if !flagged {
        return None;
    }
    let records: Vec<_> = run.ranks.iter().flat_map(|r| &r.grad_ready).collect();
    let params = records.iter().map(|g| g.offsets_ns.len()).max()?;
    let every_one = records
        .iter()
        .all(|g| g.offsets_ns.len() == params && g.offsets_ns.iter().all(|&o| o >= 0));
    (records.len() >= UNUSED_SEARCH_MIN_RECORDS && params > 0 && every_one).then(|| {
        format!(
            "find_unused_parameters=True, yet all {params} parameters got a gradient in each of \
             the {} recorded rank-steps: DDP searches the autograd graph for unused parameters after \
             every forward for none. Unless some step leaves a parameter out (flow control), \
             build DDP with find_unused_parameters=False (Hugging Face: \
             TrainingArguments(ddp_find_unused_parameters=False); Lightning: strategy=\"ddp\")",
            records.len()
        )
    })
}

/// A collective of a steady step that the PyTorch module recorded outside DDP's buckets with
/// `args.what` (`"module buffers"`: DDP's buffer broadcast; `"program"`: a `torch.distributed`
/// call of the program's own, with `args.caller`).
struct MarkedCall {
    rank: u32,
    step: u64,
    start: i64,
    ns: i64,
    op: String,
    bytes: Option<u64>,
    caller: Option<String>,
    /// The function of torch's own that made the call for the program (`args.via`:
    /// `torch/distributed/algorithms/join.py in notify_join_context`), which `caller` leaves out.
    via: Option<String>,
    /// Issued with `async_op=True` (`args.async`): the span runs from the call, or from when
    /// the asynchronous call before it completed, to its own completion.
    issued_async: bool,
}

impl MarkedCall {
    /// Whether DDP's Join context manager made the call ([`made_by_join`]): DDP's
    /// machinery, not the program's. With Join the median step of a 1.5 ms job on 2 CPU ranks
    /// was 2-9% longer (two pairs of 300-step runs, 2026-12-07), while its calls' spans added
    /// up to 75% of it: they overlap the forward and backward.
    fn joins(&self) -> bool {
        self.via.as_deref().is_some_and(made_by_join)
    }
}

/// The steady steps' collectives whose `args.what` is `what`.
fn marked_calls(run: &Run, steady_pairs: &[(u32, u64)], what: &str) -> Vec<MarkedCall> {
    let mut out = Vec::new();
    for rank in &run.ranks {
        let comm = rank
            .lane_id(LaneKind::Comm)
            .and_then(|id| rank.lane(id))
            .map_or(&[][..], |l| l.spans());
        for s in comm {
            let Some(step) = s.step() else { continue };
            if steady_pairs.binary_search(&(rank.rank(), step)).is_err() {
                continue;
            }
            let Some(args) = marked_collective_args(run, rank, s).filter(|a| a["what"] == what)
            else {
                continue;
            };
            let view = run.span(rank, s);
            out.push(MarkedCall {
                rank: rank.rank(),
                step,
                start: s.start(),
                ns: s.end() - s.start(),
                op: view.op().unwrap_or("collective").to_owned(),
                bytes: s.bytes(),
                caller: args["caller"].as_str().map(str::to_owned),
                via: args["via"].as_str().map(str::to_owned),
                issued_async: args["async"] == true,
            });
        }
    }
    out
}

/// `calls` of `rank_steps` steady rank-steps and their mean time per rank-step, when that is
/// `share` of the median step or more (else `None`).
fn costly_calls<C: std::borrow::Borrow<MarkedCall>>(
    calls: Vec<C>,
    rank_steps: usize,
    median_step_ns: f64,
    share: f64,
) -> Option<(Vec<C>, f64)> {
    if median_step_ns <= 0.0 || rank_steps == 0 {
        return None;
    }
    let mean = calls.iter().map(|c| c.borrow().ns).sum::<i64>() as f64 / rank_steps as f64;
    (!calls.is_empty() && mean >= share * median_step_ns).then_some((calls, mean))
}

/// The mean share of the median step from which the program's own collectives get a note.
const PROGRAM_COLLECTIVES_SHARE: f64 = 0.02;
/// Kinds of program collectives (operation and caller) named in the note at most.
const PROGRAM_CALLS_NAMED: usize = 3;

/// The collectives the program called itself through `torch.distributed` in the steady steps
/// and in the ordinary gaps between them, not those of `long_gap_pairs`' gaps (a loss averaged
/// for logging, a metric, a framework's bookkeeping), when they take
/// [`PROGRAM_COLLECTIVES_SHARE`] of the median step or more: each is a rendezvous of every rank
/// that compute does not hide. Named by operation and caller, the costliest first. Hugging Face's
/// Trainer gathers every batch's token count (`average_tokens_across_devices`, on by default):
/// on its GPT-2 with 2 CPU ranks about 2 ms a step, and turning it off took the median step down
/// by 1.7-4.6 ms in three pairs of runs (2026-12-06, a busy machine).
fn program_collectives(
    program_calls: &[MarkedCall],
    steady_pairs: &[(u32, u64)],
    median_step_ns: f64,
    step_ends: &BTreeMap<(u32, u64), i64>,
    long_gap_pairs: &[(u32, u64)],
) -> Option<String> {
    // Each rank's last step left out: a collective after the last optimizer step counts with
    // it, and after the training loop the program gathers its results (Hugging Face's Trainer:
    // its FLOPs and metrics), once, not every step.
    let steady_pairs: Vec<(u32, u64)> = steady_pairs
        .iter()
        .enumerate()
        .filter(|&(i, &(rank, _))| steady_pairs.get(i + 1).is_some_and(|n| n.0 == rank))
        .map(|(_, &p)| p)
        .collect();
    // Inside the steps and in the ordinary gaps between them (PyTorch Lightning's broadcast of
    // rank 0's SIGTERM flag before every batch): those of a gap longer than the median step (an
    // evaluation every N steps) are the between-steps line's.
    let calls: Vec<&MarkedCall> = program_calls
        .iter()
        .filter(|c| !c.joins())
        .filter(|c| steady_pairs.binary_search(&(c.rank, c.step)).is_ok())
        .filter(|c| {
            !called_after_its_step(c, step_ends)
                || long_gap_pairs.binary_search(&(c.rank, c.step)).is_err()
        })
        .collect();
    let (calls, mean) = costly_calls(
        calls,
        steady_pairs.len(),
        median_step_ns,
        PROGRAM_COLLECTIVES_SHARE,
    )?;
    // By (operation, torch's function that made it, caller): calls, time, bytes.
    type Kind<'a> = (&'a str, &'a str, &'a str);
    let mut kinds: BTreeMap<Kind<'_>, (usize, i64, Vec<u64>)> = BTreeMap::new();
    for c in &calls {
        let k = kinds
            .entry((
                c.op.as_str(),
                c.via.as_deref().unwrap_or(""),
                c.caller.as_deref().unwrap_or(""),
            ))
            .or_default();
        k.0 += 1;
        k.1 += c.ns;
        k.2.extend(c.bytes);
    }
    let mut kinds: Vec<_> = kinds.into_iter().collect();
    kinds.sort_by_key(|k| std::cmp::Reverse(k.1 .1));
    let rank_steps = steady_pairs.len() as f64;
    let named: Vec<String> = kinds
        .iter()
        .take(PROGRAM_CALLS_NAMED)
        .map(|((op, via, caller), (n, ns, bytes))| {
            let mut bytes = bytes.clone();
            bytes.sort_unstable();
            let size = bytes.get(bytes.len() / 2).map_or(String::new(), |b| {
                format!(" ({})", render::bytes(*b as f64))
            });
            let by = if via.is_empty() {
                String::new()
            } else {
                format!(" by {via}")
            };
            let from = if caller.is_empty() {
                String::new()
            } else {
                format!(" from {caller}")
            };
            format!(
                "{op} ×{:.1} a rank-step{size}{by}{from}: {}",
                *n as f64 / rank_steps,
                render::ns(*ns as f64 / rank_steps)
            )
        })
        .collect();
    let more = kinds.len().saturating_sub(PROGRAM_CALLS_NAMED);
    let hf_tokens = calls.iter().any(|c| {
        c.caller
            .as_deref()
            .is_some_and(|f| f.contains("_get_num_items_in_batch"))
    });
    // Lightning's `self.log(..., sync_dist=True)` logged on_step: its result collection syncs
    // in `update`, every call (lightning/pytorch/trainer/connectors/logger_connector/result.py,
    // Lightning 2.6: `if self.meta.on_step: self._forward_cache = self.meta.sync(...)`; with
    // on_step=False it accumulates and syncs once, in `compute`).
    let lightning_log = calls.iter().any(|c| {
        c.caller
            .as_deref()
            .is_some_and(|f| f.contains("logger_connector/result.py") && f.contains(" in update"))
    });
    // Lightning 2.6's `_TrainingEpochLoop._broadcast_sigterm_tensor`, before every training
    // batch when the world has several ranks: a broadcast from rank 0 and its `.item()`.
    let lightning_sigterm = calls.iter().any(|c| {
        c.caller
            .as_deref()
            .is_some_and(|f| f.contains(" in _broadcast_sigterm_tensor"))
    });
    let hint = if hf_tokens {
        " Hugging Face's Trainer gathers every batch's token count so that the loss is averaged \
         over all ranks' tokens: TrainingArguments(average_tokens_across_devices=False) turns \
         that off (each rank then averages over its own)."
    } else if lightning_log {
        " PyTorch Lightning's self.log(..., sync_dist=True) reduces across the ranks at every \
         call logged on_step (a barrier and an all-reduce in Lightning 2.6; its documentation \
         warns of the overhead): log training values with on_step=False, on_epoch=True \
         (accumulated, reduced once an epoch) or with sync_dist=False (each rank's own value)."
    } else {
        ""
    };
    let sigterm = if lightning_sigterm {
        " PyTorch Lightning broadcasts rank 0's SIGTERM flag before every training batch and \
         reads it with .item(), which on GPUs also makes the CPU wait for the GPU (Lightning \
         2.6 has no setting for it: its issue #21487; a pull request, #21640, proposes \
         Trainer(broadcast_sigterm_every_n_steps=N))."
    } else {
        ""
    };
    // Calls issued with async_op=True: ZeroRedundancyOptimizer's step broadcasts each rank's
    // updated shard so after its shard's own optimizer step (torch 2.13's
    // zero_redundancy_optimizer.py, `_sync_params`, which `via` names); running them
    // asynchronously is no advice for them.
    let zero = calls.iter().any(|c| {
        c.via
            .as_deref()
            .is_some_and(|v| v.contains("zero_redundancy_optimizer.py"))
    });
    let what_they_are = if calls.iter().all(|c| c.issued_async) {
        "They were issued with async_op=True: each counts from its call, or from when the one \
         before it completed, to its own completion."
    } else {
        "Each is a rendezvous of every rank that compute does not hide: one every step for \
         logging or a metric can often run less often, or asynchronously (async_op=True)."
    };
    let zero = if zero {
        " ZeroRedundancyOptimizer's step broadcasts the updated parameter shards so, after its \
         shard's optimizer step: the price of sharding the optimizer's state."
    } else {
        ""
    };
    Some(format!(
        "Besides DDP's, the program called collectives of its own: {} per rank-step on average, \
         {} of the median step; {}{}. {what_they_are}{zero}{hint}{sigterm}",
        render::ns(mean),
        render::pct(mean / median_step_ns),
        named.join("; "),
        if more > 0 {
            format!("; {more} more kinds")
        } else {
            String::new()
        },
    ))
}

/// The mean share of the median step from which DDP's buffer broadcast gets a note.
const BUFFER_BROADCAST_SHARE: f64 = 0.02;
/// Buffers named in the note at most.
const BUFFERS_NAMED: usize = 3;

/// DDP's broadcast of rank 0's module buffers before every forward (`broadcast_buffers=True`,
/// the default; the PyTorch module records it as a `broadcast` with `"what": "module
/// buffers"`), when it takes [`BUFFER_BROADCAST_SHARE`] of the median step or more: it runs
/// before the forward, beside no compute, and it is a rendezvous of every rank each step. Many
/// models' buffers never change (a causal mask, a position table: Hugging Face's GPT-2 trained by
/// its `Trainer` on 2 CPU ranks spent 7% of its step in it, 2 KiB a step), and
/// `broadcast_buffers=False` removes it; BatchNorm's running statistics do change, and then each
/// rank keeps its own. The time saved is at least the broadcast's own (the fastest rank's, each
/// step); the rest is waiting for the last rank, part of which the first all-reduce waits
/// instead. Measured on that GPT-2 job (3 pairs of 120-step runs, 2026-12-06): the note gave
/// 1.1-1.5 ms a rank-step, 0.58-0.86 ms of it the broadcast's own, and
/// `ddp_broadcast_buffers=False` took the median step down by 1.1-1.8 ms (13.0-13.7 ms to
/// 11.5-12.1 ms).
fn buffer_broadcast_cost(
    run: &Run,
    steady_pairs: &[(u32, u64)],
    median_step_ns: f64,
) -> Option<String> {
    let (calls, mean) = costly_calls(
        marked_calls(run, steady_pairs, "module buffers"),
        steady_pairs.len(),
        median_step_ns,
        BUFFER_BROADCAST_SHARE,
    )?;
    // Per steady (rank, step): the broadcasts' time; per step: the fastest rank's.
    let mut per_rank_step: BTreeMap<(u32, u64), i64> = BTreeMap::new();
    for c in calls {
        *per_rank_step.entry((c.rank, c.step)).or_default() += c.ns;
    }
    let mut fastest: BTreeMap<u64, i64> = BTreeMap::new();
    for (&(_, step), &t) in &per_rank_step {
        fastest
            .entry(step)
            .and_modify(|f| *f = (*f).min(t))
            .or_insert(t);
    }
    let steps = steady_pairs
        .iter()
        .map(|&(_, s)| s)
        .collect::<std::collections::BTreeSet<_>>()
        .len()
        .max(1);
    let own = fastest.values().sum::<i64>() as f64 / steps as f64;
    let buffers = run
        .ranks
        .iter()
        .find_map(|r| r.header.ddp.as_ref().filter(|d| !d.buffers.is_empty()))
        .map_or(&[][..], |d| &d.buffers[..]);
    let mut which = String::new();
    if !buffers.is_empty() {
        let names: Vec<&str> = buffers
            .iter()
            .take(BUFFERS_NAMED)
            .map(|b| b.name.as_str())
            .collect();
        let more = buffers.len().saturating_sub(BUFFERS_NAMED);
        let bytes: u64 = buffers.iter().map(|b| b.bytes).fold(0, u64::saturating_add);
        which = format!(
            " ({}: {}{}; {})",
            plural(buffers.len(), "buffer", "buffers"),
            names.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            },
            render::bytes(bytes as f64)
        );
    }
    let statistics = buffers.iter().any(|b| {
        ["running_mean", "running_var", "num_batches_tracked"]
            .iter()
            .any(|s| b.name.ends_with(s))
    });
    let advice = if statistics {
        "BatchNorm's running statistics are among them and change every step: without the \
         broadcast (broadcast_buffers=False) each rank keeps its own, so rank 0's checkpoint holds \
         rank 0's statistics (SyncBatchNorm keeps them in step at its own cost)"
    } else {
        "if none of them changes in training (a mask, a position table; BatchNorm's statistics \
         do), build DDP with broadcast_buffers=False (Hugging Face: \
         TrainingArguments(ddp_broadcast_buffers=False))"
    };
    // DDP broadcasts from its process group's first rank: rank 0, or each subgroup's first.
    let groups = run.ddp_subgroups();
    let whose = if groups.is_empty() {
        format!("rank 0's module buffers{which}")
    } else {
        let firsts: Vec<String> = groups
            .iter()
            .filter_map(|g| g.first().map(u32::to_string))
            .collect();
        format!(
            "the module buffers{which} of its process groups' first ranks (ranks {})",
            firsts.join(", ")
        )
    };
    Some(format!(
        "DDP broadcast {whose} before every forward: {} per rank-step on \
         average, {} of the median step, beside no compute; {} of it was the broadcast itself \
         (the fastest rank's time), the rest waiting for the last rank to reach its forward, part of \
         which the first all-reduce would wait instead. {}{advice}",
        render::ns(mean),
        render::pct(mean / median_step_ns),
        render::ns(own),
        if statistics {
            ""
        } else {
            "It is there to keep them equal: "
        },
    ))
}

/// The fewest bucket all-reduces ending after their step that make the note below.
const AFTER_STEP_MIN_CALLS: usize = 3;

/// Bucket all-reduces that ended after their own step's span ended: with host-timed spans
/// that cannot happen (DDP waits for its all-reduces before the optimizer runs). The PyTorch
/// module times NCCL's all-reduces with CUDA events (GPU times) and the phases with hooks
/// (host times, when the work was queued); a GPU running behind the host puts the all-reduces
/// after the step that queued them. Seen on an H200 (2026-12-04, scripts/gpu-check's busy
/// job, one rank): 32 of 39, a median 5.2 ms after their step's end. Overlap and exposed
/// communication then compare the two clocks, so the note says so (more than half of them, at
/// least AFTER_STEP_MIN_CALLS).
fn collectives_after_their_steps(run: &Run) -> Option<String> {
    let (mut after, mut all) = (0usize, 0usize);
    let mut by = Vec::new();
    for rank in &run.ranks {
        let ends: BTreeMap<u64, i64> = rank
            .steps()
            .filter_map(|s| Some((s.step()?, s.end())))
            .collect();
        // The comm lane alone: a GPU trace's kernel lanes can hold most of its spans.
        let comm = rank
            .lane_id(LaneKind::Comm)
            .and_then(|id| rank.lane(id))
            .map_or(&[][..], |l| l.spans());
        for s in comm {
            if s.kind() != SpanKind::Collective || s.bucket().is_none() {
                continue;
            }
            let Some(end) = s.step().and_then(|st| ends.get(&st)) else {
                continue;
            };
            all += 1;
            if s.end() > *end {
                after += 1;
                by.push(s.end() - end);
            }
        }
    }
    if after < AFTER_STEP_MIN_CALLS || 2 * after <= all {
        return None;
    }
    by.sort_unstable();
    Some(format!(
        "{after} of {all} bucket all-reduces ended after their step did (a median {} after): \
         their times are the GPU's (CUDA events) and the phases' the host's, which queued the \
         work ahead of the GPU, so the overlap, exposed communication and comm tail below compare \
         two clocks and are not what the GPU did",
        render::ns(by[by.len() / 2] as f64)
    ))
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The first ranks of `v` (at most 12), and how many more of `total` there
/// are.
fn list(v: &[u32], total: u64) -> String {
    let mut s: Vec<String> = v.iter().take(12).map(u32::to_string).collect();
    let shown = s.len() as u64;
    if total > shown {
        s.push(format!("… ({} more)", total - shown));
    }
    s.join(", ")
}

/// How many ranks the per-rank table shows before it keeps only the
/// slowest.
const RANK_ROWS: usize = 16;

impl Summary {
    /// A compact report for a terminal `width` columns wide (tables drop
    /// their less important columns to fit; 80 or more shows everything
    /// that matters).
    pub fn render_text(&self, width: usize) -> String {
        let width = width.max(40);
        let mut out = String::new();
        let warm = self.warmup.len();
        let head = format!(
            "run {} · {} of {} ranks · {} steady steps{}",
            self.run_id,
            self.ranks_loaded,
            self.world_size,
            self.steady_steps,
            if warm > 0 {
                format!(" ({warm} warm-up reported apart)")
            } else {
                String::new()
            }
        );
        render::wrap(&mut out, &head, width, "");
        if !self.ddp_groups.is_empty() {
            render::wrap(
                &mut out,
                &format!(
                    "DDP reduces over {} ({}): each group's ranks are compared with each other \
                     (arrivals, waiting, stragglers), and bus bandwidth counts a group's ranks",
                    match self.ddp_groups.len() {
                        1 => "a process group smaller than the world".to_owned(),
                        n => format!("{n} process groups smaller than the world"),
                    },
                    crate::trace::groups_text(&self.ddp_groups)
                ),
                width,
                "  ",
            );
        }
        let t = &self.throughput;
        let mut speed = Vec::new();
        if let Some(s) = t.samples_per_s {
            let src = match t.samples_source {
                Some(SamplesSource::BatchSize) => " (from the given batch size)",
                _ => "",
            };
            speed.push(format!("{s:.1} samples/s{src}"));
        }
        if let Some(s) = t.steps_per_s {
            speed.push(format!("{s:.2} steps/s"));
        }
        if !speed.is_empty() {
            render::wrap(
                &mut out,
                &format!("throughput: {}", speed.join(", ")),
                width,
                "",
            );
        }
        for w in &self.warnings {
            render::wrap(&mut out, &format!("warning: {w}"), width, "");
        }
        for n in &self.notes {
            render::wrap(&mut out, &format!("note: {n}"), width, "");
        }

        if let Some(b) = &self.overall {
            out.push('\n');
            let title = format!(
                "step breakdown, all ranks ({} rank-steps; parts overlap, see exposed):",
                b.steps
            );
            render::wrap(&mut out, &title, width, "");
            breakdown_table(b, &self.not_recorded).render(&mut out, width, "  ");
            if let Some(line) = other_placement(b) {
                render::wrap(&mut out, &line, width, "  ");
            }
            if let Some(line) =
                between_steps_line(b, self.longest_between.as_ref(), self.long_gaps.as_ref())
            {
                render::wrap(&mut out, &line, width, "  ");
            }
            if !self.recorded("data wait") {
                // nanoGPT's `get_batch` slices a memory-mapped array on every micro-batch: no
                // DataLoader, no data wait recorded (seen 2026-12-07).
                render::wrap(
                    &mut out,
                    "No batch was seen being fetched, so the data wait is unknown (not zero): it \
                     is timed at a DataLoader's `next` (a torch.utils.data.DataLoader iterated \
                     on the training thread; in a Kineto trace, its `enumerate(DataLoader)` \
                     ranges). Batches the program makes itself (slices of a memory-mapped \
                     array, as nanoGPT's get_batch; a generator) count in the phase or the gap \
                     they run in.",
                    width,
                    "  ",
                );
            }
            if !self.recorded("communication") {
                render::wrap(
                    &mut out,
                    "No bucket all-reduce was recorded, so communication and its overlap are \
                     unknown (not zero): a PyTorch program's own communication hook registered \
                     before `instrument` is not seen (register it after `instrument`).",
                    width,
                    "  ",
                );
            } else {
                let sum = b.totals.comm_ns.max(1) as f64;
                let line = format!(
                    "{} of communication overlaps compute; the last bucket's collective ends a \
                     median {} after backward (the comm tail, over every rank-step; the advice \
                     measures it on the rank each step waits for).",
                    render::pct(b.totals.comm_overlapped_ns as f64 / sum),
                    render::ns(b.comm_tail.median)
                );
                render::wrap(&mut out, &line, width, "  ");
                if let Some(line) = self.comm_split.as_ref().and_then(CommSplit::sentence) {
                    render::wrap(&mut out, &line, width, "  ");
                }
            }
        }

        let ranked: Vec<&RankSummary> = self
            .ranks
            .iter()
            .filter(|r| r.breakdown.is_some())
            .collect();
        if ranked.len() > 1 {
            out.push('\n');
            let mut shown = ranked.clone();
            let hidden = shown.len().saturating_sub(RANK_ROWS);
            if hidden > 0 {
                shown.sort_by(|a, b| {
                    let m = |r: &RankSummary| r.breakdown.as_ref().map_or(0.0, |b| b.step.median);
                    m(b).total_cmp(&m(a))
                });
                shown.truncate(RANK_ROWS);
                let title = format!(
                    "per rank (medians; the {RANK_ROWS} slowest of {}):",
                    ranked.len()
                );
                render::wrap(&mut out, &title, width, "");
            } else {
                render::wrap(&mut out, "per rank (medians):", width, "");
            }
            let mut tb = Table::new(vec![
                num("rank", 0),
                num("step", 0),
                num("p95", 6),
                num("data", 3),
                num("fwd", 5),
                num("bwd", 4),
                num("comm", 7),
                num("exposed", 1),
                num("wait", 3),
                num("opt", 8),
                num("other", 9),
                num("last", 2),
            ]);
            // A part no rank recorded is "-", not a measured 0 ns.
            let part = |name: &str, ns: f64| {
                if !self.recorded(name) {
                    "-".to_owned()
                } else {
                    render::ns(ns)
                }
            };
            for r in shown {
                let Some(b) = &r.breakdown else { continue };
                let last = self
                    .stragglers
                    .ranks
                    .iter()
                    .find(|l| l.rank == r.rank)
                    .map_or(0.0, |l| l.last_share);
                tb.row(vec![
                    r.rank.to_string(),
                    render::ns(b.step.median),
                    render::ns(b.step.p95),
                    part("data wait", b.data_wait.median),
                    render::ns(b.forward.median),
                    render::ns(b.backward.median),
                    part("communication", b.comm.median),
                    part("communication", b.comm_exposed.median),
                    r.waiting_share.map_or("-".to_owned(), render::pct),
                    part("optimizer", b.optimizer.median),
                    render::ns(b.other.median),
                    if self.stragglers.collectives > 0 {
                        render::pct(last)
                    } else {
                        "-".to_owned()
                    },
                ]);
            }
            tb.render(&mut out, width, "  ");
            if self.stragglers.collectives > 0 {
                render::wrap(
                    &mut out,
                    "wait = share of the rank's collective time spent waiting for the last rank; \
                     last = share of collectives the rank arrived last at",
                    width,
                    "  ",
                );
            }
        }

        let verdict = self.straggler_verdict();
        if !verdict.is_empty() {
            out.push('\n');
        }
        for line in &verdict {
            render::wrap(
                &mut out,
                &line.text,
                width,
                if line.detail { "  " } else { "" },
            );
        }

        if !self.buckets.is_empty() {
            out.push('\n');
            render::wrap(
                &mut out,
                "buckets (medians over ranks and steps; ready = after backward start; wait = share of \
                 the time spent waiting for the last rank; xfer = the collective's own time, the \
                 shortest across the ranks; busbw over xfer):",
                width,
                "",
            );
            let mut tb = Table::new(vec![
                num("id", 0),
                num("bytes", 0),
                num("params", 8),
                num("ready", 3),
                num("delay", 5),
                num("time", 0),
                num("wait", 3),
                num("xfer", 3),
                num("busbw", 2),
                num("exposed", 1),
                num("skew", 4),
            ]);
            for b in &self.buckets {
                let opt_ns = |d: &Dist| {
                    if d.is_empty() {
                        "-".to_owned()
                    } else {
                        render::ns(d.median)
                    }
                };
                tb.row(vec![
                    b.bucket.to_string(),
                    b.bytes.map_or("-".to_owned(), |v| render::bytes(v as f64)),
                    b.params.map_or("-".to_owned(), |v| v.to_string()),
                    opt_ns(&b.ready_after_backward_start),
                    opt_ns(&b.launch_delay),
                    opt_ns(&b.duration),
                    b.waiting_share.map_or("-".to_owned(), render::pct),
                    opt_ns(&b.transfer),
                    b.busbw_transfer_bytes_per_s
                        .or(b.busbw_bytes_per_s)
                        .map_or("-".to_owned(), render::rate),
                    opt_ns(&b.exposed),
                    opt_ns(&b.skew),
                ]);
            }
            tb.render(&mut out, width, "  ");
        }

        if !self.ops.is_empty() {
            out.push('\n');
            render::wrap(
                &mut out,
                "communication by operation (steady steps, all ranks):",
                width,
                "",
            );
            let mut tb = Table::new(vec![
                text("op", 0),
                num("calls", 0),
                num("bytes/call", 3),
                num("avg time", 0),
                num("total", 1),
                num("algbw", 4),
                num("busbw", 2),
            ]);
            for o in &self.ops {
                tb.row(vec![
                    o.op.clone(),
                    o.calls.to_string(),
                    if o.calls_with_bytes > 0 {
                        render::bytes(o.bytes_mean)
                    } else {
                        "-".to_owned()
                    },
                    render::ns(o.latency.mean),
                    render::ns(o.latency_total_ns as f64),
                    o.algbw_bytes_per_s.map_or("-".to_owned(), render::rate),
                    o.busbw_bytes_per_s.map_or("-".to_owned(), render::rate),
                ]);
            }
            tb.render(&mut out, width, "  ");
        }

        if !self.warmup.is_empty() {
            out.push('\n');
            render::wrap(
                &mut out,
                "warm-up steps (not in the statistics; max over ranks):",
                width,
                "",
            );
            let mut tb = Table::new(vec![
                text("step", 0),
                text("why", 3),
                num("step", 0),
                num("comm", 2),
                num("exposed", 1),
            ]);
            for w in &self.warmup {
                let b = &w.breakdown;
                tb.row(vec![
                    w.step.map_or("?".to_owned(), |s| s.to_string()),
                    w.reason.describe().to_owned(),
                    render::ns(b.step.max),
                    render::ns(b.comm.max),
                    render::ns(b.comm_exposed.max),
                ]);
            }
            tb.render(&mut out, width, "  ");
        }
        out
    }
}

/// The share of the step time from which "other / idle" is placed in the step.
const OTHER_PLACED_SHARE: f64 = 0.05;
/// The share of "other / idle" a place needs to be named.
const OTHER_PART_SHARE: f64 = 0.10;

/// Where "other / idle" falls in the step (means per rank-step), when it is
/// [`OTHER_PLACED_SHARE`] of the step or more: a large "other" says nothing by itself (Hugging
/// Face's Trainer on a GPT-2, 2 CPU ranks: 20% of the step, 1.1 ms of it before the forward and
/// 1.4 ms between the last all-reduce and the optimizer, 0.5 ms less of which with
/// `max_grad_norm=0`, the Trainer's gradient clipping off).
pub fn other_placement(b: &Breakdown) -> Option<String> {
    let t = &b.totals;
    if b.steps == 0 || t.step_ns <= 0 || (t.other_ns as f64) < OTHER_PLACED_SHARE * t.step_ns as f64
    {
        return None;
    }
    let n = b.steps as f64;
    let parts: Vec<String> = t
        .other_at
        .parts()
        .into_iter()
        .filter(|&(_, _, ns)| ns as f64 >= OTHER_PART_SHARE * t.other_ns as f64)
        .map(|(name, what, ns)| format!("{name} {} ({what})", render::ns(ns as f64 / n)))
        .collect();
    (!parts.is_empty()).then(|| {
        format!(
            "Other / idle, by where it falls in the step (means per rank-step): {}.",
            parts.join("; ")
        )
    })
}

fn breakdown_table(b: &Breakdown, not_recorded: &[String]) -> Table {
    let mut tb = Table::new(vec![
        text("", 0),
        num("median", 0),
        num("p95", 2),
        num("mean", 1),
        num("of step", 3),
    ]);
    let step_mean = b.step.mean;
    let rows: [(&str, &Dist); 11] = [
        ("step", &b.step),
        ("data wait", &b.data_wait),
        ("forward", &b.forward),
        ("backward", &b.backward),
        ("communication", &b.comm),
        ("  overlapped", &b.comm_overlapped),
        ("  exposed", &b.comm_exposed),
        ("optimizer", &b.optimizer),
        ("writeback", &b.writeback),
        ("other / idle", &b.other),
        ("comm tail", &b.comm_tail),
    ];
    for (name, d) in rows {
        // The communication rows all come from the collectives' spans.
        let part = match name.trim() {
            "overlapped" | "exposed" | "comm tail" => "communication",
            other => other,
        };
        if !part_recorded(not_recorded, part) {
            tb.row(vec![
                name.to_owned(),
                "not recorded".to_owned(),
                "-".to_owned(),
                "-".to_owned(),
                "-".to_owned(),
            ]);
            continue;
        }
        tb.row(vec![
            name.to_owned(),
            render::ns(d.median),
            render::ns(d.p95),
            render::ns(d.mean),
            if step_mean > 0.0 {
                render::pct(d.mean / step_mean)
            } else {
                "-".to_owned()
            },
        ]);
    }
    tb
}
