//! A fake data-parallel training job for the tests of `ddp-probe scale` and
//! `ddp-probe tune`: it does no training, it writes the trace a DDP job
//! would write, at once, with timings from a model in which the bucket cap
//! matters.
//!
//! Each rank (`RANK`, `WORLD_SIZE` and `DDP_PROBE_TRACE_DIR` from the
//! launcher) writes `--steps` steps (default 12) of 16 parameters of 1 MiB:
//! data wait 1 ms, forward 10 ms, backward 40 ms with the gradients ready
//! one after the other (the last parameter first). The first step reduces
//! every gradient in one bucket; from the second on the buckets are rebuilt
//! as PyTorch does (`DDP_PROBE_BUCKET_CAP_MB`, else a 1 MiB first bucket and
//! 25 MiB). Each bucket gets one all-reduce costing 3 ms plus the bytes at
//! 1 GB/s times the ring factor 2(n−1)/n, launched in order when ready, and
//! a 3 ms optimizer step after the last all-reduce. Compute times vary by a
//! few percent from step to step, the same way on every rank. Among caps of
//! 1, 2, 4, 8 and 16 MiB on 2 ranks, 2 MiB gives the shortest step.
//!
//! `--fail` makes rank 1 (rank 0 with one rank) stop after half the steps
//! with an error; `--log TEXT` adds a warning log record with TEXT;
//! `--ignore-cap` builds its buckets with the default caps whatever
//! `DDP_PROBE_BUCKET_CAP_MB` says (as a script that passes its own cap to DDP).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use probe::trace::{
    op, transport, BucketInfo, BucketsRecord, CounterRecord, DdpConfig, EndRecord, GradReadyRecord,
    Header, LogLevel, LogRecord, ParamInfo, Record, SpanKind, SpanRecord, TraceWriter,
};

const MIB: u64 = 1 << 20;
const PARAMS: u32 = 16;
const MS: f64 = 1e6;

fn main() {
    if let Err(e) = run() {
        eprintln!("fakejob: error: {e}");
        std::process::exit(2);
    }
}

fn env_u32(name: &str, default: u32) -> u32 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut steps = 12u64;
    let mut fail = false;
    let mut log: Option<String> = None;
    let mut ignore_cap = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--steps" => steps = args.next().ok_or("--steps needs a value")?.parse()?,
            "--fail" => fail = true,
            "--log" => log = Some(args.next().ok_or("--log needs a value")?),
            "--ignore-cap" => ignore_cap = true,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let rank = env_u32("RANK", 0);
    let world = env_u32("WORLD_SIZE", 1).max(1);
    let Some(dir) = std::env::var_os("DDP_PROBE_TRACE_DIR").filter(|d| !d.is_empty()) else {
        println!("fakejob: DDP_PROBE_TRACE_DIR is not set; nothing to record");
        return Ok(());
    };
    let run_id = std::env::var("DDP_PROBE_RUN_ID").unwrap_or_else(|_| "fakejob".into());
    let cap_mb: Option<f64> = std::env::var("DDP_PROBE_BUCKET_CAP_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|c: &f64| *c > 0.0 && !ignore_cap);
    let (first_limit, limit) = match cap_mb {
        Some(c) => ((c * MIB as f64) as u64, (c * MIB as f64) as u64),
        None => (MIB, 25 * MIB),
    };

    let params: Vec<ParamInfo> = (0..PARAMS)
        .map(|i| ParamInfo {
            index: i,
            name: format!("layers.{i}.weight"),
            shape: vec![256, 1024],
            dtype: "float32".into(),
            numel: 256 * 1024,
            bytes: MIB,
        })
        .collect();
    // Ready order: the last parameter first; PyTorch's size-limited buckets.
    let mut buckets: Vec<BucketInfo> = Vec::new();
    let mut cur: Vec<u32> = Vec::new();
    let mut size = 0u64;
    for i in (0..PARAMS).rev() {
        cur.push(i);
        size += MIB;
        let lim = if buckets.is_empty() {
            first_limit
        } else {
            limit
        };
        if size >= lim {
            buckets.push(BucketInfo {
                id: buckets.len() as u32,
                params: std::mem::take(&mut cur),
                bytes: size,
            });
            size = 0;
        }
    }
    if !cur.is_empty() {
        buckets.push(BucketInfo {
            id: buckets.len() as u32,
            params: cur,
            bytes: size,
        });
    }

    let initial = vec![BucketInfo {
        id: 0,
        params: (0..PARAMS).rev().collect(),
        bytes: u64::from(PARAMS) * MIB,
    }];

    let path = PathBuf::from(dir).join(format!("rank-{rank}.jsonl"));
    let mut w = TraceWriter::new(BufWriter::new(File::create(&path)?));
    let mut header = Header::new(run_id, rank, world).with_ddp(DdpConfig {
        bucket_cap_mb_list: None,
        backend: "gloo".into(),
        bucket_cap_mb: Some(cap_mb.unwrap_or(25.0)),
        first_bucket_bytes: Some(first_limit),
        find_unused_parameters: false,
        buffers: Vec::new(),
        static_graph: false,
        gradient_as_bucket_view: false,
        params,
        buckets: initial.clone(),
        group_ranks: Vec::new(),
    });
    header.program = Some("fakejob".into());
    let base: u64 = 1_700_000_000_000_000_000;
    header.start_ns = base - 1_000_000;
    w.write(&Record::Header(header))?;
    w.write(&Record::Log(LogRecord {
        t: base - 500_000,
        level: LogLevel::Info,
        message: format!("fake rank {rank} of {world} started"),
    }))?;
    if let Some(text) = &log {
        w.write(&Record::Log(LogRecord {
            t: base - 400_000,
            level: LogLevel::Warn,
            message: text.clone(),
        }))?;
    }

    let ring = if world > 1 {
        2.0 * f64::from(world - 1) / f64::from(world)
    } else {
        0.1
    };
    let cost = |bytes: u64| 3.0 * MS + bytes as f64 * ring; // 1 GB/s: 1 ns per byte
    let failing_rank = if world > 1 { 1 } else { 0 };
    let mut t = base as f64;
    let mut seq = 0u64;
    for step in 0..steps {
        if fail && rank == failing_rank && step == steps / 2 {
            w.write(&Record::End(EndRecord {
                t: t as u64,
                status: "error".into(),
                message: Some("RuntimeError: fake failure".into()),
            }))?;
            w.into_inner()?.flush()?;
            eprintln!(
                "Traceback (most recent call last):\nRuntimeError: fake failure in step {step}"
            );
            std::process::exit(3);
        }
        // A few percent of variation, the same on every rank.
        let jitter = 1.0 + 0.03 * (((step * 7919) % 13) as f64 / 12.0 - 0.5);
        let start = t;
        let data_end = start + 1.0 * MS;
        let fwd_end = data_end + 10.0 * MS * jitter;
        let bwd = 40.0 * MS * jitter;
        let bwd_end = fwd_end + bwd;
        let ready = |i: u32| fwd_end + bwd * f64::from(PARAMS - i) / f64::from(PARAMS);
        let sp = |kind: SpanKind, a: f64, b: f64| SpanRecord::new(kind, step, a as u64, b as u64);
        w.write(&Record::Span(sp(SpanKind::DataWait, start, data_end)))?;
        w.write(&Record::Span(sp(SpanKind::Forward, data_end, fwd_end)))?;
        w.write(&Record::Span(sp(SpanKind::Backward, fwd_end, bwd_end)))?;
        if step == 1 {
            w.write(&Record::Buckets(BucketsRecord {
                step,
                t: Some(start as u64),
                reason: "rebuild".into(),
                buckets: buckets.clone(),
            }))?;
        }
        let layout = if step == 0 { &initial } else { &buckets };
        let mut comm_end = f64::NEG_INFINITY;
        for b in layout {
            let first = b
                .params
                .iter()
                .map(|&i| ready(i))
                .fold(f64::INFINITY, f64::min);
            let last = b.params.iter().map(|&i| ready(i)).fold(0.0, f64::max);
            w.write(&Record::Span(
                sp(SpanKind::BucketReady, first, last)
                    .bucket(b.id)
                    .bytes(b.bytes)
                    .params(b.params.len() as u32),
            ))?;
            let s = last.max(comm_end);
            comm_end = s + cost(b.bytes);
            w.write(&Record::Span(
                sp(SpanKind::Collective, s, comm_end)
                    .queued(last as u64)
                    .bucket(b.id)
                    .bytes(b.bytes)
                    .seq(seq)
                    .op(op::ALL_REDUCE)
                    .transport(transport::TCP)
                    .algo("ring")
                    .dtype("float32"),
            ))?;
            seq += 1;
        }
        w.write(&Record::GradReady(GradReadyRecord {
            step,
            t0: fwd_end as u64,
            offsets_ns: (0..PARAMS).map(|i| (ready(i) - fwd_end) as i64).collect(),
        }))?;
        let opt_start = bwd_end.max(comm_end);
        let end = opt_start + 3.0 * MS;
        w.write(&Record::Span(sp(SpanKind::Optimizer, opt_start, end)))?;
        w.write(&Record::Span(sp(SpanKind::Step, start, end)))?;
        w.write(&Record::Counter(CounterRecord {
            name: "samples".into(),
            t: end as u64,
            value: 32.0,
        }))?;
        t = end + 0.2 * MS;
    }
    w.write(&Record::End(EndRecord {
        t: t as u64,
        status: "ok".into(),
        message: None,
    }))?;
    w.into_inner()?.flush()?;
    Ok(())
}
