//! The binary cache of loaded trace files.
//!
//! After a trace file has been parsed, the reader writes the model part it
//! became (the rank's [`RankTrace`], its own string table and the file's
//! warnings) to `<dir of the file>/.cache/<name>.ddpc`, where `<name>` is the
//! file name without `.jsonl`. The next load of the same file reads that
//! instead of parsing JSON, when the cache still describes the file: same
//! length, same modification time, same hash of its first and last 4 KiB.
//! A file that grew (a trace still being written, or cut off and then
//! continued) therefore never comes from a stale cache.
//!
//! The cache is derived data: deleting it only costs one parse. Failing to
//! read it (missing, corrupt, written by another version) means parsing the
//! file again and rewriting it; failing to write it (read-only directory,
//! full disk) changes nothing but speed. Neither is ever an error of the
//! load; `DDP_PROBE_DEBUG=1` prints what happened to stderr. A file is
//! written under a temporary name and renamed into place, so two loads
//! racing each other each see a complete cache or none.
//!
//! Layout (little-endian): a fixed 72-byte header (magic `DDPCACHE`, the
//! cache format version, the source file's length, modification time and
//! head and tail hashes, the payload's length and checksum), then the
//! payload: LEB128 varints (zigzag for signed values), strings as length and
//! bytes, spans lane by lane as a flag word, the start as a delta to the
//! previous span's, the duration and only the fields that are present.
//! The checksum covers the payload in 1 MiB blocks; any mismatch, bound
//! violation or trailing byte rejects the whole file.

use std::fmt;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::Warning;
use crate::fill::read_full;
use crate::model::{
    BucketLayout, CounterSample, EndInfo, GradReady, InstantEvent, Lane, LaneKind, LaneStats,
    LogEntry, RankTrace, Span, SpanExtra, SpanParts, Strings, Sym,
};
use crate::trace::{
    BucketInfo, DdpConfig, Header, KernelCategory, LogLevel, ParamInfo, SpanKind, Version,
};

/// First bytes of every cache file.
const MAGIC: [u8; 8] = *b"DDPCACHE";
/// Version of the cache layout. Bump it whenever the layout, or the model
/// the reader builds from a trace, changes.
const FORMAT_VERSION: u32 = 1;
/// Size of the fixed header.
const HEADER_BYTES: usize = 72;
/// The payload is read, written and checksummed in blocks of this size.
const BLOCK: usize = 1 << 20;
/// Bytes hashed at each end of the source file.
const EDGE_BYTES: u64 = 4096;
/// A file without an `end` record modified this recently is probably still
/// being written: caching it would only be thrown away at the next load.
const SETTLE: Duration = Duration::from_secs(10);
/// The folder, next to the trace files, that holds their caches.
pub(crate) const CACHE_DIR: &str = ".cache";
/// Environment variable that makes the cache print its decisions.
const DEBUG_ENV: &str = "DDP_PROBE_DEBUG";

fn debug(args: fmt::Arguments<'_>) {
    static ON: OnceLock<bool> = OnceLock::new();
    let on = *ON.get_or_init(|| {
        std::env::var(DEBUG_ENV).is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
    });
    if on {
        eprintln!("ddp-probe: trace cache: {args}");
    }
}

/// What the cache holds for one trace file.
pub(crate) struct Part {
    /// The rank, its path set to the file's.
    pub rank: RankTrace,
    /// The rank's own string table (the reader merges the tables).
    pub strings: Strings,
    /// The warnings loading the file gave, paths set to the file's.
    pub warnings: Vec<Warning>,
}

/// What identifies the contents of a source file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Source {
    len: u64,
    mtime_s: i64,
    mtime_ns: u32,
    head: u64,
    tail: u64,
}

fn mtime(meta: &std::fs::Metadata) -> Option<(i64, u32)> {
    let t = meta.modified().ok()?;
    let d = t.duration_since(UNIX_EPOCH).ok()?;
    Some((i64::try_from(d.as_secs()).ok()?, d.subsec_nanos()))
}

impl Source {
    /// Length and time from `meta`, hashes of the file's first and last
    /// 4 KiB. Leaves the file's position at its start.
    fn of(mut file: &File, meta: &std::fs::Metadata) -> io::Result<Source> {
        let (mtime_s, mtime_ns) =
            mtime(meta).ok_or_else(|| io::Error::other("no usable modification time"))?;
        let len = meta.len();
        let edge = EDGE_BYTES.min(len);
        let mut buf = vec![0u8; edge as usize];
        file.seek(SeekFrom::Start(0))?;
        let n = read_full(file, &mut buf)?;
        let head = block_hash(&buf[..n]);
        file.seek(SeekFrom::Start(len - edge))?;
        let n = read_full(file, &mut buf)?;
        let tail = block_hash(&buf[..n]);
        file.seek(SeekFrom::Start(0))?;
        Ok(Source {
            len,
            mtime_s,
            mtime_ns,
            head,
            tail,
        })
    }
}

/// `<dir>/.cache/<name>.ddpc` for the trace file `<dir>/<name>.jsonl`
/// (other file names keep their extension: `<name>.<ext>.ddpc`).
pub(crate) fn cache_path(trace: &Path) -> Option<PathBuf> {
    let file_name = trace.file_name()?.to_str()?;
    let stem = file_name.strip_suffix(".jsonl").unwrap_or(file_name);
    let dir = trace.parent().unwrap_or(Path::new(""));
    Some(dir.join(CACHE_DIR).join(format!("{stem}.ddpc")))
}

/// The cache of one trace file that is being loaded.
pub(crate) struct Slot {
    cache: PathBuf,
    name: String,
    source: Source,
}

impl Slot {
    /// The slot of the open trace file `file` at `path`; `None` when the
    /// file is smaller than `min_bytes`, not a regular file, or its
    /// identity cannot be read.
    pub(crate) fn open(path: &Path, file: &File, min_bytes: u64) -> Option<Slot> {
        let meta = file.metadata().ok()?;
        if !meta.is_file() || meta.len() < min_bytes {
            return None;
        }
        let source = match Source::of(file, &meta) {
            Ok(s) => s,
            Err(e) => {
                debug(format_args!("{}: not cached: {e}", path.display()));
                // Parsing must still start at the beginning.
                let _ = (&*file).seek(SeekFrom::Start(0));
                return None;
            }
        };
        Some(Slot {
            cache: cache_path(path)?,
            name: path.file_name()?.to_string_lossy().into_owned(),
            source,
        })
    }

    /// The cached part, if the cache exists and describes the file.
    pub(crate) fn load(&self, path: &Path) -> Option<Part> {
        let file = match File::open(&self.cache) {
            Ok(f) => f,
            Err(e) => {
                if e.kind() != io::ErrorKind::NotFound {
                    debug(format_args!("{}: {e}", self.cache.display()));
                }
                return None;
            }
        };
        match read_cache(file, &self.source, &self.name, path) {
            Ok(part) => {
                debug(format_args!(
                    "{}: loaded from {}",
                    path.display(),
                    self.cache.display()
                ));
                Some(part)
            }
            Err(why) => {
                debug(format_args!(
                    "{}: not used ({why}); parsing {}",
                    self.cache.display(),
                    path.display()
                ));
                None
            }
        }
    }

    /// Writes the cache of the file just parsed from `file` (`bytes_read`
    /// bytes), unless the file changed meanwhile or looks still in progress.
    /// Never fails: problems are only reported by [`debug`].
    pub(crate) fn store(
        &self,
        file: &File,
        bytes_read: u64,
        rank: &RankTrace,
        strings: &Strings,
        warnings: &[Warning],
    ) {
        if let Err(why) = self.try_store(file, bytes_read, rank, strings, warnings) {
            debug(format_args!("{}: not written: {why}", self.cache.display()));
        }
    }

    fn try_store(
        &self,
        file: &File,
        bytes_read: u64,
        rank: &RankTrace,
        strings: &Strings,
        warnings: &[Warning],
    ) -> Result<(), String> {
        let meta = file.metadata().map_err(|e| e.to_string())?;
        if bytes_read != self.source.len
            || meta.len() != self.source.len
            || mtime(&meta) != Some((self.source.mtime_s, self.source.mtime_ns))
        {
            return Err("the trace file changed while it was loaded".to_owned());
        }
        if rank.end.is_none() {
            let modified = meta.modified().map_err(|e| e.to_string())?;
            let recent = SystemTime::now()
                .duration_since(modified)
                .map_or(true, |age| age < SETTLE);
            if recent {
                return Err("the trace is probably still being written".to_owned());
            }
        }
        let dir = self.cache.parent().unwrap_or(Path::new(""));
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let tmp = dir.join(format!(
            ".{}.{}.{}.tmp",
            self.name,
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let written = write_cache(&tmp, &self.source, &self.name, rank, strings, warnings)
            .and_then(|()| std::fs::rename(&tmp, &self.cache).map_err(|e| e.to_string()));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }
}

// ---------------------------------------------------------------------------
// Checksum

fn le_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

const MIX: u64 = 0x9e37_79b9_7f4a_7c15;

/// A fast 64-bit hash of a block (four independent multiply-rotate lanes);
/// it detects damage, it does not resist tampering.
fn block_hash(b: &[u8]) -> u64 {
    let mut h: [u64; 4] = [
        0x243f_6a88_85a3_08d3,
        0x1319_8a2e_0370_7344,
        0xa409_3822_299f_31d0,
        0x082e_fa98_ec4e_6c89,
    ];
    let mut chunks = b.chunks_exact(32);
    for c in &mut chunks {
        for (l, h) in h.iter_mut().enumerate() {
            *h = (*h ^ le_u64(&c[l * 8..])).wrapping_mul(MIX).rotate_left(31);
        }
    }
    let rest = chunks.remainder();
    let mut tail = [0u8; 32];
    tail[..rest.len()].copy_from_slice(rest);
    for (l, h) in h.iter_mut().enumerate() {
        *h = (*h ^ le_u64(&tail[l * 8..]))
            .wrapping_mul(MIX)
            .rotate_left(31);
    }
    let mut x = b.len() as u64;
    for v in h {
        x = (x ^ v).wrapping_mul(MIX).rotate_left(29);
    }
    x ^ (x >> 32)
}

fn chain(acc: u64, block: u64) -> u64 {
    (acc ^ block).wrapping_mul(MIX).rotate_left(27)
}

// ---------------------------------------------------------------------------
// Writing

/// Payload encoder: buffers, hashes and writes whole blocks.
struct Enc<W: Write> {
    out: W,
    buf: Vec<u8>,
    hash: u64,
    len: u64,
}

impl<W: Write> Enc<W> {
    fn new(out: W) -> Enc<W> {
        Enc {
            out,
            buf: Vec::with_capacity(BLOCK + 4096),
            hash: 0,
            len: 0,
        }
    }

    fn block(&mut self, n: usize) -> io::Result<()> {
        let b = &self.buf[..n];
        self.hash = chain(self.hash, block_hash(b));
        self.len += n as u64;
        self.out.write_all(b)?;
        self.buf.drain(..n);
        Ok(())
    }

    /// Writes the full blocks buffered so far.
    fn spill(&mut self) -> io::Result<()> {
        while self.buf.len() >= BLOCK {
            self.block(BLOCK)?;
        }
        Ok(())
    }

    fn finish(mut self) -> io::Result<(W, u64, u64)> {
        self.spill()?;
        if !self.buf.is_empty() {
            self.block(self.buf.len())?;
        }
        Ok((self.out, self.len, self.hash))
    }

    #[inline]
    fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    #[inline]
    fn uv(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    #[inline]
    fn iv(&mut self, v: i64) {
        self.uv(((v << 1) ^ (v >> 63)) as u64);
    }

    fn f64(&mut self, v: f64) {
        self.buf.extend_from_slice(&v.to_bits().to_le_bytes());
    }

    fn bool(&mut self, v: bool) {
        self.u8(u8::from(v));
    }

    fn str(&mut self, s: &str) -> io::Result<()> {
        self.uv(s.len() as u64);
        self.buf.extend_from_slice(s.as_bytes());
        self.spill()
    }

    fn sym(&mut self, s: Sym) {
        self.uv(s.index() as u64);
    }

    fn opt_uv(&mut self, v: Option<u64>) {
        match v {
            None => self.u8(0),
            Some(v) => {
                self.u8(1);
                self.uv(v);
            }
        }
    }

    fn opt_iv(&mut self, v: Option<i64>) {
        match v {
            None => self.u8(0),
            Some(v) => {
                self.u8(1);
                self.iv(v);
            }
        }
    }

    fn opt_sym(&mut self, v: Option<Sym>) {
        self.opt_uv(v.map(|s| s.index() as u64));
    }

    fn opt_str(&mut self, v: Option<&str>) -> io::Result<()> {
        match v {
            None => {
                self.u8(0);
                Ok(())
            }
            Some(s) => {
                self.u8(1);
                self.str(s)
            }
        }
    }
}

const F_QUEUED: u64 = 1;
const F_BYTES: u64 = 1 << 1;
/// Decodes a cache payload held in memory (the bytes after the header) as
/// written for the trace file `path` named `name`; the checksum is not
/// checked, so every byte reaches the decoder. For the fuzz targets and
/// tests.
pub(crate) fn decode_payload(payload: &[u8], name: &str, path: &Path) -> Result<Part, Bad> {
    let mut d = Dec {
        input: payload,
        buf: Vec::new(),
        pos: 0,
        end: 0,
        left: payload.len() as u64,
        hash: 0,
    };
    let part = decode(&mut d, name, path)?;
    if d.remaining() != 0 {
        return Err(bad("bytes after the end"));
    }
    Ok(part)
}

/// The cache payload (without the header) of a parsed trace file `name`.
pub(crate) fn encode_payload(
    name: &str,
    rank: &RankTrace,
    strings: &Strings,
    warnings: &[Warning],
) -> io::Result<Vec<u8>> {
    let mut e = Enc::new(Vec::new());
    encode(&mut e, name, rank, strings, warnings)?;
    Ok(e.finish()?.0)
}

const F_SEQ: u64 = 1 << 2;
const F_STEP: u64 = 1 << 3;
const F_BUCKET: u64 = 1 << 4;
const F_NAME: u64 = 1 << 5;
const F_OP: u64 = 1 << 6;
const F_EXTRA: u64 = 1 << 7;
const F_CATEGORY: u64 = 1 << 8;
const KIND_SHIFT: u32 = 9;

fn write_cache(
    tmp: &Path,
    source: &Source,
    name: &str,
    rank: &RankTrace,
    strings: &Strings,
    warnings: &[Warning],
) -> Result<(), String> {
    let file = File::create(tmp).map_err(|e| format!("cannot create {}: {e}", tmp.display()))?;
    let mut file = write_file(file, source, name, rank, strings, warnings)
        .map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    file.flush().map_err(|e| e.to_string())
}

fn write_file(
    mut file: File,
    source: &Source,
    name: &str,
    rank: &RankTrace,
    strings: &Strings,
    warnings: &[Warning],
) -> io::Result<File> {
    file.write_all(&[0u8; HEADER_BYTES])?;
    let mut e = Enc::new(file);
    encode(&mut e, name, rank, strings, warnings)?;
    let (mut file, len, hash) = e.finish()?;
    let mut h = Vec::with_capacity(HEADER_BYTES);
    h.extend_from_slice(&MAGIC);
    h.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    h.extend_from_slice(&0u32.to_le_bytes());
    h.extend_from_slice(&source.len.to_le_bytes());
    h.extend_from_slice(&source.mtime_s.to_le_bytes());
    h.extend_from_slice(&source.mtime_ns.to_le_bytes());
    h.extend_from_slice(&0u32.to_le_bytes());
    h.extend_from_slice(&source.head.to_le_bytes());
    h.extend_from_slice(&source.tail.to_le_bytes());
    h.extend_from_slice(&len.to_le_bytes());
    h.extend_from_slice(&hash.to_le_bytes());
    file.seek(SeekFrom::Start(0))?;
    file.write_all(&h)?;
    Ok(file)
}

fn unsupported(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, what.to_owned())
}

fn encode<W: Write>(
    e: &mut Enc<W>,
    name: &str,
    rank: &RankTrace,
    strings: &Strings,
    warnings: &[Warning],
) -> io::Result<()> {
    e.str(env!("CARGO_PKG_VERSION"))?;
    e.str(name)?;
    encode_header(e, &rank.header)?;
    e.uv(u64::from(rank.version.major));
    e.uv(u64::from(rank.version.minor));
    e.bool(rank.truncated);

    e.uv(strings.len() as u64);
    for (_, s) in strings.iter() {
        e.str(s)?;
    }

    e.uv(rank.extras.len() as u64);
    for x in &rank.extras {
        let flags = u64::from(x.kind_name.is_some())
            | u64::from(x.params.is_some()) << 1
            | u64::from(x.transport.is_some()) << 2
            | u64::from(x.algo.is_some()) << 3
            | u64::from(x.dtype.is_some()) << 4
            | u64::from(x.peer.is_some()) << 5
            | u64::from(x.device.is_some()) << 6
            | u64::from(x.stream.is_some()) << 7
            | u64::from(x.correlation.is_some()) << 8
            | u64::from(x.args.is_some()) << 9;
        e.uv(flags);
        for s in [x.kind_name, x.transport, x.algo, x.dtype, x.args]
            .into_iter()
            .flatten()
        {
            e.sym(s);
        }
        for v in [x.params, x.peer, x.device].into_iter().flatten() {
            e.uv(u64::from(v));
        }
        for v in [x.stream, x.correlation].into_iter().flatten() {
            e.uv(v);
        }
        e.spill()?;
    }

    e.uv(rank.lanes.len() as u64);
    for lane in &rank.lanes {
        match lane.kind {
            LaneKind::Compute => e.u8(0),
            LaneKind::Buckets => e.u8(1),
            LaneKind::Comm => e.u8(2),
            LaneKind::Data => e.u8(3),
            LaneKind::Custom => e.u8(4),
            LaneKind::Gpu { device, stream } => {
                e.u8(5);
                e.uv(u64::from(device));
                e.uv(stream);
            }
        }
        e.str(&lane.name)?;
        e.uv(lane.spans().len() as u64);
        let mut prev = 0i64;
        for s in lane.spans() {
            encode_span(e, s, prev);
            prev = s.start();
            if e.buf.len() >= BLOCK {
                e.spill()?;
            }
        }
    }

    e.uv(rank.layouts.len() as u64);
    for l in &rank.layouts {
        e.uv(l.from_step);
        e.opt_iv(l.t);
        e.str(&l.reason)?;
        e.bool(l.from_header);
        encode_buckets(e, &l.buckets)?;
    }

    e.uv(rank.grad_ready.len() as u64);
    for g in &rank.grad_ready {
        e.uv(g.step);
        e.iv(g.t0);
        e.uv(g.offsets_ns.len() as u64);
        for &o in g.offsets_ns.iter() {
            e.iv(o);
        }
        e.spill()?;
    }

    e.uv(rank.instants.len() as u64);
    for i in &rank.instants {
        e.iv(i.t);
        e.opt_uv(i.step);
        e.sym(i.name);
        e.opt_sym(i.args);
        e.spill()?;
    }

    e.uv(rank.counters.len() as u64);
    for c in &rank.counters {
        e.iv(c.t);
        e.sym(c.name);
        e.f64(c.value);
        e.spill()?;
    }

    e.uv(rank.logs.len() as u64);
    for l in &rank.logs {
        e.iv(l.t);
        e.u8(l.level as u8);
        e.str(&l.message)?;
    }

    match &rank.end {
        None => e.u8(0),
        Some(end) => {
            e.u8(1);
            e.iv(end.t);
            e.str(&end.status)?;
            e.opt_str(end.message.as_deref())?;
        }
    }

    e.uv(warnings.len() as u64);
    for w in warnings {
        match w {
            Warning::Truncated { line, records, .. } => {
                e.u8(1);
                e.uv(*line);
                e.uv(*records);
            }
            Warning::NewerMinorVersion {
                found, supported, ..
            } => {
                e.u8(2);
                e.str(found)?;
                e.str(supported)?;
            }
            Warning::UnknownRecordType {
                record,
                count,
                first_line,
                ..
            } => {
                e.u8(3);
                e.str(record)?;
                e.uv(*count);
                e.uv(*first_line);
            }
            Warning::UnknownSpanKind {
                kind,
                count,
                first_line,
                ..
            } => {
                e.u8(4);
                e.str(kind)?;
                e.uv(*count);
                e.uv(*first_line);
            }
            _ => return Err(unsupported("a warning the cache does not store")),
        }
    }
    Ok(())
}

/// A varint (as [`Enc::uv`] writes it) into `out` at `*n`.
#[inline(always)]
fn put_uv(out: &mut [u8; MAX_SPAN_BYTES], n: &mut usize, mut v: u64) {
    while v >= 0x80 {
        out[*n] = v as u8 | 0x80;
        v >>= 7;
        *n += 1;
    }
    out[*n] = v as u8;
    *n += 1;
}

/// A zigzag varint (as [`Enc::iv`] writes it) into `out` at `*n`.
#[inline(always)]
fn put_iv(out: &mut [u8; MAX_SPAN_BYTES], n: &mut usize, v: i64) {
    put_uv(out, n, ((v << 1) ^ (v >> 63)) as u64);
}

/// One span, encoded on the stack and appended in one go.
#[inline]
fn encode_span<W: Write>(e: &mut Enc<W>, s: &Span, prev_start: i64) {
    let mut flags = (s.kind() as u64) << KIND_SHIFT;
    let set = |f: &mut u64, bit: u64, on: bool| {
        if on {
            *f |= bit;
        }
    };
    set(&mut flags, F_QUEUED, s.queued().is_some());
    set(&mut flags, F_BYTES, s.bytes().is_some());
    set(&mut flags, F_SEQ, s.seq().is_some());
    set(&mut flags, F_STEP, s.step().is_some());
    set(&mut flags, F_BUCKET, s.bucket().is_some());
    set(&mut flags, F_NAME, s.name().is_some());
    set(&mut flags, F_OP, s.op().is_some());
    set(&mut flags, F_EXTRA, s.extra_index().is_some());
    set(&mut flags, F_CATEGORY, s.category().is_some());
    let mut out = [0u8; MAX_SPAN_BYTES];
    let mut n = 0;
    put_uv(&mut out, &mut n, flags);
    put_iv(&mut out, &mut n, s.start().wrapping_sub(prev_start));
    put_iv(&mut out, &mut n, s.end().wrapping_sub(s.start()));
    if let Some(q) = s.queued() {
        put_iv(&mut out, &mut n, s.start().wrapping_sub(q));
    }
    if let Some(v) = s.bytes() {
        put_uv(&mut out, &mut n, v);
    }
    if let Some(v) = s.seq() {
        put_uv(&mut out, &mut n, v);
    }
    if let Some(v) = s.step() {
        put_uv(&mut out, &mut n, v);
    }
    if let Some(v) = s.bucket() {
        put_uv(&mut out, &mut n, u64::from(v));
    }
    if let Some(v) = s.name() {
        put_uv(&mut out, &mut n, v.index() as u64);
    }
    if let Some(v) = s.op() {
        put_uv(&mut out, &mut n, v.index() as u64);
    }
    if let Some(v) = s.extra_index() {
        put_uv(&mut out, &mut n, v as u64);
    }
    if let Some(c) = s.category() {
        out[n] = c as u8;
        n += 1;
    }
    e.buf.extend_from_slice(&out[..n]);
}

fn encode_buckets<W: Write>(e: &mut Enc<W>, buckets: &[BucketInfo]) -> io::Result<()> {
    e.uv(buckets.len() as u64);
    for b in buckets {
        e.uv(u64::from(b.id));
        e.uv(b.params.len() as u64);
        for &p in &b.params {
            e.uv(u64::from(p));
        }
        e.uv(b.bytes);
        e.spill()?;
    }
    Ok(())
}

fn encode_header<W: Write>(e: &mut Enc<W>, h: &Header) -> io::Result<()> {
    let Header {
        format,
        version,
        run_id,
        rank,
        local_rank,
        world_size,
        local_world_size,
        node_rank,
        hostname,
        pid,
        start_ns,
        clock,
        offset_to_rank0_ns,
        offset_uncertainty_ns,
        program,
        argv,
        ddp,
    } = h;
    e.str(format)?;
    e.str(version)?;
    e.str(run_id)?;
    for v in [rank, local_rank, world_size, local_world_size, node_rank] {
        e.uv(u64::from(*v));
    }
    e.str(hostname)?;
    e.uv(u64::from(*pid));
    e.uv(*start_ns);
    e.str(clock)?;
    e.iv(*offset_to_rank0_ns);
    e.uv(*offset_uncertainty_ns);
    e.opt_str(program.as_deref())?;
    match argv {
        None => e.u8(0),
        Some(a) => {
            e.u8(1);
            e.uv(a.len() as u64);
            for s in a {
                e.str(s)?;
            }
        }
    }
    let Some(d) = ddp else {
        e.u8(0);
        return Ok(());
    };
    e.u8(1);
    let DdpConfig {
        backend,
        bucket_cap_mb,
        first_bucket_bytes,
        find_unused_parameters,
        gradient_as_bucket_view,
        params,
        buckets,
    } = d;
    e.str(backend)?;
    match bucket_cap_mb {
        None => e.u8(0),
        Some(v) => {
            e.u8(1);
            e.f64(*v);
        }
    }
    e.opt_uv(*first_bucket_bytes);
    e.bool(*find_unused_parameters);
    e.bool(*gradient_as_bucket_view);
    e.uv(params.len() as u64);
    for p in params {
        let ParamInfo {
            index,
            name,
            shape,
            dtype,
            numel,
            bytes,
        } = p;
        e.uv(u64::from(*index));
        e.str(name)?;
        e.uv(shape.len() as u64);
        for &d in shape {
            e.uv(d);
        }
        e.str(dtype)?;
        e.uv(*numel);
        e.uv(*bytes);
        e.spill()?;
    }
    encode_buckets(e, buckets)
}

// ---------------------------------------------------------------------------
// Reading

/// Why a cache was not used.
type Bad = String;

fn bad(what: &str) -> Bad {
    format!("corrupt: {what}")
}

/// Payload decoder: reads whole blocks, checks the checksum at the end and
/// every bound on the way.
struct Dec<R: Read> {
    input: R,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    /// Payload bytes not read from `input` yet.
    left: u64,
    hash: u64,
}

/// The most bytes one span takes.
const MAX_SPAN_BYTES: usize = 3 + 3 * 10 + 10 + 10 + 5 * 5 + 1;

/// A LEB128 varint of at most ten bytes (the tenth holding one bit) at
/// `b[*i..]`; advances `*i` past it.
#[inline(always)]
fn uv_at(b: &[u8], i: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    let mut shift = 0u32;
    let mut j = *i;
    loop {
        let c = *b.get(j)?;
        j += 1;
        v |= u64::from(c & 0x7f) << shift;
        if c < 0x80 {
            if shift == 63 && c > 1 {
                return None;
            }
            *i = j;
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

#[inline]
fn unzig(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

impl<R: Read> Dec<R> {
    /// Bytes of payload not consumed yet.
    fn remaining(&self) -> u64 {
        self.left + (self.end - self.pos) as u64
    }

    /// Makes at least `n` bytes available, or all that remain.
    #[inline]
    fn ensure(&mut self, n: usize) -> Result<(), Bad> {
        if self.end - self.pos >= n {
            return Ok(());
        }
        self.refill(n)
    }

    fn refill(&mut self, n: usize) -> Result<(), Bad> {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
        }
        while self.end < n && self.left > 0 {
            let k = BLOCK.min(usize::try_from(self.left).unwrap_or(BLOCK));
            if self.buf.len() < self.end + k {
                self.buf.resize(self.end + k, 0);
            }
            let got = read_full(&mut self.input, &mut self.buf[self.end..self.end + k])
                .map_err(|e| e.to_string())?;
            if got != k {
                return Err(bad("the file is shorter than its header says"));
            }
            self.hash = chain(self.hash, block_hash(&self.buf[self.end..self.end + k]));
            self.end += k;
            self.left -= k as u64;
        }
        Ok(())
    }

    fn u8(&mut self) -> Result<u8, Bad> {
        self.ensure(1)?;
        let v = *self.buf[..self.end]
            .get(self.pos)
            .ok_or_else(|| bad("cut short"))?;
        self.pos += 1;
        Ok(v)
    }

    #[inline]
    fn uv(&mut self) -> Result<u64, Bad> {
        self.ensure(10)?;
        let mut i = self.pos;
        let v = uv_at(&self.buf[..self.end], &mut i).ok_or_else(|| bad("bad integer"))?;
        self.pos = i;
        Ok(v)
    }

    fn iv(&mut self) -> Result<i64, Bad> {
        self.uv().map(unzig)
    }

    fn u32(&mut self) -> Result<u32, Bad> {
        u32::try_from(self.uv()?).map_err(|_| bad("integer out of range"))
    }

    fn bool(&mut self) -> Result<bool, Bad> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(bad("bad flag")),
        }
    }

    fn f64(&mut self) -> Result<f64, Bad> {
        self.ensure(8)?;
        let b = self.buf[..self.end]
            .get(self.pos..self.pos + 8)
            .ok_or_else(|| bad("cut short"))?;
        self.pos += 8;
        Ok(f64::from_bits(le_u64(b)))
    }

    /// A count of items that take at least one byte each.
    fn count(&mut self) -> Result<usize, Bad> {
        let n = self.uv()?;
        if n > self.remaining() {
            return Err(bad("a count larger than the file"));
        }
        usize::try_from(n).map_err(|_| bad("a count larger than memory"))
    }

    fn vec<T>(&mut self) -> Result<(usize, Vec<T>), Bad> {
        let n = self.count()?;
        let mut v = Vec::new();
        v.try_reserve_exact(n).map_err(|e| e.to_string())?;
        Ok((n, v))
    }

    fn string(&mut self) -> Result<String, Bad> {
        let n = self.count()?;
        self.ensure(n)?;
        let b = self.buf[..self.end]
            .get(self.pos..self.pos + n)
            .ok_or_else(|| bad("cut short"))?;
        let s = std::str::from_utf8(b)
            .map_err(|_| bad("a string is not UTF-8"))?
            .to_owned();
        self.pos += n;
        Ok(s)
    }

    fn opt<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T, Bad>) -> Result<Option<T>, Bad> {
        if self.bool()? {
            f(self).map(Some)
        } else {
            Ok(None)
        }
    }
}

/// Symbols of a rank's string table, by index.
struct Syms(Vec<Sym>);

impl Syms {
    fn get(&self, i: u64) -> Result<Sym, Bad> {
        usize::try_from(i)
            .ok()
            .and_then(|i| self.0.get(i).copied())
            .ok_or_else(|| bad("a string index out of range"))
    }

    fn read<R: Read>(&self, d: &mut Dec<R>) -> Result<Sym, Bad> {
        let i = d.uv()?;
        self.get(i)
    }
}

fn read_cache(mut file: File, source: &Source, name: &str, path: &Path) -> Result<Part, Bad> {
    let mut h = [0u8; HEADER_BYTES];
    if read_full(&mut file, &mut h).map_err(|e| e.to_string())? != HEADER_BYTES {
        return Err(bad("shorter than its header"));
    }
    let u32_at = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
    let u64_at = |i: usize| le_u64(&h[i..]);
    if h[..8] != MAGIC {
        return Err("not a trace cache".to_owned());
    }
    let version = u32_at(8);
    if version != FORMAT_VERSION {
        return Err(format!(
            "cache format {version}, this build reads {FORMAT_VERSION}"
        ));
    }
    if u32_at(12) != 0 || u32_at(36) != 0 {
        return Err(bad("reserved header bytes are not zero"));
    }
    let cached = Source {
        len: u64_at(16),
        mtime_s: u64_at(24) as i64,
        mtime_ns: u32_at(32),
        head: u64_at(40),
        tail: u64_at(48),
    };
    if cached != *source {
        return Err("stale: the trace file changed since it was cached".to_owned());
    }
    let payload = u64_at(56);
    let checksum = u64_at(64);
    let file_len = file.metadata().map_err(|e| e.to_string())?.len();
    if file_len.checked_sub(HEADER_BYTES as u64) != Some(payload) {
        return Err(bad("its length does not match its header"));
    }
    let mut d = Dec {
        input: file,
        buf: Vec::new(),
        pos: 0,
        end: 0,
        left: payload,
        hash: 0,
    };
    let part = decode(&mut d, name, path)?;
    if d.remaining() != 0 {
        return Err(bad("bytes after the end"));
    }
    if d.hash != checksum {
        return Err(bad("checksum mismatch"));
    }
    Ok(part)
}

fn decode<R: Read>(d: &mut Dec<R>, name: &str, path: &Path) -> Result<Part, Bad> {
    let build = d.string()?;
    if build != env!("CARGO_PKG_VERSION") {
        return Err(format!(
            "written by version {build}, this is {}",
            env!("CARGO_PKG_VERSION")
        ));
    }
    if d.string()? != name {
        return Err("written for another file".to_owned());
    }
    let header = decode_header(d)?;
    let version = Version {
        major: d.u32()?,
        minor: d.u32()?,
    };
    let truncated = d.bool()?;
    // What the reader checks of every header holds for a cached one too.
    if header.world_size == 0 || header.rank >= header.world_size || !version.is_supported() {
        return Err(bad("a header the reader would refuse"));
    }

    let (n, mut list) = d.vec::<Sym>()?;
    let mut strings = Strings::new();
    for _ in 0..n {
        let s = d.string()?;
        let sym = strings.intern(&s).ok_or_else(|| bad("too many strings"))?;
        list.push(sym);
    }
    if strings.len() != n {
        return Err(bad("a string is listed twice"));
    }
    let syms = Syms(list);

    let (n, mut extras) = d.vec::<SpanExtra>()?;
    for _ in 0..n {
        let flags = d.uv()?;
        if flags >> 10 != 0 {
            return Err(bad("unknown extra fields"));
        }
        let has = |bit: u32| flags & (1 << bit) != 0;
        let sym = |d: &mut Dec<R>, bit| -> Result<Option<Sym>, Bad> {
            if has(bit) {
                syms.read(d).map(Some)
            } else {
                Ok(None)
            }
        };
        let kind_name = sym(d, 0)?;
        let transport = sym(d, 2)?;
        let algo = sym(d, 3)?;
        let dtype = sym(d, 4)?;
        let args = sym(d, 9)?;
        let small = |d: &mut Dec<R>, bit| -> Result<Option<u32>, Bad> {
            if has(bit) {
                d.u32().map(Some)
            } else {
                Ok(None)
            }
        };
        let params = small(d, 1)?;
        let peer = small(d, 5)?;
        let device = small(d, 6)?;
        let stream = if has(7) { Some(d.uv()?) } else { None };
        let correlation = if has(8) { Some(d.uv()?) } else { None };
        extras.push(SpanExtra {
            kind_name,
            params,
            transport,
            algo,
            dtype,
            peer,
            device,
            stream,
            correlation,
            args,
        });
    }

    let (n, mut lanes) = d.vec::<Lane>()?;
    for id in 0..n {
        let kind = match d.u8()? {
            0 => LaneKind::Compute,
            1 => LaneKind::Buckets,
            2 => LaneKind::Comm,
            3 => LaneKind::Data,
            4 => LaneKind::Custom,
            5 => LaneKind::Gpu {
                device: d.u32()?,
                stream: d.uv()?,
            },
            _ => return Err(bad("unknown lane kind")),
        };
        let lane_name = d.string()?;
        let lane = u16::try_from(id).map_err(|_| bad("too many lanes"))?;
        let (spans, stats) = decode_spans(d, &syms, extras.len(), lane)?;
        lanes.push(Lane::with_stats(kind, lane_name, spans, stats, None));
    }

    let (n, mut layouts) = d.vec::<BucketLayout>()?;
    for _ in 0..n {
        layouts.push(BucketLayout {
            from_step: d.uv()?,
            t: d.opt(Dec::iv)?,
            reason: d.string()?,
            from_header: d.bool()?,
            buckets: decode_buckets(d)?,
        });
    }

    let (n, mut grad_ready) = d.vec::<GradReady>()?;
    for _ in 0..n {
        let step = d.uv()?;
        let t0 = d.iv()?;
        let (k, mut offsets) = d.vec::<i64>()?;
        while offsets.len() < k {
            // Whole windows of varints, then the bounds-checked path.
            d.ensure(BLOCK.min(10 * (k - offsets.len())))?;
            let b = &d.buf[..d.end];
            let mut i = d.pos;
            while offsets.len() < k && b.len() - i >= 10 {
                offsets.push(unzig(uv_at(b, &mut i).ok_or_else(|| bad("bad integer"))?));
            }
            d.pos = i;
            if offsets.len() < k {
                offsets.push(d.iv()?);
            }
        }
        grad_ready.push(GradReady {
            step,
            t0,
            offsets_ns: offsets.into_boxed_slice(),
        });
    }

    let (n, mut instants) = d.vec::<InstantEvent>()?;
    for _ in 0..n {
        let t = d.iv()?;
        let step = d.opt(Dec::uv)?;
        let name = syms.read(d)?;
        let args = match d.opt(Dec::uv)? {
            Some(i) => Some(syms.get(i)?),
            None => None,
        };
        instants.push(InstantEvent {
            t,
            step,
            name,
            args,
        });
    }

    let (n, mut counters) = d.vec::<CounterSample>()?;
    for _ in 0..n {
        counters.push(CounterSample {
            t: d.iv()?,
            name: syms.read(d)?,
            value: d.f64()?,
        });
    }

    let (n, mut logs) = d.vec::<LogEntry>()?;
    for _ in 0..n {
        let t = d.iv()?;
        let level = *LogLevel::ALL
            .get(usize::from(d.u8()?))
            .ok_or_else(|| bad("unknown log level"))?;
        logs.push(LogEntry {
            t,
            level,
            message: d.string()?.into_boxed_str(),
        });
    }

    let end = match d.bool()? {
        false => None,
        true => Some(EndInfo {
            t: d.iv()?,
            status: d.string()?,
            message: d.opt(Dec::string)?,
        }),
    };

    let (n, mut warnings) = d.vec::<Warning>()?;
    let path_buf = path.to_path_buf();
    for _ in 0..n {
        let path = path_buf.clone();
        warnings.push(match d.u8()? {
            1 => Warning::Truncated {
                path,
                line: d.uv()?,
                records: d.uv()?,
            },
            2 => Warning::NewerMinorVersion {
                path,
                found: d.string()?,
                supported: d.string()?,
            },
            3 => Warning::UnknownRecordType {
                path,
                record: d.string()?,
                count: d.uv()?,
                first_line: d.uv()?,
            },
            4 => Warning::UnknownSpanKind {
                path,
                kind: d.string()?,
                count: d.uv()?,
                first_line: d.uv()?,
            },
            _ => return Err(bad("unknown warning")),
        });
    }

    let rank = RankTrace {
        header,
        path: path_buf,
        version,
        layouts,
        lanes,
        extras,
        grad_ready,
        instants,
        counters,
        logs,
        end,
        truncated,
    };
    Ok(Part {
        rank,
        strings,
        warnings,
    })
}

fn decode_spans<R: Read>(
    d: &mut Dec<R>,
    syms: &Syms,
    extras: usize,
    lane: u16,
) -> Result<(Vec<Span>, LaneStats), Bad> {
    let (n, mut spans) = d.vec::<Span>()?;
    let mut stats = LaneStats::default();
    let mut prev = 0i64;
    for _ in 0..n {
        d.ensure(MAX_SPAN_BYTES)?;
        let b = &d.buf[..d.end];
        let mut i = d.pos;
        let mut next = || uv_at(b, &mut i).ok_or_else(|| bad("bad span"));
        let flags = next()?;
        let kind = *SpanKind::ALL
            .get(usize::try_from(flags >> KIND_SHIFT).unwrap_or(usize::MAX))
            .ok_or_else(|| bad("unknown span kind"))?;
        let start = prev.wrapping_add(unzig(next()?));
        let end = start.wrapping_add(unzig(next()?));
        let queued = if flags & F_QUEUED != 0 {
            Some(start.wrapping_sub(unzig(next()?)))
        } else {
            None
        };
        let bytes = if flags & F_BYTES != 0 {
            Some(next()?)
        } else {
            None
        };
        let seq = if flags & F_SEQ != 0 {
            Some(next()?)
        } else {
            None
        };
        let small = |v: u64| u32::try_from(v).map_err(|_| bad("span field out of range"));
        let step = if flags & F_STEP != 0 {
            Some(small(next()?)?)
        } else {
            None
        };
        let bucket = if flags & F_BUCKET != 0 {
            Some(small(next()?)?)
        } else {
            None
        };
        let name = if flags & F_NAME != 0 {
            Some(syms.get(next()?)?)
        } else {
            None
        };
        let op = if flags & F_OP != 0 {
            Some(syms.get(next()?)?)
        } else {
            None
        };
        let extra = if flags & F_EXTRA != 0 {
            let x = small(next()?)?;
            if x as usize >= extras {
                return Err(bad("an extra index out of range"));
            }
            Some(x)
        } else {
            None
        };
        let category = if flags & F_CATEGORY != 0 {
            let c = *b.get(i).ok_or_else(|| bad("cut short"))?;
            i += 1;
            Some(
                *KernelCategory::ALL
                    .get(usize::from(c))
                    .ok_or_else(|| bad("unknown kernel category"))?,
            )
        } else {
            None
        };
        d.pos = i;
        prev = start;
        let span = Span::from_parts(SpanParts {
            start,
            end,
            queued,
            bytes,
            seq,
            step,
            bucket,
            name,
            op,
            extra,
            lane,
            kind,
            category,
        });
        stats.add(&span);
        spans.push(span);
    }
    Ok((spans, stats))
}

fn decode_buckets<R: Read>(d: &mut Dec<R>) -> Result<Vec<BucketInfo>, Bad> {
    let (n, mut buckets) = d.vec::<BucketInfo>()?;
    for _ in 0..n {
        let id = d.u32()?;
        let (k, mut params) = d.vec::<u32>()?;
        for _ in 0..k {
            params.push(d.u32()?);
        }
        buckets.push(BucketInfo {
            id,
            params,
            bytes: d.uv()?,
        });
    }
    Ok(buckets)
}

fn decode_header<R: Read>(d: &mut Dec<R>) -> Result<Header, Bad> {
    let format = d.string()?;
    let version = d.string()?;
    let run_id = d.string()?;
    let rank = d.u32()?;
    let local_rank = d.u32()?;
    let world_size = d.u32()?;
    let local_world_size = d.u32()?;
    let node_rank = d.u32()?;
    let hostname = d.string()?;
    let pid = d.u32()?;
    let start_ns = d.uv()?;
    let clock = d.string()?;
    let offset_to_rank0_ns = d.iv()?;
    let offset_uncertainty_ns = d.uv()?;
    let program = d.opt(Dec::string)?;
    let argv = d.opt(|d| {
        let (n, mut v) = d.vec::<String>()?;
        for _ in 0..n {
            v.push(d.string()?);
        }
        Ok(v)
    })?;
    let ddp = d.opt(|d| {
        let backend = d.string()?;
        let bucket_cap_mb = d.opt(Dec::f64)?;
        let first_bucket_bytes = d.opt(Dec::uv)?;
        let find_unused_parameters = d.bool()?;
        let gradient_as_bucket_view = d.bool()?;
        let (n, mut params) = d.vec::<ParamInfo>()?;
        for _ in 0..n {
            let index = d.u32()?;
            let name = d.string()?;
            let (k, mut shape) = d.vec::<u64>()?;
            for _ in 0..k {
                shape.push(d.uv()?);
            }
            params.push(ParamInfo {
                index,
                name,
                shape,
                dtype: d.string()?,
                numel: d.uv()?,
                bytes: d.uv()?,
            });
        }
        Ok(DdpConfig {
            backend,
            bucket_cap_mb,
            first_bucket_bytes,
            find_unused_parameters,
            gradient_as_bucket_view,
            params,
            buckets: decode_buckets(d)?,
        })
    })?;
    Ok(Header {
        format,
        version,
        run_id,
        rank,
        local_rank,
        world_size,
        local_world_size,
        node_rank,
        hostname,
        pid,
        start_ns,
        clock,
        offset_to_rank0_ns,
        offset_uncertainty_ns,
        program,
        argv,
        ddp,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vocabularies_index_by_discriminant() {
        for (i, k) in SpanKind::ALL.iter().enumerate() {
            assert_eq!(*k as usize, i);
        }
        for (i, k) in KernelCategory::ALL.iter().enumerate() {
            assert_eq!(*k as usize, i);
        }
        for (i, k) in LogLevel::ALL.iter().enumerate() {
            assert_eq!(*k as usize, i);
        }
    }

    #[test]
    fn varints_round_trip_and_reject_overlong() {
        for v in [
            0u64,
            1,
            127,
            128,
            300,
            u64::from(u32::MAX),
            u64::MAX - 1,
            u64::MAX,
        ] {
            let mut e = Enc::new(Vec::new());
            e.uv(v);
            let mut i = 0;
            assert_eq!(uv_at(&e.buf, &mut i), Some(v));
            assert_eq!(i, e.buf.len());
        }
        for v in [0i64, -1, 1, i64::MIN, i64::MAX] {
            let mut e = Enc::new(Vec::new());
            e.iv(v);
            let mut i = 0;
            assert_eq!(uv_at(&e.buf, &mut i).map(unzig), Some(v));
        }
        let mut i = 0;
        assert_eq!(uv_at(&[0xff; 11], &mut i), None);
        let mut i = 0;
        assert_eq!(
            uv_at(
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02],
                &mut i
            ),
            None
        );
        let mut i = 0;
        assert_eq!(uv_at(&[0x80], &mut i), None);
    }

    #[test]
    fn block_hash_sees_every_byte() {
        let base: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
        let h = block_hash(&base);
        for i in [0, 1, 31, 32, 500, 998, 999] {
            let mut b = base.clone();
            b[i] ^= 1;
            assert_ne!(block_hash(&b), h, "byte {i}");
        }
        assert_ne!(block_hash(&base[..999]), h);
    }

    #[test]
    fn cache_paths() {
        assert_eq!(
            cache_path(Path::new("/r/traces/rank-3.jsonl")),
            Some(PathBuf::from("/r/traces/.cache/rank-3.ddpc"))
        );
        assert_eq!(
            cache_path(Path::new("x.log")),
            Some(PathBuf::from(".cache/x.log.ddpc"))
        );
    }
}
