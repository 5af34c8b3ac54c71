//! The page's control calls: a pairing to approve (its six digits, and the
//! approval with this device's passkey), a signed command to queue (checked
//! early with the machine's own verifier, so a bad one is refused where the
//! person sees why), a command's acks as they arrive, and a `start`'s files.
//!
//! This module owns those routes and the rules that are the receiver's: a
//! command goes only to a machine of the signed-in account, a pairing proof
//! must be by one of that account's own passkeys, a nonce is taken once. It
//! must not sign (the device did) and carries the command's bytes unchanged.

use super::shapes::{Approved, Pairing, PairingStatus, Queued, Uploaded};
use super::state::Page;
use crate::control::{file_sha256, shapes::NewMessage};
use crate::error::ApiError;
use crate::limits::{Door, Quota};
use crate::request::read_json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};
use sessionpipe_verifier as verifier;
use std::sync::Arc;

/// A command signed longer ago than this is refused here (`too_old`): the
/// machine allows a day, but a device sends what it just signed.
const EARLY_WINDOW_MS: i64 = 10 * 60 * 1000;

/// How long a queued command waits for its machine.
const COMMAND_TTL_S: u64 = 3600;

/// A file for a `start`: the protocol's largest.
const FILE_MAX: usize = 26_214_400;

const BODY_MAX: usize = 256 * 1024;

pub(super) fn routes() -> Router<Arc<Page>> {
    Router::new()
        .route("/app/api/pair/{code}", get(pairing))
        .route("/app/api/pair/{code}/approve", post(approve))
        .route("/app/api/commands", post(command))
        .route("/app/api/commands/{id}", get(command_state))
        .route("/app/api/files", post(file))
}

fn now() -> i64 {
    protocol::time::now_ms()
}

fn refusal(r: &verifier::Refusal) -> ApiError {
    let status = match r.code() {
        "untrusted_key" | "bad_assertion" | "bad_grant" | "outside_grant" | "bad_csig"
        | "unsigned" => StatusCode::FORBIDDEN,
        "replay" => StatusCode::CONFLICT,
        _ => StatusCode::BAD_REQUEST,
    };
    ApiError::new(status, r.code(), r.to_string())
}

async fn pairing(
    State(page): State<Arc<Page>>,
    headers: HeaderMap,
    Path(code): Path<String>,
) -> Result<Json<Pairing>, ApiError> {
    page.me(&headers).await?;
    let now = now();
    let p = page
        .control
        .store
        .pairing(&code, now)
        .await?
        .ok_or_else(|| ApiError::not_found("pairing"))?;
    let status = if p.approved.is_some() {
        PairingStatus::Approved
    } else if now >= p.expires_ms {
        PairingStatus::Expired
    } else {
        PairingStatus::Pending
    };
    Ok(Json(Pairing {
        code,
        machine: p.machine,
        name: p.name,
        check: p.check,
        expires_at: protocol::time::rfc3339_ms(p.expires_ms),
        first: p.first,
        status,
    }))
}

async fn approve(
    State(page): State<Arc<Page>>,
    headers: HeaderMap,
    Path(code): Path<String>,
    body: Body,
) -> Result<Json<Approved>, ApiError> {
    let me = page.me(&headers).await?;
    let doc = read_json(body, BODY_MAX).await?;
    let ctl = &page.control;
    let key: verifier::TrustedKey = serde_json::from_value(doc["key"].clone())
        .map_err(|_| ApiError::malformed("key: {id, alg, spki}"))?;
    let proof: verifier::Assertion = serde_json::from_value(doc["proof"].clone())
        .map_err(|_| ApiError::malformed("proof: {cred, ad, cd, sig}"))?;
    // Only a passkey of this account may be handed to a machine, exactly
    // as it was registered here.
    let own = page
        .accounts
        .credential(&key.id)
        .await?
        .filter(|c| c.account == me.account.id && c.spki == key.spki && c.alg == key.alg)
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::FORBIDDEN,
                "untrusted_key",
                "that key is not one of your passkeys here",
            )
        })?;
    let p = ctl
        .store
        .pairing(&code, now())
        .await?
        .ok_or_else(|| ApiError::not_found("pairing"))?;
    verifier::verify_enrollment(&p.machine, &code, &key, &proof, &ctl.opts.rp_id)
        .map_err(|r| refusal(&r))?;
    let machine = ctl
        .store
        .approve(
            &code,
            &json!({"id": own.id, "alg": own.alg, "spki": own.spki}),
            &serde_json::to_value(&proof).expect("an assertion serialises"),
            Some(&me.account.id),
            now(),
        )
        .await?;
    page.log
        .line(|| "200 pairing approved from the page".into());
    Ok(Json(Approved { machine }))
}

async fn command(
    State(page): State<Arc<Page>>,
    headers: HeaderMap,
    body: Body,
) -> Result<(StatusCode, Json<Queued>), ApiError> {
    let me = page.me(&headers).await?;
    let doc = read_json(body, BODY_MAX).await?;
    let ctl = &page.control;
    let machine = doc["machine"]
        .as_str()
        .ok_or_else(|| ApiError::malformed("machine: missing"))?
        .to_string();
    // Another account's machine, or none: the same answer.
    if ctl
        .store
        .machine_account(&machine)
        .await?
        .flatten()
        .as_deref()
        != Some(me.account.id.as_str())
    {
        return Err(ApiError::not_found("machine"));
    }
    let mut signed_doc = doc.clone();
    if let Some(o) = signed_doc.as_object_mut() {
        o.remove("machine");
    }
    let signed: verifier::Signed = serde_json::from_value(signed_doc)
        .map_err(|_| ApiError::malformed("cmd, and csig with grant, or confirm"))?;
    let trusted: Vec<verifier::TrustedKey> = ctl
        .store
        .keys(&machine)
        .await?
        .into_iter()
        .filter_map(|k| serde_json::from_value(k).ok())
        .collect();
    let now = now();
    let policy = verifier::Policy {
        max_age_ms: EARLY_WINDOW_MS,
        ..verifier::Policy::new(&machine, &ctl.opts.rp_id, &trusted, now)
    };
    // The nonce is taken below, in the database, so every receiver
    // process refuses a second send; the verifier's own store is fresh.
    let verified = verifier::verify(&signed, &policy, &mut verifier::MemoryNonces::new())
        .map_err(|r| refusal(&r))?;
    if !ctl
        .store
        .take_nonce(&verified.command.nonce, verified.command.iat_ms)
        .await?
    {
        return Err(refusal(&verifier::Refusal::Replay));
    }
    let message = NewMessage {
        machine: machine.clone(),
        cmd: signed.cmd,
        csig: signed.csig,
        grant: signed
            .grant
            .map(|g| serde_json::to_value(g).expect("a grant serialises")),
        confirm: signed
            .confirm
            .map(|c| serde_json::to_value(c).expect("an assertion serialises")),
        expires_in_s: COMMAND_TTL_S,
    };
    let id = ctl
        .store
        .enqueue(&message, Some(&me.account.id), now, ctl.opts.max_queue)
        .await?;
    ctl.wake(&machine).await;
    page.log
        .line(|| format!("201 {} queued from the page", verified.command.kind()));
    Ok((StatusCode::CREATED, Json(Queued { id })))
}

async fn command_state(
    State(page): State<Arc<Page>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let me = page.me(&headers).await?;
    let (machine, mut m) = page
        .control
        .store
        .message_of(&id, &me.account.id, now())
        .await?
        .ok_or_else(|| ApiError::not_found("command"))?;
    m["machine"] = Value::String(machine);
    if let Some(o) = m.as_object_mut() {
        // The page sent the command; it needs its acks, not its bytes back.
        o.remove("cmd");
    }
    Ok(Json(m))
}

/// `POST /app/api/files`: charged to the client before the body is read.
async fn file(
    State(page): State<Arc<Page>>,
    quota: Quota,
    headers: HeaderMap,
    body: Body,
) -> Result<(StatusCode, Json<Uploaded>), ApiError> {
    let me = page.me(&headers).await?;
    quota.take(Door::Upload)?;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    let too_large = || {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            format!("a file is at most {FILE_MAX} bytes"),
        )
    };
    if declared.is_some_and(|n| n > FILE_MAX) {
        return Err(too_large());
    }
    let bytes = axum::body::to_bytes(body, FILE_MAX)
        .await
        .map_err(|_| too_large())?;
    if bytes.is_empty() {
        return Err(ApiError::malformed("the file is empty"));
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .filter(|t| !t.is_empty() && t.len() <= 100)
        .unwrap_or("application/octet-stream")
        .to_string();
    let sha256 = file_sha256(&bytes);
    page.control
        .put_file(&sha256, &bytes, &content_type, Some(&me.account.id))
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(Uploaded {
            sha256,
            size: bytes.len(),
        }),
    ))
}
