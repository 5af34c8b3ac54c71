//! The Pool page's API (ADAPTERS.md, Claude Code row, Pool): the accounts as
//! `sessionpipe pool status --json` shows them, the switch (`pool on|off`),
//! and `pool enable|disable|remove` and `pool add --import`, each through the
//! `pool` module exactly as the CLI calls it. (The board's account column is
//! `views`'s.)
//!
//! It owns the mapping of a `PoolError` to a status and these answers' shape.
//! It must not answer with a credential (an `AccountView` holds none), turn
//! anything on without the caller's request, or sign an account in (`pool add
//! --login` stays at the terminal: it needs a pasted code).

use super::error::ApiError;
use super::shapes::{PoolImported, PoolRemoved, PoolState, PoolSwitched, reply};
use super::views::{ApiResult, Ctx};
use crate::pool::{self, PoolError, service::Snapshot, store::PoolFile};
use crate::runtime::blocking;
use axum::body::Bytes;
use axum::extract::{Path, State};
use harness::install::Host;
use serde_json::Value;
use spool::StatePaths;
use std::path::PathBuf;

impl From<PoolError> for ApiError {
    fn from(e: PoolError) -> Self {
        let text = e.to_string();
        match e {
            // The pool cannot do it now: the person has something to do first.
            PoolError::NoAccounts | PoolError::NoDaemon | PoolError::NoAccountId(_) => {
                ApiError::Conflict(text)
            }
            PoolError::NoSuchAccount(_) | PoolError::NothingToImport => ApiError::NotFound(text),
            PoolError::SignIn(sessionpipe_pool::claude_login::SignInError::Missing(_)) => {
                ApiError::NotFound(text)
            }
            PoolError::SignIn(_) => ApiError::Conflict(text),
            PoolError::File(_)
            | PoolError::Vault(_)
            | PoolError::Ledger(_)
            | PoolError::StateDir(_)
            | PoolError::NoPort(_)
            | PoolError::OAuth(_)
            | PoolError::Paste(_) => ApiError::Internal(text),
        }
    }
}

fn host() -> Result<Host, ApiError> {
    Host::from_env().ok_or_else(|| ApiError::Internal("HOME is not set".into()))
}

/// The pool as the page shows it: on or off, the listener's port while on,
/// whether the accounts' windows are the running daemon's (`live`), and
/// every account (`pool status --json`'s `accounts`).
fn pool_view(paths: &StatePaths) -> Result<PoolState, ApiError> {
    let file = PoolFile::load(paths)?;
    let live = Snapshot::load(paths).filter(|_| crate::state::lock::holder(paths).is_some());
    let accounts = pool::views(paths, &file, live.as_ref());
    Ok(PoolState {
        on: file.on,
        port: file.port.filter(|_| file.on),
        live: live.is_some(),
        accounts,
    })
}

/// `GET /api/pool`.
pub async fn view(State(ctx): State<Ctx>) -> ApiResult {
    let paths = ctx.paths.clone();
    blocking(move || Ok(reply(&pool_view(&paths)?))).await
}

/// `POST /api/pool/on` and `/off`: `pool on|off`. Answers with the pool and
/// what each settings file got.
async fn switch(ctx: Ctx, on: bool) -> ApiResult {
    let paths = ctx.paths.clone();
    blocking(move || {
        let host = host()?;
        let settings = if on {
            pool::switch::on(&paths, &host)?
        } else {
            pool::switch::off(&paths, &host)?
        };
        Ok(reply(&PoolSwitched {
            pool: pool_view(&paths)?,
            settings,
        }))
    })
    .await
}

pub async fn on(State(ctx): State<Ctx>) -> ApiResult {
    switch(ctx, true).await
}

pub async fn off(State(ctx): State<Ctx>) -> ApiResult {
    switch(ctx, false).await
}

async fn set_enabled(ctx: Ctx, id: String, enabled: bool) -> ApiResult {
    let paths = ctx.paths.clone();
    blocking(move || {
        pool::set_enabled(&paths, &id, enabled)?;
        Ok(reply(&pool_view(&paths)?))
    })
    .await
}

/// `POST /api/pool/accounts/{id}/enable`.
pub async fn enable(State(ctx): State<Ctx>, Path(id): Path<String>) -> ApiResult {
    set_enabled(ctx, id, true).await
}

/// `POST /api/pool/accounts/{id}/disable`: it takes no request, and stays.
pub async fn disable(State(ctx): State<Ctx>, Path(id): Path<String>) -> ApiResult {
    set_enabled(ctx, id, false).await
}

/// `DELETE /api/pool/accounts/{id}`: the account and its sign-in go.
pub async fn remove(State(ctx): State<Ctx>, Path(id): Path<String>) -> ApiResult {
    let paths = ctx.paths.clone();
    blocking(move || {
        let gone = pool::remove(&paths, &id)?;
        Ok(reply(&PoolRemoved {
            pool: pool_view(&paths)?,
            removed: gone.id,
        }))
    })
    .await
}

/// `POST /api/pool/import`, body `{}` or `{"config_dir": "~/.claude-work"}`
/// (absolute, or from `~/`): `pool add --import`, copying Claude Code's own
/// sign-in of that config dir, or of every one that has one.
pub async fn import(State(ctx): State<Ctx>, given: Bytes) -> ApiResult {
    let b: Value = if given.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        serde_json::from_slice(&given)
            .map_err(|e| ApiError::BadRequest(format!("the body is not JSON: {e}")))?
    };
    let dir = match b.get("config_dir") {
        None | Some(Value::Null) => None,
        Some(Value::String(d)) if !d.trim().is_empty() => Some(d.trim().to_string()),
        Some(_) => {
            return Err(ApiError::BadRequest(
                "config_dir is a folder's path, as a string".into(),
            ));
        }
    };
    let paths = ctx.paths.clone();
    blocking(move || {
        let host = host()?;
        let dir = dir.map(|d| config_dir(&d, &host)).transpose()?;
        let added = pool::add_import(&paths, &host, dir.as_deref())?;
        Ok(reply(&PoolImported {
            pool: pool_view(&paths)?,
            added,
        }))
    })
    .await
}

/// A config dir the caller named: absolute, or `~/…` under HOME (the daemon's
/// working folder is nobody's business).
fn config_dir(given: &str, host: &Host) -> Result<PathBuf, ApiError> {
    let path = match given.strip_prefix("~/") {
        Some(rest) => host.home.join(rest),
        None if given == "~" => host.home.clone(),
        None => PathBuf::from(given),
    };
    if !path.is_absolute() {
        return Err(ApiError::BadRequest(format!(
            "config_dir {given:?} is not an absolute path (or one starting with ~/)"
        )));
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_config_dir_is_absolute_or_under_home() {
        let host = Host {
            home: PathBuf::from("/home/ann"),
            vars: Default::default(),
        };
        assert_eq!(
            config_dir("~/.claude-work", &host).unwrap(),
            PathBuf::from("/home/ann/.claude-work")
        );
        assert_eq!(
            config_dir("/srv/claude", &host).unwrap(),
            PathBuf::from("/srv/claude")
        );
        assert!(matches!(
            config_dir(".claude", &host),
            Err(ApiError::BadRequest(_))
        ));
    }
}
