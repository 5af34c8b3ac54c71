//! The daemon's pace task: reads each new `limits.observed` from the outbox
//! after ingest commits (or every `LOOK_EVERY`), moves the pace, keeps it in
//! `pace.json`, and appends a warning to the session that reported a window
//! running out before it resets: an `attention.needed` `question`, so the
//! desktop notification, the Web Push and the page say it as any other.
//!
//! It writes nothing but that attention and its own file; `pace_alerts: false`
//! in config.json stops the warnings, not the projection the board shows. A
//! pool account's window already at `pool_alert_percent` gets none: the pool
//! asked for attention there.

use super::series::{Pace, Warning, words};
use crate::pipeline::local::LocalEvents;
use crate::pipeline::outbox::Outbox;
use crate::runtime::blocking;
use crate::state::live_config::LiveConfig;
use protocol::{AttentionKind, AttentionNeeded, EventData, LimitsObserved};
use serde_json::Value;
use spool::StatePaths;
use std::sync::Arc;
use std::time::Duration;

/// Events read from the outbox per look.
const READ_MAX: usize = 500;
/// Looked at this often even when no commit rang.
const LOOK_EVERY: Duration = Duration::from_secs(30);
/// The read position with nothing observed is written at most this often.
const KEEP_EVERY: Duration = Duration::from_secs(300);
/// The id prefix of a pace warning's attention (one per window and period).
pub const PACE_ATTENTION: &str = "sessionpipe-pace:";
/// An observation older than this when read (a drain worker's, written while
/// no daemon ran) moves the pace but warns of nothing: the warning would be late.
const FRESH_MS: i64 = 10 * 60 * 1000;

/// A `limits.observed` read back: who said it, when, and what.
struct Observed {
    harness: String,
    session: String,
    at_ms: i64,
    limits: LimitsObserved,
}

/// Runs until the daemon stops. `bell` rings after each ingest commit.
pub async fn run(
    paths: StatePaths,
    config: LiveConfig,
    events: Arc<LocalEvents>,
    bell: Arc<tokio::sync::Notify>,
) {
    let path = paths.outbox();
    let mut pace = {
        let paths = paths.clone();
        blocking(move || Pace::load(&paths)).await
    };
    // A first start reads nothing of what is already stored (history, not pace).
    if pace.read_to == 0 {
        let path = path.clone();
        pace.read_to = blocking(move || {
            Outbox::open_readonly(&path)
                .ok()
                .flatten()
                .and_then(|ob| ob.max_rowid().ok())
        })
        .await
        .unwrap_or(0);
    }
    let mut last_kept = std::time::Instant::now();
    loop {
        let (read, scanned_to) = {
            let (path, after) = (path.clone(), pace.read_to);
            blocking(move || read_after(&path, after)).await
        };
        // What was scanned is not scanned again, a limit or not.
        let moved = scanned_to > pace.read_to;
        pace.read_to = pace.read_to.max(scanned_to);
        let read_any = !read.is_empty();
        if read_any {
            let settings = config.now();
            let (warn, alert) = (settings.pace_alerts(), settings.pool_alert_percent());
            let pooled = {
                let paths = paths.clone();
                blocking(move || pool_accounts(&paths)).await
            };
            let now = protocol::time::now_ms();
            let mut said: Vec<(String, String, Warning)> = Vec::new();
            for o in read {
                let fresh = now - o.at_ms <= FRESH_MS;
                for w in pace.observe(&o.harness, o.at_ms, &o.limits, warn && fresh) {
                    // The pool already asks at `pool_alert_percent` for
                    // its accounts: past it, a second warning says nothing new.
                    let asked =
                        pooled.contains(&w.key.account) && w.used_percent >= f64::from(alert);
                    if w.runs_out_ms > now && !asked {
                        said.push((o.harness.clone(), o.session.clone(), w));
                    }
                }
            }
            // The warnings first, then the file that says they were given:
            // a stop between the two repeats a warning, never loses one.
            for (harness, session, w) in said {
                let name = {
                    let (paths, account) = (paths.clone(), w.key.account.clone());
                    blocking(move || account_names(&paths).of(&account)).await
                };
                let batch = vec![EventData::AttentionNeeded(attention(&w, name))];
                let events = events.clone();
                if let Err(e) = blocking(move || events.append(&harness, &session, batch)).await {
                    tracing::warn!("pace: a warning was not written: {e}");
                }
            }
        }
        // The read position alone is kept now and then (a restart scans on
        // from it); what was observed, at once.
        let observed = read_any || last_kept.elapsed() >= KEEP_EVERY;
        if moved && observed {
            last_kept = std::time::Instant::now();
            let kept = {
                let paths = paths.clone();
                let snapshot = pace.clone();
                blocking(move || snapshot.save(&paths)).await
            };
            if let Err(e) = kept {
                tracing::warn!("pace: pace.json was not written: {e}");
            }
            // A full read may have left more behind: read on before waiting.
            continue;
        }
        let _ = tokio::time::timeout(LOOK_EVERY, bell.notified()).await;
    }
}

/// The `limits.observed` stored after row `after`, oldest first, and the
/// row the read covered up to (the last one stored when it read them all).
fn read_after(path: &std::path::Path, after: i64) -> (Vec<Observed>, i64) {
    let Some(ob) = Outbox::open_readonly(path).ok().flatten() else {
        return (Vec::new(), after);
    };
    // The last row first: one stored during the read is read next time.
    let Ok(last) = ob.max_rowid() else {
        return (Vec::new(), after);
    };
    let Ok(rows) = ob.events_of_type_after(after, last, "limits.observed", READ_MAX) else {
        return (Vec::new(), after);
    };
    let scanned_to = match rows.last() {
        Some(r) if rows.len() == READ_MAX => r.rowid,
        _ => last,
    };
    let observed = rows
        .into_iter()
        .filter_map(|r| {
            let env: Value = serde_json::from_str(&r.envelope).ok()?;
            Some(Observed {
                harness: env["harness"]["name"].as_str()?.to_string(),
                session: env["session"]["id"].as_str()?.to_string(),
                at_ms: env["time"]
                    .as_str()
                    .and_then(protocol::time::parse_rfc3339_ms)?,
                limits: serde_json::from_value(env["data"].clone()).ok()?,
            })
        })
        .collect();
    (observed, scanned_to)
}

/// The attention a warning is: a `question`, once per window and period.
fn attention(w: &Warning, account_name: Option<String>) -> AttentionNeeded {
    AttentionNeeded {
        attention_id: format!(
            "{PACE_ATTENTION}{}:{}:{}",
            w.key.account, w.key.window, w.key.resets_at
        ),
        kind: AttentionKind::Question,
        tool: None,
        message: Some(words(w, account_name.as_deref())),
        agent_id: None,
    }
}

/// The ids of the pool's accounts.
fn pool_accounts(paths: &StatePaths) -> Vec<String> {
    account_names(paths).0.into_keys().collect()
}

/// The pool's accounts' emails by id, read once for the windows a caller
/// names (each window's own read of `pool.json` was one per window).
#[derive(Default)]
pub struct AccountNames(std::collections::HashMap<String, Option<String>>);

impl AccountNames {
    /// The pool's email of `account`, where the pool knows it.
    pub fn of(&self, account: &str) -> Option<String> {
        self.0.get(account).cloned().flatten()
    }
}

/// The pool's accounts as `pool.json` has them now (none: no pool).
pub fn account_names(paths: &StatePaths) -> AccountNames {
    let accounts = crate::pool::store::PoolFile::load(paths)
        .map(|f| f.accounts)
        .unwrap_or_default();
    AccountNames(accounts.into_iter().map(|a| (a.id, a.email)).collect())
}
