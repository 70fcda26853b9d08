//! The report's tuning section: the measured sweep of `ddp-probe tune`
//! ([`probe::analysis::tuning::TuneResult`]) as a table and a chart.

use probe::analysis::tuning::*;

use crate::charts::{self, palette, Axis, Line};
use crate::html::{Cell, Html, Table};
use crate::units::{group_thousands, mib, ns, signed_ns};

/// Writes the tuning section.
pub(crate) fn write_tune(h: &mut Html, t: &TuneResult) {
    h.open("section", &[("id", "tune")])
        .elem("h2", &[], "bucket_cap_mb tuning");
    match &t.recommendation {
        Some(r) => {
            h.open("p", &[("class", "headline good")])
                .text(&format!("Recommended {}", r.text))
                .close("p");
        }
        None => {
            h.open("p", &[("class", "headline bad")])
                .text("No recommendation: no candidate was measured.")
                .close("p");
        }
    }
    let mut facts = vec![
        ("command".to_owned(), t.command.join(" ")),
        ("ranks".to_owned(), t.nproc_per_node.to_string()),
        (
            "steps per run".to_owned(),
            t.steps.map_or("the job's own".into(), |s| s.to_string()),
        ),
        ("runs per cap".to_owned(), t.repeats.to_string()),
        (
            "warm-up".to_owned(),
            format!(
                "each rank's first {} and the bucket-rebuild step left out",
                plural_steps(t.warmup_steps)
            ),
        ),
        (
            "caps".to_owned(),
            match t.mode {
                TuneMode::Sweep => "a fixed list (--bucket-cap-mb)".into(),
                TuneMode::Auto => {
                    "searched from advise's prediction, halving and doubling (--auto)".into()
                }
            },
        ),
        ("directory".to_owned(), t.dir.clone()),
    ];
    if let Some(sig) = &t.interrupted {
        facts.push((
            "interrupted".to_owned(),
            format!("by {sig}; the report covers the runs that finished"),
        ));
    }
    h.facts(&facts);
    chart(h, t);
    let mut tab = Table::new(&[
        "cap",
        "#runs ok",
        "#steady rank-steps",
        "#median step",
        "#p25–p75",
        "#min–max",
        "#advise predicted",
        "#predicted − measured",
    ]);
    for c in &t.candidates {
        let m = c.measurement;
        let best = t
            .recommendation
            .as_ref()
            .is_some_and(|r| c.cap_mb.is_some_and(|x| same_cap(x, r.cap_mb)));
        let cells = vec![
            Cell::text(if best {
                format!("{} (recommended)", c.label())
            } else {
                c.label()
            }),
            Cell::num(format!("{}/{}", c.ok_runs(), c.runs.len())),
            Cell::num(m.map_or("-".into(), |m| group_thousands(m.n as i64))),
            Cell::num(m.map_or("-".into(), |m| ns(m.median_ns))),
            Cell::num(m.map_or("-".into(), |m| format!("{}–{}", ns(m.p25_ns), ns(m.p75_ns)))),
            Cell::num(m.map_or("-".into(), |m| format!("{}–{}", ns(m.min_ns), ns(m.max_ns)))),
            Cell::num(c.predicted_step_ns.map_or("-".into(), ns)),
            Cell::num(match (c.predicted_step_ns, m) {
                (Some(p), Some(m)) => signed_ns(p - m.median_ns),
                _ => "-".into(),
            }),
        ];
        if best {
            tab.row_with_class(cells, "best");
        } else {
            tab.row(cells);
        }
    }
    h.table(&tab);
    if !t.comparison.is_empty() {
        h.elem("h3", &[], "Measurement against advise's prediction");
        for p in &t.comparison {
            h.para(p);
        }
    }
    if !t.search.is_empty() {
        h.elem("h3", &[], "Search path");
        let mut s = Table::new(&["#", "cap", "#median step", "verdict"]);
        for (i, st) in t.search.iter().enumerate() {
            s.row(vec![
                Cell::num((i + 1).to_string()),
                Cell::text(format!("{} MiB", mib(st.cap_mb))),
                Cell::num(st.median_ns.map_or("-".into(), ns)),
                Cell::text(&st.verdict),
            ]);
        }
        h.table(&s);
    }
    h.open("details", &[]).elem(
        "summary",
        &[],
        &format!(
            "every run ({})",
            t.candidates.iter().map(|c| c.runs.len()).sum::<usize>()
        ),
    );
    let mut runs = Table::new(&[
        "cap",
        "#repeat",
        "status",
        "#steady rank-steps",
        "#median step",
        "directory",
    ]);
    for c in &t.candidates {
        for r in &c.runs {
            runs.row(vec![
                Cell::text(c.label()),
                Cell::num(r.repeat.to_string()),
                Cell::text(match &r.failure {
                    Some(f) => format!("{}: {f}", r.status),
                    None => r.status.clone(),
                }),
                Cell::num(group_thousands(r.steady_steps as i64)),
                Cell::num(r.median_step_ns.map_or("-".into(), ns)),
                Cell::markup(format!("<code>{}</code>", crate::html::escape(&r.dir))),
            ]);
        }
    }
    h.table(&runs).close("details");
    for n in &t.notes {
        h.note(n);
    }
    h.close("section");
}

/// Median step time against the cap (log₂ axis), p25–p75 as error bars,
/// with advise's predictions.
fn chart(h: &mut Html, t: &TuneResult) {
    let measured: Vec<(f64, Measurement)> = t
        .candidates
        .iter()
        .filter_map(|c| Some((c.cap_mb?, c.measurement?)))
        .collect();
    if measured.is_empty() {
        return;
    }
    let predicted: Vec<(f64, f64)> = t
        .candidates
        .iter()
        .filter_map(|c| Some((c.cap_mb?, c.predicted_step_ns?)))
        .collect();
    let caps: Vec<f64> = t.candidates.iter().filter_map(|c| c.cap_mb).collect();
    let lo = caps.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = caps.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let ymin = measured
        .iter()
        .map(|m| m.1.p25_ns)
        .chain(predicted.iter().map(|p| p.1))
        .fold(f64::INFINITY, f64::min);
    let ymax = measured
        .iter()
        .map(|m| m.1.p75_ns)
        .chain(predicted.iter().map(|p| p.1))
        .fold(f64::NEG_INFINITY, f64::max);
    let pad = ((ymax - ymin) * 0.15).max(ymax * 0.02);
    let to_ms = |v: f64| v / 1e6;
    let mut lines = Vec::new();
    if !predicted.is_empty() {
        lines.push(Line {
            dashed: true,
            ..Line::new(
                "advise's prediction",
                palette::PREDICTED,
                predicted.iter().map(|(c, p)| (*c, to_ms(*p))).collect(),
            )
        });
    }
    lines.push(Line {
        errors: measured
            .iter()
            .map(|(c, m)| (*c, to_ms(m.p25_ns), to_ms(m.p75_ns)))
            .collect(),
        ..Line::new(
            "measured median",
            palette::MEASURED,
            measured
                .iter()
                .map(|(c, m)| (*c, to_ms(m.median_ns)))
                .collect(),
        )
    });
    let chart = charts::line_chart(
        "median step time against bucket_cap_mb",
        &lines,
        &Axis {
            desc: "bucket_cap_mb (MiB, log scale)".into(),
            range: (lo, hi),
            log2: true,
            ticks: Some(caps.clone()),
            format: mib,
        },
        &Axis {
            desc: "step time (ms)".into(),
            range: (to_ms((ymin - pad).max(0.0)), to_ms(ymax + pad)),
            log2: false,
            ticks: None,
            format: |v| format!("{v:.1}"),
        },
    );
    match chart {
        Ok(svg) => {
            h.open("figure", &[("class", "chart line narrow")])
                .raw(&svg);
            let mut legend = vec![("measured median, p25–p75 bars", palette::MEASURED, false)];
            if !predicted.is_empty() {
                legend.push((
                    "advise's prediction from the first run",
                    palette::PREDICTED,
                    true,
                ));
            }
            h.raw(&charts::legend(&legend)).close("figure");
        }
        Err(e) => {
            h.note(&e.to_string());
        }
    }
}
