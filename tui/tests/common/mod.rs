//! A small hand-made run for the timeline's tests: 2 ranks, 3 steps, 2
//! gradient buckets, a GPU stream on rank 0 and a custom lane on rank 1
//! whose name and spans carry control characters.
//!
//! Times (ms after the start of the run) of every step, rank 1 one
//! millisecond later than rank 0:
//!
//! | step | start | data  | forward | backward | b1 all-reduce | end |
//! |------|-------|-------|---------|----------|---------------|-----|
//! | 0    | 0     | 0–5   | 5–25    | 25–65    | 65–75         | 86  |
//! | 1    | 90    | 0–60  | 60–80   | 80–120   | 120–130       | 141 |
//! | 2    | 235   | 0–5   | 5–25    | 25–65    | 65–95         | 106 |
//!
//! Step 0 is warm-up; step 1 is the slowest (a data stall), step 2 has the
//! most exposed communication (30 ms of its all-reduce after backward).

#![allow(dead_code)]

use probe::model::Run;
use probe::trace::{
    BucketInfo, DdpConfig, EndRecord, Header, KernelCategory, ParamInfo, Record, SpanKind,
    SpanRecord,
};
use probe_tui::{App, Options, Timeline};

/// Time 0 of the fixture (ns since the Unix epoch).
pub const T0: u64 = 1_700_000_000_000_000_000;
/// One millisecond in ns.
pub const MS: u64 = 1_000_000;

/// Step starts (ms).
pub const STEP_STARTS: [u64; 3] = [0, 90, 235];

fn header(rank: u32) -> Header {
    let mut h = Header::new("fixture", rank, 2);
    h.hostname = "node0".into();
    h.pid = 100 + rank;
    h.start_ns = T0;
    h.program = Some("train".into());
    h.argv = Some(vec!["train".into()]);
    let param = |index: u32, name: &str, bytes: u64| ParamInfo {
        index,
        name: name.into(),
        shape: vec![bytes / 4],
        dtype: "float32".into(),
        numel: bytes / 4,
        bytes,
    };
    h.with_ddp(DdpConfig {
        bucket_cap_mb_list: None,
        backend: "gloo".into(),
        bucket_cap_mb: Some(25.0),
        first_bucket_bytes: Some(1 << 20),
        find_unused_parameters: false,
        buffers: Vec::new(),
        static_graph: false,
        gradient_as_bucket_view: false,
        params: vec![
            param(0, "fc1.weight", 131_072),
            param(1, "fc1.bias", 1_024),
            param(2, "fc2.weight", 10_240),
            param(3, "fc2.bias", 40),
        ],
        buckets: vec![
            BucketInfo {
                id: 0,
                params: vec![3, 2],
                bytes: 10_280,
            },
            BucketInfo {
                id: 1,
                params: vec![1, 0],
                bytes: 132_096,
            },
        ],
        group_ranks: Vec::new(),
    })
}

/// The records of one rank.
pub fn rank_records(rank: u32) -> Vec<Record> {
    let shift = u64::from(rank) * MS;
    let t = |ms: u64| T0 + ms * MS + shift;
    let mut out = vec![Record::Header(header(rank))];
    let mut seq = 1;
    for (step, &s) in STEP_STARTS.iter().enumerate() {
        let step = step as u64;
        // Step 1 waits 55 ms longer for data; step 2's last all-reduce is
        // 20 ms slower.
        let d = if step == 1 { 55 } else { 0 };
        let slow = if step == 2 { 20 } else { 0 };
        let at = |ms: u64| t(s + ms);
        let span = |kind, a: u64, b: u64| SpanRecord::new(kind, step, at(a), at(b));
        out.push(Record::Span(span(SpanKind::DataWait, 0, 5 + d)));
        out.push(Record::Span(span(SpanKind::Forward, 5 + d, 25 + d)));
        out.push(Record::Span(span(SpanKind::Backward, 25 + d, 65 + d)));
        let buckets = [
            (0u32, 30, 40, 41, 50, 10_280u64),
            (1, 50, 64, 65, 75 + slow, 132_096),
        ];
        for (b, r0, r1, c0, c1, bytes) in buckets {
            out.push(Record::Span(
                span(SpanKind::BucketReady, r0 + d, r1 + d)
                    .bucket(b)
                    .bytes(bytes)
                    .params(2),
            ));
            out.push(Record::Span(
                span(SpanKind::Collective, c0 + d, c1 + d)
                    .queued(at(r1 + d))
                    .op("all_reduce")
                    .bucket(b)
                    .bytes(bytes)
                    .seq(seq)
                    .algo("ring")
                    .transport("tcp")
                    .dtype("float32"),
            ));
            seq += 1;
        }
        out.push(Record::Span(
            span(SpanKind::Writeback, 75 + slow + d, 76 + slow + d)
                .bucket(1)
                .bytes(132_096),
        ));
        out.push(Record::Span(span(
            SpanKind::Optimizer,
            76 + slow + d,
            86 + slow + d,
        )));
        out.push(Record::Span(span(SpanKind::Step, 0, 86 + slow + d)));
        if rank == 0 && step == 0 {
            out.push(Record::Span(
                span(SpanKind::Kernel, 6, 24)
                    .name("fwd_gemm\u{7}")
                    .device(0)
                    .stream(7)
                    .category(KernelCategory::Compute)
                    .correlation(11),
            ));
        }
        if rank == 1 && step == 0 {
            out.push(Record::Span(
                span(SpanKind::User, 1, 3)
                    .name("tokenize\u{1b}[2J")
                    .lane("loader\u{1b}[31m"),
            ));
            out.push(Record::Span(
                span(SpanKind::User, 50, 50)
                    .name("mark")
                    .lane("loader\u{1b}[31m"),
            ));
        }
    }
    out.push(Record::End(EndRecord {
        t: t(345),
        status: "ok".into(),
        message: None,
    }));
    out
}

/// The fixture run, loaded.
pub fn run() -> Run {
    let (run, _warnings) =
        probe::reader::load_records(&[rank_records(0), rank_records(1)]).expect("fixture loads");
    run
}

/// A viewer of the fixture on a `w` × `h` screen.
pub fn app(w: u16, h: u16) -> App {
    app_with(w, h, &Options::default())
}

/// A viewer of the fixture with options.
pub fn app_with(w: u16, h: u16, options: &Options) -> App {
    let mut app = App::new(Timeline::new(run()), options);
    app.resize(w, h);
    app
}

/// The screen as text lines.
pub fn screen(app: &App, w: u16, h: u16) -> Vec<String> {
    use ratatui::buffer::Buffer;
    use ratatui::layout::Rect;
    use ratatui::widgets::Widget;
    let area = Rect::new(0, 0, w, h);
    let mut buf = Buffer::empty(area);
    app.render(area, &mut buf);
    probe_tui::buffer_text(&buf)
}

/// Nanoseconds of `ms` milliseconds after the start of the run.
pub fn at_ms(ms: f64) -> i64 {
    T0 as i64 + (ms * MS as f64) as i64
}
