//! Optimizers whose state can be checkpointed: SGD (momentum, dampening, Nesterov, weight decay)
//! and Adam/AdamW, with the update rules of `torch.optim` 2.13's single-tensor path (the one
//! PyTorch takes for CPU tensors).
//!
//! tch's own optimizers live inside libtorch and do not expose their state, so a checkpoint
//! could not resume them exactly; these keep every buffer as a named tensor
//! ([`Optimizer::state_tensors`] / [`Optimizer::load_state_tensors`]).
//!
//! # Matching PyTorch bit for bit
//!
//! PyTorch's update rules use `add(other, alpha=a)`, `addcmul(t1, t2, value=v)` and
//! `addcdiv(t1, t2, value=v)`; tch's generated bindings of these ops take no `alpha`/`value`.
//! Writing `a * other` as a separate multiplication would round twice where libtorch's kernel
//! may fuse the multiply-add (it does, in its vectorised loops), so the formulations here go
//! through the same kernels with the same roundings:
//!
//! * `x.add(y, alpha=a)` is `x.addcmul(y, a)` with `a` a 0-dim tensor of `x`'s kind (the add
//!   kernel computes `fma(y, a, x)` and so does addcmul with a value of 1);
//! * `x.addcmul_(g, g, value=v)` is `x.addcmul_(g, g * v)`: the kernel computes
//!   `x + v * g * g`, that is `x + (v * g) * g`, and `g * v` rounds like the kernel's `v * g`;
//! * `x.addcdiv_(m, d, value=v)` is `x.addcdiv_(m * v, d)`: the kernel computes
//!   `x + (v * m) / d`.
//!
//! `tests/optim.rs` replays `torch.optim` runs recorded by `tests/gen/gen_optim.py` with these
//! rules and finds the same parameters.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use tch::{Kind, Tensor};

/// What can go wrong in an optimizer: libtorch refusing an operation, or a
/// state that does not fit the parameters it is loaded into. The messages
/// read as those of the crate's error type, which wraps this.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OptimError {
    /// An error libtorch reported through tch.
    #[error("libtorch: {0}")]
    Torch(#[from] tch::TchError),
    /// Optimizer state (from a checkpoint) that does not fit the parameters.
    #[error("checkpoint: {0}")]
    State(String),
}

type Result<T, E = OptimError> = std::result::Result<T, E>;

/// Source of [`Optimizer`] identities.
static NEXT_OPTIMIZER_ID: AtomicU64 = AtomicU64::new(0);

/// Which update rule an [`Optimizer`] applies, with its hyper-parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OptimizerKind {
    /// `torch.optim.SGD(params, lr, momentum, dampening, weight_decay, nesterov)`.
    Sgd {
        /// Learning rate.
        lr: f64,
        /// Momentum factor (0 disables the momentum buffer).
        momentum: f64,
        /// Dampening for momentum.
        dampening: f64,
        /// L2 penalty added to the gradient.
        weight_decay: f64,
        /// Nesterov momentum.
        nesterov: bool,
    },
    /// `torch.optim.Adam` (`decoupled = false`) or `torch.optim.AdamW` (`decoupled = true`).
    Adam {
        /// Learning rate.
        lr: f64,
        /// Coefficient of the running average of the gradient.
        beta1: f64,
        /// Coefficient of the running average of the squared gradient.
        beta2: f64,
        /// Term added to the denominator.
        eps: f64,
        /// Weight decay: an L2 penalty for Adam, decoupled decay for AdamW.
        weight_decay: f64,
        /// AdamW's decoupled weight decay.
        decoupled: bool,
    },
}

impl OptimizerKind {
    /// SGD with PyTorch's defaults other than the learning rate.
    pub fn sgd(lr: f64) -> Self {
        Self::Sgd {
            lr,
            momentum: 0.0,
            dampening: 0.0,
            weight_decay: 0.0,
            nesterov: false,
        }
    }

    /// Adam with PyTorch's defaults (betas 0.9/0.999, eps 1e-8, no weight decay).
    pub fn adam(lr: f64) -> Self {
        Self::Adam {
            lr,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.0,
            decoupled: false,
        }
    }

    /// AdamW with PyTorch's defaults (betas 0.9/0.999, eps 1e-8, weight decay 0.01).
    pub fn adamw(lr: f64) -> Self {
        Self::Adam {
            lr,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.01,
            decoupled: true,
        }
    }

    /// The learning rate.
    pub fn lr(&self) -> f64 {
        match *self {
            Self::Sgd { lr, .. } | Self::Adam { lr, .. } => lr,
        }
    }
}

/// Per-parameter state.
#[derive(Debug, Default)]
struct ParamState {
    /// SGD's momentum buffer, created at the first step with momentum.
    momentum_buffer: Option<Tensor>,
    /// Adam's first moment.
    exp_avg: Option<Tensor>,
    /// Adam's second moment.
    exp_avg_sq: Option<Tensor>,
    /// Adam's step count (a float, as in PyTorch).
    step: f64,
}

/// An optimizer over a fixed list of parameters (in registration order).
#[derive(Debug)]
pub struct Optimizer {
    kind: OptimizerKind,
    params: Vec<Tensor>,
    state: Vec<ParamState>,
    id: u64,
}

impl Optimizer {
    /// An optimizer over `params` (shallow clones of the model's parameters are fine: they share
    /// storage with the model).
    pub fn new(kind: OptimizerKind, params: Vec<Tensor>) -> Self {
        let state = params.iter().map(|_| ParamState::default()).collect();
        let id = NEXT_OPTIMIZER_ID.fetch_add(1, Ordering::Relaxed);
        Self {
            kind,
            params,
            state,
            id,
        }
    }

    /// The update rule and its hyper-parameters.
    pub fn kind(&self) -> OptimizerKind {
        self.kind
    }

    /// The parameters, in registration order (state entries are numbered by this order).
    pub fn params(&self) -> &[Tensor] {
        &self.params
    }

    /// A number no other optimizer of this process has (what `id(optimizer)` is to PyTorch's
    /// `GradScaler`).
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Changes the learning rate (for schedules).
    pub fn set_lr(&mut self, new_lr: f64) {
        match &mut self.kind {
            OptimizerKind::Sgd { lr, .. } | OptimizerKind::Adam { lr, .. } => *lr = new_lr,
        }
    }

    /// Zeroes every gradient in place, as `zero_grad(set_to_none=False)` does (tch cannot reset
    /// a parameter's `.grad` to `None`). A parameter that never received a gradient keeps having
    /// none and is skipped by [`Optimizer::step`]; one whose gradient was zeroed is updated with a
    /// zero gradient (which still moves it under momentum or weight decay).
    pub fn zero_grad(&mut self) -> Result<()> {
        for p in &self.params {
            let mut g = p.grad();
            if g.defined() {
                let _ = g.f_detach_()?;
                let _ = g.f_zero_()?;
            }
        }
        Ok(())
    }

    /// Applies one update to every parameter that has a gradient.
    pub fn step(&mut self) -> Result<()> {
        let kind = self.kind;
        tch::no_grad(|| {
            for (p, st) in self.params.iter_mut().zip(self.state.iter_mut()) {
                let grad = p.grad();
                if !grad.defined() {
                    continue;
                }
                match kind {
                    OptimizerKind::Sgd {
                        lr,
                        momentum,
                        dampening,
                        weight_decay,
                        nesterov,
                    } => sgd_step(
                        p,
                        &grad,
                        st,
                        SgdHyper {
                            lr,
                            momentum,
                            dampening,
                            weight_decay,
                            nesterov,
                        },
                    )?,
                    OptimizerKind::Adam {
                        lr,
                        beta1,
                        beta2,
                        eps,
                        weight_decay,
                        decoupled,
                    } => adam_step(
                        p,
                        &grad,
                        st,
                        AdamHyper {
                            lr,
                            beta1,
                            beta2,
                            eps,
                            weight_decay,
                            decoupled,
                        },
                    )?,
                }
            }
            Ok(())
        })
    }

    /// The optimizer's state as named tensors (`"<index>.momentum_buffer"`, `"<index>.exp_avg"`,
    /// `"<index>.exp_avg_sq"`, `"<index>.step"`), for checkpoints. The buffers are shallow
    /// clones (they share storage with the optimizer's); `step` is a 0-dim f64 tensor, present
    /// once the parameter has been updated by Adam.
    pub fn state_tensors(&self) -> Vec<(String, Tensor)> {
        let mut out = Vec::new();
        for (i, st) in self.state.iter().enumerate() {
            if let Some(b) = &st.momentum_buffer {
                out.push((format!("{i}.momentum_buffer"), b.shallow_clone()));
            }
            if let Some(m) = &st.exp_avg {
                out.push((format!("{i}.exp_avg"), m.shallow_clone()));
            }
            if let Some(v) = &st.exp_avg_sq {
                out.push((format!("{i}.exp_avg_sq"), v.shallow_clone()));
            }
            if st.step > 0.0 {
                out.push((format!("{i}.step"), Tensor::from(st.step)));
            }
        }
        out
    }

    /// Restores state saved by [`Optimizer::state_tensors`], replacing the current state (a
    /// parameter without entries starts fresh). Every name must refer to an existing parameter,
    /// buffers must have their parameter's shape (they are copied to its kind and device), and
    /// `step` must hold one non-negative finite number. On error the state is left unchanged.
    pub fn load_state_tensors(&mut self, named: &[(String, Tensor)]) -> Result<()> {
        let mut fresh: Vec<ParamState> =
            self.params.iter().map(|_| ParamState::default()).collect();
        let mut by_name: BTreeMap<&str, &Tensor> = BTreeMap::new();
        for (n, t) in named {
            if by_name.insert(n.as_str(), t).is_some() {
                return Err(OptimError::State(format!(
                    "optimizer state entry '{n}' appears twice"
                )));
            }
        }
        for (name, t) in by_name {
            let (index, field) = name.split_once('.').ok_or_else(|| {
                OptimError::State(format!(
                    "optimizer state entry '{name}' is not '<index>.<field>'"
                ))
            })?;
            let index: usize = index.parse().map_err(|_| {
                OptimError::State(format!(
                    "optimizer state entry '{name}' has no parameter index"
                ))
            })?;
            let param = self.params.get(index).ok_or_else(|| {
                OptimError::State(format!(
                    "optimizer state entry '{name}' refers to parameter {index}, but the optimizer \
                     has {} parameters",
                    self.params.len()
                ))
            })?;
            let st = &mut fresh[index];
            let buffer = |t: &Tensor| -> Result<Tensor> {
                if t.size() != param.size() {
                    return Err(OptimError::State(format!(
                        "optimizer state entry '{name}' has shape {:?}, but parameter {index} has \
                         shape {:?}",
                        t.size(),
                        param.size()
                    )));
                }
                let mut out = param.f_zeros_like()?.f_detach()?;
                tch::no_grad(|| out.f_copy_(t))?;
                Ok(out)
            };
            match field {
                "momentum_buffer" => st.momentum_buffer = Some(buffer(t)?),
                "exp_avg" => st.exp_avg = Some(buffer(t)?),
                "exp_avg_sq" => st.exp_avg_sq = Some(buffer(t)?),
                "step" => {
                    if t.numel() != 1 {
                        return Err(OptimError::State(format!(
                            "optimizer state entry '{name}' has {} elements, expected one",
                            t.numel()
                        )));
                    }
                    let step = t.f_to_kind(Kind::Double)?.f_double_value(&[])?;
                    if !step.is_finite() || step < 0.0 {
                        return Err(OptimError::State(format!(
                            "optimizer state entry '{name}' holds {step}, not a step count"
                        )));
                    }
                    st.step = step;
                }
                other => {
                    return Err(OptimError::State(format!(
                        "optimizer state entry '{name}' has an unknown field '{other}'"
                    )))
                }
            }
        }
        self.state = fresh;
        Ok(())
    }
}

/// A 0-dim tensor holding `v` in `like`'s kind and on its device: the `alpha` of an `add`
/// expressed as the second factor of an `addcmul`.
fn scalar_like(v: f64, like: &Tensor) -> Result<Tensor> {
    Ok(Tensor::f_scalar_tensor(v, (like.kind(), like.device()))?)
}

/// `x.add(y, alpha=a)` with PyTorch's rounding (see the module doc).
fn add_alpha(x: &Tensor, y: &Tensor, a: f64) -> Result<Tensor> {
    Ok(x.f_addcmul(y, &scalar_like(a, x)?)?)
}

/// `x.add_(y, alpha=a)` with PyTorch's rounding (see the module doc).
fn add_alpha_(x: &mut Tensor, y: &Tensor, a: f64) -> Result<()> {
    let a = scalar_like(a, x)?;
    let _ = x.f_addcmul_(y, &a)?;
    Ok(())
}

/// A new tensor with `t`'s values (`t.detach().clone()`).
fn deep_copy(t: &Tensor) -> Result<Tensor> {
    let mut out = t.f_zeros_like()?.f_detach()?;
    out.f_copy_(t)?;
    Ok(out)
}

/// SGD's hyper-parameters.
#[derive(Clone, Copy)]
struct SgdHyper {
    lr: f64,
    momentum: f64,
    dampening: f64,
    weight_decay: f64,
    nesterov: bool,
}

/// `_single_tensor_sgd` for one parameter.
fn sgd_step(p: &mut Tensor, grad: &Tensor, st: &mut ParamState, h: SgdHyper) -> Result<()> {
    let mut g = if h.weight_decay != 0.0 {
        add_alpha(grad, p, h.weight_decay)?
    } else {
        grad.shallow_clone()
    };
    if h.momentum != 0.0 {
        let buf = match st.momentum_buffer.take() {
            None => deep_copy(&g)?,
            Some(mut buf) => {
                let _ = buf.f_mul_scalar_(h.momentum)?;
                add_alpha_(&mut buf, &g, 1.0 - h.dampening)?;
                buf
            }
        };
        g = if h.nesterov {
            add_alpha(&g, &buf, h.momentum)?
        } else {
            buf.shallow_clone()
        };
        st.momentum_buffer = Some(buf);
    }
    add_alpha_(p, &g, -h.lr)
}

/// Adam's hyper-parameters.
#[derive(Clone, Copy)]
struct AdamHyper {
    lr: f64,
    beta1: f64,
    beta2: f64,
    eps: f64,
    weight_decay: f64,
    decoupled: bool,
}

/// `_single_tensor_adam` (without amsgrad) for one parameter.
fn adam_step(p: &mut Tensor, grad: &Tensor, st: &mut ParamState, h: AdamHyper) -> Result<()> {
    st.step += 1.0;
    let mut g = grad.shallow_clone();
    if h.weight_decay != 0.0 {
        if h.decoupled {
            let _ = p.f_mul_scalar_(1.0 - h.lr * h.weight_decay)?;
        } else {
            g = add_alpha(&g, p, h.weight_decay)?;
        }
    }
    if st.exp_avg.is_none() {
        st.exp_avg = Some(p.f_zeros_like()?.f_detach()?);
    }
    if st.exp_avg_sq.is_none() {
        st.exp_avg_sq = Some(p.f_zeros_like()?.f_detach()?);
    }
    let (Some(exp_avg), Some(exp_avg_sq)) = (st.exp_avg.as_mut(), st.exp_avg_sq.as_mut()) else {
        return Err(OptimError::State(
            "Adam's moment buffers are missing right after their creation".to_owned(),
        ));
    };
    // exp_avg.lerp_(grad, 1 - beta1)
    let _ = exp_avg.f_lerp_(&g, 1.0 - h.beta1)?;
    // exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    let _ = exp_avg_sq.f_mul_scalar_(h.beta2)?;
    let _ = exp_avg_sq.f_addcmul_(&g, &g.f_mul_scalar(1.0 - h.beta2)?)?;
    let bias_correction1 = 1.0 - h.beta1.powf(st.step);
    let bias_correction2 = 1.0 - h.beta2.powf(st.step);
    let step_size = h.lr / bias_correction1;
    // Python's `bias_correction2 ** 0.5` is C's pow, not sqrt.
    let bias_correction2_sqrt = bias_correction2.powf(0.5);
    // denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
    let mut denom = exp_avg_sq.f_sqrt()?.f_div_scalar(bias_correction2_sqrt)?;
    let _ = denom.f_add_scalar_(h.eps)?;
    // param.addcdiv_(exp_avg, denom, value=-step_size)
    let _ = p.f_addcdiv_(&exp_avg.f_mul_scalar(-step_size)?, &denom)?;
    Ok(())
}
