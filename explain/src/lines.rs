//! Streaming a log file line by line with bounded memory.
//!
//! * Lines longer than [`ReadLimits::max_line_bytes`] are cut (the rest of
//!   the line is skipped, never buffered).
//! * Invalid UTF-8 is decoded lossily (U+FFFD), a trailing `\r` is dropped.
//! * A file larger than `head_bytes + tail_bytes` is read only at its start
//!   (NCCL's set-up lines) and its end (where errors are); lines of the end
//!   part have no known line number.
//! * Only regular files are read (not FIFOs or devices such as `/dev/zero`),
//!   and never more than the limits even if the file grows while it is read.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

/// How much of a file is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReadLimits {
    /// Bytes read from the start of a large file.
    pub head_bytes: u64,
    /// Bytes read from the end of a large file.
    pub tail_bytes: u64,
    /// Longest line kept, in bytes; the rest of a longer line is skipped.
    pub max_line_bytes: usize,
}

/// What reading one file did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ReadSummary {
    /// The file's size when it was opened.
    pub file_bytes: u64,
    /// The byte range that was skipped, for a file larger than the limits.
    pub skipped: Option<(u64, u64)>,
    /// Lines passed to the callback.
    pub lines: u64,
    /// Lines that were longer than the limit and cut.
    pub cut_lines: u64,
}

/// Calls `f(line_number, text)` for every line read from `path`.
/// `line_number` is 1-based, `None` for lines after a skipped middle part.
pub(crate) fn for_each_line(
    path: &Path,
    limits: &ReadLimits,
    f: impl FnMut(Option<u64>, &str),
) -> io::Result<ReadSummary> {
    let file = File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    for_each_line_in(file, meta.len(), limits, f)
}

/// [`for_each_line`] over any seekable input of `len` bytes (a file, or a
/// log held in memory).
pub(crate) fn for_each_line_in<R: Read + Seek>(
    mut file: R,
    len: u64,
    limits: &ReadLimits,
    mut f: impl FnMut(Option<u64>, &str),
) -> io::Result<ReadSummary> {
    let mut summary = ReadSummary {
        file_bytes: len,
        ..ReadSummary::default()
    };
    let budget = limits.head_bytes.saturating_add(limits.tail_bytes);
    let mut number = 0u64;
    if len <= budget {
        let mut reader = BufReader::with_capacity(64 * 1024, (&mut file).take(budget));
        read_lines(&mut reader, limits.max_line_bytes, false, |bytes, cut| {
            number += 1;
            summary.lines += 1;
            summary.cut_lines += u64::from(cut);
            f(Some(number), &String::from_utf8_lossy(bytes));
        })?;
        return Ok(summary);
    }
    {
        let mut reader = BufReader::with_capacity(64 * 1024, (&mut file).take(limits.head_bytes));
        read_lines(&mut reader, limits.max_line_bytes, false, |bytes, cut| {
            number += 1;
            summary.lines += 1;
            summary.cut_lines += u64::from(cut);
            f(Some(number), &String::from_utf8_lossy(bytes));
        })?;
    }
    let tail_start = len - limits.tail_bytes;
    summary.skipped = Some((limits.head_bytes, tail_start));
    file.seek(SeekFrom::Start(tail_start))?;
    let mut reader = BufReader::with_capacity(64 * 1024, file.take(limits.tail_bytes));
    read_lines(&mut reader, limits.max_line_bytes, true, |bytes, cut| {
        summary.lines += 1;
        summary.cut_lines += u64::from(cut);
        f(None, &String::from_utf8_lossy(bytes));
    })?;
    Ok(summary)
}

/// Splits a reader into lines of at most `max_line` bytes; `emit(bytes, cut)`.
/// With `skip_first`, the (probably partial) first line is dropped.
fn read_lines<R: BufRead>(
    reader: &mut R,
    max_line: usize,
    skip_first: bool,
    mut emit: impl FnMut(&[u8], bool),
) -> io::Result<()> {
    let mut line: Vec<u8> = Vec::with_capacity(256);
    let mut cut = false;
    let mut skipping = skip_first;
    let mut pending = false;
    loop {
        let buf = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            if pending && !skipping {
                emit(strip_cr(&line), cut);
            }
            return Ok(());
        }
        let (chunk, newline) = match memchr::memchr(b'\n', buf) {
            Some(i) => (&buf[..i], true),
            None => (buf, false),
        };
        if !skipping {
            let room = max_line.saturating_sub(line.len());
            if chunk.len() > room {
                line.extend_from_slice(&chunk[..room]);
                cut = true;
            } else {
                line.extend_from_slice(chunk);
            }
            pending = true;
        }
        let used = chunk.len() + usize::from(newline);
        reader.consume(used);
        if newline {
            if skipping {
                skipping = false;
            } else {
                emit(strip_cr(&line), cut);
            }
            line.clear();
            cut = false;
            pending = false;
        }
    }
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn limits(head: u64, tail: u64, line: usize) -> ReadLimits {
        ReadLimits {
            head_bytes: head,
            tail_bytes: tail,
            max_line_bytes: line,
        }
    }

    fn collect(path: &Path, l: &ReadLimits) -> (Vec<(Option<u64>, String)>, ReadSummary) {
        let mut out = Vec::new();
        let s = for_each_line(path, l, |n, t| out.push((n, t.to_owned()))).unwrap();
        (out, s)
    }

    #[test]
    fn numbers_lines_cuts_long_ones_and_decodes_lossily() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.log");
        let mut f = File::create(&p).unwrap();
        f.write_all(b"one\r\n").unwrap();
        f.write_all(&[b'x'; 5000]).unwrap();
        f.write_all(b"\n\xff\xfebad\nlast").unwrap();
        drop(f);
        let (lines, s) = collect(&p, &limits(1 << 20, 1 << 20, 100));
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0], (Some(1), "one".to_owned()));
        assert_eq!(lines[1].1.len(), 100);
        assert_eq!(lines[2], (Some(3), "\u{FFFD}\u{FFFD}bad".to_owned()));
        assert_eq!(lines[3], (Some(4), "last".to_owned()));
        assert_eq!(s.cut_lines, 1);
        assert!(s.skipped.is_none());
    }

    #[test]
    fn large_files_are_read_at_head_and_tail_only() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.log");
        let mut f = File::create(&p).unwrap();
        for i in 0..10_000 {
            writeln!(f, "line {i:05}").unwrap();
        }
        drop(f);
        let (lines, s) = collect(&p, &limits(110, 110, 1000));
        assert_eq!(lines.first().unwrap(), &(Some(1), "line 00000".to_owned()));
        assert!(lines.iter().any(|(n, _)| n.is_none()));
        assert_eq!(lines.last().unwrap(), &(None, "line 09999".to_owned()));
        assert!(lines.len() < 40, "{}", lines.len());
        assert!(s.skipped.is_some());
    }

    #[test]
    fn refuses_non_regular_files() {
        let dir = tempfile::tempdir().unwrap();
        let err = for_each_line(dir.path(), &limits(10, 10, 10), |_, _| {}).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }
}
