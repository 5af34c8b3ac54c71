//! The page's account calls: what the page needs before sign-in (`config`),
//! making an account or adding a device with a passkey, signing in and out,
//! who is signed in (`me`), and invites.
//!
//! This module owns those routes and the cookie they set. It must not verify
//! a passkey itself (`accounts` does, with webauthn-rs) and never puts a
//! token, a code or a challenge into a log.

use super::{Answer, Refusal, app, cleared_cookie, from_the_page, me, session_cookie};
use crate::accounts::{Account, Credential};
use crate::http::Shared;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};
use std::sync::Arc;

/// The largest body an account call reads (a credential with its
/// attestation is a few kB).
const BODY_MAX: usize = 64 * 1024;

pub(super) fn routes() -> Router<Arc<Shared>> {
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

/// The body as JSON, read whole (at most `max` bytes).
pub(crate) async fn json_body(body: Body, max: usize) -> Answer<Value> {
    let bytes = axum::body::to_bytes(body, max).await.map_err(|_| {
        Refusal::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            format!("body over {max} bytes"),
        )
    })?;
    serde_json::from_slice(&bytes).map_err(|_| Refusal::bad("the body is not JSON"))
}

pub(crate) fn account_json(a: &Account) -> Value {
    json!({"id": a.id, "name": a.name, "created_at": protocol::time::rfc3339_ms(a.created_ms)})
}

pub(crate) fn credential_json(c: &Credential) -> Value {
    json!({
        "id": c.id, "name": c.name, "alg": c.alg, "spki": c.spki,
        "added_at": protocol::time::rfc3339_ms(c.added_ms),
        "used_at": c.used_ms.map(protocol::time::rfc3339_ms),
    })
}

fn text<'a>(doc: &'a Value, member: &str, max: usize) -> Answer<&'a str> {
    let s = doc[member]
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty() && s.chars().count() <= max)
        .ok_or_else(|| Refusal::bad(format!("{member}: 1-{max} characters")))?;
    if s.chars().any(char::is_control) {
        return Err(Refusal::bad(format!("{member}: no control characters")));
    }
    Ok(s)
}

async fn config(State(sh): State<Arc<Shared>>) -> Response {
    let r: Answer<Json<Value>> = async {
        let a = app(&sh);
        let mode = a
            .accounts
            .registration_mode(a.opts.open_registration)
            .await?;
        Ok(Json(json!({
                        "rp_id": a.accounts.rp_id(),
            "rp_name": a.accounts.rp_name(),
            "registration": mode,
            "accounts": a.accounts.any_account().await?,
            "vapid_public_key": a.vapid.public_key_b64url(),
        })))
    }
    .await;
    r.into_response()
}

async fn register_start(State(sh): State<Arc<Shared>>, headers: HeaderMap, body: Body) -> Response {
    let r: Answer<Json<Value>> = async {
        from_the_page(&sh, &headers)?;
        let doc = json_body(body, BODY_MAX).await?;
        let name = text(&doc, "name", 80)?;
        let invite = doc["invite"].as_str();
        let a = app(&sh);
        let (public_key, ceremony) = a
            .accounts
            .register_start(name, invite, a.opts.open_registration, now())
            .await?;
        Ok(Json(json!({"ceremony": ceremony, "publicKey": public_key})))
    }
    .await;
    r.into_response()
}

/// A signed-in answer: the account and credential, with the cookie set.
async fn signed_in(sh: &Shared, account: &Account, credential: &Credential) -> Answer<Response> {
    let token = app(sh)
        .accounts
        .open_session(&account.id, &credential.id, now())
        .await?;
    Ok((
        [(header::SET_COOKIE, session_cookie(sh, &token))],
        Json(json!({"account": account_json(account), "credential": credential_json(credential)})),
    )
        .into_response())
}

async fn register_finish(
    State(sh): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let r: Answer<Response> = async {
        from_the_page(&sh, &headers)?;
        let doc = json_body(body, BODY_MAX).await?;
        let ceremony = text(&doc, "ceremony", 200)?;
        let device = text(&doc, "device", 80).unwrap_or("Passkey");
        let (account, credential, first) = app(&sh)
            .accounts
            .register_finish(ceremony, device, &doc["credential"], now())
            .await?;
        if first {
            // The receiver's own token's events are the first account's.
            sh.owners.claim_operator(&sh.db, &account.id).await?;
        }
        sh.log(|| "201 passkey registered".into());
        let mut resp = signed_in(&sh, &account, &credential).await?;
        *resp.status_mut() = StatusCode::CREATED;
        Ok(resp)
    }
    .await;
    r.into_response()
}

async fn signin_start(State(sh): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let r: Answer<Json<Value>> = async {
        from_the_page(&sh, &headers)?;
        let (public_key, ceremony) = app(&sh).accounts.signin_start(now()).await?;
        Ok(Json(json!({"ceremony": ceremony, "publicKey": public_key})))
    }
    .await;
    r.into_response()
}

async fn signin_finish(State(sh): State<Arc<Shared>>, headers: HeaderMap, body: Body) -> Response {
    let r: Answer<Response> = async {
        from_the_page(&sh, &headers)?;
        let doc = json_body(body, BODY_MAX).await?;
        let ceremony = text(&doc, "ceremony", 200)?;
        let (account, credential) = app(&sh)
            .accounts
            .signin_finish(ceremony, &doc["credential"], now())
            .await?;
        signed_in(&sh, &account, &credential).await
    }
    .await;
    r.into_response()
}

async fn signout(State(sh): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let r: Answer<Response> = async {
        from_the_page(&sh, &headers)?;
        if let Some(token) = super::cookie(&headers) {
            app(&sh).accounts.close_session(token).await?;
        }
        Ok((
            StatusCode::NO_CONTENT,
            [(header::SET_COOKIE, cleared_cookie())],
        )
            .into_response())
    }
    .await;
    r.into_response()
}

async fn whoami(State(sh): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let r: Answer<Json<Value>> = async {
        let me = me(&sh, &headers).await?;
        let credentials: Vec<Value> = app(&sh)
            .accounts
            .credentials(&me.account.id)
            .await?
            .iter()
            .map(credential_json)
            .collect();
        let machines = super::board_routes::machines_json(&sh, &me.account.id).await?;
        Ok(Json(json!({
            "account": account_json(&me.account),
            "credential": me.credential,
            "credentials": credentials,
            "machines": machines,
        })))
    }
    .await;
    r.into_response()
}

async fn invite(State(sh): State<Arc<Shared>>, headers: HeaderMap, body: Body) -> Response {
    let r: Answer<(StatusCode, Json<Value>)> = async {
        from_the_page(&sh, &headers)?;
        let me = me(&sh, &headers).await?;
        let doc = json_body(body, BODY_MAX).await?;
        let device = doc["device"].as_bool().ok_or_else(|| {
            Refusal::bad("device: true (another device of yours) or false (a new account)")
        })?;
        let a = app(&sh);
        let code = a.accounts.invite(&me.account.id, device, now()).await?;
        let url = format!("{}/#invite={code}", a.opts.origin.trim_end_matches('/'));
        Ok((
            StatusCode::CREATED,
            Json(json!({
                "code": code, "url": url,
                "expires_at": protocol::time::rfc3339_ms(now() + 24 * 3600 * 1000),
            })),
        ))
    }
    .await;
    r.into_response()
}
