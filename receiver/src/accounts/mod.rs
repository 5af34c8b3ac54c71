//! Layer 2, accounts: the page's accounts: people (an account each, or one
//! shared by a team's invites), their passkeys, the WebAuthn ceremonies that
//! register and sign in with them, the web sessions a sign-in opens, and
//! one-time invite links.
//!
//! This module owns the rules: registration is open while the receiver has no
//! account (or when the operator opens it), else it takes an invite; a
//! ceremony lives five minutes in the database (not in memory: several
//! receiver processes may share one PostgreSQL, and a finish may land on
//! another process than its start), is used once, and counts against the
//! share of the client that started it; sign-in is discoverable
//! (no name typed: the passkey says whose it is); only SHA-256s of session
//! tokens and invite codes are kept, and each is the row's key, so finding one
//! is a lookup, never a comparison of secrets. It must not speak HTTP (the
//! page's routes in `page` call it), set a cookie, or log or put into an error
//! a token, a code, a challenge or a credential's bytes.
//!
//! WebAuthn itself is `webauthn-rs`: it checks the origin, the rp id, the
//! challenge, user presence and verification, the signature and the counter.
//! A credential's key is kept twice: as the `Passkey` webauthn-rs reads back
//! at sign-in, and as the protocol's `{id, alg, spki}` (`keys`) the machines
//! enroll.

mod invites;
mod keys;
mod passkeys;
mod sessions;
#[cfg(test)]
pub(crate) mod tests;

use crate::db::{Db, DbError, Row, args};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;
use webauthn_rs::prelude::{Url, Webauthn, WebauthnBuilder};

/// How long a registration or sign-in may take between start and finish
/// (also the timeout the browser is given).
pub const CEREMONY_MS: i64 = 5 * 60 * 1000;

/// How long a web session lasts (the cookie's Max-Age).
pub const SESSION_MS: i64 = 30 * 24 * 3600 * 1000;

/// How long an invite link can be used.
pub const INVITE_MS: i64 = 24 * 3600 * 1000;

/// Ceremonies under way at once: anyone may start one, so they are bounded,
/// over all clients (each client is bounded too: `Accounts::new`).
const CEREMONIES_MAX: i64 = 10_000;

/// Ceremonies one client may have under way at once, by default: a
/// household's or an office's sign-ins; 625 clients to fill `CEREMONIES_MAX`.
pub const CEREMONIES_PER_CLIENT: usize = 16;

/// Invite links open at once per account.
const INVITES_MAX: i64 = 20;

/// The longest account or device name, in characters.
const NAME_MAX: usize = 64;

/// Pruning of what has expired runs at most this often per process.
const PRUNE_EVERY_MS: i64 = 60_000;

/// An account: a person, or a team member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Account {
    /// `a_` and 22 base64url characters (16 random bytes).
    pub id: String,
    pub name: String,
    pub created_ms: i64,
}

/// A passkey of an account; `id`, `alg` and `spki` are exactly the protocol's
/// key `{id, alg, spki}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credential {
    /// The credential id, base64url without padding.
    pub id: String,
    pub account: String,
    /// The device's name, as the person gave it.
    pub name: String,
    /// -7 (ES256) or -257 (RS256).
    pub alg: i64,
    /// base64url of the SubjectPublicKeyInfo DER of its public key.
    pub spki: String,
    pub added_ms: i64,
    pub used_ms: Option<i64>,
}

/// Why an accounts call was refused or failed; `code()` is the stable word the
/// page gets as `reason`, the Display words are for a person.
#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    #[error("a name is 1 to {NAME_MAX} characters, without control characters")]
    BadName,
    #[error("this receiver has accounts already: an invite link is needed to make another")]
    InviteNeeded,
    #[error(
        "this invite link cannot be used: it was used already, it expired, or it is not from here"
    )]
    BadInvite,
    #[error("this step took too long or was done already: start again")]
    CeremonyExpired,
    #[error("the passkey's answer was refused: {0}")]
    BadCredential(&'static str),
    #[error(
        "this passkey's kind of key is not supported (ES256 on P-256, or RS256 of 2048 bits or more)"
    )]
    UnsupportedKey,
    #[error("this passkey is registered here already")]
    CredentialExists,
    #[error("this passkey is not registered here (any more)")]
    UnknownCredential,
    #[error("no such account")]
    UnknownAccount,
    #[error(
        "too many invite links are open for this account: use some, or wait for them to expire"
    )]
    TooManyInvites,
    #[error("too many sign-ins are under way: try again in a few minutes")]
    Busy,
    #[error("too many sign-ins are under way from your address")]
    ClientBusy { wait: std::time::Duration },
    #[error("the receiver's rp id or origin cannot be used: {0}")]
    Config(String),
    #[error("accounts store: {0}")]
    Storage(#[from] DbError),
    #[error("accounts store: a stored {0} is not valid")]
    Corrupt(&'static str),
}

impl AccountError {
    /// The stable short code (the page's `reason`).
    pub fn code(&self) -> &'static str {
        match self {
            AccountError::BadName => "bad_name",
            AccountError::InviteNeeded => "invite_needed",
            AccountError::BadInvite => "bad_invite",
            AccountError::CeremonyExpired => "ceremony_expired",
            AccountError::BadCredential(_) => "bad_credential",
            AccountError::UnsupportedKey => "unsupported_key",
            AccountError::CredentialExists => "credential_exists",
            AccountError::UnknownCredential => "unknown_credential",
            AccountError::UnknownAccount => "unknown_account",
            AccountError::TooManyInvites => "too_many_invites",
            AccountError::Busy => "busy",
            AccountError::ClientBusy { .. } => "rate_limited",
            AccountError::Config(_) => "config",
            AccountError::Storage(_) | AccountError::Corrupt(_) => "storage",
        }
    }

    /// The HTTP status that fits (a suggestion for the routes).
    pub fn status(&self) -> u16 {
        match self {
            AccountError::BadName
            | AccountError::BadInvite
            | AccountError::CeremonyExpired
            | AccountError::UnsupportedKey => 400,
            AccountError::BadCredential(_) | AccountError::UnknownCredential => 401,
            AccountError::InviteNeeded => 403,
            AccountError::UnknownAccount => 404,
            AccountError::CredentialExists => 409,
            AccountError::TooManyInvites | AccountError::ClientBusy { .. } => 429,
            AccountError::Busy => 503,
            AccountError::Config(_) | AccountError::Storage(_) | AccountError::Corrupt(_) => 500,
        }
    }
}

/// The receiver's accounts, on its database.
pub struct Accounts {
    webauthn: Webauthn,
    db: Arc<Db>,
    rp_id: String,
    rp_name: String,
    /// Ceremonies one client may have under way.
    per_client: i64,
    last_prune_ms: AtomicI64,
}

impl Accounts {
    /// `rp_id` is the domain passkeys are bound to (`localhost`,
    /// `phone.example.net`); `origin` the page's (`https://phone.example.net`,
    /// or `http://localhost:PORT`, where any port is taken, for local use);
    /// `per_client` the ceremonies one client may have under way (at least 1).
    pub fn new(
        db: Arc<Db>,
        rp_id: &str,
        rp_name: &str,
        origin: &Url,
        per_client: usize,
    ) -> Result<Accounts, AccountError> {
        let localhost = origin.host_str() == Some("localhost");
        match origin.scheme() {
            "https" => {}
            // Browsers offer WebAuthn over plain HTTP to localhost only.
            "http" if localhost => {}
            _ => {
                return Err(AccountError::Config(format!(
                    "the origin {origin} is not https:// (or http://localhost)"
                )));
            }
        }
        // Only the origin counts: a path or a query in it would never match
        // what a browser reports.
        let origin = Url::parse(&origin.origin().ascii_serialization())
            .map_err(|_| AccountError::Config(format!("{origin} has no origin")))?;
        let rp_name = if rp_name.trim().is_empty() {
            "sessionpipe"
        } else {
            rp_name.trim()
        };
        let webauthn = WebauthnBuilder::new(rp_id, &origin)
            .map_err(|_| {
                AccountError::Config(format!(
                    "the rp id {rp_id:?} is not the origin's domain {origin} or a parent of it"
                ))
            })?
            .rp_name(rp_name)
            .allow_any_port(localhost)
            .timeout(Duration::from_millis(CEREMONY_MS as u64))
            .build()
            .map_err(|e| AccountError::Config(e.to_string()))?;
        Ok(Accounts {
            webauthn,
            db,
            rp_id: rp_id.to_string(),
            rp_name: rp_name.to_string(),
            per_client: i64::try_from(per_client.max(1)).unwrap_or(i64::MAX),
            last_prune_ms: AtomicI64::new(i64::MIN),
        })
    }

    pub fn rp_id(&self) -> &str {
        &self.rp_id
    }

    pub fn rp_name(&self) -> &str {
        &self.rp_name
    }

    /// Open registration while no account exists, or with `open_registration`;
    /// else an invite is needed.
    pub async fn registration_mode(
        &self,
        open_registration: bool,
    ) -> Result<&'static str, AccountError> {
        Ok(if open_registration || !self.any_account().await? {
            "open"
        } else {
            "invite"
        })
    }

    pub async fn any_account(&self) -> Result<bool, AccountError> {
        Ok(self
            .db
            .row("SELECT id FROM accounts LIMIT 1", vec![])
            .await?
            .is_some())
    }

    pub async fn account(&self, id: &str) -> Result<Option<Account>, AccountError> {
        self.db
            .row(
                "SELECT id, name, created_ms FROM accounts WHERE id = $1",
                args![id],
            )
            .await?
            .map(|r| account_of(&r, 0))
            .transpose()
    }

    /// An account's passkeys, oldest first.
    pub async fn credentials(&self, account: &str) -> Result<Vec<Credential>, AccountError> {
        self.db
            .rows(
                "SELECT id, account, name, alg, spki, added_ms, used_ms FROM credentials
                 WHERE account = $1 ORDER BY added_ms, id",
                args![account],
            )
            .await?
            .iter()
            .map(credential_of)
            .collect()
    }

    pub async fn credential(&self, id: &str) -> Result<Option<Credential>, AccountError> {
        self.db
            .row(
                "SELECT id, account, name, alg, spki, added_ms, used_ms FROM credentials
                 WHERE id = $1",
                args![id],
            )
            .await?
            .as_ref()
            .map(credential_of)
            .transpose()
    }

    /// Drops expired ceremonies, sessions and invites; at most every
    /// `PRUNE_EVERY_MS` unless `now` went backwards (a test's clock). Every
    /// read checks expiry itself: this only keeps the tables small.
    async fn prune(&self, now: i64) -> Result<(), AccountError> {
        let last = self.last_prune_ms.load(Ordering::Relaxed);
        if now >= last && now.saturating_sub(last) < PRUNE_EVERY_MS {
            return Ok(());
        }
        self.last_prune_ms.store(now, Ordering::Relaxed);
        self.db
            .exec("DELETE FROM ceremonies WHERE expires_ms <= $1", args![now])
            .await?;
        self.db
            .exec(
                "DELETE FROM web_sessions WHERE expires_ms <= $1",
                args![now],
            )
            .await?;
        self.db
            .exec("DELETE FROM invites WHERE expires_ms <= $1", args![now])
            .await?;
        Ok(())
    }
}

/// An account from columns `at..at+3` (id, name, created_ms).
fn account_of(r: &Row, at: usize) -> Result<Account, AccountError> {
    Ok(Account {
        id: r.text(at)?,
        name: r.text(at + 1)?,
        created_ms: r.int(at + 2)?,
    })
}

/// A credential from columns id, account, name, alg, spki, added_ms, used_ms.
fn credential_of(r: &Row) -> Result<Credential, AccountError> {
    Ok(Credential {
        id: r.text(0)?,
        account: r.text(1)?,
        name: r.text(2)?,
        alg: r.int(3)?,
        spki: r.text(4)?,
        added_ms: r.int(5)?,
        used_ms: r.opt_int(6)?,
    })
}

/// A person's name for an account or a device, trimmed.
fn person_name(name: &str) -> Result<String, AccountError> {
    let name = name.trim();
    let chars = name.chars().count();
    if chars == 0 || chars > NAME_MAX || name.chars().any(char::is_control) {
        return Err(AccountError::BadName);
    }
    Ok(name.to_string())
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

fn unb64(text: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(text).ok()
}

fn random<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    getrandom::fill(&mut b).expect("the OS has a random source");
    b
}

/// The key a token or a code is kept under: SHA-256 of its text.
fn secret_hash(text: &str) -> Vec<u8> {
    Sha256::digest(text.as_bytes()).to_vec()
}

/// Whether `text` can be a base64url secret of this module (tokens 43
/// characters, codes 22): anything else is not looked up at all.
fn plausible_secret(text: &str) -> bool {
    (16..=64).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}
