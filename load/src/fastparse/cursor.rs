//! [`Cursor`]: one line read left to right (keys, integers, floats,
//! strings, `null`, integer arrays), accepting only what serde_json would
//! read to the same value.

use super::keys::{long_key, short_key};
use super::shape::{Memo, KIND_MEMO};
use super::words::{
    digit_run, digits, eight_digit_values, leading_digits, not_digits, word, word_padded,
    zero_bytes, Lit, HIGHS, ONES, POW10,
};
use super::Key;

/// A cursor over one line.
pub(super) struct Cursor<'a> {
    pub(super) b: &'a [u8],
    pub(super) i: usize,
}

impl<'a> Cursor<'a> {
    #[inline]
    pub(super) fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// Skips whitespace; one comparison when there is none.
    #[inline]
    pub(super) fn ws(&mut self) {
        if let Some(&c) = self.b.get(self.i) {
            if c > b' ' {
                return;
            }
        }
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    #[inline]
    pub(super) fn eat(&mut self, c: u8) -> Option<()> {
        self.ws();
        if self.peek() == Some(c) {
            self.i += 1;
            Some(())
        } else {
            None
        }
    }

    /// An object key the parser knows and the `:` after it; the cursor is
    /// on the key's opening quote.
    #[inline]
    pub(super) fn key(&mut self) -> Option<Key> {
        if self.peek() != Some(b'"') {
            return None;
        }
        let start = self.i + 1;
        let w = word_padded(self.b, start);
        let quote = zero_bytes(w ^ (0x22 * ONES));
        let k = if quote != 0 {
            let len = (quote.trailing_zeros() / 8) as usize;
            let mask = (1u64 << (8 * len)) - 1;
            // With no NUL among its bytes (JSON has none in strings), the
            // zero-padded word stands for exactly one key.
            if zero_bytes(w) & mask != 0 {
                return None;
            }
            let k = short_key(w & mask)?;
            self.i = start + len + 1;
            k
        } else {
            long_key(self.raw_string()?.0)?
        };
        // Writers put the colon right after the key.
        if self.b.get(self.i) == Some(&b':') {
            self.i += 1;
        } else {
            self.eat(b':')?;
        }
        Some(k)
    }

    /// The bytes of a string without escapes or control characters, and
    /// whether they are all ASCII; the cursor is on its opening quote.
    #[inline]
    pub(super) fn raw_string(&mut self) -> Option<(&'a [u8], bool)> {
        if self.peek() != Some(b'"') {
            return None;
        }
        let b = self.b;
        let start = self.i + 1;
        let mut j = start;
        let mut high = 0u64;
        // Eight bytes at a time up to the first quote, backslash or control
        // character, then byte by byte.
        while let Some(w) = word(b, j) {
            let special = zero_bytes(w ^ (0x22 * ONES))
                | zero_bytes(w ^ (0x5c * ONES))
                | (w.wrapping_sub(0x20 * ONES) & !w & HIGHS);
            if special != 0 {
                let k = special.trailing_zeros() / 8;
                // The bytes before the first special one (k < 8).
                high |= w & ((1u64 << (8 * k)) - 1);
                j += k as usize;
                break;
            }
            high |= w;
            j += 8;
        }
        loop {
            let c = *b.get(j)?;
            if c == b'"' {
                break;
            }
            if c == b'\\' || c < 0x20 {
                return None;
            }
            high |= u64::from(c);
            j += 1;
        }
        self.i = j + 1;
        Some((b.get(start..j)?, high & HIGHS == 0))
    }

    /// A string value whose opening quote is just before the cursor:
    /// `memo`'s when the line repeats it there (with its closing quote),
    /// else read by [`Cursor::string`] and remembered in `memo` when it is
    /// short and ASCII.
    #[inline(always)]
    pub(super) fn memo_string(
        &mut self,
        memo: &mut Memo,
        slot: usize,
        hits: &mut u8,
    ) -> Option<&'a str> {
        let b = self.b;
        let i = self.i;
        if let Some(l) = &memo.strings[slot] {
            if l.at(b, i, word_padded(b, i)) {
                *hits |= 1 << slot;
                self.i = i + l.len;
                let bytes = b.get(i..self.i - 1)?;
                // SAFETY: these bytes equal the remembered value, which was
                // only remembered when all of its bytes were below 0x80:
                // they are ASCII, which is valid UTF-8.
                return Some(unsafe { std::str::from_utf8_unchecked(bytes) });
            }
        }
        self.i = i - 1;
        memo.syms[slot] = None;
        self.memo_miss(&mut memo.strings[slot])
    }

    /// The span kind whose opening quote is just before the cursor: one of
    /// `memo`'s kinds, or read and remembered in place of the oldest.
    #[inline(always)]
    pub(super) fn kind(&mut self, memo: &mut Memo, hit: &mut u8) -> Option<&'a str> {
        let b = self.b;
        let i = self.i;
        if let Some((slot, len)) = memo.find_kind(b, i) {
            memo.came(slot);
            *hit = slot as u8 + 1;
            self.i = i + len;
            let bytes = b.get(i..self.i - 1)?;
            // SAFETY: these bytes equal a remembered kind, which was only
            // remembered when all of its bytes were below 0x80: they are
            // ASCII, which is valid UTF-8.
            return Some(unsafe { std::str::from_utf8_unchecked(bytes) });
        }
        self.i = i - 1;
        let slot = memo.next_kind % KIND_MEMO;
        memo.next_kind = slot + 1;
        memo.came(slot);
        memo.kind_ids[slot] = None;
        memo.shapes[slot].clear();
        self.memo_miss(&mut memo.kinds[slot])
    }

    /// [`Cursor::memo_string`] when the value is not the remembered one.
    #[inline(never)]
    pub(super) fn memo_miss(&mut self, memo: &mut Option<Lit>) -> Option<&'a str> {
        let (bytes, ascii) = self.raw_string()?;
        if ascii {
            *memo = Lit::of_value(bytes, b'"');
            // SAFETY: every byte is below 0x80, so `bytes` is ASCII, which
            // is valid UTF-8.
            Some(unsafe { std::str::from_utf8_unchecked(bytes) })
        } else {
            std::str::from_utf8(bytes).ok()
        }
    }

    /// A string value, checked to be UTF-8 (ASCII needs no further check).
    #[inline]
    pub(super) fn string(&mut self) -> Option<&'a str> {
        let (bytes, ascii) = self.raw_string()?;
        if ascii {
            // SAFETY: every byte is below 0x80, so `bytes` is ASCII, which
            // is valid UTF-8.
            Some(unsafe { std::str::from_utf8_unchecked(bytes) })
        } else {
            std::str::from_utf8(bytes).ok()
        }
    }

    /// `null`, if the cursor is on it.
    #[inline]
    pub(super) fn null(&mut self) -> bool {
        if self.peek() == Some(b'n') && self.b.get(self.i..self.i + 4) == Some(b"null") {
            self.i += 4;
            true
        } else {
            false
        }
    }

    /// A JSON integer in `0..=u64::MAX` (no sign, no leading zero, no
    /// fraction or exponent: what follows is checked by the caller, which
    /// expects `,`, `}` or `]`).
    #[inline(always)]
    pub(super) fn uint(&mut self) -> Option<u64> {
        // Up to fifteen digits (almost all of them): found and converted in
        // the two words that hold them and what ends them.
        let x = word_padded(self.b, self.i) ^ (0x30 * ONES);
        let nd = not_digits(x);
        if nd != 0 {
            let len = (nd.trailing_zeros() / 8) as usize;
            // No digit, or a leading zero.
            if len == 0 || (len > 1 && x & 0xff == 0) {
                return None;
            }
            self.i += len;
            return Some(leading_digits(x, len));
        }
        if x & 0xff == 0 {
            // A leading zero (eight digits or more).
            return None;
        }
        let y = word_padded(self.b, self.i + 8) ^ (0x30 * ONES);
        let nd = not_digits(y);
        if nd != 0 {
            let more = (nd.trailing_zeros() / 8) as usize;
            let high = eight_digit_values(x);
            self.i += 8 + more;
            return Some(if more == 0 {
                high
            } else {
                high * POW10[more] + leading_digits(y, more)
            });
        }
        let len = digit_run(self.b, self.i);
        let v = digits(self.b, self.i, len)?;
        self.i += len;
        Some(v)
    }

    #[inline]
    pub(super) fn u32(&mut self) -> Option<u32> {
        u32::try_from(self.uint()?).ok()
    }

    /// A JSON integer in the range of `i64`.
    #[inline]
    pub(super) fn int(&mut self) -> Option<i64> {
        if self.peek() == Some(b'-') {
            self.i += 1;
            let m = self.uint()?;
            // serde_json reads `-0` as a float, which an integer refuses.
            if m == 0 {
                None
            } else if m == 1 << 63 {
                Some(i64::MIN)
            } else {
                i64::try_from(m).ok().map(|m| -m)
            }
        } else {
            i64::try_from(self.uint()?).ok()
        }
    }

    /// A JSON number as serde_json reads it into an `f64`.
    pub(super) fn float(&mut self) -> Option<f64> {
        let start = self.i;
        while let Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') = self.peek() {
            self.i += 1;
        }
        let text = self.b.get(start..self.i)?;
        if text.is_empty() {
            return None;
        }
        serde_json::from_slice::<f64>(text).ok()
    }

    /// A non-empty-or-empty array of `i64`, into `out`.
    pub(super) fn int_array(&mut self, out: &mut Vec<i64>) -> Option<()> {
        self.eat(b'[')?;
        out.clear();
        self.ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            return Some(());
        }
        loop {
            // Most elements: a non-negative integer right after the comma
            // and the comma right after it (`uint` refuses what `int` would:
            // no digit, a leading zero).
            let v = match self.peek()? {
                b'0'..=b'9' => i64::try_from(self.uint()?).ok()?,
                _ => {
                    self.ws();
                    self.int()?
                }
            };
            out.push(v);
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(());
                }
                _ => {
                    self.ws();
                    match self.peek()? {
                        b',' => self.i += 1,
                        b']' => {
                            self.i += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
        }
    }
}
