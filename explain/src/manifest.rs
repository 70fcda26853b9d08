//! Reading a run directory's `manifest.json` (written by `ddp-probe run`)
//! into the contract's types ([`probe_contract::manifest`], the ones the
//! launcher writes; unknown fields are ignored, so a newer launcher's
//! manifest still reads). A manifest that does not parse is reported and the
//! logs are read without it.
//!
//! What it contributes: the log files of each rank, how each rank ended
//! (exit code or signal, whether the launcher stopped it), the first failure,
//! the hang report, and the world size.
//!
//! A rank killed by SIGKILL that the launcher did not send is judged by the
//! evidence the launcher recorded at its death (`kill_evidence`, absent in
//! manifests of earlier versions): an `oom_kill` counter that rose or a kernel
//! line naming its pid proves the out-of-memory killer (`host_oom_killed`);
//! readable counters that did not move, with no such line, prove that the
//! signal came from outside the process (`rank_crashed`); with neither, the
//! OOM killer stays the likely cause, said to be unconfirmed.

use std::fs;
use std::path::{Path, PathBuf};

use probe_contract::hang::{different_calls, HangReport, SharedWait};
use probe_contract::manifest::{CounterScope, KillEvidence, Manifest, OomKillCounter, Termination};

use crate::category::Category;
use crate::report::{Evidence, RankEndFact, Role};
use crate::rules;
use crate::sanitize::{display_path, sanitize};
use crate::signal::{Attach, Signal};

/// The rule name of a SIGKILL proven to come from the out-of-memory killer.
pub(crate) const RULE_OOM_CONFIRMED: &str = "manifest_oom_confirmed";
/// The rule name of a SIGKILL proven not to come from the out-of-memory killer.
pub(crate) const RULE_KILLED_FROM_OUTSIDE: &str = "manifest_killed_from_outside";

/// The sentence about a SIGKILL'd rank for the finding's explanation: the
/// verdict, what shows it, and the last memory sample.
fn kill_detail(rank: usize, verdict: &KillVerdict, end: &str, ev: Option<&KillEvidence>) -> String {
    let mut out = match verdict {
        KillVerdict::OomKiller(why) => {
            format!("{end}; the out-of-memory killer killed it ({why})")
        }
        KillVerdict::FromOutside(why) => format!(
            "rank {rank} was killed by SIGKILL from outside the process (kill -9, a scheduler's \
             preemption or a timeout); the out-of-memory killer did not act ({why})"
        ),
        KillVerdict::Unconfirmed(why) => format!(
            "{end}; most likely the out-of-memory killer, but this could not be confirmed \
             ({why}): check with `dmesg | grep -i oom` on the node"
        ),
    };
    if let Some(m) = ev.and_then(|e| e.last_memory.as_ref()) {
        out.push_str(&format!(
            "; its last resident set was {}",
            human_kib(m.rss_kib)
        ));
        if let Some(avail) = m.mem_available_kib {
            out.push_str(&format!(" with {} available on the host", human_kib(avail)));
        }
        out.push_str(&format!(" ({:.1} s after the launch)", m.after_s));
    }
    out
}

pub(crate) use probe_contract::run_dir::MANIFEST_FILE;

/// Largest manifest read (a real one is a few kB per rank).
const MAX_MANIFEST_BYTES: u64 = 64 * 1024 * 1024;

/// "exited with code 1", "killed by SIGKILL", with the launcher's strings
/// made safe for a terminal.
pub(crate) fn describe(t: &Termination) -> String {
    match t {
        Termination::Exited { code } => format!("exited with code {code}"),
        Termination::Signaled { signal, .. } => format!("killed by {}", sanitize(signal, 32)),
        Termination::Unknown { reason } => {
            format!("ended in an unknown way ({})", sanitize(reason, 80))
        }
    }
}

fn is_signal(t: &Termination, name: &str, num: i32) -> bool {
    matches!(t, Termination::Signaled { signal, number, .. } if signal == name || *number == num)
}

/// The file's name for a sentence: `memory.events`, `/proc/vmstat`.
fn counter_name(c: &OomKillCounter) -> String {
    let name = if c.file.starts_with("/proc/") {
        c.file.as_str()
    } else {
        c.file.rsplit('/').next().unwrap_or(&c.file)
    };
    sanitize(name, 60)
}

/// Who sent a SIGKILL, as far as the evidence proves.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum KillVerdict {
    /// The out-of-memory killer: what shows it.
    OomKiller(String),
    /// Not the out-of-memory killer: the counters that did not move.
    FromOutside(String),
    /// Nothing readable either way: why.
    Unconfirmed(String),
}

/// What the evidence proves about the sender of the SIGKILL.
pub(crate) fn kill_verdict(evidence: Option<&KillEvidence>) -> KillVerdict {
    let Some(ev) = evidence else {
        return KillVerdict::Unconfirmed(
            "the manifest holds no evidence about the sender (an earlier ddp-probe wrote it)"
                .to_owned(),
        );
    };
    if let Some(line) = ev.kernel_log_lines.first() {
        return KillVerdict::OomKiller(format!(
            "the kernel log names its pid: \"{}\"",
            sanitize(line, 160)
        ));
    }
    // The kernel raises the counter of the victim's own cgroup on every
    // OOM kill, so the narrowest readable level decides: the rank's own
    // cgroup, else its parents, else the host.
    for level in [
        CounterScope::Cgroup,
        CounterScope::ParentCgroup,
        CounterScope::Host,
    ] {
        let counters: Vec<&OomKillCounter> = ev
            .oom_kill_counters
            .iter()
            .filter(|c| c.scope == level && c.at_death.is_some())
            .collect();
        if counters.is_empty() {
            continue;
        }
        let rose: Vec<String> = counters
            .iter()
            .filter_map(|c| match (c.at_start, c.at_death) {
                (a, Some(d)) if d > a => Some(format!(
                    "oom_kill rose from {a} to {d} in {}",
                    sanitize(&c.file, 120)
                )),
                _ => None,
            })
            .take(2)
            .collect();
        if !rose.is_empty() {
            return KillVerdict::OomKiller(rose.join(", "));
        }
        let mut unchanged: Vec<String> = Vec::new();
        for c in counters {
            let name = counter_name(c);
            if !unchanged.contains(&name) {
                unchanged.push(name);
            }
        }
        return KillVerdict::FromOutside(format!("{} oom_kill unchanged", unchanged.join(", ")));
    }
    let log = if ev.kernel_log_read {
        "the kernel log names no OOM kill"
    } else {
        "the kernel log could not be read"
    };
    KillVerdict::Unconfirmed(format!("no oom_kill counter could be read and {log}"))
}

/// `1.2 GiB`, `340 MiB` from KiB.
fn human_kib(kib: u64) -> String {
    let mib = kib as f64 / 1024.0;
    if mib >= 1024.0 {
        format!("{:.1} GiB", mib / 1024.0)
    } else {
        format!("{mib:.0} MiB")
    }
}

/// A manifest with where it came from.
#[derive(Debug, Clone)]
pub(crate) struct LoadedManifest {
    /// The run directory.
    pub dir: PathBuf,
    /// The run directory for display.
    pub dir_display: String,
    /// The parsed manifest.
    pub manifest: Manifest,
    /// Its text, to find line numbers for evidence.
    text: String,
}

impl LoadedManifest {
    /// Reads `dir/manifest.json`.
    pub fn load(dir: &Path) -> Result<LoadedManifest, String> {
        let path = dir.join(MANIFEST_FILE);
        let meta =
            fs::metadata(&path).map_err(|e| format!("cannot read {}: {e}", display_path(&path)))?;
        if meta.len() > MAX_MANIFEST_BYTES {
            return Err(format!(
                "{} is {} bytes, too large for a manifest; ignored it",
                display_path(&path),
                meta.len()
            ));
        }
        let bytes =
            fs::read(&path).map_err(|e| format!("cannot read {}: {e}", display_path(&path)))?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let manifest: Manifest = serde_json::from_str(&text).map_err(|e| {
            format!(
                "{} is not a readable manifest ({}); read the logs without it",
                display_path(&path),
                sanitize(&e.to_string(), 200)
            )
        })?;
        Ok(LoadedManifest {
            dir: dir.to_path_buf(),
            dir_display: display_path(dir),
            manifest,
            text,
        })
    }

    /// The manifest's path for display.
    pub fn file(&self) -> String {
        display_path(&self.dir.join(MANIFEST_FILE))
    }

    /// A path from the manifest: relative ones are inside the run directory.
    pub fn resolve(&self, p: &str) -> PathBuf {
        let path = Path::new(p);
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.dir.join(path)
        }
    }

    /// The logs directory.
    pub fn logs_dir(&self) -> PathBuf {
        self.resolve(&self.manifest.logs_dir)
    }

    /// The traces directory.
    pub fn traces_dir(&self) -> PathBuf {
        self.resolve(&self.manifest.traces_dir)
    }

    /// Every rank's log files with the rank they belong to.
    pub fn rank_files(&self) -> Vec<(PathBuf, usize)> {
        let mut out = Vec::new();
        for r in &self.manifest.ranks {
            for p in [&r.stderr, &r.stdout, &r.nccl_log, &r.error_file] {
                if !p.is_empty() {
                    out.push((self.resolve(p), r.rank));
                }
            }
        }
        out
    }

    /// 1-based number of the first line containing `needle` at or after
    /// 0-based line `from`.
    fn line_of(&self, needle: &str, from: usize) -> Option<usize> {
        self.text
            .lines()
            .enumerate()
            .skip(from)
            .find(|(_, l)| l.contains(needle))
            .map(|(i, _)| i + 1)
    }

    /// For rank `r`, which failed with an error exit of its own after a process it started
    /// (a DataLoader worker) was killed by SIGKILL: who sent that signal, as far as the
    /// evidence the launcher read at the rank's exit proves (the rank's cgroup counts its
    /// workers' OOM kills too; the kernel log is searched for the rank's pid only, so the
    /// counters decide), with the manifest line that shows it. None when the manifest has no
    /// such exit or its evidence decides nothing.
    pub(crate) fn child_kill_verdict(&self, r: usize) -> Option<(KillVerdict, Evidence)> {
        let rank = self.manifest.ranks.iter().find(|x| x.rank == r)?;
        let end = rank.end.as_ref()?;
        let error_exit = matches!(end.termination, Termination::Exited { code } if code != 0);
        if !error_exit || end.stopped_by_launcher {
            return None;
        }
        let verdict = kill_verdict(Some(end.kill_evidence.as_ref()?));
        let said = match &verdict {
            KillVerdict::OomKiller(why) => format!("the out-of-memory killer acted: {why}"),
            KillVerdict::FromOutside(why) => format!("the out-of-memory killer did not act: {why}"),
            KillVerdict::Unconfirmed(_) => return None,
        };
        let line = self.rank_field_line(r, "\"kill_evidence\"");
        let ev = self.evidence(line, format!("while rank {r} ran, {said}"));
        Some((verdict, ev))
    }

    fn evidence(&self, line: Option<usize>, text: String) -> Evidence {
        Evidence {
            file: self.file(),
            line: line.map(|l| l as u64),
            text: sanitize(&text, 300),
        }
    }

    /// The line of rank `r`'s end record (its `"how"`), found inside the
    /// rank's object whatever the order of its fields; the `"rank"` line
    /// when the end is not found.
    fn rank_end_line(&self, r: usize) -> Option<usize> {
        self.rank_field_line(r, "\"how\"")
            .or_else(|| self.rank_line(r))
    }

    /// The `"rank": r` line of rank `r`'s object.
    fn rank_line(&self, r: usize) -> Option<usize> {
        let ranks = self.line_of("\"ranks\"", 0)?;
        self.line_of(&format!("\"rank\": {r},"), ranks - 1)
    }

    /// The first line inside rank `r`'s object that contains `needle`,
    /// whatever the order of its fields.
    fn rank_field_line(&self, r: usize, needle: &str) -> Option<usize> {
        let rank = self.rank_line(r)?;
        let lines: Vec<&str> = self.text.lines().collect();
        let at = rank - 1;
        let indent = |l: &str| l.len() - l.trim_start().len();
        let field = indent(lines[at]);
        let start = (0..at)
            .rev()
            .find(|&i| lines[i].trim_end().ends_with('{') && indent(lines[i]) < field)
            .unwrap_or(at);
        let end = (at..lines.len())
            .find(|&i| lines[i].trim_start().starts_with('}') && indent(lines[i]) < field)
            .unwrap_or(lines.len());
        (start..end)
            .find(|&i| lines[i].contains(needle))
            .map(|i| i + 1)
    }

    /// Evidence pointing at the run's status, when it has one.
    pub fn status_evidence(&self) -> Option<Evidence> {
        let status = self.manifest.status;
        Some(self.evidence(
            self.line_of("\"status\"", 0),
            format!("the run's status is {status}"),
        ))
    }

    /// Evidence pointing at rank `r`'s end record.
    pub fn rank_end_evidence(&self, r: usize, text: String) -> Evidence {
        self.evidence(self.rank_end_line(r), text)
    }

    /// How each rank ended.
    pub fn rank_facts(&self) -> Vec<RankEndFact> {
        self.manifest
            .ranks
            .iter()
            .filter_map(|r| {
                let end = r.end.as_ref()?;
                Some(RankEndFact {
                    rank: r.rank,
                    how: describe(&end.termination),
                    after_s: Some(end.after_s),
                    stopped_by_launcher: end.stopped_by_launcher,
                })
            })
            .collect()
    }

    /// The signals the manifest gives: how ranks ended, the hang report, a
    /// world size that differs from a rank's `WORLD_SIZE`, a launch error.
    pub fn signals(&self, order: &mut u64) -> Vec<Signal> {
        let mut out = Vec::new();
        let m = &self.manifest;
        let first = m.first_failure.as_ref().map(|f| f.rank);
        for r in &m.ranks {
            let Some(end) = &r.end else {
                continue;
            };
            if end.stopped_by_launcher {
                continue;
            }
            let t = &end.termination;
            let mut verdict = None;
            let (category, role, attach) = if let Termination::Exited { code } = t {
                if *code == 0 {
                    continue;
                }
                (Category::RankCrashed, Role::Cause, Attach::AnyFinding)
            } else if is_signal(t, "SIGKILL", 9) {
                let v = kill_verdict(end.kill_evidence.as_ref());
                let category = match v {
                    KillVerdict::FromOutside(_) => Category::RankCrashed,
                    _ => Category::HostOomKilled,
                };
                verdict = Some(v);
                (category, Role::Cause, Attach::CauseOnly)
            } else if is_signal(t, "SIGBUS", 7) {
                // Touching shared memory /dev/shm cannot back (containers' 64 MB default).
                (Category::ShmTooSmall, Role::Cause, Attach::Standalone)
            } else if is_signal(t, "SIGTERM", 15)
                || is_signal(t, "SIGINT", 2)
                || is_signal(t, "SIGHUP", 1)
            {
                (Category::RankCrashed, Role::Consequence, Attach::AnyFinding)
            } else if matches!(t, Termination::Signaled { .. }) {
                (Category::RankCrashed, Role::Cause, Attach::AnyFinding)
            } else {
                continue;
            };
            let rule = match &verdict {
                Some(KillVerdict::OomKiller(_)) => RULE_OOM_CONFIRMED,
                Some(KillVerdict::FromOutside(_)) => RULE_KILLED_FROM_OUTSIDE,
                _ => "manifest_rank_end",
            };
            let mut s = Signal::new(rule, category, role, attach);
            s.subjects = vec![r.rank];
            s.observer = Some(r.rank);
            let when = format!(" after {:.1} s", end.after_s);
            let first_note = if first == Some(r.rank) {
                " (first failure)"
            } else {
                ""
            };
            let text = format!("rank {} {}{when}{first_note}", r.rank, describe(t));
            s.detail = Some(match &verdict {
                None => text.clone(),
                Some(v) => kill_detail(r.rank, v, &text, end.kill_evidence.as_ref()),
            });
            s.evidence
                .push(self.evidence(self.rank_end_line(r.rank), text));
            if let Some(v) = &verdict {
                let line = self.rank_field_line(r.rank, "\"kill_evidence\"");
                let said = match v {
                    KillVerdict::OomKiller(why) => format!("the out-of-memory killer acted: {why}"),
                    KillVerdict::FromOutside(why) => {
                        format!("the out-of-memory killer did not act: {why}")
                    }
                    KillVerdict::Unconfirmed(why) => format!("not confirmed: {why}"),
                };
                if line.is_some() {
                    s.evidence
                        .push(self.evidence(line, format!("rank {}: {said}", r.rank)));
                }
            }
            *order += 1;
            s.order = *order;
            out.push(s);
        }
        if let Some(h) = &m.hang {
            out.push(self.hang_signal(h, order));
        }
        if let Some(sig) = &m.interrupted_by {
            // The launcher itself was told to stop: what the ranks did after that
            // (their SIGTERM ends, timeouts) is a consequence.
            let mut s = Signal::new(
                "manifest_interrupted",
                Category::LauncherInterrupted,
                Role::Cause,
                Attach::Standalone,
            );
            let text = format!(
                "the launcher got {} and stopped the ranks",
                sanitize(sig, 32)
            );
            s.detail = Some(text.clone());
            s.evidence
                .push(self.evidence(self.line_of("\"interrupted_by\"", 0), text));
            *order += 1;
            s.order = *order;
            out.push(s);
        }
        {
            let w = m.world_size;
            for r in &m.ranks {
                let Some(v) = r.env.get("WORLD_SIZE") else {
                    continue;
                };
                if v.trim().parse::<usize>().ok() == Some(w) {
                    continue;
                }
                let mut s = Signal::new(
                    "manifest_world_size",
                    Category::WorldSizeMismatch,
                    Role::Cause,
                    Attach::Standalone,
                );
                s.subjects = vec![r.rank];
                s.observer = Some(r.rank);
                let text = format!(
                    "rank {} ran with WORLD_SIZE={} but the run has {w} ranks",
                    r.rank,
                    sanitize(v, 40)
                );
                s.detail = Some(text.clone());
                let line = self
                    .line_of(&format!("\"rank\": {},", r.rank), 0)
                    .and_then(|l| self.line_of("\"WORLD_SIZE\"", l - 1));
                s.evidence.push(self.evidence(line, text));
                *order += 1;
                s.order = *order;
                out.push(s);
            }
        }
        if let Some(e) = &m.launch_error {
            let line = self.line_of("\"launch_error\"", 0);
            let text = format!("the launch failed: {e}");
            let mut s = match rules::classify(e) {
                Some((rule, ex)) => {
                    let mut s =
                        Signal::new(rule.name, rule.category, rule.role, Attach::Standalone);
                    s.subjects = ex.subjects;
                    s.detail = ex.detail;
                    s
                }
                None => {
                    let mut s = Signal::new(
                        "launch_error",
                        Category::Unknown,
                        Role::Cause,
                        Attach::Standalone,
                    );
                    s.detail = Some(sanitize(&text, 200));
                    s
                }
            };
            s.evidence.push(self.evidence(line, text));
            *order += 1;
            s.order = *order;
            out.push(s);
        }
        out
    }

    fn hang_signal(&self, h: &HangReport, order: &mut u64) -> Signal {
        let mut s = Signal::new(
            "manifest_hang",
            Category::CollectiveTimeout,
            Role::Symptom,
            Attach::Standalone,
        );
        let timeout = format!(" for {:.0} s", h.timeout_s);
        let mut named_each = false;
        let mut text =
            format!("the launcher's hang watchdog stopped the run: no progress{timeout}");
        let waiting: Vec<(usize, &probe_contract::hang::CollectiveRef)> = h
            .ranks
            .iter()
            .filter_map(|r| {
                r.trace_tail
                    .as_ref()
                    .and_then(|t| t.waiting_in.as_ref())
                    .map(|c| (r.rank, c))
            })
            .collect();
        if !h.behind.is_empty() {
            s.subjects = h.behind.clone();
            let names: Vec<String> = h.behind.iter().map(usize::to_string).collect();
            text.push_str(&format!("; behind: rank {}", names.join(", ")));
        } else if !waiting.is_empty() {
            s.subjects = waiting.iter().map(|(r, _)| *r).collect();
            match h.shared_wait() {
                Some(SharedWait::Same(_)) => {
                    s.rule = "manifest_hang_same_collective";
                    text.push_str("; every rank waits in the same collective");
                }
                Some(SharedWait::Different(waits)) => {
                    named_each = true;
                    text.push_str(&format!(
                        "; the ranks wait at seq {} in different collectives ({})",
                        waits[0].1.seq,
                        sanitize(&different_calls(&waits), 200)
                    ));
                }
                None => {}
            }
        }
        if let Some((r, c)) = waiting.first().filter(|_| !named_each) {
            text.push_str(&format!(
                "; rank {r} waits in {} seq {}",
                sanitize(c.op.as_deref().unwrap_or("a collective"), 40),
                c.seq
            ));
        }
        s.detail = Some(text.clone());
        s.evidence
            .push(self.evidence(self.line_of("\"hang\"", 0), text));
        *order += 1;
        s.order = *order;
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = r#"{
  "format": 1,
  "status": "failed",
  "world_size": 2,
  "extra_field_from_a_newer_launcher": {"x": 1},
  "ranks": [
    {
      "rank": 0,
      "stdout": "logs/rank-0.stdout",
      "stderr": "logs/rank-0.stderr",
      "env": {"WORLD_SIZE": "2"},
      "end": {"how": "signaled", "signal": "SIGTERM", "number": 15, "core_dumped": false, "at": "t", "after_s": 5.0, "stopped_by_launcher": true}
    },
    {
      "rank": 1,
      "stderr": "logs/rank-1.stderr",
      "env": {"WORLD_SIZE": "4"},
      "end": {"how": "signaled", "signal": "SIGKILL", "number": 9, "core_dumped": false, "at": "t", "after_s": 4.5, "stopped_by_launcher": false}
    }
  ],
  "first_failure": {"rank": 1, "local_rank": 1, "how": "signaled", "signal": "SIGKILL", "number": 9, "after_s": 4.5}
}"#;

    #[test]
    fn reads_ends_and_world_size_with_line_numbers() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(MANIFEST_FILE), MANIFEST).unwrap();
        let m = LoadedManifest::load(dir.path()).unwrap();
        assert_eq!(m.rank_files().len(), 3);
        let mut order = 0;
        let sigs = m.signals(&mut order);
        assert_eq!(sigs.len(), 2, "{sigs:?}");
        assert_eq!(sigs[0].category, Category::HostOomKilled);
        assert_eq!(sigs[0].subjects, vec![1]);
        assert_eq!(sigs[0].evidence[0].line, Some(18));
        assert!(sigs[0].evidence[0].text.contains("(first failure)"));
        assert_eq!(sigs[1].category, Category::WorldSizeMismatch);
        assert_eq!(sigs[1].evidence[0].line, Some(17));
        assert_eq!(m.rank_facts().len(), 2);
    }

    #[test]
    fn finds_the_end_of_a_rank_whatever_the_field_order() {
        let text = "{\n  \"ranks\": [\n    {\n      \"end\": {\n        \"how\": \"exited\",\n        \"code\": 2,\n        \"after_s\": 1.0\n      },\n      \"rank\": 0,\n      \"stderr\": \"e\"\n    },\n    {\n      \"rank\": 1,\n      \"end\": null\n    }\n  ],\n  \"format\": 1, \"status\": \"failed\", \"world_size\": 2\n}";
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(MANIFEST_FILE), text).unwrap();
        let m = LoadedManifest::load(dir.path()).unwrap();
        assert_eq!(m.rank_end_line(0), Some(5));
        assert_eq!(m.rank_end_line(1), Some(13));
    }

    #[test]
    fn bad_manifests_are_reported_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(MANIFEST_FILE), "{\"ranks\": 3}").unwrap();
        let err = LoadedManifest::load(dir.path()).unwrap_err();
        assert!(err.contains("not a readable manifest"), "{err}");
    }
}
