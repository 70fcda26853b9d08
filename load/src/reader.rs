//! Loading run directories into a [`Run`].
//!
//! [`load_run`] takes run directories (or `traces/` folders, or trace files),
//! finds every `*.jsonl` under their `traces/` folders, parses the files in
//! parallel (one worker per core) and merges them into one [`Run`] keyed by
//! the headers' `run_id`, so the run directories of several nodes load as
//! one run.
//!
//! Files of 4 MiB and more are mapped into memory (on Linux; see
//! `mapped.rs` and [`LoadOptions::map_files`]), smaller ones read into one
//! large buffer; lines are parsed where they lie (no copy per line) with
//! serde_json into a flat record struct that borrows its strings; spans
//! are then packed into 64-byte [`crate::model::Span`]s with interned
//! strings. Nothing is allocated per line except for the rare
//! records that carry arrays (`buckets`, `grad_ready`), log messages and
//! strings written with JSON escapes.
//!
//! The common record shapes (flat objects with the writer's key names,
//! plain integers, strings without escapes) are read by a hand-written
//! parser (`fastparse`) that hands every other line to serde_json; both
//! produce the same model ([`LoadOptions::fast_parser`] turns it off).
//!
//! Damage is handled as the format specifies: a cut-off last line (no
//! trailing newline and not valid JSON) loads everything before it with a
//! [`Warning::Truncated`]; any other invalid line is an [`Error`] naming the
//! file and line.
//!
//! Each trace file of at least [`LoadOptions::cache_min_bytes`] that loads
//! is also written, as the model part it became, to a binary cache next to
//! it (`<dir>/.cache/<name>.ddpc`); the next load reads that instead of
//! parsing when the file's length, modification time and first and last
//! 4 KiB are unchanged. The cache is derived data, safe to delete; failing to
//! write it never fails a load. `DDP_PROBE_TRACE_CACHE=0` turns it off and
//! `DDP_PROBE_DEBUG=1` prints its decisions to stderr. [`load_run_deferred`]
//! leaves the writing to the caller ([`PendingCaches`]), so that a command
//! can show its answer first.
//!
//! Files are parsed by one worker per core, or by
//! `DDP_PROBE_LOAD_THREADS` workers, or as [`LoadOptions::threads`] says.

use std::borrow::Cow;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use serde::{Deserialize, Deserializer};
use serde_json::error::Category;
use serde_json::value::RawValue;

use probe_contract::budget;

use crate::cache;
use crate::error::{Error, Warning};
use crate::fastparse::{self, Fields};
use crate::model::{
    BucketLayout, CounterSample, EndInfo, GradReady, InstantEvent, Lane, LaneId, LaneKind,
    LaneStats, LogEntry, RankTrace, Run, Span, SpanExtra, SpanParts, Strings, Sym,
};
use crate::trace::{
    BucketInfo, BucketsRecord, GradReadyRecord, Header, KernelCategory, LogLevel, Record, SpanKind,
    TraceWriter, Version, CLOCK_UNIX_NS, FORMAT_NAME, MAX_STEP, TRACES_DIR, VERSION,
};
use rustc_hash::FxHashMap;

/// Size of the read buffer per file.
const READ_BUFFER_BYTES: usize = 1 << 20;

/// Slots of [`Builder::cached_sym`].
const SLOT_TRANSPORT: usize = 0;
const SLOT_ALGO: usize = 1;
const SLOT_DTYPE: usize = 2;
const SLOT_NAME: usize = 3;
const SLOT_OP: usize = 4;

/// Environment variable: the number of worker threads that parse trace
/// files (default: one per core).
pub const THREADS_ENV: &str = "DDP_PROBE_LOAD_THREADS";

/// Environment variable: `0`, `off` or `false` turns the binary cache of
/// loaded trace files off.
pub const CACHE_ENV: &str = "DDP_PROBE_TRACE_CACHE";

/// Environment variable: `0`, `off` or `false` reads trace files through a
/// buffer instead of mapping them ([`LoadOptions::map_files`]).
pub const MAP_ENV: &str = "DDP_PROBE_MAP_FILES";

/// Set to `1` to refuse trace files with a damaged line in their middle
/// (like `--strict`; see [`LoadOptions::strict`]).
pub const STRICT_ENV: &str = "DDP_PROBE_STRICT";

/// Whether [`STRICT_ENV`] asks to refuse damaged lines (`--strict` sets it).
pub fn strict_from_env() -> bool {
    std::env::var(STRICT_ENV).is_ok_and(|v| v.trim() == "1")
}

/// Whether the environment variable `name` says `0`, `off`, `false` or `no`.
fn env_off(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "0" | "off" | "false" | "no"
        )
    })
}

/// The smallest trace file that is mapped rather than read: mapping a
/// smaller one saves too little to pay for setting the map up.
pub const MAP_MIN_BYTES: u64 = 4 << 20;

/// How [`load_run_with`] and [`load_files_with`] load.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// Worker threads parsing files in parallel (each file is parsed by one
    /// thread). `None`: [`THREADS_ENV`] when set, else one per core.
    pub threads: Option<usize>,
    /// Read and write the binary cache next to the trace files
    /// (`<dir>/.cache/<name>.ddpc`). [`CACHE_ENV`] can turn it off even
    /// when this is true.
    pub cache: bool,
    /// Files smaller than this are neither cached nor looked up in the
    /// cache: parsing them takes about as long as reading a cache.
    pub cache_min_bytes: u64,
    /// Read the common record shapes with the hand-written parser (false:
    /// serde_json for every line; the model is the same either way).
    pub fast_parser: bool,
    /// Map trace files of 4 MiB and more into memory (on Linux) rather than
    /// read them through a buffer, which spares the kernel copying them;
    /// the model is the same either way. A file cut short by another
    /// process while it is mapped ends the process with a message saying
    /// so (see [`MAP_ENV`] to turn maps off).
    pub map_files: bool,
    /// Refuse a file with a damaged line in its middle (not JSON, or a record
    /// that breaks the format) instead of skipping the line with a
    /// [`Warning::SkippedLines`]. [`STRICT_ENV`] turns it on too.
    pub strict: bool,
}

impl Default for LoadOptions {
    /// Threads from the environment or one per core, the cache on for files
    /// of 1 MiB and more, the fast parser on.
    fn default() -> LoadOptions {
        LoadOptions {
            threads: None,
            cache: true,
            cache_min_bytes: 1 << 20,
            fast_parser: true,
            map_files: true,
            strict: false,
        }
    }
}

impl LoadOptions {
    fn worker_threads(&self) -> usize {
        self.threads
            .or_else(|| {
                std::env::var(THREADS_ENV)
                    .ok()
                    .and_then(|v| v.trim().parse().ok())
            })
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |c| c.get()))
            .max(1)
    }

    fn cache_enabled(&self) -> bool {
        self.cache && !env_off(CACHE_ENV)
    }

    fn maps_enabled(&self) -> bool {
        self.map_files && !env_off(MAP_ENV)
    }

    fn strict_enabled(&self) -> bool {
        self.strict || strict_from_env()
    }
}

/// Loads the run stored under `paths`.
///
/// Each path may be a run directory (its `traces/` folder is searched for
/// `*.jsonl`, recursively), a folder of trace files, or a trace file. Several
/// run directories of one run (one per node) are merged by `run_id`.
///
/// Returns the run and the warnings to show the user.
pub fn load_run<P: AsRef<Path>>(paths: &[P]) -> Result<(Run, Vec<Warning>), Error> {
    load_run_with(paths, &LoadOptions::default())
}

/// [`load_run`] with explicit options.
pub fn load_run_with<P: AsRef<Path>>(
    paths: &[P],
    options: &LoadOptions,
) -> Result<(Run, Vec<Warning>), Error> {
    let files = find_trace_files(paths)?;
    let (mut run, warnings) = load_files_with(&files, options)?;
    attach_stop_times(&mut run, paths);
    Ok((run, warnings))
}

/// Sets [`RankTrace::stopped_at`] from the manifests of the run directories among `paths`:
/// each rank's end as its launcher recorded it, moved onto rank 0's timeline by the rank's
/// offset (the launcher shares its node's clock). A missing or unreadable manifest, one of an
/// earlier version, or an end that does not fit the trace's own clock (it must come after
/// the process started recording, by no more than the launch-to-end time the manifest gives,
/// give or take a second: traces written on another clock, synthetic or imported, fail this)
/// leaves it unset.
fn attach_stop_times<P: AsRef<Path>>(run: &mut Run, paths: &[P]) {
    for p in paths {
        let Ok(manifest) = probe_contract::manifest::read_manifest(p.as_ref()) else {
            continue;
        };
        for record in &manifest.ranks {
            let Some(at) = record.end.as_ref().and_then(|e| e.at_unix_ns) else {
                continue;
            };
            let Ok(rank) = u32::try_from(record.rank) else {
                continue;
            };
            let Some(after_s) = record.end.as_ref().map(|e| e.after_s) else {
                continue;
            };
            if let Ok(i) = run.ranks.binary_search_by_key(&rank, RankTrace::rank) {
                let r = &mut run.ranks[i];
                let since_start = at as f64 - r.header.start_ns as f64;
                if (-1e9..=after_s * 1e9 + 1e9).contains(&since_start) {
                    r.stopped_at = Some(at.saturating_add(r.offset_ns()));
                }
            }
        }
    }
}

/// The trace files [`load_run`] would read, sorted, without duplicates.
pub fn find_trace_files<P: AsRef<Path>>(paths: &[P]) -> Result<Vec<PathBuf>, Error> {
    let mut files = Vec::new();
    for p in paths {
        let p = p.as_ref();
        let meta = std::fs::metadata(p).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::NotFound { path: p.to_owned() }
            } else {
                io_error(p, e)
            }
        })?;
        if meta.is_file() {
            files.push(p.to_owned());
            continue;
        }
        let traces = p.join(TRACES_DIR);
        let dir = if traces.is_dir() {
            traces
        } else {
            p.to_owned()
        };
        let before = files.len();
        collect_jsonl(&dir, &mut files, 0)?;
        if files.len() == before {
            return Err(Error::NoTraces {
                paths: vec![p.to_owned()],
            });
        }
    }
    if files.is_empty() {
        return Err(Error::NoTraces {
            paths: paths.iter().map(|p| p.as_ref().to_owned()).collect(),
        });
    }
    let mut keyed: Vec<(PathBuf, PathBuf)> = files
        .into_iter()
        .map(|f| (std::fs::canonicalize(&f).unwrap_or_else(|_| f.clone()), f))
        .collect();
    keyed.sort();
    keyed.dedup_by(|a, b| a.0 == b.0);
    Ok(keyed.into_iter().map(|(_, f)| f).collect())
}

fn collect_jsonl(dir: &Path, out: &mut Vec<PathBuf>, depth: u32) -> Result<(), Error> {
    // Deep enough for any sensible layout, shallow enough to stop on loops.
    if depth > 8 {
        return Ok(());
    }
    let entries = std::fs::read_dir(dir).map_err(|e| io_error(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| io_error(dir, e))?;
        let path = entry.path();
        let ty = entry.file_type().map_err(|e| io_error(&path, e))?;
        if ty.is_dir() || (ty.is_symlink() && path.is_dir()) {
            collect_jsonl(&path, out, depth + 1)?;
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
        }
    }
    Ok(())
}

/// Loads the given trace files (no directory search).
pub fn load_files<P: AsRef<Path>>(files: &[P]) -> Result<(Run, Vec<Warning>), Error> {
    load_files_with(files, &LoadOptions::default())
}

/// [`load_files`] with explicit options.
pub fn load_files_with<P: AsRef<Path>>(
    files: &[P],
    options: &LoadOptions,
) -> Result<(Run, Vec<Warning>), Error> {
    let (run, warnings, pending) = load_files_deferred(files, options)?;
    pending.write(&run);
    Ok((run, warnings))
}

/// [`load_run_with`], except that the caches of the files it had to parse
/// are not written yet: they come back as [`PendingCaches`], for the caller
/// to write once it has shown what it loaded the run for. A command's answer
/// then does not wait for what only speeds up the next load.
pub fn load_run_deferred<P: AsRef<Path>>(
    paths: &[P],
    options: &LoadOptions,
) -> Result<(Run, Vec<Warning>, PendingCaches), Error> {
    let files = find_trace_files(paths)?;
    let (mut run, warnings, pending) = load_files_deferred(&files, options)?;
    attach_stop_times(&mut run, paths);
    Ok((run, warnings, pending))
}

/// [`load_files_with`] with the caches' writing left to the caller (see
/// [`load_run_deferred`]).
pub fn load_files_deferred<P: AsRef<Path>>(
    files: &[P],
    options: &LoadOptions,
) -> Result<(Run, Vec<Warning>, PendingCaches), Error> {
    let paths: Vec<PathBuf> = files.iter().map(|p| p.as_ref().to_owned()).collect();
    let cache = options.cache_enabled();
    let outcomes = parallel_map(paths.len(), options.worker_threads(), |i| {
        load_path(&paths[i], options, cache)
    });
    merge_pending(outcomes, &paths)
}

/// Binary caches a load still owes (see [`load_run_deferred`]): one for
/// each trace file it parsed that is worth caching. [`PendingCaches::write`]
/// writes them; dropping them writes nothing, which only costs a parse at the
/// next load.
#[must_use = "the caches are written by PendingCaches::write only"]
#[derive(Default)]
pub struct PendingCaches {
    files: Vec<PendingCache>,
}

/// What writing one file's cache needs besides the run.
struct PendingCache {
    slot: cache::Slot,
    /// Bytes parsed: the file's length when it was read. Whether the file
    /// changed since is checked when the cache is written.
    bytes_read: u64,
    /// The trace file, also the rank's path in the run.
    path: PathBuf,
    /// The file's own string table.
    strings: Strings,
    /// The file's warnings.
    warnings: Vec<Warning>,
    /// The file's symbols in the run's table, when the merge moved them.
    moved: Option<Vec<Sym>>,
}

impl PendingCaches {
    /// Number of caches to write.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether there is nothing to write.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Writes the caches, from `run`: the run of the load that returned
    /// them, unchanged (a file whose rank it does not hold is skipped).
    /// Never fails; `DDP_PROBE_DEBUG=1` prints what happened.
    pub fn write(self, run: &Run) {
        for p in self.files {
            let Some(rank) = run.ranks.iter().find(|r| r.path == p.path) else {
                continue;
            };
            match &p.moved {
                None => p
                    .slot
                    .store(&p.path, p.bytes_read, rank, &p.strings, &p.warnings),
                Some(map) => {
                    // Back to the file's own symbols: the run's table in
                    // the file's order.
                    let Some(unused) = Sym::from_index(0) else {
                        continue;
                    };
                    let mut back = vec![unused; run.strings.len()];
                    for (local, global) in map.iter().enumerate() {
                        if let (Some(b), Some(l)) =
                            (back.get_mut(global.index()), Sym::from_index(local))
                        {
                            *b = l;
                        }
                    }
                    let mut own = rank.clone();
                    remap(&mut own, &back);
                    p.slot
                        .store(&p.path, p.bytes_read, &own, &p.strings, &p.warnings);
                }
            }
        }
    }
}

/// Counts the bytes read through it.
struct Counting<R> {
    inner: R,
    bytes: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
}

/// One trace file: from its cache when that is valid, else parsed (with
/// what writing its cache needs, when it is worth caching).
fn load_path(
    path: &Path,
    options: &LoadOptions,
    cache: bool,
) -> Result<(FileOutcome, Option<PendingCache>), Error> {
    let file = File::open(path).map_err(|e| io_error(path, e))?;
    let slot = if cache {
        cache::Slot::open(path, &file, options.cache_min_bytes)
    } else {
        None
    };
    if let Some(slot) = &slot {
        if let Some(part) = slot.load(path) {
            let outcome = FileOutcome {
                parsed: Some((part.rank, part.strings)),
                warnings: part.warnings,
            };
            return Ok((outcome, None));
        }
    }
    let meta = file.metadata().ok();
    let len = meta.as_ref().map(|m| m.len());
    // Large regular files are mapped (the kernel copies nothing), others
    // read; either way `bytes_read` is how much of the file was parsed.
    let map = match &meta {
        Some(m) if options.maps_enabled() && m.is_file() && m.len() >= MAP_MIN_BYTES => {
            crate::mapped::Mapped::open(&file, m.len())
        }
        _ => None,
    };
    let (outcome, bytes_read) = match map {
        Some(map) => {
            let mapped = map.bytes().len() as u64;
            let lines = MappedLines { map, start: 0 };
            let outcome = parse_lines(
                path,
                lines,
                Some(mapped),
                options.fast_parser,
                options.strict_enabled(),
            )?;
            (outcome, mapped)
        }
        None => {
            let mut input = Counting {
                inner: &file,
                bytes: 0,
            };
            let outcome = parse_file(
                path,
                &mut input,
                len,
                options.fast_parser,
                options.strict_enabled(),
            )?;
            (outcome, input.bytes)
        }
    };
    let pending = match (slot, &outcome.parsed) {
        (Some(slot), Some((_, strings))) => Some(PendingCache {
            slot,
            bytes_read,
            path: path.to_owned(),
            strings: strings.clone(),
            warnings: outcome.warnings.clone(),
            moved: None,
        }),
        _ => None,
    };
    Ok((outcome, pending))
}

/// Loads traces from readers, each named by the path used in messages.
pub fn load_from_readers<R: Read + Send>(
    inputs: Vec<(PathBuf, R)>,
) -> Result<(Run, Vec<Warning>), Error> {
    let paths: Vec<PathBuf> = inputs.iter().map(|(p, _)| p.clone()).collect();
    let slots: Vec<Mutex<Option<R>>> = inputs
        .into_iter()
        .map(|(_, r)| Mutex::new(Some(r)))
        .collect();
    let threads = LoadOptions::default().worker_threads();
    let outcomes = parallel_map(paths.len(), threads, |i| {
        let input = slots[i]
            .lock()
            .map_err(|_| io_error(&paths[i], std::io::Error::other("a reader thread panicked")))?
            .take();
        match input {
            Some(r) => parse_file(&paths[i], r, None, true, false),
            None => Err(io_error(
                &paths[i],
                std::io::Error::other("input was already consumed"),
            )),
        }
    });
    merge(outcomes, &paths)
}

/// Loads a run from records held in memory, one list per rank (each starting
/// with its header), as if they had been written to files named
/// `memory/rank-<i>.jsonl`. Handy for tests and importers.
pub fn load_records(ranks: &[Vec<Record>]) -> Result<(Run, Vec<Warning>), Error> {
    let mut inputs = Vec::with_capacity(ranks.len());
    for (i, records) in ranks.iter().enumerate() {
        let path = PathBuf::from(format!("memory/rank-{i}.jsonl"));
        let mut w = TraceWriter::new(Vec::new());
        for r in records {
            w.write(r).map_err(|e| io_error(&path, e))?;
        }
        let bytes = w.into_inner().map_err(|e| io_error(&path, e))?;
        inputs.push((path, std::io::Cursor::new(bytes)));
    }
    load_from_readers(inputs)
}

fn io_error(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_owned(),
        source,
    }
}

/// Runs `f(0..n)` on up to `threads` threads; results in index order.
fn parallel_map<T: Send>(n: usize, threads: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let workers = threads.min(n);
    if workers <= 1 {
        return (0..n).map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let results: Vec<Mutex<Option<T>>> = (0..n).map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let r = f(i);
                if let Ok(mut slot) = results[i].lock() {
                    *slot = Some(r);
                }
            });
        }
    });
    results
        .into_iter()
        .filter_map(|m| m.into_inner().ok().flatten())
        .collect()
}

/// A load's result: the run and its warnings, or the error.
pub(crate) type Loaded = Result<(Run, Vec<Warning>), Error>;

/// Loads one trace file's bytes, named `path`, as a run, with the fast
/// parser or serde_json only; also returns the cache payload written for it
/// (when it loaded a rank). For the fuzz targets and tests.
pub(crate) fn load_bytes(path: &Path, bytes: &[u8], fast: bool) -> (Loaded, Option<Vec<u8>>) {
    let outcome = parse_file(path, bytes, Some(bytes.len() as u64), fast, false);
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let payload = match (&outcome, name) {
        (
            Ok(FileOutcome {
                parsed: Some((rank, strings)),
                warnings,
            }),
            Some(name),
        ) => cache::encode_payload(&name, rank, strings, warnings).ok(),
        _ => None,
    };
    (merge(vec![outcome], &[path.to_owned()]), payload)
}

/// Loads a run from a cache payload (see [`cache::decode_payload`]) as if
/// it had been read for the trace file `path`. For the fuzz targets.
pub(crate) fn load_cache_payload(
    path: &Path,
    payload: &[u8],
) -> Result<(Run, Vec<Warning>), String> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let part = cache::decode_payload(payload, &name, path)?;
    let outcome = FileOutcome {
        parsed: Some((part.rank, part.strings)),
        warnings: part.warnings,
    };
    merge(vec![Ok(outcome)], &[path.to_owned()]).map_err(|e| e.to_string())
}

/// One file's result: its rank (absent when the file has no complete
/// header) and its warnings.
struct FileOutcome {
    parsed: Option<(RankTrace, Strings)>,
    warnings: Vec<Warning>,
}

fn merge(
    outcomes: Vec<Result<FileOutcome, Error>>,
    paths: &[PathBuf],
) -> Result<(Run, Vec<Warning>), Error> {
    let outcomes = outcomes.into_iter().map(|o| o.map(|o| (o, None))).collect();
    merge_pending(outcomes, paths).map(|(run, warnings, _)| (run, warnings))
}

/// The files' ranks as one run, and the caches still to write for them.
fn merge_pending(
    outcomes: Vec<Result<(FileOutcome, Option<PendingCache>), Error>>,
    paths: &[PathBuf],
) -> Result<(Run, Vec<Warning>, PendingCaches), Error> {
    if outcomes.len() != paths.len() {
        return Err(io_error(
            paths.first().map_or(Path::new("."), |p| p.as_path()),
            std::io::Error::other("a reader thread panicked"),
        ));
    }
    let mut warnings = Vec::new();
    let mut parsed = Vec::new();
    let mut pending = Vec::new();
    for o in outcomes {
        let (o, p) = o?;
        warnings.extend(o.warnings);
        if let Some(rank) = o.parsed {
            parsed.push(rank);
            pending.push(p);
        }
    }
    if parsed.is_empty() {
        return Err(if paths.is_empty() {
            Error::NoTraces { paths: Vec::new() }
        } else {
            Error::NoCompleteTrace {
                paths: paths.to_vec(),
            }
        });
    }
    {
        let (first, _) = &parsed[0];
        for (r, _) in &parsed[1..] {
            if r.header.run_id != first.header.run_id {
                return Err(Error::MixedRuns {
                    first: first.path.clone(),
                    first_id: first.header.run_id.clone(),
                    second: r.path.clone(),
                    second_id: r.header.run_id.clone(),
                });
            }
            if r.header.world_size != first.header.world_size {
                return Err(Error::WorldSizeMismatch {
                    first: first.path.clone(),
                    first_size: first.header.world_size,
                    second: r.path.clone(),
                    second_size: r.header.world_size,
                });
            }
        }
    }
    let mut iter = parsed.into_iter().zip(&mut pending);
    let ((first, mut strings), _) = iter.next().ok_or(Error::NoTraces { paths: Vec::new() })?;
    let mut ranks = vec![first];
    for ((mut rank, local), cache) in iter {
        let mut map = Vec::with_capacity(local.len());
        for (_, s) in local.iter() {
            map.push(
                strings
                    .intern(s)
                    .ok_or_else(|| too_many_strings(&rank.path))?,
            );
        }
        // Ranks of one run usually intern the same strings in the same
        // order: then there is nothing to rewrite.
        if map.iter().enumerate().any(|(i, s)| s.index() != i) {
            remap(&mut rank, &map);
            if let Some(cache) = cache {
                cache.moved = Some(map);
            }
        }
        ranks.push(rank);
    }
    ranks.sort_by_key(|r| r.rank());
    for pair in ranks.windows(2) {
        if pair[0].rank() == pair[1].rank() {
            return Err(Error::DuplicateRank {
                rank: pair[0].rank(),
                first: pair[0].path.clone(),
                second: pair[1].path.clone(),
            });
        }
    }
    let run = Run {
        run_id: ranks[0].header.run_id.clone(),
        world_size: ranks[0].header.world_size,
        ranks,
        strings,
    };
    let missing = run.missing_ranks();
    if !missing.is_empty() {
        warnings.push(Warning::MissingRanks {
            run_id: run.run_id.clone(),
            world_size: run.world_size,
            missing,
            count: run.missing_rank_count(),
        });
    }
    let files = pending.into_iter().flatten().collect();
    Ok((run, warnings, PendingCaches { files }))
}

fn too_many_strings(path: &Path) -> Error {
    Error::InvalidRecord {
        path: path.to_owned(),
        line: 0,
        record: "span".to_owned(),
        problem: "the run has more than 4 billion distinct strings".to_owned(),
    }
}

/// Rewrites a rank's symbols from its own string table to the run's.
fn remap(rank: &mut RankTrace, map: &[Sym]) {
    for lane in &mut rank.lanes {
        for s in lane.spans_mut() {
            s.remap_syms(map);
        }
    }
    for x in &mut rank.extras {
        x.remap_syms(map);
    }
    for i in &mut rank.instants {
        i.name = map[i.name.index()];
        i.args = i.args.map(|a| map[a.index()]);
    }
    for c in &mut rank.counters {
        c.name = map[c.name.index()];
    }
}

/// A string borrowed from the line when it has no escapes.
///
/// serde's `#[serde(borrow)]` does not reach through `Option<Cow<str>>`
/// (those always allocate), so the raw records use this instead.
struct Str<'a>(Cow<'a, str>);

impl Str<'_> {
    fn into_owned(self) -> String {
        self.0.into_owned()
    }
}

impl std::ops::Deref for Str<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Str<'a>, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// The fields needed to check a header before parsing all of it.
#[derive(Deserialize)]
struct HeaderProbe<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<Str<'a>>,
    #[serde(borrow)]
    format: Option<Str<'a>>,
    #[serde(borrow)]
    version: Option<Str<'a>>,
}

/// Only the type, to name records that fail to parse.
#[derive(Deserialize)]
struct TypeProbe<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<Str<'a>>,
}

/// The type a [`RawLine`] reads a span field of a given kind as.
macro_rules! raw_value {
    ($lt:lifetime num $ty:ty) => { $ty };
    ($lt:lifetime text $ty:ty) => { Str<$lt> };
    ($lt:lifetime tag $ty:ty) => { Str<$lt> };
}

/// [`RawLine`] and its [`RawLine::fields`], from the contract's one list of
/// span fields.
macro_rules! raw_line {
    ($( $(#[doc = $doc:literal])* $kind:ident $field:ident : $ty:ty ),+ $(,)?) => {
        /// Every field of the hot records (span, instant, counter, log, end), flat,
        /// borrowed from the line. Unknown fields are skipped.
        #[derive(Deserialize)]
        #[serde(bound(deserialize = "'de: 'a"))]
        struct RawLine<'a> {
            #[serde(rename = "type")]
            ty: Option<Str<'a>>,
            kind: Option<Str<'a>>,
            step: Option<u64>,
            start: Option<u64>,
            end: Option<u64>,
            $( $field: Option<raw_value!('a $kind $ty)>, )+
            args: Option<&'a RawValue>,
            t: Option<u64>,
            #[serde(default, deserialize_with = "present_f64")]
            value: Option<f64>,
            level: Option<Str<'a>>,
            message: Option<Str<'a>>,
            status: Option<Str<'a>>,
        }

        impl RawLine<'_> {
            /// The fields, borrowed, as [`fastparse`] hands them over.
            fn fields(&self) -> Fields<'_> {
                Fields {
                    ty: self.ty.as_deref(),
                    kind: self.kind.as_deref(),
                    step: self.step,
                    start: self.start,
                    end: self.end,
                    $( $field: AsField::as_field(&self.$field), )+
                    t: self.t,
                    value: self.value,
                    level: self.level.as_deref(),
                    message: self.message.as_deref(),
                    status: self.status.as_deref(),
                    t0: None,
                    has_offsets: false,
                    memo_hits: 0,
                    kind_hit: 0,
                }
            }
        }
    };
}

probe_contract::span_optional_fields!(raw_line);

/// A [`RawLine`] value as [`Fields`] holds it: numbers copied, strings borrowed.
trait AsField<'s> {
    type Field;
    fn as_field(&'s self) -> Self::Field;
}

impl AsField<'_> for Option<u64> {
    type Field = Option<u64>;
    fn as_field(&self) -> Option<u64> {
        *self
    }
}

impl AsField<'_> for Option<u32> {
    type Field = Option<u32>;
    fn as_field(&self) -> Option<u32> {
        *self
    }
}

impl<'s> AsField<'s> for Option<Str<'_>> {
    type Field = Option<&'s str>;
    fn as_field(&'s self) -> Option<&'s str> {
        self.as_deref()
    }
}

/// A present `value`: a number, or `null` for NaN.
fn present_f64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Ok(Some(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN)))
}

const KNOWN_TYPES: &[&str] = &[
    "header",
    "buckets",
    "span",
    "grad_ready",
    "instant",
    "counter",
    "log",
    "end",
];

/// serde_json's message without its "at line 1 column N" (every line is
/// parsed on its own), with the column kept.
fn describe(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) => format!("{} (column {})", &s[..i], e.column()),
        None => s,
    }
}

fn trim(line: &[u8]) -> &[u8] {
    let mut end = line.len();
    while end > 0 && line[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    let mut start = 0;
    while start < end && line[start].is_ascii_whitespace() {
        start += 1;
    }
    &line[start..end]
}

/// Why a line was not loaded.
enum LineError {
    /// Not parseable (JSON syntax, or a field of the wrong type).
    Json(serde_json::Error),
    /// Parsed, but breaks the format's rules.
    Fatal(Box<Error>),
}

impl From<Error> for LineError {
    fn from(e: Error) -> LineError {
        LineError::Fatal(Box::new(e))
    }
}

/// A source of lines for [`parse_lines`].
trait Lines {
    /// The bytes read and not yet handed out: the next line (perhaps only
    /// its start) and what follows it.
    fn unread(&self) -> &[u8];
    /// Hands out the first `n` bytes of [`Lines::unread`] (whole lines
    /// with their `\n`) without a search.
    fn consume(&mut self, n: usize);
    /// The next line without its `\n`, and whether it had one.
    fn next_line(&mut self) -> std::io::Result<Option<(&[u8], bool)>>;
}

/// The lines of a mapped file, handed out where they lie; the pages behind
/// them are given back as the reading goes on.
struct MappedLines {
    map: crate::mapped::Mapped,
    start: usize,
}

impl Lines for MappedLines {
    #[inline]
    fn unread(&self) -> &[u8] {
        &self.map.bytes()[self.start..]
    }

    #[inline]
    fn consume(&mut self, n: usize) {
        self.start += n;
        self.map.release_before(self.start);
    }

    fn next_line(&mut self) -> std::io::Result<Option<(&[u8], bool)>> {
        self.map.release_before(self.start);
        let bytes = self.map.bytes();
        let rest = &bytes[self.start..];
        if rest.is_empty() {
            return Ok(None);
        }
        let (line, complete) = match memchr::memchr(b'\n', rest) {
            Some(i) => (self.start..self.start + i, true),
            None => (self.start..bytes.len(), false),
        };
        self.start = line.end + usize::from(complete);
        Ok(Some((&bytes[line], complete)))
    }
}

/// Splits its input into lines without copying them: lines are handed out
/// as slices of one large buffer, which only moves when a line crosses its
/// end.
struct LineReader<R> {
    input: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    /// The longest line read ([`budget::TRACE_LINE_BYTES`]): the buffer does
    /// not grow past twice that.
    max_line: u64,
}

impl<R: Read> LineReader<R> {
    fn new(input: R) -> LineReader<R> {
        LineReader::with_capacity(input, READ_BUFFER_BYTES)
    }

    fn with_capacity(input: R, bytes: usize) -> LineReader<R> {
        LineReader {
            input,
            buf: vec![0; bytes.max(1)],
            start: 0,
            end: 0,
            eof: false,
            max_line: budget::TRACE_LINE_BYTES.limit(),
        }
    }
}

impl<R: Read> Lines for LineReader<R> {
    #[inline]
    fn unread(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    #[inline]
    fn consume(&mut self, n: usize) {
        debug_assert!(n <= self.end - self.start);
        self.start += n;
    }

    fn next_line(&mut self) -> std::io::Result<Option<(&[u8], bool)>> {
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.start..self.end]) {
                let line = self.start..self.start + i;
                self.start += i + 1;
                return Ok(Some((&self.buf[line], true)));
            }
            if self.eof {
                if self.start == self.end {
                    return Ok(None);
                }
                let line = self.start..self.end;
                self.start = self.end;
                return Ok(Some((&self.buf[line], false)));
            }
            // Keep the partial line, make room and read more.
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            if self.end == self.buf.len() {
                if self.end as u64 > self.max_line {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::FileTooLarge,
                        budget::TRACE_LINE_BYTES.exceeded(self.max_line),
                    ));
                }
                let grown = self.buf.len() * 2;
                self.buf.resize(grown, 0);
            }
            match self.input.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// A line that is not UTF-8, as a serde_json error so it is reported like
/// any other unparseable line.
fn utf8_error(e: std::str::Utf8Error) -> serde_json::Error {
    <serde_json::Error as serde::de::Error>::custom(format!(
        "invalid UTF-8 at byte {} of the line",
        e.valid_up_to() + 1
    ))
}

/// Parses one trace file; `len` (the file's length, when known) sizes the
/// span lists as the file goes on.
fn parse_file<R: Read>(
    path: &Path,
    input: R,
    len: Option<u64>,
    fast: bool,
    strict: bool,
) -> Result<FileOutcome, Error> {
    parse_lines(path, LineReader::new(input), len, fast, strict)
}

/// [`parse_file`] over any source of lines. A damaged line in the middle of
/// the file is skipped and counted ([`Warning::SkippedLines`]), or refused
/// when `strict`; a line past [`budget::TRACE_LINE_BYTES`] ends the file's
/// reading with [`Error::LineTooLong`].
fn parse_lines(
    path: &Path,
    mut reader: impl Lines,
    len: Option<u64>,
    fast: bool,
    strict: bool,
) -> Result<FileOutcome, Error> {
    let mut lineno = 0u64;
    let mut builder: Option<Builder> = None;
    let mut warnings = Vec::new();
    let mut pos = 0u64;
    let max_line = budget::TRACE_LINE_BYTES.limit();
    let mut skipped = Skipped::default();
    loop {
        // Lines of a known shape are read where they lie in the buffer.
        if let Some(b) = builder.as_mut().filter(|b| b.fast) {
            if let Some(n) = b.shaped_line(lineno + 1, reader.unread()) {
                reader.consume(n);
                lineno += 1;
                pos += n as u64;
                continue;
            }
        }
        let next = match reader.next_line() {
            Ok(next) => next,
            Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => {
                return Err(Error::LineTooLong {
                    path: path.to_owned(),
                    line: lineno + 1,
                    problem: e.to_string(),
                })
            }
            Err(e) => return Err(io_error(path, e)),
        };
        let Some((raw, complete)) = next else {
            break;
        };
        lineno += 1;
        if raw.len() as u64 > max_line {
            return Err(Error::LineTooLong {
                path: path.to_owned(),
                line: lineno,
                problem: budget::TRACE_LINE_BYTES.exceeded_by(raw.len() as u64, max_line),
            });
        }
        pos += raw.len() as u64 + u64::from(complete);
        let bytes = trim(raw);
        if bytes.is_empty() {
            continue;
        }
        let Some(b) = builder.as_mut() else {
            match std::str::from_utf8(bytes)
                .map_err(utf8_error)
                .map_err(LineError::Json)
                .and_then(|line| parse_header(path, lineno, line))
            {
                Ok((mut b, w)) => {
                    warnings.extend(w);
                    b.fast = fast;
                    b.len = len;
                    builder = Some(b);
                    continue;
                }
                Err(LineError::Json(_)) if !complete => break,
                // A first line that is not JSON at all: not a trace (a log, a text
                // file), rather than a trace damaged after it was written.
                Err(LineError::Json(e)) if e.classify() != Category::Data => {
                    return Err(Error::MissingHeader {
                        path: path.to_owned(),
                        line: lineno,
                        found: "a line that is not JSON".to_owned(),
                    })
                }
                Err(LineError::Json(e)) => return Err(json_error(path, lineno, bytes, &e)),
                Err(LineError::Fatal(e)) => return Err(*e),
            }
        };
        b.pos = pos;
        match b.line(lineno, bytes) {
            Ok(()) => {}
            Err(LineError::Json(_)) if !complete => {
                b.truncated = true;
                warnings.push(Warning::Truncated {
                    path: path.to_owned(),
                    line: lineno,
                    records: b.records,
                });
                break;
            }
            Err(LineError::Json(e)) => {
                let e = json_error(path, lineno, bytes, &e);
                if strict {
                    return Err(e);
                }
                skipped.add(lineno, &e);
            }
            Err(LineError::Fatal(e)) => match *e {
                Error::InvalidRecord { .. } if !strict => skipped.add(lineno, &e),
                e => return Err(e),
            },
        }
    }
    if let Some(w) = skipped.warning(path) {
        warnings.push(w);
    }
    let Some(b) = builder else {
        warnings.push(Warning::NoHeader {
            path: path.to_owned(),
        });
        return Ok(FileOutcome {
            parsed: None,
            warnings,
        });
    };
    let (rank, strings, w) = b.finish();
    warnings.extend(w);
    Ok(FileOutcome {
        parsed: Some((rank, strings)),
        warnings,
    })
}

/// The damaged lines skipped in one file.
#[derive(Default)]
struct Skipped {
    count: u64,
    lines: Vec<u64>,
    first_problem: Option<String>,
}

impl Skipped {
    fn add(&mut self, line: u64, e: &Error) {
        self.count += 1;
        if self.lines.len() < crate::error::SKIPPED_LISTED {
            self.lines.push(line);
        }
        if self.first_problem.is_none() {
            self.first_problem = Some(match e {
                Error::CorruptLine { problem, .. } => format!("not valid JSON: {problem}"),
                Error::InvalidRecord {
                    record, problem, ..
                } => format!("invalid {record} record: {problem}"),
                other => other.to_string(),
            });
        }
    }

    fn warning(self, path: &Path) -> Option<Warning> {
        (self.count > 0).then(|| Warning::SkippedLines {
            path: path.to_owned(),
            count: self.count,
            lines: self.lines,
            first_problem: self.first_problem.unwrap_or_default(),
        })
    }
}

/// The error for a complete line serde_json rejected: a syntax error is a
/// corrupt line, a wrong field type an invalid record.
fn json_error(path: &Path, line: u64, text: &[u8], e: &serde_json::Error) -> Error {
    if e.classify() == Category::Data {
        let record = serde_json::from_slice::<TypeProbe<'_>>(text)
            .ok()
            .and_then(|p| p.ty.map(Str::into_owned))
            .unwrap_or_else(|| "untyped".to_owned());
        Error::InvalidRecord {
            path: path.to_owned(),
            line,
            record,
            problem: describe(e),
        }
    } else {
        Error::CorruptLine {
            path: path.to_owned(),
            line,
            problem: describe(e),
        }
    }
}

fn parse_header(
    path: &Path,
    line: u64,
    text: &str,
) -> Result<(Builder, Option<Warning>), LineError> {
    let probe: HeaderProbe<'_> = serde_json::from_str(text).map_err(LineError::Json)?;
    match probe.ty.as_deref() {
        Some("header") => {}
        Some(other) => {
            return Err(Error::MissingHeader {
                path: path.to_owned(),
                line,
                found: format!("a {other:?} record"),
            }
            .into())
        }
        None => {
            return Err(Error::MissingHeader {
                path: path.to_owned(),
                line,
                found: "a record without \"type\"".to_owned(),
            }
            .into())
        }
    }
    let invalid = |problem: String| -> LineError {
        Error::InvalidHeader {
            path: path.to_owned(),
            line,
            problem,
        }
        .into()
    };
    match probe.format.as_deref() {
        Some(FORMAT_NAME) => {}
        Some(other) => {
            return Err(Error::NotATrace {
                path: path.to_owned(),
                line,
                found: format!("{other:?}"),
            }
            .into())
        }
        None => {
            return Err(Error::NotATrace {
                path: path.to_owned(),
                line,
                found: "missing".to_owned(),
            }
            .into())
        }
    }
    let Some(vtext) = probe.version.as_deref() else {
        return Err(invalid(
            "the \"version\" field is missing (expected \"1.0\")".to_owned(),
        ));
    };
    let Some(version) = Version::parse(vtext) else {
        return Err(invalid(format!(
            "version {vtext:?} is not of the form \"major.minor\""
        )));
    };
    if !version.is_supported() {
        return Err(Error::UnsupportedVersion {
            path: path.to_owned(),
            found: vtext.to_owned(),
            supported: VERSION.to_owned(),
        }
        .into());
    }
    let warning = (version > Version::CURRENT).then(|| Warning::NewerMinorVersion {
        path: path.to_owned(),
        found: vtext.to_owned(),
        supported: VERSION.to_owned(),
    });
    let header: Header = serde_json::from_str(text).map_err(|e| invalid(describe(&e)))?;
    if header.world_size == 0 {
        return Err(invalid("world_size is 0".to_owned()));
    }
    if header.rank >= header.world_size {
        return Err(invalid(format!(
            "rank {} is not below world_size {}",
            header.rank, header.world_size
        )));
    }
    if header.offset_to_rank0_ns.unsigned_abs() > MAX_CLOCK_OFFSET_NS.unsigned_abs() {
        return Err(invalid(format!(
            "offset_to_rank0_ns {} is not a clock offset between machines (more than 2^50 ns, \
             13 days, either way)",
            header.offset_to_rank0_ns
        )));
    }
    if header.clock != CLOCK_UNIX_NS {
        return Err(invalid(format!(
            "clock domain {:?} is not supported; version 1 timestamps are \"unix_ns\"",
            header.clock
        )));
    }
    if let Some(ddp) = &header.ddp {
        check_buckets(&ddp.buckets, ddp.params.len()).map_err(invalid)?;
        check_group_ranks(&ddp.group_ranks, header.rank, header.world_size).map_err(invalid)?;
    }
    Ok((Builder::new(path.to_owned(), header, version), warning))
}

/// The latest time a run may hold, in nanoseconds since 1970 after the
/// clock offset (2^62, the year 2116). Every time the loader keeps lies in
/// `0..=MAX_TIME_NS`, so differences, margins and sums of two times never
/// overflow in the views (the terminal timeline did on a span ending at
/// 2^63 − 1).
pub const MAX_TIME_NS: i64 = 1 << 62;

/// The largest clock offset between machines a header may give (2^50 ns,
/// 13 days): beyond, the value is a damaged field, not a clock.
pub const MAX_CLOCK_OFFSET_NS: i64 = 1 << 50;

/// Checks that buckets only name parameters of the table (when there is one).
/// A DDP process group's ranks must be ranks of the world, without repeats, and hold the rank
/// whose header lists them (an empty list: the whole world).
fn check_group_ranks(group: &[u32], rank: u32, world_size: u32) -> Result<(), String> {
    if group.is_empty() {
        return Ok(());
    }
    if let Some(r) = group.iter().find(|&&r| r >= world_size) {
        return Err(format!(
            "ddp.group_ranks holds rank {r}, which is not below world_size {world_size}"
        ));
    }
    let mut sorted = group.to_vec();
    sorted.sort_unstable();
    if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
        return Err(format!("ddp.group_ranks lists rank {} twice", w[0]));
    }
    if !group.contains(&rank) {
        return Err(format!(
            "ddp.group_ranks {group:?} does not hold rank {rank}, whose header lists it (a rank \
             reduces over a process group it is in)"
        ));
    }
    Ok(())
}

fn check_buckets(buckets: &[BucketInfo], params: usize) -> Result<(), String> {
    if params == 0 {
        return Ok(());
    }
    for b in buckets {
        if let Some(p) = b.params.iter().find(|&&p| p as usize >= params) {
            return Err(format!(
                "bucket {} lists parameter {p} but the parameter table has {params} entries",
                b.id
            ));
        }
    }
    Ok(())
}

/// How many more spans to make room for in a full lane of `len` spans,
/// `pos` bytes into a file of `file_len`: the lane's share of the file so
/// far, extrapolated to the whole file (plus a little), so that a lane is
/// reallocated a few times rather than once per doubling. Without a length,
/// or near the end, it doubles.
fn growth(len: usize, pos: u64, file_len: Option<u64>) -> usize {
    let doubling = len.max(64);
    let Some(file_len) = file_len else {
        return doubling;
    };
    if pos == 0 || pos >= file_len || len < 1024 {
        return doubling;
    }
    let expected = (len as f64 * (file_len as f64 / pos as f64) * 1.05) as usize;
    // At least a quarter more, at most eight times as many.
    expected
        .saturating_sub(len)
        .clamp(len / 4, len.saturating_mul(8))
}

/// A lane being filled.
struct LaneBuild {
    kind: LaneKind,
    name: String,
    spans: Vec<Span>,
    stats: LaneStats,
}

/// The lanes every builder starts with (ids 0 to 3, dropped at the end if
/// empty), in display order.
const FIXED_LANES: [LaneKind; 4] = [
    LaneKind::Compute,
    LaneKind::Buckets,
    LaneKind::Comm,
    LaneKind::Data,
];

/// One file's records on their way into a [`RankTrace`].
struct Builder {
    path: PathBuf,
    header: Header,
    version: Version,
    offset: i64,
    strings: Strings,
    lanes: Vec<LaneBuild>,
    /// The lane of each span kind whose lane the kind alone decides (no
    /// `lane` field; not `kernel` or `memcpy`), once known.
    kind_lanes: [Option<LaneId>; SpanKind::ALL.len()],
    gpu_lanes: FxHashMap<(u32, u64), LaneId>,
    custom_lanes: FxHashMap<Box<str>, LaneId>,
    extras: Vec<SpanExtra>,
    extra_ids: FxHashMap<SpanExtra, u32>,
    /// The last extra of each span kind and its id.
    last_extra: [Option<(SpanExtra, u32)>; SpanKind::ALL.len()],
    /// The last string of each span field in [`Builder::cached_sym`].
    last_syms: [(String, Option<Sym>); 5],
    layouts: Vec<BucketLayout>,
    grad_ready: Vec<GradReady>,
    instants: Vec<InstantEvent>,
    counters: Vec<CounterSample>,
    logs: Vec<LogEntry>,
    end: Option<EndInfo>,
    unknown_types: Vec<(String, u64, u64)>,
    unknown_kinds: Vec<(String, u64, u64)>,
    records: u64,
    truncated: bool,
    /// Whether to try [`fastparse`] before serde_json.
    fast: bool,
    /// `offsets_ns` of the last `grad_ready` line read by [`fastparse`].
    offsets: Vec<i64>,
    /// What [`fastparse`] remembers between lines.
    memo: fastparse::Memo,
    /// What [`Builder::span`] made of a line [`fastparse`]'s template read,
    /// for the line's shape ([`fastparse::Memo::learn_shape`]).
    proto: Option<fastparse::Proto>,
    /// The file's length, when known.
    len: Option<u64>,
    /// Bytes of the file read so far (up to the current line's end).
    pos: u64,
}

impl Builder {
    fn new(path: PathBuf, header: Header, version: Version) -> Builder {
        let mut layouts = Vec::new();
        if let Some(ddp) = &header.ddp {
            layouts.push(BucketLayout {
                from_step: 0,
                t: None,
                reason: "initial".to_owned(),
                from_header: true,
                buckets: ddp.buckets.clone(),
            });
        }
        Builder {
            path,
            offset: header.offset_to_rank0_ns,
            header,
            version,
            strings: Strings::new(),
            // The fixed lanes first, in display order, so that their spans
            // keep their lane ids when the lanes are sorted at the end.
            lanes: FIXED_LANES
                .iter()
                .map(|&kind| LaneBuild {
                    kind,
                    name: kind.display_name(),
                    spans: Vec::new(),
                    stats: LaneStats::default(),
                })
                .collect(),
            kind_lanes: [None; SpanKind::ALL.len()],
            gpu_lanes: FxHashMap::default(),
            custom_lanes: FxHashMap::default(),
            extras: Vec::new(),
            extra_ids: FxHashMap::default(),
            last_extra: [None; SpanKind::ALL.len()],
            last_syms: Default::default(),
            layouts,
            grad_ready: Vec::new(),
            instants: Vec::new(),
            counters: Vec::new(),
            logs: Vec::new(),
            end: None,
            unknown_types: Vec::new(),
            unknown_kinds: Vec::new(),
            records: 1,
            truncated: false,
            fast: true,
            offsets: Vec::new(),
            memo: fastparse::Memo::default(),
            proto: None,
            len: None,
            pos: 0,
        }
    }

    fn invalid(&self, line: u64, record: &str, problem: String) -> LineError {
        Error::InvalidRecord {
            path: self.path.clone(),
            line,
            record: record.to_owned(),
            problem,
        }
        .into()
    }

    fn missing(&self, line: u64, record: &str, field: &str) -> LineError {
        self.invalid(line, record, format!("the \"{field}\" field is missing"))
    }

    /// A timestamp of this rank moved onto rank 0's timeline.
    #[inline(always)]
    fn shift(&self, line: u64, record: &str, t: u64) -> Result<i64, LineError> {
        match i64::try_from(t)
            .ok()
            .and_then(|t| t.checked_add(self.offset))
        {
            Some(t) if (0..=MAX_TIME_NS).contains(&t) => Ok(t),
            _ => Err(self.shift_error(line, record, t)),
        }
    }

    /// The error of [`Builder::shift`], out of line.
    #[cold]
    #[inline(never)]
    fn shift_error(&self, line: u64, record: &str, t: u64) -> LineError {
        self.invalid(
            line,
            record,
            format!(
                "timestamp {t} is out of range (nanoseconds since 1970, after the clock offset, \
                 must be within 0..=2^62, the year 2116)"
            ),
        )
    }

    #[inline]
    fn step(&self, line: u64, record: &str, step: Option<u64>) -> Result<Option<u32>, LineError> {
        match step {
            None => Ok(None),
            Some(s) if s <= MAX_STEP => Ok(u32::try_from(s).ok()),
            Some(s) => Err(self.invalid(
                line,
                record,
                format!("step {s} is larger than the maximum {MAX_STEP}"),
            )),
        }
    }

    fn sym(&mut self, line: u64, s: &str) -> Result<Sym, LineError> {
        match self.strings.intern(s) {
            Some(sym) => Ok(sym),
            None => Err(self.invalid(
                line,
                "span",
                "more than 4 billion distinct strings".to_owned(),
            )),
        }
    }

    /// [`Builder::sym`] through a one-entry cache per span field: spans
    /// in a row mostly repeat their op, transport, dtype...
    #[inline(always)]
    fn cached_sym(
        &mut self,
        slot: usize,
        line: u64,
        s: Option<&str>,
    ) -> Result<Option<Sym>, LineError> {
        let Some(s) = s else { return Ok(None) };
        if let (text, Some(sym)) = &self.last_syms[slot] {
            if text.as_str() == s {
                return Ok(Some(*sym));
            }
        }
        self.cached_sym_miss(slot, line, s).map(Some)
    }

    /// [`Builder::cached_sym`], first through the id [`fastparse::Memo`]
    /// remembers for its string slot `memo_slot` when the line repeated
    /// that slot's string (`hits`, [`Fields::memo_hits`]).
    #[inline(always)]
    fn memo_sym(
        &mut self,
        memo_slot: usize,
        slot: usize,
        line: u64,
        s: Option<&str>,
        hits: u8,
    ) -> Result<Option<Sym>, LineError> {
        if hits & (1 << memo_slot) == 0 {
            return self.cached_sym(slot, line, s);
        }
        if let Some(sym) = self.memo.sym(memo_slot) {
            return Ok(Some(sym));
        }
        let sym = self.cached_sym(slot, line, s)?;
        self.memo.set_sym(memo_slot, sym);
        Ok(sym)
    }

    /// [`Builder::cached_sym`] for a string other than the slot's last.
    #[inline(never)]
    fn cached_sym_miss(&mut self, slot: usize, line: u64, s: &str) -> Result<Sym, LineError> {
        let sym = self.sym(line, s)?;
        let (text, cached) = &mut self.last_syms[slot];
        text.clear();
        text.push_str(s);
        *cached = Some(sym);
        Ok(sym)
    }

    #[inline(always)]
    fn args_sym(
        &mut self,
        line: u64,
        record: &str,
        args: Option<&RawValue>,
    ) -> Result<Option<Sym>, LineError> {
        match args {
            None => Ok(None),
            Some(raw) => self.args_text_sym(line, record, raw).map(Some),
        }
    }

    /// [`Builder::args_sym`] of present `args`.
    #[inline(never)]
    fn args_text_sym(&mut self, line: u64, record: &str, raw: &RawValue) -> Result<Sym, LineError> {
        let text = raw.get();
        if !text.starts_with('{') {
            return Err(self.invalid(
                line,
                record,
                format!("\"args\" must be a JSON object, found {text}"),
            ));
        }
        self.sym(line, text)
    }

    fn count(list: &mut Vec<(String, u64, u64)>, name: &str, line: u64) {
        match list.iter_mut().find(|(n, _, _)| n == name) {
            Some(e) => e.1 += 1,
            None => list.push((name.to_owned(), 1, line)),
        }
    }

    fn new_lane(&mut self, line: u64, kind: LaneKind, name: String) -> Result<LaneId, LineError> {
        let id = LaneId::try_from(self.lanes.len()).map_err(|_| {
            self.invalid(
                line,
                "span",
                "more than 65536 lanes (the four fixed ones included)".to_owned(),
            )
        })?;
        self.lanes.push(LaneBuild {
            kind,
            name,
            spans: Vec::new(),
            stats: LaneStats::default(),
        });
        Ok(id)
    }

    #[inline]
    fn lane(&mut self, line: u64, kind: LaneKind) -> Result<LaneId, LineError> {
        match kind {
            // Made first, in FIXED_LANES' order.
            LaneKind::Compute => Ok(0),
            LaneKind::Buckets => Ok(1),
            LaneKind::Comm => Ok(2),
            LaneKind::Data => Ok(3),
            LaneKind::Gpu { device, stream } => {
                if let Some(&id) = self.gpu_lanes.get(&(device, stream)) {
                    return Ok(id);
                }
                let id = self.new_lane(line, kind, kind.display_name())?;
                self.gpu_lanes.insert((device, stream), id);
                Ok(id)
            }
            LaneKind::Custom => self.custom_lane(line, "custom"),
        }
    }

    fn custom_lane(&mut self, line: u64, name: &str) -> Result<LaneId, LineError> {
        if let Some(&id) = self.custom_lanes.get(name) {
            return Ok(id);
        }
        let id = self.new_lane(line, LaneKind::Custom, name.to_owned())?;
        self.custom_lanes.insert(name.into(), id);
        Ok(id)
    }

    /// Adds one trimmed, non-empty line.
    /// Reads the line at the start of `buffer` (the reader's unread bytes)
    /// if it has one of the shapes learnt so far and passes every check,
    /// and returns its length with its `\n`. `None` (nothing done) leaves
    /// the line to [`LineReader::next_line`] and [`Builder::line`].
    #[inline]
    fn shaped_line(&mut self, line: u64, buffer: &[u8]) -> Option<usize> {
        let mut nums = fastparse::Nums::default();
        let (kind, len) = self.memo.read_by_shape(buffer, &mut nums, true)?;
        self.pos += len as u64 + 1;
        self.shaped_span(line, &nums, kind)?;
        Some(len + 1)
    }

    fn line(&mut self, line: u64, bytes: &[u8]) -> Result<(), LineError> {
        if self.fast {
            let mut nums = fastparse::Nums::default();
            if let Some((kind, _)) = self.memo.read_by_shape(bytes, &mut nums, false) {
                if self.shaped_span(line, &nums, kind).is_some() {
                    return Ok(());
                }
            }
            let mut offsets = std::mem::take(&mut self.offsets);
            let mut f = Fields::default();
            let done = if fastparse::parse(bytes, &mut offsets, &mut f, &mut self.memo) {
                self.fast_line(line, &f, &offsets)
            } else {
                None
            };
            self.offsets = offsets;
            if let Some(proto) = self.proto.take() {
                self.memo.learn_shape(bytes, proto);
            }
            if let Some(r) = done {
                return r;
            }
        }
        let text = std::str::from_utf8(bytes)
            .map_err(utf8_error)
            .map_err(LineError::Json)?;
        self.serde_line(line, text)
    }

    /// A line [`fastparse`] read: the same checks and the same model as
    /// [`Builder::serde_line`]. `None` leaves the line to serde_json.
    fn fast_line<'a>(
        &mut self,
        line: u64,
        f: &Fields<'a>,
        offsets: &[i64],
    ) -> Option<Result<(), LineError>> {
        let ty = f.ty?;
        if ty == "grad_ready" {
            let r = self.grad_ready(line, f.step?, f.t0?, offsets.into());
            if r.is_ok() {
                self.records += 1;
            }
            return Some(r);
        }
        Some(self.record(line, ty, f, None, ""))
    }

    fn grad_ready(
        &mut self,
        line: u64,
        step: u64,
        t0: u64,
        offsets_ns: Box<[i64]>,
    ) -> Result<(), LineError> {
        const TY: &str = "grad_ready";
        self.step(line, TY, Some(step))?;
        // The same rule as the writer's (`Record::validate`): a model that
        // loads can always be written back.
        if let Some(o) = offsets_ns.iter().find(|&&o| o < -1) {
            return Err(self.invalid(
                line,
                TY,
                format!("offset {o} is negative; -1 marks a parameter without gradient"),
            ));
        }
        let t0 = self.shift(line, TY, t0)?;
        self.grad_ready.push(GradReady {
            step,
            t0,
            offsets_ns,
        });
        Ok(())
    }

    fn serde_line(&mut self, line: u64, text: &str) -> Result<(), LineError> {
        let raw: RawLine<'_> = match serde_json::from_str(text) {
            Ok(r) => r,
            Err(e) => {
                // A record of a newer type may reuse a field name with
                // another type; skip it like any unknown record.
                if e.classify() == Category::Data {
                    if let Ok(TypeProbe { ty: Some(ty) }) = serde_json::from_str(text) {
                        if !KNOWN_TYPES.contains(&&*ty) {
                            Builder::count(&mut self.unknown_types, &ty, line);
                            return Ok(());
                        }
                    }
                }
                return Err(LineError::Json(e));
            }
        };
        let Some(ty) = raw.ty.as_deref() else {
            return Err(self.invalid(
                line,
                "untyped",
                "the record has no \"type\" field".to_owned(),
            ));
        };
        self.record(line, ty, &raw.fields(), raw.args, text)
    }

    /// Checks a parsed line of type `ty` and adds it to the model. `text`
    /// is the line, parsed again for the record types that carry arrays.
    fn record(
        &mut self,
        line: u64,
        ty: &str,
        raw: &Fields<'_>,
        args: Option<&RawValue>,
        text: &str,
    ) -> Result<(), LineError> {
        match ty {
            "span" => self.span(line, raw, args)?,
            "instant" => {
                let name = raw.name.ok_or_else(|| self.missing(line, ty, "name"))?;
                let t = raw.t.ok_or_else(|| self.missing(line, ty, "t"))?;
                let t = self.shift(line, ty, t)?;
                let step = self.step(line, ty, raw.step)?.map(u64::from);
                let name = self.sym(line, name)?;
                let args = self.args_sym(line, ty, args)?;
                self.instants.push(InstantEvent {
                    t,
                    step,
                    name,
                    args,
                });
            }
            "counter" => {
                let name = raw.name.ok_or_else(|| self.missing(line, ty, "name"))?;
                let t = raw.t.ok_or_else(|| self.missing(line, ty, "t"))?;
                let value = raw.value.ok_or_else(|| self.missing(line, ty, "value"))?;
                let t = self.shift(line, ty, t)?;
                let name = self.sym(line, name)?;
                self.counters.push(CounterSample { t, name, value });
            }
            "log" => {
                let t = raw.t.ok_or_else(|| self.missing(line, ty, "t"))?;
                let level = raw.level.ok_or_else(|| self.missing(line, ty, "level"))?;
                let message = raw
                    .message
                    .ok_or_else(|| self.missing(line, ty, "message"))?;
                let t = self.shift(line, ty, t)?;
                self.logs.push(LogEntry {
                    t,
                    level: LogLevel::parse(level),
                    message: message.into(),
                });
            }
            "end" => {
                let t = raw.t.ok_or_else(|| self.missing(line, ty, "t"))?;
                let status = raw.status.ok_or_else(|| self.missing(line, ty, "status"))?;
                let t = self.shift(line, ty, t)?;
                self.end = Some(EndInfo {
                    t,
                    status: status.to_owned(),
                    message: raw.message.map(str::to_owned),
                });
            }
            "grad_ready" => {
                let g: GradReadyRecord =
                    serde_json::from_str(text).map_err(|e| self.invalid(line, ty, describe(&e)))?;
                self.grad_ready(line, g.step, g.t0, g.offsets_ns.into_boxed_slice())?;
            }
            "buckets" => {
                let b: BucketsRecord =
                    serde_json::from_str(text).map_err(|e| self.invalid(line, ty, describe(&e)))?;
                self.step(line, ty, Some(b.step))?;
                let params = self.header.ddp.as_ref().map_or(0, |d| d.params.len());
                check_buckets(&b.buckets, params).map_err(|p| self.invalid(line, ty, p))?;
                let t = b.t.map(|t| self.shift(line, ty, t)).transpose()?;
                self.layouts.push(BucketLayout {
                    from_step: b.step,
                    t,
                    reason: b.reason,
                    from_header: false,
                    buckets: b.buckets,
                });
            }
            "header" => {
                return Err(self.invalid(
                    line,
                    ty,
                    "a second header; each file holds the trace of one process".to_owned(),
                ))
            }
            other => {
                Builder::count(&mut self.unknown_types, other, line);
                return Ok(());
            }
        }
        self.records += 1;
        Ok(())
    }

    fn span(
        &mut self,
        line: u64,
        r: &Fields<'_>,
        args: Option<&RawValue>,
    ) -> Result<(), LineError> {
        const TY: &str = "span";
        let kind_text = r.kind.ok_or_else(|| self.missing(line, TY, "kind"))?;
        let start = r.start.ok_or_else(|| self.missing(line, TY, "start"))?;
        let end = r.end.ok_or_else(|| self.missing(line, TY, "end"))?;
        if end < start {
            return Err(self.invalid(
                line,
                TY,
                format!("it ends ({end}) before it starts ({start})"),
            ));
        }
        let step = self.step(line, TY, r.step)?;
        let known = if r.kind_hit != 0 {
            match self.memo.kind_id(r.kind_hit) {
                Some(k) => Some(k),
                None => {
                    let k = SpanKind::from_name(kind_text);
                    if let Some(k) = k {
                        self.memo.set_kind_id(r.kind_hit, k);
                    }
                    k
                }
            }
        } else {
            SpanKind::from_name(kind_text)
        };
        let (kind, kind_name) = match known {
            Some(k) => (k, None),
            None => {
                Builder::count(&mut self.unknown_kinds, kind_text, line);
                (SpanKind::Other, Some(self.sym(line, kind_text)?))
            }
        };
        let extra = SpanExtra {
            kind_name,
            params: r.params,
            transport: self.memo_sym(
                fastparse::MEMO_TRANSPORT,
                SLOT_TRANSPORT,
                line,
                r.transport,
                r.memo_hits,
            )?,
            algo: self.memo_sym(fastparse::MEMO_ALGO, SLOT_ALGO, line, r.algo, r.memo_hits)?,
            dtype: self.memo_sym(
                fastparse::MEMO_DTYPE,
                SLOT_DTYPE,
                line,
                r.dtype,
                r.memo_hits,
            )?,
            peer: r.peer,
            device: r.device,
            stream: r.stream,
            correlation: r.correlation,
            args: self.args_sym(line, TY, args)?,
        };
        let extra_id = self.extra_id(line, kind, extra)?;
        let lane = match r.lane {
            Some(name) => match LaneKind::from_key(name) {
                Some(k) => self.lane(line, k)?,
                None => self.custom_lane(line, name)?,
            },
            None => match self.kind_lanes[kind as usize] {
                Some(id) => id,
                None => {
                    let id = self.lane(line, LaneKind::default_for(kind, r.device, r.stream))?;
                    if !matches!(kind, SpanKind::Kernel | SpanKind::Memcpy) {
                        self.kind_lanes[kind as usize] = Some(id);
                    }
                    id
                }
            },
        };
        let span = Span::from_parts(SpanParts {
            start: self.shift(line, TY, start)?,
            end: self.shift(line, TY, end)?,
            queued: r.queued.map(|q| self.shift(line, TY, q)).transpose()?,
            bytes: r.bytes,
            seq: r.seq,
            step,
            bucket: r.bucket,
            name: self.memo_sym(fastparse::MEMO_NAME, SLOT_NAME, line, r.name, r.memo_hits)?,
            op: self.memo_sym(fastparse::MEMO_OP, SLOT_OP, line, r.op, r.memo_hits)?,
            extra: extra_id,
            lane,
            kind,
            category: r.category.map(KernelCategory::parse),
        });
        self.push_span(span);
        // A line of the writer's shape (the template read it) whose span
        // the shape alone determines, but for its integers: not a kind
        // counted as unknown, not a lane chosen by the line's device and
        // stream, no `args`.
        if self.memo.learning()
            && kind_name.is_none()
            && args.is_none()
            && (r.lane.is_some() || !matches!(kind, SpanKind::Kernel | SpanKind::Memcpy))
        {
            let numeric = r.params.is_some()
                || r.peer.is_some()
                || r.device.is_some()
                || r.stream.is_some()
                || r.correlation.is_some();
            self.proto = Some(fastparse::Proto {
                span,
                extra: numeric.then_some(extra),
                last_extra: None,
            });
        }
        Ok(())
    }

    /// The id of a span's extra fields (`None` when they are all absent),
    /// through the last one of the span's kind, then the table of all.
    #[inline(always)]
    fn extra_id(
        &mut self,
        line: u64,
        kind: SpanKind,
        extra: SpanExtra,
    ) -> Result<Option<u32>, LineError> {
        let last = &mut self.last_extra[kind as usize];
        Ok(if extra.is_empty() {
            None
        } else if let Some(id) = last
            .as_ref()
            .and_then(|(x, id)| (*x == extra).then_some(*id))
        {
            Some(id)
        } else if let Some(&id) = self.extra_ids.get(&extra) {
            *last = Some((extra, id));
            Some(id)
        } else {
            let id = u32::try_from(self.extras.len())
                .ok()
                .filter(|&id| id < u32::MAX)
                .ok_or_else(|| {
                    self.invalid(line, "span", "too many distinct span extras".to_owned())
                })?;
            self.extras.push(extra);
            self.extra_ids.insert(extra, id);
            self.last_extra[kind as usize] = Some((extra, id));
            Some(id)
        })
    }

    /// Appends a span to its lane, growing the lane by the share of the
    /// file read so far.
    #[inline(always)]
    fn push_span(&mut self, span: Span) {
        let lane = &mut self.lanes[usize::from(span.lane())];
        if lane.spans.len() == lane.spans.capacity() {
            lane.spans
                .reserve(growth(lane.spans.len(), self.pos, self.len));
        }
        lane.stats.add(&span);
        lane.spans.push(span);
    }

    /// The span of a line read by a shape ([`fastparse::Memo::read_by_shape`]):
    /// that of the shape's [`fastparse::Proto`] (`kind` is its slot), with
    /// the line's integers, checked as [`Builder::span`]
    /// checks them. `None` (nothing done) when a check fails: the line then
    /// goes the usual way, which reports the problem.
    #[inline(always)]
    fn shaped_span(&mut self, line: u64, nums: &fastparse::Nums, kind: usize) -> Option<()> {
        use fastparse::Num;
        const TY: &str = "span";
        let (start, end) = (nums.get(Num::Start)?, nums.get(Num::End)?);
        if end < start {
            return None;
        }
        let step = self.step(line, TY, nums.get(Num::Step)).ok()?;
        let proto = self.memo.proto(kind);
        let p = &proto.span.clone();
        let extra = if proto.extra.is_none() {
            p.extra_index().and_then(|i| u32::try_from(i).ok())
        } else {
            // The id of the last line's extra fields when its integers
            // there are the same (the rest are the shape's), else looked up.
            let key = nums.extra_key();
            match proto.last_extra {
                Some((k, id)) if k == key => id,
                _ => {
                    // Copied only when looked up (it is large).
                    let x = SpanExtra {
                        params: nums.get_u32(Num::Params).ok()?,
                        peer: nums.get_u32(Num::Peer).ok()?,
                        device: nums.get_u32(Num::Device).ok()?,
                        stream: nums.get(Num::Stream),
                        correlation: nums.get(Num::Correlation),
                        ..proto.extra?
                    };
                    let id = self.extra_id(line, p.kind(), x).ok()?;
                    self.memo.proto_mut(kind).last_extra = Some((key, id));
                    id
                }
            }
        };
        let span = Span::from_parts(SpanParts {
            start: self.shift(line, TY, start).ok()?,
            end: self.shift(line, TY, end).ok()?,
            queued: match nums.get(Num::Queued) {
                Some(q) => Some(self.shift(line, TY, q).ok()?),
                None => None,
            },
            bytes: nums.get(Num::Bytes),
            seq: nums.get(Num::Seq),
            step,
            bucket: nums.get_u32(Num::Bucket).ok()?,
            name: p.name(),
            op: p.op(),
            extra,
            lane: p.lane(),
            kind: p.kind(),
            category: p.category(),
        });
        self.push_span(span);
        self.records += 1;
        Some(())
    }

    fn finish(self) -> (RankTrace, Strings, Vec<Warning>) {
        let mut warnings = Vec::new();
        for (record, count, first_line) in self.unknown_types {
            warnings.push(Warning::UnknownRecordType {
                path: self.path.clone(),
                record,
                count,
                first_line,
            });
        }
        for (kind, count, first_line) in self.unknown_kinds {
            warnings.push(Warning::UnknownSpanKind {
                path: self.path.clone(),
                kind,
                count,
                first_line,
            });
        }
        // Display order (the fixed lanes, made first in that order, keep
        // their ids unless one before them stayed empty), then renumber the
        // spans of the lanes whose id changed.
        let mut lanes: Vec<(usize, LaneBuild)> = self
            .lanes
            .into_iter()
            .enumerate()
            .filter(|(_, l)| !l.spans.is_empty())
            .collect();
        lanes.sort_by(|(_, a), (_, b)| a.kind.cmp(&b.kind).then_with(|| a.name.cmp(&b.name)));
        let lanes: Vec<Lane> = lanes
            .into_iter()
            .enumerate()
            .map(|(new, (old, l))| {
                // At most 65536 lanes were created, so `new` fits.
                let id = LaneId::try_from(new).unwrap_or(LaneId::MAX);
                Lane::with_stats(l.kind, l.name, l.spans, l.stats, (old != new).then_some(id))
            })
            .collect();
        let mut layouts = self.layouts;
        layouts.sort_by_key(|l| l.from_step);
        let mut grad_ready = self.grad_ready;
        grad_ready.sort_by_key(|g| g.step);
        let mut instants = self.instants;
        instants.sort_by_key(|i| i.t);
        let mut counters = self.counters;
        counters.sort_by_key(|c| c.t);
        let mut logs = self.logs;
        logs.sort_by_key(|l| l.t);
        let mut extras = self.extras;
        extras.shrink_to_fit();
        let rank = RankTrace {
            header: self.header,
            path: self.path,
            version: self.version,
            layouts,
            lanes,
            extras,
            grad_ready,
            instants,
            counters,
            logs,
            end: self.end,
            truncated: self.truncated,
            stopped_at: None,
        };
        (rank, self.strings, warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_drops_line_one() {
        let e = serde_json::from_str::<serde_json::Value>("{\"a\":").unwrap_err();
        let d = describe(&e);
        assert!(!d.contains("line 1"), "{d}");
        assert!(d.contains("column"), "{d}");
    }

    #[test]
    fn line_reader_handles_lines_longer_than_its_buffer() {
        let text = b"a\n\nbcdefghij\nklm\nno-newline";
        for cap in [1, 2, 3, 7, 64] {
            let mut r = LineReader::with_capacity(std::io::Cursor::new(&text[..]), cap);
            let mut got = Vec::new();
            while let Some((line, complete)) = r.next_line().unwrap() {
                got.push((String::from_utf8(line.to_vec()).unwrap(), complete));
            }
            let want: Vec<(String, bool)> = [
                ("a", true),
                ("", true),
                ("bcdefghij", true),
                ("klm", true),
                ("no-newline", false),
            ]
            .iter()
            .map(|(s, c)| (s.to_string(), *c))
            .collect();
            assert_eq!(got, want, "capacity {cap}");
        }
    }

    #[test]
    fn lanes_grow_by_the_share_of_the_file_read() {
        // Without a length, or early, or at the end: doubling.
        assert_eq!(growth(0, 0, None), 64);
        assert_eq!(growth(5000, 100, None), 5000);
        assert_eq!(growth(100, 10, Some(1000)), 100);
        assert_eq!(growth(5000, 1000, Some(1000)), 5000);
        // A fifth of the file gave 10,000 spans: room for about 42,500 more.
        let more = growth(10_000, 2_000, Some(10_000));
        assert!((40_000..=45_000).contains(&more), "{more}");
        // Bounded: a quarter more at least, eight times as many at most.
        assert_eq!(growth(10_000, 9_999, Some(10_000)), 2_500);
        assert_eq!(growth(10_000, 1, Some(1 << 40)), 80_000);
    }

    #[test]
    fn trims_whitespace() {
        assert_eq!(trim(b"  {}\r\n"), b"{}");
        assert_eq!(trim(b" \n"), b"");
    }
}
