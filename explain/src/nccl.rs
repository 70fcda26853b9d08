//! NCCL's debug output (`NCCL_DEBUG=INFO`): the line prefix, and what the set-up
//! lines say about each communicator.
//!
//! NCCL prefixes its lines with `host:pid:tid [cudaDev]`, optionally followed
//! by `file.cc:line`, then `NCCL INFO` or `NCCL WARN` (NCCL's `debug.cc`).
//! The bracket holds the CUDA device, not the rank; ranks come from the
//! communicator lines (`comm 0x.. rank R nranks N cudaDev D ... busId B
//! commId 0x.. - Init START|COMPLETE`), which also map each process to its
//! rank. The lines read for the summary:
//!
//! | line | gives |
//! |---|---|
//! | `NCCL version 2.21.5+cuda12.4` | the version of that process |
//! | `NET/Socket : Using [0]eth0:10.0.0.1<0>` | socket interfaces |
//! | `NET/IB : Using [0]mlx5_0:1/IB` | InfiniBand ports |
//! | `Using network Socket` | the network plugin |
//! | `comm 0x.. rank R nRanks N nNodes M ...` | the node count |
//! | `Channel 00/02 : 0 1` | the channel count |
//! | `Channel 00/0 : 0[0] -> 1[1] via P2P/IPC` | the transports |

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::category::Category;
use crate::report::{CommSummary, Evidence, Role};
use crate::signal::{Attach, Signal};

/// NCCL's message level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    /// `NCCL INFO`.
    Info,
    /// `NCCL WARN`.
    Warn,
    /// Anything else (`TRACE`, `ABORT`, ...).
    Other,
}

/// A parsed NCCL debug line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NcclLine<'a> {
    /// The host name.
    pub host: &'a str,
    /// The process id.
    pub pid: Option<u32>,
    /// The level.
    pub level: Level,
    /// The message after `NCCL INFO `/`NCCL WARN `.
    pub msg: &'a str,
}

/// Parses an NCCL debug line; `None` for other lines. A bare `NCCL version
/// X` line (printed without prefix by some versions) parses with an empty
/// host.
pub(crate) fn parse_line(line: &str) -> Option<NcclLine<'_>> {
    let (marker_at, level, msg_at) = ["NCCL INFO ", "NCCL WARN ", "NCCL TRACE ", "NCCL ABORT "]
        .iter()
        .find_map(|m| {
            line.find(m).map(|i| {
                let level = match *m {
                    "NCCL INFO " => Level::Info,
                    "NCCL WARN " => Level::Warn,
                    _ => Level::Other,
                };
                (i, level, i + m.len())
            })
        })
        .or_else(|| {
            let t = line.trim_start();
            t.starts_with("NCCL version ")
                .then(|| (line.len() - t.len(), Level::Info, line.len() - t.len()))
        })?;
    let prefix = &line[..marker_at];
    let (host, pid) = parse_prefix(prefix);
    Some(NcclLine {
        host,
        pid,
        level,
        msg: line[msg_at..].trim(),
    })
}

/// Reads `host:pid:tid [dev]` out of the text before `NCCL INFO`.
fn parse_prefix(prefix: &str) -> (&str, Option<u32>) {
    // The token before " [dev]": the last whitespace-separated token that
    // has the shape a:b:c with numeric b and c.
    for token in prefix.split_whitespace().rev() {
        let mut parts = token.rsplitn(3, ':');
        let (Some(tid), Some(pid), Some(host)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        if tid.is_empty() || !tid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        // Drop a "[rank0]:" or "[default0]:" launcher prefix glued to the host.
        let host = host.rsplit("]:").next().unwrap_or(host);
        return (host, Some(pid));
    }
    ("", None)
}

/// A process that printed NCCL lines.
type ProcKey = (String, u32);

#[derive(Debug, Default)]
struct Proc {
    version: Option<(String, Evidence)>,
    network: Option<String>,
    socket_ifs: Vec<String>,
    /// The `NET/Socket : Using ...` line that listed them.
    socket_line: Option<Evidence>,
    ib_ports: Vec<String>,
    rank: Option<usize>,
    comm_of_ptr: HashMap<String, usize>,
    current: Option<usize>,
    /// The first channel line that goes over the network transport (`via NET/...`): NCCL
    /// takes it only between nodes (within one it has P2P and shared memory), so the process
    /// is in a job of more than one node.
    net_channel: Option<Evidence>,
}

#[derive(Debug, Default)]
struct RankInComm {
    host: String,
    bus_id: Option<String>,
    complete: bool,
    evidence: Option<Evidence>,
}

#[derive(Debug, Default)]
struct Comm {
    comm_id: Option<String>,
    nranks: Option<usize>,
    nnodes: Option<usize>,
    ranks: BTreeMap<usize, RankInComm>,
    procs: BTreeSet<ProcKey>,
    channels: Option<usize>,
    transports: BTreeSet<String>,
    p2p_evidence: Vec<(Option<usize>, Evidence)>,
    first_line: Option<Evidence>,
}

/// Gathers NCCL set-up facts from every file.
#[derive(Debug, Default)]
pub(crate) struct NcclCollector {
    procs: BTreeMap<ProcKey, Proc>,
    comms: Vec<Comm>,
    comm_by_id: HashMap<String, usize>,
    /// Versions from bare `NCCL version` lines, by file.
    bare_versions: Vec<(Option<usize>, String, Evidence)>,
}

impl NcclCollector {
    /// Records one NCCL line. `file_rank` is the rank the file belongs to
    /// (when known), used for processes that never log a communicator line.
    pub fn observe(
        &mut self,
        line: &NcclLine<'_>,
        file_rank: Option<usize>,
        evidence: &dyn Fn() -> Evidence,
    ) {
        let msg = line.msg;
        let Some(pid) = line.pid else {
            if let Some(v) = msg.strip_prefix("NCCL version ") {
                self.bare_versions
                    .push((file_rank, first_word(v).to_owned(), evidence()));
            }
            return;
        };
        let key: ProcKey = (line.host.to_owned(), pid);
        let proc = self.procs.entry(key.clone()).or_default();
        if proc.rank.is_none() {
            proc.rank = file_rank;
        }
        if let Some(v) = msg.strip_prefix("NCCL version ") {
            proc.version = Some((first_word(v).to_owned(), evidence()));
        } else if let Some(rest) = msg.strip_prefix("Using network ") {
            // One word ("Socket", "IB"); a joined line may carry the next record's prefix.
            proc.network = Some(first_word(rest).to_owned());
        } else if let Some(rest) = msg.strip_prefix("NET/Socket : Using ") {
            proc.socket_ifs = bracket_items(rest, ':');
            proc.socket_line = Some(evidence());
        } else if let Some(rest) = msg.strip_prefix("NET/IB : Using ") {
            proc.ib_ports = bracket_items(rest.split(';').next().unwrap_or(rest), '/');
        } else if let Some(comm) = parse_comm_line(msg) {
            self.observe_comm(&key, comm, evidence);
        } else if msg.starts_with("Channel ") {
            self.observe_channel(&key, msg, evidence);
        }
    }

    fn observe_comm(&mut self, key: &ProcKey, c: CommLine<'_>, evidence: &dyn Fn() -> Evidence) {
        let proc = self.procs.entry(key.clone()).or_default();
        if let Some(r) = c.rank {
            proc.rank = Some(r);
        }
        let idx = match (
            &c.comm_id,
            c.ptr.and_then(|p| proc.comm_of_ptr.get(p).copied()),
        ) {
            (Some(id), _) => match self.comm_by_id.get(*id) {
                Some(&i) => i,
                None => {
                    self.comms.push(Comm {
                        comm_id: Some((*id).to_owned()),
                        ..Comm::default()
                    });
                    let i = self.comms.len() - 1;
                    self.comm_by_id.insert((*id).to_owned(), i);
                    i
                }
            },
            (None, Some(i)) => i,
            (None, None) => {
                // An older NCCL without commId: one communicator per size.
                let synthetic = format!("nranks={}", c.nranks.unwrap_or(0));
                match self.comm_by_id.get(&synthetic) {
                    Some(&i) => i,
                    None => {
                        self.comms.push(Comm::default());
                        let i = self.comms.len() - 1;
                        self.comm_by_id.insert(synthetic, i);
                        i
                    }
                }
            }
        };
        let proc = self.procs.entry(key.clone()).or_default();
        if let Some(p) = c.ptr {
            proc.comm_of_ptr.insert(p.to_owned(), idx);
        }
        proc.current = Some(idx);
        let comm = &mut self.comms[idx];
        comm.procs.insert(key.clone());
        if comm.first_line.is_none() {
            comm.first_line = Some(evidence());
        }
        if let Some(n) = c.nranks {
            comm.nranks = Some(n);
        }
        if let Some(n) = c.nnodes {
            comm.nnodes = Some(n);
        }
        if let Some(r) = c.rank {
            let entry = comm.ranks.entry(r).or_default();
            entry.host = key.0.clone();
            if let Some(b) = c.bus_id {
                entry.bus_id = Some(b.to_owned());
                entry.evidence = Some(evidence());
            }
            if c.complete {
                entry.complete = true;
            }
        }
    }

    fn observe_channel(&mut self, key: &ProcKey, msg: &str, evidence: &dyn Fn() -> Evidence) {
        let Some(proc) = self.procs.get_mut(key) else {
            return;
        };
        let via = msg.split(" via ").nth(1);
        if via.is_some_and(|v| v.trim_start().starts_with("NET/")) && proc.net_channel.is_none() {
            proc.net_channel = Some(evidence());
        }
        let rank = proc.rank;
        let Some(idx) = proc.current else {
            return;
        };
        let comm = &mut self.comms[idx];
        if let Some(via) = via {
            let kind = via.split('/').next().unwrap_or(via).trim();
            if !kind.is_empty() && kind.len() <= 16 {
                comm.transports.insert(kind.to_owned());
                if kind == "P2P" && comm.p2p_evidence.iter().all(|(r, _)| *r != rank) {
                    comm.p2p_evidence.push((rank, evidence()));
                }
            }
        } else if let Some((_, after)) = msg.split_once('/') {
            if let Some(n) = crate::rules::leading_number(after) {
                comm.channels = Some(comm.channels.unwrap_or(0).max(n as usize));
            }
        }
    }

    /// The rank of every NCCL process whose rank is known.
    pub fn process_ranks(&self) -> HashMap<ProcKey, usize> {
        self.procs
            .iter()
            .filter_map(|(k, p)| p.rank.map(|r| (k.clone(), r)))
            .collect()
    }

    /// Ranks whose communicator set-up completed.
    pub fn completed_ranks(&self) -> BTreeSet<usize> {
        self.comms
            .iter()
            .flat_map(|c| c.ranks.iter().filter(|(_, r)| r.complete).map(|(&k, _)| k))
            .collect()
    }

    /// Whether every NCCL process ran on one node, when the lines say: the
    /// communicators' `nNodes` where logged, else the hosts of the processes.
    pub fn single_node(&self) -> Option<bool> {
        if let Some(nodes) = self.comms.iter().filter_map(|c| c.nnodes).max() {
            return Some(nodes == 1);
        }
        if self.procs.values().any(|p| p.net_channel.is_some()) {
            return Some(false);
        }
        let hosts: BTreeSet<&str> = self.procs.keys().map(|(host, _)| host.as_str()).collect();
        (!hosts.is_empty()).then_some(hosts.len() == 1)
    }

    /// Whether any NCCL line was seen.
    pub fn is_empty(&self) -> bool {
        self.procs.is_empty() && self.bare_versions.is_empty()
    }

    /// One line of evidence per rank that uses the P2P transport (at most
    /// `max`).
    pub fn p2p_evidence(&self, max: usize) -> Vec<(Option<usize>, Evidence)> {
        self.comms
            .iter()
            .flat_map(|c| c.p2p_evidence.iter().cloned())
            .take(max)
            .collect()
    }

    /// Checks across ranks: versions that differ, two ranks on one GPU,
    /// communicators larger than the world, and multi-node communicators (a node count above
    /// one, or channels over the network transport) on a loopback or container interface.
    pub fn cross_checks(&self, world_size: Option<usize>) -> Vec<Signal> {
        let mut out = Vec::new();
        // Versions (the part before '+cuda').
        let mut versions: BTreeMap<String, Vec<(Option<usize>, Evidence)>> = BTreeMap::new();
        for p in self.procs.values() {
            if let Some((v, e)) = &p.version {
                versions
                    .entry(base_version(v).to_owned())
                    .or_default()
                    .push((p.rank, e.clone()));
            }
        }
        for (r, v, e) in &self.bare_versions {
            versions
                .entry(base_version(v).to_owned())
                .or_default()
                .push((*r, e.clone()));
        }
        if versions.len() > 1 {
            let mut s = Signal::new(
                "nccl_versions_differ",
                Category::NcclVersionMismatch,
                Role::Cause,
                Attach::Standalone,
            );
            let names: Vec<String> = versions.keys().cloned().collect();
            s.detail = Some(format!("versions {} in one run", names.join(", ")));
            for seen in versions.values() {
                for (r, e) in seen.iter().take(2) {
                    if let Some(r) = r {
                        s.subjects.push(*r);
                    }
                    s.evidence.push(e.clone());
                }
            }
            out.push(s);
        }
        for comm in &self.comms {
            // Two ranks on the same host and bus id.
            let mut seen: HashMap<(&str, &str), usize> = HashMap::new();
            for (&rank, r) in &comm.ranks {
                let Some(bus) = r.bus_id.as_deref() else {
                    continue;
                };
                if let Some(&other) = seen.get(&(r.host.as_str(), bus)) {
                    let mut s = Signal::new(
                        "same_bus_id",
                        Category::DuplicateGpu,
                        Role::Cause,
                        Attach::Standalone,
                    );
                    s.subjects = vec![other, rank];
                    s.detail = Some(format!(
                        "ranks {other} and {rank} both report busId {} on host {}",
                        crate::sanitize::sanitize(bus, 40),
                        crate::sanitize::sanitize(&r.host, 80)
                    ));
                    s.evidence
                        .extend(comm.ranks[&other].evidence.iter().cloned());
                    s.evidence.extend(r.evidence.iter().cloned());
                    out.push(s);
                } else {
                    seen.insert((r.host.as_str(), bus), rank);
                }
            }
            if let (Some(n), Some(w)) = (comm.nranks, world_size) {
                if n > w {
                    let mut s = Signal::new(
                        "comm_larger_than_world",
                        Category::WorldSizeMismatch,
                        Role::Cause,
                        Attach::Standalone,
                    );
                    s.detail = Some(format!(
                        "an NCCL communicator has {n} ranks but the run has {w}"
                    ));
                    s.evidence.extend(comm.first_line.iter().cloned());
                    s.expected_world = Some(n);
                    out.push(s);
                }
            }
            if comm.nnodes.is_some_and(|n| n > 1) {
                let spans = format!(
                    "a communicator that spans {} nodes",
                    comm.nnodes.unwrap_or(0)
                );
                let procs = comm.procs.iter().filter_map(|k| self.procs.get(k));
                if let Some(s) = local_iface_across_nodes(procs, &spans, comm.first_line.as_ref()) {
                    out.push(s);
                }
            }
        }
        // Without a communicator line that counts the nodes (NCCL before 2.9 printed none),
        // a channel over the network transport says the job spans nodes.
        if !out.iter().any(|s| s.rule == "local_iface_across_nodes") {
            let procs = self.procs.values().filter(|p| p.net_channel.is_some());
            let spans = "channels to other nodes (its channels go `via NET`)";
            if let Some(s) = local_iface_across_nodes(procs, spans, None) {
                out.push(s);
            }
        }
        out
    }

    /// One summary per communicator.
    pub fn summaries(&self) -> Vec<CommSummary> {
        let mut out = Vec::new();
        for comm in &self.comms {
            let procs: Vec<&Proc> = comm
                .procs
                .iter()
                .filter_map(|k| self.procs.get(k))
                .collect();
            let mut versions: Vec<String> = procs
                .iter()
                .filter_map(|p| p.version.as_ref().map(|(v, _)| v.clone()))
                .chain(self.bare_versions.iter().map(|(_, v, _)| v.clone()))
                .collect();
            versions.sort();
            versions.dedup();
            let network = procs.iter().find_map(|p| p.network.clone());
            let mut interfaces: Vec<String> = procs
                .iter()
                .flat_map(|p| match network.as_deref() {
                    Some(n) if n.starts_with("IB") => p.ib_ports.clone(),
                    _ => p.socket_ifs.clone(),
                })
                .collect();
            interfaces.sort();
            interfaces.dedup();
            let ranks: Vec<usize> = comm.ranks.keys().copied().collect();
            let init_complete = !comm.ranks.is_empty() && comm.ranks.values().all(|r| r.complete);
            let transports: Vec<String> = comm.transports.iter().cloned().collect();
            // Every field is a word taken from a log line: shown only
            // sanitised (a word may hold control characters that are not
            // whitespace, such as U+001C).
            let safe = |s: &str| crate::sanitize::sanitize(s, 80);
            let safe_all = |v: Vec<String>| v.iter().map(|s| safe(s)).collect::<Vec<_>>();
            let mut summary = CommSummary {
                comm_id: comm.comm_id.as_deref().map(safe),
                nranks: comm.nranks,
                ranks,
                nnodes: comm.nnodes,
                versions: safe_all(versions),
                network: network.as_deref().map(safe),
                interfaces: safe_all(interfaces),
                channels: comm.channels,
                transports: safe_all(transports),
                init_complete,
                text: String::new(),
            };
            summary.text = crate::sanitize::sanitize(&summary_text(&summary), 400);
            out.push(summary);
        }
        out
    }
}

/// "NCCL 2.21.5, 2 ranks, NET/Socket over eth0, 2 channels, P2P/SHM within
/// the node".
fn summary_text(c: &CommSummary) -> String {
    let mut parts = Vec::new();
    if c.versions.is_empty() {
        parts.push("NCCL (version not logged)".to_owned());
    } else {
        let v: Vec<&str> = c.versions.iter().map(|v| base_version(v)).collect();
        let mut v: Vec<&str> = v.into_iter().collect::<BTreeSet<_>>().into_iter().collect();
        v.sort_unstable();
        parts.push(format!("NCCL {}", v.join(" / ")));
    }
    if let Some(n) = c.nranks {
        let mut s = format!("{n} rank{}", if n == 1 { "" } else { "s" });
        if let Some(nodes) = c.nnodes.filter(|&n| n > 1) {
            s.push_str(&format!(" on {nodes} nodes"));
        }
        parts.push(s);
    }
    if let Some(net) = &c.network {
        let kind = if net.starts_with("IB") {
            "IB"
        } else {
            net.as_str()
        };
        if c.interfaces.is_empty() {
            parts.push(format!("NET/{kind}"));
        } else {
            parts.push(format!("NET/{kind} over {}", c.interfaces.join(", ")));
        }
    }
    if let Some(ch) = c.channels {
        parts.push(format!("{ch} channel{}", if ch == 1 { "" } else { "s" }));
    }
    let local: Vec<&str> = c
        .transports
        .iter()
        .map(String::as_str)
        .filter(|t| *t != "NET" && *t != "CollNet")
        .collect();
    if !local.is_empty() {
        parts.push(format!("{} within the node", local.join("/")));
    }
    if c.transports.iter().any(|t| t == "NET") {
        parts.push("NET between nodes".to_owned());
    }
    if !c.init_complete {
        parts.push("init not completed".to_owned());
    }
    parts.join(", ")
}

fn base_version(v: &str) -> &str {
    v.split('+').next().unwrap_or(v)
}

fn first_word(s: &str) -> &str {
    s.split_whitespace().next().unwrap_or("")
}

/// The first process among `procs` whose socket transport uses an interface that only reaches
/// its own host (loopback, a container bridge or veth): the other nodes cannot reach it. `line`
/// is the line that shows the job spans nodes, when not the process's own channel.
fn local_iface_across_nodes<'a>(
    procs: impl Iterator<Item = &'a Proc>,
    spans: &str,
    line: Option<&Evidence>,
) -> Option<Signal> {
    for p in procs {
        if p.network.as_deref() != Some("Socket") {
            continue;
        }
        let Some(bad) = p.socket_ifs.iter().find(|i| is_local_only_iface(i)) else {
            continue;
        };
        let mut s = Signal::new(
            "local_iface_across_nodes",
            Category::NetworkInterface,
            Role::Cause,
            Attach::Standalone,
        );
        s.observer = p.rank;
        s.detail = Some(format!(
            "NCCL uses {} for {spans}",
            crate::sanitize::sanitize(bad, 40)
        ));
        // The line that shows the nodes: the communicator's, or this process's own channel.
        let spanning = line.or(p.net_channel.as_ref());
        s.evidence
            .extend(p.socket_line.iter().chain(spanning).cloned());
        return Some(s);
    }
    None
}

fn is_local_only_iface(name: &str) -> bool {
    name == "lo"
        || name.starts_with("docker")
        || name.starts_with("veth")
        || name.starts_with("virbr")
        || name.starts_with("br-")
}

/// Names out of `[0]eth0:10.0.0.1<0> [1]eth1:...`: the text after each `]`
/// up to `stop`.
fn bracket_items(s: &str, stop: char) -> Vec<String> {
    s.split_whitespace()
        .filter_map(|tok| {
            let (_, rest) = tok.split_once(']')?;
            let name = rest.split(stop).next().unwrap_or(rest);
            (!name.is_empty() && name.len() <= 64).then(|| name.to_owned())
        })
        .collect()
}

/// A communicator line, e.g. `comm 0x55 rank 0 nranks 2 cudaDev 0 nvmlDev 0
/// busId 1000 commId 0xab - Init COMPLETE`.
#[derive(Debug, Default)]
struct CommLine<'a> {
    ptr: Option<&'a str>,
    rank: Option<usize>,
    nranks: Option<usize>,
    nnodes: Option<usize>,
    bus_id: Option<&'a str>,
    comm_id: Option<&'a str>,
    complete: bool,
}

fn parse_comm_line(msg: &str) -> Option<CommLine<'_>> {
    let tokens: Vec<&str> = msg.split_whitespace().collect();
    let at = tokens.iter().position(|t| *t == "comm")?;
    let ptr = tokens
        .get(at + 1)
        .filter(|t| t.starts_with("0x"))
        .copied()?;
    let mut c = CommLine {
        ptr: Some(ptr),
        complete: msg.contains("Init COMPLETE"),
        ..CommLine::default()
    };
    let num = |i: usize| {
        tokens
            .get(i + 1)
            .and_then(|t| t.parse().ok())
            .and_then(crate::rules::rank_number)
    };
    for (i, t) in tokens.iter().enumerate().skip(at + 2) {
        match *t {
            "rank" => c.rank = c.rank.or(num(i)),
            "nranks" | "nRanks" => c.nranks = num(i),
            "nNodes" => c.nnodes = num(i),
            "busId" => c.bus_id = tokens.get(i + 1).copied(),
            "commId" => c.comm_id = tokens.get(i + 1).copied(),
            _ => {}
        }
    }
    (c.rank.is_some() || c.nranks.is_some()).then_some(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(n: u64) -> Evidence {
        Evidence {
            file: "f".into(),
            line: Some(n),
            text: String::new(),
        }
    }

    #[test]
    fn parses_prefixes() {
        let l = parse_line("node1:4100:4120 [0] NCCL INFO Using network Socket").unwrap();
        assert_eq!((l.host, l.pid, l.level), ("node1", Some(4100), Level::Info));
        assert_eq!(l.msg, "Using network Socket");
        let l = parse_line("[rank1]:node1:77:88 [1] bootstrap.cc:45 NCCL WARN Bootstrap : no socket interface found").unwrap();
        assert_eq!((l.host, l.pid, l.level), ("node1", Some(77), Level::Warn));
        let l = parse_line("NCCL version 2.21.5+cuda12.4").unwrap();
        assert_eq!((l.host, l.pid), ("", None));
        assert!(parse_line("plain text").is_none());
    }

    #[test]
    fn summarises_a_two_rank_communicator() {
        let lines = [
            "n:10:10 [0] NCCL INFO NCCL version 2.21.5+cuda12.4",
            "n:10:11 [0] NCCL INFO NET/IB : No device found.",
            "n:10:11 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>",
            "n:10:11 [0] NCCL INFO Using network Socket",
            "n:20:21 [1] NCCL INFO Using network Socket",
            "n:20:21 [1] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>",
            "n:10:11 [0] NCCL INFO comm 0x55 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0xabc - Init START",
            "n:20:21 [1] NCCL INFO comm 0x66 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 2000 commId 0xabc - Init START",
            "n:10:11 [0] NCCL INFO Channel 00/02 :    0   1",
            "n:10:11 [0] NCCL INFO Channel 01/02 :    0   1",
            "n:10:11 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
            "n:20:21 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via SHM/direct/direct",
            "n:10:11 [0] NCCL INFO comm 0x55 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0xabc - Init COMPLETE",
            "n:20:21 [1] NCCL INFO comm 0x66 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 2000 commId 0xabc - Init COMPLETE",
        ];
        let mut c = NcclCollector::default();
        for (i, l) in lines.iter().enumerate() {
            let p = parse_line(l).unwrap();
            c.observe(&p, None, &|| ev(i as u64 + 1));
        }
        let s = c.summaries();
        assert_eq!(s.len(), 1);
        assert_eq!(
            s[0].text,
            "NCCL 2.21.5, 2 ranks, NET/Socket over eth0, 2 channels, P2P/SHM within the node"
        );
        assert!(s[0].init_complete);
        assert_eq!(c.process_ranks().get(&("n".to_owned(), 20)), Some(&1));
        assert!(c.cross_checks(Some(2)).is_empty());
        assert_eq!(c.p2p_evidence(5).len(), 1);
    }

    #[test]
    fn cross_checks_find_versions_and_shared_gpus() {
        let lines = [
            "a:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4",
            "a:2:2 [0] NCCL INFO NCCL version 2.18.1+cuda12.1",
            "a:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 4 cudaDev 0 busId 1000 commId 0x9 - Init START",
            "a:2:2 [0] NCCL INFO comm 0x2 rank 1 nranks 4 cudaDev 0 busId 1000 commId 0x9 - Init START",
        ];
        let mut c = NcclCollector::default();
        for (i, l) in lines.iter().enumerate() {
            c.observe(&parse_line(l).unwrap(), None, &|| ev(i as u64 + 1));
        }
        let cats: Vec<Category> = c.cross_checks(Some(2)).iter().map(|s| s.category).collect();
        assert_eq!(
            cats,
            vec![
                Category::NcclVersionMismatch,
                Category::DuplicateGpu,
                Category::WorldSizeMismatch
            ]
        );
    }

    #[test]
    fn a_container_interface_with_channels_to_other_nodes_is_found_without_a_node_count() {
        // NCCL 2.7's lines: no communicator line counts the nodes, but a channel goes over the
        // network transport, which NCCL takes only between nodes.
        let lines = [
            "a:1:1 [0] NCCL INFO NET/Socket : Using [0]ens5:10.0.0.1<0> [1]veth75fa783:fe80::1%veth75fa783<0>",
            "a:1:1 [0] NCCL INFO Using network Socket",
            "a:1:2 [0] NCCL INFO Channel 00 : 1[1e0] -> 0[1e0] [receive] via NET/Socket/0",
        ];
        let observe = |lines: &[&str]| {
            let mut c = NcclCollector::default();
            for (i, l) in lines.iter().enumerate() {
                c.observe(&parse_line(l).unwrap(), Some(0), &|| ev(i as u64 + 1));
            }
            c
        };
        let c = observe(&lines);
        assert_eq!(c.single_node(), Some(false));
        let found = c.cross_checks(None);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].category, Category::NetworkInterface);
        assert!(found[0].detail.as_deref().unwrap().contains("veth75fa783"));
        let lines_seen: Vec<Option<u64>> = found[0].evidence.iter().map(|e| e.line).collect();
        assert_eq!(lines_seen, vec![Some(1), Some(3)]);
        // Within a node (P2P, SHM) nothing is said of the interfaces.
        let c = observe(&[
            lines[0],
            lines[1],
            "a:1:2 [0] NCCL INFO Channel 00 : 1[1e0] -> 0[1e0] via P2P/IPC",
        ]);
        assert_eq!(c.single_node(), Some(true));
        assert!(c.cross_checks(None).is_empty());
    }
}
