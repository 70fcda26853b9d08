//! Building a group's connections: listening, publishing the address in the
//! store, the full TCP mesh with its handshake, the shared-memory rings
//! between ranks on one host, and the clock-offset measurement.
//!
//! # Peer handshake
//!
//! Rank `i` connects to every rank `j < i` and accepts from every `j > i`.
//! The connecting side sends (little-endian):
//!
//! ```text
//! u32 magic "DDPM" | u32 version | u32 world size | u32 sender rank |
//! u32 receiver rank | u32 token length | u64 group generation | token bytes
//! ```
//!
//! and the accepting side answers `u32 magic | u32 status` (0 = accepted,
//! otherwise the reason for refusing, see [`Refusal`]). Connections with a
//! bad token, wrong world size, rank or generation, or a duplicate rank are
//! refused and closed; the accepting rank keeps waiting for the right ones.
//!
//! # Shared-memory negotiation (same host only)
//!
//! Each rank creates its doorbell file and one ring file per same-host peer
//! for the data it will receive from that peer, and sends the peer an offer
//! (`u8 ok | u64 capacity | 16-byte ring nonce | 16-byte bell nonce |
//! u16 ring path length | u16 bell path length | ring path | bell path`).
//! The peer opens and checks both files and answers `u8 ok`. A pair uses shared
//! memory only if both directions worked; the creator unlinks its files
//! right after.
//!
//! # Clock offsets
//!
//! Every rank `r > 0` sends rank 0 [`GroupOptions::clock_sync_rounds`] pings
//! (8 bytes); rank 0 answers each with its [`crate::clock::now_ns`]. With
//! send time `t1`, rank 0's time `t2` and receive time `t4`, the sample with
//! the smallest round trip gives `offset = t2 - (t1 + t4) / 2` (add it to a
//! local timestamp to get rank 0's clock) and `uncertainty = (t4 - t1) / 2`.

use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::clock::now_ns;
use crate::error::{fmt_duration, fmt_ranks, CommError};
use crate::link::{Peer, ShmPair};
use crate::options::{GroupOptions, TransportChoice};
use crate::shm;
use crate::store::{rendezvous, StoreClient};
use crate::token::MAX_TOKEN_BYTES;
use crate::wire::Transport;

const HELLO_MAGIC: u32 = u32::from_le_bytes(*b"DDPM");
const HELLO_VERSION: u32 = 1;
const HELLO_BYTES: usize = 32;
/// Fixed part of a shared-memory offer.
const OFFER_HEAD: usize = 45;

/// Why an accepting rank refused a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Refusal {
    BadMagic = 1,
    BadToken = 2,
    BadWorld = 3,
    BadRank = 4,
    Duplicate = 5,
    BadGeneration = 6,
}

impl Refusal {
    fn from_code(c: u32) -> Option<Refusal> {
        [
            Refusal::BadMagic,
            Refusal::BadToken,
            Refusal::BadWorld,
            Refusal::BadRank,
            Refusal::Duplicate,
            Refusal::BadGeneration,
        ]
        .into_iter()
        .find(|r| *r as u32 == c)
    }
    fn text(self) -> &'static str {
        match self {
            Refusal::BadMagic => "not a ddp-comm peer or a different protocol version",
            Refusal::BadToken => "wrong token",
            Refusal::BadWorld => "different world size",
            Refusal::BadRank => "rank out of range or not expected here",
            Refusal::Duplicate => "a second connection claiming the same rank",
            Refusal::BadGeneration => "a different incarnation of the group",
        }
    }
}

/// The result of building a group's connections.
pub(crate) struct Mesh {
    pub peers: Vec<Option<Peer>>,
    pub transport: Transport,
    pub clock_offset_ns: i64,
    pub clock_uncertainty_ns: u64,
    pub host_id: String,
    /// Store key prefix of this incarnation of the group.
    pub prefix: String,
    /// This rank's doorbell, when shared memory is in use.
    pub bell: Option<shm::Bell>,
}

/// This host's identity: boot id plus host name. Ranks with equal
/// identities may share memory.
pub fn host_identity() -> String {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let mut buf = [0u8; 256];
    // SAFETY: `buf` is valid for `buf.len()` bytes; gethostname
    // NUL-terminates within it on success.
    let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast::<libc::c_char>(), buf.len()) };
    let host = if r == 0 {
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).into_owned()
    } else {
        String::new()
    };
    format!("{boot}/{host}")
}

struct Setup<'a> {
    rank: usize,
    world: usize,
    opts: &'a GroupOptions,
    deadline: Instant,
}

impl Setup<'_> {
    fn err(&self, detail: impl Into<String>) -> CommError {
        CommError::Setup {
            rank: self.rank,
            detail: detail.into(),
        }
    }

    fn left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    fn check_time(&self, what: &str) -> Result<Duration, CommError> {
        let left = self.left();
        if left.is_zero() {
            Err(self.err(format!(
                "timed out after {} while {what}",
                fmt_duration(self.opts.timeout)
            )))
        } else {
            Ok(left)
        }
    }

    /// Blocking exact read from a peer during setup, bounded by the
    /// deadline.
    fn read_exact(
        &self,
        s: &mut TcpStream,
        buf: &mut [u8],
        peer: usize,
        what: &str,
    ) -> Result<(), CommError> {
        let left = self.check_time(what)?;
        s.set_read_timeout(Some(left))
            .map_err(|e| self.err(format!("configuring the socket to rank {peer}: {e}")))?;
        s.read_exact(buf).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => self.err(format!(
                "rank {peer} closed its connection while {what}; it probably exited or was killed"
            )),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => self.err(format!(
                "timed out after {} while {what}: rank {peer} did not answer",
                fmt_duration(self.opts.timeout)
            )),
            _ => self.err(format!("reading from rank {peer} while {what}: {e}")),
        })
    }

    fn write_all(
        &self,
        s: &mut TcpStream,
        buf: &[u8],
        peer: usize,
        what: &str,
    ) -> Result<(), CommError> {
        let left = self.check_time(what)?;
        s.set_write_timeout(Some(left))
            .map_err(|e| self.err(format!("configuring the socket to rank {peer}: {e}")))?;
        s.write_all(buf)
            .map_err(|e| self.err(format!("writing to rank {peer} while {what}: {e}")))
    }
}

fn set_buffer_sizes(fd: i32, bytes: usize) {
    let v = bytes.min(i32::MAX as usize) as libc::c_int;
    for opt in [libc::SO_SNDBUF, libc::SO_RCVBUF] {
        // SAFETY: `v` is a valid c_int for the option's duration of the call.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                opt,
                (&v as *const libc::c_int).cast::<libc::c_void>(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(a)
}

/// Builds rank `rank`'s connections to the other `world - 1` ranks.
/// Compares the world size rank `peer` published under `key` with this rank's; a difference is
/// an error naming the rank that differs from rank 0.
fn check_world(
    su: &Setup<'_>,
    store: &StoreClient,
    key: &str,
    peer: usize,
) -> Result<(), CommError> {
    let value = store.get(key)?;
    let theirs = String::from_utf8_lossy(&value).trim().parse::<usize>().ok();
    if theirs == Some(su.world) {
        return Ok(());
    }
    let theirs = theirs.map_or_else(|| "an unreadable value".to_owned(), |w| w.to_string());
    let (odd, odd_world, zero_world) = if su.rank == 0 {
        (peer, theirs, su.world.to_string())
    } else {
        (su.rank, su.world.to_string(), theirs)
    };
    Err(su.err(format!(
        "world size mismatch: rank {odd} was started with world size {odd_world}, rank 0 with \
         {zero_world}; every rank needs the same WORLD_SIZE"
    )))
}

pub(crate) fn build(
    rank: usize,
    world: usize,
    store: &StoreClient,
    opts: &GroupOptions,
    transport: TransportChoice,
) -> Result<Mesh, CommError> {
    let host_id = host_identity();
    if world == 1 {
        return Ok(Mesh {
            peers: vec![None],
            transport: Transport::Local,
            clock_offset_ns: 0,
            clock_uncertainty_ns: 0,
            host_id,
            prefix: String::new(),
            bell: None,
        });
    }
    let start = Instant::now();
    let su = Setup {
        rank,
        world,
        opts,
        deadline: start + opts.timeout,
    };

    // 1. Listen and publish.
    let ip: IpAddr = opts.listen_ip.unwrap_or_else(|| store.local_ip());
    let listener =
        TcpListener::bind((ip, 0)).map_err(|e| su.err(format!("listening on {ip}: {e}")))?;
    if let Some(b) = opts.socket_buffer_bytes {
        set_buffer_sizes(listener.as_raw_fd(), b);
    }
    listener
        .set_nonblocking(true)
        .map_err(|e| su.err(format!("configuring the listener: {e}")))?;
    let my_addr = listener
        .local_addr()
        .map_err(|e| su.err(format!("reading the listener's address: {e}")))?;
    let group = &opts.group_name;
    let gen = store.add(&format!("ddp-comm/{group}/gen/{rank}"), 1)?;
    let payload = format!("{my_addr}\n{host_id}\n{transport}");
    let prefix = format!("ddp-comm/{group}/{gen}");
    // Every rank publishes the world size it was started with before it waits for the others:
    // a rank given another `WORLD_SIZE` is then named at once instead of the group timing out.
    store.set(
        &format!("{prefix}/world/{rank}"),
        world.to_string().as_bytes(),
    )?;
    if rank != 0 {
        // Rank 0 hosts the store (`env://`), so its key is there almost at once. If it is not
        // (another store, rank 0 late), this waits a bounded part of the setup time and leaves
        // the rest to the rendezvous below, which reports the missing ranks.
        let key = format!("{prefix}/world/0");
        let wait = (su.check_time("waiting for rank 0")? / 2).min(Duration::from_secs(2));
        if store.wait(&[&key], wait).is_ok() {
            check_world(&su, store, &key, 0)?;
        }
    }
    let values = rendezvous(
        store,
        &format!("{prefix}/peers"),
        rank,
        world,
        payload.as_bytes(),
        su.check_time("waiting for the other ranks")?,
    )?;
    if rank == 0 {
        for r in 1..world {
            check_world(&su, store, &format!("{prefix}/world/{r}"), r)?;
        }
    }
    let mut addrs = Vec::with_capacity(world);
    let mut hosts = Vec::with_capacity(world);
    let mut choices = Vec::with_capacity(world);
    for (r, v) in values.iter().enumerate() {
        let text = String::from_utf8_lossy(v);
        let mut lines = text.split('\n');
        let a = lines.next().unwrap_or("");
        let addr: SocketAddr = a
            .parse()
            .map_err(|_| su.err(format!("rank {r} published an invalid address {a:?}")))?;
        addrs.push(addr);
        hosts.push(lines.next().unwrap_or("").to_string());
        let choice: TransportChoice = lines
            .next()
            .unwrap_or("")
            .parse()
            .map_err(|_| su.err(format!("rank {r} published an invalid transport choice")))?;
        choices.push(choice);
    }

    // 2. Connect to lower ranks and send the hello.
    let token = store.token().as_str().as_bytes();
    if token.len() > MAX_TOKEN_BYTES {
        return Err(su.err("token too long"));
    }
    let mut streams: Vec<Option<TcpStream>> = (0..world).map(|_| None).collect();
    for (j, addr) in addrs.iter().enumerate().take(rank) {
        let mut s = connect_retry(&su, *addr, j)?;
        if let Some(b) = opts.socket_buffer_bytes {
            set_buffer_sizes(s.as_raw_fd(), b);
        }
        let mut hello = Vec::with_capacity(HELLO_BYTES + token.len());
        for x in [
            HELLO_MAGIC,
            HELLO_VERSION,
            world as u32,
            rank as u32,
            j as u32,
            token.len() as u32,
        ] {
            hello.extend_from_slice(&x.to_le_bytes());
        }
        hello.extend_from_slice(&(gen as u64).to_le_bytes());
        hello.extend_from_slice(token);
        su.write_all(&mut s, &hello, j, "sending the handshake")?;
        streams[j] = Some(s);
    }

    // 3. Accept higher ranks.
    accept_higher(&su, &listener, store, gen as u64, &mut streams)?;
    drop(listener);

    // 4. Answers from lower ranks.
    for (j, s) in streams.iter_mut().enumerate().take(rank) {
        let Some(s) = s.as_mut() else {
            continue;
        };
        let mut ans = [0u8; 8];
        su.read_exact(s, &mut ans, j, "waiting for the handshake answer")?;
        if u32_at(&ans, 0) != HELLO_MAGIC {
            return Err(su.err(format!("rank {j} answered the handshake with garbage")));
        }
        let status = u32_at(&ans, 4);
        if status != 0 {
            let why = Refusal::from_code(status).map_or("unknown reason", Refusal::text);
            return Err(su.err(format!("rank {j} refused the connection: {why}")));
        }
    }

    let mut peers: Vec<Option<Peer>> = Vec::with_capacity(world);
    for (r, s) in streams.into_iter().enumerate() {
        match s {
            Some(s) => {
                s.set_nodelay(true)
                    .map_err(|e| su.err(format!("configuring the socket to rank {r}: {e}")))?;
                peers.push(Some(Peer::new(r, s)));
            }
            None if r == rank => peers.push(None),
            None => return Err(su.err(format!("no connection to rank {r}"))),
        }
    }

    // 5. Shared memory between ranks on this host.
    let bell = if transport != TransportChoice::Tcp {
        setup_shm(&su, &hosts, &choices, &mut peers)?
    } else {
        None
    };

    // 6. Clock offsets to rank 0.
    let (clock_offset_ns, clock_uncertainty_ns) = clock_sync(&su, &mut peers)?;

    // 7. Switch to non-blocking for the engine.
    for p in peers.iter_mut().flatten() {
        p.stream
            .set_nonblocking(true)
            .map_err(|e| su.err(format!("configuring the socket to rank {}: {e}", p.rank)))?;
    }
    let shm_count = peers.iter().flatten().filter(|p| p.shm.is_some()).count();
    let transport = if shm_count == 0 {
        Transport::Tcp
    } else if shm_count == world - 1 {
        Transport::Shm
    } else {
        Transport::Mixed
    };
    Ok(Mesh {
        peers,
        transport,
        clock_offset_ns,
        clock_uncertainty_ns,
        host_id,
        prefix,
        bell,
    })
}

fn connect_retry(su: &Setup<'_>, addr: SocketAddr, peer: usize) -> Result<TcpStream, CommError> {
    loop {
        let left = su.check_time(&format!("connecting to rank {peer} at {addr}"))?;
        match TcpStream::connect_timeout(&addr, left) {
            Ok(s) => return Ok(s),
            Err(e) => {
                if su.left() <= Duration::from_millis(20) {
                    return Err(su.err(format!(
                        "could not connect to rank {peer} at {addr} within {}: {e}",
                        fmt_duration(su.opts.timeout)
                    )));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

fn accept_higher(
    su: &Setup<'_>,
    listener: &TcpListener,
    store: &StoreClient,
    gen: u64,
    streams: &mut [Option<TcpStream>],
) -> Result<(), CommError> {
    let (rank, world) = (su.rank, su.world);
    let mut rejected: Vec<String> = Vec::new();
    loop {
        let missing: Vec<usize> = (rank + 1..world)
            .filter(|&r| streams[r].is_none())
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let left = su.left();
        if left.is_zero() {
            let mut msg = format!(
                "{} never connected to rank {rank} within {}",
                fmt_ranks(&missing),
                fmt_duration(su.opts.timeout)
            );
            if !rejected.is_empty() {
                msg.push_str(&format!("; refused connections: {}", rejected.join("; ")));
            }
            return Err(su.err(msg));
        }
        let mut pfd = libc::pollfd {
            fd: listener.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = left.as_millis().clamp(1, 100) as libc::c_int;
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut pfd, 1, ms) };
        let (mut s, from) = match listener.accept() {
            Ok(x) => x,
            Err(e)
                if e.kind() == io::ErrorKind::WouldBlock
                    || e.kind() == io::ErrorKind::Interrupted =>
            {
                continue
            }
            Err(e) => return Err(su.err(format!("accepting peer connections: {e}"))),
        };
        if s.set_nonblocking(false).is_err() {
            continue;
        }
        // A stray or stalled client may not hold up the accept loop long.
        let hello_wait = left.min(Duration::from_secs(2));
        let _ = s.set_read_timeout(Some(hello_wait));
        let _ = s.set_write_timeout(Some(hello_wait));
        let mut hdr = [0u8; HELLO_BYTES];
        if s.read_exact(&mut hdr).is_err() {
            rejected.push(format!("{from}: incomplete handshake"));
            continue;
        }
        let verdict = (|| {
            if u32_at(&hdr, 0) != HELLO_MAGIC || u32_at(&hdr, 4) != HELLO_VERSION {
                return Err(Refusal::BadMagic);
            }
            let tlen = u32_at(&hdr, 20) as usize;
            if tlen > MAX_TOKEN_BYTES {
                return Err(Refusal::BadToken);
            }
            let mut tok = vec![0u8; tlen];
            if s.read_exact(&mut tok).is_err() || !store.token().matches(&tok) {
                return Err(Refusal::BadToken);
            }
            if u32_at(&hdr, 8) as usize != world {
                return Err(Refusal::BadWorld);
            }
            let src = u32_at(&hdr, 12) as usize;
            if src <= rank || src >= world || u32_at(&hdr, 16) as usize != rank {
                return Err(Refusal::BadRank);
            }
            if u64_at(&hdr, 24) != gen {
                return Err(Refusal::BadGeneration);
            }
            if streams[src].is_some() {
                return Err(Refusal::Duplicate);
            }
            Ok(src)
        })();
        let status = match verdict {
            Ok(_) => 0u32,
            Err(r) => r as u32,
        };
        let mut ans = Vec::with_capacity(8);
        ans.extend_from_slice(&HELLO_MAGIC.to_le_bytes());
        ans.extend_from_slice(&status.to_le_bytes());
        let wrote = s.write_all(&ans).is_ok();
        match verdict {
            Ok(src) if wrote => {
                if let Some(b) = su.opts.socket_buffer_bytes {
                    set_buffer_sizes(s.as_raw_fd(), b);
                }
                streams[src] = Some(s);
            }
            Ok(src) => rejected.push(format!("{from} (rank {src}): could not answer")),
            Err(r) => rejected.push(format!("{from}: {}", r.text())),
        }
    }
}

/// Sets up shared memory with every same-host peer that does not insist on
/// TCP (the decision is symmetric: both ends see the same choices).
fn setup_shm(
    su: &Setup<'_>,
    hosts: &[String],
    choices: &[TransportChoice],
    peers: &mut [Option<Peer>],
) -> Result<Option<shm::Bell>, CommError> {
    let rank = su.rank;
    let required = choices[rank] == TransportChoice::Shm;
    let same_host: Vec<usize> = (0..su.world)
        .filter(|&p| p != rank && !hosts[p].is_empty() && hosts[p] == hosts[rank])
        .collect();
    if required {
        if let Some(&p) = same_host
            .iter()
            .find(|&&p| choices[p] == TransportChoice::Tcp)
        {
            return Err(su.err(format!(
                "this rank requires shared memory but same-host rank {p} uses TCP only \
                 (check {} and the transport options)",
                crate::options::TRANSPORT_ENV
            )));
        }
    }
    let local: Vec<usize> = same_host
        .into_iter()
        .filter(|&p| choices[p] != TransportChoice::Tcp)
        .collect();
    if local.is_empty() {
        return Ok(None);
    }
    let cap = shm::ring_capacity(su.opts.shm_ring_bytes);
    let tag = u64::from_le_bytes(crate::token::random_bytes::<8>()?);
    // The run id and node in the name let the launcher remove what a killed rank left.
    let prefix = probe_contract::shm_names::prefix_from_env();
    let name = |what: &str| {
        su.opts
            .shm_dir
            .join(format!("{prefix}{}-{tag:016x}-{what}", std::process::id()))
    };
    let mut created: Vec<PathBuf> = Vec::new();
    let mut rxs: Vec<Option<shm::ShmRx>> = (0..su.world).map(|_| None).collect();
    let mut txs: Vec<Option<shm::ShmTx>> = (0..su.world).map(|_| None).collect();
    let mut bells: Vec<Option<Arc<shm::Bell>>> = (0..su.world).map(|_| None).collect();
    let mut failures: Vec<String> = Vec::new();
    let mut my_bell = None;

    let result = (|| -> Result<(), CommError> {
        // This rank's doorbell, shared with every local peer.
        let bell_nonce = crate::token::random_bytes::<16>()?;
        let bell_path = name(&format!("bell{rank}"));
        let bell_ok = match shm::Bell::create(&bell_path, bell_nonce) {
            Ok(b) => {
                created.push(bell_path.clone());
                my_bell = Some(b);
                true
            }
            Err(e) => {
                failures.push(format!("creating {}: {e}", bell_path.display()));
                false
            }
        };
        let bell_bytes = bell_path.to_string_lossy().into_owned().into_bytes();
        // Offers: a ring for what each local peer will send us, and the bell.
        for &p in &local {
            let nonce = crate::token::random_bytes::<16>()?;
            let path = name(&format!("{p}to{rank}"));
            let ring = if bell_ok {
                match shm::create_ring(&path, cap, nonce) {
                    Ok(rx) => {
                        created.push(path.clone());
                        rxs[p] = Some(rx);
                        true
                    }
                    Err(e) => {
                        failures.push(format!("creating {}: {e}", path.display()));
                        false
                    }
                }
            } else {
                false
            };
            let pb = path.to_string_lossy().into_owned().into_bytes();
            let mut o = vec![u8::from(ring)];
            o.extend_from_slice(&(cap as u64).to_le_bytes());
            o.extend_from_slice(&nonce);
            o.extend_from_slice(&bell_nonce);
            o.extend_from_slice(&(pb.len() as u16).to_le_bytes());
            o.extend_from_slice(&(bell_bytes.len() as u16).to_le_bytes());
            o.extend_from_slice(&pb);
            o.extend_from_slice(&bell_bytes);
            let s = &mut peer_of(su, peers, p)?.stream;
            su.write_all(s, &o, p, "offering shared memory")?;
        }
        // Take the peers' offers.
        for &p in &local {
            let s = &mut peer_of(su, peers, p)?.stream;
            let mut head = [0u8; OFFER_HEAD];
            su.read_exact(s, &mut head, p, "negotiating shared memory")?;
            let plen = u16::from_le_bytes([head[41], head[42]]) as usize;
            let blen = u16::from_le_bytes([head[43], head[44]]) as usize;
            let mut paths = vec![0u8; plen + blen];
            su.read_exact(s, &mut paths, p, "negotiating shared memory")?;
            let ok = head[0] == 1 && {
                let pcap = u64_at(&head, 1) as usize;
                let mut nonce = [0u8; 16];
                nonce.copy_from_slice(&head[9..25]);
                let mut bnonce = [0u8; 16];
                bnonce.copy_from_slice(&head[25..41]);
                let ring_path = PathBuf::from(String::from_utf8_lossy(&paths[..plen]).into_owned());
                let bell_path = PathBuf::from(String::from_utf8_lossy(&paths[plen..]).into_owned());
                if pcap != cap {
                    failures.push(format!(
                        "rank {p} uses rings of {pcap} bytes, this rank {cap}"
                    ));
                    false
                } else {
                    match shm::open_ring(&ring_path, cap, nonce)
                        .and_then(|tx| shm::Bell::open(&bell_path, bnonce).map(|b| (tx, b)))
                    {
                        Ok((tx, bell)) => {
                            txs[p] = Some(tx);
                            bells[p] = Some(Arc::new(bell));
                            true
                        }
                        Err(e) => {
                            failures.push(e);
                            false
                        }
                    }
                }
            };
            su.write_all(s, &[u8::from(ok)], p, "negotiating shared memory")?;
        }
        // Answers: did each peer open the ring we created for it?
        for &p in &local {
            let s = &mut peer_of(su, peers, p)?.stream;
            let mut a = [0u8; 1];
            su.read_exact(s, &mut a, p, "negotiating shared memory")?;
            match (a[0] == 1, txs[p].take(), rxs[p].take(), bells[p].take()) {
                (true, Some(mut tx), Some(mut rx), Some(bell)) => {
                    tx.peer_bell = Some(Arc::clone(&bell));
                    rx.peer_bell = Some(bell);
                    peer_of(su, peers, p)?.shm = Some(ShmPair { tx, rx });
                }
                _ => {
                    if required {
                        if a[0] != 1 {
                            failures.push(format!("rank {p} could not open this rank's ring"));
                        }
                        return Err(su.err(format!(
                            "shared memory to same-host rank {p} could not be set up: {}",
                            failures.join("; ")
                        )));
                    }
                }
            }
        }
        Ok(())
    })();
    for path in created {
        let _ = std::fs::remove_file(path);
    }
    result?;
    if peers.iter().flatten().any(|p| p.shm.is_some()) {
        Ok(my_bell)
    } else {
        Ok(None)
    }
}

fn peer_of<'a>(
    su: &Setup<'_>,
    peers: &'a mut [Option<Peer>],
    p: usize,
) -> Result<&'a mut Peer, CommError> {
    peers
        .get_mut(p)
        .and_then(Option::as_mut)
        .ok_or_else(|| su.err(format!("no connection to rank {p}")))
}

fn clock_sync(su: &Setup<'_>, peers: &mut [Option<Peer>]) -> Result<(i64, u64), CommError> {
    let rounds = su.opts.clock_sync_rounds.max(1);
    if su.rank == 0 {
        for p in 1..su.world {
            let s = &mut peer_of(su, peers, p)?.stream;
            for _ in 0..rounds {
                let mut ping = [0u8; 8];
                su.read_exact(s, &mut ping, p, "measuring clock offsets")?;
                su.write_all(s, &now_ns().to_le_bytes(), p, "measuring clock offsets")?;
            }
        }
        return Ok((0, 0));
    }
    let s = &mut peer_of(su, peers, 0)?.stream;
    let mut best: Option<(u64, i64)> = None;
    for _ in 0..rounds {
        let t1 = now_ns();
        su.write_all(s, &t1.to_le_bytes(), 0, "measuring clock offsets")?;
        let mut b = [0u8; 8];
        su.read_exact(s, &mut b, 0, "measuring clock offsets")?;
        let t4 = now_ns();
        let t2 = u64::from_le_bytes(b);
        let rtt = t4.saturating_sub(t1);
        let mid = (t1 as i128 + t4 as i128) / 2;
        let offset = (t2 as i128 - mid).clamp(i64::MIN as i128, i64::MAX as i128) as i64;
        if best.is_none_or(|(r, _)| rtt < r) {
            best = Some((rtt, offset));
        }
    }
    let (rtt, offset) = best.unwrap_or((0, 0));
    Ok((offset, rtt.div_ceil(2)))
}
