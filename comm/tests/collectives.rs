//! Every collective against a naive reference computed here, for world
//! sizes 1-4, sizes 0/1/7/13 (and a large prime), every element type, both
//! transports and both algorithm families. Ranks are threads, each with its
//! own process group over loopback.

mod common;

use comm::{
    Algorithm, AlgorithmChoice, Buffer, DType, DirectReadChoice, GroupOptions, OpKind,
    ProcessGroup, ReduceOp, Transport, TransportChoice,
};
use common::{assert_close, make, run_ranks, to_f64, tolerance, value};

const SIZES: [usize; 4] = [0, 1, 7, 13];
const OPS: [ReduceOp; 5] = [
    ReduceOp::Sum,
    ReduceOp::Avg,
    ReduceOp::Max,
    ReduceOp::Min,
    ReduceOp::Product,
];
const TRANSPORTS: [TransportChoice; 2] = [TransportChoice::Tcp, TransportChoice::Shm];
const ALGOS: [AlgorithmChoice; 2] = [AlgorithmChoice::Ring, AlgorithmChoice::Latency];

fn options(t: TransportChoice, a: AlgorithmChoice) -> GroupOptions {
    GroupOptions {
        algorithm: a,
        ..common::opts(t)
    }
}

/// The direct-read choices tried with `t`: over shared memory both the
/// rings and the direct reads, at every world size.
fn direct_reads(t: TransportChoice) -> &'static [DirectReadChoice] {
    match t {
        TransportChoice::Shm => &[DirectReadChoice::Never, DirectReadChoice::Always],
        _ => &[DirectReadChoice::Auto],
    }
}

/// Runs `body(pg, world)` for every world size, transport (over shared
/// memory with and without direct reads) and algorithm family.
fn matrix(body: impl Fn(&ProcessGroup, usize, AlgorithmChoice) + Sync) {
    for world in 1..=4 {
        for t in TRANSPORTS {
            for a in ALGOS {
                for &d in direct_reads(t) {
                    let opts = GroupOptions {
                        direct_read: d,
                        ..options(t, a)
                    };
                    run_ranks(world, opts, |pg| {
                        let expect_transport = match (world, t) {
                            (1, _) => Transport::Local,
                            (_, TransportChoice::Tcp) => Transport::Tcp,
                            _ => Transport::Shm,
                        };
                        assert_eq!(pg.transport(), expect_transport);
                        // Threads of one process may always read each other.
                        assert_eq!(pg.direct_read(), world > 1 && d == DirectReadChoice::Always);
                        body(pg, world, a)
                    });
                }
            }
        }
    }
}

fn expected_algorithm(
    pg: &ProcessGroup,
    kind: OpKind,
    world: usize,
    a: AlgorithmChoice,
) -> Algorithm {
    if world == 1 {
        return Algorithm::Local;
    }
    let ring = a == AlgorithmChoice::Ring;
    if ring && pg.direct_read() && matches!(kind, OpKind::AllReduce | OpKind::Broadcast) {
        return Algorithm::DirectRead;
    }
    match kind {
        OpKind::AllReduce => {
            if ring {
                Algorithm::Ring
            } else {
                Algorithm::RecursiveDoubling
            }
        }
        OpKind::Broadcast => {
            if ring {
                Algorithm::Pipeline
            } else {
                Algorithm::BinomialTree
            }
        }
        OpKind::AllGather | OpKind::ReduceScatter => {
            if ring {
                Algorithm::Ring
            } else {
                Algorithm::Direct
            }
        }
        _ => Algorithm::Direct,
    }
}

/// Reference reduction of `vals` (one value per rank) in `dtype` semantics.
fn reduce_ref(dtype: DType, op: ReduceOp, vals: &[f64]) -> f64 {
    let n = vals.len() as f64;
    let sum: f64 = vals.iter().sum();
    match op {
        ReduceOp::Sum => sum,
        ReduceOp::Avg => match dtype {
            DType::I32 | DType::I64 | DType::U8 => (sum / n).trunc(),
            _ => sum / n,
        },
        ReduceOp::Max => vals.iter().cloned().fold(f64::MIN, f64::max),
        ReduceOp::Min => vals.iter().cloned().fold(f64::MAX, f64::min),
        ReduceOp::Product => vals.iter().product(),
    }
}

fn data(dtype: DType, seed: u64, rank: usize, len: usize) -> Vec<f64> {
    (0..len).map(|i| value(dtype, seed, rank, i)).collect()
}

#[test]
fn all_reduce_matches_reference() {
    matrix(|pg, world, a| {
        let rank = pg.rank();
        for (di, dtype) in DType::ALL.into_iter().enumerate() {
            for &len in &SIZES {
                for (oi, op) in OPS.into_iter().enumerate() {
                    let seed = (di * 100 + oi * 10 + len) as u64;
                    let mine = data(dtype, seed, rank, len);
                    let work = pg.all_reduce_async(make(dtype, &mine), op);
                    let (buf, info) = work.wait().expect("all_reduce");
                    let want: Vec<f64> = (0..len)
                        .map(|i| {
                            let col: Vec<f64> =
                                (0..world).map(|r| value(dtype, seed, r, i)).collect();
                            reduce_ref(dtype, op, &col)
                        })
                        .collect();
                    let rel = if op == ReduceOp::Avg {
                        tolerance(dtype)
                    } else {
                        0.0
                    };
                    assert_close(
                        &to_f64(&buf),
                        &want,
                        rel,
                        &format!("all_reduce {dtype} {op} len {len} world {world}"),
                    );
                    assert_eq!(buf.dtype(), dtype);
                    assert_eq!(info.op, OpKind::AllReduce);
                    assert_eq!(info.count, len);
                    assert_eq!(info.bytes, len * dtype.size());
                    assert_eq!(info.world_size, world);
                    assert_eq!(
                        info.algorithm,
                        expected_algorithm(pg, OpKind::AllReduce, world, a)
                    );
                    assert!(
                        info.queued_ns <= info.started_ns && info.started_ns <= info.finished_ns
                    );
                }
            }
        }
    });
}

#[test]
fn all_reduce_results_are_bitwise_identical_across_ranks() {
    // Non-integer random floats: the summation order matters, so every rank
    // must have reduced in the same order.
    for t in TRANSPORTS {
        for a in ALGOS {
            for &d in direct_reads(t) {
                let opts = GroupOptions {
                    direct_read: d,
                    ..options(t, a)
                };
                let results = run_ranks(3, opts, |pg| {
                    let mut v: Vec<f32> = (0..1001)
                        .map(|i| ((i * 7919 + pg.rank() * 104_729) % 1000) as f32 * 0.001_37 + 0.1)
                        .collect();
                    let mut h: Vec<comm::half::f16> =
                        v.iter().map(|&x| comm::half::f16::from_f32(x)).collect();
                    pg.all_reduce(&mut v, ReduceOp::Sum).unwrap();
                    pg.all_reduce(&mut h, ReduceOp::Sum).unwrap();
                    (v, h)
                });
                for r in &results[1..] {
                    assert!(r
                        .0
                        .iter()
                        .zip(&results[0].0)
                        .all(|(a, b)| a.to_bits() == b.to_bits()));
                    assert!(r
                        .1
                        .iter()
                        .zip(&results[0].1)
                        .all(|(a, b)| a.to_bits() == b.to_bits()));
                }
                // And close to the exact sum.
                for i in 0..1001 {
                    let exact: f64 = (0..3)
                        .map(|r| ((i * 7919 + r * 104_729) % 1000) as f32 * 0.001_37 + 0.1)
                        .map(f64::from)
                        .sum();
                    assert!((results[0].0[i] as f64 - exact).abs() < 1e-5 * exact);
                    assert!((results[0].1[i].to_f64() - exact).abs() < 3e-3 * exact);
                }
            }
        }
    }
}

#[test]
fn broadcast_matches_reference() {
    matrix(|pg, world, a| {
        let rank = pg.rank();
        for (di, dtype) in DType::ALL.into_iter().enumerate() {
            for &len in &SIZES {
                for root in [0, world - 1, world / 2] {
                    let seed = (di * 50 + len + root) as u64;
                    let (buf, info) = pg
                        .broadcast_async(make(dtype, &data(dtype, seed, rank, len)), root)
                        .wait()
                        .expect("broadcast");
                    assert_close(
                        &to_f64(&buf),
                        &data(dtype, seed, root, len),
                        0.0,
                        &format!("broadcast {dtype} len {len} root {root}"),
                    );
                    assert_eq!(
                        info.algorithm,
                        expected_algorithm(pg, OpKind::Broadcast, world, a)
                    );
                }
            }
        }
    });
}

#[test]
fn all_gather_matches_reference() {
    matrix(|pg, world, a| {
        let rank = pg.rank();
        for (di, dtype) in DType::ALL.into_iter().enumerate() {
            for &len in &SIZES {
                let seed = (di * 70 + len) as u64;
                let (buf, info) = pg
                    .all_gather_async(make(dtype, &data(dtype, seed, rank, len)))
                    .wait()
                    .expect("all_gather");
                let want: Vec<f64> = (0..world).flat_map(|r| data(dtype, seed, r, len)).collect();
                assert_close(
                    &to_f64(&buf),
                    &want,
                    0.0,
                    &format!("all_gather {dtype} len {len}"),
                );
                assert_eq!(
                    info.algorithm,
                    expected_algorithm(pg, OpKind::AllGather, world, a)
                );
                assert_eq!(info.count, len);
            }
        }
    });
}

#[test]
fn reduce_scatter_matches_reference() {
    matrix(|pg, world, a| {
        let rank = pg.rank();
        for (di, dtype) in DType::ALL.into_iter().enumerate() {
            for &len in &SIZES {
                for (oi, op) in OPS.into_iter().enumerate() {
                    let seed = (di * 31 + oi * 7 + len) as u64;
                    let total = len * world;
                    let (buf, info) = pg
                        .reduce_scatter_async(make(dtype, &data(dtype, seed, rank, total)), op)
                        .wait()
                        .expect("reduce_scatter");
                    let want: Vec<f64> = (rank * len..(rank + 1) * len)
                        .map(|i| {
                            let col: Vec<f64> =
                                (0..world).map(|r| value(dtype, seed, r, i)).collect();
                            reduce_ref(dtype, op, &col)
                        })
                        .collect();
                    let rel = if op == ReduceOp::Avg {
                        tolerance(dtype)
                    } else {
                        0.0
                    };
                    assert_close(
                        &to_f64(&buf),
                        &want,
                        rel,
                        &format!("reduce_scatter {dtype} {op} len {len}"),
                    );
                    assert_eq!(
                        info.algorithm,
                        expected_algorithm(pg, OpKind::ReduceScatter, world, a)
                    );
                }
            }
        }
    });
}

#[test]
fn gather_and_scatter_match_reference() {
    matrix(|pg, world, _a| {
        let rank = pg.rank();
        for (di, dtype) in DType::ALL.into_iter().enumerate() {
            for &len in &SIZES {
                for root in [0, world - 1] {
                    let seed = (di * 13 + len + root) as u64;
                    let (buf, _) = pg
                        .gather_async(make(dtype, &data(dtype, seed, rank, len)), root)
                        .wait()
                        .expect("gather");
                    if rank == root {
                        let want: Vec<f64> =
                            (0..world).flat_map(|r| data(dtype, seed, r, len)).collect();
                        assert_close(
                            &to_f64(&buf),
                            &want,
                            0.0,
                            &format!("gather {dtype} len {len}"),
                        );
                    } else {
                        assert_close(
                            &to_f64(&buf),
                            &data(dtype, seed, rank, len),
                            0.0,
                            "gather keeps input",
                        );
                    }
                    let input =
                        (rank == root).then(|| make(dtype, &data(dtype, seed, root, len * world)));
                    let (buf, info) = pg
                        .scatter_async(input, Buffer::zeros(dtype, len), root)
                        .wait()
                        .expect("scatter");
                    let all = data(dtype, seed, root, len * world);
                    assert_close(
                        &to_f64(&buf),
                        &all[rank * len..(rank + 1) * len],
                        0.0,
                        &format!("scatter {dtype} len {len}"),
                    );
                    assert_eq!(info.op, OpKind::Scatter);
                }
            }
        }
    });
}

#[test]
fn barrier_and_point_to_point() {
    for world in 1..=4 {
        for t in TRANSPORTS {
            run_ranks(world, common::opts(t), |pg| {
                let rank = pg.rank();
                let info = pg.barrier().unwrap();
                assert_eq!(info.op, OpKind::Barrier);
                if world == 1 {
                    return;
                }
                // Pass a message around the ring, for every type and size.
                for dtype in DType::ALL {
                    for len in [0usize, 1, 13, 70_001] {
                        let seed = len as u64;
                        let next = (rank + 1) % world;
                        let prev = (rank + world - 1) % world;
                        // Operations run in issue order, so rank 0 sends first and
                        // everyone else receives first (a ring of sends larger than
                        // the transport's buffers would wait on each other).
                        let out = make(dtype, &data(dtype, seed, rank, len));
                        let (buf, info) = if rank == 0 {
                            let send = pg.send_async(out, next);
                            let got = pg
                                .recv_async(Buffer::zeros(dtype, len), prev)
                                .wait()
                                .unwrap();
                            send.wait().unwrap();
                            got
                        } else {
                            let got = pg
                                .recv_async(Buffer::zeros(dtype, len), prev)
                                .wait()
                                .unwrap();
                            pg.send_async(out, next).wait().unwrap();
                            got
                        };
                        assert_close(&to_f64(&buf), &data(dtype, seed, prev, len), 0.0, "recv");
                        assert_eq!(info.algorithm, Algorithm::PointToPoint);
                    }
                }
                // Synchronous slices: rank 0 sends to the last rank.
                if rank == 0 {
                    pg.send(&[1.5f64, 2.5], world - 1).unwrap();
                } else if rank == world - 1 {
                    let mut v = [0.0f64; 2];
                    pg.recv(&mut v, 0).unwrap();
                    assert_eq!(v, [1.5, 2.5]);
                }
                pg.barrier().unwrap();
            });
        }
    }
}

#[test]
fn large_prime_sizes_all_transports() {
    const N: usize = 1_000_003;
    for world in 2..=4 {
        for t in TRANSPORTS {
            run_ranks(world, common::opts(t), |pg| {
                let rank = pg.rank();
                let mut v: Vec<f32> = (0..N)
                    .map(|i| ((i * 31 + rank * 17) % 101) as f32)
                    .collect();
                let info = pg.all_reduce(&mut v, ReduceOp::Sum).unwrap();
                // Ranks that are threads of one process may read each other's
                // memory (Linux allows a process to read itself), so shared
                // memory groups here use direct reads (by default at 2 ranks).
                assert_eq!(
                    pg.direct_read(),
                    pg.transport() == Transport::Shm && world == 2
                );
                // The rings over shared memory at 3 and 4 ranks are covered
                // here; direct reads at every size by `matrix`.
                let want = if pg.direct_read() {
                    Algorithm::DirectRead
                } else {
                    Algorithm::Ring
                };
                assert_eq!(info.algorithm, want);
                for (i, x) in v
                    .iter()
                    .enumerate()
                    .step_by(997)
                    .chain(v.iter().enumerate().rev().take(3))
                {
                    let want: usize = (0..world).map(|r| (i * 31 + r * 17) % 101).sum();
                    assert_eq!(*x, want as f32, "element {i}");
                }
                // Latency algorithm forced on a large buffer still works.
                let mut w: Vec<i64> = (0..N as i64).map(|i| i * (rank as i64 + 1)).collect();
                let opts_w = pg.algorithm_for(OpKind::AllReduce, N * 8);
                assert_eq!(opts_w, want);
                pg.all_reduce(&mut w, ReduceOp::Max).unwrap();
                assert!(w
                    .iter()
                    .enumerate()
                    .all(|(i, &x)| x == i as i64 * world as i64));
                // A large broadcast from the last rank.
                let root = world - 1;
                let mut b: Vec<f32> = (0..N)
                    .map(|i| if rank == root { i as f32 } else { -1.0 })
                    .collect();
                let info = pg.broadcast(&mut b, root).unwrap();
                let want = if pg.direct_read() {
                    Algorithm::DirectRead
                } else {
                    Algorithm::Pipeline
                };
                assert_eq!(info.algorithm, want);
                assert!(b.iter().enumerate().all(|(i, &x)| x == i as f32));
            });
        }
    }
}

#[test]
fn large_collectives_other_kinds() {
    const K: usize = 100_003;
    for t in TRANSPORTS {
        for a in ALGOS {
            run_ranks(3, options(t, a), |pg| {
                let rank = pg.rank();
                let world = 3;
                // bf16 all_reduce at size.
                let mine: Vec<f64> = data(DType::BF16, 5, rank, K);
                let (buf, _) = pg
                    .all_reduce_async(make(DType::BF16, &mine), ReduceOp::Sum)
                    .wait()
                    .unwrap();
                let want: Vec<f64> = (0..K)
                    .map(|i| (0..world).map(|r| value(DType::BF16, 5, r, i)).sum())
                    .collect();
                assert_close(&to_f64(&buf), &want, 0.0, "bf16 large");
                // broadcast from rank 1.
                let mut b: Vec<u8> = (0..K).map(|i| (i * (rank + 1)) as u8).collect();
                pg.broadcast(&mut b, 1).unwrap();
                assert!(b.iter().enumerate().all(|(i, &x)| x == (i * 2) as u8));
                // all_gather and reduce_scatter.
                let inp: Vec<i32> = (0..K as i32).map(|i| i + rank as i32 * 1000).collect();
                let mut out = vec![0i32; K * world];
                pg.all_gather(&inp, &mut out).unwrap();
                for r in 0..world {
                    assert!(out[r * K..(r + 1) * K]
                        .iter()
                        .enumerate()
                        .all(|(i, &x)| x == i as i32 + r as i32 * 1000));
                }
                let mut rs = vec![0i32; K];
                pg.reduce_scatter(&out, &mut rs, ReduceOp::Sum).unwrap();
                assert!(rs
                    .iter()
                    .enumerate()
                    .all(|(i, &x)| x == 3 * (i as i32 + rank as i32 * 1000)));
            });
        }
    }
}

#[test]
fn invalid_arguments_are_refused_without_breaking_the_group() {
    run_ranks(2, common::opts(TransportChoice::Auto), |pg| {
        let mut out = vec![0f32; 3];
        let e = pg.all_gather(&[1.0f32, 2.0], &mut out).unwrap_err();
        assert!(matches!(e, comm::CommError::InvalidArgument(_)), "{e}");
        assert!(pg.broadcast(&mut [1u8], 5).is_err());
        assert!(pg.send(&[1u8], pg.rank()).is_err());
        assert!(pg
            .reduce_scatter(&[1i32, 2, 3], &mut [0i32], ReduceOp::Sum)
            .is_err());
        let e = pg
            .reduce_scatter_async(Buffer::I32(vec![1, 2, 3]), ReduceOp::Sum)
            .wait()
            .unwrap_err();
        assert!(matches!(e, comm::CommError::InvalidArgument(_)), "{e}");
        // The group still works and sequence numbers were not consumed.
        let mut v = [pg.rank() as i32 + 1];
        let info = pg.all_reduce(&mut v, ReduceOp::Sum).unwrap();
        assert_eq!(v, [3]);
        assert_eq!(info.seq, 0);
    });
}

#[test]
fn async_work_runs_in_order_and_overlaps_with_the_caller() {
    run_ranks(3, common::opts(TransportChoice::Auto), |pg| {
        let rank = pg.rank();
        let works: Vec<_> = (0..20)
            .map(|k| {
                pg.all_reduce_async(Buffer::I64(vec![k * 10 + rank as i64; 1000]), ReduceOp::Sum)
            })
            .collect();
        // A synchronous call issued after the queued ones runs after them.
        let mut s = [1i64];
        let sync_info = pg.all_reduce(&mut s, ReduceOp::Sum).unwrap();
        assert_eq!(sync_info.seq, 20);
        let mut last_finish = 0;
        for (k, mut w) in works.into_iter().enumerate() {
            let r = loop {
                if let Some(r) = w.wait_timeout(std::time::Duration::from_millis(50)) {
                    break r;
                }
            };
            assert!(w.is_completed());
            assert!(matches!(
                w.wait_timeout(std::time::Duration::ZERO),
                Some(Err(comm::CommError::WorkTaken))
            ));
            let (buf, info) = r.unwrap();
            assert_eq!(info.seq, k as u64);
            assert!(info.started_ns >= last_finish);
            last_finish = info.finished_ns;
            assert_eq!(buf, Buffer::I64(vec![k as i64 * 30 + 3; 1000]));
            assert_eq!(info.transport, pg.transport());
        }
        assert_eq!(s, [3]);
        let (b, info) = pg.barrier_async().wait().unwrap();
        assert!(b.is_empty());
        assert_eq!(info.seq, 21);
    });
}

#[test]
fn ranks_with_different_transport_choices_agree_per_pair() {
    // Rank 1 insists on TCP; ranks 0 and 2 share memory with each other.
    let res = common::run_ranks_with(
        3,
        |rank| {
            common::opts(if rank == 1 {
                TransportChoice::Tcp
            } else {
                TransportChoice::Auto
            })
        },
        |pg| {
            let pg = pg.unwrap();
            let mut v = vec![pg.rank() as f64; 300_001];
            pg.all_reduce(&mut v, ReduceOp::Sum).unwrap();
            assert!(v.iter().all(|&x| x == 3.0));
            (
                pg.transport(),
                (0..3)
                    .map(|r| pg.peer_transport(r).unwrap())
                    .collect::<Vec<_>>(),
            )
        },
    );
    assert_eq!(
        res[0],
        (
            Transport::Mixed,
            vec![Transport::Local, Transport::Tcp, Transport::Shm]
        )
    );
    assert_eq!(
        res[1],
        (
            Transport::Tcp,
            vec![Transport::Tcp, Transport::Local, Transport::Tcp]
        )
    );
    assert_eq!(
        res[2],
        (
            Transport::Mixed,
            vec![Transport::Shm, Transport::Tcp, Transport::Local]
        )
    );

    // A rank that requires shared memory refuses a same-host TCP-only peer.
    let res = common::run_ranks_with(
        2,
        |rank| {
            let t = if rank == 0 {
                TransportChoice::Shm
            } else {
                TransportChoice::Tcp
            };
            GroupOptions {
                timeout: std::time::Duration::from_secs(3),
                ..common::opts(t)
            }
        },
        |pg| pg.err().map(|e| e.to_string()),
    );
    let e0 = res[0].as_ref().expect("rank 0 must refuse");
    assert!(
        e0.contains("requires shared memory but same-host rank 1 uses TCP only"),
        "{e0}"
    );
    assert!(
        res[1].is_some(),
        "rank 1 must fail too once rank 0 gives up"
    );
}
