//! The keys the fast parser knows: every key's name (the span's optional
//! fields from the contract's list), a perfect hash for keys of up to seven
//! bytes, read as one word, and a lookup for the longer ones.

use super::{Key, SPAN_KEYS};

/// Every key [`parse`] knows, with its name.
pub(super) const ALL_KEYS: [(&[u8], Key); 12 + SPAN_KEYS.len()] = {
    let fixed: [(&[u8], Key); 12] = [
        (b"type", Key::Type),
        (b"kind", Key::Kind),
        (b"step", Key::Step),
        (b"start", Key::Start),
        (b"end", Key::End),
        (b"t", Key::T),
        (b"value", Key::Value),
        (b"level", Key::Level),
        (b"message", Key::Message),
        (b"status", Key::Status),
        (b"t0", Key::T0),
        (b"offsets_ns", Key::Offsets),
    ];
    let mut all: [(&[u8], Key); 12 + SPAN_KEYS.len()] = [(b"", Key::Type); 12 + SPAN_KEYS.len()];
    let mut i = 0;
    while i < fixed.len() {
        all[i] = fixed[i];
        i += 1;
    }
    while i < all.len() {
        all[i] = SPAN_KEYS[i - fixed.len()];
        i += 1;
    }
    all
};

const _: () = assert!(ALL_KEYS.len() <= 32, "parse keeps the keys it saw in a u32");

/// A key of at most eight bytes as a little-endian word, zero-padded.
pub(super) const fn kw(s: &[u8]) -> u64 {
    let mut w = 0u64;
    let mut i = 0;
    while i < s.len() && i < 8 {
        w |= (s[i] as u64) << (8 * i);
        i += 1;
    }
    w
}

/// Multiplier of the perfect hash of the keys of at most seven bytes (the
/// quote that ends them is among the eight bytes read at once) into 32 slots.
/// A key added to the contract's span fields may share a slot: the build then
/// stops at [`KEY_TABLE`], and `cargo test -p probe-load --lib -- --ignored
/// find_key_hash --nocapture` prints a multiplier that separates them all.
pub(super) const KEY_HASH: u64 = 0xe426_9355_9dd8_b063;

pub(super) const fn key_slot(w: u64) -> usize {
    (w.wrapping_mul(KEY_HASH) >> 59) as usize
}

/// The keys of at most seven bytes by the hash of their zero-padded words;
/// building it fails to compile if two keys share a slot.
pub(super) const KEY_TABLE: [(u64, Option<Key>); 32] = {
    let mut t: [(u64, Option<Key>); 32] = [(0, None); 32];
    let mut i = 0;
    while i < ALL_KEYS.len() {
        let (name, key) = ALL_KEYS[i];
        i += 1;
        if name.len() > 7 {
            continue;
        }
        let w = kw(name);
        let slot = key_slot(w);
        assert!(t[slot].1.is_none(), "two keys share a hash slot");
        t[slot] = (w, Some(key));
    }
    t
};

/// The key of at most seven bytes whose bytes, zero-padded, are `w`.
#[inline]
pub(super) fn short_key(w: u64) -> Option<Key> {
    let (k, key) = KEY_TABLE[key_slot(w)];
    if k == w {
        key
    } else {
        None
    }
}

/// The keys of eight bytes and more.
#[inline]
pub(super) fn long_key(k: &[u8]) -> Option<Key> {
    ALL_KEYS
        .iter()
        .find(|(name, _)| name.len() > 7 && *name == k)
        .map(|&(_, key)| key)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Searches a [`KEY_HASH`] under which no two short keys share a slot.
    #[test]
    #[ignore = "a tool: run it when a new key collides (see KEY_HASH)"]
    fn find_key_hash() {
        let words: Vec<u64> = ALL_KEYS
            .iter()
            .filter(|(name, _)| name.len() <= 7)
            .map(|(name, _)| kw(name))
            .collect();
        let mut rng = fastrand::Rng::with_seed(1);
        let found = (0..10_000_000).map(|_| rng.u64(..) | 1).find(|&m| {
            let mut used = 0u32;
            words.iter().all(|&w| {
                let bit = 1u32 << (w.wrapping_mul(m) >> 59);
                let free = used & bit == 0;
                used |= bit;
                free
            })
        });
        let m = found.expect("no multiplier in ten million tries");
        println!("KEY_HASH = {m:#x}");
    }

    #[test]
    fn every_short_key_is_found() {
        for (name, key) in ALL_KEYS.into_iter().filter(|(name, _)| name.len() <= 7) {
            assert_eq!(short_key(kw(name)).map(|k| k as u32), Some(key as u32));
        }
        assert!(short_key(kw(b"tx")).is_none());
        assert!(short_key(0).is_none());
    }
}
