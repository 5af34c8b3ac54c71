//! The page's board: the signed-in account's machines and sessions (needs you
//! / working / done, with title, folder, harness, model, age and last words),
//! and one session's timeline.
//!
//! This module owns those two reads and their JSON. It must not change state,
//! and it reads only the signed-in account's rows.

use super::state::Page;
use crate::error::ApiError;
use crate::store::{self, SessionRow};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};
use std::sync::Arc;

/// Sessions on the board at most.
const BOARD_MAX: usize = 200;

/// Events of a timeline at most (its last ones).
const TIMELINE_MAX: usize = 500;

pub(super) fn routes() -> Router<Arc<Page>> {
    Router::new()
        .route("/app/api/board", get(board))
        .route("/app/api/sessions/{key}", get(session))
}

/// The account's machines, as the board and `me` list them.
pub(super) async fn machines_json(page: &Page, account: &str) -> Result<Vec<Value>, ApiError> {
    let control = &page.control;
    let now = protocol::time::now_ms();
    // A poll is the machine's heartbeat: online within two long-polls.
    let online_ms = 2 * control.options().wait_max_s as i64 * 1000 + 5_000;
    let rows = control.store.machines_of(account).await?;
    Ok(rows
        .into_iter()
        .map(|m| {
            let keys: Vec<Value> = m.keys.iter().map(|k| k["id"].clone()).collect();
            json!({
                "id": m.id, "name": m.name,
                "online": m.last_poll_ms.is_some_and(|t| now - t <= online_ms),
                "last_poll_at": m.last_poll_ms.map(protocol::time::rfc3339_ms),
                "hello": m.hello, "keys": keys,
            })
        })
        .collect())
}

fn session_json(r: &SessionRow, machines: &[Value]) -> Value {
    let b = &r.folded.block;
    let name = b.get("machine").and_then(Value::as_str);
    // The machine whose token sent it; for the operator's token, by name.
    let machine_id = r.machine_id.clone().map(Value::String).or_else(|| {
        name.and_then(|n| {
            machines
                .iter()
                .find(|m| m["name"] == n)
                .map(|m| m["id"].clone())
        })
    });
    json!({
        "key": format!("{}:{}", r.harness, r.id),
        "harness": r.harness, "id": r.id,
        "machine": name, "machine_id": machine_id,
        "state": r.folded.state.as_str(),
        "title": b.get("title"), "cwd": b.get("cwd"), "model": b.get("model"),
        "repo": b.get("repo"), "branch": b.get("branch"),
        "first_at": protocol::time::rfc3339_ms(r.first_ms),
        "last_at": protocol::time::rfc3339_ms(r.last_ms),
        "last_words": r.folded.last_words,
        "attention": r.folded.attention,
    })
}

async fn board(State(page): State<Arc<Page>>, headers: HeaderMap) -> Result<Json<Value>, ApiError> {
    let me = page.me(&headers).await?;
    let machines = machines_json(&page, &me.account.id).await?;
    let sessions: Vec<Value> = store::sessions(&page.db, &me.account.id, BOARD_MAX)
        .await?
        .iter()
        .map(|r| session_json(r, &machines))
        .collect();
    Ok(Json(json!({"machines": machines, "sessions": sessions})))
}

async fn session(
    State(page): State<Arc<Page>>,
    headers: HeaderMap,
    Path(key): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let me = page.me(&headers).await?;
    let (harness, id) = key
        .split_once(':')
        .filter(|(h, s)| protocol::valid_harness_name(h) && protocol::valid_session_id(s))
        .ok_or_else(|| ApiError::not_found("session"))?;
    let owner = &me.account.id;
    let row = store::session(&page.db, owner, harness, id)
        .await?
        .ok_or_else(|| ApiError::not_found("session"))?;
    let machines = machines_json(&page, owner).await?;
    let events: Vec<Value> = store::timeline(&page.db, owner, harness, id, TIMELINE_MAX)
        .await?
        .into_iter()
        .map(|(e, arrived)| {
            json!({
                "seq": e["session"]["seq"], "type": e["type"], "time": e["time"],
                "arrived_at": protocol::time::rfc3339_ms(arrived),
                "tier": e["tier"], "data": e["data"],
            })
        })
        .collect();
    Ok(Json(
        json!({"session": session_json(&row, &machines), "events": events}),
    ))
}
