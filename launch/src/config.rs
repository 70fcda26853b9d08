//! The launcher's configuration: a plain struct that the command line fills in.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

/// The master address used on a single node when none is given.
pub const DEFAULT_MASTER_ADDR: &str = "127.0.0.1";

/// The port of `--rdzv-endpoint HOST` when it has none (torchrun's default).
pub const DEFAULT_RDZV_PORT: u16 = 29400;

/// How long stopped ranks get between SIGTERM and SIGKILL by default.
pub const DEFAULT_GRACE_PERIOD: Duration = Duration::from_secs(5);

/// The most ranks one node may start (guards against a typo starting thousands).
pub const MAX_NPROC_PER_NODE: usize = 1024;

/// Which rank output the console shows. The log files always get everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConsoleMode {
    /// The stdout and stderr of this node's local rank 0 (rank 0 on a single
    /// node), plus the lines of the other ranks' stderr that look like errors.
    #[default]
    Rank0,
    /// Every line of every rank.
    All,
    /// Nothing from the ranks; only the launcher's own messages.
    Quiet,
}

impl ConsoleMode {
    /// The names accepted by [`ConsoleMode::from_str`], in order.
    pub const NAMES: [&'static str; 3] = ["rank0", "all", "quiet"];

    /// The mode's name as accepted on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ConsoleMode::Rank0 => "rank0",
            ConsoleMode::All => "all",
            ConsoleMode::Quiet => "quiet",
        }
    }
}

impl fmt::Display for ConsoleMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A console mode name that is not one of [`ConsoleMode::NAMES`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown console mode '{0}'; use rank0, all or quiet")]
pub struct ParseConsoleModeError(pub String);

impl FromStr for ConsoleMode {
    type Err = ParseConsoleModeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "rank0" | "rank-0" | "default" => Ok(ConsoleMode::Rank0),
            "all" => Ok(ConsoleMode::All),
            "quiet" | "none" => Ok(ConsoleMode::Quiet),
            _ => Err(ParseConsoleModeError(s.to_owned())),
        }
    }
}

/// Everything `ddp-probe run` needs to launch one node's ranks.
///
/// Build it with [`LaunchConfig::new`] and set the fields the user gave; the
/// defaults match torchrun's (one node, one process, master on 127.0.0.1 and a
/// free port).
#[derive(Debug, Clone)]
pub struct LaunchConfig {
    /// The program to run for every rank (the first word after `--`).
    pub program: OsString,
    /// The program's arguments.
    pub args: Vec<OsString>,
    /// Ranks to start on this node (default 1).
    pub nproc_per_node: usize,
    /// Nodes in the run (default 1).
    pub nnodes: usize,
    /// This node's index, `0..nnodes` (default 0).
    pub node_rank: usize,
    /// The master's address; defaults to [`DEFAULT_MASTER_ADDR`] on a single
    /// node and is required (or `rdzv_endpoint`) on several.
    pub master_addr: Option<String>,
    /// The master's port; on a single node a free port is picked when unset,
    /// on several nodes it is required (or `rdzv_endpoint`).
    pub master_port: Option<u16>,
    /// `HOST:PORT` (or `[IPv6]:PORT`, or `HOST` for port 29400): sets the
    /// master address and port.
    pub rdzv_endpoint: Option<String>,
    /// The run id shared by all nodes; generated on a single node when unset,
    /// required on several.
    pub rdzv_id: Option<String>,
    /// The run directory itself. When unset, the run goes to
    /// `<runs_root>/<YYYYmmdd-HHMMSS>-<program>` and `<runs_root>/latest`
    /// points at it; an explicit directory gets no `latest` link.
    pub out_dir: Option<PathBuf>,
    /// Where default run directories and the `latest` link go (default `runs`).
    pub runs_root: PathBuf,
    /// DDP bucket size handed to the program as `DDP_PROBE_BUCKET_CAP_MB`.
    pub bucket_cap_mb: Option<f64>,
    /// Stop the run as hung when no rank makes progress for this long.
    pub hang_timeout: Option<Duration>,
    /// Which rank output the console shows.
    pub console: ConsoleMode,
    /// Time between SIGTERM and SIGKILL when ranks are stopped (default 5 s).
    pub grace_period: Duration,
    /// Extra environment variables for every rank, applied on top of the
    /// launcher's own environment. They count as set by the user: ddp-probe's
    /// defaults (NCCL_DEBUG, OMP_NUM_THREADS, ...) do not override them.
    pub env: Vec<(OsString, OsString)>,
    /// The rendezvous store token. When unset, `DDP_PROBE_STORE_TOKEN` from the
    /// launcher's environment (or [`LaunchConfig::env`]) is used as it is, else the
    /// token file, else a fresh random one on a single node; several nodes with none
    /// of them are refused (see [`crate::token`]).
    pub store_token: Option<String>,
    /// A file holding the token, on a filesystem every node sees (`--rdzv-token-file`):
    /// node 0 writes a new random token there (mode 600) when it is missing, other
    /// nodes wait for it; a file other users can read is refused.
    pub store_token_file: Option<PathBuf>,
    /// Handle Ctrl-C, SIGTERM and SIGHUP by stopping the ranks (default true).
    /// The handlers are installed for the duration of [`crate::launch`] only.
    pub handle_signals: bool,
    /// torchrun's `--max-restarts`: when a rank fails, stop all ranks and
    /// start them all again, up to this many times (default 0: never). Each
    /// attempt's ranks get `TORCHELASTIC_RESTART_COUNT` (0, 1, ...) and
    /// `TORCHELASTIC_MAX_RESTARTS`; a hang or a stop signal is not restarted.
    pub max_restarts: u32,
    /// torchrun's `--role`: the workers' role, handed to every rank as `ROLE_NAME`
    /// (default `default`).
    pub role: String,
}

impl LaunchConfig {
    /// A configuration with torchrun's defaults running `program args...`.
    pub fn new<P, I, A>(program: P, args: I) -> Self
    where
        P: Into<OsString>,
        I: IntoIterator<Item = A>,
        A: Into<OsString>,
    {
        LaunchConfig {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            nproc_per_node: 1,
            nnodes: 1,
            node_rank: 0,
            master_addr: None,
            master_port: None,
            rdzv_endpoint: None,
            rdzv_id: None,
            out_dir: None,
            runs_root: PathBuf::from(crate::rundir::DEFAULT_RUNS_ROOT),
            bucket_cap_mb: None,
            hang_timeout: None,
            console: ConsoleMode::default(),
            grace_period: DEFAULT_GRACE_PERIOD,
            env: Vec::new(),
            store_token: None,
            store_token_file: None,
            handle_signals: true,
            max_restarts: 0,
            role: "default".to_owned(),
        }
    }

    /// The total number of ranks, `nnodes * nproc_per_node`.
    pub fn world_size(&self) -> usize {
        self.nnodes.saturating_mul(self.nproc_per_node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_mode_round_trips() {
        for name in ConsoleMode::NAMES {
            let mode: ConsoleMode = name.parse().unwrap();
            assert_eq!(mode.name(), name);
        }
        assert!("loud".parse::<ConsoleMode>().is_err());
    }

    #[test]
    fn defaults_match_torchrun() {
        let c = LaunchConfig::new("python", ["train.py"]);
        assert_eq!(c.nproc_per_node, 1);
        assert_eq!(c.nnodes, 1);
        assert_eq!(c.node_rank, 0);
        assert_eq!(c.world_size(), 1);
        assert_eq!(c.grace_period, Duration::from_secs(5));
        assert_eq!(c.console, ConsoleMode::Rank0);
        assert!(c.handle_signals);
        assert_eq!(c.max_restarts, 0);
    }
}
