//! Slow and many clients against a listener with short limits: each is cut off
//! by its deadline (bounds with slack, not benchmarks), one over the cap is
//! closed at once, the others are still served, and a stop is bounded.

use super::*;
use axum::routing::{get, post};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Instant;

const LIMITS: Limits = Limits {
    max_connections: 4,
    per_client: 4,
    header_timeout: Duration::from_millis(300),
    request_timeout: Duration::from_millis(600),
    stop_grace: Duration::from_millis(200),
};

/// How long past a deadline a cut-off may come (a loaded 2-core machine).
const SLACK: Duration = Duration::from_secs(2);

struct Running {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Running {
    /// Stops it and says how long the stop took.
    fn stop(mut self) -> Duration {
        let t = Instant::now();
        let _ = self.stop.take().unwrap().send(());
        self.thread.take().unwrap().join().unwrap();
        t.elapsed()
    }
}

fn start() -> Running {
    start_with(LIMITS, Clients::by_address())
}

fn start_with(limits: Limits, clients: Clients) -> Running {
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .route(
            "/peer",
            get(|ConnectInfo(peer): ConnectInfo<SocketAddr>| async move { peer.ip().to_string() }),
        )
        .route("/echo", post(|body: String| async move { body }));
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    std_listener.set_nonblocking(true).unwrap();
    let addr = std_listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = TcpListener::from_std(std_listener).unwrap();
            serve_with(listener, app, limits, None, clients, async {
                let _ = rx.await;
            })
            .await;
        });
    });
    Running {
        addr,
        stop: Some(tx),
        thread: Some(thread),
    }
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// Reads until the server closes; what it said, and when it closed.
fn until_closed(mut s: TcpStream) -> (String, Duration) {
    let t = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    (String::from_utf8_lossy(&got).into_owned(), t.elapsed())
}

fn get_ok(addr: SocketAddr, path: &str) -> String {
    let mut s = connect(addr);
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let (answer, _) = until_closed(s);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    answer
}

#[test]
fn a_silent_connection_is_closed_at_the_header_deadline() {
    let server = start();
    let (said, after) = until_closed(connect(server.addr));
    assert!(
        after >= LIMITS.header_timeout / 2 && after < LIMITS.header_timeout + SLACK,
        "{after:?}"
    );
    assert!(!said.contains("200"), "{said}");
    server.stop();
}

#[test]
fn a_trickled_head_is_cut_off_at_the_header_deadline() {
    let server = start();
    let mut s = connect(server.addr);
    let t = Instant::now();
    let head = b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
    let mut cut = false;
    for b in head {
        if s.write_all(&[*b]).is_err() {
            cut = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(40));
        if t.elapsed() > LIMITS.header_timeout + SLACK {
            break;
        }
    }
    let (said, _) = until_closed(s);
    assert!(cut || !said.contains("200 OK"), "{said}");
    assert!(
        t.elapsed() < LIMITS.header_timeout + SLACK,
        "{:?}",
        t.elapsed()
    );
    server.stop();
}

#[test]
fn a_trickled_body_is_answered_408_at_the_request_deadline() {
    let server = start();
    let mut s = connect(server.addr);
    write!(
        s,
        "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\nContent-Type: text/plain\r\n\r\n"
    )
    .unwrap();
    let t = Instant::now();
    let writer = {
        let mut w = s.try_clone().unwrap();
        std::thread::spawn(move || {
            for _ in 0..100 {
                if w.write_all(b"a").is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let (said, _) = until_closed(s);
    let after = t.elapsed();
    assert!(said.starts_with("HTTP/1.1 408"), "{said}");
    assert!(after < LIMITS.request_timeout + SLACK, "{after:?}");
    writer.join().unwrap();
    server.stop();
}

#[test]
fn a_kept_alive_connection_that_goes_quiet_is_closed() {
    let server = start();
    let mut s = connect(server.addr);
    write!(s, "GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut buf = [0u8; 256];
    let n = s.read(&mut buf).unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    let (_, after) = until_closed(s);
    assert!(after < LIMITS.header_timeout + SLACK, "{after:?}");
    server.stop();
}

#[test]
fn one_connection_over_the_cap_is_closed_and_the_rest_are_served_after() {
    let server = start();
    let held: Vec<TcpStream> = (0..LIMITS.max_connections)
        .map(|_| connect(server.addr))
        .collect();
    // Let the accept loop take them all before the one over the cap.
    std::thread::sleep(Duration::from_millis(100));
    let (said, after) = until_closed(connect(server.addr));
    assert!(said.is_empty(), "{said}");
    assert!(
        after < LIMITS.header_timeout,
        "closed at once, not at a deadline: {after:?}"
    );
    for s in held {
        until_closed(s);
    }
    let answer = get_ok(server.addr, "/peer");
    assert!(
        answer.ends_with("127.0.0.1"),
        "the peer's address reaches handlers: {answer}"
    );
    server.stop();
}

#[test]
fn a_stop_does_not_wait_for_a_slow_client() {
    let server = start();
    let mut s = connect(server.addr);
    write!(s, "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: a").unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let took = server.stop();
    assert!(took < LIMITS.stop_grace + SLACK, "{took:?}");
}

/// A connection to `addr` from `from` (another loopback address: another
/// client).
fn connect_from(from: std::net::IpAddr, addr: SocketAddr) -> TcpStream {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let s = rt.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(SocketAddr::new(from, 0)).unwrap();
        socket.connect(addr).await.unwrap()
    });
    let s = s.into_std().unwrap();
    s.set_nonblocking(false).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// Whether the server closed `s` at once without a word (read within 1 s).
fn closed_at_once(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    let mut buf = [0u8; 16];
    matches!(s.read(&mut buf), Ok(0))
}

#[test]
fn one_client_holding_its_share_crowds_nobody_out_and_a_proxy_counts_for_none() {
    let a: std::net::IpAddr = "127.0.0.1".parse().unwrap();
    let b: std::net::IpAddr = "127.0.0.2".parse().unwrap();
    let proxy: std::net::IpAddr = "127.0.0.3".parse().unwrap();
    let limits = Limits {
        max_connections: 8,
        per_client: 2,
        header_timeout: Duration::from_secs(5),
        ..LIMITS
    };
    let server = start_with(
        limits,
        Clients::grouped(move |ip| (ip != proxy).then_some(ip)),
    );
    // A holds its two, idle; its third is closed at once.
    let held: Vec<TcpStream> = (0..2).map(|_| connect_from(a, server.addr)).collect();
    std::thread::sleep(Duration::from_millis(100));
    let mut third = connect_from(a, server.addr);
    assert!(closed_at_once(&mut third), "A's third connection is closed");
    // B is served meanwhile, and so are four of the proxy's (more than one
    // client's share: they are many clients').
    let mut s = connect_from(b, server.addr);
    write!(
        s,
        "GET /peer HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let (answer, _) = until_closed(s);
    assert!(answer.ends_with("127.0.0.2"), "{answer}");
    let mut through: Vec<TcpStream> = (0..4).map(|_| connect_from(proxy, server.addr)).collect();
    for s in &mut through {
        write!(s, "GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut buf = [0u8; 256];
        let n = s.read(&mut buf).unwrap();
        assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    }
    // Once A lets one go, it has room for one again.
    drop(held);
    std::thread::sleep(Duration::from_millis(100));
    let mut again = connect_from(a, server.addr);
    write!(
        again,
        "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let (answer, _) = until_closed(again);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    drop(through);
    server.stop();
}

/// The size of the future an async fn of seven arguments returns, without
/// calling it.
fn future_size<A, B, C, D, E, F, G, Fut>(_: fn(A, B, C, D, E, F, G) -> Fut) -> usize {
    std::mem::size_of::<Fut>()
}

#[test]
fn a_connection_s_task_is_not_sized_by_the_tls_path() {
    // A connection's task is allocated whole for as long as it is open (a
    // receiver holds one per long-polling machine): the TLS handshake's
    // future, boxed, must not size the plain connection's. Sizes are the
    // compiler's, the same every run.
    let task = future_size(served as fn(_, _, _, _, _, _, _) -> _);
    assert!(task <= TASK_MAX, "a connection's task is {task} bytes");
}

/// A connection's task in a test build with the `tls` feature (the
/// workspace's tests have it, through the receiver): 1 456 bytes, 5 328 with
/// the handshake's future inline. Without the feature there is no TLS path
/// to inline.
const TASK_MAX: usize = 4096;
