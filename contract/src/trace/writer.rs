//! [`TraceWriter`]: records to JSON Lines, handed to the output as whole lines.
//!
//! The writer serializes into its own buffer and passes only complete lines to
//! the underlying [`Write`], so a process killed at any moment leaves a file
//! whose every line but possibly the last (cut inside a single `write` call)
//! is complete. Give it an unbuffered sink (a [`std::fs::File`]); wrapping the
//! file in a `BufWriter` would reintroduce writes that split lines.

use std::io::{self, Write};

use super::Record;

/// Default buffer size: lines are handed to the output once this much is
/// buffered, or on [`TraceWriter::flush`].
pub const DEFAULT_BUFFER_BYTES: usize = 64 * 1024;

/// Writes [`Record`]s as JSON Lines.
pub struct TraceWriter<W: Write> {
    out: Option<W>,
    buf: Vec<u8>,
    capacity: usize,
    records: u64,
}

impl<W: Write> TraceWriter<W> {
    /// A writer with a [`DEFAULT_BUFFER_BYTES`] buffer.
    pub fn new(out: W) -> TraceWriter<W> {
        TraceWriter::with_buffer_bytes(out, DEFAULT_BUFFER_BYTES)
    }

    /// A writer that hands lines to `out` once `bytes` are buffered
    /// (0: after every record).
    pub fn with_buffer_bytes(out: W, bytes: usize) -> TraceWriter<W> {
        TraceWriter {
            out: Some(out),
            buf: Vec::with_capacity(bytes.clamp(256, 1 << 24)),
            capacity: bytes,
            records: 0,
        }
    }

    /// Appends one record as one line.
    ///
    /// Fails with [`io::ErrorKind::InvalidInput`] (writing nothing) if the
    /// record breaks a rule of the format (see [`Record::validate`]), and
    /// with the output's error if handing buffered lines to it fails.
    pub fn write(&mut self, record: &Record) -> io::Result<()> {
        record
            .validate()
            .map_err(|m| io::Error::new(io::ErrorKind::InvalidInput, m))?;
        let mark = self.buf.len();
        if let Err(e) = serde_json::to_writer(&mut self.buf, record) {
            self.buf.truncate(mark);
            return Err(io::Error::new(io::ErrorKind::InvalidData, e));
        }
        self.buf.push(b'\n');
        self.records += 1;
        if self.buf.len() >= self.capacity {
            self.write_out()?;
        }
        Ok(())
    }

    /// Hands every buffered line to the output and flushes it.
    pub fn flush(&mut self) -> io::Result<()> {
        self.write_out()?;
        match self.out.as_mut() {
            Some(out) => out.flush(),
            None => Ok(()),
        }
    }

    /// Number of records written so far (buffered or not).
    pub fn records_written(&self) -> u64 {
        self.records
    }

    /// Bytes buffered and not yet handed to the output.
    pub fn buffered_bytes(&self) -> usize {
        self.buf.len()
    }

    /// The output.
    pub fn get_ref(&self) -> &W {
        self.out
            .as_ref()
            .expect("the output is only taken by into_inner, which consumes the writer")
    }

    /// Flushes and returns the output.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.flush()?;
        Ok(self
            .out
            .take()
            .expect("the output is only taken by into_inner, which consumes the writer"))
    }

    fn write_out(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        if let Some(out) = self.out.as_mut() {
            let r = out.write_all(&self.buf);
            // Whatever happened, do not hand the same bytes out twice.
            self.buf.clear();
            r?;
        }
        Ok(())
    }
}

impl<W: Write> Drop for TraceWriter<W> {
    fn drop(&mut self) {
        // Best effort, like `BufWriter`: call `flush` to see errors.
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{CounterRecord, SpanKind, SpanRecord};

    /// Records the size of every `write` call.
    #[derive(Default)]
    struct Calls {
        data: Vec<u8>,
        writes: Vec<usize>,
    }

    impl Write for Calls {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.data.extend_from_slice(b);
            self.writes.push(b.len());
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn writes_whole_lines_only() {
        let mut w = TraceWriter::with_buffer_bytes(Calls::default(), 100);
        for i in 0..50 {
            w.write(&Record::Span(SpanRecord::new(
                SpanKind::Forward,
                i,
                i,
                i + 1,
            )))
            .unwrap();
        }
        let calls = w.into_inner().unwrap();
        assert!(calls.writes.len() > 1);
        let mut at = 0;
        for n in calls.writes {
            at += n;
            assert_eq!(calls.data[at - 1], b'\n', "a write ended mid-line");
        }
        let text = String::from_utf8(calls.data).unwrap();
        assert_eq!(text.lines().count(), 50);
    }

    #[test]
    fn rejects_invalid_records_without_writing() {
        let mut w = TraceWriter::new(Vec::new());
        let err = w
            .write(&Record::Span(SpanRecord::new(SpanKind::Forward, 0, 5, 4)))
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        w.write(&Record::Counter(CounterRecord {
            name: "x".into(),
            t: 1,
            value: 2.5,
        }))
        .unwrap();
        assert_eq!(w.records_written(), 1);
        let out = w.into_inner().unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"type\":\"counter\",\"name\":\"x\",\"t\":1,\"value\":2.5}\n"
        );
    }
}
