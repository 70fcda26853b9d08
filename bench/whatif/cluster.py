"""A shaped multi-node cluster on one machine, for measuring `ddp-probe advise` against reality.

Each "node" is a network namespace with one rank; the nodes hang off a bridge in a switch
namespace through veth pairs whose both directions a `tc tbf` qdisc limits to the link rate.
Ranks talk TCP (`DDP_COMM_TRANSPORT=tcp`; the namespaces share /dev/shm). Needs root and `ip`/`tc`;
`Cluster.check()` says what is missing instead of failing half-way.

    with Cluster(nodes=2, rate="1gbit") as c:
        run_dirs = c.run(["target/release/lm", "--steps", "30"], out=pathlib.Path("/tmp/x"))
"""
import os
import pathlib
import secrets
import shutil
import subprocess
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
PREFIX = "ddpw"  # namespace and link names start with it


def sh(*args, check=True):
    r = subprocess.run(list(args), capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"`{' '.join(args)}` failed: {r.stderr.strip()}")
    return r


class Cluster:
    """`nodes` namespaces joined by a bridge; every link limited to `rate` (tc syntax) each way."""

    def __init__(self, nodes, rate, port=29611, cores=None):
        # Cores the nodes are pinned to, round robin (default: all of this machine's).
        self.cores = cores or os.cpu_count() or 1
        self.nodes, self.rate, self.port = nodes, rate, port
        self.names = [f"{PREFIX}-n{k}" for k in range(nodes)]
        self.switch = f"{PREFIX}-sw"
        self.addrs = [f"10.77.0.{k + 1}" for k in range(nodes)]

    @staticmethod
    def check():
        """None when a cluster can be built here, else why not."""
        if os.geteuid() != 0:
            return "needs root (network namespaces and tc qdiscs)"
        for tool in ("ip", "tc"):
            if shutil.which(tool) is None:
                return f"needs `{tool}` (iproute2)"
        return None

    def __enter__(self):
        self.teardown()
        sh("ip", "netns", "add", self.switch)
        sh("ip", "-n", self.switch, "link", "add", "br0", "type", "bridge")
        sh("ip", "-n", self.switch, "link", "set", "br0", "up")
        for k, (ns, addr) in enumerate(zip(self.names, self.addrs)):
            node_if, sw_if = f"{PREFIX}{k}n", f"{PREFIX}{k}s"
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "add", node_if, "type", "veth", "peer", "name", sw_if)
            sh("ip", "link", "set", node_if, "netns", ns)
            sh("ip", "link", "set", sw_if, "netns", self.switch)
            sh("ip", "-n", self.switch, "link", "set", sw_if, "master", "br0")
            sh("ip", "-n", self.switch, "link", "set", sw_if, "up")
            sh("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", node_if)
            sh("ip", "-n", ns, "link", "set", node_if, "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            # Both directions: the node's egress, and the switch port's egress towards the node.
            for where, dev in ((ns, node_if), (self.switch, sw_if)):
                sh("tc", "-n", where, "qdisc", "add", "dev", dev, "root", "tbf", "rate", self.rate,
                   "burst", "256kb", "latency", "100ms")
        return self

    def __exit__(self, *exc):
        self.teardown()

    def teardown(self):
        r = sh("ip", "netns", "list", check=False)
        for line in r.stdout.splitlines():
            name = line.split()[0] if line.split() else ""
            if name.startswith(PREFIX + "-"):
                sh("ip", "netns", "del", name, check=False)

    def run(self, cmd, out, env=None, timeout=900, ddp_probe=None):
        """Runs `cmd` under `ddp-probe run` on every node (one rank each); returns the node run
        directories `out/node<k>`. Raises with the nodes' logs when a node fails."""
        ddp_probe = ddp_probe or str(ROOT / "target/release/ddp-probe")
        out.mkdir(parents=True, exist_ok=True)
        rdzv = f"whatif-{os.getpid()}-{time.monotonic_ns()}"
        # The store's secret, shared by every node through its environment.
        token = secrets.token_hex(16)
        procs, dirs, logs = [], [], []
        for k, ns in enumerate(self.names):
            d, log = out / f"node{k}", out / f"node{k}.log"
            dirs.append(d)
            logs.append(log)
            full_env = {**os.environ, "DDP_COMM_TRANSPORT": "tcp", "OMP_NUM_THREADS": "1",
                        "DDP_PROBE_STORE_TOKEN": token, **(env or {})}
            # Each node on its own core where there are enough (machines do not share cores);
            # with more nodes than cores, round robin.
            pin = ["taskset", "-c", str(k % self.cores)] if shutil.which("taskset") else []
            procs.append(subprocess.Popen(
                ["ip", "netns", "exec", ns, *pin, ddp_probe, "run", "--nnodes", str(self.nodes),
                 "--nproc-per-node", "1", "--node-rank", str(k), "--master-addr", self.addrs[0],
                 "--master-port", str(self.port), "--rdzv-id", rdzv, "--console", "quiet",
                 "--out", str(d), "--", *cmd],
                cwd=ROOT, env=full_env, stdin=subprocess.DEVNULL, stdout=open(log, "w"),
                stderr=subprocess.STDOUT))
        deadline = time.monotonic() + timeout
        failed = []
        for k, p in enumerate(procs):
            try:
                rc = p.wait(timeout=max(1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.kill()
                rc = "timeout"
            if rc != 0:
                failed.append(k)
        if failed:
            text = "\n".join(f"--- node {k}:\n{logs[k].read_text()[-2000:]}" for k in failed)
            raise RuntimeError(f"nodes {failed} failed:\n{text}")
        return dirs
