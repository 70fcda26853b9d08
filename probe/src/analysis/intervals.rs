//! Sets of time intervals: union, intersection and difference (as lists and
//! as lengths), and [`Cover`], which answers how much of a window a set
//! covers in `O(log n)`. The one interval module of the summary, the
//! report's charts and the terminal timeline.
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
/// sorting or merging pass afterwards. The last interval is kept apart
/// from the others, where merging into it is cheapest. An interval that
/// starts before the last one marks the list unsorted, and [`normalized`]
/// then falls back to [`normalize`].
///
/// [`push`]: IntervalList::push
/// [`normalized`]: IntervalList::normalized
#[derive(Clone, Debug)]
pub(crate) struct IntervalList {
    /// The intervals before `last`.
    v: Vec<Interval>,
    /// The last interval while intervals come in order: [`Self::NONE`]
    /// before the first, [`Self::UNSORTED`] once one came out of order (then
    /// everything is in `v`, not normalized).
    last: Interval,
}

impl Default for IntervalList {
    fn default() -> IntervalList {
        IntervalList {
            v: Vec::new(),
            last: IntervalList::NONE,
        }
    }
}

impl IntervalList {
    /// `last` before the first interval: any interval starts at or after
    /// it, and it is empty.
    const NONE: Interval = (i64::MIN, i64::MIN);
    /// `last` once the list is unsorted: no interval starts at or after it
    /// (a non-empty one cannot start at `i64::MAX`).
    const UNSORTED: Interval = (i64::MAX, i64::MAX);

    /// Empties the list, keeping its memory.
    pub fn clear(&mut self) {
        self.v.clear();
        self.last = IntervalList::NONE;
    }

    /// Adds `[a, b)`; empty and reversed intervals are dropped (as
    /// [`normalize`] drops them).
    #[inline]
    pub fn push(&mut self, (a, b): Interval) {
        if b <= a {
            return;
        }
        let last = &mut self.last;
        if a < last.0 {
            self.push_unsorted((a, b));
        } else if a <= last.1 {
            // In order and touching: merged (the first interval lands here
            // only when it starts at `i64::MIN`, and is right to).
            last.1 = last.1.max(b);
        } else {
            if last.1 > last.0 {
                self.v.push(*last);
            }
            self.last = (a, b);
        }
    }

    /// [`IntervalList::push`] of an interval that starts before the last
    /// one (or of any interval once one did).
    #[cold]
    fn push_unsorted(&mut self, iv: Interval) {
        if self.last != IntervalList::UNSORTED {
            self.v.push(self.last);
            self.last = IntervalList::UNSORTED;
        }
        self.v.push(iv);
    }

    /// The intervals as a normalized list, normalizing them first if they
    /// came out of order.
    pub fn normalized(&mut self) -> &[Interval] {
        if self.last == IntervalList::UNSORTED {
            normalize(&mut self.v);
        } else if self.last.1 > self.last.0 {
            self.v.push(self.last);
        }
        // Everything is in `v` now: further intervals go there too, as
        // after one out of order.
        self.last = IntervalList::UNSORTED;
        &self.v
    }
}

/// Visits the union of normalized lists as maximal disjoint intervals in
/// order, merging the lists like a k-way merge (no sorting; no allocation
/// for up to 8 lists, which all the callers pass).
pub(crate) fn for_each_union(lists: &[&[Interval]], mut f: impl FnMut(Interval)) {
    match *lists {
        [] => {}
        // A normalized list is its own union.
        [a] => a.iter().for_each(|&iv| f(iv)),
        [a, b] => merge_union([a, b], f),
        [a, b, c] => merge_union([a, b, c], f),
        [a, b, c, d] => merge_union([a, b, c, d], f),
        [a, b, c, d, e] => merge_union([a, b, c, d, e], f),
        [a, b, c, d, e, g] => merge_union([a, b, c, d, e, g], f),
        [a, b, c, d, e, g, h] => merge_union([a, b, c, d, e, g, h], f),
        [a, b, c, d, e, g, h, i] => merge_union([a, b, c, d, e, g, h, i], f),
        _ => {
            let mut all: Vec<Interval> = lists.iter().flat_map(|l| l.iter().copied()).collect();
            normalize(&mut all);
            all.into_iter().for_each(f);
        }
    }
}

/// [`for_each_union`] of `K` lists: repeatedly takes the interval with the
/// smallest start among the lists' next ones and extends the current union
/// interval with it or emits that and starts a new one. The lists' next
/// starts sit in a flat array (`i64::MAX` once a list is used up: no
/// interval of a normalized list starts there), so finding the smallest is
/// `K − 1` branch-free comparisons.
#[inline]
fn merge_union<const K: usize>(lists: [&[Interval]; K], mut f: impl FnMut(Interval)) {
    let mut next = [0usize; K];
    let mut heads = [i64::MAX; K];
    for k in 0..K {
        if let Some(iv) = lists[k].first() {
            heads[k] = iv.0;
        }
    }
    // The union interval being extended; `None` before the first one.
    let mut cur: Option<Interval> = None;
    loop {
        let mut best = 0;
        for k in 1..K {
            if heads[k] < heads[best] {
                best = k;
            }
        }
        let list = lists[best];
        let Some(&(a, b)) = list.get(next[best]) else {
            break;
        };
        next[best] += 1;
        heads[best] = list.get(next[best]).map_or(i64::MAX, |iv| iv.0);
        match &mut cur {
            Some((_, end)) if a <= *end => *end = (*end).max(b),
            _ => {
                if let Some(iv) = cur {
                    f(iv);
                }
                cur = Some((a, b));
            }
        }
    }
    if let Some(iv) = cur {
        f(iv);
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

/// Calls `f` with each interval of `a ∩ b`, in order, for normalized lists
/// (a two-pointer sweep).
pub fn for_each_intersection(a: &[Interval], b: &[Interval], mut f: impl FnMut(Interval)) {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let lo = a[i].0.max(b[j].0);
        let hi = a[i].1.min(b[j].1);
        if hi > lo {
            f((lo, hi));
        }
        if a[i].1 <= b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
}

/// Length of `a ∩ b` for normalized lists (ns).
pub fn intersection_len(a: &[Interval], b: &[Interval]) -> i64 {
    let mut sum = 0i64;
    for_each_intersection(a, b, |(lo, hi)| sum += hi - lo);
    sum
}

/// `a ∩ b` for normalized lists, normalized.
pub fn intersection(a: &[Interval], b: &[Interval]) -> Vec<Interval> {
    let mut out = Vec::new();
    for_each_intersection(a, b, |iv| out.push(iv));
    out
}

/// Calls `f` with each interval of `a \ b` (the parts of `a` not covered by
/// `b`), in order, for normalized lists, by its own sweep.
pub fn for_each_difference(a: &[Interval], b: &[Interval], mut f: impl FnMut(Interval)) {
    let mut j = 0;
    for &(start, end) in a {
        let mut cur = start;
        while j < b.len() && b[j].1 <= cur {
            j += 1;
        }
        let mut k = j;
        while cur < end && k < b.len() && b[k].0 < end {
            if b[k].0 > cur {
                f((cur, b[k].0));
            }
            cur = cur.max(b[k].1);
            k += 1;
        }
        if cur < end {
            f((cur, end));
        }
    }
}

/// Length of `a \ b` for normalized lists (ns), computed by its own sweep
/// (not as `total − intersection`).
pub fn difference_len(a: &[Interval], b: &[Interval]) -> i64 {
    let mut sum = 0i64;
    for_each_difference(a, b, |(lo, hi)| sum += hi - lo);
    sum
}

/// `a \ b` for normalized lists, normalized.
pub fn difference(a: &[Interval], b: &[Interval]) -> Vec<Interval> {
    let mut out = Vec::new();
    for_each_difference(a, b, |iv| out.push(iv));
    out
}

/// `(total(a), intersection_len(a, b), difference_len(a, b))` for
/// normalized lists, in one sweep: each interval of `a` splits into the
/// part `b` covers (found with a `Covered` cursor) and the rest, so the
/// three sums take the same terms as the three functions do and come out
/// the same. (An interval too long for its length to fit in an `i64` sends
/// the work to the three functions.)
pub fn split_len(a: &[Interval], b: &[Interval]) -> (i64, i64, i64) {
    let mut covered = Covered::new(b);
    let (mut sum, mut inter, mut diff) = (0i64, 0i64, 0i64);
    for &(start, end) in a {
        let Some(len) = end.checked_sub(start) else {
            return (total(a), intersection_len(a, b), difference_len(a, b));
        };
        let part = covered.covered_len(start, end);
        sum += len;
        inter += part;
        diff += len - part;
    }
    (sum, inter, diff)
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

/// [`covered_len`] for many intervals against one normalized list, with a
/// cursor into the list instead of a binary search each time: while the
/// intervals come in start order the cursor only moves forward, so all the
/// queries together cost one pass over the list (an interval that starts
/// before the previous one sends the cursor back to the start).
#[derive(Clone, Debug)]
pub(crate) struct Covered<'a> {
    list: &'a [Interval],
    /// The first interval of `list` that ends after `start`.
    next: usize,
    /// The start of the previous query.
    start: i64,
}

impl<'a> Covered<'a> {
    /// Queries on the normalized list `list`.
    pub fn new(list: &'a [Interval]) -> Covered<'a> {
        Covered {
            list,
            next: 0,
            start: i64::MIN,
        }
    }

    /// Length of the part of `[start, end)` covered by the list (ns), as
    /// [`covered_len`] gives it.
    #[inline]
    pub fn covered_len(&mut self, start: i64, end: i64) -> i64 {
        if start < self.start {
            self.next = 0;
        }
        self.start = start;
        while self.list.get(self.next).is_some_and(|iv| iv.1 <= start) {
            self.next += 1;
        }
        let mut sum = 0;
        for &(a, e) in &self.list[self.next..] {
            if a >= end {
                break;
            }
            let (lo, hi) = (a.max(start), e.min(end));
            if hi > lo {
                sum += hi - lo;
            }
        }
        sum
    }
}

/// A normalized interval list with the running total of lengths: how much
/// of any window `[a, b)` it covers in two binary searches, whatever the
/// number of intervals (the terminal timeline draws each cell from one).
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
        Cover::from_normalized(intersection(&self.iv, &other.iv))
    }

    /// `self \ other`: the parts of `self` that `other` does not cover.
    pub fn subtract(&self, other: &Cover) -> Cover {
        Cover::from_normalized(difference(&self.iv, &other.iv))
    }
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
        let mut rng = fastrand::Rng::with_seed(777);
        let mut next = || rng.i64(0..100);
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
            // More after a look, and a look twice.
            let more = [(i64::MIN, i64::MIN + 5), (t, t + 3), (t - 50, t - 40)];
            let more = &more[..round % 4];
            for &iv in more {
                list.push(iv);
            }
            let mut want: Vec<Interval> = v.iter().chain(more).copied().collect();
            normalize(&mut want);
            assert_eq!(list.normalized(), &want[..], "{v:?} {more:?}");
            assert_eq!(list.normalized(), &want[..]);
        }
        // A first interval that starts at i64::MIN.
        list.clear();
        list.push((i64::MIN, 3));
        list.push((2, 9));
        list.push((20, 30));
        assert_eq!(list.normalized(), &[(i64::MIN, 9), (20, 30)]);
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
        let mut rng = fastrand::Rng::with_seed(12345);
        let mut next = || rng.i64(0..1000);
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

    /// Pseudo-random normalized lists: `count` lists of up to `len`
    /// intervals on `[0, span)`.
    fn random_lists(
        next: &mut impl FnMut() -> i64,
        count: usize,
        len: i64,
        span: i64,
    ) -> Vec<Vec<Interval>> {
        (0..count)
            .map(|_| {
                let mut v: Vec<Interval> = (0..next() % (len + 1))
                    .map(|_| {
                        let a = next() % span;
                        (a, a + next() % (span / 8 + 1))
                    })
                    .collect();
                normalize(&mut v);
                v
            })
            .collect()
    }

    /// Non-negative pseudo-random numbers from `seed` (fastrand's wyrand).
    fn seeded(seed: u64) -> impl FnMut() -> i64 {
        let mut rng = fastrand::Rng::with_seed(seed);
        move || rng.i64(0..i64::MAX)
    }

    #[test]
    fn merged_unions_match_normalizing_everything() {
        let mut next = seeded(31337);
        for round in 0..2000 {
            let count = round % 11;
            let lists = random_lists(&mut next, count, 12, 400);
            let refs: Vec<&[Interval]> = lists.iter().map(Vec::as_slice).collect();
            let mut want: Vec<Interval> = lists.iter().flatten().copied().collect();
            normalize(&mut want);
            let mut got = Vec::new();
            union_into(&mut got, &refs);
            assert_eq!(got, want, "{lists:?}");
            assert_eq!(union_len(&refs), total(&want));
        }
    }

    #[test]
    fn split_len_is_total_intersection_and_difference() {
        let mut next = seeded(4242);
        for _ in 0..2000 {
            let lists = random_lists(&mut next, 2, 10, 300);
            let (a, b) = (&lists[0], &lists[1]);
            assert_eq!(
                split_len(a, b),
                (total(a), intersection_len(a, b), difference_len(a, b)),
                "{a:?} {b:?}"
            );
        }
    }

    #[test]
    fn covered_cursor_matches_covered_len() {
        let mut next = seeded(777);
        for round in 0..500 {
            let list = &random_lists(&mut next, 1, 15, 500)[0];
            let mut cursor = Covered::new(list);
            // Mostly in start order (calls of a lane), sometimes not.
            let mut start = -20;
            for _ in 0..20 {
                start += next() % 40 - if round % 4 == 0 { 25 } else { 0 };
                let end = start + next() % 60 - 5;
                assert_eq!(
                    cursor.covered_len(start, end),
                    covered_len(start, end, list),
                    "[{start}, {end}) on {list:?}"
                );
            }
        }
    }

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
        let mut rng = fastrand::Rng::with_seed(7);
        let mut next = || rng.i64(0..300);
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

    #[test]
    fn difference_cuts_out_covered_parts() {
        assert_eq!(
            difference(&[(0, 10), (20, 30)], &[(2, 4), (8, 22), (25, 26)]),
            vec![(0, 2), (4, 8), (22, 25), (26, 30)]
        );
        assert_eq!(difference(&[(0, 5)], &[]), vec![(0, 5)]);
        assert!(difference(&[(1, 2)], &[(0, 9)]).is_empty());
    }
}
