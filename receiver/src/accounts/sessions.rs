//! Web sessions: what a sign-in (or a registration) opens for the page's
//! cookie.
//!
//! This module owns the token (32 random bytes, base64url; only its SHA-256
//! is kept, as the row's key, so a stolen database signs nobody in and a
//! lookup compares no secret), its 30 days, and that a session ends with its
//! credential (a removed device is signed out). It must not set the cookie
//! (the routes do) or extend a session.

use super::{Account, AccountError, Accounts, SESSION_MS, account_of, b64, random};
use super::{plausible_secret, secret_hash};
use crate::db::args;

impl Accounts {
    /// Opens a session for `credential` of `account`: the token for the
    /// cookie, shown this once.
    pub async fn open_session(
        &self,
        account: &str,
        credential: &str,
        now_ms: i64,
    ) -> Result<String, AccountError> {
        self.prune(now_ms).await?;
        self.db
            .row(
                "SELECT id FROM credentials WHERE id = $1 AND account = $2",
                args![credential, account],
            )
            .await?
            .ok_or(AccountError::UnknownCredential)?;
        let token = b64(&random::<32>());
        self.db
            .exec(
                "INSERT INTO web_sessions (token_hash, account, credential, created_ms, expires_ms)
                 VALUES ($1, $2, $3, $4, $5)",
                args![
                    secret_hash(&token),
                    account,
                    credential,
                    now_ms,
                    now_ms + SESSION_MS
                ],
            )
            .await?;
        Ok(token)
    }

    /// The account and credential id a cookie's token signs in, while the
    /// session lasts and its credential is still the account's.
    pub async fn session(
        &self,
        token: &str,
        now_ms: i64,
    ) -> Result<Option<(Account, String)>, AccountError> {
        if !plausible_secret(token) {
            return Ok(None);
        }
        let Some(r) = self
            .db
            .row(
                "SELECT a.id, a.name, a.created_ms, s.credential
                 FROM web_sessions s
                 JOIN accounts a ON a.id = s.account
                 JOIN credentials c ON c.id = s.credential AND c.account = s.account
                 WHERE s.token_hash = $1 AND s.expires_ms > $2",
                args![secret_hash(token), now_ms],
            )
            .await?
        else {
            return Ok(None);
        };
        Ok(Some((account_of(&r, 0)?, r.text(3)?)))
    }

    /// Ends the session of `token` (signing out); nothing when there is none.
    pub async fn close_session(&self, token: &str) -> Result<(), AccountError> {
        if plausible_secret(token) {
            self.db
                .exec(
                    "DELETE FROM web_sessions WHERE token_hash = $1",
                    args![secret_hash(token)],
                )
                .await?;
        }
        Ok(())
    }
}
