//! The daemon behind the app: embedded in a thread of this process, or attached
//! to a `sessionpipe daemon` that already holds the per-user lock.
//!
//! Owns the supervisor thread, which runs `sessionpipe_core::daemon::run` (API on,
//! serving the UI's files) whenever the lock is free, and otherwise waits and tries
//! again, so the app takes over within seconds when the daemon it attached to goes
//! away (a drain worker started by a hook lets go of the lock on its own once the
//! spool is empty). Owns reading who holds the lock and where that daemon's UI is.
//!
//! Must not ingest, decide or deliver anything itself (the core's daemon does), nor
//! talk to another daemon except through the state dir's files (`daemon.lock`,
//! `ui.json`), the same way `sessionpipe status` and `sessionpipe ui` do.

use sessionpipe_core::daemon;
use sessionpipe_core::spool::StatePaths;
use sessionpipe_core::state::lock::{self, Holder, Mode};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

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

/// Where the daemon's UI is: `ui.json` in the state dir.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UiAddress {
    /// `http://127.0.0.1:PORT`
    pub url: String,
    pub token: String,
}

impl UiAddress {
    /// The UI's page, on one session (`harness:id`) when given. The token and the
    /// session ride in the fragment, which the browser never sends.
    pub fn page(&self, session: Option<&str>) -> String {
        let mut page = format!("{}/#token={}", self.url, fragment_escape(&self.token));
        if let Some(key) = session {
            page.push_str("&session=");
            page.push_str(&fragment_escape(key));
        }
        page
    }
}

/// Percent-encodes what could end a fragment parameter (`&`, `#`, `%`, spaces...);
/// the UI reads the fragment with `URLSearchParams`, which decodes it.
fn fragment_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b':') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Starts the supervisor thread: the daemon runs in it while this process holds
/// the lock, which is for the rest of the app's life once it has it.
pub fn start(paths: StatePaths, ui_dir: Option<PathBuf>) {
    let opts = daemon::Options {
        api: true,
        ui_dir,
        ..Default::default()
    };
    let spawned = std::thread::Builder::new()
        .name("daemon".into())
        .spawn(move || supervise(&paths, &opts));
    if let Err(e) = spawned {
        tracing::warn!("cannot start the daemon's thread: {e}");
    }
}

fn supervise(paths: &StatePaths, opts: &daemon::Options) {
    let me = std::process::id();
    let mut said = None::<String>;
    let mut say = |what: String| {
        if said.as_ref() != Some(&what) {
            tracing::info!("{what}");
            said = Some(what);
        }
    };
    loop {
        if let Some(Holder { pid, mode }) = lock::holder(paths)
            && mode == Mode::Daemon
            && pid != me
        {
            say(format!(
                "attached to the sessionpipe daemon running as pid {pid}; taking over when it stops"
            ));
            std::thread::sleep(RETRY);
            continue;
        }
        // Blocks for as long as this process holds the lock (the app's life). A
        // drain worker holding it is waited out inside; another daemon that got
        // the lock first makes it return at once with the reason.
        match daemon::run(paths, opts) {
            Ok(()) => say("the embedded daemon stopped".into()),
            Err(e) => say(format!("the embedded daemon did not start: {e}")),
        }
        std::thread::sleep(RETRY);
    }
}

/// Who holds the daemon lock now.
pub fn link(paths: &StatePaths) -> Link {
    match lock::holder(paths) {
        Some(Holder {
            pid,
            mode: Mode::Daemon,
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

/// The running daemon's UI, when one serves it: `ui.json` as written by the lock
/// holder. A `ui.json` older than the lock's record is a previous daemon's (the
/// holder runs without its API), so it is not an address.
pub fn ui_address(paths: &StatePaths) -> Option<UiAddress> {
    if link(paths) == Link::Starting {
        return None;
    }
    let file = paths.root.join("ui.json");
    if modified(&file)? < modified(&paths.daemon_lock())? {
        return None;
    }
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).ok()?).ok()?;
    Some(UiAddress {
        url: doc.get("url")?.as_str()?.trim_end_matches('/').to_string(),
        token: doc.get("token")?.as_str()?.to_string(),
    })
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
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
    fn the_page_carries_token_and_session_in_the_fragment() {
        let addr = UiAddress {
            url: "http://127.0.0.1:4000".into(),
            token: "ab12".into(),
        };
        assert_eq!(addr.page(None), "http://127.0.0.1:4000/#token=ab12");
        assert_eq!(
            addr.page(Some("claude-code:834104cf-a9d5")),
            "http://127.0.0.1:4000/#token=ab12&session=claude-code:834104cf-a9d5"
        );
        assert_eq!(
            addr.page(Some("codex:a&b#c d")),
            "http://127.0.0.1:4000/#token=ab12&session=codex:a%26b%23c%20d"
        );
    }

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
