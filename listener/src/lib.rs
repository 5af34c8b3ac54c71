//! Serving HTTP on a TCP listener so that no client can hold it: slow clients
//! (a header trickled a byte at a time, a body that never ends, a connection
//! that says nothing) are cut off by deadlines, and the number of open
//! connections is capped so a crowd of them cannot starve the rest.
//!
//! This crate owns the accept loop and each connection's life: the caps (a
//! connection over the listener's, or over its client's share, is closed at
//! once: one client holding idle connections cannot crowd the others out),
//! the deadline for a request's head,
//! the deadline for a whole request (its body read and its answer), the idle
//! limit between keep-alive requests (hyper's head deadline covers it), and a
//! stop that lets requests in flight finish within a grace period and then
//! cuts them. It knows nothing of routes, tokens or hosts: callers bring an
//! axum `Router` with their own checks. HTTP/1.1 only: every listener of
//! sessionpipe is a loopback API or a receiver, behind a proxy or, with the
//! `tls` feature, serving HTTPS itself (the TLS handshake is held to the head's
//! deadline, so a client that never finishes it is cut off like any other; the
//! configuration may be chosen per connection from its hello, and a hello may
//! be answered with a handshake alone, as ACME's TLS-ALPN-01 check wants).
//! Who counts as one client is the caller's word (`Clients`): by default
//! each address is one.

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::task::JoinSet;
use tower::ServiceExt;

/// What one listener allows a client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Connections open at once; one more is closed as soon as it is accepted.
    pub max_connections: usize,
    /// Connections one client (as `Clients` counts them) may have open at
    /// once; one more of its own is closed as soon as it is accepted.
    pub per_client: usize,
    /// From the first byte of a request (or the end of the previous one on a
    /// kept-alive connection) to the end of its head.
    pub header_timeout: Duration,
    /// From the end of a request's head to the end of its answer's head: its
    /// body is read and the handler runs within it. Answered 408 when it runs out.
    pub request_timeout: Duration,
    /// At stop, how long requests in flight may take to finish.
    pub stop_grace: Duration,
}

impl Limits {
    /// The daemon's local API: one person's UI and CLI on loopback. Browsers
    /// send a head in one go; adding a sink waits for a receiver's discovery
    /// (10 s at most), hence the request deadline.
    pub const LOCAL_API: Limits = Limits {
        max_connections: 64,
        // One person's, on loopback: the listener's own cap is theirs.
        per_client: 64,
        header_timeout: Duration::from_secs(5),
        request_timeout: Duration::from_secs(20),
        stop_grace: Duration::from_millis(200),
    };

    /// The account pool's proxy: one person's Claude Code sessions on
    /// loopback. A request's deadline runs to its answer's head, which the
    /// API sends only when a non-streamed answer is whole: minutes, for a
    /// long one. A streamed body has no deadline here (the upstream's read
    /// timeout ends a stalled one).
    pub const POOL: Limits = Limits {
        max_connections: 512,
        per_client: 512,
        header_timeout: Duration::from_secs(10),
        request_timeout: Duration::from_secs(600),
        stop_grace: Duration::from_secs(2),
    };

    /// A receiver: many senders, batches of up to 256 KiB, and a long-poll
    /// held open per paired machine (a thousand machines is a thousand
    /// connections); a stop lets a batch in flight be stored and answered.
    /// One address may hold 256 (an office of machines behind one NAT, each
    /// with its long-poll and a batch in flight): sixteen addresses to fill
    /// the listener, not one.
    pub const RECEIVER: Limits = Limits {
        max_connections: 4096,
        per_client: 256,
        header_timeout: Duration::from_secs(10),
        request_timeout: Duration::from_secs(30),
        stop_grace: Duration::from_secs(2),
    };
}

/// Serves `app` on `listener` until `stop` resolves, then lets requests in
/// flight finish for `limits.stop_grace` and cuts the rest. Handlers can read
/// the peer's address with `ConnectInfo<SocketAddr>`. Each address is one
/// client.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    stop: impl Future<Output = ()> + Send,
) {
    serve_with(listener, app, limits, None, Clients::by_address(), stop).await;
}

/// Who counts as one client for `Limits::per_client`: a peer's address is
/// mapped to the client it counts as (an IPv6 /64, say), or to none, for a
/// peer whose connections are many clients' (a trusted reverse proxy): those
/// count toward the listener's cap only.
#[derive(Clone)]
pub struct Clients(Arc<dyn Fn(IpAddr) -> Option<IpAddr> + Send + Sync>);

impl Clients {
    /// Each address is one client.
    pub fn by_address() -> Clients {
        Clients(Arc::new(Some))
    }

    /// `group` names the client a peer's address counts as, or `None` when
    /// its connections are not one client's.
    pub fn grouped(group: impl Fn(IpAddr) -> Option<IpAddr> + Send + Sync + 'static) -> Clients {
        Clients(Arc::new(group))
    }
}

/// The connections each client has open.
struct Open {
    per_client: usize,
    counts: Mutex<HashMap<IpAddr, usize>>,
}

/// One connection counted against its client, until dropped.
struct Held {
    open: Arc<Open>,
    client: IpAddr,
}

impl Open {
    /// A place for one more connection of `client`, if it has room.
    fn take(self: &Arc<Self>, client: IpAddr) -> Option<Held> {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let n = counts.entry(client).or_insert(0);
        if *n >= self.per_client {
            return None;
        }
        *n += 1;
        Some(Held {
            open: Arc::clone(self),
            client,
        })
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut counts = self.open.counts.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = counts.get_mut(&self.client) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&self.client);
            }
        }
    }
}

/// How HTTPS connections get their configuration.
#[cfg(feature = "tls")]
#[derive(Clone)]
pub enum Tls {
    /// The same for every connection.
    Config(Arc<tokio_rustls::rustls::ServerConfig>),
    /// Chosen for each connection from its hello.
    Choose(Arc<dyn Fn(&tokio_rustls::rustls::server::ClientHello<'_>) -> Handshake + Send + Sync>),
}

/// What a connection's hello gets (`Tls::Choose`).
#[cfg(feature = "tls")]
pub enum Handshake {
    /// The handshake with this configuration, then HTTP.
    Serve(Arc<tokio_rustls::rustls::ServerConfig>),
    /// The handshake with this configuration and nothing after it: the
    /// connection is a check of the certificate shown (ACME's TLS-ALPN-01
    /// validation), not a client.
    Only(Arc<tokio_rustls::rustls::ServerConfig>),
}

/// Without the `tls` feature there is no HTTPS to speak.
#[cfg(not(feature = "tls"))]
#[derive(Clone)]
pub enum Tls {}

/// As `serve`, over TLS when `tls` is given, with clients counted by `clients`.
pub async fn serve_with(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    tls: Option<Tls>,
    clients: Clients,
    stop: impl Future<Output = ()> + Send,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let open = Arc::new(Open {
        per_client: limits.per_client.max(1),
        counts: Mutex::new(HashMap::new()),
    });
    let (closing_tx, closing) = watch::channel(false);
    let mut connections = JoinSet::new();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // Out of file descriptors, most likely: wait for some to close.
                        tracing::warn!("accept: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let held = match (clients.0)(peer.ip().to_canonical()) {
                    None => None,
                    Some(client) => match open.take(client) {
                        Some(h) => Some(h),
                        None => {
                            tracing::debug!("{peer}: its client has {} connections open, closed", limits.per_client);
                            drop(stream);
                            continue;
                        }
                    },
                };
                let Ok(slot) = slots.clone().try_acquire_owned() else {
                    tracing::debug!("{peer}: over {} connections, closed", limits.max_connections);
                    drop(stream);
                    continue;
                };
                let (app, closing, tls) = (app.clone(), closing.clone(), tls.clone());
                connections.spawn(served(stream, peer, app, limits, closing, tls, (slot, held)));
            }
        }
    }
    drop(listener);
    let _ = closing_tx.send(true);
    let finished = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(limits.stop_grace, finished)
        .await
        .is_err()
    {
        connections.shutdown().await;
    }
}

/// One accepted connection's task, until it closes: its place under the caps
/// (`places`) is given back at the end.
async fn served(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    app: Router,
    limits: Limits,
    closing: watch::Receiver<bool>,
    tls: Option<Tls>,
    places: (OwnedSemaphorePermit, Option<Held>),
) {
    let _ = stream.set_nodelay(true);
    match tls {
        None => connection(stream, peer, app, limits, closing).await,
        // Boxed: a task is as big as the largest future it may await, and
        // the handshake's with rustls' connection state would make every
        // plain connection's task several kB larger for as long as it is
        // open (a receiver holds one per long-polling machine).
        Some(tls) => Box::pin(secure(tls, stream, peer, app, limits, closing)).await,
    }
    drop(places);
}

/// One HTTPS connection: its handshake (within the head's deadline), then
/// HTTP as `connection`.
#[cfg(feature = "tls")]
async fn secure(
    tls: Tls,
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    app: Router,
    limits: Limits,
    closing: watch::Receiver<bool>,
) {
    use tokio::io::AsyncWriteExt;
    let shake = async {
        match tls {
            Tls::Config(config) => tokio_rustls::TlsAcceptor::from(config)
                .accept(stream)
                .await
                .map(Some),
            Tls::Choose(choose) => {
                let acceptor = tokio_rustls::rustls::server::Acceptor::default();
                let start = tokio_rustls::LazyConfigAcceptor::new(acceptor, stream).await?;
                match choose(&start.client_hello()) {
                    Handshake::Serve(config) => start.into_stream(config).await.map(Some),
                    Handshake::Only(config) => {
                        let mut s = start.into_stream(config).await?;
                        let _ = s.shutdown().await;
                        Ok(None)
                    }
                }
            }
        }
    };
    match tokio::time::timeout(limits.header_timeout, shake).await {
        Ok(Ok(Some(s))) => connection(s, peer, app, limits, closing).await,
        Ok(Ok(None)) => tracing::debug!("{peer}: a handshake alone, answered"),
        Ok(Err(e)) => tracing::debug!("{peer}: TLS: {e}"),
        Err(_) => tracing::debug!("{peer}: TLS handshake too slow"),
    }
}

#[cfg(not(feature = "tls"))]
async fn secure(
    tls: Tls,
    _: tokio::net::TcpStream,
    _: SocketAddr,
    _: Router,
    _: Limits,
    _: watch::Receiver<bool>,
) {
    match tls {}
}

/// One connection, until the client or a deadline closes it, or the stop.
async fn connection<S>(
    stream: S,
    peer: SocketAddr,
    app: Router,
    limits: Limits,
    mut closing: watch::Receiver<bool>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |mut req: Request<Incoming>| {
        req.extensions_mut().insert(ConnectInfo(peer));
        let app = app.clone();
        async move {
            let answer = app.oneshot(req.map(Body::new));
            match tokio::time::timeout(limits.request_timeout, answer).await {
                Ok(Ok(resp)) => Ok::<_, std::convert::Infallible>(resp),
                Ok(Err(never)) => match never {},
                Err(_) => Ok(too_slow()),
            }
        }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    tokio::select! {
        r = conn.as_mut() => {
            if let Err(e) = r {
                tracing::debug!("{peer}: {e}");
            }
        }
        _ = async { closing.wait_for(|c| *c).await.map(|_| ()) } => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}

/// 408, and the connection closes (its body may be half read).
fn too_slow() -> Response<Body> {
    let mut resp = Response::new(Body::from(
        "{\"error\":\"request_timeout\",\"message\":\"the request took too long to arrive\"}",
    ));
    *resp.status_mut() = StatusCode::REQUEST_TIMEOUT;
    resp.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/json"),
    );
    resp.headers_mut().insert(
        axum::http::header::CONNECTION,
        axum::http::HeaderValue::from_static("close"),
    );
    resp
}

#[cfg(test)]
mod tests;
