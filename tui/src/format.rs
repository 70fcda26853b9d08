//! Text for the screen: durations, times on the axis, sizes and rates with
//! units, and [`clean`], which makes any string taken from a trace or a log
//! safe to draw.

use std::borrow::Cow;

use probe::text::{self, needs_escape};

/// Most characters drawn from one string: wider than any screen, and it
/// bounds the work per frame for strings of megabytes.
pub const MAX_DRAWN_CHARS: usize = 1024;

/// A string from a trace, a log or a file name made safe to draw: control
/// and formatting characters ([`probe::text::needs_escape`]) are shown as
/// escapes (`\n`, `\x1b`, `\u{202e}`), everything else is kept, up to
/// [`MAX_DRAWN_CHARS`] characters (a longer string ends in `…`, `~` in
/// ASCII). With `ascii`, every non-ASCII character is escaped too.
pub fn clean(s: &str, ascii: bool) -> Cow<'_, str> {
    let (s, cut) = match s.char_indices().nth(MAX_DRAWN_CHARS) {
        Some((i, _)) => (&s[..i], true),
        None => (s, false),
    };
    let bad = |c: char| needs_escape(c) || (ascii && !c.is_ascii());
    let mut out = if !ascii {
        text::escape_controls(s)
    } else if !s.chars().any(bad) {
        Cow::Borrowed(s)
    } else {
        let mut out = String::with_capacity(s.len() + 8);
        for c in s.chars() {
            if !bad(c) {
                out.push(c);
            } else if let Some(t) = transliterate(c).filter(|_| !needs_escape(c)) {
                out.push_str(t);
            } else {
                text::push_escape(&mut out, c);
            }
        }
        Cow::Owned(out)
    };
    if cut {
        out.to_mut().push(if ascii { '~' } else { '…' });
    }
    out
}

/// ASCII stand-ins for the symbols ddp-probe's own texts use.
fn transliterate(c: char) -> Option<&'static str> {
    Some(match c {
        'µ' => "u",
        '…' => "...",
        '→' => "->",
        '←' => "<-",
        '↑' => "Up",
        '↓' => "Down",
        '×' => "x",
        '≈' => "~",
        '±' => "+/-",
        '≤' => "<=",
        '≥' => ">=",
        '–' | '—' | '─' => "-",
        '·' | '•' => "-",
        '│' => "|",
        '²' => "^2",
        '⁶' => "^6",
        '‘' | '’' => "'",
        '“' | '”' => "\"",
        _ => return None,
    })
}

/// `s` cut to at most `max` characters, ending in `…` (`~` in ASCII) when
/// cut.
pub fn clip(s: &str, max: usize, ascii: bool) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    if max == 0 {
        return String::new();
    }
    let mut out: String = s.chars().take(max - 1).collect();
    out.push(if ascii { '~' } else { '…' });
    out
}

/// The micro sign, or `u` in ASCII.
fn micro(ascii: bool) -> &'static str {
    if ascii {
        "u"
    } else {
        "µ"
    }
}

/// A duration as the summary and the report print it ([`probe::units::ns`]):
/// `812 ns`, `12.3 µs`, `4.6 ms`, `1.23 s`; from ten minutes on `2.5 min`
/// (a timeline can span hours); `us` for `µs` in ASCII.
pub fn duration(ns: i64, ascii: bool) -> String {
    let v = ns as f64;
    if v.abs() >= 600e9 {
        return format!("{} min", sig3(v / 60e9));
    }
    let text = probe::units::ns(v);
    if ascii {
        text.replace('µ', micro(true))
    } else {
        text
    }
}

/// `x` with three significant digits (at least the integer part).
fn sig3(x: f64) -> String {
    let a = x.abs();
    if a >= 99.95 {
        format!("{x:.0}")
    } else if a >= 9.995 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// The unit and divisor for times up to `scale` ns.
fn time_unit(scale: i64, ascii: bool) -> (f64, String) {
    let a = scale.unsigned_abs();
    if a < 1_000 {
        (1.0, "ns".into())
    } else if a < 1_000_000 {
        (1e3, format!("{}s", micro(ascii)))
    } else if a < 1_000_000_000 {
        (1e6, "ms".into())
    } else {
        (1e9, "s".into())
    }
}

/// Decimals needed to show multiples of `step_u` (in the unit).
fn decimals_for(step_u: f64) -> usize {
    if step_u >= 1.0 {
        0
    } else {
        (-step_u.log10() - 1e-9).ceil().clamp(0.0, 9.0) as usize
    }
}

/// The label of an axis tick at `t` ns after the start of the run, for
/// ticks `step` ns apart on an axis reaching `scale` ns: the unit of the
/// axis's magnitude, just enough decimals to tell ticks apart.
pub fn axis_label(t: i64, step: i64, scale: i64, ascii: bool) -> String {
    let (div, unit) = time_unit(scale.max(step), ascii);
    let decimals = decimals_for(step.max(1) as f64 / div);
    format!("{:.*} {unit}", decimals, t as f64 / div)
}

/// A time on the run's clock (`t` ns after its start) in the unit of
/// `scale` (the largest time shown next to it), with enough decimals to
/// resolve `resolution` ns: `12.345 ms`.
pub fn time_at(t: i64, resolution: i64, scale: i64, ascii: bool) -> String {
    let (div, unit) = time_unit(scale.unsigned_abs().max(t.unsigned_abs()) as i64, ascii);
    let decimals = decimals_for(resolution.max(1) as f64 / div);
    format!("{:.*} {unit}", decimals, t as f64 / div)
}

/// A nice tick spacing (1, 2 or 5 × 10ⁿ ns) of at least `raw` ns.
pub fn nice_step(raw: f64) -> i64 {
    let raw = raw.max(1.0);
    let mut p = 10f64.powf(raw.log10().floor());
    loop {
        for m in [1.0, 2.0, 5.0] {
            if m * p >= raw {
                return (m * p).min(i64::MAX as f64 / 4.0) as i64;
            }
        }
        p *= 10.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_never_pass() {
        let evil = "a\u{1b}[31mred\u{7}\r\nb\u{202e}c\u{0}";
        let c = clean(evil, false);
        assert!(!c.chars().any(needs_escape), "{c}");
        assert_eq!(c, "a\\x1b[31mred\\x07\\r\\nb\\u{202e}c\\x00");
        assert!(matches!(clean("plain µs", false), Cow::Borrowed(_)));
        assert_eq!(clean("µs", true), "us");
        assert_eq!(clean("a → b ✓", true), "a -> b \\u{2713}");
        let long = "\u{1b}".repeat(MAX_DRAWN_CHARS * 3);
        let c = clean(&long, false);
        assert_eq!(c, "\\x1b".repeat(MAX_DRAWN_CHARS) + "…");
    }

    #[test]
    fn units() {
        assert_eq!(duration(812, false), "812 ns");
        assert_eq!(duration(12_345, false), "12.3 µs");
        assert_eq!(duration(12_345, true), "12.3 us");
        assert_eq!(duration(4_560_000, false), "4.6 ms");
        assert_eq!(duration(123_400_000, false), "123 ms");
        assert_eq!(duration(1_234_000_000, false), "1.23 s");
        assert_eq!(duration(900_000_000_000, false), "15.0 min");
        assert_eq!(clip("abcdef", 4, false), "abc…");
        assert_eq!(clip("abc", 4, true), "abc");
    }

    #[test]
    fn axis_labels_and_steps() {
        assert_eq!(nice_step(3.0), 5);
        assert_eq!(nice_step(12_000.0), 20_000);
        assert_eq!(nice_step(0.0), 1);
        assert_eq!(
            axis_label(50_000_000, 10_000_000, 90_000_000, false),
            "50 ms"
        );
        assert_eq!(axis_label(1_500_000, 500_000, 3_000_000, false), "1.5 ms");
        assert_eq!(axis_label(20_000, 5_000, 40_000, true), "20 us");
        assert_eq!(
            axis_label(2_000_000_000, 500_000_000, 3_500_000_000, false),
            "2.0 s"
        );
        assert_eq!(axis_label(0, 200, 800, false), "0 ns");
        assert_eq!(
            axis_label(1_200_100_000, 100_000, 1_300_000_000, false),
            "1.2001 s"
        );
        assert_eq!(time_at(12_345_678, 1_000, 0, false), "12.346 ms");
        assert_eq!(time_at(1_500_000_000, 1_000_000, 0, false), "1.500 s");
        assert_eq!(time_at(-500, 10, 0, false), "-500 ns");
        assert_eq!(time_at(0, 100_000, 352_900_000, false), "0.0 ms");
    }
}
