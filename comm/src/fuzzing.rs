//! Entry points of the fuzz targets in the repository's `fuzz/` folder and
//! of their regression tests; hidden from the documentation and not a
//! stable API.
//!
//! * [`frame_body`]: the store's request and response decoders on any frame
//!   body; a request that decodes encodes back to exactly the same bytes.
//! * [`server_session`]: any bytes sent to a running store server over TCP,
//!   before or after a valid `HELLO`; the server must close the connection
//!   by itself and go on serving a legitimate client.
//! * [`shm_ring`]: the shared-memory handshake's ring check and a ring's two
//!   ends driven by a script in which a hostile peer sets the indices and
//!   writes the data area; every call returns data or an error, never a
//!   panic or an access outside the mapping.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::OnceLock;
use std::time::Duration;

use crate::store::protocol::{Request, Response, PROTOCOL_VERSION};
use crate::{ServerOptions, StoreClient, StoreServer, Token};

/// Decodes `body` as a request and as a response; checks that a decoded
/// request encodes back to `body` and that a decoded response decodes
/// again to itself once encoded.
pub fn frame_body(body: &[u8]) {
    if let Ok(req) = Request::decode(body) {
        let frame = req.encode();
        assert_eq!(&frame[4..], body, "request {req:?} does not encode back");
        assert_eq!(
            frame[..4],
            (body.len() as u32).to_le_bytes(),
            "length prefix of {req:?}"
        );
    }
    if let Ok(resp) = Response::decode(body) {
        let again = Response::decode(&resp.encode()[4..]);
        assert_eq!(again.as_ref(), Ok(&resp), "response round trip");
    }
}

/// One store server for the whole fuzzing process, with a legitimate
/// client connected to it.
struct Fixture {
    server: StoreServer,
    token: Token,
    client: StoreClient,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let token = Token::generate().expect("random token");
        let opts = ServerOptions {
            handshake_timeout: Duration::from_secs(2),
            frame_timeout: Duration::from_secs(2),
            // GET and WAIT answer at once, so no input makes the server wait.
            max_wait: Duration::ZERO,
            ..ServerOptions::default()
        };
        let server = StoreServer::bind_with_options("127.0.0.1:0", token.clone(), opts)
            .expect("bind the store");
        let client = StoreClient::connect(server.local_addr(), &token, Duration::from_secs(10))
            .expect("connect the legitimate client");
        client.set("fuzz/legit", b"ok").expect("set");
        Fixture {
            server,
            token,
            client,
        }
    })
}

/// Sends `data` to the store server: the first byte's lowest bit chooses
/// whether a valid `HELLO` goes first. Then closes the sending side and
/// expects the server to close the connection within the frame timeout, and
/// a legitimate client's requests to keep working.
pub fn server_session(data: &[u8]) {
    let fx = fixture();
    let mut s = TcpStream::connect(fx.server.local_addr()).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("read timeout");
    s.set_write_timeout(Some(Duration::from_secs(20)))
        .expect("write timeout");
    let (authenticate, rest) = match data.split_first() {
        Some((first, rest)) => (first & 1 == 0, rest),
        None => (false, data),
    };
    if authenticate {
        let hello = Request::Hello {
            version: PROTOCOL_VERSION,
            token: fx.token.as_str().as_bytes().to_vec(),
        };
        s.write_all(&hello.encode()).expect("send hello");
    }
    // The server may close early (a malformed frame): a failed write is fine.
    let _ = s.write_all(rest);
    let _ = s.shutdown(Shutdown::Write);
    let mut answer = Vec::new();
    if let Err(e) = s.read_to_end(&mut answer) {
        assert!(
            e.kind() == std::io::ErrorKind::ConnectionReset,
            "the server did not close the connection: {e}"
        );
    }
    if authenticate {
        assert!(
            answer.starts_with(&Response::Ok.encode()),
            "a valid hello was not answered OK: {answer:?}"
        );
    }
    // What the server answered is a sequence of well-formed frames.
    let mut rest = answer.as_slice();
    while rest.len() >= 4 {
        let n = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        assert!(rest.len() >= 4 + n, "cut-off answer frame: {answer:?}");
        let body = &rest[4..4 + n];
        assert!(Response::decode(body).is_ok(), "malformed answer {body:?}");
        rest = &rest[4 + n..];
    }
    assert!(rest.is_empty(), "trailing answer bytes: {answer:?}");
    fx.client
        .ping()
        .expect("the legitimate client still gets answers");
}

/// Runs the script `data` against a fresh shared-memory ring (see the module doc). The first
/// 40 bytes, when there are as many, are also offered as a ring file's header to the check the
/// handshake makes (`open_ring`), which must refuse anything but the header it expects.
pub fn shm_ring(data: &[u8]) {
    use crate::shm::{create_ring, open_ring, ring_capacity};
    use crate::wire::HEADER_BYTES;
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir();
    let path = |what: &str| {
        dir.join(format!(
            "ddp-comm-fuzz-{}-{}-{what}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ))
    };
    let cap = ring_capacity(0);
    let nonce = [7u8; 16];
    // The handshake's check on a file whose header the peer wrote.
    if data.len() >= 40 {
        let p = path("header");
        let mut file = vec![0u8; 256 + cap];
        file[..40].copy_from_slice(&data[..40]);
        if std::fs::write(&p, &file).is_ok() {
            let opened = open_ring(&p, cap, nonce);
            let _ = std::fs::remove_file(&p);
            if opened.is_ok() {
                let mut expected = [0u8; 40];
                expected[..8].copy_from_slice(b"DDPRING1");
                expected[8..12].copy_from_slice(&1u32.to_le_bytes());
                expected[12..16].copy_from_slice(&data[12..16]);
                expected[16..24].copy_from_slice(&(cap as u64).to_le_bytes());
                expected[24..40].copy_from_slice(&nonce);
                assert_eq!(
                    &data[..40],
                    &expected[..],
                    "open_ring accepted a foreign header"
                );
            }
        }
    }
    let p = path("ring");
    let Ok(mut rx) = create_ring(&p, cap, nonce) else {
        return;
    };
    let tx = open_ring(&p, cap, nonce);
    let _ = std::fs::remove_file(&p);
    let Ok(mut tx) = tx else {
        panic!("the ring just created does not open");
    };
    let mut i = 0;
    let mut take = |n: usize| {
        let s = &data[i.min(data.len())..(i + n).min(data.len())];
        i += n;
        s
    };
    let u64_of = |s: &[u8]| {
        let mut b = [0u8; 8];
        b[..s.len().min(8)].copy_from_slice(&s[..s.len().min(8)]);
        u64::from_le_bytes(b)
    };
    let mut steps = 0;
    while steps < 256 {
        let Some(&op) = take(1).first() else {
            break;
        };
        steps += 1;
        match op % 7 {
            0 => rx.as_hostile_peer(Some(u64_of(take(8))), 0, &[]),
            1 => tx.as_hostile_peer(u64_of(take(8))),
            2 => {
                let off = u64_of(take(4)) as usize;
                let len = take(1).first().copied().unwrap_or(0) as usize * 64;
                rx.as_hostile_peer(None, off, take(len))
            }
            3 => {
                let unit = 1usize << (op / 7 % 4);
                let len = take(1).first().copied().unwrap_or(0) as usize * 512;
                let _ = tx.try_write(&vec![op; len], unit);
            }
            4 => {
                let unit = 1usize << (op / 7 % 4);
                let max = u64_of(take(3)) as usize;
                let _ = rx.try_read(max, unit, &mut |s: &[u8]| {
                    std::hint::black_box(s.iter().map(|&b| b as u64).sum::<u64>());
                });
            }
            5 => {
                let mut hdr = [0u8; HEADER_BYTES];
                let src = take(HEADER_BYTES);
                hdr[..src.len()].copy_from_slice(src);
                let _ = tx.try_write_header(&hdr);
            }
            _ => {
                let mut hdr = [0u8; HEADER_BYTES];
                let _ = rx.try_read_header(&mut hdr);
            }
        }
    }
}
