//! Retention through the real daemon, with the clock it measures ages by set
//! ahead (`SESSIONPIPE_RETENTION_NOW_MS`): events past `retention_days` that
//! every sink took go; an event a paused sink has not taken stays, and
//! `status` says how many it holds back; an event inside the window stays;
//! the board still lists the pruned session, and its seq goes on.

use serde_json::{Value, json};
use sessionpipe_testkit::Sandbox;
use std::path::Path;
use std::time::{Duration, Instant};

const PRUNED: &str = "5e55104e-0000-4000-8000-0000000000a1";
const HELD: &str = "5e55104e-0000-4000-8000-0000000000b2";
const YOUNG: &str = "5e55104e-0000-4000-8000-0000000000c3";
const DAY_MS: i64 = 86_400_000;

fn hook(sb: &Sandbox, session: &str, event: &str, extra: Value) {
    let mut p = json!({"session_id": session, "transcript_path": "/nowhere.jsonl",
        "cwd": "/w", "hook_event_name": event, "prompt_id": "p1"});
    p.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    assert!(
        sb.hook("claude-code", event, p.to_string().as_bytes())
            .status
            .success()
    );
}

fn turn(sb: &Sandbox, session: &str) {
    hook(
        sb,
        session,
        "UserPromptSubmit",
        json!({"prompt": "tidy the module"}),
    );
    hook(sb, session, "Stop", json!({}));
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn of(evs: &[Value], session: &str) -> usize {
    evs.iter().filter(|e| e["session"]["id"] == session).count()
}

/// A Claude Code transcript whose turn is `days` days from now: `backfill`
/// stores its `session.backfill` at that time.
fn transcript(sb: &Sandbox, session: &str, days: i64) {
    let dir = sb.home.join(".claude/projects/-w");
    std::fs::create_dir_all(&dir).unwrap();
    let at = |ms: i64| {
        sessionpipe_core::protocol::time::rfc3339_ms(
            sessionpipe_core::protocol::time::now_ms() + days * DAY_MS + ms,
        )
    };
    let lines = [
        format!(
            r#"{{"type":"user","promptId":"p1","timestamp":"{}","cwd":"/w","message":{{"content":"write the notes"}}}}"#,
            at(0)
        ),
        format!(
            r#"{{"type":"assistant","timestamp":"{}","message":{{"model":"claude-opus-5-5","content":[{{"type":"text","text":"ok"}}]}}}}"#,
            at(9_000)
        ),
    ];
    std::fs::write(
        dir.join(format!("{session}.jsonl")),
        lines.join("\n") + "\n",
    )
    .unwrap();
}

#[test]
fn events_every_sink_took_past_the_window_go_and_the_rest_stay() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(&sb.state).unwrap();
    std::fs::write(sb.state.join("config.json"), r#"{"retention_days": 7}"#).unwrap();
    let all = sb.root().join("all.jsonl");
    let paused = sb.root().join("paused.jsonl");
    for path in [&all, &paused] {
        let out = sb.sessionpipe(&[
            "sink",
            "add",
            &format!("file:{}", path.display()),
            "--tier",
            "3",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    // Both sinks take a live session's events, and a past session's
    // backfill stamped five days ahead (inside the window at the clock below).
    let daemon = sb.start_daemon();
    turn(&sb, PRUNED);
    // The backfill comes after them in the outbox.
    sb.wait_until(Duration::from_secs(20), |evs| of(evs, PRUNED) >= 3);
    transcript(&sb, YOUNG, 5);
    let out = sb.sessionpipe(&["backfill", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_for("both sinks to take everything", || {
        [&all, &paused].iter().all(|p| {
            let l = lines(p);
            of(&l, PRUNED) >= 3 && of(&l, YOUNG) == 1
        })
    });
    let pruned_seqs: Vec<u64> = lines(&all)
        .iter()
        .filter(|e| e["session"]["id"] == PRUNED)
        .map(|e| e["session"]["seq"].as_u64().unwrap())
        .collect();
    daemon.terminate();

    // One sink is paused; the other takes a second session's events.
    let mut list: Value =
        serde_json::from_slice(&std::fs::read(sb.state.join("sinks.json")).unwrap()).unwrap();
    let target = format!("{}", paused.display());
    for s in list["sinks"].as_array_mut().unwrap() {
        if s["path"] == target.as_str() {
            s["paused"] = json!("paused for the test");
        }
    }
    std::fs::write(sb.state.join("sinks.json"), list.to_string()).unwrap();
    let daemon = sb.start_daemon();
    turn(&sb, HELD);
    wait_for("the running sink to take the second session", || {
        of(&lines(&all), HELD) >= 3
    });
    let held = of(&sb.events(), HELD);
    daemon.terminate();
    assert_eq!(of(&lines(&paused), HELD), 0, "the paused sink took nothing");

    // Eight days on, the window is seven days.
    let later = (sessionpipe_core::protocol::time::now_ms() + 8 * DAY_MS).to_string();
    let clock = [("SESSIONPIPE_RETENTION_NOW_MS", std::ffi::OsStr::new(&later))];
    let before = sb.events();
    assert_eq!(of(&before, PRUNED), pruned_seqs.len());
    let daemon = sb.start_daemon_with(&clock);
    wait_for("the pruned session's events to go", || {
        of(&sb.events(), PRUNED) == 0
    });
    let after = sb.events();
    assert_eq!(of(&after, YOUNG), 1, "inside the window: kept");
    assert_eq!(of(&after, HELD), held, "not taken by the paused sink: kept");
    assert_eq!(after.len(), 1 + held);

    // The board still knows the pruned session.
    let ui = crate::api::Ui::of(&sb);
    let board = ui.get("/api/overview");
    let listed = board["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == PRUNED)
        .unwrap_or_else(|| panic!("the pruned session is not on the board: {board}"));
    assert_eq!(listed["cwd"], "/w");
    assert!(listed["first_ms"].as_i64().unwrap() > 0, "{listed}");
    assert!(
        ui.get(&format!("/api/sessions/claude-code/{PRUNED}/events"))
            .as_array()
            .unwrap()
            .is_empty()
    );

    // `status`: the outbox's size, and what the paused sink holds back.
    let mut status = sb.command(sessionpipe_testkit::sandbox::bin("sessionpipe"));
    status.args(["status", "--json"]).envs(clock);
    let doc: Value = serde_json::from_slice(&status.output().unwrap().stdout).unwrap();
    assert!(doc["outbox"]["bytes"].as_u64().unwrap() > 0, "{doc}");
    assert_eq!(doc["outbox"]["retention_days"], 7);
    let sink = |path: &Path| {
        doc["sinks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["sink"]["path"] == format!("{}", path.display()).as_str())
            .unwrap()
            .clone()
    };
    assert_eq!(sink(&all)["holds_back"], 0);
    assert_eq!(sink(&paused)["holds_back"], held as u64, "{doc}");
    let mut human = sb.command(sessionpipe_testkit::sandbox::bin("sessionpipe"));
    human.arg("status").envs(clock);
    let text = String::from_utf8(human.output().unwrap().stdout).unwrap();
    assert!(
        text.contains(&format!("holds back {held} events older than 7 days")),
        "{text}"
    );
    assert!(
        text.contains(" on disk; events older than 7 days go"),
        "{text}"
    );

    // The pruned session goes on where its seq was.
    hook(
        &sb,
        PRUNED,
        "UserPromptSubmit",
        json!({"prompt": "and again"}),
    );
    wait_for("the running sink to take the next event", || {
        of(&lines(&all), PRUNED) > pruned_seqs.len()
    });
    let next = lines(&all)
        .into_iter()
        .rfind(|e| e["session"]["id"] == PRUNED)
        .unwrap();
    assert_eq!(
        next["session"]["seq"].as_u64().unwrap(),
        pruned_seqs.iter().max().unwrap() + 1,
        "{next}"
    );
    drop(daemon);
}

#[test]
fn retention_days_is_a_setting_the_api_checks() {
    let sb = Sandbox::new();
    let _d = sb.start_daemon();
    let ui = crate::api::Ui::of(&sb);
    assert_eq!(ui.get("/api/settings")["retention_days"], 30, "the default");
    let (status, v) = ui.send(
        reqwest::Method::PUT,
        "/api/settings",
        json!({"retention_days": 7}),
    );
    assert_eq!((status, &v["retention_days"]), (200, &json!(7)), "{v}");
    let config = std::fs::read(sb.state.join("config.json")).unwrap();
    for bad in [
        json!(-1),
        json!(1.5),
        json!("7"),
        json!(36_501),
        json!(true),
    ] {
        let (status, why) = ui.send(
            reqwest::Method::PUT,
            "/api/settings",
            json!({"retention_days": bad}),
        );
        assert_eq!(status, 400, "{bad}: {why}");
        let text = why["error"].as_str().unwrap();
        assert!(
            text.contains("retention_days is a whole number of days from 1 to 36500"),
            "{bad}: {text}"
        );
    }
    assert_eq!(
        std::fs::read(sb.state.join("config.json")).unwrap(),
        config,
        "a refused change leaves the file as it was"
    );
    // 0 and null are the default.
    for default in [json!(0), Value::Null] {
        let (status, v) = ui.send(
            reqwest::Method::PUT,
            "/api/settings",
            json!({"retention_days": default}),
        );
        assert_eq!((status, &v["retention_days"]), (200, &json!(30)), "{v}");
    }
}
