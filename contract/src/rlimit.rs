//! The process's open-file limit: raised from the soft to the hard limit at start, as
//! torchrun's and most servers' launchers do, so that the default soft limit of 1,024 (common on
//! Linux) does not cap a rank that holds many peer connections, shared-memory rings, log files and
//! checkpoints. Children inherit it.

/// Raises this process's soft limit of open files to its hard limit (at most 1,048,576) and
/// returns the soft limit in force afterwards (the old one when it cannot be raised; 1,024 when
/// it cannot even be read).
pub fn raise_open_file_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid rlimit for getrlimit and setrlimit to read and write.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 1024;
        }
        let want = lim.rlim_max.min(1 << 20);
        if lim.rlim_cur < want {
            let raised = libc::rlimit {
                rlim_cur: want,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim.rlim_cur = want;
            }
        }
    }
    lim.rlim_cur
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_ends_at_the_hard_limit() {
        let after = raise_open_file_limit();
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: as above.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
        assert_eq!(lim.rlim_cur, after);
        assert_eq!(after, lim.rlim_max.min(1 << 20));
    }
}
