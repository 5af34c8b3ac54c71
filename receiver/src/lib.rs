//! `sessionpipe-receiver`: the receiving side of the sessionpipe HTTP binding
//! (PROTOCOL-NOTES §5), and its control side (§6) when `Options::control` is
//! set: what a person self-hosts, and what the project's tests deliver to.
//!
//! The events side: the well-known document, `POST /v1/events` with every
//! answer of the binding's error table, dedup on (harness.name, session.id,
//! seq), unknown types stored, `session.forgotten` honoured before the answer
//! (nothing of the session is left, in the file's bytes either), each session's
//! block merged, the arrival time kept beside `time`, a retention setting, and
//! Standard Webhooks signatures checked when a `whsec_` secret is given. With
//! control on: pairing (open pairing too), the machine calls under
//! `/v1/control` (hello, the per-machine long-poll, acks, off, a `start`'s
//! files). Everything is kept in one database (`db`): a SQLite file by
//! default, or PostgreSQL, where several receiver processes behind one load
//! balancer share the queue (a message goes to one long-poll at a time, and a
//! machine's poll may land on any process). Test doors, loopback only and
//! with the sink token: a read door (`GET /v1/sessions/<harness>:<id>`), a
//! fault door (`POST /test/faults`), and control's (approve a pairing, queue a
//! signed message, put a file, read a machine's queue back). `push` sends Web
//! Push.
//!
//! This crate owns the receiving side only. It must not depend on the sender's code
//! (`sessionpipe-core`): it reads the rules from the spec on its own, so that a
//! sender and this receiver agreeing means something. It carries control messages
//! and never signs one (the machine verifies them), listens on loopback unless
//! told otherwise, and never logs a body, a token, a secret or an
//! `authorization` header.
//!
//! ```no_run
//! use sessionpipe_receiver::{Options, Receiver};
//! let rx = Receiver::start(Options::new("test-token")).unwrap();
//! println!("{}", rx.url()); // http://127.0.0.1:PORT
//! // ... deliver to it ...
//! assert!(rx.stored_keys().is_empty());
//! rx.stop();
//! ```

mod accounts;
mod app;
mod board;
pub mod check;
mod control;
mod db;
mod http;
mod notify;
mod owners;
pub mod push;
pub mod signature;
mod store;

pub use app::PageOptions;
pub use check::Key;
pub use control::{CONTROL_PATH, ControlOptions};
pub use http::EVENTS_PATH;

use serde_json::{Value, json};
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How a receiver is started. `Options::new(token)` gives the defaults: loopback on
/// a free port, `max_tier` 3, the binding's default batch limits, a temporary
/// folder, no signature, no control side, quiet.
#[derive(Clone)]
pub struct Options {
    pub listen: SocketAddr,
    /// The bearer token senders must present.
    pub token: String,
    /// 0–3: events above it refuse their batch with 403 `tier_above_max`.
    pub max_tier: u8,
    /// 1–50 events per batch (the schema's bounds).
    pub max_events: usize,
    /// 1 024–262 144 bytes per batch body (the schema's bounds).
    pub max_bytes: usize,
    /// The folder of the SQLite database (`receiver.db`); `None` is a temporary
    /// folder removed on stop.
    pub data: Option<PathBuf>,
    /// A `postgres://` URL: the database is there instead (`data` is then
    /// unused), and several receivers may share it.
    pub database: Option<String>,
    /// Events that arrived longer ago than this are deleted (checked hourly,
    /// in small batches); `None` keeps them.
    pub retention: Option<Duration>,
    /// A `whsec_…` secret: every batch must then carry a valid signature.
    pub webhook_secret: Option<String>,
    /// Allows a `listen` address other than loopback.
    pub allow_remote: bool,
    /// One line per request on stderr.
    pub log: bool,
    /// The control side (`capabilities` then lists `control`); `None` serves the
    /// events side only.
    pub control: Option<ControlOptions>,
    /// The page (passkey sign-in, the board, commands signed on the device,
    /// push); it needs `control` (its rp id is control's).
    pub page: Option<PageOptions>,
    /// Serve HTTPS with this certificate chain and private key (PEM files);
    /// `None` is plain HTTP (on loopback, or behind an HTTPS proxy).
    pub tls: Option<TlsFiles>,
    /// The async worker threads (1-1024); `None` is one per core. The
    /// database has threads of its own besides.
    pub workers: Option<usize>,
}

/// A certificate chain and its private key, PEM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl TlsFiles {
    /// The acceptor these files make: TLS 1.2 and 1.3, HTTP/1.1 only.
    fn acceptor(&self) -> Result<tokio_rustls::TlsAcceptor, Invalid> {
        use tokio_rustls::rustls;
        use tokio_rustls::rustls::pki_types::pem::PemObject;
        use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
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
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| Invalid(format!("tls: {e}")))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| Invalid(format!("tls: the key does not fit the certificate: {e}")))?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
    }
}

/// Written out by hand so that a token or a secret never reaches a log or a panic
/// message through `{:?}`.
impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("listen", &self.listen)
            .field("token", &"[redacted]")
            .field("max_tier", &self.max_tier)
            .field("max_events", &self.max_events)
            .field("max_bytes", &self.max_bytes)
            .field("data", &self.data)
            .field("database", &self.database.as_ref().map(|_| "[set]"))
            .field("retention", &self.retention)
            .field(
                "webhook_secret",
                &self.webhook_secret.as_ref().map(|_| "[redacted]"),
            )
            .field("allow_remote", &self.allow_remote)
            .field("log", &self.log)
            .field("control", &self.control)
            .field("page", &self.page)
            .field("tls", &self.tls)
            .field("workers", &self.workers)
            .finish()
    }
}

impl Options {
    pub fn new(token: impl Into<String>) -> Options {
        Options {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            token: token.into(),
            max_tier: 3,
            max_events: 50,
            max_bytes: 262_144,
            data: None,
            database: None,
            retention: None,
            webhook_secret: None,
            allow_remote: false,
            log: false,
            control: None,
            page: None,
            tls: None,
            workers: None,
        }
    }

    /// The settings the handlers use, or why these options cannot start.
    fn settings(&self) -> Result<http::Settings, Invalid> {
        if self.token.is_empty() || self.token.chars().any(char::is_whitespace) {
            return Err(Invalid(
                "the token must be non-empty and without spaces".into(),
            ));
        }
        if self.max_tier > 3 {
            return Err(Invalid("max_tier is 0-3".into()));
        }
        if !(1..=50).contains(&self.max_events) {
            return Err(Invalid("max_events is 1-50".into()));
        }
        if !(1024..=262_144).contains(&self.max_bytes) {
            return Err(Invalid("max_bytes is 1024-262144".into()));
        }
        if self.workers.is_some_and(|w| !(1..=1024).contains(&w)) {
            return Err(Invalid("workers is 1-1024".into()));
        }
        if !self.listen.ip().is_loopback() && !self.allow_remote {
            return Err(Invalid(format!(
                "{} is not a loopback address (allow_remote / --allow-remote to listen there)",
                self.listen
            )));
        }
        if let Some(c) = &self.control {
            c.check()?;
        }
        match (&self.page, &self.control) {
            (Some(_), None) => return Err("the page needs the control side (control)".into()),
            (Some(p), Some(c)) if !p.origin.is_empty() => {
                p.check(&c.rp_id)?;
            }
            _ => {}
        }
        let webhook_key = match &self.webhook_secret {
            Some(s) => Some(signature::decode_secret(s)?),
            None => None,
        };
        Ok(http::Settings {
            token: self.token.clone(),
            max_tier: self.max_tier,
            max_events: self.max_events,
            max_bytes: self.max_bytes,
            webhook_key,
            log: self.log,
        })
    }
}

/// Why what the receiver was given (its options, a fault, a webhook secret)
/// cannot be used; the words say which part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invalid(pub String);

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Invalid {}

impl From<&str> for Invalid {
    fn from(s: &str) -> Self {
        Invalid(s.to_string())
    }
}

/// An armed answer of the fault door: the next `count` event POSTs get `status`
/// (with `body`, else the body this receiver would send for that status, and a
/// `retry-after` header when given), after `delay_ms`. Served before any other
/// check, so a fault is answered exactly `count` times whatever the request.
#[derive(Clone, Debug, PartialEq)]
pub struct Fault {
    pub status: u16,
    pub count: u64,
    pub body: Option<Value>,
    pub retry_after: Option<String>,
    pub delay_ms: u64,
}

impl Fault {
    /// A fault answering `status` once.
    pub fn new(status: u16) -> Fault {
        Fault {
            status,
            count: 1,
            body: None,
            retry_after: None,
            delay_ms: 0,
        }
    }

    /// Reads the fault door's body: `{}` (disarm, `None`) or `{"status": 503,
    /// "count"?: 3, "body"?: {...}, "retry_after"?: "2", "delay_ms"?: 0}`.
    pub fn from_json(v: &Value) -> Result<Option<Fault>, Invalid> {
        let o = v.as_object().ok_or("a fault is a JSON object")?;
        if o.is_empty() {
            return Ok(None);
        }
        if let Some(k) = o.keys().find(|k| {
            !matches!(
                k.as_str(),
                "status" | "count" | "body" | "retry_after" | "delay_ms"
            )
        }) {
            return Err(Invalid(format!("unknown member {k}")));
        }
        let status = o
            .get("status")
            .and_then(Value::as_u64)
            .filter(|s| (200..=599).contains(s))
            .ok_or("status: an HTTP status 200-599")? as u16;
        let count = match o.get("count") {
            None => 1,
            Some(c) => c
                .as_u64()
                .filter(|c| *c >= 1)
                .ok_or("count: an integer >= 1")?,
        };
        let retry_after = match o.get("retry_after") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            Some(_) => return Err(Invalid("retry_after: a string or a number".into())),
        };
        let delay_ms = match o.get("delay_ms") {
            None => 0,
            Some(d) => d
                .as_u64()
                .filter(|d| *d <= 60_000)
                .ok_or("delay_ms: an integer 0-60000")?,
        };
        Ok(Some(Fault {
            status,
            count,
            body: o.get("body").cloned(),
            retry_after,
            delay_ms,
        }))
    }

    pub fn to_json(&self) -> Value {
        json!({
            "status": self.status,
            "count": self.count,
            "body": self.body,
            "retry_after": self.retry_after,
            "delay_ms": self.delay_ms,
        })
    }
}

/// Counters since start (`posts` counts every event POST, faults included) and
/// what is stored now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub posts: u64,
    pub accepted: u64,
    pub duplicates: u64,
    pub rejected: u64,
    pub sessions: usize,
    pub events: usize,
}

/// The name a file is served under at `{control}/files/{sha256}`: the
/// base64url SHA-256 of its bytes, no padding (a command's `files[].sha256`).
pub fn file_sha256(bytes: &[u8]) -> String {
    use base64::Engine;
    use sha2::Digest;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(bytes))
}

/// Starts receivers.
pub struct Receiver;

impl Receiver {
    /// Binds, loads the data folder and serves on a thread of its own (with its own
    /// tokio runtime, so callers need none). Returns once the port is bound: a
    /// request sent right after is answered.
    pub fn start(opts: Options) -> io::Result<Handle> {
        let settings = opts
            .settings()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let (data_dir, temp) = match &opts.data {
            Some(d) => {
                std::fs::create_dir_all(d)?;
                (d.clone(), None)
            }
            None => {
                let t = tempfile::Builder::new()
                    .prefix("sessionpipe-receiver-")
                    .tempdir()?;
                (t.path().to_path_buf(), Some(t))
            }
        };
        let workers = opts.workers.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get)
        });
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .thread_name("sessionpipe-receiver")
            .enable_all()
            .build()?;
        if opts.database.is_none() && earlier_files(&data_dir) {
            // Never deleted, never read: the person decides what becomes of them.
            eprintln!(
                "sessionpipe-receiver: {} holds an earlier receiver's files (control.db, \
                 <harness>/*.jsonl): they are left as they are and not read; this receiver \
                 keeps everything in receiver.db",
                data_dir.display()
            );
        }
        let at = match &opts.database {
            Some(url) => db::Location::Url(url),
            None => db::Location::Folder(&data_dir),
        };
        let db = Arc::new(aside(rt.handle(), db::Db::open(at)).map_err(io::Error::other)?);
        let acceptor = opts
            .tls
            .as_ref()
            .map(TlsFiles::acceptor)
            .transpose()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let https = acceptor.is_some();
        let listener = TcpListener::bind(opts.listen)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let mut limits = sessionpipe_listener::Limits::RECEIVER;
        let control = match opts.control {
            Some(c) => {
                // A long-poll is held up to wait_max_s: the request deadline must
                // outlast it.
                let held = Duration::from_secs(c.wait_max_s + 10);
                limits.request_timeout = limits.request_timeout.max(held);
                Some(
                    aside(
                        rt.handle(),
                        control::Control::open(c, Arc::clone(&db), stop_rx.clone()),
                    )
                    .map_err(io::Error::other)?,
                )
            }
            None => None,
        };
        let page = match (opts.page, &control) {
            (Some(mut p), Some(c)) => {
                if p.origin.is_empty() {
                    let scheme = if https { "https" } else { "http" };
                    p.origin = format!("{scheme}://localhost:{}", addr.port());
                }
                Some(
                    aside(rt.handle(), app::open(p, &c.opts.rp_id, Arc::clone(&db)))
                        .map_err(io::Error::other)?,
                )
            }
            _ => None,
        };
        let shared = Arc::new(http::Shared {
            settings,
            control,
            db,
            owners: owners::Owners::default(),
            app: page,
            fault: Mutex::new(None),
            posts: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
            duplicates: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
        });
        let listener = {
            let _in_rt = rt.enter();
            tokio::net::TcpListener::from_std(listener)?
        };
        let app = http::router(Arc::clone(&shared));
        let runtime = rt.handle().clone();
        if let Some(keep) = opts.retention {
            runtime.spawn(retain(Arc::clone(&shared), keep, stop_rx.clone()));
        }
        let thread = std::thread::Builder::new()
            .name("sessionpipe-receiver".into())
            .spawn(move || serve(rt, listener, app, limits, acceptor, stop_rx))?;
        Ok(Handle {
            addr,
            https,
            data_dir,
            _temp: temp,
            runtime,
            shared,
            stop_tx,
            thread: Some(thread),
        })
    }
}

/// Runs `f` to its end on `rt`, from a thread of its own: the callers of
/// `Receiver::start` and of `Handle`'s calls may be inside another async
/// runtime (a `#[tokio::test]`), where blocking on this one would panic.
fn aside<F>(rt: &tokio::runtime::Handle, f: F) -> F::Output
where
    F: std::future::Future + Send,
    F::Output: Send,
{
    std::thread::scope(|s| {
        s.spawn(|| rt.block_on(f))
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

/// Whether `dir` holds what the file-based receiver before this one wrote.
fn earlier_files(dir: &Path) -> bool {
    if dir.join("control.db").exists() || dir.join(".forgotten").exists() {
        return true;
    }
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| {
            e.path().is_dir()
                && std::fs::read_dir(e.path())
                    .into_iter()
                    .flatten()
                    .flatten()
                    .any(|f| f.path().extension().is_some_and(|x| x == "jsonl"))
        })
}

/// Deletes what is older than `keep`, now and then every hour, until `stop`.
async fn retain(
    shared: Arc<http::Shared>,
    keep: Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        let before = protocol::time::now_ms() - keep.as_millis() as i64;
        match store::prune(&shared.db, before).await {
            Ok(n) if n > 0 => shared.log(|| format!("retention: {n} event(s) deleted")),
            Ok(_) => {}
            Err(e) => shared.log(|| format!("retention: {e}")),
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(3600)) => {}
            _ = stop.changed() => return,
        }
    }
}

fn serve(
    rt: tokio::runtime::Runtime,
    listener: tokio::net::TcpListener,
    app: axum::Router,
    limits: sessionpipe_listener::Limits,
    tls: Option<tokio_rustls::TlsAcceptor>,
    stop: tokio::sync::watch::Receiver<bool>,
) {
    // Slow senders are cut off, and a crowd of them cannot hold it
    // (`sessionpipe-listener`); `stop` lets requests in flight finish briefly.
    rt.block_on(sessionpipe_listener::serve_with(
        listener,
        app,
        limits,
        tls,
        async move {
            let mut stop = stop;
            let _ = stop.wait_for(|s| *s).await;
        },
    ));
    rt.shutdown_timeout(Duration::from_millis(500));
}

/// A running receiver. Dropping it stops it, as `stop` does.
pub struct Handle {
    addr: SocketAddr,
    https: bool,
    data_dir: PathBuf,
    /// Held so that a receiver started without `data` cleans up after itself.
    _temp: Option<tempfile::TempDir>,
    /// The server's runtime, for the calls below (made from outside it).
    runtime: tokio::runtime::Handle,
    shared: Arc<http::Shared>,
    stop_tx: tokio::sync::watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

impl Handle {
    /// The base URL, `http://127.0.0.1:PORT` (`https://` with `tls`; no
    /// trailing slash).
    pub fn url(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// Where people open the page, when it is on.
    pub fn page_origin(&self) -> Option<String> {
        self.shared.app.as_ref().map(|a| a.opts.origin.clone())
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The SQLite database's folder (a temporary one without `Options::data`).
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Every stored (harness, session, seq), sorted: for asserting exactly-once.
    ///
    /// # Panics
    ///
    /// When the database fails, or when called from inside an async runtime
    /// (these calls are a test's, made from a plain thread).
    pub fn stored_keys(&self) -> Vec<Key> {
        aside(&self.runtime, async {
            let owner = self.shared.owners.operator(&self.shared.db).await?;
            store::keys(&self.shared.db, &owner).await
        })
        .unwrap_or_else(|e| panic!("stored_keys: {e}"))
    }

    /// A session's stored events in seq order (what the read door answers).
    pub fn events(&self, harness: &str, session: &str) -> io::Result<Option<Vec<Value>>> {
        aside(&self.runtime, async {
            let owner = self.shared.owners.operator(&self.shared.db).await?;
            store::read(&self.shared.db, &owner, harness, session).await
        })
        .map_err(io::Error::other)
    }

    /// A session's block as merged over its events (PROTOCOL-NOTES §2), its
    /// board state (`needs_you`, `working`, `done`) and when it was first and
    /// last heard of (ms since the epoch); `None` when nothing of it is kept.
    ///
    /// # Panics
    ///
    /// As `stored_keys`.
    pub fn session(&self, harness: &str, session: &str) -> Option<(Value, &'static str, i64, i64)> {
        aside(&self.runtime, async {
            let owner = self.shared.owners.operator(&self.shared.db).await?;
            store::session(&self.shared.db, &owner, harness, session).await
        })
        .unwrap_or_else(|e| panic!("session: {e}"))
        .map(|r| {
            (
                Value::Object(r.folded.block),
                r.folded.state.as_str(),
                r.first_ms,
                r.last_ms,
            )
        })
    }

    /// # Panics
    ///
    /// As `stored_keys`.
    pub fn stats(&self) -> Stats {
        aside(&self.runtime, self.shared.stats()).unwrap_or_else(|e| panic!("stats: {e}"))
    }

    /// Arms the fault door (`None` disarms), as `POST /test/faults` does.
    pub fn set_fault(&self, fault: Option<Fault>) {
        *self.shared.fault.lock().unwrap_or_else(|p| p.into_inner()) = fault;
    }

    /// Keeps `bytes` to be served at `{control}/files/{sha256}` to any machine
    /// paired here, as a device's upload would; returns that `sha256` (base64url
    /// SHA-256, no padding), what a command's `files` entry names.
    ///
    /// # Panics
    ///
    /// When the receiver runs without control, or its store fails: this is a
    /// test's way in.
    pub fn put_file(&self, bytes: &[u8]) -> String {
        let sha256 = file_sha256(bytes);
        self.put_file_as(&sha256, bytes);
        sha256
    }

    /// Keeps `bytes` to be served as `sha256`, whatever their own hash is: a
    /// receiver that swapped a file, for the machine's check to catch.
    ///
    /// # Panics
    ///
    /// As `put_file`, and when `sha256` is not 43 base64url characters.
    pub fn put_file_as(&self, sha256: &str, bytes: &[u8]) {
        let control = self
            .shared
            .control
            .as_ref()
            .expect("put_file needs the control side on (Options::control)");
        aside(
            &self.runtime,
            control.put_file(sha256, bytes, "application/octet-stream", None),
        )
        .unwrap_or_else(|e| panic!("put_file: {e}"));
    }

    /// Stops serving: requests in flight get up to two seconds, then the port is
    /// closed (and free to bind again, for a restart on the same address).
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let _ = self.stop_tx.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.shutdown();
    }
}
