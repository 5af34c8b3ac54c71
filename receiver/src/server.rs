//! Layer 6, server: starting a receiver and running it. `Receiver::start`
//! checks the options, makes its runtime (`workers` threads), opens the
//! database, brings up each side (control, then the page over it, then the
//! events side), binds, and serves on a thread of its own; the `Handle` it
//! gives back reads what is stored, and stops it.
//!
//! This module owns that order and the server's life: the listener (plain,
//! or TLS from files (`tls`) or over ACME (`acme`), whose renewal task runs
//! here; the caps on connections, a trusted proxy's not counted as one
//! client's), the retention task, and the stop. It must not handle a
//! request (`routes` and the sides do), and never logs a token or a
//! secret.

use crate::client::Proxies;
use crate::control::Control;
use crate::db::{self, Db};
use crate::events::{Events, Stats};
use crate::limits::Limits;
use crate::options::Options;
use crate::owners::Owners;
use crate::page::Page;
use crate::request::RequestLog;
use crate::routes::{self, Sides};
use crate::store;
use serde_json::Value;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Starts receivers.
pub struct Receiver;

impl Receiver {
    /// Binds, loads the data folder and serves on a thread of its own (with its own
    /// tokio runtime, so callers need none). Returns once the port is bound: a
    /// request sent right after is answered.
    pub fn start(opts: Options) -> io::Result<Handle> {
        let invalid = |e| io::Error::new(io::ErrorKind::InvalidInput, e);
        let settings = opts.check().map_err(invalid)?;
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
            tracing::warn!(
                "{} holds an earlier receiver's files (control.db, <harness>/*.jsonl): they \
                 are left as they are and not read; this receiver keeps everything in \
                 receiver.db",
                data_dir.display()
            );
        }
        let at = match &opts.database {
            Some(url) => db::Location::Url(url),
            None => db::Location::Folder(&data_dir),
        };
        let db = Arc::new(aside(rt.handle(), Db::open(at)).map_err(io::Error::other)?);
        let (tls, renewal) = match (&opts.tls, &opts.acme) {
            (Some(files), _) => (Some(files.tls().map_err(invalid)?), None),
            (None, Some(acme)) => {
                let (tls, renewal) = acme.start(&data_dir.join("acme")).map_err(invalid)?;
                (Some(tls), Some(renewal))
            }
            (None, None) => (None, None),
        };
        let https = tls.is_some();
        let listener = bind(opts.listen)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let log = RequestLog(opts.log);
        let owners = Arc::new(Owners::new(Arc::clone(&db), opts.token.clone()));
        let page_opts = opts.page.map(|mut p| {
            if p.origin.is_empty() {
                let port = addr.port();
                p.origin = match &opts.acme {
                    Some(a) if port == 443 => format!("https://{}", a.domains[0]),
                    Some(a) => format!("https://{}:{port}", a.domains[0]),
                    None if https => format!("https://localhost:{port}"),
                    None => format!("http://localhost:{port}"),
                };
            }
            p
        });
        let mut limits = sessionpipe_listener::Limits {
            max_connections: opts.max_connections,
            per_client: opts.connections_per_client,
            ..sessionpipe_listener::Limits::RECEIVER
        };
        let control = match opts.control {
            Some(c) => {
                // A long-poll is held up to wait_max_s: the request deadline must
                // outlast it.
                let held = Duration::from_secs(c.wait_max_s + 10);
                limits.request_timeout = limits.request_timeout.max(held);
                let page_origin = page_opts.as_ref().map(|p| p.origin.clone());
                let opened = Control::open(
                    c,
                    Arc::clone(&db),
                    Arc::clone(&owners),
                    page_origin,
                    log,
                    stop_rx.clone(),
                );
                Some(Arc::new(
                    aside(rt.handle(), opened).map_err(io::Error::other)?,
                ))
            }
            None => None,
        };
        let page = match (page_opts, &control) {
            (Some(p), Some(c)) => {
                let opened =
                    Page::open(p, Arc::clone(c), Arc::clone(&db), Arc::clone(&owners), log);
                Some(Arc::new(
                    aside(rt.handle(), opened).map_err(io::Error::other)?,
                ))
            }
            _ => None,
        };
        let events = Arc::new(Events::new(
            settings,
            Arc::clone(&db),
            owners,
            page.as_ref().map(|p| p.notifier()),
            log,
        ));
        let sides = Sides {
            events,
            control,
            page,
        };
        if let Some(why) = sides.page.as_ref().and_then(|p| p.files_missing()) {
            tracing::warn!("no page to show: {why}");
        }
        #[cfg(feature = "test-doors")]
        tracing::warn!(
            "this build serves the test doors (/test/...): it is for tests, never to be \
             put where others reach it"
        );
        let listener = {
            let _in_rt = rt.enter();
            tokio::net::TcpListener::from_std(listener)?
        };
        let proxies = Arc::new(Proxies::new(
            opts.trusted_proxies.clone(),
            opts.proxy_header,
        ));
        let clients = {
            let proxies = Arc::clone(&proxies);
            sessionpipe_listener::Clients::grouped(move |peer| proxies.connection_client(peer))
        };
        let app = routes::router(&sides, proxies, Arc::new(Limits::new()));
        let runtime = rt.handle().clone();
        if let Some(keep) = opts.retention {
            runtime.spawn(retain(Arc::clone(&db), keep, log, stop_rx.clone()));
        }
        if let Some(renewal) = renewal {
            let mut stop = stop_rx.clone();
            runtime.spawn(async move {
                tokio::select! {
                    () = renewal => {}
                    _ = stop.wait_for(|s| *s) => {}
                }
            });
        }
        let thread = std::thread::Builder::new()
            .name("sessionpipe-receiver".into())
            .spawn(move || serve(rt, listener, app, (limits, tls, clients), stop_rx))?;
        Ok(Handle {
            addr,
            https,
            data_dir,
            _temp: temp,
            runtime,
            db,
            sides,
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
    db: Arc<Db>,
    keep: Duration,
    log: RequestLog,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        let before = protocol::time::now_ms() - keep.as_millis() as i64;
        match store::prune(&db, before).await {
            Ok(n) if n > 0 => log.line(|| format!("retention: {n} event(s) deleted")),
            Ok(_) => {}
            Err(e) => tracing::warn!("retention: {e}"),
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(3600)) => {}
            _ = stop.changed() => return,
        }
    }
}

/// Binds `at`; `[::]` where the system has no IPv6 is `0.0.0.0` on the same
/// port (`[::]` takes IPv4 too where the system maps it, Linux's default).
fn bind(at: SocketAddr) -> io::Result<TcpListener> {
    match TcpListener::bind(at) {
        Err(e) if at.ip() == std::net::Ipv6Addr::UNSPECIFIED => {
            let v4 = SocketAddr::from(([0, 0, 0, 0], at.port()));
            TcpListener::bind(v4).map_err(|_| e)
        }
        other => other,
    }
}

/// How the listener serves: its caps, its TLS, who counts as one client.
type Serving = (
    sessionpipe_listener::Limits,
    Option<sessionpipe_listener::Tls>,
    sessionpipe_listener::Clients,
);

fn serve(
    rt: tokio::runtime::Runtime,
    listener: tokio::net::TcpListener,
    app: axum::Router,
    (limits, tls, clients): Serving,
    stop: tokio::sync::watch::Receiver<bool>,
) {
    // Slow senders are cut off, and a crowd of them cannot hold it, nor one
    // client a share of it past its own (`sessionpipe-listener`); `stop`
    // lets requests in flight finish briefly.
    rt.block_on(sessionpipe_listener::serve_with(
        listener,
        app,
        limits,
        tls,
        clients,
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
    db: Arc<Db>,
    sides: Sides,
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
        self.sides.page.as_ref().map(|p| p.origin().to_string())
    }

    /// Why the page is on but cannot be shown (no built page, an empty
    /// `page_dir`), when it cannot; the start logged it as a warning.
    pub fn page_missing(&self) -> Option<String> {
        self.sides.page.as_ref().and_then(|p| p.files_missing())
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
    pub fn stored_keys(&self) -> Vec<crate::check::Key> {
        aside(&self.runtime, async {
            let owner = self.sides.events.owners.operator().await?;
            store::keys(&self.db, &owner).await
        })
        .unwrap_or_else(|e| panic!("stored_keys: {e}"))
    }

    /// A session's stored events in seq order (what the read door answers).
    pub fn events(&self, harness: &str, session: &str) -> io::Result<Option<Vec<Value>>> {
        aside(&self.runtime, async {
            let owner = self.sides.events.owners.operator().await?;
            store::read(&self.db, &owner, harness, session).await
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
            let owner = self.sides.events.owners.operator().await?;
            store::session(&self.db, &owner, harness, session).await
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

    /// The events this receiver stored since it started (duplicates and
    /// rejections not counted), read off a counter: no database read and no
    /// thread, so a benchmark polling it costs the receiver nothing. `stats`
    /// counts what the database holds, a scan of every stored event.
    pub fn accepted(&self) -> u64 {
        self.sides.events.accepted()
    }

    /// # Panics
    ///
    /// As `stored_keys`.
    pub fn stats(&self) -> Stats {
        aside(&self.runtime, self.sides.events.stats()).unwrap_or_else(|e| panic!("stats: {e}"))
    }

    /// Arms the fault door (`None` disarms), as `POST /test/faults` does.
    #[cfg(feature = "test-doors")]
    pub fn set_fault(&self, fault: Option<crate::events::Fault>) {
        crate::events::doors::arm(&self.sides.events, fault);
    }

    /// Keeps `bytes` to be served at `{control}/files/{sha256}` to any machine
    /// paired here, as a device's upload would; returns that `sha256` (base64url
    /// SHA-256, no padding), what a command's `files` entry names.
    ///
    /// # Panics
    ///
    /// When the receiver runs without control, or its store fails: this is a
    /// test's way in.
    #[cfg(feature = "test-doors")]
    pub fn put_file(&self, bytes: &[u8]) -> String {
        let sha256 = crate::control::file_sha256(bytes);
        self.put_file_as(&sha256, bytes);
        sha256
    }

    /// Keeps `bytes` to be served as `sha256`, whatever their own hash is: a
    /// receiver that swapped a file, for the machine's check to catch.
    ///
    /// # Panics
    ///
    /// As `put_file`, and when `sha256` is not 43 base64url characters.
    #[cfg(feature = "test-doors")]
    pub fn put_file_as(&self, sha256: &str, bytes: &[u8]) {
        let control = self
            .sides
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

#[cfg(test)]
impl Handle {
    /// The rows of `sql` on the receiver's database, for the crate's own tests.
    pub(crate) fn query(&self, sql: &'static str) -> Vec<crate::db::Row> {
        aside(&self.runtime, self.db.rows(sql, vec![])).unwrap_or_else(|e| panic!("{sql}: {e}"))
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.shutdown();
    }
}
