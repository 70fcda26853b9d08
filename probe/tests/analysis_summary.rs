//! `analysis::summarize` against numbers worked out by hand.

mod analysis_util;

use analysis_util::{at, header, load, ns, span};
use probe::analysis::{self, SamplesSource, SummaryOptions, WarmupReason};
use probe::trace::{
    op, BucketInfo, BucketsRecord, CounterRecord, DdpConfig, KernelCategory, ParamInfo, Record,
    SpanKind,
};

fn ddp() -> DdpConfig {
    let p = |index: u32, bytes: u64| ParamInfo {
        index,
        name: format!("p{index}"),
        shape: vec![bytes / 4],
        dtype: "float32".to_owned(),
        numel: bytes / 4,
        bytes,
    };
    DdpConfig {
        bucket_cap_mb_list: None,
        backend: "gloo".to_owned(),
        bucket_cap_mb: Some(25.0),
        first_bucket_bytes: Some(1 << 20),
        find_unused_parameters: false,
        buffers: Vec::new(),
        static_graph: false,
        gradient_as_bucket_view: false,
        params: vec![
            p(0, 20_000_000),
            p(1, 20_000_000),
            p(2, 10_000_000),
            p(3, 10_000_000),
        ],
        buckets: vec![BucketInfo {
            id: 0,
            params: vec![3, 2, 1, 0],
            bytes: 60_000_000,
        }],
        group_ranks: Vec::new(),
    }
}

fn layout() -> Vec<BucketInfo> {
    vec![
        BucketInfo {
            id: 0,
            params: vec![3, 2],
            bytes: 20_000_000,
        },
        BucketInfo {
            id: 1,
            params: vec![1, 0],
            bytes: 40_000_000,
        },
    ]
}

fn coll(step: u64, a: f64, b: f64, bucket: Option<u32>, bytes: u64, seq: u64) -> Record {
    let mut s = span(SpanKind::Collective, step, a, b)
        .op(op::ALL_REDUCE)
        .transport("tcp")
        .bytes(bytes)
        .seq(seq);
    if let Some(id) = bucket {
        s = s.bucket(id);
    }
    Record::Span(s)
}

/// Two ranks with the header of [`ddp`] and `steps` steps 100 ms apart, each step's records
/// made by `step_records(step, its offset in ms)`.
fn two_ranks(steps: u64, step_records: impl Fn(u64, f64) -> Vec<Record>) -> Vec<Vec<Record>> {
    (0..2u32)
        .map(|rank| {
            let mut r = vec![header(rank, 2, Some(ddp()))];
            for step in 0..steps {
                r.extend(step_records(step, 100.0 * step as f64));
            }
            r
        })
        .collect()
}

fn samples(t: f64) -> Record {
    Record::Counter(CounterRecord {
        name: "samples".into(),
        t: at(t),
        value: 32.0,
    })
}

/// One steady step at offset `o` (ms): step 100, data 0..10, forward
/// 10..20, backward 20..80, bucket 0 ready 30..48 and reduced 50..70 (rank
/// 1 joins at 52), writeback 70..72, bucket 1 ready 60..75 and reduced
/// 75..95, optimizer 95..99.
fn steady_step(rank: u32, step: u64, o: f64) -> Vec<Record> {
    let s = |k, a: f64, b: f64| Record::Span(span(k, step, o + a, o + b));
    let b0_start = if rank == 1 { 52.0 } else { 50.0 };
    vec![
        s(SpanKind::DataWait, 0.0, 10.0),
        s(SpanKind::Forward, 10.0, 20.0),
        s(SpanKind::Backward, 20.0, 80.0),
        Record::Span(span(SpanKind::BucketReady, step, o + 30.0, o + 48.0).bucket(0)),
        Record::Span(span(SpanKind::BucketReady, step, o + 60.0, o + 75.0).bucket(1)),
        coll(step, o + b0_start, o + 70.0, Some(0), 20_000_000, 10 * step),
        s(SpanKind::Writeback, 70.0, 72.0),
        coll(step, o + 75.0, o + 95.0, Some(1), 40_000_000, 10 * step + 1),
        s(SpanKind::Optimizer, 95.0, 99.0),
        s(SpanKind::Step, 0.0, 100.0),
        samples(o + 100.0),
    ]
}

/// Two ranks, four steps: step 0 (first iteration, 200 ms, one bucket),
/// step 1 (bucket rebuild, 150 ms), steps 2 and 3 steady.
fn hand_run() -> Vec<Vec<Record>> {
    (0..2u32)
        .map(|rank| {
            let mut r = vec![header(rank, 2, Some(ddp()))];
            // Initial broadcast, outside any step.
            r.push(Record::Span(
                span(SpanKind::Collective, 0, 5.0, 15.0)
                    .without_step()
                    .op(op::BROADCAST)
                    .bytes(60_000_000)
                    .seq(0),
            ));
            // Step 0: 20..220.
            let s0 = |k, a: f64, b: f64| Record::Span(span(k, 0, a, b));
            r.extend([
                s0(SpanKind::DataWait, 20.0, 30.0),
                s0(SpanKind::Forward, 30.0, 40.0),
                s0(SpanKind::Backward, 40.0, 140.0),
                coll(0, 140.0, 210.0, Some(0), 60_000_000, 1),
                s0(SpanKind::Optimizer, 210.0, 215.0),
                s0(SpanKind::Step, 20.0, 220.0),
                samples(220.0),
            ]);
            // Step 1: 220..370, after the rebuild.
            r.push(Record::Buckets(BucketsRecord {
                step: 1,
                t: Some(at(220.0)),
                reason: "rebuild".to_owned(),
                buckets: layout(),
            }));
            let s1 = |k, a: f64, b: f64| Record::Span(span(k, 1, a, b));
            r.extend([
                s1(SpanKind::DataWait, 220.0, 230.0),
                s1(SpanKind::Forward, 230.0, 240.0),
                s1(SpanKind::Backward, 240.0, 300.0),
                coll(1, 310.0, 320.0, Some(0), 20_000_000, 2),
                coll(1, 320.0, 360.0, Some(1), 40_000_000, 3),
                s1(SpanKind::Optimizer, 360.0, 365.0),
                s1(SpanKind::Step, 220.0, 370.0),
                samples(370.0),
            ]);
            // Steady steps 2 (400..500) and 3 (500..600): seqs 20, 21, 30, 31.
            r.extend(steady_step(rank, 2, 400.0));
            r.extend(steady_step(rank, 3, 500.0));
            if rank == 0 {
                // A GPU kernel does not count in the breakdown.
                r.push(Record::Span(
                    span(SpanKind::Kernel, 2, 400.0, 500.0)
                        .device(0)
                        .stream(7)
                        .category(KernelCategory::Compute),
                ));
            }
            r
        })
        .collect()
}

#[test]
fn steady_step_breakdown_matches_hand_computation() {
    let run = load(&hand_run());
    let steps = analysis::step_breakdowns(&run, &SummaryOptions::default());
    assert_eq!(steps.len(), 8);
    let steady: Vec<_> = steps.iter().filter(|s| s.warmup.is_none()).collect();
    assert_eq!(steady.len(), 4);
    for s in &steady {
        assert_eq!(s.step_ns, ns(100.0));
        assert_eq!(s.data_wait_ns, ns(10.0));
        assert_eq!(s.forward_ns, ns(10.0));
        assert_eq!(s.backward_ns, ns(60.0));
        assert_eq!(s.optimizer_ns, ns(4.0));
        assert_eq!(s.writeback_ns, ns(2.0));
        // Busy 0..99 → 1 ms other.
        assert_eq!(s.other_ns, ns(1.0));
        assert_eq!(s.comm_tail_ns, ns(15.0));
        assert_eq!(s.samples, Some(32.0));
        // Compute = 10..80 ∪ 95..99.
        if s.rank == 0 {
            // 50..70 and 75..95: 40 total, 20 + 5 overlapped, 15 exposed.
            assert_eq!(s.comm_ns, ns(40.0));
            assert_eq!(s.comm_overlapped_ns, ns(25.0));
        } else {
            // 52..70 and 75..95.
            assert_eq!(s.comm_ns, ns(38.0));
            assert_eq!(s.comm_overlapped_ns, ns(23.0));
        }
        assert_eq!(s.comm_exposed_ns, ns(15.0));
    }
    let reasons: Vec<_> = steps.iter().filter_map(|s| s.warmup).collect();
    assert_eq!(
        reasons,
        vec![
            WarmupReason::FirstSteps,
            WarmupReason::Rebuild,
            WarmupReason::FirstSteps,
            WarmupReason::Rebuild
        ]
    );
    // Step 0: one collective 140..210 against compute 30..140, 210..215.
    let s0 = &steps[0];
    assert_eq!(s0.step, Some(0));
    assert_eq!(s0.comm_ns, ns(70.0));
    assert_eq!(s0.comm_overlapped_ns, 0);
    assert_eq!(s0.comm_exposed_ns, ns(70.0));
    assert_eq!(s0.other_ns, ns(5.0));
}

#[test]
fn summary_statistics_exclude_warmup() {
    let run = load(&hand_run());
    let sum = analysis::summarize(&run, &SummaryOptions::default());
    assert_eq!(sum.steady_steps, 2);
    let all = sum.overall.as_ref().expect("steady steps");
    assert_eq!(all.steps, 4);
    assert_eq!(all.step.median, 100e6);
    assert_eq!(all.step.p95, 100e6);
    assert_eq!(all.comm.median, 39e6);
    assert_eq!(all.comm.mean, 39e6);
    assert_eq!(all.comm.min, 38e6);
    assert_eq!(all.totals.comm_ns, ns(156.0));
    assert_eq!(all.totals.comm_overlapped_ns, ns(96.0));
    assert_eq!(all.totals.comm_exposed_ns, ns(60.0));
    assert_eq!(all.totals.step_ns, ns(400.0));
    // Per rank.
    assert_eq!(sum.ranks.len(), 2);
    let r1 = sum.ranks[1].breakdown.as_ref().unwrap();
    assert_eq!(r1.comm_overlapped.median, 23e6);
    assert_eq!(sum.ranks[1].steps, 2);
    assert_eq!(sum.ranks[1].warmup_steps, 2);
    // Throughput: 10 steps/s; 64 samples in 0.2 s per rank, two ranks.
    assert_eq!(sum.throughput.steps_per_s, Some(10.0));
    assert_eq!(sum.ranks[0].samples_per_s, Some(320.0));
    assert_eq!(sum.throughput.samples_per_s, Some(640.0));
    assert_eq!(sum.throughput.samples_source, Some(SamplesSource::Counter));
    // Warm-up steps apart.
    assert_eq!(sum.warmup.len(), 2);
    assert_eq!(sum.warmup[0].step, Some(0));
    assert_eq!(sum.warmup[0].reason, WarmupReason::FirstSteps);
    assert_eq!(sum.warmup[0].breakdown.step.max, 200e6);
    assert_eq!(sum.warmup[1].reason, WarmupReason::Rebuild);
    assert_eq!(sum.warmup[1].breakdown.step.max, 150e6);
    assert_eq!(sum.warmup[1].breakdown.steps, 2);
}

#[test]
fn all_reduces_timed_after_their_steps_say_the_clocks_differ() {
    // Host-timed spans: every all-reduce ends inside its step, no note.
    let run = load(&hand_run());
    let sum = analysis::summarize(&run, &SummaryOptions::default());
    assert!(
        !sum.notes.iter().any(|n| n.contains("two clocks")),
        "{:?}",
        sum.notes
    );
    // The same run with every bucket all-reduce moved 30 ms later, as GPU-timed spans land
    // when the GPU runs behind the host.
    let shifted: Vec<Vec<Record>> = hand_run()
        .into_iter()
        .map(|rank| {
            rank.into_iter()
                .map(|r| match r {
                    Record::Span(mut s) if s.kind == SpanKind::Collective && s.bucket.is_some() => {
                        s.start += ns(30.0) as u64;
                        s.end += ns(30.0) as u64;
                        Record::Span(s)
                    }
                    r => r,
                })
                .collect()
        })
        .collect();
    let sum = analysis::summarize(&load(&shifted), &SummaryOptions::default());
    let note = sum
        .notes
        .iter()
        .find(|n| n.contains("two clocks"))
        .unwrap_or_else(|| panic!("no note: {:?}", sum.notes));
    // Per rank, 7 bucket all-reduces: step 0's ends at 240 (its step at 220: 20 after); step
    // 1's at 350 and 390 (step 370: the second 20 after); steps 2 and 3 end at 100 past their
    // offsets and their all-reduces at 100 (not after) and 125 (25 after). 4 of 7 per rank;
    // the median of 20, 20, 25, 25 twice over is the fifth of eight, 25 ms.
    assert!(
        note.starts_with("8 of 14 bucket all-reduces ended after their step did"),
        "{note}"
    );
    assert!(note.contains("(a median 25.0 ms after)"), "{note}");
}

#[test]
fn one_rank_has_no_bus_bandwidth() {
    // nccl-tests' factor for an all-reduce of one rank is 2(1-1)/1 = 0: nothing crosses a bus,
    // so no busbw is given, while algbw (bytes over time) still is.
    let mut r = vec![header(0, 1, Some(ddp()))];
    r.extend(steady_step(0, 2, 400.0));
    r.extend(steady_step(0, 3, 500.0));
    let sum = analysis::summarize(&load(&[r]), &SummaryOptions::default());
    let op = sum.ops.first().expect("the all-reduces");
    assert!(
        op.algbw_bytes_per_s.is_some() && op.busbw_bytes_per_s.is_none(),
        "{op:?}"
    );
    assert!(!sum.buckets.is_empty());
    for b in &sum.buckets {
        assert!(b.algbw_bytes_per_s.is_some(), "{b:?}");
        assert_eq!(
            (b.busbw_bytes_per_s, b.busbw_transfer_bytes_per_s),
            (None, None),
            "{b:?}"
        );
    }
}

#[test]
fn per_bucket_statistics() {
    let run = load(&hand_run());
    let sum = analysis::summarize(&run, &SummaryOptions::default());
    assert_eq!(sum.buckets.len(), 2);
    let b0 = &sum.buckets[0];
    assert_eq!(b0.bucket, 0);
    assert_eq!(b0.op, "all_reduce");
    assert_eq!(b0.calls, 4);
    assert_eq!(b0.bytes, Some(20_000_000));
    assert_eq!(b0.params, Some(2));
    // Ready at 48 − backward start 20.
    assert_eq!(b0.ready_after_backward_start.median, 28e6);
    assert_eq!(b0.ready_after_backward_start.n, 4);
    // Rank 0 starts 2 ms after ready, rank 1 4 ms.
    assert_eq!(b0.launch_delay.median, 3e6);
    assert_eq!(b0.launch_delay.max, 4e6);
    assert_eq!(b0.duration.median, 19e6);
    // 4 × 20 MB in 20 + 20 + 18 + 18 ms; two ranks: busbw = algbw.
    let algbw = 80e6 / 0.076;
    assert!((b0.algbw_bytes_per_s.unwrap() - algbw).abs() < 1e-3);
    assert!((b0.busbw_bytes_per_s.unwrap() - algbw).abs() < 1e-3);
    assert_eq!(b0.exposed.max, 0.0);
    assert_eq!(b0.skew.n, 2);
    assert_eq!(b0.skew.median, 2e6);

    let b1 = &sum.buckets[1];
    assert_eq!(b1.ready_after_backward_start.median, 55e6);
    assert_eq!(b1.launch_delay.max, 0.0);
    assert_eq!(b1.algbw_bytes_per_s, Some(2e9));
    assert_eq!(b1.exposed.median, 15e6);
    assert_eq!(b1.exposed_total_ns, ns(60.0));
    assert_eq!(b1.skew.max, 0.0);

    // Per op: the broadcast and the warm-up collectives are not counted.
    assert_eq!(sum.ops.len(), 1);
    let o = &sum.ops[0];
    assert_eq!(o.op, "all_reduce");
    assert_eq!(o.calls, 8);
    assert_eq!(o.bytes_total, 240_000_000);
    assert_eq!(o.bytes_mean, 30e6);
    assert_eq!(o.latency_total_ns, ns(156.0));
    assert_eq!(o.latency.mean, 19.5e6);
    assert!((o.algbw_bytes_per_s.unwrap() - 240e6 / 0.156).abs() < 1e-3);
    assert_eq!(o.bus_factor, 1.0);

    // Waiting vs transfer. Bucket 0: rank 0 50..70, rank 1 52..70: the transfer is the
    // shortest call, 18 ms; rank 0 waited 2 ms of its 20. Bucket 1: both 75..95, no waiting.
    assert_eq!(b0.transfer.median, 18e6);
    assert_eq!(b0.waiting.median, 1e6); // 2 ms over two calls
    assert!((b0.waiting_share.unwrap() - 4.0 / 76.0).abs() < 1e-12);
    assert!((b0.busbw_transfer_bytes_per_s.unwrap() - 20e6 / 0.018).abs() < 1e-3);
    assert_eq!(b1.transfer.median, 20e6);
    assert_eq!(b1.waiting_share, Some(0.0));
    let split = sum.comm_split.as_ref().expect("a split");
    assert_eq!(split.collectives, 4);
    assert_eq!(split.total_ns, ns(156.0));
    assert_eq!(split.waiting_ns, ns(4.0));
    // Bucket 1's calls are exposed 80..95, within their 20 ms transfer: no waiting exposed.
    assert_eq!(split.exposed_ns, ns(60.0));
    assert_eq!(split.exposed_waiting_ns, 0);
    let r0 = &sum.ranks[0];
    assert_eq!(r0.waiting_per_step_ns, Some(2e6));
    assert!((r0.waiting_share.unwrap() - 4.0 / 80.0).abs() < 1e-12);
    assert_eq!(sum.ranks[1].waiting_share, Some(0.0));

    // Arrival: rank 1 is last at the bucket-0 collectives, bucket 1 ties.
    let st = &sum.stragglers;
    assert_eq!(st.collectives, 4);
    assert_eq!(st.ties, 2);
    assert_eq!(st.steps, 2);
    assert_eq!(st.chance, 0.5);
    assert_eq!(st.ranks.len(), 1);
    assert_eq!(st.ranks[0].rank, 1);
    assert_eq!(st.ranks[0].last, 2);
    assert_eq!(st.ranks[0].steps_last, 2);
    assert_eq!(st.ranks[0].wait_caused_ns, ns(4.0));
    // Two steps are not enough to call it more than chance.
    assert!(st.straggler.is_none());
}

#[test]
fn warmup_options_change_what_counts() {
    let run = load(&hand_run());
    let opts = SummaryOptions {
        warmup_steps: 0,
        exclude_rebuild: false,
        batch_size: None,
    };
    let sum = analysis::summarize(&run, &opts);
    assert!(sum.warmup.is_empty());
    let all = sum.overall.unwrap();
    assert_eq!(all.steps, 8);
    assert_eq!(all.step.max, 200e6);
    // Bucket 0 now also has the 70 ms call of step 0 and the 10 ms one of
    // step 1 on each rank.
    assert_eq!(sum.buckets[0].calls, 8);
}

#[test]
fn bus_bandwidth_factor_for_four_ranks() {
    // Four ranks, one step each, one all-reduce and one all-gather of
    // 10 MB taking 10 ms: algbw 1 GB/s.
    let ranks: Vec<Vec<Record>> = (0..4u32)
        .map(|r| {
            vec![
                header(r, 4, None),
                Record::Span(span(SpanKind::Step, 0, 0.0, 30.0)),
                Record::Span(
                    span(SpanKind::Collective, 0, 5.0, 15.0)
                        .op(op::ALL_REDUCE)
                        .bytes(10_000_000)
                        .bucket(0)
                        .seq(1),
                ),
                Record::Span(
                    span(SpanKind::Collective, 0, 15.0, 25.0)
                        .op(op::ALL_GATHER)
                        .bytes(10_000_000)
                        .seq(2),
                ),
            ]
        })
        .collect();
    let run = load(&ranks);
    let opts = SummaryOptions {
        warmup_steps: 0,
        ..SummaryOptions::default()
    };
    let sum = analysis::summarize(&run, &opts);
    let ar = sum.ops.iter().find(|o| o.op == "all_reduce").unwrap();
    assert_eq!(ar.algbw_bytes_per_s, Some(1e9));
    assert_eq!(ar.busbw_bytes_per_s, Some(1.5e9));
    let ag = sum.ops.iter().find(|o| o.op == "all_gather").unwrap();
    assert_eq!(ag.busbw_bytes_per_s, Some(0.75e9));
    assert_eq!(sum.buckets[0].busbw_bytes_per_s, Some(1.5e9));
    // Everybody starts together: all ties, no straggler.
    assert_eq!(sum.stragglers.ties, 2);
    // No compute at all: every collective is exposed.
    let all = sum.overall.unwrap();
    assert_eq!(all.totals.comm_exposed_ns, 4 * ns(20.0));
    assert_eq!(all.totals.other_ns, 4 * ns(10.0));
}

#[test]
fn batch_size_option_gives_samples_per_second() {
    let ranks: Vec<Vec<Record>> = (0..2u32)
        .map(|r| {
            let mut v = vec![header(r, 2, None)];
            for k in 0..5u64 {
                let o = 50.0 * k as f64;
                v.push(Record::Span(span(SpanKind::Step, k, o, o + 50.0)));
            }
            v
        })
        .collect();
    let run = load(&ranks);
    let opts = SummaryOptions {
        batch_size: Some(16),
        ..SummaryOptions::default()
    };
    let sum = analysis::summarize(&run, &opts);
    assert_eq!(sum.throughput.steps_per_s, Some(20.0));
    // 16 samples × 20 steps/s × 2 ranks.
    assert_eq!(sum.throughput.samples_per_s, Some(640.0));
    assert_eq!(
        sum.throughput.samples_source,
        Some(SamplesSource::BatchSize)
    );
}

#[test]
fn text_report_names_the_parts() {
    let run = load(&hand_run());
    let sum = analysis::summarize(&run, &SummaryOptions::default());
    let text = sum.render_text(100);
    for needle in [
        "run hand-made",
        "2 steady steps",
        "throughput: 640.0 samples/s, 10.00 steps/s",
        "exposed",
        "overlapped",
        "buckets",
        "all_reduce",
        "warm-up steps",
        "bucket rebuild",
        "no straggler",
    ] {
        assert!(text.contains(needle), "{needle:?} missing in\n{text}");
    }
    let narrow = sum.render_text(60);
    assert!(
        narrow.lines().all(|l| l.chars().count() <= 60),
        "too wide:\n{narrow}"
    );
    // The JSON form carries the same numbers.
    let json = serde_json::to_value(&sum).unwrap();
    assert_eq!(json["overall"]["totals"]["comm_exposed_ns"], ns(60.0));
    assert_eq!(json["warmup"][1]["reason"], "rebuild");
}

/// A run with neither data-wait nor collective spans (a PyTorch program whose
/// own communication hook the module could not wrap, and no data loader
/// timing): those rows say "not recorded", and the overlap line says why,
/// instead of 0 ns of communication.
#[test]
fn parts_without_any_span_are_not_recorded_rather_than_zero() {
    let run = load(&two_ranks(4, |step, o| {
        let s = |k, a: f64, b: f64| Record::Span(span(k, step, o + a, o + b));
        vec![
            s(SpanKind::Forward, 0.0, 20.0),
            s(SpanKind::Backward, 20.0, 80.0),
            s(SpanKind::Optimizer, 80.0, 90.0),
            s(SpanKind::Step, 0.0, 100.0),
        ]
    }));
    let summary = analysis::summarize(&run, &SummaryOptions::default());
    // No writeback spans either: PyTorch's reducer copies the buckets back
    // unseen (the reference DDP records it).
    assert_eq!(
        summary.not_recorded,
        ["data wait", "communication", "writeback"]
    );
    let text = summary.render_text(100);
    let row = |name: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no {name} row:\n{text}"))
            .to_owned()
    };
    assert!(row("data wait").contains("not recorded"), "{text}");
    assert!(row("communication").contains("not recorded"), "{text}");
    assert!(row("exposed").contains("not recorded"), "{text}");
    assert!(!row("optimizer").contains("not recorded"), "{text}");
    assert!(row("writeback").contains("not recorded"), "{text}");
    assert!(text.contains("unknown (not zero)"), "{text}");
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("No batch was seen being fetched, so the data wait is unknown"),
        "{text}"
    );
    // A run that times its data waits says nothing of the kind.
    let timed = analysis::summarize(&load(&hand_run()), &SummaryOptions::default());
    assert!(!timed.render_text(100).contains("No batch was seen"));
}

/// A collective's exposed part is its end: when rank 1 joins bucket 1's all-reduce at 90 ms
/// (after backward ended at 80), rank 0's call (75..95) is exposed 80..95, 15 ms, of which
/// 80..90 was waiting for rank 1; rank 1's (90..95) is all transfer. Per step: 10 ms of the
/// 20 ms exposed was waiting.
#[test]
fn exposed_communication_splits_into_waiting_and_transfer() {
    let mut traces = hand_run();
    for rec in traces[1].iter_mut() {
        if let Record::Span(s) = rec {
            if matches!(s.seq, Some(21) | Some(31)) {
                s.start += ns(15.0) as u64;
            }
        }
    }
    let run = load(&traces);
    let sum = analysis::summarize(&run, &SummaryOptions::default());
    let split = sum.comm_split.as_ref().expect("a split");
    assert_eq!(split.exposed_ns, ns(2.0 * (15.0 + 5.0)));
    assert_eq!(split.exposed_waiting_ns, ns(2.0 * 10.0));
    let b1 = &sum.buckets[1];
    assert_eq!(b1.transfer.median, 5e6);
    assert!((b1.waiting_share.unwrap() - 30.0 / 50.0).abs() < 1e-12);
    let text = sum.render_text(100);
    assert!(
        text.contains("of the exposed part, 50% was waiting"),
        "{text}"
    );
}

/// `find_unused_parameters=True` where no step leaves a parameter out (Hugging Face's
/// `Trainer` turns the flag on by default) is said, with what to do; with one step that leaves
/// a parameter out (flow control), or with the flag off, it is not.
#[test]
fn a_search_for_unused_parameters_that_never_finds_one_is_said() {
    use probe::trace::GradReadyRecord;
    let run_with = |flag: bool, skip_one: bool| {
        let ranks: Vec<Vec<Record>> = hand_run()
            .into_iter()
            .enumerate()
            .map(|(rank, mut records)| {
                let mut d = ddp();
                d.find_unused_parameters = flag;
                records[0] = header(rank as u32, 2, Some(d));
                for step in 0..4u64 {
                    let unused = skip_one && rank == 1 && step == 3;
                    records.push(Record::GradReady(GradReadyRecord {
                        step,
                        t0: at(100.0 * step as f64),
                        offsets_ns: vec![if unused { -1 } else { 5_000_000 }, 1, 2, 3],
                    }));
                }
                records
            })
            .collect();
        analysis::summarize(&load(&ranks), &SummaryOptions::default())
    };
    let said = |flag, skip| {
        run_with(flag, skip)
            .notes
            .iter()
            .find(|n| n.starts_with("find_unused_parameters=True"))
            .cloned()
    };
    let note = said(true, false).expect("said");
    assert!(
        note.contains("all 4 parameters got a gradient in each of the 8 recorded rank-steps")
            && note.contains("find_unused_parameters=False"),
        "{note}"
    );
    assert_eq!(said(true, true), None);
    assert_eq!(said(false, false), None);
}

/// Steps that wait for their data a tenth of their time or more get a note that says what to
/// change in the training DataLoader the PyTorch module recorded (`training_loader`): workers
/// when it has none, more of them (and persistent ones) when it has some; without the record,
/// the general advice. Steps that wait less get none.
#[test]
fn steps_that_wait_for_their_data_get_a_note_from_the_loader_s_settings() {
    use probe::trace::InstantRecord;
    let loader = |workers: u64, persistent: bool| {
        let serde_json::Value::Object(args) = serde_json::json!({
            "num_workers": workers, "prefetch_factor": if workers == 0 { None } else { Some(2) },
            "pin_memory": false, "persistent_workers": persistent, "cores": 8,
        }) else {
            unreachable!()
        };
        Record::Instant(InstantRecord {
            name: "training_loader".into(),
            t: at(1.0),
            step: None,
            args: Some(Box::new(args)),
        })
    };
    // Data wait 0..`wait` ms of each 100 ms step, the forward right after it.
    let run = |wait: f64, settings: Option<Record>| {
        let mut ranks = two_ranks(4, |step, o| {
            let mut records = steady_step(0, step, o);
            records[0] = Record::Span(span(SpanKind::DataWait, step, o, o + wait));
            records
        });
        if let Some(s) = settings {
            ranks[0].push(s);
        }
        analysis::summarize(&load(&ranks), &SummaryOptions::default())
            .notes
            .into_iter()
            .find(|n| n.contains("for their next batch"))
    };
    let note = run(30.0, Some(loader(0, false))).expect("noted");
    assert!(
        note.starts_with(
            "the steps wait 30.0 ms on average for their next batch, 30% of the mean step"
        ) && note.contains("The training DataLoader has num_workers=0")
            && note.contains("N up to the cores there are (8 cores for this rank"),
        "{note}"
    );
    let note = run(30.0, Some(loader(4, false))).expect("noted");
    assert!(
        note.contains("The training DataLoader's 4 workers (prefetch_factor 2) do not keep up")
            && note.contains("persistent_workers=True"),
        "{note}"
    );
    let note = run(30.0, Some(loader(4, true))).expect("noted");
    assert!(!note.contains("persistent_workers=True"), "{note}");
    let note = run(30.0, None).expect("noted");
    assert!(
        note.contains("Give the DataLoader worker processes (num_workers)"),
        "{note}"
    );
    assert_eq!(run(5.0, Some(loader(0, false))), None);
}

/// Another DDP model of the processes, unrecorded (the PyTorch module's `unrecorded_ddp_model`
/// instant, one per model built after the recorded one): a note that names it and the share of
/// the mean step no span explains (here 1 ms of each 100 ms step: 99–100 ms); none without the
/// instant.
#[test]
fn an_unrecorded_second_ddp_model_is_noted_with_the_time_left_unexplained() {
    use probe::trace::InstantRecord;
    let model = |module: &str, parameters: u64| {
        let serde_json::Value::Object(args) =
            serde_json::json!({"module": module, "parameters": parameters})
        else {
            unreachable!()
        };
        Record::Instant(InstantRecord {
            name: "unrecorded_ddp_model".into(),
            t: at(1.0),
            step: None,
            args: Some(Box::new(args)),
        })
    };
    let note = |models: Vec<Record>| {
        let mut ranks = two_ranks(4, |step, o| steady_step(0, step, o));
        ranks[0].extend(models);
        analysis::summarize(&load(&ranks), &SummaryOptions::default())
            .notes
            .into_iter()
            .find(|n| n.contains("not recorded"))
    };
    let one = note(vec![model("Discriminator", 82_689)]).expect("noted");
    assert!(
        one.starts_with(
            "the program also trains another DistributedDataParallel model, not recorded \
             (Discriminator of 82,689 parameters): only the first one built is"
        ) && one.contains("counts as other / idle (1.0% of the mean step)")
            && one.contains("To record it instead"),
        "{one}"
    );
    let two = note(vec![
        model("Discriminator", 321),
        model("Teacher", 1_234_567),
    ])
    .expect("noted");
    assert!(
        two.starts_with(
            "the program also trains other DistributedDataParallel models, not recorded \
             (Discriminator of 321 parameters; Teacher of 1,234,567 parameters)"
        ) && two.contains("To record one of them instead"),
        "{two}"
    );
    assert_eq!(note(Vec::new()), None);
}

/// Parameters that got no gradient in any recorded rank-step while others did (a model whose
/// checkpointed blocks' input did not require grad, under `static_graph=True`) are a warning,
/// named with their share of the gradients and the setting that let DDP go on; a parameter
/// left out of one step only (flow control), or a run whose records say nothing got a
/// gradient, is not.
#[test]
fn parameters_that_never_got_a_gradient_are_a_warning() {
    use probe::trace::GradReadyRecord;
    let run_static = |offsets: &dyn Fn(u32, u64) -> Vec<i64>, static_graph: bool| {
        let ranks: Vec<Vec<Record>> = hand_run()
            .into_iter()
            .enumerate()
            .map(|(rank, mut records)| {
                let mut d = ddp();
                d.static_graph = static_graph;
                records[0] = header(rank as u32, 2, Some(d));
                for step in 0..4u64 {
                    records.push(Record::GradReady(GradReadyRecord {
                        step,
                        t0: at(100.0 * step as f64),
                        offsets_ns: offsets(rank as u32, step),
                    }));
                }
                records
            })
            .collect();
        analysis::summarize(&load(&ranks), &SummaryOptions::default())
            .warnings
            .into_iter()
            .find(|w| w.contains("got no gradient"))
    };
    let run_with = |offsets: &dyn Fn(u32, u64) -> Vec<i64>| run_static(offsets, true);
    let warning = run_with(&|_, _| vec![-1, 4, -1, 3]).expect("warned");
    assert!(
        warning.starts_with(
            "2 of the DDP model's 4 parameters (28.6 MiB, 50% of the gradients' bytes) got no \
             gradient in any of the 8 recorded rank-steps: p0 and p2. Only p1 and p3 got one."
        ) && warning.contains("static_graph=True lets it go on"),
        "{warning}"
    );
    // p0 got one on rank 1 in step 3: used in some steps, not a warning.
    let sometimes = |rank: u32, step: u64| {
        let p0 = if rank == 1 && step == 3 { 7 } else { -1 };
        vec![p0, 4, 5, 3]
    };
    assert_eq!(run_with(&sometimes), None);
    assert_eq!(run_with(&|_, _| vec![-1; 4]), None);
    // Without either setting PyTorch's DDP stops at the next step: nothing is said of going on.
    let warning = run_static(&|_, _| vec![-1, 4, -1, 3], false).expect("warned");
    assert!(
        warning.contains("Only p1 and p3 got one. They do not train. Usual causes"),
        "{warning}"
    );
}

/// A collective of the program's own (`"what": "program"`, with `caller` when given) in `step`
/// over `[a, b)` ms.
fn program_collective(
    step: u64,
    (a, b): (f64, f64),
    op_name: &'static str,
    bytes: u64,
    seq: u64,
    caller: Option<&str>,
) -> Record {
    let mut args = probe::trace::Args::new();
    args.insert("what".to_owned(), "program".into());
    if let Some(caller) = caller {
        args.insert("caller".to_owned(), caller.into());
    }
    Record::Span(
        span(SpanKind::Collective, step, a, b)
            .op(op_name)
            .transport("tcp")
            .bytes(bytes)
            .seq(seq)
            .args(args),
    )
}

/// `hand_run` with collectives of the program's own in steady steps 2 and 3: per step and rank,
/// `(op, bytes, ms, caller)` each, from the step's 90 ms on; `at_end` in step 3 only (the last).
fn with_program_collectives(
    calls: &[(&'static str, u64, f64, &str)],
    at_end: &[(&'static str, u64, f64, &str)],
) -> probe::model::Run {
    let mut ranks = hand_run();
    for records in ranks.iter_mut() {
        for (step, o) in [(2u64, 400.0), (3, 500.0)] {
            let mut at = o + 90.0;
            let last = if step == 3 { at_end } else { &[] };
            for (k, &(op_name, bytes, ms, caller)) in calls.iter().chain(last).enumerate() {
                records.push(program_collective(
                    step,
                    (at, at + ms),
                    op_name,
                    bytes,
                    10 * step + 5 + k as u64,
                    Some(caller),
                ));
                at += ms;
            }
        }
    }
    load(&ranks)
}

/// The program's own collectives: a note when they take 2% of the median step or more, each
/// kind (operation and caller) with its calls and time per rank-step, the costliest first.
#[test]
fn the_programs_own_collectives_are_named_with_their_callers() {
    let note = |calls: &[(&'static str, u64, f64, &str)]| {
        analysis::summarize(
            &with_program_collectives(calls, &[]),
            &SummaryOptions::default(),
        )
        .notes
        .into_iter()
        .find(|n| n.contains("collectives of its own"))
    };
    // 3 ms of a 100 ms median step.
    let hf = "accelerate/accelerator.py:3012 in gather <- transformers/trainer.py:5626 in \
              _get_num_items_in_batch";
    let text = note(&[
        ("all_reduce", 4, 1.0, "train.py:42 in main"),
        ("all_gather", 8, 2.0, hf),
    ])
    .expect("a note");
    for needle in [
        "3.0 ms per rank-step on average, 3.0% of the median step",
        "all_gather ×1.0 a rank-step (8 B) from accelerate/accelerator.py:3012",
        "all_reduce ×1.0 a rank-step (4 B) from train.py:42 in main: 1.0 ms",
        "average_tokens_across_devices=False",
    ] {
        assert!(text.contains(needle), "{needle:?} missing in {text}");
    }
    // The costlier kind first.
    assert!(
        text.find("all_gather") < text.find("all_reduce ×"),
        "{text}"
    );
    // A script's own logging all-reduce alone: no Hugging Face hint, no Lightning hint.
    let text = note(&[("all_reduce", 4, 3.0, "train.py:42 in main")]).expect("a note");
    assert!(!text.contains("average_tokens"), "{text}");
    assert!(!text.contains("Lightning"), "{text}");
    // Lightning's self.log(sync_dist=True) in training_step (the chain as recorded from
    // Lightning 2.6.6): a barrier and an all-reduce from its result collection's update.
    let pl = "lightning/fabric/utilities/distributed.py:214 in _sync_ddp <- \
              lightning/pytorch/strategies/ddp.py:367 in reduce <- \
              lightning/pytorch/trainer/connectors/logger_connector/result.py:225 in update";
    let text = note(&[("barrier", 0, 1.5, pl), ("all_reduce", 4, 1.5, pl)]).expect("a note");
    assert!(
        text.contains("self.log(..., sync_dist=True) reduces across the ranks at every call")
            && text.contains("on_step=False, on_epoch=True"),
        "{text}"
    );
    // 1 ms a step, 1%: no note.
    assert_eq!(note(&[("barrier", 0, 1.0, "train.py:50 in main")]), None);
    // A gather once after the training loop counts with the last step, which the note leaves
    // out: no note for 9 ms of it.
    let end = analysis::summarize(
        &with_program_collectives(&[], &[("all_gather", 8, 9.0, "train.py:90 in main")]),
        &SummaryOptions::default(),
    );
    assert!(
        !end.notes
            .iter()
            .any(|n| n.contains("collectives of its own")),
        "{:?}",
        end.notes
    );
}

/// `hand_run` with DDP's broadcast of module buffers in steady steps 2 and 3 (rank 0 `r0` ms,
/// rank 1 `r1` ms, from the forward's start) and `buffers` in the header.
fn with_buffer_broadcasts(r0: f64, r1: f64, buffers: &[(&str, &str, u64)]) -> probe::model::Run {
    let mut ranks = hand_run();
    for (rank, records) in ranks.iter_mut().enumerate() {
        if let Some(Record::Header(h)) = records.first_mut() {
            if let Some(d) = h.ddp.as_mut() {
                d.buffers = buffers
                    .iter()
                    .map(|&(name, dtype, bytes)| probe::trace::BufferInfo {
                        name: name.to_owned(),
                        dtype: dtype.to_owned(),
                        bytes,
                    })
                    .collect();
            }
        }
        let took = if rank == 0 { r0 } else { r1 };
        for (step, o) in [(2u64, 400.0), (3, 500.0)] {
            let mut args = probe::trace::Args::new();
            args.insert("what".to_owned(), "module buffers".into());
            records.push(Record::Span(
                span(SpanKind::Collective, step, o + 10.0, o + 10.0 + took)
                    .op(op::BROADCAST)
                    .transport("tcp")
                    .bytes(5120)
                    .seq(10 * step + 5)
                    .args(args),
            ));
        }
    }
    load(&ranks)
}

/// DDP's buffer broadcast: a note when it takes 2% of the median step or more, with its time
/// (the mean over steady rank-steps), the fastest rank's time each step, the buffers and the fix
/// that fits them.
#[test]
fn a_costly_buffer_broadcast_is_named_with_the_buffers_and_what_to_do() {
    // The summary's note on the buffer broadcast of `with_buffer_broadcasts(r0, r1, buffers)`.
    let note = |r0: f64, r1: f64, buffers: &[(&str, &str, u64)]| {
        analysis::summarize(
            &with_buffer_broadcasts(r0, r1, buffers),
            &SummaryOptions::default(),
        )
        .notes
        .into_iter()
        .find(|n| n.contains("module buffers"))
    };
    let constant = [("enc.mask", "bool", 1024), ("enc.pos", "float32", 4096)];
    // 2 and 5 ms of a 100 ms median step: 3.5 ms a rank-step (3.5%), 2 ms the broadcast itself.
    let text = note(2.0, 5.0, &constant).expect("a note");
    for needle in [
        "(2 buffers: enc.mask, enc.pos; 5.0 KiB)",
        "3.5 ms per rank-step",
        "3.5% of the median step",
        "2.0 ms of it was the broadcast itself",
        "broadcast_buffers=False",
        "ddp_broadcast_buffers=False",
    ] {
        assert!(text.contains(needle), "{needle:?} missing in {text}");
    }
    // BatchNorm's running statistics change: the note says what turning it off costs.
    let bn = [
        ("bn.running_mean", "float32", 256),
        ("bn.running_var", "float32", 256),
        ("bn.num_batches_tracked", "int64", 8),
        ("head.mask", "bool", 64),
    ];
    let text = note(2.0, 5.0, &bn).expect("a note");
    assert!(text.contains("and 1 more"), "{text}");
    assert!(text.contains("each rank keeps its own"), "{text}");
    assert!(!text.contains("ddp_broadcast_buffers=False"), "{text}");
    // 0.5 and 1 ms: 0.75% of the step, no note.
    assert_eq!(note(0.5, 1.0, &constant), None);
}

/// "Other / idle" placed by the phases around each gap: before the forward, between forward and
/// backward, after backward and the last collective (before the optimizer), after the optimizer,
/// elsewhere (here between two forwards of one step).
#[test]
fn other_time_is_placed_by_the_phases_around_it() {
    let runs = two_ranks(3, |step, o| {
        let s = |k, a: f64, b: f64| Record::Span(span(k, step, o + a, o + b));
        vec![
            s(SpanKind::DataWait, 0.0, 10.0),
            // Before the forward: 10..12.
            s(SpanKind::Forward, 12.0, 15.0),
            // Elsewhere (between two forwards): 15..16.
            s(SpanKind::Forward, 16.0, 20.0),
            // Between forward and backward: 20..23.
            s(SpanKind::Backward, 23.0, 80.0),
            coll(step, o + 75.0, o + 90.0, Some(0), 20_000_000, step),
            // After backward and its all-reduce: 90..94.
            s(SpanKind::Optimizer, 94.0, 97.0),
            // After the optimizer: 97..100.
            s(SpanKind::Step, 0.0, 100.0),
        ]
    });
    let steps = analysis::step_breakdowns(&load(&runs), &SummaryOptions::default());
    assert_eq!(steps.len(), 6);
    for s in &steps {
        assert_eq!(s.other_ns, ns(13.0), "{s:?}");
        let at = &s.other_at;
        assert_eq!(at.before_forward_ns, ns(2.0), "{s:?}");
        assert_eq!(at.elsewhere_ns, ns(1.0), "{s:?}");
        assert_eq!(at.forward_to_backward_ns, ns(3.0), "{s:?}");
        assert_eq!(at.backward_to_optimizer_ns, ns(4.0), "{s:?}");
        assert_eq!(at.after_optimizer_ns, ns(3.0), "{s:?}");
    }
    // 13% of the step: the summary places it, naming the parts of 10% of it or more (all but
    // the 1 ms elsewhere).
    let text = analysis::summarize(&load(&runs), &SummaryOptions::default()).render_text(200);
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let from = flat
        .find("by where it falls")
        .unwrap_or_else(|| panic!("{text}"));
    let line = &flat[from..from + flat[from..].find("overlaps compute").unwrap_or(0)];
    for needle in [
        "before the forward 2.0 ms",
        "between forward and backward 3.0 ms",
        "after backward and its all-reduces, before the optimizer 4.0 ms",
        "after the optimizer 3.0 ms",
    ] {
        assert!(line.contains(needle), "{needle:?} missing in {line}");
    }
    assert!(!line.contains("elsewhere"), "{line}");
}

/// A collective of the program's own inside a compute span blocks it (Lightning's
/// `self.log(sync_dist=True)` inside the forward): the forward did not compute meanwhile, and the
/// collective is exposed, not overlapped.
#[test]
fn a_blocking_collective_inside_the_forward_is_exposed_not_overlapped() {
    let runs = two_ranks(3, |step, o| {
        let s = |k, a: f64, b: f64| Record::Span(span(k, step, o + a, o + b));
        vec![
            s(SpanKind::DataWait, 0.0, 10.0),
            s(SpanKind::Forward, 10.0, 30.0),
            program_collective(
                step,
                (o + 15.0, o + 20.0),
                op::ALL_REDUCE,
                4,
                10 * step,
                None,
            ),
            s(SpanKind::Backward, 30.0, 80.0),
            coll(step, o + 75.0, o + 90.0, Some(0), 20_000_000, 10 * step + 1),
            s(SpanKind::Optimizer, 90.0, 95.0),
            s(SpanKind::Step, 0.0, 100.0),
        ]
    });
    for s in analysis::step_breakdowns(&load(&runs), &SummaryOptions::default()) {
        // 10..30 less 15..20.
        assert_eq!(s.forward_ns, ns(15.0), "{s:?}");
        assert_eq!(s.comm_ns, ns(20.0), "{s:?}");
        // Only the bucket's 75..80, beside the backward.
        assert_eq!(s.comm_overlapped_ns, ns(5.0), "{s:?}");
        assert_eq!(s.comm_exposed_ns, ns(15.0), "{s:?}");
        assert_eq!(s.backward_ns, ns(50.0), "{s:?}");
    }
}

/// PyTorch Lightning 2.6's broadcast of rank 0's SIGTERM flag before every training batch, as
/// the module records its caller (2 CPU ranks, 2026-12-06).
const SIGTERM_BROADCAST: &str = "lightning/pytorch/loops/training_epoch_loop.py:265 in \
    _broadcast_sigterm_tensor <- lightning/pytorch/loops/fit_loop.py:469 in advance <- \
    lightning/pytorch/trainer/trainer.py:1123 in _run_stage";

/// The time between steps (after the optimizer, before the next step's data wait: an LR
/// scheduler, a checkpoint or an evaluation every N steps) is in no step, but the wall clock runs
/// through it: throughput counts it, and the summary names it, with the long gaps' period and
/// where the program's collectives in them were called. Those collectives are not the step's.
#[test]
fn time_between_steps_counts_in_the_throughput_and_is_named() {
    // Steps of 60 ms every 100 ms; after steps 2 and 5 a 30 ms longer gap (an evaluation, which
    // all-gathers 10 ms, and once an all-reduce inside the step, 55..57 ms).
    // Its caller chains end in the script's top level, or (a script run by `runpy`, as under
    // `--auto-instrument`, recorded before the module left the interpreter's frames out) in
    // `<frozen runpy>`: neither is where the evaluation was called.
    let eval = |step| {
        if step == 2 {
            "metrics.py:7 in gather <- trainer.py:96 in evaluation_loop <- train.py:3 in <module>"
        } else {
            "metrics.py:7 in gather <- trainer.py:96 in evaluation_loop <- <frozen runpy>:88 in \
             _run_code"
        }
    };
    let runs: Vec<Vec<Record>> = (0..2u32)
        .map(|rank| {
            let mut r = vec![header(rank, 2, Some(ddp()))];
            for step in 0..8u64 {
                let o = 100.0 * step as f64
                    + 30.0 * [2, 5].iter().filter(|&&l| step > l).count() as f64;
                let s = |k, a: f64, b: f64| Record::Span(span(k, step, o + a, o + b));
                r.extend([
                    s(SpanKind::DataWait, 0.0, 5.0),
                    s(SpanKind::Forward, 5.0, 20.0),
                    s(SpanKind::Backward, 20.0, 50.0),
                    s(SpanKind::Optimizer, 50.0, 60.0),
                    s(SpanKind::Step, 0.0, 60.0),
                ]);
                let program = |a: f64, b: f64, op_name, caller: &str, seq| {
                    program_collective(step, (o + a, o + b), op_name, 8, seq, Some(caller))
                };
                if step == 2 || step == 5 {
                    r.push(program(75.0, 85.0, op::ALL_GATHER, eval(step), 10 * step));
                }
                r.push(program(
                    55.0,
                    57.0,
                    op::ALL_REDUCE,
                    "train.py:9 in main",
                    10 * step + 1,
                ));
                // After every step, a broadcast of the loop's own (PyTorch Lightning's per-batch
                // SIGTERM check): in every gap, so it does not say why some are long.
                r.push(program(
                    61.0,
                    61.5,
                    op::BROADCAST,
                    SIGTERM_BROADCAST,
                    10 * step + 2,
                ));
            }
            r
        })
        .collect();
    let run = load(&runs);
    let steps = analysis::step_breakdowns(&run, &SummaryOptions::default());
    for s in &steps {
        let want = match s.step {
            Some(7) => None,
            Some(2 | 5) => Some(ns(70.0)),
            _ => Some(ns(40.0)),
        };
        assert_eq!(s.between_ns, want, "{s:?}");
    }
    let sum = analysis::summarize(&run, &SummaryOptions::default());
    // Steady steps 1..=7 (step 0 is the first iteration; no rebuild is recorded): seven 60 ms
    // steps, and the six gaps after steps 1..=6 take 40 + 70 + 40 + 40 + 70 + 40 = 300 ms:
    // 60 + 50 = 110 ms a step by the wall clock, 50 / 110 = 45% of it between steps.
    assert_eq!(sum.steady_steps, 7);
    let sps = sum.throughput.steps_per_s.expect("steps/s");
    assert!((sps - 1e3 / 110.0).abs() < 1e-9, "{sps}");
    assert_eq!(
        sum.ranks[0].steps_per_s.map(|v| (v * 1e6).round()),
        Some((1e9 / 110.0_f64).round())
    );
    let gap = sum.longest_between.expect("the longest gap");
    assert_eq!((gap.rank, gap.step, gap.ns), (0, Some(2), ns(70.0)));
    let long = sum
        .long_gaps
        .clone()
        .expect("gaps longer than the median step");
    assert_eq!(long.after_steps, vec![2, 5]);
    assert_eq!(long.rank_gaps, 4);
    assert_eq!((long.ranks.clone(), long.of_ranks), (vec![0, 1], 2));
    assert_eq!(
        long.callers,
        vec!["trainer.py:96 in evaluation_loop".to_owned()]
    );
    let text = sum.render_text(200);
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    for want in [
        "Between steps (after a step's optimizer",
        "median 40.0 ms, mean 50.0 ms, longest 70.0 ms (rank 0 after step 2); 45% of the \
         wall-clock time",
        "Longer than the median step every 3 steps (after steps 2, 5): 70.0 ms; the program's \
         collectives there were called from trainer.py:96 in evaluation_loop.",
    ] {
        let want = want.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains(&want), "{want}\n{text}");
    }
    // The note on the program's collectives counts the step's all-reduce (2 ms, 3.3% of the
    // 60 ms median step) and the broadcast of the ordinary gaps (after steps 1, 3, 4 and 6 of
    // the six steady steps with a next one: 4 × 0.5 ms / 6 = 333 µs), not the evaluation's
    // all-gather nor the broadcast of the long gaps.
    let note = sum
        .notes
        .iter()
        .find(|n| n.contains("Besides DDP's"))
        .unwrap_or_else(|| panic!("{:?}", sum.notes));
    assert!(note.contains("all_reduce ×1.0 a rank-step"), "{note}");
    assert!(
        note.contains(&format!(
            "broadcast ×0.7 a rank-step (8 B) from {SIGTERM_BROADCAST}: 333 µs"
        )) && note.contains("Lightning 2.6 has no setting for it: its issue #21487"),
        "{note}"
    );
    assert!(!note.contains("evaluation_loop"), "{note}");
}

/// A long gap between steps on one rank only (rank 0 writes the checkpoint): the other ranks
/// wait for it in the next step's first collective; the summary says which rank had it.
#[test]
fn a_long_gap_on_one_rank_only_is_named_with_the_rank() {
    // Steps of 60 ms every 100 ms; rank 0 spends 200 ms more after step 3, which rank 1's
    // step 4 spends waiting (its step runs 200 ms longer).
    let runs: Vec<Vec<Record>> = (0..2u32)
        .map(|rank| {
            let mut r = vec![header(rank, 2, Some(ddp()))];
            for step in 0..8u64 {
                let shift = if step > 3 { 200.0 } else { 0.0 };
                let (o, len) = match (rank, step) {
                    (1, 4) => (400.0, 260.0),
                    _ => (100.0 * step as f64 + shift, 60.0),
                };
                r.push(Record::Span(span(SpanKind::Step, step, o, o + len)));
                r.push(Record::Span(span(SpanKind::Forward, step, o, o + 10.0)));
            }
            r
        })
        .collect();
    let sum = analysis::summarize(&load(&runs), &SummaryOptions::default());
    let long = sum
        .long_gaps
        .clone()
        .expect("a gap longer than the median step");
    assert_eq!(long.after_steps, vec![3]);
    assert_eq!((long.ranks.clone(), long.of_ranks), (vec![0], 2));
    assert_eq!((long.min_ns, long.max_ns), (ns(240.0), ns(240.0)));
    let text = sum.render_text(200);
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let want = "Longer than the median step after step 3 on rank 0 only (the other ranks wait for \
                it in the next step's first collective, as exposed communication): 240 ms.";
    assert!(flat.contains(want), "{text}");
}

#[test]
fn a_recorders_warnings_are_warnings_once_each_and_its_info_is_not() {
    use probe::trace::{LogLevel, LogRecord};
    let log = |level, message: &str| {
        Record::Log(LogRecord {
            t: at(1.0),
            level,
            message: message.to_owned(),
        })
    };
    let bypass = "the optimizer stepped 4 of the DistributedDataParallel model's parameters \
                  with gradients from a backward that did not go through its forward";
    let mut ranks = two_ranks(4, |step, o| steady_step(0, step, o));
    for r in &mut ranks {
        r.push(log(LogLevel::Warn, bypass));
        r.push(log(LogLevel::Info, "recording started"));
    }
    ranks[1].push(log(LogLevel::Error, "loss is NaN"));
    let s = analysis::summarize(&load(&ranks), &SummaryOptions::default());
    assert_eq!(
        s.warnings,
        [
            format!("rank 0: {bypass}"),
            "rank 1: loss is NaN".to_owned()
        ],
        "{:?}",
        s.warnings
    );
    assert!(
        s.render_text(100)
            .contains("warning: rank 1: loss is NaN\n"),
        "{}",
        s.render_text(100)
    );
}

#[test]
fn ranks_that_all_got_the_same_input_are_said_to_split_no_data() {
    use probe::trace::InstantRecord;
    let fingerprint = |step: u64, f: &str| {
        let serde_json::Value::Object(args) = serde_json::json!({ "fingerprint": f }) else {
            unreachable!()
        };
        Record::Instant(InstantRecord {
            name: "batch_fingerprint".into(),
            t: at(100.0 * step as f64 + 1.0),
            step: Some(step),
            args: Some(Box::new(args)),
        })
    };
    // `of(rank, step)`: the fingerprint rank `rank` wrote for step `step`, if any.
    let run = |of: &dyn Fn(u32, u64) -> Option<String>| {
        let mut ranks = two_ranks(4, |step, o| steady_step(0, step, o));
        for (rank, records) in ranks.iter_mut().enumerate() {
            for step in 0..4 {
                if let Some(f) = of(rank as u32, step) {
                    records.push(fingerprint(step, &f));
                }
            }
        }
        analysis::summarize(&load(&ranks), &SummaryOptions::default()).warnings
    };
    let said = |notes: &[String]| notes.iter().any(|n| n.contains("got the same input"));
    // The same batches on both ranks in steps 0–3 (no DistributedSampler).
    let notes = run(&|_, step| Some(format!("{step:016x}")));
    assert!(
        notes.iter().any(|n| n.starts_with(
            "every rank got the same input in steps 0, 1, 2, 3 (identical input tensors on \
             all 2 ranks): the data is not split across the ranks"
        )),
        "{notes:?}"
    );
    // One step of different batches: a split that happens to repeat, not the same data.
    assert!(!said(&run(&|rank, step| Some(format!(
        "{:016x}",
        if step == 2 { u64::from(rank) } else { step }
    )))));
    // Equal in one step only that both ranks fingerprinted: too little to tell.
    assert!(!said(&run(
        &|rank, step| (rank == 0 || step == 0).then(|| format!("{step:016x}"))
    )));
}

#[test]
fn accumulation_that_all_reduces_every_micro_batch_is_named_with_what_no_sync_saves() {
    // Four micro-batches per optimizer step, each backward synchronised: the module closes a
    // step at each (no optimizer span in three of four). 20 ms of all-reduce per micro-batch
    // (bucket 0, 50–70 ms) and 20 ms more in the step with the optimizer (bucket 1).
    let micro = |every: u64| {
        move |step: u64, o: f64| {
            let mut r = steady_step(0, step, o);
            if step % every != every - 1 {
                r.retain(|rec| {
                    !matches!(rec, Record::Span(s) if s.kind == SpanKind::Optimizer
                        || (s.kind == SpanKind::Collective && s.bucket == Some(1)))
                });
            }
            r
        }
    };
    let notes = |every| {
        analysis::summarize(
            &load(&two_ranks(16, micro(every))),
            &SummaryOptions::default(),
        )
        .warnings
    };
    let accumulating = notes(4);
    let note = accumulating
        .iter()
        .find(|n| n.starts_with("gradient accumulation all-reduces every micro-batch"))
        .unwrap_or_else(|| panic!("{accumulating:?}"));
    // 16 steps: 12 without an optimizer step, 4 with one (the last among them).
    assert!(
        note.contains("12 of rank 0's 16 steps ran a synchronised backward")
            && note.contains("about 4 backwards per optimizer step")
            && note.contains(
                "to save about 20.0 ms of communication each, 60.0 ms per optimizer step"
            ),
        "{note}"
    );
    // Every step with its optimizer: nothing to say.
    assert!(
        !notes(1).iter().any(|n| n.contains("gradient accumulation")),
        "{:?}",
        notes(1)
    );
}

/// `hand_run` with an all-gather of the program's own queued in step 3 by every rank, of
/// `bytes[rank]` bytes, as seq 35.
fn with_an_all_gather(bytes: [u64; 2]) -> probe::model::Run {
    use probe::trace::InstantRecord;

    let mut ranks = hand_run();
    for (rank, records) in ranks.iter_mut().enumerate() {
        let mut args = probe::trace::Args::new();
        args.insert("seq".to_owned(), 35.into());
        args.insert("op".to_owned(), "all_gather".into());
        args.insert("bytes".to_owned(), bytes[rank].into());
        args.insert("caller".to_owned(), "eval.py:21 in evaluate".into());
        records.push(Record::Instant(InstantRecord {
            name: "collective_queued".into(),
            t: at(595.0),
            step: Some(3),
            args: Some(Box::new(args)),
        }));
    }
    load(&ranks)
}

/// An evaluation's all-gather of predictions of different lengths (51 and 50 int64 values):
/// gloo aborts a rank on it, NCCL's result is undefined, and a run can end well with it. The
/// summary warns with each rank's size and where it was called; equal sizes say nothing.
#[test]
fn a_collective_of_different_sizes_on_different_ranks_is_a_warning() {
    let warnings = |bytes| {
        analysis::summarize(&with_an_all_gather(bytes), &SummaryOptions::default()).warnings
    };
    let w = warnings([408, 400]);
    assert_eq!(
        w,
        [
            "the ranks called all_gather seq 35 (step 3) from eval.py:21 in evaluate with \
          different sizes (rank 0: all_gather 408 bytes, rank 1: all_gather 400 bytes): every \
          rank must pass a tensor of the same size (pad to the largest, or reduce fixed-size \
          statistics); gloo aborts a rank on it, NCCL's result is undefined (wrong data, or a \
          hang later)"
        ],
        "{w:?}"
    );
    assert!(warnings([408, 408]).is_empty());
}
