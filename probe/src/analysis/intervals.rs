//! Sets of time intervals: union, intersection and difference lengths.
//!
//! An interval is a half-open `[start, end)` pair of nanosecond timestamps.
//! A *normalized* list is sorted by start, has no empty intervals and no two
//! intervals that overlap or touch; [`normalize`] makes one in place. All
//! lengths are exact integers, so for any normalized `a` and `b`
//! `intersection_len(a, b) + difference_len(a, b) == total(a)`.

/// A half-open interval `[start, end)` in nanoseconds.
pub type Interval = (i64, i64);

/// Sorts `v` by start and merges overlapping or touching intervals in place;
/// empty and reversed intervals are dropped. No allocation.
pub fn normalize(v: &mut Vec<Interval>) {
    v.retain(|&(a, b)| b > a);
    if v.len() < 2 {
        return;
    }
    if !v.windows(2).all(|w| w[0].0 <= w[1].0) {
        v.sort_unstable_by_key(|&(a, _)| a);
    }
    let mut w = 0;
    for r in 1..v.len() {
        let (a, b) = v[r];
        if a <= v[w].1 {
            if b > v[w].1 {
                v[w].1 = b;
            }
        } else {
            w += 1;
            v[w] = (a, b);
        }
    }
    v.truncate(w + 1);
}

/// A list of intervals that is normalized as it is built, while intervals
/// come in start order (spans read from a sorted lane do): [`push`] merges
/// an interval into the last one or appends it, so that the list needs no
/// sorting or merging pass afterwards. An interval that starts before the last one marks
/// the list unsorted, and [`normalized`] then falls back to [`normalize`].
///
/// [`push`]: IntervalList::push
/// [`normalized`]: IntervalList::normalized
#[derive(Clone, Debug, Default)]
pub(crate) struct IntervalList {
    v: Vec<Interval>,
    /// Set when an interval came out of order: `v` is then not normalized.
    unsorted: bool,
}

impl IntervalList {
    /// Empties the list, keeping its memory.
    pub fn clear(&mut self) {
        self.v.clear();
        self.unsorted = false;
    }

    /// Adds `[a, b)`; empty and reversed intervals are dropped (as
    /// [`normalize`] drops them).
    #[inline]
    pub fn push(&mut self, (a, b): Interval) {
        if b <= a {
            return;
        }
        match self.v.last_mut() {
            // In order: `v` stays normalized.
            Some(last) if !self.unsorted && a >= last.0 => {
                if a <= last.1 {
                    last.1 = last.1.max(b);
                } else {
                    self.v.push((a, b));
                }
            }
            Some(_) => {
                self.unsorted = true;
                self.v.push((a, b));
            }
            None => self.v.push((a, b)),
        }
    }

    /// The intervals as a normalized list, normalizing them first if they
    /// came out of order.
    pub fn normalized(&mut self) -> &[Interval] {
        if self.unsorted {
            normalize(&mut self.v);
            self.unsorted = false;
        }
        &self.v
    }
}

/// Visits the union of normalized lists as maximal disjoint intervals in
/// order, merging the lists like a k-way merge (no sorting; no allocation
/// for up to 8 lists).
fn for_each_union(lists: &[&[Interval]], mut f: impl FnMut(Interval)) {
    // Per list: what is left of it, and the start of its next interval
    // (`i64::MAX` once it is used up: no interval of a normalized list
    // starts there). Searching a flat array of starts for the smallest is
    // what makes the merge cheap.
    const SMALL: usize = 8;
    let (mut small_rest, mut small_heads) = ([&[][..]; SMALL], [i64::MAX; SMALL]);
    let (mut large_rest, mut large_heads) = (Vec::new(), Vec::new());
    let (rest, heads): (&mut [&[Interval]], &mut [i64]) = if lists.len() <= SMALL {
        (
            &mut small_rest[..lists.len()],
            &mut small_heads[..lists.len()],
        )
    } else {
        large_rest.resize(lists.len(), &[][..]);
        large_heads.resize(lists.len(), i64::MAX);
        (&mut large_rest, &mut large_heads)
    };
    for ((r, h), &l) in rest.iter_mut().zip(heads.iter_mut()).zip(lists) {
        *r = l;
        *h = l.first().map_or(i64::MAX, |iv| iv.0);
    }
    // The union interval being extended, once there is one.
    let (mut cur, mut started) = ((0, 0), false);
    loop {
        let mut best = 0;
        for k in 1..heads.len() {
            if heads[k] < heads[best] {
                best = k;
            }
        }
        let Some((&(a, b), tail)) = rest.get(best).and_then(|r| r.split_first()) else {
            break;
        };
        rest[best] = tail;
        heads[best] = tail.first().map_or(i64::MAX, |iv| iv.0);
        if started && a <= cur.1 {
            cur.1 = cur.1.max(b);
        } else {
            if started {
                f(cur);
            }
            (cur, started) = ((a, b), true);
        }
    }
    if started {
        f(cur);
    }
}

/// Writes the union of normalized lists into `out` as a normalized list.
pub fn union_into(out: &mut Vec<Interval>, lists: &[&[Interval]]) {
    out.clear();
    for_each_union(lists, |iv| out.push(iv));
}

/// Length of the union of normalized lists, in ns.
pub fn union_len(lists: &[&[Interval]]) -> i64 {
    let mut sum = 0i64;
    for_each_union(lists, |(a, b)| sum += b - a);
    sum
}

/// Sum of the lengths of the intervals of a normalized list (ns).
pub fn total(v: &[Interval]) -> i64 {
    v.iter().map(|&(a, b)| b.saturating_sub(a)).sum()
}

/// Length of `a ∩ b` for normalized lists (ns), by a two-pointer sweep.
pub fn intersection_len(a: &[Interval], b: &[Interval]) -> i64 {
    let (mut i, mut j, mut sum) = (0, 0, 0i64);
    while i < a.len() && j < b.len() {
        let lo = a[i].0.max(b[j].0);
        let hi = a[i].1.min(b[j].1);
        if hi > lo {
            sum += hi - lo;
        }
        if a[i].1 <= b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    sum
}

/// Length of `a \ b` (the parts of `a` not covered by `b`) for normalized
/// lists (ns), computed by its own sweep (not as `total − intersection`).
pub fn difference_len(a: &[Interval], b: &[Interval]) -> i64 {
    let mut j = 0;
    let mut sum = 0i64;
    for &(start, end) in a {
        let mut cur = start;
        while j < b.len() && b[j].1 <= cur {
            j += 1;
        }
        let mut k = j;
        while cur < end && k < b.len() && b[k].0 < end {
            if b[k].0 > cur {
                sum += b[k].0 - cur;
            }
            cur = cur.max(b[k].1);
            k += 1;
        }
        if cur < end {
            sum += end - cur;
        }
    }
    sum
}

/// Length of the part of `[start, end)` covered by the normalized list `b`
/// (ns), found by binary search: `O(log n + k)`.
pub fn covered_len(start: i64, end: i64, b: &[Interval]) -> i64 {
    if end <= start {
        return 0;
    }
    let first = b.partition_point(|&(_, e)| e <= start);
    let mut sum = 0;
    for &(a, e) in &b[first..] {
        if a >= end {
            break;
        }
        let lo = a.max(start);
        let hi = e.min(end);
        if hi > lo {
            sum += hi - lo;
        }
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_merges_and_drops_empty() {
        let mut v = vec![(50, 70), (10, 20), (20, 30), (5, 5), (60, 65), (80, 79)];
        normalize(&mut v);
        assert_eq!(v, vec![(10, 30), (50, 70)]);
        assert_eq!(total(&v), 40);
    }

    #[test]
    fn interval_list_matches_normalize() {
        let mut x = 777u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 100) as i64
        };
        let mut list = IntervalList::default();
        for round in 0..300 {
            // Mostly in start order (as from a sorted lane), sometimes not.
            let mut t = 0;
            let v: Vec<Interval> = (0..round % 12)
                .map(|_| {
                    t += next() / 4 - if round % 3 == 0 { 10 } else { 0 };
                    (t, t + next() / 3 - 2)
                })
                .collect();
            list.clear();
            for &iv in &v {
                list.push(iv);
            }
            let mut want = v.clone();
            normalize(&mut want);
            assert_eq!(list.normalized(), &want[..], "{v:?}");
        }
    }

    #[test]
    fn the_example_of_the_brief() {
        // Backward 20..80 and forward 0..20 as compute; collectives 50..70
        // and 75..95.
        let compute = vec![(0, 80)];
        let coll = vec![(50, 70), (75, 95)];
        assert_eq!(total(&coll), 40);
        assert_eq!(intersection_len(&coll, &compute), 25);
        assert_eq!(difference_len(&coll, &compute), 15);
        assert_eq!(covered_len(75, 95, &compute), 5);
    }

    #[test]
    fn unions_of_lists() {
        let a = vec![(0, 10), (20, 30)];
        let b = vec![(5, 12), (40, 50)];
        let c = vec![(12, 15), (29, 35)];
        let mut out = Vec::new();
        union_into(&mut out, &[&a, &b, &c]);
        assert_eq!(out, vec![(0, 15), (20, 35), (40, 50)]);
        assert_eq!(union_len(&[&a, &b, &c]), 15 + 15 + 10);
        assert_eq!(union_len(&[]), 0);
        union_into(&mut out, &[&[], &a]);
        assert_eq!(out, a);
    }

    #[test]
    fn difference_with_holes() {
        let a = vec![(0, 100)];
        let b = vec![(-5, 10), (20, 30), (40, 45), (90, 200)];
        assert_eq!(intersection_len(&a, &b), 10 + 10 + 5 + 10);
        assert_eq!(difference_len(&a, &b), 100 - 35);
        assert_eq!(difference_len(&b, &a), 5 + 100);
        assert_eq!(covered_len(0, 100, &b), 35);
        assert_eq!(covered_len(31, 39, &b), 0);
        assert_eq!(covered_len(5, 5, &b), 0);
    }

    #[test]
    fn sums_are_exact_on_pseudo_random_sets() {
        let mut x = 12345u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 1000) as i64
        };
        for _ in 0..200 {
            let mut a: Vec<Interval> = (0..8)
                .map(|_| {
                    let s = next();
                    (s, s + next() / 10)
                })
                .collect();
            let mut b: Vec<Interval> = (0..8)
                .map(|_| {
                    let s = next();
                    (s, s + next() / 5)
                })
                .collect();
            normalize(&mut a);
            normalize(&mut b);
            // Brute force on the integer grid.
            let inside = |v: &[Interval], t: i64| v.iter().any(|&(s, e)| s <= t && t < e);
            let (mut both, mut only) = (0, 0);
            for t in -10..2000 {
                if inside(&a, t) {
                    if inside(&b, t) {
                        both += 1;
                    } else {
                        only += 1;
                    }
                }
            }
            assert_eq!(intersection_len(&a, &b), both);
            assert_eq!(difference_len(&a, &b), only);
            assert_eq!(both + only, total(&a));
        }
    }
}
