//! Layer 3, titles: remote titles, ADAPTERS.md's "one exception". With
//! `remote_titles` on (`sessionpipe titles on`, the Titles page), a Claude
//! Code session with a claude.ai link is asked for the name claude.ai gave it,
//! bearing its config dir's own sign-in for that one read.
//!
//! This module owns the asker the pipeline is handed (`Titles`), turning the
//! setting on and off, and the re-send of the last 30 days (`resend`). When a
//! session is asked and how its name is applied are the pipeline's
//! (`pipeline::titles`); finding the sign-in is `signin`'s (the pool crate's `claude_login`) and the read is
//! `ask`'s. Nothing here keeps the sign-in, and nothing is asked while the
//! setting is off.

pub mod ask;
mod asker;
pub mod resend;

pub use asker::Titles;

use crate::state::config::Config;
use crate::state::progress::{Progress, Publisher};
use spool::StatePaths;

/// Why `titles on|off|refresh` did not finish.
#[derive(Debug, thiserror::Error)]
pub enum TitlesError {
    #[error(transparent)]
    Config(#[from] crate::state::file::FileError),
    #[error(transparent)]
    Outbox(#[from] crate::pipeline::outbox::OutboxError),
    #[error("remote titles are off: `sessionpipe titles on` turns them on")]
    Off,
    #[error("cannot make the state dir: {0}")]
    StateDir(std::io::Error),
}

/// Turns remote titles on or off. On, it then asks about the last 30 days'
/// sessions and re-sends each one sent under another name (`resend`), telling
/// `progress` how far it is (and filing it: `refresh`).
pub fn set(
    paths: &StatePaths,
    on: bool,
    host: &harness::install::Host,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Option<resend::Resent>, TitlesError> {
    paths.ensure().map_err(TitlesError::StateDir)?;
    let mut config = Config::load(paths)?;
    config.remote_titles = on;
    config.save(paths)?;
    tracing::info!("remote titles turned {}", if on { "on" } else { "off" });
    if !on {
        return Ok(None);
    }
    refresh(paths, host, progress).map(Some)
}

/// Asks again about the last 30 days' sessions (`titles refresh`, and what
/// turning it on does). How far it is goes to `progress` and to
/// `progress.json` while it runs (the UI and the tray show it, whichever
/// process runs it).
pub fn refresh(
    paths: &StatePaths,
    host: &harness::install::Host,
    progress: &mut dyn FnMut(&Progress),
) -> Result<resend::Resent, TitlesError> {
    let config = Config::load(paths)?;
    if !config.remote_titles {
        return Err(TitlesError::Off);
    }
    sessionpipe_pool::endpoints::warn_if_pointed_elsewhere("remote titles");
    paths.ensure().map_err(TitlesError::StateDir)?;
    let mut outbox = crate::pipeline::outbox::Outbox::open(&paths.outbox())?;
    let mut filed = Publisher::start(paths);
    let mut told = |p: &Progress| {
        filed.tell(p);
        progress(p);
    };
    Ok(resend::resend(
        &mut outbox,
        host,
        &Titles::new(paths),
        resend::DAYS,
        &config.machine(),
        &mut told,
    )?)
}
