//! What happens during a launch, as events for the command line (or a test, or
//! a UI) to show.
//!
//! [`ConsoleObserver`] prints them the way `ddp-probe run` does: rank lines as
//! `[rank R] ...` on the stream they came from, the launcher's messages on
//! stderr as `ddp-probe: ...`.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use crate::config::ConsoleMode;
use crate::console::Stream;
use crate::hang::HangReport;
use crate::manifest::{Failure, RankEnd};

/// Something that happened during a launch.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A message for the user (e.g. torchrun's OMP_NUM_THREADS notice, a
    /// warning that the `latest` link could not be updated).
    Notice {
        /// The message.
        message: String,
    },
    /// The run directory exists and the ranks are about to start.
    RunStarted {
        /// The run directory.
        run_dir: PathBuf,
        /// The run id.
        run_id: String,
        /// The master's address.
        master_addr: String,
        /// The master's port.
        master_port: u16,
        /// Ranks in the whole run.
        world_size: usize,
        /// The global ranks started on this node.
        ranks: Vec<usize>,
        /// Which ranks' output the console shows.
        console: ConsoleMode,
    },
    /// A rank's process started.
    RankStarted {
        /// The global rank.
        rank: usize,
        /// The local rank.
        local_rank: usize,
        /// Its process id (and process group id).
        pid: u32,
    },
    /// A line of rank output that the console mode selects (console-safe).
    Output {
        /// The global rank.
        rank: usize,
        /// The stream it came from.
        stream: Stream,
        /// The line, cleaned for the terminal.
        text: String,
    },
    /// A rank's process ended.
    RankEnded {
        /// The global rank.
        rank: usize,
        /// How and when.
        end: RankEnd,
    },
    /// The first rank failed; the others are being stopped.
    FirstFailure(Failure),
    /// The end of the first failed rank's stderr (its last traceback, or its
    /// last lines), right after [`Event::FirstFailure`].
    LastWords {
        /// The global rank.
        rank: usize,
        /// Its stderr log, relative to the run directory.
        log: String,
        /// The lines, console-safe.
        lines: Vec<String>,
    },
    /// The watchdog found the run hung; the ranks are being stopped.
    Hang(HangReport),
    /// The launcher got a stop signal; the ranks are being stopped.
    Interrupted {
        /// The signal's name, e.g. `SIGINT`.
        signal: String,
    },
    /// SIGTERM was sent to these ranks' process groups.
    Stopping {
        /// The ranks still running.
        ranks: Vec<usize>,
        /// How long they get before SIGKILL.
        grace: Duration,
    },
    /// The grace period ran out (or a second stop signal came): SIGKILL was
    /// sent to these ranks' process groups.
    Killing {
        /// The ranks still running.
        ranks: Vec<usize>,
    },
    /// An attempt failed and `--max-restarts` allows another: its ranks all
    /// ended, its files were moved to `kept_in`, and every rank starts again.
    Restarting {
        /// The attempt that failed, counted from 1.
        attempt: u64,
        /// The attempts allowed (`--max-restarts` + 1).
        attempts: u64,
        /// The rank whose failure ended the attempt.
        failure: Option<Failure>,
        /// The ranks of this node, all restarted.
        workers: usize,
        /// The next attempt's `TORCHELASTIC_RESTART_COUNT`.
        restart_count: u32,
        /// Where the failed attempt's files went, relative to the run
        /// directory (`attempts/<n>`).
        kept_in: String,
    },
}

impl Event {
    /// The launcher's message for this event, as `ddp-probe run` prints it;
    /// `None` for rank output and for routine rank starts and ends.
    pub fn message(&self) -> Option<String> {
        match self {
            Event::Notice { message } => Some(message.clone()),
            Event::RunStarted {
                run_dir,
                run_id,
                master_addr,
                master_port,
                world_size,
                ranks,
                console,
            } => {
                let mut text = format!(
                    "run {run_id}: starting {} of {world_size} ranks (master {master_addr}:{master_port}); logs in {}",
                    ranks_text(ranks),
                    run_dir.display()
                );
                // torchrun shows every rank's output: say where the others' went.
                if *console == ConsoleMode::Rank0 && ranks.len() > 1 {
                    text.push_str(
                        " (the console shows the first rank's output and every rank's errors; \
                         --console all: every rank's output)",
                    );
                }
                Some(text)
            }
            // Rank ends are summed up at the end ([`crate::Outcome::render_summary`]);
            // the one that matters is also a [`Event::FirstFailure`].
            Event::RankStarted { .. } | Event::Output { .. } | Event::RankEnded { .. } => None,
            Event::FirstFailure(f) => Some(format!(
                "rank {} failed first: {}; stopping the other ranks",
                f.rank, f.termination
            )),
            Event::LastWords { rank, log, lines } => {
                let mut text = format!("rank {rank}'s last words ({log}):");
                for line in lines {
                    text.push_str("\n  | ");
                    text.push_str(line);
                }
                Some(text)
            }
            Event::Hang(report) => Some(report.render()),
            Event::Interrupted { signal } => Some(format!("got {signal}; stopping all ranks")),
            Event::Stopping { ranks, grace } => (!ranks.is_empty()).then(|| {
                format!(
                    "sent SIGTERM to {}; SIGKILL in {:.1} s",
                    ranks_text(ranks),
                    grace.as_secs_f64()
                )
            }),
            Event::Killing { ranks } => {
                (!ranks.is_empty()).then(|| format!("sent SIGKILL to {}", ranks_text(ranks)))
            }
            Event::Restarting {
                attempt,
                attempts,
                failure,
                workers,
                restart_count,
                ..
            } => {
                let why = match failure {
                    Some(f) => format!(" (rank {} {})", f.rank, f.termination),
                    None => String::new(),
                };
                let who = match workers {
                    1 => "the worker".to_owned(),
                    n => format!("all {n} workers"),
                };
                Some(format!(
                    "attempt {attempt} of {attempts} failed{why}; restarting {who} \
                     (TORCHELASTIC_RESTART_COUNT={restart_count})"
                ))
            }
        }
    }
}

fn ranks_text(ranks: &[usize]) -> String {
    let list: Vec<String> = ranks.iter().map(usize::to_string).collect();
    if list.len() == 1 {
        format!("rank {}", list[0])
    } else {
        format!("ranks {}", list.join(", "))
    }
}

/// Receives the events of a launch, on the thread that called
/// [`crate::launch`].
pub trait Observer {
    /// Called for each event, in order.
    fn on_event(&mut self, event: &Event);
}

impl<F: FnMut(&Event)> Observer for F {
    fn on_event(&mut self, event: &Event) {
        self(event)
    }
}

/// Ignores every event.
#[derive(Debug, Default, Clone, Copy)]
pub struct NullObserver;

impl Observer for NullObserver {
    fn on_event(&mut self, _event: &Event) {}
}

/// Prints events on the terminal as `ddp-probe run` does. Write errors (a
/// closed pipe) are ignored.
#[derive(Debug, Default, Clone, Copy)]
pub struct ConsoleObserver;

impl Observer for ConsoleObserver {
    fn on_event(&mut self, event: &Event) {
        match event {
            Event::Output { rank, stream, text } => {
                let line = format!("[rank {rank}] {text}\n");
                let _ = match stream {
                    Stream::Stdout => std::io::stdout().lock().write_all(line.as_bytes()),
                    Stream::Stderr => std::io::stderr().lock().write_all(line.as_bytes()),
                };
            }
            other => {
                if let Some(message) = other.message() {
                    let mut err = std::io::stderr().lock();
                    for line in message.lines() {
                        let _ = writeln!(err, "ddp-probe: {line}");
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn started(ranks: Vec<usize>, console: ConsoleMode) -> String {
        Event::RunStarted {
            run_dir: PathBuf::from("runs/r"),
            run_id: "r".to_owned(),
            master_addr: "127.0.0.1".to_owned(),
            master_port: 29500,
            world_size: ranks.len(),
            ranks,
            console,
        }
        .message()
        .unwrap()
    }

    #[test]
    fn the_start_line_says_where_the_other_ranks_output_goes() {
        // torchrun prints every rank's output; the default console shows one rank's.
        assert!(started(vec![0, 1], ConsoleMode::Rank0)
            .ends_with("--console all: every rank's output)"));
        assert!(started(vec![0, 1], ConsoleMode::All).ends_with("logs in runs/r"));
        assert!(started(vec![0], ConsoleMode::Rank0).ends_with("logs in runs/r"));
    }
}
