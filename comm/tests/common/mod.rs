//! Helpers shared by the integration tests: a store per test, ranks as
//! threads with their own process groups, deterministic test data and
//! conversions between `Buffer` and `f64`.

#![allow(dead_code)]

use std::time::Duration;

use comm::half::{bf16, f16};
use comm::{
    Buffer, CommError, DType, GroupOptions, ProcessGroup, StoreClient, StoreServer, Token,
    TransportChoice,
};

/// A store on an ephemeral loopback port.
pub fn store() -> (StoreServer, Token) {
    let token = Token::generate().expect("token");
    let server = StoreServer::bind("127.0.0.1:0", token.clone()).expect("bind store");
    (server, token)
}

/// Options for tests: short timeout, the given transport.
pub fn opts(transport: TransportChoice) -> GroupOptions {
    GroupOptions {
        timeout: Duration::from_secs(10),
        transport,
        shm_ring_bytes: 256 << 10,
        ..GroupOptions::default()
    }
}

/// Runs `f` on `world` ranks, each a thread with its own store client and
/// process group, and returns the results in rank order.
pub fn run_ranks<R, F>(world: usize, options: GroupOptions, f: F) -> Vec<R>
where
    R: Send,
    F: Fn(&ProcessGroup) -> R + Sync,
{
    run_ranks_with(
        world,
        |_| options.clone(),
        |pg| f(pg.expect("process group")),
    )
}

/// Like [`run_ranks`] with per-rank options, handing `f` the result of
/// creating the group.
pub fn run_ranks_with<R, O, F>(world: usize, options: O, f: F) -> Vec<R>
where
    R: Send,
    O: Fn(usize) -> GroupOptions + Sync,
    F: Fn(Result<&ProcessGroup, CommError>) -> R + Sync,
{
    let (server, token) = store();
    let addr = server.local_addr();
    let out = std::thread::scope(|s| {
        let handles: Vec<_> = (0..world)
            .map(|rank| {
                let token = token.clone();
                let (f, options) = (&f, &options);
                s.spawn(move || {
                    let store = StoreClient::connect(addr, &token, Duration::from_secs(10))
                        .expect("connect");
                    match ProcessGroup::new(rank, world, &store, options(rank)) {
                        Ok(pg) => f(Ok(&pg)),
                        Err(e) => f(Err(e)),
                    }
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

/// A deterministic small integer for element `i` of rank `rank`, in a range
/// every type (including u8, f16, bf16) represents exactly, and whose sums
/// and products over four ranks stay exact.
pub fn value(dtype: DType, seed: u64, rank: usize, i: usize) -> f64 {
    let mut x = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add((rank as u64) << 32)
        .wrapping_add(i as u64);
    x ^= x >> 29;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 32;
    match dtype {
        DType::U8 => (x % 4) as f64,
        _ => (x % 7) as f64 - 3.0,
    }
}

/// Builds a buffer of `dtype` from exact values.
pub fn make(dtype: DType, vals: &[f64]) -> Buffer {
    match dtype {
        DType::F32 => Buffer::F32(vals.iter().map(|&v| v as f32).collect()),
        DType::F64 => Buffer::F64(vals.to_vec()),
        DType::F16 => Buffer::F16(vals.iter().map(|&v| f16::from_f64(v).to_bits()).collect()),
        DType::BF16 => Buffer::BF16(vals.iter().map(|&v| bf16::from_f64(v).to_bits()).collect()),
        DType::I32 => Buffer::I32(vals.iter().map(|&v| v as i32).collect()),
        DType::I64 => Buffer::I64(vals.iter().map(|&v| v as i64).collect()),
        DType::U8 => Buffer::U8(vals.iter().map(|&v| v as u8).collect()),
    }
}

/// The values of a buffer as `f64`.
pub fn to_f64(b: &Buffer) -> Vec<f64> {
    match b {
        Buffer::F32(v) => v.iter().map(|&x| x as f64).collect(),
        Buffer::F64(v) => v.clone(),
        Buffer::F16(v) => v.iter().map(|&x| f16::from_bits(x).to_f64()).collect(),
        Buffer::BF16(v) => v.iter().map(|&x| bf16::from_bits(x).to_f64()).collect(),
        Buffer::I32(v) => v.iter().map(|&x| x as f64).collect(),
        Buffer::I64(v) => v.iter().map(|&x| x as f64).collect(),
        Buffer::U8(v) => v.iter().map(|&x| x as f64).collect(),
    }
}

/// Relative tolerance of one rounding in `dtype`.
pub fn tolerance(dtype: DType) -> f64 {
    match dtype {
        DType::F32 => 1e-6,
        DType::F64 => 1e-14,
        DType::F16 => 1e-3,
        DType::BF16 => 8e-3,
        _ => 0.0,
    }
}

/// Asserts `got` equals `want` (exactly, or within `rel` relative error).
pub fn assert_close(got: &[f64], want: &[f64], rel: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = if rel == 0.0 {
            g == w
        } else {
            (g - w).abs() <= rel * w.abs().max(1.0)
        };
        assert!(ok, "{what}: element {i}: got {g}, want {w}");
    }
}
