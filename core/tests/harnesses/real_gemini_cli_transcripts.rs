//! Gemini CLI's chat files as recorded from real runs
//! (`conformance/transcripts/gemini-cli/`, written by `real_gemini_cli.rs` with
//! `SESSIONPIPE_RECORD_TRANSCRIPTS`), read through the adapter's own reader:
//! their turns, read whole or a line at a time as Gemini CLI appends them; and
//! the daemon sending them in order when it reads late, through a resume whose
//! start names a fresh file. Needs no Gemini CLI: the files are the recording.

use serde_json::{Value, json};
use sessionpipe_core::adapters;
use sessionpipe_core::harness::transcript::{Turn, TurnLog, Want};
use sessionpipe_testkit::Sandbox;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn recorded(name: &str) -> PathBuf {
    sessionpipe_testkit::harnesses::repo_root()
        .join("conformance/transcripts/gemini-cli")
        .join(name)
}

fn lines(name: &str) -> Vec<String> {
    std::fs::read_to_string(recorded(name))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// The file's turns after reading it in the given pieces (lines per read),
/// each read from the last one's cursor, as the daemon reads a growing file.
fn turns_read_in(lines: &[String], pieces: &[usize]) -> (Vec<Turn>, Option<String>) {
    let source = adapters::lookup("gemini-cli")
        .unwrap()
        .transcript()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    let mut log = TurnLog::default();
    let mut model = None;
    let mut written = 0;
    for &n in pieces.iter().chain([&lines.len()]) {
        let upto = n.min(lines.len()).max(written);
        let text: String = lines[..upto].iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&path, text).unwrap();
        written = upto;
        let out = source.read(&path, log.cursor).unwrap();
        log.feed(out.recs);
        log.cursor = out.cursor;
        model = out.facts.model.or(model);
    }
    (log.take(&Want::All), model)
}

fn sides(turns: &[Turn]) -> Vec<(u64, &str, &str, bool)> {
    turns
        .iter()
        .map(|t| (t.n, t.user.as_str(), t.assistant.as_str(), t.interrupted))
        .collect()
}

#[test]
fn a_tool_call_between_texts_and_a_resumed_turn() {
    let lines = lines("tool-call-between-texts.jsonl");
    let (turns, model) = turns_read_in(&lines, &[]);
    // The person's token, in the recorded file: the turn log keeps it redacted.
    let ask = "Use my token [redacted] and run the command, then tell me what it printed.";
    assert_eq!(
        sides(&turns),
        [
            (
                1,
                ask,
                "Let me run it.\n\nThe command printed: hello",
                false
            ),
            (2, "Anything else?", "Done.", false)
        ]
    );
    assert_eq!(model.as_deref(), Some("gemini-2.5-flash"));
    // Read as it grew, cut after any line: the same turns, the message written
    // again with its tool calls never said twice.
    for cut in 1..lines.len() {
        assert_eq!(turns_read_in(&lines, &[cut]).0, turns, "cut after {cut}");
    }
    let every_line: Vec<usize> = (1..lines.len()).collect();
    assert_eq!(turns_read_in(&lines, &every_line).0, turns);
}

#[test]
fn a_cancelled_turn_ends_where_it_stood() {
    let lines = lines("interrupted-turn.jsonl");
    let (turns, _) = turns_read_in(&lines, &[]);
    assert_eq!(
        sides(&turns),
        [
            (1, "Sleep a while.", "Sleeping first.", true),
            (2, "Then say hi.", "Done.", false)
        ]
    );
    let every_line: Vec<usize> = (1..lines.len()).collect();
    assert_eq!(turns_read_in(&lines, &every_line).0, turns);
}

/// The recorded session's hooks, hand-made in Gemini CLI 0.61.0's shape with
/// times taken from the file, spooled while no daemon runs; the daemon starts
/// once both runs are over and the whole file is written. The resumed run's
/// start names a fresh file of its own, as it does when it starts in another
/// minute than the session did. Each turn still goes out right after its own
/// end: not before its `turn.started` (the second turn is in the file at the
/// first one's AfterAgent), and not twice.
#[test]
fn a_late_daemon_sends_each_turn_after_its_end_across_a_resume() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(&sb.state).unwrap();
    std::fs::write(sb.state.join("config.json"), r#"{"transcripts": true}"#).unwrap();
    let chats = sb.home.join(".gemini/tmp/project/chats");
    std::fs::create_dir_all(&chats).unwrap();
    let chat = chats.join("session-2026-11-29T20-44-2f294531.jsonl");
    let fresh = chats.join("session-2026-11-29T20-45-2f294531.jsonl");
    std::fs::copy(recorded("tool-call-between-texts.jsonl"), &chat).unwrap();
    let first_line = &lines("tool-call-between-texts.jsonl")[0];
    std::fs::write(&fresh, format!("{first_line}\n")).unwrap();

    let session = "2f294531-86d2-41d8-8d37-2fde68024ecb";
    let hook = |event: &str, at: &str, file: &Path, extra: Value| {
        let mut p = json!({"session_id": session, "transcript_path": file,
            "cwd": sb.home.join("work/project"), "hook_event_name": event,
            "timestamp": format!("2026-11-29T20:44:{at}Z")});
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let no_worker = [("SESSIONPIPE_BIN", "/nonexistent")];
        let out = sb.hook_with("gemini-cli", event, p.to_string().as_bytes(), &no_worker);
        assert!(out.status.success());
    };
    let ask = "Use my token …";
    hook(
        "SessionStart",
        "37.995",
        &chat,
        json!({"source": "startup"}),
    );
    hook("BeforeAgent", "38.000", &chat, json!({"prompt": ask}));
    hook("AfterAgent", "39.010", &chat, json!({"prompt": ask}));
    hook("SessionEnd", "39.100", &chat, json!({"reason": "exit"}));
    hook(
        "SessionStart",
        "47.450",
        &fresh,
        json!({"source": "resume"}),
    );
    hook(
        "BeforeAgent",
        "47.500",
        &chat,
        json!({"prompt": "Anything else?"}),
    );
    hook(
        "AfterAgent",
        "47.830",
        &chat,
        json!({"prompt": "Anything else?"}),
    );
    hook("SessionEnd", "47.900", &chat, json!({"reason": "exit"}));

    let _daemon = sb.start_daemon();
    let events = sb.wait_until(Duration::from_secs(15), |evs| {
        evs.iter().filter(|e| e["type"] == "session.ended").count() == 2
    });
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let run = [
        "session.started",
        "turn.started",
        "turn.ended",
        "turn.transcript",
        "session.ended",
    ];
    assert_eq!(kinds, [run, run].concat(), "{events:#?}");
    let t: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "turn.transcript")
        .collect();
    assert_eq!(
        (t[0]["data"]["turn"].as_u64(), t[1]["data"]["turn"].as_u64()),
        (Some(1), Some(2))
    );
    assert_eq!(t[1]["data"]["user"], "Anything else?");
    assert_eq!(events[9]["session"]["model"], "gemini-2.5-flash");
}
