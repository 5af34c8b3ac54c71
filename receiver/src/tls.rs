//! Layer 6, tls: the listener's TLS from PEM files (`--tls-cert` /
//! `--tls-key`), and the settings every HTTPS listener of the receiver has,
//! whatever its certificate's source (`acme` gets one for `--domain`).
//!
//! This module owns the TLS settings (TLS 1.2 and 1.3, HTTP/1.1 only) and
//! reading the files. It must not log a key.

use crate::invalid::Invalid;
use sessionpipe_listener::Tls;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_rustls::rustls;

/// A certificate chain and its private key, PEM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl TlsFiles {
    /// The listener's TLS with these files' certificate.
    pub(crate) fn tls(&self) -> Result<Tls, Invalid> {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&self.cert)
            .and_then(|i| i.collect())
            .map_err(|e| Invalid(format!("tls cert {}: {e}", self.cert.display())))?;
        if certs.is_empty() {
            return Err(Invalid(format!(
                "tls cert {}: no certificate in it",
                self.cert.display()
            )));
        }
        let key = PrivateKeyDer::from_pem_file(&self.key)
            .map_err(|e| Invalid(format!("tls key {}: {e}", self.key.display())))?;
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| Invalid(format!("tls: {e}")))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| Invalid(format!("tls: the key does not fit the certificate: {e}")))?;
        Ok(Tls::Config(server_config(config)))
    }
}

/// `config` as every HTTPS listener of the receiver serves: HTTP/1.1 only.
pub(crate) fn server_config(mut config: rustls::ServerConfig) -> Arc<rustls::ServerConfig> {
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}
