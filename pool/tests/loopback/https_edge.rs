//! A stand-in for the API's edge on loopback, for the proxy's tests and its
//! benchmark (`examples/bench_proxy.rs` takes this file in): HTTPS with a
//! certificate of its own, offering HTTP/2 and HTTP/1.1 in the handshake as
//! the API does, each connection served in whichever its client picked, and
//! the connections it accepted counted.
//! It is a test's peer and nothing more: no deadlines, no connection cap.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio_rustls::rustls;

pub struct Edge {
    /// `https://127.0.0.1:<port>`.
    pub base: String,
    /// What a client must trust to reach it.
    pub cert: reqwest::Certificate,
    accepted: Arc<AtomicUsize>,
}

impl Edge {
    /// The connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::Relaxed)
    }
}

/// `app` served over HTTPS on a loopback port, until the runtime ends.
pub async fn serve(app: axum::Router) -> Edge {
    let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let key = rustls::pki_types::PrivatePkcs8KeyDer::from(made.signing_key.serialize_der());
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![made.cert.der().clone()], key.into())
        .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("https://{}", l.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&accepted);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = l.accept().await else {
                continue;
            };
            counted.fetch_add(1, Ordering::Relaxed);
            // As every HTTP edge serves (BENCHMARKS.md, the account pool).
            let _ = stream.set_nodelay(true);
            let (acceptor, app) = (acceptor.clone(), app.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(stream).await else {
                    return;
                };
                let service = hyper_util::service::TowerToHyperService::new(app);
                let _ = hyper_util::server::conn::auto::Builder::new(
                    hyper_util::rt::TokioExecutor::new(),
                )
                .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                .await;
            });
        }
    });
    let cert = reqwest::Certificate::from_pem(made.cert.pem().as_bytes()).unwrap();
    Edge {
        base,
        cert,
        accepted,
    }
}
