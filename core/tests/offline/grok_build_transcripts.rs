//! Tier 2, facts and backfill for Grok Build, through the daemon. No Grok Build
//! runs here, so the hook calls are hand-made in the shapes of ADAPTERS.md's
//! Grok Build row and `conformance/harness/grok-build/` (every key twice,
//! `promptId` on turn events), and the test writes the session's update stream
//! and `summary.json` from `conformance/transcripts/grok-build/` (hand-made from
//! the same row; its README says so) into a Grok home as Grok lays it out.

use serde_json::{Value, json};
use sessionpipe_testkit::Sandbox;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

const SESSION: &str = "019a72c4-3e1d-7b58-a0f2-6c1d9e4b8a37";
const P1: &str = "019a72c4-41aa-7c02-b6e3-0f5d2c7a9e11";
const P2: &str = "019a72c4-4a10-7d33-8c21-5e7f3b9d0a42";

fn data(name: &str) -> String {
    let path = sessionpipe_testkit::harnesses::repo_root()
        .join("conformance/transcripts/grok-build")
        .join(name);
    std::fs::read_to_string(path).unwrap()
}

/// A Grok home in a sandbox with transcripts on, and one session's folder.
struct Grok {
    sb: Sandbox,
    project: PathBuf,
    updates: PathBuf,
}

fn grok() -> Grok {
    let sb = Sandbox::new();
    std::fs::create_dir_all(&sb.state).unwrap();
    std::fs::write(sb.state.join("config.json"), r#"{"transcripts": true}"#).unwrap();
    let project = sb.home.join("work/grok-proj");
    std::fs::create_dir_all(&project).unwrap();
    let encoded = project.display().to_string().replace('/', "%2F");
    let dir = sb.home.join(".grok/sessions").join(encoded).join(SESSION);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        sb.home.join(".grok/version.json"),
        r#"{"version": "1.0.77"}"#,
    )
    .unwrap();
    let summary =
        data("summary.json").replace("/tmp/rec/grok-proj", &project.display().to_string());
    std::fs::write(dir.join("summary.json"), summary).unwrap();
    let updates = dir.join("updates.jsonl");
    std::fs::write(&updates, "").unwrap();
    Grok {
        sb,
        project,
        updates,
    }
}

impl Grok {
    /// One hook call as Grok makes it: its own camelCase keys and Claude Code's
    /// beside them; `stalled` leaves the job in the spool (no worker runs).
    fn hook(&self, event: &str, snake: &str, extra: Value, stalled: bool) {
        let mut p = json!({
            "hookEventName": snake, "hook_event_name": event,
            "sessionId": SESSION, "session_id": SESSION,
            "workspaceRoot": self.project, "cwd": self.project,
            "transcriptPath": self.updates, "transcript_path": self.updates,
            "timestamp": "2026-11-11T10:00:00.000Z", "permissionMode": "default",
        });
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let env: &[(&str, &str)] = if stalled {
            &[("SESSIONPIPE_BIN", "/nonexistent")]
        } else {
            &[]
        };
        let out = self
            .sb
            .hook_with("grok-build", event, p.to_string().as_bytes(), env);
        assert!(out.status.success() && out.stdout.is_empty());
    }

    fn stop(&self, prompt: &str, words: &str) {
        let extra = json!({"promptId": prompt, "reason": "end_turn",
                           "lastAssistantMessage": words, "last_assistant_message": words});
        self.hook("Stop", "stop", extra, false);
    }

    /// Appends the data stream's lines `from..to` (its line numbers, from 0).
    fn write(&self, lines: std::ops::Range<usize>) {
        let all = data("updates.jsonl");
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.updates)
            .unwrap();
        for l in all.lines().skip(lines.start).take(lines.len()) {
            writeln!(f, "{l}").unwrap();
        }
    }

    fn wait(&self, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        self.sb.wait_until(Duration::from_secs(15), done)
    }
}

/// The data stream's line that holds `text`.
fn line_of(text: &str) -> usize {
    data("updates.jsonl")
        .lines()
        .position(|l| l.contains(text))
        .unwrap()
}

fn of_type<'a>(evs: &'a [Value], kind: &str) -> Vec<&'a Value> {
    evs.iter().filter(|e| e["type"] == kind).collect()
}

fn kinds(evs: &[Value]) -> Vec<&str> {
    evs.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

/// Two turns. The first one's Stop comes before its last words reach the
/// stream (a Grok that writes its stream after the hook): its turn is held
/// until they do, never sent as the half before the tool call. The Stop Grok
/// fires after SessionEnd reports nothing. Facts come from `summary.json`, the
/// version from `version.json`.
#[test]
fn transcripts_and_facts_from_the_update_stream() {
    let g = grok();
    let _daemon = g.sb.start_daemon();
    g.hook(
        "SessionStart",
        "session_start",
        json!({"source": "new"}),
        false,
    );
    let ask = "Read sample.txt and reply with its first line";
    let prompt = |id: &str, text: &str| json!({"promptId": id, "prompt": text});
    g.hook(
        "UserPromptSubmit",
        "user_prompt_submit",
        prompt(P1, ask),
        false,
    );
    let last_words = line_of("alpha-token-");
    g.write(0..last_words);
    g.stop(P1, "alpha-token-marker-42");
    std::thread::sleep(Duration::from_millis(150));
    g.write(last_words..line_of(P1) + 1);
    let evs = g.wait(|evs| !of_type(evs, "turn.transcript").is_empty());
    assert_eq!(
        kinds(&evs),
        [
            "session.started",
            "turn.started",
            "turn.ended",
            "turn.transcript"
        ]
    );
    let t1 = &evs[3]["data"];
    assert_eq!(
        (
            t1["turn"].as_u64(),
            t1["user"].as_str(),
            t1["assistant"].as_str()
        ),
        (
            Some(1),
            Some(ask),
            Some("Let me read it.\n\nalpha-token-marker-42")
        )
    );
    assert_eq!(t1["at"], "2026-11-11T10:00:01.000Z");

    g.hook(
        "UserPromptSubmit",
        "user_prompt_submit",
        prompt(P2, "Thanks!"),
        false,
    );
    g.write(line_of(P1) + 1..line_of(P2) + 1);
    g.stop(P2, "You're welcome.");
    g.hook(
        "SessionEnd",
        "session_end",
        json!({"reason": "shutdown"}),
        false,
    );
    g.hook("Stop", "stop", json!({"reason": "shutdown"}), false);
    g.wait(|evs| !of_type(evs, "session.ended").is_empty() && g.sb.spooled() == 0);
    let evs = g.sb.events();
    assert_eq!(
        kinds(&evs)[4..],
        [
            "turn.started",
            "turn.ended",
            "turn.transcript",
            "session.ended"
        ]
    );
    assert_eq!(evs[5]["data"]["turn_id"], P2);
    let t2 = &evs[6]["data"];
    assert_eq!(
        (
            t2["turn"].as_u64(),
            t2["user"].as_str(),
            t2["assistant"].as_str()
        ),
        (Some(2), Some("Thanks!"), Some("You're welcome."))
    );

    let session = &evs[7]["session"];
    assert_eq!(session["title"], "Read the first line of sample.txt");
    assert_eq!(session["title_source"], "harness");
    assert_eq!(session["model"], "grok-code-fast-1");
    assert_eq!(session["branch"], "main");
    assert_eq!(session["cwd"], "~/work/grok-proj");
    assert!(
        evs.iter().all(|e| e["harness"]["version"] == "1.0.77"),
        "{evs:#?}"
    );
}

/// A daemon that starts once the whole session is in the stream (its hooks
/// spooled meanwhile), for a turn whose end no hook reported: the next
/// prompt's read sends it, and stops at that prompt's own turn, which
/// `turn_completed` names with the hooks' prompt id.
#[test]
fn a_late_daemon_finds_the_turns_by_their_prompt_ids() {
    let g = grok();
    g.write(0..line_of(P2) + 1);
    let prompt = |id: &str, text: &str| json!({"promptId": id, "prompt": text});
    g.hook(
        "SessionStart",
        "session_start",
        json!({"source": "new"}),
        true,
    );
    g.hook(
        "UserPromptSubmit",
        "user_prompt_submit",
        prompt(P1, "Read…"),
        true,
    );
    g.hook(
        "UserPromptSubmit",
        "user_prompt_submit",
        prompt(P2, "Thanks!"),
        true,
    );
    let _daemon = g.sb.start_daemon();
    let evs = g.wait(|evs| evs.len() >= 4 && g.sb.spooled() == 0);
    assert_eq!(
        kinds(&evs),
        [
            "session.started",
            "turn.started",
            "turn.transcript",
            "turn.started"
        ]
    );
    assert_eq!(
        evs[2]["data"]["assistant"],
        "Let me read it.\n\nalpha-token-marker-42"
    );
    assert_eq!(evs[3]["data"]["turn_id"], P2);
}

/// `sessionpipe backfill --json` over a Grok home: the data session with what
/// its files say; then every summary active since the cutoff, newest first, at
/// most 500; once.
#[test]
fn backfill_takes_the_newest_500_once() {
    let g = grok();
    g.write(0..line_of(P2) + 1);
    let backfill = |days: &str| {
        let out = g.sb.sessionpipe(&["backfill", "--json", "--days", days]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let counts: Value = serde_json::from_slice(&out.stdout).unwrap();
        let grok = counts
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["harness"] == "grok-build");
        let n = |k: &str| grok.unwrap()[k].as_u64().unwrap();
        (n("found"), n("added"), n("known"))
    };
    // A cutoff long enough for the data session (2026-11-11) whenever this runs.
    let long = backfill("36500");
    assert_eq!(long, (1, 1, 0));
    let b = &g.sb.events()[0];
    assert_eq!(
        (b["type"].as_str(), b["session"]["id"].as_str()),
        (Some("session.backfill"), Some(SESSION))
    );
    assert_eq!(b["harness"]["version"], "1.0.77");
    assert_eq!(b["session"]["title"], "Read the first line of sample.txt");
    assert_eq!(b["session"]["title_source"], "harness");
    assert_eq!(b["session"]["model"], "grok-code-fast-1");
    assert_eq!(b["session"]["branch"], "main");
    assert_eq!(b["session"]["cwd"], "~/work/grok-proj");
    assert_eq!(
        (
            b["data"]["started_at"].as_str(),
            b["data"]["last_at"].as_str()
        ),
        (
            Some("2026-11-11T10:00:00.000Z"),
            Some("2026-11-11T10:00:12.000Z")
        )
    );
    assert_eq!(b["data"]["turns"], 2);

    // 501 recent sessions a minute apart, and one from before the cutoff.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let sessions = g.sb.home.join(".grok/sessions/%2Fsrv%2Fw");
    let summary = |id: &str, last_active: u64| {
        let dir = sessions.join(id);
        std::fs::create_dir_all(&dir).unwrap();
        let s = json!({"generated_title": id, "info": {"cwd": "/srv/w"},
                       "created_at": last_active - 30, "last_active_at": last_active});
        std::fs::write(dir.join("summary.json"), s.to_string()).unwrap();
    };
    let id = |i: u64| format!("019a0000-0000-7000-8000-{i:012}");
    for i in 0..501 {
        summary(&id(i), now - 3600 - i * 60);
    }
    summary("019a0000-0000-7000-8000-old000000000", now - 40 * 86_400);
    // The newest 500 (the data session is older than all of them), newest first.
    assert_eq!(backfill("30"), (500, 500, 0));
    let evs = g.sb.events();
    assert!(
        evs.iter()
            .all(|e| e["type"] == "session.backfill" && e["session"]["seq"] == 0)
    );
    let ids: Vec<&str> = evs[1..]
        .iter()
        .map(|e| e["session"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, (0..500).map(id).collect::<Vec<_>>());
    assert_eq!(backfill("30"), (500, 0, 500));
    assert_eq!(g.sb.events().len(), 501);
}
