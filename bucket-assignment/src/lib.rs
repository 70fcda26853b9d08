//! Gradient bucket assignment, exactly as PyTorch's DDP does it (torch 2.13).
//!
//! # The assignment (`reducer.cpp`, `compute_bucket_assignment_by_size`)
//!
//! [`compute_bucket_assignment_by_size`] walks the parameters in the order
//! given:
//!
//! * a parameter expecting a sparse gradient gets a bucket of its own, emitted
//!   at once, with size limit 0;
//! * every other parameter joins the open bucket of its (dtype, device) key;
//!   parameters are never split. Each key has its own position in the list of
//!   size limits, starting at the first element. When the bucket's byte size
//!   reaches the current limit (`size >= limit`, so the parameter crossing the
//!   limit stays in it and a bucket can exceed the limit) the bucket is closed
//!   and the key moves on to the next limit, staying on the last one;
//! * afterwards the still-open buckets are appended, one per key, in the
//!   iteration order of the C++ `std::unordered_map` keyed by
//!   `(ScalarType, Device)` (emulated here for libstdc++, see below);
//! * without `tensor_indices` (the initial assignment, parameters in
//!   registration order) the buckets are sorted by the smallest index they
//!   hold; with `tensor_indices` (the rebuild, parameters in gradient-ready
//!   order, `tensor_indices[i]` the index of the i-th) nothing is sorted and
//!   the buckets hold those indices.
//!
//! Only with several (dtype, device) keys and `tensor_indices` does the map's
//! iteration order show. libstdc++ (which the PyPI wheels are built with)
//! starts the map at 13 buckets on the first insertion, grows it to the next
//! prime of its table at least twice as large when the element count would
//! exceed the bucket count, inserts a node in front of the nodes of its
//! bucket or, when its bucket is empty, at the front of the list, and rehashes
//! by re-inserting the nodes in list order by the same rule. The key's hash is
//! c10's `get_hash(scalar_type, device)`.
//!
//! # Size limits (`torch/nn/parallel/distributed.py`, `_BucketCapacityConfig`)
//!
//! [`BucketCapConfig`] mirrors torch 2.13's handling of `bucket_cap_mb` and
//! `bucket_cap_mb_list`:
//!
//! * `bucket_bytes_cap = int(bucket_cap_mb * 2^20)` (25 MiB by default; with
//!   `bucket_cap_mb_list`, the list's maximum);
//! * `first_bucket_bytes_cap` is `dist._DEFAULT_FIRST_BUCKET_BYTES` (1 MiB)
//!   only when neither `bucket_cap_mb` nor `bucket_cap_mb_list` was passed.
//!   **When the user passes `bucket_cap_mb` explicitly (any value, even 25),
//!   the first bucket's cap is `bucket_bytes_cap` too**: there is no special
//!   small bucket, neither at construction nor after the rebuild.
//! * Initial limits ([`BucketCapConfig::initial_limits`]): with
//!   `bucket_cap_mb_list`, that list (in bytes). Otherwise, with
//!   `static_graph` or without `find_unused_parameters`, `[sys.maxsize]` (one
//!   bucket per (dtype, device) key for the first iteration); otherwise
//!   `[first_bucket_bytes_cap, bucket_bytes_cap]` when the first is smaller,
//!   else `[bucket_bytes_cap]`. The buckets, computed in registration order,
//!   are then REVERSED ([`initial_bucket_assignment`]), so the first bucket
//!   reduced holds the last-registered parameters.
//! * Rebuild ([`rebuilt_bucket_assignment`]): happens once, before the
//!   forward of the iteration after the first backward, only when
//!   `static_graph || !find_unused_parameters`. It uses the gradient-ready
//!   order observed in that backward and the limits
//!   [`BucketCapConfig::rebuild_limits`]: the `bucket_cap_mb_list` bytes if
//!   given, else `[first_bucket_bytes_cap, bucket_bytes_cap]`; nothing is
//!   reversed, so by default the small (1 MiB) bucket is the FIRST reduced.
//!   With the environment variable `DDP_SET_LAST_BUCKET_CAP=1` the ready
//!   order is reversed before the assignment and the bucket list after it, so
//!   the small bucket is the last one.
//!
//! # Where it is used
//!
//! This crate is the one implementation of the above and needs no libtorch:
//! the `ddp` crate's reducer assigns its buckets with it (adding the
//! conversions from `tch` types), and the `bucket_cap_mb` advice replays it
//! on a trace's parameter table (`probe::analysis::assign`).

use std::collections::HashMap;

/// `sys.maxsize`, the "no limit" DDP uses for the first iteration.
pub const UNLIMITED_BUCKET_BYTES: u64 = i64::MAX as u64;
/// `dist._DEFAULT_FIRST_BUCKET_BYTES` (`kDefaultFirstBucketBytes`): 1 MiB.
pub const DEFAULT_FIRST_BUCKET_BYTES: u64 = 1024 * 1024;
/// The default `bucket_cap_mb`.
pub const DEFAULT_BUCKET_CAP_MB: f64 = 25.0;
/// Bytes per MiB, as `bucket_cap_mb` counts.
pub const MIB: u64 = 1024 * 1024;

/// Errors from bucket assignment.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BucketError {
    /// No parameters (PyTorch asserts on an empty list).
    #[error("no parameters to assign to buckets")]
    NoParameters,
    /// The list of size limits is empty.
    #[error("the list of bucket size limits is empty")]
    NoLimits,
    /// `tensor_indices` does not have one entry per parameter.
    #[error("{indices} tensor indices given for {params} parameters")]
    IndicesLengthMismatch {
        /// Number of parameters.
        params: usize,
        /// Number of indices.
        indices: usize,
    },
    /// The gradient-ready order is not a permutation of the parameter indices.
    #[error("the gradient-ready order is not a permutation of 0..{params}: {reason}")]
    InvalidReadyOrder {
        /// Number of parameters.
        params: usize,
        /// What is wrong.
        reason: String,
    },
    /// A parameter's byte size or a bucket's running size overflows 64 bits.
    #[error("the byte size of parameter {index} overflows 64 bits")]
    SizeOverflow {
        /// Position of the parameter in the list.
        index: usize,
    },
    /// `bucket_cap_mb` (or an entry of `bucket_cap_mb_list`) is negative,
    /// NaN or too large.
    #[error("invalid bucket cap of {value} MiB")]
    InvalidCapMb {
        /// The value given.
        value: f64,
    },
    /// More distinct (dtype, device) keys than the map emulation covers.
    #[error("{keys} distinct (dtype, device) pairs; at most {max} are supported")]
    TooManyKeys {
        /// Number of keys.
        keys: usize,
        /// The supported maximum.
        max: usize,
    },
    /// A tensor whose dtype cannot be read (undefined tensor); raised where
    /// parameters are described from libtorch tensors.
    #[error("cannot describe parameter {index}: {message}")]
    BadTensor {
        /// Position of the parameter.
        index: usize,
        /// libtorch's message.
        message: String,
    },
}

/// A `c10::ScalarType`, by its number (`Float` = 6, `Half` = 5, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DtypeKey(pub i8);

/// PyTorch's names of the scalar types, by `c10::ScalarType` number
/// (`str(dtype)` without `torch.`).
const SCALAR_TYPE_NAMES: [&str; 46] = [
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "float32",
    "float64",
    "complex32",
    "complex64",
    "complex128",
    "bool",
    "qint8",
    "quint8",
    "qint32",
    "bfloat16",
    "quint4x2",
    "quint2x4",
    "bits1x8",
    "bits2x4",
    "bits4x2",
    "bits8",
    "bits16",
    "float8_e5m2",
    "float8_e4m3fn",
    "float8_e5m2fnuz",
    "float8_e4m3fnuz",
    "uint16",
    "uint32",
    "uint64",
    "uint1",
    "uint2",
    "uint3",
    "uint4",
    "uint5",
    "uint6",
    "uint7",
    "int1",
    "int2",
    "int3",
    "int4",
    "int5",
    "int6",
    "int7",
    "float8_e8m0fnu",
    "float4_e2m1fn_x2",
];

/// The other names `torch` gives some scalar types, with their numbers.
const SCALAR_TYPE_ALIASES: [(&str, i8); 10] = [
    ("short", 2),
    ("int", 3),
    ("long", 4),
    ("half", 5),
    ("float", 6),
    ("double", 7),
    ("chalf", 8),
    ("cfloat", 9),
    ("cdouble", 10),
    ("bit", 30),
];

impl DtypeKey {
    /// The scalar type PyTorch calls `name` (`"float32"`, `"bfloat16"`,
    /// also with a `torch.` prefix or as an alias such as `"half"`), as a
    /// trace's parameter table writes it; `None` for a name torch 2.13 does
    /// not have.
    pub fn from_name(name: &str) -> Option<Self> {
        let name = name.strip_prefix("torch.").unwrap_or(name);
        SCALAR_TYPE_NAMES
            .iter()
            .position(|&n| n == name)
            .map(|code| Self(code as i8))
            .or_else(|| {
                SCALAR_TYPE_ALIASES
                    .iter()
                    .find(|&&(alias, _)| alias == name)
                    .map(|&(_, code)| Self(code))
            })
    }
}

/// A `c10::Device`: `c10::DeviceType` number and device index (-1 for none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceKey {
    /// `c10::DeviceType` (CPU = 0, CUDA = 1, MPS = 13, Meta = 14, ...).
    pub device_type: i8,
    /// Device index; CPU tensors have -1.
    pub index: i8,
}

impl DeviceKey {
    /// The device of CPU tensors (`cpu`, index -1).
    pub const CPU: Self = Self {
        device_type: 0,
        index: -1,
    };

    /// `cuda:index`.
    pub fn cuda(index: i8) -> Self {
        Self {
            device_type: 1,
            index,
        }
    }
}

/// What bucketing needs to know about a parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ParamSpec {
    /// Number of elements.
    pub numel: u64,
    /// Bytes per element.
    pub element_size: u64,
    /// Scalar type.
    pub dtype: DtypeKey,
    /// Device.
    pub device: DeviceKey,
    /// Whether the parameter's gradient is sparse (`nn.Embedding(sparse=True)`).
    pub sparse: bool,
}

impl ParamSpec {
    /// A dense parameter.
    pub fn dense(numel: u64, element_size: u64, dtype: DtypeKey, device: DeviceKey) -> Self {
        Self {
            numel,
            element_size,
            dtype,
            device,
            sparse: false,
        }
    }

    /// `numel * element_size`.
    pub fn bytes(&self) -> Option<u64> {
        self.numel.checked_mul(self.element_size)
    }
}

/// One bucket: parameter indices, in the order given, and its size limit.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Bucket {
    /// Parameter indices.
    pub indices: Vec<usize>,
    /// The limit in force when the bucket was filled (0 for sparse buckets).
    pub size_limit: u64,
}

/// `compute_bucket_assignment_by_size` of `reducer.cpp` (see the module doc).
///
/// `params` are in the order to walk. Without `tensor_indices` a parameter's
/// index is its position and the buckets are sorted by their smallest index;
/// with it, `tensor_indices[i]` is the index of `params[i]` and the buckets
/// stay in the order they were produced.
pub fn compute_bucket_assignment_by_size(
    params: &[ParamSpec],
    limits: &[u64],
    tensor_indices: Option<&[usize]>,
) -> Result<Vec<Bucket>, BucketError> {
    if params.is_empty() {
        return Err(BucketError::NoParameters);
    }
    if limits.is_empty() {
        return Err(BucketError::NoLimits);
    }
    if let Some(ti) = tensor_indices {
        if ti.len() != params.len() {
            return Err(BucketError::IndicesLengthMismatch {
                params: params.len(),
                indices: ti.len(),
            });
        }
    }

    struct Open {
        indices: Vec<usize>,
        size: u64,
        size_limit: u64,
        limit_pos: usize,
    }

    let mut result: Vec<Bucket> = Vec::with_capacity(params.len());
    let mut open: HashMap<(DtypeKey, DeviceKey), Open> = HashMap::new();
    let mut key_order = LibstdcxxKeyOrder::default();

    for (i, p) in params.iter().enumerate() {
        let index = tensor_indices.map_or(i, |ti| ti[i]);
        if p.sparse {
            result.push(Bucket {
                indices: vec![index],
                size_limit: 0,
            });
            continue;
        }
        let key = (p.dtype, p.device);
        if !open.contains_key(&key) {
            key_order.insert(key)?;
        }
        let bucket = open.entry(key).or_insert_with(|| Open {
            indices: Vec::new(),
            size: 0,
            size_limit: 0,
            limit_pos: 0,
        });
        let bytes = p.bytes().ok_or(BucketError::SizeOverflow { index: i })?;
        bucket.indices.push(index);
        bucket.size = bucket
            .size
            .checked_add(bytes)
            .ok_or(BucketError::SizeOverflow { index: i })?;
        let limit = limits[bucket.limit_pos];
        bucket.size_limit = limit;
        if bucket.size >= limit {
            result.push(Bucket {
                indices: std::mem::take(&mut bucket.indices),
                size_limit: limit,
            });
            bucket.size = 0;
            if bucket.limit_pos + 1 < limits.len() {
                bucket.limit_pos += 1;
            }
        }
    }

    for key in key_order.iter() {
        if let Some(bucket) = open.get_mut(key) {
            if !bucket.indices.is_empty() {
                result.push(Bucket {
                    indices: std::mem::take(&mut bucket.indices),
                    size_limit: bucket.size_limit,
                });
            }
        }
    }

    if tensor_indices.is_none() {
        // Every index is in exactly one bucket, so the minima are distinct and
        // the order is total.
        result.sort_by_key(|b| b.indices.iter().copied().min().unwrap_or(usize::MAX));
    }
    Ok(result)
}

/// DDP's bucket size settings (`_BucketCapacityConfig` of torch 2.13).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketCapConfig {
    /// The bucket size cap in bytes (`bucket_bytes_cap`).
    pub bucket_bytes_cap: u64,
    /// Per-bucket caps from `bucket_cap_mb_list`, in bytes; empty if not given.
    pub per_bucket_bytes_caps: Vec<u64>,
    /// The first bucket's cap: the default first-bucket size when neither
    /// `bucket_cap_mb` nor `bucket_cap_mb_list` was given, else
    /// `bucket_bytes_cap`.
    pub first_bucket_bytes_cap: u64,
}

impl Default for BucketCapConfig {
    fn default() -> Self {
        Self {
            bucket_bytes_cap: 25 * MIB,
            per_bucket_bytes_caps: Vec::new(),
            first_bucket_bytes_cap: DEFAULT_FIRST_BUCKET_BYTES,
        }
    }
}

/// `int(mb * 1024 * 1024)`.
fn mb_to_bytes(mb: f64) -> Result<u64, BucketError> {
    let bytes = (mb * MIB as f64).trunc();
    if !bytes.is_finite() || bytes < 0.0 || bytes >= UNLIMITED_BUCKET_BYTES as f64 {
        return Err(BucketError::InvalidCapMb { value: mb });
    }
    Ok(bytes as u64)
}

impl BucketCapConfig {
    /// The configuration `DistributedDataParallel(bucket_cap_mb=...,
    /// bucket_cap_mb_list=...)` builds, with the default first-bucket size.
    /// `None` (or an empty list) means "not passed".
    pub fn new(
        bucket_cap_mb: Option<f64>,
        bucket_cap_mb_list: Option<&[f64]>,
    ) -> Result<Self, BucketError> {
        Self::with_first_bucket_bytes(
            bucket_cap_mb,
            bucket_cap_mb_list,
            DEFAULT_FIRST_BUCKET_BYTES,
        )
    }

    /// Like [`BucketCapConfig::new`] with another value of
    /// `dist._DEFAULT_FIRST_BUCKET_BYTES`.
    pub fn with_first_bucket_bytes(
        bucket_cap_mb: Option<f64>,
        bucket_cap_mb_list: Option<&[f64]>,
        default_first_bucket_bytes: u64,
    ) -> Result<Self, BucketError> {
        let mut using_default = bucket_cap_mb.is_none();
        let mut effective_mb = bucket_cap_mb.unwrap_or(DEFAULT_BUCKET_CAP_MB);
        let mut per_bucket_bytes_caps = Vec::new();
        if let Some(list) = bucket_cap_mb_list.filter(|l| !l.is_empty()) {
            per_bucket_bytes_caps = list
                .iter()
                .map(|&mb| mb_to_bytes(mb))
                .collect::<Result<Vec<_>, _>>()?;
            // Python's max(): the first of equal maxima, NaN already refused.
            effective_mb = list.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            using_default = false;
        }
        let bucket_bytes_cap = mb_to_bytes(effective_mb)?;
        Ok(Self {
            bucket_bytes_cap,
            per_bucket_bytes_caps,
            first_bucket_bytes_cap: if using_default {
                default_first_bucket_bytes
            } else {
                bucket_bytes_cap
            },
        })
    }

    /// DDP's `bucket_bytes_cap_default`: whether the first bucket is smaller.
    pub fn has_small_first_bucket(&self) -> bool {
        self.first_bucket_bytes_cap < self.bucket_bytes_cap
    }

    /// The limits of the assignment at construction.
    pub fn initial_limits(&self, static_graph: bool, find_unused_parameters: bool) -> Vec<u64> {
        if !self.per_bucket_bytes_caps.is_empty() {
            self.per_bucket_bytes_caps.clone()
        } else if static_graph || !find_unused_parameters {
            vec![UNLIMITED_BUCKET_BYTES]
        } else if self.has_small_first_bucket() {
            vec![self.first_bucket_bytes_cap, self.bucket_bytes_cap]
        } else {
            vec![self.bucket_bytes_cap]
        }
    }

    /// The limits of the one-time rebuild.
    pub fn rebuild_limits(&self) -> Vec<u64> {
        if self.per_bucket_bytes_caps.is_empty() {
            vec![self.first_bucket_bytes_cap, self.bucket_bytes_cap]
        } else {
            self.per_bucket_bytes_caps.clone()
        }
    }
}

/// Whether DDP rebuilds its buckets after the first iteration.
pub fn should_rebuild_buckets(static_graph: bool, find_unused_parameters: bool) -> bool {
    static_graph || !find_unused_parameters
}

/// The buckets DDP hands its reducer at construction: computed over the
/// parameters in registration order with
/// [`BucketCapConfig::initial_limits`], then reversed.
pub fn initial_bucket_assignment(
    params: &[ParamSpec],
    config: &BucketCapConfig,
    static_graph: bool,
    find_unused_parameters: bool,
) -> Result<Vec<Bucket>, BucketError> {
    let limits = config.initial_limits(static_graph, find_unused_parameters);
    let mut buckets = compute_bucket_assignment_by_size(params, &limits, None)?;
    buckets.reverse();
    Ok(buckets)
}

/// The buckets of the one-time rebuild. `params` are in registration order,
/// `ready_order` lists every parameter index once, in the order the gradients
/// became ready. `set_last_bucket_cap` is `DDP_SET_LAST_BUCKET_CAP=1`.
pub fn rebuilt_bucket_assignment(
    params: &[ParamSpec],
    ready_order: &[usize],
    config: &BucketCapConfig,
    set_last_bucket_cap: bool,
) -> Result<Vec<Bucket>, BucketError> {
    check_permutation(params.len(), ready_order)?;
    let mut order = ready_order.to_vec();
    if set_last_bucket_cap {
        order.reverse();
    }
    let specs: Vec<ParamSpec> = order.iter().map(|&i| params[i]).collect();
    let mut buckets =
        compute_bucket_assignment_by_size(&specs, &config.rebuild_limits(), Some(&order))?;
    if set_last_bucket_cap {
        buckets.reverse();
    }
    Ok(buckets)
}

fn check_permutation(n: usize, order: &[usize]) -> Result<(), BucketError> {
    let invalid = |reason: String| BucketError::InvalidReadyOrder { params: n, reason };
    if order.len() != n {
        return Err(invalid(format!("it has {} entries", order.len())));
    }
    let mut seen = vec![false; n];
    for &i in order {
        match seen.get_mut(i) {
            None => return Err(invalid(format!("index {i} is out of range"))),
            Some(true) => return Err(invalid(format!("index {i} appears twice"))),
            Some(s) => *s = true,
        }
    }
    Ok(())
}

/// `c10::get_hash(scalar_type, device)` as libstdc++ computes it.
fn bucket_key_hash(dtype: DtypeKey, device: DeviceKey) -> u64 {
    // std::hash<c10::Device>: (uint8 type << 16) | uint8 index, via
    // std::hash<uint32_t> (the identity).
    let dev = (u64::from(device.device_type as u8) << 16) | u64::from(device.index as u8);
    // ScalarType is an int8_t enum: std::hash<int8_t> sign-extends.
    let ty = dtype.0 as i64 as u64;
    // c10::hash of a tuple combines from the last element: seed = hash(device),
    // then hash_combine(seed, hash(type)).
    dev ^ ty
        .wrapping_add(0x9e37_79b9)
        .wrapping_add(dev << 6)
        .wrapping_add(dev >> 2)
}

/// libstdc++'s `__prime_list` from 13 on, as far as the emulation goes.
const LIBSTDCXX_PRIMES: &[u64] = &[
    13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97, 103, 109, 113,
    127, 137, 139, 149, 157, 167, 179, 193, 199, 211, 227, 241, 257,
];

/// Iteration order of a libstdc++ `std::unordered_map` into which keys were
/// inserted (never erased), with the default max load factor 1.0.
#[derive(Debug, Default)]
struct LibstdcxxKeyOrder {
    /// Keys in list (iteration) order with their hash codes.
    nodes: Vec<((DtypeKey, DeviceKey), u64)>,
    bucket_count: u64,
    next_resize: u64,
}

impl LibstdcxxKeyOrder {
    /// The largest key count the prime table above covers.
    const MAX_KEYS: usize = 257;

    fn insert(&mut self, key: (DtypeKey, DeviceKey)) -> Result<(), BucketError> {
        let n_elt = self.nodes.len() as u64;
        if n_elt as usize >= Self::MAX_KEYS {
            return Err(BucketError::TooManyKeys {
                keys: self.nodes.len() + 1,
                max: Self::MAX_KEYS,
            });
        }
        let n_bkt = self.bucket_count.max(1);
        // _Prime_rehash_policy::_M_need_rehash(n_bkt, n_elt, 1).
        if n_elt + 1 > self.next_resize {
            let min_bkts = (n_elt + 1).max(if self.next_resize == 0 { 11 } else { 0 });
            if min_bkts >= n_bkt {
                let want = (min_bkts + 1).max(n_bkt * 2);
                let new_count = self.next_bucket_count(want);
                self.rehash(new_count);
            } else {
                self.next_resize = n_bkt;
            }
        }
        let code = bucket_key_hash(key.0, key.1);
        let pos = self.insert_position(code);
        self.nodes.insert(pos, (key, code));
        Ok(())
    }

    /// `_M_next_bkt`: the smallest table prime >= `n` (from 13 on, since the
    /// first growth already asks for 12); sets the next resize threshold.
    fn next_bucket_count(&mut self, n: u64) -> u64 {
        let prime = LIBSTDCXX_PRIMES
            .iter()
            .copied()
            .find(|&p| p >= n)
            .unwrap_or(u64::MAX);
        self.next_resize = prime;
        prime
    }

    /// Where a node with hash `code` goes: in front of the first node of its
    /// bucket, or at the front of the list when the bucket is empty.
    fn insert_position(&self, code: u64) -> usize {
        let bucket = code % self.bucket_count;
        self.nodes
            .iter()
            .position(|&(_, c)| c % self.bucket_count == bucket)
            .unwrap_or(0)
    }

    fn rehash(&mut self, new_count: u64) {
        let old = std::mem::take(&mut self.nodes);
        self.bucket_count = new_count;
        for (key, code) in old {
            let pos = self.insert_position(code);
            self.nodes.insert(pos, (key, code));
        }
    }

    fn iter(&self) -> impl Iterator<Item = &(DtypeKey, DeviceKey)> + '_ {
        self.nodes.iter().map(|(k, _)| k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `count` elements of the scalar type `code` on CPU.
    fn cpu(count: u64, element_size: u64, code: i8) -> ParamSpec {
        ParamSpec::dense(count, element_size, DtypeKey(code), DeviceKey::CPU)
    }

    #[test]
    fn dtype_names_are_pytorchs() {
        assert_eq!(DtypeKey::from_name("uint8"), Some(DtypeKey(0)));
        assert_eq!(DtypeKey::from_name("float32"), Some(DtypeKey(6)));
        assert_eq!(DtypeKey::from_name("torch.bfloat16"), Some(DtypeKey(15)));
        assert_eq!(DtypeKey::from_name("float8_e4m3fn"), Some(DtypeKey(24)));
        assert_eq!(DtypeKey::from_name("uint64"), Some(DtypeKey(29)));
        assert_eq!(DtypeKey::from_name("float4_e2m1fn_x2"), Some(DtypeKey(45)));
        assert_eq!(DtypeKey::from_name("half"), Some(DtypeKey(5)));
        assert_eq!(DtypeKey::from_name("long"), Some(DtypeKey(4)));
        assert_eq!(DtypeKey::from_name("other"), None);
        assert_eq!(DtypeKey::from_name(""), None);
    }

    #[test]
    fn open_buckets_follow_the_libstdcxx_map_order() {
        // From PyTorch 2.13 (ddp/tests/data/buckets.json, "pair
        // first=torch.float16"): float16, float32, float64, float16, float32
        // on CPU, walked in that order with tensor indices and no limit. The
        // buckets left open come in the map's order, not in the order their
        // dtypes first appeared.
        let params = [
            cpu(10, 2, 5),
            cpu(10, 4, 6),
            cpu(10, 8, 7),
            cpu(10, 2, 5),
            cpu(10, 4, 6),
        ];
        let order = [0, 1, 2, 3, 4];
        let buckets =
            compute_bucket_assignment_by_size(&params, &[UNLIMITED_BUCKET_BYTES], Some(&order))
                .unwrap();
        let indices: Vec<Vec<usize>> = buckets.into_iter().map(|b| b.indices).collect();
        assert_eq!(indices, vec![vec![2], vec![1, 4], vec![0, 3]]);
    }

    #[test]
    fn sparse_parameters_get_a_bucket_each() {
        let mut sparse = cpu(4, 4, 6);
        sparse.sparse = true;
        let params = [cpu(4, 4, 6), sparse, cpu(4, 4, 6)];
        let buckets = compute_bucket_assignment_by_size(&params, &[1 << 20], None).unwrap();
        assert_eq!(
            buckets,
            vec![
                Bucket {
                    indices: vec![0, 2],
                    size_limit: 1 << 20
                },
                Bucket {
                    indices: vec![1],
                    size_limit: 0
                },
            ]
        );
    }
}
