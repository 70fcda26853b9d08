//! Configuration of a process group ([`GroupOptions`]) and the environment
//! variables that can override it.

use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use crate::error::CommError;

/// Environment variable choosing the transport when
/// [`GroupOptions::transport`] is [`TransportChoice::Auto`]: `tcp`, `shm`
/// or `auto`.
pub const TRANSPORT_ENV: &str = "DDP_COMM_TRANSPORT";

/// Environment variable choosing the algorithms when
/// [`GroupOptions::algorithm`] is [`AlgorithmChoice::Auto`]: `ring`
/// (bandwidth-optimal), `latency` or `auto`.
pub const ALGORITHM_ENV: &str = "DDP_COMM_ALGORITHM";

/// Environment variable choosing [`GroupOptions::direct_read`] when it is
/// [`DirectReadChoice::Auto`]: `auto`, `always` (or `1`), `never` (or `0`).
pub const DIRECT_READ_ENV: &str = "DDP_COMM_DIRECT_READ";

/// Environment variable overriding [`GroupOptions::timeout`] for groups created by
/// [`crate::ProcessGroup::from_env`]: seconds, a positive number (fractions allowed). Short
/// values let tests and health checks notice a dead peer or a cut link quickly.
pub use probe_contract::env::TIMEOUT as TIMEOUT_ENV;

/// Messages of at least this many bytes use the bandwidth-optimal
/// algorithms (ring, pipeline); smaller ones the latency-optimal ones
/// (recursive doubling, binomial tree, direct exchange).
pub const RING_THRESHOLD_BYTES: usize = 256 << 10;

/// Default size of each shared-memory ring (one per direction and peer).
pub const DEFAULT_SHM_RING_BYTES: usize = 2 << 20;

/// Default group timeout: how long any collective, and group creation, may
/// take.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// Which transport carries the data between ranks on the same host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TransportChoice {
    /// Shared memory where possible, TCP otherwise; [`TRANSPORT_ENV`] may
    /// override.
    #[default]
    Auto,
    /// TCP only.
    Tcp,
    /// Shared memory between ranks on the same host (group creation fails
    /// if it cannot be set up); TCP between hosts.
    Shm,
}

impl FromStr for TransportChoice {
    type Err = CommError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" | "" => Ok(TransportChoice::Auto),
            "tcp" => Ok(TransportChoice::Tcp),
            "shm" => Ok(TransportChoice::Shm),
            other => Err(CommError::InvalidArgument(format!(
                "unknown transport {other:?} (expected tcp, shm or auto)"
            ))),
        }
    }
}

impl fmt::Display for TransportChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TransportChoice::Auto => "auto",
            TransportChoice::Tcp => "tcp",
            TransportChoice::Shm => "shm",
        })
    }
}

/// Which family of algorithms the collectives use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum AlgorithmChoice {
    /// By message size against [`GroupOptions::ring_threshold_bytes`];
    /// [`ALGORITHM_ENV`] may override.
    #[default]
    Auto,
    /// Always the bandwidth-optimal algorithms (ring, pipeline; direct
    /// reads for all-reduce and broadcast on one host where allowed).
    Ring,
    /// Always the latency-optimal algorithms (recursive doubling, binomial
    /// tree, direct exchange).
    Latency,
}

impl FromStr for AlgorithmChoice {
    type Err = CommError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" | "" => Ok(AlgorithmChoice::Auto),
            "ring" | "bandwidth" => Ok(AlgorithmChoice::Ring),
            "latency" => Ok(AlgorithmChoice::Latency),
            other => Err(CommError::InvalidArgument(format!(
                "unknown algorithm choice {other:?} (expected ring, latency or auto)"
            ))),
        }
    }
}

/// When large all-reduces and broadcasts between ranks on one host read
/// the peers' buffers directly ([`crate::Algorithm::DirectRead`], one copy
/// per byte) instead of streaming through the shared-memory rings (two).
/// Only where every rank is on one host and the group's probe at creation
/// found that the ranks may read each other's memory; the group takes the
/// most restrictive choice of its ranks. Where the probe found that they
/// may also write it, a broadcast's root writes part of the buffer into the
/// others' while they read the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DirectReadChoice {
    /// With 2 ranks. With more, on a 2-core machine (4 ranks), rings were
    /// as fast or faster from 32 MiB up: several readers of one buffer
    /// stream it from memory separately, where a chain passes it on in
    /// cache. [`DIRECT_READ_ENV`] may override.
    #[default]
    Auto,
    /// At every world size.
    Always,
    /// Never: rings only.
    Never,
}

impl FromStr for DirectReadChoice {
    type Err = CommError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" | "" => Ok(DirectReadChoice::Auto),
            "always" | "1" => Ok(DirectReadChoice::Always),
            "never" | "0" => Ok(DirectReadChoice::Never),
            other => Err(CommError::InvalidArgument(format!(
                "unknown direct-read choice {other:?} (expected auto, always or never)"
            ))),
        }
    }
}

/// Options of a [`crate::ProcessGroup`].
#[derive(Clone, Debug)]
pub struct GroupOptions {
    /// Limit for group creation and for every collective; a collective that
    /// runs longer fails naming the ranks it waited for.
    pub timeout: Duration,
    /// Transport between ranks on the same host.
    pub transport: TransportChoice,
    /// Algorithm family.
    pub algorithm: AlgorithmChoice,
    /// Size threshold between the latency- and bandwidth-optimal algorithms
    /// under [`AlgorithmChoice::Auto`].
    pub ring_threshold_bytes: usize,
    /// Name of the group; groups with different names on one store do not
    /// interfere.
    pub group_name: String,
    /// Address to listen on for peers; by default the local address of the
    /// connection to the store.
    pub listen_ip: Option<IpAddr>,
    /// Capacity of each shared-memory ring (rounded to 4 KiB, at least
    /// 64 KiB).
    pub shm_ring_bytes: usize,
    /// Folder for the ring files (a tmpfs; they are unlinked right after
    /// setup).
    pub shm_dir: PathBuf,
    /// `SO_SNDBUF`/`SO_RCVBUF` for peer sockets; `None` leaves the kernel's
    /// auto-tuning on.
    pub socket_buffer_bytes: Option<usize>,
    /// Ping round trips per rank when measuring the clock offset to rank 0.
    pub clock_sync_rounds: usize,
    /// Direct reads between ranks on one host.
    pub direct_read: DirectReadChoice,
}

impl Default for GroupOptions {
    fn default() -> Self {
        GroupOptions {
            timeout: DEFAULT_TIMEOUT,
            transport: TransportChoice::Auto,
            algorithm: AlgorithmChoice::Auto,
            ring_threshold_bytes: RING_THRESHOLD_BYTES,
            group_name: "default".into(),
            listen_ip: None,
            shm_ring_bytes: DEFAULT_SHM_RING_BYTES,
            shm_dir: PathBuf::from("/dev/shm"),
            socket_buffer_bytes: None,
            clock_sync_rounds: 8,
            direct_read: DirectReadChoice::Auto,
        }
    }
}

impl GroupOptions {
    /// Options with the given timeout and defaults otherwise.
    pub fn with_timeout(timeout: Duration) -> Self {
        GroupOptions {
            timeout,
            ..Default::default()
        }
    }

    /// The timeout after applying [`TIMEOUT_ENV`], when it is set.
    pub fn resolved_timeout(&self) -> Result<Duration, CommError> {
        let Ok(v) = std::env::var(TIMEOUT_ENV) else {
            return Ok(self.timeout);
        };
        match v.trim().parse::<f64>() {
            Ok(s) if s.is_finite() && s > 0.0 && s < 1e9 => Ok(Duration::from_secs_f64(s)),
            _ => Err(CommError::InvalidArgument(format!(
                "{TIMEOUT_ENV}={v:?} is not a positive number of seconds"
            ))),
        }
    }

    /// The transport after applying [`TRANSPORT_ENV`] to `Auto`.
    pub fn resolved_transport(&self) -> Result<TransportChoice, CommError> {
        match self.transport {
            TransportChoice::Auto => match std::env::var(TRANSPORT_ENV) {
                Ok(v) => v.parse(),
                Err(_) => Ok(TransportChoice::Auto),
            },
            other => Ok(other),
        }
    }

    /// The direct-read choice after applying [`DIRECT_READ_ENV`] to `Auto`.
    pub fn resolved_direct_read(&self) -> Result<DirectReadChoice, CommError> {
        match self.direct_read {
            DirectReadChoice::Auto => match std::env::var(DIRECT_READ_ENV) {
                Ok(v) => v.parse(),
                Err(_) => Ok(DirectReadChoice::Auto),
            },
            other => Ok(other),
        }
    }

    /// The algorithm choice after applying [`ALGORITHM_ENV`] to `Auto`.
    pub fn resolved_algorithm(&self) -> Result<AlgorithmChoice, CommError> {
        match self.algorithm {
            AlgorithmChoice::Auto => match std::env::var(ALGORITHM_ENV) {
                Ok(v) => v.parse(),
                Err(_) => Ok(AlgorithmChoice::Auto),
            },
            other => Ok(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_parse() {
        assert_eq!(
            "TCP".parse::<TransportChoice>().unwrap(),
            TransportChoice::Tcp
        );
        assert_eq!(
            "shm".parse::<TransportChoice>().unwrap(),
            TransportChoice::Shm
        );
        assert!("udp".parse::<TransportChoice>().is_err());
        assert_eq!(
            "ring".parse::<AlgorithmChoice>().unwrap(),
            AlgorithmChoice::Ring
        );
        assert_eq!(
            "latency".parse::<AlgorithmChoice>().unwrap(),
            AlgorithmChoice::Latency
        );
        assert!("fast".parse::<AlgorithmChoice>().is_err());
    }
}
