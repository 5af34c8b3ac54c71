//! The page's board: the signed-in account's machines and sessions (needs you
//! / working / done, with title, folder, harness, model, age and last words),
//! and one session's timeline; an open attention also in the protocol's words
//! (`protocol::asked`, as the notifications say it); and one session's
//! changes, per turn (`protocol::changes`, as the desktop window reads them).
//!
//! This module owns those three reads (their shapes are `shapes`'). It must not
//! change state, and it reads only the signed-in account's rows.

use super::shapes::{Board, Machine, Session, SessionEvent, SessionPage};
use super::state::Page;
use crate::error::ApiError;
use crate::store::{self, SessionRow};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::routing::get;
use axum::{Json, Router};
use protocol::asked::{self, Asked, AttentionWords};
use protocol::changes::Changes;
use serde_json::Value;
use std::sync::Arc;

/// Sessions on the board at most.
const BOARD_MAX: usize = 200;

/// Events of a timeline at most (its last ones).
const TIMELINE_MAX: usize = 500;

pub(super) fn routes() -> Router<Arc<Page>> {
    Router::new()
        .route("/app/api/board", get(board))
        .route("/app/api/sessions/{key}", get(session))
        .route("/app/api/sessions/{key}/changes", get(changes))
}

/// The account's machines, as the board and `me` list them.
pub(super) async fn machines_of(page: &Page, account: &str) -> Result<Vec<Machine>, ApiError> {
    let control = &page.control;
    let now = protocol::time::now_ms();
    // A poll is the machine's heartbeat: online within two long-polls.
    let online_ms = 2 * control.options().wait_max_s as i64 * 1000 + 5_000;
    let rows = control.store.machines_of(account).await?;
    Ok(rows
        .into_iter()
        .map(|m| Machine {
            online: m.last_poll_ms.is_some_and(|t| now - t <= online_ms),
            last_poll_at: m.last_poll_ms.map(protocol::time::rfc3339_ms),
            keys: m.keys.iter().map(|k| k["id"].clone()).collect(),
            id: m.id,
            name: m.name,
            hello: m.hello,
        })
        .collect())
}

fn session_of(r: &SessionRow, machines: &[Machine]) -> Session {
    let b = &r.folded.block;
    let member = |name: &str| b.get(name).and_then(Value::as_str).map(str::to_string);
    let name = member("machine");
    // The machine whose token sent it; for the operator's token, by name.
    let machine_id = r.machine_id.clone().or_else(|| {
        let name = name.as_deref()?;
        machines
            .iter()
            .find(|m| m.name == name)
            .map(|m| m.id.clone())
    });
    let key = format!("{}:{}", r.harness, r.id);
    let can_stop = machine_id
        .as_deref()
        .and_then(|id| machines.iter().find(|m| m.id == id))
        .and_then(|m| m.hello.as_ref())
        .and_then(|h| h["cancels"].as_array())
        .is_some_and(|c| c.iter().any(|s| s.as_str() == Some(key.as_str())));
    Session {
        key,
        can_stop,
        harness: r.harness.clone(),
        id: r.id.clone(),
        machine: name,
        machine_id,
        state: r.folded.state,
        title: member("title"),
        cwd: member("cwd"),
        model: member("model"),
        repo: member("repo"),
        branch: member("branch"),
        first_at: protocol::time::rfc3339_ms(r.first_ms),
        last_at: protocol::time::rfc3339_ms(r.last_ms),
        last_words: r.folded.last_words.clone(),
        attention_words: r.folded.attention.as_ref().map(|a| words_of(r, a)),
        attention: r.folded.attention.clone(),
    }
}

/// The open attention `a` of `r` in the protocol's words, at the tier it came
/// at (the page shows what came; the machine chose what that was).
fn words_of(r: &SessionRow, a: &Value) -> AttentionWords {
    let b = &r.folded.block;
    let asked = Asked {
        harness: &r.harness,
        kind: a["kind"].as_str().unwrap_or(""),
        tool: a["tool"].as_str(),
        message: a["message"].as_str(),
        title: b.get("title").and_then(Value::as_str),
        cwd: b.get("cwd").and_then(Value::as_str),
        // Folded before the board kept the tier: what is there came.
        tier: a
            .get("tier")
            .and_then(Value::as_u64)
            .map_or(3, |t| u8::try_from(t).unwrap_or(3)),
    };
    asked::words(&asked, 3)
}

async fn board(State(page): State<Arc<Page>>, headers: HeaderMap) -> Result<Json<Board>, ApiError> {
    let me = page.me(&headers).await?;
    let machines = machines_of(&page, &me.account.id).await?;
    let sessions = store::sessions(&page.db, &me.account.id, BOARD_MAX)
        .await?
        .iter()
        .map(|r| session_of(r, &machines))
        .collect();
    Ok(Json(Board { machines, sessions }))
}

/// The signed-in account's id and its session `key` (`harness:id`); any
/// other text, or a session of another account, is no session.
async fn owned(
    page: &Page,
    headers: &HeaderMap,
    key: &str,
) -> Result<(String, SessionRow), ApiError> {
    let me = page.me(headers).await?;
    let (harness, id) = key
        .split_once(':')
        .filter(|(h, s)| protocol::valid_harness_name(h) && protocol::valid_session_id(s))
        .ok_or_else(|| ApiError::not_found("session"))?;
    let owner = me.account.id;
    let row = store::session(&page.db, &owner, harness, id)
        .await?
        .ok_or_else(|| ApiError::not_found("session"))?;
    Ok((owner, row))
}

async fn session(
    State(page): State<Arc<Page>>,
    headers: HeaderMap,
    Path(key): Path<String>,
) -> Result<Json<SessionPage>, ApiError> {
    let (owner, row) = owned(&page, &headers, &key).await?;
    let (owner, harness, id) = (owner.as_str(), row.harness.as_str(), row.id.as_str());
    let machines = machines_of(&page, owner).await?;
    let events = store::timeline(&page.db, owner, harness, id, TIMELINE_MAX)
        .await?
        .into_iter()
        .map(|(mut e, arrived)| {
            let mut take = |at: &str| e.pointer_mut(at).map(Value::take).unwrap_or_default();
            SessionEvent {
                seq: take("/session/seq"),
                kind: take("/type"),
                time: take("/time"),
                arrived_at: protocol::time::rfc3339_ms(arrived),
                tier: take("/tier"),
                data: take("/data"),
            }
        })
        .collect();
    Ok(Json(SessionPage {
        session: session_of(&row, &machines),
        events,
    }))
}

/// `GET /app/api/sessions/{key}/changes`: the files each turn changed and,
/// at tier 3, each edit's text before and after.
async fn changes(
    State(page): State<Arc<Page>>,
    headers: HeaderMap,
    Path(key): Path<String>,
) -> Result<Json<Changes>, ApiError> {
    let (owner, row) = owned(&page, &headers, &key).await?;
    let (owner, harness, id) = (owner.as_str(), row.harness.as_str(), row.id.as_str());
    let cwd = row.folded.block.get("cwd").and_then(Value::as_str);
    Ok(Json(
        store::changes(&page.db, owner, harness, id, cwd).await?,
    ))
}
