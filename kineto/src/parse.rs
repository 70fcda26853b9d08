//! Streaming reader of PyTorch profiler (Kineto) trace files.
//!
//! A Kineto trace is one JSON object per rank, `{"distributedInfo": {...}, ...,
//! "traceEvents": [...]}`, plain or gzipped, and can be several gigabytes. This module reads
//! it in chunks on a second thread (inflating gzip there) while this one parses, and never
//! holds the JSON text of a large trace as a whole. Each event of `traceEvents` is read in
//! one pass by a byte scanner (`scan_event`): it finds the event's end and its top-level
//! members in place, drops the events nobody needs (plain ATen operators, flows, metadata,
//! instants) on their category and name without decoding them, and decodes the kept ones
//! (GPU activity, launches, annotations, collectives) into a compact [`Event`] (names
//! interned, only the arguments the importer and the HTA analysis use). Anything unusual (an
//! escape, a float written oddly, a value of an unexpected shape) goes to serde_json with
//! custom visitors, the reference; tests and the `kineto_import` fuzz target check that both
//! read the same events. Memory grows with the GPU activity and the few CPU events kept.
//!
//! A trace of up to `SPLIT_LIMIT` bytes (48 MiB) is parsed in two halves on the two threads (see
//! `parse_source`), with the same result as one thread.
//!
//! Why the scanner is hand-written (`examples/scanner_vs_serde.rs`, README): decoding every event
//! with serde_json instead takes 2.2 to 2.7 times as long, which would bring the import under
//! the 20x margin over HTA it must keep (about 9x on the smallest real trace).
//!
//! A file cut off while it was written (a profiler killed mid-write, a truncated gzip stream)
//! yields the events up to the cut and a warning in [`KinetoTrace::truncated`].

use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::ImportError;
use probe_contract::budget;
use probe_load::fill::{fill, read_full};
use rustc_hash::FxHashMap;

/// The category (`cat`) of a Kineto event, as far as the importer distinguishes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Cat {
    /// `kernel` (or legacy `Kernel`): a GPU kernel.
    Kernel,
    /// `gpu_memcpy` (or legacy `Memcpy`).
    GpuMemcpy,
    /// `gpu_memset` (or legacy `Memset`).
    GpuMemset,
    /// `cuda_runtime` / `cuda_driver` (or legacy `Runtime`): a launch or other CUDA API call.
    Runtime,
    /// `cpu_op` (or legacy `Operator`).
    CpuOp,
    /// `user_annotation`: `record_function` ranges (`ProfilerStep#N`, `gloo:all_reduce`, ...).
    UserAnnotation,
    /// `gpu_user_annotation`: annotations projected onto a GPU stream (not GPU work).
    GpuUserAnnotation,
    /// `cuda_sync`: synchronization events.
    CudaSync,
    /// Any other category.
    Other,
}

impl Cat {
    fn parse(s: &[u8]) -> Cat {
        match s {
            b"kernel" | b"Kernel" => Cat::Kernel,
            b"gpu_memcpy" | b"Memcpy" => Cat::GpuMemcpy,
            b"gpu_memset" | b"Memset" => Cat::GpuMemset,
            b"cuda_runtime" | b"cuda_driver" | b"Runtime" => Cat::Runtime,
            b"cpu_op" | b"Operator" => Cat::CpuOp,
            b"user_annotation" => Cat::UserAnnotation,
            b"gpu_user_annotation" => Cat::GpuUserAnnotation,
            b"cuda_sync" => Cat::CudaSync,
            _ => Cat::Other,
        }
    }
}

/// Collective metadata of an event: the `record_param_comms` / NCCL kernel arguments of recent
/// PyTorch versions, or the input shape and type of a `gloo:*` / `c10d::*` operator.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CommArgs {
    /// `Collective name` ("allreduce", "broadcast", ...).
    pub collective: Option<String>,
    /// `In msg nelems`: elements sent.
    pub in_nelems: Option<u64>,
    /// `Out msg nelems`: elements received.
    pub out_nelems: Option<u64>,
    /// `dtype` ("Float", "BFloat16", ...), or the first `Input type` of an operator.
    pub dtype: Option<String>,
    /// `Group size`.
    pub group_size: Option<u64>,
    /// `Process Group Name`.
    pub pg_name: Option<String>,
    /// Elements of the first input, from `Input Dims` (a tensor list counts all its tensors).
    pub input_numel: Option<u64>,
}

/// One kept event of a Kineto trace, with its timestamps as written (microseconds).
#[derive(Clone, Debug)]
pub struct Event {
    /// `ts`, µs.
    pub ts: f64,
    /// `dur`, µs.
    pub dur: f64,
    /// Index of the name in [`KinetoTrace::names`].
    pub name: u32,
    /// The category.
    pub cat: Cat,
    /// `pid` (strings map to -1).
    pub pid: i64,
    /// `tid` (strings map to -1).
    pub tid: i64,
    /// `args.stream`, -1 when absent.
    pub stream: i64,
    /// `args.correlation`, -1 when absent.
    pub correlation: i64,
    /// `args.device`, -1 when absent.
    pub device: i64,
    /// Collective metadata, for the few events that carry it.
    pub comm: Option<Box<CommArgs>>,
}

impl Event {
    /// Whether this is GPU activity as HTA counts it: a stream and a correlation id.
    pub fn is_gpu(&self) -> bool {
        self.stream >= 0 && self.correlation >= 0
    }

    /// End, µs (`ts + dur`).
    pub fn end(&self) -> f64 {
        self.ts + self.dur
    }
}

/// `distributedInfo` of a trace.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct DistributedInfo {
    /// Communication backend ("nccl", "gloo").
    #[serde(default)]
    pub backend: Option<String>,
    /// Global rank.
    #[serde(default)]
    pub rank: Option<u32>,
    /// World size.
    #[serde(default)]
    pub world_size: Option<u32>,
}

/// One parsed Kineto trace file.
#[derive(Clone, Debug)]
pub struct KinetoTrace {
    /// The file.
    pub path: PathBuf,
    /// `distributedInfo`, when present.
    pub dist: Option<DistributedInfo>,
    /// `baseTimeNanoseconds`: add to `ts × 1000` to get ns since the Unix epoch.
    pub base_time_ns: Option<u64>,
    /// `host_name`.
    pub host_name: Option<String>,
    /// Interned event names.
    pub names: Vec<String>,
    /// The kept events, in file order (not sorted).
    pub events: Vec<Event>,
    /// Whether any `ts` was written as a float (ns-resolution trace); HTA rounds those.
    pub float_ts: bool,
    /// Events read in all, kept or not.
    pub events_read: u64,
    /// Why the file ended early, when it was cut off.
    pub truncated: Option<String>,
}

impl KinetoTrace {
    /// The name of an event.
    pub fn name(&self, e: &Event) -> &str {
        &self.names[e.name as usize]
    }
}

/// Whether an event of this category and name is worth keeping (GPU activity, launches,
/// annotations and the CPU operators the importer interprets).
fn keep(cat: Cat, name: &str, has_correlation: bool, has_stream: bool) -> bool {
    match cat {
        Cat::Kernel | Cat::GpuMemcpy | Cat::GpuMemset | Cat::CudaSync | Cat::UserAnnotation => true,
        Cat::Runtime => true,
        // HTA counts these as CPU-side rows; a projected ProfilerStep moves its last-step mark.
        Cat::GpuUserAnnotation => contains(name, &PROFILER_STEP),
        Cat::CpuOp => {
            has_correlation
                || name.starts_with("c10d::")
                || name == "record_param_comms"
                || name.starts_with("autograd::engine::evaluate_function")
                || contains(name, &PROFILER_STEP)
        }
        Cat::Other => has_correlation || has_stream || contains(name, &PROFILER_STEP),
    }
}

/// Whether `name` contains the finder's needle (a prebuilt finder: `str::contains` builds its
/// searcher on every call, which costs more than the search on short names).
fn contains(name: &str, finder: &memchr::memmem::Finder<'static>) -> bool {
    finder.find(name.as_bytes()).is_some()
}

static PROFILER_STEP: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"ProfilerStep"));
static GLOO: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"gloo:"));
static NCCL: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"nccl:"));

/// Whether an operator of this name carries collective sizes in its input shapes.
fn has_shapes(name: &str) -> bool {
    contains(name, &GLOO)
        || contains(name, &NCCL)
        || name.starts_with("c10d::")
        || name == "record_param_comms"
}

/// Parses one trace file (plain JSON or gzip, detected by content).
pub fn parse_file(path: &Path) -> Result<KinetoTrace, ImportError> {
    let io_err = |source| ImportError::Io {
        path: path.to_owned(),
        source,
    };
    let mut file = File::open(path).map_err(io_err)?;
    let mut magic = [0u8; 2];
    let n = read_full(&mut file, &mut magic).map_err(io_err)?;
    let file = File::open(path).map_err(io_err)?;
    if n == 2 && magic == GZIP_MAGIC {
        parse_source(path, true, BufReader::with_capacity(1 << 16, file), false)
    } else {
        parse_source(path, false, file, false)
    }
}

/// Parses one trace held in memory (plain JSON or gzip, detected by content) as
/// [`parse_file`] parses a file holding these bytes; `path` names it in messages.
pub fn parse_bytes(path: &Path, data: &[u8]) -> Result<KinetoTrace, ImportError> {
    parse_source(path, data.starts_with(&GZIP_MAGIC), data, false)
}

/// Parses like [`parse_bytes`], but decodes every event with serde_json: the reference that
/// the scanner's fast path is checked against (tests and fuzzing).
#[doc(hidden)]
pub fn parse_bytes_reference(path: &Path, data: &[u8]) -> Result<KinetoTrace, ImportError> {
    parse_source(path, data.starts_with(&GZIP_MAGIC), data, true)
}

/// Whether two parses of one trace read the same events (names compared as text, since the
/// fast path interns only kept events; floats within one unit in the last place, since the
/// fast path rounds them correctly and serde_json may not). Says what differs.
#[doc(hidden)]
pub fn same_events(a: &KinetoTrace, b: &KinetoTrace) -> Result<(), String> {
    let close = |x: f64, y: f64| x == y || (x - y).abs() <= f64::EPSILON * x.abs().max(y.abs());
    if a.events.len() != b.events.len() {
        return Err(format!("{} events vs {}", a.events.len(), b.events.len()));
    }
    if (a.events_read, a.float_ts, &a.truncated.is_some())
        != (b.events_read, b.float_ts, &b.truncated.is_some())
    {
        return Err(format!(
            "events read / float ts / cut off: {:?} vs {:?}",
            (a.events_read, a.float_ts, a.truncated.is_some()),
            (b.events_read, b.float_ts, b.truncated.is_some())
        ));
    }
    for (i, (x, y)) in a.events.iter().zip(&b.events).enumerate() {
        let same = a.name(x) == b.name(y)
            && close(x.ts, y.ts)
            && close(x.dur, y.dur)
            && (x.cat, x.pid, x.tid, x.stream, x.correlation, x.device)
                == (y.cat, y.pid, y.tid, y.stream, y.correlation, y.device)
            && x.comm == y.comm;
        if !same {
            return Err(format!(
                "event {i}: {x:?} ({:?}) vs {y:?} ({:?})",
                a.name(x),
                b.name(y)
            ));
        }
    }
    Ok(())
}

/// The first two bytes of a gzip stream.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Parses `r`, inflating it when it is gzip; `serde_only`: decode every event with serde_json
/// (the reference, which is never split).
///
/// A second thread reads (and inflates) the input in chunks while this one parses. When the
/// whole input fits in [`SPLIT_LIMIT`], that thread keeps a copy and, once it has read the
/// end, parses the second half of what this thread has not reached yet; this thread stops
/// where that half starts, if it lands exactly there (an event boundary of the same events
/// array), and the halves are joined; otherwise the second half is dropped and this thread
/// reads on to the end as if alone. Either way the result is the one-thread result.
fn parse_source(
    path: &Path,
    gzip: bool,
    r: impl Read + Send,
    serde_only: bool,
) -> Result<KinetoTrace, ImportError> {
    parse_split(path, gzip, r, serde_only, MIN_SPLIT)
}

/// Inputs up to this size (after inflating) may be parsed in two halves.
const SPLIT_LIMIT: usize = 48 << 20;
/// Unread input left below which splitting is not worth a thread's start.
const MIN_SPLIT: u64 = 2 << 20;

/// [`parse_source`] with the smallest unread part worth splitting (`min_split` bytes).
#[doc(hidden)]
pub fn parse_split(
    path: &Path,
    gzip: bool,
    r: impl Read + Send,
    serde_only: bool,
    min_split: u64,
) -> Result<KinetoTrace, ImportError> {
    let split = Split {
        at: AtomicU64::new(u64::MAX),
        parsed: AtomicU64::new(0),
        missed: AtomicBool::new(serde_only),
        in_flight: AtomicUsize::new(0),
    };
    let split = &split;
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel::<io::Result<Vec<u8>>>();
        let (back, spare) = std::sync::mpsc::channel::<Vec<u8>>();
        let second = s.spawn(move || {
            let (whole, err) = if gzip {
                pump(flate2::read::MultiGzDecoder::new(r), tx, spare, split)
            } else {
                pump(r, tx, spare, split)
            };
            let whole = whole?;
            second_half(&whole, err, split, min_split, serde_only)
        });
        let mut sink = Sink {
            serde_only,
            split: Some(split),
            ..Sink::default()
        };
        let mut st = Stream::new(ChannelReader {
            rx,
            back,
            cur: Vec::new(),
            pos: 0,
            in_flight: &split.in_flight,
        });
        let first = top_level(&mut st, &mut sink);
        if !matches!(first, Err(Stop::Split)) {
            // The second half (if any) is not needed: stop it early.
            split.missed.store(true, Ordering::Relaxed);
        }
        drop(st);
        let second = second
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        sink.split = None;
        match (first, second) {
            (Err(Stop::Split), Some((rest, outcome))) => {
                SPLITS_JOINED.fetch_add(1, Ordering::Relaxed);
                sink.join(rest);
                finish(path, sink, outcome)
            }
            (first, _) => finish(path, sink, first),
        }
    })
}

/// Split parses whose halves were joined, in this process (for tests: that splitting happens).
#[doc(hidden)]
pub static SPLITS_JOINED: AtomicU64 = AtomicU64::new(0);

/// What the two threads of a split parse share.
struct Split {
    /// Offset of the event where the second half starts (`u64::MAX` until chosen).
    at: AtomicU64,
    /// Offset of the event the first thread is at.
    parsed: AtomicU64,
    /// The first thread went past `at` without landing on it, or ended: the second half is
    /// not needed.
    missed: AtomicBool,
    /// Chunks sent and not yet taken by the parser.
    in_flight: AtomicUsize,
}

/// Chooses where the second half starts and parses it, on the reading thread, once the whole
/// input is read (`whole`, and the read error that ended it, if any). `None` when no split
/// is worth it or the first thread passed the point.
fn second_half<'s>(
    whole: &[u8],
    err: Option<(io::ErrorKind, String)>,
    split: &'s Split,
    min_split: u64,
    serde_only: bool,
) -> Option<(Sink<'s>, Result<(), Stop>)> {
    if split.missed.load(Ordering::Relaxed) {
        return None;
    }
    let parsed = split.parsed.load(Ordering::Relaxed);
    let left = (whole.len() as u64).checked_sub(parsed)?;
    if left < min_split.max(1) {
        return None;
    }
    let at = split_point(whole, (parsed + left / 2) as usize)?;
    split.at.store(at as u64, Ordering::Relaxed);
    let mut sink = Sink {
        serde_only,
        abandon: Some(&split.missed),
        ..Sink::default()
    };
    let mut st = Stream::new(Tail {
        data: &whole[at..],
        err,
    });
    st.base = at as u64;
    let outcome = events_from(&mut st, &mut sink).and_then(|()| members(&mut st, &mut sink));
    Some((sink, outcome))
}

/// The first likely start of an event at or after `from`: a `{` after a `,` after a `}`
/// (blanks between). Only a guess: the first thread checks it by landing on it.
fn split_point(data: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    loop {
        i += memchr::memchr(b'{', data.get(i..)?)?;
        let mut before = data[..i]
            .iter()
            .rev()
            .filter(|&&c| CLASS[c as usize] & WS == 0);
        if before.next() == Some(&b',') && before.next() == Some(&b'}') {
            return Some(i);
        }
        i += 1;
    }
}

/// The rest of an input held in memory, then the read error that ended it (if any).
struct Tail<'a> {
    data: &'a [u8],
    err: Option<(io::ErrorKind, String)>,
}

impl Read for Tail<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.data.is_empty() {
            return match self.err.take() {
                Some((kind, msg)) => Err(io::Error::new(kind, msg)),
                None => Ok(0),
            };
        }
        let n = buf.len().min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// Bytes inflated at a time: small enough that a chunk is still in cache when it is parsed.
const PUMP_CHUNK: usize = 1 << 18;

/// Reads `r` in chunks into `tx` until its end or an error (which is passed on), reusing the
/// buffers that come back on `spare` (fresh pages cost more than inflating into them). Keeps
/// a copy of the input while it fits in [`SPLIT_LIMIT`] and returns it with the read error
/// that ended it; the copy is `None` past the limit. While copying it runs ahead of the
/// parser; past the limit it stays at most a few chunks ahead.
fn pump(
    mut r: impl Read,
    tx: std::sync::mpsc::Sender<io::Result<Vec<u8>>>,
    spare: std::sync::mpsc::Receiver<Vec<u8>>,
    split: &Split,
) -> (Option<Vec<u8>>, Option<(io::ErrorKind, String)>) {
    let mut whole = (!split.missed.load(Ordering::Relaxed)).then(Vec::new);
    let send = |chunk: io::Result<Vec<u8>>, whole: &Option<Vec<u8>>| {
        let ahead = if whole.is_some() {
            SPLIT_LIMIT / PUMP_CHUNK
        } else {
            4
        };
        while split.in_flight.load(Ordering::Acquire) >= ahead {
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        split.in_flight.fetch_add(1, Ordering::AcqRel);
        tx.send(chunk).is_ok()
    };
    loop {
        let mut chunk = spare.try_recv().unwrap_or_default();
        chunk.resize(PUMP_CHUNK, 0);
        let (n, err) = fill(&mut r, &mut chunk);
        chunk.truncate(n);
        if let Some(w) = &mut whole {
            if w.len() + n > SPLIT_LIMIT {
                whole = None;
            } else {
                w.extend_from_slice(&chunk);
            }
        }
        if let Some(e) = err {
            let kept = (e.kind(), e.to_string());
            if n > 0 {
                send(Ok(chunk), &whole);
            }
            send(Err(e), &whole);
            return (whole, Some(kept));
        }
        let end = n == 0;
        if !send(Ok(chunk), &whole) || end {
            return (whole, None);
        }
    }
}

/// The receiving end of [`pump`] as a reader (an empty chunk is the end of input); read
/// chunks go back to the pump on `back`.
struct ChannelReader<'a> {
    rx: std::sync::mpsc::Receiver<io::Result<Vec<u8>>>,
    back: std::sync::mpsc::Sender<Vec<u8>>,
    cur: Vec<u8>,
    pos: usize,
    /// The pump's count of chunks not yet taken.
    in_flight: &'a AtomicUsize,
}

impl Read for ChannelReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.cur.len() {
            let got = self.rx.recv();
            if got.is_ok() {
                self.in_flight.fetch_sub(1, Ordering::AcqRel);
            }
            match got {
                Ok(Ok(chunk)) => {
                    let used = std::mem::replace(&mut self.cur, chunk);
                    // The pump may have ended; the buffer is then simply dropped.
                    let _ = self.back.send(used);
                    self.pos = 0;
                }
                Ok(Err(e)) => return Err(e),
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.cur.len() - self.pos);
        buf[..n].copy_from_slice(&self.cur[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Parses a trace from any reader; `path` names it in messages.
///
/// The reader is consumed in chunks: a byte scanner finds each complete element of the
/// top-level object and of its `traceEvents` array, and serde_json decodes that element alone
/// from the buffer (borrowing its strings), so memory holds one chunk plus the kept events.
pub fn parse_reader(path: &Path, reader: impl Read) -> Result<KinetoTrace, ImportError> {
    parse_with(path, reader, false)
}

/// [`parse_reader`]; `serde_only`: decode every event with serde_json (the reference).
fn parse_with(
    path: &Path,
    reader: impl Read,
    serde_only: bool,
) -> Result<KinetoTrace, ImportError> {
    let mut sink = Sink {
        serde_only,
        ..Sink::default()
    };
    let mut st = Stream::new(reader);
    let outcome = top_level(&mut st, &mut sink);
    finish(path, sink, outcome)
}

/// The trace from what the parser gathered and how it ended.
fn finish(
    path: &Path,
    sink: Sink<'_>,
    outcome: Result<(), Stop>,
) -> Result<KinetoTrace, ImportError> {
    let mut truncated = None;
    match outcome {
        Ok(()) => {}
        Err(Stop::Cut(why)) => {
            if sink.events_read == 0 {
                return Err(ImportError::CutOff {
                    path: path.to_owned(),
                    message: why,
                });
            }
            truncated = Some(format!(
                "{}: the file ends early ({why}); imported the {} events before the cut",
                path.display(),
                sink.events_read
            ));
        }
        Err(Stop::Bad(message)) => {
            return Err(ImportError::Json {
                path: path.to_owned(),
                message,
            })
        }
        Err(Stop::Budget(message)) => {
            return Err(ImportError::OverBudget {
                path: path.to_owned(),
                message,
            })
        }
        Err(Stop::Split) => unreachable!("only the first half of a split stops at the split"),
    }
    if !sink.saw_events {
        return Err(ImportError::NotKineto {
            path: path.to_owned(),
            why: "it has no \"traceEvents\" array".into(),
        });
    }
    Ok(KinetoTrace {
        path: path.to_owned(),
        dist: sink.dist.flatten(),
        base_time_ns: sink.base_time_ns.flatten(),
        host_name: sink.host_name.flatten(),
        names: sink.names,
        events: sink.events,
        float_ts: sink.float_ts,
        events_read: sink.events_read,
        truncated,
    })
}

/// Bytes read at a time.
const CHUNK: usize = 1 << 20;

/// Why scanning stopped early.
enum Stop {
    /// The input ended (or could not be read further) inside the JSON.
    Cut(String),
    /// The JSON is malformed.
    Bad(String),
    /// The first half of a split parse reached the event where the second half starts.
    Split,
    /// A budget of the reader ([`probe_contract::budget`]) was reached; the message names it.
    Budget(String),
}

/// A buffered byte stream with the scanner's position.
struct Stream<R> {
    r: R,
    /// Storage: the input read so far is `buf[..len]`; the rest is spare room, initialized
    /// once and reused so that refills do not clear memory.
    buf: Vec<u8>,
    /// Bytes of input in `buf`.
    len: usize,
    /// Index of the next unread byte in `buf`.
    pos: usize,
    /// Offset in the input of `buf[0]`.
    base: u64,
    /// Why no more bytes come: `Some("")` at a clean end of input, else the read error.
    done: Option<String>,
    /// Largest value (one event, or a top-level member) read ([`budget::PROFILER_EVENT_BYTES`]).
    max_value: u64,
    /// Largest input read, after inflating ([`budget::PROFILER_TRACE_BYTES`]).
    max_total: u64,
    /// Most events read ([`budget::PROFILER_EVENTS`]).
    max_events: u64,
    /// The budget that stopped the reading, if one did.
    over: Option<String>,
}

impl<R: Read> Stream<R> {
    fn new(r: R) -> Stream<R> {
        Stream {
            r,
            buf: Vec::new(),
            len: 0,
            pos: 0,
            base: 0,
            done: None,
            max_value: budget::PROFILER_EVENT_BYTES.limit(),
            max_total: budget::PROFILER_TRACE_BYTES.limit(),
            max_events: budget::PROFILER_EVENTS.limit(),
            over: None,
        }
    }

    /// Reads more input (at least as much as is buffered past `pos`, so a long value is
    /// rescanned a logarithmic number of times). Returns false when no more comes.
    fn fill(&mut self) -> bool {
        if self.done.is_some() {
            return false;
        }
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.len, 0);
            self.len -= self.pos;
            self.base += self.pos as u64;
            self.pos = 0;
        }
        // The buffer holds one value that is not complete yet: past the budget, stop before
        // it grows further; likewise for the whole input.
        if self.len as u64 > self.max_value {
            self.over = Some(budget::PROFILER_EVENT_BYTES.exceeded(self.max_value));
            return false;
        }
        let want = CHUNK.max(self.len);
        let old = self.len;
        if self.buf.len() < old + want {
            self.buf.resize(old + want, 0);
        }
        let (n, err) = fill(&mut self.r, &mut self.buf[old..old + want]);
        match err {
            Some(e) => self.done = Some(e.to_string()),
            // Short of what was asked: the input has ended.
            None if n < want => self.done = Some(String::new()),
            None => {}
        }
        self.len = old + n;
        // Input past the budget is dropped: the parser stops where the budget ends.
        if self.base + self.len as u64 > self.max_total {
            self.len = (self.max_total.saturating_sub(self.base) as usize).max(old);
            self.over = Some(budget::PROFILER_TRACE_BYTES.exceeded(self.max_total));
            self.done = Some(String::new());
            return self.len > old;
        }
        n > 0
    }

    /// The input read and not yet dropped.
    fn data(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    fn cut(&self) -> Stop {
        if let Some(over) = &self.over {
            return Stop::Budget(over.clone());
        }
        match self.done.as_deref() {
            Some(e) if !e.is_empty() => Stop::Cut(format!("read error: {e}")),
            _ => Stop::Cut(format!(
                "end of input after {} bytes",
                self.base + self.len as u64
            )),
        }
    }

    /// The next byte that is not whitespace, without consuming it.
    fn peek(&mut self) -> Result<u8, Stop> {
        loop {
            while self.pos < self.len {
                let b = self.buf[self.pos];
                if !b.is_ascii_whitespace() {
                    return Ok(b);
                }
                self.pos += 1;
            }
            if !self.fill() {
                return Err(self.cut());
            }
        }
    }

    fn expect(&mut self, c: u8, what: &str) -> Result<(), Stop> {
        let b = self.peek()?;
        if b != c {
            return Err(Stop::Bad(format!(
                "expected {what} at byte {}, found {:?}",
                self.base + self.pos as u64,
                b as char
            )));
        }
        self.pos += 1;
        Ok(())
    }

    /// The end (exclusive index into `buf`) of the JSON value starting at `pos`, reading more
    /// input as needed.
    fn value_end(&mut self) -> Result<usize, Stop> {
        self.peek()?;
        loop {
            if let Some(end) = scan_value(self.data(), self.pos) {
                self.check_value(end)?;
                return Ok(end);
            }
            if !self.fill() {
                // A scalar that ends exactly at the end of input is complete.
                if !matches!(self.data().get(self.pos), Some(b'{' | b'[' | b'"')) {
                    if let Some(e) = self.done.as_deref() {
                        if e.is_empty() && self.pos < self.len {
                            return Ok(self.len);
                        }
                    }
                }
                return Err(self.cut());
            }
        }
    }

    /// Refuses the value from `pos` to `end` when it is larger than the budget allows.
    fn check_value(&self, end: usize) -> Result<(), Stop> {
        if (end - self.pos) as u64 > self.max_value {
            return Err(Stop::Budget(
                budget::PROFILER_EVENT_BYTES.exceeded(self.max_value),
            ));
        }
        Ok(())
    }

    fn bad(&self, at: usize, e: serde_json::Error) -> Stop {
        Stop::Bad(format!(
            "{e} (in the value at byte {})",
            self.base + at as u64
        ))
    }
}

/// The end of the JSON value at `buf[i]`, or `None` if it continues past the buffer.
fn scan_value(buf: &[u8], i: usize) -> Option<usize> {
    match *buf.get(i)? {
        b'"' => string_end(buf, i + 1),
        open @ (b'{' | b'[') => {
            // Only this kind of bracket can close the value once strings are skipped, so the
            // scan jumps between quotes and these two bytes (vectorized).
            let close = if open == b'{' { b'}' } else { b']' };
            let mut depth = 0usize;
            let mut j = i;
            loop {
                j += memchr::memchr3(b'"', open, close, buf.get(j..)?)?;
                match buf[j] {
                    b'"' => {
                        j = string_end(buf, j + 1)?;
                        continue;
                    }
                    b if b == open => depth += 1,
                    _ => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                }
                j += 1;
            }
        }
        _ => buf[i..]
            .iter()
            .position(|b| matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace())
            .map(|k| i + k),
    }
}

/// The index just past the closing quote of a string whose contents start at `j`.
fn string_end(buf: &[u8], mut j: usize) -> Option<usize> {
    loop {
        let k = j + memchr::memchr2(b'"', b'\\', buf.get(j..)?)?;
        if buf[k] == b'"' {
            return Some(k + 1);
        }
        j = k + 2;
    }
}

fn top_level<R: Read>(st: &mut Stream<R>, sink: &mut Sink<'_>) -> Result<(), Stop> {
    st.expect(b'{', "a JSON object (a PyTorch profiler trace)")?;
    members(st, sink)
}

/// The members of the top-level object, up to its closing brace.
fn members<R: Read>(st: &mut Stream<R>, sink: &mut Sink<'_>) -> Result<(), Stop> {
    loop {
        match st.peek()? {
            b'}' => return Ok(()),
            b',' => {
                st.pos += 1;
                continue;
            }
            _ => {}
        }
        let end = st.value_end()?;
        let key: String =
            serde_json::from_slice(&st.buf[st.pos..end]).map_err(|e| st.bad(st.pos, e))?;
        st.pos = end;
        st.expect(b':', "':' after a key")?;
        if key == "traceEvents" {
            sink.saw_events = true;
            events(st, sink)?;
            continue;
        }
        let end = st.value_end()?;
        let slice = &st.buf[st.pos..end];
        match key.as_str() {
            "distributedInfo" => {
                let v: Lenient<DistributedInfo> =
                    serde_json::from_slice(slice).map_err(|e| st.bad(st.pos, e))?;
                sink.dist = Some(v.0);
            }
            "baseTimeNanoseconds" => {
                let v: Scalar = serde_json::from_slice(slice).map_err(|e| st.bad(st.pos, e))?;
                sink.base_time_ns = Some(v.as_i64().and_then(|x| u64::try_from(x).ok()));
            }
            "host_name" => {
                let v: Scalar = serde_json::from_slice(slice).map_err(|e| st.bad(st.pos, e))?;
                sink.host_name = Some(v.into_string());
            }
            _ => {}
        }
        st.pos = end;
    }
}

fn events<R: Read>(st: &mut Stream<R>, sink: &mut Sink<'_>) -> Result<(), Stop> {
    st.expect(b'[', "the traceEvents array")?;
    events_from(st, sink)
}

/// The elements of an events array from the current one to the closing bracket.
fn events_from<R: Read>(st: &mut Stream<R>, sink: &mut Sink<'_>) -> Result<(), Stop> {
    loop {
        match st.peek()? {
            b']' => {
                st.pos += 1;
                return Ok(());
            }
            b',' => {
                st.pos += 1;
                continue;
            }
            _ => {}
        }
        if let Some(split) = sink.split {
            let here = st.base + st.pos as u64;
            split.parsed.store(here, Ordering::Relaxed);
            let at = split.at.load(Ordering::Relaxed);
            if here == at {
                return Err(Stop::Split);
            }
            if here > at {
                split.missed.store(true, Ordering::Relaxed);
            }
        }
        if sink.events_read >= st.max_events {
            return Err(Stop::Budget(
                budget::PROFILER_EVENTS.exceeded(st.max_events),
            ));
        }
        if let Some(abandon) = sink.abandon {
            if sink.events_read.is_multiple_of(1024) && abandon.load(Ordering::Relaxed) {
                return Err(Stop::Bad("abandoned".into()));
            }
        }
        if !sink.serde_only {
            match scan_event(st.data(), st.pos) {
                Scanned::Incomplete => {
                    if !st.fill() {
                        return Err(st.cut());
                    }
                    continue;
                }
                Scanned::Plain(end, ev) => {
                    st.check_value(end)?;
                    if let Decoded::Done = decode_plain(&ev, sink) {
                        st.pos = end;
                        continue;
                    }
                }
                Scanned::Unusual => {}
            }
        }
        let end = st.value_end()?;
        let mut de = serde_json::Deserializer::from_slice(&st.buf[st.pos..end]);
        EventSeed { sink: &mut *sink }
            .deserialize(&mut de)
            .map_err(|e| st.bad(st.pos, e))?;
        st.pos = end;
    }
}

/// The top-level members of one event that the importer reads, as raw JSON values (byte
/// slices of the buffer), found by [`scan_event`].
#[derive(Default)]
struct RawEvent<'a> {
    ph: Option<&'a [u8]>,
    cat: Option<&'a [u8]>,
    name: Option<&'a [u8]>,
    ts: Option<&'a [u8]>,
    dur: Option<&'a [u8]>,
    pid: Option<&'a [u8]>,
    tid: Option<&'a [u8]>,
    args: Option<&'a [u8]>,
    /// The name as it stood when `args` came (`None`: no name before it), which decides
    /// whether input shapes are read, as the reference decides it.
    name_before_args: Option<&'a [u8]>,
}

/// What [`scan_event`] found at the scanner's position.
enum Scanned<'a> {
    /// The event continues past the buffer.
    Incomplete,
    /// A plain event (an object whose keys and strings have no escapes) ending at the index,
    /// with its members.
    Plain(usize, RawEvent<'a>),
    /// Anything else (escapes, not an object, malformed): decode it with serde_json.
    Unusual,
}

/// Scans the event at `buf[i]` in one pass: finds its end and its top-level members. This is
/// the fast path for the millions of plain events of a trace; serde_json decodes the rest.
fn scan_event(buf: &[u8], i: usize) -> Scanned<'_> {
    let mut ev = RawEvent::default();
    match scan_members(buf, i, |key, value| {
        let value = Some(value);
        match key {
            b"ph" => ev.ph = value,
            b"cat" => ev.cat = value,
            b"name" => ev.name = value,
            b"ts" => ev.ts = value,
            b"dur" => ev.dur = value,
            b"pid" => ev.pid = value,
            b"tid" => ev.tid = value,
            b"args" => {
                ev.args = value;
                ev.name_before_args = ev.name;
            }
            _ => {}
        }
    }) {
        Members::End(end) => Scanned::Plain(end, ev),
        Members::Incomplete => Scanned::Incomplete,
        Members::Unusual => Scanned::Unusual,
    }
}

/// The end of the number or literal at `buf[v]`, checked to be well formed (so that it holds
/// no quote or bracket that would make the reference see another end of the event):
/// `Err(true)` when it may continue past the buffer, `Err(false)` when it is malformed.
fn scalar_end(buf: &[u8], v: usize) -> Result<usize, bool> {
    let rest = &buf[v..];
    let k = match rest[0] {
        b't' | b'f' | b'n' => [&b"true"[..], b"false", b"null"]
            .iter()
            .find(|w| rest.starts_with(w) || w.starts_with(rest))
            .map(|w| w.len())
            .ok_or(false)?,
        _ => {
            let digits = |i: usize| rest[i..].iter().take_while(|b| b.is_ascii_digit()).count();
            let mut i = usize::from(rest[0] == b'-');
            match digits(i) {
                0 if i == rest.len() => return Err(true),
                0 => return Err(false),
                n if n > 1 && rest[i] == b'0' => return Err(false),
                n => i += n,
            }
            if rest.get(i) == Some(&b'.') {
                let n = digits(i + 1);
                if n == 0 {
                    return Err(i + 1 == rest.len());
                }
                i += 1 + n;
            }
            if matches!(rest.get(i), Some(b'e' | b'E')) {
                i += 1;
                if matches!(rest.get(i), Some(b'+' | b'-')) {
                    i += 1;
                }
                let n = digits(i);
                if n == 0 {
                    return Err(i == rest.len());
                }
                i += n;
            }
            i
        }
    };
    match rest.get(k) {
        None => Err(true),
        Some(&c) if CLASS[c as usize] & DELIM != 0 => Ok(v + k),
        Some(_) => Err(false),
    }
}

/// How [`scan_members`] ended.
enum Members {
    /// The object ends just before this index.
    End(usize),
    /// The object continues past the buffer.
    Incomplete,
    /// Not an object, an escape in a key or string, or malformed.
    Unusual,
}

/// Walks the members of the JSON object at `buf[i]`, calling `member(key, raw value)` for each
/// (keys without their quotes, values as written). Strings with escapes are left to
/// serde_json ([`Members::Unusual`]); values are not validated beyond finding their end.
fn scan_members<'a>(
    buf: &'a [u8],
    i: usize,
    mut member: impl FnMut(&'a [u8], &'a [u8]),
) -> Members {
    if buf.get(i) != Some(&b'{') {
        return Members::Unusual;
    }
    let mut j = i + 1;
    loop {
        j = skip_ws(buf, j);
        match buf.get(j) {
            None => return Members::Incomplete,
            Some(b'}') => return Members::End(j + 1),
            Some(b',') => {
                j += 1;
                continue;
            }
            Some(b'"') => {}
            Some(_) => return Members::Unusual,
        }
        let key_start = j + 1;
        let key_end = match plain_string_end(buf, key_start) {
            Ok(k) => k,
            Err(incomplete) => return scan_stop(incomplete),
        };
        j = skip_ws(buf, key_end + 1);
        match buf.get(j) {
            None => return Members::Incomplete,
            Some(b':') => {}
            Some(_) => return Members::Unusual,
        }
        let v = skip_ws(buf, j + 1);
        let vend = match buf.get(v) {
            None => return Members::Incomplete,
            Some(b'"') => match plain_string_end(buf, v + 1) {
                Ok(k) => k + 1,
                Err(incomplete) => return scan_stop(incomplete),
            },
            // The same scan as the reference's, so that both find the same end of the event.
            Some(&open @ (b'{' | b'[')) => match scan_value(buf, v) {
                // An array is scanned for its brackets only: braces in it are left to the
                // reference, which counts them.
                Some(e) if open == b'[' && memchr::memchr2(b'{', b'}', &buf[v..e]).is_some() => {
                    return Members::Unusual
                }
                Some(e) => e,
                None => return Members::Incomplete,
            },
            Some(_) => match scalar_end(buf, v) {
                Ok(k) => k,
                Err(incomplete) => return scan_stop(incomplete),
            },
        };
        member(&buf[key_start..key_end], &buf[v..vend]);
        j = vend;
    }
}

/// Reads a plain `args` object as [`RawArgsVisitor`] does, without serde_json; `None` when the
/// visitor must read it (not an object, shapes wanted, a value of an unusual shape).
fn plain_args(args: &[u8], shapes: bool) -> Option<RawArgs> {
    let mut a = RawArgs::default();
    let mut ok = true;
    let end = scan_members(args, 0, |key, value| {
        // The keys of ARG_KEYS, in its order.
        let slot = match key {
            b"stream" => &mut a.stream,
            b"correlation" => &mut a.correlation,
            b"device" => &mut a.device,
            b"Collective name" => &mut a.collective,
            b"In msg nelems" => &mut a.in_nelems,
            b"Out msg nelems" => &mut a.out_nelems,
            b"dtype" => &mut a.dtype,
            b"Group size" => &mut a.group_size,
            b"Process Group Name" => &mut a.pg_name,
            b"Input Dims" | b"Input type" if shapes => {
                ok = false;
                return;
            }
            _ => return,
        };
        match plain_scalar(value) {
            Some(v) => *slot = Some(v),
            None => ok = false,
        }
    });
    (ok && matches!(end, Members::End(e) if e == args.len())).then_some(a)
}

/// A raw JSON value (without escapes) as [`Scalar`] reads it; `None` when unsure.
fn plain_scalar(v: &[u8]) -> Option<Scalar> {
    match v.first()? {
        b'"' => Some(Scalar::Str(
            std::str::from_utf8(unquote(v)?).ok()?.to_owned(),
        )),
        b'{' | b'[' => Some(Scalar::Other),
        b't' | b'f' | b'n' => matches!(v, b"true" | b"false" | b"null").then_some(Scalar::Other),
        _ => match int(v) {
            Some(i) => Some(Scalar::Int(i)),
            None => number(v).map(|(x, _)| Scalar::Float(x)),
        },
    }
}

fn scan_stop(incomplete: bool) -> Members {
    if incomplete {
        Members::Incomplete
    } else {
        Members::Unusual
    }
}

/// The index of the closing quote of a string whose contents start at `j`: `Err(true)` when
/// it continues past the buffer, `Err(false)` when it has an escape.
fn plain_string_end(buf: &[u8], j: usize) -> Result<usize, bool> {
    // Keys and most values are short: a plain loop finds their end before a vector search
    // would have started.
    let rest = buf.get(j..).unwrap_or_default();
    let head = &rest[..rest.len().min(24)];
    if let Some(k) = head.iter().position(|&c| CLASS[c as usize] & STR != 0) {
        return if head[k] == b'"' {
            Ok(j + k)
        } else {
            Err(false)
        };
    }
    let j = j + head.len();
    match memchr::memchr2(b'"', b'\\', buf.get(j..).unwrap_or_default()) {
        None => Err(true),
        Some(k) if buf[j + k] == b'"' => Ok(j + k),
        Some(_) => Err(false),
    }
}

/// What the fast path made of a plain event.
enum Decoded {
    /// Dropped, or kept and pushed.
    Done,
    /// Something the fast path does not read exactly as serde_json does (a float, a string
    /// where a number belongs, invalid UTF-8...): decode the event with serde_json.
    Slow,
}

/// Decodes a plain event as [`EventSeed`] would, without serde_json where the values are the
/// common shapes (integers, plain strings); answers [`Decoded::Slow`] otherwise.
fn decode_plain(ev: &RawEvent<'_>, sink: &mut Sink<'_>) -> Decoded {
    // The decoder keeps only complete ("X") events with a ts, a dur and a cat.
    let dropped = ev.ph.is_some_and(|p| p != b"\"X\"") || ev.ts.is_none() || ev.dur.is_none();
    let (Some(cat), false) = (ev.cat, dropped) else {
        sink.events_read += 1;
        return Decoded::Done;
    };
    let Some(cat) = unquote(cat) else {
        return Decoded::Slow;
    };
    let cat = Cat::parse(cat);
    let name = match ev.name {
        None => "",
        Some(n) => match unquote(n).and_then(|n| std::str::from_utf8(n).ok()) {
            Some(n) => n,
            None => return Decoded::Slow,
        },
    };
    let args_text = ev.args.unwrap_or_default();
    // Without these words in its arguments an event has no correlation id and no stream, and
    // most events are dropped on their category and name alone.
    if !keep(cat, name, false, false) && !FINDERS.iter().any(|f| f.find(args_text).is_some()) {
        sink.events_read += 1;
        return Decoded::Done;
    }
    let (Some((ts, is_float)), Some((dur, _))) = (ev.ts.and_then(number), ev.dur.and_then(number))
    else {
        return Decoded::Slow;
    };
    let pid = match ev.pid {
        None => -1,
        Some(p) => match int(p) {
            Some(p) => p,
            None => return Decoded::Slow,
        },
    };
    let tid = match ev.tid {
        None => -1,
        Some(t) => match int(t) {
            Some(t) => t,
            None => return Decoded::Slow,
        },
    };
    let args = match ev.args {
        None => RawArgs::default(),
        Some(a) => {
            let shapes = match ev.name_before_args {
                None => true,
                Some(n) if Some(n) == ev.name => has_shapes(name),
                Some(n) => match unquote(n).and_then(|n| std::str::from_utf8(n).ok()) {
                    Some(n) => has_shapes(n),
                    None => return Decoded::Slow,
                },
            };
            match plain_args(a, shapes) {
                Some(args) => args,
                None => {
                    let mut de = serde_json::Deserializer::from_slice(a);
                    match (RawArgsVisitor { shapes }).deserialize(&mut de) {
                        Ok(args) => args,
                        Err(_) => return Decoded::Slow,
                    }
                }
            }
        }
    };
    sink.events_read += 1;
    sink.offer(Complete {
        cat,
        name: NameRef::Text(name),
        ts,
        is_float,
        dur,
        pid,
        tid,
        args,
    });
    Decoded::Done
}

/// A JSON number as the decoder reads `ts`: its value and whether it was written as a float
/// (with a fraction or an exponent); `None` for anything but a number. `v` is a raw value
/// from [`scan_members`], whose numbers are already checked to be well formed (and whose
/// strings, objects and literals never parse as a float). Floats are rounded correctly (as
/// Python's `json`, which HTA uses, rounds them).
fn number(v: &[u8]) -> Option<(f64, bool)> {
    if let Some(i) = int(v) {
        return Some((i as f64, false));
    }
    if !v.iter().any(|c| matches!(c, b'.' | b'e' | b'E')) {
        // An integer too long for `int` (serde_json reads those its own way), or not a number.
        return None;
    }
    let x: f64 = std::str::from_utf8(v).ok()?.parse().ok()?;
    Some((x, true))
}

/// A JSON integer that fits an i64 with room to spare (at most 18 digits), as serde_json reads
/// it; `None` for anything else.
fn int(v: &[u8]) -> Option<i64> {
    let (neg, digits) = match v.split_first()? {
        (b'-', rest) => (true, rest),
        _ => (false, v),
    };
    if digits.is_empty() || digits.len() > 18 || (digits.len() > 1 && digits[0] == b'0') {
        return None;
    }
    let mut n: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n * 10 + i64::from(d - b'0');
    }
    // serde_json reads "-0" as a float.
    match (neg, n) {
        (true, 0) => None,
        (true, n) => Some(-n),
        (false, n) => Some(n),
    }
}

/// The words whose presence in an event's arguments may make [`keep`] keep it.
static FINDERS: std::sync::LazyLock<[memchr::memmem::Finder<'static>; 2]> =
    std::sync::LazyLock::new(|| {
        [
            memchr::memmem::Finder::new(b"correlation"),
            memchr::memmem::Finder::new(b"stream"),
        ]
    });

/// The index of the first byte at or after `i` that is not JSON whitespace.
#[inline]
fn skip_ws(b: &[u8], i: usize) -> usize {
    // Most calls land on a non-blank byte or on one blank.
    match b.get(i) {
        Some(&c) if CLASS[c as usize] & WS == 0 => return i,
        Some(b' ') if b.get(i + 1).is_some_and(|&c| CLASS[c as usize] & WS == 0) => return i + 1,
        _ => {}
    }
    match b.get(i..) {
        Some(rest) => {
            i + rest
                .iter()
                .position(|&c| CLASS[c as usize] & WS == 0)
                .unwrap_or(rest.len())
        }
        None => i,
    }
}

/// [`CLASS`] bit: JSON whitespace.
const WS: u8 = 1;
/// [`CLASS`] bit: ends a number or literal (whitespace, `,`, `}`, `]`).
const DELIM: u8 = 2;
/// [`CLASS`] bit: ends the plain part of a string (`"`, `\`).
const STR: u8 = 4;

/// Byte classes for the scanner's loops (one table load per byte instead of a chain of
/// comparisons).
static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    t[b' ' as usize] = WS | DELIM;
    t[b'\n' as usize] = WS | DELIM;
    t[b'\r' as usize] = WS | DELIM;
    t[b'\t' as usize] = WS | DELIM;
    t[b',' as usize] = DELIM;
    t[b'}' as usize] = DELIM;
    t[b']' as usize] = DELIM;
    t[b'"' as usize] = STR;
    t[b'\\' as usize] = STR;
    t
};

/// The contents of a JSON string value (without escapes), or `None` if it is not a string.
fn unquote(v: &[u8]) -> Option<&[u8]> {
    (v.len() >= 2 && v[0] == b'"' && v[v.len() - 1] == b'"').then(|| &v[1..v.len() - 1])
}

#[derive(Default)]
struct Sink<'s> {
    /// The top-level members read (`Some` once seen, as the last one seen read).
    dist: Option<Option<DistributedInfo>>,
    base_time_ns: Option<Option<u64>>,
    host_name: Option<Option<String>>,
    names: Vec<String>,
    index: FxHashMap<Box<str>, u32>,
    events: Vec<Event>,
    float_ts: bool,
    saw_events: bool,
    events_read: u64,
    /// Decode every event with serde_json (the reference the fast path is tested against).
    serde_only: bool,
    /// The first half of a split parse: where to stop.
    split: Option<&'s Split>,
    /// The second half of a split parse: set when it is not needed.
    abandon: Option<&'s AtomicBool>,
}

/// A complete event (`ph` "X" with a ts, a dur and a cat) as either decoder read it, before
/// [`keep`] decides on it.
struct Complete<'n> {
    cat: Cat,
    name: NameRef<'n>,
    ts: f64,
    /// Whether `ts` was written as a float.
    is_float: bool,
    dur: f64,
    pid: i64,
    tid: i64,
    args: RawArgs,
}

/// An event's name: text not interned yet (interned only if the event is kept), or interned.
enum NameRef<'n> {
    Text(&'n str),
    Interned(u32),
}

impl Sink<'_> {
    /// Keeps the event if [`keep`] wants it (and its times are finite).
    fn offer(&mut self, mut e: Complete<'_>) {
        if !e.ts.is_finite() || !e.dur.is_finite() {
            return;
        }
        let stream = e
            .args
            .stream
            .as_ref()
            .and_then(Scalar::as_i64)
            .unwrap_or(-1);
        let correlation = e
            .args
            .correlation
            .as_ref()
            .and_then(Scalar::as_i64)
            .unwrap_or(-1);
        let text = match e.name {
            NameRef::Text(t) => t,
            NameRef::Interned(i) => &self.names[i as usize],
        };
        if !keep(e.cat, text, correlation >= 0, stream >= 0) {
            return;
        }
        self.float_ts |= e.is_float;
        let name = match e.name {
            NameRef::Text(t) => self.intern(t),
            NameRef::Interned(i) => i,
        };
        let comm = e.args.comm();
        self.events.push(Event {
            ts: e.ts,
            dur: e.dur,
            name,
            cat: e.cat,
            pid: e.pid,
            tid: e.tid,
            stream,
            correlation,
            device: e
                .args
                .device
                .as_ref()
                .and_then(Scalar::as_i64)
                .unwrap_or(-1),
            comm,
        });
    }

    /// Appends what the second half of a split parse read (the later part of the file).
    fn join(&mut self, rest: Sink<'_>) {
        if rest.dist.is_some() {
            self.dist = rest.dist;
        }
        if rest.base_time_ns.is_some() {
            self.base_time_ns = rest.base_time_ns;
        }
        if rest.host_name.is_some() {
            self.host_name = rest.host_name;
        }
        self.saw_events |= rest.saw_events;
        self.float_ts |= rest.float_ts;
        self.events_read += rest.events_read;
        self.events.reserve(rest.events.len());
        let ids: Vec<u32> = rest.names.iter().map(|n| self.intern(n)).collect();
        for mut e in rest.events {
            e.name = ids[e.name as usize];
            self.events.push(e);
        }
    }

    fn intern(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(s.to_owned());
        self.index.insert(s.into(), i);
        i
    }
}

/// A value that is `None` when it does not have the expected shape, instead of an error.
struct Lenient<T>(Option<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        Ok(Lenient(T::deserialize(v).ok()))
    }
}

struct EventSeed<'a, 's> {
    sink: &'a mut Sink<'s>,
}

impl<'de> DeserializeSeed<'de> for EventSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

/// A map key matched as raw bytes against a table (no UTF-8 validation, no allocation):
/// `Key(i)` is `TABLE[i]`, `Key(u8::MAX)` any other key.
struct Key<const T: usize>(u8);

/// Keys of an event object.
const EVENT_KEYS: &[&[u8]] = &[
    b"ph", b"cat", b"name", b"ts", b"dur", b"pid", b"tid", b"args",
];
/// Keys of an event's `args` that the importer reads.
const ARG_KEYS: &[&[u8]] = &[
    b"stream",
    b"correlation",
    b"device",
    b"Collective name",
    b"In msg nelems",
    b"Out msg nelems",
    b"dtype",
    b"Group size",
    b"Process Group Name",
    b"Input Dims",
    b"Input type",
];

impl<'de, const T: usize> Deserialize<'de> for Key<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_bytes(KeyVisitor::<T>)
    }
}

struct KeyVisitor<const T: usize>;

impl<const T: usize> KeyVisitor<T> {
    fn find(v: &[u8]) -> Key<T> {
        let table = if T == 0 { EVENT_KEYS } else { ARG_KEYS };
        Key(table
            .iter()
            .position(|k| *k == v)
            .map_or(u8::MAX, |i| i as u8))
    }
}

impl<'de, const T: usize> Visitor<'de> for KeyVisitor<T> {
    type Value = Key<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Key<T>, E> {
        Ok(Self::find(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<T>, E> {
        Ok(Self::find(v.as_bytes()))
    }
}

impl<'de> Visitor<'de> for EventSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a trace event object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let sink = self.sink;
        let mut ts: Option<(f64, bool)> = None;
        let mut dur: Option<f64> = None;
        let mut cat: Option<Cat> = None;
        let mut name: Option<u32> = None;
        let mut ph_complete = true;
        let mut pid = -1;
        let mut tid = -1;
        let mut args = RawArgs::default();
        while let Some(Key(field)) = map.next_key::<Key<0>>()? {
            match field {
                0 => {
                    let s: Scalar = map.next_value()?;
                    // Only complete events ("X") carry work; no ph at all is read as "X", as
                    // HTA keeps every event with a dur and a cat.
                    ph_complete = matches!(&s, Scalar::Str(p) if p == "X");
                }
                1 => cat = Some(map.next_value_seed(CatSeed)?),
                2 => name = Some(map.next_value_seed(InternSeed { sink })?),
                3 => {
                    ts = match map.next_value::<Scalar>()? {
                        Scalar::Int(i) => Some((i as f64, false)),
                        Scalar::Float(x) => Some((x, true)),
                        _ => None,
                    }
                }
                4 => dur = map.next_value::<Scalar>()?.as_f64(),
                5 => pid = map.next_value::<Scalar>()?.as_i64().unwrap_or(-1),
                6 => tid = map.next_value::<Scalar>()?.as_i64().unwrap_or(-1),
                7 => {
                    // Input shapes are read only for the operators that carry collective sizes
                    // (the name comes before args in Kineto's output); for the thousands of
                    // other operators they are skipped unparsed.
                    let shapes = name.is_none_or(|n| has_shapes(&sink.names[n as usize]));
                    args = map.next_value_seed(RawArgsVisitor { shapes })?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        sink.events_read += 1;
        let (Some((ts, is_float)), Some(dur), Some(cat), true) = (ts, dur, cat, ph_complete) else {
            return Ok(());
        };
        sink.offer(Complete {
            cat,
            name: name.map_or(NameRef::Text(""), NameRef::Interned),
            ts,
            is_float,
            dur,
            pid,
            tid,
            args,
        });
        Ok(())
    }
}

struct CatSeed;

impl<'de> DeserializeSeed<'de> for CatSeed {
    type Value = Cat;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Cat, D::Error> {
        match Scalar::deserialize(d)? {
            Scalar::Str(s) => Ok(Cat::parse(s.as_bytes())),
            _ => Ok(Cat::Other),
        }
    }
}

struct InternSeed<'a, 's> {
    sink: &'a mut Sink<'s>,
}

impl<'de> DeserializeSeed<'de> for InternSeed<'_, '_> {
    type Value = u32;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u32, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for InternSeed<'_, '_> {
    type Value = u32;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an event name")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<u32, E> {
        Ok(self.sink.intern(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u32, E> {
        Ok(self.sink.intern(&v.to_string()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u32, E> {
        Ok(self.sink.intern(&v.to_string()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u32, E> {
        Ok(self.sink.intern(&v.to_string()))
    }

    fn visit_unit<E: de::Error>(self) -> Result<u32, E> {
        Ok(self.sink.intern(""))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<u32, E> {
        Ok(self.sink.intern(if v { "true" } else { "false" }))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<u32, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(self.sink.intern(""))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<u32, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(self.sink.intern(""))
    }
}

/// Any JSON value, reduced to what the importer reads from scalars (containers are skipped).
#[derive(Clone, Debug, PartialEq)]
enum Scalar {
    Int(i64),
    Float(f64),
    Str(String),
    Other,
}

impl Scalar {
    fn as_i64(&self) -> Option<i64> {
        match self {
            Scalar::Int(i) => Some(*i),
            Scalar::Float(x) if x.fract() == 0.0 && x.abs() < 9.0e18 => Some(*x as i64),
            Scalar::Str(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    fn as_u64(&self) -> Option<u64> {
        self.as_i64().and_then(|i| u64::try_from(i).ok())
    }

    fn as_f64(&self) -> Option<f64> {
        match self {
            Scalar::Int(i) => Some(*i as f64),
            Scalar::Float(x) => Some(*x),
            Scalar::Str(s) => s.trim().parse().ok(),
            Scalar::Other => None,
        }
    }

    fn into_string(self) -> Option<String> {
        match self {
            Scalar::Str(s) => Some(s),
            Scalar::Int(i) => Some(i.to_string()),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Scalar, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar, E> {
        Ok(Scalar::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
        Ok(i64::try_from(v).map_or(Scalar::Float(v as f64), Scalar::Int))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar, E> {
        Ok(Scalar::Float(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar, E> {
        Ok(Scalar::Str(v.to_owned()))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Scalar, E> {
        Ok(Scalar::Other)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Scalar, E> {
        Ok(Scalar::Other)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other)
    }
}

/// Elements of the first input of an operator from its `Input Dims`: `[[2, 3], ...]` gives
/// 6; a tensor list `[[[2, 3], [4]], ...]` gives 10.
#[derive(Default)]
struct FirstInputNumel(Option<u64>);

impl<'de> Deserialize<'de> for FirstInputNumel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        let first = v.as_array().and_then(|a| a.first());
        Ok(FirstInputNumel(first.and_then(numel)))
    }
}

fn numel(v: &serde_json::Value) -> Option<u64> {
    let dims = v.as_array()?;
    if dims.iter().all(|d| d.is_array()) && !dims.is_empty() {
        dims.iter().map(numel).sum()
    } else {
        dims.iter()
            .map(|d| d.as_u64())
            .try_fold(1u64, |acc, d| d.map(|d| acc.saturating_mul(d)))
    }
}

/// The first string of a list (`Input type`).
#[derive(Default)]
struct FirstString(Option<String>);

impl<'de> Deserialize<'de> for FirstString {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        Ok(FirstString(match v {
            serde_json::Value::Array(a) => a.into_iter().find_map(|x| match x {
                serde_json::Value::String(s) if !s.is_empty() => Some(s),
                _ => None,
            }),
            serde_json::Value::String(s) => Some(s),
            _ => None,
        }))
    }
}

#[derive(Default)]
struct RawArgs {
    stream: Option<Scalar>,
    correlation: Option<Scalar>,
    device: Option<Scalar>,
    collective: Option<Scalar>,
    in_nelems: Option<Scalar>,
    out_nelems: Option<Scalar>,
    dtype: Option<Scalar>,
    group_size: Option<Scalar>,
    pg_name: Option<Scalar>,
    input_dims: Option<FirstInputNumel>,
    input_type: Option<FirstString>,
}

/// Reads `args`; `shapes`: also `Input Dims` / `Input type`.
struct RawArgsVisitor {
    shapes: bool,
}

impl<'de> DeserializeSeed<'de> for RawArgsVisitor {
    type Value = RawArgs;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<RawArgs, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for RawArgsVisitor {
    type Value = RawArgs;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the args object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawArgs, A::Error> {
        let mut a = RawArgs::default();
        while let Some(Key(k)) = map.next_key::<Key<1>>()? {
            match k {
                0 => a.stream = Some(map.next_value()?),
                1 => a.correlation = Some(map.next_value()?),
                2 => a.device = Some(map.next_value()?),
                3 => a.collective = Some(map.next_value()?),
                4 => a.in_nelems = Some(map.next_value()?),
                5 => a.out_nelems = Some(map.next_value()?),
                6 => a.dtype = Some(map.next_value()?),
                7 => a.group_size = Some(map.next_value()?),
                8 => a.pg_name = Some(map.next_value()?),
                9 if self.shapes => a.input_dims = Some(map.next_value()?),
                10 if self.shapes => a.input_type = Some(map.next_value()?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(a)
    }

    // args that are not an object (null, a string...) carry nothing.
    fn visit_unit<E: de::Error>(self) -> Result<RawArgs, E> {
        Ok(RawArgs::default())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<RawArgs, E> {
        Ok(RawArgs::default())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<RawArgs, E> {
        Ok(RawArgs::default())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<RawArgs, E> {
        Ok(RawArgs::default())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<RawArgs, E> {
        Ok(RawArgs::default())
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<RawArgs, E> {
        Ok(RawArgs::default())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawArgs, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(RawArgs::default())
    }
}

impl RawArgs {
    fn comm(&mut self) -> Option<Box<CommArgs>> {
        let c = CommArgs {
            collective: self.collective.take().and_then(Scalar::into_string),
            in_nelems: self.in_nelems.as_ref().and_then(Scalar::as_u64),
            out_nelems: self.out_nelems.as_ref().and_then(Scalar::as_u64),
            dtype: self
                .dtype
                .take()
                .and_then(Scalar::into_string)
                .or_else(|| self.input_type.take().and_then(|t| t.0)),
            group_size: self.group_size.as_ref().and_then(Scalar::as_u64),
            pg_name: self.pg_name.take().and_then(Scalar::into_string),
            input_numel: self.input_dims.take().and_then(|d| d.0),
        };
        (c != CommArgs::default()).then(|| Box::new(c))
    }
}
