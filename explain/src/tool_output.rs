//! Outputs of diagnostic tools that people paste beside (or instead of) a job's log.
//!
//! * py-spy's stack dumps (`py-spy dump --pid P`), the usual way to see where a hung
//!   job's processes are: `Process P: python train.py`, then per thread
//!   `Thread 688514 (idle): "MainThread"` and one line per frame, innermost first,
//!   `    _try_get_data (torch/utils/data/dataloader.py:1011)`. When most main threads
//!   wait in a collective of `torch/distributed/distributed_c10d.py` and one is
//!   elsewhere, that one is the process the others wait for.
//! * CUDA's `p2pBandwidthLatencyTest` sample: bandwidth matrices between GPUs with
//!   peer-to-peer copies off (`Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)`) and
//!   on (`... P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)`), rows `   0 673.20 13.15`.
//!   Peer-to-peer copies far slower than copies through the host mean the traffic is
//!   blocked or rerouted (PCIe ACS, the IOMMU): NCCL's P2P transport hangs or crawls there.
//!
//! The shape of a log (`shape.rs`) feeds these line by line; correlation
//! (`correlate.rs`) turns them into observations.

use crate::report::Evidence;

/// One thread's stack in a py-spy dump.
#[derive(Debug)]
struct Stack {
    /// The thread's header line.
    header: Evidence,
    /// Whether py-spy named it the main thread.
    main: bool,
    /// Frames, innermost first: (function, `file:line`).
    frames: Vec<(String, String)>,
    /// The innermost frame's line.
    top: Option<Evidence>,
}

/// What a py-spy dump's main threads were doing.
#[derive(Debug, Default)]
pub(crate) struct StackDumps {
    stacks: Vec<Stack>,
    /// Whether the last line read belonged to a stack.
    in_stack: bool,
}

/// A main thread that is not in a collective while others are.
#[derive(Debug)]
pub(crate) struct ProcessElsewhere {
    /// Its innermost frames, `function (file:line)`, at most three.
    pub frames: Vec<String>,
    /// Whether it waits for a DataLoader's workers.
    pub data_loader: bool,
    /// Its header and innermost frame lines.
    pub evidence: Vec<Evidence>,
}

/// The main threads of the dumps: those waiting in collectives and those elsewhere.
#[derive(Debug)]
pub(crate) struct StackPicture {
    /// Collectives the waiting ones are in (`broadcast`, `all_reduce`), each once.
    pub collectives: Vec<String>,
    /// How many main threads wait in a collective.
    pub waiting: usize,
    /// The main threads elsewhere.
    pub elsewhere: Vec<ProcessElsewhere>,
}

/// Frames of a DataLoader waiting for its workers' next batch.
const DATA_LOADER_WAIT: &[&str] = &["_try_get_data", "_get_data"];

impl StackDumps {
    /// Feeds one line (`body` without launcher prefixes).
    pub fn observe(&mut self, body: &str, evidence: &dyn Fn() -> Evidence) {
        let t = body.trim();
        if let Some(main) = thread_header(t) {
            self.stacks.push(Stack {
                header: evidence(),
                main,
                frames: Vec::new(),
                top: None,
            });
            self.in_stack = true;
            return;
        }
        if !self.in_stack {
            return;
        }
        match frame(t) {
            Some((function, place)) => {
                if let Some(stack) = self.stacks.last_mut() {
                    if stack.frames.is_empty() {
                        stack.top = Some(evidence());
                    }
                    stack.frames.push((function.to_owned(), place.to_owned()));
                }
            }
            None => self.in_stack = false,
        }
    }

    /// The main threads with frames, sorted into waiting in a collective and
    /// elsewhere; None without any.
    pub fn picture(&self) -> Option<StackPicture> {
        let mut collectives: Vec<String> = Vec::new();
        let mut waiting = 0;
        let mut elsewhere = Vec::new();
        for stack in self
            .stacks
            .iter()
            .filter(|s| s.main && !s.frames.is_empty())
        {
            let collective = stack
                .frames
                .iter()
                .find(|(_, place)| place.contains("distributed/distributed_c10d.py"));
            if let Some((function, _)) = collective {
                waiting += 1;
                if !collectives.contains(function) {
                    collectives.push(function.clone());
                }
                continue;
            }
            let data_loader = stack.frames.iter().take(4).any(|(f, place)| {
                DATA_LOADER_WAIT.contains(&f.as_str()) && place.contains("dataloader")
            });
            let frames = stack
                .frames
                .iter()
                .take(3)
                .map(|(f, place)| format!("{f} ({place})"))
                .collect();
            let mut evidence = vec![stack.header.clone()];
            evidence.extend(stack.top.clone());
            elsewhere.push(ProcessElsewhere {
                frames,
                data_loader,
                evidence,
            });
        }
        (waiting + elsewhere.len() > 0).then_some(StackPicture {
            collectives,
            waiting,
            elsewhere,
        })
    }
}

/// `Thread 688514 (idle): "MainThread"` (also `(active)`, `(active+gil)`, a hex id):
/// Some(whether it is the main thread).
pub(crate) fn thread_header(t: &str) -> Option<bool> {
    let rest = t.strip_prefix("Thread ")?;
    let (id, rest) = rest.split_once(' ')?;
    let id_ok = id.chars().all(|c| c.is_ascii_hexdigit()) || id.starts_with("0x");
    let rest = rest.strip_prefix('(')?;
    let (state, name) = rest.split_once("):")?;
    if !id_ok || !state.starts_with("active") && !state.starts_with("idle") {
        return None;
    }
    Some(name.trim().trim_matches('"') == "MainThread")
}

/// `    broadcast (torch/distributed/distributed_c10d.py:1191)`: (function, `file:line`).
fn frame(t: &str) -> Option<(&str, &str)> {
    let (function, rest) = t.split_once(" (")?;
    let place = rest.strip_suffix(')')?;
    let (file, line) = place.rsplit_once(':')?;
    let plain = !function.is_empty() && !function.contains(' ');
    (plain && file.ends_with(".py") && line.parse::<u32>().is_ok()).then_some((function, place))
}

/// The bandwidth matrices of CUDA's `p2pBandwidthLatencyTest`.
#[derive(Debug, Default)]
pub(crate) struct P2pBandwidthTest {
    /// The matrix being read: (bidirectional, peer-to-peer on).
    section: Option<(bool, bool)>,
    /// Mean off-diagonal GB/s per (bidirectional, peer-to-peer on): (sum, count).
    sums: [[(f64, u32); 2]; 2],
    /// The first line of a peer-to-peer-on matrix.
    pub evidence: Option<Evidence>,
}

/// Peer-to-peer copies slower than this share of copies through the host are blocked.
const P2P_BROKEN_RATIO: f64 = 0.5;

impl P2pBandwidthTest {
    /// Feeds one line (`lower`: the body, ASCII lowercase).
    pub fn observe(&mut self, lower: &str, evidence: &dyn Fn() -> Evidence) {
        let t = lower.trim();
        if t.contains("matrix") {
            self.section = None;
            if t.contains("bandwidth") && (t.contains("p2p=enabled") || t.contains("p2p=disabled"))
            {
                let on = t.contains("p2p=enabled");
                if on {
                    self.evidence.get_or_insert_with(evidence);
                }
                self.section = Some((t.starts_with("bidirectional"), on));
            }
            return;
        }
        let Some((bidirectional, on)) = self.section else {
            return;
        };
        let mut words = t.split_whitespace();
        let Some(row) = words.next().and_then(|w| w.parse::<usize>().ok()) else {
            return;
        };
        for (column, value) in words.enumerate() {
            let Ok(gbs) = value.parse::<f64>() else {
                self.section = None;
                return;
            };
            if column != row {
                let cell = &mut self.sums[usize::from(bidirectional)][usize::from(on)];
                cell.0 += gbs;
                cell.1 += 1;
            }
        }
    }

    /// When peer-to-peer copies run far slower than copies through the host:
    /// (mean GB/s with peer-to-peer on, mean GB/s off), unidirectional first.
    pub fn blocked(&self) -> Option<(f64, f64)> {
        self.sums.iter().find_map(|kind| {
            let (off, on) = (kind[0], kind[1]);
            if off.1 == 0 || on.1 == 0 {
                return None;
            }
            let (off, on) = (off.0 / f64::from(off.1), on.0 / f64::from(on.1));
            (off > 0.0 && on < off * P2P_BROKEN_RATIO).then_some((on, off))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(text: &str) -> Evidence {
        Evidence {
            file: "log".to_owned(),
            line: None,
            text: text.to_owned(),
        }
    }

    fn feed_stacks(text: &str) -> StackDumps {
        let mut d = StackDumps::default();
        for line in text.lines() {
            d.observe(line, &|| ev(line));
        }
        d
    }

    #[test]
    fn the_main_thread_outside_the_collectives_is_named() {
        let d = feed_stacks(
            "Process 11: python train.py\n\
             Thread 11 (active): \"MainThread\"\n\
             \x20   broadcast (torch/distributed/distributed_c10d.py:1191)\n\
             \x20   eval_batch (deepspeed/runtime/pipe/engine.py:455)\n\
             Thread 12 (idle): \"Thread-1\"\n\
             \x20   wait (threading.py:306)\n\
             Thread 21 (idle): \"MainThread\"\n\
             \x20   wait (threading.py:306)\n\
             \x20   get (queue.py:179)\n\
             \x20   _try_get_data (torch/utils/data/dataloader.py:1011)\n\
             \x20   __next__ (torch/utils/data/dataloader.py:530)\n\
             Thread 31 (active+gil): \"MainThread\"\n\
             \x20   all_reduce (torch/distributed/distributed_c10d.py:1320)\n",
        );
        let p = d.picture().expect("stacks");
        assert_eq!(p.waiting, 2);
        assert_eq!(p.collectives, vec!["broadcast", "all_reduce"]);
        assert_eq!(p.elsewhere.len(), 1);
        assert!(p.elsewhere[0].data_loader);
        assert_eq!(p.elsewhere[0].frames[0], "wait (threading.py:306)");
        assert!(p.elsewhere[0].evidence[0].text.starts_with("Thread 21"));
    }

    #[test]
    fn lines_that_only_look_like_frames_are_not_stacks() {
        let d = feed_stacks("error (see train.py:12)\nThread 3 started (worker)\n");
        assert!(d.picture().is_none());
    }

    /// Output of CUDA's sample on a host whose IOMMU blocked peer-to-peer traffic (figures
    /// of the corpus case ml-engineering-1, shortened to two GPUs) and on a healthy one.
    #[test]
    fn peer_to_peer_copies_slower_than_host_copies_are_blocked() {
        let feed = |text: &str| {
            let mut t = P2pBandwidthTest::default();
            for line in text.lines() {
                let lower = line.to_ascii_lowercase();
                t.observe(&lower, &|| ev(line));
            }
            t
        };
        let blocked = feed(
            "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n   D\\D     0      1\n\
             \x20    0 673.20  13.15\n     1  12.99 673.20\n\
             Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)\n   D\\D     0      1\n\
             \x20    0 673.49   2.60\n     1   2.12 672.33\n",
        );
        let (on, off) = blocked.blocked().expect("blocked");
        assert!(
            (on - 2.36).abs() < 1e-9 && (off - 13.07).abs() < 1e-9,
            "{on} {off}"
        );
        let healthy = feed(
            "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n     0 700.1  11.0\n     1  11.2 701.0\n\
             Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)\n     0 700.5  24.9\n     1  25.1 700.9\n\
             P2P=Enabled Latency (P2P Writes) Matrix (us)\n     0   2.1   1.0\n     1   1.1   2.2\n",
        );
        assert_eq!(healthy.blocked(), None);
    }
}
