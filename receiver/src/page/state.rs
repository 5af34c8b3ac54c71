//! The page's state (`Page`): its settings, the accounts, the notifier, and
//! the control side it approves pairings and queues commands on; who is
//! signed in (the `sp_session` cookie) and the cookies a sign-in sets and
//! ends.
//!
//! This module owns that state and the reading of the cookie. It must not
//! decide what a signed-in account may do (the routes do, naming it in every
//! query).

use super::options::PageOptions;
use crate::accounts::{Account, Accounts};
use crate::control::Control;
use crate::db::Db;
use crate::error::ApiError;
use crate::notify::Notifier;
use crate::owners::Owners;
use crate::request::RequestLog;
use axum::http::{HeaderMap, StatusCode, header};
use std::sync::Arc;

/// The cookie's name.
const COOKIE: &str = "sp_session";

/// The page's state.
pub struct Page {
    pub(super) opts: PageOptions,
    pub(super) accounts: Accounts,
    pub(super) notifier: Arc<Notifier>,
    pub(super) db: Arc<Db>,
    /// The first account made claims the receiver's own token's events.
    pub(super) owners: Arc<Owners>,
    pub(super) control: Arc<Control>,
    pub(super) log: RequestLog,
}

impl Page {
    /// The page over `control`: passkeys for control's rp id at the page's
    /// origin, and the notifier with the receiver's VAPID key (made once and
    /// kept in the database).
    pub async fn open(
        opts: PageOptions,
        control: Arc<Control>,
        db: Arc<Db>,
        owners: Arc<Owners>,
        log: RequestLog,
    ) -> Result<Page, String> {
        let rp_id = &control.options().rp_id;
        let origin = opts.check(rp_id).map_err(|e| e.0)?;
        let accounts = Accounts::new(
            Arc::clone(&db),
            rp_id,
            &opts.rp_name,
            &origin,
            opts.ceremonies_per_client,
        )
        .map_err(|e| e.to_string())?;
        let subject = if origin.scheme() == "https" {
            opts.origin.trim_end_matches('/').to_string()
        } else {
            "mailto:receiver@localhost".to_string()
        };
        let notifier =
            Notifier::open(Arc::clone(&db), &subject, log.0, opts.allow_private_notify).await?;
        Ok(Page {
            opts,
            accounts,
            notifier: Arc::new(notifier),
            db,
            owners,
            control,
            log,
        })
    }

    /// Where people open the page.
    pub fn origin(&self) -> &str {
        &self.opts.origin
    }

    /// What tells devices of an attention (the events side's too).
    pub fn notifier(&self) -> Arc<Notifier> {
        Arc::clone(&self.notifier)
    }

    /// The signed-in account and the credential it signed in with; 401
    /// `signed_out` without a live session.
    pub(super) async fn me(&self, headers: &HeaderMap) -> Result<Me, ApiError> {
        let token = cookie(headers).ok_or_else(signed_out)?;
        let (account, credential) = self
            .accounts
            .session(token, protocol::time::now_ms())
            .await?
            .ok_or_else(signed_out)?;
        Ok(Me {
            account,
            credential,
        })
    }

    /// The `set-cookie` value for a new sign-in (`Secure` unless on localhost).
    pub(super) fn session_cookie(&self, token: &str) -> String {
        let secure = if self.opts.is_local() { "" } else { "; Secure" };
        format!("{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age=2592000{secure}")
    }
}

/// The signed-in account and the credential it signed in with.
pub(super) struct Me {
    pub account: Account,
    pub credential: String,
}

fn signed_out() -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "signed_out",
        "sign in with your passkey",
    )
}

/// The session cookie's value, from the `cookie` header.
pub(super) fn cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v)
}

/// The `set-cookie` value that ends a sign-in.
pub(super) fn cleared_cookie() -> String {
    format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cookie_is_found_among_others() {
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, "a=1; sp_session=tok; b=2".parse().unwrap());
        assert_eq!(cookie(&h), Some("tok"));
        h.insert(header::COOKIE, "sp_sessionx=no".parse().unwrap());
        assert_eq!(cookie(&h), None);
    }
}
