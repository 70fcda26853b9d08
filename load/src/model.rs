//! The in-memory model of a loaded run, built for analysis and drawing.
//!
//! A [`Run`] holds one [`RankTrace`] per rank. A rank's spans live in
//! [`Lane`]s (compute, buckets, communication, data, custom lanes, one per GPU
//! stream), each sorted by start time (ties: longer span first, so parents
//! come before their children). All timestamps are `i64` nanoseconds on rank
//! 0's timeline: the reader has already added each rank's
//! `offset_to_rank0_ns`.
//!
//! [`Span`] is a 64-byte `Copy` struct with no heap data: strings are interned
//! once per run ([`Strings`], [`Sym`]) and the rarely used fields live in a
//! per-rank table of deduplicated [`SpanExtra`]s. Ten million spans take about
//! 640 MB. [`SpanRef`] pairs a span with its run to resolve strings and extras.

use std::fmt;
use std::num::NonZeroU32;
use std::ops::Deref;
use std::path::PathBuf;

use crate::trace::{
    BucketInfo, BucketsRecord, CounterRecord, EndRecord, GradReadyRecord, Header, InstantRecord,
    KernelCategory, LogLevel, LogRecord, Record, SpanKind, SpanRecord, Version,
};
use rustc_hash::FxHashMap;

/// An interned string of a [`Run`]; resolve it with [`Run::str`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sym(NonZeroU32);

impl Sym {
    /// The position of the string in [`Strings`].
    pub fn index(self) -> usize {
        (self.0.get() - 1) as usize
    }

    pub(crate) fn from_index(i: usize) -> Option<Sym> {
        u32::try_from(i + 1).ok().and_then(NonZeroU32::new).map(Sym)
    }
}

/// The string table of a run: each distinct name, op, transport, args text...
/// is stored once.
#[derive(Clone, Default)]
pub struct Strings {
    list: Vec<Box<str>>,
    map: FxHashMap<Box<str>, Sym>,
}

impl Strings {
    /// An empty table.
    pub fn new() -> Strings {
        Strings::default()
    }

    /// The symbol of `s`, adding it if new. `None` once the table holds
    /// 2³² − 1 strings.
    pub fn intern(&mut self, s: &str) -> Option<Sym> {
        if let Some(&sym) = self.map.get(s) {
            return Some(sym);
        }
        let sym = Sym::from_index(self.list.len())?;
        // Names come from untrusted traces and every command prints them:
        // kept escaped (`probe_contract::text::escape_controls`); looked up by the
        // name as written.
        self.list
            .push(probe_contract::text::escape_controls(s).into_owned().into());
        self.map.insert(s.into(), sym);
        Some(sym)
    }

    /// The symbol of `s` if it is in the table.
    pub fn lookup(&self, s: &str) -> Option<Sym> {
        self.map.get(s).copied()
    }

    /// The string of `sym` (empty for a symbol of another table that is out
    /// of range).
    pub fn resolve(&self, sym: Sym) -> &str {
        self.list.get(sym.index()).map_or("", |s| s)
    }

    /// Number of strings.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Every string with its symbol, in interning order.
    pub fn iter(&self) -> impl Iterator<Item = (Sym, &str)> {
        self.list
            .iter()
            .enumerate()
            .filter_map(|(i, s)| Some((Sym::from_index(i)?, &**s)))
    }
}

impl fmt::Debug for Strings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.list.iter()).finish()
    }
}

/// Index of a lane in [`RankTrace::lanes`].
pub type LaneId = u16;

const NONE_TIME: i64 = i64::MIN;
const NONE_U64: u64 = u64::MAX;
const NONE_U32: u32 = u32::MAX;

/// One span, compact: 64 bytes, no heap data.
///
/// Optional fields are stored with sentinels and read through accessors that
/// return `Option`. A value equal to the sentinel (`u64::MAX` bytes or seq,
/// `u32::MAX` bucket or step) reads as absent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    start: i64,
    end: i64,
    queued: i64,
    bytes: u64,
    seq: u64,
    step: u32,
    bucket: u32,
    name: Option<Sym>,
    op: Option<Sym>,
    extra: u32,
    lane: LaneId,
    kind: SpanKind,
    category: Option<KernelCategory>,
}

/// The fields of a [`Span`] as the reader fills them in.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SpanParts {
    pub start: i64,
    pub end: i64,
    pub queued: Option<i64>,
    pub bytes: Option<u64>,
    pub seq: Option<u64>,
    pub step: Option<u32>,
    pub bucket: Option<u32>,
    pub name: Option<Sym>,
    pub op: Option<Sym>,
    pub extra: Option<u32>,
    pub lane: LaneId,
    pub kind: SpanKind,
    pub category: Option<KernelCategory>,
}

impl Span {
    pub(crate) fn from_parts(p: SpanParts) -> Span {
        Span {
            start: p.start,
            end: p.end,
            queued: p.queued.unwrap_or(NONE_TIME),
            bytes: p.bytes.unwrap_or(NONE_U64),
            seq: p.seq.unwrap_or(NONE_U64),
            step: p.step.unwrap_or(NONE_U32),
            bucket: p.bucket.unwrap_or(NONE_U32),
            name: p.name,
            op: p.op,
            extra: p.extra.unwrap_or(NONE_U32),
            lane: p.lane,
            kind: p.kind,
            category: p.category,
        }
    }

    /// Start (ns, rank 0's timeline).
    #[inline]
    pub fn start(&self) -> i64 {
        self.start
    }

    /// End (ns, rank 0's timeline).
    #[inline]
    pub fn end(&self) -> i64 {
        self.end
    }

    /// `end - start` (ns).
    #[inline]
    pub fn duration(&self) -> i64 {
        self.end.saturating_sub(self.start)
    }

    /// What the span measures.
    #[inline]
    pub fn kind(&self) -> SpanKind {
        self.kind
    }

    /// The lane the span is drawn in.
    #[inline]
    pub fn lane(&self) -> LaneId {
        self.lane
    }

    /// The training step.
    #[inline]
    pub fn step(&self) -> Option<u64> {
        (self.step != NONE_U32).then_some(u64::from(self.step))
    }

    /// When a collective was enqueued (ns, rank 0's timeline).
    #[inline]
    pub fn queued(&self) -> Option<i64> {
        (self.queued != NONE_TIME).then_some(self.queued)
    }

    /// Bytes moved or covered.
    #[inline]
    pub fn bytes(&self) -> Option<u64> {
        (self.bytes != NONE_U64).then_some(self.bytes)
    }

    /// Collective sequence number.
    #[inline]
    pub fn seq(&self) -> Option<u64> {
        (self.seq != NONE_U64).then_some(self.seq)
    }

    /// Gradient bucket id.
    #[inline]
    pub fn bucket(&self) -> Option<u32> {
        (self.bucket != NONE_U32).then_some(self.bucket)
    }

    /// Display name.
    #[inline]
    pub fn name(&self) -> Option<Sym> {
        self.name
    }

    /// Collective operation.
    #[inline]
    pub fn op(&self) -> Option<Sym> {
        self.op
    }

    /// Kernel category.
    #[inline]
    pub fn category(&self) -> Option<KernelCategory> {
        self.category
    }

    /// Index of the span's [`SpanExtra`] in [`RankTrace::extras`].
    #[inline]
    pub fn extra_index(&self) -> Option<usize> {
        (self.extra != NONE_U32).then_some(self.extra as usize)
    }

    /// Whether the span overlaps the half-open window `[t0, t1)` (a
    /// zero-length span at `t0` counts).
    #[inline]
    pub fn overlaps(&self, t0: i64, t1: i64) -> bool {
        self.start < t1 && (self.end > t0 || self.start >= t0)
    }

    pub(crate) fn remap_syms(&mut self, map: &[Sym]) {
        self.name = self.name.map(|s| map[s.index()]);
        self.op = self.op.map(|s| map[s.index()]);
    }
}

/// The rarely used fields of spans, shared by every span with the same
/// values (see [`Span::extra_index`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SpanExtra {
    /// The original kind name of a span of kind [`SpanKind::Other`].
    pub kind_name: Option<Sym>,
    /// Number of parameters covered.
    pub params: Option<u32>,
    /// Transport.
    pub transport: Option<Sym>,
    /// Collective algorithm.
    pub algo: Option<Sym>,
    /// Element type.
    pub dtype: Option<Sym>,
    /// Peer rank.
    pub peer: Option<u32>,
    /// GPU index.
    pub device: Option<u32>,
    /// GPU stream id.
    pub stream: Option<u64>,
    /// Kernel correlation id.
    pub correlation: Option<u64>,
    /// The `args` object as JSON text.
    pub args: Option<Sym>,
}

impl SpanExtra {
    pub(crate) fn is_empty(&self) -> bool {
        *self == SpanExtra::default()
    }

    pub(crate) fn remap_syms(&mut self, map: &[Sym]) {
        for s in [
            &mut self.kind_name,
            &mut self.transport,
            &mut self.algo,
            &mut self.dtype,
            &mut self.args,
        ] {
            *s = s.map(|x| map[x.index()]);
        }
    }
}

/// What a lane shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LaneKind {
    /// The training thread: steps, forward, backward, optimizer...
    Compute,
    /// Gradient buckets' ready windows (they overlap, so they get their own
    /// lane).
    Buckets,
    /// Collectives and writebacks.
    Comm,
    /// Waiting for data.
    Data,
    /// A lane named by the writer (the span's `lane` field).
    Custom,
    /// One GPU stream.
    Gpu {
        /// GPU index.
        device: u32,
        /// Stream id.
        stream: u64,
    },
}

impl LaneKind {
    /// The name a span's `lane` field uses for this lane (`None` for GPU
    /// and custom lanes, which have no fixed name).
    pub fn key(self) -> Option<&'static str> {
        match self {
            LaneKind::Compute => Some("compute"),
            LaneKind::Buckets => Some("buckets"),
            LaneKind::Comm => Some("comm"),
            LaneKind::Data => Some("data"),
            LaneKind::Custom | LaneKind::Gpu { .. } => None,
        }
    }

    /// The lane of a span's `lane` field value, `None` for a custom lane.
    pub fn from_key(key: &str) -> Option<LaneKind> {
        match key {
            "compute" => Some(LaneKind::Compute),
            "buckets" => Some(LaneKind::Buckets),
            "comm" | "communication" => Some(LaneKind::Comm),
            "data" => Some(LaneKind::Data),
            _ => None,
        }
    }

    /// The lane a span goes to when it has no `lane` field: `kernel` spans,
    /// and `memcpy` spans with a stream, go to their GPU stream's lane;
    /// otherwise the kind decides.
    pub fn default_for(kind: SpanKind, device: Option<u32>, stream: Option<u64>) -> LaneKind {
        let gpu = LaneKind::Gpu {
            device: device.unwrap_or(0),
            stream: stream.unwrap_or(0),
        };
        match kind {
            SpanKind::Kernel => gpu,
            SpanKind::Memcpy if stream.is_some() => gpu,
            SpanKind::DataWait => LaneKind::Data,
            SpanKind::BucketReady => LaneKind::Buckets,
            SpanKind::Collective | SpanKind::Writeback => LaneKind::Comm,
            _ => LaneKind::Compute,
        }
    }

    /// The lane's display name (custom lanes use their own name).
    pub fn display_name(self) -> String {
        match self {
            LaneKind::Compute => "compute".to_owned(),
            LaneKind::Buckets => "buckets".to_owned(),
            LaneKind::Comm => "communication".to_owned(),
            LaneKind::Data => "data".to_owned(),
            LaneKind::Custom => "custom".to_owned(),
            LaneKind::Gpu { device, stream } => format!("gpu {device} stream {stream}"),
        }
    }
}

/// What [`Lane`] needs to know of its spans, gathered one span at a time
/// in their order: whether they are sorted (by start, ties longer first),
/// the longest duration and the latest end.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LaneStats {
    sorted: bool,
    last: (i64, i64),
    max_duration: i64,
    end_max: i64,
}

impl Default for LaneStats {
    fn default() -> LaneStats {
        LaneStats {
            sorted: true,
            last: (i64::MIN, i64::MAX),
            max_duration: 0,
            end_max: i64::MIN,
        }
    }
}

impl LaneStats {
    /// Takes in the lane's next span.
    #[inline(always)]
    pub(crate) fn add(&mut self, s: &Span) {
        let (start, end) = self.last;
        self.sorted &= start < s.start || (start == s.start && end >= s.end);
        self.max_duration = self.max_duration.max(s.duration());
        self.end_max = self.end_max.max(s.end);
        self.last = (s.start, s.end);
    }
}

/// One horizontal track of a rank: spans sorted by start time.
#[derive(Clone, Debug)]
pub struct Lane {
    /// What the lane shows.
    pub kind: LaneKind,
    /// Display name (`"compute"`, `"communication"`, `"gpu 0 stream 7"`, a
    /// custom name...).
    pub name: String,
    spans: Vec<Span>,
    max_duration: i64,
    end_max: i64,
}

impl Lane {
    /// A lane of `spans` in any order.
    #[cfg(test)]
    pub(crate) fn new(kind: LaneKind, name: String, spans: Vec<Span>) -> Lane {
        let mut stats = LaneStats::default();
        for s in &spans {
            stats.add(s);
        }
        Lane::with_stats(kind, name, spans, stats, None)
    }

    /// A lane of spans whose [`LaneStats`] were gathered as they came, and
    /// which all have lane id `id` when `id` is `None` (they are set to it
    /// otherwise).
    pub(crate) fn with_stats(
        kind: LaneKind,
        name: String,
        spans: Vec<Span>,
        stats: LaneStats,
        id: Option<LaneId>,
    ) -> Lane {
        let mut lane = Lane {
            kind,
            name,
            spans,
            max_duration: 0,
            end_max: i64::MIN,
        };
        if let Some(id) = id {
            for s in &mut lane.spans {
                s.lane = id;
            }
        }
        lane.finish_with(stats);
        lane
    }

    /// Sorts the spans (unless they already are: writers mostly emit them
    /// in order) and keeps the search bounds.
    fn finish_with(&mut self, stats: LaneStats) {
        if !stats.sorted {
            self.spans
                .sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
        }
        self.spans.shrink_to_fit();
        self.max_duration = stats.max_duration;
        self.end_max = stats.end_max;
    }

    pub(crate) fn spans_mut(&mut self) -> &mut [Span] {
        &mut self.spans
    }

    /// The spans, sorted by start (ties: longer first).
    pub fn spans(&self) -> &[Span] {
        &self.spans
    }

    /// The longest span's duration (ns).
    pub fn max_duration(&self) -> i64 {
        self.max_duration
    }

    /// Earliest start and latest end, `None` for an empty lane.
    pub fn time_range(&self) -> Option<(i64, i64)> {
        Some((self.spans.first()?.start, self.end_max))
    }

    /// The spans that overlap `[t0, t1)`, in start order, found by binary
    /// search (for drawing a window of a long timeline).
    pub fn overlapping(&self, t0: i64, t1: i64) -> impl Iterator<Item = &Span> {
        let lo_start = t0.saturating_sub(self.max_duration);
        let lo = self.spans.partition_point(|s| s.start < lo_start);
        let hi = self.spans.partition_point(|s| s.start < t1);
        self.spans[lo..hi.max(lo)]
            .iter()
            .filter(move |s| s.overlaps(t0, t1))
    }
}

/// A bucket layout and the first step it applies to.
#[derive(Clone, Debug, PartialEq)]
pub struct BucketLayout {
    /// First step of the layout.
    pub from_step: u64,
    /// When it changed (ns, rank 0's timeline), if known.
    pub t: Option<i64>,
    /// `"initial"` for the header's layout, else the record's reason.
    pub reason: String,
    /// Whether it came from the header (else from a `buckets` record).
    pub from_header: bool,
    /// The buckets.
    pub buckets: Vec<BucketInfo>,
}

/// Per-parameter gradient-ready times of one step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GradReady {
    /// The step.
    pub step: u64,
    /// Backward start (ns, rank 0's timeline).
    pub t0: i64,
    /// Per parameter index: ns after `t0`, negative if no gradient.
    pub offsets_ns: Box<[i64]>,
}

impl GradReady {
    /// When parameter `index`'s gradient was ready (ns, rank 0's timeline).
    pub fn ready_at(&self, index: usize) -> Option<i64> {
        let off = *self.offsets_ns.get(index)?;
        (off >= 0).then(|| self.t0.saturating_add(off))
    }
}

/// An `instant` record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InstantEvent {
    /// When (ns, rank 0's timeline).
    pub t: i64,
    /// The step, if any.
    pub step: Option<u64>,
    /// What happened.
    pub name: Sym,
    /// The `args` object as JSON text.
    pub args: Option<Sym>,
}

/// A `counter` record.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CounterSample {
    /// When (ns, rank 0's timeline).
    pub t: i64,
    /// What is counted.
    pub name: Sym,
    /// The value (NaN for JSON `null`).
    pub value: f64,
}

/// A `log` record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogEntry {
    /// When (ns, rank 0's timeline).
    pub t: i64,
    /// Severity.
    pub level: LogLevel,
    /// The message.
    pub message: Box<str>,
}

/// The `end` record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndInfo {
    /// When (ns, rank 0's timeline).
    pub t: i64,
    /// `"ok"`, `"error"`, `"panic"`...
    pub status: String,
    /// Details.
    pub message: Option<String>,
}

/// Everything one rank recorded.
#[derive(Clone, Debug)]
pub struct RankTrace {
    /// The header as written (timestamps in it are on the rank's own clock).
    pub header: Header,
    /// The file it came from.
    pub path: PathBuf,
    /// The file's format version.
    pub version: Version,
    /// Bucket layouts by first step (the header's first, if any).
    pub layouts: Vec<BucketLayout>,
    /// The lanes, in display order: compute, buckets, communication, data,
    /// custom lanes by name, GPU streams by device and stream.
    pub lanes: Vec<Lane>,
    /// Shared rare span fields, indexed by [`Span::extra_index`].
    pub extras: Vec<SpanExtra>,
    /// Gradient-ready records, by step.
    pub grad_ready: Vec<GradReady>,
    /// Instants, by time.
    pub instants: Vec<InstantEvent>,
    /// Counter samples, by time.
    pub counters: Vec<CounterSample>,
    /// Log messages, by time.
    pub logs: Vec<LogEntry>,
    /// The end record; `None` if the process did not finish normally.
    pub end: Option<EndInfo>,
    /// Whether the file's last line was cut off.
    pub truncated: bool,
    /// When the process ended, as its launcher recorded it in the run directory's manifest
    /// (ns, rank 0's timeline); `None` when no manifest says. What the rank never finished
    /// runs until then ([`Run::open_spans`]).
    pub stopped_at: Option<i64>,
}

impl RankTrace {
    /// The global rank.
    pub fn rank(&self) -> u32 {
        self.header.rank
    }

    /// The ranks of the process group DDP reduces over on this rank, when the header names one
    /// (`DDP(model, process_group=group)`); `None` for the whole world.
    pub fn ddp_group(&self) -> Option<&[u32]> {
        self.header
            .ddp
            .as_ref()
            .map(|d| d.group_ranks.as_slice())
            .filter(|g| !g.is_empty())
    }

    /// This rank's DDP process group's key ([`crate::trace::group_key`]: 0 for the whole
    /// world). Sequence numbers match across ranks only under one key.
    pub fn seq_group(&self) -> u32 {
        crate::trace::group_key(self.ddp_group().unwrap_or_default())
    }

    /// The offset that was added to this rank's timestamps (ns).
    pub fn offset_ns(&self) -> i64 {
        self.header.offset_to_rank0_ns
    }

    /// A lane by id.
    pub fn lane(&self, id: LaneId) -> Option<&Lane> {
        self.lanes.get(usize::from(id))
    }

    /// The id of the lane of `kind`, if the rank has one.
    pub fn lane_id(&self, kind: LaneKind) -> Option<LaneId> {
        self.lanes
            .iter()
            .position(|l| l.kind == kind)
            .and_then(|i| LaneId::try_from(i).ok())
    }

    /// Every span, lane by lane (each lane in start order).
    pub fn spans(&self) -> impl Iterator<Item = &Span> {
        self.lanes.iter().flat_map(|l| l.spans.iter())
    }

    /// The spans of one kind, lane by lane.
    pub fn spans_of_kind(&self, kind: SpanKind) -> impl Iterator<Item = &Span> {
        self.spans().filter(move |s| s.kind == kind)
    }

    /// The `step` spans in start order.
    pub fn steps(&self) -> impl Iterator<Item = &Span> {
        self.lane_id(LaneKind::Compute)
            .and_then(|id| self.lane(id))
            .into_iter()
            .flat_map(|l| l.spans.iter())
            .filter(|s| s.kind == SpanKind::Step)
    }

    /// Number of spans.
    pub fn span_count(&self) -> usize {
        self.lanes.iter().map(|l| l.spans.len()).sum()
    }

    /// The extra fields of a span of this rank.
    pub fn extra(&self, span: &Span) -> Option<&SpanExtra> {
        self.extras.get(span.extra_index()?)
    }

    /// The bucket layout in effect at `step`.
    pub fn layout_at(&self, step: u64) -> Option<&BucketLayout> {
        self.layouts.iter().rev().find(|l| l.from_step <= step)
    }

    /// Earliest and latest timestamp of anything recorded (spans, instants,
    /// counters, logs, gradient-ready times, end), and the process's end
    /// ([`RankTrace::stopped_at`]).
    pub fn time_range(&self) -> Option<(i64, i64)> {
        let mut lo = i64::MAX;
        let mut hi = i64::MIN;
        let mut see = |a: i64, b: i64| {
            lo = lo.min(a);
            hi = hi.max(b);
        };
        for l in &self.lanes {
            if let Some((a, b)) = l.time_range() {
                see(a, b);
            }
        }
        for i in &self.instants {
            see(i.t, i.t);
        }
        for c in &self.counters {
            see(c.t, c.t);
        }
        for l in &self.logs {
            see(l.t, l.t);
        }
        for g in &self.grad_ready {
            let last = g.offsets_ns.iter().copied().max().unwrap_or(0).max(0);
            see(g.t0, g.t0.saturating_add(last));
        }
        if let Some(e) = &self.end {
            see(e.t, e.t);
        }
        // The process's end extends a recording; it does not make one.
        (lo <= hi).then(|| (lo, self.stopped_at.map_or(hi, |t| hi.max(t))))
    }
}

/// At most this many missing ranks are listed by [`Run::missing_ranks`].
pub const MISSING_LISTED: usize = 64;

/// A loaded run: every rank's trace on rank 0's timeline.
#[derive(Clone, Debug)]
pub struct Run {
    /// The run id shared by all headers.
    pub run_id: String,
    /// Number of ranks the headers declare.
    pub world_size: u32,
    /// The ranks that have a trace, by rank.
    pub ranks: Vec<RankTrace>,
    /// The interned strings of all ranks.
    pub strings: Strings,
}

impl Run {
    /// A rank's trace.
    pub fn rank(&self, rank: u32) -> Option<&RankTrace> {
        self.ranks
            .binary_search_by_key(&rank, RankTrace::rank)
            .ok()
            .map(|i| &self.ranks[i])
    }

    /// The string of a symbol.
    pub fn str(&self, sym: Sym) -> &str {
        self.strings.resolve(sym)
    }

    /// How many ranks DDP's collectives (the sequence-numbered ones) run among: the size of
    /// the process group DDP was given (the largest, should ranks name groups of several sizes),
    /// else the world size. Bus bandwidth and the cost model count these ranks.
    pub fn ddp_group_size(&self) -> u32 {
        self.ranks
            .iter()
            .filter_map(|r| r.ddp_group())
            .map(|g| g.len() as u32)
            .max()
            .unwrap_or(self.world_size)
    }

    /// The process groups smaller than the world that DDP reduces over, each's ranks sorted,
    /// in order of their lowest rank; empty when DDP reduces over the whole world. Each group's
    /// ranks are compared only with each other.
    pub fn ddp_subgroups(&self) -> Vec<Vec<u32>> {
        let mut groups: Vec<Vec<u32>> = self
            .ranks
            .iter()
            .filter_map(|r| r.ddp_group())
            .map(|g| {
                let mut g = g.to_vec();
                g.sort_unstable();
                g
            })
            .collect();
        groups.sort_unstable();
        groups.dedup();
        groups
    }

    /// An instant's `args` object, parsed (`None` when it has none or it is not JSON).
    pub fn instant_args(&self, instant: &InstantEvent) -> Option<serde_json::Value> {
        serde_json::from_str(self.str(instant.args?)).ok()
    }

    /// Ranks of `0..world_size` without a trace: the first [`MISSING_LISTED`] of them (a
    /// header may declare a huge world; [`Run::missing_rank_count`] counts them all).
    pub fn missing_ranks(&self) -> Vec<u32> {
        (0..self.world_size)
            .filter(|&r| self.rank(r).is_none())
            .take(MISSING_LISTED)
            .collect()
    }

    /// How many ranks of `0..world_size` have no trace.
    pub fn missing_rank_count(&self) -> u64 {
        let present = self
            .ranks
            .iter()
            .filter(|r| r.rank() < self.world_size)
            .count() as u64;
        u64::from(self.world_size).saturating_sub(present)
    }

    /// Total number of spans.
    pub fn span_count(&self) -> usize {
        self.ranks.iter().map(RankTrace::span_count).sum()
    }

    /// Earliest and latest timestamp of anything in the run.
    pub fn time_range(&self) -> Option<(i64, i64)> {
        self.ranks
            .iter()
            .filter_map(RankTrace::time_range)
            .reduce(|(a, b), (c, d)| (a.min(c), b.max(d)))
    }

    /// A span with the context to resolve its strings and extras.
    pub fn span<'a>(&'a self, rank: &'a RankTrace, span: &'a Span) -> SpanRef<'a> {
        SpanRef {
            run: self,
            rank,
            span,
        }
    }

    /// The rank's trace as records again, timestamps back on the rank's own
    /// clock: the header, `buckets` records for later layouts, spans lane by
    /// lane, gradient-ready records, instants, counters, logs and the end
    /// record. Spans of unknown kinds come back as kind `"other"` (their
    /// original kind name is in [`SpanExtra::kind_name`]).
    pub fn to_records(&self, rank: &RankTrace) -> Vec<Record> {
        let off = rank.offset_ns();
        let raw = |t: i64| u64::try_from(t.saturating_sub(off)).unwrap_or(0);
        let s = |sym: Sym| std::borrow::Cow::Owned(self.str(sym).to_owned());
        let args = |sym: Option<Sym>| {
            sym.and_then(|a| serde_json::from_str(self.str(a)).ok())
                .map(Box::new)
        };
        let mut out = vec![Record::Header(rank.header.clone())];
        for l in &rank.layouts {
            if l.from_header {
                continue;
            }
            out.push(Record::Buckets(BucketsRecord {
                step: l.from_step,
                t: l.t.map(raw),
                reason: l.reason.clone(),
                buckets: l.buckets.clone(),
            }));
        }
        for lane in &rank.lanes {
            for sp in &lane.spans {
                let x = rank.extra(sp).copied().unwrap_or_default();
                let mut r = SpanRecord::new(sp.kind, 0, raw(sp.start), raw(sp.end));
                r.step = sp.step();
                r.queued = sp.queued().map(raw);
                r.name = sp.name.map(s);
                r.bucket = sp.bucket();
                r.bytes = sp.bytes();
                r.seq = sp.seq();
                r.op = sp.op.map(s);
                r.category = sp.category;
                r.params = x.params;
                r.transport = x.transport.map(s);
                r.algo = x.algo.map(s);
                r.dtype = x.dtype.map(s);
                r.peer = x.peer;
                r.device = x.device;
                r.stream = x.stream;
                r.correlation = x.correlation;
                r.args = args(x.args);
                if LaneKind::default_for(sp.kind, x.device, x.stream) != lane.kind {
                    r.lane = Some(match lane.kind.key() {
                        Some(k) => k.into(),
                        None => lane.name.clone().into(),
                    });
                }
                out.push(Record::Span(r));
            }
        }
        for g in &rank.grad_ready {
            out.push(Record::GradReady(GradReadyRecord {
                step: g.step,
                t0: raw(g.t0),
                offsets_ns: g.offsets_ns.to_vec(),
            }));
        }
        for i in &rank.instants {
            out.push(Record::Instant(InstantRecord {
                name: s(i.name),
                t: raw(i.t),
                step: i.step,
                args: args(i.args),
            }));
        }
        for c in &rank.counters {
            out.push(Record::Counter(CounterRecord {
                name: s(c.name),
                t: raw(c.t),
                value: c.value,
            }));
        }
        for l in &rank.logs {
            out.push(Record::Log(LogRecord {
                t: raw(l.t),
                level: l.level,
                message: l.message.to_string(),
            }));
        }
        if let Some(e) = &rank.end {
            out.push(Record::End(EndRecord {
                t: raw(e.t),
                status: e.status.clone(),
                message: e.message.clone(),
            }));
        }
        out
    }
}

/// A span together with its run and rank, resolving strings and extras.
#[derive(Clone, Copy)]
pub struct SpanRef<'a> {
    /// The run.
    pub run: &'a Run,
    /// The span's rank.
    pub rank: &'a RankTrace,
    /// The span.
    pub span: &'a Span,
}

impl Deref for SpanRef<'_> {
    type Target = Span;
    fn deref(&self) -> &Span {
        self.span
    }
}

impl<'a> SpanRef<'a> {
    fn extra_fields(&self) -> SpanExtra {
        self.rank.extra(self.span).copied().unwrap_or_default()
    }

    fn opt(&self, s: Option<Sym>) -> Option<&'a str> {
        let run: &'a Run = self.run;
        s.map(|s| run.str(s))
    }

    /// The kind's name; for [`SpanKind::Other`] the name found in the file.
    pub fn kind_name(&self) -> &'a str {
        match self.opt(self.extra_fields().kind_name) {
            Some(n) if self.span.kind == SpanKind::Other => n,
            _ => self.span.kind.as_str(),
        }
    }

    /// The span's `name`.
    pub fn name(&self) -> Option<&'a str> {
        self.opt(self.span.name)
    }

    /// What to show for the span: its name, else its kind name.
    pub fn label(&self) -> &'a str {
        self.name().unwrap_or_else(|| self.kind_name())
    }

    /// Collective operation.
    pub fn op(&self) -> Option<&'a str> {
        self.opt(self.span.op)
    }

    /// Transport.
    pub fn transport(&self) -> Option<&'a str> {
        self.opt(self.extra_fields().transport)
    }

    /// Collective algorithm.
    pub fn algo(&self) -> Option<&'a str> {
        self.opt(self.extra_fields().algo)
    }

    /// Element type.
    pub fn dtype(&self) -> Option<&'a str> {
        self.opt(self.extra_fields().dtype)
    }

    /// The `args` object as JSON text.
    pub fn args_json(&self) -> Option<&'a str> {
        self.opt(self.extra_fields().args)
    }

    /// Whether the span records a failure (`"args": {"error": true}`, the PyTorch module's
    /// mark of a collective whose future raised: the rank waited in it until it failed, it did
    /// not complete).
    pub fn failed(&self) -> bool {
        self.args_json()
            .filter(|a| a.contains("\"error\""))
            .and_then(|a| serde_json::from_str::<serde_json::Value>(a).ok())
            .and_then(|v| v.get("error").and_then(serde_json::Value::as_bool))
            == Some(true)
    }

    /// Number of parameters covered.
    pub fn params(&self) -> Option<u32> {
        self.extra_fields().params
    }

    /// Peer rank.
    pub fn peer(&self) -> Option<u32> {
        self.extra_fields().peer
    }

    /// GPU index.
    pub fn device(&self) -> Option<u32> {
        self.extra_fields().device
    }

    /// GPU stream id.
    pub fn stream(&self) -> Option<u64> {
        self.extra_fields().stream
    }

    /// Kernel correlation id.
    pub fn correlation(&self) -> Option<u64> {
        self.extra_fields().correlation
    }

    /// The span's lane.
    pub fn lane(&self) -> Option<&'a Lane> {
        let rank: &'a RankTrace = self.rank;
        rank.lane(self.span.lane)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(start: i64, end: i64) -> Span {
        Span::from_parts(SpanParts {
            start,
            end,
            queued: None,
            bytes: None,
            seq: None,
            step: None,
            bucket: None,
            name: None,
            op: None,
            extra: None,
            lane: 0,
            kind: SpanKind::User,
            category: None,
        })
    }

    #[test]
    fn span_is_64_bytes() {
        assert_eq!(std::mem::size_of::<Span>(), 64);
    }

    #[test]
    fn sentinels_read_as_none() {
        let s = span(1, 2);
        assert_eq!(s.step(), None);
        assert_eq!(s.bytes(), None);
        assert_eq!(s.queued(), None);
        assert_eq!(s.bucket(), None);
        assert_eq!(s.extra_index(), None);
    }

    #[test]
    fn interning() {
        let mut st = Strings::new();
        let a = st.intern("all_reduce").unwrap();
        let b = st.intern("ring").unwrap();
        assert_eq!(st.intern("all_reduce"), Some(a));
        assert_ne!(a, b);
        assert_eq!(st.resolve(b), "ring");
        assert_eq!(st.lookup("tcp"), None);
        assert_eq!(st.len(), 2);
    }

    #[test]
    fn lane_window_search() {
        let lane = Lane::new(
            LaneKind::Compute,
            "compute".into(),
            vec![
                span(50, 60),
                span(0, 100),
                span(10, 20),
                span(200, 300),
                span(30, 30),
            ],
        );
        let starts: Vec<i64> = lane.spans().iter().map(|s| s.start()).collect();
        assert_eq!(starts, vec![0, 10, 30, 50, 200]);
        assert_eq!(lane.max_duration(), 100);
        let hit: Vec<i64> = lane.overlapping(25, 55).map(|s| s.start()).collect();
        assert_eq!(hit, vec![0, 30, 50]);
        let hit: Vec<i64> = lane.overlapping(150, 210).map(|s| s.start()).collect();
        assert_eq!(hit, vec![200]);
        assert_eq!(lane.time_range(), Some((0, 300)));
    }

    #[test]
    fn default_lanes() {
        assert_eq!(
            LaneKind::default_for(SpanKind::Kernel, Some(1), Some(7)),
            LaneKind::Gpu {
                device: 1,
                stream: 7
            }
        );
        assert_eq!(
            LaneKind::default_for(SpanKind::Memcpy, None, None),
            LaneKind::Compute
        );
        assert_eq!(
            LaneKind::default_for(SpanKind::Collective, None, Some(3)),
            LaneKind::Comm
        );
        assert_eq!(LaneKind::from_key("communication"), Some(LaneKind::Comm));
    }
}
