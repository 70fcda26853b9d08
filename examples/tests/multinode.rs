//! Two nodes on one machine: two network namespaces joined by a veth pair, one
//! `ddp-probe run --nnodes 2 --node-rank K` per namespace (2 ranks each, the `train` example),
//! then the link between them is cut mid-run.
//!
//! Checked: the job starts across the nodes; every header's clock offset to rank 0 is within
//! its reported uncertainty (both nodes share one physical clock, so the true offset is 0);
//! the two run directories load as one run of 4 ranks; after the cut every rank ends within
//! the group timeout, and `ddp-probe explain` over both run directories reports a
//! collective timeout on both nodes that says the nodes lost each other.
//!
//! Needs root (network namespaces) and `ip` (iproute2); without them the test says why and
//! passes without running. The namespaces (unique names) are deleted on drop, also when the
//! test fails.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{ddp_probe_bin, explain, stop, train_bin, wait_bounded};

/// The group timeout of the ranks: how long a collective waits for a peer behind the cut link.
const COMM_TIMEOUT_S: &str = "5";
/// Bound on each node's job after the cut (an upper bound only).
const END_LIMIT: Duration = Duration::from_secs(90);

/// Two namespaces and the veth pair between them; deleted on drop.
struct Netns {
    names: [String; 2],
    veths: [String; 2],
    addrs: [String; 2],
}

impl Netns {
    /// Creates the namespaces, or says why it cannot.
    fn create() -> Result<Netns, String> {
        let id = std::process::id();
        let names = [format!("ddpf{id}a"), format!("ddpf{id}b")];
        let veths = [format!("dpf{id}a"), format!("dpf{id}b")];
        // A /24 of 10.0.0.0/8 from the pid, so concurrent test runs do not collide.
        let net = format!("10.{}.{}", 200 + (id / 256) % 50, id % 256);
        let addrs = [format!("{net}.1"), format!("{net}.2")];
        ip(&["netns", "add", &names[0]])?;
        let ns = Netns {
            names,
            veths,
            addrs,
        };
        ip(&["netns", "add", &ns.names[1]])?;
        ip(&[
            "link",
            "add",
            &ns.veths[0],
            "type",
            "veth",
            "peer",
            "name",
            &ns.veths[1],
        ])?;
        for k in 0..2 {
            ip(&["link", "set", &ns.veths[k], "netns", &ns.names[k]])?;
            let cidr = format!("{}/24", ns.addrs[k]);
            ip(&[
                "-n",
                &ns.names[k],
                "addr",
                "add",
                &cidr,
                "dev",
                &ns.veths[k],
            ])?;
            ip(&["-n", &ns.names[k], "link", "set", "lo", "up"])?;
            ip(&["-n", &ns.names[k], "link", "set", &ns.veths[k], "up"])?;
        }
        Ok(ns)
    }

    /// Cuts the link: node 0's end of the veth pair goes down.
    fn cut(&self) -> Result<(), String> {
        ip(&["-n", &self.names[0], "link", "set", &self.veths[0], "down"])
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for name in &self.names {
            let _ = ip(&["netns", "del", name]);
        }
    }
}

/// Runs `ip args...`; the error holds its message.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("`ip` cannot be run ({e}); install iproute2"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Kills the node launchers still running when the test ends early.
struct Nodes(Vec<Child>);

impl Drop for Nodes {
    fn drop(&mut self) {
        for child in &mut self.0 {
            if let Ok(None) = child.try_wait() {
                stop(child);
            }
        }
    }
}

/// Lines of a file (0 when it does not exist yet).
fn lines(path: &Path) -> usize {
    std::fs::read(path)
        .map(|b| b.iter().filter(|&&c| c == b'\n').count())
        .unwrap_or(0)
}

#[test]
fn two_nodes_in_namespaces_merge_their_traces_and_a_cut_link_is_diagnosed() {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipping: network namespaces need root");
        return;
    }
    let ns = match Netns::create() {
        Ok(ns) => ns,
        Err(why) => {
            eprintln!("skipping: cannot create network namespaces: {why}");
            return;
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let runs: [PathBuf; 2] = [dir.path().join("node0"), dir.path().join("node1")];
    let rdzv_id = format!("netns-{}", std::process::id());
    // The secret every node shares, as a batch script would export it.
    let token = format!("multinode-test-{:x}", rand_u64());
    let mut nodes = Nodes(Vec::new());
    for (k, (ns_name, run_dir)) in ns.names.iter().zip(&runs).enumerate() {
        let log = std::fs::File::create(dir.path().join(format!("node{k}.log"))).unwrap();
        let child = Command::new("ip")
            .args(["netns", "exec", ns_name])
            .arg(ddp_probe_bin())
            .args(["run", "--nnodes", "2", "--nproc-per-node", "2"])
            .args(["--node-rank", &k.to_string()])
            .args(["--master-addr", &ns.addrs[0], "--master-port", "29511"])
            .args(["--rdzv-id", &rdzv_id, "--grace", "1", "--console", "quiet"])
            .arg("--out")
            .arg(run_dir)
            .arg("--")
            .arg(train_bin())
            .args(["--epochs", "100000", "--checkpoint-every", "0"])
            .env_remove("DDP_PROBE_FAULT")
            .env("DDP_PROBE_STORE_TOKEN", &token)
            // Both namespaces see one /dev/shm: TCP keeps the nodes' traffic on the link.
            .env("DDP_COMM_TRANSPORT", "tcp")
            .env("DDP_PROBE_TIMEOUT", COMM_TIMEOUT_S)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("ip netns exec starts");
        nodes.0.push(child);
    }

    // Wait until both nodes train (their traces grow), then cut the link.
    let traces = [
        runs[0].join("traces/rank-0.jsonl"),
        runs[1].join("traces/rank-2.jsonl"),
    ];
    let deadline = Instant::now() + Duration::from_secs(120);
    while traces.iter().any(|t| lines(t) < 300) {
        assert!(
            Instant::now() < deadline,
            "the nodes did not start training; node 0:\n{}\nnode 1:\n{}",
            std::fs::read_to_string(dir.path().join("node0.log")).unwrap_or_default(),
            std::fs::read_to_string(dir.path().join("node1.log")).unwrap_or_default()
        );
        for child in &mut nodes.0 {
            assert!(
                child.try_wait().unwrap().is_none(),
                "a node ended before the cut"
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    ns.cut().expect("the link can be cut");

    // Every rank notices within the group timeout; both launchers end with a failure.
    for (k, child) in nodes.0.iter_mut().enumerate() {
        let status = wait_bounded(child, END_LIMIT, &dir.path().join(format!("node{k}.log")));
        assert!(!status.success(), "node {k} should fail after the cut");
    }

    // Clocks: one physical clock, so each measured offset lies within its uncertainty.
    let (run, _warnings) =
        probe::reader::load_run(&[&runs[0], &runs[1]]).expect("both nodes' traces load");
    assert_eq!(run.world_size, 4);
    assert!(
        run.missing_ranks().is_empty(),
        "the traces merge into 4 ranks"
    );
    for t in &run.ranks {
        let h = &t.header;
        assert_eq!(h.run_id, rdzv_id);
        assert_eq!(
            h.node_rank,
            h.rank / 2,
            "rank {} is on node {}",
            h.rank,
            h.rank / 2
        );
        if h.rank == 0 {
            assert_eq!(h.offset_to_rank0_ns, 0);
            continue;
        }
        assert!(
            h.offset_uncertainty_ns > 0,
            "rank {}: an uncertainty is reported",
            h.rank
        );
        assert!(
            h.offset_to_rank0_ns.unsigned_abs() <= h.offset_uncertainty_ns + 1_000_000,
            "rank {}: offset {} ns, uncertainty {} ns",
            h.rank,
            h.offset_to_rank0_ns,
            h.offset_uncertainty_ns
        );
    }

    // The diagnosis over both run directories: a collective timeout, named on both nodes (a
    // rank that its launcher stops after a node-mate timed out may not report one itself).
    let findings = explain(dir.path(), &[&runs[0], &runs[1]]);
    let first = findings.first().expect("explain finds something");
    assert_eq!(first.category, "collective_timeout", "{findings:?}");
    for node in 0..2u64 {
        assert!(
            first.ranks.iter().any(|r| r / 2 == node),
            "a rank of node {node} is named: {findings:?}"
        );
    }
    assert!(
        first
            .json
            .contains("wait for ranks on another node (node 0: ranks 0, 1; node 1: ranks 2, 3)"),
        "the finding names the nodes that lost each other: {}",
        first.json
    );
    // The logs, independently: on each node a rank timed out waiting for a rank of the other
    // node (ring all-reduces chain the waits, so a rank may also wait for a node-mate).
    let mut reporting_nodes = [false; 2];
    for rank in 0..4u64 {
        let node = rank / 2;
        let log = runs[node as usize].join(format!("logs/rank-{rank}.stderr"));
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let waited: Vec<u64> = text
            .match_indices("still waiting for rank ")
            .filter_map(|(i, m)| {
                let rest = &text[i + m.len()..];
                let end = rest
                    .find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(rest.len());
                rest[..end].parse().ok()
            })
            .collect();
        reporting_nodes[node as usize] |= waited.iter().any(|&r| r / 2 != node);
    }
    assert_eq!(
        reporting_nodes,
        [true, true],
        "a rank of each node timed out"
    );
}

/// 64 bits from the operating system's generator.
fn rand_u64() -> u64 {
    let mut b = [0u8; 8];
    std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom").unwrap(), &mut b).unwrap();
    u64::from_le_bytes(b)
}
