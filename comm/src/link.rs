//! One rank's connection to one peer ([`Peer`]): the TCP socket (control,
//! liveness, and data when no shared memory is used) and the optional pair of
//! shared-memory rings, behind non-blocking primitives that the progress
//! engine drives.

use std::io;
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};

use crate::shm::{ShmRx, ShmTx};
use crate::wire::HEADER_BYTES;

/// Bytes of the buffer that TCP data is read into before it is reduced.
const TCP_SCRATCH_BYTES: usize = 256 << 10;

/// Why a link operation failed.
#[derive(Debug)]
pub(crate) enum LinkError {
    /// The peer closed the connection (EOF, reset, broken pipe).
    Closed,
    /// Another socket error.
    Io(io::Error),
    /// The peer sent something that breaks the protocol.
    Corrupt(String),
}

/// The two shared-memory rings to one peer.
pub(crate) struct ShmPair {
    /// Ring this rank writes and the peer reads.
    pub tx: ShmTx,
    /// Ring the peer writes and this rank reads.
    pub rx: ShmRx,
}

/// A connected peer.
pub(crate) struct Peer {
    /// The peer's rank.
    pub rank: usize,
    /// TCP connection (non-blocking once the group is built).
    pub stream: TcpStream,
    /// Shared-memory rings, when the peer is on this host and shm is on.
    pub shm: Option<ShmPair>,
    /// Set once EOF was seen on the control connection of a shm peer.
    pub closed: bool,
    scratch: Vec<u64>,
    carry: usize,
}

fn is_closed_error(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ECONNRESET)
            | Some(libc::EPIPE)
            | Some(libc::ENOTCONN)
            | Some(libc::ECONNABORTED)
    )
}

fn classify(e: io::Error) -> LinkError {
    if is_closed_error(&e) {
        LinkError::Closed
    } else {
        LinkError::Io(e)
    }
}

/// `send(2)` without blocking and without SIGPIPE; `Ok(0)` when the socket
/// buffer is full.
fn sys_send(fd: RawFd, data: &[u8]) -> Result<usize, LinkError> {
    loop {
        // SAFETY: `data` is a valid readable buffer of `data.len()` bytes.
        let r = unsafe {
            libc::send(
                fd,
                data.as_ptr().cast::<libc::c_void>(),
                data.len(),
                libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
            )
        };
        if r >= 0 {
            return Ok(r as usize);
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::WouldBlock => return Ok(0),
            io::ErrorKind::Interrupted => continue,
            _ => return Err(classify(e)),
        }
    }
}

/// `recv(2)` without blocking; `Ok(0)` when nothing is there,
/// `Err(Closed)` on EOF. `buf` must not be empty.
fn sys_recv(fd: RawFd, buf: &mut [u8], flags: libc::c_int) -> Result<usize, LinkError> {
    loop {
        // SAFETY: `buf` is a valid writable buffer of `buf.len()` bytes.
        let r = unsafe {
            libc::recv(
                fd,
                buf.as_mut_ptr().cast::<libc::c_void>(),
                buf.len(),
                flags | libc::MSG_DONTWAIT,
            )
        };
        if r > 0 {
            return Ok(r as usize);
        }
        if r == 0 {
            return Err(LinkError::Closed);
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::WouldBlock => return Ok(0),
            io::ErrorKind::Interrupted => continue,
            _ => return Err(classify(e)),
        }
    }
}

impl Peer {
    /// Wraps a connected, handshaken stream.
    pub(crate) fn new(rank: usize, stream: TcpStream) -> Peer {
        Peer {
            rank,
            stream,
            shm: None,
            closed: false,
            scratch: Vec::new(),
            carry: 0,
        }
    }

    /// The socket's descriptor (for `poll`).
    pub(crate) fn fd(&self) -> RawFd {
        self.stream.as_raw_fd()
    }

    /// Sends the rest of a header starting at `*pos`; returns whether it is
    /// complete.
    pub(crate) fn try_send_header(
        &mut self,
        hdr: &[u8; HEADER_BYTES],
        pos: &mut usize,
    ) -> Result<bool, LinkError> {
        if let Some(shm) = &mut self.shm {
            return shm.tx.try_write_header(hdr).map_err(LinkError::Corrupt);
        }
        while *pos < HEADER_BYTES {
            let n = sys_send(self.fd(), &hdr[*pos..])?;
            if n == 0 {
                return Ok(false);
            }
            *pos += n;
        }
        Ok(true)
    }

    /// Receives the rest of a header into `hdr[*pos..]`; returns whether it
    /// is complete.
    pub(crate) fn try_recv_header(
        &mut self,
        hdr: &mut [u8; HEADER_BYTES],
        pos: &mut usize,
    ) -> Result<bool, LinkError> {
        if let Some(shm) = &mut self.shm {
            return shm.rx.try_read_header(hdr).map_err(LinkError::Corrupt);
        }
        while *pos < HEADER_BYTES {
            let n = sys_recv(self.fd(), &mut hdr[*pos..], 0)?;
            if n == 0 {
                return Ok(false);
            }
            *pos += n;
        }
        Ok(true)
    }

    /// Sends a prefix of `data`; returns the number of bytes taken.
    pub(crate) fn try_send(&mut self, data: &[u8], unit: usize) -> Result<usize, LinkError> {
        if data.is_empty() {
            return Ok(0);
        }
        match &mut self.shm {
            Some(shm) => shm.tx.try_write(data, unit).map_err(LinkError::Corrupt),
            None => sys_send(self.fd(), data),
        }
    }

    /// Receives into a prefix of `dst`; returns the number of bytes filled.
    pub(crate) fn try_recv_copy(
        &mut self,
        dst: &mut [u8],
        unit: usize,
    ) -> Result<usize, LinkError> {
        if dst.is_empty() {
            return Ok(0);
        }
        match &mut self.shm {
            Some(shm) => {
                let mut done = 0usize;
                shm.rx
                    .try_read(dst.len(), unit, &mut |s| {
                        dst[done..done + s.len()].copy_from_slice(s);
                        done += s.len();
                    })
                    .map_err(LinkError::Corrupt)
            }
            None => sys_recv(self.fd(), dst, 0),
        }
    }

    /// Receives bytes and combines them into a prefix of `dst` with
    /// `f(dst_part, received)`, in whole `unit`s; returns the number of
    /// bytes of `dst` completed.
    pub(crate) fn try_recv_reduce(
        &mut self,
        dst: &mut [u8],
        unit: usize,
        f: &mut dyn FnMut(&mut [u8], &[u8]),
    ) -> Result<usize, LinkError> {
        if dst.is_empty() {
            return Ok(0);
        }
        if let Some(shm) = &mut self.shm {
            let mut done = 0usize;
            return shm
                .rx
                .try_read(dst.len(), unit, &mut |s| {
                    f(&mut dst[done..done + s.len()], s);
                    done += s.len();
                })
                .map_err(LinkError::Corrupt);
        }
        if self.scratch.is_empty() {
            self.scratch = vec![0u64; TCP_SCRATCH_BYTES / 8];
        }
        let fd = self.fd();
        // SAFETY: u64 has no padding and any byte pattern is valid.
        let scratch: &mut [u8] = unsafe {
            std::slice::from_raw_parts_mut(
                self.scratch.as_mut_ptr().cast::<u8>(),
                self.scratch.len() * 8,
            )
        };
        let carry = self.carry;
        let want = (scratch.len() - carry).min(dst.len().saturating_sub(carry));
        if want == 0 {
            return Err(LinkError::Corrupt(
                "partial element left over at the end of a message".into(),
            ));
        }
        let got = sys_recv(fd, &mut scratch[carry..carry + want], 0)?;
        let total = carry + got;
        let whole = total / unit * unit;
        if whole > 0 {
            f(&mut dst[..whole], &scratch[..whole]);
            scratch.copy_within(whole..total, 0);
        }
        self.carry = total - whole;
        Ok(whole)
    }

    /// For a shared-memory peer: looks at the otherwise idle control
    /// connection and notes EOF in `closed`.
    pub(crate) fn check_control(&mut self) -> Result<(), LinkError> {
        if self.closed {
            return Ok(());
        }
        let mut b = [0u8; 1];
        match sys_recv(self.fd(), &mut b, libc::MSG_PEEK) {
            Ok(0) => Ok(()),
            Ok(_) => Err(LinkError::Corrupt(
                "unexpected data on the control connection of a shared-memory peer".into(),
            )),
            Err(LinkError::Closed) => {
                self.closed = true;
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
}
