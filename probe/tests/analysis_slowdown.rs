//! Straggler attribution (`Summary::slowdowns`) on runs whose answer is known by construction.
//!
//! Two ranks; per step (100 ms apart): data 1 ms, forward 5 ms, then a backward that readies
//! four buckets 2.5, 5, 7.5 and 10 ms after it starts; each bucket's all-reduce starts when both
//! ranks are ready and the previous one ended, and takes 1 ms; the optimizer 2 ms after the last.

mod analysis_util;

use analysis_util::{header, load, span};
use probe::analysis::{summarize, SummaryOptions};
use probe::trace::{op, DdpConfig, Record, SpanKind};

/// Extra delay (ms) of rank 1 before bucket `k` is ready, per step.
fn run(steps: u64, delay: impl Fn(u64, usize) -> f64) -> Vec<Vec<Record>> {
    let mut ranks: Vec<Vec<Record>> = (0..2u32)
        .map(|r| vec![analysis_util::header(r, 2, None)])
        .collect();
    let mut seq = 0;
    for step in 0..steps {
        let o = 100.0 * step as f64;
        let bwd = o + 6.0;
        let ready = |rank: usize, k: usize| {
            bwd + 2.5 * (k + 1) as f64 + if rank == 1 { delay(step, k) } else { 0.0 }
        };
        // The collectives, on both ranks alike (each starts when both are ready).
        let mut end = f64::NEG_INFINITY;
        let mut comm = Vec::new();
        for k in 0..4 {
            let start = ready(0, k).max(ready(1, k)).max(end);
            end = start + 1.0;
            seq += 1;
            comm.push((start, end, seq));
        }
        for (rank, r) in ranks.iter_mut().enumerate() {
            let sp = |k, a: f64, b: f64| Record::Span(span(k, step, a, b));
            r.push(sp(SpanKind::DataWait, o, o + 1.0));
            r.push(sp(SpanKind::Forward, o + 1.0, bwd));
            r.push(sp(SpanKind::Backward, bwd, ready(rank, 3)));
            for (k, &(s, e, q)) in comm.iter().enumerate() {
                let first = if k == 0 { bwd } else { ready(rank, k - 1) };
                r.push(Record::Span(
                    span(SpanKind::BucketReady, step, first, ready(rank, k)).bucket(k as u32),
                ));
                // A rank's span starts when it issued the call: the early rank waits.
                r.push(Record::Span(
                    span(SpanKind::Collective, step, ready(rank, k).min(s), e)
                        .op(op::ALL_REDUCE)
                        .transport("tcp")
                        .bucket(k as u32)
                        .bytes(1 << 20)
                        .seq(q),
                ));
            }
            r.push(sp(SpanKind::Optimizer, end, end + 2.0));
            r.push(sp(SpanKind::Step, o, end + 2.0));
        }
    }
    ranks
}

#[test]
fn a_rank_slow_between_two_buckets_is_named_with_the_bucket_range() {
    // Rank 1 falls 30 ms behind before bucket 2 is ready: buckets 2 and 3 wait for it.
    let run = load(&run(12, |_, k| if k >= 2 { 30.0 } else { 0.0 }));
    let s = summarize(&run, &SummaryOptions::default());
    // Rank 1 arrives last at half the collectives (buckets 0 and 1 are ties): the arrival
    // statistics alone do not name it; its lateness at the last bucket does.
    assert!(s.stragglers.straggler.is_none(), "{:?}", s.stragglers);
    let v = s.slowdowns.straggler.as_ref().expect("attributed");
    assert_eq!(v.rank, 1);
    assert_eq!(v.phase, "backward");
    assert_eq!(v.buckets, Some((2, 2)));
    assert!((v.late_ns - 30e6).abs() < 1e3, "{v:?}");
    // Measured: the last all-reduce starts at bwd + 40 ms: step 6 + 40 + 1 + 2 = 49 ms.
    // Without it: bwd + 10 + 1 + 2 = 19 ms.
    assert!((v.step_ns - 49e6).abs() < 1e3, "{v:?}");
    assert!((v.without_ns - 19e6).abs() < 1e3, "{v:?}");
    let text = s.render_text(120);
    assert!(
        text.contains(
            "straggler: rank 1 held back 11 of 11 steps: its gradients for bucket 2 were ready about 30.0 ms after the other ranks'"
        ),
        "{text}"
    );
    assert!(
        text.contains("would take 19.0 ms instead of 49.0 ms"),
        "{text}"
    );
    // The arrival count, which does not name it, says why.
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("The straggler's lateness sits in some buckets only."),
        "{text}"
    );
}

#[test]
fn a_rank_slow_in_forward_is_named_there() {
    // Rank 1's forward takes 20 ms longer: every bucket is late by 20 ms, from backward start.
    let mut ranks = run(12, |_, _| 20.0);
    // Its forward span ends 20 ms later (its backward starts later): shift the forward end and
    // backward start of rank 1 accordingly.
    for rec in &mut ranks[1] {
        if let Record::Span(sp) = rec {
            if sp.kind == SpanKind::Forward {
                sp.end += 20_000_000;
            }
            if sp.kind == SpanKind::Backward {
                sp.start += 20_000_000;
            }
        }
    }
    let run = load(&ranks);
    let s = summarize(&run, &SummaryOptions::default());
    let v = s.slowdowns.straggler.as_ref().expect("attributed");
    assert_eq!(
        (v.rank, v.phase.as_str(), v.buckets),
        (1, "forward", None),
        "{v:?}"
    );
}

#[test]
fn a_rank_last_by_a_little_is_not_named_for_steps_long_for_other_reasons() {
    // Rank 1 is the last at the last bucket in all 11 steady steps (clearly more than chance):
    // by 0.3 ms in steps 1–7, by 7 ms in steps 8–11; steps 5–7 are 6 ms longer on both ranks
    // (the optimizer). Steps: 19.3 ms ×4, 25.3 ×3, 26 ×4 (median 25.3); without rank 1's
    // lateness: 19 ×8, 25 ×3 (median 19). The medians differ by 6.3 ms, 25% of the step, but the
    // median step's saving is 0.3 ms (1.2%): rank 1 costs the run nearly nothing in most steps.
    let mut ranks = run(12, |step, k| match (step, k) {
        (8.., 3) => 7.0,
        (_, 3) => 0.3,
        _ => 0.0,
    });
    for r in &mut ranks {
        for rec in r.iter_mut() {
            if let Record::Span(sp) = rec {
                if matches!(sp.step, Some(5..=7))
                    && matches!(sp.kind, SpanKind::Optimizer | SpanKind::Step)
                {
                    sp.end += 6_000_000;
                }
            }
        }
    }
    let s = summarize(&load(&ranks), &SummaryOptions::default());
    assert_eq!(
        s.slowdowns.steps.iter().filter(|st| st.rank == 1).count(),
        11,
        "{:?}",
        s.slowdowns.steps
    );
    assert!(
        s.slowdowns.straggler.is_none(),
        "{:?}",
        s.slowdowns.straggler
    );
}

#[test]
fn ranks_that_take_turns_by_a_little_name_nobody() {
    // Jitter of 0.3 ms, alternating ranks: nobody is late clearly more often, and removing
    // the late one would save under 5 % of the step.
    let run = load(&run(40, |step, _| if step % 2 == 0 { 0.3 } else { -0.3 }));
    let s = summarize(&run, &SummaryOptions::default());
    assert!(
        s.slowdowns.straggler.is_none(),
        "{:?}",
        s.slowdowns.straggler
    );
    assert!(!s.slowdowns.steps.is_empty());
}

#[test]
fn the_phase_named_is_where_most_of_the_lateness_sits_not_where_it_falls_most_often() {
    // Rank 1 is last in all 11 steady steps: in steps 1–6 its forward is 2 ms longer (every
    // bucket 2 ms late), in steps 7–11 it falls 20 ms behind before bucket 2. Forward is where
    // it fell behind in more steps (6 against 5), but backward holds 100 of its 112 ms of
    // lateness.
    let forward_late = |step: u64| (1..=6).contains(&step);
    let mut ranks = run(12, |step, k| match (forward_late(step), k) {
        (true, _) => 2.0,
        (false, 2..) if step >= 7 => 20.0,
        _ => 0.0,
    });
    for rec in &mut ranks[1] {
        if let Record::Span(sp) = rec {
            if sp.step.is_some_and(forward_late) {
                match sp.kind {
                    SpanKind::Forward => sp.end += 2_000_000,
                    SpanKind::Backward => sp.start += 2_000_000,
                    _ => {}
                }
            }
        }
    }
    let s = summarize(&load(&ranks), &SummaryOptions::default());
    let named = |p: &str| s.slowdowns.steps.iter().filter(|st| st.phase == p).count();
    assert_eq!(
        (named("forward"), named("backward")),
        (6, 5),
        "{:?}",
        s.slowdowns.steps
    );
    let v = s.slowdowns.straggler.as_ref().expect("attributed");
    assert_eq!(
        (v.rank, v.phase.as_str(), v.buckets),
        (1, "backward", Some((2, 2))),
        "{v:?}"
    );
}

/// DDP over two process groups: ranks 0 and 1 reduce together and rank 1 falls 3 ms behind
/// before bucket 2; ranks 2 and 3 reduce together, rank 3 falls 30 ms behind there, and their
/// steps run 37 ms later than the first group's (groups drift apart freely). Both groups number
/// their collectives alike. Each rank is compared with its group's only: rank 3 is late by
/// 30 ms, not by 67 ms against rank 0. Both groups' stragglers are critical in all 11 steady
/// steps of their group; rank 3 costs most and is named (the lower rank won such a tie before);
/// the arrivals weigh 2 ranks.
#[test]
fn each_ddp_process_group_is_compared_within_itself() {
    let ddp = |group: [u32; 2]| DdpConfig {
        backend: "gloo".to_owned(),
        bucket_cap_mb: None,
        bucket_cap_mb_list: None,
        first_bucket_bytes: None,
        find_unused_parameters: false,
        static_graph: false,
        gradient_as_bucket_view: false,
        params: Vec::new(),
        buffers: Vec::new(),
        buckets: Vec::new(),
        group_ranks: group.to_vec(),
    };
    let first = run(12, |_, k| if k >= 2 { 3.0 } else { 0.0 });
    let second = run(12, |_, k| if k >= 2 { 30.0 } else { 0.0 });
    let mut ranks = Vec::new();
    for (g, pair) in [first, second].into_iter().enumerate() {
        for (i, mut recs) in pair.into_iter().enumerate() {
            let rank = (2 * g + i) as u32;
            recs[0] = header(rank, 4, Some(ddp([2 * g as u32, 2 * g as u32 + 1])));
            for rec in recs.iter_mut().skip(1) {
                if let Record::Span(sp) = rec {
                    sp.start += 37_000_000 * g as u64;
                    sp.end += 37_000_000 * g as u64;
                }
            }
            ranks.push(recs);
        }
    }
    let s = summarize(&load(&ranks), &SummaryOptions::default());
    assert_eq!(s.ddp_groups, vec![vec![0, 1], vec![2, 3]]);
    let v = s.slowdowns.straggler.as_ref().expect("attributed");
    assert_eq!((v.rank, v.steps, v.of_steps), (3, 11, 11), "{v:?}");
    assert_eq!(v.buckets, Some((2, 2)), "{v:?}");
    assert!((v.late_ns - 30e6).abs() < 1e3, "{v:?}");
    assert!((v.without_ns - 19e6).abs() < 1e3, "{v:?}");
    assert_eq!(s.stragglers.ranks_compared, 2, "{:?}", s.stragglers);
    // Rank 1, the other group's straggler, is compared over its group's steps too.
    assert_eq!(
        s.slowdowns.steps.iter().filter(|st| st.rank == 1).count(),
        11,
        "{:?}",
        s.slowdowns.steps
    );
}
