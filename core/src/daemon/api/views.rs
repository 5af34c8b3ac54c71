//! The API's handlers: what the UI shows (the live board, approvals, harnesses,
//! sinks, settings, remote titles, a long work's progress; a session's pool
//! account) and the few things it changes, each through the library (the Pool
//! page's are `pool`'s).
//! Blocking reads and writes (SQLite, the state files, the keychain) run on the
//! runtime's blocking pool; a failure is an `ApiError` with its status.

use super::error::ApiError;
use crate::installers::{Action, Installers};
use crate::pipeline::outbox::Outbox;
use crate::pipeline::session::SessionRecord;
use crate::pool::store::PoolFile;
use crate::runtime::blocking;
use crate::sinks::{self, NewSink, SinkList};
use crate::state::config::Config;
use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, Query, State};
use serde_json::{Value, json};
use spool::StatePaths;
use std::sync::Arc;

/// What every handler (and the API's checks) runs with.
#[derive(Clone)]
pub struct Ctx {
    pub paths: StatePaths,
    pub token: Arc<std::sync::RwLock<String>>,
    /// The UI's files are served (else the API alone).
    pub serves_ui: bool,
    /// `127.0.0.1:<port>`: the only `Host` answered.
    pub host: Arc<String>,
    /// The pairing the UI started, while it runs and after it ended.
    pub pairing: Arc<std::sync::Mutex<Option<Value>>>,
    /// Control's hub: which permission prompts wait (local approvals).
    pub hub: Option<Arc<crate::control::hub::Hub>>,
}

/// A session stays on the board this long after its last event, unless it still
/// needs the person or is working.
const BOARD_MS: i64 = 24 * 3600 * 1000;

pub(super) type Answer = Result<Json<Value>, ApiError>;

/// A JSON body, or why it is not one (as JSON, like every other answer).
pub(super) fn body(given: Result<Json<Value>, JsonRejection>) -> Result<Value, ApiError> {
    given
        .map(|Json(v)| v)
        .map_err(|e| ApiError::BadRequest(format!("the body is not JSON: {}", e.body_text())))
}

/// The query of `/api/sessions/.../events`.
#[derive(serde::Deserialize)]
pub struct Limit {
    pub limit: Option<usize>,
}

/// The live board: sessions (those needing the person first), the approvals
/// across them, the machine and the daemon.
pub async fn overview(State(ctx): State<Ctx>) -> Answer {
    let paths = ctx.paths.clone();
    let waiting = ctx
        .hub
        .as_ref()
        .map(|h| h.waiting_permissions())
        .unwrap_or_default();
    blocking(move || {
        let config = Config::load(&paths).unwrap_or_default();
        let local = config.local_approvals;
        let alert = config.pool_alert_percent();
        let machine = config.machine();
        let outbox = Outbox::open_readonly(&paths.outbox())?;
        let now = protocol::time::now_ms();
        // The board's window and the live ones, not every record kept.
        let records = match &outbox {
            Some(ob) => ob.board_sessions(now - BOARD_MS)?,
            None => Vec::new(),
        };
        let emails = account_emails(&paths);
        let mut sessions: Vec<Value> = records
            .iter()
            .filter(|(_, _, r)| r.last_ms > 0)
            .map(|(h, id, r)| {
                let mut v = session_view(h, id, r, now);
                v["account"] = session_account(r, &emails, alert);
                v
            })
            .filter(|v| v["state"] != "done" || now - v["last_ms"].as_i64().unwrap_or(0) < BOARD_MS)
            .collect();
        let rank = |v: &Value| match v["state"].as_str() {
            Some("needs_you") => 0,
            Some("working") => 1,
            _ => 2,
        };
        sessions.sort_by_key(|v| {
            (
                rank(v),
                std::cmp::Reverse(v["last_ms"].as_i64().unwrap_or(0)),
            )
        });
        if let Some(ob) = &outbox {
            for s in sessions.iter_mut().filter(|s| s["state"] == "needs_you") {
                describe_attentions(ob, s);
            }
        }
        let approvals: Vec<Value> = sessions
            .iter()
            .flat_map(|s| {
                s["attentions"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|mut a| {
                        a["session"] = s["key"].clone();
                        a["title"] = s["title"].clone();
                        a["cwd"] = s["cwd"].clone();
                        a["harness"] = s["harness"].clone();
                        // Its hook waits and the person allows answering here.
                        let key = (
                            s["key"].as_str().unwrap_or("").to_string(),
                            a["attention_id"].as_str().unwrap_or("").to_string(),
                        );
                        a["answerable"] = json!(local && waiting.contains(&key));
                        a
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        let daemon = crate::state::lock::holder(&paths)
            .map(|h| json!({"pid": h.pid, "mode": h.mode.as_str()}));
        Ok(Json(json!({
            "machine": machine, "daemon": daemon, "sessions": sessions, "approvals": approvals
        })))
    })
    .await
}

/// One session on the board: who, where, its state at a glance, its attentions.
fn session_view(harness: &str, id: &str, r: &SessionRecord, now: i64) -> Value {
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
        "state": r.glance().as_str(),
        "ended": r.ended,
        "last_ms": r.last_ms,
        "first_ms": (r.first_ms > 0).then_some(r.first_ms),
        "age_s": (now - r.last_ms).max(0) / 1000,
        "attentions": attentions,
    })
}

/// The emails the pool knows, by account id (the board names an account by
/// its email when the pool has one). Empty when there is no pool.
fn account_emails(paths: &StatePaths) -> Vec<(String, String)> {
    PoolFile::load(paths)
        .map(|f| {
            f.accounts
                .into_iter()
                .filter_map(|a| Some((a.id, a.email?)))
                .collect()
        })
        .unwrap_or_default()
}

/// A session's account, from its latest `limits.observed` when that names
/// one: `{id, email?, window: {id, used_percent, resets_at?}?, near}`, the
/// window being the fullest it reported (the one it burns most) and `near`
/// whether it reached `alert` percent (`pool_alert_percent`, where the pool
/// asks for attention). Null otherwise.
fn session_account(r: &SessionRecord, emails: &[(String, String)], alert: u8) -> Value {
    let Some(limits) = &r.limits else {
        return Value::Null;
    };
    let Some(id) = limits.account_id.as_deref().filter(|a| !a.is_empty()) else {
        return Value::Null;
    };
    let email = emails.iter().find(|(a, _)| a == id).map(|(_, e)| e);
    let fullest = sessionpipe_pool::limits::fullest(&limits.windows);
    let near = fullest.is_some_and(|w| w.used_percent >= f64::from(alert));
    let window = fullest
        .map(|w| json!({"id": w.id, "used_percent": w.used_percent, "resets_at": w.resets_at}));
    json!({"id": id, "email": email, "window": window, "near": near})
}

/// Fills each open attention of a session with what its `attention.needed` said
/// (`kind`, and `tool`, `message`, `time` when present), read from the session's
/// recent events: the board and the approvals list show what is being asked.
fn describe_attentions(ob: &Outbox, session: &mut Value) {
    let (Some(harness), Some(id)) = (session["harness"].as_str(), session["id"].as_str()) else {
        return;
    };
    // Its last 200 events, of which only the attentions are read whole.
    let Ok(rows) = ob.recent_of_type(harness, id, "attention.needed", 200) else {
        return;
    };
    let Some(attentions) = session["attentions"].as_array_mut() else {
        return;
    };
    for row in &rows {
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
    Path((harness, id)): Path<(String, String)>,
    Query(q): Query<Limit>,
) -> Answer {
    let paths = ctx.paths.clone();
    let limit = q.limit.unwrap_or(50).min(500);
    blocking(move || {
        let Some(ob) = Outbox::open_readonly(&paths.outbox())? else {
            return Ok(Json(json!([])));
        };
        let events: Vec<Value> = ob
            .events_of(&harness, &id, limit)?
            .iter()
            .filter_map(|r| serde_json::from_str(&r.envelope).ok())
            .collect();
        Ok(Json(Value::Array(events)))
    })
    .await
}

/// The harnesses' reports as the UI shows them: each file's state, the note,
/// `hooks: true`, and `acp` when the harness is also an ACP agent installed
/// here. Asked for all (`names` empty), the installed ACP agents with no hooks
/// follow as rows of their own (`hooks: false`, no files).
fn harness_reports(ctx: &Ctx, names: &[String], action: Action) -> Answer {
    let acted = Installers::from_env(&ctx.paths)?.act(action, names, false, &[])?;
    let agents = crate::control::acp::here();
    let acp_of = |harness: &str| {
        agents
            .iter()
            .find(|a| a.harness == harness)
            .map(|a| json!({"product": a.product, "program": a.program, "over_acp": a.over_acp}))
    };
    let mut out: Vec<Value> = acted
        .iter()
        .map(|a| {
            let mut v = serde_json::to_value(&a.report).expect("a report serialises");
            v["note"] = json!(a.first_install_note.or(a.note));
            v["line"] = json!(a.report.line());
            v["hooks"] = json!(true);
            v["acp"] = json!(acp_of(&a.report.harness));
            v
        })
        .collect();
    if names.is_empty() {
        for a in agents.iter().filter(|a| !a.hooked) {
            out.push(json!({
                "harness": a.harness,
                "summary": "no hooks",
                "files": [],
                "note": null,
                "line": format!("{}: no hooks; an ACP agent at {}", a.harness, a.program.display()),
                "hooks": false,
                "acp": acp_of(a.harness),
            }));
        }
    }
    Ok(Json(Value::Array(out)))
}

/// Each harness: its hooks' state per file, with the reason when skipped or inactive.
pub async fn harnesses(State(ctx): State<Ctx>) -> Answer {
    blocking(move || harness_reports(&ctx, &[], Action::Status)).await
}

/// `GET /api/offers`: harnesses found here whose hooks are not installed
/// and that the person has not declined (installed after setup, say):
/// `{"offers": [{"harness", "files": [where its hooks would go]}]}`.
pub async fn offers(State(ctx): State<Ctx>) -> Answer {
    let paths = ctx.paths.clone();
    blocking(move || {
        let offers: Vec<Value> = crate::installers::offers(&paths)?
            .into_iter()
            .map(|r| {
                json!({"harness": r.harness, "files": r.files.iter().map(|f| f.path.clone()).collect::<Vec<_>>()})
            })
            .collect();
        Ok(Json(json!({"offers": offers})))
    })
    .await
}

/// `POST /api/offers/{name}/decline`: not offered again.
pub async fn decline_offer(State(ctx): State<Ctx>, Path(name): Path<String>) -> Answer {
    let paths = ctx.paths.clone();
    blocking(move || {
        crate::installers::decline(&paths, &name)?;
        Ok(Json(json!({"declined": name})))
    })
    .await
}

/// Installs (`{"installed": true}`) or removes a harness's hooks.
pub async fn set_harness(
    State(ctx): State<Ctx>,
    Path(name): Path<String>,
    given: Result<Json<Value>, JsonRejection>,
) -> Answer {
    let Some(on) = body(given)?.get("installed").and_then(Value::as_bool) else {
        return Err(ApiError::BadRequest(
            "send {\"installed\": true|false}".into(),
        ));
    };
    let action = if on {
        Action::Install
    } else {
        Action::Uninstall
    };
    blocking(move || harness_reports(&ctx, &[name], action)).await
}

/// The sinks, each with how far behind it is.
pub async fn sinks(State(ctx): State<Ctx>) -> Answer {
    let paths = ctx.paths.clone();
    blocking(move || {
        let list = SinkList::load(&paths)?;
        let ob = Outbox::open_readonly(&paths.outbox())?;
        let views: Vec<Value> = list
            .sinks
            .iter()
            .map(|s| {
                // Exact up to `tally::EXACT_UP_TO`, then an estimate.
                let behind = ob
                    .as_ref()
                    .and_then(|o| o.sink_cursor(&s.id).and_then(|c| o.count_after(c)).ok());
                let mut v = s.shown();
                v["behind"] = json!(behind.map_or(0, |b| b.count));
                v["behind_exact"] = json!(behind.is_none_or(|b| b.exact));
                v["line"] = json!(s.describe());
                v
            })
            .collect();
        Ok(Json(Value::Array(views)))
    })
    .await
}

/// Adds a sink: `{"target", "tier", "pii", "token", "webhook_secret"}` (the
/// secrets go to the keychain or the 0600 file, never back out).
pub async fn add_sink(State(ctx): State<Ctx>, given: Result<Json<Value>, JsonRejection>) -> Answer {
    let b = body(given)?;
    let Some(target) = b.get("target").and_then(Value::as_str).map(str::to_string) else {
        return Err(ApiError::BadRequest("a sink needs a target".into()));
    };
    let tier = match b.get("tier") {
        None => 0,
        Some(t) => match t.as_u64() {
            Some(t) if t <= 3 => t as u8,
            _ => return Err(ApiError::BadRequest("tier is 0 to 3".into())),
        },
    };
    let secret = |k: &str| {
        b.get(k)
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
    };
    let new = NewSink {
        target,
        tier,
        pii: b.get("pii").and_then(Value::as_bool).unwrap_or(false),
        token: secret("token"),
        webhook_secret: secret("webhook_secret"),
    };
    let added = sinks::add(&ctx.paths, new).await?;
    Ok(Json(json!({
        "added": added.sink.describe(),
        "id": added.sink.id,
        "tier": added.sink.tier,
    })))
}

pub async fn remove_sink(State(ctx): State<Ctx>, Path(id): Path<String>) -> Answer {
    let paths = ctx.paths.clone();
    blocking(move || {
        let s = sinks::remove(&paths, &id)?;
        Ok(Json(json!({"removed": s.describe()})))
    })
    .await
}

/// `sink test`: discovery and a dry run of the filter; sends nothing.
pub async fn test_sink(State(ctx): State<Ctx>, Path(id): Path<String>) -> Answer {
    let (ok, lines) = sinks::test_report(&ctx.paths, &id).await?;
    Ok(Json(json!({"ok": ok, "lines": lines})))
}

pub async fn settings(State(ctx): State<Ctx>) -> Answer {
    let paths = ctx.paths.clone();
    blocking(move || Ok(Json(settings_view(&Config::load(&paths)?)))).await
}

/// The settings as GET and PUT answer them: the stored keys, with the tier
/// and the retention in effect and the hostname (what an empty machine name
/// falls back to).
fn settings_view(c: &Config) -> Value {
    let mut v = serde_json::to_value(c).expect("config serialises");
    v["notify_tier"] = json!(c.notify_tier());
    v["retention_days"] = json!(c.retention_days());
    v["hostname"] = json!(crate::state::config::hostname());
    v
}

/// Changes settings: the keys given replace the stored ones; others stay.
pub async fn put_settings(
    State(ctx): State<Ctx>,
    given: Result<Json<Value>, JsonRejection>,
) -> Answer {
    let b = body(given)?;
    let Some(changes) = b.as_object().cloned() else {
        return Err(ApiError::BadRequest("send an object of settings".into()));
    };
    let paths = ctx.paths.clone();
    blocking(move || {
        let config = Config::load(&paths)?
            .with_changes(changes)
            .map_err(|e| ApiError::BadRequest(e.to_string()))?;
        config.save(&paths)?;
        Ok(Json(settings_view(&config)))
    })
    .await
}

/// Whether remote titles are on.
pub async fn titles(State(ctx): State<Ctx>) -> Answer {
    let paths = ctx.paths.clone();
    blocking(move || {
        let on = Config::load(&paths)?.remote_titles;
        Ok(Json(json!({"remote_titles": on})))
    })
    .await
}

/// Turns remote titles on (`{"on": true}`: then the last 30 days are asked
/// about, and what was sent under another name is sent again) or off, as
/// `sessionpipe titles on|off` does. Answers with what the re-send did.
pub async fn put_titles(
    State(ctx): State<Ctx>,
    given: Result<Json<Value>, JsonRejection>,
) -> Answer {
    let Some(on) = body(given)?.get("on").and_then(Value::as_bool) else {
        return Err(ApiError::BadRequest("send {\"on\": true|false}".into()));
    };
    let paths = ctx.paths.clone();
    blocking(move || {
        let host = harness::install::Host::from_env()
            .ok_or_else(|| ApiError::Internal("HOME is not set".into()))?;
        // Its progress is filed by `titles` (`GET /api/progress` shows it).
        let resent = crate::titles::set(&paths, on, &host, &mut |_| {})
            .map_err(|e| ApiError::Internal(e.to_string()))?;
        Ok(Json(json!({"remote_titles": on, "resent": resent})))
    })
    .await
}

/// The long work running now on this machine (a backfill, remote titles'
/// re-send), whichever process runs it: `{"progress": null}`, or `{"progress":
/// {what, stage, done, total, harness?, pid, started_at, updated_at}}`
/// (`state::progress`).
pub async fn progress(State(ctx): State<Ctx>) -> Answer {
    let paths = ctx.paths.clone();
    blocking(move || {
        let now = crate::state::progress::current(&paths);
        Ok(Json(json!({ "progress": now })))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::{LimitWindow, LimitsObserved};

    fn window(id: &str, used: f64) -> LimitWindow {
        LimitWindow {
            id: id.into(),
            window_minutes: None,
            used_percent: used,
            resets_at: Some("2026-12-03T15:00:00.000Z".into()),
        }
    }

    #[test]
    fn a_sessions_account_is_named_by_the_pools_email_with_its_fullest_window() {
        let mut r = SessionRecord::default();
        assert_eq!(session_account(&r, &[], 90), Value::Null);
        r.limits = Some(LimitsObserved {
            account_id: Some("acct-1".into()),
            status: None,
            windows: vec![window("seven_day", 41.5), window("five_hour", 93.0)],
        });
        assert_eq!(
            session_account(&r, &[], 90),
            json!({"id": "acct-1", "email": null, "near": true, "window": {
                "id": "five_hour", "used_percent": 93.0, "resets_at": "2026-12-03T15:00:00.000Z"}})
        );
        assert_eq!(
            session_account(&r, &[], 95)["near"],
            false,
            "the person's threshold"
        );
        let emails = [("acct-1".to_string(), "a@x.example".to_string())];
        assert_eq!(session_account(&r, &emails, 90)["email"], "a@x.example");
        // Limits that name no account (Codex's) show none.
        r.limits.as_mut().unwrap().account_id = None;
        assert_eq!(session_account(&r, &emails, 90), Value::Null);
    }
}
