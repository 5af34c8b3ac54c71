//! The asker remote titles hand the pipeline (`Titles`): whether the person
//! turned it on, which sessions have a remote name, and one ask bearing the
//! right config dir's sign-in (at the pool crate's `endpoints::api_base`).
//!
//! It owns wiring a session to its sign-in, turning an answer into a title
//! the pipeline may keep (through `secrets@1`), and the setting as the
//! pipeline reads it at every linked call, from the settings in force
//! (`LiveConfig`: a call with titles off costs a `stat`, not a parse). It must
//! not keep the sign-in past the one ask, nor log anything of it; a live ask
//! carries only whose sign-in to read, and reads it when it runs.

use super::ask;
use crate::pipeline::titles::{LiveAsk, RemoteTitles};
use crate::state::live_config::LiveConfig;
use harness::Adapter as _;
use harness::SessionFiles;
use harness::backfill::Backfilled;
use protocol::SessionBlock;
use sessionpipe_pool::claude_login as signin;
use spool::{Job, StatePaths};

/// The asker the daemon hands its pipeline, and `titles on|refresh` use.
pub struct Titles {
    api: String,
    /// The settings in force (`remote_titles`), looked at each call.
    config: LiveConfig,
}

impl Titles {
    /// An asker that follows `config.json` in `paths` by itself.
    pub fn new(paths: &StatePaths) -> Titles {
        Titles::following(LiveConfig::follow(paths))
    }

    /// An asker on the settings the daemon holds.
    pub fn following(config: LiveConfig) -> Titles {
        Titles {
            api: sessionpipe_pool::endpoints::api_base(),
            config,
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
        self.config.now().remote_titles
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

    use crate::state::config::Config;

    fn save(paths: &StatePaths, on: bool) {
        let mut config = Config::load(paths).unwrap();
        config.remote_titles = on;
        config.save(paths).unwrap();
    }

    /// (That an unchanged file is not read again is `LiveConfig`'s test.)
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
    }
}
