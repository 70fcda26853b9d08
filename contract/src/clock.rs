//! The timestamp source of the trace format.
//!
//! Every timestamp in a trace is a `u64` count of nanoseconds since the Unix
//! epoch on the recording rank's own clock (clock domain `"unix_ns"`). Reading
//! the realtime clock for every span would make spans jump when NTP steps the
//! clock, so [`now_ns`] reads the monotonic clock and adds it to a realtime
//! anchor taken once per process, on first use.

use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// The anchor pairing one monotonic reading with one realtime reading.
struct Anchor {
    instant: Instant,
    unix_ns: u64,
}

static ANCHOR: OnceLock<Anchor> = OnceLock::new();

fn anchor() -> &'static Anchor {
    ANCHOR.get_or_init(|| {
        let instant = Instant::now();
        let unix_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        Anchor { instant, unix_ns }
    })
}

/// Nanoseconds since the Unix epoch, monotonic within the process.
///
/// The first call anchors the monotonic clock to the realtime clock; later
/// calls never go backwards, even if the system clock is stepped.
#[inline]
pub fn now_ns() -> u64 {
    to_unix_ns(Instant::now())
}

/// Converts an [`Instant`] taken in this process to the trace clock.
///
/// Instants taken before the anchor (the first call into this module) are
/// placed before it correctly; the result saturates at 0 and `u64::MAX`.
pub fn to_unix_ns(t: Instant) -> u64 {
    let a = anchor();
    if t >= a.instant {
        let d = u64::try_from(t.duration_since(a.instant).as_nanos()).unwrap_or(u64::MAX);
        a.unix_ns.saturating_add(d)
    } else {
        let d = u64::try_from(a.instant.duration_since(t).as_nanos()).unwrap_or(u64::MAX);
        a.unix_ns.saturating_sub(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_and_near_realtime() {
        let a = now_ns();
        let b = now_ns();
        assert!(b >= a);
        let real = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        // Within a second of the realtime clock.
        assert!(real.abs_diff(b) < 1_000_000_000, "{real} vs {b}");
    }

    #[test]
    fn instants_before_the_anchor() {
        let early = Instant::now();
        let anchored = now_ns();
        let t = to_unix_ns(early);
        assert!(t <= anchored);
    }
}
