//! Layer 3, pool: the account pool (ADAPTERS.md, Claude Code row, Pool),
//! opt-in. Nothing here runs until the person runs `sessionpipe pool add` or
//! `pool on` at the machine, and then only what that row says.
//!
//! This module owns the person's commands (`add --import`, `remove`,
//! `enable`, `disable`; `on`/`off` in `switch`), what is kept (`store`), and
//! the daemon's side (`service`: the listener, refreshes, idle accounts'
//! usage, and the `limits.observed` a session's answers carried). The proxy,
//! the accounts' choice and the sign-in flows are the pool crate's; this
//! module wires them to the state dir, the secrets store and the pipeline.

pub mod service;
pub mod store;
pub mod switch;

use crate::state::file::FileError;
use harness::install::Host;
use sessionpipe_pool::accounts::{Account, Vault, VaultError};
use sessionpipe_pool::claude_login::{self, Place, SignInError};
use spool::StatePaths;
use std::path::{Path, PathBuf};
use store::{PoolFile, SecretsVault};

/// Why a pool command did not finish.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    #[error(transparent)]
    File(#[from] FileError),
    #[error(transparent)]
    Vault(#[from] VaultError),
    #[error(transparent)]
    Ledger(#[from] harness::install::LedgerError),
    #[error(transparent)]
    SignIn(#[from] SignInError),
    #[error("cannot make the state dir: {0}")]
    StateDir(std::io::Error),
    #[error("no port on 127.0.0.1 is free for the listener: {0}")]
    NoPort(std::io::Error),
    #[error(transparent)]
    OAuth(#[from] sessionpipe_pool::oauth::OAuthError),
    #[error("cannot read the pasted code: {0}")]
    Paste(std::io::Error),
    #[error("no Claude Code config dir with a sign-in was found")]
    NothingToImport,
    #[error("{0} has no account id in its .claude.json (sign in with `claude` first)")]
    NoAccountId(PathBuf),
    #[error("no account is in the pool to route to: `sessionpipe pool add --import` first")]
    NoAccounts,
    #[error(
        "no daemon runs: Claude Code would send its requests to a listener that is not there \
         (start `sessionpipe daemon` or the app, then `pool on`)"
    )]
    NoDaemon,
    #[error("no account in the pool is {0:?} (`sessionpipe pool status` lists them)")]
    NoSuchAccount(String),
}

/// One account `add` put in the pool.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Added {
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub email: Option<String>,
    /// Where it came from (a config dir), for `--import`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub from: Option<String>,
    /// It was in the pool already; its sign-in was replaced.
    pub again: bool,
}

/// `pool add --import`: copies Claude Code's own sign-in of `dir` (or of
/// every config dir that has one) into the pool. Claude Code's own stays
/// where it is.
pub fn add_import(
    paths: &StatePaths,
    host: &Host,
    dir: Option<&Path>,
) -> Result<Vec<Added>, PoolError> {
    paths.ensure().map_err(PoolError::StateDir)?;
    let dirs: Vec<PathBuf> = match dir {
        Some(d) => vec![d.to_path_buf()],
        None => adapters::claude_code::config_dirs(host),
    };
    let vault = SecretsVault::new(paths);
    let mut file = PoolFile::load(paths)?;
    let mut added = Vec::new();
    let mut first_error = None;
    for dir in &dirs {
        let place = Place::found(dir, host.var("CLAUDE_CONFIG_DIR"), Some(&host.home));
        let tokens = match claude_login::read_tokens(&place) {
            Ok(t) => t,
            // With no directory named, a config dir without a sign-in is
            // passed over; a named one says why.
            Err(e) => {
                first_error.get_or_insert(PoolError::SignIn(e));
                continue;
            }
        };
        let Some(account) = adapters::claude_code::config_dir_account(Some(&host.home), dir)
            .filter(|a| !a.id.starts_with("api-"))
        else {
            first_error.get_or_insert(PoolError::NoAccountId(dir.clone()));
            continue;
        };
        // The sign-in first: an account listed without one would be offered
        // to nobody, but one stored and not listed is invisible.
        vault.store(&account.id, &tokens)?;
        // Where it came from, for the daemon to read again before it
        // refreshes (Claude Code refreshing its own spends this copy).
        let again = match file.accounts.iter_mut().find(|a| a.id == account.id) {
            Some(kept) => {
                kept.imported_from = Some(place.clone());
                true
            }
            None => {
                file.accounts.push(Account {
                    id: account.id.clone(),
                    email: account.email.clone(),
                    enabled: true,
                    imported_from: Some(place.clone()),
                });
                false
            }
        };
        added.push(Added {
            id: account.id,
            email: account.email,
            from: Some(spool::paths::tilde(
                &dir.display().to_string(),
                Some(&host.home),
            )),
            again,
        });
    }
    if added.is_empty() {
        return Err(match (dir, first_error) {
            (Some(_), Some(e)) => e,
            _ => PoolError::NothingToImport,
        });
    }
    file.save(paths)?;
    tracing::info!("pool: {} account(s) added by import", added.len());
    Ok(added)
}

/// `pool add --login`: signs an account in the way Claude Code does. The
/// person opens `login.url`, signs in, and pastes the `code#state` the
/// callback page shows; `paste` gets them the URL and returns what they
/// pasted. The sign-in goes to the secrets store, the account to the list.
pub fn add_login(
    paths: &StatePaths,
    paste: impl FnOnce(&str) -> std::io::Result<String>,
) -> Result<Added, PoolError> {
    paths.ensure().map_err(PoolError::StateDir)?;
    let login = sessionpipe_pool::oauth::Login::start();
    let pasted = paste(&login.url).map_err(PoolError::Paste)?;
    let client = sessionpipe_pool::oauth::client();
    let (tokens, profile) = crate::runtime::block_on(login.finish(&client, pasted.trim()))?;
    let vault = SecretsVault::new(paths);
    vault.store(&profile.account_id, &tokens)?;
    let mut file = PoolFile::load(paths)?;
    let again = match file
        .accounts
        .iter_mut()
        .find(|a| a.id == profile.account_id)
    {
        Some(kept) => {
            // Its own sign-in now, no longer a copy of Claude Code's.
            kept.imported_from = None;
            true
        }
        None => {
            file.accounts.push(Account {
                id: profile.account_id.clone(),
                email: profile.email.clone(),
                enabled: true,
                imported_from: None,
            });
            false
        }
    };
    // Saved even when the list is the same: a new stamp is what tells a
    // running daemon to read the sign-ins again.
    file.save(paths)?;
    tracing::info!("pool: an account added by sign-in");
    Ok(Added {
        id: profile.account_id,
        email: profile.email,
        from: None,
        again,
    })
}

/// `pool remove`: the account and its sign-in go.
pub fn remove(paths: &StatePaths, who: &str) -> Result<Account, PoolError> {
    let mut file = PoolFile::load(paths)?;
    let account = file
        .find(who)
        .cloned()
        .ok_or_else(|| PoolError::NoSuchAccount(who.to_string()))?;
    file.accounts.retain(|a| a.id != account.id);
    // Unlisted first: a listed account without its sign-in would show as
    // signed out; a sign-in left behind is removed just after.
    file.save(paths)?;
    SecretsVault::new(paths).remove(&account.id)?;
    Ok(account)
}

/// `pool enable|disable`: a disabled account takes no request.
pub fn set_enabled(paths: &StatePaths, who: &str, enabled: bool) -> Result<Account, PoolError> {
    let mut file = PoolFile::load(paths)?;
    let id = file
        .find(who)
        .map(|a| a.id.clone())
        .ok_or_else(|| PoolError::NoSuchAccount(who.to_string()))?;
    let account = file
        .accounts
        .iter_mut()
        .find(|a| a.id == id)
        .expect("found above");
    account.enabled = enabled;
    let account = account.clone();
    file.save(paths)?;
    Ok(account)
}

/// Every account of `file` as `pool status` shows it: the daemon's view of
/// it when one runs, else what is kept (its sign-in's expiry, nothing heard).
pub fn views(
    paths: &StatePaths,
    file: &PoolFile,
    live: Option<&service::Snapshot>,
) -> Vec<sessionpipe_pool::accounts::AccountView> {
    let vault = SecretsVault::new(paths);
    let now = protocol::time::now_ms();
    file.accounts
        .iter()
        .map(|a| {
            if let Some(mut v) = live
                .and_then(|l| l.accounts.iter().find(|v| v.id == a.id))
                .cloned()
            {
                v.enabled = a.enabled;
                return v;
            }
            let tokens = vault.load(&a.id).ok().flatten();
            sessionpipe_pool::accounts::AccountView {
                id: a.id.clone(),
                email: a.email.clone(),
                enabled: a.enabled,
                status: match &tokens {
                    None => "no_sign_in",
                    Some(t) if t.expires_at_ms <= now => "expired",
                    Some(_) => "unknown",
                }
                .to_string(),
                until: None,
                windows: Vec::new(),
                expires_at: tokens.map(|t| protocol::time::rfc3339_ms(t.expires_at_ms)),
                refresh_error: None,
                sessions: Vec::new(),
            }
        })
        .collect()
}
