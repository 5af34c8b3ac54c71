//! Layer 3, client: who is asking. A layer over every route (`resolve`)
//! works out the address of the client a request came from, once, keeps it
//! in the request's extensions (`ClientAddr`) for the layers and handlers
//! after it, and names it on every log line of the request (its span).
//!
//! This module owns that address and what counts as one client
//! (`ClientKey`: an IPv4 address, or an IPv6 /64, what one home or one
//! server is usually given). The address is the TCP peer's (IPv4-mapped
//! IPv6 read as IPv4), unless the peer is one of the operator's trusted
//! proxies (`Proxies`): then it is the right-most address of the proxy
//! header (`X-Forwarded-For`, or `Forwarded` when the proxy writes that one)
//! that is not itself a trusted proxy, the one hop the proxies saw and no
//! client wrote. It must not trust a header from any other peer, nor read
//! the header the proxy does not write (a client's own copy of it goes
//! through a proxy untouched).

use crate::invalid::Invalid;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::Response;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tracing::Instrument;

/// Hops of a proxy header looked at, from the right: past these, the
/// nearest trusted one is taken as the client.
const HOPS_MAX: usize = 32;

/// The address of the client a request came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientAddr(pub IpAddr);

impl ClientAddr {
    /// What counts as one client for per-client limits.
    pub fn key(self) -> ClientKey {
        match self.0.to_canonical() {
            IpAddr::V4(a) => ClientKey(IpAddr::V4(a)),
            IpAddr::V6(a) => {
                let bits = u128::from(a) & !((1u128 << 64) - 1);
                ClientKey(IpAddr::V6(Ipv6Addr::from(bits)))
            }
        }
    }
}

/// One client, as limits count them: an IPv4 address, or the /64 an IPv6
/// address is in. Shown as `192.0.2.7` or `2001:db8:1:2::/64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ClientKey(IpAddr);

impl std::fmt::Display for ClientKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            IpAddr::V4(a) => write!(f, "{a}"),
            IpAddr::V6(a) => write!(f, "{a}/64"),
        }
    }
}

/// An address or a network (`10.0.0.1`, `10.0.0.0/8`, `fd00::/8`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

impl Cidr {
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

impl std::str::FromStr for Cidr {
    type Err = Invalid;

    fn from_str(s: &str) -> Result<Cidr, Invalid> {
        let bad = || {
            Invalid(format!(
                "{s:?} is not an address or a network (ADDR or ADDR/LEN)"
            ))
        };
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p.parse::<u8>().map_err(|_| bad())?)),
            None => (s, None),
        };
        let addr = addr.parse::<IpAddr>().map_err(|_| bad())?.to_canonical();
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = prefix.unwrap_or(max);
        if prefix > max {
            return Err(bad());
        }
        Ok(Cidr { addr, prefix })
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// The header a trusted proxy writes the client's address into.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProxyHeader {
    /// `X-Forwarded-For: client, proxy1, ...` (Caddy, nginx, most others).
    #[default]
    XForwardedFor,
    /// `Forwarded: for=client, for=proxy1` (RFC 7239).
    Forwarded,
}

impl std::str::FromStr for ProxyHeader {
    type Err = Invalid;

    fn from_str(s: &str) -> Result<ProxyHeader, Invalid> {
        match s.to_ascii_lowercase().as_str() {
            "x-forwarded-for" => Ok(ProxyHeader::XForwardedFor),
            "forwarded" => Ok(ProxyHeader::Forwarded),
            _ => Err(Invalid(format!(
                "{s:?}: the proxy header is x-forwarded-for or forwarded"
            ))),
        }
    }
}

/// The operator's trusted proxies, and the header they write.
#[derive(Debug, Default)]
pub struct Proxies {
    trusted: Vec<Cidr>,
    header: ProxyHeader,
    /// A proxy header came from a peer not trusted: said once in the log.
    warned: AtomicBool,
}

impl Proxies {
    pub fn new(trusted: Vec<Cidr>, header: ProxyHeader) -> Proxies {
        Proxies {
            trusted,
            header,
            warned: AtomicBool::new(false),
        }
    }

    fn trusts(&self, ip: IpAddr) -> bool {
        self.trusted.iter().any(|n| n.contains(ip))
    }

    /// Whom a connection from `peer` counts for, in the listener's cap per
    /// client: its client (`ClientKey`), or nobody for a trusted proxy,
    /// whose connections are many clients'.
    pub fn connection_client(&self, peer: IpAddr) -> Option<IpAddr> {
        let peer = peer.to_canonical();
        (!self.trusts(peer)).then(|| ClientAddr(peer).key().0)
    }

    /// The client of a request from `peer` with `headers`.
    pub fn client_of(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let peer = peer.to_canonical();
        if !self.trusts(peer) {
            self.warn_if_proxied(peer, headers);
            return peer;
        }
        let hops = match self.header {
            ProxyHeader::XForwardedFor => x_forwarded_for(headers),
            ProxyHeader::Forwarded => forwarded(headers),
        };
        let mut client = peer;
        for hop in hops.iter().rev().take(HOPS_MAX) {
            // A hop that is no address ("unknown", a hidden name): the
            // trusted hop that wrote it is the nearest client known.
            let Some(ip) = hop else { return client };
            client = ip.to_canonical();
            if !self.trusts(client) {
                return client;
            }
        }
        client
    }

    /// A same-host or LAN peer sending a proxy header is most likely the
    /// operator's proxy, not named with `--trusted-proxy`: every client
    /// behind it then counts as one.
    fn warn_if_proxied(&self, peer: IpAddr, headers: &HeaderMap) {
        let local = match peer {
            IpAddr::V4(a) => a.is_loopback() || a.is_private(),
            IpAddr::V6(a) => a.is_loopback() || a.is_unique_local(),
        };
        let proxied = headers.contains_key("x-forwarded-for") || headers.contains_key("forwarded");
        if local && proxied && !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "requests from {peer} carry a proxy header, but {peer} is not a trusted proxy \
                 (--trusted-proxy): every client behind it counts as one, and shares one \
                 client's limits"
            );
        }
    }
}

/// The values of every `name` header, in order, split at commas (outside
/// quotes).
fn list(headers: &HeaderMap, name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for value in headers.get_all(name) {
        let Ok(text) = value.to_str() else {
            // A value that is not text: no address can be read from it.
            out.push(String::new());
            continue;
        };
        let mut item = String::new();
        let mut quoted = false;
        for c in text.chars() {
            match c {
                '"' => {
                    quoted = !quoted;
                    item.push(c);
                }
                ',' if !quoted => out.push(std::mem::take(&mut item)),
                _ => item.push(c),
            }
        }
        out.push(item);
    }
    out
}

/// `X-Forwarded-For`'s hops, left (the first client) to right.
fn x_forwarded_for(headers: &HeaderMap) -> Vec<Option<IpAddr>> {
    list(headers, "x-forwarded-for")
        .iter()
        .map(|h| node(h.trim()))
        .collect()
}

/// `Forwarded`'s `for=` of each element, left to right (RFC 7239 §4).
fn forwarded(headers: &HeaderMap) -> Vec<Option<IpAddr>> {
    list(headers, "forwarded")
        .iter()
        .map(|element| {
            element.split(';').find_map(|pair| {
                let (k, v) = pair.trim().split_once('=')?;
                k.trim().eq_ignore_ascii_case("for").then(|| {
                    let v = v.trim();
                    let v = v
                        .strip_prefix('"')
                        .and_then(|v| v.strip_suffix('"'))
                        .unwrap_or(v);
                    node(v)
                })?
            })
        })
        .collect()
}

/// A hop's address: `192.0.2.7`, `192.0.2.7:4711`, `2001:db8::1`,
/// `[2001:db8::1]`, `[2001:db8::1]:4711`; anything else is none.
fn node(text: &str) -> Option<IpAddr> {
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Some(rest) = text.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        if !(after.is_empty() || after.strip_prefix(':').is_some_and(is_port)) {
            return None;
        }
        return inside.parse::<std::net::Ipv6Addr>().ok().map(IpAddr::V6);
    }
    let (addr, port) = text.rsplit_once(':')?;
    is_port(port)
        .then(|| addr.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4))
        .flatten()
}

fn is_port(p: &str) -> bool {
    !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit())
}

/// The layer: the request's `ClientAddr`, and its span.
pub async fn resolve(
    State(proxies): State<Arc<Proxies>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    mut req: Request,
    next: Next,
) -> Response {
    let client = ClientAddr(proxies.client_of(peer.ip(), req.headers()));
    req.extensions_mut().insert(client);
    let span = tracing::info_span!("request", client = %client.0);
    next.run(req).instrument(span).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    fn proxies(nets: &[&str], header: ProxyHeader) -> Proxies {
        Proxies::new(nets.iter().map(|n| n.parse().unwrap()).collect(), header)
    }

    #[test]
    fn a_client_is_an_ipv4_address_or_an_ipv6_64() {
        let key = |s: &str| ClientAddr(ip(s)).key().to_string();
        assert_eq!(key("192.0.2.7"), "192.0.2.7");
        assert_eq!(key("::ffff:192.0.2.7"), "192.0.2.7", "IPv4-mapped");
        assert_eq!(key("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
        assert_eq!(
            ClientAddr(ip("2001:db8:1:2::1")).key(),
            ClientAddr(ip("2001:db8:1:2:ffff:ffff:ffff:ffff")).key()
        );
        assert_ne!(
            ClientAddr(ip("2001:db8:1:2::1")).key(),
            ClientAddr(ip("2001:db8:1:3::1")).key()
        );
    }

    #[test]
    fn networks_are_read_and_matched() {
        let n: Cidr = "10.0.0.0/8".parse().unwrap();
        assert!(n.contains(ip("10.200.1.1")) && !n.contains(ip("11.0.0.1")));
        assert!(n.contains(ip("::ffff:10.0.0.1")), "IPv4-mapped is IPv4");
        let one: Cidr = "127.0.0.1".parse().unwrap();
        assert!(one.contains(ip("127.0.0.1")) && !one.contains(ip("127.0.0.2")));
        let v6: Cidr = "fd00::/8".parse().unwrap();
        assert!(v6.contains(ip("fd12::1")) && !v6.contains(ip("fe80::1")));
        let all: Cidr = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains(ip("203.0.113.9")) && !all.contains(ip("::1")));
        for bad in [
            "",
            "10.0.0.0/33",
            "::/129",
            "example.net",
            "10.0.0.0/x",
            "10/8",
        ] {
            assert!(bad.parse::<Cidr>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_connection_counts_for_its_client_and_a_proxys_for_nobody() {
        let p = proxies(&["10.0.0.0/8"], ProxyHeader::XForwardedFor);
        assert_eq!(p.connection_client(ip("192.0.2.7")), Some(ip("192.0.2.7")));
        assert_eq!(
            p.connection_client(ip("::ffff:192.0.2.7")),
            Some(ip("192.0.2.7"))
        );
        assert_eq!(
            p.connection_client(ip("2001:db8:1:2:aaaa::1")),
            p.connection_client(ip("2001:db8:1:2:bbbb::2")),
            "one /64, one client"
        );
        assert_eq!(p.connection_client(ip("10.1.2.3")), None);
    }

    #[test]
    fn a_peer_not_trusted_is_the_client_whatever_it_says() {
        let p = proxies(&["10.0.0.1"], ProxyHeader::XForwardedFor);
        let forged = headers(&[
            ("x-forwarded-for", "198.51.100.1"),
            ("forwarded", "for=1.2.3.4"),
        ]);
        assert_eq!(p.client_of(ip("203.0.113.9"), &forged), ip("203.0.113.9"));
        assert_eq!(
            proxies(&[], ProxyHeader::XForwardedFor).client_of(ip("127.0.0.1"), &forged),
            ip("127.0.0.1")
        );
    }

    #[test]
    fn through_trusted_proxies_the_right_most_untrusted_hop_is_the_client() {
        let p = proxies(&["127.0.0.1", "10.0.0.0/8"], ProxyHeader::XForwardedFor);
        let from = |xff: &[&str]| {
            let pairs: Vec<(&str, &str)> = xff.iter().map(|v| ("x-forwarded-for", *v)).collect();
            p.client_of(ip("127.0.0.1"), &headers(&pairs))
        };
        assert_eq!(from(&["198.51.100.7"]), ip("198.51.100.7"));
        // The client's own forged entries are left of what the proxy saw.
        assert_eq!(
            from(&["1.1.1.1, 2.2.2.2, 198.51.100.7"]),
            ip("198.51.100.7")
        );
        // Past a chain of trusted proxies, on several header lines.
        assert_eq!(
            from(&["1.1.1.1, 198.51.100.7", "10.1.2.3"]),
            ip("198.51.100.7")
        );
        // With ports and brackets.
        assert_eq!(from(&["198.51.100.7:4711"]), ip("198.51.100.7"));
        assert_eq!(from(&["[2001:db8::7]:4711"]), ip("2001:db8::7"));
        assert_eq!(from(&["2001:db8::7"]), ip("2001:db8::7"));
        assert_eq!(from(&["::ffff:198.51.100.7"]), ip("198.51.100.7"));
        // No header: the proxy itself. Every hop trusted: the left-most.
        assert_eq!(from(&[]), ip("127.0.0.1"));
        assert_eq!(from(&["10.9.9.9, 10.1.1.1"]), ip("10.9.9.9"));
        // A hop that is no address stops the walk at the proxy that wrote it.
        assert_eq!(from(&["198.51.100.7, garbage"]), ip("127.0.0.1"));
        assert_eq!(from(&["garbage, 10.1.1.1"]), ip("10.1.1.1"));
        // The header the proxy does not write is not read.
        let other = headers(&[("forwarded", "for=198.51.100.7")]);
        assert_eq!(p.client_of(ip("127.0.0.1"), &other), ip("127.0.0.1"));
    }

    #[test]
    fn forwarded_is_read_when_the_proxy_writes_it() {
        let p = proxies(&["127.0.0.1"], ProxyHeader::Forwarded);
        let from = |v: &str| p.client_of(ip("127.0.0.1"), &headers(&[("forwarded", v)]));
        assert_eq!(from("for=198.51.100.7"), ip("198.51.100.7"));
        assert_eq!(
            from(r#"for=1.1.1.1;proto=https, For="[2001:db8:cafe::17]:4711";by=127.0.0.1"#),
            ip("2001:db8:cafe::17")
        );
        assert_eq!(from("proto=https;for=198.51.100.7:80"), ip("198.51.100.7"));
        assert_eq!(from("for=unknown"), ip("127.0.0.1"));
        assert_eq!(from("for=_hidden, for=198.51.100.7"), ip("198.51.100.7"));
        // X-Forwarded-For, written by the client, is not read.
        let xff = headers(&[("x-forwarded-for", "198.51.100.7")]);
        assert_eq!(p.client_of(ip("127.0.0.1"), &xff), ip("127.0.0.1"));
    }
}
