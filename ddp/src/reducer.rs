//! The reducer: gradient buckets filled by post-accumulate-grad hooks and all-reduced while
//! backward goes on, as PyTorch's `reducer.cpp` does it.
//!
//! # How a gradient travels
//!
//! 1. [`Reducer::prepare_for_backward`] (called by [`crate::Ddp::backward`] before
//!    `loss.backward()`) resets every bucket's pending count and notes the backward start.
//! 2. The autograd engine runs the hook of a parameter right after its gradient was accumulated
//!    into `.grad` ([`crate::hooks`]). [`Reducer::mark_ready`] copies the gradient into the
//!    parameter's slot of its bucket, divided by the world size in the same pass (PyTorch's
//!    `mul_out` into the bucket view: pre-division, then a SUM all-reduce), and records the
//!    ready time.
//! 3. When a bucket's last parameter is ready the bucket is complete; buckets are launched
//!    strictly in bucket order (a complete bucket waits for the ones before it), each as an
//!    asynchronous all-reduce on the process group's communication thread, so communication
//!    runs while autograd computes the remaining gradients.
//! 4. After `loss.backward()` returns, [`Reducer::finalize_backward`] handles parameters that
//!    got no gradient (an error naming them, or zeros under `find_unused_parameters`), waits for
//!    every bucket's all-reduce in order, and copies the averaged values back into each
//!    parameter's `.grad`, ready for the optimizer step.
//!
//! The first iteration uses one bucket per dtype (no overlap, as PyTorch without
//! `find_unused_parameters`); before the second, the buckets are rebuilt once from the observed
//! gradient-ready order with `[first_bucket_bytes, bucket_cap]` limits, and rank 0's layout is
//! broadcast so every rank uses the same one ([`Reducer::rebuild_buckets`]).

use std::sync::Arc;

use comm::{Buffer, DType, ProcessGroup, ReduceOp, Work, WorkInfo};
use probe_contract::recorder::Recorder;
use probe_contract::trace::{BucketInfo, SpanKind};
use tch::{Device, Kind, Tensor};

use crate::buckets::{self, Bucket, BucketCapConfig, ParamSpec};
use crate::error::{DdpError, Result};

/// How bucket contents travel (PyTorch's default all-reduce, or its fp16/bf16 compress hooks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// All-reduce the gradients in their own dtype.
    #[default]
    None,
    /// Cast each bucket to float16 for the all-reduce and back afterwards
    /// (`ddp_comm_hooks.default_hooks.fp16_compress_hook`).
    Fp16,
    /// Cast each bucket to bfloat16 for the all-reduce and back afterwards
    /// (`ddp_comm_hooks.default_hooks.bf16_compress_hook`).
    Bf16,
}

impl Compression {
    /// The name used in traces and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Fp16 => "fp16",
            Compression::Bf16 => "bf16",
        }
    }
}

/// One parameter as the reducer sees it.
pub(crate) struct ParamEntry {
    pub(crate) name: String,
    pub(crate) tensor: Tensor,
    pub(crate) spec: ParamSpec,
    pub(crate) kind: Kind,
    pub(crate) numel: usize,
}

/// A bucket's buffer and bookkeeping.
struct BucketState {
    /// Parameter indices, in bucket order.
    params: Vec<usize>,
    /// Element offset of each parameter (parallel to `params`).
    offsets: Vec<usize>,
    /// The bucket's dtype.
    kind: Kind,
    /// Elements in the bucket.
    numel: usize,
    /// The flat gradient buffer; `None` while its all-reduce is in flight.
    buffer: Option<Buffer>,
    /// Parameters not yet ready in this backward.
    pending: usize,
    /// When the first and the last parameter became ready (ns).
    first_ready: u64,
    last_ready: u64,
    /// The all-reduce in flight and when it was handed to the process group.
    work: Option<Work>,
    queued_ns: u64,
    /// The NVTX range of the all-reduce in flight, ended when it completes.
    #[cfg(feature = "cuda")]
    nvtx: Option<crate::cuda::nvtx::StartedRange>,
}

impl BucketState {
    fn bytes(&self) -> u64 {
        (self.numel * self.kind.elt_size_in_bytes()) as u64
    }
}

/// A finished bucket all-reduce, for the trace.
struct Completed {
    bucket: usize,
    first_ready: u64,
    last_ready: u64,
    params: usize,
    info: WorkInfo,
    compression: Compression,
}

/// The reducer's state, shared between the training thread and the hooks.
pub(crate) struct Reducer {
    pub(crate) params: Vec<ParamEntry>,
    /// For each parameter: its bucket and its position in the bucket.
    locator: Vec<(usize, usize)>,
    buckets: Vec<BucketState>,
    next_bucket: usize,
    /// Whether hooks of this backward feed the buckets (false under `no_sync`).
    expect_hooks: bool,
    ready: Vec<bool>,
    ready_order: Vec<usize>,
    ready_offsets: Vec<i64>,
    backward_start: u64,
    /// One over the world size, as a 0-dim tensor per bucket dtype.
    scale: Vec<(Kind, Tensor)>,
    pg: Arc<ProcessGroup>,
    recorder: Arc<Recorder>,
    caps: BucketCapConfig,
    find_unused_parameters: bool,
    compression: Compression,
    has_rebuilt: bool,
    /// The ready order of the first synchronised backward, kept for the rebuild.
    rebuild_order: Option<Vec<usize>>,
    /// The first error raised inside a hook, surfaced by `finalize_backward`.
    hook_error: Option<String>,
    /// The step the current backward belongs to (for the trace).
    pub(crate) step: u64,
}

/// Converts a tch kind into the process group's dtype.
pub(crate) fn comm_dtype(kind: Kind) -> Result<DType> {
    Ok(match kind {
        Kind::Float => DType::F32,
        Kind::Double => DType::F64,
        Kind::Half => DType::F16,
        Kind::BFloat16 => DType::BF16,
        Kind::Int => DType::I32,
        Kind::Int64 => DType::I64,
        Kind::Uint8 => DType::U8,
        other => {
            return Err(DdpError::Unsupported(format!(
                "gradients of dtype {other:?} cannot be all-reduced by the CPU backend (supported: \
                 float32, float64, float16, bfloat16, int32, int64, uint8)"
            )))
        }
    })
}

/// A CPU tensor viewing `numel` elements of `buffer` from element `offset`.
///
/// # Safety
/// The tensor aliases the buffer's memory: it must not outlive the buffer, and the buffer must
/// not be moved or resized while it lives.
pub(crate) unsafe fn view_of(
    buffer: &mut Buffer,
    kind: Kind,
    offset: usize,
    numel: usize,
) -> Tensor {
    let elt = kind.elt_size_in_bytes();
    let base = buffer.as_bytes_mut().as_mut_ptr();
    // SAFETY: the caller guarantees the buffer outlives the view; offset+numel is within the
    // buffer because bucket offsets are computed from the same parameter sizes.
    unsafe {
        Tensor::from_blob(
            base.add(offset * elt),
            &[numel as i64],
            &[1],
            kind,
            Device::Cpu,
        )
    }
}

impl Reducer {
    /// A reducer over `params` with the initial bucket layout of DDP's construction.
    pub(crate) fn new(
        params: Vec<ParamEntry>,
        pg: Arc<ProcessGroup>,
        recorder: Arc<Recorder>,
        caps: BucketCapConfig,
        layout: Vec<Bucket>,
        find_unused_parameters: bool,
        compression: Compression,
    ) -> Result<Reducer> {
        let world = pg.world_size() as f64;
        let n = params.len();
        let mut reducer = Reducer {
            params,
            locator: vec![(0, 0); n],
            buckets: Vec::new(),
            next_bucket: 0,
            expect_hooks: false,
            ready: vec![false; n],
            ready_order: Vec::with_capacity(n),
            ready_offsets: vec![-1; n],
            backward_start: 0,
            scale: Vec::new(),
            pg,
            recorder,
            caps,
            find_unused_parameters,
            compression,
            has_rebuilt: false,
            rebuild_order: None,
            hook_error: None,
            step: 0,
        };
        reducer.install_layout(&layout)?;
        let mut kinds: Vec<Kind> = reducer.buckets.iter().map(|b| b.kind).collect();
        kinds.dedup();
        for kind in kinds {
            if !reducer.scale.iter().any(|(k, _)| *k == kind) {
                reducer
                    .scale
                    .push((kind, Tensor::from(1.0 / world).to_kind(kind)));
            }
        }
        Ok(reducer)
    }

    /// Replaces the bucket layout (buffers are allocated anew).
    fn install_layout(&mut self, layout: &[Bucket]) -> Result<()> {
        let mut states = Vec::with_capacity(layout.len());
        for (b, bucket) in layout.iter().enumerate() {
            let kind = self.params[bucket.indices[0]].kind;
            let mut offsets = Vec::with_capacity(bucket.indices.len());
            let mut numel = 0;
            for (pos, &i) in bucket.indices.iter().enumerate() {
                if self.params[i].kind != kind {
                    return Err(DdpError::Unsupported(format!(
                        "bucket {b} mixes dtypes ({:?} and {:?})",
                        kind, self.params[i].kind
                    )));
                }
                self.locator[i] = (b, pos);
                offsets.push(numel);
                numel += self.params[i].numel;
            }
            states.push(BucketState {
                params: bucket.indices.clone(),
                offsets,
                kind,
                numel,
                buffer: Some(Buffer::zeros(comm_dtype(kind)?, numel)),
                pending: bucket.indices.len(),
                first_ready: 0,
                last_ready: 0,
                work: None,
                queued_ns: 0,
                #[cfg(feature = "cuda")]
                nvtx: None,
            });
        }
        self.buckets = states;
        Ok(())
    }

    /// The current layout as the trace describes it.
    pub(crate) fn layout_info(&self) -> Vec<BucketInfo> {
        self.buckets
            .iter()
            .enumerate()
            .map(|(id, b)| BucketInfo {
                id: id as u32,
                params: b.params.iter().map(|&i| i as u32).collect(),
                bytes: b.bytes(),
            })
            .collect()
    }

    /// Number of buckets.
    pub(crate) fn num_buckets(&self) -> usize {
        self.buckets.len()
    }

    /// Whether the one-time rebuild is due before the next forward/backward.
    pub(crate) fn rebuild_due(&self) -> bool {
        !self.has_rebuilt
            && self.rebuild_order.is_some()
            && buckets::should_rebuild_buckets(false, self.find_unused_parameters)
    }

    /// The one-time rebuild from the first iteration's gradient-ready order. Rank 0's layout is
    /// broadcast, so every rank adopts the same buckets even if their orders differed.
    pub(crate) fn rebuild_buckets(&mut self) -> Result<()> {
        let Some(order) = self.rebuild_order.take() else {
            return Ok(());
        };
        self.has_rebuilt = true;
        let specs: Vec<ParamSpec> = self.params.iter().map(|p| p.spec).collect();
        let local = buckets::rebuilt_bucket_assignment(&specs, &order, &self.caps, false)?;
        // Rank 0's layout wins: flattened indices, then per-bucket lengths (two broadcasts, as
        // `sync_bucket_indices` does).
        let mut flat: Vec<i64> = local
            .iter()
            .flat_map(|b| b.indices.iter().map(|&i| i as i64))
            .collect();
        let mut lengths: Vec<i64> = vec![-1; self.params.len() + 1];
        lengths[0] = local.len() as i64;
        for (k, b) in local.iter().enumerate() {
            lengths[k + 1] = b.indices.len() as i64;
        }
        self.pg.broadcast(&mut lengths, 0)?;
        self.pg.broadcast(&mut flat, 0)?;
        let count = usize::try_from(lengths[0]).unwrap_or(0);
        let mut layout = Vec::with_capacity(count);
        let mut at = 0usize;
        for k in 0..count {
            let len = usize::try_from(lengths[k + 1]).unwrap_or(0);
            let indices: Vec<usize> = flat[at..at + len].iter().map(|&i| i as usize).collect();
            at += len;
            layout.push(Bucket {
                indices,
                size_limit: 0,
            });
        }
        self.install_layout(&layout)?;
        let t = probe_contract::clock::now_ns();
        self.recorder
            .buckets(self.step, "rebuild", self.layout_info());
        self.recorder
            .instant_at("buckets_rebuilt", t, Some(self.step), None);
        Ok(())
    }

    /// Arms the hooks for one synchronised backward pass.
    pub(crate) fn prepare_for_backward(&mut self, step: u64) {
        self.step = step;
        self.expect_hooks = true;
        self.next_bucket = 0;
        self.ready.iter_mut().for_each(|r| *r = false);
        self.ready_offsets.iter_mut().for_each(|r| *r = -1);
        self.ready_order.clear();
        self.hook_error = None;
        for b in &mut self.buckets {
            b.pending = b.params.len();
            b.first_ready = 0;
            b.last_ready = 0;
        }
        self.backward_start = probe_contract::clock::now_ns();
    }

    /// Disarms the hooks (after a backward, or for `no_sync`).
    pub(crate) fn disarm(&mut self) {
        self.expect_hooks = false;
    }

    /// The hook: parameter `index` has its gradient accumulated into `.grad`.
    pub(crate) fn mark_ready(&mut self, index: usize) -> std::result::Result<(), String> {
        if !self.expect_hooks {
            return Ok(());
        }
        if self.ready[index] {
            return Err(format!(
                "parameter {} ({}) received its gradient twice in one backward pass; DDP expects \
                 each parameter to be used once per forward (reentrant backward or a parameter \
                 used in several forwards is not supported)",
                index, self.params[index].name
            ));
        }
        // A straggler for the tests: sleeps here, so this gradient and the later ones are late.
        crate::fault::slow_backward(self.step, index, self.ready_order.is_empty());
        let now = probe_contract::clock::now_ns();
        self.ready[index] = true;
        self.ready_order.push(index);
        self.ready_offsets[index] = now.saturating_sub(self.backward_start) as i64;
        let grad = self.params[index].tensor.grad();
        if let Err(e) = self.copy_into_bucket(index, Some(&grad)) {
            let message = format!(
                "copying the gradient of {} into its bucket failed: {e}",
                self.params[index].name
            );
            self.hook_error.get_or_insert_with(|| message.clone());
            return Err(message);
        }
        self.after_ready(index, now);
        Ok(())
    }

    /// Copies `grad / world_size` (or zeros when `grad` is `None`) into the parameter's slot.
    fn copy_into_bucket(&mut self, index: usize, grad: Option<&Tensor>) -> Result<()> {
        let (b, pos) = self.locator[index];
        let kind = self.buckets[b].kind;
        let offset = self.buckets[b].offsets[pos];
        let numel = self.params[index].numel;
        let scale = self
            .scale
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, t)| t.shallow_clone())
            .ok_or_else(|| DdpError::Unsupported(format!("no scale for {kind:?}")))?;
        let bucket = &mut self.buckets[b];
        let buffer = bucket
            .buffer
            .as_mut()
            .ok_or_else(|| DdpError::Unsupported(format!("bucket {b} is already in flight")))?;
        // SAFETY: the view lives only in this block, while `buffer` stays borrowed.
        let view = unsafe { view_of(buffer, kind, offset, numel) };
        match grad {
            Some(g) if g.defined() => {
                let flat = g.f_reshape([-1])?;
                let _ = flat.f_mul_out(&view, &scale)?;
            }
            _ => {
                let mut view = view;
                let _ = view.f_zero_()?;
            }
        }
        Ok(())
    }

    /// Bookkeeping after a parameter's slot was filled: completes buckets and launches, in
    /// order, every bucket that can go.
    fn after_ready(&mut self, index: usize, now: u64) {
        let (b, _) = self.locator[index];
        let bucket = &mut self.buckets[b];
        if bucket.pending == bucket.params.len() {
            bucket.first_ready = now;
        }
        bucket.pending -= 1;
        bucket.last_ready = now;
        while self.next_bucket < self.buckets.len() && self.buckets[self.next_bucket].pending == 0 {
            self.launch(self.next_bucket);
            self.next_bucket += 1;
        }
    }

    /// Hands bucket `b` to the process group.
    fn launch(&mut self, b: usize) {
        let compression = self.compression;
        let bucket = &mut self.buckets[b];
        let Some(buffer) = bucket.buffer.take() else {
            return;
        };
        let buffer = compress(buffer, compression);
        bucket.queued_ns = probe_contract::clock::now_ns();
        let bytes = buffer.byte_len();
        let work = self.pg.all_reduce_async(buffer, ReduceOp::Sum);
        let seq = work.seq().unwrap_or(0);
        bucket.work = Some(work);
        #[cfg(feature = "cuda")]
        {
            let name = crate::cuda::nvtx::name(
                SpanKind::Collective,
                Some("all_reduce"),
                Some(b as u32),
                Some(seq),
            );
            bucket.nvtx = Some(crate::cuda::nvtx::start(&name));
        }
        if self.recorder.is_enabled() {
            let mut args = probe_contract::trace::Args::new();
            args.insert("seq".into(), seq.into());
            args.insert("op".into(), "all_reduce".into());
            args.insert("bucket".into(), (b as u64).into());
            args.insert("bytes".into(), (bytes as u64).into());
            self.recorder.instant_at(
                "collective_queued",
                bucket.queued_ns,
                Some(self.step),
                Some(args),
            );
        }
    }

    /// Ends a synchronised backward: unready parameters, waiting, write-back, trace records.
    pub(crate) fn finalize_backward(&mut self) -> Result<()> {
        self.expect_hooks = false;
        let backward_end = probe_contract::clock::now_ns();
        if let Some(err) = self.hook_error.take() {
            self.drain();
            return Err(DdpError::Hook(crate::hooks::HookError::Register {
                index: 0,
                message: err,
            }));
        }
        let unready: Vec<usize> = (0..self.params.len()).filter(|&i| !self.ready[i]).collect();
        if !unready.is_empty() && !self.find_unused_parameters {
            self.drain();
            let names: Vec<String> = unready
                .iter()
                .map(|&i| format!("{} (index {i})", self.params[i].name))
                .collect();
            return Err(DdpError::UnusedParameters(names.join(", ")));
        }
        let now = probe_contract::clock::now_ns();
        for &i in &unready {
            // find_unused_parameters: an unused parameter contributes zeros to its bucket.
            self.copy_into_bucket(i, None)?;
            self.after_ready(i, now);
        }
        let locally_used: Vec<bool> = self.ready.clone();
        // Globally unused parameters keep their `.grad` untouched (PyTorch's local_used_map).
        let globally_used = if self.find_unused_parameters {
            let mut used: Vec<i32> = locally_used.iter().map(|&u| i32::from(u)).collect();
            // Issued after the buckets, like PyTorch's `local_used_map` all-reduce.
            self.pg.all_reduce(&mut used, ReduceOp::Max)?;
            used.iter().map(|&u| u > 0).collect()
        } else {
            vec![true; self.params.len()]
        };

        let mut completed = Vec::with_capacity(self.buckets.len());
        let mut first_error = None;
        for b in 0..self.buckets.len() {
            let Some(work) = self.buckets[b].work.take() else {
                continue;
            };
            if b == 0 {
                // Test-only fault injection (`DDP_PROBE_FAULT`, off by default): while bucket 0's
                // all-reduce is in flight.
                if let Err(e) =
                    crate::fault::hit(crate::fault::Point::AllReduce, self.step, Some(&self.pg))
                {
                    first_error.get_or_insert(match e {
                        crate::DdpError::Comm(c) => c,
                        other => comm::CommError::InvalidArgument(other.to_string()),
                    });
                }
            }
            let result = work.wait();
            #[cfg(feature = "cuda")]
            if let Some(range) = self.buckets[b].nvtx.take() {
                range.end();
            }
            match result {
                Ok((buffer, info)) => {
                    let bucket = &mut self.buckets[b];
                    bucket.buffer = Some(decompress(buffer, bucket.kind));
                    completed.push(Completed {
                        bucket: b,
                        first_ready: bucket.first_ready,
                        last_ready: bucket.last_ready,
                        params: bucket.params.len(),
                        info,
                        compression: self.compression,
                    });
                }
                Err(e) => {
                    let bucket = &mut self.buckets[b];
                    bucket.buffer = Some(Buffer::zeros(comm_dtype(bucket.kind)?, bucket.numel));
                    first_error.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_error {
            return Err(e.into());
        }
        let comm_done = probe_contract::clock::now_ns();
        self.write_back(&globally_used)?;
        let writeback_end = probe_contract::clock::now_ns();
        self.record(backward_end, comm_done, writeback_end, &completed);
        if !self.has_rebuilt && self.rebuild_order.is_none() && unready.is_empty() {
            self.rebuild_order = Some(self.ready_order.clone());
        }
        Ok(())
    }

    /// Waits for every bucket in flight, discarding results (after an error).
    fn drain(&mut self) {
        for bucket in &mut self.buckets {
            if let Some(work) = bucket.work.take() {
                let buffer = match work.wait() {
                    Ok((buffer, _)) => decompress(buffer, bucket.kind),
                    Err(_) => match comm_dtype(bucket.kind) {
                        Ok(dtype) => Buffer::zeros(dtype, bucket.numel),
                        Err(_) => continue,
                    },
                };
                bucket.buffer = Some(buffer);
            }
        }
    }

    /// Copies the reduced buckets into `.grad`.
    fn write_back(&mut self, globally_used: &[bool]) -> Result<()> {
        tch::no_grad(|| -> Result<()> {
            for bucket in &mut self.buckets {
                let kind = bucket.kind;
                let Some(buffer) = bucket.buffer.as_mut() else {
                    continue;
                };
                for (pos, &i) in bucket.params.iter().enumerate() {
                    if !globally_used[i] {
                        continue;
                    }
                    let param = &self.params[i];
                    // SAFETY: the view lives only for this copy, while `buffer` is borrowed.
                    let view = unsafe { view_of(buffer, kind, bucket.offsets[pos], param.numel) };
                    let mut grad = param.tensor.grad();
                    if grad.defined() {
                        grad.f_copy_(&view.f_view_as(&grad)?)?;
                    } else {
                        // A parameter unused here but used elsewhere: give it the averaged grad.
                        let g = view.f_reshape(param.tensor.size())?.copy();
                        crate::hooks::set_grad(&param.tensor, &g)?;
                    }
                }
            }
            Ok(())
        })
    }

    /// Trace records of one synchronised backward.
    fn record(
        &self,
        backward_end: u64,
        comm_done: u64,
        writeback_end: u64,
        completed: &[Completed],
    ) {
        let rec = &self.recorder;
        if !rec.is_enabled() {
            return;
        }
        let step = self.step;
        let last_grad = self
            .buckets
            .iter()
            .map(|b| b.last_ready)
            .max()
            .unwrap_or(backward_end)
            .max(self.backward_start);
        rec.span(
            SpanKind::Backward,
            step,
            self.backward_start,
            last_grad.min(backward_end),
        )
        .finish();
        for c in completed {
            rec.span(SpanKind::BucketReady, step, c.first_ready, c.last_ready)
                .bucket(c.bucket as u32)
                .params(c.params as u32)
                .bytes(self.buckets[c.bucket].bytes())
                .finish();
            let info = &c.info;
            let mut span = rec
                .span(
                    SpanKind::Collective,
                    step,
                    info.started_ns,
                    info.finished_ns,
                )
                .op("all_reduce")
                .queued(info.queued_ns)
                .bucket(c.bucket as u32)
                .bytes(info.bytes as u64)
                .params(c.params as u32)
                .seq(info.seq)
                .algo(info.algorithm.name())
                .transport(info.transport.name())
                .dtype(info.dtype.name());
            if c.compression != Compression::None {
                let mut args = probe_contract::trace::Args::new();
                args.insert("compression".into(), c.compression.name().into());
                span = span.args(args);
            }
            span.finish();
        }
        rec.span(SpanKind::Writeback, step, comm_done, writeback_end)
            .finish();
        rec.grad_ready(step, self.backward_start, self.ready_offsets.clone());
    }
}

/// The buffer that goes on the wire under `compression`.
fn compress(buffer: Buffer, compression: Compression) -> Buffer {
    match (compression, buffer) {
        (Compression::Fp16, Buffer::F32(v)) => Buffer::F16(
            v.iter()
                .map(|&x| comm::half::f16::from_f32(x).to_bits())
                .collect(),
        ),
        (Compression::Bf16, Buffer::F32(v)) => Buffer::BF16(
            v.iter()
                .map(|&x| comm::half::bf16::from_f32(x).to_bits())
                .collect(),
        ),
        (_, other) => other,
    }
}

/// The bucket's own dtype again after a compressed all-reduce.
fn decompress(buffer: Buffer, kind: Kind) -> Buffer {
    match (kind, buffer) {
        (Kind::Float, Buffer::F16(v)) => Buffer::F32(
            v.iter()
                .map(|&x| comm::half::f16::from_bits(x).to_f32())
                .collect(),
        ),
        (Kind::Float, Buffer::BF16(v)) => Buffer::F32(
            v.iter()
                .map(|&x| comm::half::bf16::from_bits(x).to_f32())
                .collect(),
        ),
        (_, other) => other,
    }
}
