//! A tiny threaded HTTP/1.1 server on loopback, for tests.
//!
//! This module owns the wire: it listens on `127.0.0.1:0`, runs one thread per
//! connection, parses requests (request line, headers, `Content-Length` and chunked
//! bodies, `Expect: 100-continue`), records every request in arrival order, and writes
//! a response that is either a whole body (`Content-Length`) or a stream of chunks
//! (`Transfer-Encoding: chunked`, flushed chunk by chunk, as SSE needs).
//!
//! Connections are kept alive as HTTP/1.1 expects and are never closed while idle, so
//! a pooling client (Node's undici/fetch) cannot race a server-side idle close. A
//! request that says `Connection: close` (or HTTP/1.0 without keep-alive) is answered
//! and then the connection is closed. Dropping the [`HttpServer`] stops the accept
//! loop, shuts every open connection down and joins the threads.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};

use serde_json::Value;

/// Longest request line or header line accepted, in bytes.
const MAX_LINE: usize = 64 * 1024;
/// Largest request body accepted, in bytes.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// One request as the server received it.
#[derive(Clone, Debug)]
pub struct Request {
    /// The method, as sent (`POST`).
    pub method: String,
    /// The request target as sent: path and query (`/v1/messages?beta=true`).
    pub target: String,
    /// Header names and values in the order received (names as sent).
    pub headers: Vec<(String, String)>,
    /// The body after chunked decoding (empty when there was none).
    pub body: Vec<u8>,
}

/// Whether any of `requests` carried `text` in its body (a model API asked
/// with a message's words).
pub fn any_body_has(requests: &[Request], text: &str) -> bool {
    requests
        .iter()
        .any(|r| String::from_utf8_lossy(&r.body).contains(text))
}

impl Request {
    /// The path part of the target, without the query.
    pub fn path(&self) -> &str {
        self.target.split_once('?').map_or(&self.target, |(p, _)| p)
    }

    /// The query part of the target, without the `?`.
    pub fn query(&self) -> Option<&str> {
        self.target.split_once('?').map(|(_, q)| q)
    }

    /// The first header with this name (compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON, or `None` when it is not JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

#[derive(Clone, Debug)]
enum Body {
    Full(Vec<u8>),
    Chunks(Vec<Vec<u8>>),
}

/// What the server writes back.
#[derive(Clone, Debug)]
pub struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Body,
    /// A pause before each chunk after the first (a slow stream).
    pace: Option<std::time::Duration>,
}

impl Response {
    /// A whole body with this status and content type.
    pub fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status,
            headers: vec![("Content-Type".into(), content_type.into())],
            body: Body::Full(body.into()),
            pace: None,
        }
    }

    /// A JSON body.
    pub fn json(status: u16, value: &Value) -> Response {
        Response::new(status, "application/json", value.to_string())
    }

    /// A body sent with chunked transfer encoding, one chunk per item, each written
    /// and flushed on its own.
    pub fn stream(status: u16, content_type: &str, chunks: Vec<Vec<u8>>) -> Response {
        Response {
            status,
            headers: vec![("Content-Type".into(), content_type.into())],
            body: Body::Chunks(chunks),
            pace: None,
        }
    }

    /// A `text/event-stream` body: each `(event name, data)` pair becomes
    /// `event: NAME\ndata: JSON\n\n`, written and flushed as its own chunk.
    pub fn sse<I, S>(events: I) -> Response
    where
        I: IntoIterator<Item = (S, Value)>,
        S: AsRef<str>,
    {
        let chunks = events
            .into_iter()
            .map(|(name, data)| {
                format!("event: {}\ndata: {}\n\n", name.as_ref(), data).into_bytes()
            })
            .collect();
        Response::stream(200, "text/event-stream", chunks).with_header("Cache-Control", "no-cache")
    }

    /// A chunked body whose chunks come `pace` apart (a model that streams
    /// slowly).
    pub fn paced(mut self, pace: std::time::Duration) -> Response {
        self.pace = Some(pace);
        self
    }

    /// Adds a header (after the content type).
    pub fn with_header(mut self, name: &str, value: &str) -> Response {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The status code.
    pub fn status(&self) -> u16 {
        self.status
    }
}

type Handler = dyn Fn(&Request) -> Response + Send + Sync + 'static;

struct Shared {
    stopping: AtomicBool,
    requests: Mutex<Vec<Request>>,
    connections: Mutex<Vec<(TcpStream, JoinHandle<()>)>>,
}

/// A running server. It stops when dropped.
pub struct HttpServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl HttpServer {
    /// Binds `127.0.0.1:0` and serves every request with `handler`, each connection on
    /// its own thread. A handler that panics answers 500.
    pub fn start<H>(handler: H) -> io::Result<HttpServer>
    where
        H: Fn(&Request) -> Response + Send + Sync + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            stopping: AtomicBool::new(false),
            requests: Mutex::new(Vec::new()),
            connections: Mutex::new(Vec::new()),
        });
        let handler: Arc<Handler> = Arc::new(handler);
        let accept_shared = Arc::clone(&shared);
        let accept = thread::Builder::new()
            .name(format!("testkit-http-{}", addr.port()))
            .spawn(move || accept_loop(listener, accept_shared, handler))?;
        Ok(HttpServer {
            addr,
            shared,
            accept: Some(accept),
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        lock(&self.shared.requests).clone()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        // Wake the blocking accept so it sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        let connections = std::mem::take(&mut *lock(&self.shared.connections));
        for (stream, _) in &connections {
            let _ = stream.shutdown(Shutdown::Both);
        }
        for (_, handle) in connections {
            let _ = handle.join();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>, handler: Arc<Handler>) {
    for stream in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let Ok(control) = stream.try_clone() else {
            continue;
        };
        let conn_shared = Arc::clone(&shared);
        let conn_handler = Arc::clone(&handler);
        let spawned = thread::Builder::new()
            .name("testkit-http-conn".into())
            .spawn(move || {
                let _ = serve_connection(stream, &conn_shared, &*conn_handler);
            });
        if let Ok(handle) = spawned {
            lock(&shared.connections).push((control, handle));
        }
    }
}

fn serve_connection(stream: TcpStream, shared: &Shared, handler: &Handler) -> io::Result<()> {
    let _ = stream.set_nodelay(true);
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    loop {
        let Some((request, close)) = read_request(&mut reader, &mut writer)? else {
            return Ok(());
        };
        lock(&shared.requests).push(request.clone());
        let response = catch_unwind(AssertUnwindSafe(|| handler(&request))).unwrap_or_else(|_| {
            Response::json(
                500,
                &serde_json::json!({"error": "testkit handler panicked"}),
            )
        });
        let head_only = request.method.eq_ignore_ascii_case("HEAD");
        write_response(&mut writer, &response, close, head_only)?;
        if close {
            let _ = writer.shutdown(Shutdown::Write);
            return Ok(());
        }
    }
}

fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.to_string())
}

/// Reads one CRLF- (or LF-) terminated line without the terminator. `None` at a clean
/// end of stream.
fn read_line(reader: &mut impl BufRead) -> io::Result<Option<String>> {
    let mut line = Vec::new();
    let n = reader
        .take(MAX_LINE as u64 + 2)
        .read_until(b'\n', &mut line)?;
    if n == 0 {
        return Ok(None);
    }
    if line.last() != Some(&b'\n') {
        return Err(invalid("line too long or truncated"));
    }
    line.pop();
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    String::from_utf8(line)
        .map(Some)
        .map_err(|_| invalid("line is not UTF-8"))
}

/// Reads one request. Returns it with whether the connection closes after the answer.
fn read_request(
    reader: &mut impl BufRead,
    writer: &mut impl Write,
) -> io::Result<Option<(Request, bool)>> {
    // RFC 9112 lets a server ignore empty lines before a request line.
    let line = loop {
        match read_line(reader)? {
            None => return Ok(None),
            Some(l) if l.is_empty() => continue,
            Some(l) => break l,
        }
    };
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(invalid("bad request line"));
    };
    let (method, target, version) = (method.to_string(), target.to_string(), version.to_string());

    let mut headers = Vec::new();
    loop {
        let line = read_line(reader)?.ok_or_else(|| invalid("end of stream in headers"))?;
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').ok_or_else(|| invalid("bad header"))?;
        headers.push((name.trim().to_string(), value.trim().to_string()));
    }
    let mut request = Request {
        method,
        target,
        headers,
        body: Vec::new(),
    };

    let connection = request
        .header("Connection")
        .unwrap_or("")
        .to_ascii_lowercase();
    let close = if version.eq_ignore_ascii_case("HTTP/1.0") {
        !connection.contains("keep-alive")
    } else {
        connection.contains("close")
    };

    if request
        .header("Expect")
        .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
    {
        writer.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        writer.flush()?;
    }

    let chunked = request
        .header("Transfer-Encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    if chunked {
        request.body = read_chunked(reader)?;
    } else if let Some(length) = request.header("Content-Length") {
        let length: usize = length.parse().map_err(|_| invalid("bad Content-Length"))?;
        if length > MAX_BODY {
            return Err(invalid("body too large"));
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        request.body = body;
    }
    Ok(Some((request, close)))
}

fn read_chunked(reader: &mut impl BufRead) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line = read_line(reader)?.ok_or_else(|| invalid("end of stream in chunk size"))?;
        let size = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size, 16).map_err(|_| invalid("bad chunk size"))?;
        if size == 0 {
            // Trailers, up to the empty line.
            while let Some(trailer) = read_line(reader)? {
                if trailer.is_empty() {
                    break;
                }
            }
            return Ok(body);
        }
        if body.len() + size > MAX_BODY {
            return Err(invalid("body too large"));
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..])?;
        let end = read_line(reader)?.ok_or_else(|| invalid("end of stream after chunk"))?;
        if !end.is_empty() {
            return Err(invalid("chunk not followed by CRLF"));
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

fn write_response(
    writer: &mut impl Write,
    response: &Response,
    close: bool,
    head_only: bool,
) -> io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\n",
        response.status,
        reason(response.status)
    );
    for (name, value) in &response.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    match &response.body {
        Body::Full(body) => head.push_str(&format!("Content-Length: {}\r\n", body.len())),
        Body::Chunks(_) => head.push_str("Transfer-Encoding: chunked\r\n"),
    }
    head.push_str(if close {
        "Connection: close\r\n\r\n"
    } else {
        "Connection: keep-alive\r\n\r\n"
    });
    writer.write_all(head.as_bytes())?;
    if head_only {
        return writer.flush();
    }
    match &response.body {
        Body::Full(body) => writer.write_all(body)?,
        Body::Chunks(chunks) => {
            writer.flush()?;
            for (i, chunk) in chunks.iter().filter(|c| !c.is_empty()).enumerate() {
                if let (Some(p), true) = (response.pace, i > 0) {
                    std::thread::sleep(p);
                }
                writer.write_all(format!("{:x}\r\n", chunk.len()).as_bytes())?;
                writer.write_all(chunk)?;
                writer.write_all(b"\r\n")?;
                writer.flush()?;
            }
            writer.write_all(b"0\r\n\r\n")?;
        }
    }
    writer.flush()
}

/// A raw client for the unit tests: writes bytes, reads responses back.
#[cfg(test)]
pub(crate) mod raw {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{SocketAddr, TcpStream};
    use std::time::Duration;

    use serde_json::Value;

    pub(crate) struct Client {
        reader: BufReader<TcpStream>,
        writer: TcpStream,
    }

    pub(crate) struct Reply {
        pub status: u16,
        pub headers: Vec<(String, String)>,
        pub body: Vec<u8>,
        /// The body's chunk sizes, when it was chunked.
        pub chunks: Vec<usize>,
    }

    impl Reply {
        pub fn header(&self, name: &str) -> Option<&str> {
            self.headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        }

        pub fn json(&self) -> Value {
            serde_json::from_slice(&self.body).expect("JSON body")
        }

        /// The body read as SSE: `(event, data)` pairs.
        pub fn sse(&self) -> Vec<(String, Value)> {
            let text = String::from_utf8(self.body.clone()).expect("UTF-8 body");
            text.split("\n\n")
                .filter(|e| !e.trim().is_empty())
                .map(|event| {
                    let mut name = String::new();
                    let mut data = String::new();
                    for line in event.lines() {
                        if let Some(v) = line.strip_prefix("event: ") {
                            name = v.to_string();
                        } else if let Some(v) = line.strip_prefix("data: ") {
                            data.push_str(v);
                        }
                    }
                    (name, serde_json::from_str(&data).expect("SSE data is JSON"))
                })
                .collect()
        }
    }

    impl Client {
        pub fn connect(addr: SocketAddr) -> Client {
            let stream = TcpStream::connect(addr).expect("connect");
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            Client {
                writer: stream.try_clone().unwrap(),
                reader: BufReader::new(stream),
            }
        }

        pub fn send(&mut self, bytes: &[u8]) {
            self.writer.write_all(bytes).unwrap();
            self.writer.flush().unwrap();
        }

        /// POSTs a JSON body with Content-Length.
        pub fn post_json(&mut self, target: &str, body: &Value) -> Reply {
            let body = body.to_string();
            let request = format!(
                "POST {target} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            self.send(request.as_bytes());
            self.read_reply()
        }

        fn line(&mut self) -> String {
            let mut line = String::new();
            self.reader.read_line(&mut line).unwrap();
            line.trim_end_matches(['\r', '\n']).to_string()
        }

        pub fn read_reply(&mut self) -> Reply {
            let status_line = self.line();
            let status = status_line
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
            let mut headers = Vec::new();
            loop {
                let line = self.line();
                if line.is_empty() {
                    break;
                }
                let (n, v) = line.split_once(':').unwrap();
                headers.push((n.trim().to_string(), v.trim().to_string()));
            }
            let mut reply = Reply {
                status,
                headers,
                body: Vec::new(),
                chunks: Vec::new(),
            };
            if reply
                .header("Transfer-Encoding")
                .is_some_and(|v| v.contains("chunked"))
            {
                loop {
                    let size = usize::from_str_radix(&self.line(), 16).unwrap();
                    if size == 0 {
                        assert_eq!(self.line(), "");
                        break;
                    }
                    let mut chunk = vec![0; size];
                    self.reader.read_exact(&mut chunk).unwrap();
                    assert_eq!(self.line(), "");
                    reply.body.extend_from_slice(&chunk);
                    reply.chunks.push(size);
                }
            } else {
                let length: usize = reply.header("Content-Length").unwrap().parse().unwrap();
                reply.body = vec![0; length];
                self.reader.read_exact(&mut reply.body).unwrap();
            }
            reply
        }

        /// Reads an interim (1xx) response: its status line and the empty line after it.
        pub fn read_interim(&mut self) -> String {
            let status = self.line();
            assert_eq!(self.line(), "");
            status
        }

        /// True when the server has closed the connection.
        pub fn at_eof(&mut self) -> bool {
            let mut byte = [0u8; 1];
            matches!(self.reader.read(&mut byte), Ok(0))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::raw::Client;
    use super::*;
    use serde_json::json;

    fn echo_server() -> HttpServer {
        HttpServer::start(|request| match request.path() {
            "/sse" => Response::sse([("one", json!({"n": 1})), ("two", json!({"n": 2}))]),
            "/panic" => panic!("boom"),
            _ => Response::json(
                200,
                &json!({
                    "method": request.method,
                    "target": request.target,
                    "body": String::from_utf8_lossy(&request.body),
                }),
            ),
        })
        .expect("server starts")
    }

    #[test]
    fn records_requests_and_keeps_the_connection_alive() {
        let server = echo_server();
        let mut client = Client::connect(server.addr());
        let first = client.post_json("/a?x=1", &json!({"hello": "world"}));
        assert_eq!(first.status, 200);
        assert_eq!(first.header("Connection"), Some("keep-alive"));
        assert_eq!(first.json()["target"], "/a?x=1");
        // A second request on the same connection, with a chunked body.
        client.send(
            b"POST /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\
              5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: y\r\n\r\n",
        );
        let second = client.read_reply();
        assert_eq!(second.json()["body"], "hello world");

        let requests = server.requests();
        assert_eq!(requests.len(), 2);
        assert_eq!(requests[0].method, "POST");
        assert_eq!(requests[0].path(), "/a");
        assert_eq!(requests[0].query(), Some("x=1"));
        assert_eq!(requests[0].header("content-type"), Some("application/json"));
        assert_eq!(requests[0].json(), Some(json!({"hello": "world"})));
        assert_eq!(requests[1].body, b"hello world");
    }

    #[test]
    fn closes_when_asked_and_answers_expect_continue() {
        let server = echo_server();
        let mut client = Client::connect(server.addr());
        client.send(b"POST /c HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nConnection: close\r\nContent-Length: 2\r\n\r\n");
        let interim = client.read_interim();
        assert_eq!(interim, "HTTP/1.1 100 Continue");
        client.send(b"hi");
        let reply = client.read_reply();
        assert_eq!(reply.header("Connection"), Some("close"));
        assert_eq!(reply.json()["body"], "hi");
        assert!(client.at_eof());
    }

    #[test]
    fn streams_sse_one_chunk_per_event() {
        let server = echo_server();
        let mut client = Client::connect(server.addr());
        client.send(b"GET /sse HTTP/1.1\r\nHost: x\r\n\r\n");
        let reply = client.read_reply();
        assert_eq!(reply.header("Content-Type"), Some("text/event-stream"));
        assert_eq!(reply.chunks.len(), 2);
        let events = reply.sse();
        assert_eq!(events[0], ("one".to_string(), json!({"n": 1})));
        assert_eq!(events[1], ("two".to_string(), json!({"n": 2})));
    }

    #[test]
    fn a_panicking_handler_answers_500_and_drop_stops_everything() {
        let server = echo_server();
        let addr = server.addr();
        let mut client = Client::connect(addr);
        client.send(b"GET /panic HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(client.read_reply().status, 500);
        drop(server);
        assert!(client.at_eof(), "open connections are shut down on drop");
        assert!(TcpStream::connect(addr).is_err(), "listener is closed");
    }
}
