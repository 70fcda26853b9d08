//! From observations to ranked findings.
//!
//! Steps, in order:
//!
//! 1. Lines printed by an NCCL process get that process's rank.
//! 2. Cross-checks add observations no single line shows: NCCL versions
//!    that differ, two ranks on one GPU, a communicator larger than the
//!    world; the traces add who waits in which collective and who is behind
//!    (and where it was, from its Python stack); the manifest adds how ranks
//!    ended, the hang report, and who sent a DataLoader worker's SIGKILL.
//! 3. Noise is dropped: in a run whose manifest says `ok`, symptoms and
//!    consequences; refused connections of ranks that later connected (the
//!    usual retries at start-up). A rendezvous that expected a different
//!    number of ranks than the run has becomes `world_size_mismatch`.
//! 4. A hang where every rank waits in the same collective, with nothing
//!    else explaining it and NCCL's P2P transport in use, adds `p2p_hang`;
//!    timeouts across nodes only say so; the logs read as a whole
//!    (`shape.rs`) add what no single line shows.
//! 5. Standalone observations are grouped by category into findings;
//!    generic ones (error codes, exit codes, crash markers) join a finding
//!    about the same rank, or stand alone when there is none.
//! 6. Findings are ranked: role (cause, symptom, consequence), then whether
//!    they involve the first failing rank (manifest or torchelastic), then
//!    the earliest end among their ranks, then the category's specificity,
//!    then the order they were seen in.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::category::Category;
use crate::manifest::{self, KillVerdict};
use crate::process_waits::RankProcesses;
use crate::python_stack::{ProcessWait, PyStack};
use crate::report::{
    Confidence, Evidence, Finding, RankStack, Report, Role, RunFacts, SCHEMA_VERSION,
};
use crate::rules::{
    MONITORED_BARRIER_RULE, RULE_KUBELET_EVICTED_MEMORY, RULE_KUBELET_EVICTED_STORAGE,
    RULE_LIGHTNING_LAUNCHER_SIZES, RULE_MPI_LOST_DAEMON, RULE_NCCL_NO_ALGORITHM,
    RULE_NCCL_SHM_CUDA_FAILURE, RULE_POD_UNSCHEDULABLE, RULE_RAY_MEMORY_MONITOR,
    RULE_RAY_WORKERS_UNSCHEDULED, RULE_RAY_WORKER_CONNECTION_LOST, RULE_RAY_WORKER_SIGTERM,
    RULE_STORE_CLIENT_NAME_UNRESOLVED, RULE_STORE_NAME_UNRESOLVED,
};
use crate::sanitize::sanitize;
use crate::shape::{TRACEBACK_TIMEOUT, WATCHDOG_SEQUENCE};

/// The rule of [`hung_at_exit_without_destroy`]'s finding.
const RULE_HUNG_AT_EXIT_WITHOUT_DESTROY: &str = "hung_at_exit_without_destroy";

/// The rule of ranks whose tracebacks timed out in different collectives.
const TRACEBACKS_COLLECTIVES_DIFFER: &str = "tracebacks_collectives_differ";
use crate::signal::{Attach, Signal};
use crate::traces::{locate, RankProgress};
use crate::{Gathered, Options};
use probe::trace::SpanKind;

/// Longest detail of one observation quoted in a finding, in characters.
const MAX_DETAIL_CHARS: usize = 400;
/// Longest note, in characters.
const MAX_NOTE_CHARS: usize = 4096 + 200;

/// Lines shown in an `unknown` finding.
const UNKNOWN_LINES: usize = 12;

/// Facts about the run used while correlating.
#[derive(Debug, Default)]
struct RunContext {
    world_size: Option<usize>,
    ok: bool,
    hang: bool,
    failed: bool,
    first_failure: Option<usize>,
    end_after: HashMap<usize, f64>,
    exited_ok: BTreeSet<usize>,
    /// Ranks that ended on their own with an error (an exit code or a signal the launcher did
    /// not send): whatever their trace's last record says, they did not finish normally.
    exited_failed: BTreeSet<usize>,
    /// When each rank ended (Unix ns), where the manifest says.
    end_at_ns: HashMap<usize, i64>,
    p2p_disabled: bool,
}

fn context(g: &Gathered) -> RunContext {
    let mut c = RunContext::default();
    let mut first: Option<(f64, usize)> = None;
    let statuses: Vec<&str> = g
        .manifests
        .iter()
        .map(|m| m.manifest.status.name())
        .collect();
    c.ok = !statuses.is_empty() && statuses.iter().all(|s| *s == "ok");
    c.hang = statuses.contains(&"hang");
    c.failed = statuses.iter().any(|s| !matches!(*s, "ok" | "running"));
    for m in &g.manifests {
        let man = &m.manifest;
        c.world_size = c.world_size.or(Some(man.world_size));
        if let Some(f) = &man.first_failure {
            let t = f.after_s;
            if first.is_none_or(|(ft, _)| t < ft) {
                first = Some((t, f.rank));
            }
        }
        for r in &man.ranks {
            if let Some(end) = &r.end {
                c.end_after.insert(r.rank, end.after_s);
                if let Some(t) = end.at_unix_ns {
                    c.end_at_ns.insert(r.rank, t);
                }
                if !end.stopped_by_launcher && end.termination.success() {
                    c.exited_ok.insert(r.rank);
                } else if !end.stopped_by_launcher {
                    c.exited_failed.insert(r.rank);
                }
            }
            if r.env
                .get("NCCL_P2P_DISABLE")
                .is_some_and(|v| v.trim() == "1")
            {
                c.p2p_disabled = true;
            }
        }
        if man
            .env
            .get("NCCL_P2P_DISABLE")
            .is_some_and(|v| v.trim() == "1")
        {
            c.p2p_disabled = true;
        }
    }
    c.first_failure = first
        .map(|(_, r)| r)
        .or_else(|| g.scans.iter().find_map(|s| s.elastic_root));
    c
}

fn run_facts(g: &Gathered) -> Option<RunFacts> {
    if g.manifests.is_empty() {
        return None;
    }
    let mut facts = RunFacts::default();
    let mut statuses = Vec::new();
    let mut first: Option<(f64, String)> = None;
    for m in &g.manifests {
        facts.run_dirs.push(m.dir_display.clone());
        statuses.push(m.manifest.status.name().to_owned());
        facts.world_size = facts.world_size.or(Some(m.manifest.world_size));
        if let Some(f) = &m.manifest.first_failure {
            let t = f.after_s;
            let text = format!(
                "rank {} {} after {t:.1} s",
                f.rank,
                crate::manifest::describe(&f.termination)
            );
            if first.as_ref().is_none_or(|(ft, _)| t < *ft) {
                first = Some((t, text));
            }
        }
        facts.ranks.extend(m.rank_facts());
    }
    facts.ranks.sort_by_key(|r| r.rank);
    facts.status = (!statuses.is_empty()).then(|| statuses.join("/"));
    facts.first_failure = first.map(|(_, t)| t);
    Some(facts)
}

/// Turns everything gathered into the report.
pub(crate) fn build(mut g: Gathered, opts: &Options) -> Report {
    let ctx = context(&g);
    let mut order = g.order;
    let mut signals = std::mem::take(&mut g.signals);
    for m in &g.manifests {
        signals.extend(m.signals(&mut order));
    }

    // A rank told that another rank's collective timed out speaks for that rank.
    for s in signals
        .iter_mut()
        .filter(|s| s.rule == crate::rules::DUMP_SIGNAL_RULE)
    {
        if let Some(&r) = s.subjects.first() {
            s.observer = Some(r);
            s.observer_explicit = true;
        }
    }

    // 1. Ranks of NCCL processes; a signal without named ranks is about the
    // rank that printed it (a consequence names the culprit or nobody).
    let process_ranks = g.nccl.process_ranks();
    for s in &mut signals {
        if !s.observer_explicit {
            if let Some(r) = s.process.as_ref().and_then(|p| process_ranks.get(p)) {
                s.observer = Some(*r);
            }
        }
        if s.subjects.is_empty() && s.role != Role::Consequence {
            s.subjects.extend(s.observer);
        }
    }

    name_unused_parameters(&mut signals, &g.progress);
    judge_killed_workers(&mut signals, &g);
    store_waits_after_the_training_ran(&mut signals, &g);
    kernels_trapped_after_a_timeout(&mut signals);
    monitored_barrier_peer_gone(&mut signals);
    hung_at_exit_without_destroy(&mut signals, &g.shape, &mut order);

    // 2. Cross-checks.
    for mut s in g.nccl.cross_checks(ctx.world_size) {
        order += 1;
        s.order = order;
        signals.push(s);
    }
    let mut stuck_same = false;
    if !ctx.ok {
        stuck_same = progress_signals(
            &g.progress,
            g.different_call.as_ref().map(|calls| calls[0].call.seq),
            &g.python_stacks,
            &g.rank_processes,
            &ctx,
            &mut signals,
            &mut order,
        );
        if g.progress.is_empty() {
            let store = g.manifests.first().map(|m| StoreAddress {
                addr: m.manifest.master_addr.clone(),
                port: m.manifest.master_port,
                nnodes: m.manifest.nnodes,
            });
            stack_signals(&g.python_stacks, store.as_ref(), &mut signals, &mut order);
        }
    }
    if let Some(calls) = &g.different_call {
        order += 1;
        signals.push(calls_that_differ(calls, order));
    }
    quote_what_the_leaving_rank_said(&mut signals, &g.scans);
    name_a_ddp_forward_on_some_ranks(&mut signals, &g.python_stacks);
    // Any other mismatch with stacks at different places (one the forward's fix did not name).
    name_where_the_paths_parted(&mut signals, &g.python_stacks);
    stuck_same |= signals
        .iter()
        .any(|s| s.rule == "manifest_hang_same_collective");
    let timed_out = signals
        .iter()
        .any(|s| s.category == Category::CollectiveTimeout)
        || ctx.hang;
    // A rank that ended normally while the others were still in a collective: they time out
    // waiting for it, or (gloo, when its process exits) lose the connection to it. Either needs
    // the clean exit to come before the first failure: a rank that finished its work and
    // exited after a peer crashed (a peer's gloo abort on an all_gather of another size, which
    // its own side completed) is the crash's doing.
    let lost_peer = signals
        .iter()
        .any(|s| matches!(s.rule, "peer_gone" | "peer_closed" | "peer_io"));
    if timed_out || (lost_peer && ctx.failed) {
        let left = left_with_threads_running(&g, &signals);
        let before = ctx
            .end_after
            .iter()
            .filter(|(r, _)| !ctx.exited_ok.contains(r) && !left.contains(r))
            .map(|(_, t)| *t)
            .fold(f64::INFINITY, f64::min);
        for m in &g.manifests {
            for mut s in uneven_from_manifest(m, &ctx, &signals, before, &left) {
                order += 1;
                s.order = order;
                signals.push(s);
            }
        }
    } else if ctx.failed {
        let aborted = if g.progress.is_empty() {
            aborted_without_an_error(&g, &signals)
        } else {
            aborted_after_the_training(&g, &ctx, &signals)
        };
        for mut s in aborted {
            order += 1;
            s.order = order;
            signals.push(s);
        }
    }

    // 3. Noise and reinterpretation.
    let connected: BTreeSet<usize> = g
        .nccl
        .completed_ranks()
        .into_iter()
        .chain(
            g.progress
                .iter()
                .filter(|p| p.last_completed.is_some())
                .map(|p| p.rank),
        )
        .collect();
    // PyTorch's desync report names ranks that finished the collective and never joined the
    // next: they are the ones waited for, and the ranks its other line shows inside the
    // collective are the waiting ones.
    // Its snapshot's ranks in different collectives at one number are the same: the ranks
    // inside the collective wait for ranks that went elsewhere.
    if signals.iter().any(|s| {
        s.rule == "desync_report_lagging"
            || s.rule == crate::desync_snapshot::RULE_DESYNC_SNAPSHOT_MISMATCH
    }) {
        for s in &mut signals {
            if s.rule == crate::rules::RULE_DESYNC_ALL_JOINED {
                s.role = Role::Symptom;
                s.subjects.clear();
            }
        }
    }
    signals.retain(|s| {
        if ctx.ok && s.role != Role::Cause {
            return false;
        }
        !(s.category == Category::ConnectionRefused
            && s.observer.is_some_and(|r| connected.contains(&r)))
    });
    // The kernel's word that the memory hardware failed under a process ("Memory failure:
    // ... Sending SIGBUS to python:48213 due to hardware memory corruption") says where the
    // SIGBUS came from: the SIGBUS lines (a shell's "Bus error", an exit code -7) are not
    // /dev/shm's then.
    let hardware_sigbus = signals.iter().any(|s| {
        s.evidence.iter().any(|e| {
            e.text
                .to_ascii_lowercase()
                .contains("due to hardware memory corruption")
        })
    });
    if hardware_sigbus {
        signals.retain(|s| {
            !matches!(
                s.rule,
                "sigbus_exit" | "shell_bus_error" | "dataloader_worker_bus_error"
            )
        });
    }
    // Under `ddp-probe run` rank 0's own process hosts PyTorch's store on the job's
    // MASTER_PORT (torchrun's agent hosts it there instead), a port the launcher checked free
    // at the start: a rank that finds that port taken met a process of its own job.
    let job_ports: BTreeSet<u16> = g.manifests.iter().map(|m| m.manifest.master_port).collect();
    for s in &mut signals {
        let on_job_port =
            s.category == Category::PortInUse && s.port.is_some_and(|p| job_ports.contains(&p));
        if on_job_port {
            s.rule = RULE_JOB_STORE_PORT_TAKEN;
            let d = s.detail.take().unwrap_or_default();
            s.detail = Some(format!(
                "{d}, the job's MASTER_PORT, where a process of this job already hosts PyTorch's \
                 store"
            ));
        }
    }
    spawned_beside_the_launchers_ranks(&mut signals, &g);
    // Lightning's launcher, once a rank it started has ended badly ("Child process with PID N
    // terminated with code C. Forcefully terminating all other processes to avoid zombies"),
    // sends SIGKILL to the other ranks and to its own main process
    // (`subprocess_script.py`'s _ChildProcessObserver): a shell's "Killed" after that line is
    // the launcher's doing, not the out-of-memory killer's.
    let lightning_stop = signals
        .iter()
        .filter(|s| {
            s.evidence.iter().any(|e| {
                let t = e.text.to_ascii_lowercase();
                t.contains("child process with pid") && t.contains("forcefully terminating")
            })
        })
        .map(|s| s.order)
        .min();
    if let Some(after) = lightning_stop {
        for s in &mut signals {
            if s.rule == "shell_killed" && s.order > after {
                s.category = Category::RankCrashed;
                s.role = Role::Consequence;
                s.detail = Some(
                    "killed by Lightning's launcher, which ends every process of the job once \
                     one of its ranks failed"
                        .to_owned(),
                );
            }
        }
    }
    if let Some(w) = ctx.world_size {
        for s in &mut signals {
            if s.category == Category::RendezvousTimeout {
                if let Some(e) = s.expected_world.filter(|&e| e != w) {
                    s.category = Category::WorldSizeMismatch;
                    s.role = Role::Cause;
                    let d = s.detail.take().unwrap_or_default();
                    s.detail = Some(format!(
                        "{d}{}the store expected {e} ranks but the run has {w}",
                        if d.is_empty() { "" } else { "; " }
                    ));
                }
            }
        }
    }

    // 4. P2P hang.
    // Nothing else explains the timeout and no rank is named as behind or
    // gone: the transport itself may be stuck.
    let explained = signals.iter().any(|s| {
        (s.role == Role::Cause && s.attach == Attach::Standalone)
            || s.role == Role::Consequence
            || (s.category == Category::CollectiveTimeout
                && !s.subjects.is_empty()
                && s.observer.is_some_and(|o| s.subjects != [o]))
    });
    if (stuck_same || (timed_out && !explained)) && !ctx.p2p_disabled && !g.shape.p2p_disabled {
        let mut p2p = g.nccl.p2p_evidence(opts.max_evidence);
        let iommu = g.shape.iommu_not_passthrough.clone();
        let only_iommu = p2p.is_empty() && iommu.is_some();
        if p2p.is_empty() {
            p2p.extend(iommu.map(|e| (None, e)));
        }
        if !p2p.is_empty() {
            let mut s = Signal::new(
                if only_iommu {
                    IOMMU_WARNED_DURING_HANG
                } else {
                    "p2p_in_use_during_hang"
                },
                Category::P2pHang,
                Role::Cause,
                Attach::Standalone,
            );
            s.subjects = signals
                .iter()
                .filter(|s| s.category == Category::CollectiveTimeout)
                .flat_map(|s| s.observer)
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            s.detail = Some(if only_iommu {
                "the ranks timed out with nothing else explaining it, on a host where RCCL \
                 warned that the IOMMU is not in passthrough mode (iommu=pt), which AMD names as \
                 a cause of hangs between GPUs"
                    .to_owned()
            } else if stuck_same {
                "every rank waits in the same collective, nobody is behind, and NCCL moves data between these GPUs with its P2P transport".to_owned()
            } else {
                "the ranks timed out with nothing else explaining it, and NCCL moves data between these GPUs with its P2P transport".to_owned()
            });
            s.evidence = p2p.into_iter().map(|(_, e)| e).collect();
            order += 1;
            s.order = order;
            signals.push(s);
        }
    }

    // 4b. Timeouts across nodes only.
    cross_node_timeouts(&g, &mut signals);

    // 4c. What the logs show as a whole.
    if g.progress.is_empty() {
        let single_host = g.shape.single_host(g.nccl.single_node());
        let p2p_off = ctx.p2p_disabled || g.shape.p2p_disabled;
        let stuck = if single_host != Some(false) && !p2p_off {
            first_collective_stuck_everywhere(&g.shape, opts)
        } else {
            None
        };
        let placed = work_position_signals(&g.shape, &signals, opts);
        let silent = if placed.is_empty() {
            silent_ranks_signals(&g.shape)
        } else {
            Vec::new()
        };
        for mut s in placed.into_iter().chain(silent).chain(stuck) {
            order += 1;
            s.order = order;
            signals.push(s);
        }
    }
    for mut s in shape_signals(&g, &ctx, &signals, timed_out, opts) {
        order += 1;
        s.order = order;
        signals.push(s);
    }

    accelerate_join_without_effect(&mut signals);
    lightning_runs_the_loop(&mut signals, &g.shape);

    // 5. Group.
    let mut findings = group(signals, opts);

    // 6. Rank.
    findings.sort_by(|a, b| compare(a, b, &ctx));
    let mut findings: Vec<Finding> = findings.into_iter().map(|d| d.finding).collect();
    add_role_notes(&mut findings);

    if findings.is_empty() && needs_unknown(&g, &ctx) {
        findings.push(unknown_finding(&g, &ctx));
    }

    let nccl = g.nccl.summaries();
    let headline = headline(&findings, &g, nccl.len());
    let mut notes = std::mem::take(&mut g.notes);
    if let Some(w) = ctx.world_size {
        if !g.progress.is_empty() && g.progress.len() < w {
            let have: BTreeSet<usize> = g.progress.iter().map(|p| p.rank).collect();
            let missing: Vec<String> = (0..w)
                .filter(|r| !have.contains(r))
                .take(16)
                .map(|r| r.to_string())
                .collect();
            notes.push(format!(
                "no trace of rank {}; what it was doing is unknown",
                missing.join(", ")
            ));
        }
    }
    // Notes may quote file names and error messages: sanitised as well.
    let notes = notes.iter().map(|n| sanitize(n, MAX_NOTE_CHARS)).collect();
    Report {
        schema_version: SCHEMA_VERSION,
        inputs: std::mem::take(&mut g.inputs),
        headline,
        run: run_facts(&g),
        findings,
        nccl,
        notes,
        attempts: Vec::new(),
        stacks: rank_stacks(&g.python_stacks),
    }
}

/// Where each rank was, from its Python stack, by rank.
fn rank_stacks(stacks: &[PyStack]) -> Vec<RankStack> {
    let mut out: Vec<RankStack> = stacks
        .iter()
        .map(|st| {
            let (place, line) = st.whereabouts();
            RankStack {
                rank: st.rank,
                place,
                file: st.file(),
                line,
            }
        })
        .collect();
    out.sort_by_key(|s| s.rank);
    out.dedup_by_key(|s| s.rank);
    out
}

/// Observations from the traces: each waiting rank, each rank behind; a
/// behind rank that finished normally ran out of inputs. Returns whether
/// every traced rank waits in the same collective.
/// When the run's manifests tell each rank's node, every rank waited for in a collective
/// timeout timed out waiting itself (nobody is behind or gone), and ranks of at least two nodes
/// wait for ranks on another node: the nodes lost each other. Says so in the first such
/// timeout's detail, with the nodes and their ranks. (Ring algorithms chain the waits, so a
/// rank may also wait for a node-mate that waits across the nodes.)
fn cross_node_timeouts(g: &Gathered, signals: &mut [Signal]) {
    let mut node_of: BTreeMap<usize, usize> = BTreeMap::new();
    for m in &g.manifests {
        let node = m.manifest.node_rank;
        for r in &m.manifest.ranks {
            node_of.insert(r.rank, node);
        }
    }
    let waits: Vec<(usize, &[usize])> = signals
        .iter()
        .filter(|s| s.category == Category::CollectiveTimeout)
        .filter_map(|s| {
            let o = s.observer?;
            let waited = s.subjects.as_slice();
            (!waited.is_empty() && waited != [o]).then_some((o, waited))
        })
        .collect();
    let observers: BTreeSet<usize> = waits.iter().map(|(o, _)| *o).collect();
    let mut waiting_nodes = BTreeSet::new();
    for (o, waited) in &waits {
        let Some(&node) = node_of.get(o) else {
            return;
        };
        for w in *waited {
            if !observers.contains(w) {
                return;
            }
            match node_of.get(w) {
                None => return,
                Some(&n) if n != node => {
                    waiting_nodes.insert(node);
                }
                Some(_) => {}
            }
        }
    }
    if waiting_nodes.len() < 2 {
        return;
    }
    let mut by_node: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (&r, &n) in &node_of {
        by_node.entry(n).or_default().push(r);
    }
    let nodes: Vec<String> = by_node
        .iter()
        .map(|(n, ranks)| format!("node {n}: {}", who(ranks)))
        .collect();
    let note = format!(
        "every rank waited for is itself waiting, and each node's ranks wait for ranks on \
         another node ({}): the nodes lost each other; check the network between them (link, \
         switch, firewall, a node that went away)",
        nodes.join("; ")
    );
    if let Some(s) = signals.iter_mut().find(|s| {
        s.category == Category::CollectiveTimeout && s.observer.is_some() && !s.subjects.is_empty()
    }) {
        s.detail = Some(match s.detail.take() {
            Some(d) if !d.is_empty() => format!("{d}; {note}"),
            _ => note,
        });
    }
}

/// The rule of a rank that never issued the collective other ranks' watchdogs timed out in.
const WORK_BEHIND_RULE: &str = "watchdog_rank_behind";

/// What the watchdogs' places in a process group's collectives say (`shape.rs`,
/// `WorkPosition`), where no trace does: per group, the lowest work a rank timed out in; a rank
/// whose last enqueued work is below it never issued it (it is behind, or the ones waiting
/// issued a collective it does not), and each waiting rank waits for it. When every rank the
/// log shows had issued that work, the lower ranks the log never shows are named in the detail
/// (not as culprits: a paste may leave them out).
fn work_position_signals(
    shape: &crate::shape::LogShape,
    signals: &[Signal],
    opts: &Options,
) -> Vec<Signal> {
    type Place<'a> = (usize, &'a crate::shape::WorkPosition);
    let mut out = Vec::new();
    for (group, ranks) in shape.work_positions_by_group() {
        let failed = ranks.iter().filter_map(|(_, p)| p.failed_at);
        let Some(work) = failed.filter(|w| *w >= 0).min() else {
            continue;
        };
        let waiting: Vec<&Place<'_>> = ranks
            .iter()
            .filter(|(_, p)| p.failed_at.is_some() && p.enqueued >= work)
            .collect();
        let behind: Vec<&Place<'_>> = ranks.iter().filter(|(_, p)| p.enqueued < work).collect();
        let behind_ranks: Vec<usize> = behind.iter().map(|(r, _)| *r).collect();
        let waiting_ranks: Vec<usize> = waiting.iter().map(|(r, _)| *r).collect();
        let work = if group.is_empty() {
            format!("NCCL work {work}")
        } else {
            let named = group.to_uppercase().replace("(DEFAULT_PG)", "(default_pg)");
            format!("NCCL work {work} of {named}")
        };
        let detail = if behind.is_empty() {
            // Ranks the log shows: those with a place, and any other rank a line spoke for.
            let placed: BTreeSet<usize> = ranks.iter().map(|(r, _)| *r).collect();
            let shown: BTreeSet<usize> = placed
                .iter()
                .copied()
                .chain(signals.iter().filter_map(|s| s.observer))
                .collect();
            let top = placed.iter().next_back().copied().unwrap_or(0);
            // At most as many as it shows are kept: more are never reported.
            let unseen: Vec<usize> = (0..top)
                .filter(|r| !shown.contains(r))
                .take(placed.len())
                .collect();
            // Only where the log shows several ranks and misses fewer than it shows: one rank's
            // paste says nothing of the ranks left out.
            if unseen.is_empty() || placed.len() < 2 || unseen.len() >= placed.len() {
                continue;
            }
            unseen_ranks_detail(&work, &unseen)
        } else {
            let stood: Vec<String> = behind
                .iter()
                .map(|(r, p)| {
                    format!(
                        "rank {r}: last enqueued {}, last completed {}",
                        p.enqueued, p.completed
                    )
                })
                .collect();
            format!(
                "{} timed out in {work}, which {} never issued ({}): behind, or the waiting \
                 ranks issued a collective {} did not",
                who(&waiting_ranks),
                who(&behind_ranks),
                stood.join("; "),
                if behind.len() == 1 { "it" } else { "they" },
            )
        };
        for (rank, pos) in &waiting {
            let mut s =
                Signal::standalone(WORK_BEHIND_RULE, Category::CollectiveTimeout, Role::Symptom);
            s.observer = Some(*rank);
            s.observer_explicit = true;
            s.subjects = if behind_ranks.is_empty() {
                vec![*rank]
            } else {
                behind_ranks.clone()
            };
            s.detail = Some(detail.clone());
            s.evidence.push(pos.evidence.clone());
            let room = opts.max_evidence.saturating_sub(1);
            s.evidence
                .extend(behind.iter().map(|(_, p)| p.evidence.clone()).take(room));
            out.push(s);
        }
    }
    out
}

/// The rule of ranks whose watchdogs timed out in one collective while other ranks of its
/// group report no timeout for it.
const SILENT_RANKS_RULE: &str = "watchdog_ranks_silent";

/// Ranks of a group whose watchdogs did not time out in the collective the others' did
/// (`shape.rs`, `TimedOutWork`): with every rank's output in one log (a launcher's console), a
/// hung job's ranks all time out but the one they wait for, which never issued the collective.
/// The group's ranks are those below the highest that timed out, or as many as an all-gather's
/// or reduce-scatter's element counts say. Only where two ranks or more timed out and fewer are
/// silent than timed out (a paste of some ranks' lines says nothing of the others'), and named
/// as the ranks to read, not as culprits: their lines may have been left out.
fn silent_ranks_signals(shape: &crate::shape::LogShape) -> Vec<Signal> {
    let mut out = Vec::new();
    for (&(group, seq), work) in &shape.watchdog_timeouts {
        let Some(&top) = work.ranks.iter().next_back() else {
            continue;
        };
        let size = work.group_size.unwrap_or(top + 1);
        // At most as many as timed out are kept: more are never reported.
        let silent: Vec<usize> = (0..size)
            .filter(|r| !work.ranks.contains(r))
            .take(work.ranks.len())
            .collect();
        if top >= size
            || work.ranks.len() < 2
            || silent.is_empty()
            || silent.len() >= work.ranks.len()
        {
            continue;
        }
        let timed_out: Vec<usize> = work.ranks.iter().copied().collect();
        let of_group = match group {
            Some(g) if g != 0 => format!(" of process group {g} (ranks in that group)"),
            _ => String::new(),
        };
        let counted = if work.group_size.is_some() {
            format!(", one of {size} ranks by its element counts")
        } else {
            String::new()
        };
        let (report, pronoun, logs) = if silent.len() == 1 {
            ("reports", "it", "its log")
        } else {
            ("report", "they", "their logs")
        };
        let detail = format!(
            "{} timed out in {} SeqNum={seq}{of_group}{counted}; {} {report} no timeout for it \
             in this log: {pronoun} never issued that collective (behind, or on another path) \
             or the paste left {pronoun} out; read {logs}",
            who(&timed_out),
            work.op,
            who(&silent),
        );
        for (&rank, line) in &work.evidence {
            let mut s = Signal::standalone(
                SILENT_RANKS_RULE,
                Category::CollectiveTimeout,
                Role::Symptom,
            );
            s.observer = Some(rank);
            s.observer_explicit = true;
            s.subjects = vec![rank];
            s.detail = Some(detail.clone());
            s.evidence.push(line.clone());
            out.push(s);
        }
    }
    out
}

/// Every rank a group's watchdogs show (two or more) issued the group's first collective and
/// none ever completed one (last completed -1): nobody is behind, so the transport between
/// them never moved the first data. On one node (or where the log does not say more than one)
/// that is NCCL's peer-to-peer path, the case of NCCL's troubleshooting guide: PCIe ACS or the
/// IOMMU routing peer traffic where it cannot go, GPUs without peer-to-peer support.
fn first_collective_stuck_everywhere(
    shape: &crate::shape::LogShape,
    opts: &Options,
) -> Option<Signal> {
    shape
        .work_positions_by_group()
        .into_values()
        .find_map(|ranks| {
            let first = ranks.len() >= 2
                && ranks.iter().all(|(_, p)| {
                    p.completed == -1 && p.failed_at.is_some_and(|w| (0..=1).contains(&w))
                });
            if !first {
                return None;
            }
            let mut s = Signal::standalone(
                "first_collective_stuck_everywhere",
                Category::P2pHang,
                Role::Cause,
            );
            s.subjects = ranks.iter().map(|(r, _)| *r).collect();
            s.detail = Some(format!(
            "{} each issued their group's first collective and none ever completed one: nobody \
             is behind, the first transfer between the GPUs never finished",
            who(&s.subjects)
        ));
            s.evidence = ranks
                .iter()
                .map(|(_, p)| p.evidence.clone())
                .take(opts.max_evidence)
                .collect();
            Some(s)
        })
}

/// A watchdog timed out in its group's first collective, and nothing else explains it: no
/// rank had completed any collective of the group, so none was behind in an earlier one, and
/// none is seen to have died. The ranks had all reached the collective or were still
/// starting; NCCL's troubleshooting guide names the first collective's hang between GPUs of one
/// node as GPU peer-to-peer traffic that PCIe ACS or the IOMMU blocks. A barrier is left out:
/// ranks wait in one while one of them prepares data alone, and the fix is then the timeout.
/// (Two or more ranks' positions that all say so are [`first_collective_stuck_everywhere`].)
fn first_collective_timed_out(shape: &crate::shape::LogShape, opts: &Options) -> Option<Signal> {
    let timeouts = &shape.first_collective_timeouts;
    if timeouts.is_empty() || timeouts.iter().any(|t| t.may_be_barrier()) {
        return None;
    }
    if shape.work_positions.values().any(|p| p.completed >= 0) {
        return None;
    }
    let mut s = Signal::standalone("first_collective_timed_out", Category::P2pHang, Role::Cause);
    s.subjects = timeouts.iter().filter_map(|t| t.rank).collect();
    s.subjects.sort_unstable();
    s.subjects.dedup();
    let op = timeouts[0].op.to_ascii_uppercase();
    s.detail = Some(format!(
        "{} timed out in its group's first collective ({op}): no collective of the group had \
         completed, so no rank was behind in an earlier one, and the log shows no rank dying",
        subject(&s.subjects)
    ));
    let mut lines: Vec<&Evidence> = timeouts.iter().map(|t| &t.evidence).collect();
    lines.dedup_by(|a, b| a.line == b.line && a.file == b.file);
    s.evidence = lines.into_iter().take(opts.max_evidence).cloned().collect();
    Some(s)
}

/// The detail of a timeout every rank of the log had issued, naming the ranks it never shows.
fn unseen_ranks_detail(work: &str, unseen: &[usize]) -> String {
    let (verb, pronoun, logs) = if unseen.len() == 1 {
        ("appears", "it", "its log")
    } else {
        ("appear", "they", "their logs")
    };
    format!(
        "every rank this log shows had issued {work} and waits in it (its last enqueued work); \
         {} never {verb} in the log: if {pronoun} ran, {pronoun} never issued that work; read \
         {logs}",
        who(unseen),
    )
}

/// Ranks that issued different collectives where some were in a forward of the DDP model
/// and the others were not (an evaluation or a sample on rank 0 through the DDP model: its
/// forward broadcasts the module's buffers first, a collective the other ranks never join, and
/// PyTorch says nothing but a timeout): the mismatch names the forward and the fix is the
/// wrapped module's.
fn name_a_ddp_forward_on_some_ranks(signals: &mut [Signal], stacks: &[PyStack]) {
    let (forward, other): (Vec<&PyStack>, Vec<&PyStack>) =
        stacks.iter().partition(|st| st.in_ddp_forward());
    if forward.is_empty() || other.is_empty() {
        return;
    }
    let places: Vec<String> = forward
        .iter()
        .map(|st| {
            let (where_, _) = st.whereabouts();
            format!("rank {} was {where_}", st.rank)
        })
        .collect();
    let ranks = |sts: &[&PyStack]| who(&sts.iter().map(|st| st.rank).collect::<Vec<_>>());
    let fix = format!(
        "{}: in a forward of the DistributedDataParallel model, which first runs collectives of \
         its own (the broadcast of the model's buffers, BatchNorm's statistics, from rank 0) \
         that every rank must join; {} ran no such forward. Run a forward that only some ranks \
         do (an evaluation, a sample or a check on rank 0) through the wrapped module \
         (`model.module(x)`), which runs no collective, or run it on every rank (each on its \
         share of the data).",
        probe::wrap::capitalized(&places.join("; ")),
        ranks(&other)
    );
    for s in signals
        .iter_mut()
        .filter(|s| s.category == Category::CollectiveMismatch && s.role == Role::Cause)
    {
        s.fix_hint = Some(fix.clone());
    }
}

/// accelerate's warning that its `join_uneven_inputs` does nothing here (it joins in multi-GPU
/// training only): never a finding of its own (a run that succeeds prints it too), but where
/// ranks ran out of batches, the fix says that the program's Join did nothing and what works
/// instead (found on accelerate 1.x with `cpu=True` and gloo, 2026-12-07: the fix had said to
/// wrap the loop in Join, which the program did).
fn accelerate_join_without_effect(signals: &mut Vec<Signal>) {
    let mut warned = None;
    signals.retain(|s| {
        let warning = s.rule == crate::rules::RULE_ACCELERATE_JOIN_NO_EFFECT;
        if warning && warned.is_none() {
            warned = s.evidence.first().cloned();
        }
        !warning
    });
    let Some(warning) = warned else {
        return;
    };
    for s in uneven_causes_without_a_fix(signals) {
        s.fix_hint = Some(ACCELERATE_JOIN_NO_EFFECT_FIX.to_owned());
        s.evidence.push(warning.clone());
    }
}

/// Ranks out of batches in a PyTorch Lightning job (its rank announcements, `Initializing
/// distributed: GLOBAL_RANK: 1, MEMBER: 2/2`, are in the log): Lightning runs the loop, so the
/// fix is in its sampler setting, not in wrapping the loop in Join (found on Lightning 2.6 with
/// `use_distributed_sampler=False` and per-rank datasets of 160 and 96 samples, 2 CPU ranks,
/// 2026-12-07: the fix had said to wrap the loop in `model.join()`).
fn lightning_runs_the_loop(signals: &mut [Signal], shape: &crate::shape::LogShape) {
    if shape.announced.is_empty() {
        return;
    }
    for s in uneven_causes_without_a_fix(signals) {
        s.fix_hint = Some(LIGHTNING_UNEVEN_FIX.to_owned());
    }
}

/// The signals of ranks out of batches (causes) whose fix no pass has set yet.
fn uneven_causes_without_a_fix(signals: &mut [Signal]) -> impl Iterator<Item = &mut Signal> {
    signals.iter_mut().filter(|s| {
        s.category == Category::UnevenInputs && s.role == Role::Cause && s.fix_hint.is_none()
    })
}

/// The fix for uneven inputs in a PyTorch Lightning job.
const LIGHTNING_UNEVEN_FIX: &str = "Give every rank the same number of batches; PyTorch \
     Lightning runs the loop itself, so Join is no option. Keep `Trainer(use_distributed_sampler=\
     True)`, its default (`replace_sampler_ddp=True` before Lightning 2.0), which gives each rank \
     an equal share of a map-style dataset, padded; with your own sampler or an IterableDataset, \
     make each rank's DataLoader the same length (drop the remainder, or pad it).";

/// The fix for uneven inputs where accelerate's `join_uneven_inputs` had no effect.
const ACCELERATE_JOIN_NO_EFFECT_FIX: &str = "accelerate's `join_uneven_inputs` did nothing \
     here: it joins in multi-GPU training only (its warning in this log). Give every rank the \
     same number of batches (a DataLoader that accelerate prepares splits the data evenly; \
     `even_batches=True` is its default), or, on CPU ranks, use PyTorch's Join on the prepared \
     model directly: `from torch.distributed.algorithms.join import Join` and `with \
     Join([model]):` around the loop.";

/// A mismatch whose ranks' Python stacks (taken at the hang) are at different places of the
/// program: the fix names each rank's place, where the paths parted (rank 0 in an evaluation
/// only it runs, `utils.py:401 in reduce_across_processes`, rank 1 back in training).
fn name_where_the_paths_parted(signals: &mut [Signal], stacks: &[PyStack]) {
    let mut places: Vec<(usize, String)> = stacks
        .iter()
        .map(|st| (st.rank, st.whereabouts().0))
        .collect();
    places.sort();
    places.dedup_by_key(|(rank, _)| *rank);
    if places.len() < 2 || places.iter().all(|(_, w)| *w == places[0].1) {
        return;
    }
    let said: Vec<String> = places
        .iter()
        .map(|(rank, where_)| format!("rank {rank} was {where_}"))
        .collect();
    let fix = format!(
        "{}: the ranks' code took different paths before these collectives. Make every rank \
         call the same collectives in the same order: run that block on every rank (an \
         evaluation or a metric on each rank's share of the data, reduced together), or take \
         its collectives out of a branch only some ranks run (`if rank == 0:`, an early exit).",
        probe::wrap::capitalized(&said.join("; "))
    );
    for s in signals
        .iter_mut()
        .filter(|s| s.category == Category::CollectiveMismatch && s.role == Role::Cause)
        .filter(|s| s.fix_hint.is_none())
    {
        s.fix_hint = Some(fix.clone());
    }
}

/// The first collective the traces show the ranks of one process group calling differently
/// (completed or not): another operation, or another size of one that needs a single size
/// (an evaluation's `all_gather` of predictions, 51 on rank 0 and 50 on rank 1: gloo completed it
/// on rank 0 with wrong data and aborted rank 1).
fn calls_that_differ(calls: &[crate::traces::RankCall], order: u64) -> Signal {
    let first = &calls[0].call;
    let ops_differ = calls.iter().any(|c| c.call.op != first.op);
    let mut s = Signal::new(
        "trace_calls_differ",
        Category::CollectiveMismatch,
        Role::Cause,
        Attach::Standalone,
    );
    s.order = order;
    s.subjects = calls.iter().map(|c| c.rank).collect();
    let bytes = |c: &crate::traces::Coll| c.bytes.map_or("?".to_owned(), |b| format!("{b}"));
    let op = sanitize(first.op.as_deref().unwrap_or("collective"), 40);
    if ops_differ {
        s.detail = Some(format!(
            "the traces show collective seq {} called as different operations on different \
             ranks: {}",
            first.seq,
            calls
                .iter()
                .map(|c| format!("rank {} in {}", c.rank, c.call.describe()))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    } else {
        let sizes = calls
            .iter()
            .map(|c| format!("rank {}: {} bytes", c.rank, bytes(&c.call)))
            .collect::<Vec<_>>()
            .join(", ");
        s.detail = Some(format!(
            "the traces show {} called with different sizes on different ranks ({sizes}): every \
             rank must pass a tensor of the same size",
            first.describe()
        ));
        s.predicate_hint = Some(match &first.caller {
            Some(caller) => format!(
                "called {op} with different sizes ({sizes}) at {}",
                sanitize(caller, 120)
            ),
            None => format!("called {op} with different sizes ({sizes})"),
        });
        s.fix_hint = Some(if op.starts_with("all_gather") {
            format!(
                "{op} needs a tensor of the same size on every rank. Gather the sizes first and \
                 pad every rank's tensor to the largest (cutting each rank's part back after), use \
                 `all_gather_object` for small Python objects, or give every rank the same \
                 number of samples (a `DistributedSampler` pads an evaluation set to equal \
                 shares)."
            )
        } else {
            format!(
                "Every rank must pass a tensor of the same shape and dtype to {op}: sizes that \
                 come from each rank's own data (a batch's length, a per-rank count) or from a \
                 model that differs by rank do not. Make them equal on every rank: pad, or \
                 reduce fixed-size statistics (a sum and a count) instead of per-sample values."
            )
        });
    }
    s.evidence = calls
        .iter()
        .map(|c| Evidence {
            file: c.file.clone(),
            line: locate(
                &c.path,
                &["collective_queued", &format!("\"seq\":{}", c.call.seq)],
            ),
            text: format!(
                "rank {} queued {} ({} bytes)",
                c.rank,
                c.call.describe(),
                bytes(&c.call)
            ),
        })
        .collect();
    s
}

/// Every rank waits at collective `stuck` and none is behind, but not in the same call
/// (rank 0 in DDP's buffer broadcast of an evaluation forward only it ran, rank 1 in the
/// barrier after it): the ranks' code took different paths, a mismatch the traces show
/// without a flight-recorder dump.
fn different_calls_waited_in(
    waiting: &[&RankProgress],
    stuck: u64,
    order: &mut u64,
) -> Option<Signal> {
    let calls: Vec<(&RankProgress, &crate::traces::Coll)> = waiting
        .iter()
        .filter_map(|p| p.waiting_in.as_ref().map(|c| (*p, c)))
        .filter(|(_, c)| c.seq == stuck)
        .collect();
    let (_, first) = *calls.first()?;
    let alike = |c: &crate::traces::Coll| {
        probe_contract::hang::same_call(first.op.as_deref(), first.bytes, c.op.as_deref(), c.bytes)
    };
    if calls.len() < 2 || calls.len() != waiting.len() || calls.iter().all(|(_, c)| alike(c)) {
        return None;
    }
    let what = if calls.iter().any(|(_, c)| c.op != first.op) {
        "operation"
    } else {
        "size"
    };
    let mut s = Signal::new(
        "trace_mismatch",
        Category::CollectiveMismatch,
        Role::Cause,
        Attach::Standalone,
    );
    s.subjects = calls.iter().map(|(p, _)| p.rank).collect();
    let call = |c: &crate::traces::Coll| match c.bytes {
        Some(b) if what == "size" => format!("{} ({b} bytes)", c.describe()),
        _ => c.describe(),
    };
    s.detail = Some(format!(
        "the traces show every rank waiting in collective seq {stuck} with a different {what} \
         on different ranks: {}",
        calls
            .iter()
            .map(|(p, c)| format!("rank {} in {}", p.rank, call(c)))
            .collect::<Vec<_>>()
            .join("; ")
    ));
    s.evidence = calls
        .iter()
        .map(|(p, c)| Evidence {
            file: p.file.clone(),
            line: locate(
                &p.path,
                &["collective_queued", &format!("\"seq\":{}", c.seq)],
            ),
            text: format!("rank {} queued {} and it never completed", p.rank, call(c)),
        })
        .collect();
    *order += 1;
    s.order = *order;
    Some(s)
}

/// `differs_at`: the first call the ranks' traces show them making differently
/// ([`calls_that_differ`] says it, so the ranks' waits in it are not said again).
fn progress_signals(
    progress: &[RankProgress],
    differs_at: Option<u64>,
    stacks: &[PyStack],
    processes: &[RankProcesses],
    ctx: &RunContext,
    out: &mut Vec<Signal>,
    order: &mut u64,
) -> bool {
    let waiting: Vec<&RankProgress> = progress.iter().filter(|p| p.waiting_in.is_some()).collect();
    let Some(stuck) = waiting
        .iter()
        .filter_map(|p| p.waiting_in.as_ref().map(|c| c.seq))
        .min()
    else {
        return false;
    };
    let reached = |p: &RankProgress| {
        p.waiting_in.as_ref().is_some_and(|c| c.seq >= stuck)
            || p.last_completed.as_ref().is_some_and(|c| c.seq >= stuck)
    };
    let behind: Vec<&RankProgress> = progress.iter().filter(|p| !reached(p)).collect();
    let behind_ranks: Vec<usize> = behind.iter().map(|p| p.rank).collect();
    let names = |r: &[usize]| {
        r.iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    for w in &waiting {
        let Some(c) = &w.waiting_in else { continue };
        let mut s = Signal::new(
            "trace_waiting",
            Category::CollectiveTimeout,
            Role::Symptom,
            Attach::Standalone,
        );
        s.observer = Some(w.rank);
        s.subjects = if behind_ranks.is_empty() {
            vec![w.rank]
        } else {
            behind_ranks.clone()
        };
        let last = w
            .last_completed
            .as_ref()
            .map(|l| format!("its last completed collective is seq {}", l.seq))
            .unwrap_or_else(|| "it completed no collective".to_owned());
        let text = match w.wait_failed_after_ns {
            Some(d) => format!(
                "rank {} queued {} and it failed after {:.1} s without completing; {last}",
                w.rank,
                c.describe(),
                d as f64 / 1e9
            ),
            None => format!(
                "rank {} queued {} and it never completed (drawn as unfinished in `ddp-probe \
                 tui`, the report and the Chrome export); {last}",
                w.rank,
                c.describe()
            ),
        };
        s.detail = Some(if behind_ranks.is_empty() {
            format!("rank {} waits in {}", w.rank, c.describe())
        } else {
            format!(
                "rank {} waits in {} for rank {}",
                w.rank,
                c.describe(),
                names(&behind_ranks)
            )
        });
        s.evidence.push(Evidence {
            file: w.file.clone(),
            line: locate(
                &w.path,
                &["collective_queued", &format!("\"seq\":{}", c.seq)],
            ),
            text,
        });
        *order += 1;
        s.order = *order;
        out.push(s);
    }
    if behind.is_empty() && differs_at != Some(stuck) {
        if let Some(s) = different_calls_waited_in(&waiting, stuck, order) {
            out.push(s);
        }
    }
    let stuck_desc = waiting
        .iter()
        .find_map(|p| p.waiting_in.as_ref().filter(|c| c.seq == stuck))
        .map(|c| c.describe())
        .unwrap_or_else(|| format!("seq {stuck}"));
    for b in &behind {
        // A trace's "ok" end is written at the interpreter's exit; a framework that catches the
        // exception and calls sys.exit(1) (hydra's main) ends it so too: the manifest's exit
        // status decides when there is one.
        let finished = (b.end_status.as_deref() == Some("ok")
            && !ctx.exited_failed.contains(&b.rank))
            || ctx.exited_ok.contains(&b.rank);
        let how = finished.then(|| how_it_left(b));
        let (category, role, rule) = if let Some(how) = &how {
            (Category::UnevenInputs, Role::Cause, how.rule())
        } else {
            (Category::CollectiveTimeout, Role::Symptom, "trace_behind")
        };
        let mut s = Signal::new(rule, category, role, Attach::Standalone);
        s.observer = Some(b.rank);
        s.subjects = vec![b.rank];
        let last = match &b.last_completed {
            Some(l) => format!("its last completed collective is {}", l.describe()),
            None => "it completed no collective".to_owned(),
        };
        // A rank that recorded no step phase for a long while before it ended was where its
        // last phase leaves it (the module records data waits only when the batch arrives).
        let idle = match (&b.last_phase, ctx.end_at_ns.get(&b.rank)) {
            (Some(p), Some(end)) if end - p.t >= IDLE_BEFORE_END_NS => format!(
                "; it recorded nothing after the end of {} for the {:.1} s before it ended: {}",
                p.what,
                (end - p.t) as f64 / 1e9,
                p.then
            ),
            _ => String::new(),
        };
        let (text, line) = if let Some(how) = &how {
            s.predicate_hint = how.predicate();
            let last_step = b.last_step.map_or("none".to_owned(), |s| s.to_string());
            let rank = b.rank;
            (
                match how {
                    Left::RanOutOfData { batches } => format!(
                        "rank {rank}'s training DataLoader ran out{} (last step {last_step}) and \
                         it finished recording normally; it never joined {stuck_desc}; {last}",
                        batches.map_or(String::new(), |n| format!(" after {n} batches"))
                    ),
                    Left::MidStep { phase, step } => format!(
                        "rank {rank} finished recording normally right after step {step}'s \
                         {phase}, with no backward or optimizer step after it, and never joined \
                         {stuck_desc}; {last}"
                    ),
                    Left::BetweenSteps => format!(
                        "rank {rank} finished recording normally (last step {last_step}) and \
                         never joined {stuck_desc}; {last}"
                    ),
                },
                match how {
                    Left::RanOutOfData { .. } => locate(&b.path, &["\"data_pass_end\""]),
                    _ => locate(&b.path, &["\"type\":\"end\""]),
                },
            )
        } else {
            (
                format!("rank {} never queued {stuck_desc}; {last}{idle}", b.rank),
                b.last_completed.as_ref().and_then(|l| {
                    locate(&b.path, &["\"collective\"", &format!("\"seq\":{}", l.seq)])
                }),
            )
        };
        let stack = stacks
            .iter()
            .find(|st| st.rank == b.rank)
            .filter(|_| !finished);
        s.detail = Some(text.clone());
        s.evidence.push(Evidence {
            file: b.file.clone(),
            line,
            text,
        });
        // The place goes to the title and the stack's evidence, not into the detail again.
        if let Some(st) = stack {
            let (where_, evidence) = st.place();
            if let Some(call) = st.communication_call() {
                *order += 1;
                out.push(in_another_call(
                    b.rank, call, &where_, &evidence, &waiting, *order,
                ));
            }
            s.elsewhere = Some(where_);
            s.evidence.push(evidence);
            add_process_wait(st, &mut s);
        } else if let Some(w) = (!finished)
            .then(|| processes.iter().find(|p| p.rank == b.rank))
            .flatten()
            .and_then(|p| crate::process_waits::without_stack(b.rank, p))
        {
            // No stack (the reference DDP, a rank that could not answer): its process's state
            // alone, when that says more than "never joined".
            s.elsewhere = w.place.clone();
            apply_process_wait(&w, &mut s);
        }
        *order += 1;
        s.order = *order;
        out.push(s);
    }
    behind.is_empty() && waiting.len() >= 2
}

/// The rule of a rank whose training DataLoader ran out right before it finished recording.
pub(crate) const RULE_RAN_OUT_OF_DATA: &str = "trace_ran_out_of_data";
/// The rule of a rank that finished recording in the middle of a step, after it had its batch.
pub(crate) const RULE_LEFT_MID_STEP: &str = "trace_left_mid_step";
/// The rule of a rank that finished recording between steps, its data not seen to run out.
const RULE_FINISHED_EARLY: &str = "trace_finished_early";
/// The rule of a rank the manifest saw exit normally while the others were in a collective.
const RULE_EXITED_EARLY: &str = "manifest_exited_early";

/// What a rank that left its loop in the middle of a step means.
const LEFT_MID_STEP_MEANING: &str = "One rank left its training loop in the middle of a step, \
     after it had its batch, so it did not run out of data: a condition only that rank met ended \
     its loop (a NaN or infinite loss it checked, early stopping decided on its own metric, a \
     step or time limit counted per rank, an exception caught and followed by `break` or \
     `return`). The others wait in a gradient all-reduce it will never join.";

/// What a rank that left its loop between steps, its data not seen to run out, means.
const LEFT_BETWEEN_STEPS_MEANING: &str = "One rank left its training loop between steps and \
     finished while the others went on, so they wait in a gradient all-reduce it will never \
     join. Either it ran out of batches (its DataLoader or shard was shorter) or a condition only \
     it met ended its loop (early stopping decided on its own metric, a step or time limit \
     counted per rank). Its own last lines, quoted here, often say which.";

/// The fix for a rank that left its loop on a condition of its own, after "decide on every
/// rank together".
const LEFT_ON_ITS_OWN_FIX: &str = "whether to stop, before acting on it: reduce the condition \
     across the ranks (`stop = torch.tensor(float(should_stop)); dist.all_reduce(stop, \
     op=dist.ReduceOp.MAX); if stop.item(): break`) so that every rank leaves at the same step; \
     for a NaN or infinite loss, skip the step or stop on every rank, not on the one that saw it.";

/// A rank of a launcher that starts several per node, whose port was taken while a process
/// the program started itself (`torch.multiprocessing.spawn`) set up its store: the program
/// launches its own ranks too, so each launcher rank's first child hosts a store on the same
/// fixed port (a tutorial script of the `mp.spawn` kind run under torchrun or `ddp-probe run`).
fn spawned_beside_the_launchers_ranks(signals: &mut [Signal], g: &Gathered) {
    let Some(per_node) = g
        .manifests
        .iter()
        .map(|m| m.manifest.nproc_per_node)
        .max()
        .filter(|&n| n >= 2)
    else {
        return;
    };
    let spawning: BTreeSet<usize> = g
        .scans
        .iter()
        .filter(|f| f.spawned_by_the_program)
        .filter_map(|f| f.rank)
        .collect();
    for s in signals.iter_mut().filter(|s| {
        s.category == Category::PortInUse
            && s.role == Role::Cause
            && s.observer.is_some_and(|r| spawning.contains(&r))
    }) {
        s.rule = RULE_PORT_TAKEN_BY_SPAWNED;
        s.predicate_hint = Some(format!(
            "could not listen: its program starts processes of its own \
             (torch.multiprocessing.spawn) beside the {per_node} per node the launcher started, \
             and their stores took the same port"
        ));
    }
}

/// The rule of a port taken by the processes a program spawns itself beside a launcher's
/// ranks ([`spawned_beside_the_launchers_ranks`]).
const RULE_PORT_TAKEN_BY_SPAWNED: &str = "port_taken_by_spawned_ranks";

/// What [`RULE_PORT_TAKEN_BY_SPAWNED`] means.
const PORT_TAKEN_BY_SPAWNED_MEANING: &str = "The launcher started several ranks per node, and \
     the program started processes of its own in each (torch.multiprocessing.spawn), each set \
     of them with its own ranks and world size: the first process of every set hosts a store on \
     the same port, and all but one fail to listen. No earlier run holds the port.";

/// The fix of [`RULE_PORT_TAKEN_BY_SPAWNED`].
const PORT_TAKEN_BY_SPAWNED_FIX: &str = "Launch the program one way. Under `ddp-probe run` or \
     torchrun, drop `mp.spawn`: run the worker function once per process, with the rank from \
     the environment (`RANK`, `LOCAL_RANK`, `WORLD_SIZE`) and `init_process_group(backend)` \
     without `rank`, `world_size` or a MASTER_PORT of its own (the launcher sets them). Or keep \
     `mp.spawn` and start the program with plain `python script.py` (or `ddp-probe run \
     --nproc-per-node 1 --auto-instrument`, which records the processes it spawns).";

/// Lines of a rank's own output quoted for a rank that left its loop on its own.
const LAST_WORDS_QUOTED: usize = 2;

/// A rank that left its training loop with its data not seen to run out usually said why
/// ("rank 1: the loss is NaN at step 3, stopping", an early-stopping message): its output's
/// last lines (the module's own excepted) join the finding's evidence.
fn quote_what_the_leaving_rank_said(signals: &mut [Signal], scans: &[crate::scan::FileScan]) {
    for s in signals
        .iter_mut()
        .filter(|s| [RULE_LEFT_MID_STEP, RULE_FINISHED_EARLY, RULE_EXITED_EARLY].contains(&s.rule))
    {
        let Some(&rank) = s.subjects.first() else {
            continue;
        };
        for scan in scans.iter().filter(|f| f.rank == Some(rank)) {
            let own: Vec<&Evidence> = scan
                .last
                .iter()
                .filter(|e| !e.text.trim_start().starts_with("ddp_probe_torch:"))
                .collect();
            let quoted = own[own.len().saturating_sub(LAST_WORDS_QUOTED)..]
                .iter()
                .map(|&e| e.clone());
            s.evidence.extend(quoted);
        }
    }
}

/// How a rank that finished recording while the others waited for it left its training loop,
/// read from the end of its trace.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Left {
    /// Its training DataLoader's pass ran out after its last step (`data_pass_end`).
    RanOutOfData { batches: Option<u64> },
    /// Its last step recorded a forward (or its data, or a backward) and no step end: it had
    /// its batch, so it did not run out of data; a condition of its own ended its loop.
    MidStep { phase: &'static str, step: u64 },
    /// Between steps, with nothing saying why (no DataLoader seen to run out: the loop's own
    /// data, a loader the module does not see, or a condition of its own).
    BetweenSteps,
}

impl Left {
    fn rule(&self) -> &'static str {
        match self {
            Left::RanOutOfData { .. } => RULE_RAN_OUT_OF_DATA,
            Left::MidStep { .. } => RULE_LEFT_MID_STEP,
            Left::BetweenSteps => RULE_FINISHED_EARLY,
        }
    }

    /// The title's predicate, where the category's ("ran out of input batches before the
    /// others") would claim more than the trace shows.
    fn predicate(&self) -> Option<String> {
        match self {
            Left::RanOutOfData { .. } => None,
            Left::MidStep { phase, step } => Some(format!(
                "left the training loop in step {step}, after the step's {phase}, while the \
                 others went on"
            )),
            Left::BetweenSteps => {
                Some("left the training loop between steps while the others went on".to_owned())
            }
        }
    }
}

fn how_it_left(b: &RankProgress) -> Left {
    if let Some(out) = &b.data_ran_out {
        return Left::RanOutOfData {
            batches: out.batches,
        };
    }
    let phase = b.last_phase.as_ref().and_then(|p| {
        let name = match p.kind {
            SpanKind::DataWait => "data wait",
            SpanKind::Forward => "forward",
            SpanKind::Backward => "backward",
            _ => return None,
        };
        Some((name, p.step?))
    });
    match phase {
        Some((phase, step)) => Left::MidStep { phase, step },
        None => Left::BetweenSteps,
    }
}

/// A rank the others waited for was itself blocked in a communication call the traces do not
/// record (a point-to-point `recv` whose `send` rank 0 skipped, a barrier of another process
/// group): the ranks' code took different paths, a mismatch.
fn in_another_call(
    rank: usize,
    call: &str,
    where_: &str,
    evidence: &Evidence,
    waiting: &[&RankProgress],
    order: u64,
) -> Signal {
    let mut s = Signal::new(
        RULE_IN_ANOTHER_CALL,
        Category::CollectiveMismatch,
        Role::Cause,
        Attach::Standalone,
    );
    s.order = order;
    let calls: Vec<(usize, String)> = waiting
        .iter()
        .filter_map(|p| p.waiting_in.as_ref().map(|c| (p.rank, c.describe())))
        .collect();
    s.subjects = calls.iter().map(|(r, _)| *r).chain([rank]).collect();
    s.subjects.sort_unstable();
    let others = calls
        .iter()
        .map(|(r, c)| format!("rank {r} in {c}"))
        .collect::<Vec<_>>()
        .join(", ");
    let call = sanitize(call, 40);
    s.detail = Some(format!(
        "rank {rank} was blocked in {call} ({where_}), a call the others did not make at this \
         point, while they waited: {others}"
    ));
    s.predicate_hint = Some(format!(
        "were in different communication calls: rank {rank} in {call}, {others}"
    ));
    s.evidence.push(evidence.clone());
    s.fix_hint = Some(if matches!(call.as_str(), "send" | "recv") {
        format!(
            "A point-to-point {call} returns only when its peer makes the matching call; here \
             the peer went on to another collective instead. Pair every send with a recv, in \
             the same order, on both ranks, and make both take the same branch: decide it from \
             a value every rank has, or broadcast the decision first. A process-group timeout \
             (`init_process_group(timeout=...)`) turns such a wait into an error."
        )
    } else {
        format!(
            "Rank {rank} called {call} where the others did not (a branch only it took, or a \
             call on another process group whose other ranks are elsewhere): make every rank of \
             that group call it, in the same order, or none."
        )
    });
    s
}

/// The rule of [`in_another_call`].
const RULE_IN_ANOTHER_CALL: &str = "pystack_in_another_call";

/// Where the ranks were, from their Python stacks alone, in a run without traces (a script
/// that never called `instrument`, or one stopped before it did: rank 0 downloading the data
/// while the others wait in DDP's construction). The ranks whose stacks are outside
/// `torch.distributed` are the ones the others wait for, when some rank waited: its stack is
/// in a collective, or its own log says a collective of its timed out.
fn stack_signals(
    stacks: &[PyStack],
    store: Option<&StoreAddress>,
    out: &mut Vec<Signal>,
    order: &mut u64,
) {
    if !stacks.is_empty() && stacks.iter().all(PyStack::in_init_process_group) {
        let mut s =
            store_unreachable(stacks, store).unwrap_or_else(|| in_init_process_group(stacks));
        *order += 1;
        s.order = *order;
        out.push(s);
        return;
    }
    let (waiting, elsewhere): (Vec<&PyStack>, Vec<&PyStack>) =
        stacks.iter().partition(|st| st.in_distributed());
    let timed_out = out
        .iter()
        .any(|s| s.category == Category::CollectiveTimeout && s.observer.is_some());
    if elsewhere.is_empty() || (waiting.is_empty() && !timed_out) {
        return;
    }
    let behind: Vec<usize> = elsewhere.iter().map(|st| st.rank).collect();
    for st in &waiting {
        let (where_, evidence) = st.place();
        let mut s = Signal::new(
            "pystack_waiting",
            Category::CollectiveTimeout,
            Role::Symptom,
            Attach::Standalone,
        );
        s.observer = Some(st.rank);
        s.subjects = behind.clone();
        s.detail = Some(format!(
            "rank {} waited {where_} (its Python stack)",
            st.rank
        ));
        s.evidence.push(evidence);
        *order += 1;
        s.order = *order;
        out.push(s);
    }
    for st in elsewhere {
        let (where_, evidence) = st.place();
        let mut s = Signal::new(
            "pystack_behind",
            Category::CollectiveTimeout,
            Role::Symptom,
            Attach::Standalone,
        );
        // Said of the rank, not by it: the finding's ranks are the ones behind, its observers
        // the ranks that waited.
        s.subjects = vec![st.rank];
        s.detail = Some(format!(
            "rank {} was in no collective when the run was stopped (its Python stack)",
            st.rank
        ));
        s.elsewhere = Some(where_);
        s.evidence.push(evidence);
        add_process_wait(st, &mut s);
        *order += 1;
        s.order = *order;
        out.push(s);
    }
}

/// A rank behind whose processes say more than its stack (its DataLoader workers' state, its
/// own process in uninterruptible I/O or stopped): their evidence and that state's fix.
fn add_process_wait(st: &PyStack, s: &mut Signal) {
    if let Some(w) = &st.process_wait {
        apply_process_wait(w, s);
    }
}

/// A process state's evidence and fix, on the signal of the rank it is about.
fn apply_process_wait(w: &ProcessWait, s: &mut Signal) {
    s.evidence.extend(w.evidence.clone());
    s.fix_hint = Some(w.fix.clone());
}

/// The rule of a store that could not listen on the job's own MASTER_PORT.
const RULE_JOB_STORE_PORT_TAKEN: &str = "port_in_use_job_store";

/// What to do when a second process of the job tried to host PyTorch's store.
const JOB_STORE_PORT_TAKEN_FIX: &str = "A second process of the job initialized a process \
     group as rank 0 on the job's MASTER_PORT, where the first already hosts PyTorch's store \
     (under `ddp-probe run` rank 0's process hosts it; torchrun's agent hosts it instead, so \
     there the second connects as a client). This happens when a program initializes the \
     process group in the launched process and again in processes it starts (PyTorch \
     Lightning's `strategy=\"ddp_spawn\"` under a launcher, `torch.multiprocessing.spawn` after \
     `init_process_group` in the parent): use `strategy=\"ddp\"` (or initialize only in the \
     started processes), or give the started processes another MASTER_PORT.";

/// The store's address as the launcher gave it to the ranks (MASTER_ADDR, MASTER_PORT), and
/// the number of nodes of the run.
struct StoreAddress {
    addr: String,
    port: u16,
    nnodes: usize,
}

/// The rule of ranks still connecting to the store when the run was stopped, in a run on
/// several nodes (or one whose manifest is not at hand) and in a run on one node.
const RULE_STORE_UNREACHABLE: &str = "pystack_store_unreachable";
const RULE_STORE_UNREACHABLE_ONE_NODE: &str = "pystack_store_unreachable_one_node";

/// Under `ddp-probe run` rank 0's process hosts PyTorch's store; every other rank connects to
/// it at MASTER_ADDR:MASTER_PORT while it constructs its `TCPStore` (`_create_c10d_store`),
/// and retries until its timeout when nothing answers there. So a rank other than 0 whose
/// innermost `torch.distributed` frame is that construction, long after the start (the hang
/// watchdog stopped the run), never reached the store; rank 0 meanwhile waits in its own
/// construction for the ranks to register. (A rank that started late is elsewhere, not
/// there: `late_join.py`, 2026-12-03.) Seen with a master address not of this machine in a
/// one-node run: both ranks there until the watchdog.
fn store_unreachable(stacks: &[PyStack], store: Option<&StoreAddress>) -> Option<Signal> {
    let connecting: Vec<&PyStack> = stacks
        .iter()
        .filter(|st| {
            st.rank != 0 && st.innermost_distributed_function() == Some("_create_c10d_store")
        })
        .collect();
    if connecting.is_empty() {
        return None;
    }
    let one_node = store.is_some_and(|a| a.nnodes == 1);
    let mut s = Signal::new(
        if one_node {
            RULE_STORE_UNREACHABLE_ONE_NODE
        } else {
            RULE_STORE_UNREACHABLE
        },
        Category::ConnectionRefused,
        Role::Cause,
        Attach::Standalone,
    );
    s.subjects = connecting.iter().map(|st| st.rank).collect();
    s.address = store.map(|a| format!("{}:{}", sanitize(&a.addr, 120), a.port));
    s.detail = Some(format!(
        "{} still connecting to the store at {} (MASTER_ADDR:MASTER_PORT) when the run was \
         stopped (in TCPStore's construction), which rank 0 hosts",
        who(&s.subjects),
        s.address.as_deref().unwrap_or("MASTER_ADDR:MASTER_PORT")
    ));
    s.evidence.extend(stacks.iter().map(|st| st.place().1));
    Some(s)
}

/// The rule of ranks whose stacks were all inside `init_process_group`.
const RULE_IN_INIT_PROCESS_GROUP: &str = "pystack_in_init_process_group";

/// Every rank that answered was inside `init_process_group` when the run was stopped: the
/// store waited for ranks that never registered. When the program's call passes a literal
/// `world_size=N` other than the number of ranks the launcher started, that is the cause.
fn in_init_process_group(stacks: &[PyStack]) -> Signal {
    let ranks: Vec<usize> = stacks.iter().map(|st| st.rank).collect();
    let call = stacks.iter().find_map(|st| {
        let f = st.own_frame()?;
        let code = f.code.as_deref()?;
        let at = code.find("world_size=")?;
        let arg: String = code[at..]
            .chars()
            .take_while(|c| !matches!(c, ',' | ')'))
            .collect();
        Some((st, f, arg.trim().to_owned()))
    });
    let mut s = Signal::new(
        RULE_IN_INIT_PROCESS_GROUP,
        Category::RendezvousTimeout,
        Role::Cause,
        Attach::Standalone,
    );
    // A literal other than the run's world size makes it a world-size mismatch (below, with
    // the store's own "expected N" figures).
    s.expected_world = call
        .as_ref()
        .and_then(|(_, _, arg)| arg.strip_prefix("world_size=")?.trim().parse().ok());
    s.subjects = ranks.clone();
    let names = ranks
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let mut detail = format!(
        "every rank that answered ({names}) was inside init_process_group when the run was \
         stopped: the store waited for ranks that never registered"
    );
    if let Some((st, f, arg)) = &call {
        detail.push_str(&format!(
            "; rank {} passes `{}` at {}:{}",
            st.rank,
            sanitize(arg, 60),
            sanitize(f.file.rsplit('/').next().unwrap_or(&f.file), 80),
            f.line
        ));
    }
    s.detail = Some(detail);
    s.evidence.extend(stacks.iter().map(|st| st.place().1));
    s
}

/// How long a rank behind must have recorded no step phase before its end to be said to have
/// been outside the training steps: longer than any step of a job that one would diagnose,
/// shorter than any collective timeout (gloo's and NCCL's are minutes unless set lower).
const IDLE_BEFORE_END_NS: i64 = 1_000_000_000;

/// Ranks that ended by SIGABRT, not sent by the launcher, with the C++ runtime's "terminate
/// called without an active exception" and no error of their own: a PyTorch rank that left its
/// training loop (out of data, an early return) and exited while its gloo process group still
/// had collectives going is aborted that way in its teardown about as often as it exits 0
/// (`tests/pytorch_features.rs`' uneven job, 2026-12-02).
fn left_with_threads_running(g: &Gathered, signals: &[Signal]) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    for m in &g.manifests {
        for r in &m.manifest.ranks {
            let Some(end) = &r.end else { continue };
            let aborted = matches!(
                &end.termination,
                probe_contract::manifest::Termination::Signaled { number: 6, .. }
            );
            if !aborted || end.stopped_by_launcher {
                continue;
            }
            let said = |rule: &str| {
                signals
                    .iter()
                    .any(|s| s.rule == rule && s.observer == Some(r.rank))
            };
            // An error in the rank's own output, of any role: a collective of its own that
            // timed out (gloo's "Application timeout caused pair closure" before the abort)
            // is not a rank that left its loop. What the traces, dumps and manifest say of
            // it is not its own words.
            let own_error = signals.iter().any(|s| {
                s.observer == Some(r.rank)
                    && !matches!(s.rule, "terminate_with_threads_running" | "crash_marker")
                    && !s.rule.starts_with("trace_")
                    && !s.rule.starts_with("pystack_")
                    && !s.rule.starts_with("flight_recorder")
                    && !s.rule.starts_with("manifest_")
            });
            if said("terminate_with_threads_running") && !own_error {
                out.insert(r.rank);
            }
        }
    }
    out
}

/// The rule of a rank that gloo's teardown aborted after every rank finished its training.
const RULE_ABORTED_AFTER_TRAINING: &str = "aborted_after_the_training";

/// Ranks aborted by the C++ runtime in their teardown ([`left_with_threads_running`]) when
/// every rank's trace ended normally at the same step and none waited in a collective: the
/// training was done, and only the exit failed (gloo's threads torn down during the
/// interpreter's finalization: 3 runs in 80 of `examples/python/train_ddp.py` under torchrun
/// on this project's machine, 2026-12-02).
fn aborted_after_the_training(g: &Gathered, ctx: &RunContext, signals: &[Signal]) -> Vec<Signal> {
    let p = &g.progress;
    let every_rank = ctx.world_size.is_some_and(|w| p.len() == w) && !p.is_empty();
    let last_steps: BTreeSet<Option<u64>> = p.iter().map(|r| r.last_step).collect();
    let all_done = every_rank
        && last_steps.len() == 1
        && p.iter()
            .all(|r| r.end_status.as_deref() == Some("ok") && r.waiting_in.is_none());
    if !all_done {
        return Vec::new();
    }
    let step = p[0].last_step;
    left_with_threads_running(g, signals)
        .into_iter()
        .map(|rank| {
            let mut s = aborted_rank(RULE_ABORTED_AFTER_TRAINING, rank);
            let at = step.map_or(String::new(), |n| {
                format!(" after the same {} steps", n + 1)
            });
            let text = format!(
                "every rank's trace ended normally{at} and none waited in a collective; rank \
                 {rank} was then aborted (SIGABRT) with \"terminate called without an active \
                 exception\""
            );
            s.detail = Some(text.clone());
            if let Some(r) = p.iter().find(|r| r.rank == rank) {
                s.evidence.push(Evidence {
                    file: r.file.clone(),
                    line: locate(&r.path, &["\"type\":\"end\""]),
                    text,
                });
            }
            s
        })
        .collect()
}

/// The module of "ModuleNotFoundError: No module named 'torch'" (`torch`; the top package of
/// a dotted name).
fn missing_module(exception: &str) -> Option<String> {
    let rest = exception.split("No module named ").nth(1)?;
    let name = rest.trim().trim_matches(['\'', '"']);
    let top = name.split('.').next()?;
    (!top.is_empty() && top.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then(|| top.to_owned())
}

/// What a rank aborted after the training means, and what to do.
const RULE_ABORTED_WITHOUT_AN_ERROR: &str = "aborted_without_an_error";

/// The finding of a rank the C++ runtime aborted ([`left_with_threads_running`]), by `rule`.
fn aborted_rank(rule: &'static str, rank: usize) -> Signal {
    let mut s = Signal::new(rule, Category::RankCrashed, Role::Cause, Attach::Standalone);
    s.observer = Some(rank);
    s.subjects = vec![rank];
    s
}

/// Without traces, nothing tells how far the training got; what is left to go on: a rank
/// aborted by the C++ runtime ([`left_with_threads_running`]) and nothing else wrong on any
/// rank (no error of another rank's own, no rank seen waiting in a collective, every other rank
/// exited normally or was stopped by the launcher). The same gloo teardown is then the likely
/// reading, but only likely: the finding says how to tell (the rank's output reaching its end).
/// Seen on this project's machine with a script of DDP and reentrant checkpointing under both
/// torchrun and `ddp-probe run`: 2 runs in 4 aborted so after the training's last step.
fn aborted_without_an_error(g: &Gathered, signals: &[Signal]) -> Vec<Signal> {
    let ranks = left_with_threads_running(g, signals);
    if ranks.is_empty() {
        return Vec::new();
    }
    let others_clean = g.manifests.iter().all(|m| {
        m.manifest.ranks.iter().all(|r| {
            ranks.contains(&r.rank)
                || r.end
                    .as_ref()
                    .is_none_or(|e| e.stopped_by_launcher || e.termination.success())
        })
    });
    let something_else = signals.iter().any(|s| {
        s.rule.starts_with("pystack_")
            || s.rule.starts_with("flight_recorder")
            || (s.observer.is_some_and(|o| !ranks.contains(&o))
                && !s.rule.starts_with("manifest_")
                && !matches!(s.rule, "launcher_consequence" | "crash_marker"))
    });
    if !others_clean || something_else {
        return Vec::new();
    }
    ranks
        .into_iter()
        .map(|rank| {
            let mut s = aborted_rank(RULE_ABORTED_WITHOUT_AN_ERROR, rank);
            s.detail = Some(format!(
                "rank {rank} was aborted (SIGABRT) with \"terminate called without an active \
                 exception\" and no error of its own; no other rank reported one"
            ));
            s
        })
        .collect()
}

/// What DDP's Join with `throw_on_early_termination=True` did (torch 2.13's
/// `torch/distributed/algorithms/join.py`).
const JOIN_THROWN_MEANING: &str = "The ranks had different numbers of batches. The loop runs \
     inside DDP's Join context manager with throw_on_early_termination=True, which raises on \
     every rank as soon as one has no batch left: that rank raises \"Rank N exhausted all \
     inputs.\", the others, in their next forward, \"Detected at least one rank that exhausted \
     inputs. Throwing across all ranks.\"";
/// How to go on from it.
const JOIN_THROWN_FIX: &str = "If the ranks are meant to stop together at the first rank's \
     end, this is that end: catch the RuntimeError around the loop on every rank (they raise at \
     the same step). To train on every rank's batches, drop throw_on_early_termination (Join's \
     default: a rank out of batches shadows the others' collectives until they finish), or give \
     every rank the same number of batches (DistributedSampler pads to equal lengths by \
     default; drop_last=True drops the rest).";

const STORE_UNREACHABLE_MEANING: &str = "Every rank connects to PyTorch's store at \
     MASTER_ADDR:MASTER_PORT while init_process_group sets up (under `ddp-probe run` rank 0's \
     process hosts it; under torchrun the launcher of node 0). These ranks were still trying \
     to connect when the run was stopped: nothing answered at that address, because it is not \
     the store's host as these ranks reach it, or a firewall drops the port.";
const STORE_UNREACHABLE_ONE_NODE_FIX: &str = "In a run on one node the store is on this \
     machine: leave --master-addr (--master_addr) out, which gives 127.0.0.1, or give one of \
     this machine's own addresses; `ddp-probe run` says at the start when the address is not \
     one of them.";
const STORE_UNREACHABLE_FIX: &str = "Give every node the address of node 0 as the other nodes \
     reach it (`--master-addr`/`--rdzv-endpoint`; not a name that resolves to 127.0.0.1 or to \
     another machine on them), check that the port is open between the nodes (`nc -zv HOST \
     PORT` from another node while the job waits), and that node 0 was started.";
const ABORTED_WITHOUT_AN_ERROR_MEANING: &str = "The rank printed no error, only the C++ \
     runtime's \"terminate called without an active exception\", and was aborted; no other rank \
     reported an error. That line means the process ended while one of its threads still ran: \
     most often gloo's threads torn down during the interpreter's shutdown after the training had \
     finished. Without a trace nothing here says how far the training got.";
const ABORTED_WITHOUT_AN_ERROR_FIX: &str = "See whether the rank's output reached the end of \
     the training (the last lines of its stdout in the run directory's logs/). If it did, the \
     work is complete and only the exit failed: at the end of every rank, release the DDP model \
     and its optimizer (`del model, optimizer`), then `dist.barrier()` and \
     `dist.destroy_process_group()`. If it stopped short, record the run \
     (`import ddp_probe_torch` and `ddp_probe_torch.instrument(model)`) to see the last step, \
     or allow a core dump (`ulimit -c unlimited`) to see the aborting thread.";
const ABORTED_AFTER_TRAINING_MEANING: &str = "Every rank finished its training; then, while \
     the rank's interpreter shut down, the C++ runtime aborted it (\"terminate called without an \
     active exception\": a thread of the process group, gloo's, still running when the process \
     ended). The training's work is complete; only the exit status failed.";
const ABORTED_AFTER_TRAINING_FIX: &str = "Tear the process group down before the interpreter \
     does: at the end of every rank, release the DDP model and its optimizer (`del model, \
     optimizer`), then `dist.barrier()` and `dist.destroy_process_group()`. This project's \
     example met the abort in 3 runs of 80 under torchrun without releasing the model first, \
     none in 60 with it. What the ranks wrote before the end (checkpoints, logs) is complete.";

/// The rule of a DataLoader worker's SIGKILL that the launcher's evidence proves came from
/// the out-of-memory killer.
const RULE_WORKER_OOM_CONFIRMED: &str = "dataloader_worker_oom_confirmed";
/// The rule of a DataLoader worker's SIGKILL that the launcher's evidence proves did not come
/// from the out-of-memory killer.
const RULE_WORKER_KILLED_FROM_OUTSIDE: &str = "dataloader_worker_killed_from_outside";

/// Whether a rule is about a rank's DataLoader worker that got SIGKILL (judged or not).
fn is_worker_kill(rule: &str) -> bool {
    matches!(
        rule,
        crate::rules::DATALOADER_WORKER_KILLED_RULE
            | RULE_WORKER_OOM_CONFIRMED
            | RULE_WORKER_KILLED_FROM_OUTSIDE
    )
}

/// PyTorch's "DataLoader worker (pid N) is killed by signal: Killed." in a rank's log, where
/// the run's manifest holds the evidence read at that rank's exit: the OOM killer proven
/// (still `host_oom_killed`, now certain) or ruled out (`rank_crashed`: a SIGKILL from outside,
/// as for a rank killed so).
fn judge_killed_workers(signals: &mut [Signal], g: &Gathered) {
    for s in signals.iter_mut() {
        if s.rule != crate::rules::DATALOADER_WORKER_KILLED_RULE {
            continue;
        }
        let Some(rank) = s.observer else { continue };
        let Some((verdict, evidence)) = g.manifests.iter().find_map(|m| m.child_kill_verdict(rank))
        else {
            continue;
        };
        match verdict {
            KillVerdict::OomKiller(why) => {
                s.rule = RULE_WORKER_OOM_CONFIRMED;
                s.detail = Some(format!("the out-of-memory killer killed it ({why})"));
            }
            KillVerdict::FromOutside(why) => {
                s.rule = RULE_WORKER_KILLED_FROM_OUTSIDE;
                s.category = Category::RankCrashed;
                s.detail = Some(format!(
                    "the worker was killed by SIGKILL from outside (kill -9, a watchdog); the \
                     out-of-memory killer did not act ({why})"
                ));
            }
            KillVerdict::Unconfirmed(_) => continue,
        }
        s.evidence.push(evidence);
    }
}

/// A store wait that timed out after the training had run (a collective, a progress bar):
/// the rendezvous was long over, so a rank waited in the store for another rank's key inside
/// the training (a store-based barrier, a new group's set-up, a data loader's shared seed),
/// and that rank was behind, busy elsewhere, or gone: a collective's timeout, not the
/// rendezvous's.
fn store_waits_after_the_training_ran(signals: &mut [Signal], g: &Gathered) {
    let Some(ran) = &g.shape.training_ran else {
        return;
    };
    for s in signals.iter_mut() {
        let after = s
            .evidence
            .first()
            .is_some_and(|e| later_in_the_same_log(ran, e));
        if matches!(s.rule, "store_socket_timeout" | "store_timeout") && after {
            s.category = Category::CollectiveTimeout;
            let at = ran.line.map(|l| format!(" (line {l})")).unwrap_or_default();
            s.detail = Some(format!(
                "a wait on PyTorch's store timed out after the training had run{at}: a rank \
                 waited for another rank's key within the training, and that rank was behind, \
                 busy elsewhere (evaluation or saving on one rank) or gone"
            ));
            s.evidence.push(ran.clone());
        }
    }
}

/// DeepEP's kernels trap after their own timeout ("DeepEP timeout for dispatch receivers,
/// rank 3, ..."): the CUDA error that follows in the same log ("unspecified launch failure",
/// cudaErrorLaunchFailure) is that trap, a consequence of the timeout, not a kernel's bug.
fn kernels_trapped_after_a_timeout(signals: &mut [Signal]) {
    let Some(timeout) = signals
        .iter()
        .filter(|s| s.rule == "deepep_timeout")
        .filter_map(|s| s.evidence.first().cloned())
        .min_by_key(|e| e.line)
    else {
        return;
    };
    for s in signals.iter_mut() {
        let trapped = s.category == Category::CudaError
            && s.evidence.first().is_some_and(|e| {
                later_in_the_same_log(&timeout, e)
                    && e.text
                        .to_ascii_lowercase()
                        .contains("unspecified launch failure")
            });
        if trapped {
            s.role = Role::Consequence;
            s.attach = Attach::AnyFinding;
        }
    }
}

/// gloo's monitored barrier puts the error that ended rank 0's wait on the lines after its
/// own ("[Rank 0]: Rank 1 failed to pass monitoredBarrier in 2000 ms", " Original exception:",
/// "[.../pair.cc:534] Connection closed by peer [10.0.0.2]:8594"). A closed or reset connection
/// there means the rank that did not arrive had exited or crashed, not that it was late. (It
/// does not say why it left: an error of its own, or a path that skipped the barrier.)
fn monitored_barrier_peer_gone(signals: &mut [Signal]) {
    /// Lines from the barrier's own to its original exception's.
    const WITHIN_LINES: u64 = 4;
    let gone: Vec<Evidence> = signals
        .iter()
        .filter(|s| s.rule == "peer_gone")
        .filter_map(|s| s.evidence.first().cloned())
        .collect();
    let mut lost_lines = Vec::new();
    for s in signals.iter_mut() {
        if s.rule != MONITORED_BARRIER_RULE || s.subjects.is_empty() {
            continue;
        }
        let Some(barrier) = s.evidence.first() else {
            continue;
        };
        // Near it in either order (a collector that prints the newest line first), or on its
        // own line when a paste joined them.
        let closed = gone.iter().find(|e| {
            e.file == barrier.file
                && barrier
                    .line
                    .zip(e.line)
                    .is_some_and(|(b, l)| b.abs_diff(l) <= WITHIN_LINES)
        });
        let text = barrier.text.to_ascii_lowercase();
        let on_its_line = ["connection closed by peer", "connection reset by peer"]
            .iter()
            .any(|w| text.contains(w));
        if closed.is_some() || on_its_line {
            if let Some(closed) = closed {
                lost_lines.push((closed.file.clone(), closed.line));
            }
            s.category = Category::RankCrashed;
            s.detail = Some(format!(
                "{}'s connection closed while rank 0 waited for it at the monitored barrier: \
                 it had exited or crashed, and its own log says why",
                who(&s.subjects)
            ));
        }
    }
    // The closed connection is the barrier's original exception: it joins that finding.
    for s in signals.iter_mut().filter(|s| s.rule == "peer_gone") {
        if s.evidence
            .first()
            .is_some_and(|e| lost_lines.contains(&(e.file.clone(), e.line)))
        {
            s.attach = Attach::AnyFinding;
        }
    }
}

/// The ranks reached the end of the program (PyTorch's warning that `destroy_process_group()`
/// was not called before exit) and then ProcessGroupNCCL's heartbeat monitor found its
/// watchdog stuck ("ProcessGroupNCCL's watchdog got stuck for 480 seconds without making
/// progress in monitoring enqueued collectives"), with no collective timed out: the groups left
/// alive were being torn down at interpreter exit and that hung (the watchdog inside an NCCL or
/// CUDA call). The heartbeat lines are then no collective's timeout but this hang's evidence.
fn hung_at_exit_without_destroy(
    signals: &mut Vec<Signal>,
    shape: &crate::shape::LogShape,
    order: &mut u64,
) {
    let Some(exit) = shape.exited_without_destroy.clone() else {
        return;
    };
    // The heartbeat monitor's lines after the exit warning, with the ranks that printed them.
    let heartbeats: Vec<(&Evidence, Option<usize>)> = signals
        .iter()
        .filter(|s| s.rule == "watchdog_context")
        .filter_map(|s| s.evidence.first().map(|e| (e, s.observer)))
        .filter(|(e, _)| later_in_the_same_log(&exit, e) && says_watchdog_stuck(e))
        .collect();
    let stuck: Vec<Evidence> = heartbeats.iter().map(|(e, _)| (*e).clone()).collect();
    let ranks: BTreeSet<usize> = heartbeats.iter().filter_map(|(_, r)| *r).collect();
    // Anything a failure of its own says (a timeout, an error) explains the hang better.
    // (The watchdog's other context lines, "last enqueued work", "taking the entire process
    // down", belong to the heartbeat's report as well.)
    let other_failure = signals
        .iter()
        .any(|s| s.rule != "watchdog_context" && s.role != Role::Consequence);
    if stuck.is_empty() || other_failure {
        return;
    }
    signals.retain(|s| s.rule != "watchdog_context");
    let mut s = Signal::new(
        RULE_HUNG_AT_EXIT_WITHOUT_DESTROY,
        Category::Unknown,
        Role::Cause,
        Attach::Standalone,
    );
    s.subjects = ranks.into_iter().collect();
    s.detail = Some(
        "the ranks had reached the end of the program without destroy_process_group(), and \
         then ProcessGroupNCCL's watchdog hung"
            .to_owned(),
    );
    s.evidence = std::iter::once(exit).chain(stuck).collect();
    *order += 1;
    s.order = *order;
    signals.push(s);
}

/// The words of a batch system, Kubernetes or a launcher that name why the job was stopped,
/// and the title that says it (first match wins).
const STOPPED_BECAUSE: &[(&[&str], &str)] = &[
    (
        &["due to time limit", "msg: timeout"],
        "Slurm cancelled the job at its time limit",
    ),
    (
        &["due to preemption", "msg: preempted"],
        "Slurm preempted the job",
    ),
    (
        &["due to job requeue"],
        "Slurm cancelled the job to requeue it",
    ),
    (
        &["msg: deadline"],
        "Slurm cancelled the job at its deadline",
    ),
    (
        &["user-provided time limit for job execution"],
        "mpirun stopped the job at its --timeout",
    ),
    (
        &[
            "preempted by pod",
            "preempting to accommodate a higher priority pod",
            "preempted in order to admit critical pod",
        ],
        "Kubernetes preempted the pod for a higher-priority one",
    ),
    (
        &[
            "interrupted by node preemption",
            "preemptionwatcher: preemption",
        ],
        "the node was preempted",
    ),
    (
        &[
            "terminated in response to imminent node shutdown",
            "node is shutting, evicting pods",
        ],
        "the node shut down, and its pods were stopped",
    ),
    (
        &[
            "longer than the specified deadline",
            "longer than specified deadline",
        ],
        "Kubernetes stopped the pod at its deadline (activeDeadlineSeconds)",
    ),
    (
        &["failed liveness probe"],
        "Kubernetes restarted the container: it failed its liveness probe",
    ),
    (
        &[
            "sending ctrl-c to stepid",
            "interrupt (one more within 1 sec",
        ],
        "srun passed on a Ctrl-C",
    ),
];

/// Who stopped the job and why, when the line that says so names it (the batch system's,
/// Kubernetes's or the launcher's own words, as `launcher_signal` reads them): the title then
/// says it instead of "a signal from outside".
fn interruption_reason(line: &str) -> Option<&'static str> {
    let text = line.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| text.contains(w));
    // torchelastic's "Received Signals.SIGTERM death signal" (or "Received 15 death signal")
    // and "Process 4242 got signal: 15".
    let digits = |after: &str| {
        after
            .chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
    };
    let number = text
        .split_once("got signal: ")
        .map(|(_, after)| digits(after))
        .or_else(|| {
            text.split_once("received ")
                .map(|(_, after)| after)
                .filter(|after| after.contains(" death signal"))
                .map(digits)
        });
    let signal = |name: &str, num: &str| {
        (text.contains("death signal") && text.contains(name))
            || text.contains(&format!("received {name}"))
            || number.as_deref() == Some(num)
    };
    if let Some((_, reason)) = STOPPED_BECAUSE.iter().find(|(words, _)| has(words)) {
        return Some(reason);
    }
    Some(if signal("sigint", "2") {
        "the launcher got SIGINT (Ctrl-C)"
    } else if signal("sighup", "1") {
        "the launcher got SIGHUP (its terminal or SSH session closed)"
    } else if signal("sigterm", "15") {
        "the launcher got SIGTERM from outside"
    } else {
        return None;
    })
}

/// Whether a line is ProcessGroupNCCL's heartbeat monitor finding its watchdog stuck
/// ("ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress ...").
fn says_watchdog_stuck(e: &Evidence) -> bool {
    let text = e.text.to_ascii_lowercase();
    // The heartbeat monitor's report, and its exit reason when it ends the process
    // ("Terminating the process after attempting to dump debug info, due to ProcessGroupNCCL
    // watchdog hang.").
    // PyTorch 2.2 and 2.3 logged "Heartbeat monitor timed out! Process will be terminated after
    // dumping debug info." before that exit message (`heartbeatMonitor`, when the watchdog's
    // heartbeat did not move for TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC); the first wordings of late
    // 2023 are in `watchdog_context`'s needles.
    [
        "watchdog got stuck",
        "due to processgroupnccl watchdog hang",
        "heartbeat monitor timed out",
        "watchdog heartbeat detected",
        "detects no heartbeat",
        "nccl monitor thread timeout",
    ]
    .iter()
    .any(|needle| text.contains(needle))
}

/// Whether `b` comes after `a` in the same log file (or on its line: a log pasted as one line
/// keeps its order within the line).
fn later_in_the_same_log(a: &Evidence, b: &Evidence) -> bool {
    a.file == b.file && a.line.zip(b.line).is_some_and(|(a, b)| b >= a)
}

/// PyTorch's "Parameter indices which did not receive grad for rank 0: 2 3" gives indices
/// only (names need TORCH_DISTRIBUTED_DEBUG): the traces' parameter tables name them.
fn name_unused_parameters(signals: &mut [Signal], progress: &[crate::traces::RankProgress]) {
    for s in signals.iter_mut().filter(|s| s.rule == "unused_parameters") {
        let Some(list) = s
            .detail
            .as_deref()
            .and_then(|d| d.strip_prefix("no gradient for: "))
        else {
            continue;
        };
        if !list
            .chars()
            .all(|c| c.is_ascii_digit() || c == ' ' || c == ',')
        {
            continue;
        }
        let table = s
            .observer
            .and_then(|r| progress.iter().find(|p| p.rank == r))
            .or_else(|| progress.iter().find(|p| !p.param_names.is_empty()))
            .map(|p| &p.param_names);
        let Some(table) = table.filter(|t| !t.is_empty()) else {
            continue;
        };
        let named: Vec<String> = list
            .split([' ', ','])
            .filter_map(|t| t.parse::<u32>().ok())
            .map(|i| match table.iter().find(|(j, _)| *j == i) {
                Some((_, name)) => format!("{i} ({})", sanitize(name, 80)),
                None => i.to_string(),
            })
            .collect();
        if !named.is_empty() {
            s.detail = Some(format!(
                "no gradient for parameters {} (names from the trace's parameter table)",
                named.join(", ")
            ));
        }
    }
}

/// A rank that exited 0 before `before` (the first failure's time) while the others hung,
/// timed out or lost their connection to it, and that no other observation explains, left its
/// training loop early.
fn uneven_from_manifest(
    m: &crate::manifest::LoadedManifest,
    ctx: &RunContext,
    signals: &[Signal],
    before: f64,
    left: &BTreeSet<usize>,
) -> Vec<Signal> {
    let mut out = Vec::new();
    if ctx.exited_ok.len() + left.len() >= ctx.world_size.unwrap_or(usize::MAX) {
        return out;
    }
    for r in &m.manifest.ranks {
        let aborted = left.contains(&r.rank);
        if !ctx.exited_ok.contains(&r.rank) && !aborted {
            continue;
        }
        let ended = r.end.as_ref().map_or(f64::INFINITY, |e| e.after_s);
        if ended >= before {
            continue;
        }
        if signals
            .iter()
            .any(|s| s.category == Category::UnevenInputs && s.subjects.contains(&r.rank))
        {
            continue;
        }
        let mut s = Signal::new(
            RULE_EXITED_EARLY,
            Category::UnevenInputs,
            Role::Cause,
            Attach::Standalone,
        );
        s.subjects = vec![r.rank];
        s.observer = Some(r.rank);
        // Nothing says whether its data ran out or a condition of its own ended its loop.
        s.predicate_hint = Some(
            "left the training loop and ended while the others were still in a collective"
                .to_owned(),
        );
        let when = r
            .end
            .as_ref()
            .map(|e| format!(" after {:.1} s", e.after_s))
            .unwrap_or_default();
        let text = if aborted {
            format!(
                "rank {} ended{when} with its process group still working (\"terminate called \
                 without an active exception\", SIGABRT, and no error of its own) while other \
                 ranks were still in a collective",
                r.rank
            )
        } else {
            format!(
                "rank {} exited with code 0{when} while other ranks were still in a collective",
                r.rank
            )
        };
        s.detail = Some(text.clone());
        s.evidence.push(m.rank_end_evidence(r.rank, text));
        out.push(s);
    }
    out
}

/// Observations read from the logs as a whole (`shape.rs`): ranks given out
/// twice, data loaders of different lengths behind a timeout, one collective
/// called differently by different ranks, an nccl-tests run on one node that
/// stopped after its header, NCCL's system error on one node, and plain logs
/// that end without an error: right after NCCL's set-up on one node, in the
/// rendezvous, or after start-up (these three at low confidence).
fn shape_signals(
    g: &Gathered,
    ctx: &RunContext,
    signals: &[Signal],
    timed_out: bool,
    opts: &Options,
) -> Vec<Signal> {
    let shape = &g.shape;
    let mut out = Vec::new();
    let explained = signals
        .iter()
        .any(|s| s.role == Role::Cause && s.attach == Attach::Standalone);
    let single_host = shape.single_host(g.nccl.single_node());

    if let Some((twice, world)) = shape.ranks_given_twice() {
        let mut s = Signal::standalone(
            "ranks_announced_twice",
            Category::WorldSizeMismatch,
            Role::Cause,
        );
        let missing: Vec<usize> = (0..world)
            .filter(|r| !shape.announced.contains_key(r))
            .collect();
        s.subjects = twice.clone();
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        s.detail = Some(format!(
            "global rank{} {} announced by two processes each, while rank{} {} of the {world} \
             never announced: the ranks were given out twice",
            plural(twice.len()),
            join_ranks(&twice),
            plural(missing.len()),
            join_ranks(&missing),
        ));
        s.evidence = twice
            .iter()
            .flat_map(|r| shape.announced[r].iter().take(2).cloned())
            .take(opts.max_evidence)
            .collect();
        out.push(s);
    }

    let uneven = shape.uneven_totals();
    if timed_out && !uneven.is_empty() {
        let mut s = Signal::standalone(
            "progress_totals_differ",
            Category::UnevenInputs,
            Role::Cause,
        );
        let shown: Vec<String> = uneven.iter().map(u64::to_string).collect();
        s.detail = Some(format!(
            "the progress bars count different numbers of batches per epoch ({}): the ranks' \
             data loaders have different lengths",
            shown.join(", ")
        ));
        s.evidence = uneven
            .iter()
            .filter_map(|t| shape.bar_totals.get(t).cloned())
            .take(opts.max_evidence)
            .collect();
        out.push(s);
    }

    for m in shape.call_mismatches() {
        // The watchdog's own lines name the collective each rank was waiting in: proof, where
        // a debug log of every call can have lost lines.
        let watchdog = m.numbered_by == WATCHDOG_SEQUENCE;
        let tracebacks = m.numbered_by == TRACEBACK_TIMEOUT;
        let mut s = Signal::standalone(
            if watchdog {
                "watchdog_collectives_differ"
            } else if tracebacks {
                TRACEBACKS_COLLECTIVES_DIFFER
            } else {
                "logged_calls_differ"
            },
            Category::CollectiveMismatch,
            Role::Cause,
        );
        let calls: Vec<String> = m
            .calls
            .iter()
            .map(|(call, who, _)| format!("{call} ({})", who.join(", ")))
            .collect();
        s.detail = Some(if tracebacks {
            format!(
                "the ranks' tracebacks end inside different collectives (a timeout raised in \
                 them, or the job stopped by hand while they waited): {}; each waited for peers \
                 that were in another call: a rank took another path (a branch on a value only \
                 it has, a block only some ranks run) or ran out of data before the others",
                calls.join(" vs ")
            )
        } else if watchdog {
            format!(
                "the watchdog timed the ranks out in different collectives at the same number of \
                 their group ({}): {}; a rank took another path (a branch on a value only it \
                 has, a block only some ranks run) and the group's collectives no longer line up",
                m.number,
                calls.join(" vs ")
            )
        } else {
            format!(
                "at {} {} the ranks called different collectives: {}",
                m.numbered_by,
                m.number,
                calls.join(" vs ")
            )
        });
        s.subjects = m
            .calls
            .iter()
            .flat_map(|(_, who, _)| who.iter())
            .filter_map(|w| w.strip_prefix("rank ").and_then(|r| r.parse().ok()))
            .collect();
        s.evidence = m
            .calls
            .into_iter()
            .map(|(_, _, e)| e)
            .take(opts.max_evidence)
            .collect();
        out.push(s);
    }

    let p2p_off = ctx.p2p_disabled || shape.p2p_disabled;
    if let Some(tests) = &shape.nccl_tests {
        if tests.columns
            && tests.rows == 0
            && !tests.failed
            && !explained
            && single_host == Some(true)
            && !p2p_off
        {
            let mut s = Signal::standalone(
                "nccl_tests_stalled_on_one_node",
                Category::P2pHang,
                Role::Cause,
            );
            s.detail = Some(
                "nccl-tests printed its header and no result: the first collective between \
                 GPUs of one node never finished"
                    .to_owned(),
            );
            s.evidence.extend(tests.header.clone());
            out.push(s);
        }
    }

    // Any cause (a dead rank's signal attaches to the timeouts it caused) or a peer seen gone.
    let anything_else = signals.iter().any(|s| s.role != Role::Symptom);
    if !anything_else && single_host != Some(false) && !p2p_off {
        out.extend(first_collective_timed_out(shape, opts));
    }

    out.extend(tool_output_signals(shape, explained, p2p_off, opts));

    // NCCL's system error with a peer's closed connection as its last error (`socket.cc`'s
    // "socketProgress: Connection closed by remote peer") is no bare system error: the peer
    // exited, and its own log says why. (Only NCCL's own words: a launcher's "closing signal
    // SIGTERM" to the other ranks follows a system error of any cause.)
    // The same for a refused connect as its last error ("Net : Connect to 10.1.2.3<45123>
    // failed : Connection refused", NCCL 2.13 to 2.18): nothing listened there.
    // NCCL 2.7 to 2.11 name the socket call ("include/socket.h:416 NCCL WARN Call to recv
    // failed : Connection reset by peer", "... : Broken pipe"), later ones as "socketProgress
    // ...: Call to recv from ... failed : Connection reset by peer".
    let peer_gone = signals.iter().any(|s| {
        s.evidence.iter().any(|e| {
            let text = e.text.to_ascii_lowercase();
            (s.rule == "peer_gone" && text.contains("connection closed by remote peer"))
                || [
                    "failed : connection refused",
                    "failed : connection reset by peer",
                    "failed : broken pipe",
                ]
                .iter()
                .any(|w| text.contains(w))
        })
    });
    if !explained && !peer_gone {
        let system_error = signals.iter().find(|s| {
            s.rule == "nccl_error_code"
                && s.evidence.iter().any(|e| {
                    let t = e.text.to_ascii_lowercase();
                    t.contains("system error") || t.contains("ncclsystemerror")
                })
        });
        // NCCL's system error with no line saying which call failed. Its set-up's system
        // calls are sockets (bootstrap, the network transport) and shared memory: on one node
        // /dev/shm is the usual one; anywhere else (several nodes, or a log that does not say)
        // a socket on an interface the other nodes cannot reach is (in the corpus's
        // development split 3 of 4 such logs whose node count was not shown; medium at most,
        // as the reading is indirect).
        let (rule, category, detail) = match single_host {
            Some(true) => (
                "nccl_system_error_one_node",
                Category::ShmTooSmall,
                "NCCL's system error with every rank on one node: there its transports are \
                 shared memory and peer-to-peer, and /dev/shm (64 MB in a container) is the \
                 usual failing call",
            ),
            _ => (
                "nccl_system_error_unshown_nodes",
                Category::NetworkInterface,
                "NCCL's system error with no line naming the call, in a log that does not show \
                 one node: the usual failing call is a socket on an interface the other ranks \
                 cannot reach (a container's bridge or veth, a second NIC); NCCL_DEBUG=WARN \
                 prints the call, and on one node /dev/shm is the other usual one",
            ),
        };
        if let Some(first) = system_error {
            let mut s = Signal::standalone(rule, category, Role::Cause);
            s.subjects = first.ranks().into_iter().collect();
            s.detail = Some(detail.to_owned());
            s.evidence = first.evidence.clone();
            out.push(s);
        }
    }

    let hang = out.is_empty() && log_ends_while_running(g, signals);
    if hang && single_host == Some(true) && shape.last_line_nccl && !p2p_off {
        // NCCL set up its communicator on one node and nothing came after: the first
        // collective between the node's GPUs never finished (the P2P case of NCCL's
        // troubleshooting guide: ACS, IOMMU, GPUs without peer-to-peer support).
        let mut s = Signal::standalone(
            "log_ends_after_nccl_setup_on_one_node",
            Category::P2pHang,
            Role::Cause,
        );
        s.detail = Some(
            "the log ends right after NCCL's set-up on one node, without an error: the first \
             collective between the node's GPUs never finished"
                .to_owned(),
        );
        s.evidence.extend(
            g.scans
                .iter()
                .filter_map(|scan| scan.last.back().cloned())
                .take(opts.max_evidence),
        );
        out.push(s);
    }
    if let Some(waiting) = &shape.rendezvous_waiting {
        if out.is_empty() && signals.is_empty() && g.manifests.is_empty() {
            let mut s = Signal::standalone(
                "log_ends_in_rendezvous",
                Category::RendezvousTimeout,
                Role::Symptom,
            );
            s.detail = Some(
                "the log ends while the launcher waits in the rendezvous: not every node joined"
                    .to_owned(),
            );
            s.evidence.push(waiting.clone());
            out.push(s);
        }
    }
    if let Some(started) = &shape.started {
        if hang {
            let mut s = Signal::standalone(
                "log_ends_while_running",
                Category::CollectiveTimeout,
                Role::Symptom,
            );
            s.detail = Some(
                "the log ends after the job started, without an error: the job most likely \
                 hangs in a collective"
                    .to_owned(),
            );
            s.evidence.push(started.clone());
            s.evidence.extend(
                g.scans
                    .iter()
                    .filter_map(|scan| scan.last.back().cloned())
                    .filter(|e| e != started)
                    .take(opts.max_evidence.saturating_sub(1)),
            );
            out.push(s);
        }
    }
    out
}

/// Whether plain logs (no manifest) show a job that started (NCCL's
/// communicators complete, if NCCL logged) and then end without any error:
/// the way a hang's log looks when nobody set a timeout short enough, and
/// nothing else was observed.
///
/// A log of a job that ended well looks the same; nobody asks why such a
/// job failed, so the finding says what it rests on, at low confidence.
fn log_ends_while_running(g: &Gathered, signals: &[Signal]) -> bool {
    let quiet = g.scans.iter().all(|scan| !scan.telling_says_error);
    let nccl_settled = !g.shape.nccl_info || g.shape.nccl_init_complete;
    g.shape.started.is_some()
        && g.manifests.is_empty()
        && signals.is_empty()
        && quiet
        && nccl_settled
}

/// `0, 1, 2` for a list of ranks.
fn join_ranks(ranks: &[usize]) -> String {
    ranks
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A finding being built, with what ranking needs.
struct Draft {
    finding: Finding,
    first_order: u64,
    /// Whether a GPU hardware fault is among its lines: it outranks the
    /// causes of other categories that follow from it (out of memory, NCCL).
    hardware_fault: bool,
    /// Whether its only lines say that a Ray worker's connection closed: a worker's own
    /// error elsewhere in the log (a crash, NCCL's) is what closed it.
    worker_lost_silently: bool,
}

#[derive(Default)]
struct Group {
    own: Vec<Signal>,
    attached: Vec<Signal>,
}

impl Group {
    fn role(&self) -> Role {
        let subjects: BTreeSet<usize> = self.own.iter().flat_map(|s| s.subjects.clone()).collect();
        let cat = self.own.first().map(|s| s.category);
        self.own
            .iter()
            .map(|s| s.role)
            .chain(
                self.attached
                    .iter()
                    .filter(|s| {
                        Some(s.category) == cat
                            && !s.subjects.is_empty()
                            && s.subjects.iter().all(|r| subjects.contains(r))
                    })
                    .map(|s| s.role),
            )
            .min()
            .unwrap_or(Role::Consequence)
    }

    fn ranks(&self) -> BTreeSet<usize> {
        self.own.iter().flat_map(Signal::ranks).collect()
    }
}

fn group(signals: Vec<Signal>, opts: &Options) -> Vec<Draft> {
    let (mut standalone, mut generic): (Vec<Signal>, Vec<Signal>) = signals
        .into_iter()
        .partition(|s| s.attach == Attach::Standalone);
    standalone.sort_by_key(|s| s.order);
    generic.sort_by_key(|s| s.order);
    let mut groups: BTreeMap<Category, Group> = BTreeMap::new();
    for s in standalone {
        groups.entry(s.category).or_default().own.push(s);
    }
    let mut leftovers = Vec::new();
    for s in generic {
        let ranks = s.ranks();
        let best = groups
            .iter()
            .filter(|(_, g)| s.attach != Attach::CauseOnly || g.role() == Role::Cause)
            // A task's own failure in generic words (an exit code, a crash marker) is not folded
            // into a cancellation the launcher reports as a symptom: srun's "task 9: Exited
            // with exit code 1" before Slurm's "*** STEP ... CANCELLED AT ... ***" is the
            // failure, the cancellation what followed it.
            .filter(|(c, g)| {
                s.role != Role::Cause
                    || g.role() == Role::Cause
                    || **c != Category::LauncherInterrupted
            })
            .filter(|(_, g)| {
                let gr = g.ranks();
                ranks.is_empty() || gr.is_empty() || ranks.iter().any(|r| gr.contains(r))
            })
            .min_by_key(|(c, g)| (g.role(), c.priority()))
            .map(|(c, _)| *c);
        match best {
            Some(c) => groups.entry(c).or_default().attached.push(s),
            None => leftovers.push(s),
        }
    }
    for s in leftovers {
        groups.entry(s.category).or_default().own.push(s);
    }
    groups
        .into_iter()
        .filter(|(_, g)| !g.own.is_empty())
        .map(|(c, g)| draft(c, g, opts))
        .collect()
}

/// The fix when the ranks found no GPU to use.
const NO_USABLE_GPU_FIX: &str = "There is no GPU this process can use (no NVIDIA driver, none \
     visible in CUDA_VISIBLE_DEVICES, or a driver older than the CUDA of the installed torch): \
     run on a GPU machine (check `nvidia-smi` there and `torch.version.cuda`; in a container, \
     start it with the GPUs and their driver, `docker run --gpus all` or the NVIDIA container \
     runtime, which mounts libcuda.so and libnvidia-ml.so), or run this script \
     on the CPU: backend `gloo` (init_process_group(\"gloo\")), no `torch.cuda.set_device`, the \
     model and the tensors on the CPU, DDP without device_ids. NVML's \"Driver/library version \
     mismatch\": the driver was upgraded while its old kernel module is still loaded; reboot \
     the node (or unload and reload the nvidia modules). \"CUDA unknown error\" also follows \
     CUDA_VISIBLE_DEVICES changed after the program's first CUDA call: set it before.";

/// The fix for a rank proven to be killed by a SIGKILL from outside.
const KILLED_FROM_OUTSIDE_FIX: &str = "Find the sender of the SIGKILL: the batch system's \
     accounting (preemption, a time or memory limit it enforces itself: `sacct -j JOB`, \
     `kubectl describe pod`), a watchdog or health check, or a person; the rank's own log ends \
     without an error because SIGKILL cannot be caught.";

/// What a DataLoader worker's SIGKILL means (the finding's explanation, whoever sent it).
const WORKER_KILLED_MEANING: &str = "A DataLoader worker process of the rank got SIGKILL, and \
     the rank stopped with PyTorch's \"DataLoader worker (pid N) is killed by signal: Killed.\" \
     The usual sender is the kernel's out-of-memory killer: every worker holds its own copy of \
     what the dataset object keeps in memory and its prefetched batches, and a container's or \
     batch system's memory limit counts them all with the ranks.";

/// How a DataLoader worker's end other than a SIGKILL reads: the title's predicate after "a
/// DataLoader worker of rank R", the explanation and the fix.
struct WorkerEnd {
    predicate: &'static str,
    meaning: &'static str,
    fix: &'static str,
}

/// Rerunning without workers is the way to the error in every case.
const WORKER_NUM_WORKERS_0: &str = "Rerun with `num_workers=0`: the dataset's code then runs in \
     the rank itself, whose log gets the error with its traceback.";

/// What DDP's check of the model across ranks means.
const MODEL_DIFFERS_MEANING: &str = "DDP checked, when it wrapped the model, that every rank \
     holds the same parameters (their number, sizes and strides) and found that they differ: \
     the ranks built different models, so no collective after it could match.";
/// Where a model that differs per rank comes from.
const MODEL_DIFFERS_FIX: &str = "Build the same model on every rank before wrapping it in \
     DDP: look for construction that depends on the rank or on what differs between ranks (a \
     branch on the rank, a size taken from each rank's data or vocabulary, a configuration or \
     checkpoint read from a node-local path, a layer frozen or removed on some ranks, \
     `channels_last` or another memory format on some ranks for a strides mismatch). Build it \
     identically, then load weights.";

/// What PyTorch's reducer says of a gradient it was told of twice (`reducer.cpp`).
const READY_TWICE_MEANING: &str = "DDP expects each parameter's gradient once per backward and \
     its hook fired twice in one iteration: the parameter was used again in a second backward \
     pass of the same iteration (reentrant activation checkpointing, `use_reentrant=True`, \
     which recomputes and backpropagates a checkpointed block apart; the same block \
     checkpointed twice), or outside the module's `forward`, shared across concurrent \
     forward-backward passes.";
/// The ways out PyTorch's message and the checkpointing APIs give.
const READY_TWICE_FIX: &str = "Use non-reentrant checkpointing \
     (`torch.utils.checkpoint.checkpoint(..., use_reentrant=False)`; transformers: \
     `gradient_checkpointing_kwargs={\"use_reentrant\": False}`); when no parameter is unused, \
     construct DDP with find_unused_parameters=False (transformers: \
     `ddp_find_unused_parameters=False`); when the graph is the same every iteration, \
     static_graph=True. Do not use the wrapped module's parameters outside its forward.";

const WORKER_CRASHED: WorkerEnd = WorkerEnd {
    predicate: "crashed (a native crash in the dataset's code or a library it calls)",
    meaning: "A DataLoader worker process of the rank died of a native crash (segmentation \
         fault, floating-point exception, abort), and the rank stopped with PyTorch's \
         \"DataLoader worker (pid N) is killed by signal: ...\" (the worker's own \"ERROR: \
         Unexpected segmentation fault encountered in worker.\" may come first).",
    fix: "Rerun with `num_workers=0` (the crash then happens in the rank itself; `python -X \
         faulthandler` prints the Python stack at the crash), and look at native code called \
         from the dataset's `__getitem__` or `collate_fn` (image or audio decoders, tokenizers) \
         and at state made before the workers fork (CUDA, threads, open connections).",
};

const WORKER_EXITED: WorkerEnd = WorkerEnd {
    predicate: "exited with an error the rank could not see",
    meaning: "A DataLoader worker process of the rank exited with a non-zero code; \
         multiprocessing loses the worker's own error, so the rank only says \"exited \
         unexpectedly with exit code N\".",
    fix: WORKER_NUM_WORKERS_0,
};

const WORKER_SIGNAL_CUT: WorkerEnd = WorkerEnd {
    predicate: "was killed by a signal whose name the log cuts off (most likely SIGKILL from the \
         out-of-memory killer)",
    meaning: "A DataLoader worker process of the rank was killed by a signal, and the rank \
         stopped with PyTorch's \"DataLoader worker (pid N) is killed by signal: NAME.\", but the \
         line ends before the name. \"Killed\" (SIGKILL) is the most frequent, usually from the \
         kernel's out-of-memory killer: every worker holds its own copy of what the dataset \
         object keeps in memory and its prefetched batches.",
    fix: "Read the whole line in the rank's own log: \"Killed\": confirm the out-of-memory \
         kill with `dmesg | grep -i oom` on the node and lower host memory use (fewer \
         data-loader workers, smaller prefetch, no in-memory dataset copies per rank); \"Bus \
         error\": /dev/shm is too small (in a container, `--shm-size` or `--ipc=host`); \
         \"Segmentation fault\" or \"Aborted\": a native crash in the dataset's code (rerun with \
         `num_workers=0`).",
};

const WORKER_DIED: WorkerEnd = WorkerEnd {
    predicate: "died",
    meaning: "A DataLoader worker process of the rank ended, and the rank stopped with \
         PyTorch's \"DataLoader worker (pid(s) N) exited unexpectedly\" without the worker's \
         reason.",
    fix: "Look above that line for the worker's own message (a bus error: /dev/shm is too \
         small; \"Killed\": the out-of-memory killer most likely); or rerun with \
         `num_workers=0`: the dataset's code then runs in the rank itself, whose log gets the \
         error with its traceback.",
};

/// The fix for a DataLoader worker proven to be killed by a SIGKILL from outside.
const WORKER_KILLED_FROM_OUTSIDE_FIX: &str = "Find the sender of the worker's SIGKILL: a \
     watchdog or health check that kills processes (by memory, age or name), the batch system, \
     or a person; the out-of-memory killer did not send it. `num_workers=0` takes the workers \
     out of the picture while you look.";

fn draft(category: Category, g: Group, opts: &Options) -> Draft {
    let role = g.role();
    let mut own = g.own;
    own.sort_by_key(|s| (s.role, s.order));
    let culprits: BTreeSet<usize> = own
        .iter()
        .filter(|s| !s.subjects.is_empty() && s.observer.is_none_or(|o| s.subjects != [o]))
        .flat_map(|s| s.subjects.iter().copied())
        .collect();
    let ranks: Vec<usize> = if culprits.is_empty() {
        own.iter()
            .flat_map(|s| s.subjects.iter().copied())
            .collect::<BTreeSet<_>>()
    } else {
        culprits
    }
    .into_iter()
    .collect();
    // A finding whose own lines name no rank ("failed (exitcode: -9)") takes
    // the ranks of the signals of its category that joined it (torchelastic's
    // failure table).
    let ranks: Vec<usize> = if ranks.is_empty() {
        g.attached
            .iter()
            .filter(|s| s.category == category)
            .flat_map(|s| s.subjects.iter().copied())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    } else {
        ranks
    };
    let observed_by: Vec<usize> = own
        .iter()
        .chain(g.attached.iter())
        .filter_map(|s| s.observer)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();

    // Evidence: one line per (rule, rank) first, then the rest.
    let all: Vec<(&'static str, Option<usize>, &Evidence)> = own
        .iter()
        .chain(g.attached.iter())
        .flat_map(|s| s.evidence.iter().map(move |e| (s.rule, s.observer, e)))
        .collect();
    let mut seen_lines: BTreeSet<(String, Option<u64>, String)> = BTreeSet::new();
    let mut unique: Vec<(&'static str, Option<usize>, &Evidence)> = Vec::new();
    for item in all {
        if seen_lines.insert((item.2.file.clone(), item.2.line, item.2.text.clone())) {
            unique.push(item);
        }
    }
    let mut chosen: Vec<usize> = Vec::new();
    let mut kinds: BTreeSet<(&'static str, Option<usize>)> = BTreeSet::new();
    for (i, (rule, obs, _)) in unique.iter().enumerate() {
        if chosen.len() < opts.max_evidence && kinds.insert((*rule, *obs)) {
            chosen.push(i);
        }
    }
    for i in 0..unique.len() {
        if chosen.len() >= opts.max_evidence {
            break;
        }
        if !chosen.contains(&i) {
            chosen.push(i);
        }
    }
    chosen.sort_unstable();
    let evidence: Vec<Evidence> = chosen.iter().map(|&i| unique[i].2.clone()).collect();
    let evidence_omitted = unique.len() - evidence.len();

    let mut details: Vec<String> = Vec::new();
    // What the traces say of a rank behind (what it last finished, how long it was quiet,
    // where its stack was) comes first: the other sources repeat its collectives.
    let says_who_is_behind = [
        "trace_behind",
        "pystack_behind",
        WORK_BEHIND_RULE,
        SILENT_RANKS_RULE,
    ];
    let behind_first = own
        .iter()
        .filter(|s| says_who_is_behind.contains(&s.rule))
        .chain(own.iter().filter(|s| !says_who_is_behind.contains(&s.rule)));
    for s in behind_first.chain(g.attached.iter()) {
        if let Some(d) = &s.detail {
            // Details quote words from the inputs (versions, interfaces,
            // statuses): sanitised here once, whoever built them.
            let d = sanitize(d, MAX_DETAIL_CHARS);
            if !details.contains(&d) && details.len() < 4 {
                details.push(d);
            }
        }
    }
    let observers_only: Vec<usize> = observed_by
        .iter()
        .copied()
        .filter(|r| !ranks.contains(r))
        .collect();
    // The ranks that lost a peer are the ones that said so, not the peer they lost.
    let lost_own_peer = category == Category::RankCrashed
        && role == Role::Consequence
        && !ranks.is_empty()
        && ranks.iter().all(|r| observed_by.contains(r));
    // Only the traces or the flight recorder's dumps saw the wait (no timeout, no hang: the run
    // was stopped for another rank's failure): the ranks waited, nothing timed out.
    // A hang the watchdog stopped is a wait too.
    let only_waited = own.iter().all(|s| {
        s.rule.starts_with("trace_")
            || s.rule.starts_with("pystack_")
            || s.rule.starts_with("flight_recorder")
            || s.rule.starts_with("manifest_hang")
    });
    // The hang watchdog stopped the job and nothing the ranks left says where they were (no
    // trace, stack, dump or log line of a collective: a program that does not import the
    // module, run without --auto-instrument).
    let blind_hang = category == Category::CollectiveTimeout
        && !own.is_empty()
        && own.iter().all(|s| s.rule == "manifest_hang")
        && ranks.is_empty();
    let elsewhere = own.iter().find_map(|s| s.elsewhere.as_deref());
    let mut title = if blind_hang {
        "no rank made progress until the launcher's hang watchdog stopped the job, and nothing \
         the ranks left says where they were"
            .to_owned()
    } else if lost_own_peer {
        title(category, role, &[], &ranks, only_waited, None)
    } else {
        title(
            category,
            role,
            &ranks,
            &observers_only,
            only_waited,
            elsewhere,
        )
    };
    // A store's wait that timed out, said only by the ranks that waited (TCPStore's "Timed
    // out after 901 seconds waiting for clients. 1/2 clients joined." on rank 0, the
    // store-based barrier's on rank 3): they joined; the ranks they waited for are not named.
    let rendezvous_waiters = category == Category::RendezvousTimeout
        && role == Role::Symptom
        && !ranks.is_empty()
        && ranks.iter().all(|r| observed_by.contains(r));
    if rendezvous_waiters {
        title = format!(
            "{} waited for ranks that did not join the rendezvous in time",
            who(&ranks)
        );
    }
    // Only ProcessGroupNCCL's heartbeat monitor ("ProcessGroupNCCL's watchdog got stuck for
    // 480 seconds without making progress in monitoring enqueued collectives"): no collective
    // is said to have timed out; the watchdog thread itself hung in an NCCL or CUDA call.
    let heartbeat_only = category == Category::CollectiveTimeout
        && own
            .iter()
            .all(|s| s.rule == "watchdog_context" && s.evidence.iter().any(says_watchdog_stuck));
    if category == Category::CollectiveTimeout
        && !ranks.is_empty()
        && own
            .iter()
            .all(|s| s.rule == MONITORED_BARRIER_RULE && s.detail.is_some())
    {
        title = format!(
            "{} did not reach the monitored barrier in time",
            who(&ranks)
        );
    }
    if heartbeat_only {
        let whose = if ranks.is_empty() {
            "ProcessGroupNCCL's watchdog".to_owned()
        } else {
            format!("the watchdog of {}", who(&ranks))
        };
        title = format!("{whose} got stuck: an NCCL or CUDA call it made hung");
    }
    // Only a launcher's own exception (torchelastic's ChildFailedError, accelerate's and
    // DeepSpeed's CalledProcessError): a rank failed, and no peer was lost that the log shows.
    if category == Category::RankCrashed
        && role == Role::Consequence
        && own.iter().all(|s| s.rule == "launcher_consequence")
    {
        title = "the launcher reports that a rank failed".to_owned();
    }
    let mut fix = category.fix().to_owned();
    if let (Category::CollectiveTimeout, Some(w), false) = (category, elsewhere, ranks.is_empty()) {
        // Where the rank waited for was is known: the fix starts there.
        fix = format!(
            "{} {} {w} while the others waited for {}. If that work is meant to be long (a \
             checkpoint or an evaluation on one rank), have the other ranks wait for it in a \
             barrier and give the process group a timeout longer than it \
             (`init_process_group(timeout=...)`); if it should not take that long (a stuck \
             read, a lock, a loop that does not end), fix it there.",
            who(&ranks),
            was(&ranks),
            if ranks.len() > 1 { "them" } else { "it" }
        );
    }
    if let Some(hint) = own.iter().find_map(|s| s.fix_hint.as_deref()) {
        fix = hint.to_owned();
    }
    if category == Category::CudaError
        && own
            .iter()
            .any(|s| s.rule == crate::rules::NO_USABLE_GPU_RULE)
    {
        title = format!("{title}: no GPU this process can use");
        fix = NO_USABLE_GPU_FIX.to_owned();
    }
    if category == Category::LauncherInterrupted {
        // Not a rank's doing: say what the launcher got, when the manifest knows.
        title = own
            .iter()
            .find_map(|s| {
                (s.rule == "manifest_interrupted")
                    .then(|| s.detail.clone())
                    .flatten()
            })
            .or_else(|| {
                own.iter()
                    .filter(|s| s.rule == "launcher_signal")
                    .flat_map(|s| &s.evidence)
                    .find_map(|e| interruption_reason(&e.text))
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| "the launcher was stopped by a signal from outside".to_owned());
    }
    if own.iter().all(|s| s.rule == "log_ends_while_running") {
        title = "no error: the log ends after the job started, as a hang's log does".to_owned();
    }
    if own
        .iter()
        .all(|s| s.rule == "log_ends_after_nccl_setup_on_one_node")
    {
        title = "no error: the log ends right after NCCL's set-up on one node, as a GPU \
                 peer-to-peer hang's log does"
            .to_owned();
    }
    if own.iter().all(|s| s.rule == "log_ends_in_rendezvous") {
        title = "no error: the log ends while the launcher waits in the rendezvous".to_owned();
    }
    // A SIGKILL whose sender the launcher's evidence proves says so.
    let proven = |rule: &str| own.iter().any(|s| s.rule == rule);
    // The specifics the first signal of a rule gave.
    let detail_of = |rule: &str| {
        own.iter()
            .filter(|s| s.rule == rule)
            .find_map(|s| s.detail.as_deref())
    };
    // PyTorch's desync report with every rank inside one collective and none behind.
    let all_joined_hang = category == Category::CollectiveTimeout
        && proven(crate::rules::RULE_DESYNC_ALL_JOINED)
        && !proven("desync_report_lagging");
    // So does the kernel's, the batch system's or the container runtime's own report of an OOM
    // kill (not a bare "killed by signal: Killed", which any SIGKILL gives).
    let reported_oom = category == Category::HostOomKilled
        && own
            .iter()
            .any(|s| crate::rules::OOM_REPORT_RULES.contains(&s.rule));
    if reported_oom && ranks.is_empty() && role == Role::Cause {
        title = "a process of the job was killed by the out-of-memory killer (the kernel's, \
                 the batch system's or the container runtime's own report)"
            .to_owned();
    }
    let worker_kill = role == Role::Cause && own.iter().any(|s| is_worker_kill(s.rule));
    let worker_end = (role == Role::Cause && !worker_kill)
        .then(|| {
            own.iter().find_map(|s| match s.rule {
                "dataloader_worker_crashed" => Some(&WORKER_CRASHED),
                "dataloader_worker_exited" => Some(&WORKER_EXITED),
                "dataloader_worker_died" => Some(&WORKER_DIED),
                crate::rules::RULE_WORKER_SIGNAL_CUT => Some(&WORKER_SIGNAL_CUT),
                _ => None,
            })
        })
        .flatten();
    let of_worker = || {
        if ranks.is_empty() {
            "a DataLoader worker".to_owned()
        } else {
            format!("a DataLoader worker of {}", who(&ranks))
        }
    };
    let mut meaning = category.meaning();
    if let Some(w) = worker_end {
        title = format!("{} {}", of_worker(), w.predicate);
        meaning = w.meaning;
        fix = w.fix.to_owned();
    } else if worker_kill {
        let of = of_worker();
        meaning = WORKER_KILLED_MEANING;
        if proven(RULE_WORKER_OOM_CONFIRMED) {
            title = format!("{of} was killed by the out-of-memory killer");
        } else if proven(RULE_WORKER_KILLED_FROM_OUTSIDE) {
            title = format!(
                "{of} was killed by SIGKILL from outside the process, not by the out-of-memory killer"
            );
            fix = WORKER_KILLED_FROM_OUTSIDE_FIX.to_owned();
        } else {
            title = format!("{of} got SIGKILL, most likely from the host's out-of-memory killer");
        }
    } else if role == Role::Cause {
        let named = !ranks.is_empty();
        if named && category == Category::HostOomKilled && proven(manifest::RULE_OOM_CONFIRMED) {
            title = format!(
                "{} {} killed by the out-of-memory killer",
                who(&ranks),
                was(&ranks)
            );
        } else if named
            && category == Category::RankCrashed
            && proven(manifest::RULE_KILLED_FROM_OUTSIDE)
        {
            title = format!(
                "{} {} killed by SIGKILL from outside the process, not by the out-of-memory killer",
                who(&ranks),
                was(&ranks)
            );
            fix = KILLED_FROM_OUTSIDE_FIX.to_owned();
        } else if category == Category::RankCrashed {
            // The rank's own words, when it said what went wrong (also where the log does not
            // say which rank: "a rank crashed: SizeMismatchError: ...").
            let said = own
                .iter()
                .filter(|s| matches!(s.rule, "python_exception" | "program_refused_start"))
                .find_map(|s| s.detail.as_deref());
            if let Some(said) = said {
                title = format!("{title}: {}", sanitize(said, 100));
                if let Some(module) = missing_module(said) {
                    fix = format!(
                        "The rank's Python could not import `{module}`: start the job with the \
                         interpreter of the environment that has it (`ddp-probe run -- \
                         /path/to/env/bin/python train.py`, `DDP_PROBE_PYTHON`, or the \
                         environment activated), or install `{module}` into the one that ran."
                    );
                }
            }
        }
    }
    if role == Role::Cause && proven(RULE_JOB_STORE_PORT_TAKEN) {
        title = format!(
            "{} could not host PyTorch's store: a process of this job already holds the job's \
             MASTER_PORT",
            subject(&ranks)
        );
        fix = JOB_STORE_PORT_TAKEN_FIX.to_owned();
        meaning = "The rank that hosts PyTorch's store could not listen on the job's \
                   MASTER_PORT, which the launcher found free when the job started: a process \
                   of this job already holds it.";
    }
    let said_emfile = proven(crate::rules::RULE_OPEN_FILES_LIMIT);
    if role == Role::Cause && (said_emfile || proven(crate::rules::RULE_DESCRIPTOR_NOT_RECEIVED)) {
        let whom = subject(&ranks);
        title = if said_emfile {
            format!("{whom} reached its open-files limit (Too many open files)")
        } else {
            format!(
                "{whom} did not receive a file descriptor from another process, most likely at \
                 its open-files limit"
            )
        };
        meaning = if said_emfile {
            "A system call that opens a file descriptor (a socket, a shared-memory segment, a \
             file) failed with EMFILE: the process holds as many as its limit (`ulimit -n`) \
             allows. NCCL opens sockets per peer and channel, gloo per peer, and the DataLoader \
             passes tensors between processes as file descriptors under its default sharing \
             strategy."
        } else {
            "A file descriptor sent from another process did not arrive (Python's \
             multiprocessing: the DataLoader's workers pass each tensor so under its default \
             sharing strategy). The usual reason is the receiving process at its open-files \
             limit (`ulimit -n`); the line does not say so itself."
        };
        fix = "Raise the open-files limit where the ranks start (`ulimit -n 1048576` in the job \
               script; Docker: `--ulimit nofile=1048576:1048576`; Slurm: the limit of the \
               shell that runs srun, or `--propagate=NOFILE`). If the DataLoader's messages \
               name it, `torch.multiprocessing.set_sharing_strategy(\"file_system\")` also \
               stops workers from passing a descriptor per tensor."
            .to_owned();
    }
    if role == Role::Cause && proven(RULE_NCCL_NO_ALGORITHM) {
        fix = "Unset NCCL_ALGO and NCCL_PROTO (in the environment, a job script or \
               /etc/nccl.conf), or widen them to cover the collective and datatype named: the \
               setting leaves NCCL no algorithm for this call."
            .to_owned();
    }
    if role == Role::Cause && proven(RULE_HUNG_AT_EXIT_WITHOUT_DESTROY) {
        title = format!(
            "{} hung at exit: the program ended without destroy_process_group()",
            if ranks.is_empty() {
                "the ranks".to_owned()
            } else {
                who(&ranks)
            }
        );
        meaning = "The training had ended: PyTorch warned on exit that destroy_process_group() \
                   was not called, so the process groups were still alive when the interpreter \
                   shut down. Their teardown then hung, and ProcessGroupNCCL's heartbeat \
                   monitor found its watchdog thread stuck (inside an NCCL or CUDA call, such as \
                   a communicator's abort or an event's destruction, often with several groups \
                   torn down in a different order on different ranks). No collective timed out. \
                   This is not one of ddp-probe's failure categories.";
        fix = "Call `torch.distributed.destroy_process_group()` at the end of the program on \
               every rank (after the last collective and checkpoint, before exit), so the \
               groups are torn down while every rank is still there; with several groups \
               (tensor, expert parallel) destroy them all the same way on every rank. The \
               results written before the hang are complete."
            .to_owned();
    }
    if role == Role::Cause
        && category == Category::WorldSizeMismatch
        && PARALLEL_LAYOUT_RULES.iter().any(|r| proven(r))
    {
        title = "the program's parallel layout does not fit the number of ranks the job started"
            .to_owned();
        meaning = "The program checked the sizes it was configured with (tensor, pipeline, \
                   context, expert or data parallel sizes, a device mesh, a process group's \
                   size, the shards of a checkpoint or the ranks an inference engine was built \
                   for) against the world size the launcher gave it, and they do not fit: \
                   their product is larger than the world, or the world is no multiple of it. \
                   Every rank computes the same check, so all of them stop at start-up.";
        fix = "Start as many ranks as the layout needs (--nnodes × --nproc-per-node a multiple \
               of the model-parallel sizes' product, or equal to the mesh's), or change the \
               parallel sizes to fit the ranks there are. Check that every node joined: a node \
               count the launcher did not get (an empty PET_NNODES, a missing host in the \
               hostfile) gives a smaller world than the configuration assumes."
            .to_owned();
    }
    if role == Role::Cause && proven(crate::rules::RULE_SETTINGS_FOR_ANOTHER_WORLD) {
        title = "the batch sizes or the checkpoint were made for another number of ranks than \
                 the job started"
            .to_owned();
        meaning = "DeepSpeed checks what it was given against the world size: its config's \
                   train_batch_size must equal micro-batch per GPU × gradient accumulation \
                   steps × the number of ranks, and a ZeRO checkpoint holds optimizer state \
                   partitioned over the ranks that saved it. One of them was set up for \
                   another number of ranks, so every rank stops at start-up or at the load.";
        fix = "Start the number of ranks the config and checkpoint were made for (check that \
               every node joined), or fit them to this one: give only two of \
               train_batch_size, train_micro_batch_size_per_gpu and \
               gradient_accumulation_steps (DeepSpeed derives the third from the world size), \
               and load a ZeRO checkpoint on another world through DeepSpeed's universal \
               checkpoint (`ds_to_universal.py`, then `\"checkpoint\": {\"load_universal\": \
               true}`)."
            .to_owned();
    }
    if role == Role::Cause && all_joined_hang {
        let seq = detail_of(crate::rules::RULE_DESYNC_ALL_JOINED)
            .and_then(|d| d.split("collective #").nth(1))
            .and_then(|rest| rest.split_whitespace().next())
            .map(str::to_owned);
        title = format!(
            "every rank joined collective #{} and it did not finish: nobody is behind, the \
             collective itself hangs",
            seq.as_deref().unwrap_or("?")
        );
        meaning = "PyTorch's desync report (TORCH_NCCL_DESYNC_DEBUG=1) lists the ranks at the \
                   lowest collective number any rank is at, and names a rank that finished \
                   the one before and never joined it. Here no rank is named so: every rank \
                   issued this collective, so no code path, data or slow step held one back. \
                   What did not finish is the collective itself: the network between the \
                   nodes (InfiniBand, RoCE, EFA retries or a plugin), NCCL, or a GPU that \
                   stopped (an Xid); or a rank died inside it, which its own log says.";
        fix = "Look below the program: the ranks' NCCL_DEBUG=INFO output (the transport and the \
               network plugin each rank chose, and any NCCL WARN), `dmesg` on each node for \
               GPU Xid errors and NIC link flaps, and nccl-tests (all_reduce_perf) between \
               the same nodes. A run that completes with NCCL_NET=Socket (or \
               NCCL_IB_DISABLE=1), or with NCCL_P2P_DISABLE=1 on one node, locates the hang \
               in that transport. Raising the timeout does not help."
            .to_owned();
    }
    if role == Role::Cause && proven(RULE_LIGHTNING_LAUNCHER_SIZES) {
        title =
            "Lightning's Trainer and the launcher disagree on the number of processes".to_owned();
        meaning = "Lightning compares the Trainer's `devices` and `num_nodes` (and \
                   ModelParallelStrategy's parallel sizes) with the processes the launcher \
                   started (Slurm's tasks per node and nodes, torchrun's WORLD_SIZE) and stops \
                   when they differ: the processes would otherwise \
                   disagree on the world size and wait for ranks that never start.";
        fix = "Make the Trainer match what the launcher starts: under Slurm one task per \
               device (`#SBATCH --ntasks-per-node` equal to `devices`, `--nodes` equal to \
               `num_nodes`, and `--ntasks-per-node` rather than `--ntasks`); under torchrun \
               `devices` × `num_nodes` equal to --nproc-per-node × --nnodes; with \
               ModelParallelStrategy, `data_parallel_size` × `tensor_parallel_size` equal to \
               the world size. The HINT in the message gives the value the launcher has."
            .to_owned();
    }
    if category == Category::CudaOom && role == Role::Cause {
        let mut held: Vec<(String, String)> = Vec::new();
        for d in own.iter().filter_map(|s| s.detail.as_deref()) {
            for (id, amount) in crate::rules::gpu_processes_in(d) {
                if id == "this one" || !held.iter().any(|(h, _)| *h == id) {
                    held.push((id, amount));
                }
            }
        }
        let outside = own
            .iter()
            .filter_map(|s| s.detail.as_deref())
            .find_map(|d| {
                d.split("; ")
                    .find(|part| part.ends_with(crate::rules::HELD_OUTSIDE_THE_ALLOCATOR))
            })
            .map(str::to_owned);
        let shared = if gpu_held_by_others(&held) {
            let list = held
                .iter()
                .filter(|(id, _)| id != "this one")
                .map(|(id, amount)| format!("process {id}: {amount}"))
                .collect::<Vec<_>>()
                .join(", ");
            Some(format!(
                "on a GPU that more than one process was using ({list})"
            ))
        } else {
            outside.map(|o| format!("with {o} (another process on the GPU?)"))
        };
        if let Some(how) = shared {
            title = format!("{} ran out of GPU memory {how}", subject(&ranks));
            fix = GPU_SHARED_WITH_OTHER_PROCESSES_FIX.to_owned();
        }
    }
    let unresolved = |rule: &str| {
        rule == RULE_STORE_NAME_UNRESOLVED || rule == RULE_STORE_CLIENT_NAME_UNRESOLVED
    };
    if role == Role::Cause && own.iter().any(|s| unresolved(s.rule)) {
        let name = own
            .iter()
            .filter(|s| unresolved(s.rule))
            .find_map(|s| s.detail.clone())
            .unwrap_or_else(|| "MASTER_ADDR".to_owned());
        title = format!(
            "{} could not resolve the store's host name {name}",
            subject(&ranks)
        );
        meaning = "PyTorch's store client looked up the store's host (MASTER_ADDR, or the \
                   rendezvous endpoint) and the name did not resolve on this node, so the \
                   store could not be reached: a wrong or misspelt name, a name only some nodes \
                   know, or a DNS record that does not exist yet.";
        fix = "Use a host name every node resolves (`getent hosts NAME` on each), or rank 0's \
               IP address, for MASTER_ADDR / --master-addr / --rdzv-endpoint. On Kubernetes a \
               pod's DNS name is POD.SERVICE(.NAMESPACE.svc) under a headless service that \
               selects it: JobSet (v0.2 on) and the training operators name that service after \
               the job, and the name resolves only once the pod is ready unless the service \
               publishes not-ready addresses."
            .to_owned();
    }
    if role == Role::Cause && proven(crate::rules::RULE_NCCL_NET_PLUGIN_FAILED) {
        title = format!(
            "{} failed: NCCL could not initialise the network it was told to use",
            subject(&ranks)
        );
        meaning = "NCCL found no network it could initialise. Its own socket network loads \
                   wherever a socket interface exists (where none does, NCCL says so first, \
                   and that finding comes before this one), so only the network that NCCL_NET \
                   or NCCL_NET_PLUGIN forced was tried (often set by a container image's or a \
                   module's environment: `IB`, `gIB`, `AWS Libfabric`), and it did not load \
                   on this host. NCCL does not fall back from a forced network.";
        fix = "Find where NCCL_NET / NCCL_NET_PLUGIN come from (`env | grep NCCL`, the image's \
               /etc/profile.d, the module) and either make that network load (its plugin \
               library on LD_LIBRARY_PATH and built for this NCCL, `libibverbs` and \
               `/dev/infiniband` in the container, the HCAs present) or, where the job does \
               not need it (one node, no RDMA NICs), unset them or set NCCL_NET=Socket. \
               NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET shows why the plugin failed."
            .to_owned();
    }
    if role == Role::Cause && proven(crate::rules::RULE_GLOO_PEER_LOOPBACK) {
        title = format!(
            "{} could not connect to a peer at a loopback address: the peer's host name \
             resolves to loopback",
            subject(&ranks)
        );
        fix = "Make each node's host name resolve to the address the other nodes reach it at \
               (`getent hosts $(hostname)` on each node; in /etc/hosts replace the \
               `127.0.1.1 HOSTNAME` line that Ubuntu's and Debian's images write, or point it \
               at the node's LAN address), or set GLOO_SOCKET_IFNAME to the interface between \
               the nodes (`ip -br addr`), which gloo then binds and advertises instead."
            .to_owned();
    }
    if role == Role::Cause && proven(crate::rules::RULE_OFI_GPU_BUFFER_REFUSED) {
        title = format!(
            "{} failed: the aws-ofi-nccl plugin's libfabric refused to register GPU memory",
            subject(&ranks)
        );
        meaning = "NCCL's network plugin for AWS EFA (aws-ofi-nccl) registers the GPU buffers \
                   NCCL gives it with libfabric (`fi_mr_regattr`, type 2 = GPU memory), and the \
                   provider answered `invalid argument`: it does not accept that memory. The \
                   case on record (aws-ofi-nccl#584, AWS's maintainers) is NCCL 2.19 or later, \
                   whose buffers come from cuMem, against the libfabric of EFA installers \
                   before 1.29; an older NCCL on the same nodes works.";
        fix = "Match NCCL and libfabric: update the EFA installer (1.29 or later) on every node, \
               or run an NCCL 2.18 (a torch build that brings it), or set \
               FI_EFA_SET_CUDA_SYNC_MEMOPS=0. `fi_info --version` and the NCCL version in \
               NCCL_DEBUG=INFO's first lines show which pair a node has."
            .to_owned();
    }
    if proven(crate::rules::RULE_STORE_ADDRESS_UNREACHABLE) {
        title = format!(
            "{} could not reach the store's address: no route to it",
            subject(&ranks)
        );
        meaning = "The rank connected to the rendezvous store (MASTER_ADDR:MASTER_PORT) and \
                   the connection failed with No route to host or Network is unreachable: \
                   nothing refused it, the address is not reachable from this node. \
                   MASTER_ADDR resolves here to an address on a network this node is not on \
                   (a short host name that resolves to an admin or management network, a \
                   Kubernetes service that does not route the port, a launcher that passed \
                   another interface's address), or a firewall rejects the port (iptables' \
                   REJECT answers No route to host).";
        fix = "Set MASTER_ADDR to rank 0's address on the network the nodes share (its IP, or \
               the fully qualified name on that network), and check from the failing node \
               with `getent hosts MASTER_ADDR` and `nc -zv MASTER_ADDR MASTER_PORT`; open the \
               port in the firewall if the address is right."
            .to_owned();
    }
    if role == Role::Cause && proven(crate::rules::RULE_STORE_PING_MISMATCH) {
        title = format!(
            "{} reached something on the master port that is not this job's store",
            subject(&ranks)
        );
        meaning = "When a rank connects to the rendezvous store (MASTER_ADDR:MASTER_PORT), \
                   PyTorch's TCPStore client sends a number and expects the store to send it \
                   back, as every PyTorch store does. Another value came back: what listens \
                   at that address and port is another program (a service that uses the \
                   port), or MASTER_ADDR names another host than the one running rank 0.";
        fix = "On the host MASTER_ADDR names, see what holds the port (`ss -ltnp | grep \
               :PORT`), then give the job a port nothing else uses (`--master_port`, \
               MASTER_PORT; `ddp-probe run` picks a free one on one machine) and check that \
               MASTER_ADDR is the host of rank 0."
            .to_owned();
    }
    if role == Role::Cause && proven(crate::rules::RULE_NCCL_NVLINK_P2P_DISABLED) {
        title = format!(
            "{} failed: NCCL found peer-to-peer off between GPUs that NVLink connects",
            subject(&ranks)
        );
        meaning = "At set-up NCCL reads from NVML whether each pair of the node's GPUs can \
                   read and write each other's memory. For a pair that NVLink connects, NVML \
                   said no, which NCCL takes for a hardware fault: it stops with an unhandled \
                   CUDA error rather than send NVLink traffic through host memory. Usual \
                   reasons: an NVLink that is down (`dmesg` shows Xid errors for it), or a \
                   virtual machine whose GPUs were passed through without peer-to-peer.";
        fix = "Look at the links and the pairs: `nvidia-smi nvlink --status` (every link up), \
               `nvidia-smi topo -p2p r` and `-p2p w` (OK for every pair), `dmesg | grep -i \
               xid`; in a VM, ask for peer-to-peer between its GPUs. To run meanwhile: \
               NCCL_IGNORE_DISABLED_P2P=1, as NCCL's message says, or NCCL_P2P_DISABLE=1; \
               traffic between those GPUs then goes through host memory, slower."
            .to_owned();
    }
    if role == Role::Cause && proven(crate::rules::RULE_ACCELERATE_NO_P2P_GUARD) {
        title = format!(
            "{} stopped at accelerate's check: these GPUs have no peer-to-peer support and \
             NCCL's P2P and IB transports were not turned off",
            subject(&ranks)
        );
        meaning = "accelerate checks at start-up whether the GPUs can use NCCL's peer-to-peer \
                   transport. Two or more RTX 4000-series cards (older releases: RTX 3090 too) \
                   on an NVIDIA driver before 550.40.07 cannot, and NCCL's first collective \
                   would hang there; unless NCCL_P2P_DISABLE and NCCL_IB_DISABLE are both set, \
                   accelerate raises this error instead. `accelerate launch` sets them itself; \
                   torchrun, deepspeed and python do not.";
        fix = "Set NCCL_P2P_DISABLE=1 and NCCL_IB_DISABLE=1 in the job's environment (before \
               the launcher, or in the script before accelerate starts), or start the job with \
               `accelerate launch`. From driver 550.40.07 on, accelerate's check passes on \
               these cards (the driver reports their peer-to-peer support correctly)."
            .to_owned();
    }
    if role == Role::Cause
        && own
            .iter()
            .all(|s| s.rule == crate::rules::RULE_NCCL_PEER_ADDRESS_INVALID)
    {
        title = format!(
            "{} failed: the address NCCL had for a peer is no address (no IPv4 or IPv6 family)",
            subject(&ranks)
        );
        meaning = "NCCL connects to each peer at the address the peer published at set-up. \
                   This one has no address family: it was never filled in, which an \
                   NCCL_SOCKET_IFNAME naming an interface the host does not have leaves \
                   behind, or it was read with another layout than it was written in, which \
                   nodes running different NCCL versions do.";
        fix = "Check NCCL_SOCKET_IFNAME on every node against `ip -br addr` (an interface \
               each node has; a prefix such as `eth` or an exclusion such as `^docker,lo` \
               fits nodes that differ), and check that every node loads the same NCCL \
               (`python -c 'import torch; print(torch.cuda.nccl.version())'` on each; an \
               `nvidia-nccl-cu11` beside `nvidia-nccl-cu12`, or LD_LIBRARY_PATH pointing at \
               another libnccl). NCCL_DEBUG=INFO shows the interface and version each rank \
               uses."
            .to_owned();
    }
    if role == Role::Cause && proven(crate::rules::RULE_VLLM_KV_CACHE_TOO_SMALL) {
        title = format!(
            "{} could not start vLLM: its KV cache does not fit in the GPU memory it was given",
            subject(&ranks)
        );
        meaning = "vLLM's engine takes its share of each GPU (`gpu_memory_utilization`), loads \
                   the weights, runs one profiling batch and keeps the rest for the KV cache. \
                   At start-up it checks that the rest holds at least one sequence of \
                   `max_model_len` tokens; here it did not, so the engine stopped before \
                   serving or generating. Where a trainer shares the GPUs (verl, OpenRLHF, \
                   TRL's colocated vLLM), the trainer's memory is outside that share.";
        fix = "Give vLLM more of the GPU (raise `gpu_memory_utilization`, e.g. verl's \
               `rollout.gpu_memory_utilization`, if the trainer's part allows), or ask for less: \
               a lower `max_model_len` (the message estimates the longest that fits), fewer \
               `max_num_seqs`, a larger tensor-parallel size to spread the weights, or a \
               quantized model or KV cache (`kv_cache_dtype=fp8`)."
            .to_owned();
    }
    if role == Role::Cause && proven(RULE_RAY_MEMORY_MONITOR) {
        title = "Ray's memory monitor killed a worker: the node ran low on host memory (RAM, \
                 not GPU memory)"
            .to_owned();
        meaning = "Ray watches each node's memory and, above its threshold \
                   (RAY_memory_usage_threshold, 0.95 of the node's RAM by default), kills the \
                   most recently started worker before the kernel's out-of-memory killer \
                   would. Every process on the node counts, another job's too. The exception \
                   is named OutOfMemoryError, but the GPU's memory is not involved.";
        fix = "Find what grows in host memory on that node (Ray's message lists the largest \
               processes; raylet.out has each kill): fewer DataLoader workers or a smaller \
               prefetch, no per-worker copy of the dataset, checkpoints loaded with \
               `mmap=True`, fewer workers per node or a node with more RAM. Raising \
               RAY_memory_usage_threshold only hands the kill to the kernel's OOM killer."
            .to_owned();
    }
    if role == Role::Cause && proven(RULE_RAY_WORKER_CONNECTION_LOST) {
        title = "a Ray worker died without an error of its own (its connection to Ray closed): \
                 most likely SIGKILL from the host's out-of-memory killer"
            .to_owned();
        meaning = "The raylet lost its connection to a worker process that had not reported \
                   an error: the process was killed (SIGKILL, the kernel's out-of-memory \
                   killer being the usual sender; `ray stop --force`) or crashed natively \
                   (SIGSEGV). The errors of the actors and tasks that waited on it \
                   (ActorDiedError, RayActorError) are consequences.";
    }
    if proven(RULE_RAY_WORKER_SIGTERM) && category == Category::LauncherInterrupted {
        title =
            "a Ray worker was stopped by SIGTERM (Ray reports its exit code as None)".to_owned();
        meaning = "Ray's workers turn SIGTERM into a Python SystemExit without a code, which Ray \
                   reports as \"Worker exits with an exit code None\" (on Kubernetes adding \
                   that the pod's memory limit may have been exceeded). The sender is not in \
                   the log: the kubelet (memory pressure, an eviction, the pod deleted), `ray \
                   stop`, or Ray stopping the job's other workers after one of them failed.";
    }
    if role == Role::Cause && proven(RULE_KUBELET_EVICTED_MEMORY) {
        title = "Kubernetes evicted the pod: the node ran low on memory".to_owned();
        meaning = "The kubelet stops pods when its node's memory falls below the eviction \
                   threshold, starting with those using most beyond their memory request: the \
                   ranks were stopped from outside because host RAM ran short, the job's or \
                   another pod's.";
        fix = "Give the training containers a memory request equal to their limit (the \
               Guaranteed class is evicted last) sized to what the ranks use, lower their host \
               memory (fewer DataLoader workers, smaller prefetch, no per-rank dataset copy), \
               or run on nodes with more RAM; `kubectl describe pod` and the node's events \
               show the eviction."
            .to_owned();
    }
    if role == Role::Cause && proven(RULE_KUBELET_EVICTED_STORAGE) {
        title = "Kubernetes evicted the pod: its disk (ephemeral storage) ran over".to_owned();
        meaning = "The kubelet stops pods when the node's disk runs low or a pod writes more \
                   to its container layers, logs and emptyDir volumes than its \
                   ephemeral-storage limit: the ranks were stopped from outside, not by an \
                   error of their own.";
        fix = "Write checkpoints, caches (HF_HOME, TORCH_HOME, the compile caches) and large \
               logs to a persistent volume rather than the container's own disk, or raise the \
               pod's ephemeral-storage limit; `kubectl describe pod` shows the message."
            .to_owned();
    }
    if role == Role::Cause && proven(RULE_POD_UNSCHEDULABLE) {
        title =
            "Kubernetes could not place a pod of the job, so its ranks never started".to_owned();
        meaning = "The scheduler found no node for a pod of the job (not enough free GPUs, CPU \
                   or memory, a node selector or taint that no node matches): that pod's \
                   ranks never started, and the ranks that did wait for them in the rendezvous \
                   until it times out.";
        fix = "Ask for what the cluster can give at once (GPUs per pod × pods, within one \
               node's GPUs per pod), free the GPUs other pods hold, or fix the node selector, \
               affinity or tolerations; `kubectl describe pod` lists the scheduler's reason \
               per node. A gang scheduler (Volcano, Kueue) starts all of a job's pods or none."
            .to_owned();
    }
    if role == Role::Cause && proven("shared_tensor_sender_gone") {
        title = "a DataLoader worker that sent this rank a tensor had already ended".to_owned();
        meaning = "DataLoader workers hand batches to the main process through shared memory: \
                   the receiver connects to the sender (the worker, or torch_shm_manager) to \
                   get the memory's handle. That connection was refused because the sender had \
                   ended. The store and the other ranks have nothing to do with it.";
        fix = "Find why the worker ended: its own exception earlier in the log, `dmesg` for the \
               OOM killer (workers multiply host memory), or too many open files (`ulimit -n`; \
               torch.multiprocessing.set_sharing_strategy('file_system') uses fewer \
               descriptors). Fewer workers (num_workers) make both less likely."
            .to_owned();
    }
    if role == Role::Cause && proven("pin_memory_host_alloc_failed") {
        title = "pinning a batch in page-locked host memory failed (pin_memory=True)".to_owned();
        meaning = "With pin_memory=True the DataLoader copies each batch into page-locked host \
                   memory, which CUDA allocates (cudaHostAlloc): its \"out of memory\" there is \
                   the host's memory running short, not the GPU's.";
        fix = "Set pin_memory=False, or lower num_workers or prefetch_factor (fewer batches in \
               flight); check the host's free memory and what else holds it (`free -g`, other \
               ranks on the node). Lowering the batch size for the GPU does not address it."
            .to_owned();
    }
    if role == Role::Cause && proven(crate::rules::RULE_NCCL_RAS_BEHIND) {
        title =
            "NCCL's RAS found a rank behind the others in a communicator's collectives".to_owned();
        meaning = "NCCL's reliability service (RAS) compared the ranks of a communicator: the \
                   rank named launched fewer collectives than the others, which wait for it \
                   inside the next one. It is stuck or busy elsewhere (its own hang, a long \
                   step, a branch the others did not take), or it died.";
    }
    if role == Role::Cause && proven(crate::rules::RULE_NCCL_RAS_DEAD) {
        title = "NCCL's RAS found a process of the job dead (unreachable)".to_owned();
        meaning = "NCCL's reliability service (RAS) lost contact with a process of the job: it \
                   died, or its node or the network to it did. The report names its host, PID \
                   and GPUs; the other ranks fail or hang after it.";
        fix = "Look at that process's own output and its node (`dmesg`, the scheduler's log) \
               for why it ended: an OOM kill, a GPU fault (Xid), a node failure."
            .to_owned();
    }
    if role == Role::Cause
        && proven(crate::rules::RULE_NCCL_RAS_MISSING)
        && !proven(crate::rules::RULE_NCCL_RAS_DEAD)
    {
        title = format!(
            "NCCL's RAS got no data from {}: stopped, dead or unreachable",
            if ranks.is_empty() {
                "a process of the job".to_owned()
            } else {
                subject(&ranks)
            }
        );
        meaning = "NCCL's reliability service (RAS) could not collect a process's communicator \
                   data (INCOMPLETE). RAS answers from a thread of its own, so a rank that is \
                   only busy or blocked still answers: this one was stopped, died, or its node \
                   or the network to it went. After 60 s RAS declares it DEAD.";
        fix = "Rerun the RAS query (`ncclras`): DEAD confirms the process is gone. Then look at \
               that process's own output and its node (`dmesg`, the scheduler's log) for why: \
               an OOM kill, a GPU fault (Xid), a node failure."
            .to_owned();
    }
    if proven(RULE_MPI_LOST_DAEMON) {
        title = "mpirun lost contact with the daemon of a node of the job".to_owned();
        meaning = "Open MPI's launcher (mpirun, prterun) runs one daemon per node, started over \
                   ssh or the batch system, and ends the whole job when it loses one: the node \
                   went down, the network to it broke, the daemon died, or it never started \
                   (ssh refused or failed). The ranks on that node had no error of their own.";
        fix = "Look at what happened to that node (the HNP report names it: `Remote daemon: ... \
               on node X`): is it up, does `ssh X` work without a password from the launching \
               node, and do its kernel and batch-system logs show a failure at that time? \
               Ranks' own errors, if any, come first."
            .to_owned();
    }
    if role == Role::Cause && proven(RULE_RAY_WORKERS_UNSCHEDULED) {
        title = "Ray could not place the training workers, so they never started".to_owned();
        meaning = "Ray Train reserves the resources of every worker at once (a placement \
                   group) before it starts them; the cluster did not have them free within the \
                   timeout (not enough GPUs or CPUs free, a ScalingConfig no node can satisfy, \
                   or an autoscaler still adding nodes), so no worker started and nothing of \
                   the training ran.";
        fix = "Ask for what the cluster can give at once (num_workers × resources_per_worker, \
               each worker's share within one node), free what other jobs hold, or wait for the \
               autoscaler with a longer timeout (TRAIN_PLACEMENT_GROUP_TIMEOUT_S, or \
               RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S on Ray Train v2); `ray status` shows \
               what is free and what is pending."
            .to_owned();
    }
    if role == Role::Cause && proven(RULE_NCCL_SHM_CUDA_FAILURE) {
        title = "NCCL's shared-memory transport failed a CUDA call".to_owned();
        meaning = "NCCL passes data between the ranks of one node through shared buffers. \
                   Since NCCL 2.23 it allocates them with the CUDA driver's cuMem API and each \
                   rank imports and maps the others' buffers; that import fails between GPUs \
                   that cannot access each other (no peer access over this PCIe topology) or \
                   when each process sees only its own GPU (one device in CUDA_VISIBLE_DEVICES, \
                   as Ray and some schedulers set it). It is not the P2P transport: \
                   NCCL_P2P_DISABLE=1 does not change it.";
        fix = "Run with NCCL_CUMEM_HOST_ENABLE=0 (NCCL then shares plain host memory for \
               these buffers, as before 2.23) or NCCL_CUMEM_ENABLE=0 (cuMem off altogether). \
               NCCL_SHM_DISABLE=1 confirms it (the ranks then talk over the network \
               transport, slower)."
            .to_owned();
    }
    if role == Role::Cause && proven(RULE_IN_INIT_PROCESS_GROUP) {
        let asked = own
            .iter()
            .filter(|s| s.rule == RULE_IN_INIT_PROCESS_GROUP)
            .find_map(|s| s.expected_world);
        match (category, asked) {
            (Category::WorldSizeMismatch, Some(n)) => {
                title = format!(
                    "init_process_group asks for {n} ranks (`world_size={n}` in the program), \
                     and {} waited for the others",
                    who(&ranks)
                );
                fix = "Let init_process_group take the world size and rank from the launcher: \
                       with the default `init_method=\"env://\"` leave out `world_size` and \
                       `rank` (torchrun and ddp-probe run set WORLD_SIZE and RANK), or start as \
                       many ranks as the program asks for (--nproc-per-node × --nnodes)."
                    .to_owned();
            }
            _ => {
                title = format!(
                    "{} waited in init_process_group for ranks that never joined",
                    who(&ranks)
                );
            }
        }
    }
    if role == Role::Cause
        && (proven(RULE_STORE_UNREACHABLE) || proven(RULE_STORE_UNREACHABLE_ONE_NODE))
    {
        let at = own
            .iter()
            .find_map(|s| s.address.as_deref())
            .unwrap_or("MASTER_ADDR:MASTER_PORT")
            .to_owned();
        title = format!("{} could not connect to the store at {at}", who(&ranks));
        meaning = STORE_UNREACHABLE_MEANING;
        fix = if proven(RULE_STORE_UNREACHABLE_ONE_NODE) {
            STORE_UNREACHABLE_ONE_NODE_FIX
        } else {
            STORE_UNREACHABLE_FIX
        }
        .to_owned();
    }
    // Only Slurm's plain cancellation said so: what it is, and how to tell which it was.
    if category == Category::LauncherInterrupted && own.iter().all(|s| s.rule == "slurm_cancelled")
    {
        title = "Slurm cancelled the job step, with no reason given".to_owned();
        meaning = "Slurm's step daemon cancelled the step without naming a time limit, a \
                   preemption or a node failure: someone ran scancel, or srun ended the step \
                   because one of its tasks failed (an error exit, or the OOM killer: srun's \
                   \"task N: Out Of Memory\").";
        fix = "See whether a task failed before the cancellation: its error in this log or in \
               the tasks' own logs, `sacct -j JOBID --format=JobID,State,ExitCode,MaxRSS` (a \
               task OUT_OF_MEMORY or FAILED is the cause). If none did, the step was cancelled \
               from outside (scancel): nothing in the job to fix."
            .to_owned();
    }
    if role == Role::Cause && proven(RULE_ABORTED_WITHOUT_AN_ERROR) {
        title = format!(
            "{} {} aborted with no error of its own, most likely at exit (gloo's teardown)",
            who(&ranks),
            was(&ranks)
        );
        meaning = ABORTED_WITHOUT_AN_ERROR_MEANING;
        fix = ABORTED_WITHOUT_AN_ERROR_FIX.to_owned();
    }
    if role == Role::Cause && proven(RULE_ABORTED_AFTER_TRAINING) {
        title = format!(
            "{} {} aborted at exit after the training finished (gloo's teardown)",
            who(&ranks),
            was(&ranks)
        );
        meaning = ABORTED_AFTER_TRAINING_MEANING;
        fix = ABORTED_AFTER_TRAINING_FIX.to_owned();
    }
    // DDP's Join with throw_on_early_termination=True: the rank out of batches and the others
    // raised when it ran out; the program uses Join already, so its fix is not to add it.
    if category == Category::UnevenInputs
        && (proven(crate::rules::RULE_JOIN_EXHAUSTED) || proven(crate::rules::RULE_JOIN_THROWN))
    {
        title = format!(
            "{} ran out of input batches first, and DDP's Join \
             (throw_on_early_termination=True) stopped every rank",
            subject(&ranks)
        );
        meaning = JOIN_THROWN_MEANING;
        fix = JOIN_THROWN_FIX.to_owned();
    }
    if role == Role::Cause && proven(RULE_PORT_TAKEN_BY_SPAWNED) {
        meaning = PORT_TAKEN_BY_SPAWNED_MEANING;
        fix = PORT_TAKEN_BY_SPAWNED_FIX.to_owned();
    }
    // A rank that left its loop with its data not seen to run out: the title says what the
    // trace shows, and the fix covers a condition only that rank met.
    let hints: BTreeSet<&str> = own
        .iter()
        .filter_map(|s| s.predicate_hint.as_deref())
        .collect();
    if let [hint] = Vec::from_iter(hints).as_slice() {
        title = format!("{} {hint}", subject(&ranks));
    }
    if category == Category::UnevenInputs
        && role == Role::Cause
        && !proven(RULE_RAN_OUT_OF_DATA)
        && own.iter().all(|s| s.fix_hint.is_none())
    {
        if proven(RULE_LEFT_MID_STEP) {
            meaning = LEFT_MID_STEP_MEANING;
            fix = format!("Decide on every rank together {LEFT_ON_ITS_OWN_FIX}");
        } else if proven(RULE_FINISHED_EARLY) || proven(RULE_EXITED_EARLY) {
            meaning = LEFT_BETWEEN_STEPS_MEANING;
            fix = format!(
                "{fix} If it stopped on a condition of its own (its last lines, quoted here, say \
                 why), decide on every rank together {LEFT_ON_ITS_OWN_FIX}"
            );
        }
    }
    // The line that names what was wrong, when one does (a traceback's code line
    // `raise _env_error(env_var)` and its exception line name the same mistake).
    let mistakes = own.iter().filter_map(|s| {
        crate::rules::PROGRAM_MISTAKES
            .iter()
            .find(|m| m.rule == s.rule)
            .map(|m| (m, s.detail.as_deref()))
    });
    let mistake = mistakes
        .clone()
        .find(|(_, detail)| detail.is_some())
        .or_else(|| mistakes.clone().next());
    if let (Role::Cause, Some((m, detail))) = (role, mistake) {
        let crashed = match (ranks.as_slice(), category) {
            ([], Category::RankCrashed) => "a rank crashed".to_owned(),
            (_, Category::RankCrashed) => format!("{} crashed", who(&ranks)),
            ([], _) => "a rank failed".to_owned(),
            _ => format!("{} failed", who(&ranks)),
        };
        title = format!(
            "{crashed}: {}",
            m.title.replace("{}", detail.unwrap_or(m.unnamed))
        );
        meaning = m.meaning;
        fix = m.fix.to_owned();
        // The exception line is the evidence; "Seen:" would repeat it.
        details.clear();
    }
    if category == Category::CollectiveMismatch
        && role == Role::Cause
        && proven(crate::rules::DDP_MODEL_DIFFERS_RULE)
    {
        let what = detail_of(crate::rules::DDP_MODEL_DIFFERS_RULE);
        // DDP compares every rank's model with rank 0's: one other rank named built its own.
        let built = match ranks.as_slice() {
            [] => "the ranks built different models".to_owned(),
            [r] if *r != 0 => format!("rank {r} built another model than rank 0"),
            _ => format!("{} built different models", who(&ranks)),
        };
        title = match what {
            Some(w) => format!("{built}: {}", sanitize(w, 100)),
            None => built,
        };
        meaning = MODEL_DIFFERS_MEANING;
        fix = MODEL_DIFFERS_FIX.to_owned();
    }
    if category == Category::UnusedParameters
        && proven(crate::rules::PARAMETER_READY_TWICE_RULE)
        && !proven("unused_parameters")
    {
        let what = detail_of(crate::rules::PARAMETER_READY_TWICE_RULE);
        let done = "marked a parameter's gradient ready twice in one backward";
        title = match (ranks.as_slice(), what) {
            ([], Some(w)) => format!("DDP {done}: {w}"),
            ([], None) => format!("DDP {done}"),
            (_, Some(w)) => format!("{} {done}: {w}", who(&ranks)),
            (_, None) => format!("{} {done}", who(&ranks)),
        };
        meaning = READY_TWICE_MEANING;
        fix = READY_TWICE_FIX.to_owned();
    }
    if category == Category::UnusedParameters
        && proven(crate::rules::RULE_MEGATRON_BUCKET_NOT_ISSUED)
        && !proven("unused_parameters")
    {
        let what = detail_of(crate::rules::RULE_MEGATRON_BUCKET_NOT_ISSUED);
        let base = format!(
            "{}: Megatron's gradient reduction of a bucket never started",
            if ranks.is_empty() {
                "a rank".to_owned()
            } else {
                who(&ranks)
            }
        );
        title = match what {
            Some(w) => format!("{base} ({w})"),
            None => base,
        };
        meaning = "Megatron-LM's DDP with overlap_grad_reduce starts a bucket's all-reduce \
                   (or reduce-scatter) from its gradient hooks, once every parameter of the \
                   bucket has had as many gradients as in the first batch. Some parameters \
                   that require gradients got none this iteration (used in the first batch \
                   only, or defined and never used in forward), or one got a different number, \
                   so the bucket's communication was never issued and the end of backward \
                   found no handle to wait for.";
        fix = "Make every parameter that requires a gradient take part in each forward pass, or \
               set requires_grad=False on those that do not (new modules that the forward does \
               not call, a frozen part of the model). Running without --overlap-grad-reduce \
               reduces every bucket at the end of backward and gives the unused parameters \
               zero gradients instead of failing."
            .to_owned();
    }
    let oom_proven = proven(manifest::RULE_OOM_CONFIRMED) || proven(RULE_WORKER_OOM_CONFIRMED);
    let confidence = confidence_of(role, &own, &ranks, oom_proven);
    let to_confirm = (confidence != Confidence::High).then(|| {
        if category == Category::RendezvousTimeout
            && (proven("store_based_barrier_wait") || proven("store_based_barrier"))
        {
            // Some ranks reached the barrier: the store answers, the address is right.
            STORE_BARRIER_CONFIRM.to_owned()
        } else if blind_hang {
            BLIND_HANG_CONFIRM.to_owned()
        } else if all_joined_hang {
            "every rank's NCCL_DEBUG=INFO output (the transport and network plugin chosen, any \
             NCCL WARN) and `dmesg` on each node (GPU Xid errors, NIC link flaps); a rank's own \
             log for an error inside the collective"
                .to_owned()
        } else if proven(RULE_RAY_WORKER_SIGTERM) {
            "`kubectl describe pod` of the worker's pod (`Reason: OOMKilled` or `Evicted`, the \
             node's events) and the other workers' logs (`/tmp/ray/session_latest/logs/`) for \
             the first failure"
                .to_owned()
        } else if proven(RULE_RAY_WORKER_CONNECTION_LOST) {
            "`dmesg -T | grep -i -e oom -e 'killed process'` on the worker's node; the worker's \
             own log (`/tmp/ray/session_latest/logs/worker-*.err` and \
             `python-core-worker-*.log`) shows a segmentation fault or a CUDA error if it \
             crashed instead"
                .to_owned()
        } else if proven(crate::rules::RULE_OFI_GPU_BUFFER_REFUSED) {
            "the libfabric version (`fi_info --version`, the EFA installer's) and NCCL's (the \
             first lines of NCCL_DEBUG=INFO) on each node; the same job with an NCCL 2.18 or \
             FI_EFA_SET_CUDA_SYNC_MEMOPS=0"
                .to_owned()
        } else if proven(RULE_HUNG_AT_EXIT_WITHOUT_DESTROY) {
            "`py-spy dump --native --pid PID` of a hung rank (the call its exit waits in), and \
             whether the hang goes away with destroy_process_group() at the end"
                .to_owned()
        } else {
            category.to_confirm().to_owned()
        }
    });
    let mut explanation = meaning.to_owned();
    if !details.is_empty() {
        explanation.push_str(" Seen: ");
        explanation.push_str(&details.join("; "));
        if !explanation.ends_with('.') {
            explanation.push('.');
        }
    }
    Draft {
        first_order: own.iter().map(|s| s.order).min().unwrap_or(u64::MAX),
        hardware_fault: own
            .iter()
            .any(|s| s.rule == crate::rules::RULE_GPU_HARDWARE_FAULT),
        worker_lost_silently: !own.is_empty()
            && own
                .iter()
                .all(|s| s.rule == RULE_RAY_WORKER_CONNECTION_LOST),
        finding: Finding {
            category,
            role,
            ranks,
            observed_by,
            title,
            explanation,
            evidence,
            evidence_omitted,
            confidence,
            to_confirm,
            fix,
            doc: category.doc_path(),
        },
    }
}

/// Observations from diagnostic tools' output pasted into a log
/// (`tool_output.rs`): py-spy stacks with one process outside the collectives
/// the others wait in, and peer-to-peer copies far slower than copies through
/// the host in CUDA's `p2pBandwidthLatencyTest`.
fn tool_output_signals(
    shape: &crate::shape::LogShape,
    explained: bool,
    p2p_off: bool,
    opts: &Options,
) -> Vec<Signal> {
    let mut out = Vec::new();
    if let Some(picture) = shape.stacks.picture() {
        let behind = &picture.elsewhere;
        // Most wait in a collective, a few are elsewhere: those are the ones waited for.
        let one_behind =
            picture.waiting > 0 && !behind.is_empty() && behind.len() < picture.waiting;
        // Only the dump of a process waiting for its DataLoader's workers: in a hang,
        // the rank that never reaches the collective (weaker: the others are not shown).
        let only_data_loader =
            picture.waiting == 0 && !behind.is_empty() && behind.iter().all(|p| p.data_loader);
        if !explained && (one_behind || only_data_loader) {
            let (rule, role) = if one_behind {
                ("stacks_one_process_elsewhere", Role::Cause)
            } else {
                ("stack_waits_for_data_loader", Role::Symptom)
            };
            let mut s = Signal::standalone(rule, Category::CollectiveTimeout, role);
            let first = &behind[0];
            let what = if first.data_loader {
                "waits for its DataLoader's workers"
            } else {
                "is elsewhere"
            };
            s.detail = Some(if one_behind {
                format!(
                    "py-spy's stacks: {} of {} main threads wait in {}, {} {what} ({}): the \
                     others wait for it",
                    picture.waiting,
                    picture.waiting + behind.len(),
                    picture.collectives.join(", "),
                    if behind.len() == 1 { "one" } else { "the rest" },
                    first.frames.join(" ← "),
                )
            } else {
                format!(
                    "py-spy's stack of a main thread that {what} ({}): in a hang, the \
                     process that never reaches the collective the others wait in",
                    first.frames.join(" ← "),
                )
            });
            s.evidence = behind
                .iter()
                .flat_map(|p| p.evidence.iter().cloned())
                .take(opts.max_evidence)
                .collect();
            if first.data_loader {
                s.fix_hint = Some(crate::process_waits::fix_unlisted(
                    "The process whose main thread waits in the DataLoader",
                ));
            }
            out.push(s);
        }
    }
    if let Some((on, off)) = shape.p2p_test.blocked() {
        if !explained && !p2p_off {
            let mut s =
                Signal::standalone("p2p_bandwidth_test_blocked", Category::P2pHang, Role::Cause);
            s.detail = Some(format!(
                "CUDA's p2pBandwidthLatencyTest: copies between GPUs run at {on:.1} GB/s with \
                 peer-to-peer on and {off:.1} GB/s through the host: peer-to-peer traffic is \
                 blocked or rerouted (PCIe ACS, the IOMMU)"
            ));
            s.evidence.extend(shape.p2p_test.evidence.clone());
            out.push(s);
        }
    }
    out
}

/// Rules of a program's own check of its parallel layout against the world size (torch's
/// DeviceMesh and subgroups, Megatron-LM, transformers), whose finding says so instead of
/// "the ranks disagreed".
const PARALLEL_LAYOUT_RULES: &[&str] = &[
    "device_mesh_larger_than_world",
    "parallel_layout_vs_world",
    "world_not_divisible_by_model_parallel",
    crate::rules::RULE_WORLD_SIZE_CHECK_WORDED,
];

/// A hang nothing else explains on a host where RCCL warned that the IOMMU is not in
/// passthrough mode.
const IOMMU_WARNED_DURING_HANG: &str = "iommu_warned_during_hang";

/// Rules that read a problem from what usually goes with it (a signal, an
/// exit code, a generic error code or crash marker), not from a message that
/// names it.
const INDIRECT_RULES: &[&str] = &[
    // A DataLoader worker's kill whose signal name the line lost: SIGKILL most often, but a bus
    // error or a native crash read the same.
    crate::rules::RULE_WORKER_SIGNAL_CUT,
    // An error that names the world size beside a comparison, in words no rule reads.
    crate::rules::RULE_WORLD_SIZE_CHECK_WORDED,
    // FSDP's warning that a rank's order changed: a hang or wrong result may follow, or not.
    crate::rules::RULE_FSDP_ORDER_CHANGED,
    // A NIC's fault in a kernel log that may predate the job.
    crate::rules::RULE_NIC_KERNEL_FAULT,
    // A parameter without a gradient in ZeRO's reduction: unused, or frozen late.
    crate::rules::RULE_ZERO_NONE_GRADIENT,
    // PyTorch's hint that follows a CUDA error, without the error.
    crate::rules::RULE_CUDA_ERROR_HINT,
    // A first collective's timeout on one node is mostly GPU peer-to-peer traffic, but a rank
    // still starting past the timeout, or a transport's other failure, reads the same.
    "first_collective_timed_out",
    // RCCL's advice names the IOMMU as a cause of hangs; that it caused this one, the line
    // cannot say.
    IOMMU_WARNED_DURING_HANG,
    // A store ping answered with another value: another program on the port, or MASTER_ADDR
    // naming another host; the line does not say which.
    crate::rules::RULE_STORE_PING_MISMATCH,
    // EINVAL from libfabric for a GPU buffer: one recorded cause (NCCL against an older
    // libfabric), but a generic answer.
    crate::rules::RULE_OFI_GPU_BUFFER_REFUSED,
    // Neuron's question whether EFA is enabled: a single-instance run that never uses EFA
    // prints it too; the job failing over it is the next line's ("Unable to run
    // multi-instance workload").
    crate::rules::RULE_NEURON_OFI_INIT_FAILED,
    // fairseq's message names two ways its workers fall out of sync: the one it files under
    // (a worker's epoch ended early) and a worker out of memory.
    "workers_out_of_sync",
    // Composer's warning names the rank that trained no batch; whether the others then waited
    // for it, the warning cannot say (it is printed before the job goes on or ends).
    crate::rules::RULE_NO_BATCHES_ON_RANK,
    // accelerate's batch-size finder swallowed the out-of-memory errors it retried after; which
    // memory (the GPU's, the CPU allocator's, cuDNN's workspace) its line does not say.
    crate::rules::RULE_BATCH_SIZE_FINDER_EXHAUSTED,
    // cuBLAS's handle and cuDNN's algorithms fail so for lack of GPU memory most often, and
    // after an earlier kernel's fault too.
    crate::rules::RULE_GPU_LIBRARY_SETUP_FAILED,
    // Symmetric memory's refusal and the intra-node all-reduce's warning say two ranks share a
    // GPU, not which: the warning alone does not stop the job.
    crate::rules::RULE_OVERLAPPING_DEVICES,
    "ranks_announced_twice",
    "progress_totals_differ",
    "nccl_tests_stalled_on_one_node",
    "stacks_one_process_elsewhere",
    "stack_waits_for_data_loader",
    "p2p_bandwidth_test_blocked",
    "traceback_cut_in_set_device",
    "log_ends_after_nccl_setup_on_one_node",
    "logged_calls_differ",
    // Ranks whose own timeouts were raised in different collectives are out of step; whether
    // a branch or uneven data put them there, their tracebacks do not say.
    TRACEBACKS_COLLECTIVES_DIFFER,
    // PyTorch's desync report and flight-recorder analyzer name the rank that never joined
    // the collective, not why: its own words are "the lagging/dead/mismatched ranks" (behind,
    // dead, or on another path with a different collective).
    "desync_report_lagging",
    // Every rank inside one collective: the transport, NCCL or a GPU, which the line does not
    // tell apart.
    crate::rules::RULE_DESYNC_ALL_JOINED,
    // Ray Train names the workers that never joined, not why.
    crate::rules::RULE_RAY_TRAIN_COLLECTIVE_TIMEOUT,
    // Horovod's stall inspector names the missing ranks, not why.
    crate::rules::RULE_HOROVOD_STALL,
    // Open MPI's word that a process failed, without the process's own error: which it was
    // is in that rank's output.
    "mpi_rank_failed",
    // A truncated message: ranks disagreeing on what they exchange, or a program's own
    // mismatched point-to-point calls.
    crate::rules::RULE_MPI_TRUNCATE,
    // fairseq's heartbeat saw no progress, not where.
    crate::rules::RULE_FAIRSEQ_HEARTBEAT,
    // Composer recovers from an OOM it observes when its microbatch size is 'auto'.
    crate::rules::RULE_COMPOSER_OOM_OBSERVED,
    // NCCL's RAS: unreachable is dead, or its node or network; behind, not why.
    crate::rules::RULE_NCCL_RAS_DEAD,
    crate::rules::RULE_NCCL_RAS_BEHIND,
    crate::rules::RULE_NCCL_RAS_MISSING,
    "fr_trace_missing_ranks",
    "nccl_system_error_one_node",
    "nccl_system_error_unshown_nodes",
    "first_collective_stuck_everywhere",
    // Why the teardown hung (which call, which group) the heartbeat's line does not say.
    RULE_HUNG_AT_EXIT_WITHOUT_DESTROY,
    "nccl_init_invalid_argument",
    "nccl_init_invalid_usage",
    // CUDA says another process holds the GPU, not which: a second rank, the parent, another job.
    "cuda_devices_unavailable",
    "sigkill_exit",
    // vLLM's engine core exit codes: -9 is a SIGKILL, as above.
    "vllm_engine_core_sigkill",
    RULE_RAY_WORKER_CONNECTION_LOST,
    // c10d warns and retries while a name does not resolve yet (a pod whose DNS record comes
    // with its readiness): the job failed there only if nothing later in the log says otherwise.
    RULE_STORE_NAME_UNRESOLVED,
    RULE_STORE_CLIENT_NAME_UNRESOLVED,
    // On one node a loopback address works: a refusal there is a peer not listening.
    crate::rules::RULE_GLOO_PEER_LOOPBACK,
    crate::rules::RULE_NCCL_PEER_LOOPBACK,
    // A peer address with no family: a missing interface or another NCCL version on a node.
    crate::rules::RULE_NCCL_PEER_ADDRESS_INVALID,
    // A tensor's shared-memory file not written, the reason cut off.
    crate::rules::RULE_TORCH_SHM_WRITE_FAILED,
    // A peer's CUDA IPC handle not mapped: hosts sharing a name, or peer-to-peer not allowed.
    crate::rules::RULE_CUDA_IPC_OPEN_FAILED,
    // UCX says no transport reached the peer, not why (devices, UCX_TLS, the network).
    crate::rules::RULE_UCX_NO_TRANSPORT,
    // A bootstrap message of another size: another NCCL release on a peer, or a stray connection.
    crate::rules::RULE_NCCL_BOOTSTRAP_TRUNCATED,
    "sigbus_exit",
    "dataloader_worker_bus_error",
    crate::rules::RULE_DESCRIPTOR_NOT_RECEIVED,
    "shell_killed",
    "shell_bus_error",
    "shell_segfault",
    "shell_aborted",
    "manifest_rank_end",
    "elastic_failure",
    "elastic_worker_failed",
    "nccl_error_code",
    crate::rules::RULE_NCCL_RETURN_CHAIN,
    // NCCL's `unhandled cuda error` without its `Cuda failure '...'` line: which CUDA call
    // failed, NCCL's own or a kernel's error caught at NCCL's, is not said.
    "nccl_unhandled_cuda",
    "crash_marker",
    "launcher_consequence",
    RULE_ABORTED_WITHOUT_AN_ERROR,
];

/// Whether the processes an out-of-memory message lists show other processes holding a
/// real share of the GPU: at least 1 GiB and a fifth of what the listed processes hold. The
/// failing process is "this one" when PyTorch could tell; inside a container NVML's PIDs are
/// the host's and it is one of the numbered ones, so then the second largest counts as the
/// others'. A few hundred MiB of another rank's stray CUDA context beside a process that
/// filled the GPU itself does not count.
fn gpu_held_by_others(held: &[(String, String)]) -> bool {
    let mut own = None;
    let mut numbered = Vec::new();
    for (id, amount) in held {
        let Some(g) = crate::rules::gib_of(amount) else {
            continue;
        };
        if id == "this one" {
            own = Some(own.map_or(g, |o: f64| o.max(g)));
        } else {
            numbered.push(g);
        }
    }
    numbered.sort_by(|a, b| b.total_cmp(a));
    let (others, total) = match own {
        Some(o) => {
            let others: f64 = numbered.iter().sum();
            (others, others + o)
        }
        None if numbered.len() >= 2 => {
            let total: f64 = numbered.iter().sum();
            (total - numbered[0], total)
        }
        None => return false,
    };
    others >= 1.0 && others >= 0.2 * total
}

/// The fix when PyTorch's out-of-memory message lists more than one process on the GPU.
const GPU_SHARED_WITH_OTHER_PROCESSES_FIX: &str = "Find the other processes on that GPU \
     (`nvidia-smi`, the PIDs above; inside a container NVML's PIDs are the host's, and the \
     failing process may be one of them). Another job or a leftover process of an earlier run: \
     free the GPU or run on free ones (CUDA_VISIBLE_DEVICES). This job's other ranks, each \
     holding a few hundred MiB: they created a CUDA context on this GPU before \
     `torch.cuda.set_device(local_rank)` (call it first, or pass `device_ids=[local_rank]`). \
     Only when this process held nearly all of the memory itself is the model or batch too \
     large: then lower the batch size or sequence length, or use activation checkpointing.";

/// What tells a rank missing from PyTorch's store-based barrier apart, once others reached it.
const STORE_BARRIER_CONFIRM: &str = "the ranks that reached the barrier print its line with \
     their rank: the one that never does is the one to read (its own log, or `py-spy dump --pid \
     PID` of its process: still loading, stuck in a tool's set-up such as a logger's, or dead)";

/// Observations read from where a log ends, with no error in it: a log of a
/// job that ended well can look the same, so they are never more than low.
const WHERE_THE_LOG_ENDS: &[&str] = &[
    "log_ends_while_running",
    "log_ends_after_nccl_setup_on_one_node",
    "log_ends_in_rendezvous",
];

/// How sure a finding is: high when one of its own lines names the problem
/// (or the launcher's evidence proves it), medium when it is read from
/// signals, exit codes or a symptom that names the rank behind, low for
/// consequences and symptoms that name no one.
fn confidence_of(role: Role, own: &[Signal], ranks: &[usize], oom_proven: bool) -> Confidence {
    // A cause is as firm as the observations that make it one: a symptom grouped with it (the
    // watchdog's own timeout beside the report naming the rank behind) does not firm it up.
    let direct = own
        .iter()
        .filter(|s| role != Role::Cause || s.role == Role::Cause)
        .any(|s| !INDIRECT_RULES.contains(&s.rule));
    let only_where_the_log_ends = own.iter().all(|s| WHERE_THE_LOG_ENDS.contains(&s.rule));
    match role {
        _ if oom_proven => Confidence::High,
        _ if only_where_the_log_ends => Confidence::Low,
        Role::Cause if direct => Confidence::High,
        Role::Cause => Confidence::Medium,
        Role::Symptom if !ranks.is_empty() => Confidence::Medium,
        _ => Confidence::Low,
    }
}

/// The ranks a finding is about, or "a rank" when the logs name none.
fn subject(ranks: &[usize]) -> String {
    if ranks.is_empty() {
        "a rank".to_owned()
    } else {
        who(ranks)
    }
}

/// The verb for [`who`]'s ranks: "was" for one (or "a rank"), "were" for several.
fn was(ranks: &[usize]) -> &'static str {
    if ranks.len() > 1 {
        "were"
    } else {
        "was"
    }
}

fn who(ranks: &[usize]) -> String {
    match ranks {
        [] => String::new(),
        [r] => format!("rank {r}"),
        rs => format!(
            "ranks {}",
            rs.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// What decides a hang that left nothing to read: the rerun with the ranks' stacks.
const BLIND_HANG_CONFIRM: &str = "a rerun under `ddp-probe run --auto-instrument \
     --hang-timeout N` (or with `import ddp_probe_torch` at the top of the script): when the \
     watchdog stops the job, each Python rank writes its stack (`logs/python-stack-rank-R.txt`) \
     and a flight-recorder dump, and `explain` says where each rank waited and for whom; for a \
     job that is not Python, `py-spy dump --pid PID` or `gdb -p PID -batch -ex 'thread apply all \
     bt'` of each rank while it hangs";

/// A finding's title; `only_waited`: nothing timed out, the wait was seen in traces or dumps
/// (or the hang watchdog stopped it); `elsewhere`: where the rank waited for was instead, from
/// its Python stack.
fn title(
    category: Category,
    role: Role,
    ranks: &[usize],
    observers: &[usize],
    only_waited: bool,
    elsewhere: Option<&str>,
) -> String {
    let subject = who(ranks);
    match category {
        Category::CollectiveTimeout if !ranks.is_empty() && !observers.is_empty() => {
            let never = match elsewhere {
                Some(w) if ranks.len() > 1 => format!("which never joined it: they were {w}"),
                Some(w) => format!("which never joined it: it was {w}"),
                None => "which never joined it".to_owned(),
            };
            if only_waited {
                format!(
                    "{} waited in a collective for {subject}, {never}",
                    who(observers)
                )
            } else {
                format!(
                    "{} timed out in a collective waiting for {subject}, {never}",
                    who(observers)
                )
            }
        }
        // Every rank reached the collective and only traces or dumps saw them in it: it broke
        // off (a peer killed, the run stopped), nothing timed out.
        Category::CollectiveTimeout if only_waited && !ranks.is_empty() => {
            format!("{subject} waited in a collective that never completed")
        }
        Category::RankCrashed if role == Role::Consequence => {
            let by = if observers.is_empty() {
                "a rank".to_owned()
            } else {
                who(observers)
            };
            if subject.is_empty() {
                format!("{by} lost a peer: another rank exited or the connection broke")
            } else {
                let gone = if ranks.len() == 1 {
                    "it exited or was killed"
                } else {
                    "they exited or were killed"
                };
                format!("{by} lost {subject}: {gone}")
            }
        }
        Category::WorldSizeMismatch
        | Category::NcclVersionMismatch
        | Category::DuplicateGpu
        | Category::CollectiveMismatch
            if ranks.len() < 2 =>
        {
            format!("the ranks {}", category.predicate())
        }
        _ if subject.is_empty() => format!("a rank {}", category.predicate()),
        _ => format!("{subject} {}", category.predicate()),
    }
}

fn compare(a: &Draft, b: &Draft, ctx: &RunContext) -> Ordering {
    let key = |d: &Draft| {
        let f = &d.finding;
        let first = ctx.first_failure.is_some_and(|r| {
            f.ranks.contains(&r) || (f.ranks.is_empty() && f.observed_by.contains(&r))
        });
        let ended = f
            .ranks
            .iter()
            .filter_map(|r| ctx.end_after.get(r).copied())
            .fold(f64::INFINITY, f64::min);
        let priority = if d.hardware_fault {
            0
        } else if d.worker_lost_silently {
            Category::RankCrashed.priority() + 1
        } else {
            f.category.priority()
        };
        (f.role, !first, ended, priority, d.first_order)
    };
    let (ra, fa, ea, pa, oa) = key(a);
    let (rb, fb, eb, pb, ob) = key(b);
    ra.cmp(&rb)
        .then(fa.cmp(&fb))
        .then(ea.total_cmp(&eb))
        .then(pa.cmp(&pb))
        .then(oa.cmp(&ob))
}

fn add_role_notes(findings: &mut [Finding]) {
    let Some(first_cause) = findings.iter().position(|f| f.role == Role::Cause) else {
        return;
    };
    let cause_title = findings[first_cause].title.clone();
    for (i, f) in findings.iter_mut().enumerate() {
        if i <= first_cause {
            continue;
        }
        match f.role {
            Role::Consequence => f.explanation.push_str(&format!(
                " This is most likely a consequence of finding {} ({cause_title}).",
                first_cause + 1
            )),
            Role::Symptom => f.explanation.push_str(&format!(
                " It is likely an effect of finding {} ({cause_title}).",
                first_cause + 1
            )),
            Role::Cause => {}
        }
    }
}

fn needs_unknown(g: &Gathered, ctx: &RunContext) -> bool {
    if ctx.ok {
        return false;
    }
    let telling = g.scans.iter().any(|s| !s.telling.is_empty());
    let recognised = g.scans.iter().any(|s| s.recognised) || !g.nccl.is_empty();
    ctx.failed || ctx.hang || telling || (!recognised && !g.scans.is_empty())
}

/// The title of the finding that says no known problem matched.
const UNKNOWN_TITLE: &str = "no known problem matched these logs";

fn unknown_finding(g: &Gathered, ctx: &RunContext) -> Finding {
    let mut evidence: Vec<Evidence> = Vec::new();
    let mut total = 0usize;
    for s in &g.scans {
        for e in &s.telling {
            total += 1;
            if evidence.len() < UNKNOWN_LINES && !evidence.contains(e) {
                evidence.push(e.clone());
            }
        }
    }
    for s in &g.scans {
        for e in s.last.iter().rev().take(3).rev() {
            if evidence.contains(e) {
                continue;
            }
            total += 1;
            if evidence.len() < UNKNOWN_LINES {
                evidence.push(e.clone());
            }
        }
    }
    if ctx.failed || ctx.hang {
        for m in &g.manifests {
            if let Some(e) = m.status_evidence() {
                total += 1;
                if evidence.len() < UNKNOWN_LINES {
                    evidence.push(e);
                }
            }
        }
    }
    let omitted = total.saturating_sub(evidence.len());
    let lines: u64 = g.scans.iter().map(|s| s.lines).sum();
    let mut explanation = Category::Unknown.meaning().to_owned();
    if g.scans.is_empty() {
        explanation.push_str(" No log file was found.");
    } else if lines == 0 {
        explanation.push_str(" The logs are empty.");
    }
    if ctx.failed || ctx.hang {
        explanation.push_str(" The run's manifest says it did not end well.");
    }
    let observed_by: Vec<usize> = Vec::new();
    Finding {
        category: Category::Unknown,
        role: Role::Cause,
        ranks: Vec::new(),
        observed_by,
        title: UNKNOWN_TITLE.to_owned(),
        explanation,
        evidence,
        evidence_omitted: omitted,
        confidence: Confidence::Low,
        to_confirm: Some(Category::Unknown.to_confirm().to_owned()),
        fix: Category::Unknown.fix().to_owned(),
        doc: Category::Unknown.doc_path(),
    }
}

fn headline(findings: &[Finding], g: &Gathered, comms: usize) -> String {
    match findings.first() {
        // A situation recognised outside the categories has its own title.
        Some(f)
            if f.category == Category::Unknown
                && (f.title == UNKNOWN_TITLE
                    || f.title.ends_with(Category::Unknown.predicate())) =>
        {
            "no known problem matched; the most telling lines are shown below".to_owned()
        }
        // A low-confidence finding is a reading of consequences: the headline says so rather
        // than calling a guess the most likely cause.
        Some(f) if f.role == Role::Cause && f.confidence == Confidence::Low => {
            format!(
                "possible cause (this log shows too little to be sure): {}",
                f.title
            )
        }
        Some(f) if f.role == Role::Cause => format!("most likely cause: {}", f.title),
        Some(f) if f.confidence == Confidence::Low => {
            format!(
                "found: {}; why is not in this log (see 'to confirm')",
                f.title
            )
        }
        Some(f) => format!("found: {}", f.title),
        None => {
            let files = g.scans.len();
            let mut s = format!(
                "no error found in {files} log file{}",
                if files == 1 { "" } else { "s" }
            );
            if comms > 0 {
                s.push_str(&format!(
                    "; NCCL set up {comms} communicator{}",
                    if comms == 1 { "" } else { "s" }
                ));
            }
            // A pasted log of a job that hung reads the same as a healthy one's start: where it
            // ends is what the reader has to go on (a run directory's manifest says how it
            // ended instead).
            if let ([scan], true) = (g.scans.as_slice(), g.manifests.is_empty()) {
                if let Some(last) = scan.last.iter().rev().find(|e| !e.text.trim().is_empty()) {
                    s.push_str(&format!(
                        "; it ends with: {}",
                        sanitize(last.text.trim(), MAX_DETAIL_CHARS.min(120))
                    ));
                }
            }
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two ranks never joined (DDP over two process groups, one hung rank in each): the title
    /// says where they were in the plural (it said "it was", 2026-12-07).
    #[test]
    fn ranks_that_never_joined_are_said_in_the_plural() {
        let at = Some("in <module> at train.py:15");
        assert_eq!(
            title(
                Category::CollectiveTimeout,
                Role::Cause,
                &[0, 3],
                &[1, 2],
                true,
                at
            ),
            "ranks 1, 2 waited in a collective for ranks 0, 3, which never joined it: they were \
             in <module> at train.py:15"
        );
        assert_eq!(
            title(
                Category::CollectiveTimeout,
                Role::Cause,
                &[1],
                &[0],
                true,
                at
            ),
            "rank 0 waited in a collective for rank 1, which never joined it: it was in <module> \
             at train.py:15"
        );
    }
}
