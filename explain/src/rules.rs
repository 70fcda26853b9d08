//! The line patterns: which message means which category, and how the
//! ranks and specifics are read out of it.
//!
//! A rule matches a line when, for every one of its needle groups, at least
//! one needle occurs in the ASCII-lowercased line, and none of its `not`
//! needles does. Rules are tried in order and the first match wins, so the
//! specific ones come first (`Cuda failure 'out of memory'` is `cuda_oom`,
//! not `cuda_error`).
//!
//! Where the patterns come from:
//!
//! * NCCL: the format strings of NCCL's `WARN(...)`/`INFO(...)` calls
//!   (`init.cc`: "Duplicate GPU detected : rank %d and rank %d both on CUDA
//!   device %lx", "Mismatched NCCL version detected : rank %d version %d rank
//!   %d version %d", "Invalid rank requested : %d/%d"; `bootstrap.cc`:
//!   "Bootstrap : no socket interface found"; `misc/shmutils.cc`: "Error
//!   while creating shared memory segment %s (size %zu)"; `misc/ibvwrap.cc`:
//!   "Call to ibv_... failed"; `socket.cc`: "Connect to %s failed : %s") and
//!   the `ncclResult_t` strings of NCCL's user guide (§7.4 of the project's
//!   reference notes).
//! * PyTorch: strings of `ProcessGroupNCCL.cpp` ("Watchdog caught collective
//!   operation timeout: WorkNCCL(SeqNum=.., OpType=.., ...) ran for N
//!   milliseconds before timing out"), `TCPStore.cpp` ("Timed out after N
//!   seconds waiting for clients. X/Y clients joined."), `socket.cpp` ("The
//!   server socket has failed to listen on any local network address"),
//!   `reducer.cpp` ("Expected to have finished reduction in the prior
//!   iteration ...", "Parameter indices which did not receive grad for rank
//!   N"), `ProcessGroupWrapper.cpp` ("Detected mismatch between collectives
//!   on ranks"), the `Join` context manager ("Detected at least one rank that
//!   exhausted inputs", "Detected uneven input skew"), `distributed_c10d.py`'s
//!   store-based barrier ("Waiting in store based barrier ... worker_count=7"),
//!   the CUDA caching allocator ("CUDA out of memory"),
//!   `DataLoader` ("out of shared memory", "Bus error"), gloo's `pair.cc`
//!   ("Connection closed by peer") and torchelastic's `ChildFailedError`.
//! * fairseq's `all_gather_list` (copied into DPR and others): "workers have
//!   fallen out of sync".
//! * The reference DDP of this project (`comm::CommError`'s messages):
//!   "rendezvous timed out after Ns: ranks 2, 3 of 4 never arrived at ADDR",
//!   "rank 1 closed its connection during all_reduce seq 17; it probably
//!   exited or was killed", "collective mismatch at seq 17: rank 0 is in
//!   all_reduce ..., rank 1 sent broadcast ...", "timed out after 30s in
//!   all_reduce seq 17: still waiting for rank 1" (also accepted as "timed
//!   out after 30s waiting for rank 1 in all_reduce seq 17"), "I/O error with
//!   rank 1 during ...", "could not connect to the store at ADDR within ...",
//!   "store get timed out after ...: key(s) ... never set", and "parameters
//!   that did not receive a gradient: ...".

use crate::category::Category;
use crate::report::Role;
use crate::sanitize::{clip, sanitize};
use crate::signal::Attach;

/// What a rule read out of a line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Extract {
    /// The ranks the message is about.
    pub subjects: Vec<usize>,
    /// The specifics, as a short phrase.
    pub detail: Option<String>,
    /// The number of ranks the message expected.
    pub expected_world: Option<usize>,
    /// The port the message names (a port already in use).
    pub port: Option<u16>,
    /// Another category than the rule's, when the specifics show it (a
    /// barrier that more ranks joined than the group has is not a timeout).
    pub category: Option<Category>,
}

/// One line pattern.
pub(crate) struct Rule {
    /// A stable name (tests and docs refer to it).
    pub name: &'static str,
    /// The category a match shows.
    pub category: Category,
    /// Cause, symptom or consequence.
    pub role: Role,
    /// How a match joins findings.
    pub attach: Attach,
    /// Every group must have a needle in the lowercased line.
    pub groups: &'static [&'static [&'static str]],
    /// No needle of these may occur.
    pub not: &'static [&'static str],
    /// Reads ranks and specifics: `(line, lowercased line)`.
    pub extract: fn(&str, &str) -> Extract,
}

impl Rule {
    /// Whether the rule matches the lowercased line.
    pub fn matches(&self, lower: &str) -> bool {
        self.groups
            .iter()
            .all(|group| group.iter().any(|n| lower.contains(n)))
            && !self.not.iter().any(|n| lower.contains(n))
    }
}

/// Where `rule` is in [`RULES`] (most specific first); after every rule for the shell's
/// reports, which are not in it.
pub(crate) fn position(rule: &Rule) -> usize {
    RULES
        .iter()
        .position(|r| std::ptr::eq(r, rule))
        .unwrap_or(RULES.len())
}

/// The first rule that matches `line`, with what it read.
pub(crate) fn classify(line: &str) -> Option<(&'static Rule, Extract)> {
    let lower = line.to_ascii_lowercase();
    // ProcessGroupNCCL's "NCCL communicator was aborted on rank 1. Original reason for failure
    // was: ..." carries this rank's own error after it: read that, unless it is itself only a
    // consequence.
    const ORIGINAL: &str = "original reason for failure was:";
    if let Some(at) = lower.find(ORIGINAL) {
        let reason = &line[at + ORIGINAL.len()..];
        if let Some(found) = classify(reason).filter(|(r, _)| r.role != Role::Consequence) {
            return Some(found);
        }
    }
    if let Some(class) = xid_number(&lower).map(xid_class) {
        let rule = match class {
            XidClass::Informational => return None,
            XidClass::Teardown => &XID_TEARDOWN,
            XidClass::Hardware => RULES.iter().find(|r| r.name == RULE_GPU_HARDWARE_FAULT)?,
            XidClass::Program => RULES.iter().find(|r| r.name == "cuda_error")?,
        };
        return Some((rule, (rule.extract)(line, &lower)));
    }
    if let Some((rule, subjects)) = task_signal_report(&lower) {
        let mut ex = (rule.extract)(line, &lower);
        ex.subjects = subjects;
        return Some((rule, ex));
    }
    RULES
        .iter()
        .find(|r| r.matches(&lower))
        .or_else(|| shell_report(&lower))
        .or_else(|| sacct_row(&lower))
        .or_else(|| nccl_return_code(&lower).map(|_| &NCCL_RETURN_CHAIN))
        .map(|r| (r, (r.extract)(line, &lower)))
}

/// A row of Slurm's `sacct` table (default columns `JobID JobName Partition Account AllocCPUS
/// State ExitCode`, as people paste it): a job or step state among its columns and the
/// `ExitCode` (`N:M`, exit status and signal) last. `sacct` cuts a state longer than the
/// column to 9 characters and a `+` (`OUT_OF_ME+`, `CANCELLED+`). The states that say why
/// the job ended (Slurm's `job_state_string`): OUT_OF_MEMORY, the job's cgroup memory limit
/// (the kernel's OOM killer within its allocation); TIMEOUT, PREEMPTED and DEADLINE, Slurm
/// stopping it from outside; NODE_FAIL, a node of the job lost. FAILED, CANCELLED and
/// COMPLETED say nothing of the cause.
fn sacct_row(lower: &str) -> Option<&'static Rule> {
    let cols: Vec<&str> = lower.split_whitespace().collect();
    // The job id first (`4242`, `4242.batch`, `4242_7`), the state and the exit code last.
    let [first, .., state, exit_code] = cols[..] else {
        return None;
    };
    let numbers = |a: &str, b: &str| {
        !a.is_empty()
            && !b.is_empty()
            && a.bytes().all(|c| c.is_ascii_digit())
            && b.bytes().all(|c| c.is_ascii_digit())
    };
    if cols.len() < 4
        || !first.starts_with(|c: char| c.is_ascii_digit())
        || !exit_code
            .split_once(':')
            .is_some_and(|(a, b)| numbers(a, b))
    {
        return None;
    }
    match state {
        "out_of_memory" | "out_of_me+" => Some(&SACCT_OUT_OF_MEMORY),
        "timeout" | "preempted" | "deadline" => Some(&SACCT_STOPPED),
        "node_fail" => Some(&SACCT_NODE_FAIL),
        _ => None,
    }
}

/// What an NVIDIA Xid says, by its number (NVIDIA's Xid catalog, docs.nvidia.com/deploy/
/// xid-errors: each Xid's description and resolution).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum XidClass {
    /// The GPU or its memory failed, or the GPU needs a reset: ECC double-bit and
    /// uncorrectable errors (48, 94, 95, 140), row remapping failures (64), NVLink errors (74,
    /// 144-150), the GPU off the bus (79), GSP and micro-controller halts and timeouts (61, 62,
    /// 119, 120), a recovery action asking for a reset (154).
    Hardware,
    /// The driver tearing down a process that ended (45, ROBUST_CHANNEL_PREEMPTIVE_REMOVAL:
    /// "logged when the user application aborts", Ctrl-C, a kill, a reset; the catalog's
    /// resolution: "follow other Xid"): a consequence.
    Teardown,
    /// Reports the catalog says to ignore or that have no operational impact: a row marked for
    /// remapping at the next reset (63), a high single-bit ECC rate (92), InfoROM wear (93),
    /// corrected C2C errors (121), an intentional link down (155), power smoothing (162).
    Informational,
    /// Any other, most often the program's own kernel fault (13 graphics engine exception,
    /// 31 MMU fault, 43 a channel stopped): a CUDA error.
    Program,
}

fn xid_class(n: u32) -> XidClass {
    match n {
        48 | 61 | 62 | 64 | 74 | 79 | 94 | 95 | 119 | 120 | 140 | 144..=150 | 154 => {
            XidClass::Hardware
        }
        45 => XidClass::Teardown,
        63 | 92 | 93 | 121 | 155 | 162 => XidClass::Informational,
        _ => XidClass::Program,
    }
}

/// The Xid number of the kernel's line ("NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, ..."), of
/// the Kubernetes device plugin's ("XidCriticalError: Xid=79 on Device=GPU-...") or of DCGM's
/// ("Detected XID 79 for GPU 2", "GPU had an uncontained error (XID 95)").
fn xid_number(lower: &str) -> Option<u32> {
    let after = if let Some(i) = lower.find("nvrm: xid") {
        let rest = &lower[i + "nvrm: xid".len()..];
        let colon = rest
            .find("): ")
            .map(|c| c + 3)
            .or_else(|| rest.find(": ").map(|c| c + 2))?;
        &rest[colon..]
    } else if let Some(i) = lower
        .match_indices("xid=")
        .map(|(i, _)| i)
        .find(|&i| i == 0 || !lower.as_bytes()[i - 1].is_ascii_alphanumeric())
    {
        &lower[i + "xid=".len()..]
    } else if let Some(i) = lower.find("detected xid ") {
        &lower[i + "detected xid ".len()..]
    } else if let Some(i) = lower.find("(xid ") {
        &lower[i + "(xid ".len()..]
    } else {
        return None;
    };
    u32::try_from(leading_number(after)?).ok()
}

/// A launcher's report that one of its tasks ended by a signal, read like a shell's
/// ([`shell_report`]): Open MPI's and PRRTE's `mpirun` ("mpirun noticed that process rank 3
/// with PID 12345 on node host-a exited on signal 9 (Killed)." in `help-orterun.txt` /
/// `help-prun.txt`, the rank read from it) and Slurm's `srun` ("srun: error: host-a: task 1:
/// Killed", "tasks 0-3: Bus error", `strsignal`'s words, " (core dumped)" after them; its task
/// is a rank only when srun started the ranks itself, so no rank is read), and Open MPI's own
/// signal handler in the process ("[host:4242] Signal: Bus error (7)"). SIGKILL, SIGBUS,
/// SIGSEGV and SIGABRT (whose finding an abort's `what():` line, when the log has it, joins).
fn task_signal_report(lower: &str) -> Option<(&'static Rule, Vec<usize>)> {
    let by_number = |n: u32| match n {
        9 => Some(&SHELL_KILLED),
        7 => Some(&SHELL_BUS_ERROR),
        11 => Some(&SHELL_SEGFAULT),
        6 => Some(&SHELL_ABORTED),
        _ => None,
    };
    if let Some(i) = lower.find("noticed that process rank ") {
        let rest = &lower[i..];
        let signal = num_after(rest, "exited on signal ")?;
        let rule = by_number(u32::try_from(signal).ok()?)?;
        let rank = num_after(rest, "process rank ").and_then(rank_number);
        return Some((rule, rank.into_iter().collect()));
    }
    if let Some(i) = lower.find("] signal: ") {
        let rest = &lower[i + "] signal: ".len()..];
        let n = rest.rsplit_once('(')?.1.trim_end().strip_suffix(')')?;
        return Some((by_number(n.parse().ok()?)?, Vec::new()));
    }
    let rest = lower.split_once("srun: error: ")?.1;
    let (_, what) = rest.split_once(": task")?;
    let what = what.split_once(": ")?.1.trim();
    let what = what.strip_suffix(" (core dumped)").unwrap_or(what);
    let rule = match what {
        "killed" => &SHELL_KILLED,
        "bus error" => &SHELL_BUS_ERROR,
        "segmentation fault" => &SHELL_SEGFAULT,
        "aborted" => &SHELL_ABORTED,
        _ => return None,
    };
    Some((rule, Vec::new()))
}

/// What a shell or container runtime says about a process it started,
/// which needle lists cannot express: bash's job report for SIGKILL (a line
/// `Killed`, `[1]+  Killed   python train.py`, `run.sh: line 3: 4242 Killed
/// python train.py`) and exit statuses of 128 + signal (`exit code 137`:
/// SIGKILL, 135: SIGBUS, 139: SIGSEGV), as bash, Docker and Kubernetes report
/// them.
fn shell_report(lower: &str) -> Option<&'static Rule> {
    let t = lower.trim();
    let killed_job = t == "killed"
        || t.starts_with("killed  ")
        || t.contains("]+  killed ")
        || t.contains("]-  killed ")
        || t.split(": ").any(|part| {
            let mut words = part.split_whitespace();
            words.next().is_some_and(|w| w.parse::<u32>().is_ok()) && words.next() == Some("killed")
        });
    // (`docker inspect`'s `"OOMKilled": false` says the opposite.)
    if t.contains("oomkilled") && !t.contains("\"oomkilled\": false") {
        return Some(&CONTAINER_OOM_KILLED);
    }
    if killed_job {
        return Some(&SHELL_KILLED);
    }
    if kubelet_lost_the_container(t) {
        return None;
    }
    match exit_status(t)? {
        137 => Some(&SHELL_KILLED),
        135 => Some(&SHELL_BUS_ERROR),
        139 => Some(&SHELL_SEGFAULT),
        _ => None,
    }
}

/// Whether a (lower-case) line is the kubelet's message for a container the runtime lost ("The
/// container could not be located when the pod was terminated", `kubelet_pods.go`), for which
/// it writes exit code 137 itself: no signal was seen.
pub(crate) fn kubelet_lost_the_container(lower: &str) -> bool {
    lower.contains("could not be located when the pod was")
}

/// The status after `exit code`, `exit status`, `exitcode`, `exit_code`, `exited with code`
/// (Kubeflow's training operator, Docker Compose), `return code`, `returncode` (spaces, `:`,
/// `=` between), when it is a whole number.
fn exit_status(lower: &str) -> Option<u32> {
    [
        "exit code",
        "exit status",
        "exitcode",
        "exit_code",
        "exited with code",
        // Horovod's gloo launcher (`runner/gloo_run.py`): "Process 3 exit with status code 137."
        "exit with status code",
        "return code",
        "returncode",
    ]
    .iter()
    .find_map(|key| {
        let i = lower.find(key)?;
        let rest = lower[i + key.len()..].trim_start_matches([' ', ':', '=']);
        let end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if end == 0 || rest[end..].starts_with(|c: char| c.is_ascii_alphanumeric()) {
            return None;
        }
        rest[..end].parse().ok()
    })
}

/// gloo's monitored barrier that a rank did not pass.
pub(crate) const MONITORED_BARRIER_RULE: &str = "monitored_barrier";
/// The rule of NCCL's "no algorithm/protocol available" (the fix names NCCL_ALGO and NCCL_PROTO).
/// Composer's warning that a rank trained no batch.
/// The store's address that this node has no route to.
pub(crate) const RULE_STORE_ADDRESS_UNREACHABLE: &str = "store_address_unreachable";
/// cuBLAS's handle or cuDNN's convolution algorithm that could not be set up (memory, most
/// often).
pub(crate) const RULE_GPU_LIBRARY_SETUP_FAILED: &str = "gpu_library_setup_failed";
/// accelerate's batch-size finder that ran out of sizes (out of memory at every one).
pub(crate) const RULE_BATCH_SIZE_FINDER_EXHAUSTED: &str = "batch_size_finder_exhausted";
/// The name of the rule for accelerate's warning that its `join_uneven_inputs` has no effect
/// (not multi-GPU training): a note for an uneven-inputs finding, never a finding.
pub(crate) const RULE_ACCELERATE_JOIN_NO_EFFECT: &str = "accelerate_join_no_effect";
/// The name of the rule for DDP's Join raising on the rank out of batches ("Rank 1 exhausted
/// all inputs.", `throw_on_early_termination=True`).
pub(crate) const RULE_JOIN_EXHAUSTED: &str = "join_rank_exhausted";
/// The name of the rule for DDP's Join raising on the other ranks ("Detected at least one rank
/// that exhausted inputs. Throwing across all ranks.").
pub(crate) const RULE_JOIN_THROWN: &str = "join_throw_detected";
/// DeepSpeed's batch sizes or ZeRO checkpoint made for another number of ranks.
pub(crate) const RULE_SETTINGS_FOR_ANOTHER_WORLD: &str = "settings_for_another_world";
pub(crate) const RULE_NO_BATCHES_ON_RANK: &str = "no_batches_on_rank";
/// PyTorch's symmetric memory or intra-node all-reduce finding two ranks on one GPU.
pub(crate) const RULE_OVERLAPPING_DEVICES: &str = "overlapping_devices";
/// The amdgpu kernel driver's log of a GPU fault, hang or reset.
pub(crate) const RULE_AMDGPU_FAULT: &str = "amdgpu_fault";
pub(crate) const RULE_NCCL_NO_ALGORITHM: &str = "nccl_no_algorithm";
/// The rule of a CUDA failure in NCCL's shared-memory transport (the fix turns cuMem off).
pub(crate) const RULE_NCCL_SHM_CUDA_FAILURE: &str = "nccl_shm_cuda_failure";
/// The rule of Lightning's checks of the Trainer against the launcher (title and fix name them).
pub(crate) const RULE_LIGHTNING_LAUNCHER_SIZES: &str = "lightning_launcher_sizes";
/// The rule of the GPU processes listed by PyTorch's out-of-memory message, on their own line.
pub(crate) const RULE_GPU_MEMORY_OF_PROCESSES: &str = "gpu_memory_of_processes";
/// The rule of c10d's store client failing to resolve the store's host name.
pub(crate) const RULE_STORE_NAME_UNRESOLVED: &str = "c10d_store_name_unresolved";
/// The same, in TCPStore's own words after the connect failed.
pub(crate) const RULE_STORE_CLIENT_NAME_UNRESOLVED: &str = "tcpstore_client_name_unresolved";
/// The rule of Ray's memory monitor killing workers (title and fix name Ray's threshold).
pub(crate) const RULE_RAY_MEMORY_MONITOR: &str = "ray_memory_monitor";
/// The rule of vLLM's engine finding no room for its KV cache in the GPU memory it was given.
pub(crate) const RULE_VLLM_KV_CACHE_TOO_SMALL: &str = "vllm_kv_cache_too_small";
/// The rule of accelerate refusing to start on GPUs without peer-to-peer support.
pub(crate) const RULE_ACCELERATE_NO_P2P_GUARD: &str = "accelerate_no_p2p_guard";
/// aws-ofi-nccl's registration of a GPU buffer refused with EINVAL.
pub(crate) const RULE_OFI_GPU_BUFFER_REFUSED: &str = "ofi_gpu_buffer_refused";
/// AWS Neuron's collectives asking whether EFA is enabled after their OFI plugin failed.
pub(crate) const RULE_NEURON_OFI_INIT_FAILED: &str = "neuron_ofi_init_failed";
/// NCCL's set-up refusing GPUs that NVLink connects while NVML reports their peer-to-peer off.
pub(crate) const RULE_NCCL_NVLINK_P2P_DISABLED: &str = "nccl_nvlink_p2p_disabled";
/// The rule of a store client whose ping came back with another value: not this job's store.
pub(crate) const RULE_STORE_PING_MISMATCH: &str = "store_ping_mismatch";
/// The rule of NCCL finding no network it could initialise (a forced plugin that did not load).
pub(crate) const RULE_NCCL_NET_PLUGIN_FAILED: &str = "nccl_net_plugin_failed";
/// The rule of NCCL connecting to a peer address that holds no address family.
pub(crate) const RULE_NCCL_PEER_ADDRESS_INVALID: &str = "nccl_peer_address_invalid";
/// The rule of ATen failing to write a tensor's shared-memory file, its reason not shown.
pub(crate) const RULE_TORCH_SHM_WRITE_FAILED: &str = "torch_shm_write_failed";
/// The rule of NCCL's P2P transport failing to map a peer's CUDA IPC handle.
pub(crate) const RULE_CUDA_IPC_OPEN_FAILED: &str = "cuda_ipc_open_failed";
/// The rule of UCX finding no transport of its selection that reaches a peer.
pub(crate) const RULE_UCX_NO_TRANSPORT: &str = "ucx_no_transport";
/// The rule of NCCL's bootstrap receiving a longer message than it expects (another release).
pub(crate) const RULE_NCCL_BOOTSTRAP_TRUNCATED: &str = "nccl_bootstrap_truncated";
/// The rule of a gloo peer that advertised a loopback address (its host name maps to it).
pub(crate) const RULE_GLOO_PEER_LOOPBACK: &str = "gloo_peer_loopback";
/// The rule of NCCL's socket connect to a loopback address refused (a peer bootstrapped on lo).
pub(crate) const RULE_NCCL_PEER_LOOPBACK: &str = "nccl_peer_loopback";
/// The rule of a Ray worker that got SIGTERM (Ray reports its exit code as None).
pub(crate) const RULE_RAY_WORKER_SIGTERM: &str = "ray_worker_sigterm";
/// The rule of a Ray worker whose connection to its raylet closed (no error of its own).
pub(crate) const RULE_RAY_WORKER_CONNECTION_LOST: &str = "ray_worker_connection_lost";
/// The rule of the kubelet evicting a pod for the node's memory.
pub(crate) const RULE_KUBELET_EVICTED_MEMORY: &str = "kubelet_evicted_memory";
/// The rule of kube-scheduler's report that a pod of the job could not be placed.
pub(crate) const RULE_POD_UNSCHEDULABLE: &str = "kube_pod_unschedulable";
/// Ray could not schedule the training workers (placement group or worker group timeout).
pub(crate) const RULE_RAY_WORKERS_UNSCHEDULED: &str = "ray_workers_unscheduled";
/// The rule of the kubelet evicting a pod for its disk (ephemeral storage, an emptyDir).
pub(crate) const RULE_KUBELET_EVICTED_STORAGE: &str = "kubelet_evicted_storage";

macro_rules! rule {
    ($name:expr, $cat:ident, $role:ident, $attach:ident, [$([$($n:literal),+ $(,)?]),+ $(,)?], not [$($x:literal),* $(,)?], $ex:expr) => {
        Rule {
            name: $name,
            category: Category::$cat,
            role: Role::$role,
            attach: Attach::$attach,
            groups: &[$(&[$($n),+]),+],
            not: &[$($x),*],
            extract: $ex,
        }
    };
}

/// torchelastic's launcher got a death signal (its `SignalException`).
pub(crate) const RULE_ELASTIC_SIGNAL_EXCEPTION: &str = "elastic_signal_exception";
/// The rule of the CUDA runtime's words for no usable GPU at all (the finding says so and
/// gives its own fix).
pub(crate) const NO_USABLE_GPU_RULE: &str = "no_usable_gpu";
/// The rule of a rank's word that another rank's collective timed out (ProcessGroupNCCL's
/// dump signal).
pub(crate) const DUMP_SIGNAL_RULE: &str = "dump_signal_from_rank";
/// SGLang's scheduler watchdog or vLLM's shared-memory queue waiting: an engine hangs.
pub(crate) const RULE_ENGINE_HANG_DETECTED: &str = "engine_hang_detected";
/// FSDP's warning that a rank's forward order changed after the first iteration.
pub(crate) const RULE_FSDP_ORDER_CHANGED: &str = "fsdp_order_changed";
/// A NIC's hardware fault in the kernel's log (mlx5, EFA).
pub(crate) const RULE_NIC_KERNEL_FAULT: &str = "nic_kernel_fault";
/// DeepSpeed ZeRO-1/2's reduction of a parameter without a gradient.
pub(crate) const RULE_ZERO_NONE_GRADIENT: &str = "zero_none_gradient";
/// PyTorch's hint after a CUDA error, without the error's own line.
pub(crate) const RULE_CUDA_ERROR_HINT: &str = "cuda_error_hint";
/// Another rank's watchdog signalled a timeout (or error) without naming the rank.
pub(crate) const RULE_TIMEOUT_SIGNAL_FROM_ANOTHER_RANK: &str = "timeout_signal_from_another_rank";
/// The rule of Megatron-LM's bucket whose reduction never started (a parameter without its
/// gradient under overlap_grad_reduce).
pub(crate) const RULE_MEGATRON_BUCKET_NOT_ISSUED: &str = "megatron_bucket_not_issued";
/// NCCL RAS: a process of the job considered dead.
pub(crate) const RULE_NCCL_RAS_DEAD: &str = "nccl_ras_dead";
/// NCCL RAS's INCOMPLETE report: a process it gets no data from.
pub(crate) const RULE_NCCL_RAS_MISSING: &str = "nccl_ras_missing";
/// NCCL RAS: a rank behind the others in a communicator's operations.
pub(crate) const RULE_NCCL_RAS_BEHIND: &str = "nccl_ras_rank_behind";
/// Composer's OOMObserver.
pub(crate) const RULE_COMPOSER_OOM_OBSERVED: &str = "composer_oom_observed";
/// fairseq's heartbeat: no progress for its timeout.
pub(crate) const RULE_FAIRSEQ_HEARTBEAT: &str = "fairseq_heartbeat_timeout";
/// MPI's MPI_ERR_TRUNCATE.
pub(crate) const RULE_MPI_TRUNCATE: &str = "mpi_err_truncate";
/// Open MPI's lost remote daemon.
pub(crate) const RULE_MPI_LOST_DAEMON: &str = "mpi_lost_daemon";
/// The rule of Horovod's stall inspector.
pub(crate) const RULE_HOROVOD_STALL: &str = "horovod_stall";
/// The rule of Ray Train's collective timeout and NCCL hang detector.
pub(crate) const RULE_RAY_TRAIN_COLLECTIVE_TIMEOUT: &str = "ray_train_collective_timeout";
/// The rule of PyTorch's desync report line of ranks inside a collective that did not finish.
pub(crate) const RULE_DESYNC_ALL_JOINED: &str = "desync_report_all_joined";
/// The rule of a GPU's hardware fault (ECC, off the bus, a reset needed).
pub(crate) const RULE_GPU_HARDWARE_FAULT: &str = "gpu_hardware_fault";
/// The rule of a parameter whose gradient DDP was told of twice in one backward.
pub(crate) const PARAMETER_READY_TWICE_RULE: &str = "parameter_ready_twice";
/// The rule of DDP's own check that every rank built the same model.
pub(crate) const DDP_MODEL_DIFFERS_RULE: &str = "ddp_model_differs";
/// The rule of an attribute read through the DDP wrapper instead of the model it wraps.
pub(crate) const DDP_WRAPPER_ATTRIBUTE_RULE: &str = "ddp_wrapper_attribute";

/// A mistake in the program's use of DDP or torch.distributed (or of the build it runs on) that
/// PyTorch names in the exception it raises: these words say why and what to change, in the
/// finding of the rule's category.
pub(crate) struct ProgramMistake {
    /// The rule that reads the exception.
    pub rule: &'static str,
    /// What happened, after "rank N crashed: "; `{}` is the rule's detail, or [`Self::unnamed`].
    pub title: &'static str,
    /// What `{}` in the title says when the line did not name it.
    pub unnamed: &'static str,
    /// Why it fails.
    pub meaning: &'static str,
    /// What to change.
    pub fix: &'static str,
}

/// The program mistakes `explain` names, each read by its rule in [`RULES`].
pub(crate) static PROGRAM_MISTAKES: &[ProgramMistake] = &[
    ProgramMistake {
        rule: DDP_WRAPPER_ATTRIBUTE_RULE,
        title: "the model's {} was read on the DistributedDataParallel wrapper",
        unnamed: "attribute",
        meaning: "DistributedDataParallel wraps the model: the model's own attributes and \
                  methods (`config`, `dtype`, a custom method) are on the wrapper's `.module`, \
                  not on the wrapper. Code that works on one GPU, where nothing wraps the \
                  model, fails this way as soon as it runs under DDP (or under a launcher that \
                  wraps it, such as Accelerate).",
        fix: "Read it on the model itself: `model.module.NAME` when the model is wrapped, or \
              unwrap it first (`accelerator.unwrap_model(model)` with Accelerate); or keep a \
              reference to the bare model from before it was wrapped. Calling the model \
              (`model(batch)`) stays on the wrapper, so that DDP synchronises its gradients.",
    },
    ProgramMistake {
        rule: "process_group_not_initialized",
        title: "a torch.distributed call came before init_process_group",
        unnamed: "",
        meaning: "A collective, a DistributedSampler or DistributedDataParallel needs the \
                  default process group, and this process had not created it: \
                  init_process_group was never called here (a script started with plain \
                  `python` where it expects a launcher, a code path that skips its set-up, or \
                  a child process such as an mp.spawn target that does not call it).",
        fix: "Call torch.distributed.init_process_group() at the start of every rank, before \
              the sampler, the model's wrapping and any collective, and start the job with \
              torchrun or `ddp-probe run`; for runs on one process, guard the distributed \
              parts with `dist.is_initialized()`.",
    },
    ProgramMistake {
        rule: "cuda_in_forked_process",
        title: "CUDA was used in a process forked after CUDA had started",
        unnamed: "",
        meaning: "A child forked from a process that had already initialised CUDA cannot use \
                  CUDA: it inherits a driver state it cannot take over. The child is a \
                  `multiprocessing` process started with the default 'fork' method on Linux, a \
                  process pool, or a DataLoader worker whose dataset touches the GPU.",
        fix: "Start the children with 'spawn' (`torch.multiprocessing.spawn`, \
              `mp.set_start_method(\"spawn\")`, `DataLoader(multiprocessing_context=\"spawn\")`), or \
              keep CUDA out of the parent until they are started and out of DataLoader workers \
              (move batches to the GPU in the training loop, not in the dataset).",
    },
    ProgramMistake {
        rule: "nccl_not_built",
        title: "the job asked for NCCL, which this PyTorch build does not have",
        unnamed: "",
        meaning: "PyTorch's builds for Windows and macOS, and its CPU-only wheels, come without \
                  NCCL: init_process_group(backend=\"nccl\") (or a launcher's default, or a \
                  config's) cannot create the group. This is the build, not the network or the \
                  GPUs.",
        fix: "Use the gloo backend on such a machine (`init_process_group(backend=\"gloo\")`, \
              or the framework's setting for it), or install the CUDA build of PyTorch on \
              Linux where NCCL is wanted (`python -c \"import torch; \
              print(torch.distributed.is_nccl_available())\"` says which you have).",
    },
    ProgramMistake {
        rule: "nccl_without_gpu",
        title: "the job asked for NCCL in a process that sees no GPU",
        unnamed: "",
        meaning: "NCCL moves GPU memory, and this process found no GPU: the machine has none \
                  (a CPU node, a login node), CUDA_VISIBLE_DEVICES hides them (empty, or names \
                  devices that are not there), or the driver cannot be used from the job's \
                  environment (a container started without GPUs).",
        fix: "Run on the GPU nodes and check what the job sees there (`nvidia-smi` and \
              `echo $CUDA_VISIBLE_DEVICES` in the same environment: a container needs `--gpus`); \
              for a run on CPUs, use the gloo backend.",
    },
    ProgramMistake {
        rule: "env_rendezvous_unset",
        title: "the script was started without a launcher ({} is not set)",
        unnamed: "a rendezvous variable",
        meaning: "init_process_group's default set-up (`env://`) reads MASTER_ADDR, \
                  MASTER_PORT, RANK and WORLD_SIZE from the environment, which torchrun or \
                  `ddp-probe run` set for every rank; this process was started without them: \
                  with plain `python train.py`, or by a scheduler that sets other names \
                  (Slurm's SLURM_PROCID, MPI's OMPI_COMM_WORLD_RANK).",
        fix: "Start it with `torchrun --nproc_per_node N train.py` or `ddp-probe run \
              --nproc_per_node N train.py`; under Slurm or MPI, set the four variables from the \
              scheduler's own in the job script; to run one process without a launcher, skip \
              init_process_group when WORLD_SIZE is not set.",
    },
    ProgramMistake {
        rule: "shared_library_not_loaded",
        title: "the dynamic linker could not load {}",
        unnamed: "a shared library",
        meaning: "The process could not start: a shared library it needs (`libnccl.so.2`, \
                  `libcudart.so.12`, a plugin) is not in the linker's search paths, cannot be \
                  mapped (its directory is mounted `noexec`), or needs a newer C or C++ library \
                  (`GLIBC_2.34' not found`) than the image has. None of the rank's own code ran.",
        fix: "Install the library in the job's environment or put its directory on \
              LD_LIBRARY_PATH in every rank's environment (`ldd` on the program or on the \
              library lists what is not found); for `failed to map segment`, mount that directory \
              with exec; for a `GLIBC_x.y' not found`, use an image whose distribution is new \
              enough for the binaries, or binaries built for the older one.",
    },
    ProgramMistake {
        rule: "torch_without_cuda",
        title: "this PyTorch build has no CUDA",
        unnamed: "",
        meaning: "The installed PyTorch is a CPU-only build (a CPU wheel, or the default one of \
                  a platform without CUDA wheels), so the first CUDA call fails in every rank.",
        fix: "Install the CUDA build that matches the driver (`pip install torch --index-url \
              https://download.pytorch.org/whl/cu126`, say; `python -c \"import torch; \
              print(torch.version.cuda)\"` prints None for a CPU build), or run on the CPU with \
              the gloo backend.",
    },
    ProgramMistake {
        rule: "spawn_without_main_guard",
        title: "processes were started while the script was being imported (no `if __name__ == \"__main__\":`)",
        unnamed: "",
        meaning: "A process started with 'spawn' (torch.multiprocessing.spawn, DataLoader \
                  workers on macOS and Windows, any `multiprocessing` with that method) imports \
                  the main script again; a script that starts processes at its top level then \
                  starts them again from inside each child, which Python refuses.",
        fix: "Put the script's entry under `if __name__ == \"__main__\":` (`main()` there, \
              `mp.spawn(...)` inside it), so importing the script starts nothing.",
    },
    ProgramMistake {
        rule: "spawn_unpicklable",
        title: "an object could not be pickled (a nested function, a lambda, a lock)",
        meaning: "Pickle cannot serialise a lambda, a function defined inside another one, or \
                  an object holding a lock, an open file or a connection. Under DDP the object \
                  is most often what a new process is handed: processes started with 'spawn' \
                  (torch.multiprocessing.spawn, DataLoader workers under spawn) receive their \
                  function and its arguments pickled; torch.save of a whole model pickles \
                  too.",
        unnamed: "",
        fix: "Give mp.spawn (and the DataLoader's dataset and collate_fn) a function defined at \
              the module's top level and arguments that pickle: pass paths and settings, and \
              open files, connections and locks inside the child. To save a model, save its \
              `state_dict()`.",
    },
    ProgramMistake {
        rule: "ddp_no_trainable_parameter",
        title: "DistributedDataParallel was given a module with no trainable parameter",
        unnamed: "",
        meaning: "DDP exists to average gradients, and the module it was given has no \
                  parameter with requires_grad=True: the module is frozen, or its parameters \
                  are not registered (created inside forward, or kept in a plain Python list \
                  instead of nn.ModuleList or nn.Parameter).",
        fix: "Wrap only the part that trains (a trainable head over a frozen encoder), register \
              parameters as module attributes, nn.ModuleList or nn.Parameter, and do not wrap a \
              model that only runs inference.",
    },
    ProgramMistake {
        rule: "ddp_device_ids_mismatch",
        title: "DistributedDataParallel's device_ids do not match where the model's parameters are",
        unnamed: "",
        meaning: "With `device_ids=[i]` DDP expects a module whose parameters all live on that \
                  one GPU. They were elsewhere: still on the CPU (the model was wrapped before \
                  `.to(device)`), or spread over several GPUs (a model split across devices, \
                  `device_map=\"auto\"`).",
        fix: "Move the model before wrapping it: `model.to(local_rank)`, then \
              `DistributedDataParallel(model, device_ids=[local_rank])`. For a model spread \
              over several GPUs, or one that stays on the CPU, leave out `device_ids` and \
              `output_device`; under torchrun, do not load the model with \
              `device_map=\"auto\"` in every rank.",
    },
    ProgramMistake {
        rule: "ddp_lazy_parameters",
        title:
            "DistributedDataParallel was given a module whose lazy parameters are not created yet",
        unnamed: "",
        meaning: "Lazy modules (nn.LazyLinear and the like) create their parameters at their \
                  first forward; DDP needs every parameter when it is built, to lay out its \
                  buckets and broadcast rank 0's values.",
        fix: "Run one forward pass with a batch of the right shape before wrapping the model, \
              or give the layers their input sizes.",
    },
    ProgramMistake {
        rule: "ddp_several_device_ids",
        title: "DistributedDataParallel was given several devices in one process",
        unnamed: "",
        meaning: "DDP drives one device per process: its single-process, multi-device mode was \
                  removed, so `device_ids=[0, 1, 2, 3]`, as DataParallel takes it, is refused.",
        fix: "Start one process per GPU (`torchrun --nproc_per_node=NUM_GPUS`, or `ddp-probe \
              run`) and give each `device_ids=[local_rank]`, with LOCAL_RANK read from the \
              environment.",
    },
    ProgramMistake {
        rule: "ddp_mixed_device_types",
        title: "the module given to DistributedDataParallel has parameters on the CPU and on a GPU",
        unnamed: "",
        meaning: "DDP needs every parameter of the module on one type of device, and part of \
                  the model stayed behind: a layer created or attached after `.to(device)`, or \
                  one moved back to the CPU.",
        fix: "Build the whole model first, then move it (`model.to(device)`) and wrap it; \
              `{p.device for p in model.parameters()}` shows where each part is.",
    },
    ProgramMistake {
        rule: "syncbn_on_cpu",
        title: "SyncBatchNorm was used on the CPU",
        unnamed: "",
        meaning: "SyncBatchNorm computes its statistics across the ranks on GPUs (CUDA, XPU or \
                  another accelerator) only: DDP refuses a module holding it whose parameters \
                  are on the CPU, and its forward refuses a CPU input.",
        fix: "On the CPU keep plain BatchNorm: do not call \
              `nn.SyncBatchNorm.convert_sync_batchnorm` (drop the script's `--sync-bn` \
              option); on GPUs, move the model to the rank's GPU before wrapping it.",
    },
    ProgramMistake {
        rule: "batchnorm_single_sample",
        title: "a batch of one sample reached BatchNorm in training",
        unnamed: "",
        meaning: "BatchNorm normalises each channel with the batch's own mean and variance, \
                  which one value per channel cannot give. Under DDP this is nearly always an \
                  epoch's last batch: each rank's share of the data (the DistributedSampler's \
                  length) leaves one sample after the full batches, so every rank fails at the \
                  same step, at the end of the first epoch.",
        fix: "Drop the incomplete last batch (`DataLoader(..., drop_last=True)`), or choose a \
              batch size that leaves no remainder of one sample per rank; where the input is \
              so small that a feature map shrinks to 1×1, use larger inputs or GroupNorm.",
    },
    ProgramMistake {
        rule: "state_dict_compile_prefix",
        title: "a checkpoint's keys and the model's differ by torch.compile's `_orig_mod.` prefix",
        unnamed: "",
        meaning: "`torch.compile(model)` returns a wrapper that holds the model as `_orig_mod`, \
                  so the wrapper's state_dict names every tensor `_orig_mod.<name>`: a \
                  checkpoint saved from it does not load into the model before compiling (every \
                  key unexpected, every key of the model missing), nor the other way round.",
        fix: "Save the model's own state_dict (`model._orig_mod.state_dict()`, or keep a \
              reference to the model before compiling and save that), or strip the prefix when \
              loading: `torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(sd, \
              \"_orig_mod.\")` (for a compiled DDP model, \"module.\" too).",
    },
    ProgramMistake {
        rule: "state_dict_ddp_prefix",
        title: "a checkpoint's keys and the model's differ by DDP's `module.` prefix",
        unnamed: "",
        meaning: "DistributedDataParallel holds the model as `.module`, so the wrapper's \
                  state_dict names every tensor `module.<name>`. A checkpoint saved from the \
                  wrapper does not load into the bare model (every key unexpected, every key of \
                  the model missing); one saved from the bare model does not load into the \
                  wrapper.",
        fix: "Save `model.module.state_dict()` (the bare model's names; from rank 0 only), \
              and load into the bare model before wrapping it; for checkpoints saved from the \
              wrapper already, strip the prefix: \
              `torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(sd, \
              \"module.\")`.",
    },
    ProgramMistake {
        rule: "sampler_with_shuffle",
        title: "the DataLoader was given both a sampler and shuffle=True",
        unnamed: "",
        meaning: "A DataLoader shuffles either by itself (shuffle=True builds a RandomSampler) \
                  or through the sampler it is given, not both. Under DDP the \
                  DistributedSampler splits the data across the ranks and shuffles it \
                  (shuffle=True is its default).",
        fix: "Drop shuffle=True from the DataLoader and keep `DistributedSampler(dataset, \
              shuffle=True)`; call `sampler.set_epoch(epoch)` at the start of each epoch, or \
              every epoch repeats the first one's order.",
    },
    ProgramMistake {
        rule: "nccl_cpu_tensor",
        title: "a collective of an NCCL process group was given a CPU tensor",
        unnamed: "",
        meaning: "NCCL moves GPU memory only: a collective (all_reduce, broadcast, all_gather) \
                  of the NCCL group got a tensor on the CPU, such as a metric, a counter or a \
                  Python number turned into a tensor without a device.",
        fix: "Create the tensor on the rank's GPU (`torch.tensor(x, \
              device=f\"cuda:{local_rank}\")`) or move it there before the collective; for CPU \
              tensors, use a gloo group (`dist.new_group(backend=\"gloo\")`) or start with \
              `init_process_group(backend=\"cpu:gloo,cuda:nccl\")`.",
    },
];
/// The name of the rule for a process that reached its open-files limit (EMFILE).
pub(crate) const RULE_OPEN_FILES_LIMIT: &str = "open_files_limit";
/// The name of the rule for a file descriptor that did not arrive from another process.
pub(crate) const RULE_DESCRIPTOR_NOT_RECEIVED: &str = "descriptor_not_received";
/// The name of the rule for PyTorch's "DataLoader worker (pid N) is killed by signal: Killed.".
pub(crate) const DATALOADER_WORKER_KILLED_RULE: &str = "dataloader_worker_killed";
/// The name of the rule for an error that compares the world size with something else, in words
/// no other rule reads.
pub(crate) const RULE_WORLD_SIZE_CHECK_WORDED: &str = "world_size_check_worded";
/// The name of the rule for the same line cut before the signal's name.
pub(crate) const RULE_WORKER_SIGNAL_CUT: &str = "dataloader_worker_signal_cut";

/// The rules whose lines are the kernel's, the batch system's or the container runtime's own
/// report of an OOM kill (not a bare SIGKILL): a finding they make says the kill happened, not
/// that it likely did.
pub(crate) const OOM_REPORT_RULES: &[&str] = &[
    "host_oom_kernel",
    "container_oom_killed",
    RULE_RAY_MEMORY_MONITOR,
    RULE_KUBELET_EVICTED_MEMORY,
    "slurm_oom_kill",
    "slurm_memory_limit",
    "slurm_task_out_of_memory",
];

/// The rules, most specific first.
pub(crate) static RULES: &[Rule] = &[
    // torchelastic's agent (`agent/server/api.py`: "Received {sig} death signal, shutting
    // down workers"; `multiprocessing/api.py`'s SignalException "Process {pid} got signal:
    // {sig}") and Slurm's `slurmstepd` ("*** STEP|JOB N ON host CANCELLED AT t DUE TO TIME
    // LIMIT|PREEMPTION ***"): the launcher itself was told to stop. DeepSpeed's node launcher
    // (`launcher/launch.py`'s sigkill_handler) logs "Main process received SIGINT|SIGTERM,
    // exiting" only when the signal came from outside (a failed rank takes it with the rank's
    // return code instead).
    rule!(
        "launcher_signal",
        LauncherInterrupted,
        Cause,
        Standalone,
        [[
            "death signal, shutting down workers",
            "got termination signal:",
            // (SIGHUP, SIGINT, SIGQUIT and SIGTERM: the signals its handler is installed for;
            // "got signal: 1" also holds 15.)
            "got signal: 1",
            "got signal: 2",
            "got signal: 3",
            "due to time limit",
            "due to preemption",
            "due to job requeue",
            "bypassing sigterm",
            "main process received sigint",
            "main process received sigterm",
            // Ray Train's `PreemptionError` ("Training was interrupted by node preemption
            // (preempted_ranks=[2, 3], ...)") and its watcher's warning ("PreemptionWatcher:
            // preemption detected"); TorchX's `status` of a Slurm job, sacct's state ("Msg:
            // TIMEOUT", "PREEMPTED", "DEADLINE", "CANCELLED by 1000").
            "interrupted by node preemption",
            "preemptionwatcher: preemption detected",
            // Kubernetes stopping the pod from outside (the scheduler's and kubelet's words):
            // preemption ("Preempted by pod ... on node ...", "preempting to accommodate a
            // higher priority pod", "Preempted in order to admit critical pod"), the node
            // shutting down ("Pod was terminated in response to imminent node shutdown.",
            // "Node is shutting, evicting pods"), a deadline ("Pod was active on the node
            // longer than the specified deadline", the Job's and PyTorchJob's "active longer
            // than specified deadline"), a failed liveness probe ("failed liveness probe, will
            // be restarted"); srun passing on Ctrl-C ("sending Ctrl-C to StepId=...",
            // "interrupt (one more within 1 sec to abort)").
            "preempted by pod",
            "preempting to accommodate a higher priority pod",
            "preempted in order to admit critical pod",
            "terminated in response to imminent node shutdown",
            // (The kubelet's admission while its node shuts down, `nodeshutdown_manager.go`:
            // "Pod was rejected as the node is shutting down."; Kubeflow Trainer's TrainJob:
            // "TrainJob exceeded its active deadline"; Open MPI's mpirun, `help-orterun.txt`:
            // "WARNING: mpirun is in the process of killing a job, but has detected an
            // interruption (probably control-C).")
            "rejected as the node is shutting down",
            "exceeded its active deadline",
            "has detected an interruption (probably control-c)",
            "node is shutting, evicting pods",
            "longer than the specified deadline",
            "active longer than specified deadline",
            "failed liveness probe, will be restarted",
            "sending ctrl-c to stepid",
            "interrupt (one more within 1 sec to abort)",
            // Open MPI's `--timeout` (`orted_submit.c`): "The user-provided time limit for job
            // execution has been reached".
            "user-provided time limit for job execution has been reached",
            "msg: timeout",
            "msg: preempted",
            "msg: deadline",
            "msg: cancelled"
        ]],
        not[],
        ex_none
    ),
    // DeepSpeed's runner (`launcher/runner.py`) installs its `sigkill_handler` for SIGINT
    // only: a traceback through it means the `deepspeed` command got Ctrl-C (its own crash in
    // the handler, a NameError on `kill_cmd` in some versions, is a consequence).
    rule!("deepspeed_runner_sigint", LauncherInterrupted, Cause, Standalone,
        [["launcher/runner.py"], ["in sigkill_handler"]], not [], ex_none),
    // The step cancelled with no reason given ("*** STEP N ON host CANCELLED AT t ***"): a
    // user's scancel, or srun ending the step after one of its tasks failed (srun's
    // `--kill-on-bad-exit`, and its "task N: Out Of Memory"). A symptom, so a task's own
    // failure in the same log ranks before it; alone, it is still the finding. (The reasons
    // Slurm names, time limit, preemption, node failure, are causes: `launcher_signal`.)
    // Slurm 25.05 names the reason when srun's kill-on-bad-exit (or a PMI abort) ended the step:
    // "*** STEP N ON host CANCELLED AT t DUE TO TASK FAILURE ***" (`slurmstepd/req.c`,
    // SIG_TERM_KILL): a task failed first, its own error in its output.
    rule!("slurm_cancelled_task_failure", RankCrashed, Symptom, Standalone,
        [["slurmstepd"], ["due to task failure"]], not [], ex_none),
    // A node of the job died: Slurm's "*** JOB N ON host CANCELLED AT t DUE TO NODE FAILURE,
    // SEE SLURMCTLD LOG FOR DETAILS ***" and srun's "srun: error: Node failure on host-b"; Ray's
    // `ObjectLostError` ("All copies of ... have been lost due to node failure."). Not a stop
    // sent from outside: the ranks on that node are gone, and the others fail after them.
    // srun losing a node's slurmstepd during the step (`src/api/step_launch.c`: "Cannot
    // communicate with node 3.  Aborting job.", "step_launch_notify_io_failure: aborting, io
    // error with slurmstepd on node 3", "Aborting, io error and missing step on node 3",
    // "Aborting, step missing and io error on node 3") and Open MPI's mpirun losing a node's
    // daemon (`help-orterun.txt`: "mpirun has detected that a required daemon terminated during
    // execution of the application with a non-zero status."): the node, or the launcher's
    // daemon on it, went away with its ranks.
    // (Ray's GCS on a node whose raylet stopped answering: "Node is dead because the health
    // check failed.")
    rule!("node_failure", RankCrashed, Cause, Standalone,
        [["due to node failure", "srun: error: node failure on", "cannot communicate with node",
          "node is dead because the health check failed",
          "io error with slurmstepd on node", "io error and missing step on node",
          "step missing and io error on node",
          "required daemon terminated during execution"]],
        not [], ex_node_failure),
    // slurmstepd could not start a task's program (`slurmstepd/task.c`: "execve(): python: No
    // such file or directory", "execve(): bad interpreter(/opt/conda/bin/python): No such file
    // or directory", "... Permission denied"), and Open MPI's mpirun the same
    // (`help-orterun.txt`: "mpirun was unable to launch the specified application as it could
    // not access / or execute an executable", "mpirun was unable to find the specified
    // executable file"; PRRTE's "prterun was unable to launch the specified application as it
    // lacked / permissions to execute an executable", each box's first line): the program or
    // its interpreter is not there (or not executable) on that node.
    rule!("launch_program_missing", RankCrashed, Cause, Standalone,
        // (srun itself, `srun/opt.c`: "srun: fatal: Can not execute train.sh".)
        [["slurmstepd: error: execve(): ", "unable to launch the specified application as it",
          "unable to find the specified executable file", "srun: fatal: can not execute"]],
        not [], ex_launch_program_missing),
    // A rank's own word that it got SIGTERM (PyTorch Lightning's signal connector: "[rank: 0]
    // Received SIGTERM: 15"): a stop sent to it, by the batch system or by a launcher tearing
    // the job down after another rank failed. A symptom: a cause the log names comes first.
    // `torch.multiprocessing.spawn` reports the first process that ended ("process 1
    // terminated with signal SIGTERM"); it sends SIGTERM to the others only after that one, so
    // a first one ended by SIGTERM or SIGINT was stopped from outside.
    rule!(
        "rank_received_sigterm",
        LauncherInterrupted,
        Symptom,
        Standalone,
        [[
            "received sigterm",
            // Megatron-LM's exit signal handler (`training/training.py`: "[exiting program
            // after receiving SIGTERM.] datetime: ...").
            "after receiving sigterm",
            // Lightning catches Ctrl-C itself (`pytorch/trainer/call.py`: "Detected
            // KeyboardInterrupt, attempting graceful shutdown ...", then it kills its child
            // processes and exits 1): no KeyboardInterrupt traceback follows.
            "detected keyboardinterrupt, attempting graceful shutdown",
            // Lightning 1.6 to 1.9's SIGTERM handler ("Received signal 15. Saving a
            // fault-tolerant checkpoint and terminating.") and its Slurm auto-requeue on the
            // wall time (`#SBATCH --signal=SIGUSR1@90`: "handling SIGUSR1" / "handling
            // auto-requeue signal", then "requeing job 52117..."): the batch system is ending
            // the job.
            "saving a fault-tolerant checkpoint and terminating",
            "handling auto-requeue signal",
            "handling sigusr1",
            "requeing job ",
            "terminated with signal sigterm",
            "terminated with signal sigint"
        ]],
        not["main process received sigterm"],
        ex_none
    ),
    rule!(
        "slurm_cancelled",
        LauncherInterrupted,
        Symptom,
        Standalone,
        [["slurmstepd"], ["cancelled at"]],
        not["due to task failure"],
        ex_none
    ),
    // Slurm's step daemon reads the step cgroup's memory.events after the step
    // (`task/cgroup`): "Detected %lu oom_kill event%s in %ps. Some of the step tasks have
    // been OOM Killed." (23.02 on; before, "... oom-kill event(s) in StepId=... Some of your
    // processes may have been killed by the cgroup out-of-memory handler."), srun's "task N:
    // Out Of Memory", and the job accounting plugin's "exceeded memory limit (...), being
    // killed". Cgroup memory limits are the host memory a job may use: the kernel's OOM
    // killer inside the job's allocation.
    rule!("slurm_oom_kill", HostOomKilled, Cause, Standalone,
        [["oom_kill event", "oom-kill event", "have been oom killed",
          "cgroup out-of-memory handler",
          // TorchX's `status` of a Slurm job: sacct's state ("Msg: OUT_OF_MEMORY"); scontrol's
          // "JobState=OUT_OF_MEMORY"; the kubelet's OOM watcher ("System OOM encountered,
          // victim process: python, pid: 4242").
          "msg: out_of_memory", "jobstate=out_of_memory", "system oom encountered, victim process"]],
        not [], ex_none),
    // (Also "StepId=... exceeded virtual memory limit (...), being killed", CUDA's large
    // address space; srun's notice "Exceeded job memory limit"; slurmd's "Job 48213 exceeded
    // memory limit (...), cancelling it".)
    rule!("slurm_memory_limit", HostOomKilled, Cause, Standalone,
        [["exceeded memory limit", "exceeded virtual memory limit", "exceeded job memory limit"],
         ["being killed", "cancelling it", "srun: "]],
        not [], ex_none),
    rule!("slurm_task_out_of_memory", HostOomKilled, Cause, Standalone,
        [["srun: error:"], [": out of memory"]], not [], ex_none),
    rule!("host_oom_kernel", HostOomKilled, Cause, Standalone,
        [["out of memory: killed process", "out of memory: kill process", "or sacrifice child",
          "oom-kill:", "oom_kill_process", "invoked oom-killer",
          "memory cgroup out of memory",
          // Other words of the kernel's (`mm/oom_kill.c`, `memcontrol.c`): "Out of memory
          // (oom_kill_allocating_task): Killed process ...", the reaper that frees a victim's
          // memory ("oom_reaper: reaped process 48213 (python), now anon-rss:0kB"), kernels up
          // to 4.18's "Task in /slurm/... killed as a result of limit of /slurm/..."; systemd's
          // ("A process of this unit has been killed by the OOM killer.") and systemd-oomd's
          // ("Killed /user.slice/... due to memory pressure for ... being 78.21% > 50.00%").
          "out of memory (oom_kill_allocating_task)", "oom_reaper: reaped process",
          "oom_reaper: unable to reap", "killed as a result of limit of",
          "has been killed by the oom killer", "due to memory pressure for"]],
        not [], ex_none),
    // Kernels 4.9 to 4.19 print the kill on its own line, "Killed process 48213 (python)
    // total-vm:...kB, anon-rss:...kB".
    rule!("host_oom_kernel_kill_line", HostOomKilled, Cause, Standalone,
        [["killed process "], ["total-vm:"]], not [], ex_none),
    // The kernel's record of a process a native crash killed (`arch/x86/mm/fault.c`
    // show_signal_msg: "python[48213]: segfault at 0 ip ... sp ... error 4 in
    // libtorch_cuda.so[...]"; `traps.c` show_signal: "traps: python[48213] general protection
    // fault ip:...", "trap invalid opcode", "trap divide error"; both printed only when the
    // signal kills the process), the audit's "ANOM_ABEND ... sig=11", systemd-coredump's
    // "Process 48213 (python) of user 1000 dumped core.". The hardware's own memory error
    // (`mm/memory-failure.c`: "Memory failure: 0x2b4f1c0: Sending SIGBUS to python:48213 due
    // to hardware memory corruption") is a crash too, before the SIGBUS's /dev/shm reading.
    rule!("kernel_native_crash", RankCrashed, Cause, Standalone,
        [["segfault at ", "general protection fault ip:", "] trap invalid opcode",
          "] trap divide error", "] trap int3", "anom_abend", ") of user ",
          "due to hardware memory corruption"],
         [" ip ", "ip:", " sig=", "dumped core", "sending sigbus"]],
        not [], ex_kernel_crash),
    // Ray's memory monitor (`raylet/node_manager.cc`, `worker_killing_policy`; Ray 2.2 on)
    // kills workers before the kernel's OOM killer would, above RAY_memory_usage_threshold of
    // the node's RAM: "N worker(s) were killed due to the node running low on memory. Memory on
    // the node (IP: ..., ID: ...) was 28.62GB / 30.00GB (0.954017), which exceeds the memory
    // usage threshold of 0.950000", raised to the caller as `ray.exceptions.OutOfMemoryError`
    // (Ray 2.2's wording: "Task was killed due to the node running low on memory."). Host
    // memory, not the GPU's, whatever the exception's name says.
    // Older Ray (`_private/memory_monitor.py`'s `raise_if_low_memory`, psutil's or the
    // cgroup's figures): "RayOutOfMemoryError: More than 95% of the memory on node host-a is
    // used (60.51 / 63.69 GB)."; the raylet's summary of its kills (`node_manager.cc`): "2
    // Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed due to
    // other reasons at node ...". Host memory too.
    rule!(
        RULE_RAY_MEMORY_MONITOR,
        HostOomKilled,
        Cause,
        Standalone,
        [[
            "node running low on memory",
            "ray.exceptions.outofmemoryerror",
            "rayoutofmemoryerror",
            "of the memory on node",
            "killed due to memory pressure (oom)",
            // Ray 2.x's message body: "Memory on the node (IP: ..., ID: ...) where the task
            // (task ID: ...) was running was 32.53GB / 33.28GB (0.977), which exceeds the
            // memory usage threshold of 0.95. Ray killed this worker ...".
            "which exceeds the memory usage threshold of",
            // The table of the processes it weighed before the kill (`memory_monitor.cc`,
            // `TopNMemoryDebugString`: "Top 10 memory users:" then "PID\tMEM(GB)\tCOMMAND"),
            // printed only in that report; a paste can keep the table without the sentence.
            "top 10 memory users",
            "mem(gb)"
        ]],
        not[": 0 workers (tasks / actors) killed"],
        ex_none
    ),
    // The raylet's `HandleClientConnectionError` when a worker's socket closes without the
    // worker saying why: "Worker unexpectedly exits with a connection error code 2. End of
    // file. There are some potential root causes. (1) The process is killed by SIGKILL by OOM
    // killer due to high memory usage. (2) ray stop --force is called. (3) The worker is
    // crashed unexpectedly due to SIGSEGV or other unexpected errors." Ray's own first
    // reading, like a bare SIGKILL's: indirect, and a crash the log shows ranks before it.
    rule!(RULE_RAY_WORKER_CONNECTION_LOST, HostOomKilled, Cause, Standalone,
        [["worker unexpectedly exits with a connection error code"]], not [], ex_none),
    // Ray's workers turn SIGTERM into a Python `SystemExit` without a code (`_raylet.pyx`:
    // "Worker exits with an exit code None.", plus " The worker may have exceeded K8s pod
    // memory limits." on Kubernetes). Who sent it is not said: a symptom, which any cause
    // the log names comes before.
    rule!(RULE_RAY_WORKER_SIGTERM, LauncherInterrupted, Symptom, Standalone,
        [["worker exits with an exit code none"]], not [], ex_none),
    // The kubelet's eviction messages (`pkg/kubelet/eviction/helpers.go`: "The node was low on
    // resource: memory. ", "The node had condition: [MemoryPressure]. "): the pod was stopped
    // because the node's RAM ran short, the job's or another pod's.
    // ("The node had condition: [MemoryPressure]. " is the kubelet refusing to admit a pod,
    // `eviction_manager.go`'s Admit with nodeConditionMessageFmt: it never ran. See
    // kubelet_admission_refused.)
    rule!(RULE_KUBELET_EVICTED_MEMORY, HostOomKilled, Cause, Standalone,
        [["the node was low on resource: memory"]],
        not [], ex_none),
    // The kubelet refusing a pod at admission because the node is under pressure
    // (`eviction_manager.go`: Reason "Evicted", "The node had condition: [DiskPressure]. "):
    // the pod never ran, so its ranks never started, as with an unschedulable pod.
    rule!("kubelet_admission_refused", RendezvousTimeout, Cause, Standalone,
        [["the node had condition: ["]], not [], ex_none),
    // The same for disk: the node's ephemeral storage, a container's or pod's ephemeral-storage
    // limit, an emptyDir over its sizeLimit ("Usage of EmptyDir volume %q exceeds the limit
    // %q. "; a memory-backed /dev/shm volume is one, and reads as `/dev/shm` below). The
    // kubelet stopped the job from outside.
    rule!(
        RULE_KUBELET_EVICTED_STORAGE,
        LauncherInterrupted,
        Cause,
        Standalone,
        [[
            "the node was low on resource: ephemeral-storage",
            "the node was low on resource: nodefs",
            "the node was low on resource: imagefs",
            "exceeded its local ephemeral storage limit",
            "pod ephemeral local storage usage exceeds",
            "usage of emptydir volume"
        ]],
        not["shm"],
        ex_none
    ),
    rule!("kubelet_evicted_shm_volume", ShmTooSmall, Cause, Standalone,
        [["usage of emptydir volume"], ["shm"]], not [], ex_none),
    // kube-scheduler's FailedScheduling event ("0/4 nodes are available: 4 Insufficient
    // nvidia.com/gpu."): a pod of the job was never placed, so its ranks never started and the
    // others wait for them in the rendezvous.
    rule!(RULE_POD_UNSCHEDULABLE, RendezvousTimeout, Cause, Standalone,
        [["nodes are available: "], ["insufficient", "didn't match", "untolerated taint",
          "had taint", "didn't have free ports", "volume node affinity conflict"]],
        not [], ex_pod_unschedulable),
    // Ray Train could not place its workers: v1's `backend_executor.py` ("TimeoutError:
    // Placement group creation timed out. Make sure your cluster either has enough resources or
    // use an autoscaling cluster. ..."; Ray Serve's and Alpa's copies too, and the "SPMD
    // Placement group" variant), v2's `WorkerGroupStartupTimeoutError` ("The worker group
    // startup timed out after 30.0 seconds waiting for 2 workers. Potential causes include:
    // (1) temporary insufficient cluster resources ..."). The workers never started: nothing of
    // the job ran, like an unschedulable pod, not a crash.
    rule!(RULE_RAY_WORKERS_UNSCHEDULED, RendezvousTimeout, Cause, Standalone,
        [["placement group creation timed out", "worker group startup timed out"]],
        not [], ex_none),
    // PyTorch's data loader (`_utils/signal_handling.py`): a worker that got SIGKILL. Any
    // sender does that; the OOM killer is the usual one, but the line does not say so.
    rule!("dataloader_worker_killed", HostOomKilled, Cause, Standalone,
        [["is killed by signal: killed"]], not [], ex_none),
    // The same line cut before the signal's name (a paste, a title, a log cut short): "DataLoader
    // worker (pid 3527) is killed by signal". SIGKILL is the most frequent (the OOM killer),
    // but a bus error (/dev/shm) or a native crash read the same until the name is seen, so
    // a finding from it is medium and says what the name would decide.
    rule!(
        RULE_WORKER_SIGNAL_CUT,
        HostOomKilled,
        Cause,
        Standalone,
        [["is killed by signal"]],
        not["is killed by signal: "],
        ex_none
    ),
    // The same handler for the other signals (`strsignal`'s names), and the worker's own
    // signal handler (`DataLoader.cpp`): "ERROR: Unexpected segmentation fault encountered in
    // worker." / "floating-point exception". A native crash in the dataset's code; a bus
    // error there is /dev/shm's (shm_segment, sigbus_exit).
    // EMFILE from any socket, shared-memory or file call (NCCL's `SYSCHECK` "Call to socket
    // failed: Too many open files", "Accept failed: Too many open files"; gloo's "socket: Too
    // many open files"; the DataLoader's "Too many open files. Communication with the workers is
    // no longer possible."): the process reached its open-files limit.
    // (vLLM's start-up warning quotes the error it would cause: "Found ulimit of 1024 and
    // failed to automatically increase ... like `OSError: [Errno 24] Too many open files`.
    // Consider increasing with ulimit -n".)
    rule!(
        RULE_OPEN_FILES_LIMIT,
        RankCrashed,
        Cause,
        Standalone,
        [[
            "too many open files",
            // UCX's `sock.c`: "the maximal number of files that could be opened
            // simultaneously was reached".
            "number of files that could be opened simultaneously was reached"
        ]],
        not["consider increasing with ulimit"],
        ex_none
    ),
    // Python's `multiprocessing.reduction.recvfds` when a tensor's descriptor did not arrive:
    // "RuntimeError: received 0 items of ancdata", most often the receiver at its open-files
    // limit (the line does not say so: medium confidence).
    rule!(RULE_DESCRIPTOR_NOT_RECEIVED, RankCrashed, Cause, Standalone,
        [["items of ancdata"]], not [], ex_none),
    rule!("dataloader_worker_crashed", RankCrashed, Cause, Standalone,
        [["is killed by signal: segmentation fault", "is killed by signal: aborted",
          "is killed by signal: floating point exception", "is killed by signal: illegal instruction",
          "unexpected segmentation fault encountered in worker",
          "unexpected floating-point exception encountered in worker"]],
        not [], ex_none),
    // `DataLoader.cpp`: "DataLoader worker (pid N) exited unexpectedly with exit code N.
    // Details are lost due to multiprocessing. Rerunning with num_workers=0 may give better
    // error trace."
    rule!("dataloader_worker_exited", RankCrashed, Cause, Standalone,
        [["dataloader worker (pid"], ["exited unexpectedly with exit code"]], not [], ex_none),
    // `dataloader.py`'s `_try_get_data`: "DataLoader worker (pid(s) N) exited unexpectedly",
    // when the main process finds a dead worker; the worker's own message (a bus error, a
    // signal) may be above it, and then that finding takes this line.
    rule!("dataloader_worker_died", RankCrashed, Cause, AnyFinding,
        [["dataloader worker (pid(s)"], ["exited unexpectedly"]], not [], ex_none),
    // (The fabric manager's service starting or stopping, "Started nvidia-fabricmanager.service",
    // `Started "Nvidia Fabric Manager"`, "Successfully configured all the available
    // NVSwitches", names no failure.)
    rule!("fabric_manager", NvlsFabricManager, Cause, Standalone,
        [["system not yet initialized", "fabric manager", "fabricmanager", "cudaerrorsystemnotready"]],
        not ["started nvidia-fabricmanager", "started \"nvidia fabric manager\"",
             "stopped \"nvidia fabric manager\"", "successfully configured all the available"],
        ex_none),
    // NCCL's `enqueue.cc` when no algorithm and protocol it may use fits a call: "no
    // algorithm/protocol available for function Broadcast with datatype ncclInt8. NCCL_PROTO
    // was set to %s. NCCL_ALGO was set to %s." (2.23 and later: "No algorithm/protocol nor
    // symKernelId available ..."). An NCCL_ALGO or NCCL_PROTO setting that excludes the call
    // (an algorithm named in it, NVLS, is not the failure).
    rule!(RULE_NCCL_NO_ALGORITHM, NcclInternalOrUnsupported, Cause, Standalone,
        [["no algorithm/protocol"]], not [], ex_nccl_algo_setting),
    // The fabric manager's own log names an NVLS multicast object a "multicast team" (the
    // team set-up and release requests NCCL's `cuMulticastCreate` sends it in-band: "failed to
    // release multicast team with handle N, cannot find the team", "failed to find the GPU
    // handle N in the multicast team"): its state of the node's NVLS groups went wrong.
    rule!("nvls_failure", NvlsFabricManager, Cause, Standalone,
        [["nvls", "cumulticast", "mnnvl", "imex", "multicast team"], ["nccl warn", "fail", "error"]],
        // vLLM's check of its FlashInfer all-reduce configuration ("... is not supported for
        // multi-node allreduce with 'trtllm' backend. Please use 'mnnvl' backend instead.")
        // names the backend, no failure of it.
        // vLLM's fallback warning ("MNNVL multimem reduce-scatter symmetric-memory allocation
        // failed on at least one rank; falling back to NCCL.") is no failure of the job.
        // (NCCL 2.18's topology search, `graph/search.cc`: "Could not find NIC for rank 3 in
        // NVLS graph", an internal error of the search, no fabric manager.)
        not ["support is not available", "support is available", "no algorithm/protocol",
             "could not find nic for rank",
             "is not supported for multi-node allreduce", "falling back to nccl",
             "unable to configure nvls option",
             // NCCL 2.30 (`transport/nvls.cc`): "rank 3 failed to NVLS register sendbuff ..."
             // at INFO, then it copies instead; a forced NCCL_NVLS_ENABLE=1 with ranks sharing
             // a GPU (ncclInvalidUsage) and LSA's refusal of CPU-backed buffers across nodes
             // (`dev_runtime_segments.cc`) are settings NCCL does not support, not the fabric
             // failing.
             "failed to nvls register", "multiple ranks using the same nvml device",
             "does not support multi-node ipc on cpu-backed buffers",
             // NVSHMEM (`mem_transport.cpp`): a failed query of the fabric at set-up, after
             // which it only skips MNNVL detection.
             "detection of mnnvl environment will not be attempted",
             // The container toolkit's check for the IMEX channel's device node: the
             // container's GPU set-up, read as no usable GPU.
             "not found at /dev/nvidia-caps-imex-channels"],
        ex_none),
    // NCCL's shared-memory transport (`transport/shm.cc`) failing a CUDA call. Since NCCL
    // 2.23 (with cuMem on, NCCL_CUMEM_HOST_ENABLE) it allocates the host buffers it shares
    // between a node's processes with the driver's cuMem API and imports the peer's handle
    // (`cuMemImportFromShareableHandle`, `cuMemMap`, `cuMemSetAccess`: NCCL's CUCHECK prints
    // "Cuda failure %d '%s'"); the import fails between GPUs that cannot access each other, or
    // processes that each see only their own GPU, even with the P2P transport off: "transport/shm.cc:590 NCCL WARN Cuda failure
    // 217 'peer access is not supported between these two devices'". Not the P2P transport:
    // NCCL_P2P_DISABLE does not reach it, turning cuMem off does.
    rule!(RULE_NCCL_SHM_CUDA_FAILURE, NcclInternalOrUnsupported, Cause, Standalone,
        [["shm.cc"], ["cuda failure", "cuda error"]], not [], ex_nccl_shm_cuda_failure),
    // accelerate's guard (`accelerate/state.py`, PartialState's set-up, where
    // `check_cuda_p2p_ib_support()` is false: two or more RTX 4000-series GPUs, RTX 3090s in
    // older releases, on an NVIDIA driver before 550.40.07): "NotImplementedError: Using RTX
    // 4000 series doesn't support faster communication broadband via P2P or IB. Please set
    // `NCCL_P2P_DISABLE="1"` and `NCCL_IB_DISABLE="1" or use `accelerate launch` which will do
    // this automatically." (older: "Using RTX 3090 or 4000 series ..."). It stops a job started
    // by torchrun, deepspeed or python before NCCL's peer-to-peer transport would hang on
    // those GPUs: the P2P case, with the fix it names.
    // NCCL's P2P transport before 2.x's cuMem (`transport/p2p.cc`): "failed to open CUDA IPC
    // handle : 30 unknown error": a peer's buffer it took for one on the same machine could
    // not be mapped. Horovod's troubleshooting names servers that share a host name (NCCL then
    // takes them for one node and tries CUDA IPC between them); within one node, peer-to-peer
    // that the platform does not allow. Medium (INDIRECT_RULES in correlate.rs).
    rule!(
        RULE_CUDA_IPC_OPEN_FAILED,
        P2pHang,
        Cause,
        Standalone,
        [["failed to open cuda ipc handle"]],
        not["peer access is not supported"],
        ex_none
    ),
    rule!(RULE_ACCELERATE_NO_P2P_GUARD, P2pHang, Cause, Standalone,
        [["support faster communication broadband via p2p or ib"]], not [], ex_none),
    // NCCL `graph/paths.cc` (2.12 on), at set-up, for each pair of GPUs of a node: where NVLink
    // connects them but NVML's P2P status for reads or writes is not OK, "P2P is disabled
    // between NVLINK connected GPUs 1 and 0. This should not be the case given their
    // connectivity, and is probably due to a hardware issue. If you still want to proceed, you
    // can set NCCL_IGNORE_DISABLED_P2P=1." and ncclUnhandledCudaError. (Over PCIe the same
    // finding is an INFO line, "P2P is disabled between connected GPUs", and NCCL goes on
    // through host memory: no rule.)
    rule!(RULE_NCCL_NVLINK_P2P_DISABLED, P2pHang, Cause, Standalone,
        [["p2p is disabled between nvlink connected gpus"]], not [], ex_none),
    rule!(
        "p2p_access",
        P2pHang,
        Cause,
        Standalone,
        [[
            "peer access is not supported",
            "peer mapping resources exhausted",
            "cudaerrorpeeraccess",
            "peer access already"
        ]],
        // sglang's warning when its custom all-reduce cannot start ("Setup Custom allreduce
        // failed with CUDART error: peer access is not supported ... To silence this warning,
        // specify --disable-custom-all-reduce explicitly."): it goes on with NCCL.
        not["to silence this warning"],
        ex_none
    ),
    // libnvidia-container's device selection (`cli/common.c` select_devices: "device error:
    // GPU-8a3f2c1d-...: unknown device", "device error: 3: unknown device"):
    // NVIDIA_VISIBLE_DEVICES (or the pod's allocation) names a GPU the host does not have.
    rule!("container_unknown_gpu", CudaError, Cause, Standalone,
        [["device error: "], [": unknown device"]], not [], ex_none),
    // libnvidia-container's other stages (`nvc_container.c`, `nvc_mount.c`, `nvc_ldcache.c`,
    // `nvc_info.c`: "nvidia-container-cli: mount error: stat failed: /dev/nvidia-uvm: no such
    // file or directory", "ldcache error: ...", "detection error: nvml error: unknown error",
    // "container error: cgroup subsystem devices not found", "permission error: capability
    // change failed"): the container was never given its GPUs, so it never started.
    rule!("container_gpu_setup_failed", CudaError, Cause, Standalone,
        [["nvidia-container-cli: "],
         ["mount error:", "ldcache error:", "detection error:", "container error:",
          "permission error:"]],
        not [], ex_container_gpu_setup),
    // PyTorch's symmetric memory (`CUDASymmetricMemory.cu`'s rendezvous: "detected allocations
    // from overlapping devices from different ranks.", unless
    // TORCH_SYMM_MEM_ALLOW_OVERLAPPING_DEVICES) and its intra-node all-reduce's warning
    // (`intra_node_comm.cpp`: "Skipping IntraNodeComm::rendezvous() because participants have
    // overlapping devices. To resolve this, call torch.cuda.set_device() before
    // init_process_group()"): two ranks of one host on one GPU.
    rule!(RULE_OVERLAPPING_DEVICES, DuplicateGpu, Cause, Standalone,
        [["allocations from overlapping devices", "participants have overlapping devices"]],
        not [], ex_none),
    // AMD GPUs: ROCm's runtime, RCCL (ROCm/rccl 0cbce2a, 2.21.5) and the amdgpu kernel driver.
    // A GPU fault as the ROCm runtime reports it before it aborts the process (ROCr's "Memory
    // access fault by GPU node-2 (Agent handle: ...) on address 0x7fc133800000. Reason: Page
    // not present or supervisor privilege.", an illegal address as CUDA's; "HW Exception by
    // GPU node-4 (...) reason :GPU Hang"; ROCclr's `rocdevice.cpp` "Callback: Queue 0x...
    // aborting with error : HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: ..." and "... aborting
    // with status: 0x100f"; a code object for another GPU, "HSA_STATUS_ERROR_INVALID_ISA"), and
    // RCCL's own checks of the runtime ("ROCr failure '...'", "hipIpcGetMemHandle failed :
    // invalid argument", RCCL 2.27's "[FATAL ERROR]: HIP failure: 'invalid device pointer'").
    rule!(
        "rocm_runtime_fault",
        CudaError,
        Cause,
        Standalone,
        [[
            "memory access fault by gpu node",
            "hw exception by gpu node",
            "aborting with error : hsa_status_error",
            "hsa_status_error_invalid_isa",
            "rocr failure '",
            "hipipcgetmemhandle failed",
            "hip failure: '"
        ]],
        // (RCCL's probes of the runtime at set-up log a failure as INFO and go on without the
        // feature: DMA-BUF, `net_ib.cc`'s "ROCr failure '...'". "HIP failure: 'out of memory'"
        // is the GPU's memory, read by the rule for it.)
        not["nccl info", "out of memory"],
        ex_rocm_fault
    ),
    rule!("rocm_queue_aborted", CudaError, Cause, Standalone,
        [["rocdevice.cpp"], ["aborting with"]], not [], ex_rocm_fault),
    // The amdgpu kernel driver's log of a GPU fault, hang or reset (dmesg, the journal): "amdgpu
    // 0000:0b:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:24 vmid:8 pasid:32792)",
    // "GCVM_L2_PROTECTION_FAULT_STATUS:0x00401031", "[drm:amdgpu_job_timedout [amdgpu]] *ERROR*
    // ring gfx_0.0.0 timeout, signaled seq=5000163, emitted seq=5000165", "amdgpu: GPU reset
    // begin!", "[drm] VRAM is lost due to GPU reset!", RAS's "uncorrectable hardware
    // error(ERREVENT_ATHUB_INTERRUPT) detected!" and "{1}[Hardware Error]: Accelerator Check
    // Architecture events logged", the scheduler's "Failed to evict queue 3", "MES failed to
    // respond to msg=REMOVE_QUEUE", "The cp might be in an unrecoverable state", "Illegal opcode
    // in command stream": the AMD counterparts of NVIDIA's Xid lines, a GPU the job lost.
    rule!(RULE_AMDGPU_FAULT, CudaError, Cause, Standalone,
        [["amdgpu", "[drm]"],
         ["page fault", "protection_fault_status", "timeout, signaled seq", "gpu reset",
          "vram is lost", "uncorrectable hardware error", "[hardware error]",
          "failed to evict queue", "mes failed to respond", "unrecoverable state",
          "illegal opcode in command stream"]],
        not [], ex_rocm_fault),
    // RCCL's checks that fail its set-up or a call with an internal or invalid-usage error and
    // are not NCCL's: MSCCL's algorithm files, parser and limits (`misc/msccl/*.cc`, `msccl.cc`:
    // "MSCCL Internal Scheduler: Unable to find algorithm files in ...", "Could not open MSCCL
    // XML algorithm file ...: Permission denied", "MSCCL: number of channels available (16)
    // less than required (32)"), NPKit ("NPKit currently does not support more than 1 device
    // per process"), the XGMI topology ("Add XGMI error : could not find GPU 9c000"), the GPU
    // management library (`rocm_smi_wrap.cc`, `alt_rsmi.cc`: "ROCm SMI init failure
    // RSMI_STATUS_PERMISSION", "ARSMI failure 1", "ARSMI_lib: 0000:9c:00.0 device index not
    // found", "Failed to open topo/nodes directory") and "NET: GDR Flush only supported on
    // x86_64".
    rule!(
        "rccl_setup_check",
        NcclInternalOrUnsupported,
        Cause,
        Standalone,
        // (The message's words, not its source file's path: `msccl_lifecycle.cc` also warns
        // that it disables MSCCL for a size when fewer channels are allowed, and goes on; an
        // MSCCL++ that cannot be enabled falls back too.)
        // PyTorch quotes the message on the line after its "Last error:", without NCCL's prefix.
        [[
            "msccl internal scheduler",
            "could not open msccl xml",
            "invalid msccl function type",
            "xml parser is limited to",
            "incorrect offset set for input buffer",
            "npkit currently does not support",
            "add xgmi error",
            "rocm smi init failure",
            "arsmi failure",
            "arsmi_lib:",
            "rocm_smi_lib:",
            "failed to open topo/nodes directory",
            "failed to close topology",
            "error reading link properties files",
            "could not read node #",
            "could not determine gpu id of node",
            "gdr flush only supported",
            // `enqueue.cc`: a collective left out of this RCCL build.
            "please ensure the collective has been enabled in build"
        ]],
        not["nccl info"],
        ex_none
    ),
    // MSCCL's other checks ("MSCCL: number of channels available (16) less than required (32)"),
    // as warnings: its INFO lines say "MSCCL: ..." too.
    rule!("rccl_msccl_check", NcclInternalOrUnsupported, Cause, Standalone,
        [["msccl: "], ["nccl warn", "less than required"]],
        not ["so disabling msccl", "msccl++"], ex_none),
    // Intel GPUs (oneCCL, PyTorch's XCCL backend, Level Zero) and Habana Gaudi (HCCL, HCL,
    // Synapse), read in their sources: uxlfoundation/oneCCL b382bf7, intel/torch-xpu-ops
    // ab84f92 (`src/xccl/ProcessGroupXCCL.cpp`), HabanaAI/gaudi-pytorch-bridge 5a56187 and
    // HabanaAI/HCL 54fed3a. Without these the lines read as a crash quoting them, or as nothing.
    //
    // Out of device memory: Level Zero's allocation (`ze_call.cpp`'s do_call: "ze error at
    // zeMemAllocDevice, code: ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY"); the Gaudi bridge's device
    // memory (`device_memory.cpp`: "FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for
    // size::939524096 (896)MB", raised when even a defragmentation found no room;
    // `CoalescedStringentPoolAllocator.cpp`: "CS_POOL:: out of memory").
    rule!("xpu_hpu_device_out_of_memory", CudaOom, Cause, Standalone,
        [["ze_result_error_out_of_device_memory", "module:pt_devmem allocation failed",
          "cs_pool:: out of memory"]],
        not [], ex_none),
    // The device lost (Level Zero: a driver or hardware fault, as CUDA's Xid 79), at a queue
    // synchronisation or an event query, also inside XCCL's "raised the following async
    // exception" line.
    rule!("level_zero_device_lost", CudaError, Cause, Standalone,
        [["ze_result_error_device_lost"]], not [], ex_none),
    // Synapse's device acquisition (`device.cpp`): "synStatus=20 [Device already acquired]
    // Device acquire failed." and hccl_demo's "synDeviceAcquire(...) failed with synapse error:
    // 20": another process holds the Gaudi, one process per device (the bridge's
    // `hccl/__init__.py` maps the local rank to HLS_MODULE_ID to avoid it).
    rule!(
        "gaudi_device_already_acquired",
        DuplicateGpu,
        Cause,
        Standalone,
        // (The bridge's own warning when a module id it asked for is taken goes on with
        // another: "... synStatus 20 [Device already acquired]. . Proceeding without moduleid".)
        [["device already acquired", "failed with synapse error: 20"]],
        not["proceeding without"],
        ex_none
    ),
    // No Gaudi to use at all ("synStatus=8 [Device not found] Device acquire failed. No devices
    // found."), or more ranks than visible modules (`hccl/__init__.py`: "There is not enough
    // devices available for training. Please verify if HABANA_VISIBLE_MODULES is set
    // correctly.").
    rule!("gaudi_device_missing", CudaError, Cause, Standalone,
        // (The assertion's message spans lines in the bridge's source: its first line alone.)
        [["[device not found] device acquire failed", "there is not enough devices"]],
        not [], ex_none),
    // A collective that did not finish in time, in XCCL's words (`WorkXCCL::wait`: "Work timed
    // out after 600012 milliseconds.", logged and raised as a DistBackendError).
    rule!("xccl_work_timeout", CollectiveTimeout, Symptom, Standalone,
        [["work timed out after "], [" milliseconds"]], not [], ex_none),
    // oneCCL's key-value store, its rendezvous: a rank that could not reach the main server
    // before CCL_KVS_CONNECTION_TIMEOUT (`internal_kvs.cpp` kvs_init: "connection time (120) >=
    // limit (120)"), and one whose peers never published their keys (`pmi_resizable_simple
    // [_internal].cpp` kvs_get_value: "KVS get error: timeout limit: 60 > 60, prefix: CCL_POS,
    // key: 5").
    rule!("oneccl_kvs_connect_timeout", ConnectionRefused, Symptom, Standalone,
        [["kvs_init: connection time"]], not [], ex_none),
    rule!("oneccl_kvs_get_timeout", RendezvousTimeout, Symptom, Standalone,
        [["kvs get error: timeout limit"]], not [], ex_none),
    // An interface the job was told to use that the host lacks: oneCCL's CCL_KVS_IFACE
    // (`internal_kvs.cpp` fill_local_host_ip: "can't find interface ib0 to get host IP") and
    // HCL's HCCL_SOCKET_IFNAME (`network_utils.cpp`: "No network interfaces found in
    // HCCL_SOCKET_IFNAME(eth5)").
    rule!("ccl_interface_missing", NetworkInterface, Cause, Standalone,
        [["to get host ip", "no network interfaces found in hccl_socket_ifname"],
         ["can't find interface", "no network interfaces found"]],
        not [], ex_none),
    // HCL's coordinator given a rank past the communicator's size (`hlcp_server.cpp`: "The
    // condition [ remote_rank < comm_size_ ] failed. rank_id(9) is out of range(8)"): the ranks
    // disagree on the world size, as NCCL's "Invalid rank requested".
    rule!("hcl_rank_out_of_range", WorldSizeMismatch, Cause, Standalone,
        [["remote_rank < comm_size_"]], not [], ex_none),
    // HCL's socket to a peer that went away ("socket recv: Remote peer unexpectedly closed
    // connection while I was waiting for a blocking message.").
    rule!("hcl_peer_closed", RankCrashed, Consequence, Standalone,
        [["remote peer unexpectedly closed connection"]], not [], ex_none),
    // oneCCL's exchange of device handles binds a UNIX socket file (`ze_fd_manager.cpp`
    // exchange_device_fds, `/tmp/ccl-ipc-fd-sock-<pid>:...`): "Address already in use" there is
    // a leftover socket file, not a TCP port, so it is not a port in use.
    rule!("oneccl_ipc_socket_in_use", RankCrashed, Cause, Standalone,
        [["exchange_device_fds", "ccl-ipc-fd-sock"], ["address already in use"]], not [], ex_none),
    // HCL's other fatal checks (`VERIFY`, which throws `hcl::VerifyException`): "The condition
    // [ false ] failed. Creating coordinator server (10.0.0.1:29511) failed", "... cannot start
    // hlcp client", "... provided ip(10.0.0.7) is not on local host".
    rule!("hcl_verify_failed", RankCrashed, Cause, Standalone,
        [["the condition ["], ["] failed."]], not [], ex_hcl_verify),
    // A GPU that is failing: CUDA's cudaErrorECCUncorrectable ("uncorrectable ECC error
    // encountered"), the driver's Xid 79 ("GPU has fallen off the bus"), Xid 48 ("double
    // bit ECC error"), Xid 94/95 ("contained/uncontained ECC error"), a row-remapping
    // failure (Xid 64). What fails after it on that node (out of memory at the restart,
    // NCCL errors) is its consequence, so it ranks before them.
    // NVIDIA's own words for the same faults outside the Xid line (whose number says it, see
    // `xid_class`): the driver's text of Xid 48 ("An uncorrectable double bit error (DBE) has
    // been detected"), 64 ("Row Remapper Error"), NVML's lost GPU ("GPU is lost. Reboot the
    // system to recover this GPU", pynvml's `NVMLError_GpuIsLost`; "The GPU requires a reset
    // before it can be used again", "GPU requires reset"), DCGM's health checks ("Detected 2
    // volatile double-bit ECC error(s)", "row remapping failed", "row remappings are pending",
    // "Pending page retirements together with a DBE") and the driver failing to bring the GPU
    // up ("RmInitAdapter failed!").
    rule!(RULE_GPU_HARDWARE_FAULT, CudaError, Cause, Standalone,
        [["uncorrectable ecc", "eccuncorrectable", "fallen off the bus", "double bit ecc",
          "uncontained ecc", "row remapping failure", "double bit error (dbe)",
          "row remapper error", "double-bit ecc", "row remapping failed",
          "row remappings are pending", "pending page retirements together with a dbe",
          "gpu is lost", "requires a reset before it can be used", "gpu requires reset",
          "rminitadapter failed", "rm_init_adapter failed"]],
        not [], ex_gpu_fault),
    // NVSwitch fatal errors (the kernel's `nvidia-nvswitch0: SXid (PCI:...): 20034, Fatal,
    // Link 30 LTSSM Fault Up`; the fabric manager's "detected NVSwitch fatal error 20034 on fid
    // 0"; DCGM's "Detected fatal errors on NvSwitch 2 link 33", "NvSwitch physical ID 3's
    // NvLink port 33 is currently down", "Only 60 NvLinks are up"): the fabric between the
    // GPUs failed.
    rule!("nvswitch_fatal", NvlsFabricManager, Cause, Standalone,
        [["sxid", "nvswitch"], ["fatal", "is currently down", "nvlinks are up"]],
        not ["non-fatal", "nonfatal"], ex_none),
    // fairseq's single-node set-up (`distributed/utils.py`: `assert
    // cfg.distributed_world_size <= torch.cuda.device_count(), f"world size is
    // {cfg.distributed_world_size} but have {torch.cuda.device_count()} available devices"`):
    // more ranks than the node has GPUs, as vLLM's "is larger than the number of available
    // GPUs" below.
    rule!("more_ranks_than_gpus", CudaError, Cause, Standalone,
        [["world size is "], [" but have "], [" available devices"]], not [], ex_none),
    // verl's resource pools against the Ray cluster (`single_controller/ray/base.py`: "Total
    // available GPUs 8 is less than total desired GPUs 16").
    rule!("ray_cluster_fewer_gpus", CudaError, Cause, Standalone,
        [["is less than total desired gpus"]], not [], ex_none),
    // fairseq's trainer (`trainer.py`): "OOM during optimization, irrecoverable", logged only
    // for an out-of-memory error it cannot skip.
    // accelerate's `find_executable_batch_size` (`utils/memory.py`) retries a smaller batch
    // after each out-of-memory error (CUDA, XPU, the CPU allocator, cuDNN's NOT_SUPPORTED) and
    // swallows it, then raises "No executable batch size found, reached zero.": not even a
    // batch of one fitted. Medium (INDIRECT_RULES): the memory is most likely the GPU's.
    rule!(RULE_BATCH_SIZE_FINDER_EXHAUSTED, CudaOom, Cause, Standalone,
        [["no executable batch size found, reached zero"]], not [], ex_none),
    rule!("fairseq_oom_irrecoverable", CudaOom, Cause, Standalone,
        [["oom during optimization, irrecoverable"]], not [], ex_none),
    // Composer's OOMObserver callback (`callbacks/oom_observer.py`, hooked on PyTorch's
    // out-of-memory observer): "Out Of Memory (OOM) observed" on the rank that ran out.
    // Medium (INDIRECT_RULES): with device_train_microbatch_size='auto' Composer recovers.
    rule!(RULE_COMPOSER_OOM_OBSERVED, CudaOom, Cause, Standalone,
        [["out of memory (oom) observed"]], not [], ex_none),
    // NCCL's argument check (`misc/argcheck.cc`): "AllReduce : sendbuff allocated on device 1
    // mismatchs with NCCL device 0": the buffer is on another GPU than the rank's
    // communicator, the current device not set to the rank's own (set_device missing).
    rule!("nccl_buffer_on_other_device", DuplicateGpu, Cause, Standalone,
        [["mismatchs with nccl device", "mismatches with nccl device"]], not [], ex_none),
    // NCCL's proxy and service threads (`proxy.cc`): "Call to pthread_create failed: Resource
    // temporarily unavailable": the process hit its thread limit (`ulimit -u`, a container's
    // pids limit), the rank's own failure.
    rule!("thread_limit", RankCrashed, Cause, Standalone,
        [["pthread_create failed"], ["resource temporarily unavailable"]], not [], ex_none),
    // NCCL's UNIX-socket exchange with a rank on the same node (`os/linux_ipcsocket.cc`, used
    // to pass cuMem handles): "UDS: Sending data over socket /tmp/nccl-socket-... failed :
    // Connection refused (111)"; its proxy's "[Service thread] Could not receive type from
    // localRank 2, res=6, closed=1". The local peer (or its proxy) is gone: no store, TCP or
    // interface involved.
    rule!("nccl_local_peer_gone", RankCrashed, Consequence, Standalone,
        [["uds: sending data over socket", "uds: receiving data over socket",
          "could not receive type from localrank"]],
        not [], ex_none),
    // NCCL's RAS (2.24 on; `ras/client_support.cc`, the `ncclras` client's report and the
    // service's event log): "DEAD\n  1 job process is considered dead (unreachable via the RAS
    // network)\n  Process 48213 on node 10.1.2.4 managing GPU 3", "PEER_DEAD: Process 48213 on
    // node ... managing GPU 3". A process of the job stopped answering: it died, or its node
    // or the network to it did. Medium (INDIRECT_RULES).
    rule!(RULE_NCCL_RAS_DEAD, RankCrashed, Cause, Standalone,
        [["considered dead (unreachable via the ras network)", "peer_dead: process"]],
        not [], ex_none),
    // RAS's INCOMPLETE report, before its 60 s verdict of DEAD: "INCOMPLETE\n  Missing
    // communicator data from 1 job process\n  Process 3487984 on node ... managing GPU 5", and
    // per communicator "Missing communicator data from 1 rank\n  The missing rank: 21" (NCCL's
    // RAS documentation). RAS answers from a thread of its own, so a rank busy or blocked in
    // Python still answers: a missing one was stopped, died, or its node or network went.
    // Medium (INDIRECT_RULES).
    rule!(RULE_NCCL_RAS_MISSING, RankCrashed, Cause, Standalone,
        [["missing communicator data from", "the missing rank"]], not [], ex_ras_missing),
    // RAS's MISMATCH report of a communicator ("Communicator ranks have different AllReduce
    // operation counts\n  15 ranks have launched up to operation 5632\n  Rank 11 has launched
    // up to operation 5631 -- GPU 3 managed by process ..."; "Rank 0 has not launched any
    // operations"): the rank named is behind the others, which wait for it in a collective.
    // Medium (INDIRECT_RULES): why it is behind the report does not say.
    rule!(
        RULE_NCCL_RAS_BEHIND,
        CollectiveTimeout,
        Cause,
        Standalone,
        [
            [
                "has launched up to operation",
                "has not launched any operations"
            ],
            ["rank "]
        ],
        not["ranks have launched"],
        ex_ras_rank_behind
    ),
    // The CUDA driver API's own result codes, as torch_memory_saver (SGLang's and verl's
    // colocated training) reports them: "CUresult error result=2 file=csrc/torch_memory_saver.cpp
    // func=cu_mem_create line=103". CUresult 2 is CUDA_ERROR_OUT_OF_MEMORY (`cuda.h`): the GPU
    // had too little free memory for the allocation; any other code is another driver error.
    rule!("curesult_out_of_memory", CudaOom, Cause, Standalone,
        [["curesult error result=2 "]], not [], ex_none),
    rule!("curesult_error", CudaError, Cause, Standalone,
        [["curesult error result="]], not [], ex_none),
    rule!(
        "cuda_oom",
        CudaOom,
        Cause,
        Standalone,
        [
            [
                "out of memory",
                "outofmemoryerror",
                "cudaerrormemoryallocation"
            ],
            [
                "cuda",
                "gpu",
                "outofmemoryerror",
                "nccl",
                "hip out of memory",
                // HIP's hipErrorOutOfMemory as PyTorch's ROCm build raises it ("HIP error: out
                // of memory"), as CUDA's "CUDA error: out of memory", and RCCL's "[FATAL ERROR]:
                // HIP failure: 'out of memory'".
                "hip error",
                "hip failure"
            ]
        ],
        // Composer's auto microbatching (`trainer.py`): its start-up warning
        // "`device_train_microbatch_size='auto'` may potentially fail with unexpected CUDA
        // errors ..." and "CUDA out of memory or excessive memory allocation retries detected.
        // Train microbatch size will be decreased from 8 -> 4.": an OOM it caught and recovers
        // from by halving the microbatch.
        not["killed process", "train microbatch size will be decreased",
            "may potentially fail with unexpected cuda errors"],
        ex_cuda_oom
    ),
    // cuBLAS's own status for memory it could not get (`CUBLAS_STATUS_ALLOC_FAILED`, which
    // NVIDIA's cuBLAS documentation explains as "usually caused by a cudaMalloc() failure",
    // to be corrected by freeing memory before the call), as PyTorch raises it: "RuntimeError:
    // CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`". The GPU's
    // memory was full when cuBLAS set up its handle or workspace.
    // cuDNN's words for a GPU allocation of its own that failed (cuDNN 9's
    // CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED; cuDNN 8's CUDNN_STATUS_ALLOC_FAILED,
    // its "internal cudaMalloc failure").
    rule!("cublas_alloc_failed", CudaOom, Cause, Standalone,
        [["cublas_status_alloc_failed", "cudnn_status_alloc_failed",
          "cudnn_status_internal_error_device_allocation_failed"]], not [], ex_none),
    // cuBLAS could not create its handle (`CublasHandlePool.cpp`, TORCH_CUDABLAS_CHECK:
    // "CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`", also cublasLtCreate):
    // its workspace did not fit on a full GPU, as maintainers answer it (QwenLM/Qwen#120); and
    // cuDNN's convolution found no algorithm (`Conv_v7.cpp`'s try_all skips each one whose
    // attempt ran out of memory or failed: "Unable to find a valid cuDNN algorithm to run
    // convolution"). Medium (INDIRECT_RULES): an earlier kernel's fault can leave the same words.
    rule!(RULE_GPU_LIBRARY_SETUP_FAILED, CudaOom, Cause, Standalone,
        [["cublas_status_not_initialized when calling `cublascreate",
          "cublas_status_not_initialized when calling `cublasltcreate",
          "unable to find a valid cudnn algorithm to run convolution"]], not [],
        ex_gpu_library_setup),
    // The processes PyTorch's out-of-memory message lists, on a line of their own when a
    // paste wrapped the message ("Process 3573322 has 20.08 GiB memory in use.").
    rule!(RULE_GPU_MEMORY_OF_PROCESSES, CudaOom, Cause, Standalone,
        [["memory in use"], ["process "], [" has "]], not [], ex_gpu_processes),
    // vLLM's start-up check of its KV cache against the GPU memory left to it (its share,
    // `gpu_memory_utilization`, less the weights and the activations of a profiling run):
    // `vllm/v1/core/kv_cache_utils.py` ("To serve at least one request with the model's max
    // seq len (N), (X GiB KV cache is needed, which is larger than the available KV cache
    // memory (Y GiB). Based on the available memory, the estimated maximum model length is
    // M. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` ..."; some
    // releases print "models's") and the older engine's `raise_if_cache_size_invalid` ("No
    // available memory for the cache blocks.", "The model's max seq len (N) is larger than
    // the maximum number of tokens that can be stored in KV cache (M)."). Raised as a
    // ValueError, so it is no crash of the program's own: the GPU memory given is too small.
    rule!(RULE_VLLM_KV_CACHE_TOO_SMALL, CudaOom, Cause, Standalone,
        [["to serve at least one request with the model", "kv cache is needed, which is larger",
          "no available memory for the cache blocks", "can be stored in kv cache"]],
        not [], ex_vllm_kv_cache),
    // NCCL's own GPU buffers (`include/alloc.h`: "Failed to CUDA malloc %ld bytes", "Failed to
    // CUDA calloc %ld bytes", "... calloc async ..."): the communicator's memory did not fit
    // beside the model's.
    // transformers' Trainer with `auto_find_batch_size` (`trainer.py`): "Evaluation hit an
    // out-of-memory error. `auto_find_batch_size` only adjusts the training batch size,
    // reduce `per_device_eval_batch_size` instead." It replaces accelerate's
    // `should_reduce_batch_size` match, which is the allocator's "out of memory" (CUDA's in
    // a GPU job).
    rule!("trainer_eval_oom", CudaOom, Cause, Standalone,
        [["evaluation hit an out-of-memory error"]], not [], ex_none),
    // vLLM's start-up check (`v1/worker/utils.py`): "Free memory on device cuda:0 (30.12/79.19
    // GiB) on startup is less than desired GPU memory utilization (0.9, 71.27 GiB). Decrease
    // GPU memory utilization or reduce GPU memory used by other processes."; sglang's
    // (`model_runner_kv_cache_mixin.py`): "Not enough memory. Please try to increase
    // --mem-fraction-static." (no room left for its KV cache).
    rule!("serving_engine_gpu_memory", CudaOom, Cause, Standalone,
        [["on startup is less than desired gpu memory utilization",
          "please try to increase --mem-fraction-static"]], not [], ex_none),
    rule!("nccl_buffer_alloc", CudaOom, Cause, Standalone,
        [["failed to cuda malloc", "failed to cuda calloc"]], not [], ex_none),
    // SIGKILL without a word of the rank's own: `torch.multiprocessing.spawn` ("process N
    // terminated with signal SIGKILL"), torchelastic ("failed (exitcode: -9)", "Signal 9
    // (SIGKILL) received by PID"), DeepSpeed's launcher ("exits with return code = -9").
    rule!("sigkill_exit", HostOomKilled, Cause, Standalone,
        [["terminated with signal sigkill", "exitcode: -9)", "exitcode: -9 ", "exit code -9",
          "exit code: -9", "return code = -9", "returncode=-9", "signal 9 (sigkill) received",
          "<signals.sigkill: 9>", "exitcode : -9",
          // torchelastic's failure table (`errors/__init__.py`'s template: "  exitcode  :
          // ${exitcode} (pid: ${pid})"), its line kept without the traceback line below it.
          "exitcode  : -9 ",
          // Lightning's launcher (`subprocess_script.py`'s _ChildProcessObserver): "[rank: 2]
          // Child process with PID 13117 terminated with code -9. Forcefully terminating all
          // other processes to avoid zombies".
          "terminated with code -9."]],
        not [], ex_none),
    // vLLM's engine start-up (`v1/engine/utils.py`): "Engine core initialization failed. See
    // root cause above. Failed core proc(s): {'EngineCore_DP0': -9}": the exit codes of its
    // engine processes, -9 a SIGKILL, as above.
    rule!("vllm_engine_core_sigkill", HostOomKilled, Cause, Standalone,
        [["failed core proc(s)"], ["': -9}", "': -9,"]], not [], ex_none),
    // SIGBUS: touching shared memory that /dev/shm cannot back ("Signal 7 (SIGBUS)",
    // UCX's "Caught signal 7 (Bus error", a shell's "Bus error (core dumped)").
    rule!("sigbus_exit", ShmTooSmall, Cause, Standalone,
        [["terminated with signal sigbus", "exitcode: -7)", "exitcode: -7 ", "exit code -7",
          "return code = -7", "signal 7 (sigbus)", "caught signal 7 (bus error", "<signals.sigbus: 7>",
          "exitcode : -7", "exitcode  : -7 ", "bus error (core dumped)", "received signal sigbus",
          "ncclshmopen", "terminated with code -7.",
          // vLLM's executor (`v1/executor/multiproc_executor.py`): "Worker proc VllmWorker-1
          // died unexpectedly (exit code: -7), shutting down executor."
          "exit code: -7)"]],
        not [], ex_none),
    // NCCL `include/shm.h`: "Unable to allocate shared memory (%d bytes) : %s" with
    // posix_fallocate's error. EINTR ("Interrupted system call") is not a full /dev/shm:
    // a signal (a profiler's SIGPROF, a timer's SIGALRM) interrupted the call and NCCL
    // before the fix did not retry it. Any other error falls to shm_segment below.
    rule!("nccl_shm_interrupted", NcclInternalOrUnsupported, Cause, Standalone,
        [["unable to allocate shared memory", "error while creating shared memory segment",
          "call to posix_fallocate failed"],
         ["interrupted system call"]],
        not [], ex_shm_interrupted),
    // NCCL `os/linux.cc` (ncclOsShmOpen's failure path): "Error while attaching to shared
    // memory segment /dev/shm/nccl-XXXX (size N), error: No such file or directory (2)": the
    // peer on this host created the segment in a /dev/shm this process does not see.
    rule!("nccl_shm_attach", ShmTooSmall, Cause, Standalone,
        [["error while attaching to shared memory segment"]], not [], ex_nccl_shm_attach),
    // NCCL 2.4-2.11 (`include/shm.h`, its SYSCHECK macro): "Call to posix_fallocate failed :
    // No space left on device" before "Error while creating shared memory segment"; 2.12-2.17
    // (`misc/shmutils.cc`): "Could not map /dev/shm/nccl-XXXX" when the mapping fails; 2.22 on
    // (`shmutils.cc`, then `os/linux.cc`): mkstemp's failure in /dev/shm, "Error: failed to
    // create shared memory file /dev/shm/nccl-XXXXXX, error No space left on device (28)"
    // (before 2.30 the path printed as a pointer).
    rule!(
        "shm_segment",
        ShmTooSmall,
        Cause,
        Standalone,
        [[
            "error while creating shared memory segment",
            "unable to allocate shared memory",
            "failed to extend /dev/shm",
            "failed to create shared memory file",
            "call to posix_fallocate failed",
            "could not map /dev/shm",
            "insufficient shared memory",
            "out of shared memory",
            "raise your shared memory limit",
            "bus error encountered in worker",
            // vLLM's `shm_broadcast.py` (check_shm_free_space): "Insufficient space in /dev/shm
            // for shared-memory allocation: 384 MiB required, 60 MiB free."
            "insufficient space in /dev/shm",
            // UCX's `mm_posix.c`: "Not enough memory to write total of 4294967296 bytes. Please
            // check that /dev/shm or the directory you specified has more available memory.";
            // Open MPI's `help-opal-shmem-mmap.txt`: "there is not enough space for
            // /dev/shm/... (the shared-memory backing file)".
            "not enough memory to write total of",
            "(the shared-memory backing file)"
        ]],
        // NCCL's `os/linux.cc` on EINTR: "fallocate: Failed to extend /dev/shm/nccl-... to N
        // bytes, error: Interrupted system call (4) - retrying" (at INFO; it retries).
        not["interrupted system call"],
        ex_none
    ),
    // ATen's MapAllocator on a tensor's shared-memory file (`MapAllocator.cpp`: shm_open's
    // "/torch_<pid>_<random>_<n>", which lives in /dev/shm, as the DataLoader's workers pass
    // batches): "unable to write to file </torch_1234_567_0>: No space left on device (28)",
    // "unable to stretch file <...> to the right size: ..." (posix_fallocate's own failure,
    // "unable to allocate shared memory(shm) for file", is shm_segment's).
    rule!("torch_shm_file_full", ShmTooSmall, Cause, Standalone,
        [["file </torch_"], ["no space left on device"]], not [], ex_none),
    // The same write refused where the paste cut its errno (YOLOv5's multi-GPU guide quotes
    // "RuntimeError: unable to write to file </torch_31_1030151126>" for a container's small
    // /dev/shm). Medium (INDIRECT_RULES in correlate.rs): the reason is not on the line.
    rule!(RULE_TORCH_SHM_WRITE_FAILED, ShmTooSmall, Cause, Standalone,
        [["unable to write to file </torch_"]], not [], ex_none),
    // The data loader's report of a worker's SIGBUS (`DataLoader.cpp`: "DataLoader worker (pid
    // N) is killed by signal: Bus error."; later versions add "It is possible that dataloader's
    // workers are out of shared memory", which shm_segment reads), where the worker's own
    // "bus error encountered in worker ... insufficient shared memory" was not kept.
    rule!("dataloader_worker_bus_error", ShmTooSmall, Cause, Standalone,
        [["is killed by signal: bus error"]], not [], ex_none),
    // (runc's "OCI runtime create failed: ... error mounting \"/dev/shm\" to rootfs at ..." is
    // the container never created, not a /dev/shm that filled up.)
    rule!(
        "shm_space",
        ShmTooSmall,
        Cause,
        Standalone,
        [
            ["/dev/shm"],
            ["no space left", "bus error", "cannot allocate", "failed"]
        ],
        // (and NCCL's retried EINTR, as for shm_segment; enroot's "enroot-mount: failed to
        // mount: /dev/shm at ...": a container that never started, nothing ran out)
        // (NCCL 2.16 to 2.18's clean-up, `shmutils.cc`: "unlink shared memory /dev/shm/nccl-X
        // failed, error: No such file or directory": the file was already gone.)
        not["error mounting", "interrupted system call", "failed to mount:",
            "unlink shared memory"],
        ex_none
    ),
    // Ray's start-up check (`services.py`, which vLLM's multi-GPU runs start): "The object
    // store is using /tmp instead of /dev/shm because /dev/shm has only %d bytes available";
    // 67108864 bytes is the 64 MiB a Docker container or a Kubernetes pod gets unless told
    // otherwise, too little for NCCL's shared-memory transport between the GPUs of one host.
    // What failed is not said: a symptom, behind any cause the log names.
    rule!("shm_default_size_reported", ShmTooSmall, Symptom, Standalone,
        [["because /dev/shm has only 67108864 bytes"]], not [], ex_shm_default_size),
    // NCCL `init.cc`: "Duplicate GPU detected : rank %d and rank %d both on CUDA device %lx"
    // (the sentence's second half is read alone too: a wrapper or a paste may reword the first);
    // later releases: "Multiple Ranks are using the same GPU/Partition. Set
    // NCCL_MULTI_RANK_GPU_ENABLE=1 to enable this configuration". The reference DDP's own
    // check before NCCL (`cuda/src/nccl.rs`, `check_hellos`): "ranks %d and %d both use GPU %d
    // on host ...".
    // trl's `vllm_serve.py` before it builds the weight-sync communicator with the trainer:
    // "Attempting to use the same CUDA device (UUID: GPU-...) for multiple distinct roles/ranks
    // within the same communicator."
    rule!("duplicate_gpu", DuplicateGpu, Cause, Standalone,
        [["duplicate gpu detected", "multiple ranks are using the same gpu", "both use gpu",
          "attempting to use the same cuda device", "both on cuda device"]],
        not [], ex_duplicate_gpu),
    rule!(
        "nccl_version_mismatch",
        NcclVersionMismatch,
        Cause,
        Standalone,
        [
            [
                "mismatched nccl version",
                "nccl version mismatch",
                "version mismatch"
            ],
            ["nccl"]
        ],
        // NVML's "Driver/library version mismatch" in an NCCL line is the GPU driver's own.
        not["driver/library version mismatch"],
        ex_ranks
    ),
    // NCCL's bootstrap receiving a message longer than the structure it expects (`bootstrap.cc`,
    // `bootstrapNetRecv`/`socketRecv`: "Message truncated : received %d bytes instead of %d",
    // then ncclInternalError): the ranks exchange their set-up structures, whose sizes change
    // between NCCL releases, so the peer runs another NCCL. Google's GPU networking guide
    // gives this warning as the one of "mixed NCCL versions across ranks". Medium
    // (INDIRECT_RULES in correlate.rs): a stray connection to the bootstrap port reads the same.
    // (NVSHMEM's bootstrap prints the same words about its own messages.)
    rule!(
        RULE_NCCL_BOOTSTRAP_TRUNCATED,
        NcclVersionMismatch,
        Cause,
        Standalone,
        [["message truncated : received"], ["bytes instead of"]],
        not["nvshmem"],
        ex_none
    ),
    // NCCL `init.cc`'s check of the library against the headers the program was built with:
    // "NCCL library is not backwards compatible. This application was compiled with NCCL
    // version %s, but is running with NCCL version %s", "NCCL library is too old. ...", "The
    // application was compiled with too old version of NCCL. ...": the NCCL loaded is not the
    // one PyTorch (or the program) was built against.
    rule!("nccl_library_version", NcclVersionMismatch, Cause, Standalone,
        [["this application was compiled with nccl version", "compiled with too old version of nccl"]],
        not [], ex_none),
    // The NCCL library loaded is not the one PyTorch was built against: the dynamic linker
    // cannot find an NCCL function or symbol version ("undefined symbol: ncclCommRegister",
    // "version `NCCL_2.x' not found").
    rule!("nccl_symbol_missing", NcclVersionMismatch, Cause, Standalone,
        [["undefined symbol: nccl", "version `nccl_"]], not [], ex_none),
    rule!("world_size_mismatch", WorldSizeMismatch, Cause, Standalone,
        [[// NCCL `bootstrap.cc`: "Bootstrap Root : mismatch in rank count from procs %d :
          // %d", "Bootstrap Root : rank %d of %d ranks has already checked in" (two
          // processes with one rank).
          "mismatch in rank count from procs", "ranks has already checked in",
          // Later releases: "Bootstrap Root : mismatch in info from procs, nranks %d vs %d,
          // nroots %d vs %d, ...".
          "mismatch in info from procs",
          "invalid rank requested", "rank should be in the interval", "world size mismatch",
          "world_size mismatch", "world size does not match", "world_size does not match",
          "mismatched world size",
          // vLLM's `pynccl.py`: "rank 2 out of range for world_size 2".
          "out of range for world_size",
          // DeepSpeed's elasticity (`elasticity.py`): "ElasticityIncompatibleWorldSize: World
          // size (3) is not valid with the current list of valid GPU counts: [2, 4, 8]".
          "is not valid with the current list of valid gpu counts",
          // gloo's `Context(rank, size)` (`context.cc`): "[enforce fail at .../context.cc:23]
          // rank < size. 4 vs 4".
          "] rank < size. "]],
        not [], ex_world_size),
    // torch's DeviceMesh (`device_mesh.py`): "Mesh should not be bigger than default world
    // size 8, but found 16 ranks!" (earlier releases without the size): the mesh the program
    // builds (its parallel sizes, a config's GPU count) asks for more ranks than the job
    // started.
    rule!("device_mesh_larger_than_world", WorldSizeMismatch, Cause, Standalone,
        [["should not be bigger than"], ["world size"]], not [], ex_device_mesh_size),
    // The same check elsewhere in torch.distributed: `distributed_c10d.py`'s subgroups ("The
    // arg 'group_size' (16) must not exceed the world size (8)", "The world size must be
    // divisible by 'group_size'"), `new_group` and `split_group` ("the new group's world size
    // should be less or equal to the world size set by init_process_group", "The new group's
    // rank should be within the world_size set by init_process_group", "the split group's
    // size should be less or equal to the world_size set by init_process_group"), and
    // DeviceMesh's "DeviceMesh only support homogeneous hardware, but found 12 ranks and 8
    // cuda devices!" (a world size that is no multiple of the GPUs per host): the layout the
    // program asks for does not fit the ranks the job started.
    // DeepSpeed's MPI discovery (`comm/comm.py`, `mpi_discovery`): "MPI world size 8 does not
    // match torch world size 1" (and the rank's "MPI rank 3 does not match torch rank 0"):
    // torch.distributed was set up for another world than the MPI launcher started.
    rule!("parallel_layout_vs_world", WorldSizeMismatch, Cause, Standalone,
        [["must not exceed the world size", "world size must be divisible by 'group_size'",
          "world size set by init_process_group", "world_size set by init_process_group",
          "only support homogeneous hardware, but found",
          "does not match torch world size", "does not match torch rank",
          // torch 2.13's wording of the subgroups' check ("The world size (8) must be divisible
          // by 'group_size=3'") and `new_group`'s ranks ("Rank 9 is out of range. Valid ranks
          // are 0 to 7").
          "must be divisible by 'group_size=", "is out of range. valid ranks are 0 to",
          // transformers' `distributed/utils.py`: "The parallel mesh requires 8 processes, but
          // world_size is 4." (the product of its DistributedConfig's pp, dp, fsdp and tp).
          "processes, but world_size is",
          // transformers' `distributed/configuration_utils.py`: "WORLD_SIZE (6) must be
          // divisible by dp_replicate_size * fsdp_size * pp_size (4) to derive tp_size."
          "must be divisible by dp_replicate_size",
          // torchtitan's and torchtune's ParallelDims: "Invalid parallel dims: dp_replicate(1)
          // * dp_shard(1) * cp(1) * tp(4) * pp(1) != WORLD_SIZE(6)"; NeMo's
          // (`megatron_init.py`): "world_size: 6 must be divisible by total world_size:
          // (decoder_)tensor_model_parallel_size 4 * ...", (`_strategy_lib.py`) "Expected
          // world_size (2) to be greater than/equal to pipeline size (4)", (`llm/api.py`)
          // "Number of GPUs must be divisible by the product of all parallelism sizes".
          "!= world_size(", "must be divisible by total world_size",
          "to be greater than/equal to pipeline size",
          "must be divisible by the product of all parallelism sizes",
          // fairseq's Slurm set-up with pipeline parallelism (`distributed/utils.py`):
          // "SLURM --ntasks-per-node must match number of pipelines per node (=2)".
          "--ntasks-per-node must match number of pipelines per node",
          // torch.distributed.pipelining (`stage.py`: "Pipeline group size 8 cannot be larger
          // than number of stages 4"; `_utils.py`'s stage-to-rank mapping: "num_stages 6 must
          // be evenly divisible by pp_size 4 for V schedules", pp_size being the pipeline
          // group's ranks).
          "cannot be larger than number of stages", "must be evenly divisible by pp_size",
          // The RL frameworks' checks of their layouts against the GPUs they were given: verl
          // (`utils/config.py`: "n_gpus (12) must be divisible by model_parallel_size (8) times
          // context_parallel_size (1)"; its workers: "rollout world_size: 8 is not divisible
          // by infer_world_size: 3"; `replica.py`: "world_size 12 must be divisible by
          // gpus_per_node 8"; "gpus_per_node should be divisible by
          // tensor_model_parallel_size"), trl's colocated vLLM ("tensor_parallel_size (4) must
          // divide world size (6) evenly."), OpenRLHF's colocate_all ("actor_num_nodes *
          // actor_num_gpus_per_node must be equal to vllm_num_engines *
          // vllm_tensor_parallel_size, got 8 and 4").
          "must be divisible by model_parallel_size", "is not divisible by infer_world_size",
          "must be divisible by gpus_per_node", "should be divisible by tensor_model_parallel_size",
          "must divide world size", "must be equal to vllm_num_engines",
          // DeepSpeed: pipeline stages (`runtime/pipe/module.py`: "num_stages (4) must divide
          // distributed world size (6)"), its model-parallel groups (`utils/groups.py`:
          // "data_parallel_size (2) * tensor_model_parallel_size (2) must equal world_size
          // (8)").
          "must divide distributed world size", "must equal world_size (",
          // accelerate's `parallelism_config.py` (`_validate_accelerator`): "ParallelismConfig
          // total_size (8) does not match num_processes (4). ...".
          "does not match num_processes",
          // Fabric's CLI (`fabric run` starts torchrun with its --devices and --num-nodes;
          // `fabric/connector.py`): "Your code has `Fabric(devices=2, ...)` but it conflicts
          // with the value `--devices=4` set through the CLI." (also for num_nodes).
          "conflicts with the value `--devices=", "conflicts with the value `--num_nodes=",
          // Meta's Llama reference code (`llama/generation.py`, `Llama.build`): "Loading a
          // checkpoint for MP=2 but world size is 1": the checkpoint is cut into one shard per
          // model-parallel rank, and the job started another number of ranks
          // (`--nproc_per_node` must equal the number of `*.pth` shards).
          "loading a checkpoint for mp=",
          // TensorRT-LLM: its Python runtime's "Engine world size (2) != Runtime world size
          // (1)" and its C++ `WorldConfig::mpi` ("Assertion failed: mpiSize == tp * pp", later
          // "MPI size 1 != TP size 4 * PP size 1"): the engine was built for tp × pp ranks
          // and `mpirun -n` started another number.
          "engine world size (", "mpisize == tp * pp", "!= tp size",
          // GPT-NeoX (`neox_arguments/arguments.py`, `calculate_derived`; before it
          // `config_monster.py`): "NeoXArgs.calculate_derived() (global_num_gpus / pp_size) /
          // mp_size [(4 / 4) / 2] must be a whole number": the GPUs it was started on do not
          // fill whole pipeline × model-parallel replicas.
          "/ mp_size [("]],
        not [], ex_none),
    // DeepSpeed's settings that were made for another number of ranks: the batch arithmetic
    // of its config (`runtime/config.py`: "Check batch related parameters. train_batch_size
    // is not equal to micro_batch_per_gpu * gradient_acc_step * world_size 256 != 4 * 8 *
    // 4") and a ZeRO checkpoint resumed on another world (`runtime/engine.py`: "The
    // checkpoint being loaded used a DP world size of 16 but the current world size is 8.
    // Automatic adjustment of ZeRO's optimizer state partitioning with a new world size is
    // not currently supported.").
    rule!(RULE_SETTINGS_FOR_ANOTHER_WORLD, WorldSizeMismatch, Cause, Standalone,
        [["gradient_acc_step * world_size", "used a dp world size of"]], not [], ex_none),
    // Megatron-LM's checks of the world size against the model-parallel sizes it was given
    // (`parallel_state.py`: "world_size (6) is not divisible by 4" (tensor × pipeline ×
    // context parallel), "world_size (24) is not divisible by
    // expert_tensor_model_pipeline_parallel size (16)"; `arguments.py`: "world size (6) is not
    // divisible by total_model_size (total_model_size=4)"): the ranks started do not fill
    // whole model replicas.
    rule!("world_not_divisible_by_model_parallel", WorldSizeMismatch, Cause, Standalone,
        [["world_size (", "world size ("], [") is not divisible by"]], not [], ex_none),
    // Lightning's cluster environments check the Trainer's `devices` and `num_nodes` against
    // the launcher's (`validate_settings` in lightning/fabric/plugins/environments):
    // SLURM's "You set `devices=4` in Lightning, but the number of tasks per node configured
    // in SLURM `--ntasks-per-node=1` does not match. HINT: Set `devices=1`." and "You set
    // `num_nodes=2` in Lightning, but the number of nodes configured in SLURM `--nodes=1` does
    // not match."; torchelastic's "You set `devices=4` and `num_nodes=1` in Lightning, but
    // the product (4 * 1) does not match the world size (8)."; srun's "You set `--ntasks=8`
    // in your SLURM bash script, but this variable is not supported."
    // Composer's `utils/dist.py` (`_get_distributed_config_var`): "Torch distributed has been
    // initialized with a value of 8 for world size, but environment variable WORLD_SIZE has
    // value 16." (and the same for RANK): the process group was set up for another world than
    // the launcher started.
    rule!("composer_dist_config_differs", WorldSizeMismatch, Cause, Standalone,
        [["torch distributed has been initialized with a value of"],
         ["but environment variable"]],
        not [], ex_none),
    rule!(RULE_LIGHTNING_LAUNCHER_SIZES, WorldSizeMismatch, Cause, Standalone,
        [["in lightning, but the number of", "in lightning, but the product",
          "in your slurm bash script, but this variable is not supported",
          // Lightning's ModelParallelStrategy: "The sizes `data_parallel_size=2` and
          // `tensor_parallel_size=2` multiplied should equal the world size (8)."
          "multiplied should equal the world size"]],
        not [], ex_lightning_launcher_sizes),
    // c10d's TCPStore client (`TCPStore.cpp`'s ping, run when it connects): it sends its pid
    // and expects the server to send it back, else "Ping failed, invalid value returned from
    // server. Expected: 3058192, Got: 759714643" (logged as "TCP client failed to
    // connect/validate to host host-a:29500 - retrying ...", then raised as DistNetworkError).
    // What answered on MASTER_ADDR:MASTER_PORT is not a TCPStore: another program holds the
    // port there.
    rule!(RULE_STORE_PING_MISMATCH, PortInUse, Cause, Standalone,
        [["ping failed, invalid value returned from server"]], not [], ex_none),
    // accelerate's launcher checks the main process port before it starts anything
    // (`utils/launch.py`): "ConnectionError: Tried to launch distributed communication on port
    // `29500`, but another process is utilizing it. Please specify a different port ...".
    rule!(
        "port_in_use",
        PortInUse,
        Cause,
        Standalone,
        [[
            "address already in use",
            "eaddrinuse",
            "errno: 98",
            "os error 98",
            "failed to listen on any local network address",
            "but another process is utilizing it",
            // vLLM's `utils/network_utils.py`: "Could not find open port after 1000 attempts
            // starting from port 29500" (every bind failed); sglang's `wait_port_available`:
            // "nccl_port at 30000 is not available in 30 seconds. nccl_port is used by a process
            // already." and `server_args.py`'s "Port is already in use. dist_init_port=...".
            "could not find open port after",
            "is used by a process already",
            "port is already in use. dist_init_port"
        ]],
        // vLLM's retry (`config/parallel.py`): "Address already in use. Retrying with a new
        // port." The error comes only when every try failed. sglang's wait ("port 30000 is in
        // use. Waiting for 15 seconds for nccl_port to be available. nccl_port is used by a
        // process already.") ends in the error above when the port stays taken.
        // verl's rollout server (`workers/rollout/utils.py`: "Failed to start HTTP server on
        // port 41235 at try 0, error: ... address already in use") binds a fresh free port at
        // each try; only "after 5 retries, exiting" is its failure.
        // A port below 1024 (EACCES, "errno: 13 - Permission denied") is not in use: it is not
        // permitted. libuv's store falls back from IPv6 by itself ("Failed to bind to ipv6
        // address, trying ipv4."), an INFO line.
        // gloo's listener binds port 0 (`tcp/socket.cc`: "rv != -1. -1 vs -1. bind: Address
        // already in use"; libuv's "uv_listen: address already in use"): the host had no free
        // port left to hand out, no master port held by another program.
        not["retrying with a new port", "to be available. nccl_port is used", " at try ",
            "errno: 13", "permission denied", "eacces", "trying ipv4", "-1 vs -1. bind:",
            "-1 vs -1. listen:", "uv_listen: address already in use"],
        ex_port
    ),
    // c10d's `socket.cpp` names each address it failed to bind ("The server socket has failed
    // to bind to [::]:29500 (errno: 98 - Address already in use)."); on the wildcard
    // addresses (`[::]`, `0.0.0.0`) a bind fails for a port that is taken, unless the error
    // says otherwise (no IPv6: errno 97; a port below 1024: errno 13), so with the errno cut
    // off the line still names a port in use.
    rule!("port_bind_failed", PortInUse, Cause, Standalone,
        [["server socket has failed to bind to [::]:", "server socket has failed to bind to 0.0.0.0:",
          "server socket has failed to bind to [0.0.0.0]:"]],
        not ["errno: 97", "address family not supported", "errno: 13", "permission denied",
             "errno: 99", "cannot assign requested address"],
        ex_port),
    // Connections between the ranks themselves (not to the store) that fail: gloo's full
    // mesh (`ProcessGroupGloo.cpp`: "Gloo connectFullMesh failed with ...", and its warning
    // "Unable to resolve hostname to a (local) address. Using the loopback address as
    // fallback. Manually set the network interface to bind to with GLOO_SOCKET_IFNAME."),
    // NCCL's sockets (`misc/socket.cc`: WARN "socketStartConnect: Connect to %s failed :
    // %s", "socketPollConnect: Connect to %s returned %d(%s) errno %d(%s)"; `Net : Connect
    // to %s failed`). Each rank advertised an address the others cannot reach: the
    // interface chosen (GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME), a firewall, a container's
    // own network. A refused NCCL connection is `connection_refused`'s (the peer's
    // listener is not up yet, or gone), and NCCL's own retries are not failures.
    // A gloo pair that could not connect to a peer at a loopback address
    // (`transport/tcp/pair.cc`'s "SO_ERROR: Connection refused, remote=[127.0.1.1]:20901",
    // "connect [127.0.1.1]:PORT: ..."): the address is the one the peer advertised, the
    // address its host name resolved to, and another process can reach it only on the
    // peer's own host. Ubuntu's and Debian's images map the host name to 127.0.1.1 in
    // /etc/hosts, so a multi-node gloo job advertises loopback; on one node loopback works,
    // so a refusal there is a peer not listening (medium: the log may be one node's).
    rule!(RULE_GLOO_PEER_LOOPBACK, NetworkInterface, Cause, Standalone,
        [["connectfullmesh", "transport/tcp/pair.cc", "so_error", "gloo"],
         ["remote=[127.", "remote=127.", "connect [127."],
         ["refused", "timed out", "no route", "unreachable"]],
        not [], ex_gloo_peer_loopback),
    // NCCL's connect retries (`misc/socket.cc`, NCCL 2.19 and later: INFO "%s: connect to %s
    // returned %s, retrying (%d/%d) after sleep for %d msec", `ncclOsSocketStartConnect` and
    // `ncclOsSocketPollConnect` in 2.29) refused at a loopback address: the address a peer
    // advertised, so that peer bootstrapped on `lo` (`Bootstrap: Using lo:127.0.0.1<0>`:
    // NCCL_SOCKET_IFNAME=lo, or no other interface NCCL accepted; NCCL commit a93ef9a fixed an
    // inverted subnet check that chose it), which another host cannot reach. Medium, as gloo's:
    // on one node a refusal there is a peer not listening. Other refused retries are not
    // failures of their own (the listener may come up later).
    rule!(RULE_NCCL_PEER_LOOPBACK, NetworkInterface, Cause, Standalone,
        [["nccl info"], ["connect to 127."], ["returned connection refused"]],
        not [], ex_nccl_peer_loopback),
    rule!("gloo_peer_mesh", NetworkInterface, Cause, Standalone,
        [["connectfullmesh failed", "using the loopback address as fallback",
          "unable to resolve hostname to a (local) address"]],
        not [], ex_address),
    // PyTorch's gloo devices, before any connection: `ProcessGroupGloo.cpp`'s
    // createDeviceForHostname ("Cannot resolve node-17 to a (local) address": the host name
    // gloo binds to, this host's own unless GLOO_SOCKET_IFNAME names an interface, has no
    // address of this host) and `GlooDeviceFactory.cpp`'s makeTCPDevice ("interface or
    // hostname can't be empty": a device asked for with neither).
    rule!("gloo_device_address", NetworkInterface, Cause, Standalone,
        [["cannot resolve ", "maketcpdevice(): interface or hostname can't be empty"],
         ["to a (local) address", "interface or hostname can't be empty"]],
        not [], ex_gloo_device_address),
    // gloo's `transport/tcp/device.cc` (lookupAddrForHostname), when getaddrinfo() fails for
    // the host name gloo binds to: "[enforce fail at .../gloo/transport/tcp/device.cc:99] rv ==
    // 0. -2 vs 0" (EAI_NONAME: the name does not resolve on this host).
    rule!("gloo_hostname_unresolved", NetworkInterface, Cause, Standalone,
        [["transport/tcp/device.cc"], ["rv == 0. "]], not [], ex_gloo_hostname_unresolved),
    // gloo's `transport/tcp/pair.cc`: "connect [ADDR]:PORT: Connection refused" (a pair
    // connects to a peer rank, never to the store).
    rule!("gloo_peer_connect", NetworkInterface, Cause, Standalone,
        [["transport/tcp/pair.cc"], ["connect ["],
         ["refused", "timed out", "no route", "unreachable"]],
        not [], ex_address),
    rule!("nccl_peer_connect", NetworkInterface, Cause, Standalone,
        [["socketstartconnect", "socketpollconnect", "socketfinalizeconnect", "net : connect to",
          "net/socket : connect to"]],
        // NCCL 2.16 to 2.18 (`misc/socket.cc`): "socketStartConnect: exceeded retries (20000)"
        // is RETRY_REFUSED_TIMES, 20 s of refused connects (its ETIMEDOUT twin, "exceeded
        // timeouts", stays here): a refusal.
        not ["retrying", "connection refused", "exceeded retries"], ex_address),
    // NCCL before 2.12 (`include/socket.h`): "Connect to %s failed : %s"; a connect that
    // times out never reached a listener: the address is unreachable from here (a tunnel or
    // link-local interface picked first, a container's own address).
    rule!("nccl_connect_refused_retries", ConnectionRefused, Symptom, Standalone,
        [["socketstartconnect", "socketpollconnect"], ["exceeded retries"]], not [],
        ex_address),
    rule!("nccl_connect_unreachable", NetworkInterface, Cause, Standalone,
        [["connect to "], ["failed : connection timed out", "failed : no route to host",
          "failed : network is unreachable"]],
        not [], ex_address),
    // c10d's store client (`socket.cpp`, SocketConnectOp::tryConnect): "[c10d] The IPv6 network
    // addresses of (pytorch-workers-0-0.pytorch-workers, 3389) cannot be retrieved (gai error:
    // -2 - Name or service not known)." The store's host name (MASTER_ADDR, the rendezvous
    // endpoint) does not resolve on this node: the store cannot be reached, whatever the
    // interfaces are.
    rule!(RULE_STORE_NAME_UNRESOLVED, ConnectionRefused, Cause, Standalone,
        [["network addresses of ("], ["cannot be retrieved"]], not [], ex_store_name_unresolved),
    // TCPStore's client (`TCPStore.cpp`) after a failed connect: "TCP client failed to
    // connect/validate to host {}:{} - retrying (try={}, ...): {}" (or "- timed out ..."), the
    // cause last; a name that does not resolve shows as getaddrinfo's words.
    rule!(RULE_STORE_CLIENT_NAME_UNRESOLVED, ConnectionRefused, Cause, Standalone,
        // (PyTorch 1.x's store client, `Utils.cpp` connect(): "host not found: Name or service
        // not known", getaddrinfo's words after it.)
        [["tcp client failed to connect/validate to host", "host not found:"],
         ["name or service not known", "temporary failure in name resolution",
          "nodename nor servname", "no address associated with hostname"]],
        not [], ex_store_client_name_unresolved),
    // UCX (under Open MPI's or HPC-X's `pml ucx`, UCC): "UCX WARN network device 'mlx5_0:1' is
    // not available, please use one or more of: 'eth0'(tcp), ..." (`ucp_context.c`: a device
    // UCX_NET_DEVICES names is not on this host; a symptom, since UCX goes on with the others
    // and a job that works can print it), and "UCX ERROR no active messages transport to
    // <no debug data>: Unsupported operation" / "Error: Failed to resolve UCX endpoint" (no
    // transport of UCX_TLS reaches the peer). NCCL's troubleshooting guide gives both, with
    // UCX_NET_DEVICES and UCX_TLS=self,sm,tcp as the fixes. Medium (INDIRECT_RULES).
    rule!("ucx_net_device_unavailable", NetworkInterface, Symptom, Standalone,
        [["ucx"], ["network device '"], ["is not available, please use one or more of"]],
        not [], ex_none),
    rule!(RULE_UCX_NO_TRANSPORT, NetworkInterface, Cause, Standalone,
        [["no active messages transport to", "failed to resolve ucx endpoint"]],
        not [], ex_none),
    // Open MPI's launch on a node whose PATH lacks its daemon ("bash: orted: command not found",
    // PRRTE's "prted"): no rank started there. Open MPI's FAQ and Horovod's troubleshooting
    // page give it, with the fix of its prefix (`mpirun --prefix`, or PATH in the remote
    // shell's start-up file).
    rule!("mpi_daemon_not_found", RankCrashed, Cause, Standalone,
        [["orted: command not found", "prted: command not found"]], not [], ex_none),
    // NCCL's `misc/socket.cc` (ncclSocketInit): "connecting to address %s with family %d is
    // neither AF_INET(2) nor AF_INET6(10)": the address NCCL was given for a peer holds no
    // address. Two causes are recorded: an NCCL_SOCKET_IFNAME naming an interface the host
    // lacks (the address never filled in), and nodes running different NCCL versions (the
    // peer's handle read with another layout). Medium: the line does not tell them apart.
    rule!(RULE_NCCL_PEER_ADDRESS_INVALID, NetworkInterface, Cause, Standalone,
        [["is neither af_inet"]], not [], ex_none),
    rule!("network_interface", NetworkInterface, Cause, Standalone,
        [["no socket interface found", "no usable listening interface", "unable to find address for",
          // NCCL: "NET/IB : No IP interface found.", "no device found matching ib0, verify
          // NCCL_OOB_NET_IFNAME", and a bind to an
          // address this host does not have (`SYSCHECK`: "Call to bind failed: Cannot assign
          // requested address"); gloo's `device.cc` ("Unable to find interface for: eth1") and
          // `socket.cc` ("bind: Cannot assign requested address").
          "no ip interface found", "verify nccl_oob_net_ifname",
          "call to bind failed: cannot assign requested address",
          "bind: cannot assign requested address", "unable to find interface for",
          "network is unreachable", "no route to host", "name or service not known",
          "temporary failure in name resolution", "no interface found", "nodename nor servname",
          "address family not supported",
          // gloo `transport/tcp/device.cc`: "ss1.ss_family == ss2.ss_family. 2 vs 10": one
          // rank's address is IPv4 and another's IPv6 (each picked its own interface).
          "ss1.ss_family == ss2.ss_family",
          // vLLM's `utils/network_utils.py`: "Neither 127.0.0.1 nor ::1 are bound to a local
          // interface. Set the VLLM_LOOPBACK_IP environment variable explicitly."
          "are bound to a local interface",
          // Horovod's runner (`driver_service.py`, `network.py`): "Unable to find a set of
          // common task-to-task communication interfaces", "Cannot find an IPv4 address of
          // the common interface".
          "common task-to-task communication interfaces",
          "cannot find an ipv4 address of the common interface",
          // gloo's pair connecting to the address a peer advertised (`tcp/pair.cc`, after three
          // tries: "timed out connecting: SO_ERROR: Connection timed out, remote=[...]"; its
          // debug logger's last try: "ERROR failed to connect, willRetry=0, ..."); libuv's
          // bind to an address this host does not have ("uv_bind: address not available").
          "timed out connecting: so_error", "failed to connect, willretry=0",
          "uv_bind: address not available",
          // The same errno (EADDRNOTAVAIL) raised through Python's socket module or pyzmq, a
          // bind to an address this host does not have (an engine, a store or a message queue
          // told another node's address): "OSError: [Errno 99] Cannot assign requested
          // address", "zmq.error.ZMQError: Cannot assign requested address (addr='tcp://...')".
          "[errno 99] cannot assign requested address",
          "zmqerror: cannot assign requested address"]],
        // Reaching the store (MASTER_ADDR) is connection_refused's; this rule is about the
        // interface NCCL/gloo pick for their own connections. c10d's `socket.cpp` alone writes
        // an errno as "(errno: 113 - No route to host)" (NCCL: "failed : No route to host",
        // gloo: "connect [...]: No route to host"): the rest of its store client's line, where
        // a paste wrapped it before the errno.
        // (An HTTP client's own failure to resolve or route, "HTTPSConnectionPool(host=
        // 'huggingface.co', port=443): ... Temporary failure in name resolution", urllib's
        // "<urlopen error [Errno -2] Name or service not known>": a data or model host, the
        // rank's own failure, as for refusals.)
        not ["client socket", "c10d store", "tcpstore", "host not found:", "(errno: ",
             "httpsconnectionpool(", "httpconnectionpool(", "urlopen error",
             "newconnectionerror", "awshttpconnection", "httpx.", "got: connecterror",
             "thrown while requesting"], ex_address),
    // gloo's libuv transport (`uv/pair.cc`): "Error connecting to [10.0.0.1]:50123: connection
    // timed out" (or "host is unreachable"): the peer's advertised address was not reached.
    rule!("gloo_uv_connect_failed", NetworkInterface, Cause, Standalone,
        [["error connecting to"], ["connection timed out", "host is unreachable"],
         ["gloo", "uv/pair"]],
        not [], ex_none),
    // gloo's ibverbs transport (`transport/ibverbs/`): no RDMA device for the process ("No
    // ibverbs devices present", "Unable to find device named: mlx5_3", "ibv_query_port: No
    // such device"), and transfers that completed with an error status (`pair.cc`'s
    // handleCompletion: "Recv for slot 3: Work Request Flushed Error", "Memory region recv
    // for slot 2: remote access error", "... RNR retry counter exceeded").
    rule!("gloo_ibverbs_failure", Infiniband, Cause, Standalone,
        [["ibverbs"],
         ["no ibverbs devices present", "unable to find device named", "ibv_query_port",
          " for slot "]],
        not [], ex_none),
    // Its waits that gave up (`buffer.cc`: "Send timeout [peer]", like TCP's "Write timeout";
    // `pair.cc`: "Timeout waiting for memory region from [peer]": the peer had not reached the
    // matching receive).
    rule!("gloo_ibverbs_timeout", CollectiveTimeout, Symptom, Standalone,
        [["ibverbs"], ["send timeout", "timeout waiting for memory region from"]], not [],
        ex_none),
    // NCCL's verbs wrapper (`misc/ibvwrap.cc`): "Call to ibv_poll_cq() returned -1", "Call to
    // ibv_reg_mr failed with error Cannot allocate memory".
    rule!("ib_verbs", Infiniband, Cause, Standalone,
        [["call to ibv_", "ibv_reg_mr", "ibv_create_", "ibv_modify_qp", "ibv_poll_cq", "ibv_post_",
          "ibv_open_device", "ibv_get_device"], ["fail", "error", ") returned -"]],
        not [], ex_none),
    // NCCLX's CTRAN transport over InfiniBand (torchcomms' `comms/ctran/backends/ib/CtranIb.cc`:
    // "CTRAN ERROR CTRAN-IB: buffer registration failed: buf = ..., dmaBufSupport = true, ...",
    // its error propagation "CTRAN ERROR .../CtranIb.cc:796 -> 524"): the IB backend refused a
    // buffer or a connection (a GPU and NIC in different NUMA domains for DMA-BUF, the NIC's
    // memory registration limits).
    rule!("ctran_ib_failure", Infiniband, Cause, Standalone,
        [["ctran-ib:", "ctranib.cc"], ["fail", "error"]],
        not [], ex_none),
    // `net_ib.cc`: "NET/IB : Got completion from peer %s with error %d, opcode %d, len
    // %d, vendor err %d" (later "with status=%d opcode=%d", and since `net_ib/p2p.cc`
    // "with status=%s(%d) opcode=%s(%d)", the status's verbs name first): the verbs
    // work-completion status. Status 4, IBV_WC_LOC_PROT_ERR, is the NIC refused access to the
    // local buffer: with GPU Direct RDMA that buffer is GPU memory, and PCIe ACS or an IOMMU
    // between NIC and GPU blocks the peer-to-peer access (NCCL's troubleshooting guide, "PCI
    // Access Control Services"). The verbs name alone is enough: a paste that wraps NCCL's long
    // line leaves "NET/IB" on the line before it.
    rule!("ib_local_protection", P2pHang, Cause, Standalone,
        [["net/ib", "ibv_wc_loc_prot_err"],
         ["with error 4,", "with error 4 ", "with status=4 ", "status=ibv_wc_loc_prot_err"]],
        not [], ex_ib_local_protection),
    // NCCL `misc/socket.cc`: "socketFinalizeAccept: wrong type %d != %d": a connection of
    // another kind than expected arrived (`ncclSocketType`: 3 NetSocket, 4 NetIb): one
    // node's ranks use InfiniBand and the other's plain sockets.
    // NCCL 2.27 to 2.30.4 name the peer before the colon ("socketFinalizeAccept from
    // 10.0.0.7<43122>: wrong type 3 != 4"); 2.30.7 prints it as INFO and goes on ("wrong
    // socket type (peer 2 != expected 4 -- peer connected to wrong NCCL socket), discarding
    // peer connection").
    rule!(
        "socket_type_mismatch",
        Infiniband,
        Cause,
        Standalone,
        [["socketfinalizeaccept"], [": wrong type"]],
        not["discarding peer connection"],
        ex_socket_type
    ),
    // NCCL's IB transport (`transport/net_ib*.cc`, `net_ib/*.cc`): a completion with an error
    // status (2.19 on: "with status=IBV_WC_RETRY_EXC_ERR(12) opcode=... vendor_err=129"), a
    // device it cannot open or query ("NET/IB : Unable to open device mlx5_0", "Unable to
    // query port_num 1"), ports of different link layers joined ("Attempted to connect
    // incompatible devices: [0]mlx5_0:1/IB and [2]mlx5_2:1/RoCE"), an async fatal event
    // ("communicator encountered a fatal error (detected in ncclIbTest)"), and nodes that see
    // different numbers of NICs (`transport/net.cc`: "Detected mixed local Net device counts
    // across ranks").
    // The kernel's word that a NIC failed under the job (dmesg, `journalctl -k`): NVIDIA
    // (Mellanox) ConnectX's mlx5 driver (`mlx5/core/events.c`: "Port module event[error]:
    // module 0, Cable error, High Temperature", "Port module event: module 0, Cable
    // unplugged"; `health.c`'s poll_health: "device's health compromised - reached miss count",
    // "Fatal error 1 detected") and AWS EFA's driver (`efa_com.c`: "The device didn't send any
    // completion for admin cmd REG_MR(7) ...", "Wait for completion (polling) timeout", "Admin
    // queue is closed"). Medium (INDIRECT_RULES): a kernel log's line may predate the job.
    rule!(RULE_NIC_KERNEL_FAULT, Infiniband, Cause, Standalone,
        [["mlx5_core", "mlx5_port_module_event", "infiniband efa_"],
         ["port module event[error]", "cable unplugged", "device's health compromised",
          "fatal error", "didn't send any completion for admin cmd",
          "wait for completion (polling) timeout", "admin queue is closed"]],
        not [], ex_nic_kernel_fault),
    rule!("ib_transport", Infiniband, Cause, Standalone,
        [["net/ib", "vendor err", "ibext", "/roce"],
         ["with error", "vendor err", "async event", "async fatal event", "gid table changed",
          "catastrophic", "failed", "error",
          "with status=", "vendor_err", "unable to open device", "unable to query",
          "incompatible", "unsupported completion status"]],
        // Lines of NCCL's IB transport that report carrying on (`net_ib/common.cc`'s non-fatal
        // async events, "Got non-fatal async event: port active(9)"; `p2p_resiliency.cc`'s
        // "The error is not fatal. Trying to continue..."; `init.cc`'s "Failed to open mlx5dv
        // symbols. Advance features like CX-8 Direct-NIC will be disabled.").
        // NCCL 2.7 to 2.18 (`net_ib.cc`) logged every async event but COMM_EST at WARN and
        // went on ("NET/IB : Got async event : port active", "GID table change", "client
        // reregistration", "SM change"); fatal ones ("local catastrophic error", "port error")
        // stay. Its collective mismatch ("NET/IB : collective mismatch error, local size N
        // remote size M") is the ranks' disagreement, read by `collective_mismatch`.
        not ["got non-fatal async event: port active", "the error is not fatal",
             "failed to open mlx5dv symbols", "got async event : port active",
             "got async event : gid table change", "got async event : client reregistration",
             "got async event : sm change", "got async event : lid change",
             "got async event : pkey change", "collective mismatch error"], ex_none),
    // NCCL's choice of network (`net.cc`, `ncclNetInit`): `NCCL_NET` names a network (`IB`, a
    // plugin's such as `AWS Libfabric`) that is not among those that loaded and found a device
    // on this host: "Error: network IB not found.", then ncclInvalidUsage. The RDMA network
    // the job was told to use is not there (no HCA, no driver in the container, the plugin
    // missing), as with the IB transport's own errors.
    rule!("nccl_net_not_found", Infiniband, Cause, Standalone,
        [["nccl"], ["error: network "], [" not found"]], not [], ex_nccl_net_not_found),
    // NCCL's `plugin/net.cc` when no network initialised: "Failed to initialize any NET
    // plugin", then ncclInvalidUsage. NCCL's own socket network always loads where a socket
    // interface exists, so the networks tried were only those NCCL_NET or NCCL_NET_PLUGIN
    // forced (an image's or a module's environment: `IB`, `gIB`, `AWS Libfabric`), and that
    // one did not load here: its library not on the loader's path or built for another NCCL,
    // `libibverbs` or `/dev/infiniband` missing in the container, no HCA on this host. What
    // users' notes record for it, each with that fix.
    rule!(RULE_NCCL_NET_PLUGIN_FAILED, Infiniband, Cause, Standalone,
        [["failed to initialize any net plugin"]], not [], ex_none),
    // UCX's and Open MPI's words for the RDMA network failing (`uct/ib/mlx5/ib_mlx5_log.c`:
    // "Transport retry count exceeded on mlx5_0:1/IB", "Receive-no-ready retry count exceeded",
    // "Remote access error", "Local QP operation error"; `ib_device.c`: "IB Async event on
    // mlx5_0: local catastrophic error"; `ib_iface.c`: "failed to create RC QP ... Please set
    // max locked memory (ulimit -l)"; verbs calls `ibv_alloc_pd`, `ibv_query_gid`,
    // `ibv_reg_dmabuf_mr` failing; "Couldn't enable GPUDirect RDMA"; Open MPI's openib BTL:
    // "A process failed to create a queue pair", "The InfiniBand retry count between two MPI
    // processes has been exceeded", "The OpenFabrics stack has reported a network error
    // event", "failed to initialize while trying to allocate some locked memory").
    rule!("ucx_openib_rdma", Infiniband, Cause, Standalone,
        [["transport retry count exceeded", "transport retry counter exceeded",
          "receive-no-ready retry count exceeded", "ib async event", "failed to create rc qp",
          "ibv_alloc_pd", "ibv_query_gid", "ibv_reg_dmabuf_mr", "couldn't enable gpudirect rdma",
          "failed to create a queue pair", "retry count between two mpi processes",
          "openfabrics stack has reported a network error event",
          "while trying to allocate some locked memory"]],
        not [], ex_none),
    rule!("ucx_rdma_completion", Infiniband, Cause, Standalone,
        [["ucx "], ["remote access error", "local qp operation error", "local protection error",
                    "unhandled timeout error", "failed to register address"]],
        not [], ex_none),
    rule!("ib_fatal_or_nic_counts", Infiniband, Cause, Standalone,
        [["(detected in ncclibtest)", "detected mixed local net device counts"]],
        not [], ex_none),
    // AWS EFA through the aws-ofi-nccl plugin (its `NET/OFI` lines): a request or an RDMA write
    // completed with an error, a libfabric call failed ("Couldn't create domain. RC: -12",
    // "Unable to retrieve completion queue entries", "Error posting rx buffer"), fewer devices
    // or rails than the peers have. The RDMA network, as with InfiniBand.
    // aws-ofi-nccl's libfabric calls that the provider does not implement ("Couldn't
    // register memory region with regattr. RC: -38, ERROR: Function not implemented";
    // -FI_ENOSYS, and -FI_EOPNOTSUPP "Operation not supported"): the plugin's protocol or
    // version asks for a feature this provider (its version, the NIC's driver) lacks. An
    // unsupported combination, not a failing network: OFI_NCCL_PROTOCOL, or the plugin
    // and libfabric versions matched to the provider.
    rule!("ofi_call_not_supported", NcclInternalOrUnsupported, Cause, Standalone,
        [["net/ofi"], ["function not implemented", "rc: -38", "operation not supported",
                       "rc: -95"]],
        not [], ex_ofi_call_not_supported),
    // Its `fi_mr_regattr` failing for a GPU buffer (`register_mr_buffers`: "Unable to
    // register memory (type = %d) for device %d. RC: %d, Error: %s"; type 2 is NCCL_PTR_CUDA)
    // with -FI_EINVAL: the provider does not accept the GPU memory NCCL hands it, a version
    // combination, not a failing network. AWS's maintainers name NCCL 2.19 and later (its
    // buffers from cuMem) against the libfabric of EFA installers before 1.29 (aws-ofi-nccl
    // #584). Medium (INDIRECT_RULES in correlate.rs): EINVAL is a generic answer.
    rule!(RULE_OFI_GPU_BUFFER_REFUSED, NcclInternalOrUnsupported, Cause, Standalone,
        [["net/ofi"], ["unable to register memory (type = 2)"], ["rc: -22"]],
        not [], ex_ofi_gpu_buffer_refused),
    // Its wrapper's words after any failed registration ("Unable to register memory (type =
    // 2) for device 19"): the reason is the line before it (the libfabric call's RC), so it
    // joins that finding when there is one.
    rule!("ofi_register_memory", Infiniband, Cause, AnyFinding,
        [["net/ofi"], ["unable to register memory"]], not [], ex_none),
    // libfabric's CXI provider (HPE Slingshot, under aws-ofi-nccl): "cxip_cq_eq_progress():531
    // <warn> host-a: Cassini Event Queue overflow detected." The NIC's event queue filled
    // faster than it was drained; ALCF's Polaris guide gives it with a larger
    // FI_CXI_DEFAULT_CQ_SIZE as the fix.
    rule!("cxi_event_queue_overflow", Infiniband, Cause, Standalone,
        [["cassini event queue overflow"]], not [], ex_none),
    // aws-ofi-nccl's own settings rejected (`nccl_ofi_param_impl.h`: "WARNING: OFI_NCCL_PROTOCOL
    // set to invalid value RMDA"; `nccl_ofi_rdma.cpp`: "Conflicted configuration of
    // EARLY_COMPLETION and EAGER_MAX_SIZE", "Failed configuration of EARLY_COMPLETION due to
    // provider data progress model ...", both -ENOTSUP; `platform-aws.cpp`'s "Unable to
    // configure NVLS option", when it cannot read NCCL's version); NCCL's IB settings
    // (`net_ib/connect.cc`: "OOO RQ is force enabled but ...", ncclInternalError;
    // "NCCL_IB_SUBNET_PREFIX_LEN=40 is out of range [1,32]", ncclInvalidArgument).
    rule!("net_plugin_setting_rejected", NcclInternalOrUnsupported, Cause, Standalone,
        [["net/ofi", "ofi_nccl_", "net/ib", "nccl_ib_"],
         ["set to invalid value", "conflicted configuration of", "failed configuration of",
          "unable to configure nvls option", "ooo rq is force enabled but", "is out of range ["]],
        not [], ex_none),
    // Google's gIB network plugin's guest config checker (its "shim" layer) ending the workload
    // over a setting ("NCCL WARN NCCL/NET (shim) mismatch enforced: NCCL_P2P_NVL_CHUNKSIZE =
    // 524288 (expected 262144)"); its "mismatch recommended" lets the job go on.
    rule!("gib_setting_enforced", NcclInternalOrUnsupported, Cause, Standalone,
        [["(shim) mismatch enforced"]], not [], ex_none),
    // AWS Neuron's collectives library (CCOM, on Trainium/Inferentia) over the same plugin:
    // "CCOM WARN Unable to run multi-instance workload.  Ofi plugin is not installed or EFA is
    // not enabled" ends a multi-node job; "OFI plugin initNet() failed is EFA enabled?" comes
    // before it, and in single-instance runs that never use EFA too (the Neuron SDK's
    // troubleshooting guide, "EFA is not enabled in trn1.32xlarge": the instances launched
    // without EFA; lspci shows the EFA devices). Medium alone (INDIRECT_RULES in correlate.rs).
    rule!("neuron_multi_instance_without_efa", Infiniband, Cause, Standalone,
        [["unable to run multi-instance workload"]], not [], ex_none),
    rule!(RULE_NEURON_OFI_INIT_FAILED, Infiniband, Cause, Standalone,
        [["ofi plugin initnet() failed is efa enabled"]], not [], ex_none),
    // aws-ofi-nccl with GPUDirect RDMA required on the instance type but unavailable
    // (`platform-aws.cpp`: "GDR disabled on GDR-supported instance type p4d.24xlarge", then
    // -EINVAL): the EFA path cannot start.
    rule!("ofi_transport", Infiniband, Cause, Standalone,
        [["net/ofi"],
         ["completed with error", "couldn't ", "unable to ", "error posting", " failed", "fatal",
          "insufficient libfabric devices", "unexpected number of remote rails",
          "requires at least libfabric", "gdr disabled on gdr-supported instance"]],
        // The CUDA driver's errors the plugin passes on ("cuMemcpyHtoDAsync failed: an illegal
        // memory access was encountered", `nccl_ofi_cuda.cpp`) are CUDA's, read as such by the
        // rules below; an INFO retry ("cuMemGetHandleForAddressRange failed with flags: 1,
        // retrying with no flags") and GDRCopy's optional handle ("Failed to open gdr handle",
        // used by GIN only) are no failure.
        not ["net/ofi cumem", "net/ofi cuctx", "net/ofi custream", "net/ofi cudevice",
             "net/ofi cuinit", "net/ofi cupointer", "retrying with no flags",
             "failed to open gdr handle"],
        ex_none),
    // DDP's check of the model when it wraps it (`reducer.cpp`'s
    // `verify_params_across_processes`): "DDP expects same model across all ranks, but Rank 0
    // has 150 params, while rank 1 has inconsistent 149 params."; "[1]: params[0] in this
    // process with sizes [96, 32] appears not to match sizes of the same param in process 0."
    // and the same for strides; DDP before 1.10 said "replicas[0][3] in this process with
    // sizes ...". The ranks built different models: the mismatch is in the model, not in a
    // collective call.
    rule!("ddp_model_differs", CollectiveMismatch, Cause, Standalone,
        [["ddp expects same model across all ranks",
          "appears not to match sizes of the same param",
          "appears not to match strides of the same param"]],
        not [], ex_model_differs),
    // Horovod's coordinator comparing the ranks' requests (`common/controller.cc`):
    // "Mismatched data types: One rank had type float32, but another rank had type float16.",
    // "Mismatched ALLREDUCE tensor shapes: One rank sent a tensor of shape [4], but another
    // rank sent a tensor of shape [5].", roots, reduction operations, devices.
    rule!("horovod_mismatch", CollectiveMismatch, Cause, Standalone,
        [["mismatched "], ["but another rank"]], not [], ex_none),
    // Horovod's stall inspector (`common/stall_inspector.cc`): "One or more tensors were
    // submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for
    // remainder of ranks for more than 60 seconds. ... Missing ranks: ...". Medium
    // (INDIRECT_RULES): behind, on another path or dead, not said.
    rule!(RULE_HOROVOD_STALL, CollectiveTimeout, Cause, Standalone,
        [["by subset of ranks and are waiting for remainder of ranks"]], not [], ex_none),
    rule!("collective_mismatch", CollectiveMismatch, Cause, Standalone,
        [[// NCCL `enqueue.cc`/`init.cc` (a device-side check, 2.4 and later): "Mismatched
          // collective detected, please check your collective calls at and around rank %d."
          "mismatched collective detected",
          "mismatch between collectives", "collective mismatch at seq",
          "error when verifying shape tensors",
          // gloo `transport/tcp/pair.cc`: "Received data size doesn't match expected size.
          // Is there a distributed collective mismatch in your code?"
          "is there a distributed collective mismatch", "doesn't match expected size",
          // gloo `transport/tcp/pair.cc`: "op.preamble.length <= op.nbytes. 8 vs 4" (a
          // peer sent more than this rank expects); `ProcessGroupWrapper`'s detail:
          // "Collectives differ in the following aspects".
          "op.preamble.length <= op.nbytes", "collectives differ in the following",
          // Its registered-buffer twin (`pair.cc`, "Bytes read must be in bounds for target
          // buffer"): "op.preamble.roffset + op.preamble.length <= op.buf->size_. 8192 vs 4096".
          "op.preamble.roffset + op.preamble.length <= op.buf->size_",
          // NCCL's network transports receiving another size than posted: `net_socket.cc`
          // "NET/Socket : peer %s message truncated : receiving %d bytes instead of %d. If you
          // believe your socket network is in healthy state, there may be a mismatch in
          // collective sizes or environment settings (e.g. NCCL_PROTO, NCCL_ALGO) between
          // ranks"; `net_ib.cc` "NET/IB : collective mismatch error, local size %d remote size %d".
          "message truncated : receiving", "collective mismatch error",
          // accelerate's `utils/operations.py` (`verify_operation`, debug mode): "Cannot apply
          // desired operation due to shape mismatches. All shapes across devices must be valid."
          // followed by each process's input shape.
          "due to shape mismatches. all shapes across devices",
          // (Not its exception's class alone, DistributedOperationException: accelerate raises
          // it too for tensors on another device, and to rewrap any error of an operation,
          // "Error found while calling `accelerate.utils.operations.reduce`. Please see the
          // earlier error for more details.")
          // PyTorch's flight-recorder analyzer (`torchfrtrace`, `flight_recorder/components/
          // utils.py`'s error_analysis): "Input/output mismatch in the collective sequence
          // number: N", and the MatchState names it prints for "Collective sequence number: N
          // has errors" ("Error type: COLLECTIVE_TYPE_MISMATCH"). COLLECTIVE_STATE_MISMATCH (one
          // rank finished, another did not start) is a rank behind, not different calls.
          "input/output mismatch in the collective", "collective_type_mismatch",
          "size_or_syntax_mismatch", "collective_dtype_mismatch"]],
        not [], ex_mismatch),
    // PyTorch Lightning replaces the reducer's "Expected to have finished reduction" with its
    // own words (`strategies/ddp.py`, tested by its `test_find_unused_parameters_ddp_*`): "It
    // looks like your LightningModule has parameters that were not used in producing the loss
    // returned by training_step. If this is intentional, you must enable the detection of
    // unused parameters in DDP, ...".
    rule!("unused_parameters", UnusedParameters, Cause, Standalone,
        [["expected to have finished reduction in the prior iteration", "did not receive grad",
          "did not receive a gradient", "your training graph has changed in this iteration",
          "has parameters that were not used in producing the loss",
          // DeepSpeed ZeRO with CPU offload (`zero/stage_1_and_2.py`,
          // `complete_grad_norm_calculation_for_cpu_offload`: `assert
          // self.ignore_unused_parameters, """This assert indicates that your module has
          // parameters that were not used in producing loss. You can avoid this assert by (1)
          // enable ignore_unused_parameters option in zero_optimization config; ..."""`): a
          // parameter whose gradient hook never ran. The assert's text is wrapped over lines;
          // its remedy's line is DeepSpeed's alone.
          "enable ignore_unused_parameters option"]],
        not [], ex_unused),
    // The reducer's bookkeeping the other way (`reducer.cpp`, `mark_variable_ready`): "Expected
    // to mark a variable ready only once. This error is caused by one of the following
    // reasons: 1) Use of a module parameter outside the `forward` function. ... 2) Reused
    // parameters in multiple reentrant backward passes. ...", with TORCH_DISTRIBUTED_DEBUG or
    // PyTorch 2.x "Parameter at index 1 with name l.bias has been marked as ready twice."
    // Megatron-LM's DDP with overlap_grad_reduce (`param_and_grad_buffer.py`,
    // `finish_grad_sync`): "Communication call has not been issued for this bucket (37/40 params
    // have grad available)". After the first batch a bucket's reduction starts only when each
    // of its parameters has had as many gradients as in the first batch; fewer than all (37 of
    // 40) means some parameters got no gradient this iteration (Megatron-LM#1150: parameters
    // that require gradients but were not used in the forward pass).
    rule!(RULE_MEGATRON_BUCKET_NOT_ISSUED, UnusedParameters, Cause, Standalone,
        [["communication call has not been issued for this bucket"]], not [],
        ex_megatron_bucket_not_issued),
    // DeepSpeed ZeRO's version (`zero/stage_1_and_2.py`, `reduce_independent_p_g_buckets_and_
    // remove_grads`): "The parameter 17 has already been reduced. Gradient computed twice for
    // this partition. Multiple gradient reductions are currently not supported".
    rule!(PARAMETER_READY_TWICE_RULE, UnusedParameters, Cause, Standalone,
        [["mark a variable ready only once", "has been marked as ready twice",
          "gradient computed twice for this partition"]],
        not [], ex_ready_twice),
    // accelerate's `join_uneven_inputs` outside multi-GPU training (accelerate 1.x,
    // `accelerator.py`): "Joining uneven inputs is only supported for multi-GPU training, as a
    // result `join_uneven_inputs` will have no effect." No failure of its own: it only tells
    // an uneven-inputs finding that the program's Join did nothing ([`RULE_ACCELERATE_JOIN_
    // NO_EFFECT`], taken out before grouping).
    rule!(RULE_ACCELERATE_JOIN_NO_EFFECT, UnevenInputs, Symptom, Standalone,
        [["joining uneven inputs is only supported for multi-gpu training"]], not [], ex_none),
    // DDP's `Join` context manager with `throw_on_early_termination=True` (torch 2.13's
    // `torch/distributed/algorithms/join.py`): the rank out of batches raises "Rank 1 exhausted
    // all inputs." (`_notify_procs_to_terminate`), the others, in their next forward, "Detected
    // at least one rank that exhausted inputs. Throwing across all ranks."
    // (`notify_join_context`): a consequence, whose rank is not the one out of batches.
    rule!(
        RULE_JOIN_EXHAUSTED,
        UnevenInputs,
        Cause,
        Standalone,
        [["exhausted all inputs"], ["rank "]],
        not["detected at least one rank"],
        ex_ranks
    ),
    rule!(RULE_JOIN_THROWN, UnevenInputs, Consequence, Standalone,
        [["detected at least one rank that exhausted inputs"]], not [], ex_none),
    // The `Join` context manager also warns, once, when a rank has shadowed more than 1000 of
    // the others' collectives after its own inputs ran out (`torch/distributed/algorithms/
    // join.py`: "Detected uneven input skew of greater than 1000. This means that rank 1 has
    // at least 1000 fewer inputs than other currently-active ranks.").
    // (accelerate's warning that `join_uneven_inputs` has no effect off multi-GPU training,
    // "Joining uneven inputs is only supported for multi-GPU training", names no failure.)
    rule!(
        "uneven_inputs",
        UnevenInputs,
        Cause,
        Standalone,
        [[
            "exhausted inputs",
            "exhausted all inputs",
            "uneven inputs",
            "uneven input skew"
        ]],
        // Lightning warns on every multi-device validation or test with a DistributedSampler
        // (`trainer/connectors/data_connector.py`: "... it is recommended to use
        // `Trainer(devices=1, num_nodes=1)` to ensure each sample/batch gets evaluated exactly
        // once. Otherwise, multi-device settings use `DistributedSampler` that replicates some
        // samples to make sure all devices have same batch size in case of uneven inputs.").
        // (accelerate 0.15's version check in `join_uneven_inputs`: "Joining uneven inputs
        // requires PyTorch >= 1.10.0, You have 1.9.1", before any batch.)
        not["joining uneven inputs is only supported", "in case of uneven inputs",
            "joining uneven inputs requires pytorch"],
        ex_ranks
    ),
    // fairseq's `all_gather_list` (also copied into DPR and other projects): "Unable to
    // unpickle data from other workers. all_gather_list requires all workers to enter the
    // function together, so this error usually indicates that the workers have fallen out of
    // sync somehow. Workers can fall out of sync if one of them runs out of memory, or if there
    // are other conditions in your training script that can cause one worker to finish an
    // epoch while other workers are still iterating over their portions of the data."
    rule!("workers_out_of_sync", UnevenInputs, Cause, Standalone,
        [["workers have fallen out of sync", "requires all workers to enter the function together"]],
        not [], ex_workers_out_of_sync),
    // Composer's trainer at the end of `fit` on a rank whose dataloader gave it nothing
    // (`composer/trainer/trainer.py`: "No batches were trained for global rank 7. This may be
    // due to an issue with the train dataset, dataloader, or sampler. This may cause other
    // issues or crashes down the line."): that rank left the loop while the others may still
    // be in theirs, waiting for its collectives.
    // Lightning's check of each rank's dataloader (`pytorch/utilities/data.py`,
    // `has_len_all_ranks`: "`DataLoader` within local rank has zero length. Please make sure
    // that it returns at least 1 batch.", an error or a warning), raised only when the other
    // ranks' loaders are not empty: this rank has no batches while the others do.
    rule!(RULE_NO_BATCHES_ON_RANK, UnevenInputs, Cause, Standalone,
        // (The warning where zero-length loaders are allowed: "Total length of `DataLoader`
        // across ranks is zero, but local rank has zero length. Please be cautious of uneven
        // batch length.")
        [["no batches were trained for global rank", "within local rank has zero length",
          "but local rank has zero length"]],
        not [], ex_ranks),
    // Composer's checkpoint loading (`composer/utils/checkpoint.py`): each rank logs its own
    // download's failure ("Exception <class 'OSError'> raised during downloading: [Errno 28] No
    // space left on device"), then every rank raises the gathered verdict, "RuntimeError:
    // ('Ranks [5, 12] failed to download.', 'To see the full error please look at the logs for
    // that rank, which are logged via log.error.')": the ranks named failed, not the rank whose
    // log says so.
    // (The verdict first: read before the rank's own line, the two joined as one hard-wrapped
    // line would read as that line's rule with a longer detail.)
    rule!("composer_ranks_failed_to_download", RankCrashed, Cause, Standalone,
        [["failed to download."], ["ranks ["]], not [], ex_composer_ranks_failed),
    rule!("composer_download_failed", RankCrashed, Cause, Standalone,
        [["raised during downloading: "], ["exception <class '"]], not [], ex_composer_download),
    // `distributed_c10d.py`'s `_store_based_barrier`: "Timed out initializing process group
    // in store based barrier on rank: 0, for key: store_based_barrier_key:1 (world_size=8,
    // worker_count=1, timeout=0:30:00)" (later `num_workers_joined=`).
    rule!("store_based_barrier", RendezvousTimeout, Symptom, Standalone,
        [["store based barrier", "store_based_barrier"], ["timed out"]], not [], ex_store_barrier),
    // The same barrier's progress line while it waits, every 10 s or so: "Waiting in store
    // based barrier to initialize process group for rank: 2, key: store_based_barrier_key:2
    // (world_size=8, worker_count=7, timeout=0:30:00)" (later `num_workers_joined=`): a rank
    // that never reached `init_process_group` / `new_group`.
    rule!("store_based_barrier_wait", RendezvousTimeout, Symptom, Standalone,
        [["waiting in store based barrier"]], not [], ex_store_barrier),
    // torchelastic's `RendezvousClosedError`: an agent found the job's rendezvous closed, which
    // an agent does when it stops (`dynamic_rendezvous.py`'s shutdown: its workers failed past
    // the restarts, or it was interrupted) or when the job finished: another node's doing.
    // (etcd's rendezvous logs the same before it raises: "Rendezvous for run_id=job-4711 was
    // observed to be closed".)
    rule!("rendezvous_closed", RankCrashed, Consequence, Standalone,
        [["rendezvousclosederror", "was observed to be closed"]], not [], ex_rendezvous_closed),
    // TCPStore's `waitForWorkers` ("Timed out after N seconds waiting for clients. X/Y clients
    // joined."): its second sentence alone too, where a paste cut the line before it.
    rule!("rendezvous", RendezvousTimeout, Symptom, Standalone,
        [["waiting for clients", "rendezvoustimeouterror", "rendezvous timed out", "never arrived at",
          " clients joined.",
          // Horovod's runner waiting for its tasks or elastic slots (`runner/launch.py`,
          // `elastic/driver.py`): "Timed out waiting for tasks to start.", "Timed out waiting
          // for minimum number of slots to become available".
          "timed out waiting for tasks to", "timed out waiting for minimum number of slots",
          // torchelastic: `_check_full_rank`'s barrier on the agents' store
          // (`elastic/utils/distributed.py`: "timed out waiting for all 8 members to join"),
          // the etcd rendezvous' store and handler (`etcd_store.py`: "Timeout while waiting for
          // keys in EtcdStore"; `etcd_rendezvous.py`: "Rendezvous timeout occurred in
          // EtcdRendezvousHandler").
          "members to join", "timeout while waiting for keys in etcdstore",
          // FileStore's (`FileStore.cpp`): "Timeout waiting for key: 0" from get, "Wait
          // timeout" from wait: the key the other ranks should have written never came.
          "timeout waiting for key: ", "runtimeerror: wait timeout",
          "rendezvous timeout occurred in"]],
        not [], ex_rendezvous),
    // `ProcessGroupNCCL.cpp`'s broadcastUniqueNCCLID: "[%d] is setting up NCCL communicator and
    // retrieving ncclUniqueId from [0] via c10d key-value store by key '%s', but store->get('%s')
    // got error: ..." (after "This may indicate a possible application crash on rank 0 or a
    // network set up issue."). The communicator is created at a group's first collective (at
    // init_process_group only with `device_id`): the store works, rank 0 has not published its
    // id because it has not reached that collective: still busy before it, or dead.
    // The same wait ending because the store went away (PyTorch: "... but store->get('0') got
    // error: Connection reset by peer", "Broken pipe", "Connection refused"): the store lives in
    // rank 0's process (torchrun's agent's, under torchrun), so rank 0 or its node is gone.
    rule!("nccl_unique_id_store_gone", RankCrashed, Consequence, Standalone,
        // (PyTorch 1.10 to 1.13 spell it "retreiving".)
        [["retrieving nccluniqueid", "retreiving nccluniqueid"],
         ["connection reset by peer", "broken pipe", "connection refused", "connection closed",
          // TCPStore's words for the same (`TCPStore.cpp`): "Failed to recv, got 0 bytes.
          // Connection was likely closed. Did the remote server shutdown or crash?"
          "failed to recv, got 0 bytes", "connection was likely closed"]],
        not [], ex_unique_id_store_gone),
    rule!("nccl_unique_id_wait", CollectiveTimeout, Symptom, Standalone,
        [["retrieving nccluniqueid", "retreiving nccluniqueid"]], not [], ex_unique_id_wait),
    // transformers' `TrainingArguments.main_process_first` and accelerate's
    // `Accelerator.main_process_first`: the other ranks wait in a barrier on entry while the main
    // process runs the block (dataset map/tokenization), then it joins on exit. A traceback of
    // the waiting side goes through it; a block longer than the group's timeout (30 min by
    // default) times the barrier out.
    rule!("main_process_first_wait", CollectiveTimeout, Symptom, Standalone,
        [["main_process_first("]], not [], ex_main_process_first),
    // c10d's TCPStore client (`TCPStore.cpp`'s doWait, `Utils.hpp`'s recvBytes) before
    // DistStoreError existed: "RuntimeError: Socket Timeout", then "Exception raised from doWait
    // at .../TCPStore.cpp". A `wait`/`get` on the store found no key within the store's timeout:
    // a rank waited for one that never set it. During set-up that is the rendezvous; after the
    // training ran, `correlate.rs` makes it a collective's wait.
    // Later versions log the wait that timed out first (`Utils.hpp`'s waitForInput: "[c10d]
    // waitForInput: socket SocketImpl(fd=12, addr=[host-b]:51234, remote=[host-a]:29500) timed
    // out after 300000ms").
    rule!(
        "store_socket_timeout",
        RendezvousTimeout,
        Symptom,
        Standalone,
        // (torch_npu, PyTorch on Ascend, wraps it: "RuntimeError: The inner error: Socket
        // Timeout".)
        [["runtimeerror: socket timeout", "inner error: socket timeout", "waitforinput: socket",
          // Later releases: "[c10d] waitForInput: poll for socket SocketImpl(...) returned 0,
          // likely a timeout" (a poll that failed otherwise says "failed with res=").
          "waitforinput: poll for socket"]],
        not["returned operation_in_progress", "failed with res="],
        ex_none
    ),
    rule!("store_timeout", RendezvousTimeout, Symptom, Standalone,
        [["store"], ["timed out", "timeout"], ["never set", "diststoreerror", "socket timeout", "wait timeout"]],
        not [], ex_none),
    // trl's client of its vLLM server (`generation/vllm_client.py` check_server: "The vLLM
    // server can't be reached at http://0.0.0.0:8000 after 240.0 seconds. Make sure the server
    // is running by running `trl vllm-serve`."): the trainer's connection to the generation
    // server, refused until the timeout.
    rule!("trl_vllm_server_unreachable", ConnectionRefused, Symptom, Standalone,
        [["vllm server can't be reached at"]], not [], ex_trl_vllm_server),
    // The store's client (c10d `socket.cpp`) whose connect failed for want of a route ("The
    // client socket has failed to connect to [node-0]:29500 (errno: 113 - No route to host)",
    // errno 101 "Network is unreachable"): nothing refused it; MASTER_ADDR resolves to an
    // address this node does not reach (in the corpus: an admin network's name, a Kubernetes
    // service that does not route the port, a launcher's pick of the wrong interface), or a
    // firewall rejects the port (iptables' REJECT answers "No route to host"). Still the store
    // that could not be reached (its own title and fix), and a symptom like a refused
    // connect: the client retries, and a later line may say more.
    rule!(RULE_STORE_ADDRESS_UNREACHABLE, ConnectionRefused, Symptom, Standalone,
        [["failed to connect to", "could not connect to the store", "connect() timed out"],
         ["errno: 113", "errno: 101", "no route to host", "network is unreachable"]],
        not [], ex_store_unreachable),
    rule!(
        "connection_refused",
        ConnectionRefused,
        Symptom,
        Standalone,
        [[
            "connection refused",
            "econnrefused",
            "errno: 111",
            "os error 111",
            "could not connect to the store",
            "the client socket has timed out",
            // c10d's store client before the socket rewrite (PyTorch 1.x, `tcputils`):
            // "connect() timed out. Original timeout was 60000 ms."
            "connect() timed out",
            "failed to connect to",
            "connection to the c10d store has failed",
            "rendezvousconnectionerror",
            // c10d's store client resolving MASTER_ADDR: "host not found: <gai_strerror>".
            "host not found:"
        ]],
        // An HTTP(S) client's refusal (urllib3's "HTTPSConnectionPool(host='huggingface.co',
        // port=443): Max retries exceeded ... [Errno 111] Connection refused", botocore's
        // "AWSHTTPConnection ... Failed to establish a new connection"): a data or model host
        // refused, not the store or a peer rank; the exception is the rank's own failure.
        // CUDA's cudaErrorMpsConnectionFailed ("MPS client failed to connect to the MPS control
        // daemon or the MPS server"): the GPU's local MPS daemon, no network (`no_usable_gpu`).
        // A connect that failed for want of a route ("errno: 101 - Network is unreachable",
        // "errno: 113 - No route to host") found no listener to refuse it: `network_interface`.
        // c10d's client tries each address of the name in turn: "(errno: 99 - Cannot assign
        // requested address)" on one of them (::1 where IPv6 is off) is followed by the next.
        // huggingface_hub 1.0 on uses httpx, whose errors are bare errno strings
        // ("httpx.ConnectError: [Errno 111] Connection refused"; its retry warning "'[Errno
        // 111] Connection refused' thrown while requesting HEAD https://huggingface.co/...";
        // `snapshot_download`'s "LocalEntryNotFoundError: Got: ConnectError: ...").
        not["retrying", "httpsconnectionpool(", "httpconnectionpool(", "awshttpconnection",
            "mps client failed to connect", "network is unreachable", "no route to host",
            "errno: 99 - cannot assign requested address", "httpx.", "got: connecterror",
            "thrown while requesting"],
        ex_address
    ),
    // PyTorch's flight-recorder analyzer (`torchfrtrace`): "Not all ranks joining collective,
    // sequence number: N" (older: "... collective N at entry M", "... for group G"), then
    // "missing ranks: {1}" (older: "Missing ranks are {1}"). Only ranks whose dump it read count
    // as missing: they were alive to dump and never entered the collective the others entered,
    // stuck before it or having taken another path (a different collective, an early exit).
    // ProcessGroupNCCL's desync report (`TORCH_NCCL_DESYNC_DEBUG=1`; `TraceUtils.h`'s
    // analyzeLaggingRanks / analyzeMissingRanks): "[1] finished collective #2, but didn't join
    // collective #3 (count from 1)" and "ranks [2, 3] are the lagging ranks that caused this
    // timeout. They never joined any collectives". The ranks named are the ones waited for.
    rule!("desync_report_lagging", CollectiveTimeout, Cause, Standalone,
        [["but didn't join collective #", "are the lagging ranks that caused this timeout"]],
        not [], ex_desync_lagging),
    // Ray Train's `BroadcastCollectiveTimeoutError` (`train/v2/_internal/exceptions.py`): "The
    // collective operation timed out after 1800.00 seconds. The following ranks have not
    // joined the collective operation: [3]" (a worker that never called `ray.train.report`,
    // or is slow in its loop); its NCCL hang detector (`callbacks/nccl_ras.py`, every rank
    // RUNNING): "2 of 8 communicators have a collective mismatch and made no progress for 600
    // seconds". Medium (INDIRECT_RULES): behind, on another path or stuck, not said.
    rule!(RULE_RAY_TRAIN_COLLECTIVE_TIMEOUT, CollectiveTimeout, Cause, Standalone,
        [["have not joined the collective operation",
          "have a collective mismatch and made no progress"]],
        not [], ex_ray_train_collective),
    // The same report's other line: "[0, 1, 2, 3] joined but didn't finish collective #39
    // (count from 1)". The report lists the ranks at the lowest collective number it found;
    // a rank further on has joined that collective too. Without a "finished ..., but didn't
    // join" line beside it (the correlation checks), every rank entered the collective and it
    // did not finish: nobody is behind, the collective itself hangs.
    rule!(RULE_DESYNC_ALL_JOINED, CollectiveTimeout, Cause, Standalone,
        [["] joined but didn't finish collective #"]], not [], ex_desync_joined),
    rule!("fr_trace_missing_ranks", CollectiveTimeout, Cause, Standalone,
        [["missing ranks: {", "missing ranks are {"]], not [], ex_fr_missing_ranks),
    // `ProcessGroupNCCL.cpp`'s WorkNCCL::checkTimeout: "Watchdog caught collective operation
    // timeout: WorkNCCL(SeqNum=N, OpType=..., ...) ran for N milliseconds before timing out.",
    // also its second half alone, where a paste cut or wrapped the line before it.
    rule!("watchdog_timeout", CollectiveTimeout, Symptom, Standalone,
        [["watchdog caught collective operation timeout", "milliseconds before timing out"]],
        not [], ex_watchdog),
    // The same timeout where the caller waits itself (`TORCH_NCCL_BLOCKING_WAIT=1`, or
    // `work.wait(timeout)`): "[Rank 3] Work WorkNCCL(SeqNum=1842, OpType=ALLREDUCE, ...) timed
    // out in blocking wait", and the heartbeat monitor ending a rank after a timeout:
    // "Terminating the process after attempting to dump debug info, due to collective timeout
    // or exception." ("due to ProcessGroupNCCL watchdog hang" is the watchdog itself stuck in
    // a CUDA or NCCL call: `watchdog_context`, with the heartbeat monitor's other words).
    rule!(
        "blocking_wait_timeout",
        CollectiveTimeout,
        Symptom,
        Standalone,
        // PyTorch 1.x's blocking wait (`WorkNCCL::synchronizeInternal`): "Work WorkNCCL(...)
        // timed out in call to wait()", also as the reason the communicator was aborted.
        // PyTorch 1.10+'s health check of a new communicator (`runHealthCheck`: "ProcessGroupNCCL:
        // Health check failure: Failed to initialize NCCL communicator on rank 3"), raised when
        // the check timed out with no error: its creation hung.
        [[
            "timed out in blocking wait",
            "after attempting to dump debug info, due to",
            "timed out in call to wait()",
            "health check failure: failed to initialize nccl"
        ]],
        not["due to processgroupnccl watchdog hang"],
        ex_watchdog
    ),
    rule!("collective_timeout", CollectiveTimeout, Symptom, Standalone,
        [["timed out after"], [" seq "], ["still waiting for", "waiting for rank"]],
        not [], ex_collective_timeout),
    // `ProcessGroupGloo.cpp`'s monitoredBarrier, on rank 0, which waits for every other rank:
    // "[Rank 0]: Rank 1 failed to pass monitoredBarrier in 2000 ms" (or "Ranks 1, 3 ...", with
    // `wait_all_ranks`), and "Rank 0 timed out in monitoredBarrier after 1800000 ms.". The
    // ranks named before "failed" are the ones that did not arrive; rank 0 only waited.
    // The desync report's first line (`TraceUtils.h`'s retrieveDesyncReport, printed by a rank
    // whose watchdog timed out with TORCH_NCCL_DESYNC_DEBUG or TORCH_DISTRIBUTED_DEBUG=DETAIL):
    // " - [3] Timeout at collective: ALLREDUCE, #1234". The rank in brackets, the one that
    // printed it, timed out; the report's other lines name the ranks behind (the rules above).
    rule!("desync_report_timeout", CollectiveTimeout, Symptom, Standalone,
        [["] timeout at collective: "]], not [], ex_desync_report_timeout),
    rule!(MONITORED_BARRIER_RULE, CollectiveTimeout, Symptom, Standalone,
        [["failed to pass monitoredbarrier", "timed out in monitoredbarrier"]], not [],
        ex_monitored_barrier),
    // `TORCH_NCCL_PROPAGATE_ERROR`: "[PG ID 0 PG GUID 0(default_pg) Rank 3] remote error
    // detected from rank: 5": another rank of the group failed first and said so in the store.
    // ProcessGroupNCCL (2.3 on), on every rank when one rank's watchdog timed out and
    // signalled the others through the store: "Received a dump signal due to a collective
    // timeout from rank 3 and we will try our best to dump the debug info. Last enqueued NCCL
    // work: 42, last completed NCCL work: 41." (older: "... from this local rank"). The rank
    // named timed out; this one did not, yet.
    rule!(DUMP_SIGNAL_RULE, CollectiveTimeout, Symptom, Standalone,
        [["received a dump signal due to a collective timeout from"]], not [],
        ex_dump_signal_rank),
    // The same signal where the rank is not named: PyTorch 2.2 and 2.3's heartbeat monitor
    // ("Received a global timeout from another rank and will start to dump the debug info.",
    // then its exit, "ProcessGroupNCCL's watchdog detected a collective timeout and notified
    // current rank. ..."), and 2.4 on ("Observed flight recorder dump signal from another rank
    // via TCPStore.", before the line above; 2.5 on also signals a collective's error). Another
    // rank's watchdog found it; this rank only heard of it (a consequence: no rank to name).
    rule!(RULE_TIMEOUT_SIGNAL_FROM_ANOTHER_RANK, CollectiveTimeout, Consequence, Standalone,
        [["received a global timeout from another rank",
          "watchdog detected a collective timeout and notified current rank",
          "observed flight recorder dump signal from another rank"]],
        not [], ex_timeout_signal_from_another_rank),
    rule!("remote_error_from_rank", RankCrashed, Symptom, Standalone,
        [["remote error detected from rank:"]], not [], ex_remote_error_rank),
    // `ProcessGroupGloo.cpp`'s monitoredBarrier: "Rank 1 successfully reached
    // monitoredBarrier, but received errors while waiting for send/recv from rank 0.
    // Please check rank 0 logs for faulty rank." The rank named last failed.
    rule!("monitored_barrier_peer_error", RankCrashed, Symptom, Standalone,
        [["successfully reached monitoredbarrier, but received errors"]], not [],
        ex_monitored_barrier_peer),
    rule!("gloo_timeout", CollectiveTimeout, Symptom, Standalone,
        [["timed out waiting"], ["operation to complete"]], not [], ex_none),
    // gloo's `transport/tcp/pair.cc` in its synchronous mode (PyTorch's gloo before the
    // unbound buffers): "Read timeout [10.0.0.1]:32444" when a peer sent nothing within the
    // timeout, the pair's read of a collective.
    rule!("gloo_read_timeout", CollectiveTimeout, Symptom, Standalone,
        [["read timeout [", "write timeout ["]], not [], ex_none),
    // gloo's `transport/tcp/pair.h` waitUntilConnected: "Connect timeout [10.0.0.2]:61497": the
    // pair never connected to the address the peer advertised (unreachable from here: the
    // interface it picked, a firewall), or the peer never listened.
    rule!("gloo_connect_timeout", NetworkInterface, Cause, Standalone,
        [["connect timeout ["]], not [], ex_address),
    // gloo's `transport/tcp/unbound_buffer.cc` (waitRecv/waitSend): on a timeout it first
    // signals every pair of the context with "Application timeout caused pair closure", then
    // throws "Timed out waiting %dms for recv operation to complete". Either may reach the
    // log (the pairs' error often first, or alone): this rank's own collective timed out.
    rule!("gloo_pair_timeout", CollectiveTimeout, Symptom, Standalone,
        [["application timeout caused pair closure"]], not [], ex_none),
    // DeepEP, the expert-parallel all-to-all of MoE models (deepseek-ai/DeepEP): its CPU's
    // wait for the token counts the other ranks' kernels write, past NUM_CPU_TIMEOUT_SECS
    // (`csrc/deep_ep.cpp`: "DeepEP error: timeout (dispatch CPU)"), and its kernels' own
    // waits before they trap (`csrc/kernels/*.cu`: "DeepEP timeout for dispatch senders, rank
    // %d, responsible_channel = %d", also receivers, combine, barrier; the trap then surfaces
    // as CUDA's "unspecified launch failure"). The other ranks did not send in time: late (a
    // first-run JIT compile, a load) or their transport (NVSHMEM over RDMA) failing.
    // Later DeepEP names each wait ("DeepEP error: CPU recv timeout", "DeepEP timeout check
    // failed: rank = 2, ...", "DeepEP NVLink barrier timeout", "DeepEP notify timeout",
    // "DeepEP combine (scale-up wait) timeout", "DeepEP PP recv timeout"; its elastic buffer's
    // "Dispatch CPU wait exception (...buffer.hpp:1063): num_recv_tokens=-1, ...").
    rule!(
        "deepep_timeout",
        CollectiveTimeout,
        Symptom,
        Standalone,
        [
            ["deepep", "cpu wait exception"],
            ["timeout", "cpu wait exception"]
        ],
        not["initialized"],
        ex_none
    ),
    // DeepEP's check of the NCCL it loaded against the one it was built with
    // (`csrc/kernels/backend/nccl.cu`): "Prior to NCCL 2.31, NCCL compile-time and runtime
    // versions must be the same. Please re-compile DeepEP."
    rule!("deepep_nccl_build_differs", NcclVersionMismatch, Cause, Standalone,
        [["nccl compile-time and runtime versions must be the same"]], not [], ex_none),
    // DeepEP's check of CUDA driver calls (`exception.cuh`: "CUDA driver exception
    // (.../symmetric.hpp:240): 801 (CUDA_ERROR_NOT_SUPPORTED, operation not supported)"), as
    // its runtime calls' "CUDA runtime exception".
    rule!(
        "cuda_driver_exception",
        CudaError,
        Cause,
        Standalone,
        [["cuda driver exception ("]],
        not["out of memory"],
        ex_none
    ),
    // NVSHMEM's symmetric heap, GPU memory it reserves at start-up (`mem_heap.cpp`: "nvshmem
    // malloc failed (hint: check if total allocation has exceeded NVSHMEM symmetric size =
    // 1073741824, NVSHMEM symmetric size can be increased using NVSHMEM_SYMMETRIC_SIZE
    // environment variable)"): it exits the process.
    rule!("nvshmem_heap_full", CudaOom, Cause, Standalone,
        [["nvshmem malloc failed", "nvshmem symmetric size can be increased"]], not [],
        ex_nvshmem_heap),
    // NVSHMEM's RDMA transports failing: an error completion ("got completion with err:
    // syndrome=0x15, ...", "Got ibdevx completion with error"), a completion that never came
    // ("ibgda_poll_cq timeout"), memory the HCA would not register ("mem registration failed.
    // Reason: Bad address"). (Its "neither nv_peer_mem, or nvidia_peermem detected. Skipping
    // transport." only skips one transport; the failure, if any, comes after.)
    rule!("nvshmem_rdma_failure", Infiniband, Cause, Standalone,
        [["got completion with err", "completion with error. hws", "ibgda_poll_cq timeout",
          "mem registration failed. reason"]],
        not [], ex_none),
    // torchelastic's expiration timers (`elastic/timer`: "Reaping worker_pid=[4243]. Expired
    // timers: [...]", then "Successfully reaped worker=[4243] with signal=9"): a timer the
    // program armed (`expires(after=...)`) ran out and the timer server killed the worker with
    // SIGKILL: the rank's own block overran, no memory killer. The local timer server
    // (`timer/local_timer.py`, `api.py`'s TimerServer) says "Reaping worker_id=[4022]. Expired
    // timers: ['train_step']"; the file-based one, when asked to, ends the agent too
    // ("Terminating the server process=[4012] because of expired timers").
    rule!("elastic_timer_reaped", RankCrashed, Cause, Standalone,
        [["reaping worker_pid=", "reaping worker_id=", "because of expired timers",
          "successfully reaped worker="]],
        not [], ex_none),
    // ProcessGroupNCCL's hook loop (`runHookLoop`): a completion hook the program registered
    // raised, and PyTorch aborts every communicator with that as the reason ("Caught exception
    // on rank 3 while running onCompletion hook for ProcessGroupNCCL: TypeError: ...
    // Aborting all communicators."), which the collectives' errors and the watchdog's lines
    // then carry ("NCCL communicator was aborted on rank 3. Original reason for failure was:
    // ...", an "unhandled system error"): the rank's own program failed, no peer, no timeout.
    rule!("completion_hook_raised", RankCrashed, Cause, Standalone,
        [["while running oncompletion hook for processgroupnccl"]], not [], ex_completion_hook),
    // A wait that gave up: `C10D_CHECK_TIMEOUT` (`NCCLUtils.hpp`) when a non-blocking NCCL
    // call (an eager communicator's creation, a collective's launch) stays in progress past
    // TORCH_NCCL_NONBLOCKING_TIMEOUT ("NCCL timeout in: .../NCCLUtils.cpp:280"), and
    // `Work::wait(timeout)` (`Work.cpp`: "Operation timed out!").
    rule!("nccl_nonblocking_timeout", CollectiveTimeout, Symptom, Standalone,
        // PyTorch 2.3 to 2.5's NCCLComm::waitUntilInitialized (`NCCLUtils.cpp`, a non-blocking
        // communicator, TORCH_NCCL_USE_COMM_NONBLOCKING=1): "NCCL timeout in communicator
        // initialization.", its creation hung as the health check's above.
        [["nccl timeout in:", "runtimeerror: operation timed out!",
          "nccl timeout in communicator initialization"]], not [], ex_none),
    rule!(
        "watchdog_context",
        CollectiveTimeout,
        Symptom,
        AnyFinding,
        [[
            "watchdog got stuck",
            "due to processgroupnccl watchdog hang",
            "heartbeat monitor",
            // The heartbeat monitor's first wordings (PyTorch 2.2's development, late 2023):
            // "No PGNCCL's watchdog heartbeat detected, so we are dumping debug info.", "[Rank 1]
            // monitoring thread detects no heartbeat and will finally kill the process!" and its
            // exit, "[Rank 1] NCCL monitor thread timeout. Basically, this could be due to CUDA
            // or NCCL calls being unexpectedly blocking ...": the watchdog stuck, as later.
            "watchdog heartbeat detected",
            "detects no heartbeat",
            "nccl monitor thread timeout",
            "last enqueued nccl work",
            "last enqueued work",
            "some nccl operations have failed or timed out",
            "taking the entire process down",
            // XCCL's copy of the watchdog (torch-xpu-ops).
            "some xccl operations have failed or timed out"
        ]],
        // The watchdog's periodic INFO line (`Watchdog::runLoop`: "NCCL Work update
        // periodically: last enqueued NCCL work: 2000, last completed NCCL work: 2000.") says
        // only that it runs.
        not["work update periodically"],
        ex_none
    ),
    // Inference engines' own hang detectors: SGLang's scheduler watchdog (`srt/managers/
    // scheduler.py`: "Watchdog timeout (self.watchdog_timeout=300)", no forward step finished
    // in that time, then it dumps the batch and kills the process) and vLLM's shared-memory
    // broadcast queue (`distributed/device_communicators/shm_broadcast.py`: "No available
    // shared memory broadcast block found in 60 second(s)", a reader waited that long: a
    // worker hangs, or compiles). A symptom, as a watchdog's timeout: where it hangs, they do
    // not say.
    rule!(RULE_ENGINE_HANG_DETECTED, CollectiveTimeout, Symptom, Standalone,
        [["watchdog timeout (self.watchdog_timeout=",
          "no available shared memory broadcast block found in"]],
        not [], ex_none),
    rule!("peer_closed", RankCrashed, Consequence, Standalone,
        [["closed its connection"]], not [], ex_peer_closed),
    rule!("peer_io", RankCrashed, Consequence, Standalone,
        [["i/o error with rank"]], not [], ex_peer_io),
    rule!("peer_gone", RankCrashed, Consequence, Standalone,
        [["connection closed by peer", "connection reset by peer", "broken pipe",
          "failed to recv, got 0 bytes", "remote process exited", "ncclremoteerror",
          // NCCL `misc/socket.cc`: "socketProgress: Connection closed by remote peer %s".
          "connection closed by remote peer",
          // NCCL's socket transport (`transport/net_socket.cc`) when a transfer to or from a
          // peer fails ("NET/Socket : socket progress error"): the peer went away or the link
          // broke under it; and its proxy refusing work on a communicator already aborted
          // (`proxy.cc`: "Comm 0x55d1c0 is in abort state"), after an earlier error.
          "net/socket : socket progress error", "is in abort state",
          "communicator was aborted", "unusable after an earlier error", "closing signal sigterm",
          // c10d's store client (`TCPStore.cpp`, `socket.cpp`) when the store's process (rank
          // 0's, or the agent's) went away: "Failed to send, sent 0 bytes. Connection was
          // likely closed. Did the remote server shutdown or crash?", "Socket unexpectedly
          // closed".
          "connection was likely closed", "socket unexpectedly closed",
          // The desync debugger's per-collective store updates (`TraceUtils.h`, with
          // TORCH_NCCL_DESYNC_DEBUG or TORCH_DISTRIBUTED_DEBUG=DETAIL): "Store is down while
          // updating #1234 with key NCCL_1_trace_start", "... while getting key ...".
          "store is down while",
          // Open MPI's btl/tcp: "An MPI communication peer process has unexpectedly
          // disconnected."
          "communication peer process has unexpectedly disconnected"]],
        not [], ex_none),
    // NCCL on a platform or topology it does not handle: a CUDA call NCCL makes that the
    // platform does not offer (`Cuda failure 'operation not supported'`), a topology file
    // without an attribute (`graph/xml.h`: "Attribute %s of node %s not found"), kernels
    // needing more shared memory than the GPU has ("ncclMaxSharedMem %d exceeds device/fn
    // maxSharedMem %d").
    rule!("nccl_platform", NcclInternalOrUnsupported, Cause, Standalone,
        [["nccl warn cuda failure 'operation not supported'", "exceeds device/fn maxsharedmem",
          "nccl warn attribute "]],
        not [], ex_none),
    // `distributed_c10d.py`: "Distributed package doesn't have NCCL built in" (Windows and
    // macOS builds, CPU-only wheels): the backend asked for is not there.
    rule!(
        "nccl_not_built",
        NcclInternalOrUnsupported,
        Cause,
        Standalone,
        [[
            "distributed package doesn't have nccl built in",
            "nccl is not available"
        ]],
        // vLLM's warning (`parallel_state.py`): "Distributed backend nccl is not available;
        // falling back to gloo." The job goes on. accelerate's "Your assigned backend nccl is
        // not available, please use gloo" is its choice for the device: `nccl_without_gpu`.
        not["falling back to gloo", "please use"],
        ex_none
    ),
    // `ProcessGroupNCCL`'s constructor: "ProcessGroupNCCL is only supported with GPUs, no GPUs
    // found!": the build has NCCL, this process sees no GPU.
    // accelerate's `state.py` (since its #2670; "avaliable" in its first releases): "Your
    // assigned backend nccl is not available, please use gloo", when the backend passed
    // (`InitProcessGroupKwargs(backend="nccl")`) is not the one it picks for the device, gloo
    // on a process without CUDA (or run with `--cpu`). Its other devices' answers ("please use
    // hccl", "xla") are the program's choice, a crash of its own.
    // torch.distributed's own checks that ranks agree, read in their sources (torch 2.13):
    // FSDP's execution-order check under TORCH_DISTRIBUTED_DEBUG=DETAIL (`fsdp/
    // _exec_order_utils.py`: "Forward order differs across ranks: rank 0 is all-gathering
    // parameters for [...] while rank 1 is all-gathering parameters for [...]"), DTensor's
    // (`tensor/_collective_utils.py`: "Inconsistent tensor metadata (including shape and
    // stride) across ranks."; `tensor/_utils.py`: "Non-sharded dimensions should have identical
    // size across ranks."), DeviceMesh's of 2.1 to 2.3 ("DeviceMesh initialization does not
    // allow different mesh argument:rank 1 has mesh ... while rank 0has mesh ..."), DCP's
    // (`checkpoint/utils.py`: "Key(s) present in other ranks but not this one, difference:
    // {...}"), and pipelining's check of what a stage receives against what it was set up for
    // (`pipelining/_utils.py`: PipeliningMetadataError, "Stage 1 forward inputs[0]: shape
    // mismatch: ..."; before 2.10 PipeliningShapeError): the ranks run different code or hold
    // different state, so what they exchange differs.
    rule!("torch_distributed_ranks_disagree", CollectiveMismatch, Cause, Standalone,
        [["forward order differs across ranks",
          "inconsistent tensor metadata (including shape and stride) across ranks",
          "non-sharded dimensions should have identical size across ranks",
          "does not allow different mesh argument",
          "key(s) present in other ranks but not this one",
          "pipeliningmetadataerror", "pipeliningshapeerror"]],
        not [], ex_none),
    // FSDP's check on later iterations (`fsdp/_exec_order_utils.py`: "Forward order differs
    // from that of the first iteration on rank 1. Collectives are unchecked and may give
    // incorrect results or hang."): a warning; whether the ranks then diverge, it cannot say.
    // Medium (INDIRECT_RULES).
    rule!(RULE_FSDP_ORDER_CHANGED, CollectiveMismatch, Cause, Standalone,
        [["forward order differs from that of the first iteration"]], not [], ex_none),
    // DeepSpeed ZeRO-3's check at the end of its first step that every rank fetched the same
    // parameters in the same order (`runtime/zero/utils.py`, assert_ints_same_as_other_ranks:
    // "Detected a disagreement on list length between rank0 and rank1:", "Detected a
    // disagreement on list contents between rank0 and rank1:"; before 0.17.6 "disagreement
    // between rank0 and rank1: rank0: [...], rank1: [...]"): the ranks ran different modules,
    // so their parameter all-gathers differ.
    rule!("zero3_trace_disagreement", CollectiveMismatch, Cause, Standalone,
        [["detected a disagreement on list", "disagreement between rank0 and rank"]],
        not [], ex_none),
    // DeepSpeed ZeRO-1 and 2 reducing a parameter whose gradient is None
    // (`runtime/zero/stage_1_and_2.py`: "rank 2 - Invalid to reduce Param 41 with None
    // gradient"): a parameter the step did not use, as DDP's unused parameters. Medium
    // (INDIRECT_RULES): a parameter frozen after the optimizer was built reads the same.
    rule!(RULE_ZERO_NONE_GRADIENT, UnusedParameters, Cause, Standalone,
        [["invalid to reduce param"], ["with none gradient"]], not [], ex_none),
    rule!("nccl_without_gpu", NcclInternalOrUnsupported, Cause, Standalone,
        [["processgroupnccl is only supported with gpus", "backend nccl is not avaliable, please use gloo",
          "backend nccl is not available, please use gloo"]], not [], ex_none),
    // NCCL's `CUDACHECK` ("Cuda failure '%s'", then ncclUnhandledCudaError) with the CUDA
    // runtime's words for a call made wrongly: cudaErrorInvalidValue ("invalid argument": a
    // parameter out of range) and cudaErrorInvalidResourceHandle ("invalid resource handle": a
    // stream or event of another context). NCCL made the call, not the program's kernels: a
    // bug of that NCCL release on this platform or CUDA context (a collective issued before the
    // rank's device was set, which old releases did not handle), not a fault of the GPU.
    rule!("nccl_cuda_call_refused", NcclInternalOrUnsupported, Cause, Standalone,
        [["cuda failure 'invalid argument'", "cuda failure 'invalid resource handle'",
          // NCCL 2.19 on prints the code too ("Cuda failure 1 'invalid argument'").
          "cuda failure 1 'invalid argument'", "cuda failure 400 'invalid resource handle'"]],
        not [], ex_nccl_cuda_call_refused),
    rule!("nccl_unhandled_cuda", CudaError, Cause, AnyFinding,
        [["unhandled cuda error", "ncclunhandledcudaerror"]], not [], ex_none),
    // CUDA's cudaErrorDevicesUnavailable (46): "all CUDA-capable devices are busy or
    // unavailable" (CUDA 12's "CUDA-capable device(s) is/are busy or unavailable"). The runtime
    // API documents it as devices busy or unavailable "due to use of cudaComputeModeProhibited,
    // cudaComputeModeExclusiveProcess, or when long running CUDA kernels have filled up the GPU":
    // on a cluster's GPUs in exclusive-process mode a second process on a GPU is refused its
    // context. In a data-parallel job that second process is a rank that did not select its own
    // GPU (every rank on cuda:0), or the parent that touched CUDA before it spawned the ranks.
    rule!("cuda_devices_unavailable", DuplicateGpu, Cause, Standalone,
        [["devices are busy or unavailable", "device(s) is/are busy or unavailable",
          "device(s) is busy or unavailable"]],
        not [], ex_cuda_devices_unavailable),
    // The CUDA runtime's words when there is no GPU to use at all (no driver, none visible, a
    // driver older than the installed torch's CUDA): not a kernel's error, and its own fix.
    // NCCL's loaders of the driver's libraries (`misc/cudawrap.cc`: "Failed to find CUDA
    // library libcuda.so (NCCL_CUDA_PATH='') : ..."; `misc/nvmlwrap.cc`: "Failed to open
    // libnvidia-ml.so.1"): a container started without the GPU driver mounted.
    // NVML's "Driver/library version mismatch" (`nvmlInit_v2() failed: ...`, nvidia-smi's
    // "Failed to initialize NVML: ..."): the driver was upgraded while its old kernel module is
    // still loaded. NCCL `misc/cudawrap.cc`: "CUDA Driver version found is %d. Minimum
    // requirement is %d".
    rule!(
        "no_usable_gpu",
        CudaError,
        Cause,
        Standalone,
        [[
            "found no nvidia driver",
            "no cuda gpus are available",
            // PyTorch's ROCm build says HIP for CUDA, and HIP's hipErrorNoDevice.
            "no hip gpus are available",
            // The driver API's word (Google's TCPX plugin: "CU failure cuInit:
            // CUDA_ERROR_NO_DEVICE").
            "cuda_error_no_device",
            "no rocm-capable device is detected",
            "cuda driver version is insufficient",
            "nvidia driver on your system is too old",
            "failed to find cuda library libcuda",
            "failed to open libnvidia-ml",
            // PyTorch's own words for the runtime's cudaErrorInitializationError and
            // cudaErrorUnknown at its first CUDA call (`c10/cuda/CUDAFunctions.cpp`), and the
            // runtime's cudaErrorNoDevice.
            "cuda driver initialization failed",
            "cuda unknown error - this may be due to",
            "no cuda-capable device is detected",
            "driver/library version mismatch",
            "cuda driver version found is",
            "but your machine only has: []",
            // Lightning's `CUDAAccelerator.find_usable_cuda_devices`: "You requested to find 2
            // devices but there are no visible CUDA devices on this machine."
            "but there are no visible cuda devices",
            // Lightning's and Fabric's accelerator checks (`fabric/utilities/device_parser.py`:
            // "GPUs requested but none are available."; the accelerator connectors:
            // "`CUDAAccelerator` can not run on your system since the accelerator is not
            // available. ...", "No supported gpu backend found!").
            "gpus requested but none are available",
            "cudaaccelerator` can not run on your system",
            "no supported gpu backend found",
            // Lightning 1.5 to 1.8's wordings of the same checks (`accelerator_connector.py`:
            // "You passed `accelerator='gpu'`, but GPUs are not available.", "GPUAccelerator can
            // not run on your system since the accelerator is not available.", with or without
            // backticks) and `auto_select_gpus`' (`auto_gpu_select.py`: "No GPUs available.",
            // after it failed to allocate on every GPU it sees).
            "accelerator='gpu'`, but gpus are not available",
            "gpuaccelerator` can not run on your system",
            "gpuaccelerator can not run on your system",
            "cudaaccelerator can not run on your system",
            "exception: no gpus available.",
            "runtimeerror: no gpus available.",
            // The CUDA runtime's words for a driver it cannot use, also inside PyTorch's
            // `cudaGetDeviceCount()` check (`c10/cuda/CUDAFunctions.cpp`: "Unexpected error from
            // cudaGetDeviceCount(). ... Error 803: system has unsupported display driver / cuda
            // driver combination"; 804 "forward compatibility was attempted on non supported
            // HW"); PyTorch's NVML handle without a driver (`torch/cuda/__init__.py`: "cuda
            // driver can't be loaded, is cuda enabled?"); cudaErrorMpsConnectionFailed ("MPS
            // client failed to connect to the MPS control daemon or the MPS server": MPS is
            // configured for the process and its daemon is not there).
            "unsupported display driver / cuda driver combination",
            "forward compatibility was attempted on non supported hw",
            "cuda driver can't be loaded",
            "mps client failed to connect to the mps control daemon",
            // accelerate's (`utils/dataclasses.py`, the FSDP plugin: "There are currently no
            // available devices found, must be one of 'XPU', 'CUDA', ..."; `utils/bnb.py`: "No
            // GPU found. A GPU is needed for quantization.", "No GPU or Intel XPU found. ...").
            "there are currently no available devices found",
            "no gpu found. a gpu is needed",
            "no gpu or intel xpu found",
            // torchrun's `--nproc-per-node gpu` (`run.py`, `determine_local_world_size`):
            // "ValueError: Cuda is not available.".
            "valueerror: cuda is not available.",
            // Megatron-LM's `initialize.py` (`assert torch.cuda.is_available(), "Megatron
            // requires CUDA."`): the process sees no GPU.
            "megatron requires cuda.",
            // DeepSpeed's: its launcher with no hostfile (`launcher/runner.py`: "Unable to
            // proceed, no GPU resources available"), ZeRO and the fp16 optimizers when the
            // accelerator has no device (`zero/stage_1_and_2.py`: "Accelerator is not
            // detected, cannot perform low precision training (e.g., fp16, bf16).",
            // `zero/stage3.py`: "Cannot use fp16 without accelerator."), and its JIT op
            // builder (`op_builder/builder.py`: "DeepSpeed JIT builder for 'fused_adam' found
            // no CUDA devices. Set TORCH_CUDA_ARCH_LIST or make GPUs visible.").
            "unable to proceed, no gpu resources available",
            "accelerator is not detected, cannot perform",
            "use fp16 without accelerator.",
            "use bf16 without accelerator.",
            "use {low_precision_dtype} without accelerator.",
            "found no cuda devices. set torch_cuda_arch_list",
            // detectron2's AMP trainer (`engine/train_loop.py`: `assert
            // torch.cuda.is_available(), "[AMPTrainer] CUDA is required for AMP training!"`).
            "cuda is required for amp training",
            // nvidia-smi and NVML without a driver to talk to ("NVIDIA-SMI has failed because
            // it couldn't communicate with the NVIDIA driver", pynvml's "Driver Not Loaded",
            // "NVML Shared Library Not Found", nvidia-smi's "No devices were found") and the
            // kernel module older or newer than the user-space driver ("NVRM: API mismatch:
            // the client has the version ...").
            "couldn't communicate with the nvidia driver",
            "nvmlerror_drivernotloaded",
            "nvml shared library not found",
            "no devices were found",
            // The NVIDIA container runtime (`nvidia-container-cli`, libnvidia-container) and
            // Docker without it: "nvidia-container-cli: initialization error: nvml error:
            // driver not loaded", "load library failed: libnvidia-ml.so.1: cannot open shared
            // object file", "requirement error: unsatisfied condition: cuda>=12.4, please update
            // your driver", "could not select device driver \"\" with capabilities:
            // [[gpu]]", "unknown or invalid runtime name: nvidia".
            // (libnvidia-container's `dsl.c` checks every requirement the same way: the driver,
            // the architecture, CUDA; the toolkit's CSV mode says "requirements not met:
            // unsatisfied condition: cuda>=12.6 (cuda=12.2)". Docker's driver selection for any
            // capabilities. The CDI set-up of Podman and the toolkit: "unresolvable CDI devices
            // nvidia.com/gpu=all", an IMEX channel not on the host. NVML as Slurm, nvidia-ctk
            // and the device plugin say it: "Failed to initialize NVML: Driver Not Loaded",
            // go-nvml's "ERROR_LIBRARY_NOT_FOUND", and "Failed to initialize NVML: Unknown
            // Error", a container that lost its GPUs' device nodes after the host's systemd
            // reloaded its cgroups.)
            "nvidia-container-cli: initialization error",
            "libnvidia-ml.so.1: cannot open shared object file",
            "unsatisfied condition: ",
            "could not select device driver",
            "unknown or invalid runtime name: nvidia",
            "unresolvable cdi devices",
            "not found at /dev/nvidia-caps-imex-channels",
            "failed to initialize nvml: driver not loaded",
            "error_driver_not_loaded",
            "error_library_not_found",
            "failed to initialize nvml: unknown error",
            "nvrm: api mismatch"
        ]],
        // torch.cuda.is_available()'s warning ("UserWarning: CUDA initialization: Found no
        // NVIDIA driver ...", "... CUDA unknown error ..."): a probe's answer, and a job that
        // goes on without a GPU may run (gloo); one that needs it fails later in its own words.
        // (The device plugin's health check without NVML goes on: "Failed to start health check:
        // failed to initialize NVML: Unknown Error; continuing with health checks disabled".)
        not["cuda initialization:", "continuing with health checks disabled"],
        ex_none
    ),
    // PyTorch's hint after a CUDA error it raises (`c10/cuda/CUDAException.cpp`, PyTorch 1.x
    // to 2.13: "CUDA kernel errors might be asynchronously reported at some other API call, so
    // the stacktrace below might be incorrect."): a paste that starts there lost the error's
    // own line; with it, the hint joins that line's finding (an out-of-memory one included).
    // Medium (INDIRECT_RULES): which CUDA error it was, the line does not say.
    rule!(RULE_CUDA_ERROR_HINT, CudaError, Cause, AnyFinding,
        [["cuda kernel errors might be asynchronously reported at some other api call"]],
        // (A paste that joined the hint to the error's line: the error is read by its rule.)
        not ["cuda error:", "cuda failure", "cudaerror"], ex_none),
    rule!(
        "cuda_error",
        CudaError,
        Cause,
        Standalone,
        [[
            "cuda error:",
            "cuda failure",
            // PyTorch's help after cudaErrorInvalidDevice (`c10/cuda/CUDAMiscFunctions.cpp`):
            // "GPU device may be out of range, do you have enough GPUs?"
            "gpu device may be out of range, do you have enough gpus",
            // ("device-side assert triggered": PyTorch's hint after every CUDA error it raises,
            // "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.", is no
            // assert that fired; the error above it is what failed, an out-of-memory one
            // included.)
            "device-side assert triggered",
            "illegal memory access",
            "cudaerror",
            // vLLM's custom all-reduce (`custom_all_reduce.cuh`'s CUDACHECK): "Failed: Cuda
            // error /workspace/csrc/custom_all_reduce.cuh:368 'invalid argument'".
            "failed: cuda error ",
            "invalid device ordinal",
            "nvrm: xid",
            "cublas_status_",
            "cudnn_status_",
            // CUDA runtime and driver texts that come without "CUDA error:" in front.
            "no kernel image is available for execution",
            "deferredcudacallerror",
            // PyTorch on ROCm: the same checks say "HIP error: ..." (c10/hip's C10_HIP_CHECK),
            // and HIP's runtime "hipErrorNoBinaryForGpu: Unable to find code object for all
            // current devices!" where CUDA says no kernel image is available.
            "hip error:",
            "hiperrornobinaryforgpu",
            // PyTorch's own checks of a GPU index against the GPUs there are, as "invalid device
            // ordinal" (`distributed_c10d.py`: "device_id cuda:8 is out of range. Please use a
            // device index less than the number of accelerators available"; torchrun's agent:
            // "local_rank 8 exceeds available GPUs in CUDA_VISIBLE_DEVICES=...").
            "please use a device index less than the number of accelerators",
            // vLLM's `config/parallel.py`: "World size (8) is larger than the number of
            // available GPUs (4) in this node."; its CUDA runtime wrapper (`cuda_wrapper.py`):
            // "CUDART error: invalid argument".
            "is larger than the number of available gpus",
            "cudart error:",
            // torchtitan's `get_local_device`: "LOCAL_RANK=4 is outside the visible cuda
            // device count (4)."
            "is outside the visible cuda device count",
            // torch.cuda's own index checks (`torch/cuda/__init__.py`: `get_device_properties`'s
            // "Invalid device id", `can_device_access_peer`'s "Invalid peer device id", and
            // "device 3 is not visible (CUDA_VISIBLE_DEVICES=[0, 1])"); PyTorch's driver-call
            // check (`ATen/cuda/Exceptions.h`, AT_CUDA_DRIVER_CHECK: "CUDA driver error: ...").
            "assertionerror: invalid device id",
            "assertionerror: invalid peer device id",
            // Intel GPUs' (and out-of-tree backends') index check, `c10/xpu/XPUFunctions.h`'s
            // `check_device_index`: "The device index is out of range. It must be in [0, 6),
            // but got 11." (a local rank computed from more ranks per node than GPUs).
            "the device index is out of range. it must be in [0,",
            "is not visible (cuda_visible_devices=",
            "cuda driver error: unknown error",
            "exceeds available gpus in cuda_visible_devices",
            // Lightning's `device_parser._sanitize_gpu_ids`: "You requested gpu: [0, 1, 2, 3]\n
            // But your machine only has: [0, 1]" (none at all, `[]`, is no_usable_gpu's);
            // `find_usable_cuda_devices`: "You requested to find 8 devices but this machine only
            // has 4 GPUs.", and "... but only 2 are currently available. The devices [2, 3] are
            // occupied by other processes and can't be used at the moment." (CUDA's "busy or
            // unavailable": GPUs in exclusive-process mode held by other processes).
            "but your machine only has:",
            // Lightning 1.7's `auto_select_gpus`: "You requested 4 GPUs but your machine only has
            // 2 GPUs."
            "gpus but your machine only has",
            "devices but this machine only has",
            "are occupied by other processes and can't be used"
        ]],
        // vLLM's FlashInfer all-reduce warning quotes CUDA's error and says it is expected:
        // "Failed to initialize FlashInfer All Reduce workspace: CUDA error: operation not
        // supported ... This is expected on GPUs without NVSwitch"; it goes on without it.
        // sglang's custom all-reduce warning (see p2p_access) quotes a CUDART error too.
        not["this is expected on gpus without", "to silence this warning"],
        ex_none
    ),
    // NCCL `graph/search.cc` (ncclTopoGetChannelFromXml): "XML Import Channel : dev %d not
    // found." and ncclSystemError, when the graph file it was given (NCCL_GRAPH_FILE, with
    // NCCL_TOPO_FILE; cloud images set both in /etc/nccl.conf) names a GPU this machine lacks.
    // NCCL `graph/topo.h` (ncclTopoIdToNetDev): "Could not find NET with id %lx". Before
    // 2.27.3, a search that found no path for a pattern fell back to "simple order" with
    // `graph->inter[0] = 0`, a network device id that no NIC has on multi-node jobs; 2.27.3
    // reworked that search (its graph/search.cc turns the fallback's WARN into an INFO).
    rule!("nccl_topology_lost_net", NcclInternalOrUnsupported, Cause, Standalone,
        [["could not find net with id"]], not [], ex_nccl_topology_lost_net),
    rule!("nccl_graph_file", NcclInternalOrUnsupported, Cause, Standalone,
        [["xml import channel"], ["not found"]], not [], ex_nccl_graph_file),
    // NCCL `graph/xml.cc` (getPciPath): "Could not find real path of
    // /sys/class/pci_bus/0000:01/../../0000:01:00.0" and ncclSystemError: the GPU's PCI device
    // is not in this system's /sys, so NCCL cannot build its topology (WSL 2 with NCCL 2.7,
    // virtual machines and containers that hide the PCI tree). The same words for an RDMA
    // device (`/sys/class/infiniband/...`) are only a warning in later releases.
    rule!("nccl_gpu_not_in_sysfs", NcclInternalOrUnsupported, Cause, Standalone,
        [["could not find real path of /sys/class/pci_bus"]], not [], ex_nccl_gpu_not_in_sysfs),
    // NCCL `transport.cc`: "No transport found for rank 0[1b000] -> rank 1[1c000]": none of
    // P2P, SHM and NET can join the two GPUs (all three switched off by NCCL_*_DISABLE, or
    // each refused by the topology).
    rule!("nccl_no_transport", NcclInternalOrUnsupported, Cause, Standalone,
        [["no transport found for rank"]], not [], ex_none),
    // NCCL `graph/rings.cc` (ncclBuildRings, ncclInternalError): "Error : ring 0 does not loop
    // back to start (7 != 0)", "Error : ring 1 does not contain rank 5": the rings assembled
    // from every rank's graph search do not close, so the ranks searched differently.
    rule!("nccl_rings_inconsistent", NcclInternalOrUnsupported, Cause, Standalone,
        [["does not loop back to start", "error : ring"]], not [], ex_nccl_rings),
    // (NCCL's IB resiliency code's "NET/IB: Unsupported completion status IBV_WC_REM_ACCESS_ERR
    // (10)" is a failed work completion, the IB rules' case, not a setting.)
    rule!(
        "nccl_unsupported",
        NcclInternalOrUnsupported,
        Cause,
        Standalone,
        [
            ["nccl warn"],
            ["not supported", "unsupported", "invalid value for"]
        ],
        // (NCCL's fallback when CollNet cannot be used, "CollNet is not supported or fails to
        // initialize, ignoring NCCL_ALGO=COLLNET": rings and trees go on.)
        not["unsupported completion status", "ignoring nccl_algo"],
        ex_none
    ),
    // A communicator that NCCL refused to create (c10d creates communicators in
    // `NCCLUtils`, through `ncclCommInitRank*`): `init.cc` answers ncclInvalidArgument
    // for "Invalid rank requested : %d/%d" (a rank outside the group's size) and
    // ncclInvalidUsage for "Duplicate GPU detected". The WARN line that names it is only
    // printed with NCCL_DEBUG set; without it, the error code says this much. PyTorch 1.x
    // created the communicators between `ncclGroupStart()` and `ncclGroupEnd()` in
    // `ProcessGroupNCCL::getNCCLComm`, so there a refused communicator is reported at
    // `ncclGroupEnd`'s check, in ProcessGroupNCCL.cpp: invalid usage named there, with no line
    // saying more, is the same refusal (a newer PyTorch adds NCCL's "Last error" to a
    // collective's invalid usage, which rules above read).
    // `NCCLComm::registerSegment` (NCCLUtils.cpp), behind `ProcessGroupNCCL::registerMemPool`
    // and the allocator's registration hooks: C10D_NCCL_CHECK puts its reason on the line
    // after the NCCL error ("NCCL error in: ...NCCLUtils.cpp:560, invalid argument ...", then
    // "Failed to register segment with ptr 0x..., size 2097152 on ncclComm_ 0x..."): NCCL's
    // ncclCommRegister refused the memory, not a communicator's creation (the rule below).
    rule!("nccl_register_segment", NcclInternalOrUnsupported, Cause, Standalone,
        [["failed to register segment with ptr"]], not [], ex_register_segment),
    rule!("nccl_init_invalid_argument", WorldSizeMismatch, Cause, AnyFinding,
        [["invalid argument", "ncclinvalidargument"], ["ncclutils", "ncclcomminitrank", "getncclcomm"]],
        // NCCLUtils' memory registration (`NCCLComm::registerSegment`: "Failed to register
        // segment with ptr ..."), not a communicator's creation.
        not ["cuda error", "cuda failure", "cudaerror", "failed to register segment"], ex_none),
    rule!("nccl_init_invalid_usage", DuplicateGpu, Cause, AnyFinding,
        [["invalid usage", "ncclinvalidusage"],
         ["ncclutils", "ncclcomminitrank", "getncclcomm", "processgroupnccl.cpp"]],
        // `NCCLComm::shrink`'s query of a communicator just shrunk from an existing one ("Failed
        // to query NCCL-assigned rank"): no second process on a GPU there.
        not ["cuda error", "cuda failure", "cudaerror", "failed to query nccl-assigned rank"],
        ex_none),
    rule!("nccl_error_code", NcclInternalOrUnsupported, Cause, AnyFinding,
        [["ncclinternalerror", "internal check failed", "nccl internal error", "ncclinvalidusage",
          "invalid usage", "ncclinvalidargument", "ncclsystemerror", "unhandled system error",
          "system call (e.g. socket, malloc)", "nccl error",
          // ncclInternalError's own text, as nccl-tests quotes it ("Test NCCL failure
          // common.cu:1285 'internal error - please report this issue to the NCCL developers'").
          "please report this issue to the nccl developers"]],
        not [], ex_nccl_error_code),
    // Mistakes in the program's use of DDP that PyTorch's own exception names
    // ([`PROGRAM_MISTAKES`] says what each means and how to fix it).
    // `torch/nn/modules/module.py`'s `__getattr__`: "AttributeError: 'DistributedDataParallel'
    // object has no attribute 'config'": code written for the bare model (its `config`,
    // `dtype`, its own methods) reads them on the wrapper, which has them on `.module`.
    rule!("ddp_wrapper_attribute", RankCrashed, Cause, Standalone,
        [["'distributeddataparallel' object has no attribute"]], not [], ex_ddp_wrapper_attribute),
    // `distributed_c10d.py`'s `_get_default_group`: "Default process group has not been
    // initialized, please make sure to call init_process_group."
    // (PyTorch 1's `_check_default_pg`: "Default process group is not initialized".)
    rule!("process_group_not_initialized", RankCrashed, Cause, Standalone,
        [["default process group has not been initialized", "default process group is not initialized"]],
        not [], ex_none),
    // `torch/cuda/__init__.py`'s `_lazy_init`: "Cannot re-initialize CUDA in forked subprocess.
    // To use CUDA with multiprocessing, you must use the 'spawn' start method".
    rule!("cuda_in_forked_process", RankCrashed, Cause, Standalone,
        [["cannot re-initialize cuda in forked subprocess"]], not [], ex_none),
    // `torch/nn/parallel/distributed.py`: "DistributedDataParallel is not needed when a module
    // doesn't have any parameter that requires a gradient." Before that check (PyTorch 1.2),
    // the reducer's bucket assignment met the empty parameter list itself: "tensors.size() > 0
    // INTERNAL ASSERT FAILED at .../reducer.cpp:672 ... (compute_bucket_assignment_by_size at
    // .../reducer.cpp:672)".
    rule!("ddp_no_trainable_parameter", RankCrashed, Cause, Standalone,
        [["is not needed when a module doesn't have any parameter that requires a gradient",
          "tensors.size() > 0 internal assert failed"]],
        not [], ex_none),
    // The same file: "DistributedDataParallel device_ids and output_device arguments only work
    // with single-device/multiple-device GPU modules or CPU modules, but got device_ids [0],
    // output_device 0, and module parameters {device(type='cpu')}."
    rule!("ddp_device_ids_mismatch", RankCrashed, Cause, Standalone,
        [["device_ids and output_device arguments only work with"]], not [], ex_none),
    // The same file: "Modules with uninitialized parameters can't be used with
    // `DistributedDataParallel`. Run a dummy forward pass to correctly initialize the modules".
    rule!("ddp_lazy_parameters", RankCrashed, Cause, Standalone,
        [["modules with uninitialized parameters can't be used with"]], not [], ex_none),
    // The same file: "device_ids can only be None or contain a single element." (DDP's
    // single-process, multi-device mode is gone: `device_ids=[0, 1, 2, 3]` as DataParallel
    // takes it).
    rule!("ddp_several_device_ids", RankCrashed, Cause, Standalone,
        [["device_ids can only be none or contain a single element"]], not [], ex_none),
    // The same file: "DistributedDataParallel's input module must be on the same type of
    // devices, but input module parameters locate in {'cpu', 'cuda'}."
    rule!("ddp_mixed_device_types", RankCrashed, Cause, Standalone,
        [["input module must be on the same type of devices"]], not [], ex_none),
    // The same file's check, in `__init__`, of the module's SyncBatchNorm layers ("SyncBatchNorm layers only work with GPU modules"), and
    // `torch/nn/modules/batchnorm.py`'s SyncBatchNorm.forward ("SyncBatchNorm expected input
    // tensor to be on GPU or XPU or privateuseone").
    rule!("syncbn_on_cpu", RankCrashed, Cause, Standalone,
        [["syncbatchnorm layers only work with gpu modules",
          "syncbatchnorm expected input tensor to be on gpu"]], not [], ex_none),
    // `torch/nn/functional.py`'s `_verify_batch_size` (BatchNorm in training) and
    // `torch/nn/modules/_functions.py`'s SyncBatchNorm.forward: "Expected more than 1 value per
    // channel when training, got input size torch.Size([1, 512])".
    rule!("batchnorm_single_sample", RankCrashed, Cause, Standalone,
        [["expected more than 1 value per channel when training"]], not [], ex_none),
    // `torch/nn/modules/module.py`'s `load_state_dict`: "Error(s) in loading state_dict for
    // Net:" then "\tMissing key(s) in state_dict: \"fc.weight\", ..." and "\tUnexpected key(s)
    // in state_dict: \"_orig_mod.fc.weight\", ...": keys with torch.compile's prefix (the
    // compiled wrapper's state_dict), before DDP's, which a compiled DDP model's keys may hold
    // too.
    rule!("state_dict_compile_prefix", RankCrashed, Cause, Standalone,
        [["key(s) in state_dict: \""], ["_orig_mod."]], not [], ex_none),
    // The same, with DDP's prefix: "Unexpected key(s) in state_dict: \"module.fc.weight\""
    // (saved from the DDP wrapper, loaded into the bare model) or "Missing key(s) in
    // state_dict: \"module.fc.weight\"" (the other way round).
    rule!("state_dict_ddp_prefix", RankCrashed, Cause, Standalone,
        [["key(s) in state_dict: \"module."]], not [], ex_none),
    // `torch/utils/data/dataloader.py`: "sampler option is mutually exclusive with shuffle".
    rule!("sampler_with_shuffle", RankCrashed, Cause, Standalone,
        [["sampler option is mutually exclusive with shuffle"]], not [], ex_none),
    // A CPU tensor given to an NCCL group's collective: `ProcessGroup.hpp`'s "No backend type
    // associated with device type cpu" (PyTorch 2), `ProcessGroupNCCL.cpp`'s check_gpu_single_tensor
    // "Tensors must be CUDA and dense" (before).
    rule!("nccl_cpu_tensor", RankCrashed, Cause, Standalone,
        [["no backend type associated with device type cpu", "tensors must be cuda and dense"]],
        not [], ex_none),
    // The dynamic linker's own words when a process cannot start (glibc's `dl-load.c` and
    // `dl-version.c`): "error while loading shared libraries: libnccl.so.2: cannot open shared
    // object file: No such file or directory" (or "failed to map segment from shared object"),
    // "version `GLIBC_2.34' not found (required by /usr/local/gib/lib64/libnccl.so.2)". A
    // version of NCCL's own that is not found is `nccl_symbol_missing`, earlier.
    // Also the loader's bare "libcudart.so.12: cannot open shared object file: No such file or
    // directory", as a wrapper reports it; not where a program only warns that it goes on
    // without the library (vLLM's "WARNING ... Failed to import from vllm._C_stable_libtorch:
    // ImportError('libcudart.so.13: cannot open ...", oneCCL's "|CCL_WARN| dlopen
    // (libfabric.so)", NCCL's INFO line about a network or tuner plugin it looked for).
    rule!("shared_library_not_loaded", RankCrashed, Cause, Standalone,
        [["error while loading shared libraries:", "' not found (required by ",
          ": cannot open shared object file"]],
        not ["nccl info", "plugin", "warn", "dlopen"], ex_shared_library),
    // A script started without a launcher: `rendezvous.py`'s env:// handler, "environment
    // variable MASTER_ADDR expected, but not set", raised by `_env_error(...)`.
    rule!("env_rendezvous_unset", RankCrashed, Cause, Standalone,
        [["expected, but not set", "raise _env_error("]], not [], ex_env_rendezvous_unset),
    // The rank's program stopped before training: argparse ("PROG: error: unrecognized
    // arguments: --local-rank=0", which PyTorch ≥ 2.0's launcher passes), a script that is
    // not there (CPython's "can't open file '...': [Errno 2] No such file or directory").
    rule!("program_refused_start", RankCrashed, Cause, Standalone,
        [[": error: unrecognized arguments", ": error: the following arguments are required",
          ": error: argument ", "can't open file"]],
        not [], ex_line),
    // CPython's `multiprocessing/spawn.py` (`_check_not_importing_main`): "An attempt has been
    // made to start a new process before the current process has finished its bootstrapping
    // phase." (on its own line, under "RuntimeError:").
    rule!("spawn_without_main_guard", RankCrashed, Cause, Standalone,
        [["an attempt has been made to start a new process before the"]], not [], ex_none),
    // Pickle's refusals of what a spawned process is handed: "Can't pickle local object
    // 'main.<locals>.run'", "Can't pickle <function <lambda> at 0x...>", "cannot pickle
    // '_thread.lock' object".
    rule!("spawn_unpicklable", RankCrashed, Cause, Standalone,
        [["can't pickle local object", "can't pickle <function <lambda>", "cannot pickle '",
          "can't get local object"]],
        not [], ex_none),
    // `torch/cuda/__init__.py`'s `_lazy_init`: "Torch not compiled with CUDA enabled".
    rule!("torch_without_cuda", RankCrashed, Cause, Standalone,
        [["torch not compiled with cuda enabled"]], not [], ex_none),
    rule!("rust_panic", RankCrashed, Cause, Standalone,
        [["panicked at"]], not [], ex_none),
    // The C++ runtime's words when a process ends while a std::thread is still running (a
    // joinable thread destroyed, libstdc++'s `std::terminate` with no exception): in a PyTorch
    // rank, the interpreter exiting while its process group's threads still work (gloo), as a
    // rank that left the training with collectives pending does.
    rule!("terminate_with_threads_running", RankCrashed, Cause, AnyFinding,
        [["terminate called without an active exception"]], not [], ex_none),
    // Open MPI's signal handler (`opal/util/stacktrace.c`) opens its report with "[host:pid] ***
    // Process received signal ***", glog's and its copies' (`failure_signal_handler`) with "***
    // Aborted at 1628840833 (unix time) try "date -d @1628840833" if you are using GNU date
    // ***": a paste cut after that first line still shows a native crash.
    // (UCX's handler: "Caught signal 6 (Aborted: ...)". Horovod's warning that MPI without
    // MPI_THREAD_MULTIPLE "will likely cause a segmentation fault" names none that happened, nor
    // RCCL's INFO at set-up when it could not install its handler, `signals.cc`: "Unable to
    // register signal handler for Segmentation fault".)
    rule!(
        "crash_marker",
        RankCrashed,
        Cause,
        AnyFinding,
        [[
            "segmentation fault",
            "sigsegv",
            "fatal python error",
            "core dumped",
            "terminate called after throwing",
            "illegal instruction",
            "sigabrt",
            "bus error",
            "caught signal 6 (aborted",
            "*** process received signal ***",
            "(unix time) try \"date -d @"
        ]],
        not["will likely cause a segmentation fault", "unable to register signal handler for"],
        ex_none
    ),
    // Open MPI's and PRRTE's reports of a rank's own failure (`help-orterun.txt`,
    // `help-prun.txt`, `help-errmgr-base.txt`): "... exited with non-zero status ... Exit
    // code: 1", "Primary job  terminated normally, but 1 process returned a non-zero exit
    // code", "... process rank 2 ... calling \"abort\"", "... exiting improperly", and MPI's
    // own "MPI_ABORT was invoked on rank 0 in communicator MPI_COMM_WORLD". The rank's own
    // error is in its output; this line joins that finding.
    // MPI's error class MPI_ERR_TRUNCATE ("MPI_ERR_TRUNCATE: message truncated", Open MPI's
    // `errhandler` report "*** MPI_ERR_TRUNCATE: message truncated"; MPICH's "Message
    // truncated; 400 bytes received but buffer size is 200"): a rank received more than it
    // posted for. Between the ranks of one collective, or a matched send and receive, that is
    // ranks disagreeing on the size or order of what they exchange. Medium (INDIRECT_RULES):
    // a program's own mismatched point-to-point calls give it too.
    rule!(RULE_MPI_TRUNCATE, CollectiveMismatch, Cause, Standalone,
        [["mpi_err_truncate", "message truncated;"]], not [], ex_none),
    // MPICH's fatal error handler (`MPIR_Handle_fatal_error`, then `MPID_Abort`): "Abort(N)
    // (rank R in comm C): Fatal error in PMPI_Init_thread: Other MPI error, error stack:"
    // (Cray MPICH prefixes "MPICH ERROR [Rank R] ..."; without a rank, "Abort(16): Fatal
    // error in internal_Init_thread: Internal MPI error!"): the rank's MPI call failed and MPI
    // ended the process. The error stack's lines below it name the failing layer (a NIC
    // policy, the fabric); a specific rule reading one of them comes first.
    rule!("mpich_fatal_error", RankCrashed, Cause, Standalone,
        [["fatal error in pmpi_", "fatal error in mpi_", "fatal error in internal_"]],
        not [], ex_mpich_fatal_error),
    // Open MPI's and PRRTE's `help-errmgr-base.txt`: "ORTE has lost communication with a
    // remote daemon. ... This is usually due to either a failure of the TCP network connection
    // to the node, or possibly an internal failure of the daemon itself." (PRRTE: "PRTE has
    // lost communication with a remote daemon", prterun's "prterun has lost ..."): a node of
    // the job, or the link to it, was lost, or its daemon never started: the launcher's
    // reaction, so what took the node out (an ssh refusal, a node failure) ranks before it
    // when the log has it; alone it is the finding.
    rule!(RULE_MPI_LOST_DAEMON, RankCrashed, Consequence, Standalone,
        [["has lost communication with a remote daemon", "has lost communication with its daemon"]],
        not [], ex_none),
    rule!("mpi_rank_failed", RankCrashed, Cause, AnyFinding,
        [["exited with non-zero status", "terminated normally, but", "calling \"abort\"",
          "exiting improperly", "mpi_abort was invoked on rank"]],
        not [], ex_none),
    // DeepSpeed's node launcher (`launcher/launch.py`) when one of its ranks exited with a
    // non-zero code: "{cmd} exits with return code = {code}" (a signal's negative code is
    // read by the rules above: -9 SIGKILL, -7 SIGBUS). The rank's own error, when its output
    // is in the log, is the finding this one supports.
    rule!("deepspeed_rank_exit", RankCrashed, Cause, AnyFinding,
        [["exits with return code = "]],
        not ["return code = 0", "return code = -9", "return code = -7"], ex_none),
    // Slurm's srun when tasks of the step exited with a non-zero code: "srun: error: host-a:
    // task 3: Exited with exit code 1" (`tasks 0-3: ...`). Like DeepSpeed's line above, the
    // task's own error is in its output; 137, 135 and 139 are a shell's signals (SIGKILL,
    // SIGBUS, SIGSEGV), read by [`shell_report`].
    rule!("srun_task_exit", RankCrashed, Cause, AnyFinding,
        [["srun: error: "], [": exited with exit code "]],
        // 143 and 130 are a shell's SIGTERM and SIGINT: a stop, sent from outside or by the
        // launcher after another task's failure, as torchelastic's -15 and -2 are.
        not ["exit code 0", "exit code 137", "exit code 135", "exit code 139", "exit code 143",
             "exit code 130"], ex_none),
    // torchelastic's agent (`multiprocessing/api.py`) on the first worker of its node that
    // failed: "failed (exitcode: -11) local_rank: 0 (pid: 102) of binary: /usr/bin/python3",
    // often all a paste keeps of the failure table after it. A negative code is the signal
    // that killed it (-9 and -7 are read above; -15, -2 and -1 are stops sent from outside or
    // by the agent); a positive one is the rank's own exit, its error earlier in its output.
    rule!("elastic_worker_failed", RankCrashed, Cause, AnyFinding,
        [["failed (exitcode: "], ["local_rank: "]],
        not ["exitcode: 0)", "exitcode: -15)", "exitcode: -2)", "exitcode: -1)"],
        ex_elastic_worker_failed),
    // The agent's word that a worker of its node failed and it restarts the group
    // (`agent/server/api.py`, `_invoke_run`: "[default] Worker group FAILED. 3/3 attempts
    // left; will restart worker group"): the worker's own error is earlier in the log.
    rule!("elastic_worker_group_failed", RankCrashed, Symptom, AnyFinding,
        [["worker group failed."]], not [], ex_none),
    // Lightning's launcher watching the ranks it started (`subprocess_script.py`,
    // _ChildProcessObserver, the rank in the prefix is the child's): "[rank: 1] Child process
    // with PID 2053468 terminated with code 1. Forcefully terminating all other processes to
    // avoid zombies". As for torchelastic's line: a negative code is the signal (-9 and -7 are
    // read above; -15, -2 and -1 come from outside), a positive one the rank's own exit.
    rule!("lightning_child_exit", RankCrashed, Cause, AnyFinding,
        [["child process with pid"], ["terminated with code"]],
        not ["terminated with code 0.", "terminated with code -15.", "terminated with code -2.",
             "terminated with code -1."],
        ex_none),
    // vLLM's executors on a worker process that ended (`v1/executor/multiproc_executor.py`:
    // "Worker proc VllmWorker-1 died unexpectedly (exit code: -11), shutting down executor.";
    // `ray_executor_v2.py`: "RayWorkerProc rank=[1] died unexpectedly, shutting down
    // executor."). As for torchelastic's line: -9 and -7 are read above, a positive code is
    // the worker's own exit, its error earlier in its output.
    rule!("vllm_worker_died", RankCrashed, Cause, AnyFinding,
        // (And the front end on its engine core process, `v1/engine/core_client.py`: "Engine
        // core proc EngineCore_0 died unexpectedly, shutting down client.")
        [["died unexpectedly"], ["worker proc ", "workerproc ", "engine core proc "]],
        not ["(exit code: 0)", "(exit code: -15)", "(exit code: -2)"], ex_worker_died),
    // (A rank's `KeyboardInterrupt` is read with its traceback: `scan.rs`, python_exception.)
    // (A CalledProcessError of a helper command a rank runs itself, e.g. fairseq's `scontrol
    // show hostnames`, is not a launcher's report: that rank's own failure, read by its
    // traceback.)
    // Also the launchers' teardown of the workers still running after one failed (or after
    // the launcher was told to stop): torchelastic's (`multiprocessing/api.py`: "Closing
    // process 4021 via signal SIGTERM", "Unable to shutdown process 4021 via 15, forcefully
    // exiting via 9") and `torch.multiprocessing.spawn`'s ("Terminating process 4021 via signal
    // SIGTERM", "Unable to shutdown process 4021 via SIGTERM , forcefully exiting via SIGKILL").
    // Kubernetes restarting a container that keeps failing (the kubelet's
    // `kuberuntime_manager.go`: the event "Back-off restarting failed container pytorch in pod
    // ...", the state "Reason: CrashLoopBackOff"): the rank's program failed, in its previous
    // run's own output (`kubectl logs --previous`).
    rule!("container_restarting", RankCrashed, Symptom, AnyFinding,
        [["back-off restarting failed container", "crashloopbackoff"]], not [], ex_none),
    // torchelastic's `SignalException` (`multiprocessing/api.py`): raised only by the
    // termination handler that `start_processes` installs in the launching process (torchrun's
    // agent, `elastic_launch`) for SIGTERM, SIGINT, SIGHUP and SIGQUIT ("Process {pid} got
    // signal: {sig}"), never in a rank: the launcher was told to stop. Which signal, and so
    // whether a person, the terminal (SIGHUP) or a scheduler sent it, the exception's own line
    // says when it is there (SIGHUP and SIGINT are `launcher_signal`'s); a symptom, so a rank's
    // failure the log shows before it comes first (a scheduler stopping the other launchers
    // after it).
    rule!(RULE_ELASTIC_SIGNAL_EXCEPTION, LauncherInterrupted, Symptom, Standalone,
        [["multiprocessing.api.signalexception"]], not [], ex_none),
    rule!("launcher_consequence", RankCrashed, Consequence, AnyFinding,
        [["childfailederror", "calledprocesserror", "signalexception",
          "via signal sigterm", ", forcefully exiting via",
          // Kubeflow's PyTorchJob controller (`pytorchjob_controller.go`: "PyTorchJob NAME is
          // failed because 1 Worker replica(s) failed.", "... is restarting because ..."), and
          // Open MPI's mpirun (`help-state-base.txt`: "While the primary job  terminated
          // normally, 1 process returned / a non-zero exit code.. Further examination may be
          // required.", over two lines; `help-orterun.txt`: "A critical communication path was
          // lost to:").
          "replica(s) failed", "further examination may be required",
          // Kubeflow's backoff limit (`common/job.go`: "Job NAME has failed because it has
          // reached the specified backoff limit"), JobSet's ("jobset failed due to one or more
          // job failures (first failed job: ...)"), Slurm's step ending after a task failed
          // (`slurmstepd/req.c`: "*** STEP 1234.0 ON node-3 FAILED (non-zero exit code or other
          // failure mode) ***") and Horovod's gloo launcher (`runner/gloo_run.py`: "Terminating
          // remaining workers after failure of Process 3.").
          "has reached the specified backoff limit", "jobset failed due to",
          // SGLang's launcher when a child process (a scheduler, the detokenizer) failed and
          // signalled it (`srt/entrypoints/engine.py`: "Received sigquit from a child process.
          // It usually means the child failed.").
          "received sigquit from a child process",
          // torchelastic's `@record` wrapper around its own launcher on the first failure
          // without an error file (`multiprocessing/errors/__init__.py`, logged as a tuple:
          // "('local_rank %s FAILED with no error file. Decorate your entrypoint fn with
          // @record ...', 0)").
          "failed with no error file",
          "failed (non-zero exit code or other failure mode)",
          "terminating remaining workers after failure of process",
          "a critical communication path was lost to"]],
        not ["'scontrol'", "'nvidia-smi'", "'git'", "'hostname'"], ex_none),
    // fairseq's heartbeat (`distributed/distributed_timeout_wrapper.py`): "Killing job for not
    // making progress in 1800 seconds. Set --heartbeat-timeout=-1 to disable this timeout.",
    // after which it sends its own process SIGINT (its KeyboardInterrupt traceback is a
    // consequence): the program's own watchdog saw a hang, most often in a collective. Medium
    // (INDIRECT_RULES): where it hung the line does not say.
    rule!(RULE_FAIRSEQ_HEARTBEAT, CollectiveTimeout, Cause, Standalone,
        [["killing job for not making progress in"]], not [], ex_none),
    // Last, for the checks no rule above names: every framework's check of its layout against
    // the ranks started is an error that names the world size beside a comparison (the
    // sixty-odd wordings of `parallel_layout_vs_world` and the rules around it: "... != world
    // size", "MP=2 but world size is 1", "does not match the world size", "world_size (6) must
    // be divisible by ..."). An error line so worded reads as that (medium: INDIRECT_RULES).
    rule!(RULE_WORLD_SIZE_CHECK_WORDED, WorldSizeMismatch, Cause, Standalone,
        [["error:", "error]", "assertion failed", "exception:"],
         ["world size", "world_size", "world-size", "worldsize"],
         ["!=", " but ", "does not match", "doesn't match", "mismatch", "must be", "must equal",
          "should be", "not divisible", "not equal", " vs ", "must match"]],
        not ["timed out", "timeout", "warning"], ex_none),
];

fn ex_elastic_worker_failed(_: &str, lower: &str) -> Extract {
    let code = signed_after(lower, "failed (exitcode: ");
    let local = num_after(lower, "local_rank: ");
    let who = local.map_or("a rank".to_owned(), |l| format!("local rank {l}"));
    Extract {
        detail: code.map(|code| exit_code_detail("torchelastic", &who, code)),
        ..Extract::default()
    }
}

fn ex_nic_kernel_fault(_: &str, lower: &str) -> Extract {
    let nic = if lower.contains("efa") {
        "an AWS EFA adapter"
    } else {
        "an NVIDIA (Mellanox) ConnectX NIC"
    };
    Extract {
        detail: Some(format!(
            "the kernel reported a fault of {nic} (its cable, module or firmware): the ranks' \
             network through it failed; check the link (`ibstat`, `ip link`) and the NIC's \
             health on that node"
        )),
        ..Extract::default()
    }
}

fn ex_launch_program_missing(line: &str, lower: &str) -> Extract {
    // slurmstepd names the program and the reason; mpirun's box names it on a later line.
    let detail = lower.find("execve(): ").map(|at| {
        format!(
            "the batch system could not start the task's program: {} (is the path, or the \
             script's interpreter, there on every node?)",
            sanitize(line[at + "execve(): ".len()..].trim(), 120)
        )
    });
    Extract {
        detail: Some(detail.unwrap_or_else(|| {
            "the launcher could not start the program on a node: it is not there, or not \
             executable (is the path the same on every node?)"
                .to_owned()
        })),
        ..Extract::default()
    }
}

fn ex_node_failure(_: &str, _: &str) -> Extract {
    Extract {
        detail: Some(
            "a node of the job failed (the batch system's or the cluster's word): its ranks died \
             with it; the node's own logs (`journalctl -k`, the scheduler's log for the node) \
             say why"
                .to_owned(),
        ),
        ..Extract::default()
    }
}

/// What a launcher's exit code of a rank or worker says: a negative code is the signal that
/// killed it (multiprocessing's convention), a positive one its own exit.
fn exit_code_detail(reporter: &str, who: &str, code: i64) -> String {
    match code {
        -11 => format!(
            "{reporter} reports {who} killed by signal 11 (SIGSEGV): a native crash in the \
             rank's own process (an extension, a library, a driver), not a timeout; its core \
             dump or `faulthandler` output says where"
        ),
        -6 => format!(
            "{reporter} reports {who} killed by signal 6 (SIGABRT): an abort, whose reason is \
             the `what():` line or the failed check printed just before it in the rank's output"
        ),
        c if c < 0 => format!("{reporter} reports {who} killed by signal {}", -c),
        c => format!(
            "{reporter} reports {who} exited with code {c}: its own error (a traceback) is \
             earlier in its output"
        ),
    }
}

/// vLLM's executor on a worker that died: "Worker proc VllmWorker-1 died unexpectedly (exit
/// code: -11)", "RayWorkerProc rank=[1] died unexpectedly".
fn ex_worker_died(line: &str, lower: &str) -> Extract {
    let who = lower
        .find("worker proc ")
        .map(|i| phrase(line, i + "worker proc ".len(), 40))
        .filter(|w| !w.is_empty())
        .map(|w| w.split_whitespace().next().unwrap_or_default().to_owned());
    let mut ex = Extract::default();
    if let Some(r) = lower
        .find("rank=[")
        .and_then(|i| num_after(&lower[i..], "rank=["))
        .and_then(rank_number)
    {
        ex.subjects.push(r);
    }
    let who = who.unwrap_or_else(|| "a worker".to_owned());
    ex.detail =
        signed_after(lower, "(exit code: ").map(|code| exit_code_detail("vLLM", &who, code));
    ex
}

fn ex_gpu_fault(_: &str, _: &str) -> Extract {
    Extract {
        detail: Some(
            "the GPU reported a hardware fault (ECC, or it fell off the bus): errors after it on \
             that node follow from it; the node needs draining and a GPU check"
                .to_owned(),
        ),
        ..Extract::default()
    }
}

fn ex_socket_type(_: &str, lower: &str) -> Extract {
    let types = lower.find("wrong type ").and_then(|i| {
        let rest = &lower[i + "wrong type ".len()..];
        let (a, b) = rest.split_once("!=")?;
        Some((leading_number(a)?, leading_number(b)?))
    });
    match types {
        Some((3, 4) | (4, 3)) => Extract {
            detail: Some(
                "an InfiniBand connection met a socket one (NCCL's socket types 4 and 3): the \
                 nodes disagree on whether to use InfiniBand"
                    .to_owned(),
            ),
            ..Extract::default()
        },
        _ => Extract {
            category: Some(Category::NcclInternalOrUnsupported),
            ..Extract::default()
        },
    }
}

fn ex_ib_local_protection(_: &str, _: &str) -> Extract {
    Extract {
        detail: Some(
            "work completion status 4 (IBV_WC_LOC_PROT_ERR): the NIC could not access NCCL's \
             buffer in GPU memory, so GPU Direct RDMA is blocked between NIC and GPU; \
             NCCL_NET_GDR_LEVEL=0 confirms it"
                .to_owned(),
        ),
        ..Extract::default()
    }
}

/// The rules of [`shell_report`].
static SHELL_KILLED: Rule = rule!("shell_killed", HostOomKilled, Cause, Standalone,
    [["killed"]], not [], ex_none);
/// Kubernetes' and the container runtime's own report that the kernel's OOM killer ended the
/// container (`Reason: OOMKilled`, `kubectl get pods`' `OOMKilled` status): the cgroup's memory
/// limit, not a bare SIGKILL.
static CONTAINER_OOM_KILLED: Rule = rule!("container_oom_killed", HostOomKilled, Cause,
    Standalone, [["oomkilled"]], not [], ex_none);
static SHELL_BUS_ERROR: Rule = rule!("shell_bus_error", ShmTooSmall, Cause, Standalone,
    [["135"]], not [], ex_none);
/// SIGABRT as a launcher reports it (Open MPI's "exited on signal 6 (Aborted)"): a native
/// abort, whose reason is the `what():` line or failed check above it.
static SHELL_ABORTED: Rule = rule!("shell_aborted", RankCrashed, Cause, AnyFinding,
    [["134"]], not [], ex_none);
/// An Xid the driver logs when it tears down a process that ended (45).
static XID_TEARDOWN: Rule = rule!("xid_teardown", RankCrashed, Consequence, AnyFinding,
    [["xid"]], not [], ex_none);

/// `sacct`'s states (see [`sacct_row`]).
static SACCT_OUT_OF_MEMORY: Rule = rule!("sacct_out_of_memory", HostOomKilled, Cause,
    Standalone, [["out_of_me"]], not [], ex_none);
static SACCT_STOPPED: Rule = rule!("sacct_stopped", LauncherInterrupted, Cause, Standalone,
    [["timeout", "preempted", "deadline"]], not [], ex_none);
static SACCT_NODE_FAIL: Rule = rule!("sacct_node_fail", RankCrashed, Cause, Standalone,
    [["node_fail"]], not [], ex_none);

static SHELL_SEGFAULT: Rule = rule!("shell_segfault", RankCrashed, Cause, AnyFinding,
    [["139"]], not [], ex_none);

/// The line itself, as the detail (its own words are the specifics).
fn ex_ddp_wrapper_attribute(line: &str, lower: &str) -> Extract {
    let key = "object has no attribute '";
    let name = lower
        .find(key)
        .and_then(|i| line.get(i + key.len()..))
        .and_then(|rest| rest.split('\'').next())
        .filter(|n| !n.is_empty() && n.len() <= 80);
    Extract {
        detail: name.map(|n| format!("`{}`", sanitize(n, 80))),
        ..Extract::default()
    }
}

fn ex_env_rendezvous_unset(line: &str, lower: &str) -> Extract {
    // "environment variable MASTER_ADDR expected, but not set"
    let key = "environment variable ";
    let name = lower
        .find(key)
        .and_then(|i| line.get(i + key.len()..))
        .and_then(|rest| rest.split_whitespace().next())
        .filter(|n| n.bytes().all(|b| b.is_ascii_uppercase() || b == b'_') && n.len() <= 40);
    Extract {
        detail: name.map(str::to_owned),
        ..Extract::default()
    }
}

fn ex_shared_library(line: &str, lower: &str) -> Extract {
    // "... error while loading shared libraries: libnccl.so.2: cannot open ..." names the
    // library; "version `GLIBC_2.34' not found (required by /x/libnccl.so.2)" names the
    // version it needs and the library that needs it.
    let key = "error while loading shared libraries: ";
    let bare = ": cannot open shared object file";
    let detail = if let Some(i) = lower.find(key) {
        line.get(i + key.len()..)
            .and_then(|rest| rest.split(':').next())
            .map(|name| name.trim().to_owned())
    } else if let Some(i) = lower.find(bare) {
        // The library's path or name just before: the last word of what comes first.
        line.get(..i)
            .and_then(|before| before.rsplit([' ', ':']).next())
            .map(|name| name.rsplit('/').next().unwrap_or(name).to_owned())
    } else {
        let needed = lower
            .find("version `")
            .and_then(|i| line.get(i + "version `".len()..))
            .and_then(|rest| rest.split('\'').next());
        let by = lower
            .find("(required by ")
            .and_then(|i| line.get(i + "(required by ".len()..))
            .and_then(|rest| rest.split(')').next())
            .map(|path| path.rsplit('/').next().unwrap_or(path).trim());
        match (by, needed) {
            (Some(by), Some(needed)) => Some(format!("{by} (it needs {needed})")),
            (Some(by), None) => Some(by.to_owned()),
            _ => None,
        }
    };
    Extract {
        detail: detail
            .filter(|d| !d.is_empty())
            .map(|d| clip(&sanitize(&d, 240), 120)),
        ..Extract::default()
    }
}

fn ex_line(line: &str, lower: &str) -> Extract {
    // "/usr/bin/python3: can't open file '...'": the interpreter's path says nothing.
    let from = lower.find("can't open file").unwrap_or(0);
    let said = line.get(from..).unwrap_or(line);
    Extract {
        detail: Some(clip(&sanitize(said, 320), 160)),
        ..Extract::default()
    }
}

fn ex_nccl_shm_attach(_: &str, _: &str) -> Extract {
    Extract {
        detail: Some(
            "a rank could not open the shared-memory segment another rank of its host created: \
             the ranks do not share one /dev/shm (separate containers or pods on one host); run \
             them with --ipc=host or in one container, or set NCCL_SHM_DISABLE=1"
                .to_owned(),
        ),
        ..Extract::default()
    }
}

fn ex_shm_default_size(_: &str, _: &str) -> Extract {
    Extract {
        detail: Some(
            "/dev/shm has 64 MiB, a container's default: NCCL's shared-memory transport between \
             the GPUs of one host needs more; start the container with --ipc=host or \
             --shm-size (Kubernetes: an emptyDir with medium Memory mounted at /dev/shm)"
                .to_owned(),
        ),
        ..Extract::default()
    }
}

fn ex_nccl_cuda_call_refused(_: &str, _: &str) -> Extract {
    Extract {
        detail: Some(
            "a CUDA call NCCL made itself was refused as made wrongly (not a kernel of the \
             program's, not a GPU fault): an NCCL bug on this platform or CUDA context; upgrade \
             NCCL (a newer torch wheel ships one) and set each rank's device before its first \
             collective (`torch.cuda.set_device(local_rank)`, or `device_id` in \
             `init_process_group`)"
                .to_owned(),
        ),
        ..Extract::default()
    }
}

fn ex_shm_interrupted(_: &str, _: &str) -> Extract {
    Extract {
        detail: Some(
            "a signal interrupted the allocation of NCCL's shared-memory segment (EINTR); \
             NCCL versions without the retry fail on it: upgrade NCCL, or block the signal \
             (a profiler's SIGPROF, a timer's SIGALRM) around process-group creation"
                .to_owned(),
        ),
        ..Extract::default()
    }
}

fn ex_monitored_barrier_peer(_: &str, lower: &str) -> Extract {
    let faulty = num_after(lower, "send/recv from rank ").and_then(rank_number);
    Extract {
        subjects: faulty.into_iter().collect(),
        detail: faulty.map(|r| {
            format!("the monitored barrier got an error from rank {r}: it failed or exited")
        }),
        ..Extract::default()
    }
}

/// NCCL's `ncclSystemError` ("unhandled system error", "System call (e.g. socket, malloc) or
/// external library call failed"): a system call of NCCL's failed, and without the `NCCL WARN`
/// line before it the log does not say which. NCCL's troubleshooting guide names the two
/// usual ones, shared memory in containers and the network interface; in this project's corpus
/// of real logs the bare error's established cause was each of them.
fn ex_nccl_error_code(_: &str, lower: &str) -> Extract {
    let system = lower.contains("system error")
        || lower.contains("ncclsystemerror")
        || lower.contains("system call (");
    Extract {
        detail: system.then(|| {
            "ncclSystemError, a system call of NCCL's failed: without NCCL's WARN line the usual \
             ones are /dev/shm too small in a container (64 MB by default: --ipc=host or \
             --shm-size) or a network interface the other ranks cannot reach \
             (NCCL_SOCKET_IFNAME)"
                .to_owned()
        }),
        ..Extract::default()
    }
}

fn ex_mpich_fatal_error(line: &str, lower: &str) -> Extract {
    let rank = num_after(lower, "(rank ").and_then(rank_number);
    // The lowercased line has the same byte offsets (ASCII lowering).
    let call = lower
        .find("fatal error in ")
        .and_then(|at| line.get(at + "fatal error in ".len()..))
        .and_then(|rest| rest.split([':', ',']).next())
        .unwrap_or("")
        .trim();
    Extract {
        subjects: rank.into_iter().collect(),
        detail: Some(format!(
            "MPI ended the rank: its call {call} failed (MPICH's fatal error handler); the \
             error stack under this line names the layer that failed"
        )),
        ..Extract::default()
    }
}

fn ex_nccl_gpu_not_in_sysfs(_: &str, _: &str) -> Extract {
    Extract {
        detail: Some(
            "NCCL could not resolve the GPU's PCI device under /sys/class/pci_bus, so it cannot \
             detect the machine's topology: this platform does not show the GPU's PCI tree in \
             /sys (WSL 2 with an old NCCL, some virtual machines and containers). Run where \
             /sys shows the GPU, a newer NCCL, or describe the topology with NCCL_TOPO_FILE"
                .to_owned(),
        ),
        ..Extract::default()
    }
}

/// NCCL's error propagation (`include/checks.h`, `NCCLCHECK`: `INFO(NCCL_ALL, "%s:%d -> %d",
/// __FILE__, __LINE__, res)`; the group's `"%s:%d -> %d [Async thread]"`, the proxy's
/// `[Proxy Thread]`): each function an error passed through prints its file, line and the
/// `ncclResult_t`. With NCCL_DEBUG=INFO these lines outlive the messages a log was cut to, so
/// the code alone says that this rank's NCCL call failed and how: 1 ncclUnhandledCudaError, 2
/// ncclSystemError, 3 ncclInternalError, 4 ncclInvalidArgument, 5 ncclInvalidUsage. Not 6,
/// ncclRemoteError ("a network error or a remote process exiting prematurely", nccl.h): NCCL's
/// sockets return it for a refused connect too, so it says neither which nor whose; nor 7, in
/// progress, no failure. The WARN line before them, when a rule reads it, says why; this
/// attaches to that finding.
static NCCL_RETURN_CHAIN: Rule = rule!(RULE_NCCL_RETURN_CHAIN, NcclInternalOrUnsupported, Cause,
    AnyFinding, [["nccl info"]], not [], ex_nccl_return_chain);
/// The rule of NCCL's error-propagation lines (`init.cc:840 -> 2`).
pub(crate) const RULE_NCCL_RETURN_CHAIN: &str = "nccl_return_chain";

/// The `ncclResult_t` of an NCCL INFO line of its error propagation (`init.cc:840 -> 2`,
/// `group.cc:73 -> 2 [Async thread]`), for the codes that are this rank's own failure (1 to 5).
fn nccl_return_code(lower: &str) -> Option<u8> {
    if !lower.contains("nccl info") {
        return None;
    }
    let (before, after) = lower.rsplit_once(" -> ")?;
    // `file.cc:LINE` right before the arrow.
    let (file, line) = before.rsplit(' ').next()?.rsplit_once(':')?;
    let source = [".cc", ".cu", ".h", ".cpp"]
        .iter()
        .any(|x| file.ends_with(x));
    if !source || line.is_empty() || !line.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // The InfiniBand plugin's initialisation (`transport/net_ib/init.cc`, NCCL 2.23 and later)
    // failing where there is no InfiniBand (`Failed to open libibverbs.so[.1]`): NCCL prints
    // "Failed to initialize NET plugin IB", disables the plugin and goes on with sockets
    // (`plugin/net.cc`); that is no failure of the job.
    if file.ends_with("net_ib/init.cc") {
        return None;
    }
    let after = after.trim_end();
    let (code, rest) = after.split_at(
        after
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(after.len()),
    );
    let rest = rest.trim();
    if !(rest.is_empty() || (rest.starts_with('[') && rest.ends_with(" thread]"))) {
        return None;
    }
    code.parse::<u8>().ok().filter(|c| (1..=5).contains(c))
}

fn ex_nccl_return_chain(_: &str, lower: &str) -> Extract {
    let code = nccl_return_code(lower);
    let name = match code {
        Some(1) => "ncclUnhandledCudaError: a CUDA call NCCL made failed",
        Some(2) => "ncclSystemError: a system call of NCCL's failed (a socket, shared memory, /sys)",
        Some(3) => "ncclInternalError",
        Some(4) => "ncclInvalidArgument: the program passed NCCL an invalid argument",
        _ => "ncclInvalidUsage: the program used NCCL wrongly (two ranks on one GPU, ranks out of range)",
    };
    Extract {
        detail: Some(format!("NCCL's calls returned {name}")),
        category: (code == Some(1)).then_some(Category::CudaError),
        ..Extract::default()
    }
}

fn ex_cuda_devices_unavailable(_: &str, _: &str) -> Extract {
    Extract {
        detail: Some(
            "CUDA refused the rank a context on its GPU (cudaErrorDevicesUnavailable): the GPUs \
             are in exclusive-process mode (`nvidia-smi --query-gpu=compute_mode --format=csv`) \
             and another process already holds this one: a second rank on the same GPU (each \
             rank must call `torch.cuda.set_device(local_rank)` before any CUDA work), the \
             parent process if it touched CUDA before spawning the ranks, or another job"
                .to_owned(),
        ),
        ..Extract::default()
    }
}

fn ex_register_segment(_: &str, _: &str) -> Extract {
    Extract {
        detail: Some(
            "NCCL refused to register a block of GPU memory with the communicator \
             (ncclCommRegister, from `register_mem_pool` or the allocator's registration \
             hooks); NCCL_DEBUG=WARN prints its reason: memory not allocated in a way NCCL can \
             register, or a registration this NCCL or GPU does not support"
                .to_owned(),
        ),
        ..Extract::default()
    }
}

fn ex_none(_: &str, _: &str) -> Extract {
    Extract::default()
}

fn ex_ofi_gpu_buffer_refused(_: &str, _: &str) -> Extract {
    Extract {
        detail: Some(
            "aws-ofi-nccl's registration of a GPU buffer with libfabric answered invalid \
             argument (RC -22)"
                .to_owned(),
        ),
        ..Extract::default()
    }
}

fn ex_ofi_call_not_supported(_: &str, _: &str) -> Extract {
    Extract {
        detail: Some(
            "the libfabric provider does not implement a call this aws-ofi-nccl makes: its \
             protocol or version against the provider's (try OFI_NCCL_PROTOCOL=RDMA or the other \
             protocol, or the plugin and libfabric versions the provider supports)"
                .to_owned(),
        ),
        ..Extract::default()
    }
}

/// A device mesh's ranks against the job's world size: "the device mesh asks for 16 ranks,
/// the job has 8".
fn ex_device_mesh_size(_: &str, lower: &str) -> Extract {
    let world = num_after(lower, "world size ").and_then(rank_number);
    let mesh = ["but found ", "but get ", "but got "]
        .iter()
        .find_map(|k| num_after(lower, k))
        .and_then(rank_number);
    let detail = match (mesh, world) {
        (Some(m), Some(w)) => format!("the device mesh asks for {m} ranks, the job has {w}"),
        (Some(m), None) => format!("the device mesh asks for {m} ranks, more than the job has"),
        _ => "the device mesh asks for more ranks than the job has".to_owned(),
    };
    Extract {
        detail: Some(detail),
        expected_world: mesh,
        ..Extract::default()
    }
}

/// The network `NCCL_NET` named, as NCCL printed it.
fn ex_nccl_net_not_found(line: &str, lower: &str) -> Extract {
    let name = lower
        .find("error: network ")
        .map(|i| i + "error: network ".len())
        .and_then(|start| {
            let end = start + lower[start..].find(" not found")?;
            Some(line[start..end].trim())
        });
    Extract {
        detail: Some(match name {
            Some(n) if !n.is_empty() => format!(
                "NCCL_NET={n} asks for a network NCCL could not load on this host (unset \
                 NCCL_NET to let NCCL choose, or make that network's devices or plugin \
                 available)"
            ),
            _ => "NCCL_NET asks for a network NCCL could not load on this host".to_owned(),
        }),
        ..Extract::default()
    }
}

fn ex_nccl_topology_lost_net(_: &str, _: &str) -> Extract {
    Extract {
        detail: Some(
            "NCCL's topology search fell back to a simple order and then looked for a network \
             device that does not exist: a bug of NCCL before 2.27.3 on multi-node jobs \
             (upgrade NCCL, or the container that ships it)"
                .to_owned(),
        ),
        ..Extract::default()
    }
}

fn ex_nccl_graph_file(_: &str, _: &str) -> Extract {
    Extract {
        detail: Some(
            "NCCL's graph file (NCCL_GRAPH_FILE, with NCCL_TOPO_FILE; often set in /etc/nccl.conf \
             by a machine image made for another size) names a GPU this machine does not have: \
             unset both, or point them at this machine's files"
                .to_owned(),
        ),
        ..Extract::default()
    }
}

/// The ranks of a comma-separated list ("0, 1, 2" inside a report's brackets or braces).
fn ranks_in(list: &str) -> Vec<usize> {
    list.split(',')
        .filter_map(|r| r.trim().parse().ok().and_then(rank_number))
        .collect()
}

/// The ranks Ray Train's collective timeout names ("... have not joined the collective
/// operation: [3]").
fn ex_ray_train_collective(_: &str, lower: &str) -> Extract {
    let key = "have not joined the collective operation: [";
    let subjects: Vec<usize> = lower
        .find(key)
        .map(|i| {
            let rest = &lower[i + key.len()..];
            ranks_in(&rest[..rest.find(']').unwrap_or(rest.len())])
        })
        .unwrap_or_default();
    let detail = (!subjects.is_empty()).then(|| {
        format!(
            "Ray Train: {} never joined the collective the others waited in",
            crate::report::ranks_phrase(&subjects)
        )
    });
    Extract {
        subjects,
        detail,
        ..Extract::default()
    }
}

/// The ranks of the desync report's "joined but didn't finish" line and the collective.
fn ex_desync_joined(_: &str, lower: &str) -> Extract {
    let key = "] joined but didn't finish collective #";
    let Some(end) = lower.find(key) else {
        return Extract::default();
    };
    let open = lower[..end].rfind('[').map_or(end, |o| o + 1);
    let subjects = ranks_in(&lower[open..end]);
    let seq = num_after(&lower[end..], key);
    let detail = (!subjects.is_empty()).then(|| {
        format!(
            "PyTorch's desync report: {} joined collective #{} and did not finish it",
            crate::report::ranks_phrase(&subjects),
            seq.map_or("?".to_owned(), |n| n.to_string())
        )
    });
    Extract {
        subjects,
        detail,
        ..Extract::default()
    }
}

/// The ranks of the desync report's lagging line, and what it says of them.
fn ex_desync_lagging(_: &str, lower: &str) -> Extract {
    let bracket = |from: usize, to: usize| lower.get(from..to).map(ranks_in).unwrap_or_default();
    let (subjects, what) = if let Some(end) = lower.find("] finished collective #") {
        let open = lower[..end].rfind('[').map_or(end, |o| o + 1);
        let done = num_after(&lower[end..], "] finished collective #");
        let what = done.map_or_else(
            || "finished the collective before and never joined the next".to_owned(),
            |n| {
                format!(
                    "finished collective #{n} and never joined #{}, the one the others waited in",
                    n + 1
                )
            },
        );
        (bracket(open, end), what)
    } else if let Some(i) = lower.find("ranks [") {
        let open = i + "ranks [".len();
        let close = lower[open..].find(']').map_or(open, |c| open + c);
        (
            bracket(open, close),
            "never joined any collective".to_owned(),
        )
    } else {
        (Vec::new(), String::new())
    };
    let detail = (!subjects.is_empty()).then(|| {
        format!(
            "PyTorch's desync report: {} {what}",
            crate::report::ranks_phrase(&subjects)
        )
    });
    Extract {
        subjects,
        detail,
        ..Extract::default()
    }
}

fn ex_fr_missing_ranks(_: &str, lower: &str) -> Extract {
    let subjects: Vec<usize> = lower
        .find("missing ranks")
        .and_then(|i| {
            let rest = &lower[i..];
            let open = rest.find('{')?;
            let close = rest[open..].find('}')? + open;
            Some(ranks_in(&rest[open + 1..close]))
        })
        .unwrap_or_default();
    let detail = (!subjects.is_empty()).then(|| {
        format!(
            "the flight recorder's analyzer found {} never joining a collective the other ranks \
             entered: stuck before it, or on another path (a different collective, an early exit)",
            crate::report::ranks_phrase(&subjects)
        )
    });
    Extract {
        subjects,
        detail,
        ..Extract::default()
    }
}

fn ex_workers_out_of_sync(_: &str, _: &str) -> Extract {
    Extract {
        detail: Some(
            "the workers fell out of sync in all_gather_list: one worker finished its epoch \
             (ran out of batches) or ran out of memory while the others went on"
                .to_owned(),
        ),
        ..Extract::default()
    }
}

fn ex_rocm_fault(line: &str, lower: &str) -> Extract {
    const AT: &[&str] = &[
        "memory access fault by gpu",
        "hw exception by gpu",
        "aborting with",
        "hsa_status_error",
        "rocr failure",
        "hipipcgetmemhandle",
        "hip failure",
        "amdgpu:",
        "[drm]",
    ];
    let start = AT.iter().filter_map(|n| lower.find(n)).min().unwrap_or(0);
    Extract {
        detail: Some(format!(
            "the ROCm runtime or the amdgpu driver reported a GPU fault: {}",
            phrase(line, start, 120).trim()
        )),
        ..Extract::default()
    }
}

fn ex_ras_missing(_: &str, lower: &str) -> Extract {
    let subjects = if lower.contains("the missing rank") {
        rank_mentions(lower)
    } else {
        Vec::new()
    };
    // (The finding's title and meaning say what it is: `correlate::draft`.)
    Extract {
        subjects,
        ..Extract::default()
    }
}

fn ex_nvshmem_heap(_: &str, lower: &str) -> Extract {
    let size = num_after(lower, "nvshmem symmetric size = ");
    Extract {
        detail: Some(match size {
            Some(n) => format!(
                "NVSHMEM's symmetric heap ({n} bytes of GPU memory) is full: raise \
                 NVSHMEM_SYMMETRIC_SIZE"
            ),
            None => "NVSHMEM's symmetric heap is full: raise NVSHMEM_SYMMETRIC_SIZE".to_owned(),
        }),
        ..Extract::default()
    }
}

fn ex_trl_vllm_server(line: &str, lower: &str) -> Extract {
    let at = lower
        .find("can't be reached at ")
        .map(|i| i + "can't be reached at ".len());
    let url = at.and_then(|i| line.get(i..)?.split_whitespace().next());
    Extract {
        detail: Some(match url {
            Some(u) => format!(
                "the trainer could not reach trl's vLLM server at {}: start it (`trl \
                 vllm-serve`) before the trainer, on the host and port the trainer is given",
                sanitize(u, 80)
            ),
            None => "the trainer could not reach trl's vLLM server".to_owned(),
        }),
        ..Extract::default()
    }
}

fn ex_container_gpu_setup(line: &str, lower: &str) -> Extract {
    Extract {
        detail: Some(
            match phrase_after(line, lower, "nvidia-container-cli: ", 120) {
                Some(p) => format!(
                "the container runtime could not give the job its GPUs (nvidia-container-cli: {p})"
            ),
                None => "the container runtime could not give the job its GPUs".to_owned(),
            },
        ),
        ..Extract::default()
    }
}

fn ex_hcl_verify(line: &str, lower: &str) -> Extract {
    Extract {
        detail: Some(match phrase_after(line, lower, "] failed.", 120) {
            Some(p) => format!("HCL's check failed: {p}"),
            None => "HCL's check failed".to_owned(),
        }),
        ..Extract::default()
    }
}

fn ex_composer_download(line: &str, lower: &str) -> Extract {
    let class = lower
        .find("<class '")
        .map(|i| i + "<class '".len())
        .and_then(|i| Some((i, line.get(i..)?.find('\'')?)))
        .map(|(i, n)| sanitize(&line[i..i + n], 60));
    let said = phrase_after(line, lower, "raised during downloading: ", 120);
    Extract {
        detail: Some(match (class, said) {
            (Some(c), Some(s)) => format!("downloading the checkpoint failed: {c}: {s}"),
            (_, Some(s)) => format!("downloading the checkpoint failed: {s}"),
            _ => "downloading the checkpoint failed".to_owned(),
        }),
        ..Extract::default()
    }
}

fn ex_composer_ranks_failed(_: &str, lower: &str) -> Extract {
    let subjects = rank_mentions(lower);
    Extract {
        detail: Some(format!(
            "downloading the checkpoint failed on {}; that rank's own log has the error",
            if subjects.len() == 1 { "it" } else { "them" }
        )),
        subjects,
        ..Extract::default()
    }
}

fn ex_monitored_barrier(_: &str, lower: &str) -> Extract {
    let Some(before) = lower
        .find("failed to pass monitoredbarrier")
        .map(|i| &lower[..i])
    else {
        return ex_ranks("", lower);
    };
    // Past the "[Rank 0]: " that says who reports it.
    let named = before.rsplit("]:").next().unwrap_or(before);
    let late = rank_mentions(named);
    let within = num_after(lower, "monitoredbarrier in ");
    Extract {
        detail: (!late.is_empty()).then(|| {
            let who = crate::report::ranks_phrase(&late);
            let them = if late.len() > 1 { "them" } else { "it" };
            match within {
                Some(ms) => format!(
                    "{who} did not reach the monitored barrier within {ms} ms (rank 0 waited \
                     for {them})"
                ),
                None => format!("{who} did not reach the monitored barrier"),
            }
        }),
        subjects: if late.is_empty() {
            rank_mentions(lower)
        } else {
            late
        },
        ..Extract::default()
    }
}

fn ex_ranks(_: &str, lower: &str) -> Extract {
    Extract {
        subjects: rank_mentions(lower),
        ..Extract::default()
    }
}

/// The phrase of `line` from byte `start`, sanitised and cut.
fn phrase(line: &str, start: usize, max: usize) -> String {
    clip(&sanitize(line.get(start..).unwrap_or(""), max * 2), max)
}

/// The phrase of `line` after `key` (found in `lower`), trimmed; `None` without the key or
/// without anything after it.
fn phrase_after(line: &str, lower: &str, key: &str, max: usize) -> Option<String> {
    let p = phrase(line, lower.find(key)? + key.len(), max);
    let p = p.trim();
    (!p.is_empty()).then(|| p.to_owned())
}

fn ex_cuda_oom(line: &str, lower: &str) -> Extract {
    let mut parts = Vec::new();
    if let Some(i) = lower.find("tried to allocate ") {
        let rest = &line[i..];
        let words: Vec<&str> = rest.split_whitespace().take(5).collect();
        parts.push(words.join(" ").trim_end_matches(['.', ',', ';']).to_owned());
    }
    if let Some(gpu) = num_after(lower, "gpu ") {
        parts.push(format!("on GPU {gpu}"));
    }
    let mut detail = (!parts.is_empty()).then(|| sanitize(&parts.join(" "), 120));
    if let Some(outside) = held_outside_the_allocator(lower) {
        detail = Some(match detail {
            Some(d) => format!("{d}; {outside}"),
            None => outside,
        });
    }
    if let Some(held) = describe_gpu_processes(lower, false) {
        detail = Some(match detail {
            Some(d) => format!("{d}; {held}"),
            None => held,
        });
    }
    Extract {
        detail,
        ..Extract::default()
    }
}

/// vLLM's KV-cache figures, as far as the line holds them: "max_model_len 1280 needs 0.18 GiB
/// of KV cache, 0.10 GiB available".
fn ex_vllm_kv_cache(_: &str, lower: &str) -> Extract {
    let len = lower
        .find("max seq len")
        .and_then(|i| num_after(&lower[i..], "max seq len ("));
    let needed = lower.find(" gib kv cache is needed").and_then(|end| {
        let start = lower[..end].rfind(['(', ' ']).map_or(0, |i| i + 1);
        lower[start..end].parse::<f64>().ok()
    });
    let available = lower.find("available kv cache memory (").and_then(|i| {
        let rest = &lower[i + "available kv cache memory (".len()..];
        gib_of(&rest[..rest.find(')')?])
    });
    let mut parts = Vec::new();
    match (len, needed) {
        (Some(l), Some(n)) => parts.push(format!("max_model_len {l} needs {n:.2} GiB of KV cache")),
        (Some(l), None) => parts.push(format!("max_model_len {l}")),
        (None, Some(n)) => parts.push(format!("{n:.2} GiB of KV cache needed")),
        (None, None) => {}
    }
    if let Some(a) = available {
        parts.push(format!("{a:.2} GiB available"));
    }
    if lower.contains("no available memory for the cache blocks") {
        parts.push("no memory left for the KV cache at all".to_owned());
    }
    Extract {
        detail: (!parts.is_empty()).then(|| parts.join(", ")),
        ..Extract::default()
    }
}

/// The processes that PyTorch's caching allocator lists in its out-of-memory message (NVML's
/// compute processes on the GPU, `reportProcessMemoryInfo`: "Process 3573322 has 20.08 GiB
/// memory in use. Including non-PyTorch memory, this process has 8.23 GiB memory in use."),
/// as the phrase "processes on the GPU: 3573322 (20.08 GiB), this one (8.23 GiB)" that
/// [`gpu_processes_in`] reads back. Inside a container NVML's PIDs are the host's, so the
/// process itself may be listed by number too. The failing process alone says nothing the
/// message's other figures do not, so it makes no phrase unless `own_alone` (a wrapped
/// message's line of its own, whose share the other lines' processes are weighed against).
fn describe_gpu_processes(lower: &str, own_alone: bool) -> Option<String> {
    let mut held = Vec::new();
    let mut rest = lower;
    while let Some(i) = rest.find(" memory in use") {
        let before = &rest[..i];
        rest = &rest[i + " memory in use".len()..];
        let Some(h) = before.rfind(" has ") else {
            continue;
        };
        let amount = before[h + 5..].trim();
        let who = before[..h].trim_end();
        let id = if who.ends_with("this process") {
            "this one".to_owned()
        } else {
            match who.rsplit_once("process ") {
                Some((_, pid)) if !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) => {
                    pid.to_owned()
                }
                _ => continue,
            }
        };
        let unit_ok = amount.split_whitespace().count() == 2
            && amount
                .split_whitespace()
                .next()
                .is_some_and(|n| n.parse::<f64>().is_ok());
        if unit_ok {
            held.push(format!(
                "{id} ({})",
                amount
                    .replace("gib", "GiB")
                    .replace("mib", "MiB")
                    .replace("kib", "KiB")
            ));
        }
    }
    let numbered = held.iter().any(|h| !h.starts_with("this one"));
    (numbered || (own_alone && !held.is_empty()))
        .then(|| format!("{GPU_PROCESSES}{}", held.join(", ")))
}

const GPU_PROCESSES: &str = "processes on the GPU: ";

/// The words of a detail that says how much of the GPU the failing process's allocator did
/// not hold ([`held_outside_the_allocator`]).
pub(crate) const HELD_OUTSIDE_THE_ALLOCATOR: &str = "held outside this process's PyTorch allocator";

/// PyTorch's out-of-memory message before 2.1 ("Tried to allocate 3.50 GiB (GPU 3; 79.35 GiB
/// total capacity; 1.20 GiB already allocated; 415.19 MiB free; 1.30 GiB reserved in total by
/// PyTorch)") lists no processes, but what its figures leave, the total less the free and the
/// reserved, is memory the process's allocator does not hold: other processes', and the
/// process's own CUDA context and libraries' buffers (NCCL's, a few hundred MiB to a few GiB).
/// From 2 GiB and half of the GPU on it is named, as "~77.6 GiB of the GPU's 79.35 GiB held
/// outside this process's PyTorch allocator": less says little, as on a 15 GB T4 whose batch was
/// too large (`cylinder3d-109` in the corpus: 4.1 GiB of 14.76 outside, the process's own
/// context and libraries among them).
fn held_outside_the_allocator(lower: &str) -> Option<String> {
    let size_before = |key: &str| -> Option<f64> {
        let i = lower.find(key)?;
        let mut words = lower[..i].split_whitespace().rev();
        let unit = words.next()?;
        gib_of(&format!("{} {unit}", words.next()?))
    };
    let total = size_before(" total capacity;")?;
    let free = size_before(" free;")?;
    let reserved = size_before(" reserved in total by pytorch")?;
    let outside = total - free - reserved;
    (outside >= 2.0 && outside >= 0.5 * total).then(|| {
        format!("~{outside:.1} GiB of the GPU's {total:.2} GiB {HELD_OUTSIDE_THE_ALLOCATOR}")
    })
}

/// A size as PyTorch's allocator formats it ("20.08 GiB", "512.00 MiB", "0 bytes"; any case),
/// in GiB.
pub(crate) fn gib_of(size: &str) -> Option<f64> {
    let mut words = size.split_whitespace();
    let n: f64 = words.next()?.parse().ok()?;
    let scale = match words.next()?.to_ascii_lowercase().as_str() {
        "gib" => 1.0,
        "mib" => 1.0 / 1024.0,
        "kib" => 1.0 / (1024.0 * 1024.0),
        "bytes" => 1.0 / (1024.0 * 1024.0 * 1024.0),
        _ => return None,
    };
    Some(n * scale)
}

/// The processes a detail made by [`describe_gpu_processes`] names: each process's id (a PID,
/// or "this one" for the process that failed) and the memory it held.
pub(crate) fn gpu_processes_in(detail: &str) -> Vec<(String, String)> {
    let Some(i) = detail.find(GPU_PROCESSES) else {
        return Vec::new();
    };
    detail[i + GPU_PROCESSES.len()..]
        .split(", ")
        .filter_map(|e| {
            let (id, amount) = e.split_once(" (")?;
            Some((id.to_owned(), amount.trim_end_matches(')').to_owned()))
        })
        .collect()
}

/// A continuation line of the same message, when a paste wrapped it: the processes alone.
fn ex_gpu_processes(_line: &str, lower: &str) -> Extract {
    Extract {
        detail: describe_gpu_processes(lower, true),
        ..Extract::default()
    }
}

fn ex_duplicate_gpu(line: &str, lower: &str) -> Extract {
    let detail = lower
        .find("rank ")
        .map(|i| phrase(line, i, 120))
        .filter(|s| !s.is_empty());
    Extract {
        subjects: rank_mentions(lower),
        detail,
        ..Extract::default()
    }
}

fn ex_lightning_launcher_sizes(line: &str, lower: &str) -> Extract {
    let at = lower
        .find("you set `")
        .or_else(|| lower.find("the sizes `"))
        .unwrap_or(0);
    Extract {
        detail: Some(format!(
            "Lightning's check of the Trainer against the launcher: {}",
            phrase(line, at, 160).trim_end_matches('.')
        )),
        ..Extract::default()
    }
}

fn ex_world_size(line: &str, lower: &str) -> Extract {
    let mut ex = Extract::default();
    if let Some(i) = lower.find("invalid rank requested") {
        let rest = &lower[i + "invalid rank requested".len()..];
        let rest = rest.trim_start_matches([' ', ':']);
        if let Some((r, n)) = rest.split_once('/') {
            let r = leading_number(r);
            let n = leading_number(n);
            if let (Some(r), Some(n)) = (r, n) {
                ex.detail = Some(format!(
                    "rank {r} was requested in a communicator of {n} ranks"
                ));
                ex.expected_world = rank_number(n);
            }
        }
    } else if let Some(i) = lower.find("invalid rank") {
        ex.detail = Some(phrase(line, i, 120));
    } else if let Some(i) = lower.find("world size mismatch: rank ") {
        // comm's "world size mismatch: rank R was started with world size N, rank 0 with M".
        let r = leading_number(&lower[i + "world size mismatch: rank ".len()..]);
        if let Some(r) = r.and_then(rank_number) {
            ex.subjects = vec![r];
        }
        ex.detail = Some(phrase(line, i, 160));
    } else if let Some(i) = lower.find("world") {
        ex.detail = Some(phrase(line, i, 120));
    }
    ex
}

fn ex_dump_signal_rank(_: &str, lower: &str) -> Extract {
    let rank = num_after(lower, "collective timeout from rank ").and_then(rank_number);
    Extract {
        subjects: rank.into_iter().collect(),
        detail: rank.map(|r| {
            format!(
                "rank {r} timed out in a collective and had every rank dump its debug info \
                 (flight recorder)"
            )
        }),
        ..Extract::default()
    }
}

fn ex_desync_report_timeout(line: &str, lower: &str) -> Extract {
    // The rank in brackets is the one that printed the report: it stays the observer (the
    // ranks the report blames are the lagging ones, read by the rules above).
    const SAID: &str = "] timeout at collective: ";
    let at = lower.find(SAID).map_or(line.len(), |i| i + SAID.len());
    // (Lowercasing keeps ASCII offsets: the same place in the line.)
    let what = line.get(at..).map(|w| sanitize(w.trim(), 60));
    Extract {
        detail: what
            .filter(|w| !w.is_empty())
            .map(|w| format!("timed out at collective {w}")),
        ..Extract::default()
    }
}

fn ex_gloo_hostname_unresolved(_: &str, _: &str) -> Extract {
    Extract {
        detail: Some(
            "gloo could not resolve this host's name to an address (getaddrinfo failed): set \
             GLOO_SOCKET_IFNAME to the interface the nodes reach each other on, or make the \
             host name resolve (/etc/hosts, DNS)"
                .to_owned(),
        ),
        ..Extract::default()
    }
}

fn ex_gloo_device_address(line: &str, lower: &str) -> Extract {
    let detail = match lower.find("cannot resolve ") {
        Some(at) => {
            let rest = &line[at + "cannot resolve ".len()..];
            let host = rest.split(" to a (local) address").next().unwrap_or("");
            format!(
                "gloo found no address of this host for the name {} (set GLOO_SOCKET_IFNAME to \
                 the interface the nodes reach each other on, or map the host name to that \
                 interface's address)",
                sanitize(host.trim(), 80)
            )
        }
        None => "gloo was asked for a device with neither an interface nor a host name (look \
                 for an empty entry in GLOO_SOCKET_IFNAME)"
            .to_owned(),
    };
    Extract {
        detail: Some(detail),
        ..Extract::default()
    }
}

fn ex_timeout_signal_from_another_rank(_: &str, lower: &str) -> Extract {
    let what = if lower.contains("observed flight recorder dump signal") {
        "failed or timed out in a collective"
    } else {
        "timed out in a collective"
    };
    Extract {
        detail: Some(format!(
            "another rank {what} and told every rank through the store to dump its debug \
             info (flight recorder); that rank's log names it"
        )),
        ..Extract::default()
    }
}

fn ex_remote_error_rank(_: &str, lower: &str) -> Extract {
    Extract {
        subjects: num_after(lower, "remote error detected from rank:")
            .and_then(rank_number)
            .into_iter()
            .collect(),
        ..Extract::default()
    }
}

fn ex_port(_: &str, lower: &str) -> Extract {
    let port = lower
        .match_indices("]:")
        .find_map(|(i, _)| {
            let rest = &lower[i + 2..];
            rest.starts_with(|c: char| c.is_ascii_digit())
                .then(|| leading_number(rest))
                .flatten()
        })
        .or_else(|| num_after(lower, "port: "))
        .or_else(|| num_after(lower, "port "));
    let port = port.and_then(|p| u16::try_from(p).ok());
    Extract {
        detail: port.map(|p| format!("port {p}")),
        port,
        ..Extract::default()
    }
}

/// The loopback address a gloo peer advertised, named.
fn ex_gloo_peer_loopback(line: &str, lower: &str) -> Extract {
    let address = ["remote=[", "remote=", "connect ["]
        .iter()
        .find_map(|k| loopback_address_after(line, lower, k));
    Extract {
        detail: Some(format!(
            "a peer advertised the loopback address {}: its host name resolves to loopback \
             (/etc/hosts maps it to 127.0.1.1 on Ubuntu and Debian images), which other nodes \
             cannot reach",
            address.unwrap_or("127.x")
        )),
        ..Extract::default()
    }
}

/// The loopback address (`127.` and the digits and dots after it) right after `key` in
/// `line` (`lower` is `line` lowercased, ASCII only: the same byte offsets).
fn loopback_address_after<'l>(line: &'l str, lower: &str, key: &str) -> Option<&'l str> {
    let start = lower.find(&format!("{key}127."))? + key.len();
    let len = line[start..]
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(line.len() - start);
    Some(&line[start..start + len])
}

/// The loopback address an NCCL peer advertised, named.
fn ex_nccl_peer_loopback(line: &str, lower: &str) -> Extract {
    let address = loopback_address_after(line, lower, "connect to ");
    Extract {
        detail: Some(format!(
            "NCCL's connection to a peer at the loopback address {} was refused: that peer \
             bootstrapped on `lo` (NCCL_SOCKET_IFNAME=lo, or no other interface it accepted), \
             an address no other host can reach",
            address.unwrap_or("127.x")
        )),
        ..Extract::default()
    }
}

fn ex_address(line: &str, lower: &str) -> Extract {
    // c10d's socket.cpp: "failed to connect to any network address of (host, port)", "failed
    // to connect to host:port"; gloo's `GLOO_SOCKET_IFNAME` lookup: "Unable to find address
    // for: eth1" (an interface).
    let detail = [
        ("connect to any network address of ", "to"),
        ("connect to ", "to"),
        ("address for: ", "no address for interface"),
        ("address for ", "no address for interface"),
    ]
    .iter()
    .find_map(|(k, said)| lower.find(k).map(|i| (i + k.len(), said)))
    .and_then(|(i, said)| {
        let rest = &line[i..];
        // c10d's socket.cpp names the peer as "(host, port)".
        let pair = rest
            .strip_prefix('(')
            .and_then(|r| r.split_once(')'))
            .and_then(|(inside, _)| inside.split_once(", "))
            .map(|(host, port)| format!("{}:{}", host.trim(), port.trim()));
        let word = pair.unwrap_or_else(|| rest.split_whitespace().next().unwrap_or("").to_owned());
        let word = sanitize(word.trim_end_matches([',', '.', ';']), 80);
        // NCCL_SOCKET_IFNAME's `^` (every interface but these) is NCCL's syntax: PyTorch gives
        // each name of GLOO_SOCKET_IFNAME to gloo as an interface's name.
        let excluded = if word.starts_with('^') && said.ends_with("interface") {
            " (a `^` exclusion, which NCCL_SOCKET_IFNAME takes but GLOO_SOCKET_IFNAME does not: \
             name the interface to use)"
        } else {
            ""
        };
        (!word.is_empty()).then(|| format!("{said} {word}{excluded}"))
    });
    Extract {
        detail,
        ..Extract::default()
    }
}

/// The store's address that did not resolve, "HOST:PORT", from c10d's "network addresses of
/// (HOST, PORT) cannot be retrieved", and getaddrinfo's words after "gai error: N - ".
fn ex_store_name_unresolved(line: &str, lower: &str) -> Extract {
    let key = "network addresses of (";
    let address = lower.find(key).and_then(|i| {
        let (inside, _) = line[i + key.len()..].split_once(')')?;
        let (host, port) = inside.split_once(", ")?;
        Some(format!("{}:{}", host.trim(), port.trim()))
    });
    let why = lower.find("gai error: ").and_then(|i| {
        let rest = &line[i + "gai error: ".len()..];
        let (_, words) = rest.split_once(" - ")?;
        Some(words.trim_end_matches([')', '.']).trim().to_owned())
    });
    unresolved_address(address, why)
}

/// The detail of a store address that did not resolve: "HOST:PORT (getaddrinfo's words)".
fn unresolved_address(address: Option<String>, why: Option<String>) -> Extract {
    let detail = address.map(|a| match why {
        Some(w) => sanitize(&format!("{a} ({w})"), 120),
        None => sanitize(&a, 120),
    });
    Extract {
        detail,
        ..Extract::default()
    }
}

/// "HOST:PORT (WHY)" from TCPStore's "failed to connect/validate to host HOST:PORT - ...: WHY".
fn ex_store_client_name_unresolved(line: &str, lower: &str) -> Extract {
    let key = "validate to host ";
    let address = lower.find(key).and_then(|i| {
        let rest = &line[i + key.len()..];
        let end = rest.find(" - ").unwrap_or(rest.len());
        let a = rest[..end].trim();
        (!a.is_empty()).then(|| a.to_owned())
    });
    let why = [
        "name or service not known",
        "temporary failure in name resolution",
        "nodename nor servname provided, or not known",
        "no address associated with hostname",
    ]
    .iter()
    .find_map(|w| lower.find(w).map(|i| line[i..i + w.len()].to_owned()));
    unresolved_address(address, why)
}

/// The scheduler's reasons after "nodes are available: " ("4 Insufficient nvidia.com/gpu").
fn ex_pod_unschedulable(line: &str, lower: &str) -> Extract {
    let key = "nodes are available: ";
    Extract {
        detail: lower
            .find(key)
            .map(|i| sanitize(line[i + key.len()..].trim().trim_end_matches('.'), 120)),
        ..Extract::default()
    }
}

fn ex_rendezvous(line: &str, lower: &str) -> Extract {
    let mut ex = Extract::default();
    if let Some(i) = lower.find(" clients joined") {
        let before = &lower[..i];
        let token = before.rsplit(' ').next().unwrap_or("");
        if let Some((joined, total)) = token.split_once('/') {
            if let (Some(j), Some(t)) = (leading_number(joined), leading_number(total)) {
                ex.detail = Some(format!("only {j} of {t} ranks joined the store"));
                ex.expected_world = rank_number(t);
            }
        }
    } else if let Some(i) = lower.find(" never arrived") {
        let before = &lower[..i];
        let seg = before.rsplit(": ").next().unwrap_or(before);
        if let Some((ranks, total)) = seg.rsplit_once(" of ") {
            ex.subjects = numbers(ranks);
            ex.expected_world = leading_number(total).and_then(rank_number);
        }
        let start = i.saturating_sub(seg.len());
        ex.detail = Some(phrase(line, start, 120));
    } else if let Some(i) = lower.find("timed out after") {
        ex.detail = Some(phrase(line, i, 120));
    }
    ex
}

fn ex_unique_id_wait(_: &str, lower: &str) -> Extract {
    let waiting = lower
        .split_once("] is setting up nccl communicator")
        .and_then(|(before, _)| before.rsplit('[').next())
        .and_then(leading_number);
    Extract {
        subjects: waiting.and_then(rank_number).into_iter().collect(),
        detail: Some(format!(
            "{} waited for rank 0's NCCL unique id, which rank 0 publishes when it reaches the \
             group's first collective: rank 0 had not reached it within the timeout (still \
             preprocessing or loading before it, or dead)",
            waiting.map_or("a rank".to_owned(), |r| format!("rank {r}"))
        )),
        ..Extract::default()
    }
}

fn ex_unique_id_store_gone(_: &str, lower: &str) -> Extract {
    let from = lower
        .replace("retreiving", "retrieving")
        .split_once("retrieving nccluniqueid from [")
        .and_then(|(_, rest)| leading_number(rest))
        .and_then(rank_number)
        .unwrap_or(0);
    Extract {
        subjects: vec![from],
        detail: Some(format!(
            "the store went away while a rank waited in it for rank {from}'s NCCL unique id: the \
             store lives in rank 0's process (in torchrun's agent under torchrun), so rank 0 or \
             its node stopped first; read rank 0's log for why"
        )),
        ..Extract::default()
    }
}

fn ex_rendezvous_closed(_: &str, _: &str) -> Extract {
    Extract {
        detail: Some(
            "this node's agent found the job's rendezvous closed: another node's agent closed it \
             when it stopped (its workers failed and no restarts were left, or it was \
             interrupted), or the job had already finished; read the other nodes' logs"
                .to_owned(),
        ),
        ..Extract::default()
    }
}

fn ex_main_process_first(_: &str, _: &str) -> Extract {
    Extract {
        detail: Some(
            "a traceback goes through main_process_first: the other ranks wait in its barrier \
             while the main process runs the block (dataset map or tokenization); a block longer \
             than the process group's timeout (30 min by default) times the barrier out"
                .to_owned(),
        ),
        ..Extract::default()
    }
}

fn ex_store_barrier(_: &str, lower: &str) -> Extract {
    let world = num_after(lower, "world_size=");
    let joined =
        num_after(lower, "worker_count=").or_else(|| num_after(lower, "num_workers_joined="));
    let mut ex = Extract::default();
    if let (Some(w), Some(j)) = (world, joined) {
        ex.expected_world = rank_number(w);
        if j > w {
            // More arrived than the group has: two jobs (or launches) share the store.
            ex.category = Some(Category::WorldSizeMismatch);
            ex.detail = Some(format!(
                "{j} ranks reached the start-up barrier of a group of {w}: two launches share \
                 one store (the same MASTER_ADDR:MASTER_PORT), or the ranks disagree on the size"
            ));
        } else {
            ex.detail = Some(format!(
                "only {j} of {w} ranks reached the start-up barrier"
            ));
        }
    }
    ex
}

fn ex_mismatch(line: &str, lower: &str) -> Extract {
    // gloo's `pair.cc`: "op.preamble.length <= op.nbytes. 1024 vs 1000": the length a peer's
    // message announced is more than this rank's receive expects.
    let key = "op.preamble.length <= op.nbytes. ";
    if let Some(i) = lower.find(key) {
        let rest = &lower[i + key.len()..];
        let sent = leading_number(rest);
        let posted = rest
            .find(" vs ")
            .and_then(|j| leading_number(&rest[j + 4..]));
        if let (Some(sent), Some(posted)) = (sent, posted) {
            return Extract {
                subjects: rank_mentions(lower),
                detail: Some(format!(
                    "a peer's message was larger than this rank's collective expected ({sent} vs \
                     {posted}): the same collective with different sizes or element types on different ranks"
                )),
                ..Extract::default()
            };
        }
    }
    let seq = num_after(lower, "collective mismatch at seq ")
        .or_else(|| num_after(lower, "sequencenumber="))
        .or_else(|| num_after(lower, "seq "));
    let detail = lower
        .find("rank ")
        .map(|i| phrase(line, i, 160))
        .or_else(|| seq.map(|s| format!("at seq {s}")));
    Extract {
        subjects: rank_mentions(lower),
        detail,
        ..Extract::default()
    }
}

/// What DDP's model check says differs: the parameter counts ("rank 0 has 6 parameters,
/// rank 1 has 8") or the first parameter whose sizes or strides differ from rank 0's.
fn ex_model_differs(line: &str, lower: &str) -> Extract {
    let mut ex = Extract {
        subjects: rank_mentions(lower),
        ..Extract::default()
    };
    if let (Some(i), Some(mine), Some(j)) = (
        lower.find("but rank "),
        num_after(lower, " has "),
        lower.find("while rank "),
    ) {
        let me = num_after(&lower[i..], "but rank ");
        let other = num_after(&lower[j..], "while rank ");
        let theirs = num_after(&lower[j..], "inconsistent ");
        if let (Some(me), Some(other), Some(theirs)) = (me, other, theirs) {
            ex.detail = Some(format!(
                "rank {me} has {mine} parameter tensors, rank {other} has {theirs}"
            ));
        }
    } else if let Some(i) = lower.find("params[").or_else(|| lower.find("replicas[0][")) {
        let which = if lower.contains("match strides") {
            "strides"
        } else {
            "sizes"
        };
        let sizes = lower
            .find(" with sizes ")
            .and_then(|k| {
                let rest = line.get(k + " with sizes ".len()..)?;
                rest.find(']').map(|e| rest[..=e].to_owned())
            })
            .unwrap_or_default();
        let param: String = line
            .get(i..)
            .unwrap_or("")
            .chars()
            .take_while(|c| !c.is_whitespace())
            .collect();
        // "[1]: params[0] ..." names the rank that checked; DDP compares with rank 0.
        let rank = lower[..i]
            .rfind('[')
            .and_then(|b| leading_number(&lower[b + 1..]));
        let on = rank.map(|r| format!(" on rank {r}")).unwrap_or_default();
        ex.detail = Some(match (which, sizes.is_empty()) {
            (_, true) => format!("{param}{on} differs in its {which} from rank 0's"),
            ("sizes", false) => format!("{param} has sizes {sizes}{on}, other sizes on rank 0"),
            _ => format!("{param} (sizes {sizes}){on} has other strides than on rank 0"),
        });
        if let Some(r) = rank.and_then(rank_number) {
            if !ex.subjects.contains(&r) {
                ex.subjects.push(r);
            }
        }
    }
    ex
}

/// The CUDA failure NCCL's shared-memory transport reported.
fn ex_nccl_shm_cuda_failure(line: &str, lower: &str) -> Extract {
    let what = lower
        .find("cuda failure")
        .and_then(|i| line.get(i..))
        .map(|rest| sanitize(rest.trim(), 100))
        .unwrap_or_else(|| "a CUDA call failed".to_owned());
    Extract {
        detail: Some(format!(
            "NCCL's shared-memory transport (shm.cc) failed a CUDA call setting up the buffers \
             a node's ranks share: {what}"
        )),
        ..Extract::default()
    }
}

/// The NCCL_ALGO / NCCL_PROTO settings NCCL names when no algorithm fits a call.
fn ex_nccl_algo_setting(line: &str, lower: &str) -> Extract {
    let mut parts = Vec::new();
    for key in ["nccl_algo was set to ", "nccl_proto was set to "] {
        if let Some(i) = lower.find(key) {
            let value: String = line
                .get(i + key.len()..)
                .unwrap_or("")
                .chars()
                .take_while(|c| !c.is_whitespace())
                .collect();
            let value = value.trim_end_matches('.');
            if !value.is_empty() {
                let name = if key.starts_with("nccl_algo") {
                    "NCCL_ALGO"
                } else {
                    "NCCL_PROTO"
                };
                parts.push(format!("{name}={}", sanitize(value, 40)));
            }
        }
    }
    let what = lower
        .find("for function ")
        .and_then(|i| line.get(i + "for function ".len()..))
        .map(|rest| rest.split('.').next().unwrap_or(rest))
        .map(|f| format!("no NCCL algorithm fits {}", sanitize(f.trim(), 60)))
        .unwrap_or_else(|| "no NCCL algorithm fits the call".to_owned());
    Extract {
        detail: Some(if parts.is_empty() {
            what
        } else {
            format!("{what} with {} set", parts.join(", "))
        }),
        ..Extract::default()
    }
}

/// Megatron's count of a bucket's parameters that have their gradient ("(37/40 params have
/// grad available)").
fn ex_megatron_bucket_not_issued(_: &str, lower: &str) -> Extract {
    let mut ex = Extract::default();
    let count = lower.find(" params have grad available").and_then(|end| {
        let open = lower[..end].rfind('(')?;
        let (have, of) = lower[open + 1..end].split_once('/')?;
        Some((
            have.trim().parse::<u64>().ok()?,
            of.trim().parse::<u64>().ok()?,
        ))
    });
    if let Some((have, of)) = count {
        ex.detail = Some(if have < of {
            format!(
                "{} of the bucket's {of} parameters had no gradient",
                of - have
            )
        } else {
            format!(
                "all {of} of the bucket's parameters had a gradient, but not as many as in the \
                 first batch (a parameter used a different number of times)"
            )
        });
    }
    ex
}

fn ex_unused(line: &str, lower: &str) -> Extract {
    let mut ex = Extract::default();
    for key in [
        "did not receive grad for rank ",
        "did not receive a gradient for rank ",
    ] {
        if let Some(r) = num_after(lower, key) {
            if let Some(r) = rank_number(r) {
                ex.subjects.push(r);
            }
        }
    }
    for key in ["did not receive grad", "did not receive a gradient"] {
        if let Some(i) = lower.find(key) {
            if let Some(colon) = lower[i..].find(": ") {
                let what = phrase(line, i + colon + 2, 120);
                if !what.is_empty() {
                    ex.detail = Some(format!("no gradient for: {what}"));
                }
            }
            break;
        }
    }
    ex
}

/// The parameter PyTorch names in "Parameter at index 1 with name l.bias has been marked as
/// ready twice".
fn ex_ready_twice(line: &str, lower: &str) -> Extract {
    let mut ex = Extract::default();
    if let (Some(i), Some(end)) = (
        lower.find(" with name "),
        lower.find(" has been marked as ready twice"),
    ) {
        let name = line[i + " with name ".len()..end].trim();
        if !name.is_empty() && end > i {
            ex.detail = Some(format!("parameter {}", sanitize(name, 80)));
        }
    }
    ex
}

fn ex_nccl_rings(_: &str, _: &str) -> Extract {
    Extract {
        detail: Some(
            "the rings NCCL assembled from every rank's graph search do not close: the ranks \
             searched differently (different NCCL releases or NCCL_* settings on some nodes, a \
             topology or graph file made for another machine)"
                .to_owned(),
        ),
        ..Extract::default()
    }
}

fn ex_watchdog(line: &str, lower: &str) -> Extract {
    let mut parts = Vec::new();
    if let Some(i) = lower.find("optype=") {
        let op: String = line[i + 7..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !op.is_empty() {
            parts.push(op);
        }
    }
    if let Some(seq) = num_after(lower, "seqnum=") {
        parts.push(format!("SeqNum={seq}"));
    }
    if let Some(ms) = num_after(lower, "ran for ") {
        parts.push(format!("ran for {ms} ms"));
    }
    if let Some(t) = num_after(lower, "timeout(ms)=") {
        parts.push(format!("(timeout {t} ms)"));
    }
    Extract {
        detail: (!parts.is_empty()).then(|| parts.join(" ")),
        ..Extract::default()
    }
}

fn ex_collective_timeout(line: &str, lower: &str) -> Extract {
    let mut ex = Extract::default();
    for key in ["still waiting for ", "waiting for "] {
        if let Some(i) = lower.find(key) {
            let rest = &lower[i + key.len()..];
            if rest.starts_with("rank") {
                let end = rest.find(" in ").unwrap_or(rest.len());
                ex.subjects = rank_mentions(&rest[..end]);
                break;
            }
        }
    }
    let seq = num_after(lower, " seq ");
    let op = lower.find(" in ").map(|i| {
        line[i + 4..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect::<String>()
    });
    ex.detail = match (op, seq) {
        (Some(op), Some(seq)) if !op.is_empty() => Some(format!("{op} seq {seq}")),
        (_, Some(seq)) => Some(format!("seq {seq}")),
        _ => None,
    };
    ex
}

fn ex_gpu_library_setup(_: &str, lower: &str) -> Extract {
    let what = if lower.contains("cudnn") {
        "cuDNN found no convolution algorithm it could run: each one it tried failed, most often \
         for lack of GPU memory for its workspace"
    } else {
        "cuBLAS could not create its handle: most often the GPU's memory was full (its \
         workspace did not fit)"
    };
    Extract {
        detail: Some(format!(
            "{what}; an earlier kernel's fault (an index out of range in an embedding) leaves \
             the same words, which CUDA_LAUNCH_BLOCKING=1 tells apart"
        )),
        ..Extract::default()
    }
}

fn ex_kernel_crash(line: &str, lower: &str) -> Extract {
    let detail = if lower.contains("hardware memory corruption") {
        "the kernel sent SIGBUS for a hardware memory error under the process (a failing \
         memory module): the node's hardware, not /dev/shm; take the node out of service"
            .to_owned()
    } else if let Some(i) = lower.find("segfault at ") {
        // "... error 4 in libtorch_cuda.so[7f3a+1000]": the library the fault was in.
        let library = lower[i..]
            .find(" in ")
            .map(|j| i + j + 4)
            .and_then(|j| line[j..].split(['[', ' ']).next())
            .filter(|l| !l.is_empty());
        match library {
            Some(l) => format!("the kernel's record of a segmentation fault (SIGSEGV) in {l}"),
            None => "the kernel's record of a segmentation fault (SIGSEGV)".to_owned(),
        }
    } else {
        "the kernel's record of a process killed by a native crash (a trap, an abnormal end, a \
         core dump)"
            .to_owned()
    };
    Extract {
        detail: Some(detail),
        ..Extract::default()
    }
}

fn ex_store_unreachable(line: &str, lower: &str) -> Extract {
    // The last address named: c10d's summary ("failed to connect to any network address of
    // (host-a, 9901).") comes before the address it tried.
    let key = "failed to connect to ";
    let address = lower.rfind(key).and_then(|i| {
        line[i + key.len()..]
            .split_whitespace()
            .next()
            .map(|a| a.trim_end_matches(['.', ',']).to_owned())
    });
    Extract {
        detail: address
            .filter(|a| !a.is_empty() && a != "any")
            .map(|a| format!("no route from this node to the store at {a}")),
        ..Extract::default()
    }
}

/// The rank and the exception of a completion hook that raised ("Caught exception on rank 3
/// while running onCompletion hook for ProcessGroupNCCL: TypeError: ...").
fn ex_completion_hook(line: &str, lower: &str) -> Extract {
    let subjects = num_after(lower, "caught exception on rank ")
        .and_then(rank_number)
        .into_iter()
        .collect();
    let raised =
        phrase_after(line, lower, "oncompletion hook for processgroupnccl: ", 120).map(|e| {
            e.trim_end_matches(". aborting all communicators.")
                .to_owned()
        });
    Extract {
        subjects,
        detail: raised.map(|e| format!("the program's completion hook raised {e}")),
        ..Extract::default()
    }
}

fn ex_peer_closed(line: &str, lower: &str) -> Extract {
    let Some(i) = lower.find(" closed its connection") else {
        return Extract::default();
    };
    let before = &lower[..i];
    let subjects = before
        .rsplit_once("rank ")
        .and_then(|(_, n)| leading_number(n))
        .and_then(rank_number)
        .into_iter()
        .collect::<Vec<_>>();
    let start = before.rfind("rank ").unwrap_or(i);
    let end = lower[start..]
        .find("; it probably")
        .map_or(line.len(), |e| start + e);
    Extract {
        subjects,
        detail: Some(phrase(&line[..end], start, 120)),
        ..Extract::default()
    }
}

/// The rank a RAS MISMATCH line names ("Rank 11 has launched up to operation 5631 -- ...").
fn ex_ras_rank_behind(line: &str, lower: &str) -> Extract {
    rank_and_phrase_after(line, lower, "rank ")
}

fn ex_peer_io(line: &str, lower: &str) -> Extract {
    rank_and_phrase_after(line, lower, "i/o error with rank ")
}

/// The rank number after `key` as the subject, and the phrase from `key` on as the detail.
fn rank_and_phrase_after(line: &str, lower: &str, key: &str) -> Extract {
    let at = lower.find(key);
    Extract {
        subjects: num_after(lower, key)
            .and_then(rank_number)
            .into_iter()
            .collect(),
        detail: at.map(|i| phrase(line, i, 120)),
        ..Extract::default()
    }
}

/// The number at the start of `s` (after spaces).
pub(crate) fn leading_number(s: &str) -> Option<u64> {
    let s = s.trim_start();
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    s[..end].parse().ok()
}

/// The number after the first occurrence of `key` (spaces, `:`, `=`, `[`
/// skipped).
pub(crate) fn num_after(lower: &str, key: &str) -> Option<u64> {
    let i = lower.find(key)?;
    let rest = lower[i + key.len()..].trim_start_matches([' ', ':', '=', '[', '#']);
    leading_number(rest)
}

/// The signed number right after `key` (the watchdog prints -1 for "none").
pub(crate) fn signed_after(lower: &str, key: &str) -> Option<i64> {
    let rest = &lower[lower.find(key)? + key.len()..];
    let (negative, digits) = match rest.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, rest),
    };
    let n: i64 = digits
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .ok()?;
    Some(if negative { -n } else { n })
}

/// Every number in `s`, in order.
fn numbers(s: &str) -> Vec<usize> {
    s.split(|c: char| !c.is_ascii_digit())
        .filter_map(|t| t.parse().ok().and_then(rank_number))
        .collect()
}

/// The highest number read as a rank or a count of ranks: 2^20, beyond any job run so far. A
/// larger number where a rank belongs is paste damage (the digits of two lines run together),
/// and the loops over a job's ranks must not run to it: a fuzzed log whose joined lines read
/// "rank 122222222222" took 24 GB counting the ranks that did not time out.
pub(crate) const MAX_RANK: u64 = 1 << 20;

/// A number read where a rank or a count of ranks belongs, when it can be one ([`MAX_RANK`]).
pub(crate) fn rank_number(n: u64) -> Option<usize> {
    usize::try_from(n).ok().filter(|_| n <= MAX_RANK)
}

/// The ranks named in a line: `rank 1`, `rank1`, `Rank 1`, `ranks 2, 3`,
/// `ranks 2 and 3`, in order of appearance, without repeats. A `rank` that is
/// part of a word (`nranks`, `localRank`) does not count.
pub(crate) fn rank_mentions(lower: &str) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    let bytes = lower.as_bytes();
    let mut from = 0;
    while let Some(pos) = lower[from..].find("rank") {
        let i = from + pos;
        from = i + 4;
        if i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_') {
            continue;
        }
        let mut rest = &lower[i + 4..];
        let plural = rest.starts_with('s');
        if plural {
            rest = &rest[1..];
        }
        if rest.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
            continue;
        }
        let rest = rest.trim_start_matches([' ', '[', ':', '=']);
        let mut push = |n: u64| {
            if let Some(n) = rank_number(n) {
                if !out.contains(&n) {
                    out.push(n);
                }
            }
        };
        let Some(first) = leading_number(rest) else {
            continue;
        };
        push(first);
        if plural {
            // "ranks 2, 3 and 5 of 8": take the list up to the first word
            // other than "and".
            let mut tail = rest.trim_start_matches(|c: char| c.is_ascii_digit());
            loop {
                let t = tail.trim_start_matches([',', ' ']);
                let t = t.strip_prefix("and ").unwrap_or(t);
                match leading_number(t) {
                    Some(n) if t.starts_with(|c: char| c.is_ascii_digit()) => {
                        push(n);
                        tail = t.trim_start_matches(|c: char| c.is_ascii_digit());
                    }
                    _ => break,
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cat(line: &str) -> Option<Category> {
        classify(line).map(|(r, ex)| ex.category.unwrap_or(r.category))
    }

    /// Asserts that `line` reads as `category`, by the rule named `rule`.
    fn assert_read_as(line: &str, category: Category, rule: &str) {
        assert_eq!(cat(line), Some(category), "{line}");
        assert_eq!(classify(line).map(|(r, _)| r.name), Some(rule), "{line}");
    }

    /// A wait for rank 0's NCCL unique id that ends because the store went away names rank 0;
    /// one that times out names the waiting rank; a closed rendezvous is another node's doing.
    #[test]
    fn a_store_gone_during_the_unique_id_wait_names_rank_0() {
        let gone = "torch.distributed.DistBackendError: [1] is setting up NCCL communicator and \
                    retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but \
                    store->get('0') got error: Connection reset by peer";
        let (rule, ex) = classify(gone).unwrap();
        assert_eq!(
            (rule.name, rule.role),
            ("nccl_unique_id_store_gone", Role::Consequence)
        );
        assert_eq!(ex.subjects, vec![0]);
        let timed_out = gone.replace("Connection reset by peer", "Socket Timeout");
        let (rule, ex) = classify(&timed_out).unwrap();
        assert_eq!(rule.name, "nccl_unique_id_wait");
        assert_eq!(ex.subjects, vec![1]);
        let (rule, _) =
            classify("torch.distributed.elastic.rendezvous.api.RendezvousClosedError").unwrap();
        assert_eq!(
            (rule.name, rule.category),
            ("rendezvous_closed", Category::RankCrashed)
        );
    }

    /// An aborted communicator's line is read for the original reason it carries.
    #[test]
    fn an_aborted_communicator_is_read_for_its_original_reason() {
        let aborted = "RuntimeError: NCCL communicator was aborted on rank 1. Original reason for \
                       failure was: NCCL error: unhandled system error, NCCL version 2.14.3";
        assert_eq!(cat(aborted), Some(Category::NcclInternalOrUnsupported));
        // A reason that is itself a consequence leaves the line one.
        let (rule, _) = classify(
            "RuntimeError: NCCL communicator was aborted on rank 1. Original reason for failure \
             was: Connection reset by peer",
        )
        .unwrap();
        assert_eq!((rule.name, rule.role), ("peer_gone", Role::Consequence));
    }

    /// torchelastic's line for a failed worker, read for its exit code.
    #[test]
    fn torchelastic_s_failed_worker_line_names_the_signal() {
        let line = |code: &str| {
            format!(
                "E1214 08:06:55.807000 100 torch/distributed/elastic/multiprocessing/api.py:869] \
                 failed (exitcode: {code}) local_rank: 0 (pid: 102) of binary: /usr/bin/python3"
            )
        };
        let (rule, ex) = classify(&line("-11")).unwrap();
        assert_eq!(
            (rule.name, rule.category),
            ("elastic_worker_failed", Category::RankCrashed)
        );
        assert!(ex.detail.unwrap().contains("SIGSEGV"));
        assert!(classify(&line("-6"))
            .unwrap()
            .1
            .detail
            .unwrap()
            .contains("what():"));
        assert!(classify(&line("1"))
            .unwrap()
            .1
            .detail
            .unwrap()
            .contains("exited with code 1"));
        // SIGKILL keeps its own reading; a stop from outside is not a crash.
        assert_eq!(classify(&line("-9")).unwrap().0.name, "sigkill_exit");
        assert_ne!(
            classify(&line("-15")).map(|(r, _)| r.name),
            Some("elastic_worker_failed")
        );
    }

    /// PyTorch on ROCm words its CUDA checks for HIP.
    #[test]
    fn hip_errors_are_cuda_errors() {
        for line in [
            "RuntimeError: HIP error: invalid device function",
            "\"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!\"",
        ] {
            assert_eq!(cat(line), Some(Category::CudaError), "{line}");
        }
    }

    /// CUDA's cudaErrorDevicesUnavailable as PyTorch prints it before and after CUDA 12, and
    /// the old THC form: a second process on a GPU in exclusive-process mode.
    #[test]
    fn a_gpu_busy_or_unavailable_is_a_second_process_on_it() {
        for line in [
            "RuntimeError: CUDA error: all CUDA-capable devices are busy or unavailable",
            "[rank0]: RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable",
            "THCudaCheck FAIL file=THCStorage.cu line=66 error=46 : all CUDA-capable devices are \
             busy or unavailable",
        ] {
            let (rule, ex) = classify(line).unwrap();
            assert_eq!(
                (rule.name, rule.category),
                ("cuda_devices_unavailable", Category::DuplicateGpu),
                "{line}"
            );
            assert!(ex.detail.unwrap().contains("exclusive-process mode"));
        }
    }

    #[test]
    fn rule_names_are_unique() {
        let mut names: Vec<&str> = RULES.iter().map(|r| r.name).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n);
    }

    #[test]
    fn the_rules_named_in_code_exist() {
        for name in [
            NO_USABLE_GPU_RULE,
            DATALOADER_WORKER_KILLED_RULE,
            DDP_MODEL_DIFFERS_RULE,
        ]
        .iter()
        .chain(OOM_REPORT_RULES)
        .chain(PROGRAM_MISTAKES.iter().map(|m| &m.rule))
        {
            // The rules of `shell_report` stand outside the needle list.
            let shell = [
                &SHELL_KILLED,
                &SHELL_BUS_ERROR,
                &SHELL_SEGFAULT,
                &CONTAINER_OOM_KILLED,
            ];
            assert!(RULES.iter().chain(shell).any(|r| r.name == *name), "{name}");
        }
    }

    /// DDP's check of the model across ranks (`reducer.cpp`, as PyTorch 2.13 prints it on
    /// a 2-rank job whose rank 1 builds one more layer, and the sizes form of the same check).
    #[test]
    fn an_nccl_algorithm_setting_that_fits_no_call_is_a_configuration_error() {
        // NCCL 2.26's words (enqueue.cc) with NCCL_ALGO=NVLS left in the environment.
        let (rule, ex) = classify(
            "Error : no algorithm/protocol available for function Broadcast with datatype \
             ncclInt8. NCCL_ALGO was set to NVLS.",
        )
        .unwrap();
        assert_eq!(rule.category, Category::NcclInternalOrUnsupported);
        assert_eq!(
            ex.detail.as_deref(),
            Some("no NCCL algorithm fits Broadcast with datatype ncclInt8 with NCCL_ALGO=NVLS set")
        );
    }

    #[test]
    fn the_desync_reports_lagging_ranks_are_the_ones_waited_for() {
        // PyTorch's words (TraceUtils.h, analyzeLaggingRanks / analyzeMissingRanks).
        let (rule, ex) = classify(
            "     [1] finished collective #2, but didn't join collective #3 (count from 1)",
        )
        .unwrap();
        assert_eq!(rule.category, Category::CollectiveTimeout);
        assert_eq!(ex.subjects, vec![1]);
        assert_eq!(
            ex.detail.as_deref(),
            Some(
                "PyTorch's desync report: rank 1 finished collective #2 and never joined #3, the \
                 one the others waited in"
            )
        );
        let (_, ex) = classify(
            "[rank0]:  - To our best knowledge, ranks [2, 3] are the lagging ranks that caused \
             this timeout. They never joined any collectives",
        )
        .unwrap();
        assert_eq!(ex.subjects, vec![2, 3]);
    }

    #[test]
    fn gloo_size_check_says_both_sizes() {
        // A 2-rank gloo all_reduce of 1000 floats on rank 0 and 1024 on rank 1 (PyTorch 2.13).
        let (rule, ex) = classify(
            "  what():  [enforce fail at /__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/\
             pair.cc:456] op.preamble.length <= op.nbytes. 1024 vs 1000. Received data size \
             doesn't match expected size. Is there a distributed collective mismatch in your code?",
        )
        .unwrap();
        assert_eq!(rule.category, Category::CollectiveMismatch);
        assert_eq!(
            ex.detail.as_deref(),
            Some(
                "a peer's message was larger than this rank's collective expected (1024 vs \
                 1000): the same collective with different sizes or element types on different ranks"
            )
        );
    }

    #[test]
    fn ddp_model_check_says_what_differs() {
        let (rule, ex) = classify(
            "[rank0]: RuntimeError: DDP expects same model across all ranks, but Rank 0 has 6 \
             params, while rank 1 has inconsistent 8 params.",
        )
        .unwrap();
        assert_eq!(rule.name, DDP_MODEL_DIFFERS_RULE);
        assert_eq!(rule.category, Category::CollectiveMismatch);
        assert_eq!(
            ex.detail.as_deref(),
            Some("rank 0 has 6 parameter tensors, rank 1 has 8")
        );
        let (rule, ex) = classify(
            "RuntimeError: [1]: params[0] in this process with sizes [96, 32] appears not to \
             match sizes of the same param in process 0.",
        )
        .unwrap();
        assert_eq!(rule.name, DDP_MODEL_DIFFERS_RULE);
        assert_eq!(
            ex.detail.as_deref(),
            Some("params[0] has sizes [96, 32] on rank 1, other sizes on rank 0")
        );
        assert_eq!(ex.subjects, vec![1]);
        let (_, ex) = classify(
            "RuntimeError: params[3] in this process with sizes [8, 4, 3, 3] appears not to \
             match strides of the same param in process 0.",
        )
        .unwrap();
        assert_eq!(
            ex.detail.as_deref(),
            Some("params[3] (sizes [8, 4, 3, 3]) has other strides than on rank 0")
        );
    }

    #[test]
    fn a_network_nccl_was_told_to_use_and_could_not_load_is_the_rdma_network() {
        let (rule, ex) =
            classify("host-a:77:77 [0] net.cc:605 NCCL WARN Error: network IB not found.").unwrap();
        assert_eq!(rule.name, "nccl_net_not_found");
        assert!(classify("Error: network config file not found")
            .is_none_or(|(r, _)| r.name != "nccl_net_not_found"));
        assert_eq!(rule.category, Category::Infiniband);
        assert!(ex.detail.unwrap().starts_with("NCCL_NET=IB asks for"));
        let (rule, _) = classify(
            "host-a:1:1 [0] plugin/net.cc:306 NCCL WARN Failed to initialize any NET plugin",
        )
        .unwrap();
        assert_eq!(rule.name, RULE_NCCL_NET_PLUGIN_FAILED);
        assert_eq!(
            cat(
                "host-a:1:1 [0] NCCL WARN NET/OFI Couldn't register memory region with regattr. \
                 RC: -38, ERROR: Function not implemented"
            ),
            Some(Category::NcclInternalOrUnsupported)
        );
        assert_eq!(
            cat(
                "host-a:1:1 [0] NCCL WARN NET/OFI Couldn't create domain. RC: -12, ERROR: \
                 Cannot allocate memory"
            ),
            Some(Category::Infiniband)
        );
        // cuBLAS's allocation failure is the GPU's memory (NVIDIA's documentation of the status);
        // its NOT_INITIALIZED at the handle's creation, which the documentation gives other
        // causes too, is the GPU's memory at medium confidence (`RULE_GPU_LIBRARY_SETUP_FAILED`:
        // the maintainers' usual answer); elsewhere it stays a CUDA error.
        assert_eq!(
            cat("RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`"),
            Some(Category::CudaOom)
        );
        assert_eq!(
            cat("RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`"),
            Some(Category::CudaOom)
        );
        assert_eq!(
            cat("RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasSgemm( handle, opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`"),
            Some(Category::CudaError)
        );
        // A store client whose ping came back wrong reached another program on the port; a
        // later release's wording of the store's wait timing out.
        let (ping, _) = classify(
            "[W TCPStore.cpp:384] [c10d] TCP client failed to connect/validate to host \
             host-a:29500 - retrying (try=1, timeout=1800000ms, delay=2874ms): Ping failed, \
             invalid value returned from server. Expected: 3058192, Got: 759714643",
        )
        .unwrap();
        assert_eq!(ping.name, RULE_STORE_PING_MISMATCH);
        assert_eq!(ping.category, Category::PortInUse);
        assert_eq!(
            cat(
                "[c10d] waitForInput: poll for socket SocketImpl(fd=5, addr=[host-b]:41234, \
                 remote=[host-a]:29500) returned 0, likely a timeout"
            ),
            Some(Category::RendezvousTimeout)
        );
        assert_eq!(
            cat(
                "[c10d] waitForInput: poll for socket SocketImpl(fd=5, addr=[host-b]:41234, \
                 remote=[host-a]:29500) failed with res=-1, err=(errno: 9 - Bad file descriptor)"
            ),
            None
        );
        // torch.distributed's own checks of a layout against the world size.
        for line in [
            "ValueError: The arg 'group_size' (16) must not exceed the world size (8)",
            "ValueError: The world size must be divisible by 'group_size'",
            "ValueError: the new group's world size should be less or equal to the world size \
             set by init_process_group",
            "ValueError: the split group's size should be less or equal to the world_size set by \
             init_process_group",
            "RuntimeError: DeviceMesh only support homogeneous hardware, but found 12 ranks and 8 \
             cuda devices!",
            // Meta's Llama and TensorRT-LLM, as their sources word them.
            "AssertionError: Loading a checkpoint for MP=2 but world size is 1",
            "AssertionError: Engine world size (2) != Runtime world size (1)",
            "RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: mpiSize == tp * pp \
             (/path/to/worldConfig.cpp:90)",
            "RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: MPI size 1 != TP size 4 * PP \
             size 1 (/path/to/worldConfig.cpp:94)",
            // GPT-NeoX's, as its source words it.
            "AssertionError: NeoXArgs.calculate_derived() (global_num_gpus / pp_size) / mp_size \
             [(6 / 2) / 2] must be a whole number",
        ] {
            assert_eq!(cat(line), Some(Category::WorldSizeMismatch), "{line}");
        }
        // An error worded as a check of the world size that no rule names reads so at the end;
        // a timeout, a warning or a launcher's missing WORLD_SIZE does not.
        for line in [
            "AssertionError: MP size 2 != world size 1",
            "RuntimeError: expected world size 8 but got 4",
            "ValueError: tp_size * pp_size must equal world_size, got 4 and 8",
        ] {
            assert_eq!(
                classify(line).unwrap().0.name,
                RULE_WORLD_SIZE_CHECK_WORDED,
                "{line}"
            );
        }
        for line in [
            "RuntimeError: Timed out after 600 s: world_size 8 but only 4 joined",
            "UserWarning: world_size 8 does not match the number of GPUs 4",
            "ValueError: Error initializing torch.distributed using env:// rendezvous: \
             environment variable WORLD_SIZE expected, but not set",
        ] {
            assert!(
                classify(line).is_none_or(|(r, _)| r.name != RULE_WORLD_SIZE_CHECK_WORDED),
                "{line}"
            );
        }
        // accelerate's and DeepSpeed's words for the same causes.
        for (line, want) in [
            (
                "ConnectionError: Tried to launch distributed communication on port `29500`, but \
                 another process is utilizing it. Please specify a different port (such as using \
                 the `--main_process_port` flag or specifying a different `main_process_port` in \
                 your config file) and rerun your script.",
                Some(Category::PortInUse),
            ),
            (
                "ValueError: Your assigned backend nccl is not avaliable, please use gloo",
                Some(Category::NcclInternalOrUnsupported),
            ),
            // Its answer for another device's backend is the program's own choice.
            (
                "ValueError: Your assigned backend nccl is not available, please use hccl",
                None,
            ),
            (
                "AssertionError: MPI world size 8 does not match torch world size 1",
                Some(Category::WorldSizeMismatch),
            ),
            // Read only to tell an uneven-inputs finding that the program's Join did nothing;
            // never a finding of its own (tests/diagnosis.rs,
            // accelerates_join_warning_alone_is_no_finding).
            (
                "UserWarning: Joining uneven inputs is only supported for multi-GPU training, as \
                 a result `join_uneven_inputs` will have no effect.",
                Some(Category::UnevenInputs),
            ),
        ] {
            assert_eq!(cat(line), want, "{line}");
        }
        // Lightning's launcher on a rank it started that ended: its code read as torchelastic's.
        let child = |code: &str| {
            cat(&format!(
                "[rank: 2] Child process with PID 13117 terminated with code {code}. Forcefully \
                 terminating all other processes to avoid zombies 🧟"
            ))
        };
        assert_eq!(child("-9"), Some(Category::HostOomKilled));
        assert_eq!(child("-7"), Some(Category::ShmTooSmall));
        assert_eq!(child("-6"), Some(Category::RankCrashed));
        assert_eq!(child("1"), Some(Category::RankCrashed));
        assert_eq!(child("-15"), None);
        // torchelastic's failure table spaces its `exitcode` label as its template does.
        assert_eq!(
            cat("  exitcode  : -9 (pid: 12348)"),
            Some(Category::HostOomKilled)
        );
        assert_eq!(
            cat("  exitcode  : -7 (pid: 12348)"),
            Some(Category::ShmTooSmall)
        );
        assert_eq!(cat("  exitcode  : -97 (pid: 12348)"), None);
        // NCCL's mkstemp in /dev/shm failing (2.22 on) is /dev/shm's, like its other calls there.
        assert_eq!(
            cat(
                "host-a:1:2 [0] os/linux.cc:780 NCCL WARN Error: failed to create shared memory \
                 file /dev/shm/nccl-XXXXXX, error No space left on device (28)"
            ),
            Some(Category::ShmTooSmall)
        );
        // NCCL's NVLink pair whose peer-to-peer NVML reports off stops NCCL's set-up; the PCIe
        // pair's INFO line only says NCCL goes through host memory.
        let (nvlink, _) = classify(
            "host-a:3052669:3052713 [1] graph/paths.cc:396 NCCL WARN P2P is disabled between \
             NVLINK connected GPUs 1 and 0. This should not be the case given their \
             connectivity, and is probably due to a hardware issue. If you still want to \
             proceed, you can set NCCL_IGNORE_DISABLED_P2P=1.",
        )
        .unwrap();
        assert_eq!(nvlink.name, RULE_NCCL_NVLINK_P2P_DISABLED);
        assert_eq!(nvlink.category, Category::P2pHang);
        assert_eq!(
            cat(
                "host-a:1:2 [0] NCCL INFO P2P is disabled between connected GPUs 2 and 1. You can \
                 repress this message with NCCL_IGNORE_DISABLED_P2P=1."
            ),
            None
        );
        // A GPU buffer's registration refused with EINVAL: a version combination. The same
        // call out of memory (pinned-memory limits) stays the network's.
        let (refused, ex) = classify(
            "register_mr_buffers:544 NCCL WARN NET/OFI Unable to register memory (type = 2) for \
             device 0. RC: -22, Error: Invalid argument",
        )
        .unwrap();
        assert_eq!(refused.name, RULE_OFI_GPU_BUFFER_REFUSED);
        assert_eq!(refused.category, Category::NcclInternalOrUnsupported);
        assert!(ex.detail.unwrap().contains("invalid argument (RC -22)"));
        assert_eq!(
            cat(
                "host-a:1:1 [0] NCCL WARN NET/OFI Unable to register memory (type = 2) for \
                 device 0. RC: -12, Error: Cannot allocate memory"
            ),
            Some(Category::Infiniband)
        );
        assert_eq!(rule.category, Category::Infiniband);
        // PyTorch's words for a CUDA runtime that found no usable GPU.
        for line in [
            "RuntimeError: CUDA driver initialization failed, you might not have a CUDA gpu.",
            "RuntimeError: CUDA unknown error - this may be due to an incorrectly set up \
             environment, e.g. changing env variable CUDA_VISIBLE_DEVICES after program start. \
             Setting the available devices to be zero.",
            "RuntimeError: CUDA error: no CUDA-capable device is detected",
        ] {
            assert_eq!(classify(line).unwrap().0.name, NO_USABLE_GPU_RULE, "{line}");
        }
        // torch.cuda.is_available()'s warning is no failure of its own.
        assert!(classify(
            "torch/cuda/__init__.py:138: UserWarning: CUDA initialization: CUDA unknown error - \
             this may be due to an incorrectly set up environment, e.g. changing env variable \
             CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be zero."
        )
        .is_none_or(|(r, _)| r.name != NO_USABLE_GPU_RULE));
    }

    #[test]
    fn a_gloo_peer_at_a_loopback_address_is_its_host_name_mapped_to_loopback() {
        for line in [
            "RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/\
             tcp/pair.cc:144] timed out connecting: SO_ERROR: Connection refused, \
             remote=[127.0.1.1]:20901",
            "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:799] connect \
             [127.0.1.1]:48715: Connection refused",
        ] {
            let (rule, ex) = classify(line).unwrap();
            assert_eq!(rule.name, RULE_GLOO_PEER_LOOPBACK, "{line}");
            assert!(
                ex.detail.unwrap().contains("loopback address 127.0.1.1:"),
                "{line}"
            );
        }
        // Another address stays the mesh's own rule.
        let (rule, _) = classify(
            "RuntimeError: Gloo connectFullMesh failed with [pair.cc:144] timed out connecting: \
             SO_ERROR: Connection refused, remote=[10.0.0.2]:20901",
        )
        .unwrap();
        assert_eq!(rule.name, "gloo_peer_mesh");
    }

    #[test]
    fn vllms_and_sglangs_own_messages_read_from_their_sources() {
        use Category::*;
        // vLLM 0.34 and sglang 0.5.9, as their loggers and exceptions print them.
        for (line, want) in [
            (
                "(EngineCore_DP0 pid=311) ERROR 11-28 10:00:00 [multiproc_executor.py:404] \
                 Worker proc VllmWorker-1 died unexpectedly (exit code: -7), shutting down \
                 executor.",
                Some(ShmTooSmall),
            ),
            (
                "(EngineCore_DP0 pid=311) ERROR 11-28 10:00:00 [multiproc_executor.py:404] \
                 Worker proc VllmWorker-1 died unexpectedly (exit code: -11), shutting down \
                 executor.",
                Some(RankCrashed),
            ),
            (
                "ERROR 11-28 10:00:00 [ray_executor_v2.py:522] RayWorkerProc rank=[1] died \
                 unexpectedly, shutting down executor.",
                Some(RankCrashed),
            ),
            (
                "RuntimeError: Engine core initialization failed. See root cause above. Failed \
                 core proc(s): {'EngineCore_DP0': -9}",
                Some(HostOomKilled),
            ),
            (
                "RuntimeError: Insufficient space in /dev/shm for shared-memory allocation: 384 \
                 MiB required, 60 MiB free. Increase /dev/shm (e.g. --shm-size or --ipc=host).",
                Some(ShmTooSmall),
            ),
            (
                "ValueError: Free memory on device cuda:0 (30.12/79.19 GiB) on startup is less \
                 than desired GPU memory utilization (0.9, 71.27 GiB). Decrease GPU memory \
                 utilization or reduce GPU memory used by other processes.",
                Some(CudaOom),
            ),
            (
                "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. \
                 Current value: mem_fraction_static=0.88",
                Some(CudaOom),
            ),
            (
                "ValueError: World size (8) is larger than the number of available GPUs (4) in \
                 this node. If this is intentional and you are using:",
                Some(CudaError),
            ),
            (
                "RuntimeError: CUDART error: invalid argument",
                Some(CudaError),
            ),
            (
                "RuntimeError: Could not find open port after 1000 attempts starting from port \
                 29500",
                Some(PortInUse),
            ),
            (
                "ValueError: nccl_port at 30000 is not available in 30 seconds. nccl_port is \
                 used by a process already. Please try to increase --nccl-port.",
                Some(PortInUse),
            ),
            (
                "[2026-11-28 10:00:00] port 30000 is in use. Waiting for 15 seconds for \
                 nccl_port to be available. nccl_port is used by a process already.",
                None,
            ),
            (
                "ERROR 11-28 10:00:00 [server_args.py:5690] Port is already in use. \
                 dist_init_port=29500 nccl_port=29501",
                Some(PortInUse),
            ),
            (
                "RuntimeError: Neither 127.0.0.1 nor ::1 are bound to a local interface. Set \
                 the VLLM_LOOPBACK_IP environment variable explicitly.",
                Some(NetworkInterface),
            ),
            (
                "ValueError: rank 2 out of range for world_size 2",
                Some(WorldSizeMismatch),
            ),
            // Configuration checks that name a backend, no failure of it.
            (
                "ValueError: Flashinfer allreduce is not supported for multi-node allreduce \
                 with 'trtllm' backend. Please use 'mnnvl' backend instead.",
                None,
            ),
            // Warnings of a program that goes on without what failed.
            (
                "WARNING 11-28 10:00:00 [parallel_state.py:1948] Distributed backend nccl is \
                 not available; falling back to gloo.",
                None,
            ),
            (
                "(Worker_TP0 pid=4512) WARNING 11-28 10:00:00 [custom_all_reduce.py:430] MNNVL \
                 multimem reduce-scatter symmetric-memory allocation failed on at least one \
                 rank; falling back to NCCL.",
                None,
            ),
            (
                "WARNING 11-28 10:00:00 [flashinfer_all_reduce.py:108] Failed to initialize \
                 FlashInfer All Reduce workspace: CUDA error: operation not supported when \
                 creating multicast object. This is expected on GPUs without NVSwitch (e.g., \
                 NVLink bridge-only or PCIe topologies).",
                None,
            ),
            (
                "WARNING 11-28 10:00:00 [parallel.py:841] Address already in use. Retrying \
                 with a new port.",
                None,
            ),
            (
                "WARNING 11-28 10:00:00 [system_utils.py:281] Found ulimit of 1024 and failed \
                 to automatically increase with error current limit exceeds maximum limit. \
                 This can cause fd limit errors like `OSError: [Errno 24] Too many open \
                 files`. Consider increasing with ulimit -n",
                None,
            ),
            (
                "[2026-11-28 10:00:00 TP1] Setup Custom allreduce failed with CUDART error: \
                 peer access is not supported between these two devices. To silence this \
                 warning, specify --disable-custom-all-reduce explicitly.",
                None,
            ),
        ] {
            assert_eq!(cat(line), want, "{line}");
        }
        let (_, ex) = classify(
            "Worker proc VllmWorker-1 died unexpectedly (exit code: -11), shutting down \
             executor.",
        )
        .unwrap();
        assert!(
            ex.detail
                .as_deref()
                .is_some_and(|d| d.starts_with("vLLM reports VllmWorker-1 killed by signal 11")),
            "{:?}",
            ex.detail
        );
        let (_, ex) =
            classify("RayWorkerProc rank=[1] died unexpectedly, shutting down executor.").unwrap();
        assert_eq!(ex.subjects, vec![1]);
    }

    #[test]
    fn ray_torchx_and_network_plugin_messages_read_from_their_sources() {
        use Category::*;
        for (line, want) in [
            // Ray (2.60 and older) and Ray Train v2.
            (
                "ray._private.memory_monitor.RayOutOfMemoryError: More than 95% of the memory on \
                 node host-a is used (60.51 / 63.69 GB).",
                Some(HostOomKilled),
            ),
            (
                "(raylet) [2026-11-28 10:00:00,000 E 123 123] node_manager.cc:3049: 2 Workers \
                 (tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed due to \
                 other reasons at node (ID: 1f2e, IP: 10.0.0.1)",
                Some(HostOomKilled),
            ),
            (
                "(raylet) node_manager.cc:3049: 0 Workers (tasks / actors) killed due to memory \
                 pressure (OOM), 3 Workers crashed due to other reasons at node (ID: 1f2e)",
                None,
            ),
            (
                "ray.train.v2.api.exceptions.BroadcastCollectiveTimeoutError: The collective \
                 operation timed out after 1800.00 seconds. The following ranks have not joined \
                 the collective operation: [3]",
                Some(CollectiveTimeout),
            ),
            (
                "NCCLHangError: 2 of 8 communicators have a collective mismatch and made no \
                 progress for 600 seconds",
                Some(CollectiveTimeout),
            ),
            (
                "ray.train.PreemptionError: Training was interrupted by node preemption \
                 (preempted_ranks=[2, 3], preempted_nodes=['10.0.0.3'])",
                Some(LauncherInterrupted),
            ),
            (
                "ray.exceptions.ObjectLostError: Failed to retrieve object 00ff. All copies of \
                 00ff have been lost due to node failure. Check cluster logs for more \
                 information about the failure.",
                Some(RankCrashed),
            ),
            // TorchX's status of a Slurm job: sacct's states.
            ("  Msg: OUT_OF_MEMORY", Some(HostOomKilled)),
            ("  Msg: TIMEOUT", Some(LauncherInterrupted)),
            ("  Msg: PREEMPTED", Some(LauncherInterrupted)),
            // aws-ofi-nccl and NCCL's IB transport.
            (
                "host-a:4321:4380 [0] NCCL WARN NET/OFI cuMemcpyHtoDAsync failed: an illegal \
                 memory access was encountered",
                Some(CudaError),
            ),
            (
                "host-a:4321:4380 [0] NCCL INFO NET/OFI cuMemGetHandleForAddressRange failed \
                 with flags: 1, retrying with no flags",
                None,
            ),
            (
                "host-a:4321:4380 [0] NCCL INFO NET/OFI Failed to open gdr handle",
                None,
            ),
            (
                "host-a:4321:4380 [0] NCCL WARN NET/OFI WARNING: OFI_NCCL_PROTOCOL set to \
                 invalid value RMDA",
                Some(NcclInternalOrUnsupported),
            ),
            (
                "host-a:4321:4380 [0] NCCL WARN NET/OFI Unable to configure NVLS option",
                Some(NcclInternalOrUnsupported),
            ),
            (
                "host-a:4321:4380 [0] NCCL WARN NET/OFI GDR disabled on GDR-supported instance \
                 type p4d.24xlarge",
                Some(Infiniband),
            ),
            (
                "host-a:1:2 [0] NCCL WARN NET/IB: Unsupported completion status \
                 IBV_WC_REM_ACCESS_ERR (10)",
                Some(Infiniband),
            ),
            (
                "host-a:1:2 [0] NCCL INFO NET/IB : mlx5_3:1 Got non-fatal async event: port \
                 active(9)",
                None,
            ),
            (
                "host-a:1:2 [0] NCCL INFO NET/IB : Failed to open mlx5dv symbols. Advance \
                 features like CX-8 Direct-NIC will be disabled.",
                None,
            ),
            (
                "host-a:1:2 [0] NCCL WARN NCCL_IB_SUBNET_PREFIX_LEN=40 is out of range [1,32]",
                Some(NcclInternalOrUnsupported),
            ),
            (
                "host-a:1:2 [0] misc/socket.cc:752 NCCL WARN socketFinalizeAccept from \
                 10.0.0.7<43122>: wrong type 3 != 4",
                Some(Infiniband),
            ),
            // torchtitan, torchtune and NeMo.
            (
                "AssertionError: Invalid parallel dims: dp_replicate(1) * dp_shard(1) * cp(1) * \
                 tp(4) * pp(1) != WORLD_SIZE(6)",
                Some(WorldSizeMismatch),
            ),
            (
                "AssertionError: world_size: 6 must be divisible by total world_size: \
                 (decoder_)tensor_model_parallel_size 4 * (decoder_)pipeline_model_parallel_size \
                 1 * context_parallel_size 1",
                Some(WorldSizeMismatch),
            ),
            (
                "ValueError: Expected world_size (2) to be greater than/equal to pipeline size (4)",
                Some(WorldSizeMismatch),
            ),
            (
                "ValueError: LOCAL_RANK=4 is outside the visible cuda device count (4).",
                Some(CudaError),
            ),
        ] {
            assert_eq!(cat(line), want, "{line}");
        }
        let (_, ex) = classify(
            "The collective operation timed out after 1800.00 seconds. The following ranks have \
             not joined the collective operation: [3]",
        )
        .unwrap();
        assert_eq!(ex.subjects, vec![3]);
    }

    #[test]
    fn an_xid_is_read_by_its_number() {
        use Category::*;
        let name = |line: &str| classify(line).map(|(r, _)| (r.name, r.role));
        // A hardware fault, by its number alone (the driver's words differ by release).
        for n in [48, 64, 74, 79, 94, 95, 119, 140] {
            let line = format!("NVRM: Xid (PCI:0000:3b:00): {n}, pid=4242, name=python, x");
            assert_eq!(
                name(&line),
                Some((RULE_GPU_HARDWARE_FAULT, Role::Cause)),
                "{line}"
            );
        }
        // The program's own kernel fault: a CUDA error.
        assert_eq!(
            cat("NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, name=python, Graphics Exception"),
            Some(CudaError)
        );
        // The driver's teardown of a process that ended: a consequence.
        assert_eq!(
            name("NVRM: Xid (PCI:0000:3b:00): 45, pid=4242, name=python, Ch 00000010"),
            Some(("xid_teardown", Role::Consequence))
        );
        // What the catalog says to ignore.
        for n in [63, 92, 93] {
            let line = format!("NVRM: Xid (PCI:0000:3b:00): {n}, pid=4242, name=python, x");
            assert_eq!(cat(&line), None, "{line}");
        }
        // The Kubernetes device plugin's and DCGM's forms.
        assert_eq!(
            name("XidCriticalError: Xid=79 on Device=GPU-0a1b; marking device as unhealthy."),
            Some((RULE_GPU_HARDWARE_FAULT, Role::Cause))
        );
        assert_eq!(
            name("Detected XID 48 for GPU 5"),
            Some((RULE_GPU_HARDWARE_FAULT, Role::Cause))
        );
        assert_eq!(xid_number("bitcoin txid=79 confirmed"), None);
        // NVML, nvidia-smi, DCGM and the NVSwitch fabric.
        for (line, want) in [
            (
                "Unable to determine the device handle for GPU 0000:3B:00.0: GPU is lost.  \
                 Reboot the system to recover this GPU",
                Some(CudaError),
            ),
            (
                "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. \
                 Make sure that the latest NVIDIA driver is installed and running.",
                Some(CudaError),
            ),
            (
                "Detected 2 volatile double-bit ECC error(s) in GPU 0.",
                Some(CudaError),
            ),
            (
                "nvidia-nvswitch0: SXid (PCI:0000:07:00.0): 20034, Fatal, Link 30 LTSSM Fault Up",
                Some(NvlsFabricManager),
            ),
            (
                "nvidia-nvswitch0: SXid (PCI:0000:07:00.0): 12028, Non-fatal, Link 30 egress \
                 non-posted PRIV error",
                None,
            ),
            (
                "systemd[1]: Started nvidia-fabricmanager.service - NVIDIA fabric manager \
                 service.",
                None,
            ),
        ] {
            assert_eq!(cat(line), want, "{line}");
        }
    }

    #[test]
    fn mpi_ucx_horovod_slurm_and_kubernetes_messages_read_from_their_sources() {
        use Category::*;
        for (line, want) in [
            // Horovod.
            (
                "horovod.common.exceptions.HorovodInternalError: Mismatched ALLREDUCE tensor \
                 shapes: One rank sent a tensor of shape [4], but another rank sent a tensor of \
                 shape [5].",
                Some(CollectiveMismatch),
            ),
            (
                "[2026-11-28 10:00:00.000000: W /tmp/horovod/common/stall_inspector.cc:107] One \
                 or more tensors were submitted to be reduced, gathered or broadcasted by subset \
                 of ranks and are waiting for remainder of ranks for more than 60 seconds.",
                Some(CollectiveTimeout),
            ),
            (
                "RuntimeError: Unable to find a set of common task-to-task communication \
                 interfaces: [('eth0', ...), ('ens5', ...)]",
                Some(NetworkInterface),
            ),
            (
                "[1,3]<stderr>:MPI has already been initialized without multi-threading support \
                 (MPI_THREAD_MULTIPLE). This will likely cause a segmentation fault.",
                None,
            ),
            // UCX and Open MPI.
            (
                "[host-a:4242:0:4242] ib_mlx5_log.c:177 UCX ERROR Transport retry count exceeded \
                 on mlx5_0:1/IB (synd 0x15 vend 0x81 hw_synd 0/0)",
                Some(Infiniband),
            ),
            (
                "[host-a:4242:0:4242] ib_device.c:530 UCX ERROR IB Async event on mlx5_0: local \
                 catastrophic error",
                Some(Infiniband),
            ),
            (
                "[host-a:4242:0:4242] mm_posix.c:206 UCX ERROR Not enough memory to write total \
                 of 4294967296 bytes. Please check that /dev/shm or the directory you specified \
                 has more available memory.",
                Some(ShmTooSmall),
            ),
            (
                "mpirun noticed that process rank 2 with PID 4242 on node host-b exited on \
                 signal 6 (Aborted).",
                Some(RankCrashed),
            ),
            (
                "Primary job  terminated normally, but 1 process returned",
                Some(RankCrashed),
            ),
            (
                "An MPI communication peer process has unexpectedly disconnected.  This usually \
                 indicates a failure in the peer process",
                Some(RankCrashed),
            ),
            // Slurm.
            ("srun: Exceeded job memory limit", Some(HostOomKilled)),
            (
                "slurmstepd: error: StepId=48213.0 exceeded virtual memory limit (151 > 120), \
                 being killed",
                Some(HostOomKilled),
            ),
            (
                "slurmstepd: error: *** STEP 48213.0 ON host-a CANCELLED AT 2026-11-28T10:00:00 \
                 DUE TO TASK FAILURE ***",
                Some(RankCrashed),
            ),
            (
                "srun: error: host-a: task 1: Exited with exit code 143",
                None,
            ),
            (
                "slurmstepd: error: *** JOB 48213 ON host-a CANCELLED AT 2026-11-28T10:00:00 DUE \
                 TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***",
                Some(RankCrashed),
            ),
            ("srun: error: Node failure on host-b", Some(RankCrashed)),
            ("[rank: 0] Received SIGTERM: 15", Some(LauncherInterrupted)),
            (
                "srun: sending Ctrl-C to StepId=48213.0",
                Some(LauncherInterrupted),
            ),
            // Kubernetes and the NVIDIA container runtime.
            (
                "  Message:  The node had condition: [DiskPressure]. ",
                Some(RendezvousTimeout),
            ),
            (
                "  Normal  Preempted  10s  default-scheduler  Preempted by pod 9f1c on node \
                 host-b",
                Some(LauncherInterrupted),
            ),
            (
                "  Message:  Pod was terminated in response to imminent node shutdown.",
                Some(LauncherInterrupted),
            ),
            (
                "Warning  SystemOOM  kubelet  System OOM encountered, victim process: python, \
                 pid: 4242",
                Some(HostOomKilled),
            ),
            (
                "Error: failed to create containerd task: OCI runtime create failed: \
                 nvidia-container-cli: initialization error: nvml error: driver not loaded: \
                 unknown",
                Some(CudaError),
            ),
            (
                "docker: Error response from daemon: could not select device driver \"\" with \
                 capabilities: [[gpu]].",
                Some(CudaError),
            ),
            (
                "Error: OCI runtime create failed: runc create failed: error mounting \
                 \"/dev/shm\" to rootfs at \"/dev/shm\": operation not permitted: unknown",
                None,
            ),
            (
                "      Reason:    ContainerStatusUnknown\n      Message:   The container could \
                 not be located when the pod was terminated\n      Exit Code: 137",
                None,
            ),
            ("            \"OOMKilled\": false,", None),
        ] {
            assert_eq!(cat(line), want, "{line}");
        }
    }

    #[test]
    fn a_segment_ncclcommregister_refused_is_not_a_world_size_mismatch() {
        // `NCCLComm::registerSegment`'s reason, on its own line after the NCCL error.
        assert_read_as(
            "[rank0]: Failed to register segment with ptr 0x7f3a40000000, size 2097152 on \
             ncclComm_ 0x55d1c2a3b4e0",
            Category::NcclInternalOrUnsupported,
            "nccl_register_segment",
        );
    }

    #[test]
    fn megatrons_and_transformers_layout_checks_are_world_size_mismatches() {
        // Megatron-LM (parallel_state.py, arguments.py) and transformers (distributed/utils.py,
        // distributed/configuration_utils.py), as they raise them.
        for line in [
            "[rank0]: RuntimeError: world_size (6) is not divisible by 4",
            "RuntimeError: world_size (24) is not divisible by \
             expert_tensor_model_pipeline_parallel size (16)",
            "AssertionError: world size (6) is not divisible by total_model_size \
             (total_model_size=4)",
            "RuntimeError: The parallel mesh requires 8 processes, but world_size is 4.",
            "ValueError: WORLD_SIZE (6) must be divisible by dp_replicate_size * fsdp_size * \
             pp_size (4) to derive tp_size.",
        ] {
            assert_eq!(cat(line), Some(Category::WorldSizeMismatch), "{line}");
        }
        // Divisibility checks of other sizes than the world's stay the program's own error.
        for line in [
            "AssertionError: eval_global_batch_size (100) must be divisible by \
             eval_micro_batch_size (4) * data_parallel_size (8)",
            "AssertionError: Number of layers should be divisible by the pipeline-model-parallel \
             size",
        ] {
            assert_ne!(cat(line), Some(Category::WorldSizeMismatch), "{line}");
        }
    }

    #[test]
    fn megatrons_bucket_without_its_communication_is_a_parameter_without_gradient() {
        let (rule, ex) = classify(
            "[rank1]: AssertionError: Communication call has not been issued for this bucket \
             (37/40 params have grad available)",
        )
        .unwrap();
        assert_eq!(rule.name, RULE_MEGATRON_BUCKET_NOT_ISSUED);
        assert_eq!(rule.category, Category::UnusedParameters);
        assert_eq!(
            ex.detail.as_deref(),
            Some("3 of the bucket's 40 parameters had no gradient")
        );
        let (_, ex) = classify(
            "AssertionError: Communication call has not been issued for this bucket (40/40 \
             params have grad available)",
        )
        .unwrap();
        assert!(ex.detail.unwrap().contains("different number of times"));
        // No GPU for Megatron; the Trainer's evaluation out of memory.
        assert_eq!(
            cat("[rank0]: AssertionError: Megatron requires CUDA."),
            Some(Category::CudaError)
        );
        assert_eq!(
            cat(
                "[rank1]: RuntimeError: Evaluation hit an out-of-memory error. \
                 `auto_find_batch_size` only adjusts the training batch size, reduce \
                 `per_device_eval_batch_size` instead."
            ),
            Some(Category::CudaOom)
        );
    }

    #[test]
    fn a_device_mesh_larger_than_the_job_is_a_world_size_mismatch() {
        let (rule, ex) = classify(
            "RuntimeError: Mesh should not be bigger than default world size 8, but found 16 \
             ranks!",
        )
        .unwrap();
        assert_eq!(rule.category, Category::WorldSizeMismatch);
        assert_eq!(
            ex.detail.as_deref(),
            Some("the device mesh asks for 16 ranks, the job has 8")
        );
        assert_eq!(ex.expected_world, Some(16));
        assert_eq!(
            cat("RuntimeError: Mesh should not be bigger than default world size, but found 6 ranks!"),
            Some(Category::WorldSizeMismatch)
        );
    }

    #[test]
    fn accelerates_p2p_guard_is_the_p2p_case_in_both_wordings() {
        // accelerate/state.py's NotImplementedError, the current wording and the older one,
        // as torchrun's rank prefix carries it.
        for line in [
            "[rank0]: NotImplementedError: Using RTX 4000 series doesn't support faster \
             communication broadband via P2P or IB. Please set `NCCL_P2P_DISABLE=\"1\"` and \
             `NCCL_IB_DISABLE=\"1\" or use `accelerate launch` which will do this automatically.",
            "NotImplementedError: Using RTX 3090 or 4000 series doesn't support faster \
             communication broadband via P2P or IB. Please set `NCCL_P2P_DISABLE=\"1\"` and",
        ] {
            let (rule, _) = classify(line).unwrap();
            assert_eq!(rule.name, RULE_ACCELERATE_NO_P2P_GUARD, "{line}");
            assert_eq!(rule.category, Category::P2pHang);
        }
    }

    #[test]
    fn the_reference_ddps_own_shared_gpu_check_is_a_duplicate_gpu() {
        // What `ddp-cuda` says before NCCL is called (cuda/src/nccl.rs, check_hellos), as the
        // gpu-check binary printed it on an H200 with two ranks given one GPU.
        let (rule, ex) = classify(
            "gpu-check: gpu-check ran to the end | FAIL | NCCL communicator: NCCL group \
             \"default\": ranks 0 and 1 both use GPU 0 on host \"node-a\"; give each rank of a \
             host its own GPU (LOCAL_RANK, or NcclOptions::device); NCCL shares one only from \
             2.30 on, with NCCL_MULTI_RANK_GPU_ENABLE=1 (NCCL 2.28.9)",
        )
        .unwrap();
        assert_eq!(rule.category, Category::DuplicateGpu);
        assert_eq!(ex.subjects, vec![0, 1]);
    }

    #[test]
    fn vllm_kv_cache_checks_are_gpu_memory_with_their_figures() {
        // vllm/v1/core/kv_cache_utils.py's message, whole (as one line).
        let (rule, ex) = classify(
            "(EngineCore_DP0 pid=140653) ValueError: To serve at least one request with the \
             models's max seq len (262144), (24.00 GiB KV cache is needed, which is larger than \
             the available KV cache memory (8.68 GiB). Based on the available memory, the \
             estimated maximum model length is 94784. Try increasing `gpu_memory_utilization` \
             or decreasing `max_model_len` when initializing the engine.",
        )
        .unwrap();
        assert_eq!(rule.name, RULE_VLLM_KV_CACHE_TOO_SMALL);
        assert_eq!(rule.category, Category::CudaOom);
        assert_eq!(
            ex.detail.as_deref(),
            Some("max_model_len 262144 needs 24.00 GiB of KV cache, 8.68 GiB available")
        );
        // The older engine's (vllm/worker/worker.py, raise_if_cache_size_invalid).
        for line in [
            "ValueError: No available memory for the cache blocks. Try increasing \
             `gpu_memory_utilization` when initializing the engine.",
            "ValueError: The model's max seq len (32768) is larger than the maximum number of \
             tokens that can be stored in KV cache (20480). Try increasing \
             `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
        ] {
            assert_eq!(cat(line), Some(Category::CudaOom), "{line}");
        }
    }

    #[test]
    fn numbers_too_large_for_a_rank_are_not_ranks() {
        assert_eq!(rank_number(MAX_RANK), Some(1 << 20));
        assert_eq!(rank_number(MAX_RANK + 1), None);
        // Two NCCL lines run together: the digits of one and the next are no rank.
        assert_eq!(
            rank_mentions("comm 0x7f00aa001000 rank 122222222222cl info comm"),
            Vec::<usize>::new()
        );
    }

    #[test]
    fn rank_mentions_skip_words_and_read_lists() {
        assert_eq!(rank_mentions("rank 1 and rank 0 both"), vec![1, 0]);
        assert_eq!(rank_mentions("[rank3]: x nranks 8 localrank 2"), vec![3]);
        assert_eq!(
            rank_mentions("ranks 2, 3 and 5 of 8 never arrived"),
            vec![2, 3, 5]
        );
        assert_eq!(rank_mentions("rankings 4"), Vec::<usize>::new());
    }

    /// NCCL's `shm.h` prints posix_fallocate's error: a full /dev/shm and an
    /// interrupted call are different problems.
    #[test]
    fn nccl_shared_memory_allocation_reads_its_error() {
        let line = |err: &str| {
            format!("h:1:2 [0] include/shm.h:28 NCCL WARN Unable to allocate shared memory (4214784 bytes) : {err}")
        };
        assert_eq!(
            cat(&line("No space left on device")),
            Some(Category::ShmTooSmall)
        );
        assert_eq!(
            cat(&line("Interrupted system call")),
            Some(Category::NcclInternalOrUnsupported)
        );
        assert_eq!(
            cat(
                "init.cc:1247 NCCL WARN Mismatched collective detected, please check your \
                 collective calls at and around rank 39."
            ),
            Some(Category::CollectiveMismatch)
        );
        assert_eq!(
            cat("h:1:2 [0] transport/net_socket.cc:482 NCCL WARN NET/Socket : peer 10.0.0.2<34567> \
                 message truncated : receiving 1048576 bytes instead of 65536."),
            Some(Category::CollectiveMismatch)
        );
    }

    #[test]
    fn flight_recorder_analyzer_output_names_the_missing_rank_and_mismatches() {
        // torchfrtrace's lines, as `flight_recorder/components/utils.py` logs them.
        let (rule, ex) = classify("missing ranks: {1, 3}").unwrap();
        assert_eq!(rule.category, Category::CollectiveTimeout);
        assert_eq!(ex.subjects, vec![1, 3]);
        let (_, ex) = classify(
            "Not all ranks joining collective for group 0:default_pg collective nccl:all_reduce  \
             Missing ranks are {2}  [[3, 4]] [[3, 4]] 4 scheduled",
        )
        .unwrap();
        assert_eq!(ex.subjects, vec![2]);
        assert_eq!(
            cat("Input/output mismatch in the collective sequence number: 12"),
            Some(Category::CollectiveMismatch)
        );
        assert_eq!(
            cat("errors: {(1, Error type: COLLECTIVE_TYPE_MISMATCH, Expected collective type: 'all_reduce')}"),
            Some(Category::CollectiveMismatch)
        );
        // accelerate's debug-mode check (`utils/operations.py`, verify_operation).
        assert_eq!(
            cat(
                "accelerate.utils.operations.DistributedOperationException: Cannot apply desired \
                 operation due to shape mismatches. All shapes across devices must be valid."
            ),
            Some(Category::CollectiveMismatch)
        );
    }

    #[test]
    fn a_graph_file_naming_a_missing_gpu_is_an_nccl_configuration_error() {
        let (rule, ex) = classify(
            "h:1:2 [0] graph/search.cc:703 NCCL WARN XML Import Channel : dev 1 not found.",
        )
        .unwrap();
        assert_eq!(rule.category, Category::NcclInternalOrUnsupported);
        assert!(ex.detail.unwrap().contains("NCCL_GRAPH_FILE"));
    }

    #[test]
    fn an_nccl_connect_that_times_out_is_an_unreachable_interface() {
        assert_eq!(
            cat("NCCL WARN Connect to fe80::XX%ip6tnl0<46681> failed : Connection timed out"),
            Some(Category::NetworkInterface)
        );
        assert_eq!(
            cat("h:1:2 [1] include/socket.h:403 NCCL WARN Connect to 10.0.0.1<56821> failed : Connection refused"),
            Some(Category::ConnectionRefused)
        );
    }

    #[test]
    fn gloo_monitored_barrier_names_the_faulty_rank() {
        let (rule, ex) = classify(
            "[E ProcessGroupGloo.cpp:138] Rank 1 successfully reached monitoredBarrier, but \
             received errors while waiting for send/recv from rank 0. Please check rank 0 logs \
             for faulty rank.",
        )
        .expect("matched");
        assert_eq!(rule.category, Category::RankCrashed);
        assert_eq!(ex.subjects, vec![0]);
        assert_eq!(
            cat("h:1:2 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer host-b<43210>"),
            Some(Category::RankCrashed)
        );
    }

    #[test]
    fn specific_rules_win_over_generic_ones() {
        assert_eq!(
            cat("h:1:2 [0] NCCL WARN Cuda failure 'out of memory'"),
            Some(Category::CudaOom)
        );
        assert_eq!(
            cat("RuntimeError: CUDA error: an illegal memory access was encountered"),
            Some(Category::CudaError)
        );
        assert_eq!(
            cat("RuntimeError: CUDA error: system not yet initialized"),
            Some(Category::NvlsFabricManager)
        );
        assert_eq!(cat("h:1:1 [0] NCCL INFO NET/IB : No device found."), None);
        assert_eq!(
            cat("h:1:1 [0] NCCL INFO Call to connect returned Connection refused, retrying"),
            None
        );
        assert_eq!(
            cat("h:1:1 [0] NCCL INFO NVLS multicast support is not available on dev 0"),
            None
        );
    }

    #[test]
    fn source_strings_of_peers_linkers_and_init_errors_are_placed() {
        // gloo's full mesh: a refusal between ranks is the advertised address.
        assert_eq!(
            cat("RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error"),
            Some(Category::NetworkInterface)
        );
        assert_eq!(
            cat("[W ProcessGroupGloo.cpp:694] Warning: Unable to resolve hostname to a (local) address. Using the loopback address as fallback. Manually set the network interface to bind to with GLOO_SOCKET_IFNAME."),
            Some(Category::NetworkInterface)
        );
        // NCCL's sockets: refused stays connection_refused, retries are nothing.
        assert_eq!(
            cat("h:1:2 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.1<4512> failed : Software caused connection abort"),
            Some(Category::NetworkInterface)
        );
        assert_eq!(
            cat("h:1:2 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.1<4512> failed : Connection refused"),
            Some(Category::ConnectionRefused)
        );
        assert_eq!(
            cat("h:1:2 [0] NCCL INFO socketPollConnect: Connect to 10.0.0.1<4512> returned 111(Connection refused) errno 115(Operation now in progress), retrying"),
            None
        );
        assert_eq!(
            cat("ImportError: /path/to/libtorch_cuda.so: undefined symbol: ncclCommRegister"),
            Some(Category::NcclVersionMismatch)
        );
        // c10d creates communicators in NCCLUtils: init.cc's error codes.
        let (r, _) = classify(
            "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/../c10d/NCCLUtils.hpp:39, invalid argument",
        )
        .unwrap();
        assert_eq!(
            (r.category, r.attach),
            (Category::WorldSizeMismatch, Attach::AnyFinding)
        );
        assert_eq!(
            cat("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:219, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.19.3"),
            Some(Category::DuplicateGpu)
        );
        // PyTorch 1.x reported a refused communicator at its `ncclGroupEnd` check.
        assert_eq!(
            cat("RuntimeError: NCCL error in: ../torch/lib/c10d/ProcessGroupNCCL.cpp:514, invalid usage, NCCL version 2.6.3"),
            Some(Category::DuplicateGpu)
        );
        // The same codes from a collective are not about set-up.
        assert_eq!(
            cat("RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, invalid argument"),
            Some(Category::NcclInternalOrUnsupported)
        );
        // IB completion status 4 is GPU Direct RDMA's; other statuses are the fabric's.
        assert_eq!(
            cat("h:1:2 [1] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<53249> with error 4, opcode 32564, len 32564, vendor err 81 (Send)"),
            Some(Category::P2pHang)
        );
        assert_eq!(
            cat("h:1:2 [1] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<53249> with error 12, opcode 0, len 0, vendor err 129 (Recv)"),
            Some(Category::Infiniband)
        );
        // NCCL's later formats of the same status; the second line of a wrapped one.
        assert_eq!(
            cat("host-a:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer 10.0.0.1<54862> with status=4 opcode=0 len=0 vendor err 81 (Send)"),
            Some(Category::P2pHang)
        );
        assert_eq!(
            cat("from peer 10.0.0.1<55095> with status=IBV_WC_LOC_PROT_ERR(4) opcode=IBV_WC_SEND(0)"),
            Some(Category::P2pHang)
        );
        assert_eq!(
            cat("host-a:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer 10.0.0.1<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv)"),
            Some(Category::Infiniband)
        );
        assert_eq!(
            cat("[enforce fail at ../third_party/gloo/gloo/transport/tcp/pair.cc:446] op.preamble.length <= op.nbytes. 8 vs 4"),
            Some(Category::CollectiveMismatch)
        );
        assert_eq!(
            cat("RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:276] ss1.ss_family == ss2.ss_family. 2 vs 10"),
            Some(Category::NetworkInterface)
        );
        assert_eq!(
            cat("h:1:2 [0] misc/socket.cc:441 NCCL WARN socketFinalizeAccept: wrong type 4 != 3"),
            Some(Category::Infiniband)
        );
        assert_eq!(
            cat("h:1:2 [0] misc/socket.cc:441 NCCL WARN socketFinalizeAccept: wrong type 1 != 3"),
            Some(Category::NcclInternalOrUnsupported)
        );
    }

    #[test]
    fn a_full_dev_shm_under_a_tensors_shared_file_is_read() {
        for line in [
            "RuntimeError: unable to write to file </torch_1234_567_0>: No space left on device \
             (28)",
            "RuntimeError: unable to stretch file </torch_1_2_3> to the right size: No space \
             left on device (28)",
        ] {
            assert_eq!(cat(line), Some(Category::ShmTooSmall), "{line}");
        }
        // A checkpoint's full disk is not /dev/shm's.
        assert_ne!(
            cat("OSError: [Errno 28] No space left on device: '/ckpt/step_100.pt'"),
            Some(Category::ShmTooSmall)
        );
    }

    #[test]
    fn launchers_reports_of_a_tasks_signal_are_read() {
        for (line, category) in [
            (
                "mpirun noticed that process rank 3 with PID 12345 on node host-a exited on \
                 signal 9 (Killed).",
                Category::HostOomKilled,
            ),
            (
                "prterun noticed that process rank 1 with PID 0 on node host-a exited on signal \
                 7 (Bus error).",
                Category::ShmTooSmall,
            ),
            (
                "mpirun noticed that process rank 0 with PID 4242 on node host-b exited on \
                 signal 11 (Segmentation fault).",
                Category::RankCrashed,
            ),
            (
                "srun: error: host-a: task 1: Killed",
                Category::HostOomKilled,
            ),
            (
                "srun: error: host-a: tasks 0-3: Bus error",
                Category::ShmTooSmall,
            ),
            (
                "srun: error: host-a: task 2: Segmentation fault (core dumped)",
                Category::RankCrashed,
            ),
            (
                "srun: error: host-a: task 0: Aborted (core dumped)",
                Category::RankCrashed,
            ),
            (
                "[host-a:12345] Signal: Bus error (7)",
                Category::ShmTooSmall,
            ),
        ] {
            assert_eq!(cat(line), Some(category), "{line}");
        }
        let (_, ex) = classify(
            "mpirun noticed that process rank 3 with PID 12345 on node host-a exited on signal 9 \
             (Killed).",
        )
        .unwrap();
        assert_eq!(ex.subjects, vec![3]);
        // kube-scheduler could not place a pod: its ranks never join.
        let (rule, ex) = classify(
            "  Warning  FailedScheduling  2m  default-scheduler  0/4 nodes are available: 4 \
             Insufficient nvidia.com/gpu.",
        )
        .unwrap();
        assert_eq!(
            (rule.category, ex.detail.as_deref()),
            (
                Category::RendezvousTimeout,
                Some("4 Insufficient nvidia.com/gpu")
            )
        );
        // Kubernetes' own report of an OOM kill is the kill itself, not a likely one.
        let (rule, _) =
            classify("    Last State:  Terminated, Reason: OOMKilled, Exit Code: 137").unwrap();
        assert!(OOM_REPORT_RULES.contains(&rule.name), "{}", rule.name);
        // srun's non-zero exit code is the task's own failure; 137 is a shell's SIGKILL.
        assert_eq!(
            cat("srun: error: host-a: tasks 0-3: Exited with exit code 1"),
            Some(Category::RankCrashed)
        );
        assert_eq!(
            cat("srun: error: host-a: task 3: Exited with exit code 137"),
            Some(Category::HostOomKilled)
        );
        // SIGABRT is a crash whose `what():` line, when the log has it, says more (the rule
        // joins that finding).
        let (rule, _) = classify(
            "mpirun noticed that process rank 2 with PID 4242 on node host-b exited on signal 6 \
             (Aborted).",
        )
        .unwrap();
        assert_eq!(
            (rule.name, rule.category, rule.attach),
            ("shell_aborted", Category::RankCrashed, Attach::AnyFinding)
        );
        // Other exit codes are not these readings.
        let line = "srun: error: host-a: task 3: Exited with exit code 1";
        assert!(
            classify(line).is_none_or(|(r, _)| !r.name.starts_with("shell_")),
            "{line}"
        );
    }

    #[test]
    fn ray_workers_that_could_not_be_placed_never_joined() {
        for line in [
            "TimeoutError: Placement group creation timed out. Make sure your cluster either has \
             enough resources or use an autoscaling cluster. If you are running on a cluster, \
             make sure you specify an address in `ray.init()`, for example, `ray.init(\"auto\")`.",
            "ray.train.v2._internal.exceptions.WorkerGroupStartupTimeoutError: The worker group \
             startup timed out after 30.0 seconds waiting for 2 workers. Potential causes \
             include: (1) temporary insufficient cluster resources while waiting for autoscaling",
        ] {
            let (rule, _) = classify(line).unwrap();
            assert_eq!(
                (rule.name, rule.category),
                (RULE_RAY_WORKERS_UNSCHEDULED, Category::RendezvousTimeout),
                "{line}"
            );
        }
    }

    #[test]
    fn mpi_truncation_and_a_lost_daemon_are_read() {
        for (line, rule, category) in [
            (
                "[host-a:01234] *** MPI_ERR_TRUNCATE: message truncated",
                RULE_MPI_TRUNCATE,
                Category::CollectiveMismatch,
            ),
            (
                "Fatal error in MPI_Allreduce: Message truncated, error stack: Message truncated; \
                 400 bytes received but buffer size is 200",
                RULE_MPI_TRUNCATE,
                Category::CollectiveMismatch,
            ),
            (
                "ORTE has lost communication with a remote daemon.",
                RULE_MPI_LOST_DAEMON,
                Category::RankCrashed,
            ),
            (
                "PRTE has lost communication with a remote daemon.",
                RULE_MPI_LOST_DAEMON,
                Category::RankCrashed,
            ),
        ] {
            let (r, _) = classify(line).unwrap();
            assert_eq!((r.name, r.category), (rule, category), "{line}");
        }
    }

    #[test]
    fn fairseq_and_detectron2_set_up_checks_are_read() {
        for (line, want) in [
            (
                "AssertionError: world size is 8 but have 4 available devices",
                Category::CudaError,
            ),
            (
                "AssertionError: [AMPTrainer] CUDA is required for AMP training!",
                Category::CudaError,
            ),
            (
                "AssertionError: SLURM --ntasks-per-node must match number of pipelines per node \
                 (=2)",
                Category::WorldSizeMismatch,
            ),
            (
                "2024-01-01 10:00:00 | WARNING | fairseq.trainer | OOM during optimization, \
                 irrecoverable",
                Category::CudaOom,
            ),
            (
                "2024-01-01 10:30:00 | ERROR | fairseq.distributed.distributed_timeout_wrapper | \
                 Killing job for not making progress in 1800 seconds. Set --heartbeat-timeout=-1 \
                 to disable this timeout.",
                Category::CollectiveTimeout,
            ),
        ] {
            assert_eq!(cat(line), Some(want), "{line}");
        }
        // A rank's own helper command failing is its own error, not a launcher's report.
        let line = "subprocess.CalledProcessError: Command '['scontrol', 'show', 'hostnames', \
                    'node[01-02]']' returned non-zero exit status 1.";
        assert!(
            classify(line).is_none_or(|(r, _)| r.name != "launcher_consequence"),
            "{line}"
        );
    }

    #[test]
    fn spawn_reporting_a_first_process_stopped_by_sigterm_is_a_stop() {
        for line in [
            "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with \
             signal SIGTERM",
            "torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with \
             signal SIGINT",
        ] {
            let (r, _) = classify(line).unwrap();
            assert_eq!(
                (r.category, r.role),
                (Category::LauncherInterrupted, Role::Symptom),
                "{line}"
            );
        }
    }

    #[test]
    fn nccl_2_30_and_composer_lines_are_read_from_their_sources() {
        let p = "node-a:48213:48390 [3] ";
        for (line, want) in [
            // Retries, fallbacks and unsupported settings: no fabric or /dev/shm failure.
            (
                format!("{p}NCCL INFO fallocate: Failed to extend /dev/shm/nccl-a1B2c3 to 9637892 bytes, error: Interrupted system call (4) - retrying"),
                None,
            ),
            (
                format!("{p}NCCL INFO rank 3 failed to NVLS register sendbuff 0x7f1a00000000 sendbuffSize 268435456"),
                None,
            ),
            (
                format!("{p}transport/nvls.cc:254 NCCL WARN NCCL_NVLS_ENABLE has been set to \"1\" and communicator has multiple ranks using the same NVML device. This is not compatible with NCCL_NVLS_ENABLE=1."),
                None,
            ),
            (
                format!("{p}misc/argcheck.cc:24 NCCL WARN AllReduce : sendbuff allocated on device 1 mismatchs with NCCL device 0"),
                Some(Category::DuplicateGpu),
            ),
            (
                format!("{p}proxy.cc:2079 NCCL WARN Call to pthread_create failed: Resource temporarily unavailable"),
                Some(Category::RankCrashed),
            ),
            (
                format!("{p}os/linux_ipcsocket.cc:233 NCCL WARN UDS: Sending data over socket /tmp/nccl-socket-1-8a3f21c0d9e4b7a2 failed : Connection refused (111)"),
                Some(Category::RankCrashed),
            ),
            (
                format!("{p}proxy.cc:1874 NCCL WARN [Service thread] Could not receive type from localRank 2, res=6, closed=1"),
                Some(Category::RankCrashed),
            ),
            (
                "ValueError: Torch distributed has been initialized with a value of 8 for world size, but environment variable WORLD_SIZE has value 16.".to_owned(),
                Some(Category::WorldSizeMismatch),
            ),
            (
                "[rank3]: Out Of Memory (OOM) observed".to_owned(),
                Some(Category::CudaOom),
            ),
            (
                "UserWarning: CUDA out of memory or excessive memory allocation retries detected. Train microbatch size will be decreased from 8 -> 4.".to_owned(),
                None,
            ),
        ] {
            assert_eq!(cat(&line), want, "{line}");
        }
    }

    #[test]
    fn intel_and_habana_lines_are_read_from_their_sources() {
        let ccl = "2025:03:21-10:12:33:(48213) |CCL_ERROR| ";
        for (line, want) in [
            (
                "RuntimeError: oneCCL: ze_call.cpp:43 do_call: EXCEPTION: ze error at zeMemAllocDevice, code: ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY".to_owned(),
                Some(Category::CudaOom),
            ),
            (
                "RuntimeError: [Rank:0] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::939524096 (896)MB".to_owned(),
                Some(Category::CudaOom),
            ),
            (
                "RuntimeError: oneCCL: ze_base_entry.cpp:171 is_event_completed: EXCEPTION: unexpected result from zeEventQueryStatus: ZE_RESULT_ERROR_DEVICE_LOST".to_owned(),
                Some(Category::CudaError),
            ),
            (
                "RuntimeError: synStatus=20 [Device already acquired] Device acquire failed.".to_owned(),
                Some(Category::DuplicateGpu),
            ),
            // The bridge's own warning goes on with another module id.
            (
                "[W 10:00:00.123] PT_SYNHELPER Device acquire failed for hls_mod_id: 3 with status synStatus 20 [Device already acquired]. . Proceeding without moduleid".to_owned(),
                None,
            ),
            (
                "RuntimeError: synStatus=8 [Device not found] Device acquire failed. No devices found.".to_owned(),
                Some(Category::CudaError),
            ),
            (
                "[rank1]:[E1128 10:00:00.123456789 ProcessGroupXCCL.cpp:323] Work timed out after 600012 milliseconds.".to_owned(),
                Some(Category::CollectiveTimeout),
            ),
            (
                format!("{ccl}internal_kvs.cpp:606 kvs_init: connection time (120) >= limit (120)"),
                Some(Category::ConnectionRefused),
            ),
            (
                format!("{ccl}pmi_resizable_simple.cpp:279 kvs_get_value: KVS get error: timeout limit: 60 > 60, prefix: CCL_POS, key: 5"),
                Some(Category::RendezvousTimeout),
            ),
            (
                format!("{ccl}internal_kvs.cpp:325 fill_local_host_ip: can't find interface ib0 to get host IP"),
                Some(Category::NetworkInterface),
            ),
            (
                "/path/to/hcl/src/hccl/network_utils.cpp:197(get_desired_tcp_if): The condition [ false ] failed. No network interfaces found in HCCL_SOCKET_IFNAME(eth5)".to_owned(),
                Some(Category::NetworkInterface),
            ),
            (
                "/path/to/hcl/src/coordinator/hlcp_server.cpp:302(on_hlcp_qps_conf): The condition [ remote_rank < comm_size_ ] failed. rank_id(9) is out of range(8)".to_owned(),
                Some(Category::WorldSizeMismatch),
            ),
            (
                "/path/to/hcl/src/coordinator/hlcp_client.cpp:42(hlcp_client_t): The condition [ false ] failed. cannot start hlcp client".to_owned(),
                Some(Category::RankCrashed),
            ),
            // A UNIX socket file of oneCCL's, not a TCP port.
            (
                "RuntimeError: oneCCL: ze_fd_manager.cpp:521 exchange_device_fds: EXCEPTION: bind failed: sock_err: -1, errno: Address already in use".to_owned(),
                Some(Category::RankCrashed),
            ),
            // oneCCL's other ranks on the master node connect as clients: the normal path.
            (format!("{ccl}port [29600] is busy, connecting as client").replace("CCL_ERROR", "CCL_WARN"), None),
        ] {
            assert_eq!(cat(&line), want, "{line}");
        }
    }

    #[test]
    fn deepep_nvshmem_and_tcpx_lines_are_read_from_their_sources() {
        for (line, want) in [
            ("RuntimeError: DeepEP error: CPU recv timeout", Some(Category::CollectiveTimeout)),
            ("DeepEP timeout check failed: rank = 2, thread = 5, value = 1)", Some(Category::CollectiveTimeout)),
            ("DeepEP NVLink barrier timeout, tag: 0, nvl: 3, thread: 5, status: 0, signal: 7, phase: 1, target: 0, counter: 4", Some(Category::CollectiveTimeout)),
            ("RuntimeError: Dispatch CPU wait exception (/workspace/DeepEP/csrc/elastic/buffer.hpp:1063): num_recv_tokens=-1, num_scaleout_ranks=2", Some(Category::CollectiveTimeout)),
            ("RuntimeError: Assertion exception (/workspace/DeepEP/csrc/kernels/backend/nccl.cu:104): NCCL_VERSION_CODE == nccl_runtime_version and \"Prior to NCCL 2.31, NCCL compile-time and runtime versions must be the same. Please re-compile DeepEP.\"", Some(Category::NcclVersionMismatch)),
            ("RuntimeError: CUDA driver exception (/workspace/DeepEP/csrc/kernels/backend/symmetric.hpp:240): 801 (CUDA_ERROR_NOT_SUPPORTED, operation not supported)", Some(Category::CudaError)),
            ("/workspace/nvshmem_src/src/host/mem/mem_heap.cpp:malloc:2266: nvshmem malloc failed (hint: check if total allocation has exceeded NVSHMEM symmetric size = 1073741824, NVSHMEM symmetric size can be increased using NVSHMEM_SYMMETRIC_SIZE environment variable)", Some(Category::CudaOom)),
            ("[3] got completion with err:", Some(Category::Infiniband)),
            ("/workspace/nvshmem_src/src/modules/transport/common/transport_ib_common.cpp:128: NULL value mem registration failed. Reason: Bad address", Some(Category::Infiniband)),
            ("a3-gpu-vm-1:41872:42105 [3] tcpxResult_t gpu_init():33 NCCL WARN CU failure cuInit: CUDA_ERROR_NO_DEVICE", Some(Category::CudaError)),
            // Set-up steps that go on: no failure.
            ("DeepEP initialized with NCCL version 2.27.3", None),
            ("/workspace/nvshmem_src/src/host/mem/mem_transport.cpp:182: non-zero status: 999 nvmlDeviceGetGpuFabricInfoV() failed... Detection of MNNVL environment will not be attempted", None),
        ] {
            assert_eq!(cat(line), want, "{line}");
        }
        let (r, ex) = classify("nvshmem malloc failed (hint: check if total allocation has exceeded NVSHMEM symmetric size = 1073741824, NVSHMEM symmetric size can be increased using NVSHMEM_SYMMETRIC_SIZE environment variable)").unwrap();
        assert_eq!(r.name, "nvshmem_heap_full");
        assert!(ex.detail.unwrap().contains("1073741824 bytes"));
    }

    #[test]
    fn the_container_stack_without_a_gpu_is_no_usable_gpu() {
        for (line, want) in [
            ("nvidia-container-cli: initialization error: nvml error: driver not loaded", Some(Category::CudaError)),
            ("nvidia-container-cli: device error: 4: unknown device", Some(Category::CudaError)),
            ("nvidia-container-cli: mount error: stat failed: /dev/nvidia-uvm: no such file or directory", Some(Category::CudaError)),
            ("nvidia-container-cli: ldcache error: open failed: /sbin/ldconfig.real: no such file or directory", Some(Category::CudaError)),
            ("nvidia-container-cli: requirement error: unsatisfied condition: driver>=535", Some(Category::CudaError)),
            ("Error: setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=all", Some(Category::CudaError)),
            ("Error response from daemon: could not select device driver \"nvidia\" with capabilities: [[gpu compute utility]]", Some(Category::CudaError)),
            ("[2025-11-28T10:00:00.123] error: Failed to initialize NVML: Driver Not Loaded", Some(Category::CudaError)),
            ("Failed to initialize NVML: Unknown Error", Some(Category::CudaError)),
            (
                "time=\"2025-11-28T10:00:00Z\" level=error msg=\"failed to inject CDI devices: failed to create IMEX channel spec: IMEX channel 0 not found at /dev/nvidia-caps-imex-channels/channel0\"",
                Some(Category::CudaError),
            ),
            // The device plugin goes on without its health check.
            ("E1128 10:00:00.123456       1 server.go:155] Failed to start health check: failed to initialize NVML: Unknown Error; continuing with health checks disabled", None),
            // enroot could not mount /dev/shm: the container never started, nothing ran out.
            ("enroot-mount: failed to mount: /dev/shm at /run/enroot/pyxis_train/dev/shm: No such file or directory", None),
        ] {
            assert_eq!(cat(line), want, "{line}");
        }
    }

    #[test]
    fn pipelining_and_symmetric_memory_lines_are_read_from_their_sources() {
        for (line, want) in [
            ("ValueError: Pipeline group size 8 cannot be larger than number of stages 4", Some(Category::WorldSizeMismatch)),
            ("ValueError: num_stages 6 must be evenly divisible by pp_size 4 for V schedules", Some(Category::WorldSizeMismatch)),
            ("RuntimeError: CUDASymmetricMemoryAllocator::rendezvous: detected allocations from overlapping devices from different ranks.", Some(Category::DuplicateGpu)),
            ("[W intra_node_comm.cpp:133] Skipping IntraNodeComm::rendezvous() because participants have overlapping devices. To resolve this, call torch.cuda.set_device() before init_process_group().", Some(Category::DuplicateGpu)),
        ] {
            assert_eq!(cat(line), want, "{line}");
        }
    }

    #[test]
    fn rl_frameworks_lines_are_read_from_their_sources() {
        for (line, want) in [
            ("AssertionError: n_gpus (12) must be divisible by model_parallel_size (8) times context_parallel_size (1)", Some(Category::WorldSizeMismatch)),
            ("AssertionError: rollout world_size: 8 is not divisible by infer_world_size: 3", Some(Category::WorldSizeMismatch)),
            ("ValueError: tensor_parallel_size (4) must divide world size (6) evenly.", Some(Category::WorldSizeMismatch)),
            ("AssertionError: actor_num_nodes * actor_num_gpus_per_node must be equal to vllm_num_engines * vllm_tensor_parallel_size, got 8 and 4", Some(Category::WorldSizeMismatch)),
            ("RuntimeError: Attempting to use the same CUDA device (UUID: GPU-3f2a1b4c) for multiple distinct roles/ranks within the same communicator.", Some(Category::DuplicateGpu)),
            ("ValueError: Total available GPUs 8 is less than total desired GPUs 16", Some(Category::CudaError)),
            ("ConnectionError: The vLLM server can't be reached at http://0.0.0.0:8000 after 240.0 seconds. Make sure the server is running by running `trl vllm-serve`.", Some(Category::ConnectionRefused)),
            // A try of a fresh port that failed is no failure yet.
            ("(vLLMHttpServer pid=61234) Failed to start HTTP server on port 41235 at try 0, error: [Errno 98] error while attempting to bind on address ('10.0.0.11', 41235): address already in use", None),
        ] {
            assert_eq!(cat(line), want, "{line}");
        }
    }

    #[test]
    fn amd_lines_are_read_from_their_sources() {
        let rccl = "mi300-node07:48213:48390 [3] /src/rccl/build/release/hipify/src/";
        for (line, want) in [
            (
                "Memory access fault by GPU node-2 (Agent handle: 0x55fea5592860) on address 0x7fc133800000. Reason: Page not present or supervisor privilege.".to_owned(),
                Some(Category::CudaError),
            ),
            ("HW Exception by GPU node-1 (Agent handle: 0x5ab48bbcc960) reason :GPU Hang".to_owned(), Some(Category::CudaError)),
            (
                ":0:rocdevice.cpp            :2303: 768423197593 us: Device::callbackQueue aborting with status: 0x100f".to_owned(),
                Some(Category::CudaError),
            ),
            (
                "Jan 09 18:55:45 node07 kernel: amdgpu 0000:0b:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:24 vmid:8 pasid:32792)".to_owned(),
                Some(Category::CudaError),
            ),
            (
                "Jul 24 12:26:16 node07 kernel: [drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx_0.0.0 timeout, signaled seq=5000163, emitted seq=5000165".to_owned(),
                Some(Category::CudaError),
            ),
            ("Jul 24 12:26:19 node07 kernel: [drm] VRAM is lost due to GPU reset!".to_owned(), Some(Category::CudaError)),
            ("RuntimeError: HIP error: out of memory".to_owned(), Some(Category::CudaOom)),
            ("[FATAL ERROR]: HIP failure: 'out of memory'".to_owned(), Some(Category::CudaOom)),
            ("RuntimeError: No HIP GPUs are available".to_owned(), Some(Category::CudaError)),
            (
                format!("{rccl}misc/msccl/msccl_lifecycle.cc:169 NCCL WARN MSCCL Internal Scheduler:  Unable to find algorithm files in /opt/rocm/lib/../share/rccl/msccl-algorithms. Please ensure that RCCL has been installed properly"),
                Some(Category::NcclInternalOrUnsupported),
            ),
            (
                format!("{rccl}misc/msccl/msccl_setup.cc:92 NCCL WARN MSCCL: number of channels available (16) less than required (32)"),
                Some(Category::NcclInternalOrUnsupported),
            ),
            (
                format!("{rccl}misc/rocm_smi_wrap.cc:34 NCCL WARN ROCm SMI init failure RSMI_STATUS_PERMISSION: The necessary permissions to perform this function are not available"),
                Some(Category::NcclInternalOrUnsupported),
            ),
            (
                "mi210-box: Test NCCL failure common.cu:1285 'internal error - please report this issue to the NCCL developers'".to_owned(),
                Some(Category::NcclInternalOrUnsupported),
            ),
            // Advice, fallbacks and probes: no failure.
            (
                format!("{rccl}init.cc:163 NCCL WARN Missing \"iommu=pt\" from kernel command line which can lead to system instablity or hang!"),
                None,
            ),
            (
                format!("{rccl}misc/msccl/msccl_lifecycle.cc:132 NCCL WARN NCCL_MAX_NCHANNELS:16 is lesser than number of channels required by MSCCL:32, so disabling MSCCL for allReduce between minBytes:0 and maxBytes:1048576"),
                None,
            ),
            ("mi300-node07:48213:48390 [3] NCCL INFO MSCCL: Initialization finished, localSize 8".to_owned(), None),
            (
                "mi300-node07:48213:48390 [3] NCCL INFO /src/rccl/build/release/hipify/src/transport/net_ib.cc:1460 ROCr failure 'HSA_STATUS_ERROR_INVALID_ARGUMENT: One of the actual arguments does not meet a precondition stated in the documentation of the corresponding formal argument.'".to_owned(),
                None,
            ),
            ("mi300-node07:48213:48390 [3] NCCL INFO Unable to register signal handler for Segmentation fault".to_owned(), None),
        ] {
            assert_eq!(cat(&line), want, "{line}");
        }
    }

    #[test]
    fn nccl_ras_incomplete_names_the_missing_rank() {
        let (r, ex) = classify("  The missing rank: 21").unwrap();
        assert_eq!(
            (r.name, r.category, ex.subjects),
            (RULE_NCCL_RAS_MISSING, Category::RankCrashed, vec![21])
        );
        let (r, ex) = classify("  Missing communicator data from 1 job process").unwrap();
        assert_eq!((r.name, ex.subjects), (RULE_NCCL_RAS_MISSING, vec![]));
        // Its warning that gathering took timeouts names nobody.
        assert!(classify(
            "  Encountered 2 communication timeouts while gathering communicator data"
        )
        .is_none_or(|(r, _)| r.name != RULE_NCCL_RAS_MISSING));
    }

    #[test]
    fn nccl_ras_reports_name_the_dead_and_the_lagging() {
        let (r, _) =
            classify("  1 job process is considered dead (unreachable via the RAS network)")
                .unwrap();
        assert_eq!(
            (r.name, r.category),
            (RULE_NCCL_RAS_DEAD, Category::RankCrashed)
        );
        let (r, _) = classify(
            "[2026-06-12 10:41:07] PEER_DEAD: Process 48213 on node 10.1.2.4 managing GPU 3",
        )
        .unwrap();
        assert_eq!(r.name, RULE_NCCL_RAS_DEAD);
        let (r, ex) = classify(
            "  Rank 11 has launched up to operation 5631 -- GPU 3 managed by process 48213 on \
             node 10.1.2.4",
        )
        .unwrap();
        assert_eq!(
            (r.name, r.category, ex.subjects),
            (RULE_NCCL_RAS_BEHIND, Category::CollectiveTimeout, vec![11])
        );
        let (_, ex) = classify("  Rank 0 has not launched any operations -- GPU 0").unwrap();
        assert_eq!(ex.subjects, vec![0]);
        // The count of the ranks ahead is no rank of its own.
        assert!(classify("  15 ranks have launched up to operation 5632")
            .is_none_or(|(r, _)| r.name != RULE_NCCL_RAS_BEHIND));
    }

    #[test]
    fn sacct_rows_are_read_by_their_state() {
        // `sacct`'s default table as pasted: the job, its batch step, a step that completed.
        for (line, want) in [
            (
                "4242           train.sh        gpu    project         16 OUT_OF_ME+    0:125 ",
                Some(Category::HostOomKilled),
            ),
            (
                "4242.batch        batch               project         16 OUT_OF_MEMORY 0:125",
                Some(Category::HostOomKilled),
            ),
            (
                "4243           train.sh        gpu    project         16    TIMEOUT      0:0 ",
                Some(Category::LauncherInterrupted),
            ),
            (
                "4244_3         train.sh        gpu    project         16  PREEMPTED      0:0",
                Some(Category::LauncherInterrupted),
            ),
            (
                "4245           train.sh        gpu    project         16  NODE_FAIL      0:0",
                Some(Category::RankCrashed),
            ),
            // States that do not say why, the header, and prose are not read.
            (
                "4242.0          python               project         16  COMPLETED      0:0",
                None,
            ),
            (
                "4246           train.sh        gpu    project         16     FAILED      1:0",
                None,
            ),
            (
                "       JobID    JobName  Partition    Account  AllocCPUS      State ExitCode",
                None,
            ),
            ("the watchdog timeout 12:30", None),
        ] {
            assert_eq!(cat(line), want, "{line}");
        }
    }

    #[test]
    fn shell_reports_of_signals_are_read() {
        for line in [
            "Killed",
            "[1]+  Killed                  python train.py",
            "./run.sh: line 12: 48213 Killed                  torchrun --nproc_per_node 8 train.py",
            "Last State: Terminated, Reason: OOMKilled, Exit Code: 137",
            "ERROR: process exited with exit code 137",
            // Kubeflow's training operator ("pytorchjob-worker-1 exited with code 137"),
            // Docker Compose ("trainer-1 exited with code 137").
            "pytorchjob-worker-1 exited with code 137",
            "trainer-1 exited with code 137",
            // Horovod's gloo launcher (`runner/gloo_run.py`).
            "Process 3 exit with status code 137.",
        ] {
            assert_eq!(cat(line), Some(Category::HostOomKilled), "{line}");
        }
        assert_eq!(
            cat("worker exited with exit code 135"),
            Some(Category::ShmTooSmall)
        );
        assert_eq!(
            cat("container exit status 139"),
            Some(Category::RankCrashed)
        );
        assert_eq!(cat("exit_code: 139"), Some(Category::RankCrashed));
        // Words and other numbers are not reports.
        for line in [
            "the process was killed by the user",
            "exit code 1370",
            "exit code 1",
            "killed_processes: 0",
        ] {
            assert_eq!(cat(line), None, "{line}");
        }
    }

    #[test]
    fn an_attribute_read_through_the_ddp_wrapper_is_named() {
        let (r, ex) =
            classify("AttributeError: 'DistributedDataParallel' object has no attribute 'dtype'")
                .unwrap();
        assert_eq!(
            (r.name, r.category, r.role),
            (
                DDP_WRAPPER_ATTRIBUTE_RULE,
                Category::RankCrashed,
                Role::Cause
            )
        );
        assert_eq!(ex.detail.as_deref(), Some("`dtype`"));
    }

    /// A detail taken from the line is safe to print: a control character in a damaged log
    /// (the fuzzer's `\x1e` inside a library's name) is escaped, not passed on to the title.
    #[test]
    fn details_taken_from_a_line_carry_no_control_character() {
        for line in [
            "[ra\u{1e}nk1]: error while loading shared libraries: lib\u{1e}nccl.so.2: cannot open shared object file",
            "/usr/bin/python3: can't open file '/w/tr\u{1b}[31main.py': [Errno 2] No such file or directory",
        ] {
            let (_, ex) = classify(line).unwrap();
            let detail = ex.detail.expect("a detail");
            assert!(!detail.chars().any(char::is_control), "{detail:?}");
        }
    }

    /// PyTorch's own words for mistakes in a program's use of DDP, each read by its rule.
    #[test]
    fn program_mistakes_are_read_in_pytorch_s_exceptions() {
        for (line, rule) in [
            (
                "ValueError: Default process group has not been initialized, please make sure to call init_process_group.",
                "process_group_not_initialized",
            ),
            (
                "RuntimeError: DistributedDataParallel is not needed when a module doesn't have any parameter that requires a gradient.",
                "ddp_no_trainable_parameter",
            ),
            (
                "RuntimeError: tensors.size() > 0 INTERNAL ASSERT FAILED at /pytorch/torch/csrc/distributed/c10d/reducer.cpp:672, please report a bug to PyTorch.  (compute_bucket_assignment_by_size at /pytorch/torch/csrc/distributed/c10d/reducer.cpp:672)",
                "ddp_no_trainable_parameter",
            ),
            (
                "ValueError: DistributedDataParallel device_ids and output_device arguments only work with single-device/multiple-device GPU modules or CPU modules, but got device_ids [0], output_device 0, and module parameters {device(type='cpu')}.",
                "ddp_device_ids_mismatch",
            ),
            (
                "RuntimeError: Modules with uninitialized parameters can't be used with `DistributedDataParallel`. Run a dummy forward pass to correctly initialize the modules",
                "ddp_lazy_parameters",
            ),
            (
                "RuntimeError: No backend type associated with device type cpu",
                "nccl_cpu_tensor",
            ),
            (
                "AssertionError: Default process group is not initialized",
                "process_group_not_initialized",
            ),
            (
                "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use the 'spawn' start method",
                "cuda_in_forked_process",
            ),
            (
                "ValueError: device_ids can only be None or contain a single element.",
                "ddp_several_device_ids",
            ),
            (
                "ValueError: DistributedDataParallel's input module must be on the same type of devices, but input module parameters locate in {'cpu', 'cuda'}.",
                "ddp_mixed_device_types",
            ),
            (
                "ValueError: SyncBatchNorm layers only work with GPU modules",
                "syncbn_on_cpu",
            ),
            (
                "ValueError: SyncBatchNorm expected input tensor to be on GPU or XPU or privateuseone",
                "syncbn_on_cpu",
            ),
            (
                "ValueError: Expected more than 1 value per channel when training, got input size torch.Size([1, 512])",
                "batchnorm_single_sample",
            ),
            (
                "\tUnexpected key(s) in state_dict: \"module.conv1.weight\", \"module.bn1.weight\". ",
                "state_dict_ddp_prefix",
            ),
            (
                "\tMissing key(s) in state_dict: \"module.fc.weight\", \"module.fc.bias\". ",
                "state_dict_ddp_prefix",
            ),
            (
                "\tUnexpected key(s) in state_dict: \"_orig_mod.transformer.wte.weight\". ",
                "state_dict_compile_prefix",
            ),
            (
                "\tUnexpected key(s) in state_dict: \"module._orig_mod.fc.weight\". ",
                "state_dict_compile_prefix",
            ),
            (
                "ValueError: sampler option is mutually exclusive with shuffle",
                "sampler_with_shuffle",
            ),
            ("RuntimeError: Tensors must be CUDA and dense", "nccl_cpu_tensor"),
            (
                "ValueError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!",
                "nccl_without_gpu",
            ),
            (
                "RuntimeError: Distributed package doesn't have NCCL built in",
                "nccl_not_built",
            ),
            (
                "ValueError: Error initializing torch.distributed using env:// rendezvous: environment variable MASTER_ADDR expected, but not set",
                "env_rendezvous_unset",
            ),
            (
                "AssertionError: Torch not compiled with CUDA enabled",
                "torch_without_cuda",
            ),
            (
                "        An attempt has been made to start a new process before the",
                "spawn_without_main_guard",
            ),
            (
                "AttributeError: Can't pickle local object 'main.<locals>.run'",
                "spawn_unpicklable",
            ),
            (
                "TypeError: cannot pickle '_thread.lock' object",
                "spawn_unpicklable",
            ),
        ] {
            let (r, _) = classify(line).unwrap_or_else(|| panic!("{line}"));
            assert_eq!((r.name, r.role), (rule, Role::Cause));
            assert!(PROGRAM_MISTAKES.iter().any(|m| m.rule == rule), "{rule}");
        }
        // Another accelerator's group is not NCCL's.
        assert!(
            classify("RuntimeError: No backend type associated with device type npu")
                .is_none_or(|(r, _)| r.name != "nccl_cpu_tensor")
        );
    }

    #[test]
    fn nccl_s_lost_network_device_is_its_own_bug() {
        let (r, ex) = classify("graph/topo.h:230 NCCL WARN Could not find NET with id 0").unwrap();
        assert_eq!(
            (r.name, r.category),
            (
                "nccl_topology_lost_net",
                Category::NcclInternalOrUnsupported
            )
        );
        assert!(ex.detail.unwrap().contains("2.27.3"));
    }

    #[test]
    fn the_address_a_rank_could_not_reach_is_read_in_each_form() {
        let detail = |line: &str| classify(line).unwrap().1.detail;
        assert_eq!(
            detail("[E socket.cpp:793] [c10d] The client socket has timed out after 60s while trying to connect to (host-a, 2222)."),
            Some("to host-a:2222".to_owned())
        );
        assert_eq!(
            detail("[W socket.cpp:601] [c10d] The client socket has failed to connect to [host-a]:29500 (errno: 111 - Connection refused)."),
            Some("to [host-a]:29500".to_owned())
        );
        assert_eq!(
            detail("RuntimeError: The client socket has failed to connect to any network address of (10.0.0.1, 23456). The client socket has failed to connect to 10.0.0.1:23456 (errno: 110 - Connection timed out)."),
            Some("to 10.0.0.1:23456".to_owned())
        );
        assert_eq!(
            detail("RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:83] ifa != nullptr. Unable to find address for: ^lo"),
            Some("no address for interface ^lo (a `^` exclusion, which NCCL_SOCKET_IFNAME takes but GLOO_SOCKET_IFNAME does not: name the interface to use)".to_owned())
        );
    }

    #[test]
    fn a_cuda_call_nccl_made_wrongly_is_nccl_s_not_the_program_s() {
        for line in [
            "host-a:4163:4163 [0] enqueue.cc:336 NCCL WARN Cuda failure 'invalid resource handle'",
            "Cuda failure 'invalid argument'",
        ] {
            let (r, ex) = classify(line).unwrap();
            assert_eq!(
                (r.name, r.category),
                (
                    "nccl_cuda_call_refused",
                    Category::NcclInternalOrUnsupported
                )
            );
            assert!(ex.detail.unwrap().contains("torch.cuda.set_device"));
        }
        // A fault of the program's kernels stays a CUDA error.
        let (r, _) =
            classify("NCCL WARN Cuda failure 'an illegal memory access was encountered'").unwrap();
        assert_eq!(r.category, Category::CudaError);
    }

    #[test]
    fn the_store_client_s_errno_wrapped_onto_its_own_line_is_not_an_interface() {
        // c10d's store client, wrapped by a 120-column terminal before its errno: the first
        // part is connection_refused's; the rest alone must not say network interface.
        let (r, _) = classify(
            "RuntimeError: The client socket has failed to connect to any network address of \
             (host-a, 9901). The client socket has fa",
        )
        .unwrap();
        assert_eq!(r.category, Category::ConnectionRefused);
        let rest =
            classify("iled to connect to host-a.admin:9901 (errno: 113 - No route to host).");
        assert!(rest.is_none_or(|(r, _)| r.category != Category::NetworkInterface));
        // NCCL's own words for the same errno stay the interface's.
        let (r, _) = classify(
            "host-a:1:2 [0] NCCL WARN Connect to 10.0.0.2<34630> failed : No route to host",
        )
        .unwrap();
        assert_eq!(r.category, Category::NetworkInterface);
    }

    #[test]
    fn a_container_s_default_dev_shm_reported_at_start_up_is_a_symptom() {
        let line = "2023-11-18 03:39:16,283 WARNING services.py:1996 -- WARNING: The object store is using /tmp instead of /dev/shm because /dev/shm has only 67108864 bytes available. This will harm performance!";
        let (r, ex) = classify(line).unwrap();
        assert_eq!(
            (r.name, r.category, r.role),
            (
                "shm_default_size_reported",
                Category::ShmTooSmall,
                Role::Symptom
            )
        );
        assert!(ex.detail.unwrap().contains("--shm-size"));
        // A larger /dev/shm than the default is Ray's concern, not NCCL's.
        assert!(classify(&line.replace("67108864", "8589934592")).is_none());
    }

    #[test]
    fn a_shared_memory_segment_another_container_made_is_a_dev_shm_problem() {
        let (r, ex) = classify("host-a:123:456 [1] misc/shmutils.cc:90 NCCL WARN Error while attaching to shared memory segment /dev/shm/nccl-Ab12Cd (size 9637888), error: No such file or directory (2)").unwrap();
        assert_eq!(
            (r.name, r.category),
            ("nccl_shm_attach", Category::ShmTooSmall)
        );
        assert!(ex.detail.unwrap().contains("--ipc=host"));
    }

    #[test]
    fn gloo_s_synchronous_read_timeout_is_a_collective_that_timed_out() {
        let (r, _) = classify("RuntimeError: [/opt/conda/conda-bld/pytorch_1532579245307/work/third_party/gloo/gloo/transport/tcp/buffer.cc:76] Read timeout [127.0.0.1]:32444").unwrap();
        assert_eq!(
            (r.name, r.category),
            ("gloo_read_timeout", Category::CollectiveTimeout)
        );
    }

    #[test]
    fn the_store_based_barrier_while_it_waits_says_how_many_arrived() {
        let (r, ex) = classify("I0510 07:28:04.417845 139863945226048 distributed_c10d.py:337] Waiting in store based barrier to initialize process group for rank: 2, key: store_based_barrier_key:2 (world_size=8, worker_count=7, timeout=0:30:00)").unwrap();
        assert_eq!(
            (r.name, r.category, r.role),
            (
                "store_based_barrier_wait",
                Category::RendezvousTimeout,
                Role::Symptom
            )
        );
        assert_eq!(
            ex.detail.as_deref(),
            Some("only 7 of 8 ranks reached the start-up barrier")
        );
        // PyTorch 2.x's wording.
        let (r, _) = classify("Waiting in store based barrier to initialize process group for rank: 0, key: store_based_barrier_key:1 (world_size=2, num_workers_joined=1, timeout=0:30:00)").unwrap();
        assert_eq!(r.name, "store_based_barrier_wait");
    }

    #[test]
    fn uneven_inputs_are_read_in_the_join_warning_and_fairseq_s_gather() {
        let (r, ex) = classify("/path/to/torch/distributed/algorithms/join.py:258: UserWarning: Detected uneven input skew of greater than 1000. This means that rank 1 has at least 1000 fewer inputs than other currently-active ranks. This level of skew could lead to performance degradation during training.").unwrap();
        assert_eq!(
            (r.name, r.category),
            ("uneven_inputs", Category::UnevenInputs)
        );
        assert_eq!(ex.subjects, [1]);
        let (r, _) = classify("Exception: Unable to unpickle data from other workers. all_gather_list requires all workers to enter the function together, so this error usually indicates that the workers have fallen out of sync somehow.").unwrap();
        assert_eq!(
            (r.name, r.category),
            ("workers_out_of_sync", Category::UnevenInputs)
        );
        let (r, ex) = classify("ERROR: composer.utils.checkpoint: Exception <class 'OSError'> raised during downloading: [Errno 28] No space left on device").unwrap();
        assert_eq!(
            (r.name, r.category),
            ("composer_download_failed", Category::RankCrashed)
        );
        assert_eq!(
            ex.detail.as_deref(),
            Some("downloading the checkpoint failed: OSError: [Errno 28] No space left on device")
        );
        let (r, ex) = classify("RuntimeError: ('Ranks [5, 12] failed to download.', 'To see the full error please look at the logs for that rank, which are logged via log.error.')").unwrap();
        assert_eq!(
            (r.name, r.category, ex.subjects),
            (
                "composer_ranks_failed_to_download",
                Category::RankCrashed,
                vec![5, 12]
            )
        );
        let (r, ex) = classify("/usr/lib/python3.11/site-packages/composer/trainer/trainer.py:2539: UserWarning: No batches were trained for global rank 7. This may be due to an issue with the train dataset, dataloader, or sampler. This may cause other issues or crashes down the line.").unwrap();
        assert_eq!(
            (r.name, r.category, ex.subjects),
            (RULE_NO_BATCHES_ON_RANK, Category::UnevenInputs, vec![7])
        );
    }

    #[test]
    fn store_based_barrier_counts_say_timeout_or_two_launches() {
        let (r, ex) = classify("RuntimeError: Timed out initializing process group in store based barrier on rank: 0, for key: store_based_barrier_key:1 (world_size=8, worker_count=1, timeout=0:30:00)").unwrap();
        assert_eq!(r.category, Category::RendezvousTimeout);
        assert_eq!(ex.category, None);
        assert_eq!(ex.expected_world, Some(8));
        assert_eq!(
            ex.detail.as_deref(),
            Some("only 1 of 8 ranks reached the start-up barrier")
        );
        let (_, ex) = classify("torch.distributed.DistStoreError: Timed out initializing process group in store based barrier on rank 3, for key: store_based_barrier_key:1 (world_size=8, num_workers_joined=16, timeout=0:15:00 error=x)").unwrap();
        assert_eq!(ex.category, Some(Category::WorldSizeMismatch));
        assert_eq!(
            cat("h:1:1 [0] bootstrap.cc:300 NCCL WARN Bootstrap Root : mismatch in rank count from procs 8 : 16"),
            Some(Category::WorldSizeMismatch)
        );
    }

    #[test]
    fn waiting_for_rank_0_at_the_first_collective_or_main_process_first_is_a_rank_behind() {
        // ProcessGroupNCCL's broadcastUniqueNCCLID, as its source formats it.
        let (r, ex) = classify("[7] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: Socket Timeout").unwrap();
        assert_eq!(r.category, Category::CollectiveTimeout);
        assert_eq!(ex.subjects, vec![7], "the rank that timed out");
        assert!(
            ex.detail
                .as_deref()
                .unwrap()
                .starts_with("rank 7 waited for rank 0's"),
            "{ex:?}"
        );
        // A store timeout without it stays a rendezvous matter.
        assert_eq!(
            cat("torch.distributed.DistStoreError: store timed out: Socket Timeout"),
            Some(Category::RendezvousTimeout)
        );
        // The waiting side of transformers' and accelerate's main_process_first.
        for line in [
            "    with training_args.main_process_first(desc=\"dataset map tokenization\"):",
            "    with accelerator.main_process_first():",
        ] {
            assert_eq!(cat(line), Some(Category::CollectiveTimeout), "{line}");
        }
    }

    #[test]
    fn comm_world_size_mismatch_names_the_odd_rank() {
        let (r, ex) = classify(
            "train: error: process group setup failed on rank 0: world size mismatch: rank 3 was \
             started with world size 8, rank 0 with 4; every rank needs the same WORLD_SIZE",
        )
        .unwrap();
        assert_eq!(r.category, Category::WorldSizeMismatch);
        assert_eq!(ex.subjects, vec![3]);
        assert!(ex
            .detail
            .unwrap()
            .starts_with("world size mismatch: rank 3"));
    }

    #[test]
    fn extractors_read_the_specifics() {
        let (r, ex) = classify(
            "rendezvous timed out after 30s: ranks 2, 3 of 4 never arrived at 127.0.0.1:29500 (check)",
        )
        .unwrap();
        assert_eq!(r.category, Category::RendezvousTimeout);
        assert_eq!(ex.subjects, vec![2, 3]);
        assert_eq!(ex.expected_world, Some(4));
        let (_, ex) = classify(
            "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined.",
        )
        .unwrap();
        assert_eq!(ex.expected_world, Some(2));
        let (r, ex) =
            classify("error: timed out after 30s in all_reduce seq 17: still waiting for rank 1")
                .unwrap();
        assert_eq!(r.category, Category::CollectiveTimeout);
        assert_eq!(ex.subjects, vec![1]);
        assert_eq!(ex.detail.as_deref(), Some("all_reduce seq 17"));
        let (_, ex) =
            classify("timed out after 30s waiting for rank 1 in all_reduce seq 17").unwrap();
        assert_eq!(ex.subjects, vec![1]);
        let (r, ex) = classify(
            "error: process group setup failed on rank 0: rank 1 closed its connection during all_reduce seq 17; it probably exited or was killed",
        )
        .unwrap();
        assert_eq!(r.name, "peer_closed");
        assert_eq!(ex.subjects, vec![1]);
        assert_eq!(
            ex.detail.as_deref(),
            Some("rank 1 closed its connection during all_reduce seq 17")
        );
        let (_, ex) = classify("[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=17, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600044 milliseconds before timing out.").unwrap();
        assert_eq!(
            ex.detail.as_deref(),
            Some("ALLREDUCE SeqNum=17 ran for 600044 ms (timeout 600000 ms)")
        );
        let (_, ex) = classify("RuntimeError: The server socket has failed to listen on any local network address. The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use).").unwrap();
        assert_eq!(ex.detail.as_deref(), Some("port 29500"));
    }

    #[test]
    fn ncclcheck_lines_are_read_by_their_result_code() {
        for (line, code) in [
            ("host-a:1:2 [0] NCCL INFO init.cc:840 -> 2", Some(2)),
            ("host-a:1:2 [0] NCCL INFO graph/xml.cc:469 -> 2", Some(2)),
            (
                "host-a:1:2 [0] NCCL INFO group.cc:73 -> 5 [Async thread]",
                Some(5),
            ),
            (
                "host-a:1:2 [0] NCCL INFO proxy.cc:900 -> 3 [Proxy Thread]",
                Some(3),
            ),
            // ncclRemoteError: a refused connect or a peer gone, not said which; "in progress"
            // is no failure.
            ("host-a:1:2 [0] NCCL INFO misc/socket.cc:565 -> 6", None),
            ("host-a:1:2 [0] NCCL INFO init.cc:1500 -> 7", None),
            // The InfiniBand plugin's start on a host without it: NCCL goes on with sockets.
            (
                "host-a:1:2 [0] NCCL INFO transport/net_ib/init.cc:370 -> 3",
                None,
            ),
            // Transports and rings use the same arrow between ranks.
            (
                "host-a:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
                None,
            ),
            ("host-a:1:2 [0] NCCL INFO Ring 00 : 0 -> 1 -> 2", None),
            // Not NCCL's INFO.
            ("train.py:12 -> 2", None),
        ] {
            assert_eq!(nccl_return_code(&line.to_ascii_lowercase()), code, "{line}");
        }
    }

    /// Messages as NCCL's, aws-ofi-nccl's, gloo's and PyTorch's sources print them (read in
    /// those sources on 2026-12-03: NCCL 2.18 to 2.30, gloo of 2023 and 2025, PyTorch 2.13),
    /// each alone on a line, and the category each names.
    #[test]
    fn messages_read_in_the_sources_name_their_causes() {
        use Category::*;
        let cases = [
            ("host-a:1234:1240 [0] transport/net_ib/p2p.cc:290 NCCL WARN NET/IB: Got completion from peer 10.0.0.2<51234> with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_RDMA_WRITE(1) vendor_err=129", Infiniband),
            ("host-a:1234:1240 [0] misc/ibvwrap.cc:190 NCCL WARN Call to ibv_poll_cq() returned -1", Infiniband),
            ("host-a:1234:1240 [0] graph/xml.cc:332 NCCL WARN Could not find real path of /sys/class/pci_bus/0000:01/../../0000:01:00.0", NcclInternalOrUnsupported),
            ("host-a:1234:1240 [0] NCCL INFO init.cc:840 -> 2", NcclInternalOrUnsupported),
            ("host-a:1234:1240 [0] NCCL INFO group.cc:73 -> 1 [Async thread]", CudaError),
            ("RuntimeError: The device index is out of range. It must be in [0, 6), but got 11.", CudaError),
            ("E0108 10:38:38.120491 1479096 CtranIb.cc:831] CTRAN ERROR CTRAN-IB: buffer registration failed: buf = 0x640000000, len = 4294967296, dmaBufSupport = true, NCCL_CTRAN_IB_DMABUF_ENABLE = true, useDmaBuf = true", Infiniband),
            ("host-a:1234:1240 [0] NCCL INFO ncclOsSocketStartConnect: connect to 127.0.0.1<52243> returned Connection refused, retrying (1/34) after sleep for 100 msec", NetworkInterface),
            ("host-a:1234:1240 [0] transport/net_ib.cc:520 NCCL WARN NET/IB : Unable to open device mlx5_0", Infiniband),
            ("host-a:1234:1240 [0] transport/net_ib.cc:880 NCCL WARN NET/IB : Attempted to connect incompatible devices: [0]mlx5_0:1/IB and [2]mlx5_2:1/RoCE.", Infiniband),
            ("host-a:1234:1240 [0] transport/net_ib.cc:1800 NCCL WARN communicator encountered a fatal error (detected in ncclIbTest)", Infiniband),
            ("host-a:1234:1240 [0] transport/net.cc:120 NCCL WARN Detected mixed local Net device counts across ranks (min 4, max 8). Set NCCL_IGNORE_NET_MISMATCH=1 to continue.", Infiniband),
            ("host-a:1234:1240 [0] NCCL WARN NET/OFI Request 0x7f3a2c0012a0 ({ dev: 0, size: 1048576, state: PENDING, type: SEND }) completed with error: err: 113", Infiniband),
            ("host-a:1234:1240 [0] NCCL WARN NET/OFI Couldn't create domain. RC: -12, ERROR: Cannot allocate memory", Infiniband),
            ("host-a:1234:1240 [0] transport/net_ib.cc:400 NCCL WARN NET/IB : No IP interface found.", NetworkInterface),
            ("host-a:1234:1240 [0] bootstrap.cc:100 NCCL WARN no device found matching ib0, verify NCCL_OOB_NET_IFNAME", NetworkInterface),
            ("host-a:1234:1240 [0] init.cc:200 NCCL WARN Failed to initialize any NET plugin", Infiniband),
            ("host-a:1234:1240 [0] misc/socket.cc:450 NCCL WARN Call to bind failed: Cannot assign requested address", NetworkInterface),
            ("OSError: [Errno 99] Cannot assign requested address", NetworkInterface),
            ("host-a:1234:1240 [0] transport/net_socket.cc:325 NCCL WARN NET/Socket : socket progress error", RankCrashed),
            ("host-a:1234:1240 [0] proxy.cc:1371 NCCL WARN Comm 0x55d1c0 is in abort state", RankCrashed),
            ("2023-May-21 01:40:15.0924 93703:93705 [0] init.cc:655 CCOM WARN Unable to run multi-instance workload.  Ofi plugin is not installed or EFA is not enabled", Infiniband),
            ("2023-May-21 01:40:03.0080 93703:93705 [0] init.cc:99 CCOM WARN OFI plugin initNet() failed is EFA enabled?", Infiniband),
            ("zmq.error.ZMQError: Cannot assign requested address (addr='tcp://10.0.0.2:5555')", NetworkInterface),
            ("RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:212] ifa != nullptr. Unable to find interface for: 10.0.0.9", NetworkInterface),
            ("RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/socket.cc:95] rv != -1. -1 vs -1. bind: Cannot assign requested address", NetworkInterface),
            ("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.h:311] Connect timeout [10.0.0.2]:61497", NetworkInterface),
            ("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:314] Write timeout [10.0.0.2]:61497", CollectiveTimeout),
            ("host-a:1234:1240 [0] misc/socket.cc:480 NCCL WARN Call to socket failed: Too many open files", RankCrashed),
            ("[c10d] The server socket on [::]:29500 has failed to accept a connection (errno: 24 - Too many open files).", RankCrashed),
            ("RuntimeError: received 0 items of ancdata", RankCrashed),
            ("[c10d] waitForInput: socket SocketImpl(fd=12, addr=[host-b]:51234, remote=[host-a]:29500) timed out after 300000ms", RendezvousTimeout),
            ("[Rank 3] Work WorkNCCL(SeqNum=1842, OpType=ALLREDUCE, NumelIn=25557032, NumelOut=25557032, Timeout(ms)=600000) timed out in blocking wait (TORCH_NCCL_BLOCKING_WAIT=1).", CollectiveTimeout),
            ("[PG ID 0 PG GUID 0(default_pg) Rank 3] Terminating the process after attempting to dump debug info, due to collective timeout or exception.", CollectiveTimeout),
            ("Rank 0 timed out in monitoredBarrier after 1800000 ms.", CollectiveTimeout),
            ("[PG ID 0 PG GUID 0(default_pg) Rank 3]  remote error detected from rank: 5", RankCrashed),
            ("Got termination signal: 15", LauncherInterrupted),
            ("RuntimeError: DeepEP error: timeout (dispatch CPU)", CollectiveTimeout),
            ("torch.distributed.DistNetworkError: Failed to send, sent 0 bytes. Connection was likely closed. Did the remote server shutdown or crash?", RankCrashed),
            ("[PG ID 0 PG GUID 0(default_pg) Rank 1] Received a dump signal due to a collective timeout from rank 3 and we will try our best to dump the debug info. Last enqueued NCCL work: 42, last completed NCCL work: 41.", CollectiveTimeout),
            ("host-a:1:2 [0] NCCL WARN nvmlInit_v2() failed: Driver/library version mismatch", CudaError),
            ("host-a:1:2 [0] NCCL WARN CUDA Driver version found is 11040. Minimum requirement is 12020", CudaError),
            ("host-a:1:2 [0] init.cc:100 NCCL WARN NCCL library is too old. This application was compiled with NCCL version 2.21.5, but is running with NCCL version 2.18.1", NcclVersionMismatch),
            ("host-a:1:2 [0] bootstrap.cc:200 NCCL WARN Bootstrap Root : mismatch in info from procs, nranks 8 vs 16, nroots 1 vs 1, iroot 0 vs 0, offset 0 vs 0", WorldSizeMismatch),
            // The shared-memory transport's cuMem import, not the P2P transport (NCCL 2.27's
            // shm.cc:590 is `cuMemImportFromShareableHandle`).
            ("transport/shm.cc:590 NCCL WARN Cuda failure 217 'peer access is not supported between these two devices'", NcclInternalOrUnsupported),
            ("host-a:1:2 [0] transport/p2p.cc:275 NCCL WARN Cuda failure 'peer access is not supported between these two devices'", P2pHang),
            ("host-a:1234:1300 [0] bootstrap.cc:120 NCCL WARN Message truncated : received 2048 bytes instead of 1024", NcclVersionMismatch),
            ("vm-0:606:642 [6] NCCL WARN NCCL/NET (shim) mismatch enforced: NCCL_P2P_NVL_CHUNKSIZE = 524288 (expected 262144)", NcclInternalOrUnsupported),
            // The dynamic linker's words for a process that cannot start.
            ("python: error while loading shared libraries: libnccl.so.2: cannot open shared object file: No such file or directory", RankCrashed),
            ("/usr/lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found (required by /usr/local/gib/lib64/libnccl.so.2)", RankCrashed),
            ("[1669031880.738755] [host-a:588291:0]     ucp_context.c:969  UCX  WARN  network device 'fake_device' is not available, please use one or more of: 'bond0'(tcp), 'lo'(tcp), 'mlx5_0:1'(ib)", NetworkInterface),
            ("UCX  ERROR   no active messages transport to <no debug data>: Unsupported operation", NetworkInterface),
            ("libcudart.so.11.0: cannot open shared object file: No such file or directory", RankCrashed),
            ("Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:368 'invalid argument'", CudaError),
            ("Memory on the node (IP: 10.0.0.2, ID: 3a4b6075) where the task (task ID: ffff) was running was 32.53GB / 33.28GB (0.977449), which exceeds the memory usage threshold of 0.95. Ray killed this worker (ID: 8d6e) because it was the most recently scheduled task", HostOomKilled),
            ("MPICH ERROR [Rank 0] [job id 2853270.0] [Fri Dec 13 13:41:36 2024] [host-a] - Abort(2665871) (rank 0 in comm 0): Fatal error in PMPI_Init_thread: Other MPI error, error stack:", RankCrashed),
            ("Abort(16): Fatal error in internal_Init_thread: Internal MPI error!", RankCrashed),
            ("CUresult error result=2 file=csrc/torch_memory_saver.cpp func=cu_mem_create line=103", CudaOom),
            ("CUresult error result=1 file=csrc/torch_memory_saver.cpp func=cu_mem_map line=120", CudaError),
            ("PID\tMEM(GB)\tCOMMAND", HostOomKilled),
            ("PID     MEM(GB) COMMAND", HostOomKilled),
            ("RuntimeError: unable to write to file </torch_31_1030151126>", ShmTooSmall),
            ("bash: orted: command not found", RankCrashed),
            ("libfabric:16642:1701636928::cxi:core:cxip_cq_eq_progress():531<warn> host-a: Cassini Event Queue overflow detected.", Infiniband),
            ("host-a:22671:22795 [1] transport/p2p.cu:431 WARN failed to open CUDA IPC handle : 30 unknown error", P2pHang),
            ("RuntimeError: The inner error: Socket Timeout", RendezvousTimeout),
            // NCCL's duplicate-GPU sentence without its first words.
            ("Error: rank 27 and rank 19 both on CUDA device 53000 (PCI 53:00.0)", DuplicateGpu),
            // Open MPI's and glog's signal handlers, cut after their first line.
            ("[host-b:405884] *** Process received signal ***", RankCrashed),
            ("*** Aborted at 1628840833 (unix time) try \"date -d @1628840833\" if you are using GNU date ***", RankCrashed),
            ("ValueError: You set `devices=4` and `num_nodes=1` in Lightning, but the product (4 * 1) does not match the world size (8).", WorldSizeMismatch),
            ("ValueError: You set `num_nodes=2` in Lightning, but the number of nodes configured in SLURM `--nodes=1` does not match. HINT: Set `num_nodes=1`.", WorldSizeMismatch),
            ("host-a:1:2 [0] NCCL WARN NET/IB : mlx5_0:1 GID table changed", Infiniband),
            ("host-a:1:2 [0] graph/rings.cc:51 NCCL WARN Error : ring 0 does not loop back to start (7 != 0)", NcclInternalOrUnsupported),
            ("host-a:1:2 [0] graph/rings.cc:64 NCCL WARN Error : ring 1 does not contain rank 5", NcclInternalOrUnsupported),
            ("host-a:1:2 [0] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device", ShmTooSmall),
            ("host-a:1:2 [0] misc/shmutils.cc:46 NCCL WARN Could not map /dev/shm/nccl-2xQ1kB", ShmTooSmall),
            ("DeepEP timeout for dispatch receivers, rank 3, responsible_channel = 5, tokens remained: 12", CollectiveTimeout),
            ("host-a:1234:1240 [0] include/alloc.h:125 NCCL WARN Failed to CUDA calloc 4194304 bytes", CudaOom),
            ("host-a:1234:1240 [0] init.cc:900 NCCL WARN Multiple Ranks are using the same GPU/Partition. Set NCCL_MULTI_RANK_GPU_ENABLE=1 to enable this configuration", DuplicateGpu),
            ("host-a:1234:1240 [0] misc/cudawrap.cc:180 NCCL WARN Failed to find CUDA library libcuda.so (NCCL_CUDA_PATH='') : libcuda.so: cannot open shared object file: No such file or directory", CudaError),
            ("host-a:1234:1240 [0] misc/nvmlwrap.cc:60 NCCL WARN Failed to open libnvidia-ml.so.1", CudaError),
            ("host-a:1234:1240 [0] transport.cc:170 NCCL WARN No transport found for rank 0[1b000] -> rank 1[1c000]", NcclInternalOrUnsupported),
            ("ValueError: device_id cuda:8 is out of range. Please use a device index less than the number of accelerators available: 8.", CudaError),
            ("ValueError: local_rank 8 exceeds available GPUs in CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7", CudaError),
            (" But your machine only has: [0, 1]", CudaError),
            ("ValueError: You requested to find 8 devices but this machine only has 4 GPUs.", CudaError),
            ("RuntimeError: You requested to find 4 devices but only 2 are currently available. The devices [2, 3] are occupied by other processes and can't be used at the moment.", CudaError),
            ("ValueError: You requested to find 2 devices but there are no visible CUDA devices on this machine.", CudaError),
            ("RuntimeError: The sizes `data_parallel_size=2` and `tensor_parallel_size=2` multiplied should equal the world size (8).", WorldSizeMismatch),
            ("deepspeed.elasticity.config.ElasticityIncompatibleWorldSize: World size (3) is not valid with the current list of valid GPU counts: [2, 4, 8]", WorldSizeMismatch),
        ];
        for (line, category) in cases {
            let found = classify(line).map(|(r, ex)| (r.category, ex.category));
            let got = found.map(|(rule, extracted)| extracted.unwrap_or(rule));
            assert_eq!(got, Some(category), "{line}");
        }
        let (_, ex) =
            classify("[PG ID 0 PG GUID 0(default_pg) Rank 3]  remote error detected from rank: 5")
                .unwrap();
        assert_eq!(ex.subjects, vec![5]);
        // Not failures: NCCL's retries, a poll that goes on waiting.
        for line in [
            "[c10d] waitForInput: poll for socket SocketImpl(fd=12, addr=[host-b]:51234, remote=[host-a]:29500) returned operation_in_progress",
            "host-a:1234:1240 [0] NCCL INFO Call to connect returned Connection refused, retrying",
            "host-a:1234:1240 [0] NCCL INFO ncclOsSocketStartConnect: connect to 10.0.0.2<52243> returned Connection refused, retrying (1/34) after sleep for 100 msec",
        ] {
            assert_eq!(classify(line).map(|(r, _)| r.name), None, "{line}");
        }
    }

    #[test]
    fn a_message_s_second_half_alone_still_names_its_cause() {
        // c10d's bind failure on the wildcard address with its errno cut off, and the same
        // line saying why it was no port in use.
        let (rule, ex) = classify("The server socket has failed to bind to [::]:19936").unwrap();
        assert_eq!((rule.name, ex.port), ("port_bind_failed", Some(19936)));
        for other in [
            "The server socket has failed to bind to [::]:29500 (errno: 97 - Address family not supported by protocol).",
            "The server socket has failed to bind to [::]:80 (errno: 13 - Permission denied).",
        ] {
            assert_ne!(classify(other).map(|(r, _)| r.category), Some(Category::PortInUse));
        }
        // The watchdog's timeout, its first half cut off.
        let (rule, ex) = classify(
            "NumelIn=6424320, NumelOut=12848640, Timeout(ms)=1800000) ran for 1800027 milliseconds before timing out.",
        )
        .unwrap();
        assert_eq!(rule.name, "watchdog_timeout");
        assert_eq!(
            ex.detail.as_deref(),
            Some("ran for 1800027 ms (timeout 1800000 ms)")
        );
        // TCPStore's count of the ranks that came, without "waiting for clients" before it.
        let (rule, ex) = classify("1/16 clients joined.").unwrap();
        assert_eq!(rule.category, Category::RendezvousTimeout);
        assert_eq!(ex.expected_world, Some(16));
        // The data loader's report of a worker's SIGBUS, without the worker's own line.
        let (rule, _) =
            classify("RuntimeError: DataLoader worker (pid 3527) is killed by signal: Bus error.")
                .unwrap();
        assert_eq!(rule.category, Category::ShmTooSmall);
        // The same line cut before the signal's name reads as the most frequent signal, SIGKILL,
        // by its own rule (a medium finding); with the name it is that name's.
        for (line, want) in [
            (
                "DataLoader worker (pid xxx) is killed by signal",
                RULE_WORKER_SIGNAL_CUT,
            ),
            (
                "RuntimeError: DataLoader worker (pid 81) is killed by signal:",
                RULE_WORKER_SIGNAL_CUT,
            ),
            (
                "RuntimeError: DataLoader worker (pid 81) is killed by signal: Killed.",
                DATALOADER_WORKER_KILLED_RULE,
            ),
        ] {
            assert_eq!(classify(line).unwrap().0.name, want, "{line}");
        }
    }

    /// accelerate's, DeepSpeed's and Lightning's own messages, as their sources word them
    /// (accelerate 16cb6eb, DeepSpeed edaa722, Lightning 7f0c343): the category and the rule
    /// that reads each.
    #[test]
    fn accelerate_deepspeed_and_lightning_messages_read_from_their_sources() {
        for (line, want, by) in [
            // accelerate: the backend it picks for a process without CUDA.
            (
                "ValueError: Your assigned backend nccl is not available, please use gloo",
                Category::NcclInternalOrUnsupported,
                "nccl_without_gpu",
            ),
            (
                "RuntimeError: No executable batch size found, reached zero.",
                Category::CudaOom,
                RULE_BATCH_SIZE_FINDER_EXHAUSTED,
            ),
            (
                "ValueError: ParallelismConfig total_size (8) does not match num_processes (4). \
                 Please adjust dp_replicate_size/ dp_shard_size/tp_size/cp_size.",
                Category::WorldSizeMismatch,
                "parallel_layout_vs_world",
            ),
            (
                "RuntimeError: There are currently no available devices found, must be one of \
                 'XPU', 'CUDA', 'MLU', 'NPU', 'MUSA', 'HPU', or 'NEURON'.",
                Category::CudaError,
                "no_usable_gpu",
            ),
            (
                "RuntimeError: No GPU found. A GPU is needed for quantization.",
                Category::CudaError,
                "no_usable_gpu",
            ),
            // DeepSpeed.
            (
                "RuntimeError: Unable to proceed, no GPU resources available",
                Category::CudaError,
                "no_usable_gpu",
            ),
            (
                "SystemError: Accelerator is not detected, cannot perform low precision \
                 training (e.g., fp16, bf16).",
                Category::CudaError,
                "no_usable_gpu",
            ),
            (
                "SystemError: Cannot use fp16 without accelerator.",
                Category::CudaError,
                "no_usable_gpu",
            ),
            (
                "RuntimeError: DeepSpeed JIT builder for 'fused_adam' found no CUDA devices. Set \
                 TORCH_CUDA_ARCH_LIST or make GPUs visible.",
                Category::CudaError,
                "no_usable_gpu",
            ),
            (
                "                        (1) enable ignore_unused_parameters option in \
                 zero_optimization config;",
                Category::UnusedParameters,
                "unused_parameters",
            ),
            (
                "AssertionError: The parameter 17 has already been reduced.             \
                 Gradient computed twice for this partition.             Multiple gradient \
                 reductions are currently not supported",
                Category::UnusedParameters,
                PARAMETER_READY_TWICE_RULE,
            ),
            (
                "RuntimeError: num_stages (4) must divide distributed world size (6)",
                Category::WorldSizeMismatch,
                "parallel_layout_vs_world",
            ),
            (
                "AssertionError: data_parallel_size (2) * tensor_model_parallel_size (2) must \
                 equal world_size (8)",
                Category::WorldSizeMismatch,
                "parallel_layout_vs_world",
            ),
            (
                "AssertionError: Check batch related parameters. train_batch_size is not equal \
                 to micro_batch_per_gpu * gradient_acc_step * world_size 256 != 4 * 8 * 4",
                Category::WorldSizeMismatch,
                RULE_SETTINGS_FOR_ANOTHER_WORLD,
            ),
            (
                "ValueError: The checkpoint being loaded used a DP world size of 16 but the \
                 current world size is 8. Automatic adjustment of ZeRO's optimizer state \
                 partitioning with a new world size is not currently supported.",
                Category::WorldSizeMismatch,
                RULE_SETTINGS_FOR_ANOTHER_WORLD,
            ),
            // Lightning and Fabric.
            (
                "lightning.fabric.utilities.exceptions.MisconfigurationException: GPUs \
                 requested but none are available.",
                Category::CudaError,
                "no_usable_gpu",
            ),
            (
                "lightning.fabric.utilities.exceptions.MisconfigurationException: \
                 `CUDAAccelerator` can not run on your system since the accelerator is not \
                 available. The following accelerator(s) is available and can be passed into \
                 `accelerator` argument of `Trainer`: ['cpu'].",
                Category::CudaError,
                "no_usable_gpu",
            ),
            (
                "lightning.fabric.utilities.exceptions.MisconfigurationException: No supported \
                 gpu backend found!",
                Category::CudaError,
                "no_usable_gpu",
            ),
            (
                "ValueError: Your code has `Fabric(devices=2, ...)` but it conflicts with the \
                 value `--devices=4` set through the CLI. Remove it either from the CLI or from \
                 the Lightning Fabric object.",
                Category::WorldSizeMismatch,
                "parallel_layout_vs_world",
            ),
            (
                "Detected KeyboardInterrupt, attempting graceful shutdown ...",
                Category::LauncherInterrupted,
                "rank_received_sigterm",
            ),
            (
                "RuntimeError: `DataLoader` within local rank has zero length. Please make sure \
                 that it returns at least 1 batch.",
                Category::UnevenInputs,
                RULE_NO_BATCHES_ON_RANK,
            ),
        ] {
            assert_read_as(line, want, by);
        }
        // accelerate 0.15's PyTorch version check names no rank out of batches.
        assert_ne!(
            cat("ValueError: Joining uneven inputs requires PyTorch >= 1.10.0, You have 1.9.1+cu111."),
            Some(Category::UnevenInputs)
        );
        // Lightning's advice for evaluation with a DistributedSampler names no failure.
        assert_eq!(
            cat(
                "PossibleUserWarning: Using `DistributedSampler` with the dataloaders. During \
                 `trainer.validate()`, it is recommended to use `Trainer(devices=1, \
                 num_nodes=1)` to ensure each sample/batch gets evaluated exactly once. \
                 Otherwise, multi-device settings use `DistributedSampler` that replicates some \
                 samples to make sure all devices have same batch size in case of uneven \
                 inputs."
            ),
            None
        );
    }

    /// PyTorch 2.13's process groups, stores, torchelastic and torch.cuda, and the CUDA
    /// runtime's words, as their sources and libraries word them: the category and the rule.
    #[test]
    fn torch_process_group_store_elastic_and_cuda_messages_read_from_their_sources() {
        for (line, want, by) in [
            (
                "RuntimeError: CUDA error: MPS client failed to connect to the MPS control \
                 daemon or the MPS server",
                Category::CudaError,
                "no_usable_gpu",
            ),
            (
                "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda \
                 functions before calling NumCudaDevices() that might have already set an \
                 error? Error 803: system has unsupported display driver / cuda driver \
                 combination",
                Category::CudaError,
                "no_usable_gpu",
            ),
            (
                "RuntimeError: cuda driver can't be loaded, is cuda enabled?",
                Category::CudaError,
                "no_usable_gpu",
            ),
            (
                "ValueError: Cuda is not available.",
                Category::CudaError,
                "no_usable_gpu",
            ),
            (
                "AssertionError: Invalid device id",
                Category::CudaError,
                "cuda_error",
            ),
            (
                "RuntimeError: device 3 is not visible (CUDA_VISIBLE_DEVICES=[0, 1])",
                Category::CudaError,
                "cuda_error",
            ),
            (
                "RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED",
                Category::CudaOom,
                "cublas_alloc_failed",
            ),
            (
                "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling \
                 `cublasCreate(handle)`",
                Category::CudaOom,
                RULE_GPU_LIBRARY_SETUP_FAILED,
            ),
            (
                "RuntimeError: Unable to find a valid cuDNN algorithm to run convolution",
                Category::CudaOom,
                RULE_GPU_LIBRARY_SETUP_FAILED,
            ),
            (
                "[rank1]: Cuda failure 1 'invalid argument'",
                Category::NcclInternalOrUnsupported,
                "nccl_cuda_call_refused",
            ),
            (
                "torch.distributed.DistBackendError: NCCL timeout in: \
                 /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:280",
                Category::CollectiveTimeout,
                "nccl_nonblocking_timeout",
            ),
            (
                "RuntimeError: Operation timed out!",
                Category::CollectiveTimeout,
                "nccl_nonblocking_timeout",
            ),
            (
                "torch.distributed.DistBackendError: NCCL communicator was aborted on rank 1.  \
                 Original reason for failure was: Caught exception on rank 1 while running \
                 onCompletion hook for ProcessGroupNCCL: RuntimeError: boom. Aborting all \
                 communicators.",
                Category::RankCrashed,
                "completion_hook_raised",
            ),
            (
                "torch.distributed.DistBackendError: [3] is setting up NCCL communicator and \
                 retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but \
                 store->get('0') got error: Failed to recv, got 0 bytes. Connection was likely \
                 closed. Did the remote server shutdown or crash?",
                Category::RankCrashed,
                "nccl_unique_id_store_gone",
            ),
            (
                "[W1128 10:00:00.111107 4242 socket.cpp:811] [c10d] The client socket has \
                 failed to connect to [node-0]:29500 (errno: 113 - No route to host).",
                Category::ConnectionRefused,
                RULE_STORE_ADDRESS_UNREACHABLE,
            ),
            (
                "TimeoutError: timed out waiting for all 8 members to join",
                Category::RendezvousTimeout,
                "rendezvous",
            ),
            (
                "LookupError: Timeout while waiting for keys in EtcdStore",
                Category::RendezvousTimeout,
                "rendezvous",
            ),
            (
                "Reaping worker_pid=[4243]. Expired timers: ['train_step']",
                Category::RankCrashed,
                "elastic_timer_reaped",
            ),
            (
                "ValueError: The world size (8) must be divisible by 'group_size=3'",
                Category::WorldSizeMismatch,
                "parallel_layout_vs_world",
            ),
            (
                "ValueError: Rank 9 is out of range. Valid ranks are 0 to 7",
                Category::WorldSizeMismatch,
                "parallel_layout_vs_world",
            ),
        ] {
            assert_read_as(line, want, by);
        }
        // Lines that name no failure, or another one than they seem to.
        for line in [
            // The watchdog's periodic progress line.
            "[I1128 ProcessGroupNCCL.cpp:1830] [PG ID 0 PG GUID 0(default_pg) Rank 1] NCCL Work \
             update periodically: last enqueued NCCL work: 2000, last completed NCCL work: 2000.",
            // libuv's store falls back to IPv4 by itself.
            "[I1128 TCPStoreLibUvBackend.cpp:1266] [c10d] Failed to bind to ipv6 address, trying \
             ipv4. Error: The server socket has failed to bind to [::]:29500 (errno: 97 - \
             Address family not supported by protocol).",
            // vLLM goes on without symmetric memory.
            "WARNING 11-28 10:00:00 [symm_mem.py:99] SymmMemCommunicator: symmetric memory \
             initialization failed: CUDA driver error: operation not supported",
        ] {
            assert_eq!(cat(line), None, "{line}");
        }
        // A port below 1024 is not permitted, not in use.
        assert_ne!(
            cat(
                "RuntimeError: The server socket has failed to listen on any local network \
                 address. The server socket has failed to bind to [::]:443 (errno: 13 - \
                 Permission denied)."
            ),
            Some(Category::PortInUse)
        );
        // A memory registration's invalid argument is no communicator's world size.
        assert_ne!(
            cat("torch.distributed.DistBackendError: NCCL error in: \
                 /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:560, invalid argument (run \
                 with NCCL_DEBUG=WARN for details), NCCL version 2.27.5 Failed to register \
                 segment with ptr 0x7f3a40000000, size 2097152"),
            Some(Category::WorldSizeMismatch)
        );
    }

    /// A scan of c10d's message strings (`ProcessGroupNCCL.cpp`'s heartbeat monitor from late
    /// 2023 to 2.5, `ProcessGroupGloo.cpp`, `GlooDeviceFactory.cpp`, `NCCLUtils.cpp` of 2.3 to
    /// 2.5), each with its arguments filled in: the category and the rule.
    #[test]
    fn c10d_heartbeat_signal_gloo_device_and_nonblocking_lines_read_from_their_sources() {
        for (line, want, by) in [
            (
                "[E ProcessGroupNCCL.cpp:1089] No PGNCCL's watchdog heartbeat detected, so we \
                 are dumping debug info.",
                Category::CollectiveTimeout,
                "watchdog_context",
            ),
            (
                "[E ProcessGroupNCCL.cpp:1118] [Rank 1] monitoring thread detects no heartbeat \
                 and will finally kill the process! terminateProcessGroup_0 \
                 collectiveDebugInfoMode_0",
                Category::CollectiveTimeout,
                "watchdog_context",
            ),
            (
                "[F ProcessGroupNCCL.cpp:1124] [Rank 1] NCCL monitor thread timeout. Basically, \
                 this could be due to CUDA or NCCL calls being unexpectedly blocking",
                Category::CollectiveTimeout,
                "watchdog_context",
            ),
            (
                "[rank3]:[E ProcessGroupNCCL.cpp:1266] [PG 0 Rank 3] Received a global timeout \
                 from another rank and will start to dump the debug info.",
                Category::CollectiveTimeout,
                RULE_TIMEOUT_SIGNAL_FROM_ANOTHER_RANK,
            ),
            (
                "[rank3]:[F ProcessGroupNCCL.cpp:1185] [PG 0 Rank 3] [PG 0 Rank 3] \
                 ProcessGroupNCCL's watchdog detected a collective timeout and notified current \
                 rank. This is most likely caused by incorrect usages of collectives",
                Category::CollectiveTimeout,
                RULE_TIMEOUT_SIGNAL_FROM_ANOTHER_RANK,
            ),
            (
                "[rank1]:[E1206 06:44:45.123456789 ProcessGroupNCCL.cpp:1716] [PG ID 0 PG GUID \
                 0(default_pg) Rank 1] Observed flight recorder dump signal from another rank \
                 via TCPStore.",
                Category::CollectiveTimeout,
                RULE_TIMEOUT_SIGNAL_FROM_ANOTHER_RANK,
            ),
            (
                "[rank1]:[E1206 06:44:45.123456789 ProcessGroupNCCL.cpp:2455] Rank 1 \t - [1] \
                 Timeout at collective: ALLREDUCE, #1234",
                Category::CollectiveTimeout,
                "desync_report_timeout",
            ),
            (
                "[rank1]:[E1206 06:44:45.123456789 TraceUtils.h:45] Store is down while updating \
                 #1234 with key NCCL_1_trace_start",
                Category::RankCrashed,
                "peer_gone",
            ),
            (
                "I1206 06:44:45.123000 4012 torch/distributed/elastic/timer/api.py:196] Reaping \
                 worker_id=[4022]. Expired timers: ['train_step']",
                Category::RankCrashed,
                "elastic_timer_reaped",
            ),
            (
                "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/\
                 device.cc:99] rv == 0. -2 vs 0",
                Category::NetworkInterface,
                "gloo_hostname_unresolved",
            ),
            (
                "W1206 06:44:45.123000 4012 torch/distributed/elastic/multiprocessing/api.py:871] \
                 Closing process 4021 via signal SIGTERM",
                Category::RankCrashed,
                "launcher_consequence",
            ),
            (
                "W1206 06:44:45.123000 4012 torch/multiprocessing/spawn.py:176] Unable to \
                 shutdown process 4021 via SIGTERM , forcefully exiting via SIGKILL",
                Category::RankCrashed,
                "launcher_consequence",
            ),
            (
                "CUDA kernel errors might be asynchronously reported at some other API call, so \
                 the stacktrace below might be incorrect.",
                Category::CudaError,
                RULE_CUDA_ERROR_HINT,
            ),
            (
                "srun: error: Cannot communicate with node 3.  Aborting job.",
                Category::RankCrashed,
                "node_failure",
            ),
            (
                "srun: error: step_launch_notify_io_failure: aborting, io error with slurmstepd \
                 on node 3",
                Category::RankCrashed,
                "node_failure",
            ),
            (
                "slurmstepd: error: execve(): python: No such file or directory",
                Category::RankCrashed,
                "launch_program_missing",
            ),
            (
                "mpirun was unable to launch the specified application as it could not access",
                Category::RankCrashed,
                "launch_program_missing",
            ),
            (
                "Status:           Failed  Reason:           NodeShutdown  Message:          Pod \
                 was rejected as the node is shutting down.",
                Category::LauncherInterrupted,
                "launcher_signal",
            ),
            (
                "    Message:               TrainJob exceeded its active deadline",
                Category::LauncherInterrupted,
                "launcher_signal",
            ),
            (
                "  Warning  BackOff  12s (x5 over 2m)  kubelet  Back-off restarting failed \
                 container pytorch in pod trainer-worker-1_default(0b1c)",
                Category::RankCrashed,
                "container_restarting",
            ),
            (
                "    Message:               PyTorchJob pytorch-dist is failed because 1 Worker \
                 replica(s) failed.",
                Category::RankCrashed,
                "launcher_consequence",
            ),
            (
                "a non-zero exit code.. Further examination may be required.",
                Category::RankCrashed,
                "launcher_consequence",
            ),
            (
                "[rank1]: RuntimeError: Detected a disagreement on list length between rank0 and \
                 rank1: ",
                Category::CollectiveMismatch,
                "zero3_trace_disagreement",
            ),
            (
                "[rank2]: AssertionError: rank 2 - Invalid to reduce Param 41 with None gradient",
                Category::UnusedParameters,
                RULE_ZERO_NONE_GRADIENT,
            ),
            (
                "Dec 06 06:44:45 node-3 kernel: mlx5_core 0000:5c:00.0: Port module \
                 event[error]: module 0, Cable error, High Temperature",
                Category::Infiniband,
                RULE_NIC_KERNEL_FAULT,
            ),
            (
                "[52117.123] mlx5_core 0000:d2:00.0: poll_health:825:(pid 0): device's health \
                 compromised - reached miss count",
                Category::Infiniband,
                RULE_NIC_KERNEL_FAULT,
            ),
            (
                "kernel: infiniband efa_0: The device didn't send any completion for admin cmd \
                 REG_MR(7) status 2",
                Category::Infiniband,
                RULE_NIC_KERNEL_FAULT,
            ),
            (
                "[exiting program after receiving SIGTERM.] datetime: 2024-12-06 06:44:45",
                Category::LauncherInterrupted,
                "rank_received_sigterm",
            ),
            (
                "lightning/pytorch/utilities/data.py:117: Total length of `DataLoader` across \
                 ranks is zero, but local rank has zero length. Please be cautious of uneven \
                 batch length.",
                Category::UnevenInputs,
                RULE_NO_BATCHES_ON_RANK,
            ),
            (
                "[rank0]: RuntimeError: Forward order differs across ranks: rank 0 is \
                 all-gathering parameters for [['layers.2.attn.q_proj.weight']] while rank 1 is \
                 all-gathering parameters for [['layers.3.attn.q_proj.weight']]",
                Category::CollectiveMismatch,
                "torch_distributed_ranks_disagree",
            ),
            (
                "[rank1]: torch.distributed.pipelining._utils.PipeliningMetadataError: Stage 1 \
                 forward inputs[0]: shape mismatch: torch.Size([2, 1024, 4096]) vs \
                 torch.Size([2, 512, 4096])",
                Category::CollectiveMismatch,
                "torch_distributed_ranks_disagree",
            ),
            (
                "[rank2]: ValueError: Inconsistent tensor metadata (including shape and stride) \
                 across ranks.",
                Category::CollectiveMismatch,
                "torch_distributed_ranks_disagree",
            ),
            (
                "torch/distributed/fsdp/_runtime_utils.py:1386: UserWarning: Forward order \
                 differs from that of the first iteration on rank 1. Collectives are unchecked \
                 and may give incorrect results or hang.",
                Category::CollectiveMismatch,
                RULE_FSDP_ORDER_CHANGED,
            ),
            (
                "slurmstepd: error: *** STEP 1234.0 ON node-3 FAILED (non-zero exit code or \
                 other failure mode) ***",
                Category::RankCrashed,
                "launcher_consequence",
            ),
            (
                "torch.distributed.elastic.multiprocessing.api.SignalException",
                Category::LauncherInterrupted,
                RULE_ELASTIC_SIGNAL_EXCEPTION,
            ),
            (
                "Terminating remaining workers after failure of Process 3.",
                Category::RankCrashed,
                "launcher_consequence",
            ),
            (
                "I0612 01:14:57.385000 3908386 torch/distributed/elastic/multiprocessing/errors/\
                 __init__.py:371] ('local_rank %s FAILED with no error file. Decorate your \
                 entrypoint fn with @record for traceback info. See: \
                 https://pytorch.org/docs/stable/elastic/errors.html', 0)",
                Category::RankCrashed,
                "launcher_consequence",
            ),
            (
                "I1206 06:44:45.123000 4012 torch/distributed/elastic/timer/\
                 file_based_local_timer.py:343] Successfully reaped worker=[4022] with signal=9",
                Category::RankCrashed,
                "elastic_timer_reaped",
            ),
            (
                "GPU device may be out of range, do you have enough GPUs?",
                Category::CudaError,
                "cuda_error",
            ),
            (
                "[2024-12-06 06:44:45 TP1] Watchdog timeout (self.watchdog_timeout=300)",
                Category::CollectiveTimeout,
                RULE_ENGINE_HANG_DETECTED,
            ),
            (
                "(VllmWorker TP1 pid=4021) INFO 12-06 06:45:45 [shm_broadcast.py:456] No \
                 available shared memory broadcast block found in 60 second.",
                Category::CollectiveTimeout,
                RULE_ENGINE_HANG_DETECTED,
            ),
            (
                "ERROR 12-06 06:44:46 [core_client.py:562] Engine core proc EngineCore_0 died \
                 unexpectedly, shutting down client.",
                Category::RankCrashed,
                "vllm_worker_died",
            ),
            (
                "[2024-12-06 06:44:45] Received sigquit from a child process. It usually means \
                 the child failed.",
                Category::RankCrashed,
                "launcher_consequence",
            ),
            (
                "srun: fatal: Can not execute train.sh",
                Category::RankCrashed,
                "launch_program_missing",
            ),
            (
                "RuntimeError: Cannot resolve node-17 to a (local) address",
                Category::NetworkInterface,
                "gloo_device_address",
            ),
            (
                "RuntimeError: GlooDeviceFactory::makeTCPDevice(): interface or hostname can't \
                 be empty",
                Category::NetworkInterface,
                "gloo_device_address",
            ),
            (
                "torch.distributed.DistBackendError: NCCL timeout in communicator \
                 initialization.",
                Category::CollectiveTimeout,
                "nccl_nonblocking_timeout",
            ),
        ] {
            assert_read_as(line, want, by);
        }
        // The unnamed rank is not the one that printed the line.
        let (rule, ex) = classify(
            "[PG 0 Rank 3] Received a global timeout from another rank and will start to dump \
             the debug info.",
        )
        .unwrap();
        assert_eq!(rule.role, Role::Consequence);
        assert!(ex.subjects.is_empty());
        assert!(ex.detail.unwrap().starts_with("another rank timed out"));
        for healthy in [
            "mlx5_core 0000:63:00.1: Port module event: module 1, Cable plugged",
            "mlx5_core 0000:3b:00.0 enp59s0f0np0: Link down",
        ] {
            assert_eq!(cat(healthy), None, "{healthy}");
        }
        let (_, ex) = classify(" - [3] Timeout at collective: ALLREDUCE, #1234").unwrap();
        assert!(
            ex.subjects.is_empty(),
            "the rank that printed it: {:?}",
            ex.subjects
        );
        assert_eq!(
            ex.detail.as_deref(),
            Some("timed out at collective ALLREDUCE, #1234")
        );
        let (_, ex) =
            classify("RuntimeError: Cannot resolve node-17 to a (local) address").unwrap();
        assert!(ex
            .detail
            .unwrap()
            .contains("for the name node-17 (set GLOO_SOCKET_IFNAME"));
    }

    /// gloo's own messages (commit cc44198, as PyTorch vendors it): the category and the rule.
    #[test]
    fn gloo_messages_read_from_its_source() {
        for (line, want, by) in [
            (
                "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:152] timed out \
                 connecting: SO_ERROR: Connection timed out, remote=[10.0.0.1]:46213",
                Category::NetworkInterface,
                "network_interface",
            ),
            (
                "RuntimeError: [../third_party/gloo/gloo/transport/uv/pair.cc:102] Error \
                 connecting to [10.0.0.1]:50123: connection timed out",
                Category::NetworkInterface,
                "gloo_uv_connect_failed",
            ),
            (
                "RuntimeError: [../third_party/gloo/gloo/transport/ibverbs/device.cc:83] No \
                 ibverbs devices present",
                Category::Infiniband,
                "gloo_ibverbs_failure",
            ),
            (
                "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/ibverbs/\
                 pair.cc:470] wc->status == IBV_WC_SUCCESS. 13 vs 0. Memory region send for \
                 slot 2: RNR retry counter exceeded",
                Category::Infiniband,
                "gloo_ibverbs_failure",
            ),
            (
                "RuntimeError: [../third_party/gloo/gloo/transport/ibverbs/pair.cc:268] Timeout \
                 waiting for memory region from [fe80::1]",
                Category::CollectiveTimeout,
                "gloo_ibverbs_timeout",
            ),
            (
                "  what():  [enforce fail at ../third_party/gloo/gloo/transport/tcp/pair.cc:426] \
                 op.preamble.roffset + op.preamble.length <= op.buf->size_. 8192 vs 4096",
                Category::CollectiveMismatch,
                "collective_mismatch",
            ),
            (
                "RuntimeError: [enforce fail at ../third_party/gloo/gloo/context.cc:23] rank < \
                 size. 4 vs 4",
                Category::WorldSizeMismatch,
                "world_size_mismatch",
            ),
        ] {
            assert_read_as(line, want, by);
        }
        // gloo's listener binds port 0: no free port on the host, not a master port in use.
        assert_ne!(
            cat(
                "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/\
                 socket.cc:95] rv != -1. -1 vs -1. bind: Address already in use"
            ),
            Some(Category::PortInUse)
        );
    }

    /// The kernel's and systemd's words around a killed or crashed process, and NCCL 2.7 to
    /// 2.18's wordings that later releases changed: the category and the rule.
    #[test]
    fn kernel_systemd_and_older_nccl_messages_read_from_their_sources() {
        for (line, want, by) in [
            (
                "[52117.123] Killed process 48213 (python) total-vm:123456kB, anon-rss:98765kB, \
                 file-rss:0kB, shmem-rss:0kB",
                Category::HostOomKilled,
                "host_oom_kernel_kill_line",
            ),
            (
                "[52117.200] oom_reaper: reaped process 48213 (python), now anon-rss:0kB, \
                 file-rss:0kB, shmem-rss:0kB",
                Category::HostOomKilled,
                "host_oom_kernel",
            ),
            (
                "systemd[1]: session-4.scope: A process of this unit has been killed by the OOM \
                 killer.",
                Category::HostOomKilled,
                "host_oom_kernel",
            ),
            (
                "[12345.678] python[48213]: segfault at 0 ip 00007f3a12345678 sp 00007ffd12345678 \
                 error 4 in libtorch_cuda.so[7f3a00000000+1000]",
                Category::RankCrashed,
                "kernel_native_crash",
            ),
            (
                "[12345.678] traps: pt_main_thread[48213] general protection fault \
                 ip:7f3a12345678 sp:7ffd12345678 error:0 in libnccl.so.2[7f3a00000000+1000]",
                Category::RankCrashed,
                "kernel_native_crash",
            ),
            (
                "[12345.678] Memory failure: 0x2b4f1c0: Sending SIGBUS to python:48213 due to \
                 hardware memory corruption",
                Category::RankCrashed,
                "kernel_native_crash",
            ),
            (
                "host-a:1:2 [0] misc/socket.cc:466 NCCL WARN socketStartConnect: exceeded \
                 retries (20000)",
                Category::ConnectionRefused,
                "nccl_connect_refused_retries",
            ),
            (
                "host-a:1:2 [0] transport/net_ib.cc:1020 NCCL WARN NET/IB : req 0/1 tag 7 peer \
                 10.0.0.2<1234> collective mismatch error, local size 1024 remote size 2048",
                Category::CollectiveMismatch,
                "collective_mismatch",
            ),
        ] {
            assert_read_as(line, want, by);
        }
        for line in [
            // NCCL 2.7 to 2.18 logged every IB async event at WARN and went on.
            "host-a:1:2 [0] NCCL WARN NET/IB : Got async event : port active",
            "host-a:1:2 [0] NCCL WARN NET/IB : Got async event : GID table change",
            // Its clean-up of a segment already gone, its CollNet fallback.
            "host-a:1:2 [0] NCCL WARN unlink shared memory /dev/shm/nccl-Ab12Cd failed, error: \
             No such file or directory",
            "host-a:1:2 [0] NCCL WARN CollNet is not supported or fails to initialize, ignoring \
             NCCL_ALGO=COLLNET",
        ] {
            assert_eq!(cat(line), None, "{line}");
        }
        // An HTTP client's name resolution is a data or model host's, not an NCCL interface.
        assert_ne!(
            cat(
                "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='huggingface.co', \
                 port=443): Max retries exceeded with url: /api/models (Caused by \
                 NewConnectionError('Failed to establish a new connection: [Errno -3] \
                 Temporary failure in name resolution'))"
            ),
            Some(Category::NetworkInterface)
        );
        // Its NVLS graph search's NIC is no fabric manager's.
        assert_ne!(
            cat(
                "host-a:1:2 [0] graph/search.cc:1048 NCCL WARN Could not find NIC for rank 3 in \
                 NVLS graph"
            ),
            Some(Category::NvlsFabricManager)
        );
    }

    /// torchelastic's agent restarting its workers, and etcd's closed rendezvous: crashes said
    /// by the agent, not the workers' own errors.
    #[test]
    fn torchelastic_s_restart_and_closed_rendezvous_are_read() {
        for (line, by) in [
            (
                "I1128 10:00:00.123000 4242 torch/distributed/elastic/agent/server/api.py:942] \
                 [default] Worker group FAILED. 3/3 attempts left; will restart worker group",
                "elastic_worker_group_failed",
            ),
            (
                "I1128 10:00:00.123000 4242 torch/distributed/elastic/rendezvous/\
                 etcd_rendezvous.py:322] Rendezvous for run_id=job-4711 was observed to be closed",
                "rendezvous_closed",
            ),
        ] {
            assert_read_as(line, Category::RankCrashed, by);
        }
    }

    /// PyTorch 1.x's wordings that 2.x changed (its stored sources: `ProcessGroupNCCL.cpp`,
    /// `FileStore.cpp`, `Utils.cpp`, `socket.cpp`): the category and the rule.
    #[test]
    fn pytorch_1x_wordings_read_from_its_sources() {
        for (line, want, by) in [
            (
                "RuntimeError: NCCL communicator was aborted on rank 1.  Original reason for \
                 failure was: Work WorkNCCL(SeqNum=5, OpType=ALLREDUCE, TensorShape=[1], \
                 Timeout(ms)=60000) timed out in call to wait().",
                Category::CollectiveTimeout,
                "blocking_wait_timeout",
            ),
            (
                "RuntimeError: ProcessGroupNCCL: Health check failure: Failed to initialize NCCL \
                 communicator on rank 3",
                Category::CollectiveTimeout,
                "blocking_wait_timeout",
            ),
            (
                "RuntimeError: Timeout waiting for key: 0",
                Category::RendezvousTimeout,
                "rendezvous",
            ),
            (
                "ValueError: host not found: Name or service not known",
                Category::ConnectionRefused,
                RULE_STORE_CLIENT_NAME_UNRESOLVED,
            ),
            (
                "RuntimeError: [3] is setting up NCCL communicator and retreiving ncclUniqueId \
                 from [0] via c10d key-value store by key '0', but store->get('0') got error: \
                 Connection reset by peer",
                Category::RankCrashed,
                "nccl_unique_id_store_gone",
            ),
        ] {
            assert_read_as(line, want, by);
        }
        // An HTTP client's errno 99 is its own connection's, not an interface of the job's.
        assert_eq!(
            cat(
                "urllib3.exceptions.NewConnectionError: <urllib3.connection.HTTPSConnection \
                 object at 0x7f00>: Failed to establish a new connection: [Errno 99] Cannot \
                 assign requested address"
            ),
            None
        );
        // c10d's client goes on to the name's next address after errno 99 on one of them.
        assert_eq!(
            cat(
                "[W socket.cpp:558] [c10d] The client socket has failed to connect to \
                 [localhost]:29500 (errno: 99 - Cannot assign requested address)."
            ),
            None
        );
    }

    /// huggingface_hub 1.0's httpx errors: a model or dataset host, not the store or an NCCL
    /// interface; its retry warning no failure.
    #[test]
    fn httpx_errors_of_a_hub_download_are_no_store_or_interface() {
        for line in [
            "httpx.ConnectError: [Errno -3] Temporary failure in name resolution",
            "[rank0]: httpx.ConnectError: [Errno 111] Connection refused",
            "huggingface_hub.errors.LocalEntryNotFoundError: Got: ConnectError: [Errno 101] \
             Network is unreachable",
            "'[Errno 111] Connection refused' thrown while requesting HEAD \
             https://huggingface.co/gpt2/resolve/main/config.json",
        ] {
            assert_ne!(cat(line), Some(Category::ConnectionRefused), "{line}");
            assert_ne!(cat(line), Some(Category::NetworkInterface), "{line}");
        }
    }

    /// PyTorch Lightning 1.x's wordings (`pytorch_lightning`, tags 1.5.10 to 1.9.5).
    #[test]
    fn lightning_1x_wordings_read_from_its_sources() {
        for (line, want, by) in [
            (
                "pytorch_lightning.utilities.exceptions.MisconfigurationException: You passed \
                 `accelerator='gpu'`, but GPUs are not available.",
                Category::CudaError,
                "no_usable_gpu",
            ),
            (
                "pytorch_lightning.utilities.exceptions.MisconfigurationException: \
                 GPUAccelerator can not run on your system since the accelerator is not \
                 available.",
                Category::CudaError,
                "no_usable_gpu",
            ),
            (
                "pytorch_lightning.utilities.exceptions.MisconfigurationException: No GPUs \
                 available.",
                Category::CudaError,
                "no_usable_gpu",
            ),
            (
                "RuntimeError: No GPUs available.",
                Category::CudaError,
                "no_usable_gpu",
            ),
            (
                "pytorch_lightning.utilities.exceptions.MisconfigurationException: You requested \
                 4 GPUs but your machine only has 2 GPUs.",
                Category::CudaError,
                "cuda_error",
            ),
            (
                "Received signal 15. Saving a fault-tolerant checkpoint and terminating.",
                Category::LauncherInterrupted,
                "rank_received_sigterm",
            ),
            (
                "handling auto-requeue signal: 10",
                Category::LauncherInterrupted,
                "rank_received_sigterm",
            ),
        ] {
            assert_read_as(line, want, by);
        }
    }
}
