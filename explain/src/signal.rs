//! Signals: single observations (one log line, one manifest fact, one trace
//! fact) before they are grouped into findings.

use crate::category::Category;
use crate::report::{Evidence, Role};

/// How a signal joins the findings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attach {
    /// It is a finding of its own (grouped with signals of its category).
    Standalone,
    /// It supports another finding about the same rank when there is one
    /// (generic error codes, crash markers, exit codes); otherwise it stands
    /// alone.
    AnyFinding,
    /// Like [`Attach::AnyFinding`], but only a cause finding can take it.
    CauseOnly,
}

/// One observation.
#[derive(Debug, Clone)]
pub(crate) struct Signal {
    /// The name of the rule or check that produced it.
    pub rule: &'static str,
    /// What it shows.
    pub category: Category,
    /// Cause, symptom or consequence.
    pub role: Role,
    /// How it joins findings.
    pub attach: Attach,
    /// The ranks it is about (the culprit for a consequence).
    pub subjects: Vec<usize>,
    /// The rank whose output showed it.
    pub observer: Option<usize>,
    /// Whether the line itself named that rank (a `[rank1]:` prefix), as
    /// opposed to the file it is in.
    pub observer_explicit: bool,
    /// The NCCL process (host, pid) that printed it, to find its rank later.
    pub process: Option<(String, u32)>,
    /// A short phrase with the specifics ("ALLREDUCE SeqNum=17 ran for 600000 ms").
    pub detail: Option<String>,
    /// The number of ranks the message expected, when it names one
    /// ("1/4 clients joined"): compared with the run's world size.
    pub expected_world: Option<usize>,
    /// The port the message names, when it is about a port already in use.
    pub port: Option<u16>,
    /// The address (HOST:PORT) it is about, when a rank could not reach one.
    pub address: Option<String>,
    /// Where the rank it is about was instead of the collective the others wait in, from that
    /// rank's Python stack ("in save at train.py:64 (`time.sleep(600)`)").
    pub elsewhere: Option<String>,
    /// A fix more specific than the category's, when the signal knows one (a rank stuck on
    /// its DataLoader workers: what their state calls for).
    pub fix_hint: Option<String>,
    /// What the ranks did, more specific than the category's predicate, when the signal knows
    /// it ("left its training loop in step 3, after its forward, while the others went on"):
    /// the finding's title is its ranks and this.
    pub predicate_hint: Option<String>,
    /// Supporting lines.
    pub evidence: Vec<Evidence>,
    /// Global order of observation (input order, then line order).
    pub order: u64,
}

impl Signal {
    /// A finding of its own (see [`Attach::Standalone`]), with no ranks,
    /// detail or evidence yet.
    pub fn standalone(rule: &'static str, category: Category, role: Role) -> Signal {
        Signal::new(rule, category, role, Attach::Standalone)
    }

    /// A signal with no ranks, detail or evidence yet.
    pub fn new(rule: &'static str, category: Category, role: Role, attach: Attach) -> Signal {
        Signal {
            rule,
            category,
            role,
            attach,
            subjects: Vec::new(),
            observer: None,
            observer_explicit: false,
            process: None,
            detail: None,
            expected_world: None,
            port: None,
            address: None,
            elsewhere: None,
            fix_hint: None,
            predicate_hint: None,
            evidence: Vec::new(),
            order: 0,
        }
    }

    /// The ranks involved: subjects and observer.
    pub fn ranks(&self) -> Vec<usize> {
        let mut r = self.subjects.clone();
        if let Some(o) = self.observer {
            r.push(o);
        }
        r.sort_unstable();
        r.dedup();
        r
    }
}
