//! Claude Code's transcript lags its hooks: a turn is held until its Stop's words
//! are in the file, re-read for 400 ms holding the session and then every 100 ms
//! for 5 s without it; an interrupted turn (no Stop) is ended by the next prompt.
//! These timings cannot be forced on the real harness, so the hook calls here are
//! hand-made in Claude Code's recorded shapes and the test writes the transcript.

use serde_json::{Value, json};
use sessionpipe_testkit::Sandbox;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

const SESSION: &str = "5b1c2d3e-0000-4000-8000-00000000abcd";

struct Session {
    sb: Sandbox,
    transcript: PathBuf,
    daemon: Option<sessionpipe_testkit::sandbox::Daemon>,
    /// Hooks leave their jobs in the spool (no daemon, no worker) until `start`.
    stalled: bool,
}

fn session() -> Session {
    let mut s = stalled_session();
    s.start();
    s
}

/// A session whose hooks spool and wait: the daemon catches up later.
fn stalled_session() -> Session {
    let sb = Sandbox::new();
    std::fs::create_dir_all(&sb.state).unwrap();
    std::fs::write(sb.state.join("config.json"), r#"{"transcripts": true}"#).unwrap();
    let dir = sb.home.join(".claude/projects/-w");
    std::fs::create_dir_all(&dir).unwrap();
    let transcript = dir.join(format!("{SESSION}.jsonl"));
    std::fs::write(&transcript, "").unwrap();
    Session {
        sb,
        transcript,
        daemon: None,
        stalled: true,
    }
}

impl Session {
    fn start(&mut self) {
        self.stalled = false;
        self.daemon = Some(self.sb.start_daemon());
    }

    fn hook(&self, event: &str, extra: Value) {
        let mut p = json!({
            "session_id": SESSION,
            "transcript_path": self.transcript,
            "cwd": self.sb.home.join("w"),
            "hook_event_name": event,
        });
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let no_worker: &[(&str, &str)] = if self.stalled {
            &[("SESSIONPIPE_BIN", "/nonexistent")]
        } else {
            &[]
        };
        let out = self
            .sb
            .hook_with("claude-code", event, p.to_string().as_bytes(), no_worker);
        assert!(out.status.success() && out.stdout.is_empty());
    }

    fn write(&self, records: &[Value]) {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.transcript)
            .unwrap();
        for r in records {
            writeln!(f, "{r}").unwrap();
        }
    }

    fn wait(&self, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        self.sb.wait_until(Duration::from_secs(15), done)
    }
}

fn ask(words: &str, prompt: &str) -> Value {
    json!({"type": "user", "promptId": prompt, "timestamp": "2026-11-29T10:00:00.000Z", "message": {"role": "user", "content": words}})
}

fn says(words: &str) -> Value {
    json!({"type": "assistant", "timestamp": "2026-11-29T10:00:01.000Z", "message": {"model": "claude-opus-5-5", "content": [{"type": "text", "text": words}]}})
}

fn tool_call() -> Value {
    json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}]}})
}

fn tool_result() -> Value {
    json!({"type": "user", "promptId": "p1", "message": {"content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}]}})
}

fn kinds(evs: &[Value]) -> Vec<String> {
    evs.iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect()
}

fn transcripts(evs: &[Value]) -> Vec<&Value> {
    evs.iter()
        .filter(|e| e["type"] == "turn.transcript")
        .collect()
}

/// The Stop's words reach the file `delay` after the Stop: the turn is sent
/// whole (never the half before the tool call), right after its `turn.ended`.
fn words_arrive_after(delay: Duration) -> Vec<Value> {
    let s = session();
    s.hook("SessionStart", json!({"source": "startup"}));
    s.hook(
        "UserPromptSubmit",
        json!({"prompt_id": "p1", "prompt": "check it"}),
    );
    s.write(&[
        ask("check it", "p1"),
        says("Let me check."),
        tool_call(),
        tool_result(),
    ]);
    s.hook(
        "Stop",
        json!({"prompt_id": "p1", "last_assistant_message": "All done."}),
    );
    std::thread::sleep(delay);
    s.write(&[says("All done.")]);
    s.wait(|evs| !transcripts(evs).is_empty())
}

#[test]
fn words_that_arrive_while_the_session_is_held() {
    let evs = words_arrive_after(Duration::from_millis(150));
    assert_eq!(
        kinds(&evs),
        [
            "session.started",
            "turn.started",
            "turn.ended",
            "turn.transcript"
        ]
    );
    let t = &evs[3]["data"];
    assert_eq!(t["user"], "check it");
    assert_eq!(t["assistant"], "Let me check.\n\nAll done.");
    assert_eq!(evs[3]["session"]["title"], "check it");
    assert_eq!(evs[3]["session"]["title_source"], "first-ask");
    assert_eq!(evs[3]["session"]["model"], "claude-opus-5-5");
}

#[test]
fn words_that_arrive_after_the_session_was_let_go() {
    let evs = words_arrive_after(Duration::from_millis(1500));
    assert_eq!(
        kinds(&evs),
        [
            "session.started",
            "turn.started",
            "turn.ended",
            "turn.transcript"
        ]
    );
    assert_eq!(evs[3]["data"]["assistant"], "Let me check.\n\nAll done.");
}

#[test]
fn a_later_prompt_is_not_blocked_by_a_held_turn_and_closes_it() {
    let s = session();
    s.hook(
        "UserPromptSubmit",
        json!({"prompt_id": "p1", "prompt": "one"}),
    );
    s.write(&[ask("one", "p1"), says("Half of it."), tool_call()]);
    s.hook(
        "Stop",
        json!({"prompt_id": "p1", "last_assistant_message": "Never written."}),
    );
    std::thread::sleep(Duration::from_millis(600));
    s.write(&[ask("two", "p2"), says("Second.")]);
    s.hook(
        "UserPromptSubmit",
        json!({"prompt_id": "p2", "prompt": "two"}),
    );
    s.hook(
        "Stop",
        json!({"prompt_id": "p2", "last_assistant_message": "Second."}),
    );
    let evs = s.wait(|evs| transcripts(evs).len() >= 2);
    let k = kinds(&evs);
    assert_eq!(
        k,
        [
            "session.started",
            "turn.started",
            "turn.ended",
            "turn.transcript",
            "turn.started",
            "turn.ended",
            "turn.transcript"
        ],
        "{evs:#?}"
    );
    assert_eq!(evs[3]["data"]["user"], "one");
    assert_eq!(
        evs[3]["data"]["assistant"], "Half of it.",
        "closed by the next ask, as it stood"
    );
    assert_eq!(evs[6]["data"]["turn"], 2);
}

#[test]
fn an_interrupted_turn_is_ended_by_the_next_prompt() {
    let s = session();
    s.hook(
        "UserPromptSubmit",
        json!({"prompt_id": "p1", "prompt": "long job"}),
    );
    s.write(&[ask("long job", "p1"), says("Starting."), tool_call()]);
    s.write(&[json!({"type": "user", "promptId": "p1", "message": {"content": [{"type": "text", "text": "[Request interrupted by user for tool use]"}]}})]);
    s.hook(
        "UserPromptSubmit",
        json!({"prompt_id": "p2", "prompt": "never mind"}),
    );
    let evs = s.wait(|evs| evs.len() >= 5);
    assert_eq!(
        kinds(&evs),
        [
            "session.started",
            "turn.started",
            "turn.ended",
            "turn.transcript",
            "turn.started"
        ]
    );
    assert_eq!(
        evs[2]["data"],
        json!({"turn_id": "p1", "reason": "interrupt"})
    );
    assert_eq!(evs[3]["data"]["assistant"], "Starting.");
    assert_eq!(evs[4]["data"]["turn_id"], "p2");
}

#[test]
fn a_daemon_catching_up_reads_ahead_and_keeps_the_order() {
    let mut s = stalled_session();
    s.hook(
        "UserPromptSubmit",
        json!({"prompt_id": "p1", "prompt": "first"}),
    );
    s.write(&[ask("first", "p1"), says("Working."), tool_call()]);
    s.write(&[json!({"type": "user", "promptId": "p1", "message": {"content": "[Request interrupted by user]"}})]);
    s.hook(
        "UserPromptSubmit",
        json!({"prompt_id": "p2", "prompt": "second"}),
    );
    s.write(&[ask("second", "p2"), says("Done.")]);
    s.hook(
        "Stop",
        json!({"prompt_id": "p2", "last_assistant_message": "Done."}),
    );
    // The whole story is in the file before the daemon sees its first hook.
    s.start();
    let evs = s.wait(|evs| transcripts(evs).len() >= 2);
    assert_eq!(
        kinds(&evs),
        [
            "session.started",
            "turn.started",
            "turn.ended",
            "turn.transcript",
            "turn.started",
            "turn.ended",
            "turn.transcript"
        ]
    );
    assert_eq!(evs[1]["data"]["turn_id"], "p1");
    assert_eq!(
        evs[2]["data"],
        json!({"turn_id": "p1", "reason": "interrupt"})
    );
    assert_eq!(evs[3]["data"]["user"], "first");
    assert_eq!(evs[4]["data"]["turn_id"], "p2");
    assert_eq!(evs[5]["data"]["reason"], "stop");
    assert_eq!(evs[6]["data"]["assistant"], "Done.");
}

/// One whole turn (prompt `p`, words in the file before its Stop).
fn a_turn(s: &Session, p: &str, asked: &str, answer: &str) {
    s.hook("UserPromptSubmit", json!({"prompt_id": p, "prompt": asked}));
    s.write(&[ask(asked, p), says(answer)]);
    s.hook(
        "Stop",
        json!({"prompt_id": p, "last_assistant_message": answer}),
    );
}

#[test]
fn turning_transcripts_on_and_off_applies_without_a_restart() {
    let mut s = stalled_session();
    std::fs::write(s.sb.state.join("config.json"), r#"{"transcripts": false}"#).unwrap();
    s.start();
    s.hook("SessionStart", json!({"source": "startup"}));
    a_turn(&s, "p1", "first", "One.");
    s.wait(|evs| evs.iter().filter(|e| e["type"] == "turn.ended").count() == 1);
    // On, as the Settings page or `config set` does it: the next turn is read.
    assert!(
        s.sb.sessionpipe(&["config", "set", "transcripts", "true"])
            .status
            .success()
    );
    a_turn(&s, "p2", "second", "Two.");
    let evs = s.wait(|evs| !transcripts(evs).is_empty());
    let sent = transcripts(&evs);
    assert_eq!(sent.len(), 1, "only the turn after it was turned on");
    assert_eq!(sent[0]["data"]["user"], "second");
    // Off again: the next turn ends without its words.
    assert!(
        s.sb.sessionpipe(&["config", "set", "transcripts", "false"])
            .status
            .success()
    );
    a_turn(&s, "p3", "third", "Three.");
    let evs = s.wait(|evs| evs.iter().filter(|e| e["type"] == "turn.ended").count() == 3);
    assert_eq!(transcripts(&evs).len(), 1, "{:#?}", kinds(&evs));
}
