//! The store client ([`StoreClient`]): one authenticated TCP connection to a
//! [`super::StoreServer`], shared by the threads of a process behind a mutex.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::protocol::{validate_key, Request, Response, MAX_FRAME_BYTES, PROTOCOL_VERSION};
use crate::error::CommError;
use crate::token::Token;

/// Extra time a client waits for the answer to a blocking request beyond the
/// request's own timeout (the server answers `TIMEOUT` itself when it runs
/// out; this only guards against a server that stopped answering).
const RESPONSE_SLACK: Duration = Duration::from_secs(5);
/// Pause between connection attempts while the server is not up yet.
const RETRY_PAUSE: Duration = Duration::from_millis(25);

/// A connection to a [`super::StoreServer`].
///
/// All methods take `&self`; requests from several threads are serialised.
/// After a broken connection the next request reconnects (and presents the
/// token again).
pub struct StoreClient {
    addrs: Vec<SocketAddr>,
    addr_text: String,
    token: Token,
    timeout: Duration,
    local_ip: IpAddr,
    conn: Mutex<Option<TcpStream>>,
}

impl fmt::Debug for StoreClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreClient")
            .field("addr", &self.addr_text)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl StoreClient {
    /// Connects to the store at `addr` and presents `token`.
    ///
    /// Connection attempts are retried until `timeout` passes (the server
    /// may start after its clients). `timeout` is also the default for
    /// [`StoreClient::get`] and the limit for every other request.
    pub fn connect<A>(addr: A, token: &Token, timeout: Duration) -> Result<StoreClient, CommError>
    where
        A: ToSocketAddrs + fmt::Display,
    {
        let addr_text = addr.to_string();
        let deadline = Instant::now() + timeout;
        let (stream, addrs) = loop {
            let attempt = addr
                .to_socket_addrs()
                .and_then(|it| {
                    let addrs: Vec<SocketAddr> = it.collect();
                    if addrs.is_empty() {
                        Err(io::Error::new(
                            io::ErrorKind::NotFound,
                            "address resolved to nothing",
                        ))
                    } else {
                        Ok(addrs)
                    }
                })
                .and_then(|addrs| connect_any(&addrs, deadline).map(|s| (s, addrs)));
            match attempt {
                Ok(ok) => break ok,
                Err(e) => {
                    if Instant::now() + RETRY_PAUSE >= deadline {
                        return Err(CommError::StoreConnect {
                            addr: addr_text,
                            waited: timeout,
                            source: e,
                        });
                    }
                    std::thread::sleep(RETRY_PAUSE);
                }
            }
        };
        let local_ip = stream
            .local_addr()
            .map_err(|e| CommError::io("reading the store connection's local address", e))?
            .ip();
        let client = StoreClient {
            addrs,
            addr_text,
            token: token.clone(),
            timeout,
            local_ip,
            conn: Mutex::new(None),
        };
        let stream = client.authenticate(stream)?;
        *client.lock() = Some(stream);
        Ok(client)
    }

    /// The store's address as given to [`StoreClient::connect`].
    pub fn addr(&self) -> &str {
        &self.addr_text
    }

    /// The default timeout of this client's requests.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The token this client presents.
    pub fn token(&self) -> &Token {
        &self.token
    }

    /// The local IP address of the connection to the store: an address of
    /// this host that the store's host (and likely its peers) can reach.
    pub fn local_ip(&self) -> IpAddr {
        self.local_ip
    }

    /// Sets `key` to `value` (replacing any earlier value).
    pub fn set(&self, key: &str, value: &[u8]) -> Result<(), CommError> {
        self.check_key(key)?;
        if value.len() > super::protocol::MAX_VALUE_BYTES {
            return Err(CommError::InvalidArgument(format!(
                "value of {} bytes exceeds the store's limit of {} bytes",
                value.len(),
                super::protocol::MAX_VALUE_BYTES
            )));
        }
        let req = Request::Set {
            key: key.to_string(),
            value: value.to_vec(),
        };
        match self.request(&req, self.timeout)? {
            Response::Ok => Ok(()),
            other => Err(self.unexpected("set", other)),
        }
    }

    /// Returns the value of `key`, waiting up to the client's timeout for it
    /// to be set.
    pub fn get(&self, key: &str) -> Result<Vec<u8>, CommError> {
        self.get_timeout(key, self.timeout)
    }

    /// Returns the value of `key`, waiting up to `timeout` for it to be set.
    pub fn get_timeout(&self, key: &str, timeout: Duration) -> Result<Vec<u8>, CommError> {
        self.check_key(key)?;
        let req = Request::Get {
            key: key.to_string(),
            timeout_ms: millis(timeout),
        };
        match self.request(&req, timeout + RESPONSE_SLACK)? {
            Response::Value(v) => Ok(v),
            Response::Timeout(missing) => Err(CommError::StoreTimeout {
                op: "get",
                addr: self.addr_text.clone(),
                waited: timeout,
                missing,
            }),
            other => Err(self.unexpected("get", other)),
        }
    }

    /// Adds `delta` to the integer stored at `key` (a missing key counts as
    /// 0) and returns the new value. The value is stored as decimal text.
    pub fn add(&self, key: &str, delta: i64) -> Result<i64, CommError> {
        self.check_key(key)?;
        let req = Request::Add {
            key: key.to_string(),
            delta,
        };
        match self.request(&req, self.timeout)? {
            Response::Int(v) => Ok(v),
            other => Err(self.unexpected("add", other)),
        }
    }

    /// Waits until every key in `keys` exists. On timeout the error lists
    /// the keys still missing.
    pub fn wait<K: AsRef<str>>(&self, keys: &[K], timeout: Duration) -> Result<(), CommError> {
        let keys = self.key_list(keys)?;
        let req = Request::Wait {
            keys,
            timeout_ms: millis(timeout),
        };
        match self.request(&req, timeout + RESPONSE_SLACK)? {
            Response::Ok => Ok(()),
            Response::Timeout(missing) => Err(CommError::StoreTimeout {
                op: "wait",
                addr: self.addr_text.clone(),
                waited: timeout,
                missing,
            }),
            other => Err(self.unexpected("wait", other)),
        }
    }

    /// Deletes `key`; returns whether it existed.
    pub fn delete(&self, key: &str) -> Result<bool, CommError> {
        self.check_key(key)?;
        match self.request(
            &Request::Delete {
                key: key.to_string(),
            },
            self.timeout,
        )? {
            Response::Bool(b) => Ok(b),
            other => Err(self.unexpected("delete", other)),
        }
    }

    /// Number of keys in the store.
    pub fn num_keys(&self) -> Result<u64, CommError> {
        match self.request(&Request::NumKeys, self.timeout)? {
            Response::Int(n) => Ok(u64::try_from(n).unwrap_or(0)),
            other => Err(self.unexpected("num_keys", other)),
        }
    }

    /// Whether every key in `keys` exists right now (does not wait).
    pub fn check<K: AsRef<str>>(&self, keys: &[K]) -> Result<bool, CommError> {
        let keys = self.key_list(keys)?;
        match self.request(&Request::Check { keys }, self.timeout)? {
            Response::Bool(b) => Ok(b),
            other => Err(self.unexpected("check", other)),
        }
    }

    /// Round trip to the server; fails if it does not answer.
    pub fn ping(&self) -> Result<(), CommError> {
        match self.request(&Request::Ping, self.timeout)? {
            Response::Ok => Ok(()),
            other => Err(self.unexpected("ping", other)),
        }
    }

    fn check_key(&self, key: &str) -> Result<(), CommError> {
        validate_key(key).map_err(CommError::InvalidArgument)
    }

    fn key_list<K: AsRef<str>>(&self, keys: &[K]) -> Result<Vec<String>, CommError> {
        if keys.len() > super::protocol::MAX_WAIT_KEYS {
            return Err(CommError::InvalidArgument(format!(
                "{} keys exceed the limit of {} per request",
                keys.len(),
                super::protocol::MAX_WAIT_KEYS
            )));
        }
        keys.iter()
            .map(|k| {
                self.check_key(k.as_ref())?;
                Ok(k.as_ref().to_string())
            })
            .collect()
    }

    fn lock(&self) -> MutexGuard<'_, Option<TcpStream>> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn unexpected(&self, op: &str, resp: Response) -> CommError {
        match resp {
            Response::Error(reason) => CommError::StoreRejected {
                addr: self.addr_text.clone(),
                reason: format!("{op}: {reason}"),
            },
            other => CommError::StoreConnection {
                addr: self.addr_text.clone(),
                detail: format!("unexpected response to {op}: {other:?}"),
            },
        }
    }

    fn conn_err(&self, detail: String) -> CommError {
        CommError::StoreConnection {
            addr: self.addr_text.clone(),
            detail,
        }
    }

    /// Sends HELLO on a fresh connection and checks the answer.
    fn authenticate(&self, mut stream: TcpStream) -> Result<TcpStream, CommError> {
        let _ = stream.set_nodelay(true);
        let hello = Request::Hello {
            version: PROTOCOL_VERSION,
            token: self.token.as_str().as_bytes().to_vec(),
        };
        match self.exchange(&mut stream, &hello, self.timeout)? {
            Response::Ok => Ok(stream),
            Response::Error(reason) => Err(CommError::StoreRejected {
                addr: self.addr_text.clone(),
                reason,
            }),
            other => Err(self.conn_err(format!("unexpected answer to hello: {other:?}"))),
        }
    }

    fn exchange(
        &self,
        stream: &mut TcpStream,
        req: &Request,
        read_timeout: Duration,
    ) -> Result<Response, CommError> {
        let what = req.name();
        stream
            .set_write_timeout(Some(self.timeout.max(Duration::from_millis(1))))
            .and_then(|_| stream.set_read_timeout(Some(read_timeout.max(Duration::from_millis(1)))))
            .map_err(|e| self.conn_err(format!("configuring the socket: {e}")))?;
        stream
            .write_all(&req.encode())
            .map_err(|e| self.conn_err(format!("sending {what}: {e}")))?;
        let mut len = [0u8; 4];
        read_full(stream, &mut len)
            .map_err(|e| self.conn_err(format!("reading the answer to {what}: {e}")))?;
        let n = u32::from_le_bytes(len) as usize;
        if n == 0 || n > MAX_FRAME_BYTES {
            return Err(self.conn_err(format!("answer to {what} has invalid length {n}")));
        }
        let mut body = vec![0u8; n];
        read_full(stream, &mut body)
            .map_err(|e| self.conn_err(format!("reading the answer to {what}: {e}")))?;
        Response::decode(&body)
            .map_err(|e| self.conn_err(format!("malformed answer to {what}: {e}")))
    }

    /// Sends one request and reads its answer, reconnecting first if an
    /// earlier request broke the connection.
    fn request(&self, req: &Request, read_timeout: Duration) -> Result<Response, CommError> {
        let mut guard = self.lock();
        if guard.is_none() {
            let deadline = Instant::now() + self.timeout;
            let stream = connect_any(&self.addrs, deadline)
                .map_err(|e| self.conn_err(format!("reconnecting: {e}")))?;
            *guard = Some(self.authenticate(stream)?);
        }
        let Some(stream) = guard.as_mut() else {
            return Err(self.conn_err("no connection".into()));
        };
        let result = self.exchange(stream, req, read_timeout);
        if let Err(CommError::StoreConnection { .. }) = &result {
            // The stream may be out of step with the server: start afresh.
            *guard = None;
        }
        result
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn read_full(stream: &mut TcpStream, buf: &mut [u8]) -> io::Result<()> {
    let mut filled = 0;
    while filled < buf.len() {
        match stream.read(&mut buf[filled..]) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the store closed the connection",
                ))
            }
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "no answer in time"))
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Connects to the first address that accepts, bounding each attempt by the
/// time left until `deadline`.
fn connect_any(addrs: &[SocketAddr], deadline: Instant) -> io::Result<TcpStream> {
    let mut last = io::Error::new(io::ErrorKind::TimedOut, "connect timed out");
    for a in addrs {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        match TcpStream::connect_timeout(a, left) {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(last)
}
