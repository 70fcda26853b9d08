//! The trace format v1: constants, record types and the line writer.
//!
//! A trace is one JSON Lines file per rank (`<run_dir>/traces/rank-<R>.jsonl`).
//! The first record is a [`Header`]; every later line is one [`Record`].
//! `docs/trace-format.md` is the normative description; the types here are
//! the writer side of it and serialize exactly to what the document shows.
//! The reader (`probe::reader`) has its own zero-copy parsing path and
//! turns files into the compact `probe::model::Run`.

mod kinds;
mod records;
mod writer;

use std::fmt;
use std::path::{Path, PathBuf};

/// The span's optional fields, declared once (see the macro's documentation).
#[doc(hidden)]
pub use crate::span_optional_fields;
pub use kinds::{KernelCategory, LogLevel, SpanKind};
pub use records::{group_key, groups_text, hostname, span_field_names, Args};
pub use records::{
    BucketInfo, BucketsRecord, BufferInfo, CounterRecord, DdpConfig, EndRecord, GradReadyRecord,
    Header, InstantRecord, LogRecord, ParamInfo, Record, SpanRecord, MAX_STEP,
};
pub use writer::{TraceWriter, DEFAULT_BUFFER_BYTES};

/// The name of the counter that gives the number of samples a rank
/// processed in a step (see `docs/trace-format.md`, "Conventions for
/// analysis"); summaries turn it into samples/s.
pub const SAMPLES_COUNTER: &str = "samples";

/// The value of the header's `format` field.
pub const FORMAT_NAME: &str = "ddp-probe-trace";
/// The major version this crate writes and reads.
pub const VERSION_MAJOR: u32 = 1;
/// The minor version this crate writes. Readers accept any minor version of
/// [`VERSION_MAJOR`].
pub const VERSION_MINOR: u32 = 0;
/// The header's `version` field as written by this crate.
pub const VERSION: &str = "1.0";
/// The only clock domain of v1: nanoseconds since the Unix epoch.
pub const CLOCK_UNIX_NS: &str = "unix_ns";
/// The folder of a run directory that holds the per-rank trace files.
pub use crate::run_dir::TRACES_DIR;
/// Gradient-ready offset meaning "this parameter got no gradient this step".
pub const NO_GRAD: i64 = -1;

/// Names of collective operations (the `op` field of `collective` spans).
///
/// The vocabulary is open: other names load as they are.
pub mod op {
    /// All-reduce (the DDP gradient reduction).
    pub const ALL_REDUCE: &str = "all_reduce";
    /// Broadcast from one rank (parameter and buffer sync).
    pub const BROADCAST: &str = "broadcast";
    /// Barrier.
    pub const BARRIER: &str = "barrier";
    /// All-gather.
    pub const ALL_GATHER: &str = "all_gather";
    /// Gather to one rank.
    pub const GATHER: &str = "gather";
    /// Scatter from one rank.
    pub const SCATTER: &str = "scatter";
    /// Reduce to one rank.
    pub const REDUCE: &str = "reduce";
    /// Reduce-scatter.
    pub const REDUCE_SCATTER: &str = "reduce_scatter";
    /// All-to-all.
    pub const ALL_TO_ALL: &str = "all_to_all";
    /// Point-to-point send.
    pub const SEND: &str = "send";
    /// Point-to-point receive.
    pub const RECV: &str = "recv";
}

/// Names of the spans a rank records while it calibrates its communication
/// cost at start-up (`DDP_PROBE_CALIBRATE`; the reference DDP at
/// construction, the PyTorch module at `instrument()`), before step 1. The
/// collectives are `collective` spans with `op`, `bytes`, `seq` and `dtype`;
/// the compute of the interference probe is a `user` span. The analysis fits
/// its cost model and its interference factors to them.
pub mod calibration {
    /// A collective of the size sweep, run with nothing else on the rank.
    pub const SWEEP: &str = "calibration";
    /// The probe's collective, run while the rank computes.
    pub const OVERLAPPED: &str = "calibration overlapped";
    /// The probe's compute, alone.
    pub const COMPUTE: &str = "calibration compute";
    /// The same compute, while the probe's collective runs.
    pub const COMPUTE_OVERLAPPED: &str = "calibration compute overlapped";
    /// The probe's chain of small collectives, run while the rank computes.
    pub const OVERLAPPED_SMALL: &str = "calibration overlapped small";
    /// The same compute, while the chain of small collectives runs.
    pub const COMPUTE_OVERLAPPED_SMALL: &str = "calibration compute overlapped small";
}

/// Names of transports (the `transport` field). The vocabulary is open.
pub mod transport {
    /// TCP sockets.
    pub const TCP: &str = "tcp";
    /// Shared memory between processes of one node.
    pub const SHM: &str = "shm";
    /// NVIDIA NCCL.
    pub const NCCL: &str = "nccl";
    /// Gloo.
    pub const GLOO: &str = "gloo";
}

/// Names of collective algorithms (the `algo` field). The vocabulary is open.
pub mod algo {
    /// Ring all-reduce (reduce-scatter then all-gather around a ring).
    pub const RING: &str = "ring";
    /// Every rank exchanges directly with every other rank.
    pub const DIRECT: &str = "direct";
    /// Tree reduction.
    pub const TREE: &str = "tree";
}

/// The file name of rank `rank`'s trace: `rank-<R>.jsonl`.
pub fn rank_file_name(rank: u32) -> String {
    format!("rank-{rank}.jsonl")
}

/// The path of rank `rank`'s trace inside a run directory:
/// `<run_dir>/traces/rank-<R>.jsonl`.
pub fn rank_file_path(run_dir: &Path, rank: u32) -> PathBuf {
    run_dir.join(TRACES_DIR).join(rank_file_name(rank))
}

/// A `major.minor` format version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version {
    /// Incompatible changes bump the major version.
    pub major: u32,
    /// Compatible additions bump the minor version.
    pub minor: u32,
}

impl Version {
    /// The version this crate writes.
    pub const CURRENT: Version = Version {
        major: VERSION_MAJOR,
        minor: VERSION_MINOR,
    };

    /// Parses `"major.minor"` (a bare `"major"` means minor 0). Returns `None`
    /// for anything else.
    pub fn parse(s: &str) -> Option<Version> {
        let (major, minor) = match s.split_once('.') {
            Some((a, b)) => (a, b),
            None => (s, "0"),
        };
        let digits = |x: &str| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit());
        if !digits(major) || !digits(minor) {
            return None;
        }
        Some(Version {
            major: major.parse().ok()?,
            minor: minor.parse().ok()?,
        })
    }

    /// Whether a reader of this crate can load a file of this version.
    pub fn is_supported(self) -> bool {
        self.major == VERSION_MAJOR
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse() {
        assert_eq!(Version::parse("1.0"), Some(Version::CURRENT));
        assert_eq!(Version::parse("1.7"), Some(Version { major: 1, minor: 7 }));
        assert_eq!(Version::parse("2"), Some(Version { major: 2, minor: 0 }));
        assert_eq!(Version::parse("1."), None);
        assert_eq!(Version::parse("v1.0"), None);
        assert_eq!(Version::parse("1.0.3"), None);
        assert!(Version::parse("1.9").unwrap().is_supported());
        assert!(!Version::parse("2.0").unwrap().is_supported());
        assert_eq!(Version::CURRENT.to_string(), VERSION);
    }

    #[test]
    fn paths() {
        assert_eq!(
            rank_file_path(Path::new("/runs/a"), 3),
            PathBuf::from("/runs/a/traces/rank-3.jsonl")
        );
    }
}
