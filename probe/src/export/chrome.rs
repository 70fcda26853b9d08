//! Chrome trace-event JSON, for Perfetto (ui.perfetto.dev) and
//! `chrome://tracing`.
//!
//! Layout: one process per rank (`pid` = rank, named `"rank R (host)"`,
//! sorted by rank) and one thread per lane (`"compute"`, `"buckets"`,
//! `"communication"`, `"data"`, custom lanes, `"gpu D stream S"`). Spans are
//! `"X"` events whose `ts`/`dur` are microseconds (with nanosecond
//! decimals) since the run's earliest timestamp; their `args` carry step,
//! bucket, bytes, seq, op and the other span fields. The viewers require
//! the events of one thread to nest, so spans of a lane that overlap without
//! nesting (concurrent collectives, gradient-ready windows of neighbouring
//! buckets) go to extra threads named `"<lane> (2)"`, `"<lane> (3)"`...
//! Instants, log messages and the end record are process-scoped `"i"`
//! events; counters are `"C"` events. The top-level `metadata` object names
//! the run and each rank's clock offset.
//!
//! The output is streamed: memory use does not grow with the run.

use std::fmt;
use std::io::{self, BufWriter, Write};

use crate::analysis::WhatIf;
use crate::model::{RankTrace, Run, Span};
use crate::open::OpenSpan;
use crate::trace::{SpanKind, FORMAT_NAME, VERSION};

/// What to export besides spans.
#[derive(Clone, Debug)]
pub struct ChromeOptions {
    /// Export `instant` records.
    pub instants: bool,
    /// Export `counter` records.
    pub counters: bool,
    /// Export `log` records and the `end` record.
    pub logs: bool,
    /// Simulated schedules (the advice's what-ifs) to show beside the ranks, one process each,
    /// placed at their anchors.
    pub what_if: Vec<WhatIf>,
}

impl Default for ChromeOptions {
    fn default() -> ChromeOptions {
        ChromeOptions {
            instants: true,
            counters: true,
            logs: true,
            what_if: Vec::new(),
        }
    }
}

/// Writes `run` as Chrome trace-event JSON with the default options.
pub fn write_chrome_trace<W: Write>(run: &Run, out: W) -> io::Result<()> {
    write_chrome_trace_with(run, out, &ChromeOptions::default())
}

/// Writes `run` as Chrome trace-event JSON.
pub fn write_chrome_trace_with<W: Write>(
    run: &Run,
    out: W,
    options: &ChromeOptions,
) -> io::Result<()> {
    let origin = run.time_range().map_or(0, |(t0, _)| t0);
    let mut e = Events {
        w: BufWriter::with_capacity(256 * 1024, out),
        first: true,
        origin,
    };
    e.w.write_all(b"{\"traceEvents\":[")?;
    let open = run.open_spans();
    for rank in &run.ranks {
        write_rank(&mut e, run, rank, &open, options)?;
    }
    let first_pid = run.ranks.iter().map(|r| r.rank() + 1).max().unwrap_or(0);
    for (k, w) in options.what_if.iter().enumerate() {
        write_what_if(&mut e, first_pid + k as u32, w)?;
    }
    e.w.write_all(b"\n],\"displayTimeUnit\":\"ms\",\"metadata\":{\"format\":")?;
    json_str(&mut e.w, FORMAT_NAME)?;
    e.w.write_all(b",\"format_version\":")?;
    json_str(&mut e.w, VERSION)?;
    e.w.write_all(b",\"run_id\":")?;
    json_str(&mut e.w, &run.run_id)?;
    write!(
        e.w,
        ",\"world_size\":{},\"time_origin_ns\":{origin},\"exported_by\":",
        run.world_size
    )?;
    json_str(&mut e.w, concat!("ddp-probe ", env!("CARGO_PKG_VERSION")))?;
    e.w.write_all(b",\"ranks\":[")?;
    for (i, rank) in run.ranks.iter().enumerate() {
        if i > 0 {
            e.w.write_all(b",")?;
        }
        write!(e.w, "{{\"rank\":{},\"hostname\":", rank.rank())?;
        json_str(&mut e.w, &rank.header.hostname)?;
        write!(
            e.w,
            ",\"pid\":{},\"offset_to_rank0_ns\":{},\"offset_uncertainty_ns\":{},\"file\":",
            rank.header.pid, rank.header.offset_to_rank0_ns, rank.header.offset_uncertainty_ns
        )?;
        json_str(&mut e.w, &rank.path.display().to_string())?;
        write!(e.w, ",\"finished\":{}}}", rank.end.is_some())?;
    }
    e.w.write_all(b"]}}\n")?;
    e.w.flush()
}

/// Microseconds with three decimals, from nanoseconds (exact).
struct Us(i64);

impl fmt::Display for Us {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let a = self.0.unsigned_abs();
        write!(f, "{sign}{}.{:03}", a / 1000, a % 1000)
    }
}

struct Events<W: Write> {
    w: BufWriter<W>,
    first: bool,
    origin: i64,
}

impl<W: Write> Events<W> {
    /// Starts an event object (writes the separator and `{`).
    fn open(&mut self) -> io::Result<()> {
        if self.first {
            self.first = false;
            self.w.write_all(b"\n{")
        } else {
            self.w.write_all(b",\n{")
        }
    }

    fn ts(&self, t: i64) -> Us {
        Us(t.saturating_sub(self.origin))
    }
}

fn json_str<W: Write>(w: &mut W, s: &str) -> io::Result<()> {
    serde_json::to_writer(w, s).map_err(io::Error::from)
}

/// Writes `"key":value` pairs separated by commas.
struct Fields {
    any: bool,
}

impl Fields {
    fn key<W: Write>(&mut self, w: &mut W, key: &str) -> io::Result<()> {
        if self.any {
            w.write_all(b",")?;
        }
        self.any = true;
        write!(w, "\"{key}\":")
    }

    fn num<W: Write>(&mut self, w: &mut W, key: &str, v: impl fmt::Display) -> io::Result<()> {
        self.key(w, key)?;
        write!(w, "{v}")
    }

    fn str<W: Write>(&mut self, w: &mut W, key: &str, v: &str) -> io::Result<()> {
        self.key(w, key)?;
        json_str(w, v)
    }

    fn raw<W: Write>(&mut self, w: &mut W, key: &str, json: &str) -> io::Result<()> {
        self.key(w, key)?;
        w.write_all(json.as_bytes())
    }
}

fn metadata<W: Write>(
    e: &mut Events<W>,
    pid: u32,
    tid: u32,
    name: &str,
    arg: &str,
    value: &dyn Fn(&mut BufWriter<W>) -> io::Result<()>,
) -> io::Result<()> {
    e.open()?;
    write!(
        e.w,
        "\"ph\":\"M\",\"pid\":{pid},\"tid\":{tid},\"name\":\"{name}\",\"args\":{{\"{arg}\":"
    )?;
    value(&mut e.w)?;
    e.w.write_all(b"}}")
}

/// A simulated schedule as a process of two threads: its backward, and its collectives.
fn write_what_if<W: Write>(e: &mut Events<W>, pid: u32, w: &WhatIf) -> io::Result<()> {
    let name = format!("what-if: {}", w.label);
    metadata(e, pid, 0, "process_name", "name", &|out| {
        json_str(out, &name)
    })?;
    metadata(e, pid, 0, "process_sort_index", "sort_index", &|out| {
        write!(out, "{pid}")
    })?;
    metadata(e, pid, 1, "thread_name", "name", &|out| {
        json_str(out, "compute")
    })?;
    metadata(e, pid, 2, "thread_name", "name", &|out| {
        json_str(out, "communication")
    })?;
    let at = |offset: f64| w.anchor_ns.saturating_add(offset.round() as i64);
    let mut event = |tid: u32, name: &str, start: i64, end: i64, args: &str| -> io::Result<()> {
        e.open()?;
        let ts = e.ts(start);
        let dur = Us(end.saturating_sub(start).max(0));
        write!(
            e.w,
            "\"ph\":\"X\",\"pid\":{pid},\"tid\":{tid},\"ts\":{ts},\"dur\":{dur},\"cat\":\"what-if\",\"name\":"
        )?;
        json_str(&mut e.w, name)?;
        write!(e.w, ",\"args\":{{{args}}}}}")
    };
    event(
        1,
        "backward",
        at(0.0),
        at(w.backward_end_ns),
        "\"simulated\":true",
    )?;
    for c in &w.collectives {
        event(
            2,
            "all_reduce",
            at(c.start_ns),
            at(c.end_ns),
            &format!(
                "\"bucket\":{},\"bytes\":{},\"simulated\":true",
                c.bucket, c.bytes
            ),
        )?;
    }
    Ok(())
}

fn write_rank<W: Write>(
    e: &mut Events<W>,
    run: &Run,
    rank: &RankTrace,
    open: &[OpenSpan],
    options: &ChromeOptions,
) -> io::Result<()> {
    let pid = rank.rank();
    let pname = if rank.header.hostname.is_empty() {
        format!("rank {pid}")
    } else {
        format!("rank {pid} ({})", rank.header.hostname)
    };
    metadata(e, pid, 0, "process_name", "name", &|w| json_str(w, &pname))?;
    metadata(e, pid, 0, "process_sort_index", "sort_index", &|w| {
        write!(w, "{pid}")
    })?;
    let mut next_tid: u32 = 1;
    for lane in &rank.lanes {
        let (rows, n_rows) = pack_rows(lane.spans());
        let base = next_tid;
        for row in 0..n_rows {
            let tid = base + row;
            let name = if row == 0 {
                lane.name.clone()
            } else {
                format!("{} ({})", lane.name, row + 1)
            };
            metadata(e, pid, tid, "thread_name", "name", &|w| json_str(w, &name))?;
            metadata(e, pid, tid, "thread_sort_index", "sort_index", &|w| {
                write!(w, "{tid}")
            })?;
        }
        for (span, row) in lane.spans().iter().zip(rows) {
            write_span(e, run, rank, span, pid, base + row)?;
        }
        next_tid = base.saturating_add(n_rows);
    }
    write_open_spans(e, rank, open, pid, next_tid)?;
    if options.instants {
        for i in &rank.instants {
            e.open()?;
            let ts = e.ts(i.t);
            write!(e.w, "\"ph\":\"i\",\"s\":\"p\",\"pid\":{pid},\"tid\":0,\"ts\":{ts},\"cat\":\"instant\",\"name\":")?;
            json_str(&mut e.w, run.str(i.name))?;
            e.w.write_all(b",\"args\":{")?;
            let mut f = Fields { any: false };
            if let Some(s) = i.step {
                f.num(&mut e.w, "step", s)?;
            }
            if let Some(a) = i.args {
                f.raw(&mut e.w, "args", run.str(a))?;
            }
            e.w.write_all(b"}}")?;
        }
    }
    if options.logs {
        for l in &rank.logs {
            e.open()?;
            let ts = e.ts(l.t);
            write!(e.w, "\"ph\":\"i\",\"s\":\"p\",\"pid\":{pid},\"tid\":0,\"ts\":{ts},\"cat\":\"log\",\"name\":")?;
            let short: String = l.message.chars().take(120).collect();
            json_str(&mut e.w, &format!("[{}] {short}", l.level))?;
            e.w.write_all(b",\"args\":{")?;
            let mut f = Fields { any: false };
            f.str(&mut e.w, "level", l.level.as_str())?;
            f.str(&mut e.w, "message", &l.message)?;
            e.w.write_all(b"}}")?;
        }
        if let Some(end) = &rank.end {
            e.open()?;
            let ts = e.ts(end.t);
            write!(e.w, "\"ph\":\"i\",\"s\":\"p\",\"pid\":{pid},\"tid\":0,\"ts\":{ts},\"cat\":\"end\",\"name\":")?;
            json_str(&mut e.w, &format!("end: {}", end.status))?;
            e.w.write_all(b",\"args\":{")?;
            let mut f = Fields { any: false };
            f.str(&mut e.w, "status", &end.status)?;
            if let Some(m) = &end.message {
                f.str(&mut e.w, "message", m)?;
            }
            e.w.write_all(b"}}")?;
        }
    }
    if options.counters {
        for c in rank.counters.iter().filter(|c| c.value.is_finite()) {
            e.open()?;
            let ts = e.ts(c.t);
            write!(
                e.w,
                "\"ph\":\"C\",\"pid\":{pid},\"tid\":0,\"ts\":{ts},\"name\":"
            )?;
            json_str(&mut e.w, run.str(c.name))?;
            write!(e.w, ",\"args\":{{\"value\":{}}}}}", c.value)?;
        }
    }
    Ok(())
}

/// What `rank` began and never finished ([`Run::open_spans`]), on a thread of its own,
/// "never ended", drawn to the end of the recording: named "<what> (unfinished)", category
/// `unfinished`, with `"unfinished":true` and the collective's fields in `args`.
fn write_open_spans<W: Write>(
    e: &mut Events<W>,
    rank: &RankTrace,
    open: &[OpenSpan],
    pid: u32,
    tid: u32,
) -> io::Result<()> {
    let open: Vec<&OpenSpan> = open.iter().filter(|o| o.rank == rank.rank()).collect();
    if open.is_empty() {
        return Ok(());
    }
    metadata(e, pid, tid, "thread_name", "name", &|w| {
        json_str(w, "never ended")
    })?;
    metadata(e, pid, tid, "thread_sort_index", "sort_index", &|w| {
        write!(w, "{tid}")
    })?;
    for o in open {
        e.open()?;
        let ts = e.ts(o.start);
        let dur = Us(o.end - o.start);
        write!(
            e.w,
            "\"ph\":\"X\",\"pid\":{pid},\"tid\":{tid},\"ts\":{ts},\"dur\":{dur},\"cat\":\"unfinished\",\"name\":"
        )?;
        json_str(&mut e.w, &format!("{} (unfinished)", o.what()))?;
        e.w.write_all(b",\"args\":{\"unfinished\":true")?;
        let mut f = Fields { any: true };
        f.str(&mut e.w, "kind", o.kind.as_str())?;
        if let Some(v) = o.step {
            f.num(&mut e.w, "step", v)?;
        }
        if let Some(c) = &o.collective {
            f.num(&mut e.w, "seq", c.seq)?;
            if let Some(v) = &c.op {
                f.str(&mut e.w, "op", v)?;
            }
            if let Some(v) = c.bucket {
                f.num(&mut e.w, "bucket", v)?;
            }
            if let Some(v) = c.bytes {
                f.num(&mut e.w, "bytes", v)?;
            }
        }
        e.w.write_all(b"}}")?;
    }
    Ok(())
}

fn write_span<W: Write>(
    e: &mut Events<W>,
    run: &Run,
    rank: &RankTrace,
    span: &Span,
    pid: u32,
    tid: u32,
) -> io::Result<()> {
    let s = run.span(rank, span);
    e.open()?;
    let ts = e.ts(s.start());
    let dur = Us(s.duration());
    write!(
        e.w,
        "\"ph\":\"X\",\"pid\":{pid},\"tid\":{tid},\"ts\":{ts},\"dur\":{dur},\"cat\":"
    )?;
    json_str(&mut e.w, s.kind_name())?;
    e.w.write_all(b",\"name\":")?;
    let base = match (s.name(), s.op()) {
        (Some(n), _) => n,
        (None, Some(op)) if s.kind() == SpanKind::Collective => op,
        _ => s.kind_name(),
    };
    match s.bucket() {
        Some(b) if s.name().is_none() => json_str(&mut e.w, &format!("{base} [bucket {b}]"))?,
        _ => json_str(&mut e.w, base)?,
    }
    e.w.write_all(b",\"args\":{")?;
    let mut f = Fields { any: false };
    let w = &mut e.w;
    if let Some(v) = s.step() {
        f.num(w, "step", v)?;
    }
    if let Some(v) = s.bucket() {
        f.num(w, "bucket", v)?;
    }
    if let Some(v) = s.bytes() {
        f.num(w, "bytes", v)?;
    }
    if let Some(v) = s.params() {
        f.num(w, "params", v)?;
    }
    if let Some(v) = s.seq() {
        f.num(w, "seq", v)?;
    }
    if let Some(v) = s.op() {
        f.str(w, "op", v)?;
    }
    if let Some(v) = s.algo() {
        f.str(w, "algo", v)?;
    }
    if let Some(v) = s.transport() {
        f.str(w, "transport", v)?;
    }
    if let Some(v) = s.peer() {
        f.num(w, "peer", v)?;
    }
    if let Some(v) = s.dtype() {
        f.str(w, "dtype", v)?;
    }
    if let Some(q) = s.queued() {
        f.num(w, "queue_wait_us", Us(s.start().saturating_sub(q)))?;
    }
    if let Some(v) = s.device() {
        f.num(w, "device", v)?;
    }
    if let Some(v) = s.stream() {
        f.num(w, "stream", v)?;
    }
    if let Some(v) = s.category() {
        f.str(w, "category", v.as_str())?;
    }
    if let Some(v) = s.correlation() {
        f.num(w, "correlation", v)?;
    }
    if let Some(a) = s.args_json() {
        f.raw(w, "args", a)?;
    }
    w.write_all(b"}}")
}

/// Assigns each span of a lane (sorted by start, longer first on ties) a
/// row such that the spans of a row nest properly. Returns the rows and
/// their count.
pub fn pack_rows(spans: &[Span]) -> (Vec<u32>, u32) {
    let mut stacks: Vec<Vec<i64>> = Vec::new();
    let mut rows = Vec::with_capacity(spans.len());
    for s in spans {
        let mut placed = None;
        for (r, stack) in stacks.iter_mut().enumerate() {
            while stack.last().is_some_and(|&end| end <= s.start()) {
                stack.pop();
            }
            if stack.last().is_none_or(|&end| s.end() <= end) {
                stack.push(s.end());
                placed = Some(r);
                break;
            }
        }
        let r = match placed {
            Some(r) => r,
            None => {
                stacks.push(vec![s.end()]);
                stacks.len() - 1
            }
        };
        rows.push(u32::try_from(r).unwrap_or(u32::MAX));
    }
    let n = u32::try_from(stacks.len()).unwrap_or(u32::MAX).max(1);
    (rows, n)
}
