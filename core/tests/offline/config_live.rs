//! The settings as a value that changes, through the real daemon: a
//! `config.json` that stops reading is reported once in the daemon's log and
//! by `status`, `doctor` and the API while it stays so, and the daemon goes
//! on with the last settings that read (here the machine name its events
//! carry); once the file reads again its settings are in force.

use serde_json::{Value, json};
use sessionpipe_testkit::Sandbox;
use std::time::Duration;

/// One Claude Code prompt of `session`, and the `turn.started` it becomes.
fn prompt(sb: &Sandbox, session: &str) -> Value {
    let before = sb.events().len();
    let payload = json!({"session_id": session, "transcript_path": "/nowhere.jsonl",
        "cwd": sb.home, "hook_event_name": "UserPromptSubmit", "prompt": "go"});
    let out = sb.hook(
        "claude-code",
        "UserPromptSubmit",
        payload.to_string().as_bytes(),
    );
    assert!(out.status.success(), "{out:?}");
    sb.wait_event_after(before, "turn.started", Duration::from_secs(10))
}

#[test]
fn a_broken_config_is_reported_once_and_the_last_good_settings_stay() {
    let sb = Sandbox::new();
    let config = sb.state.join("config.json");
    let set = sb.sessionpipe(&["config", "set", "machine", "studio-box"]);
    assert!(set.status.success(), "{set:?}");
    let mut daemon = sb.start_daemon();
    let ui = crate::api::Ui::of(&sb);
    let s = "0c0f0c0f-0c0f-4c0f-8c0f-0c0f0c0f0c0f";
    assert_eq!(prompt(&sb, s)["session"]["machine"], "studio-box");
    assert_eq!(ui.get("/api/overview")["config_problem"], Value::Null);

    // Half a hand edit: the file no longer reads.
    std::fs::write(&config, r#"{"machine": "other-box","#).unwrap();
    let s2 = "1c0f0c0f-0c0f-4c0f-8c0f-0c0f0c0f0c0f";
    assert_eq!(
        prompt(&sb, s2)["session"]["machine"],
        "studio-box",
        "the last good settings stay in force"
    );
    let problem = ui.get("/api/overview")["config_problem"].clone();
    assert!(
        problem.as_str().is_some_and(|p| p.contains("is damaged")),
        "{problem}"
    );
    let status = sb.sessionpipe(&["status"]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("settings: ") && l.contains("is damaged")),
        "{text}"
    );
    let doc: Value = serde_json::from_slice(&sb.sessionpipe(&["status", "--json"]).stdout).unwrap();
    assert!(doc["config_problem"].as_str().is_some(), "{doc}");
    let doctor = sb.sessionpipe(&["doctor"]);
    let text = String::from_utf8_lossy(&doctor.stdout);
    assert_eq!(doctor.status.code(), Some(1), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("problem") && l.contains("config.json is damaged")),
        "{text}"
    );
    // More events: the problem is not said again.
    let s3 = "2c0f0c0f-0c0f-4c0f-8c0f-0c0f0c0f0c0f";
    assert_eq!(prompt(&sb, s3)["session"]["machine"], "studio-box");

    // Fixed: its settings are in force at once, nothing reported.
    std::fs::write(&config, r#"{"machine": "fixed-box"}"#).unwrap();
    let s4 = "3c0f0c0f-0c0f-4c0f-8c0f-0c0f0c0f0c0f";
    assert_eq!(prompt(&sb, s4)["session"]["machine"], "fixed-box");
    assert_eq!(ui.get("/api/overview")["config_problem"], Value::Null);

    let mut err = daemon.child.stderr.take().unwrap();
    let (status, _) = daemon.terminate();
    assert!(status.success(), "{status:?}");
    let mut said = String::new();
    std::io::Read::read_to_string(&mut err, &mut said).unwrap();
    let reported = said
        .lines()
        .filter(|l| l.contains("config.json is damaged"))
        .count();
    assert_eq!(reported, 1, "reported once: {said}");
    assert!(said.contains("reads again"), "{said}");
}
