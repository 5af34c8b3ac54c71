//! Layer 3, client: who is asking. A layer over every route (`resolve`)
//! works out the address of the client a request came from, once, keeps it
//! in the request's extensions (`ClientAddr`) for the layers and handlers
//! after it, and names it on every log line of the request (its span).
//!
//! This module owns that address. Today it is the TCP peer's (IPv4-mapped
//! IPv6 read as IPv4); reading it from `Forwarded` / `X-Forwarded-For` when
//! the peer is a trusted proxy belongs here too, and per-client limits key
//! on what this gives. It must not trust a header from any other peer.

use axum::extract::{ConnectInfo, Request};
use axum::middleware::Next;
use axum::response::Response;
use std::net::{IpAddr, SocketAddr};
use tracing::Instrument;

/// The address of the client a request came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientAddr(pub IpAddr);

/// The layer: the request's `ClientAddr`, and its span.
pub async fn resolve(
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    mut req: Request,
    next: Next,
) -> Response {
    let client = ClientAddr(peer.ip().to_canonical());
    req.extensions_mut().insert(client);
    let span = tracing::info_span!("request", client = %client.0);
    next.run(req).instrument(span).await
}
