//! The HTTP side: routes, the answers of the binding's error table, the
//! well-known document, and the two test doors of the events side (the read door
//! and the fault door); the control side's routes join them (`control::routes`)
//! when control is on.
//!
//! This module owns request handling and the order of the steps of a batch POST:
//! read the body, fault door, bearer, `sessionpipe-protocol`, size in bytes,
//! signature, JSON shape, event count, protocol above 1, tier above `max_tier`, then
//! each event on its own (rejected, duplicate or stored). Batch-level refusals store
//! nothing. It must not write to the database itself (`store` does) and never
//! logs a body, a token, a secret or an `authorization` header.

use crate::check::{self, SUPPORTED};
use crate::db::Db;
use crate::store;
use crate::{Fault, Stats};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The events endpoint, as the well-known document names it.
pub const EVENTS_PATH: &str = "/v1/events";

/// The most body bytes read before answering; past it (or a `content-length`
/// naming more) the answer is 413 and the connection is closed, unread. Four
/// times the largest `max_bytes` (262 144), so that a sender's batch a little
/// over is still read and answered rather than cut off.
const READ_CAP: usize = 1024 * 1024;

/// Settings fixed at start.
pub struct Settings {
    pub token: String,
    pub max_tier: u8,
    pub max_events: usize,
    pub max_bytes: usize,
    pub webhook_key: Option<Vec<u8>>,
    pub log: bool,
}

/// Everything the handlers share.
pub struct Shared {
    pub settings: Settings,
    /// The control side, when it is on.
    pub control: Option<crate::control::Control>,
    pub db: Arc<Db>,
    pub owners: crate::owners::Owners,
    /// The page, when it is on.
    pub app: Option<crate::app::App>,
    pub fault: Mutex<Option<Fault>>,
    pub posts: AtomicU64,
    pub accepted: AtomicU64,
    pub duplicates: AtomicU64,
    pub rejected: AtomicU64,
}

impl Shared {
    pub async fn stats(&self) -> Result<Stats, crate::db::DbError> {
        let (sessions, events) = store::counts(&self.db).await?;
        Ok(Stats {
            posts: self.posts.load(Ordering::Relaxed),
            accepted: self.accepted.load(Ordering::Relaxed),
            duplicates: self.duplicates.load(Ordering::Relaxed),
            rejected: self.rejected.load(Ordering::Relaxed),
            sessions,
            events,
        })
    }

    /// Takes one answer off the armed fault, if any.
    fn take_fault(&self) -> Option<Fault> {
        let mut slot = self.fault.lock().unwrap_or_else(|p| p.into_inner());
        let f = slot.as_mut()?;
        let served = f.clone();
        f.count = f.count.saturating_sub(1);
        if f.count == 0 {
            *slot = None;
        }
        Some(served)
    }

    pub(crate) fn log(&self, line: impl FnOnce() -> String) {
        if self.settings.log {
            eprintln!("sessionpipe-receiver: {}", line());
        }
    }
}

pub fn router(shared: Arc<Shared>) -> Router {
    let mut app = Router::new()
        .route("/.well-known/sessionpipe", get(well_known))
        .route(EVENTS_PATH, post(post_events))
        .route("/v1/sessions/{key}", get(read_session))
        .route("/test/faults", post(set_faults));
    if shared.control.is_some() {
        app = app.merge(crate::control::routes(shared.app.is_none()));
    }
    if shared.app.is_some() {
        app = app.merge(crate::app::routes());
    }
    app.fallback(|| async { answer(StatusCode::NOT_FOUND, json!({"reason": "not_found"})) })
        .with_state(shared)
}

pub(crate) fn answer(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}

fn refuse(status: StatusCode, reason: &str, detail: impl Into<String>) -> Response {
    answer(status, json!({"reason": reason, "detail": detail.into()}))
}

/// The well-known document (`schemas/well-known.json`).
pub fn discovery(sh: &Shared) -> Value {
    let s = &sh.settings;
    let mut doc = json!({
        "protocol": SUPPORTED,
        "max_tier": s.max_tier,
        "capabilities": ["events", "backfill", "forget"],
        "auth": ["bearer"],
        "endpoints": {"events": EVENTS_PATH},
        "batch": {"max_events": s.max_events, "max_bytes": s.max_bytes},
    });
    if let Some(c) = &sh.control {
        doc["capabilities"]
            .as_array_mut()
            .expect("a list")
            .push(json!("control"));
        doc["endpoints"]["control"] = json!(crate::control::CONTROL_PATH);
        doc["control"] = c.opts.discovery();
    }
    doc
}

async fn well_known(State(sh): State<Arc<Shared>>) -> Response {
    answer(StatusCode::OK, discovery(&sh))
}

/// The token of `Authorization: Bearer <token>`, the scheme in any case.
pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
    let v = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())?;
    let (scheme, token) = v.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// The sink token as the bearer, compared in constant time so that the answer's
/// timing says nothing about the token. A machine's token is not it: it opens
/// the machine's own calls only.
/// Whose events the request's bearer sends (`owners`), `None` when it is no
/// sink token here.
pub(crate) async fn owner_of(
    sh: &Shared,
    headers: &HeaderMap,
) -> Result<Option<String>, crate::db::DbError> {
    Ok(sender_of(sh, headers).await?.map(|s| s.owner))
}

/// Who the request's bearer speaks for, with the machine its token was
/// minted for (`owners`).
pub(crate) async fn sender_of(
    sh: &Shared,
    headers: &HeaderMap,
) -> Result<Option<crate::owners::Sender>, crate::db::DbError> {
    let Some(given) = bearer(headers) else {
        return Ok(None);
    };
    sh.owners.sender_of(&sh.db, &sh.settings.token, given).await
}

pub(crate) fn authorized(sh: &Shared, headers: &HeaderMap) -> bool {
    use subtle::ConstantTimeEq;
    bearer(headers).is_some_and(|t| bool::from(t.as_bytes().ct_eq(sh.settings.token.as_bytes())))
}

fn unauthorized() -> Response {
    answer(StatusCode::UNAUTHORIZED, json!({"reason": "unauthorized"}))
}

fn header_str<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

fn unsupported(sh: &Shared, what: &str) -> Response {
    sh.log(|| format!("400 unsupported_protocol ({what})"));
    answer(
        StatusCode::BAD_REQUEST,
        json!({"reason": "unsupported_protocol", "supported": SUPPORTED}),
    )
}

fn malformed(sh: &Shared, detail: &str) -> Response {
    sh.log(|| format!("400 malformed: {detail}"));
    refuse(StatusCode::BAD_REQUEST, "malformed", detail)
}

fn too_large(sh: &Shared, detail: String) -> Response {
    sh.log(|| format!("413 {detail}"));
    refuse(StatusCode::PAYLOAD_TOO_LARGE, "too_large", detail)
}

async fn post_events(State(sh): State<Arc<Shared>>, headers: HeaderMap, body: Body) -> Response {
    sh.posts.fetch_add(1, Ordering::Relaxed);
    // The body is read whole before any answer, refusals included: answering while
    // the sender is still writing leaves unread bytes that make the kernel reset the
    // connection, and the sender would see a network error instead of our 401 or
    // 413 (and a pooled connection would die under its next request).
    let declared = header_str(&headers, "content-length").and_then(|v| v.parse::<u64>().ok());
    let read = match declared {
        Some(n) if n > READ_CAP as u64 => None,
        _ => axum::body::to_bytes(body, READ_CAP).await.ok(),
    };
    let Some(bytes) = read else {
        sh.log(|| format!("413 body over {READ_CAP} bytes, connection closed"));
        let mut resp = refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            "body over max_bytes",
        );
        resp.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        return resp;
    };
    if let Some(f) = sh.take_fault() {
        sh.log(|| format!("{} (fault door)", f.status));
        return serve_fault(&sh, f).await;
    }
    let sender = match sender_of(&sh, &headers).await {
        Ok(Some(o)) => o,
        Ok(None) => {
            sh.log(|| "401 (wrong or missing bearer token)".into());
            return unauthorized();
        }
        Err(e) => {
            sh.log(|| format!("500 reading sink tokens: {e}"));
            return refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                "storage",
                "could not check the token",
            );
        }
    };
    if let Some(v) = headers.get("sessionpipe-protocol") {
        match v.to_str().ok().and_then(|v| v.trim().parse::<u64>().ok()) {
            Some(p) if SUPPORTED.contains(&p) => {}
            Some(_) => return unsupported(&sh, "header"),
            None => return malformed(&sh, "sessionpipe-protocol is not an integer"),
        }
    }
    let limit = sh.settings.max_bytes;
    if bytes.len() > limit {
        return too_large(&sh, format!("{} bytes, max_bytes is {limit}", bytes.len()));
    }
    if let Some(key) = &sh.settings.webhook_key {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let verdict = crate::signature::verify(
            key,
            header_str(&headers, "webhook-id"),
            header_str(&headers, "webhook-timestamp"),
            header_str(&headers, "webhook-signature"),
            &bytes,
            now,
        );
        if let Err(why) = verdict {
            sh.log(|| format!("401 {why}"));
            return refuse(StatusCode::UNAUTHORIZED, "bad_signature", why);
        }
    }
    match batch(&sh, bytes) {
        Ok(events) => store_batch(sh, &sender, events).await,
        Err(refusal) => refusal,
    }
}

/// The batch-level checks, in order; the events when all pass.
#[allow(clippy::result_large_err)] // the error is the answer; it goes straight out
fn batch(sh: &Shared, bytes: Bytes) -> Result<Vec<Value>, Response> {
    let doc: Value =
        serde_json::from_slice(&bytes).map_err(|_| malformed(sh, "the body is not JSON"))?;
    let events = match doc {
        Value::Object(mut o) => o.remove("events"),
        _ => None,
    };
    let Some(Value::Array(events)) = events else {
        return Err(malformed(sh, "no events list"));
    };
    if events.is_empty() {
        return Err(malformed(sh, "the events list is empty"));
    }
    let max = sh.settings.max_events;
    if events.len() > max {
        return Err(too_large(
            sh,
            format!("{} events, max_events is {max}", events.len()),
        ));
    }
    for (i, e) in events.iter().enumerate() {
        // Without an id, a rejection could not say which event it was about.
        if !e.get("id").is_some_and(Value::is_string) {
            return Err(malformed(sh, &format!("event {i} has no id")));
        }
        if check::protocol_of(e).is_some_and(|p| p > *SUPPORTED.iter().max().expect("one version"))
        {
            return Err(unsupported(sh, "event"));
        }
    }
    let max_tier = sh.settings.max_tier;
    if events
        .iter()
        .any(|e| check::tier_of(e).is_some_and(|t| t > u64::from(max_tier)))
    {
        sh.log(|| format!("403 tier_above_max {max_tier}"));
        return Err(answer(
            StatusCode::FORBIDDEN,
            json!({"reason": "tier_above_max", "max_tier": max_tier}),
        ));
    }
    Ok(events)
}

/// What one batch came to.
struct Outcome {
    accepted: u64,
    duplicates: u64,
    rejected: Vec<Value>,
    attentions: Vec<Value>,
}

async fn store_batch(
    sh: Arc<Shared>,
    sender: &crate::owners::Sender,
    events: Vec<Value>,
) -> Response {
    let owner = sender.owner.as_str();
    match ingest(&sh, sender, events).await {
        Ok(o) => {
            if !o.attentions.is_empty() && sh.app.is_some() {
                // Told after the answer, never holding it up.
                let (sh, owner, attentions) =
                    (Arc::clone(&sh), owner.to_string(), o.attentions.clone());
                tokio::spawn(async move {
                    let app = sh.app.as_ref().expect("checked above");
                    crate::notify::attentions(&sh.db, app, &owner, attentions, sh.settings.log)
                        .await;
                });
            }
            sh.accepted.fetch_add(o.accepted, Ordering::Relaxed);
            sh.duplicates.fetch_add(o.duplicates, Ordering::Relaxed);
            sh.rejected
                .fetch_add(o.rejected.len() as u64, Ordering::Relaxed);
            sh.log(|| {
                format!(
                    "202 accepted {}, duplicates {}, rejected {}",
                    o.accepted,
                    o.duplicates,
                    o.rejected.len()
                )
            });
            let body = json!({
                "accepted": o.accepted,
                "duplicates": o.duplicates,
                "rejected": o.rejected,
                "max_tier": sh.settings.max_tier,
            });
            answer(StatusCode::ACCEPTED, body)
        }
        Err(e) => {
            sh.log(|| format!("500 storing the batch: {e}"));
            refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                "storage",
                "could not store the batch",
            )
        }
    }
}

/// Judges each event, then stores the ones that pass in one transaction
/// (`store::ingest` dedups them there, so two senders racing one key store it
/// once).
async fn ingest(
    sh: &Shared,
    sender: &crate::owners::Sender,
    events: Vec<Value>,
) -> Result<Outcome, crate::db::DbError> {
    let mut rejected = Vec::new();
    let mut checked = Vec::with_capacity(events.len());
    for e in events {
        match check::check_event(&e) {
            Ok(key) => checked.push(store::Checked { key, event: e }),
            Err(reason) => rejected.push(json!({"id": e["id"], "reason": reason.0})),
        }
    }
    let done = store::ingest(
        &sh.db,
        &sender.owner,
        sender.machine.as_deref(),
        checked,
        protocol::time::now_ms(),
    )
    .await?;
    Ok(Outcome {
        accepted: done.accepted,
        duplicates: done.duplicates,
        rejected,
        attentions: done.attentions,
    })
}

/// `GET /v1/sessions/<harness>:<id>`: the stored events in seq order, or 404.
async fn read_session(
    State(sh): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(key): Path<String>,
) -> Response {
    let owner = match owner_of(&sh, &headers).await {
        Ok(Some(o)) => o,
        Ok(None) => return unauthorized(),
        Err(_) => {
            return refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                "storage",
                "could not check the token",
            );
        }
    };
    let Some((harness, session)) = key.split_once(':') else {
        return refuse(
            StatusCode::BAD_REQUEST,
            "malformed",
            "expected <harness>:<session id>",
        );
    };
    if !protocol::valid_harness_name(harness) || !protocol::valid_session_id(session) {
        return answer(StatusCode::NOT_FOUND, json!({"reason": "not_found"}));
    }
    match store::read(&sh.db, &owner, harness, session).await {
        Ok(Some(events)) => answer(StatusCode::OK, Value::Array(events)),
        Ok(None) => answer(StatusCode::NOT_FOUND, json!({"reason": "not_found"})),
        Err(_) => refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            "storage",
            "could not read the session",
        ),
    }
}

/// `POST /test/faults`: arms the fault door (`{}` disarms it). Loopback peers only,
/// with the bearer token, so that an exposed receiver cannot be made to misbehave
/// from elsewhere.
async fn set_faults(
    State(sh): State<Arc<Shared>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if !peer.ip().to_canonical().is_loopback() {
        return refuse(
            StatusCode::FORBIDDEN,
            "loopback_only",
            "the fault door is for local tests",
        );
    }
    if !authorized(&sh, &headers) {
        return unauthorized();
    }
    let parsed = serde_json::from_slice::<Value>(&body)
        .map_err(|_| crate::Invalid::from("the body is not JSON"))
        .and_then(|v| Fault::from_json(&v));
    match parsed {
        Ok(fault) => {
            let armed = fault.as_ref().map(Fault::to_json);
            *sh.fault.lock().unwrap_or_else(|p| p.into_inner()) = fault;
            answer(StatusCode::OK, json!({"armed": armed}))
        }
        Err(why) => refuse(StatusCode::BAD_REQUEST, "malformed", why.0),
    }
}

async fn serve_fault(sh: &Shared, f: Fault) -> Response {
    if f.delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(f.delay_ms)).await;
    }
    let status = StatusCode::from_u16(f.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = f
        .body
        .clone()
        .unwrap_or_else(|| default_fault_body(status, sh.settings.max_tier));
    let mut resp = answer(status, body);
    if let Some(v) = f
        .retry_after
        .as_deref()
        .and_then(|v| HeaderValue::from_str(v).ok())
    {
        resp.headers_mut().insert(header::RETRY_AFTER, v);
    }
    resp
}

/// The body a fault answers with when the test gave none: the one this receiver
/// would send for that status, so a sender sees a realistic answer.
fn default_fault_body(status: StatusCode, max_tier: u8) -> Value {
    match status.as_u16() {
        400 => json!({"reason": "malformed", "detail": "fault door"}),
        401 => json!({"reason": "unauthorized"}),
        403 => json!({"reason": "tier_above_max", "max_tier": max_tier}),
        413 => json!({"reason": "too_large", "detail": "fault door"}),
        429 => json!({"reason": "rate_limited"}),
        s if s >= 500 => json!({"reason": "unavailable", "detail": "fault door"}),
        _ => json!({"reason": "fault"}),
    }
}
