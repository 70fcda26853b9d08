//! Training checkpoints: written atomically by rank 0, found again after a crash, loaded on
//! every rank.
//!
//! A [`Checkpoint`] holds what resuming a run needs: the model's parameters and buffers by
//! name, the optimizer state ([`Optimizer::state_tensors`]), the epoch and step, the sampler's
//! epoch and seed, the random generators' states ([`RngState`]: libtorch's default CPU
//! generator, plus every CUDA device's when CUDA is available), the loss scaler's state
//! ([`GradScalerState`]) and free-form user metadata (a JSON string). [`CheckpointManager`]
//! names, writes, lists, finds and prunes the checkpoints of one directory.
//!
//! # File format and layout
//!
//! One [safetensors](https://github.com/huggingface/safetensors) file, `ckpt-<step>.safetensors`
//! (written with tch's `Tensor::write_safetensors`): an 8-byte little-endian header length, a
//! JSON header giving each entry's dtype, shape and byte range, then the raw little-endian data.
//! Tensors are stored bit for bit, so a round trip restores identical values. The entries:
//!
//! | entry | dtype, shape | content |
//! |---|---|---|
//! | `meta/format_version` | I64 `[]` | [`FORMAT_VERSION`] (2) |
//! | `meta/checksums` | U8 `[n]` | one line per other entry, `<name>\t<xxh3-64 hex>`, over the entry's name, dtype, shape and bytes |
//! | `meta/epoch`, `meta/step` | I64 `[]` | epoch and step (u64 bits) |
//! | `meta/user_json` | U8 `[n]` | user metadata, UTF-8 (conventionally JSON), if given |
//! | `model/<name>` | as saved | a parameter or buffer, by its `VarStore` name |
//! | `optim/<index>.<field>` | as saved | optimizer state, see [`Optimizer::state_tensors`] |
//! | `sampler/epoch`, `sampler/seed` | I64 `[]` | [`SamplerState`] (u64 bits), if given |
//! | `rng/cpu` | U8 `[n]` | the default CPU generator's state (`torch.get_rng_state()`), if given |
//! | `rng/cuda/<i>` | U8 `[n]` | CUDA device `i`'s generator state, if captured |
//! | `scaler/scale` | F32 `[]` | [`GradScalerState::scale`], if given |
//! | `scaler/growth_factor`, `scaler/backoff_factor` | F64 `[]` | the scaler's factors |
//! | `scaler/growth_interval`, `scaler/growth_tracker` | I64 `[]` | interval and tracker |
//!
//! Loading reads the file's bytes and checks them in plain Rust before libtorch sees any
//! ([`probe_contract::checkpoint_format`], which has a fuzz target): it rejects files without
//! `meta/format_version`, other format versions, unknown entries, incomplete groups
//! (`sampler/*`, `scaler/*`), scalars of the wrong dtype and dimensions past `i64::MAX`, each
//! with an error naming the file and the entry. It also checks every entry against its
//! checksum: a flipped bit in the data, or a header whose dtype or shape was changed, is
//! refused naming the file and the entry, as is an entry missing from the list or added to it.
//! A [`CheckpointManager`] then falls back to the previous checkpoint of its rotation
//! ([`CheckpointManager::load_latest_valid`] says which it refused and why).
//!
//! # Atomic writes
//!
//! [`Checkpoint::save`] writes to a temporary file in the target's directory
//! (`.ckpt-<step>.safetensors.tmp-<pid>-<n>`), fsyncs it, renames it over the target and
//! fsyncs the directory. A checkpoint file therefore either exists complete or not at all, and
//! a process killed mid-write leaves only a temporary file, which [`CheckpointManager::latest`]
//! ignores (and which the next [`CheckpointManager::save`] removes once its writer is dead).
//! [`CheckpointManager::latest`] also checks each candidate's structure (header readable, file
//! exactly as long as the header says) before returning it, so a checkpoint truncated by other
//! means is skipped in favour of the previous one. After a new checkpoint is durable the manager
//! deletes older ones, keeping the last N.
//!
//! # Distributed use
//!
//! Rank 0 writes ([`CheckpointManager::save_on_rank0`] builds the checkpoint there only, and
//! tells every rank whether the write succeeded); every rank then loads the same file and
//! applies it ([`Checkpoint::apply_to_var_store`], [`Checkpoint::apply_to_optimizer`],
//! [`Checkpoint::apply_to_scaler`], [`Checkpoint::restore_rng`]). The RNG state saved is rank
//! 0's, so after a restore every rank continues from rank 0's generator state.

use std::collections::{BTreeSet, HashMap};
use std::ffi::{c_char, c_void, CStr};
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};

use comm::ProcessGroup;
use tch::nn::VarStore;
use tch::{Device, Kind, Tensor};

use probe_contract::checkpoint_format::{self as format, entry, Decoded, ElementType, Entry};

use crate::amp::{GradScaler, GradScalerState};
use crate::error::{DdpError, Result};
use crate::optim::Optimizer;

/// Version of the layout described in the module doc, stored as `meta/format_version`: 2 adds
/// `meta/checksums`; version 1 files (without checksums) still load.
pub use probe_contract::checkpoint_format::FORMAT_VERSION;

/// Where a `DistributedSampler` stands (defined with the file format, which reads it).
pub use probe_contract::checkpoint_format::SamplerState;

/// Extension of checkpoint files.
pub const CHECKPOINT_EXTENSION: &str = "safetensors";

/// Distinguishes the temporary files of one process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

// ----- random generator states -----

extern "C" {
    fn ddp_rng_get_state(device_type: i32, index: i64, err: *mut *mut c_char) -> *mut c_void;
    fn ddp_rng_set_state(
        device_type: i32,
        index: i64,
        state: *const c_void,
        err: *mut *mut c_char,
    ) -> i32;
    fn ddp_error_free(msg: *mut c_char);
}

/// `c10::DeviceType::CPU` and `CUDA`.
const CPU_DEVICE_TYPE: i32 = 0;
const CUDA_DEVICE_TYPE: i32 = 1;

/// Takes ownership of a message the shim allocated.
fn take_message(err: *mut c_char) -> String {
    if err.is_null() {
        return "libtorch reported an error without a message".to_owned();
    }
    // SAFETY: the shim stores a NUL-terminated malloc'ed string, freed once here.
    unsafe {
        let text = CStr::from_ptr(err).to_string_lossy().into_owned();
        ddp_error_free(err);
        text
    }
}

fn generator_name(device_type: i32, index: i64) -> String {
    if device_type == CPU_DEVICE_TYPE {
        "the default CPU generator".to_owned()
    } else {
        format!("the default generator of CUDA device {index}")
    }
}

fn get_state(device_type: i32, index: i64) -> Result<Tensor> {
    let mut err: *mut c_char = ptr::null_mut();
    // SAFETY: `err` is valid for writes; on success the shim returns a heap-allocated
    // `at::Tensor*` that nobody else owns, which tch's `Tensor` then owns (and deletes).
    let raw = unsafe { ddp_rng_get_state(device_type, index, &mut err) };
    if raw.is_null() {
        return Err(DdpError::Checkpoint(format!(
            "reading the state of {}: {}",
            generator_name(device_type, index),
            take_message(err)
        )));
    }
    // SAFETY: see above.
    Ok(unsafe { Tensor::from_ptr(raw.cast()) })
}

fn set_state(device_type: i32, index: i64, state: &Tensor) -> Result<()> {
    if state.kind() != Kind::Uint8 || state.dim() != 1 {
        return Err(DdpError::Checkpoint(format!(
            "a generator state must be a 1-d uint8 tensor, not {:?} of shape {:?}",
            state.kind(),
            state.size()
        )));
    }
    let state = state.f_to_device(Device::Cpu)?.f_contiguous()?;
    let mut err: *mut c_char = ptr::null_mut();
    // SAFETY: `state.as_ptr()` is tch's `at::Tensor*`, valid while `state` lives; `err` is
    // valid for writes.
    let rc = unsafe { ddp_rng_set_state(device_type, index, state.as_ptr().cast(), &mut err) };
    if rc != 0 {
        return Err(DdpError::Checkpoint(format!(
            "setting the state of {}: {}",
            generator_name(device_type, index),
            take_message(err)
        )));
    }
    Ok(())
}

/// The state of libtorch's default CPU generator (`torch.get_rng_state()`): a 1-d uint8 tensor.
pub fn cpu_rng_state() -> Result<Tensor> {
    get_state(CPU_DEVICE_TYPE, 0)
}

/// Restores the default CPU generator from [`cpu_rng_state`] (`torch.set_rng_state(state)`).
pub fn set_cpu_rng_state(state: &Tensor) -> Result<()> {
    set_state(CPU_DEVICE_TYPE, 0, state)
}

/// The state of CUDA device `index`'s default generator (`torch.cuda.get_rng_state(index)`).
pub fn cuda_rng_state(index: usize) -> Result<Tensor> {
    get_state(CUDA_DEVICE_TYPE, cuda_index(index)?)
}

/// Restores CUDA device `index`'s default generator (`torch.cuda.set_rng_state(state, index)`).
pub fn set_cuda_rng_state(index: usize, state: &Tensor) -> Result<()> {
    set_state(CUDA_DEVICE_TYPE, cuda_index(index)?, state)
}

fn cuda_index(index: usize) -> Result<i64> {
    i64::try_from(index)
        .map_err(|_| DdpError::Checkpoint(format!("CUDA device index {index} is out of range")))
}

/// The states of libtorch's default random generators.
#[derive(Debug)]
pub struct RngState {
    /// The default CPU generator's state.
    pub cpu: Tensor,
    /// The default generator state of each CUDA device, by device index.
    pub cuda: Vec<Tensor>,
}

impl RngState {
    /// The current states: the CPU generator's, and every CUDA device's when CUDA is available.
    pub fn capture() -> Result<RngState> {
        let cpu = cpu_rng_state()?;
        let mut cuda = Vec::new();
        if tch::Cuda::is_available() {
            let count = usize::try_from(tch::Cuda::device_count()).unwrap_or(0);
            for i in 0..count {
                cuda.push(cuda_rng_state(i)?);
            }
        }
        Ok(RngState { cpu, cuda })
    }

    /// Sets every generator to the saved state. CUDA states need as many CUDA devices.
    pub fn restore(&self) -> Result<()> {
        if !self.cuda.is_empty() {
            let available = if tch::Cuda::is_available() {
                usize::try_from(tch::Cuda::device_count()).unwrap_or(0)
            } else {
                0
            };
            if available < self.cuda.len() {
                return Err(DdpError::Checkpoint(format!(
                    "the RNG state has {} CUDA generator states, but {available} CUDA devices \
                     are available",
                    self.cuda.len()
                )));
            }
        }
        set_cpu_rng_state(&self.cpu)?;
        for (i, state) in self.cuda.iter().enumerate() {
            set_cuda_rng_state(i, state)?;
        }
        Ok(())
    }
}

// ----- checkpoint content -----

/// Everything one checkpoint holds (see the module doc for the file layout).
#[derive(Debug, Default)]
pub struct Checkpoint {
    /// Epoch of the run when saved.
    pub epoch: u64,
    /// Step of the run when saved (it also names the file).
    pub step: u64,
    /// Parameters and buffers, by name.
    pub model: Vec<(String, Tensor)>,
    /// Optimizer state, as [`Optimizer::state_tensors`] names it.
    pub optimizer: Vec<(String, Tensor)>,
    /// The sampler's epoch and seed.
    pub sampler: Option<SamplerState>,
    /// Random generator states.
    pub rng: Option<RngState>,
    /// Loss scaler state.
    pub scaler: Option<GradScalerState>,
    /// Free-form metadata, conventionally JSON (stored verbatim, not parsed).
    pub user_metadata: Option<String>,
}

impl Checkpoint {
    /// An empty checkpoint of `step` in `epoch`; add content with the `with_*` methods.
    pub fn new(epoch: u64, step: u64) -> Self {
        Self {
            epoch,
            step,
            ..Self::default()
        }
    }

    /// Adds every variable of `vs` (trainable parameters and buffers), by name. The tensors are
    /// shallow clones: save before the next update changes them.
    pub fn with_var_store(mut self, vs: &VarStore) -> Self {
        let mut named: Vec<(String, Tensor)> = vs.variables().into_iter().collect();
        named.sort_by(|a, b| a.0.cmp(&b.0));
        self.model.extend(named);
        self
    }

    /// Adds named model tensors (parameters or buffers not held by a `VarStore`).
    pub fn with_named_tensors(mut self, named: impl IntoIterator<Item = (String, Tensor)>) -> Self {
        self.model.extend(named);
        self
    }

    /// Adds `optimizer`'s state.
    pub fn with_optimizer(mut self, optimizer: &Optimizer) -> Self {
        self.optimizer = optimizer.state_tensors();
        self
    }

    /// Records the sampler's epoch and seed.
    pub fn with_sampler(mut self, epoch: u64, seed: u64) -> Self {
        self.sampler = Some(SamplerState { epoch, seed });
        self
    }

    /// Captures the current random generator states ([`RngState::capture`]).
    pub fn with_rng(mut self) -> Result<Self> {
        self.rng = Some(RngState::capture()?);
        Ok(self)
    }

    /// Records `scaler`'s state (nothing when it is disabled).
    pub fn with_scaler(mut self, scaler: &GradScaler) -> Self {
        self.scaler = scaler.state();
        self
    }

    /// Records free-form metadata (conventionally a JSON document).
    pub fn with_user_metadata(mut self, json: impl Into<String>) -> Self {
        self.user_metadata = Some(json.into());
        self
    }

    /// The named tensors of the file, in the layout of the module doc.
    fn entries(&self) -> Result<Vec<(String, Tensor)>> {
        let mut out: Vec<(String, Tensor)> = vec![
            (entry::VERSION.to_owned(), scalar(FORMAT_VERSION)?),
            (entry::EPOCH.to_owned(), scalar(self.epoch as i64)?),
            (entry::STEP.to_owned(), scalar(self.step as i64)?),
        ];
        if let Some(user) = &self.user_metadata {
            out.push((entry::USER.to_owned(), bytes_tensor(user.as_bytes())?));
        }
        for (name, t) in &self.model {
            if name.is_empty() {
                return Err(DdpError::Checkpoint(
                    "a model tensor has an empty name".to_owned(),
                ));
            }
            let entry = format!("{}{name}", entry::MODEL_PREFIX);
            let t = storable(&entry, t)?;
            out.push((entry, t));
        }
        for (name, t) in &self.optimizer {
            let entry = format!("{}{name}", entry::OPTIM_PREFIX);
            let t = storable(&entry, t)?;
            out.push((entry, t));
        }
        if let Some(s) = self.sampler {
            out.push((entry::SAMPLER_EPOCH.to_owned(), scalar(s.epoch as i64)?));
            out.push((entry::SAMPLER_SEED.to_owned(), scalar(s.seed as i64)?));
        }
        if let Some(rng) = &self.rng {
            out.push((
                entry::RNG_CPU.to_owned(),
                storable(entry::RNG_CPU, &rng.cpu)?,
            ));
            for (i, state) in rng.cuda.iter().enumerate() {
                let name = format!("{}{i}", entry::RNG_CUDA_PREFIX);
                let t = storable(&name, state)?;
                out.push((name, t));
            }
        }
        if let Some(s) = self.scaler {
            out.push((entry::SCALER_SCALE.to_owned(), scalar(s.scale)?));
            out.push((
                entry::SCALER_GROWTH_FACTOR.to_owned(),
                scalar(s.growth_factor)?,
            ));
            out.push((
                entry::SCALER_BACKOFF_FACTOR.to_owned(),
                scalar(s.backoff_factor)?,
            ));
            out.push((
                entry::SCALER_GROWTH_INTERVAL.to_owned(),
                scalar(i64::from(s.growth_interval))?,
            ));
            out.push((
                entry::SCALER_GROWTH_TRACKER.to_owned(),
                scalar(i64::from(s.growth_tracker))?,
            ));
        }
        let mut seen = BTreeSet::new();
        for (name, _) in &out {
            if !seen.insert(name.as_str()) {
                return Err(DdpError::Checkpoint(format!(
                    "entry '{name}' would be written twice"
                )));
            }
        }
        let sums = format::checksum_list(
            out.iter()
                .map(|(name, t)| Ok((name.as_str(), entry_checksum(name, t)?)))
                .collect::<Result<Vec<_>>>()?,
        );
        out.push((entry::CHECKSUMS.to_owned(), bytes_tensor(sums.as_bytes())?));
        Ok(out)
    }

    /// Writes the checkpoint to `path` atomically: a temporary file in the same directory,
    /// fsynced, renamed over `path`, then the directory fsynced. On error nothing is left
    /// behind (the temporary file is removed) and an existing `path` is untouched.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let entries = self.entries()?;
        let dir = parent_dir(path);
        let file_name = path.file_name().ok_or_else(|| {
            DdpError::Checkpoint(format!("{} does not name a file", path.display()))
        })?;
        let tmp = dir.join(format!(
            ".{}.tmp-{}-{}",
            file_name.to_string_lossy(),
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let written = write_durably(&entries, &tmp)
            // Test-only fault injection (`DDP_PROBE_FAULT`, off by default): between the
            // durable temporary file and the rename.
            .and_then(|()| crate::fault::hit(crate::fault::Point::Checkpoint, self.step, None))
            .and_then(|()| fs::rename(&tmp, path).map_err(|e| io_error("renaming", &tmp, e)));
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
        sync_dir(&dir)
    }

    /// Reads a checkpoint written by [`Checkpoint::save`] (tensors on the CPU).
    pub fn load(path: impl AsRef<Path>) -> Result<Checkpoint> {
        let path = path.as_ref();
        let bytes = fs::read(path).map_err(|e| io_error("reading", path, e))?;
        let decoded = format::decode(&bytes)
            .map_err(|e| DdpError::Checkpoint(format!("{}: {e}", path.display())))?;
        from_decoded(decoded)
    }

    /// Copies the saved parameters and buffers into `vs`'s variables, by name. Strict, like
    /// `load_state_dict(strict=True)`: every variable needs an entry and every entry a variable,
    /// with the same shape (values are converted to the variable's kind and device). Nothing is
    /// copied unless everything matches.
    pub fn apply_to_var_store(&self, vs: &VarStore) -> Result<()> {
        let named: Vec<(String, Tensor)> = vs.variables().into_iter().collect();
        self.apply_to_tensors(&named)
    }

    /// Copies the saved model tensors into `named` (name, tensor) pairs, as
    /// [`Checkpoint::apply_to_var_store`] does. The error lists every mismatch: tensors without
    /// an entry, entries without a tensor, and shape differences.
    pub fn apply_to_tensors(&self, named: &[(String, Tensor)]) -> Result<()> {
        let saved: HashMap<&str, &Tensor> =
            self.model.iter().map(|(n, t)| (n.as_str(), t)).collect();
        let mut missing = Vec::new();
        let mut shapes = Vec::new();
        for (name, dst) in named {
            match saved.get(name.as_str()) {
                None => missing.push(name.as_str()),
                Some(src) if src.size() != dst.size() => shapes.push(format!(
                    "entry '{}{name}' has shape {:?}, but the model's '{name}' has shape {:?}",
                    entry::MODEL_PREFIX,
                    src.size(),
                    dst.size()
                )),
                Some(_) => {}
            }
        }
        let wanted: BTreeSet<&str> = named.iter().map(|(n, _)| n.as_str()).collect();
        let mut unexpected: Vec<String> = self
            .model
            .iter()
            .map(|(n, _)| n.as_str())
            .filter(|n| !wanted.contains(n))
            .map(|n| format!("{}{n}", entry::MODEL_PREFIX))
            .collect();
        if !(missing.is_empty() && shapes.is_empty() && unexpected.is_empty()) {
            missing.sort_unstable();
            shapes.sort_unstable();
            unexpected.sort_unstable();
            let mut problems = shapes;
            if !missing.is_empty() {
                problems.push(format!(
                    "the checkpoint has no entry for these model tensors: {}",
                    missing.join(", ")
                ));
            }
            if !unexpected.is_empty() {
                problems.push(format!(
                    "the model has no tensor for these checkpoint entries: {}",
                    unexpected.join(", ")
                ));
            }
            return Err(DdpError::Checkpoint(format!(
                "the checkpoint does not fit the model: {}",
                problems.join("; ")
            )));
        }
        tch::no_grad(|| -> Result<()> {
            for (name, dst) in named {
                if let Some(src) = saved.get(name.as_str()) {
                    let mut dst = dst.shallow_clone();
                    dst.f_copy_(src)?;
                }
            }
            Ok(())
        })
    }

    /// Restores `optimizer`'s state ([`Optimizer::load_state_tensors`]).
    pub fn apply_to_optimizer(&self, optimizer: &mut Optimizer) -> Result<()> {
        Ok(optimizer.load_state_tensors(&self.optimizer)?)
    }

    /// Restores `scaler`'s state. An enabled scaler needs a saved state (PyTorch refuses an
    /// empty one too); a disabled scaler ignores it.
    pub fn apply_to_scaler(&self, scaler: &mut GradScaler) -> Result<()> {
        if !scaler.is_enabled() {
            return Ok(());
        }
        let state = self.scaler.ok_or_else(|| {
            DdpError::Checkpoint(
                "the checkpoint holds no loss scaler state (it was saved without a scaler or \
                 with a disabled one)"
                    .to_owned(),
            )
        })?;
        scaler.load_state(&state)?;
        Ok(())
    }

    /// Sets libtorch's random generators to the saved states.
    pub fn restore_rng(&self) -> Result<()> {
        self.rng
            .as_ref()
            .ok_or_else(|| DdpError::Checkpoint("the checkpoint holds no RNG state".to_owned()))?
            .restore()
    }
}

/// `t` detached, on the CPU and contiguous (no copy when it already is), as safetensors stores
/// it; an error naming `name` for kinds the format cannot hold.
fn storable(name: &str, t: &Tensor) -> Result<Tensor> {
    if !t.defined() {
        return Err(DdpError::Checkpoint(format!(
            "entry '{name}' is an undefined tensor"
        )));
    }
    let kind = t.kind();
    if element_type(kind).is_none() {
        return Err(DdpError::Checkpoint(format!(
            "entry '{name}' has kind {kind:?}, which the checkpoint format cannot store"
        )));
    }
    Ok(t.f_detach()?.f_to_device(Device::Cpu)?.f_contiguous()?)
}

/// A 0-dim tensor holding `v`.
fn scalar<T: tch::kind::Element>(v: T) -> Result<Tensor> {
    Ok(Tensor::f_from_slice(&[v])?.f_view(())?)
}

/// A 1-d uint8 tensor holding `bytes`.
fn bytes_tensor(bytes: &[u8]) -> Result<Tensor> {
    let len = i64::try_from(bytes.len())
        .map_err(|_| DdpError::Checkpoint("user metadata is too long".to_owned()))?;
    Ok(Tensor::f_from_data_size(bytes, &[len], Kind::Uint8)?)
}

fn io_error(action: &str, path: &Path, e: std::io::Error) -> DdpError {
    DdpError::Checkpoint(format!("{action} {}: {e}", path.display()))
}

/// The directory holding `path` (`.` for a bare file name).
fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Writes `entries` to `tmp` and fsyncs it.
/// The checksum of an entry about to be written ([`format::entry_checksum`]).
fn entry_checksum(name: &str, t: &Tensor) -> Result<u64> {
    let t = t.f_contiguous()?;
    let element = element_type(t.kind()).ok_or_else(|| {
        DdpError::Checkpoint(format!(
            "entry '{name}' has kind {:?}, which the checkpoint format cannot store",
            t.kind()
        ))
    })?;
    let n = t.numel() * t.kind().elt_size_in_bytes();
    let bytes: &[u8] = if n == 0 {
        &[]
    } else {
        // SAFETY: `t` is a contiguous CPU tensor (as stored) of `numel` elements of
        // `elt_size_in_bytes` bytes each, alive for the borrow.
        unsafe { std::slice::from_raw_parts(t.data_ptr() as *const u8, n) }
    };
    Ok(format::entry_checksum(name, element, &t.size(), bytes))
}

/// The format's element type of a libtorch kind (`None`: the format cannot store it).
fn element_type(kind: Kind) -> Option<ElementType> {
    Some(match kind {
        Kind::Bool => ElementType::Bool,
        Kind::Uint8 => ElementType::U8,
        Kind::Int8 => ElementType::I8,
        Kind::Int16 => ElementType::I16,
        Kind::Int => ElementType::I32,
        Kind::Int64 => ElementType::I64,
        Kind::BFloat16 => ElementType::BF16,
        Kind::Half => ElementType::F16,
        Kind::Float => ElementType::F32,
        Kind::Double => ElementType::F64,
        _ => return None,
    })
}

/// A tensor (on the CPU) holding a checked entry of a file.
fn tensor_of(e: &Entry<'_>) -> Result<Tensor> {
    let kind = match e.element {
        ElementType::Bool => Kind::Bool,
        ElementType::U8 => Kind::Uint8,
        ElementType::I8 => Kind::Int8,
        ElementType::I16 => Kind::Int16,
        ElementType::I32 => Kind::Int,
        ElementType::I64 => Kind::Int64,
        ElementType::BF16 => Kind::BFloat16,
        ElementType::F16 => Kind::Half,
        ElementType::F32 => Kind::Float,
        ElementType::F64 => Kind::Double,
    };
    Ok(Tensor::f_from_data_size(e.data, &e.shape, kind)?)
}

fn write_durably(entries: &[(String, Tensor)], tmp: &Path) -> Result<()> {
    Tensor::write_safetensors(entries, tmp)
        .map_err(|e| DdpError::Checkpoint(format!("writing {}: {e}", tmp.display())))?;
    File::open(tmp)
        .and_then(|f| f.sync_all())
        .map_err(|e| io_error("syncing", tmp, e))
}

/// Fsyncs a directory, making renames and new names in it durable.
fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(|e| io_error("syncing directory", dir, e))
}

/// A [`Checkpoint`] of a file's checked entries.
fn from_decoded(decoded: Decoded<'_>) -> Result<Checkpoint> {
    let named = |entries: &[(String, Entry<'_>)]| -> Result<Vec<(String, Tensor)>> {
        entries
            .iter()
            .map(|(n, e)| Ok((n.clone(), tensor_of(e)?)))
            .collect()
    };
    let mut ckpt = Checkpoint::new(decoded.epoch, decoded.step);
    ckpt.model = named(&decoded.model)?;
    ckpt.optimizer = named(&decoded.optimizer)?;
    ckpt.sampler = decoded.sampler;
    ckpt.scaler = decoded.scaler;
    ckpt.user_metadata = decoded.user_metadata;
    ckpt.rng = match &decoded.rng {
        Some((cpu, cuda)) => Some(RngState {
            cpu: tensor_of(cpu)?,
            cuda: cuda.iter().map(tensor_of).collect::<Result<_>>()?,
        }),
        None => None,
    };
    Ok(ckpt)
}

// ----- a directory of checkpoints -----

/// What [`CheckpointManager::load_latest_valid`] found.
#[derive(Debug)]
pub struct Resumed {
    /// The newest checkpoint that loaded, and its file; `None` when none did.
    pub loaded: Option<(PathBuf, Checkpoint)>,
    /// Newer checkpoints refused, newest first, each with why.
    pub refused: Vec<(PathBuf, String)>,
}

/// The checkpoints of one directory: `ckpt-<step>.safetensors`, the last N kept.
#[derive(Debug, Clone)]
pub struct CheckpointManager {
    dir: PathBuf,
    keep_last: usize,
}

impl CheckpointManager {
    /// Manages `dir` (created if missing), keeping the newest `keep_last` checkpoints
    /// (at least 1).
    pub fn new(dir: impl Into<PathBuf>, keep_last: usize) -> Result<Self> {
        let dir = dir.into();
        if keep_last == 0 {
            return Err(DdpError::Checkpoint(
                "keep_last must be at least 1: the checkpoint just written is always kept"
                    .to_owned(),
            ));
        }
        fs::create_dir_all(&dir).map_err(|e| io_error("creating directory", &dir, e))?;
        Ok(Self { dir, keep_last })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// How many checkpoints are kept.
    pub fn keep_last(&self) -> usize {
        self.keep_last
    }

    /// The file of the checkpoint of `step`.
    pub fn path_for_step(&self, step: u64) -> PathBuf {
        self.dir.join(format!("ckpt-{step}.{CHECKPOINT_EXTENSION}"))
    }

    /// Writes `checkpoint` atomically to [`CheckpointManager::path_for_step`] of its step, then
    /// (once it is durable) deletes the older checkpoints beyond the last `keep_last` and the
    /// temporary files of dead writers. Returns the new file. Call it on one rank only (see
    /// [`CheckpointManager::save_on_rank0`]).
    ///
    /// Kept are the `keep_last` complete checkpoints with the highest steps, and the new one in
    /// any case (steps are expected to grow over a run; checkpoints with higher steps than the
    /// new one are left alone).
    pub fn save(&self, checkpoint: &Checkpoint) -> Result<PathBuf> {
        let path = self.path_for_step(checkpoint.step);
        checkpoint.save(&path)?;
        self.prune(checkpoint.step)
            .and_then(|()| self.remove_stale_temp_files())
            .map_err(|e| {
                DdpError::Checkpoint(format!(
                    "{} was written, but cleaning up older files failed: {e}",
                    path.display()
                ))
            })?;
        Ok(path)
    }

    /// Collective: rank 0 builds the checkpoint with `build` and saves it
    /// ([`CheckpointManager::save`]); then every rank learns the outcome. Returns the new file
    /// on every rank, or an error on every rank if rank 0 failed (rank 0 gets the cause).
    pub fn save_on_rank0(
        &self,
        group: &ProcessGroup,
        build: impl FnOnce() -> Result<Checkpoint>,
    ) -> Result<PathBuf> {
        // [1 on success, the step's bits]
        let mut status = [0i64, 0i64];
        let mut outcome = None;
        if group.rank() == 0 {
            let result = build().and_then(|c| self.save(&c).map(|p| (p, c.step)));
            if let Ok((_, step)) = &result {
                status = [1, *step as i64];
            }
            outcome = Some(result.map(|(p, _)| p));
        }
        group.broadcast(&mut status, 0)?;
        match outcome {
            Some(result) => result,
            None if status[0] == 1 => Ok(self.path_for_step(status[1] as u64)),
            None => Err(DdpError::Checkpoint(format!(
                "rank 0 failed to write the checkpoint in {} (its error says why)",
                self.dir.display()
            ))),
        }
    }

    /// The checkpoint files of the directory, complete ones only, by increasing step.
    pub fn list(&self) -> Result<Vec<(u64, PathBuf)>> {
        Ok(self
            .candidates()?
            .into_iter()
            .filter(|(_, p)| is_complete(p))
            .collect())
    }

    /// The newest complete checkpoint, ignoring temporary files and files that are not
    /// structurally complete.
    pub fn latest(&self) -> Result<Option<PathBuf>> {
        Ok(self
            .candidates()?
            .into_iter()
            .rev()
            .find(|(_, p)| is_complete(p))
            .map(|(_, p)| p))
    }

    /// Loads the newest checkpoint that loads and passes its checksums, falling back through
    /// the rotation past damaged ones ([`CheckpointManager::load_latest_valid`] says which).
    pub fn load_latest(&self) -> Result<Option<Checkpoint>> {
        Ok(self.load_latest_valid()?.loaded.map(|(_, c)| c))
    }

    /// Loads the newest complete checkpoint; when it is refused (a checksum, dtype or entry
    /// does not match, or it cannot be read), the one before it, and so on. Returns the one
    /// loaded and every newer one refused, with why, for the caller to say so.
    pub fn load_latest_valid(&self) -> Result<Resumed> {
        let mut refused = Vec::new();
        for (_, path) in self.candidates()?.into_iter().rev() {
            if !is_complete(&path) {
                continue;
            }
            match Checkpoint::load(&path) {
                Ok(c) => {
                    return Ok(Resumed {
                        loaded: Some((path, c)),
                        refused,
                    })
                }
                Err(e) => refused.push((path, e.to_string())),
            }
        }
        Ok(Resumed {
            loaded: None,
            refused,
        })
    }

    /// Files named like checkpoints, by increasing step.
    fn candidates(&self) -> Result<Vec<(u64, PathBuf)>> {
        let mut out = Vec::new();
        for entry in fs::read_dir(&self.dir).map_err(|e| io_error("listing", &self.dir, e))? {
            let entry = entry.map_err(|e| io_error("listing", &self.dir, e))?;
            let name = entry.file_name();
            if let Some(step) = name.to_str().and_then(checkpoint_step) {
                out.push((step, entry.path()));
            }
        }
        out.sort();
        Ok(out)
    }

    /// Deletes the checkpoints older than the ones kept: the newest `keep_last` complete ones
    /// by step, and `just_saved` in any case. Files with a step above the oldest kept one are
    /// never deleted.
    fn prune(&self, just_saved: u64) -> Result<()> {
        let candidates = self.candidates()?;
        let oldest_kept = candidates
            .iter()
            .rev()
            .filter(|(_, p)| is_complete(p))
            .map(|(s, _)| *s)
            .take(self.keep_last)
            .chain(std::iter::once(just_saved))
            .min()
            .unwrap_or(just_saved);
        for (step, path) in candidates {
            if step < oldest_kept {
                fs::remove_file(&path).map_err(|e| io_error("deleting", &path, e))?;
            }
        }
        Ok(())
    }

    /// Deletes temporary files left by writers that no longer run.
    fn remove_stale_temp_files(&self) -> Result<()> {
        for entry in fs::read_dir(&self.dir).map_err(|e| io_error("listing", &self.dir, e))? {
            let entry = entry.map_err(|e| io_error("listing", &self.dir, e))?;
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(temp_file_pid) else {
                continue;
            };
            if pid != std::process::id() && process_is_gone(pid) {
                let path = entry.path();
                fs::remove_file(&path).map_err(|e| io_error("deleting", &path, e))?;
            }
        }
        Ok(())
    }
}

/// The step of a checkpoint file name `ckpt-<step>.safetensors`.
fn checkpoint_step(name: &str) -> Option<u64> {
    let digits = name
        .strip_prefix("ckpt-")?
        .strip_suffix(CHECKPOINT_EXTENSION)?
        .strip_suffix('.')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The writer's pid of a temporary file name `.ckpt-<step>.safetensors.tmp-<pid>-<n>`.
fn temp_file_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix('.')?;
    let (target, suffix) = rest.split_once(".tmp-")?;
    checkpoint_step(target)?;
    let (pid, n) = suffix.split_once('-')?;
    n.parse::<u64>().ok()?;
    pid.parse().ok()
}

/// Whether process `pid` is known not to run (only decidable where `/proc` exists).
fn process_is_gone(pid: u32) -> bool {
    let proc = Path::new("/proc");
    proc.join("self").exists() && !proc.join(pid.to_string()).exists()
}

/// Whether `path` is a structurally complete checkpoint file ([`format::is_complete`]).
fn is_complete(path: &Path) -> bool {
    File::open(path)
        .and_then(|mut f| {
            let len = f.metadata()?.len();
            Ok(format::is_complete(&mut f, len))
        })
        .unwrap_or(false)
}
