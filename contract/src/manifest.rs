//! The run manifest (`manifest.json`): serde types shared by the launcher,
//! which writes it, and the diagnosis, which reads it back.
//!
//! Paths inside the manifest are relative to the run directory unless they
//! point outside it (e.g. a user-chosen `NCCL_DEBUG_FILE`); use
//! [`crate::RunDir::file`] to turn them into real paths.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::hang::HangReport;
use crate::run_dir::{RunDirError, MANIFEST_FILE};
pub use crate::termination::Termination;

/// The manifest format this build writes and the newest it reads.
pub const MANIFEST_FORMAT: u32 = 1;

/// The overall state of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The ranks are running (or the launcher died without finishing the manifest).
    Running,
    /// Every rank exited with status 0.
    Ok,
    /// A rank failed; see [`Manifest::first_failure`].
    Failed,
    /// The hang watchdog stopped the run; see [`Manifest::hang`].
    Hang,
    /// The launcher was interrupted (Ctrl-C, SIGTERM or SIGHUP).
    Interrupted,
    /// The launcher could not start every rank; see [`Manifest::launch_error`].
    LaunchError,
}

impl RunStatus {
    /// The status as written in the manifest (`ok`, `failed`, ...).
    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Ok => "ok",
            RunStatus::Failed => "failed",
            RunStatus::Hang => "hang",
            RunStatus::Interrupted => "interrupted",
            RunStatus::LaunchError => "launch_error",
        }
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where an OOM-kill counter counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterScope {
    /// The counter of the rank's own cgroup when last seen (`memory.events`
    /// of cgroup v2, `memory.oom_control` of v1). The kernel raises the
    /// counter of the victim's cgroup on every OOM kill, global or by a
    /// cgroup limit, so this one decides.
    Cgroup,
    /// The counter of a parent cgroup (or one the rank left): it also counts
    /// OOM kills of other processes below it.
    ParentCgroup,
    /// The host-wide counter (`/proc/vmstat`): every OOM kill on the host.
    Host,
}

/// An `oom_kill` counter read when the rank started and when it died.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OomKillCounter {
    /// The file it was read from.
    pub file: String,
    /// Whether it counts a cgroup's kills or the host's.
    pub scope: CounterScope,
    /// Its value when first read (at the rank's start).
    pub at_start: u64,
    /// Its value at the rank's death; absent when it could not be read again.
    pub at_death: Option<u64>,
}

impl OomKillCounter {
    /// Whether it rose between the two reads.
    pub fn rose(&self) -> bool {
        self.at_death.is_some_and(|d| d > self.at_start)
    }
}

/// The last sample of a rank's memory use taken by the launch loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemorySample {
    /// The rank process's resident set (`VmRSS`), in KiB (its own children
    /// not included).
    pub rss_kib: u64,
    /// The host's `MemAvailable` at that moment, in KiB.
    pub mem_available_kib: Option<u64>,
    /// Seconds from the launch to the sample.
    pub after_s: f64,
}

/// What the launcher saw when a rank died of a SIGKILL it did not send, or
/// failed with an error exit before the launcher stopped anything (a process of
/// its own, such as a DataLoader worker, may have got the SIGKILL): the
/// evidence for or against the kernel's out-of-memory killer (see
/// `docs/diagnoses/host_oom_killed.md`). Every part may be empty where the
/// host does not let it be read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KillEvidence {
    /// The `oom_kill` counters readable at the rank's start: its cgroup and
    /// the parents up to the root, and the host's.
    #[serde(default)]
    pub oom_kill_counters: Vec<OomKillCounter>,
    /// Whether the kernel log (`/dev/kmsg`) could be read.
    #[serde(default)]
    pub kernel_log_read: bool,
    /// Kernel log lines written during the run about an OOM kill of the
    /// rank's pid.
    #[serde(default)]
    pub kernel_log_lines: Vec<String>,
    /// The rank's last memory sample.
    #[serde(default)]
    pub last_memory: Option<MemorySample>,
    /// Why a source could not be read.
    #[serde(default)]
    pub notes: Vec<String>,
}

/// When and how a rank ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankEnd {
    /// How it ended.
    #[serde(flatten)]
    pub termination: Termination,
    /// Local time it ended, RFC 3339.
    #[serde(default)]
    pub at: String,
    /// Seconds from the launch to its end.
    pub after_s: f64,
    /// When it ended, ns since the Unix epoch on this node's clock (the time base of the
    /// traces of this node's ranks): where readers end what a rank never finished. Absent in
    /// manifests of earlier versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_unix_ns: Option<i64>,
    /// Whether it ended after the launcher had signalled the ranks to stop
    /// (so its end is a consequence, not a cause).
    #[serde(default)]
    pub stopped_by_launcher: bool,
    /// For a SIGKILL the launcher did not send, and for an error exit before
    /// the launcher stopped anything (a process of the rank's own may have
    /// got a SIGKILL): the evidence about the sender. Absent otherwise, and
    /// in manifests of earlier versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kill_evidence: Option<KillEvidence>,
}

/// The first rank to fail, which caused the others to be stopped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    /// The global rank.
    pub rank: usize,
    /// Its local rank on this node.
    #[serde(default)]
    pub local_rank: usize,
    /// How it ended.
    #[serde(flatten)]
    pub termination: Termination,
    /// Local time it ended, RFC 3339.
    #[serde(default)]
    pub at: String,
    /// Seconds from the launch to its end.
    pub after_s: f64,
    /// The evidence about the sender of a SIGKILL, as in the rank's
    /// [`RankEnd`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kill_evidence: Option<KillEvidence>,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rank {} {} after {:.1} s",
            self.rank, self.termination, self.after_s
        )
    }
}

/// One rank of this node, its files and its end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankRecord {
    /// The global rank.
    pub rank: usize,
    /// The rank on this node.
    #[serde(default)]
    pub local_rank: usize,
    /// The process id (also its process group id); absent if it never started.
    pub pid: Option<u32>,
    /// Local time it started, RFC 3339; absent if it never started.
    pub started_at: Option<String>,
    /// Its complete stdout.
    #[serde(default)]
    pub stdout: String,
    /// Its complete stderr.
    #[serde(default)]
    pub stderr: String,
    /// NCCL's debug log (`NCCL_DEBUG_FILE`), written by NCCL if it runs.
    #[serde(default)]
    pub nccl_log: String,
    /// Its trace (JSON Lines), written by the reference DDP's recorder.
    #[serde(default)]
    pub trace: String,
    /// PyTorch's NCCL flight recorder dump, written on a collective timeout.
    #[serde(default)]
    pub flight_recorder: String,
    /// The torchelastic error file (`TORCHELASTIC_ERROR_FILE`), written by
    /// programs using `torch.distributed.elastic`'s `@record`.
    #[serde(default)]
    pub error_file: String,
    /// The relevant part of its environment (see [`Manifest::env`]); the store
    /// token is redacted.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// How it ended; absent while running or if it never started.
    pub end: Option<RankEnd>,
}

/// An earlier attempt of a run that restarts its workers (`--max-restarts`),
/// as recorded in the manifest of the attempts after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    /// Its `TORCHELASTIC_RESTART_COUNT`: 0 for the first attempt, then 1, 2, ...
    pub restart_count: u32,
    /// Its run directory (its manifest, logs, traces), relative to the run
    /// directory: `attempts/<restart_count>`.
    pub dir: String,
    /// How it ended (`failed`: a worker failed and the group was restarted).
    pub status: RunStatus,
    /// The exit status it would have ended the launcher with.
    pub exit_code: Option<i32>,
    /// Local time it started, RFC 3339.
    #[serde(default)]
    pub started_at: String,
    /// Local time its last rank ended, RFC 3339.
    pub ended_at: Option<String>,
    /// The worker whose failure restarted the group.
    pub first_failure: Option<Failure>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn default_logs_dir() -> String {
    crate::run_dir::LOGS_DIR.to_owned()
}

fn default_traces_dir() -> String {
    crate::run_dir::TRACES_DIR.to_owned()
}

/// Everything known about one node's part of a run.
///
/// Reading is lenient where it costs nothing: fields a reader can do
/// without (names, paths, the environment) default when absent, so a
/// hand-made or partial manifest still reads; `format`, `status` and
/// `world_size`, and how each rank ended, are required.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The manifest format ([`MANIFEST_FORMAT`]).
    pub format: u32,
    /// The ddp-probe version that wrote it.
    #[serde(default)]
    pub ddp_probe_version: String,
    /// The overall status.
    pub status: RunStatus,
    /// The exit status the launcher ends with (absent while running).
    pub exit_code: Option<i32>,
    /// The program run for every rank, as given.
    #[serde(default)]
    pub program: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// The working directory of the launcher and the ranks.
    #[serde(default)]
    pub cwd: String,
    /// The run id (`TORCHELASTIC_RUN_ID`), shared by all nodes.
    #[serde(default)]
    pub run_id: String,
    /// This node's index.
    #[serde(default)]
    pub node_rank: usize,
    /// The number of nodes.
    #[serde(default)]
    pub nnodes: usize,
    /// Ranks per node.
    #[serde(default)]
    pub nproc_per_node: usize,
    /// Ranks in the whole run.
    pub world_size: usize,
    /// This host's name.
    #[serde(default)]
    pub hostname: String,
    /// The master's address.
    #[serde(default)]
    pub master_addr: String,
    /// The master's port.
    #[serde(default)]
    pub master_port: u16,
    /// The absolute run directory when it was written.
    #[serde(default)]
    pub run_dir: String,
    /// Local time the launch started, RFC 3339.
    #[serde(default)]
    pub started_at: String,
    /// Local time the last rank ended, RFC 3339.
    pub ended_at: Option<String>,
    /// Seconds from start to end.
    pub duration_s: Option<f64>,
    /// The hang timeout in seconds, if the watchdog was on.
    pub hang_timeout_s: Option<f64>,
    /// Seconds between SIGTERM and SIGKILL when stopping ranks.
    #[serde(default)]
    pub grace_period_s: f64,
    /// The DDP bucket size given with `--bucket-cap-mb`.
    pub bucket_cap_mb: Option<f64>,
    /// The directory of logs, relative to the run directory.
    #[serde(default = "default_logs_dir")]
    pub logs_dir: String,
    /// The directory of traces, relative to the run directory.
    #[serde(default = "default_traces_dir")]
    pub traces_dir: String,
    /// This node's ranks.
    #[serde(default)]
    pub ranks: Vec<RankRecord>,
    /// The first rank to fail.
    pub first_failure: Option<Failure>,
    /// The hang report, when the watchdog stopped the run.
    pub hang: Option<HangReport>,
    /// The signal that interrupted the launcher (e.g. `SIGINT`).
    pub interrupted_by: Option<String>,
    /// Why the launch failed, for status `launch_error`.
    pub launch_error: Option<String>,
    /// The relevant environment the launcher was started with (plus extra
    /// variables given in the configuration): names starting with NCCL_,
    /// TORCH, CUDA_, OMP_, MASTER_, GLOO_, PYTORCH_, DDP_PROBE_, LOCAL_,
    /// WORLD_, GROUP_, ROLE_ or RANK.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// `--max-restarts`: how many times the launcher may restart all workers
    /// after a worker failure (torchrun's `TORCHELASTIC_MAX_RESTARTS`).
    /// Absent (0) when it never restarts.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub max_restarts: u32,
    /// The restarts before the attempt this manifest describes, which is its
    /// ranks' `TORCHELASTIC_RESTART_COUNT`: this is attempt `restarts + 1`
    /// of `max_restarts + 1`. Everything else in the manifest (ranks, times,
    /// status) is about this attempt. Absent (0) on a first attempt.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub restarts: u32,
    /// The earlier attempts, oldest first, each kept in its own run
    /// directory under `attempts/` (see [`Attempt`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<Attempt>,
}

impl Manifest {
    /// The relevant environment the ranks ran with: the first rank's (the launcher's own
    /// environment with what it set for the ranks, such as `OMP_NUM_THREADS=1` and
    /// `NCCL_DEBUG=INFO`), else the launcher's ([`Manifest::env`]). This run's directory in a
    /// value reads `<run>`, so that two runs' environments compare by what was chosen, not by
    /// where each run was kept.
    pub fn ranks_environment(&self) -> BTreeMap<String, String> {
        let Some(rank) = self.ranks.iter().find(|r| !r.env.is_empty()) else {
            return self.env.clone();
        };
        rank.env
            .iter()
            .map(|(k, v)| {
                let v = if self.run_dir.is_empty() {
                    v.clone()
                } else {
                    v.replace(&self.run_dir, "<run>")
                };
                (k.clone(), v)
            })
            .collect()
    }

    /// `attempt 2 of 3` for a run that may restart its workers (counted
    /// from 1; see [`Manifest::restarts`]); `None` when it may not.
    pub fn attempt_text(&self) -> Option<String> {
        (self.max_restarts > 0).then(|| {
            format!(
                "attempt {} of {}",
                u64::from(self.restarts) + 1,
                u64::from(self.max_restarts) + 1
            )
        })
    }

    /// The record of a global rank, if it runs on this node.
    pub fn rank(&self, rank: usize) -> Option<&RankRecord> {
        self.ranks.iter().find(|r| r.rank == rank)
    }

    /// The manifest as pretty-printed JSON.
    pub fn to_json(&self) -> String {
        // Serialising these plain types cannot fail (string keys, no custom
        // serialisers); fall back to an empty object rather than panic.
        serde_json::to_string_pretty(self).unwrap_or_else(|_| "{}".to_owned())
    }

    /// Writes the manifest atomically: to a temporary file in the same
    /// directory, flushed, then renamed over `path`.
    pub fn write_atomic(&self, path: &Path) -> io::Result<()> {
        let dir = path.parent().unwrap_or_else(|| Path::new("."));
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "manifest.json".to_owned());
        let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
        let result = (|| {
            let mut file = fs::File::create(&tmp)?;
            file.write_all(self.to_json().as_bytes())?;
            file.write_all(b"\n")?;
            file.sync_all()?;
            fs::rename(&tmp, path)
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result
    }
}

/// Reads the manifest of a run directory.
pub fn read_manifest(run_dir: &Path) -> Result<Manifest, RunDirError> {
    let path = run_dir.join(MANIFEST_FILE);
    let text = match fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(RunDirError::NotARun {
                path: run_dir.to_path_buf(),
            })
        }
        Err(source) => return Err(RunDirError::Read { path, source }),
    };
    // Check the format first, so a newer manifest gets a clear error rather
    // than a confusing missing-field one.
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
        if let Some(found) = v.get("format").and_then(|f| f.as_u64()) {
            if found > u64::from(MANIFEST_FORMAT) {
                return Err(RunDirError::UnsupportedFormat {
                    path,
                    found: u32::try_from(found).unwrap_or(u32::MAX),
                    supported: MANIFEST_FORMAT,
                });
            }
        }
    }
    serde_json::from_str(&text).map_err(|source| RunDirError::Parse { path, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn termination_exit_codes_and_text() {
        let ok = Termination::Exited { code: 0 };
        assert!(ok.success());
        assert_eq!(ok.exit_code(), 0);
        let killed = Termination::Signaled {
            signal: "SIGKILL".into(),
            number: 9,
            core_dumped: false,
        };
        assert!(!killed.success());
        assert_eq!(killed.exit_code(), 137);
        assert_eq!(killed.to_string(), "killed by SIGKILL");
        assert_eq!(
            Termination::Exited { code: 3 }.to_string(),
            "exited with code 3"
        );
    }

    #[test]
    fn rank_end_serialises_flat() {
        let end = RankEnd {
            termination: Termination::Signaled {
                signal: "SIGTERM".into(),
                number: 15,
                core_dumped: false,
            },
            at: "2024-01-01T00:00:00+00:00".into(),
            after_s: 1.5,
            at_unix_ns: Some(1_704_067_200_000_000_000),
            stopped_by_launcher: true,
            kill_evidence: None,
        };
        let v = serde_json::to_value(&end).unwrap();
        assert_eq!(v["how"], "signaled");
        assert_eq!(v["signal"], "SIGTERM");
        let back: RankEnd = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(back, end);
        assert!(
            v.get("kill_evidence").is_none(),
            "absent evidence is not written"
        );
    }

    #[test]
    fn ends_without_evidence_from_earlier_versions_load() {
        let old = r#"{"how": "signaled", "signal": "SIGKILL", "number": 9, "at": "t",
                      "after_s": 2.0, "stopped_by_launcher": false}"#;
        let end: RankEnd = serde_json::from_str(old).unwrap();
        assert_eq!(end.kill_evidence, None);
        let with = r#"{"how": "signaled", "signal": "SIGKILL", "number": 9, "at": "t",
                       "after_s": 2.0, "stopped_by_launcher": false,
                       "kill_evidence": {"oom_kill_counters": [{"file": "/proc/vmstat",
                       "scope": "host", "at_start": 3, "at_death": 4}]}}"#;
        let end: RankEnd = serde_json::from_str(with).unwrap();
        let ev = end.kill_evidence.unwrap();
        assert!(ev.oom_kill_counters[0].rose());
        assert!(!ev.kernel_log_read);
    }

    /// What the ranks ran with, the run's own directory put aside: two runs that differ only
    /// in where they were kept have the same environment, and a default the launcher set
    /// (`OMP_NUM_THREADS=1`) is there.
    #[test]
    fn the_ranks_environment_is_the_first_ranks_without_the_run_directory() {
        let manifest = |dir: &str, ranks: &str| -> Manifest {
            serde_json::from_str(&format!(
                r#"{{"format": 1, "status": "ok", "world_size": 1, "run_dir": "{dir}",
                     "env": {{"NCCL_ALGO": "Ring"}}, "ranks": [{ranks}]}}"#
            ))
            .unwrap()
        };
        let rank = |dir: &str| {
            format!(
                r#"{{"rank": 0, "local_rank": 0, "end": null, "env": {{"NCCL_ALGO": "Ring",
                    "OMP_NUM_THREADS": "1", "NCCL_DEBUG_FILE": "{dir}/logs/nccl-rank0.log"}}}}"#
            )
        };
        let a = manifest("/runs/a", &rank("/runs/a"));
        let b = manifest("/runs/b", &rank("/runs/b"));
        assert_eq!(a.ranks_environment(), b.ranks_environment());
        let env = a.ranks_environment();
        assert_eq!(env["OMP_NUM_THREADS"], "1");
        assert_eq!(env["NCCL_DEBUG_FILE"], "<run>/logs/nccl-rank0.log");
        // No rank recorded: the launcher's own.
        let none = manifest("/runs/c", "");
        assert_eq!(none.ranks_environment(), none.env);
    }

    #[test]
    fn status_names_match_serde() {
        for s in [
            RunStatus::Running,
            RunStatus::Ok,
            RunStatus::Failed,
            RunStatus::Hang,
            RunStatus::Interrupted,
            RunStatus::LaunchError,
        ] {
            assert_eq!(serde_json::to_value(s).unwrap(), s.name());
        }
    }
}
