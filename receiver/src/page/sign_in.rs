//! The page's account calls: what the page needs before sign-in (`config`),
//! making an account or adding a device with a passkey, signing in and out,
//! who is signed in (`me`), and invites.
//!
//! This module owns those routes and the cookie they set. It must not verify
//! a passkey itself (`accounts` does, with webauthn-rs) and never puts a
//! token, a code or a challenge into a log.

use super::board_routes::machines_of;
use super::shapes::{self, Ceremony, Invite, SignedIn};
use super::state::{Page, cleared_cookie, cookie};
use crate::accounts::{Account, Credential};
use crate::error::ApiError;
use crate::limits::{Door, Quota};
use crate::request::read_json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::Value;
use std::sync::Arc;

/// The largest body an account call reads (a credential with its
/// attestation is a few kB).
const BODY_MAX: usize = 64 * 1024;

pub(super) fn routes() -> Router<Arc<Page>> {
    Router::new()
        .route("/app/api/config", get(config))
        .route("/app/api/register/start", post(register_start))
        .route("/app/api/register/finish", post(register_finish))
        .route("/app/api/signin/start", post(signin_start))
        .route("/app/api/signin/finish", post(signin_finish))
        .route("/app/api/signout", post(signout))
        .route("/app/api/me", get(whoami))
        .route("/app/api/invites", post(invite))
}

fn now() -> i64 {
    protocol::time::now_ms()
}

fn account_shown(a: &Account) -> shapes::Account {
    shapes::Account {
        id: a.id.clone(),
        name: a.name.clone(),
        created_at: protocol::time::rfc3339_ms(a.created_ms),
    }
}

fn credential_shown(c: &Credential) -> shapes::Credential {
    shapes::Credential {
        id: c.id.clone(),
        name: c.name.clone(),
        alg: c.alg,
        spki: c.spki.clone(),
        added_at: protocol::time::rfc3339_ms(c.added_ms),
        used_at: c.used_ms.map(protocol::time::rfc3339_ms),
    }
}

fn text<'a>(doc: &'a Value, member: &str, max: usize) -> Result<&'a str, ApiError> {
    let s = doc[member]
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty() && s.chars().count() <= max)
        .ok_or_else(|| ApiError::malformed(format!("{member}: 1-{max} characters")))?;
    if s.chars().any(char::is_control) {
        return Err(ApiError::malformed(format!(
            "{member}: no control characters"
        )));
    }
    Ok(s)
}

async fn config(State(page): State<Arc<Page>>) -> Result<Json<shapes::Config>, ApiError> {
    let mode = page
        .accounts
        .registration_mode(page.opts.open_registration)
        .await?;
    Ok(Json(shapes::Config {
        rp_id: page.accounts.rp_id().to_string(),
        rp_name: page.accounts.rp_name().to_string(),
        registration: mode,
        accounts: page.accounts.any_account().await?,
        vapid_public_key: page.notifier.vapid_public_key(),
    }))
}

/// Every start and finish of a ceremony is charged to the client (an
/// invite is redeemed here too), before the body is read.
async fn register_start(
    State(page): State<Arc<Page>>,
    quota: Quota,
    body: Body,
) -> Result<Json<Ceremony>, ApiError> {
    quota.take(Door::Ceremony)?;
    let doc = read_json(body, BODY_MAX).await?;
    let name = text(&doc, "name", 80)?;
    let invite = doc["invite"].as_str();
    let (public_key, ceremony) = page
        .accounts
        .register_start(
            name,
            invite,
            page.opts.open_registration,
            &quota.client(),
            now(),
        )
        .await?;
    Ok(Json(Ceremony {
        ceremony,
        public_key,
    }))
}

/// A signed-in answer: the account and credential, with the cookie set.
async fn signed_in(
    page: &Page,
    account: &Account,
    credential: &Credential,
) -> Result<Response, ApiError> {
    let token = page
        .accounts
        .open_session(&account.id, &credential.id, now())
        .await?;
    Ok((
        [(header::SET_COOKIE, page.session_cookie(&token))],
        Json(SignedIn {
            account: account_shown(account),
            credential: credential_shown(credential),
        }),
    )
        .into_response())
}

async fn register_finish(
    State(page): State<Arc<Page>>,
    quota: Quota,
    body: Body,
) -> Result<Response, ApiError> {
    quota.take(Door::Ceremony)?;
    let doc = read_json(body, BODY_MAX).await?;
    let ceremony = text(&doc, "ceremony", 200)?;
    let device = text(&doc, "device", 80).unwrap_or("Passkey");
    let (account, credential, first) = page
        .accounts
        .register_finish(ceremony, device, &doc["credential"], now())
        .await?;
    if first {
        // The receiver's own token's events are the first account's.
        page.owners.claim_operator(&account.id).await?;
    }
    page.log.line(|| "201 passkey registered".into());
    let mut resp = signed_in(&page, &account, &credential).await?;
    *resp.status_mut() = StatusCode::CREATED;
    Ok(resp)
}

async fn signin_start(
    State(page): State<Arc<Page>>,
    quota: Quota,
) -> Result<Json<Ceremony>, ApiError> {
    quota.take(Door::Ceremony)?;
    let (public_key, ceremony) = page.accounts.signin_start(&quota.client(), now()).await?;
    Ok(Json(Ceremony {
        ceremony,
        public_key,
    }))
}

async fn signin_finish(
    State(page): State<Arc<Page>>,
    quota: Quota,
    body: Body,
) -> Result<Response, ApiError> {
    quota.take(Door::Ceremony)?;
    let doc = read_json(body, BODY_MAX).await?;
    let ceremony = text(&doc, "ceremony", 200)?;
    let (account, credential) = page
        .accounts
        .signin_finish(ceremony, &doc["credential"], now())
        .await?;
    signed_in(&page, &account, &credential).await
}

async fn signout(State(page): State<Arc<Page>>, headers: HeaderMap) -> Result<Response, ApiError> {
    if let Some(token) = cookie(&headers) {
        page.accounts.close_session(token).await?;
    }
    Ok((
        StatusCode::NO_CONTENT,
        [(header::SET_COOKIE, cleared_cookie())],
    )
        .into_response())
}

async fn whoami(
    State(page): State<Arc<Page>>,
    headers: HeaderMap,
) -> Result<Json<shapes::Me>, ApiError> {
    let me = page.me(&headers).await?;
    let credentials = page
        .accounts
        .credentials(&me.account.id)
        .await?
        .iter()
        .map(credential_shown)
        .collect();
    let machines = machines_of(&page, &me.account.id).await?;
    Ok(Json(shapes::Me {
        account: account_shown(&me.account),
        credential: me.credential,
        credentials,
        machines,
    }))
}

async fn invite(
    State(page): State<Arc<Page>>,
    headers: HeaderMap,
    body: Body,
) -> Result<(StatusCode, Json<Invite>), ApiError> {
    let me = page.me(&headers).await?;
    let doc = read_json(body, BODY_MAX).await?;
    let device = doc["device"].as_bool().ok_or_else(|| {
        ApiError::malformed("device: true (another device of yours) or false (a new account)")
    })?;
    let code = page.accounts.invite(&me.account.id, device, now()).await?;
    let url = format!("{}/#invite={code}", page.opts.origin.trim_end_matches('/'));
    Ok((
        StatusCode::CREATED,
        Json(Invite {
            code,
            url,
            expires_at: protocol::time::rfc3339_ms(now() + 24 * 3600 * 1000),
        }),
    ))
}
