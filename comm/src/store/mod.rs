//! The rendezvous key-value store: wire format ([`protocol`]), server
//! ([`StoreServer`]), client ([`StoreClient`]) and the [`rendezvous`] helper
//! with which every rank registers and waits for the others.

pub mod protocol;

mod client;
mod server;

use std::time::Duration;

pub use client::StoreClient;
pub use server::{ServerOptions, StoreServer};

use crate::error::CommError;

/// Registers `rank` under `prefix` with `payload`, waits until all
/// `world_size` ranks have registered, and returns every rank's payload in
/// rank order.
///
/// When not every rank arrives within `timeout` the error names the missing
/// ranks: `rendezvous timed out after 30s: ranks 2, 3 of 4 never arrived at
/// 127.0.0.1:29500 ...`.
pub fn rendezvous(
    store: &StoreClient,
    prefix: &str,
    rank: usize,
    world_size: usize,
    payload: &[u8],
    timeout: Duration,
) -> Result<Vec<Vec<u8>>, CommError> {
    if world_size == 0 || rank >= world_size {
        return Err(CommError::InvalidArgument(format!(
            "rank {rank} is not in a world of size {world_size}"
        )));
    }
    let key = |r: usize| format!("{prefix}/rank/{r}");
    store.set(&key(rank), payload)?;
    let keys: Vec<String> = (0..world_size).map(key).collect();
    match store.wait(&keys, timeout) {
        Ok(()) => {}
        Err(CommError::StoreTimeout { missing, .. }) => {
            let mut ranks: Vec<usize> = (0..world_size)
                .filter(|r| missing.contains(&key(*r)))
                .collect();
            ranks.sort_unstable();
            return Err(CommError::RendezvousTimeout {
                waited: timeout,
                missing: ranks,
                world_size,
                addr: store.addr().to_string(),
            });
        }
        Err(e) => return Err(e),
    }
    keys.iter().map(|k| store.get_timeout(k, timeout)).collect()
}
