//! The launcher's own handling of Ctrl-C (SIGINT), SIGTERM and SIGHUP.
//!
//! While a launch runs, these signals no longer kill the launcher: the handler
//! only counts them, and the launch loop notices and stops the ranks in order.
//! Several launches in one process share the handlers; the previous handlers
//! come back when the last one ends.

use std::io;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::Mutex;

/// The signals the launcher handles.
const HANDLED: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

static RECEIVED: AtomicUsize = AtomicUsize::new(0);
static LAST_SIGNAL: AtomicI32 = AtomicI32::new(0);

/// How many launches hold the handlers, and the handlers they replaced.
static INSTALLED: Mutex<(usize, Vec<(libc::c_int, libc::sigaction)>)> = Mutex::new((0, Vec::new()));

extern "C" fn on_signal(signal: libc::c_int) {
    // Only atomics: async-signal-safe.
    LAST_SIGNAL.store(signal, Ordering::SeqCst);
    RECEIVED.fetch_add(1, Ordering::SeqCst);
}

/// Keeps the handlers installed while it lives, and reports signals that
/// arrived since it was created.
#[derive(Debug)]
pub(crate) struct SignalGuard {
    seen: usize,
}

impl SignalGuard {
    /// Installs the handlers (or joins the launches that already did).
    pub(crate) fn install() -> io::Result<SignalGuard> {
        let mut installed = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
        if installed.0 == 0 {
            let mut previous = Vec::new();
            for &signal in &HANDLED {
                // SAFETY: an all-zero sigaction is a valid starting value; the
                // handler is an `extern "C" fn(c_int)` that only touches atomics.
                let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
                action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
                action.sa_flags = libc::SA_RESTART;
                // SAFETY: `action.sa_mask` is a valid sigset_t to initialise.
                unsafe { libc::sigemptyset(&mut action.sa_mask) };
                // SAFETY: as above.
                let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
                // SAFETY: both pointers are to valid sigaction structs.
                if unsafe { libc::sigaction(signal, &action, &mut old) } != 0 {
                    let err = io::Error::last_os_error();
                    restore(&previous);
                    return Err(err);
                }
                previous.push((signal, old));
            }
            installed.1 = previous;
        }
        installed.0 += 1;
        Ok(SignalGuard {
            seen: RECEIVED.load(Ordering::SeqCst),
        })
    }

    /// The last signal received since the previous call, if any.
    pub(crate) fn take(&mut self) -> Option<i32> {
        let now = RECEIVED.load(Ordering::SeqCst);
        if now == self.seen {
            return None;
        }
        self.seen = now;
        Some(LAST_SIGNAL.load(Ordering::SeqCst))
    }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        let mut installed = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
        installed.0 = installed.0.saturating_sub(1);
        if installed.0 == 0 {
            let previous = std::mem::take(&mut installed.1);
            restore(&previous);
        }
    }
}

fn restore(previous: &[(libc::c_int, libc::sigaction)]) {
    for (signal, old) in previous {
        // SAFETY: `old` was filled in by sigaction for this signal.
        unsafe {
            libc::sigaction(*signal, old, std::ptr::null_mut());
        }
    }
}
