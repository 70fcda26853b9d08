//! Scaling across world sizes: throughput against the number of ranks with
//! the ideal line, scaling efficiency and the share of exposed
//! communication.
//!
//! Data-parallel jobs usually keep the per-rank batch fixed (weak scaling),
//! so ideal throughput grows linearly with the ranks:
//! `ideal(n) = T(n₀) · n / n₀` from the smallest world size `n₀`, and the
//! efficiency is `T(n) / ideal(n)`. Throughput comes from the median step
//! time, so that a few slow steps (a busy machine, a checkpoint) do not
//! decide it: `n × samples per step / median step` in samples per second
//! when every run records `samples` counters (samples per step is their
//! median over the steady rank-steps), else `n / median step` in
//! rank-steps per second (samples per second in units of one rank's
//! batch). Several runs of one world size are averaged.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::analyze::RunAnalysis;
use crate::charts::{self, palette, Axis, Line};
use crate::html::{Cell, Html, Table};
use crate::input::RunInput;
use crate::units::{count_rate, group_thousands, ns, pct};

/// What the throughput counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThroughputUnit {
    /// Samples per second, from `samples` counters.
    SamplesPerS,
    /// Steps per second × ranks.
    RankStepsPerS,
}

impl ThroughputUnit {
    /// The unit's name for axes and tables.
    pub fn name(self) -> &'static str {
        match self {
            ThroughputUnit::SamplesPerS => "samples/s",
            ThroughputUnit::RankStepsPerS => "rank-steps/s",
        }
    }
}

/// One world size of a scaling series.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScalingPoint {
    /// Ranks.
    pub world_size: u32,
    /// The runs averaged (their labels).
    pub runs: Vec<String>,
    /// Steady rank-steps measured.
    pub steady_steps: u64,
    /// Mean over the runs of their median step time (ns).
    pub median_step_ns: f64,
    /// Mean throughput over the runs, in [`Scaling::unit`].
    pub throughput: f64,
    /// The ideal throughput at this world size.
    pub ideal: f64,
    /// `throughput / ideal`.
    pub efficiency: f64,
    /// Σ exposed communication / Σ step time over the runs' steady steps.
    pub exposed_share: f64,
    /// Σ communication / Σ step time (overlapped or not).
    pub comm_share: f64,
}

/// A scaling series.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scaling {
    /// The throughput's unit.
    pub unit: ThroughputUnit,
    /// The world size the ideal line starts from.
    pub baseline_world_size: u32,
    /// By world size.
    pub points: Vec<ScalingPoint>,
    /// Runs left out and other caveats.
    pub notes: Vec<String>,
}

impl Scaling {
    /// The series as a terminal table and its notes (no trailing newline).
    pub fn render_text(&self) -> String {
        let head = [
            "ranks".to_owned(),
            "median step".to_owned(),
            format!("throughput ({})", self.unit.name()),
            "ideal".to_owned(),
            "efficiency".to_owned(),
            "exposed comm".to_owned(),
        ];
        let rows: Vec<[String; 6]> = self
            .points
            .iter()
            .map(|p| {
                [
                    p.world_size.to_string(),
                    ns(p.median_step_ns),
                    count_rate(p.throughput),
                    count_rate(p.ideal),
                    pct(p.efficiency),
                    pct(p.exposed_share),
                ]
            })
            .collect();
        let mut w = [0usize; 6];
        for r in std::iter::once(&head).chain(rows.iter()) {
            for (i, c) in r.iter().enumerate() {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let line = |r: &[String; 6]| {
            r.iter()
                .enumerate()
                .map(|(i, c)| format!("{}{c}", " ".repeat(w[i] - c.chars().count())))
                .collect::<Vec<_>>()
                .join("  ")
        };
        let mut out = line(&head);
        for r in &rows {
            out.push('\n');
            out.push_str(&line(r));
        }
        out.push_str(&format!(
            "\n(efficiency = throughput / ideal, the ideal growing linearly from {})",
            ranks(self.baseline_world_size)
        ));
        for n in &self.notes {
            out.push_str(&format!("\nnote: {n}"));
        }
        out
    }
}

/// The scaling series of `runs`, or `None` when fewer than two world sizes
/// have steady steps to measure.
pub fn scaling(runs: &[(&RunInput, &RunAnalysis)]) -> Option<Scaling> {
    let mut notes = Vec::new();
    struct Row<'a> {
        label: &'a str,
        n: u32,
        steps: u64,
        median: f64,
        samples_per_step: Option<f64>,
        exposed: i64,
        comm: i64,
        step: i64,
    }
    let mut rows = Vec::new();
    for (input, a) in runs {
        let label = input.label.as_str();
        let Some(n) = input.world_size() else {
            notes.push(format!("{label}: left out, its world size is unknown"));
            continue;
        };
        if a.failed() {
            notes.push(format!("{label}: left out, the run failed"));
            continue;
        }
        let Some(s) = &a.summary else { continue };
        let Some(b) = s.overall.as_ref().filter(|b| b.step.median > 0.0) else {
            notes.push(format!("{label}: left out, it has no steady steps"));
            continue;
        };
        let mut samples: Vec<f64> = a
            .steps
            .iter()
            .filter(|st| st.warmup.is_none())
            .filter_map(|st| st.samples)
            .collect();
        let samples_per_step = (!samples.is_empty())
            .then(|| probe::analysis::stats::median(&mut samples))
            .filter(|v| *v > 0.0);
        rows.push(Row {
            label,
            n,
            steps: b.steps,
            median: b.step.median,
            samples_per_step,
            exposed: b.totals.comm_exposed_ns,
            comm: b.totals.comm_ns,
            step: b.totals.step_ns,
        });
    }
    let unit = if !rows.is_empty() && rows.iter().all(|r| r.samples_per_step.is_some()) {
        ThroughputUnit::SamplesPerS
    } else {
        ThroughputUnit::RankStepsPerS
    };
    let mut by_n: BTreeMap<u32, Vec<&Row<'_>>> = BTreeMap::new();
    for r in &rows {
        by_n.entry(r.n).or_default().push(r);
    }
    if by_n.len() < 2 {
        return None;
    }
    // Threads per rank: the launcher (like torchrun) sets OMP_NUM_THREADS=1
    // only for more than one rank per node.
    let threads: BTreeMap<String, Vec<u32>> = runs
        .iter()
        .filter_map(|(i, _)| Some((i.world_size()?, i.manifests.first()?)))
        .fold(BTreeMap::new(), |mut acc, (n, m)| {
            let v = m
                .ranks
                .first()
                .and_then(|r| r.env.get("OMP_NUM_THREADS"))
                .or_else(|| m.env.get("OMP_NUM_THREADS"))
                .cloned()
                .unwrap_or_else(|| "unset".to_owned());
            acc.entry(v).or_default().push(n);
            acc
        });
    if threads.len() > 1 {
        let parts: Vec<String> = threads
            .iter()
            .map(|(v, ns)| {
                let mut ns = ns.clone();
                ns.sort_unstable();
                ns.dedup();
                format!(
                    "{v} at {} rank(s)",
                    ns.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
                )
            })
            .collect();
        notes.push(format!(
            "OMP_NUM_THREADS differs between the runs ({}): `ddp-probe run`, like torchrun, sets it to 1 only for more than one rank per node, so compute per rank is not alike; `ddp-probe scale` sets it to 1 for every run",
            parts.join("; ")
        ));
    }
    let programs: std::collections::BTreeSet<String> =
        runs.iter().filter_map(|(i, _)| i.program()).collect();
    if programs.len() > 1 {
        notes.push(format!(
            "the runs are of different programs ({}); scaling compares like with like only for one job",
            programs.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    let mut points: Vec<ScalingPoint> = by_n
        .iter()
        .map(|(&n, v)| {
            let k = v.len() as f64;
            let tp = |r: &Row<'_>| {
                let per_step = match unit {
                    ThroughputUnit::SamplesPerS => r.samples_per_step.unwrap_or(0.0),
                    ThroughputUnit::RankStepsPerS => 1.0,
                };
                f64::from(r.n) * per_step * 1e9 / r.median
            };
            let step: i64 = v.iter().map(|r| r.step).sum();
            ScalingPoint {
                world_size: n,
                runs: v.iter().map(|r| r.label.to_owned()).collect(),
                steady_steps: v.iter().map(|r| r.steps).sum(),
                median_step_ns: v.iter().map(|r| r.median).sum::<f64>() / k,
                throughput: v.iter().map(|r| tp(r)).sum::<f64>() / k,
                ideal: 0.0,
                efficiency: 0.0,
                exposed_share: v.iter().map(|r| r.exposed).sum::<i64>() as f64 / step.max(1) as f64,
                comm_share: v.iter().map(|r| r.comm).sum::<i64>() as f64 / step.max(1) as f64,
            }
        })
        .collect();
    let base = points[0].clone();
    for p in &mut points {
        p.ideal = base.throughput * f64::from(p.world_size) / f64::from(base.world_size);
        p.efficiency = if p.ideal > 0.0 {
            p.throughput / p.ideal
        } else {
            0.0
        };
    }
    Some(Scaling {
        unit,
        baseline_world_size: base.world_size,
        points,
        notes,
    })
}

/// `"1 rank"`, `"4 ranks"`.
fn ranks(n: u32) -> String {
    format!("{n} rank{}", if n == 1 { "" } else { "s" })
}

/// Writes the scaling section.
pub(crate) fn write_scaling(h: &mut Html, s: &Scaling) {
    h.open("section", &[("id", "scaling")])
        .elem("h2", &[], "Scaling");
    let last = s.points.last();
    if let Some(p) = last {
        h.open("p", &[("class", "headline")]).text(&format!(
            "At {} ranks the job runs at {} of ideal scaling ({} {} against an ideal {}); exposed communication takes {} of the step.",
            p.world_size,
            pct(p.efficiency),
            count_rate(p.throughput),
            s.unit.name(),
            count_rate(p.ideal),
            pct(p.exposed_share)
        )).close("p");
    }
    h.para(&format!(
        "The ideal line grows linearly from {}, as for a fixed batch per rank (weak scaling). Throughput is {}.",
        ranks(s.baseline_world_size),
        match s.unit {
            ThroughputUnit::SamplesPerS => "ranks × samples per step (the runs' samples counters) / median step time, in samples per second; the median keeps a few slow steps from deciding it",
            ThroughputUnit::RankStepsPerS => "ranks / median step time, in rank-steps per second: samples per second in units of one rank's batch (the traces have no samples counters); the median keeps a few slow steps from deciding it",
        }
    ));
    let ticks: Vec<f64> = s.points.iter().map(|p| f64::from(p.world_size)).collect();
    let xmin = ticks.first().copied().unwrap_or(1.0);
    let xmax = ticks.last().copied().unwrap_or(1.0);
    let log2 = xmax / xmin.max(1.0) >= 8.0;
    let x = Axis {
        desc: "world size (ranks)".into(),
        range: (xmin, xmax),
        log2,
        ticks: Some(ticks.clone()),
        format: |v| format!("{v:.0}"),
    };
    let measured: Vec<(f64, f64)> = s
        .points
        .iter()
        .map(|p| (f64::from(p.world_size), p.throughput))
        .collect();
    let ideal: Vec<(f64, f64)> = s
        .points
        .iter()
        .map(|p| (f64::from(p.world_size), p.ideal))
        .collect();
    let ymax = s
        .points
        .iter()
        .map(|p| p.throughput.max(p.ideal))
        .fold(0.0, f64::max)
        * 1.08;
    let throughput_chart = charts::line_chart(
        "throughput against world size, with the ideal line",
        &[
            Line {
                dashed: true,
                markers: false,
                ..Line::new("ideal", palette::PREDICTED, ideal)
            },
            Line::new("measured", palette::MEASURED, measured),
        ],
        &x,
        &Axis {
            desc: format!("throughput ({})", s.unit.name()),
            range: (0.0, ymax.max(1e-9)),
            log2: false,
            ticks: None,
            format: count_rate,
        },
    );
    let eff: Vec<(f64, f64)> = s
        .points
        .iter()
        .map(|p| (f64::from(p.world_size), p.efficiency))
        .collect();
    let exposed: Vec<(f64, f64)> = s
        .points
        .iter()
        .map(|p| (f64::from(p.world_size), p.exposed_share))
        .collect();
    let ytop = s
        .points
        .iter()
        .map(|p| p.efficiency.max(p.exposed_share))
        .fold(1.0, f64::max)
        * 1.08;
    let share_chart = charts::line_chart(
        "scaling efficiency and exposed communication share against world size",
        &[
            Line::new("scaling efficiency", palette::MEASURED, eff),
            Line::new("exposed communication / step", palette::EXPOSED, exposed),
        ],
        &x,
        &Axis {
            desc: "share".into(),
            range: (0.0, ytop),
            log2: false,
            ticks: None,
            format: |v| format!("{:.0}%", v * 100.0),
        },
    );
    h.open("div", &[("class", "pair")]);
    for (chart, legend) in [
        (
            throughput_chart,
            charts::legend(&[
                ("measured", palette::MEASURED, false),
                ("ideal (linear)", palette::PREDICTED, true),
            ]),
        ),
        (
            share_chart,
            charts::legend(&[
                ("scaling efficiency", palette::MEASURED, false),
                (
                    "exposed communication share of the step",
                    palette::EXPOSED,
                    false,
                ),
            ]),
        ),
    ] {
        match chart {
            Ok(svg) => {
                h.open("figure", &[("class", "chart line")])
                    .raw(&svg)
                    .raw(&legend)
                    .close("figure");
            }
            Err(e) => {
                h.note(&e.to_string());
            }
        }
    }
    h.close("div");
    let mut t = Table::new(&[
        "#ranks",
        "runs",
        "#steady rank-steps",
        "#median step",
        &format!("#throughput ({})", s.unit.name()),
        "#ideal",
        "#efficiency",
        "#communication / step",
        "#exposed / step",
    ]);
    for p in &s.points {
        t.row(vec![
            Cell::num(p.world_size.to_string()),
            Cell::text(p.runs.join(", ")),
            Cell::num(group_thousands(p.steady_steps as i64)),
            Cell::num(ns(p.median_step_ns)),
            Cell::num(count_rate(p.throughput)),
            Cell::num(count_rate(p.ideal)),
            Cell::num(pct(p.efficiency)),
            Cell::num(pct(p.comm_share)),
            Cell::num(pct(p.exposed_share)),
        ]);
    }
    h.table(&t);
    for n in &s.notes {
        h.note(n);
    }
    h.close("section");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::load_runs;
    use probe::synth::{generate_run, SynthConfig};

    #[test]
    fn efficiency_is_relative_to_the_smallest_world_size() {
        let dir = tempfile::tempdir().unwrap();
        for n in [1u32, 2, 4] {
            let mut c = SynthConfig::new(n, 8, 2);
            c.run_id = format!("n{n}");
            c.jitter = 0.0;
            // Slower communication with more ranks: efficiency drops.
            c.latency_ns = 2_000_000 * u64::from(n);
            generate_run(&c, &dir.path().join(format!("n{n}"))).unwrap();
        }
        let runs = load_runs(&[dir.path().to_path_buf()]).unwrap();
        let analyses: Vec<RunAnalysis> = runs.iter().map(|r| RunAnalysis::of(r, 1)).collect();
        let pairs: Vec<(&RunInput, &RunAnalysis)> = runs.iter().zip(analyses.iter()).collect();
        let s = scaling(&pairs).unwrap();
        assert_eq!(s.unit, ThroughputUnit::RankStepsPerS);
        assert_eq!(s.points.len(), 3);
        assert!((s.points[0].efficiency - 1.0).abs() < 1e-12);
        assert!(s.points[2].efficiency < s.points[1].efficiency);
        assert!(s.points[2].efficiency < 1.0 && s.points[2].efficiency > 0.3);
        assert!((s.points[2].ideal - 4.0 * s.points[0].throughput).abs() < 1e-6);
        // One world size is no series.
        assert!(scaling(&pairs[..1]).is_none());
    }
}
