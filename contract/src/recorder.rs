//! The recorder a training process uses to write its trace.
//!
//! [`Recorder`] is a cheap, cloneable handle. Recording a span moves a
//! [`SpanRecord`] into an unbounded lock-free queue (`std::sync::mpsc`) and
//! returns: the training thread never waits for I/O. A background thread
//! (named `ddp-probe-trace`) serializes the records and hands whole lines to
//! the file at least every [`RecorderOptions::flush_interval`] (100 ms by
//! default), so a process killed at any moment leaves a file that is valid up
//! to its last complete line and misses at most that interval of records.
//! [`Recorder::flush`] waits until everything recorded so far is in the file;
//! dropping the last handle flushes and joins the thread.
//!
//! A disabled recorder ([`Recorder::disabled`], or [`Recorder::from_env`]
//! without [`ENV_TRACE_DIR`]) costs one branch per call and never allocates.
//!
//! ```no_run
//! use probe_contract::clock::now_ns;
//! use probe_contract::recorder::Recorder;
//! use probe_contract::trace::{Header, SpanKind};
//!
//! let rec = Recorder::from_env(Header::new("run-1", 0, 1))?;
//! let step = 0;
//! let t0 = now_ns();
//! // ... all-reduce bucket 3 ...
//! rec.span(SpanKind::Collective, step, t0, now_ns())
//!     .op("all_reduce")
//!     .bucket(3)
//!     .bytes(1 << 20)
//!     .seq(17)
//!     .finish();
//! rec.finish("ok", None)?;
//! # Ok::<(), std::io::Error>(())
//! ```

use std::borrow::Cow;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::clock::now_ns;
use crate::trace::{
    Args, BucketInfo, BucketsRecord, CounterRecord, EndRecord, GradReadyRecord, Header,
    InstantRecord, LogLevel, LogRecord, Record, SpanKind, SpanRecord, TraceWriter,
};

pub use crate::env::{RUN_ID as ENV_RUN_ID, TRACE as ENV_TRACE, TRACE_DIR as ENV_TRACE_DIR};
/// Name of the background writer thread.
pub const WRITER_THREAD_NAME: &str = "ddp-probe-trace";

/// How a recorder writes.
#[derive(Clone, Debug)]
pub struct RecorderOptions {
    /// Longest time a record waits before its line is handed to the file.
    pub flush_interval: Duration,
    /// Lines are also handed over once this many bytes are buffered.
    pub buffer_bytes: usize,
}

impl Default for RecorderOptions {
    fn default() -> RecorderOptions {
        RecorderOptions {
            flush_interval: Duration::from_millis(100),
            buffer_bytes: 64 * 1024,
        }
    }
}

/// Counts of what a recorder did so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecorderStats {
    /// Records handed to the writer thread (the header included).
    pub recorded: u64,
    /// Records serialized into the file's buffer.
    pub written: u64,
    /// Records refused because they break a rule of the format (a span that
    /// ends before it starts...).
    pub rejected: u64,
    /// Records lost because writing the file failed.
    pub lost: u64,
}

// Spans travel unboxed on purpose: boxing the hot message would allocate
// once per span.
#[allow(clippy::large_enum_variant)]
enum Msg {
    Record(Box<Record>),
    Span(SpanRecord),
    Flush(SyncSender<()>),
    Shutdown,
}

#[derive(Default)]
struct State {
    recorded: AtomicU64,
    written: AtomicU64,
    rejected: AtomicU64,
    lost: AtomicU64,
    /// A write error: everything after it is lost.
    fatal: Mutex<Option<String>>,
    /// The first refused record since the last flush.
    refused: Mutex<Option<String>>,
}

struct Shared {
    tx: Sender<Msg>,
    thread: Mutex<Option<JoinHandle<()>>>,
    state: Arc<State>,
    ended: AtomicBool,
    path: Option<PathBuf>,
}

impl Shared {
    #[inline]
    fn send(&self, msg: Msg) {
        self.state.recorded.fetch_add(1, Ordering::Relaxed);
        if self.tx.send(msg).is_err() {
            // The writer thread is gone (it only exits on shutdown).
            self.state.lost.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn flush(&self) -> io::Result<()> {
        let (ack_tx, ack_rx) = mpsc::sync_channel(1);
        if self.tx.send(Msg::Flush(ack_tx)).is_err() || ack_rx.recv().is_err() {
            return Err(io::Error::other("the trace writer thread has stopped"));
        }
        if let Some(e) = lock(&self.state.fatal).clone() {
            return Err(io::Error::other(format!("writing the trace failed: {e}")));
        }
        if let Some(e) = lock(&self.state.refused).take() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a record was not written: {e}"),
            ));
        }
        Ok(())
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if !self.ended.swap(true, Ordering::AcqRel) {
            let status = if std::thread::panicking() {
                "panic"
            } else {
                "dropped"
            };
            self.send(Msg::Record(Box::new(Record::End(EndRecord {
                t: now_ns(),
                status: status.to_owned(),
                message: None,
            }))));
        }
        let _ = self.tx.send(Msg::Shutdown);
        if let Some(h) = lock(&self.thread).take() {
            let _ = h.join();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Records spans and events of one process into one trace file.
///
/// Clones share the file; the last one dropped flushes it, writes an `end`
/// record with status `"dropped"` (`"panic"` while unwinding) unless
/// [`Recorder::finish`] wrote one, and stops the writer thread.
#[derive(Clone, Default)]
pub struct Recorder {
    inner: Option<Arc<Shared>>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("enabled", &self.is_enabled())
            .field("path", &self.path())
            .finish()
    }
}

impl Recorder {
    /// A recorder that records nothing.
    pub const fn disabled() -> Recorder {
        Recorder { inner: None }
    }

    /// Records to `$DDP_PROBE_TRACE_DIR/rank-<R>.jsonl` (R = `header.rank`)
    /// if [`ENV_TRACE_DIR`] is set and not empty and [`ENV_TRACE`] does not
    /// turn recording off; otherwise a disabled recorder.
    pub fn from_env(header: Header) -> io::Result<Recorder> {
        Recorder::from_env_with(header, |k| std::env::var_os(k))
    }

    /// [`Recorder::from_env`] reading variables through `var`.
    pub fn from_env_with(
        header: Header,
        var: impl Fn(&str) -> Option<OsString>,
    ) -> io::Result<Recorder> {
        let off = var(ENV_TRACE).is_some_and(|v| {
            let v = v.to_string_lossy().to_ascii_lowercase();
            matches!(v.trim(), "0" | "off" | "false" | "no")
        });
        if off {
            return Ok(Recorder::disabled());
        }
        match var(ENV_TRACE_DIR).filter(|d| !d.is_empty()) {
            Some(dir) => Recorder::create_in_dir(Path::new(&dir), header),
            None => Ok(Recorder::disabled()),
        }
    }

    /// Records to `<dir>/rank-<R>.jsonl`, creating `dir` if needed.
    pub fn create_in_dir(dir: &Path, header: Header) -> io::Result<Recorder> {
        let path = dir.join(crate::trace::rank_file_name(header.rank));
        Recorder::create(&path, header)
    }

    /// Records to `path` (replacing an existing file), creating its parent
    /// directories if needed.
    pub fn create(path: &Path, header: Header) -> io::Result<Recorder> {
        Recorder::create_with(path, header, RecorderOptions::default())
    }

    /// Records to any writer (unbuffered is best: the recorder hands it
    /// whole lines).
    pub fn to_writer<W: Write + Send + 'static>(out: W, header: Header) -> io::Result<Recorder> {
        Recorder::launch(Box::new(out), header, RecorderOptions::default(), None)
    }

    /// Records to any writer with explicit options.
    pub fn to_writer_with<W: Write + Send + 'static>(
        out: W,
        header: Header,
        options: RecorderOptions,
    ) -> io::Result<Recorder> {
        Recorder::launch(Box::new(out), header, options, None)
    }

    /// Records to `path` with explicit options.
    pub fn create_with(
        path: &Path,
        header: Header,
        options: RecorderOptions,
    ) -> io::Result<Recorder> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| with_path(e, parent))?;
        }
        let file = File::create(path).map_err(|e| with_path(e, path))?;
        Recorder::launch(Box::new(file), header, options, Some(path.to_owned()))
    }

    fn launch(
        out: Box<dyn Write + Send>,
        header: Header,
        options: RecorderOptions,
        path: Option<PathBuf>,
    ) -> io::Result<Recorder> {
        let mut writer = TraceWriter::with_buffer_bytes(out, options.buffer_bytes);
        // The header goes out at once: a process killed right after this
        // still leaves a loadable file.
        writer.write(&Record::Header(header))?;
        writer.flush()?;
        let state = Arc::new(State::default());
        state.recorded.store(1, Ordering::Relaxed);
        state.written.store(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel();
        let thread_state = Arc::clone(&state);
        let interval = options.flush_interval.max(Duration::from_millis(1));
        let handle = std::thread::Builder::new()
            .name(WRITER_THREAD_NAME.to_owned())
            .spawn(move || writer_loop(rx, writer, &thread_state, interval))?;
        Ok(Recorder {
            inner: Some(Arc::new(Shared {
                tx,
                thread: Mutex::new(Some(handle)),
                state,
                ended: AtomicBool::new(false),
                path,
            })),
        })
    }

    /// Whether this recorder writes anything.
    #[inline]
    pub fn is_enabled(&self) -> bool {
        self.inner.is_some()
    }

    /// The trace file, if recording to a file.
    pub fn path(&self) -> Option<&Path> {
        self.inner.as_ref()?.path.as_deref()
    }

    /// Starts describing a span of `kind` in `step` from `start` to `end`
    /// (ns from [`now_ns`]); set more fields and call
    /// [`SpanBuilder::finish`].
    #[inline]
    pub fn span(&self, kind: SpanKind, step: u64, start: u64, end: u64) -> SpanBuilder<'_> {
        SpanBuilder {
            shared: self.inner.as_deref(),
            span: self
                .inner
                .as_ref()
                .map(|_| SpanRecord::new(kind, step, start, end)),
        }
    }

    /// Starts a span now; it ends when the guard is dropped or finished.
    #[inline]
    pub fn start(&self, kind: SpanKind, step: u64) -> SpanGuard<'_> {
        SpanGuard {
            shared: self.inner.as_deref(),
            span: match self.inner {
                Some(_) => {
                    let t = now_ns();
                    Some(SpanRecord::new(kind, step, t, t))
                }
                None => None,
            },
        }
    }

    /// Records a complete span.
    #[inline]
    pub fn push_span(&self, span: SpanRecord) {
        if let Some(s) = &self.inner {
            s.send(Msg::Span(span));
        }
    }

    /// Records any record but a header (the file already has one: a second
    /// header is refused, and reported by the next [`Recorder::flush`]).
    pub fn record(&self, record: Record) {
        let Some(s) = &self.inner else { return };
        if matches!(record, Record::Header(_)) {
            s.state.rejected.fetch_add(1, Ordering::Relaxed);
            lock(&s.state.refused)
                .get_or_insert_with(|| "a trace file holds one header, written first".to_owned());
            return;
        }
        s.send(Msg::Record(Box::new(record)));
    }

    /// Records an instant now.
    pub fn instant(&self, name: impl Into<Cow<'static, str>>, step: Option<u64>) {
        if self.is_enabled() {
            self.instant_at(name, now_ns(), step, None);
        }
    }

    /// Records an instant at `t` with optional `args`.
    pub fn instant_at(
        &self,
        name: impl Into<Cow<'static, str>>,
        t: u64,
        step: Option<u64>,
        args: Option<Args>,
    ) {
        if let Some(s) = &self.inner {
            s.send(Msg::Record(Box::new(Record::Instant(InstantRecord {
                name: name.into(),
                t,
                step,
                args: args.map(Box::new),
            }))));
        }
    }

    /// Records a counter sample now.
    pub fn counter(&self, name: impl Into<Cow<'static, str>>, value: f64) {
        if let Some(s) = &self.inner {
            s.send(Msg::Record(Box::new(Record::Counter(CounterRecord {
                name: name.into(),
                t: now_ns(),
                value,
            }))));
        }
    }

    /// Records a log message now.
    pub fn log(&self, level: LogLevel, message: impl Into<String>) {
        if let Some(s) = &self.inner {
            s.send(Msg::Record(Box::new(Record::Log(LogRecord {
                t: now_ns(),
                level,
                message: message.into(),
            }))));
        }
    }

    /// Records the per-parameter gradient-ready times of a step: `t0` is the
    /// backward start, `offsets_ns[i]` parameter `i`'s ready time after it
    /// (`-1`: no gradient).
    pub fn grad_ready(&self, step: u64, t0: u64, offsets_ns: Vec<i64>) {
        if let Some(s) = &self.inner {
            s.send(Msg::Record(Box::new(Record::GradReady(GradReadyRecord {
                step,
                t0,
                offsets_ns,
            }))));
        }
    }

    /// Records a new bucket layout, valid from `step` on.
    pub fn buckets(&self, step: u64, reason: impl Into<String>, buckets: Vec<BucketInfo>) {
        if let Some(s) = &self.inner {
            s.send(Msg::Record(Box::new(Record::Buckets(BucketsRecord {
                step,
                t: Some(now_ns()),
                reason: reason.into(),
                buckets,
            }))));
        }
    }

    /// Waits until every record so far is in the file.
    ///
    /// Fails if writing failed (records after the failure are lost) or if a
    /// record was refused since the last flush.
    pub fn flush(&self) -> io::Result<()> {
        match &self.inner {
            Some(s) => s.flush(),
            None => Ok(()),
        }
    }

    /// Writes the `end` record (`status`: `"ok"`, `"error"`...) and flushes.
    /// Later records are still written, but no second `end` is added on drop.
    pub fn finish(&self, status: &str, message: Option<String>) -> io::Result<()> {
        let Some(s) = &self.inner else { return Ok(()) };
        s.ended.store(true, Ordering::Release);
        s.send(Msg::Record(Box::new(Record::End(EndRecord {
            t: now_ns(),
            status: status.to_owned(),
            message,
        }))));
        s.flush()
    }

    /// What the recorder did so far.
    pub fn stats(&self) -> RecorderStats {
        match &self.inner {
            Some(s) => RecorderStats {
                recorded: s.state.recorded.load(Ordering::Relaxed),
                written: s.state.written.load(Ordering::Relaxed),
                rejected: s.state.rejected.load(Ordering::Relaxed),
                lost: s.state.lost.load(Ordering::Relaxed),
            },
            None => RecorderStats::default(),
        }
    }

    /// Adds a panic hook that logs the panic as a `fatal` record, writes an
    /// `end` record with status `"panic"` and flushes, then runs the
    /// previous hook. The hook does not keep the recorder alive: once the
    /// last handle is dropped it does nothing.
    pub fn record_panics(&self) {
        let Some(shared) = &self.inner else { return };
        let weak = Arc::downgrade(shared);
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // The writer thread cannot wait for itself.
            let on_writer = std::thread::current().name() == Some(WRITER_THREAD_NAME);
            if let (false, Some(shared)) = (on_writer, weak.upgrade()) {
                let rec = Recorder {
                    inner: Some(shared),
                };
                rec.log(LogLevel::Fatal, info.to_string());
                let _ = rec.finish("panic", Some(info.to_string()));
            }
            previous(info);
        }));
    }
}

fn with_path(e: io::Error, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

fn writer_loop(
    rx: Receiver<Msg>,
    mut w: TraceWriter<Box<dyn Write + Send>>,
    state: &State,
    interval: Duration,
) {
    let mut last_out = Instant::now();
    let mut failed = false;
    loop {
        let wait = interval.saturating_sub(last_out.elapsed());
        match rx.recv_timeout(wait) {
            Ok(Msg::Span(s)) => {
                let r = Record::Span(s);
                write_one(&mut w, &r, state, &mut failed);
            }
            Ok(Msg::Record(r)) => write_one(&mut w, &r, state, &mut failed),
            Ok(Msg::Flush(ack)) => {
                if !failed {
                    if let Err(e) = w.flush() {
                        fail(state, &e, &mut failed);
                    }
                }
                last_out = Instant::now();
                let _ = ack.send(());
                continue;
            }
            Ok(Msg::Shutdown) | Err(RecvTimeoutError::Disconnected) => {
                if !failed {
                    if let Err(e) = w.flush() {
                        fail(state, &e, &mut failed);
                    }
                }
                return;
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
        if last_out.elapsed() >= interval {
            if w.buffered_bytes() > 0 && !failed {
                if let Err(e) = w.flush() {
                    fail(state, &e, &mut failed);
                }
            }
            last_out = Instant::now();
        }
    }
}

fn write_one(
    w: &mut TraceWriter<Box<dyn Write + Send>>,
    r: &Record,
    state: &State,
    failed: &mut bool,
) {
    if *failed {
        state.lost.fetch_add(1, Ordering::Relaxed);
        return;
    }
    match w.write(r) {
        Ok(()) => {
            state.written.fetch_add(1, Ordering::Relaxed);
        }
        Err(e) if e.kind() == io::ErrorKind::InvalidInput => {
            state.rejected.fetch_add(1, Ordering::Relaxed);
            lock(&state.refused).get_or_insert_with(|| e.to_string());
        }
        Err(e) => {
            // The record is in the buffer but handing it out failed.
            state.written.fetch_add(1, Ordering::Relaxed);
            fail(state, &e, failed);
        }
    }
}

fn fail(state: &State, e: &io::Error, failed: &mut bool) {
    *failed = true;
    lock(&state.fatal).get_or_insert_with(|| e.to_string());
}

/// The setters of [`SpanBuilder`], one per optional span field.
macro_rules! builder_setters {
    ($( $(#[doc = $doc:literal])* $kind:ident $field:ident : $ty:ty ),+ $(,)?) => {
        impl SpanBuilder<'_> {
            $( crate::span_setter!([] Self, |b| b.span.as_mut(), $kind $field $ty); )+
        }
    };
}

crate::span_optional_fields!(builder_setters);

/// A span being described; [`SpanBuilder::finish`] records it. Every method
/// does nothing on a disabled recorder.
#[must_use = "call finish() to record the span"]
pub struct SpanBuilder<'r> {
    shared: Option<&'r Shared>,
    span: Option<SpanRecord>,
}

impl SpanBuilder<'_> {
    /// Sets `args`.
    #[inline]
    pub fn args(mut self, args: Args) -> Self {
        if let Some(s) = &mut self.span {
            s.args = Some(Box::new(args));
        }
        self
    }

    /// Records the span.
    #[inline]
    pub fn finish(self) {
        if let (Some(shared), Some(span)) = (self.shared, self.span) {
            shared.send(Msg::Span(span));
        }
    }
}

/// A span that started at [`Recorder::start`] and is recorded, ending now,
/// when dropped or finished.
#[must_use = "the span ends when the guard is dropped"]
pub struct SpanGuard<'r> {
    shared: Option<&'r Shared>,
    span: Option<SpanRecord>,
}

impl SpanGuard<'_> {
    /// The span's fields, to set more of them (`None` when disabled).
    pub fn record_mut(&mut self) -> Option<&mut SpanRecord> {
        self.span.as_mut()
    }

    /// Ends and records the span now.
    pub fn finish(self) {
        drop(self);
    }
}

impl Drop for SpanGuard<'_> {
    fn drop(&mut self) {
        if let (Some(shared), Some(mut span)) = (self.shared, self.span.take()) {
            span.end = now_ns().max(span.start);
            shared.send(Msg::Span(span));
        }
    }
}

/// A header for this process from the launcher's environment: run id from
/// [`ENV_RUN_ID`] (else `TORCHELASTIC_RUN_ID`, else `"local"`), `RANK`,
/// `WORLD_SIZE`, `LOCAL_RANK`, `LOCAL_WORLD_SIZE` and `GROUP_RANK` (or
/// `NODE_RANK`), as set by the launcher and by `torchrun`. Missing variables
/// mean a single process.
pub fn header_from_env() -> io::Result<Header> {
    header_from_env_with(|k| std::env::var_os(k))
}

/// [`header_from_env`] reading variables through `var`.
pub fn header_from_env_with(var: impl Fn(&str) -> Option<OsString>) -> io::Result<Header> {
    let text = |k: &str| var(k).map(|v| v.to_string_lossy().into_owned());
    let num = |k: &str| -> io::Result<Option<u32>> {
        match text(k) {
            None => Ok(None),
            Some(v) => v.trim().parse().map(Some).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("environment variable {k}={v:?} is not a non-negative integer"),
                )
            }),
        }
    };
    let run_id = text(ENV_RUN_ID)
        .or_else(|| text("TORCHELASTIC_RUN_ID"))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "local".to_owned());
    let rank = num("RANK")?.unwrap_or(0);
    let world_size = num("WORLD_SIZE")?.unwrap_or(1);
    if rank >= world_size {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("RANK={rank} is not below WORLD_SIZE={world_size}"),
        ));
    }
    let local_rank = num("LOCAL_RANK")?.unwrap_or(rank);
    let local_world_size = num("LOCAL_WORLD_SIZE")?.unwrap_or(world_size);
    let node_rank = match num("GROUP_RANK")? {
        Some(n) => n,
        None => num("NODE_RANK")?.unwrap_or(0),
    };
    Ok(Header::new(run_id, rank, world_size).with_node(node_rank, local_rank, local_world_size))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn header_from_variables() {
        let vars: HashMap<&str, &str> = [
            ("DDP_PROBE_RUN_ID", "r7"),
            ("RANK", "5"),
            ("WORLD_SIZE", "8"),
            ("LOCAL_RANK", "1"),
            ("LOCAL_WORLD_SIZE", "4"),
            ("GROUP_RANK", "1"),
        ]
        .into_iter()
        .collect();
        let h = header_from_env_with(|k| vars.get(k).map(OsString::from)).unwrap();
        assert_eq!(
            (
                h.rank,
                h.world_size,
                h.local_rank,
                h.local_world_size,
                h.node_rank
            ),
            (5, 8, 1, 4, 1)
        );
        assert_eq!(h.run_id, "r7");
        let bad = header_from_env_with(|k| (k == "RANK").then(|| OsString::from("x"))).unwrap_err();
        assert!(bad.to_string().contains("RANK=\"x\""), "{bad}");
        let single = header_from_env_with(|_| None).unwrap();
        assert_eq!((single.rank, single.world_size), (0, 1));
    }

    /// A writer whose bytes the test can read while the recorder owns it.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            lock(&self.0).extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn records_to_any_writer_and_refuses_second_headers() {
        let out = Shared::default();
        let rec = Recorder::to_writer(out.clone(), Header::new("w", 0, 1)).unwrap();
        rec.record(Record::Header(Header::new("w", 0, 1)));
        assert!(rec.flush().is_err());
        rec.buckets(2, "rebuild", Vec::new());
        rec.grad_ready(2, 5, vec![1, -1]);
        rec.instant_at("x", 7, Some(2), None);
        rec.finish("ok", None).unwrap();
        let stats = rec.stats();
        assert_eq!((stats.recorded, stats.written, stats.rejected), (5, 5, 1));
        let text = String::from_utf8(lock(&out.0).clone()).unwrap();
        let types: Vec<String> = text
            .lines()
            .map(|l| {
                serde_json::from_str::<Record>(l)
                    .unwrap()
                    .type_name()
                    .to_owned()
            })
            .collect();
        assert_eq!(types, ["header", "buckets", "grad_ready", "instant", "end"]);
    }

    #[test]
    fn disabled_without_variable() {
        let rec = Recorder::from_env_with(Header::new("r", 0, 1), |_| None).unwrap();
        assert!(!rec.is_enabled());
        rec.span(SpanKind::Forward, 0, 1, 2).bucket(1).finish();
        assert_eq!(rec.stats(), RecorderStats::default());
        rec.flush().unwrap();
    }
}
