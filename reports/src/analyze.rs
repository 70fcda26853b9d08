//! What a report computes from one run: the summary and the bucket advice
//! of `probe::analysis`, every step's breakdown, whether the run failed and,
//! if it did, the diagnosis of `probe_explain`.

use probe::analysis::{
    advise, step_breakdowns, summarize, Advice, AdviceOptions, StepBreakdown, Summary,
    SummaryOptions,
};
use probe_contract::manifest::RunStatus;

use crate::input::RunInput;

/// The analysis of one run.
#[derive(Debug, Clone)]
pub struct RunAnalysis {
    /// The summary; `None` when the traces could not be loaded.
    pub summary: Option<Summary>,
    /// The bucket_cap_mb advice; `None` when the traces could not be loaded.
    pub advice: Option<Advice>,
    /// Every step of every rank (warm-up steps marked).
    pub steps: Vec<StepBreakdown>,
    /// Why the run counts as failed, one reason per entry; empty for a run
    /// that ended normally.
    pub failure: Vec<String>,
    /// The diagnosis of a failed run, or why it could not be made.
    pub diagnosis: Option<Result<probe_explain::Report, String>>,
}

impl RunAnalysis {
    /// Analyzes a run; `warmup_steps` leading steps of each rank are warm-up.
    /// Never panics, whatever the run holds.
    pub fn of(input: &RunInput, warmup_steps: u64) -> RunAnalysis {
        let summary_opts = SummaryOptions {
            warmup_steps,
            ..SummaryOptions::default()
        };
        let (summary, advice, steps) = match &input.run {
            Some(run) => (
                Some(summarize(run, &summary_opts)),
                Some(advise(
                    run,
                    &AdviceOptions {
                        summary: summary_opts.clone(),
                        ..AdviceOptions::default()
                    },
                )),
                step_breakdowns(run, &summary_opts),
            ),
            None => (None, None, Vec::new()),
        };
        let failure = failure_reasons(input);
        let diagnosis = (!failure.is_empty() && !input.dirs.is_empty())
            .then(|| probe_explain::explain(&input.dirs).map_err(|e| e.to_string()));
        RunAnalysis {
            summary,
            advice,
            steps,
            failure,
            diagnosis,
        }
    }

    /// Whether the run failed (see [`RunAnalysis::failure`]).
    pub fn failed(&self) -> bool {
        !self.failure.is_empty()
    }
}

/// Why a run counts as failed: its traces did not load, the launcher did not
/// report success, or a rank's trace has no `end` record or one with a
/// status other than `ok`.
pub fn failure_reasons(input: &RunInput) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(e) = &input.load_error {
        out.push(format!("its traces could not be loaded: {e}"));
    }
    for m in &input.manifests {
        if m.status != RunStatus::Ok {
            let mut s = format!("the launcher reports status {}", m.status);
            if let Some(code) = m.exit_code {
                s.push_str(&format!(" (exit code {code})"));
            }
            if let Some(f) = &m.first_failure {
                s.push_str(&format!("; first failure: {f}"));
            }
            out.push(s);
        }
    }
    if let Some(run) = &input.run {
        let unfinished: Vec<String> = run
            .ranks
            .iter()
            .filter(|r| r.end.is_none())
            .map(|r| r.rank().to_string())
            .collect();
        if !unfinished.is_empty() {
            out.push(format!(
                "no end record in the trace of rank {} (the process did not finish normally)",
                unfinished.join(", ")
            ));
        }
        for r in &run.ranks {
            if let Some(e) = r.end.as_ref().filter(|e| e.status != "ok") {
                let mut s = format!("rank {} ended with status {}", r.rank(), e.status);
                if let Some(m) = &e.message {
                    s.push_str(&format!(": {m}"));
                }
                out.push(s);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::load_runs;
    use probe::synth::{generate_run, SynthConfig};

    #[test]
    fn a_killed_run_is_failed_and_diagnosed() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = SynthConfig::new(2, 5, 2);
        c.end_status = None;
        generate_run(&c, dir.path()).unwrap();
        let runs = load_runs(&[dir.path().to_path_buf()]).unwrap();
        let a = RunAnalysis::of(&runs[0], 1);
        assert!(a.failed());
        assert!(a.failure[0].contains("no end record"), "{:?}", a.failure);
        assert!(a.diagnosis.is_some());
        assert!(a.summary.is_some());
    }

    #[test]
    fn a_clean_run_is_not_failed() {
        let dir = tempfile::tempdir().unwrap();
        generate_run(&SynthConfig::new(2, 5, 2), dir.path()).unwrap();
        let runs = load_runs(&[dir.path().to_path_buf()]).unwrap();
        let a = RunAnalysis::of(&runs[0], 1);
        assert!(!a.failed(), "{:?}", a.failure);
        assert!(a.diagnosis.is_none());
        assert_eq!(a.steps.len(), 10);
    }
}
