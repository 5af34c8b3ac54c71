//! The pure pace: a short series of (time, used) per window and period, the
//! projection at the last hour's pace, which periods were warned about, the
//! warning's words, and `pace.json` where the daemon keeps it. Reads no
//! outbox and writes no event (`watch` does).

use protocol::LimitsObserved;
use serde::{Deserialize, Serialize};
use spool::StatePaths;
use std::collections::HashMap;

/// The pace is read over this much of the series.
const PACE_WINDOW_MS: i64 = 3600 * 1000;
/// A pace needs points at least this far apart (two status lines a second
/// apart say nothing of an hour).
const MIN_SPAN_MS: i64 = 1000;
/// Windows followed at once; past it the oldest periods are forgotten.
const SERIES_MAX: usize = 256;

/// One window's period of one account: a warning is given once per key.
#[derive(Clone, Debug, Hash, PartialEq, Eq, Serialize, Deserialize)]
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

/// A window as it stands: its last reading and, when the last hour's pace
/// runs it out before it resets, when.
#[derive(Clone, Debug, PartialEq)]
pub struct Standing {
    pub key: WindowKey,
    pub used_percent: f64,
    pub seen_ms: i64,
    pub runs_out_ms: Option<i64>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Series {
    /// (time, used percent), oldest first, the last hour's.
    points: Vec<(i64, f64)>,
    warned: bool,
}

/// The series of every window followed, and the periods warned about.
#[derive(Clone, Debug, Default)]
pub struct Pace {
    series: HashMap<WindowKey, Series>,
    /// The outbox row the daemon's task read last (`watch`).
    pub(super) read_to: i64,
}

/// `pace.json` as written: the map as a list (a key is a struct).
#[derive(Serialize, Deserialize, Default)]
struct PaceFile {
    #[serde(default)]
    read_to: i64,
    #[serde(default)]
    windows: Vec<(WindowKey, Series)>,
}

impl Pace {
    /// One `limits.observed` of `harness` at `at_ms`: the warnings it newly
    /// calls for. With `warn` false the series still moves (the board shows
    /// the projection) but no period is marked as warned about.
    pub fn observe(
        &mut self,
        harness: &str,
        at_ms: i64,
        limits: &LimitsObserved,
        warn: bool,
    ) -> Vec<Warning> {
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
            let series = self.series.entry(key.clone()).or_default();
            series.points.push((at_ms, w.used_percent));
            series.points.retain(|(t, _)| at_ms - t <= PACE_WINDOW_MS);
            let Some(runs_out_ms) = runs_out(&series.points) else {
                continue;
            };
            if warn && runs_out_ms < resets_ms && w.used_percent < 100.0 && !series.warned {
                series.warned = true;
                out.push(Warning {
                    key,
                    used_percent: w.used_percent,
                    runs_out_ms,
                    resets_ms,
                });
            }
        }
        // Periods that ended an hour ago are history.
        self.series.retain(|k, _| {
            protocol::time::parse_rfc3339_ms(&k.resets_at)
                .is_some_and(|r| r + PACE_WINDOW_MS > at_ms)
        });
        out
    }

    /// Every window whose period has not ended at `now_ms`, its latest
    /// period only, with the projection where it runs out before it resets.
    pub fn standing(&self, now_ms: i64) -> Vec<Standing> {
        let mut latest: HashMap<(&str, &str, &str), Standing> = HashMap::new();
        for (key, series) in &self.series {
            let Some(resets_ms) = protocol::time::parse_rfc3339_ms(&key.resets_at) else {
                continue;
            };
            let Some(&(seen_ms, used_percent)) = series.points.last() else {
                continue;
            };
            if resets_ms <= now_ms {
                continue;
            }
            let runs_out_ms = current(&series.points, now_ms).filter(|t| *t < resets_ms);
            let slot = (
                key.harness.as_str(),
                key.account.as_str(),
                key.window.as_str(),
            );
            if latest.get(&slot).is_some_and(|s| s.seen_ms >= seen_ms) {
                continue;
            }
            latest.insert(
                slot,
                Standing {
                    key: key.clone(),
                    used_percent,
                    seen_ms,
                    runs_out_ms,
                },
            );
        }
        let mut out: Vec<Standing> = latest.into_values().collect();
        out.sort_by(|a, b| {
            (&a.key.harness, &a.key.account, &a.key.window).cmp(&(
                &b.key.harness,
                &b.key.account,
                &b.key.window,
            ))
        });
        out
    }

    /// When `account`'s `window` of the period ending `resets_at` runs out at
    /// the last hour's pace, where that is before it resets and still to
    /// come at `now_ms`.
    pub fn runs_out_ms(
        &self,
        account: &str,
        window: &str,
        resets_at: &str,
        now_ms: i64,
    ) -> Option<i64> {
        let resets_ms = protocol::time::parse_rfc3339_ms(resets_at)?;
        self.series
            .iter()
            .filter(|(k, _)| k.account == account && k.window == window && k.resets_at == resets_at)
            .filter_map(|(_, s)| current(&s.points, now_ms))
            .filter(|t| *t < resets_ms)
            .min()
    }

    /// The pace kept in `pace.json`; empty when there is none or it does not
    /// read (it is rebuilt from the next observations).
    pub fn load(paths: &StatePaths) -> Pace {
        let Ok(bytes) = std::fs::read(paths.pace()) else {
            return Pace::default();
        };
        let Ok(f) = serde_json::from_slice::<PaceFile>(&bytes) else {
            return Pace::default();
        };
        Pace {
            series: f.windows.into_iter().collect(),
            read_to: f.read_to,
        }
    }

    /// Writes the pace to `pace.json` (0600): the daemon's task after each
    /// read, and a test that sets one up.
    pub fn save(&self, paths: &StatePaths) -> std::io::Result<()> {
        let f = PaceFile {
            read_to: self.read_to,
            windows: self
                .series
                .iter()
                .map(|(k, s)| (k.clone(), s.clone()))
                .collect(),
        };
        let bytes = serde_json::to_vec(&f).map_err(std::io::Error::other)?;
        spool::files::write_private_file(&paths.pace(), &bytes)
    }

    fn forget_oldest(&mut self) {
        let oldest = self
            .series
            .iter()
            .min_by_key(|(_, s)| s.points.last().map_or(i64::MIN, |(t, _)| *t))
            .map(|(k, _)| k.clone());
        if let Some(k) = oldest {
            self.series.remove(&k);
        }
    }
}

/// The least rise in percent points a pace is read from (below it, float
/// noise or rounding, not use).
const MIN_RISE: f64 = 0.1;
/// A projection further out than this is no projection (no window lasts it).
const HORIZON_MS: i64 = 366 * 24 * 3600 * 1000;

/// When a series (time order, one period) reaches 100 % at the pace from its
/// first point to its last; `None` without a rise of `MIN_RISE` over
/// `MIN_SPAN_MS`.
fn runs_out(points: &[(i64, f64)]) -> Option<i64> {
    let (t0, u0) = *points.first()?;
    let (t1, u1) = *points.last()?;
    if t1 - t0 < MIN_SPAN_MS || u1 - u0 < MIN_RISE || !u1.is_finite() || !u0.is_finite() {
        return None;
    }
    let per_ms = (u1 - u0) / (t1 - t0) as f64;
    let left_ms = ((100.0 - u1).max(0.0) / per_ms).ceil();
    (left_ms <= HORIZON_MS as f64).then(|| t1 + left_ms as i64)
}

/// `runs_out` as it stands at `now_ms`: none once the last reading is more
/// than the pace's hour old (the use stopped, or nobody heard it) or the
/// time it projected has passed.
fn current(points: &[(i64, f64)], now_ms: i64) -> Option<i64> {
    let (last, _) = *points.last()?;
    if now_ms - last > PACE_WINDOW_MS {
        return None;
    }
    runs_out(points).filter(|t| *t > now_ms)
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
pub fn window_words(id: &str) -> String {
    match id {
        "five_hour" | "primary" => "5-hour".into(),
        "seven_day" | "secondary" => "weekly".into(),
        other => other.replace('_', " "),
    }
}

/// `HH:MM` in this machine's time zone.
pub fn local_clock(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| {
            t.to_zoned_datetime(jiff::tz::TimeZone::system())
                .strftime("%H:%M")
                .to_string()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
