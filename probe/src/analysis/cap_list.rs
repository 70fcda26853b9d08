//! Per-bucket caps (`bucket_cap_mb_list`, PyTorch 2.13) chosen from the gradient-ready times,
//! what PyTorch issue #22340 asks for.
//!
//! With the parameters in gradient-ready order, a layout is a set of cut points, and DDP's
//! schedule (a bucket starts at the later of its last gradient and the previous bucket's end;
//! one collective at a time) ends earliest for the cuts that [`best_cuts`] finds by dynamic
//! programming: `end[j] = min over i < j of max(end[i], ready[j − 1]) + cost(bytes[i..j])`.
//! A later bucket only depends on when the link is free, and an earlier free link is never
//! worse, so the minimum is exact for that schedule. (It leaves out the slowdown of compute
//! while collectives overlap; the caller simulates the result with it, like every candidate.)
//!
//! [`caps_for`] turns the cuts into the cap list that makes PyTorch's assignment cut there: a
//! bucket closes when its size reaches its cap, so each bucket's cap is its own size, written
//! with as few decimals of MiB as still cut at the same parameter.
//!
//! Cost: O(n²) cost evaluations for n parameters; parameters are grouped into at most
//! [`MAX_ATOMS`] runs of consecutive ones first (0.1 s at 1024 on this project's 2-core
//! machine would be the bound; lm's 78 parameters take microseconds).

/// At most this many units (runs of consecutive parameters in ready order) are cut between.
pub const MAX_ATOMS: usize = 1024;

/// Cut points (exclusive ends, the last one `ready.len()`) of the layout whose schedule ends
/// earliest. `bytes` and `ready` are per parameter in ready order (`ready` rising); ties go to
/// fewer buckets.
pub fn best_cuts(bytes: &[u64], ready: &[f64], cost: impl Fn(u64) -> f64) -> Vec<usize> {
    let n = bytes.len().min(ready.len());
    if n == 0 {
        return Vec::new();
    }
    // Atoms: at most MAX_ATOMS runs of consecutive parameters, as even in count as may be.
    let per = n.div_ceil(MAX_ATOMS);
    let bounds: Vec<usize> = (1..=n.div_ceil(per)).map(|k| (k * per).min(n)).collect();
    let mut prefix = vec![0u64; n + 1];
    for i in 0..n {
        prefix[i + 1] = prefix[i].saturating_add(bytes[i]);
    }
    let m = bounds.len();
    // end[k], buckets[k], from[k]: best schedule covering atoms 0..k.
    let mut end = vec![f64::INFINITY; m + 1];
    let mut count = vec![usize::MAX; m + 1];
    let mut from = vec![0usize; m + 1];
    end[0] = f64::NEG_INFINITY;
    count[0] = 0;
    let start_of = |k: usize| if k == 0 { 0 } else { bounds[k - 1] };
    for j in 1..=m {
        let last_ready = ready[bounds[j - 1] - 1];
        for i in 0..j {
            let size = prefix[bounds[j - 1]] - prefix[start_of(i)];
            let e = end[i].max(last_ready) + cost(size).max(0.0);
            let c = count[i] + 1;
            // A hair of tolerance so that equal ends prefer fewer buckets.
            let better = e < end[j] - 1e-6 * end[j].abs().max(1.0)
                || (e <= end[j] + 1e-6 * end[j].abs().max(1.0) && c < count[j]);
            if better {
                end[j] = e;
                count[j] = c;
                from[j] = i;
            }
        }
    }
    let mut cuts = Vec::new();
    let mut k = m;
    while k > 0 {
        cuts.push(bounds[k - 1]);
        k = from[k];
    }
    cuts.reverse();
    cuts
}

/// The caps (MiB) that make PyTorch's assignment give the layout `want`, and that layout;
/// `None` when no rounding reproduces it (mixed dtypes). `sizes` are the wanted buckets' bytes
/// in the order PyTorch reads a cap list, `layout_of` is the assignment for a list of limits
/// (bytes) in that order ([`super::assign::BucketReplay`] gives both).
pub fn caps_for(
    sizes: &[u64],
    want: &[Vec<u32>],
    layout_of: impl Fn(&[u64]) -> Vec<Vec<u32>>,
) -> Option<(Vec<f64>, Vec<Vec<u32>>)> {
    let mib = 1024.0 * 1024.0;
    for digits in 1..=9 {
        let scale = 10f64.powi(digits);
        let caps: Vec<f64> = sizes
            .iter()
            .map(|&s| ((s as f64 / mib) * scale).floor() / scale)
            .map(|c| c.max(1.0 / scale))
            .collect();
        let limits: Vec<u64> = caps.iter().map(|&c| (c * mib) as u64).collect();
        let layout = layout_of(&limits);
        if layout == want {
            return Some((caps, layout));
        }
    }
    None
}

/// The buckets that `cuts` (from [`best_cuts`]) make of `walk`.
pub fn segments(walk: &[u32], cuts: &[usize]) -> Vec<Vec<u32>> {
    let mut out = Vec::with_capacity(cuts.len());
    let mut start = 0;
    for &c in cuts {
        let c = c.min(walk.len());
        out.push(walk[start..c].to_vec());
        start = c;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::assign::{BucketReplay, ParamSpec, SteadyBuckets};
    use super::*;
    use bucket_assignment::DeviceKey;

    #[test]
    fn one_bucket_when_latency_dominates_and_many_when_bandwidth_does() {
        // Four 1 MB parameters ready at 1, 2, 3, 4 ms.
        let bytes = [1_000_000u64; 4];
        let ready = [1e6, 2e6, 3e6, 4e6];
        // A call costs 10 ms whatever its size: one bucket (ends at 14 ms).
        assert_eq!(best_cuts(&bytes, &ready, |_| 10e6), vec![4]);
        // 1 ns per byte, no latency: each parameter alone (ends at 5 ms, the last one's ready
        // time plus its own 1 ms), rather than one bucket (4 + 4 = 8 ms).
        assert_eq!(best_cuts(&bytes, &ready, |b| b as f64), vec![1, 2, 3, 4]);
        // 0.5 ms per call plus 1 ns per byte (1.5 ms for one parameter, 2.5 for two): one per
        // parameter ends at 2.5, 4, 5.5, 7 ms; two of two at 4.5, 7; but the first two alone
        // and the last two together end at 2.5, 4, then max(4, 4) + 2.5 = 6.5 ms, the best.
        assert_eq!(
            best_cuts(&bytes, &ready, |b| 0.5e6 + b as f64),
            vec![1, 2, 4]
        );
        // Equal ends prefer fewer buckets: 1 ms per call whatever the size, all ready at 0:
        // one bucket (1 ms) rather than anything longer.
        assert_eq!(best_cuts(&bytes, &[0.0; 4], |_| 1e6), vec![4]);
        assert!(best_cuts(&[], &[], |_| 1.0).is_empty());
    }

    #[test]
    fn caps_reproduce_the_cuts_under_pytorchs_rule() {
        let f = |bytes| ParamSpec {
            bytes,
            dtype: "float32",
        };
        let specs = [f(300_000), f(700_000), f(2_000_000), f(10_000)];
        let order = [3u32, 2, 1, 0];
        let replay = BucketReplay {
            params: &specs,
            ready_order: &order,
            registration: &[0, 1, 2, 3],
            device: DeviceKey::CPU,
            steady: SteadyBuckets::Rebuilt,
        };
        let (sizes, want) = replay.list_target(&segments(&order, &[1, 3, 4]));
        let (caps, layout) = caps_for(&sizes, &want, |l| replay.layout(l)).unwrap();
        assert_eq!(layout, vec![vec![3], vec![2, 1], vec![0]]);
        assert_eq!(caps.len(), 3);
        // Each cap at most its bucket's size, and more than the bucket less its last parameter.
        let mib = 1024.0 * 1024.0;
        assert!(
            caps[1] * mib <= 2_700_000.0 && caps[1] * mib > 2_000_000.0,
            "{caps:?}"
        );
    }

    #[test]
    fn caps_for_buckets_kept_as_built_read_in_registration_order() {
        // find_unused_parameters=True: DDP walks the parameters in registration order and
        // reduces the last bucket first. Cutting the launch walk (3, 2, 1, 0) into [3], [2, 1],
        // [0] needs the list [0's bucket, 1-2's bucket, 3's bucket], registration order.
        let f = |bytes| ParamSpec {
            bytes,
            dtype: "float32",
        };
        let specs = [f(300_000), f(700_000), f(2_000_000), f(10_000)];
        let replay = BucketReplay {
            params: &specs,
            ready_order: &[3, 2, 1, 0],
            registration: &[0, 1, 2, 3],
            device: DeviceKey::CPU,
            steady: SteadyBuckets::AsBuilt,
        };
        let walk = replay.launch_walk();
        assert_eq!(walk, vec![3, 2, 1, 0]);
        let (sizes, want) = replay.list_target(&segments(&walk, &[1, 3, 4]));
        assert_eq!(sizes, vec![300_000, 2_700_000, 10_000]);
        let (caps, layout) = caps_for(&sizes, &want, |l| replay.layout(l)).unwrap();
        assert_eq!(layout, vec![vec![3], vec![1, 2], vec![0]]);
        let mib = 1024.0 * 1024.0;
        // The first cap closes parameter 0's bucket, the second takes 1 and 2 together.
        assert!(caps[0] * mib <= 300_000.0, "{caps:?}");
        assert!(
            caps[1] * mib <= 2_700_000.0 && caps[1] * mib > 700_000.0,
            "{caps:?}"
        );
    }
}
