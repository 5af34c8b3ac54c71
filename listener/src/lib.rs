//! Serving HTTP on a TCP listener so that no client can hold it: slow clients
//! (a header trickled a byte at a time, a body that never ends, a connection
//! that says nothing) are cut off by deadlines, and the number of open
//! connections is capped so a crowd of them cannot starve the rest.
//!
//! This crate owns the accept loop and each connection's life: the cap (a
//! connection over it is closed at once), the deadline for a request's head,
//! the deadline for a whole request (its body read and its answer), the idle
//! limit between keep-alive requests (hyper's head deadline covers it), and a
//! stop that lets requests in flight finish within a grace period and then
//! cuts them. It knows nothing of routes, tokens or hosts: callers bring an
//! axum `Router` with their own checks. HTTP/1.1 only: every listener of
//! sessionpipe is a loopback API or a receiver, behind a proxy or, with the
//! `tls` feature, serving HTTPS itself (the TLS handshake is held to the head's
//! deadline, so a client that never finishes it is cut off like any other).

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;
use tower::ServiceExt;

/// What one listener allows a client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Connections open at once; one more is closed as soon as it is accepted.
    pub max_connections: usize,
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
        header_timeout: Duration::from_secs(10),
        request_timeout: Duration::from_secs(600),
        stop_grace: Duration::from_secs(2),
    };

    /// A receiver: many senders, batches of up to 256 KiB, and a long-poll
    /// held open per paired machine (a thousand machines is a thousand
    /// connections); a stop lets a batch in flight be stored and answered.
    pub const RECEIVER: Limits = Limits {
        max_connections: 4096,
        header_timeout: Duration::from_secs(10),
        request_timeout: Duration::from_secs(30),
        stop_grace: Duration::from_secs(2),
    };
}

/// Serves `app` on `listener` until `stop` resolves, then lets requests in
/// flight finish for `limits.stop_grace` and cuts the rest. Handlers can read
/// the peer's address with `ConnectInfo<SocketAddr>`.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    stop: impl Future<Output = ()> + Send,
) {
    serve_with(listener, app, limits, None, stop).await;
}

/// How connections are spoken: plain HTTP, or HTTPS with this acceptor.
#[cfg(feature = "tls")]
pub type Tls = Option<tokio_rustls::TlsAcceptor>;
#[cfg(not(feature = "tls"))]
pub type Tls = Option<std::convert::Infallible>;

/// As `serve`, over TLS when `tls` is given.
pub async fn serve_with(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    tls: Tls,
    stop: impl Future<Output = ()> + Send,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
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
                let Ok(slot) = slots.clone().try_acquire_owned() else {
                    tracing::debug!("{peer}: over {} connections, closed", limits.max_connections);
                    drop(stream);
                    continue;
                };
                                let (app, closing, tls) = (app.clone(), closing.clone(), tls.clone());
                connections.spawn(async move {
                    let _ = stream.set_nodelay(true);
                    match tls {
                        None => connection(stream, peer, app, limits, closing).await,
                        #[cfg(feature = "tls")]
                        Some(acceptor) => {
                            let shake = tokio::time::timeout(limits.header_timeout, acceptor.accept(stream));
                            match shake.await {
                                Ok(Ok(s)) => connection(s, peer, app, limits, closing).await,
                                Ok(Err(e)) => tracing::debug!("{peer}: TLS: {e}"),
                                Err(_) => tracing::debug!("{peer}: TLS handshake too slow"),
                            }
                        }
                        #[cfg(not(feature = "tls"))]
                        Some(never) => match never {},
                    }
                    drop(slot);
                });
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
