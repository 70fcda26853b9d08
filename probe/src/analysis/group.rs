//! Grouping items by an integer key in linear time, for grouping millions of
//! collectives by sequence number, bucket or operation without sorting them.
//!
//! [`KeyIndex`] numbers the distinct keys in key order and gives every item
//! its key's number, so that callers can update per-key accumulators in one
//! sequential pass over the items (the cache-friendly way for large
//! inputs). [`Groups`] adds the item lists of each key (a counting sort).
//! Dense keys (sequence numbers, bucket ids, interned strings) go through a
//! direct table, sparse ones through a hash map.

use rustc_hash::FxHashMap;

/// A map from integer keys to consecutive ids, for keys that are mostly
/// dense (sequence numbers): keys near the first one seen go through a
/// direct table (sequential keys give sequential memory accesses), the
/// others through a hash map. The table holds at most `4 × keys + 65536`
/// entries, so sparse keys cannot blow it up.
#[derive(Clone, Debug, Default)]
pub(crate) struct IdMap {
    base: Option<u64>,
    dense: Vec<u32>,
    sparse: FxHashMap<u64, u32>,
    len: u32,
}

impl IdMap {
    const SLACK: u64 = 1 << 16;

    /// The id of `key`, assigning the next id (the number of keys seen
    /// before) to a new key.
    #[inline]
    pub fn id(&mut self, key: u64) -> u32 {
        // The common case, inlined: a key already in the direct table (a key
        // below the base wraps around to an offset past its end).
        if let Some(base) = self.base {
            let slot = usize::try_from(key.wrapping_sub(base))
                .ok()
                .and_then(|off| self.dense.get(off));
            if let Some(&id) = slot.filter(|&&id| id != u32::MAX) {
                return id;
            }
        }
        self.id_slow(key)
    }

    /// [`IdMap::id`] for a key not in the direct table yet, or outside it.
    fn id_slow(&mut self, key: u64) -> u32 {
        let base = *self.base.get_or_insert(key);
        if let Some(off) = key.checked_sub(base) {
            if off < self.dense.len() as u64 {
                let slot = &mut self.dense[off as usize];
                if *slot == u32::MAX {
                    *slot = self.len;
                    self.len += 1;
                }
                return *slot;
            }
            if off <= 4 * u64::from(self.len) + Self::SLACK {
                self.dense.resize(off as usize + 1, u32::MAX);
                self.dense[off as usize] = self.len;
                self.len += 1;
                return self.len - 1;
            }
        }
        let next = self.len;
        let id = *self.sparse.entry(key).or_insert(next);
        if id == next {
            self.len += 1;
        }
        id
    }
}

/// The distinct keys of items, sorted, and each item's position among them.
#[derive(Clone, Debug, Default)]
pub(crate) struct KeyIndex {
    /// The distinct keys, ascending.
    pub keys: Vec<u64>,
    /// Per item: the index of its key in `keys`, `u32::MAX` when it has
    /// none.
    pub ids: Vec<u32>,
}

impl KeyIndex {
    /// Indexes items `0..n` by `key(i)`; items whose key is `None` get no
    /// id (the key `u64::MAX` is reserved for that).
    pub fn by(n: usize, key: impl Fn(usize) -> Option<u64>) -> KeyIndex {
        let raw: Vec<u64> = (0..n).map(|i| key(i).unwrap_or(u64::MAX)).collect();
        let (mut lo, mut hi, mut present) = (u64::MAX, 0u64, 0usize);
        for &k in raw.iter().filter(|&&k| k != u64::MAX) {
            lo = lo.min(k);
            hi = hi.max(k);
            present += 1;
        }
        let mut ids: Vec<u32> = Vec::with_capacity(n);
        let mut first_seen: Vec<u64> = Vec::new();
        let new_id = |k: u64, first_seen: &mut Vec<u64>| {
            first_seen.push(k);
            (first_seen.len() - 1) as u32
        };
        if present > 0 && hi - lo <= 2 * present as u64 + 1024 {
            let mut table = vec![u32::MAX; (hi - lo + 1) as usize];
            for &k in &raw {
                ids.push(if k == u64::MAX {
                    u32::MAX
                } else {
                    let slot = &mut table[(k - lo) as usize];
                    if *slot == u32::MAX {
                        *slot = new_id(k, &mut first_seen);
                    }
                    *slot
                });
            }
        } else {
            let mut map: FxHashMap<u64, u32> = FxHashMap::default();
            for &k in &raw {
                ids.push(if k == u64::MAX {
                    u32::MAX
                } else {
                    *map.entry(k).or_insert_with(|| new_id(k, &mut first_seen))
                });
            }
        }
        // Renumber in key order.
        let mut by_key: Vec<u32> = (0..first_seen.len() as u32).collect();
        by_key.sort_unstable_by_key(|&g| first_seen[g as usize]);
        let mut rank = vec![0u32; first_seen.len()];
        for (pos, &g) in by_key.iter().enumerate() {
            rank[g as usize] = pos as u32;
        }
        for id in ids.iter_mut().filter(|id| **id != u32::MAX) {
            *id = rank[*id as usize];
        }
        KeyIndex {
            keys: by_key.iter().map(|&g| first_seen[g as usize]).collect(),
            ids,
        }
    }

    /// Number of distinct keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }
}

/// Items grouped by key: group `g` has key `keys[g]` and the item indices
/// `order[offsets[g]..offsets[g + 1]]` (in their original order). Groups are
/// sorted by key.
#[derive(Clone, Debug, Default)]
pub(crate) struct Groups {
    pub keys: Vec<u64>,
    pub offsets: Vec<usize>,
    pub order: Vec<u32>,
}

impl Groups {
    /// Groups items `0..n` by `key(i)`; items whose key is `None` are left
    /// out.
    pub fn by(n: usize, key: impl Fn(usize) -> Option<u64>) -> Groups {
        let index = KeyIndex::by(n, key);
        let mut offsets = vec![0usize; index.len() + 1];
        for &g in index.ids.iter().filter(|&&g| g != u32::MAX) {
            offsets[g as usize + 1] += 1;
        }
        for i in 1..offsets.len() {
            offsets[i] += offsets[i - 1];
        }
        let mut fill = offsets.clone();
        let mut order = vec![0u32; *offsets.last().unwrap_or(&0)];
        for (i, &g) in index.ids.iter().enumerate() {
            if g != u32::MAX {
                let slot = &mut fill[g as usize];
                order[*slot] = i as u32;
                *slot += 1;
            }
        }
        Groups {
            keys: index.keys,
            offsets,
            order,
        }
    }

    /// Number of groups.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// The item indices of group `g`.
    pub fn items(&self, g: usize) -> &[u32] {
        &self.order[self.offsets[g]..self.offsets[g + 1]]
    }

    /// `(key, items)` for every group, by key.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &[u32])> {
        (0..self.len()).map(move |g| (self.keys[g], self.items(g)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_map_is_consistent_for_dense_and_sparse_keys() {
        let mut m = IdMap::default();
        let keys = [10u64, 11, 12, 10, 5, 1 << 50, 13, 1 << 50, 5, 200_000];
        let ids: Vec<u32> = keys.iter().map(|&k| m.id(k)).collect();
        assert_eq!(ids, vec![0, 1, 2, 0, 3, 4, 5, 4, 3, 6]);
        assert_eq!(m.len, 7);
        assert!(m.dense.len() < 100, "sparse keys stay out of the table");
    }

    #[test]
    fn groups_by_key_in_key_order() {
        let keys = [Some(5u64), None, Some(2), Some(5), Some(9), Some(2)];
        let g = Groups::by(keys.len(), |i| keys[i]);
        let got: Vec<(u64, Vec<u32>)> = g.iter().map(|(k, v)| (k, v.to_vec())).collect();
        assert_eq!(got, vec![(2, vec![2, 5]), (5, vec![0, 3]), (9, vec![4])]);
        assert_eq!(Groups::by(0, |_| None).len(), 0);
        let idx = KeyIndex::by(keys.len(), |i| keys[i]);
        assert_eq!(idx.keys, vec![2, 5, 9]);
        assert_eq!(idx.ids, vec![1, u32::MAX, 0, 1, 2, 0]);
        // Sparse keys take the hash map.
        let sparse = [Some(1u64 << 40), Some(3), Some(1 << 40)];
        let g = Groups::by(3, |i| sparse[i]);
        assert_eq!(g.keys, vec![3, 1 << 40]);
        assert_eq!(g.items(1), &[0, 2]);
    }
}
