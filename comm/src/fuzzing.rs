//! Entry points of the fuzz targets in the repository's `fuzz/` folder and
//! of their regression tests; hidden from the documentation and not a
//! stable API.
//!
//! * [`frame_body`]: the store's request and response decoders on any frame
//!   body; a request that decodes encodes back to exactly the same bytes.
//! * [`server_session`]: any bytes sent to a running store server over TCP,
//!   before or after a valid `HELLO`; the server must close the connection
//!   by itself and go on serving a legitimate client.

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
