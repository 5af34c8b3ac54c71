//! Pace (issue 33 item 4), end to end on the real hook and daemon: a series of
//! `limits.observed` through plain hooks (Claude Code's status line) and
//! through the pool's listener (a scripted API whose rate-limit headers climb)
//! gives one warning per window and period, at the time the last hour's pace
//! projects, and none for a window that resets first; `pace_alerts: false`
//! keeps the projection and gives no warning.

use crate::pool::{ask_as, pooled};
use crate::status_line::age_memory;
use serde_json::{Value, json};
use sessionpipe_testkit::Sandbox;
use sessionpipe_testkit::http::{HttpServer, Response};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const SESSION: &str = "9ace0b1e-0000-4000-8000-00000000face";

fn now_s() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn started(sb: &Sandbox) {
    let start = json!({"session_id": SESSION, "hook_event_name": "SessionStart",
        "cwd": sb.home.display().to_string(), "source": "startup"});
    let o = sb.hook("claude-code", "SessionStart", start.to_string().as_bytes());
    assert!(o.status.success());
    sb.wait_until(Duration::from_secs(10), |evs| {
        evs.iter().any(|e| e["type"] == "session.started")
    });
}

/// Claude Code's status line with two windows, as its 2.1 payload carries them.
fn status_line(sb: &Sandbox, five_hour: (f64, i64), seven_day: (f64, i64)) {
    let p = json!({
        "session_id": SESSION,
        "hook_event_name": "Status",
        "transcript_path": sb.home.join(format!(".claude/projects/-w/{SESSION}.jsonl")),
        "cwd": sb.home.display().to_string(),
        "model": {"id": "claude-opus-5-5", "display_name": "Opus 5.5"},
        "rate_limits": {
            "five_hour": {"used_percentage": five_hour.0, "resets_at": five_hour.1},
            "seven_day": {"used_percentage": seven_day.0, "resets_at": seven_day.1},
        },
    });
    let o = sb.hook("claude-code", "StatusLine", p.to_string().as_bytes());
    assert!(o.status.success());
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn pace_warnings(events: &[Value]) -> Vec<&Value> {
    of_type(events, "attention.needed")
        .into_iter()
        .filter(|e| {
            e["data"]["attention_id"]
                .as_str()
                .is_some_and(|a| a.starts_with("sessionpipe-pace:"))
        })
        .collect()
}

fn time_ms(e: &Value) -> i64 {
    protocol::time::parse_rfc3339_ms(e["time"].as_str().unwrap()).unwrap()
}

/// The `five_hour` window's used percent in a `limits.observed`.
fn five_hour(e: &Value) -> f64 {
    e["data"]["windows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["id"] == "five_hour")
        .unwrap()["used_percent"]
        .as_f64()
        .unwrap()
}

/// When the pace from the first to the last observation runs the 5-hour
/// window out, as `HH:MM` on this machine's clock.
fn projected(observed: &[&Value]) -> String {
    let (first, last) = (observed[0], observed[observed.len() - 1]);
    let (t0, u0, t1, u1) = (
        time_ms(first),
        five_hour(first),
        time_ms(last),
        five_hour(last),
    );
    let per_ms = (u1 - u0) / (t1 - t0) as f64;
    let at = t1 + ((100.0 - u1) / per_ms).ceil() as i64;
    sessionpipe_core::pace::local_clock(at)
}

/// The pace the daemon keeps, once it read `percent` for the 5-hour window.
fn kept_pace(sb: &Sandbox, percent: f64) -> Value {
    let path = sb.state.join("pace.json");
    let until = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        if let Ok(bytes) = std::fs::read(&path) {
            let v: Value = serde_json::from_slice(&bytes).unwrap();
            let seen = v["windows"].as_array().unwrap().iter().any(|w| {
                w[0]["window"] == "five_hour"
                    && w[1]["points"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|p| p[1].as_f64() == Some(percent))
            });
            if seen {
                return v;
            }
        }
        assert!(
            std::time::Instant::now() < until,
            "pace.json never read {percent}%"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_status_line_climbing_fast_warns_once_and_a_window_that_resets_first_never() {
    let sb = Sandbox::new();
    let _daemon = sb.start_daemon();
    started(&sb);
    let (five_resets, week_resets) = (now_s() + 5 * 3600, now_s() + 20);
    status_line(&sb, (40.0, five_resets), (10.0, week_resets));
    sb.wait_until(Duration::from_secs(10), |evs| {
        of_type(evs, "limits.observed").len() == 1
    });
    // A status line repeats its limits at most once a minute: the next one
    // is let through as if a minute had passed, a second and a half later.
    std::thread::sleep(Duration::from_millis(1500));
    age_memory(&sb, 61);
    status_line(&sb, (46.0, five_resets), (12.0, week_resets));
    let events = sb.wait_until(Duration::from_secs(15), |evs| {
        !pace_warnings(evs).is_empty()
    });
    let warned = pace_warnings(&events);
    assert_eq!(warned.len(), 1, "{warned:#?}");
    let observed = of_type(&events, "limits.observed");
    let message = warned[0]["data"]["message"].as_str().unwrap();
    assert_eq!(warned[0]["session"]["id"], SESSION);
    assert_eq!(warned[0]["data"]["kind"], "question");
    let resets = sessionpipe_core::pace::local_clock(five_resets * 1000);
    assert_eq!(
        message,
        format!(
            "Your Claude Code account will hit its 5-hour limit around {}, resets {resets} (46% used now)",
            projected(&observed)
        )
    );
    // The weekly window climbed too, but it resets in seconds: no warning.
    assert!(!message.contains("weekly"));

    // The same period climbing on: read, and no second warning.
    std::thread::sleep(Duration::from_millis(1500));
    age_memory(&sb, 61);
    status_line(&sb, (52.0, five_resets), (14.0, week_resets));
    let kept = kept_pace(&sb, 52.0);
    assert_eq!(pace_warnings(&sb.events()).len(), 1, "once per period");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(sb.state.join("pace.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    assert!(kept["read_to"].as_i64().unwrap() > 0);

    // A restart neither forgets the pace nor warns again.
    drop(_daemon);
    let _daemon = sb.start_daemon();
    std::thread::sleep(Duration::from_millis(1500));
    age_memory(&sb, 61);
    status_line(&sb, (58.0, five_resets), (16.0, week_resets));
    kept_pace(&sb, 58.0);
    assert_eq!(
        pace_warnings(&sb.events()).len(),
        1,
        "not again after a restart"
    );
}

#[test]
fn with_pace_alerts_off_the_projection_stays_and_nothing_is_said() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(&sb.state).unwrap();
    std::fs::write(sb.state.join("config.json"), r#"{"pace_alerts": false}"#).unwrap();
    let _daemon = sb.start_daemon();
    started(&sb);
    let resets = now_s() + 5 * 3600;
    status_line(&sb, (40.0, resets), (10.0, resets + 3600));
    sb.wait_until(Duration::from_secs(10), |evs| {
        of_type(evs, "limits.observed").len() == 1
    });
    std::thread::sleep(Duration::from_millis(1500));
    age_memory(&sb, 61);
    status_line(&sb, (46.0, resets), (10.0, resets + 3600));
    kept_pace(&sb, 46.0);
    assert!(pace_warnings(&sb.events()).is_empty());
}

#[test]
fn the_pools_answers_climbing_fast_warn_once_naming_the_account() {
    // Each answer says the 5-hour window is 6 points fuller (40, 46, 52 %);
    // it resets in 2100.
    let answered = Arc::new(AtomicUsize::new(0));
    let counter = answered.clone();
    let api = HttpServer::start(move |req| {
        // The pool also reads idle accounts' use here: only answers count.
        if req.path() != "/v1/messages" {
            return Response::json(404, &json!({}));
        }
        let n = counter.fetch_add(1, Ordering::SeqCst);

        let used = 0.40 + 0.06 * n as f64;
        Response::json(200, &json!({"type": "message"}))
            .with_header("anthropic-ratelimit-unified-status", "allowed")
            .with_header(
                "anthropic-ratelimit-unified-5h-utilization",
                &format!("{used:.2}"),
            )
            .with_header("anthropic-ratelimit-unified-5h-reset", "4102444800")
    })
    .unwrap();
    let (sb, _daemon, url, token) = pooled(&api);
    started(&sb);
    for round in 0..3 {
        if round > 0 {
            std::thread::sleep(Duration::from_millis(1200));
        }
        ask_as(&url, &token, SESSION);
        sb.wait_until(Duration::from_secs(10), |evs| {
            of_type(evs, "limits.observed").len() == round + 1
        });
    }
    let events = sb.wait_until(Duration::from_secs(15), |evs| {
        !pace_warnings(evs).is_empty()
    });
    kept_pace(&sb, 52.0);

    let events = if of_type(&events, "limits.observed").len() < 3 {
        sb.events()
    } else {
        events
    };
    let warned = pace_warnings(&events);
    assert_eq!(warned.len(), 1, "{warned:#?}");
    let message = warned[0]["data"]["message"].as_str().unwrap();
    // The warning comes with the second answer: the pace from the first two.
    let observed = of_type(&events, "limits.observed");
    assert!(
        message.starts_with(&format!(
            "Claude Code account one@example.com will hit its 5-hour limit around {}, resets ",
            projected(&observed[..2])
        )),
        "{message}"
    );
    assert!(message.ends_with("(46% used now)"), "{message}");
}
