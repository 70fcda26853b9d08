//! What the fast parser remembers between lines ([`Memo`]): the last span
//! kinds and string values, and each kind's [`Shape`], a line with its
//! integers blanked out, so that the next line of that kind is read by
//! comparing words and its integers taken where the shape says.

use super::words::{eight_digit_values, last_bytes, word, word_padded, Lit, ONES};
use super::SPAN_PREFIX;

/// What [`parse`] remembers from one line to the next: the last value of
/// each string field of a span, when it was short and ASCII, so that a
/// line repeating it is read by comparing two words.
///
/// Span kinds alternate (a bucket's ready window, its collective, its
/// writeback...), so the last few distinct ones are kept, replaced in turn,
/// each with the [`Shape`]s of its last lines.
#[derive(Default)]
pub(crate) struct Memo {
    pub(super) strings: [Option<Lit>; 7],
    pub(super) kinds: [Option<Lit>; KIND_MEMO],
    pub(super) next_kind: usize,
    /// The slot of the last span's kind.
    pub(super) last_kind: usize,
    /// For each slot, the slot of the kind that came after it last time:
    /// the first guess for the next line's kind (a step's kinds come in
    /// the same order every time).
    pub(super) after: [usize; KIND_MEMO],
    /// The reader's interned id of each remembered string, once it set it:
    /// cleared whenever the string is replaced. The ids belong to one
    /// reader (one file), which owns this memo.
    pub(super) syms: [Option<crate::model::Sym>; 7],
    /// The reader's resolved kind of each remembered kind, likewise.
    pub(super) kind_ids: [Option<crate::trace::SpanKind>; KIND_MEMO],
    /// The last line shapes seen for each remembered kind, the latest
    /// first; cleared with the kind.
    pub(super) shapes: [Vec<Shape>; KIND_MEMO],
    /// The line the template just read, while it may still become a shape:
    /// its kind's slot and where its kind ends.
    pub(super) pending: Option<(usize, usize)>,
    /// Where the template found the integers of the line it just read.
    pub(super) values: Vec<(Num, Value)>,
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
pub(super) const KIND_MEMO: usize = 8;

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
    pub(super) values: [u64; 12],
    pub(super) present: u16,
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
pub(super) struct Value {
    pub(super) at: u16,
    pub(super) len: u16,
}

/// The leading digits of a long integer (seventeen digits or more: a
/// timestamp) in the last line read by a [`Shape`], to be reused by the
/// next line when they are the same: lines of a kind come close together
/// in time, so their timestamps mostly differ only in the last eight
/// digits.
#[derive(Clone, Copy, Default)]
pub(super) struct Leading {
    /// The sixteen bytes before the integer's last eight digits, as two
    /// words: its other digits and what the shape has before them (which
    /// every line of the shape has).
    pub(super) key: (u64, u64),
    /// The value of the digits before the last eight, times `10^8`
    /// (`None` when that overflows: twenty digits too many for a `u64`).
    pub(super) scaled: Option<u64>,
    /// Whether `key` and `scaled` are set.
    pub(super) set: bool,
}

impl Leading {
    /// The integer of `len` (17..=20) digits ending at `end` (24 or more)
    /// in `b`, digits the shape checked ([`Shape::fits`]), as [`digits`]
    /// reads it, with its leading digits reused when they are the bytes of
    /// the last line's and remembered otherwise.
    #[inline(always)]
    pub(super) fn digits(&mut self, b: &[u8], end: usize, len: usize) -> Option<u64> {
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
pub(super) fn checked_digits(b: &[u8], e: usize, k: usize) -> Option<u64> {
    let w = word(b, e.checked_sub(8)?)?;
    Some(eight_digit_values(last_bytes(w, k)))
}

impl Value {
    /// `None` when the offsets do not fit (in a line too long for a
    /// [`Shape`] anyway).
    pub(super) fn new(at: usize, len: usize) -> Option<Value> {
        Some(Value {
            at: u16::try_from(at).ok()?,
            len: u16::try_from(len).ok()?,
        })
    }
}

/// How many shapes [`Memo`] keeps for each remembered span kind.
pub(super) const SHAPES_PER_KIND: usize = 2;

/// The longest span line a [`Shape`] is made of, in bytes.
pub(super) const SHAPE_MAX: usize = 512;

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
pub(super) struct Shape {
    /// The whole line's length.
    pub(super) len: usize,
    /// Where the compared bytes begin (after the kind's closing quote: the
    /// prefix and kind are checked before the shape is chosen).
    pub(super) from: usize,
    /// What the line's bytes from `from` may be, sixteen at a time (whole
    /// blocks only): the line's own bytes outside its integers, digits
    /// (without a leading zero) in them.
    pub(super) blocks: Vec<Block>,
    /// The same for the line's last sixteen bytes (which hold the bytes of
    /// the rest that `blocks` leaves out).
    pub(super) last: Block,
    /// The line's integers.
    pub(super) slots: Vec<Slot>,
    /// Which of [`Nums`]'s keys the line has.
    pub(super) present: u16,
    /// What the reader made of the line.
    pub(super) proto: Proto,
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
    pub(super) fn fits(&self, b: &[u8]) -> bool {
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
pub(super) struct Block {
    pub(super) low: [u8; 16],
    pub(super) above: [u8; 16],
}

impl Block {
    /// The block of `low` and `above` (sixteen each).
    pub(super) fn of(low: &[u8], above: &[u8]) -> Block {
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
    pub(super) fn check(&self, chunk: &[u8], diff: &mut [u8; 16]) {
        for k in 0..16 {
            diff[k] |= chunk[k]
                .wrapping_sub(self.low[k])
                .saturating_sub(self.above[k]);
        }
    }
}

/// Where a [`Shape`]'s lines hold one integer.
#[derive(Clone, Copy)]
pub(super) struct Slot {
    /// Which key it is the value of.
    pub(super) num: Num,
    /// Where its digits end (24 or more).
    pub(super) end: u16,
    /// How many digits it has (1..=20).
    pub(super) len: u16,
    /// For a long integer, the leading digits of the last line's there.
    pub(super) leading: Leading,
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
    pub(super) fn find_kind(&self, b: &[u8], i: usize) -> Option<(usize, usize)> {
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
    pub(super) fn came(&mut self, slot: usize) {
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
