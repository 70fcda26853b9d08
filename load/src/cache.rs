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
//! bytes. Spans, the bulk of it, are stored lane by lane in chunks of 64,
//! column by column: each field (start as a delta to the previous span's,
//! length, queued, bytes...) in the fewest bytes that hold the chunk's values
//! of it, the repetitive ones XOR the chunk's first span's, so a field that
//! does not change within a chunk takes no bytes at all (the table above
//! `CHUNK` has the details). Gradient-ready offsets are stored as
//! differences, all in one width. The checksum covers the payload in 1 MiB
//! blocks; any mismatch, bound violation or trailing byte rejects the whole
//! file.

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
    BucketInfo, BufferInfo, DdpConfig, Header, KernelCategory, LogLevel, ParamInfo, SpanKind,
    Version,
};

/// First bytes of every cache file.
const MAGIC: [u8; 8] = *b"DDPCACHE";
/// Version of the cache layout. Bump it whenever the layout, or the model
/// the reader builds from a trace, changes.
/// 4: names are kept escaped (`Strings::intern`). 6: `DdpConfig::static_graph` and
/// `DdpConfig::buffers`.
const FORMAT_VERSION: u32 = 7;
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

    /// Writes the cache of the file at `path`, parsed from the file this
    /// slot was opened on (`bytes_read` bytes), unless the file changed
    /// since or looks still in progress. Never fails: problems are only
    /// reported by [`debug`].
    pub(crate) fn store(
        &self,
        path: &Path,
        bytes_read: u64,
        rank: &RankTrace,
        strings: &Strings,
        warnings: &[Warning],
    ) {
        if let Err(why) = self.try_store(path, bytes_read, rank, strings, warnings) {
            debug(format_args!("{}: not written: {why}", self.cache.display()));
        }
    }

    fn try_store(
        &self,
        path: &Path,
        bytes_read: u64,
        rank: &RankTrace,
        strings: &Strings,
        warnings: &[Warning],
    ) -> Result<(), String> {
        let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
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

/// The hash of a block (XXH3, 64 bits): it detects damage, it does not
/// resist tampering.
fn block_hash(b: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(b)
}

/// The running hash of the payload after one more block.
fn chain(acc: u64, block: u64) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(&block.to_le_bytes(), acc)
}

// ---------------------------------------------------------------------------
// Writing

/// Bytes of scratch room the encoder's buffer always has past a block.
const ROOM: usize = 4096;

/// Payload encoder: buffers, hashes and writes whole blocks.
///
/// The bytes not written yet are `buf[..pos]`; the buffer is kept longer
/// than that (zeroed once), so that small values are stored with copies of
/// a fixed size and the length of what they took added to `pos`.
struct Enc<W: Write> {
    out: W,
    buf: Vec<u8>,
    pos: usize,
    hash: u64,
    len: u64,
}

impl<W: Write> Enc<W> {
    fn new(out: W) -> Enc<W> {
        Enc {
            out,
            buf: vec![0; BLOCK + ROOM],
            pos: 0,
            hash: 0,
            len: 0,
        }
    }

    fn block(&mut self, n: usize) -> io::Result<()> {
        let b = &self.buf[..n];
        self.hash = chain(self.hash, block_hash(b));
        self.len += n as u64;
        self.out.write_all(b)?;
        self.buf.copy_within(n..self.pos, 0);
        self.pos -= n;
        Ok(())
    }

    /// Writes the full blocks buffered so far.
    fn spill(&mut self) -> io::Result<()> {
        while self.pos >= BLOCK {
            self.block(BLOCK)?;
        }
        Ok(())
    }

    fn finish(mut self) -> io::Result<(W, u64, u64)> {
        self.spill()?;
        if self.pos > 0 {
            self.block(self.pos)?;
        }
        Ok((self.out, self.len, self.hash))
    }

    /// The `N` bytes of the buffer at `pos`, to be filled and then counted
    /// into `pos`.
    #[inline(always)]
    fn window<const N: usize>(&mut self) -> &mut [u8; N] {
        if self.buf.len() - self.pos < N {
            self.grow(N);
        }
        match self.buf[self.pos..].first_chunk_mut::<N>() {
            Some(w) => w,
            None => unreachable!("the buffer was just grown"),
        }
    }

    #[cold]
    fn grow(&mut self, n: usize) {
        self.buf.resize(self.pos + n, 0);
    }

    #[inline]
    fn u8(&mut self, v: u8) {
        self.window::<1>()[0] = v;
        self.pos += 1;
    }

    #[inline]
    fn uv(&mut self, v: u64) {
        let w = self.window::<10>();
        let mut n = 0;
        put_uv(w, &mut n, v);
        self.pos += n;
    }

    #[inline]
    fn iv(&mut self, v: i64) {
        self.uv(zig(v));
    }

    fn f64(&mut self, v: f64) {
        *self.window::<8>() = v.to_bits().to_le_bytes();
        self.pos += 8;
    }

    /// `b` as it is (any length).
    fn bytes(&mut self, b: &[u8]) -> io::Result<()> {
        if self.buf.len() - self.pos < b.len() {
            self.grow(b.len());
        }
        self.buf[self.pos..self.pos + b.len()].copy_from_slice(b);
        self.pos += b.len();
        self.spill()
    }

    fn bool(&mut self, v: bool) {
        self.u8(u8::from(v));
    }

    fn str(&mut self, s: &str) -> io::Result<()> {
        self.uv(s.len() as u64);
        self.bytes(s.as_bytes())
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
        encode_spans(e, lane.spans())?;
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
        encode_offsets(e, &g.offsets_ns)?;
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
fn put_uv(out: &mut [u8; 10], n: &mut usize, mut v: u64) {
    while v >= 0x80 {
        out[*n] = v as u8 | 0x80;
        v >>= 7;
        *n += 1;
    }
    out[*n] = v as u8;
    *n += 1;
}

/// Zigzag: small negative and positive values to small unsigned ones.
#[inline(always)]
fn zig(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

// Spans: a lane's count, then (when not empty) its first span's start as a
// zigzag varint, then the spans in chunks of `CHUNK` (the last one shorter).
//
// A span is a kind byte (index in `SpanKind::ALL` in the low four bits,
// index in `KernelCategory::ALL` in the high four, `ALL.len()` for none)
// and ten field values:
//
// |   | field  | value                                        | bytes |
// |---|--------|----------------------------------------------|-------|
// | 0 | start  | start − the previous span's start (first: 0) | 0-8   |
// | 1 | length | end − start                                  | 0-8   |
// | 2 | queued | 0 none, else zigzag(start − queued) + 1      | 0-8   |
// | 3 | bytes  | 0 none, else bytes + 1                       | 0-8   |
// | 4 | seq    | 0 none, else seq + 1                         | 0-8   |
// | 5 | step   | 0 none, else step + 1                        | 0-4   |
// | 6 | bucket | 0 none, else bucket + 1                      | 0-4   |
// | 7 | name   | 0 none, else string index + 1                | 0-4   |
// | 8 | op     | 0 none, else string index + 1                | 0-4   |
// | 9 | extra  | 0 none, else extra index + 1                 | 0-4   |
//
// (differences wrap around as u64). A chunk starts with its widths: the
// kind's (0 or 1) and each field's, in bytes, four bits each, the kind's
// first, low bits first, in six bytes (the last four bits 0); then its
// bases: its first span's kind byte and values of fields 3 to 9 (varints).
// Then come its columns: every span's kind byte XOR the base kind, then
// every span's field 0, and so on to field 9; each value in its column's
// width, little-endian (width 0: the value is 0), fields 3 to 9 XOR their
// bases. Widths are the fewest bytes that hold every value of the column.

/// Spans per chunk.
const CHUNK: usize = 64;
/// Fields of a span after its kind byte.
const FIELDS: usize = 10;
/// Fields `..WIDE` take up to 8 bytes, the others up to 4.
const WIDE: usize = 5;
/// Fields `BASED..` are stored XOR their chunk's base.
const BASED: usize = 3;
/// Columns of a chunk: the kind's, then the fields'.
const COLUMNS: usize = FIELDS + 1;
/// Bytes of a chunk's widths.
const WIDTHS_BYTES: usize = COLUMNS.div_ceil(2);
/// The most bytes of a chunk's bases: a kind byte and varints.
const MAX_BASES: usize = 1 + (WIDE - BASED) * 10 + (FIELDS - WIDE) * 5;
/// The most bytes of a chunk's columns.
const MAX_COLUMNS: usize = CHUNK * (1 + WIDE * 8 + (FIELDS - WIDE) * 4);
/// Room the encoder reserves for one chunk.
const CHUNK_ROOM: usize = WIDTHS_BYTES + MAX_BASES + MAX_COLUMNS;

const _: () = assert!(SpanKind::ALL.len() <= 16, "a span kind takes 4 bits");
const _: () = assert!(KernelCategory::ALL.len() < 16, "a category takes 4 bits");
const _: () = assert!(CHUNK_ROOM <= ROOM, "a chunk fits in the encoder's room");

/// The fewest bytes that hold `v`.
#[inline(always)]
fn width(v: u64) -> u8 {
    ((71 - v.leading_zeros()) / 8) as u8
}

/// A chunk's values, column by column (the kind's last), as they are
/// stored: XOR the bases where they are.
type Columns = [[u64; CHUNK]; COLUMNS];

/// Index of the kind's column in [`Columns`].
const KIND: usize = FIELDS;

/// A span's field values and kind byte (see the layout above), given the
/// previous span's start, and whether the span cannot be stored (a queued
/// time 2⁶³ ns from its start, whose value would wrap to 0).
#[inline(always)]
fn span_values(s: &Span, prev_start: i64) -> ([u64; COLUMNS], bool) {
    let start = s.start();
    let category = s
        .category()
        .map_or(KernelCategory::ALL.len() as u8, |c| c as u8);
    let kind = s.kind() as u8 | category << 4;
    let (queued, odd) = match s.queued() {
        Some(q) => {
            let z = zig(start.wrapping_sub(q)).wrapping_add(1);
            (z, z == 0)
        }
        None => (0, false),
    };
    // `Span` keeps an absent bytes or seq as u64::MAX, an absent step,
    // bucket or extra index as u32::MAX: adding one (wrapping) makes it 0
    // and is all the compiler has to do. A string index + 1 is what `Sym`
    // holds, 0 for none.
    let plus = |v: Option<u64>| v.unwrap_or(u64::MAX).wrapping_add(1);
    let plus32 = |v: Option<u64>| u64::from((v.unwrap_or(u64::MAX) as u32).wrapping_add(1));
    let sym = |v: Option<Sym>| v.map_or(0, |s| s.index() as u64 + 1);
    let values = [
        start.wrapping_sub(prev_start) as u64,
        s.end().wrapping_sub(start) as u64,
        queued,
        plus(s.bytes()),
        plus(s.seq()),
        plus32(s.step()),
        plus32(s.bucket().map(u64::from)),
        sym(s.name()),
        sym(s.op()),
        plus32(s.extra_index().map(|x| x as u64)),
        u64::from(kind),
    ];
    (values, odd)
}

/// A varint into `out` at `*n`.
fn put_uv_at(out: &mut [u8], n: &mut usize, v: u64) {
    let mut b = [0u8; 10];
    let mut k = 0;
    put_uv(&mut b, &mut k, v);
    out[*n..*n + k].copy_from_slice(&b[..k]);
    *n += k;
}

/// One chunk of spans (1 to `CHUNK` of them) into `out`, which has room
/// for it, through `cols`; `Err` when a span cannot be stored.
#[inline(never)]
fn put_chunk(
    out: &mut [u8],
    cols: &mut Columns,
    spans: &[Span],
    mut prev_start: i64,
) -> Result<usize, ()> {
    // First every value and the widths they need, then the columns.
    let (base, _) = span_values(&spans[0], prev_start);
    let mut all = [0u64; COLUMNS];
    let mut odd = false;
    for (i, s) in spans.iter().enumerate().take(CHUNK) {
        let (values, bad) = span_values(s, prev_start);
        odd |= bad;
        for c in 0..COLUMNS {
            let v = if c < BASED {
                values[c]
            } else {
                values[c] ^ base[c]
            };
            cols[c][i] = v;
            all[c] |= v;
        }
        prev_start = s.start();
    }
    if odd {
        return Err(());
    }
    let widths = all.map(width);
    let mut nibbles = [0u8; 2 * WIDTHS_BYTES];
    nibbles[0] = widths[KIND];
    nibbles[1..=FIELDS].copy_from_slice(&widths[..FIELDS]);
    for (i, b) in out[..WIDTHS_BYTES].iter_mut().enumerate() {
        *b = nibbles[2 * i] | nibbles[2 * i + 1] << 4;
    }
    let mut n = WIDTHS_BYTES;
    out[n] = base[KIND] as u8;
    n += 1;
    for &v in &base[BASED..FIELDS] {
        put_uv_at(out, &mut n, v);
    }
    let count = spans.len().min(CHUNK);
    for c in std::iter::once(KIND).chain(0..FIELDS) {
        let w = usize::from(widths[c]);
        let col = &cols[c][..count];
        put_any_column(&mut out[n..n + w * count], col, w);
        n += w * count;
    }
    Ok(n)
}

/// The low `w` bytes (0 to 8) of each value, little-endian, into `out`
/// (`w` bytes per value).
fn put_any_column(out: &mut [u8], col: &[u64], w: usize) {
    match w {
        0 => {}
        1 => put_column::<1>(out, col),
        2 => put_column::<2>(out, col),
        3 => put_column::<3>(out, col),
        4 => put_column::<4>(out, col),
        5 => put_column::<5>(out, col),
        6 => put_column::<6>(out, col),
        7 => put_column::<7>(out, col),
        _ => put_column::<8>(out, col),
    }
}

/// The low `W` bytes of each value, little-endian.
#[inline(always)]
fn put_column<const W: usize>(out: &mut [u8], col: &[u64]) {
    for (o, v) in out.chunks_exact_mut(W).zip(col) {
        o.copy_from_slice(&v.to_le_bytes()[..W]);
    }
}

/// A lane's spans.
fn encode_spans<W: Write>(e: &mut Enc<W>, spans: &[Span]) -> io::Result<()> {
    e.uv(spans.len() as u64);
    let Some(first) = spans.first() else {
        return Ok(());
    };
    e.iv(first.start());
    let mut prev = first.start();
    let mut cols = Box::new([[0; CHUNK]; COLUMNS]);
    for chunk in spans.chunks(CHUNK) {
        e.window::<CHUNK_ROOM>();
        e.pos += put_chunk(&mut e.buf[e.pos..], &mut cols, chunk, prev)
            .map_err(|()| unsupported("a queued time 2^63 ns from its start"))?;
        prev = chunk[chunk.len() - 1].start();
        e.spill()?;
    }
    Ok(())
}

/// Offsets of a grad_ready record handled at a time.
const OFFSETS_BATCH: usize = 256;

/// A grad_ready record's offsets: their count, then (when not empty) the
/// first one as a zigzag varint, then (when there are more) one byte of
/// width (1 to 8) and each next offset's difference to the one before,
/// zigzagged, in that many bytes little-endian.
fn encode_offsets<W: Write>(e: &mut Enc<W>, offsets: &[i64]) -> io::Result<()> {
    e.uv(offsets.len() as u64);
    let [first, ..] = offsets else {
        return Ok(());
    };
    e.iv(*first);
    if offsets.len() == 1 {
        return Ok(());
    }
    let steps = || offsets.windows(2).map(|p| zig(p[1].wrapping_sub(p[0])));
    let w = width(steps().fold(0, |a, v| a | v)).max(1);
    e.u8(w);
    let w = usize::from(w);
    let mut diffs = [0u64; OFFSETS_BATCH];
    let mut rest = offsets;
    while rest.len() > 1 {
        let k = OFFSETS_BATCH.min(rest.len() - 1);
        for (d, p) in diffs.iter_mut().zip(rest.windows(2)).take(k) {
            *d = zig(p[1].wrapping_sub(p[0]));
        }
        let out = &mut e.window::<{ OFFSETS_BATCH * 8 }>()[..k * w];
        put_any_column(out, &diffs[..k], w);
        e.pos += k * w;
        e.spill()?;
        rest = &rest[k..];
    }
    Ok(())
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
        bucket_cap_mb_list,
        first_bucket_bytes,
        find_unused_parameters,
        static_graph,
        gradient_as_bucket_view,
        params,
        buffers,
        buckets,
        group_ranks,
    } = d;
    e.str(backend)?;
    match bucket_cap_mb {
        None => e.u8(0),
        Some(v) => {
            e.u8(1);
            e.f64(*v);
        }
    }
    match bucket_cap_mb_list {
        None => e.u8(0),
        Some(list) => {
            e.u8(1);
            e.uv(list.len() as u64);
            for v in list {
                e.f64(*v);
            }
        }
    }
    e.opt_uv(*first_bucket_bytes);
    e.bool(*find_unused_parameters);
    e.bool(*static_graph);
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
    e.uv(buffers.len() as u64);
    for b in buffers {
        let BufferInfo { name, dtype, bytes } = b;
        e.str(name)?;
        e.str(dtype)?;
        e.uv(*bytes);
    }
    encode_buckets(e, buckets)?;
    e.uv(group_ranks.len() as u64);
    for r in group_ranks {
        e.uv(u64::from(*r));
    }
    Ok(())
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
        let offsets = decode_offsets(d)?;
        grad_ready.push(GradReady {
            step,
            t0,
            offsets_ns: offsets,
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
        stopped_at: None,
    };
    Ok(Part {
        rank,
        strings,
        warnings,
    })
}

/// A chunk's widths and bases, as [`put_chunk`] writes them.
fn chunk_head<R: Read>(d: &mut Dec<R>) -> Result<([u8; COLUMNS], [u64; COLUMNS]), Bad> {
    let mut nibbles = [0u8; 2 * WIDTHS_BYTES];
    for i in 0..WIDTHS_BYTES {
        let b = d.u8()?;
        nibbles[2 * i] = b & 15;
        nibbles[2 * i + 1] = b >> 4;
    }
    let mut widths = [0u8; COLUMNS];
    widths[KIND] = nibbles[0];
    widths[..FIELDS].copy_from_slice(&nibbles[1..=FIELDS]);
    let fits = widths[KIND] <= 1
        && widths[..WIDE].iter().all(|&w| w <= 8)
        && widths[WIDE..FIELDS].iter().all(|&w| w <= 4)
        && nibbles[COLUMNS..].iter().all(|&b| b == 0);
    if !fits {
        return Err(bad("a field wider than its type"));
    }
    let mut base = [0u64; COLUMNS];
    base[KIND] = u64::from(d.u8()?);
    for (c, b) in base.iter_mut().enumerate().take(FIELDS).skip(BASED) {
        *b = d.uv()?;
        if c >= WIDE && *b > u64::from(u32::MAX) {
            return Err(bad("a base wider than its field"));
        }
    }
    Ok((widths, base))
}

/// A chunk's columns from `b` (exactly their bytes) into `cols`.
#[inline(never)]
fn get_columns(
    b: &[u8],
    cols: &mut Columns,
    count: usize,
    widths: &[u8; COLUMNS],
    base: &[u64; COLUMNS],
) {
    let mut n = 0;
    for c in std::iter::once(KIND).chain(0..FIELDS) {
        let w = usize::from(widths[c]);
        let col = &mut cols[c][..count];
        get_any_column(&b[n..n + w * count], col, base[c], w);
        n += w * count;
    }
}

/// Values of `w` bytes (0 to 8) little-endian from `b` (`w` bytes per
/// value), XOR `base`, into `col`.
fn get_any_column(b: &[u8], col: &mut [u64], base: u64, w: usize) {
    match w {
        0 => col.fill(base),
        1 => get_column::<1>(b, col, base),
        2 => get_column::<2>(b, col, base),
        3 => get_column::<3>(b, col, base),
        4 => get_column::<4>(b, col, base),
        5 => get_column::<5>(b, col, base),
        6 => get_column::<6>(b, col, base),
        7 => get_column::<7>(b, col, base),
        _ => get_column::<8>(b, col, base),
    }
}

/// Values of `W` bytes little-endian, XOR `base`.
#[inline(always)]
fn get_column<const W: usize>(b: &[u8], col: &mut [u64], base: u64) {
    for (v, b) in col.iter_mut().zip(b.chunks_exact(W)) {
        let mut a = [0u8; 8];
        a[..W].copy_from_slice(b);
        *v = u64::from_le_bytes(a) ^ base;
    }
}

fn decode_spans<R: Read>(
    d: &mut Dec<R>,
    syms: &Syms,
    extras: usize,
    lane: u16,
) -> Result<(Vec<Span>, LaneStats), Bad> {
    let (n, mut spans) = d.vec::<Span>()?;
    let mut stats = LaneStats::default();
    if n == 0 {
        return Ok((spans, stats));
    }
    let mut prev = d.iv()?;
    let mut cols = Box::new([[0; CHUNK]; COLUMNS]);
    let mut done = 0;
    while done < n {
        let count = CHUNK.min(n - done);
        let (widths, base) = chunk_head(d)?;
        let len = count * widths.iter().map(|&w| usize::from(w)).sum::<usize>();
        d.ensure(len)?;
        let b = d.buf[d.pos..d.end]
            .get(..len)
            .ok_or_else(|| bad("cut short"))?;
        get_columns(b, &mut cols, count, &widths, &base);
        d.pos += len;
        for i in 0..count {
            let v = |c: usize| cols[c][i];
            let kind_byte = v(KIND) as u8;
            let kind = *SpanKind::ALL
                .get(usize::from(kind_byte & 15))
                .ok_or_else(|| bad("unknown span kind"))?;
            let category = match usize::from(kind_byte >> 4) {
                c if c == KernelCategory::ALL.len() => None,
                c => Some(
                    *KernelCategory::ALL
                        .get(c)
                        .ok_or_else(|| bad("unknown kernel category"))?,
                ),
            };
            let start = prev.wrapping_add(v(0) as i64);
            let end = start.wrapping_add(v(1) as i64);
            let less = |x: u64| x.checked_sub(1);
            // Fields 5 to 9 hold at most 32 bits (widths and bases are
            // checked).
            let small = |x: u64| less(x).map(|x| x as u32);
            let sym = |x: u64| less(x).map(|i| syms.get(i)).transpose();
            let extra = small(v(9));
            if extra.is_some_and(|x| x as usize >= extras) {
                return Err(bad("an extra index out of range"));
            }
            let span = Span::from_parts(SpanParts {
                start,
                end,
                queued: less(v(2)).map(|z| start.wrapping_sub(unzig(z))),
                bytes: less(v(3)),
                seq: less(v(4)),
                step: small(v(5)),
                bucket: small(v(6)),
                name: sym(v(7))?,
                op: sym(v(8))?,
                extra,
                lane,
                kind,
                category,
            });
            prev = start;
            stats.add(&span);
            spans.push(span);
        }
        done += count;
    }
    Ok((spans, stats))
}

/// A grad_ready record's offsets (see [`encode_offsets`]).
fn decode_offsets<R: Read>(d: &mut Dec<R>) -> Result<Box<[i64]>, Bad> {
    let (k, mut offsets) = d.vec::<i64>()?;
    if k == 0 {
        return Ok(offsets.into_boxed_slice());
    }
    let mut prev = d.iv()?;
    offsets.push(prev);
    if k == 1 {
        return Ok(offsets.into_boxed_slice());
    }
    let w = usize::from(d.u8()?);
    if !(1..=8).contains(&w) {
        return Err(bad("an offset width out of range"));
    }
    let mut diffs = [0u64; OFFSETS_BATCH];
    while offsets.len() < k {
        let n = OFFSETS_BATCH.min(k - offsets.len());
        d.ensure(n * w)?;
        let b = d.buf[d.pos..d.end]
            .get(..n * w)
            .ok_or_else(|| bad("cut short"))?;
        get_any_column(b, &mut diffs[..n], 0, w);
        d.pos += n * w;
        for &z in &diffs[..n] {
            prev = prev.wrapping_add(unzig(z));
            offsets.push(prev);
        }
    }
    Ok(offsets.into_boxed_slice())
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
        let bucket_cap_mb_list = d.opt(|d| {
            let (n, mut list) = d.vec::<f64>()?;
            for _ in 0..n {
                list.push(d.f64()?);
            }
            Ok(list)
        })?;
        let first_bucket_bytes = d.opt(Dec::uv)?;
        let find_unused_parameters = d.bool()?;
        let static_graph = d.bool()?;
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
        let (n, mut buffers) = d.vec::<BufferInfo>()?;
        for _ in 0..n {
            buffers.push(BufferInfo {
                name: d.string()?,
                dtype: d.string()?,
                bytes: d.uv()?,
            });
        }
        Ok(DdpConfig {
            backend,
            bucket_cap_mb,
            bucket_cap_mb_list,
            first_bucket_bytes,
            find_unused_parameters,
            static_graph,
            gradient_as_bucket_view,
            params,
            buffers,
            buckets: decode_buckets(d)?,
            group_ranks: {
                let (n, mut ranks) = d.vec::<u32>()?;
                for _ in 0..n {
                    ranks.push(d.u32()?);
                }
                ranks
            },
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
            assert_eq!(uv_at(&e.buf[..e.pos], &mut i), Some(v));
            assert_eq!(i, e.pos);
        }
        for v in [0i64, -1, 1, i64::MIN, i64::MAX] {
            let mut e = Enc::new(Vec::new());
            e.iv(v);
            let mut i = 0;
            assert_eq!(uv_at(&e.buf[..e.pos], &mut i).map(unzig), Some(v));
            assert_eq!(i, e.pos);
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

    /// A value of `bits` random bits at most, sometimes an extreme one.
    fn wild(rng: &mut fastrand::Rng, bits: u32) -> u64 {
        let r = rng.u64(..);
        match r % 8 {
            0 => 0,
            1 => u64::MAX,
            2 => u64::MAX - 1,
            3 => 1 << (r >> 58),
            _ => rng.u64(..) >> (64 - (r >> 32) % u64::from(bits) - 1).min(63),
        }
    }

    #[test]
    fn spans_and_offsets_of_any_value_round_trip() {
        use crate::synth::{generate_to_writers, SynthConfig};
        use fastrand::Rng;
        let mut bytes = Vec::new();
        generate_to_writers(&SynthConfig::new(1, 3, 4), vec![&mut bytes]).unwrap();
        let path = PathBuf::from("memory/rank-0.jsonl");
        let (run, _) =
            crate::reader::load_from_readers(vec![(path.clone(), std::io::Cursor::new(bytes))])
                .unwrap();
        let strings = run.strings;
        let mut rank = run.ranks.into_iter().next().unwrap();
        assert!(!rank.extras.is_empty() && !strings.is_empty());
        let mut rng = Rng::with_seed(7);
        // Lanes of 0, 1, CHUNK - 1, CHUNK, CHUNK + 1 and many spans; runs of
        // equal fields (narrow chunks) and of wild ones (wide chunks).
        let mut lanes = Vec::new();
        for (l, n) in [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 40 * CHUNK + 3]
            .into_iter()
            .enumerate()
        {
            let mut spans = Vec::new();
            let mut start = (wild(&mut rng, 64) as i64) / 2;
            for i in 0..n {
                let calm = (i / CHUNK).is_multiple_of(2);
                let w = |rng: &mut Rng, bits| if calm { 5 } else { wild(rng, bits) };
                let some = |rng: &mut Rng| calm || !rng.u64(..).is_multiple_of(3);
                start = start.wrapping_add(w(&mut rng, 64) as i64);
                let end = start.wrapping_add(w(&mut rng, 64) as i64);
                let queued = start.wrapping_sub(w(&mut rng, 64) as i64);
                // The one queued value the layout cannot hold, and the model's none.
                let queued = (queued != i64::MIN && start.wrapping_sub(queued) != i64::MIN)
                    .then_some(queued);
                let sym = |rng: &mut Rng| {
                    let i = rng.u64(..) as usize % strings.len();
                    some(rng).then(|| strings.iter().nth(i).unwrap().0)
                };
                let k = SpanKind::ALL[rng.u64(..) as usize % SpanKind::ALL.len()];
                let c = rng.u64(..) as usize % (KernelCategory::ALL.len() + 1);
                spans.push(Span::from_parts(SpanParts {
                    start,
                    end,
                    queued: queued.filter(|_| some(&mut rng)),
                    bytes: Some(w(&mut rng, 64)).filter(|_| some(&mut rng)),
                    seq: Some(w(&mut rng, 64)).filter(|_| some(&mut rng)),
                    step: Some(w(&mut rng, 32) as u32).filter(|_| some(&mut rng)),
                    bucket: Some(w(&mut rng, 32) as u32).filter(|_| some(&mut rng)),
                    name: sym(&mut rng),
                    op: sym(&mut rng),
                    extra: Some((rng.u64(..) as usize % rank.extras.len()) as u32)
                        .filter(|_| some(&mut rng)),
                    lane: l as u16,
                    kind: k,
                    category: KernelCategory::ALL.get(c).copied(),
                }));
            }
            lanes.push(Lane::new(LaneKind::Custom, format!("lane {l}"), spans));
        }
        rank.lanes = lanes;
        let mut grad_ready = Vec::new();
        for (step, n) in [0usize, 1, 2, 255, 256, 257, 1000].into_iter().enumerate() {
            for width in [1, 8, 16, 40, 64] {
                let offsets: Box<[i64]> = (0..n)
                    .map(|_| (wild(&mut rng, width) as i64) >> (64 - width).min(63))
                    .collect();
                grad_ready.push(GradReady {
                    step: step as u64,
                    t0: wild(&mut rng, 64) as i64,
                    offsets_ns: offsets,
                });
            }
        }
        rank.grad_ready = grad_ready;

        let payload = encode_payload("rank-0", &rank, &strings, &[]).unwrap();
        let part = decode_payload(&payload, "rank-0", &path).unwrap();
        assert_eq!(part.rank.lanes.len(), rank.lanes.len());
        for (a, b) in part.rank.lanes.iter().zip(&rank.lanes) {
            assert_eq!(a.name, b.name);
            assert_eq!(a.spans(), b.spans(), "{}", a.name);
        }
        assert_eq!(part.rank.grad_ready, rank.grad_ready);
        // Every cut is refused, never a panic or a shorter model.
        for cut in (0..payload.len()).step_by(97) {
            assert!(decode_payload(&payload[..cut], "rank-0", &path).is_err());
        }
    }

    #[test]
    fn a_queued_time_the_layout_cannot_hold_is_refused() {
        let span = |start, queued| {
            Span::from_parts(SpanParts {
                start,
                end: start,
                queued: Some(queued),
                bytes: None,
                seq: None,
                step: None,
                bucket: None,
                name: None,
                op: None,
                extra: None,
                lane: 0,
                kind: SpanKind::ALL[0],
                category: None,
            })
        };
        let mut e = Enc::new(Vec::new());
        assert!(encode_spans(&mut e, &[span(0, 1), span(0, i64::MIN + 1)]).is_ok());
        // start − queued = 2⁶³ (wrapping): its value would read as none.
        for spans in [
            [span(0, 1), span(i64::MAX, -1)],
            [span(-1, i64::MAX), span(0, 1)],
        ] {
            assert!(encode_spans(&mut e, &spans).is_err());
        }
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
