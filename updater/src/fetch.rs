//! Downloads: the manifest and its signature (small, capped), and the
//! artifact, streamed to a 0600 temp file beside where it goes while its size
//! and SHA-256 are checked against the signed manifest.
//!
//! Only https URLs are fetched, redirects included. Plain http is allowed
//! only to this machine (127.0.0.0/8, ::1, `localhost`), and only when the
//! manifest's own URL is such a one: a test or a developer's loopback update
//! server. The signature is what protects an update; refusing http elsewhere
//! keeps a network from even seeing or stalling what is asked.
//!
//! Owns the network and the temp file. Must not touch anything installed: a
//! download that fails any check is deleted and nothing else is written.

use crate::manifest::{Artifact, Sha256};
use reqwest::Url;
use reqwest::blocking::Client;
use reqwest::redirect;
use sha2::Digest;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The largest manifest read: a few platforms' lines are under 2 KiB.
pub const MANIFEST_LIMIT: u64 = 64 * 1024;
/// The largest signature file read (88 characters and a newline).
pub const SIGNATURE_LIMIT: u64 = 1024;

#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("{url} is not a URL: {source}")]
    BadUrl {
        url: String,
        #[source]
        source: url::ParseError,
    },
    #[error("refused {url}: updates come over https (plain http only to this machine, in a test)")]
    Insecure { url: String },
    #[error("{url}: no answer within {after:?}")]
    Timeout { url: String, after: Duration },
    #[error("{url}: {source}")]
    Http {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("{url} answered HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("{url} is larger than the {limit} bytes expected")]
    TooLarge { url: String, limit: u64 },
    #[error("{url}: {got} bytes, the manifest says {expected}")]
    Size {
        url: String,
        expected: u64,
        got: u64,
    },
    #[error("{url}: sha256 {got}, the manifest says {expected}")]
    Digest {
        url: String,
        expected: Sha256,
        got: Sha256,
    },
    #[error("{url}: the download broke off: {source}")]
    Read {
        url: String,
        #[source]
        source: io::Error,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// Which URLs may be fetched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UrlPolicy {
    loopback_http: bool,
}

impl UrlPolicy {
    /// The policy a manifest URL sets, and the URL parsed: an http loopback
    /// manifest allows http loopback artifacts; anything else allows https only.
    pub fn for_manifest(url: &str) -> Result<(Url, UrlPolicy), FetchError> {
        let parsed = parse(url)?;
        let policy = UrlPolicy {
            loopback_http: parsed.scheme() == "http" && is_loopback(&parsed),
        };
        policy.check(&parsed)?;
        Ok((parsed, policy))
    }

    /// Whether `url` may be fetched.
    pub fn allows(&self, url: &Url) -> bool {
        match url.scheme() {
            "https" => true,
            "http" => self.loopback_http && is_loopback(url),
            _ => false,
        }
    }

    fn check(&self, url: &Url) -> Result<(), FetchError> {
        if self.allows(url) {
            Ok(())
        } else {
            Err(FetchError::Insecure {
                url: url.to_string(),
            })
        }
    }
}

fn parse(url: &str) -> Result<Url, FetchError> {
    Url::parse(url).map_err(|source| FetchError::BadUrl {
        url: url.to_string(),
        source,
    })
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

/// An HTTP client bound to a `UrlPolicy`, with two bounds: `stall`, the
/// longest wait for an answer or for the next bytes of one; `deadline`, the
/// longest a whole download may take.
pub struct Fetcher {
    client: Client,
    policy: UrlPolicy,
    stall: Duration,
    deadline: Duration,
}

impl Fetcher {
    pub fn new(
        policy: UrlPolicy,
        stall: Duration,
        deadline: Duration,
    ) -> Result<Fetcher, FetchError> {
        let mut builder = Client::builder()
            // The blocking client's timeout bounds the wait for the answer and
            // each read of its body, so a stalled server is given up on while
            // a slow but moving download goes on (`deadline` bounds that).
            .timeout(stall)
            .connect_timeout(stall)
            .user_agent(concat!("sessionpipe-updater/", env!("CARGO_PKG_VERSION")))
            // GitHub's release downloads redirect (to its storage): each hop
            // must pass the same policy.
            .redirect(redirect::Policy::custom(move |attempt| {
                if attempt.previous().len() >= 5 {
                    attempt.error(TooManyRedirects)
                } else if policy.allows(attempt.url()) {
                    attempt.follow()
                } else {
                    attempt.error(InsecureRedirect)
                }
            }));
        if policy.loopback_http {
            // A proxy from the environment must not carry loopback requests away.
            builder = builder.no_proxy();
        }
        let client = builder.build().map_err(|source| FetchError::Http {
            url: String::new(),
            source,
        })?;
        Ok(Fetcher {
            client,
            policy,
            stall,
            deadline,
        })
    }

    /// A small file whole (the manifest, its signature), at most `limit` bytes.
    pub fn get_small(&self, url: &Url, limit: u64) -> Result<Vec<u8>, FetchError> {
        let mut response = self.get(url)?;
        let mut body = Vec::new();
        let started = Instant::now();
        self.stream(url, &mut response, limit, started, |chunk| {
            body.extend_from_slice(chunk);
            Ok(())
        })?;
        Ok(body)
    }

    /// Downloads `artifact` to `dest` (whose directory must exist): streamed to
    /// a 0600 temp file in that directory, its size and sha256 checked, then
    /// renamed to `dest`. On any failure the temp file is gone and `dest` is
    /// not written.
    pub fn download(&self, artifact: &Artifact, dest: &Path) -> Result<(), FetchError> {
        let url = parse(&artifact.url)?;
        let dir = dest.parent().unwrap_or(Path::new("."));
        let io_error = |source| FetchError::Io {
            path: dir.to_path_buf(),
            source,
        };
        // tempfile's files are created 0600 and removed when dropped.
        let mut temp = tempfile::Builder::new()
            .prefix(".download-")
            .tempfile_in(dir)
            .map_err(io_error)?;
        let started = Instant::now();
        let mut response = self.get(&url)?;
        if let Some(length) = response.content_length()
            && length != artifact.size
        {
            return Err(FetchError::Size {
                url: url.to_string(),
                expected: artifact.size,
                got: length,
            });
        }
        let mut hasher = sha2::Sha256::new();
        let got = self.stream(&url, &mut response, artifact.size, started, |chunk| {
            hasher.update(chunk);
            temp.write_all(chunk)
        })?;
        if got != artifact.size {
            return Err(FetchError::Size {
                url: url.to_string(),
                expected: artifact.size,
                got,
            });
        }
        let digest = Sha256(hasher.finalize().into());
        if digest != artifact.sha256 {
            return Err(FetchError::Digest {
                url: url.to_string(),
                expected: artifact.sha256,
                got: digest,
            });
        }
        temp.as_file().sync_all().map_err(io_error)?;
        temp.persist(dest).map_err(|e| FetchError::Io {
            path: dest.to_path_buf(),
            source: e.error,
        })?;
        Ok(())
    }

    fn get(&self, url: &Url) -> Result<reqwest::blocking::Response, FetchError> {
        self.policy.check(url)?;
        let response = self
            .client
            .get(url.clone())
            .send()
            .map_err(|source| self.http_error(url, source))?;
        if !response.status().is_success() {
            return Err(FetchError::Status {
                url: url.to_string(),
                status: response.status().as_u16(),
            });
        }
        Ok(response)
    }

    /// Reads `response` to its end through `sink`, refusing more than `limit`
    /// bytes and a download that outlasts the deadline; returns the count.
    fn stream(
        &self,
        url: &Url,
        response: &mut reqwest::blocking::Response,
        limit: u64,
        started: Instant,
        mut sink: impl FnMut(&[u8]) -> io::Result<()>,
    ) -> Result<u64, FetchError> {
        let mut buf = vec![0u8; 64 * 1024];
        let mut total = 0u64;
        loop {
            if started.elapsed() > self.deadline {
                return Err(FetchError::Timeout {
                    url: url.to_string(),
                    after: self.deadline,
                });
            }
            let n = match response.read(&mut buf) {
                Ok(0) => return Ok(total),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if is_timeout(&e) => {
                    return Err(FetchError::Timeout {
                        url: url.to_string(),
                        after: self.stall,
                    });
                }
                Err(source) => {
                    return Err(FetchError::Read {
                        url: url.to_string(),
                        source,
                    });
                }
            };
            total += n as u64;
            if total > limit {
                return Err(FetchError::TooLarge {
                    url: url.to_string(),
                    limit,
                });
            }
            sink(&buf[..n]).map_err(|source| FetchError::Io {
                path: PathBuf::from(url.path()),
                source,
            })?;
        }
    }

    fn http_error(&self, url: &Url, source: reqwest::Error) -> FetchError {
        let url = url.to_string();
        if source.is_timeout() {
            FetchError::Timeout {
                url,
                after: self.stall,
            }
        } else {
            FetchError::Http { url, source }
        }
    }
}

/// A body read that timed out: the blocking client says so in the io error's
/// kind or in the reqwest error inside it.
fn is_timeout(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::TimedOut
        || e.get_ref()
            .and_then(|inner| inner.downcast_ref::<reqwest::Error>())
            .is_some_and(reqwest::Error::is_timeout)
}

#[derive(Debug, thiserror::Error)]
#[error("a redirect to a URL the update policy refuses (plain http off this machine)")]
struct InsecureRedirect;

#[derive(Debug, thiserror::Error)]
#[error("more than 5 redirects")]
struct TooManyRedirects;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_anywhere_http_only_to_loopback_and_only_from_a_loopback_manifest() {
        let (_, release) = UrlPolicy::for_manifest("https://example.org/latest.json").unwrap();
        let url = |s: &str| Url::parse(s).unwrap();
        assert!(release.allows(&url("https://objects.example.net/a.msi")));
        assert!(!release.allows(&url("http://127.0.0.1:8080/a.msi")));
        assert!(!release.allows(&url("ftp://example.org/a.msi")));

        let (_, dev) = UrlPolicy::for_manifest("http://127.0.0.1:8080/latest.json").unwrap();
        assert!(dev.allows(&url("http://127.0.0.1:9/a.msi")));
        assert!(dev.allows(&url("http://localhost:9/a.msi")));
        assert!(dev.allows(&url("http://[::1]:9/a.msi")));
        assert!(!dev.allows(&url("http://example.org/a.msi")));
        assert!(!dev.allows(&url("http://127.0.0.1.example.org/a.msi")));

        for refused in [
            "http://example.org/latest.json",
            "http://10.0.0.1/latest.json",
            "file:///etc/passwd",
        ] {
            assert!(
                matches!(
                    UrlPolicy::for_manifest(refused),
                    Err(FetchError::Insecure { .. })
                ),
                "{refused}"
            );
        }
        assert!(matches!(
            UrlPolicy::for_manifest("not a url"),
            Err(FetchError::BadUrl { .. })
        ));
    }
}
