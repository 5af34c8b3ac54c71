//! Layer 1, egress: where the receiver's own requests may go. A signed-in
//! person gives the receiver addresses to send to (a Web Push endpoint, a
//! notification URL); the receiver must not become their way into places
//! only it can reach: its own machine, the network it sits on, a cloud's
//! metadata service.
//!
//! This module owns that rule and the one HTTP client those requests take
//! (`Egress`). An address is `https://`, with no user name or password in
//! it, and every address its host resolves to is public: not loopback,
//! private, link-local, unique-local, carrier-grade NAT, multicast,
//! unspecified, documentation, benchmarking or otherwise reserved, nor an
//! IPv4-mapped, NAT64 or 6to4 form of one (`non_public`). The operator may
//! allow private addresses (`--allow-private-notify`, for a self-hosted
//! ntfy on the LAN): then plain `http://` is taken too, to private
//! addresses only. The rule is checked when an address is given (with its
//! host resolved, so the person is told why) and again at every send: the
//! client's own resolver drops what is not allowed, so the addresses
//! checked are the addresses connected to (no second lookup to rebind), an
//! IP literal is checked before the request, redirects are never followed
//! and no proxy from the environment is used. It must not log or put into
//! an error an address's path or query (a push endpoint's path is a
//! capability).

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

/// Why an address is not sent to. The words name the host and the address
/// it resolved to, never a path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EgressError {
    #[error("not an absolute URL with a host")]
    NotUrl,
    #[error("only https:// addresses are taken")]
    Scheme,
    #[error("only https:// addresses are taken, and http:// to a private address")]
    SchemeOrPrivateHttp,
    #[error("an address with a user name or password in it is not taken")]
    Credentials,
    #[error(
        "{} is {kind}: this receiver sends notifications only to public addresses (its \
         operator can allow private ones with --allow-private-notify)",
        shown(host, *ip)
    )]
    NotPublic {
        host: String,
        ip: IpAddr,
        kind: &'static str,
    },
    #[error(
        "{} is a public address: plain http:// goes only to a private one; use https://",
        shown(host, *ip)
    )]
    PublicHttp { host: String, ip: IpAddr },
    #[error("{host} does not resolve to any address")]
    Unresolved { host: String },
}

/// `10.0.0.1`, or `push.example.net (10.0.0.1)` for a name.
fn shown(host: &str, ip: IpAddr) -> String {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if bare.parse::<IpAddr>().is_ok() {
        ip.to_string()
    } else {
        format!("{host} ({ip})")
    }
}

/// What kind of non-public address `ip` is, in words (`a loopback
/// address`); `None` for a public one.
pub fn non_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(a) => v4_kind(a),
        IpAddr::V6(a) => v6_kind(a),
    }
}

fn v4_kind(a: Ipv4Addr) -> Option<&'static str> {
    let [a0, a1, a2, _] = a.octets();
    Some(match (a0, a1, a2) {
        (0, _, _) => "an unspecified address (this network)",
        (10, _, _) | (192, 168, _) => "a private address",
        (172, b, _) if b & 0xf0 == 16 => "a private address",
        (100, b, _) if b & 0xc0 == 64 => "a carrier-grade NAT address",
        (127, _, _) => "a loopback address",
        (169, 254, _) => "a link-local address",
        (192, 0, 0) | (192, 88, 99) => "a reserved address",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "a documentation address",
        (198, b, _) if b & 0xfe == 18 => "a benchmarking address",
        (224..=239, _, _) => "a multicast address",
        (240..=255, _, _) => "a reserved address",
        _ => return None,
    })
}

fn v6_kind(a: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = a.to_ipv4_mapped() {
        return v4_kind(v4);
    }
    let s = a.segments();
    let embedded = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    Some(match s {
        [0, 0, 0, 0, 0, 0, 0, 0] => "an unspecified address",
        [0, 0, 0, 0, 0, 0, 0, 1] => "a loopback address",
        // NAT64's well-known prefix and 6to4 carry an IPv4 address: judged
        // as that address.
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => return v4_kind(embedded(hi, lo)),
        [0x2002, hi, lo, ..] => return v4_kind(embedded(hi, lo)),
        [0x2001, 0xdb8, ..] => "a documentation address",
        [0x3fff, b, ..] if b & 0xf000 == 0 => "a documentation address",
        [0x2001, b, ..] if b < 0x200 => "a reserved address",
        [0x100, 0, 0, 0, ..] => "a discard-only address",
        [x, ..] if x & 0xfe00 == 0xfc00 => "a unique-local address",
        [x, ..] if x & 0xffc0 == 0xfe80 => "a link-local address",
        [x, ..] if x & 0xffc0 == 0xfec0 => "a site-local address",
        [x, ..] if x & 0xff00 == 0xff00 => "a multicast address",
        [0x5f00, ..] => "a reserved address",
        // Global unicast is 2000::/3; the rest is not handed out.
        [x, ..] if x & 0xe000 != 0x2000 => "a reserved address",
        _ => return None,
    })
}

/// Which addresses a connection may be made to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Allow {
    /// Public ones only (https).
    Public,
    /// Any (https, with the operator's opt-in).
    Any,
    /// Non-public ones only (plain http, with the operator's opt-in).
    NonPublic,
}

impl Allow {
    /// `ip` as a connection of this kind may not go to it, and why.
    fn refuse(self, host: &str, ip: IpAddr) -> Option<EgressError> {
        let kind = non_public(ip);
        match (self, kind) {
            (Allow::Public, Some(kind)) => Some(EgressError::NotPublic {
                host: host.to_string(),
                ip,
                kind,
            }),
            (Allow::NonPublic, None) => Some(EgressError::PublicHttp {
                host: host.to_string(),
                ip,
            }),
            _ => None,
        }
    }
}

/// How names are looked up: the system's resolver, or (in this crate's
/// tests) a table standing in for a name whose answer changed.
#[derive(Clone)]
enum Lookup {
    System,
    #[cfg(test)]
    Table(Arc<std::collections::HashMap<String, Vec<IpAddr>>>),
}

impl Lookup {
    async fn addresses(&self, host: &str) -> Vec<IpAddr> {
        match self {
            Lookup::System => tokio::net::lookup_host((host, 0))
                .await
                .map(|a| a.map(|s| s.ip()).collect())
                .unwrap_or_default(),
            #[cfg(test)]
            Lookup::Table(t) => t.get(host).cloned().unwrap_or_default(),
        }
    }
}

/// The client's resolver: a name's addresses, less those `allow` refuses;
/// none left, the connection is not made.
struct Guarded {
    allow: Allow,
    lookup: Lookup,
}

impl Resolve for Guarded {
    fn resolve(&self, name: Name) -> Resolving {
        let (allow, lookup, host) = (self.allow, self.lookup.clone(), name.as_str().to_string());
        Box::pin(async move {
            let found = lookup.addresses(&host).await;
            let refused = found.iter().find_map(|ip| allow.refuse(&host, *ip));
            let kept: Vec<SocketAddr> = found
                .into_iter()
                .filter(|ip| allow.refuse(&host, *ip).is_none())
                .map(|ip| SocketAddr::new(ip, 0))
                .collect();
            if kept.is_empty() {
                let why = refused.unwrap_or(EgressError::Unresolved { host });
                return Err(Box::new(why) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(kept.into_iter()) as Addrs)
        })
    }
}

/// The HTTP client of the receiver's own requests, and the rule above.
#[derive(Clone)]
pub struct Egress {
    allow_private: bool,
    lookup: Lookup,
    https: reqwest::Client,
    /// Plain http to private addresses, with the operator's opt-in.
    http: Option<reqwest::Client>,
}

impl std::fmt::Debug for Egress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Egress")
            .field("allow_private", &self.allow_private)
            .finish_non_exhaustive()
    }
}

impl Egress {
    /// Requests that give up after `timeout`; `allow_private` is the
    /// operator's `--allow-private-notify`.
    pub fn new(allow_private: bool, timeout: Duration) -> Result<Egress, String> {
        Egress::with_lookup(allow_private, timeout, Lookup::System)
    }

    /// As `new`, with names looked up in `table` instead of the system's
    /// resolver.
    #[cfg(test)]
    pub(crate) fn with_table(
        allow_private: bool,
        timeout: Duration,
        table: &[(&str, &[IpAddr])],
    ) -> Egress {
        let table = table
            .iter()
            .map(|(h, ips)| (h.to_string(), ips.to_vec()))
            .collect();
        Egress::with_lookup(allow_private, timeout, Lookup::Table(Arc::new(table))).unwrap()
    }

    fn with_lookup(
        allow_private: bool,
        timeout: Duration,
        lookup: Lookup,
    ) -> Result<Egress, String> {
        let client = |allow: Allow, https_only: bool| {
            reqwest::Client::builder()
                .timeout(timeout)
                .redirect(reqwest::redirect::Policy::none())
                .no_proxy()
                .https_only(https_only)
                .dns_resolver(Arc::new(Guarded {
                    allow,
                    lookup: lookup.clone(),
                }))
                .build()
                .map_err(|e| e.to_string())
        };
        let https = client(
            if allow_private {
                Allow::Any
            } else {
                Allow::Public
            },
            true,
        )?;
        let http = allow_private
            .then(|| client(Allow::NonPublic, false))
            .transpose()?;
        Ok(Egress {
            allow_private,
            lookup,
            https,
            http,
        })
    }

    /// Whether private addresses (and plain http to them) are taken.
    pub fn allows_private(&self) -> bool {
        self.allow_private
    }

    /// `url` parsed, and checked without a lookup: its scheme, no
    /// credentials, and an IP literal host's address; with the kind of
    /// connection it may make.
    fn parse(&self, url: &str) -> Result<(Url, Allow), EgressError> {
        let url = Url::parse(url).map_err(|_| EgressError::NotUrl)?;
        let host = url.host_str().ok_or(EgressError::NotUrl)?.to_string();
        if !url.username().is_empty() || url.password().is_some() {
            return Err(EgressError::Credentials);
        }
        let allow = match (url.scheme(), self.allow_private) {
            ("https", false) => Allow::Public,
            ("https", true) => Allow::Any,
            ("http", true) => Allow::NonPublic,
            (_, false) => return Err(EgressError::Scheme),
            (_, true) => return Err(EgressError::SchemeOrPrivateHttp),
        };
        let literal = match url.host() {
            Some(url::Host::Ipv4(a)) => Some(IpAddr::V4(a)),
            Some(url::Host::Ipv6(a)) => Some(IpAddr::V6(a)),
            _ => None,
        };
        if let Some(err) = literal.and_then(|ip| allow.refuse(&host, ip)) {
            return Err(err);
        }
        Ok((url, allow))
    }

    /// Checks `url` as given: the rule, without a lookup (a push
    /// subscription read on its own).
    pub fn check_syntax(&self, url: &str) -> Result<(), EgressError> {
        self.parse(url).map(|_| ())
    }

    /// Checks `url` when a person gives it: the rule, with its host looked
    /// up; every address it resolves to must be allowed.
    pub async fn check(&self, url: &str) -> Result<(), EgressError> {
        let (url, allow) = self.parse(url)?;
        let Some(url::Host::Domain(host)) = url.host() else {
            return Ok(());
        };
        let found = self.lookup.addresses(host).await;
        if found.is_empty() {
            return Err(EgressError::Unresolved {
                host: host.to_string(),
            });
        }
        match found.iter().find_map(|ip| allow.refuse(host, *ip)) {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }

    /// The client to send to `url` with, once it is checked (an IP literal
    /// here, a name's addresses as the client resolves it).
    pub fn client_for(&self, url: &str) -> Result<(&reqwest::Client, Url), EgressError> {
        let (url, allow) = self.parse(url)?;
        let client = match allow {
            Allow::NonPublic => self.http.as_ref().ok_or(EgressError::Scheme)?,
            Allow::Public | Allow::Any => &self.https,
        };
        Ok((client, url))
    }
}

/// The words of `e` and of what it came from, never its URL: what a failed
/// send is logged with (a refused address shows there as why).
pub fn reasons(e: &reqwest::Error) -> String {
    let first = match e.url() {
        Some(_) if e.is_timeout() => "timed out".to_string(),
        Some(_) => "the request failed".to_string(),
        None => e.to_string(),
    };
    let mut words = vec![first];
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let w = s.to_string();
        if !words.iter().any(|seen| seen.contains(&w)) {
            words.push(w);
        }
        source = s.source();
    }
    words.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn every_kind_of_non_public_address_is_named() {
        for (a, kind) in [
            ("0.0.0.0", "an unspecified address (this network)"),
            ("10.0.0.1", "a private address"),
            ("172.16.0.1", "a private address"),
            ("172.31.255.255", "a private address"),
            ("192.168.1.10", "a private address"),
            ("100.64.0.1", "a carrier-grade NAT address"),
            ("100.127.255.254", "a carrier-grade NAT address"),
            ("127.0.0.1", "a loopback address"),
            ("127.8.9.10", "a loopback address"),
            ("169.254.169.254", "a link-local address"),
            ("192.0.0.8", "a reserved address"),
            ("192.0.2.1", "a documentation address"),
            ("198.51.100.1", "a documentation address"),
            ("203.0.113.1", "a documentation address"),
            ("198.18.0.1", "a benchmarking address"),
            ("224.0.0.1", "a multicast address"),
            ("255.255.255.255", "a reserved address"),
            ("::", "an unspecified address"),
            ("::1", "a loopback address"),
            ("::ffff:127.0.0.1", "a loopback address"),
            ("::ffff:169.254.169.254", "a link-local address"),
            ("::127.0.0.1", "a reserved address"),
            ("64:ff9b::a00:1", "a private address"),
            ("2002:7f00:1::1", "a loopback address"),
            ("fd00::1", "a unique-local address"),
            ("fc12::1", "a unique-local address"),
            ("fe80::1", "a link-local address"),
            ("fec0::1", "a site-local address"),
            ("ff02::1", "a multicast address"),
            ("2001:db8::1", "a documentation address"),
            ("3fff::1", "a documentation address"),
            ("2001::1", "a reserved address"),
            ("2001:2::1", "a reserved address"),
            ("100::1", "a discard-only address"),
            ("4000::1", "a reserved address"),
        ] {
            assert_eq!(non_public(ip(a)), Some(kind), "{a}");
        }
        for a in [
            "1.1.1.1",
            "8.8.8.8",
            "100.63.255.255",
            "100.128.0.1",
            "172.32.0.1",
            "192.0.3.1",
            "2606:4700::1111",
            "2a00:1450:4001::200e",
            "64:ff9b::808:808",
            "2002:808:808::1",
            "::ffff:8.8.8.8",
        ] {
            assert_eq!(non_public(ip(a)), None, "{a}");
        }
    }

    #[test]
    fn an_address_is_https_without_credentials_to_a_public_host() {
        let e = Egress::new(false, Duration::from_secs(1)).unwrap();
        let refused = |u: &str| e.check_syntax(u).unwrap_err().to_string();
        assert!(e.check_syntax("https://push.example.net/wpush/abc").is_ok());
        assert!(e.check_syntax("https://1.1.1.1/x").is_ok());
        assert_eq!(
            refused("http://push.example.net/x"),
            "only https:// addresses are taken"
        );
        assert_eq!(
            refused("ftp://push.example.net/x"),
            "only https:// addresses are taken"
        );
        assert!(refused("https://u:pw@push.example.net/x").contains("user name or password"));
        assert_eq!(refused("push/x"), "not an absolute URL with a host");
        for (u, words) in [
            ("https://127.0.0.1/x", "127.0.0.1 is a loopback address"),
            ("https://10.0.0.1/x", "10.0.0.1 is a private address"),
            (
                "https://169.254.169.254/latest",
                "169.254.169.254 is a link-local address",
            ),
            ("https://[::1]:8443/x", "::1 is a loopback address"),
            ("https://[fd00::1]/x", "fd00::1 is a unique-local address"),
            (
                "https://[::ffff:7f00:1]/x",
                "::ffff:127.0.0.1 is a loopback address",
            ),
            ("https://0x7f.1/x", "127.0.0.1 is a loopback address"),
            ("https://2130706433/x", "127.0.0.1 is a loopback address"),
        ] {
            let w = refused(u);
            assert!(w.starts_with(words), "{u}: {w}");
            assert!(w.contains("--allow-private-notify"), "{w}");
            assert!(!w.contains("/x") && !w.contains("latest"), "no path: {w}");
        }
    }

    #[test]
    fn with_the_operator_s_opt_in_private_addresses_and_http_to_them_are_taken() {
        let e = Egress::new(true, Duration::from_secs(1)).unwrap();
        assert!(e.allows_private());
        for u in [
            "https://10.0.0.1/x",
            "http://127.0.0.1:9/x",
            "http://[fd00::1]/x",
            "http://ntfy.lan/topic",
            "https://push.example.net/x",
        ] {
            assert!(e.check_syntax(u).is_ok(), "{u}");
        }
        let w = e.check_syntax("http://1.1.1.1/x").unwrap_err().to_string();
        assert!(
            w.starts_with("1.1.1.1 is a public address: plain http://"),
            "{w}"
        );
        assert!(e.check_syntax("ftp://10.0.0.1/x").is_err());
    }

    #[tokio::test]
    async fn a_name_is_judged_by_every_address_it_resolves_to() {
        let table: &[(&str, &[IpAddr])] = &[
            ("push.example.net", &[ip("93.184.216.34")]),
            ("inside.example.net", &[ip("93.184.216.34"), ip("10.1.2.3")]),
            ("lan.example.net", &[ip("192.168.1.5")]),
        ];
        let e = Egress::with_table(false, Duration::from_secs(1), table);
        assert_eq!(e.check("https://push.example.net/x").await, Ok(()));
        let w = e.check("https://inside.example.net/x").await.unwrap_err();
        assert!(
            w.to_string()
                .starts_with("inside.example.net (10.1.2.3) is a private address"),
            "{w}"
        );
        let w = e.check("https://nowhere.example.net/x").await.unwrap_err();
        assert_eq!(
            w.to_string(),
            "nowhere.example.net does not resolve to any address"
        );
        let lan = Egress::with_table(true, Duration::from_secs(1), table);
        assert_eq!(lan.check("http://lan.example.net/x").await, Ok(()));
        let w = lan.check("http://push.example.net/x").await.unwrap_err();
        assert!(w.to_string().contains("plain http://"), "{w}");
        // The system's resolver: localhost is loopback.
        let sys = Egress::new(false, Duration::from_secs(5)).unwrap();
        let w = sys.check("https://localhost:8443/x").await.unwrap_err();
        assert!(w.to_string().starts_with("localhost ("), "{w}");
        assert!(w.to_string().contains("a loopback address"), "{w}");
    }

    #[tokio::test]
    async fn at_every_send_the_addresses_connected_to_are_the_ones_checked() {
        // A name that resolved to a public address when it was given, and
        // to loopback now: the client's own lookup is the one checked.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let e = Egress::with_table(
            false,
            Duration::from_secs(5),
            &[("push.example.net", &[ip("127.0.0.1")])],
        );
        let (client, url) = e
            .client_for(&format!("https://push.example.net:{port}/x"))
            .unwrap();
        let err = client.post(url).send().await.unwrap_err();
        let words = reasons(&err);
        assert!(
            words.contains("push.example.net (127.0.0.1) is a loopback address"),
            "{words}"
        );
        assert!(!words.contains("/x"), "no path: {words}");
        assert_eq!(
            listener.accept().map(|_| ()).unwrap_err().kind(),
            std::io::ErrorKind::WouldBlock,
            "nothing was connected to"
        );
        // An address literal is refused before any request is made.
        let literal = e.client_for(&format!("https://127.0.0.1:{port}/x"));
        assert!(matches!(literal, Err(EgressError::NotPublic { .. })));
    }

    #[tokio::test]
    async fn a_public_looking_name_that_redirects_to_loopback_is_not_followed() {
        use std::io::{Read, Write};
        let target = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        target.set_nonblocking(true).unwrap();
        let to = format!("http://{}/latest/meta-data", target.local_addr().unwrap());
        let first = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = first.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut conn, _) = first.accept().unwrap();
            let mut head = [0u8; 4096];
            let _ = conn.read(&mut head);
            let _ = write!(
                conn,
                "HTTP/1.1 302 Found\r\nlocation: {to}\r\ncontent-length: 0\r\n\r\n"
            );
        });
        // A LAN webhook the operator allowed, whose answer points elsewhere.
        let e = Egress::with_table(
            true,
            Duration::from_secs(5),
            &[("hooks.example.net", &[ip("127.0.0.1")])],
        );
        let (client, url) = e
            .client_for(&format!("http://hooks.example.net:{port}/x"))
            .unwrap();
        let answer = client.post(url).body("needs you").send().await.unwrap();
        assert_eq!(answer.status(), 302, "answered, and not followed");
        assert_eq!(
            target.accept().map(|_| ()).unwrap_err().kind(),
            std::io::ErrorKind::WouldBlock,
            "the redirect's target was never connected to"
        );
    }
}
