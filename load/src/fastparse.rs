//! A hand-written parser for the common shapes of trace lines.
//!
//! Writers of the format (this crate's [`crate::trace::TraceWriter`], the
//! Python module) write the same few record shapes millions of times: flat
//! objects with fixed key names, plain integers and short strings without
//! escapes. [`parse`] reads exactly those, straight from the line's bytes,
//! without allocating (except for a `grad_ready` record's offsets, which go
//! to a buffer the caller reuses).
//!
//! It reads eight bytes at a time: keys are looked up by their bytes as one
//! word, integers are converted eight digits at once, and strings are
//! scanned for their closing quote a word at a time while noting whether
//! any byte is non-ASCII; only such strings go through UTF-8 validation.
//!
//! Span lines written by this crate's writer are first tried against a
//! template (`span_template`): the keys come in the writer's field order,
//! so the bytes between two values are compared with the literal expected
//! there (`,"start":`, `,"op":"`...) as two masked words, optional keys
//! being skipped over, and string values equal to the previous line's (the
//! same op, dtype, transport; one of the last few kinds) are recognised by
//! the same comparison ([`Memo`]). Any deviation (another order,
//! whitespace, `null`, an escape, an unknown key) sends the line to the
//! general parser below, which reads every line the template reads to the
//! same fields.
//!
//! A span line the template read also becomes the [`Shape`] of its kind:
//! its bytes with its integers blanked out, and what the reader made of it
//! ([`Proto`]). The writer writes the lines of one kind alike (same keys,
//! same strings, integers of the same widths), so most lines are then
//! recognised by comparing them with one shape a word at a time, their
//! integers read where the shape says, and their spans made by the reader
//! from the prototype ([`Memo::read_by_shape`]); any difference sends the
//! line to the template again.
//!
//! It accepts a line only when it is sure serde_json would read the same
//! values from it, and says "not mine" (`false`) for everything else: JSON
//! escapes, keys it does not know, `args` objects, nested values, numbers
//! with a fraction or exponent where an integer is expected, integers out of
//! range, duplicate keys, record types other than the hot ones, malformed
//! JSON. The reader then parses the line with serde_json as it always did,
//! so every error message and every unusual record is handled by one path
//! only, and both paths produce the same model.

/// The values of one line's keys, as the reader's serde path would see them.
///
/// Every field is `None` when its key is absent or `null` (`value`, whose
/// `null` means NaN, excepted).
#[derive(Default, Debug, PartialEq)]
pub(crate) struct Fields<'a> {
    pub ty: Option<&'a str>,
    pub kind: Option<&'a str>,
    pub step: Option<u64>,
    pub start: Option<u64>,
    pub end: Option<u64>,
    pub queued: Option<u64>,
    pub name: Option<&'a str>,
    pub lane: Option<&'a str>,
    pub bucket: Option<u32>,
    pub bytes: Option<u64>,
    pub params: Option<u32>,
    pub seq: Option<u64>,
    pub op: Option<&'a str>,
    pub algo: Option<&'a str>,
    pub transport: Option<&'a str>,
    pub peer: Option<u32>,
    pub dtype: Option<&'a str>,
    pub device: Option<u32>,
    pub stream: Option<u64>,
    pub category: Option<&'a str>,
    pub correlation: Option<u64>,
    pub t: Option<u64>,
    pub value: Option<f64>,
    pub level: Option<&'a str>,
    pub message: Option<&'a str>,
    pub status: Option<&'a str>,
    /// A `grad_ready` record's `t0`.
    pub t0: Option<u64>,
    /// Whether the line had `offsets_ns`; the values are in the buffer
    /// given to [`parse`].
    pub has_offsets: bool,
    /// Bit `i` set: the template read string slot `i` of [`Memo`] as a
    /// repeat of its remembered value (see [`Memo::sym`]).
    pub memo_hits: u8,
    /// One plus the [`Memo`] kind slot the template read `kind` from as a
    /// repeat; 0 when it did not (see [`Memo::kind_id`]).
    pub kind_hit: u8,
}

/// The record types [`parse`] takes on.
const HOT_TYPES: [&str; 6] = ["span", "instant", "counter", "log", "end", "grad_ready"];

/// The keys [`parse`] knows.
#[derive(Clone, Copy)]
enum Key {
    Type,
    Kind,
    Step,
    Start,
    End,
    Queued,
    Name,
    Lane,
    Bucket,
    Bytes,
    Params,
    Seq,
    Op,
    Algo,
    Transport,
    Peer,
    Dtype,
    Device,
    Stream,
    Category,
    Correlation,
    T,
    Value,
    Level,
    Message,
    Status,
    T0,
    Offsets,
}

/// A key of at most eight bytes as a little-endian word, zero-padded.
const fn kw(s: &[u8]) -> u64 {
    let mut w = 0u64;
    let mut i = 0;
    while i < s.len() && i < 8 {
        w |= (s[i] as u64) << (8 * i);
        i += 1;
    }
    w
}

/// The keys of at most seven bytes (the quote that ends them is among the
/// eight bytes read at once).
const SHORT_KEYS: [(&[u8], Key); 24] = [
    (b"type", Key::Type),
    (b"kind", Key::Kind),
    (b"step", Key::Step),
    (b"start", Key::Start),
    (b"end", Key::End),
    (b"queued", Key::Queued),
    (b"name", Key::Name),
    (b"lane", Key::Lane),
    (b"bucket", Key::Bucket),
    (b"bytes", Key::Bytes),
    (b"params", Key::Params),
    (b"seq", Key::Seq),
    (b"op", Key::Op),
    (b"algo", Key::Algo),
    (b"peer", Key::Peer),
    (b"dtype", Key::Dtype),
    (b"device", Key::Device),
    (b"stream", Key::Stream),
    (b"t", Key::T),
    (b"value", Key::Value),
    (b"level", Key::Level),
    (b"message", Key::Message),
    (b"status", Key::Status),
    (b"t0", Key::T0),
];

/// Multiplier of the perfect hash of [`SHORT_KEYS`] into 32 slots.
const KEY_HASH: u64 = 0xe426_9355_9dd8_b063;

const fn key_slot(w: u64) -> usize {
    (w.wrapping_mul(KEY_HASH) >> 59) as usize
}

/// [`SHORT_KEYS`] by the hash of their zero-padded words; building it
/// fails to compile if two keys share a slot.
const KEY_TABLE: [(u64, Option<Key>); 32] = {
    let mut t: [(u64, Option<Key>); 32] = [(0, None); 32];
    let mut i = 0;
    while i < SHORT_KEYS.len() {
        let w = kw(SHORT_KEYS[i].0);
        let slot = key_slot(w);
        assert!(t[slot].1.is_none(), "two keys share a hash slot");
        t[slot] = (w, Some(SHORT_KEYS[i].1));
        i += 1;
    }
    t
};

/// The key of at most seven bytes whose bytes, zero-padded, are `w`.
#[inline]
fn short_key(w: u64) -> Option<Key> {
    let (k, key) = KEY_TABLE[key_slot(w)];
    if k == w {
        key
    } else {
        None
    }
}

/// The keys of eight bytes and more.
#[inline]
fn long_key(k: &[u8]) -> Option<Key> {
    match k {
        b"category" => Some(Key::Category),
        b"transport" => Some(Key::Transport),
        b"correlation" => Some(Key::Correlation),
        b"offsets_ns" => Some(Key::Offsets),
        _ => None,
    }
}

/// Eight bytes of `b` from `i` as a little-endian word, if there are eight.
#[inline(always)]
fn word(b: &[u8], i: usize) -> Option<u64> {
    let w = b.get(i..i + 8)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(w);
    Some(u64::from_le_bytes(a))
}

/// Up to eight bytes of `b` from `i`, zero-padded past its end.
#[inline(always)]
fn word_padded(b: &[u8], i: usize) -> u64 {
    if let Some(w) = word(b, i) {
        return w;
    }
    word_tail(b, i)
}

/// [`word_padded`] near the end of `b`.
#[cold]
#[inline(never)]
fn word_tail(b: &[u8], i: usize) -> u64 {
    let rest = b.get(i..).unwrap_or(&[]);
    let mut a = [0u8; 8];
    a[..rest.len()].copy_from_slice(rest);
    u64::from_le_bytes(a)
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `w` that is zero, and possibly of bytes
/// above one that is (never of bytes below the first zero byte).
#[inline]
fn zero_bytes(w: u64) -> u64 {
    w.wrapping_sub(ONES) & !w & HIGHS
}

/// The number written by eight digit values 0..=9, one per byte, the
/// most significant in the lowest byte.
#[inline]
fn eight_digit_values(v: u64) -> u64 {
    let v = (v * 10 + (v >> 8)) & 0x00ff_00ff_00ff_00ff;
    let v = (v * 100 + (v >> 16)) & 0x0000_ffff_0000_ffff;
    (v * 10000 + (v >> 32)) & 0xffff_ffff
}

/// The last `k` (1..=8) bytes of the word `w` xor `'0'` (digit values where
/// they are digits), the bytes before them cleared: ready for
/// [`eight_digit_values`] once they are known to be digits.
#[inline(always)]
fn last_bytes(w: u64, k: usize) -> u64 {
    (w ^ (0x30 * ONES)) & (u64::MAX << (8 * (8 - k)))
}

/// `10^k` for `k` in `0..8`.
const POW10: [u64; 8] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000];

/// A cursor over one line.
struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

/// The high bit of each byte of `x` (digits xor `'0'`) that is not a
/// digit.
#[inline]
fn not_digits(x: u64) -> u64 {
    (x.wrapping_add(0x76 * ONES) | x) & HIGHS
}

/// The value of the first `k` (1..=8) digits of `x` (digits xor `'0'`,
/// the first in the lowest byte).
#[inline]
fn leading_digits(x: u64, k: usize) -> u64 {
    debug_assert!((1..=8).contains(&k));
    eight_digit_values(x << (64 - 8 * k as u32))
}

/// The value of the first `k` (1..=8) bytes of `x` (bytes xor `'0'`), if
/// they are all digits.
#[inline(always)]
fn head(x: u64, k: usize) -> Option<u64> {
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
fn digit_run(b: &[u8], i: usize) -> usize {
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
fn digits_ending_at(b: &[u8], e: usize, k: usize) -> Option<u64> {
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
fn digits(b: &[u8], i: usize, len: usize) -> Option<u64> {
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

impl<'a> Cursor<'a> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// Skips whitespace; one comparison when there is none.
    #[inline]
    fn ws(&mut self) {
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
    fn eat(&mut self, c: u8) -> Option<()> {
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
    fn key(&mut self) -> Option<Key> {
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
    fn raw_string(&mut self) -> Option<(&'a [u8], bool)> {
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
    fn memo_string(&mut self, memo: &mut Memo, slot: usize, hits: &mut u8) -> Option<&'a str> {
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
    fn kind(&mut self, memo: &mut Memo, hit: &mut u8) -> Option<&'a str> {
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
    fn memo_miss(&mut self, memo: &mut Option<Lit>) -> Option<&'a str> {
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
    fn string(&mut self) -> Option<&'a str> {
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
    fn null(&mut self) -> bool {
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
    fn uint(&mut self) -> Option<u64> {
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
    fn u32(&mut self) -> Option<u32> {
        u32::try_from(self.uint()?).ok()
    }

    /// A JSON integer in the range of `i64`.
    #[inline]
    fn int(&mut self) -> Option<i64> {
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
    fn float(&mut self) -> Option<f64> {
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
    fn int_array(&mut self, out: &mut Vec<i64>) -> Option<()> {
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

/// The bytes from the comma before a key to the colon after it (and, for a
/// string value, its opening quote), as at most two little-endian words
/// with masks of the bytes they hold.
#[derive(Clone, Copy)]
struct Lit {
    w0: u64,
    m0: u64,
    w1: u64,
    m1: u64,
    len: usize,
}

/// [`Lit`] of `s` (at most 16 bytes).
const fn lit(s: &[u8]) -> Lit {
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
    fn of_value(s: &[u8], end: u8) -> Option<Lit> {
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
    fn at(&self, b: &[u8], i: usize, w0: u64) -> bool {
        w0 & self.m0 == self.w0 && (self.m1 == 0 || word_padded(b, i + 8) & self.m1 == self.w1)
    }
}

/// What [`parse`] remembers from one line to the next: the last value of
/// each string field of a span, when it was short and ASCII, so that a
/// line repeating it is read by comparing two words.
///
/// Span kinds alternate (a bucket's ready window, its collective, its
/// writeback...), so the last few distinct ones are kept, replaced in turn,
/// each with the [`Shape`]s of its last lines.
#[derive(Default)]
pub(crate) struct Memo {
    strings: [Option<Lit>; 7],
    kinds: [Option<Lit>; KIND_MEMO],
    next_kind: usize,
    /// The slot of the last span's kind.
    last_kind: usize,
    /// For each slot, the slot of the kind that came after it last time:
    /// the first guess for the next line's kind (a step's kinds come in
    /// the same order every time).
    after: [usize; KIND_MEMO],
    /// The reader's interned id of each remembered string, once it set it:
    /// cleared whenever the string is replaced. The ids belong to one
    /// reader (one file), which owns this memo.
    syms: [Option<crate::model::Sym>; 7],
    /// The reader's resolved kind of each remembered kind, likewise.
    kind_ids: [Option<crate::trace::SpanKind>; KIND_MEMO],
    /// The last line shapes seen for each remembered kind, the latest
    /// first; cleared with the kind.
    shapes: [Vec<Shape>; KIND_MEMO],
    /// The line the template just read, while it may still become a shape:
    /// its kind's slot and where its kind ends.
    pending: Option<(usize, usize)>,
    /// Where the template found the integers of the line it just read.
    values: Vec<(Num, Value)>,
}

/// [`Memo`]'s string slots, as bits of [`Fields::memo_hits`].
pub(crate) const MEMO_NAME: usize = 0;
pub(crate) const MEMO_OP: usize = 2;
pub(crate) const MEMO_ALGO: usize = 3;
pub(crate) const MEMO_TRANSPORT: usize = 4;
pub(crate) const MEMO_DTYPE: usize = 5;

impl Memo {
    /// The id remembered for string slot `slot`, valid when the line's
    /// [`Fields::memo_hits`] has the slot's bit.
    #[inline(always)]
    pub(crate) fn sym(&self, slot: usize) -> Option<crate::model::Sym> {
        self.syms[slot]
    }

    /// Remembers `sym` as the id of string slot `slot`'s value; only for a
    /// line whose [`Fields::memo_hits`] has the slot's bit.
    #[inline(always)]
    pub(crate) fn set_sym(&mut self, slot: usize, sym: Option<crate::model::Sym>) {
        self.syms[slot] = sym;
    }

    /// The kind remembered for a line's [`Fields::kind_hit`] (non-zero).
    #[inline(always)]
    pub(crate) fn kind_id(&self, hit: u8) -> Option<crate::trace::SpanKind> {
        self.kind_ids[usize::from(hit) - 1]
    }

    /// Remembers the kind of a line's [`Fields::kind_hit`] (non-zero).
    #[inline(always)]
    pub(crate) fn set_kind_id(&mut self, hit: u8, kind: crate::trace::SpanKind) {
        self.kind_ids[usize::from(hit) - 1] = Some(kind);
    }
}

/// How many span kinds [`Memo`] keeps.
const KIND_MEMO: usize = 8;

/// The optional keys of a span after its `kind`, in the order
/// [`crate::trace::TraceWriter`] writes them (the field order of
/// [`crate::trace::SpanRecord`]), each with the bytes that introduce it.
const SPAN_TEMPLATE: [(Lit, Key); 19] = [
    (lit(b",\"step\":"), Key::Step),
    (lit(b",\"start\":"), Key::Start),
    (lit(b",\"end\":"), Key::End),
    (lit(b",\"queued\":"), Key::Queued),
    (lit(b",\"name\":\""), Key::Name),
    (lit(b",\"lane\":\""), Key::Lane),
    (lit(b",\"bucket\":"), Key::Bucket),
    (lit(b",\"bytes\":"), Key::Bytes),
    (lit(b",\"params\":"), Key::Params),
    (lit(b",\"seq\":"), Key::Seq),
    (lit(b",\"op\":\""), Key::Op),
    (lit(b",\"algo\":\""), Key::Algo),
    (lit(b",\"transport\":\""), Key::Transport),
    (lit(b",\"peer\":"), Key::Peer),
    (lit(b",\"dtype\":\""), Key::Dtype),
    (lit(b",\"device\":"), Key::Device),
    (lit(b",\"stream\":"), Key::Stream),
    (lit(b",\"category\":\""), Key::Category),
    (lit(b",\"correlation\":"), Key::Correlation),
];

/// How every span line of this crate's writer begins.
const SPAN_PREFIX: &[u8] = b"{\"type\":\"span\",\"kind\":\"";

/// The template fast path: a span line exactly as the writer writes it
/// (compact, keys in [`SPAN_TEMPLATE`] order, any of them left out, no
/// `null`, no escapes, no `args`), read by comparing the bytes between the
/// values with the expected literals. `None` on any deviation; the caller
/// then clears `f` and runs the general parser, which reads every line
/// this one reads to the same fields.
///
/// It notes where the line's integers are ([`Memo::values`]), for
/// [`Memo::learn_shape`].
#[inline]
fn span_template<'a>(b: &'a [u8], f: &mut Fields<'a>, memo: &mut Memo) -> Option<()> {
    if b.get(..SPAN_PREFIX.len())? != SPAN_PREFIX {
        return None;
    }
    let mut c = Cursor {
        b,
        i: SPAN_PREFIX.len(),
    };
    f.ty = Some("span");
    f.kind = Some(c.kind(memo, &mut f.kind_hit)?);
    let from = c.i;
    memo.values.clear();
    let mut next = 0;
    loop {
        let w0 = word_padded(b, c.i);
        if w0 & 0xff == u64::from(b'}') {
            if c.i + 1 != b.len() {
                return None;
            }
            if let Some(kind) = usize::from(f.kind_hit).checked_sub(1) {
                memo.pending = Some((kind, from));
            }
            return Some(());
        }
        // The first key of the rest of the template whose literal is here
        // (keys may be absent, never out of order).
        let (l, key) = loop {
            let (l, key) = *SPAN_TEMPLATE.get(next)?;
            next += 1;
            if l.at(b, c.i, w0) {
                break (l, key);
            }
        };
        // Past the literal: on the value, or after a string's opening quote.
        c.i += l.len;
        let at = c.i;
        let num = match key {
            Key::Step => {
                f.step = Some(c.uint()?);
                Num::Step
            }
            Key::Start => {
                f.start = Some(c.uint()?);
                Num::Start
            }
            Key::End => {
                f.end = Some(c.uint()?);
                Num::End
            }
            Key::Queued => {
                f.queued = Some(c.uint()?);
                Num::Queued
            }
            Key::Bucket => {
                f.bucket = Some(c.u32()?);
                Num::Bucket
            }
            Key::Bytes => {
                f.bytes = Some(c.uint()?);
                Num::Bytes
            }
            Key::Params => {
                f.params = Some(c.u32()?);
                Num::Params
            }
            Key::Seq => {
                f.seq = Some(c.uint()?);
                Num::Seq
            }
            Key::Peer => {
                f.peer = Some(c.u32()?);
                Num::Peer
            }
            Key::Device => {
                f.device = Some(c.u32()?);
                Num::Device
            }
            Key::Stream => {
                f.stream = Some(c.uint()?);
                Num::Stream
            }
            Key::Correlation => {
                f.correlation = Some(c.uint()?);
                Num::Correlation
            }
            // String values: back onto the opening quote the literal ended
            // with. A shape compares them as bytes.
            Key::Name => {
                f.name = Some(c.memo_string(memo, MEMO_NAME, &mut f.memo_hits)?);
                continue;
            }
            Key::Lane => {
                f.lane = Some(c.memo_string(memo, 1, &mut f.memo_hits)?);
                continue;
            }
            Key::Op => {
                f.op = Some(c.memo_string(memo, MEMO_OP, &mut f.memo_hits)?);
                continue;
            }
            Key::Algo => {
                f.algo = Some(c.memo_string(memo, MEMO_ALGO, &mut f.memo_hits)?);
                continue;
            }
            Key::Transport => {
                f.transport = Some(c.memo_string(memo, MEMO_TRANSPORT, &mut f.memo_hits)?);
                continue;
            }
            Key::Dtype => {
                f.dtype = Some(c.memo_string(memo, MEMO_DTYPE, &mut f.memo_hits)?);
                continue;
            }
            Key::Category => {
                f.category = Some(c.memo_string(memo, 6, &mut f.memo_hits)?);
                continue;
            }
            _ => return None,
        };
        if let Some(v) = Value::new(at, c.i - at) {
            memo.values.push((num, v));
        }
    }
}

/// The integer-valued keys of a span, as indexes into [`Nums::values`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Num {
    Step,
    Start,
    End,
    Queued,
    Bucket,
    Bytes,
    Params,
    Seq,
    Peer,
    Device,
    Stream,
    Correlation,
}

/// The integers of a span line read by a [`Shape`].
#[derive(Default)]
pub(crate) struct Nums {
    values: [u64; 12],
    present: u16,
}

impl Nums {
    /// The value of `n`, if the line has it.
    #[inline(always)]
    pub(crate) fn get(&self, n: Num) -> Option<u64> {
        (self.present & (1 << n as u16) != 0).then_some(self.values[n as usize])
    }

    /// The line's integers that are extra fields of its span (zero where
    /// the line has none: the shape says which it has).
    #[inline(always)]
    pub(crate) fn extra_key(&self) -> [u64; 5] {
        [
            Num::Params,
            Num::Peer,
            Num::Device,
            Num::Stream,
            Num::Correlation,
        ]
        .map(|n| self.values[n as usize])
    }

    /// The value of `n` (a key of 32-bit values), if the line has it;
    /// `Err` when it is out of range.
    #[inline(always)]
    pub(crate) fn get_u32(&self, n: Num) -> Result<Option<u32>, ()> {
        self.get(n).map(u32::try_from).transpose().map_err(|_| ())
    }
}

/// Where a span line holds one integer: the offset of its first digit
/// and its number of digits.
#[derive(Clone, Copy)]
struct Value {
    at: u16,
    len: u16,
}

/// The leading digits of a long integer (seventeen digits or more: a
/// timestamp) in the last line read by a [`Shape`], to be reused by the
/// next line when they are the same: lines of a kind come close together
/// in time, so their timestamps mostly differ only in the last eight
/// digits.
#[derive(Clone, Copy, Default)]
struct Leading {
    /// The sixteen bytes before the integer's last eight digits, as two
    /// words: its other digits and what the shape has before them (which
    /// every line of the shape has).
    key: (u64, u64),
    /// The value of the digits before the last eight, times `10^8`
    /// (`None` when that overflows: twenty digits too many for a `u64`).
    scaled: Option<u64>,
    /// Whether `key` and `scaled` are set.
    set: bool,
}

impl Leading {
    /// The integer of `len` (17..=20) digits ending at `end` (24 or more)
    /// in `b`, digits the shape checked ([`Shape::fits`]), as [`digits`]
    /// reads it, with its leading digits reused when they are the bytes of
    /// the last line's and remembered otherwise.
    #[inline(always)]
    fn digits(&mut self, b: &[u8], end: usize, len: usize) -> Option<u64> {
        // The three words before `end`: the last eight digits, the eight
        // before them, and the first ones with what precedes them.
        let w = b.get(end.checked_sub(24)?..end)?;
        let word = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&w[i..i + 8]);
            u64::from_le_bytes(a) ^ (0x30 * ONES)
        };
        let (first, mid, last) = (word(0), word(8), word(16));
        let key = (mid, first);
        if !(self.set && self.key == key) {
            let high = eight_digit_values(first & (u64::MAX << (8 * (24 - len))));
            *self = Leading {
                key,
                scaled: (high * 100_000_000 + eight_digit_values(mid)).checked_mul(100_000_000),
                set: true,
            };
        }
        // Nineteen digits always fit, twenty may not.
        self.scaled?.checked_add(eight_digit_values(last))
    }
}

/// The value of the `k` (1..=8) digits of `b` that end at `e` (8 or
/// more), bytes a [`Shape`] already checked are digits.
#[inline(always)]
fn checked_digits(b: &[u8], e: usize, k: usize) -> Option<u64> {
    let w = word(b, e.checked_sub(8)?)?;
    Some(eight_digit_values(last_bytes(w, k)))
}

impl Value {
    /// `None` when the offsets do not fit (in a line too long for a
    /// [`Shape`] anyway).
    fn new(at: usize, len: usize) -> Option<Value> {
        Some(Value {
            at: u16::try_from(at).ok()?,
            len: u16::try_from(len).ok()?,
        })
    }
}

/// How many shapes [`Memo`] keeps for each remembered span kind.
const SHAPES_PER_KIND: usize = 2;

/// The longest span line a [`Shape`] is made of, in bytes.
const SHAPE_MAX: usize = 512;

/// The shape of a span line the template read: its bytes with the digits
/// of its integers blanked out, where its integers are, and what the
/// reader made of it.
///
/// The writer writes the lines of one kind alike: the same keys, the same
/// strings (op, dtype, transport...) and integers of the same widths (all
/// timestamps have nineteen digits). Another line of the kind with the
/// same length, whose bytes equal the shape's outside the integers and
/// whose integers are plain digits without a leading zero, is a line the
/// template reads to the same keys and strings, which the reader turns
/// into the same span but for the integers: the reader then makes its span
/// from the shape's [`Proto`] and the integers read where the shape says,
/// without looking for keys, literals, the ends of numbers or strings.
struct Shape {
    /// The whole line's length.
    len: usize,
    /// Where the compared bytes begin (after the kind's closing quote: the
    /// prefix and kind are checked before the shape is chosen).
    from: usize,
    /// What the line's bytes from `from` may be, sixteen at a time (whole
    /// blocks only): the line's own bytes outside its integers, digits
    /// (without a leading zero) in them.
    blocks: Vec<Block>,
    /// The same for the line's last sixteen bytes (which hold the bytes of
    /// the rest that `blocks` leaves out).
    last: Block,
    /// The line's integers.
    slots: Vec<Slot>,
    /// Which of [`Nums`]'s keys the line has.
    present: u16,
    /// What the reader made of the line.
    proto: Proto,
}

/// What the reader made of the line a [`Shape`] was learnt from: enough to
/// make the span of a line of the same shape from its integers.
#[derive(Clone, Copy)]
pub(crate) struct Proto {
    /// The line's span (its name, op, lane, kind, category and extra
    /// fields are those of every line of the shape).
    pub span: crate::model::Span,
    /// The line's extra fields when some of them are integers of the line
    /// (params, peer...): they are then looked up again with the line's.
    pub extra: Option<crate::model::SpanExtra>,
    /// The id the reader gave the extra fields of the last line read by
    /// the shape, and that line's integers among them
    /// ([`Nums::extra_key`]): the next line's are the same when its
    /// integers are.
    pub last_extra: Option<([u64; 5], Option<u32>)>,
}

impl Shape {
    /// Whether `b` has this shape outside its integers.
    #[inline(always)]
    fn fits(&self, b: &[u8]) -> bool {
        if b.len() != self.len {
            return false;
        }
        let Some(rest) = b.get(self.from..) else {
            return false;
        };
        // Byte by byte over blocks of sixteen, which the compiler turns into
        // vector instructions: any byte out of its range leaves a bit set.
        let mut diff = [0u8; 16];
        for (chunk, block) in rest.chunks_exact(16).zip(&self.blocks) {
            block.check(chunk, &mut diff);
        }
        let Some(tail) = b.len().checked_sub(16).and_then(|i| b.get(i..)) else {
            return false;
        };
        self.last.check(tail, &mut diff);
        diff == [0; 16]
    }
}

/// What sixteen bytes of a line of a [`Shape`] may be: byte `k` from
/// `low[k]` to `low[k] + above[k]`. Outside its integers, the shape's line
/// has one byte there (`above` is 0); in an integer, any digit (`'0'` and
/// 9 above), or a digit but `'0'` for the first of several (`'1'` and 8
/// above).
#[derive(Clone, Copy)]
struct Block {
    low: [u8; 16],
    above: [u8; 16],
}

impl Block {
    /// The block of `low` and `above` (sixteen each).
    fn of(low: &[u8], above: &[u8]) -> Block {
        let mut block = Block {
            low: [0; 16],
            above: [0; 16],
        };
        block.low.copy_from_slice(low);
        block.above.copy_from_slice(above);
        block
    }

    /// Sets bits of `diff` for the bytes of `chunk` (sixteen) out of their
    /// range: one wrapping and one saturating subtraction a byte.
    #[inline(always)]
    fn check(&self, chunk: &[u8], diff: &mut [u8; 16]) {
        for k in 0..16 {
            diff[k] |= chunk[k]
                .wrapping_sub(self.low[k])
                .saturating_sub(self.above[k]);
        }
    }
}

/// Where a [`Shape`]'s lines hold one integer.
#[derive(Clone, Copy)]
struct Slot {
    /// Which key it is the value of.
    num: Num,
    /// Where its digits end (24 or more).
    end: u16,
    /// How many digits it has (1..=20).
    len: u16,
    /// For a long integer, the leading digits of the last line's there.
    leading: Leading,
}

impl Memo {
    /// Reads the line at the start of `b` by one of the shapes learnt
    /// before, if it is a span line of one of them: its integers into
    /// `nums`; returns the slot of its kind (for [`Memo::proto`]) and the
    /// line's length. `None` leaves the line to [`parse`].
    ///
    /// `b` is either one whole line (`in_buffer` false) or the reader's
    /// buffer from the start of a line on (`in_buffer` true), whose line
    /// then ends where a shape of the same length is followed by `\n`. No
    /// line of a shape holds a `\n` (it equals the shape's line outside its
    /// integers, which are digits), so that is where the line ends, and the
    /// reader needs no search for it.
    #[inline(always)]
    pub(crate) fn read_by_shape(
        &mut self,
        b: &[u8],
        nums: &mut Nums,
        in_buffer: bool,
    ) -> Option<(usize, usize)> {
        if b.get(..SPAN_PREFIX.len())? != SPAN_PREFIX {
            return None;
        }
        let i = SPAN_PREFIX.len();
        // A remembered kind (a new one is the template's to remember).
        let (kind, len) = self.find_kind(b, i)?;
        let from = i + len;
        let shapes = &mut self.shapes[kind];
        let pick = shapes.iter().position(|s| {
            s.from == from
                && if in_buffer {
                    b.get(s.len) == Some(&b'\n') && s.fits(&b[..s.len])
                } else {
                    s.fits(b)
                }
        })?;
        if pick != 0 {
            // The latest first: a kind's lines mostly keep one shape.
            shapes.swap(0, pick);
        }
        let shape = &mut shapes[0];
        // The shape checked the digits (`fits`): they only need converting.
        for slot in &mut shape.slots {
            let (end, len) = (usize::from(slot.end), usize::from(slot.len));
            nums.values[slot.num as usize] = match len {
                0..=8 => checked_digits(b, end, len)?,
                9..=16 => {
                    checked_digits(b, end - 8, len - 8)? * 100_000_000 + checked_digits(b, end, 8)?
                }
                _ => slot.leading.digits(b, end, len)?,
            };
        }
        nums.present = shape.present;
        let len = shape.len;
        self.came(kind);
        Some((kind, len))
    }

    /// What the reader made of the line of the shape that
    /// [`Memo::read_by_shape`] just read a line by (its kind's first).
    #[inline(always)]
    pub(crate) fn proto(&self, kind: usize) -> &Proto {
        &self.shapes[kind][0].proto
    }

    /// [`Memo::proto`], to change.
    #[inline(always)]
    pub(crate) fn proto_mut(&mut self, kind: usize) -> &mut Proto {
        &mut self.shapes[kind][0].proto
    }

    /// The remembered kind whose text (with its closing quote) is at `i` in
    /// `b`: its slot and that text's length. The kind that followed the
    /// last line's kind last time is tried first, then the others from the
    /// slot after the last line's kind on: kinds come round in the order
    /// they first came (a bucket's ready window, collective, writeback, the
    /// next bucket's...), which is the slots' order.
    #[inline(always)]
    fn find_kind(&self, b: &[u8], i: usize) -> Option<(usize, usize)> {
        let w0 = word_padded(b, i);
        let guess = self.after[self.last_kind];
        if let Some(l) = &self.kinds[guess] {
            if l.at(b, i, w0) {
                return Some((guess, l.len));
            }
        }
        let mut slot = self.last_kind;
        for _ in 0..KIND_MEMO {
            slot = if slot + 1 == KIND_MEMO { 0 } else { slot + 1 };
            if let Some(l) = &self.kinds[slot] {
                if l.at(b, i, w0) {
                    return Some((slot, l.len));
                }
            }
        }
        None
    }

    /// Notes that the line's kind is in `slot`.
    #[inline(always)]
    fn came(&mut self, slot: usize) {
        self.after[self.last_kind] = slot;
        self.last_kind = slot;
    }

    /// Whether the line [`parse`] just read may become a shape (the
    /// template read it, with a kind it remembers).
    #[inline(always)]
    pub(crate) fn learning(&self) -> bool {
        self.pending.is_some()
    }

    /// Makes the line the template just read in [`parse`] (`b`, which the
    /// reader made into `proto`) the first shape of its kind. Nothing
    /// happens when [`parse`] did not read it with the template, or with a
    /// kind it remembers, or when the line is long.
    #[cold]
    pub(crate) fn learn_shape(&mut self, b: &[u8], proto: Proto) {
        let Some((kind, from)) = self.pending.take() else {
            return;
        };
        if b.len() > SHAPE_MAX || b.len() < 16 || from > b.len() {
            return;
        }
        // Per byte of the line, what a line of the shape may have there
        // (see `Block`): the line's own byte, or a digit.
        let mut low = b.to_vec();
        let mut above = vec![0u8; b.len()];
        let mut present = 0u16;
        let mut slots = Vec::with_capacity(self.values.len());
        for &(num, v) in &self.values {
            let (at, len) = (usize::from(v.at), usize::from(v.len));
            let end = at + len;
            // Integers that the blocks cover, with room for the words
            // `Leading` reads before them, and at most twenty digits.
            if at < from || end < 24 || !(1..=20).contains(&len) {
                return;
            }
            let (Some(l), Some(a)) = (low.get_mut(at..end), above.get_mut(at..end)) else {
                return;
            };
            l.fill(b'0');
            a.fill(9);
            if len > 1 {
                (l[0], a[0]) = (b'1', 8);
            }
            present |= 1 << num as u16;
            slots.push(Slot {
                num,
                end: v.at + v.len,
                len: v.len,
                leading: Leading::default(),
            });
        }
        let blocks = low[from..]
            .chunks_exact(16)
            .zip(above[from..].chunks_exact(16))
            .map(|(low, above)| Block::of(low, above))
            .collect();
        let end = b.len() - 16;
        let last = Block::of(&low[end..], &above[end..]);
        let shapes = &mut self.shapes[kind];
        shapes.truncate(SHAPES_PER_KIND - 1);
        shapes.insert(
            0,
            Shape {
                len: b.len(),
                from,
                blocks,
                last,
                slots,
                present,
                proto,
            },
        );
    }
}

/// Reads `line` (one trimmed trace line) into `f` if it has one of the
/// common shapes; `false` means "parse it with serde_json". Bytes that are
/// not UTF-8 are only accepted inside strings, checked string by string.
///
/// `offsets` receives a `grad_ready` record's `offsets_ns` (see
/// [`Fields::has_offsets`]); `memo` is the caller's from one line to the
/// next (it only makes reading faster, never changes what is read).
/// `f` must be empty ([`Fields::default`]); it is the caller's so that the
/// values need not be copied out. Returns whether the line was read (`f`
/// is then complete; otherwise it holds scraps to ignore).
pub(crate) fn parse<'a>(
    line: &'a [u8],
    offsets: &mut Vec<i64>,
    f: &mut Fields<'a>,
    memo: &mut Memo,
) -> bool {
    // Set by the template only when it reads the line.
    memo.pending = None;
    if span_template(line, f, memo).is_some() {
        return true;
    }
    *f = Fields::default();
    fields(line, offsets, f).is_some()
}

fn fields<'a>(line: &'a [u8], offsets: &mut Vec<i64>, f: &mut Fields<'a>) -> Option<()> {
    let mut c = Cursor { b: line, i: 0 };
    let mut seen: u32 = 0;
    c.eat(b'{')?;
    loop {
        c.ws();
        let k = c.key()?;
        let bit = 1u32 << (k as u32);
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        c.ws();
        macro_rules! opt {
            ($slot:expr, $read:ident) => {
                if !c.null() {
                    $slot = Some(c.$read()?);
                }
            };
        }
        match k {
            Key::Type => f.ty = Some(c.string()?),
            Key::Kind => opt!(f.kind, string),
            Key::Step => opt!(f.step, uint),
            Key::Start => opt!(f.start, uint),
            Key::End => opt!(f.end, uint),
            Key::Queued => opt!(f.queued, uint),
            Key::Name => opt!(f.name, string),
            Key::Lane => opt!(f.lane, string),
            Key::Bucket => opt!(f.bucket, u32),
            Key::Bytes => opt!(f.bytes, uint),
            Key::Params => opt!(f.params, u32),
            Key::Seq => opt!(f.seq, uint),
            Key::Op => opt!(f.op, string),
            Key::Algo => opt!(f.algo, string),
            Key::Transport => opt!(f.transport, string),
            Key::Peer => opt!(f.peer, u32),
            Key::Dtype => opt!(f.dtype, string),
            Key::Device => opt!(f.device, u32),
            Key::Stream => opt!(f.stream, uint),
            Key::Category => opt!(f.category, string),
            Key::Correlation => opt!(f.correlation, uint),
            Key::T => opt!(f.t, uint),
            Key::Value => {
                f.value = Some(if c.null() { f64::NAN } else { c.float()? });
            }
            Key::Level => opt!(f.level, string),
            Key::Message => opt!(f.message, string),
            Key::Status => opt!(f.status, string),
            Key::T0 => f.t0 = Some(c.uint()?),
            Key::Offsets => {
                c.int_array(offsets)?;
                f.has_offsets = true;
            }
        }
        c.ws();
        match c.peek()? {
            b',' => c.i += 1,
            b'}' => {
                c.i += 1;
                break;
            }
            _ => return None,
        }
    }
    c.ws();
    if c.i != c.b.len() {
        return None;
    }
    let ty = f.ty?;
    if !HOT_TYPES.contains(&ty) {
        return None;
    }
    if ty == "grad_ready" {
        // serde reads grad_ready's step, t0 and offsets_ns as required.
        if f.step.is_none() || f.t0.is_none() || !f.has_offsets {
            return None;
        }
    } else if seen & (1 << Key::T0 as u32 | 1 << Key::Offsets as u32) != 0 {
        // Keys the other records do not know: leave them to serde.
        return None;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse<'a>(line: &'a [u8], v: &mut Vec<i64>) -> Option<Fields<'a>> {
        let mut f = Fields::default();
        super::parse(line, v, &mut f, &mut Memo::default()).then_some(f)
    }

    fn p(s: &str) -> Option<Fields<'_>> {
        let mut v = Vec::new();
        parse(s.as_bytes(), &mut v)
    }

    #[test]
    fn reads_a_collective() {
        let f = p(r#"{"type":"span","kind":"collective","step":3,"start":1700000000104410000,"end":1700000000104900000,"queued":1700000000104400000,"bucket":0,"bytes":10280,"seq":7,"op":"all_reduce","algo":"ring","transport":"tcp","dtype":"float32"}"#).unwrap();
        assert_eq!(f.ty, Some("span"));
        assert_eq!(f.kind, Some("collective"));
        assert_eq!(f.step, Some(3));
        assert_eq!(f.start, Some(1_700_000_000_104_410_000));
        assert_eq!(f.queued, Some(1_700_000_000_104_400_000));
        assert_eq!(f.bucket, Some(0));
        assert_eq!(f.op, Some("all_reduce"));
        assert_eq!(f.dtype, Some("float32"));
    }

    #[test]
    fn every_short_key_is_found() {
        for (name, key) in SHORT_KEYS {
            assert_eq!(short_key(kw(name)).map(|k| k as u32), Some(key as u32));
        }
        assert!(short_key(kw(b"tx")).is_none());
        assert!(short_key(0).is_none());
    }

    #[test]
    fn integers_at_the_limits() {
        let f = p(r#"{"type":"span","start":18446744073709551615,"end":0,"bucket":4294967295}"#)
            .unwrap();
        assert_eq!(f.start, Some(u64::MAX));
        assert_eq!(f.end, Some(0));
        assert_eq!(f.bucket, Some(u32::MAX));
        for bad in [
            r#"{"type":"span","start":18446744073709551616}"#,
            r#"{"type":"span","start":99999999999999999999}"#,
            r#"{"type":"span","start":123456789012345678901}"#,
            r#"{"type":"span","bucket":4294967296}"#,
            r#"{"type":"span","start":01}"#,
            r#"{"type":"span","start":-1}"#,
            r#"{"type":"span","start":1.0}"#,
            r#"{"type":"span","start":1e3}"#,
            r#"{"type":"span","start":"1"}"#,
            r#"{"type":"span","start":}"#,
        ] {
            assert!(p(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn leaves_the_unusual_to_serde() {
        for s in [
            r#"{"type":"span","name":"a\"b"}"#,
            r#"{"type":"span","name":"a	b"}"#,
            r#"{"type":"span","args":{}}"#,
            r#"{"type":"span","future":1}"#,
            r#"{"type":"span","step":1,"step":2}"#,
            r#"{"type":"header","format":"ddp-probe-trace"}"#,
            r#"{"type":"buckets","step":1}"#,
            r#"{"type":"novel","t":1}"#,
            r#"{"kind":"step"}"#,
            r#"{"type":null}"#,
            r#"{"type":"span"} x"#,
            r#"{"type":"span",}"#,
            r#"{"type":"span""#,
            r#"{}"#,
            r#"[]"#,
            r#"{"type":"span","t0":5}"#,
            "{\"type\":\"span\",\"t\u{0}\":5}",
            "{\"type\":\"span\",\"op\u{0}\u{0}\":5}",
            "{\"type\":\"span\",\"\u{0}t\":5}",
            "{\"type\":\"span\",\"\":5}",
            r#"{"type":"grad_ready","step":1,"offsets_ns":[1]}"#,
            r#"{"type":"grad_ready","step":1,"t0":2,"offsets_ns":[1,]}"#,
            r#"{"type":"grad_ready","step":1,"t0":2,"offsets_ns":[1.5]}"#,
            r#"{"type":"grad_ready","step":null,"t0":2,"offsets_ns":[1]}"#,
            r#"{"type":"counter","value":nan}"#,
            r#"{"type":"counter","value":1e999}"#,
        ] {
            assert!(p(s).is_none(), "{s}");
        }
    }

    #[test]
    fn whitespace_null_and_values() {
        let f = p(" { \"type\" : \"counter\" , \"name\" : \"loss\" , \"t\" : 5 , \"value\" : -2.5e-3 , \"step\" : null } ").unwrap();
        assert_eq!(f.name, Some("loss"));
        assert_eq!(f.value, Some(-2.5e-3));
        assert_eq!(f.step, None);
        let f = p(r#"{"type":"counter","name":"x","t":1,"value":null}"#).unwrap();
        assert!(f.value.unwrap().is_nan());
        let f = p(r#"{"type":"log","t":1,"level":"info","message":"ünï ✓"}"#).unwrap();
        assert_eq!(f.message, Some("ünï ✓"));
    }

    #[test]
    fn integers_of_every_length() {
        let mut v: u64 = 0;
        for digits in 1..=20u32 {
            v = v * 10 + u64::from(digits % 10);
            let line = format!(r#"{{"type":"span","start":{v},"end":{v}}}"#);
            let f = p(&line).unwrap_or_else(|| panic!("{line}"));
            assert_eq!(f.start, Some(v), "{line}");
            let spaced = format!(r#"{{"type":"span","start":{v} ,"end":0}}"#);
            assert_eq!(p(&spaced).and_then(|f| f.start), Some(v), "{spaced}");
            if digits > 1 {
                let zero = format!(r#"{{"type":"span","start":0{v}}}"#);
                assert!(p(&zero).is_none(), "{zero}");
            }
        }
        // Leading zeros after eight and sixteen digits are still digits.
        let f = p(r#"{"type":"span","start":100000000000000000}"#).unwrap();
        assert_eq!(f.start, Some(100_000_000_000_000_000));
        assert!(p(r#"{"type":"span","start":00000000000000000}"#).is_none());
    }

    #[test]
    fn strings_ascii_and_not() {
        // Long and short, ASCII and not, the non-ASCII byte in the first
        // word, a later word or the tail.
        for name in [
            "a",
            "forward",
            "layer.0.weight.grad",
            "é",
            "ü✓ and more text after",
            "0123456789abcdef€",
            "0123456789abcdefg€",
        ] {
            let line = format!(r#"{{"type":"span","kind":"forward","name":"{name}"}}"#);
            assert_eq!(p(&line).and_then(|f| f.name), Some(name), "{line}");
        }
        // Invalid UTF-8 anywhere in a string is refused (serde_json then
        // reports it).
        for at in 0..20 {
            let mut line = br#"{"type":"span","name":""#.to_vec();
            line.extend(std::iter::repeat_n(b'a', at));
            line.push(0xff);
            line.extend_from_slice(br#"xyz"}"#);
            assert!(parse(&line, &mut Vec::new()).is_none(), "byte at {at}");
        }
        // A key and its colon apart.
        let f = p(r#"{"type" :"span","name"	: "x"}"#).unwrap();
        assert_eq!(f.name, Some("x"));
    }

    #[test]
    fn offsets_of_every_length_read_as_serde_reads_them() {
        // Each length, with and without a leading zero, a sign or
        // whitespace around it, first, inside and last in the array.
        let mut v: u64 = 0;
        for digits in 1..=20u32 {
            v = v * 10 + u64::from(digits % 10);
            for text in [
                format!("{v}"),
                format!("0{v}"),
                format!("-{v}"),
                format!("-0{v}"),
                format!(" {v} "),
            ] {
                for array in [
                    format!("[{text}]"),
                    format!("[7,{text},12345678]"),
                    format!("[123456789,{text}]"),
                ] {
                    let line =
                        format!(r#"{{"type":"grad_ready","step":1,"t0":2,"offsets_ns":{array}}}"#);
                    let mut got = Vec::new();
                    let fast = parse(line.as_bytes(), &mut got).map(|_| got);
                    let serde = serde_json::from_str::<Vec<i64>>(&array).ok();
                    match serde {
                        Some(want) => assert_eq!(fast, Some(want), "{line}"),
                        // The reader then asks serde_json, which refuses it.
                        None => assert_eq!(fast, None, "{line}"),
                    }
                }
            }
        }
    }

    #[test]
    fn grad_ready_offsets() {
        let mut v = Vec::new();
        let f = parse(
            br#"{"type":"grad_ready","step":3,"t0":10,"offsets_ns":[3900000, -1,0,-9223372036854775808,9223372036854775807]}"#,
            &mut v,
        )
        .unwrap();
        assert!(f.has_offsets);
        assert_eq!(f.t0, Some(10));
        assert_eq!(v, vec![3_900_000, -1, 0, i64::MIN, i64::MAX]);
        let f = parse(
            br#"{"type":"grad_ready","step":0,"t0":1,"offsets_ns":[]}"#,
            &mut v,
        )
        .unwrap();
        assert!(f.has_offsets && v.is_empty());
        assert!(parse(
            br#"{"type":"grad_ready","step":0,"t0":1,"offsets_ns":[9223372036854775808]}"#,
            &mut v
        )
        .is_none());
        assert!(parse(
            br#"{"type":"grad_ready","step":0,"t0":1,"offsets_ns":[-9223372036854775809]}"#,
            &mut v
        )
        .is_none());
        assert!(parse(
            br#"{"type":"grad_ready","step":0,"t0":1,"offsets_ns":[-0]}"#,
            &mut v
        )
        .is_none());
    }

    /// A small random generator for the differential test.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
        fn chance(&mut self, one_in: usize) -> bool {
            self.below(one_in) == 0
        }
        fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
            from[self.below(from.len())]
        }
    }

    /// A span line of the writer's shape, or (at random) one that deviates
    /// from it; the flag says whether it is of the writer's shape with
    /// plain values (the template must then read it).
    fn random_span_line(rng: &mut Rng) -> (Vec<u8>, bool) {
        const INTS: [&str; 10] = [
            "0",
            "7",
            "10280",
            "4294967295",
            "1700000000104410000",
            "18446744073709551615",
            "12345678",
            "123456789",
            "1234567890123456",
            "12345678901234567",
        ];
        const BAD_INTS: [&str; 11] = [
            "4294967296",
            "18446744073709551616",
            "99999999999999999999",
            "01",
            "-1",
            "1.5",
            "1e3",
            "null",
            "\"1\"",
            "",
            "00",
        ];
        const STRS: [&str; 12] = [
            "all_reduce",
            "all_reduce2",
            "ring",
            "ringx",
            "tcp",
            "float32",
            "float3",
            "",
            "x",
            "0123456789abcde",
            "0123456789abcdef",
            "ü✓ and more",
        ];
        const BAD_STRS: [&str; 6] = ["a\\\"b", "\\u0041", "tab\t", "null", "1", "\"unterminated"];
        const KINDS: [&str; 8] = [
            "collective",
            "bucket_ready",
            "writeback",
            "forward",
            "backward",
            "step",
            "novel_kind",
            "ü",
        ];
        let mut canonical = true;
        let mut parts: Vec<(String, String)> = Vec::new();
        let kind = if rng.chance(40) {
            canonical = false;
            rng.pick(&BAD_STRS).to_owned()
        } else {
            format!("\"{}\"", rng.pick(&KINDS))
        };
        parts.push(("kind".to_owned(), kind));
        for (l, key) in SPAN_TEMPLATE {
            if !rng.chance(2) {
                continue;
            }
            let name = (1..l.len)
                .map(|i| {
                    let w = if i < 8 {
                        l.w0 >> (8 * i)
                    } else {
                        l.w1 >> (8 * (i - 8))
                    };
                    w as u8
                })
                .filter(|&c| c != b'"' && c != b':')
                .map(char::from)
                .collect::<String>();
            let string = l.len > 1 && {
                let i = l.len - 1;
                let w = if i < 8 {
                    l.w0 >> (8 * i)
                } else {
                    l.w1 >> (8 * (i - 8))
                };
                w as u8 == b'"'
            };
            let _ = key;
            let value = if string {
                if rng.chance(30) {
                    canonical = false;
                    rng.pick(&BAD_STRS).to_owned()
                } else {
                    format!("\"{}\"", rng.pick(&STRS))
                }
            } else if rng.chance(20) {
                canonical = false;
                rng.pick(&BAD_INTS).to_owned()
            } else {
                let v = rng.pick(&INTS);
                let small = ["bucket", "params", "peer", "device"].contains(&name.as_str());
                if small && v.len() > 10 {
                    canonical = false;
                }
                v.to_owned()
            };
            parts.push((name, value));
        }
        if rng.chance(20) {
            canonical = false;
            let extra = rng.pick(&["args", "future", "t0", "value", "step", "kind", "type"]);
            let at = rng.below(parts.len() + 1);
            parts.insert(at, (extra.to_owned(), "1".to_owned()));
        }
        if rng.chance(20) && parts.len() > 2 {
            canonical = false;
            let (a, b) = (rng.below(parts.len()), rng.below(parts.len()));
            parts.swap(a, b);
        }
        let mut line = String::from(r#"{"type":"span""#);
        if rng.chance(40) {
            canonical = false;
            line = String::from(r#"{"type":"instant""#);
        }
        for (k, v) in &parts {
            line.push(',');
            if rng.chance(60) {
                canonical = false;
                line.push(' ');
            }
            line.push_str(&format!("\"{k}\":"));
            if rng.chance(60) {
                canonical = false;
                line.push(' ');
            }
            line.push_str(v);
        }
        line.push('}');
        let mut bytes = line.into_bytes();
        if rng.chance(50) {
            canonical = false;
            let at = rng.below(bytes.len());
            bytes[at] = 0xff;
        }
        if rng.chance(50) {
            canonical = false;
            let cut = rng.below(bytes.len());
            bytes.truncate(cut);
        }
        (bytes, canonical)
    }

    /// The template fast path and the general parser read every line the
    /// same way: both refuse it, or both give the same fields. Lines come
    /// in random order through one memo, so remembered values are
    /// compared against similar ones (prefixes, longer and shorter).
    #[test]
    fn template_and_general_parser_agree() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut memo = Memo::default();
        let mut strings = crate::model::Strings::new();
        let mut v = Vec::new();
        let (mut accepted, mut canonical_lines) = (0, 0);
        for _ in 0..200_000 {
            let (line, canonical) = random_span_line(&mut rng);
            let mut general = Fields::default();
            let general_ok = fields(&line, &mut v, &mut general).is_some();
            let mut fast = Fields::default();
            let template_ok = span_template(&line, &mut fast, &mut memo).is_some();
            let text = String::from_utf8_lossy(&line);
            if template_ok {
                accepted += 1;
                assert!(general_ok, "only the template reads {text}");
                // Resolve the remembered ids as the reader would, then
                // compare values: a remembered id must name the line's
                // string, a remembered kind its kind.
                let strs = [
                    (MEMO_NAME, fast.name),
                    (MEMO_OP, fast.op),
                    (MEMO_ALGO, fast.algo),
                    (MEMO_TRANSPORT, fast.transport),
                    (MEMO_DTYPE, fast.dtype),
                ];
                for (slot, s) in strs {
                    if fast.memo_hits & (1 << slot) == 0 {
                        continue;
                    }
                    let s = s.expect("a hit is a present string");
                    match memo.sym(slot) {
                        Some(sym) => assert_eq!(strings.resolve(sym), s, "{text}"),
                        None => memo.set_sym(slot, strings.intern(s)),
                    }
                }
                if fast.kind_hit != 0 {
                    let k = fast.kind.expect("a hit is a present kind");
                    match memo.kind_id(fast.kind_hit) {
                        Some(id) => assert_eq!(id.as_str(), k, "{text}"),
                        None => {
                            if let Some(id) = crate::trace::SpanKind::from_name(k) {
                                memo.set_kind_id(fast.kind_hit, id);
                            }
                        }
                    }
                }
                fast.memo_hits = 0;
                fast.kind_hit = 0;
                assert_eq!(fast, general, "{text}");
            }
            if canonical {
                canonical_lines += 1;
                assert!(template_ok, "the template refuses {text}");
            }
            let mut both = Fields::default();
            assert_eq!(
                super::parse(&line, &mut v, &mut both, &mut memo),
                general_ok,
                "{text}"
            );
            if general_ok {
                both.memo_hits = 0;
                both.kind_hit = 0;
                assert_eq!(both, general, "{text}");
            }
        }
        assert!(canonical_lines > 20_000, "{canonical_lines}");
        assert!(accepted >= canonical_lines);
    }

    #[test]
    fn never_panics_on_cut_or_random_lines() {
        let line = r#"{"type":"span","kind":"collective","step":3,"start":1700000000104410000,"end":1700000000104900000,"name":"ü✓","bucket":0}"#;
        let mut v = Vec::new();
        for cut in 0..=line.len() {
            let _ = parse(&line.as_bytes()[..cut], &mut v);
        }
        // Bytes that are not UTF-8 inside and outside strings.
        assert!(parse(b"{\"type\":\"span\",\"name\":\"\xff\"}", &mut v).is_none());
        assert!(parse(b"{\"type\":\"span\",\xff}", &mut v).is_none());
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            let mut bytes = Vec::new();
            let alphabet = b"{}[]\":,-0123456789.eE tnrua\\sp\xc3\xff";
            for _ in 0..(x % 64) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                bytes.push(alphabet[(x % alphabet.len() as u64) as usize]);
            }
            let _ = parse(&bytes, &mut v);
        }
    }
}
