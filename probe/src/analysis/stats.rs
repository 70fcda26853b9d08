//! Small statistics: distributions (median, p95, mean), robust spread and a
//! binomial tail.
//!
//! Percentiles interpolate linearly between the closest ranks (the default
//! of NumPy and of R's type 7): for sorted values `x[0..n]`, percentile `q`
//! is `x[h]` interpolated at `h = q·(n−1)`. The median of `[1, 2, 3, 4]` is
//! therefore 2.5 and its p95 is 3.85.
//!
//! Integer samples (durations, byte counts: one per collective call) are
//! kept compactly by `Samples` and their percentiles found without
//! sorting (see `order_stats`).

use serde::{Deserialize, Serialize};

/// A distribution of values: how many, mean, median, 95th percentile and
/// range. Units are those of the values (nanoseconds unless a field says
/// otherwise).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Dist {
    /// Number of values.
    pub n: u64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median (50th percentile).
    pub median: f64,
    /// 95th percentile.
    pub p95: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

impl Dist {
    /// The distribution of `values`, which it reorders in place (NaNs are
    /// dropped first). An empty slice gives `n == 0` and zeros. `O(n)`:
    /// the percentiles come from selection, not sorting.
    pub fn of(values: &mut Vec<f64>) -> Dist {
        values.retain(|v| !v.is_nan());
        if values.is_empty() {
            return Dist::default();
        }
        let n = values.len();
        let mut sum = 0.0;
        let (mut min, mut max) = (f64::INFINITY, f64::NEG_INFINITY);
        for &v in values.iter() {
            sum += v;
            min = min.min(v);
            max = max.max(v);
        }
        let (median, p95) = two_percentiles(values, 0.5, 0.95, f64::total_cmp, |v| v);
        Dist {
            n: n as u64,
            mean: sum / n as f64,
            median,
            p95,
            min,
            max,
        }
    }

    /// The distribution of integer values (copied into `scratch`).
    pub fn of_ints(values: impl IntoIterator<Item = i64>, scratch: &mut Vec<i64>) -> Dist {
        scratch.clear();
        scratch.extend(values);
        Dist::of_i64(scratch)
    }

    /// The distribution of integer values, which it reorders in place;
    /// `O(n)`: the percentiles of many values come from a histogram over
    /// their range, of a few from selection (the fast path for
    /// nanoseconds).
    pub fn of_i64(values: &mut [i64]) -> Dist {
        Dist::of_integers(values, 0, 0)
    }

    /// The distribution of `values` and `count` more copies of `common`
    /// (reorders `values`): what [`Samples`] keeps.
    fn of_integers<T: Int>(values: &mut [T], common: i64, count: u64) -> Dist {
        let n = values.len() + count as usize;
        if n == 0 {
            return Dist::default();
        }
        let mut sum = T::sum(values);
        let (mut min, mut max) = (T::min_of(values), T::max_of(values));
        if count > 0 {
            sum += i128::from(common) * i128::from(count);
            min = min.min(common);
            max = max.max(common);
        }
        let (median, p95) = int_percentiles(values, common, count, (min, max), 0.5, 0.95);
        Dist {
            n: n as u64,
            mean: sum as f64 / n as f64,
            median,
            p95,
            min: min as f64,
            max: max as f64,
        }
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

/// Integer values kept for a [`Dist`] (durations, byte counts... one per
/// collective call), in as little memory as they allow: the first value is
/// counted each time it recurs rather than stored (a bucket's calls usually
/// all move the same bytes, and early buckets' calls are mostly exposed for
/// 0 ns), and the others are stored in 32 bits until one needs 64, then all
/// in 64 bits (half the memory while values lie within ±2.1 s or 2 GiB).
/// The distribution is computed on them in place, with no copy.
#[derive(Clone, Debug, Default)]
pub(crate) struct Samples {
    /// The first value, once there is one.
    common: i64,
    /// How many values equal `common` (0 before the first value).
    common_count: u64,
    /// The other values while they all fit in 32 bits.
    small: Vec<i32>,
    /// The other values once one does not (then `small` is empty).
    wide: Vec<i64>,
}

impl Samples {
    /// Adds a value (inlined: it runs for every call, and its rare paths are
    /// out of line).
    #[inline(always)]
    pub fn push(&mut self, v: i64) {
        if v == self.common {
            // Before the first value `common` is 0 with a count of 0: a first
            // 0 is rightly counted here.
            self.common_count += 1;
        } else if !self.small.is_empty() {
            match i32::try_from(v) {
                Ok(x) => self.small.push(x),
                Err(_) => {
                    self.widen();
                    self.wide.push(v);
                }
            }
        } else if !self.wide.is_empty() {
            self.wide.push(v);
        } else {
            self.push_first(v);
        }
    }

    /// [`Samples::push`] of the first value, or of the first one stored.
    #[cold]
    #[inline(never)]
    fn push_first(&mut self, v: i64) {
        if self.common_count == 0 {
            self.common = v;
            self.common_count = 1;
        } else if let Ok(x) = i32::try_from(v) {
            self.small.push(x);
        } else {
            self.wide.push(v);
        }
    }

    /// Moves the stored values to `wide` (once; kept out of line so that
    /// `push` inlines to a few compares and a store).
    #[cold]
    #[inline(never)]
    fn widen(&mut self) {
        self.wide = self.small.iter().map(|&x| i64::from(x)).collect();
        self.small = Vec::new();
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.common_count as usize + self.small.len() + self.wide.len()
    }

    /// The distribution of the values (reorders the stored ones).
    pub fn dist(&mut self) -> Dist {
        if self.wide.is_empty() {
            Dist::of_integers(&mut self.small, self.common, self.common_count)
        } else {
            Dist::of_integers(&mut self.wide, self.common, self.common_count)
        }
    }
}

/// The integer types [`Samples`] stores.
trait Int: Copy + Ord + Into<i64> {
    /// The exact sum of `values`.
    fn sum(values: &[Self]) -> i128;
    /// The smallest of `values` (`i64::MAX` for none).
    fn min_of(values: &[Self]) -> i64 {
        values.iter().copied().min().map_or(i64::MAX, Into::into)
    }
    /// The largest of `values` (`i64::MIN` for none).
    fn max_of(values: &[Self]) -> i64 {
        values.iter().copied().max().map_or(i64::MIN, Into::into)
    }
}

impl Int for i32 {
    fn sum(values: &[i32]) -> i128 {
        // In 64 bits, which cannot overflow for fewer than 2^32 values.
        values
            .chunks(1 << 31)
            .map(|c| i128::from(c.iter().map(|&v| i64::from(v)).sum::<i64>()))
            .sum()
    }
}

impl Int for i64 {
    fn sum(values: &[i64]) -> i128 {
        values.iter().map(|&v| i128::from(v)).sum()
    }
}

/// Percentiles `q1 ≤ q2` of `values` and `count` copies of `common`
/// (reorders `values`), interpolated as [`percentile_sorted`] does; there
/// must be values, and `range` is their smallest and largest.
fn int_percentiles<T: Int>(
    values: &mut [T],
    common: i64,
    count: u64,
    range: (i64, i64),
    q1: f64,
    q2: f64,
) -> (f64, f64) {
    let n = values.len() + count as usize;
    let pos = |q: f64| {
        let h = q.clamp(0.0, 1.0) * (n - 1) as f64;
        (h.floor() as usize, h - h.floor())
    };
    let (i1, f1) = pos(q1);
    let (i2, f2) = pos(q2.max(q1));
    // The order statistics needed: each percentile's rank, and the next one
    // when it interpolates.
    let mut ranks = [0usize; 4];
    let mut len = 0;
    for (i, f) in [(i1, f1), (i2, f2)] {
        for r in [i, i + 1] {
            if (r == i || (f != 0.0 && r < n)) && (len == 0 || ranks[len - 1] < r) {
                ranks[len] = r;
                len += 1;
            }
        }
    }
    let ranks = &ranks[..len];
    let mut stats = [0i64; 4];
    order_stats(values, common, count, range, ranks, &mut stats[..len]);
    let at = |r: usize| stats[ranks.iter().position(|&x| x == r).unwrap_or(0)] as f64;
    let interpolate = |i: usize, f: f64| {
        let x = at(i);
        if f == 0.0 || i + 1 >= n {
            x
        } else {
            x + (at(i + 1) - x) * f
        }
    };
    (interpolate(i1, f1), interpolate(i2, f2))
}

/// Sets `out[k]` to the value of sorted rank `ranks[k]` (ascending, distinct,
/// at most 4, below the number of values) of `values` and `count` copies of
/// `common`, whose smallest and largest are `range`; reorders `values`.
///
/// Many values go through a histogram first: one pass counts the values per
/// bin of [`BINS`] equal bins over their range, which says the bin of each
/// rank and how many values lie below it; a second pass copies out the few
/// values of those bins, and the ranks are found among them the same way
/// (each level narrows the range by at least 1024 times, so there are at
/// most 7). Both passes cost a few instructions per value, against the many
/// moves of selection in place, which takes over for a few values.
fn order_stats<T: Int>(
    values: &mut [T],
    common: i64,
    count: u64,
    (lo, hi): (i64, i64),
    ranks: &[usize],
    out: &mut [i64],
) {
    let n = values.len() as u64 + count;
    if values.len() < HISTOGRAM_MIN_LEN || n > u64::from(u32::MAX) {
        return order_stats_in_place(values, common, count, ranks, out);
    }
    if lo == hi {
        out.fill(lo);
        return;
    }
    let bits = 64 - (hi.wrapping_sub(lo) as u64).leading_zeros();
    let shift = bits.saturating_sub(BINS.trailing_zeros());
    // `& (BINS - 1)` changes nothing (the range over 2^shift is below
    // BINS) but spares the bounds checks.
    let bin = move |v: i64| ((v.wrapping_sub(lo) as u64) >> shift) as usize & (BINS - 1);
    let mut hist = [0u32; BINS];
    for &v in values.iter() {
        hist[bin(v.into())] += 1;
    }
    if count > 0 {
        hist[bin(common)] += count as u32;
    }
    // Per rank: its bin and the number of values in the bins below.
    let mut at = [(0usize, 0usize); 4];
    let (mut b, mut below) = (0, 0);
    for (slot, &r) in at.iter_mut().zip(ranks) {
        while below + hist[b] as usize <= r {
            below += hist[b] as usize;
            b += 1;
        }
        *slot = (b, below);
    }
    let at = &at[..ranks.len()];
    // The values of those bins, one list per bin (`index[bin]` is the
    // list's number plus one, 0 for the other bins).
    let mut index = [0u8; BINS];
    let mut lists: Vec<Vec<T>> = Vec::new();
    for &(b, _) in at {
        if index[b] == 0 {
            lists.push(Vec::with_capacity(hist[b] as usize));
            index[b] = lists.len() as u8;
        }
    }
    gather(values, lo, shift, &index, &mut lists);
    // The ranks within each bin (the copies of `common` count in its bin).
    let mut k = 0;
    while k < at.len() {
        let (b, below) = at[k];
        let same = at[k..].iter().take_while(|&&(c, _)| c == b).count();
        let mut local = [0usize; 4];
        for (l, &r) in local.iter_mut().zip(&ranks[k..k + same]) {
            *l = r - below;
        }
        let copies = if count > 0 && bin(common) == b {
            count
        } else {
            0
        };
        let list = &mut lists[usize::from(index[b]) - 1];
        let (mut lo, mut hi) = (T::min_of(list), T::max_of(list));
        if copies > 0 {
            (lo, hi) = (lo.min(common), hi.max(common));
        }
        order_stats(
            list,
            common,
            copies,
            (lo, hi),
            &local[..same],
            &mut out[k..k + same],
        );
        k += same;
    }
}

/// Appends each of `values` that falls into a bin with a list (bins as in
/// [`order_stats`]: `index[bin]` is the list's number plus one, 0 for none)
/// to that list. Out of line: a loop of its own keeps its few variables in
/// registers.
#[inline(never)]
fn gather<T: Int>(values: &[T], lo: i64, shift: u32, index: &[u8; BINS], lists: &mut [Vec<T>]) {
    for &v in values {
        let b = ((v.into().wrapping_sub(lo) as u64) >> shift) as usize & (BINS - 1);
        let i = index[b];
        if i != 0 {
            lists[usize::from(i) - 1].push(v);
        }
    }
}

/// Bins of the histogram of [`order_stats`].
const BINS: usize = 2048;

/// [`order_stats`] takes the histogram from this many values on.
const HISTOGRAM_MIN_LEN: usize = 1024;

/// [`order_stats`] by selection in place.
fn order_stats_in_place<T: Int>(
    values: &mut [T],
    common: i64,
    count: u64,
    ranks: &[usize],
    out: &mut [i64],
) {
    if count == 0 {
        return select_ranks(values, ranks, out);
    }
    // Sorted, the values are those below `common`, the copies, the rest.
    let mut below = 0;
    for i in 0..values.len() {
        if values[i].into() < common {
            values.swap(below, i);
            below += 1;
        }
    }
    let count = usize::try_from(count).unwrap_or(usize::MAX);
    let (lower, upper) = values.split_at_mut(below);
    let split = ranks.partition_point(|&r| r < below);
    let above = ranks.partition_point(|&r| r < below.saturating_add(count));
    select_ranks(lower, &ranks[..split], &mut out[..split]);
    out[split..above].fill(common);
    let mut upper_ranks = [0usize; 4];
    for (u, &r) in upper_ranks.iter_mut().zip(&ranks[above..]) {
        *u = r - below - count;
    }
    select_ranks(
        upper,
        &upper_ranks[..ranks.len() - above],
        &mut out[above..],
    );
}

/// Sets `out[k]` to the value of sorted rank `ranks[k]` of `values`
/// (ascending, distinct, below `values.len()`; at most 4 of them), and
/// reorders `values`: selection, `O(n)`. A rank right after the previous one
/// is the smallest value above it, found by a scan rather than a second
/// selection.
fn select_ranks<T: Int>(values: &mut [T], ranks: &[usize], out: &mut [i64]) {
    // values[..done] holds the values up to the last rank selected, in
    // place (everything after it is no smaller).
    let mut done = 0;
    for (k, &r) in ranks.iter().enumerate() {
        let rest = &mut values[done..];
        if k > 0 && r == done {
            let (i, _) = rest
                .iter()
                .enumerate()
                .min_by_key(|&(_, v)| *v)
                .expect("rank below the number of values");
            rest.swap(0, i);
            out[k] = rest[0].into();
        } else {
            let (_, &mut x, _) = rest.select_nth_unstable(r - done);
            out[k] = x.into();
        }
        done = r + 1;
    }
}

/// Percentile `q` (0 to 1) of sorted values, linearly interpolated; 0 for an
/// empty slice.
pub fn percentile_sorted(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => 0.0,
        1 => sorted[0],
        n => {
            let h = q.clamp(0.0, 1.0) * (n - 1) as f64;
            let lo = h.floor() as usize;
            let hi = (lo + 1).min(n - 1);
            sorted[lo] + (sorted[hi] - sorted[lo]) * (h - lo as f64)
        }
    }
}

/// Percentile `q` (0 to 1) of `values`, linearly interpolated as
/// [`percentile_sorted`] does, found by selection in `O(n)` (reorders
/// `values`); 0 for none.
pub fn percentile_select(values: &mut [f64], q: f64) -> f64 {
    let n = values.len();
    if n == 0 {
        return 0.0;
    }
    let h = q.clamp(0.0, 1.0) * (n - 1) as f64;
    let lo = h.floor() as usize;
    let (_, &mut x_lo, rest) = values.select_nth_unstable_by(lo, f64::total_cmp);
    if lo + 1 >= n || h == lo as f64 {
        return x_lo;
    }
    let x_hi = rest.iter().copied().fold(f64::INFINITY, f64::min);
    x_lo + (x_hi - x_lo) * (h - lo as f64)
}

/// Percentiles `q1 ≤ q2` of `values` (reorders them), interpolated as
/// [`percentile_sorted`] does; the second selection only searches the part
/// above the first.
fn two_percentiles<T: Copy>(
    values: &mut [T],
    q1: f64,
    q2: f64,
    cmp: impl Fn(&T, &T) -> std::cmp::Ordering + Copy,
    to_f: impl Fn(T) -> f64 + Copy,
) -> (f64, f64) {
    let n = values.len();
    if n == 0 {
        return (0.0, 0.0);
    }
    let pos = |q: f64| {
        let h = q.clamp(0.0, 1.0) * (n - 1) as f64;
        (h.floor() as usize, h - h.floor())
    };
    // Value at sorted index `i` of `v` (selected), and the interpolation
    // with the next one (the minimum of the part above).
    fn at<T: Copy>(
        v: &mut [T],
        i: usize,
        frac: f64,
        cmp: impl Fn(&T, &T) -> std::cmp::Ordering,
        to_f: impl Fn(T) -> f64,
    ) -> f64 {
        let (_, &mut x, rest) = v.select_nth_unstable_by(i, &cmp);
        if frac == 0.0 || rest.is_empty() {
            return to_f(x);
        }
        let next = rest
            .iter()
            .copied()
            .min_by(|a, b| cmp(a, b))
            .map_or(to_f(x), &to_f);
        to_f(x) + (next - to_f(x)) * frac
    }
    let (i1, f1) = pos(q1);
    let (i2, f2) = pos(q2.max(q1));
    let p1 = at(values, i1, f1, cmp, to_f);
    let p2 = if i2 == i1 {
        // Same neighbours: values[i1] is selected, the rest lies above.
        let x = to_f(values[i1]);
        let next = values[i1 + 1..]
            .iter()
            .copied()
            .min_by(|a, b| cmp(a, b))
            .map_or(x, to_f);
        x + (next - x) * f2
    } else {
        // Everything above index i1 is in values[i1 + 1..].
        at(&mut values[i1 + 1..], i2 - i1 - 1, f2, cmp, to_f)
    };
    (p1, p2)
}

/// The value with the largest total weight (ties: the first seen); `None` for no items.
pub fn heaviest<T: PartialEq, W: Copy + PartialOrd + std::ops::AddAssign>(
    items: impl Iterator<Item = (T, W)>,
) -> Option<T> {
    let mut totals: Vec<(T, W)> = Vec::new();
    for (v, w) in items {
        match totals.iter_mut().find(|(k, _)| *k == v) {
            Some((_, t)) => *t += w,
            None => totals.push((v, w)),
        }
    }
    let mut best: Option<(T, W)> = None;
    for (v, t) in totals {
        if best.as_ref().is_none_or(|(_, b)| t > *b) {
            best = Some((v, t));
        }
    }
    best.map(|(v, _)| v)
}

/// Median of `values` (reorders them); 0 for none.
pub fn median(values: &mut [f64]) -> f64 {
    percentile_select(values, 0.5)
}

/// Robust standard deviation: 1.4826 × the median absolute deviation from
/// the median (equals σ for normally distributed values). Overwrites
/// `values` with the absolute deviations.
pub fn robust_sigma(values: &mut [f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let m = median(values);
    for v in values.iter_mut() {
        *v = (*v - m).abs();
    }
    1.4826 * median(values)
}

/// `P(X ≥ k)` for `X ~ Binomial(n, p)`, computed in log space so that it
/// neither overflows nor underflows for large `n`. `O(n − k)`.
pub fn binomial_upper_tail(n: u64, k: u64, p: f64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if k > n || p <= 0.0 {
        return 0.0;
    }
    if p >= 1.0 {
        return 1.0;
    }
    // log C(n, k) by summing logs: O(min(k, n−k)).
    let kk = k.min(n - k);
    let mut log_c = 0.0;
    for i in 0..kk {
        log_c += ((n - i) as f64).ln() - ((i + 1) as f64).ln();
    }
    let (lp, lq) = (p.ln(), (1.0 - p).ln());
    let mut log_term = log_c + k as f64 * lp + (n - k) as f64 * lq;
    let mut sum = 0.0;
    let mut i = k;
    loop {
        sum += log_term.exp();
        if i == n {
            break;
        }
        // term(i+1) = term(i) · (n−i)/(i+1) · p/(1−p)
        log_term += ((n - i) as f64).ln() - ((i + 1) as f64).ln() + lp - lq;
        i += 1;
        if log_term < -800.0 && sum > 0.0 {
            break;
        }
    }
    sum.min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate() {
        let d = Dist::of(&mut vec![4.0, 1.0, 3.0, 2.0]);
        assert_eq!(d.n, 4);
        assert_eq!(d.median, 2.5);
        assert!((d.p95 - 3.85).abs() < 1e-12);
        assert_eq!(d.mean, 2.5);
        assert_eq!((d.min, d.max), (1.0, 4.0));
        let one = Dist::of(&mut vec![7.0]);
        assert_eq!((one.median, one.p95, one.mean), (7.0, 7.0, 7.0));
        assert!(Dist::of(&mut vec![]).is_empty());
        assert_eq!(Dist::of(&mut vec![f64::NAN, 1.0]).n, 1);
    }

    #[test]
    fn selection_matches_sorting() {
        let mut x = 99u64;
        for n in [1usize, 2, 3, 10, 101, 1000] {
            let v: Vec<f64> = (0..n)
                .map(|_| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (x >> 40) as f64
                })
                .collect();
            let mut sorted = v.clone();
            sorted.sort_unstable_by(f64::total_cmp);
            for q in [0.0, 0.25, 0.5, 0.95, 1.0] {
                let mut w = v.clone();
                assert_eq!(percentile_select(&mut w, q), percentile_sorted(&sorted, q));
            }
            let d = Dist::of(&mut v.clone());
            assert_eq!(d.median, percentile_sorted(&sorted, 0.5));
            assert_eq!(d.p95, percentile_sorted(&sorted, 0.95));
            let mut ints: Vec<i64> = v.iter().map(|&x| x as i64).collect();
            let di = Dist::of_i64(&mut ints);
            assert_eq!(
                (di.median, di.p95, di.min, di.max),
                (d.median, d.p95, d.min, d.max)
            );
            assert!((di.mean - d.mean).abs() < 1e-6 * d.mean.abs().max(1.0));
        }
    }

    #[test]
    fn robust_sigma_ignores_outliers() {
        let mut v = vec![10.0, 11.0, 9.0, 10.0, 1000.0];
        // median 10, deviations 0,1,1,0,990 → MAD 1.
        assert!((robust_sigma(&mut v) - 1.4826).abs() < 1e-12);
    }

    #[test]
    fn binomial_tail() {
        // P(X ≥ 2) for Binomial(2, 0.5) = 0.25; P(X ≥ 1) = 0.75.
        assert!((binomial_upper_tail(2, 2, 0.5) - 0.25).abs() < 1e-12);
        assert!((binomial_upper_tail(2, 1, 0.5) - 0.75).abs() < 1e-12);
        // P(X ≥ 5) for Binomial(5, 0.25) = 0.25^5.
        assert!((binomial_upper_tail(5, 5, 0.25) - 0.25f64.powi(5)).abs() < 1e-15);
        assert_eq!(binomial_upper_tail(10, 0, 0.3), 1.0);
        assert_eq!(binomial_upper_tail(10, 11, 0.3), 0.0);
        // Large n does not underflow to garbage.
        let t = binomial_upper_tail(100_000, 50_000, 0.5);
        assert!((t - 0.5).abs() < 0.01, "{t}");
        assert!(binomial_upper_tail(100_000, 90_000, 0.5) < 1e-100);
    }

    /// The distribution of `values` worked out the plain way: sorted.
    fn sorted_dist(values: &[i64]) -> Dist {
        if values.is_empty() {
            return Dist::default();
        }
        let mut v = values.to_vec();
        v.sort_unstable();
        let sorted: Vec<f64> = v.iter().map(|&x| x as f64).collect();
        let sum: i128 = v.iter().map(|&x| i128::from(x)).sum();
        Dist {
            n: v.len() as u64,
            mean: sum as f64 / v.len() as f64,
            median: percentile_sorted(&sorted, 0.5),
            p95: percentile_sorted(&sorted, 0.95),
            min: sorted[0],
            max: sorted[v.len() - 1],
        }
    }

    #[test]
    fn samples_count_the_first_value_and_widen_when_a_value_needs_64_bits() {
        let mut s = Samples::default();
        for v in [4, 4, i64::from(i32::MIN), 4, i64::from(i32::MAX)] {
            s.push(v);
        }
        assert_eq!((s.common, s.common_count), (4, 3));
        assert_eq!(s.small, vec![i32::MIN, i32::MAX]);
        assert!(s.wide.is_empty());
        s.push(1 << 40);
        s.push(-5);
        assert!(s.small.is_empty());
        assert_eq!(
            s.wide,
            vec![i64::from(i32::MIN), i64::from(i32::MAX), 1 << 40, -5]
        );
        assert_eq!(s.len(), 7);
        let d = s.dist();
        assert_eq!((d.n, d.median, d.max), (7, 4.0, (1u64 << 40) as f64));
        // A first 0 is counted like any first value.
        let mut z = Samples::default();
        for v in [0, 7, 0, 0] {
            z.push(v);
        }
        assert_eq!((z.common, z.common_count, z.small.len()), (0, 3, 1));
        assert_eq!(z.dist(), sorted_dist(&[0, 7, 0, 0]));
        assert_eq!(Samples::default().dist(), Dist::default());
    }

    #[test]
    fn samples_give_the_distribution_of_sorting() {
        // Sizes around the histogram's threshold and well above it, and
        // values that are spread, clustered, repeated, far apart or wide.
        let mut rng = fastrand::Rng::with_seed(2024);
        let mut next = move || rng.u64(..);
        let shapes: [fn(u64, usize) -> i64; 8] = [
            |r, _| (r % 1_000_000) as i64,
            |r, _| 800_000 + (r % 40_000) as i64,
            |r, _| (r % 7) as i64 * 1000,
            |r, i| if i % 3 == 0 { 0 } else { (r % 50_000) as i64 },
            |r, i| {
                if i % 1000 == 7 {
                    1 << 62
                } else {
                    (r % 1000) as i64 - 500
                }
            },
            |r, _| r as i64,
            |r, i| {
                if i % 2 == 0 {
                    i64::MIN + (r % 3) as i64
                } else {
                    i64::MAX - (r % 3) as i64
                }
            },
            |r, i| (r % 100) as i64 + if i % 10 == 0 { -(1 << 40) } else { 0 },
        ];
        for n in [0usize, 1, 2, 3, 20, 1023, 1024, 1025, 4099, 30_000] {
            for (k, shape) in shapes.iter().enumerate() {
                let values: Vec<i64> = (0..n).map(|i| shape(next(), i)).collect();
                let mut s = Samples::default();
                for &v in &values {
                    s.push(v);
                }
                assert_eq!(s.len(), n);
                assert_eq!(s.dist(), sorted_dist(&values), "shape {k}, {n} values");
                let mut plain = values.clone();
                assert_eq!(Dist::of_i64(&mut plain), sorted_dist(&values));
            }
        }
    }
}
