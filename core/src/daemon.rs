//! The daemon's life: one per user (an exclusive lock on `daemon.lock`), a wake
//! socket the hook pokes, and the ingest loop.
//!
//! Two modes share this code. `sessionpipe daemon` runs until killed. The drain
//! worker (`daemon --drain`), started by a hook that found no daemon, takes the
//! spool and exits once idle, so events are never stranded while the app is
//! closed. The order of start (lock, bind, drain) and of exit (unbind, drain,
//! unlock) is what guarantees that a job written while a worker exits is taken by
//! that worker or by the next one the hook starts.

use crate::ingest::Ingest;
use crate::outbox::Outbox;
use crate::paths::StatePaths;
use crate::spool::Spool;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
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
}

impl Default for Options {
    fn default() -> Self {
        Options {
            drain: false,
            idle_exit: Duration::from_secs(2),
            api: false,
            api_port: 0,
            ui_dir: None,
        }
    }
}

/// How long a drain worker waits for the lock holder to either answer the wake
/// socket or exit, before leaving the jobs to whoever comes next.
const WORKER_PATIENCE: Duration = Duration::from_secs(30);
/// How long `sessionpipe daemon` retries the lock (a `status` may hold it shared
/// for a moment) before saying another daemon runs.
const START_PATIENCE: Duration = Duration::from_secs(1);
/// The spool is listed at least this often even without a wake.
const POLL: Duration = Duration::from_secs(1);

/// Who holds the daemon lock, if anyone: `(pid, mode)` as the holder wrote them.
pub fn running(paths: &StatePaths) -> Option<(u32, String)> {
    let mut file = File::open(paths.daemon_lock()).ok()?;
    match file.try_lock_shared() {
        Ok(()) => {
            let _ = file.unlock();
            None
        }
        Err(_) => {
            let mut text = String::new();
            file.read_to_string(&mut text).ok()?;
            let mut parts = text.split_whitespace();
            let pid = parts.next()?.parse().ok()?;
            Some((pid, parts.next().unwrap_or("daemon").to_string()))
        }
    }
}

/// Runs the daemon (or drain worker) in this process until it is done.
pub fn run(paths: &StatePaths, opts: &Options) -> Result<(), String> {
    paths
        .ensure()
        .map_err(|e| format!("cannot create {}: {e}", paths.root.display()))?;
    if opts.drain {
        crate::log::to_file(&paths.log_file());
    }
    let Some(lock) = acquire_lock(paths, opts)? else {
        return Ok(()); // a drain worker whose work another process will do
    };
    let outbox = Outbox::open(&paths.outbox())
        .map_err(|e| format!("cannot open the outbox {}: {e}", paths.outbox().display()))?;
    let spool = Spool::new(paths.spool(), paths.quarantine());
    spool.sweep_stale_temps();
    let _ = outbox.prune_jobs_done(crate::time::now_ms());
    let config = crate::config::Config::load(&paths.root).unwrap_or_else(|e| {
        crate::log::warn(&format!("{e}; using the defaults"));
        Default::default()
    });
    let machine = config
        .machine
        .clone()
        .unwrap_or_else(crate::ingest::machine_name);
    let mut ingest = Ingest::new(outbox, spool, machine);
    if config.transcripts {
        ingest.send_turns(paths.outbox());
    }
    if let Some(dir) = std::env::var_os("SESSIONPIPE_JOB_ARCHIVE").filter(|d| !d.is_empty()) {
        let dir = std::path::PathBuf::from(dir);
        crate::log::warn(&format!(
            "SESSIONPIPE_JOB_ARCHIVE is set: every hook payload is kept in {}",
            dir.display()
        ));
        ingest.keep_jobs_in(dir);
    }
    let notify = std::sync::Arc::new(crate::sinks::deliver::Notify::default());
    ingest.ring_after_commit(notify.clone());
    // A drain worker has no terminal: stdout sinks wait for a daemon.
    let mut sinks = crate::sinks::deliver::Manager::new(paths.clone(), notify, !opts.drain);
    sinks.refresh();
    // A drain worker serves no UI: it lives for seconds.
    let api = match (opts.api && !opts.drain)
        .then(|| crate::api::start(paths, opts.ui_dir.clone(), opts.api_port))
    {
        Some(Ok(api)) => {
            crate::log::info(&format!(
                "UI and API at {} (the token is in {})",
                api.url,
                paths.root.join("ui.json").display()
            ));
            Some(api)
        }
        Some(Err(e)) => {
            crate::log::warn(&format!("the local API did not start: {e}"));
            None
        }
        None => None,
    };
    let wake = wake::Socket::bind(&paths.wake_socket())
        .map_err(|e| format!("cannot bind {}: {e}", paths.wake_socket().display()))?;
    if !opts.drain {
        crate::log::info(&format!(
            "daemon running, state in {}",
            paths.root.display()
        ));
    }

    let mut last_work = Instant::now();
    loop {
        let mut waiting = false;
        match ingest.drain() {
            Ok(r) => {
                if r.jobs > 0 {
                    last_work = Instant::now();
                }
                waiting = r.deferred > 0;
            }
            Err(e) => {
                crate::log::warn(&format!("ingest paused: {e}"));
                std::thread::sleep(POLL);
            }
        }
        if waiting {
            // A held turn has the session: come back as soon as it is given back.
            ingest.wait_for_sessions(Duration::from_millis(50));
            continue;
        }
        sinks.refresh();
        if opts.drain && ingest.idle() && sinks.settled() && last_work.elapsed() >= opts.idle_exit {
            break;
        }
        let wait = if opts.drain {
            opts.idle_exit.min(POLL)
        } else {
            POLL
        };
        wake.wait(wait);
    }

    // Exit: stop answering wakes first, so a hook that writes a job from now on
    // starts a new worker (which waits for this lock); then take what came in.
    drop(wake);
    if let Err(e) = ingest.drain() {
        crate::log::warn(&format!("final drain failed, jobs stay spooled: {e}"));
    }
    // What came in last goes out too, unless a sink waits out an error.
    let until = Instant::now() + Duration::from_secs(5);
    while !sinks.settled() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    sinks.stop();
    drop(api);
    drop(lock);
    Ok(())
}

/// Takes the daemon lock. `Ok(None)`: a drain worker that need not run.
fn acquire_lock(paths: &StatePaths, opts: &Options) -> Result<Option<File>, String> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let path = paths.daemon_lock();
    let mut file = options
        .open(&path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let started = Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(TryLockError::WouldBlock) => {}
            Err(TryLockError::Error(e)) => {
                return Err(format!("cannot lock {}: {e}", path.display()));
            }
        }
        if opts.drain {
            // Someone holds the lock. If it answers wakes it will take our job;
            // if it is a worker on its way out, wait for it to let go.
            if wake::poke(&paths.wake_socket()) || started.elapsed() > WORKER_PATIENCE {
                return Ok(None);
            }
        } else if started.elapsed() > START_PATIENCE {
            // A drain worker lets go within seconds of the spool running dry.
            match running(paths) {
                Some((_, mode)) if mode == "drain" && started.elapsed() < WORKER_PATIENCE => {}
                holder => {
                    let pid = holder
                        .map(|(pid, _)| format!(" (pid {pid})"))
                        .unwrap_or_default();
                    return Err(format!("another sessionpipe daemon is running{pid}"));
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let mode = if opts.drain { "drain" } else { "daemon" };
    let _ = file.set_len(0);
    let _ = file.rewind();
    let _ = writeln!(file, "{} {mode}", std::process::id());
    let _ = file.flush();
    Ok(Some(file))
}

/// The wake socket: a datagram socket the hook sends one byte to.
mod wake {
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    #[cfg(unix)]
    pub struct Socket {
        sock: std::os::unix::net::UnixDatagram,
        path: PathBuf,
    }

    #[cfg(unix)]
    impl Socket {
        pub fn bind(path: &Path) -> std::io::Result<Socket> {
            use std::os::unix::fs::PermissionsExt;
            // We hold the lock, so a socket file here is a dead daemon's.
            let _ = std::fs::remove_file(path);
            let sock = std::os::unix::net::UnixDatagram::bind(path)?;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
            Ok(Socket {
                sock,
                path: path.to_path_buf(),
            })
        }

        /// Waits up to `timeout` for a wake, then swallows any others queued.
        pub fn wait(&self, timeout: Duration) {
            let mut buf = [0u8; 16];
            let _ = self.sock.set_read_timeout(Some(timeout));
            if self.sock.recv(&mut buf).is_ok() && self.sock.set_nonblocking(true).is_ok() {
                while self.sock.recv(&mut buf).is_ok() {}
                let _ = self.sock.set_nonblocking(false);
            }
        }
    }

    #[cfg(unix)]
    impl Drop for Socket {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.path);
        }
    }

    /// True when a daemon answers at `path`.
    #[cfg(unix)]
    pub fn poke(path: &Path) -> bool {
        let Ok(sock) = std::os::unix::net::UnixDatagram::unbound() else {
            return false;
        };
        let _ = sock.set_nonblocking(true);
        match sock.send_to(b"j", path) {
            Ok(_) => true,
            Err(e) => e.kind() == std::io::ErrorKind::WouldBlock,
        }
    }

    /// Without datagram sockets the daemon lists the spool on a short timer.
    #[cfg(not(unix))]
    pub struct Socket;

    #[cfg(not(unix))]
    impl Socket {
        pub fn bind(_path: &Path) -> std::io::Result<Socket> {
            Ok(Socket)
        }
        pub fn wait(&self, timeout: Duration) {
            std::thread::sleep(timeout.min(Duration::from_millis(100)));
        }
    }

    #[cfg(not(unix))]
    pub fn poke(_path: &Path) -> bool {
        false
    }
}
