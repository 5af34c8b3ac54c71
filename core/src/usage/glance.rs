//! Today's usage and the fullest limit window in one line, for the tray's
//! menu and tooltip: "Today: 1.2 M tokens, $3.40 · 5-hour window 63%".
//!
//! Owns the words and nothing else: the sums are the outbox's (`report`),
//! the windows the pace's (`crate::pace`), both read-only. Today is this
//! machine's calendar day. The cost is API-equivalent, as everywhere.

use super::prices::Prices;
use super::{Ask, By, report};
use crate::pipeline::outbox::Outbox;
use crate::state::config::Config;
use spool::StatePaths;

/// The line, or `None` when there is neither usage today nor a window heard.
pub fn today_line(paths: &StatePaths, now_ms: i64) -> Option<String> {
    let usage = today_usage(paths, now_ms);
    let window = fullest_window(paths, now_ms);
    match (usage, window) {
        (None, None) => None,
        (Some(u), None) => Some(format!("Today: {u}")),
        (None, Some(w)) => Some(format!("Today: no tokens · {w}")),
        (Some(u), Some(w)) => Some(format!("Today: {u} · {w}")),
    }
}

/// "1.2 M tokens, $3.40" since this machine's midnight; `None` for none.
fn today_usage(paths: &StatePaths, now_ms: i64) -> Option<String> {
    let (midnight_ms, offset_minutes) = local_midnight(now_ms)?;
    let ob = Outbox::open_readonly(&paths.outbox()).ok().flatten()?;
    let overrides = Config::load(paths).map(|c| c.prices).unwrap_or_default();
    let ask = Ask {
        since_ms: midnight_ms,
        until_ms: now_ms + 1,
        tz_offset_minutes: offset_minutes,
        by: By::Harness,
    };
    let total = report(Some(&ob), &Prices::new(&overrides), ask).ok()?.total;
    let tokens = total.tokens.total();
    if tokens == 0 {
        return None;
    }
    let cost = match (total.api_equivalent_usd, total.unpriced.is_empty()) {
        (Some(usd), true) => format!(", ${usd:.2}"),
        (Some(usd), false) => format!(", ${usd:.2} + unpriced"),
        (None, _) => String::new(),
    };
    Some(format!("{} tokens{cost}", compact(tokens)))
}

/// The window used most that has not reset: "5-hour window 63%", with when
/// the last hour's pace runs it out where that is before its reset.
fn fullest_window(paths: &StatePaths, now_ms: i64) -> Option<String> {
    let standing = crate::pace::Pace::load(paths).standing(now_ms);
    let w = standing
        .iter()
        .max_by(|a, b| a.used_percent.total_cmp(&b.used_percent))?;
    let out = w
        .runs_out_ms
        .map(|t| format!(", out ~{}", crate::pace::local_clock(t)))
        .unwrap_or_default();
    Some(format!(
        "{} window {:.0}%{out}",
        crate::pace::window_words(&w.key.window),
        w.used_percent
    ))
}

/// This machine's midnight today, and its offset from UTC in minutes (whole
/// quarter hours, as the usage sums' days start).
fn local_midnight(now_ms: i64) -> Option<(i64, i32)> {
    let now = jiff::Timestamp::from_millisecond(now_ms)
        .ok()?
        .to_zoned_datetime(jiff::tz::TimeZone::system());
    let midnight = now.start_of_day().ok()?;
    Some((
        midnight.timestamp().as_millisecond(),
        super::local_offset_minutes(now_ms),
    ))
}

/// 950, 12.3 k, 1.2 M, 3.4 B.
pub fn compact(n: u64) -> String {
    let f = n as f64;
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1} k", f / 1e3),
        1_000_000..1_000_000_000 => format!("{:.1} M", f / 1e6),
        _ => format!("{:.1} B", f / 1e9),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_short() {
        assert_eq!(compact(950), "950");
        assert_eq!(compact(12_345), "12.3 k");
        assert_eq!(compact(1_234_567), "1.2 M");
        assert_eq!(compact(3_400_000_000), "3.4 B");
    }

    #[test]
    fn nothing_heard_is_no_line() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(today_line(&StatePaths::new(dir.path()), 0), None);
    }

    /// Today's responses (not yesterday's) priced by config.json, an unpriced
    /// model said so, and the fullest window of the pace with its projection.
    #[test]
    fn the_line_adds_todays_tokens_and_names_the_fullest_window() {
        use harness::usage::Usage;
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        paths.ensure().unwrap();
        let now = protocol::time::now_ms();
        let (midnight, _) = local_midnight(now).unwrap();
        let u = |key: &str, model: &str, at_ms: i64, input: u64| Usage {
            key: key.into(),
            at_ms,
            model: Some(model.into()),
            input,
            output: 200_000,
            cache_read: 0,
            cache_write: 0,
        };
        let mut ob = Outbox::open(&paths.outbox()).unwrap();
        let tx = ob.begin().unwrap();
        let today = midnight.max(now - 60_000);
        let rows = [
            u("a", "priced", today, 1_000_000),
            u("b", "priced", midnight - 3_600_000, 5_000_000),
        ];
        tx.put_usage("claude-code", "s1", &Default::default(), &rows)
            .unwrap();
        tx.commit().unwrap();
        std::fs::write(
            paths.config(),
            r#"{"prices": {"priced": {"input": 2.0, "output": 10.0}}}"#,
        )
        .unwrap();
        // 1.2 M tokens: 1 M in at $2, 0.2 M out at $10 a million.
        assert_eq!(
            today_line(&paths, now).as_deref(),
            Some("Today: 1.2 M tokens, $4.00")
        );
        let tx = ob.begin().unwrap();
        tx.put_usage(
            "codex",
            "s2",
            &Default::default(),
            &[u("c", "mystery", today, 100_000)],
        )
        .unwrap();
        tx.commit().unwrap();
        assert_eq!(
            today_line(&paths, now).as_deref(),
            Some("Today: 1.5 M tokens, $4.00 + unpriced")
        );

        // Two windows heard: the fuller one is named, with its pace.
        let mut pace = crate::pace::Pace::default();
        let resets = protocol::time::rfc3339_ms(now + 4 * 3_600_000);
        let seen = |id: &str, used: f64| protocol::LimitsObserved {
            account_id: None,
            status: None,
            windows: vec![protocol::LimitWindow {
                id: id.into(),
                window_minutes: None,
                used_percent: used,
                resets_at: Some(resets.clone()),
            }],
        };
        pace.observe(
            "claude-code",
            now - 600_000,
            &seen("five_hour", 50.0),
            false,
        );
        pace.observe("claude-code", now, &seen("five_hour", 60.0), false);
        pace.observe("claude-code", now, &seen("seven_day", 20.0), false);
        pace.save(&paths).unwrap();
        let out = crate::pace::local_clock(now + 40 * 60_000);
        assert_eq!(
            today_line(&paths, now).as_deref(),
            Some(
                format!("Today: 1.5 M tokens, $4.00 + unpriced · 5-hour window 60%, out ~{out}")
                    .as_str()
            )
        );
    }
}
