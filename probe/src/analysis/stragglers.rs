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
//!
//! Where DDP reduces over process groups smaller than the world
//! (`DDP(model, process_group=group)`), each group numbers its own
//! collectives: a rank is compared with its group's ranks, at its group's
//! collectives and over its group's steps.

use serde::{Deserialize, Serialize};

use super::comm::SeqView;
use super::render;
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
    /// `last` over the compared collectives of its DDP process group (all of
    /// them without subgroups).
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
    /// Steps compared (of its DDP process group).
    pub steps: u64,
    /// Collectives compared (of its DDP process group).
    #[serde(default)]
    pub collectives: u64,
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
    /// Steps that had at least one compared collective (each DDP process
    /// group's counted apart, where DDP reduces over subgroups).
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
    /// The rank that was the step's last rank most often, with the test's
    /// figures, whether or not it was named (so a verdict of "no straggler"
    /// can show what it weighed).
    #[serde(default)]
    pub candidate: Option<StragglerCandidate>,
}

/// The rank most often last, tested against chance (see the module
/// documentation for the rule).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StragglerCandidate {
    /// The rank.
    pub rank: u32,
    /// Its share of last arrivals over all compared collectives.
    pub last_share: f64,
    /// Steps in which it was the last rank.
    pub steps_last: u64,
    /// Steps compared (of its DDP process group).
    #[serde(default)]
    pub steps: u64,
    /// Collectives compared (of its DDP process group).
    #[serde(default)]
    pub collectives: u64,
    /// Bonferroni-corrected one-sided binomial p-value of `steps_last`.
    pub p_value: f64,
    /// The share of last arrivals a straggler needs: 1.5 × chance, at most 75%.
    pub share_needed: f64,
}

/// A p-value with its relation: "p < 0.0001", "p = " and four decimals below 0.01, else two.
fn p_value_text(p: f64) -> String {
    if p < 1e-4 {
        "p < 0.0001".to_owned()
    } else if p < 0.01 {
        format!("p = {p:.4}")
    } else {
        format!("p = {p:.2}")
    }
}

impl Stragglers {
    /// The verdict in one sentence with the rule it applied and the figures it
    /// weighed (no "straggler:" prefix), for the summary and the report alike.
    pub fn verdict(&self) -> String {
        let rule = |p: f64| {
            format!(
                "one-sided binomial test over steps, {} against {} after correcting for {} ranks",
                p_value_text(p),
                P_VALUE_THRESHOLD,
                self.ranks_compared
            )
        };
        match (&self.straggler, &self.candidate) {
            (Some(s), _) => format!(
                "rank {} arrived last at {} of {} collectives (chance {}) and was the last rank in \
                 {} of {} steps, clearly more than chance ({}); the others waited {} for it in \
                 total ({} per step).",
                s.rank,
                render::pct(s.last_share),
                s.collectives,
                render::pct(self.chance),
                s.steps_last,
                s.steps,
                rule(s.p_value),
                render::ns(s.wait_caused_ns as f64),
                render::ns(s.wait_per_step_ns)
            ),
            (None, Some(c)) => format!(
                "rank {} arrived last most often, at {} of {} collectives (chance {}), and was the \
                 last rank in {} of {} steps; a straggler must be the last rank in clearly more \
                 steps than chance ({}) and arrive last at {} or more of the collectives.",
                c.rank,
                render::pct(c.last_share),
                c.collectives,
                render::pct(self.chance),
                c.steps_last,
                c.steps,
                rule(c.p_value),
                render::pct(c.share_needed)
            ),
            (None, None) => format!(
                "no rank arrives last at the {} collectives clearly more often than chance ({}).",
                self.collectives,
                render::pct(self.chance)
            ),
        }
    }
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
    // Each rank's DDP process group (an index into `groups`), from the collectives it was last at.
    let mut group_of = vec![0usize; max_rank + 1];
    // Per DDP process group: its key, compared steps and compared collectives.
    let mut groups: Vec<(u32, u64, u64)> = Vec::new();
    // Per step: how often each rank was last (touched ranks listed).
    let mut in_step = vec![0u32; max_rank + 1];
    let mut touched: Vec<usize> = Vec::new();
    let mut cur: Option<(u32, u32)> = None;
    // Sequence views come in sequence order, which follows the steps, one group's after another's.
    for s in compared {
        out.collectives += 1;
        let g = match groups.iter().position(|(k, _, _)| *k == s.group) {
            Some(g) => g,
            None => {
                groups.push((s.group, 0, 0));
                groups.len() - 1
            }
        };
        groups[g].2 += 1;
        if cur != Some((s.group, s.step)) {
            if cur.is_some() {
                flush(&mut touched, &mut in_step, &mut steps_last);
            }
            cur = Some((s.group, s.step));
            out.steps += 1;
            groups[g].1 += 1;
        }
        match s.last {
            Some(r) => {
                let r = r as usize;
                last[r] += 1;
                group_of[r] = g;
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

    let steps_of = |r: usize| groups.get(group_of[r]).map_or(0, |g| g.1);
    let collectives_of = |r: usize| groups.get(group_of[r]).map_or(0, |g| g.2);
    out.ranks = (0..=max_rank)
        .filter(|&r| last[r] > 0 || steps_last[r] > 0)
        .map(|r| RankLateness {
            rank: r as u32,
            last: last[r],
            last_share: last[r] as f64 / collectives_of(r).max(1) as f64,
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
    // Per group, the rank that was the step's last rank most often, tested against chance; the
    // candidate is the one named by the rule, else any, that kept the others waiting longest
    // (one group but where DDP reduces over subgroups).
    let share_needed = (1.5 * out.chance).min(0.75);
    let tops = (0..groups.len()).filter_map(|g| {
        let top = out
            .ranks
            .iter()
            .filter(|r| group_of[r.rank as usize] == g)
            .max_by(|a, b| a.steps_last.cmp(&b.steps_last).then(a.last.cmp(&b.last)))?;
        let r = top.rank as usize;
        let steps = steps_of(r);
        let p = (binomial_upper_tail(steps, top.steps_last, out.chance)
            * f64::from(ranks_compared))
        .min(1.0);
        let named = p < P_VALUE_THRESHOLD && top.last_share >= share_needed;
        Some((named, top, steps, collectives_of(r), p))
    });
    if let Some((named, top, steps, collectives, p)) = tops
        .max_by_key(|(named, top, ..)| (*named, top.wait_caused_ns, std::cmp::Reverse(top.rank)))
    {
        out.candidate = Some(StragglerCandidate {
            rank: top.rank,
            last_share: top.last_share,
            steps_last: top.steps_last,
            steps,
            collectives,
            p_value: p,
            share_needed,
        });
        if named {
            out.straggler = Some(Straggler {
                rank: top.rank,
                last_share: top.last_share,
                steps_last: top.steps_last,
                steps,
                collectives,
                p_value: p,
                wait_caused_ns: top.wait_caused_ns,
                wait_per_step_ns: top.wait_caused_ns as f64 / steps.max(1) as f64,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_p_value_reads_with_its_relation() {
        // "p = < 0.0001" was printed on a real run (minGPT-ddp, 2026-12-02).
        assert_eq!(p_value_text(3e-7), "p < 0.0001");
        assert_eq!(p_value_text(0.00123), "p = 0.0012");
        assert_eq!(p_value_text(0.5), "p = 0.50");
    }

    fn view(step: u32, last: Option<u32>, wait: i64) -> SeqView {
        SeqView {
            group: 0,
            ranks: 4,
            skew: wait,
            last,
            wait,
            step,
            bucket: 0,
            transfer: 0,
            total: 0,
            waiting: 0,
            exposed: 0,
            exposed_waiting: 0,
        }
    }

    /// Rank 0 last at every collective of 12 steps, rank 1 at every one of 8: rank 0 is last
    /// at 60% of the collectives, yet 12 of 20 steps is not clearly more than chance
    /// (P(X >= 12) for 20 fair coins is 0.2517, times 2 ranks: p = 0.50): the verdict says so with the
    /// figures the table shows.
    #[test]
    fn a_verdict_of_no_straggler_shows_what_it_weighed() {
        let seqs: Vec<SeqView> = (0..20u32)
            .flat_map(|step| {
                (0..3).map(move |_| SeqView {
                    ranks: 2,
                    ..view(step, Some(u32::from(step >= 12)), 1)
                })
            })
            .collect();
        let s = stragglers(seqs.into_iter());
        assert!(s.straggler.is_none());
        let c = s.candidate.as_ref().unwrap();
        assert_eq!((c.rank, c.steps_last), (0, 12));
        // P(X >= 12) = (C(20,12) + ... + C(20,20)) / 2^20 = 263950 / 1048576.
        assert!(
            (c.p_value - 2.0 * 263_950.0 / 1_048_576.0).abs() < 1e-12,
            "{c:?}"
        );
        let v = s.verdict();
        assert!(
            v.starts_with(
                "rank 0 arrived last most often, at 60% of 60 collectives (chance 50%), and was \
                 the last rank in 12 of 20 steps;"
            ),
            "{v}"
        );
        assert!(
            v.contains("p = 0.50 against 0.01 after correcting for 2 ranks"),
            "{v}"
        );
        assert!(v.contains("arrive last at 75% or more"), "{v}");
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

    /// DDP over two process groups of 2 ranks: in group 0 (ranks 0, 2) rank 2 is last at every
    /// collective by a little, in group 1 (ranks 1, 3) rank 3 by a lot. Each is weighed over its
    /// own group's 20 steps and 40 collectives at chance 50%; rank 3, who kept its peer waiting
    /// longest, is named.
    #[test]
    fn each_groups_ranks_are_weighed_over_their_groups_steps() {
        let group = |g: u32, last: u32, wait: i64| {
            (0..20u32).flat_map(move |step| {
                (0..2).map(move |_| SeqView {
                    group: g,
                    ranks: 2,
                    ..view(step, Some(last), wait)
                })
            })
        };
        let seqs: Vec<SeqView> = group(0, 2, 1_000).chain(group(1, 3, 60_000)).collect();
        let st = stragglers(seqs.iter().copied());
        assert_eq!((st.collectives, st.steps, st.ranks_compared), (80, 40, 2));
        let s = st.straggler.clone().expect("named");
        assert_eq!(
            (s.rank, s.steps_last, s.steps, s.collectives),
            (3, 20, 20, 40)
        );
        assert!((s.last_share - 1.0).abs() < 1e-12, "{s:?}");
        assert!(
            st.verdict().starts_with(
                "rank 3 arrived last at 100% of 40 collectives (chance 50%) and was the last \
                 rank in 20 of 20 steps"
            ),
            "{}",
            st.verdict()
        );
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
