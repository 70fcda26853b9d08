//! Two runs side by side (`ddp-probe compare BASELINE RUN`): how the step time changed, whether
//! the change is larger than the step-to-step spread, which parts of the step and which ranks
//! it is in, and which settings differ between the runs. For "the step got 30% slower since
//! yesterday": the answer is where the time went, not two summaries to read against each other.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::scan::{step_breakdowns, StepBreakdown};
use super::summary::{Summary, SummaryOptions};
use crate::model::Run;
use crate::units;
use crate::wrap::{capitalized, push_prose};

/// One run's side of a [`Comparison`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Side {
    /// The run id.
    pub run_id: String,
    /// Ranks the headers declare.
    pub world_size: u32,
    /// Steady rank-steps (warm-up left out), all ranks pooled.
    pub rank_steps: u64,
    /// Steady steps (a step of several ranks counts once).
    pub steps: u64,
    /// Median step time (ns) over the steady steps, each step's time the mean over its ranks.
    pub step_median_ns: f64,
    /// A 95% confidence interval of that median (ns), from the order statistics (no
    /// assumption about the distribution): the whole range below 6 steps.
    pub step_median_interval_ns: [f64; 2],
    /// Samples per second, when the trace counts samples.
    pub samples_per_s: Option<f64>,
    /// Samples per step, all ranks together, when the trace counts samples.
    pub samples_per_step: Option<f64>,
    /// The straggler, when the run has one.
    pub straggler: Option<u32>,
}

/// How one part of the step changed: means per steady rank-step (ns). Means, unlike medians,
/// add up: the parts' changes together are about the step's (the parts overlap a little).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartChange {
    /// `data wait`, `forward`, `backward`, `exposed communication`, `optimizer`,
    /// `writeback`, `other`.
    pub part: String,
    /// Mean in the baseline (ns).
    pub baseline_ns: f64,
    /// Mean in the run (ns).
    pub run_ns: f64,
    /// The rank whose mean of this part changed most, and by how much (ns): runs of the same
    /// world size only. A straggler's own backward shows here, where the pooled mean halves it.
    pub most_on: Option<(u32, f64)>,
    /// Whether the baseline recorded this part at all (a PyTorch program's own data loading
    /// or the reference DDP's writeback is in no span: its time is in `other`, its mean 0).
    #[serde(default = "recorded")]
    pub baseline_recorded: bool,
    /// Whether the run recorded this part at all.
    #[serde(default = "recorded")]
    pub run_recorded: bool,
}

/// Comparisons written before parts could be unrecorded recorded every part.
fn recorded() -> bool {
    true
}

impl PartChange {
    /// Run minus baseline (ns). With the part recorded on one side only this is that side's
    /// mean moved out of (or into) `other`: it keeps the parts' sum, but is no change of the
    /// part ([`PartChange::comparable`]).
    pub fn delta_ns(&self) -> f64 {
        self.run_ns - self.baseline_ns
    }

    /// Whether both runs recorded the part, so its change is one.
    pub fn comparable(&self) -> bool {
        self.baseline_recorded && self.run_recorded
    }

    /// The table's baseline, run and change cells: "-" for a side that did not record the
    /// part, and for the change then.
    pub fn cells(&self) -> [String; 3] {
        let side = |recorded: bool, v: f64| {
            if recorded {
                units::ns(v)
            } else {
                "-".to_owned()
            }
        };
        [
            side(self.baseline_recorded, self.baseline_ns),
            side(self.run_recorded, self.run_ns),
            if self.comparable() {
                units::signed_ns(self.delta_ns())
            } else {
                "-".to_owned()
            },
        ]
    }

    /// The change to rank the parts by and name: 0 where only one run recorded the part.
    fn comparable_delta_ns(&self) -> f64 {
        if self.comparable() {
            self.delta_ns()
        } else {
            0.0
        }
    }
}

/// How one rank's median step changed (ns).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankChange {
    /// The rank.
    pub rank: u32,
    /// Its median steady step in the baseline (ns).
    pub baseline_ns: f64,
    /// Its median steady step in the run (ns).
    pub run_ns: f64,
}

/// A setting that differs between the runs, as text ("25", "gloo", "(unset)").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SettingChange {
    /// What it is (`bucket_cap_mb`, `world size`, `NCCL_ALGO`).
    pub setting: String,
    /// Its value in the baseline.
    pub baseline: String,
    /// Its value in the run.
    pub run: String,
}

/// Everything `ddp-probe compare` reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The run compared against.
    pub baseline: Side,
    /// The run compared.
    pub run: Side,
    /// Whether the medians' 95% intervals are apart: a change the step-to-step spread does
    /// not explain.
    pub intervals_apart: bool,
    /// Whether the change is one to act on: the intervals are apart and the medians differ
    /// by at least [`RUN_TO_RUN_SPREAD`].
    pub beyond_noise: bool,
    /// The parts of the step, the largest change first (those recorded on one side only
    /// last); parts neither run recorded are left out and named in `not_recorded`.
    pub parts: Vec<PartChange>,
    /// The parts neither run recorded (`data wait` of a PyTorch program whose batches the
    /// module does not see, `writeback` of PyTorch's DDP).
    #[serde(default)]
    pub not_recorded: Vec<String>,
    /// Per rank, the largest change first (runs of the same world size only).
    pub ranks: Vec<RankChange>,
    /// Settings that differ.
    pub settings: Vec<SettingChange>,
    /// Things the reader should know.
    pub notes: Vec<String>,
    /// The time between steps, when it changed by [`RUN_TO_RUN_SPREAD`] of the baseline's
    /// median step or more: the verdict leads with it.
    pub between_steps: Option<BetweenStepsChange>,
}

/// A change of the time between steps (after a step's optimizer, before the next step's data
/// wait: the loop's tail, an evaluation or a checkpoint every N steps), which the median step
/// cannot show and the wall clock does.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct BetweenStepsChange {
    /// Its change per steady rank-step (ns; run minus baseline, means).
    pub delta_ns: f64,
    /// Steps per second by the wall clock (the time between steps counted), baseline and run,
    /// when both summaries have them.
    pub steps_per_s: Option<(f64, f64)>,
}

impl BetweenStepsChange {
    /// The sentence the verdict starts with.
    fn sentence(&self) -> String {
        let change = format!(
            "time between steps (after a step's optimizer, before the next step's data wait: the \
             loop's tail, an evaluation or a checkpoint every N steps) changed by {} a \
             rank-step, which the median step does not show.",
            units::signed_ns(self.delta_ns)
        );
        match self.steps_per_s {
            Some((a, b)) => {
                let slower = a / b - 1.0;
                format!(
                    "By the wall clock the run is {} {} ({a:.2} → {b:.2} steps/s): the {change}",
                    units::pct(slower.abs()),
                    if slower >= 0.0 { "slower" } else { "faster" },
                )
            }
            None => format!("The {change}"),
        }
    }
}

/// How much the median step of repeated runs of one job differs with nothing changed, as a
/// fraction: a smaller change is not one two runs can show, however steady each is. Repeats
/// of the same runs on this project's 2-core machine differed by 1.4–2.6% (the noise floor of
/// `bench/whatif`, 2026-12-02, 40 runs), while each run's own median was known to ±1%.
pub const RUN_TO_RUN_SPREAD: f64 = 0.03;

/// The fewest steady steps a run needs for its median's 95% interval.
const MIN_STEPS: u64 = 6;

/// Reads one part of a step (ns).
type PartOf = fn(&StepBreakdown) -> i64;

/// The step's parts, as [`StepBreakdown`] has them.
const PARTS: [(&str, PartOf); 8] = [
    ("data wait", |s| s.data_wait_ns),
    ("forward", |s| s.forward_ns),
    ("backward", |s| s.backward_ns),
    ("exposed communication", |s| s.comm_exposed_ns),
    ("optimizer", |s| s.optimizer_ns),
    ("writeback", |s| s.writeback_ns),
    ("other", |s| s.other_ns),
    (BETWEEN_STEPS, |s| s.between_ns.unwrap_or(0)),
];

/// The part that is not in the step: from its end to the next step's start
/// ([`StepBreakdown::between_ns`]; 0 after a rank's last step).
const BETWEEN_STEPS: &str = "between steps";

/// Compares `run` with `baseline` (each with its summary, made with `opts`).
pub fn compare(
    baseline: (&Run, &Summary),
    run: (&Run, &Summary),
    opts: &SummaryOptions,
) -> Comparison {
    let steady = |r: &Run| -> Vec<StepBreakdown> {
        step_breakdowns(r, opts)
            .into_iter()
            .filter(|s| s.warmup.is_none())
            .collect()
    };
    let (base_steps, run_steps) = (steady(baseline.0), steady(run.0));
    let base = side(baseline.1, &base_steps);
    let new = side(run.1, &run_steps);
    // Below 6 steps the "interval" is the sample's range, not a 95% one: nothing is apart.
    let intervals_apart = base.steps >= MIN_STEPS
        && new.steps >= MIN_STEPS
        && (new.step_median_interval_ns[0] > base.step_median_interval_ns[1]
            || new.step_median_interval_ns[1] < base.step_median_interval_ns[0]);
    let beyond_noise = intervals_apart
        && base.step_median_ns > 0.0
        && (new.step_median_ns / base.step_median_ns - 1.0).abs() >= RUN_TO_RUN_SPREAD;
    let same_world = base.world_size == new.world_size;
    // Each side's steps by rank, once: every part and every rank reads them.
    let (base_by_rank, run_by_rank) = (by_rank(&base_steps), by_rank(&run_steps));
    let mut parts: Vec<PartChange> = PARTS
        .iter()
        .map(|(name, f)| {
            let most_on = if same_world {
                (0..base.world_size)
                    .map(|rank| {
                        let of = |sides: &BTreeMap<u32, Vec<&StepBreakdown>>| {
                            sides.get(&rank).map_or(0.0, |steps| mean(steps, *f))
                        };
                        (rank, of(&run_by_rank) - of(&base_by_rank))
                    })
                    .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
            } else {
                None
            };
            PartChange {
                part: (*name).to_owned(),
                baseline_ns: mean(&base_steps, *f),
                run_ns: mean(&run_steps, *f),
                most_on,
                baseline_recorded: part_recorded(baseline.1, name),
                run_recorded: part_recorded(run.1, name),
            }
        })
        .collect();
    let not_recorded: Vec<String> = parts
        .iter()
        .filter(|p| !p.baseline_recorded && !p.run_recorded)
        .map(|p| p.part.clone())
        .collect();
    parts.retain(|p| p.baseline_recorded || p.run_recorded);
    parts.sort_by(|a, b| {
        b.comparable().cmp(&a.comparable()).then(
            b.comparable_delta_ns()
                .abs()
                .total_cmp(&a.comparable_delta_ns().abs()),
        )
    });

    let mut notes = Vec::new();
    let mut ranks = Vec::new();
    if same_world {
        for rank in 0..base.world_size {
            let of = |sides: &BTreeMap<u32, Vec<&StepBreakdown>>| {
                let mut v: Vec<f64> = sides.get(&rank)?.iter().map(|s| s.step_ns as f64).collect();
                median(&mut v)
            };
            if let (Some(b), Some(r)) = (of(&base_by_rank), of(&run_by_rank)) {
                ranks.push(RankChange {
                    rank,
                    baseline_ns: b,
                    run_ns: r,
                });
            }
        }
        ranks.sort_by(|a, b| {
            (b.run_ns - b.baseline_ns)
                .abs()
                .total_cmp(&(a.run_ns - a.baseline_ns).abs())
        });
    } else {
        notes.push(format!(
            "the runs have different world sizes ({} and {} ranks): ranks are not compared one \
             by one",
            base.world_size, new.world_size
        ));
    }
    for (name, n) in [("baseline", base.steps), ("run", new.steps)] {
        if n < MIN_STEPS {
            notes.push(format!(
                "the {name} has {n} steady step{}: too few to tell a change from the \
                 step-to-step spread (a run of at least {MIN_STEPS} can)",
                if n == 1 { "" } else { "s" }
            ));
        }
    }
    let between_steps = between_steps_changed(&parts, &base, baseline.1, run.1);
    let mut settings = settings(baseline.0, baseline.1, run.0, run.1);
    if let Some((a, b)) = samples_per_step_differ(&base, &new) {
        settings.push(SettingChange {
            setting: "samples per step (all ranks)".to_owned(),
            baseline: format!("{a:.0}"),
            run: format!("{b:.0}"),
        });
    }
    Comparison {
        settings,
        baseline: base,
        run: new,
        beyond_noise,
        parts,
        not_recorded,
        ranks,
        notes,
        intervals_apart,
        between_steps,
    }
}

/// The time between steps' change, when it is [`RUN_TO_RUN_SPREAD`] of the baseline's median
/// step or more: the step's median cannot show it, the wall clock does (an evaluation or a
/// checkpoint added every N steps, logging every step).
fn between_steps_changed(
    parts: &[PartChange],
    base: &Side,
    baseline: &Summary,
    run: &Summary,
) -> Option<BetweenStepsChange> {
    let p = parts.iter().find(|p| p.part == BETWEEN_STEPS)?;
    if base.step_median_ns <= 0.0 || p.delta_ns().abs() < RUN_TO_RUN_SPREAD * base.step_median_ns {
        return None;
    }
    let steps_per_s = match (baseline.throughput.steps_per_s, run.throughput.steps_per_s) {
        (Some(a), Some(b)) if a > 0.0 && b > 0.0 => Some((a, b)),
        _ => None,
    };
    Some(BetweenStepsChange {
        delta_ns: p.delta_ns(),
        steps_per_s,
    })
}

/// Whether the run recorded `part` of the step: the summary's `not_recorded` names the parts
/// no rank has a span of (its `communication` is the comparison's `exposed communication`).
fn part_recorded(summary: &Summary, part: &str) -> bool {
    summary.recorded(if part == "exposed communication" {
        "communication"
    } else {
        part
    })
}

/// The mean of one part over `steps` (ns); 0 without steps.
fn mean<S: std::borrow::Borrow<StepBreakdown>>(steps: &[S], f: PartOf) -> f64 {
    if steps.is_empty() {
        return 0.0;
    }
    steps.iter().map(|s| f(s.borrow()) as f64).sum::<f64>() / steps.len() as f64
}

/// `steps` by rank.
fn by_rank(steps: &[StepBreakdown]) -> BTreeMap<u32, Vec<&StepBreakdown>> {
    let mut out: BTreeMap<u32, Vec<&StepBreakdown>> = BTreeMap::new();
    for s in steps {
        out.entry(s.rank).or_default().push(s);
    }
    out
}

/// The samples per step of two runs, when both count samples and they differ by more than 1%
/// (another batch size, gradient accumulation): then per sample is what compares.
fn samples_per_step_differ(a: &Side, b: &Side) -> Option<(f64, f64)> {
    a.samples_per_step
        .zip(b.samples_per_step)
        .filter(|(x, y)| (y / x - 1.0).abs() > 0.01)
}

fn side(s: &Summary, steps: &[StepBreakdown]) -> Side {
    // One value per step, the mean over its ranks: the ranks of a step wait for each other in
    // its all-reduces, so their step times are one observation, not world-size many (pooled,
    // two runs of one job read as different at 0.7%).
    let mut by_step: BTreeMap<Option<u64>, (f64, u32)> = Default::default();
    for st in steps {
        let e = by_step.entry(st.step).or_default();
        e.0 += st.step_ns as f64;
        e.1 += 1;
    }
    let mut v: Vec<f64> = by_step
        .values()
        .map(|(sum, n)| sum / f64::from(*n))
        .collect();
    let (median, interval) = median_interval(&mut v);
    Side {
        run_id: s.run_id.clone(),
        world_size: s.world_size,
        rank_steps: steps.len() as u64,
        steps: v.len() as u64,
        step_median_ns: median,
        step_median_interval_ns: interval,
        samples_per_s: s.throughput.samples_per_s,
        samples_per_step: s
            .throughput
            .samples_per_s
            .zip(s.throughput.steps_per_s)
            .filter(|(_, steps)| *steps > 0.0)
            .map(|(samples, steps)| samples / steps),
        straggler: s.stragglers.straggler.as_ref().map(|st| st.rank),
    }
}

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The median of `v` and a 95% confidence interval for it from the order statistics: the
/// values of 1-based ranks `⌊(n − 1.96·√n)/2⌋` and `⌈1 + (n + 1.96·√n)/2⌉`, clamped to the
/// sample (the normal approximation of the binomial; distribution-free).
pub fn median_interval(v: &mut [f64]) -> (f64, [f64; 2]) {
    let Some(m) = median(v) else {
        return (0.0, [0.0, 0.0]);
    };
    let n = v.len() as f64;
    let half = 1.96 * n.sqrt();
    let lo = (((n - half) / 2.0).floor() as usize).clamp(1, v.len());
    let hi = ((1.0 + (n + half) / 2.0).ceil() as usize).clamp(1, v.len());
    (m, [v[lo - 1], v[hi - 1]])
}

/// The settings of two runs that differ, from rank 0's trace header and the summaries.
fn settings(a: &Run, sa: &Summary, b: &Run, sb: &Summary) -> Vec<SettingChange> {
    let facts = |r: &Run, s: &Summary| -> Vec<(&'static str, String)> {
        let h = r.ranks.first().map(|t| &t.header);
        let ddp = h.and_then(|h| h.ddp.as_ref());
        let opt = |v: Option<String>| v.unwrap_or_else(|| "(not recorded)".to_owned());
        let mut hosts: Vec<&str> = r.ranks.iter().map(|t| t.header.hostname.as_str()).collect();
        hosts.sort_unstable();
        hosts.dedup();
        vec![
            ("world size", s.world_size.to_string()),
            ("hosts", hosts.len().to_string()),
            (
                "command",
                opt(h.and_then(|h| h.argv.as_ref()).map(|a| a.join(" "))),
            ),
            ("backend", opt(ddp.map(|d| d.backend.clone()))),
            (
                "bucket_cap_mb",
                opt(ddp.map(|d| match (&d.bucket_cap_mb_list, d.bucket_cap_mb) {
                    (Some(list), _) => format!("{list:?}"),
                    (None, Some(c)) => format!("{c}"),
                    (None, None) => "(default)".to_owned(),
                })),
            ),
            (
                "first bucket",
                opt(ddp
                    .and_then(|d| d.first_bucket_bytes)
                    .map(|b| units::bytes(b as f64))),
            ),
            ("buckets (steady)", s.buckets.len().to_string()),
            (
                "gradients",
                opt(ddp.map(|d| {
                    let bytes: u64 = d.params.iter().map(|p| p.bytes).sum();
                    format!("{} tensors, {}", d.params.len(), units::bytes(bytes as f64))
                })),
            ),
            (
                "find_unused_parameters",
                opt(ddp.map(|d| d.find_unused_parameters.to_string())),
            ),
            ("static_graph", opt(ddp.map(|d| d.static_graph.to_string()))),
            (
                "gradient_as_bucket_view",
                opt(ddp.map(|d| d.gradient_as_bucket_view.to_string())),
            ),
            (
                "buffers broadcast",
                opt(ddp.map(|d| {
                    let bytes: u64 = d.buffers.iter().map(|b| b.bytes).sum();
                    format!(
                        "{} buffers, {}",
                        d.buffers.len(),
                        units::bytes(bytes as f64)
                    )
                })),
            ),
        ]
    };
    facts(a, sa)
        .into_iter()
        .zip(facts(b, sb))
        .filter(|((_, x), (_, y))| x != y)
        .map(|((name, x), (_, y))| SettingChange {
            setting: name.to_owned(),
            baseline: x,
            run: y,
        })
        .collect()
}

/// The variables of the launcher's record of the environment (a manifest's `env`: NCCL_*,
/// TORCH_*, OMP_*, ...) that differ between two runs; names that differ from run to run by
/// design (the port, the run id, ddp-probe's own) are not settings.
pub fn environment_changes(
    baseline: &std::collections::BTreeMap<String, String>,
    run: &std::collections::BTreeMap<String, String>,
) -> Vec<SettingChange> {
    let varies =
        |k: &str| matches!(k, "MASTER_PORT" | "TORCHELASTIC_RUN_ID") || k.starts_with("DDP_PROBE_");
    let unset = || "(unset)".to_owned();
    let names: std::collections::BTreeSet<&String> = baseline.keys().chain(run.keys()).collect();
    names
        .into_iter()
        .filter(|k| !varies(k) && baseline.get(*k) != run.get(*k))
        .map(|k| SettingChange {
            setting: k.clone(),
            baseline: baseline.get(k).cloned().unwrap_or_else(unset),
            run: run.get(k).cloned().unwrap_or_else(unset),
        })
        .collect()
}

impl Comparison {
    /// What [`Side::step_median_interval_ns`] is: a 95% interval of the median, or, for a run
    /// too short for one, the range of its steps.
    pub fn interval_name(&self) -> &'static str {
        if self.baseline.steps < MIN_STEPS || self.run.steps < MIN_STEPS {
            "ranges of the steps (too few for an interval of the median)"
        } else {
            "95% intervals of the medians"
        }
    }

    /// The change of the median step (ns), run minus baseline.
    pub fn step_delta_ns(&self) -> f64 {
        self.run.step_median_ns - self.baseline.step_median_ns
    }

    /// The answer: how much slower or faster, whether beyond the noise, and the part most of
    /// the change is in; led by the wall clock when the time between steps changed (the step
    /// itself can be unchanged while the run is far slower).
    pub fn verdict(&self) -> String {
        let step = self.step_verdict();
        let Some(between) = &self.between_steps else {
            return step;
        };
        // Steps of different sizes: steps per second compare nothing, and the step's sentence
        // gives the rate per sample (by the wall clock too).
        let per_sample = samples_per_step_differ(&self.baseline, &self.run).is_some()
            && self.baseline.samples_per_s.is_some()
            && self.run.samples_per_s.is_some();
        let between = BetweenStepsChange {
            steps_per_s: between.steps_per_s.filter(|_| !per_sample),
            ..*between
        };
        format!(
            "{} {}",
            between.sentence(),
            step.replacen("The step is ", "The step itself is ", 1)
        )
    }

    /// How the median step changed.
    fn step_verdict(&self) -> String {
        let (b, r) = (self.baseline.step_median_ns, self.run.step_median_ns);
        if b <= 0.0 || r <= 0.0 {
            return "One of the runs has no steady steps: nothing to compare.".to_owned();
        }
        let ratio = r / b - 1.0;
        let unchanged = ratio.abs() < 0.0005;
        let way = if ratio >= 0.0 { "slower" } else { "faster" };
        let mut line = if unchanged {
            format!("The step is unchanged ({} median)", units::ns(b))
        } else {
            format!(
                "The step is {} {way} ({} → {} median)",
                units::pct(ratio.abs()),
                units::ns(b),
                units::ns(r)
            )
        };
        // Steps of different sizes (another batch, gradient accumulation): per sample is what
        // compares, and it can go the other way.
        if let (Some((sa, sb)), Some(ta), Some(tb)) = (
            samples_per_step_differ(&self.baseline, &self.run),
            self.baseline.samples_per_s,
            self.run.samples_per_s,
        ) {
            let per_sample = ta / tb - 1.0;
            return format!(
                "{line}, but a step of the run processes {} samples against {}: per sample the \
                 run is {} {} ({} → {} samples/s). The parts below are per step.",
                sb.round(),
                sa.round(),
                units::pct(per_sample.abs()),
                if per_sample >= 0.0 {
                    "slower"
                } else {
                    "faster"
                },
                units::count_rate(ta),
                units::count_rate(tb)
            );
        }
        if unchanged {
            line.push('.');
            return line;
        }
        if self.baseline.steps < MIN_STEPS || self.run.steps < MIN_STEPS {
            line.push_str(&format!(
                ", from {} and {} steady steps: too few to tell a change from the step-to-step \
                 spread.",
                self.baseline.steps, self.run.steps
            ));
            return line;
        }
        if !self.intervals_apart {
            line.push_str(
                ", within the step-to-step spread of the two runs (their medians' 95% intervals \
                 overlap): not a change these runs can show.",
            );
            return line;
        }
        if !self.beyond_noise {
            line.push_str(&format!(
                ", less than the {} by which repeated runs of one job can differ: run each again \
                 to tell a change from that.",
                units::pct(RUN_TO_RUN_SPREAD)
            ));
            return line;
        }
        let mean_delta: f64 = self.parts.iter().map(PartChange::delta_ns).sum();
        if let Some(top) = self.parts.first().filter(|p| p.comparable()) {
            let d = top.delta_ns();
            // The part must carry the change's sign and at least a third of it to be named.
            if d.signum() == mean_delta.signum() && d.abs() >= mean_delta.abs() / 3.0 {
                line.push_str(&format!(
                    "; the largest part of it is {}: {} of the parts' {} per step (means)",
                    top.part,
                    units::signed_ns(d),
                    units::signed_ns(mean_delta)
                ));
                // A change carried by one rank (a straggler's own compute) is named with it.
                if let Some((rank, rd)) = top.most_on {
                    if self.ranks.len() > 1
                        && rd.signum() == d.signum()
                        && rd.abs() >= 1.5 * d.abs()
                    {
                        line.push_str(&format!(", {} on rank {rank}", units::signed_ns(rd)));
                    }
                }
            }
        }
        line.push('.');
        line
    }

    /// What the parts' table leaves out or cannot compare, one sentence each: parts neither
    /// run recorded, and parts one run recorded and the other did not.
    pub fn recording_notes(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if !self.not_recorded.is_empty() {
            lines.push(format!(
                "Not recorded in either run: {} (their time is in other).",
                self.not_recorded.join(", ")
            ));
        }
        for p in self.parts.iter().filter(|p| !p.comparable()) {
            let (has, lacks) = if p.baseline_recorded {
                ("baseline", "run")
            } else {
                ("run", "baseline")
            };
            lines.push(format!(
                "{}: recorded in the {has} only; in the {lacks} its time is in other, so the \
                 two are not compared.",
                capitalized(&p.part)
            ));
        }
        lines
    }

    /// Plain text for a terminal of `width` columns.
    pub fn render_text(&self, width: usize) -> String {
        let mut out = String::new();
        let side = |s: &Side| {
            format!(
                "{} ({} ranks, {} steady steps)",
                s.run_id, s.world_size, s.steps
            )
        };
        out.push_str(&format!(
            "baseline {}\nrun      {}\n\n",
            side(&self.baseline),
            side(&self.run)
        ));
        push_prose(&mut out, &self.verdict(), width, "");
        let iv = |s: &Side| {
            format!(
                "{} to {}",
                units::ns(s.step_median_interval_ns[0]),
                units::ns(s.step_median_interval_ns[1])
            )
        };
        push_prose(
            &mut out,
            &format!(
                "median step {} → {} ({}); {} {} and {}",
                units::ns(self.baseline.step_median_ns),
                units::ns(self.run.step_median_ns),
                units::signed_ns(self.step_delta_ns()),
                self.interval_name(),
                iv(&self.baseline),
                iv(&self.run)
            ),
            width,
            "  ",
        );
        if let (Some(a), Some(b)) = (self.baseline.samples_per_s, self.run.samples_per_s) {
            out.push_str(&format!(
                "  samples/s {} → {} ({})\n",
                units::count_rate(a),
                units::count_rate(b),
                units::signed_pct(b / a - 1.0)
            ));
        }
        out.push_str(
            "\nwhere the time changed (mean per steady rank-step; parts overlap a little):\n",
        );
        let by_rank = self.ranks.len() > 1;
        out.push_str(&format!(
            "  {:<24}{:>11}{:>11}{:>11}{}\n",
            "part",
            "baseline",
            "run",
            "change",
            if by_rank { "   most on" } else { "" }
        ));
        for p in &self.parts {
            let [baseline, run, change] = p.cells();
            let most = match p.most_on {
                Some((rank, d)) if by_rank && d != 0.0 && p.comparable() => {
                    format!("   rank {rank} {}", units::signed_ns(d))
                }
                _ => String::new(),
            };
            out.push_str(&format!(
                "  {:<24}{baseline:>11}{run:>11}{change:>11}{most}\n",
                p.part,
            ));
        }
        for line in self.recording_notes() {
            push_prose(&mut out, &line, width, "  ");
        }
        if !self.ranks.is_empty() {
            out.push_str("\nper rank (median step), the largest change first:\n");
            for r in self.ranks.iter().take(8) {
                out.push_str(&format!(
                    "  rank {:<6}{:>12}{:>12}{:>12}\n",
                    r.rank,
                    units::ns(r.baseline_ns),
                    units::ns(r.run_ns),
                    units::signed_ns(r.run_ns - r.baseline_ns)
                ));
            }
            if self.ranks.len() > 8 {
                out.push_str(&format!("  ... {} more ranks\n", self.ranks.len() - 8));
            }
        }
        let straggler = |s: &Side| {
            s.straggler
                .map_or("none".to_owned(), |r| format!("rank {r}"))
        };
        if self.baseline.straggler != self.run.straggler {
            out.push_str(&format!(
                "\nstraggler: {} → {}\n",
                straggler(&self.baseline),
                straggler(&self.run)
            ));
        }
        if self.settings.is_empty() {
            out.push_str("\nsettings: the same in both runs (from the traces and manifests)\n");
        } else {
            out.push_str("\nsettings that differ:\n");
            for s in &self.settings {
                push_prose(
                    &mut out,
                    &format!("{}: {} → {}", s.setting, s.baseline, s.run),
                    width,
                    "  ",
                );
            }
        }
        for n in &self.notes {
            out.push('\n');
            push_prose(&mut out, &format!("note: {n}"), width, "");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::median_interval;

    #[test]
    fn the_median_interval_comes_from_the_order_statistics() {
        // n = 100: 1.96·√100 = 19.6; ranks ⌊40.2⌋ = 40 and ⌈1 + 59.8⌉ = 61 (1-based).
        let mut v: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        let (m, iv) = median_interval(&mut v);
        assert_eq!(m, 50.5);
        assert_eq!(iv, [40.0, 61.0]);
        // Below 6 values the interval is the whole sample.
        let mut v = vec![3.0, 1.0, 2.0];
        assert_eq!(median_interval(&mut v), (2.0, [1.0, 3.0]));
    }
}
