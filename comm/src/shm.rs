//! Shared-memory transport between two ranks on one host: a
//! single-producer/single-consumer byte ring in a file under `/dev/shm`,
//! mapped by both processes.
//!
//! # Layout of a ring file
//!
//! ```text
//! offset   0: u64 magic "DDPRING1", u32 version, u32 unused,
//!             u64 capacity, 16-byte nonce (written by the creator)
//! offset  64: head, AtomicU64: bytes ever written (producer only)
//! offset 128: tail, AtomicU64: bytes ever read (consumer only)
//! offset 256: data, `capacity` bytes, used modulo capacity
//! ```
//!
//! Head and tail live on separate cache lines. The producer publishes data
//! with a release store of `head`; the consumer frees space with a release
//! store of `tail`; each side reads the other's index with acquire loads and
//! caches it. Headers are written at 8-byte aligned stream positions and the
//! producer publishes payload in whole elements, so the consumer can hand
//! out aligned, whole-element slices straight from the mapping.
//!
//! The receiving rank creates the file (mode 0600, `O_EXCL`), the sending
//! rank opens it after being told the path and nonce over the TCP control
//! connection and checks the nonce; the creator unlinks it as soon as the
//! negotiation is over, so nothing stays behind in `/dev/shm`.
//!
//! # Doorbells
//!
//! Each rank also creates one [`Bell`] file (magic "DDPBELL1", nonce, a
//! futex word at offset 64 and a "sleeping" flag at offset 128) that its
//! same-host peers map. A rank with nothing to do announces that it is
//! going to sleep, checks its rings once more and then sleeps on the futex
//! word; a peer that publishes data into a ring the sleeper reads, or frees
//! space in a ring the sleeper writes, rings the bell (bumps the word and
//! wakes it). Fences on both sides make sure no wake-up is lost: either the
//! sleeper sees the new index, or the peer sees the flag.

use std::fs::OpenOptions;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::wire::HEADER_BYTES;

const RING_MAGIC: u64 = u64::from_le_bytes(*b"DDPRING1");
const RING_VERSION: u32 = 1;
const HEAD_OFF: usize = 64;
const TAIL_OFF: usize = 128;
const DATA_OFF: usize = 256;

/// An owned `mmap` of a ring file.
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is owned by exactly one ring end; the memory it shares
// with the other process is only accessed through the ring protocol
// (atomics for the indices, disjoint data regions).
unsafe impl Send for Mapping {}

impl Mapping {
    fn map(file: &std::fs::File, len: usize) -> io::Result<Mapping> {
        // SAFETY: mapping a regular file we opened read-write, of at least
        // `len` bytes; the result is checked for MAP_FAILED.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping {
            ptr: ptr.cast::<u8>(),
            len,
        })
    }

    fn atomic(&self, off: usize) -> &AtomicU64 {
        // SAFETY: `off` is HEAD_OFF or TAIL_OFF, 8-byte aligned (the mapping
        // is page aligned) and inside the mapping; the u64 there is only
        // ever accessed atomically by both processes.
        unsafe { &*self.ptr.add(off).cast::<AtomicU64>() }
    }

    fn data(&self) -> *mut u8 {
        // SAFETY: DATA_OFF is inside the mapping (len = DATA_OFF + capacity).
        unsafe { self.ptr.add(DATA_OFF) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` came from a successful mmap and no references
        // into the mapping outlive its owner.
        unsafe {
            libc::munmap(self.ptr.cast::<libc::c_void>(), self.len);
        }
    }
}

const BELL_MAGIC: u64 = u64::from_le_bytes(*b"DDPBELL1");
const BELL_BYTES: usize = 4096;
const BELL_SEQ_OFF: usize = 64;
const BELL_SLEEP_OFF: usize = 128;

/// A rank's doorbell: a futex word its peers bump after making progress
/// possible for it.
pub(crate) struct Bell {
    map: Mapping,
}

// SAFETY: a bell's memory is only ever accessed through the atomics `seq`
// and `sleeping` (and the futex syscall on `seq`), so sharing a `&Bell`
// between threads is as safe as sharing the atomics themselves.
unsafe impl Sync for Bell {}

impl Bell {
    fn seq(&self) -> &AtomicU32 {
        // SAFETY: offset 64 is 4-byte aligned and inside the 4 KiB mapping;
        // the word is only accessed atomically (and by the futex syscall).
        unsafe { &*self.map.ptr.add(BELL_SEQ_OFF).cast::<AtomicU32>() }
    }

    fn sleeping(&self) -> &AtomicU32 {
        // SAFETY: as for `seq`, at offset 128.
        unsafe { &*self.map.ptr.add(BELL_SLEEP_OFF).cast::<AtomicU32>() }
    }

    /// Creates this rank's bell at `path`.
    pub(crate) fn create(path: &Path, nonce: [u8; 16]) -> io::Result<Bell> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)?;
        file.set_len(BELL_BYTES as u64)?;
        let map = Mapping::map(&file, BELL_BYTES)?;
        // SAFETY: the first 24 bytes of the fresh mapping are the header;
        // nobody else has the file open yet.
        unsafe {
            std::ptr::copy_nonoverlapping(BELL_MAGIC.to_le_bytes().as_ptr(), map.ptr, 8);
            std::ptr::copy_nonoverlapping(nonce.as_ptr(), map.ptr.add(8), 16);
        }
        Ok(Bell { map })
    }

    /// Opens a peer's bell and checks magic and nonce.
    pub(crate) fn open(path: &Path, nonce: [u8; 16]) -> Result<Bell, String> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| format!("opening {}: {e}", path.display()))?;
        let len = file
            .metadata()
            .map_err(|e| format!("reading the size of {}: {e}", path.display()))?
            .len();
        if len != BELL_BYTES as u64 {
            return Err(format!("{} has the wrong size", path.display()));
        }
        let map = Mapping::map(&file, BELL_BYTES)
            .map_err(|e| format!("mapping {}: {e}", path.display()))?;
        let mut header = [0u8; 24];
        // SAFETY: the mapping has 4 KiB; the creator wrote the header before
        // sending us the path.
        unsafe { std::ptr::copy_nonoverlapping(map.ptr, header.as_mut_ptr(), 24) };
        if header[..8] != BELL_MAGIC.to_le_bytes() || header[8..24] != nonce {
            return Err(format!("{} is not the peer's doorbell", path.display()));
        }
        Ok(Bell { map })
    }

    /// Wakes the bell's owner if it announced that it sleeps. Called after
    /// publishing a ring index.
    pub(crate) fn ring(&self) {
        fence(Ordering::SeqCst);
        if self.sleeping().load(Ordering::Relaxed) != 0 {
            self.seq().fetch_add(1, Ordering::Release);
            futex_wake(self.seq());
        }
    }

    /// First half of going to sleep: returns the word to sleep on and
    /// announces the sleep. The caller must check for progress once more
    /// before calling [`Bell::sleep`].
    pub(crate) fn prepare(&self) -> u32 {
        let s = self.seq().load(Ordering::Acquire);
        self.sleeping().store(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        s
    }

    /// Sleeps until the bell rings (the word moves on from `seen`) or
    /// `timeout` passes, then withdraws the announcement. Returns false on
    /// timeout.
    pub(crate) fn sleep(&self, seen: u32, timeout: Duration) -> bool {
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: the futex word lives in a shared mapping that outlives the
        // call; FUTEX_WAIT (without the private flag) only reads it and
        // sleeps while it still equals `seen`.
        let r = unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.seq().as_ptr(),
                libc::FUTEX_WAIT,
                seen,
                &ts as *const libc::timespec,
                std::ptr::null::<u32>(),
                0u32,
            )
        };
        let timed_out =
            r != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ETIMEDOUT);
        self.cancel();
        !timed_out
    }

    /// Withdraws a sleep announcement.
    pub(crate) fn cancel(&self) {
        self.sleeping().store(0, Ordering::Relaxed);
    }
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE on a valid, shared, 4-byte aligned word.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            i32::MAX,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}

/// Rounds a requested ring size to what the ring really uses: a multiple of
/// 4 KiB, at least 64 KiB.
pub(crate) fn ring_capacity(requested: usize) -> usize {
    requested.clamp(64 << 10, 1 << 30).div_ceil(4096) * 4096
}

/// Creates a ring file at `path` and maps it as the consuming end.
pub(crate) fn create_ring(path: &Path, capacity: usize, nonce: [u8; 16]) -> io::Result<ShmRx> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.set_len((DATA_OFF + capacity) as u64)?;
    let map = Mapping::map(&file, DATA_OFF + capacity)?;
    // SAFETY: the first 40 bytes of the fresh mapping belong to the header;
    // nobody else has the file open yet.
    unsafe {
        let p = map.ptr;
        std::ptr::copy_nonoverlapping(RING_MAGIC.to_le_bytes().as_ptr(), p, 8);
        std::ptr::copy_nonoverlapping(RING_VERSION.to_le_bytes().as_ptr(), p.add(8), 4);
        std::ptr::copy_nonoverlapping((capacity as u64).to_le_bytes().as_ptr(), p.add(16), 8);
        std::ptr::copy_nonoverlapping(nonce.as_ptr(), p.add(24), 16);
    }
    Ok(ShmRx {
        map,
        cap: capacity as u64,
        tail: 0,
        cached_head: 0,
        peer_bell: None,
    })
}

/// Opens a ring created by the peer and maps it as the producing end,
/// checking magic, version, capacity and nonce.
pub(crate) fn open_ring(path: &Path, capacity: usize, nonce: [u8; 16]) -> Result<ShmTx, String> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| format!("opening {}: {e}", path.display()))?;
    let len = file
        .metadata()
        .map_err(|e| format!("reading the size of {}: {e}", path.display()))?
        .len();
    if len != (DATA_OFF + capacity) as u64 {
        return Err(format!(
            "{} has {len} bytes, expected {}",
            path.display(),
            DATA_OFF + capacity
        ));
    }
    let map = Mapping::map(&file, DATA_OFF + capacity)
        .map_err(|e| format!("mapping {}: {e}", path.display()))?;
    let mut header = [0u8; 40];
    // SAFETY: the mapping has at least DATA_OFF (> 40) bytes; the creator
    // finished writing the header before it sent us the path.
    unsafe { std::ptr::copy_nonoverlapping(map.ptr, header.as_mut_ptr(), 40) };
    let magic = u64::from_le_bytes(header[0..8].try_into().unwrap_or([0; 8]));
    let version = u32::from_le_bytes(header[8..12].try_into().unwrap_or([0; 4]));
    let cap = u64::from_le_bytes(header[16..24].try_into().unwrap_or([0; 8]));
    if magic != RING_MAGIC
        || version != RING_VERSION
        || cap != capacity as u64
        || header[24..40] != nonce
    {
        return Err(format!(
            "{} is not the ring the peer created (different shared-memory namespace?)",
            path.display()
        ));
    }
    let tail = map.atomic(TAIL_OFF).load(Ordering::Acquire);
    let head = map.atomic(HEAD_OFF).load(Ordering::Acquire);
    if head != 0 || tail != 0 {
        return Err(format!("{} is already in use", path.display()));
    }
    Ok(ShmTx {
        map,
        cap: capacity as u64,
        head: 0,
        cached_tail: 0,
        peer_bell: None,
    })
}

/// Padding that puts a header at an 8-byte aligned stream position.
fn header_pad(pos: u64) -> u64 {
    (8 - pos % 8) % 8
}

/// The producing end of a ring.
pub(crate) struct ShmTx {
    map: Mapping,
    cap: u64,
    head: u64,
    cached_tail: u64,
    /// The consumer's doorbell, rung after publishing data.
    pub peer_bell: Option<Arc<Bell>>,
}

impl ShmTx {
    /// What a hostile consumer could do to the shared mapping (for the fuzz target
    /// `shm_ring`): set the tail index.
    pub(crate) fn as_hostile_peer(&self, tail: u64) {
        self.map.atomic(TAIL_OFF).store(tail, Ordering::Release);
    }

    /// Free bytes, refreshing the cached tail when fewer than `want` appear
    /// free.
    fn free(&mut self, want: u64) -> Result<u64, String> {
        let free = self.cap - (self.head - self.cached_tail);
        if free >= want {
            return Ok(free);
        }
        let t = self.map.atomic(TAIL_OFF).load(Ordering::Acquire);
        if t < self.cached_tail || t > self.head {
            return Err(format!(
                "shared-memory ring corrupted (tail {t}, head {})",
                self.head
            ));
        }
        self.cached_tail = t;
        Ok(self.cap - (self.head - t))
    }

    /// Copies `src` into the ring at stream position `pos` (wrapping).
    fn put(&mut self, pos: u64, src: &[u8]) {
        let off = (pos % self.cap) as usize;
        let first = src.len().min(self.cap as usize - off);
        // SAFETY: [off, off+first) and [0, len-first) lie inside the data
        // area; they are free space (between head and tail + cap), which the
        // consumer does not read until head is published.
        unsafe {
            std::ptr::copy_nonoverlapping(src.as_ptr(), self.map.data().add(off), first);
            std::ptr::copy_nonoverlapping(
                src.as_ptr().add(first),
                self.map.data(),
                src.len() - first,
            );
        }
    }

    fn publish(&mut self, n: u64) {
        self.head += n;
        self.map
            .atomic(HEAD_OFF)
            .store(self.head, Ordering::Release);
        if let Some(b) = &self.peer_bell {
            b.ring();
        }
    }

    /// Writes as much of `data` as fits, in whole `unit`s; returns the
    /// number of bytes written.
    pub(crate) fn try_write(&mut self, data: &[u8], unit: usize) -> Result<usize, String> {
        if data.is_empty() {
            return Ok(0);
        }
        let free = self.free(data.len() as u64)? as usize;
        let n = free.min(data.len());
        let n = if n >= unit {
            n / unit * unit
        } else if n == data.len() {
            n
        } else {
            0
        };
        if n > 0 {
            self.put(self.head, &data[..n]);
            self.publish(n as u64);
        }
        Ok(n)
    }

    /// Writes a message header at the next aligned position if there is
    /// room; returns whether it was written.
    pub(crate) fn try_write_header(&mut self, hdr: &[u8; HEADER_BYTES]) -> Result<bool, String> {
        let pad = header_pad(self.head);
        let need = pad + HEADER_BYTES as u64;
        if self.free(need)? < need {
            return Ok(false);
        }
        self.put(self.head + pad, hdr);
        self.publish(need);
        Ok(true)
    }
}

/// The consuming end of a ring.
pub(crate) struct ShmRx {
    map: Mapping,
    cap: u64,
    tail: u64,
    cached_head: u64,
    /// The producer's doorbell, rung after freeing space.
    pub peer_bell: Option<Arc<Bell>>,
}

impl ShmRx {
    /// What a hostile producer could do to the shared mapping (for the fuzz target
    /// `shm_ring`): set the head index and write `bytes` into the data area at `off`.
    pub(crate) fn as_hostile_peer(&self, head: Option<u64>, off: usize, bytes: &[u8]) {
        if let Some(h) = head {
            self.map.atomic(HEAD_OFF).store(h, Ordering::Release);
        }
        let off = off % self.cap as usize;
        let n = bytes.len().min(self.cap as usize - off);
        // SAFETY: [off, off + n) lies inside the data area of the mapping.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.map.data().add(off), n) };
    }

    /// Readable bytes, refreshing the cached head when fewer than `want`
    /// appear readable.
    fn available(&mut self, want: u64) -> Result<u64, String> {
        let avail = self.cached_head - self.tail;
        if avail >= want {
            return Ok(avail);
        }
        let h = self.map.atomic(HEAD_OFF).load(Ordering::Acquire);
        if h < self.cached_head || h - self.tail > self.cap {
            return Err(format!(
                "shared-memory ring corrupted (head {h}, tail {})",
                self.tail
            ));
        }
        self.cached_head = h;
        Ok(h - self.tail)
    }

    fn consume(&mut self, n: u64) {
        if n == 0 {
            return;
        }
        self.tail += n;
        self.map
            .atomic(TAIL_OFF)
            .store(self.tail, Ordering::Release);
        if let Some(b) = &self.peer_bell {
            b.ring();
        }
    }

    /// Hands up to `max` readable bytes to `f` as slices of whole `unit`s
    /// (aligned to `unit` in practice) and consumes them; returns the number
    /// of bytes consumed.
    pub(crate) fn try_read(
        &mut self,
        max: usize,
        unit: usize,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<usize, String> {
        if max == 0 {
            return Ok(0);
        }
        let unit = unit.max(1);
        let avail = self.available(max as u64)? as usize;
        let want = avail.min(max) / unit * unit;
        let want = if want == 0 && avail >= max { max } else { want };
        let mut done = 0usize;
        while done < want {
            let off = ((self.tail + done as u64) % self.cap) as usize;
            let contig = (want - done).min(self.cap as usize - off);
            if contig >= unit || contig == want - done {
                let n = if contig >= unit {
                    contig / unit * unit
                } else {
                    contig
                };
                // SAFETY: [off, off+n) is inside the data area and holds
                // published bytes that the producer will not touch until the
                // tail moves past them (after this call).
                let s = unsafe { std::slice::from_raw_parts(self.map.data().add(off), n) };
                f(s);
                done += n;
            } else {
                // One element straddles the end of the data area.
                let mut tmp = [0u8; 8];
                let u = unit.min(8).min(want - done);
                // SAFETY: both pieces are inside the data area and published.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        self.map.data().add(off),
                        tmp.as_mut_ptr(),
                        contig,
                    );
                    std::ptr::copy_nonoverlapping(
                        self.map.data(),
                        tmp.as_mut_ptr().add(contig),
                        u - contig,
                    );
                }
                f(&tmp[..u]);
                done += u;
            }
        }
        self.consume(done as u64);
        Ok(done)
    }

    /// Reads a message header from the next aligned position if it is
    /// complete; returns whether it was read.
    pub(crate) fn try_read_header(&mut self, out: &mut [u8; HEADER_BYTES]) -> Result<bool, String> {
        let pad = header_pad(self.tail);
        let need = pad + HEADER_BYTES as u64;
        if self.available(need)? < need {
            return Ok(false);
        }
        let off = ((self.tail + pad) % self.cap) as usize;
        let first = HEADER_BYTES.min(self.cap as usize - off);
        // SAFETY: both pieces are inside the data area and published.
        unsafe {
            std::ptr::copy_nonoverlapping(self.map.data().add(off), out.as_mut_ptr(), first);
            std::ptr::copy_nonoverlapping(
                self.map.data(),
                out.as_mut_ptr().add(first),
                HEADER_BYTES - first,
            );
        }
        self.consume(need);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_path(tag: &str) -> std::path::PathBuf {
        let r = crate::token::random_bytes::<8>().unwrap();
        std::env::temp_dir().join(format!(
            "ddp-comm-test-{tag}-{}-{:x}",
            std::process::id(),
            u64::from_le_bytes(r)
        ))
    }

    #[test]
    fn ring_streams_bytes_across_the_wrap_in_whole_units() {
        let path = temp_path("ring");
        let cap = ring_capacity(1);
        let nonce = [7u8; 16];
        let mut rx = create_ring(&path, cap, nonce).unwrap();
        let mut tx = open_ring(&path, cap, nonce).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(open_ring(&path, cap, nonce).is_err());

        // Push 5 * capacity bytes of u32 through, with a header in between.
        let total = cap * 5 / 4;
        let src: Vec<i32> = (0..total as i32).collect();
        let bytes = crate::dtype::as_bytes(&src[..]);
        let hdr = [9u8; HEADER_BYTES];
        assert!(tx.try_write_header(&hdr).unwrap());
        let mut got_hdr = [0u8; HEADER_BYTES];
        assert!(rx.try_read_header(&mut got_hdr).unwrap());
        assert_eq!(got_hdr, hdr);
        let mut out: Vec<u8> = Vec::new();
        let mut sent = 0;
        while out.len() < bytes.len() {
            sent += tx.try_write(&bytes[sent..], 4).unwrap();
            rx.try_read(1000, 4, &mut |s| {
                assert_eq!(s.len() % 4, 0);
                out.extend_from_slice(s)
            })
            .unwrap();
        }
        assert_eq!(out, bytes);
    }

    #[test]
    fn a_foreign_nonce_is_refused() {
        let path = temp_path("nonce");
        let cap = ring_capacity(0);
        let _rx = create_ring(&path, cap, [1; 16]).unwrap();
        assert!(open_ring(&path, cap, [2; 16]).is_err());
        assert!(open_ring(&path, cap * 2, [1; 16]).is_err());
        std::fs::remove_file(&path).unwrap();
    }
}
