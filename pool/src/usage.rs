//! An idle account's windows, read from the usage endpoint
//! (`GET <api>/api/oauth/usage` with the account's bearer and the OAuth
//! beta; ADAPTERS.md, Claude Code row, Pool).
//!
//! The answer's shape, as Claude Code 2.1.332 reads it (its schema `Di` in
//! the bundle): `{five_hour, seven_day, seven_day_oauth_apps,
//! seven_day_opus, seven_day_sonnet, …: {utilization: number|null,
//! resets_at: string|null} | null, extra_usage: {...}, limits: [...]}`,
//! `utilization` a percent already (it turns a header's fraction into one
//! to show it beside these) and `resets_at` RFC 3339. Read here: `five_hour`
//! (300 minutes), `seven_day` (10 080) and every `seven_day_<model>` (no
//! length), each under Claude Code's own key so one it adds later arrives as
//! its own id; a window that is `null` or has no number is left out, and so
//! is everything else in the answer.
//!
//! It owns the read and its parse, no schedule beyond `MIN_INTERVAL`. What
//! the numbers reach is the caller's: the hello's `pool` and `pool status`,
//! never an event (no session made them).

use crate::oauth::{self, OAuthError, Secret};
use protocol::LimitWindow;
use serde_json::Value;
use std::time::Duration;

/// An account's usage is read at most this often.
pub const MIN_INTERVAL: Duration = Duration::from_secs(5 * 60);

/// Reads `access`'s account's windows at `api_base` (`endpoints::api_base()`).
pub async fn read_at(
    client: &reqwest::Client,
    api_base: &str,
    access: &Secret,
) -> Result<Vec<LimitWindow>, OAuthError> {
    let url = format!("{api_base}/api/oauth/usage");
    let (status, v) = oauth::send(client.get(&url).bearer_auth(access.expose()), &url).await?;
    if status != 200 {
        return Err(OAuthError::Status {
            status,
            code: oauth::error_code(&v),
        });
    }
    if !v.is_object() {
        return Err(OAuthError::BadAnswer(
            "the usage answer is not a JSON object",
        ));
    }
    Ok(parse(&v))
}

/// `read_at` against the row's host (or the test setting).
pub async fn read(
    client: &reqwest::Client,
    access: &Secret,
) -> Result<Vec<LimitWindow>, OAuthError> {
    read_at(client, &crate::endpoints::api_base(), access).await
}

/// The windows of a usage answer, five-hour and seven-day first, then the
/// per-model ones by id.
pub fn parse(v: &Value) -> Vec<LimitWindow> {
    let Some(obj) = v.as_object() else {
        return Vec::new();
    };
    let mut out: Vec<LimitWindow> = obj
        .iter()
        .filter_map(|(id, w)| {
            let minutes = match id.as_str() {
                "five_hour" => Some(300),
                "seven_day" => Some(10_080),
                other if model_window(other) => None,
                _ => return None,
            };
            let used = w
                .get("utilization")?
                .as_f64()
                .filter(|f| f.is_finite() && *f >= 0.0)?;
            Some(LimitWindow {
                id: id.clone(),
                window_minutes: minutes,
                // Rounded to a hundredth as the header windows are, so the
                // same use read both ways is the same number.
                used_percent: (used * 100.0).round() / 100.0,
                // In the protocol's one form; a time that names no instant
                // is no reset.
                resets_at: w
                    .get("resets_at")
                    .and_then(Value::as_str)
                    .and_then(protocol::time::parse_rfc3339_ms)
                    .map(protocol::time::rfc3339_ms),
            })
        })
        .collect();
    let rank = |id: &str| match id {
        "five_hour" => 0,
        "seven_day" => 1,
        _ => 2,
    };
    out.sort_by(|a, b| rank(&a.id).cmp(&rank(&b.id)).then(a.id.cmp(&b.id)));
    out
}

/// `seven_day_<model>`: a key Claude Code spells, nothing stranger.
fn model_window(id: &str) -> bool {
    id.strip_prefix("seven_day_").is_some_and(|model| {
        !model.is_empty()
            && model.len() <= 64
            && model
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_window_with_a_number_is_read_and_null_ones_left_out() {
        let v = json!({
            "seven_day_opus": {"utilization": 4.0, "resets_at": "2026-12-09T10:00:00Z"},
            "five_hour": {"utilization": 37.5, "resets_at": "2026-12-03T15:00:00.394706+00:00"},
            "seven_day": {"utilization": 12, "resets_at": null},
            "seven_day_oauth_apps": null,
            "seven_day_sonnet": {"utilization": null, "resets_at": null},
            "extra_usage": {"is_enabled": false, "utilization": 3.0},
            "cinder_cove": {"utilization": 9.0, "resets_at": null},
            "limits": [{"kind": "x", "percent": 1}],
        });
        let w = parse(&v);
        let ids: Vec<_> = w.iter().map(|w| w.id.as_str()).collect();
        assert_eq!(ids, ["five_hour", "seven_day", "seven_day_opus"]);
        assert_eq!(w[0].used_percent, 37.5);
        assert_eq!(w[0].window_minutes, Some(300));
        assert_eq!(w[0].resets_at.as_deref(), Some("2026-12-03T15:00:00.394Z"));
        assert_eq!(w[1].window_minutes, Some(10_080));
        assert_eq!(w[1].used_percent, 12.0);
        assert_eq!(w[1].resets_at, None);
        assert_eq!(w[2].window_minutes, None);
        assert_eq!(w[2].resets_at.as_deref(), Some("2026-12-09T10:00:00.000Z"));
    }

    #[test]
    fn odd_answers_give_no_windows_rather_than_wrong_ones() {
        assert!(parse(&json!([1])).is_empty());
        assert!(parse(&json!(null)).is_empty());
        let w = parse(&json!({
            "five_hour": {"utilization": "37", "resets_at": "soon"},
            "seven_day": {"utilization": -1},
            "seven_day_": {"utilization": 1},
            "seven_day_Opus 4": {"utilization": 1},
            "seven_day_sonnet": {"utilization": 33.333333, "resets_at": "2026-12-09T10:00:00"},
        }));
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].id, "seven_day_sonnet");
        assert_eq!(w[0].used_percent, 33.33);
        // No offset: no instant.
        assert_eq!(w[0].resets_at, None);
    }

    #[test]
    fn reads_at_most_every_five_minutes() {
        assert_eq!(MIN_INTERVAL, Duration::from_secs(300));
    }
}
