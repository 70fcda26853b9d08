//! A prefix that a logger or a tool put before every line of a traceback or a stack dump, learnt
//! from the block's first line and taken off the lines after it.
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
const PREFIX_MAX_BYTES: usize = 160;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    /// One or more ASCII digits.
    Digits,
    /// One or more spaces or tabs (none or more at the start of the line).
    Blank { at_start: bool },
    /// This text exactly.
    Text(String),
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
}
