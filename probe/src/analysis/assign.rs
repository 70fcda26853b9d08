//! PyTorch DDP's bucket assignment, as a small pure function.
//!
//! [`assign_buckets`] mirrors `compute_bucket_assignment_by_size` in
//! PyTorch's `torch/csrc/distributed/c10d/reducer.cpp` as it runs at the
//! bucket rebuild after the first iteration (called with the parameters in
//! gradient-ready order and a non-empty `tensor_indices`, so the buckets are
//! not re-sorted):
//!
//! 1. Parameters are visited in the given order. Each goes to the open
//!    bucket of its key: its element type (PyTorch keys on type *and*
//!    device; a trace has one device per rank).
//! 2. The parameter's bytes are added to that bucket; a parameter is never
//!    split. If the bucket's size is now **at least** its key's current
//!    limit, the bucket closes (so a bucket can exceed its limit, and a
//!    parameter larger than the limit gets a bucket of its own or shares it
//!    with the parameters before it), and that key moves on to its next
//!    limit unless it is already at the last one: limits `[first, cap]` give
//!    every dtype one first bucket of `first` bytes, then `cap`-sized ones.
//! 3. After the last parameter, the still-open buckets are appended, one per
//!    key. PyTorch appends them in hash-map order; here they come in the
//!    order their keys first appeared, so the result is deterministic.
//!
//! Sparse gradients (a bucket each, without limit) do not occur in traces
//! and are not modelled.

/// One parameter as the assignment sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamSpec<'a> {
    /// Gradient size in bytes (`numel × element size`).
    pub bytes: u64,
    /// Element type; parameters of different types never share a bucket.
    pub dtype: &'a str,
}

/// The bucket size limits PyTorch uses at the rebuild:
/// `[first_bucket_bytes, cap_bytes]`.
pub fn rebuild_limits(cap_bytes: u64, first_bucket_bytes: u64) -> [u64; 2] {
    [first_bucket_bytes, cap_bytes]
}

/// Assigns the parameters listed in `order` (indices into `params`, in
/// gradient-ready order) to buckets with the size `limits` (see the module
/// documentation). Returns the buckets in launch order, each a list of
/// parameter indices in bucket order.
///
/// Indices beyond `params` and repeated indices are skipped; empty `limits`
/// mean no limit (one bucket per dtype).
pub fn assign_buckets(params: &[ParamSpec<'_>], order: &[u32], limits: &[u64]) -> Vec<Vec<u32>> {
    struct Open<'a> {
        dtype: &'a str,
        indices: Vec<u32>,
        size: u64,
        limit: usize,
    }
    let mut open: Vec<Open<'_>> = Vec::new();
    let mut out = Vec::new();
    let mut seen = vec![false; params.len()];
    for &i in order {
        let Some(p) = params.get(i as usize) else {
            continue;
        };
        if std::mem::replace(&mut seen[i as usize], true) {
            continue;
        }
        let k = match open.iter().position(|o| o.dtype == p.dtype) {
            Some(k) => k,
            None => {
                open.push(Open {
                    dtype: p.dtype,
                    indices: Vec::new(),
                    size: 0,
                    limit: 0,
                });
                open.len() - 1
            }
        };
        let o = &mut open[k];
        o.indices.push(i);
        o.size = o.size.saturating_add(p.bytes);
        let limit = limits.get(o.limit).copied().unwrap_or(u64::MAX);
        if o.size >= limit {
            out.push(std::mem::take(&mut o.indices));
            o.size = 0;
            if o.limit + 1 < limits.len() {
                o.limit += 1;
            }
        }
    }
    for o in open {
        if !o.indices.is_empty() {
            out.push(o.indices);
        }
    }
    out
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

    #[test]
    fn closes_when_the_limit_is_reached_and_keeps_the_crossing_param() {
        // 3 × 1 MiB then 4 MiB, cap 2 MiB, first 1 MiB.
        let p = f32s(&[MIB, MIB, MIB, 4 * MIB, MIB]);
        let order = [0, 1, 2, 3, 4];
        let b = assign_buckets(&p, &order, &rebuild_limits(2 * MIB, MIB));
        // [0] reaches 1 MiB (first limit); [1,2] reach 2 MiB; [3] alone is
        // 4 MiB ≥ 2 MiB; [4] is left open.
        assert_eq!(b, vec![vec![0], vec![1, 2], vec![3], vec![4]]);
    }

    #[test]
    fn a_param_larger_than_the_cap_shares_with_the_ones_before() {
        let p = f32s(&[MIB / 2, 10 * MIB, MIB / 2]);
        let b = assign_buckets(&p, &[0, 1, 2], &[4 * MIB]);
        assert_eq!(b, vec![vec![0, 1], vec![2]]);
    }

    #[test]
    fn follows_the_given_order() {
        let p = f32s(&[MIB, MIB, MIB, MIB]);
        let b = assign_buckets(&p, &[3, 2, 1, 0], &rebuild_limits(2 * MIB, MIB));
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
        let b = assign_buckets(&p, &[0, 1, 2, 3, 4], &rebuild_limits(2 * MIB, MIB));
        // float32: [0] (first limit 1 MiB), then [2, 4] (2 MiB).
        // bfloat16: [1, 3] reaches its own first limit of 1 MiB.
        assert_eq!(b, vec![vec![0], vec![1, 3], vec![2, 4]]);
    }

    #[test]
    fn no_limits_one_bucket_and_bad_indices_skipped() {
        let p = f32s(&[MIB, MIB]);
        assert_eq!(assign_buckets(&p, &[1, 7, 0, 1], &[]), vec![vec![1, 0]]);
        assert!(assign_buckets(&p, &[], &[MIB]).is_empty());
    }
}
