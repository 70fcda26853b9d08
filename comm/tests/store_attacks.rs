//! The rendezvous store under attack: a real server is hit with wrong and
//! missing tokens, a look from another local address, a flood of idle
//! connections, clients that drip bytes or stop mid-frame, oversized keys
//! and values, and random bytes; after (and during) each, a legitimate
//! client's set, get and wait still work. Timeouts in assertions are
//! generous: nothing here measures speed.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use comm::store::protocol::{MAX_KEY_BYTES, MAX_VALUE_BYTES, PROTOCOL_VERSION};
use comm::{CommError, ServerOptions, StoreClient, StoreServer, Token, TOKEN_ENV};

/// Generous: a loaded 2-core CI machine must never fail these.
const T: Duration = Duration::from_secs(30);

fn frame(body: &[u8]) -> Vec<u8> {
    let mut f = (body.len() as u32).to_le_bytes().to_vec();
    f.extend_from_slice(body);
    f
}

fn bytes_field(b: &[u8]) -> Vec<u8> {
    let mut v = (b.len() as u32).to_le_bytes().to_vec();
    v.extend_from_slice(b);
    v
}

fn hello_with(token: &[u8]) -> Vec<u8> {
    let mut b = vec![0x01];
    b.extend_from_slice(&PROTOCOL_VERSION.to_le_bytes());
    b.extend_from_slice(&bytes_field(token));
    frame(&b)
}

fn get_frame(key: &str) -> Vec<u8> {
    let mut b = vec![0x03];
    b.extend_from_slice(&bytes_field(key.as_bytes()));
    b.extend_from_slice(&0u64.to_le_bytes());
    frame(&b)
}

/// Everything the server sends until it closes (or 20 s pass).
fn read_to_close(s: &mut TcpStream) -> Vec<u8> {
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

/// The frames of a server's answer: (tag, body).
fn frames(mut answer: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    while answer.len() >= 5 {
        let n = u32::from_le_bytes([answer[0], answer[1], answer[2], answer[3]]) as usize;
        let body = &answer[4..(4 + n).min(answer.len())];
        out.push((body[0], body.to_vec()));
        answer = &answer[(4 + n).min(answer.len())..];
    }
    out
}

fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

/// A legitimate client's set, get and wait.
fn job_still_works(server: &StoreServer, token: &Token, tag: &str) {
    let c = StoreClient::connect(server.local_addr(), token, T).expect("the job's client connects");
    let key = format!("job/{tag}");
    c.set(&key, tag.as_bytes()).expect("set");
    assert_eq!(c.get(&key).expect("get"), tag.as_bytes());
    c.wait(&[key.as_str(), "job/secret"], T).expect("wait");
}

fn store_with_secret(opts: ServerOptions) -> (StoreServer, Token) {
    let token = Token::generate().unwrap();
    let server = StoreServer::bind_with_options("127.0.0.1:0", token.clone(), opts).unwrap();
    let c = StoreClient::connect(server.local_addr(), &token, T).unwrap();
    c.set("job/secret", b"the-secret-value").unwrap();
    (server, token)
}

#[test]
fn wrong_or_missing_token_is_refused_reads_nothing_and_says_what_to_do() {
    let (server, token) = store_with_secret(ServerOptions::default());
    let addr = server.local_addr();

    // The library client with another run's token.
    let stray = Token::generate().unwrap();
    let e = StoreClient::connect(addr, &stray, T).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, CommError::StoreRejected { .. }), "{msg}");
    assert!(msg.contains("invalid token"), "{msg}");
    assert!(msg.contains(TOKEN_ENV), "the error says what to set: {msg}");

    // Raw clients: no token, a wrong token, no hello at all; each followed
    // by a GET of the secret in the same write.
    let attempts: [(&str, Vec<u8>, &str); 4] = [
        ("empty token", hello_with(b""), "no token presented"),
        (
            "wrong token",
            hello_with(b"guess-guess-guess"),
            "invalid token",
        ),
        (
            "the token's prefix",
            hello_with(&token.as_str().as_bytes()[..8]),
            "invalid token",
        ),
        ("no hello", Vec::new(), "expected hello first"),
    ];
    for (what, hello, expected) in attempts {
        let mut s = TcpStream::connect(addr).unwrap();
        let mut bytes = hello;
        bytes.extend_from_slice(&get_frame("job/secret"));
        s.write_all(&bytes).unwrap();
        let answer = read_to_close(&mut s);
        let fs = frames(&answer);
        assert_eq!(
            fs.len(),
            1,
            "{what}: exactly one answer, then closed: {fs:?}"
        );
        assert_eq!(fs[0].0, 0x85, "{what}: an ERROR frame");
        let text = String::from_utf8_lossy(&fs[0].1);
        assert!(text.contains(expected), "{what}: {text}");
        assert!(
            text.contains(TOKEN_ENV) || what == "no hello",
            "{what}: {text}"
        );
        assert!(
            !answer.windows(16).any(|w| w == b"the-secret-value"),
            "{what}: the secret leaked"
        );
    }
    job_still_works(&server, &token, "after-token-attempts");
}

#[test]
fn listens_only_on_the_address_it_is_given() {
    let token = Token::generate().unwrap();
    let server = StoreServer::bind("127.0.0.1:0", token.clone()).unwrap();
    let addr = server.local_addr();
    assert_eq!(addr.ip(), IpAddr::V4(Ipv4Addr::LOCALHOST), "not 0.0.0.0");
    // The whole of 127/8 is this host, but only 127.0.0.1 was asked for.
    let other = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)), addr.port());
    let e = TcpStream::connect_timeout(&other, Duration::from_secs(5)).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused, "{e}");
    // This host's outward address, when it has one, does not reach it either.
    if let Some(ip) = outward_ipv4() {
        let e =
            TcpStream::connect_timeout(&SocketAddr::new(ip, addr.port()), Duration::from_secs(5))
                .unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused, "{ip}: {e}");
    }
    StoreClient::connect(addr, &token, T)
        .unwrap()
        .ping()
        .unwrap();
}

/// The local address this host would use to reach other hosts (no packet
/// is sent), if it has a route.
fn outward_ipv4() -> Option<IpAddr> {
    let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    s.connect("192.0.2.1:9").ok()?;
    let ip = s.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

#[test]
fn a_flood_of_idle_connections_does_not_lock_out_the_job() {
    // Every connection costs two descriptors here (both ends are in this
    // process); 1,600 fit in any usual limit once raised to the hard one.
    let fds = probe_contract::rlimit::raise_open_file_limit();
    let flood = 1600usize.min((fds.saturating_sub(256) / 2) as usize);
    let max_connections = 1024usize.min(flood * 2 / 3);
    // Idle connections are given a long time to present the token, so they
    // all stay open for the whole test.
    let opts = ServerOptions {
        handshake_timeout: Duration::from_secs(120),
        max_connections,
        ..ServerOptions::default()
    };
    let (server, token) = store_with_secret(opts);
    let addr = server.local_addr();
    let early = StoreClient::connect(addr, &token, T).unwrap();

    // 1,000 connections that say nothing (some stop in the middle of a
    // hello), and then 600 more: past the limit of 1,024.
    let mut idle: Vec<TcpStream> = Vec::new();
    for i in 0..flood {
        match TcpStream::connect_timeout(&addr, Duration::from_secs(10)) {
            Ok(mut s) => {
                if i % 10 == 0 {
                    let _ = s.write_all(&hello_with(token.as_str().as_bytes())[..7]);
                }
                idle.push(s);
            }
            Err(e) => panic!("connect {i}: {e}"),
        }
        if i == flood * 5 / 8 {
            // The job keeps working while the first 1,000 are held open.
            early.set("job/during", b"1").unwrap();
            job_still_works(&server, &token, "flood-1000");
        }
    }
    // A client that connected before the flood, and one that connects now.
    assert_eq!(early.get("job/during").unwrap(), b"1");
    early.wait(&["job/secret"], T).unwrap();
    job_still_works(&server, &token, "flood-1600");
    // At most 64 connections wait for their hello, whatever the flood's size: the rest were
    // pushed out (the job's own clients are the few others).
    assert!(
        server.num_connections() <= ServerOptions::default().max_unauthenticated + 4,
        "{} connections",
        server.num_connections()
    );
    drop(idle);
    assert!(eventually(T, || server.num_connections() == 1));
}

#[test]
fn authenticated_clients_are_never_pushed_out_and_the_refusal_is_clear() {
    let opts = ServerOptions {
        max_connections: 4,
        ..ServerOptions::default()
    };
    let (server, token) = store_with_secret(opts);
    let addr = server.local_addr();
    let clients: Vec<StoreClient> = (0..4)
        .map(|_| StoreClient::connect(addr, &token, T).unwrap())
        .collect();
    assert!(eventually(T, || server.num_connections() == 4));
    let e = StoreClient::connect(addr, &token, Duration::from_secs(2)).unwrap_err();
    assert!(e.to_string().contains("too many connections"), "{e}");
    for c in &clients {
        c.ping().unwrap();
    }
}

#[test]
fn slow_and_stalled_clients_are_dropped_without_blocking_others() {
    let opts = ServerOptions {
        handshake_timeout: Duration::from_millis(500),
        frame_timeout: Duration::from_millis(500),
        ..ServerOptions::default()
    };
    let (server, token) = store_with_secret(opts);
    let addr = server.local_addr();
    // One drips a valid SET one byte every 100 ms: its frame takes far
    // longer than the frame timeout although bytes keep coming.
    let dripper = {
        let token = token.clone();
        std::thread::spawn(move || {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(&hello_with(token.as_str().as_bytes())).unwrap();
            let mut body = vec![0x02];
            body.extend_from_slice(&bytes_field(b"job/slow"));
            body.extend_from_slice(&bytes_field(&[7u8; 64]));
            let f = frame(&body);
            let start = Instant::now();
            for b in f {
                if s.write_all(&[b]).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let answer = read_to_close(&mut s);
            (start.elapsed(), answer)
        })
    };
    // Others: silent, and stopped half-way through a hello.
    let silent = TcpStream::connect(addr).unwrap();
    let mut half = TcpStream::connect(addr).unwrap();
    half.write_all(&hello_with(token.as_str().as_bytes())[..10])
        .unwrap();
    for i in 0..20 {
        job_still_works(&server, &token, &format!("slow-{i}"));
    }
    let (_, answer) = dripper.join().unwrap();
    let text = String::from_utf8_lossy(&answer);
    assert!(text.contains("client stalled"), "{text}");
    let c = StoreClient::connect(addr, &token, T).unwrap();
    assert!(
        !c.check(&["job/slow"]).unwrap(),
        "the dripped SET was not applied"
    );
    drop((silent, half));
    assert!(eventually(T, || server.num_connections() == 1));
}

#[test]
fn oversized_keys_and_values_are_refused_with_the_limit_named() {
    let (server, token) = store_with_secret(ServerOptions::default());
    let addr = server.local_addr();
    let c = StoreClient::connect(addr, &token, T).unwrap();
    // The client refuses before sending, naming the limit.
    let e = c.set(&"k".repeat(MAX_KEY_BYTES + 1), b"v").unwrap_err();
    assert!(e.to_string().contains(&MAX_KEY_BYTES.to_string()), "{e}");
    let e = c.set("big", &vec![0u8; MAX_VALUE_BYTES + 1]).unwrap_err();
    assert!(e.to_string().contains(&MAX_VALUE_BYTES.to_string()), "{e}");
    let e = c.get(&"k".repeat(MAX_KEY_BYTES + 1)).unwrap_err();
    assert!(matches!(e, CommError::InvalidArgument(_)), "{e}");
    // A raw client that sends a value over the limit gets the same words.
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&hello_with(token.as_str().as_bytes())).unwrap();
    let mut body = vec![0x02];
    body.extend_from_slice(&bytes_field(b"big"));
    body.extend_from_slice(&bytes_field(&vec![1u8; MAX_VALUE_BYTES + 1]));
    let _ = s.write_all(&frame(&body));
    let answer = read_to_close(&mut s);
    let text = String::from_utf8_lossy(&answer);
    assert!(
        text.contains(&format!("exceeds the limit of {MAX_VALUE_BYTES} bytes")),
        "{text}"
    );
    // A key with a length field of 4 GiB in a small frame.
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&hello_with(token.as_str().as_bytes())).unwrap();
    s.write_all(&frame(&[0x02, 0xff, 0xff, 0xff, 0xff, b'k']))
        .unwrap();
    let text = String::from_utf8_lossy(&read_to_close(&mut s)).into_owned();
    assert!(text.contains("exceeds the limit"), "{text}");
    assert!(!c.check(&["big"]).unwrap());
    job_still_works(&server, &token, "after-oversized");
}

#[test]
fn random_bytes_before_and_after_the_hello_do_not_hurt_the_server() {
    let (server, token) = store_with_secret(ServerOptions::default());
    let addr = server.local_addr();
    let mut rng = fastrand::Rng::with_seed(0x9e37_79b9_7f4a_7c15);
    for i in 0..200 {
        let len = rng.usize(..600);
        let mut junk: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
        if i % 3 == 0 && junk.len() >= 4 {
            // A plausible length prefix, so the body reaches the decoder.
            let n = (junk.len() - 4) as u32;
            junk[..4].copy_from_slice(&n.to_le_bytes());
        }
        let mut s = TcpStream::connect(addr).unwrap();
        if i % 2 == 0 {
            s.write_all(&hello_with(token.as_str().as_bytes())).unwrap();
        }
        let _ = s.write_all(&junk);
        let _ = s.shutdown(std::net::Shutdown::Write);
        read_to_close(&mut s);
    }
    job_still_works(&server, &token, "after-random-bytes");
    // Every junk connection is gone (including any that decoded into a long GET or
    // WAIT and then hung up): only the job's client, held here, remains.
    let c = StoreClient::connect(addr, &token, T).unwrap();
    assert!(
        eventually(T, || server.num_connections() == 1),
        "{} connections",
        server.num_connections()
    );
    drop(c);
}

/// A client that asks for a key nobody sets, with a long timeout, and then goes away must not
/// hold its connection (a slot and a thread) for the rest of that timeout.
#[test]
fn a_client_that_hangs_up_during_a_long_wait_frees_its_connection() {
    let (server, token) = store_with_secret(ServerOptions::default());
    let addr = server.local_addr();
    let held = StoreClient::connect(addr, &token, T).unwrap();
    for _ in 0..5 {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(&hello_with(token.as_str().as_bytes())).unwrap();
        let mut b = vec![0x03];
        b.extend_from_slice(&bytes_field(b"never/set"));
        b.extend_from_slice(&(3_600_000u64).to_le_bytes()); // an hour
        s.write_all(&frame(&b)).unwrap();
        // The HELLO's answer, then hang up while the GET waits.
        let mut ok = [0u8; 5];
        s.read_exact(&mut ok).unwrap();
        drop(s);
    }
    assert!(
        eventually(T, || server.num_connections() == 1),
        "{} connections still open",
        server.num_connections()
    );
    job_still_works(&server, &token, "after-hang-ups");
    drop(held);
}
