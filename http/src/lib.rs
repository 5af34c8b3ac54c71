//! `sessionpipe_http`: the sender's side of the HTTP binding (PROTOCOL-NOTES
//! §5) that delivery and control share: one client policy (15 s, no
//! redirect ever followed), discovery's document (`/.well-known/sessionpipe`,
//! once it lists protocol 1; sinks and control each read their own part of
//! it), and how a URL or a network error is shown (no userinfo, no query
//! value, no URL in an error's text).
//!
//! It decides nothing about batches, acks or retries (the core's sinks and
//! the control crate do), and keeps nothing.

use serde_json::Value;
use std::time::Duration;

/// How long any request of the binding may take.
pub const TIMEOUT: Duration = Duration::from_secs(15);

/// Why a receiver's discovery document could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    #[error("{0} is not a URL to discover")]
    BadUrl(String),
    #[error("{0}")]
    Network(String),
    #[error("{url} answered {status}")]
    Status { url: String, status: u16 },
    #[error("{url} is not JSON: {source}")]
    NotJson {
        url: String,
        source: serde_json::Error,
    },
    #[error("{0} does not list protocol 1")]
    NoProtocol1(String),
    #[error("no endpoints.events")]
    NoEventsEndpoint,
    #[error("its events endpoint {0} is not HTTPS")]
    NotHttps(String),
    /// The token goes only to the origin the person added.
    #[error(
        "its events endpoint {events} is on another origin than {added}: the sink's token goes only where you added it"
    )]
    OtherOrigin { events: String, added: String },
}

/// True when `events` has the origin (scheme, host, port) of `added`.
pub fn same_origin(added: &str, events: &str) -> bool {
    match (reqwest::Url::parse(added), reqwest::Url::parse(events)) {
        (Ok(a), Ok(e)) => a.origin() == e.origin(),
        _ => false,
    }
}

/// A URL as sessionpipe prints it anywhere (lists, errors, logs, the API): no
/// userinfo, every query value masked, no fragment. Text that does not parse
/// loses everything from its `?` and what sits between `//` and `@`.
pub fn shown_url(given: &str) -> String {
    let Ok(mut url) = reqwest::Url::parse(given) else {
        let cut = given.split(['?', '#']).next().unwrap_or("");
        let cut = match cut.split_once("://") {
            Some((scheme, rest)) => match rest.split_once('@') {
                Some((_, host)) if !rest[..rest.find('@').unwrap_or(0)].contains('/') => {
                    format!("{scheme}://{host}")
                }
                _ => cut.to_string(),
            },
            None => cut.to_string(),
        };
        let tail = if cut.len() < given.len() { "?…" } else { "" };
        return format!("{}{tail}", redact::secrets(&cut));
    };
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.set_fragment(None);
    if url.query().is_some() {
        let keys: Vec<String> = url.query_pairs().map(|(k, _)| k.into_owned()).collect();
        let mut q = url.query_pairs_mut();
        q.clear();
        for k in keys {
            q.append_pair(&k, "***");
        }
    }
    url.to_string()
}

/// The client of the binding's calls: bounded, never following a redirect.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("an HTTP client builds")
}

/// True when `url` names this machine (HTTP is allowed there only).
pub fn is_loopback(url: &reqwest::Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost"
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Reads `/.well-known/sessionpipe` at the receiver's origin: the origin's URL
/// and the document, once it is JSON that lists protocol 1 (sinks and control
/// read their own parts of it).
pub async fn well_known(url: &str) -> Result<(reqwest::Url, Value), DiscoveryError> {
    let bad = || DiscoveryError::BadUrl(shown_url(url));
    let base = reqwest::Url::parse(url).map_err(|_| bad())?;
    let well_known = base.join("/.well-known/sessionpipe").map_err(|_| bad())?;
    let shown = shown_url(well_known.as_str());
    let resp = client()
        .get(well_known)
        .send()
        .await
        .map_err(|e| DiscoveryError::Network(without_url(&e)))?;
    if !resp.status().is_success() {
        return Err(DiscoveryError::Status {
            url: shown,
            status: resp.status().as_u16(),
        });
    }
    let text = resp
        .text()
        .await
        .map_err(|e| DiscoveryError::Network(without_url(&e)))?;
    let doc: Value = serde_json::from_str(&text).map_err(|source| DiscoveryError::NotJson {
        url: shown.clone(),
        source,
    })?;
    let speaks = doc["protocol"]
        .as_array()
        .is_some_and(|p| p.iter().any(|v| v.as_u64() == Some(1)));
    if !speaks {
        return Err(DiscoveryError::NoProtocol1(shown));
    }
    Ok((base, doc))
}

/// reqwest puts the URL in its message (the URL may carry a path token); the
/// cause beneath it ("Connection refused") is what the person needs.
pub fn without_url(e: &reqwest::Error) -> String {
    let s = e.to_string();
    let mut text = match s.find(" for url (") {
        Some(i) => s[..i].to_string(),
        None => s,
    };
    let mut cause = std::error::Error::source(e);
    let mut deepest = None;
    while let Some(c) = cause {
        deepest = Some(c.to_string());
        cause = c.source();
    }
    if let Some(d) = deepest.filter(|d| !text.contains(d.as_str())) {
        text = format!("{text}: {}", redact::secrets(&d));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for (u, want) in [
            ("http://127.0.0.1:1/", true),
            ("http://localhost/", true),
            ("http://[::1]:8/", true),
            ("http://10.0.0.1/", false),
            ("http://example.org/", false),
        ] {
            assert_eq!(is_loopback(&reqwest::Url::parse(u).unwrap()), want, "{u}");
        }
    }
}
