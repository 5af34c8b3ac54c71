//! HTTPS in one flag, for real: the receiver binary started with `--domain`
//! against pebble (Let's Encrypt's test CA) and its DNS on loopback gets a
//! certificate with TLS-ALPN-01 answered on the one port it serves on,
//! serves discovery and the page over HTTPS to a client trusting pebble's
//! root alone, keeps its ACME account key and certificate private in the
//! data folder, renews the certificate before it ends (pebble made to issue
//! 30-second ones), and after a restart serves the one it kept without a
//! new order. Skipped, saying so, where pebble is not installed.

use crate::common::TOKEN;
use sessionpipe_testkit::pebble;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The test name: pebble's DNS answers 127.0.0.1 for every name.
const NAME: &str = "receiver.sessionpipe.test";

/// How long pebble's certificates last here.
const VALIDITY: Duration = Duration::from_secs(30);

struct Running {
    child: Child,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(port: u16, data: &Path, pebble: &pebble::Pebble, log: &Path) -> Running {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_sessionpipe-receiver"))
        .args(["--token", TOKEN, "--quiet", "--page", "--data"])
        .arg(data)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(["--domain", NAME, "--acme-directory", &pebble.directory()])
        .arg("--acme-ca")
        .arg(pebble.ca_file())
        .args(["--acme-email", "ops@sessionpipe.test"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("the receiver starts");
    Running { child }
}

/// A client that trusts pebble's root alone, reaches NAME at 127.0.0.1:port,
/// and makes a whole new handshake for every request (a new connection, no
/// session resumed: a resumed one would show the first certificate again).
fn client(root: &str, port: u16) -> reqwest::blocking::Client {
    use rustls::pki_types::{CertificateDer, pem::PemObject};
    use tokio_rustls::rustls;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(root.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.resumption = rustls::client::Resumption::disabled();
    reqwest::blocking::Client::builder()
        .tls_backend_preconfigured(tls)
        .resolve(NAME, ([127, 0, 0, 1], port).into())
        .tls_info(true)
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

/// GET `path` on https://NAME:port: the status, the body and the
/// certificate served (DER).
fn get(
    c: &reqwest::blocking::Client,
    port: u16,
    path: &str,
) -> reqwest::Result<(u16, String, Vec<u8>)> {
    let r = c.get(format!("https://{NAME}:{port}{path}")).send()?;
    let cert = r
        .extensions()
        .get::<reqwest::tls::TlsInfo>()
        .and_then(|t| t.peer_certificate())
        .map(<[u8]>::to_vec)
        .unwrap_or_default();
    let status = r.status().as_u16();
    Ok((status, r.text()?, cert))
}

/// The first answer over HTTPS within `limit`, or a panic with the logs.
fn first_answer(
    c: &reqwest::blocking::Client,
    port: u16,
    limit: Duration,
    logs: &dyn Fn() -> String,
) -> (u16, String, Vec<u8>) {
    let deadline = Instant::now() + limit;
    loop {
        match get(c, port, "/.well-known/sessionpipe") {
            Ok(answer) => return answer,
            Err(e) if Instant::now() > deadline => {
                panic!("no HTTPS answer within {limit:?}: {e:?}\n{}", logs())
            }
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

#[test]
fn a_certificate_is_got_over_acme_served_renewed_and_kept() {
    let port = pebble::free_port();
    let Some(pebble) = pebble::start_or_skip("acme: --domain against pebble", port, Some(VALIDITY))
    else {
        return;
    };
    let root = pebble.root().expect("pebble's root");
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let log = tmp.path().join("receiver.log");
    let logs = || {
        format!(
            "receiver:\n{}\n{}",
            std::fs::read_to_string(&log).unwrap_or_default(),
            pebble.log()
        )
    };
    let rx = start(port, &data, &pebble, &log);
    let c = client(&root, port);

    // Issued: discovery over HTTPS, pebble's root the only one trusted, and
    // the rp id is the name's.
    let (status, body, first) = first_answer(&c, port, Duration::from_secs(60), &logs);
    let issued = Instant::now();
    assert_eq!(status, 200, "{body}");
    let doc: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(doc["control"]["signing"]["rp_id"], NAME, "{doc}");
    assert!(!first.is_empty(), "the certificate served is seen");
    let (status, page, _) = get(&c, port, "/").unwrap();
    assert_eq!(status, 200);
    assert!(page.to_lowercase().contains("<html"), "{page}");
    // The page's origin is the name's (the port is not 443 here).
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(
        said.contains(&format!("the page is at https://{NAME}:{port}")),
        "{said}"
    );
    // A client that does not trust pebble's root refuses it: it is pebble's.
    let stranger = reqwest::blocking::Client::builder()
        .resolve(NAME, ([127, 0, 0, 1], port).into())
        .build()
        .unwrap();
    assert!(
        stranger
            .get(format!("https://{NAME}:{port}/.well-known/sessionpipe"))
            .send()
            .is_err(),
        "a certificate of pebble's, not of the built-in roots"
    );

    // The account key and the certificate (with its key) are private.
    let acme = data.join("acme");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&acme), 0o700);
    let mut kept: Vec<String> = std::fs::read_dir(&acme)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            assert_eq!(mode(&e.path()), 0o600, "{}", e.path().display());
            e.file_name().to_string_lossy().into_owned()
        })
        .collect();
    kept.sort();
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert!(
        kept[0].starts_with("account-") && kept[1].starts_with("certificate-"),
        "{kept:?}"
    );

    // Renewed before it ends: every handshake until the new one verifies
    // (an expired certificate would fail it), and the new one comes within
    // the first one's life.
    let renewed = loop {
        let (status, _, served) = get(&c, port, "/.well-known/sessionpipe")
            .unwrap_or_else(|e| panic!("a handshake failed before the renewal: {e:?}\n{}", logs()));
        assert_eq!(status, 200);
        if served != first {
            break served;
        }
        assert!(
            issued.elapsed() < VALIDITY,
            "no renewal within the certificate's life\n{}",
            logs()
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    eprintln!("renewed {:?} after the first was served", issued.elapsed());

    // A restart serves the certificate it kept, at once, with no new order.
    drop(rx);
    let _rx = start(port, &data, &pebble, &log);
    let (status, _, served) = first_answer(&c, port, Duration::from_secs(5), &logs);
    assert_eq!(status, 200);
    assert_eq!(served, renewed, "the kept certificate, not a new one");
}
