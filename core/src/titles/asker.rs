//! The asker remote titles hand the pipeline (`Titles`): whether the person
//! turned it on, which sessions have a remote name, and one ask bearing the
//! right config dir's sign-in; and where the API is (`SESSIONPIPE_ANTHROPIC_API`
//! for tests, with its warning).
//!
//! It owns wiring a session to its sign-in and turning an answer into a title
//! the pipeline may keep (through `secrets@1`). It must not keep the sign-in
//! past the one ask, nor log anything of it.

use super::{ask, signin};
use crate::pipeline::titles::RemoteTitles;
use crate::state::config::Config;
use harness::Adapter as _;
use harness::SessionFiles;
use harness::backfill::Backfilled;
use protocol::SessionBlock;
use spool::{Job, StatePaths};

/// The vendor API unless `SESSIONPIPE_ANTHROPIC_API` points elsewhere (tests).
pub const ANTHROPIC_API: &str = "https://api.anthropic.com";
pub const API_VAR: &str = "SESSIONPIPE_ANTHROPIC_API";

/// The API base remote titles ask, without a trailing `/`.
pub fn api_base() -> String {
    match std::env::var(API_VAR) {
        Ok(v) if !v.is_empty() => v.trim_end_matches('/').to_string(),
        _ => ANTHROPIC_API.to_string(),
    }
}

/// The asker the daemon hands its pipeline, and `titles on|refresh` use.
pub struct Titles {
    paths: StatePaths,
    api: String,
}

impl Titles {
    pub fn new(paths: &StatePaths) -> Titles {
        Titles {
            paths: paths.clone(),
            api: api_base(),
        }
    }

    /// One ask, bearing `place`'s sign-in, within the ask's bound: the name,
    /// cleaned and through `secrets@1`, or `None` (each reason logged, none
    /// with the token in it).
    pub fn ask_at(&self, place: &signin::Place, remote_id: &str) -> Option<String> {
        let bearer = match signin::read(place, protocol::time::now_ms()) {
            Ok(b) => b,
            Err(e) => {
                tracing::info!("remote title of {remote_id} not asked: {e}");
                return None;
            }
        };
        let api = self.api.as_str();
        // Asked from the pipeline's own thread, which may sit on the daemon's
        // blocking pool: a thread of its own runs the one request.
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
}

impl RemoteTitles for Titles {
    fn on(&self) -> bool {
        Config::load(&self.paths).is_ok_and(|c| c.remote_titles)
    }

    fn remote_id(&self, harness: &str, block: &SessionBlock) -> Option<String> {
        if harness != adapters::claude_code::ClaudeCode.name() {
            return None;
        }
        adapters::claude_code::claude_ai_session(block.url.as_deref()?).map(str::to_string)
    }

    fn ask_live(&self, job: &Job, files: &SessionFiles, remote_id: &str) -> Option<String> {
        let (config_dir, named_by_env) = adapters::claude_code::config_dir_of(job, files)?;
        let place = signin::Place {
            config_dir,
            named_by_env,
        };
        self.ask_at(&place, remote_id)
    }

    fn ask_past(&self, past: &Backfilled, remote_id: &str) -> Option<String> {
        let config_dir = past.config_dir.clone()?;
        let place = signin::Place {
            named_by_env: named_dir(&config_dir),
            config_dir,
        };
        self.ask_at(&place, remote_id)
    }
}

/// How `$CLAUDE_CONFIG_DIR` was set for a past session's config dir: as
/// this process has it when it names the dir, else the dir's own path for
/// any dir but `~/.claude` (the only one Claude Code finds without it).
fn named_dir(dir: &std::path::Path) -> Option<String> {
    if let Ok(set) = std::env::var("CLAUDE_CONFIG_DIR")
        && std::path::Path::new(&set) == dir
    {
        return Some(set);
    }
    let default = spool::paths::home_dir().map(|h| h.join(".claude"));
    (default.as_deref() != Some(dir)).then(|| dir.display().to_string())
}

/// The warning DESIGN.md's CLI contract asks for whenever the vendor
/// endpoint is pointed elsewhere.
pub fn warn_if_pointed_elsewhere() {
    if std::env::var_os(API_VAR).is_some_and(|v| !v.is_empty()) {
        tracing::warn!(
            "{API_VAR} is set: remote titles ask {} (for tests only)",
            api_base()
        );
    }
}
