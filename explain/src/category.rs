//! The closed list of diagnosis categories, with what each one means, the fix
//! to try first and where its documentation page lives.
//!
//! The ids (`Category::id`) are stable: they appear in `--json` output and
//! name the pages `docs/diagnoses/<id>.md`.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What kind of problem a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// NCCL or gloo could not find or use the network interface it needs.
    NetworkInterface,
    /// A rank could not connect to the store or to a peer: nothing listened.
    ConnectionRefused,
    /// The store (master) port was already taken by another process.
    PortInUse,
    /// Not every rank joined the rendezvous in time.
    RendezvousTimeout,
    /// The ranks disagree on the number of ranks.
    WorldSizeMismatch,
    /// A collective did not finish in time; some rank did not take part.
    CollectiveTimeout,
    /// Ranks issued different collectives (or shapes) at the same point.
    CollectiveMismatch,
    /// One rank ran out of data before the others.
    UnevenInputs,
    /// DDP expected gradients for parameters that got none.
    UnusedParameters,
    /// A rank ran out of GPU memory.
    CudaOom,
    /// The kernel's out-of-memory killer killed a rank.
    HostOomKilled,
    /// A rank died (exception, crash signal, non-zero exit).
    RankCrashed,
    /// `/dev/shm` is too small for NCCL's or the data loader's shared memory.
    ShmTooSmall,
    /// Ranks hang in GPU peer-to-peer transfers inside a node.
    P2pHang,
    /// The RDMA network transport failed (InfiniBand, RoCE, AWS EFA).
    Infiniband,
    /// Ranks run different NCCL versions.
    NcclVersionMismatch,
    /// Two ranks of one node use the same GPU.
    DuplicateGpu,
    /// A CUDA call failed (other than out of memory).
    CudaError,
    /// NVLink SHARP (NVLS) or the fabric manager failed.
    NvlsFabricManager,
    /// NCCL reported an internal, invalid-usage or unsupported-feature error.
    NcclInternalOrUnsupported,
    /// The launcher was interrupted or terminated from outside (Ctrl-C, a
    /// scheduler's SIGTERM or time limit, a lost terminal), and stopped the ranks.
    LauncherInterrupted,
    /// Nothing known matched; the finding shows the most telling lines.
    Unknown,
}

impl Category {
    /// Every category, in the order of the documentation index.
    pub const ALL: [Category; 22] = [
        Category::NetworkInterface,
        Category::ConnectionRefused,
        Category::PortInUse,
        Category::RendezvousTimeout,
        Category::WorldSizeMismatch,
        Category::CollectiveTimeout,
        Category::CollectiveMismatch,
        Category::UnevenInputs,
        Category::UnusedParameters,
        Category::CudaOom,
        Category::HostOomKilled,
        Category::RankCrashed,
        Category::ShmTooSmall,
        Category::P2pHang,
        Category::Infiniband,
        Category::NcclVersionMismatch,
        Category::DuplicateGpu,
        Category::CudaError,
        Category::NvlsFabricManager,
        Category::NcclInternalOrUnsupported,
        Category::LauncherInterrupted,
        Category::Unknown,
    ];

    /// The stable id, as in `--json` output and the docs page name.
    pub fn id(self) -> &'static str {
        match self {
            Category::NetworkInterface => "network_interface",
            Category::ConnectionRefused => "connection_refused",
            Category::PortInUse => "port_in_use",
            Category::RendezvousTimeout => "rendezvous_timeout",
            Category::WorldSizeMismatch => "world_size_mismatch",
            Category::CollectiveTimeout => "collective_timeout",
            Category::CollectiveMismatch => "collective_mismatch",
            Category::UnevenInputs => "uneven_inputs",
            Category::UnusedParameters => "unused_parameters",
            Category::CudaOom => "cuda_oom",
            Category::HostOomKilled => "host_oom_killed",
            Category::RankCrashed => "rank_crashed",
            Category::ShmTooSmall => "shm_too_small",
            Category::P2pHang => "p2p_hang",
            Category::Infiniband => "infiniband",
            Category::NcclVersionMismatch => "nccl_version_mismatch",
            Category::DuplicateGpu => "duplicate_gpu",
            Category::CudaError => "cuda_error",
            Category::NvlsFabricManager => "nvls_fabric_manager",
            Category::NcclInternalOrUnsupported => "nccl_internal_or_unsupported",
            Category::LauncherInterrupted => "launcher_interrupted",
            Category::Unknown => "unknown",
        }
    }

    /// The category with this id.
    pub fn from_id(id: &str) -> Option<Category> {
        Category::ALL.into_iter().find(|c| c.id() == id)
    }

    /// The documentation page, relative to the repository root.
    pub fn doc_path(self) -> String {
        format!("docs/diagnoses/{}.md", self.id())
    }

    /// What happened, as the predicate of a title: "rank 1 ran out of GPU
    /// memory".
    pub fn predicate(self) -> &'static str {
        match self {
            Category::NetworkInterface => "could not use a network interface the job needs",
            Category::ConnectionRefused => "could not connect: nothing listened at the address",
            Category::PortInUse => "could not listen: the port is already in use",
            Category::RendezvousTimeout => "did not join the rendezvous in time",
            Category::WorldSizeMismatch => "disagreed on the world size",
            Category::CollectiveTimeout => "timed out in a collective",
            Category::CollectiveMismatch => "issued different collectives at the same point",
            Category::UnevenInputs => "ran out of input batches before the others",
            Category::UnusedParameters => "had parameters that received no gradient",
            Category::CudaOom => "ran out of GPU memory",
            Category::HostOomKilled => {
                "got SIGKILL, most likely from the host's out-of-memory killer"
            }
            Category::RankCrashed => "crashed",
            Category::ShmTooSmall => "ran out of shared memory (/dev/shm)",
            Category::P2pHang => "hung in GPU peer-to-peer transfers within the node",
            Category::Infiniband => "failed in the RDMA network (InfiniBand, RoCE, AWS EFA)",
            Category::NcclVersionMismatch => "ran different NCCL versions",
            Category::DuplicateGpu => "shared one GPU",
            Category::CudaError => "hit a CUDA error",
            Category::NvlsFabricManager => "failed in NVLink SHARP (NVLS) or the fabric manager",
            Category::NcclInternalOrUnsupported => {
                "hit an NCCL internal, invalid-usage or unsupported-feature error"
            }
            Category::LauncherInterrupted => "was stopped by a signal to the launcher",
            Category::Unknown => "failed in a way ddp-probe does not recognise",
        }
    }

    /// What the category means, in plain language.
    pub fn meaning(self) -> &'static str {
        match self {
            Category::NetworkInterface => {
                "NCCL or gloo picks a network interface for bootstrap and data; here it found none \
                 usable (a wrong NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME, an interface that is down, \
                 an unreachable address, or a loopback/docker interface used between nodes)."
            }
            Category::ConnectionRefused => {
                "A rank tried to reach the store (MASTER_ADDR:MASTER_PORT) or a peer and the \
                 connection was refused: nothing was listening there yet, the process that should \
                 listen had died, or the address or port is wrong or blocked."
            }
            Category::PortInUse => {
                "The rank that hosts the store could not listen on the master port because another \
                 process holds it (often a previous run that has not exited yet)."
            }
            Category::RendezvousTimeout => {
                "The store waited for every rank to register and gave up: some ranks were never \
                 started, started too late, crashed before init_process_group, or point at another \
                 store address."
            }
            Category::WorldSizeMismatch => {
                "The ranks were started with different ideas of how many ranks there are (WORLD_SIZE, \
                 --nproc-per-node × --nnodes), so some wait for ranks that will never exist or use \
                 ranks outside the range."
            }
            Category::CollectiveTimeout => {
                "A collective did not complete within the timeout. Usually one rank never issued it \
                 and the others wait for it: it ran out of batches (data uneven across ranks: the \
                 timeout then comes at an epoch's end or in the evaluation after it), it took \
                 another branch (a block only some ranks run that calls a collective: evaluation, \
                 checkpointing, logging), it is still busy (a long save, evaluation or data step \
                 on one rank), or it died. Less often the transport itself is stuck."
            }
            Category::CollectiveMismatch => {
                "Ranks called different collectives, or the same collective with different shapes or \
                 types, at the same sequence number: the program's control flow differs between ranks."
            }
            Category::UnevenInputs => {
                "One rank got fewer batches than the others and left the training loop, so the others \
                 wait in a gradient all-reduce it will never join."
            }
            Category::UnusedParameters => {
                "DDP waits for a gradient of every parameter before it reduces a bucket; some \
                 parameters did not take part in computing the loss, so their gradients never \
                 arrived and the reduction of the previous iteration never finished. The same \
                 bookkeeping fails the other way when a parameter's gradient hook fires twice in \
                 one iteration (\"marked as ready twice\": reentrant activation checkpointing, a \
                 module used twice)."
            }
            Category::CudaOom => {
                "A rank asked the GPU for more memory than was free. The other ranks usually fail \
                 afterwards only because this rank went away."
            }
            Category::HostOomKilled => {
                "A rank was killed with SIGKILL without printing an error. Outside the launcher, the \
                 usual sender is the kernel's out-of-memory killer (host RAM, not GPU memory, ran \
                 out), or a container or batch-system memory limit."
            }
            Category::RankCrashed => {
                "A rank died: it raised an exception, exited with a non-zero code or was killed by a \
                 signal. Other ranks then see closed connections or time out; those are consequences."
            }
            Category::ShmTooSmall => {
                "NCCL's shared-memory transport and PyTorch's data-loader workers put buffers in \
                 /dev/shm; it was too small (containers default to 64 MB), so creating a segment \
                 failed or a process got SIGBUS when touching it."
            }
            Category::P2pHang => {
                "The ranks of one node wait in the same collective and nobody is behind: with NCCL's \
                 P2P transport in use, this typically means GPU peer-to-peer traffic is blocked \
                 (PCIe ACS / IOMMU settings, virtualisation, a driver bug)."
            }
            Category::Infiniband => {
                "NCCL's RDMA network transport failed (InfiniBand or RoCE through its own IB \
                 transport, AWS EFA through the aws-ofi-nccl plugin's `NET/OFI`): a verbs or \
                 libfabric call failed (often memory registration limited by `ulimit -l`), a work \
                 completion returned an error (link or fabric problem), or the HCA / GID \
                 configuration is wrong."
            }
            Category::NcclVersionMismatch => {
                "The ranks loaded different NCCL versions; NCCL refuses to build a communicator \
                 across versions."
            }
            Category::DuplicateGpu => {
                "Two ranks on the same host selected the same GPU (for example every rank uses \
                 cuda:0 because torch.cuda.set_device(local_rank) was not called); NCCL needs one GPU \
                 per rank."
            }
            Category::CudaError => {
                "A CUDA call failed with an error other than out of memory: an illegal memory \
                 access, a device-side assert, a launch failure, a bad device ordinal, or a driver \
                 problem. Kernel errors are reported asynchronously, often at a later call."
            }
            Category::NvlsFabricManager => {
                "NVLink SHARP (NVLS) multicast or the NVSwitch fabric manager failed: on NVSwitch \
                 systems CUDA reports 'system not yet initialized' when nvidia-fabricmanager is not \
                 running, and NVLS buffer set-up can fail on unsupported drivers or partitions."
            }
            Category::NcclInternalOrUnsupported => {
                "NCCL returned ncclInternalError, ncclInvalidUsage, ncclInvalidArgument or \
                 ncclSystemError, or warned that a requested feature is not supported, without a \
                 more specific reason in the logs."
            }
            Category::LauncherInterrupted => {
                "The launcher (torchrun, ddp-probe run, the DeepSpeed or accelerate launcher) got a \
                 signal from outside: Ctrl-C (SIGINT), SIGTERM from the batch system at its time \
                 limit or on preemption, or from the node's handling of memory pressure (a job's \
                 or container's memory limit, an eviction), SIGHUP when the terminal or SSH \
                 session closed. It then \
                 stopped every rank; the ranks' own errors and exit codes after that are \
                 consequences, not the cause."
            }
            Category::Unknown => {
                "No known pattern matched. The most telling lines (warnings, errors, tracebacks, the \
                 last lines of each log) are shown instead."
            }
        }
    }

    /// The fix to try first.
    pub fn fix(self) -> &'static str {
        match self {
            Category::NetworkInterface => {
                "Set NCCL_SOCKET_IFNAME (and GLOO_SOCKET_IFNAME for gloo) to the interface that \
                 connects the nodes (see `ip -br addr`); between nodes never use lo or docker0. Check \
                 that MASTER_ADDR resolves and is reachable from every node."
            }
            Category::ConnectionRefused => {
                "Check that MASTER_ADDR/MASTER_PORT are the same on every rank and point at the host \
                 of rank 0, that rank 0 is alive (look at its log first), and that the port is open \
                 in firewalls/security groups (`nc -zv MASTER_ADDR MASTER_PORT`)."
            }
            Category::PortInUse => {
                "Pick another port (--master-port / MASTER_PORT) or stop the process holding it \
                 (`ss -ltnp | grep PORT`); leftover ranks of an earlier run are the usual holders."
            }
            Category::RendezvousTimeout => {
                "Make sure every rank was started and reached init_process_group (read the logs of \
                 the missing ranks), that all use the same MASTER_ADDR, MASTER_PORT and world size, \
                 and that slow starts fit in the timeout."
            }
            Category::WorldSizeMismatch => {
                "Start every rank with the same WORLD_SIZE (= nnodes × nproc_per_node) and ranks \
                 0..WORLD_SIZE-1; check launcher flags and environment overrides on each node."
            }
            Category::CollectiveTimeout => {
                "Find the rank that is behind (named here when the logs or traces tell) and read its \
                 log. Give every rank the same number of batches (DistributedSampler with \
                 drop_last=True, or `with model.join():`); call collectives on every rank or on \
                 none (not inside `if rank == 0:`); for work meant to be long on one rank, have the \
                 others wait in a barrier under a longer process-group timeout. Only raise the \
                 timeout if the work is legitimately slow."
            }
            Category::CollectiveMismatch => {
                "Make every rank call the same collectives in the same order with the same shapes: \
                 look for rank-dependent branches (if rank == 0: ...), data-dependent early exits \
                 and different model code per rank. TORCH_DISTRIBUTED_DEBUG=DETAIL names the calls."
            }
            Category::UnevenInputs => {
                "Give every rank the same number of batches (DistributedSampler with drop_last=True, \
                 or an equal-length shard per rank), or wrap the loop in \
                 `with model.join():` (torch.distributed.algorithms.Join) for uneven inputs."
            }
            Category::UnusedParameters => {
                "Make every parameter contribute to the loss, or construct DDP with \
                 find_unused_parameters=True (costs a graph traversal per step; PyTorch \
                 Lightning: strategy=\"ddp_find_unused_parameters_true\"; Accelerate: \
                 DistributedDataParallelKwargs(find_unused_parameters=True)), or freeze the \
                 parameters (requires_grad=False). TORCH_DISTRIBUTED_DEBUG=INFO names them. For \
                 \"marked as ready twice\": construct DDP with static_graph=True, or use \
                 non-reentrant checkpointing (torch.utils.checkpoint(..., use_reentrant=False))."
            }
            Category::CudaOom => {
                "Lower the per-rank batch size or sequence length, use activation checkpointing or \
                 mixed precision, reduce bucket_cap_mb, and check that no two ranks share a GPU \
                 (nvidia-smi). PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True helps fragmentation."
            }
            Category::HostOomKilled => {
                "Confirm on the node with `dmesg | grep -i oom` (or `journalctl -k | grep -i oom`), \
                 then lower host memory use: fewer data-loader workers, smaller prefetch, no \
                 in-memory dataset copies per rank, or a larger memory limit for the job."
            }
            Category::RankCrashed => {
                "Fix the error in the crashed rank's own log (its traceback or last lines); the \
                 errors of the other ranks are consequences and go away with it."
            }
            Category::ShmTooSmall => {
                "Give the container more shared memory (`docker run --shm-size=8g` or `--ipc=host`, \
                 a Memory-backed emptyDir on Kubernetes); as a workaround NCCL_SHM_DISABLE=1 or fewer \
                 data-loader workers."
            }
            Category::P2pHang => {
                "Confirm with NCCL_P2P_DISABLE=1 (if the hang goes away, P2P is the problem); then \
                 disable PCIe ACS or set the IOMMU to passthrough (iommu=pt), update the driver, and \
                 check `nvidia-smi topo -m`. The nccl-tests all_reduce_perf run reproduces it."
            }
            Category::Infiniband => {
                "Check `ibstat`/`ibv_devinfo` (ports Active), raise the locked-memory limit \
                 (`ulimit -l unlimited`), select the right HCAs and GID (NCCL_IB_HCA, \
                 NCCL_IB_GID_INDEX), and try NCCL_IB_DISABLE=1 to confirm the IB path is at fault. \
                 On AWS EFA: `fi_info -p efa` lists the devices, the nodes' security group must \
                 allow all traffic among them, and NCCL_NET=Socket confirms the plugin's path is \
                 at fault."
            }
            Category::NcclVersionMismatch => {
                "Install the same PyTorch/NCCL build on every node (same container image); print \
                 torch.cuda.nccl.version() on each rank to check."
            }
            Category::DuplicateGpu => {
                "Call torch.cuda.set_device(local_rank) before init_process_group (or pass \
                 device_id), and start at most as many ranks per node as it has GPUs; check \
                 CUDA_VISIBLE_DEVICES per rank."
            }
            Category::CudaError => {
                "Rerun with CUDA_LAUNCH_BLOCKING=1 to find the failing kernel; device-side asserts \
                 are usually bad indices (labels out of range). Check `nvidia-smi` and \
                 `dmesg | grep -i xid` for hardware or driver faults. \"invalid device ordinal\" \
                 at start-up means a rank asked for a GPU the host does not show: start no more \
                 processes per node (--nproc_per_node) than CUDA_VISIBLE_DEVICES shows, and pick \
                 the GPU by the local rank (LOCAL_RANK), not the global rank or a physical GPU \
                 id (CUDA_VISIBLE_DEVICES numbers the GPUs it shows from 0)."
            }
            Category::NvlsFabricManager => {
                "Start nvidia-fabricmanager on NVSwitch systems (`systemctl status \
                 nvidia-fabricmanager`, versions must match the driver); as a workaround disable NVLS \
                 with NCCL_NVLS_ENABLE=0."
            }
            Category::NcclInternalOrUnsupported => {
                "Rerun with NCCL_DEBUG=INFO (ddp-probe run sets it) to get the NCCL WARN line that \
                 explains it; check NCCL_* variables for unsupported values, and upgrade NCCL if it \
                 is a known bug."
            }
            Category::LauncherInterrupted => {
                "Find who sent the signal: the batch system's log (Slurm: `sacct -j JOB -o \
                 State,ExitCode`, TIMEOUT or PREEMPTED), the terminal (run under nohup, tmux or \
                 screen so a closed session does not send SIGHUP), a container's stop, or the \
                 host running out of memory (`dmesg -T | grep -i -E 'out of memory|oom'` on the \
                 node, the scheduler's OUT_OF_MEMORY state). Raise the time limit, checkpoint \
                 and resume, requeue on preemption, or lower host memory use."
            }
            Category::Unknown => {
                "Read the lines shown; rerun under `ddp-probe run` (it keeps every rank's output, \
                 NCCL_DEBUG=INFO logs and traces) so the next diagnosis has more to go on."
            }
        }
    }

    /// What would decide when the evidence for this category is indirect.
    pub fn to_confirm(self) -> &'static str {
        match self {
            Category::HostOomKilled => {
                "the kernel log of the rank's node: `dmesg -T | grep -i -e oom -e 'killed process'` \
                 (or `journalctl -k`); a batch system's memory limit shows in its accounting"
            }
            Category::ShmTooSmall => {
                "`df -h /dev/shm` where the rank ran (64 MB is a container's default); \
                 NCCL_DEBUG=INFO names the shared-memory segment it could not create"
            }
            Category::CollectiveTimeout | Category::UnevenInputs | Category::CollectiveMismatch => {
                "the ranks' flight-recorder dumps (TORCH_FR_BUFFER_SIZE=2000, or \
                 TORCH_NCCL_TRACE_BUFFER_SIZE before PyTorch 2.9; TORCH_NCCL_DUMP_ON_TIMEOUT=1) or \
                 a rerun under `ddp-probe run --hang-timeout`: \
                 they name the rank that did not enter the collective, and what it did instead"
            }
            Category::RankCrashed => {
                "the crashed rank's own stderr (`logs/rank-N.stderr` under `ddp-probe run`), or \
                 its core dump for a native crash"
            }
            Category::NcclInternalOrUnsupported
            | Category::NetworkInterface
            | Category::Infiniband => {
                "a rerun with NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET): the WARN line before \
                 the error names the reason"
            }
            Category::P2pHang => {
                "a rerun with NCCL_P2P_DISABLE=1: if it no longer hangs, GPU peer-to-peer is the \
                 cause; `lspci -vvv | grep -i acsctl` shows ACS enabled on PCIe bridges"
            }
            Category::ConnectionRefused | Category::RendezvousTimeout => {
                "on the master host, `ss -ltnp | grep PORT` (is the store listening?); from a \
                 failing node, `nc -zv MASTER_ADDR PORT` and `getent hosts MASTER_ADDR` (can it be \
                 reached and resolved: firewall, DNS, the right address?)"
            }
            Category::PortInUse => "`ss -ltnp | grep PORT` on the master host shows who holds the port",
            Category::LauncherInterrupted => {
                "the batch system's record of the job (Slurm: `sacct -j JOB`), or who held the \
                 terminal"
            }
            _ => {
                "rerun under `ddp-probe run`: it keeps every rank's output, the NCCL logs and the \
                 traces"
            }
        }
    }

    /// Ranking weight among findings of the same role: lower comes first.
    /// Specific, local causes come before causes that are usually effects of
    /// something else.
    pub(crate) fn priority(self) -> u8 {
        match self {
            Category::HostOomKilled => 1,
            Category::CudaOom => 2,
            Category::ShmTooSmall => 3,
            Category::DuplicateGpu => 4,
            Category::NcclVersionMismatch => 5,
            Category::WorldSizeMismatch => 6,
            Category::PortInUse => 7,
            Category::NetworkInterface => 8,
            Category::NvlsFabricManager => 9,
            Category::Infiniband => 10,
            Category::CudaError => 11,
            Category::UnusedParameters => 12,
            Category::CollectiveMismatch => 13,
            Category::UnevenInputs => 14,
            Category::P2pHang => 15,
            Category::RankCrashed => 17,
            Category::NcclInternalOrUnsupported => 16,
            Category::RendezvousTimeout => 18,
            Category::ConnectionRefused => 19,
            Category::CollectiveTimeout => 20,
            Category::LauncherInterrupted => 0,
            Category::Unknown => 21,
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_through_serde_and_from_id() {
        for c in Category::ALL {
            let json = serde_json::to_value(c).unwrap();
            assert_eq!(json, c.id());
            assert_eq!(Category::from_id(c.id()), Some(c));
            assert!(c.doc_path().ends_with(&format!("{}.md", c.id())));
        }
        assert_eq!(Category::from_id("nope"), None);
    }

    #[test]
    fn priorities_are_distinct() {
        let mut p: Vec<u8> = Category::ALL.iter().map(|c| c.priority()).collect();
        p.sort_unstable();
        p.dedup();
        assert_eq!(p.len(), Category::ALL.len());
    }
}
