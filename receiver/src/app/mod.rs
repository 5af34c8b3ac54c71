//! The page: the receiver's own phone-first web app (`page/`, built into the
//! binary) and the API it speaks under `/app/api/` (sign-in with a passkey,
//! the board, a session's timeline, pairing approvals, signed commands and
//! their acks, files for a `start`, Web Push and notification URLs). The
//! contract with the page is `receiver/page/API.md`.
//!
//! This module owns the page's settings, who is signed in (the `sp_session`
//! cookie, checked on every API call), the guard on every state-changing call
//! (the page's own header and, when the browser sends one, its origin), and
//! the answers' shape (`{reason, detail}`). It must not sign anything: every
//! command is signed on the person's device, and the receiver only checks it
//! early with the machine's own verifier and carries it. One account never
//! reads or commands another's: every query below names the signed-in one.

mod assets;
mod board_routes;
#[cfg(test)]
mod command_tests;
mod control_routes;
mod push_routes;
#[cfg(test)]
mod push_tests;
mod sign_in;

use crate::accounts::{Account, AccountError, Accounts};
use crate::http::{Shared, answer};
use axum::Router;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::sync::Arc;

/// The page's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageOptions {
    /// Where people open the page: `https://phone.example.net`, or
    /// `http://localhost:PORT` (WebAuthn allows plain HTTP only there).
    pub origin: String,
    /// The name a passkey prompt shows.
    pub rp_name: String,
    /// Anyone reaching the page may make an account (by default only the
    /// first one may; later ones need an invite from a signed-in account).
    pub open_registration: bool,
    /// Serve the page's files from this folder instead of the built-in copy.
    pub page_dir: Option<std::path::PathBuf>,
}

impl PageOptions {
    pub fn new(origin: impl Into<String>) -> PageOptions {
        PageOptions {
            origin: origin.into(),
            rp_name: "sessionpipe".into(),
            open_registration: false,
            page_dir: None,
        }
    }

    /// The origin parsed, and refused where WebAuthn would refuse it: plain
    /// HTTP anywhere but `localhost`, and an rp id the origin is not on.
    pub(crate) fn check(&self, rp_id: &str) -> Result<url::Url, crate::Invalid> {
        let url = url::Url::parse(&self.origin)
            .map_err(|_| crate::Invalid(format!("origin: {:?} is not a URL", self.origin)))?;
        let host = url.host_str().unwrap_or("");
        match url.scheme() {
            "https" => {}
            "http" if host == "localhost" => {}
            _ => {
                return Err(crate::Invalid(format!(
                    "origin: {} is not https (passkeys need a secure context: serve it over \
                     https, with --tls-cert/--tls-key or behind an HTTPS proxy, or use \
                     http://localhost)",
                    self.origin
                )));
            }
        }
        if url.path() != "/" || url.query().is_some() {
            return Err(crate::Invalid("origin: scheme, host and port only".into()));
        }
        if !(host == rp_id || host.ends_with(&format!(".{rp_id}"))) {
            return Err(crate::Invalid(format!(
                "origin: {host} is not on the rp id {rp_id} (or one of its subdomains)"
            )));
        }
        Ok(url)
    }

    /// Whether the page is served where only its own machine reaches it, so a
    /// loopback push endpoint (a test's) may be taken.
    pub(crate) fn is_local(&self) -> bool {
        self.origin.starts_with("http://localhost")
    }
}

/// The page's shared state.
pub struct App {
    pub(crate) opts: PageOptions,
    pub(crate) accounts: Accounts,
    pub(crate) vapid: crate::push::Vapid,
    pub(crate) push_client: reqwest::Client,
}

/// Why a page request is refused: a code the page can act on, and words a
/// person can read.
#[derive(Debug)]
pub(crate) struct Refusal {
    status: StatusCode,
    reason: &'static str,
    detail: String,
}

impl Refusal {
    pub(crate) fn new(status: StatusCode, reason: &'static str, detail: impl Into<String>) -> Self {
        Refusal {
            status,
            reason,
            detail: detail.into(),
        }
    }

    pub(crate) fn bad(detail: impl Into<String>) -> Self {
        Refusal::new(StatusCode::BAD_REQUEST, "malformed", detail)
    }

    pub(crate) fn not_found(what: &str) -> Self {
        Refusal::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no such {what}"),
        )
    }

    pub(crate) fn signed_out() -> Self {
        Refusal::new(
            StatusCode::UNAUTHORIZED,
            "signed_out",
            "sign in with your passkey",
        )
    }

    pub(crate) fn storage(e: impl std::fmt::Display) -> Self {
        // The words stay on the server's side: they may name a table or a host.
        eprintln!("sessionpipe-receiver: page storage: {e}");
        Refusal::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "storage",
            "the receiver could not read or write its database",
        )
    }
}

impl From<crate::db::DbError> for Refusal {
    fn from(e: crate::db::DbError) -> Self {
        Refusal::storage(e)
    }
}

impl From<crate::control::StoreError> for Refusal {
    fn from(e: crate::control::StoreError) -> Self {
        Refusal::storage(e)
    }
}

impl From<crate::control::Refused> for Refusal {
    fn from(e: crate::control::Refused) -> Self {
        use crate::control::Refused as R;
        let (status, reason) = match &e {
            R::Store(_) => return Refusal::storage(e),
            R::Malformed(_) => (StatusCode::BAD_REQUEST, "malformed"),
            R::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            R::AlreadyApproved => (StatusCode::CONFLICT, "already_approved"),
            R::Expired => (StatusCode::GONE, "expired"),
            R::Full(_) => (StatusCode::TOO_MANY_REQUESTS, "rate_limited"),
            R::TooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "too_large"),
            R::Unauthorized | R::LoopbackOnly => (StatusCode::FORBIDDEN, "forbidden"),
        };
        Refusal::new(status, reason, e.to_string())
    }
}

impl From<AccountError> for Refusal {
    fn from(e: AccountError) -> Self {
        let code = e.code();
        if code == "storage" {
            return Refusal::storage(e);
        }
        let status = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::BAD_REQUEST);
        Refusal::new(status, code, e.to_string())
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        answer(
            self.status,
            json!({"reason": self.reason, "detail": self.detail}),
        )
    }
}

pub(crate) type Answer<T> = Result<T, Refusal>;

pub(crate) fn app(sh: &Shared) -> &App {
    sh.app
        .as_ref()
        .expect("page routes are served only with the page on")
}

/// The cookie's name.
const COOKIE: &str = "sp_session";

/// The session cookie's value, from the `cookie` header.
fn cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v)
}

/// The signed-in account and the credential it signed in with.
pub(crate) struct Me {
    pub account: Account,
    pub credential: String,
}

pub(crate) async fn me(sh: &Shared, headers: &HeaderMap) -> Answer<Me> {
    let token = cookie(headers).ok_or_else(Refusal::signed_out)?;
    let (account, credential) = app(sh)
        .accounts
        .session(token, protocol::time::now_ms())
        .await?
        .ok_or_else(Refusal::signed_out)?;
    Ok(Me {
        account,
        credential,
    })
}

/// A state-changing call must come from the page itself: its header (a form
/// elsewhere cannot set one, and a script elsewhere cannot send it without a
/// preflight this receiver never answers), and its origin when the browser
/// names one.
pub(crate) fn from_the_page(sh: &Shared, headers: &HeaderMap) -> Answer<()> {
    let ours = headers
        .get("x-sessionpipe-page")
        .is_some_and(|v| v.as_bytes() == b"1");
    let origin_ok = headers
        .get(header::ORIGIN)
        .is_none_or(|o| o.as_bytes() == app(sh).opts.origin.trim_end_matches('/').as_bytes());
    if ours && origin_ok {
        Ok(())
    } else {
        Err(Refusal::new(
            StatusCode::FORBIDDEN,
            "not_the_page",
            "this call is the receiver's page's own",
        ))
    }
}

/// The `set-cookie` value for a new sign-in (`Secure` unless on localhost).
pub(crate) fn session_cookie(sh: &Shared, token: &str) -> String {
    let secure = if app(sh).opts.is_local() {
        ""
    } else {
        "; Secure"
    };
    format!("{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age=2592000{secure}")
}

/// The `set-cookie` value that ends a sign-in.
pub(crate) fn cleared_cookie() -> String {
    format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0")
}

/// The page's routes: its files, and its API.
pub(crate) fn routes() -> Router<Arc<Shared>> {
    Router::new()
        .merge(assets::routes())
        .merge(sign_in::routes())
        .merge(board_routes::routes())
        .merge(control_routes::routes())
        .merge(push_routes::routes())
}

/// Opens the page's state: passkeys for `rp_id` at the origin, and the VAPID
/// key (made once and kept in the database).
pub(crate) async fn open(
    opts: PageOptions,
    rp_id: &str,
    db: Arc<crate::db::Db>,
) -> Result<App, String> {
    let origin = opts.check(rp_id).map_err(|e| e.0)?;
    let accounts =
        Accounts::new(Arc::clone(&db), rp_id, &opts.rp_name, &origin).map_err(|e| e.to_string())?;
    let subject = if origin.scheme() == "https" {
        opts.origin.trim_end_matches('/').to_string()
    } else {
        "mailto:receiver@localhost".to_string()
    };
    let vapid = push_routes::vapid_key(&db, &subject)
        .await
        .map_err(|e| e.to_string())?;
    let push_client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(10))
        .build()
        .map_err(|e| e.to_string())?;
    Ok(App {
        opts,
        accounts,
        vapid,
        push_client,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_need_a_secure_context_on_the_rp_id() {
        let ok = |o: &str, rp: &str| PageOptions::new(o).check(rp).is_ok();
        assert!(ok("http://localhost:8080", "localhost"));
        assert!(ok("https://phone.example.net", "example.net"));
        assert!(ok("https://example.net", "example.net"));
        assert!(
            !ok("http://phone.example.net", "example.net"),
            "plain http off localhost"
        );
        assert!(!ok("https://evil.net", "example.net"));
        assert!(!ok("https://phone.example.net/app", "example.net"));
        assert!(!ok("http://127.0.0.1:8080", "127.0.0.1"));
    }

    #[test]
    fn the_cookie_is_found_among_others() {
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, "a=1; sp_session=tok; b=2".parse().unwrap());
        assert_eq!(cookie(&h), Some("tok"));
        h.insert(header::COOKIE, "sp_sessionx=no".parse().unwrap());
        assert_eq!(cookie(&h), None);
    }
}
