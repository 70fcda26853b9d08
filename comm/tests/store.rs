//! The rendezvous store: operations, authentication, malformed and hostile
//! input, stalled clients, many clients, and the rendezvous helper's error
//! naming missing ranks.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use comm::store::protocol::{MAX_KEY_BYTES, MAX_VALUE_BYTES, PROTOCOL_VERSION};
use comm::{rendezvous, CommError, ServerOptions, StoreClient, StoreServer, Token};

const T: Duration = Duration::from_secs(5);

fn client(server: &StoreServer, token: &Token) -> StoreClient {
    StoreClient::connect(server.local_addr(), token, T).expect("connect")
}

/// A raw frame: length prefix plus body.
fn frame(body: &[u8]) -> Vec<u8> {
    let mut f = (body.len() as u32).to_le_bytes().to_vec();
    f.extend_from_slice(body);
    f
}

fn hello(token: &Token) -> Vec<u8> {
    let mut b = vec![0x01];
    b.extend_from_slice(&PROTOCOL_VERSION.to_le_bytes());
    b.extend_from_slice(&(token.as_str().len() as u32).to_le_bytes());
    b.extend_from_slice(token.as_str().as_bytes());
    frame(&b)
}

/// Reads until EOF (or a 3 s timeout) and returns what came back.
fn read_to_close(s: &mut TcpStream) -> Vec<u8> {
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

/// Polls `cond` for up to 5 s.
fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs(5);
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    cond()
}

#[test]
fn basic_operations() {
    let (server, token) = common::store();
    let c = client(&server, &token);
    c.set("a", b"1").unwrap();
    assert_eq!(c.get("a").unwrap(), b"1");
    assert_eq!(c.add("n", 5).unwrap(), 5);
    assert_eq!(c.add("n", -2).unwrap(), 3);
    assert_eq!(c.get("n").unwrap(), b"3");
    assert!(c.check(&["a", "n"]).unwrap());
    assert!(!c.check(&["a", "zz"]).unwrap());
    assert_eq!(c.num_keys().unwrap(), 2);
    assert!(c.delete("a").unwrap());
    assert!(!c.delete("a").unwrap());
    assert_eq!(c.num_keys().unwrap(), 1);
    // add on a non-integer is an error that leaves the connection usable.
    c.set("s", b"text").unwrap();
    assert!(matches!(
        c.add("s", 1),
        Err(CommError::StoreRejected { .. })
    ));
    c.ping().unwrap();
    // An empty value is a value.
    c.set("e", b"").unwrap();
    assert_eq!(c.get("e").unwrap(), b"");
}

#[test]
fn get_and_wait_block_until_set_and_time_out_naming_keys() {
    let (server, token) = common::store();
    let c1 = client(&server, &token);
    let c2 = client(&server, &token);
    let h = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        c2.set("late", b"x").unwrap();
        c2.set("late2", b"y").unwrap();
    });
    assert_eq!(c1.get("late").unwrap(), b"x");
    c1.wait(&["late", "late2"], T).unwrap();
    h.join().unwrap();
    let e = c1
        .get_timeout("never", Duration::from_millis(100))
        .unwrap_err();
    assert!(
        matches!(&e, CommError::StoreTimeout { missing, .. } if missing == &vec!["never".to_string()])
    );
    assert!(e.to_string().contains("never"), "{e}");
    let e = c1
        .wait(&["late", "nope1", "nope2"], Duration::from_millis(100))
        .unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("nope1, nope2") && !msg.contains("late,"),
        "{msg}"
    );
}

#[test]
fn wrong_token_is_rejected() {
    let (server, _token) = common::store();
    let other = Token::generate().unwrap();
    let e = StoreClient::connect(server.local_addr(), &other, T).unwrap_err();
    assert!(
        matches!(&e, CommError::StoreRejected { reason, .. } if reason.contains("invalid token")),
        "{e}"
    );
    // A raw client that skips the hello is answered with an error and dropped.
    let mut s = TcpStream::connect(server.local_addr()).unwrap();
    s.write_all(&frame(&[0x07])).unwrap();
    let answer = read_to_close(&mut s);
    assert_eq!(
        answer.get(4),
        Some(&0x85),
        "expected an ERROR frame, got {answer:?}"
    );
}

#[test]
fn garbage_partial_and_oversized_input_do_not_hurt_the_server() {
    let (server, token) = common::store();
    let good = client(&server, &token);
    good.set("k", b"v").unwrap();

    // Pure garbage before authentication.
    let mut s = TcpStream::connect(server.local_addr()).unwrap();
    s.write_all(&[0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8])
        .unwrap();
    read_to_close(&mut s);

    // A giant length prefix (before and after authentication).
    let mut s = TcpStream::connect(server.local_addr()).unwrap();
    s.write_all(&u32::MAX.to_le_bytes()).unwrap();
    read_to_close(&mut s);
    let mut s = TcpStream::connect(server.local_addr()).unwrap();
    s.write_all(&hello(&token)).unwrap();
    s.write_all(&((MAX_VALUE_BYTES * 2) as u32).to_le_bytes())
        .unwrap();
    let answer = read_to_close(&mut s);
    assert!(
        answer.len() > 5 && answer[4] == 0x80,
        "hello answered OK first: {answer:?}"
    );

    // An oversized key inside a well-formed frame is refused.
    let mut s = TcpStream::connect(server.local_addr()).unwrap();
    s.write_all(&hello(&token)).unwrap();
    let key = vec![b'k'; MAX_KEY_BYTES + 1];
    let mut body = vec![0x02];
    body.extend_from_slice(&(key.len() as u32).to_le_bytes());
    body.extend_from_slice(&key);
    body.extend_from_slice(&0u32.to_le_bytes());
    s.write_all(&frame(&body)).unwrap();
    let answer = read_to_close(&mut s);
    let text = String::from_utf8_lossy(&answer);
    assert!(text.contains("exceeds the limit"), "{text}");
    // The client library refuses oversized keys and values before sending.
    let long = "k".repeat(MAX_KEY_BYTES + 1);
    assert!(matches!(
        good.set(&long, b"x"),
        Err(CommError::InvalidArgument(_))
    ));
    let big = vec![0u8; MAX_VALUE_BYTES + 1];
    assert!(matches!(
        good.set("big", &big),
        Err(CommError::InvalidArgument(_))
    ));
    // A value at the limit is fine.
    good.set("max", &big[1..]).unwrap();
    assert_eq!(good.get("max").unwrap().len(), MAX_VALUE_BYTES);
    assert!(good.delete("max").unwrap());

    // Authenticated garbage: an unknown tag.
    let mut s = TcpStream::connect(server.local_addr()).unwrap();
    s.write_all(&hello(&token)).unwrap();
    s.write_all(&frame(&[0x42, 1, 2, 3])).unwrap();
    read_to_close(&mut s);

    // A partial message, then close.
    let mut s = TcpStream::connect(server.local_addr()).unwrap();
    s.write_all(&hello(&token)).unwrap();
    let full = frame(&[0x02, 3, 0, 0, 0, b'a', b'b', b'c', 1, 0, 0, 0, b'z']);
    s.write_all(&full[..7]).unwrap();
    drop(s);

    // The server still serves, and nothing of the above was stored.
    assert_eq!(good.get("k").unwrap(), b"v");
    assert!(!good.check(&["abc"]).unwrap());
    assert_eq!(good.num_keys().unwrap(), 1);
    assert!(eventually(|| server.num_connections() == 1));
}

#[test]
fn stalled_clients_do_not_block_others_and_are_dropped() {
    let token = Token::generate().unwrap();
    let opts = ServerOptions {
        handshake_timeout: Duration::from_millis(300),
        frame_timeout: Duration::from_millis(300),
        ..ServerOptions::default()
    };
    let server = StoreServer::bind_with_options("127.0.0.1:0", token.clone(), opts).unwrap();
    // One client connects and says nothing; another stops mid-frame.
    let silent = TcpStream::connect(server.local_addr()).unwrap();
    let mut stalled = TcpStream::connect(server.local_addr()).unwrap();
    stalled.write_all(&hello(&token)).unwrap();
    stalled.write_all(&[20, 0, 0, 0, 0x02]).unwrap();
    // Others are served meanwhile.
    let c = client(&server, &token);
    for i in 0..50 {
        c.set(&format!("k{i}"), b"v").unwrap();
    }
    assert_eq!(c.num_keys().unwrap(), 50);
    // Both stalled connections get dropped; the good one stays.
    assert!(
        eventually(|| server.num_connections() == 1),
        "{} connections",
        server.num_connections()
    );
    drop((silent, stalled));
    c.ping().unwrap();
}

#[test]
fn many_concurrent_clients() {
    let (server, token) = common::store();
    let addr = server.local_addr();
    let handles: Vec<_> = (0..64)
        .map(|i| {
            let token = token.clone();
            std::thread::spawn(move || {
                let c = StoreClient::connect(addr, &token, T).unwrap();
                for _ in 0..20 {
                    c.add("counter", 1).unwrap();
                }
                c.set(&format!("client/{i}"), &[i as u8]).unwrap();
                c
            })
        })
        .collect();
    let clients: Vec<StoreClient> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(server.num_connections(), 64);
    let c = &clients[0];
    assert_eq!(c.get("counter").unwrap(), b"1280");
    let keys: Vec<String> = (0..64).map(|i| format!("client/{i}")).collect();
    c.wait(&keys, T).unwrap();
    // One client shared by threads.
    let shared = Arc::new(client(&server, &token));
    let hs: Vec<_> = (0..8)
        .map(|_| {
            let s = Arc::clone(&shared);
            std::thread::spawn(move || {
                (0..50).for_each(|_| assert!(s.add("shared", 1).unwrap() > 0))
            })
        })
        .collect();
    hs.into_iter().for_each(|h| h.join().unwrap());
    assert_eq!(shared.get("shared").unwrap(), b"400");
}

#[test]
fn rendezvous_names_missing_ranks() {
    let (server, token) = common::store();
    let addr = server.local_addr();
    let results: Vec<_> = (0..2)
        .map(|rank| {
            let token = token.clone();
            std::thread::spawn(move || {
                let c = StoreClient::connect(addr, &token, T).unwrap();
                rendezvous(&c, "job", rank, 4, b"hi", Duration::from_millis(300))
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect();
    for r in results {
        let e = r.unwrap_err();
        assert!(
            matches!(&e, CommError::RendezvousTimeout { missing, world_size: 4, .. } if missing == &vec![2, 3])
        );
        let msg = e.to_string();
        assert!(
            msg.starts_with(&format!(
                "rendezvous timed out after 300ms: ranks 2, 3 of 4 never arrived at {addr}"
            )),
            "{msg}"
        );
    }
    // When everyone arrives, payloads come back in rank order.
    let all: Vec<_> = (0..3)
        .map(|rank| {
            let token = token.clone();
            std::thread::spawn(move || {
                let c = StoreClient::connect(addr, &token, T).unwrap();
                rendezvous(&c, "job2", rank, 3, format!("p{rank}").as_bytes(), T).unwrap()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect();
    for v in all {
        assert_eq!(v, vec![b"p0".to_vec(), b"p1".to_vec(), b"p2".to_vec()]);
    }
}

#[test]
fn clients_fail_cleanly_when_the_server_goes_away() {
    let (server, token) = common::store();
    let addr = server.local_addr();
    let c = client(&server, &token);
    // A client blocked in get is released with an error when the server stops.
    let h = std::thread::spawn(move || c.get_timeout("never", Duration::from_secs(30)));
    std::thread::sleep(Duration::from_millis(100));
    server.shutdown();
    let e = h.join().unwrap().unwrap_err();
    assert!(!matches!(e, CommError::StoreTimeout { .. }), "{e}");
    // Connecting to a dead address times out with a clear error.
    let e = StoreClient::connect(addr, &token, Duration::from_millis(200)).unwrap_err();
    assert!(
        e.to_string().contains("could not connect to the store"),
        "{e}"
    );
}
