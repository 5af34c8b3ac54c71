//! The control side's test doors, compiled only with the `test-doors`
//! feature (the test kit's; a release build has none, and answers 404
//! there): they stand in for a person at a device. `POST /test/pair/approve`
//! approves a pairing with a proof made elsewhere, `POST
//! /test/control/enqueue` queues a signed message, `GET
//! /test/control/messages` reads a machine's queue back, `POST
//! /test/control/files` puts a file.
//!
//! This module owns those doors: loopback clients only, with the sink
//! token, as the fault door. It carries what it is given as given (the
//! machine verifies proofs and signatures) and never logs a token.

use super::error::Refused;
use super::http::{BODY_MAX, Params, now};
use super::shapes::{self, Malformed};
use super::state::{Control, file_sha256};
use crate::client::ClientAddr;
use crate::error::ApiError;
use crate::request::read_json;
use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};
use std::sync::Arc;

/// How long an enqueued message lives when the door is not told.
const DEFAULT_EXPIRY_S: u64 = 3600;

/// The most bytes the files door takes: one signed file (25 MiB) and room
/// past it, so a test can serve more than a command's `size` says.
const FILE_BODY_MAX: usize = 26_214_400 + (1 << 20);

/// The content type of a file put without one.
const OCTET_STREAM: &str = "application/octet-stream";

/// The control side's test doors.
pub fn router(control: Arc<Control>) -> Router {
    Router::new()
        .route("/test/pair/approve", post(approve))
        .route("/test/control/enqueue", post(enqueue))
        .route("/test/control/messages", get(messages))
        .route("/test/control/files", post(put_file))
        .with_state(control)
}

fn loopback_and_sink(
    ctl: &Control,
    client: ClientAddr,
    headers: &HeaderMap,
) -> Result<(), ApiError> {
    if !client.0.is_loopback() {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "loopback_only",
            "loopback only: the test doors are for local tests",
        ));
    }
    if !ctl.is_sink(headers) {
        return Err(ApiError::unauthorized());
    }
    Ok(())
}

/// `POST /test/pair/approve {code, key: {id, alg, spki}, proof: {cred, ad, cd,
/// sig}, account?}`: what the person's approval with a passkey gives. Carried as
/// given; the machine verifies the proof. 200 `{machine}`.
async fn approve(
    State(ctl): State<Arc<Control>>,
    Extension(client): Extension<ClientAddr>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Value>, ApiError> {
    let doc = read_json(body, BODY_MAX).await?;
    loopback_and_sink(&ctl, client, &headers)?;
    let a = shapes::approval(&doc)?;
    let machine = ctl
        .store
        .approve(&a.code, &a.key, &a.proof, a.account.as_deref(), now())
        .await?;
    Ok(Json(json!({"machine": machine})))
}

/// `POST /test/control/enqueue {machine, cmd, csig?, grant?, confirm?,
/// expires_in_s?}`: queues a signed message for a paired machine, as a device
/// would through the receiver's own page. 201 `{id}`.
async fn enqueue(
    State(ctl): State<Arc<Control>>,
    Extension(client): Extension<ClientAddr>,
    headers: HeaderMap,
    body: Body,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let doc = read_json(body, BODY_MAX).await?;
    loopback_and_sink(&ctl, client, &headers)?;
    let m = shapes::new_message(&doc, DEFAULT_EXPIRY_S)?;
    let id = ctl
        .store
        .enqueue(&m, None, now(), ctl.opts.max_queue)
        .await?;
    ctl.wake(&m.machine).await;
    Ok((StatusCode::CREATED, Json(json!({"id": id}))))
}

/// `GET /test/control/messages?machine=`: the machine, its last hello, its keys
/// and every message kept, each with its state (`queued`, `polled`, `taken`,
/// `final`, `expired`) and its acks.
async fn messages(
    State(ctl): State<Arc<Control>>,
    Extension(client): Extension<ClientAddr>,
    headers: HeaderMap,
    q: Params,
) -> Result<Json<Value>, ApiError> {
    loopback_and_sink(&ctl, client, &headers)?;
    let machine = q
        .get("machine")
        .cloned()
        .ok_or_else(|| Malformed::from("machine: missing"))?;
    let view = ctl
        .store
        .view(&machine, now())
        .await?
        .ok_or(Refused::NotFound("no such machine"))?;
    Ok(Json(view))
}

/// `POST /test/control/files[?sha256=]`: the body's bytes, to be served with
/// the request's `content-type`, as a device's upload would leave them. Filed
/// under their own SHA-256, or under `sha256` when given (a hash that is not
/// theirs, to test the machine's check). 201 `{sha256}`.
async fn put_file(
    State(ctl): State<Arc<Control>>,
    Extension(client): Extension<ClientAddr>,
    headers: HeaderMap,
    q: Params,
    body: Body,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let bytes = axum::body::to_bytes(body, FILE_BODY_MAX)
        .await
        .map_err(|_| ApiError::too_large(format!("body over {FILE_BODY_MAX} bytes")).closing())?;
    loopback_and_sink(&ctl, client, &headers)?;
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .filter(|t| !t.is_empty() && t.len() <= 100)
        .unwrap_or(OCTET_STREAM)
        .to_string();
    let sha256 = q
        .get("sha256")
        .cloned()
        .unwrap_or_else(|| file_sha256(&bytes));
    ctl.put_file(&sha256, &bytes, &content_type, None).await?;
    Ok((StatusCode::CREATED, Json(json!({"sha256": sha256}))))
}
