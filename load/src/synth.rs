//! Synthetic runs with the structure of real DDP training, for tests and
//! benchmarks.
//!
//! [`generate_run`] writes `ranks` trace files through the real
//! [`TraceWriter`]. Each step of each rank has a data wait, a forward pass, a
//! backward pass during which the buckets' gradients become ready one bucket
//! after the other (`bucket_ready` spans, `grad_ready` records), one
//! all-reduce per bucket that is queued when its bucket is ready (so the
//! first ones run while backward is still going), a writeback after each
//! all-reduce and an optimizer step once everything is reduced. The
//! all-reduces of all ranks finish together, when the last rank joins, so a
//! straggler shows up as long collectives on every other rank. Every rank
//! gets a clock offset to rank 0 that the header declares and the raw
//! timestamps carry. A seed makes everything deterministic.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use fastrand::Rng;

use crate::trace::{
    algo, op, transport, BucketInfo, BucketsRecord, CounterRecord, DdpConfig, EndRecord,
    GradReadyRecord, Header, InstantRecord, KernelCategory, LogLevel, LogRecord, ParamInfo, Record,
    SpanKind, SpanRecord, TraceWriter, CLOCK_UNIX_NS, FORMAT_NAME, VERSION,
};

/// What to generate.
#[derive(Clone, Debug)]
pub struct SynthConfig {
    /// Run id of every header.
    pub run_id: String,
    /// Number of ranks.
    pub ranks: u32,
    /// Ranks per node (sets node ranks, local ranks and host names).
    pub ranks_per_node: u32,
    /// Number of training steps.
    pub steps: u64,
    /// Gradient buckets per step.
    pub buckets: u32,
    /// Parameters per bucket.
    pub params_per_bucket: u32,
    /// Gradient bytes per parameter.
    pub param_bytes: u64,
    /// Seed of every random choice.
    pub seed: u64,
    /// True time of the first step (ns since the Unix epoch).
    pub start_unix_ns: u64,
    /// Forward plus backward time of a step (ns); forward is a third.
    pub compute_ns: u64,
    /// Data loading wait per step (ns).
    pub data_ns: u64,
    /// Optimizer time per step (ns).
    pub optimizer_ns: u64,
    /// All-reduce bus bandwidth (bytes per second).
    pub bandwidth_bytes_per_s: f64,
    /// Fixed cost of each collective (ns).
    pub latency_ns: u64,
    /// Relative random variation of every duration (0.05 = ±5 %).
    pub jitter: f64,
    /// Largest clock offset of a rank to rank 0 (ns, either sign).
    pub max_clock_offset_ns: i64,
    /// A rank whose compute is slower by the given factor.
    pub straggler: Option<(u32, f64)>,
    /// Every this many steps one rank waits 20 times longer for data.
    pub data_stall_every: Option<u64>,
    /// Write `data_wait` spans; without them the wait still passes, unrecorded, as a PyTorch
    /// program's own batch fetching does under the module.
    pub data_wait_recorded: bool,
    /// Write `grad_ready` records.
    pub grad_ready: bool,
    /// Write GPU kernel spans (compute kernels on stream 7, NCCL kernels on
    /// stream 13).
    pub gpu_kernels: bool,
    /// Write a `buckets` record (reason `"rebuild"`) at this step.
    pub rebuild_at_step: Option<u64>,
    /// Status of the `end` record; `None` leaves it out, as a killed job
    /// would.
    pub end_status: Option<String>,
}

impl SynthConfig {
    /// `ranks` × `steps` × `buckets` with defaults for everything else:
    /// 4 parameters of 1 MiB per bucket, 60 ms of compute, 2 ms of data
    /// wait, 5 ms of optimizer, 10 GB/s, 5 % jitter, clock offsets up to
    /// 500 µs, a rebuild at step 1, `grad_ready` records, no GPU kernels.
    pub fn new(ranks: u32, steps: u64, buckets: u32) -> SynthConfig {
        SynthConfig {
            run_id: "synthetic".to_owned(),
            ranks: ranks.max(1),
            ranks_per_node: 8,
            steps,
            buckets: buckets.max(1),
            params_per_bucket: 4,
            param_bytes: 1 << 20,
            seed: 1,
            start_unix_ns: 1_700_000_000_000_000_000,
            compute_ns: 60_000_000,
            data_ns: 2_000_000,
            optimizer_ns: 5_000_000,
            bandwidth_bytes_per_s: 10e9,
            latency_ns: 50_000,
            jitter: 0.05,
            max_clock_offset_ns: 500_000,
            straggler: None,
            data_stall_every: None,
            data_wait_recorded: true,
            grad_ready: true,
            gpu_kernels: false,
            rebuild_at_step: Some(1),
            end_status: Some("ok".to_owned()),
        }
    }

    /// Spans each rank writes.
    pub fn spans_per_rank(&self) -> u64 {
        let b = u64::from(self.buckets);
        let per_step = 5 + 3 * b + if self.gpu_kernels { 2 + b } else { 0 };
        1 + self.steps * per_step
    }

    /// Spans of the whole run.
    pub fn total_spans(&self) -> u64 {
        self.spans_per_rank() * u64::from(self.ranks)
    }

    fn params(&self) -> u32 {
        self.buckets.saturating_mul(self.params_per_bucket)
    }
}

/// What [`generate_run`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SynthSummary {
    /// The trace files, by rank.
    pub files: Vec<PathBuf>,
    /// Spans written.
    pub spans: u64,
    /// Records written (headers included).
    pub records: u64,
}

/// Writes `<run_dir>/traces/rank-<R>.jsonl` for every rank.
pub fn generate_run(config: &SynthConfig, run_dir: &Path) -> io::Result<SynthSummary> {
    let dir = run_dir.join(crate::trace::TRACES_DIR);
    std::fs::create_dir_all(&dir)?;
    let files: Vec<PathBuf> = (0..config.ranks)
        .map(|r| crate::trace::rank_file_path(run_dir, r))
        .collect();
    let writers = files
        .iter()
        .map(File::create)
        .collect::<io::Result<Vec<File>>>()?;
    let records = generate_to_writers(config, writers)?;
    Ok(SynthSummary {
        files,
        spans: config.total_spans(),
        records,
    })
}

/// Writes one trace per writer (writer `i` gets rank `i`; `config.ranks`
/// must equal the number of writers). Returns the number of records.
pub fn generate_to_writers<W: Write>(config: &SynthConfig, writers: Vec<W>) -> io::Result<u64> {
    if writers.len() != config.ranks as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} writers for {} ranks; give one writer per rank",
                writers.len(),
                config.ranks
            ),
        ));
    }
    let mut out: Vec<TraceWriter<W>> = writers.into_iter().map(TraceWriter::new).collect();
    Sim::new(config).run(&mut out)?;
    let mut records = 0;
    for w in out {
        records += w.records_written();
        w.into_inner()?.flush()?;
    }
    Ok(records)
}

/// `ns` varied by ±`jitter` (uniformly), with `rng`.
fn vary(rng: &mut Rng, ns: u64, jitter: f64) -> u64 {
    let f = 1.0 + (rng.f64() * 2.0 - 1.0) * jitter;
    (ns as f64 * f).max(0.0) as u64
}

/// The clock reading of true time `t` on a rank `offset` behind rank 0.
fn raw_time(offset: i64, t: u64) -> u64 {
    (i128::from(t) - i128::from(offset)).clamp(0, i128::from(u64::MAX)) as u64
}

struct Sim<'c> {
    c: &'c SynthConfig,
    rng: Rng,
    offsets: Vec<i64>,
    params: Vec<ParamInfo>,
    layout: Vec<BucketInfo>,
    correlation: u64,
}

/// One rank's timeline of one step (true times).
#[derive(Clone, Default)]
struct RankStep {
    start: u64,
    data_end: u64,
    fwd_end: u64,
    bwd_end: u64,
    /// Per bucket: first and last parameter ready.
    ready: Vec<(u64, u64)>,
    /// Per parameter: ready offset after backward start.
    offsets: Vec<i64>,
}

impl<'c> Sim<'c> {
    fn new(c: &'c SynthConfig) -> Sim<'c> {
        let mut rng = Rng::with_seed(c.seed);
        let offsets = (0..c.ranks)
            .map(|r| {
                if r == 0 || c.max_clock_offset_ns == 0 {
                    0
                } else {
                    let m = c.max_clock_offset_ns.unsigned_abs();
                    let v = (rng.u64(..) % (2 * m + 1)) as i64;
                    v - m as i64
                }
            })
            .collect();
        let n = c.params();
        let numel = (c.param_bytes / 4).max(1);
        let shape = if numel & 0xff == 0 {
            vec![256, numel / 256]
        } else {
            vec![numel]
        };
        let params = (0..n)
            .map(|i| ParamInfo {
                index: i,
                name: format!(
                    "layers.{}.{}",
                    i / 2,
                    if i % 2 == 0 { "weight" } else { "bias" }
                ),
                shape: shape.clone(),
                dtype: "float32".to_owned(),
                numel,
                bytes: c.param_bytes,
            })
            .collect();
        // Bucket 0 holds the last parameters: their gradients are ready first.
        let layout = (0..c.buckets)
            .map(|k| {
                let params: Vec<u32> = (0..c.params_per_bucket)
                    .map(|j| n - 1 - (k * c.params_per_bucket + j))
                    .collect();
                BucketInfo {
                    id: k,
                    bytes: c.param_bytes * params.len() as u64,
                    params,
                }
            })
            .collect();
        Sim {
            c,
            rng,
            offsets,
            params,
            layout,
            correlation: 1,
        }
    }

    /// The rank's own clock reading of true time `t`.
    fn raw(&self, rank: usize, t: u64) -> u64 {
        raw_time(self.offsets[rank], t)
    }

    fn header(&self, rank: u32) -> Header {
        let c = self.c;
        let rpn = c.ranks_per_node.max(1);
        let node = rank / rpn;
        Header {
            format: FORMAT_NAME.to_owned(),
            version: VERSION.to_owned(),
            run_id: c.run_id.clone(),
            rank,
            local_rank: rank % rpn,
            world_size: c.ranks,
            local_world_size: rpn.min(c.ranks),
            node_rank: node,
            hostname: format!("node{node}"),
            pid: 10_000 + rank,
            start_ns: self.raw(rank as usize, c.start_unix_ns.saturating_sub(1_000_000)),
            clock: CLOCK_UNIX_NS.to_owned(),
            offset_to_rank0_ns: self.offsets[rank as usize],
            offset_uncertainty_ns: if rank == 0 { 0 } else { 20_000 },
            program: Some("synthetic".to_owned()),
            argv: Some(vec![
                "synthetic".to_owned(),
                format!("--steps={}", c.steps),
                format!("--buckets={}", c.buckets),
            ]),
            ddp: Some(DdpConfig {
                bucket_cap_mb_list: None,
                backend: "gloo".to_owned(),
                bucket_cap_mb: Some(25.0),
                first_bucket_bytes: Some(1 << 20),
                find_unused_parameters: false,
                buffers: Vec::new(),
                static_graph: false,
                gradient_as_bucket_view: false,
                params: self.params.clone(),
                buckets: self.layout.clone(),
                group_ranks: Vec::new(),
            }),
        }
    }

    fn run<W: Write>(&mut self, out: &mut [TraceWriter<W>]) -> io::Result<()> {
        let c = self.c;
        let n = out.len();
        let b = c.buckets as usize;
        for (r, w) in out.iter_mut().enumerate() {
            w.write(&Record::Header(self.header(r as u32)))?;
            w.write(&Record::Log(LogRecord {
                t: self.raw(r, c.start_unix_ns.saturating_sub(900_000)),
                level: LogLevel::Info,
                message: format!("synthetic rank {r} of {n} started"),
            }))?;
        }
        // Initial parameter broadcast, outside any step.
        let bcast_start = c.start_unix_ns.saturating_sub(800_000);
        let total_bytes = c.param_bytes * u64::from(c.params());
        let bcast_end = bcast_start + c.latency_ns + self.transfer_ns(total_bytes);
        for (r, w) in out.iter_mut().enumerate() {
            let span = SpanRecord::new(
                SpanKind::Collective,
                0,
                self.raw(r, bcast_start),
                self.raw(r, bcast_end),
            )
            .without_step()
            .op(op::BROADCAST)
            .seq(0)
            .bytes(total_bytes)
            .transport(transport::TCP)
            .algo(algo::DIRECT)
            .dtype("float32");
            w.write(&Record::Span(span))?;
        }
        let mut seq = 1u64;
        let mut prev_end: Vec<u64> = (0..n)
            .map(|_| c.start_unix_ns + self.rng.u64(..) % 50_000)
            .collect();
        let mut steps: Vec<RankStep> = vec![RankStep::default(); n];
        for step in 0..c.steps {
            for r in 0..n {
                steps[r] = self.rank_step(step, r, prev_end[r]);
            }
            if c.rebuild_at_step == Some(step) {
                for (r, w) in out.iter_mut().enumerate() {
                    let t = self.raw(r, steps[r].start);
                    w.write(&Record::Buckets(BucketsRecord {
                        step,
                        t: Some(t),
                        reason: "rebuild".to_owned(),
                        buckets: self.layout.clone(),
                    }))?;
                    w.write(&Record::Instant(InstantRecord {
                        name: "buckets_rebuilt".into(),
                        t,
                        step: Some(step),
                        args: None,
                    }))?;
                }
            }
            // Collectives: serialized on each rank's comm thread, finishing
            // together once the last rank has joined.
            let mut comm_free = 0u64;
            let mut coll: Vec<Vec<(u64, u64)>> = vec![Vec::with_capacity(b); n];
            let mut finish = Vec::with_capacity(b);
            for k in 0..b {
                let bytes = self.layout[k].bytes;
                let join = steps.iter().map(|s| s.ready[k].1).max().unwrap_or(0);
                let end = join.max(comm_free) + c.latency_ns + self.transfer_ns(bytes);
                let wb_end = end + vary(&mut self.rng, bytes / 20, c.jitter).max(1_000);
                for (r, s) in steps.iter().enumerate() {
                    let start = s.ready[k].1.max(comm_free);
                    coll[r].push((start, end));
                }
                finish.push((end, wb_end));
                comm_free = wb_end;
            }
            for (r, w) in out.iter_mut().enumerate() {
                let s = &steps[r];
                let opt_start = s.bwd_end.max(comm_free);
                let opt_end = opt_start + vary(&mut self.rng, c.optimizer_ns, c.jitter);
                self.write_step(w, r, step, s, &coll[r], &finish, seq, opt_start, opt_end)?;
                prev_end[r] = opt_end;
            }
            seq += b as u64;
        }
        for (r, w) in out.iter_mut().enumerate() {
            if let Some(status) = &c.end_status {
                w.write(&Record::End(EndRecord {
                    t: self.raw(r, prev_end[r] + 1_000),
                    status: status.clone(),
                    message: None,
                }))?;
            }
        }
        Ok(())
    }

    fn transfer_ns(&self, bytes: u64) -> u64 {
        let n = f64::from(self.c.ranks.max(1));
        let factor = if n > 1.0 { 2.0 * (n - 1.0) / n } else { 0.0 };
        (bytes as f64 * factor / self.c.bandwidth_bytes_per_s.max(1.0) * 1e9) as u64
    }

    fn rank_step(&mut self, step: u64, r: usize, start: u64) -> RankStep {
        let c = self.c;
        let slow = match c.straggler {
            Some((s, f)) if s as usize == r => f.max(0.0),
            _ => 1.0,
        };
        let mut data = vary(&mut self.rng, c.data_ns, c.jitter);
        if let Some(every) = c.data_stall_every.filter(|&e| e > 0) {
            if step % every == every - 1 && (step / every) % u64::from(c.ranks) == r as u64 {
                data *= 20;
            }
        }
        let fwd = (vary(&mut self.rng, c.compute_ns / 3, c.jitter) as f64 * slow) as u64;
        let bwd = (vary(&mut self.rng, c.compute_ns * 2 / 3, c.jitter) as f64 * slow) as u64;
        let data_end = start + data;
        let fwd_end = data_end + fwd;
        let bwd_end = fwd_end + bwd;
        let b = c.buckets as u64;
        let ppb = u64::from(c.params_per_bucket.max(1));
        let mut offsets = vec![crate::trace::NO_GRAD; c.params() as usize];
        let mut ready = Vec::with_capacity(b as usize);
        for (k, bucket) in self.layout.iter().enumerate() {
            let k = k as u64;
            let mut first = u64::MAX;
            let mut last = 0;
            for (j, &p) in bucket.params.iter().enumerate() {
                let frac = (k * ppb + j as u64 + 1) as f64 / (b * ppb) as f64;
                let off = ((bwd as f64 * frac) as u64).min(bwd);
                offsets[p as usize] = off as i64;
                first = first.min(off);
                last = last.max(off);
            }
            ready.push((fwd_end + first.min(last), fwd_end + last));
        }
        RankStep {
            start,
            data_end,
            fwd_end,
            bwd_end,
            ready,
            offsets,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn write_step<W: Write>(
        &mut self,
        w: &mut TraceWriter<W>,
        r: usize,
        step: u64,
        s: &RankStep,
        coll: &[(u64, u64)],
        finish: &[(u64, u64)],
        seq0: u64,
        opt_start: u64,
        opt_end: u64,
    ) -> io::Result<()> {
        let c = self.c;
        let offset = self.offsets[r];
        let t = move |x: u64| raw_time(offset, x);
        let span = |kind, a: u64, b: u64| SpanRecord::new(kind, step, t(a), t(b));
        let mut recs = vec![
            span(SpanKind::Forward, s.data_end, s.fwd_end),
            span(SpanKind::Backward, s.fwd_end, s.bwd_end),
        ];
        if c.data_wait_recorded {
            recs.insert(0, span(SpanKind::DataWait, s.start, s.data_end));
        }
        for (k, bucket) in self.layout.iter().enumerate() {
            let (a, b) = s.ready[k];
            recs.push(
                span(SpanKind::BucketReady, a, b)
                    .bucket(bucket.id)
                    .bytes(bucket.bytes)
                    .params(bucket.params.len() as u32),
            );
            let (cs, ce) = coll[k];
            recs.push(
                span(SpanKind::Collective, cs, ce)
                    .queued(t(b))
                    .op(op::ALL_REDUCE)
                    .bucket(bucket.id)
                    .bytes(bucket.bytes)
                    .seq(seq0 + k as u64)
                    .algo(algo::RING)
                    .transport(transport::TCP)
                    .dtype("float32"),
            );
            let (we_start, we_end) = finish[k];
            recs.push(
                span(SpanKind::Writeback, we_start, we_end)
                    .bucket(bucket.id)
                    .bytes(bucket.bytes),
            );
        }
        if c.gpu_kernels {
            let mut corr = self.correlation;
            let mut kernel = |a: u64, b: u64, name: &'static str, stream: u64, cat| {
                corr += 1;
                span(SpanKind::Kernel, a, b)
                    .name(name)
                    .device(0)
                    .stream(stream)
                    .category(cat)
                    .correlation(corr)
            };
            recs.push(kernel(
                s.data_end + 20_000,
                s.fwd_end,
                "forward_gemm",
                7,
                KernelCategory::Compute,
            ));
            recs.push(kernel(
                s.fwd_end + 20_000,
                s.bwd_end,
                "backward_gemm",
                7,
                KernelCategory::Compute,
            ));
            for &(cs, ce) in coll {
                recs.push(kernel(
                    cs + 5_000,
                    ce,
                    "ncclKernel_AllReduce_RING_LL_Sum_float",
                    13,
                    KernelCategory::Comm,
                ));
            }
            self.correlation = corr;
        }
        recs.push(span(SpanKind::Optimizer, opt_start, opt_end));
        recs.push(span(SpanKind::Step, s.start, opt_end));
        for rec in recs {
            w.write(&Record::Span(rec))?;
        }
        if c.grad_ready {
            w.write(&Record::GradReady(GradReadyRecord {
                step,
                t0: t(s.fwd_end),
                offsets_ns: s.offsets.clone(),
            }))?;
        }
        let loss = 2.0 / (1.0 + step as f64 * 0.01) + self.rng.f64() * 0.01;
        w.write(&Record::Counter(CounterRecord {
            name: "loss".into(),
            t: t(opt_end),
            value: loss,
        }))?;
        w.write(&Record::Counter(CounterRecord {
            name: "memory_allocated_bytes".into(),
            t: t(opt_end),
            value: (3 * c.param_bytes * u64::from(c.params())) as f64,
        }))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic() {
        let c = SynthConfig::new(2, 3, 2);
        let gen = || {
            let mut a = Vec::new();
            let mut b = Vec::new();
            generate_to_writers(&c, vec![&mut a, &mut b]).unwrap();
            (a, b)
        };
        assert_eq!(gen(), gen());
    }

    #[test]
    fn writer_count_must_match() {
        let c = SynthConfig::new(2, 1, 1);
        let err = generate_to_writers(&c, vec![Vec::new()]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }
}
