//! Small statistics: distributions (median, p95, mean), robust spread and a
//! binomial tail.
//!
//! Percentiles interpolate linearly between the closest ranks (the default
//! of NumPy and of R's type 7): for sorted values `x[0..n]`, percentile `q`
//! is `x[h]` interpolated at `h = q·(n−1)`. The median of `[1, 2, 3, 4]` is
//! therefore 2.5 and its p95 is 3.85.

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
    /// `O(n)` with integer comparisons (the fast path for nanoseconds).
    pub fn of_i64(values: &mut [i64]) -> Dist {
        Dist::of_integers(values)
    }

    /// [`Dist::of_i64`] for values stored in 32 bits.
    pub(crate) fn of_i32(values: &mut [i32]) -> Dist {
        Dist::of_integers(values)
    }

    fn of_integers<T: Copy + Ord + Into<i64>>(values: &mut [T]) -> Dist {
        let n = values.len();
        if n == 0 {
            return Dist::default();
        }
        let mut sum = 0i128;
        let (mut min, mut max) = (i64::MAX, i64::MIN);
        for &v in values.iter() {
            let v: i64 = v.into();
            sum += i128::from(v);
            min = min.min(v);
            max = max.max(v);
        }
        let (median, p95) = two_percentiles(values, 0.5, 0.95, T::cmp, |v| v.into() as f64);
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
}
