//! A throwaway ACME server for tests: Let's Encrypt's test CA, the real one,
//! from the system's packages (`pebble`, and `pebble-challtestsrv` as its
//! DNS).
//!
//! [`Pebble::start`] makes a temporary folder, a CA and a certificate for
//! pebble's own HTTPS on 127.0.0.1 (the CA is what an ACME client is told to
//! trust for the directory: [`Pebble::ca_file`]), and starts the DNS (every
//! name's A record is 127.0.0.1, no AAAA) and pebble on free ports of
//! 127.0.0.1, pebble's checks pointed at that DNS and at the port the
//! server under test listens on (`tls_port`: TLS-ALPN-01 is checked there,
//! `http_port` HTTP-01). Its certificates are valid for `validity` when
//! given (pebble's `certificateValidityPeriod`: short ones to see a renewal).
//! The issuing root of what it signs is [`Pebble::root`] (its management
//! port's `/roots/0`). Validation does not sleep (`PEBBLE_VA_NOSLEEP`) and
//! every good nonce is taken (`PEBBLE_WFE_NONCEREJECT=0`: by default pebble
//! refuses 5% of them to test clients' retries, which would make a test's
//! timing a lottery). On drop both are killed and the folder removed.
//!
//! When pebble is not installed a test says so in one line and passes (see
//! [`start_or_skip`]), unless `SESSIONPIPE_REQUIRE_HARNESSES=1` (set by
//! `scripts/test.sh`, which installs it), where that is a failure. It listens
//! on 127.0.0.1 only and never installs anything.

use std::fmt;
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long pebble and its DNS may take to answer.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// Why there is no ACME server.
#[derive(Debug)]
pub enum PebbleError {
    /// pebble or pebble-challtestsrv is not installed: what was looked for.
    Missing(String),
    /// A step failed: which, and what it said (the logs' tails when the
    /// servers were involved).
    Failed { step: String, detail: String },
}

impl fmt::Display for PebbleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PebbleError::Missing(what) => write!(f, "pebble is not available: {what}"),
            PebbleError::Failed { step, detail } => write!(f, "{step} failed:\n{detail}"),
        }
    }
}

impl std::error::Error for PebbleError {}

fn failed(step: &str, e: impl fmt::Display) -> PebbleError {
    PebbleError::Failed {
        step: step.to_string(),
        detail: e.to_string(),
    }
}

/// `name` on `PATH`, if it is there.
fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// Whether pebble and its DNS are installed.
pub fn available() -> bool {
    which("pebble").is_some() && which("pebble-challtestsrv").is_some()
}

/// A started ACME server for `test`; when pebble is not installed, one line
/// says so and the test passes (`None`), unless
/// `SESSIONPIPE_REQUIRE_HARNESSES=1`, where it panics. Installed but failing
/// to start is always a panic.
pub fn start_or_skip(test: &str, tls_port: u16, validity: Option<Duration>) -> Option<Pebble> {
    match Pebble::start(tls_port, validity) {
        Ok(p) => Some(p),
        Err(PebbleError::Missing(what)) => {
            if std::env::var("SESSIONPIPE_REQUIRE_HARNESSES").as_deref() == Ok("1") {
                panic!("{test}: pebble is required: {what}: run scripts/test.sh");
            }
            eprintln!("skipped: {test}: pebble is not available: {what} (apt-get install pebble)");
            None
        }
        Err(e) => panic!("{test}: {e}"),
    }
}

/// A TCP port of 127.0.0.1 that was free a moment ago (and its UDP twin,
/// for the DNS).
pub fn free_port() -> u16 {
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        if UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// Pebble and its DNS, running (see the module doc).
pub struct Pebble {
    listen: u16,
    management: u16,
    ca: PathBuf,
    ca_pem: String,
    children: Vec<Child>,
    // Last: removed after the children are killed.
    dir: tempfile::TempDir,
}

impl Pebble {
    /// Pebble checking challenges on `tls_port` (TLS-ALPN-01) of 127.0.0.1,
    /// its certificates valid for `validity` (whole seconds; pebble's
    /// default, five years, when `None`).
    pub fn start(tls_port: u16, validity: Option<Duration>) -> Result<Pebble, PebbleError> {
        let (Some(pebble), Some(dns)) = (which("pebble"), which("pebble-challtestsrv")) else {
            return Err(PebbleError::Missing(
                "no pebble and pebble-challtestsrv on PATH".into(),
            ));
        };
        let dir = tempfile::Builder::new()
            .prefix("sessionpipe-pebble-")
            .tempdir()
            .map_err(|e| failed("making a temp folder", e))?;
        let (ca_pem, cert_pem, key_pem) = own_https().map_err(|e| failed("its certificate", e))?;
        let ca = dir.path().join("ca.pem");
        for (name, text) in [
            ("ca.pem", &ca_pem),
            ("cert.pem", &cert_pem),
            ("key.pem", &key_pem),
        ] {
            std::fs::write(dir.path().join(name), text).map_err(|e| failed("writing", e))?;
        }
        let mut p = Pebble {
            listen: 0,
            management: 0,
            ca,
            ca_pem,
            children: Vec::new(),
            dir,
        };
        // A port found free can be taken before the bind: try again.
        for attempt in 1.. {
            p.listen = free_port();
            p.management = free_port();
            match p.launch(&pebble, &dns, tls_port, validity) {
                Ok(()) => break,
                Err(_) if attempt < 3 => p.kill(),
                Err(e) => return Err(e),
            }
        }
        Ok(p)
    }

    fn launch(
        &mut self,
        pebble: &Path,
        dns: &Path,
        tls_port: u16,
        validity: Option<Duration>,
    ) -> Result<(), PebbleError> {
        let dns_port = free_port();
        let dns_management = free_port();
        let log = |name: &str| {
            std::fs::File::create(self.dir.path().join(name)).map_err(|e| failed("a log", e))
        };
        let (out, err) = (log("dns.log")?, log("dns.err")?);
        self.children.push(
            Command::new(dns)
                .args(["-defaultIPv4", "127.0.0.1", "-defaultIPv6", ""])
                .args(["-dns01", &format!("127.0.0.1:{dns_port}")])
                .args(["-http01", "", "-https01", "", "-tlsalpn01", ""])
                .args(["-management", &format!("127.0.0.1:{dns_management}")])
                .stdin(Stdio::null())
                .stdout(out)
                .stderr(err)
                .spawn()
                .map_err(|e| failed("starting pebble-challtestsrv", e))?,
        );
        let mut config = serde_json::json!({"pebble": {
            "listenAddress": format!("127.0.0.1:{}", self.listen),
            "managementListenAddress": format!("127.0.0.1:{}", self.management),
            "certificate": self.dir.path().join("cert.pem"),
            "privateKey": self.dir.path().join("key.pem"),
            "httpPort": free_port(),
            "tlsPort": tls_port,
            "ocspResponderURL": "",
            "externalAccountBindingRequired": false,
        }});
        if let Some(v) = validity {
            config["pebble"]["certificateValidityPeriod"] = v.as_secs().max(1).into();
        }
        let config_file = self.dir.path().join("pebble.json");
        std::fs::write(&config_file, config.to_string()).map_err(|e| failed("its config", e))?;
        let (out, err) = (log("pebble.log")?, log("pebble.err")?);
        self.children.push(
            Command::new(pebble)
                .arg("-config")
                .arg(&config_file)
                .args(["-dnsserver", &format!("127.0.0.1:{dns_port}")])
                .env("PEBBLE_VA_NOSLEEP", "1")
                .env("PEBBLE_WFE_NONCEREJECT", "0")
                .current_dir(self.dir.path())
                .stdin(Stdio::null())
                .stdout(out)
                .stderr(err)
                .spawn()
                .map_err(|e| failed("starting pebble", e))?,
        );
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            for c in &mut self.children {
                if let Ok(Some(status)) = c.try_wait() {
                    return Err(PebbleError::Failed {
                        step: format!("pebble or its DNS (exited: {status})"),
                        detail: self.log(),
                    });
                }
            }
            let dns_up = TcpStream::connect(("127.0.0.1", dns_port)).is_ok();
            if dns_up && self.get(&self.directory()).is_ok() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(PebbleError::Failed {
                    step: format!("pebble (no directory within {START_TIMEOUT:?})"),
                    detail: self.log(),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The ACME directory: `https://127.0.0.1:PORT/dir`.
    pub fn directory(&self) -> String {
        format!("https://127.0.0.1:{}/dir", self.listen)
    }

    /// The CA of pebble's own HTTPS (PEM file): what an ACME client trusts
    /// for the directory.
    pub fn ca_file(&self) -> &Path {
        &self.ca
    }

    /// The root (PEM) of the certificates pebble issues, from its
    /// management port: what a client of the server under test trusts.
    pub fn root(&self) -> Result<String, PebbleError> {
        self.get(&format!("https://127.0.0.1:{}/roots/0", self.management))
    }

    /// Both logs so far.
    pub fn log(&self) -> String {
        ["pebble.log", "pebble.err", "dns.log", "dns.err"]
            .iter()
            .map(|f| {
                let text = std::fs::read_to_string(self.dir.path().join(f)).unwrap_or_default();
                let lines: Vec<&str> = text.lines().collect();
                format!(
                    "{f}:\n{}",
                    lines[lines.len().saturating_sub(40)..].join("\n")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// A GET over pebble's own HTTPS, its CA trusted.
    fn get(&self, url: &str) -> Result<String, PebbleError> {
        let ca = reqwest::Certificate::from_pem(self.ca_pem.as_bytes())
            .map_err(|e| failed("pebble's CA", e))?;
        let client = reqwest::blocking::Client::builder()
            .tls_certs_only([ca])
            .timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| failed("a client", e))?;
        let resp = client.get(url).send().map_err(|e| failed(url, e))?;
        if !resp.status().is_success() {
            return Err(failed(url, resp.status()));
        }
        resp.text().map_err(|e| failed(url, e))
    }

    fn kill(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        self.children.clear();
    }
}

impl Drop for Pebble {
    fn drop(&mut self) {
        self.kill();
    }
}

impl fmt::Debug for Pebble {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pebble")
            .field("directory", &self.directory())
            .field("dir", &self.dir.path())
            .finish()
    }
}

/// A CA, and a certificate it signed for 127.0.0.1 with its key: pebble's
/// own HTTPS (PEM: CA, certificate, key).
fn own_https() -> Result<(String, String, String), rcgen::Error> {
    use rcgen::{
        BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, SanType,
    };
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "sessionpipe test kit: pebble's HTTPS");
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate()?)?;
    let mut leaf = CertificateParams::new(vec!["localhost".to_string()])?;
    leaf.subject_alt_names
        .push(SanType::IpAddress([127, 0, 0, 1].into()));
    let key = KeyPair::generate()?;
    let cert = leaf.signed_by(&key, &ca)?;
    Ok((ca.pem(), cert.pem(), key.serialize_pem()))
}
