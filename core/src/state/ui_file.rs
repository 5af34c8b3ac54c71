//! `ui.json`: where the running daemon's UI and API answer, and their token
//! (0600). The daemon writes it when its API starts; `sessionpipe ui`, the app's
//! tray and window read it. Owns that file's shape and when it is believed: only
//! while a daemon (not a drain worker) holds the lock, and only when written
//! after that daemon took it (an older file is a previous daemon's).
//!
//! Also `ui-saved.json` (0600): the port and token the API had, so the next
//! daemon answers at the same address with the same token and a bookmarked
//! link keeps working; `sessionpipe ui --new-token` replaces the token.

use super::lock::{self, Mode};
use serde::{Deserialize, Serialize};
use spool::StatePaths;
use std::path::Path;
use std::time::SystemTime;

/// What a daemon without the UI's files serves, and how to get them.
pub const NO_UI_FILES: &str = "this daemon serves the API only: the UI's files were not found (build them with `npm ci && npm run build` at the repo root and start the daemon with `--ui ui/dist`, or install the package, which has them)";

/// Where the daemon's UI is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UiAddress {
    /// `http://127.0.0.1:PORT`
    pub url: String,
    pub token: String,
    /// Whether the daemon serves the UI's files there (else the API alone).
    #[serde(default = "serves_ui")]
    pub ui: bool,
}

fn serves_ui() -> bool {
    true
}

/// The address the API keeps across restarts (`ui-saved.json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedAddress {
    pub port: u16,
    pub token: String,
}

impl SavedAddress {
    fn path(paths: &StatePaths) -> std::path::PathBuf {
        paths.root.join("ui-saved.json")
    }

    /// The kept address; none when there is none (or it is damaged: a new
    /// token is no loss, only a link to make again).
    pub fn load(paths: &StatePaths) -> Option<SavedAddress> {
        super::file::load(&SavedAddress::path(paths)).ok().flatten()
    }

    pub fn save(&self, paths: &StatePaths) -> Result<(), super::file::FileError> {
        super::file::save(&SavedAddress::path(paths), self)
    }
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

    /// Writes the file (private, atomic).
    pub fn save(&self, paths: &StatePaths) -> Result<(), super::file::FileError> {
        super::file::save(&paths.ui_file(), self)
    }

    /// Removes the file at the daemon's exit, when it is still this address's
    /// (a newer daemon's file stays).
    pub fn remove_if_current(&self, paths: &StatePaths) {
        let file = paths.ui_file();
        if super::file::load::<UiAddress>(&file)
            .ok()
            .flatten()
            .as_ref()
            == Some(self)
        {
            let _ = std::fs::remove_file(file);
        }
    }
}

/// Writes `ui-open.html` (0600 in the 0700 state dir): a page that goes on to
/// `page` at once, for a browser to be opened on. The page's token rides in
/// the file, not on a command line another user's `ps` would show.
pub fn open_page_file(paths: &StatePaths, page: &str) -> std::io::Result<std::path::PathBuf> {
    let html_escaped = page
        .replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;");
    let html = format!(
        "<!doctype html><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"0;url={html_escaped}\"><title>sessionpipe</title><a href=\"{html_escaped}\">Open sessionpipe</a>\n"
    );
    let path = paths.root.join("ui-open.html");
    spool::files::write_private_file(&path, html.as_bytes())?;
    Ok(path)
}

/// Removes a file left by a daemon that did not exit cleanly: called by the
/// daemon that holds the lock now, before its API starts.
pub fn remove_stale(paths: &StatePaths) {
    let _ = std::fs::remove_file(paths.ui_file());
}

/// The running daemon's UI, when a daemon holds the lock and wrote this file
/// after it took the lock.
pub fn current(paths: &StatePaths) -> Option<UiAddress> {
    let holder = lock::holder(paths)?;
    if holder.mode != Mode::Daemon {
        return None;
    }
    let file = paths.ui_file();
    if modified(&file)? < modified(&paths.daemon_lock())? {
        return None;
    }
    let mut address: UiAddress = super::file::load(&file).ok()??;
    address.url = address.url.trim_end_matches('/').to_string();
    Some(address)
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Percent-encodes what could end a fragment parameter (`&`, `#`, `%`, spaces...);
/// the UI reads the fragment with `URLSearchParams`, which decodes it.
fn fragment_escape(s: &str) -> String {
    harness::api::percent_encoded(s, b"-_.~:")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_carries_token_and_session_in_the_fragment() {
        let addr = UiAddress {
            url: "http://127.0.0.1:4000".into(),
            token: "ab12".into(),
            ui: true,
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
    fn a_file_is_believed_only_while_its_daemon_holds_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        let addr = UiAddress {
            url: "http://127.0.0.1:1/".into(),
            token: "t".into(),
            ui: true,
        };
        addr.save(&paths).unwrap();
        assert_eq!(current(&paths), None, "nobody holds the lock");
        let drain = lock::try_acquire(&paths, Mode::Drain, false)
            .unwrap()
            .unwrap();
        assert_eq!(current(&paths), None, "a drain worker serves no UI");
        drop(drain);
        let _daemon = lock::try_acquire(&paths, Mode::Daemon, false)
            .unwrap()
            .unwrap();
        assert_eq!(
            current(&paths),
            None,
            "written before this daemon took the lock"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
        addr.save(&paths).unwrap();
        assert_eq!(current(&paths).unwrap().url, "http://127.0.0.1:1");
    }
}
