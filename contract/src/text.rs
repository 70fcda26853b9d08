//! Untrusted text made safe to show: the one place that decides which
//! characters must never reach a terminal, a report or a JSON consumer raw.
//!
//! Strings from traces and logs (span names, host names, command lines, log
//! lines, file names) may hold anything: terminal escape sequences,
//! carriage returns, bidirectional overrides, megabytes without a newline.
//! Every surface that shows them goes through this module:
//!
//! * [`needs_escape`] says which characters are dangerous: C0 and C1
//!   controls (tab, newline and carriage return included), DEL, and the
//!   Unicode bidirectional and zero-width formatting characters.
//! * [`escape_controls`] shows those as visible escapes (`\x1b`, `\r`,
//!   `\u{202e}`) and keeps everything else: the terminal timeline draws
//!   through it.
//! * [`strip_csi`] drops ANSI colour sequences and keeps the rest: `explain`
//!   matches its patterns on that.
//! * [`sanitize`] also drops ANSI colour sequences (which carry no meaning
//!   once escaped), trims the ends and cuts the text to a length: `explain`
//!   stores every string from its inputs through it.
//! * The HTML reports escape markup on top of [`needs_escape`]
//!   (`probe_reports::html::escape`).
//!
//! Traces are escaped where they are read: the trace header's strings
//! (`trace::Header`) and every interned name (`probe_load::model::Strings`)
//! are kept through [`escape_controls`], so every command that prints them,
//! in text, JSON or files, shows escapes and never the raw characters
//! (`tests/terminal_escapes.rs` runs each command on such a run). The module
//! lives in the contract crate so that the loader can use it.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` must not be shown raw: C0 and C1 controls (tab, newline and
/// carriage return included), DEL, and the Unicode bidirectional and
/// zero-width formatting characters that make text display differently
/// from what it is (`U+200B..=U+200F`, `U+2028..=U+202E`,
/// `U+2060..=U+2069`, `U+FEFF`).
pub fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200B}'..='\u{200F}'
                | '\u{2028}'..='\u{202E}'
                | '\u{2060}'..='\u{2069}'
                | '\u{FEFF}'
        )
}

/// Appends the visible escape of `c` to `out`: `\t`, `\r`, `\n`, `\xNN`
/// below U+0080, `\u{NNNN}` above. Only printable ASCII is written.
pub fn push_escape(out: &mut String, c: char) {
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

/// `text` with every character [`needs_escape`] names shown as its escape
/// ([`push_escape`]); borrowed when nothing needed escaping. Nothing is
/// dropped or cut.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if needs_escape(c) {
            push_escape(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The length in bytes of the ANSI CSI sequence (`ESC [ params final`) at
/// the start of `s`, or `None` when `s` does not start with a complete one.
fn csi_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    if b.len() < 3 || b[0] != 0x1b || b[1] != b'[' {
        return None;
    }
    // Parameter and intermediate bytes, then one final byte 0x40..=0x7E.
    for (i, &c) in b.iter().enumerate().skip(2).take(32) {
        match c {
            0x20..=0x3f => continue,
            0x40..=0x7e => return Some(i + 1),
            _ => return None,
        }
    }
    None
}

/// Makes `text` safe to print on one line: drops ANSI CSI sequences (colours
/// and cursor movement), escapes every other character [`needs_escape`]
/// names, trims surrounding whitespace and cuts the text to `max_chars`
/// shown characters, ending it with `… [N more chars]` when cut.
///
/// Work is bounded by `max_chars`, not by the length of `text` (apart from
/// counting the characters left over), so a line of megabytes costs little.
pub fn sanitize(text: &str, max_chars: usize) -> String {
    let text = text.trim();
    let mut out = String::with_capacity(text.len().min(max_chars.saturating_mul(4)) + 16);
    let mut shown = 0usize;
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        if shown >= max_chars {
            let _ = write!(out, "… [{} more chars]", rest.chars().count());
            return out;
        }
        if let Some(n) = csi_len(rest) {
            i += n;
            continue;
        }
        let Some(c) = rest.chars().next() else { break };
        if needs_escape(c) {
            push_escape(&mut out, c);
        } else {
            out.push(c);
        }
        shown += 1;
        i += c.len_utf8();
    }
    out
}

/// `text` without its ANSI CSI sequences (colours, cursor movement), other
/// characters kept as they are: what pattern matching looks at.
pub fn strip_csi(text: &str) -> Cow<'_, str> {
    if !text.contains('\x1b') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        if let Some(n) = csi_len(rest) {
            i += n;
            continue;
        }
        let Some(c) = rest.chars().next() else { break };
        out.push(c);
        i += c.len_utf8();
    }
    Cow::Owned(out)
}

/// Cuts plain (already safe) text to `max_chars` characters, the last of
/// which becomes `…` when it is cut.
pub fn clip(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text.to_owned(),
        Some(_) if max_chars == 0 => String::new(),
        Some(_) => {
            let mut s: String = text.chars().take(max_chars - 1).collect();
            s.push('…');
            s
        }
    }
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
        // An unfinished CSI at the very end is escaped too.
        assert_eq!(sanitize("a\u{1b}[3", 10), "a\\x1b[3");
    }

    #[test]
    fn cuts_long_lines() {
        let long = "é".repeat(1000);
        let s = sanitize(&long, 10);
        assert!(s.starts_with(&"é".repeat(10)));
        assert!(s.ends_with("… [990 more chars]"), "{s}");
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(clip("abc", 4), "abc");
        assert_eq!(clip("abc", 3), "abc");
        assert_eq!(clip("abc", 0), "");
    }

    #[test]
    fn escape_controls_keeps_text_and_escapes_the_rest() {
        let evil = "a\u{1b}[31mred\u{7}\r\nb\u{202e}c\u{0}\u{85}";
        let c = escape_controls(evil);
        assert!(!c.chars().any(needs_escape), "{c}");
        assert_eq!(c, "a\\x1b[31mred\\x07\\r\\nb\\u{202e}c\\x00\\u{0085}");
        assert!(matches!(escape_controls("plain µs ✓"), Cow::Borrowed(_)));
    }

    #[test]
    fn megabyte_lines_are_cut_quickly_and_completely() {
        let mut line = "\u{1b}[1m<script>".repeat(200_000);
        line.push('\r');
        let s = sanitize(&line, 50);
        assert!(s.chars().count() < 80, "{s}");
        assert!(!s.chars().any(needs_escape));
        assert!(s.ends_with(" more chars]"), "{s}");
    }
}
