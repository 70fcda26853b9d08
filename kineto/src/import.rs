//! PyTorch profiler (Kineto) traces → a ddp-probe run directory.
//!
//! [`import`] reads one trace per rank (files, or folders of `*.json` / `*.json.gz`), with the
//! streaming parser of [`super::parse`], and writes `<out>/traces/rank-<R>.jsonl` in trace
//! format v1 plus `<out>/kineto-import.json` ([`IMPORT_JSON`]: the sources, warnings and the
//! GPU time breakdown with HTA's definitions, [`crate::hta`]). The mapping:
//!
//! | Kineto | ddp-probe |
//! |---|---|
//! | `distributedInfo.rank` / `world_size` / `backend` | header `rank`, `world_size`, `ddp.backend` |
//! | `ProfilerStep#N` (CPU) | `step` span, step number N |
//! | `DistributedDataParallel.forward` (or `## forward ##`) | `forward` |
//! | `## backward ##`, else the range of `autograd::engine::evaluate_function` ops in the step | `backward` |
//! | `Optimizer.step#…` (or `## optimizer ##`) | `optimizer` |
//! | `enumerate(DataLoader)#…` | `data_wait` |
//! | GPU `kernel` / `gpu_memset` | `kernel` (category `comm` for `^nccl.*Kernel`, else `compute` / `memset`), per device and stream |
//! | GPU `gpu_memcpy` | `memcpy` |
//! | NCCL kernel | also a `collective` (op, bytes, dtype from `Collective name`, `In msg nelems`, `dtype`, or from the kernel name; `queued` = its launch) |
//! | `gloo:<op>` annotation (CPU backends) | `collective` (bytes from `Input Dims` × `Input type`) |
//!
//! A step's all-reduces issued after its backward began are numbered as buckets 0, 1, … in
//! launch order (DDP launches one all-reduce per gradient bucket, in bucket order).
//! Timestamps: ns = `baseTimeNanoseconds` + round(`ts` × 1000).

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::parse::{parse_file, Cat, Event, KinetoTrace};
use super::ImportError;
use crate::hta::{hta_breakdown, kernel_class, HtaBreakdown, HtaOptions, KernelClass};
use probe_load::trace::{
    self, DdpConfig, EndRecord, Header, KernelCategory, LogLevel, LogRecord, Record, SpanKind,
    SpanRecord, TraceWriter,
};

/// The import's side file in the run directory: sources, warnings and HTA's breakdown.
pub const IMPORT_JSON: &str = "kineto-import.json";

/// What [`import`] did.
#[derive(Clone, Debug, Serialize)]
pub struct ImportReport {
    /// The run directory written.
    pub out: PathBuf,
    /// One entry per rank, by rank.
    pub ranks: Vec<RankImport>,
    /// The world size written in the headers.
    pub world_size: u32,
    /// Files cut off and similar problems worked around.
    pub warnings: Vec<String>,
    /// The GPU time breakdown with HTA's definitions (last step dropped, ns rounded).
    pub hta: HtaBreakdown,
}

/// One imported trace.
#[derive(Clone, Debug, Serialize)]
pub struct RankImport {
    /// The rank.
    pub rank: u32,
    /// The source file.
    pub source: PathBuf,
    /// Events read from it.
    pub events_read: u64,
    /// Spans written.
    pub spans: u64,
    /// Profiler steps found.
    pub steps: u64,
    /// GPU kernels and copies found.
    pub gpu_events: u64,
    /// Collectives found.
    pub collectives: u64,
    /// Whether the file was cut off.
    pub truncated: bool,
}

/// The trace files named by `inputs`: files as given, folders searched (not recursively) for
/// `*.json` and `*.json.gz`, sorted by name.
pub fn find_traces(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, ImportError> {
    let mut files = Vec::new();
    for p in inputs {
        if p.is_dir() {
            let rd = fs::read_dir(p).map_err(|source| ImportError::Io {
                path: p.clone(),
                source,
            })?;
            let mut found: Vec<PathBuf> = rd
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| {
                    let n = f.file_name().map(|n| n.to_string_lossy().into_owned());
                    f.is_file()
                        && n.is_some_and(|n| n.ends_with(".json") || n.ends_with(".json.gz"))
                })
                .collect();
            found.sort();
            if found.is_empty() {
                return Err(ImportError::NoTraces { path: p.clone() });
            }
            files.extend(found);
        } else if p.is_file() {
            files.push(p.clone());
        } else {
            return Err(ImportError::NotFound { path: p.clone() });
        }
    }
    Ok(files)
}

/// Parses the files (in parallel, a few at a time) and pairs each with its rank.
///
/// The rank comes from `distributedInfo.rank`; a single file without it is rank 0.
pub fn load_traces(files: &[PathBuf]) -> Result<Vec<(u32, KinetoTrace)>, ImportError> {
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(files.len().max(1));
    let mut parsed: Vec<Option<Result<KinetoTrace, ImportError>>> =
        (0..files.len()).map(|_| None).collect();
    for (chunk_files, chunk_out) in files.chunks(threads).zip(parsed.chunks_mut(threads)) {
        std::thread::scope(|s| {
            let handles: Vec<_> = chunk_files
                .iter()
                .map(|f| s.spawn(move || parse_file(f)))
                .collect();
            for (h, slot) in handles.into_iter().zip(chunk_out.iter_mut()) {
                *slot = Some(h.join().unwrap_or_else(|_| {
                    Err(ImportError::NotKineto {
                        path: PathBuf::new(),
                        why: "the parser thread failed".into(),
                    })
                }));
            }
        });
    }
    let mut out: Vec<(u32, KinetoTrace)> = Vec::new();
    let single = files.len() == 1;
    for r in parsed.into_iter().flatten() {
        let t = r?;
        let rank = rank_of(&t, single)?;
        check_time_range(&t)?;
        if let Some((_, other)) = out.iter().find(|(r, _)| *r == rank) {
            return Err(ImportError::DuplicateRank {
                rank,
                first: other.path.clone(),
                second: t.path,
            });
        }
        out.push((rank, t));
    }
    out.sort_by_key(|(r, _)| *r);
    Ok(out)
}

/// The rank of the trace `t`: its `distributedInfo.rank`, else 0 when it is the only file
/// (`single`). A rank no world size can hold (u32::MAX) is refused.
pub(crate) fn rank_of(t: &KinetoTrace, single: bool) -> Result<u32, ImportError> {
    match t.dist.as_ref().and_then(|d| d.rank) {
        Some(u32::MAX) => Err(ImportError::NotKineto {
            path: t.path.clone(),
            why: format!(
                "distributedInfo.rank is {}, more than a world size can hold",
                u32::MAX
            ),
        }),
        Some(r) => Ok(r),
        None if single => Ok(0),
        None => Err(ImportError::NoRank {
            path: t.path.clone(),
        }),
    }
}

/// Imports the traces named by `inputs` into the run directory `out` (created; it must not
/// already hold traces).
pub fn import(inputs: &[PathBuf], out: &Path) -> Result<ImportReport, ImportError> {
    let files = find_traces(inputs)?;
    let traces = load_traces(&files)?;
    let traces_dir = out.join(trace::TRACES_DIR);
    if traces_dir.is_dir()
        && fs::read_dir(&traces_dir)
            .map(|mut d| d.next().is_some())
            .unwrap_or(false)
    {
        return Err(ImportError::OutputExists {
            path: out.to_owned(),
        });
    }
    fs::create_dir_all(&traces_dir).map_err(|source| ImportError::Io {
        path: traces_dir.clone(),
        source,
    })?;
    let world_size = world_size_of(&traces);
    let run_id = format!(
        "kineto-{}",
        out.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "import".into())
    );
    let mut warnings = Vec::new();
    let mut ranks = Vec::new();
    for (rank, t) in &traces {
        if let Some(w) = &t.truncated {
            warnings.push(w.clone());
        }
        let path = trace::rank_file_path(out, *rank);
        let file = File::create(&path).map_err(|source| ImportError::Io {
            path: path.clone(),
            source,
        })?;
        let mut w = TraceWriter::new(file);
        let stats =
            convert(t, *rank, world_size, &run_id, &mut w).map_err(|source| ImportError::Io {
                path: path.clone(),
                source,
            })?;
        w.flush().map_err(|source| ImportError::Io {
            path: path.clone(),
            source,
        })?;
        ranks.push(RankImport {
            rank: *rank,
            source: t.path.clone(),
            events_read: t.events_read,
            spans: stats.spans,
            steps: stats.steps,
            gpu_events: stats.gpu_events,
            collectives: stats.collectives,
            truncated: t.truncated.is_some(),
        });
    }
    let pairs: Vec<(u32, &KinetoTrace)> = traces.iter().map(|(r, t)| (*r, t)).collect();
    let hta = hta_breakdown(&pairs, &HtaOptions::default());
    let report = ImportReport {
        out: out.to_owned(),
        ranks,
        world_size,
        warnings,
        hta,
    };
    let side = out.join(IMPORT_JSON);
    let json = serde_json::to_vec_pretty(&report).map_err(|e| ImportError::Io {
        path: side.clone(),
        source: e.into(),
    })?;
    fs::write(&side, json).map_err(|source| ImportError::Io { path: side, source })?;
    Ok(report)
}

/// The world size written in the headers: the largest `distributedInfo.world_size`, and at
/// least one more than the largest rank.
pub(crate) fn world_size_of(traces: &[(u32, KinetoTrace)]) -> u32 {
    let max_rank = traces.iter().map(|(r, _)| *r).max().unwrap_or(0);
    traces
        .iter()
        .filter_map(|(_, t)| t.dist.as_ref().and_then(|d| d.world_size))
        .max()
        .unwrap_or(0)
        .max(max_rank.saturating_add(1))
}

#[derive(Default)]
pub(crate) struct Stats {
    spans: u64,
    steps: u64,
    gpu_events: u64,
    collectives: u64,
}

/// A collective found in the trace, before it is numbered.
struct Coll {
    start: u64,
    end: u64,
    queued: Option<u64>,
    op: String,
    bytes: Option<u64>,
    dtype: Option<String>,
    transport: &'static str,
    name: String,
    device: Option<u32>,
    stream: Option<u64>,
}

/// The latest timestamp the reader keeps (`probe_load::reader::MAX_TIME_NS`, 2^62 ns since
/// 1970, the year 2116): the import writes nothing the reader would refuse.
const MAX_TRACE_NS: f64 = probe_load::reader::MAX_TIME_NS as f64;

/// Refuses a trace whose timestamps (`baseTimeNanoseconds` plus an event's end) pass what the
/// reader keeps (2^62 ns), naming the first event that does, instead of writing a run the
/// reader would refuse.
pub(crate) fn check_time_range(t: &KinetoTrace) -> Result<(), ImportError> {
    let base = t.base_time_ns.unwrap_or(0);
    let refuse = |why: String| ImportError::NotKineto {
        path: t.path.clone(),
        why,
    };
    if base as f64 >= MAX_TRACE_NS {
        return Err(refuse(format!(
            "baseTimeNanoseconds {base} is past what a run holds (nanoseconds since 1970 up to \
             2^62, the year 2116)"
        )));
    }
    for e in &t.events {
        let end_us = e.ts + e.dur.max(0.0);
        if !end_us.is_finite() || base as f64 + (end_us * 1000.0).round() >= MAX_TRACE_NS {
            let name = t.names.get(e.name as usize).map_or("?", String::as_str);
            return Err(refuse(format!(
                "event {name:?} at ts {} us ends past what a run holds \
                 (baseTimeNanoseconds + ts up to 2^62 ns, the year 2116)",
                e.ts
            )));
        }
    }
    Ok(())
}

/// Writes the trace `t` as rank `rank` of a run of `world_size` ranks, in trace format v1.
pub(crate) fn convert<W: Write>(
    t: &KinetoTrace,
    rank: u32,
    world_size: u32,
    run_id: &str,
    w: &mut TraceWriter<W>,
) -> std::io::Result<Stats> {
    let base = t.base_time_ns.unwrap_or(0);
    let ns = |us: f64| -> u64 {
        let v = (us * 1000.0).round();
        if v <= 0.0 {
            base
        } else {
            base.saturating_add(v as u64)
        }
    };
    let span_ns = |e: &Event| -> (u64, u64) {
        let s = ns(e.ts);
        (s, ns(e.ts + e.dur.max(0.0)).max(s))
    };
    let mut stats = Stats::default();

    // Steps: ProfilerStep#N annotations, on the main thread.
    let mut steps: Vec<(u64, u64, u64)> = Vec::new(); // (start, end, N)
    let mut main_tid = None;
    for e in &t.events {
        if e.stream >= 0 || e.cat == Cat::GpuUserAnnotation {
            continue;
        }
        if let Some(n) = t.name(e).strip_prefix("ProfilerStep#") {
            if let Ok(n) = n.trim().parse::<u64>() {
                if n <= trace::MAX_STEP {
                    let (s, en) = span_ns(e);
                    steps.push((s, en, n));
                    main_tid.get_or_insert(e.tid);
                }
            }
        }
    }
    steps.sort_unstable();
    let step_of = |t_ns: u64| -> Option<u64> {
        let i = steps.partition_point(|s| s.0 <= t_ns);
        (i > 0 && t_ns < steps[i - 1].1).then(|| steps[i - 1].2)
    };
    let span = |kind: SpanKind, s: u64, e: u64, step: Option<u64>| {
        let r = SpanRecord::new(kind, step.unwrap_or(0), s, e);
        if step.is_some() {
            r
        } else {
            r.without_step()
        }
    };

    // Launch times by correlation id (the CPU side of GPU work).
    let mut launch: HashMap<i64, f64> = HashMap::new();
    for e in &t.events {
        if e.cat == Cat::Runtime && e.correlation >= 0 {
            launch.insert(e.correlation, e.ts);
        }
    }

    let start_ns = t.events.iter().map(|e| ns(e.ts)).min().unwrap_or(base);
    let end_ns = t
        .events
        .iter()
        .map(|e| ns(e.ts + e.dur.max(0.0)))
        .max()
        .unwrap_or(start_ns);
    let dist = t.dist.clone().unwrap_or_default();
    let cpu_pid = t
        .events
        .iter()
        .find(|e| e.stream < 0 && e.pid >= 0)
        .map_or(0, |e| e.pid);
    let header = Header {
        format: trace::FORMAT_NAME.to_owned(),
        version: trace::VERSION.to_owned(),
        run_id: run_id.to_owned(),
        rank,
        local_rank: rank,
        world_size,
        local_world_size: world_size,
        node_rank: 0,
        hostname: t.host_name.clone().unwrap_or_default(),
        pid: u32::try_from(cpu_pid).unwrap_or(0),
        start_ns,
        clock: trace::CLOCK_UNIX_NS.to_owned(),
        offset_to_rank0_ns: 0,
        offset_uncertainty_ns: 0,
        program: Some("pytorch-profiler".to_owned()),
        argv: Some(vec![t.path.display().to_string()]),
        ddp: Some(DdpConfig {
            bucket_cap_mb_list: None,
            backend: dist.backend.unwrap_or_else(|| "unknown".to_owned()),
            bucket_cap_mb: None,
            first_bucket_bytes: None,
            find_unused_parameters: false,
            buffers: Vec::new(),
            static_graph: false,
            gradient_as_bucket_view: false,
            params: Vec::new(),
            buckets: Vec::new(),
            group_ranks: Vec::new(),
        }),
    };
    w.write(&Record::Header(header))?;
    if let Some(msg) = &t.truncated {
        w.write(&Record::Log(LogRecord {
            t: end_ns,
            level: LogLevel::Warn,
            message: msg.clone(),
        }))?;
    }
    for &(s, e, n) in &steps {
        w.write(&Record::Span(span(SpanKind::Step, s, e, Some(n))))?;
        stats.spans += 1;
        stats.steps += 1;
    }

    // CPU phases on the main thread (and backward from the autograd ops).
    let has_ddp_forward = t
        .events
        .iter()
        .any(|e| t.name(e) == "DistributedDataParallel.forward");
    let mut backward_explicit: HashMap<u64, ()> = HashMap::new();
    let mut autograd: HashMap<u64, (u64, u64)> = HashMap::new();
    let mut colls: Vec<Coll> = Vec::new();
    let has_nccl_kernels = t
        .events
        .iter()
        .any(|e| e.is_gpu() && kernel_class(t.name(e)) == KernelClass::Communication);
    for e in &t.events {
        if e.stream >= 0 || e.cat == Cat::GpuUserAnnotation {
            continue;
        }
        let name = t.name(e);
        let (s, en) = span_ns(e);
        let step = step_of(s);
        let kind = if name == "DistributedDataParallel.forward"
            || (!has_ddp_forward && name == "## forward ##")
        {
            Some(SpanKind::Forward)
        } else if name.starts_with("Optimizer.step#") || name == "## optimizer ##" {
            Some(SpanKind::Optimizer)
        } else if name.starts_with("enumerate(DataLoader)#") {
            Some(SpanKind::DataWait)
        } else if name == "## backward ##" {
            if let Some(st) = step {
                backward_explicit.insert(st, ());
            }
            Some(SpanKind::Backward)
        } else {
            None
        };
        if let Some(kind) = kind {
            // Annotations of other threads (e.g. the forward of a data-loader worker) stay
            // on their thread's custom lane.
            w.write(&Record::Span(span(kind, s, en, step).name(name.to_owned())))?;
            stats.spans += 1;
            continue;
        }
        if name.starts_with("autograd::engine::evaluate_function") {
            if let Some(st) = step {
                let r = autograd.entry(st).or_insert((s, en));
                r.0 = r.0.min(s);
                r.1 = r.1.max(en);
            }
            continue;
        }
        if e.cat == Cat::UserAnnotation && !has_nccl_kernels {
            if let Some(op) = name.strip_prefix("gloo:").or_else(|| {
                name.strip_prefix("nccl:")
                    .filter(|_| !t.events.iter().any(Event::is_gpu))
            }) {
                let c = e.comm.as_deref();
                let dtype = c.and_then(|c| c.dtype.clone());
                let bytes = c
                    .and_then(|c| c.in_nelems.or(c.input_numel))
                    .zip(dtype.as_deref().and_then(dtype_bytes))
                    .map(|(n, b)| n * b);
                colls.push(Coll {
                    start: s,
                    end: en,
                    queued: None,
                    op: normalize_op(op),
                    bytes,
                    dtype: dtype.map(|d| normalize_dtype(&d)),
                    transport: if name.starts_with("gloo:") {
                        trace::transport::GLOO
                    } else {
                        trace::transport::NCCL
                    },
                    name: name.to_owned(),
                    device: None,
                    stream: None,
                });
            }
        }
    }
    for (st, (s, en)) in &autograd {
        if !backward_explicit.contains_key(st) {
            w.write(&Record::Span(
                span(SpanKind::Backward, *s, *en, Some(*st)).name("backward (autograd ops)"),
            ))?;
            stats.spans += 1;
        }
    }

    // GPU activity.
    for e in t.events.iter().filter(|e| e.is_gpu()) {
        let name = t.name(e);
        let (s, en) = span_ns(e);
        let queued = launch.get(&e.correlation).map(|&us| ns(us));
        let step = step_of(queued.unwrap_or(s));
        let class = kernel_class(name);
        let (kind, category) = match e.cat {
            Cat::GpuMemcpy => (SpanKind::Memcpy, KernelCategory::Memcpy),
            Cat::GpuMemset => (SpanKind::Kernel, KernelCategory::Memset),
            _ => match class {
                KernelClass::Communication => (SpanKind::Kernel, KernelCategory::Comm),
                KernelClass::Memory if name.starts_with("Memset") => {
                    (SpanKind::Kernel, KernelCategory::Memset)
                }
                KernelClass::Memory => (SpanKind::Memcpy, KernelCategory::Memcpy),
                KernelClass::Computation => (SpanKind::Kernel, KernelCategory::Compute),
                KernelClass::Other => (SpanKind::Kernel, KernelCategory::Other),
            },
        };
        let device = if e.device >= 0 {
            e.device
        } else {
            e.pid.max(0)
        };
        let device = u32::try_from(device).unwrap_or(0);
        let stream = e.stream as u64;
        w.write(&Record::Span(
            span(kind, s, en, step)
                .name(name.to_owned())
                .device(device)
                .stream(stream)
                .category(category)
                .correlation(e.correlation as u64),
        ))?;
        stats.spans += 1;
        stats.gpu_events += 1;
        if class == KernelClass::Communication {
            let c = e.comm.as_deref();
            let op = c
                .and_then(|c| c.collective.as_deref())
                .map(normalize_op)
                .or_else(|| op_from_kernel(name))
                .unwrap_or_else(|| "nccl".to_owned());
            let dtype = c
                .and_then(|c| c.dtype.clone())
                .or_else(|| dtype_from_kernel(name).map(str::to_owned));
            let bytes = c
                .and_then(|c| c.in_nelems)
                .zip(dtype.as_deref().and_then(dtype_bytes))
                .map(|(n, b)| n * b);
            colls.push(Coll {
                start: s,
                end: en,
                queued,
                op,
                bytes,
                dtype: dtype.map(|d| normalize_dtype(&d)),
                transport: trace::transport::NCCL,
                name: name.to_owned(),
                device: Some(device),
                stream: Some(stream),
            });
        }
    }

    // Collectives: sequence numbers in launch order, bucket ids for the backward all-reduces.
    colls.sort_by_key(|c| (c.queued.unwrap_or(c.start), c.start));
    let mut bucket_next: HashMap<u64, u32> = HashMap::new();
    for (seq, c) in colls.iter().enumerate() {
        let at = c.queued.unwrap_or(c.start);
        let step = step_of(at);
        let mut r = span(SpanKind::Collective, c.start, c.end, step)
            .name(c.name.clone())
            .op(c.op.clone())
            .seq(seq as u64)
            .transport(c.transport);
        if let Some(q) = c.queued {
            r = r.queued(q.min(c.start));
        }
        if let Some(b) = c.bytes {
            r = r.bytes(b);
        }
        if let Some(d) = &c.dtype {
            r = r.dtype(d.clone());
        }
        if let Some(d) = c.device {
            r = r.device(d);
        }
        if let Some(s) = c.stream {
            r = r.stream(s);
        }
        if let Some(st) = step {
            let in_backward = autograd.get(&st).is_some_and(|b| at >= b.0);
            if c.op == trace::op::ALL_REDUCE && in_backward {
                let b = bucket_next.entry(st).or_insert(0);
                r = r.bucket(*b);
                *b += 1;
            }
        }
        w.write(&Record::Span(r))?;
        stats.spans += 1;
        stats.collectives += 1;
    }
    if t.truncated.is_none() {
        w.write(&Record::End(EndRecord {
            t: end_ns,
            status: "ok".to_owned(),
            message: Some("imported from a PyTorch profiler trace".to_owned()),
        }))?;
    }
    Ok(stats)
}

/// The format's operation name for a PyTorch / NCCL collective name.
fn normalize_op(op: &str) -> String {
    let o = op.trim().trim_start_matches('_').to_ascii_lowercase();
    let o = o.trim_end_matches("_base").trim_end_matches("_into_tensor");
    match o {
        "allreduce" | "all_reduce" | "allreduce_coalesced" | "all_reduce_coalesced" => {
            trace::op::ALL_REDUCE.to_owned()
        }
        "allgather" | "all_gather" | "allgather_coalesced" => trace::op::ALL_GATHER.to_owned(),
        "reducescatter" | "reduce_scatter" | "reduce_scatter_tensor" => {
            trace::op::REDUCE_SCATTER.to_owned()
        }
        "alltoall" | "all_to_all" | "alltoall_single" => trace::op::ALL_TO_ALL.to_owned(),
        "broadcast" => trace::op::BROADCAST.to_owned(),
        "barrier" => trace::op::BARRIER.to_owned(),
        "reduce" => trace::op::REDUCE.to_owned(),
        "gather" => trace::op::GATHER.to_owned(),
        "scatter" => trace::op::SCATTER.to_owned(),
        "send" => trace::op::SEND.to_owned(),
        "recv" | "recv_anysource" => trace::op::RECV.to_owned(),
        other => other.to_owned(),
    }
}

/// The operation of an NCCL kernel name: `ncclKernel_AllReduce_RING_LL_Sum_float(...)` or
/// `ncclDevKernel_AllReduce_Sum_f32_RING_LL(...)`.
fn op_from_kernel(name: &str) -> Option<String> {
    let rest = name.split_once('_')?.1;
    let coll = rest.split(['_', '(']).next()?;
    Some(match coll {
        "AllReduce" => trace::op::ALL_REDUCE.to_owned(),
        "AllGather" => trace::op::ALL_GATHER.to_owned(),
        "ReduceScatter" => trace::op::REDUCE_SCATTER.to_owned(),
        "Broadcast" => trace::op::BROADCAST.to_owned(),
        "Reduce" => trace::op::REDUCE.to_owned(),
        "SendRecv" => "send_recv".to_owned(),
        "Send" => trace::op::SEND.to_owned(),
        "Recv" => trace::op::RECV.to_owned(),
        other => other.to_ascii_lowercase(),
    })
}

/// The element type at the end of an old-style NCCL kernel name (`..._Sum_float(...)`).
fn dtype_from_kernel(name: &str) -> Option<&'static str> {
    let head = name.split('(').next()?;
    const SUFFIXES: [(&str, &str); 16] = [
        ("_uint8_t", "uint8"),
        ("_int8_t", "int8"),
        ("_int32_t", "int32"),
        ("_int64_t", "int64"),
        ("_uint8", "uint8"),
        ("_int8", "int8"),
        ("_bfloat16", "bfloat16"),
        ("_float", "float32"),
        ("_half", "float16"),
        ("_double", "float64"),
        ("_f32", "float32"),
        ("_f16", "float16"),
        ("_bf16", "bfloat16"),
        ("_f64", "float64"),
        ("_i32", "int32"),
        ("_i64", "int64"),
    ];
    SUFFIXES
        .iter()
        .find(|(suffix, _)| head.ends_with(suffix))
        .map(|(_, d)| *d)
}

/// The format's dtype name for PyTorch's scalar type names ("Float", "float", "c10::Half").
fn normalize_dtype(d: &str) -> String {
    let d = d.trim().trim_start_matches("c10::");
    match d.to_ascii_lowercase().as_str() {
        "float" | "float32" => "float32".into(),
        "double" | "float64" => "float64".into(),
        "half" | "float16" => "float16".into(),
        "bfloat16" => "bfloat16".into(),
        "int" | "int32" => "int32".into(),
        "long" | "int64" | "long int" => "int64".into(),
        "short" | "int16" => "int16".into(),
        "char" | "int8" | "signed char" => "int8".into(),
        "byte" | "uint8" | "unsigned char" => "uint8".into(),
        "bool" => "bool".into(),
        other => other.to_owned(),
    }
}

/// Bytes per element of a dtype name (PyTorch's or the format's), when known.
fn dtype_bytes(d: &str) -> Option<u64> {
    Some(match normalize_dtype(d).as_str() {
        "float64" | "int64" => 8,
        "float32" | "int32" => 4,
        "float16" | "bfloat16" | "int16" => 2,
        "int8" | "uint8" | "bool" => 1,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_and_dtype_names() {
        assert_eq!(normalize_op("allreduce"), "all_reduce");
        assert_eq!(normalize_op("_allgather_base"), "all_gather");
        assert_eq!(normalize_op("_reduce_scatter_base"), "reduce_scatter");
        assert_eq!(normalize_op("all_reduce"), "all_reduce");
        assert_eq!(
            op_from_kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)").as_deref(),
            Some("all_reduce")
        );
        assert_eq!(
            op_from_kernel("ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)")
                .as_deref(),
            Some("broadcast")
        );
        assert_eq!(
            dtype_from_kernel("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(x)"),
            Some("int8")
        );
        assert_eq!(dtype_bytes("Float"), Some(4));
        assert_eq!(dtype_bytes("BFloat16"), Some(2));
        assert_eq!(dtype_bytes("float"), Some(4));
        assert_eq!(dtype_bytes("TensorList"), None);
    }
}
