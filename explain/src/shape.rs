//! Whole-log shapes: what no single line says but the log as a whole does.
//!
//! * An nccl-tests run (`common.cu`'s header: `# nThread N nGpus N ...`,
//!   `#  Rank  N Group  N Pid  P on HOST device ...`, the column line
//!   `#  size  count  type  redop ...`) that printed its header and no result
//!   row and no failure: its first collective never finished.
//! * Two processes announcing the same global rank (PyTorch Lightning's
//!   `initializing ddp: GLOBAL_RANK: N, MEMBER: k/W`, later `Initializing
//!   distributed: GLOBAL_RANK: ...`) while other ranks of the group never
//!   announce themselves: the launcher gave out ranks twice.
//! * Progress bars (tqdm's `n/total [elapsed<remaining, rate]`) whose totals
//!   differ by a few batches: the ranks' data loaders have different lengths.
//! * Where the job was when the log ends: started (NCCL's `Init COMPLETE`,
//!   c10d's `ProcessGroupNCCL initialized` / `watchdog thread started`, a
//!   framework's rank announcement, a progress bar), or still inside NCCL's
//!   initialisation (NCCL lines without `Init COMPLETE`).
//! * Whether NCCL's P2P transport was switched off (`NCCL_P2P_DISABLE set by
//!   environment to 1`, NCCL's `INFO` line for an environment setting).
//!
//! * One collective called with different arguments on different ranks, where NCCL or c10d
//!   logged every call: NCCL's `NCCL_DEBUG_SUBSYS=COLL` lines (`enqueue.cc`: "%s: opCount %lx
//!   sendbuff %p recvbuff %p count %zu datatype %d op %d root %d comm %p [nranks=%d] stream
//!   %p"), c10d's `TORCH_DISTRIBUTED_DEBUG=DETAIL` lines (`ProcessGroupWrapper.cpp`: "Running
//!   collective: CollectiveFingerPrint(SequenceNumber=38, OpType=ALLREDUCE,
//!   TensorShape=[77, 1], ...)"), or ProcessGroupNCCL's watchdog timing ranks out at one
//!   number of one group in different operations (`WorkNCCL(SeqNum=3742816, OpType=REDUCE,
//!   ...)` on one rank, `OpType=_ALLGATHER_BASE` on others).
//!
//! * Where each rank stood in its NCCL process group's numbered collectives when the
//!   watchdog spoke (`ProcessGroupNCCL.cpp`: "Timeout at NCCL work: X, last enqueued NCCL
//!   work: Y, last completed NCCL work: Z", "Exception (either an error or timeout) detected
//!   by watchdog at work: X, ...", the heartbeat monitor's "Received a dump signal due to a
//!   collective timeout from rank R ... Last enqueued NCCL work: Y, last completed NCCL work:
//!   Z"; PyTorch 2.6 and later: "failure detected by watchdog at work sequence id: X PG status:
//!   last enqueued work: Y, last completed work: Z"): a rank whose last enqueued work is below the one another rank timed out in never
//!   issued it.
//!
//! * Diagnostic tools' outputs pasted into the log (py-spy stack dumps, CUDA's
//!   `p2pBandwidthLatencyTest`): read by `tool_output.rs`.
//!
//! Correlation (`correlate.rs`) turns these into observations.

use std::collections::{BTreeMap, BTreeSet};

use crate::report::Evidence;
use crate::tool_output::{P2pBandwidthTest, StackDumps};

/// What the nccl-tests output of a log showed.
#[derive(Debug, Default)]
pub(crate) struct NcclTests {
    /// The header line (`# nThread ...`).
    pub header: Option<Evidence>,
    /// Hosts of the `# Rank N ... on HOST device` lines.
    pub hosts: BTreeSet<String>,
    /// Device lines without a host (`> Rank N uses device N`, nccl-tests 1.x
    /// running every GPU in one process).
    pub devices_of_one_process: usize,
    /// GPUs per process (`nGpus N`).
    pub gpus_per_process: Option<usize>,
    /// Whether the column header was printed.
    pub columns: bool,
    /// Result rows printed.
    pub rows: usize,
    /// Whether a `Test NCCL failure`/`Test CUDA failure` line was printed.
    pub failed: bool,
}

/// One rank's place in its process group's numbered collectives, as its watchdog printed it.
#[derive(Debug, Clone)]
pub(crate) struct WorkPosition {
    /// The work it failed or timed out in (absent in the heartbeat monitor's line, printed by
    /// a rank that was told of another's timeout).
    pub failed_at: Option<i64>,
    /// The last collective it issued (-1: none).
    pub enqueued: i64,
    /// The last collective it completed (-1: none).
    pub completed: i64,
    /// The line that showed it.
    pub evidence: Evidence,
}

/// The shape of every log read, gathered line by line.
#[derive(Debug, Default)]
pub(crate) struct LogShape {
    /// nccl-tests output, when there was any.
    pub nccl_tests: Option<NcclTests>,
    /// Global rank → the lines that announced it.
    pub announced: BTreeMap<usize, Vec<Evidence>>,
    /// The group size the announcements name (`MEMBER: k/W`).
    pub announced_world: Option<usize>,
    /// Progress-bar total → the first line showing it.
    pub bar_totals: BTreeMap<u64, Evidence>,
    /// The first line showing the job had started.
    pub started: Option<Evidence>,
    /// The first line showing the training itself ran past its set-up: a collective ran
    /// (c10d's `Running collective: CollectiveFingerPrint(...)`, NCCL's `Init COMPLETE`, which
    /// c10d reaches at a group's first collective) or a progress bar counted. A store wait
    /// that times out after it is no rendezvous.
    pub training_ran: Option<Evidence>,
    /// Whether NCCL finished initialising a communicator (`Init COMPLETE`).
    pub nccl_init_complete: bool,
    /// Whether NCCL's P2P transport was switched off by the environment.
    pub p2p_disabled: bool,
    /// RCCL's warning at every initialisation on a host whose IOMMU is not in passthrough mode
    /// (`init.cc`: `Missing "iommu=pt" from kernel command line which can lead to system
    /// instablity or hang!`): advice on its own, the likely reason for a hang nothing else
    /// explains.
    pub iommu_not_passthrough: Option<Evidence>,
    /// The first of ProcessGroupNCCL's warnings that a rank reached the end of the program
    /// with its process groups alive ("WARNING: destroy_process_group() was not called before
    /// program exit, which can leak resources.", PyTorch 2.4 and later): the program ended.
    pub exited_without_destroy: Option<Evidence>,
    /// Whether NCCL printed `INFO` lines (NCCL_DEBUG=INFO): only then does a
    /// missing `Init COMPLETE` mean its set-up did not finish.
    pub nccl_info: bool,
    /// Whether the last line read was NCCL's own.
    pub last_line_nccl: bool,
    /// The launcher's line that began waiting in the elastic rendezvous
    /// (`Rendezvous'ing worker group`, `attempts to join the next round`),
    /// while no line said it completed.
    pub rendezvous_waiting: Option<Evidence>,
    /// Logged collective calls: (which log, group size, number) → caller →
    /// the calls' arguments with the first line showing each.
    pub calls: BTreeMap<CallKey, BTreeMap<String, Vec<(String, Evidence)>>>,
    /// py-spy stack dumps pasted in the log (`tool_output.rs`).
    pub stacks: StackDumps,
    /// CUDA's `p2pBandwidthLatencyTest` output pasted in the log.
    pub p2p_test: P2pBandwidthTest,
    /// (process group as the line names it, rank) → where that rank stood when its watchdog
    /// spoke.
    pub work_positions: BTreeMap<(String, usize), WorkPosition>,
    /// (process group id, SeqNum) → the collective ProcessGroupNCCL's watchdogs timed out in
    /// and the ranks whose watchdog said so.
    pub watchdog_timeouts: BTreeMap<(Option<u64>, u64), TimedOutWork>,
    /// Watchdog timeouts in a group's first collective (SeqNum 0 or 1), whatever the group.
    pub first_collective_timeouts: Vec<FirstCollectiveTimeout>,
}

/// A watchdog's timeout in its group's first collective: nothing had completed on that
/// group, so no rank can be behind in an earlier one.
#[derive(Debug, Clone)]
pub(crate) struct FirstCollectiveTimeout {
    /// The rank the line names (in its group), or the launcher's label.
    pub rank: Option<usize>,
    /// The operation, as the watchdog names it (lower case: `allgather`, `broadcast`).
    pub op: String,
    /// Whether the operation's name ends before the line does; a line that ends inside it
    /// (a paste wrapped at its width: `OpType=ALLREDUC`) may have cut it.
    pub op_whole: bool,
    /// Its input's elements, when the line gives them.
    pub numel_in: Option<u64>,
    /// The line.
    pub evidence: Evidence,
}

impl FirstCollectiveTimeout {
    /// Whether it may be a barrier: c10d's `barrier()` is an all-reduce of one element, what
    /// ranks wait in while one of them prepares data or a checkpoint alone (an all-reduce
    /// whose line gives no sizes may be one too).
    pub fn may_be_barrier(&self) -> bool {
        let all_reduce =
            self.op == "allreduce" || (!self.op_whole && "allreduce".starts_with(&self.op));
        all_reduce && self.numel_in.is_none_or(|n| n <= 1)
    }
}

/// One collective that watchdogs timed out in (`WorkNCCL(SeqNum=N, OpType=..., NumelIn=...,
/// NumelOut=...)`).
#[derive(Debug)]
pub(crate) struct TimedOutWork {
    /// The operation, as the watchdog names it (`_ALLGATHER_BASE`).
    pub op: String,
    /// The ranks (in the process group) whose watchdog timed out in it.
    pub ranks: BTreeSet<usize>,
    /// The group's size, where the sizes tell it: an all-gather's output is the group's size
    /// times its input, a reduce-scatter's input the size times its output.
    pub group_size: Option<usize>,
    /// Each rank's watchdog line.
    pub evidence: BTreeMap<usize, Evidence>,
}

/// The process group's size an operation's element counts show (see [`TimedOutWork`]).
fn group_size_from_counts(
    op: &str,
    numel_in: Option<u64>,
    numel_out: Option<u64>,
) -> Option<usize> {
    let (whole, part) = if op.contains("allgather") {
        (numel_out?, numel_in?)
    } else if op.contains("reduce_scatter") {
        (numel_in?, numel_out?)
    } else {
        return None;
    };
    let size = (part > 0 && whole % part == 0).then(|| whole / part)?;
    crate::rules::rank_number(size).filter(|s| *s >= 2)
}

/// Which collective a logged call is: the log that numbers them (`"NCCL
/// opCount"`, `"c10d SequenceNumber"`, [`WATCHDOG_SEQUENCE`]), what tells groups
/// apart when the line says it (NCCL's group size, the watchdog's process group
/// id), and the number.
pub(crate) type CallKey = (&'static str, Option<u64>, u64);

/// One collective number at which the ranks' calls differ.
#[derive(Debug)]
pub(crate) struct CallMismatch {
    /// What numbers the collectives.
    pub numbered_by: &'static str,
    /// The number.
    pub number: u64,
    /// Each distinct call, the callers making it and a line showing it.
    pub calls: Vec<(String, Vec<String>, Evidence)>,
}

/// What numbers the collectives in ProcessGroupNCCL's watchdog lines (`WorkNCCL(SeqNum=...)`).
pub(crate) const WATCHDOG_SEQUENCE: &str = "c10d watchdog's SeqNum";

/// What "numbers" the collectives of ranks' tracebacks that end inside one (a collective's
/// timeout, or a `KeyboardInterrupt` while the rank waited): the one collective each rank was
/// in when it stopped ([`LogShape::timed_out_in`]).
pub(crate) const TRACEBACK_TIMEOUT: &str = "the collective its traceback timed out in";

/// tqdm's totals below this are not data loaders (epochs, files).
const MIN_BAR_TOTAL: u64 = 20;

impl LogShape {
    /// Feeds one line (`body` without launcher prefixes, `lower` its ASCII
    /// lowercase); `evidence` makes the line's evidence when it is kept.
    pub fn observe(
        &mut self,
        body: &str,
        lower: &str,
        is_nccl: bool,
        rank: Option<usize>,
        evidence: &dyn Fn() -> Evidence,
    ) {
        self.last_line_nccl = is_nccl;
        self.collective_call(body, lower, is_nccl, rank, evidence);
        self.nccl_tests_line(body, lower, evidence);
        self.stacks.observe(body, evidence);
        self.p2p_test.observe(lower, evidence);
        if let Some((group, rank, failed_at, enqueued, completed)) = work_position(lower) {
            let seen = self.work_positions.entry((group, rank));
            let pos = seen.or_insert_with(|| WorkPosition {
                failed_at,
                enqueued,
                completed,
                evidence: evidence(),
            });
            pos.failed_at = pos.failed_at.or(failed_at);
        }
        if lower.contains("nccl info") {
            self.nccl_info = true;
        }
        if lower.contains("destroy_process_group() was not called before program exit") {
            self.exited_without_destroy.get_or_insert_with(evidence);
        }
        // torchelastic's `api.py` ("[default] Rendezvous'ing worker group", "Rendezvous
        // complete for workers") and `dynamic_rendezvous.py` ("The node '...' attempts to
        // join the next round of the rendezvous '...'", "... has joined round N of ...").
        if lower.contains("rendezvous'ing worker group")
            || lower.contains("attempts to join the next round")
        {
            self.rendezvous_waiting.get_or_insert_with(evidence);
        }
        if lower.contains("rendezvous complete") || lower.contains("has joined round") {
            self.rendezvous_waiting = None;
            self.started.get_or_insert_with(evidence);
        }
        // Lightning's and NeMo's announcement ("Initializing distributed: GLOBAL_RANK: 3,
        // MEMBER: 4/8") comes just before `init_process_group`, whose end they report as "All
        // distributed processes registered. Starting with 8 processes": a log that ends between
        // the two waits for ranks that have not joined.
        if let Some(rank) = announced_rank(lower) {
            self.announced.entry(rank.0).or_default().push(evidence());
            self.announced_world = self.announced_world.or(rank.1);
            if self.started.is_none() {
                self.rendezvous_waiting.get_or_insert_with(evidence);
            }
        }
        // (Lightning 1.3's wording: "All DDP processes registered. Starting ddp with 8
        // processes".)
        if lower.contains("all distributed processes registered")
            || lower.contains("all ddp processes registered")
        {
            self.rendezvous_waiting = None;
            self.started.get_or_insert_with(evidence);
        }
        for total in bar_totals(lower) {
            if total >= MIN_BAR_TOTAL {
                self.bar_totals.entry(total).or_insert_with(evidence);
                self.started.get_or_insert_with(evidence);
                self.training_ran.get_or_insert_with(evidence);
            }
        }
        if lower.contains("nccl info") && lower.contains("init complete") {
            self.nccl_init_complete = true;
            self.started.get_or_insert_with(evidence);
            self.training_ran.get_or_insert_with(evidence);
        }
        if lower.contains("running collective: collectivefingerprint(") {
            self.started.get_or_insert_with(evidence);
            self.training_ran.get_or_insert_with(evidence);
        }
        if lower.contains("processgroupnccl initialized")
            || lower.contains("watchdog thread started")
        {
            self.started.get_or_insert_with(evidence);
        }
        if lower.contains("missing \"iommu=pt\" from kernel command line") {
            self.iommu_not_passthrough.get_or_insert_with(evidence);
        }
        if lower.contains("nccl_p2p_disable set by environment to 1")
            || lower.contains("nccl_p2p_level set by environment to loc")
        {
            self.p2p_disabled = true;
        }
    }

    fn collective_call(
        &mut self,
        body: &str,
        lower: &str,
        is_nccl: bool,
        rank: Option<usize>,
        evidence: &dyn Fn() -> Evidence,
    ) {
        let (key, caller, call) = if is_nccl && lower.contains(": opcount ") {
            // "host:pid:tid [dev] NCCL INFO Broadcast: opCount 0 sendbuff .. count 53 datatype 4
            // op 0 root 0 comm 0x.. [nranks=8] stream 0x.."
            let i = lower.find(": opcount ").unwrap_or(0);
            let op = body[..i].rsplit(' ').next().unwrap_or("");
            let Some(number) = hex_after(lower, ": opcount ") else {
                return;
            };
            let caller = body.split(':').take(2).collect::<Vec<_>>().join(":");
            let args = ["count ", "datatype ", "op ", "root "]
                .iter()
                .filter_map(|k| {
                    let at = lower.find(&format!(" {k}"))?;
                    let v = crate::rules::leading_number(&lower[at + 1 + k.len()..])?;
                    Some(format!("{}{v}", k))
                })
                .collect::<Vec<_>>()
                .join(" ");
            let nranks = crate::rules::num_after(lower, "[nranks=");
            (
                ("NCCL opCount", nranks, number),
                caller,
                format!("{op} {args}"),
            )
        } else if let Some(i) = lower.find("running collective: collectivefingerprint(") {
            let inside = &body[i + "running collective: collectivefingerprint(".len()..];
            let Some(number) = crate::rules::num_after(lower, "sequencenumber=") else {
                return;
            };
            let Some(rank) = rank else {
                return;
            };
            // The arguments: operation, shapes, dtypes (devices say nothing here).
            let args = ["OpType=", "TensorShape=", "TensorDtypes="]
                .iter()
                .filter_map(|key| {
                    let at = inside.find(key)?;
                    let value = &inside[at + key.len()..];
                    let end = if value.starts_with('[') {
                        value.find(']').map_or(value.len(), |e| e + 1)
                    } else {
                        value.find([',', ')']).unwrap_or(value.len())
                    };
                    Some(format!("{key}{}", &value[..end]))
                })
                .collect::<Vec<_>>()
                .join(", ");
            (
                ("c10d SequenceNumber", None, number),
                format!("rank {rank}"),
                args,
            )
        } else if let Some(i) =
            lower.find("watchdog caught collective operation timeout: worknccl(")
        {
            // ProcessGroupNCCL's watchdog: "[Rank 1] Watchdog caught collective operation
            // timeout: WorkNCCL(SeqNum=17, OpType=ALLREDUCE, NumelIn=1, NumelOut=1,
            // Timeout(ms)=600000) ran for ...". A group numbers its collectives the same on every
            // rank, so ranks that time out at one number in one group in different operations
            // were in different collectives.
            let inside = &lower[i..];
            let Some(number) = crate::rules::num_after(inside, "seqnum=") else {
                return;
            };
            let Some((op, op_whole)) = inside.split_once("optype=").map(|(_, v)| {
                v.find([',', ')'])
                    .map_or((v.trim_end(), false), |end| (&v[..end], true))
            }) else {
                return;
            };
            let group = process_group_id(lower);
            // The rank the watchdog names is the rank in that group, the one that matters
            // here; a launcher's label is the fallback.
            let rank = crate::rules::num_after(&lower[..i], "rank ")
                .and_then(crate::rules::rank_number)
                .or(rank);
            let numel_in = crate::rules::num_after(inside, "numelin=");
            if number <= 1 {
                self.first_collective_timeouts.push(FirstCollectiveTimeout {
                    rank,
                    op: op.to_owned(),
                    op_whole,
                    numel_in,
                    evidence: evidence(),
                });
            }
            // Without the group's id (PyTorch before 2.2 does not print it) two groups' first
            // collectives share their number by construction; later numbers rarely do. An
            // operation's name the line may have cut is no operation to compare.
            if (group.is_none() && number <= 1) || !op_whole {
                return;
            }
            let Some(rank) = rank else {
                return;
            };
            // Sizes too, where every rank passes the same: not an all-to-all's or a gather's.
            let sized = [
                "allreduce",
                "broadcast",
                "_allgather_base",
                "allgather",
                "_reduce_scatter_base",
                "reduce_scatter",
            ]
            .contains(&op);
            let timed_out = self
                .watchdog_timeouts
                .entry((group, number))
                .or_insert_with(|| TimedOutWork {
                    op: op.to_ascii_uppercase(),
                    ranks: BTreeSet::new(),
                    group_size: group_size_from_counts(
                        op,
                        numel_in,
                        crate::rules::num_after(inside, "numelout="),
                    ),
                    evidence: BTreeMap::new(),
                });
            timed_out.ranks.insert(rank);
            timed_out.evidence.entry(rank).or_insert_with(evidence);
            let numel = numel_in.filter(|_| sized);
            let call = match numel {
                Some(n) => format!("{} with {n} elements", op.to_ascii_uppercase()),
                None => op.to_ascii_uppercase(),
            };
            (
                (WATCHDOG_SEQUENCE, group, number),
                format!("rank {rank}"),
                call,
            )
        } else {
            return;
        };
        let callers = self.calls.entry(key).or_default();
        let made = callers.entry(caller).or_default();
        if !made.iter().any(|(c, _)| *c == call) {
            made.push((call, evidence()));
        }
    }

    /// Collective numbers at which callers that each made one call made
    /// different ones (a caller that made several at one number is in more
    /// than one group of that size: nothing can be said).
    /// A rank's traceback ended in a collective's timeout raised in `function` of
    /// `distributed_c10d.py` (gloo's "Timed out waiting 8000ms for recv operation to
    /// complete", NCCL's blocking wait). Ranks that timed out in different collectives are
    /// in different places of their sequences ([`LogShape::call_mismatches`]). `evidence`:
    /// the exception line, then the program's own frame and code line.
    pub fn timed_out_in(&mut self, rank: usize, function: &str, evidence: Vec<Evidence>) {
        let Some(shown) = evidence.last().cloned() else {
            return;
        };
        let made = self
            .calls
            .entry((TRACEBACK_TIMEOUT, None, 0))
            .or_default()
            .entry(format!("rank {rank}"))
            .or_default();
        if !made.iter().any(|(c, _)| c == function) {
            made.push((function.to_owned(), shown));
        }
    }

    pub fn call_mismatches(&self) -> Vec<CallMismatch> {
        let mut out = Vec::new();
        for (&(numbered_by, _, number), callers) in &self.calls {
            if callers.len() < 2 || callers.values().any(|made| made.len() != 1) {
                continue;
            }
            let mut calls: Vec<(String, Vec<String>, Evidence)> = Vec::new();
            for (caller, made) in callers {
                let (call, ev) = &made[0];
                match calls.iter_mut().find(|(c, _, _)| c == call) {
                    Some((_, who, _)) => who.push(caller.clone()),
                    None => calls.push((call.clone(), vec![caller.clone()], ev.clone())),
                }
            }
            if calls.len() > 1 {
                out.push(CallMismatch {
                    numbered_by,
                    number,
                    calls,
                });
            }
        }
        out
    }

    fn nccl_tests_line(&mut self, body: &str, lower: &str, evidence: &dyn Fn() -> Evidence) {
        let t = lower.trim_start();
        // nccl-tests 2.x starts its header lines with '#', 1.x with '>'; some pastes lose
        // the marker of the first line.
        let marked = t.strip_prefix(['#', '>']).map(str::trim_start);
        let rest = marked.unwrap_or(t);
        if rest.starts_with("nthread ") || rest.starts_with("using devices") {
            let tests = self.nccl_tests.get_or_insert_with(NcclTests::default);
            tests.header.get_or_insert_with(evidence);
            if let Some(n) = crate::rules::num_after(rest, "ngpus ") {
                tests.gpus_per_process = usize::try_from(n).ok();
            }
            return;
        }
        let Some(tests) = self.nccl_tests.as_mut() else {
            return;
        };
        if rest.starts_with("rank ") && rest.contains("device") {
            // 2.x: "Rank  0 Group  0 Pid  21 on host-a device  0 [0x3e] NVIDIA L4";
            // 1.x: "Rank  0 uses device  0 [0x05] Tesla M40 24GB" (one process, one host).
            let original = body.trim_start().trim_start_matches(['#', '>']);
            let words: Vec<&str> = original.split_whitespace().collect();
            match words.iter().position(|w| *w == "on") {
                Some(i) => {
                    if let Some(host) = words.get(i + 1) {
                        tests.hosts.insert((*host).to_owned());
                    }
                }
                None => tests.devices_of_one_process += 1,
            }
            return;
        }
        // The column titles; unmarked too, since a paste quoted in a reply loses 1.x's '>'
        // with the quote markers (`unquote_paste`).
        let words: Vec<&str> = rest.split_whitespace().collect();
        let has = |w: &str| words.contains(&w);
        if (has("size") || has("bytes")) && (has("count") || has("n")) && has("type") {
            tests.columns = true;
            return;
        }
        if marked.is_some() {
            return;
        }
        if is_nccl_tests_failure(lower) {
            tests.failed = true;
            return;
        }
        // "           8             2     float     sum      -1    18.52 ..."
        let mut words = t.split_whitespace();
        let size = words.next().is_some_and(|w| w.parse::<u64>().is_ok());
        let count = words.next().is_some_and(|w| w.parse::<u64>().is_ok());
        let kind = words
            .next()
            .is_some_and(|w| w.starts_with(|c: char| c.is_ascii_alphabetic()));
        if size && count && kind {
            tests.rows += 1;
        }
    }

    /// Whether every rank of the job ran on one host, when the log says.
    /// `nccl_single_node` is what NCCL's own lines say
    /// ([`crate::nccl::NcclCollector::single_node`]).
    pub fn single_host(&self, nccl_single_node: Option<bool>) -> Option<bool> {
        if let Some(tests) = &self.nccl_tests {
            if !tests.hosts.is_empty() {
                return Some(tests.hosts.len() == 1);
            }
            if tests.devices_of_one_process > 0 {
                return Some(true);
            }
        }
        nccl_single_node
    }

    /// The watchdogs' places in their groups' collectives, by group (as the lines name it):
    /// each rank with its place.
    pub fn work_positions_by_group(&self) -> BTreeMap<&str, Vec<(usize, &WorkPosition)>> {
        let mut groups: BTreeMap<&str, Vec<(usize, &WorkPosition)>> = BTreeMap::new();
        for ((group, rank), pos) in &self.work_positions {
            groups.entry(group.as_str()).or_default().push((*rank, pos));
        }
        groups
    }

    /// Global ranks announced by more than one process, when some ranks of
    /// the announced group never announced themselves (a restart announces
    /// every rank again; ranks given out twice leave others out).
    pub fn ranks_given_twice(&self) -> Option<(Vec<usize>, usize)> {
        let world = self.announced_world?;
        let twice: Vec<usize> = self
            .announced
            .iter()
            .filter(|(_, lines)| lines.len() > 1)
            .map(|(r, _)| *r)
            .collect();
        let missing = (0..world).any(|r| !self.announced.contains_key(&r));
        (!twice.is_empty() && missing).then_some((twice, world))
    }

    /// Progress-bar totals that differ from another total by at most 5%
    /// (the same loop on ranks with different data lengths), in order.
    pub fn uneven_totals(&self) -> Vec<u64> {
        let totals: Vec<u64> = self.bar_totals.keys().copied().collect();
        totals
            .iter()
            .copied()
            .filter(|&t| {
                totals
                    .iter()
                    .any(|&o| o != t && t.abs_diff(o) * 20 <= t.max(o))
            })
            .collect()
    }
}

/// The hexadecimal number after `key` (NCCL prints `opCount` with `%lx`).
/// A watchdog's line giving a rank's place in its group's collectives: (the group as the line
/// names it, the rank, the work it failed in, the last enqueued, the last completed).
fn work_position(lower: &str) -> Option<(String, usize, Option<i64>, i64, i64)> {
    // PyTorch 2.2 to 2.5 say "NCCL work", 2.6 and later "work" ("failure detected by watchdog
    // at work sequence id: 1 PG status: last enqueued work: 547, last completed work: -1").
    let (at, enqueued, completed) = [
        ("last enqueued nccl work: ", "last completed nccl work: "),
        ("last enqueued work: ", "last completed work: "),
    ]
    .iter()
    .find_map(|(enqueued_key, completed_key)| {
        let at = lower.find(enqueued_key)?;
        let enqueued = crate::rules::signed_after(&lower[at..], enqueued_key)?;
        let completed = crate::rules::signed_after(&lower[at..], completed_key)?;
        Some((at, enqueued, completed))
    })?;
    let failed_at = [
        "timeout at nccl work: ",
        "detected by watchdog at work: ",
        "detected by watchdog at work sequence id: ",
    ]
    .iter()
    .find_map(|k| crate::rules::signed_after(&lower[..at], k));
    // The log prefix before the message: "[PG 0 Rank 2] ", "[PG ID 0 PG GUID 0(default_pg)
    // Rank 0] ", "[Rank 5] " (before PyTorch 2.3).
    let open = lower[..at].rfind('[')?;
    let close = open + lower[open..at].find(']')?;
    let inside = &lower[open + 1..close];
    let r = inside.rfind("rank ")?;
    let rank = crate::rules::leading_number(&inside[r + 5..])?;
    let group = inside[..r].trim().to_owned();
    Some((
        group,
        crate::rules::rank_number(rank)?,
        failed_at,
        enqueued,
        completed,
    ))
}

/// The process group a ProcessGroupNCCL line names: `[PG 1 Rank 0]` (PyTorch 2.2–2.3),
/// `[PG ID 12 PG GUID 99(...) Rank 1]` (2.4 and later).
fn process_group_id(lower: &str) -> Option<u64> {
    let at = lower.find("[pg ")?;
    let rest = &lower[at + "[pg ".len()..];
    let rest = rest.strip_prefix("id ").unwrap_or(rest);
    crate::rules::leading_number(rest)
}

fn hex_after(lower: &str, key: &str) -> Option<u64> {
    let rest = &lower[lower.find(key)? + key.len()..];
    let end = rest
        .find(|c: char| !c.is_ascii_hexdigit())
        .unwrap_or(rest.len());
    u64::from_str_radix(&rest[..end], 16).ok()
}

/// `(global rank, group size)` of a framework's rank announcement.
fn announced_rank(lower: &str) -> Option<(usize, Option<usize>)> {
    let i = lower.find("global_rank: ")?;
    // Lightning 1.4 to 1.8's DeepSpeed strategy: "initializing deepspeed distributed:
    // GLOBAL_RANK: 1, MEMBER: 2/8".
    if !(lower.contains("initializing ddp")
        || lower.contains("initializing distributed")
        || lower.contains("initializing deepspeed distributed"))
    {
        return None;
    }
    let rank = crate::rules::leading_number(&lower[i + "global_rank: ".len()..])?;
    let world = lower.find("member: ").and_then(|m| {
        let rest = &lower[m + "member: ".len()..];
        let (_, w) = rest.split_once('/')?;
        crate::rules::leading_number(w)
    });
    Some((
        crate::rules::rank_number(rank)?,
        world.and_then(crate::rules::rank_number),
    ))
}

/// The totals of tqdm bars in a line (`n/total [`), where `n ≤ total`.
fn bar_totals(lower: &str) -> Vec<u64> {
    let mut out = Vec::new();
    for (i, _) in lower.match_indices(" [") {
        let before = &lower[..i];
        let token = before
            .rsplit(|c: char| c.is_whitespace() || c == '|')
            .next();
        let Some((n, total)) = token.and_then(|t| t.split_once('/')) else {
            continue;
        };
        let after = &lower[i + 2..];
        // "[1:50:07<00:02, 2.83it/s]" or "[00:00<?, ?it/s]"
        if !after.starts_with(|c: char| c.is_ascii_digit()) || !after.contains('<') {
            continue;
        }
        if let (Ok(n), Ok(total)) = (n.parse::<u64>(), total.parse::<u64>()) {
            if n <= total {
                out.push(total);
            }
        }
    }
    out
}

/// Whether a (lower-cased) line is an nccl-tests failure: its `NCCLCHECK`/`CUDACHECK` macros
/// print `Test NCCL failure FILE:LINE 'TEXT'` (2.x, `common.h`) or `NCCL failure FILE:LINE
/// 'TEXT'` / `Cuda failure FILE:LINE 'TEXT'` (1.x) and exit: the run failed, it did not stall.
fn is_nccl_tests_failure(lower: &str) -> bool {
    ["nccl failure ", "cuda failure "].iter().any(|m| {
        lower.match_indices(m).any(|(i, _)| {
            let rest = &lower[i + m.len()..];
            let location = rest.split_whitespace().next().unwrap_or("");
            location.rsplit_once(':').is_some_and(|(file, line)| {
                !file.is_empty() && !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit())
            }) && rest.contains('\'')
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(lines: &[&str]) -> LogShape {
        let mut shape = LogShape::default();
        for (i, l) in lines.iter().enumerate() {
            let ev = || Evidence {
                file: "f.log".into(),
                line: Some(i as u64 + 1),
                text: (*l).to_owned(),
            };
            let (prefix_rank, body) = crate::scan::strip_launcher_prefix(l);
            let rank = prefix_rank.or_else(|| crate::scan::bracket_rank(body));
            let nccl = body.contains(" NCCL ");
            shape.observe(body, &body.to_ascii_lowercase(), nccl, rank, &ev);
        }
        shape
    }

    #[test]
    fn nccl_tests_failure_lines_of_both_versions_are_seen() {
        // 2.x (common.h): "%s: Test NCCL failure %s:%d '%s'"; 1.x and NCCL's own test
        // macros: "NCCL failure %s:%d '%s'" / "Cuda failure %s:%d '%s'".
        for line in [
            "host-a: Test NCCL failure common.cu:961 'unhandled system error'",
            "NCCL failure all_reduce.cu:95 'unhandled cuda error'",
            "Cuda failure common.cu:120 'out of memory'",
        ] {
            let s = feed(&[
                "# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728",
                "#      bytes             N    type      op     time  algbw  busbw      res",
                line,
            ]);
            let t = s.nccl_tests.as_ref().unwrap();
            assert!(t.failed, "{line}");
            assert_eq!(t.rows, 0);
        }
        // Not a failure line: NCCL's own WARN text without a source location.
        assert!(!is_nccl_tests_failure(
            "nccl warn cuda failure 'invalid argument'"
        ));
    }

    #[test]
    fn nccl_tests_header_without_rows_is_seen() {
        let s = feed(&[
            "# nThread 1 nGpus 2 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5",
            "#   Rank  0 Pid 871210 on host-a device  0 [0x01] NVIDIA GeForce RTX 4090",
            "#   Rank  1 Pid 871210 on host-a device  1 [0x24] NVIDIA GeForce RTX 4090",
            "#       size         count      type   redop     time   algbw   busbw  error",
        ]);
        let t = s.nccl_tests.as_ref().unwrap();
        assert!(t.columns);
        assert_eq!(t.rows, 0);
        assert_eq!(t.gpus_per_process, Some(2));
        assert_eq!(s.single_host(None), Some(true));
        let s = feed(&[
            "# nThread 1 nGpus 1 minBytes 8",
            "#  Rank  0 Group  0 Pid     21 on host-a device  0 [0x3e] NVIDIA L4",
            "#  Rank  1 Group  0 Pid     21 on host-b device  0 [0x3c] NVIDIA L4",
            "#       size         count      type   redop    root     time",
            "           8             2     float     sum      -1    18.52    0.00    0.00      0",
        ]);
        assert_eq!(s.nccl_tests.as_ref().unwrap().rows, 1);
        assert_eq!(s.single_host(None), Some(false));
        // nccl-tests 1.x: '>' markers, devices of one process, "bytes N type op".
        let s = feed(&[
            "> Using devices",
            ">   Rank  0 uses device  0 [0x05] Tesla M40 24GB",
            "   Rank  1 uses device  1 [0x08] Tesla M40 24GB",
            ">      bytes             N    type      op     time  algbw  busbw      res",
        ]);
        let t = s.nccl_tests.as_ref().unwrap();
        assert!(t.columns);
        assert_eq!(t.rows, 0);
        assert_eq!(s.single_host(None), Some(true));
    }

    #[test]
    fn one_collective_called_differently_by_the_ranks_is_seen() {
        let s = feed(&[
            "h:1:1 [0] NCCL INFO Broadcast: opCount 0 sendbuff 0x7f recvbuff 0x7f count 25503912 datatype 6 op 0 root 0 comm 0x7f [nranks=4] stream 0x55",
            "h:2:2 [1] NCCL INFO Broadcast: opCount 0 sendbuff 0x7f recvbuff 0x7f count 53 datatype 4 op 0 root 0 comm 0x7f [nranks=4] stream 0x55",
            "h:3:3 [2] NCCL INFO Broadcast: opCount 0 sendbuff 0x7f recvbuff 0x7f count 53 datatype 4 op 0 root 0 comm 0x7f [nranks=4] stream 0x55",
            "h:1:1 [0] NCCL INFO AllReduce: opCount 1 sendbuff 0x7f recvbuff 0x7f count 8 datatype 7 op 0 root 0 comm 0x7f [nranks=4] stream 0x55",
            "h:2:2 [1] NCCL INFO AllReduce: opCount 1 sendbuff 0x7e recvbuff 0x7e count 8 datatype 7 op 0 root 0 comm 0x7e [nranks=4] stream 0x55",
        ]);
        let m = s.call_mismatches();
        assert_eq!(m.len(), 1, "{m:?}");
        assert_eq!((m[0].numbered_by, m[0].number), ("NCCL opCount", 0));
        assert_eq!(m[0].calls.len(), 2);
        assert_eq!(
            m[0].calls[0].0,
            "Broadcast count 25503912 datatype 6 op 0 root 0"
        );
        assert_eq!(m[0].calls[1].1, vec!["h:2", "h:3"]);
        let s = feed(&[
            "[rank2]:[I1017 ProcessGroupWrapper.cpp:587] [Rank 2] Running collective: CollectiveFingerPrint(SequenceNumber=38, OpType=ALLREDUCE, TensorShape=[77, 1], TensorDtypes=Float, TensorDeviceTypes=TensorOptions(dtype=float))",
            "[rank1]:[I1017 ProcessGroupWrapper.cpp:587] [Rank 1] Running collective: CollectiveFingerPrint(SequenceNumber=38, OpType=ALLREDUCE, TensorShape=[100, 1], TensorDtypes=Float, TensorDeviceTypes=TensorOptions(dtype=float))",
        ]);
        let m = s.call_mismatches();
        assert_eq!(m.len(), 1, "{m:?}");
        assert_eq!(
            m[0].calls[0].0,
            "OpType=ALLREDUCE, TensorShape=[100, 1], TensorDtypes=Float"
        );
        // A caller that logged two calls at one number is in two groups: nothing said.
        let s = feed(&[
            "h:1:1 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x7f recvbuff 0x7f count 8 datatype 7 op 0 root 0 comm 0x7f [nranks=2] stream 0x55",
            "h:1:1 [0] NCCL INFO Broadcast: opCount 0 sendbuff 0x7f recvbuff 0x7f count 9 datatype 7 op 0 root 0 comm 0x7d [nranks=2] stream 0x55",
            "h:2:2 [1] NCCL INFO AllReduce: opCount 0 sendbuff 0x7f recvbuff 0x7f count 8 datatype 7 op 0 root 0 comm 0x7e [nranks=2] stream 0x55",
        ]);
        assert!(s.call_mismatches().is_empty());
    }

    #[test]
    fn an_operation_cut_by_the_line_s_end_is_compared_with_nothing() {
        // Two ranks at one number of one group, one line wrapped inside the operation's name:
        // not two operations.
        let line = |rank: u32, op: &str| {
            format!(
                "[rank{rank}]:[E ProcessGroupNCCL.cpp:563] [PG 0 Rank {rank}] Watchdog caught \
                 collective operation timeout: WorkNCCL(SeqNum=57, OpType={op}"
            )
        };
        let whole = line(0, "ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=600000)");
        let cut = line(1, "ALLREDUC");
        let s = feed(&[whole.as_str(), cut.as_str()]);
        assert!(s.call_mismatches().is_empty());
        let other = line(1, "BROADCAST, NumelIn=8, NumelOut=8, Timeout(ms)=600000)");
        let s = feed(&[whole.as_str(), other.as_str()]);
        assert_eq!(s.call_mismatches().len(), 1);
    }

    #[test]
    fn a_watchdog_s_place_in_the_collectives_is_read_in_each_format() {
        // PyTorch 2.1's, 2.3's and 2.4's prefixes; the heartbeat monitor's line (no failed work;
        // -1 for none) and a line of another kind that has no place.
        let shape = feed(&[
            "[E ProcessGroupNCCL.cpp:475] [Rank 5] Exception detected by watchdog at work: 18421, last enqueued NCCL work: 18421, last completed NCCL work: 18420.",
            "[rank2]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 2] Timeout at NCCL work: 19, last enqueued NCCL work: 19, last completed NCCL work: 18.",
            "[rank3]:[E227 16:30:43.526290891 ProcessGroupNCCL.cpp:1785] [PG ID 2 PG GUID 3 Rank 3] Exception (either an error or timeout) detected by watchdog at work: 32, last enqueued NCCL work: 32, last completed NCCL work: 31.",
            "[rank4]:[E703 15:37:17.178360488 ProcessGroupNCCL.cpp:1987] [PG ID 0 PG GUID 0(default_pg) Rank 4] Received a dump signal due to a collective timeout from  rank 7 and we will try our best to dump the debug info. Last enqueued NCCL work: -1, last completed NCCL work: -1.",
            "[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=19, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800093 milliseconds before timing out.",
            "[rank6]:[E1218 20:27:21.484903450 ProcessGroupNCCL.cpp:2168] [PG ID 1 PG GUID 1 Rank 6]  failure detected by watchdog at work sequence id: 1 PG status: last enqueued work: 547, last completed work: -1",
        ]);
        let places: Vec<(&str, usize, Option<i64>, i64, i64)> = shape
            .work_positions
            .iter()
            .map(|((g, r), p)| (g.as_str(), *r, p.failed_at, p.enqueued, p.completed))
            .collect();
        assert_eq!(
            places,
            vec![
                ("", 5, Some(18421), 18421, 18420),
                ("pg 0", 2, Some(19), 19, 18),
                ("pg id 0 pg guid 0(default_pg)", 4, None, -1, -1),
                ("pg id 1 pg guid 1", 6, Some(1), 547, -1),
                ("pg id 2 pg guid 3", 3, Some(32), 32, 31),
            ]
        );
    }

    #[test]
    fn a_rendezvous_that_never_completes_is_seen() {
        let s = feed(&[
            "[INFO] api: [default] Rendezvous'ing worker group",
            "[INFO] dynamic_rendezvous: The node 'host-a_1_0' attempts to join the next round of the rendezvous 'x'.",
        ]);
        assert!(s.rendezvous_waiting.is_some());
        let s = feed(&[
            "[INFO] api: [default] Rendezvous'ing worker group",
            "INFO: The node 'host-a_1_0' has joined round 0 of the c10d rendezvous 'x' as rank 0 in a world of size 2.",
        ]);
        assert!(s.rendezvous_waiting.is_none());
        assert!(s.started.is_some());
    }

    #[test]
    fn ranks_announced_twice_with_others_missing_are_found() {
        let s = feed(&[
            "initializing ddp: GLOBAL_RANK: 1, MEMBER: 2/4",
            "initializing ddp: GLOBAL_RANK: 1, MEMBER: 2/4",
            "initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/4",
            "initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/4",
        ]);
        assert_eq!(s.ranks_given_twice(), Some((vec![0, 1], 4)));
        // A restart announces every rank again: not ranks given twice.
        let s = feed(&[
            "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/2",
            "Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/2",
            "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/2",
            "Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/2",
        ]);
        assert_eq!(s.ranks_given_twice(), None);
    }

    #[test]
    fn close_progress_totals_are_uneven_and_far_ones_are_not() {
        let s = feed(&[
            "18679/18686 [1:50:07<00:02, 2.83it/s]",
            "18679/18683 [1:50:07<00:01, 2.84it/s]",
            "Epoch 3:  7%|▋         | 499/7151 [3:38:58<49:46:17, 26.94s/it]",
            " 0%|          | 0/13 [00:00<?, ?it/s]",
            " 0/100 [00:00<?, ?it/s]",
        ]);
        assert_eq!(s.uneven_totals(), vec![18683, 18686]);
        assert!(s.started.is_some());
        assert_eq!(bar_totals("loss 0.5 [rank 1]"), Vec::<u64>::new());
    }
}
