//! A batch POST, step by step, in the binding's order: read the body, the
//! fault door (test builds), bearer, `sessionpipe-protocol`, size in bytes,
//! signature, JSON shape, event count, protocol above 1, tier above
//! `max_tier`, then each event on its own (rejected, duplicate or stored).
//! Batch-level refusals store nothing.
//!
//! This module owns that order and each step's answer. It must not write to
//! the database itself (`store` does) and never logs a body, a token, a
//! secret or an `authorization` header.

use super::state::{EVENTS_PATH, Events, Settings};
use crate::check::{self, SUPPORTED};
use crate::error::ApiError;
use crate::owners::{Owner, Sender};
use crate::request::bearer;
use crate::store;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// The most body bytes read before answering; past it (or a `content-length`
/// naming more) the answer is 413 and the connection is closed, unread. Four
/// times the largest `max_bytes` (262 144), so that a sender's batch a little
/// over is still read and answered rather than cut off.
const READ_CAP: usize = 1024 * 1024;

fn header_str<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// The batch's refusal, put in the request log.
fn refused(ev: &Events, e: ApiError) -> ApiError {
    ev.log.line(|| e.to_string());
    e
}

fn unsupported(ev: &Events) -> ApiError {
    refused(
        ev,
        ApiError::bare(StatusCode::BAD_REQUEST, "unsupported_protocol")
            .with("supported", SUPPORTED),
    )
}

/// The events side's routes: `POST /v1/events`.
pub fn router(events: Arc<Events>) -> Router {
    Router::new()
        .route(EVENTS_PATH, post(post_events))
        .with_state(events)
}

async fn post_events(
    State(ev): State<Arc<Events>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    ev.counters.posts.fetch_add(1, Ordering::Relaxed);
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
        ev.log
            .line(|| format!("413 body over {READ_CAP} bytes, connection closed"));
        return Err(ApiError::too_large("body over max_bytes").closing());
    };
    #[cfg(feature = "test-doors")]
    if let Some(f) = super::doors::take_fault(&ev) {
        ev.log.line(|| format!("{} (fault door)", f.status));
        return Ok(super::doors::serve_fault(&ev, f).await);
    }
    let sender = match bearer(&headers) {
        Some(given) => ev.owners.sender_of(given).await?,
        None => None,
    };
    let Some(sender) = sender else {
        ev.log.line(|| "401 (wrong or missing bearer token)".into());
        return Err(ApiError::unauthorized());
    };
    if let Some(v) = headers.get("sessionpipe-protocol") {
        match v.to_str().ok().and_then(|v| v.trim().parse::<u64>().ok()) {
            Some(p) if SUPPORTED.contains(&p) => {}
            Some(_) => return Err(unsupported(&ev)),
            None => {
                return Err(refused(
                    &ev,
                    ApiError::malformed("sessionpipe-protocol is not an integer"),
                ));
            }
        }
    }
    let limit = ev.settings.max_bytes;
    if bytes.len() > limit {
        return Err(refused(
            &ev,
            ApiError::too_large(format!("{} bytes, max_bytes is {limit}", bytes.len())),
        ));
    }
    if let Some(key) = &ev.settings.webhook_key {
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
            return Err(refused(
                &ev,
                ApiError::new(StatusCode::UNAUTHORIZED, "bad_signature", why),
            ));
        }
    }
    let events = batch(&ev, bytes)?;
    store_batch(ev, sender, events).await
}

/// The batch-level checks, in order; the events when all pass.
fn batch(ev: &Events, bytes: Bytes) -> Result<Vec<Value>, ApiError> {
    let s: &Settings = &ev.settings;
    let malformed = |detail: &str| refused(ev, ApiError::malformed(detail));
    let doc: Value =
        serde_json::from_slice(&bytes).map_err(|_| malformed("the body is not JSON"))?;
    let events = match doc {
        Value::Object(mut o) => o.remove("events"),
        _ => None,
    };
    let Some(Value::Array(events)) = events else {
        return Err(malformed("no events list"));
    };
    if events.is_empty() {
        return Err(malformed("the events list is empty"));
    }
    if events.len() > s.max_events {
        return Err(refused(
            ev,
            ApiError::too_large(format!(
                "{} events, max_events is {}",
                events.len(),
                s.max_events
            )),
        ));
    }
    for (i, e) in events.iter().enumerate() {
        // Without an id, a rejection could not say which event it was about.
        if !e.get("id").is_some_and(Value::is_string) {
            return Err(malformed(&format!("event {i} has no id")));
        }
        if check::protocol_of(e).is_some_and(|p| p > *SUPPORTED.iter().max().expect("one version"))
        {
            return Err(unsupported(ev));
        }
    }
    if events
        .iter()
        .any(|e| check::tier_of(e).is_some_and(|t| t > u64::from(s.max_tier)))
    {
        return Err(refused(
            ev,
            ApiError::bare(StatusCode::FORBIDDEN, "tier_above_max").with("max_tier", s.max_tier),
        ));
    }
    Ok(events)
}

/// Judges each event, stores the ones that pass in one transaction
/// (`store::ingest` dedups them there, so two senders racing one key store it
/// once), and answers 202 with what the batch came to.
async fn store_batch(
    ev: Arc<Events>,
    sender: Sender,
    events: Vec<Value>,
) -> Result<Response, ApiError> {
    let mut rejected = Vec::new();
    let mut checked = Vec::with_capacity(events.len());
    for e in events {
        match check::check_event(&e) {
            Ok(key) => checked.push(store::Checked::new(key, e)),
            Err(reason) => rejected.push(json!({"id": e["id"], "reason": reason.0})),
        }
    }
    let done = store::ingest(
        &ev.db,
        &sender.owner,
        sender.machine.as_deref(),
        checked,
        protocol::time::now_ms(),
    )
    .await?;
    if sender.owner == Owner::Operator {
        ev.owners.settle_operator(&done.owner);
    }
    if let Some(notifier) = ev.notifier.as_ref().filter(|_| !done.attentions.is_empty()) {
        // Told after the answer, never holding it up.
        let (notifier, owner, attentions) = (Arc::clone(notifier), done.owner, done.attentions);
        tokio::spawn(async move { notifier.attentions(&owner, attentions).await });
    }
    let c = &ev.counters;
    c.accepted.fetch_add(done.accepted, Ordering::Relaxed);
    c.duplicates.fetch_add(done.duplicates, Ordering::Relaxed);
    c.rejected
        .fetch_add(rejected.len() as u64, Ordering::Relaxed);
    ev.log.line(|| {
        format!(
            "202 accepted {}, duplicates {}, rejected {}",
            done.accepted,
            done.duplicates,
            rejected.len()
        )
    });
    let body = json!({
        "accepted": done.accepted,
        "duplicates": done.duplicates,
        "rejected": rejected,
        "max_tier": ev.settings.max_tier,
    });
    Ok((StatusCode::ACCEPTED, axum::Json(body)).into_response())
}
