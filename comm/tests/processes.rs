//! Ranks as separate OS processes: this test binary re-executes itself with
//! `COMM_TEST_ROLE` set, and the `worker` test plays one rank. Covers the
//! environment-based setup (`ProcessGroup::from_env`, rank 0 hosting the store,
//! `DDP_COMM_TRANSPORT`),
//! shared memory between processes, clock offsets between processes, and a
//! rank killed with SIGKILL in the middle of collectives.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use comm::{GroupOptions, ProcessGroup, ReduceOp, Token, Transport};

const ROLE_ENV: &str = "COMM_TEST_ROLE";

/// Starts `world` processes playing `role` and returns their outputs in
/// rank order.
fn spawn_world(world: usize, role: &str, extra_env: &[(&str, &str)]) -> Vec<Output> {
    let token = Token::generate().unwrap();
    // Rank 0 hosts the store on MASTER_PORT, as under torchrun: find a free port for it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..world)
        .map(|rank| {
            let mut cmd = Command::new(&exe);
            cmd.args(["--exact", "worker", "--nocapture", "--test-threads", "1"])
                .env(ROLE_ENV, role)
                .env("RANK", rank.to_string())
                .env("WORLD_SIZE", world.to_string())
                .env("MASTER_ADDR", "127.0.0.1")
                .env("MASTER_PORT", port.to_string())
                .env(comm::TOKEN_ENV, token.as_str())
                .env_remove(comm::TRANSPORT_ENV)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            for (k, v) in extra_env {
                cmd.env(k, v);
            }
            cmd.spawn().unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect()
}

/// The part of the output from `marker` to the end of its line (libtest
/// prints `test worker ... ` before it).
fn marked<'a>(t: &'a str, marker: &str) -> Option<&'a str> {
    t.lines().find_map(|l| l.find(marker).map(|i| &l[i..]))
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// One rank; does nothing unless started by `spawn_world`.
#[test]
fn worker() {
    let Ok(role) = std::env::var(ROLE_ENV) else {
        return;
    };
    let opts = GroupOptions::with_timeout(Duration::from_secs(5));
    let pg = ProcessGroup::from_env(opts).expect("process group from the environment");
    let rank = pg.rank();
    let world = pg.world_size();
    match role.as_str() {
        "allreduce" => {
            for len in [0usize, 1, 13, 1_000_003] {
                let mut v: Vec<f32> = (0..len).map(|i| ((i + rank) % 5) as f32).collect();
                pg.all_reduce(&mut v, ReduceOp::Sum).unwrap();
                for (i, x) in v.iter().enumerate().step_by(101) {
                    let want: usize = (0..world).map(|r| (i + r) % 5).sum();
                    assert_eq!(*x, want as f32);
                }
            }
            let mut b = vec![rank as i64; 1000];
            pg.broadcast(&mut b, world - 1).unwrap();
            assert!(b.iter().all(|&x| x == world as i64 - 1));
            println!(
                "RESULT rank={rank} transport={} offset={} uncertainty={}",
                pg.transport(),
                pg.clock_offset_ns(),
                pg.clock_uncertainty_ns()
            );
        }
        "broadcast" => {
            // Large enough for the bandwidth algorithms, and not a multiple
            // of the world size: the segments differ in length.
            let len = 1_000_003usize;
            for root in 0..world {
                let mut v: Vec<i32> = (0..len)
                    .map(|i| (i * 7 + rank * 1_000_000) as i32)
                    .collect();
                let info = pg.broadcast(&mut v, root).unwrap();
                let wrong = (0..len)
                    .filter(|&i| v[i] != (i * 7 + root * 1_000_000) as i32)
                    .count();
                assert_eq!(wrong, 0, "broadcast from {root}: {wrong} wrong elements");
                println!(
                    "RESULT rank={rank} root={root} algorithm={}",
                    info.algorithm
                );
            }
        }
        "kill" => {
            let mut v = vec![1.0f32; 1 << 20];
            pg.all_reduce(&mut v, ReduceOp::Sum).unwrap();
            if rank == world - 1 {
                std::thread::spawn(|| {
                    std::thread::sleep(Duration::from_millis(30));
                    // SAFETY: sending SIGKILL to ourselves; nothing to clean up.
                    unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
                });
            }
            for _ in 0..100_000 {
                if let Err(e) = pg.all_reduce(&mut v, ReduceOp::Sum) {
                    println!("ERROR {e}");
                    return;
                }
            }
            println!("NO ERROR");
        }
        other => panic!("unknown role {other}"),
    }
}

#[test]
fn processes_all_reduce_over_shared_memory_and_tcp() {
    for (env, want) in [("auto", Transport::Shm), ("tcp", Transport::Tcp)] {
        let outs = spawn_world(3, "allreduce", &[(comm::TRANSPORT_ENV, env)]);
        for (rank, o) in outs.iter().enumerate() {
            let t = text(o);
            assert!(o.status.success(), "rank {rank} failed:\n{t}");
            let line = marked(&t, "RESULT ").unwrap_or_else(|| panic!("{t}"));
            assert!(line.contains(&format!("transport={want}")), "{line}");
            let field = |name: &str| -> i64 {
                line.split_whitespace()
                    .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
                    .unwrap()
                    .parse()
                    .unwrap()
            };
            let (off, unc) = (field("offset"), field("uncertainty"));
            if rank == 0 {
                assert_eq!((off, unc), (0, 0));
            } else {
                // Separate processes anchor their clocks separately, a few
                // microseconds apart at most; allow a millisecond besides
                // the measurement's own uncertainty.
                assert!(
                    off.abs() <= unc + 1_000_000,
                    "rank {rank}: offset {off} ns, uncertainty {unc} ns"
                );
            }
        }
    }
}

#[test]
fn processes_broadcast_by_direct_reads_and_writes() {
    // Separate processes read (and the root writes) each other's buffers
    // through process_vm_readv/writev, as ranks on one host do.
    for world in [2, 3] {
        let outs = spawn_world(world, "broadcast", &[(comm::DIRECT_READ_ENV, "always")]);
        for (rank, o) in outs.iter().enumerate() {
            let t = text(o);
            assert!(o.status.success(), "rank {rank} of {world} failed:\n{t}");
            let direct = t
                .lines()
                .filter(|l| l.contains("RESULT ") && l.contains("algorithm=direct_read"))
                .count();
            assert_eq!(direct, world, "every root's broadcast reads directly:\n{t}");
        }
    }
}

#[test]
fn a_killed_process_is_named_by_the_survivors() {
    for env in ["shm", "tcp"] {
        let outs = spawn_world(3, "kill", &[(comm::TRANSPORT_ENV, env)]);
        // The killed rank died by signal.
        assert!(!outs[2].status.success());
        for (rank, o) in outs.iter().enumerate().take(2) {
            let t = text(o);
            assert!(o.status.success(), "{env} rank {rank}:\n{t}");
            let line = marked(&t, "ERROR ").unwrap_or_else(|| panic!("{env} rank {rank}: {t}"));
            // Rank 0 hosts the store and exits as soon as it has seen the failure; rank 1 may
            // then find rank 0 gone before it can read the first failure from the store, as
            // with PyTorch's rank-0 TCPStore. Either way a dead peer is named.
            let named_culprit = line.contains("rank 2 closed its connection during all_reduce");
            let named_host = rank == 1 && line.contains("rank 0 closed its connection");
            assert!(named_culprit || named_host, "{env} rank {rank}: {line}");
        }
    }
}
