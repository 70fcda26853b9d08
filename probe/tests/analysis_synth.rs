//! The analysis on synthetic runs of many shapes, and on awkward inputs.

mod analysis_util;

use analysis_util::{header, load, ns, span, synth};
use probe::analysis::{self, AdviceOptions, StepBreakdown, SummaryOptions, WarmupReason};
use probe::synth::SynthConfig;
use probe::trace::{op, Record, SpanKind};

fn check_identities(s: &StepBreakdown) {
    assert_eq!(
        s.comm_overlapped_ns + s.comm_exposed_ns,
        s.comm_ns,
        "overlapped + exposed != total in {s:?}"
    );
    for v in [
        s.data_wait_ns,
        s.forward_ns,
        s.backward_ns,
        s.comm_ns,
        s.comm_overlapped_ns,
        s.comm_exposed_ns,
        s.optimizer_ns,
        s.writeback_ns,
        s.other_ns,
        s.comm_tail_ns,
    ] {
        assert!(v >= 0 && v <= s.step_ns.max(0), "{s:?}");
    }
    assert!(s.data_wait_ns + s.forward_ns + s.other_ns <= s.step_ns);
}

#[test]
fn overlapped_plus_exposed_is_total_on_many_shapes() {
    let mut shapes = 0;
    for ranks in [1u32, 2, 3, 5] {
        for buckets in [1u32, 3, 8] {
            for variant in 0..4u64 {
                let mut c = SynthConfig::new(ranks, 12, buckets);
                c.seed = 7 + variant * 31 + u64::from(ranks * 10 + buckets);
                c.jitter = [0.0, 0.05, 0.3, 0.6][variant as usize];
                c.gpu_kernels = variant % 2 == 1;
                c.straggler = (variant == 2 && ranks > 1).then_some((ranks - 1, 1.7));
                c.data_stall_every = (variant == 3).then_some(3);
                c.latency_ns = 10_000 * (variant + 1);
                c.bandwidth_bytes_per_s = [1e9, 10e9, 3e8, 5e10][variant as usize];
                c.rebuild_at_step = (variant != 1).then_some(1 + variant % 3);
                let run = synth(&c);
                let steps = analysis::step_breakdowns(&run, &SummaryOptions::default());
                assert_eq!(steps.len() as u64, u64::from(ranks) * c.steps);
                for s in &steps {
                    check_identities(s);
                }
                let sum = analysis::summarize(&run, &SummaryOptions::default());
                let t = &sum.overall.as_ref().unwrap().totals;
                assert_eq!(t.comm_overlapped_ns + t.comm_exposed_ns, t.comm_ns);
                for r in &sum.ranks {
                    let t = &r.breakdown.as_ref().unwrap().totals;
                    assert_eq!(t.comm_overlapped_ns + t.comm_exposed_ns, t.comm_ns);
                }
                // Every steady collective is one bucket call of one rank.
                let calls: u64 = sum.buckets.iter().map(|b| b.calls).sum();
                let steady = sum.overall.as_ref().unwrap().steps;
                assert_eq!(calls, steady * u64::from(buckets));
                assert!(!sum.render_text(80).is_empty());
                let advice = analysis::advise(&run, &AdviceOptions::default());
                assert!(!advice.render_text(80).is_empty());
                shapes += 1;
            }
        }
    }
    assert_eq!(shapes, 48);
}

#[test]
fn synthetic_step_parts_match_the_generator() {
    // No jitter, no clock offsets: data 2 ms, forward 20 ms, backward 40 ms,
    // optimizer 5 ms, as configured.
    let mut c = SynthConfig::new(2, 6, 4);
    c.jitter = 0.0;
    c.max_clock_offset_ns = 0;
    let run = synth(&c);
    let sum = analysis::summarize(&run, &SummaryOptions::default());
    let all = sum.overall.unwrap();
    assert_eq!(all.steps, 8);
    assert_eq!(all.data_wait.median, 2e6);
    assert_eq!(all.forward.median, 20e6);
    assert_eq!(all.backward.median, 40e6);
    assert_eq!(all.optimizer.median, 5e6);
    assert_eq!(all.other.max, 0.0);
    // Four 4 MiB all-reduces at 10 GB/s bus bandwidth, 2 ranks, 50 µs
    // latency: 419.4 µs each when both ranks are ready together. (The
    // ranks' first steps start up to 50 µs apart, so some calls include a
    // little waiting: the bandwidths are within a few percent.)
    let per_call = 50_000.0 + (4.0 * 1048576.0) / 10e9 * 1e9;
    for b in &sum.buckets {
        assert!((b.duration.median - per_call).abs() <= 1.0, "{b:?}");
        let algbw = b.algbw_bytes_per_s.unwrap();
        assert!((algbw / (4.0 * 1048576.0 / (per_call / 1e9)) - 1.0).abs() < 0.03);
        // Two ranks: bus bandwidth = algorithm bandwidth.
        assert_eq!(b.busbw_bytes_per_s, Some(algbw));
    }
}

#[test]
fn straggler_is_named_on_a_synthetic_run() {
    let mut c = SynthConfig::new(4, 30, 5);
    c.straggler = Some((2, 1.3));
    let sum = analysis::summarize(&synth(&c), &SummaryOptions::default());
    let st = &sum.stragglers;
    let s = st.straggler.as_ref().expect("rank 2 named");
    assert_eq!(s.rank, 2);
    assert_eq!(s.steps, 28);
    assert_eq!(s.steps_last, 28);
    assert!(s.p_value < 1e-10);
    assert!(s.wait_caused_ns > 0);
    assert_eq!(st.ranks[0].rank, 2);
    assert!(sum.render_text(100).contains("straggler: rank 2"));

    // Without a straggler, nobody is named.
    let mut c = SynthConfig::new(4, 30, 5);
    c.jitter = 0.1;
    let sum = analysis::summarize(&synth(&c), &SummaryOptions::default());
    assert!(sum.stragglers.straggler.is_none(), "{:?}", sum.stragglers);
    assert!(sum.stragglers.collectives > 0);
}

/// Rank 0's warm-up steps and why, in a synthetic run of `c`.
fn rank0_warmup(c: &SynthConfig) -> Vec<(Option<u64>, WarmupReason)> {
    analysis::step_breakdowns(&synth(c), &SummaryOptions::default())
        .iter()
        .filter(|s| s.rank == 0)
        .filter_map(|s| Some((s.step, s.warmup?)))
        .collect()
}

#[test]
fn warmup_is_the_first_step_and_the_rebuild_step() {
    let mut c = SynthConfig::new(2, 10, 2);
    c.rebuild_at_step = Some(4);
    let warm = rank0_warmup(&c);
    assert_eq!(
        warm,
        vec![
            (Some(0), WarmupReason::FirstSteps),
            (Some(4), WarmupReason::Rebuild)
        ]
    );
    // Rebuild at step 2 (static_graph): step 1 ran on the initial layout.
    c.rebuild_at_step = Some(2);
    let warm = rank0_warmup(&c);
    assert_eq!(
        warm,
        vec![
            (Some(0), WarmupReason::FirstSteps),
            (Some(1), WarmupReason::BeforeRebuild),
            (Some(2), WarmupReason::Rebuild)
        ]
    );
    // Rebuild at step 0: one warm-up step with both reasons.
    c.rebuild_at_step = Some(0);
    let sum = analysis::summarize(&synth(&c), &SummaryOptions::default());
    assert_eq!(sum.warmup.len(), 1);
    assert_eq!(sum.warmup[0].reason, WarmupReason::FirstStepsAndRebuild);
    assert_eq!(sum.steady_steps, 9);
    // Three warm-up steps by option.
    let opts = SummaryOptions {
        warmup_steps: 3,
        ..SummaryOptions::default()
    };
    let sum = analysis::summarize(&synth(&c), &opts);
    assert_eq!(sum.steady_steps, 7);
    assert_eq!(sum.overall.unwrap().steps, 14);
}

#[test]
fn spans_are_clipped_to_step_windows() {
    // Steps 0..10, 10..20 and 25..35 ms. A collective 8..12 counts 2 ms in
    // each of the first two steps; one at 21..23 lies between steps and
    // counts nowhere; a user span over everything changes nothing; a
    // zero-length collective and a zero-length step do no harm.
    let c = |a, b, seq| {
        Record::Span(
            span(SpanKind::Collective, 0, a, b)
                .op(op::ALL_REDUCE)
                .bytes(1000)
                .seq(seq),
        )
    };
    let recs = vec![
        header(0, 1, None),
        Record::Span(span(SpanKind::User, 0, 0.0, 40.0).name("everything")),
        Record::Span(span(SpanKind::Step, 0, 0.0, 10.0)),
        Record::Span(span(SpanKind::Step, 1, 10.0, 20.0)),
        Record::Span(span(SpanKind::Step, 2, 25.0, 35.0)),
        Record::Span(span(SpanKind::Step, 3, 36.0, 36.0)),
        Record::Span(span(SpanKind::Backward, 1, 10.0, 11.0)),
        c(8.0, 12.0, 1),
        c(21.0, 23.0, 2),
        c(30.0, 30.0, 3),
    ];
    let run = load(&[recs]);
    let opts = SummaryOptions {
        warmup_steps: 0,
        ..SummaryOptions::default()
    };
    let steps = analysis::step_breakdowns(&run, &opts);
    assert_eq!(steps.len(), 4);
    assert_eq!(steps[0].comm_ns, ns(2.0));
    assert_eq!(steps[0].comm_exposed_ns, ns(2.0));
    assert_eq!(steps[0].other_ns, ns(8.0));
    assert_eq!(steps[1].comm_ns, ns(2.0));
    assert_eq!(steps[1].comm_overlapped_ns, ns(1.0));
    assert_eq!(steps[1].comm_tail_ns, ns(1.0));
    assert_eq!(steps[2].comm_ns, 0);
    assert_eq!(steps[2].other_ns, ns(10.0));
    assert_eq!(steps[3].step_ns, 0);
    let sum = analysis::summarize(&run, &opts);
    // The 8..12 call belongs to step 0, the zero-length one to step 2.
    assert_eq!(sum.ops[0].calls, 2);
}

#[test]
fn overlapping_step_windows_count_shared_time_in_both() {
    let recs = vec![
        header(0, 1, None),
        Record::Span(span(SpanKind::Step, 0, 0.0, 10.0)),
        Record::Span(span(SpanKind::Step, 1, 5.0, 15.0)),
        Record::Span(span(SpanKind::Collective, 0, 6.0, 8.0).op(op::ALL_REDUCE)),
        Record::Span(span(SpanKind::Forward, 1, 9.0, 14.0)),
    ];
    let run = load(&[recs]);
    let opts = SummaryOptions {
        warmup_steps: 0,
        ..SummaryOptions::default()
    };
    let steps = analysis::step_breakdowns(&run, &opts);
    assert_eq!(steps[0].comm_ns, ns(2.0));
    assert_eq!(steps[1].comm_ns, ns(2.0));
    assert_eq!(steps[0].forward_ns, ns(1.0));
    assert_eq!(steps[1].forward_ns, ns(5.0));
}

#[test]
fn runs_without_steps_or_with_empty_ranks_do_not_panic() {
    // Rank 0 has steps, rank 1 only a header, rank 2 spans but no steps.
    let r0 = vec![
        header(0, 4, None),
        Record::Span(span(SpanKind::Step, 0, 0.0, 10.0)),
        Record::Span(span(SpanKind::Step, 1, 10.0, 20.0)),
        Record::Span(span(SpanKind::Collective, 1, 12.0, 12.0).seq(5)),
    ];
    let r1 = vec![header(1, 4, None)];
    let r2 = vec![
        header(2, 4, None),
        Record::Span(span(SpanKind::Forward, 0, 0.0, 5.0)),
        Record::Span(span(SpanKind::Collective, 0, 5.0, 6.0).seq(5)),
    ];
    let run = load(&[r0, r1, r2]);
    let sum = analysis::summarize(&run, &SummaryOptions::default());
    assert_eq!(sum.ranks.len(), 3);
    assert_eq!(sum.ranks[0].steps, 1);
    assert!(sum.ranks[1].breakdown.is_none());
    assert_eq!(sum.missing_ranks, vec![3]);
    assert!(sum.notes.iter().any(|n| n.contains("without `step` spans")));
    assert!(sum.notes.iter().any(|n| n.contains("without a trace")));
    let text = sum.render_text(80);
    assert!(text.contains("note:"), "{text}");
    let _ = analysis::advise(&run, &AdviceOptions::default()).render_text(80);

    // Only warm-up steps.
    let only = load(&[vec![
        header(0, 1, None),
        Record::Span(span(SpanKind::Step, 0, 0.0, 10.0)),
    ]]);
    let sum = analysis::summarize(&only, &SummaryOptions::default());
    assert!(sum.overall.is_none());
    assert_eq!(sum.warmup.len(), 1);
    assert!(sum.notes.iter().any(|n| n.contains("no steady steps")));
    let _ = sum.render_text(10);
}

/// Measures `summarize` on a generated run of `DDP_PROBE_BENCH_SPANS` spans
/// (default one million). Run with
/// `cargo test --release -p probe --test analysis_synth -- --ignored --nocapture`.
#[test]
#[ignore = "timing; run in release"]
fn summarize_speed() {
    let spans: u64 = std::env::var("DDP_PROBE_BENCH_SPANS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    // 8 ranks × 40 buckets: 125 spans per rank-step.
    let steps = (spans / 8 / 125).max(2);
    let c = SynthConfig::new(8, steps, 40);
    let dir = tempfile::tempdir().unwrap();
    probe::synth::generate_run(&c, dir.path()).unwrap();
    let (run, _) = probe::load_run(&[dir.path()]).unwrap();
    let n = run.span_count();
    let sum = analysis::summarize(&run, &SummaryOptions::default());
    assert!(sum.overall.is_some());
    let (wall, cpu) = best_of(5, || {
        analysis::summarize(&run, &SummaryOptions::default());
    });
    let (scan_wall, scan_cpu) = best_of(5, || {
        analysis::step_breakdowns(&run, &SummaryOptions::default());
    });
    let (advise_wall, advise_cpu) = best_of(1, || {
        analysis::advise(&run, &AdviceOptions::default());
    });
    let ms = |v: Option<f64>| v.map_or("-".to_owned(), |s| format!("{:.1} ms", s * 1e3));
    println!(
        "{n} spans: summarize {:.1} ms wall, {} CPU ({:.1} M spans/s); of which the step sweep {:.1} ms wall, {} CPU; advise {:.1} ms wall, {} CPU",
        wall * 1e3,
        ms(cpu),
        n as f64 / cpu.unwrap_or(wall) / 1e6,
        scan_wall * 1e3,
        ms(scan_cpu),
        advise_wall * 1e3,
        ms(advise_cpu),
    );
}

/// On-CPU time of this thread (ns), so that other processes competing for
/// the cores do not count.
fn thread_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// The best wall and on-CPU seconds of `n` runs of `f`.
fn best_of(n: usize, mut f: impl FnMut()) -> (f64, Option<f64>) {
    let (mut wall, mut cpu) = (f64::INFINITY, None::<f64>);
    for _ in 0..n {
        let (t, c) = (std::time::Instant::now(), thread_cpu_ns());
        f();
        wall = wall.min(t.elapsed().as_secs_f64());
        if let (Some(a), Some(b)) = (c, thread_cpu_ns()) {
            let s = b.saturating_sub(a) as f64 / 1e9;
            cpu = Some(cpu.map_or(s, |x| x.min(s)));
        }
    }
    (wall, cpu)
}
