//! The HTML of one run: overview, configuration and environment, failure
//! explanation, step-time breakdown per rank, the representative step,
//! buckets, communication statistics, stragglers, bucket_cap_mb advice,
//! warm-up steps, log messages and notes.

use std::collections::BTreeSet;

use probe::analysis::{list_words, Advice, Breakdown, Confidence, Summary, WhatIf};
use probe::model::Run;
use probe::trace::LogLevel;
use probe::wrap::capitalized;
use probe_explain::{Report as Diagnosis, Role};

use crate::analyze::RunAnalysis;
use crate::charts::{self, palette, BarRow};
use crate::gantt::{end_of_run, gantt_data, median_step};
use crate::html::{Cell, Html, Table};
use crate::input::RunInput;
use crate::options::ReportOptions;
use crate::units::{bytes, count_rate, group_thousands, mib, ns, pct, rate, signed_ns};

/// Most log messages listed per run.
const MAX_LOG_LINES: usize = 60;
/// Most parameter names shown per bucket.
const NAMES_PER_BUCKET: usize = 4;

/// Writes the sections of one run; `id` prefixes the element ids.
pub(crate) fn write_run(
    h: &mut Html,
    input: &RunInput,
    a: &RunAnalysis,
    id: &str,
    opts: &ReportOptions,
) {
    overview(h, input, a);
    if a.failed() {
        failure(h, a, id);
    }
    warnings(h, a, id);
    if let Some(run) = &input.run {
        let diagnosis = a.diagnosis.as_ref().and_then(|d| d.as_ref().ok());
        where_it_stopped(h, run, diagnosis, id, opts);
    }
    configuration(h, input, a, id);
    if let (Some(run), Some(summary)) = (&input.run, &a.summary) {
        breakdown(h, summary, id, opts);
        representative_step(h, run, a, id, opts);
        buckets(h, run, summary, id);
        communication(h, summary, id);
        stragglers(h, summary, id);
        heatmaps(h, run, a, id);
    }
    if let Some(advice) = &a.advice {
        advice_section(h, advice, id);
    }
    if let Some(summary) = &a.summary {
        warmup(h, summary, id);
    }
    if let Some(run) = &input.run {
        logs(h, run, id);
    }
    notes(h, input, a, id);
}

fn section(h: &mut Html, id: &str, part: &str, title: &str) {
    h.open("section", &[("id", &format!("{id}-{part}"))])
        .elem("h3", &[], title);
}

/// Key numbers as cards.
fn overview(h: &mut Html, input: &RunInput, a: &RunAnalysis) {
    let mut cards: Vec<(String, String, &str)> = Vec::new();
    let status = if a.failed() {
        input
            .manifests
            .iter()
            .map(|m| m.status.to_string())
            .find(|s| s != "ok")
            .unwrap_or_else(|| "failed".to_owned())
    } else {
        "ok".to_owned()
    };
    cards.push((
        "status".into(),
        status,
        if a.failed() { "bad" } else { "good" },
    ));
    if let Some(n) = input.world_size() {
        cards.push(("ranks".into(), n.to_string(), ""));
    }
    if let Some(s) = &a.summary {
        if let Some(first) = s.ddp_groups.first() {
            // DDP reduces over subgroups: each group's ranks are compared with each other.
            let same = s.ddp_groups.iter().all(|g| g.len() == first.len());
            let v = if same {
                format!("{} × {} ranks", s.ddp_groups.len(), first.len())
            } else {
                format!("{} groups", s.ddp_groups.len())
            };
            cards.push(("DDP process groups".into(), v, ""));
        }
        cards.push((
            "steady steps".into(),
            group_thousands(s.steady_steps as i64),
            "",
        ));
        if let Some(b) = &s.overall {
            cards.push(("median step".into(), ns(b.step.median), ""));
            let share = b.totals.comm_exposed_ns as f64 / b.totals.step_ns.max(1) as f64;
            cards.push((
                "exposed communication".into(),
                pct(share),
                if share > 0.2 { "warn" } else { "" },
            ));
        }
        match (s.throughput.samples_per_s, s.throughput.steps_per_s) {
            (Some(v), _) => cards.push(("samples/s".into(), count_rate(v), "")),
            (None, Some(v)) => cards.push(("steps/s".into(), count_rate(v), "")),
            _ => {}
        }
    }
    if let Some(r) = a.advice.as_ref().and_then(|x| x.recommendation.as_ref()) {
        let text = if r.worth_changing {
            format!("{} MiB (−{})", mib(r.cap_mb), pct(r.gain_frac))
        } else {
            "keep".to_owned()
        };
        cards.push(("bucket_cap_mb advice".into(), text, ""));
    }
    h.open("div", &[("class", "cards")]);
    for (k, v, class) in &cards {
        let c = if class.is_empty() {
            "card".to_owned()
        } else {
            format!("card {class}")
        };
        h.open("div", &[("class", &c)])
            .elem("div", &[("class", "k")], k)
            .elem("div", &[("class", "v")], v)
            .close("div");
    }
    h.close("div");
}

fn configuration(h: &mut Html, input: &RunInput, a: &RunAnalysis, id: &str) {
    section(h, id, "config", "Configuration and environment");
    let mut f: Vec<(String, String)> = Vec::new();
    let program = input.program().unwrap_or_else(|| "unknown".to_owned());
    let mut command = vec![program];
    command.extend(input.args());
    f.push(("command".into(), command.join(" ")));
    if let Some(rid) = input.run_id() {
        f.push(("run id".into(), rid));
    }
    let m = input.manifests.first();
    if let Some(m) = m {
        let mut s = m.status.to_string();
        if let Some(c) = m.exit_code {
            s.push_str(&format!(" (exit code {c})"));
        }
        f.push(("launcher status".into(), s));
        f.push(("started".into(), m.started_at.clone()));
        if let Some(d) = m.duration_s {
            f.push(("duration".into(), format!("{d:.1} s")));
        }
        f.push((
            "layout".into(),
            format!(
                "{} rank{}: {} node{} × {} per node",
                m.world_size,
                if m.world_size == 1 { "" } else { "s" },
                m.nnodes,
                if m.nnodes == 1 { "" } else { "s" },
                m.nproc_per_node
            ),
        ));
        f.push((
            "master".into(),
            format!("{}:{}", m.master_addr, m.master_port),
        ));
        f.push(("working directory".into(), m.cwd.clone()));
        f.push(("ddp-probe".into(), m.ddp_probe_version.clone()));
        if let Some(c) = m.bucket_cap_mb {
            f.push(("--bucket-cap-mb".into(), format!("{} MiB", mib(c))));
        }
    }
    f.push((
        "run directory".into(),
        input
            .dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
    ));
    if let Some(run) = &input.run {
        let hosts: BTreeSet<&str> = run
            .ranks
            .iter()
            .map(|r| r.header.hostname.as_str())
            .filter(|s| !s.is_empty())
            .collect();
        if !hosts.is_empty() {
            f.push((
                "hosts".into(),
                hosts.into_iter().collect::<Vec<_>>().join(", "),
            ));
        }
        let ddp = run.ranks.iter().find_map(|r| r.header.ddp.as_ref());
        match ddp {
            Some(d) => {
                f.push(("backend".into(), d.backend.clone()));
                let groups = run.ddp_subgroups();
                if !groups.is_empty() {
                    f.push((
                        "DDP process groups".into(),
                        format!(
                            "{} (each group's ranks are compared with each other)",
                            probe::trace::groups_text(&groups)
                        ),
                    ));
                }
                f.push((
                    "bucket_cap_mb".into(),
                    d.bucket_cap_mb
                        .map_or("not recorded (PyTorch default 25)".into(), |c| {
                            format!("{} MiB", mib(c))
                        }),
                ));
                if let Some(b) = d.first_bucket_bytes {
                    f.push(("first bucket".into(), bytes(b as f64)));
                }
                f.push((
                    "find_unused_parameters".into(),
                    d.find_unused_parameters.to_string(),
                ));
                f.push((
                    "gradient_as_bucket_view".into(),
                    d.gradient_as_bucket_view.to_string(),
                ));
                if !d.params.is_empty() {
                    let total: u64 = d.params.iter().map(|p| p.bytes).sum();
                    let dtypes: BTreeSet<&str> =
                        d.params.iter().map(|p| p.dtype.as_str()).collect();
                    f.push((
                        "parameters".into(),
                        format!(
                            "{} tensors, {} of gradients ({})",
                            d.params.len(),
                            bytes(total as f64),
                            dtypes.into_iter().collect::<Vec<_>>().join(", ")
                        ),
                    ));
                }
            }
            None => f.push(("DDP".into(), "no DDP configuration in the traces".into())),
        }
        if let Some(layout) = steady_layout(run, a) {
            let sizes: Vec<u64> = layout.iter().map(|b| b.bytes).collect();
            let lo = sizes.iter().copied().min().unwrap_or(0);
            let hi = sizes.iter().copied().max().unwrap_or(0);
            f.push((
                "buckets".into(),
                format!(
                    "{} in the steady steps ({} to {})",
                    layout.len(),
                    bytes(lo as f64),
                    bytes(hi as f64)
                ),
            ));
        }
        let versions: BTreeSet<String> = run.ranks.iter().map(|r| r.version.to_string()).collect();
        f.push((
            "trace".into(),
            format!(
                "format {}, {} of {} ranks, {} spans",
                versions.into_iter().collect::<Vec<_>>().join(", "),
                run.ranks.len(),
                run.world_size,
                group_thousands(run.span_count() as i64)
            ),
        ));
        let off = run
            .ranks
            .iter()
            .map(|r| r.header.offset_to_rank0_ns.unsigned_abs())
            .max()
            .unwrap_or(0);
        let unc = run
            .ranks
            .iter()
            .map(|r| r.header.offset_uncertainty_ns)
            .max()
            .unwrap_or(0);
        f.push((
            "clock offsets".into(),
            format!(
                "largest {} to rank 0 (uncertainty ±{})",
                ns(off as f64),
                ns(unc as f64)
            ),
        ));
    }
    h.facts(&f);
    let env: Vec<(&String, &String)> = input.manifests.iter().flat_map(|m| m.env.iter()).collect();
    if !env.is_empty() {
        h.open("details", &[]).elem(
            "summary",
            &[],
            &format!("environment ({} variables)", env.len()),
        );
        let mut t = Table::new(&["variable", "value"]);
        for (k, v) in env {
            t.row(vec![Cell::markup(code(k)), Cell::markup(code(v))]);
        }
        h.table(&t).close("details");
    }
    h.close("section");
}

/// `<code>` around escaped text.
fn code(s: &str) -> String {
    let mut h = Html::new();
    h.elem("code", &[], s);
    h.finish()
}

/// The bucket layout of the steady steps (else the last one).
fn steady_layout<'r>(run: &'r Run, a: &RunAnalysis) -> Option<&'r [probe::trace::BucketInfo]> {
    let first = a
        .steps
        .iter()
        .filter(|s| s.warmup.is_none())
        .filter_map(|s| s.step)
        .min();
    run.ranks
        .iter()
        .find_map(|r| match first {
            Some(s) => r.layout_at(s),
            None => r.layouts.last(),
        })
        .map(|l| l.buckets.as_slice())
        .filter(|b| !b.is_empty())
}

fn failure(h: &mut Html, a: &RunAnalysis, id: &str) {
    // A run stopped from outside (Ctrl-C, a batch system's signal) did not fail on its own.
    let interrupted = matches!(&a.diagnosis, Some(Ok(d)) if d.findings.first()
        .is_some_and(|f| f.category == probe_explain::Category::LauncherInterrupted));
    let title = if interrupted {
        "Why the run stopped"
    } else {
        "Why the run failed"
    };
    section(h, id, "failure", title);
    h.open("ul", &[("class", "reasons")]);
    for r in &a.failure {
        h.elem("li", &[], r);
    }
    h.close("ul");
    match &a.diagnosis {
        Some(Ok(d)) => diagnosis(h, d),
        Some(Err(e)) => {
            h.note(&format!("No diagnosis: {e}"));
        }
        None => {}
    }
    h.close("section");
}

/// What the program does that defeats data parallelism or wastes it ([`Summary::warnings`]),
/// right after the overview: to fix before reading the step's figures.
fn warnings(h: &mut Html, a: &RunAnalysis, id: &str) {
    let Some(summary) = a.summary.as_ref().filter(|s| !s.warnings.is_empty()) else {
        return;
    };
    section(h, id, "warnings", "Warnings: fix these first");
    h.open("ul", &[("class", "reasons")]);
    for w in &summary.warnings {
        h.open("li", &[]).prose(&capitalized(w)).close("li");
    }
    h.close("ul").close("section");
}

fn diagnosis(h: &mut Html, d: &Diagnosis) {
    h.open("p", &[("class", "headline")])
        .text(&d.headline)
        .close("p");
    if let Some(run) = &d.run {
        if !run.ranks.is_empty() {
            let mut t = Table::new(&["#rank", "how it ended", "#after", "stopped by ddp-probe"]);
            for r in &run.ranks {
                t.row(vec![
                    Cell::num(r.rank.to_string()),
                    Cell::text(&r.how),
                    Cell::num(r.after_s.map_or("-".into(), |s| format!("{s:.1} s"))),
                    Cell::text(if r.stopped_by_launcher { "yes" } else { "no" }),
                ]);
            }
            h.table(&t);
        }
    }
    for (i, f) in d.findings.iter().enumerate() {
        let role = match f.role {
            Role::Cause => "cause",
            Role::Symptom => "symptom",
            Role::Consequence => "consequence",
        };
        h.open("div", &[("class", &format!("finding {role}"))])
            .open("h4", &[])
            .text(&format!("{}. {}", i + 1, f.title))
            .text(" ")
            .elem("span", &[("class", "tag")], f.category.id())
            .elem("span", &[("class", "tag")], role)
            .close("h4");
        h.para(&f.explanation);
        if !f.ranks.is_empty() {
            h.para(&format!(
                "Ranks: {}",
                f.ranks
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if !f.evidence.is_empty() {
            h.open("ul", &[("class", "evidence")]);
            for e in &f.evidence {
                h.open("li", &[])
                    .elem("code", &[("class", "loc")], &e.location())
                    .elem("pre", &[], &e.text)
                    .close("li");
            }
            if f.evidence_omitted > 0 {
                h.elem("li", &[], &format!("(+{} more lines)", f.evidence_omitted));
            }
            h.close("ul");
        }
        h.open("p", &[])
            .elem("strong", &[], "Fix: ")
            .prose(&f.fix)
            .close("p");
        h.open("p", &[("class", "note")])
            .text("More: ")
            .elem("code", &[], &f.doc)
            .close("p");
        h.close("div");
    }
    for c in &d.nccl {
        h.note(&format!("NCCL: {}", c.text));
    }
    for n in &d.notes {
        h.note(n);
    }
}

/// Mean per step of each part, in ms, in the chart's order: forward,
/// backward, exposed communication, optimizer, data wait, other (the rest of
/// the mean step).
fn parts_ms(b: &Breakdown) -> Vec<f64> {
    let n = b.steps.max(1) as f64;
    let t = &b.totals;
    let per = |v: i64| v as f64 / n / 1e6;
    let known = [
        per(t.forward_ns),
        per(t.backward_ns),
        per(t.comm_exposed_ns),
        per(t.optimizer_ns),
        per(t.data_wait_ns),
    ];
    let rest = (per(t.step_ns) - known.iter().sum::<f64>()).max(0.0);
    let mut v = known.to_vec();
    v.push(rest);
    v
}

const PART_NAMES: [&str; 6] = [
    "forward",
    "backward compute",
    "exposed communication",
    "optimizer",
    "data wait",
    "other",
];
/// The summary's name ([`Summary::not_recorded`]) of each of [`PART_NAMES`] that a trace may
/// lack.
const PART_RECORDED_AS: [Option<&str>; 6] = [
    None,
    None,
    Some("communication"),
    Some("optimizer"),
    Some("data wait"),
    None,
];

/// Whether part `i` of [`PART_NAMES`] was recorded by some rank of the run.
fn part_recorded(s: &Summary, i: usize) -> bool {
    PART_RECORDED_AS[i].is_none_or(|name| s.recorded(name))
}

const PART_COLORS: [charts::Rgb; 6] = [
    palette::FORWARD,
    palette::BACKWARD,
    palette::EXPOSED,
    palette::OPTIMIZER,
    palette::DATA,
    palette::OTHER,
];

fn breakdown(h: &mut Html, s: &Summary, id: &str, opts: &ReportOptions) {
    section(h, id, "breakdown", "Step-time breakdown per rank");
    let Some(overall) = &s.overall else {
        h.note("No steady steps to break down (every step is a warm-up step, or the traces have no step spans).");
        h.close("section");
        return;
    };
    let mut ranked: Vec<(&probe::analysis::RankSummary, &Breakdown)> = s
        .ranks
        .iter()
        .filter_map(|r| r.breakdown.as_ref().map(|b| (r, b)))
        .collect();
    let total_ranks = ranked.len();
    if ranked.len() > opts.max_bar_ranks {
        ranked.sort_by(|a, b| b.1.step.mean.total_cmp(&a.1.step.mean));
        ranked.truncate(opts.max_bar_ranks);
        ranked.sort_by_key(|r| r.0.rank);
        h.note(&format!(
            "{} ranks: the {} with the longest mean step are shown.",
            total_ranks, opts.max_bar_ranks
        ));
    }
    let mut rows = vec![BarRow {
        label: "all ranks".into(),
        values: parts_ms(overall),
    }];
    rows.extend(ranked.iter().map(|(r, b)| BarRow {
        label: format!("rank {}", r.rank),
        values: parts_ms(b),
    }));
    match charts::stacked_bars(
        "mean step time per rank, broken down",
        &rows,
        &PART_COLORS,
        "mean time per steady step (ms)",
    ) {
        Ok(svg) => {
            h.open("figure", &[("class", "chart")]).raw(&svg);
            let names: Vec<String> = (0..PART_NAMES.len())
                .map(|i| {
                    if part_recorded(s, i) {
                        PART_NAMES[i].to_owned()
                    } else {
                        format!("{} (not recorded)", PART_NAMES[i])
                    }
                })
                .collect();
            let entries: Vec<(&str, charts::Rgb, bool)> = names
                .iter()
                .zip(PART_COLORS)
                .map(|(n, c)| (n.as_str(), c, false))
                .collect();
            h.raw(&charts::legend(&entries)).close("figure");
        }
        Err(e) => {
            h.note(&e.to_string());
        }
    }
    let comm = overall.totals.comm_ns.max(1) as f64;
    h.para(&format!(
        "Means over {} steady rank-steps. Communication takes {} per step on average; {} of it overlaps compute, the exposed rest is {} of the step. \"Other\" is the step time not covered by the parts shown (writeback, framework overhead, gaps).",
        overall.steps,
        ns(overall.comm.mean),
        pct(overall.totals.comm_overlapped_ns as f64 / comm),
        pct(overall.totals.comm_exposed_ns as f64 / overall.totals.step_ns.max(1) as f64),
    ));
    if let Some(placed) = probe::analysis::other_placement(overall) {
        h.para(&placed);
    }
    if let Some(between) = probe::analysis::between_steps_line(
        overall,
        s.longest_between.as_ref(),
        s.long_gaps.as_ref(),
    ) {
        h.para(&between);
    }
    let mut t = Table::new(&[
        "rank",
        "#steps",
        "#median step",
        "#p95 step",
        "#forward",
        "#backward",
        "#exposed comm",
        "#optimizer",
        "#data wait",
        "#other",
        "#exposed share",
        "#comm waiting",
    ]);
    let mut row = |label: String, b: &Breakdown, waiting: Option<f64>| {
        let p = parts_ms(b);
        // A part no rank recorded is "-", not a measured 0.
        let ms = |i: usize| {
            if part_recorded(s, i) {
                ns(p[i] * 1e6)
            } else {
                "-".to_owned()
            }
        };
        t.row(vec![
            Cell::text(label),
            Cell::num(group_thousands(b.steps as i64)),
            Cell::num(ns(b.step.median)),
            Cell::num(ns(b.step.p95)),
            Cell::num(ms(0)),
            Cell::num(ms(1)),
            Cell::num(ms(2)),
            Cell::num(ms(3)),
            Cell::num(ms(4)),
            Cell::num(ms(5)),
            Cell::num(pct(
                b.totals.comm_exposed_ns as f64 / b.totals.step_ns.max(1) as f64
            )),
            Cell::num(waiting.map_or("-".into(), pct)),
        ]);
    };
    let all_waiting = s
        .comm_split
        .as_ref()
        .map(|c| c.waiting_ns as f64 / c.total_ns.max(1) as f64);
    row("all ranks".into(), overall, all_waiting);
    for (r, b) in &ranked {
        row(format!("rank {}", r.rank), b, r.waiting_share);
    }
    h.table(&t);
    let unrecorded: Vec<&str> = (0..PART_NAMES.len())
        .filter(|&i| !part_recorded(s, i))
        .map(|i| PART_NAMES[i])
        .collect();
    h.note(&format!(
        "Comm waiting: the share of the rank's collective time spent waiting for the last rank to arrive (a rank that others wait for waits little itself).{}",
        if unrecorded.is_empty() {
            String::new()
        } else {
            format!(
                " A \"-\" is a part no rank recorded ({}): its time is in other.",
                unrecorded.join(", ")
            )
        }
    ));
    h.close("section");
}

fn representative_step(h: &mut Html, run: &Run, a: &RunAnalysis, id: &str, opts: &ReportOptions) {
    section(h, id, "step", "Representative step");
    let Some(choice) = median_step(&a.steps) else {
        h.note("The traces have no step spans, so there is no step to draw.");
        h.close("section");
        return;
    };
    let g = gantt_data(run, &choice, opts.max_gantt_ranks, &[]);
    let which = match (choice.step, choice.position) {
        (Some(n), _) => format!("Step {n}"),
        (None, Some(p)) => format!("The step at position {p}"),
        _ => "The step".to_owned(),
    };
    h.para(&format!(
        "{which}, the median of {} {} by duration across ranks: {} from the first rank's start to the last rank's end; rank {} took longest.{}",
        choice.candidates,
        if choice.warmup { "steps (all warm-up)" } else { "steady steps" },
        ns(choice.duration_ns as f64),
        choice.slowest_rank,
        if g.ranks_shown.len() < g.ranks_total {
            format!(
                " {} of {} ranks are drawn: the lowest ranks and the slowest one.",
                g.ranks_shown.len(),
                g.ranks_total
            )
        } else {
            String::new()
        }
    ));
    match charts::gantt(
        "timeline of the representative step per rank",
        &g.rows,
        &g.shade,
        &g.separators,
        &g.bars,
        g.t_max_ms,
        "time since the step started (ms)",
    ) {
        Ok(svg) => gantt_figure(h, &svg, false),
        Err(e) => {
            h.note(&e.to_string());
        }
    }
    if !g.exposed_ns.is_empty() {
        let total: i64 = g.exposed_ns.iter().map(|e| e.1).sum();
        h.note(&format!(
            "Exposed communication in this step: {} per drawn rank on average (the red parts: collectives running while no forward, backward or optimizer compute ran).",
            ns(total as f64 / g.exposed_ns.len() as f64)
        ));
    }
    h.close("section");
}

/// A per-rank Gantt chart (`svg`) with its legend; `unfinished` adds the colours of what never
/// ended.
fn gantt_figure(h: &mut Html, svg: &str, unfinished: bool) {
    let mut legend = Vec::new();
    if unfinished {
        legend.push((
            "never ended: collective or phase",
            palette::UNFINISHED,
            false,
        ));
        legend.push(("never ended: step", palette::UNFINISHED_STEP, false));
    }
    legend.extend([
        ("step (uncovered)", charts::Rgb(0xd9, 0xd9, 0xd9), false),
        ("data wait", palette::DATA, false),
        ("forward", palette::FORWARD, false),
        ("backward", palette::BACKWARD, false),
        ("optimizer", palette::OPTIMIZER, false),
        ("bucket ready window", palette::READY, false),
        ("communication, overlapped", palette::OVERLAPPED, false),
        ("communication, exposed", palette::EXPOSED, false),
        ("writeback", palette::WRITEBACK, false),
    ]);
    h.open("figure", &[("class", "chart")]).raw(svg);
    h.raw(&charts::legend(&legend)).close("figure");
}

/// For a run that left spans open (hang, crash, cut trace): each rank's last complete step
/// and what it never finished, drawn to the end of the recording, and listed; and where each
/// rank was in its program, when the diagnosis read their Python stacks.
fn where_it_stopped(
    h: &mut Html,
    run: &Run,
    diagnosis: Option<&Diagnosis>,
    id: &str,
    opts: &ReportOptions,
) {
    let open = run.open_spans();
    let Some(choice) = end_of_run(run, &open) else {
        return;
    };
    section(h, id, "stopped", "Where the run stopped");
    h.para(
        "What each rank was doing when the recording ended: its last complete step, then \
         what it began and never finished (in the colours of \u{201c}never ended\u{201d}, drawn to \
         the end of the recording: when the launcher stopped the rank, else the run's last \
         record).",
    );
    let g = gantt_data(run, &choice, opts.max_gantt_ranks, &open);
    let t0 = choice.windows.iter().map(|w| w.1).min().unwrap_or(0);
    match charts::gantt(
        "timeline of the end of the run per rank, with what never ended",
        &g.rows,
        &g.shade,
        &g.separators,
        &g.bars,
        g.t_max_ms,
        "time since the last complete step started (ms)",
    ) {
        Ok(svg) => gantt_figure(h, &svg, true),
        Err(e) => {
            h.note(&e.to_string());
        }
    }
    h.open("ul", &[]);
    for o in &open {
        h.elem(
            "li",
            &[],
            &format!(
                "rank {}: {}: began at {} on this chart and was still running when the \
                 recording ended, {} later",
                o.rank,
                o.what(),
                ns(o.start.saturating_sub(t0) as f64),
                ns(o.end.saturating_sub(o.start) as f64)
            ),
        );
    }
    h.close("ul");
    let stacks = diagnosis.map_or(&[][..], |d| &d.stacks[..]);
    if !stacks.is_empty() {
        h.para("Where each rank was in its program when the run was stopped (its Python stack):");
        h.open("ul", &[]);
        for st in stacks {
            h.elem(
                "li",
                &[],
                &format!("rank {}: {} ({}:{})", st.rank, st.place, st.file, st.line),
            );
        }
        h.close("ul");
    }
    h.close("section");
}

fn buckets(h: &mut Html, run: &Run, s: &Summary, id: &str) {
    section(h, id, "buckets", "Gradient buckets");
    if s.buckets.is_empty() {
        h.note("No bucket collectives in the steady steps.");
        h.close("section");
        return;
    }
    // A bucket's parameter names: the first few and how many more, and all of them.
    let names = |bucket: u32| -> Option<(String, String)> {
        let ddp = run.ranks.iter().find_map(|r| r.header.ddp.as_ref())?;
        let b = run
            .ranks
            .iter()
            .find_map(|r| r.layouts.last())
            .and_then(|l| l.buckets.iter().find(|b| b.id == bucket))?;
        let all: Vec<&str> = b
            .params
            .iter()
            .filter_map(|&i| ddp.params.iter().find(|p| p.index == i))
            .map(|p| p.name.as_str())
            .collect();
        let mut short: Vec<String> = all
            .iter()
            .take(NAMES_PER_BUCKET)
            .map(|n| n.to_string())
            .collect();
        let more = b.params.len().saturating_sub(short.len());
        if more > 0 {
            short.push(format!("+{more} more"));
        }
        Some((short.join(", "), all.join(", ")))
    };
    let mut t = Table::new(&[
        "#bucket",
        "#size",
        "#params",
        "#ready after bwd start",
        "#launch delay",
        "#all-reduce time",
        "#waiting",
        "#transfer",
        "#busbw (transfer)",
        "#exposed",
        "#skew",
    ]);
    let d = |x: &probe::analysis::Dist| {
        if x.is_empty() {
            "-".to_owned()
        } else {
            ns(x.median)
        }
    };
    for b in &s.buckets {
        t.row(vec![
            Cell::num(b.bucket.to_string()),
            Cell::num(b.bytes.map_or("-".into(), |v| bytes(v as f64))),
            Cell::num(b.params.map_or("-".into(), |v| v.to_string())),
            Cell::num(d(&b.ready_after_backward_start)),
            Cell::num(d(&b.launch_delay)),
            Cell::num(d(&b.duration)),
            Cell::num(b.waiting_share.map_or("-".into(), pct)),
            Cell::num(d(&b.transfer)),
            Cell::num(
                b.busbw_transfer_bytes_per_s
                    .or(b.busbw_bytes_per_s)
                    .map_or("-".into(), rate),
            ),
            Cell::num(d(&b.exposed)),
            Cell::num(d(&b.skew)),
        ]);
    }
    h.table(&t);
    // The parameters of each bucket below the numbers, where long names wrap instead of
    // widening the table; every name on hover.
    let lists: Vec<(u32, (String, String))> = s
        .buckets
        .iter()
        .filter_map(|b| Some((b.bucket, names(b.bucket)?)))
        .collect();
    if !lists.is_empty() {
        h.open("ul", &[("class", "bucket-params")]);
        for (bucket, (short, all)) in &lists {
            h.open("li", &[])
                .elem("b", &[], &format!("bucket {bucket}"))
                .text(": ")
                .elem("span", &[("class", "names"), ("title", all)], short)
                .close("li");
        }
        h.close("ul");
    }
    h.note("Medians over the steady steps of all ranks. Bucket 0 is reduced first (it holds the parameters whose gradients are ready first). Launch delay: from ready to the all-reduce's start; waiting: the share of the all-reduce time spent waiting for the last rank to arrive; transfer: the collective's own time, the shortest call across the ranks, over which busbw is taken; skew: latest minus earliest start across ranks.");
    if let Some(line) = s
        .comm_split
        .as_ref()
        .and_then(probe::analysis::CommSplit::sentence)
    {
        h.note(&line);
    }
    h.close("section");
}

fn communication(h: &mut Html, s: &Summary, id: &str) {
    section(h, id, "comm", "Communication by operation");
    if s.ops.is_empty() {
        h.note("No collectives in the steady steps.");
        h.close("section");
        return;
    }
    let mut t = Table::new(&[
        "operation",
        "#calls",
        "#total size",
        "#average size",
        "#total latency",
        "#average latency",
        "#algbw",
        "#busbw",
    ]);
    for o in &s.ops {
        let sized = o.calls_with_bytes > 0;
        t.row(vec![
            Cell::text(&o.op),
            Cell::num(group_thousands(o.calls as i64)),
            Cell::num(if sized {
                bytes(o.bytes_total as f64)
            } else {
                "-".into()
            }),
            Cell::num(if sized {
                bytes(o.bytes_mean)
            } else {
                "-".into()
            }),
            Cell::num(ns(o.latency_total_ns as f64)),
            Cell::num(ns(o.latency.mean)),
            Cell::num(o.algbw_bytes_per_s.map_or("-".into(), rate)),
            Cell::num(o.busbw_bytes_per_s.map_or("-".into(), rate)),
        ]);
    }
    h.table(&t);
    h.note("Steady steps, every rank's calls. Bandwidths as nccl-tests reports them: algbw = bytes / time; busbw = algbw × the operation's bus factor (2(n−1)/n for all_reduce).");
    h.close("section");
}

/// Most rows (blocks of ranks) and columns (blocks of steps) of a report heatmap.
const HEAT_ROWS: usize = 64;
const HEAT_COLS: usize = 120;

/// Colours of a report heatmap, low to high (ColorBrewer YlOrRd, 9 classes).
const HEAT_RAMP: [[u8; 3]; 9] = [
    [0xff, 0xff, 0xcc],
    [0xff, 0xed, 0xa0],
    [0xfe, 0xd9, 0x76],
    [0xfe, 0xb2, 0x4c],
    [0xfd, 0x8d, 0x3c],
    [0xfc, 0x4e, 0x2a],
    [0xe3, 0x1a, 0x1c],
    [0xbd, 0x00, 0x26],
    [0x80, 0x00, 0x26],
];
/// A cell without data (the rank has no such step).
const HEAT_MISSING: [u8; 3] = [0xee, 0xee, 0xee];

/// An RGB image `w` × `h` as a PNG `data:` URL.
fn png_data_url(w: usize, h: usize, rgb: &[u8]) -> Result<String, png::EncodingError> {
    use base64::Engine as _;
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, w as u32, h as u32);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.write_header()?.write_image_data(rgb)?;
    }
    Ok(format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(out)
    ))
}

/// Rank × step heatmaps of step time, exposed communication and arrival lateness, for runs of
/// two ranks or more: each cell the largest value of its block of ranks × steps, so one slow
/// rank shows however many there are. Each is a small PNG (a pixel per cell, scaled without
/// smoothing) with its labels in HTML, so it reads at any width; the largest cell is named
/// below it (the terminal timeline's heatmap view, `m`, opens any cell).
fn heatmaps(h: &mut Html, run: &Run, a: &RunAnalysis, id: &str) {
    use probe::analysis::heatmap::{heatmaps, Metric};
    if run.ranks.len() < 2 {
        return;
    }
    let maps = heatmaps(run, &a.steps);
    let (nr, ns_) = (maps.ranks.len(), maps.steps.len());
    if ns_ < 2 {
        return;
    }
    section(h, id, "heatmaps", "Ranks × steps");
    let rb = nr.div_ceil(HEAT_ROWS).max(1);
    let sb = ns_.div_ceil(HEAT_COLS).max(1);
    let (rows, cols) = (nr.div_ceil(rb), ns_.div_ceil(sb));
    let per = |n: usize, what: &str| {
        if n == 1 {
            String::new()
        } else {
            format!(", {n} {what} per cell")
        }
    };
    h.para(&format!(
        "One row per rank (ranks {} to {}{}), one column per step (steps {} to {}{}, warm-up \
         included){}. The colours span at least a tenth of the median step time, so noise \
         stays pale.",
        maps.ranks[0],
        maps.ranks[nr - 1],
        per(rb, "ranks"),
        maps.steps[0],
        maps.steps[ns_ - 1],
        per(sb, "steps"),
        if rb * sb > 1 {
            "; each cell shows the largest value of its block, so a slow rank is not averaged away"
        } else {
            ""
        }
    ));
    let height = (rows * 8).clamp(48, 384);
    for metric in Metric::ALL {
        let map = maps.get(metric);
        let Some((lo, hi)) = maps.scale(metric) else {
            continue;
        };
        let level = |v: f64| maps.level(metric, v, HEAT_RAMP.len());
        let mut pixels = Vec::with_capacity(rows * cols * 3);
        for row in 0..rows {
            let rr = row * rb..((row + 1) * rb).min(nr);
            for col in 0..cols {
                let rgb = match map.block(rr.clone(), col * sb..((col + 1) * sb).min(ns_)) {
                    Some(b) => HEAT_RAMP[level(b.value)],
                    None => HEAT_MISSING,
                };
                pixels.extend_from_slice(&rgb);
            }
        }
        let top = map.block(0..nr, 0..ns_);
        let img = match png_data_url(cols, rows, &pixels) {
            Ok(url) => url,
            Err(e) => {
                h.note(&format!(
                    "the {} heatmap could not be drawn: {e}",
                    metric.name()
                ));
                continue;
            }
        };
        let largest = top.map_or(String::new(), |t| {
            format!(
                "largest: {} at rank {}, step {}",
                ns(t.value),
                maps.ranks[t.rank_index],
                maps.steps[t.step_index]
            )
        });
        h.open("figure", &[("class", "heatmap")]);
        h.elem(
            "figcaption",
            &[],
            &format!("{}: {}", metric.name(), metric.definition()),
        );
        h.open("div", &[("class", "heat-axes")])
            .elem(
                "span",
                &[("class", "heat-rank")],
                &format!("rank {}", maps.ranks[0]),
            )
            .raw(&format!(
                "<img src=\"{img}\" alt=\"{}\" title=\"{}\" style=\"height:{height}px\" />",
                crate::html::escape(&format!(
                    "heatmap of {} per rank and step; {largest}",
                    metric.name()
                )),
                crate::html::escape(&largest)
            ))
            .elem(
                "span",
                &[("class", "heat-rank")],
                &format!("rank {}", maps.ranks[nr - 1]),
            )
            .close("div");
        h.open("p", &[("class", "heat-scale")])
            .text(&format!(
                "step {} \u{2026} step {}  \u{b7}  {largest}  \u{b7}  ",
                maps.steps[0],
                maps.steps[ns_ - 1]
            ))
            .text(&ns(lo));
        for c in HEAT_RAMP {
            let hex = format!("background:#{:02x}{:02x}{:02x}", c[0], c[1], c[2]);
            h.open("span", &[("class", "sw"), ("style", &hex)])
                .close("span");
        }
        h.text(&ns(hi)).close("p").close("figure");
    }
    h.close("section");
}

fn stragglers(h: &mut Html, s: &Summary, id: &str) {
    section(h, id, "stragglers", "Stragglers");
    let st = &s.stragglers;
    let verdict = s.straggler_verdict();
    if verdict.is_empty() {
        h.note(
            "No collective was recorded by two or more ranks, so arrival order cannot be compared.",
        );
        h.close("section");
        return;
    }
    // The same sentences as the text summary's, the first one as the headline.
    for (k, line) in verdict.iter().enumerate() {
        let class: &[(&str, &str)] = match (k, line.names_straggler) {
            (0, true) => &[("class", "headline warn")],
            (0, false) => &[("class", "headline")],
            _ => &[],
        };
        h.open("p", class).text(&capitalized(&line.text)).close("p");
    }
    if !st.ranks.is_empty() {
        let mut t = Table::new(&[
            "#rank",
            "#last at collectives",
            "#steps last",
            "#others waited",
        ]);
        for r in st.ranks.iter().take(16) {
            t.row(vec![
                Cell::num(r.rank.to_string()),
                Cell::num(format!(
                    "{} ({})",
                    group_thousands(r.last as i64),
                    pct(r.last_share)
                )),
                Cell::num(group_thousands(r.steps_last as i64)),
                Cell::num(ns(r.wait_caused_ns as f64)),
            ]);
        }
        h.table(&t);
        if st.ranks.len() > 16 {
            h.note(&format!(
                "{} more ranks arrived last at least once.",
                st.ranks.len() - 16
            ));
        }
    }
    if let Some(v) = &s.slowdowns.straggler {
        schedule_chart(
            h,
            &v.timelines,
            &format!(
                "Rank {}'s median held-back step: the bucket all-reduces (blue) as recorded, and \
                 re-simulated with its gradients ready when the other ranks' were; backward \
                 (grey) of rank {} and of the latest other rank, from backward start.",
                v.rank, v.rank
            ),
        );
    }
    h.close("section");
}

fn advice_section(h: &mut Html, advice: &Advice, id: &str) {
    section(h, id, "advice", "bucket_cap_mb advice");
    if !advice.missing.is_empty() {
        h.para("No advice: the trace lacks what it needs.");
        h.open("ul", &[]);
        for m in &advice.missing {
            h.elem("li", &[], m);
        }
        h.close("ul");
    }
    if let Some(r) = &advice.recommendation {
        let class = match (r.worth_changing, r.confidence) {
            (true, Confidence::High) => "headline good",
            (true, _) => "headline",
            (false, _) => "headline",
        };
        h.open("p", &[("class", class)]);
        if r.worth_changing {
            let setting = match &r.cap_list_mb {
                Some(caps) => format!(
                    "bucket_cap_mb_list=[{}]",
                    caps.iter().map(|&c| mib(c)).collect::<Vec<_>>().join(", ")
                ),
                None => format!("bucket_cap_mb={}", mib(r.cap_mb)),
            };
            h.text(&format!(
                "Try {setting}: predicted {} per step ({}), confidence {}.",
                signed_ns(-r.gain_ns),
                format_args!("−{}", pct(r.gain_frac)),
                match r.confidence {
                    Confidence::High => "high",
                    Confidence::Medium => "medium",
                    Confidence::Low => "low",
                }
            ));
        } else {
            h.text("Keep the current bucket_cap_mb: no candidate is predicted to beat it by more than the noise.");
        }
        h.close("p");
        for p in &r.explanation {
            h.para(p);
        }
    }
    if !advice.candidates.is_empty() {
        let mut t = Table::new(&[
            "cap",
            "#first bucket",
            "#buckets",
            "#last all-reduce ends",
            "#tail after backward",
            "#exposed",
            "#predicted step",
            "#change",
        ]);
        let mut long_lists = Vec::new();
        let (rows, left_out) = advice.candidates_to_show();
        for c in rows {
            let best = advice.is_recommended(c);
            let mark = if c.recorded_layout {
                " (recorded layout)"
            } else if c.is_current {
                " (current)"
            } else if best {
                " (recommended)"
            } else {
                ""
            };
            // A long list would make the first column as wide as the list and push the
            // figures out of sight (seen at 1280 px with a 30-cap list): it is named by its
            // length here and written out under the table.
            let label = match &c.cap_list_mb {
                Some(caps) if caps.len() > LIST_IN_TABLE => {
                    long_lists.push(list_words(caps));
                    format!("list of {} caps ({})", caps.len(), long_lists.len())
                }
                Some(caps) => format!("list {} MiB", list_words(caps)),
                None => format!("{} MiB", mib(c.cap_mb)),
            };
            let cells = vec![
                Cell::text(format!("{label}{mark}")),
                Cell::num(bytes(c.first_bucket_bytes as f64)),
                Cell::num(c.buckets.to_string()),
                Cell::num(ns(c.comm_end_ns)),
                Cell::num(ns(c.tail_ns)),
                Cell::num(ns(c.exposed_ns)),
                Cell::num(ns(c.predicted_step_ns)),
                Cell::num(signed_ns(c.delta_ns)),
            ];
            if best {
                t.row_with_class(cells, "best");
            } else {
                t.row(cells);
            }
        }
        h.table(&t);
        if left_out > 0 {
            h.note(&format!(
                "{left_out} candidates with the same buckets as one above are not shown."
            ));
        }
        for (i, caps) in long_lists.iter().enumerate() {
            h.note(&format!(
                "List ({}), per-bucket caps in bucket order (bucket_cap_mb_list, MiB): {caps}",
                i + 1
            ));
        }
        h.note("Predicted from this one trace: PyTorch's bucket assignment is replayed on the recorded gradient-ready times and the overlapped all-reduces are simulated with the cost model (the start-up calibration's per-size times when the trace has them, else a latency + size/bandwidth line fitted to the recorded collectives), compute and communication slowing each other where they overlap. Times of the schedule are after backward start. ddp-probe tune measures instead of predicting.");
    }
    schedule_chart(
        h,
        &advice.schedules,
        "One median backward, simulated: compute (grey) and the bucket all-reduces (blue), from backward start.",
    );
    if !advice.fits.is_empty() {
        let mut t = Table::new(&[
            "transport",
            "operation",
            "#latency",
            "#busbw",
            "#sizes",
            "#calls",
            "#residual",
            "#r²",
        ]);
        for (i, f) in advice.fits.iter().enumerate() {
            let cells = vec![
                Cell::text(format!(
                    "{}{}",
                    f.transport,
                    if advice.fit_used == Some(i) {
                        " (used)"
                    } else {
                        ""
                    }
                )),
                Cell::text(f.op_label()),
                Cell::num(ns(f.fit.latency_ns)),
                Cell::num(rate(f.busbw_bytes_per_s())),
                Cell::num(f.fit.sizes.to_string()),
                Cell::num(group_thousands(f.fit.calls as i64)),
                Cell::num(pct(f.fit.rel_rmse)),
                Cell::num(format!("{:.3}", f.fit.r2)),
            ];
            t.row(cells);
        }
        h.open("details", &[])
            .elem("summary", &[], "communication cost models")
            .table(&t)
            .close("details");
    }
    for n in &advice.notes {
        h.note(n);
    }
    h.close("section");
}

/// Cap lists longer than this are named by their length in the candidates' table.
const LIST_IN_TABLE: usize = 4;

/// Schedules (the advice's simulated ones, a straggler's step as recorded and without its
/// lateness), one row each: backward as a grey bar and the bucket all-reduces under it, on one
/// time axis (labels in HTML, so they stay readable on a phone).
fn schedule_chart(h: &mut Html, schedules: &[WhatIf], caption: &str) {
    if schedules.is_empty() {
        return;
    }
    let end = schedules
        .iter()
        .flat_map(|w| {
            std::iter::once(w.backward_end_ns).chain(w.collectives.iter().map(|c| c.end_ns))
        })
        .fold(1.0f64, f64::max);
    h.open("figure", &[("class", "what-if")]);
    h.elem("figcaption", &[], caption);
    for w in schedules {
        h.elem("p", &[("class", "what-if-label")], &w.label);
        let x = |t: f64| (t / end * 1000.0).clamp(0.0, 1000.0);
        let mut svg = format!(
            "<svg viewBox=\"0 0 1000 36\" width=\"100%\" role=\"img\" aria-label=\"{}\">",
            crate::html::escape(&format!("schedule: {}", w.label))
        );
        svg.push_str(&format!(
            "<rect x=\"0\" y=\"2\" width=\"{:.1}\" height=\"14\" fill=\"#9aa0a6\"><title>backward {}</title></rect>",
            x(w.backward_end_ns),
            ns(w.backward_end_ns)
        ));
        for c in &w.collectives {
            svg.push_str(&format!(
                "<rect x=\"{:.1}\" y=\"20\" width=\"{:.1}\" height=\"14\" fill=\"#1a73e8\" stroke=\"#fff\" stroke-width=\"0.5\"><title>bucket {}{}: {} to {}</title></rect>",
                x(c.start_ns),
                (x(c.end_ns) - x(c.start_ns)).max(0.5),
                c.bucket,
                if c.bytes > 0 {
                    format!(" ({})", bytes(c.bytes as f64))
                } else {
                    String::new()
                },
                ns(c.start_ns),
                ns(c.end_ns)
            ));
        }
        svg.push_str("</svg>");
        h.raw(&svg);
        let last = w.collectives.last().map_or(0.0, |c| c.end_ns);
        h.note(&format!(
            "backward ends at {}, the last all-reduce at {} ({} buckets)",
            ns(w.backward_end_ns),
            ns(last),
            w.collectives.len()
        ));
    }
    h.close("figure");
}

fn warmup(h: &mut Html, s: &Summary, id: &str) {
    if s.warmup.is_empty() {
        return;
    }
    section(h, id, "warmup", "Warm-up steps (not in the statistics)");
    let mut t = Table::new(&[
        "step",
        "why",
        "#step (max over ranks)",
        "#communication",
        "#exposed",
    ]);
    for w in &s.warmup {
        let b = &w.breakdown;
        t.row(vec![
            Cell::text(w.step.map_or("?".into(), |v| v.to_string())),
            Cell::text(w.reason.describe()),
            Cell::num(ns(b.step.max)),
            Cell::num(ns(b.comm.max)),
            Cell::num(ns(b.comm_exposed.max)),
        ]);
    }
    h.table(&t);
    h.close("section");
}

fn logs(h: &mut Html, run: &Run, id: &str) {
    let start = run.time_range().map_or(0, |r| r.0);
    let mut lines: Vec<(i64, u32, LogLevel, &str)> = run
        .ranks
        .iter()
        .flat_map(|r| {
            r.logs
                .iter()
                .filter(|l| l.level >= LogLevel::Warn)
                .map(move |l| (l.t, r.rank(), l.level, &*l.message))
        })
        .collect();
    let ends: Vec<(i64, u32, String)> = run
        .ranks
        .iter()
        .filter_map(|r| {
            let e = r.end.as_ref()?;
            (e.status != "ok").then(|| {
                (
                    e.t,
                    r.rank(),
                    format!(
                        "end: {}{}",
                        e.status,
                        e.message
                            .as_ref()
                            .map_or(String::new(), |m| format!(": {m}"))
                    ),
                )
            })
        })
        .collect();
    if lines.is_empty() && ends.is_empty() {
        return;
    }
    section(h, id, "logs", "Warnings and errors in the traces");
    lines.sort_by_key(|l| (l.0, l.1));
    let total = lines.len();
    let mut t = Table::new(&["#time", "#rank", "level", "message"]);
    for (ts, rank, level, msg) in lines.iter().take(MAX_LOG_LINES) {
        t.row(vec![
            Cell::num(format!("{:.3} s", (ts - start) as f64 / 1e9)),
            Cell::num(rank.to_string()),
            Cell::text(level.as_str()),
            Cell::markup(format!(
                "<code class=\"log\">{}</code>",
                crate::html::escape(msg)
            )),
        ]);
    }
    for (ts, rank, msg) in &ends {
        t.row(vec![
            Cell::num(format!("{:.3} s", (ts - start) as f64 / 1e9)),
            Cell::num(rank.to_string()),
            Cell::text("end"),
            Cell::markup(format!(
                "<code class=\"log\">{}</code>",
                crate::html::escape(msg)
            )),
        ]);
    }
    h.table(&t);
    if total > MAX_LOG_LINES {
        h.note(&format!(
            "{} more messages are in the traces.",
            total - MAX_LOG_LINES
        ));
    }
    h.close("section");
}

fn notes(h: &mut Html, input: &RunInput, a: &RunAnalysis, id: &str) {
    let mut all: Vec<&str> = input.warnings.iter().map(String::as_str).collect();
    if let Some(s) = &a.summary {
        all.extend(s.notes.iter().map(String::as_str));
    }
    if all.is_empty() {
        return;
    }
    section(h, id, "notes", "Notes");
    h.open("ul", &[("class", "notes")]);
    for n in all {
        h.open("li", &[]).prose(n).close("li");
    }
    h.close("ul").close("section");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The advice of a 2-rank `lm` run (`scripts/demo`, 2026-12-05), whose candidates include a
    /// 30-cap list cut from its ready times and 11 candidates with the same buckets as others.
    fn demo_advice() -> Advice {
        let text = include_str!("../tests/data/advice_with_cap_list.json");
        serde_json::from_str(text).expect("the advice parses")
    }

    #[test]
    fn the_candidates_table_names_a_long_list_by_its_length_and_leaves_out_repeats() {
        let advice = demo_advice();
        let mut h = Html::new();
        advice_section(&mut h, &advice, "advice");
        let html = h.finish();
        // Each row's first cell is short: the 30 caps are under the table, not in the cell.
        assert!(html.contains("<td>list of 30 caps (1)</td>"), "{html}");
        let caps = advice
            .candidates
            .iter()
            .find_map(|c| c.cap_list_mb.as_ref())
            .expect("a list candidate");
        assert_eq!(caps.len(), 30);
        assert!(html.contains(&format!(
            "List (1), per-bucket caps in bucket order (bucket_cap_mb_list, MiB): {}",
            list_words(caps)
        )));
        // The recorded layout and 9 candidates are rows, as on the console; 11 are left out.
        let (rows, left_out) = advice.candidates_to_show();
        assert_eq!((rows.len(), left_out), (10, 11));
        let table = html
            .split("<th>cap</th>")
            .nth(1)
            .and_then(|rest| rest.split("</table>").next())
            .expect("the candidates' table");
        assert_eq!(table.matches("<tr").count(), 10, "{table}");
        assert!(html.contains("11 candidates with the same buckets as one above are not shown."));
    }
}
