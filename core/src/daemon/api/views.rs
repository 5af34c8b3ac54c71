//! The API's handlers: what the UI shows (the live board, approvals, harnesses,
//! sinks, settings, remote titles, a long work's progress; a session's pool
//! account) and the few things it changes, each through the library (the Pool
//! page's are `pool`'s).
//! Blocking reads and writes (SQLite, the state files, the keychain) run on the
//! runtime's blocking pool; a failure is an `ApiError` with its status.

use super::error::ApiError;
use super::shapes::{
    AccountWindow, AcpAgent, Approval, Attention, DaemonView, Declined, EffectiveSettings,
    HarnessOffer, HarnessView, Offers, Overview, PairingState, ProgressView, Removed,
    SessionAccount, SessionView, SinkAdded, SinkTest, SinkView, TitlesSet, TitlesState, reply,
};
use crate::installers::{Action, Installers};
use crate::pipeline::outbox::Outbox;
use crate::pipeline::session::{Glance, SessionRecord};
use crate::pool::store::PoolFile;
use crate::runtime::blocking;
use crate::sinks::{self, NewSink, SinkList};
use crate::state::config::Config;
use crate::state::live_config::LiveConfig;
use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, Query, State};
use harness::install::HarnessReport;
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
    pub pairing: Arc<std::sync::Mutex<Option<PairingState>>>,
    /// Control's hub: which permission prompts wait (local approvals).
    pub hub: Option<Arc<crate::control::hub::Hub>>,
    /// Control itself, when it runs: which turns a Stop ends, and a Stop.
    pub control: Option<Arc<crate::control::machine::Control>>,
    /// The daemon's settings in force (what it acts on; `config.json` itself
    /// is what the Settings page reads and changes).
    pub config: LiveConfig,
}

/// A session stays on the board this long after its last event, unless it still
/// needs the person or is working.
const BOARD_MS: i64 = 24 * 3600 * 1000;

/// What a handler gives back: its JSON, or the error the API says.
pub(super) type ApiResult = Result<Json<Value>, ApiError>;

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
pub async fn overview(State(ctx): State<Ctx>) -> ApiResult {
    let paths = ctx.paths.clone();
    // The session as the board keys it (`<harness>:<id>`), and the attention.
    let waiting: Vec<(String, String)> = ctx
        .hub
        .as_ref()
        .map(|h| h.waiting_permissions())
        .unwrap_or_default()
        .into_iter()
        .map(|(s, a)| (s.to_string(), a))
        .collect();
    let live = ctx.config.clone();
    let stoppable: std::collections::HashSet<String> = match &ctx.control {
        Some(c) => crate::control::local::cancellable(c)
            .await
            .iter()
            .map(ToString::to_string)
            .collect(),
        None => Default::default(),
    };
    blocking(move || {
        let (config, config_problem) = (live.now(), live.problem());
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
        let pace = crate::pace::Pace::load(&paths);
        let mut sessions: Vec<SessionView> = records
            .iter()
            .filter(|(_, _, r)| r.last_ms > 0)
            .map(|(h, id, r)| SessionView {
                account: session_account(r, &emails, alert, &pace),
                can_stop: stoppable.contains(&format!("{h}:{id}")),
                ..session_view(h, id, r, now)
            })
            .filter(|s| s.state != Glance::Done || now - s.last_ms < BOARD_MS)
            .collect();
        // Needing the person, then working, then done (`Glance`'s order).
        sessions.sort_by_key(|s| (s.state, std::cmp::Reverse(s.last_ms)));
        if let Some(ob) = &outbox {
            for s in sessions.iter_mut().filter(|s| s.state == Glance::NeedsYou) {
                describe_attentions(ob, s);
            }
        }
        let approvals: Vec<Approval> = sessions
            .iter()
            .flat_map(|s| {
                s.attentions.iter().map(|a| Approval {
                    attention: a.clone(),
                    session: s.key.clone(),
                    title: s.title.clone(),
                    cwd: s.cwd.clone(),
                    harness: s.harness.clone(),
                    // Its hook waits and the person allows answering here.
                    answerable: local && waiting.contains(&(s.key.clone(), a.attention_id.clone())),
                })
            })
            .collect();
        let daemon = crate::state::lock::holder(&paths).map(|h| DaemonView {
            pid: h.pid,
            mode: h.mode.as_str(),
        });
        Ok(reply(&Overview {
            machine,
            daemon,
            sessions,
            approvals,
            config_problem,
        }))
    })
    .await
}

/// A session on the board: who, where, its state at a glance, its attentions
/// (described by `describe_attentions`), no account yet.
fn session_view(harness: &str, id: &str, r: &SessionRecord, now: i64) -> SessionView {
    let attentions = r
        .open
        .iter()
        .map(|a| Attention {
            attention_id: a.id.clone(),
            agent_id: a.agent_id.clone(),
            kind: None,
            tool: None,
            message: None,
            time: None,
        })
        .collect();
    SessionView {
        key: format!("{harness}:{id}"),
        harness: harness.to_string(),
        id: id.to_string(),
        title: r
            .block
            .title
            .clone()
            .or_else(|| r.block.cwd.clone())
            .unwrap_or_else(|| id.chars().take(8).collect()),
        cwd: r.block.cwd.clone(),
        repo: r.block.repo.clone(),
        branch: r.block.branch.clone(),
        model: r.block.model.clone(),
        url: r.block.url.clone(),
        state: r.glance(),
        ended: r.ended,
        last_ms: r.last_ms,
        first_ms: (r.first_ms > 0).then_some(r.first_ms),
        age_s: (now - r.last_ms).max(0) / 1000,
        attentions,
        account: None,
        can_stop: false,
    }
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
/// one: its id, the pool's email for it, the fullest window it reported (the
/// one it burns most) and whether that reached `alert` percent
/// (`pool_alert_percent`, where the pool asks for attention).
fn session_account(
    r: &SessionRecord,
    emails: &[(String, String)],
    alert: u8,
    pace: &crate::pace::Pace,
) -> Option<SessionAccount> {
    let limits = r.limits.as_ref()?;
    let id = limits.account_id.as_deref().filter(|a| !a.is_empty())?;
    let email = emails.iter().find(|(a, _)| a == id).map(|(_, e)| e.clone());
    let now = protocol::time::now_ms();
    let fullest = sessionpipe_pool::limits::fullest(&limits.windows);
    let near = fullest.is_some_and(|w| w.used_percent >= f64::from(alert));
    let window = fullest.map(|w| AccountWindow {
        id: w.id.clone(),
        used_percent: w.used_percent,
        resets_at: w.resets_at.clone(),
        runs_out_at: w
            .resets_at
            .as_deref()
            .and_then(|r| pace.runs_out_ms(id, &w.id, r, now))
            .map(protocol::time::rfc3339_ms),
    });
    Some(SessionAccount {
        id: id.to_string(),
        email,
        window,
        near,
    })
}

/// Fills each open attention of a session with what its `attention.needed` said
/// (`kind`, and `tool`, `message`, `time` when present), read from the session's
/// recent events: the board and the approvals list show what is being asked.
/// An attention's newest event wins (a valid one always has a `kind`).
fn describe_attentions(ob: &Outbox, session: &mut SessionView) {
    // Its last 200 events, of which only the attentions are read whole.
    let Ok(rows) = ob.recent_of_type(&session.harness, &session.id, "attention.needed", 200) else {
        return;
    };
    let text = |v: &Value| v.as_str().map(str::to_string);
    for row in &rows {
        let Ok(env) = serde_json::from_str::<Value>(&row.envelope) else {
            continue;
        };
        if env["type"] != "attention.needed" {
            continue;
        }
        let data = &env["data"];
        for a in session.attentions.iter_mut() {
            if data["attention_id"] == a.attention_id.as_str() && a.kind.is_none() {
                a.kind = text(&data["kind"]);
                a.tool = text(&data["tool"]);
                a.message = text(&data["message"]);
                a.time = text(&env["time"]);
            }
        }
    }
}

/// A session's recent events (everything stored: this is the person's own view).
pub async fn session_events(
    State(ctx): State<Ctx>,
    Path((harness, id)): Path<(String, String)>,
    Query(q): Query<Limit>,
) -> ApiResult {
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

/// A session's changes per turn, each edit's text included: the person's own
/// view of their machine, read as the receiver reads it for the phone.
pub async fn session_changes(
    State(ctx): State<Ctx>,
    Path((harness, id)): Path<(String, String)>,
) -> Result<Json<protocol::changes::Changes>, ApiError> {
    use protocol::changes::{READ_PAGE, READ_TYPES, Reading};
    let paths = ctx.paths.clone();
    blocking(move || {
        let mut reading = Reading::default();
        let Some(ob) = Outbox::open_readonly(&paths.outbox())? else {
            return Ok(Json(reading.changes(None)));
        };
        // The record keeps the folder as `~/…`; the edits name it whole.
        let home = spool::paths::home_dir();
        let cwd = ob
            .session(&harness, &id)?
            .and_then(|r| r.block.cwd)
            .map(|c| spool::paths::untilde(&c, home.as_deref()));
        let mut before = i64::MAX;
        'pages: loop {
            let page = ob.events_of_types_before(&harness, &id, READ_TYPES, before, READ_PAGE)?;
            for (seq, stored) in &page {
                before = *seq;
                let Ok(mut env) = serde_json::from_str::<Value>(&stored.envelope) else {
                    continue;
                };
                let text = |v: &Value, k: &str| v[k].as_str().unwrap_or("").to_string();
                let (kind, time) = (text(&env, "type"), text(&env, "time"));
                let data = env.get_mut("data").map(Value::take).unwrap_or_default();
                if !reading.feed(kind, time, data, stored.envelope.len()) {
                    break 'pages;
                }
            }
            if page.len() < READ_PAGE {
                break;
            }
        }
        Ok(Json(reading.changes(cwd.as_deref())))
    })
    .await
}

/// The harnesses' reports as the UI shows them: each file's state, the note,
/// `hooks: true`, and `acp` when the harness is also an ACP agent installed
/// here. Asked for all (`names` empty), the installed ACP agents with no hooks
/// follow as rows of their own (`hooks: false`, no files).
fn harness_reports(ctx: &Ctx, names: &[String], action: Action) -> ApiResult {
    let acted = Installers::from_env(&ctx.paths)?.act(action, names, false, &[])?;
    let agents = crate::control::acp::here();
    let acp_of = |harness: &str| {
        agents
            .iter()
            .find(|a| a.harness == harness)
            .map(|a| AcpAgent {
                product: a.product,
                program: a.program.clone(),
                over_acp: a.over_acp,
            })
    };
    let mut out: Vec<HarnessView> = acted
        .into_iter()
        .map(|a| HarnessView {
            note: a.first_install_note.or(a.note),
            line: a.report.line(),
            hooks: true,
            acp: acp_of(&a.report.harness),
            report: a.report,
        })
        .collect();
    if names.is_empty() {
        for a in agents.iter().filter(|a| !a.hooked) {
            out.push(HarnessView {
                report: HarnessReport {
                    harness: a.harness.to_string(),
                    summary: "no hooks".into(),
                    files: Vec::new(),
                    looked_for: Vec::new(),
                },
                note: None,
                line: format!(
                    "{}: no hooks; an ACP agent at {}",
                    a.harness,
                    a.program.display()
                ),
                hooks: false,
                acp: acp_of(a.harness),
            });
        }
    }
    Ok(reply(&out))
}

/// Each harness: its hooks' state per file, with the reason when skipped or inactive.
pub async fn harnesses(State(ctx): State<Ctx>) -> ApiResult {
    blocking(move || harness_reports(&ctx, &[], Action::Status)).await
}

/// `GET /api/offers`: harnesses found here whose hooks are not installed
/// and that the person has not declined (installed after setup, say):
/// `{"offers": [{"harness", "files": [where its hooks would go]}]}`.
pub async fn offers(State(ctx): State<Ctx>) -> ApiResult {
    let paths = ctx.paths.clone();
    blocking(move || {
        let offers = crate::installers::offers(&paths)?
            .into_iter()
            .map(|r| HarnessOffer {
                files: r.files.iter().map(|f| f.path.clone()).collect(),
                harness: r.harness,
            })
            .collect();
        Ok(reply(&Offers { offers }))
    })
    .await
}

/// `POST /api/offers/{name}/decline`: not offered again.
pub async fn decline_offer(State(ctx): State<Ctx>, Path(name): Path<String>) -> ApiResult {
    let paths = ctx.paths.clone();
    blocking(move || {
        crate::installers::decline(&paths, &name)?;
        Ok(reply(&Declined { declined: name }))
    })
    .await
}

/// Installs (`{"installed": true}`) or removes a harness's hooks.
pub async fn set_harness(
    State(ctx): State<Ctx>,
    Path(name): Path<String>,
    given: Result<Json<Value>, JsonRejection>,
) -> ApiResult {
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
pub async fn sinks(State(ctx): State<Ctx>) -> ApiResult {
    let paths = ctx.paths.clone();
    blocking(move || {
        let list = SinkList::load(&paths)?;
        let ob = Outbox::open_readonly(&paths.outbox())?;
        let views: Vec<SinkView> = list
            .sinks
            .iter()
            .map(|s| {
                // Exact up to `tally::EXACT_UP_TO`, then an estimate.
                let behind = ob
                    .as_ref()
                    .and_then(|o| o.sink_cursor(&s.id).and_then(|c| o.count_after(c)).ok());
                SinkView {
                    sink: s.shown(),
                    behind: behind.map_or(0, |b| b.count),
                    behind_exact: behind.is_none_or(|b| b.exact),
                    line: s.describe(),
                }
            })
            .collect();
        Ok(reply(&views))
    })
    .await
}

/// Adds a sink: `{"target", "tier", "pii", "token", "webhook_secret"}` (the
/// secrets go to the keychain or the 0600 file, never back out).
pub async fn add_sink(
    State(ctx): State<Ctx>,
    given: Result<Json<Value>, JsonRejection>,
) -> ApiResult {
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
    Ok(reply(&SinkAdded {
        added: added.sink.describe(),
        id: added.sink.id,
        tier: added.sink.tier,
    }))
}

pub async fn remove_sink(State(ctx): State<Ctx>, Path(id): Path<String>) -> ApiResult {
    let paths = ctx.paths.clone();
    blocking(move || {
        let s = sinks::remove(&paths, &id)?;
        Ok(reply(&Removed {
            removed: s.describe(),
        }))
    })
    .await
}

/// `sink test`: discovery and a dry run of the filter; sends nothing.
pub async fn test_sink(State(ctx): State<Ctx>, Path(id): Path<String>) -> ApiResult {
    let (ok, lines) = sinks::test_report(&ctx.paths, &id).await?;
    Ok(reply(&SinkTest { ok, lines }))
}

pub async fn settings(State(ctx): State<Ctx>) -> ApiResult {
    let paths = ctx.paths.clone();
    blocking(move || Ok(Json(settings_view(&Config::load(&paths)?)))).await
}

/// The settings as GET and PUT answer them: the stored keys, with the tier
/// and the retention in effect and the hostname (what an empty machine name
/// falls back to).
fn settings_view(c: &Config) -> Value {
    let mut v = serde_json::to_value(c).expect("config serialises");
    let effective = EffectiveSettings {
        notify_tier: c.notify_tier(),
        retention_days: c.retention_days(),
        hostname: crate::state::config::hostname(),
    };
    if let (Some(stored), Value::Object(effective)) = (
        v.as_object_mut(),
        serde_json::to_value(effective).expect("settings serialise"),
    ) {
        // A stored key keeps its place and shows the value in effect.
        stored.extend(effective);
    }
    v
}

/// Changes settings: the keys given replace the stored ones; others stay.
pub async fn put_settings(
    State(ctx): State<Ctx>,
    given: Result<Json<Value>, JsonRejection>,
) -> ApiResult {
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
pub async fn titles(State(ctx): State<Ctx>) -> ApiResult {
    let paths = ctx.paths.clone();
    blocking(move || {
        let on = Config::load(&paths)?.remote_titles;
        Ok(reply(&TitlesState { remote_titles: on }))
    })
    .await
}

/// Turns remote titles on (`{"on": true}`: then the last 30 days are asked
/// about, and what was sent under another name is sent again) or off, as
/// `sessionpipe titles on|off` does. Answers with what the re-send did.
pub async fn put_titles(
    State(ctx): State<Ctx>,
    given: Result<Json<Value>, JsonRejection>,
) -> ApiResult {
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
        Ok(reply(&TitlesSet {
            remote_titles: on,
            resent,
        }))
    })
    .await
}

/// The long work running now on this machine (a backfill, remote titles'
/// re-send), whichever process runs it: `{"progress": null}`, or `{"progress":
/// {what, stage, done, total, harness?, pid, started_at, updated_at}}`
/// (`state::progress`).
pub async fn progress(State(ctx): State<Ctx>) -> ApiResult {
    let paths = ctx.paths.clone();
    blocking(move || {
        let progress = crate::state::progress::current(&paths);
        Ok(reply(&ProgressView { progress }))
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
        let session_account = |r: &SessionRecord, emails: &[(String, String)], alert| {
            serde_json::to_value(session_account(r, emails, alert, &Default::default())).unwrap()
        };
        assert_eq!(session_account(&r, &[], 90), Value::Null);
        r.limits = Some(LimitsObserved {
            account_id: Some("acct-1".into()),
            status: None,
            windows: vec![window("seven_day", 41.5), window("five_hour", 93.0)],
        });
        assert_eq!(
            session_account(&r, &[], 90),
            json!({"id": "acct-1", "email": null, "near": true, "window": {
                "id": "five_hour", "used_percent": 93.0, "resets_at": "2026-12-03T15:00:00.000Z",
                "runs_out_at": null}})
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
