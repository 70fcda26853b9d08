//! Errors of the launcher and of run-directory discovery.
//!
//! Every message says what went wrong and what to do about it, so the command
//! line can print it as is.

use std::io;
use std::path::PathBuf;

/// Why a launch could not start or could not be carried out.
///
/// Errors found before anything is spawned (bad options, a missing command, a
/// busy port) leave nothing behind. Errors after the run directory exists are
/// also recorded in its manifest with status `launch_error`.
/// What [`LaunchError::MultiNodeNeedsRunId`] adds when the token is missing too.
const TOKEN_MISSING_TOO: &str = "; it also needs a secret token for its rendezvous store, the same on every node: set DDP_PROBE_STORE_TOKEN in every node's environment or give every node --rdzv-token-file FILE on a filesystem they share; see docs/multi-node.md";

#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// No command was given.
    #[error("no command to run; put the training command after --, e.g. `ddp-probe run -- python train.py`")]
    NoCommand,

    /// An option has a value the launcher cannot use.
    #[error("invalid {option}: {message}")]
    InvalidOption {
        /// The option, spelled as on the command line (e.g. `--nproc-per-node`).
        option: &'static str,
        /// What is wrong with it and what to pass instead.
        message: String,
    },

    /// A run on several nodes lacks the master's address or port.
    #[error("a run on {nnodes} nodes needs the master's address and port: pass the same --rdzv-endpoint HOST:PORT (or --master-addr and --master-port) on every node")]
    MultiNodeNeedsEndpoint {
        /// The number of nodes asked for.
        nnodes: usize,
    },

    /// A run on several nodes lacks the shared run id (and maybe the token too: both are said
    /// at once, so a torchrun command line moved over learns everything it lacks in one try).
    #[error("a run on {nnodes} nodes needs a run id shared by every node: pass the same --rdzv-id on each node{}", if *.token_missing { TOKEN_MISSING_TOO } else { "" })]
    MultiNodeNeedsRunId {
        /// The number of nodes asked for.
        nnodes: usize,
        /// Whether the store's secret token is missing as well.
        token_missing: bool,
    },

    /// A run on several nodes has no secret token for its rendezvous store (the text of
    /// [`TOKEN_MISSING_TOO`] says the same).
    #[error("a run on {nnodes} nodes needs a secret token for its rendezvous store, the same on every node: set DDP_PROBE_STORE_TOKEN in every node's environment (e.g. `export DDP_PROBE_STORE_TOKEN=$(openssl rand -hex 16)` in the batch script before srun), or give every node --rdzv-token-file FILE on a filesystem they share (node 0 writes a new token there); see docs/multi-node.md")]
    MultiNodeNeedsToken {
        /// The number of nodes asked for.
        nnodes: usize,
    },

    /// The token file cannot serve as the run's secret.
    #[error("--rdzv-token-file {}: {reason}", path.display())]
    TokenFile {
        /// The token file.
        path: PathBuf,
        /// What is wrong with it and what to do.
        reason: String,
    },

    /// No secret could be drawn from the operating system.
    #[error("cannot draw the store token from the operating system's random generator: {source}; set DDP_PROBE_STORE_TOKEN yourself")]
    NoRandom {
        /// The error from getrandom.
        source: io::Error,
    },

    /// The command does not exist (not as a path, not on `PATH`).
    #[error("cannot run '{program}': no such file or directory; check the command after --")]
    CommandNotFound {
        /// The program as the user wrote it.
        program: String,
    },

    /// The command exists but cannot be executed.
    #[error("cannot run '{program}': permission denied ({path} is not executable); make it executable (chmod +x) or run it through its interpreter, e.g. `python3 {program}`")]
    CommandNotExecutable {
        /// The program as the user wrote it.
        program: String,
        /// The file that was found.
        path: PathBuf,
    },

    /// The command names a directory.
    #[error("cannot run '{program}': {path} is a directory; check the command after --")]
    CommandIsDirectory {
        /// The program as the user wrote it.
        program: String,
        /// The directory that was found.
        path: PathBuf,
    },

    /// The master port is already taken on this host.
    #[error("master port {port} is already in use on this host; pass another --master-port{hint}")]
    PortInUse {
        /// The port asked for.
        port: u16,
        /// Extra advice depending on the kind of run.
        hint: &'static str,
    },

    /// The master port cannot be bound for another reason (e.g. a privileged port).
    #[error("cannot use master port {port} on this host: {source}; pass another --master-port")]
    PortUnavailable {
        /// The port asked for.
        port: u16,
        /// The error from binding it.
        source: io::Error,
    },

    /// No free port could be found for the master.
    #[error("cannot find a free port for the master on this host: {source}; pass --master-port")]
    NoFreePort {
        /// The error from binding port 0.
        source: io::Error,
    },

    /// An explicitly given run directory already holds a run.
    #[error("{} already holds a ddp-probe run (it has a manifest.json); choose another --out or remove it", path.display())]
    RunDirTaken {
        /// The run directory.
        path: PathBuf,
    },

    /// The run directory or one of its parts could not be created.
    #[error("cannot create the run directory {}: {source}; choose another --out or fix the permissions", path.display())]
    RunDir {
        /// The path that could not be created.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },

    /// A log file could not be created.
    #[error("cannot create the log file {}: {source}", path.display())]
    LogFile {
        /// The log file.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },

    /// The manifest could not be written.
    #[error("cannot write the manifest {}: {source}", path.display())]
    Manifest {
        /// The manifest file.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },

    /// The launcher's signal handlers could not be installed.
    #[error("cannot install the handlers for Ctrl-C and SIGTERM: {source}")]
    Signals {
        /// The underlying error.
        source: io::Error,
    },

    /// A rank could not be started; the ranks already started were stopped.
    #[error("cannot start rank {rank} ('{program}'): {source}; the ranks already started were stopped and {} records the launch error", run_dir.display())]
    Spawn {
        /// The rank that could not be started.
        rank: usize,
        /// The program as the user wrote it.
        program: String,
        /// The error from starting it.
        source: io::Error,
        /// The run directory, whose manifest has status `launch_error`.
        run_dir: PathBuf,
    },
}

impl LaunchError {
    /// The exit status the command line should end with for this error:
    /// 127 for a command that does not exist, 126 for one that cannot be
    /// executed, 2 for bad options and 1 for everything else.
    pub fn exit_code(&self) -> i32 {
        match self {
            LaunchError::CommandNotFound { .. } => 127,
            LaunchError::CommandNotExecutable { .. } | LaunchError::CommandIsDirectory { .. } => {
                126
            }
            LaunchError::NoCommand
            | LaunchError::InvalidOption { .. }
            | LaunchError::MultiNodeNeedsEndpoint { .. }
            | LaunchError::MultiNodeNeedsRunId { .. }
            | LaunchError::MultiNodeNeedsToken { .. }
            | LaunchError::TokenFile { .. } => 2,
            _ => 1,
        }
    }

    /// The run directory this error left behind (its manifest records the
    /// error), when one was created.
    pub fn run_dir(&self) -> Option<&std::path::Path> {
        match self {
            LaunchError::Spawn { run_dir, .. } => Some(run_dir),
            _ => None,
        }
    }
}

pub use probe_contract::run_dir::RunDirError;
