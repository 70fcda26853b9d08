//! PyTorch DDP's bucket rebuild, replayed on a trace's parameter table.
//!
//! [`assign_buckets`] runs [`bucket_assignment::compute_bucket_assignment_by_size`]
//! (`reducer.cpp`'s `compute_bucket_assignment_by_size`, the same code the
//! reference DDP of the `ddp` crate assigns its buckets with) as the bucket
//! rebuild after the first iteration calls it: on the parameters in
//! gradient-ready order, with `tensor_indices`, so the buckets are not
//! re-sorted. In short (the [`bucket_assignment`] crate documentation has the
//! details):
//!
//! 1. Parameters are visited in the given order. Each goes to the open
//!    bucket of its key, its (dtype, device) pair.
//! 2. The parameter's bytes are added to that bucket; a parameter is never
//!    split. If the bucket's size is now **at least** its key's current
//!    limit, the bucket closes (so a bucket can exceed its limit, and a
//!    parameter larger than the limit gets a bucket of its own or shares it
//!    with the parameters before it), and that key moves on to its next
//!    limit unless it is already at the last one: limits `[first, cap]` give
//!    every dtype one first bucket of `first` bytes, then `cap`-sized ones.
//! 3. After the last parameter, the still-open buckets are appended, one per
//!    key, in the iteration order of PyTorch's hash map (libstdc++'s, as the
//!    PyPI wheels are built).
//!
//! What a trace gives and what this module supplies:
//!
//! * the dtype comes as PyTorch's name (`"float32"`), turned into its
//!   `c10::ScalarType` with [`DtypeKey::from_name`]. Names torch does not
//!   have (`"other"`) get keys of their own, negative codes no scalar type
//!   has, in the order they first appear: such parameters still bucket apart
//!   from the others, but where their open buckets fall among the trailing
//!   ones is then not PyTorch's;
//! * a trace has one device per rank; the caller passes it;
//! * sparse gradients (a bucket each, without limit) do not occur in traces
//!   and are not modelled.

use bucket_assignment::{compute_bucket_assignment_by_size, BucketCapConfig, DeviceKey, DtypeKey};

/// How DDP's buckets are laid out in the steady steps (`should_rebuild_buckets` of
/// `reducer.cpp`: `static_graph || !find_unused_parameters`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SteadyBuckets {
    /// Rebuilt once after the first iteration, in gradient-ready order ([`assign_buckets`]).
    Rebuilt,
    /// Kept as DDP built them (`find_unused_parameters=True` without `static_graph`): the
    /// parameters walked in registration order with the construction's limits, the buckets
    /// sorted by their first parameter and reversed, so the last-registered parameters'
    /// bucket is reduced first ([`assign_as_built`]).
    AsBuilt,
}

impl SteadyBuckets {
    /// The layout a DDP built with these settings runs its steady steps on.
    pub fn of(static_graph: bool, find_unused_parameters: bool) -> Self {
        if bucket_assignment::should_rebuild_buckets(static_graph, find_unused_parameters) {
            Self::Rebuilt
        } else {
            Self::AsBuilt
        }
    }
}

/// PyTorch's bucket assignment of one run's parameters, as its DDP lays out the steady steps:
/// what `advise` replays the current setting and each candidate with.
pub struct BucketReplay<'p, 'a> {
    /// The parameters by index.
    pub params: &'p [ParamSpec<'a>],
    /// The parameters that got a gradient, in gradient-ready order.
    pub ready_order: &'p [u32],
    /// Every parameter of the table, in registration (index) order.
    pub registration: &'p [u32],
    /// The parameters' device.
    pub device: DeviceKey,
    /// Rebuilt from the ready order, or kept as built.
    pub steady: SteadyBuckets,
}

impl BucketReplay<'_, '_> {
    /// The limits that `bucket_cap_mb` (as `cap_bytes`) and a first bucket of `first_bytes`
    /// give the steady layout: `[first, cap]` at the rebuild; at construction with
    /// `find_unused_parameters`, the same when the first is smaller, else `[cap]`.
    pub fn cap_limits(&self, cap_bytes: u64, first_bytes: u64) -> Vec<u64> {
        match self.steady {
            SteadyBuckets::Rebuilt => rebuild_limits(cap_bytes, first_bytes),
            SteadyBuckets::AsBuilt => BucketCapConfig {
                bucket_bytes_cap: cap_bytes,
                per_bucket_bytes_caps: Vec::new(),
                first_bucket_bytes_cap: first_bytes,
            }
            .initial_limits(false, true),
        }
    }

    /// The buckets, in launch order, for `limits` in PyTorch's order (a cap list as
    /// `bucket_cap_mb_list` gives it; [`BucketReplay::cap_limits`] for one cap).
    pub fn layout(&self, limits: &[u64]) -> Vec<Vec<u32>> {
        match self.steady {
            SteadyBuckets::Rebuilt => {
                assign_buckets(self.params, self.ready_order, limits, self.device)
            }
            SteadyBuckets::AsBuilt => {
                assign_as_built(self.params, self.registration, limits, self.device)
            }
        }
    }

    /// The parameters in the order the buckets take them in launch order: the ready order
    /// when rebuilt, the registration order reversed when kept as built.
    pub fn launch_walk(&self) -> Vec<u32> {
        match self.steady {
            SteadyBuckets::Rebuilt => self.ready_order.to_vec(),
            SteadyBuckets::AsBuilt => self.registration.iter().rev().copied().collect(),
        }
    }

    /// For buckets cut from [`BucketReplay::launch_walk`] (`segments`, in launch order): the
    /// segments' bytes in the order PyTorch reads a cap list (the launch order when rebuilt;
    /// registration order, the reverse, when kept as built), and the layout
    /// [`BucketReplay::layout`] returns when the caps cut there.
    pub fn list_target(&self, segments: &[Vec<u32>]) -> (Vec<u64>, Vec<Vec<u32>>) {
        let bytes = |b: &Vec<u32>| {
            b.iter()
                .filter_map(|&i| self.params.get(i as usize))
                .map(|p| p.bytes)
                .fold(0u64, u64::saturating_add)
        };
        match self.steady {
            SteadyBuckets::Rebuilt => (segments.iter().map(bytes).collect(), segments.to_vec()),
            SteadyBuckets::AsBuilt => {
                let want = segments
                    .iter()
                    .map(|b| b.iter().rev().copied().collect())
                    .collect();
                (segments.iter().rev().map(bytes).collect(), want)
            }
        }
    }
}

/// The buckets DDP builds at construction and keeps when it never rebuilds them
/// (`find_unused_parameters=True` without `static_graph`): `compute_bucket_assignment_by_size`
/// over `registration` (parameter indices in registration order) without tensor indices, so
/// the buckets come sorted by their first parameter, each in registration order; DDP then hands
/// them to the reducer reversed (`_ddp_init_helper`), which is the launch order returned here.
/// `limits` as in [`assign_buckets`].
pub fn assign_as_built(
    params: &[ParamSpec<'_>],
    registration: &[u32],
    limits: &[u64],
    device: DeviceKey,
) -> Vec<Vec<u32>> {
    assign_walk(params, registration, limits, device, Walk::Construction)
}

/// One parameter as the assignment sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamSpec<'a> {
    /// Gradient size in bytes (`numel × element size`).
    pub bytes: u64,
    /// Element type, PyTorch's name (`"float32"`); parameters of different
    /// types never share a bucket.
    pub dtype: &'a str,
}

/// The bucket size limits PyTorch uses at the rebuild,
/// `[first_bucket_bytes, cap_bytes]` ([`BucketCapConfig::rebuild_limits`]).
pub fn rebuild_limits(cap_bytes: u64, first_bucket_bytes: u64) -> Vec<u64> {
    BucketCapConfig {
        bucket_bytes_cap: cap_bytes,
        per_bucket_bytes_caps: Vec::new(),
        first_bucket_bytes_cap: first_bucket_bytes,
    }
    .rebuild_limits()
}

/// Assigns the parameters listed in `order` (indices into `params`, in
/// gradient-ready order), all on `device`, to buckets with the size `limits`
/// (see the module documentation). Returns the buckets in launch order, each
/// a list of parameter indices in bucket order.
///
/// Indices beyond `params` and repeated indices are skipped; empty `limits`
/// mean no limit (one bucket per dtype). Sizes and limits above `sys.maxsize`
/// ([`bucket_assignment::UNLIMITED_BUCKET_BYTES`]) count as `sys.maxsize`, which PyTorch's
/// sizes cannot exceed either.
pub fn assign_buckets(
    params: &[ParamSpec<'_>],
    order: &[u32],
    limits: &[u64],
    device: DeviceKey,
) -> Vec<Vec<u32>> {
    assign_walk(params, order, limits, device, Walk::Rebuild)
}

/// How [`assign_walk`] hands the walk to the assignment.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Walk {
    /// As the rebuild does, with tensor indices: the buckets in the order they close.
    Rebuild,
    /// As construction does, without: the buckets sorted by their first parameter, then
    /// reversed as DDP hands them to its reducer.
    Construction,
}

/// `compute_bucket_assignment_by_size` over the parameters of `walk` (indices into `params`;
/// out-of-range and repeated ones skipped), returning parameter indices per bucket.
fn assign_walk(
    params: &[ParamSpec<'_>],
    walk: &[u32],
    limits: &[u64],
    device: DeviceKey,
    how: Walk,
) -> Vec<Vec<u32>> {
    let mut seen = vec![false; params.len()];
    let walk: Vec<usize> = walk
        .iter()
        .map(|&i| i as usize)
        .filter(|&i| i < params.len() && !std::mem::replace(&mut seen[i], true))
        .collect();
    if walk.is_empty() {
        return Vec::new();
    }
    let mut unknown: Vec<&str> = Vec::new();
    let walked: Vec<bucket_assignment::ParamSpec> = walk
        .iter()
        .map(|&i| {
            let p = &params[i];
            let bytes = p.bytes.min(bucket_assignment::UNLIMITED_BUCKET_BYTES);
            bucket_assignment::ParamSpec::dense(bytes, 1, dtype_key(p.dtype, &mut unknown), device)
        })
        .collect();
    let limits: Vec<u64> = if limits.is_empty() {
        vec![bucket_assignment::UNLIMITED_BUCKET_BYTES]
    } else {
        limits
            .iter()
            .map(|&l| l.min(bucket_assignment::UNLIMITED_BUCKET_BYTES))
            .collect()
    };
    // What the assignment refuses cannot occur here: there are parameters
    // and limits, one index per parameter, at most 46 + 128 keys (one
    // device), and with sizes and limits at most `i64::MAX` a bucket closes
    // before its size could pass `u64::MAX`.
    let indices = (how == Walk::Rebuild).then_some(&walk[..]);
    let mut layout = compute_bucket_assignment_by_size(&walked, &limits, indices)
        .expect("the assignment of a non-empty, clamped parameter list cannot fail");
    if how == Walk::Construction {
        layout.reverse();
    }
    // Without tensor indices a bucket's indices are positions in the walk.
    layout
        .into_iter()
        .map(|b| {
            b.indices
                .into_iter()
                .map(|i| match how {
                    Walk::Rebuild => i as u32,
                    Walk::Construction => walk[i] as u32,
                })
                .collect()
        })
        .collect()
}

/// The key of the dtype PyTorch calls `name`; names torch does not have get
/// negative codes in the order of `unknown` (-1, -2, ...; from the 128th
/// such name on they share `i8::MIN`).
fn dtype_key<'a>(name: &'a str, unknown: &mut Vec<&'a str>) -> DtypeKey {
    if let Some(key) = DtypeKey::from_name(name) {
        return key;
    }
    let pos = unknown.iter().position(|&u| u == name).unwrap_or_else(|| {
        unknown.push(name);
        unknown.len() - 1
    });
    DtypeKey(i8::try_from(-1 - pos as i64).unwrap_or(i8::MIN))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn f32s(sizes: &[u64]) -> Vec<ParamSpec<'static>> {
        sizes
            .iter()
            .map(|&bytes| ParamSpec {
                bytes,
                dtype: "float32",
            })
            .collect()
    }

    fn assign(params: &[ParamSpec<'_>], order: &[u32], limits: &[u64]) -> Vec<Vec<u32>> {
        assign_buckets(params, order, limits, DeviceKey::CPU)
    }

    #[test]
    fn closes_when_the_limit_is_reached_and_keeps_the_crossing_param() {
        // 3 × 1 MiB then 4 MiB, cap 2 MiB, first 1 MiB.
        let p = f32s(&[MIB, MIB, MIB, 4 * MIB, MIB]);
        let order = [0, 1, 2, 3, 4];
        let b = assign(&p, &order, &rebuild_limits(2 * MIB, MIB));
        // [0] reaches 1 MiB (first limit); [1,2] reach 2 MiB; [3] alone is
        // 4 MiB ≥ 2 MiB; [4] is left open.
        assert_eq!(b, vec![vec![0], vec![1, 2], vec![3], vec![4]]);
    }

    #[test]
    fn a_param_larger_than_the_cap_shares_with_the_ones_before() {
        let p = f32s(&[MIB / 2, 10 * MIB, MIB / 2]);
        let b = assign(&p, &[0, 1, 2], &[4 * MIB]);
        assert_eq!(b, vec![vec![0, 1], vec![2]]);
    }

    #[test]
    fn buckets_as_built_walk_registration_order_and_launch_reversed() {
        // find_unused_parameters=True: limits [1 MiB, 2 MiB] over parameters 0..3 build [0],
        // [1, 2], [3]; DDP launches them reversed, each bucket in registration order.
        let p = f32s(&[MIB, MIB, MIB, MIB]);
        let b = assign_as_built(
            &p,
            &[0, 1, 2, 3],
            &rebuild_limits(2 * MIB, MIB),
            DeviceKey::CPU,
        );
        assert_eq!(b, vec![vec![3], vec![1, 2], vec![0]]);
        // A registration walk with a hole (a parameter the table lacks) keeps the indices.
        let b = assign_as_built(&p, &[0, 2, 3], &[2 * MIB], DeviceKey::CPU);
        assert_eq!(b, vec![vec![3], vec![0, 2]]);
    }

    #[test]
    fn follows_the_given_order() {
        let p = f32s(&[MIB, MIB, MIB, MIB]);
        let b = assign(&p, &[3, 2, 1, 0], &rebuild_limits(2 * MIB, MIB));
        assert_eq!(b, vec![vec![3], vec![2, 1], vec![0]]);
    }

    #[test]
    fn first_bucket_limit_per_dtype() {
        let p = vec![
            ParamSpec {
                bytes: MIB,
                dtype: "float32",
            },
            ParamSpec {
                bytes: MIB / 2,
                dtype: "bfloat16",
            },
            ParamSpec {
                bytes: MIB,
                dtype: "float32",
            },
            ParamSpec {
                bytes: MIB / 2,
                dtype: "bfloat16",
            },
            ParamSpec {
                bytes: MIB,
                dtype: "float32",
            },
        ];
        let b = assign(&p, &[0, 1, 2, 3, 4], &rebuild_limits(2 * MIB, MIB));
        // float32: [0] (first limit 1 MiB), then [2, 4] (2 MiB).
        // bfloat16: [1, 3] reaches its own first limit of 1 MiB.
        assert_eq!(b, vec![vec![0], vec![1, 3], vec![2, 4]]);
    }

    #[test]
    fn open_buckets_come_in_pytorchs_map_order() {
        // PyTorch 2.13 on CPU (ddp/tests/data/buckets.json, "pair
        // first=torch.float16"): the open buckets are float64, float32,
        // float16, not the order the dtypes first appeared in.
        let p: Vec<ParamSpec<'static>> = [
            (20, "float16"),
            (40, "float32"),
            (80, "float64"),
            (20, "float16"),
            (40, "float32"),
        ]
        .into_iter()
        .map(|(bytes, dtype)| ParamSpec { bytes, dtype })
        .collect();
        assert_eq!(
            assign(&p, &[0, 1, 2, 3, 4], &[]),
            vec![vec![2], vec![1, 4], vec![0, 3]]
        );
        // The device enters the key's hash: float32, float16, bfloat16 (the
        // order they appear in) come out differently on CPU and on cuda:2.
        let amp: Vec<ParamSpec<'static>> = ["float32", "float16", "bfloat16"]
            .into_iter()
            .map(|dtype| ParamSpec { bytes: 4, dtype })
            .collect();
        assert_eq!(
            assign(&amp, &[0, 1, 2], &[]),
            vec![vec![2], vec![1], vec![0]]
        );
        assert_eq!(
            assign_buckets(&amp, &[0, 1, 2], &[], DeviceKey::cuda(2)),
            vec![vec![1], vec![2], vec![0]]
        );
    }

    #[test]
    fn unknown_dtypes_bucket_apart() {
        let p = [
            ParamSpec {
                bytes: 8,
                dtype: "other",
            },
            ParamSpec {
                bytes: 8,
                dtype: "float32",
            },
            ParamSpec {
                bytes: 8,
                dtype: "other",
            },
        ];
        let mut b = assign(&p, &[0, 1, 2], &[MIB]);
        b.sort();
        assert_eq!(b, vec![vec![0, 2], vec![1]]);
    }

    #[test]
    fn rebuild_limits_are_first_then_cap() {
        assert_eq!(rebuild_limits(25 * MIB, MIB), vec![MIB, 25 * MIB]);
        assert_eq!(rebuild_limits(2 * MIB, 2 * MIB), vec![2 * MIB, 2 * MIB]);
    }

    #[test]
    fn no_limits_one_bucket_and_bad_indices_skipped() {
        let p = f32s(&[MIB, MIB]);
        assert_eq!(assign(&p, &[1, 7, 0, 1], &[]), vec![vec![1, 0]]);
        assert!(assign(&p, &[], &[MIB]).is_empty());
        // Sizes past sys.maxsize are clamped rather than overflowing.
        let huge = f32s(&[u64::MAX, u64::MAX, u64::MAX]);
        assert_eq!(
            assign(&huge, &[0, 1, 2], &[u64::MAX]),
            vec![vec![0], vec![1], vec![2]]
        );
    }
}
