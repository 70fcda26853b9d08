//! The progress engine: drives a set of concurrent send and receive streams
//! to completion over non-blocking links, with deadlines, peer-death
//! detection and header checks.
//!
//! A *stream* is everything one collective sends to (or receives from) one
//! peer in one phase: a 32-byte header followed by a list of byte ranges
//! ("steps") of the caller's buffers. A send step may be *gated* on a receive
//! step: it only sends bytes that the receive step has already finished
//! (copied or reduced). That is how the ring algorithms forward data as soon
//! as it arrives, without waiting for whole chunks, and how the pipeline
//! broadcast relays.
//!
//! Waiting: when nothing progresses, TCP-only waits sleep in `ppoll(2)` on
//! the sockets involved until the deadline. Waits on shared memory only
//! spin briefly and then sleep on this rank's doorbell (a futex its peers
//! ring after publishing data or freeing space), waking at least every
//! few milliseconds to look at the peers' control sockets, where EOF
//! reveals a peer that died. Waits on both kinds spin, yield, then take
//! short, growing `ppoll` naps on all sockets involved.

use std::time::{Duration, Instant};

use crate::dtype::ReduceOp;
use crate::error::CommError;
use crate::link::{LinkError, Peer};
use crate::reduce::reduce_bytes;
use crate::shm::Bell;
use crate::store::StoreClient;
use crate::wire::{OpDesc, Transport, HEADER_BYTES};

/// Idle rounds spent spinning before sleeping on shared memory, when every
/// local rank can have a core of its own.
const SPIN_ROUNDS: u32 = 256;
/// The same when there are more ranks on this host than cores: spinning
/// would only keep the peers we wait for off the CPU.
const SPIN_ROUNDS_OVERSUBSCRIBED: u32 = 8;
/// Most bytes one stream moves per turn, so that a receive that is fed
/// continuously does not starve the sends (and the other way round).
const TURN_BYTES: usize = 1 << 20;
/// Idle rounds spent yielding before sleeping (shared memory only).
const YIELD_ROUNDS: u32 = 64;
/// Longest nap while waiting on shared memory and TCP at once.
const MAX_NAP: Duration = Duration::from_micros(500);
/// Longest doorbell sleep before the control sockets are checked for dead
/// peers.
const LIVENESS_INTERVAL: Duration = Duration::from_millis(5);

/// The operation being executed, as far as the engine needs to know.
pub(crate) struct OpCtx {
    /// What this rank puts in its headers.
    pub desc: OpDesc,
    /// What this rank is doing, for messages (differs from `desc` for recv).
    pub local: OpDesc,
    /// When the operation started.
    pub start: Instant,
    /// When it must have finished.
    pub deadline: Instant,
}

/// One range of a send stream.
pub(crate) struct SendStep {
    pub ptr: *const u8,
    pub len: usize,
    /// `(receive stream index, step index)` whose completed bytes limit how
    /// much of this step may be sent (the ranges must be the same memory).
    pub gate: Option<(usize, usize)>,
}

/// One range of a receive stream.
pub(crate) struct RecvStep {
    pub ptr: *mut u8,
    pub len: usize,
    /// Combine into the range with the operation's reduction instead of
    /// overwriting it.
    pub reduce: bool,
}

/// Everything sent to one peer in one phase.
pub(crate) struct SendStream {
    peer: usize,
    hdr: [u8; HEADER_BYTES],
    hdr_pos: usize,
    hdr_done: bool,
    steps: Vec<SendStep>,
    cur: usize,
    pos: usize,
    sent: usize,
}

impl SendStream {
    pub(crate) fn new(peer: usize, desc: &OpDesc, sender: usize, steps: Vec<SendStep>) -> Self {
        SendStream {
            peer,
            hdr: desc.encode(sender),
            hdr_pos: 0,
            hdr_done: false,
            steps,
            cur: 0,
            pos: 0,
            sent: 0,
        }
    }
    fn done(&self) -> bool {
        self.hdr_done && self.cur >= self.steps.len()
    }
    fn total(&self) -> usize {
        self.steps.iter().map(|s| s.len).sum()
    }
}

/// Everything received from one peer in one phase.
pub(crate) struct RecvStream {
    peer: usize,
    expect: OpDesc,
    hdr: [u8; HEADER_BYTES],
    hdr_pos: usize,
    hdr_done: bool,
    steps: Vec<RecvStep>,
    cur: usize,
    pos: usize,
    received: usize,
}

impl RecvStream {
    pub(crate) fn new(peer: usize, expect: &OpDesc, steps: Vec<RecvStep>) -> Self {
        RecvStream {
            peer,
            expect: *expect,
            hdr: [0; HEADER_BYTES],
            hdr_pos: 0,
            hdr_done: false,
            steps,
            cur: 0,
            pos: 0,
            received: 0,
        }
    }
    fn done(&self) -> bool {
        self.hdr_done && self.cur >= self.steps.len()
    }
    fn total(&self) -> usize {
        self.steps.iter().map(|s| s.len).sum()
    }
    /// Bytes of step `j` that are complete.
    fn completed(&self, j: usize) -> usize {
        if self.cur > j {
            self.steps.get(j).map_or(0, |s| s.len)
        } else if self.cur == j && self.hdr_done {
            self.pos
        } else {
            0
        }
    }
}

/// Where a failing rank reports the first failure of the group, so that
/// ranks that only see its consequences (a neighbour that gave up) can name
/// the real cause.
pub(crate) struct AbortChannel {
    pub client: StoreClient,
    pub count_key: String,
    pub reason_key: String,
}

/// How long a failing rank waits for the store when reporting.
const ABORT_REPORT_WAIT: Duration = Duration::from_millis(1000);

/// The communication state of one rank of a group.
pub(crate) struct Engine {
    pub rank: usize,
    pub world: usize,
    pub peers: Vec<Option<Peer>>,
    pub timeout: Duration,
    pub transport: Transport,
    /// Next collective sequence number.
    pub seq: u64,
    /// Next point-to-point sequence number per destination / source.
    pub p2p_send_seq: Vec<u64>,
    pub p2p_recv_seq: Vec<u64>,
    /// Set after a failed operation: the ranks are out of step for good.
    pub broken: Option<String>,
    /// Failure reporting through the store, when it was reachable.
    pub abort: Option<AbortChannel>,
    /// This rank's doorbell, when shared memory is in use.
    pub bell: Option<Bell>,
    /// Idle rounds to spin before sleeping on shared memory.
    pub spin_rounds: u32,
    /// Whether every rank may write every peer's memory (found by
    /// [`Engine::probe_direct_read`]): the direct-read broadcast's root then
    /// writes part of the buffer into the other ranks' while they read the
    /// rest.
    pub direct_write: bool,
}

impl Engine {
    pub(crate) fn new(
        rank: usize,
        world: usize,
        peers: Vec<Option<Peer>>,
        timeout: Duration,
        transport: Transport,
    ) -> Engine {
        let local_ranks = 1 + peers.iter().flatten().filter(|p| p.shm.is_some()).count();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let spin_rounds = if local_ranks > cores {
            SPIN_ROUNDS_OVERSUBSCRIBED
        } else {
            SPIN_ROUNDS
        };
        Engine {
            rank,
            world,
            peers,
            timeout,
            transport,
            seq: 0,
            p2p_send_seq: vec![0; world],
            p2p_recv_seq: vec![0; world],
            broken: None,
            abort: None,
            bell: None,
            spin_rounds,
            direct_write: false,
        }
    }

    /// Handles the failure of an operation: reports it through the store
    /// (or learns the group's first failure from there), closes every
    /// connection so the other ranks fail fast instead of waiting for the
    /// timeout, and marks the group broken. Returns the error to give the
    /// caller.
    pub(crate) fn fail(&mut self, err: CommError) -> CommError {
        let mut result = err;
        if let Some(ab) = &self.abort {
            match ab.client.add(&ab.count_key, 1) {
                Ok(1) => {
                    let report = format!("{}\n{}", self.rank, result);
                    let _ = ab.client.set(&ab.reason_key, report.as_bytes());
                }
                Ok(_) => {
                    let consequence = matches!(
                        result,
                        CommError::PeerClosed { .. }
                            | CommError::PeerIo { .. }
                            | CommError::Timeout { .. }
                    );
                    if consequence {
                        if let Ok(v) = ab.client.get_timeout(&ab.reason_key, ABORT_REPORT_WAIT) {
                            let text = String::from_utf8_lossy(&v).into_owned();
                            if let Some((r, cause)) = text.split_once('\n') {
                                if let Ok(reporter) = r.parse::<usize>() {
                                    if reporter != self.rank {
                                        result = CommError::Aborted {
                                            observed: Box::new(result),
                                            reporter,
                                            cause: cause.to_string(),
                                        };
                                    }
                                }
                            }
                        }
                    }
                }
                Err(_) => {}
            }
        }
        for p in self.peers.iter().flatten() {
            let _ = p.stream.shutdown(std::net::Shutdown::Both);
        }
        self.broken = Some(result.to_string());
        result
    }

    fn peer_mut(&mut self, ctx: &OpCtx, rank: usize) -> Result<&mut Peer, CommError> {
        self.peers
            .get_mut(rank)
            .and_then(Option::as_mut)
            .ok_or_else(|| CommError::Protocol {
                peer: rank,
                op: ctx.local.kind.name().into(),
                seq: ctx.local.seq,
                detail: "no connection to this rank".into(),
            })
    }

    fn link_error(&self, ctx: &OpCtx, peer: usize, e: LinkError) -> CommError {
        let op = ctx.local.kind.name().to_string();
        let seq = ctx.local.seq;
        match e {
            LinkError::Closed => CommError::PeerClosed { peer, op, seq },
            LinkError::Io(source) => CommError::PeerIo {
                peer,
                op,
                seq,
                source,
            },
            LinkError::Corrupt(detail) => CommError::Protocol {
                peer,
                op,
                seq,
                detail,
            },
        }
    }

    /// Runs the streams until all are complete, the deadline passes or an
    /// error occurs.
    pub(crate) fn run(
        &mut self,
        ctx: &OpCtx,
        sends: &mut [SendStream],
        recvs: &mut [RecvStream],
    ) -> Result<(), CommError> {
        let unit = ctx.desc.dtype.size();
        let dtype = ctx.desc.dtype;
        let redop = ctx.desc.redop.unwrap_or(ReduceOp::Sum);
        let mut reducer = |d: &mut [u8], s: &[u8]| reduce_bytes(dtype, redop, d, s);
        let mut idle = 0u32;
        let mut announced: Option<u32> = None;
        loop {
            let mut progress = false;
            let mut pending = false;
            for r in recvs.iter_mut() {
                if r.done() {
                    continue;
                }
                pending = true;
                progress |= self.pull(ctx, r, unit, &mut reducer)?;
            }
            for s in sends.iter_mut() {
                if s.done() {
                    continue;
                }
                pending = true;
                progress |= self.push(ctx, s, recvs, unit)?;
            }
            if !pending {
                if announced.is_some() {
                    if let Some(b) = &self.bell {
                        b.cancel();
                    }
                }
                return Ok(());
            }
            if progress {
                idle = 0;
                if announced.take().is_some() {
                    if let Some(b) = &self.bell {
                        b.cancel();
                    }
                }
                continue;
            }
            idle = idle.saturating_add(1);
            if let Err(e) = self.wait(ctx, sends, recvs, idle, &mut announced) {
                if let Some(b) = &self.bell {
                    b.cancel();
                }
                return Err(e);
            }
        }
    }

    fn push(
        &mut self,
        ctx: &OpCtx,
        s: &mut SendStream,
        recvs: &[RecvStream],
        unit: usize,
    ) -> Result<bool, CommError> {
        let peer_rank = s.peer;
        let peer = self.peer_mut(ctx, peer_rank)?;
        let mut progressed = false;
        if !s.hdr_done {
            let before = s.hdr_pos;
            match peer.try_send_header(&s.hdr, &mut s.hdr_pos) {
                Ok(true) => {
                    s.hdr_done = true;
                    progressed = true;
                }
                Ok(false) => return Ok(s.hdr_pos != before),
                Err(e) => return Err(self.link_error(ctx, peer_rank, e)),
            }
        }
        let mut moved = 0usize;
        while s.cur < s.steps.len() && moved < TURN_BYTES {
            let step = &s.steps[s.cur];
            if s.pos >= step.len {
                s.cur += 1;
                s.pos = 0;
                continue;
            }
            let limit = match step.gate {
                None => step.len,
                Some((ri, rj)) => recvs
                    .get(ri)
                    .map_or(step.len, |r| r.completed(rj))
                    .min(step.len),
            };
            if limit <= s.pos {
                break;
            }
            // SAFETY: the step describes `len` readable bytes of a buffer
            // the caller keeps alive for the whole `run`; bytes below
            // `limit` are final (ungated data, or received data of the gate
            // step that nothing writes again during this run).
            let data = unsafe { std::slice::from_raw_parts(step.ptr.add(s.pos), limit - s.pos) };
            let n = match peer.try_send(data, unit) {
                Ok(n) => n,
                Err(e) => return Err(self.link_error(ctx, peer_rank, e)),
            };
            if n == 0 {
                break;
            }
            s.pos += n;
            s.sent += n;
            moved += n;
            progressed = true;
        }
        Ok(progressed)
    }

    fn pull(
        &mut self,
        ctx: &OpCtx,
        r: &mut RecvStream,
        unit: usize,
        reducer: &mut dyn FnMut(&mut [u8], &[u8]),
    ) -> Result<bool, CommError> {
        let peer_rank = r.peer;
        let my_rank = self.rank;
        let peer = self.peer_mut(ctx, peer_rank)?;
        let mut progressed = false;
        if !r.hdr_done {
            let before = r.hdr_pos;
            match peer.try_recv_header(&mut r.hdr, &mut r.hdr_pos) {
                Ok(true) => {
                    r.hdr_done = true;
                    progressed = true;
                    check_header(ctx, my_rank, peer_rank, &r.hdr, &r.expect)?;
                }
                Ok(false) => return Ok(r.hdr_pos != before),
                Err(e) => return Err(self.link_error(ctx, peer_rank, e)),
            }
        }
        let mut moved = 0usize;
        while r.cur < r.steps.len() && moved < TURN_BYTES {
            let step = &r.steps[r.cur];
            if r.pos >= step.len {
                r.cur += 1;
                r.pos = 0;
                continue;
            }
            // SAFETY: the step describes `len` writable bytes of a buffer the
            // caller keeps alive for the whole `run`; no send step reads
            // bytes at or above this position of this step until they are
            // completed here (gates), and steps of different streams are
            // disjoint.
            let dst =
                unsafe { std::slice::from_raw_parts_mut(step.ptr.add(r.pos), step.len - r.pos) };
            let res = if step.reduce {
                peer.try_recv_reduce(dst, unit, reducer)
            } else {
                peer.try_recv_copy(dst, unit)
            };
            let n = match res {
                Ok(n) => n,
                Err(e) => return Err(self.link_error(ctx, peer_rank, e)),
            };
            if n == 0 {
                break;
            }
            r.pos += n;
            r.received += n;
            moved += n;
            progressed = true;
        }
        Ok(progressed)
    }

    /// Waits for something to change, or fails on deadline or a dead peer.
    ///
    /// `announced` carries a doorbell sleep announcement between calls: the
    /// first idle call after spinning announces and returns so the caller
    /// checks the rings once more; the next one sleeps.
    fn wait(
        &mut self,
        ctx: &OpCtx,
        sends: &[SendStream],
        recvs: &[RecvStream],
        idle: u32,
        announced: &mut Option<u32>,
    ) -> Result<(), CommError> {
        let now = Instant::now();
        if now >= ctx.deadline {
            return Err(self.timeout_error(ctx, sends, recvs));
        }
        let mut fds: Vec<libc::pollfd> = Vec::with_capacity(sends.len() + recvs.len());
        let mut shm_waiting = false;
        let mut tcp_waiting = false;
        let add = |fds: &mut Vec<libc::pollfd>, fd: i32, ev: libc::c_short| {
            if let Some(p) = fds.iter_mut().find(|p| p.fd == fd) {
                p.events |= ev;
            } else {
                fds.push(libc::pollfd {
                    fd,
                    events: ev,
                    revents: 0,
                });
            }
        };
        let closed = |peer: usize| CommError::PeerClosed {
            peer,
            op: ctx.local.kind.name().into(),
            seq: ctx.local.seq,
        };
        for r in recvs.iter().filter(|r| !r.done()) {
            let Some(p) = self.peers.get(r.peer).and_then(Option::as_ref) else {
                continue;
            };
            if p.shm.is_some() {
                if p.closed {
                    return Err(closed(r.peer));
                }
                shm_waiting = true;
            } else {
                tcp_waiting = true;
            }
            add(&mut fds, p.fd(), libc::POLLIN | libc::POLLRDHUP);
        }
        for s in sends.iter().filter(|s| !s.done()) {
            let Some(p) = self.peers.get(s.peer).and_then(Option::as_ref) else {
                continue;
            };
            let has_data = !s.hdr_done || {
                let step = &s.steps[s.cur.min(s.steps.len().saturating_sub(1))];
                let limit = match step.gate {
                    None => step.len,
                    Some((ri, rj)) => recvs.get(ri).map_or(step.len, |r| r.completed(rj)),
                };
                limit > s.pos
            };
            if p.shm.is_some() {
                if p.closed {
                    return Err(closed(s.peer));
                }
                shm_waiting |= has_data;
                add(&mut fds, p.fd(), libc::POLLIN | libc::POLLRDHUP);
            } else if has_data {
                tcp_waiting = true;
                add(&mut fds, p.fd(), libc::POLLOUT);
            }
        }
        let left = ctx.deadline - now;

        // Only shared memory to wait for: spin briefly, then sleep on the
        // doorbell; peers ring it when they publish data or free space.
        if shm_waiting && !tcp_waiting {
            if let Some(bell) = &self.bell {
                if idle < self.spin_rounds {
                    std::hint::spin_loop();
                    return Ok(());
                }
                match announced.take() {
                    None => {
                        *announced = Some(bell.prepare());
                        return Ok(());
                    }
                    Some(seen) => {
                        let woken = bell.sleep(seen, LIVENESS_INTERVAL.min(left));
                        if !woken {
                            // Nothing moved for a while: is everyone still there?
                            self.check_controls(ctx, &fds)?;
                        }
                        return Ok(());
                    }
                }
            }
        }

        let nap = if shm_waiting {
            if idle < self.spin_rounds {
                std::hint::spin_loop();
                return Ok(());
            }
            if idle < self.spin_rounds + YIELD_ROUNDS {
                std::thread::yield_now();
                return Ok(());
            }
            let k = ((idle - self.spin_rounds - YIELD_ROUNDS) / 8).min(6);
            Duration::from_micros(10u64 << k).min(MAX_NAP)
        } else {
            // TCP only: the answer is often microseconds away; retrying
            // keeps the CPU instead of paying a wake-up.
            if idle < self.spin_rounds / 4 {
                std::hint::spin_loop();
                return Ok(());
            }
            Duration::from_millis(200)
        };
        let nap = nap.min(left);
        if fds.is_empty() {
            std::thread::sleep(nap);
            return Ok(());
        }
        let ts = libc::timespec {
            tv_sec: nap.as_secs() as libc::time_t,
            tv_nsec: nap.subsec_nanos() as libc::c_long,
        };
        // SAFETY: `fds` is a valid array of `fds.len()` pollfds; `ts` is a
        // valid timespec; no signal mask is passed.
        let r = unsafe {
            libc::ppoll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                &ts,
                std::ptr::null(),
            )
        };
        if r > 0 {
            let ready: Vec<libc::pollfd> = fds.into_iter().filter(|p| p.revents != 0).collect();
            self.check_controls(ctx, &ready)?;
        }
        Ok(())
    }

    /// Looks at the control sockets of the shared-memory peers among `fds`
    /// and notes the ones that were closed (the next idle round fails).
    fn check_controls(&mut self, ctx: &OpCtx, fds: &[libc::pollfd]) -> Result<(), CommError> {
        for pfd in fds {
            let rank = self
                .peers
                .iter()
                .flatten()
                .find(|p| p.fd() == pfd.fd && p.shm.is_some())
                .map(|p| p.rank);
            if let Some(rank) = rank {
                if let Some(p) = self.peers.get_mut(rank).and_then(Option::as_mut) {
                    if let Err(e) = p.check_control() {
                        return Err(self.link_error(ctx, rank, e));
                    }
                }
            }
        }
        Ok(())
    }

    fn timeout_error(&self, ctx: &OpCtx, sends: &[SendStream], recvs: &[RecvStream]) -> CommError {
        let mut ranks = Vec::new();
        let mut details = Vec::new();
        for r in recvs.iter().filter(|r| !r.done()) {
            ranks.push(r.peer);
            if r.hdr_done {
                details.push(format!(
                    "received {} of {} bytes from rank {}",
                    r.received,
                    r.total(),
                    r.peer
                ));
            } else {
                details.push(format!("nothing received from rank {} yet", r.peer));
            }
        }
        for s in sends.iter().filter(|s| !s.done()) {
            let gated = s.hdr_done
                && s.steps.get(s.cur).is_some_and(|st| match st.gate {
                    None => false,
                    Some((ri, rj)) => recvs.get(ri).is_some_and(|r| r.completed(rj) <= s.pos),
                });
            if !gated {
                ranks.push(s.peer);
                details.push(format!(
                    "rank {} is not taking data (sent {} of {} bytes)",
                    s.peer,
                    s.sent,
                    s.total()
                ));
            }
        }
        ranks.sort_unstable();
        ranks.dedup();
        let detail = if details.is_empty() {
            String::new()
        } else {
            format!(" ({})", details.join("; "))
        };
        CommError::Timeout {
            // The configured limit reads better than the measured overshoot.
            waited: ctx.deadline - ctx.start,
            op: ctx.local.kind.name().into(),
            seq: ctx.local.seq,
            ranks,
            detail,
        }
    }
}

fn check_header(
    ctx: &OpCtx,
    my_rank: usize,
    peer: usize,
    hdr: &[u8; HEADER_BYTES],
    expect: &OpDesc,
) -> Result<(), CommError> {
    let (remote, sender) = OpDesc::decode(hdr).map_err(|detail| CommError::Protocol {
        peer,
        op: ctx.local.kind.name().into(),
        seq: ctx.local.seq,
        detail,
    })?;
    if sender as usize != peer {
        return Err(CommError::Protocol {
            peer,
            op: ctx.local.kind.name().into(),
            seq: ctx.local.seq,
            detail: format!("message claims to come from rank {sender}"),
        });
    }
    if remote != *expect {
        let (local, remote) = if ctx.local.kind == expect.kind {
            ctx.local.describe_mismatch(&remote)
        } else {
            // recv: compare like with like, but describe what we are doing.
            let (_, r) = expect.describe_mismatch(&remote);
            (ctx.local.describe(), r)
        };
        return Err(CommError::Mismatch {
            seq: ctx.local.seq,
            rank: my_rank,
            local,
            peer,
            remote,
        });
    }
    Ok(())
}
