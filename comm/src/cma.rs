//! Direct reads from and writes to a peer process's memory (cross-memory
//! attach, `process_vm_readv(2)` and `process_vm_writev(2)`), the basis of
//! the direct-read algorithms between ranks on one host: a rank copies a
//! peer's data straight from the peer's buffer into its own (or from its
//! own into the peer's), one copy where a shared-memory ring needs two
//! (into the ring, out of the ring).
//!
//! The kernel allows it between processes of the same user unless a
//! security policy (Yama's `ptrace_scope`, a seccomp filter) forbids it; the
//! group probes both once at creation ([`crate::ProcessGroup::new`]) and
//! uses the direct-read algorithms only when every rank could read every
//! peer (and writes only when every rank could also write every peer). A
//! read or write of an address the peer does not map fails with `EFAULT`
//! and never touches memory of this process outside the given slice.

use std::io;

/// Copies `dst.len()` bytes from address `remote` of process `pid` into
/// `dst`, looping over partial transfers.
pub(crate) fn read(pid: i32, remote: u64, dst: &mut [u8]) -> io::Result<()> {
    let len = dst.len();
    transfer(len, "process_vm_readv", |done| {
        let local = libc::iovec {
            iov_base: dst[done..].as_mut_ptr().cast::<libc::c_void>(),
            iov_len: len - done,
        };
        let from = iovec_at(remote, done, len);
        // SAFETY: `local` describes the writable slice `dst[done..]`; the
        // remote range is only read by the kernel, which checks it against
        // the other process's mappings (EFAULT otherwise).
        unsafe { libc::process_vm_readv(pid, &local, 1, &from, 1, 0) }
    })
}

/// Copies `src` to address `remote` of process `pid`, looping over partial
/// transfers.
pub(crate) fn write(pid: i32, remote: u64, src: &[u8]) -> io::Result<()> {
    let len = src.len();
    transfer(len, "process_vm_writev", |done| {
        let local = libc::iovec {
            iov_base: src[done..].as_ptr().cast_mut().cast::<libc::c_void>(),
            iov_len: len - done,
        };
        let to = iovec_at(remote, done, len);
        // SAFETY: `local` describes the readable slice `src[done..]`, which
        // the kernel only reads; the remote range is checked by the kernel
        // against the other process's mappings (EFAULT otherwise).
        unsafe { libc::process_vm_writev(pid, &local, 1, &to, 1, 0) }
    })
}

/// The part of the peer's range `remote..remote + len` after its first
/// `done` bytes.
fn iovec_at(remote: u64, done: usize, len: usize) -> libc::iovec {
    libc::iovec {
        iov_base: (remote as usize).wrapping_add(done) as *mut libc::c_void,
        iov_len: len - done,
    }
}

/// Calls `step(done)`, one `name` call moving what is left after `done`
/// bytes, until `len` bytes have moved; retries on `EINTR`.
fn transfer(len: usize, name: &str, mut step: impl FnMut(usize) -> isize) -> io::Result<()> {
    let mut done = 0usize;
    while done < len {
        let n = step(done);
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("{name} transferred nothing"),
            ));
        }
        done += n as usize;
    }
    Ok(())
}

/// This process's id, as peers name it in [`read`] and [`write`].
pub(crate) fn own_pid() -> i32 {
    std::process::id() as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_memory_and_refuses_a_bad_address() {
        let src: Vec<u8> = (0..=255).collect();
        let mut dst = vec![0u8; 256];
        read(own_pid(), src.as_ptr() as u64, &mut dst).unwrap();
        assert_eq!(src, dst);
        assert!(read(own_pid(), 8, &mut dst[..16]).is_err());
        read(own_pid(), 8, &mut []).unwrap();
    }

    #[test]
    fn writes_own_memory_and_refuses_a_bad_address() {
        let src: Vec<u8> = (0..=255).rev().collect();
        let mut dst = vec![0u8; 256];
        write(own_pid(), dst.as_mut_ptr() as u64, &src).unwrap();
        assert_eq!(std::hint::black_box(&dst), &src);
        assert!(write(own_pid(), 8, &src[..16]).is_err());
        write(own_pid(), 8, &[]).unwrap();
    }
}
