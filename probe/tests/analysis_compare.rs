//! `compare` on synthetic runs whose difference is known: the part of the step it is in, the
//! rank it is on, whether it is beyond the step-to-step spread, and the settings that differ.

mod analysis_util;

use analysis_util::synth;
use probe::analysis::{self, summarize, Comparison, SummaryOptions};
use probe::synth::SynthConfig;

fn compare(a: &SynthConfig, b: &SynthConfig) -> Comparison {
    let opts = SummaryOptions::default();
    let (ra, rb) = (synth(a), synth(b));
    let (sa, sb) = (summarize(&ra, &opts), summarize(&rb, &opts));
    analysis::compare((&ra, &sa), (&rb, &sb), &opts)
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs()
}

fn base() -> SynthConfig {
    let mut c = SynthConfig::new(4, 30, 3);
    c.seed = 11;
    c
}

#[test]
fn slower_data_loading_is_found_in_the_data_wait() {
    let mut slow = base();
    slow.seed = 12;
    slow.data_ns += 5_000_000;
    let c = compare(&base(), &slow);
    assert!(c.beyond_noise, "{}", c.render_text(100));
    let top = &c.parts[0];
    assert_eq!(top.part, "data wait", "{}", c.render_text(100));
    // 5 ms more per step on every rank (±5% jitter on each wait).
    assert!(close(top.delta_ns(), 5e6, 0.1), "{top:?}");
    assert!(c.verdict().starts_with("The step is "), "{}", c.verdict());
    assert!(
        c.verdict().contains("the largest part of it is data wait"),
        "{}",
        c.verdict()
    );
    assert!(c.settings.is_empty(), "{:?}", c.settings);
}

#[test]
fn a_straggler_is_named_with_its_own_backward_while_the_others_wait() {
    // Rank 2 computes 1.5× as long: 60 ms of forward and backward become 90 ms, backward two
    // thirds of it (+20 ms); the other ranks wait for it in their all-reduces.
    let mut slow = base();
    slow.seed = 12;
    slow.straggler = Some((2, 1.5));
    let c = compare(&base(), &slow);
    assert!(c.beyond_noise);
    let backward = c.parts.iter().find(|p| p.part == "backward").unwrap();
    let (rank, d) = backward.most_on.unwrap();
    assert_eq!(rank, 2, "{}", c.render_text(100));
    assert!(close(d, 20e6, 0.15), "{d}");
    // Pooled over the 4 ranks the straggler's +20 ms is a quarter.
    assert!(close(backward.delta_ns(), 5e6, 0.2), "{backward:?}");
    let exposed = c
        .parts
        .iter()
        .find(|p| p.part == "exposed communication")
        .unwrap();
    assert_ne!(
        exposed.most_on.unwrap().0,
        2,
        "the waiting is on the others"
    );
    assert_eq!((c.baseline.straggler, c.run.straggler), (None, Some(2)));
    let text = c.render_text(100);
    assert!(text.contains("straggler: none → rank 2"), "{text}");
}

#[test]
fn two_runs_of_the_same_job_differ_within_the_spread() {
    let mut again = base();
    again.seed = 12;
    let c = compare(&base(), &again);
    assert!(!c.beyond_noise, "{}", c.render_text(100));
    assert!(
        c.verdict().contains("within the step-to-step spread"),
        "{}",
        c.verdict()
    );
}

#[test]
fn settings_that_differ_are_listed_and_world_sizes_that_differ_are_said() {
    let mut other = base();
    other.ranks = 2;
    other.buckets = 6;
    let c = compare(&base(), &other);
    let names: Vec<&str> = c.settings.iter().map(|s| s.setting.as_str()).collect();
    assert!(names.contains(&"world size"), "{names:?}");
    assert!(names.contains(&"buckets (steady)"), "{names:?}");
    let world = c
        .settings
        .iter()
        .find(|s| s.setting == "world size")
        .unwrap();
    assert_eq!((world.baseline.as_str(), world.run.as_str()), ("4", "2"));
    assert!(c.ranks.is_empty());
    assert!(c.notes.iter().any(|n| n.contains("different world sizes")));
}

#[test]
fn steps_of_different_sizes_are_compared_per_sample() {
    // The run's step is about 1.4× as long (compute 1.5×) but carries twice the samples (a
    // batch of 32 per rank against 16): per sample it is faster, and the verdict says so.
    let (a, mut b) = (base(), base());
    b.seed = 12;
    b.compute_ns = b.compute_ns * 3 / 2;
    let (ra, rb) = (synth(&a), synth(&b));
    let with_batch = |batch| SummaryOptions {
        batch_size: Some(batch),
        ..SummaryOptions::default()
    };
    let (sa, sb) = (
        summarize(&ra, &with_batch(16)),
        summarize(&rb, &with_batch(32)),
    );
    let c = analysis::compare((&ra, &sa), (&rb, &sb), &SummaryOptions::default());
    let v = c.verdict();
    assert!(
        v.contains("slower") && v.contains("processes 128 samples against 64"),
        "{v}"
    );
    assert!(
        v.contains("per sample the run is") && v.contains("faster"),
        "{v}"
    );
    let s = c
        .settings
        .iter()
        .find(|s| s.setting == "samples per step (all ranks)")
        .expect("listed");
    assert_eq!((s.baseline.as_str(), s.run.as_str()), ("64", "128"));
}

#[test]
fn runs_too_short_for_an_interval_say_so_instead_of_a_change() {
    let (mut a, mut b) = (base(), base());
    a.steps = 4;
    b.steps = 4;
    b.seed = 12;
    b.data_ns += 30_000_000;
    let c = compare(&a, &b);
    assert!(!c.beyond_noise && !c.intervals_apart);
    assert!(c.verdict().contains("too few to tell"), "{}", c.verdict());
    assert!(c.render_text(100).contains("ranges of the steps"));
}

/// Two ranks, 10 steps of 60 ms each, `gap_ms` between one step's end and the next's start;
/// with `samples`, each rank counts that many samples a step.
fn gapped_counting(gap_ms: f64, samples: Option<f64>) -> probe::Run {
    use analysis_util::{at, header, load, span};
    use probe::trace::{CounterRecord, Record, SpanKind};
    let ranks: Vec<Vec<Record>> = (0..2u32)
        .map(|rank| {
            let mut r = vec![header(rank, 2, None)];
            for step in 0..10u64 {
                let o = (60.0 + gap_ms) * step as f64;
                r.push(Record::Span(span(SpanKind::Step, step, o, o + 60.0)));
                r.push(Record::Span(span(SpanKind::Forward, step, o, o + 50.0)));
                if let Some(value) = samples {
                    r.push(Record::Counter(CounterRecord {
                        name: "samples".into(),
                        t: at(o + 60.0),
                        value,
                    }));
                }
            }
            r
        })
        .collect();
    load(&ranks)
}

fn gapped(gap_ms: f64) -> probe::Run {
    gapped_counting(gap_ms, None)
}

#[test]
fn time_added_between_steps_is_found_though_the_step_is_unchanged() {
    // An evaluation or a checkpoint after every step: 5 ms → 45 ms between steps, the steps
    // themselves unchanged.
    let opts = SummaryOptions::default();
    let (ra, rb) = (gapped(5.0), gapped(45.0));
    let (sa, sb) = (summarize(&ra, &opts), summarize(&rb, &opts));
    let c = analysis::compare((&ra, &sa), (&rb, &sb), &opts);
    let text = c.render_text(200);
    assert!(!c.beyond_noise, "{text}");
    assert_eq!(c.parts[0].part, "between steps", "{text}");
    // Steady steps 1..=9, a gap after 1..=8 of them: 40 ms × 8 / 9 more per rank-step.
    assert!(
        close(c.parts[0].delta_ns(), 40e6 * 8.0 / 9.0, 1e-9),
        "{text}"
    );
    // 65 ms → 105 ms a step by the wall clock: 61.5% slower. The verdict leads with it; the
    // unchanged step comes after.
    let verdict = c.verdict();
    assert!(
        verdict.starts_with(
            "By the wall clock the run is 62% slower (15.38 → 9.52 steps/s): the time between \
             steps (after a step's optimizer"
        ) && verdict.contains("changed by +35.6 ms a rank-step, which the median step does not show. The step itself is unchanged"),
        "{verdict}"
    );
    assert!(
        text.contains("By the wall clock the run is 62% slower"),
        "{text}"
    );
    // Nothing between steps changed: the verdict is the step's.
    let (rc, sc) = (gapped(5.0), summarize(&gapped(5.0), &opts));
    let same = analysis::compare((&ra, &sa), (&rc, &sc), &opts);
    assert!(same.between_steps.is_none());
    assert!(
        same.verdict().starts_with("The step is unchanged"),
        "{}",
        same.verdict()
    );
    // Steps of twice the samples (gradient accumulation) and the same gap growth: per second
    // the run makes fewer steps but more progress; the verdict gives no steps/s, and the rate
    // per sample by the wall clock follows (32 × 2 samples in 65 ms against 64 × 2 in 105 ms:
    // 985 → 1,219 samples/s, a sample's time 19% shorter).
    let (rd, sd) = (
        gapped_counting(5.0, Some(32.0)),
        gapped_counting(45.0, Some(64.0)),
    );
    let (sd0, se) = (summarize(&rd, &opts), summarize(&sd, &opts));
    let v = analysis::compare((&rd, &sd0), (&sd, &se), &opts).verdict();
    assert!(
        v.starts_with("The time between steps (after a step's optimizer")
            && !v.contains("steps/s")
            && v.contains(
                "The step itself is unchanged (60.0 ms median), but a step of the run \
                 processes 128 samples against 64: per sample the run is 19% faster (985 → \
                 1,219 samples/s)"
            ),
        "{v}"
    );
}

#[test]
fn a_part_a_run_did_not_record_is_not_compared_as_a_change() {
    // The run's batches are fetched where no span sees them (a PyTorch program's own loader
    // under the module): its 2 ms of data wait pass in `other`. Forward is 5 ms longer.
    let mut unseen = base();
    unseen.seed = 12;
    unseen.data_wait_recorded = false;
    unseen.compute_ns += 7_500_000;
    let c = compare(&base(), &unseen);
    let text = c.render_text(120);
    let data = c.parts.iter().find(|p| p.part == "data wait").unwrap();
    assert!(data.baseline_recorded && !data.run_recorded, "{data:?}");
    assert_eq!(data.cells()[1..], ["-", "-"], "{text}");
    // Ranked last: its −2 ms is no change of the data wait, and the verdict names forward.
    assert_eq!(c.parts.last().unwrap().part, "data wait", "{text}");
    assert!(
        c.verdict().contains("the largest part of it is backward")
            || c.verdict().contains("the largest part of it is forward"),
        "{}",
        c.verdict()
    );
    assert!(
        text.contains(
            "Data wait: recorded in the baseline only; in the run its time is in other, so the \
             two are not compared."
        ),
        "{text}"
    );
    assert!(c.not_recorded.is_empty(), "{:?}", c.not_recorded);
    // Neither run recorded it: no row of zeros, one line that says so.
    let mut also = unseen.clone();
    also.seed = 13;
    let c = compare(&unseen, &also);
    let text = c.render_text(120);
    assert_eq!(c.not_recorded, ["data wait"], "{text}");
    assert!(c.parts.iter().all(|p| p.part != "data wait"), "{text}");
    assert!(
        text.contains("Not recorded in either run: data wait (their time is in other)."),
        "{text}"
    );
}
