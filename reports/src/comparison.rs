//! Two runs compared: a report given exactly two runs with steady steps starts with where the
//! step time changed between them, as `ddp-probe compare` says it
//! ([`probe::analysis::compare`]): the verdict, the parts of the step, the ranks, the straggler
//! and the settings that differ.

use probe::analysis::compare::{compare, environment_changes, Comparison};
use probe::analysis::SummaryOptions;

use crate::analyze::RunAnalysis;
use crate::html::{Cell, Html, Table};
use crate::input::RunInput;
use crate::units::{ns, signed_ns};

/// The comparison of the second run with the first, when there are exactly two runs and both
/// have steady steps.
pub(crate) fn comparison(
    runs: &[(&RunInput, &RunAnalysis)],
    warmup_steps: u64,
) -> Option<Comparison> {
    let [(a, aa), (b, ba)] = runs else {
        return None;
    };
    let (ra, rb) = (a.run.as_ref()?, b.run.as_ref()?);
    let (sa, sb) = (aa.summary.as_ref()?, ba.summary.as_ref()?);
    sa.overall.as_ref()?;
    sb.overall.as_ref()?;
    let opts = SummaryOptions {
        warmup_steps,
        ..SummaryOptions::default()
    };
    let mut c = compare((ra, sa), (rb, sb), &opts);
    if let (Some(ma), Some(mb)) = (a.manifests.first(), b.manifests.first()) {
        c.settings.extend(environment_changes(
            &ma.ranks_environment(),
            &mb.ranks_environment(),
        ));
    }
    Some(c)
}

/// Writes the comparison section; `labels` name the two runs as the report does.
pub(crate) fn write_comparison(h: &mut Html, c: &Comparison, labels: (&str, &str)) {
    h.open("section", &[("id", "comparison")]).elem(
        "h2",
        &[],
        &format!("What changed from {} to {}", labels.0, labels.1),
    );
    let class = if !c.beyond_noise {
        "headline"
    } else if c.step_delta_ns() > 0.0 {
        "headline bad"
    } else {
        "headline good"
    };
    h.open("p", &[("class", class)])
        .text(&c.verdict())
        .close("p");
    h.para(&format!(
        "Median step {} → {}; {} {} to {} and {} to {} (each step counts once, its time the \
         mean over its ranks). A change is one to act on when the intervals are apart and the \
         medians differ by at least 3%, the spread of repeated runs of one job.",
        ns(c.baseline.step_median_ns),
        ns(c.run.step_median_ns),
        c.interval_name(),
        ns(c.baseline.step_median_interval_ns[0]),
        ns(c.baseline.step_median_interval_ns[1]),
        ns(c.run.step_median_interval_ns[0]),
        ns(c.run.step_median_interval_ns[1]),
    ));
    let by_rank = c.ranks.len() > 1;
    let mut head = vec!["part", "#", "#", "#change"];
    let (la, lb) = (format!("#{}", labels.0), format!("#{}", labels.1));
    head[1] = &la;
    head[2] = &lb;
    if by_rank {
        head.push("most on");
    }
    let mut t = Table::new(&head);
    for p in &c.parts {
        let [baseline, run, change] = p.cells();
        let mut row = vec![
            Cell::text(&p.part),
            Cell::num(baseline),
            Cell::num(run),
            Cell::num(change),
        ];
        if by_rank {
            row.push(Cell::text(match p.most_on {
                Some((rank, d)) if d != 0.0 && p.comparable() => {
                    format!("rank {rank} ({})", signed_ns(d))
                }
                _ => String::new(),
            }));
        }
        t.row(row);
    }
    h.table(&t);
    h.note(&format!(
        "Mean per steady rank-step, the largest change first; the parts of a step overlap a \
         little. \"Most on\": the rank whose mean of the part changed most.{}",
        c.recording_notes()
            .iter()
            .map(|line| format!(" {line}"))
            .collect::<String>()
    ));
    if by_rank {
        let mut t = Table::new(&["rank", &la, &lb, "#change"]);
        for r in c.ranks.iter().take(8) {
            t.row(vec![
                Cell::num(r.rank.to_string()),
                Cell::num(ns(r.baseline_ns)),
                Cell::num(ns(r.run_ns)),
                Cell::num(signed_ns(r.run_ns - r.baseline_ns)),
            ]);
        }
        h.table(&t);
        h.note("Median steady step per rank, the largest change first.");
    }
    if c.baseline.straggler != c.run.straggler {
        let who = |s: Option<u32>| s.map_or("none".to_owned(), |r| format!("rank {r}"));
        h.para(&format!(
            "Straggler: {} in {}, {} in {}.",
            who(c.baseline.straggler),
            labels.0,
            who(c.run.straggler),
            labels.1
        ));
    }
    if c.settings.is_empty() {
        h.note("The settings read from the traces and manifests are the same in both runs.");
    } else {
        let mut t = Table::new(&["setting", &la[1..], &lb[1..]]);
        for s in &c.settings {
            // A value can be a whole command line: it wraps instead of widening the table.
            t.row(vec![
                Cell::text(&s.setting),
                Cell::text(&s.baseline).with_class("long"),
                Cell::text(&s.run).with_class("long"),
            ]);
        }
        h.table(&t);
        h.note("Settings that differ, from the traces' headers and the launchers' record of the environment.");
    }
    for n in &c.notes {
        h.note(n);
    }
    h.close("section");
}
