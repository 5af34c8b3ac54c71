//! The person's settings for this machine: `config.json` in the state dir.
//!
//! Small and optional: a missing file is the defaults; one that does not read
//! is an error here, never the defaults in silence. The daemon holds the
//! settings in force as they change (`live_config`): it starts regardless,
//! and keeps the last settings that read while the file does not.

use super::file::{self, FileError};
use serde::{Deserialize, Serialize};
use spool::StatePaths;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(default)]
pub struct Config {
    /// Read transcripts into `turn.transcript` events (tier 2). Off by default:
    /// turned on when a destination takes tier 2, or by the person for local use.
    pub transcripts: bool,
    /// The machine name events carry instead of the hostname.
    pub machine: Option<String>,
    /// The highest tier a desktop notification's text may show (0: only what
    /// kind of attention; 1: the tool and its message). Default 1.
    pub notify_tier: Option<u8>,
    /// Notify when a turn ends while the person is away. Off by default.
    pub notify_turn_end: bool,
    /// Harnesses whose notifications are muted.
    pub muted: Vec<String>,
    /// Notifications paused from the tray (until turned back on).
    pub notifications_paused: bool,
    /// Start the app at login (the app's autostart follows this).
    pub open_at_login: bool,
    /// Control: the folders a command may act in (absolute); a session whose
    /// folder is not inside one of them is refused `folder`.
    pub control_folders: Vec<String>,
    /// Control: the mode the hello reports (`safe`, `auto`, `inherit`).
    pub control_mode: Option<String>,
    /// Answer permission prompts from the tray and its notifications (off by
    /// default; beyond the protocol, the person at this machine).
    pub local_approvals: bool,
    /// Control: a start whose folder is inside a git repository runs in a
    /// new `git worktree` of its own, on a branch `sessionpipe/<short id>`
    /// (`sessionpipe worktrees list|prune`). Off by default.
    pub control_worktrees: bool,
    /// Control: sessions a receiver may have started running at once (2),
    /// and started in any hour (10); beyond either, `start_limit`.
    pub control_starts_running: Option<u32>,
    pub control_starts_hourly: Option<u32>,
    /// Control: headless processes (starts, resumes, forks) at once (3); more
    /// wait their turn.
    pub control_runs_at_once: Option<u32>,
    /// Control: the longest a headless run may take, minutes (30); past it
    /// the run is ended and acked `failed`.
    pub control_run_minutes: Option<u32>,
    /// Control over ACP: how long an agent process the daemon started is
    /// kept after its last turn, for a next prompt (10 minutes).
    pub acp_idle_minutes: Option<u32>,
    /// Control over ACP: the longest an agent may take to answer its start,
    /// a new session or a reopened one (120 s; a turn's bound is
    /// `control_run_minutes`).
    pub acp_answer_seconds: Option<u32>,
    /// The app runs a receiver with its phone page on this computer (loopback
    /// only, `http://localhost:PORT`), which `sessionpipe connect` pairs with.
    /// Off by default: a listener nobody asked for is not opened.
    pub local_receiver: bool,
    /// That receiver's port (`LOCAL_RECEIVER_PORT` when unset): fixed, since
    /// the page's origin (and the day keys a browser keeps for it) includes it.
    pub local_receiver_port: Option<u16>,
    /// Ask claude.ai for the names it gives sessions the Claude app started
    /// (ADAPTERS.md, "the one exception"). Off by default: it reads Claude
    /// Code's sign-in for each read, so only `sessionpipe titles on` (or the
    /// Titles page) turns it on, and that also re-sends the last 30 days.
    pub remote_titles: bool,
    /// The account pool: a window of a live session's account this full
    /// (percent, 90 when unset) notifies and asks for attention.
    pub pool_alert_percent: Option<u8>,
    /// Warn once when an account's limit window will run out before it
    /// resets, at the last hour's pace (`pace`; on when unset).
    pub pace_alerts: Option<bool>,
    /// Days an event is kept in the outbox once every sink has taken it
    /// (`RETENTION_DAYS` when unset or 0); an event some sink has not taken
    /// is kept whatever its age. Session records are never pruned.
    #[serde(deserialize_with = "retention_days")]
    pub retention_days: Option<u32>,
    /// Prices by model, in USD per million tokens, over the table sessionpipe
    /// ships (`core/prices.json`): `{"my-model": {"input": 3, "output": 15,
    /// "cache_read": 0.3, "cache_write": 3.75}}`. `usage` counts cost by them;
    /// a model priced nowhere is counted in tokens alone.
    pub prices: BTreeMap<String, ModelPrice>,
}

/// A model's prices, in USD per million tokens. A cache price left out is
/// unknown: tokens of that kind then leave the model without a cost, never
/// guessed at another price.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ModelPrice {
    pub input: f64,
    pub output: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub cache_read: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub cache_write: Option<f64>,
}

impl ModelPrice {
    /// True when every price it gives is a number of dollars (not below
    /// zero, not infinite).
    pub fn sane(&self) -> bool {
        [
            Some(self.input),
            Some(self.output),
            self.cache_read,
            self.cache_write,
        ]
        .into_iter()
        .flatten()
        .all(|p| p.is_finite() && p >= 0.0)
    }
}

/// How long events are kept once every sink has them, unless the person
/// chose another `retention_days`.
pub const RETENTION_DAYS: u32 = 30;
/// The longest `retention_days` taken (a hundred years: "keep them").
pub const RETENTION_DAYS_MAX: u32 = 36_500;

/// `retention_days`: null, or a whole number of days from 0 (the default)
/// to `RETENTION_DAYS_MAX`; anything else is refused with what it should be.
fn retention_days<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    let v = Option::<serde_json::Value>::deserialize(d)?;
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    match v.as_u64() {
        Some(n) if n <= u64::from(RETENTION_DAYS_MAX) => Ok(Some(n as u32)),
        _ => Err(serde::de::Error::custom(format!(
            "retention_days is a whole number of days from 1 to {RETENTION_DAYS_MAX} (0 or null: the default, {RETENTION_DAYS}), not {v}"
        ))),
    }
}

/// The local receiver's port unless the person chose another.
pub const LOCAL_RECEIVER_PORT: u16 = 47474;

/// Control's modes (`control mode`).
pub const CONTROL_MODES: &[&str] = &["safe", "auto", "inherit"];

/// A setting that is not what it says it is.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error(
        "the machine name {0:?} is not a name: 1 to 80 characters, no control characters or slashes, no space at either end"
    )]
    Machine(String),
    #[error("notify_tier is 0 to 3, not {0}")]
    NotifyTier(u8),
    #[error("muted names a harness sessionpipe does not know: {0:?}")]
    Muted(String),
    #[error("a control folder is an absolute path without control characters, not {0:?}")]
    Folder(String),
    #[error("control mode is safe, auto or inherit, not {0:?}")]
    Mode(String),
    #[error("no setting {0:?} (`sessionpipe config get` lists them)")]
    Unknown(String),
    #[error(
        "remote titles are turned on and off with `sessionpipe titles on|off` or the Titles page (PUT /api/titles): turning them on re-sends the last 30 days"
    )]
    TitlesElsewhere,
    #[error("{key}: {why}")]
    Value { key: String, why: String },
}

impl Config {
    /// This config with `changes` (setting → JSON value; null is the
    /// default) applied and checked: what the UI's Settings and `sessionpipe
    /// config set` both change it by. Nothing is saved.
    pub fn with_changes(
        &self,
        changes: serde_json::Map<String, serde_json::Value>,
    ) -> Result<Config, ConfigError> {
        let current = serde_json::to_value(self).expect("config serialises");
        let mut merged = current.as_object().cloned().unwrap_or_default();
        for (k, v) in changes {
            let Some(was) = merged.get(&k) else {
                return Err(ConfigError::Unknown(k));
            };
            // Turning it on is more than a setting (it re-sends the last 30
            // days): only `titles on|off` changes it.
            if k == "remote_titles" && *was != v {
                return Err(ConfigError::TitlesElsewhere);
            }
            // Null is the default: a flag's is false, a list's is empty.
            let v = match (v, was) {
                (serde_json::Value::Null, serde_json::Value::Bool(_)) => false.into(),
                (serde_json::Value::Null, serde_json::Value::Array(_)) => {
                    serde_json::Value::Array(Vec::new())
                }
                (serde_json::Value::Null, serde_json::Value::Object(_)) => {
                    serde_json::Value::Object(serde_json::Map::new())
                }
                (v, _) => v,
            };
            // Each setting alone, so an error names the one that is wrong.
            let mut one = serde_json::Map::new();
            one.insert(k.clone(), v.clone());
            if let Err(e) = serde_json::from_value::<Config>(serde_json::Value::Object(one)) {
                return Err(ConfigError::Value {
                    key: k,
                    why: e.to_string(),
                });
            }
            merged.insert(k, v);
        }
        let config: Config =
            serde_json::from_value(serde_json::Value::Object(merged)).map_err(|e| {
                ConfigError::Value {
                    key: "settings".into(),
                    why: e.to_string(),
                }
            })?;
        config.check()?;
        Ok(config)
    }

    /// Every setting's name, as config.json spells it.
    pub fn names() -> Vec<String> {
        match serde_json::to_value(Config::default()) {
            Ok(serde_json::Value::Object(m)) => m.keys().cloned().collect(),
            _ => Vec::new(),
        }
    }

    /// Checks every field against what it is; the API refuses a change that
    /// fails, and the daemon ignores a hand-edited value that does.
    pub fn check(&self) -> Result<(), ConfigError> {
        if let Some(m) = self.machine.as_deref()
            && !protocol::valid_machine_name(m)
        {
            return Err(ConfigError::Machine(m.to_string()));
        }
        if let Some(t) = self.notify_tier.filter(|t| *t > 3) {
            return Err(ConfigError::NotifyTier(t));
        }
        if let Some(h) = self.muted.iter().find(|h| adapters::lookup(h).is_none()) {
            return Err(ConfigError::Muted(h.clone()));
        }
        if let Some(f) = self
            .control_folders
            .iter()
            .find(|f| !std::path::Path::new(f).is_absolute() || f.chars().any(char::is_control))
        {
            return Err(ConfigError::Folder(f.clone()));
        }
        if let Some(m) = self
            .control_mode
            .as_deref()
            .filter(|m| !CONTROL_MODES.contains(m))
        {
            return Err(ConfigError::Mode(m.to_string()));
        }
        if let Some((model, _)) = self.prices.iter().find(|(_, p)| !p.sane()) {
            return Err(ConfigError::Value {
                key: "prices".into(),
                why: format!(
                    "{model}: a price is a number of dollars per million tokens, 0 or more"
                ),
            });
        }
        Ok(())
    }

    /// The machine name events carry: the configured one when it is a name
    /// (a hand-edited file may hold anything), else the hostname.
    pub fn machine(&self) -> String {
        match self.machine.as_deref() {
            Some(m) if protocol::valid_machine_name(m) => m.to_string(),
            _ => hostname(),
        }
    }

    /// Whether a window running out before it resets is warned about.
    pub fn pace_alerts(&self) -> bool {
        self.pace_alerts.unwrap_or(true)
    }

    pub fn pool_alert_percent(&self) -> u8 {
        self.pool_alert_percent.unwrap_or(90).clamp(1, 100)
    }

    /// The days events are kept once every sink has them.
    pub fn retention_days(&self) -> u32 {
        match self.retention_days {
            Some(d) if d > 0 => d.min(RETENTION_DAYS_MAX),
            _ => RETENTION_DAYS,
        }
    }

    pub fn notify_tier(&self) -> u8 {
        self.notify_tier.unwrap_or(1).min(3)
    }

    /// The port the app's local receiver listens on (never 0: a page needs a
    /// stable origin).
    pub fn local_receiver_port(&self) -> u16 {
        self.local_receiver_port
            .filter(|p| *p != 0)
            .unwrap_or(LOCAL_RECEIVER_PORT)
    }
}

/// This machine's hostname.
pub fn hostname() -> String {
    gethostname::gethostname().to_string_lossy().into_owned()
}

impl Config {
    /// The settings; the defaults when there is no file yet.
    pub fn load(paths: &StatePaths) -> Result<Config, FileError> {
        Ok(file::load(&paths.config())?.unwrap_or_default())
    }

    pub fn save(&self, paths: &StatePaths) -> Result<(), FileError> {
        file::save(&paths.config(), self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<Config, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    #[test]
    fn retention_days_is_a_whole_number_of_days_and_0_or_absent_is_the_default() {
        assert_eq!(parse("{}").unwrap().retention_days(), RETENTION_DAYS);
        let null = parse(r#"{"retention_days": null}"#).unwrap();
        assert_eq!(
            (null.retention_days, null.retention_days()),
            (None, RETENTION_DAYS)
        );
        assert_eq!(
            parse(r#"{"retention_days": 0}"#).unwrap().retention_days(),
            RETENTION_DAYS
        );
        assert_eq!(
            parse(r#"{"retention_days": 7}"#).unwrap().retention_days(),
            7
        );
        assert_eq!(
            parse(r#"{"retention_days": 36500}"#)
                .unwrap()
                .retention_days(),
            RETENTION_DAYS_MAX
        );
        for bad in ["-1", "1.5", "\"30\"", "36501", "true", "[7]"] {
            let why = parse(&format!(r#"{{"retention_days": {bad}}}"#)).unwrap_err();
            assert!(
                why.starts_with("retention_days is a whole number of days from 1 to 36500"),
                "{bad}: {why}"
            );
        }
        // Saved and read back as it was given.
        let seven = parse(r#"{"retention_days": 7}"#).unwrap();
        let text = serde_json::to_string(&seven).unwrap();
        assert_eq!(parse(&text).unwrap(), seven);
    }
}
