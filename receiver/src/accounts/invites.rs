//! Invite links: a one-time code that lets a registration through when
//! registration is not open. A device invite adds a passkey to its maker's
//! account; an account invite makes a new account (a team member).
//!
//! This module owns the code (16 random bytes, base64url; only its SHA-256 is
//! kept, as the row's key), its 24 hours and the bound on open invites per
//! account. It must not use an invite up: the registration's finish does, in
//! the transaction that stores the credential (`passkeys`).

use super::{AccountError, Accounts, INVITE_MS, INVITES_MAX, b64, random};
use super::{plausible_secret, secret_hash};
use crate::db::args;

/// An invite found by its code.
pub(super) struct Invite {
    /// Its row's key, SHA-256 of the code.
    pub hash: Vec<u8>,
    /// The account a device invite adds to; `None` for a new account.
    pub account: Option<String>,
}

impl Accounts {
    /// A one-time invite code, valid `INVITE_MS` (24 hours): `device` adds a
    /// device to `by`'s account, else it makes a new account.
    pub async fn invite(
        &self,
        by: &str,
        device: bool,
        now_ms: i64,
    ) -> Result<String, AccountError> {
        self.prune(now_ms).await?;
        self.account(by)
            .await?
            .ok_or(AccountError::UnknownAccount)?;
        let open = self
            .db
            .row(
                "SELECT COUNT(*) FROM invites WHERE created_by = $1 AND expires_ms > $2",
                args![by, now_ms],
            )
            .await?
            .map(|r| r.int(0))
            .transpose()?
            .unwrap_or(0);
        if open >= INVITES_MAX {
            return Err(AccountError::TooManyInvites);
        }
        let code = b64(&random::<16>());
        self.db
            .exec(
                "INSERT INTO invites (code_hash, account, created_by, expires_ms)
                 VALUES ($1, $2, $3, $4)",
                args![
                    secret_hash(&code),
                    device.then_some(by),
                    by,
                    now_ms + INVITE_MS
                ],
            )
            .await?;
        Ok(code)
    }

    /// The invite of `code`, while it can be used.
    pub(super) async fn live_invite(
        &self,
        code: &str,
        now_ms: i64,
    ) -> Result<Option<Invite>, AccountError> {
        if !plausible_secret(code) {
            return Ok(None);
        }
        let hash = secret_hash(code);
        let Some(r) = self
            .db
            .row(
                "SELECT account FROM invites WHERE code_hash = $1 AND expires_ms > $2",
                args![hash.as_slice(), now_ms],
            )
            .await?
        else {
            return Ok(None);
        };
        Ok(Some(Invite {
            hash,
            account: r.opt_text(0)?,
        }))
    }
}
