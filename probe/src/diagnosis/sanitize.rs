//! Making untrusted text safe to print: control characters escaped, ANSI
//! colour sequences dropped, very long lines cut.
//!
//! Every string that comes from an input file (log lines, file names, values
//! from a manifest) passes through [`sanitize`] before it is stored in a
//! report, so neither the text rendering nor the JSON ever carries a raw
//! control character (terminal escapes, carriage returns, bidirectional
//! overrides).

use std::fmt::Write as _;
use std::path::Path;

/// The longest evidence line kept, in characters.
pub const MAX_EVIDENCE_CHARS: usize = 300;

/// Whether a character must not be printed raw: C0 and C1 controls (tab
/// included), DEL, and the Unicode bidirectional and zero-width formatting
/// characters that can make text display differently from what it is.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200B}'..='\u{200F}'
                | '\u{2028}'..='\u{202E}'
                | '\u{2060}'..='\u{2069}'
                | '\u{FEFF}'
        )
}

/// Writes the escape of `c`: `\t`, `\r`, `\n`, `\xNN` below 0x80, otherwise
/// `\u{NNNN}`.
fn push_escape(out: &mut String, c: char) {
    match c {
        '\t' => out.push_str("\\t"),
        '\r' => out.push_str("\\r"),
        '\n' => out.push_str("\\n"),
        c if (c as u32) < 0x80 => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\u{{{:04x}}}", c as u32);
        }
    }
}

/// Skips an ANSI CSI sequence (`ESC [ params final`) starting at the `ESC`;
/// returns how many chars it spans, or `None` when it is not a complete CSI.
fn csi_len(chars: &[char]) -> Option<usize> {
    if chars.len() < 3 || chars[0] != '\u{1b}' || chars[1] != '[' {
        return None;
    }
    // Parameter and intermediate bytes, then one final byte 0x40..=0x7E.
    for (i, &c) in chars.iter().enumerate().skip(2).take(32) {
        match c {
            '\u{20}'..='\u{3F}' => continue,
            '\u{40}'..='\u{7E}' => return Some(i + 1),
            _ => return None,
        }
    }
    None
}

/// Makes `text` safe to print: drops ANSI colour sequences, escapes the
/// remaining control and formatting characters, trims surrounding
/// whitespace and cuts it to `max_chars` characters (marking the cut).
pub fn sanitize(text: &str, max_chars: usize) -> String {
    let chars: Vec<char> = text.trim().chars().collect();
    let mut out = String::with_capacity(chars.len().min(max_chars) + 16);
    let mut shown = 0usize;
    let mut i = 0;
    while i < chars.len() {
        if shown >= max_chars {
            let rest = chars.len() - i;
            let _ = write!(out, "… [{rest} more chars]");
            return out;
        }
        let c = chars[i];
        if c == '\u{1b}' {
            if let Some(n) = csi_len(&chars[i..]) {
                i += n;
                continue;
            }
        }
        if needs_escape(c) {
            push_escape(&mut out, c);
        } else {
            out.push(c);
        }
        shown += 1;
        i += 1;
    }
    out
}

/// A path as safe display text (lossy for non-UTF-8 names).
pub fn display_path(path: &Path) -> String {
    sanitize(&path.to_string_lossy(), 4096)
}

/// Cuts plain (already safe) text to `max_chars`, adding `…` when cut.
pub fn clip(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    let mut s: String = text.chars().take(max_chars.saturating_sub(1)).collect();
    s.push('…');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_controls_and_drops_colours() {
        let s = sanitize("\u{1b}[31mERROR\u{1b}[0m bell\u{7} tab\there", 100);
        assert_eq!(s, "ERROR bell\\x07 tab\\there");
        let s = sanitize("a\u{202E}b\u{0}c\u{9b}d", 100);
        assert_eq!(s, "a\\u{202e}b\\x00c\\u{009b}d");
        // A lone ESC that is not a CSI sequence is escaped, not dropped.
        assert_eq!(sanitize("x\u{1b}]0;title\u{7}", 100), "x\\x1b]0;title\\x07");
        assert!(!sanitize("\r\n\u{1b}", 10).chars().any(char::is_control));
    }

    #[test]
    fn cuts_long_lines() {
        let long = "é".repeat(1000);
        let s = sanitize(&long, 10);
        assert!(s.starts_with(&"é".repeat(10)));
        assert!(s.ends_with("… [990 more chars]"), "{s}");
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(clip("abc", 4), "abc");
    }
}
