//! `pool on | off`: the three `env` keys of every Claude Code config dir's
//! `settings.json` (ADAPTERS.md, Claude Code row, Pool): `ANTHROPIC_BASE_URL`
//! (the daemon's listener on 127.0.0.1), `ANTHROPIC_AUTH_TOKEN` (the
//! listener's own random token, never an account's) and
//! `_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL=1`.
//!
//! It owns which files get them (every config dir's, and for `off` also
//! every file `on` wrote, named in `pool.json`). The writing is the
//! installer's (`harness::install::env_keys::EnvWriter`): the original kept
//! in its ledger before our first write, indent and line endings kept,
//! non-plain JSON skipped, never over a key the person had; `off` takes out
//! only keys that were not in the original and gives its bytes back when
//! nobody wrote the file since. It must not start or stop the listener: the
//! daemon follows `pool.json`.

use super::PoolError;
use super::store::{PoolFile, SecretsVault};
use harness::install::Host;
use harness::install::env_keys::{EnvChange, EnvWriter};
use spool::StatePaths;
use std::path::PathBuf;

pub const BASE_URL: &str = "ANTHROPIC_BASE_URL";
pub const AUTH_TOKEN: &str = "ANTHROPIC_AUTH_TOKEN";
pub const FIRST_PARTY: &str = adapters::claude_code::FIRST_PARTY_KEY;
const NAMES: [&str; 3] = [BASE_URL, AUTH_TOKEN, FIRST_PARTY];

/// What one settings file got.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Switched {
    /// The file, `~`-relative.
    pub file: String,
    /// `on`, `current`, `off`, `absent`, or `skipped: <why>`.
    pub outcome: String,
}

/// `pool on`.
pub fn on(paths: &StatePaths, host: &Host) -> Result<Vec<Switched>, PoolError> {
    let mut file = PoolFile::load(paths)?;
    if file.accounts.iter().all(|a| !a.enabled) {
        return Err(PoolError::NoAccounts);
    }
    if crate::state::lock::holder(paths).is_none() {
        // Claude Code would send its requests to a port nobody listens on.
        return Err(PoolError::NoDaemon);
    }
    let port = match file.port {
        Some(p) => p,
        None => free_port().map_err(PoolError::NoPort)?,
    };
    let token = SecretsVault::new(paths).listener_token()?;
    let url = format!("http://127.0.0.1:{port}");
    let keys = [
        (BASE_URL, url.as_str()),
        (AUTH_TOKEN, token.as_str()),
        (FIRST_PARTY, "1"),
    ];
    let mut writer = EnvWriter::load(&paths.root)?;
    // On, and every file named, before any is written: a crash between two
    // files leaves each written one named in `pool.json` for `off`.
    file.port = Some(port);
    file.on = true;
    let dirs = adapters::claude_code::config_dirs(host);
    for dir in &dirs {
        let key = dir.join("settings.json").display().to_string();
        if !file.settings.contains(&key) {
            file.settings.push(key);
        }
    }
    file.save(paths)?;
    let mut said = Vec::new();
    for dir in dirs {
        let path = dir.join("settings.json");
        let outcome = match writer.set(&path, &keys) {
            Ok(EnvChange::Written { .. }) => "on".to_string(),
            Ok(_) => "current".to_string(),
            Err(skip) => format!("skipped: {skip}"),
        };
        said.push(Switched {
            file: spool::paths::tilde(&path.display().to_string(), Some(&host.home)),
            outcome,
        });
    }
    writer.save()?;
    tracing::info!("pool turned on (127.0.0.1:{port})");
    Ok(said)
}

/// `pool off`: every file `on` wrote gets our keys taken out.
pub fn off(paths: &StatePaths, host: &Host) -> Result<Vec<Switched>, PoolError> {
    let mut file = PoolFile::load(paths)?;
    // Off first: the daemon stops listening even if a file cannot be edited.
    file.on = false;
    file.save(paths)?;
    let mut writer = EnvWriter::load(&paths.root)?;
    let mut said = Vec::new();
    let mut kept = Vec::new();
    for key in std::mem::take(&mut file.settings) {
        let outcome = match writer.remove(&PathBuf::from(&key), &NAMES) {
            Ok(EnvChange::Removed) => "off".to_string(),
            Ok(_) => "absent".to_string(),
            Err(skip) => {
                kept.push(key.clone());
                format!("skipped: {skip}")
            }
        };
        said.push(Switched {
            file: spool::paths::tilde(&key, Some(&host.home)),
            outcome,
        });
    }
    writer.save()?;
    // What could not be undone stays named, for the next `off`.
    file.settings = kept;
    file.save(paths)?;
    tracing::info!("pool turned off");
    Ok(said)
}

/// A port nobody on loopback uses now (the listener keeps it from then on).
fn free_port() -> std::io::Result<u16> {
    let l = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))?;
    Ok(l.local_addr()?.port())
}
