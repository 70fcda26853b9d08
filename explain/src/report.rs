//! The result of a diagnosis: [`Report`] and its parts, serialisable for
//! `--json` and rendered as wrapped text by [`Report::render_text`].
//!
//! JSON wire format (`schema_version` 1): one object with the fields of
//! [`Report`]. Findings are ordered with the likely root cause first; every
//! string taken from an input is sanitised (no raw control characters).
//!
//! ```json
//! {"schema_version":1,"inputs":["runs/r1"],"headline":"most likely cause: rank 1 ...",
//!  "run":{"run_dirs":["runs/r1"],"status":"failed","world_size":2,...},
//!  "findings":[{"category":"host_oom_killed","role":"cause","ranks":[1],"observed_by":[],
//!               "title":"...","explanation":"...","evidence":[{"file":"runs/r1/manifest.json",
//!               "line":57,"text":"..."}],"evidence_omitted":0,"fix":"...",
//!               "doc":"docs/diagnoses/host_oom_killed.md"}],
//!  "nccl":[{"text":"NCCL 2.21.5, 2 ranks, NET/Socket over eth0, ...",...}],
//!  "notes":[]}
//! ```

use std::fmt::Write as _;

use probe::wrap::{wrap_lines, Layout};
use serde::{Deserialize, Serialize};

use crate::category::Category;

/// The version of the JSON layout of [`Report`].
/// 2: findings carry `confidence` and, when not sure, `to_confirm`.
pub const SCHEMA_VERSION: u32 = 2;

/// How a finding relates to the failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A direct reason: something went wrong on these ranks themselves.
    Cause,
    /// Something went wrong, but the reason is usually elsewhere (a timeout,
    /// a refused connection).
    Symptom,
    /// A reaction to another rank's failure (a closed connection, an abort).
    Consequence,
}

impl Role {
    /// The role's name as in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Role::Cause => "cause",
            Role::Symptom => "symptom",
            Role::Consequence => "consequence",
        }
    }
}

/// How sure a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// A message names the problem itself (NCCL's "Duplicate GPU detected",
    /// "CUDA out of memory"), or the launcher's evidence proves it.
    High,
    /// Read from what usually goes with the problem: a signal or an exit
    /// code (SIGKILL is most often the OOM killer), a timeout that names the
    /// rank behind, a generic error code.
    Medium,
    /// A guess: only consequences, or nothing recognised.
    Low,
}

impl Confidence {
    /// The name as in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Confidence::High => "high",
            Confidence::Medium => "medium",
            Confidence::Low => "low",
        }
    }
}

/// One line of an input that supports a finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// The file, as given (or inside the given run directory).
    pub file: String,
    /// The 1-based line number; absent when it is not known (the end part of
    /// a huge file, a value read from a trace's in-memory model).
    pub line: Option<u64>,
    /// The line's text, sanitised and cut; for facts from `manifest.json`, a
    /// sentence describing the fact at that line.
    pub text: String,
}

impl Evidence {
    /// `file:line`, or just the file when the line is unknown.
    pub fn location(&self) -> String {
        match self.line {
            Some(n) => format!("{}:{n}", self.file),
            None => self.file.clone(),
        }
    }
}

/// One diagnosed problem.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// What kind of problem it is.
    pub category: Category,
    /// Whether it is a cause, a symptom or a consequence.
    pub role: Role,
    /// The ranks the problem is about (the culprits when known), ascending.
    pub ranks: Vec<usize>,
    /// The ranks whose output reported it, ascending.
    pub observed_by: Vec<usize>,
    /// One line saying what happened.
    pub title: String,
    /// What it means and what the evidence shows, in plain language.
    pub explanation: String,
    /// The supporting lines, most telling first.
    pub evidence: Vec<Evidence>,
    /// Supporting lines left out to keep the report short.
    pub evidence_omitted: usize,
    /// How sure it is.
    pub confidence: Confidence,
    /// When it is not sure: what would decide (a log to read, a setting to
    /// rerun with).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_confirm: Option<String>,
    /// The fix to try.
    pub fix: String,
    /// The category's documentation page, relative to the repository root.
    pub doc: String,
}

/// How one rank ended, from the run's manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankEndFact {
    /// The global rank.
    pub rank: usize,
    /// How it ended, in words ("exited with code 1", "killed by SIGKILL").
    pub how: String,
    /// Seconds from the launch to its end.
    pub after_s: Option<f64>,
    /// Whether the launcher stopped it after another rank failed.
    pub stopped_by_launcher: bool,
}

/// Facts about the run(s) from `manifest.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunFacts {
    /// The run directories read.
    pub run_dirs: Vec<String>,
    /// The launcher's status (`ok`, `failed`, `hang`, ...); several nodes'
    /// statuses are joined with `/`.
    pub status: Option<String>,
    /// Ranks in the run.
    pub world_size: Option<usize>,
    /// The first rank to fail, in words.
    pub first_failure: Option<String>,
    /// How each rank ended, by rank.
    pub ranks: Vec<RankEndFact>,
}

/// What the NCCL logs say about one communicator.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommSummary {
    /// NCCL's communicator id (`commId`), when logged.
    pub comm_id: Option<String>,
    /// Ranks in the communicator.
    pub nranks: Option<usize>,
    /// Ranks whose set-up lines were seen.
    pub ranks: Vec<usize>,
    /// Nodes spanned, when logged.
    pub nnodes: Option<usize>,
    /// NCCL version(s), e.g. `2.21.5+cuda12.4`.
    pub versions: Vec<String>,
    /// The network plugin in use (`Socket`, `IB`, ...).
    pub network: Option<String>,
    /// Interfaces (sockets) or HCA ports (IB) of the network plugin.
    pub interfaces: Vec<String>,
    /// Number of channels.
    pub channels: Option<usize>,
    /// Transports of the channels (`P2P`, `SHM`, `NET`, ...).
    pub transports: Vec<String>,
    /// Whether every seen rank logged `Init COMPLETE`.
    pub init_complete: bool,
    /// The one-line summary.
    pub text: String,
}

/// The diagnosis of a set of inputs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The inputs as given.
    pub inputs: Vec<String>,
    /// One line: the most likely cause ("possible cause" or "why is not in this log" when the
    /// first finding's confidence is low), or that nothing was found.
    pub headline: String,
    /// Facts from the run manifests, when a run directory was given.
    pub run: Option<RunFacts>,
    /// The findings, likely root cause first.
    pub findings: Vec<Finding>,
    /// One summary per NCCL communicator seen in the logs.
    pub nccl: Vec<CommSummary>,
    /// Things the reader worked around (unreadable files, huge files read in
    /// part, traces that did not load).
    pub notes: Vec<String>,
    /// The earlier attempts of a run that `ddp-probe run --max-restarts`
    /// restarted (kept in `attempts/<n>/`), each explained on its own; the
    /// report above is the last attempt's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<AttemptFact>,
    /// Where each rank was when the run was stopped, from the Python stacks the PyTorch
    /// module wrote at the launcher's request (`logs/python-stack-rank-<R>.txt`), by rank.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stacks: Vec<RankStack>,
}

/// One rank's place when the run was stopped, from its Python stack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankStack {
    /// The global rank.
    pub rank: usize,
    /// "in main at train.py:84 (`time.sleep(60)`)", with the library call it was in.
    pub place: String,
    /// The stack file.
    pub file: String,
    /// The line of the frame named.
    pub line: u64,
}

/// One earlier attempt of a restarted run, explained on its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptFact {
    /// The attempt, counted from 1.
    pub attempt: u32,
    /// Its directory (`RUN/attempts/<n>`).
    pub dir: String,
    /// The launcher's status for it (`failed`, ...), when its manifest says.
    pub status: Option<String>,
    /// The headline of `explain` on its directory.
    pub headline: String,
    /// The category of its first finding, when it has one.
    pub category: Option<Category>,
}

impl Report {
    /// The report as text wrapped to `width` columns (at least 40).
    pub fn render_text(&self, width: usize) -> String {
        let width = width.max(40);
        let mut out = String::new();
        push_wrapped(&mut out, &self.headline, "", "", width);
        if let Some(run) = &self.run {
            let mut facts = Vec::new();
            if let Some(s) = &run.status {
                facts.push(format!("status {s}"));
            }
            if let Some(w) = run.world_size {
                facts.push(if w == 1 {
                    "1 rank".to_owned()
                } else {
                    format!("{w} ranks")
                });
            }
            if let Some(f) = &run.first_failure {
                facts.push(format!("first failure: {f}"));
            }
            if !facts.is_empty() {
                push_wrapped(&mut out, &facts.join(", "), "run: ", "     ", width);
            }
        }
        if !self.attempts.is_empty() {
            let _ = writeln!(out, "earlier attempts (the workers were restarted):");
            for a in &self.attempts {
                let status = a.status.as_deref().unwrap_or("status unknown");
                push_wrapped(
                    &mut out,
                    &format!("attempt {} ({status}): {}", a.attempt, a.headline),
                    "  ",
                    "    ",
                    width,
                );
                push_wrapped(
                    &mut out,
                    &format!("details: ddp-probe explain {}", a.dir),
                    "    ",
                    "    ",
                    width,
                );
            }
        }
        if !self.findings.is_empty() {
            out.push('\n');
        }
        for (i, f) in self.findings.iter().enumerate() {
            let role = match f.role {
                Role::Cause => String::new(),
                r => format!(" ({})", r.name()),
            };
            let head = format!("{}. [{}]{} {}", i + 1, f.category.id(), role, f.title);
            let indent = " ".repeat(format!("{}. ", i + 1).len());
            push_wrapped(&mut out, &head, "", &indent, width);
            if !f.ranks.is_empty() || !f.observed_by.is_empty() {
                let mut who = Vec::new();
                if !f.ranks.is_empty() {
                    who.push(ranks_phrase(&f.ranks));
                }
                if !f.observed_by.is_empty() && f.observed_by != f.ranks {
                    who.push(format!("reported by {}", ranks_phrase(&f.observed_by)));
                }
                push_field(&mut out, &indent, "who", &who.join("; "), width);
            }
            push_field(&mut out, &indent, "why", &f.explanation, width);
            let sure = match &f.to_confirm {
                Some(c) => format!("{}; to confirm: {c}", f.confidence.name()),
                None => f.confidence.name().to_owned(),
            };
            push_field(&mut out, &indent, "confidence", &sure, width);
            if !f.evidence.is_empty() {
                let _ = writeln!(out, "{indent}evidence:");
                let sub = format!("{indent}  ");
                let cont = format!("{indent}    ");
                for e in &f.evidence {
                    push_wrapped(&mut out, &e.location(), &sub, &sub, width);
                    push_wrapped(&mut out, &e.text, &cont, &cont, width);
                }
                if f.evidence_omitted > 0 {
                    let _ = writeln!(out, "{sub}(+{} more)", f.evidence_omitted);
                }
            }
            push_field(&mut out, &indent, "fix", &f.fix, width);
            push_field(&mut out, &indent, "docs", &f.doc, width);
            out.push('\n');
        }
        if !self.stacks.is_empty() {
            if self.findings.is_empty() {
                out.push('\n');
            }
            let _ = writeln!(out, "where each rank was when stopped (Python stacks):");
            for st in &self.stacks {
                push_wrapped(
                    &mut out,
                    &format!("rank {}: {} ({}:{})", st.rank, st.place, st.file, st.line),
                    "  ",
                    "    ",
                    width,
                );
            }
            out.push('\n');
        }
        if !self.nccl.is_empty() {
            if self.findings.is_empty() && self.stacks.is_empty() {
                out.push('\n');
            }
            let _ = writeln!(out, "NCCL setup:");
            for c in &self.nccl {
                push_wrapped(&mut out, &c.text, "  ", "    ", width);
            }
        }
        if !self.notes.is_empty() {
            out.push('\n');
            let _ = writeln!(out, "notes:");
            for n in &self.notes {
                push_wrapped(&mut out, n, "  - ", "    ", width);
            }
        }
        while out.ends_with("\n\n") {
            out.pop();
        }
        out
    }
}

/// "rank 1" or "ranks 0, 1".
pub(crate) fn ranks_phrase(ranks: &[usize]) -> String {
    let list = ranks
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    if ranks.len() == 1 {
        format!("rank {list}")
    } else {
        format!("ranks {list}")
    }
}

fn push_field(out: &mut String, indent: &str, name: &str, text: &str, width: usize) {
    let first = format!("{indent}{name}: ");
    let rest = " ".repeat(first.chars().count());
    push_wrapped(out, text, &first, &rest, width);
}

/// Appends `text` wrapped at `width` columns: the first line starts with
/// `first`, the others with `rest`. Words longer than a line are split.
fn push_wrapped(out: &mut String, text: &str, first: &str, rest: &str, width: usize) {
    let layout = Layout {
        first,
        rest,
        cut_long_words: true,
    };
    let lines = wrap_lines(text, width, &layout);
    if lines.is_empty() {
        out.push_str(first.trim_end());
        out.push('\n');
    }
    for line in lines {
        out.push_str(&line);
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_at_width_and_splits_long_words() {
        let mut out = String::new();
        push_wrapped(
            &mut out,
            "alpha beta gamma delta epsilon zeta",
            "> ",
            "  ",
            14,
        );
        for l in out.lines() {
            assert!(l.chars().count() <= 14, "{l:?}");
        }
        assert_eq!(out, "> alpha beta\n  gamma delta\n  epsilon zeta\n");
        let mut out = String::new();
        push_wrapped(&mut out, &"x".repeat(30), "", "", 10);
        assert_eq!(out.lines().count(), 3);
        assert!(out.lines().all(|l| l.len() == 10));
    }

    #[test]
    fn renders_every_part_within_width() {
        let report = Report {
            schema_version: SCHEMA_VERSION,
            inputs: vec!["run".into()],
            headline: "most likely cause: rank 1 ran out of GPU memory".into(),
            run: Some(RunFacts {
                status: Some("failed".into()),
                world_size: Some(2),
                first_failure: Some("rank 1 exited with code 1 after 3.0 s".into()),
                ..RunFacts::default()
            }),
            findings: vec![Finding {
                category: Category::CudaOom,
                role: Role::Cause,
                ranks: vec![1],
                observed_by: vec![1],
                title: "rank 1 ran out of GPU memory".into(),
                explanation: "A rank asked for more memory than was free. ".repeat(4),
                evidence: vec![Evidence {
                    file: "logs/rank-1.stderr".into(),
                    line: Some(12),
                    text: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
                        .into(),
                }],
                evidence_omitted: 2,
                confidence: Confidence::High,
                to_confirm: None,
                fix: "Lower the batch size.".into(),
                doc: Category::CudaOom.doc_path(),
            }],
            nccl: vec![CommSummary {
                text: "NCCL 2.21.5, 2 ranks, NET/Socket over eth0".into(),
                ..CommSummary::default()
            }],
            notes: vec!["a note".into()],
            attempts: vec![AttemptFact {
                attempt: 1,
                dir: "run/attempts/0".into(),
                status: Some("failed".into()),
                headline: "most likely cause: rank 1 crashed with a Python exception".into(),
                category: Some(Category::RankCrashed),
            }],
            stacks: vec![RankStack {
                rank: 1,
                place: "in main at train.py:84 (`time.sleep(60)`)".into(),
                file: "run/logs/python-stack-rank-1.txt".into(),
                line: 6,
            }],
        };
        let text = report.render_text(60);
        assert!(
            text.contains(
                "earlier attempts (the workers were restarted):\n  attempt 1 (failed): most"
            ),
            "{text}"
        );
        assert!(
            text.contains("details: ddp-probe explain run/attempts/0"),
            "{text}"
        );
        assert!(
            text.contains("where each rank was when stopped (Python stacks):\n  rank 1: in main"),
            "{text}"
        );
        for l in text.lines() {
            assert!(l.chars().count() <= 60, "{l:?}");
        }
        assert!(
            text.contains("1. [cuda_oom] rank 1 ran out of GPU memory"),
            "{text}"
        );
        assert!(
            text.contains("     logs/rank-1.stderr:12\n       torch.OutOfMemoryError"),
            "{text}"
        );
        assert!(text.contains("who: rank 1\n"), "{text}");
        assert!(text.contains("(+2 more)"));
        assert!(text.contains("NCCL setup:"));
        assert!(text.contains("docs/diagnoses/cuda_oom.md"));
    }
}
