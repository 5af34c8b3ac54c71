//! The events side's test doors, compiled only with the `test-doors`
//! feature (the test kit's; a release build has none, and answers 404 there):
//! the fault door (`POST /test/faults`, arming the answers the next event
//! POSTs get) and the read door (`GET /v1/sessions/<harness>:<id>`, a
//! session's stored events), what the delivery conformance and the tests
//! check a sender with.
//!
//! This module owns the doors and the `Fault` they arm. The fault door is
//! for loopback peers with the sink token; the read door takes any sink token
//! and reads only its owner's events.

use super::fault::{Fault, default_fault_body};
use super::state::Events;
use crate::client::ClientAddr;
use crate::error::ApiError;
use crate::invalid::Invalid;
use crate::request::bearer;
use crate::store;
use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// The events side's test doors.
pub fn router(events: Arc<Events>) -> Router {
    Router::new()
        .route("/v1/sessions/{key}", get(read_session))
        .route("/test/faults", post(set_faults))
        .with_state(events)
}

/// Arms the fault door (`None` disarms), as `POST /test/faults` does.
pub fn arm(ev: &Events, fault: Option<Fault>) {
    *ev.fault.lock().unwrap_or_else(|p| p.into_inner()) = fault;
}

/// Takes one answer off the armed fault, if any.
pub(super) fn take_fault(ev: &Events) -> Option<Fault> {
    let mut slot = ev.fault.lock().unwrap_or_else(|p| p.into_inner());
    let f = slot.as_mut()?;
    let served = f.clone();
    f.count = f.count.saturating_sub(1);
    if f.count == 0 {
        *slot = None;
    }
    Some(served)
}

/// `GET /v1/sessions/<harness>:<id>`: the stored events in seq order, or 404.
async fn read_session(
    State(ev): State<Arc<Events>>,
    headers: HeaderMap,
    Path(key): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let sender = match bearer(&headers) {
        Some(given) => ev.owners.sender_of(given).await?,
        None => None,
    };
    let owner = sender.ok_or_else(ApiError::unauthorized)?.owner;
    let owner = ev.owners.account_of(owner).await?;
    let Some((harness, session)) = key.split_once(':') else {
        return Err(ApiError::malformed("expected <harness>:<session id>"));
    };
    let not_found = || ApiError::bare(StatusCode::NOT_FOUND, "not_found");
    if !protocol::valid_harness_name(harness) || !protocol::valid_session_id(session) {
        return Err(not_found());
    }
    store::read(&ev.db, &owner, harness, session)
        .await?
        .map(|events| Json(Value::Array(events)))
        .ok_or_else(not_found)
}

/// `POST /test/faults`: arms the fault door (`{}` disarms it). Loopback
/// clients only, with the sink token.
async fn set_faults(
    State(ev): State<Arc<Events>>,
    Extension(client): Extension<ClientAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    if !client.0.is_loopback() {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "loopback_only",
            "the fault door is for local tests",
        ));
    }
    if !bearer(&headers).is_some_and(|t| ev.owners.is_operator_token(t)) {
        return Err(ApiError::unauthorized());
    }
    let fault = serde_json::from_slice::<Value>(&body)
        .map_err(|_| Invalid::from("the body is not JSON"))
        .and_then(|v| Fault::from_json(&v))
        .map_err(|why| ApiError::malformed(why.0))?;
    let armed = fault.as_ref().map(Fault::to_json);
    arm(&ev, fault);
    Ok(Json(json!({"armed": armed})))
}

pub(super) async fn serve_fault(ev: &Events, f: Fault) -> Response {
    if f.delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(f.delay_ms)).await;
    }
    let status = StatusCode::from_u16(f.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = f
        .body
        .clone()
        .unwrap_or_else(|| default_fault_body(status, ev.settings.max_tier));
    let mut resp = (status, Json(body)).into_response();
    if let Some(v) = f
        .retry_after
        .as_deref()
        .and_then(|v| HeaderValue::from_str(v).ok())
    {
        resp.headers_mut().insert(header::RETRY_AFTER, v);
    }
    resp
}
