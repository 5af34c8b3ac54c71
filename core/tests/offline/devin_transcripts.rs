//! Devin's tier 2, facts and backfill through the daemon. Devin is not installed
//! here, so its store is the one in `conformance/transcripts/devin/` (built from
//! ADAPTERS.md, loaded with rusqlite, written node by node as Devin would) and
//! the hook calls are hand-made in the recorded fixtures' shapes.

use rusqlite::{Connection, params};
use serde_json::{Value, json};
use sessionpipe_testkit::Sandbox;
use std::path::{Path, PathBuf};
use std::time::Duration;

const SESSION: &str = "frill-vulture";
const PROMPT: &str = "715ae593-e501-4349-b11f-ed487c21047f";
const CALL: &str = "call_e4ee5fa9d8e744d18ac42d8e#42f1582708a345a09d67f3e7324bcede";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/transcripts/devin")
}

fn fixture() -> Value {
    serde_json::from_slice(&std::fs::read(fixtures().join("two-turns.json")).unwrap()).unwrap()
}

/// A sandbox with tier 2 on, Devin's config (its org id) and version, and an
/// empty store holding the fixture's session row and prompts.
struct Devin {
    sb: Sandbox,
    store: Connection,
    project: PathBuf,
    fixture: Value,
}

impl Devin {
    fn new(transcripts: bool) -> Devin {
        let sb = Sandbox::new();
        std::fs::create_dir_all(&sb.state).unwrap();
        let config = format!(r#"{{"transcripts": {transcripts}}}"#);
        std::fs::write(sb.state.join("config.json"), config).unwrap();
        let conf = sb.home.join(".config/devin");
        std::fs::create_dir_all(&conf).unwrap();
        std::fs::write(
            conf.join("config.json"),
            "{\n  // Devin's own comment\n  \"devin\": {\"org_id\": \"org-7f3a9c\"},\n  \"version\": 1\n}\n",
        )
        .unwrap();
        let data = sb.home.join(".local/share/devin/cli");
        std::fs::create_dir_all(data.join("_versions/3000.11.3/bin")).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("3000.11.3", data.join("_versions/current")).unwrap();
        let store = Connection::open(data.join("sessions.db")).unwrap();
        store
            .execute_batch(&std::fs::read_to_string(fixtures().join("schema.sql")).unwrap())
            .unwrap();
        let fixture = fixture();
        let s = &fixture["session"];
        store
            .execute(
                "INSERT INTO sessions (id, working_directory, model, title, created_at, last_activity_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    s["id"].as_str(),
                    sb.home.join("devin-proj").to_str(),
                    s["model"].as_str(),
                    s["title"].as_str(),
                    s["created_at"].as_i64(),
                    s["last_activity_at"].as_i64()
                ],
            )
            .unwrap();
        for p in fixture["prompt_history"].as_array().unwrap() {
            store
                .execute(
                    "INSERT INTO prompt_history (content, timestamp, session_id, is_shell) VALUES (?1, ?2, ?3, ?4)",
                    params![p["content"].as_str(), p["timestamp"].as_i64(), SESSION, p["is_shell"].as_i64()],
                )
                .unwrap();
        }
        let project = sb.home.join("devin-proj");
        Devin {
            sb,
            store,
            project,
            fixture,
        }
    }

    /// Saves the fixture's nodes numbered up to `last` not saved yet, and moves
    /// the main chain's tip to `tip`, as Devin does when it saves a batch.
    fn save(&self, last: i64, tip: i64) {
        for n in self.fixture["nodes"].as_array().unwrap() {
            self.store
                .execute(
                    "INSERT OR IGNORE INTO message_nodes (session_id, node_id, parent_node_id, chat_message, created_at)
                     SELECT ?1, ?2, ?3, ?4, ?5 WHERE ?2 <= ?6",
                    params![
                        SESSION,
                        n["node_id"].as_i64(),
                        n["parent_node_id"].as_i64(),
                        n["chat_message"].to_string(),
                        n["created_at"].as_i64(),
                        last
                    ],
                )
                .unwrap();
        }
        self.tip(tip);
    }

    fn tip(&self, tip: i64) {
        self.store
            .execute(
                "UPDATE sessions SET main_chain_id = ?1 WHERE id = ?2",
                params![tip, SESSION],
            )
            .unwrap();
    }

    fn hook(&self, event: &str, extra: Value) {
        let mut p = json!({"hook_event_name": event, "session_id": SESSION});
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let project = self.project.to_str().unwrap();
        let out = self.sb.hook_with(
            "devin",
            event,
            p.to_string().as_bytes(),
            &[("DEVIN_PROJECT_DIR", project)],
        );
        assert!(out.status.success() && out.stdout.is_empty());
    }

    fn wait(&self, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        self.sb.wait_until(Duration::from_secs(20), done)
    }
}

fn kinds(evs: &[Value]) -> Vec<&str> {
    evs.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

fn transcripts(evs: &[Value]) -> Vec<&Value> {
    evs.iter()
        .filter(|e| e["type"] == "turn.transcript")
        .collect()
}

/// The recorded run's first turn, saved in three batches around its hooks.
fn first_turn(d: &Devin) {
    d.hook("SessionStart", json!({"source": "startup"}));
    d.save(4, 4);
    d.hook(
        "UserPromptSubmit",
        json!({"prompt_id": PROMPT, "prompt": "Read the file sample.txt and reply with only its first line"}),
    );
    let tool = json!({"prompt_id": PROMPT, "tool_name": "exec", "tool_use_id": CALL, "tool_input": {"command": "head -1 sample.txt"}});
    d.hook("PreToolUse", tool.clone());
    d.save(6, 6);
    let mut ended = tool;
    ended["tool_response"] =
        json!({"success": true, "output": "alpha-token-marker-42", "error": null});
    d.hook("PostToolUse", ended);
    d.save(8, 8);
    d.hook(
        "Stop",
        json!({"prompt_id": PROMPT, "last_assistant_message": "alpha-token-marker-42", "stop_hook_active": false}),
    );
}

#[test]
fn turns_come_from_the_main_chain_with_the_sessions_facts() {
    let d = Devin::new(true);
    let _daemon = d.sb.start_daemon();
    first_turn(&d);
    let evs = d.wait(|evs| !transcripts(evs).is_empty());
    assert_eq!(
        kinds(&evs),
        [
            "session.started",
            "turn.started",
            "tool.started",
            "tool.ended",
            "turn.ended",
            "turn.transcript"
        ],
        "{evs:#?}"
    );
    let t = &evs[5];
    assert_eq!(t["data"]["turn"], 1);
    assert_eq!(
        t["data"]["user"],
        "Read the file sample.txt and reply with only its first line"
    );
    assert_eq!(
        t["data"]["assistant"], "Let me read it.\n\nalpha-token-marker-42",
        "the main chain, not the abandoned retry"
    );
    assert_eq!(t["data"]["at"], "2026-11-20T09:00:02.000Z");
    let s = &t["session"];
    assert_eq!(s["cwd"], "~/devin-proj");
    assert_eq!(s["model"], "swe-2-medium");
    assert_eq!(
        s["title"],
        "Read the file sample.txt and reply with only its first line"
    );
    assert_eq!(s["title_source"], "first-ask");
    assert_eq!(s["account_id"], "org-7f3a9c");
    #[cfg(unix)]
    assert_eq!(t["harness"]["version"], "3000.11.3");
    assert!(!serde_json::to_string(&evs).unwrap().contains("abandoned"));
}

#[test]
fn a_later_read_starts_at_the_cursor_never_at_the_root() {
    let d = Devin::new(true);
    let _daemon = d.sb.start_daemon();
    first_turn(&d);
    d.wait(|evs| !transcripts(evs).is_empty());
    // Every node read so far now says something new: a walk that went past the
    // cursor would send it as the person's words.
    d.store
        .execute(
            "UPDATE message_nodes SET chat_message = ?1 WHERE node_id <= 8",
            [
                json!({"role": "user", "content": "REREAD", "metadata": {"is_user_input": true}})
                    .to_string(),
            ],
        )
        .unwrap();
    d.save(9, 9);
    d.hook(
        "UserPromptSubmit",
        json!({"prompt_id": "p2", "prompt": "Now count its lines"}),
    );
    d.save(10, 10);
    d.hook(
        "Stop",
        json!({"prompt_id": "p2", "last_assistant_message": "It has 3 lines."}),
    );
    d.hook("SessionEnd", json!({"prompt_id": "p2", "reason": "other"}));
    let evs = d.wait(|evs| kinds(evs).contains(&"session.ended"));
    let sent = transcripts(&evs);
    assert_eq!(sent.len(), 2, "{evs:#?}");
    assert_eq!(sent[1]["data"]["turn"], 2);
    assert_eq!(sent[1]["data"]["user"], "Now count its lines");
    assert_eq!(sent[1]["data"]["assistant"], "It has 3 lines.");
    assert!(!serde_json::to_string(&evs).unwrap().contains("REREAD"));
    let tail = &kinds(&evs)[6..];
    assert_eq!(
        tail,
        [
            "turn.started",
            "turn.ended",
            "turn.transcript",
            "session.ended"
        ]
    );
}

#[test]
fn a_chain_longer_than_the_cap_keeps_its_newest_nodes() {
    let d = Devin::new(true);
    let message = |n: i64| match n {
        1 => json!({"role": "system", "content": "You are Devin."}),
        2 => json!({"role": "user", "content": "old ask", "metadata": {"is_user_input": true}}),
        4498 => {
            json!({"role": "user", "content": "recent ask", "metadata": {"is_user_input": true}})
        }
        4500 => json!({"role": "assistant", "content": "recent reply"}),
        n if n % 2 == 1 => {
            json!({"role": "assistant", "content": "", "tool_calls": [{"id": "c", "name": "exec"}]})
        }
        _ => json!({"role": "tool", "content": "ok"}),
    };
    let tx = d.store.unchecked_transaction().unwrap();
    for n in 1..=4500_i64 {
        tx.execute(
            "INSERT INTO message_nodes (session_id, node_id, parent_node_id, chat_message, created_at)
             VALUES (?1, ?2, ?3, ?4, 1795165330)",
            params![SESSION, n, (n > 1).then_some(n - 1), message(n).to_string()],
        )
        .unwrap();
    }
    tx.commit().unwrap();
    d.tip(4500);
    let _daemon = d.sb.start_daemon();
    d.hook(
        "UserPromptSubmit",
        json!({"prompt_id": "p9", "prompt": "recent ask"}),
    );
    d.hook(
        "Stop",
        json!({"prompt_id": "p9", "last_assistant_message": "recent reply"}),
    );
    let evs = d.wait(|evs| !transcripts(evs).is_empty());
    let sent = transcripts(&evs);
    assert_eq!(sent.len(), 1, "{evs:#?}");
    assert_eq!(sent[0]["data"]["user"], "recent ask");
    assert_eq!(sent[0]["data"]["assistant"], "recent reply");
    // The title is the store's first prompt, which the capped chain no longer has.
    assert_eq!(
        sent[0]["session"]["title"],
        "Read the file sample.txt and reply with only its first line"
    );
    assert!(!serde_json::to_string(&evs).unwrap().contains("old ask"));
}

#[test]
fn a_store_devin_holds_locked_does_not_stop_ingest() {
    let d = Devin::new(true);
    let _daemon = d.sb.start_daemon();
    d.save(8, 8);
    let lock = Connection::open(d.sb.home.join(".local/share/devin/cli/sessions.db")).unwrap();
    lock.execute_batch("BEGIN EXCLUSIVE").unwrap();
    d.hook(
        "UserPromptSubmit",
        json!({"prompt_id": PROMPT, "prompt": "Read the file sample.txt"}),
    );
    d.hook(
        "Stop",
        json!({"prompt_id": PROMPT, "last_assistant_message": "alpha-token-marker-42"}),
    );
    let evs = d.wait(|evs| kinds(evs).contains(&"turn.ended"));
    assert_eq!(
        kinds(&evs),
        ["session.started", "turn.started", "turn.ended"]
    );
    lock.execute_batch("COMMIT").unwrap();
    d.hook(
        "SessionEnd",
        json!({"prompt_id": PROMPT, "reason": "other"}),
    );
    let evs = d.wait(|evs| kinds(evs).contains(&"session.ended"));
    assert_eq!(
        kinds(&evs),
        [
            "session.started",
            "turn.started",
            "turn.ended",
            "turn.transcript",
            "session.ended"
        ]
    );
    assert_eq!(
        evs[3]["data"]["assistant"],
        "Let me read it.\n\nalpha-token-marker-42"
    );
}

#[test]
fn past_sessions_are_backfilled_once() {
    let d = Devin::new(false);
    d.save(10, 10);
    let count = |out: &std::process::Output| -> Value {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let counts: Value = serde_json::from_slice(&out.stdout).unwrap();
        counts
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["harness"] == "devin")
            .unwrap()
            .clone()
    };
    // The fixture's session is from 2026-11-20; the window reaches back to it.
    let backfill = || d.sb.sessionpipe(&["backfill", "--json", "--days", "3650"]);
    let first = count(&backfill());
    assert_eq!(
        (first["found"].as_u64(), first["added"].as_u64()),
        (Some(1), Some(1))
    );
    let evs = d.sb.events();
    assert_eq!(kinds(&evs), ["session.backfill"]);
    let e = &evs[0];
    assert_eq!(e["session"]["id"], SESSION);
    assert_eq!(e["session"]["seq"], 0);
    assert_eq!(e["session"]["cwd"], "~/devin-proj");
    assert_eq!(e["session"]["model"], "swe-2-medium");
    assert_eq!(e["session"]["title_source"], "first-ask");
    assert_eq!(e["session"]["account_id"], "org-7f3a9c");
    assert_eq!(e["data"]["started_at"], "2026-11-20T09:00:00.000Z");
    assert_eq!(e["data"]["last_at"], "2026-11-20T09:02:10.000Z");
    assert_eq!(e["data"]["turns"], 2);
    let again = count(&backfill());
    assert_eq!(
        (again["added"].as_u64(), again["known"].as_u64()),
        (Some(0), Some(1))
    );
    assert_eq!(d.sb.events().len(), 1);
}
