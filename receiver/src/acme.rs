//! Layer 6, acme: HTTPS in one flag. For `--domain NAME` the receiver gets
//! its certificate over ACME (RFC 8555: Let's Encrypt by default, or the
//! directory the operator names) with the TLS-ALPN-01 challenge (RFC 8737),
//! answered on the one port it serves on, and renews it a third of its
//! life before it ends (`rustls-acme` runs the orders, the challenge's
//! certificate and the renewal timer).
//!
//! This module owns that: the ACME settings (`Acme`) and their checks, the
//! listener's TLS for them (a hello asking for `acme-tls/1` gets the
//! challenge's certificate and a handshake alone; every other hello the
//! certificate got), and where the account key and the certificate are kept:
//! a folder of the data folder, 0700, each file 0600, written whole (a new
//! file renamed over the old). The task it gives back says in the log what
//! it got and what failed (and is tried again, with a growing pause). It
//! must not log a key, and talks to nothing but the ACME directory.

use crate::invalid::Invalid;
use crate::tls;
use base64::Engine;
use rustls_acme::rustls;
use rustls_acme::{AccountCache, AcmeConfig, CertCache, EventOk};
use sessionpipe_listener::{Handshake, Tls};
use sha2::{Digest, Sha256};
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Let's Encrypt's production directory, the default.
pub const LETS_ENCRYPT: &str = "https://acme-v02.api.letsencrypt.org/directory";

/// Names one certificate may hold (Let's Encrypt allows 100).
const NAMES_MAX: usize = 100;

/// How the receiver gets its certificate over ACME.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Acme {
    /// The names the certificate is for (the first is the page's, when the
    /// origin is not given). Each must reach this receiver's port from the
    /// ACME server: its check connects there.
    pub domains: Vec<String>,
    /// The ACME directory URL (https).
    pub directory: String,
    /// Trust this CA (PEM) for the ACME directory's own HTTPS, instead of the
    /// built-in roots: a private ACME server's.
    pub ca: Option<PathBuf>,
    /// Contact addresses for the account (the CA's expiry and policy mail).
    pub emails: Vec<String>,
}

impl Acme {
    /// A certificate for `domains` from Let's Encrypt, no contact.
    pub fn new(domains: impl IntoIterator<Item = impl Into<String>>) -> Acme {
        Acme {
            domains: domains.into_iter().map(Into::into).collect(),
            directory: LETS_ENCRYPT.into(),
            ca: None,
            emails: Vec::new(),
        }
    }

    /// Why these settings cannot be used, if they cannot.
    pub(crate) fn check(&self) -> Result<(), Invalid> {
        if self.domains.is_empty() {
            return Err("acme: name at least one domain".into());
        }
        if self.domains.len() > NAMES_MAX {
            return Err(Invalid(format!(
                "acme: at most {NAMES_MAX} domains in one certificate"
            )));
        }
        for d in &self.domains {
            check_name(d)?;
        }
        let url = url::Url::parse(&self.directory)
            .map_err(|_| Invalid(format!("acme directory: {:?} is not a URL", self.directory)))?;
        if url.scheme() != "https" {
            return Err(Invalid(format!(
                "acme directory: {} is not https",
                self.directory
            )));
        }
        for e in &self.emails {
            let ok = e.split_once('@').is_some_and(|(user, host)| {
                !user.is_empty() && host.contains('.') && !host.ends_with('.')
            }) && !e
                .chars()
                .any(|c| c.is_whitespace() || c.is_control() || c == ',');
            if !ok {
                return Err(Invalid(format!("acme email: {e:?} is not an address")));
            }
        }
        if let Some(ca) = &self.ca {
            ca_roots(ca)?;
        }
        Ok(())
    }

    /// The listener's TLS for these settings, and the task that gets and
    /// renews the certificate (run it for as long as the receiver serves),
    /// keeping the account and the certificate in `dir`. Until a certificate
    /// is got, handshakes other than the challenge's fail.
    pub(crate) fn start(
        &self,
        dir: &Path,
    ) -> Result<(Tls, impl Future<Output = ()> + Send + 'static), Invalid> {
        self.check()?;
        private_dir(dir).map_err(|e| Invalid(format!("acme folder {}: {e}", dir.display())))?;
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut config = AcmeConfig::new_with_provider(&self.domains, Arc::clone(&provider))
            .directory(&self.directory)
            .contact(self.emails.iter().map(|e| format!("mailto:{e}")));
        if let Some(ca) = &self.ca {
            let client = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
                .with_safe_default_protocol_versions()
                .map_err(|e| Invalid(format!("acme: {e}")))?
                .with_root_certificates(ca_roots(ca)?)
                .with_no_client_auth();
            config = config.client_tls_config(Arc::new(client));
        }
        let mut state = config
            .cache(Folder {
                dir: dir.to_path_buf(),
            })
            .state();
        let challenge = state.challenge_rustls_config_with_provider(Arc::clone(&provider));
        let serve = tls::server_config(
            rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| Invalid(format!("tls: {e}")))?
                .with_no_client_auth()
                .with_cert_resolver(state.resolver()),
        );
        let tls = Tls::Choose(Arc::new(move |hello: &rustls::server::ClientHello<'_>| {
            if rustls_acme::is_tls_alpn_challenge(hello) {
                Handshake::Only(Arc::clone(&challenge))
            } else {
                Handshake::Serve(Arc::clone(&serve))
            }
        }));
        let names = self.domains.join(", ");
        let directory = self.directory.clone();
        let renew = async move {
            use futures_util::StreamExt;
            tracing::info!("acme: a certificate for {names} from {directory}");
            while let Some(event) = state.next().await {
                match event {
                    Ok(EventOk::DeployedNewCert) => {
                        tracing::info!("acme: a new certificate for {names} is served")
                    }
                    Ok(EventOk::DeployedCachedCert) => {
                        tracing::info!("acme: the certificate kept for {names} is served")
                    }
                    Ok(EventOk::CertCacheStore | EventOk::AccountCacheStore) => {}
                    Err(e) => tracing::warn!("acme: {e} (tried again after a pause)"),
                }
            }
        };
        Ok((tls, renew))
    }
}

/// A name a certificate may be got for with TLS-ALPN-01: a DNS name, no
/// wildcard (the challenge cannot prove one), no address.
fn check_name(name: &str) -> Result<(), Invalid> {
    let bad = |why: &str| Err(Invalid(format!("domain {name:?}: {why}")));
    if name.parse::<std::net::IpAddr>().is_ok() {
        return bad("an address, not a name");
    }
    if name.starts_with("*.") {
        return bad("a wildcard cannot be got with TLS-ALPN-01");
    }
    if name.is_empty() || name.len() > 253 || name.ends_with('.') {
        return bad("not a host name");
    }
    for label in name.split('.') {
        let ok = (1..=63).contains(&label.len())
            && label
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-');
        if !ok {
            return bad("not a host name (lower case letters, digits and '-' between dots)");
        }
    }
    Ok(())
}

/// The certificates of a PEM file, as the roots trusted for the ACME
/// directory.
fn ca_roots(file: &Path) -> Result<rustls::RootCertStore, Invalid> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let bad = |e: &dyn std::fmt::Display| Invalid(format!("acme ca {}: {e}", file.display()));
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(file)
        .and_then(|i| i.collect())
        .map_err(|e| bad(&e))?;
    let mut roots = rustls::RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(bad(&"no certificate in it"));
    }
    Ok(roots)
}

/// Makes `dir` (and its parents), and makes it 0700 (where files have mode
/// bits: on Windows the folder keeps its parent's ACL).
fn private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Writes `bytes` to `path` whole and private: a new 0600 file beside it,
/// synced, renamed over it.
fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    private_dir(dir)?;
    let new = path.with_extension("new");
    let _ = std::fs::remove_file(&new);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut f = options.open(&new)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&new, path)
}

/// The folder the account key and the certificate are kept in. Each file is
/// named by a hash of what it is for (the names, or the contacts, and the
/// directory), so another directory or other names start afresh.
struct Folder {
    dir: PathBuf,
}

impl Folder {
    /// `kind` is `account` (its key, PKCS #8) or `certificate` (its key and
    /// chain, PEM).
    fn file(&self, kind: &str, parts: &[String], directory: &str) -> PathBuf {
        let mut h = Sha256::new();
        for p in parts {
            h.update(p.as_bytes());
            h.update([0]);
        }
        h.update(directory.as_bytes());
        let id = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&h.finalize()[..12]);
        self.dir.join(format!("{kind}-{id}"))
    }

    async fn read(path: PathBuf) -> io::Result<Option<Vec<u8>>> {
        tokio::task::spawn_blocking(move || match std::fs::read(&path) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        })
        .await
        .map_err(io::Error::other)?
    }

    async fn write(path: PathBuf, bytes: &[u8]) -> io::Result<()> {
        let bytes = bytes.to_vec();
        tokio::task::spawn_blocking(move || write_private(&path, &bytes))
            .await
            .map_err(io::Error::other)?
    }
}

#[async_trait::async_trait]
impl CertCache for Folder {
    type EC = io::Error;

    async fn load_cert(&self, domains: &[String], directory: &str) -> io::Result<Option<Vec<u8>>> {
        Folder::read(self.file("certificate", domains, directory)).await
    }

    async fn store_cert(&self, domains: &[String], directory: &str, cert: &[u8]) -> io::Result<()> {
        Folder::write(self.file("certificate", domains, directory), cert).await
    }
}

#[async_trait::async_trait]
impl AccountCache for Folder {
    type EA = io::Error;

    async fn load_account(
        &self,
        contact: &[String],
        directory: &str,
    ) -> io::Result<Option<Vec<u8>>> {
        Folder::read(self.file("account", contact, directory)).await
    }

    async fn store_account(
        &self,
        contact: &[String],
        directory: &str,
        account: &[u8],
    ) -> io::Result<()> {
        Folder::write(self.file("account", contact, directory), account).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_addresses_and_emails_are_checked() {
        for good in [
            "receiver.example.net",
            "a-b.example",
            "xn--bcher-kva.example",
            "localhost",
        ] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "*.example.net",
            "127.0.0.1",
            "::1",
            "Example.net",
            "a..b",
            "-a.example",
            "a_b.example",
            "example.net.",
            "a b.example",
        ] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
        let mut a = Acme::new(["receiver.example.net"]);
        assert!(a.check().is_ok());
        a.emails = vec!["ops@example.net".into()];
        assert!(a.check().is_ok());
        for bad in [
            "ops",
            "ops@localhost",
            "@example.net",
            "a b@example.net",
            "a@b.c,d@e.f",
        ] {
            a.emails = vec![bad.into()];
            assert!(a.check().is_err(), "{bad}");
        }
        a.emails.clear();
        a.directory = "http://127.0.0.1:14000/dir".into();
        assert!(a.check().is_err(), "a plain http directory");
        assert!(Acme::new(Vec::<String>::new()).check().is_err());
    }

    #[cfg(unix)]
    #[test]
    fn what_is_kept_is_private_and_whole() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data/acme");
        let f = Folder { dir: dir.clone() };
        let path = f.file("account", &["mailto:ops@example.net".into()], LETS_ENCRYPT);
        write_private(&path, b"first").unwrap();
        write_private(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "no file left beside it"
        );
        assert_ne!(
            path,
            f.file(
                "account",
                &["mailto:ops@example.net".into()],
                "https://other/dir"
            ),
            "another directory, another account"
        );
    }
}
