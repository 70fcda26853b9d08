//! Test-only fault injection, driven by the `DDP_PROBE_FAULT` environment variable.
//!
//! The end-to-end tests of `ddp-probe run` and `ddp-probe explain` need faults that happen at
//! an exact place in a real training job: a rank killed inside its forward pass, inside the
//! wait for a bucket's all-reduce, or between writing a checkpoint's temporary file and
//! renaming it; a rank that stops making progress; a rank that issues a collective the others
//! do not; a rank started with a different world size. This module reads one fault from the
//! environment and fires it when the named rank reaches the named point.
//!
//! # The variable
//!
//! `DDP_PROBE_FAULT` is a comma-separated list of `key=value` pairs:
//!
//! | key | values | meaning |
//! |---|---|---|
//! | `rank` | a rank (required) | the only rank (`RANK`) the fault applies to |
//! | `at` | `forward`, `allreduce`, `checkpoint`, `backward` (default `forward`) | where it fires: inside [`crate::Ddp::forward`] before the user's closure runs; in the reducer's wait for the first bucket's all-reduce (the all-reduce is in flight); in [`crate::checkpoint::Checkpoint::save`] after the temporary file is written and fsynced, before the rename; in backward, in the gradient-ready hook of parameter `param` (`slow` only) |
//! | `step` | a number (default: the first time) | the DDP step ([`crate::Ddp::step`], counted from 0 in this process) for `forward` and `allreduce`; the checkpoint's step for `checkpoint` |
//! | `action` | `kill`, `hang`, `extra_allreduce`, `world_size`, `slow` | SIGKILL to itself; sleep forever; one all-reduce of a single `f32` the other ranks do not issue (`forward` and `allreduce` only); start with another world size (applied in [`crate::init_process_group`], `at` and `step` are ignored); sleep `ms` milliseconds (`backward` only, and at **every** step unless `step` is given: a straggler) |
//! | `world_size` | a number | the world size `action=world_size` claims |
//! | `ms` | a number | how long `action=slow` sleeps |
//! | `param` | a parameter index (default: the first gradient of the step) | whose gradient-ready hook `action=slow` sleeps in: that gradient and every later one are late |
//!
//! For example `DDP_PROBE_FAULT="rank=1,at=forward,step=5,action=kill"`. A fault fires once.
//! Before acting, the rank writes one line to its standard error, `ddp-probe fault
//! injection: ...`, so a log shows what was injected. Before a kill it waits 500 ms, so the
//! trace writer (which flushes every 100 ms) has written what the rank recorded before the
//! fault, as it has for a rank that dies at a random moment.
//!
//! When the variable is unset every check is one load of an initialised `OnceLock` and a
//! comparison: the hook costs nothing measurable and is off by default. A malformed value is
//! an error of [`crate::init_process_group`] (never a panic), naming the bad part.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use comm::{ProcessGroup, ReduceOp};

use crate::error::{DdpError, Result};

/// The environment variable holding the fault to inject.
pub use probe_contract::env::FAULT as FAULT_ENV;

/// Where in a training step a fault fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    /// Inside [`crate::Ddp::forward`], before the user's closure runs.
    Forward,
    /// In the reducer's wait for the first bucket's all-reduce, which is in flight.
    AllReduce,
    /// In [`crate::checkpoint::Checkpoint::save`], between the fsynced temporary file and the
    /// rename.
    Checkpoint,
    /// In backward, in a parameter's gradient-ready hook.
    Backward,
}

impl Point {
    fn name(self) -> &'static str {
        match self {
            Point::Forward => "forward",
            Point::AllReduce => "allreduce",
            Point::Checkpoint => "checkpoint",
            Point::Backward => "backward",
        }
    }
}

/// What the fault does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// The rank sends SIGKILL to itself.
    Kill,
    /// The rank sleeps forever: it stops making progress without exiting.
    Hang,
    /// The rank issues one all-reduce of a single `f32` that the other ranks do not issue.
    ExtraAllReduce,
    /// The rank starts with this world size instead of `WORLD_SIZE`.
    WorldSize(usize),
    /// The rank sleeps this many milliseconds in a gradient-ready hook, every step.
    Slow {
        /// How long.
        ms: u64,
        /// In which parameter's hook; `None`: the step's first gradient.
        param: Option<usize>,
    },
}

/// One fault, as parsed from [`FAULT_ENV`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    /// The rank it applies to.
    pub rank: usize,
    /// Where it fires.
    pub at: Point,
    /// The step it fires at; `None`: the first time the point is reached.
    pub step: Option<u64>,
    /// What it does.
    pub action: Action,
}

impl Fault {
    /// Parses the value of [`FAULT_ENV`]; the error names the part that is wrong.
    pub fn parse(spec: &str) -> Result<Fault> {
        let bad = |msg: String| DdpError::Config(format!("{FAULT_ENV}={spec:?}: {msg}"));
        let (mut rank, mut at, mut step, mut action, mut world) = (None, None, None, None, None);
        let (mut ms, mut param) = (None, None);
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| bad(format!("{part:?} is not key=value")))?;
            let (key, value) = (key.trim(), value.trim());
            let number = |what: &str| {
                value
                    .parse::<u64>()
                    .map_err(|_| bad(format!("{what} {value:?} is not a non-negative integer")))
            };
            match key {
                "rank" => rank = Some(number("rank")? as usize),
                "step" => step = Some(number("step")?),
                "world_size" => world = Some(number("world_size")? as usize),
                "ms" => ms = Some(number("ms")?),
                "param" => param = Some(number("param")? as usize),
                "at" => {
                    at = Some(match value {
                        "forward" => Point::Forward,
                        "allreduce" | "all_reduce" => Point::AllReduce,
                        "checkpoint" => Point::Checkpoint,
                        "backward" => Point::Backward,
                        _ => {
                            return Err(bad(format!(
                                "at={value:?} is none of forward, allreduce, checkpoint, backward"
                            )))
                        }
                    })
                }
                "action" => action = Some(value.to_owned()),
                _ => {
                    return Err(bad(format!(
                    "unknown key {key:?} (expected rank, at, step, action, world_size, ms, param)"
                )))
                }
            }
        }
        let rank = rank.ok_or_else(|| bad("rank= is required".to_owned()))?;
        let at = at.unwrap_or(match action.as_deref() {
            Some("slow") => Point::Backward,
            _ => Point::Forward,
        });
        if at == Point::Backward && action.as_deref() != Some("slow") {
            return Err(bad("at=backward takes action=slow only".to_owned()));
        }
        let action = match action.as_deref() {
            Some("slow") if at != Point::Backward => {
                return Err(bad("action=slow fires at backward only".to_owned()))
            }
            Some("slow") => match ms {
                Some(ms) => Action::Slow { ms, param },
                None => return Err(bad("action=slow needs ms=N (milliseconds)".to_owned())),
            },
            Some("kill") => Action::Kill,
            Some("hang") => Action::Hang,
            Some("extra_allreduce") if at == Point::Checkpoint => {
                return Err(bad(
                    "action=extra_allreduce fires at forward or allreduce only".to_owned(),
                ))
            }
            Some("extra_allreduce") => Action::ExtraAllReduce,
            Some("world_size") => match world {
                Some(w) if w > 0 => Action::WorldSize(w),
                _ => {
                    return Err(bad(
                        "action=world_size needs world_size=N with N at least 1".to_owned(),
                    ))
                }
            },
            Some(other) => {
                return Err(bad(format!(
                    "action={other:?} is none of kill, hang, extra_allreduce, world_size, slow"
                )))
            }
            None => return Err(bad("action= is required".to_owned())),
        };
        Ok(Fault {
            rank,
            at,
            step,
            action,
        })
    }
}

/// The fault for this process: `Ok(None)` when [`FAULT_ENV`] is unset or names another rank.
static ACTIVE: OnceLock<Result<Option<Fault>, String>> = OnceLock::new();
/// Set once the fault has fired.
static FIRED: AtomicBool = AtomicBool::new(false);

/// The fault this process injects, read from [`FAULT_ENV`] and `RANK` once. An error for a
/// malformed value.
pub fn active() -> Result<Option<Fault>> {
    ACTIVE
        .get_or_init(|| {
            let Some(spec) = std::env::var_os(FAULT_ENV) else {
                return Ok(None);
            };
            let spec = spec.to_string_lossy();
            let fault = Fault::parse(&spec).map_err(|e| e.to_string())?;
            let rank = std::env::var("RANK")
                .ok()
                .and_then(|r| r.trim().parse::<usize>().ok())
                .unwrap_or(0);
            Ok((fault.rank == rank).then_some(fault))
        })
        .clone()
        .map_err(DdpError::Config)
}

/// The world size this rank claims under `action=world_size`, if that is the fault.
pub fn world_size_override() -> Result<Option<usize>> {
    Ok(match active()? {
        Some(Fault {
            action: Action::WorldSize(w),
            ..
        }) => Some(w),
        _ => None,
    })
}

/// Set once the slow-backward fault has said what it does.
static SLOW_SAID: AtomicBool = AtomicBool::new(false);

/// Sleeps in the gradient-ready hook of parameter `index` when this rank's fault is
/// `action=slow` there (`first`: whether it is the step's first gradient, for a fault without
/// `param`). Fires at every step, or at `step` only.
pub fn slow_backward(step: u64, index: usize, first: bool) {
    let Ok(Some(fault)) = active() else { return };
    let Action::Slow { ms, param } = fault.action else {
        return;
    };
    let here = match param {
        Some(p) => p == index,
        None => first,
    };
    if !here || fault.step.is_some_and(|s| s != step) {
        return;
    }
    if !SLOW_SAID.swap(true, Ordering::Relaxed) {
        eprintln!(
            "ddp-probe fault injection: rank {} sleeps {ms} ms in the gradient-ready hook of parameter {index}, {}",
            fault.rank,
            match fault.step {
                Some(s) => format!("at step {s}"),
                None => "every step".to_owned(),
            }
        );
    }
    std::thread::sleep(Duration::from_millis(ms));
}

/// Fires the fault if this rank's fault is at `point` and `step` (see the module doc). Kill
/// and hang do not return; an extra all-reduce runs on `pg` and returns its outcome.
pub fn hit(point: Point, step: u64, pg: Option<&ProcessGroup>) -> Result<()> {
    // A malformed value was reported by `init_process_group` already.
    let Ok(Some(fault)) = active() else {
        return Ok(());
    };
    if fault.at != point
        || fault.step.is_some_and(|s| s != step)
        || matches!(fault.action, Action::WorldSize(_) | Action::Slow { .. })
        || FIRED.swap(true, Ordering::Relaxed)
    {
        return Ok(());
    }
    let what = match fault.action {
        Action::Kill => "SIGKILL to itself",
        Action::Hang => "stops making progress (sleeps forever)",
        Action::ExtraAllReduce => "issues an extra all_reduce",
        Action::WorldSize(_) | Action::Slow { .. } => "",
    };
    eprintln!(
        "ddp-probe fault injection: rank {} {what} at {} of step {step}",
        fault.rank,
        point.name()
    );
    match fault.action {
        Action::Kill => {
            // Give the trace writer (which flushes every 100 ms) time to write what was recorded
            // before the fault, as it has for a rank that dies at a random moment; then die.
            std::thread::sleep(Duration::from_millis(500));
            // SAFETY: kill(2) on our own pid with a valid signal number has no memory effects.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
            // SIGKILL cannot be caught; the process is gone before this line.
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
        Action::Hang => loop {
            std::thread::sleep(Duration::from_secs(3600));
        },
        Action::ExtraAllReduce => {
            if let Some(pg) = pg {
                let mut one = [1f32];
                pg.all_reduce(&mut one, ReduceOp::Sum)?;
            }
            Ok(())
        }
        Action::WorldSize(_) | Action::Slow { .. } => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_action() {
        let f = Fault::parse("rank=1,at=forward,step=5,action=kill").unwrap();
        assert_eq!(
            f,
            Fault {
                rank: 1,
                at: Point::Forward,
                step: Some(5),
                action: Action::Kill
            }
        );
        let f = Fault::parse(" rank=0 , at=checkpoint, action=hang").unwrap();
        assert_eq!(
            (f.at, f.step, f.action),
            (Point::Checkpoint, None, Action::Hang)
        );
        let f = Fault::parse("rank=1,at=allreduce,action=extra_allreduce").unwrap();
        assert_eq!(f.action, Action::ExtraAllReduce);
        let f = Fault::parse("rank=1,action=world_size,world_size=3").unwrap();
        assert_eq!(f.action, Action::WorldSize(3));
        let f = Fault::parse("rank=1,action=slow,ms=80,param=12").unwrap();
        assert_eq!(
            (f.at, f.step, f.action),
            (
                Point::Backward,
                None,
                Action::Slow {
                    ms: 80,
                    param: Some(12)
                }
            )
        );
    }

    #[test]
    fn malformed_values_are_errors_naming_the_part() {
        for (spec, needle) in [
            ("", "rank= is required"),
            ("rank=1", "action= is required"),
            ("rank=x,action=kill", "\"x\""),
            ("rank=1,action=explode", "explode"),
            ("rank=1,at=backward,action=kill", "action=slow only"),
            ("rank=1,action=slow", "ms=N"),
            ("rank=1,at=forward,action=slow,ms=5", "backward only"),
            ("rank=1,at=sideways,action=kill", "sideways"),
            ("rank=1,colour=red,action=kill", "colour"),
            ("rank=1,action=world_size", "world_size=N"),
            ("rank=1,action=world_size,world_size=0", "world_size=N"),
            (
                "rank=1,at=checkpoint,action=extra_allreduce",
                "forward or allreduce",
            ),
            ("rank", "not key=value"),
        ] {
            let e = Fault::parse(spec).unwrap_err().to_string();
            assert!(e.contains(needle), "{spec:?}: {e}");
        }
    }
}
