//! Layer 3, pace: when an account's limit window will run out at the pace it
//! was used over the last hour, and one attention when that comes before the
//! window resets ("Claude Code account a@x will hit its 5-hour limit around
//! 14:20, resets 15:00"), for every account whose `limits.observed` the
//! daemon sees: the pool's and plain hooks' alike (a status line, a Codex
//! rollout).
//!
//! `Pace` is the pure part: a short series of (time, used) per window and
//! period, the projection, and which periods were already warned about.
//! `run` is the daemon's task: it reads each new `limits.observed` from the
//! outbox after ingest commits, and appends the warning to the session that
//! reported it (an `attention.needed` `question`, so the desktop
//! notification, the Web Push and the page say it as any other). Nothing is
//! sent anywhere else; `pace_alerts: false` in config.json turns it off.
//! It never guesses a pace from one observation or from a window going down.

use crate::pipeline::local::LocalEvents;
use crate::pipeline::outbox::Outbox;
use crate::runtime::blocking;
use crate::state::live_config::LiveConfig;
use protocol::{AttentionKind, AttentionNeeded, EventData, LimitsObserved};
use serde_json::Value;
use spool::StatePaths;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

/// The pace is read over this much of the series.
const PACE_WINDOW_MS: i64 = 3600 * 1000;
/// A pace needs points at least this far apart (two status lines a second
/// apart say nothing of an hour).
const MIN_SPAN_MS: i64 = 1000;
/// Windows followed at once; past it the oldest periods are forgotten.
const SERIES_MAX: usize = 256;
/// Events read from the outbox per look.
const READ_MAX: usize = 500;
/// Looked at this often even when no commit rang.
const LOOK_EVERY: Duration = Duration::from_secs(30);
/// The id prefix of a pace warning's attention (one per window and period).
pub const PACE_ATTENTION: &str = "sessionpipe-pace:";

/// One window's period of one account: a warning is given once per key.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct WindowKey {
    pub harness: String,
    /// The account's id, or empty where the harness names none.
    pub account: String,
    pub window: String,
    /// The period: a window that resets starts a new key.
    pub resets_at: String,
}

/// A window that runs out before it resets, at the last hour's pace.
#[derive(Clone, Debug, PartialEq)]
pub struct Warning {
    pub key: WindowKey,
    pub used_percent: f64,
    pub runs_out_ms: i64,
    pub resets_ms: i64,
}

/// The series of every window followed, and the periods warned about.
#[derive(Debug, Default)]
pub struct Pace {
    series: HashMap<WindowKey, Vec<(i64, f64)>>,
    warned: HashSet<WindowKey>,
}

impl Pace {
    /// One `limits.observed` of `harness` at `at_ms`: the warnings it newly
    /// calls for.
    pub fn observe(&mut self, harness: &str, at_ms: i64, limits: &LimitsObserved) -> Vec<Warning> {
        let mut out = Vec::new();
        for w in &limits.windows {
            let Some(resets_at) = w.resets_at.as_deref() else {
                continue;
            };
            let Some(resets_ms) = protocol::time::parse_rfc3339_ms(resets_at) else {
                continue;
            };
            let key = WindowKey {
                harness: harness.to_string(),
                account: limits.account_id.clone().unwrap_or_default(),
                window: w.id.clone(),
                resets_at: resets_at.to_string(),
            };
            if self.series.len() >= SERIES_MAX && !self.series.contains_key(&key) {
                self.forget_oldest();
            }
            let points = self.series.entry(key.clone()).or_default();
            points.push((at_ms, w.used_percent));
            points.retain(|(t, _)| at_ms - t <= PACE_WINDOW_MS);
            let Some(runs_out_ms) = runs_out(points) else {
                continue;
            };
            if runs_out_ms < resets_ms && w.used_percent < 100.0 && self.warned.insert(key.clone())
            {
                out.push(Warning {
                    key,
                    used_percent: w.used_percent,
                    runs_out_ms,
                    resets_ms,
                });
            }
        }
        out
    }

    fn forget_oldest(&mut self) {
        let oldest = self
            .series
            .iter()
            .min_by_key(|(_, p)| p.last().map_or(i64::MIN, |(t, _)| *t))
            .map(|(k, _)| k.clone());
        if let Some(k) = oldest {
            self.series.remove(&k);
            self.warned.remove(&k);
        }
    }
}

/// When a series (time order, one period) reaches 100 % at the pace from its
/// first point to its last; `None` without a rising pace over `MIN_SPAN_MS`.
fn runs_out(points: &[(i64, f64)]) -> Option<i64> {
    let (t0, u0) = *points.first()?;
    let (t1, u1) = *points.last()?;
    if t1 - t0 < MIN_SPAN_MS || u1 <= u0 {
        return None;
    }
    let per_ms = (u1 - u0) / (t1 - t0) as f64;
    Some(t1 + ((100.0 - u1) / per_ms).ceil() as i64)
}

/// The warning in the words every place shows.
pub fn words(w: &Warning, account_name: Option<&str>) -> String {
    let harness = protocol::harness_display_name(&w.key.harness);
    let who = match account_name.filter(|n| !n.is_empty()) {
        Some(name) => format!("{harness} account {name}"),
        None => format!("Your {harness} account"),
    };
    format!(
        "{who} will hit its {} limit around {}, resets {} ({:.0}% used now)",
        window_words(&w.key.window),
        local_clock(w.runs_out_ms),
        local_clock(w.resets_ms),
        w.used_percent
    )
}

/// `five_hour` → `5-hour`, `seven_day` → `weekly`; else the id's words.
fn window_words(id: &str) -> String {
    match id {
        "five_hour" | "primary" => "5-hour".into(),
        "seven_day" | "secondary" => "weekly".into(),
        other => other.replace('_', " "),
    }
}

/// `HH:MM` in this machine's time zone.
fn local_clock(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| {
            t.to_zoned_datetime(jiff::tz::TimeZone::system())
                .strftime("%H:%M")
                .to_string()
        })
        .unwrap_or_default()
}

/// The daemon's task: reads each new `limits.observed` after a commit rings
/// `bell` (or every `LOOK_EVERY`) and appends its warnings to their sessions.
pub async fn run(
    paths: StatePaths,
    config: LiveConfig,
    events: Arc<LocalEvents>,
    bell: Arc<tokio::sync::Notify>,
) {
    let path = paths.outbox();
    // What is in the outbox already was seen by an earlier run (or is history).
    let mut after = {
        let path = path.clone();
        blocking(move || {
            Outbox::open_readonly(&path)
                .ok()
                .flatten()
                .and_then(|ob| ob.max_rowid().ok())
        })
        .await
        .unwrap_or(0)
    };
    let mut pace = Pace::default();
    loop {
        let _ = tokio::time::timeout(LOOK_EVERY, bell.notified()).await;
        let on = config.now().pace_alerts();
        let read_from = path.clone();
        let read = blocking(move || -> Option<Vec<(i64, Value)>> {
            let ob = Outbox::open_readonly(&read_from).ok().flatten()?;
            let rows = ob
                .events_of_type_after(after, "limits.observed", READ_MAX)
                .ok()?;
            Some(
                rows.into_iter()
                    .filter_map(|r| Some((r.rowid, serde_json::from_str(&r.envelope).ok()?)))
                    .collect(),
            )
        })
        .await;
        for (rowid, env) in read.unwrap_or_default() {
            after = after.max(rowid);
            if !on {
                continue;
            }
            let (Some(harness), Some(session), Some(at_ms)) = (
                env["harness"]["name"].as_str(),
                env["session"]["id"].as_str(),
                env["time"]
                    .as_str()
                    .and_then(protocol::time::parse_rfc3339_ms),
            ) else {
                continue;
            };
            let Ok(limits) = serde_json::from_value::<LimitsObserved>(env["data"].clone()) else {
                continue;
            };
            let warnings = pace.observe(harness, at_ms, &limits);
            if warnings.is_empty() {
                continue;
            }
            let batch: Vec<EventData> = warnings
                .iter()
                .map(|w| {
                    EventData::AttentionNeeded(attention(w, account_name(&paths, &w.key.account)))
                })
                .collect();
            let (events, harness, session) =
                (events.clone(), harness.to_string(), session.to_string());
            let appended = blocking(move || events.append(&harness, &session, batch)).await;
            if let Err(e) = appended {
                tracing::warn!("pace: a warning was not written: {e}");
            }
        }
    }
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

/// The pool's email of an account, where the pool knows it.
fn account_name(paths: &StatePaths, account: &str) -> Option<String> {
    if account.is_empty() {
        return None;
    }
    crate::pool::store::PoolFile::load(paths)
        .ok()?
        .accounts
        .into_iter()
        .find(|a| a.id == account)
        .and_then(|a| a.email)
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::LimitWindow;

    const HOUR: i64 = 3600 * 1000;

    fn seen(used: f64, resets_ms: i64) -> LimitsObserved {
        LimitsObserved {
            account_id: Some("acc-1".into()),
            status: None,
            windows: vec![LimitWindow {
                id: "five_hour".into(),
                window_minutes: Some(300),
                used_percent: used,
                resets_at: Some(protocol::time::rfc3339_ms(resets_ms)),
            }],
        }
    }

    #[test]
    fn a_window_running_out_before_it_resets_is_warned_about_once() {
        let mut pace = Pace::default();
        let resets = 10 * HOUR;
        // One point is no pace.
        assert!(
            pace.observe("claude-code", 0, &seen(40.0, resets))
                .is_empty()
        );
        // 40 -> 50 in half an hour: 100 % two and a half hours on, before the reset.
        let w = pace.observe("claude-code", HOUR / 2, &seen(50.0, resets));
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!(w[0].runs_out_ms, HOUR / 2 + 5 * HOUR / 2);
        assert_eq!(w[0].resets_ms, resets);
        // The same period again: no second warning.
        assert!(
            pace.observe("claude-code", HOUR, &seen(60.0, resets))
                .is_empty()
        );
        // A new period (the window reset) is a new key.
        let next = resets + 5 * HOUR;
        assert!(
            pace.observe("claude-code", resets + 1, &seen(10.0, next))
                .is_empty()
        );
        assert_eq!(
            pace.observe("claude-code", resets + HOUR / 4, &seen(60.0, next))
                .len(),
            1
        );
    }

    #[test]
    fn no_warning_when_the_window_resets_first_or_the_pace_is_flat() {
        let mut pace = Pace::default();
        // 40 -> 50 in half an hour: 100 % at 3 h, but the window resets at 2 h.
        pace.observe("codex", 0, &seen(40.0, 2 * HOUR));
        assert!(
            pace.observe("codex", HOUR / 2, &seen(50.0, 2 * HOUR))
                .is_empty()
        );
        // Flat, or going down (a window that was reset early): no pace.
        let mut flat = Pace::default();
        flat.observe("codex", 0, &seen(50.0, 9 * HOUR));
        assert!(
            flat.observe("codex", HOUR / 2, &seen(50.0, 9 * HOUR))
                .is_empty()
        );
        assert!(
            flat.observe("codex", HOUR, &seen(45.0, 9 * HOUR))
                .is_empty()
        );
    }

    #[test]
    fn the_pace_is_the_last_hours() {
        let mut pace = Pace::default();
        let resets = 20 * HOUR;
        // Slow for hours (1 % an hour), then fast: only the last hour counts.
        for h in 0..5 {
            assert!(
                pace.observe("claude-code", h * HOUR, &seen(h as f64, resets))
                    .is_empty()
            );
        }
        // 4 % at 4 h, 40 % half an hour later: 72 % an hour, out before 5 h 30.
        let w = pace.observe("claude-code", 4 * HOUR + HOUR / 2, &seen(40.0, resets));
        assert_eq!(w.len(), 1, "the last hour's pace runs it out: {w:?}");
    }

    #[test]
    fn the_words_name_the_account_the_window_and_both_times() {
        let w = Warning {
            key: WindowKey {
                harness: "claude-code".into(),
                account: "acc-1".into(),
                window: "five_hour".into(),
                resets_at: String::new(),
            },
            used_percent: 63.4,
            runs_out_ms: 0,
            resets_ms: HOUR,
        };
        let said = words(&w, Some("a@x.example"));
        assert!(
            said.starts_with("Claude Code account a@x.example will hit its 5-hour limit around "),
            "{said}"
        );
        assert!(
            said.contains(", resets ") && said.ends_with("(63% used now)"),
            "{said}"
        );
        assert!(words(&w, None).starts_with("Your Claude Code account will hit"));
    }
}
