//! Ranks as threads for the integration tests: one loopback store per call, each thread with
//! its own store client and process group (as comm's own tests do).

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use comm::{GroupOptions, ProcessGroup, StoreClient, StoreServer, Token};

/// Runs `f(group)` on `world` ranks, each a thread with its own process group over loopback,
/// and returns the results in rank order.
pub fn run_ranks<R, F>(world: usize, f: F) -> Vec<R>
where
    R: Send,
    F: Fn(Arc<ProcessGroup>) -> R + Sync,
{
    let token = Token::generate().expect("token");
    let server = StoreServer::bind("127.0.0.1:0", token.clone()).expect("bind store");
    let addr = server.local_addr();
    let out = std::thread::scope(|s| {
        let handles: Vec<_> = (0..world)
            .map(|rank| {
                let token = token.clone();
                let f = &f;
                s.spawn(move || {
                    let store = StoreClient::connect(addr, &token, Duration::from_secs(20))
                        .expect("connect to the store");
                    let options = GroupOptions {
                        timeout: Duration::from_secs(20),
                        ..GroupOptions::default()
                    };
                    let pg =
                        ProcessGroup::new(rank, world, &store, options).expect("process group");
                    f(Arc::new(pg))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("rank thread panicked"))
            .collect()
    });
    drop(server);
    out
}
