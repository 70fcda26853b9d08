//! Failure behaviour: collective mismatches, stalled and departed peers,
//! the broken state afterwards, and clock offsets. Ranks are threads.

mod common;

use std::time::{Duration, Instant};

use comm::{AlgorithmChoice, CommError, GroupOptions, ReduceOp, TransportChoice};
use common::run_ranks;

const TRANSPORTS: [TransportChoice; 2] = [TransportChoice::Tcp, TransportChoice::Shm];

fn short(t: TransportChoice, timeout_ms: u64) -> GroupOptions {
    GroupOptions {
        timeout: Duration::from_millis(timeout_ms),
        ..common::opts(t)
    }
}

#[test]
fn a_different_collective_is_reported_as_a_mismatch() {
    for t in TRANSPORTS {
        let results = run_ranks(2, short(t, 5000), |pg| {
            let mut warm = [1.0f32; 8];
            pg.all_reduce(&mut warm, ReduceOp::Sum).unwrap();
            pg.barrier().unwrap();
            if pg.rank() == 0 {
                let mut v = vec![0f32; 4096];
                let first = pg.all_reduce(&mut v, ReduceOp::Sum).unwrap_err();
                let next = pg.all_reduce(&mut v, ReduceOp::Sum).unwrap_err();
                (first, Some(next))
            } else {
                let mut v = vec![0f32; 10];
                // As the root, rank 1 only sends, so its broadcast may
                // succeed; its next collective then fails.
                let r = pg.broadcast(&mut v, 1);
                let e = match r {
                    Ok(_) => pg.all_reduce(&mut v, ReduceOp::Sum).unwrap_err(),
                    Err(e) => e,
                };
                (e, None)
            }
        });
        let (e0, next0) = &results[0];
        assert_eq!(
            e0.to_string(),
            "collective mismatch at seq 2: rank 0 is in all_reduce of 4096 f32, rank 1 sent broadcast of 10 f32",
            "{t}"
        );
        assert!(matches!(
            e0,
            CommError::Mismatch {
                seq: 2,
                rank: 0,
                peer: 1,
                ..
            }
        ));
        // Afterwards the group refuses work instead of hanging.
        assert!(matches!(next0, Some(CommError::Broken(_))), "{next0:?}");
        // Rank 1 either detects the mismatch itself (rank 0's all_reduce
        // header arrives in its next collective) or learns it from rank 0's
        // report.
        let m1 = results[1].0.to_string();
        assert!(
            m1.contains("collective mismatch at seq") && m1.contains("rank 0"),
            "{t}: {m1}"
        );
    }
}

#[test]
fn different_sizes_types_and_operators_are_mismatches() {
    // (rank 0's view, rank 1's view): whichever rank reads the other's
    // header first reports the mismatch; the other is told through the
    // report.
    let cases: [(&str, &str, &str); 3] = [
        ("count", "all_reduce of 7 f32", "all_reduce of 8 f32"),
        ("dtype", "all_reduce of 7 f32", "all_reduce of 7 f64"),
        (
            "op",
            "all_reduce of 7 f32 (sum)",
            "all_reduce of 7 f32 (max)",
        ),
    ];
    for (case, zero, one) in cases {
        let results = run_ranks(2, short(TransportChoice::Auto, 3000), |pg| {
            if pg.rank() == 0 {
                pg.all_reduce(&mut [0f32; 7], ReduceOp::Sum).err()
            } else {
                match case {
                    "count" => pg.all_reduce(&mut [0f32; 8], ReduceOp::Sum).err(),
                    "dtype" => pg.all_reduce(&mut [0f64; 7], ReduceOp::Sum).err(),
                    _ => pg.all_reduce(&mut [0f32; 7], ReduceOp::Max).err(),
                }
            }
        });
        let from0 = format!("collective mismatch at seq 0: rank 0 is in {zero}, rank 1 sent {one}");
        let from1 = format!("collective mismatch at seq 0: rank 1 is in {one}, rank 0 sent {zero}");
        for (rank, r) in results.iter().enumerate() {
            let msg = r
                .as_ref()
                .unwrap_or_else(|| panic!("{case}: rank {rank} must fail"))
                .to_string();
            assert!(
                msg.contains(&from0) || msg.contains(&from1),
                "{case} rank {rank}: {msg}"
            );
        }
    }
}

#[test]
fn a_stalled_peer_times_out_naming_it() {
    for t in TRANSPORTS {
        let results = run_ranks(3, short(t, 700), |pg| {
            if pg.rank() == 2 {
                // Never joins the barrier, but stays connected for a while.
                std::thread::sleep(Duration::from_millis(1500));
                None
            } else {
                let start = Instant::now();
                let e = pg.barrier().unwrap_err();
                Some((e, start.elapsed()))
            }
        });
        for (rank, r) in results.iter().enumerate().take(2) {
            let (e, took) = r.as_ref().unwrap();
            let msg = e.to_string();
            // Whoever waits on rank 2 directly times out naming it; the
            // other is told about it by the first report.
            assert!(
                msg.contains("timed out after 700ms in barrier seq 0"),
                "{t} rank {rank}: {msg}"
            );
            assert!(msg.contains("rank 2"), "{t} rank {rank}: {msg}");
            assert!(
                *took < Duration::from_millis(1500),
                "{t} rank {rank} waited {took:?}"
            );
        }
    }
}

#[test]
fn a_rank_that_leaves_makes_the_others_fail_naming_it() {
    for t in TRANSPORTS {
        for world in [2usize, 3, 4] {
            for algo in [AlgorithmChoice::Ring, AlgorithmChoice::Latency] {
                let opts = GroupOptions {
                    algorithm: algo,
                    ..short(t, 5000)
                };
                let results = run_ranks(world, opts, |pg| {
                    let mut v = vec![1.0f32; 300_000];
                    pg.all_reduce(&mut v, ReduceOp::Sum).unwrap();
                    if pg.rank() == world - 1 {
                        return None; // leaves: its group is dropped
                    }
                    let mut errs = Vec::new();
                    for _ in 0..3 {
                        match pg.all_reduce(&mut v, ReduceOp::Sum) {
                            Ok(_) => {}
                            Err(e) => errs.push(e),
                        }
                    }
                    Some(errs)
                });
                let gone = world - 1;
                for (rank, errs) in results.iter().enumerate().take(gone) {
                    let errs = errs.as_ref().unwrap();
                    assert!(!errs.is_empty(), "{t} world {world} rank {rank}: no error");
                    let msg = errs[0].to_string();
                    assert!(
                        msg.contains(&format!(
                            "rank {gone} closed its connection during all_reduce seq 1"
                        )),
                        "{t} world {world} {algo:?} rank {rank}: {msg}"
                    );
                    assert!(!matches!(errs[0], CommError::Timeout { .. }), "{msg}");
                    for later in &errs[1..] {
                        assert!(matches!(later, CommError::Broken(_)), "{later}");
                    }
                }
            }
        }
    }
}

#[test]
fn clock_offsets_are_near_zero_within_uncertainty() {
    for t in TRANSPORTS {
        let res = run_ranks(4, common::opts(t), |pg| {
            (pg.clock_offset_ns(), pg.clock_uncertainty_ns())
        });
        assert_eq!(res[0], (0, 0));
        for (rank, (off, unc)) in res.iter().enumerate().skip(1) {
            // Threads share one clock, so the true offset is 0 and the
            // estimate is off by at most half the round trip.
            assert!(
                off.unsigned_abs() <= *unc,
                "rank {rank}: offset {off} ns, uncertainty {unc} ns"
            );
            assert!(*unc > 0, "rank {rank}: a round trip takes time");
        }
    }
}
