//! The group reaper: a small process forked by the launcher that kills every rank's process
//! group when the launcher dies without stopping them (SIGKILL, a crash, the OOM killer).
//!
//! Each rank runs in its own process group and dies with the launcher (`PR_SET_PDEATHSIG`),
//! but that signal reaches the rank's own process only: a wrapper that does not `exec`
//! (`sh train.sh` running `python train.py`) leaves its child orphaned and running. The
//! reaper holds one end of a socket pair; the launcher sends it each rank's process group as
//! the rank starts and the group's end once it is stopped, and a clean end when the launch is
//! over. When the launcher's end closes without the clean end, the reaper sends SIGKILL to
//! every group still listed. Between fork and exit the reaper calls only async-signal-safe
//! functions (`read`, `kill`, `sigaction`, `_exit`) on a fixed array, as a fork of a
//! multi-threaded process must.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Most process groups the reaper keeps (ranks of one node; more are not watched).
const MAX_GROUPS: usize = 4096;

/// The launcher's end of the reaper.
pub(crate) struct Reaper {
    socket: OwnedFd,
    pid: libc::pid_t,
}

impl Reaper {
    /// Forks the reaper.
    pub(crate) fn start() -> io::Result<Reaper> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` is a valid array of two ints for socketpair to fill.
        if unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        } != 0
        {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: socketpair returned two fresh descriptors owned by nobody else.
        let (ours, theirs) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: the child only calls async-signal-safe functions (see `watch`) and exits
        // with `_exit`, never returning into Rust code that could take a lock.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            // SAFETY: in the child: `theirs` is a valid descriptor; `watch` never returns.
            unsafe {
                libc::close(ours.as_raw_fd());
                watch(theirs.as_raw_fd())
            }
        }
        drop(theirs);
        Ok(Reaper { socket: ours, pid })
    }

    /// Watches the process group `pgid` (a rank just started).
    pub(crate) fn watch_group(&self, pgid: u32) {
        if let Ok(g) = i32::try_from(pgid) {
            if g > 1 {
                self.send(g);
            }
        }
    }

    /// Stops watching `pgid` (its rank was stopped and reaped).
    pub(crate) fn forget_group(&self, pgid: u32) {
        if let Ok(g) = i32::try_from(pgid) {
            if g > 1 {
                self.send(-g);
            }
        }
    }

    fn send(&self, value: i32) {
        let bytes = value.to_le_bytes();
        // SAFETY: `bytes` is valid for its length; MSG_NOSIGNAL: a reaper that is gone is an
        // error here, not a SIGPIPE.
        unsafe {
            libc::send(
                self.socket.as_raw_fd(),
                bytes.as_ptr().cast(),
                bytes.len(),
                libc::MSG_NOSIGNAL,
            );
        }
    }
}

impl Drop for Reaper {
    /// A clean end: the reaper exits without killing, and is waited for.
    fn drop(&mut self) {
        self.send(0);
        // SAFETY: shutting down our own socket; waiting for our own child.
        unsafe {
            libc::shutdown(self.socket.as_raw_fd(), libc::SHUT_RDWR);
            let mut status = 0;
            libc::waitpid(self.pid, &mut status, 0);
        }
    }
}

/// The reaper's loop: reads 4-byte records (a group to watch, its negation to forget, 0 for a
/// clean end); at end of input without a clean end, kills every group watched.
///
/// # Safety
/// To be called in a freshly forked child only; it never returns.
unsafe fn watch(fd: libc::c_int) -> ! {
    // SAFETY: the caller is a freshly forked child; only async-signal-safe calls follow, on
    // memory of this frame.
    unsafe {
        for signal in [
            libc::SIGINT,
            libc::SIGTERM,
            libc::SIGHUP,
            libc::SIGQUIT,
            libc::SIGPIPE,
        ] {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = libc::SIG_IGN;
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
        let mut groups = [0 as libc::pid_t; MAX_GROUPS];
        let mut count = 0usize;
        let mut record = [0u8; 4];
        let mut have = 0usize;
        loop {
            let n = libc::read(fd, record.as_mut_ptr().add(have).cast(), 4 - have);
            if n < 0 && *libc::__errno_location() == libc::EINTR {
                continue;
            }
            if n <= 0 {
                break;
            }
            have += n as usize;
            if have < 4 {
                continue;
            }
            have = 0;
            let value = i32::from_le_bytes(record);
            if value == 0 {
                libc::_exit(0);
            } else if value > 0 {
                if count < MAX_GROUPS {
                    groups[count] = value;
                    count += 1;
                }
            } else if let Some(i) = groups[..count].iter().position(|&g| g == -value) {
                count -= 1;
                groups[i] = groups[count];
            }
        }
        // The launcher is gone without a clean end: nothing else will stop the ranks' trees.
        for &g in &groups[..count] {
            libc::kill(-g, libc::SIGKILL);
        }
        libc::_exit(0)
    }
}
