//! The template fast path: a span line exactly as the writer writes it,
//! read by comparing the bytes between its values with the literals the
//! writer puts there.

use super::cursor::Cursor;
use super::shape::{Memo, Num, Value, MEMO_ALGO, MEMO_DTYPE, MEMO_NAME, MEMO_OP, MEMO_TRANSPORT};
use super::words::word_padded;
use super::{Fields, Key, SPAN_PREFIX, SPAN_TEMPLATE};

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
pub(super) fn span_template<'a>(b: &'a [u8], f: &mut Fields<'a>, memo: &mut Memo) -> Option<()> {
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
            Key::queued => {
                f.queued = Some(c.uint()?);
                Num::Queued
            }
            Key::bucket => {
                f.bucket = Some(c.u32()?);
                Num::Bucket
            }
            Key::bytes => {
                f.bytes = Some(c.uint()?);
                Num::Bytes
            }
            Key::params => {
                f.params = Some(c.u32()?);
                Num::Params
            }
            Key::seq => {
                f.seq = Some(c.uint()?);
                Num::Seq
            }
            Key::peer => {
                f.peer = Some(c.u32()?);
                Num::Peer
            }
            Key::device => {
                f.device = Some(c.u32()?);
                Num::Device
            }
            Key::stream => {
                f.stream = Some(c.uint()?);
                Num::Stream
            }
            Key::correlation => {
                f.correlation = Some(c.uint()?);
                Num::Correlation
            }
            // String values: back onto the opening quote the literal ended
            // with. A shape compares them as bytes.
            Key::name => {
                f.name = Some(c.memo_string(memo, MEMO_NAME, &mut f.memo_hits)?);
                continue;
            }
            Key::lane => {
                f.lane = Some(c.memo_string(memo, 1, &mut f.memo_hits)?);
                continue;
            }
            Key::op => {
                f.op = Some(c.memo_string(memo, MEMO_OP, &mut f.memo_hits)?);
                continue;
            }
            Key::algo => {
                f.algo = Some(c.memo_string(memo, MEMO_ALGO, &mut f.memo_hits)?);
                continue;
            }
            Key::transport => {
                f.transport = Some(c.memo_string(memo, MEMO_TRANSPORT, &mut f.memo_hits)?);
                continue;
            }
            Key::dtype => {
                f.dtype = Some(c.memo_string(memo, MEMO_DTYPE, &mut f.memo_hits)?);
                continue;
            }
            Key::category => {
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
