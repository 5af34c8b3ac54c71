//! The asker remote titles hand the pipeline (`Titles`): whether the person
//! turned it on, which sessions have a remote name, and one ask bearing the
//! right config dir's sign-in (at the pool crate's `endpoints::api_base`).
//!
//! It owns wiring a session to its sign-in, turning an answer into a title
//! the pipeline may keep (through `secrets@1`), and the setting as the
//! pipeline reads it at every linked call: re-read only when `config.json`
//! changed, so a call with titles off costs a `stat`, not a parse. It must
//! not keep the sign-in past the one ask, nor log anything of it; a live ask
//! carries only whose sign-in to read, and reads it when it runs.

use super::ask;
use crate::pipeline::titles::{LiveAsk, RemoteTitles};
use crate::state::config::Config;
use harness::Adapter as _;
use harness::SessionFiles;
use harness::backfill::Backfilled;
use protocol::SessionBlock;
use sessionpipe_pool::claude_login as signin;
use spool::{Job, StatePaths};
use std::sync::Mutex;

/// The asker the daemon hands its pipeline, and `titles on|refresh` use.
pub struct Titles {
    paths: StatePaths,
    api: String,
    /// The setting as last read, with the file it was read from.
    setting: Mutex<Option<Setting>>,
}

/// `remote_titles` as read from `config.json` when the file was as `seen`.
struct Setting {
    seen: Option<Seen>,
    on: bool,
}

/// What says `config.json` changed: every save replaces the file (a new
/// inode and change time), and its size and mtime move with a rewrite in
/// place; `None` is no file (the defaults: off).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Seen {
    modified: Option<std::time::SystemTime>,
    len: u64,
    #[cfg(unix)]
    inode: (u64, u64),
    #[cfg(unix)]
    changed: (i64, i64),
}

impl Seen {
    fn of(path: &std::path::Path) -> std::io::Result<Option<Seen>> {
        let m = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        #[cfg(unix)]
        use std::os::unix::fs::MetadataExt as _;
        Ok(Some(Seen {
            modified: m.modified().ok(),
            len: m.len(),
            #[cfg(unix)]
            inode: (m.dev(), m.ino()),
            #[cfg(unix)]
            changed: (m.ctime(), m.ctime_nsec()),
        }))
    }
}

impl Titles {
    pub fn new(paths: &StatePaths) -> Titles {
        Titles {
            paths: paths.clone(),
            api: sessionpipe_pool::endpoints::api_base(),
            setting: Mutex::default(),
        }
    }

    /// One ask, bearing `place`'s sign-in, within the ask's bound: the name,
    /// cleaned and through `secrets@1`, or `None` (each reason logged, none
    /// with the token in it).
    pub fn ask_at(&self, place: &signin::Place, remote_id: &str) -> Option<String> {
        ask_at(&self.api, place, remote_id)
    }
}

/// `Titles::ask_at`, for an ask that runs away from its `Titles` (a live
/// ask, on the pipeline's titles worker).
fn ask_at(api: &str, place: &signin::Place, remote_id: &str) -> Option<String> {
    let bearer = match signin::read(place, protocol::time::now_ms()) {
        Ok(b) => b,
        Err(e) => {
            tracing::info!("remote title of {remote_id} not asked: {e}");
            return None;
        }
    };
    // Asked from a thread that may sit on the daemon's blocking pool (a
    // `titles on` through the local API), where no runtime may be
    // started: a thread of its own runs the one request.
    let answer = std::thread::scope(|s| {
        s.spawn(|| crate::runtime::block_on(ask::title(api, &bearer, remote_id)))
            .join()
    });
    drop(bearer);
    match answer {
        Ok(Ok(Some(title))) => Some(redact::secrets(&title).into_owned()),
        Ok(Ok(None)) => None,
        Ok(Err(e)) => {
            tracing::info!("remote title of {remote_id}: {e}");
            None
        }
        Err(_) => {
            tracing::warn!("remote title of {remote_id}: the ask panicked");
            None
        }
    }
}

impl RemoteTitles for Titles {
    fn on(&self) -> bool {
        let path = self.paths.config();
        let seen = match Seen::of(&path) {
            Ok(s) => s,
            // Unreadable: what `Config::load` would make of it (off), unkept.
            Err(_) => return Config::load(&self.paths).is_ok_and(|c| c.remote_titles),
        };
        let mut setting = self.setting.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = setting.as_ref().filter(|s| s.seen == seen) {
            return s.on;
        }
        // A save between the look and the read is kept under the older
        // look, so the next call sees a change and reads it again.
        let on = Config::load(&self.paths).is_ok_and(|c| c.remote_titles);
        *setting = Some(Setting { seen, on });
        on
    }

    fn remote_id(&self, harness: &str, block: &SessionBlock) -> Option<String> {
        if harness != adapters::claude_code::ClaudeCode.name() {
            return None;
        }
        adapters::claude_code::claude_ai_session(block.url.as_deref()?).map(str::to_string)
    }

    fn live_ask(&self, job: &Job, files: &SessionFiles, remote_id: &str) -> Option<LiveAsk> {
        let (config_dir, named_by_env) = adapters::claude_code::config_dir_of(job, files)?;
        let place = signin::Place {
            config_dir,
            named_by_env,
        };
        let (api, remote_id) = (self.api.clone(), remote_id.to_string());
        // The sign-in is read when the ask runs, never kept in the ask.
        Some(Box::new(move || ask_at(&api, &place, &remote_id)))
    }

    fn ask_past(&self, past: &Backfilled, remote_id: &str) -> Option<String> {
        let config_dir = past.config_dir.as_deref()?;
        let set = std::env::var("CLAUDE_CONFIG_DIR").ok();
        let home = spool::paths::home_dir();
        let place = signin::Place::found(config_dir, set.as_deref(), home.as_deref());
        self.ask_at(&place, remote_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn save(paths: &StatePaths, on: bool) {
        let mut config = Config::load(paths).unwrap();
        config.remote_titles = on;
        config.save(paths).unwrap();
    }

    #[test]
    fn the_setting_is_read_again_only_once_the_file_changed() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        let titles = Titles::new(&paths);
        assert!(!titles.on(), "no file: the defaults");
        save(&paths, true);
        assert!(titles.on(), "seen from the next call");
        save(&paths, false);
        assert!(!titles.on());
        // Rewritten in place (no new inode), as a hand edit would.
        let text = std::fs::read_to_string(paths.config()).unwrap();
        std::fs::write(
            paths.config(),
            text.replace("\"remote_titles\": false", "\"remote_titles\": true"),
        )
        .unwrap();
        assert!(titles.on());

        // Unchanged, the file is not read again: the kept setting answers
        // even where it no longer matches what the file says.
        let seen = Seen::of(&paths.config()).unwrap();
        *titles.setting.lock().unwrap() = Some(Setting { seen, on: false });
        assert!(!titles.on(), "answered from what was kept");
        save(&paths, true);
        assert!(titles.on());
    }
}
