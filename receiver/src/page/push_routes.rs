//! The page's notification settings: a device's Web Push subscription (with
//! the tier of text it may show) and plain notification URLs (a webhook, an
//! ntfy topic), and the receiver's VAPID key they are signed with.
//!
//! This module owns those routes. It must not send anything (`notify` does,
//! when an attention comes, signed with the VAPID key it keeps).

use super::state::Page;
use crate::db::{Db, args};
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
    let sub = Subscription::from_json(&doc["subscription"], page.opts.is_local())
        .map_err(|e| ApiError::malformed(format!("subscription: {e}")))?;
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

/// An https URL (or http to a loopback address, on a receiver that is
/// itself on localhost) without credentials in it.
fn notify_url(page: &Page, doc: &Value) -> Result<String, ApiError> {
    let raw = doc["url"]
        .as_str()
        .filter(|u| u.len() <= 2000)
        .ok_or_else(|| ApiError::malformed("url: missing"))?;
    let url = url::Url::parse(raw).map_err(|_| ApiError::malformed("url: not a URL"))?;
    let loopback = url.host().is_some_and(|h| {
        matches!(h, url::Host::Ipv4(a) if a.is_loopback())
            || matches!(h, url::Host::Ipv6(a) if a.is_loopback())
    });
    let ok = match url.scheme() {
        "https" => true,
        "http" => loopback && page.opts.is_local(),
        _ => false,
    };
    if !ok || !url.username().is_empty() || url.password().is_some() {
        return Err(ApiError::malformed(
            "url: an https URL without a user or password in it",
        ));
    }
    Ok(url.to_string())
}

async fn add_url(
    State(page): State<Arc<Page>>,
    headers: HeaderMap,
    body: Body,
) -> Result<StatusCode, ApiError> {
    let me = page.me(&headers).await?;
    let doc = read_json(body, BODY_MAX).await?;
    let url = notify_url(&page, &doc)?;
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
