//! `sessionpipe backfill`: past sessions from the harnesses' own files become one
//! `session.backfill` each, at seq 0; running it again adds nothing; `install`
//! runs it once; a session a control start named over ACP is backfilled by
//! that name.

use serde_json::Value;
use sessionpipe_testkit::Sandbox;

fn write_claude_transcript(sb: &Sandbox, session: &str, ask: &str) {
    let dir = sb.home.join(".claude/projects/-home-work");
    std::fs::create_dir_all(&dir).unwrap();
    let now = std::time::SystemTime::now();
    let _ = now;
    let lines = [
        format!(r#"{{"type":"user","promptId":"p1","timestamp":"2026-11-20T09:00:00.000Z","cwd":"{}","gitBranch":"dev","message":{{"content":"{ask}"}}}}"#, sb.home.join("work").display()),
        r#"{"type":"assistant","timestamp":"2026-11-20T09:00:09.000Z","message":{"model":"claude-opus-5-5","content":[{"type":"text","text":"ok"}]}}"#.to_string(),
    ];
    std::fs::write(
        dir.join(format!("{session}.jsonl")),
        lines.join("\n") + "\n",
    )
    .unwrap();
}

#[test]
fn past_sessions_are_backfilled_once() {
    let sb = Sandbox::new();
    write_claude_transcript(
        &sb,
        "11111111-2222-4333-8444-555555555555",
        "rename the module ghp_0123456789abcdefghijklmnopqrstuvwxyzAB",
    );
    let out = sb.sessionpipe(&["backfill", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let counts: Value = serde_json::from_slice(&out.stdout).unwrap();
    let claude = counts
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["harness"] == "claude-code")
        .unwrap();
    assert_eq!(
        (claude["found"].as_u64(), claude["added"].as_u64()),
        (Some(1), Some(1))
    );

    let evs = sb.events();
    assert_eq!(evs.len(), 1);
    let e = &evs[0];
    assert_eq!(e["type"], "session.backfill");
    assert_eq!(e["session"]["seq"], 0);
    assert_eq!(e["session"]["cwd"], "~/work");
    assert_eq!(e["session"]["branch"], "dev");
    assert_eq!(e["session"]["title_source"], "first-ask");
    assert!(
        !e["session"]["title"].as_str().unwrap().contains("ghp_"),
        "secrets@1 ran on the title"
    );
    assert_eq!(e["data"]["started_at"], "2026-11-20T09:00:00.000Z");
    assert_eq!(e["data"]["last_at"], "2026-11-20T09:00:09.000Z");
    assert_eq!(e["data"]["turns"], 1);

    let again = sb.sessionpipe(&["backfill", "--json"]);
    let counts: Value = serde_json::from_slice(&again.stdout).unwrap();
    let claude = counts
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["harness"] == "claude-code")
        .unwrap();
    assert_eq!(
        (claude["added"].as_u64(), claude["known"].as_u64()),
        (Some(0), Some(1))
    );
    assert_eq!(sb.events().len(), 1);

    // A session that went on live after its backfill keeps its own seq from 1.
    let live = serde_json::json!({"session_id": "11111111-2222-4333-8444-555555555555", "transcript_path": "/x", "cwd": "/w", "hook_event_name": "Stop", "prompt_id": "p"});
    let _d = sb.start_daemon();
    sb.hook("claude-code", "Stop", live.to_string().as_bytes());
    let evs = sb.wait_for_events(3, std::time::Duration::from_secs(10));
    let seqs: Vec<u64> = evs
        .iter()
        .map(|e| e["session"]["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, [0, 1, 2]);
}

#[test]
fn install_backfills_once() {
    let sb = Sandbox::new();
    write_claude_transcript(&sb, "aaaaaaaa-2222-4333-8444-555555555555", "first");
    let out = sb.sessionpipe(&["install"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("backfill: 1 past sessions"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    write_claude_transcript(&sb, "bbbbbbbb-2222-4333-8444-555555555555", "second");
    let out = sb.sessionpipe(&["install"]);
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("backfill"),
        "only once"
    );
    assert_eq!(sb.events().len(), 1);
}

/// A session the daemon started over ACP is known by the start's name (its
/// hooks' events carry it): found in Gemini CLI's files by Gemini CLI's own
/// id, it is backfilled under the name, and once.
#[test]
fn a_session_started_over_acp_is_backfilled_under_the_starts_name() {
    const NAME: &str = "7c1e2d3f-4a5b-4c6d-8e7f-a0b1c2d3e4f5";
    // Recorded from Gemini CLI 0.61.0 (`conformance/transcripts/gemini-cli/`).
    const ID: &str = "2f294531-86d2-41d8-8d37-2fde68024ecb";
    let sb = Sandbox::new();
    let chats = sb.home.join(".gemini/tmp/project/chats");
    std::fs::create_dir_all(&chats).unwrap();
    let recorded = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/transcripts/gemini-cli/tool-call-between-texts.jsonl");
    std::fs::copy(
        recorded,
        chats.join("session-2026-11-29T20-44-2f294531.jsonl"),
    )
    .unwrap();
    std::fs::create_dir_all(&sb.state).unwrap();
    sessionpipe_core::pipeline::outbox::Outbox::side_connection(&sb.state.join("outbox.db"))
        .unwrap()
        .execute(
            "INSERT INTO control_sessions (harness, name, id, how, cwd, at_ms)
             VALUES ('gemini-cli', ?1, ?2, 'acp', '/w', 1)",
            [NAME, ID],
        )
        .unwrap();
    let gemini = |out: std::process::Output| -> (u64, u64, u64) {
        let counts: Value = serde_json::from_slice(&out.stdout).unwrap();
        let c = counts
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["harness"] == "gemini-cli")
            .unwrap()
            .clone();
        let n = |k: &str| c[k].as_u64().unwrap();
        (n("found"), n("added"), n("known"))
    };
    assert_eq!(gemini(sb.sessionpipe(&["backfill", "--json"])), (1, 1, 0));
    let evs = sb.events();
    assert_eq!(evs.len(), 1);
    assert_eq!(
        (
            evs[0]["type"].as_str(),
            evs[0]["harness"]["name"].as_str(),
            evs[0]["session"]["id"].as_str()
        ),
        (Some("session.backfill"), Some("gemini-cli"), Some(NAME))
    );
    assert_eq!(gemini(sb.sessionpipe(&["backfill", "--json"])), (1, 0, 1));
    assert_eq!(sb.events().len(), 1);
}
