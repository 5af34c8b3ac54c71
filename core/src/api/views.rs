//! The API's handlers: what the UI shows (the live board, approvals, harnesses,
//! sinks, settings) and the few things it changes, each through the library.

use super::{Ctx, Json, P1, P2, Q, blocking, error};
use crate::config::Config;
use crate::install::{self, Host, Installer};
use crate::outbox::Outbox;
use crate::session::SessionRecord;
use crate::sinks::{self, NewSink, SinkList};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// A session stays on the board this long after its last event, unless it still
/// needs the person or is working.
const BOARD_MS: i64 = 24 * 3600 * 1000;

/// The live board: sessions (those needing the person first), the approvals
/// across them, the machine and the daemon.
pub async fn overview(State(ctx): State<Ctx>) -> Response {
    let paths = ctx.paths.clone();
    match blocking(move || {
        let config = Config::load(&paths.root).unwrap_or_default();
        let machine = config.machine.clone().unwrap_or_else(crate::ingest::machine_name);
        let outbox = Outbox::open_readonly(&paths.outbox()).map_err(|e| e.to_string())?;
        let records = match &outbox {
            Some(ob) => ob.sessions().map_err(|e| e.to_string())?,
            None => Vec::new(),
        };
        let now = crate::time::now_ms();
        let mut sessions: Vec<Value> = records
            .iter()
            .filter(|(_, _, r)| r.last_ms > 0)
            .map(|(h, id, r)| session_view(h, id, r, now))
            .filter(|v| v["state"] != "done" || now - v["last_ms"].as_i64().unwrap_or(0) < BOARD_MS)
            .collect();
        let rank = |v: &Value| match v["state"].as_str() {
            Some("needs_you") => 0,
            Some("working") => 1,
            _ => 2,
        };
        sessions.sort_by_key(|v| (rank(v), std::cmp::Reverse(v["last_ms"].as_i64().unwrap_or(0))));
        if let Some(ob) = &outbox {
            for s in sessions.iter_mut().filter(|s| s["state"] == "needs_you") {
                describe_attentions(ob, s);
            }
        }
        let approvals: Vec<Value> = sessions
            .iter()
            .flat_map(|s| {
                s["attentions"].as_array().cloned().unwrap_or_default().into_iter().map(move |mut a| {
                    a["session"] = s["key"].clone();
                    a["title"] = s["title"].clone();
                    a
                })
            })
            .collect();
        let daemon = crate::daemon::running(&paths).map(|(pid, mode)| json!({"pid": pid, "mode": mode}));
        Ok(json!({"machine": machine, "daemon": daemon, "sessions": sessions, "approvals": approvals}))
    })
    .await
    {
        Ok(v) => axum::Json(v).into_response(),
        Err(r) => r,
    }
}

/// One session on the board: who, where, its state at a glance, its attentions.
fn session_view(harness: &str, id: &str, r: &SessionRecord, now: i64) -> Value {
    let state = if !r.open.is_empty() {
        "needs_you"
    } else if r.running_turn.is_some() && !r.ended {
        "working"
    } else {
        "done"
    };
    let attentions: Vec<Value> = r
        .open
        .iter()
        .map(|a| json!({"attention_id": a.id, "agent_id": a.agent_id}))
        .collect();
    json!({
        "key": format!("{harness}:{id}"),
        "harness": harness,
        "id": id,
        "title": r.block.title.clone().or_else(|| r.block.cwd.clone()).unwrap_or_else(|| id.chars().take(8).collect()),
        "cwd": r.block.cwd,
        "repo": r.block.repo,
        "branch": r.block.branch,
        "model": r.block.model,
        "url": r.block.url,
        "state": state,
        "ended": r.ended,
        "last_ms": r.last_ms,
        "age_s": (now - r.last_ms).max(0) / 1000,
        "attentions": attentions,
    })
}

/// Fills each open attention of a session with what its `attention.needed` said
/// (`kind`, and `tool`, `message`, `time` when present), read from the session's
/// recent events: the board and the approvals list show what is being asked.
fn describe_attentions(ob: &Outbox, session: &mut Value) {
    let (Some(harness), Some(id)) = (session["harness"].as_str(), session["id"].as_str()) else {
        return;
    };
    let Ok(rows) = ob.events_of(harness, id, 200) else {
        return;
    };
    let Some(attentions) = session["attentions"].as_array_mut() else {
        return;
    };
    for row in rows.iter().rev() {
        let Ok(env) = serde_json::from_str::<Value>(&row.envelope) else {
            continue;
        };
        if env["type"] != "attention.needed" {
            continue;
        }
        let data = &env["data"];
        for a in attentions.iter_mut() {
            if a["attention_id"] == data["attention_id"] && a.get("kind").is_none() {
                a["kind"] = data["kind"].clone();
                a["tool"] = data["tool"].clone();
                a["message"] = data["message"].clone();
                a["time"] = env["time"].clone();
            }
        }
    }
}

/// A session's recent events (everything stored: this is the person's own view).
pub async fn session_events(
    State(ctx): State<Ctx>,
    axum::extract::Path((harness, id)): P2,
    q: Q,
) -> Response {
    let paths = ctx.paths.clone();
    let limit = q.limit.unwrap_or(50).min(500);
    match blocking(move || {
        let Some(ob) = Outbox::open_readonly(&paths.outbox()).map_err(|e| e.to_string())? else {
            return Ok(json!([]));
        };
        let rows = ob
            .events_of(&harness, &id, limit)
            .map_err(|e| e.to_string())?;
        let events: Vec<Value> = rows
            .iter()
            .filter_map(|r| serde_json::from_str(&r.envelope).ok())
            .collect();
        Ok(Value::Array(events))
    })
    .await
    {
        Ok(v) => axum::Json(v).into_response(),
        Err(r) => r,
    }
}

fn installer_report(
    paths: &crate::paths::StatePaths,
    name: Option<&str>,
    on: Option<bool>,
) -> Result<Value, String> {
    let host = Host::from_env()?;
    let hook_bin = install::hook_binary()?;
    let installer = Installer {
        host: &host,
        state_dir: &paths.root,
        hook_bin: &hook_bin,
        dry_run: false,
        opt_in: &[],
    };
    let names: Vec<String> = name.map(|n| vec![n.to_string()]).unwrap_or_default();
    let mut out = Vec::new();
    for adapter in install::select(&names)? {
        let (report, note) = match on {
            Some(true) => installer.install(adapter)?,
            Some(false) => (installer.uninstall(adapter)?, None),
            None => (installer.status(adapter), None),
        };
        let mut v = serde_json::to_value(&report).expect("a report serialises");
        v["note"] = json!(note.or_else(|| adapter.hooks().and_then(|h| h.note())));
        v["line"] = json!(report.line());
        out.push(v);
    }
    Ok(Value::Array(out))
}

/// Each harness: its hooks' state per file, with the reason when skipped or inactive.
pub async fn harnesses(State(ctx): State<Ctx>) -> Response {
    let paths = ctx.paths.clone();
    match blocking(move || installer_report(&paths, None, None)).await {
        Ok(v) => axum::Json(v).into_response(),
        Err(r) => r,
    }
}

/// Installs (`{"installed": true}`) or removes a harness's hooks.
pub async fn set_harness(
    State(ctx): State<Ctx>,
    axum::extract::Path(name): P1,
    body: Json,
) -> Response {
    let Some(on) = body.get("installed").and_then(Value::as_bool) else {
        return error(StatusCode::BAD_REQUEST, "send {\"installed\": true|false}");
    };
    let paths = ctx.paths.clone();
    match blocking(move || installer_report(&paths, Some(&name), Some(on))).await {
        Ok(v) => axum::Json(v).into_response(),
        Err(r) => r,
    }
}

/// The sinks, each with how far behind it is.
pub async fn sinks(State(ctx): State<Ctx>) -> Response {
    let paths = ctx.paths.clone();
    match blocking(move || {
        let list = SinkList::load(&paths)?;
        let ob = Outbox::open_readonly(&paths.outbox()).map_err(|e| e.to_string())?;
        let views: Vec<Value> = list
            .sinks
            .iter()
            .map(|s| {
                let behind = ob
                    .as_ref()
                    .and_then(|o| o.sink_cursor(&s.id).and_then(|c| o.count_after(c)).ok())
                    .unwrap_or(0);
                let mut v = serde_json::to_value(s).expect("a sink serialises");
                v["behind"] = json!(behind);
                v["line"] = json!(s.describe());
                v
            })
            .collect();
        Ok(Value::Array(views))
    })
    .await
    {
        Ok(v) => axum::Json(v).into_response(),
        Err(r) => r,
    }
}

/// Adds a sink: `{"target", "tier", "pii", "token"}` (the token goes to the
/// keychain or the 0600 file, never back out).
pub async fn add_sink(State(ctx): State<Ctx>, body: Json) -> Response {
    let Some(target) = body
        .get("target")
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        return error(StatusCode::BAD_REQUEST, "a sink needs a target");
    };
    let tier = body.get("tier").and_then(Value::as_u64).unwrap_or(0);
    if tier > 3 {
        return error(StatusCode::BAD_REQUEST, "tier is 0 to 3");
    }
    let new = NewSink {
        target,
        tier: tier as u8,
        pii: body.get("pii").and_then(Value::as_bool).unwrap_or(false),
        token: body
            .get("token")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .map(str::to_string),
        webhook_secret: body
            .get("webhook_secret")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .map(str::to_string),
    };
    let paths = ctx.paths.clone();
    match blocking(move || {
        sinks::add(&paths, new)
            .map(|(s, _)| json!({"added": s.describe(), "id": s.id, "tier": s.tier}))
    })
    .await
    {
        Ok(v) => axum::Json(v).into_response(),
        Err(r) => r,
    }
}

pub async fn remove_sink(State(ctx): State<Ctx>, axum::extract::Path(id): P1) -> Response {
    let paths = ctx.paths.clone();
    match blocking(move || sinks::remove(&paths, &id).map(|s| json!({"removed": s.describe()})))
        .await
    {
        Ok(v) => axum::Json(v).into_response(),
        Err(r) => r,
    }
}

/// `sink test`: discovery and a dry run of the filter; sends nothing.
pub async fn test_sink(State(ctx): State<Ctx>, axum::extract::Path(id): P1) -> Response {
    let paths = ctx.paths.clone();
    match blocking(move || {
        sinks::test_report(&paths, &id).map(|(ok, lines)| json!({"ok": ok, "lines": lines}))
    })
    .await
    {
        Ok(v) => axum::Json(v).into_response(),
        Err(r) => r,
    }
}

pub async fn settings(State(ctx): State<Ctx>) -> Response {
    let paths = ctx.paths.clone();
    match blocking(move || Config::load(&paths.root).map(|c| settings_view(&c))).await {
        Ok(v) => axum::Json(v).into_response(),
        Err(r) => r,
    }
}

/// The settings as GET and PUT answer them: the stored keys, with the tier in
/// effect and the hostname (what an empty machine name falls back to).
fn settings_view(c: &Config) -> Value {
    let mut v = serde_json::to_value(c).expect("config serialises");
    v["notify_tier"] = json!(c.notify_tier());
    v["hostname"] = json!(crate::ingest::machine_name());
    v
}

/// Changes settings: the keys given replace the stored ones; others stay.
pub async fn put_settings(State(ctx): State<Ctx>, body: Json) -> Response {
    let paths = ctx.paths.clone();
    match blocking(move || {
        let current = serde_json::to_value(Config::load(&paths.root)?).expect("config serialises");
        let mut merged = current.as_object().cloned().unwrap_or_default();
        for (k, v) in body.as_object().cloned().unwrap_or_default() {
            if !merged.contains_key(&k) {
                return Err(format!("no setting {k:?}"));
            }
            merged.insert(k, v);
        }
        let config: Config =
            serde_json::from_value(Value::Object(merged)).map_err(|e| format!("settings: {e}"))?;
        if config.notify_tier.is_some_and(|t| t > 3) {
            return Err("notify_tier is 0 to 3".into());
        }
        if config
            .machine
            .as_deref()
            .is_some_and(|m| m.trim().is_empty() || m.len() > 80)
        {
            return Err("the machine name is 1 to 80 characters".into());
        }
        config.save(&paths.root)?;
        Ok(settings_view(&config))
    })
    .await
    {
        Ok(v) => axum::Json(v).into_response(),
        Err(r) => r,
    }
}
