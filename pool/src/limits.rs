//! The rate-limit windows an answer of the API carries in its
//! `anthropic-ratelimit-unified-*` headers (ADAPTERS.md, Claude Code row,
//! Pool): the account's `status` (`allowed` · `allowed_warning` ·
//! `rejected`), its `representative-claim` and `reset`, and per window
//! `<w>-utilization` (a fraction) and `<w>-reset` (epoch seconds), where `<w>`
//! is `5h`, `7d` or `7d_<model>`.
//!
//! It owns reading those headers into `protocol::LimitsObserved` windows
//! (`five_hour`, 300 minutes; `seven_day`, 10 080; `seven_day_<model>`, no
//! length; `used_percent` from the fraction) and the account's standing.
//! It must not decide anything from them: which account is skipped is
//! `accounts`', what becomes an event is the caller's.

use protocol::{LimitWindow, LimitsObserved};

const PREFIX: &str = "anthropic-ratelimit-unified-";

/// What the headers say of the account as a whole.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Standing {
    /// `allowed`, `allowed_warning` or `rejected` (kept as sent otherwise).
    pub status: Option<String>,
    /// Which window the status is about (`five_hour`, `seven_day`, ...).
    pub claim: Option<String>,
    /// When the claimed window resets (ms since the epoch).
    pub reset_ms: Option<i64>,
}

impl Standing {
    pub fn rejected(&self) -> bool {
        self.status.as_deref() == Some("rejected")
    }
}

/// One answer's limits: the account's standing and its windows, in the order
/// five-hour, seven-day, then each model's seven-day by name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observed {
    pub standing: Standing,
    pub windows: Vec<LimitWindow>,
}

impl Observed {
    /// Nothing was said (an answer without the headers: an error page, a
    /// non-first-party upstream).
    pub fn is_empty(&self) -> bool {
        self.standing == Standing::default() && self.windows.is_empty()
    }

    /// The event of a session that made the request on `account_id`.
    pub fn event(&self, account_id: &str) -> LimitsObserved {
        LimitsObserved {
            account_id: Some(account_id.to_string()),
            status: self.standing.status.clone(),
            windows: self.windows.clone(),
        }
    }
}

/// The window with the highest `used_percent`.
pub fn fullest(windows: &[LimitWindow]) -> Option<&LimitWindow> {
    windows
        .iter()
        .max_by(|a, b| a.used_percent.total_cmp(&b.used_percent))
}

/// Reads the unified headers of one answer. `headers` yields (name, value)
/// pairs; names are compared without case.
pub fn read<'a>(headers: impl IntoIterator<Item = (&'a str, &'a str)>) -> Observed {
    let mut standing = Standing::default();
    // (window key as sent, utilization, reset seconds)
    let mut seen: Vec<(String, Option<f64>, Option<i64>)> = Vec::new();
    for (name, value) in headers {
        let Some(rest) = strip_prefix_ignore_case(name, PREFIX) else {
            continue;
        };
        let rest = rest.to_ascii_lowercase();
        let value = value.trim();
        match rest.as_str() {
            "status" => standing.status = Some(value.to_string()),
            "representative-claim" => standing.claim = Some(value.to_string()),
            "reset" => standing.reset_ms = seconds(value).and_then(|s| s.checked_mul(1000)),
            _ => {
                let (key, field) = if let Some(k) = rest.strip_suffix("-utilization") {
                    (k, 0)
                } else if let Some(k) = rest.strip_suffix("-reset") {
                    (k, 1)
                } else {
                    continue;
                };
                if window_id(key).is_none() {
                    continue;
                }
                let at = match seen.iter().position(|(k, ..)| k == key) {
                    Some(i) => i,
                    None => {
                        seen.push((key.to_string(), None, None));
                        seen.len() - 1
                    }
                };
                if field == 0 {
                    seen[at].1 = value.parse::<f64>().ok().filter(|f| f.is_finite());
                } else {
                    seen[at].2 = seconds(value);
                }
            }
        }
    }
    let mut windows: Vec<LimitWindow> = seen
        .into_iter()
        .filter_map(|(key, used, reset)| {
            let (id, minutes) = window_id(&key)?;
            Some(LimitWindow {
                id,
                window_minutes: minutes,
                // A fraction on the wire; a percent in the event, rounded to
                // a hundredth so noise in the last digits is not a change.
                used_percent: ((used? * 100.0) * 100.0).round() / 100.0,
                resets_at: reset
                    .and_then(|s| s.checked_mul(1000))
                    .map(protocol::time::rfc3339_ms),
            })
        })
        .collect();
    windows.sort_by(|a, b| order(&a.id).cmp(&order(&b.id)).then(a.id.cmp(&b.id)));
    Observed { standing, windows }
}

/// The event's window id and length of a header's window key.
fn window_id(key: &str) -> Option<(String, Option<u64>)> {
    match key {
        "5h" => Some(("five_hour".into(), Some(300))),
        "7d" => Some(("seven_day".into(), Some(10_080))),
        _ => {
            let model = key.strip_prefix("7d_")?;
            let plain = !model.is_empty()
                && model
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            plain.then(|| (format!("seven_day_{model}"), None))
        }
    }
}

fn order(id: &str) -> u8 {
    match id {
        "five_hour" => 0,
        "seven_day" => 1,
        _ => 2,
    }
}

fn seconds(v: &str) -> Option<i64> {
    v.parse::<i64>()
        .ok()
        .or_else(|| v.parse::<f64>().ok().map(|f| f as i64))
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(pairs: &[(&'static str, &'static str)]) -> Observed {
        read(pairs.iter().copied())
    }

    #[test]
    fn every_window_the_row_names_is_read() {
        let o = h(&[
            ("Anthropic-Ratelimit-Unified-Status", "allowed_warning"),
            (
                "anthropic-ratelimit-unified-representative-claim",
                "five_hour",
            ),
            ("anthropic-ratelimit-unified-reset", "1800000000"),
            ("anthropic-ratelimit-unified-7d_opus-utilization", "0.5"),
            ("anthropic-ratelimit-unified-7d-reset", "1800500000"),
            ("anthropic-ratelimit-unified-5h-utilization", "0.9134"),
            ("anthropic-ratelimit-unified-5h-reset", "1800000000"),
            ("anthropic-ratelimit-unified-7d-utilization", "0.25"),
            ("content-type", "text/event-stream"),
        ]);
        assert_eq!(o.standing.status.as_deref(), Some("allowed_warning"));
        assert_eq!(o.standing.claim.as_deref(), Some("five_hour"));
        assert_eq!(o.standing.reset_ms, Some(1_800_000_000_000));
        let ids: Vec<_> = o.windows.iter().map(|w| w.id.as_str()).collect();
        assert_eq!(ids, ["five_hour", "seven_day", "seven_day_opus"]);
        assert_eq!(o.windows[0].used_percent, 91.34);
        assert_eq!(o.windows[0].window_minutes, Some(300));
        assert_eq!(
            o.windows[0].resets_at.as_deref(),
            Some(protocol::time::rfc3339_ms(1_800_000_000_000).as_str())
        );
        assert_eq!(o.windows[1].window_minutes, Some(10_080));
        assert_eq!(o.windows[2].window_minutes, None);
        assert_eq!(o.windows[2].resets_at, None);
        assert_eq!(fullest(&o.windows).unwrap().id, "five_hour");
        let e = o.event("acct-1");
        assert_eq!(e.account_id.as_deref(), Some("acct-1"));
        assert_eq!(e.status.as_deref(), Some("allowed_warning"));
    }

    #[test]
    fn a_window_without_its_utilization_or_an_odd_name_is_left_out() {
        let o = h(&[
            ("anthropic-ratelimit-unified-5h-reset", "1800000000"),
            ("anthropic-ratelimit-unified-7d_<x>-utilization", "0.1"),
            ("anthropic-ratelimit-unified-overage-utilization", "0.1"),
            ("anthropic-ratelimit-unified-7d-utilization", "NaN"),
        ]);
        assert!(o.windows.is_empty(), "{o:?}");
        assert!(h(&[("x-other", "1")]).is_empty());
        assert!(
            h(&[("anthropic-ratelimit-unified-status", "rejected")])
                .standing
                .rejected()
        );
    }
}
