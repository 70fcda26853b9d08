//! The collective algorithms, written as stream plans for the progress
//! engine ([`crate::engine`]). Buffers are type-erased byte slices whose
//! element type is in the operation's description.
//!
//! | collective      | bandwidth algorithm               | latency algorithm        |
//! |-----------------|-----------------------------------|--------------------------|
//! | all_reduce      | ring: reduce-scatter + all-gather | recursive doubling       |
//! |                 | (one host: direct reads)          |                          |
//! | broadcast       | pipelined chain                   | binomial tree            |
//! |                 | (one host: direct reads)          |                          |
//! | all_gather      | ring                              | direct exchange          |
//! | reduce_scatter  | ring                              | direct exchange          |
//! | gather, scatter | direct to/from the root           | same                     |
//! | barrier         | dissemination (headers only)      | same                     |
//!
//! The ring algorithms are one stream to the right neighbour and one from
//! the left for the whole operation; each send step is gated on the receive
//! step that produced its data, so data moves on as soon as it has been
//! reduced (fine-grained pipelining without chunk barriers). Results are
//! bitwise identical on every rank: each ring segment is reduced once along
//! the ring and then copied, recursive doubling combines partners with
//! commutative operations, and direct reductions go in rank order.
//!
//! Direct reads ([`crate::cma`]) replace the ring and the chain when every
//! rank is on one host, the group's probe found that ranks may read each
//! other's memory and [`crate::DirectReadChoice`] allows it: the ranks exchange their buffer addresses, and each copies
//! what it needs straight from its peers' buffers, one copy per byte where a
//! shared-memory ring costs two. All-reduce: rank `r` reduces segment `r`
//! in place, combining the peers' copies of it in rank order (chunks of
//! [`DIRECT_READ_CHUNK`] bytes read into a scratch buffer that stays in the
//! cache), a barrier, then every rank reads the other segments from their
//! owners; each segment is reduced once by its owner, so results are bitwise
//! identical on every rank. Broadcast: every rank reads the root's buffer;
//! where the ranks may also write each other's memory, the root writes a
//! segment into each other rank's buffer meanwhile, and each reads only the
//! rest, so that the root's core copies too. A final barrier keeps every
//! buffer in place until all peers have read (and been written) it.

use std::time::Instant;

use crate::cma;
use crate::dtype::{DType, ReduceOp};
use crate::engine::{Engine, OpCtx, RecvStep, RecvStream, SendStep, SendStream};
use crate::error::CommError;
use crate::reduce::reduce_bytes;
use crate::wire::{Algorithm, OpDesc, OpKind, NO_ROOT};

type Result<T> = std::result::Result<T, CommError>;

/// Byte ranges `(offset, len)` of `n` nearly equal segments of `count`
/// elements of `es` bytes.
fn segments(count: usize, n: usize, es: usize) -> Vec<(usize, usize)> {
    let base = count / n;
    let rem = count % n;
    let mut out = Vec::with_capacity(n);
    let mut off = 0;
    for i in 0..n {
        let len = (base + usize::from(i < rem)) * es;
        out.push((off, len));
        off += len;
    }
    out
}

/// Bytes of a peer's segment read at a time by the direct-read all-reduce
/// before being combined into this rank's buffer (fits in L2 next to the
/// destination chunk).
const DIRECT_READ_CHUNK: usize = 256 << 10;

/// The word the direct-read probe reads from every peer.
const PROBE_WORD: u64 = u64::from_le_bytes(*b"DDPREAD1");

/// The bit of a rank's probe answer saying that it could write every peer.
const WRITE_OK: u8 = 0x80;

/// Where a peer's buffer is: its process id and the buffer's address there.
#[derive(Clone, Copy)]
struct Remote {
    pid: i32,
    addr: u64,
}

/// An 8-byte aligned scratch buffer of `len` bytes.
struct Scratch(Vec<u64>, usize);

impl Scratch {
    fn new(len: usize) -> Scratch {
        Scratch(vec![0u64; len.div_ceil(8)], len)
    }
    fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: u64 has no padding and every byte pattern is valid; the
        // view covers `len <= 8 * vec.len()` bytes.
        unsafe { std::slice::from_raw_parts_mut(self.0.as_mut_ptr().cast::<u8>(), self.1) }
    }
}

fn send_step(base: *const u8, off: usize, len: usize, gate: Option<(usize, usize)>) -> SendStep {
    SendStep {
        // SAFETY (of the arithmetic): callers pass ranges inside the buffer
        // `base` points to.
        ptr: base.wrapping_add(off),
        len,
        gate,
    }
}

fn recv_step(base: *mut u8, off: usize, len: usize, reduce: bool) -> RecvStep {
    RecvStep {
        ptr: base.wrapping_add(off),
        len,
        reduce,
    }
}

impl Engine {
    fn left(&self) -> usize {
        (self.rank + self.world - 1) % self.world
    }
    fn right(&self) -> usize {
        (self.rank + 1) % self.world
    }

    /// Sends `data` to `peer` and/or receives into `into` from `from` in one
    /// concurrent phase.
    fn exchange(
        &mut self,
        ctx: &OpCtx,
        to: Option<(usize, &[u8])>,
        from: Option<(usize, &mut [u8])>,
    ) -> Result<()> {
        let mut sends: Vec<SendStream> = to
            .into_iter()
            .map(|(p, d)| {
                SendStream::new(
                    p,
                    &ctx.desc,
                    self.rank,
                    vec![send_step(d.as_ptr(), 0, d.len(), None)],
                )
            })
            .collect();
        let mut recvs: Vec<RecvStream> = from
            .into_iter()
            .map(|(p, d)| {
                RecvStream::new(
                    p,
                    &ctx.desc,
                    vec![recv_step(d.as_mut_ptr(), 0, d.len(), false)],
                )
            })
            .collect();
        self.run(ctx, &mut sends, &mut recvs)
    }

    /// Ring all-reduce (or, with `reduce_scatter_only`, the reduce-scatter
    /// half with rank `r` ending up owning segment `r`) over `buf`, which is
    /// split into `world` segments by `segs`.
    fn ring(
        &mut self,
        ctx: &OpCtx,
        buf: &mut [u8],
        segs: &[(usize, usize)],
        reduce_scatter_only: bool,
    ) -> Result<()> {
        let n = self.world;
        let r = self.rank;
        let base = buf.as_mut_ptr();
        // Reduce-scatter only: shift by one so rank r finishes with segment r.
        let shift = usize::from(reduce_scatter_only);
        let total_steps = if reduce_scatter_only {
            n - 1
        } else {
            2 * (n - 1)
        };
        let seg = |t: usize, extra: usize| (r + 3 * n - (t % n) - extra - shift) % n;
        let sends: Vec<SendStep> = (0..total_steps)
            .map(|t| {
                let (off, len) = segs[seg(t, 0)];
                send_step(base, off, len, t.checked_sub(1).map(|p| (0, p)))
            })
            .collect();
        let recvs: Vec<RecvStep> = (0..total_steps)
            .map(|t| {
                let (off, len) = segs[seg(t, 1)];
                recv_step(base, off, len, t < n - 1)
            })
            .collect();
        let mut s = [SendStream::new(self.right(), &ctx.desc, r, sends)];
        let mut v = [RecvStream::new(self.left(), &ctx.desc, recvs)];
        self.run(ctx, &mut s, &mut v)
    }

    /// Ring all-reduce.
    pub(crate) fn ring_all_reduce(&mut self, ctx: &OpCtx, buf: &mut [u8]) -> Result<()> {
        let es = ctx.desc.dtype.size();
        let segs = segments(buf.len() / es, self.world, es);
        self.ring(ctx, buf, &segs, false)
    }

    /// Recursive-doubling all-reduce; non-powers of two fold the extra ranks
    /// into partners first and hand them the result at the end.
    pub(crate) fn recursive_doubling_all_reduce(
        &mut self,
        ctx: &OpCtx,
        buf: &mut [u8],
        op: ReduceOp,
    ) -> Result<()> {
        let n = self.world;
        let r = self.rank;
        let dtype = ctx.desc.dtype;
        let p = 1usize << (usize::BITS - 1 - n.leading_zeros());
        let rem = n - p;
        let mut scratch = Scratch::new(buf.len());
        let new_rank = if r < 2 * rem {
            if r & 1 == 0 {
                self.exchange(ctx, Some((r + 1, &*buf)), None)?;
                None
            } else {
                self.exchange(ctx, None, Some((r - 1, scratch.bytes())))?;
                reduce_bytes(dtype, op, buf, scratch.bytes());
                Some(r / 2)
            }
        } else {
            Some(r - rem)
        };
        if let Some(nr) = new_rank {
            let mut mask = 1;
            while mask < p {
                let pn = nr ^ mask;
                let partner = if pn < rem { pn * 2 + 1 } else { pn + rem };
                self.exchange(
                    ctx,
                    Some((partner, &*buf)),
                    Some((partner, scratch.bytes())),
                )?;
                reduce_bytes(dtype, op, buf, scratch.bytes());
                mask <<= 1;
            }
        }
        if r < 2 * rem {
            if r & 1 == 1 {
                self.exchange(ctx, Some((r - 1, &*buf)), None)?;
            } else {
                self.exchange(ctx, None, Some((r + 1, buf)))?;
            }
        }
        Ok(())
    }

    /// Pipelined chain broadcast: root -> root+1 -> ... ; every middle rank
    /// forwards bytes as they arrive.
    pub(crate) fn pipeline_broadcast(
        &mut self,
        ctx: &OpCtx,
        buf: &mut [u8],
        root: usize,
    ) -> Result<()> {
        let n = self.world;
        let vr = (self.rank + n - root) % n;
        let base = buf.as_mut_ptr();
        let len = buf.len();
        let mut sends = Vec::new();
        let mut recvs = Vec::new();
        if vr > 0 {
            recvs.push(RecvStream::new(
                self.left(),
                &ctx.desc,
                vec![recv_step(base, 0, len, false)],
            ));
        }
        if vr < n - 1 {
            let gate = if vr > 0 { Some((0, 0)) } else { None };
            sends.push(SendStream::new(
                self.right(),
                &ctx.desc,
                self.rank,
                vec![send_step(base, 0, len, gate)],
            ));
        }
        self.run(ctx, &mut sends, &mut recvs)
    }

    /// Binomial-tree broadcast.
    pub(crate) fn binomial_broadcast(
        &mut self,
        ctx: &OpCtx,
        buf: &mut [u8],
        root: usize,
    ) -> Result<()> {
        let n = self.world;
        let vr = (self.rank + n - root) % n;
        let mut mask = 1usize;
        while mask < n {
            if vr & mask != 0 {
                let parent = (vr - mask + root) % n;
                self.exchange(ctx, None, Some((parent, &mut *buf)))?;
                break;
            }
            mask <<= 1;
        }
        mask >>= 1;
        let mut sends = Vec::new();
        while mask > 0 {
            if vr + mask < n {
                let child = (vr + mask + root) % n;
                sends.push(SendStream::new(
                    child,
                    &ctx.desc,
                    self.rank,
                    vec![send_step(buf.as_ptr(), 0, buf.len(), None)],
                ));
            }
            mask >>= 1;
        }
        self.run(ctx, &mut sends, &mut [])
    }

    /// Ring all-gather into `output` (`world` segments of `input.len()`).
    pub(crate) fn ring_all_gather(
        &mut self,
        ctx: &OpCtx,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<()> {
        let n = self.world;
        let r = self.rank;
        let k = input.len();
        output[r * k..(r + 1) * k].copy_from_slice(input);
        let base = output.as_mut_ptr();
        let seg = |t: usize, extra: usize| (r + 2 * n - t - extra) % n;
        let sends: Vec<SendStep> = (0..n - 1)
            .map(|t| send_step(base, seg(t, 0) * k, k, t.checked_sub(1).map(|p| (0, p))))
            .collect();
        let recvs: Vec<RecvStep> = (0..n - 1)
            .map(|t| recv_step(base, seg(t, 1) * k, k, false))
            .collect();
        let mut s = [SendStream::new(self.right(), &ctx.desc, r, sends)];
        let mut v = [RecvStream::new(self.left(), &ctx.desc, recvs)];
        self.run(ctx, &mut s, &mut v)
    }

    /// All-gather by direct exchange with every peer.
    pub(crate) fn direct_all_gather(
        &mut self,
        ctx: &OpCtx,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<()> {
        let n = self.world;
        let r = self.rank;
        let k = input.len();
        output[r * k..(r + 1) * k].copy_from_slice(input);
        let base = output.as_mut_ptr();
        let mut sends = Vec::with_capacity(n - 1);
        let mut recvs = Vec::with_capacity(n - 1);
        for i in 1..n {
            let to = (r + i) % n;
            let from = (r + n - i) % n;
            sends.push(SendStream::new(
                to,
                &ctx.desc,
                r,
                vec![send_step(input.as_ptr(), 0, k, None)],
            ));
            recvs.push(RecvStream::new(
                from,
                &ctx.desc,
                vec![recv_step(base, from * k, k, false)],
            ));
        }
        self.run(ctx, &mut sends, &mut recvs)
    }

    /// Ring reduce-scatter: `input` has `world` segments of `output.len()`.
    pub(crate) fn ring_reduce_scatter(
        &mut self,
        ctx: &OpCtx,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<()> {
        let k = output.len();
        let mut work = Scratch::new(input.len());
        work.bytes().copy_from_slice(input);
        let segs: Vec<(usize, usize)> = (0..self.world).map(|i| (i * k, k)).collect();
        self.ring(ctx, work.bytes(), &segs, true)?;
        let r = self.rank;
        output.copy_from_slice(&work.bytes()[r * k..(r + 1) * k]);
        Ok(())
    }

    /// Reduce-scatter by direct exchange; the segment is reduced in rank
    /// order.
    pub(crate) fn direct_reduce_scatter(
        &mut self,
        ctx: &OpCtx,
        input: &[u8],
        output: &mut [u8],
        op: ReduceOp,
    ) -> Result<()> {
        let n = self.world;
        let r = self.rank;
        let k = output.len();
        let mut scratch = Scratch::new(k * n);
        let sbase = scratch.bytes().as_mut_ptr();
        let mut sends = Vec::with_capacity(n - 1);
        let mut recvs = Vec::with_capacity(n - 1);
        for i in 1..n {
            let to = (r + i) % n;
            let from = (r + n - i) % n;
            sends.push(SendStream::new(
                to,
                &ctx.desc,
                r,
                vec![send_step(input.as_ptr(), to * k, k, None)],
            ));
            recvs.push(RecvStream::new(
                from,
                &ctx.desc,
                vec![recv_step(sbase, from * k, k, false)],
            ));
        }
        self.run(ctx, &mut sends, &mut recvs)?;
        let sb = scratch.bytes();
        sb[r * k..(r + 1) * k].copy_from_slice(&input[r * k..(r + 1) * k]);
        output.copy_from_slice(&sb[..k]);
        for p in 1..n {
            reduce_bytes(ctx.desc.dtype, op, output, &sb[p * k..(p + 1) * k]);
        }
        Ok(())
    }

    /// Gather to `root`: `output` (root only) has `world` segments of
    /// `input.len()`.
    pub(crate) fn direct_gather(
        &mut self,
        ctx: &OpCtx,
        input: &[u8],
        output: Option<&mut [u8]>,
        root: usize,
    ) -> Result<()> {
        let k = input.len();
        match output {
            Some(out) if self.rank == root => {
                out[root * k..(root + 1) * k].copy_from_slice(input);
                let base = out.as_mut_ptr();
                let mut recvs: Vec<RecvStream> = (0..self.world)
                    .filter(|&p| p != root)
                    .map(|p| RecvStream::new(p, &ctx.desc, vec![recv_step(base, p * k, k, false)]))
                    .collect();
                self.run(ctx, &mut [], &mut recvs)
            }
            _ => self.exchange(ctx, Some((root, input)), None),
        }
    }

    /// Scatter from `root`: `input` (root only) has `world` segments of
    /// `output.len()`.
    pub(crate) fn direct_scatter(
        &mut self,
        ctx: &OpCtx,
        input: Option<&[u8]>,
        output: &mut [u8],
        root: usize,
    ) -> Result<()> {
        let k = output.len();
        match input {
            Some(inp) if self.rank == root => {
                output.copy_from_slice(&inp[root * k..(root + 1) * k]);
                let mut sends: Vec<SendStream> = (0..self.world)
                    .filter(|&p| p != root)
                    .map(|p| {
                        SendStream::new(
                            p,
                            &ctx.desc,
                            self.rank,
                            vec![send_step(inp.as_ptr(), p * k, k, None)],
                        )
                    })
                    .collect();
                self.run(ctx, &mut sends, &mut [])
            }
            _ => self.exchange(ctx, None, Some((root, output))),
        }
    }

    /// Tells every rank where this rank's buffer at `addr` is and learns
    /// where theirs are (16 bytes to and from every peer).
    fn share_addresses(&mut self, ctx: &OpCtx, addr: u64) -> Result<Vec<Remote>> {
        let mut mine = [0u8; 16];
        mine[..8].copy_from_slice(&u64::from(cma::own_pid().unsigned_abs()).to_le_bytes());
        mine[8..].copy_from_slice(&addr.to_le_bytes());
        let mut all = vec![0u8; 16 * self.world];
        self.direct_all_gather(ctx, &mine, &mut all)?;
        Ok(all
            .chunks_exact(16)
            .map(|c| {
                let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
                Remote {
                    pid: i32::try_from(word(&c[..8])).unwrap_or(-1),
                    addr: word(&c[8..]),
                }
            })
            .collect())
    }

    /// Copies `dst.len()` bytes from offset `off` of `peer`'s buffer.
    fn read_peer(
        &self,
        ctx: &OpCtx,
        peer: usize,
        at: Remote,
        off: usize,
        dst: &mut [u8],
    ) -> Result<()> {
        if dst.is_empty() {
            return Ok(());
        }
        cma::read(at.pid, at.addr.wrapping_add(off as u64), dst)
            .map_err(|source| self.peer_error(ctx, peer, source))
    }

    /// Copies `src` to offset `off` of `peer`'s buffer.
    fn write_peer(
        &self,
        ctx: &OpCtx,
        peer: usize,
        at: Remote,
        off: usize,
        src: &[u8],
    ) -> Result<()> {
        if src.is_empty() {
            return Ok(());
        }
        cma::write(at.pid, at.addr.wrapping_add(off as u64), src)
            .map_err(|source| self.peer_error(ctx, peer, source))
    }

    /// The error of a failed read or write of `peer`'s memory.
    fn peer_error(&self, ctx: &OpCtx, peer: usize, source: std::io::Error) -> CommError {
        let op = ctx.local.kind.name().to_string();
        let seq = ctx.local.seq;
        // The peer's process is gone: it died, as a closed connection says.
        if source.raw_os_error() == Some(libc::ESRCH) {
            CommError::PeerClosed { peer, op, seq }
        } else {
            CommError::PeerIo {
                peer,
                op,
                seq,
                source,
            }
        }
    }

    /// Finds out, once at group creation, whether every rank can read every
    /// peer's memory (see [`crate::cma`]). `wish` is this rank's choice: 0
    /// never, 1 auto, 2 always. Returns the smallest wish of all ranks, or 0
    /// when some rank could not read some peer. Every rank of an
    /// all-shared-memory group takes part, and all get the same answer.
    /// Also sets [`Engine::direct_write`]: whether, on top of that, every
    /// rank could write every peer's memory.
    pub(crate) fn probe_direct_read(&mut self, wish: u8) -> Result<u8> {
        let desc = OpDesc {
            kind: OpKind::Barrier,
            dtype: DType::U8,
            count: 0,
            root: NO_ROOT,
            redop: None,
            algo: Algorithm::DirectRead,
            seq: u64::MAX,
        };
        let start = Instant::now();
        let ctx = OpCtx {
            desc,
            local: desc,
            start,
            deadline: start + self.timeout,
        };
        // Peers read the first word and write it into the second.
        let words = std::cell::UnsafeCell::new([PROBE_WORD, 0u64]);
        let remotes = self.share_addresses(&ctx, words.get() as u64)?;
        let mut ok = wish > 0;
        let mut write_ok = ok;
        for (p, at) in remotes.iter().enumerate() {
            if p != self.rank && ok {
                let mut got = [0u8; 8];
                ok = self.read_peer(&ctx, p, *at, 0, &mut got).is_ok()
                    && u64::from_le_bytes(got) == PROBE_WORD;
                write_ok =
                    write_ok && ok && cma::write(at.pid, at.addr.wrapping_add(8), &got).is_ok();
            }
        }
        // Everyone has read and written `words` once it sends its answer:
        // the wish (or 0) and, in the high bit, whether the writes went.
        let mine = if ok { wish } else { 0 } | if write_ok { WRITE_OK } else { 0 };
        let mut answers = vec![0u8; self.world];
        self.direct_all_gather(&ctx, &[mine], &mut answers)?;
        std::hint::black_box(&words);
        let agreed = answers.iter().map(|a| a & !WRITE_OK).min().unwrap_or(0);
        self.direct_write = agreed > 0 && answers.iter().all(|a| a & WRITE_OK != 0);
        Ok(agreed)
    }

    /// Direct-read all-reduce (see the module documentation).
    pub(crate) fn direct_read_all_reduce(
        &mut self,
        ctx: &OpCtx,
        buf: &mut [u8],
        op: ReduceOp,
    ) -> Result<()> {
        let n = self.world;
        let r = self.rank;
        let dtype = ctx.desc.dtype;
        let es = dtype.size();
        let segs = segments(buf.len() / es, n, es);
        let remotes = self.share_addresses(ctx, buf.as_ptr() as u64)?;
        // Reduce-scatter: this rank's segment, chunk by chunk, peers in rank
        // order (the chunk size is a multiple of every element size).
        let (off, len) = segs[r];
        let mut tmp = Scratch::new(DIRECT_READ_CHUNK.min(len));
        let mut c = 0;
        while c < len {
            let l = DIRECT_READ_CHUNK.min(len - c);
            for (p, at) in remotes.iter().enumerate().filter(|(p, _)| *p != r) {
                let t = &mut tmp.bytes()[..l];
                self.read_peer(ctx, p, *at, off + c, t)?;
                reduce_bytes(dtype, op, &mut buf[off + c..off + c + l], t);
            }
            c += l;
        }
        // Every segment is final: all-gather by reading each from its owner.
        self.dissemination_barrier(ctx)?;
        for (p, at) in remotes.iter().enumerate().filter(|(p, _)| *p != r) {
            let (o, l) = segs[p];
            self.read_peer(ctx, p, *at, o, &mut buf[o..o + l])?;
        }
        // Nobody reads this buffer any more once everyone is here.
        self.dissemination_barrier(ctx)
    }

    /// Direct-read broadcast: every rank copies the root's buffer. When the
    /// ranks may also write each other's memory ([`Engine::direct_write`]),
    /// the root works too: the buffer is cut into `world` segments, the
    /// root writes segment `j` into the `j`-th other rank's buffer (counted
    /// from the root on) while each other rank reads the remaining segments
    /// from the root, so every rank, the root included, copies `(world −
    /// 1) / world` of the buffer instead of the others copying it whole.
    pub(crate) fn direct_read_broadcast(
        &mut self,
        ctx: &OpCtx,
        buf: &mut [u8],
        root: usize,
    ) -> Result<()> {
        if self.direct_write {
            return self.direct_write_broadcast(ctx, buf, root);
        }
        let mut at = [0u8; 16];
        if self.rank == root {
            at[..8].copy_from_slice(&u64::from(cma::own_pid().unsigned_abs()).to_le_bytes());
            at[8..].copy_from_slice(&(buf.as_ptr() as u64).to_le_bytes());
        }
        self.binomial_broadcast(ctx, &mut at, root)?;
        if self.rank != root {
            let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
            let remote = Remote {
                pid: i32::try_from(word(&at[..8])).unwrap_or(-1),
                addr: word(&at[8..]),
            };
            self.read_peer(ctx, root, remote, 0, buf)?;
        }
        // The root's buffer stays untouched until every rank has read it.
        self.dissemination_barrier(ctx)
    }

    /// The root-assisted form of [`Engine::direct_read_broadcast`].
    fn direct_write_broadcast(&mut self, ctx: &OpCtx, buf: &mut [u8], root: usize) -> Result<()> {
        let n = self.world;
        let remotes = self.share_addresses(ctx, buf.as_ptr() as u64)?;
        let segs = segments(buf.len(), n, 1);
        // The `j`-th rank after the root gets segment `j` from the root.
        let written = |rank: usize| (rank + n - root - 1) % n;
        if self.rank == root {
            for (p, at) in remotes.iter().enumerate().filter(|(p, _)| *p != root) {
                let (o, l) = segs[written(p)];
                self.write_peer(ctx, p, *at, o, &buf[o..o + l])?;
            }
        } else {
            let mine = written(self.rank);
            for (_, &(o, l)) in segs.iter().enumerate().filter(|&(j, _)| j != mine) {
                self.read_peer(ctx, root, remotes[root], o, &mut buf[o..o + l])?;
            }
        }
        // Every buffer is complete, and the root's free, once all are here.
        self.dissemination_barrier(ctx)
    }

    /// Dissemination barrier: in round `k` send a header to `rank + 2^k`
    /// and wait for one from `rank - 2^k`.
    pub(crate) fn dissemination_barrier(&mut self, ctx: &OpCtx) -> Result<()> {
        let n = self.world;
        let mut d = 1;
        while d < n {
            let to = (self.rank + d) % n;
            let from = (self.rank + n - d) % n;
            let mut s = [SendStream::new(to, &ctx.desc, self.rank, Vec::new())];
            let mut v = [RecvStream::new(from, &ctx.desc, Vec::new())];
            self.run(ctx, &mut s, &mut v)?;
            d <<= 1;
        }
        Ok(())
    }

    /// Point-to-point send.
    pub(crate) fn p2p_send(&mut self, ctx: &OpCtx, data: &[u8], dst: usize) -> Result<()> {
        self.exchange(ctx, Some((dst, data)), None)
    }

    /// Point-to-point receive; `expect` is the header the sender must send.
    pub(crate) fn p2p_recv(
        &mut self,
        ctx: &OpCtx,
        expect: &crate::wire::OpDesc,
        data: &mut [u8],
        src: usize,
    ) -> Result<()> {
        let mut v = [RecvStream::new(
            src,
            expect,
            vec![recv_step(data.as_mut_ptr(), 0, data.len(), false)],
        )];
        self.run(ctx, &mut [], &mut v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_cover_the_buffer_for_all_shapes() {
        for n in 1..6 {
            for count in [0usize, 1, 2, 5, 7, 13, 1000] {
                let s = segments(count, n, 4);
                assert_eq!(s.len(), n);
                assert_eq!(s.iter().map(|x| x.1).sum::<usize>(), count * 4);
                let mut off = 0;
                for (o, l) in s {
                    assert_eq!(o, off);
                    off += l;
                }
            }
        }
    }
}
