//! Claude Code's account limits, from its status line (ADAPTERS.md, Claude Code
//! row, Limits): `StatusLine` → `limits.observed`.
//!
//! Owns reading `rate_limits` of a status line payload into protocol windows:
//! every window under Claude Code's own key (so one it adds later arrives as its
//! own id), `window_minutes` only for the two whose length is known, the
//! percentage as given (`spend_limit` goes past 100 once exceeded; the others
//! Claude Code caps at 100) and the reset as RFC 3339. `spend_limit`'s money
//! (`used_usd`, `limit_usd`, `period`) is never carried.
//!
//! It must not decide when limits are worth sending: the hook spools a status
//! line only when its limits changed, at most once a minute per config dir.

use protocol::{LimitWindow, LimitsObserved};
use serde_json::{Map, Value};

/// The event name the status line entry runs the hook with.
pub const EVENT: &str = "StatusLine";

/// The latest reset accepted: the end of year 9999 (a timestamp past it is not
/// a date RFC 3339 can write).
const MAX_EPOCH_S: f64 = 253_402_300_799.0;

/// The limits of a status line payload, with the config dir's account; `None`
/// when it holds no window with a percentage.
pub fn observed(p: &Map<String, Value>, account_id: Option<String>) -> Option<LimitsObserved> {
    let windows: Vec<LimitWindow> = p
        .get("rate_limits")?
        .as_object()?
        .iter()
        .filter_map(|(id, w)| window(id, w))
        .collect();
    (!windows.is_empty()).then_some(LimitsObserved {
        account_id,
        status: None,
        windows,
    })
}

fn window(id: &str, w: &Value) -> Option<LimitWindow> {
    let number = |k: &str| w.get(k).and_then(Value::as_f64).filter(|n| n.is_finite());
    Some(LimitWindow {
        id: id.to_string(),
        window_minutes: match id {
            "five_hour" => Some(300),
            "seven_day" => Some(10_080),
            _ => None,
        },
        // `used_percentage` is Claude Code's name; `used_percent` is read too.
        used_percent: number("used_percentage").or_else(|| number("used_percent"))?,
        resets_at: number("resets_at")
            .filter(|s| (0.0..=MAX_EPOCH_S).contains(s))
            .map(|s| protocol::time::rfc3339_ms((s * 1000.0).round() as i64)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn of(rate_limits: Value) -> Option<Value> {
        let p = json!({"rate_limits": rate_limits});
        observed(p.as_object().unwrap(), Some("acct-1".into()))
            .map(|l| serde_json::to_value(l).unwrap())
    }

    #[test]
    fn every_window_under_its_own_key() {
        let got = of(json!({
            "five_hour": {"used_percentage": 23, "resets_at": 1795987162},
            "seven_day": {"used_percentage": 41.5, "resets_at": 1796242762},
            "spend_limit": {"used_percentage": 120.4, "resets_at": 1796500000,
                            "used_usd": 12.04, "limit_usd": 10, "period": "monthly"},
            "seven_day_opus": {"used_percent": 7},
        }))
        .unwrap();
        assert_eq!(
            got,
            json!({
                "account_id": "acct-1",
                "windows": [
                    {"id": "five_hour", "window_minutes": 300, "used_percent": 23.0,
                     "resets_at": "2026-11-29T21:19:22.000Z"},
                    {"id": "seven_day", "window_minutes": 10080, "used_percent": 41.5,
                     "resets_at": "2026-12-02T20:19:22.000Z"},
                    {"id": "spend_limit", "used_percent": 120.4,
                     "resets_at": "2026-12-05T19:46:40.000Z"},
                    {"id": "seven_day_opus", "used_percent": 7.0},
                ]
            })
        );
    }

    #[test]
    fn windows_without_a_percentage_or_with_odd_resets() {
        let got = of(json!({
            "five_hour": {"resets_at": 1795987162},
            "seven_day": {"used_percentage": "41"},
            "spend_limit": null,
            "x": {"used_percentage": 1, "resets_at": -5},
            "y": {"used_percentage": 2, "resets_at": 1e300},
            "z": {"used_percentage": 3, "resets_at": "tomorrow"},
        }))
        .unwrap();
        let windows = got["windows"].as_array().unwrap();
        assert_eq!(windows.len(), 3);
        assert!(windows.iter().all(|w| w.get("resets_at").is_none()));
        for none in [json!({}), json!(null), json!([1]), json!({"a": {"b": 1}})] {
            assert_eq!(of(none.clone()), None, "{none}");
        }
        let bare = json!({"session_id": "s"});
        assert_eq!(observed(bare.as_object().unwrap(), None), None);
    }
}
