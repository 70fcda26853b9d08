//! Prefixes that a logger or a tool put before lines, learnt from the log and taken off: before
//! every line of a traceback or a stack dump, learnt from the block's first line
//! ([`lesson`]); and before nearly every line of the log, learnt from all of them
//! ([`LinePrefixProbe`]).
//!
//! Python's tracebacks and py-spy's stack dumps are read by their indentation (`  File ...`,
//! the exception line back at the block's column), so a prefix on each of their lines hides
//! them. Some prefixes are known and stripped by name (`[rank0]:`, time stamps, Ray's tags:
//! `scan.rs`); others are seen on real logs only as the text before `Traceback (most recent
//! call last):` or py-spy's `Thread N (idle): "MainThread"`: vLLM's logger (`ERROR 10-13
//! 09:06:25 [multiproc_executor.py:597] `, repeated on every line of the traceback it logs),
//! pytest's `E       `, a numbered paste (`cat -n`'s `    12\t`), Python's `logging` or loguru
//! around each line of a child's output (`- root - ERROR - `, `| ERROR    | app:run:42 - `).
//! That text becomes a pattern: its digits match any number, its inner blanks any run of
//! blanks (loguru pads its level names, `cat -n` right-aligns numbers), its last blank exactly
//! (what follows is the traceback's own indentation), and every other character itself.

use crate::tool_output::thread_header;

/// The first line of a Python traceback.
const TRACEBACK_START: &str = "Traceback (most recent call last)";

/// The longest text before a block's first line that is taken for a prefix, in bytes.
pub(crate) const PREFIX_MAX_BYTES: usize = 160;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    /// One or more ASCII digits.
    Digits,
    /// One or more spaces or tabs (none or more at the start of the line).
    Blank { at_start: bool },
    /// This text exactly.
    Text(String),
    /// A logger's level name ([`LEVEL_NAMES`]).
    Level,
}

/// A learnt per-line prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RecordPrefix {
    pieces: Vec<Piece>,
}

/// What a line says about the prefix of the lines after it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Lesson {
    /// It starts a block after this prefix, `len` bytes long.
    Prefix(RecordPrefix, usize),
    /// It starts a block at its own start: the block has no prefix.
    Bare,
    /// It starts no block.
    Nothing,
}

impl RecordPrefix {
    fn from_text(prefix: &str) -> RecordPrefix {
        let mut pieces: Vec<Piece> = Vec::new();
        let trailing_blank = prefix.len() - prefix.trim_end_matches([' ', '\t']).len();
        let (inner, last) = prefix.split_at(prefix.len() - trailing_blank);
        let mut chars = inner.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            let piece = if c.is_ascii_digit() {
                while chars.next_if(|(_, c)| c.is_ascii_digit()).is_some() {}
                Piece::Digits
            } else if c == ' ' || c == '\t' {
                while chars.next_if(|(_, c)| *c == ' ' || *c == '\t').is_some() {}
                Piece::Blank { at_start: i == 0 }
            } else {
                match pieces.last_mut() {
                    Some(Piece::Text(t)) => {
                        t.push(c);
                        continue;
                    }
                    _ => Piece::Text(c.to_string()),
                }
            };
            pieces.push(piece);
        }
        pieces.push(Piece::Text(last.to_owned()));
        RecordPrefix { pieces }
    }

    /// The length of this prefix at the start of `line`, if it is there.
    pub fn length_in(&self, line: &str) -> Option<usize> {
        let b = line.as_bytes();
        let mut at = 0;
        for piece in &self.pieces {
            match piece {
                Piece::Digits => {
                    let n = b[at..].iter().take_while(|c| c.is_ascii_digit()).count();
                    if n == 0 {
                        return None;
                    }
                    at += n;
                }
                Piece::Blank { at_start } => {
                    let n = b[at..]
                        .iter()
                        .take_while(|c| **c == b' ' || **c == b'\t')
                        .count();
                    if n == 0 && !at_start {
                        return None;
                    }
                    at += n;
                }
                Piece::Text(t) => {
                    if !line[at..].starts_with(t.as_str()) {
                        return None;
                    }
                    at += t.len();
                }
                Piece::Level => {
                    let n = b[at..]
                        .iter()
                        .take_while(|c| c.is_ascii_alphabetic())
                        .count();
                    if !LEVEL_NAMES.contains(&&line[at..at + n]) {
                        return None;
                    }
                    at += n;
                }
            }
        }
        Some(at)
    }
}

/// What `line` (without the prefixes stripped by name) teaches: where a traceback's or a stack
/// dump's first line starts in it, and the text before that as a prefix when it is one (it
/// ends in a blank, holds something else, and is not an exception's name: `RuntimeError:
/// Traceback ...` is a message that quotes a traceback).
pub(crate) fn lesson(line: &str) -> Lesson {
    let start = line
        .find(TRACEBACK_START)
        .or_else(|| thread_header_at(line));
    let Some(start) = start else {
        return Lesson::Nothing;
    };
    let prefix = &line[..start];
    if prefix.trim().is_empty() {
        return Lesson::Bare;
    }
    let spoken = prefix.trim_end();
    let separated = prefix.ends_with([' ', '\t']) || is_logging_header(prefix);
    let names_an_exception = spoken.ends_with(':')
        && spoken[..spoken.len() - 1]
            .rsplit([' ', '\t'])
            .next()
            .is_some_and(|w| w.ends_with("Error") || w.ends_with("Exception"));
    if !separated || names_an_exception || start > PREFIX_MAX_BYTES {
        return Lesson::Nothing;
    }
    Lesson::Prefix(RecordPrefix::from_text(prefix), start)
}

/// Level names that loggers print (Python's `logging`, loguru, vLLM's logger, log collectors).
/// Upper case only: a message may start with `Error:`.
const LEVEL_NAMES: [&str; 9] = [
    "TRACE", "DEBUG", "INFO", "NOTICE", "WARN", "WARNING", "ERROR", "CRITICAL", "FATAL",
];

/// The share of a log's non-blank lines, in percent, that must start with the same logger
/// prefix for [`LinePrefixProbe`] to take it off.
const LINE_PREFIX_SHARE_PERCENT: usize = 90;
/// The fewest non-blank lines a log needs for a prefix on every line to be told.
const LINE_PREFIX_LINES_MIN: usize = 2;
/// Lines whose start may become a candidate prefix, and how many are kept to count against it.
const LINE_PREFIX_CANDIDATES: usize = 5;
const LINE_PREFIX_EARLY_LINES: usize = 64;

/// One part of a line's start, as [`LinePrefixProbe`] compares lines.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Digits,
    Blank,
    Level,
    /// A run of ASCII letters that is no level name.
    Word(String),
    /// Any other character.
    Mark(char),
}

/// The tokens of `line`'s first [`PREFIX_MAX_BYTES`] bytes, each with the byte it ends at.
fn tokens(line: &str) -> Vec<(Token, usize)> {
    let mut out = Vec::new();
    let mut chars = line.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if i >= PREFIX_MAX_BYTES {
            break;
        }
        let run = |chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>,
                   keep: fn(&char) -> bool| {
            while chars.next_if(|(_, c)| keep(c)).is_some() {}
            chars.peek().map_or(line.len(), |(j, _)| *j)
        };
        let (token, end) = if c.is_ascii_digit() {
            (Token::Digits, run(&mut chars, |c| c.is_ascii_digit()))
        } else if c == ' ' || c == '\t' {
            (Token::Blank, run(&mut chars, |c| *c == ' ' || *c == '\t'))
        } else if c.is_ascii_alphabetic() {
            let end = run(&mut chars, |c| c.is_ascii_alphabetic());
            let word = &line[i..end];
            if LEVEL_NAMES.contains(&word) {
                (Token::Level, end)
            } else {
                (Token::Word(word.to_owned()), end)
            }
        } else {
            (Token::Mark(c), i + c.len_utf8())
        };
        out.push((token, end));
    }
    out
}

/// How many leading tokens two lines share.
fn shared_tokens(a: &[(Token, usize)], b: &[(Token, usize)]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x.0 == y.0).count()
}

/// A line whose start may be the prefix of every line.
#[derive(Debug)]
struct Candidate {
    text: String,
    tokens: Vec<(Token, usize)>,
    /// `reach[k]`: the lines that share at least `k + 1` leading tokens with it.
    reach: Vec<usize>,
    /// `narrowest[k]` for a blank token `k`: the narrowest blank in its place among the lines
    /// that share the tokens before it, 0 where such a line has none. A prefix ends in that
    /// many blanks: what a line has beyond them is its own indentation (`INFO:root:    wait`
    /// beside `INFO:root:Thread 1 (idle)`).
    narrowest: Vec<usize>,
}

impl Candidate {
    fn new(line: &str, tokens: Vec<(Token, usize)>) -> Candidate {
        let mut c = Candidate {
            text: line[..tokens.last().map_or(0, |t| t.1)].to_owned(),
            reach: vec![0; tokens.len()],
            narrowest: vec![usize::MAX; tokens.len()],
            tokens,
        };
        let own = c.tokens.clone();
        c.observe(&own);
        c
    }

    /// Counts a line's start against this one's.
    fn observe(&mut self, toks: &[(Token, usize)]) {
        let shared = shared_tokens(&self.tokens, toks);
        for r in self.reach.iter_mut().take(shared) {
            *r += 1;
        }
        for k in 0..self.tokens.len().min(shared + 1) {
            if self.tokens[k].0 != Token::Blank {
                continue;
            }
            let width = if k < shared {
                toks[k].1 - k.checked_sub(1).map_or(0, |j| toks[j].1)
            } else {
                0
            };
            self.narrowest[k] = self.narrowest[k].min(width);
        }
    }

    /// The prefix in this line's first `shared` tokens.
    fn prefix(&self, shared: usize) -> Option<RecordPrefix> {
        let toks = &self.tokens[..shared];
        let level = toks.iter().position(|(t, _)| *t == Token::Level)?;
        // It ends after the separators that follow the level, at their last blank (`ERROR - `,
        // `[INFO] `, `ERROR: `); after the logger's name where no blank follows the level
        // (Python's default `ERROR:root:`).
        let mut cuts = Vec::new();
        let mut i = level + 1;
        while i < toks.len() && cuts.len() < 2 {
            if matches!(toks[i].0, Token::Blank | Token::Mark(_)) {
                let start = i;
                while i < toks.len() && matches!(toks[i].0, Token::Blank | Token::Mark(_)) {
                    i += 1;
                }
                let last_blank = (start..i).rev().find(|&j| toks[j].0 == Token::Blank);
                cuts.push((last_blank.map_or(i, |j| j + 1), last_blank.is_some()));
            } else {
                i += 1;
            }
        }
        let cut = match cuts[..] {
            [(first, true), ..] | [(first, false)] => first,
            [(_, false), (second, _)] => second,
            _ => return None,
        };
        // NCCL's own `host:pid:tid [dev] NCCL INFO `.
        if toks[..cut]
            .iter()
            .any(|(t, _)| matches!(t, Token::Word(w) if w == "NCCL"))
        {
            return None;
        }
        // Its last blank no wider than every line has it; none where a line has none there.
        let last_blank = (toks[cut - 1].0 == Token::Blank).then(|| self.narrowest[cut - 1]);
        let cut = if last_blank == Some(0) { cut - 1 } else { cut };
        let mut pieces: Vec<Piece> = Vec::new();
        let mut from = 0;
        for (j, (t, end)) in toks[..cut].iter().enumerate() {
            let mut text = &self.text[from..*end];
            from = *end;
            // The last blank exactly: what follows may be indented (a traceback's frame).
            if *t == Token::Blank {
                text = &text[..last_blank.unwrap_or(text.len()).min(text.len())];
            }
            let piece = match t {
                Token::Digits => Piece::Digits,
                Token::Level => Piece::Level,
                Token::Blank if j + 1 < cut => Piece::Blank { at_start: false },
                _ => match pieces.last_mut() {
                    Some(Piece::Text(t)) => {
                        t.push_str(text);
                        continue;
                    }
                    _ => Piece::Text(text.to_owned()),
                },
            };
            pieces.push(piece);
        }
        Some(RecordPrefix { pieces })
    }
}

/// Finds a logger's prefix on (nearly) every line of a log, one that no reader strips by name:
/// a program's `logging` or a job system writing each line of a child's output as a record of
/// its own (`2024-05-01 10:00:00,123 - root - ERROR - `, `ERROR `, `[INFO] `). Such a prefix
/// hides what each line starts with (NCCL's `host:pid:tid [dev] NCCL WARN`, a traceback), and
/// its level says nothing of the line: NCCL's INFO lines logged as errors.
///
/// A prefix is the tokens that at least [`LINE_PREFIX_SHARE_PERCENT`] percent of the non-blank
/// lines share (digits as any number, blanks as any run of blanks, level names as any level),
/// up to the separators after a level name. A prefix that holds `NCCL` is NCCL's own. It is
/// learnt from the lines without the prefixes read by name (a launcher's label, a time stamp),
/// and one of those after it (`ERROR [rank1]: `) is read after it is taken off.
///
/// Measured on `tests/corpus.rs`'s real logs (2026-12-03): `- root - ERROR - ` before every
/// line changed 8 development answers (5 right ones) and `ERROR ` 8; see the damage test there.
#[derive(Debug, Default)]
pub(crate) struct LinePrefixProbe {
    lines: usize,
    early: Vec<Vec<(Token, usize)>>,
    candidates: Vec<Candidate>,
}

impl LinePrefixProbe {
    /// Feeds one line (colours and paste quoting taken off).
    pub fn line(&mut self, line: &str) {
        let line = line.trim_start_matches([' ', '\t']);
        if line.trim().is_empty() {
            return;
        }
        self.lines += 1;
        let toks = tokens(line);
        for c in &mut self.candidates {
            c.observe(&toks);
        }
        if self.early.len() >= LINE_PREFIX_EARLY_LINES {
            return;
        }
        if self.candidates.len() < LINE_PREFIX_CANDIDATES
            && toks.iter().any(|(t, _)| *t == Token::Level)
        {
            let mut c = Candidate::new(line, toks.clone());
            self.early.iter().for_each(|e| c.observe(e));
            self.candidates.push(c);
        }
        self.early.push(toks);
    }

    /// The prefix found, if any.
    pub fn prefix(&self) -> Option<RecordPrefix> {
        if self.lines < LINE_PREFIX_LINES_MIN {
            return None;
        }
        let needed = (self.lines * LINE_PREFIX_SHARE_PERCENT).div_ceil(100);
        self.candidates
            .iter()
            .filter_map(|c| {
                let shared = c.reach.iter().take_while(|r| **r >= needed).count();
                Some((shared, c)).filter(|(k, _)| *k > 0)
            })
            // The first of the longest (candidates of one length differ only in their text).
            .fold(
                None,
                |best: Option<(usize, &Candidate)>, (k, c)| match best {
                    Some((b, _)) if b >= k => best,
                    _ => Some((k, c)),
                },
            )
            .and_then(|(shared, c)| c.prefix(shared))
    }
}

/// Python `logging`'s default header, `LEVEL:logger:` (`INFO:root:`, `ERROR:__main__:`),
/// which has no blank before the message.
fn is_logging_header(prefix: &str) -> bool {
    let Some((level, rest)) = prefix.split_once(':') else {
        return false;
    };
    let logger = rest.strip_suffix(':').unwrap_or("-");
    ["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"].contains(&level)
        && !logger.is_empty()
        && logger
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.')
}

/// Where py-spy's thread header (`Thread 688514 (idle): "MainThread"`) starts after a blank.
fn thread_header_at(line: &str) -> Option<usize> {
    line.match_indices("Thread ")
        .map(|(i, _)| i)
        .find(|&i| thread_header(line[i..].trim_end()).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `line` after the prefix `p` (which must be there).
    fn rest<'a>(p: &RecordPrefix, line: &'a str) -> &'a str {
        &line[p.length_in(line).expect("the prefix is there")..]
    }

    fn learnt(line: &str) -> RecordPrefix {
        match lesson(line) {
            Lesson::Prefix(p, len) => {
                assert_eq!(p.length_in(line), Some(len), "{line}");
                p
            }
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn a_logger_s_prefix_is_learnt_and_found_with_other_numbers() {
        // vLLM's logger repeats its prefix on every line of the traceback it logs.
        let p = learnt(
            "ERROR 10-13 09:06:25 [v1/executor/multiproc_executor.py:597] Traceback (most recent call last):",
        );
        let line = "ERROR 10-13 09:06:26 [v1/executor/multiproc_executor.py:597]   File \"x.py\", line 3, in f";
        assert_eq!(rest(&p, line), "  File \"x.py\", line 3, in f");
        // Another logger's line keeps its text.
        assert_eq!(p.length_in("INFO 10-13 09:06:26 [llm.py:1] x"), None);

        // loguru pads its level names; its location's line number changes.
        let p = learnt("| ERROR    | __main__:main:42 - Traceback (most recent call last):");
        let line = "| ERROR    | __main__:main:142 -     raise ValueError()";
        assert_eq!(rest(&p, line), "    raise ValueError()");

        // `cat -n` right-aligns the numbers it puts before each line, then a tab.
        let p = learnt("     9\tTraceback (most recent call last):");
        let line = "    10\t  File \"train.py\", line 8, in <module>";
        assert_eq!(rest(&p, line), "  File \"train.py\", line 8, in <module>");
        // Python's `logging` with its default format around each line of a child's output.
        let p = learnt("INFO:root:Traceback (most recent call last):");
        let line = "INFO:root:  File \"train.py\", line 8, in <module>";
        assert_eq!(rest(&p, line), "  File \"train.py\", line 8, in <module>");
        // pytest's `E` lines.
        let p = learnt("E       Traceback (most recent call last):");
        assert_eq!(p.length_in("E         File \"x.py\""), Some(8));
    }

    #[test]
    fn a_stack_dump_s_thread_header_teaches_too() {
        let p = learnt("2024-01-01 - root - INFO - Thread 688514 (idle): \"MainThread\"");
        let line = "2024-01-01 - root - INFO -     wait (threading.py:320)";
        assert_eq!(rest(&p, line), "    wait (threading.py:320)");
    }

    #[test]
    fn text_that_is_no_prefix_teaches_nothing() {
        assert_eq!(lesson("Traceback (most recent call last):"), Lesson::Bare);
        assert_eq!(
            lesson("    Traceback (most recent call last):"),
            Lesson::Bare
        );
        assert_eq!(lesson("RuntimeError: shape mismatch"), Lesson::Nothing);
        // A progress bar the traceback was joined to, an exception quoting a traceback.
        for line in [
            "  0%|          | 1/25000 [00:09<65:42:33,  9.46s/it]Traceback (most recent call last):",
            "RuntimeError: Traceback (most recent call last):",
            "RuntimeError:Traceback (most recent call last):",
            "INFO:a b:Traceback (most recent call last):",
            "torch.multiprocessing.spawn.ProcessRaisedException: Traceback (most recent call last):",
        ] {
            assert_eq!(lesson(line), Lesson::Nothing, "{line}");
        }
    }

    /// The prefix that `lines` share, and each line without it.
    fn without_line_prefix(lines: &[&str]) -> Vec<String> {
        let mut probe = LinePrefixProbe::default();
        lines.iter().for_each(|l| probe.line(l));
        let prefix = probe.prefix();
        lines
            .iter()
            .map(|l| match prefix.as_ref().and_then(|p| p.length_in(l)) {
                Some(n) => l[n..].to_owned(),
                None => (*l).to_owned(),
            })
            .collect()
    }

    #[test]
    fn a_logger_s_prefix_on_nearly_every_line_is_taken_off() {
        // A wrapper's `logging` around each line of a child's output, levels varying.
        let got = without_line_prefix(&[
            "2023-10-13 17:40:02,544 - root - INFO - host-a:72:72 [1] NCCL INFO Bootstrap",
            "2023-10-13 17:40:03,544 - root - ERROR - host-a:72:80 [1] NCCL WARN Call to connect",
            "2023-10-13 17:40:04,544 - root - ERROR - Traceback (most recent call last):",
            "2023-10-13 17:40:05,544 - root - ERROR -   File \"train.py\", line 8, in <module>",
        ]);
        assert_eq!(got[1], "host-a:72:80 [1] NCCL WARN Call to connect");
        // The last blank exactly: a frame keeps its indentation.
        assert_eq!(got[3], "  File \"train.py\", line 8, in <module>");
        // A bare level; loguru's padded one; Python's default format.
        let got = without_line_prefix(&["ERROR [rank1]: x", "ERROR [rank0]: y", "ERROR z"]);
        assert_eq!(got, ["[rank1]: x", "[rank0]: y", "z"]);
        let got = without_line_prefix(&["| INFO     | a:b:1 - x", "| ERROR    | a:b:2 - y"]);
        assert_eq!(got[1], "a:b:2 - y");
        let got = without_line_prefix(&["ERROR:root:x y", "INFO:root:z", "ERROR:root:  File"]);
        assert_eq!(got, ["x y", "z", "  File"]);
        // A stack whose frames are indented under an unindented header: the blanks most lines
        // have after the prefix are theirs.
        let got = without_line_prefix(&[
            "INFO:root:Thread 1439102 (idle): \"MainThread\"",
            "INFO:root:    wait (threading.py:306)",
            "INFO:root:    get (queue.py:179)",
            "INFO:root:    _try_get_data (torch/utils/data/dataloader.py:1011)",
        ]);
        assert_eq!(got[1], "    wait (threading.py:306)");
    }

    #[test]
    fn lines_that_share_no_logger_s_prefix_keep_theirs() {
        // NCCL's own prefix, with its level.
        let nccl = [
            "host-a:72:72 [1] NCCL INFO Bootstrap : Using eth0",
            "host-a:72:72 [1] NCCL INFO NET/Socket : Using [0]eth0",
            "host-a:72:80 [1] NCCL WARN Call to connect returned Connection refused",
        ];
        assert_eq!(without_line_prefix(&nccl), nccl);
        // No level; too few lines share it; a single line.
        let plain = ["[2024-01-01 10:00:00] a b", "[2024-01-01 10:00:01] c d"];
        assert_eq!(without_line_prefix(&plain), plain);
        let mixed = [
            "ERROR x",
            "Traceback (most recent call last):",
            "  File \"a.py\", line 1, in <module>",
            "ERROR y",
        ];
        assert_eq!(without_line_prefix(&mixed), mixed);
        assert_eq!(without_line_prefix(&["ERROR x"]), ["ERROR x"]);
    }
}
