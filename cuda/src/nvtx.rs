//! NVTX ranges named like the spans of the trace, so an Nsight Systems
//! timeline and a ddp-probe trace of the same run can be read side by side.
//!
//! * [`range`] / [`range_with`]: a push/pop range on the calling thread,
//!   popped when the [`Range`] guard is dropped;
//! * [`start`]: a start/end range that may end on another thread
//!   ([`StartedRange`], e.g. a collective issued on the training thread and
//!   finished on the communication thread);
//! * [`mark`]: an instant.
//!
//! Names come from [`span_name`]: the span's `name` if it has one, else its
//! kind (`forward`, `backward`, `optimizer`...) or, for collectives, its
//! operation, with `bucket <b> ` before and ` seq <s>` after where the span
//! has them: `bucket 3 all_reduce seq 17`.
//!
//! NVTX is loaded from the file [`availability`](super::availability())
//! found (`libnvToolsExt.so.1`, or `libnvtx3interop.so.1` in the CUDA 13
//! wheels). Without it every function here does nothing and returns at
//! once; with it and no profiler attached, NVTX itself does next to nothing.

use std::borrow::Cow;
use std::ffi::{c_char, c_int, CString};
use std::marker::PhantomData;
use std::sync::OnceLock;

use cudarc::nvtx::sys::nvtxRangeId_t;
use probe_contract::trace::{SpanKind, SpanRecord};

use crate::availability::{self, CudaLibrary};
use crate::guarded;

/// The NVTX functions used here (C API names in the comments).
struct NvtxApi {
    /// `nvtxRangePushA`.
    push: unsafe extern "C" fn(*const c_char) -> c_int,
    /// `nvtxRangePop`.
    pop: unsafe extern "C" fn() -> c_int,
    /// `nvtxRangeStartA`.
    start: unsafe extern "C" fn(*const c_char) -> nvtxRangeId_t,
    /// `nvtxRangeEnd`.
    end: unsafe extern "C" fn(nvtxRangeId_t),
    /// `nvtxMarkA`.
    mark: unsafe extern "C" fn(*const c_char),
}

impl NvtxApi {
    fn load() -> Option<NvtxApi> {
        let lib = availability::open_for_use(CudaLibrary::Nvtx).ok()?;
        // SAFETY (every `function` call): the types are the declarations of
        // nvToolsExt.h (`int nvtxRangePushA(const char*)`, `int
        // nvtxRangePop(void)`, `nvtxRangeId_t nvtxRangeStartA(const char*)`,
        // `void nvtxRangeEnd(nvtxRangeId_t)`, `void nvtxMarkA(const char*)`),
        // and the library stays loaded for the rest of the process.
        unsafe {
            Some(NvtxApi {
                push: lib.function("nvtxRangePushA").ok()?,
                pop: lib.function("nvtxRangePop").ok()?,
                start: lib.function("nvtxRangeStartA").ok()?,
                end: lib.function("nvtxRangeEnd").ok()?,
                mark: lib.function("nvtxMarkA").ok()?,
            })
        }
    }
}

static API: OnceLock<Option<NvtxApi>> = OnceLock::new();

fn api() -> Option<&'static NvtxApi> {
    API.get_or_init(|| {
        guarded("ddp_cuda::nvtx", || {
            Ok(availability::require(&[CudaLibrary::Nvtx])
                .ok()
                .and_then(|()| NvtxApi::load()))
        })
        .ok()
        .flatten()
    })
    .as_ref()
}

/// Whether NVTX was loaded (ranges are recorded, if a tool listens).
pub fn is_enabled() -> bool {
    api().is_some()
}

/// `name` as a C string (interior NULs become spaces).
pub(crate) fn c_name(name: &str) -> CString {
    CString::new(name.replace('\0', " ")).unwrap_or_default()
}

/// A push/pop range on the current thread; popped on drop. Not `Send`:
/// NVTX push/pop ranges nest per thread.
#[must_use = "the range ends when the guard is dropped"]
pub struct Range {
    active: bool,
    _not_send: PhantomData<*const ()>,
}

impl Range {
    /// Whether the range was pushed (NVTX is loaded).
    pub fn is_active(&self) -> bool {
        self.active
    }

    /// Ends the range now.
    pub fn end(self) {
        drop(self);
    }
}

impl Drop for Range {
    fn drop(&mut self) {
        if self.active {
            if let Some(api) = api() {
                // SAFETY: pops the range this guard pushed on this thread
                // (the guard is not Send).
                unsafe { (api.pop)() };
            }
        }
    }
}

/// Pushes a range named `name` on the current thread.
pub fn range(name: &str) -> Range {
    range_with(|| name)
}

/// Pushes a range whose name is built by `name` only when NVTX is loaded.
pub fn range_with<S: AsRef<str>>(name: impl FnOnce() -> S) -> Range {
    let Some(api) = api() else {
        return Range {
            active: false,
            _not_send: PhantomData,
        };
    };
    let c = c_name(name().as_ref());
    // SAFETY: `c` is a valid NUL-terminated string for the call (NVTX copies
    // what it keeps).
    unsafe { (api.push)(c.as_ptr()) };
    Range {
        active: true,
        _not_send: PhantomData,
    }
}

/// Pushes a range named like `span` ([`span_name`]).
pub fn range_for(span: &SpanRecord) -> Range {
    range_with(|| span_name(span))
}

/// A start/end range, ended on drop or by [`StartedRange::end`], on any
/// thread.
#[must_use = "the range ends when the guard is dropped"]
pub struct StartedRange {
    id: Option<nvtxRangeId_t>,
}

impl StartedRange {
    /// Whether the range was started (NVTX is loaded).
    pub fn is_active(&self) -> bool {
        self.id.is_some()
    }

    /// Ends the range now.
    pub fn end(self) {
        drop(self);
    }
}

impl Drop for StartedRange {
    fn drop(&mut self) {
        if let (Some(id), Some(api)) = (self.id.take(), api()) {
            // SAFETY: `id` came from nvtxRangeStartA and is ended once.
            unsafe { (api.end)(id) };
        }
    }
}

/// Starts a range named `name` that may end on another thread.
pub fn start(name: &str) -> StartedRange {
    let Some(api) = api() else {
        return StartedRange { id: None };
    };
    let c = c_name(name);
    // SAFETY: `c` is a valid NUL-terminated string for the call.
    let id = unsafe { (api.start)(c.as_ptr()) };
    StartedRange { id: Some(id) }
}

/// Marks an instant named `name`.
pub fn mark(name: &str) {
    if let Some(api) = api() {
        let c = c_name(name);
        // SAFETY: `c` is a valid NUL-terminated string for the call.
        unsafe { (api.mark)(c.as_ptr()) };
    }
}

/// The name of a range for a span of `kind`: `op` for collectives (when
/// given), else the kind's name; `bucket <b> ` before and ` seq <s>` after
/// when given.
pub fn name(kind: SpanKind, op: Option<&str>, bucket: Option<u32>, seq: Option<u64>) -> String {
    let base = match (kind, op) {
        (SpanKind::Collective, Some(op)) => op,
        _ => kind.as_str(),
    };
    let mut out = String::with_capacity(base.len() + 24);
    if let Some(b) = bucket {
        out.push_str(&format!("bucket {b} "));
    }
    out.push_str(base);
    if let Some(s) = seq {
        out.push_str(&format!(" seq {s}"));
    }
    out
}

/// The range name for `span`: its `name` if set, else [`name`] of its kind,
/// operation, bucket and sequence number.
pub fn span_name(span: &SpanRecord) -> Cow<'_, str> {
    match &span.name {
        Some(n) => Cow::Borrowed(n.as_ref()),
        None => Cow::Owned(name(span.kind, span.op.as_deref(), span.bucket, span.seq)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_trace() {
        assert_eq!(name(SpanKind::Forward, None, None, None), "forward");
        assert_eq!(
            name(SpanKind::Collective, Some("all_reduce"), Some(3), Some(17)),
            "bucket 3 all_reduce seq 17"
        );
        assert_eq!(
            name(SpanKind::Collective, Some("broadcast"), None, Some(0)),
            "broadcast seq 0"
        );
        assert_eq!(
            name(SpanKind::BucketReady, None, Some(2), None),
            "bucket 2 bucket_ready"
        );
        let span = SpanRecord::new(SpanKind::Collective, 1, 0, 1)
            .op("all_reduce")
            .bucket(3)
            .seq(17);
        assert_eq!(span_name(&span), "bucket 3 all_reduce seq 17");
        let named =
            SpanRecord::new(SpanKind::Collective, 0, 0, 1).name("initial parameter broadcast");
        assert_eq!(span_name(&named), "initial parameter broadcast");
        assert_eq!(
            span_name(&SpanRecord::new(SpanKind::Backward, 0, 0, 1)),
            "backward"
        );
    }

    #[test]
    fn c_names_never_fail() {
        assert_eq!(c_name("a\0b").to_str().unwrap(), "a b");
    }

    #[test]
    fn ranges_work_with_or_without_nvtx() {
        // NVTX may or may not be present here; either way nothing panics and
        // guards report what they did.
        let r = range("forward");
        assert_eq!(r.is_active(), is_enabled());
        {
            let _inner =
                range_with(|| name(SpanKind::Collective, Some("all_reduce"), Some(0), Some(1)));
        }
        r.end();
        let s = start("backward");
        assert_eq!(s.is_active(), is_enabled());
        std::thread::spawn(move || s.end()).join().unwrap();
        mark("step 3");
    }
}
