//! The crate's error type, [`CommError`], and the helpers that format its
//! messages (durations and rank lists).

use std::fmt::Write as _;
use std::io;
use std::time::Duration;

/// Every error the store, the process group and the collectives can return.
///
/// The messages are meant to be shown to a person as they are: they name the
/// ranks, the collective and its sequence number where those are known.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CommError {
    /// An argument was out of range or inconsistent (for example a buffer of
    /// the wrong length); nothing was sent.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// A local I/O operation failed (binding a socket, creating a file, ...).
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },

    /// The store could not be reached within the connect timeout.
    #[error("could not connect to the store at {addr} within {}: {source}", fmt_duration(*.waited))]
    StoreConnect {
        /// The store's address as given.
        addr: String,
        /// How long connecting was retried.
        waited: Duration,
        /// The last connect error.
        #[source]
        source: io::Error,
    },

    /// The store refused this client (wrong token or protocol version), or
    /// refused one of its requests.
    #[error("the store at {addr} refused the request: {reason}")]
    StoreRejected {
        /// The store's address.
        addr: String,
        /// The reason the server gave.
        reason: String,
    },

    /// A blocking store operation (`get`, `wait`) ran out of time.
    #[error("store {op} timed out after {} at {addr}: key(s) {} never set", fmt_duration(*.waited), .missing.join(", "))]
    StoreTimeout {
        /// The operation (`get` or `wait`).
        op: &'static str,
        /// The store's address.
        addr: String,
        /// How long it waited.
        waited: Duration,
        /// The keys that were still missing.
        missing: Vec<String>,
    },

    /// The connection to the store broke or the server sent something that
    /// does not follow the protocol.
    #[error("store connection to {addr} failed: {detail}")]
    StoreConnection {
        /// The store's address.
        addr: String,
        /// What went wrong.
        detail: String,
    },

    /// Not every rank registered with the store in time.
    #[error(
        "rendezvous timed out after {}: {} of {world_size} never arrived at {addr} \
         (check that every rank was started and uses the same store address and token)",
        fmt_duration(*.waited),
        fmt_ranks(.missing)
    )]
    RendezvousTimeout {
        /// How long it waited.
        waited: Duration,
        /// The ranks that never registered.
        missing: Vec<usize>,
        /// The expected number of ranks.
        world_size: usize,
        /// The store's address.
        addr: String,
    },

    /// Building the TCP mesh or the shared-memory rings failed.
    #[error("process group setup failed on rank {rank}: {detail}")]
    Setup {
        /// The local rank.
        rank: usize,
        /// What went wrong.
        detail: String,
    },

    /// A peer closed its connection (EOF or reset) while this rank needed it.
    #[error(
        "rank {peer} closed its connection during {op} seq {seq}; it probably exited or was killed"
    )]
    PeerClosed {
        /// The rank that went away.
        peer: usize,
        /// The collective in progress (for example `all_reduce`).
        op: String,
        /// The collective's sequence number.
        seq: u64,
    },

    /// A socket error other than a closed connection.
    #[error("I/O error with rank {peer} during {op} seq {seq}: {source}")]
    PeerIo {
        /// The peer rank.
        peer: usize,
        /// The collective in progress.
        op: String,
        /// The collective's sequence number.
        seq: u64,
        /// The underlying error.
        #[source]
        source: io::Error,
    },

    /// A collective did not finish within the group timeout.
    #[error("timed out after {} in {op} seq {seq}: still waiting for {}{detail}", fmt_duration(*.waited), fmt_ranks(.ranks))]
    Timeout {
        /// How long the collective ran.
        waited: Duration,
        /// The collective.
        op: String,
        /// Its sequence number.
        seq: u64,
        /// The ranks this rank was still waiting for.
        ranks: Vec<usize>,
        /// Progress details (bytes received so far).
        detail: String,
    },

    /// Two ranks issued different collectives (or the same collective with
    /// different sizes, types, roots or operators) at the same point.
    #[error(
        "collective mismatch at seq {seq}: rank {rank} is in {local}, rank {peer} sent {remote}"
    )]
    Mismatch {
        /// The local sequence number.
        seq: u64,
        /// The local rank.
        rank: usize,
        /// What the local rank is doing.
        local: String,
        /// The rank whose message did not match.
        peer: usize,
        /// What that rank sent.
        remote: String,
    },

    /// A peer sent bytes that are not a valid message.
    #[error("protocol error from rank {peer} during {op} seq {seq}: {detail}")]
    Protocol {
        /// The peer rank.
        peer: usize,
        /// The collective in progress.
        op: String,
        /// Its sequence number.
        seq: u64,
        /// What was wrong.
        detail: String,
    },

    /// This rank failed as a consequence of another rank's failure; `cause`
    /// is the group's first failure as reported by `reporter`.
    #[error("{observed}; the group's first failure, reported by rank {reporter}: {cause}")]
    Aborted {
        /// What this rank saw (typically a neighbour closing its connection).
        #[source]
        observed: Box<CommError>,
        /// The rank that reported the first failure.
        reporter: usize,
        /// Its report.
        cause: String,
    },

    /// An earlier collective failed, so the ranks are no longer in step and
    /// the group refuses further work.
    #[error("the process group is unusable after an earlier error: {0}")]
    Broken(String),

    /// The result of a [`crate::Work`] was already taken by an earlier
    /// `wait_timeout`.
    #[error("the result of this work was already taken")]
    WorkTaken,

    /// The group's communication thread stopped before running the work.
    #[error("the communication thread stopped before this work ran")]
    WorkerGone,
}

impl CommError {
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Self {
        CommError::Io {
            context: context.into(),
            source,
        }
    }
}

/// Formats a duration the way the error messages use it: `30s`, `2.5s`,
/// `150ms`, `40us`.
pub fn fmt_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns >= 1_000_000_000 {
        let s = d.as_secs_f64();
        if (s - s.round()).abs() < 0.05 {
            format!("{}s", s.round() as u64)
        } else {
            format!("{s:.1}s")
        }
    } else if ns >= 1_000_000 {
        format!("{}ms", ns / 1_000_000)
    } else {
        format!("{}us", ns / 1_000)
    }
}

/// Formats a list of ranks as `rank 2` or `ranks 2, 3`.
pub fn fmt_ranks(ranks: &[usize]) -> String {
    let mut out = String::from(if ranks.len() == 1 { "rank " } else { "ranks " });
    for (i, r) in ranks.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{r}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_ranks_format_compactly() {
        assert_eq!(fmt_duration(Duration::from_secs(30)), "30s");
        assert_eq!(fmt_duration(Duration::from_millis(2500)), "2.5s");
        assert_eq!(fmt_duration(Duration::from_millis(150)), "150ms");
        assert_eq!(fmt_duration(Duration::from_micros(40)), "40us");
        assert_eq!(fmt_ranks(&[2]), "rank 2");
        assert_eq!(fmt_ranks(&[2, 3]), "ranks 2, 3");
    }

    #[test]
    fn rendezvous_message_names_missing_ranks() {
        let e = CommError::RendezvousTimeout {
            waited: Duration::from_secs(30),
            missing: vec![2, 3],
            world_size: 4,
            addr: "127.0.0.1:29500".into(),
        };
        assert!(e.to_string().starts_with(
            "rendezvous timed out after 30s: ranks 2, 3 of 4 never arrived at 127.0.0.1:29500"
        ));
    }
}
