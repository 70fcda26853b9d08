//! What a collective looks like on the wire: the public names of operations
//! ([`OpKind`]), algorithms ([`Algorithm`]) and transports ([`Transport`]),
//! and the 32-byte message header that starts every stream of a collective
//! between two ranks.
//!
//! # Header
//!
//! ```text
//! offset size field
//!      0    4 magic "DDPC" (0x43504444 little-endian)
//!      4    1 operation kind     (OpKind code)
//!      5    1 element type       (DType code)
//!      6    1 algorithm          (Algorithm code)
//!      7    1 reduction operator (ReduceOp code, 0 = none)
//!      8    8 sequence number    (per group; per peer pair for send/recv)
//!     16    8 element count      (per rank, see WorkInfo::count)
//!     24    4 root rank          (destination for send; 0xffffffff = none)
//!     28    4 sender rank
//! ```
//!
//! All integers are little-endian. The receiver compares every field but the
//! sender with what it expects itself; any difference is reported as a
//! collective mismatch naming both sides.

use std::fmt;

use crate::dtype::{DType, ReduceOp};

/// Size of the header in bytes.
pub(crate) const HEADER_BYTES: usize = 32;
const MAGIC: u32 = u32::from_le_bytes(*b"DDPC");
/// Root value of collectives without a root.
pub(crate) const NO_ROOT: u32 = u32::MAX;

/// A communication operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// `all_reduce`.
    AllReduce,
    /// `broadcast`.
    Broadcast,
    /// `all_gather`.
    AllGather,
    /// `gather`.
    Gather,
    /// `scatter`.
    Scatter,
    /// `reduce_scatter`.
    ReduceScatter,
    /// `barrier`.
    Barrier,
    /// Point-to-point `send`.
    Send,
    /// Point-to-point `recv`.
    Recv,
}

impl OpKind {
    /// The operation's name as used in messages (`all_reduce`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            OpKind::AllReduce => "all_reduce",
            OpKind::Broadcast => "broadcast",
            OpKind::AllGather => "all_gather",
            OpKind::Gather => "gather",
            OpKind::Scatter => "scatter",
            OpKind::ReduceScatter => "reduce_scatter",
            OpKind::Barrier => "barrier",
            OpKind::Send => "send",
            OpKind::Recv => "recv",
        }
    }

    const ALL: [OpKind; 9] = [
        OpKind::AllReduce,
        OpKind::Broadcast,
        OpKind::AllGather,
        OpKind::Gather,
        OpKind::Scatter,
        OpKind::ReduceScatter,
        OpKind::Barrier,
        OpKind::Send,
        OpKind::Recv,
    ];

    fn code(self) -> u8 {
        OpKind::ALL.iter().position(|k| *k == self).unwrap_or(0) as u8 + 1
    }

    fn from_code(c: u8) -> Option<OpKind> {
        OpKind::ALL.get((c as usize).checked_sub(1)?).copied()
    }
}

impl fmt::Display for OpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The algorithm a collective ran with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// World size 1: nothing was sent.
    Local,
    /// Bandwidth-optimal ring (reduce-scatter then all-gather, streamed).
    Ring,
    /// Latency-optimal recursive doubling (with a fold for non-powers of two).
    RecursiveDoubling,
    /// Pipelined chain from the root (large broadcasts).
    Pipeline,
    /// Binomial tree from the root (small broadcasts).
    BinomialTree,
    /// Every rank exchanges directly with every other (or with the root).
    Direct,
    /// Dissemination barrier.
    Dissemination,
    /// Point-to-point transfer.
    PointToPoint,
    /// Every rank reads what it needs straight from its peers' buffers
    /// (cross-memory attach between ranks on one host; large all-reduces
    /// and broadcasts).
    DirectRead,
}

impl Algorithm {
    /// The algorithm's name (`ring`, `recursive_doubling`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Algorithm::Local => "local",
            Algorithm::Ring => "ring",
            Algorithm::RecursiveDoubling => "recursive_doubling",
            Algorithm::Pipeline => "pipeline",
            Algorithm::BinomialTree => "binomial_tree",
            Algorithm::Direct => "direct",
            Algorithm::Dissemination => "dissemination",
            Algorithm::PointToPoint => "p2p",
            Algorithm::DirectRead => "direct_read",
        }
    }

    const ALL: [Algorithm; 9] = [
        Algorithm::Local,
        Algorithm::Ring,
        Algorithm::RecursiveDoubling,
        Algorithm::Pipeline,
        Algorithm::BinomialTree,
        Algorithm::Direct,
        Algorithm::Dissemination,
        Algorithm::PointToPoint,
        Algorithm::DirectRead,
    ];

    fn code(self) -> u8 {
        Algorithm::ALL.iter().position(|a| *a == self).unwrap_or(0) as u8 + 1
    }

    fn from_code(c: u8) -> Option<Algorithm> {
        Algorithm::ALL.get((c as usize).checked_sub(1)?).copied()
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The transport(s) a group's data moves over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transport {
    /// World size 1: no peers.
    Local,
    /// TCP to every peer.
    Tcp,
    /// Shared memory to every peer (all ranks on one host).
    Shm,
    /// Shared memory to some peers, TCP to others.
    Mixed,
}

impl Transport {
    /// The transport's name (`tcp`, `shm`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Transport::Local => "local",
            Transport::Tcp => "tcp",
            Transport::Shm => "shm",
            Transport::Mixed => "mixed",
        }
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What one rank believes the current operation is; encoded into headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OpDesc {
    pub kind: OpKind,
    pub dtype: DType,
    pub count: u64,
    pub root: u32,
    pub redop: Option<ReduceOp>,
    pub algo: Algorithm,
    pub seq: u64,
}

impl OpDesc {
    pub(crate) fn encode(&self, sender: usize) -> [u8; HEADER_BYTES] {
        let mut h = [0u8; HEADER_BYTES];
        h[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        h[4] = self.kind.code();
        h[5] = self.dtype.code();
        h[6] = self.algo.code();
        h[7] = self.redop.map_or(0, ReduceOp::code);
        h[8..16].copy_from_slice(&self.seq.to_le_bytes());
        h[16..24].copy_from_slice(&self.count.to_le_bytes());
        h[24..28].copy_from_slice(&self.root.to_le_bytes());
        h[28..32].copy_from_slice(&(sender as u32).to_le_bytes());
        h
    }

    /// Decodes a header; returns the description and the sender rank.
    pub(crate) fn decode(h: &[u8; HEADER_BYTES]) -> Result<(OpDesc, u32), String> {
        let u32_at = |o: usize| u32::from_le_bytes([h[o], h[o + 1], h[o + 2], h[o + 3]]);
        let u64_at = |o: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&h[o..o + 8]);
            u64::from_le_bytes(b)
        };
        if u32_at(0) != MAGIC {
            return Err(format!(
                "bad message header (magic {:#010x}); the byte streams are out of step",
                u32_at(0)
            ));
        }
        let kind =
            OpKind::from_code(h[4]).ok_or_else(|| format!("unknown operation code {}", h[4]))?;
        let dtype =
            DType::from_code(h[5]).ok_or_else(|| format!("unknown element type code {}", h[5]))?;
        let algo =
            Algorithm::from_code(h[6]).ok_or_else(|| format!("unknown algorithm code {}", h[6]))?;
        let redop = match h[7] {
            0 => None,
            c => Some(ReduceOp::from_code(c).ok_or_else(|| format!("unknown reduction code {c}"))?),
        };
        Ok((
            OpDesc {
                kind,
                dtype,
                count: u64_at(16),
                root: u32_at(24),
                redop,
                algo,
                seq: u64_at(8),
            },
            u32_at(28),
        ))
    }

    /// `all_reduce of 4096 f32`, `send of 10 f32 to rank 1`, ...
    pub(crate) fn describe(&self) -> String {
        let mut s = format!("{} of {} {}", self.kind, self.count, self.dtype);
        match self.kind {
            OpKind::Send if self.root != NO_ROOT => s.push_str(&format!(" to rank {}", self.root)),
            OpKind::Recv if self.root != NO_ROOT => {
                s.push_str(&format!(" from rank {}", self.root))
            }
            OpKind::Barrier => s = "barrier".to_string(),
            _ => {}
        }
        s
    }

    /// Describes `self` (local) and `remote` for a mismatch message, adding
    /// the fields in which they differ beyond kind, count and type.
    pub(crate) fn describe_mismatch(&self, remote: &OpDesc) -> (String, String) {
        let mut l = self.describe();
        let mut r = remote.describe();
        let comparable = self.kind == remote.kind;
        if comparable
            && self.root != remote.root
            && self.kind != OpKind::Send
            && self.kind != OpKind::Recv
        {
            l.push_str(&format!(" with root {}", self.root));
            r.push_str(&format!(" with root {}", remote.root));
        }
        if comparable && self.redop != remote.redop {
            l.push_str(&format!(" ({})", self.redop.map_or("none", ReduceOp::name)));
            r.push_str(&format!(
                " ({})",
                remote.redop.map_or("none", ReduceOp::name)
            ));
        }
        if comparable && self.algo != remote.algo {
            l.push_str(&format!(" via {}", self.algo));
            r.push_str(&format!(" via {}", remote.algo));
        }
        if self.seq != remote.seq {
            r.push_str(&format!(" at seq {}", remote.seq));
        }
        (l, r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_rejects_garbage() {
        let d = OpDesc {
            kind: OpKind::ReduceScatter,
            dtype: DType::BF16,
            count: 1_000_003,
            root: NO_ROOT,
            redop: Some(ReduceOp::Max),
            algo: Algorithm::Ring,
            seq: 17,
        };
        let h = d.encode(3);
        assert_eq!(OpDesc::decode(&h).unwrap(), (d, 3));
        let mut bad = h;
        bad[0] ^= 1;
        assert!(OpDesc::decode(&bad).is_err());
        let mut bad = h;
        bad[4] = 200;
        assert!(OpDesc::decode(&bad).is_err());
    }

    #[test]
    fn mismatch_descriptions_name_both_sides() {
        let a = OpDesc {
            kind: OpKind::AllReduce,
            dtype: DType::F32,
            count: 4096,
            root: NO_ROOT,
            redop: Some(ReduceOp::Sum),
            algo: Algorithm::Ring,
            seq: 17,
        };
        let b = OpDesc {
            kind: OpKind::Broadcast,
            dtype: DType::F32,
            count: 10,
            root: 0,
            redop: None,
            algo: Algorithm::BinomialTree,
            seq: 17,
        };
        let (l, r) = a.describe_mismatch(&b);
        assert_eq!(l, "all_reduce of 4096 f32");
        assert_eq!(r, "broadcast of 10 f32");
        let c = OpDesc {
            redop: Some(ReduceOp::Max),
            ..a
        };
        let (l, r) = a.describe_mismatch(&c);
        assert_eq!(
            (l.as_str(), r.as_str()),
            (
                "all_reduce of 4096 f32 (sum)",
                "all_reduce of 4096 f32 (max)"
            )
        );
    }
}
