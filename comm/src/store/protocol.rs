//! The store's wire format: frame encoding and decoding shared by the server
//! and the client.
//!
//! # Frames
//!
//! Every message in either direction is one frame:
//!
//! ```text
//! u32 LE  body length N   (1 ..= MAX_FRAME_BYTES)
//! N bytes body            = u8 tag, then the tag's fields
//! ```
//!
//! Field encodings: integers are little-endian (`u32`, `u64`, `i64`);
//! `bytes` is a `u32` length followed by that many bytes; a `key` is `bytes`
//! holding 1 ..= [`MAX_KEY_BYTES`] of UTF-8; a `keys` list is a `u32` count
//! (at most [`MAX_WAIT_KEYS`]) followed by that many keys. A body with bytes
//! left over after its fields is invalid.
//!
//! # Requests (client to server)
//!
//! | tag    | name       | fields                          | response           |
//! |--------|------------|---------------------------------|--------------------|
//! | `0x01` | `HELLO`    | `u32` version, `bytes` token    | `OK` or `ERROR`    |
//! | `0x02` | `SET`      | key, `bytes` value              | `OK`               |
//! | `0x03` | `GET`      | key, `u64` timeout ms           | `VALUE`/`TIMEOUT`  |
//! | `0x04` | `ADD`      | key, `i64` delta                | `INT` (new value)  |
//! | `0x05` | `WAIT`     | keys, `u64` timeout ms          | `OK`/`TIMEOUT`     |
//! | `0x06` | `DELETE`   | key                             | `BOOL` (existed)   |
//! | `0x07` | `NUM_KEYS` | none                            | `INT`              |
//! | `0x08` | `CHECK`    | keys                            | `BOOL` (all exist) |
//! | `0x09` | `PING`     | none                            | `OK`               |
//!
//! # Responses (server to client)
//!
//! | tag    | name      | fields                               |
//! |--------|-----------|--------------------------------------|
//! | `0x80` | `OK`      | none                                 |
//! | `0x81` | `VALUE`   | `bytes` value                        |
//! | `0x82` | `INT`     | `i64`                                |
//! | `0x83` | `BOOL`    | `u8` (0 or 1)                        |
//! | `0x84` | `TIMEOUT` | keys still missing                   |
//! | `0x85` | `ERROR`   | `bytes` UTF-8 message                |
//!
//! `HELLO` must be the first request on a connection and carry the run's
//! token; anything else first, a wrong token or a wrong version gets an
//! `ERROR` and the connection is closed. A malformed or oversized frame also
//! gets an `ERROR` followed by closing. `ADD` on a key whose value is not an
//! 8-byte little-endian integer gets a non-fatal `ERROR`.

/// Version carried in `HELLO`; the server refuses any other.
pub const PROTOCOL_VERSION: u32 = 1;
/// Longest key, in bytes.
pub const MAX_KEY_BYTES: usize = 4096;
/// Largest value, in bytes.
pub const MAX_VALUE_BYTES: usize = 16 << 20;
/// Most keys in one `WAIT` or `CHECK`.
pub const MAX_WAIT_KEYS: usize = 65_536;
/// Largest frame body, in bytes.
pub const MAX_FRAME_BYTES: usize = MAX_VALUE_BYTES + MAX_KEY_BYTES + 64;

/// A client request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Request {
    Hello { version: u32, token: Vec<u8> },
    Set { key: String, value: Vec<u8> },
    Get { key: String, timeout_ms: u64 },
    Add { key: String, delta: i64 },
    Wait { keys: Vec<String>, timeout_ms: u64 },
    Delete { key: String },
    NumKeys,
    Check { keys: Vec<String> },
    Ping,
}

/// A server response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Response {
    Ok,
    Value(Vec<u8>),
    Int(i64),
    Bool(bool),
    Timeout(Vec<String>),
    Error(String),
}

/// Appends frames' fields to a body and adds the length prefix.
struct Writer(Vec<u8>);

impl Writer {
    fn new(tag: u8) -> Self {
        let mut v = Vec::with_capacity(64);
        v.extend_from_slice(&[0, 0, 0, 0, tag]);
        Writer(v)
    }
    fn u32(&mut self, x: u32) {
        self.0.extend_from_slice(&x.to_le_bytes());
    }
    fn u64(&mut self, x: u64) {
        self.0.extend_from_slice(&x.to_le_bytes());
    }
    fn i64(&mut self, x: i64) {
        self.0.extend_from_slice(&x.to_le_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
    }
    fn keys(&mut self, keys: &[String]) {
        self.u32(keys.len() as u32);
        for k in keys {
            self.bytes(k.as_bytes());
        }
    }
    fn finish(mut self) -> Vec<u8> {
        let body = (self.0.len() - 4) as u32;
        self.0[..4].copy_from_slice(&body.to_le_bytes());
        self.0
    }
}

/// Reads fields from a frame body; every read checks bounds.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| "frame ends in the middle of a field".to_string())?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Result<u64, String> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
    fn i64(&mut self) -> Result<i64, String> {
        Ok(self.u64()? as i64)
    }
    fn bytes(&mut self, max: usize, what: &str) -> Result<&'a [u8], String> {
        let n = self.u32()? as usize;
        if n > max {
            return Err(format!(
                "{what} of {n} bytes exceeds the limit of {max} bytes"
            ));
        }
        self.take(n)
    }
    fn key(&mut self) -> Result<String, String> {
        let b = self.bytes(MAX_KEY_BYTES, "key")?;
        if b.is_empty() {
            return Err("empty key".into());
        }
        String::from_utf8(b.to_vec()).map_err(|_| "key is not valid UTF-8".to_string())
    }
    fn keys(&mut self) -> Result<Vec<String>, String> {
        let n = self.u32()? as usize;
        if n > MAX_WAIT_KEYS {
            return Err(format!(
                "{n} keys in one request exceed the limit of {MAX_WAIT_KEYS}"
            ));
        }
        let mut keys = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            keys.push(self.key()?);
        }
        Ok(keys)
    }
    fn end(&self) -> Result<(), String> {
        if self.pos == self.buf.len() {
            Ok(())
        } else {
            Err(format!(
                "{} unexpected bytes after the message",
                self.buf.len() - self.pos
            ))
        }
    }
}

/// Checks a key before it is sent (the server checks again).
pub(crate) fn validate_key(key: &str) -> Result<(), String> {
    if key.is_empty() {
        Err("keys must not be empty".into())
    } else if key.len() > MAX_KEY_BYTES {
        Err(format!(
            "key of {} bytes exceeds the limit of {MAX_KEY_BYTES} bytes",
            key.len()
        ))
    } else {
        Ok(())
    }
}

impl Request {
    /// Encodes the request as a complete frame (length prefix included).
    pub(crate) fn encode(&self) -> Vec<u8> {
        match self {
            Request::Hello { version, token } => {
                let mut w = Writer::new(0x01);
                w.u32(*version);
                w.bytes(token);
                w.finish()
            }
            Request::Set { key, value } => {
                let mut w = Writer::new(0x02);
                w.bytes(key.as_bytes());
                w.bytes(value);
                w.finish()
            }
            Request::Get { key, timeout_ms } => {
                let mut w = Writer::new(0x03);
                w.bytes(key.as_bytes());
                w.u64(*timeout_ms);
                w.finish()
            }
            Request::Add { key, delta } => {
                let mut w = Writer::new(0x04);
                w.bytes(key.as_bytes());
                w.i64(*delta);
                w.finish()
            }
            Request::Wait { keys, timeout_ms } => {
                let mut w = Writer::new(0x05);
                w.keys(keys);
                w.u64(*timeout_ms);
                w.finish()
            }
            Request::Delete { key } => {
                let mut w = Writer::new(0x06);
                w.bytes(key.as_bytes());
                w.finish()
            }
            Request::NumKeys => Writer::new(0x07).finish(),
            Request::Check { keys } => {
                let mut w = Writer::new(0x08);
                w.keys(keys);
                w.finish()
            }
            Request::Ping => Writer::new(0x09).finish(),
        }
    }

    /// Decodes a frame body (without the length prefix).
    pub(crate) fn decode(body: &[u8]) -> Result<Request, String> {
        let mut r = Reader { buf: body, pos: 0 };
        let tag = r.u8()?;
        let req = match tag {
            0x01 => {
                let version = r.u32()?;
                let token = r.bytes(crate::token::MAX_TOKEN_BYTES, "token")?.to_vec();
                Request::Hello { version, token }
            }
            0x02 => {
                let key = r.key()?;
                let value = r.bytes(MAX_VALUE_BYTES, "value")?.to_vec();
                Request::Set { key, value }
            }
            0x03 => {
                let key = r.key()?;
                let timeout_ms = r.u64()?;
                Request::Get { key, timeout_ms }
            }
            0x04 => {
                let key = r.key()?;
                let delta = r.i64()?;
                Request::Add { key, delta }
            }
            0x05 => {
                let keys = r.keys()?;
                let timeout_ms = r.u64()?;
                Request::Wait { keys, timeout_ms }
            }
            0x06 => Request::Delete { key: r.key()? },
            0x07 => Request::NumKeys,
            0x08 => Request::Check { keys: r.keys()? },
            0x09 => Request::Ping,
            other => return Err(format!("unknown request tag 0x{other:02x}")),
        };
        r.end()?;
        Ok(req)
    }

    /// A short name for error messages.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Request::Hello { .. } => "hello",
            Request::Set { .. } => "set",
            Request::Get { .. } => "get",
            Request::Add { .. } => "add",
            Request::Wait { .. } => "wait",
            Request::Delete { .. } => "delete",
            Request::NumKeys => "num_keys",
            Request::Check { .. } => "check",
            Request::Ping => "ping",
        }
    }
}

impl Response {
    /// Encodes the response as a complete frame (length prefix included).
    pub(crate) fn encode(&self) -> Vec<u8> {
        match self {
            Response::Ok => Writer::new(0x80).finish(),
            Response::Value(v) => {
                let mut w = Writer::new(0x81);
                w.bytes(v);
                w.finish()
            }
            Response::Int(x) => {
                let mut w = Writer::new(0x82);
                w.i64(*x);
                w.finish()
            }
            Response::Bool(b) => {
                let mut w = Writer::new(0x83);
                w.0.push(u8::from(*b));
                w.finish()
            }
            Response::Timeout(keys) => {
                let mut w = Writer::new(0x84);
                w.keys(keys);
                w.finish()
            }
            Response::Error(msg) => {
                let mut w = Writer::new(0x85);
                let m = msg.as_bytes();
                w.bytes(&m[..m.len().min(4096)]);
                w.finish()
            }
        }
    }

    /// Decodes a frame body (without the length prefix).
    pub(crate) fn decode(body: &[u8]) -> Result<Response, String> {
        let mut r = Reader { buf: body, pos: 0 };
        let tag = r.u8()?;
        let resp = match tag {
            0x80 => Response::Ok,
            0x81 => Response::Value(r.bytes(MAX_VALUE_BYTES, "value")?.to_vec()),
            0x82 => Response::Int(r.i64()?),
            0x83 => Response::Bool(r.u8()? != 0),
            0x84 => Response::Timeout(r.keys()?),
            0x85 => Response::Error(
                String::from_utf8_lossy(r.bytes(MAX_FRAME_BYTES, "message")?).into_owned(),
            ),
            other => return Err(format!("unknown response tag 0x{other:02x}")),
        };
        r.end()?;
        Ok(resp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(frame: &[u8]) -> &[u8] {
        let n = u32::from_le_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize;
        assert_eq!(n, frame.len() - 4);
        &frame[4..]
    }

    #[test]
    fn requests_round_trip() {
        let reqs = vec![
            Request::Hello {
                version: 1,
                token: b"abc".to_vec(),
            },
            Request::Set {
                key: "k".into(),
                value: vec![1, 2, 3],
            },
            Request::Get {
                key: "k".into(),
                timeout_ms: 5,
            },
            Request::Add {
                key: "c".into(),
                delta: -7,
            },
            Request::Wait {
                keys: vec!["a".into(), "b".into()],
                timeout_ms: 9,
            },
            Request::Delete { key: "k".into() },
            Request::NumKeys,
            Request::Check {
                keys: vec!["x".into()],
            },
            Request::Ping,
        ];
        for req in reqs {
            let f = req.encode();
            assert_eq!(Request::decode(body(&f)).unwrap(), req);
        }
    }

    #[test]
    fn responses_round_trip() {
        let resps = vec![
            Response::Ok,
            Response::Value(vec![9; 10]),
            Response::Int(-3),
            Response::Bool(true),
            Response::Timeout(vec!["a".into()]),
            Response::Error("nope".into()),
        ];
        for resp in resps {
            let f = resp.encode();
            assert_eq!(Response::decode(body(&f)).unwrap(), resp);
        }
    }

    #[test]
    fn malformed_bodies_are_rejected_not_panicking() {
        assert!(Request::decode(&[]).is_err());
        assert!(Request::decode(&[0x7f]).is_err());
        assert!(Request::decode(&[0x02, 0xff, 0xff, 0xff, 0xff]).is_err());
        assert!(Request::decode(&[0x02, 0, 0, 0, 0]).is_err()); // empty key
        let mut f = Request::Ping.encode();
        f.push(0);
        assert!(Request::decode(&f[4..]).is_err()); // trailing byte
                                                    // Every prefix of a valid frame is an error, never a panic.
        let f = Request::Wait {
            keys: vec!["abc".into(), "de".into()],
            timeout_ms: 1,
        }
        .encode();
        for cut in 0..f.len() - 4 {
            assert!(Request::decode(&f[4..4 + cut]).is_err());
        }
    }
}
