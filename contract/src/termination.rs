//! How a rank's process ended ([`Termination`]), as the launcher records it
//! in the manifest and the hang report.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How a rank's process ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "how", rename_all = "snake_case")]
pub enum Termination {
    /// It exited with this status code.
    Exited {
        /// The exit code.
        code: i32,
    },
    /// It was killed by a signal.
    Signaled {
        /// The signal's name, e.g. `SIGKILL`.
        signal: String,
        /// The signal's number.
        number: i32,
        /// Whether it dumped core.
        #[serde(default)]
        core_dumped: bool,
    },
    /// Its end could not be observed.
    Unknown {
        /// Why not.
        reason: String,
    },
}

impl Termination {
    /// Whether this is a clean exit (status 0).
    pub fn success(&self) -> bool {
        matches!(self, Termination::Exited { code: 0 })
    }

    /// The shell-style exit status: the code, or 128 + the signal number.
    pub fn exit_code(&self) -> i32 {
        match self {
            Termination::Exited { code } => *code,
            Termination::Signaled { number, .. } => 128 + number,
            Termination::Unknown { .. } => 1,
        }
    }
}

impl fmt::Display for Termination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Termination::Exited { code } => write!(f, "exited with code {code}"),
            Termination::Signaled {
                signal,
                core_dumped,
                ..
            } => {
                write!(f, "killed by {signal}")?;
                if *core_dumped {
                    f.write_str(" (core dumped)")?;
                }
                Ok(())
            }
            Termination::Unknown { reason } => write!(f, "ended in an unknown way ({reason})"),
        }
    }
}
