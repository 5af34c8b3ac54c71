//! Usage end to end on hand-made hook calls in Claude Code's recorded shapes
//! (the real harnesses' runs are `harnesses::real_usage`): the daemon reads a
//! turn's tokens from the transcript with no destination taking transcripts,
//! counts a message written as several records once, sends nothing of them
//! to a sink at any tier, serves them to the Usage page's API (days in the
//! page's time zone, the sessions that used most), and `forget` deletes
//! them.

use crate::api::Ui;
use serde_json::{Value, json};
use sessionpipe_testkit::Sandbox;
use std::io::Write;
use std::time::Duration;

const SESSION: &str = "6c2d3e4f-0000-4000-8000-00000000beef";
/// Tokens no event could carry by chance.
const INPUT: u64 = 424_242;

fn assistant(id: &str, text: &str, output: u64) -> Value {
    json!({"type": "assistant", "timestamp": "2026-12-01T23:50:00.000Z", "promptId": "p1",
        "message": {"id": id, "model": "claude-opus-4-5", "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": INPUT, "output_tokens": output,
                      "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 10}}})
}

#[test]
fn usage_is_read_whatever_the_tiers_kept_here_served_and_forgotten() {
    let sb = Sandbox::new();
    let sink = sb.root().join("events.jsonl");
    let add = sb.sessionpipe(&[
        "sink",
        "add",
        &format!("file:{}", sink.display()),
        "--tier",
        "3",
    ]);
    assert!(
        add.status.success(),
        "{}",
        String::from_utf8_lossy(&add.stderr)
    );
    std::fs::write(sb.state.join("config.json"), r#"{"transcripts": false}"#).unwrap();
    let dir = sb.home.join(".claude/projects/-w");
    std::fs::create_dir_all(&dir).unwrap();
    let transcript = dir.join(format!("{SESSION}.jsonl"));
    let mut f = std::fs::File::create(&transcript).unwrap();
    let records = [
        json!({"type": "user", "timestamp": "2026-12-01T23:49:59.000Z", "promptId": "p1",
               "message": {"role": "user", "content": "say hi"}}),
        // One message, two records: the stream's start, then its end.
        assistant("msg_a", "Hi", 1),
        assistant("msg_a", "there.", 40),
        assistant("msg_b", "Bye.", 2),
    ];
    for r in &records {
        writeln!(f, "{r}").unwrap();
    }
    drop(f);
    let _d = sb.start_daemon();
    for (event, extra) in [
        (
            "UserPromptSubmit",
            json!({"prompt": "say hi", "prompt_id": "p1"}),
        ),
        ("Stop", json!({"last_assistant_message": "Bye."})),
        ("SessionEnd", json!({"reason": "exit"})),
    ] {
        let mut p = json!({"session_id": SESSION, "transcript_path": transcript,
            "cwd": sb.home.join("w"), "hook_event_name": event});
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let out = sb.hook("claude-code", event, p.to_string().as_bytes());
        assert!(out.status.success());
    }
    sb.wait_until(Duration::from_secs(20), |evs| {
        evs.iter().any(|e| e["type"] == "session.ended")
    });
    sb.wait_idle(Duration::from_secs(10));

    let report = |args: &[&str]| -> Value {
        let out = sb.sessionpipe(&[&["usage", "--json", "--since", "2026-12-01"], args].concat());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let r = report(&["--by", "session"]);
    let row = &r["rows"][0];
    assert_eq!(row["key"], format!("claude-code:{SESSION}"));
    assert_eq!(
        row["tokens"],
        json!({"responses": 2, "input": 2 * INPUT, "output": 42, "cache_read": 2000, "cache_write": 20}),
        "msg_a once, with its larger numbers"
    );
    assert!(row["api_equivalent_usd"].as_f64().unwrap() > 0.0);
    assert!(r["note"].as_str().unwrap().contains("API"));

    // Nothing of it went to the sink, at tier 3.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let sent = loop {
        let sent = std::fs::read_to_string(&sink).unwrap_or_default();
        if sent.contains("session.ended") || std::time::Instant::now() > deadline {
            break sent;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(sent.contains("session.ended"), "the sink took the session");
    assert!(
        !sent.contains(&INPUT.to_string()),
        "usage is never an event"
    );

    // The page's API: days at its midnight (23:50 UTC is the next day at
    // UTC+1), and the session that used most, with its title.
    let ui = Ui::of(&sb);
    let days = ui.get("/api/usage/days?since=2026-12-01&tz_offset_minutes=60");
    let cells = days["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 1, "{days:#}");
    assert_eq!(cells[0]["day"], "2026-12-02");
    assert_eq!(
        (cells[0]["harness"].as_str(), cells[0]["model"].as_str()),
        (Some("claude-code"), Some("claude-opus-4-5"))
    );
    let utc = ui.get("/api/usage/days?since=2026-12-01");
    assert_eq!(utc["cells"][0]["day"], "2026-12-01");
    let top = ui.get("/api/usage/sessions?since=2026-12-01&limit=5");
    assert_eq!(top["sessions"][0]["id"], SESSION);
    assert_eq!(top["sessions"][0]["title"], "say hi");
    assert_eq!(top["sessions"][0]["usage"]["tokens"], row["tokens"]);
    let same = ui.get("/api/usage?since=2026-12-01&by=model");
    assert_eq!(same["total"]["tokens"], row["tokens"]);
    let bad = ui.send(reqwest::Method::GET, "/api/usage?by=week", Value::Null);
    assert_eq!(bad.0, 400, "{:?}", bad.1);

    // Forgotten: its usage goes with its events.
    let forget = sb.sessionpipe(&["forget", &format!("claude-code:{SESSION}")]);
    assert!(
        forget.status.success(),
        "{}",
        String::from_utf8_lossy(&forget.stderr)
    );
    let after = report(&["--by", "session"]);
    assert_eq!(after["rows"], json!([]));
    assert_eq!(after["total"]["tokens"]["responses"], 0);
}
