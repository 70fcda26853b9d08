//! GPU kernels, memory copies and memory sets from CUPTI's activity API,
//! recorded as `kernel`/`memcpy` spans of the trace: [`KernelTracer`].
//!
//! # How it works
//!
//! [`KernelTracer::start`] registers the two activity-buffer callbacks and
//! enables `CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL`, `..._MEMCPY` and
//! `..._MEMSET`. CUPTI asks for buffers (*buffer requested*), fills them
//! with records while the GPU works, and hands them back (*buffer
//! completed*), on its own thread or on the thread that calls
//! `cuptiActivityFlushAll`. A background thread (`ddp-probe-cupti`) forces
//! such a flush every [`TracerOptions::flush_interval`], so records reach the
//! trace within about that time; [`KernelTracer::flush`] does it at once.
//!
//! Each completed record is read field by field at the offsets of the CUDA
//! 13.0 structures (`CUpti_ActivityKernel10`, `CUpti_ActivityMemcpy6`,
//! `CUpti_ActivityMemset4`; the fields read here sit at the same offsets in
//! every version since CUDA 11, which the tests check), never as a whole
//! struct, so unknown enum values in a record cannot be undefined behaviour.
//!
//! # Clocks
//!
//! CUPTI timestamps are nanoseconds on CUPTI's own clock. Each flush pairs
//! `cuptiGetTimestamp` with two readings of [`probe_contract::clock::now_ns`] around
//! it and keeps the pair with the shortest gap ([`ClockSample`]); the
//! [`ClockMap`] converts device timestamps to the trace clock by the
//! offset of the nearest calibrations, interpolated between two of them so
//! slow drift between the clocks is followed.
//!
//! # Categories and steps
//!
//! [`classify`]: kernels whose name starts with `nccl` (mangled or not) are
//! `comm`, records of memory copies `memcpy` and of memory sets `memset`,
//! every other kernel `compute`. Records arrive after the fact, so the step
//! of a span comes from [`KernelTracer::mark_step`] calls: the last step
//! that began (on the host clock) before the kernel started.

use std::collections::VecDeque;
use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use cudarc::cupti::sys::{
    CUptiResult, CUpti_ActivityKernel10, CUpti_ActivityKind, CUpti_ActivityMemcpy6,
    CUpti_ActivityMemset4,
};
use probe_contract::clock::now_ns;
use probe_contract::recorder::Recorder;
use probe_contract::trace::{KernelCategory, SpanKind, SpanRecord};

use crate::availability::{self, CudaLibrary, Unavailable};
use crate::error::CudaError;
use crate::{guarded, lock};

/// The record layout of kernels (`CONCURRENT_KERNEL` and `KERNEL`).
type KernelRecord = CUpti_ActivityKernel10;
/// The record layout of memory copies.
type MemcpyRecord = CUpti_ActivityMemcpy6;
/// The record layout of memory sets.
type MemsetRecord = CUpti_ActivityMemset4;

const KIND_MEMCPY: u32 = CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMCPY as u32;
const KIND_MEMSET: u32 = CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMSET as u32;
const KIND_KERNEL: u32 = CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_KERNEL as u32;
const KIND_CONCURRENT_KERNEL: u32 =
    CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL as u32;
/// The kinds the tracer enables.
const ENABLED_KINDS: [u32; 3] = [KIND_CONCURRENT_KERNEL, KIND_MEMCPY, KIND_MEMSET];

const CUPTI_SUCCESS: u32 = CUptiResult::CUPTI_SUCCESS as u32;
const CUPTI_MAX_LIMIT_REACHED: u32 = CUptiResult::CUPTI_ERROR_MAX_LIMIT_REACHED as u32;
/// `CUPTI_ACTIVITY_FLAG_FLUSH_FORCED`: also hand over partly filled buffers.
const FLUSH_FORCED: u32 = 1;
/// CUPTI wants activity buffers aligned to 8 bytes.
const BUFFER_ALIGN: usize = 8;
/// Bytes before each buffer that remember its allocation size.
const BUFFER_HEADER: usize = 8;

// ----- pure part: records, categories, clocks, steps -----

/// What a record describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ActivityClass {
    /// A kernel.
    Kernel,
    /// A memory copy.
    Memcpy,
    /// A memory set.
    Memset,
}

/// The fields of a CUPTI record the trace uses; timestamps on CUPTI's clock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Activity {
    /// Kernel, copy or set.
    pub class: ActivityClass,
    /// Start (CUPTI ns).
    pub start: u64,
    /// End (CUPTI ns).
    pub end: u64,
    /// GPU index.
    pub device: u32,
    /// CUDA context id.
    pub context: u32,
    /// Stream id.
    pub stream: u32,
    /// Correlation id of the launching API call.
    pub correlation: u32,
    /// Bytes copied or set.
    pub bytes: Option<u64>,
    /// `CUpti_ActivityMemcpyKind` of a copy.
    pub copy_kind: Option<u8>,
    /// Kernel name (as the compiler emitted it, usually mangled).
    pub name: Option<String>,
}

/// A parsed record whose kernel name is still a pointer into CUPTI's memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RawActivity {
    pub(crate) activity: Activity,
    pub(crate) name_ptr: usize,
}

impl RawActivity {
    /// The activity with its kernel name copied.
    ///
    /// # Safety
    /// `name_ptr` must be NULL or point to a NUL-terminated string valid for
    /// the duration of the call (CUPTI's kernel names are, while the buffer
    /// holding the record is being processed).
    pub(crate) unsafe fn into_activity(self) -> Activity {
        let mut a = self.activity;
        if self.name_ptr != 0 {
            // SAFETY: by the caller's contract.
            let s = unsafe { CStr::from_ptr(self.name_ptr as *const c_char) };
            a.name = Some(s.to_string_lossy().into_owned());
        }
        a
    }
}

fn read_u8(b: &[u8], off: usize) -> Option<u8> {
    b.get(off).copied()
}

fn read_u32(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

fn read_u64(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(off..off + 8)?.try_into().ok()?))
}

fn read_usize(b: &[u8], off: usize) -> Option<usize> {
    const N: usize = std::mem::size_of::<usize>();
    Some(usize::from_ne_bytes(b.get(off..off + N)?.try_into().ok()?))
}

macro_rules! field {
    ($read:ident, $b:expr, $t:ty, $f:ident) => {
        $read($b, std::mem::offset_of!($t, $f))
    };
}

/// Reads one activity record from `record` (the bytes from the record's
/// start to the end of the valid part of its buffer). `None` for kinds the
/// tracer does not use, or a record cut short.
pub(crate) fn parse_record(record: &[u8]) -> Option<RawActivity> {
    let kind = read_u32(record, 0)?;
    match kind {
        KIND_KERNEL | KIND_CONCURRENT_KERNEL => Some(RawActivity {
            activity: Activity {
                class: ActivityClass::Kernel,
                start: field!(read_u64, record, KernelRecord, start)?,
                end: field!(read_u64, record, KernelRecord, end)?,
                device: field!(read_u32, record, KernelRecord, deviceId)?,
                context: field!(read_u32, record, KernelRecord, contextId)?,
                stream: field!(read_u32, record, KernelRecord, streamId)?,
                correlation: field!(read_u32, record, KernelRecord, correlationId)?,
                bytes: None,
                copy_kind: None,
                name: None,
            },
            name_ptr: field!(read_usize, record, KernelRecord, name)?,
        }),
        KIND_MEMCPY => Some(RawActivity {
            activity: Activity {
                class: ActivityClass::Memcpy,
                start: field!(read_u64, record, MemcpyRecord, start)?,
                end: field!(read_u64, record, MemcpyRecord, end)?,
                device: field!(read_u32, record, MemcpyRecord, deviceId)?,
                context: field!(read_u32, record, MemcpyRecord, contextId)?,
                stream: field!(read_u32, record, MemcpyRecord, streamId)?,
                correlation: field!(read_u32, record, MemcpyRecord, correlationId)?,
                bytes: Some(field!(read_u64, record, MemcpyRecord, bytes)?),
                copy_kind: Some(field!(read_u8, record, MemcpyRecord, copyKind)?),
                name: None,
            },
            name_ptr: 0,
        }),
        KIND_MEMSET => Some(RawActivity {
            activity: Activity {
                class: ActivityClass::Memset,
                start: field!(read_u64, record, MemsetRecord, start)?,
                end: field!(read_u64, record, MemsetRecord, end)?,
                device: field!(read_u32, record, MemsetRecord, deviceId)?,
                context: field!(read_u32, record, MemsetRecord, contextId)?,
                stream: field!(read_u32, record, MemsetRecord, streamId)?,
                correlation: field!(read_u32, record, MemsetRecord, correlationId)?,
                bytes: Some(field!(read_u64, record, MemsetRecord, bytes)?),
                copy_kind: None,
                name: None,
            },
            name_ptr: 0,
        }),
        _ => None,
    }
}

/// The first identifier of a kernel name: the name itself up to `(`, `<`
/// or a space, or for an Itanium-mangled name (`_Z...`) the first
/// length-prefixed component (`_ZN4nccl...` → `nccl`,
/// `_Z38ncclDevKernel_AllReduce...` → `ncclDevKernel_AllReduce...`).
pub fn leading_identifier(name: &str) -> &str {
    if let Some(rest) = name.strip_prefix("_Z") {
        let rest = rest.strip_prefix('N').unwrap_or(rest);
        let rest = rest.trim_start_matches(['K', 'V', 'r']);
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if let Ok(len) = rest[..digits].parse::<usize>() {
            if let Some(ident) = rest.get(digits..digits + len) {
                return ident;
            }
        }
        return name;
    }
    let end = name.find(['(', '<', ' ']).unwrap_or(name.len());
    &name[..end]
}

/// The category of a record: NCCL kernels are `comm`, copies `memcpy`, sets
/// `memset`, other kernels `compute` (a kernel named like CUDA's
/// `Memcpy ...`/`Memset ...` activity names counts as a copy/set).
pub fn classify(class: ActivityClass, name: Option<&str>) -> KernelCategory {
    match class {
        ActivityClass::Memcpy => KernelCategory::Memcpy,
        ActivityClass::Memset => KernelCategory::Memset,
        ActivityClass::Kernel => {
            let ident = name.map(leading_identifier).unwrap_or("");
            if ident.starts_with("nccl") {
                KernelCategory::Comm
            } else if ident.starts_with("Memcpy") {
                KernelCategory::Memcpy
            } else if ident.starts_with("Memset") {
                KernelCategory::Memset
            } else {
                KernelCategory::Compute
            }
        }
    }
}

/// The direction of a copy (`CUpti_ActivityMemcpyKind`), as Nsight names it.
pub fn memcpy_kind_name(kind: u8) -> &'static str {
    match kind {
        1 => "HtoD",
        2 => "DtoH",
        3 => "HtoA",
        4 => "AtoH",
        5 => "AtoA",
        6 => "AtoD",
        7 => "DtoA",
        8 => "DtoD",
        9 => "HtoH",
        10 => "PtoP",
        _ => "unknown",
    }
}

/// One reading of CUPTI's clock between two readings of the trace clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockSample {
    /// [`probe_contract::clock::now_ns`] before `cuptiGetTimestamp`.
    pub host_before: u64,
    /// `cuptiGetTimestamp`.
    pub device: u64,
    /// [`probe_contract::clock::now_ns`] after.
    pub host_after: u64,
}

impl ClockSample {
    /// The gap between the host readings.
    pub fn gap(&self) -> u64 {
        self.host_after.saturating_sub(self.host_before)
    }

    /// Host time minus device time, taking the host reading as the middle
    /// of the gap.
    pub fn offset(&self) -> i128 {
        let mid = i128::from(self.host_before) + i128::from(self.gap()) / 2;
        mid - i128::from(self.device)
    }
}

/// The sample with the shortest gap (the most precise), if any.
pub fn best_sample(samples: &[ClockSample]) -> Option<ClockSample> {
    samples
        .iter()
        .filter(|s| s.host_after >= s.host_before)
        .min_by_key(|s| s.gap())
        .copied()
}

/// Converts CUPTI timestamps to the trace clock from calibration points.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClockMap {
    /// (device time, host − device), sorted by device time.
    points: Vec<(u64, i128)>,
}

impl ClockMap {
    /// At most this many calibration points are kept (the oldest go).
    pub const MAX_POINTS: usize = 256;

    /// Adds the best of `samples` as a calibration point.
    pub fn calibrate(&mut self, samples: &[ClockSample]) -> Option<ClockSample> {
        let best = best_sample(samples)?;
        let point = (best.device, best.offset());
        let at = self.points.partition_point(|p| p.0 < point.0);
        if self.points.get(at).is_some_and(|p| p.0 == point.0) {
            self.points[at] = point;
        } else {
            self.points.insert(at, point);
        }
        if self.points.len() > Self::MAX_POINTS {
            self.points.remove(0);
        }
        Some(best)
    }

    /// Whether there is at least one calibration.
    pub fn is_calibrated(&self) -> bool {
        !self.points.is_empty()
    }

    /// The offset at device time `t`: the nearest point's outside the
    /// calibrated range, linear between two points inside it.
    fn offset_at(&self, t: u64) -> Option<i128> {
        let first = self.points.first()?;
        let last = self.points.last()?;
        if t <= first.0 {
            return Some(first.1);
        }
        if t >= last.0 {
            return Some(last.1);
        }
        let i = self.points.partition_point(|p| p.0 <= t);
        let (d0, o0) = self.points[i - 1];
        let (d1, o1) = self.points[i];
        let span = i128::from(d1 - d0);
        if span == 0 {
            return Some(o0);
        }
        Some(o0 + (o1 - o0) * i128::from(t - d0) / span)
    }

    /// Device time `t` on the trace clock (saturating), `None` before any
    /// calibration.
    pub fn to_host(&self, t: u64) -> Option<u64> {
        let host = i128::from(t) + self.offset_at(t)?;
        Some(host.clamp(0, i128::from(u64::MAX)) as u64)
    }
}

/// When each training step began (trace clock), to give GPU spans a step.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StepTimeline {
    starts: VecDeque<(u64, u64)>,
}

impl StepTimeline {
    /// At most this many step starts are kept (the oldest go).
    pub const MAX_STEPS: usize = 4096;

    /// Notes that `step` began at `t`.
    pub fn mark(&mut self, step: u64, t: u64) {
        let at = self.starts.partition_point(|s| s.0 <= t);
        self.starts.insert(at, (t, step));
        while self.starts.len() > Self::MAX_STEPS {
            self.starts.pop_front();
        }
    }

    /// The step that had begun last at `t`, `None` before the first one.
    pub fn step_at(&self, t: u64) -> Option<u64> {
        let i = self.starts.partition_point(|s| s.0 <= t);
        i.checked_sub(1).map(|i| self.starts[i].1)
    }
}

/// The trace span of an activity: `kernel` spans for kernels (category from
/// [`classify`]) and memory sets (category `memset`), `memcpy` spans for
/// copies; `None` until the clock is calibrated.
pub fn activity_span(a: &Activity, clock: &ClockMap, steps: &StepTimeline) -> Option<SpanRecord> {
    let start = clock.to_host(a.start)?;
    let end = clock.to_host(a.end.max(a.start))?.max(start);
    let category = classify(a.class, a.name.as_deref());
    let (kind, name) = match a.class {
        ActivityClass::Kernel => (
            SpanKind::Kernel,
            a.name.clone().unwrap_or_else(|| "kernel".to_owned()),
        ),
        ActivityClass::Memcpy => (
            SpanKind::Memcpy,
            format!("Memcpy {}", memcpy_kind_name(a.copy_kind.unwrap_or(0))),
        ),
        ActivityClass::Memset => (SpanKind::Kernel, "Memset".to_owned()),
    };
    let step = steps.step_at(start);
    let mut span = SpanRecord::new(kind, step.unwrap_or(0), start, end)
        .name(name)
        .device(a.device)
        .stream(u64::from(a.stream))
        .correlation(u64::from(a.correlation))
        .category(category);
    if step.is_none() {
        span = span.without_step();
    }
    if let Some(b) = a.bytes {
        span = span.bytes(b);
    }
    Some(span)
}

// ----- the library -----

/// `void (*)(uint8_t **buffer, size_t *size, size_t *maxNumRecords)`.
type RequestFn = unsafe extern "C" fn(*mut *mut u8, *mut usize, *mut usize);
/// `void (*)(CUcontext, uint32_t streamId, uint8_t *buffer, size_t size,
/// size_t validSize)`.
type CompleteFn = unsafe extern "C" fn(*mut c_void, u32, *mut u8, usize, usize);

/// The CUPTI functions used here; `CUptiResult` and `CUpti_ActivityKind`
/// (C enums) as `u32`.
struct CuptiApi {
    /// `cuptiActivityEnable`.
    enable: unsafe extern "C" fn(u32) -> u32,
    /// `cuptiActivityDisable`.
    disable: unsafe extern "C" fn(u32) -> u32,
    /// `cuptiActivityRegisterCallbacks`.
    register_callbacks: unsafe extern "C" fn(Option<RequestFn>, Option<CompleteFn>) -> u32,
    /// `cuptiActivityFlushAll`.
    flush_all: unsafe extern "C" fn(u32) -> u32,
    /// `cuptiActivityGetNextRecord`.
    get_next_record: unsafe extern "C" fn(*mut u8, usize, *mut *mut c_void) -> u32,
    /// `cuptiActivityGetNumDroppedRecords`.
    dropped_records: unsafe extern "C" fn(*mut c_void, u32, *mut usize) -> u32,
    /// `cuptiGetTimestamp`.
    get_timestamp: unsafe extern "C" fn(*mut u64) -> u32,
    /// `cuptiGetResultString`.
    result_string: unsafe extern "C" fn(u32, *mut *const c_char) -> u32,
}

impl CuptiApi {
    fn load() -> Result<CuptiApi, Unavailable> {
        let lib = availability::open_for_use(CudaLibrary::Cupti)?;
        let missing = |msg: String| Unavailable {
            library: CudaLibrary::Cupti,
            searched_names: vec![lib.name().to_owned()],
            searched_dirs: Vec::new(),
            failures: vec![msg],
        };
        // SAFETY (every `function` call): the types are the declarations of
        // cupti_activity.h / cupti_result.h with C enums as u32 and
        // `CUpti_Activity**`/`CUcontext` as untyped pointers (same ABI), and
        // the library stays loaded for the rest of the process.
        unsafe {
            Ok(CuptiApi {
                enable: lib.function("cuptiActivityEnable").map_err(missing)?,
                disable: lib.function("cuptiActivityDisable").map_err(missing)?,
                register_callbacks: lib
                    .function("cuptiActivityRegisterCallbacks")
                    .map_err(missing)?,
                flush_all: lib.function("cuptiActivityFlushAll").map_err(missing)?,
                get_next_record: lib
                    .function("cuptiActivityGetNextRecord")
                    .map_err(missing)?,
                dropped_records: lib
                    .function("cuptiActivityGetNumDroppedRecords")
                    .map_err(missing)?,
                get_timestamp: lib.function("cuptiGetTimestamp").map_err(missing)?,
                result_string: lib.function("cuptiGetResultString").map_err(missing)?,
            })
        }
    }

    fn check(&self, call: &'static str, code: u32) -> Result<(), CudaError> {
        if code == CUPTI_SUCCESS {
            return Ok(());
        }
        let mut s: *const c_char = std::ptr::null();
        // SAFETY: `s` is a valid out-pointer; CUPTI stores a static string.
        let rc = unsafe { (self.result_string)(code, &mut s) };
        let message = if rc == CUPTI_SUCCESS && !s.is_null() {
            // SAFETY: non-null, NUL-terminated, static.
            unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
        } else {
            "no description".to_owned()
        };
        Err(CudaError::Cupti {
            call,
            code,
            message,
        })
    }

    fn timestamp(&self) -> Result<u64, CudaError> {
        let mut t = 0u64;
        // SAFETY: `t` is a valid out-pointer.
        let rc = unsafe { (self.get_timestamp)(&mut t) };
        self.check("cuptiGetTimestamp", rc)?;
        Ok(t)
    }

    /// A few clock samples, to keep the best.
    fn samples(&self) -> Result<Vec<ClockSample>, CudaError> {
        let mut v = Vec::with_capacity(8);
        for _ in 0..8 {
            let host_before = now_ns();
            let device = self.timestamp()?;
            let host_after = now_ns();
            v.push(ClockSample {
                host_before,
                device,
                host_after,
            });
        }
        Ok(v)
    }
}

static API: OnceLock<Result<CuptiApi, Unavailable>> = OnceLock::new();

fn api() -> Result<&'static CuptiApi, CudaError> {
    availability::require(&[CudaLibrary::Driver, CudaLibrary::Cupti])?;
    API.get_or_init(CuptiApi::load)
        .as_ref()
        .map_err(|e| CudaError::Unavailable(e.clone()))
}

// ----- the tracer -----

/// Options of [`KernelTracer::start`].
#[derive(Clone, Debug)]
pub struct TracerOptions {
    /// Size of each activity buffer handed to CUPTI (default 8 MiB).
    pub buffer_bytes: usize,
    /// How often completed records are forced out to the trace; `None`:
    /// only when CUPTI fills a buffer or on [`KernelTracer::flush`]/stop.
    pub flush_interval: Option<Duration>,
}

impl Default for TracerOptions {
    fn default() -> Self {
        TracerOptions {
            buffer_bytes: 8 << 20,
            flush_interval: Some(Duration::from_millis(500)),
        }
    }
}

/// What a tracer saw so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TracerStats {
    /// Buffers CUPTI handed back.
    pub buffers: u64,
    /// Kernel records.
    pub kernels: u64,
    /// Memory copy records.
    pub memcpys: u64,
    /// Memory set records.
    pub memsets: u64,
    /// Records of other kinds, ignored.
    pub other: u64,
    /// Spans sent to the recorder.
    pub spans: u64,
    /// Records CUPTI dropped (buffers too small or too few).
    pub dropped: u64,
    /// Buffers whose reading stopped at an error.
    pub errors: u64,
}

#[derive(Default)]
struct Counters {
    buffers: AtomicU64,
    kernels: AtomicU64,
    memcpys: AtomicU64,
    memsets: AtomicU64,
    other: AtomicU64,
    spans: AtomicU64,
    dropped: AtomicU64,
    errors: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> TracerStats {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        TracerStats {
            buffers: g(&self.buffers),
            kernels: g(&self.kernels),
            memcpys: g(&self.memcpys),
            memsets: g(&self.memsets),
            other: g(&self.other),
            spans: g(&self.spans),
            dropped: g(&self.dropped),
            errors: g(&self.errors),
        }
    }
}

/// State shared by the tracer and CUPTI's callbacks.
struct Shared {
    api: &'static CuptiApi,
    recorder: Arc<Recorder>,
    clock: Mutex<ClockMap>,
    steps: Mutex<StepTimeline>,
    buffer_bytes: usize,
    counters: Counters,
}

impl Shared {
    fn calibrate(&self) -> Result<(), CudaError> {
        let samples = self.api.samples()?;
        lock(&self.clock).calibrate(&samples);
        Ok(())
    }

    fn flush(&self) -> Result<(), CudaError> {
        // SAFETY: no preconditions; completed buffers are delivered to the
        // callbacks on this thread before it returns.
        let rc = unsafe { (self.api.flush_all)(FLUSH_FORCED) };
        self.api.check("cuptiActivityFlushAll", rc)?;
        self.calibrate()
    }

    /// Reads every record of a completed buffer.
    ///
    /// # Safety
    /// `buffer` must be a buffer CUPTI completed, with `valid` bytes of
    /// records.
    unsafe fn process(&self, buffer: *mut u8, valid: usize) {
        self.counters.buffers.fetch_add(1, Ordering::Relaxed);
        let clock = lock(&self.clock).clone();
        let steps = lock(&self.steps).clone();
        let mut record: *mut c_void = std::ptr::null_mut();
        loop {
            // SAFETY: `buffer`/`valid` describe a completed buffer (caller's
            // contract); `record` is a valid in/out pointer, NULL at first.
            let rc = unsafe { (self.api.get_next_record)(buffer, valid, &mut record) };
            if rc == CUPTI_MAX_LIMIT_REACHED {
                break;
            }
            if rc != CUPTI_SUCCESS {
                self.counters.errors.fetch_add(1, Ordering::Relaxed);
                break;
            }
            let offset = (record as usize).wrapping_sub(buffer as usize);
            if record.is_null() || offset >= valid {
                self.counters.errors.fetch_add(1, Ordering::Relaxed);
                break;
            }
            // SAFETY: the record lies in the valid part of the buffer, which
            // stays allocated until the completion callback frees it.
            let bytes = unsafe { std::slice::from_raw_parts(record as *const u8, valid - offset) };
            let Some(raw) = parse_record(bytes) else {
                self.counters.other.fetch_add(1, Ordering::Relaxed);
                continue;
            };
            let counter = match raw.activity.class {
                ActivityClass::Kernel => &self.counters.kernels,
                ActivityClass::Memcpy => &self.counters.memcpys,
                ActivityClass::Memset => &self.counters.memsets,
            };
            counter.fetch_add(1, Ordering::Relaxed);
            // SAFETY: kernel names are CUPTI-owned strings valid while the
            // buffer is processed.
            let activity = unsafe { raw.into_activity() };
            if let Some(span) = activity_span(&activity, &clock, &steps) {
                self.recorder.push_span(span);
                self.counters.spans.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// The tracer whose recorder gets CUPTI's records (one per process: CUPTI's
/// activity callbacks are process-wide).
static ACTIVE: Mutex<Option<Arc<Shared>>> = Mutex::new(None);

fn active() -> Option<Arc<Shared>> {
    lock(&ACTIVE).clone()
}

fn buffer_layout(total: usize) -> Option<std::alloc::Layout> {
    std::alloc::Layout::from_size_align(total, BUFFER_ALIGN).ok()
}

/// CUPTI's *buffer requested* callback: an 8-byte aligned buffer whose
/// allocation size is kept in a header just before it.
unsafe extern "C" fn buffer_requested(
    buffer: *mut *mut u8,
    size: *mut usize,
    max_num_records: *mut usize,
) {
    let _ = std::panic::catch_unwind(|| {
        if buffer.is_null() || size.is_null() || max_num_records.is_null() {
            return;
        }
        let bytes = active().map_or(TracerOptions::default().buffer_bytes, |s| s.buffer_bytes);
        let (mut out, mut out_size) = (std::ptr::null_mut(), 0usize);
        if let Some(layout) = bytes.checked_add(BUFFER_HEADER).and_then(buffer_layout) {
            // SAFETY: the layout has a non-zero size.
            let base = unsafe { std::alloc::alloc(layout) };
            if !base.is_null() {
                // SAFETY: `base` is 8-aligned and has room for the header
                // and `bytes` more.
                unsafe {
                    (base as *mut usize).write(layout.size());
                    out = base.add(BUFFER_HEADER);
                }
                out_size = bytes;
            }
        }
        // SAFETY: the out-pointers were checked non-null; CUPTI reads NULL
        // with size 0 as "no buffer" (it then drops records).
        unsafe {
            *buffer = out;
            *size = out_size;
            *max_num_records = 0;
        }
    });
}

/// Frees a buffer from [`buffer_requested`].
///
/// # Safety
/// `buffer` must be NULL or a pointer [`buffer_requested`] handed out and
/// not yet freed.
unsafe fn free_buffer(buffer: *mut u8) {
    if buffer.is_null() {
        return;
    }
    // SAFETY: the header precedes the buffer within the same allocation.
    let base = unsafe { buffer.sub(BUFFER_HEADER) };
    // SAFETY: the header holds the allocation size written at allocation.
    let total = unsafe { (base as *const usize).read() };
    if let Some(layout) = buffer_layout(total) {
        // SAFETY: allocated by `alloc` with this very layout.
        unsafe { std::alloc::dealloc(base, layout) };
    }
}

/// CUPTI's *buffer completed* callback: records go to the active tracer's
/// recorder, then the buffer is freed.
unsafe extern "C" fn buffer_completed(
    context: *mut c_void,
    stream_id: u32,
    buffer: *mut u8,
    _size: usize,
    valid_size: usize,
) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if buffer.is_null() {
            return;
        }
        if let Some(shared) = active() {
            // SAFETY: CUPTI completed this buffer with `valid_size` bytes.
            unsafe { shared.process(buffer, valid_size) };
            let mut dropped = 0usize;
            // SAFETY: `context`/`stream_id` are what CUPTI passed;
            // `dropped` is a valid out-pointer.
            let rc = unsafe { (shared.api.dropped_records)(context, stream_id, &mut dropped) };
            if rc == CUPTI_SUCCESS && dropped > 0 {
                shared
                    .counters
                    .dropped
                    .fetch_add(dropped as u64, Ordering::Relaxed);
            }
        }
    }));
    // SAFETY: the buffer came from `buffer_requested` and CUPTI hands it
    // back exactly once.
    unsafe { free_buffer(buffer) };
}

/// Records GPU kernels, memory copies and memory sets as trace spans while
/// it runs (see the [module documentation](self)).
pub struct KernelTracer {
    shared: Arc<Shared>,
    flusher: Option<(mpsc::Sender<()>, JoinHandle<()>)>,
    stopped: bool,
}

impl std::fmt::Debug for KernelTracer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelTracer")
            .field("stats", &self.stats())
            .finish()
    }
}

impl KernelTracer {
    /// Starts tracing into `recorder`. Fails with
    /// [`CudaError::Unavailable`] (before touching CUDA) without the driver
    /// or CUPTI, and with [`CudaError::AlreadyActive`] while another tracer
    /// runs in this process.
    pub fn start(
        recorder: Arc<Recorder>,
        options: TracerOptions,
    ) -> Result<KernelTracer, CudaError> {
        guarded("ddp_cuda::cupti::KernelTracer::start", || {
            if options.buffer_bytes < 1024 {
                return Err(CudaError::InvalidArgument(format!(
                    "CUPTI buffers of {} bytes are too small (use at least 1 KiB)",
                    options.buffer_bytes
                )));
            }
            let api = api()?;
            let shared = Arc::new(Shared {
                api,
                recorder,
                clock: Mutex::new(ClockMap::default()),
                steps: Mutex::new(StepTimeline::default()),
                buffer_bytes: options.buffer_bytes.next_multiple_of(BUFFER_ALIGN),
                counters: Counters::default(),
            });
            {
                let mut slot = lock(&ACTIVE);
                if slot.is_some() {
                    return Err(CudaError::AlreadyActive(
                        "a CUPTI kernel tracer is already running in this process (CUPTI's \
                         activity callbacks are process-wide); stop it first"
                            .to_owned(),
                    ));
                }
                *slot = Some(Arc::clone(&shared));
            }
            if let Err(e) = Self::enable(&shared) {
                *lock(&ACTIVE) = None;
                return Err(e);
            }
            let flusher = match options.flush_interval {
                Some(every) => match Self::spawn_flusher(Arc::clone(&shared), every) {
                    Ok(f) => Some(f),
                    Err(e) => {
                        Self::disable(&shared);
                        *lock(&ACTIVE) = None;
                        return Err(e);
                    }
                },
                None => None,
            };
            Ok(KernelTracer {
                shared,
                flusher,
                stopped: false,
            })
        })
    }

    fn enable(shared: &Shared) -> Result<(), CudaError> {
        let api = shared.api;
        shared.calibrate()?;
        // SAFETY: both callbacks have the signatures CUPTI declares and never
        // unwind.
        let rc =
            unsafe { (api.register_callbacks)(Some(buffer_requested), Some(buffer_completed)) };
        api.check("cuptiActivityRegisterCallbacks", rc)?;
        for (i, kind) in ENABLED_KINDS.iter().enumerate() {
            // SAFETY: a valid CUpti_ActivityKind.
            let rc = unsafe { (api.enable)(*kind) };
            if let Err(e) = api.check("cuptiActivityEnable", rc) {
                for k in &ENABLED_KINDS[..i] {
                    // SAFETY: a kind enabled just above.
                    unsafe { (api.disable)(*k) };
                }
                return Err(e);
            }
        }
        Ok(())
    }

    fn disable(shared: &Shared) {
        for k in ENABLED_KINDS {
            // SAFETY: a valid CUpti_ActivityKind; disabling one that is not
            // enabled is harmless.
            unsafe { (shared.api.disable)(k) };
        }
    }

    fn spawn_flusher(
        shared: Arc<Shared>,
        every: Duration,
    ) -> Result<(mpsc::Sender<()>, JoinHandle<()>), CudaError> {
        let (tx, rx) = mpsc::channel::<()>();
        let handle = std::thread::Builder::new()
            .name("ddp-probe-cupti".to_owned())
            .spawn(move || loop {
                match rx.recv_timeout(every) {
                    Err(RecvTimeoutError::Timeout) => {
                        let _ = guarded("ddp_cuda::cupti flush thread", || shared.flush());
                    }
                    Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
                }
            })
            .map_err(|e| {
                CudaError::InvalidArgument(format!("could not start the CUPTI flush thread: {e}"))
            })?;
        Ok((tx, handle))
    }

    /// Notes that `step` begins now, for the `step` of later GPU spans.
    pub fn mark_step(&self, step: u64) {
        lock(&self.shared.steps).mark(step, now_ns());
    }

    /// Hands every record so far to the recorder, and recalibrates the clock.
    pub fn flush(&self) -> Result<(), CudaError> {
        guarded("ddp_cuda::cupti::KernelTracer::flush", || {
            self.shared.flush()
        })
    }

    /// What the tracer saw so far.
    pub fn stats(&self) -> TracerStats {
        self.shared.counters.snapshot()
    }

    /// Stops tracing after a last flush and returns the totals.
    pub fn stop(mut self) -> Result<TracerStats, CudaError> {
        self.shutdown()?;
        Ok(self.stats())
    }

    fn shutdown(&mut self) -> Result<(), CudaError> {
        if self.stopped {
            return Ok(());
        }
        self.stopped = true;
        if let Some((tx, handle)) = self.flusher.take() {
            drop(tx);
            let _ = handle.join();
        }
        let shared = Arc::clone(&self.shared);
        let result = guarded("ddp_cuda::cupti::KernelTracer::stop", || {
            Self::disable(&shared);
            shared.flush()
        });
        let mut slot = lock(&ACTIVE);
        if slot.as_ref().is_some_and(|s| Arc::ptr_eq(s, &self.shared)) {
            *slot = None;
        }
        result
    }
}

impl Drop for KernelTracer {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

    use cudarc::cupti::sys::{
        CUpti_ActivityKernel4, CUpti_ActivityKernel5, CUpti_ActivityKernel6, CUpti_ActivityKernel7,
        CUpti_ActivityKernel8, CUpti_ActivityKernel9, CUpti_ActivityMemcpy, CUpti_ActivityMemset,
    };

    macro_rules! same_offsets {
        ($base:ty, [$($other:ty),+], $fields:tt) => {
            $( same_offsets!(@one $base, $other, $fields); )+
        };
        (@one $base:ty, $other:ty, [$($f:ident),+]) => {
            $( assert_eq!(
                offset_of!($base, $f),
                offset_of!($other, $f),
                concat!(stringify!($f), " moved in ", stringify!($other))
            ); )+
        };
    }

    #[test]
    fn fields_read_are_stable_across_record_versions() {
        same_offsets!(
            KernelRecord,
            [
                CUpti_ActivityKernel4,
                CUpti_ActivityKernel5,
                CUpti_ActivityKernel6,
                CUpti_ActivityKernel7,
                CUpti_ActivityKernel8,
                CUpti_ActivityKernel9
            ],
            [
                kind,
                start,
                end,
                deviceId,
                contextId,
                streamId,
                correlationId
            ]
        );
        same_offsets!(
            KernelRecord,
            [
                CUpti_ActivityKernel7,
                CUpti_ActivityKernel8,
                CUpti_ActivityKernel9
            ],
            [name]
        );
        same_offsets!(
            MemcpyRecord,
            [CUpti_ActivityMemcpy],
            [
                kind,
                copyKind,
                bytes,
                start,
                end,
                deviceId,
                contextId,
                streamId,
                correlationId
            ]
        );
        same_offsets!(
            MemsetRecord,
            [CUpti_ActivityMemset],
            [
                kind,
                bytes,
                start,
                end,
                deviceId,
                contextId,
                streamId,
                correlationId
            ]
        );
    }

    fn put_u32(b: &mut [u8], off: usize, v: u32) {
        b[off..off + 4].copy_from_slice(&v.to_ne_bytes());
    }

    fn put_u64(b: &mut [u8], off: usize, v: u64) {
        b[off..off + 8].copy_from_slice(&v.to_ne_bytes());
    }

    #[test]
    fn kernel_records_parse_with_their_names() {
        let name = std::ffi::CString::new("ampere_sgemm_128x64_tn").unwrap();
        let mut b = vec![0u8; std::mem::size_of::<KernelRecord>()];
        put_u32(&mut b, 0, KIND_CONCURRENT_KERNEL);
        put_u64(&mut b, offset_of!(KernelRecord, start), 1_000);
        put_u64(&mut b, offset_of!(KernelRecord, end), 3_500);
        put_u32(&mut b, offset_of!(KernelRecord, deviceId), 1);
        put_u32(&mut b, offset_of!(KernelRecord, contextId), 2);
        put_u32(&mut b, offset_of!(KernelRecord, streamId), 7);
        put_u32(&mut b, offset_of!(KernelRecord, correlationId), 1841);
        let off = offset_of!(KernelRecord, name);
        b[off..off + 8].copy_from_slice(&(name.as_ptr() as usize).to_ne_bytes());
        let raw = parse_record(&b).unwrap();
        // SAFETY: the name pointer is `name`, alive here.
        let a = unsafe { raw.into_activity() };
        assert_eq!(
            a,
            Activity {
                class: ActivityClass::Kernel,
                start: 1_000,
                end: 3_500,
                device: 1,
                context: 2,
                stream: 7,
                correlation: 1841,
                bytes: None,
                copy_kind: None,
                name: Some("ampere_sgemm_128x64_tn".to_owned()),
            }
        );
        // Cut short: no record rather than a wrong one.
        assert!(parse_record(&b[..offset_of!(KernelRecord, correlationId)]).is_none());
        // Other kinds are skipped.
        let mut other = b.clone();
        put_u32(&mut other, 0, 5);
        assert!(parse_record(&other).is_none());
    }

    #[test]
    fn copy_and_set_records_parse() {
        let mut b = vec![0u8; std::mem::size_of::<MemcpyRecord>()];
        put_u32(&mut b, 0, KIND_MEMCPY);
        b[offset_of!(MemcpyRecord, copyKind)] = 1;
        put_u64(&mut b, offset_of!(MemcpyRecord, bytes), 4096);
        put_u64(&mut b, offset_of!(MemcpyRecord, start), 10);
        put_u64(&mut b, offset_of!(MemcpyRecord, end), 20);
        put_u32(&mut b, offset_of!(MemcpyRecord, streamId), 3);
        put_u32(&mut b, offset_of!(MemcpyRecord, correlationId), 9);
        let raw = parse_record(&b).unwrap();
        assert_eq!(raw.name_ptr, 0);
        assert_eq!(raw.activity.class, ActivityClass::Memcpy);
        assert_eq!(raw.activity.bytes, Some(4096));
        assert_eq!(raw.activity.copy_kind, Some(1));
        assert_eq!((raw.activity.stream, raw.activity.correlation), (3, 9));

        let mut m = vec![0u8; std::mem::size_of::<MemsetRecord>()];
        put_u32(&mut m, 0, KIND_MEMSET);
        put_u64(&mut m, offset_of!(MemsetRecord, bytes), 64);
        put_u64(&mut m, offset_of!(MemsetRecord, start), 5);
        put_u64(&mut m, offset_of!(MemsetRecord, end), 6);
        let raw = parse_record(&m).unwrap();
        assert_eq!(raw.activity.class, ActivityClass::Memset);
        assert_eq!(raw.activity.bytes, Some(64));
    }

    #[test]
    fn kernels_are_classified() {
        use KernelCategory::*;
        let k = |n: &str| classify(ActivityClass::Kernel, Some(n));
        assert_eq!(k("ncclDevKernel_AllReduce_Sum_f32_RING_LL"), Comm);
        assert_eq!(
            k("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            Comm
        );
        assert_eq!(
            k("_Z38ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE"),
            Comm
        );
        assert_eq!(k("_ZN4nccl6kernel3fooEv"), Comm);
        assert_eq!(k("ampere_sgemm_128x64_tn"), Compute);
        assert_eq!(
            k("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_"),
            Compute
        );
        assert_eq!(
            k("void at::native::(anonymous namespace)::nccl_like()"),
            Compute
        );
        assert_eq!(k("Memcpy DtoD (Device -> Device)"), Memcpy);
        assert_eq!(k("Memset (Device)"), Memset);
        assert_eq!(classify(ActivityClass::Kernel, None), Compute);
        assert_eq!(classify(ActivityClass::Memcpy, Some("nccl")), Memcpy);
        assert_eq!(classify(ActivityClass::Memset, None), Memset);
        assert_eq!(leading_identifier("_Z3fooi"), "foo");
        assert_eq!(leading_identifier("_ZNK3Foo3barEv"), "Foo");
        assert_eq!(leading_identifier("_Zbroken"), "_Zbroken");
        assert_eq!(leading_identifier("_Z99short"), "_Z99short");
        assert_eq!(leading_identifier("kernel<float>(int)"), "kernel");
    }

    #[test]
    fn clock_offsets_from_the_tightest_sample() {
        let samples = [
            ClockSample {
                host_before: 1_000_000,
                device: 500,
                host_after: 1_000_400,
            },
            ClockSample {
                host_before: 2_000_000,
                device: 1_000_600,
                host_after: 2_000_020,
            },
            // A sample with the host clock going backwards is ignored.
            ClockSample {
                host_before: 10,
                device: 0,
                host_after: 5,
            },
        ];
        let best = best_sample(&samples).unwrap();
        assert_eq!(best.gap(), 20);
        assert_eq!(best.offset(), 2_000_010 - 1_000_600);
        let mut map = ClockMap::default();
        assert_eq!(map.to_host(7), None);
        map.calibrate(&samples).unwrap();
        assert!(map.is_calibrated());
        assert_eq!(map.to_host(1_000_600), Some(2_000_010));
        assert_eq!(map.to_host(1_000_700), Some(2_000_110));
        assert_eq!(map.to_host(0), Some(999_410));
        assert!(map.calibrate(&[]).is_none());
    }

    #[test]
    fn clock_drift_is_interpolated() {
        let mut map = ClockMap::default();
        let at = |host: u64, device: u64| ClockSample {
            host_before: host,
            device,
            host_after: host,
        };
        map.calibrate(&[at(1_000, 0)]);
        map.calibrate(&[at(2_100, 1_000)]);
        // Offset 1000 at device 0, 1100 at device 1000: 1050 halfway.
        assert_eq!(map.to_host(500), Some(1_550));
        // Outside the calibrated range the nearest offset holds.
        assert_eq!(map.to_host(2_000), Some(3_100));
        // Saturates instead of wrapping.
        let mut neg = ClockMap::default();
        neg.calibrate(&[at(0, 1_000)]);
        assert_eq!(neg.to_host(10), Some(0));
        let mut big = ClockMap::default();
        big.calibrate(&[at(u64::MAX, 0)]);
        assert_eq!(big.to_host(10), Some(u64::MAX));
    }

    #[test]
    fn steps_are_found_by_time() {
        let mut s = StepTimeline::default();
        assert_eq!(s.step_at(5), None);
        s.mark(0, 100);
        s.mark(1, 200);
        s.mark(2, 300);
        assert_eq!(s.step_at(99), None);
        assert_eq!(s.step_at(100), Some(0));
        assert_eq!(s.step_at(250), Some(1));
        assert_eq!(s.step_at(1_000), Some(2));
        for i in 0..(StepTimeline::MAX_STEPS as u64 + 10) {
            s.mark(10 + i, 1_000 + i);
        }
        assert_eq!(s.step_at(150), None);
    }

    #[test]
    fn activities_become_trace_spans() {
        let mut clock = ClockMap::default();
        clock.calibrate(&[ClockSample {
            host_before: 1_700_000_000_000_000_000,
            device: 1_000,
            host_after: 1_700_000_000_000_000_000,
        }]);
        let mut steps = StepTimeline::default();
        steps.mark(3, 1_700_000_000_000_000_000);
        let kernel = Activity {
            class: ActivityClass::Kernel,
            start: 1_500,
            end: 3_500,
            device: 0,
            context: 1,
            stream: 7,
            correlation: 1841,
            bytes: None,
            copy_kind: None,
            name: Some("ncclDevKernel_AllReduce_Sum_f32_RING_LL".to_owned()),
        };
        let s = activity_span(&kernel, &clock, &steps).unwrap();
        assert_eq!(s.kind, SpanKind::Kernel);
        assert_eq!(s.step, Some(3));
        assert_eq!(
            (s.start, s.end),
            (1_700_000_000_000_000_500, 1_700_000_000_000_002_500)
        );
        assert_eq!(s.category, Some(KernelCategory::Comm));
        assert_eq!(
            (s.device, s.stream, s.correlation),
            (Some(0), Some(7), Some(1841))
        );
        assert_eq!(
            s.name.as_deref(),
            Some("ncclDevKernel_AllReduce_Sum_f32_RING_LL")
        );

        let copy = Activity {
            class: ActivityClass::Memcpy,
            start: 500,
            end: 400,
            bytes: Some(1 << 20),
            copy_kind: Some(2),
            name: None,
            ..kernel.clone()
        };
        let s = activity_span(&copy, &clock, &steps).unwrap();
        assert_eq!(s.kind, SpanKind::Memcpy);
        assert_eq!(s.name.as_deref(), Some("Memcpy DtoH"));
        assert_eq!(s.bytes, Some(1 << 20));
        assert_eq!(s.category, Some(KernelCategory::Memcpy));
        // Before the first step mark, and end clamped to start.
        assert_eq!(s.step, None);
        assert_eq!(s.start, s.end);

        let set = Activity {
            class: ActivityClass::Memset,
            bytes: Some(64),
            ..kernel.clone()
        };
        let s = activity_span(&set, &clock, &steps).unwrap();
        assert_eq!(
            (s.kind, s.category),
            (SpanKind::Kernel, Some(KernelCategory::Memset))
        );
        assert_eq!(s.name.as_deref(), Some("Memset"));

        assert!(activity_span(&kernel, &ClockMap::default(), &steps).is_none());
    }

    #[test]
    fn buffers_round_trip_through_the_callbacks_allocator() {
        let mut buf: *mut u8 = std::ptr::null_mut();
        let mut size = 0usize;
        let mut max = 7usize;
        // SAFETY: valid out-pointers, as CUPTI passes them.
        unsafe { buffer_requested(&mut buf, &mut size, &mut max) };
        assert!(!buf.is_null());
        assert_eq!(buf as usize % BUFFER_ALIGN, 0);
        assert!(size >= 1024);
        assert_eq!(max, 0);
        // SAFETY: the buffer is `size` bytes long.
        unsafe { std::ptr::write_bytes(buf, 0xab, size) };
        // SAFETY: a buffer from `buffer_requested`, freed once.
        unsafe { free_buffer(buf) };
        // SAFETY: NULL is accepted.
        unsafe { free_buffer(std::ptr::null_mut()) };
    }

    #[test]
    fn memcpy_kinds() {
        assert_eq!(memcpy_kind_name(1), "HtoD");
        assert_eq!(memcpy_kind_name(8), "DtoD");
        assert_eq!(memcpy_kind_name(10), "PtoP");
        assert_eq!(memcpy_kind_name(0), "unknown");
    }
}
