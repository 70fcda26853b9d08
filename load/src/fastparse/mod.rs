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
//!
//! Why it is hand-written (README, "The parts on their own"): on 10 million
//! spans it loads a run in 2.4 to 3.5 s of CPU where serde_json takes 13.6
//! to 14.4 s and sonic-rs (through serde) 14.9 to 17.3 s.
//!
//! Its parts: [`keys`] (what keys it knows), [`words`] (eight bytes at a
//! time), [`cursor`] (one value at a time), [`template`] (the writer's span
//! lines) and [`shape`] (lines of a remembered shape).

mod cursor;
mod keys;
mod shape;
mod template;
mod words;

use cursor::Cursor;
pub(crate) use shape::{
    Memo, Num, Nums, Proto, MEMO_ALGO, MEMO_DTYPE, MEMO_NAME, MEMO_OP, MEMO_TRANSPORT,
};
use template::span_template;
use words::{lit, Lit};

/// The value type a line carries for a span field of a given kind (see
/// [`probe_contract::span_optional_fields`]): strings borrowed from the line.
macro_rules! line_value {
    ($lt:lifetime num $ty:ty) => { $ty };
    ($lt:lifetime text $ty:ty) => { &$lt str };
    ($lt:lifetime tag $ty:ty) => { &$lt str };
}

/// The bytes that introduce a span field in the writer's compact form: the
/// comma, the quoted key, the colon, and a string's opening quote.
macro_rules! template_literal {
    (num $field:ident) => {
        concat!(",\"", stringify!($field), "\":")
    };
    (text $field:ident) => {
        concat!(",\"", stringify!($field), "\":\"")
    };
    (tag $field:ident) => {
        concat!(",\"", stringify!($field), "\":\"")
    };
}

/// [`Fields`], [`Key`], [`SPAN_KEYS`], [`SPAN_TEMPLATE`] and
/// [`read_span_field`], from the contract's one list of span fields.
macro_rules! line_fields {
    ($( $(#[doc = $doc:literal])* $kind:ident $field:ident : $ty:ty ),+ $(,)?) => {
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
            $( pub $field: Option<line_value!('a $kind $ty)>, )+
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

        /// The keys [`parse`] knows: the span's optional fields are named as
        /// the fields.
        #[derive(Clone, Copy)]
        #[allow(non_camel_case_types)]
        enum Key {
            Type,
            Kind,
            Step,
            Start,
            End,
            $( $field, )+
            T,
            Value,
            Level,
            Message,
            Status,
            T0,
            Offsets,
        }

        /// The span's optional keys and their names.
        const SPAN_KEYS: &[(&[u8], Key)] = &[ $( (stringify!($field).as_bytes(), Key::$field), )+ ];

        /// The optional keys of a span after its `kind`, in the order
        /// [`crate::trace::TraceWriter`] writes them (the field order of
        /// [`crate::trace::SpanRecord`]), each with the bytes that introduce it.
        const SPAN_TEMPLATE: &[(Lit, Key)] = &[
            (lit(b",\"step\":"), Key::Step),
            (lit(b",\"start\":"), Key::Start),
            (lit(b",\"end\":"), Key::End),
            $( (lit(template_literal!($kind $field).as_bytes()), Key::$field), )+
        ];

        /// Reads the value of a span's optional field `k` into `f` (nothing
        /// for `null`); `Some(false)` when `k` is not one of them, `None` when
        /// the value is not the field's.
        #[inline]
        fn read_span_field<'a>(k: Key, c: &mut Cursor<'a>, f: &mut Fields<'a>) -> Option<bool> {
            match k {
                $( Key::$field => {
                    if !c.null() {
                        f.$field = Some(ReadValue::read(c)?);
                    }
                } )+
                _ => return Some(false),
            }
            Some(true)
        }
    };
}

probe_contract::span_optional_fields!(line_fields);

/// A value [`Cursor`] reads for a field of its type.
trait ReadValue<'a>: Sized {
    fn read(c: &mut Cursor<'a>) -> Option<Self>;
}

impl ReadValue<'_> for u64 {
    #[inline(always)]
    fn read(c: &mut Cursor<'_>) -> Option<u64> {
        c.uint()
    }
}

impl ReadValue<'_> for u32 {
    #[inline(always)]
    fn read(c: &mut Cursor<'_>) -> Option<u32> {
        c.u32()
    }
}

impl<'a> ReadValue<'a> for &'a str {
    #[inline(always)]
    fn read(c: &mut Cursor<'a>) -> Option<&'a str> {
        c.string()
    }
}

/// How every span line of this crate's writer begins.
const SPAN_PREFIX: &[u8] = b"{\"type\":\"span\",\"kind\":\"";

/// The record types [`parse`] takes on.
const HOT_TYPES: [&str; 6] = ["span", "instant", "counter", "log", "end", "grad_ready"];

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
        if !read_span_field(k, &mut c, f)? {
            match k {
                Key::Type => f.ty = Some(c.string()?),
                Key::Kind => opt!(f.kind, string),
                Key::Step => opt!(f.step, uint),
                Key::Start => opt!(f.start, uint),
                Key::End => opt!(f.end, uint),
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
                // The span's optional fields, read by `read_span_field`.
                _ => {}
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
    use fastrand::Rng;

    fn chance(rng: &mut Rng, one_in: usize) -> bool {
        rng.usize(..one_in) == 0
    }

    fn pick<'a>(rng: &mut Rng, from: &[&'a str]) -> &'a str {
        from[rng.usize(..from.len())]
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
        let kind = if chance(rng, 40) {
            canonical = false;
            pick(rng, &BAD_STRS).to_owned()
        } else {
            format!("\"{}\"", pick(rng, &KINDS))
        };
        parts.push(("kind".to_owned(), kind));
        for &(l, key) in SPAN_TEMPLATE {
            if !chance(rng, 2) {
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
                if chance(rng, 30) {
                    canonical = false;
                    pick(rng, &BAD_STRS).to_owned()
                } else {
                    format!("\"{}\"", pick(rng, &STRS))
                }
            } else if chance(rng, 20) {
                canonical = false;
                pick(rng, &BAD_INTS).to_owned()
            } else {
                let v = pick(rng, &INTS);
                let small = ["bucket", "params", "peer", "device"].contains(&name.as_str());
                if small && v.len() > 10 {
                    canonical = false;
                }
                v.to_owned()
            };
            parts.push((name, value));
        }
        if chance(rng, 20) {
            canonical = false;
            let extra = pick(
                rng,
                &["args", "future", "t0", "value", "step", "kind", "type"],
            );
            let at = rng.usize(..parts.len() + 1);
            parts.insert(at, (extra.to_owned(), "1".to_owned()));
        }
        if chance(rng, 20) && parts.len() > 2 {
            canonical = false;
            let (a, b) = (rng.usize(..parts.len()), rng.usize(..parts.len()));
            parts.swap(a, b);
        }
        let mut line = String::from(r#"{"type":"span""#);
        if chance(rng, 40) {
            canonical = false;
            line = String::from(r#"{"type":"instant""#);
        }
        for (k, v) in &parts {
            line.push(',');
            if chance(rng, 60) {
                canonical = false;
                line.push(' ');
            }
            line.push_str(&format!("\"{k}\":"));
            if chance(rng, 60) {
                canonical = false;
                line.push(' ');
            }
            line.push_str(v);
        }
        line.push('}');
        let mut bytes = line.into_bytes();
        if chance(rng, 50) {
            canonical = false;
            let at = rng.usize(..bytes.len());
            bytes[at] = 0xff;
        }
        if chance(rng, 50) {
            canonical = false;
            let cut = rng.usize(..bytes.len());
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
        let mut rng = Rng::with_seed(0x9e37_79b9_7f4a_7c15);
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
        let mut rng = Rng::with_seed(0x2545_f491_4f6c_dd1d);
        for _ in 0..20_000 {
            let mut bytes = Vec::new();
            let alphabet = b"{}[]\":,-0123456789.eE tnrua\\sp\xc3\xff";
            for _ in 0..rng.usize(..64) {
                bytes.push(alphabet[rng.usize(..alphabet.len())]);
            }
            let _ = parse(&bytes, &mut v);
        }
    }
}
