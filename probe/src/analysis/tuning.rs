//! `bucket_cap_mb` tuning by measurement: the statistics of a sweep, the
//! recommendation, the `--auto` search policy and the comparison with the
//! one-trace prediction of [`super::advise`]. The runs are launched by the
//! `probe-series` crate; the report section is `probe-reports`' `tune`.
//!
//! Each candidate cap is run `repeats` times; the steady steps of every rank
//! of every repeat (warm-up steps excluded) are pooled, and the candidate is
//! summed up by the median step time with the interquartile range (p25–p75)
//! and the range (min–max) as its spread. The recommended cap is the one
//! with the lowest median. Two medians differ *beyond noise* when the gap
//! exceeds the larger of 1 % of the faster one and half the larger
//! interquartile range.

use serde::{Deserialize, Serialize};

use super::stats::percentile_sorted;
use super::{Advice, Confidence};
use crate::units::{group_thousands, mib, ns, pct, signed_pct};

const MIB: f64 = 1024.0 * 1024.0;

/// A distribution of step times (ns).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// Steps measured.
    pub n: u64,
    /// Median.
    pub median_ns: f64,
    /// 25th percentile.
    pub p25_ns: f64,
    /// 75th percentile.
    pub p75_ns: f64,
    /// Fastest step.
    pub min_ns: f64,
    /// Slowest step.
    pub max_ns: f64,
}

impl Measurement {
    /// The distribution of `values` (NaNs dropped, reordered); `None` for
    /// none.
    pub fn of(values: &mut Vec<f64>) -> Option<Measurement> {
        values.retain(|v| v.is_finite());
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        Some(Measurement {
            n: values.len() as u64,
            median_ns: percentile_sorted(values, 0.5),
            p25_ns: percentile_sorted(values, 0.25),
            p75_ns: percentile_sorted(values, 0.75),
            min_ns: values[0],
            max_ns: values[values.len() - 1],
        })
    }

    /// `p75 − p25`.
    pub fn iqr_ns(&self) -> f64 {
        self.p75_ns - self.p25_ns
    }
}

/// The smallest gap between two medians that counts as a real difference:
/// the larger of 1 % of the faster median and half the larger interquartile
/// range.
pub fn noise_ns(a: &Measurement, b: &Measurement) -> f64 {
    (0.01 * a.median_ns.min(b.median_ns)).max(0.5 * a.iqr_ns().max(b.iqr_ns()))
}

/// Whether `a` is faster than `b` beyond noise.
pub fn faster(a: &Measurement, b: &Measurement) -> bool {
    a.median_ns < b.median_ns - noise_ns(a, b)
}

/// One run of a tuning series.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TuneRun {
    /// Its run directory.
    pub dir: String,
    /// Which repeat of its candidate (1-based).
    pub repeat: u32,
    /// The launcher's status (`ok`, `failed`...).
    pub status: String,
    /// Steady rank-steps measured.
    pub steady_steps: u64,
    /// Median steady step time (ns).
    pub median_step_ns: Option<f64>,
    /// Why it failed, when it did.
    pub failure: Option<String>,
    /// Every steady step time of every rank (ns); not kept in `tune.json`.
    #[serde(default, skip_serializing)]
    pub step_times_ns: Vec<f64>,
}

/// One candidate cap and its runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TuneCandidate {
    /// The cap in MiB; `None` for the job's own setting (no cap given).
    pub cap_mb: Option<f64>,
    /// Its runs.
    pub runs: Vec<TuneRun>,
    /// The pooled steady steps of its successful runs.
    pub measurement: Option<Measurement>,
    /// The step time advise predicted for it from the first run's trace (ns).
    pub predicted_step_ns: Option<f64>,
}

impl TuneCandidate {
    /// A candidate with no runs yet.
    pub fn new(cap_mb: Option<f64>) -> TuneCandidate {
        TuneCandidate {
            cap_mb,
            runs: Vec::new(),
            measurement: None,
            predicted_step_ns: None,
        }
    }

    /// `"10 MiB"`, or `"job default"`.
    pub fn label(&self) -> String {
        match self.cap_mb {
            Some(c) => format!("{} MiB", mib(c)),
            None => "job default".to_owned(),
        }
    }

    /// Pools the step times of its successful runs into
    /// [`TuneCandidate::measurement`].
    pub fn measure(&mut self) {
        let mut all: Vec<f64> = self
            .runs
            .iter()
            .filter(|r| r.failure.is_none())
            .flat_map(|r| r.step_times_ns.iter().copied())
            .collect();
        self.measurement = Measurement::of(&mut all);
    }

    /// The lowest and highest median step time of its successful runs,
    /// when it has two or more.
    pub fn run_range(&self) -> Option<(f64, f64)> {
        let v: Vec<f64> = self
            .runs
            .iter()
            .filter(|r| r.failure.is_none())
            .filter_map(|r| r.median_step_ns)
            .collect();
        (v.len() >= 2).then(|| {
            (
                v.iter().copied().fold(f64::INFINITY, f64::min),
                v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            )
        })
    }

    /// Runs that ended normally.
    pub fn ok_runs(&self) -> usize {
        self.runs.iter().filter(|r| r.failure.is_none()).count()
    }
}

/// Whether two caps are the same (to a relative 1e-9).
pub fn same_cap(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12)
}

/// How the caps were chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TuneMode {
    /// A fixed list (`--bucket-cap-mb`).
    Sweep,
    /// A search from advise's prediction (`--auto`).
    Auto,
}

/// One measurement of the `--auto` search.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchStep {
    /// The cap measured.
    pub cap_mb: f64,
    /// Its median step time (ns), `None` when its runs failed.
    pub median_ns: Option<f64>,
    /// What the search concluded from it.
    pub verdict: String,
}

/// What [`auto_search`] measures with: a batch of caps in, one measurement
/// per cap out (`None` when every run of it failed).
pub type BatchMeasure<'a, E> = dyn FnMut(&[f64]) -> Result<Vec<Option<Measurement>>, E> + 'a;

/// Runs the `--auto` search: measures `start`, then its neighbours `start/2`
/// and `start×2`; if one is faster beyond noise, keeps halving or doubling
/// in that direction while the next cap is faster beyond noise. Caps
/// outside `[min_cap, max_cap]` are not tried. `measure` runs a batch of
/// caps (all their repeats, interleaved, so that a change in the machine's
/// speed does not fall on one neighbour alone) and returns one measurement
/// per cap (`None` when every run of it failed); no cap is measured twice.
/// Returns the path taken and the best cap (`None` when the start failed).
pub fn auto_search<E>(
    start: f64,
    min_cap: f64,
    max_cap: f64,
    measure: &mut BatchMeasure<'_, E>,
) -> Result<(Vec<SearchStep>, Option<f64>), E> {
    let mut path = Vec::new();
    let inside = |c: f64| c >= min_cap * (1.0 - 1e-9) && c <= max_cap * (1.0 + 1e-9);
    let m0 = measure_one(measure, start)?;
    let Some(mut best_m) = m0 else {
        path.push(SearchStep {
            cap_mb: start,
            median_ns: None,
            verdict: "start (advise's recommendation); every run failed, the search stops".into(),
        });
        return Ok((path, None));
    };
    path.push(SearchStep {
        cap_mb: start,
        median_ns: Some(best_m.median_ns),
        verdict: "start: advise's recommendation from the baseline trace".into(),
    });
    let mut best = start;
    let judge = |cap: f64,
                 m: Option<Measurement>,
                 best: f64,
                 best_m: &Measurement,
                 path: &mut Vec<SearchStep>|
     -> bool {
        let (verdict, better) = match &m {
            None => ("every run failed".to_owned(), false),
            Some(m) if faster(m, best_m) => (
                format!(
                    "faster than {} MiB by {} ({})",
                    mib(best),
                    ns(best_m.median_ns - m.median_ns),
                    pct((best_m.median_ns - m.median_ns) / best_m.median_ns)
                ),
                true,
            ),
            Some(m) if m.median_ns < best_m.median_ns => (
                format!("not faster than {} MiB beyond noise", mib(best)),
                false,
            ),
            Some(m) => (
                format!(
                    "slower than {} MiB by {}",
                    mib(best),
                    ns(m.median_ns - best_m.median_ns)
                ),
                false,
            ),
        };
        path.push(SearchStep {
            cap_mb: cap,
            median_ns: m.map(|m| m.median_ns),
            verdict,
        });
        better
    };
    // Both neighbours first, measured together.
    let mut winner: Option<(f64, f64, Measurement)> = None;
    let neighbours: Vec<(f64, f64)> = [0.5, 2.0]
        .into_iter()
        .map(|f| (f, best * f))
        .filter(|&(_, c)| inside(c))
        .collect();
    let caps: Vec<f64> = neighbours.iter().map(|n| n.1).collect();
    let ms = if caps.is_empty() {
        Vec::new()
    } else {
        measure(&caps)?
    };
    for (k, &(factor, cap)) in neighbours.iter().enumerate() {
        let m = ms.get(k).copied().flatten();
        if judge(cap, m, best, &best_m, &mut path) {
            let m = m.unwrap_or(best_m);
            if winner.is_none_or(|w| m.median_ns < w.2.median_ns) {
                winner = Some((factor, cap, m));
            }
        }
    }
    let Some((factor, cap, m)) = winner else {
        return Ok((path, Some(best)));
    };
    best = cap;
    best_m = m;
    loop {
        let cap = best * factor;
        if !inside(cap) {
            break;
        }
        let m = measure_one(measure, cap)?;
        if judge(cap, m, best, &best_m, &mut path) {
            best = cap;
            best_m = m.unwrap_or(best_m);
        } else {
            break;
        }
    }
    Ok((path, Some(best)))
}

/// One cap through a batch `measure` of [`auto_search`].
fn measure_one<E>(measure: &mut BatchMeasure<'_, E>, cap: f64) -> Result<Option<Measurement>, E> {
    Ok(measure(&[cap])?.into_iter().next().flatten())
}

/// The recommended cap.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TuneRecommendation {
    /// The cap (MiB).
    pub cap_mb: f64,
    /// Its measurement.
    pub measurement: Measurement,
    /// The next fastest cap and its median (ns).
    pub runner_up: Option<(f64, f64)>,
    /// Whether the runner-up is within noise of it.
    pub runner_up_within_noise: bool,
    /// What it is compared with (the job's default, else the largest cap
    /// measured) and that one's median (ns).
    pub reference: Option<(String, f64)>,
    /// Whether it beats the reference beyond noise.
    pub beats_reference: bool,
    /// The recommendation in words.
    pub text: String,
}

/// Recommends the candidate with the lowest median step time.
pub fn recommend(cands: &[TuneCandidate]) -> Option<TuneRecommendation> {
    let mut measured: Vec<(f64, Measurement)> = cands
        .iter()
        .filter_map(|c| Some((c.cap_mb?, c.measurement?)))
        .collect();
    measured.sort_by(|a, b| {
        a.1.median_ns
            .total_cmp(&b.1.median_ns)
            .then(a.0.total_cmp(&b.0))
    });
    let (cap, m) = *measured.first()?;
    let runner_up = measured.get(1).copied();
    let within = runner_up.is_some_and(|r| !faster(&m, &r.1));
    // The reference: the job's own setting, else PyTorch's default of
    // 25 MiB, else the largest cap measured.
    let measured_cap = |c: &&TuneCandidate| c.measurement.is_some() && c.cap_mb.is_some();
    let reference = cands
        .iter()
        .find(|c| c.cap_mb.is_none() && c.measurement.is_some())
        .or_else(|| {
            cands
                .iter()
                .filter(measured_cap)
                .find(|c| c.cap_mb.is_some_and(|x| same_cap(x, 25.0)))
        })
        .or_else(|| {
            cands
                .iter()
                .filter(measured_cap)
                .max_by(|a, b| a.cap_mb.unwrap_or(0.0).total_cmp(&b.cap_mb.unwrap_or(0.0)))
        })
        .filter(|c| !c.cap_mb.is_some_and(|x| same_cap(x, cap)))
        .and_then(|c| Some((c.label(), c.measurement?)));
    let beats = reference.as_ref().is_some_and(|r| faster(&m, &r.1));
    let mut text = format!(
        "bucket_cap_mb={}: median step {} (p25–p75 {}–{}) over {} steady rank-steps",
        mib(cap),
        ns(m.median_ns),
        ns(m.p25_ns),
        ns(m.p75_ns),
        group_thousands(m.n as i64)
    );
    if let Some((label, r)) = &reference {
        text.push_str(&format!(
            "; {} than {label} ({})",
            if beats {
                format!("{} faster", pct((r.median_ns - m.median_ns) / r.median_ns))
            } else {
                "not faster beyond noise".to_owned()
            },
            ns(r.median_ns)
        ));
    }
    if let (Some((rc, rm)), true) = (runner_up, within) {
        text.push_str(&format!(
            "; {} MiB ({}) is within noise of it",
            mib(rc),
            ns(rm.median_ns)
        ));
    }
    text.push('.');
    if within && !beats {
        text.push_str(
            " The differences between the caps are within run-to-run noise: any of the fastest is as good, and more steps or repeats would tell them apart if anything does.",
        );
    }
    Some(TuneRecommendation {
        cap_mb: cap,
        measurement: m,
        runner_up: runner_up.map(|(c, r)| (c, r.median_ns)),
        runner_up_within_noise: within,
        reference: reference.map(|(l, r)| (l, r.median_ns)),
        beats_reference: beats,
        text,
    })
}

/// What advise predicted from the first run's trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdvicePrediction {
    /// The run whose trace advise read.
    pub from_run: String,
    /// The cap that run used (`None` for the job's default).
    pub run_cap_mb: Option<f64>,
    /// The cap advise recommends.
    pub recommended_cap_mb: Option<f64>,
    /// Whether advise thinks changing is worth it.
    pub worth_changing: bool,
    /// Its predicted gain (ns).
    pub predicted_gain_ns: Option<f64>,
    /// Its confidence (`high`, `medium`, `low`).
    pub confidence: Option<String>,
    /// The relative residual of its cost model.
    pub model_residual: Option<f64>,
    /// Why advise could not predict, when it could not.
    pub missing: Vec<String>,
}

/// The prediction advise makes for `cap` explicitly given: the candidate
/// whose first bucket is as large as the cap (an explicit `bucket_cap_mb`
/// sets both limits of the rebuilt buckets to it, as in PyTorch 2.13), else
/// any candidate of that cap.
pub fn predicted_for(advice: &Advice, cap: f64) -> Option<f64> {
    let cap_bytes = (cap * MIB) as u64;
    let of_cap = || advice.candidates.iter().filter(|c| same_cap(c.cap_mb, cap));
    of_cap()
        .find(|c| c.first_bucket_bytes == cap_bytes)
        .or_else(|| of_cap().next())
        .map(|c| c.predicted_step_ns)
}

/// What the model of `advice` rests on and what one trace cannot show it, for a prediction the
/// measurement contradicts: its replay of the recorded step and the slowdown it measured where
/// compute and communication overlap, with this run's figures.
fn why_model_errs(advice: &Advice) -> String {
    let replay = advice.replay.as_ref().map_or_else(String::new, |r| {
        format!(
            "replays the first run's own step ({} against {} measured, {}) and ",
            ns(r.predicted_step_ns),
            ns(r.measured_step_ns),
            signed_pct(r.error())
        )
    });
    let overlap = match advice.interference {
        Some(i) if i.compute_measured => {
            format!("compute {:.2}× as long while a collective runs", i.compute)
        }
        _ => "none measured".to_owned(),
    };
    format!(
        "The model {replay}runs each candidate's \
         all-reduces through backward with each size's measured time and the slowdown measured \
         where compute and communication overlap ({overlap}); how that slowdown, the copies \
         into and out of the buckets and each call's overhead change with the number of buckets \
         is what a trace of one cap cannot show, and it changes with the cap too."
    )
}

/// Fills in each candidate's predicted step time from `advice` (computed on
/// the trace of `from_run`, a run with `run_cap_mb`) and explains how the
/// measurement compares with the prediction, one paragraph per entry.
pub fn compare_with_advice(
    advice: &Advice,
    from_run: &str,
    run_cap_mb: Option<f64>,
    cands: &mut [TuneCandidate],
) -> (AdvicePrediction, Vec<String>) {
    for c in cands.iter_mut() {
        c.predicted_step_ns = c.cap_mb.and_then(|cap| predicted_for(advice, cap));
    }
    let rec = advice.recommendation.as_ref();
    let fit = advice.fit_used.and_then(|i| advice.fits.get(i));
    let prediction = AdvicePrediction {
        from_run: from_run.to_owned(),
        run_cap_mb,
        recommended_cap_mb: rec.map(|r| r.cap_mb),
        worth_changing: rec.is_some_and(|r| r.worth_changing),
        predicted_gain_ns: rec.map(|r| r.gain_ns),
        confidence: rec.map(|r| {
            match r.confidence {
                Confidence::High => "high",
                Confidence::Medium => "medium",
                Confidence::Low => "low",
            }
            .to_owned()
        }),
        model_residual: fit.map(|f| f.fit.rel_rmse),
        missing: advice.missing.clone(),
    };
    let mut out = Vec::new();
    let run_cap = run_cap_mb.map_or("the job's default".to_owned(), |c| {
        format!("{} MiB", mib(c))
    });
    let Some(r) = rec else {
        out.push(format!(
            "advise could not predict from the first run's trace ({from_run}, {run_cap}): {}.",
            if advice.missing.is_empty() {
                "no candidate could be simulated".to_owned()
            } else {
                advice.missing.join("; ")
            }
        ));
        return (prediction, out);
    };
    out.push(if r.worth_changing {
        format!(
            "From the first run's trace alone ({from_run}, {run_cap}), advise, choosing among the caps measured here, recommends {}: a predicted gain of {} per step, confidence {}.",
            r.setting(),
            ns(r.gain_ns),
            prediction.confidence.as_deref().unwrap_or("-")
        )
    } else {
        format!(
            "From the first run's trace alone ({from_run}, {run_cap}), advise, choosing among the caps measured here, predicts none beating the current one beyond noise; its best is {} MiB (`ddp-probe advise` on that run weighs other caps and first-bucket sizes too).",
            mib(r.cap_mb)
        )
    });
    // Absolute error of the predictions.
    let errors: Vec<(f64, f64)> = cands
        .iter()
        .filter_map(|c| {
            let m = c.measurement?;
            let p = c.predicted_step_ns?;
            Some((c.cap_mb?, (p - m.median_ns) / m.median_ns))
        })
        .collect();
    if !errors.is_empty() {
        let mut abs: Vec<f64> = errors.iter().map(|e| e.1.abs()).collect();
        abs.sort_by(f64::total_cmp);
        let worst = errors
            .iter()
            .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
            .copied()
            .unwrap_or((0.0, 0.0));
        let mut line = format!(
            "Predicted step times differ from the measured medians by {} in the median case and at most {}",
            pct(percentile_sorted(&abs, 0.5)),
            pct(worst.1.abs()),
        );
        if worst.1.abs() >= 0.001 {
            line.push_str(&format!(
                " (at {} MiB, predicted {} the measurement)",
                mib(worst.0),
                if worst.1 > 0.0 { "above" } else { "below" }
            ));
        }
        line.push('.');
        out.push(line);
    }
    let Some(best) = recommend(cands) else {
        out.push("No candidate was measured, so the prediction cannot be checked.".to_owned());
        return (prediction, out);
    };
    let advised = cands
        .iter()
        .find(|c| c.cap_mb.is_some_and(|x| same_cap(x, r.cap_mb)));
    let why_model = why_model_errs(advice);
    if same_cap(best.cap_mb, r.cap_mb) {
        out.push(match best.runner_up.filter(|_| best.runner_up_within_noise) {
            None => format!(
                "The measurement agrees: {} MiB is the fastest cap measured (median {}).",
                mib(best.cap_mb),
                ns(best.measurement.median_ns)
            ),
            Some((rc, rm)) => format!(
                "The measurement agrees as far as it can tell: {} MiB has the lowest median ({}), but {} MiB ({}) is within run-to-run noise of it.",
                mib(best.cap_mb),
                ns(best.measurement.median_ns),
                mib(rc),
                ns(rm)
            ),
        });
    } else if let Some(am) = advised.and_then(|c| c.measurement) {
        let gap = am.median_ns - best.measurement.median_ns;
        let best_cand = cands
            .iter()
            .find(|c| c.cap_mb.is_some_and(|x| same_cap(x, best.cap_mb)));
        let ranges = (
            best_cand.and_then(TuneCandidate::run_range),
            advised.and_then(TuneCandidate::run_range),
        );
        let runs_overlap = matches!(ranges, (Some(a), Some(b)) if a.1 >= b.0 && b.1 >= a.0);
        if runs_overlap {
            let (a, b) = (ranges.0.unwrap_or_default(), ranges.1.unwrap_or_default());
            out.push(format!(
                "The measurement finds {} MiB fastest (median {}) and advise's {} MiB {} ({}) slower, but their runs' medians overlap ({}–{} against {}–{}): the difference is run-to-run noise, not a reliable sign of model error.",
                mib(best.cap_mb),
                ns(best.measurement.median_ns),
                mib(r.cap_mb),
                ns(gap),
                pct(gap / best.measurement.median_ns),
                ns(a.0),
                ns(a.1),
                ns(b.0),
                ns(b.1)
            ));
        } else if !faster(&best.measurement, &am) {
            out.push(format!(
                "The measurement finds {} MiB fastest (median {}), but advise's {} MiB is only {} ({}) slower, within run-to-run noise (interquartile ranges {} and {}): in practice the two are equally good, and the difference is noise, not model error.",
                mib(best.cap_mb),
                ns(best.measurement.median_ns),
                mib(r.cap_mb),
                ns(gap),
                pct(gap / best.measurement.median_ns),
                ns(best.measurement.iqr_ns()),
                ns(am.iqr_ns())
            ));
        } else {
            let pb = cands
                .iter()
                .find(|c| c.cap_mb.is_some_and(|x| same_cap(x, best.cap_mb)))
                .and_then(|c| c.predicted_step_ns);
            let pa = advised.and_then(|c| c.predicted_step_ns);
            let predicted_gap = match (pa, pb) {
                (Some(pa), Some(pb)) => format!(
                    "advise predicted {} MiB {} than {} MiB ({} against {})",
                    mib(r.cap_mb),
                    if pa <= pb {
                        format!("{} faster", ns(pb - pa))
                    } else {
                        format!("{} slower", ns(pa - pb))
                    },
                    mib(best.cap_mb),
                    ns(pa),
                    ns(pb)
                ),
                _ => "advise had no prediction for one of them".to_owned(),
            };
            out.push(format!(
                "The measurement disagrees beyond noise: {} MiB is fastest (median {}) and advise's {} MiB measured {} ({}) slower, while {predicted_gap}. That is model error, unless the machine's speed changed between these runs. {why_model}",
                mib(best.cap_mb),
                ns(best.measurement.median_ns),
                mib(r.cap_mb),
                ns(gap),
                signed_pct(gap / best.measurement.median_ns),
            ));
        }
    } else {
        out.push(format!(
            "advise's {} MiB was not among the caps measured; of those, {} MiB is fastest (median {}).",
            mib(r.cap_mb),
            mib(best.cap_mb),
            ns(best.measurement.median_ns)
        ));
    }
    // Run-to-run noise at the first run's cap.
    if let Some(c) = cands
        .iter()
        .find(|c| match (c.cap_mb, run_cap_mb) {
            (Some(a), Some(b)) => same_cap(a, b),
            (None, None) => true,
            _ => false,
        })
        .filter(|c| c.ok_runs() > 1)
    {
        let medians: Vec<f64> = c.runs.iter().filter_map(|r| r.median_step_ns).collect();
        let lo = medians.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = medians.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if lo.is_finite() && hi.is_finite() && lo > 0.0 {
            out.push(format!(
                "Run-to-run noise: the {} runs of {} have medians from {} to {} ({} apart); a one-trace prediction cannot be more exact than that.",
                c.ok_runs(),
                c.label(),
                ns(lo),
                ns(hi),
                pct((hi - lo) / lo)
            ));
        }
    }
    (prediction, out)
}

/// advise's predictions from one trace against the measured medians.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdviceAccuracy {
    /// Candidates with both a prediction and a measurement (the traced run's own cap left out:
    /// that is the replay, not a prediction).
    pub caps: usize,
    /// Mean of `|predicted − measured| / measured`.
    pub mean_abs_error: f64,
    /// Largest of them.
    pub max_abs_error: f64,
    /// The measured median of advise's pick against the best measured median, minus 1 (when
    /// the pick was measured).
    pub regret: Option<f64>,
    /// The mean over candidates with several runs of (highest − lowest run median) / median:
    /// what no prediction can beat.
    pub noise_floor: Option<f64>,
}

impl AdviceAccuracy {
    /// The figures for `candidates`, advise's pick being `pick` (its recommended cap when it
    /// is worth changing, else the traced run's).
    pub fn of(
        candidates: &[TuneCandidate],
        traced: Option<f64>,
        pick: Option<f64>,
    ) -> Option<Self> {
        let measured = |c: &TuneCandidate| c.measurement.map(|m| m.median_ns);
        let errors: Vec<f64> = candidates
            .iter()
            .filter(|c| !matches!((c.cap_mb, traced), (Some(a), Some(b)) if same_cap(a, b)))
            .filter(|c| c.cap_mb.is_some() || traced.is_some())
            .filter_map(|c| Some((c.predicted_step_ns?, measured(c)?)))
            .filter(|&(_, m)| m > 0.0)
            .map(|(p, m)| ((p - m) / m).abs())
            .collect();
        if errors.is_empty() {
            return None;
        }
        let best = candidates
            .iter()
            .filter_map(measured)
            .fold(f64::INFINITY, f64::min);
        let regret = pick.and_then(|p| {
            let c = candidates
                .iter()
                .find(|c| c.cap_mb.is_some_and(|x| same_cap(x, p)))?;
            Some(measured(c)? / best - 1.0)
        });
        let spreads: Vec<f64> = candidates
            .iter()
            .filter_map(|c| Some((c.run_range()?, measured(c)?)))
            .map(|((lo, hi), m)| (hi - lo) / m)
            .collect();
        Some(AdviceAccuracy {
            caps: errors.len(),
            mean_abs_error: errors.iter().sum::<f64>() / errors.len() as f64,
            max_abs_error: errors.iter().copied().fold(0.0, f64::max),
            regret,
            noise_floor: (!spreads.is_empty())
                .then(|| spreads.iter().sum::<f64>() / spreads.len() as f64),
        })
    }

    /// One line for the terminal.
    pub fn line(&self) -> String {
        let mut s = format!(
            "advise against the measurement: |predicted − measured| mean {}, max {} over {} caps",
            pct(self.mean_abs_error),
            pct(self.max_abs_error),
            self.caps
        );
        if let Some(r) = self.regret {
            s.push_str(&format!(
                "; its pick measured {} slower than the best",
                pct(r)
            ));
        }
        if let Some(n) = self.noise_floor {
            s.push_str(&format!("; noise floor (spread of repeats) {}", pct(n)));
        }
        s
    }
}

/// Everything `ddp-probe tune` measured and concluded (also `tune.json` and
/// `--json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TuneResult {
    /// The training command.
    pub command: Vec<String>,
    /// Ranks per run.
    pub nproc_per_node: usize,
    /// `--steps` appended to the command, if given.
    pub steps: Option<u64>,
    /// Runs per candidate.
    pub repeats: usize,
    /// Leading steps of each rank left out as warm-up.
    pub warmup_steps: u64,
    /// Sweep or search.
    pub mode: TuneMode,
    /// The series directory.
    pub dir: String,
    /// Every candidate (the job's default first, then by cap).
    pub candidates: Vec<TuneCandidate>,
    /// The `--auto` search path.
    pub search: Vec<SearchStep>,
    /// The recommended cap.
    pub recommendation: Option<TuneRecommendation>,
    /// advise's prediction from the first run.
    pub prediction: Option<AdvicePrediction>,
    /// How measurement and prediction compare, in words.
    pub comparison: Vec<String>,
    /// How measurement and prediction compare, in figures (as `bench/whatif` reports them).
    #[serde(default)]
    pub accuracy: Option<AdviceAccuracy>,
    /// Caveats (failed runs, interruption...).
    pub notes: Vec<String>,
    /// The signal that interrupted the series, if one did.
    pub interrupted: Option<String>,
}

impl TuneResult {
    /// Sorts the candidates (job default first, then by cap) and measures
    /// and recommends from their runs.
    pub fn finish(&mut self) {
        self.candidates.sort_by(|a, b| match (a.cap_mb, b.cap_mb) {
            (None, None) => std::cmp::Ordering::Equal,
            (None, _) => std::cmp::Ordering::Less,
            (_, None) => std::cmp::Ordering::Greater,
            (Some(x), Some(y)) => x.total_cmp(&y),
        });
        for c in &mut self.candidates {
            c.measure();
        }
        self.recommendation = recommend(&self.candidates);
        self.compare_accuracy();
    }

    /// Sets [`TuneResult::accuracy`] from the candidates and advise's prediction.
    pub fn compare_accuracy(&mut self) {
        self.accuracy = self.prediction.as_ref().and_then(|p| {
            let pick = if p.worth_changing {
                p.recommended_cap_mb
            } else {
                p.run_cap_mb
            };
            AdviceAccuracy::of(&self.candidates, p.run_cap_mb, pick)
        });
    }

    /// The result as a terminal table and a few lines (no trailing
    /// newline).
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        let rows: Vec<[String; 6]> = self
            .candidates
            .iter()
            .map(|c| {
                let m = c.measurement;
                [
                    c.label(),
                    format!("{}/{}", c.ok_runs(), c.runs.len()),
                    m.map_or("-".into(), |m| ns(m.median_ns)),
                    m.map_or("-".into(), |m| format!("{}–{}", ns(m.p25_ns), ns(m.p75_ns))),
                    m.map_or("-".into(), |m| format!("{}–{}", ns(m.min_ns), ns(m.max_ns))),
                    c.predicted_step_ns.map_or("-".into(), ns),
                ]
            })
            .collect();
        let head = ["cap", "runs", "median", "p25–p75", "min–max", "advise"];
        let mut w = head.map(|h| h.chars().count());
        for r in &rows {
            for (i, cell) in r.iter().enumerate() {
                w[i] = w[i].max(cell.chars().count());
            }
        }
        let line = |cells: [&str; 6]| {
            let mut s = String::new();
            for (i, c) in cells.iter().enumerate() {
                let pad = w[i] - c.chars().count();
                if i == 0 {
                    s.push_str(c);
                    s.push_str(&" ".repeat(pad));
                } else {
                    s.push_str("  ");
                    s.push_str(&" ".repeat(pad));
                    s.push_str(c);
                }
            }
            s.trim_end().to_owned()
        };
        out.push_str(&line(head));
        for r in &rows {
            out.push('\n');
            let best = self
                .recommendation
                .as_ref()
                .is_some_and(|x| r[0] == format!("{} MiB", mib(x.cap_mb)));
            let cells = [
                r[0].as_str(),
                r[1].as_str(),
                r[2].as_str(),
                r[3].as_str(),
                r[4].as_str(),
                r[5].as_str(),
            ];
            out.push_str(&line(cells));
            if best {
                out.push_str("  *");
            }
        }
        out.push_str(&format!(
            "\n(steady steps of all ranks and repeats: each rank's first {} and the bucket-rebuild step left out; advise = predicted from the first run's trace)",
            plural_steps(self.warmup_steps)
        ));
        match &self.recommendation {
            Some(r) => out.push_str(&format!("\nrecommended: {}", r.text)),
            None => out.push_str("\nno recommendation: no candidate was measured"),
        }
        for p in &self.comparison {
            out.push_str(&format!("\n{p}"));
        }
        if let Some(a) = &self.accuracy {
            out.push_str(&format!("\n{}", a.line()));
        }
        for n in &self.notes {
            out.push_str(&format!("\nnote: {n}"));
        }
        out
    }
}

/// `"step"`, `"2 steps"`.
pub fn plural_steps(n: u64) -> String {
    if n == 1 {
        "step".to_owned()
    } else {
        format!("{n} steps")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(median: f64, iqr: f64) -> Measurement {
        Measurement {
            n: 10,
            median_ns: median,
            p25_ns: median - iqr / 2.0,
            p75_ns: median + iqr / 2.0,
            min_ns: median - iqr,
            max_ns: median + iqr,
        }
    }

    #[test]
    fn measurements_and_noise() {
        let mut v = vec![4.0, 1.0, 3.0, 2.0, f64::NAN];
        let x = Measurement::of(&mut v).unwrap();
        assert_eq!((x.n, x.median_ns, x.min_ns, x.max_ns), (4, 2.5, 1.0, 4.0));
        assert_eq!((x.p25_ns, x.p75_ns), (1.75, 3.25));
        assert!(Measurement::of(&mut Vec::new()).is_none());
        assert!(faster(&m(90.0, 2.0), &m(100.0, 2.0)));
        // 1 % of 99.5 is ~1: a gap of 0.5 is noise.
        assert!(!faster(&m(99.5, 0.1), &m(100.0, 0.1)));
        // A wide spread swallows a 5 % gap.
        assert!(!faster(&m(95.0, 20.0), &m(100.0, 2.0)));
    }

    /// A cost curve with its minimum at 8 MiB.
    fn cost(cap: f64) -> Measurement {
        let d = cap.log2() - 3.0;
        m(100.0 + 10.0 * d * d, 1.0)
    }

    #[test]
    fn auto_search_walks_to_the_minimum_from_either_side() {
        for start in [0.5, 1.0, 8.0, 64.0, 256.0] {
            let mut calls = Vec::new();
            let (path, best) = auto_search::<()>(start, 0.0625, 1024.0, &mut |caps| {
                calls.extend_from_slice(caps);
                Ok(caps.iter().map(|&c| Some(cost(c))).collect())
            })
            .unwrap();
            assert_eq!(best, Some(8.0), "start {start}: {path:?}");
            let mut sorted = calls.clone();
            sorted.sort_by(f64::total_cmp);
            sorted.dedup();
            assert_eq!(sorted.len(), calls.len(), "a cap measured twice: {calls:?}");
            assert_eq!(path.len(), calls.len());
        }
    }

    #[test]
    fn auto_search_respects_bounds_and_failures() {
        let (path, best) = auto_search::<()>(4.0, 4.0, 4.0, &mut |caps| {
            Ok(caps.iter().map(|&c| Some(cost(c))).collect())
        })
        .unwrap();
        assert_eq!((path.len(), best), (1, Some(4.0)));
        let (path, best) =
            auto_search::<()>(4.0, 1.0, 64.0, &mut |caps| Ok(vec![None; caps.len()])).unwrap();
        assert_eq!((path.len(), best), (1, None));
        let err = auto_search::<&str>(4.0, 1.0, 64.0, &mut |_| Err("launch failed"));
        assert_eq!(err.unwrap_err(), "launch failed");
    }

    fn cand(cap: Option<f64>, median: Option<f64>) -> TuneCandidate {
        let mut c = TuneCandidate::new(cap);
        c.measurement = median.map(|v| m(v, 1.0));
        c.runs.push(TuneRun {
            dir: "d".into(),
            repeat: 1,
            status: "ok".into(),
            steady_steps: 10,
            median_step_ns: median,
            failure: None,
            step_times_ns: Vec::new(),
        });
        c
    }

    #[test]
    fn the_lowest_median_is_recommended_against_the_default() {
        let cands = vec![
            cand(None, Some(120.0)),
            cand(Some(1.0), Some(130.0)),
            cand(Some(10.0), Some(100.0)),
            cand(Some(25.0), Some(100.4)),
            cand(Some(50.0), None),
        ];
        let r = recommend(&cands).unwrap();
        assert_eq!(r.cap_mb, 10.0);
        assert_eq!(r.runner_up, Some((25.0, 100.4)));
        assert!(r.runner_up_within_noise);
        assert_eq!(r.reference.as_ref().unwrap().0, "job default");
        assert!(r.beats_reference);
        assert!(r.text.contains("bucket_cap_mb=10"), "{}", r.text);
        assert!(recommend(&[cand(Some(1.0), None)]).is_none());
    }

    fn advice(recommended: f64, predicted: &[(f64, f64)]) -> Advice {
        use crate::analysis::advice::{Candidate, Recommendation};
        let candidate = |cap: f64, p: f64| Candidate {
            cap_mb: cap,
            first_bucket_bytes: (cap * MIB) as u64,
            cap_list_mb: None,
            recorded_layout: false,
            is_current: false,
            buckets: 1,
            largest_bucket_bytes: 1,
            backward_ns: 0.0,
            comm_end_ns: 0.0,
            tail_ns: 0.0,
            exposed_ns: 0.0,
            predicted_step_ns: p,
            delta_ns: 0.0,
        };
        Advice {
            run_id: "r".into(),
            missing: Vec::new(),
            notes: Vec::new(),
            current: None,
            fits: Vec::new(),
            fit_used: None,
            observed: None,
            recorded: None,
            candidates: predicted.iter().map(|&(c, p)| candidate(c, p)).collect(),
            recommendation: Some(Recommendation {
                cap_mb: recommended,
                first_bucket_bytes: (recommended * MIB) as u64,
                cap_list_mb: None,
                is_current: false,
                gain_ns: 5.0,
                gain_frac: 0.05,
                threshold_ns: 1.0,
                worth_changing: true,
                confidence: Confidence::Medium,
                explanation: Vec::new(),
            }),
            interference: None,
            replay: None,
            schedules: Vec::new(),
        }
    }

    /// A candidate with two runs of these medians.
    fn runs(cap: f64, medians: [f64; 2]) -> TuneCandidate {
        let mut c = TuneCandidate::new(Some(cap));
        for (i, m) in medians.into_iter().enumerate() {
            c.runs.push(TuneRun {
                dir: format!("cap-{cap}-r{i}"),
                repeat: i as u32 + 1,
                status: "ok".into(),
                steady_steps: 3,
                median_step_ns: Some(m),
                failure: None,
                step_times_ns: vec![m - 0.5, m, m + 0.5],
            });
        }
        c.measure();
        c
    }

    #[test]
    fn disagreement_is_model_error_only_when_the_runs_do_not_overlap() {
        let a = advice(4.0, &[(2.0, 101.0), (4.0, 99.0)]);
        // advise says 4, the runs clearly say 2.
        let mut cands = vec![runs(2.0, [90.0, 91.0]), runs(4.0, [100.0, 101.0])];
        let (p, text) = compare_with_advice(&a, "cap-2-r1", Some(2.0), &mut cands);
        assert_eq!(p.recommended_cap_mb, Some(4.0));
        assert_eq!(cands[0].predicted_step_ns, Some(101.0));
        let all = text.join("\n");
        assert!(all.contains("disagrees beyond noise"), "{all}");
        assert!(all.contains("model error"), "{all}");
        // What the model rests on, with this advice's figures (no replay, no probe here).
        assert!(
            all.contains("The model runs each candidate's all-reduces through backward")
                && all.contains("overlap (none measured)"),
            "{all}"
        );
        assert!(
            all.contains(
                "advise, choosing among the caps measured here, recommends bucket_cap_mb=4"
            ),
            "{all}"
        );
        // The same medians, but one run of each overlaps the other cap's.
        let mut cands = vec![runs(2.0, [85.0, 99.0]), runs(4.0, [96.0, 110.0])];
        let (_, text) = compare_with_advice(&a, "cap-2-r1", Some(2.0), &mut cands);
        let all = text.join("\n");
        assert!(all.contains("run-to-run noise"), "{all}");
        assert!(!all.contains("disagrees beyond noise"), "{all}");
        // Agreement.
        let b = advice(2.0, &[(2.0, 90.0), (4.0, 99.0)]);
        let mut cands = vec![runs(2.0, [90.0, 91.0]), runs(4.0, [100.0, 101.0])];
        let (_, text) = compare_with_advice(&b, "cap-2-r1", Some(2.0), &mut cands);
        assert!(
            text.iter()
                .any(|t| t.contains("The measurement agrees: 2 MiB")),
            "{text:?}"
        );
    }
}
