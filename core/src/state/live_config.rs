//! The settings in force, as a value that changes: `config.json` read again
//! when its stamp moves (one `stat` per look: modification time, length and,
//! on Unix, inode and change time), and the settings published on one watch
//! channel. The daemon holds one for its life and hands clones to every part
//! that reads a setting (ingest, control, the API, the workers), so a change
//! in the UI or the CLI reaches them all without a restart, and a file is
//! never read twice for one change.
//!
//! A file that does not read is reported once (the log, and `problem` for
//! `status`, `doctor` and the API while it stays so) and the last settings
//! that read stay in force; the defaults only until a file ever read. A
//! missing file is the defaults. It never writes the file (`Config::save`
//! does) and decides nothing about what a setting may be (`Config` does).

use super::config::Config;
use spool::StatePaths;
use std::path::Path;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// What says `config.json` changed: every save replaces the file (a new
/// inode and change time), and its size and mtime move with a rewrite in
/// place; `None` is no file (the defaults).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stamp {
    modified: Option<std::time::SystemTime>,
    len: u64,
    #[cfg(unix)]
    inode: (u64, u64),
    #[cfg(unix)]
    changed: (i64, i64),
}

impl Stamp {
    /// The file's stamp; `Ok(None)` when there is no file.
    pub fn of(path: &Path) -> std::io::Result<Option<Stamp>> {
        let m = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        #[cfg(unix)]
        use std::os::unix::fs::MetadataExt as _;
        Ok(Some(Stamp {
            modified: m.modified().ok(),
            len: m.len(),
            #[cfg(unix)]
            inode: (m.dev(), m.ino()),
            #[cfg(unix)]
            changed: (m.ctime(), m.ctime_nsec()),
        }))
    }
}

/// The settings in force, shared: clones follow the same file and channel.
#[derive(Clone)]
pub struct LiveConfig {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for LiveConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveConfig")
            .field("paths", &self.inner.paths)
            .finish_non_exhaustive()
    }
}

struct Inner {
    /// Where the file is; `None` for settings that never change (tests, and
    /// callers without a state dir).
    paths: Option<StatePaths>,
    tx: watch::Sender<Arc<Config>>,
    seen: Mutex<Seen>,
}

/// What the file was like at the last look.
#[derive(Default)]
struct Seen {
    /// `None` until the first look, and while the file cannot be looked at.
    stamp: Option<Option<Stamp>>,
    /// Why the file is not what is in force, while it does not read.
    problem: Option<String>,
}

impl LiveConfig {
    /// The settings `config.json` in `paths` gives, read now and followed.
    pub fn follow(paths: &StatePaths) -> LiveConfig {
        let live = LiveConfig {
            inner: Arc::new(Inner {
                paths: Some(paths.clone()),
                tx: watch::channel(Arc::new(Config::default())).0,
                seen: Mutex::default(),
            }),
        };
        live.look();
        live
    }

    /// Settings that never change.
    pub fn fixed(config: Config) -> LiveConfig {
        LiveConfig {
            inner: Arc::new(Inner {
                paths: None,
                tx: watch::channel(Arc::new(config)).0,
                seen: Mutex::default(),
            }),
        }
    }

    /// The settings in force now (the file looked at first: one `stat`, a
    /// read only when it changed).
    pub fn now(&self) -> Arc<Config> {
        self.look();
        self.inner.tx.borrow().clone()
    }

    /// Why `config.json` is not what is in force (it does not read), while
    /// that is so; the last settings that read are in force meanwhile.
    pub fn problem(&self) -> Option<String> {
        self.look();
        self.seen().problem.clone()
    }

    /// The settings as they change (each change the next look finds; a
    /// holder that only waits on this sees one when another part looked).
    pub fn subscribe(&self) -> watch::Receiver<Arc<Config>> {
        self.inner.tx.subscribe()
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.inner.seen.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reads the file again when its stamp moved.
    fn look(&self) {
        let Some(paths) = &self.inner.paths else {
            return;
        };
        let path = paths.config();
        let mut seen = self.seen();
        let stamp = match Stamp::of(&path) {
            Ok(s) => s,
            Err(e) => {
                // Not even looked at: what is in force stays, said once.
                let why = format!("cannot look at {}: {e}", path.display());
                report(&mut seen, why);
                seen.stamp = None;
                return;
            }
        };
        if seen.stamp.as_ref() == Some(&stamp) {
            return;
        }
        // A save between the look and the read is kept under the older
        // stamp, so the next look sees a change and reads it again.
        seen.stamp = Some(stamp);
        match Config::load(paths) {
            Ok(config) => {
                if seen.problem.take().is_some() {
                    tracing::info!("{} reads again: its settings are in force", path.display());
                }
                self.inner.tx.send_if_modified(|now| {
                    let changed = **now != config;
                    if changed {
                        *now = Arc::new(config);
                    }
                    changed
                });
            }
            Err(e) => report(&mut seen, e.to_string()),
        }
    }
}

/// Keeps why the file is not in force, and logs it the first time.
fn report(seen: &mut Seen, why: String) {
    if seen.problem.as_deref() != Some(why.as_str()) {
        tracing::warn!("{why}; the last settings that read stay in force");
        seen.problem = Some(why);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths() -> (tempfile::TempDir, StatePaths) {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        paths.ensure().unwrap();
        (dir, paths)
    }

    #[test]
    fn a_change_is_in_force_at_the_next_look_and_told_to_every_holder() {
        let (_dir, paths) = paths();
        let live = LiveConfig::follow(&paths);
        assert_eq!(*live.now(), Config::default(), "no file: the defaults");
        let mut told = live.clone().subscribe();
        let config = Config {
            local_approvals: true,
            ..Config::default()
        };
        config.save(&paths).unwrap();
        assert!(live.now().local_approvals);
        assert!(told.has_changed().unwrap(), "told on the channel");
        assert!(told.borrow_and_update().local_approvals);
        // Rewritten in place (no new inode), as a hand edit would.
        let text = std::fs::read_to_string(paths.config()).unwrap();
        std::fs::write(
            paths.config(),
            text.replace("\"local_approvals\": true", "\"local_approvals\": false"),
        )
        .unwrap();
        assert!(!live.now().local_approvals);
        assert_eq!(live.problem(), None);
    }

    /// A broken file is reported, and the settings that read last stay;
    /// once it reads again it is in force and nothing is reported.
    #[test]
    fn a_broken_file_is_reported_and_the_last_good_settings_stay() {
        let (_dir, paths) = paths();
        let good = Config {
            control_folders: vec!["/w".into()],
            control_mode: Some("auto".into()),
            ..Config::default()
        };
        good.save(&paths).unwrap();
        let live = LiveConfig::follow(&paths);
        assert_eq!(*live.now(), good);
        std::fs::write(paths.config(), "{\"control_mode\": \"auto\",").unwrap();
        assert_eq!(*live.now(), good, "the last good settings stay in force");
        let problem = live.problem().unwrap();
        assert!(problem.contains("config.json is damaged"), "{problem}");
        assert_eq!(live.problem().as_deref(), Some(problem.as_str()));
        let fixed = Config {
            control_mode: Some("safe".into()),
            ..good.clone()
        };
        fixed.save(&paths).unwrap();
        assert_eq!(*live.now(), fixed);
        assert_eq!(live.problem(), None);
    }

    #[test]
    fn a_file_broken_from_the_start_leaves_the_defaults_and_says_why() {
        let (_dir, paths) = paths();
        std::fs::write(paths.config(), "not json").unwrap();
        let live = LiveConfig::follow(&paths);
        assert_eq!(*live.now(), Config::default());
        assert!(live.problem().is_some());
    }

    /// Unchanged, the file is not read again: what is in force answers even
    /// where it no longer matches what the file says.
    #[test]
    fn an_unchanged_file_is_not_read_again() {
        let (_dir, paths) = paths();
        Config {
            remote_titles: true,
            ..Config::default()
        }
        .save(&paths)
        .unwrap();
        let live = LiveConfig::follow(&paths);
        assert!(live.now().remote_titles);
        live.inner.tx.send_replace(Arc::new(Config::default()));
        assert!(!live.now().remote_titles, "answered from what was kept");
        Config {
            remote_titles: true,
            ..Config::default()
        }
        .save(&paths)
        .unwrap();
        assert!(live.now().remote_titles);
        assert_eq!(
            *LiveConfig::fixed(Config::default()).now(),
            Config::default()
        );
    }
}
