//! Rendezvous store and CPU collectives for the reference DDP, without
//! libtorch.
//!
//! * [`store`]: a TCP key-value store for rendezvous ([`StoreServer`],
//!   [`StoreClient`], [`rendezvous`]) protected by the run's [`Token`].
//! * [`ProcessGroup`]: a full mesh of TCP connections between the ranks,
//!   with shared-memory rings between ranks on the same host, running
//!   `all_reduce`, `broadcast`, `all_gather`, `gather`, `scatter`,
//!   `reduce_scatter`, `barrier` and `send`/`recv` on `f32`, `f64`, `f16`,
//!   `bf16`, `i32`, `i64` and `u8`, synchronously on slices or queued on the
//!   group's communication thread ([`Work`]).
//! * Every collective carries a sequence number and a header describing it,
//!   so ranks that disagree are told so ([`CommError::Mismatch`]); dead or
//!   stalled peers end in errors naming them within the group timeout.
//! * [`clock::now_ns`] is the timestamp clock of [`WorkInfo`];
//!   [`ProcessGroup::clock_offset_ns`] relates it to rank 0's.
//!
//! # Environment
//!
//! [`ProcessGroup::from_env`] reads `RANK`, `WORLD_SIZE`, `MASTER_ADDR`,
//! `MASTER_PORT` and [`TOKEN_ENV`] (`DDP_PROBE_STORE_TOKEN`). [`TRANSPORT_ENV`]
//! (`DDP_COMM_TRANSPORT=tcp|shm|auto`) and [`ALGORITHM_ENV`]
//! (`DDP_COMM_ALGORITHM=ring|latency|auto`) override options left at `Auto`.
//!
//! # Wire formats
//!
//! * Store: length-prefixed frames (`u32` LE length, tag byte, fields), a
//!   `HELLO` with the token first; see [`store::protocol`].
//! * Peer handshake (connecting rank to accepting rank, little-endian):
//!   `"DDPM" | version | world | sender | receiver | token length |
//!   u64 generation | token`, answered by `"DDPM" | status`; bad tokens,
//!   ranks, world sizes and duplicates are refused and closed.
//! * Shared-memory negotiation over the handshaken TCP connection: each
//!   rank offers a ring file (path, capacity, nonce) per same-host peer plus
//!   its doorbell file; a pair uses shared memory only if both directions
//!   opened and verified, and the files are unlinked right after.
//! * Clock sync: 8-byte pings from each rank to rank 0, answered with rank
//!   0's [`clock::now_ns`]; the minimum-round-trip sample gives the offset.
//! * Collectives: every stream of a collective between two ranks (TCP or
//!   ring) starts with a 32-byte header
//!   `"DDPC" | op | dtype | algorithm | reduce op | u64 seq | u64 count |
//!   u32 root | u32 sender` followed by the raw element bytes (native byte
//!   order, little-endian on the supported x86-64 and aarch64 hosts); the
//!   receiver compares the header with its own view and reports
//!   [`CommError::Mismatch`] on any difference.
//!
//! ```no_run
//! use std::time::Duration;
//! use comm::{GroupOptions, ProcessGroup, ReduceOp, StoreClient, StoreServer, Token};
//!
//! # fn main() -> Result<(), comm::CommError> {
//! let token = Token::generate()?;
//! let server = StoreServer::bind("127.0.0.1:0", token.clone())?;
//! // ... in every rank (here: rank 0 of 1):
//! let store = StoreClient::connect(server.local_addr(), &token, Duration::from_secs(30))?;
//! let pg = ProcessGroup::new(0, 1, &store, GroupOptions::default())?;
//! let mut grads = vec![1.0f32; 1024];
//! let info = pg.all_reduce(&mut grads, ReduceOp::Avg)?;
//! println!("{} via {} took {} ns", info.op, info.algorithm, info.duration_ns());
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

pub mod clock;
pub mod store;

#[doc(hidden)]
pub mod fuzzing;

mod algorithms;
mod cma;
mod dtype;
mod engine;
mod error;
mod group;
mod link;
mod mesh;
mod options;
mod reduce;
mod shm;
mod token;
mod wire;
mod work;

pub use dtype::{Buffer, DType, Element, ReduceOp};
pub use error::{fmt_duration, fmt_ranks, CommError};
pub use group::{EnvRendezvous, ProcessGroup};
pub use mesh::host_identity;
pub use options::{
    AlgorithmChoice, DirectReadChoice, GroupOptions, TransportChoice, ALGORITHM_ENV,
    DEFAULT_SHM_RING_BYTES, DEFAULT_TIMEOUT, DIRECT_READ_ENV, RING_THRESHOLD_BYTES, TIMEOUT_ENV,
    TRANSPORT_ENV,
};
pub use store::{rendezvous, ServerOptions, StoreClient, StoreServer};
pub use token::{Token, MAX_TOKEN_BYTES, TOKEN_ENV};
pub use wire::{Algorithm, OpKind, Transport};
pub use work::{Work, WorkInfo, WorkResult};

/// Re-export of the `half` crate, whose `f16` and `bf16` are [`Element`]s.
pub use half;
