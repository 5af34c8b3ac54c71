//! The page's notification settings: a device's Web Push subscription (with
//! the tier of text it may show) and plain notification URLs (a webhook, an
//! ntfy topic), and the receiver's VAPID key they are signed with.
//!
//! This module owns those routes, and refuses an address the receiver will
//! not send to (`egress`: https, no credentials, public addresses unless
//! the operator allows private ones), saying why, when it is given. It must
//! not send anything (`notify` does, when an attention comes, signed with
//! the VAPID key it keeps, and checks the address again then).

use super::state::Page;
use crate::db::{Db, args};
use crate::egress::EgressError;
use crate::error::ApiError;
use crate::push::Subscription;
use crate::request::read_json;
use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::Value;
use std::sync::Arc;

const BODY_MAX: usize = 16 * 1024;

/// Subscriptions and URLs per account at most.
const PER_ACCOUNT_MAX: i64 = 20;

pub(super) fn routes() -> Router<Arc<Page>> {
    Router::new()
        .route("/app/api/push", post(subscribe).delete(unsubscribe))
        .route("/app/api/notify-url", post(add_url).delete(remove_url))
}

fn tier(doc: &Value) -> Result<i64, ApiError> {
    doc["tier"]
        .as_i64()
        .filter(|t| (0..=2).contains(t))
        .ok_or_else(|| ApiError::malformed("tier: 0, 1 or 2"))
}

/// Refused `full` (saying `what`) when `sql` counts `PER_ACCOUNT_MAX` rows
/// of the account already.
async fn room(db: &Db, sql: &'static str, account: &str, what: &str) -> Result<(), ApiError> {
    let n = db
        .row(sql, args![account])
        .await?
        .map(|r| r.int(0))
        .transpose()?
        .unwrap_or(0);
    if n >= PER_ACCOUNT_MAX {
        return Err(ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "full",
            format!("too many {what}"),
        ));
    }
    Ok(())
}

async fn subscribe(
    State(page): State<Arc<Page>>,
    headers: HeaderMap,
    body: Body,
) -> Result<StatusCode, ApiError> {
    let me = page.me(&headers).await?;
    let doc = read_json(body, BODY_MAX).await?;
    let sub = Subscription::from_json(&doc["subscription"])
        .map_err(|e| ApiError::malformed(format!("subscription: {e}")))?;
    page.notifier
        .check_address(&sub.endpoint)
        .await
        .map_err(|e| refused("subscription: its endpoint", e))?;
    // The service worker's `pushsubscriptionchange`: the browser replaced
    // a subscription of this account; the new one keeps its tier (the
    // worker cannot read the page's choice) and the old row goes.
    let replaced = match doc.get("replaces").and_then(Value::as_str) {
        Some(old) if old != sub.endpoint => replace_old(&page.db, old, &me.account.id).await?,
        _ => None,
    };
    let tier = match (doc.get("tier"), replaced) {
        (None | Some(Value::Null), Some(kept)) => kept,
        _ => tier(&doc)?,
    };
    room(
        &page.db,
        "SELECT COUNT(*) FROM push_subscriptions WHERE account = $1",
        &me.account.id,
        "devices subscribed",
    )
    .await?;
    page.db
        .exec(
            "INSERT INTO push_subscriptions (endpoint, account, subscription, tier, created_ms)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (endpoint) DO UPDATE SET account = excluded.account,
               subscription = excluded.subscription, tier = excluded.tier",
            args![
                &sub.endpoint,
                &me.account.id,
                sub.to_json().to_string(),
                tier,
                protocol::time::now_ms()
            ],
        )
        .await?;
    Ok(StatusCode::CREATED)
}

/// Removes the account's subscription at `endpoint`, giving its tier back
/// (`None` when the account has none there).
async fn replace_old(db: &Db, endpoint: &str, account: &str) -> Result<Option<i64>, ApiError> {
    let kept = db
        .row(
            "SELECT tier FROM push_subscriptions WHERE endpoint = $1 AND account = $2",
            args![endpoint, account],
        )
        .await?
        .map(|r| r.int(0))
        .transpose()?;
    if kept.is_some() {
        db.exec(
            "DELETE FROM push_subscriptions WHERE endpoint = $1 AND account = $2",
            args![endpoint, account],
        )
        .await?;
    }
    Ok(kept)
}

async fn unsubscribe(
    State(page): State<Arc<Page>>,
    headers: HeaderMap,
    body: Body,
) -> Result<StatusCode, ApiError> {
    let me = page.me(&headers).await?;
    let doc = read_json(body, BODY_MAX).await?;
    let endpoint = doc["endpoint"]
        .as_str()
        .ok_or_else(|| ApiError::malformed("endpoint: missing"))?;
    page.db
        .exec(
            "DELETE FROM push_subscriptions WHERE endpoint = $1 AND account = $2",
            args![endpoint, &me.account.id],
        )
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The answer to an address the receiver will not send to: 400, with why.
fn refused(what: &str, e: EgressError) -> ApiError {
    let reason = match e {
        EgressError::NotPublic { .. } | EgressError::PublicHttp { .. } => "address_refused",
        EgressError::Unresolved { .. } => "unresolved",
        _ => "malformed",
    };
    ApiError::new(StatusCode::BAD_REQUEST, reason, format!("{what}: {e}"))
}

/// The notification URL of `doc`, checked where it points.
async fn notify_url(page: &Page, doc: &Value) -> Result<String, ApiError> {
    let raw = doc["url"]
        .as_str()
        .filter(|u| u.len() <= 2000)
        .ok_or_else(|| ApiError::malformed("url: missing"))?;
    let url = url::Url::parse(raw).map_err(|_| ApiError::malformed("url: not a URL"))?;
    page.notifier
        .check_address(url.as_str())
        .await
        .map_err(|e| refused("url", e))?;
    Ok(url.to_string())
}

async fn add_url(
    State(page): State<Arc<Page>>,
    headers: HeaderMap,
    body: Body,
) -> Result<StatusCode, ApiError> {
    let me = page.me(&headers).await?;
    let doc = read_json(body, BODY_MAX).await?;
    let url = notify_url(&page, &doc).await?;
    let tier = tier(&doc)?;
    room(
        &page.db,
        "SELECT COUNT(*) FROM notify_urls WHERE account = $1",
        &me.account.id,
        "notification URLs",
    )
    .await?;
    page.db
        .exec(
            "INSERT INTO notify_urls (account, url, tier, created_ms) VALUES ($1, $2, $3, $4)
             ON CONFLICT (account, url) DO UPDATE SET tier = excluded.tier",
            args![&me.account.id, url, tier, protocol::time::now_ms()],
        )
        .await?;
    Ok(StatusCode::CREATED)
}

async fn remove_url(
    State(page): State<Arc<Page>>,
    headers: HeaderMap,
    body: Body,
) -> Result<StatusCode, ApiError> {
    let me = page.me(&headers).await?;
    let doc = read_json(body, BODY_MAX).await?;
    let url = doc["url"]
        .as_str()
        .ok_or_else(|| ApiError::malformed("url: missing"))?;
    page.db
        .exec(
            "DELETE FROM notify_urls WHERE account = $1 AND url = $2",
            args![&me.account.id, url],
        )
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
