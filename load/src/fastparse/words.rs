//! Word-at-a-time byte primitives of the fast parser: eight bytes of a line
//! as one little-endian word, zero bytes and digits found with bit tricks,
//! eight digits converted at once, and the masked literals ([`Lit`]) the
//! template compares a line's bytes with.

/// Eight bytes of `b` from `i` as a little-endian word, if there are eight.
#[inline(always)]
pub(super) fn word(b: &[u8], i: usize) -> Option<u64> {
    let w = b.get(i..i + 8)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(w);
    Some(u64::from_le_bytes(a))
}

/// Up to eight bytes of `b` from `i`, zero-padded past its end.
#[inline(always)]
pub(super) fn word_padded(b: &[u8], i: usize) -> u64 {
    if let Some(w) = word(b, i) {
        return w;
    }
    word_tail(b, i)
}

/// [`word_padded`] near the end of `b`.
#[cold]
#[inline(never)]
pub(super) fn word_tail(b: &[u8], i: usize) -> u64 {
    let rest = b.get(i..).unwrap_or(&[]);
    let mut a = [0u8; 8];
    a[..rest.len()].copy_from_slice(rest);
    u64::from_le_bytes(a)
}

pub(super) const ONES: u64 = 0x0101_0101_0101_0101;
pub(super) const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `w` that is zero, and possibly of bytes
/// above one that is (never of bytes below the first zero byte).
#[inline]
pub(super) fn zero_bytes(w: u64) -> u64 {
    w.wrapping_sub(ONES) & !w & HIGHS
}

/// The number written by eight digit values 0..=9, one per byte, the
/// most significant in the lowest byte.
#[inline]
pub(super) fn eight_digit_values(v: u64) -> u64 {
    let v = (v * 10 + (v >> 8)) & 0x00ff_00ff_00ff_00ff;
    let v = (v * 100 + (v >> 16)) & 0x0000_ffff_0000_ffff;
    (v * 10000 + (v >> 32)) & 0xffff_ffff
}

/// The last `k` (1..=8) bytes of the word `w` xor `'0'` (digit values where
/// they are digits), the bytes before them cleared: ready for
/// [`eight_digit_values`] once they are known to be digits.
#[inline(always)]
pub(super) fn last_bytes(w: u64, k: usize) -> u64 {
    (w ^ (0x30 * ONES)) & (u64::MAX << (8 * (8 - k)))
}

/// `10^k` for `k` in `0..8`.
pub(super) const POW10: [u64; 8] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000];

/// The high bit of each byte of `x` (digits xor `'0'`) that is not a
/// digit.
#[inline]
pub(super) fn not_digits(x: u64) -> u64 {
    (x.wrapping_add(0x76 * ONES) | x) & HIGHS
}

/// The value of the first `k` (1..=8) digits of `x` (digits xor `'0'`,
/// the first in the lowest byte).
#[inline]
pub(super) fn leading_digits(x: u64, k: usize) -> u64 {
    debug_assert!((1..=8).contains(&k));
    eight_digit_values(x << (64 - 8 * k as u32))
}

/// The value of the first `k` (1..=8) bytes of `x` (bytes xor `'0'`), if
/// they are all digits.
#[inline(always)]
pub(super) fn head(x: u64, k: usize) -> Option<u64> {
    let high = HIGHS >> (64 - 8 * k as u32);
    if not_digits(x) & high == 0 {
        Some(leading_digits(x, k))
    } else {
        None
    }
}

/// How many digits follow `i` in `b` (counted up to 24: any run longer
/// than twenty digits is refused by [`digits`] anyway).
#[inline(always)]
pub(super) fn digit_run(b: &[u8], i: usize) -> usize {
    let mut len = 0;
    while len < 24 {
        let nd = not_digits(word_padded(b, i + len) ^ (0x30 * ONES));
        if nd != 0 {
            return len + (nd.trailing_zeros() / 8) as usize;
        }
        len += 8;
    }
    len
}

/// The value of the `k` (1..=8) digits of `b` that end at `e`, if they are
/// digits: the word that ends there is read whole and the bytes before the
/// digits cleared (near the start of `b`, the digits are read padded).
#[inline(always)]
pub(super) fn digits_ending_at(b: &[u8], e: usize, k: usize) -> Option<u64> {
    let Some(w) = e.checked_sub(8).and_then(|s| word(b, s)) else {
        return head(word_padded(b, e - k) ^ (0x30 * ONES), k);
    };
    let x = last_bytes(w, k);
    if not_digits(x) == 0 {
        Some(eight_digit_values(x))
    } else {
        None
    }
}

/// The JSON integer written by the `len` bytes of `b` at `i`, if they are
/// all digits without a leading zero (`0` itself aside) and the value fits
/// in a `u64`. The caller knows where the run ends ([`digit_run`], or a
/// line shape's value slot).
#[inline(always)]
pub(super) fn digits(b: &[u8], i: usize, len: usize) -> Option<u64> {
    if len > 1 && b.get(i) == Some(&b'0') {
        return None;
    }
    let end = i + len;
    match len {
        1..=8 => digits_ending_at(b, end, len),
        9..=16 => Some(
            digits_ending_at(b, end - 8, len - 8)? * 100_000_000 + digits_ending_at(b, end, 8)?,
        ),
        17..=20 => {
            let low = digits_ending_at(b, end - 8, 8)? * 100_000_000 + digits_ending_at(b, end, 8)?;
            // Nineteen digits always fit, twenty may not.
            digits_ending_at(b, end - 16, len - 16)?
                .checked_mul(10_000_000_000_000_000)?
                .checked_add(low)
        }
        _ => None,
    }
}

/// The bytes from the comma before a key to the colon after it (and, for a
/// string value, its opening quote), as at most two little-endian words
/// with masks of the bytes they hold.
#[derive(Clone, Copy)]
pub(super) struct Lit {
    pub(super) w0: u64,
    pub(super) m0: u64,
    pub(super) w1: u64,
    pub(super) m1: u64,
    pub(super) len: usize,
}

/// [`Lit`] of `s` (at most 16 bytes).
pub(super) const fn lit(s: &[u8]) -> Lit {
    assert!(s.len() <= 16, "a template literal is longer than two words");
    let (mut w0, mut m0, mut w1, mut m1) = (0u64, 0u64, 0u64, 0u64);
    let mut i = 0;
    while i < s.len() {
        if i < 8 {
            w0 |= (s[i] as u64) << (8 * i);
            m0 |= 0xff << (8 * i);
        } else {
            w1 |= (s[i] as u64) << (8 * (i - 8));
            m1 |= 0xff << (8 * (i - 8));
        }
        i += 1;
    }
    Lit {
        w0,
        m0,
        w1,
        m1,
        len: s.len(),
    }
}

impl Lit {
    /// The literal of `s` followed by `end`, if it fits in two words.
    pub(super) fn of_value(s: &[u8], end: u8) -> Option<Lit> {
        if s.len() >= 16 {
            return None;
        }
        let mut a = [0u8; 16];
        a[..s.len()].copy_from_slice(s);
        a[s.len()] = end;
        let len = s.len() + 1;
        let mask = |n: usize| -> u64 {
            match n {
                0 => 0,
                8.. => u64::MAX,
                n => (1u64 << (8 * n)) - 1,
            }
        };
        let mut w = [0u8; 8];
        w.copy_from_slice(&a[..8]);
        let w0 = u64::from_le_bytes(w);
        w.copy_from_slice(&a[8..]);
        let w1 = u64::from_le_bytes(w);
        Some(Lit {
            w0,
            m0: mask(len.min(8)),
            w1,
            m1: mask(len.saturating_sub(8)),
            len,
        })
    }

    /// Whether `b` holds the literal at `i`.
    #[inline(always)]
    pub(super) fn at(&self, b: &[u8], i: usize, w0: u64) -> bool {
        w0 & self.m0 == self.w0 && (self.m1 == 0 || word_padded(b, i + 8) & self.m1 == self.w1)
    }
}
