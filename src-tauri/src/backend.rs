//! The daemon behind the app: embedded in a thread of this process, or attached
//! to a `sessionpipe daemon` that already holds the per-user lock.
//!
//! Owns the supervisor thread, which runs `sessionpipe_core::daemon::run` (API on,
//! serving the UI's files) whenever the lock is free, and otherwise waits and tries
//! again, so the app takes over within seconds when the daemon it attached to goes
//! away (a drain worker started by a hook lets go of the lock on its own once the
//! spool is empty). Owns reading who holds the lock and where that daemon's UI is,
//! and stopping the embedded daemon when the app ends (the app, not the daemon,
//! owns the process's signals: `app`).
//!
//! Must not ingest, decide or deliver anything itself (the core's daemon does), nor
//! talk to another daemon except through the state dir's files (`daemon.lock`,
//! `ui.json`), the same way `sessionpipe status` and `sessionpipe ui` do.

use sessionpipe_core::daemon::{self, Stop};
use sessionpipe_core::spool::StatePaths;
use sessionpipe_core::state::lock::{self, Holder, Mode};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How often the supervisor looks whether the lock became free.
const RETRY: Duration = Duration::from_secs(2);

/// Who runs the daemon the app shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Link {
    /// This process (the supervisor's thread holds the lock).
    Embedded,
    /// A `sessionpipe daemon` in another process.
    Attached { pid: u32 },
    /// No daemon yet, or a drain worker finishing the spool before the app takes
    /// over.
    Starting,
}

pub use sessionpipe_core::state::ui_file::UiAddress;

/// The supervisor thread, seen from the app: the way to stop it.
pub struct Backend {
    stop: Stop,
}

impl Backend {
    /// Stops the embedded daemon as SIGTERM stops `sessionpipe daemon`
    /// (between two batches, within `daemon::STOP_BOUND`), or the wait for
    /// the lock; the supervisor's `ended` follows.
    pub fn stop(&self) {
        self.stop.stop();
    }
}

/// Starts the supervisor thread: the daemon runs in it while this process holds
/// the lock, which is for the rest of the app's life once it has it, until
/// `Backend::stop`. `ended` is called once the thread is over (also if it
/// could not start or panicked).
pub fn start(
    paths: StatePaths,
    ui_dir: Option<PathBuf>,
    ended: impl FnOnce() + Send + 'static,
) -> Backend {
    let stop = Stop::new();
    let opts = daemon::Options {
        api: true,
        ui_dir,
        stop: Some(stop.clone()),
        config: Some(crate::prefs::live(&paths)),
        ..Default::default()
    };
    let on_end = OnEnd(Some(Box::new(ended)));
    let supervisor_stop = stop.clone();
    let spawned = std::thread::Builder::new()
        .name("daemon".into())
        .spawn(move || {
            let _on_end = on_end;
            supervise(&paths, &opts, &supervisor_stop);
        });
    if let Err(e) = spawned {
        tracing::warn!("cannot start the daemon's thread: {e}");
    }
    Backend { stop }
}

/// Calls its function when dropped: at the supervisor's end, however it ends.
struct OnEnd(Option<Box<dyn FnOnce() + Send>>);

impl Drop for OnEnd {
    fn drop(&mut self) {
        if let Some(ended) = self.0.take() {
            ended();
        }
    }
}

fn supervise(paths: &StatePaths, opts: &daemon::Options, stop: &Stop) {
    let me = std::process::id();
    let mut said = None::<String>;
    let mut say = |what: String| {
        if said.as_ref() != Some(&what) {
            tracing::info!("{what}");
            said = Some(what);
        }
    };
    while !stop.asked() {
        if let Some(Holder { pid, mode, .. }) = lock::holder(paths)
            && mode == Mode::Daemon
            && pid != me
        {
            say(format!(
                "attached to the sessionpipe daemon running as pid {pid}; taking over when it stops"
            ));
            stop.wait_timeout(RETRY);
            continue;
        }
        // Blocks for as long as this process holds the lock (the app's life,
        // until the stop). A drain worker holding it is waited out inside;
        // another daemon that got the lock first makes it return at once with
        // the reason.
        match daemon::run(paths, opts) {
            Ok(()) => say("the embedded daemon stopped".into()),
            Err(e) => say(format!("the embedded daemon did not start: {e}")),
        }
        stop.wait_timeout(RETRY);
    }
}

/// Who holds the daemon lock now.
pub fn link(paths: &StatePaths) -> Link {
    match lock::holder(paths) {
        Some(Holder {
            pid,
            mode: Mode::Daemon,
            ..
        }) => {
            if pid == std::process::id() {
                Link::Embedded
            } else {
                Link::Attached { pid }
            }
        }
        _ => Link::Starting,
    }
}

/// The running daemon's UI, when one serves it (`ui.json`, believed only while
/// its daemon holds the lock).
pub fn ui_address(paths: &StatePaths) -> Option<UiAddress> {
    sessionpipe_core::state::ui_file::current(paths)
}

/// The UI's built files for the embedded daemon to serve: `$SESSIONPIPE_UI_DIR`,
/// else beside the binary (`../share/sessionpipe/ui`, as the deb installs it),
/// else in the app's resources (`ui/` in the .app's `Resources`, or beside the
/// exe on Windows, where the bundler puts them), else, in a debug build, the
/// repository's `ui/dist`.
pub fn ui_dir() -> Option<PathBuf> {
    let has_index = |d: &Path| d.join("index.html").is_file();
    if let Some(dir) = sessionpipe_core::cli::default_ui_dir() {
        return Some(dir);
    }
    let exe_dir = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf));
    let resources = if cfg!(target_os = "macos") {
        exe_dir.map(|d| d.join("../Resources"))
    } else {
        exe_dir
    };
    if let Some(dir) = resources.map(|r| r.join("ui")).filter(|d| has_index(d)) {
        return Some(dir);
    }
    if cfg!(debug_assertions) {
        let dev = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui/dist");
        if has_index(&dev) {
            return Some(dev);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_daemon_no_address() {
        let dir = std::env::temp_dir().join(format!("sp-app-backend-{}", std::process::id()));
        let paths = StatePaths::new(&dir);
        paths.ensure().unwrap();
        std::fs::write(
            dir.join("ui.json"),
            r#"{"url":"http://127.0.0.1:1","token":"t"}"#,
        )
        .unwrap();
        // A ui.json with nobody holding the lock is a dead daemon's.
        assert_eq!(link(&paths), Link::Starting);
        assert_eq!(ui_address(&paths), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
