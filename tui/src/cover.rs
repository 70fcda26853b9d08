//! Disjoint sorted time intervals with prefix sums: how much of any window
//! a set of spans covers, in `O(log n)`.
//!
//! The timeline draws each terminal cell from the coverage of the cell's
//! time window by each class of span (forward, backward, exposed
//! communication...). A [`Cover`] answers "how many nanoseconds of
//! `[a, b)` are covered" with two binary searches, whatever the number of
//! spans, so a frame costs the same with a thousand spans or a million.

/// A half-open interval `[start, end)` in nanoseconds.
pub type Interval = (i64, i64);

/// A normalized interval list (sorted, disjoint, non-touching, non-empty
/// intervals) with the running total of lengths.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cover {
    iv: Vec<Interval>,
    /// `cum[i]` = total length of `iv[..i]`; one longer than `iv`.
    cum: Vec<i64>,
}

impl Cover {
    /// The union of `intervals` (any order; empty and reversed ones are
    /// dropped).
    pub fn from_intervals(mut intervals: Vec<Interval>) -> Cover {
        normalize(&mut intervals);
        Cover::from_normalized(intervals)
    }

    fn from_normalized(iv: Vec<Interval>) -> Cover {
        let mut cum = Vec::with_capacity(iv.len() + 1);
        let mut sum = 0i64;
        cum.push(0);
        for &(a, b) in &iv {
            sum = sum.saturating_add(b - a);
            cum.push(sum);
        }
        Cover { iv, cum }
    }

    /// The intervals.
    pub fn intervals(&self) -> &[Interval] {
        &self.iv
    }

    /// Whether nothing is covered.
    pub fn is_empty(&self) -> bool {
        self.iv.is_empty()
    }

    /// Covered length before `t`: the part of the union in `(-∞, t)`.
    pub fn prefix(&self, t: i64) -> i64 {
        let k = self.iv.partition_point(|&(a, _)| a < t);
        if k == 0 {
            return 0;
        }
        let over = (self.iv[k - 1].1 - t).max(0);
        self.cum[k] - over
    }

    /// Covered length of `[a, b)` (0 when `b <= a`).
    pub fn covered(&self, a: i64, b: i64) -> i64 {
        if b <= a {
            return 0;
        }
        self.prefix(b) - self.prefix(a)
    }

    /// Whether `t` lies inside a covered interval.
    pub fn contains(&self, t: i64) -> bool {
        let k = self.iv.partition_point(|&(a, _)| a <= t);
        k > 0 && self.iv[k - 1].1 > t
    }

    /// `self ∩ other`.
    pub fn intersect(&self, other: &Cover) -> Cover {
        let (a, b) = (&self.iv, &other.iv);
        let (mut i, mut j) = (0, 0);
        let mut out = Vec::new();
        while i < a.len() && j < b.len() {
            let lo = a[i].0.max(b[j].0);
            let hi = a[i].1.min(b[j].1);
            if hi > lo {
                out.push((lo, hi));
            }
            if a[i].1 <= b[j].1 {
                i += 1;
            } else {
                j += 1;
            }
        }
        Cover::from_normalized(out)
    }

    /// `self \ other`: the parts of `self` that `other` does not cover.
    pub fn subtract(&self, other: &Cover) -> Cover {
        let b = &other.iv;
        let mut out = Vec::new();
        let mut j = 0;
        for &(start, end) in &self.iv {
            let mut cur = start;
            while j < b.len() && b[j].1 <= cur {
                j += 1;
            }
            let mut k = j;
            while cur < end && k < b.len() && b[k].0 < end {
                if b[k].0 > cur {
                    out.push((cur, b[k].0));
                }
                cur = cur.max(b[k].1);
                k += 1;
            }
            if cur < end {
                out.push((cur, end));
            }
        }
        Cover::from_normalized(out)
    }
}

/// Sorts by start and merges overlapping or touching intervals in place;
/// drops empty ones.
fn normalize(v: &mut Vec<Interval>) {
    v.retain(|&(a, b)| b > a);
    if !v.windows(2).all(|w| w[0].0 <= w[1].0) {
        v.sort_unstable_by_key(|&(a, _)| a);
    }
    let mut w = 0;
    for r in 1..v.len() {
        let (a, b) = v[r];
        if a <= v[w].1 {
            v[w].1 = v[w].1.max(b);
        } else {
            w += 1;
            v[w] = (a, b);
        }
    }
    v.truncate((w + 1).min(v.len()));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute(v: &[Interval], a: i64, b: i64) -> i64 {
        (a..b)
            .filter(|&t| v.iter().any(|&(s, e)| s <= t && t < e))
            .count() as i64
    }

    #[test]
    fn union_and_prefix_sums() {
        let c = Cover::from_intervals(vec![(50, 70), (10, 20), (20, 30), (5, 5), (60, 65)]);
        assert_eq!(c.intervals(), &[(10, 30), (50, 70)]);
        assert_eq!(c.covered(0, 100), 40);
        assert_eq!(c.covered(15, 55), 15 + 5);
        assert_eq!(c.covered(25, 25), 0);
        assert_eq!(c.covered(40, 10), 0);
        assert!(c.contains(10) && c.contains(29) && !c.contains(30) && !c.contains(9));
        assert!(Cover::default().is_empty());
        assert_eq!(Cover::default().covered(i64::MIN, i64::MAX), 0);
    }

    #[test]
    fn covered_matches_brute_force() {
        let mut x = 7u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 300) as i64
        };
        for _ in 0..100 {
            let raw: Vec<Interval> = (0..10)
                .map(|_| {
                    let s = next();
                    (s, s + next() / 8)
                })
                .collect();
            let c = Cover::from_intervals(raw.clone());
            for _ in 0..20 {
                let a = next() - 10;
                let b = a + next() / 3;
                assert_eq!(c.covered(a, b), brute(&raw, a, b), "{raw:?} [{a}, {b})");
            }
        }
    }

    #[test]
    fn intersection_and_difference() {
        let a = Cover::from_intervals(vec![(0, 100)]);
        let b = Cover::from_intervals(vec![(-5, 10), (20, 30), (90, 200)]);
        assert_eq!(a.intersect(&b).intervals(), &[(0, 10), (20, 30), (90, 100)]);
        assert_eq!(a.subtract(&b).intervals(), &[(10, 20), (30, 90)]);
        assert_eq!(b.subtract(&a).intervals(), &[(-5, 0), (100, 200)]);
        assert!(a.subtract(&a).is_empty());
    }
}
