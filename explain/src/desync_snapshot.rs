//! The snapshot in PyTorch's desync report (`TraceUtils.h`, `dumpSnapshot`, printed by a rank
//! whose watchdog timed out with TORCH_NCCL_DESYNC_DEBUG=1 or TORCH_DISTRIBUTED_DEBUG=DETAIL):
//! per collective number, which ranks started (or finished) which collective:
//!
//! ```text
//!  - Snapshot of ranks' latest states:
//!    #57 started ranks:
//!      [0, 1] started ALLREDUCE
//!      [2, 3] started BROADCAST
//! ```
//!
//! Each rank records the name of its own collective under the group's sequence number, so two
//! names under one number are ranks that issued different collectives at the same point: a
//! collective mismatch, which the report's "lagging/dead/mismatched ranks" line does not tell
//! apart from a rank behind.

use crate::rules::rank_number;

/// The signal's rule name: ranks in different collectives at one number.
pub(crate) const RULE_DESYNC_SNAPSHOT_MISMATCH: &str = "desync_snapshot_mismatch";

/// One group of the snapshot that listed more than one collective.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mismatch {
    /// The collective's number (counted from 1).
    pub seq: u64,
    /// "started" or "finished".
    pub state: &'static str,
    /// Each collective's name with the ranks that recorded it, in the report's order.
    pub ops: Vec<(String, Vec<usize>)>,
    /// The group's lines (number, text): its header and its entries.
    pub lines: Vec<(Option<u64>, String)>,
}

impl Mismatch {
    /// All the ranks the group names.
    pub fn ranks(&self) -> Vec<usize> {
        let mut ranks: Vec<usize> = self.ops.iter().flat_map(|(_, r)| r.clone()).collect();
        ranks.sort_unstable();
        ranks.dedup();
        ranks
    }

    /// The specifics, e.g. "at collective #57 ranks 0, 1 started ALLREDUCE and ranks 2, 3
    /// started BROADCAST".
    pub fn detail(&self) -> String {
        let parts: Vec<String> = self
            .ops
            .iter()
            .map(|(op, ranks)| {
                let list: Vec<String> = ranks.iter().map(ToString::to_string).collect();
                let who = if ranks.len() == 1 { "rank" } else { "ranks" };
                format!("{who} {} {} {op}", list.join(", "), self.state)
            })
            .collect();
        format!(
            "PyTorch's desync report: at collective #{} {} (ranks that issue different \
             collectives at the same point)",
            self.seq,
            parts.join(" and ")
        )
    }
}

/// Reads the snapshot's groups from a log's lines, one at a time.
#[derive(Debug, Default)]
pub(crate) struct SnapshotReader {
    group: Option<Mismatch>,
}

impl SnapshotReader {
    /// Takes one line (without its log prefixes); returns a group that has just ended with
    /// more than one collective in it. A report pasted as one line (its lines joined) is read
    /// piece by piece, cut before each `#N` and `[ranks]`.
    pub fn line(&mut self, number: Option<u64>, body: &str) -> Option<Mismatch> {
        if !(body.contains(" started ranks:") || body.contains(" finished ranks:")) {
            return self.piece(number, body);
        }
        let cuts: Vec<usize> = body
            .char_indices()
            .filter(|&(i, c)| (c == '#' || c == '[') && (i == 0 || body[..i].ends_with(' ')))
            .map(|(i, _)| i)
            .chain(std::iter::once(body.len()))
            .collect();
        let mut found = None;
        let mut start = 0;
        for &end in &cuts {
            if end > start {
                found = found.or(self.piece(number, &body[start..end]));
            }
            start = end;
        }
        found
    }

    /// Takes one line of the report, or one piece of a joined one.
    fn piece(&mut self, number: Option<u64>, body: &str) -> Option<Mismatch> {
        let text = body.trim();
        if let Some((seq, state)) = header(text) {
            let ended = self.end();
            self.group = Some(Mismatch {
                seq,
                state,
                ops: Vec::new(),
                lines: vec![(number, text.to_owned())],
            });
            return ended;
        }
        if let Some(group) = self.group.as_mut() {
            if let Some((ranks, op)) = entry(text, group.state) {
                match group.ops.iter_mut().find(|(name, _)| *name == op) {
                    Some((_, known)) => known.extend(ranks),
                    None => group.ops.push((op, ranks)),
                }
                group.lines.push((number, text.to_owned()));
                return None;
            }
        }
        self.end()
    }

    /// Ends the group being read (the log ended); returns it if it listed more than one
    /// collective.
    pub fn end(&mut self) -> Option<Mismatch> {
        self.group.take().filter(|g| g.ops.len() > 1)
    }
}

/// "#57 started ranks:" → (57, "started").
fn header(text: &str) -> Option<(u64, &'static str)> {
    let rest = text.strip_prefix('#')?;
    let (seq, tail) = rest.split_once(' ')?;
    let state = match tail.trim() {
        "started ranks:" => "started",
        "finished ranks:" => "finished",
        _ => return None,
    };
    Some((seq.parse().ok()?, state))
}

/// "[0, 1] started ALLREDUCE" → ([0, 1], "ALLREDUCE"), for the group's state.
fn entry(text: &str, state: &str) -> Option<(Vec<usize>, String)> {
    let (inside, rest) = text.strip_prefix('[')?.split_once(']')?;
    let op = rest
        .trim_start()
        .strip_prefix(state)?
        .split_whitespace()
        .next()?;
    let ranks: Option<Vec<usize>> = inside
        .split(',')
        .map(|r| r.trim().parse::<u64>().ok().and_then(rank_number))
        .collect();
    Some((ranks.filter(|r| !r.is_empty())?, op.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(lines: &[&str]) -> Vec<Mismatch> {
        let mut reader = SnapshotReader::default();
        let mut found: Vec<Mismatch> = lines
            .iter()
            .enumerate()
            .filter_map(|(i, l)| reader.line(Some(i as u64 + 1), l))
            .collect();
        found.extend(reader.end());
        found
    }

    /// The format of `TraceUtils.h`'s dumpSnapshot, a group per collective number and state.
    #[test]
    fn two_collectives_under_one_number_are_a_mismatch() {
        let found = read(&[
            "\t - Snapshot of ranks' latest states:",
            "\t   #57 started ranks:",
            "\t     [0, 1] started ALLREDUCE",
            "\t     [2, 3] started BROADCAST",
            "\t   #56 finished ranks:",
            "\t     [0, 1, 2, 3] finished ALLREDUCE",
        ]);
        assert_eq!(found.len(), 1, "{found:?}");
        let m = &found[0];
        assert_eq!((m.seq, m.state), (57, "started"));
        assert_eq!(m.ranks(), [0, 1, 2, 3]);
        assert_eq!(m.lines.len(), 3);
        assert_eq!(
            m.detail(),
            "PyTorch's desync report: at collective #57 ranks 0, 1 started ALLREDUCE and ranks \
             2, 3 started BROADCAST (ranks that issue different collectives at the same point)"
        );
    }

    /// One collective per number (a rank behind, not on another path), and lines that only
    /// look alike, are no mismatch; a group cut by the end of the log still counts.
    #[test]
    fn one_collective_per_number_or_other_lines_are_not() {
        assert!(read(&[
            "   #57 started ranks:",
            "     [0, 1, 2] started ALLREDUCE",
            "   #56 finished ranks:",
            "     [3] finished ALLREDUCE",
        ])
        .is_empty());
        assert!(read(&[
            "   #57 started ranks:",
            "     [0] started ALLREDUCE",
            "some other output",
            "     [1] started BROADCAST",
        ])
        .is_empty());
        // The report pasted as one line.
        let joined = read(&[
            "[Rank 0] - Snapshot of ranks' latest states: #57 started ranks: [0, 1] started \
             ALLREDUCE [2, 3] started BROADCAST #56 finished ranks: [0, 1, 2, 3] finished \
             ALLREDUCE",
        ]);
        assert_eq!(joined.len(), 1, "{joined:?}");
        assert_eq!(joined[0].ranks(), [0, 1, 2, 3]);
        let cut = read(&[
            "#9 finished ranks:",
            "[0] finished ALLREDUCE",
            "[1] finished BARRIER",
        ]);
        assert_eq!(cut.len(), 1);
        assert_eq!(cut[0].state, "finished");
        assert!(cut[0]
            .detail()
            .contains("rank 0 finished ALLREDUCE and rank 1 finished BARRIER"));
    }
}
