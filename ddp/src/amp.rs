//! Mixed precision: autocast regions on CPU (bf16, f16) and CUDA, and a dynamic loss scaler
//! ([`GradScaler`]) with `torch.amp.GradScaler`'s semantics whose skip decision is agreed on by
//! every rank.
//!
//! # Autocast
//!
//! [`autocast`] runs a closure inside an autocast region: ops on libtorch's autocast lists
//! (`linear`, `matmul`, convolutions, ...) run in the region's lower precision dtype, others in
//! float32, exactly as inside `with torch.autocast(device_type, dtype, enabled):`. tch's own
//! `tch::autocast` only drives CUDA autocast, so a small C++ shim (`csrc/amp.cpp`) makes the
//! calls of `torch.autocast.__enter__`/`__exit__` for any device type: save the previous enabled
//! flag, dtype and cast-cache flag, set the new ones, increment the nesting level; on exit
//! decrement it (clearing the cast cache when the outermost region ends) and restore the saved
//! state. The region is exited even when the closure panics. Autocast state is per thread in
//! libtorch, so a region affects only the thread that enters it. The device's index is ignored:
//! autocast state exists per device type. CPU autocast accepts bf16 and f16; CUDA autocast
//! needs libtorch to see a GPU.
//!
//! # Loss scaling
//!
//! [`GradScaler`] follows `torch/amp/grad_scaler.py` (PyTorch 2.13):
//!
//! * [`GradScaler::scale`] multiplies the loss by the current scale (a float32, initially
//!   `init_scale` = 2^16);
//! * [`GradScaler::unscale_`] multiplies every gradient of an optimizer by `1/scale` (computed
//!   in f64, rounded to f32, as PyTorch does) and records whether any gradient held an inf or a
//!   NaN. With a process group ([`GradScaler::with_process_group`]) that flag is then
//!   all-reduced with MAX over the ranks, so when one rank sees a non-finite gradient every rank
//!   skips the step, and the scales stay identical everywhere. Every rank must therefore call
//!   `unscale_`/`step` for the same optimizers in the same order (it is a collective);
//! * [`GradScaler::step`] unscales if that was not done yet this iteration, then runs the
//!   optimizer step unless a non-finite gradient was found (it returns whether it stepped);
//! * [`GradScaler::update`] backs the scale off (`scale * backoff_factor`, tracker reset) after
//!   a skipped step, and grows it (`scale * growth_factor`, kept only when finite) after
//!   `growth_interval` consecutive clean steps: `torch._amp_update_scale_`'s rule, computed in
//!   f64 and rounded to f32 like its CPU kernel.
//!
//! Misuse is reported as PyTorch reports it: unscaling twice in an iteration, unscaling after
//! `step`, stepping twice, updating with no inf check recorded, unscaling float16 gradients.
//! [`GradScaler::state`]/[`GradScaler::load_state`] carry what `state_dict()` does (for
//! [`crate::checkpoint`]).

use std::collections::HashMap;
use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::Arc;

use comm::{ProcessGroup, ReduceOp};
use tch::{Device, Kind, Tensor};

use crate::optim::Optimizer;

/// Errors of autocast regions and of the loss scaler.
#[derive(Debug, thiserror::Error)]
pub enum AmpError {
    /// Autocast is only wired up for the CPU and CUDA here.
    #[error("autocast is not supported on {device:?} here (CPU and CUDA only)")]
    UnsupportedDevice {
        /// The device asked for.
        device: Device,
    },
    /// Autocast's lower precision dtype must be bf16 or f16.
    #[error("autocast needs Kind::BFloat16 or Kind::Half as its dtype, not {kind:?}")]
    UnsupportedDtype {
        /// The dtype asked for.
        kind: Kind,
    },
    /// A CUDA autocast region was asked for where libtorch sees no GPU.
    #[error("CUDA autocast was requested, but libtorch sees no CUDA device")]
    CudaUnavailable,
    /// libtorch refused an autocast call.
    #[error("libtorch autocast: {0}")]
    Autocast(String),
    /// A [`GradScalerConfig`] PyTorch would refuse.
    #[error("invalid GradScaler configuration: {0}")]
    InvalidConfig(String),
    /// `unscale_` twice for one optimizer between two `update`s.
    #[error("unscale_() has already been called on this optimizer since the last update()")]
    AlreadyUnscaled,
    /// `unscale_` after `step` for one optimizer between two `update`s.
    #[error("unscale_() is being called after step()")]
    UnscaleAfterStep,
    /// `step` twice for one optimizer between two `update`s.
    #[error("step() has already been called since the last update()")]
    AlreadyStepped,
    /// `step` for an optimizer none of whose parameters has a gradient.
    #[error(
        "no inf checks were recorded for this optimizer: none of its parameters has a gradient"
    )]
    NoGradients,
    /// `update` with no `unscale_`/`step` since the previous `update`.
    #[error("no inf checks were recorded prior to update(): call step() (or unscale_()) first")]
    NoInfChecks,
    /// Float16 gradients cannot be unscaled (PyTorch refuses them too: keep master weights in
    /// float32).
    #[error("attempting to unscale FP16 gradients (parameter {index})")]
    Fp16Gradients {
        /// Index of the parameter in the optimizer.
        index: usize,
    },
    /// A scaler state that cannot be loaded.
    #[error("invalid GradScaler state: {0}")]
    InvalidState(String),
    /// A tensor operation failed.
    #[error("libtorch: {0}")]
    Torch(#[from] tch::TchError),
    /// Agreeing on the found-inf flag across ranks failed.
    #[error("all-reducing the found-inf flag across ranks failed: {0}")]
    Comm(#[from] comm::CommError),
    /// The optimizer step failed.
    #[error("optimizer step: {0}")]
    Step(#[from] crate::optim::OptimError),
}

type Result<T, E = AmpError> = std::result::Result<T, E>;

/// Mirror of `struct ddp_autocast_prev` in `csrc/amp.cpp`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
struct RawPrev {
    enabled: i32,
    dtype: i32,
    cache_enabled: i32,
}

extern "C" {
    fn ddp_autocast_enter(
        device_type: i32,
        dtype: i32,
        enabled: i32,
        cache_enabled: i32,
        prev: *mut RawPrev,
        err: *mut *mut c_char,
    ) -> i32;
    fn ddp_autocast_exit(device_type: i32, prev: *const RawPrev, err: *mut *mut c_char) -> i32;
    fn ddp_autocast_state(device_type: i32, dtype: *mut i32, err: *mut *mut c_char) -> i32;
    fn ddp_autocast_cache_enabled() -> i32;
    fn ddp_error_free(msg: *mut c_char);
}

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

/// `c10::DeviceType` of a device autocast supports here.
fn device_type(device: Device) -> Result<i32> {
    match device {
        Device::Cpu => Ok(0),
        Device::Cuda(_) => Ok(1),
        other => Err(AmpError::UnsupportedDevice { device: other }),
    }
}

/// `c10::ScalarType` of an autocast dtype.
fn scalar_type(kind: Kind) -> Result<i32> {
    match kind {
        Kind::Half => Ok(5),
        Kind::BFloat16 => Ok(15),
        other => Err(AmpError::UnsupportedDtype { kind: other }),
    }
}

/// The tch kind of a `c10::ScalarType` value the shim returned.
fn kind_of(scalar_type: i32) -> Result<Kind> {
    Ok(match scalar_type {
        5 => Kind::Half,
        6 => Kind::Float,
        7 => Kind::Double,
        15 => Kind::BFloat16,
        other => {
            return Err(AmpError::Autocast(format!(
                "unexpected autocast dtype code {other}"
            )))
        }
    })
}

/// An entered autocast region; leaves it when dropped (also while unwinding).
struct Region {
    device_type: i32,
    prev: RawPrev,
    active: bool,
}

impl Region {
    fn enter(device: Device, dtype: Kind, enabled: bool) -> Result<Region> {
        let device_type = device_type(device)?;
        let dtype = scalar_type(dtype)?;
        if matches!(device, Device::Cuda(_)) && !tch::Cuda::is_available() {
            return Err(AmpError::CudaUnavailable);
        }
        // SAFETY: no arguments; reads thread-local state.
        let cache_enabled = unsafe { ddp_autocast_cache_enabled() };
        let mut prev = RawPrev::default();
        let mut err: *mut c_char = ptr::null_mut();
        // SAFETY: `prev` and `err` are valid for writes for the duration of the call.
        let rc = unsafe {
            ddp_autocast_enter(
                device_type,
                dtype,
                i32::from(enabled),
                cache_enabled,
                &mut prev,
                &mut err,
            )
        };
        if rc != 0 {
            return Err(AmpError::Autocast(take_message(err)));
        }
        Ok(Region {
            device_type,
            prev,
            active: true,
        })
    }

    fn exit(&mut self) -> Result<()> {
        if !self.active {
            return Ok(());
        }
        self.active = false;
        let mut err: *mut c_char = ptr::null_mut();
        // SAFETY: `prev` came from `ddp_autocast_enter`; `err` is valid for writes.
        let rc = unsafe { ddp_autocast_exit(self.device_type, &self.prev, &mut err) };
        if rc != 0 {
            return Err(AmpError::Autocast(take_message(err)));
        }
        Ok(())
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // Only reached without an explicit exit while unwinding; the device type was accepted
        // on entry, so exiting cannot fail in practice, and there is nobody to report to.
        let _ = self.exit();
    }
}

/// Runs `f` inside `torch.autocast(device_type, dtype, enabled)`: with `enabled`, eligible ops
/// run in `dtype` (bf16 or f16) on `device`'s type; with `enabled == false` autocast is off for
/// that device type inside `f` even within an enclosing region. The previous autocast state is
/// restored afterwards, also when `f` panics (the panic then continues).
///
/// ```no_run
/// # fn main() -> Result<(), ddp::amp::AmpError> {
/// use tch::{Device, Kind, Tensor};
/// let (x, w) = (Tensor::ones([4, 8], tch::kind::FLOAT_CPU), Tensor::ones([2, 8], tch::kind::FLOAT_CPU));
/// let y = ddp::amp::autocast(Device::Cpu, Kind::BFloat16, true, || x.linear::<Tensor>(&w, None))?;
/// assert_eq!(y.kind(), Kind::BFloat16);
/// # Ok(())
/// # }
/// ```
pub fn autocast<R>(device: Device, dtype: Kind, enabled: bool, f: impl FnOnce() -> R) -> Result<R> {
    let mut region = Region::enter(device, dtype, enabled)?;
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(out) => {
            region.exit()?;
            Ok(out)
        }
        Err(payload) => {
            // Leave the region before the panic goes on.
            let _ = region.exit();
            resume_unwind(payload)
        }
    }
}

/// Whether autocast is enabled for `device`'s type on this thread.
pub fn is_autocast_enabled(device: Device) -> Result<bool> {
    autocast_state(device).map(|(enabled, _)| enabled)
}

/// The lower precision dtype autocast uses for `device`'s type on this thread (set even when
/// autocast is disabled: libtorch's defaults are bf16 on the CPU and f16 on CUDA).
pub fn autocast_dtype(device: Device) -> Result<Kind> {
    autocast_state(device).map(|(_, kind)| kind)
}

fn autocast_state(device: Device) -> Result<(bool, Kind)> {
    let device_type = device_type(device)?;
    let mut dtype = 0i32;
    let mut err: *mut c_char = ptr::null_mut();
    // SAFETY: `dtype` and `err` are valid for writes for the duration of the call.
    let rc = unsafe { ddp_autocast_state(device_type, &mut dtype, &mut err) };
    if rc < 0 {
        return Err(AmpError::Autocast(take_message(err)));
    }
    Ok((rc == 1, kind_of(dtype)?))
}

/// Settings of a [`GradScaler`]; the defaults are `torch.amp.GradScaler`'s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GradScalerConfig {
    /// Initial scale (2^16).
    pub init_scale: f64,
    /// Factor the scale grows by after `growth_interval` clean steps (2, must be > 1).
    pub growth_factor: f64,
    /// Factor the scale shrinks by after a step with a non-finite gradient (0.5, must be < 1).
    pub backoff_factor: f64,
    /// Consecutive clean steps before the scale grows (2000).
    pub growth_interval: u32,
    /// A disabled scaler passes losses through and steps unconditionally.
    pub enabled: bool,
}

impl Default for GradScalerConfig {
    fn default() -> Self {
        Self {
            init_scale: 65536.0,
            growth_factor: 2.0,
            backoff_factor: 0.5,
            growth_interval: 2000,
            enabled: true,
        }
    }
}

/// What `GradScaler.state_dict()` holds: the scale, the hyper-parameters ([`GradScalerConfig`]'s)
/// and the number of clean steps since the scale last changed. Defined with the checkpoint
/// format, which reads it without libtorch.
pub use probe_contract::checkpoint_format::GradScalerState;

/// Where an optimizer is in the current iteration (absent: `READY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Unscaled,
    Stepped,
}

#[derive(Debug, Clone, Copy)]
struct OptState {
    stage: Stage,
    /// A non-finite gradient was seen (on any rank, with a process group).
    found_inf: bool,
    /// At least one parameter had a gradient on this rank.
    had_grads: bool,
}

/// Dynamic loss scaling with `torch.amp.GradScaler`'s semantics (see the module doc).
pub struct GradScaler {
    config: GradScalerConfig,
    scale: f32,
    growth_tracker: u32,
    group: Option<Arc<ProcessGroup>>,
    per_optimizer: HashMap<u64, OptState>,
}

impl std::fmt::Debug for GradScaler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GradScaler")
            .field("config", &self.config)
            .field("scale", &self.scale)
            .field("growth_tracker", &self.growth_tracker)
            .field(
                "group",
                &self.group.as_ref().map(|g| (g.rank(), g.world_size())),
            )
            .finish()
    }
}

fn check_factors(growth_factor: f64, backoff_factor: f64, growth_interval: u32) -> Result<()> {
    if !(growth_factor.is_finite() && growth_factor > 1.0) {
        return Err(AmpError::InvalidConfig(format!(
            "the growth factor must be a finite number > 1.0, not {growth_factor}"
        )));
    }
    if !(backoff_factor > 0.0 && backoff_factor < 1.0) {
        return Err(AmpError::InvalidConfig(format!(
            "the backoff factor must be in (0, 1), not {backoff_factor}"
        )));
    }
    if growth_interval == 0 {
        return Err(AmpError::InvalidConfig(
            "the growth interval must be at least 1".to_owned(),
        ));
    }
    Ok(())
}

fn check_scale(scale: f64) -> Result<()> {
    if !(scale.is_finite() && scale > 0.0 && (scale as f32).is_finite() && scale as f32 > 0.0) {
        return Err(AmpError::InvalidConfig(format!(
            "the scale must be a positive finite float32, not {scale}"
        )));
    }
    Ok(())
}

impl GradScaler {
    /// A scaler with the given settings (checked as PyTorch checks them when enabled, plus a
    /// positive finite initial scale and a growth interval of at least 1).
    pub fn new(config: GradScalerConfig) -> Result<Self> {
        if config.enabled {
            check_factors(
                config.growth_factor,
                config.backoff_factor,
                config.growth_interval,
            )?;
            check_scale(config.init_scale)?;
        }
        Ok(Self {
            config,
            scale: config.init_scale as f32,
            growth_tracker: 0,
            group: None,
            per_optimizer: HashMap::new(),
        })
    }

    /// Agrees on the found-inf flag with the other ranks of `group` (MAX all-reduce in every
    /// [`GradScaler::unscale_`]), so that all ranks skip the same steps.
    pub fn with_process_group(mut self, group: Arc<ProcessGroup>) -> Self {
        self.group = Some(group);
        self
    }

    /// Whether the scaler is enabled.
    pub fn is_enabled(&self) -> bool {
        self.config.enabled
    }

    /// The current scale (1.0 when disabled, as `get_scale()` returns).
    pub fn get_scale(&self) -> f32 {
        if self.config.enabled {
            self.scale
        } else {
            1.0
        }
    }

    /// Consecutive clean steps since the scale last changed.
    pub fn growth_tracker(&self) -> u32 {
        self.growth_tracker
    }

    /// The settings, with the factors and interval last loaded by [`GradScaler::load_state`].
    pub fn config(&self) -> GradScalerConfig {
        self.config
    }

    /// `loss * scale` (the loss itself when disabled). The scale is a float32 0-dim tensor on the
    /// loss's device, so a bf16/f16 loss stays in its dtype as in PyTorch.
    pub fn scale(&self, loss: &Tensor) -> Result<Tensor> {
        if !self.config.enabled {
            return Ok(loss.shallow_clone());
        }
        let scale = Tensor::f_scalar_tensor(f64::from(self.scale), (Kind::Float, loss.device()))?;
        Ok(loss.f_mul(&scale)?)
    }

    /// Divides the gradients of `optimizer`'s parameters by the scale in place and records
    /// whether any of them held an inf or a NaN (agreed on across ranks with a process group).
    /// At most once per optimizer between two [`GradScaler::update`]s, and not after
    /// [`GradScaler::step`]. A no-op when disabled.
    pub fn unscale_(&mut self, optimizer: &Optimizer) -> Result<()> {
        if !self.config.enabled {
            return Ok(());
        }
        match self.per_optimizer.get(&optimizer.id()).map(|s| s.stage) {
            Some(Stage::Unscaled) => return Err(AmpError::AlreadyUnscaled),
            Some(Stage::Stepped) => return Err(AmpError::UnscaleAfterStep),
            None => {}
        }
        // inv_scale = scale.double().reciprocal().float()
        let inv_scale = f64::from((1.0 / f64::from(self.scale)) as f32);
        let mut found_inf = false;
        let mut had_grads = false;
        tch::no_grad(|| -> Result<()> {
            for (index, p) in optimizer.params().iter().enumerate() {
                let mut g = p.grad();
                if !g.defined() {
                    continue;
                }
                if g.kind() == Kind::Half {
                    return Err(AmpError::Fp16Gradients { index });
                }
                had_grads = true;
                if !found_inf {
                    let finite = g.f_isfinite()?.f_all()?.f_int64_value(&[])? != 0;
                    found_inf = !finite;
                }
                let _ = g.f_mul_scalar_(inv_scale)?;
            }
            Ok(())
        })?;
        if let Some(group) = &self.group {
            let mut flag = [u8::from(found_inf)];
            group.all_reduce(&mut flag, ReduceOp::Max)?;
            found_inf = flag[0] != 0;
        }
        self.per_optimizer.insert(
            optimizer.id(),
            OptState {
                stage: Stage::Unscaled,
                found_inf,
                had_grads,
            },
        );
        Ok(())
    }

    /// Unscales `optimizer`'s gradients (unless [`GradScaler::unscale_`] already did in this
    /// iteration) and runs `optimizer.step()` unless a non-finite gradient was found. Returns
    /// whether the optimizer stepped. When disabled it just steps.
    pub fn step(&mut self, optimizer: &mut Optimizer) -> Result<bool> {
        if !self.config.enabled {
            optimizer.step()?;
            return Ok(true);
        }
        let state = match self.per_optimizer.get(&optimizer.id()).copied() {
            Some(OptState {
                stage: Stage::Stepped,
                ..
            }) => return Err(AmpError::AlreadyStepped),
            Some(state) => state,
            None => {
                self.unscale_(optimizer)?;
                match self.per_optimizer.get(&optimizer.id()).copied() {
                    Some(state) => state,
                    None => return Err(AmpError::NoInfChecks),
                }
            }
        };
        if !state.had_grads {
            return Err(AmpError::NoGradients);
        }
        let stepped = !state.found_inf;
        if stepped {
            optimizer.step()?;
        }
        self.per_optimizer.insert(
            optimizer.id(),
            OptState {
                stage: Stage::Stepped,
                ..state
            },
        );
        Ok(stepped)
    }

    /// Whether the last [`GradScaler::unscale_`] of `optimizer` in this iteration found a
    /// non-finite gradient (on any rank, with a process group); `None` before it ran.
    pub fn found_inf(&self, optimizer: &Optimizer) -> Option<bool> {
        self.per_optimizer.get(&optimizer.id()).map(|s| s.found_inf)
    }

    /// Ends the iteration: backs the scale off if any optimizer found a non-finite gradient,
    /// otherwise counts a clean step and grows the scale every `growth_interval` of them. A
    /// no-op when disabled.
    pub fn update(&mut self) -> Result<()> {
        if !self.config.enabled {
            return Ok(());
        }
        // Like PyTorch, only optimizers with gradients count as inf checks, and a failed update
        // keeps the iteration's records.
        if !self.per_optimizer.values().any(|s| s.had_grads) {
            return Err(AmpError::NoInfChecks);
        }
        let found_inf = self
            .per_optimizer
            .values()
            .any(|s| s.had_grads && s.found_inf);
        // `_amp_update_scale_`'s CPU kernel: products in double, stored as float.
        if found_inf {
            self.scale = (f64::from(self.scale) * self.config.backoff_factor) as f32;
            self.growth_tracker = 0;
        } else {
            let successful = self.growth_tracker.saturating_add(1);
            if successful >= self.config.growth_interval {
                let grown = (f64::from(self.scale) * self.config.growth_factor) as f32;
                if grown.is_finite() {
                    self.scale = grown;
                }
                self.growth_tracker = 0;
            } else {
                self.growth_tracker = successful;
            }
        }
        self.per_optimizer.clear();
        Ok(())
    }

    /// The state to checkpoint (`state_dict()`); `None` when disabled (PyTorch's is empty then).
    pub fn state(&self) -> Option<GradScalerState> {
        self.config.enabled.then_some(GradScalerState {
            scale: self.scale,
            growth_factor: self.config.growth_factor,
            backoff_factor: self.config.backoff_factor,
            growth_interval: self.config.growth_interval,
            growth_tracker: self.growth_tracker,
        })
    }

    /// Restores a state from [`GradScaler::state`] (`load_state_dict()`): scale, tracker and the
    /// hyper-parameters. A no-op when disabled, like PyTorch's. The state is checked first; an
    /// invalid one changes nothing.
    pub fn load_state(&mut self, state: &GradScalerState) -> Result<()> {
        if !self.config.enabled {
            return Ok(());
        }
        check_factors(
            state.growth_factor,
            state.backoff_factor,
            state.growth_interval,
        )
        .map_err(|e| AmpError::InvalidState(e.to_string()))?;
        check_scale(f64::from(state.scale)).map_err(|e| AmpError::InvalidState(e.to_string()))?;
        if state.growth_tracker >= state.growth_interval {
            return Err(AmpError::InvalidState(format!(
                "growth tracker {} is not below the growth interval {}",
                state.growth_tracker, state.growth_interval
            )));
        }
        self.scale = state.scale;
        self.growth_tracker = state.growth_tracker;
        self.config.growth_factor = state.growth_factor;
        self.config.backoff_factor = state.backoff_factor;
        self.config.growth_interval = state.growth_interval;
        self.per_optimizer.clear();
        Ok(())
    }
}
