//! `sessionpipe config get [KEY] | set KEY VALUE`: the settings the UI's
//! Settings page changes (config.json), for a machine without a desktop.
//!
//! It owns reading and printing them and turning a typed value into JSON;
//! the checks are `Config::with_changes`, the same the API makes, so a value
//! one refuses the other refuses too. It must not change a setting that has
//! its own command (remote titles: `titles on|off`).

use crate::cli::out::outln;
use crate::state::config::Config;
use anyhow::bail;
use clap::Subcommand;
use serde_json::Value;
use spool::StatePaths;
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum ConfigAction {
    /// Print every setting, or one.
    Get {
        /// One setting's name (as config.json spells it).
        key: Option<String>,
        /// Print JSON instead of lines (its shape: docs/src/reference/json.md).
        #[arg(long)]
        json: bool,
    },
    /// Change one setting: `true`/`false`, a number, `null` (the default), a
    /// JSON list, or text (`config set machine "studio mac"`).
    Set {
        /// The setting's name (as config.json spells it).
        key: String,
        /// Its new value.
        #[arg(allow_hyphen_values = true)]
        value: String,
    },
}

pub fn run(paths: &StatePaths, action: ConfigAction) -> anyhow::Result<ExitCode> {
    match action {
        ConfigAction::Get { key, json } => get(paths, key.as_deref(), json),
        ConfigAction::Set { key, value } => {
            let current = Config::load(paths)?;
            let mut change = serde_json::Map::new();
            change.insert(key.clone(), typed(&value));
            let config = current.with_changes(change)?;
            config.save(paths)?;
            let now = shown(&config);
            outln!("{key} = {}", now[&key]);
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The settings as the Settings page shows them: what is in effect (the
/// defaults filled in where config.json leaves a setting out).
fn shown(c: &Config) -> serde_json::Map<String, Value> {
    let mut v = serde_json::to_value(c).expect("config serialises");
    v["notify_tier"] = c.notify_tier().into();
    v["retention_days"] = c.retention_days().into();
    v["machine"] = c.machine().into();
    v["pool_alert_percent"] = c.pool_alert_percent().into();
    match v {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}

fn get(paths: &StatePaths, key: Option<&str>, json: bool) -> anyhow::Result<ExitCode> {
    let all = shown(&Config::load(paths)?);
    match key {
        Some(k) => {
            let Some(v) = all.get(k) else {
                bail!("no setting {k:?} (`sessionpipe config get` lists them)");
            };
            if json {
                outln!("{v}");
            } else {
                outln!("{}", plain(v));
            }
        }
        None if json => outln!(
            "{}",
            serde_json::to_string_pretty(&all).expect("settings serialise")
        ),
        None => {
            for (k, v) in &all {
                outln!("{k} = {}", plain(v));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A value as a person reads it: text without quotes, the rest as JSON.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// What was typed, as JSON: JSON when it is (`true`, `7`, `null`, `[…]`),
/// else the text itself.
fn typed(value: &str) -> Value {
    serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_string()))
}

#[cfg(test)]
mod tests {
    use super::typed;
    use serde_json::json;

    #[test]
    fn a_value_is_json_when_it_is_and_text_otherwise() {
        assert_eq!(typed("true"), json!(true));
        assert_eq!(typed("14"), json!(14));
        assert_eq!(typed("null"), json!(null));
        assert_eq!(typed(r#"["codex"]"#), json!(["codex"]));
        assert_eq!(typed("studio mac"), json!("studio mac"));
    }
}
