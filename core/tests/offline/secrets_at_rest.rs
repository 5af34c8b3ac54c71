//! Nothing sessionpipe keeps holds a secret: every vector of `secrets.json` (and
//! the project's `secrets-families.json`), said in prompts and replies of a
//! Claude Code session with transcripts on, in a held turn's words, in the git
//! remote, the branch and the folder's name, is absent from every byte of
//! `outbox.db` and its WAL; an outbox an earlier version wrote with secrets in
//! it is scrubbed when opened, its old text gone from free pages and the WAL.
//!
//! The hook calls are hand-made in Claude Code's recorded shapes (the secrets
//! must be in them; a scripted model could say them too, but the point is what
//! the daemon stores, not how the harness got them).

use redact::vectors::Removal;
use rusqlite::Connection;
use serde_json::{Value, json};
use sessionpipe_core::pipeline::outbox::Outbox;
use sessionpipe_testkit::Sandbox;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

const MARKER: &str = "[redacted]";

/// Every case that removes a secret: what to say, and what must then be found
/// nowhere (spans of at least 8 characters: shorter ones would match unrelated
/// bytes of a database file). `None` when the shared vectors are absent (the
/// project's own always are).
fn secrets() -> Option<Vec<Removal>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let shared = root.join("../shared/conformance/redaction/secrets.json");
    if !shared.is_file() {
        println!("skipped: no conformance vectors at {}", shared.display());
        return None;
    }
    let mut out = Vec::new();
    for file in [
        shared,
        root.join("conformance/redaction/secrets-families.json"),
    ] {
        let doc: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        let cases = redact::vectors::removals(&doc, MARKER).unwrap();
        assert!(!cases.is_empty(), "{} removes nothing", file.display());
        out.extend(cases.into_iter().filter_map(|mut c| {
            c.spans.retain(|s| s.len() >= 8);
            (!c.spans.is_empty()).then_some(c)
        }));
    }
    Some(out)
}

/// The secrets found in the outbox's files (the database, its WAL, its journal).
fn found_in_outbox(state: &Path, secrets: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    for name in ["outbox.db", "outbox.db-wal", "outbox.db-journal"] {
        let Ok(bytes) = std::fs::read(state.join(name)) else {
            continue;
        };
        for s in secrets {
            if contains(&bytes, s.as_bytes()) {
                found.push(format!("{name}: {s}"));
            }
        }
    }
    found
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

const SESSION: &str = "7c1c2d3e-0000-4000-8000-00000000beef";
const TOKEN: &str = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";

#[test]
fn a_session_full_of_secrets_leaves_none_in_the_outbox() {
    let Some(cases) = secrets() else { return };
    let sb = Sandbox::new();
    std::fs::create_dir_all(&sb.state).unwrap();
    std::fs::write(sb.state.join("config.json"), r#"{"transcripts": true}"#).unwrap();
    // A folder named with an AWS key id, a remote with a token in its query and
    // a password in its userinfo, a branch named like a token.
    let folder = sb.home.join("work/AKIAIOSFODNN7EXAMPLE-app");
    std::fs::create_dir_all(folder.join(".git")).unwrap();
    std::fs::write(
        folder.join(".git/config"),
        format!(
            "[remote \"origin\"]\n\turl = https://me:hunter2hunter2@github.com/acme/w.git?access_token={TOKEN}#frag\n"
        ),
    )
    .unwrap();
    std::fs::write(
        folder.join(".git/HEAD"),
        format!("ref: refs/heads/{TOKEN}\n"),
    )
    .unwrap();
    let dir = sb.home.join(".claude/projects/-w");
    std::fs::create_dir_all(&dir).unwrap();
    let transcript = dir.join(format!("{SESSION}.jsonl"));
    std::fs::write(&transcript, "").unwrap();
    let mut secrets: Vec<String> = cases.iter().flat_map(|c| c.spans.clone()).collect();
    secrets.extend([
        "AKIAIOSFODNN7EXAMPLE".to_string(),
        "hunter2hunter2".to_string(),
        TOKEN.to_string(),
    ]);

    let _daemon = sb.start_daemon();
    let hook = |event: &str, extra: Value| {
        let mut p = json!({
            "session_id": SESSION,
            "transcript_path": transcript,
            "cwd": folder,
            "hook_event_name": event,
        });
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let out = sb.hook("claude-code", event, p.to_string().as_bytes());
        assert!(out.status.success() && out.stdout.is_empty());
    };
    let write = |records: &[Value]| {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&transcript)
            .unwrap();
        for r in records {
            writeln!(f, "{r}").unwrap();
        }
    };
    hook("SessionStart", json!({"source": "startup"}));
    // Each secret is the first ask, a prompt, a reply and a Stop's last words.
    for (i, case) in cases.iter().enumerate() {
        let prompt = format!("p{i}");
        let asked = format!("please use\n{}\nfor the deploy", case.input);
        let answered = format!("I used\n{}\nas you asked", case.input);
        hook("UserPromptSubmit", json!({"prompt": asked}));
        write(&[
            json!({"type": "user", "promptId": prompt, "timestamp": "2026-11-29T10:00:00.000Z", "message": {"role": "user", "content": asked}}),
            json!({"type": "assistant", "timestamp": "2026-11-29T10:00:01.000Z", "message": {"model": "claude-opus-5-5", "content": [{"type": "text", "text": answered}]}}),
        ]);
        hook("Stop", json!({"last_assistant_message": answered}));
    }
    let n = cases.len();
    let evs = sb.wait_until(Duration::from_secs(60), |evs| {
        evs.iter()
            .filter(|e| e["type"] == "turn.transcript")
            .count()
            >= n
    });
    // A last turn whose words are not in the file yet: held, its words kept.
    let held = format!("the key was {TOKEN} all along");
    hook("UserPromptSubmit", json!({"prompt": "one more"}));
    hook("Stop", json!({"last_assistant_message": held}));
    sb.wait_idle(Duration::from_secs(15));

    let sent = serde_json::to_string(&evs).unwrap();
    for s in &secrets {
        assert!(!sent.contains(s.as_str()), "an event carries {s}");
    }
    assert!(sent.contains(MARKER), "the turns were sent, redacted");
    let start = evs.iter().find(|e| e["type"] == "session.started").unwrap();
    assert_eq!(start["session"]["repo"], "https://github.com/acme/w.git");
    assert_eq!(start["session"]["branch"], MARKER);
    let found = found_in_outbox(&sb.state, &secrets);
    assert!(found.is_empty(), "kept at rest:\n{}", found.join("\n"));
}

/// A session record and an event as sessionpipe 0.1 kept them, secrets and all.
fn seed_old_secrets(path: &Path) {
    let c = Connection::open(path).unwrap();
    let (harness, session, record): (String, String, String) = c
        .query_row(
            "SELECT harness, session, record FROM sessions LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    let mut record: Value = serde_json::from_str(&record).unwrap();
    let said = format!("deploy with {TOKEN}");
    record["block"]["repo"] = json!(format!("https://x:{TOKEN}@github.com/a/b.git"));
    record["block"]["title"] = json!(said);
    record["hold"] = json!({"turn_id": null, "words": said, "until_ms": 0});
    record["transcript"] = json!({
        "path": "/home/me/.claude/projects/-w/s.jsonl",
        "log": {
            "cursor": 10, "count": 1, "last_sent": null, "first_ask": said,
            "turns": [{"n": 1, "prompt_id": "p", "user": said, "assistant": said,
                "at_ms": null, "last_words": said, "tool_after_words": false,
                "closed": false, "interrupted": false, "injected": false}],
        },
    });
    c.execute(
        "UPDATE sessions SET record = ?3 WHERE harness = ?1 AND session = ?2",
        rusqlite::params![harness, session, record.to_string()],
    )
    .unwrap();
    let (rowid, env): (i64, String) = c
        .query_row(
            "SELECT rowid, envelope FROM events ORDER BY rowid LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let mut env: Value = serde_json::from_str(&env).unwrap();
    env["session"]["branch"] = json!(TOKEN);
    env["data"]["note"] = json!(said);
    c.execute(
        "UPDATE events SET envelope = ?2 WHERE rowid = ?1",
        rusqlite::params![rowid, env.to_string()],
    )
    .unwrap();
}

#[test]
fn an_outbox_an_earlier_version_kept_secrets_in_is_scrubbed_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("outbox.db");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/offline/data/outbox-0.1.0.db"),
        &path,
    )
    .unwrap();
    seed_old_secrets(&path);
    let secret = vec![TOKEN.to_string()];
    assert!(!found_in_outbox(dir.path(), &secret).is_empty());
    let before = Outbox::open_readonly(&path)
        .unwrap()
        .unwrap()
        .counts()
        .unwrap();

    let ob = Outbox::open(&path).unwrap();
    assert_eq!(ob.counts().unwrap(), before, "nothing lost to the scrub");
    let sessions = ob.sessions().unwrap();
    let scrubbed =
        serde_json::to_string(&sessions.iter().map(|s| &s.2).collect::<Vec<_>>()).unwrap();
    assert!(scrubbed.contains("deploy with [redacted]"), "{scrubbed}");
    assert!(
        scrubbed.contains("https://github.com/a/b.git"),
        "{scrubbed}"
    );
    let first = &ob.events_after(0, 1).unwrap()[0].envelope;
    assert!(first.contains(r#""branch":"[redacted]""#), "{first}");
    drop(ob);
    let found = found_in_outbox(dir.path(), &secret);
    assert!(found.is_empty(), "kept at rest after the scrub: {found:?}");
}
