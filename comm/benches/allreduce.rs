//! Collective bandwidth and latency benchmark (all_reduce, and on request
//! broadcast and all_gather).
//!
//! Starts a store, spawns `--world` copies of itself as separate processes
//! (one per rank) and has rank 0 print, per operation and message size, the
//! time of the `f32` collective, the algorithm bandwidth (algbw = bytes /
//! time) and the bus bandwidth, with the definitions of nccl-tests: busbw =
//! algbw × 2 (n − 1) / n for all_reduce, × (n − 1) / n for all_gather, × 1
//! for broadcast. The size of an all_gather is its output (each rank
//! contributes size / n), as in nccl-tests.
//!
//! Method, per operation and size: 3 warm-up calls (1 from 64 MiB on); rank
//! 0 times batches of 1, 2, 4, ... calls until a tenth of `--min-time-ms`
//! has passed and sets the iteration count (min-time / mean call, within
//! [3, 20000]) for every rank; then `--repeats` (3) timed loops of that many calls, each started after a
//! barrier and measured as the slowest rank's time over the loop. The time
//! reported is the fastest loop's time per call (`time_us`; the median loop's
//! is `time_us_median`): on a machine shared with other work, the least
//! disturbed loop. `--json` prints one JSON object per line instead of the
//! table (what `bench/run` reads; `bench/torch/collectives.py` measures
//! torch.distributed the same way).
//!
//! ```text
//! cargo bench -p comm --bench allreduce -- [--world N] [--transport tcp|shm|auto]
//!     [--algorithm auto|ring|latency] [--sizes 4096,1048576,...] [--min-time-ms 300]
//!     [--repeats 3] [--ops all_reduce,broadcast,all_gather] [--sockbuf BYTES]
//!     [--shm-ring BYTES] [--json]
//! ```

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use comm::{AlgorithmChoice, GroupOptions, ProcessGroup, ReduceOp, Token, TransportChoice};

const RANK_ENV: &str = "COMM_BENCH_RANK";

struct Args {
    world: usize,
    transport: TransportChoice,
    algorithm: AlgorithmChoice,
    sizes: Vec<usize>,
    min_time: Duration,
    sockbuf: Option<usize>,
    shm_ring: usize,
    ops: Vec<String>,
    repeats: usize,
    json: bool,
}

/// The operations measured, with their bus bandwidth factor for `n` ranks.
const OPS: [&str; 3] = ["all_reduce", "broadcast", "all_gather"];

fn bus_factor(op: &str, n: usize) -> f64 {
    let n = n as f64;
    match op {
        "all_reduce" => 2.0 * (n - 1.0) / n,
        "all_gather" => (n - 1.0) / n,
        _ => 1.0,
    }
}

fn parse_args() -> Args {
    let mut a = Args {
        world: 2,
        transport: TransportChoice::Auto,
        algorithm: AlgorithmChoice::Auto,
        sizes: vec![
            4 << 10,
            16 << 10,
            64 << 10,
            256 << 10,
            1 << 20,
            4 << 20,
            16 << 20,
            64 << 20,
        ],
        min_time: Duration::from_millis(300),
        sockbuf: None,
        shm_ring: comm::DEFAULT_SHM_RING_BYTES,
        ops: vec!["all_reduce".to_owned()],
        repeats: 3,
        json: false,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < argv.len() {
        let val = argv.get(i + 1).cloned().unwrap_or_default();
        match argv[i].as_str() {
            "--world" => {
                a.world = val.parse().expect("--world N");
                i += 1;
            }
            "--transport" => {
                a.transport = val.parse().expect("--transport tcp|shm|auto");
                i += 1;
            }
            "--algorithm" => {
                a.algorithm = val.parse().expect("--algorithm auto|ring|latency");
                i += 1;
            }
            "--sizes" => {
                a.sizes = val
                    .split(',')
                    .map(|s| s.parse().expect("--sizes bytes,bytes"))
                    .collect();
                i += 1;
            }
            "--sockbuf" => {
                a.sockbuf = Some(val.parse().expect("--sockbuf BYTES"));
                i += 1;
            }
            "--shm-ring" => {
                a.shm_ring = val.parse().expect("--shm-ring BYTES");
                i += 1;
            }
            "--ops" => {
                a.ops = val.split(',').map(str::to_owned).collect();
                assert!(
                    a.ops.iter().all(|o| OPS.contains(&o.as_str())),
                    "--ops takes a list of {OPS:?}"
                );
                i += 1;
            }
            "--repeats" => {
                a.repeats = val.parse().expect("--repeats N");
                assert!(a.repeats > 0, "--repeats takes a positive number");
                i += 1;
            }
            "--json" => a.json = true,
            "--min-time-ms" => {
                a.min_time = Duration::from_millis(val.parse().expect("--min-time-ms N"));
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    a
}

fn rank_main(rank: usize, args: &Args) {
    let opts = GroupOptions {
        timeout: Duration::from_secs(60),
        transport: args.transport,
        algorithm: args.algorithm,
        socket_buffer_bytes: args.sockbuf,
        shm_ring_bytes: args.shm_ring,
        ..GroupOptions::default()
    };
    let pg = ProcessGroup::from_env(opts).expect("process group");
    let n = pg.world_size();
    if rank == 0 && !args.json {
        println!(
            "world {n}, transport {}, algorithm choice {:?}",
            pg.transport(),
            args.algorithm
        );
        println!(
            "{:>10} {:>12} {:>10} {:>12} {:>12} {:>12}  algorithm",
            "op", "bytes", "iters", "time_us", "algbw_GB/s", "busbw_GB/s"
        );
    }
    for op in &args.ops {
        for &bytes in &args.sizes {
            let mut buf = vec![1.0f32; bytes / 4];
            let input = vec![1.0f32; bytes / 4 / n];
            let mut run = || match op.as_str() {
                "all_reduce" => pg.all_reduce(&mut buf, ReduceOp::Sum),
                "broadcast" => pg.broadcast(&mut buf, 0),
                _ => pg.all_gather(&input, &mut buf),
            };
            // Warm up (3 calls, 1 from 64 MiB on), then calibrate: batches of 1, 2, 4, ...
            // calls until rank 0 has timed a tenth of the minimum time (every rank makes the
            // same calls: rank 0 broadcasts whether to go on), so that one slow call on a
            // loaded machine does not leave the timed loops with a handful of iterations.
            for _ in 0..if bytes >= 64 << 20 { 1 } else { 3 } {
                run().expect(op);
            }
            let mut timed = Duration::ZERO;
            let mut calls = 0u32;
            let mut batch = 1u32;
            let info = loop {
                let t = Instant::now();
                let mut last = None;
                for _ in 0..batch {
                    last = Some(run().expect(op));
                }
                timed += t.elapsed();
                calls += batch;
                batch *= 2;
                let mut more = [i32::from(timed < args.min_time / 10)];
                pg.broadcast(&mut more, 0).expect("broadcast");
                if more[0] == 0 {
                    break last.expect("at least one call");
                }
            };
            let one = (timed / calls).max(Duration::from_micros(1));
            let mut iters =
                [((args.min_time.as_secs_f64() / one.as_secs_f64()) as i64).clamp(3, 20_000)];
            pg.broadcast(&mut iters, 0).expect("broadcast");
            // `repeats` timed loops, each between a barrier and the slowest rank's end;
            // the fastest loop is reported (the one least disturbed by other processes).
            let mut loops = Vec::with_capacity(args.repeats);
            for _ in 0..args.repeats {
                pg.barrier().expect("barrier");
                let t = Instant::now();
                for _ in 0..iters[0] {
                    run().expect(op);
                }
                let mut el = [t.elapsed().as_secs_f64()];
                pg.all_reduce(&mut el, ReduceOp::Max).expect("all_reduce");
                loops.push(el[0] / iters[0] as f64);
            }
            loops.sort_by(f64::total_cmp);
            let per = loops[0];
            let median = loops[loops.len() / 2];
            let algbw = bytes as f64 / per / 1e9;
            let busbw = algbw * bus_factor(op, n);
            if rank == 0 && args.json {
                println!(
                    "{{\"op\":\"{op}\",\"world\":{n},\"transport\":\"{}\",\"bytes\":{bytes},\"iters\":{},\"time_us\":{:.3},\"time_us_median\":{:.3},\"repeats\":{},\"algbw_gbps\":{algbw:.6},\"busbw_gbps\":{busbw:.6},\"algorithm\":\"{}\"}}",
                    pg.transport(),
                    iters[0],
                    per * 1e6,
                    median * 1e6,
                    args.repeats,
                    info.algorithm
                );
            } else if rank == 0 {
                println!(
                    "{op:>10} {:>12} {:>10} {:>12.1} {:>12.3} {:>12.3}  {}",
                    bytes,
                    iters[0],
                    per * 1e6,
                    algbw,
                    busbw,
                    info.algorithm
                );
            }
        }
    }
}

fn main() {
    let args = parse_args();
    if let Ok(r) = std::env::var(RANK_ENV) {
        rank_main(r.parse().expect("rank"), &args);
        return;
    }
    let token = Token::generate().expect("token");
    // Rank 0 hosts the rendezvous store (ProcessGroup::from_env), on a port free now.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let exe = std::env::current_exe().expect("current exe");
    let mut children = Vec::new();
    for rank in 0..args.world {
        let child = Command::new(&exe)
            .args(std::env::args().skip(1))
            .env(RANK_ENV, rank.to_string())
            .env("RANK", rank.to_string())
            .env("WORLD_SIZE", args.world.to_string())
            .env("MASTER_ADDR", "127.0.0.1")
            .env("MASTER_PORT", port.to_string())
            .env(comm::TOKEN_ENV, token.as_str())
            .stdout(if rank == 0 {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
            .spawn()
            .expect("spawn rank");
        children.push(child);
    }
    let mut ok = true;
    for mut c in children {
        ok &= c.wait().map(|s| s.success()).unwrap_or(false);
    }
    if !ok {
        eprintln!("a rank failed");
        std::process::exit(1);
    }
}
