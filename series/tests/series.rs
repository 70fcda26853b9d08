//! `scale` and `tune` end to end through the real launcher, on a fake job
//! (`probe-series-fakejob`) whose step time depends on
//! `DDP_PROBE_BUCKET_CAP_MB`: with 2 ranks, 2 MiB is its fastest cap among
//! 1, 2, 4, 8 and 16 MiB.

#[path = "../../reports/tests/common/mod.rs"]
mod common;

use std::ffi::OsString;
use std::fs;
use std::path::Path;

use common::{all_text, check_report};
use probe::analysis::tuning::{TuneMode, TuneResult};
use probe_series::{
    run_scale, run_tune, JobCommand, ScaleConfig, SeriesOptions, TuneCaps, TuneConfig,
};

const FAKEJOB: &str = env!("CARGO_BIN_EXE_probe-series-fakejob");

fn job(extra: &[&str], steps: u64) -> JobCommand {
    JobCommand {
        program: OsString::from(FAKEJOB),
        args: extra.iter().map(OsString::from).collect(),
        steps: Some(steps),
    }
}

fn quiet() -> SeriesOptions {
    SeriesOptions {
        show_progress: false,
        ..SeriesOptions::default()
    }
}

fn tune(dir: &Path, caps: TuneCaps, extra: &[&str], repeats: usize) -> probe_series::TuneOutcome {
    run_tune(&TuneConfig {
        command: job(extra, 8),
        nproc_per_node: 2,
        caps,
        repeats,
        dir: dir.to_path_buf(),
        report: None,
        options: quiet(),
    })
    .unwrap()
}

#[test]
fn a_sweep_recommends_the_cap_the_job_is_fastest_with() {
    let dir = tempfile::tempdir().unwrap();
    let series = dir.path().join("tune");
    let out = tune(
        &series,
        TuneCaps::List(vec![16.0, 1.0, 4.0, 2.0, 8.0, 2.0]),
        &["--log", "<script>alert(4)</script>"],
        2,
    );
    let r = &out.result;
    assert_eq!(r.mode, TuneMode::Sweep);
    let caps: Vec<f64> = r.candidates.iter().filter_map(|c| c.cap_mb).collect();
    assert_eq!(
        caps,
        vec![1.0, 2.0, 4.0, 8.0, 16.0],
        "sorted and deduplicated"
    );
    for c in &r.candidates {
        assert_eq!(c.ok_runs(), 2, "{}: {:?}", c.label(), c.runs);
        // 8 steps, the first iteration and the rebuild step left out, 2 ranks, 2 runs.
        assert_eq!(c.measurement.unwrap().n, 6 * 2 * 2, "{}", c.label());
        assert!(c.measurement.unwrap().p25_ns < c.measurement.unwrap().p75_ns);
    }
    let rec = r.recommendation.as_ref().expect("a recommendation");
    assert_eq!(rec.cap_mb, 2.0, "{}", r.render_text());
    // advise read the first run (1 MiB) and predicted every cap.
    let p = r.prediction.as_ref().expect("advise's prediction");
    assert_eq!(p.run_cap_mb, Some(1.0));
    assert!(p.missing.is_empty(), "{:?}", p.missing);
    assert!(r.candidates.iter().all(|c| c.predicted_step_ns.is_some()));
    assert_eq!(p.recommended_cap_mb, Some(2.0), "{:?}", r.comparison);
    assert!(
        r.comparison
            .iter()
            .any(|c| c.contains("measurement agrees")),
        "{:?}",
        r.comparison
    );
    // The text for the terminal marks the recommendation.
    let text = r.render_text();
    assert!(text.contains("recommended: bucket_cap_mb=2"), "{text}");
    // tune.json round-trips; the report holds the tuning section.
    let back: TuneResult = serde_json::from_str(&fs::read_to_string(&out.json).unwrap()).unwrap();
    assert_eq!(back.recommendation.unwrap().cap_mb, 2.0);
    let html = fs::read_to_string(&out.report).unwrap();
    assert_eq!(out.report, series.join("report.html"));
    let doc = check_report(&html);
    assert!(doc.descendants().any(|n| n.attribute("id") == Some("tune")));
    let all = all_text(&doc);
    assert!(all.contains("bucket_cap_mb tuning"));
    assert!(all.contains("Measurement against advise's prediction"));
    assert!(
        all.contains("<script>alert(4)</script>"),
        "the job's log line is shown as text"
    );
    assert!(!html.contains("<script"));
    assert!(common::chart_texts(&doc)
        .iter()
        .any(|t| t == "bucket_cap_mb (MiB, log scale)"));
    // Every run kept its own directory.
    assert!(series.join("cap-2-r1/manifest.json").is_file());
    assert!(series.join("cap-16-r2/traces/rank-1.jsonl").is_file());
}

#[test]
fn the_auto_search_finds_the_fastest_cap_from_advise() {
    let dir = tempfile::tempdir().unwrap();
    let out = tune(&dir.path().join("auto"), TuneCaps::Auto, &[], 1);
    let r = &out.result;
    assert_eq!(r.mode, TuneMode::Auto);
    assert!(
        r.candidates.iter().any(|c| c.cap_mb.is_none()),
        "no baseline run"
    );
    assert!(!r.search.is_empty());
    assert_eq!(
        r.recommendation.as_ref().map(|x| x.cap_mb),
        Some(2.0),
        "{}",
        r.render_text()
    );
    // It measured the neighbours of where it ended, and nothing twice.
    let caps: Vec<f64> = r.search.iter().map(|s| s.cap_mb).collect();
    assert!(caps.contains(&1.0) && caps.contains(&4.0), "{caps:?}");
    let mut sorted = caps.clone();
    sorted.sort_by(f64::total_cmp);
    sorted.dedup();
    assert_eq!(sorted.len(), caps.len());
}

#[test]
fn a_failing_job_is_reported_not_recommended() {
    let dir = tempfile::tempdir().unwrap();
    let out = tune(
        &dir.path().join("fail"),
        TuneCaps::List(vec![2.0, 4.0]),
        &["--fail"],
        1,
    );
    let r = &out.result;
    assert!(r.recommendation.is_none());
    assert!(r.candidates.iter().all(|c| c.ok_runs() == 0));
    assert!(
        r.notes.iter().any(|n| n.contains("failed")),
        "{:?}",
        r.notes
    );
    let html = fs::read_to_string(&out.report).unwrap();
    let doc = check_report(&html);
    let text = all_text(&doc);
    assert!(text.contains("No recommendation"));
    assert!(
        text.contains("Why the run failed"),
        "the failed run's explanation"
    );
}

#[test]
fn a_job_that_ignores_the_cap_stops_the_tuning_with_why() {
    // The fake job builds its buckets with the default caps whatever it is handed (as
    // PyTorch's tutorial trainer, which builds DDP with its own arguments): its trace records
    // 25 MiB for the "2 MiB" run, and comparing the candidates would measure noise.
    let dir = tempfile::tempdir().unwrap();
    let err = run_tune(&TuneConfig {
        command: job(&["--ignore-cap"], 8),
        nproc_per_node: 2,
        caps: TuneCaps::List(vec![2.0, 4.0]),
        repeats: 1,
        dir: dir.path().join("ignored"),
        report: None,
        options: quiet(),
    })
    .expect_err("a job that ignores the cap cannot be tuned");
    let text = err.to_string();
    assert!(
        text.contains("asked for 2 MiB (DDP_PROBE_BUCKET_CAP_MB), its DDP recorded 25 MiB")
            && text.contains("bucket_cap_mb=float(os.environ.get("),
        "{text}"
    );
}

#[test]
fn scale_runs_each_world_size_and_reports_the_series() {
    let dir = tempfile::tempdir().unwrap();
    let series = dir.path().join("scale");
    let out = run_scale(&ScaleConfig {
        command: job(&[], 6),
        nprocs: vec![2, 1, 2],
        bucket_cap_mb: Some(4.0),
        dir: series.clone(),
        report: Some(dir.path().join("scaling.html")),
        options: quiet(),
    })
    .unwrap();
    assert_eq!(out.runs.len(), 2);
    assert_eq!(out.runs[0].world_size, 1);
    assert!(series.join("n1/manifest.json").is_file() && series.join("n2/manifest.json").is_file());
    let s = out.scaling.expect("a scaling series");
    assert_eq!(s.points.len(), 2);
    assert_eq!(s.unit, probe_reports::ThroughputUnit::SamplesPerS);
    // 32 samples per step and rank over the median step.
    let p = &s.points[1];
    assert!((p.throughput - 2.0 * 32.0 * 1e9 / p.median_step_ns).abs() < 1e-6 * p.throughput);
    // Two ranks communicate, one barely: less than ideal.
    assert!(
        s.points[1].efficiency < 1.0 && s.points[1].efficiency > 0.5,
        "{s:?}"
    );
    assert!(s.points[1].exposed_share > s.points[0].exposed_share);
    let html = fs::read_to_string(dir.path().join("scaling.html")).unwrap();
    let doc = check_report(&html);
    assert!(doc
        .descendants()
        .any(|n| n.attribute("id") == Some("scaling")));
    assert!(s.render_text().contains("efficiency"));
}

#[test]
fn bad_series_options_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let err = run_scale(&ScaleConfig {
        command: job(&[], 2),
        nprocs: vec![],
        bucket_cap_mb: None,
        dir: dir.path().join("s"),
        report: None,
        options: quiet(),
    })
    .unwrap_err();
    assert!(err.to_string().contains("--nproc"), "{err}");
    let err = run_tune(&TuneConfig {
        command: job(&[], 2),
        nproc_per_node: 2,
        caps: TuneCaps::List(vec![1.0, -3.0]),
        repeats: 1,
        dir: dir.path().join("t"),
        report: None,
        options: quiet(),
    })
    .unwrap_err();
    assert!(err.to_string().contains("-3"), "{err}");
    assert!(!dir.path().join("t").exists());
    let err = run_tune(&TuneConfig {
        command: JobCommand {
            program: "/nonexistent/fakejob".into(),
            args: vec![],
            steps: None,
        },
        nproc_per_node: 1,
        caps: TuneCaps::List(vec![1.0]),
        repeats: 1,
        dir: dir.path().join("t2"),
        report: None,
        options: quiet(),
    })
    .unwrap_err();
    assert!(err.to_string().contains("could not launch"), "{err}");
}
