//! NCCL collectives on device buffers: [`NcclGroup`].
//!
//! A group is one NCCL communicator per process, on the process's GPU
//! (`LOCAL_RANK` unless [`NcclOptions::device`] says otherwise), created
//! through the same rendezvous store as the CPU [`comm::ProcessGroup`]:
//!
//! 1. every rank takes a generation number for the group name from the
//!    store (`ddp-nccl/<name>/gen/<rank>`), as comm does, so a group created
//!    again under the same name never reads a stale id;
//! 2. rank 0 creates the `ncclUniqueId`; every rank publishes its NCCL
//!    version, host and GPU (rank 0 also the id) under
//!    `ddp-nccl/<name>/<gen>/ranks` through [`comm::rendezvous`], which
//!    names the ranks that never arrive;
//! 3. the ranks check that they run the same NCCL version and that no two
//!    of them share a GPU, then create the communicator. With NCCL ≥ 2.29
//!    (the `nccl-02029` bindings) it is non-blocking
//!    (`ncclCommInitRankConfig` with `blocking = 0`) and polled with
//!    `ncclCommGetAsyncError` until ready, so initialisation honours the
//!    group timeout; older NCCLs get a blocking `ncclCommInitRank`.
//!
//! Collectives are enqueued on the group's own CUDA stream, bracketed by two
//! timing events, and waited for before the call returns: the wait polls the
//! end event and `ncclCommGetAsyncError` (remote failures) and, after the
//! group timeout, aborts the communicator (`ncclCommAbort`), like PyTorch's
//! NCCL watchdog. Any failure after validation leaves the group broken
//! ([`CudaError::Broken`]) because the ranks' collective sequences no
//! longer line up. Sequence numbers count the group's collectives from 0,
//! as comm's do, so the same collective has the same `seq` on every rank.
//!
//! Buffers are cudarc [`CudaSlice`]s (whose own stream ordering cudarc
//! tracks) or [`DeviceBuffer`]s, memory another framework owns given by
//! address (the `ddp` crate hands libtorch's CUDA tensors over this way):
//! libtorch works on the legacy default stream, so for those the group's
//! stream first waits for it through an event, exactly as PyTorch's
//! `ProcessGroupNCCL` orders its NCCL stream after the current stream. Because every call waits for the
//! collective to finish, the buffers are free again when it returns.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use comm::{OpKind, ReduceOp, StoreClient};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{
    CudaContext, CudaEvent, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr,
};
use cudarc::nccl::sys::{
    cudaStream_t, ncclComm_t, ncclConfig_t, ncclDataType_t, ncclRedOp_t, ncclResult_t, ncclUniqueId,
};
use probe_contract::clock::now_ns;
use probe_contract::trace::{SpanKind, SpanRecord};

use crate::availability::{self, CudaLibrary, Unavailable};
use crate::error::CudaError;
use crate::{guarded, lock, nvtx};

type Result<T, E = CudaError> = std::result::Result<T, E>;

const NCCL_SUCCESS: c_int = ncclResult_t::ncclSuccess as c_int;
const NCCL_IN_PROGRESS: c_int = ncclResult_t::ncclInProgress as c_int;
/// `NCCL_CONFIG_UNDEF_INT`: "use NCCL's default" in an `ncclConfig_t`.
const CONFIG_UNDEF_INT: c_int = c_int::MIN;
/// `NCCL_API_MAGIC`.
const CONFIG_MAGIC: u32 = 0xcafe_beef;
/// The version the `ncclConfig_t` layout of the bindings belongs to (2.29.0);
/// non-blocking initialisation is used from this NCCL version on.
const CONFIG_LAYOUT_VERSION: c_int = 22900;
/// Size of `ncclUniqueId`.
const UNIQUE_ID_BYTES: usize = 128;

pub use crate::nccl_error::NcclError;

// ----- the library -----

/// The NCCL functions this module calls, resolved from the library that
/// [`availability`](super::availability()) found. Result codes are plain
/// `c_int`s (a C enum), converted with [`NcclError::from_code`].
struct NcclApi {
    get_version: unsafe extern "C" fn(*mut c_int) -> c_int,
    get_unique_id: unsafe extern "C" fn(*mut ncclUniqueId) -> c_int,
    comm_init_rank: unsafe extern "C" fn(*mut ncclComm_t, c_int, ncclUniqueId, c_int) -> c_int,
    comm_init_rank_config: Option<
        unsafe extern "C" fn(
            *mut ncclComm_t,
            c_int,
            ncclUniqueId,
            c_int,
            *mut ncclConfig_t,
        ) -> c_int,
    >,
    comm_get_async_error: unsafe extern "C" fn(ncclComm_t, *mut c_int) -> c_int,
    comm_finalize: Option<unsafe extern "C" fn(ncclComm_t) -> c_int>,
    comm_destroy: unsafe extern "C" fn(ncclComm_t) -> c_int,
    comm_abort: unsafe extern "C" fn(ncclComm_t) -> c_int,
    get_error_string: unsafe extern "C" fn(c_int) -> *const c_char,
    get_last_error: Option<unsafe extern "C" fn(ncclComm_t) -> *const c_char>,
    all_reduce: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        ncclDataType_t,
        ncclRedOp_t,
        ncclComm_t,
        cudaStream_t,
    ) -> c_int,
    broadcast: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        ncclDataType_t,
        c_int,
        ncclComm_t,
        cudaStream_t,
    ) -> c_int,
    all_gather: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        ncclDataType_t,
        ncclComm_t,
        cudaStream_t,
    ) -> c_int,
    reduce_scatter: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        ncclDataType_t,
        ncclRedOp_t,
        ncclComm_t,
        cudaStream_t,
    ) -> c_int,
}

impl NcclApi {
    fn load() -> Result<NcclApi, Unavailable> {
        let lib = availability::open_for_use(CudaLibrary::Nccl)?;
        let missing = |msg: String| Unavailable {
            library: CudaLibrary::Nccl,
            searched_names: vec![lib.name().to_owned()],
            searched_dirs: Vec::new(),
            failures: vec![format!("{msg} (NCCL 2.14 or newer is needed)")],
        };
        // SAFETY (every `function` call below): each type is the
        // `unsafe extern "C" fn` of the symbol's declaration in nccl.h
        // (2.29), with `ncclResult_t` as `c_int`, and the library stays
        // loaded for the rest of the process (`open_for_use` keeps it).
        unsafe {
            Ok(NcclApi {
                get_version: lib.function("ncclGetVersion").map_err(missing)?,
                get_unique_id: lib.function("ncclGetUniqueId").map_err(missing)?,
                comm_init_rank: lib.function("ncclCommInitRank").map_err(missing)?,
                comm_init_rank_config: lib.function("ncclCommInitRankConfig").ok(),
                comm_get_async_error: lib.function("ncclCommGetAsyncError").map_err(missing)?,
                comm_finalize: lib.function("ncclCommFinalize").ok(),
                comm_destroy: lib.function("ncclCommDestroy").map_err(missing)?,
                comm_abort: lib.function("ncclCommAbort").map_err(missing)?,
                get_error_string: lib.function("ncclGetErrorString").map_err(missing)?,
                get_last_error: lib.function("ncclGetLastError").ok(),
                all_reduce: lib.function("ncclAllReduce").map_err(missing)?,
                broadcast: lib.function("ncclBroadcast").map_err(missing)?,
                all_gather: lib.function("ncclAllGather").map_err(missing)?,
                reduce_scatter: lib.function("ncclReduceScatter").map_err(missing)?,
            })
        }
    }

    /// NCCL's description of `code` and, with a communicator, its last
    /// error message.
    fn describe(&self, code: c_int, comm: ncclComm_t) -> String {
        let mut parts = Vec::new();
        // SAFETY: ncclGetErrorString accepts any code and returns a static
        // NUL-terminated string (or NULL, checked).
        let s = unsafe { (self.get_error_string)(code) };
        if !s.is_null() {
            // SAFETY: non-null, NUL-terminated, static.
            parts.push(unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned());
        }
        if let Some(last) = self.get_last_error {
            // SAFETY: ncclGetLastError accepts NULL or a live communicator
            // and returns a NUL-terminated string owned by NCCL (or NULL).
            let s = unsafe { last(comm) };
            if !s.is_null() {
                // SAFETY: as above; copied right away.
                let text = unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned();
                if !text.trim().is_empty() {
                    parts.push(format!("last error: {}", text.trim()));
                }
            }
        }
        parts.join("; ")
    }

    /// `Ok` for `ncclSuccess`, the named error otherwise.
    fn check(&self, call: &str, code: c_int, comm: ncclComm_t) -> Result<(), NcclError> {
        match NcclError::from_code(call, code, String::new()) {
            None => Ok(()),
            Some(_) => Err(
                NcclError::from_code(call, code, self.describe(code, comm)).unwrap_or(
                    NcclError::Other {
                        call: call.to_owned(),
                        code,
                        detail: String::new(),
                    },
                ),
            ),
        }
    }

    fn version(&self) -> Result<i32, NcclError> {
        let mut v: c_int = 0;
        // SAFETY: `v` is a valid out-pointer.
        let rc = unsafe { (self.get_version)(&mut v) };
        self.check("ncclGetVersion", rc, std::ptr::null_mut())?;
        Ok(v)
    }

    fn unique_id(&self) -> Result<[u8; UNIQUE_ID_BYTES], NcclError> {
        let mut id = ncclUniqueId {
            internal: [0; UNIQUE_ID_BYTES],
        };
        // SAFETY: `id` is a valid out-pointer to an ncclUniqueId.
        let rc = unsafe { (self.get_unique_id)(&mut id) };
        self.check("ncclGetUniqueId", rc, std::ptr::null_mut())?;
        Ok(id.internal.map(|c| c as u8))
    }
}

static API: OnceLock<Result<NcclApi, Unavailable>> = OnceLock::new();

/// The NCCL functions, after checking that the driver and NCCL load.
fn api() -> Result<&'static NcclApi> {
    availability::require(&[CudaLibrary::Driver, CudaLibrary::Nccl])?;
    API.get_or_init(NcclApi::load)
        .as_ref()
        .map_err(|e| CudaError::Unavailable(e.clone()))
}

/// Decodes an NCCL version code: `major*10000 + minor*100 + patch` from 2.9
/// on, `major*1000 + minor*100 + patch` before.
pub fn decode_version(code: i32) -> (i32, i32, i32) {
    if code >= 10000 {
        (code / 10000, (code % 10000) / 100, code % 100)
    } else {
        (code / 1000, (code % 1000) / 100, code % 100)
    }
}

/// An NCCL version code as `major.minor.patch`.
pub fn version_string(code: i32) -> String {
    let (a, b, c) = decode_version(code);
    format!("{a}.{b}.{c}")
}

/// The NCCL version this process loads (e.g. `"2.29.7"`).
pub fn nccl_version() -> Result<String> {
    guarded("ddp_cuda::nccl::nccl_version", || {
        Ok(version_string(api()?.version()?))
    })
}

// ----- element types and reductions -----

/// Element types NCCL reduces and moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NcclDType {
    /// `ncclInt8`.
    I8,
    /// `ncclUint8`.
    U8,
    /// `ncclInt32`.
    I32,
    /// `ncclUint32`.
    U32,
    /// `ncclInt64`.
    I64,
    /// `ncclUint64`.
    U64,
    /// `ncclFloat16`.
    F16,
    /// `ncclFloat32`.
    F32,
    /// `ncclFloat64`.
    F64,
    /// `ncclBfloat16`.
    BF16,
}

impl NcclDType {
    /// Size of one element in bytes.
    pub const fn size(self) -> usize {
        match self {
            NcclDType::I8 | NcclDType::U8 => 1,
            NcclDType::F16 | NcclDType::BF16 => 2,
            NcclDType::I32 | NcclDType::U32 | NcclDType::F32 => 4,
            NcclDType::I64 | NcclDType::U64 | NcclDType::F64 => 8,
        }
    }

    /// The name used in traces, as comm names its types (`f32`, `bf16`...).
    pub const fn name(self) -> &'static str {
        match self {
            NcclDType::I8 => "i8",
            NcclDType::U8 => "u8",
            NcclDType::I32 => "i32",
            NcclDType::U32 => "u32",
            NcclDType::I64 => "i64",
            NcclDType::U64 => "u64",
            NcclDType::F16 => "f16",
            NcclDType::F32 => "f32",
            NcclDType::F64 => "f64",
            NcclDType::BF16 => "bf16",
        }
    }

    /// The `ncclDataType_t`.
    pub const fn to_nccl(self) -> ncclDataType_t {
        match self {
            NcclDType::I8 => ncclDataType_t::ncclInt8,
            NcclDType::U8 => ncclDataType_t::ncclUint8,
            NcclDType::I32 => ncclDataType_t::ncclInt32,
            NcclDType::U32 => ncclDataType_t::ncclUint32,
            NcclDType::I64 => ncclDataType_t::ncclInt64,
            NcclDType::U64 => ncclDataType_t::ncclUint64,
            NcclDType::F16 => ncclDataType_t::ncclFloat16,
            NcclDType::F32 => ncclDataType_t::ncclFloat32,
            NcclDType::F64 => ncclDataType_t::ncclFloat64,
            NcclDType::BF16 => ncclDataType_t::ncclBfloat16,
        }
    }
}

impl fmt::Display for NcclDType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

mod sealed {
    pub trait Sealed {}
}

/// Element types of [`CudaSlice`]s the group's collectives accept.
pub trait NcclElement: DeviceRepr + sealed::Sealed {
    /// The NCCL type.
    const DTYPE: NcclDType;
}

macro_rules! elements {
    ($($t:ty => $d:ident),+ $(,)?) => {
        $(
            impl sealed::Sealed for $t {}
            impl NcclElement for $t {
                const DTYPE: NcclDType = NcclDType::$d;
            }
        )+
    };
}

elements! {
    i8 => I8,
    u8 => U8,
    i32 => I32,
    u32 => U32,
    i64 => I64,
    u64 => U64,
    f32 => F32,
    f64 => F64,
}

/// The NCCL reduction for a comm [`ReduceOp`] (`Avg` is NCCL's own
/// `ncclAvg`, NCCL ≥ 2.10).
pub const fn nccl_red_op(op: ReduceOp) -> ncclRedOp_t {
    match op {
        ReduceOp::Sum => ncclRedOp_t::ncclSum,
        ReduceOp::Avg => ncclRedOp_t::ncclAvg,
        ReduceOp::Max => ncclRedOp_t::ncclMax,
        ReduceOp::Min => ncclRedOp_t::ncclMin,
        ReduceOp::Product => ncclRedOp_t::ncclProd,
    }
}

// ----- rendezvous -----

/// What each rank publishes at group creation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Hello {
    pub(crate) nccl_version: i32,
    pub(crate) device: usize,
    pub(crate) host: String,
    /// Rank 0 only.
    pub(crate) unique_id: Option<[u8; UNIQUE_ID_BYTES]>,
}

impl Hello {
    const MAGIC: &'static str = "ddp-nccl-hello 1";

    pub(crate) fn encode(&self) -> Vec<u8> {
        let host: String = self
            .host
            .chars()
            .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
            .collect();
        let id = match &self.unique_id {
            Some(id) => id.iter().map(|b| format!("{b:02x}")).collect::<String>(),
            None => "-".to_owned(),
        };
        format!(
            "{}\nversion={}\ndevice={}\nid={id}\nhost={host}\n",
            Self::MAGIC,
            self.nccl_version,
            self.device
        )
        .into_bytes()
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Hello, String> {
        let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8".to_owned())?;
        let mut lines = text.lines();
        if lines.next() != Some(Self::MAGIC) {
            return Err("not an NCCL group hello (another ddp-probe version?)".to_owned());
        }
        let (mut version, mut device, mut id, mut host) = (None, None, None, None);
        for line in lines {
            let Some((k, v)) = line.split_once('=') else {
                continue;
            };
            match k {
                "version" => version = v.parse::<i32>().ok(),
                "device" => device = v.parse::<usize>().ok(),
                "id" => id = Some(v.to_owned()),
                "host" => host = Some(v.to_owned()),
                _ => {}
            }
        }
        let unique_id = match id.as_deref() {
            None => return Err("no id field".to_owned()),
            Some("-") => None,
            Some(hex) => Some(decode_hex_id(hex)?),
        };
        Ok(Hello {
            nccl_version: version.ok_or("no valid version field")?,
            device: device.ok_or("no valid device field")?,
            host: host.ok_or("no host field")?,
            unique_id,
        })
    }
}

fn decode_hex_id(hex: &str) -> Result<[u8; UNIQUE_ID_BYTES], String> {
    if hex.len() != 2 * UNIQUE_ID_BYTES || !hex.is_ascii() {
        return Err(format!(
            "the unique id has {} characters, expected {}",
            hex.len(),
            2 * UNIQUE_ID_BYTES
        ));
    }
    let mut id = [0u8; UNIQUE_ID_BYTES];
    for (i, b) in id.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16)
            .map_err(|_| "the unique id is not hexadecimal".to_owned())?;
    }
    Ok(id)
}

/// The first NCCL release that builds a communicator with several ranks on one GPU, when
/// `NCCL_MULTI_RANK_GPU_ENABLE=1` (`init.cc`: "Multiple Ranks are using the same
/// GPU/Partition. Set NCCL_MULTI_RANK_GPU_ENABLE=1 to enable this configuration"); earlier
/// ones answer "Duplicate GPU detected" and `ncclInvalidUsage`.
const SHARED_GPU_SINCE: i32 = 23000;

/// Whether NCCL `version` builds a communicator whose ranks share a GPU, given the value of
/// `NCCL_MULTI_RANK_GPU_ENABLE` (NCCL reads it as an integer; unset is 0).
pub(crate) fn nccl_shares_gpus(version: i32, multi_rank_gpu_enable: Option<&str>) -> bool {
    version >= SHARED_GPU_SINCE
        && multi_rank_gpu_enable
            .and_then(|v| v.trim().parse::<i64>().ok())
            .is_some_and(|v| v != 0)
}

/// Checks that the ranks' hellos fit together: one NCCL version, one GPU
/// per rank (unless `NCCL_MULTI_RANK_GPU_ENABLE` lets that NCCL share one),
/// rank 0's unique id. Returns the id.
pub(crate) fn check_hellos(
    hellos: &[Hello],
    multi_rank_gpu_enable: Option<&str>,
) -> Result<[u8; UNIQUE_ID_BYTES], String> {
    let first = hellos.first().ok_or("no rank published anything")?;
    let mut versions: Vec<(i32, Vec<usize>)> = Vec::new();
    for (r, h) in hellos.iter().enumerate() {
        match versions.iter_mut().find(|(v, _)| *v == h.nccl_version) {
            Some((_, ranks)) => ranks.push(r),
            None => versions.push((h.nccl_version, vec![r])),
        }
    }
    if versions.len() > 1 {
        let parts: Vec<String> = versions
            .iter()
            .map(|(v, ranks)| format!("{} {}", comm::fmt_ranks(ranks), version_string(*v)))
            .collect();
        return Err(format!(
            "the ranks load different NCCL versions ({}); NCCL needs the same version on every \
             rank",
            parts.join(", ")
        ));
    }
    let version = first.nccl_version;
    let shared_gpus_allowed = nccl_shares_gpus(version, multi_rank_gpu_enable);
    for (a, ha) in hellos.iter().enumerate() {
        for (b, hb) in hellos.iter().enumerate().skip(a + 1) {
            if ha.host == hb.host && ha.device == hb.device && !shared_gpus_allowed {
                let sharing = if version >= SHARED_GPU_SINCE {
                    "or set NCCL_MULTI_RANK_GPU_ENABLE=1 to let NCCL share it"
                } else {
                    "NCCL shares one only from 2.30 on, with NCCL_MULTI_RANK_GPU_ENABLE=1"
                };
                return Err(format!(
                    "ranks {a} and {b} both use GPU {} on host {:?}; give each rank of a host its \
                     own GPU (LOCAL_RANK, or NcclOptions::device); {sharing} (NCCL {})",
                    ha.device,
                    ha.host,
                    version_string(version)
                ));
            }
        }
    }
    first
        .unique_id
        .ok_or_else(|| "rank 0 published no NCCL unique id".to_owned())
}

/// The GPU of `rank` from the launcher's environment (read through `var`):
/// `LOCAL_RANK`, else `rank` itself (a single host).
pub fn device_from_env(var: impl Fn(&str) -> Option<String>, rank: usize) -> Result<usize> {
    match var("LOCAL_RANK") {
        Some(v) => v.trim().parse().map_err(|_| {
            CudaError::InvalidArgument(format!(
                "environment variable LOCAL_RANK={v:?} is not a non-negative integer"
            ))
        }),
        None => Ok(rank),
    }
}

// ----- buffer checks -----

/// A device buffer about to be handed to NCCL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Region {
    pub(crate) ptr: u64,
    pub(crate) bytes: u64,
}

impl Region {
    fn end(self) -> u64 {
        self.ptr.saturating_add(self.bytes)
    }

    fn overlaps(self, other: Region) -> bool {
        self.bytes > 0 && other.bytes > 0 && self.ptr < other.end() && other.ptr < self.end()
    }
}

/// Whether a gather-like pair (`small` per rank, `big` = world × small, as
/// all_gather's send/receive and reduce_scatter's receive/send) is valid
/// for NCCL: disjoint, or in place with `small` at this rank's slot of `big`.
pub(crate) fn gather_layout_ok(small: Region, big: Region, rank: usize) -> bool {
    if !small.overlaps(big) {
        return true;
    }
    small.ptr
        == big
            .ptr
            .saturating_add(small.bytes.saturating_mul(rank as u64))
}

/// A contiguous buffer on the group's GPU that the caller owns, given by its
/// address: how memory of another framework (libtorch's CUDA tensors, through
/// the `ddp` crate) reaches NCCL. Collectives on it first wait for the legacy
/// default stream, where libtorch's kernels run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceBuffer {
    /// The device address of the first element.
    pub ptr: u64,
    /// The element type.
    pub dtype: NcclDType,
    /// Elements.
    pub count: usize,
}

impl DeviceBuffer {
    fn region(self) -> Region {
        Region {
            ptr: self.ptr,
            bytes: (self.count as u64).saturating_mul(self.dtype.size() as u64),
        }
    }
}

// ----- timings -----

/// What a collective was and how long it took: comm's
/// [`comm::WorkInfo`] for NCCL.
///
/// `queued_ns` is taken before the collective is enqueued, `finished_ns`
/// when the host saw its end event complete (polling, so up to about a
/// millisecond late for long collectives), and `device_ns` is the time
/// between the two CUDA events around the NCCL call on the group's stream.
/// `started_ns` is `finished_ns - device_ns`, not before `queued_ns`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NcclWorkInfo {
    /// The operation.
    pub op: OpKind,
    /// Its sequence number in the group (equal on every rank).
    pub seq: u64,
    /// Element type.
    pub dtype: NcclDType,
    /// Elements per rank, as in [`comm::WorkInfo::count`]; 0 for `barrier`.
    pub count: usize,
    /// `count` times the element size.
    pub bytes: usize,
    /// Number of ranks.
    pub world_size: usize,
    /// This rank.
    pub rank: usize,
    /// The GPU.
    pub device: usize,
    /// When the collective was issued ([`probe_contract::clock::now_ns`]).
    pub queued_ns: u64,
    /// When it started on the GPU (see above).
    pub started_ns: u64,
    /// When the host saw it finished.
    pub finished_ns: u64,
    /// GPU time between its start and end events.
    pub device_ns: u64,
}

impl NcclWorkInfo {
    /// Execution time in nanoseconds (`finished - started`).
    pub fn duration_ns(&self) -> u64 {
        self.finished_ns.saturating_sub(self.started_ns)
    }

    /// The `collective` span of the trace for this collective in `step`
    /// (transport `nccl`).
    pub fn span(&self, step: u64) -> SpanRecord {
        SpanRecord::new(
            SpanKind::Collective,
            step,
            self.started_ns,
            self.finished_ns,
        )
        .queued(self.queued_ns)
        .op(self.op.name())
        .seq(self.seq)
        .bytes(self.bytes as u64)
        .transport("nccl")
        .dtype(self.dtype.name())
        .device(self.device as u32)
    }
}

/// `started_ns` from the host's completion time and the GPU duration.
pub(crate) fn derive_start(queued_ns: u64, finished_ns: u64, device_ns: u64) -> u64 {
    finished_ns.saturating_sub(device_ns).max(queued_ns)
}

// ----- the group -----

/// Options of [`NcclGroup::new`].
#[derive(Clone, Debug)]
pub struct NcclOptions {
    /// The group's name (store keys, NCCL's `commName`); groups of different
    /// names are independent. Default `"default"`.
    pub name: String,
    /// The GPU; `None`: `LOCAL_RANK`, else the rank.
    pub device: Option<usize>,
    /// Limit for creating the group and for each collective; `None`: the
    /// store client's timeout.
    pub timeout: Option<Duration>,
}

impl Default for NcclOptions {
    fn default() -> Self {
        NcclOptions {
            name: "default".to_owned(),
            device: None,
            timeout: None,
        }
    }
}

/// A communicator handle, used only under the group's lock.
struct RawComm(ncclComm_t);

// SAFETY: an NCCL communicator may be used from any thread as long as calls
// on it are not concurrent; the group only touches it under `Inner`'s mutex.
unsafe impl Send for RawComm {}

struct Inner {
    comm: RawComm,
    /// The next collective's sequence number.
    seq: u64,
    /// The first failure, after which the group refuses collectives.
    broken: Option<String>,
    /// One element all-reduced by `barrier`.
    scratch: CudaSlice<f32>,
}

/// Everything a collective's enqueue step may use.
struct Enqueue<'a> {
    api: &'static NcclApi,
    comm: ncclComm_t,
    stream: &'a CudaStream,
    raw_stream: cudaStream_t,
    scratch: &'a mut CudaSlice<f32>,
}

/// What is launched, for validation errors, NVTX and [`NcclWorkInfo`].
#[derive(Clone, Copy)]
struct Launch {
    op: OpKind,
    dtype: NcclDType,
    count: usize,
    /// Whether the buffers are libtorch's (order after its default stream).
    torch: bool,
}

/// A group of ranks running NCCL collectives, one communicator per process.
///
/// All methods take `&self`; collectives from several threads are run one
/// at a time, in the order they take the group's lock (every rank must
/// issue the same collectives in the same order). Dropping the group
/// finalizes and destroys the communicator (aborts it after a failure).
pub struct NcclGroup {
    name: String,
    rank: usize,
    world: usize,
    device: usize,
    nccl_version: i32,
    nonblocking: bool,
    timeout: Duration,
    api: &'static NcclApi,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// The legacy default stream, where libtorch's kernels run.
    torch_stream: Arc<CudaStream>,
    inner: Mutex<Inner>,
    /// NCCL's `commName`, alive as long as the communicator.
    _comm_name: CString,
}

impl fmt::Debug for NcclGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NcclGroup")
            .field("name", &self.name)
            .field("rank", &self.rank)
            .field("world_size", &self.world)
            .field("device", &self.device)
            .field("nccl_version", &version_string(self.nccl_version))
            .finish()
    }
}

/// How a poll of `ncclCommGetAsyncError` ended badly.
enum PollError {
    Nccl(NcclError),
    TimedOut,
}

/// Sleeps a little longer each round: spin first (short collectives), then
/// up to a millisecond.
struct Backoff(u32);

impl Backoff {
    fn pause(&mut self) {
        self.0 = self.0.saturating_add(1);
        if self.0 < 64 {
            std::hint::spin_loop();
        } else if self.0 < 128 {
            std::thread::yield_now();
        } else {
            let us = (u64::from(self.0 - 127) * 10).min(1000);
            std::thread::sleep(Duration::from_micros(us));
        }
    }
}

/// Polls the communicator's asynchronous state until it leaves
/// `ncclInProgress`.
fn poll_async(
    api: &NcclApi,
    comm: ncclComm_t,
    call: &str,
    deadline: Instant,
) -> Result<(), PollError> {
    let mut backoff = Backoff(0);
    loop {
        let mut state: c_int = NCCL_IN_PROGRESS;
        // SAFETY: `comm` is a live communicator and `state` a valid
        // out-pointer.
        let rc = unsafe { (api.comm_get_async_error)(comm, &mut state) };
        api.check("ncclCommGetAsyncError", rc, comm)
            .map_err(PollError::Nccl)?;
        match state {
            NCCL_SUCCESS => return Ok(()),
            NCCL_IN_PROGRESS => {}
            code => return api.check(call, code, comm).map_err(PollError::Nccl),
        }
        if Instant::now() >= deadline {
            return Err(PollError::TimedOut);
        }
        backoff.pause();
    }
}

/// The `ncclConfig_t` of a non-blocking communicator (everything else at
/// NCCL's defaults, as `NCCL_CONFIG_INITIALIZER` sets it).
fn nonblocking_config(comm_name: *const c_char) -> ncclConfig_t {
    ncclConfig_t {
        size: std::mem::size_of::<ncclConfig_t>(),
        magic: CONFIG_MAGIC,
        version: CONFIG_LAYOUT_VERSION as u32,
        blocking: 0,
        cgaClusterSize: CONFIG_UNDEF_INT,
        minCTAs: CONFIG_UNDEF_INT,
        maxCTAs: CONFIG_UNDEF_INT,
        netName: std::ptr::null(),
        splitShare: CONFIG_UNDEF_INT,
        trafficClass: CONFIG_UNDEF_INT,
        commName: comm_name,
        collnetEnable: CONFIG_UNDEF_INT,
        CTAPolicy: CONFIG_UNDEF_INT,
        shrinkShare: CONFIG_UNDEF_INT,
        nvlsCTAs: CONFIG_UNDEF_INT,
        nChannelsPerNetPeer: CONFIG_UNDEF_INT,
        nvlinkCentricSched: CONFIG_UNDEF_INT,
        graphUsageMode: CONFIG_UNDEF_INT,
        numRmaCtx: CONFIG_UNDEF_INT,
    }
}

fn remaining(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

impl NcclGroup {
    /// Creates rank `rank` of a group of `world_size` ranks that meet through
    /// `store` (the same store as the CPU process group), with a
    /// communicator on the GPU of [`NcclOptions::device`].
    ///
    /// Fails with [`CudaError::Unavailable`] (before touching CUDA) where the
    /// driver or NCCL cannot be loaded; with [`CudaError::Store`] naming the
    /// missing ranks when not all arrive in time; with
    /// [`CudaError::Mismatch`] when the ranks' NCCL versions differ or two
    /// ranks share a GPU.
    pub fn new(
        rank: usize,
        world_size: usize,
        store: &StoreClient,
        options: NcclOptions,
    ) -> Result<NcclGroup> {
        guarded("ddp_cuda::nccl::NcclGroup::new", || {
            Self::create(rank, world_size, store, options)
        })
    }

    fn create(
        rank: usize,
        world_size: usize,
        store: &StoreClient,
        options: NcclOptions,
    ) -> Result<NcclGroup> {
        if world_size == 0 || rank >= world_size {
            return Err(CudaError::InvalidArgument(format!(
                "rank {rank} is not in a world of size {world_size}"
            )));
        }
        if world_size > i32::MAX as usize {
            return Err(CudaError::InvalidArgument(format!(
                "world size {world_size} is too large for NCCL"
            )));
        }
        let name = options.name;
        if name.is_empty() || name.contains('\0') {
            return Err(CudaError::InvalidArgument(format!(
                "NCCL group name {name:?} must be non-empty and contain no NUL"
            )));
        }
        let api = api()?;
        let device = match options.device {
            Some(d) => d,
            None => device_from_env(|k| std::env::var(k).ok(), rank)?,
        };
        let timeout = options.timeout.unwrap_or_else(|| store.timeout());
        let deadline = Instant::now() + timeout;

        let ctx = CudaContext::new(device)
            .map_err(|e| CudaError::driver("opening the primary context of the GPU", e))?;
        let version = api.version()?;
        let unique_id = if rank == 0 {
            Some(api.unique_id()?)
        } else {
            None
        };
        let hello = Hello {
            nccl_version: version,
            device,
            host: comm::host_identity(),
            unique_id,
        };
        let store_err = |source| CudaError::Store {
            group: name.clone(),
            source,
        };
        let gen = store
            .add(&format!("ddp-nccl/{name}/gen/{rank}"), 1)
            .map_err(store_err)?;
        let prefix = format!("ddp-nccl/{name}/{gen}");
        let values = comm::rendezvous(
            store,
            &format!("{prefix}/ranks"),
            rank,
            world_size,
            &hello.encode(),
            remaining(deadline),
        )
        .map_err(store_err)?;
        let mut hellos = Vec::with_capacity(world_size);
        for (r, v) in values.iter().enumerate() {
            hellos.push(Hello::decode(v).map_err(|why| CudaError::Mismatch {
                group: name.clone(),
                message: format!("rank {r} published an invalid hello: {why}"),
            })?);
        }
        let multi_rank = std::env::var("NCCL_MULTI_RANK_GPU_ENABLE").ok();
        let id_bytes = check_hellos(&hellos, multi_rank.as_deref()).map_err(|message| {
            CudaError::Mismatch {
                group: name.clone(),
                message,
            }
        })?;
        let id = ncclUniqueId {
            internal: id_bytes.map(|b| b as c_char),
        };

        ctx.bind_to_thread()
            .map_err(|e| CudaError::driver("making the GPU's context current", e))?;
        let stream = ctx
            .new_stream()
            .map_err(|e| CudaError::driver("creating the NCCL stream", e))?;
        let torch_stream = ctx.default_stream();
        let scratch = stream
            .alloc_zeros::<f32>(1)
            .map_err(|e| CudaError::driver("allocating the barrier buffer", e))?;
        let comm_name = CString::new(format!("ddp-probe:{name}")).map_err(|_| {
            CudaError::InvalidArgument(format!("NCCL group name {name:?} contains a NUL"))
        })?;

        let mut comm: ncclComm_t = std::ptr::null_mut();
        let nonblocking = match api.comm_init_rank_config {
            Some(init) if version >= CONFIG_LAYOUT_VERSION => {
                let mut config = nonblocking_config(comm_name.as_ptr());
                // SAFETY: `comm` and `config` are valid pointers; `config`
                // has the 2.29 layout, which this NCCL (≥ 2.29) reads; the
                // name it points to lives as long as the group.
                let rc = unsafe {
                    init(
                        &mut comm,
                        world_size as c_int,
                        id,
                        rank as c_int,
                        &mut config,
                    )
                };
                if rc != NCCL_SUCCESS && rc != NCCL_IN_PROGRESS {
                    let e = api.check("ncclCommInitRankConfig", rc, comm);
                    if !comm.is_null() {
                        // SAFETY: a communicator NCCL handed out, abandoned.
                        unsafe { (api.comm_abort)(comm) };
                    }
                    e?;
                }
                match poll_async(api, comm, "ncclCommInitRankConfig", deadline) {
                    Ok(()) => {}
                    Err(failure) => {
                        // SAFETY: the communicator is not used after this.
                        unsafe { (api.comm_abort)(comm) };
                        return Err(match failure {
                            PollError::Nccl(e) => e.into(),
                            PollError::TimedOut => CudaError::Timeout {
                                group: name,
                                op: "ncclCommInitRankConfig",
                                seq: 0,
                                waited: timeout,
                            },
                        });
                    }
                }
                true
            }
            _ => {
                // SAFETY: `comm` is a valid out-pointer; the current device
                // is the group's (its context is bound to this thread).
                let rc = unsafe {
                    (api.comm_init_rank)(&mut comm, world_size as c_int, id, rank as c_int)
                };
                api.check("ncclCommInitRank", rc, comm)?;
                false
            }
        };
        Ok(NcclGroup {
            name,
            rank,
            world: world_size,
            device,
            nccl_version: version,
            nonblocking,
            timeout,
            api,
            ctx,
            stream,
            torch_stream,
            inner: Mutex::new(Inner {
                comm: RawComm(comm),
                seq: 0,
                broken: None,
                scratch,
            }),
            _comm_name: comm_name,
        })
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Number of ranks.
    pub fn world_size(&self) -> usize {
        self.world
    }

    /// The GPU.
    pub fn device(&self) -> usize {
        self.device
    }

    /// The group's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The NCCL version in use (`2.29.7`).
    pub fn nccl_version(&self) -> String {
        version_string(self.nccl_version)
    }

    /// Whether the communicator is non-blocking (NCCL ≥ 2.29).
    pub fn is_nonblocking(&self) -> bool {
        self.nonblocking
    }

    /// The stream collectives run on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The sequence number the next collective will get.
    pub fn next_seq(&self) -> u64 {
        lock(&self.inner).seq
    }

    fn check_context(&self, what: &str, ctx: &Arc<CudaContext>) -> Result<()> {
        if ctx.ordinal() != self.device {
            return Err(CudaError::InvalidArgument(format!(
                "{what} lives on GPU {}, but this NCCL group runs on GPU {}",
                ctx.ordinal(),
                self.device
            )));
        }
        Ok(())
    }

    fn check_root(&self, root: usize) -> Result<()> {
        if root >= self.world {
            return Err(CudaError::InvalidArgument(format!(
                "broadcast root {root} is not in a world of size {}",
                self.world
            )));
        }
        Ok(())
    }

    fn check_sizes(&self, op: OpKind, small: usize, big: usize) -> Result<()> {
        if small.checked_mul(self.world) != Some(big) {
            let (s, b) = match op {
                OpKind::AllGather => ("input", "output"),
                _ => ("output", "input"),
            };
            return Err(CudaError::InvalidArgument(format!(
                "{op} {b} has {big} elements, expected world size {} x {s} {small}",
                self.world
            )));
        }
        Ok(())
    }

    /// Marks the group broken (first reason wins) and aborts the
    /// communicator, which also stops its kernels.
    fn fail(&self, inner: &mut Inner, why: String) {
        if inner.broken.is_none() {
            inner.broken = Some(why);
        }
        if !inner.comm.0.is_null() {
            // SAFETY: the communicator is live and not used after this (it
            // is set to NULL).
            unsafe { (self.api.comm_abort)(inner.comm.0) };
            inner.comm.0 = std::ptr::null_mut();
        }
    }

    fn timing_event(&self) -> Result<CudaEvent> {
        self.ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(|e| CudaError::driver("creating a timing event", e))
    }

    /// Validated launch: orders after libtorch if asked, brackets the
    /// enqueue with events, waits with the watchdog, and times it.
    fn collective(
        &self,
        launch: Launch,
        enqueue: impl FnOnce(&mut Enqueue<'_>) -> c_int,
    ) -> Result<NcclWorkInfo> {
        let queued_ns = now_ns();
        let mut guard = lock(&self.inner);
        let inner = &mut *guard;
        if let Some(reason) = &inner.broken {
            return Err(CudaError::Broken {
                group: self.name.clone(),
                reason: reason.clone(),
            });
        }
        let seq = inner.seq;
        let op_name = launch.op.name();
        let _range = nvtx::range_with(|| format!("nccl {op_name} seq {seq}"));
        let deadline = Instant::now() + self.timeout;

        let prepared = (|| {
            self.ctx
                .bind_to_thread()
                .map_err(|e| CudaError::driver("making the GPU's context current", e))?;
            if launch.torch {
                self.stream
                    .join(&self.torch_stream)
                    .map_err(|e| CudaError::driver("ordering after libtorch's stream", e))?;
            }
            let start = self.timing_event()?;
            let end = self.timing_event()?;
            start
                .record(&self.stream)
                .map_err(|e| CudaError::driver("recording the start event", e))?;
            Ok::<_, CudaError>((start, end))
        })();
        let (start, end) = match prepared {
            Ok(events) => events,
            Err(e) => {
                self.fail(inner, e.to_string());
                return Err(e);
            }
        };

        let call = match launch.op {
            OpKind::AllReduce | OpKind::Barrier => "ncclAllReduce",
            OpKind::Broadcast => "ncclBroadcast",
            OpKind::AllGather => "ncclAllGather",
            _ => "ncclReduceScatter",
        };
        let comm = inner.comm.0;
        let rc = {
            let mut e = Enqueue {
                api: self.api,
                comm,
                stream: &self.stream,
                raw_stream: self.stream.cu_stream() as cudaStream_t,
                scratch: &mut inner.scratch,
            };
            enqueue(&mut e)
        };
        // From here on the other ranks may have enqueued their part: every
        // failure breaks the group.
        inner.seq += 1;
        let enqueued = if rc == NCCL_IN_PROGRESS && self.nonblocking {
            poll_async(self.api, comm, call, deadline)
        } else {
            self.api.check(call, rc, comm).map_err(PollError::Nccl)
        };
        if let Err(failure) = enqueued {
            let e = self.poll_failure(failure, op_name, seq);
            self.fail(inner, e.to_string());
            return Err(e);
        }
        if let Err(e) = end.record(&self.stream) {
            let e = CudaError::driver("recording the end event", e);
            self.fail(inner, e.to_string());
            return Err(e);
        }
        if let Err(e) = self.wait(comm, &end, deadline, op_name, seq) {
            self.fail(inner, e.to_string());
            return Err(e);
        }
        let finished_ns = now_ns();
        let device_ns = match start.elapsed_ms(&end) {
            Ok(ms) => (f64::from(ms) * 1e6).max(0.0) as u64,
            Err(e) => {
                let e = CudaError::driver("reading the collective's GPU time", e);
                self.fail(inner, e.to_string());
                return Err(e);
            }
        };
        Ok(NcclWorkInfo {
            op: launch.op,
            seq,
            dtype: launch.dtype,
            count: launch.count,
            bytes: launch.count * launch.dtype.size(),
            world_size: self.world,
            rank: self.rank,
            device: self.device,
            queued_ns,
            started_ns: derive_start(queued_ns, finished_ns, device_ns),
            finished_ns,
            device_ns,
        })
    }

    fn poll_failure(&self, failure: PollError, op: &'static str, seq: u64) -> CudaError {
        match failure {
            PollError::Nccl(e) => e.into(),
            PollError::TimedOut => CudaError::Timeout {
                group: self.name.clone(),
                op,
                seq,
                waited: self.timeout,
            },
        }
    }

    /// Waits for `end`, watching for asynchronous NCCL errors and the
    /// deadline.
    fn wait(
        &self,
        comm: ncclComm_t,
        end: &CudaEvent,
        deadline: Instant,
        op: &'static str,
        seq: u64,
    ) -> Result<()> {
        let mut backoff = Backoff(0);
        loop {
            match end.try_is_complete() {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(e) => return Err(CudaError::driver("waiting for the collective", e)),
            }
            let mut state: c_int = NCCL_SUCCESS;
            // SAFETY: `comm` is live (the group's lock is held) and `state`
            // a valid out-pointer.
            let rc = unsafe { (self.api.comm_get_async_error)(comm, &mut state) };
            self.api.check("ncclCommGetAsyncError", rc, comm)?;
            if state != NCCL_SUCCESS && state != NCCL_IN_PROGRESS {
                self.api.check(op_call(op), state, comm)?;
            }
            if Instant::now() >= deadline {
                return Err(CudaError::Timeout {
                    group: self.name.clone(),
                    op,
                    seq,
                    waited: self.timeout,
                });
            }
            backoff.pause();
        }
    }

    // ----- collectives on cudarc slices -----

    /// Reduces `data` element-wise across all ranks, in place.
    pub fn all_reduce<T: NcclElement>(
        &self,
        data: &mut CudaSlice<T>,
        op: ReduceOp,
    ) -> Result<NcclWorkInfo> {
        guarded("ddp_cuda::nccl::NcclGroup::all_reduce", || {
            self.check_context("the all_reduce buffer", data.context())?;
            let count = data.len();
            let launch = Launch {
                op: OpKind::AllReduce,
                dtype: T::DTYPE,
                count,
                torch: false,
            };
            self.collective(launch, |e| {
                let (ptr, _written) = data.device_ptr_mut(e.stream);
                // SAFETY: `ptr` addresses `count` elements of `T` on this
                // group's GPU (checked), in place; the stream orders it after
                // the slice's earlier work (cudarc's events).
                unsafe {
                    (e.api.all_reduce)(
                        ptr as *const c_void,
                        ptr as *mut c_void,
                        count,
                        T::DTYPE.to_nccl(),
                        nccl_red_op(op),
                        e.comm,
                        e.raw_stream,
                    )
                }
            })
        })
    }

    /// Copies `data` of rank `root` into `data` of every rank.
    pub fn broadcast<T: NcclElement>(
        &self,
        data: &mut CudaSlice<T>,
        root: usize,
    ) -> Result<NcclWorkInfo> {
        guarded("ddp_cuda::nccl::NcclGroup::broadcast", || {
            self.check_context("the broadcast buffer", data.context())?;
            self.check_root(root)?;
            let count = data.len();
            let launch = Launch {
                op: OpKind::Broadcast,
                dtype: T::DTYPE,
                count,
                torch: false,
            };
            self.collective(launch, |e| {
                let (ptr, _written) = data.device_ptr_mut(e.stream);
                // SAFETY: as in all_reduce; `root` is in the world.
                unsafe {
                    (e.api.broadcast)(
                        ptr as *const c_void,
                        ptr as *mut c_void,
                        count,
                        T::DTYPE.to_nccl(),
                        root as c_int,
                        e.comm,
                        e.raw_stream,
                    )
                }
            })
        })
    }

    /// Concatenates every rank's `input` in rank order into `output`
    /// (`world_size * input.len()` elements) on every rank.
    pub fn all_gather<T: NcclElement>(
        &self,
        input: &CudaSlice<T>,
        output: &mut CudaSlice<T>,
    ) -> Result<NcclWorkInfo> {
        guarded("ddp_cuda::nccl::NcclGroup::all_gather", || {
            self.check_context("the all_gather input", input.context())?;
            self.check_context("the all_gather output", output.context())?;
            self.check_sizes(OpKind::AllGather, input.len(), output.len())?;
            let count = input.len();
            let launch = Launch {
                op: OpKind::AllGather,
                dtype: T::DTYPE,
                count,
                torch: false,
            };
            self.collective(launch, |e| {
                let (send, _read) = input.device_ptr(e.stream);
                let (recv, _written) = output.device_ptr_mut(e.stream);
                // SAFETY: two distinct slices (Rust borrows) of the checked
                // sizes on this group's GPU.
                unsafe {
                    (e.api.all_gather)(
                        send as *const c_void,
                        recv as *mut c_void,
                        count,
                        T::DTYPE.to_nccl(),
                        e.comm,
                        e.raw_stream,
                    )
                }
            })
        })
    }

    /// Reduces `input` (`world_size * output.len()` elements) element-wise
    /// across ranks and leaves this rank's block of the result in `output`.
    pub fn reduce_scatter<T: NcclElement>(
        &self,
        input: &CudaSlice<T>,
        output: &mut CudaSlice<T>,
        op: ReduceOp,
    ) -> Result<NcclWorkInfo> {
        guarded("ddp_cuda::nccl::NcclGroup::reduce_scatter", || {
            self.check_context("the reduce_scatter input", input.context())?;
            self.check_context("the reduce_scatter output", output.context())?;
            self.check_sizes(OpKind::ReduceScatter, output.len(), input.len())?;
            let count = output.len();
            let launch = Launch {
                op: OpKind::ReduceScatter,
                dtype: T::DTYPE,
                count,
                torch: false,
            };
            self.collective(launch, |e| {
                let (send, _read) = input.device_ptr(e.stream);
                let (recv, _written) = output.device_ptr_mut(e.stream);
                // SAFETY: two distinct slices of the checked sizes on this
                // group's GPU.
                unsafe {
                    (e.api.reduce_scatter)(
                        send as *const c_void,
                        recv as *mut c_void,
                        count,
                        T::DTYPE.to_nccl(),
                        nccl_red_op(op),
                        e.comm,
                        e.raw_stream,
                    )
                }
            })
        })
    }

    /// Returns once every rank has reached the barrier (an all-reduce of one
    /// element, as PyTorch's NCCL backend does it).
    pub fn barrier(&self) -> Result<NcclWorkInfo> {
        guarded("ddp_cuda::nccl::NcclGroup::barrier", || {
            let launch = Launch {
                op: OpKind::Barrier,
                dtype: NcclDType::F32,
                count: 0,
                torch: false,
            };
            self.collective(launch, |e| {
                let (ptr, _written) = e.scratch.device_ptr_mut(e.stream);
                // SAFETY: the group's one-element scratch buffer, in place.
                unsafe {
                    (e.api.all_reduce)(
                        ptr as *const c_void,
                        ptr as *mut c_void,
                        1,
                        ncclDataType_t::ncclFloat32,
                        ncclRedOp_t::ncclSum,
                        e.comm,
                        e.raw_stream,
                    )
                }
            })
        })
    }

    // ----- collectives on buffers owned elsewhere -----

    /// [`NcclGroup::all_reduce`] on a buffer of this group's GPU, in place.
    ///
    /// # Safety
    /// `buf` must be live device memory of this group's GPU holding
    /// `buf.count` elements of `buf.dtype`, not used by anything else until
    /// this returns.
    pub unsafe fn all_reduce_buffer(
        &self,
        buf: DeviceBuffer,
        op: ReduceOp,
    ) -> Result<NcclWorkInfo> {
        guarded("ddp_cuda::nccl::NcclGroup::all_reduce_buffer", || {
            let (dtype, count, r) = (buf.dtype, buf.count, buf.region());
            let launch = Launch {
                op: OpKind::AllReduce,
                dtype,
                count,
                torch: true,
            };
            self.collective(launch, |e| {
                // SAFETY: the caller promises `r` is `count` elements of live
                // memory on this GPU; the stream waits for libtorch's stream
                // and the call waits for completion before returning.
                unsafe {
                    (e.api.all_reduce)(
                        r.ptr as *const c_void,
                        r.ptr as *mut c_void,
                        count,
                        dtype.to_nccl(),
                        nccl_red_op(op),
                        e.comm,
                        e.raw_stream,
                    )
                }
            })
        })
    }

    /// [`NcclGroup::broadcast`] on a buffer of this group's GPU.
    ///
    /// # Safety
    /// As [`NcclGroup::all_reduce_buffer`].
    pub unsafe fn broadcast_buffer(&self, buf: DeviceBuffer, root: usize) -> Result<NcclWorkInfo> {
        guarded("ddp_cuda::nccl::NcclGroup::broadcast_buffer", || {
            let (dtype, count, r) = (buf.dtype, buf.count, buf.region());
            self.check_root(root)?;
            let launch = Launch {
                op: OpKind::Broadcast,
                dtype,
                count,
                torch: true,
            };
            self.collective(launch, |e| {
                // SAFETY: as in all_reduce_buffer.
                unsafe {
                    (e.api.broadcast)(
                        r.ptr as *const c_void,
                        r.ptr as *mut c_void,
                        count,
                        dtype.to_nccl(),
                        root as c_int,
                        e.comm,
                        e.raw_stream,
                    )
                }
            })
        })
    }

    /// [`NcclGroup::all_gather`] on buffers of one dtype; `input` may be
    /// this rank's block of `output` (in place).
    ///
    /// # Safety
    /// As [`NcclGroup::all_reduce_buffer`], for both buffers.
    pub unsafe fn all_gather_buffer(
        &self,
        input: DeviceBuffer,
        output: DeviceBuffer,
    ) -> Result<NcclWorkInfo> {
        guarded("ddp_cuda::nccl::NcclGroup::all_gather_buffer", || {
            let (dtype, count, send) = (input.dtype, input.count, input.region());
            let (out_dtype, out_count, recv) = (output.dtype, output.count, output.region());
            self.check_pair(OpKind::AllGather, dtype, out_dtype)?;
            self.check_sizes(OpKind::AllGather, count, out_count)?;
            if !gather_layout_ok(send, recv, self.rank) {
                return Err(CudaError::InvalidArgument(
                    "the all_gather input overlaps the output without being this rank's block of \
                     it"
                    .to_owned(),
                ));
            }
            let launch = Launch {
                op: OpKind::AllGather,
                dtype,
                count,
                torch: true,
            };
            self.collective(launch, |e| {
                // SAFETY: checked sizes, dtype, device and layout.
                unsafe {
                    (e.api.all_gather)(
                        send.ptr as *const c_void,
                        recv.ptr as *mut c_void,
                        count,
                        dtype.to_nccl(),
                        e.comm,
                        e.raw_stream,
                    )
                }
            })
        })
    }

    /// [`NcclGroup::reduce_scatter`] on buffers of one dtype; `output` may
    /// be this rank's block of `input` (in place).
    ///
    /// # Safety
    /// As [`NcclGroup::all_reduce_buffer`], for both buffers.
    pub unsafe fn reduce_scatter_buffer(
        &self,
        input: DeviceBuffer,
        output: DeviceBuffer,
        op: ReduceOp,
    ) -> Result<NcclWorkInfo> {
        guarded("ddp_cuda::nccl::NcclGroup::reduce_scatter_buffer", || {
            let (dtype, in_count, send) = (input.dtype, input.count, input.region());
            let (out_dtype, count, recv) = (output.dtype, output.count, output.region());
            self.check_pair(OpKind::ReduceScatter, dtype, out_dtype)?;
            self.check_sizes(OpKind::ReduceScatter, count, in_count)?;
            if !gather_layout_ok(recv, send, self.rank) {
                return Err(CudaError::InvalidArgument(
                    "the reduce_scatter output overlaps the input without being this rank's \
                     block of it"
                        .to_owned(),
                ));
            }
            let launch = Launch {
                op: OpKind::ReduceScatter,
                dtype,
                count,
                torch: true,
            };
            self.collective(launch, |e| {
                // SAFETY: checked sizes, dtype, device and layout.
                unsafe {
                    (e.api.reduce_scatter)(
                        send.ptr as *const c_void,
                        recv.ptr as *mut c_void,
                        count,
                        dtype.to_nccl(),
                        nccl_red_op(op),
                        e.comm,
                        e.raw_stream,
                    )
                }
            })
        })
    }

    fn check_pair(&self, op: OpKind, input: NcclDType, output: NcclDType) -> Result<()> {
        if input != output {
            return Err(CudaError::InvalidArgument(format!(
                "{op} input is {input} but output is {output}"
            )));
        }
        Ok(())
    }
}

/// The NCCL function behind an operation name, for asynchronous errors.
fn op_call(op: &str) -> &'static str {
    match op {
        "broadcast" => "ncclBroadcast",
        "all_gather" => "ncclAllGather",
        "reduce_scatter" => "ncclReduceScatter",
        _ => "ncclAllReduce",
    }
}

impl Drop for NcclGroup {
    fn drop(&mut self) {
        let api = self.api;
        let nonblocking = self.nonblocking;
        let timeout = self.timeout;
        let ctx = Arc::clone(&self.ctx);
        let inner = self.inner.get_mut().unwrap_or_else(|e| e.into_inner());
        let comm = std::mem::replace(&mut inner.comm.0, std::ptr::null_mut());
        if comm.is_null() {
            return;
        }
        let broken = inner.broken.is_some();
        // Never unwind out of drop.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = ctx.bind_to_thread();
            if broken {
                // SAFETY: the communicator is not used after this.
                unsafe { (api.comm_abort)(comm) };
                return;
            }
            let finalized = match api.comm_finalize {
                Some(finalize) => {
                    // SAFETY: a live communicator with no collective in
                    // flight (every call waits for completion).
                    let rc = unsafe { finalize(comm) };
                    if rc == NCCL_IN_PROGRESS && nonblocking {
                        poll_async(api, comm, "ncclCommFinalize", Instant::now() + timeout).is_ok()
                    } else {
                        rc == NCCL_SUCCESS
                    }
                }
                None => true,
            };
            if finalized {
                // SAFETY: finalized (or an NCCL without finalize, whose
                // destroy does it); not used after this.
                unsafe { (api.comm_destroy)(comm) };
            } else {
                // SAFETY: not used after this.
                unsafe { (api.comm_abort)(comm) };
            }
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_are_named_with_their_meaning() {
        assert!(NcclError::from_code("ncclAllReduce", 0, "").is_none());
        let cases = [
            (
                1,
                "ncclUnhandledCudaError",
                "a call to a CUDA function failed",
            ),
            (2, "ncclSystemError", "a call to the system failed"),
            (3, "ncclInternalError", "an internal check failed"),
            (
                4,
                "ncclInvalidArgument",
                "one argument has an invalid value",
            ),
            (5, "ncclInvalidUsage", "usually a programming error"),
            (6, "ncclRemoteError", "a remote process exiting prematurely"),
            (7, "ncclInProgress", "progressed in the background"),
        ];
        for (code, name, meaning) in cases {
            let e = NcclError::from_code("ncclAllReduce", code, "unhandled system error").unwrap();
            assert_eq!(e.code(), code);
            assert_eq!(e.code_name(), name);
            assert_eq!(e.call(), "ncclAllReduce");
            let text = e.to_string();
            assert!(text.starts_with("ncclAllReduce "), "{text}");
            assert!(text.contains(name), "{text}");
            assert!(text.contains(meaning), "{text}");
            assert!(text.ends_with("(unhandled system error)"), "{text}");
        }
        let other = NcclError::from_code("ncclCommInitRankConfig", 8, "").unwrap();
        assert_eq!(other.code(), 8);
        assert_eq!(
            other.to_string(),
            "ncclCommInitRankConfig failed with NCCL result code 8"
        );
    }

    #[test]
    fn version_codes() {
        assert_eq!(decode_version(22907), (2, 29, 7));
        assert_eq!(version_string(22907), "2.29.7");
        assert_eq!(version_string(21003), "2.10.3");
        assert_eq!(version_string(2804), "2.8.4");
    }

    #[test]
    fn reduce_ops_and_types() {
        assert_eq!(nccl_red_op(ReduceOp::Sum), ncclRedOp_t::ncclSum);
        assert_eq!(nccl_red_op(ReduceOp::Avg), ncclRedOp_t::ncclAvg);
        assert_eq!(nccl_red_op(ReduceOp::Max), ncclRedOp_t::ncclMax);
        assert_eq!(nccl_red_op(ReduceOp::Min), ncclRedOp_t::ncclMin);
        assert_eq!(nccl_red_op(ReduceOp::Product), ncclRedOp_t::ncclProd);
        assert_eq!(NcclDType::BF16.to_nccl(), ncclDataType_t::ncclBfloat16);
        assert_eq!(<f64 as NcclElement>::DTYPE.size(), 8);
        assert_eq!(<u8 as NcclElement>::DTYPE.name(), "u8");
    }

    #[test]
    fn config_matches_the_initializer() {
        let name = CString::new("g").unwrap();
        let c = nonblocking_config(name.as_ptr());
        assert_eq!(c.size, std::mem::size_of::<ncclConfig_t>());
        assert_eq!(c.magic, 0xcafebeef);
        assert_eq!(c.version, 22900);
        assert_eq!(c.blocking, 0);
        assert_eq!(c.minCTAs, i32::MIN);
        assert!(c.netName.is_null());
        assert_eq!(c.commName, name.as_ptr());
    }

    fn hello(version: i32, device: usize, host: &str, id: Option<u8>) -> Hello {
        Hello {
            nccl_version: version,
            device,
            host: host.to_owned(),
            unique_id: id.map(|b| [b; UNIQUE_ID_BYTES]),
        }
    }

    #[test]
    fn hello_round_trip() {
        let mut id = [0u8; UNIQUE_ID_BYTES];
        for (i, b) in id.iter_mut().enumerate() {
            *b = (i * 7) as u8;
        }
        let h = Hello {
            nccl_version: 22907,
            device: 3,
            host: "boot-1 node\nA".to_owned(),
            unique_id: Some(id),
        };
        let back = Hello::decode(&h.encode()).unwrap();
        assert_eq!(back.unique_id, Some(id));
        assert_eq!(back.host, "boot-1 node A");
        assert_eq!((back.nccl_version, back.device), (22907, 3));
        let plain = hello(22907, 1, "h", None);
        assert_eq!(Hello::decode(&plain.encode()).unwrap(), plain);
        assert!(Hello::decode(b"garbage").is_err());
        let short = b"ddp-nccl-hello 1\nversion=1\ndevice=0\nid=abcd\nhost=h\n";
        assert!(Hello::decode(short).unwrap_err().contains("256"));
    }

    #[test]
    fn hellos_must_agree() {
        let ok = [
            hello(22907, 0, "a", Some(9)),
            hello(22907, 1, "a", None),
            hello(22907, 0, "b", None),
        ];
        assert_eq!(check_hellos(&ok, None).unwrap(), [9; UNIQUE_ID_BYTES]);
        let versions = [
            hello(22907, 0, "a", Some(9)),
            hello(22803, 1, "a", None),
            hello(22803, 2, "a", None),
        ];
        let e = check_hellos(&versions, None).unwrap_err();
        assert!(e.contains("rank 0 2.29.7, ranks 1, 2 2.28.3"), "{e}");
        let shared = [hello(22907, 0, "a", Some(9)), hello(22907, 0, "a", None)];
        let e = check_hellos(&shared, None).unwrap_err();
        assert!(e.contains("ranks 0 and 1 both use GPU 0"), "{e}");
        // NCCL 2.29 refuses a shared GPU whatever the variable says.
        let e = check_hellos(&shared, Some("1")).unwrap_err();
        assert!(
            e.contains("only from 2.30 on") && e.contains("(NCCL 2.29.7)"),
            "{e}"
        );
        // 2.30 shares it when told to, and the message says how.
        let shared_230 = [hello(23000, 0, "a", Some(9)), hello(23000, 0, "a", None)];
        assert_eq!(
            check_hellos(&shared_230, Some("1")).unwrap(),
            [9; UNIQUE_ID_BYTES]
        );
        let e = check_hellos(&shared_230, Some("0")).unwrap_err();
        assert!(e.contains("or set NCCL_MULTI_RANK_GPU_ENABLE=1"), "{e}");
        let no_id = [hello(22907, 0, "a", None)];
        assert!(check_hellos(&no_id, None)
            .unwrap_err()
            .contains("unique id"));
    }

    #[test]
    fn nccl_shares_a_gpu_from_2_30_when_told_to() {
        assert!(nccl_shares_gpus(23000, Some("1")));
        assert!(nccl_shares_gpus(23104, Some(" 2 ")));
        assert!(!nccl_shares_gpus(23000, Some("0")));
        assert!(!nccl_shares_gpus(23000, Some("yes")));
        assert!(!nccl_shares_gpus(23000, None));
        assert!(!nccl_shares_gpus(22809, Some("1")));
    }

    #[test]
    fn device_from_local_rank() {
        assert_eq!(device_from_env(|_| None, 3).unwrap(), 3);
        assert_eq!(
            device_from_env(|k| (k == "LOCAL_RANK").then(|| "1".to_owned()), 5).unwrap(),
            1
        );
        let e = device_from_env(|_| Some("x".to_owned()), 0).unwrap_err();
        assert!(e.to_string().contains("LOCAL_RANK=\"x\""), "{e}");
    }

    #[test]
    fn gather_layouts() {
        let big = Region {
            ptr: 1000,
            bytes: 400,
        };
        let disjoint = Region { ptr: 0, bytes: 100 };
        assert!(gather_layout_ok(disjoint, big, 2));
        let in_place = Region {
            ptr: 1200,
            bytes: 100,
        };
        assert!(gather_layout_ok(in_place, big, 2));
        assert!(!gather_layout_ok(in_place, big, 1));
        let straddling = Region {
            ptr: 1350,
            bytes: 100,
        };
        assert!(!gather_layout_ok(straddling, big, 3));
        let empty = Region {
            ptr: 1000,
            bytes: 0,
        };
        assert!(gather_layout_ok(empty, big, 1));
    }

    #[test]
    fn work_info_span_and_start() {
        assert_eq!(derive_start(100, 1_000, 300), 700);
        assert_eq!(derive_start(900, 1_000, 300), 900);
        assert_eq!(derive_start(0, 100, 300), 0);
        let info = NcclWorkInfo {
            op: OpKind::AllReduce,
            seq: 17,
            dtype: NcclDType::BF16,
            count: 1024,
            bytes: 2048,
            world_size: 8,
            rank: 3,
            device: 3,
            queued_ns: 10,
            started_ns: 20,
            finished_ns: 50,
            device_ns: 30,
        };
        assert_eq!(info.duration_ns(), 30);
        let s = info.span(4);
        assert_eq!(s.kind, SpanKind::Collective);
        assert_eq!(
            (s.step, s.start, s.end, s.queued),
            (Some(4), 20, 50, Some(10))
        );
        assert_eq!(s.op.as_deref(), Some("all_reduce"));
        assert_eq!(s.transport.as_deref(), Some("nccl"));
        assert_eq!(s.dtype.as_deref(), Some("bf16"));
        assert_eq!((s.seq, s.bytes, s.device), (Some(17), Some(2048), Some(3)));
    }

    #[test]
    fn op_calls() {
        assert_eq!(op_call("all_reduce"), "ncclAllReduce");
        assert_eq!(op_call("barrier"), "ncclAllReduce");
        assert_eq!(op_call("all_gather"), "ncclAllGather");
        assert_eq!(op_call("reduce_scatter"), "ncclReduceScatter");
        assert_eq!(op_call("broadcast"), "ncclBroadcast");
    }
}
