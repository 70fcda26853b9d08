//! `gpu-check`: one rank of the GPU path's check, run by `scripts/gpu-check`
//! under `ddp-probe run` on a machine with an NVIDIA GPU.
//!
//! It loads the driver, NCCL, CUPTI and NVTX (saying which file each came
//! from), meets the other ranks through the launcher's rendezvous store,
//! creates an NCCL communicator on `LOCAL_RANK`'s GPU and runs in-place
//! all-reduces (sum and average) from 4 KiB to 64 MiB while CUPTI records
//! every kernel, copy and set into the rank's trace. Each result is checked
//! against the value every rank's input implies, and each collective's
//! device time (CUDA events around the NCCL call) is compared with the GPU
//! activity CUPTI saw inside it. The findings are printed as lines
//! `gpu-check: NAME | pass/FAIL/info | FIGURES` that the script gathers into
//! its table; the exit status is 1 if any check failed.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use comm::{EnvRendezvous, ReduceOp};
use ddp_cuda::cupti::{KernelTracer, TracerOptions};
use ddp_cuda::nccl::{NcclGroup, NcclOptions, NcclWorkInfo};
use ddp_cuda::{availability, nvtx, CudaLibrary};
use probe_contract::recorder::{header_from_env, Recorder, ENV_TRACE_DIR};
use probe_contract::trace::{rank_file_name, KernelCategory, Record, SpanKind, SpanRecord};

/// Sizes of the all-reduces, in bytes (f32 elements: a quarter of it).
const SIZES: [usize; 8] = [
    4 << 10,
    16 << 10,
    64 << 10,
    256 << 10,
    1 << 20,
    4 << 20,
    16 << 20,
    64 << 20,
];
/// Timed repeats of each size and operation (after one warm-up call).
const REPEATS: u64 = 5;

/// One row of the table.
struct Finding {
    name: String,
    outcome: &'static str,
    figures: String,
}

#[derive(Default)]
struct Table(Vec<Finding>);

impl Table {
    fn add(&mut self, name: impl Into<String>, pass: Option<bool>, figures: impl Into<String>) {
        let outcome = match pass {
            Some(true) => "pass",
            Some(false) => "FAIL",
            None => "info",
        };
        let f = Finding {
            name: name.into(),
            outcome,
            figures: figures.into(),
        };
        println!("gpu-check: {} | {} | {}", f.name, f.outcome, f.figures);
        self.0.push(f);
    }

    fn failed(&self) -> bool {
        self.0.iter().any(|f| f.outcome == "FAIL")
    }
}

fn main() -> ExitCode {
    let mut table = Table::default();
    match run(&mut table) {
        Ok(()) if !table.failed() => ExitCode::SUCCESS,
        Ok(()) => ExitCode::from(1),
        Err(e) => {
            table.add("gpu-check ran to the end", Some(false), e);
            ExitCode::from(1)
        }
    }
}

fn run(table: &mut Table) -> Result<(), String> {
    // 1. The libraries.
    let libs = availability();
    for lib in CudaLibrary::ALL {
        let name = format!("{} loads", lib.name());
        match libs.get(lib) {
            Ok(found) => table.add(name, Some(true), found.location()),
            // NVTX is optional (without it ranges are no-ops): missing, it is
            // information; the others are failures.
            Err(e) => {
                let pass = (lib != CudaLibrary::Nvtx).then_some(false);
                table.add(name, pass, e.to_string())
            }
        }
    }
    libs.require(&[CudaLibrary::Driver, CudaLibrary::Nccl, CudaLibrary::Cupti])
        .map_err(|e| e.to_string())?;

    // 2. Recording, CUPTI, NCCL.
    let header = header_from_env().map_err(|e| e.to_string())?;
    let trace_file = std::env::var_os(ENV_TRACE_DIR)
        .filter(|d| !d.is_empty())
        .map(|d| std::path::PathBuf::from(d).join(rank_file_name(header.rank)));
    let recorder = Arc::new(Recorder::from_env(header).map_err(|e| e.to_string())?);
    let tracer = KernelTracer::start(Arc::clone(&recorder), TracerOptions::default())
        .map_err(|e| format!("CUPTI: {e}"))?;
    // The launcher's rendezvous, or a private store when run alone.
    let timeout = Duration::from_secs(120);
    let meeting = if std::env::var_os("WORLD_SIZE").is_some() {
        EnvRendezvous::connect(timeout)
    } else {
        EnvRendezvous::alone(timeout)
    }
    .map_err(|e| format!("rendezvous: {e}"))?;
    let (rank, world, store) = (meeting.rank, meeting.world, &meeting.store);
    let local_rank = std::env::var("LOCAL_RANK")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(rank);
    let group = NcclGroup::new(
        rank,
        world,
        store,
        NcclOptions {
            device: Some(local_rank),
            ..NcclOptions::default()
        },
    )
    .map_err(|e| format!("NCCL communicator: {e}"))?;
    table.add(
        "NCCL communicator",
        Some(true),
        format!(
            "rank {rank} of {world} on GPU {}, NCCL {}",
            group.device(),
            group.nccl_version()
        ),
    );
    table.add(
        "NVTX ranges",
        Some(nvtx::is_enabled() || libs.get(CudaLibrary::Nvtx).is_err()),
        if nvtx::is_enabled() {
            "enabled: every collective is an NVTX range named like its span"
        } else {
            "disabled (the NVTX library was not found)"
        },
    );

    // 3. The collectives.
    let stream = Arc::clone(group.stream());
    let mut step = 0u64;
    let mut wrong = Vec::new();
    let mut timed: Vec<(usize, ReduceOp, NcclWorkInfo)> = Vec::new();
    for &bytes in &SIZES {
        let count = bytes / 4;
        let input = vec![(rank + 1) as f32; count];
        for op in [ReduceOp::Sum, ReduceOp::Avg] {
            let expect = match op {
                ReduceOp::Sum => (world * (world + 1) / 2) as f32,
                _ => (world + 1) as f32 / 2.0,
            };
            for repeat in 0..=REPEATS {
                let mut buf = stream
                    .clone_htod(&input)
                    .map_err(|e| format!("copying {bytes} B to the GPU: {e}"))?;
                tracer.mark_step(step);
                let t0 = probe_contract::clock::now_ns();
                let info = group
                    .all_reduce(&mut buf, op)
                    .map_err(|e| format!("all_reduce of {bytes} B: {e}"))?;
                recorder.record(Record::Span(info.span(step)));
                recorder.record(Record::Span(SpanRecord::new(
                    SpanKind::Step,
                    step,
                    t0,
                    probe_contract::clock::now_ns(),
                )));
                let out = stream
                    .clone_dtoh(&buf)
                    .map_err(|e| format!("copying {bytes} B back: {e}"))?;
                if let Some((i, v)) = out.iter().enumerate().find(|(_, v)| **v != expect) {
                    wrong.push(format!(
                        "{op:?} {bytes} B: element {i} is {v}, not {expect}"
                    ));
                }
                if repeat > 0 {
                    timed.push((bytes, op, info));
                }
                step += 1;
            }
        }
    }
    table.add(
        "all_reduce results",
        Some(wrong.is_empty()),
        if wrong.is_empty() {
            format!(
                "{} calls (sum, avg; 4 KiB to 64 MiB) equal the value every rank's input implies",
                SIZES.len() as u64 * 2 * (REPEATS + 1)
            )
        } else {
            wrong.join("; ")
        },
    );
    drop(group);
    tracer.flush().map_err(|e| format!("CUPTI flush: {e}"))?;
    let stats = tracer.stop().map_err(|e| format!("CUPTI stop: {e}"))?;
    recorder.flush().map_err(|e| e.to_string())?;
    table.add(
        "CUPTI activity records",
        Some(stats.spans > 0 && stats.errors == 0),
        format!(
            "{} kernels, {} copies, {} sets, {} dropped, {} errors",
            stats.kernels, stats.memcpys, stats.memsets, stats.dropped, stats.errors
        ),
    );

    // 4. The trace: GPU activity inside each timed collective.
    let Some(path) = trace_file else {
        table.add(
            "trace",
            None,
            "not under ddp-probe run (DDP_PROBE_TRACE_DIR unset): GPU activity not compared",
        );
        return Ok(());
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("reading the trace {}: {e}", path.display()))?;
    let gpu: Vec<SpanRecord> = text
        .lines()
        .filter_map(|l| match serde_json::from_str::<Record>(l).ok()? {
            Record::Span(s) if matches!(s.kind, SpanKind::Kernel | SpanKind::Memcpy) => Some(s),
            _ => None,
        })
        .collect();
    compare_with_cupti(table, &timed, &gpu, world);
    Ok(())
}

/// For each timed collective, the GPU activity CUPTI recorded between its
/// start and finish, and how its event-timed device time compares.
fn compare_with_cupti(
    table: &mut Table,
    timed: &[(usize, ReduceOp, NcclWorkInfo)],
    gpu: &[SpanRecord],
    world: usize,
) {
    let mut names: BTreeMap<String, usize> = BTreeMap::new();
    let mut comm_kernels = 0usize;
    let mut with_activity = 0usize;
    let mut diffs_ns: Vec<i64> = Vec::new();
    let mut rows: BTreeMap<(usize, String), Vec<(u64, u64)>> = BTreeMap::new();
    for (bytes, op, info) in timed {
        // Host-clock window of the collective: CUPTI's records are mapped to
        // the same clock; allow 20 µs for the mapping's uncertainty.
        let (lo, hi) = (
            info.queued_ns.saturating_sub(20_000),
            info.finished_ns + 20_000,
        );
        let inside: Vec<&SpanRecord> = gpu
            .iter()
            .filter(|s| s.start >= lo && s.end <= hi)
            .filter(|s| {
                s.category != Some(KernelCategory::Memcpy) || s.bytes != Some(*bytes as u64)
            })
            .collect();
        let busy: u64 = inside.iter().map(|s| s.end - s.start).sum();
        for s in &inside {
            let name = s.name.as_deref().unwrap_or("?");
            *names.entry(short_name(name)).or_default() += 1;
            if s.category == Some(KernelCategory::Comm) {
                comm_kernels += 1;
            }
        }
        if !inside.is_empty() {
            with_activity += 1;
            diffs_ns.push(info.device_ns as i64 - busy as i64);
        }
        rows.entry((*bytes, format!("{op:?}")))
            .or_default()
            .push((info.device_ns, busy));
    }
    let seen: Vec<String> = names.iter().map(|(n, c)| format!("{n} x{c}")).collect();
    table.add(
        "GPU activity inside the collectives",
        None,
        format!(
            "{with_activity} of {} collectives at world {world} launched GPU work; NCCL kernels \
             classified comm: {comm_kernels}; seen: {}",
            timed.len(),
            if seen.is_empty() {
                "nothing (NCCL runs no kernel for an in-place collective of one rank)".to_owned()
            } else {
                seen.join(", ")
            }
        ),
    );
    for ((bytes, op), v) in &rows {
        let dev = median(v.iter().map(|x| x.0).collect());
        let busy = median(v.iter().map(|x| x.1).collect());
        let busbw = if dev > 0 && world > 1 {
            format!(
                ", bus bandwidth {:.1} GB/s",
                *bytes as f64 * 2.0 * (world - 1) as f64 / world as f64 / dev as f64
            )
        } else {
            String::new()
        };
        table.add(
            format!("all_reduce {op} {}", human_bytes(*bytes)),
            None,
            format!(
                "device time (events) median {:.1} µs; CUPTI activity inside median {:.1} µs{busbw}",
                dev as f64 / 1e3,
                busy as f64 / 1e3
            ),
        );
    }
    if !diffs_ns.is_empty() {
        // The events bracket the NCCL call on its stream, so they can only
        // be longer than the activity inside them, by the launch gaps.
        let negative = diffs_ns.iter().filter(|d| **d < -2_000).count();
        let med = median(diffs_ns.iter().map(|d| d.unsigned_abs()).collect());
        table.add(
            "event time vs CUPTI kernels",
            Some(negative == 0),
            format!(
                "{} collectives with GPU work: events minus CUPTI median {:.1} µs; {negative} \
                 where CUPTI saw more time than the events (over 2 µs)",
                diffs_ns.len(),
                med as f64 / 1e3
            ),
        );
    }
}

fn median(mut v: Vec<u64>) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    v[v.len() / 2]
}

fn short_name(name: &str) -> String {
    let end = name.find(['(', '<']).unwrap_or(name.len());
    name[..end].chars().take(48).collect()
}

fn human_bytes(b: usize) -> String {
    if b >= 1 << 20 {
        format!("{} MiB", b >> 20)
    } else {
        format!("{} KiB", b >> 10)
    }
}
