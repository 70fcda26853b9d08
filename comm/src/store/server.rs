//! The store server ([`StoreServer`]): a key-value map behind a TCP listener,
//! served by one accept thread and one thread per connection.
//!
//! Robustness rules: a connection must present the token within
//! [`ServerOptions::handshake_timeout`] (2 s); once a frame has started it must
//! complete within [`ServerOptions::frame_timeout`]; frames are bounded by
//! the limits in [`super::protocol`]. At most
//! [`ServerOptions::max_unauthenticated`] connections (64) may be waiting to
//! present the token: one more pushes out the oldest of them, so a flood of
//! connections from anyone without the token holds at most that many threads
//! and twice that many descriptors, whatever its size, and cannot starve the
//! training process it runs in (checkpoints, logs, peers) of descriptors. At
//! most [`ServerOptions::max_connections`] connections are served in all; when
//! every one of them has presented the token a new one is refused. A
//! misbehaving client only ever costs its own thread, and that thread ends.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::protocol::{Request, Response, MAX_FRAME_BYTES, PROTOCOL_VERSION};
use crate::error::CommError;
use crate::token::{Token, TOKEN_ENV};

/// How often blocked server threads look at the stop flag.
const POLL_INTERVAL: Duration = Duration::from_millis(50);
/// Largest frame accepted before the token was presented.
const MAX_HELLO_FRAME_BYTES: usize = 1024;
/// Stack of a connection thread: requests are handled without recursion and
/// values live on the heap, so a small stack lets many connections be
/// served cheaply.
const CONNECTION_STACK_BYTES: usize = 256 << 10;

/// Limits of a [`StoreServer`].
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Time a new connection has to present the token.
    pub handshake_timeout: Duration,
    /// Most connections waiting to present the token at once; one more
    /// pushes out the oldest of them.
    pub max_unauthenticated: usize,
    /// Time a frame may take from its first byte to its last, and a response
    /// may take to be written.
    pub frame_timeout: Duration,
    /// Most connections served at once. At the limit, a new connection
    /// replaces the oldest one still waiting to present the token; when
    /// every connection has presented it, the new one is refused.
    pub max_connections: usize,
    /// Longest wait a `GET` or `WAIT` may ask for; longer requests are cut
    /// to it (they answer `TIMEOUT` then).
    pub max_wait: Duration,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            handshake_timeout: Duration::from_secs(2),
            max_unauthenticated: 64,
            frame_timeout: Duration::from_secs(30),
            max_connections: 1024,
            max_wait: Duration::from_secs(24 * 3600),
        }
    }
}

struct Shared {
    token: Token,
    opts: ServerOptions,
    stop: AtomicBool,
    data: Mutex<HashMap<String, Vec<u8>>>,
    changed: Condvar,
    /// Open connections by id, and whether each has presented the token.
    conns: Mutex<HashMap<u64, (TcpStream, bool)>>,
    active: AtomicUsize,
    next_id: AtomicU64,
}

impl Shared {
    fn data(&self) -> MutexGuard<'_, HashMap<String, Vec<u8>>> {
        // A poisoned lock only means another connection thread panicked; the
        // map itself is always left consistent.
        self.data.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn conns(&self) -> MutexGuard<'_, HashMap<u64, (TcpStream, bool)>> {
        self.conns.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A rendezvous key-value store served over TCP (like
/// `torch.distributed.TCPStore`'s server).
///
/// It listens only on the address given to [`StoreServer::bind`] and serves
/// on background threads until dropped. See [`super::protocol`] for the wire
/// format.
pub struct StoreServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    accept: Option<JoinHandle<()>>,
}

impl StoreServer {
    /// Binds to `addr` (port 0 picks a free port) and starts serving with
    /// default limits. Clients must present `token`.
    pub fn bind(addr: impl ToSocketAddrs, token: Token) -> Result<StoreServer, CommError> {
        Self::bind_with_options(addr, token, ServerOptions::default())
    }

    /// Like [`StoreServer::bind`] with explicit limits.
    pub fn bind_with_options(
        addr: impl ToSocketAddrs,
        token: Token,
        opts: ServerOptions,
    ) -> Result<StoreServer, CommError> {
        let listener =
            TcpListener::bind(addr).map_err(|e| CommError::io("binding the store listener", e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| CommError::io("reading the store listener's address", e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| CommError::io("configuring the store listener", e))?;
        let shared = Arc::new(Shared {
            token,
            opts,
            stop: AtomicBool::new(false),
            data: Mutex::new(HashMap::new()),
            changed: Condvar::new(),
            conns: Mutex::new(HashMap::new()),
            active: AtomicUsize::new(0),
            next_id: AtomicU64::new(0),
        });
        let s2 = Arc::clone(&shared);
        let accept = std::thread::Builder::new()
            .name("store-accept".into())
            .spawn(move || accept_loop(listener, s2))
            .map_err(|e| CommError::io("starting the store's accept thread", e))?;
        Ok(StoreServer {
            shared,
            addr,
            accept: Some(accept),
        })
    }

    /// The address the server listens on (with the actual port).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The token clients must present.
    pub fn token(&self) -> &Token {
        &self.shared.token
    }

    /// Number of connections being served right now.
    pub fn num_connections(&self) -> usize {
        self.shared.active.load(Ordering::SeqCst)
    }

    /// Stops serving: closes the listener and every connection. Dropping the
    /// server does the same.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.changed.notify_all();
        for (conn, _) in self.shared.conns().values() {
            let _ = conn.shutdown(Shutdown::Both);
        }
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

impl Drop for StoreServer {
    fn drop(&mut self) {
        self.stop();
    }
}

impl std::fmt::Debug for StoreServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreServer")
            .field("addr", &self.addr)
            .field("connections", &self.num_connections())
            .finish()
    }
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let fd = listener.as_raw_fd();
    while !shared.stop.load(Ordering::SeqCst) {
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: `pfd` is a valid pollfd array of length 1 for the call.
        unsafe { libc::poll(&mut pfd, 1, POLL_INTERVAL.as_millis() as libc::c_int) };
        loop {
            match listener.accept() {
                Ok((stream, _peer)) => start_connection(stream, &shared),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    // Out of descriptors or a connection reset before accept:
                    // back off briefly and keep serving.
                    std::thread::sleep(Duration::from_millis(10));
                    break;
                }
            }
        }
    }
}

fn start_connection(mut stream: TcpStream, shared: &Arc<Shared>) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_nodelay(true);
    let unauthenticated = shared
        .conns()
        .values()
        .filter(|(_, authed)| !authed)
        .count();
    if unauthenticated >= shared.opts.max_unauthenticated.max(1) {
        push_out_oldest_unauthenticated(shared);
    }
    if shared.active.load(Ordering::SeqCst) >= shared.opts.max_connections
        && !push_out_oldest_unauthenticated(shared)
    {
        let _ = stream.set_write_timeout(Some(Duration::from_millis(100)));
        let _ = stream.write_all(
            &Response::Error(format!(
                "too many connections: all {} allowed are in use by authenticated clients",
                shared.opts.max_connections
            ))
            .encode(),
        );
        return;
    }
    let id = shared.next_id.fetch_add(1, Ordering::SeqCst);
    let Ok(clone) = stream.try_clone() else {
        return;
    };
    {
        let mut conns = shared.conns();
        conns.insert(id, (clone, false));
        shared.active.fetch_add(1, Ordering::SeqCst);
    }
    let s2 = Arc::clone(shared);
    let spawned = std::thread::Builder::new()
        .name("store-conn".into())
        .stack_size(CONNECTION_STACK_BYTES)
        .spawn(move || {
            let _guard = ConnGuard {
                shared: Arc::clone(&s2),
                id,
            };
            serve_connection(stream, &s2, id);
        });
    if spawned.is_err() {
        let mut conns = shared.conns();
        if conns.remove(&id).is_some() {
            shared.active.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Closes the oldest connection that has not presented the token yet and
/// stops counting it (its thread then ends); false when there is none.
fn push_out_oldest_unauthenticated(shared: &Shared) -> bool {
    let mut conns = shared.conns();
    let oldest = conns
        .iter()
        .filter(|(_, (_, authed))| !authed)
        .map(|(id, _)| *id)
        .min();
    match oldest.and_then(|id| conns.remove(&id)) {
        Some((stream, _)) => {
            let _ = stream.shutdown(Shutdown::Both);
            shared.active.fetch_sub(1, Ordering::SeqCst);
            true
        }
        None => false,
    }
}

/// Unregisters a connection when its thread ends, however it ends.
struct ConnGuard {
    shared: Arc<Shared>,
    id: u64,
}

impl Drop for ConnGuard {
    fn drop(&mut self) {
        // A connection pushed out was already removed and uncounted.
        let mut conns = self.shared.conns();
        if conns.remove(&self.id).is_some() {
            self.shared.active.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

enum FrameRead {
    Frame(Vec<u8>),
    /// The client closed the connection between frames.
    Closed,
    /// The connection must be dropped; the string says why (sent as `ERROR`
    /// when it is worth telling).
    Drop(Option<String>),
}

/// Reads one frame. `idle_deadline` bounds the wait for its first byte
/// (`None`: wait as long as the server runs); once started the frame must
/// complete within the frame timeout.
fn read_frame(
    stream: &mut TcpStream,
    shared: &Shared,
    idle_deadline: Option<Instant>,
    max_body: usize,
) -> FrameRead {
    let mut len = [0u8; 4];
    let mut frame_deadline = None;
    match read_exact_polled(stream, &mut len, shared, idle_deadline, &mut frame_deadline) {
        Ok(true) => {}
        Ok(false) => return FrameRead::Closed,
        Err(why) => return FrameRead::Drop(why),
    }
    let n = u32::from_le_bytes(len) as usize;
    if n == 0 || n > max_body {
        return FrameRead::Drop(Some(format!(
            "frame of {n} bytes is outside the allowed 1..={max_body} bytes"
        )));
    }
    let mut body = vec![0u8; n];
    match read_exact_polled(
        stream,
        &mut body,
        shared,
        idle_deadline,
        &mut frame_deadline,
    ) {
        Ok(true) => FrameRead::Frame(body),
        Ok(false) => FrameRead::Drop(None),
        Err(why) => FrameRead::Drop(why),
    }
}

/// Fills `buf`. `Ok(false)`: EOF before the first byte of `buf` when no frame
/// was in progress. `Err`: the connection must be dropped.
fn read_exact_polled(
    stream: &mut TcpStream,
    buf: &mut [u8],
    shared: &Shared,
    idle_deadline: Option<Instant>,
    frame_deadline: &mut Option<Instant>,
) -> Result<bool, Option<String>> {
    let mut filled = 0;
    while filled < buf.len() {
        match stream.read(&mut buf[filled..]) {
            Ok(0) => {
                return if frame_deadline.is_none() {
                    Ok(false)
                } else {
                    Err(None)
                };
            }
            Ok(n) => {
                filled += n;
                if frame_deadline.is_none() {
                    *frame_deadline = Some(Instant::now() + shared.opts.frame_timeout);
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                if shared.stop.load(Ordering::SeqCst) {
                    return Err(None);
                }
                let now = Instant::now();
                match *frame_deadline {
                    Some(d) if now >= d => {
                        return Err(Some("incomplete frame: client stalled".into()));
                    }
                    Some(_) => {}
                    None => {
                        if idle_deadline.is_some_and(|d| now >= d) {
                            return Err(Some("no valid hello within the handshake timeout".into()));
                        }
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Err(None),
        }
    }
    Ok(true)
}

fn serve_connection(mut stream: TcpStream, shared: &Shared, id: u64) {
    if stream.set_read_timeout(Some(POLL_INTERVAL)).is_err()
        || stream
            .set_write_timeout(Some(shared.opts.frame_timeout))
            .is_err()
    {
        return;
    }
    // Authentication: the first frame must be a HELLO with the right token.
    let deadline = Instant::now() + shared.opts.handshake_timeout;
    let body = match read_frame(&mut stream, shared, Some(deadline), MAX_HELLO_FRAME_BYTES) {
        FrameRead::Frame(b) => b,
        FrameRead::Closed => return,
        FrameRead::Drop(why) => {
            if let Some(why) = why {
                let _ = stream.write_all(&Response::Error(why).encode());
            }
            return;
        }
    };
    let verdict = match Request::decode(&body) {
        Ok(Request::Hello { version, token }) => {
            if version != PROTOCOL_VERSION {
                Err(format!(
                    "protocol version {version} is not supported (server speaks {PROTOCOL_VERSION})"
                ))
            } else if token.is_empty() {
                Err(format!(
                    "no token presented: every client of a run must present the run's token \
                     (ddp-probe run passes it to each rank in {TOKEN_ENV})"
                ))
            } else if !shared.token.matches(&token) {
                Err(format!(
                    "invalid token: this process does not have the token of the run this store \
                     belongs to; start it under the same ddp-probe run, or set {TOKEN_ENV} to \
                     the run's token"
                ))
            } else {
                Ok(())
            }
        }
        Ok(other) => Err(format!("expected hello first, got {}", other.name())),
        Err(e) => Err(format!("malformed hello: {e}")),
    };
    if let Err(why) = verdict {
        let _ = stream.write_all(&Response::Error(why).encode());
        return;
    }
    if let Some((_, authed)) = shared.conns().get_mut(&id) {
        *authed = true;
    }
    if stream.write_all(&Response::Ok.encode()).is_err() {
        return;
    }

    loop {
        let body = match read_frame(&mut stream, shared, None, MAX_FRAME_BYTES) {
            FrameRead::Frame(b) => b,
            FrameRead::Closed => return,
            FrameRead::Drop(why) => {
                if let Some(why) = why {
                    let _ = stream.write_all(&Response::Error(why).encode());
                }
                return;
            }
        };
        let (resp, fatal) = match Request::decode(&body) {
            Ok(req) => handle(req, shared, &stream),
            Err(e) => (Response::Error(format!("malformed request: {e}")), true),
        };
        if stream.write_all(&resp.encode()).is_err() || fatal {
            return;
        }
    }
}

fn timeout_of(ms: u64, shared: &Shared) -> Duration {
    Duration::from_millis(ms).min(shared.opts.max_wait)
}

/// Executes one authenticated request from the client on `peer`; the flag says whether the
/// connection must be closed after the response.
fn handle(req: Request, shared: &Shared, peer: &TcpStream) -> (Response, bool) {
    match req {
        Request::Hello { .. } => (Response::Error("hello sent twice".into()), true),
        Request::Set { key, value } => {
            shared.data().insert(key, value);
            shared.changed.notify_all();
            (Response::Ok, false)
        }
        Request::Get { key, timeout_ms } => {
            let keys = [key];
            match wait_for(shared, &keys, timeout_of(timeout_ms, shared), peer) {
                Ok(map) => match map.get(&keys[0]) {
                    Some(v) => (Response::Value(v.clone()), false),
                    None => (Response::Timeout(keys.to_vec()), false),
                },
                Err(resp) => (resp, true),
            }
        }
        Request::Add { key, delta } => {
            let mut map = shared.data();
            let current = match map.get(&key) {
                None => Ok(0i64),
                Some(v) => std::str::from_utf8(v)
                    .ok()
                    .and_then(|s| s.parse::<i64>().ok())
                    .ok_or_else(|| format!("value of key {key:?} is not a decimal integer")),
            };
            let resp = match current.and_then(|c| {
                c.checked_add(delta)
                    .ok_or_else(|| format!("add on key {key:?} overflows"))
            }) {
                Ok(new) => {
                    map.insert(key, new.to_string().into_bytes());
                    shared.changed.notify_all();
                    Response::Int(new)
                }
                Err(e) => Response::Error(e),
            };
            (resp, false)
        }
        Request::Wait { keys, timeout_ms } => {
            match wait_for(shared, &keys, timeout_of(timeout_ms, shared), peer) {
                Ok(map) => {
                    let missing: Vec<String> = keys
                        .iter()
                        .filter(|k| !map.contains_key(*k))
                        .cloned()
                        .collect();
                    if missing.is_empty() {
                        (Response::Ok, false)
                    } else {
                        (Response::Timeout(missing), false)
                    }
                }
                Err(resp) => (resp, true),
            }
        }
        Request::Delete { key } => {
            let existed = shared.data().remove(&key).is_some();
            (Response::Bool(existed), false)
        }
        Request::NumKeys => (Response::Int(shared.data().len() as i64), false),
        Request::Check { keys } => {
            let map = shared.data();
            (
                Response::Bool(keys.iter().all(|k| map.contains_key(k))),
                false,
            )
        }
        Request::Ping => (Response::Ok, false),
    }
}

/// Waits until every key exists or the timeout passes, and returns the
/// locked map either way (the caller sorts out which keys are missing).
/// A wait ends early with an error when the store shuts down or when the
/// client on `peer` has gone away (a dead client must not hold a connection
/// slot and a thread for the rest of a long timeout).
fn wait_for<'a>(
    shared: &'a Shared,
    keys: &[String],
    timeout: Duration,
    peer: &TcpStream,
) -> Result<MutexGuard<'a, HashMap<String, Vec<u8>>>, Response> {
    let deadline = Instant::now() + timeout;
    let mut map = shared.data();
    loop {
        if keys.iter().all(|k| map.contains_key(k)) {
            return Ok(map);
        }
        if shared.stop.load(Ordering::SeqCst) {
            return Err(Response::Error("the store is shutting down".into()));
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(map);
        }
        let slice = (deadline - now).min(POLL_INTERVAL * 4);
        if peer_gone(peer) {
            return Err(Response::Error("the client closed the connection".into()));
        }
        map = shared
            .changed
            .wait_timeout(map, slice)
            .map(|(g, _)| g)
            .unwrap_or_else(|e| e.into_inner().0);
    }
}

/// Whether the client on `peer` has closed its end or the connection broke: a
/// non-blocking peek that sees end-of-file or an error. Bytes waiting to be read
/// (a pipelined request) mean the client is still there.
fn peer_gone(peer: &TcpStream) -> bool {
    if peer.set_nonblocking(true).is_err() {
        return true;
    }
    let mut byte = [0u8; 1];
    let gone = match peer.peek(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
        ),
    };
    peer.set_nonblocking(false).is_err() || gone
}
