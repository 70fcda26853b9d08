//! [`Ddp`], the DistributedDataParallel wrapper: parameter checks and broadcast at construction,
//! the reducer's hooks during backward, `no_sync`, and the spans of every step.
//!
//! ```no_run
//! use ddp::{Ddp, DdpOptions, Optimizer, OptimizerKind};
//! use tch::nn::{self, Module};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let pg = std::sync::Arc::new(comm::ProcessGroup::from_env(Default::default())?);
//! let vs = nn::VarStore::new(tch::Device::Cpu);
//! let model = nn::seq().add(nn::linear(vs.root() / "fc1", 30, 16, Default::default()));
//! let mut ddp = Ddp::new(&vs, pg, DdpOptions::from_env()?)?;
//! let mut opt = Optimizer::new(OptimizerKind::adam(1e-3), ddp.parameters());
//! # let (x, y) = (tch::Tensor::zeros([8, 30], tch::kind::FLOAT_CPU), tch::Tensor::zeros([8, 16], tch::kind::FLOAT_CPU));
//! ddp.begin_step();
//! let out = ddp.forward(|| model.forward(&x))?;
//! let loss = out.mse_loss(&y, tch::Reduction::Mean);
//! ddp.backward(&loss)?; // gradients are averaged across ranks when this returns
//! ddp.optimizer_step(|| opt.step())?;
//! opt.zero_grad()?;
//! ddp.end_step();
//! # Ok(())
//! # }
//! ```

use std::sync::{Arc, Mutex, MutexGuard};

use comm::ProcessGroup;
use probe_contract::recorder::Recorder;
use probe_contract::trace::{DdpConfig, Header, ParamInfo, SpanKind};
use tch::nn::VarStore;
use tch::{Kind, Tensor};

use crate::buckets::{BucketCapConfig, ParamSpec, ParamSpecExt};
use crate::error::{DdpError, Result};
use crate::hooks::GradHooks;
use crate::reducer::{comm_dtype, Compression, ParamEntry, Reducer};

/// Environment variable through which `ddp-probe run --bucket-cap-mb` reaches the program.
pub use probe_contract::env::BUCKET_CAP_MB as BUCKET_CAP_ENV;
/// Environment variable through which `ddp-probe run --bucket-cap-mb-list` reaches the program.
pub use probe_contract::env::BUCKET_CAP_MB_LIST as BUCKET_CAP_LIST_ENV;
/// Environment variable selecting gradient compression for a run: `none`, `fp16` or `bf16`.
pub use probe_contract::env::COMPRESSION as COMPRESSION_ENV;

/// Options of [`Ddp::new`], with PyTorch's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct DdpOptions {
    /// `bucket_cap_mb`; `None` is PyTorch's default of 25 MiB with a 1 MiB first bucket.
    pub bucket_cap_mb: Option<f64>,
    /// `bucket_cap_mb_list` (PyTorch 2.13): one cap per bucket in launch order, the last one for
    /// all further buckets; it overrides `bucket_cap_mb` (whose value becomes the list's largest).
    pub bucket_cap_mb_list: Option<Vec<f64>>,
    /// `find_unused_parameters`: tolerate parameters that get no gradient in a step.
    pub find_unused_parameters: bool,
    /// `broadcast_buffers`: broadcast rank 0's buffers before every forward.
    pub broadcast_buffers: bool,
    /// Gradient compression for the all-reduce.
    pub compression: Compression,
}

impl Default for DdpOptions {
    fn default() -> Self {
        Self {
            bucket_cap_mb: None,
            bucket_cap_mb_list: None,
            find_unused_parameters: false,
            broadcast_buffers: true,
            compression: Compression::None,
        }
    }
}

impl DdpOptions {
    /// The defaults, with `bucket_cap_mb` from `DDP_PROBE_BUCKET_CAP_MB` (which
    /// `ddp-probe run --bucket-cap-mb` sets) and the compression from `DDP_PROBE_COMPRESSION`.
    pub fn from_env() -> Result<Self> {
        let mut options = Self::default();
        if let Ok(text) = std::env::var(COMPRESSION_ENV) {
            options.compression = match text.trim().to_ascii_lowercase().as_str() {
                "" | "none" => Compression::None,
                "fp16" => Compression::Fp16,
                "bf16" => Compression::Bf16,
                _ => {
                    return Err(DdpError::Config(format!(
                        "{COMPRESSION_ENV}={text:?} is not a compression: use none, fp16 or bf16"
                    )))
                }
            };
        }
        if let Ok(text) = std::env::var(BUCKET_CAP_ENV) {
            let mb: f64 = text.trim().parse().map_err(|_| {
                DdpError::Config(format!(
                    "{BUCKET_CAP_ENV}={text:?} is not a number of MiB (e.g. 25 or 2.5)"
                ))
            })?;
            options.bucket_cap_mb = Some(mb);
        }
        if let Ok(text) = std::env::var(BUCKET_CAP_LIST_ENV) {
            let list = parse_cap_list(&text)
                .map_err(|e| DdpError::Config(format!("{BUCKET_CAP_LIST_ENV}={text:?}: {e}")))?;
            options.bucket_cap_mb_list = Some(list);
        }
        Ok(options)
    }

    /// Sets `bucket_cap_mb`.
    pub fn bucket_cap_mb(mut self, mb: f64) -> Self {
        self.bucket_cap_mb = Some(mb);
        self
    }

    /// Sets `bucket_cap_mb_list`.
    pub fn bucket_cap_mb_list(mut self, list: Vec<f64>) -> Self {
        self.bucket_cap_mb_list = Some(list);
        self
    }

    /// Sets `find_unused_parameters`.
    pub fn find_unused_parameters(mut self, on: bool) -> Self {
        self.find_unused_parameters = on;
        self
    }

    /// Sets the gradient compression.
    pub fn compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }
}

/// Parses a `bucket_cap_mb_list` written as comma-separated MiB (`"1,4,25"`); the error says
/// what is wrong with it.
pub fn parse_cap_list(text: &str) -> std::result::Result<Vec<f64>, String> {
    let list = text
        .split(',')
        .map(|item| {
            let item = item.trim();
            match item.parse::<f64>() {
                Ok(mb) if mb.is_finite() && mb > 0.0 => Ok(mb),
                _ => Err(format!(
                    "{item:?} is not a positive number of MiB; write the caps as e.g. 1,4,25"
                )),
            }
        })
        .collect::<std::result::Result<Vec<f64>, String>>()?;
    Ok(list)
}

/// Tensors with their qualified names (`"fc1.weight"`).
pub type NamedTensors = Vec<(String, Tensor)>;

/// The parameters (trainable, in registration order) and buffers of a `VarStore`, with names.
pub fn named_parameters_and_buffers(vs: &VarStore) -> (NamedTensors, NamedTensors) {
    let vars = vs.variables_.lock().unwrap_or_else(|e| e.into_inner());
    let mut named: Vec<(&String, &Tensor)> = vars.named_variables.iter().collect();
    named.sort_by(|a, b| a.0.cmp(b.0));
    let key = |t: &Tensor| (t.data_ptr() as usize, t.size());
    let mut taken = vec![false; named.len()];
    let mut params = Vec::with_capacity(vars.trainable_variables.len());
    for var in &vars.trainable_variables {
        let k = key(&var.tensor);
        let found = named
            .iter()
            .enumerate()
            .find(|(j, (_, t))| !taken[*j] && key(t) == k);
        let name = match found {
            Some((j, (name, _))) => {
                taken[j] = true;
                (*name).clone()
            }
            None => format!("param{}", params.len()),
        };
        params.push((name, var.tensor.shallow_clone()));
    }
    let buffers = named
        .iter()
        .enumerate()
        .filter(|(j, _)| !taken[*j])
        .map(|(_, (n, t))| ((*n).clone(), t.shallow_clone()))
        .collect();
    (params, buffers)
}

/// DistributedDataParallel over a model's parameters.
pub struct Ddp {
    pg: Arc<ProcessGroup>,
    reducer: Arc<Mutex<Reducer>>,
    _hooks: GradHooks,
    buffers: NamedTensors,
    options: DdpOptions,
    recorder: Arc<Recorder>,
    /// Steps whose backward was synchronised so far; the current step's number.
    step: u64,
    step_start: Option<u64>,
    sync: bool,
}

impl std::fmt::Debug for Ddp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ddp")
            .field("rank", &self.pg.rank())
            .field("world_size", &self.pg.world_size())
            .field("options", &self.options)
            .field("step", &self.step)
            .finish_non_exhaustive()
    }
}

impl Ddp {
    /// Wraps the trainable variables of `vs` (registration order = creation order, as
    /// `module.parameters()`); records to `$DDP_PROBE_TRACE_DIR` when the launcher set it.
    pub fn new(vs: &VarStore, pg: Arc<ProcessGroup>, options: DdpOptions) -> Result<Ddp> {
        let (params, buffers) = named_parameters_and_buffers(vs);
        let header = probe_contract::recorder::header_from_env()
            .map_err(|e| DdpError::Config(format!("reading the torchrun environment: {e}")))?;
        let header = Header {
            rank: pg.rank() as u32,
            world_size: pg.world_size() as u32,
            ..header
        };
        Self::with_recorder(params, buffers, pg, options, header, Recorder::from_env)
    }

    /// Wraps explicit named parameters and buffers; `make_recorder` opens the recorder once the
    /// header is complete (DDP configuration, bucket layout, clock offset filled in).
    pub fn with_recorder(
        params: NamedTensors,
        buffers: NamedTensors,
        pg: Arc<ProcessGroup>,
        options: DdpOptions,
        header: Header,
        make_recorder: impl FnOnce(Header) -> std::io::Result<Recorder>,
    ) -> Result<Ddp> {
        if params.is_empty() {
            return Err(DdpError::Config(
                "the model has no trainable parameters: there is nothing for DDP to synchronise"
                    .into(),
            ));
        }
        let caps =
            BucketCapConfig::new(options.bucket_cap_mb, options.bucket_cap_mb_list.as_deref())?;
        let mut entries = Vec::with_capacity(params.len());
        for (i, (name, tensor)) in params.into_iter().enumerate() {
            let kind = tensor.f_kind()?;
            comm_dtype(kind)?;
            entries.push(ParamEntry {
                spec: ParamSpec::of_tensor(&tensor, i, false)?,
                numel: tensor.numel(),
                kind,
                name,
                tensor,
            });
        }
        verify_shapes(&pg, &entries)?;
        let start = probe_contract::clock::now_ns();
        broadcast_tensors(&pg, entries.iter().map(|e| &e.tensor))?;
        broadcast_tensors(&pg, buffers.iter().map(|(_, t)| t))?;
        let end = probe_contract::clock::now_ns();

        let param_infos: Vec<ParamInfo> = entries
            .iter()
            .enumerate()
            .map(|(i, e)| ParamInfo {
                index: i as u32,
                name: e.name.clone(),
                shape: e.tensor.size().iter().map(|&d| d as u64).collect(),
                dtype: dtype_name(e.kind).to_owned(),
                numel: e.numel as u64,
                bytes: (e.numel * e.kind.elt_size_in_bytes()) as u64,
            })
            .collect();
        let layout = crate::buckets::initial_bucket_assignment(
            &entries.iter().map(|e| e.spec).collect::<Vec<_>>(),
            &caps,
            false,
            options.find_unused_parameters,
        )?;
        let recorder = make_recorder(
            header
                .with_clock_offset(pg.clock_offset_ns(), pg.clock_uncertainty_ns())
                .with_ddp(DdpConfig {
                    backend: pg.transport().name().to_owned(),
                    bucket_cap_mb: Some(caps.bucket_bytes_cap as f64 / (1024.0 * 1024.0)),
                    first_bucket_bytes: Some(caps.first_bucket_bytes_cap),
                    bucket_cap_mb_list: options.bucket_cap_mb_list.clone(),
                    find_unused_parameters: options.find_unused_parameters,
                    buffers: Vec::new(),
                    static_graph: false,
                    gradient_as_bucket_view: false,
                    params: param_infos,
                    buckets: layout
                        .iter()
                        .enumerate()
                        .map(|(id, b)| probe_contract::trace::BucketInfo {
                            id: id as u32,
                            params: b.indices.iter().map(|&i| i as u32).collect(),
                            bytes: b
                                .indices
                                .iter()
                                .filter_map(|&i| entries[i].spec.bytes())
                                .sum(),
                        })
                        .collect(),
                    group_ranks: Vec::new(),
                }),
        )
        .map_err(|e| DdpError::Config(format!("cannot open the trace file: {e}")))?;
        let recorder = Arc::new(recorder);
        // What the calibration needs to know before the reducer takes the parameters.
        let gradient_bytes: u64 = entries.iter().filter_map(|e| e.spec.bytes()).sum();
        let on_cpu = entries
            .iter()
            .all(|e| e.tensor.device() == tch::Device::Cpu);
        let reducer = Reducer::new(
            entries,
            Arc::clone(&pg),
            Arc::clone(&recorder),
            caps,
            layout,
            options.find_unused_parameters,
            options.compression,
        )?;
        recorder
            .span(SpanKind::Collective, 0, start, end)
            .op("broadcast")
            .name("initial parameter broadcast")
            .finish();
        if let Some(budget) = crate::calibrate::budget_from_env() {
            crate::calibrate::calibrate(&pg, &recorder, gradient_bytes, on_cpu, budget)?;
        }

        let reducer = Arc::new(Mutex::new(reducer));
        let hook_reducer = Arc::clone(&reducer);
        let callback: Arc<crate::hooks::GradReadyCallback> = Arc::new(move |index| {
            let mut r = hook_reducer.lock().unwrap_or_else(|e| e.into_inner());
            r.mark_ready(index)
        });
        let hooks = {
            let r = lock(&reducer);
            GradHooks::register_indexed(
                r.params.iter().enumerate().map(|(i, p)| (i, &p.tensor)),
                callback,
            )?
        };
        Ok(Ddp {
            pg,
            reducer,
            _hooks: hooks,
            buffers,
            options,
            recorder,
            step: 0,
            step_start: None,
            sync: true,
        })
    }

    /// The process group.
    pub fn process_group(&self) -> &Arc<ProcessGroup> {
        &self.pg
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.pg.rank()
    }

    /// Number of ranks.
    pub fn world_size(&self) -> usize {
        self.pg.world_size()
    }

    /// The options in force.
    pub fn options(&self) -> &DdpOptions {
        &self.options
    }

    /// The recorder spans go to (disabled unless the launcher asked for traces).
    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    /// Shallow clones of the parameters, in registration order (for an optimizer).
    pub fn parameters(&self) -> Vec<Tensor> {
        lock(&self.reducer)
            .params
            .iter()
            .map(|p| p.tensor.shallow_clone())
            .collect()
    }

    /// Parameter names, in registration order.
    pub fn parameter_names(&self) -> Vec<String> {
        lock(&self.reducer)
            .params
            .iter()
            .map(|p| p.name.clone())
            .collect()
    }

    /// The current bucket layout: parameter indices per bucket, in reduction order.
    pub fn bucket_layout(&self) -> Vec<Vec<usize>> {
        lock(&self.reducer)
            .layout_info()
            .into_iter()
            .map(|b| b.params.into_iter().map(|i| i as usize).collect())
            .collect()
    }

    /// The number of the current step (0 for the first).
    pub fn step(&self) -> u64 {
        self.step
    }

    /// Marks the start of a training step (for the trace's `step` span).
    pub fn begin_step(&mut self) {
        self.step_start = Some(probe_contract::clock::now_ns());
    }

    /// Marks the end of a training step and moves to the next step number.
    pub fn end_step(&mut self) {
        let end = probe_contract::clock::now_ns();
        if let Some(start) = self.step_start.take() {
            self.recorder
                .span(SpanKind::Step, self.step, start, end)
                .finish();
        }
        self.step += 1;
    }

    /// Runs `f` and records it as a span of `kind` in the current step (data loading:
    /// [`SpanKind::DataWait`]; checkpoints: [`SpanKind::CheckpointSave`], ...).
    pub fn timed<T>(&self, kind: SpanKind, f: impl FnOnce() -> T) -> T {
        let start = probe_contract::clock::now_ns();
        // Nsight Systems shows the same ranges (a no-op without NVTX).
        #[cfg(feature = "cuda")]
        let _range = crate::cuda::nvtx::range(&crate::cuda::nvtx::name(kind, None, None, None));
        let out = f();
        self.recorder
            .span(kind, self.step, start, probe_contract::clock::now_ns())
            .finish();
        out
    }

    /// The forward pass: first the one-time bucket rebuild and the buffer broadcast PyTorch
    /// does before forward, then `f`, recorded as the step's `forward` span.
    pub fn forward<T>(&mut self, f: impl FnOnce() -> T) -> Result<T> {
        self.pre_forward()?;
        let (pg, step) = (&self.pg, self.step);
        let mut injected = Ok(());
        let out = self.timed(SpanKind::Forward, || {
            // Test-only fault injection (`DDP_PROBE_FAULT`, off by default): inside the span.
            injected = crate::fault::hit(crate::fault::Point::Forward, step, Some(pg));
            f()
        });
        injected.map(|()| out)
    }

    fn pre_forward(&mut self) -> Result<()> {
        if self.sync {
            let mut r = lock(&self.reducer);
            if r.rebuild_due() {
                r.step = self.step;
                r.rebuild_buckets()?;
            }
        }
        if self.options.broadcast_buffers && !self.buffers.is_empty() && self.sync {
            broadcast_tensors(&self.pg, self.buffers.iter().map(|(_, t)| t))?;
        }
        Ok(())
    }

    /// Runs `loss.backward()`; unless inside [`Ddp::no_sync`], the gradients are all-reduced in
    /// buckets while backward runs and, when this returns, every parameter's `.grad` holds the
    /// average over ranks.
    pub fn backward(&mut self, loss: &Tensor) -> Result<()> {
        if !self.sync {
            lock(&self.reducer).disarm();
            loss.f_backward()?;
            return Ok(());
        }
        {
            let mut r = lock(&self.reducer);
            if r.rebuild_due() {
                r.step = self.step;
                r.rebuild_buckets()?;
            }
            r.prepare_for_backward(self.step);
        }
        let result = loss.f_backward();
        let mut r = lock(&self.reducer);
        if let Err(e) = result {
            r.disarm();
            let _ = r.finalize_backward();
            return Err(e.into());
        }
        r.finalize_backward()
    }

    /// Runs `f` with gradient synchronisation off (gradient accumulation): backward passes
    /// inside only accumulate into `.grad`; the first [`Ddp::backward`] after it synchronises
    /// the accumulated gradients.
    pub fn no_sync<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let previous = self.sync;
        self.sync = false;
        let out = f(self);
        self.sync = previous;
        out
    }

    /// Runs the optimizer step `f`, recorded as the step's `optimizer` span.
    pub fn optimizer_step<T>(&self, f: impl FnOnce() -> T) -> T {
        self.timed(SpanKind::Optimizer, f)
    }

    /// Number of gradient buckets.
    pub fn num_buckets(&self) -> usize {
        lock(&self.reducer).num_buckets()
    }

    /// Flushes the trace and writes its end record (`status`: "ok", "error", ...).
    pub fn finish(&self, status: &str) -> Result<()> {
        self.recorder
            .finish(status, None)
            .map_err(|e| DdpError::Config(format!("writing the end of the trace: {e}")))
    }
}

fn lock(reducer: &Mutex<Reducer>) -> MutexGuard<'_, Reducer> {
    reducer.lock().unwrap_or_else(|e| e.into_inner())
}

/// PyTorch's name of a dtype, as the trace writes it.
pub(crate) fn dtype_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Float => "float32",
        Kind::Double => "float64",
        Kind::Half => "float16",
        Kind::BFloat16 => "bfloat16",
        Kind::Int => "int32",
        Kind::Int64 => "int64",
        Kind::Uint8 => "uint8",
        Kind::Int8 => "int8",
        Kind::Int16 => "int16",
        Kind::Bool => "bool",
        _ => "other",
    }
}

/// `_verify_param_shape_across_processes`: every rank must have the same parameters, in the same
/// order, with the same shapes and dtypes; a mismatch names the parameter and the ranks.
fn verify_shapes(pg: &ProcessGroup, params: &[ParamEntry]) -> Result<()> {
    let world = pg.world_size();
    if world == 1 {
        return Ok(());
    }
    // Each rank's parameter count first.
    let mut counts = vec![0i64; world];
    pg.all_gather(&[params.len() as i64], &mut counts)?;
    if counts.iter().any(|&c| c != counts[0]) {
        let list: Vec<String> = counts
            .iter()
            .enumerate()
            .map(|(r, c)| format!("rank {r}: {c}"))
            .collect();
        return Err(DdpError::ParamMismatch(format!(
            "the ranks have different numbers of parameters ({}); every rank must build the same model",
            list.join(", ")
        )));
    }
    // Then a fingerprint per parameter: dtype, rank (ndim), dims (up to 8), gathered from all.
    const WIDTH: usize = 10;
    let mut mine = Vec::with_capacity(params.len() * WIDTH);
    for p in params {
        let size = p.tensor.size();
        mine.push(p.kind as i64);
        mine.push(size.len() as i64);
        for k in 0..WIDTH - 2 {
            mine.push(size.get(k).copied().unwrap_or(-1));
        }
    }
    let mut all = vec![0i64; mine.len() * world];
    pg.all_gather(&mine, &mut all)?;
    let per_rank = mine.len();
    for (i, p) in params.iter().enumerate() {
        let at = |r: usize| &all[r * per_rank + i * WIDTH..r * per_rank + (i + 1) * WIDTH];
        let reference = at(0);
        let differing: Vec<usize> = (1..world).filter(|&r| at(r) != reference).collect();
        if !differing.is_empty() {
            let describe = |r: usize| {
                let f = at(r);
                let dims: Vec<String> = f[2..2 + f[1].clamp(0, 8) as usize]
                    .iter()
                    .map(|d| d.to_string())
                    .collect();
                format!("[{}]", dims.join(", "))
            };
            let others: Vec<String> = differing
                .iter()
                .map(|&r| format!("{} on rank {r}", describe(r)))
                .collect();
            return Err(DdpError::ParamMismatch(format!(
                "parameter {i} ({}) has shape/dtype {} on rank 0 but {}; every rank must build the same model",
                p.name,
                describe(0),
                others.join(", ")
            )));
        }
    }
    Ok(())
}

/// Broadcasts tensors from rank 0 in place, coalesced per dtype (`_sync_module_states`).
fn broadcast_tensors<'a>(
    pg: &ProcessGroup,
    tensors: impl Iterator<Item = &'a Tensor>,
) -> Result<()> {
    if pg.world_size() == 1 {
        return Ok(());
    }
    let tensors: Vec<&Tensor> = tensors.collect();
    let mut kinds: Vec<Kind> = Vec::new();
    for t in &tensors {
        let k = t.f_kind()?;
        if !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    tch::no_grad(|| -> Result<()> {
        for kind in kinds {
            let group: Vec<&&Tensor> = tensors.iter().filter(|t| t.kind() == kind).collect();
            let flat = Tensor::f_cat(
                &group
                    .iter()
                    .map(|t| t.f_reshape([-1]))
                    .collect::<std::result::Result<Vec<_>, _>>()?,
                0,
            )?;
            let numel = flat.numel();
            let mut buffer = comm::Buffer::zeros(comm_dtype(kind)?, numel);
            {
                // SAFETY: the view lives only in this block while `buffer` is borrowed.
                let mut view = unsafe { crate::reducer::view_of(&mut buffer, kind, 0, numel) };
                view.f_copy_(&flat)?;
            }
            let work = pg.broadcast_async(buffer, 0);
            let (mut buffer, _) = work.wait()?;
            let mut offset = 0;
            for t in group {
                let n = t.numel();
                // SAFETY: as above.
                let view = unsafe { crate::reducer::view_of(&mut buffer, kind, offset, n) };
                let mut target = t.shallow_clone();
                target.f_copy_(&view.f_view_as(&target)?)?;
                offset += n;
            }
        }
        Ok(())
    })
}

/// Creates the process group the way `torch.distributed.init_process_group("env://")` does:
/// from torchrun's environment (rank 0 hosts the rendezvous store on `MASTER_ADDR:MASTER_PORT`),
/// or, when `WORLD_SIZE` is not set, a one-rank group so the same program also runs alone.
pub fn init_process_group(options: comm::GroupOptions) -> Result<Arc<ProcessGroup>> {
    let distributed =
        std::env::var_os("WORLD_SIZE").is_some() || std::env::var_os("RANK").is_some();
    // A malformed `DDP_PROBE_FAULT` is reported here, before any training.
    if let Some(world) = crate::fault::world_size_override()? {
        eprintln!("ddp-probe fault injection: this rank claims world size {world}");
        std::env::set_var("WORLD_SIZE", world.to_string());
    }
    if distributed {
        return Ok(Arc::new(ProcessGroup::from_env(options)?));
    }
    let alone = comm::EnvRendezvous::alone(options.timeout)?;
    let pg = ProcessGroup::new(0, 1, &alone.store, options)?;
    drop(alone); // the client, then the store (the group needs neither now)
    Ok(Arc::new(pg))
}
