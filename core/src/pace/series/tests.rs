//! The pure pace: its projections, its one warning per period, its words, and
//! what it keeps in `pace.json`.

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
        pace.observe("claude-code", 0, &seen(40.0, resets), true)
            .is_empty()
    );
    // 40 -> 50 in half an hour: 100 % two and a half hours on, before the reset.
    let w = pace.observe("claude-code", HOUR / 2, &seen(50.0, resets), true);
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].runs_out_ms, HOUR / 2 + 5 * HOUR / 2);
    assert_eq!(w[0].resets_ms, resets);
    // The same period again: no second warning.
    assert!(
        pace.observe("claude-code", HOUR, &seen(60.0, resets), true)
            .is_empty()
    );
    // A new period (the window reset) is a new key.
    let next = resets + 5 * HOUR;
    assert!(
        pace.observe("claude-code", resets + 1, &seen(10.0, next), true)
            .is_empty()
    );
    assert_eq!(
        pace.observe("claude-code", resets + HOUR / 4, &seen(60.0, next), true)
            .len(),
        1
    );
}

#[test]
fn no_warning_when_the_window_resets_first_or_the_pace_is_flat() {
    let mut pace = Pace::default();
    // 40 -> 50 in half an hour: 100 % at 3 h, but the window resets at 2 h.
    pace.observe("codex", 0, &seen(40.0, 2 * HOUR), true);
    assert!(
        pace.observe("codex", HOUR / 2, &seen(50.0, 2 * HOUR), true)
            .is_empty()
    );
    // Flat, or going down (a window that was reset early): no pace.
    let mut flat = Pace::default();
    flat.observe("codex", 0, &seen(50.0, 9 * HOUR), true);
    assert!(
        flat.observe("codex", HOUR / 2, &seen(50.0, 9 * HOUR), true)
            .is_empty()
    );
    assert!(
        flat.observe("codex", HOUR, &seen(45.0, 9 * HOUR), true)
            .is_empty()
    );
}

#[test]
fn the_pace_is_the_last_hours() {
    let mut pace = Pace::default();
    // The whole series' pace (0 to 40 % in 4.5 h) would run out at 11.25 h,
    // after this reset: only the last hour's warns.
    let resets = 8 * HOUR;
    // Slow for hours (1 % an hour), then fast: only the last hour counts.
    for h in 0..5 {
        assert!(
            pace.observe("claude-code", h * HOUR, &seen(h as f64, resets), true)
                .is_empty()
        );
    }
    // 4 % at 4 h, 40 % half an hour later: 72 % an hour, out before 5 h 30.
    let w = pace.observe(
        "claude-code",
        4 * HOUR + HOUR / 2,
        &seen(40.0, resets),
        true,
    );
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

#[test]
fn the_standing_shows_the_projection_and_ignores_ended_periods() {
    let mut pace = Pace::default();
    let resets = 10 * HOUR;
    pace.observe("claude-code", 0, &seen(40.0, resets), false);
    pace.observe("claude-code", HOUR / 2, &seen(50.0, resets), false);
    let s = pace.standing(HOUR / 2);
    assert_eq!(s.len(), 1, "{s:?}");
    assert_eq!(s[0].used_percent, 50.0);
    assert_eq!(s[0].runs_out_ms, Some(3 * HOUR));
    let at = protocol::time::rfc3339_ms(resets);
    assert_eq!(
        pace.runs_out_ms("acc-1", "five_hour", &at, HOUR / 2),
        Some(3 * HOUR)
    );
    // Past the projected time, or an hour after the last reading, none stands.
    assert_eq!(pace.runs_out_ms("acc-1", "five_hour", &at, 3 * HOUR), None);
    assert_eq!(pace.standing(HOUR / 2 + HOUR + 1)[0].runs_out_ms, None);
    // Once the period ended nothing stands.
    assert!(pace.standing(resets).is_empty());
    // Not warned with warn false: a later look that may warn still does.
    let w = pace.observe("claude-code", HOUR, &seen(60.0, resets), true);
    assert_eq!(w.len(), 1, "{w:?}");
}

#[test]
fn what_is_kept_reads_back_and_warns_no_period_twice() {
    let dir = tempfile::tempdir().unwrap();
    let paths = StatePaths::new(dir.path());
    let resets = 10 * HOUR;
    let mut pace = Pace {
        read_to: 42,
        ..Default::default()
    };
    pace.observe("claude-code", 0, &seen(40.0, resets), true);
    assert_eq!(
        pace.observe("claude-code", HOUR / 2, &seen(50.0, resets), true)
            .len(),
        1
    );
    pace.save(&paths).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(paths.pace())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let mut again = Pace::load(&paths);
    assert_eq!(again.read_to, 42);
    assert!(
        again
            .observe("claude-code", HOUR, &seen(60.0, resets), true)
            .is_empty()
    );
    assert_eq!(again.standing(HOUR)[0].used_percent, 60.0);
    // A file that does not read is an empty pace, not an error.
    std::fs::write(paths.pace(), b"{").unwrap();
    assert!(Pace::load(&paths).standing(0).is_empty());
}

#[test]
fn a_rise_too_small_to_be_use_projects_nothing() {
    let mut pace = Pace::default();
    let resets = 100 * 24 * HOUR;
    pace.observe("codex", 0, &seen(50.0, resets), true);
    let w = pace.observe("codex", HOUR, &seen(50.0 + 1e-12, resets), true);
    assert!(w.is_empty(), "{w:?}");
    assert!(pace.standing(HOUR)[0].runs_out_ms.is_none());
}
