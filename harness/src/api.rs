//! A harness's own local server, for control's `api` rung (CONTROL.md §6
//! `prompt` in `api` mode and `cancel`; ADAPTERS.md, OpenCode's row): the HTTP
//! calls that ask the process holding a live session whether it holds it, hand
//! it a message as its next turn, and stop its current turn.
//!
//! Owns only the harness's words: the calls' methods, paths and bodies,
//! and where the server is, from what the adapter remembered of the session
//! (its memo). It opens no connection: the daemon's control makes the calls,
//! bounds them and acks. A server is only ever on this machine's loopback; an
//! adapter never names another host.

/// What the adapter remembered of the session (its memo; the adapter's own
/// type, spelt out here so this module imports nothing of the kit's).
type Memo = serde_json::Map<String, serde_json::Value>;

/// An HTTP method the calls use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
}

/// One call to a harness's local server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    pub method: Method,
    /// An absolute `http://` URL on loopback.
    pub url: String,
    /// A JSON body, sent as `application/json`.
    pub body: Option<serde_json::Value>,
}

/// A harness whose live sessions take messages and cancels through a server
/// of its own.
pub trait SessionApi: Sync {
    /// The call that asks the server in the memo whether it holds the session
    /// `id`; `None` when no server is known to hold it.
    fn check(&self, memo: &Memo, id: &str) -> Option<Call>;
    /// Whether the check's answer (its status and body) names the session.
    fn holds(&self, status: u16, body: &[u8], id: &str) -> bool;
    /// The call that hands `framed` (the in-place frame) to the session as
    /// its next turn; answered at once, the turn runs after it.
    fn prompt(&self, memo: &Memo, id: &str, framed: &str) -> Option<Call>;
    /// The call that stops the session's current turn.
    fn cancel(&self, memo: &Memo, id: &str) -> Option<Call>;
}

/// Whether `url` is an `http://` URL on this machine's loopback, with no
/// credentials in it; the form kept is the one given, without its path.
pub fn loopback_origin(url: &str) -> Option<String> {
    let rest = url.strip_prefix("http://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    if authority.contains('@') {
        return None;
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => (h, Some(p)),
        _ => (authority, None),
    };
    if !matches!(host, "127.0.0.1" | "localhost" | "[::1]") {
        return None;
    }
    let port: u16 = port.map_or(Some(80), |p| p.parse().ok())?;
    if port == 0 {
        return None;
    }
    Some(format!("http://{host}:{port}"))
}

/// `s` as one component of a URL's query: everything but the unreserved
/// characters (RFC 3986) percent-encoded as UTF-8.
pub fn query_component(s: &str) -> String {
    percent_encoded(s, b"-._~")
}

/// `s` with every byte but ASCII letters, digits and those in `keep`
/// percent-encoded (for a URL's parts; shared with the core's UI link).
pub fn percent_encoded(s: &str, keep: &[u8]) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || keep.contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_http_is_a_server() {
        assert_eq!(
            loopback_origin("http://127.0.0.1:4801/").as_deref(),
            Some("http://127.0.0.1:4801")
        );
        assert_eq!(
            loopback_origin("http://localhost:4096").as_deref(),
            Some("http://localhost:4096")
        );
        assert_eq!(
            loopback_origin("http://[::1]:9/x?y").as_deref(),
            Some("http://[::1]:9")
        );
        for bad in [
            "https://127.0.0.1:1/",
            "http://example.com:4096/",
            "http://127.0.0.1.example.com/",
            "http://user:pw@127.0.0.1:4096/",
            "http://0.0.0.0:4096/",
            "http://127.0.0.1:0/",
            "http://127.0.0.1:99999/",
            "http://127.0.0.1:x/",
            "ftp://127.0.0.1/",
        ] {
            assert_eq!(loopback_origin(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_query_component_keeps_only_unreserved_characters() {
        assert_eq!(
            query_component("/home/me/my work/é&x=1"),
            "%2Fhome%2Fme%2Fmy%20work%2F%C3%A9%26x%3D1"
        );
        assert_eq!(query_component("a-b.c_d~e"), "a-b.c_d~e");
    }
}
