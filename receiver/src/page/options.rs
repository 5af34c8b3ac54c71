//! The page's settings (`PageOptions`), and the origins WebAuthn would
//! refuse: plain HTTP anywhere but `localhost`, an origin off the rp id.
//!
//! This module owns those settings. It must not act on them.

use crate::invalid::Invalid;

/// The page's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageOptions {
    /// Where people open the page: `https://phone.example.net`, or
    /// `http://localhost:PORT` (WebAuthn allows plain HTTP only there).
    pub origin: String,
    /// The name a passkey prompt shows.
    pub rp_name: String,
    /// Anyone reaching the page may make an account (by default only the
    /// first one may; later ones need an invite from a signed-in account).
    pub open_registration: bool,
    /// Serve the page's files from this folder instead of the built-in copy.
    pub page_dir: Option<std::path::PathBuf>,
    /// Sign-ins and registrations one client (an address, an IPv6 /64) may
    /// have under way at once (each lasts at most five minutes).
    pub ceremonies_per_client: usize,
    /// Push endpoints and notification URLs may be at private addresses
    /// (loopback, the LAN: a self-hosted ntfy), and plain http to them; by
    /// default only https to public addresses.
    pub allow_private_notify: bool,
}

impl PageOptions {
    pub fn new(origin: impl Into<String>) -> PageOptions {
        PageOptions {
            origin: origin.into(),
            rp_name: "sessionpipe".into(),
            open_registration: false,
            page_dir: None,
            ceremonies_per_client: crate::accounts::CEREMONIES_PER_CLIENT,
            allow_private_notify: false,
        }
    }

    /// The origin parsed, and refused where WebAuthn would refuse it: plain
    /// HTTP anywhere but `localhost`, and an rp id the origin is not on.
    pub fn check(&self, rp_id: &str) -> Result<url::Url, Invalid> {
        if self.ceremonies_per_client == 0 {
            return Err("ceremonies_per_client must be at least 1".into());
        }
        let url = url::Url::parse(&self.origin)
            .map_err(|_| Invalid(format!("origin: {:?} is not a URL", self.origin)))?;
        let host = url.host_str().unwrap_or("");
        match url.scheme() {
            "https" => {}
            "http" if host == "localhost" => {}
            _ => {
                return Err(Invalid(format!(
                    "origin: {} is not https (passkeys need a secure context: serve it over \
                     https, with --tls-cert/--tls-key or behind an HTTPS proxy, or use \
                     http://localhost)",
                    self.origin
                )));
            }
        }
        if url.path() != "/" || url.query().is_some() {
            return Err(Invalid("origin: scheme, host and port only".into()));
        }
        if !(host == rp_id || host.ends_with(&format!(".{rp_id}"))) {
            return Err(Invalid(format!(
                "origin: {host} is not on the rp id {rp_id} (or one of its subdomains)"
            )));
        }
        Ok(url)
    }

    /// Whether the page is served where only its own machine reaches it
    /// (its cookie is then not `Secure`: plain http on localhost).
    pub fn is_local(&self) -> bool {
        self.origin.starts_with("http://localhost")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_need_a_secure_context_on_the_rp_id() {
        let ok = |o: &str, rp: &str| PageOptions::new(o).check(rp).is_ok();
        assert!(ok("http://localhost:8080", "localhost"));
        assert!(ok("https://phone.example.net", "example.net"));
        assert!(ok("https://example.net", "example.net"));
        assert!(
            !ok("http://phone.example.net", "example.net"),
            "plain http off localhost"
        );
        assert!(!ok("https://evil.net", "example.net"));
        assert!(!ok("https://phone.example.net/app", "example.net"));
        assert!(!ok("http://127.0.0.1:8080", "127.0.0.1"));
    }
}
