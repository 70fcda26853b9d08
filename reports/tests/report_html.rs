//! The HTML report: structure, escaping of everything that comes from
//! traces and logs, charts and their axis labels, size, and odd input
//! (failed runs, runs without traces, one rank, several world sizes).

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::{all_text, append_line, chart_texts, check_report, edit_traces};
use probe::synth::{generate_run, SynthConfig};
use probe_reports::{load_runs, render, write_html, ReportOptions};

const SCRIPT: &str = "<script>alert(1)</script>";

fn report_of(paths: &[PathBuf]) -> String {
    let runs = load_runs(paths).unwrap();
    render(&runs, None, &ReportOptions::default()).html
}

/// A 2-rank run whose program name, a parameter name and a log line carry
/// markup.
fn hostile_run(dir: &Path) -> PathBuf {
    let run = dir.join("hostile");
    let mut c = SynthConfig::new(2, 20, 3);
    c.straggler = Some((1, 1.3));
    generate_run(&c, &run).unwrap();
    edit_traces(
        &run,
        "\"program\":\"synthetic\"",
        &format!("\"program\":\"{SCRIPT}\""),
    );
    edit_traces(
        &run,
        "\"layers.0.weight\"",
        "\"layers.0.<b onmouseover=x>w\"",
    );
    append_line(
        &run,
        1,
        r#"{"type":"log","t":1700000000000950000,"level":"error","message":"loss is NaN <script>alert(2)</script> & \"quoted\""}"#,
    );
    run
}

#[test]
fn markup_from_traces_appears_as_text_never_as_tags() {
    let dir = tempfile::tempdir().unwrap();
    let run = hostile_run(dir.path());
    let html = report_of(&[run]);
    let doc = check_report(&html);
    let text = all_text(&doc);
    assert!(
        text.contains(SCRIPT),
        "the program name is not shown as text"
    );
    assert!(text.contains("loss is NaN <script>alert(2)</script> & \"quoted\""));
    assert!(text.contains("layers.0.<b onmouseover=x>w"));
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!html.contains("<script"), "a raw <script in the report");
    assert!(!html.contains("<b onmouseover"));
    // The title takes the run's name, as its directory does: the program's
    // file name ("script>" after the last slash) with only letters, digits,
    // `.`, `_` and `-` kept.
    let title = doc.descendants().find(|n| n.has_tag_name("title")).unwrap();
    assert!(title.children().all(|c| c.is_text()));
    assert_eq!(title.text(), Some("ddp-probe report: script_ (run)"));
}

#[test]
fn a_python_runs_report_is_titled_by_its_script_not_the_interpreter() {
    // PyTorch's tutorial trainer under `ddp-probe run` was titled "python3 (run)".
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("py");
    generate_run(&SynthConfig::new(2, 6, 2), &run).unwrap();
    edit_traces(
        &run,
        "\"argv\":[\"synthetic\"",
        "\"argv\":[\"/usr/bin/python3\",\"-u\",\"multigpu_torchrun.py\"",
    );
    edit_traces(
        &run,
        "\"program\":\"synthetic\"",
        "\"program\":\"/usr/bin/python3\"",
    );
    let doc_html = report_of(&[run]);
    let doc = check_report(&doc_html);
    let title = doc.descendants().find(|n| n.has_tag_name("title")).unwrap();
    assert_eq!(
        title.text(),
        Some("ddp-probe report: multigpu_torchrun (run)")
    );
}

#[test]
fn a_run_report_has_every_section_and_labelled_charts() {
    let dir = tempfile::tempdir().unwrap();
    let run = hostile_run(dir.path());
    // Another DDP model of the process, unrecorded: a note (the PyTorch module's instant).
    append_line(
        &run,
        0,
        r#"{"type":"instant","name":"unrecorded_ddp_model","t":1700000000000950000,"args":{"module":"Discriminator","parameters":321}}"#,
    );
    let html = report_of(&[run]);
    let doc = check_report(&html);
    for id in [
        "run-1-config",
        "run-1-breakdown",
        "run-1-step",
        "run-1-buckets",
        "run-1-comm",
        "run-1-stragglers",
        "run-1-advice",
        "run-1-warmup",
        "run-1-logs",
    ] {
        assert!(
            doc.descendants().any(|n| n.attribute("id") == Some(id)),
            "no section {id}"
        );
    }
    // Every link of the page's top goes to a section, and the run's notes are among them (before 2026-12-07 the notes, at the end of the page, had no link).
    let ids: Vec<&str> = doc
        .descendants()
        .filter_map(|n| n.attribute("id"))
        .collect();
    for href in doc.descendants().filter_map(|n| n.attribute("href")) {
        if let Some(target) = href.strip_prefix('#') {
            assert!(ids.contains(&target), "the link {href} goes nowhere");
        }
    }
    assert!(ids.contains(&"run-1-notes"), "{ids:?}");
    assert!(
        html.contains("href=\"#run-1-notes\""),
        "no link to the notes"
    );
    let svgs: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("svg"))
        .filter_map(|n| n.attribute("aria-label"))
        .collect();
    let schedules: Vec<&str> = svgs
        .iter()
        .filter_map(|l| l.strip_prefix("schedule: "))
        .collect();
    // The breakdown and the representative step, each drawn for wide screens and for
    // phones; the advice's simulated schedules (the recorded layout replayed, and the
    // recommended setting when it is another); the straggler's median held-back step as
    // recorded and without its lateness.
    assert_eq!(
        svgs.len() - schedules.len(),
        4,
        "breakdown and representative step, wide and narrow: {svgs:?}"
    );
    let advice = schedules
        .iter()
        .filter(|l| l.ends_with("(replayed)") || l.ends_with("(predicted)"))
        .count();
    assert!((1..=2).contains(&advice), "{svgs:?}");
    assert!(
        schedules.contains(&"recorded layout (replayed)"),
        "{svgs:?}"
    );
    let straggler: Vec<&&str> = schedules
        .iter()
        .filter(|l| l.starts_with("step "))
        .collect();
    assert_eq!(straggler.len(), 2, "{svgs:?}");
    assert!(
        straggler[0].ends_with("as recorded (rank 1 latest)"),
        "{straggler:?}"
    );
    assert!(
        straggler[1].ends_with("without rank 1's lateness"),
        "{straggler:?}"
    );
    let texts = chart_texts(&doc);
    for label in [
        "mean time per steady step (ms)",
        "time since the step started (ms)",
        "all ranks",
        "rank 0",
        "rank 1",
        "buckets",
        "comm",
    ] {
        assert!(
            texts.iter().any(|t| t == label),
            "no chart label {label:?}: {texts:?}"
        );
    }
    let text = all_text(&doc);
    // The straggler, the advice and the communication statistics.
    // The rank that held the steps back is the headline, with the arrival count under it:
    // the summary's own sentences.
    assert!(text.contains("Straggler: rank 1 held back"), "{text}");
    assert!(text.contains("Arrivals: rank 1 arrived last"), "{text}");
    assert!(text.contains("all_reduce"));
    assert!(text.contains("busbw"));
    assert!(text.contains("bucket_cap_mb"));
    // Legends name every part of the breakdown.
    for part in [
        "forward",
        "backward compute",
        "exposed communication",
        "optimizer",
        "data wait",
        "other",
    ] {
        assert!(text.contains(part), "no legend entry {part}");
    }
}

#[test]
fn eight_ranks_by_a_thousand_steps_stay_under_five_megabytes() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("big");
    generate_run(&SynthConfig::new(8, 1000, 8), &run).unwrap();
    let started = std::time::Instant::now();
    let html = report_of(&[run]);
    let took = started.elapsed();
    eprintln!(
        "8 ranks × 1000 steps: {} bytes of HTML in {:.2} s",
        html.len(),
        took.as_secs_f64()
    );
    assert!(html.len() < 5 * 1024 * 1024, "{} bytes", html.len());
    let doc = check_report(&html);
    let texts = chart_texts(&doc);
    assert!(texts.iter().any(|t| t == "rank 7"));
}

#[test]
fn a_failed_run_is_explained_with_escaped_evidence() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("failed");
    let mut c = SynthConfig::new(2, 6, 2);
    c.end_status = None;
    generate_run(&c, &run).unwrap();
    fs::create_dir_all(run.join("logs")).unwrap();
    fs::write(
        run.join("logs/rank-1.stderr"),
        "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB <script>alert(3)</script>\n",
    )
    .unwrap();
    let html = report_of(&[run]);
    let doc = check_report(&html);
    assert!(doc
        .descendants()
        .any(|n| n.attribute("id") == Some("run-1-failure")));
    let text = all_text(&doc);
    assert!(text.contains("Why the run failed"));
    assert!(text.contains("no end record"), "{text}");
    assert!(text.contains("out of memory"), "the diagnosis is missing");
    assert!(
        text.contains("<script>alert(3)</script>"),
        "evidence not shown as text"
    );
    assert!(!html.contains("<script"));
}

#[test]
fn what_the_program_does_wrong_comes_first_as_warnings() {
    // A rank's recorder warned in its trace (the PyTorch module, when DDP's forward was
    // bypassed): the warning has its own section after the overview and a link to it.
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("warned");
    generate_run(&SynthConfig::new(2, 6, 2), &run).unwrap();
    append_line(
        &run,
        1,
        r#"{"type":"log","t":1700000000000950000,"level":"warning","message":"the optimizer stepped 4 of the DistributedDataParallel model's parameters with gradients from a backward that did not go through its forward"}"#,
    );
    let html = report_of(std::slice::from_ref(&run));
    let doc = check_report(&html);
    let section = doc
        .descendants()
        .find(|n| n.attribute("id") == Some("run-1-warnings"))
        .expect("a warnings section");
    let text = all_text(&doc);
    assert!(
        section
            .descendants()
            .filter_map(|n| n.text())
            .collect::<String>()
            .contains("Rank 1: the optimizer stepped 4 of the DistributedDataParallel model's"),
        "{text}"
    );
    assert!(html.contains("href=\"#run-1-warnings\""), "no link to it");
    // It comes before the step's figures.
    assert!(
        text.find("Warnings: fix these first") < text.find("Step-time breakdown per rank"),
        "{text}"
    );
}

#[test]
fn a_run_stopped_with_ctrl_c_is_said_to_have_stopped_not_failed() {
    // A user's Ctrl-C on a long job (PyTorch's ImageNet example, stopped after 70 steps to
    // look at it): the launcher's status is `interrupted`; the section had read "Why the run
    // failed".
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("stopped");
    let mut c = SynthConfig::new(2, 6, 2);
    c.end_status = None;
    generate_run(&c, &run).unwrap();
    fs::write(
        run.join("manifest.json"),
        serde_json::json!({
            "format": 1, "status": "interrupted", "exit_code": 130, "world_size": 2,
            "ended_at": null, "duration_s": 50.2, "hang_timeout_s": null,
            "bucket_cap_mb": null, "first_failure": null, "hang": null,
            "interrupted_by": "SIGINT", "launch_error": null,
        })
        .to_string(),
    )
    .unwrap();
    let text = all_text(&check_report(&report_of(&[run])));
    assert!(
        text.contains("Why the run stopped") && !text.contains("Why the run failed"),
        "{text}"
    );
    assert!(
        text.contains("the launcher got SIGINT and stopped the ranks"),
        "{text}"
    );
}

#[test]
fn runs_without_traces_one_rank_or_no_steps_still_render() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    fs::create_dir_all(empty.join("traces")).unwrap();
    let one = dir.path().join("one");
    generate_run(&SynthConfig::new(1, 3, 1), &one).unwrap();
    let header_only = dir.path().join("header-only");
    fs::create_dir_all(header_only.join("traces")).unwrap();
    fs::write(
        header_only.join("traces/rank-0.jsonl"),
        "{\"type\":\"header\",\"format\":\"ddp-probe-trace\",\"version\":\"1.0\",\"run_id\":\"h\",\"rank\":0,\"world_size\":2,\"start_ns\":1700000000000000000}\n",
    )
    .unwrap();
    for run in [empty, one, header_only] {
        let html = report_of(std::slice::from_ref(&run));
        let doc = check_report(&html);
        let text = all_text(&doc);
        assert!(
            text.contains("Configuration and environment"),
            "{}",
            run.display()
        );
        if run.ends_with("empty") {
            assert!(text.contains("could not be loaded"), "{text}");
        }
        if run.ends_with("header-only") {
            assert!(
                text.contains("No steady steps") || text.contains("no step spans"),
                "{text}"
            );
        }
    }
}

#[test]
fn runs_at_several_world_sizes_get_a_scaling_section() {
    let dir = tempfile::tempdir().unwrap();
    let series = dir.path().join("series");
    for n in [1u32, 2, 4] {
        let mut c = SynthConfig::new(n, 10, 2);
        c.run_id = format!("n{n}");
        c.latency_ns = 1_000_000 * u64::from(n);
        generate_run(&c, &series.join(format!("n{n}"))).unwrap();
    }
    let out = dir.path().join("out/report.html");
    let runs = load_runs(&[series]).unwrap();
    let rendered = render(&runs, None, &ReportOptions::default());
    write_html(&out, &rendered.html).unwrap();
    let html = fs::read_to_string(&out).unwrap();
    let doc = check_report(&html);
    assert!(doc
        .descendants()
        .any(|n| n.attribute("id") == Some("scaling")));
    let texts = chart_texts(&doc);
    for label in [
        "world size (ranks)",
        "throughput (rank-steps/s)",
        "share",
        "1",
        "2",
        "4",
    ] {
        assert!(
            texts.iter().any(|t| t == label),
            "no chart label {label:?}: {texts:?}"
        );
    }
    let text = all_text(&doc);
    assert!(text.contains("of ideal scaling"));
    assert!(text.contains("efficiency"));
    let s = rendered.scaling.unwrap();
    assert_eq!(s.points.len(), 3);
    // Three runs, each a collapsible section.
    assert_eq!(
        doc.descendants()
            .filter(|n| n.has_tag_name("details") && n.attribute("class") == Some("run"))
            .count(),
        3
    );
}

/// The heatmaps of a run of 8 ranks × 20 steps with rank 5 slowed 1.5×: three figures, each a
/// PNG of one pixel per rank and step; in the arrival lateness map rank 5's row holds the
/// darkest pixel of every steady step's column, and no other row reaches the top colour.
#[test]
fn the_lateness_heatmap_shows_the_slow_rank_s_row() {
    use base64::Engine as _;
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("slow5");
    let mut c = SynthConfig::new(8, 20, 3);
    c.straggler = Some((5, 1.5));
    generate_run(&c, &run).unwrap();
    let html = report_of(&[run]);
    let doc = check_report(&html);
    let figures: Vec<roxmltree::Node<'_, '_>> = doc
        .descendants()
        .filter(|n| n.has_tag_name("figure") && n.attribute("class") == Some("heatmap"))
        .collect();
    assert_eq!(figures.len(), 3, "step time, exposed, lateness");
    let caption = |f: &roxmltree::Node<'_, '_>| {
        f.descendants()
            .find(|n| n.has_tag_name("figcaption"))
            .and_then(|n| n.text())
            .unwrap_or("")
            .to_owned()
    };
    assert!(caption(&figures[2]).starts_with("arrival lateness"));
    let src = figures[2]
        .descendants()
        .find(|n| n.has_tag_name("img"))
        .and_then(|n| n.attribute("src"))
        .expect("an image");
    let png_bytes = base64::engine::general_purpose::STANDARD
        .decode(
            src.strip_prefix("data:image/png;base64,")
                .expect("a PNG data URL"),
        )
        .unwrap();
    let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(
        (info.width, info.height),
        (20, 8),
        "one pixel per step and rank"
    );
    let px = |x: usize, y: usize| {
        let i = (y * info.width as usize + x) * 3;
        [buf[i], buf[i + 1], buf[i + 2]]
    };
    // YlOrRd darkens as it rises: the darkest pixel is the one with the smallest sum.
    let darkness = |p: [u8; 3]| 765 - (u32::from(p[0]) + u32::from(p[1]) + u32::from(p[2]));
    let top = [0x80, 0x00, 0x26];
    for x in 2..20 {
        let darkest = (0..8).max_by_key(|&y| darkness(px(x, y))).unwrap();
        assert_eq!(darkest, 5, "step {x}");
        for y in (0..8).filter(|&y| y != 5) {
            assert_ne!(px(x, y), top, "rank {y}, step {x}");
        }
    }
    let text = all_text(&doc);
    assert!(
        text.contains("largest:") && text.contains("at rank 5"),
        "{text}"
    );
}

/// Two runs: the report starts with what changed from the first to the second, as `ddp-probe
/// compare` says it (the second's data loading 6 ms slower per step; other settings equal).
/// Three runs: no such section.
#[test]
fn two_runs_get_a_section_on_what_changed_between_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut before = SynthConfig::new(2, 20, 2);
    before.run_id = "before".into();
    let mut after = before.clone();
    after.run_id = "after".into();
    after.seed = 2;
    after.data_ns += 6_000_000;
    let (a, b) = (dir.path().join("before"), dir.path().join("after"));
    generate_run(&before, &a).unwrap();
    generate_run(&after, &b).unwrap();
    let html = report_of(&[a.clone(), b.clone()]);
    let doc = check_report(&html);
    assert!(doc
        .descendants()
        .any(|n| n.attribute("id") == Some("comparison")));
    let text = all_text(&doc);
    assert!(text.contains("What changed from before to after"), "{text}");
    assert!(
        text.contains("the largest part of it is data wait"),
        "{text}"
    );

    let c = dir.path().join("third");
    generate_run(&SynthConfig::new(2, 20, 2), &c).unwrap();
    let html = report_of(&[a, b, c]);
    assert!(!html.contains("id=\"comparison\""));
}

#[test]
fn parts_no_rank_recorded_are_dashes_with_a_note_not_zeros() {
    // A PyTorch program under the module whose batches come from its own loader: no data
    // wait spans. The table and the comparison say "-" and why, never "0 ns".
    let dir = tempfile::tempdir().unwrap();
    let mut unseen = SynthConfig::new(2, 20, 2);
    unseen.data_wait_recorded = false;
    let mut again = unseen.clone();
    again.seed = 2;
    let (a, b) = (dir.path().join("one"), dir.path().join("two"));
    generate_run(&unseen, &a).unwrap();
    generate_run(&again, &b).unwrap();
    let text = all_text(&check_report(&report_of(std::slice::from_ref(&a))));
    assert!(
        text.contains("A \"-\" is a part no rank recorded (data wait): its time is in other."),
        "{text}"
    );
    assert!(
        text.contains("data wait (not recorded)"),
        "the legend: {text}"
    );
    let text = all_text(&check_report(&report_of(&[a, b])));
    assert!(
        text.contains("Not recorded in either run: data wait (their time is in other)."),
        "{text}"
    );
}

#[test]
fn the_report_gives_the_text_summarys_straggler_verdict_word_for_word() {
    // A run whose straggler the per-step slowdown names: the report must not say less (it
    // once said "No straggler" from the arrival count alone while the summary named the rank).
    let dir = tempfile::tempdir().unwrap();
    let run = hostile_run(dir.path());
    let (loaded, _) = probe::load_run(std::slice::from_ref(&run)).unwrap();
    let summary = probe::analysis::summarize(&loaded, &probe::analysis::SummaryOptions::default());
    let verdict = summary.straggler_verdict();
    assert!(
        verdict[0].names_straggler && verdict[0].text.starts_with("straggler: rank 1 held back"),
        "{verdict:?}"
    );
    let html = report_of(&[run]);
    let doc = check_report(&html);
    let section = doc
        .descendants()
        .find(|n| n.attribute("id") == Some("run-1-stragglers"))
        .expect("a stragglers section");
    let paragraphs: Vec<String> = section
        .children()
        .filter(|n| n.has_tag_name("p"))
        .map(|p| {
            p.descendants()
                .filter(|t| t.is_text())
                .filter_map(|t| t.text())
                .collect()
        })
        .collect();
    assert_eq!(paragraphs.len(), verdict.len(), "{paragraphs:?}");
    for (shown, line) in paragraphs.iter().zip(&verdict) {
        // The same sentence, its first letter capitalised.
        assert_eq!(shown[1..], line.text[1..], "{paragraphs:?}");
        assert_eq!(shown[..1], line.text[..1].to_uppercase(), "{paragraphs:?}");
    }
    let headline = section.children().find(|n| n.has_tag_name("p")).unwrap();
    assert_eq!(headline.attribute("class"), Some("headline warn"));
}
