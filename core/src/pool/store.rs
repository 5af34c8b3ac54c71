//! What the pool keeps on this machine: `pool.json` in the state dir (on or
//! off, the listener's port, the accounts added, none of their credentials)
//! and, in the secrets store (the keychain, or the 0600 file), each account's
//! sign-in and the listener's token.
//!
//! It owns those records and the `Vault` the pool crate stores rotated
//! sign-ins through. It must not talk to the network or write a harness's
//! file; a credential never goes into `pool.json`, a log or an error.

use crate::state::file::{self, FileError};
use crate::state::secrets::{Backend, Secrets};
use sessionpipe_pool::accounts::{Account, Vault, VaultError};
use sessionpipe_pool::oauth::Tokens;
use spool::StatePaths;

/// The secrets-store key of the listener's token.
const LISTENER_TOKEN: &str = "pool:listener-token";

fn account_key(id: &str) -> String {
    format!("pool:account:{id}")
}

/// `pool.json`.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct PoolFile {
    /// `pool on`: the listener runs and Claude Code's settings point at it.
    pub on: bool,
    /// The listener's port, fixed at the first `pool on` (the settings name it).
    pub port: Option<u16>,
    /// The settings files `pool on` wrote to (what `off` undoes).
    pub settings: Vec<String>,
    pub accounts: Vec<Account>,
}

impl PoolFile {
    pub fn load(paths: &StatePaths) -> Result<PoolFile, FileError> {
        Ok(file::load(&paths.pool())?.unwrap_or_default())
    }

    pub fn save(&self, paths: &StatePaths) -> Result<(), FileError> {
        file::save(&paths.pool(), self)
    }

    pub fn account(&self, id: &str) -> Option<&Account> {
        self.accounts.iter().find(|a| a.id == id)
    }

    /// The account named by its id, or by its email when that names one.
    pub fn find(&self, who: &str) -> Option<&Account> {
        self.account(who).or_else(|| {
            let mut by_email = self.accounts.iter().filter(|a| {
                a.email
                    .as_deref()
                    .is_some_and(|e| e.eq_ignore_ascii_case(who))
            });
            let one = by_email.next()?;
            by_email.next().is_none().then_some(one)
        })
    }
}

/// The pool's sign-ins in the secrets store.
pub struct SecretsVault {
    secrets: Secrets,
}

impl SecretsVault {
    pub fn new(paths: &StatePaths) -> SecretsVault {
        SecretsVault {
            secrets: Secrets::new(&paths.root),
        }
    }

    /// Where `id`'s sign-in is kept, if anywhere (`doctor`, `pool status`).
    pub fn backend_of(&self, id: &str) -> Option<Backend> {
        self.secrets.backend_of(&account_key(id))
    }

    /// The listener's token, made (32 random bytes, hex) the first time.
    pub fn listener_token(&self) -> Result<String, VaultError> {
        if let Some(t) = self.secrets.get(LISTENER_TOKEN) {
            return Ok(t);
        }
        let mut raw = [0u8; 32];
        getrandom::fill(&mut raw).map_err(|e| VaultError(format!("no randomness: {e}")))?;
        let token = hex::encode(raw);
        self.secrets
            .set(LISTENER_TOKEN, &token)
            .map_err(|e| VaultError(e.to_string()))?;
        Ok(token)
    }
}

impl Vault for SecretsVault {
    fn load(&self, account_id: &str) -> Result<Option<Tokens>, VaultError> {
        match self.secrets.get(&account_key(account_id)) {
            None => Ok(None),
            Some(text) => Tokens::from_vault_json(&text)
                .map(Some)
                .ok_or_else(|| VaultError(format!("the sign-in kept for {account_id} is damaged"))),
        }
    }

    fn store(&self, account_id: &str, tokens: &Tokens) -> Result<(), VaultError> {
        self.secrets
            .set(&account_key(account_id), &tokens.to_vault_json())
            .map(|_| ())
            .map_err(|e| VaultError(e.to_string()))
    }

    fn remove(&self, account_id: &str) -> Result<(), VaultError> {
        self.secrets.delete(&account_key(account_id));
        Ok(())
    }
}
