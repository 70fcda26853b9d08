//! Stragglers: which rank arrives last at the collectives, and how long the
//! others wait for it.
//!
//! For every collective sequence number recorded by at least two ranks (in
//! steady steps), the rank with the latest start on rank 0's timeline
//! arrived last (a tie for the latest start names nobody). The others each
//! waited `last start − their start` for it. Because one slow step makes the
//! same rank last for all of that step's collectives, the verdict is taken
//! over **steps**, not collectives: a step's last rank is the rank that was
//! last in the most of the step's collectives (a tie names nobody). A rank
//! is named the straggler when it was the step's last rank clearly more
//! often than chance: the one-sided binomial tail `P(X ≥ k)` for `k` of `N`
//! steps at chance `1/n` (`n` ranks), multiplied by `n` for having looked at
//! every rank, is below [`P_VALUE_THRESHOLD`], and its share of last
//! arrivals over all collectives is at least 1.5 times chance.

use serde::{Deserialize, Serialize};

use super::comm::SeqView;
use super::stats::binomial_upper_tail;

/// The significance level of the straggler verdict (after the Bonferroni
/// correction for the number of ranks).
pub const P_VALUE_THRESHOLD: f64 = 0.01;

/// How late one rank arrives at the collectives.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankLateness {
    /// The rank.
    pub rank: u32,
    /// Collectives at which it arrived last.
    pub last: u64,
    /// `last` over all compared collectives.
    pub last_share: f64,
    /// Steps in which it was the last rank (see the module documentation).
    pub steps_last: u64,
    /// Total time the other ranks waited for it: Σ over the collectives it
    /// was last at of Σ over the other ranks of (its start − their start)
    /// (ns, summed over ranks, so it can exceed the run's length).
    pub wait_caused_ns: i64,
}

/// The rank named as straggler.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Straggler {
    /// The rank.
    pub rank: u32,
    /// Its share of last arrivals over all compared collectives.
    pub last_share: f64,
    /// Steps in which it was the last rank.
    pub steps_last: u64,
    /// Steps compared.
    pub steps: u64,
    /// Bonferroni-corrected one-sided binomial p-value of `steps_last` at
    /// chance `1/ranks`.
    pub p_value: f64,
    /// Total time the others waited for it (ns).
    pub wait_caused_ns: i64,
    /// `wait_caused_ns / steps`.
    pub wait_per_step_ns: f64,
}

/// Arrival order at the collectives, over the steady steps.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Stragglers {
    /// Collectives (sequence numbers) recorded by at least two ranks.
    pub collectives: u64,
    /// Of those, the ones where two or more ranks share the latest start.
    pub ties: u64,
    /// Steps that had at least one compared collective.
    pub steps: u64,
    /// Ranks compared (the most ranks seen at one collective).
    pub ranks_compared: u32,
    /// `1 / ranks_compared`: the share of last arrivals a rank gets by
    /// chance.
    pub chance: f64,
    /// Every rank that arrived last at least once, most waited-for first.
    pub ranks: Vec<RankLateness>,
    /// The straggler, when one rank is last clearly more often than chance.
    pub straggler: Option<Straggler>,
}

/// Credits a step to the rank that was last in most of its collectives
/// (nobody on a tie) and resets the per-step counts.
fn flush(touched: &mut Vec<usize>, in_step: &mut [u32], steps_last: &mut [u64]) {
    let mut best = (0u32, None::<usize>, false);
    for &r in touched.iter() {
        let c = in_step[r];
        if c > best.0 {
            best = (c, Some(r), false);
        } else if c == best.0 {
            best.2 = true;
        }
    }
    if let (Some(r), false) = (best.1, best.2) {
        steps_last[r] += 1;
    }
    for &r in touched.iter() {
        in_step[r] = 0;
    }
    touched.clear();
}

/// Computes the arrival statistics from the sequence views of the steady
/// collectives.
pub(crate) fn stragglers(seqs: impl Iterator<Item = SeqView> + Clone) -> Stragglers {
    let compared = seqs.filter(|s| s.ranks >= 2);
    let ranks_compared = compared.clone().map(|s| s.ranks).max().unwrap_or(0);
    let mut out = Stragglers {
        ranks_compared,
        chance: if ranks_compared > 0 {
            1.0 / f64::from(ranks_compared)
        } else {
            0.0
        },
        ..Stragglers::default()
    };
    if ranks_compared == 0 {
        return out;
    }
    // Sized by the ranks that were last, not by the declared world size.
    let max_rank = compared.clone().filter_map(|s| s.last).max().unwrap_or(0) as usize;
    let mut last = vec![0u64; max_rank + 1];
    let mut steps_last = vec![0u64; max_rank + 1];
    let mut wait = vec![0i64; max_rank + 1];
    // Per step: how often each rank was last (touched ranks listed).
    let mut in_step = vec![0u32; max_rank + 1];
    let mut touched: Vec<usize> = Vec::new();
    let mut cur_step: Option<u32> = None;
    // Sequence views come in sequence order, which follows the steps.
    for s in compared {
        out.collectives += 1;
        if cur_step != Some(s.step) {
            if cur_step.is_some() {
                flush(&mut touched, &mut in_step, &mut steps_last);
            }
            cur_step = Some(s.step);
            out.steps += 1;
        }
        match s.last {
            Some(r) => {
                let r = r as usize;
                last[r] += 1;
                wait[r] = wait[r].saturating_add(s.wait);
                if in_step[r] == 0 {
                    touched.push(r);
                }
                in_step[r] += 1;
            }
            None => out.ties += 1,
        }
    }
    flush(&mut touched, &mut in_step, &mut steps_last);

    let n = out.collectives.max(1) as f64;
    out.ranks = (0..=max_rank)
        .filter(|&r| last[r] > 0 || steps_last[r] > 0)
        .map(|r| RankLateness {
            rank: r as u32,
            last: last[r],
            last_share: last[r] as f64 / n,
            steps_last: steps_last[r],
            wait_caused_ns: wait[r],
        })
        .collect();
    out.ranks.sort_by(|a, b| {
        b.wait_caused_ns
            .cmp(&a.wait_caused_ns)
            .then(b.last.cmp(&a.last))
            .then(a.rank.cmp(&b.rank))
    });
    if let Some(top) = out
        .ranks
        .iter()
        .max_by(|a, b| a.steps_last.cmp(&b.steps_last).then(a.last.cmp(&b.last)))
    {
        let p = (binomial_upper_tail(out.steps, top.steps_last, out.chance)
            * f64::from(ranks_compared))
        .min(1.0);
        if p < P_VALUE_THRESHOLD && top.last_share >= (1.5 * out.chance).min(0.75) {
            out.straggler = Some(Straggler {
                rank: top.rank,
                last_share: top.last_share,
                steps_last: top.steps_last,
                steps: out.steps,
                p_value: p,
                wait_caused_ns: top.wait_caused_ns,
                wait_per_step_ns: top.wait_caused_ns as f64 / out.steps.max(1) as f64,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(step: u32, last: Option<u32>, wait: i64) -> SeqView {
        SeqView {
            ranks: 4,
            skew: wait,
            last,
            wait,
            step,
            bucket: 0,
            transfer: 0,
            waiting: 0,
            exposed: 0,
            exposed_waiting: 0,
        }
    }

    #[test]
    fn a_rank_last_in_every_step_is_named() {
        let seqs: Vec<SeqView> = (0..20)
            .flat_map(|s| {
                [
                    view(s, Some(3), 10),
                    view(s, Some(3), 20),
                    view(s, Some(1), 5),
                ]
            })
            .collect();
        let st = stragglers(seqs.iter().copied());
        assert_eq!(st.collectives, 60);
        assert_eq!(st.steps, 20);
        let s = st.straggler.expect("named");
        assert_eq!(s.rank, 3);
        assert_eq!(s.steps_last, 20);
        assert_eq!(s.wait_caused_ns, 600);
        assert!((s.last_share - 40.0 / 60.0).abs() < 1e-12);
        assert_eq!(st.ranks[0].rank, 3);
        assert_eq!(st.ranks[1].last, 20);
    }

    #[test]
    fn rotating_last_rank_is_not_named() {
        let seqs: Vec<SeqView> = (0..40).map(|s| view(s, Some(s % 4), 10)).collect();
        let st = stragglers(seqs.iter().copied());
        assert!(st.straggler.is_none());
        assert!(st.ranks.iter().all(|r| r.last == 10 && r.steps_last == 10));
    }

    #[test]
    fn ties_name_nobody_and_nothing_is_fine() {
        let seqs: Vec<SeqView> = (0..30).map(|s| view(s, None, 0)).collect();
        let st = stragglers(seqs.iter().copied());
        assert_eq!(st.ties, 30);
        assert!(st.ranks.is_empty() && st.straggler.is_none());
        assert_eq!(stragglers(std::iter::empty()), Stragglers::default());
    }
}
