//! The reference DDP's checkpoint file, read without libtorch: a safetensors file whose entries
//! follow the layout documented in `ddp::checkpoint` (`meta/*`, `model/*`, `optim/*`,
//! `sampler/*`, `rng/*`, `scaler/*`), each checked against its xxh3 checksum.
//!
//! Reading lives here, apart from the tensors, so that the code that meets a file which may be
//! damaged or hostile is plain Rust with a fuzz target (`fuzz/fuzz_targets/checkpoint_file.rs`),
//! and libtorch only ever receives entries that passed: [`decode`] checks the container (the
//! safetensors crate: header length, offsets, sizes), every entry's checksum, the layout
//! (known entries, complete groups, scalars of the right type, dimensions libtorch can hold)
//! and returns borrowed [`Entry`] views that `ddp::checkpoint` turns into tensors.
//! [`entry_checksum`] is the one definition of the checksum, for the writer and the reader.

use std::collections::BTreeMap;
use std::io::Read;

use safetensors::tensor::{Dtype, SafeTensors};

/// The format version written (1, without checksums, is still read).
pub const FORMAT_VERSION: i64 = 2;

/// The largest safetensors header accepted (the safetensors crate's own limit).
pub const MAX_HEADER_BYTES: u64 = 100_000_000;

/// The entry names of the layout.
pub mod entry {
    /// I64 scalar: the format version.
    pub const VERSION: &str = "meta/format_version";
    /// I64 scalar: the epoch (u64 bits).
    pub const EPOCH: &str = "meta/epoch";
    /// I64 scalar: the step (u64 bits).
    pub const STEP: &str = "meta/step";
    /// U8 vector: user metadata, UTF-8.
    pub const USER: &str = "meta/user_json";
    /// U8 vector: `<name>\t<xxh3-64 hex>` per other entry.
    pub const CHECKSUMS: &str = "meta/checksums";
    /// Prefix of the model's parameters and buffers.
    pub const MODEL_PREFIX: &str = "model/";
    /// Prefix of the optimizer's state.
    pub const OPTIM_PREFIX: &str = "optim/";
    /// I64 scalar: the sampler's epoch.
    pub const SAMPLER_EPOCH: &str = "sampler/epoch";
    /// I64 scalar: the sampler's seed.
    pub const SAMPLER_SEED: &str = "sampler/seed";
    /// U8 vector: the default CPU generator's state.
    pub const RNG_CPU: &str = "rng/cpu";
    /// Prefix of CUDA device `i`'s generator state (`rng/cuda/<i>`).
    pub const RNG_CUDA_PREFIX: &str = "rng/cuda/";
    /// F32 scalar: the loss scale.
    pub const SCALER_SCALE: &str = "scaler/scale";
    /// F64 scalar.
    pub const SCALER_GROWTH_FACTOR: &str = "scaler/growth_factor";
    /// F64 scalar.
    pub const SCALER_BACKOFF_FACTOR: &str = "scaler/backoff_factor";
    /// I64 scalar in `0..=u32::MAX`.
    pub const SCALER_GROWTH_INTERVAL: &str = "scaler/growth_interval";
    /// I64 scalar in `0..=u32::MAX`.
    pub const SCALER_GROWTH_TRACKER: &str = "scaler/growth_tracker";
}

/// Why a file is not a readable checkpoint, in words that name the entry (the caller adds the
/// file's name).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FormatError(String);

fn err<T>(what: impl Into<String>) -> Result<T, FormatError> {
    Err(FormatError(what.into()))
}

/// The element types the format stores: the ones both safetensors and libtorch have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElementType {
    Bool,
    U8,
    I8,
    I16,
    I32,
    I64,
    BF16,
    F16,
    F32,
    F64,
}

impl ElementType {
    /// Bytes per element.
    pub fn size_bytes(self) -> usize {
        match self {
            Self::Bool | Self::U8 | Self::I8 => 1,
            Self::I16 | Self::BF16 | Self::F16 => 2,
            Self::I32 | Self::F32 => 4,
            Self::I64 | Self::F64 => 8,
        }
    }

    /// libtorch's name of the type (tch's `Kind`), which the checksum hashes.
    pub fn torch_name(self) -> &'static str {
        match self {
            Self::Bool => "Bool",
            Self::U8 => "Uint8",
            Self::I8 => "Int8",
            Self::I16 => "Int16",
            Self::I32 => "Int",
            Self::I64 => "Int64",
            Self::BF16 => "BFloat16",
            Self::F16 => "Half",
            Self::F32 => "Float",
            Self::F64 => "Double",
        }
    }

    fn from_dtype(d: Dtype) -> Option<Self> {
        Some(match d {
            Dtype::BOOL => Self::Bool,
            Dtype::U8 => Self::U8,
            Dtype::I8 => Self::I8,
            Dtype::I16 => Self::I16,
            Dtype::I32 => Self::I32,
            Dtype::I64 => Self::I64,
            Dtype::BF16 => Self::BF16,
            Dtype::F16 => Self::F16,
            Dtype::F32 => Self::F32,
            Dtype::F64 => Self::F64,
            _ => return None,
        })
    }
}

/// One entry of a file: element type, shape (every dimension fits an i64) and its bytes,
/// little-endian, exactly `shape`'s product × the element size.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry<'a> {
    pub element: ElementType,
    pub shape: Vec<i64>,
    pub data: &'a [u8],
}

/// xxh3-64 of an entry: its name, type, shape and bytes, so a flipped bit in the data and a
/// changed type or shape in the header both show.
pub fn entry_checksum(name: &str, element: ElementType, shape: &[i64], data: &[u8]) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(name.as_bytes());
    h.update(&[0]);
    h.update(element.torch_name().as_bytes());
    h.update(&[0]);
    for d in shape {
        h.update(&d.to_le_bytes());
    }
    h.update(data);
    h.digest()
}

/// The text of the `meta/checksums` entry for `(name, checksum)` pairs.
pub fn checksum_list<'n>(sums: impl IntoIterator<Item = (&'n str, u64)>) -> String {
    sums.into_iter()
        .map(|(name, sum)| format!("{name}\t{sum:016x}\n"))
        .collect()
}

/// Where a `DistributedSampler` stands: its epoch and seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SamplerState {
    /// The epoch last set with `set_epoch`.
    pub epoch: u64,
    /// The sampler's seed.
    pub seed: u64,
}

/// What `GradScaler.state_dict()` holds: the scale, the hyper-parameters and the number of clean
/// steps since the scale last changed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GradScalerState {
    /// The current scale.
    pub scale: f32,
    /// The factor the scale grows by after `growth_interval` clean steps.
    pub growth_factor: f64,
    /// The factor the scale shrinks by after a step with inf or NaN gradients.
    pub backoff_factor: f64,
    /// Clean steps between growths.
    pub growth_interval: u32,
    /// Consecutive clean steps since the scale last changed (`_growth_tracker`).
    pub growth_tracker: u32,
}

/// A checkpoint file, checked and taken apart; the tensors are views into the file's bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded<'a> {
    /// The format version of the file (1 or 2).
    pub version: i64,
    pub epoch: u64,
    pub step: u64,
    /// Parameters and buffers, by name without the `model/` prefix, sorted by name.
    pub model: Vec<(String, Entry<'a>)>,
    /// Optimizer state, by name without the `optim/` prefix, sorted by name.
    pub optimizer: Vec<(String, Entry<'a>)>,
    pub sampler: Option<SamplerState>,
    /// The CPU generator's state and every CUDA device's, by device index.
    pub rng: Option<(Entry<'a>, Vec<Entry<'a>>)>,
    pub scaler: Option<GradScalerState>,
    pub user_metadata: Option<String>,
}

/// Reads a whole checkpoint file: the container, every checksum (version 2), then the layout.
pub fn decode(bytes: &[u8]) -> Result<Decoded<'_>, FormatError> {
    let (header_len, metadata) = SafeTensors::read_metadata(bytes)
        .or_else(|e| err(format!("it is not a readable safetensors file ({e:?})")))?;
    // read_metadata checked that the offsets tile the data exactly, to the end of the file.
    let data = &bytes[8 + header_len..];
    let mut by_name: BTreeMap<String, Entry<'_>> = BTreeMap::new();
    for (name, info) in metadata.tensors() {
        let element = ElementType::from_dtype(info.dtype).ok_or_else(|| {
            FormatError(format!(
                "entry '{name}' has element type {:?}, which checkpoints do not hold",
                info.dtype
            ))
        })?;
        let shape = info
            .shape
            .iter()
            .map(|&d| i64::try_from(d))
            .collect::<Result<Vec<i64>, _>>()
            .or_else(|_| {
                err(format!(
                    "entry '{name}' has a dimension larger than libtorch can hold: {:?}",
                    info.shape
                ))
            })?;
        let (begin, end) = info.data_offsets;
        by_name.insert(
            name,
            Entry {
                element,
                shape,
                data: &data[begin..end],
            },
        );
    }
    let version_entry = by_name.remove(entry::VERSION).ok_or_else(|| {
        FormatError(format!(
            "it is not a checkpoint of ddp-probe's reference DDP: it has no '{}' entry",
            entry::VERSION
        ))
    })?;
    let version = scalar_i64(entry::VERSION, &version_entry)?;
    if !(1..=FORMAT_VERSION).contains(&version) {
        return err(format!(
            "it has checkpoint format version {version}; this build reads versions 1 to \
             {FORMAT_VERSION}"
        ));
    }
    if version >= 2 {
        let sums = by_name.remove(entry::CHECKSUMS).ok_or_else(|| {
            FormatError(format!(
                "the checkpoint has no '{}' entry, so its integrity cannot be checked",
                entry::CHECKSUMS
            ))
        })?;
        verify_checksums(&sums, &version_entry, &by_name)?;
    }
    layout(version, by_name)
}

/// Checks every entry (`version` and the rest in `entries`) against the list in `sums`: the
/// same names, and each checksum equal.
fn verify_checksums(
    sums: &Entry<'_>,
    version: &Entry<'_>,
    entries: &BTreeMap<String, Entry<'_>>,
) -> Result<(), FormatError> {
    let damaged =
        |what: String| FormatError(format!("{what}; the file was damaged after it was written"));
    let text = std::str::from_utf8(sums.data)
        .ok()
        .filter(|_| sums.element == ElementType::U8 && sums.shape.len() == 1)
        .ok_or_else(|| damaged(format!("'{}' is not readable text", entry::CHECKSUMS)))?;
    let mut listed: BTreeMap<&str, u64> = BTreeMap::new();
    for line in text.lines() {
        let parsed = line
            .split_once('\t')
            .and_then(|(name, hex)| Some((name, u64::from_str_radix(hex, 16).ok()?)));
        let Some((name, sum)) = parsed else {
            return Err(damaged(format!(
                "'{}' holds a line that is not <name> TAB <checksum>",
                entry::CHECKSUMS
            )));
        };
        listed.insert(name, sum);
    }
    let present =
        std::iter::once((entry::VERSION, version)).chain(entries.iter().map(|(n, e)| (&n[..], e)));
    let mut seen = 0;
    for (name, e) in present {
        let Some(&want) = listed.get(name) else {
            return Err(damaged(format!(
                "entry '{name}' is not in its checksum list"
            )));
        };
        if entry_checksum(name, e.element, &e.shape, e.data) != want {
            return Err(damaged(format!(
                "entry '{name}' does not match its checksum (its data, dtype or shape changed)"
            )));
        }
        seen += 1;
    }
    if seen != listed.len() {
        let missing: Vec<&str> = listed
            .keys()
            .copied()
            .filter(|n| *n != entry::VERSION && !entries.contains_key(*n))
            .collect();
        return Err(damaged(format!(
            "entries listed in its checksums are missing: {}",
            missing.join(", ")
        )));
    }
    Ok(())
}

/// Takes the entries apart by the layout of the module doc.
fn layout<'a>(
    version: i64,
    mut by_name: BTreeMap<String, Entry<'a>>,
) -> Result<Decoded<'a>, FormatError> {
    let mut take = |name: &str| {
        by_name
            .remove(name)
            .ok_or_else(|| FormatError(format!("the checkpoint has no '{name}' entry")))
    };
    let epoch = scalar_i64(entry::EPOCH, &take(entry::EPOCH)?)? as u64;
    let step = scalar_i64(entry::STEP, &take(entry::STEP)?)? as u64;
    let sampler = match group(&mut by_name, &[entry::SAMPLER_EPOCH, entry::SAMPLER_SEED])? {
        Some(t) => Some(SamplerState {
            epoch: scalar_i64(entry::SAMPLER_EPOCH, &t[0])? as u64,
            seed: scalar_i64(entry::SAMPLER_SEED, &t[1])? as u64,
        }),
        None => None,
    };
    let scaler_names = [
        entry::SCALER_SCALE,
        entry::SCALER_GROWTH_FACTOR,
        entry::SCALER_BACKOFF_FACTOR,
        entry::SCALER_GROWTH_INTERVAL,
        entry::SCALER_GROWTH_TRACKER,
    ];
    let scaler = match group(&mut by_name, &scaler_names)? {
        Some(t) => Some(GradScalerState {
            scale: {
                let b = scalar(entry::SCALER_SCALE, &t[0], ElementType::F32)?;
                f32::from_le_bytes([b[0], b[1], b[2], b[3]])
            },
            growth_factor: f64::from_le_bytes(scalar(
                entry::SCALER_GROWTH_FACTOR,
                &t[1],
                ElementType::F64,
            )?),
            backoff_factor: f64::from_le_bytes(scalar(
                entry::SCALER_BACKOFF_FACTOR,
                &t[2],
                ElementType::F64,
            )?),
            growth_interval: u32_field(entry::SCALER_GROWTH_INTERVAL, &t[3])?,
            growth_tracker: u32_field(entry::SCALER_GROWTH_TRACKER, &t[4])?,
        }),
        None => None,
    };
    let user_metadata = match by_name.remove(entry::USER) {
        Some(user) => {
            if user.element != ElementType::U8 || user.shape.len() != 1 {
                return err(format!(
                    "entry '{}' should be a 1-d uint8 tensor, but is {} of shape {:?}",
                    entry::USER,
                    user.element.torch_name(),
                    user.shape
                ));
            }
            Some(
                String::from_utf8(user.data.to_vec())
                    .or_else(|_| err(format!("entry '{}' is not UTF-8 text", entry::USER)))?,
            )
        }
        None => None,
    };
    let rng_cpu = by_name.remove(entry::RNG_CPU);
    let (mut model, mut optimizer) = (Vec::new(), Vec::new());
    let mut cuda: BTreeMap<usize, Entry<'a>> = BTreeMap::new();
    for (name, e) in by_name {
        if let Some(m) = name.strip_prefix(entry::MODEL_PREFIX) {
            model.push((m.to_owned(), e));
        } else if let Some(o) = name.strip_prefix(entry::OPTIM_PREFIX) {
            optimizer.push((o.to_owned(), e));
        } else if let Some(index) = name.strip_prefix(entry::RNG_CUDA_PREFIX) {
            let Ok(index) = index.parse::<usize>() else {
                return err(format!("entry '{name}' has no CUDA device index"));
            };
            cuda.insert(index, e);
        } else {
            return err(format!("unknown entry '{name}'"));
        }
    }
    let rng = match rng_cpu {
        Some(cpu) => {
            if let Some((&last, _)) = cuda.last_key_value() {
                if last + 1 != cuda.len() {
                    return err(format!(
                        "the CUDA generator states are not numbered 0..{}",
                        cuda.len()
                    ));
                }
            }
            Some((cpu, cuda.into_values().collect()))
        }
        None if !cuda.is_empty() => {
            return err(format!(
                "CUDA generator states without '{}'",
                entry::RNG_CPU
            ))
        }
        None => None,
    };
    Ok(Decoded {
        version,
        epoch,
        step,
        model,
        optimizer,
        sampler,
        rng,
        scaler,
        user_metadata,
    })
}

/// All of `names` (taken out of `by_name`), none, or an error naming the missing ones.
fn group<'a>(
    by_name: &mut BTreeMap<String, Entry<'a>>,
    names: &[&str],
) -> Result<Option<Vec<Entry<'a>>>, FormatError> {
    let (present, absent): (Vec<&str>, Vec<&str>) =
        names.iter().partition(|n| by_name.contains_key(**n));
    if present.is_empty() {
        return Ok(None);
    }
    if !absent.is_empty() {
        return err(format!(
            "entries {} are present but {} are missing",
            present.join(", "),
            absent.join(", ")
        ));
    }
    Ok(Some(
        names.iter().filter_map(|n| by_name.remove(*n)).collect(),
    ))
}

/// The 8 bytes of a scalar entry of type `element`.
fn scalar(name: &str, e: &Entry<'_>, element: ElementType) -> Result<[u8; 8], FormatError> {
    if e.element != element || !e.shape.is_empty() {
        return err(format!(
            "entry '{name}' should be a {} scalar, but is {} of shape {:?}",
            element.torch_name(),
            e.element.torch_name(),
            e.shape
        ));
    }
    let mut out = [0u8; 8];
    out[..e.data.len()].copy_from_slice(e.data);
    Ok(out)
}

fn scalar_i64(name: &str, e: &Entry<'_>) -> Result<i64, FormatError> {
    Ok(i64::from_le_bytes(scalar(name, e, ElementType::I64)?))
}

fn u32_field(name: &str, e: &Entry<'_>) -> Result<u32, FormatError> {
    let v = scalar_i64(name, e)?;
    u32::try_from(v).or_else(|_| err(format!("entry '{name}' holds {v}, outside 0..=u32::MAX")))
}

/// Whether a file of `len` bytes, read from its start by `file`, is structurally a whole
/// checkpoint: a readable header that names the version entry, and exactly as many bytes as
/// the header's offsets say (a cut or extended file is not). Reads only the header.
pub fn is_complete(file: &mut impl Read, len: u64) -> bool {
    let mut n = [0u8; 8];
    if len < 8 || file.read_exact(&mut n).is_err() {
        return false;
    }
    let n = u64::from_le_bytes(n);
    if n > MAX_HEADER_BYTES || n > len - 8 {
        return false;
    }
    let mut header = vec![0u8; n as usize];
    if file.read_exact(&mut header).is_err() {
        return false;
    }
    let Ok(header) = std::str::from_utf8(&header) else {
        return false;
    };
    if !header.starts_with('{') || !header.contains(&format!("\"{}\"", entry::VERSION)) {
        return false;
    }
    // An offset near u64::MAX is a damaged header, not an overflow (found by the fuzzer).
    data_end(header).is_some_and(|data| (8 + n).checked_add(data) == Some(len))
}

/// The largest end offset of the `"data_offsets":[begin,end]` fields of a safetensors header.
fn data_end(header: &str) -> Option<u64> {
    const KEY: &str = "\"data_offsets\":[";
    let mut end = 0u64;
    let mut found = false;
    let mut rest = header;
    while let Some(at) = rest.find(KEY) {
        rest = &rest[at + KEY.len()..];
        let close = rest.find(']')?;
        let (begin, stop) = rest[..close].split_once(',')?;
        let begin: u64 = begin.trim().parse().ok()?;
        let stop: u64 = stop.trim().parse().ok()?;
        if stop < begin {
            return None;
        }
        end = end.max(stop);
        found = true;
        rest = &rest[close..];
    }
    found.then_some(end)
}

/// The fuzz target `checkpoint_file` (and its corpus replay): any bytes through [`decode`] and
/// [`is_complete`], never a panic; what [`decode`] accepts is safe to hand to libtorch (every
/// entry exactly as many bytes as its shape and type say).
#[doc(hidden)]
pub fn fuzz_one(data: &[u8]) {
    let _ = is_complete(&mut std::io::Cursor::new(data), data.len() as u64);
    let Ok(d) = decode(data) else { return };
    let rng = d
        .rng
        .iter()
        .flat_map(|(cpu, cuda)| std::iter::once(cpu).chain(cuda));
    let entries = d
        .model
        .iter()
        .chain(&d.optimizer)
        .map(|(_, e)| e)
        .chain(rng);
    for e in entries {
        let numel = e.shape.iter().try_fold(1u64, |n, &d| {
            assert!(d >= 0, "negative dimension in {:?}", e.shape);
            n.checked_mul(d as u64)
        });
        assert_eq!(
            numel.and_then(|n| n.checked_mul(e.element.size_bytes() as u64)),
            Some(e.data.len() as u64),
            "{:?} of shape {:?}",
            e.element,
            e.shape
        );
    }
}
