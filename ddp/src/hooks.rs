//! Post-accumulate-grad hooks on parameters: the trigger of gradient
//! bucketing.
//!
//! PyTorch's DDP reducer learns that a parameter's gradient is ready through a
//! post hook on the parameter's `AccumulateGrad` autograd node
//! (`torch::autograd::impl::grad_accumulator(variable)->add_post_hook(...)`
//! in `reducer.cpp`). The engine runs a node's post hooks right after the node,
//! so when the hook runs the new gradient has been accumulated into
//! `param.grad`. This module does the same through a small C++ shim
//! (`csrc/hooks.cpp`) and calls a Rust closure with the parameter's index.
//!
//! # Which thread runs the hooks
//!
//! For a backward pass over CPU tensors the autograd engine executes every node
//! on the thread that called `backward()`, so the callbacks run on that thread,
//! synchronously, one at a time, in gradient-ready order (checked by this
//! crate's tests, including a backward started on a spawned thread). For CUDA
//! tensors libtorch's engine executes nodes on its worker thread for the
//! device, so callbacks run there while the caller blocks in `backward()` (by
//! the engine's design; the tests here run on CPU only). Either way a callback
//! must be `Send + Sync`.
//!
//! # Order
//!
//! Hooks fire once per parameter per backward pass, in the order gradients
//! become ready: roughly the reverse of the order in which the forward pass
//! used the parameters (a layer's bias usually before its weight). With
//! gradient accumulation (several backward passes before the optimizer step)
//! they fire in every pass, each time after the new gradient was added to
//! `.grad`.
//!
//! # Errors and panics
//!
//! A callback returns `Err(message)` to fail the backward pass: the hook throws
//! a C++ exception carrying the message, which the engine hands to the caller
//! of backward (`Tensor::f_backward` returns it as a `TchError`). A panic in a
//! callback is caught before it reaches C++ and is reported the same way.
//! C++ exceptions raised while registering become [`HookError`]s.
//!
//! # Removal
//!
//! Dropping a [`GradHookHandle`] (or the [`GradHooks`] holding it) removes the
//! hook: it never calls its callback again and the callback is released. The
//! handle holds a strong reference to the `AccumulateGrad` node, as the
//! reducer does, so the hook survives between iterations even when no autograd
//! graph keeps the node alive. Because the engine walks a node's hook list
//! without a lock, removal does not erase the hook from the node (that would
//! race with a backward running on another thread); it turns the hook into a
//! no-op that is freed together with the node. Dropping a handle waits for a
//! call of the same hook running on another thread to return, so a callback
//! must not wait for a thread that is dropping its handle. Registration adds
//! to the node's hook list like PyTorch's reducer does, so register hooks
//! before backward passes over the parameter start, not while one runs on
//! another thread.

use std::any::Any;
use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::{self, NonNull};
use std::sync::Arc;

use tch::Tensor;

/// The function a hook calls with the index of the parameter whose gradient
/// has just been accumulated. `Err(message)` fails the backward pass.
pub type GradReadyCallback = dyn Fn(usize) -> Result<(), String> + Send + Sync + 'static;

/// Errors from registering hooks.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// The parameter index does not fit the C++ side's `int64_t`.
    #[error("parameter index {index} does not fit in an i64")]
    IndexOutOfRange {
        /// The index given.
        index: usize,
    },
    /// libtorch refused the registration (undefined tensor, a tensor that does
    /// not require grad, a non-leaf tensor, ...).
    #[error("cannot register the post-accumulate-grad hook of parameter {index}: {message}")]
    Register {
        /// The index given.
        index: usize,
        /// libtorch's message.
        message: String,
    },
}

/// Opaque C++ `ddp_hook`.
#[repr(C)]
struct RawHook {
    _private: [u8; 0],
}

type RawCallback = unsafe extern "C" fn(ctx: *mut c_void, index: i64, err_sink: *mut c_void) -> i32;

extern "C" {
    fn ddp_hook_register(
        param: *const c_void,
        index: i64,
        cb: RawCallback,
        ctx: *mut c_void,
        err: *mut *mut c_char,
    ) -> *mut RawHook;
    fn ddp_hook_remove(handle: *mut RawHook);
    fn ddp_hook_set_error(err_sink: *mut c_void, msg: *const c_char, len: usize);
    fn ddp_error_free(msg: *mut c_char);
    fn ddp_set_grad(param: *const c_void, grad: *const c_void, err: *mut *mut c_char) -> i32;
}

/// Sets `param.grad` to `grad` (`param.grad = grad` in Python), e.g. to give a parameter that
/// had no local gradient the averaged one.
pub fn set_grad(param: &Tensor, grad: &Tensor) -> Result<(), HookError> {
    let mut err: *mut c_char = ptr::null_mut();
    // SAFETY: both pointers are tch's `torch::Tensor*`, valid while the tensors are borrowed;
    // the shim copies the tensor handle into the parameter's grad slot.
    let rc = unsafe { ddp_set_grad(param.as_ptr().cast(), grad.as_ptr().cast(), &mut err) };
    if rc == 0 {
        Ok(())
    } else {
        Err(HookError::Register {
            index: 0,
            message: take_error(err),
        })
    }
}

/// What the C++ hook's context pointer points at (through `Arc::into_raw`).
struct CallbackCtx {
    callback: Arc<GradReadyCallback>,
}

/// The `extern "C"` function every hook calls. Never unwinds.
unsafe extern "C" fn grad_ready_trampoline(
    ctx: *mut c_void,
    index: i64,
    err_sink: *mut c_void,
) -> i32 {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let ctx = ctx as *const CallbackCtx;
        // SAFETY: `ctx` comes from `Arc::into_raw` in `register_shared`; the
        // handle owning that reference releases it only after
        // `ddp_hook_remove` returned, and `ddp_hook_remove` waits for this
        // call (the C++ hook holds its mutex around it). Taking our own
        // reference keeps the context alive even if the callback drops its
        // handle on this thread.
        let ctx = unsafe {
            Arc::increment_strong_count(ctx);
            Arc::from_raw(ctx)
        };
        let index = usize::try_from(index)
            .map_err(|_| format!("negative parameter index {index} in a grad hook"))?;
        (ctx.callback)(index)
    }));
    let message = match outcome {
        Ok(Ok(())) => return 0,
        Ok(Err(message)) => message,
        Err(payload) => {
            let text = format!(
                "the post-accumulate-grad hook of parameter {index} panicked: {}",
                panic_text(payload.as_ref())
            );
            // A payload whose destructor panics must not unwind into C++.
            if let Err(inner) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
                std::mem::forget(inner);
            }
            text
        }
    };
    // SAFETY: `err_sink` is the C++ hook's `std::string*`, valid for this
    // call; the message buffer is valid for `len` bytes.
    unsafe { ddp_hook_set_error(err_sink, message.as_ptr().cast(), message.len()) };
    1
}

fn panic_text(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "non-string panic payload"
    }
}

/// Takes ownership of a message the shim allocated.
fn take_error(err: *mut c_char) -> String {
    if err.is_null() {
        return "unknown error (the C++ shim gave no message)".to_owned();
    }
    // SAFETY: the shim returns a NUL-terminated malloc'ed string, freed once
    // here with the shim's own deallocator.
    unsafe {
        let text = CStr::from_ptr(err).to_string_lossy().into_owned();
        ddp_error_free(err);
        text
    }
}

/// One registered post-accumulate-grad hook. Dropping it removes the hook.
pub struct GradHookHandle {
    raw: NonNull<RawHook>,
    ctx: *const CallbackCtx,
    index: usize,
}

// SAFETY: the C++ handle is only touched in `Drop`, which synchronizes with
// running hooks through the hook's mutex; the context is an `Arc` of a
// `Send + Sync` callback.
unsafe impl Send for GradHookHandle {}
// SAFETY: `&GradHookHandle` only exposes the index.
unsafe impl Sync for GradHookHandle {}

impl GradHookHandle {
    /// Registers `callback` to run each time a gradient has been accumulated
    /// into `param.grad`; it receives `index`. `param` must be a leaf tensor
    /// that requires grad (any parameter of a `tch::nn::VarStore`).
    pub fn register<F>(param: &Tensor, index: usize, callback: F) -> Result<Self, HookError>
    where
        F: Fn(usize) -> Result<(), String> + Send + Sync + 'static,
    {
        Self::register_shared(param, index, Arc::new(callback))
    }

    /// Like [`GradHookHandle::register`], with a callback shared between
    /// several hooks (one per parameter, as a reducer does).
    pub fn register_shared(
        param: &Tensor,
        index: usize,
        callback: Arc<GradReadyCallback>,
    ) -> Result<Self, HookError> {
        let raw_index = i64::try_from(index).map_err(|_| HookError::IndexOutOfRange { index })?;
        let ctx = Arc::into_raw(Arc::new(CallbackCtx { callback }));
        let mut err: *mut c_char = ptr::null_mut();
        // SAFETY: `as_ptr` is tch's `torch::Tensor*`, valid while `param` is
        // borrowed; the shim copies what it needs (the AccumulateGrad node)
        // before returning. `ctx` stays valid until the handle is dropped.
        let raw = unsafe {
            ddp_hook_register(
                param.as_ptr().cast(),
                raw_index,
                grad_ready_trampoline,
                ctx as *mut c_void,
                &mut err,
            )
        };
        match NonNull::new(raw) {
            Some(raw) => Ok(Self { raw, ctx, index }),
            None => {
                // SAFETY: registration failed, so the shim kept no pointer to
                // `ctx`; this releases the reference made above.
                drop(unsafe { Arc::from_raw(ctx) });
                Err(HookError::Register {
                    index,
                    message: take_error(err),
                })
            }
        }
    }

    /// The parameter index this hook reports.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Removes the hook now (the same as dropping the handle).
    pub fn remove(self) {
        drop(self);
    }
}

impl std::fmt::Debug for GradHookHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GradHookHandle")
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

impl Drop for GradHookHandle {
    fn drop(&mut self) {
        // SAFETY: `raw` came from `ddp_hook_register` and is freed exactly
        // once here. After `ddp_hook_remove` returns the hook never uses `ctx`
        // again (a call in flight on this thread holds its own reference), so
        // releasing the handle's reference is sound.
        unsafe {
            ddp_hook_remove(self.raw.as_ptr());
            drop(Arc::from_raw(self.ctx));
        }
    }
}

/// The hooks of a whole parameter list, removed together when dropped.
#[derive(Debug, Default)]
pub struct GradHooks {
    handles: Vec<GradHookHandle>,
}

impl GradHooks {
    /// Registers one hook per parameter; parameter `i` reports index `i`.
    /// On error no hook stays registered.
    pub fn register_all(
        params: &[Tensor],
        callback: Arc<GradReadyCallback>,
    ) -> Result<Self, HookError> {
        Self::register_indexed(params.iter().enumerate(), callback)
    }

    /// Registers one hook per `(index, parameter)` pair. On error no hook
    /// stays registered.
    pub fn register_indexed<'a, I>(
        params: I,
        callback: Arc<GradReadyCallback>,
    ) -> Result<Self, HookError>
    where
        I: IntoIterator<Item = (usize, &'a Tensor)>,
    {
        let handles = params
            .into_iter()
            .map(|(index, param)| GradHookHandle::register_shared(param, index, callback.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { handles })
    }

    /// Number of registered hooks.
    pub fn len(&self) -> usize {
        self.handles.len()
    }

    /// Whether no hook is registered.
    pub fn is_empty(&self) -> bool {
        self.handles.is_empty()
    }

    /// The parameter indices, in registration order.
    pub fn indices(&self) -> impl Iterator<Item = usize> + '_ {
        self.handles.iter().map(GradHookHandle::index)
    }

    /// Removes every hook.
    pub fn clear(&mut self) {
        self.handles.clear();
    }
}
