//! The daemon's side of what control and the pipeline ask of each other.
//! Control asks the daemon (`DaemonHost`, the control crate's `Host`): its
//! settings in force (from the one `LiveConfig`), a receiver's machine token
//! (the secrets store), what the outbox's record of a session says, the
//! harnesses the outbox has seen, the pool's standing for the hello; and a
//! run's `turn.progress` events go through the pipeline's `LocalEvents`. The
//! hooks' calls ingest commits reach control's hub (`hook_call`). The
//! pipeline asks control (`AcpNames`, the pipeline's `GivenNames`) for the
//! name an ACP start gave a session whose hooks report under the harness's
//! own id, answered by control's own query (`store::acp_name`).
//!
//! It reads and answers; it decides nothing either side decides.

use crate::pipeline::ingest::Seen;
use crate::pipeline::local::LocalEvents;
use crate::pipeline::outbox::{GivenNames, Outbox};
use crate::state::config::Config;
use crate::state::live_config::LiveConfig;
use crate::state::secrets::Secrets;
use serde_json::{Value, json};
use sessionpipe_control::host::{Host, ProgressEvents, SessionFacts, Settings};
use sessionpipe_control::hub::HookCall;
use sessionpipe_verifier::SessionRef;
use spool::StatePaths;

/// A hook call ingest committed, as control's hub takes it.
pub fn hook_call(seen: Seen) -> HookCall {
    HookCall {
        job: seen.job,
        harness: seen.harness,
        session: seen.session,
        event: seen.event,
        opened: seen.attentions.opened,
        cleared: seen.attentions.cleared,
        turn_ended: seen.turn_ended,
        transcript: seen.transcript,
        subagent: seen.subagent,
    }
}

/// Control's answer to `GivenNames`: the names its ACP starts gave.
pub struct AcpNames;

impl GivenNames for AcpNames {
    fn name_of(
        &self,
        conn: &rusqlite::Connection,
        harness: &str,
        id: &str,
    ) -> rusqlite::Result<Option<String>> {
        sessionpipe_control::store::acp_name(conn, harness, id)
    }
}

/// What control asks of the daemon, answered from its state dir and the
/// settings it holds.
pub struct DaemonHost {
    paths: StatePaths,
    config: LiveConfig,
}

impl DaemonHost {
    pub fn new(paths: &StatePaths, config: LiveConfig) -> DaemonHost {
        DaemonHost {
            paths: paths.clone(),
            config,
        }
    }
}

/// Control's part of `config`.
pub fn settings_of(config: &Config) -> Settings {
    Settings {
        machine: config.machine(),
        control_folders: config.control_folders.clone(),
        control_mode: config.control_mode.clone(),
        local_approvals: config.local_approvals,
        control_worktrees: config.control_worktrees,
        control_starts_running: config.control_starts_running,
        control_starts_hourly: config.control_starts_hourly,
        control_runs_at_once: config.control_runs_at_once,
        control_run_minutes: config.control_run_minutes,
        acp_idle_minutes: config.acp_idle_minutes,
        acp_answer_seconds: config.acp_answer_seconds,
    }
}

impl Host for DaemonHost {
    fn settings(&self) -> Settings {
        settings_of(&self.config.now())
    }

    fn token(&self, key: &str) -> Option<String> {
        Secrets::new(&self.paths.root).get(key)
    }

    fn session(&self, session: &SessionRef) -> Option<SessionFacts> {
        let record = Outbox::open_readonly(&self.paths.outbox())
            .ok()
            .flatten()?
            .session(&session.harness, &session.id)
            .ok()
            .flatten()?;
        Some(SessionFacts {
            cwd: record.block.cwd,
            open: record.open.into_iter().map(|a| a.id).collect(),
            running: record.running_turn.is_some(),
            memo: record.memo,
        })
    }

    fn harnesses(&self) -> Vec<String> {
        Outbox::open_readonly(&self.paths.outbox())
            .ok()
            .flatten()
            .and_then(|o| o.harnesses().ok())
            .unwrap_or_default()
    }

    fn pool(&self) -> Option<Value> {
        pool_facts(&self.paths)
    }

    fn limits(&self) -> Option<Value> {
        limits_facts(&self.paths, protocol::time::now_ms())
    }

    fn sink_tier(&self, origin: &str) -> Option<u8> {
        crate::sinks::SinkList::tier_for(&self.paths, origin)
    }

    fn running(&self) -> Vec<(SessionRef, harness::Memo)> {
        let Some(outbox) = Outbox::open_readonly(&self.paths.outbox()).ok().flatten() else {
            return Vec::new();
        };
        // Only live records are read (an index), whatever `since` says.
        let now = protocol::time::now_ms();
        outbox
            .board_sessions(now)
            .unwrap_or_default()
            .into_iter()
            .filter(|(_, _, r)| r.running_turn.is_some() && !r.ended)
            .map(|(harness, id, r)| (SessionRef { harness, id }, r.memo))
            .collect()
    }
}

impl ProgressEvents for LocalEvents {
    fn append(
        &self,
        harness: &str,
        session: &str,
        event: protocol::EventData,
    ) -> Result<(), String> {
        LocalEvents::append(self, harness, session, vec![event])
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

/// Most accounts a hello names (the rest are the machine's to show).
const POOL_ACCOUNTS: usize = 50;

/// The hello's `pool`, once the person added an account: whether it is on,
/// and each account's standing (`status`, `until`, `windows`) as the daemon
/// last heard it, idle accounts' usage reads included (ADAPTERS.md's Pool
/// row: these reach the hello and `pool status`, never an event). Whole
/// percents, so a hello goes out when a window moves, not on every answer;
/// no credential, expiry or session id.
fn pool_facts(paths: &StatePaths) -> Option<Value> {
    let file = crate::pool::store::PoolFile::load(paths).ok()?;
    if file.accounts.is_empty() {
        return None;
    }
    let live = crate::pool::service::Snapshot::load(paths);
    let pace = crate::pace::Pace::load(paths);
    let now = protocol::time::now_ms();
    let accounts: Vec<Value> = crate::pool::views(paths, &file, live.as_ref())
        .into_iter()
        .take(POOL_ACCOUNTS)
        .map(|a| {
            let windows: Vec<Value> = a
                .windows
                .iter()
                .map(|w| {
                    let mut v = json!({"id": w.id, "used_percent": w.used_percent.round()});
                    if let Some(m) = w.window_minutes {
                        v["window_minutes"] = json!(m);
                    }
                    if let Some(r) = &w.resets_at {
                        v["resets_at"] = json!(r);
                        if let Some(t) = pace.runs_out_ms(&a.id, &w.id, r, now) {
                            v["runs_out_at"] = json!(whole_minute(t));
                        }
                    }
                    v
                })
                .collect();
            let mut v = json!({
                "id": a.id,
                "enabled": a.enabled,
                "status": a.status,
                "windows": windows,
            });
            if let Some(e) = a.email {
                v["email"] = json!(e);
            }
            if let Some(u) = a.until {
                v["until"] = json!(u);
            }
            v
        })
        .collect();
    Some(json!({"on": file.on, "accounts": accounts}))
}

/// A time as the hello says it: to the minute, so it changes when a minute does.
fn whole_minute(ms: i64) -> String {
    protocol::time::rfc3339_ms(ms - ms.rem_euclid(60_000))
}

/// Most windows a hello names.
const LIMIT_WINDOWS: usize = 20;

/// The hello's `limits`: every window whose period runs now (`pace`), whole
/// percents and whole minutes, so a hello goes out when one moves, not on
/// every status line; `runs_out_at` where the last hour's pace runs it out
/// before it resets. The pool's email names an account where it knows one.
fn limits_facts(paths: &StatePaths, now_ms: i64) -> Option<Value> {
    let standing = crate::pace::Pace::load(paths).standing(now_ms);
    if standing.is_empty() {
        return None;
    }
    let names = crate::pace::account_names(paths);
    let windows: Vec<Value> = standing
        .into_iter()
        .take(LIMIT_WINDOWS)
        .map(|s| {
            let mut v = json!({
                "harness": s.key.harness,
                "window": s.key.window,
                "used_percent": s.used_percent.round(),
                "resets_at": s.key.resets_at,
            });
            if !s.key.account.is_empty() {
                v["account"] = json!(s.key.account);
                if let Some(email) = names.of(&s.key.account) {
                    v["email"] = json!(email);
                }
            }
            if let Some(t) = s.runs_out_ms {
                v["runs_out_at"] = json!(whole_minute(t));
            }
            v
        })
        .collect();
    Some(json!(windows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hellos_pool_names_each_accounts_standing_and_nothing_secret() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        std::fs::create_dir_all(&paths.root).unwrap();
        assert_eq!(pool_facts(&paths), None, "no account added: no pool");
        std::fs::write(
            paths.pool(),
            r#"{"on":true,"port":41000,"accounts":[{"id":"acct-a","email":"a@example.com","enabled":true},{"id":"acct-b","enabled":false}]}"#,
        )
        .unwrap();
        std::fs::write(
            crate::pool::service::Snapshot::path(&paths),
            r#"{"at_ms":1,"accounts":[{"id":"acct-a","email":"a@example.com","enabled":true,"status":"rejected","until":"2026-12-03T20:00:00.000Z","windows":[{"id":"five_hour","window_minutes":300,"used_percent":93.4,"resets_at":"2026-12-03T20:00:00.000Z"}],"expires_at":"2026-12-03T22:00:00.000Z","refresh_error":"x","sessions":["s-1"]}]}"#,
        )
        .unwrap();
        let pool = pool_facts(&paths).unwrap();
        assert_eq!(
            pool,
            json!({"on": true, "accounts": [
                {"id": "acct-a", "email": "a@example.com", "enabled": true, "status": "rejected",
                 "until": "2026-12-03T20:00:00.000Z",
                 "windows": [{"id": "five_hour", "window_minutes": 300, "used_percent": 93.0,
                              "resets_at": "2026-12-03T20:00:00.000Z"}]},
                {"id": "acct-b", "enabled": false, "status": "no_sign_in", "windows": []},
            ]})
        );
    }
}
