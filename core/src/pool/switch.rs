//! `pool on | off`: the three `env` keys of every Claude Code config dir's
//! `settings.json` (ADAPTERS.md, Claude Code row, Pool): `ANTHROPIC_BASE_URL`
//! (the daemon's listener on 127.0.0.1), `ANTHROPIC_AUTH_TOKEN` (the
//! listener's own random token, never an account's) and
//! `_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL=1`.
//!
//! It owns which files get them, and remembering in `pool.json` what it
//! wrote so `off` takes out exactly that (an `env` it added, a file it made)
//! and leaves the bytes as they were. The writing itself is the installer's
//! (`harness::install::env_keys`: indent and line endings kept, non-plain
//! JSON skipped, never over a value the person set). It must not start or
//! stop the listener: the daemon follows `pool.json`.

use super::PoolError;
use super::store::{PoolFile, SecretsVault, SettingsWritten};
use harness::install::Host;
use harness::install::env_keys::{self, EnvChange};
use spool::StatePaths;
use std::path::PathBuf;

pub const BASE_URL: &str = "ANTHROPIC_BASE_URL";
pub const AUTH_TOKEN: &str = "ANTHROPIC_AUTH_TOKEN";
pub const FIRST_PARTY: &str = "_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL";
const NAMES: [&str; 3] = [BASE_URL, AUTH_TOKEN, FIRST_PARTY];

/// What one settings file got.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
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
        None => free_port().map_err(PoolError::StateDir)?,
    };
    let token = SecretsVault::new(paths).listener_token()?;
    let url = format!("http://127.0.0.1:{port}");
    let keys = [
        (BASE_URL, url.as_str()),
        (AUTH_TOKEN, token.as_str()),
        (FIRST_PARTY, "1"),
    ];
    let ours = [url.as_str(), token.as_str(), "1"];
    // `on` before `off` holds: the port is kept first, so a crash between
    // two files leaves every written one named in `pool.json`.
    file.port = Some(port);
    file.on = true;
    file.save(paths)?;
    let mut said = Vec::new();
    for dir in adapters::claude_code::config_dirs(host) {
        let path = dir.join("settings.json");
        let had_env = read_json(&path).is_some_and(|v| v.get("env").is_some());
        let outcome = match env_keys::set_env(&path, &keys, &ours) {
            Ok(EnvChange::Written { created }) => {
                remember(&mut file, &path, created, !had_env);
                file.save(paths)?;
                "on".to_string()
            }
            Ok(_) => {
                remember(&mut file, &path, false, false);
                "current".to_string()
            }
            Err(skip) => format!("skipped: {skip}"),
        };
        said.push(Switched {
            file: spool::paths::tilde(&path.display().to_string(), Some(&host.home)),
            outcome,
        });
    }
    file.save(paths)?;
    tracing::info!("pool turned on (127.0.0.1:{port})");
    Ok(said)
}

/// `pool off`: every file `on` wrote gets our keys taken out.
pub fn off(paths: &StatePaths, host: &Host) -> Result<Vec<Switched>, PoolError> {
    let mut file = PoolFile::load(paths)?;
    let token = SecretsVault::new(paths).listener_token()?;
    let url = file.port.map(|p| format!("http://127.0.0.1:{p}"));
    let mut ours = vec![token.as_str(), "1"];
    if let Some(u) = &url {
        ours.push(u);
    }
    // Off first: the daemon stops listening even if a file cannot be edited.
    file.on = false;
    file.save(paths)?;
    let mut said = Vec::new();
    let mut kept = Vec::new();
    for w in std::mem::take(&mut file.settings) {
        let path = PathBuf::from(&w.path);
        let outcome = match env_keys::remove_env(&path, &NAMES, &ours, w.added_env, w.created) {
            Ok(EnvChange::Removed) => "off".to_string(),
            Ok(_) => "absent".to_string(),
            Err(skip) => {
                kept.push(w.clone());
                format!("skipped: {skip}")
            }
        };
        said.push(Switched {
            file: spool::paths::tilde(&w.path, Some(&host.home)),
            outcome,
        });
    }
    // What could not be undone stays named, for the next `off`.
    file.settings = kept;
    file.save(paths)?;
    tracing::info!("pool turned off");
    Ok(said)
}

fn remember(file: &mut PoolFile, path: &std::path::Path, created: bool, added_env: bool) {
    let key = path.display().to_string();
    match file.settings.iter_mut().find(|w| w.path == key) {
        // Written again (a new token): what it was before our first write
        // still decides what `off` removes.
        Some(_) => {}
        None => file.settings.push(SettingsWritten {
            path: key,
            created,
            added_env,
        }),
    }
}

fn read_json(path: &std::path::Path) -> Option<serde_json::Value> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// A port nobody on loopback uses now (the listener keeps it from then on).
fn free_port() -> std::io::Result<u16> {
    let l = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))?;
    Ok(l.local_addr()?.port())
}
