//! File sinks through the real daemon: two sinks at different tiers get
//! different views of the same events, each exactly once across daemon restarts;
//! `forget` reaches them and empties the outbox of the session.

use serde_json::{Value, json};
use sessionpipe_testkit::Sandbox;
use std::time::{Duration, Instant};

const S: &str = "7f1c2d3e-0000-4000-8000-0000000000aa";

fn hook(sb: &Sandbox, event: &str, extra: Value) {
    let mut p = json!({"session_id": S, "transcript_path": "/nowhere.jsonl", "cwd": "/w", "hook_event_name": event, "prompt_id": "p1"});
    p.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    assert!(
        sb.hook("claude-code", event, p.to_string().as_bytes())
            .status
            .success()
    );
}

/// `sink add file:<path> --tier <tier>`, which must succeed.
pub(crate) fn add_file_sink(sb: &Sandbox, path: &std::path::Path, tier: &str) {
    let target = format!("file:{}", path.display());
    let out = sb.sessionpipe(&["sink", "add", &target, "--tier", tier]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn wait_lines(path: &std::path::Path, n: usize) -> Vec<Value> {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let l = lines(path);
        if l.len() >= n || std::time::Instant::now() > deadline {
            return l;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits (up to 20 s) until `status` says no sink is behind the outbox.
fn wait_caught_up(sb: &Sandbox) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let out = sb.sessionpipe(&["status", "--json"]);
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        let sinks = doc["sinks"].as_array().cloned().unwrap_or_default();
        if !sinks.is_empty() && sinks.iter().all(|s| s["behind"] == 0) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the sinks did not catch up: {doc}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn two_file_sinks_at_two_tiers_get_two_views_exactly_once() {
    let sb = Sandbox::new();
    let low = sb.root().join("tier0.jsonl");
    let full = sb.root().join("tier3.jsonl");
    for (path, tier) in [(&low, "0"), (&full, "3")] {
        add_file_sink(&sb, path, tier);
    }
    let list = String::from_utf8(sb.sessionpipe(&["sink", "list"]).stdout).unwrap();
    assert_eq!(list.lines().count(), 2, "{list}");

    let daemon = sb.start_daemon();
    hook(
        &sb,
        "UserPromptSubmit",
        json!({"prompt": "run it with ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"}),
    );
    hook(
        &sb,
        "PreToolUse",
        json!({"tool_name": "Bash", "tool_use_id": "t1", "tool_input": {"command": "ls"}}),
    );
    hook(
        &sb,
        "PostToolUse",
        json!({"tool_name": "Bash", "tool_use_id": "t1", "tool_input": {"command": "ls"}, "tool_response": {"stdout": "x"}}),
    );
    hook(&sb, "Stop", json!({}));
    let all = wait_lines(&full, 5);
    let some = wait_lines(&low, 3);
    // A line is in the file an instant before its sink's cursor is saved (a
    // kill in that instant is the next test's). The restart below is about
    // what was delivered and recorded, so it waits for both cursors.
    wait_caught_up(&sb);
    daemon.kill();

    let kinds = |v: &[Value]| {
        v.iter()
            .map(|e| e["type"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        kinds(&all),
        [
            "session.started",
            "turn.started",
            "tool.started",
            "tool.ended",
            "turn.ended"
        ]
    );
    assert_eq!(
        kinds(&some),
        ["session.started", "turn.started", "turn.ended"]
    );
    assert!(all.iter().all(|e| e["tier"] == 3) && some.iter().all(|e| e["tier"] == 0));
    assert_eq!(all[2]["data"]["input"]["command"], "ls");
    assert!(
        some[1]["data"].get("prompt_chars").is_none(),
        "a tier-1 field at tier 0"
    );
    assert!(!std::fs::read_to_string(&full).unwrap().contains("ghp_"));

    // A restart sends nothing twice; a new event goes once.
    let _daemon = sb.start_daemon();
    hook(&sb, "SessionEnd", json!({"reason": "exit"}));
    let all = wait_lines(&full, 6);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(lines(&full).len(), 6, "exactly once: {:?}", kinds(&all));
    assert_eq!(lines(&low).len(), 4);
    let seqs: Vec<u64> = lines(&full)
        .iter()
        .map(|e| e["session"]["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5, 6]);

    // Forget: the sinks hear it; the outbox keeps only that.
    let out = sb.sessionpipe(&["forget", &format!("claude-code:{S}")]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let all = wait_lines(&full, 7);
    assert_eq!(all[6]["type"], "session.forgotten");
    assert_eq!(all[6]["session"]["seq"], 7);
    // It carries the ids and nothing the person asked to forget.
    assert!(all[5]["session"].get("cwd").is_some(), "{}", all[5]);
    let carried: Vec<&String> = all[6]["session"].as_object().unwrap().keys().collect();
    assert_eq!(carried, ["id", "seq"], "{}", all[6]);
    assert_eq!(wait_lines(&low, 5)[4]["type"], "session.forgotten");
    let left = sb.events();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["type"], "session.forgotten");
    let again = sb.sessionpipe(&["forget", "claude-code:nobody"]);
    assert_eq!(again.status.code(), Some(1));
}

#[test]
fn a_file_sink_started_behind_what_its_file_holds_writes_nothing_twice() {
    let sb = Sandbox::new();
    let path = sb.root().join("events.jsonl");
    add_file_sink(&sb, &path, "3");
    let daemon = sb.start_daemon();
    hook(&sb, "UserPromptSubmit", json!({"prompt": "hi"}));
    hook(&sb, "Stop", json!({}));
    assert_eq!(wait_lines(&path, 3).len(), 3);
    wait_caught_up(&sb);
    daemon.kill();
    // The sink's place put back to the start with no daemon running: what a
    // kill between a batch's write and its place's save leaves, for all of
    // them at once.
    let out = sb.sessionpipe(&["replay", "--from-start"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _daemon = sb.start_daemon();
    hook(&sb, "SessionEnd", json!({"reason": "exit"}));
    wait_lines(&path, 4);
    wait_caught_up(&sb);
    let seqs: Vec<u64> = lines(&path)
        .iter()
        .map(|e| e["session"]["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, [1, 2, 3, 4], "each event once");
}

#[test]
fn sink_commands_refuse_what_they_cannot_take() {
    let sb = Sandbox::new();
    for (args, why) in [
        (
            vec!["sink", "add", "http://example.org/x"],
            "HTTPS is required",
        ),
        (vec!["sink", "add", "file:relative.jsonl"], "absolute path"),
        (vec!["sink", "remove", "s_nope"], "no sink s_nope"),
    ] {
        let out = sb.sessionpipe(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(why),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = sb.sessionpipe(&["sink", "add", "stdout", "--tier", "9"]);
    assert_eq!(out.status.code(), Some(2));
    let out = sb.sessionpipe(&["sink", "add", "stdout"]);
    assert!(out.status.success());
    let out = sb.sessionpipe(&["sink", "add", "stdout"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("already"));
}

#[test]
fn a_stdout_sink_is_written_where_stdout_is_read_and_refused_where_it_is_not() {
    use std::io::BufRead;
    let sb = Sandbox::new();
    // A daemon whose stdout goes to /dev/null: a stdout sink is refused, and
    // one added before it started waits, and status says why.
    let detached = sb.start_daemon();
    let out = sb.sessionpipe(&["sink", "add", "stdout"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("stdout nowhere anyone reads"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    detached.terminate();
    assert!(sb.sessionpipe(&["sink", "add", "stdout"]).status.success());
    let detached = sb.start_daemon();
    let status = String::from_utf8_lossy(&sb.sessionpipe(&["status"]).stdout).into_owned();
    assert!(
        status.contains("not sent: the running daemon's stdout"),
        "{status}"
    );
    detached.terminate();
    // A daemon in a pipe (`sessionpipe daemon | jq`): the events come out.
    let mut daemon = sb
        .command(sessionpipe_testkit::sandbox::bin("sessionpipe"))
        .arg("daemon")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let lines = std::io::BufReader::new(daemon.stdout.take().unwrap()).lines();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !sb.state.join("wake.sock").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let p = json!({"session_id": S, "transcript_path": "/nowhere.jsonl", "cwd": "/w", "hook_event_name": "UserPromptSubmit", "prompt": "go", "prompt_id": "p1"});
    assert!(
        sb.hook("claude-code", "UserPromptSubmit", p.to_string().as_bytes())
            .status
            .success()
    );
    let first: Value = serde_json::from_str(&lines.into_iter().next().unwrap().unwrap()).unwrap();
    assert_eq!(first["session"]["id"], S);
    let _ = daemon.kill();
    let _ = daemon.wait();
}
