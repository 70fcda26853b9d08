//! Turning the ranks' raw output into console-safe lines, and choosing which
//! lines the console shows.
//!
//! Output is split into lines at `\n` and `\r` (so progress bars show up), long
//! lines are cut, terminal escape sequences are removed, other control
//! characters except tab are escaped (`\x07`) and invalid UTF-8 becomes U+FFFD.
//! The log files keep the raw bytes; only the console sees the cleaned text.

use std::fmt;

use crate::config::ConsoleMode;

/// The most bytes of one line the console shows; the rest is counted.
pub const MAX_CONSOLE_LINE_BYTES: usize = 4096;

/// Which output stream of a rank a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

impl Stream {
    /// `stdout` or `stderr`.
    pub fn name(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }
}

impl fmt::Display for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One raw line: its first bytes and how many more were dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawLine {
    pub(crate) bytes: Vec<u8>,
    pub(crate) dropped: usize,
}

impl RawLine {
    /// The console-safe text of the line, with a note when it was cut.
    pub(crate) fn to_console(&self) -> String {
        let mut text = sanitize(&self.bytes);
        if self.dropped > 0 {
            text.push_str(&format!(" … [{} more bytes in the log]", self.dropped));
        }
        text
    }
}

/// Splits a byte stream into lines of at most `max` bytes each.
#[derive(Debug)]
pub(crate) struct LineSplitter {
    max: usize,
    buf: Vec<u8>,
    dropped: usize,
    after_cr: bool,
}

impl LineSplitter {
    pub(crate) fn new(max: usize) -> Self {
        LineSplitter {
            max,
            buf: Vec::new(),
            dropped: 0,
            after_cr: false,
        }
    }

    fn is_empty(&self) -> bool {
        self.buf.is_empty() && self.dropped == 0
    }

    fn emit(&mut self, out: &mut Vec<RawLine>) {
        out.push(RawLine {
            bytes: std::mem::take(&mut self.buf),
            dropped: std::mem::replace(&mut self.dropped, 0),
        });
    }

    /// Feeds bytes; complete lines are appended to `out`.
    pub(crate) fn push(&mut self, data: &[u8], out: &mut Vec<RawLine>) {
        for &b in data {
            match b {
                b'\n' => {
                    // "\r\n" ends one line, not two.
                    if !(self.after_cr && self.is_empty()) {
                        self.emit(out);
                    }
                    self.after_cr = false;
                }
                b'\r' => {
                    // A carriage return redraws the line (progress bars): show
                    // what was drawn, skip empty redraws.
                    if !self.is_empty() {
                        self.emit(out);
                    }
                    self.after_cr = true;
                }
                _ => {
                    self.after_cr = false;
                    if self.buf.len() < self.max {
                        self.buf.push(b);
                    } else {
                        self.dropped += 1;
                    }
                }
            }
        }
    }

    /// Ends the stream: a last line without a newline is appended to `out`.
    pub(crate) fn finish(&mut self, out: &mut Vec<RawLine>) {
        if !self.is_empty() {
            self.emit(out);
        }
    }
}

/// Makes raw bytes safe to print on a terminal: escape sequences (colours,
/// cursor movement, titles) are removed, other control characters except tab
/// are written as `\xNN` (C1 controls as `\u{NN}`), invalid UTF-8 becomes
/// U+FFFD.
pub fn sanitize(bytes: &[u8]) -> String {
    let mut clean = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == 0x1b {
            i = skip_escape(bytes, i);
            continue;
        }
        if b == b'\t' || (b >= 0x20 && b != 0x7f) {
            clean.push(b);
        } else {
            clean.extend_from_slice(format!("\\x{b:02x}").as_bytes());
        }
        i += 1;
    }
    let text = String::from_utf8_lossy(&clean);
    if text.chars().any(|c| ('\u{80}'..='\u{9f}').contains(&c)) {
        text.chars()
            .map(|c| {
                if ('\u{80}'..='\u{9f}').contains(&c) {
                    format!("\\u{{{:x}}}", c as u32)
                } else {
                    c.to_string()
                }
            })
            .collect()
    } else {
        text.into_owned()
    }
}

/// Returns the index just past the escape sequence starting at `start` (an ESC).
fn skip_escape(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    match bytes.get(i) {
        None => i,
        // CSI: parameters and intermediates, then one final byte.
        Some(b'[') => {
            i += 1;
            while let Some(&b) = bytes.get(i) {
                i += 1;
                if (0x40..=0x7e).contains(&b) {
                    break;
                }
                if !(0x20..=0x3f).contains(&b) {
                    // Not a valid CSI byte: stop here and keep what follows.
                    return i - 1;
                }
            }
            i
        }
        // OSC, DCS, SOS, PM, APC: a string ended by BEL or ESC \.
        Some(b']' | b'P' | b'X' | b'^' | b'_') => {
            i += 1;
            while let Some(&b) = bytes.get(i) {
                if b == 0x07 {
                    return i + 1;
                }
                if b == 0x1b {
                    return if bytes.get(i + 1) == Some(&b'\\') {
                        i + 2
                    } else {
                        i
                    };
                }
                i += 1;
            }
            i
        }
        // Two-byte sequences (ESC 7, ESC c, ESC ( B ...).
        Some(&b) => {
            i += 1;
            if (0x20..=0x2f).contains(&b) && bytes.get(i).is_some() {
                i += 1;
            }
            i
        }
    }
}

/// The last lines of one rank's stderr, kept so that the launcher can quote a
/// failing rank's own words (its whole last Python traceback, or its last
/// lines) when it fails, as torchrun's "Root Cause" block does.
#[derive(Debug, Default)]
pub(crate) struct LastWords {
    lines: std::collections::VecDeque<String>,
}

impl LastWords {
    /// Lines kept; a longer traceback is shown from its end.
    pub(crate) const KEPT: usize = 60;
    /// Lines quoted when there is no traceback.
    pub(crate) const QUOTED_WITHOUT_TRACEBACK: usize = 12;

    /// Notes one line (console-safe text).
    pub(crate) fn push(&mut self, line: &str) {
        if self.lines.len() == Self::KEPT {
            self.lines.pop_front();
        }
        self.lines.push_back(line.to_owned());
    }

    /// What to quote: from the last `Traceback (most recent call last):` (or
    /// a C++ `terminate called` / fault handler header) to the end, else the
    /// last few non-empty lines.
    pub(crate) fn quote(&self) -> Vec<String> {
        let start = self.lines.iter().rposition(|l| {
            let t = l.trim_start();
            t.starts_with("Traceback (most recent call last)")
                || t.starts_with("terminate called after throwing")
                || t.starts_with("Fatal Python error")
        });
        let lines: Vec<String> = match start {
            Some(i) => self.lines.iter().skip(i).cloned().collect(),
            None => {
                let skip = self
                    .lines
                    .len()
                    .saturating_sub(Self::QUOTED_WITHOUT_TRACEBACK);
                self.lines.iter().skip(skip).cloned().collect()
            }
        };
        lines.into_iter().filter(|l| !l.trim().is_empty()).collect()
    }
}

/// Words that make a line of another rank's stderr worth showing
/// (matched case-insensitively).
pub const ERROR_WORDS: &[&str] = &[
    "error",
    "exception",
    "traceback",
    "panicked",
    "fatal",
    "killed",
    "abort",
    "timeout",
    "timed out",
    "failed",
    "failure",
    "segmentation fault",
    "core dumped",
    "sigsegv",
    "out of memory",
    "can't open file",
    "no such file or directory",
];

/// Decides which lines of one stream look like errors, following Python
/// tracebacks and Rust panic messages over their continuation lines.
#[derive(Debug, Default)]
pub(crate) struct ErrorLineFilter {
    in_traceback: bool,
    follow: usize,
}

impl ErrorLineFilter {
    /// Whether `line` (console-safe text) should be shown; call it for every
    /// line of the stream, in order.
    pub(crate) fn accept(&mut self, line: &str) -> bool {
        let indented = line.starts_with(' ') || line.starts_with('\t');
        if self.in_traceback {
            if !indented {
                // The exception line ends the traceback.
                self.in_traceback = false;
            }
            return true;
        }
        if self.follow > 0 {
            self.follow -= 1;
            return true;
        }
        let lower = line.to_lowercase();
        if lower.starts_with("traceback (most recent call last)")
            || lower.trim_end().ends_with("(most recent call first):")
        {
            self.in_traceback = true;
            return true;
        }
        if lower.contains("panicked at") {
            // Rust prints the panic message on the next line.
            self.follow = 1;
            return true;
        }
        ERROR_WORDS.iter().any(|w| lower.contains(w))
    }
}

/// Chooses the lines the console shows for one rank, per [`ConsoleMode`].
#[derive(Debug)]
pub(crate) struct ConsoleFilter {
    mode: ConsoleMode,
    primary: bool,
    stderr: ErrorLineFilter,
}

impl ConsoleFilter {
    /// `primary` is this node's local rank 0, whose output is shown in full in
    /// [`ConsoleMode::Rank0`].
    pub(crate) fn new(mode: ConsoleMode, primary: bool) -> Self {
        ConsoleFilter {
            mode,
            primary,
            stderr: ErrorLineFilter::default(),
        }
    }

    pub(crate) fn show(&mut self, stream: Stream, line: &str) -> bool {
        match self.mode {
            ConsoleMode::All => true,
            ConsoleMode::Quiet => false,
            ConsoleMode::Rank0 => match stream {
                Stream::Stdout => self.primary,
                Stream::Stderr => {
                    let looks_bad = self.stderr.accept(line);
                    self.primary || looks_bad
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(chunks: &[&[u8]], max: usize) -> Vec<RawLine> {
        let mut s = LineSplitter::new(max);
        let mut out = Vec::new();
        for c in chunks {
            s.push(c, &mut out);
        }
        s.finish(&mut out);
        out
    }

    fn texts(lines: &[RawLine]) -> Vec<String> {
        lines.iter().map(RawLine::to_console).collect()
    }

    #[test]
    fn splits_lines_across_chunks() {
        let lines = split(&[b"hel", b"lo\nwor", b"ld\r\n\nlast"], 100);
        assert_eq!(texts(&lines), ["hello", "world", "", "last"]);
    }

    #[test]
    fn carriage_returns_make_lines() {
        let lines = split(&[b"\r 10%\r 20%\r100%\n"], 100);
        assert_eq!(texts(&lines), [" 10%", " 20%", "100%"]);
    }

    #[test]
    fn long_lines_are_cut_and_counted() {
        let long = vec![b'a'; 50];
        let lines = split(&[&long, b"\nok\n"], 10);
        assert_eq!(lines[0].bytes.len(), 10);
        assert_eq!(lines[0].dropped, 40);
        assert!(lines[0]
            .to_console()
            .ends_with("[40 more bytes in the log]"));
        assert_eq!(lines[1].to_console(), "ok");
    }

    #[test]
    fn sanitize_strips_escapes_and_controls() {
        assert_eq!(sanitize(b"\x1b[31mred\x1b[0m"), "red");
        assert_eq!(sanitize(b"\x1b]0;title\x07text"), "text");
        assert_eq!(sanitize(b"\x1b]0;title\x1b\\text"), "text");
        assert_eq!(sanitize(b"a\tb\x07c\x08d\x7f"), "a\tb\\x07c\\x08d\\x7f");
        assert_eq!(sanitize(b"bad \xff\xfe utf8"), "bad \u{fffd}\u{fffd} utf8");
        assert_eq!(sanitize("c1 \u{9b}2J".as_bytes()), "c1 \\u{9b}2J");
        assert_eq!(sanitize(b"\x1b(Bx\x1b"), "x");
        assert_eq!(sanitize("ünïcødé ok".as_bytes()), "ünïcødé ok");
    }

    #[test]
    fn error_filter_follows_tracebacks() {
        let mut f = ErrorLineFilter::default();
        let shown: Vec<bool> = [
            "loading data",
            "Traceback (most recent call last):",
            "  File \"train.py\", line 3, in <module>",
            "    main()",
            "ValueError: bad shape",
            "still running",
            "thread 'main' panicked at src/main.rs:2:5:",
            "boom",
            "NCCL WARN Call to connect returned Connection refused",
            "RuntimeError: NCCL communicator was aborted",
            "step 3 done",
        ]
        .iter()
        .map(|l| f.accept(l))
        .collect();
        assert_eq!(
            shown,
            [false, true, true, true, true, false, true, true, false, true, false]
        );
    }

    #[test]
    fn console_filter_modes() {
        let mut rank0 = ConsoleFilter::new(ConsoleMode::Rank0, true);
        assert!(rank0.show(Stream::Stdout, "hi"));
        assert!(rank0.show(Stream::Stderr, "warning"));
        let mut other = ConsoleFilter::new(ConsoleMode::Rank0, false);
        assert!(!other.show(Stream::Stdout, "error on stdout"));
        assert!(!other.show(Stream::Stderr, "just a note"));
        assert!(other.show(Stream::Stderr, "Fatal: oops"));
        let mut all = ConsoleFilter::new(ConsoleMode::All, false);
        assert!(all.show(Stream::Stdout, "x"));
        let mut quiet = ConsoleFilter::new(ConsoleMode::Quiet, true);
        assert!(!quiet.show(Stream::Stderr, "error"));
    }
}
