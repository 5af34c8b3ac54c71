//! Layer 4, daemon: the daemon's life. One per user (an exclusive lock on
//! `daemon.lock`), a wake socket the hook pokes, the ingest loop, the sinks and
//! the local API (`api`), all on one tokio runtime: the network and the API on
//! its workers, SQLite and the spool on its blocking pool (ingest is one
//! long-lived blocking task, the outbox's only writer of events).
//!
//! Two modes share this code. `sessionpipe daemon` runs until killed. The drain
//! worker (`daemon --drain`), started by a hook that found no daemon, takes the
//! spool and exits once idle, so events are never stranded while the app is
//! closed. The order of start (lock, bind, drain) and of exit (unbind, drain,
//! unlock) is what guarantees that a job written while a worker exits is taken by
//! that worker or by the next one the hook starts.
//!
//! SIGTERM and SIGINT stop it within half a second (`stop::STOP_BOUND`):
//! ingest stops between two batches (a batch commits whole or not at all, and
//! its jobs leave the spool only after), sinks stop at their next step (a batch
//! cut off in flight goes again, receivers dedup), the API closes and `ui.json`
//! goes. Jobs not yet taken stay in the spool for the next start. A program that
//! runs the daemon inside itself (the app) owns the signals instead and stops it
//! the same way through a `Stop` (`Options::stop`).
//!
//! Uses layers 1 to 3 and the crates below. Control (its socket and its
//! long-polls) runs here on the same runtime; ACP and the pool listener will.

pub mod api;
mod stop;
mod stream_wake;
mod wake;

pub use stop::{STOP_BOUND, Signal, Stop, ended_by_signal};

use crate::pipeline::ingest::Ingest;
use crate::pipeline::outbox::{Outbox, OutboxError};
use crate::sinks::deliver::{Manager, Ring};
use crate::state::live_config::LiveConfig;
use crate::state::lock::{self, Lock, Mode};
use spool::{Spool, StatePaths};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct Options {
    /// Exit once the spool has been empty for `idle_exit`.
    pub drain: bool,
    pub idle_exit: Duration,
    /// Serve the local API (and the UI's files from `ui_dir`) on loopback.
    pub api: bool,
    pub api_port: u16,
    pub ui_dir: Option<std::path::PathBuf>,
    /// `None`: the daemon owns its process, and SIGTERM or SIGINT stop it.
    /// `Some`: a program runs it inside itself and owns the signals; the
    /// daemon stops when that program pulls this (and never starts after).
    pub stop: Option<Stop>,
    /// The settings in force, when the program that runs the daemon follows
    /// them too (the tray app): one `LiveConfig` for both, so a file that
    /// does not read is said once. `None`: the daemon follows `config.json`
    /// on its own.
    pub config: Option<LiveConfig>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            drain: false,
            idle_exit: Duration::from_secs(2),
            api: false,
            api_port: 0,
            ui_dir: None,
            stop: None,
            config: None,
        }
    }
}

/// Why the daemon could not start (once it runs, it logs and goes on).
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("cannot create {path}: {source}")]
    StateDir {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("cannot lock {path}: {source}")]
    Lock {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("another sessionpipe daemon is running{}", pid.map(|p| format!(" (pid {p})")).unwrap_or_default())]
    Running { pid: Option<u32> },
    #[error("cannot open the outbox {path}: {source}")]
    Outbox {
        path: std::path::PathBuf,
        source: OutboxError,
    },
    #[error("cannot bind {path}: {source}")]
    Wake {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
}

/// How long a drain worker waits for the lock holder to either answer the wake
/// socket or exit, before leaving the jobs to whoever comes next.
const WORKER_PATIENCE: Duration = Duration::from_secs(30);
/// How long `sessionpipe daemon` retries the lock (a `status` may hold it shared
/// for a moment) before saying another daemon runs.
const START_PATIENCE: Duration = Duration::from_secs(1);
/// The spool is listed at least this often even without a wake.
const POLL: Duration = Duration::from_secs(1);
/// The sink list is read again this often (the CLI and the API change it).
const SINKS_REFRESH: Duration = Duration::from_secs(1);
/// At exit, how long what came in last may take to go out (not after a signal:
/// the spool and the outbox keep it for the next start).
const EXIT_DELIVERY: Duration = Duration::from_secs(5);
/// After a signal, how long blocking steps still running may take.
const SIGNAL_EXIT: Duration = Duration::from_millis(150);

/// Runs the daemon (or drain worker) in this process until it is done.
pub fn run(paths: &StatePaths, opts: &Options) -> Result<(), DaemonError> {
    paths.ensure().map_err(|source| DaemonError::StateDir {
        path: paths.root.clone(),
        source,
    })?;
    crate::logging::init();
    if opts.drain {
        crate::logging::to_file(&paths.log_file());
    }
    // A drain worker whose work another process will do, or an embedder's
    // daemon stopped before it had the lock.
    let Some(lock) = acquire_lock(paths, opts)? else {
        return Ok(());
    };
    // Everything in the state dir is this user's alone, whatever made it so far
    // (an older version, a folder made 0755 by hand).
    for (path, mode) in spool::files::not_private(&paths.root, true) {
        tracing::info!("{} was mode {mode:o}: made private", path.display());
    }
    crate::state::ui_file::remove_stale(paths);
    crate::state::losses::prepare(paths);
    let outbox = Outbox::open(&paths.outbox()).map_err(|source| DaemonError::Outbox {
        path: paths.outbox(),
        source,
    })?;
    let rt = crate::runtime::daemon().map_err(DaemonError::Runtime)?;
    let stopping = Arc::new(AtomicBool::new(false));
    let result = rt.block_on(serve(paths, opts, outbox, stopping.clone()));
    // Blocking steps still running (a hold worker's last read) finish within
    // their own short budgets; the lock is given up only after them.
    rt.shutdown_timeout(if stopping.load(Ordering::Relaxed) {
        SIGNAL_EXIT
    } else {
        Duration::from_secs(2)
    });
    drop(lock);
    result
}

/// Sets `stopping` at SIGTERM or SIGINT (or at the embedder's `stop`) and
/// wakes the ingest loop to see it.
async fn on_stop(stop: Option<Stop>, stopping: Arc<AtomicBool>, wake: std::path::PathBuf) {
    match stop {
        Some(stop) => {
            stop.asked_async().await;
            tracing::info!("stopping (asked by the program it runs in)");
        }
        None => match ended_by_signal().await {
            Ok(signal) => tracing::info!("stopping ({})", signal.name()),
            Err(e) => {
                tracing::warn!("cannot listen for signals ({e}): they end the daemon at once");
                return;
            }
        },
    }
    stopping.store(true, Ordering::Relaxed);
    spool::wake::poke(&wake);
}

/// Everything the daemon does while it holds the lock.
async fn serve(
    paths: &StatePaths,
    opts: &Options,
    outbox: Outbox,
    stopping: Arc<AtomicBool>,
) -> Result<(), DaemonError> {
    let signals = tokio::spawn(on_stop(
        opts.stop.clone(),
        stopping.clone(),
        paths.wake_socket(),
    ));
    let spool = Spool::of(paths);
    spool.sweep_stale_temps();
    let _ = outbox.prune_jobs_done(protocol::time::now_ms());
    // The settings in force for the daemon's life, every part reading the
    // same value as it changes (a file that does not read is said here).
    let config = opts
        .config
        .clone()
        .unwrap_or_else(|| LiveConfig::follow(paths));
    let machine = crate::state::machine_name::MachineName::live(config.clone());
    let mut ingest = Ingest::new(outbox, spool, machine);
    ingest.stop_when(stopping.clone());
    // A drain worker too: a session an ACP start named is named so whoever
    // ingests its hooks.
    ingest.name_by(Arc::new(crate::control::host::AcpNames));
    // Asks nothing unless the person turned remote titles on (read at each
    // hook call, so `titles on|off` needs no restart).
    sessionpipe_pool::endpoints::warn_if_pointed_elsewhere("remote titles and the account pool");
    ingest.ask_titles(Arc::new(crate::titles::Titles::following(config.clone())));
    // Followed, so turning them on or off needs no restart.
    ingest.send_turns_as_configured(config.clone(), paths.outbox());
    if let Some(dir) = std::env::var_os("SESSIONPIPE_JOB_ARCHIVE").filter(|d| !d.is_empty()) {
        let dir = std::path::PathBuf::from(dir);
        tracing::warn!(
            "SESSIONPIPE_JOB_ARCHIVE is set: every hook payload is kept in {}",
            dir.display()
        );
        ingest.keep_jobs_in(dir);
    }
    let ring = Ring::default();
    let rung = ring.clone();
    // A commit also wakes the pace watcher (a new `limits.observed` to read).
    let pace_bell = Arc::new(tokio::sync::Notify::new());
    let pace_rung = pace_bell.clone();
    ingest.ring_after_commit(move || {
        rung.ring();
        pace_rung.notify_one();
    });

    // Control: the hooks' socket and the receivers' long-polls (not in a drain
    // worker: it lives for seconds, and a hook that finds no socket is silent).
    let (hub, finals) = crate::control::hub::Hub::new();
    let hub = Arc::new(hub);
    // The local API's handle on control (the window's Stop).
    let mut control_handle = None;
    let control = if opts.drain {
        None
    } else {
        let told = hub.clone();
        ingest.tell_seen(move |took| {
            told.seen(
                took.calls
                    .into_iter()
                    .map(crate::control::host::hook_call)
                    .collect(),
            );
            told.passed(took.passed);
        });
        // What was verified before a restart is queued again before a hook
        // can ask the socket for it.
        let progress_events = ingest
            .local_events(paths.outbox())
            .map(|e| Arc::new(e) as Arc<dyn sessionpipe_control::host::ProgressEvents>);
        let host = Arc::new(crate::control::host::DaemonHost::new(paths, config.clone()));
        let opened = crate::control::run::open(paths, host, hub.clone(), progress_events).await;
        control_handle = opened.clone();
        let socket = bind_control_socket(paths, hub.clone(), opened.clone());
        let task =
            opened.map(|c| tokio::spawn(crate::control::run::run(c, finals, stopping.clone())));
        Some((socket, task))
    };

    // The account pool: nothing listens or is read until `pool.json` says
    // so (`pool add`, `pool on`). Not in a drain worker: it lives for seconds.
    let pool = (!opts.drain).then(|| {
        // Its `limits.observed` wake the pace watcher as a commit does.
        let rung = pace_bell.clone();
        let events = Arc::new(
            ingest
                .own_events(paths.outbox())
                .ring_after_append(move || rung.notify_one()),
        );
        crate::pool::service::PoolService::start(paths, config.clone(), events)
    });

    // Retention: events every sink took and past the window go, in small
    // batches. Not in a drain worker: it lives for seconds.
    let retention =
        (!opts.drain).then(|| tokio::spawn(crate::retention::run(paths.clone(), config.clone())));

    // Pace: a limit window that runs out before it resets, warned once.
    let pace = (!opts.drain).then(|| {
        let events = Arc::new(ingest.own_events(paths.outbox()));
        tokio::spawn(crate::pace::run(
            paths.clone(),
            config.clone(),
            events,
            pace_bell,
        ))
    });

    // Stdout sinks only where stdout is read (`stdout_sinks`).
    let sinks = Arc::new(tokio::sync::Mutex::new(Manager::new(
        paths.clone(),
        ring,
        stdout_sinks(opts),
    )));
    sinks.lock().await.refresh().await;
    let settled = Arc::new(AtomicBool::new(false));
    // A drain worker's exit waits on the sinks: it looks often.
    let tick = if opts.drain {
        Duration::from_millis(100)
    } else {
        SINKS_REFRESH
    };
    let refresher = tokio::spawn(refresh_sinks(sinks.clone(), settled.clone(), tick));

    // A drain worker serves no UI: it lives for seconds.
    let api = if opts.api && !opts.drain {
        let api_config = config.clone();
        match api::start(
            paths,
            opts.ui_dir.clone(),
            opts.api_port,
            api_config,
            Some(hub.clone()),
            control_handle,
        ) {
            Ok(api) if opts.ui_dir.is_some() => {
                tracing::info!(
                    "UI and API at {} (the token is in {})",
                    api.url,
                    paths.ui_file().display()
                );
                Some(api)
            }
            Ok(api) => {
                tracing::warn!("API at {}; {}", api.url, crate::state::ui_file::NO_UI_FILES);
                Some(api)
            }
            Err(e) => {
                tracing::warn!("the local API did not start: {e}");
                None
            }
        }
    } else {
        None
    };
    let wake = wake::Socket::bind(&paths.wake_socket()).map_err(|source| DaemonError::Wake {
        path: paths.wake_socket(),
        source,
    })?;
    // The same wake for clients without datagrams (OpenCode's plugin). Without
    // it they start drain workers, which this daemon's wake answers: slower,
    // never lost.
    let stream_wake =
        match stream_wake::StreamWake::bind(&paths.wake_stream_socket(), paths.wake_socket()) {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::warn!("the stream wake socket did not start: {e}");
                None
            }
        };
    if !opts.drain {
        tracing::info!("daemon running, state in {}", paths.root.display());
    }

    let loop_opts = opts.clone();
    let loop_settled = settled.clone();
    let loop_stopping = stopping.clone();
    let ingest = crate::runtime::blocking(move || {
        ingest_until_done(
            &mut ingest,
            &wake,
            &loop_opts,
            &loop_settled,
            &loop_stopping,
        );
        // Exit: stop answering wakes first, so a hook that writes a job from
        // now on starts a new worker (which waits for this lock); then take
        // what came in (after a signal, the next start takes it). Without
        // Unix sockets neither holds anything to close.
        #[cfg_attr(not(unix), allow(clippy::drop_non_drop))]
        {
            drop(stream_wake);
            drop(wake);
        }
        if !loop_stopping.load(Ordering::Relaxed)
            && let Err(e) = ingest.drain()
        {
            tracing::warn!("final drain failed, jobs stay spooled: {e}");
        }
        ingest
    })
    .await;
    drop(ingest);

    // What came in last goes out too, unless a sink waits out an error.
    let until = Instant::now() + EXIT_DELIVERY;
    while !stopping.load(Ordering::Relaxed)
        && !sinks.lock().await.settled()
        && Instant::now() < until
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    refresher.abort();
    signals.abort();
    if let Some(r) = retention {
        // A batch cut off rolls back whole; the next start prunes it.
        r.abort();
    }
    if let Some(p) = pace {
        // It appends a warning before pace.json says it was given: stopped
        // between the two, the next start may give it again, never loses it.
        p.abort();
    }
    if let Some(p) = pool {
        p.stop();
    }
    if let Some((socket, task)) = control {
        if let Some(t) = task {
            t.abort();
        }
        // Its Drop removes the socket's file (Windows has no socket: a `()`).
        #[cfg_attr(not(unix), allow(dropping_copy_types))]
        drop(socket);
    }
    let stop_api = async {
        if let Some(api) = api {
            api.stop().await;
        }
    };
    let stop_sinks = async { sinks.lock().await.stop().await };
    tokio::join!(stop_sinks, stop_api);
    Ok(())
}

#[cfg(unix)]
fn bind_control_socket(
    paths: &StatePaths,
    hub: Arc<crate::control::hub::Hub>,
    control: Option<Arc<crate::control::machine::Control>>,
) -> Option<crate::control::socket::Server> {
    let path = paths.control_socket();
    let bound =
        crate::state::socket_file::bind_private(&path, |p| tokio::net::UnixListener::bind(p));
    match bound {
        Ok(listener) => Some(crate::control::socket::Server::serve(
            &path, listener, hub, control,
        )),
        Err(e) => {
            tracing::warn!("the control socket did not start: {e}");
            None
        }
    }
}

#[cfg(not(unix))]
fn bind_control_socket(
    _: &StatePaths,
    _: Arc<crate::control::hub::Hub>,
    _: Option<Arc<crate::control::machine::Control>>,
) -> Option<()> {
    None
}

/// Keeps the sink tasks in line with `sinks.json`, and says every `tick` whether
/// they are all caught up (a drain worker's exit rule reads it).
async fn refresh_sinks(
    sinks: Arc<tokio::sync::Mutex<Manager>>,
    settled: Arc<AtomicBool>,
    tick: Duration,
) {
    let mut refreshed = Instant::now();
    loop {
        tokio::time::sleep(tick).await;
        let mut m = sinks.lock().await;
        if refreshed.elapsed() >= SINKS_REFRESH {
            m.refresh().await;
            refreshed = Instant::now();
        }
        settled.store(m.settled(), Ordering::Relaxed);
    }
}

/// The ingest loop: drains the spool at every wake (and every `POLL`), until a
/// drain worker has been idle for its `idle_exit`.
fn ingest_until_done(
    ingest: &mut Ingest,
    wake: &wake::Socket,
    opts: &Options,
    settled: &AtomicBool,
    stopping: &AtomicBool,
) {
    let mut last_work = Instant::now();
    while !stopping.load(Ordering::Relaxed) {
        let mut waiting = false;
        match ingest.drain() {
            Ok(r) => {
                if r.jobs > 0 {
                    last_work = Instant::now();
                }
                waiting = r.deferred > 0;
            }
            Err(e) => {
                tracing::warn!("ingest paused: {e}");
                wake.wait(POLL);
            }
        }
        if waiting {
            // A held turn has the session: come back as soon as it is given back.
            ingest.wait_for_sessions(Duration::from_millis(50));
            continue;
        }
        if opts.drain
            && ingest.idle()
            && settled.load(Ordering::Relaxed)
            && last_work.elapsed() >= opts.idle_exit
        {
            return;
        }
        let wait = if opts.drain {
            opts.idle_exit.min(POLL)
        } else {
            POLL
        };
        wake.wait(wait);
    }
}

/// Whether this process runs stdout sinks: not a drain worker (it has no
/// terminal and lives for seconds), and only when its stdout goes where a
/// person or a program reads it: a terminal, a pipe or a file. A daemon
/// started detached (stdout on /dev/null), by the app, or as a service (the
/// journal's socket) leaves them waiting rather than writing events away.
pub fn stdout_sinks(opts: &Options) -> bool {
    !opts.drain && stdout_is_read()
}

#[cfg(unix)]
fn stdout_is_read() -> bool {
    use std::io::IsTerminal;
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    let out = std::io::stdout();
    if out.is_terminal() {
        return true;
    }
    let Ok(fd) = out.as_fd().try_clone_to_owned() else {
        return false;
    };
    std::fs::File::from(fd)
        .metadata()
        .is_ok_and(|m| m.file_type().is_fifo() || m.file_type().is_file())
}

#[cfg(not(unix))]
fn stdout_is_read() -> bool {
    use std::io::IsTerminal;
    std::io::stdout().is_terminal()
}

/// Takes the daemon lock. `Ok(None)`: a drain worker that need not run, or a
/// daemon stopped by its embedder while it waited.
fn acquire_lock(paths: &StatePaths, opts: &Options) -> Result<Option<Lock>, DaemonError> {
    let mode = if opts.drain {
        Mode::Drain
    } else {
        Mode::Daemon
    };
    let started = Instant::now();
    loop {
        if opts.stop.as_ref().is_some_and(Stop::asked) {
            return Ok(None);
        }
        match lock::try_acquire(paths, mode, stdout_sinks(opts)) {
            Ok(Some(lock)) => return Ok(Some(lock)),
            Ok(None) => {}
            Err(source) => {
                return Err(DaemonError::Lock {
                    path: paths.daemon_lock(),
                    source,
                });
            }
        }
        if opts.drain {
            // Someone holds the lock. If it answers wakes it will take our job;
            // if it is a worker on its way out, wait for it to let go.
            if spool::wake::poke(&paths.wake_socket()) || started.elapsed() > WORKER_PATIENCE {
                return Ok(None);
            }
        } else if started.elapsed() > START_PATIENCE {
            // A drain worker lets go within seconds of the spool running dry.
            match lock::holder(paths) {
                Some(h) if h.mode == Mode::Drain && started.elapsed() < WORKER_PATIENCE => {}
                holder => {
                    return Err(DaemonError::Running {
                        pid: holder.map(|h| h.pid),
                    });
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
