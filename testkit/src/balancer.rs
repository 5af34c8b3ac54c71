//! A round-robin load balancer for tests: one loopback address in front of
//! several receivers, each HTTP request handed to the next one in turn, as a
//! load balancer in front of receiver processes sharing one database would.
//!
//! This module owns the forwarding only: it reads one request (head and a
//! `content-length` body), sends it to the next backend on a fresh connection
//! with `connection: close` (and, started with `start_forwarding`, an
//! `x-forwarded-for` naming the client's address, as a proxy does), and
//! relays the whole answer back, keeping the client's connection alive when
//! the answer says how long it is. It must not change what it carries beyond
//! those headers, and it does not speak chunked request bodies (the
//! sessionpipe clients send lengths). A backend it cannot reach or that
//! breaks off is the client's connection closed, unanswered.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

/// The longest request head read.
const HEAD_MAX: usize = 64 * 1024;

pub struct Balancer {
    addr: SocketAddr,
    served: Arc<Vec<AtomicU64>>,
    stop: Arc<AtomicBool>,
}

impl Balancer {
    /// Listens on a free loopback port in front of `backends` (base URLs like
    /// `http://127.0.0.1:PORT`).
    pub fn start(backends: &[String]) -> io::Result<Balancer> {
        Balancer::start_with(backends, false)
    }

    /// As `start`, and each request forwarded says who sent it: an
    /// `x-forwarded-for` header with the client's address (for backends that
    /// trust 127.0.0.1 as their proxy).
    pub fn start_forwarding(backends: &[String]) -> io::Result<Balancer> {
        Balancer::start_with(backends, true)
    }

    fn start_with(backends: &[String], forward: bool) -> io::Result<Balancer> {
        let addrs: Vec<SocketAddr> = backends
            .iter()
            .map(|u| {
                u.trim_start_matches("http://")
                    .trim_end_matches('/')
                    .parse()
                    .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, u.clone()))
            })
            .collect::<Result<_, _>>()?;
        if addrs.is_empty() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "no backends"));
        }
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let served: Arc<Vec<AtomicU64>> =
            Arc::new(addrs.iter().map(|_| AtomicU64::new(0)).collect());
        let stop = Arc::new(AtomicBool::new(false));
        let next = Arc::new(AtomicUsize::new(0));
        let addrs = Arc::new(addrs);
        {
            let (served, stop) = (Arc::clone(&served), Arc::clone(&stop));
            thread::Builder::new()
                .name("balancer".into())
                .spawn(move || {
                    for conn in listener.incoming() {
                        if stop.load(Ordering::SeqCst) {
                            break;
                        }
                        let Ok(conn) = conn else { continue };
                        let (addrs, next, served) =
                            (Arc::clone(&addrs), Arc::clone(&next), Arc::clone(&served));
                        let _ =
                            thread::Builder::new()
                                .name("balancer-conn".into())
                                .spawn(move || {
                                    let _ = serve(conn, &addrs, &next, &served, forward);
                                });
                    }
                })?;
        }
        Ok(Balancer { addr, served, stop })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Requests handed to each backend so far, in the order given.
    pub fn served(&self) -> Vec<u64> {
        self.served
            .iter()
            .map(|c| c.load(Ordering::SeqCst))
            .collect()
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so it sees `stop`.
        let _ = TcpStream::connect(self.addr);
    }
}

/// One request's head: its lines as sent, and the body's length.
struct Head {
    text: String,
    body_len: usize,
    close: bool,
}

fn read_head(r: &mut BufReader<TcpStream>) -> io::Result<Option<Head>> {
    let mut text = String::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        if text.is_empty() && line.trim().is_empty() {
            continue;
        }
        text.push_str(&line);
        if line == "\r\n" || line == "\n" {
            break;
        }
        if text.len() > HEAD_MAX {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "head too long"));
        }
    }
    let mut body_len = 0;
    let mut close = false;
    for line in text.lines().skip(1) {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => {
                body_len = value
                    .parse()
                    .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "content-length"))?;
            }
            "transfer-encoding" => {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "chunked request bodies are not forwarded",
                ));
            }
            "connection" => close = value.eq_ignore_ascii_case("close"),
            _ => {}
        }
    }
    Ok(Some(Head {
        text,
        body_len,
        close,
    }))
}

/// The head with its `connection` header replaced by `connection: close`,
/// and an `x-forwarded-for` naming `client` when there is one.
fn closing(head: &str, client: Option<std::net::IpAddr>) -> String {
    let mut out = String::with_capacity(head.len() + 20);
    for line in head.split_inclusive('\n') {
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            continue;
        }
        if trimmed
            .split_once(':')
            .is_some_and(|(n, _)| n.trim().eq_ignore_ascii_case("connection"))
        {
            continue;
        }
        out.push_str(trimmed);
        out.push_str("\r\n");
    }
    if let Some(ip) = client {
        out.push_str(&format!("x-forwarded-for: {ip}\r\n"));
    }
    out.push_str("connection: close\r\n\r\n");
    out
}

/// Whether an answer says its own length (so the client's connection can
/// carry the next request).
fn framed(answer: &[u8]) -> bool {
    let end = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(answer.len());
    let head = String::from_utf8_lossy(&answer[..end]).to_ascii_lowercase();
    let status_no_body = head
        .split_whitespace()
        .nth(1)
        .is_some_and(|s| s == "204" || s == "304" || s.starts_with('1'));
    status_no_body
        || head.contains("\r\ncontent-length:")
        || head.contains("\r\ntransfer-encoding: chunked")
}

fn serve(
    client: TcpStream,
    addrs: &[SocketAddr],
    next: &AtomicUsize,
    served: &[AtomicU64],
    forward: bool,
) -> io::Result<()> {
    let from = forward
        .then(|| client.peer_addr().map(|a| a.ip()))
        .transpose()?;
    let mut writer = client.try_clone()?;
    let mut reader = BufReader::new(client);
    while let Some(head) = read_head(&mut reader)? {
        let mut body = vec![0u8; head.body_len];
        reader.read_exact(&mut body)?;
        let i = next.fetch_add(1, Ordering::SeqCst) % addrs.len();
        served[i].fetch_add(1, Ordering::SeqCst);
        let mut backend = TcpStream::connect_timeout(&addrs[i], Duration::from_secs(5))?;
        backend.write_all(closing(&head.text, from).as_bytes())?;
        backend.write_all(&body)?;
        let mut answer = Vec::new();
        backend.read_to_end(&mut answer)?;
        writer.write_all(&answer)?;
        writer.flush()?;
        if head.close || !framed(&answer) {
            break;
        }
    }
    let _ = writer.shutdown(Shutdown::Both);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_are_closed_and_answers_framed() {
        let h = "POST /v1/events HTTP/1.1\r\nhost: x\r\nConnection: keep-alive\r\ncontent-length: 2\r\n\r\n";
        assert_eq!(
            closing(h, None),
            "POST /v1/events HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\nconnection: close\r\n\r\n"
        );
        assert_eq!(
            closing(h, Some([127, 0, 2, 7].into())),
            "POST /v1/events HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\
             x-forwarded-for: 127.0.2.7\r\nconnection: close\r\n\r\n"
        );
        assert!(framed(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"));
        assert!(framed(b"HTTP/1.1 204 No Content\r\n\r\n"));
        assert!(!framed(b"HTTP/1.1 200 OK\r\n\r\nuntil close"));
    }

    #[test]
    fn requests_go_round_robin() {
        let backends: Vec<crate::http::HttpServer> = (0..2)
            .map(|i| {
                crate::http::HttpServer::start(move |_req| {
                    crate::http::Response::json(200, &serde_json::json!({"backend": i}))
                })
                .unwrap()
            })
            .collect();
        let urls: Vec<String> = backends.iter().map(|b| b.base_url()).collect();
        let lb = Balancer::start(&urls).unwrap();
        let mut seen = Vec::new();
        for _ in 0..4 {
            let mut s = TcpStream::connect(lb.addr).unwrap();
            s.write_all(b"GET / HTTP/1.1\r\nhost: lb\r\nconnection: close\r\n\r\n")
                .unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).unwrap();
            seen.push(out.contains("\"backend\":1"));
        }
        assert_eq!(seen, [false, true, false, true]);
        assert_eq!(lb.served(), [2, 2]);
    }
}
