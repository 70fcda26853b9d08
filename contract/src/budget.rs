//! Budgets of the readers of files ddp-probe did not write itself or cannot trust (traces,
//! profiler traces, flight-recorder dumps, logs, manifests): each bound has a default that
//! real inputs fit many times over and an environment variable that raises it. A reader past a
//! bound stops with an error naming the bound, the value found and the variable
//! ([`Budget::exceeded`]), so a hostile or broken file costs bounded memory and time, and a
//! genuine large one is one variable away.

/// One bound of a reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// What is counted, in the words of the error ("objects in a pickle").
    pub what: &'static str,
    /// The environment variable that sets the bound.
    pub var: &'static str,
    /// The bound when the variable is unset.
    pub default: u64,
}

impl Budget {
    /// The bound in force: the variable's value when it is a positive whole number (digits,
    /// optionally with `_` separators or a `K`/`M`/`G` suffix of powers of 1,024), else the
    /// default.
    pub fn limit(&self) -> u64 {
        std::env::var(self.var)
            .ok()
            .and_then(|v| parse_amount(&v))
            .unwrap_or(self.default)
    }

    /// The error for a reader that went past `limit`: "more than LIMIT WHAT", and the
    /// variable to raise.
    pub fn exceeded(&self, limit: u64) -> String {
        format!(
            "more than {limit} {what}, the limit; if the file is genuine, raise it with \
             {var}=<larger number>",
            what = self.what,
            var = self.var,
        )
    }

    /// The error for a size known at once: "FOUND WHAT, more than the limit of LIMIT", and the
    /// variable to raise.
    pub fn exceeded_by(&self, found: u64, limit: u64) -> String {
        format!(
            "{found} {what}, more than the limit of {limit}; if the file is genuine, raise it \
             with {var}=<larger number>",
            what = self.what,
            var = self.var,
        )
    }
}

/// `123`, `1_000`, `64K`, `512M`, `4G` (powers of 1,024); `None` for anything else or 0.
fn parse_amount(text: &str) -> Option<u64> {
    let t = text.trim().replace('_', "");
    let (digits, scale) = match t.chars().last()? {
        'k' | 'K' => (&t[..t.len() - 1], 1u64 << 10),
        'm' | 'M' => (&t[..t.len() - 1], 1 << 20),
        'g' | 'G' => (&t[..t.len() - 1], 1 << 30),
        _ => (t.as_str(), 1),
    };
    let n: u64 = digits.parse().ok()?;
    n.checked_mul(scale).filter(|&v| v > 0)
}

/// Objects a flight-recorder pickle may hold, counting every value a shared reference expands
/// to: a dump of PyTorch's default 2,000 entries holds about 0.4 million, and a 287-byte pickle
/// of nested shared references expands to 2^22 values in 1.3 GB without a bound.
pub const PICKLE_OBJECTS: Budget = Budget {
    what: "objects in the pickle (shared references counted each time they are used)",
    var: "DDP_PROBE_MAX_PICKLE_OBJECTS",
    default: 4 << 20,
};

/// Bytes of text and bytes a flight-recorder pickle may expand to.
pub const PICKLE_BYTES: Budget = Budget {
    what: "bytes of strings in the pickle (shared references counted each time they are used)",
    var: "DDP_PROBE_MAX_PICKLE_BYTES",
    default: 512 << 20,
};

/// Nesting of a flight-recorder pickle (real dumps nest 6 levels; each level is a frame of
/// the converting recursion, so the variable is capped at 10,000).
pub const PICKLE_DEPTH: Budget = Budget {
    what: "levels of nesting in the pickle (or a cycle)",
    var: "DDP_PROBE_MAX_PICKLE_DEPTH",
    default: 100,
};

/// Size of one flight-recorder dump file.
pub const FLIGHT_RECORDER_FILE_BYTES: Budget = Budget {
    what: "bytes in the flight-recorder dump file",
    var: "DDP_PROBE_MAX_DUMP_BYTES",
    default: 256 << 20,
};

/// Length of one line of a ddp-probe trace file (real lines are under 1 KiB; a header with a
/// long command line a few KiB).
pub const TRACE_LINE_BYTES: Budget = Budget {
    what: "bytes in one line of the trace",
    var: "DDP_PROBE_MAX_LINE_BYTES",
    default: 16 << 20,
};

/// Size of one event of a PyTorch profiler trace (or of one of its other top-level members),
/// strings included: real events are under a few KiB, stacks and shapes included.
pub const PROFILER_EVENT_BYTES: Budget = Budget {
    what: "bytes in one event of the profiler trace",
    var: "DDP_PROBE_MAX_EVENT_BYTES",
    default: 16 << 20,
};

/// Size of a PyTorch profiler trace once decompressed.
pub const PROFILER_TRACE_BYTES: Budget = Budget {
    what: "bytes in the profiler trace (decompressed)",
    var: "DDP_PROBE_MAX_TRACE_BYTES",
    default: 4 << 30,
};

/// Events of one PyTorch profiler trace (a busy 8-GPU step traces a few hundred thousand).
pub const PROFILER_EVENTS: Budget = Budget {
    what: "events in the profiler trace",
    var: "DDP_PROBE_MAX_EVENTS",
    default: 20_000_000,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_read_like_a_person_writes_them() {
        assert_eq!(parse_amount("123"), Some(123));
        assert_eq!(parse_amount(" 1_000 "), Some(1000));
        assert_eq!(parse_amount("64K"), Some(65536));
        assert_eq!(parse_amount("2g"), Some(2 << 30));
        assert_eq!(parse_amount("0"), None);
        assert_eq!(parse_amount("-5"), None);
        assert_eq!(parse_amount("lots"), None);
        assert_eq!(parse_amount("99999999999999999999G"), None);
    }

    #[test]
    fn the_error_names_what_how_much_and_the_variable() {
        let e = PICKLE_OBJECTS.exceeded(4194304);
        assert!(
            e.starts_with("more than 4194304 objects in the pickle"),
            "{e}"
        );
        assert!(
            e.contains("DDP_PROBE_MAX_PICKLE_OBJECTS=<larger number>"),
            "{e}"
        );
        let e = FLIGHT_RECORDER_FILE_BYTES.exceeded_by(300, 256);
        assert!(
            e.starts_with(
                "300 bytes in the flight-recorder dump file, more than the limit of 256;"
            ),
            "{e}"
        );
        assert!(e.contains("DDP_PROBE_MAX_DUMP_BYTES="), "{e}");
    }
}
