//! The page's notification settings: a device's Web Push subscription (with
//! the tier of text it may show) and plain notification URLs (a webhook, an
//! ntfy topic), and the receiver's VAPID key they are signed with.
//!
//! This module owns those routes and the VAPID key's keeping (made once, in
//! the database's `settings`). It must not send anything (`notify` does, when
//! an attention comes).

use super::sign_in::json_body;
use super::{Answer, Refusal, app, from_the_page, me};
use crate::db::{Db, DbError, args};
use crate::http::Shared;
use crate::push::{Subscription, Vapid};
use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::Value;
use std::sync::Arc;

const BODY_MAX: usize = 16 * 1024;

/// Subscriptions and URLs per account at most.
const PER_ACCOUNT_MAX: i64 = 20;

const VAPID_SETTING: &str = "vapid_pkcs8";

pub(super) fn routes() -> Router<Arc<Shared>> {
    Router::new()
        .route("/app/api/push", post(subscribe).delete(unsubscribe))
        .route("/app/api/notify-url", post(add_url).delete(remove_url))
}

/// The receiver's VAPID key: the one kept, or a new one kept now (two
/// processes starting at once keep the first one written).
pub(crate) async fn vapid_key(db: &Db, subject: &str) -> Result<Vapid, String> {
    let kept: Result<Option<Vec<u8>>, DbError> = read_vapid(db).await;
    if let Some(der) = kept.map_err(|e| e.to_string())? {
        return Vapid::from_pkcs8_der(&der, subject).map_err(|e| e.to_string());
    }
    let fresh = Vapid::generate(subject).map_err(|e| e.to_string())?;
    let der = fresh.to_pkcs8_der().map_err(|e| e.to_string())?;
    db.exec(
        "INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
        args![VAPID_SETTING, der],
    )
    .await
    .map_err(|e| e.to_string())?;
    let der = read_vapid(db)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("the VAPID key was not kept")?;
    Vapid::from_pkcs8_der(&der, subject).map_err(|e| e.to_string())
}

async fn read_vapid(db: &Db) -> Result<Option<Vec<u8>>, DbError> {
    db.row(
        "SELECT value FROM settings WHERE name = $1",
        args![VAPID_SETTING],
    )
    .await?
    .map(|r| r.bytes(0))
    .transpose()
}

fn tier(doc: &Value) -> Answer<i64> {
    doc["tier"]
        .as_i64()
        .filter(|t| (0..=2).contains(t))
        .ok_or_else(|| Refusal::bad("tier: 0, 1 or 2"))
}

/// Refused `full` (saying `what`) when `sql` counts `PER_ACCOUNT_MAX` rows
/// of the account already.
async fn room(db: &Db, sql: &'static str, account: &str, what: &str) -> Answer<()> {
    let n = db
        .row(sql, args![account])
        .await?
        .map(|r| r.int(0))
        .transpose()?
        .unwrap_or(0);
    if n >= PER_ACCOUNT_MAX {
        return Err(Refusal::new(
            StatusCode::TOO_MANY_REQUESTS,
            "full",
            format!("too many {what}"),
        ));
    }
    Ok(())
}

async fn subscribe(State(sh): State<Arc<Shared>>, headers: HeaderMap, body: Body) -> Response {
    let r: Answer<StatusCode> = async {
        from_the_page(&sh, &headers)?;
        let me = me(&sh, &headers).await?;
        let doc = json_body(body, BODY_MAX).await?;
        let sub = Subscription::from_json(&doc["subscription"], app(&sh).opts.is_local())
            .map_err(|e| Refusal::bad(format!("subscription: {e}")))?;
        // The service worker's `pushsubscriptionchange`: the browser replaced
        // a subscription of this account; the new one keeps its tier (the
        // worker cannot read the page's choice) and the old row goes.
        let replaced = match doc.get("replaces").and_then(Value::as_str) {
            Some(old) if old != sub.endpoint => replace_old(&sh.db, old, &me.account.id).await?,
            _ => None,
        };
        let tier = match (doc.get("tier"), replaced) {
            (None | Some(Value::Null), Some(kept)) => kept,
            _ => tier(&doc)?,
        };
        room(
            &sh.db,
            "SELECT COUNT(*) FROM push_subscriptions WHERE account = $1",
            &me.account.id,
            "devices subscribed",
        )
        .await?;
        sh.db
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
    .await;
    r.into_response()
}

/// Removes the account's subscription at `endpoint`, giving its tier back
/// (`None` when the account has none there).
async fn replace_old(db: &Db, endpoint: &str, account: &str) -> Answer<Option<i64>> {
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

async fn unsubscribe(State(sh): State<Arc<Shared>>, headers: HeaderMap, body: Body) -> Response {
    let r: Answer<StatusCode> = async {
        from_the_page(&sh, &headers)?;
        let me = me(&sh, &headers).await?;
        let doc = json_body(body, BODY_MAX).await?;
        let endpoint = doc["endpoint"]
            .as_str()
            .ok_or_else(|| Refusal::bad("endpoint: missing"))?;
        sh.db
            .exec(
                "DELETE FROM push_subscriptions WHERE endpoint = $1 AND account = $2",
                args![endpoint, &me.account.id],
            )
            .await?;
        Ok(StatusCode::NO_CONTENT)
    }
    .await;
    r.into_response()
}

/// An https URL (or http to a loopback address, on a receiver that is
/// itself on localhost) without credentials in it.
fn notify_url(sh: &Shared, doc: &Value) -> Answer<String> {
    let raw = doc["url"]
        .as_str()
        .filter(|u| u.len() <= 2000)
        .ok_or_else(|| Refusal::bad("url: missing"))?;
    let url = url::Url::parse(raw).map_err(|_| Refusal::bad("url: not a URL"))?;
    let loopback = url.host().is_some_and(|h| {
        matches!(h, url::Host::Ipv4(a) if a.is_loopback())
            || matches!(h, url::Host::Ipv6(a) if a.is_loopback())
    });
    let ok = match url.scheme() {
        "https" => true,
        "http" => loopback && app(sh).opts.is_local(),
        _ => false,
    };
    if !ok || !url.username().is_empty() || url.password().is_some() {
        return Err(Refusal::bad(
            "url: an https URL without a user or password in it",
        ));
    }
    Ok(url.to_string())
}

async fn add_url(State(sh): State<Arc<Shared>>, headers: HeaderMap, body: Body) -> Response {
    let r: Answer<StatusCode> = async {
        from_the_page(&sh, &headers)?;
        let me = me(&sh, &headers).await?;
        let doc = json_body(body, BODY_MAX).await?;
        let url = notify_url(&sh, &doc)?;
        let tier = tier(&doc)?;
        room(
            &sh.db,
            "SELECT COUNT(*) FROM notify_urls WHERE account = $1",
            &me.account.id,
            "notification URLs",
        )
        .await?;
        sh.db
            .exec(
                "INSERT INTO notify_urls (account, url, tier, created_ms) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (account, url) DO UPDATE SET tier = excluded.tier",
                args![&me.account.id, url, tier, protocol::time::now_ms()],
            )
            .await?;
        Ok(StatusCode::CREATED)
    }
    .await;
    r.into_response()
}

async fn remove_url(State(sh): State<Arc<Shared>>, headers: HeaderMap, body: Body) -> Response {
    let r: Answer<StatusCode> = async {
        from_the_page(&sh, &headers)?;
        let me = me(&sh, &headers).await?;
        let doc = json_body(body, BODY_MAX).await?;
        let url = doc["url"]
            .as_str()
            .ok_or_else(|| Refusal::bad("url: missing"))?;
        sh.db
            .exec(
                "DELETE FROM notify_urls WHERE account = $1 AND url = $2",
                args![&me.account.id, url],
            )
            .await?;
        Ok(StatusCode::NO_CONTENT)
    }
    .await;
    r.into_response()
}
