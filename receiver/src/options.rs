//! Layer 6, options: how a receiver is started (`Options`), its defaults,
//! and the bounds every setting is checked against before anything starts.
//!
//! This module owns those settings. It must not start anything (`server`
//! does), and never shows the token or a secret (`Debug` is written out by
//! hand for that).

use crate::acme::Acme;
use crate::client::{Cidr, ProxyHeader};
use crate::control::ControlOptions;
use crate::events::Settings;
use crate::invalid::Invalid;
use crate::page::PageOptions;
use crate::signature;
use crate::tls::TlsFiles;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// How a receiver is started. `Options::new(token)` gives the defaults: loopback on
/// a free port, `max_tier` 3, the binding's default batch limits, a temporary
/// folder, no signature, no control side, quiet, plain HTTP, 4 096
/// connections (256 per client), no trusted proxy.
#[derive(Clone)]
pub struct Options {
    pub listen: SocketAddr,
    /// The bearer token senders must present.
    pub token: String,
    /// 0–3: events above it refuse their batch with 403 `tier_above_max`.
    pub max_tier: u8,
    /// 1–50 events per batch (the schema's bounds).
    pub max_events: usize,
    /// 1 024–262 144 bytes per batch body (the schema's bounds).
    pub max_bytes: usize,
    /// The folder of the SQLite database (`receiver.db`); `None` is a temporary
    /// folder removed on stop.
    pub data: Option<PathBuf>,
    /// A `postgres://` URL: the database is there instead (`data` is then
    /// unused), and several receivers may share it.
    pub database: Option<String>,
    /// Events that arrived longer ago than this are deleted (checked hourly,
    /// in small batches); `None` keeps them.
    pub retention: Option<Duration>,
    /// A `whsec_…` secret: every batch must then carry a valid signature.
    pub webhook_secret: Option<String>,
    /// Allows a `listen` address other than loopback.
    pub allow_remote: bool,
    /// The request log: one line per request answered (through `tracing`,
    /// at INFO; the binary's `--quiet` turns it off).
    pub log: bool,
    /// The control side (`capabilities` then lists `control`); `None` serves the
    /// events side only.
    pub control: Option<ControlOptions>,
    /// The page (passkey sign-in, the board, commands signed on the device,
    /// push); it needs `control` (its rp id is control's).
    pub page: Option<PageOptions>,
    /// Serve HTTPS with this certificate chain and private key (PEM files);
    /// `None` is plain HTTP (on loopback, or behind an HTTPS proxy).
    pub tls: Option<TlsFiles>,
    /// Serve HTTPS with a certificate got and renewed over ACME (TLS-ALPN-01
    /// on `listen`), kept in the data folder's `acme/`; not with `tls`. The
    /// page's origin, when not given, is `https://` its first domain.
    pub acme: Option<Acme>,
    /// Connections open at once (a paired machine holds one for its
    /// long-poll); one more is closed as soon as it is accepted.
    pub max_connections: usize,
    /// Connections one client (an address, an IPv6 /64) may have open at
    /// once; a trusted proxy's are not counted as one client's.
    pub connections_per_client: usize,
    /// The async worker threads (1-1024); `None` is one per core. The
    /// database has threads of its own besides.
    pub workers: Option<usize>,
    /// Reverse proxies whose word on the client's address is taken (an
    /// address or a network each); from any other peer, the peer is the
    /// client. Per-client limits count clients by this address.
    pub trusted_proxies: Vec<Cidr>,
    /// The header those proxies write the client's address into.
    pub proxy_header: ProxyHeader,
}

/// Written out by hand so that a token or a secret never reaches a log or a panic
/// message through `{:?}`.
impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("listen", &self.listen)
            .field("token", &"[redacted]")
            .field("max_tier", &self.max_tier)
            .field("max_events", &self.max_events)
            .field("max_bytes", &self.max_bytes)
            .field("data", &self.data)
            .field("database", &self.database.as_ref().map(|_| "[set]"))
            .field("retention", &self.retention)
            .field(
                "webhook_secret",
                &self.webhook_secret.as_ref().map(|_| "[redacted]"),
            )
            .field("allow_remote", &self.allow_remote)
            .field("log", &self.log)
            .field("control", &self.control)
            .field("page", &self.page)
            .field("tls", &self.tls)
            .field("acme", &self.acme)
            .field("max_connections", &self.max_connections)
            .field("connections_per_client", &self.connections_per_client)
            .field("workers", &self.workers)
            .field("trusted_proxies", &self.trusted_proxies)
            .field("proxy_header", &self.proxy_header)
            .finish()
    }
}

impl Options {
    pub fn new(token: impl Into<String>) -> Options {
        Options {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            token: token.into(),
            max_tier: 3,
            max_events: 50,
            max_bytes: 262_144,
            data: None,
            database: None,
            retention: None,
            webhook_secret: None,
            allow_remote: false,
            log: false,
            control: None,
            page: None,
            tls: None,
            acme: None,
            max_connections: sessionpipe_listener::Limits::RECEIVER.max_connections,
            connections_per_client: sessionpipe_listener::Limits::RECEIVER.per_client,
            workers: None,
            trusted_proxies: Vec::new(),
            proxy_header: ProxyHeader::default(),
        }
    }

    /// The events side's settings, or why these options cannot start.
    pub(crate) fn check(&self) -> Result<Settings, Invalid> {
        if self.token.is_empty() || self.token.chars().any(char::is_whitespace) {
            return Err(Invalid(
                "the token must be non-empty and without spaces".into(),
            ));
        }
        if self.max_tier > 3 {
            return Err(Invalid("max_tier is 0-3".into()));
        }
        if !(1..=50).contains(&self.max_events) {
            return Err(Invalid("max_events is 1-50".into()));
        }
        if !(1024..=262_144).contains(&self.max_bytes) {
            return Err(Invalid("max_bytes is 1024-262144".into()));
        }
        if self.workers.is_some_and(|w| !(1..=1024).contains(&w)) {
            return Err(Invalid("workers is 1-1024".into()));
        }
        if !(1..=1_000_000).contains(&self.max_connections) {
            return Err(Invalid("max_connections is 1-1000000".into()));
        }
        if !(1..=self.max_connections).contains(&self.connections_per_client) {
            return Err(Invalid(
                "connections_per_client is 1 to max_connections".into(),
            ));
        }
        if let Some(a) = &self.acme {
            if self.tls.is_some() {
                return Err("tls files and acme: one source of certificates, not both".into());
            }
            a.check()?;
        }
        if !self.listen.ip().is_loopback() && !self.allow_remote {
            return Err(Invalid(format!(
                "{} is not a loopback address (allow_remote / --allow-remote to listen there)",
                self.listen
            )));
        }
        if let Some(c) = &self.control {
            c.check()?;
        }
        match (&self.page, &self.control) {
            (Some(_), None) => return Err("the page needs the control side (control)".into()),
            (Some(p), Some(c)) if !p.origin.is_empty() => {
                p.check(&c.rp_id)?;
            }
            _ => {}
        }
        let webhook_key = match &self.webhook_secret {
            Some(s) => Some(signature::decode_secret(s)?),
            None => None,
        };
        Ok(Settings {
            max_tier: self.max_tier,
            max_events: self.max_events,
            max_bytes: self.max_bytes,
            webhook_key,
        })
    }
}
