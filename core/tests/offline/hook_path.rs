//! The hook path, with the real binaries: whatever a harness hands the hook, it
//! exits 0 and prints nothing (but for the harnesses that parse stdout), and the
//! payloads that can be read become events, with or without a daemon running.

use serde_json::{Value, json};
use sessionpipe_testkit::Sandbox;
use std::time::Duration;

const SESSION: &str = "3bd5639e-04f7-44e6-a4c2-2f9bb68adad6";

fn payload(event: &str, extra: Value) -> Vec<u8> {
    let mut p = json!({
        "session_id": SESSION,
        "transcript_path": "/nowhere/t.jsonl",
        "cwd": "/srv/project",
        "prompt_id": "p-1",
        "hook_event_name": event,
    });
    p.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let mut bytes = serde_json::to_vec(&p).unwrap();
    bytes.push(b'\n');
    bytes
}

fn assert_invisible(out: &std::process::Output, what: &str) {
    assert!(out.status.success(), "{what}: exit {:?}", out.status.code());
    assert!(
        out.stdout.is_empty(),
        "{what}: printed {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        out.stderr.is_empty(),
        "{what}: said {:?}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn hostile_stdin_is_invisible_and_later_hooks_still_become_events() {
    let sb = Sandbox::new();
    let _daemon = sb.start_daemon();
    let fifty_mb = vec![b'x'; 50 << 20];
    let binary: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
    let with_token =
        b"{\"session_id\": oops, \"token\": \"ghp_0123456789abcdefghijklmnopqrstuvwxyzAB\"";
    let hostile: [(&str, &[u8]); 5] = [
        ("empty", b""),
        ("not JSON", b"{\"session_id\": oops"),
        ("50 MB", &fifty_mb),
        ("binary", &binary),
        ("not JSON, with a token", with_token),
    ];
    for (what, stdin) in hostile {
        assert_invisible(&sb.hook("claude-code", "PreToolUse", stdin), what);
    }
    // A valid 50 MB payload is kept whole, and its tool output is cut to 64 KB.
    let huge = payload(
        "PostToolUse",
        json!({"tool_name": "Bash", "tool_use_id": "t-big", "tool_response": {"stdout": "y".repeat(50 << 20)}}),
    );
    assert_invisible(&sb.hook("claude-code", "PostToolUse", &huge), "valid 50 MB");
    assert_invisible(
        &sb.hook("claude-code", "Stop", &payload("Stop", json!({}))),
        "Stop",
    );

    let events = sb.wait_for_events(3, Duration::from_secs(60));
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["session.started", "tool.ended", "turn.ended"]);
    let out = events[1]["data"]["output"]
        .as_str()
        .expect("a cut output is a string");
    assert!(
        out.len() <= 64 * 1024 && out.ends_with("bytes]"),
        "{}",
        &out[out.len() - 40..]
    );

    // The five unreadable payloads are quarantined with their reasons: private,
    // the 50 MB one cut to its first 4 MiB, the token gone.
    sb.wait_idle(Duration::from_secs(10));
    let q = sb.state.join("spool/quarantine");
    let mut reasons: Vec<String> = std::fs::read_dir(&q)
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "reason"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    reasons.sort();
    assert_eq!(reasons.len(), 5, "{reasons:?}");
    assert!(reasons.iter().any(|r| r.contains("empty")), "{reasons:?}");
    assert!(
        reasons.iter().filter(|r| r.contains("not JSON")).count() >= 2,
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("kept its first 4194304 of")),
        "{reasons:?}"
    );
    let mut kept = 0;
    for e in std::fs::read_dir(&q).unwrap().flatten() {
        let bytes = std::fs::read(e.path()).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("ghp_0123"),
            "{}",
            e.path().display()
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = e.metadata().unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}", e.path().display());
        }
        if e.path().extension().is_some_and(|x| x == "job") {
            kept += bytes.len() as u64;
        }
    }
    let status: serde_json::Value =
        serde_json::from_slice(&sb.sessionpipe(&["status", "--json"]).stdout).unwrap();
    assert_eq!(status["spool"]["quarantined"], 5);
    assert_eq!(status["spool"]["quarantined_bytes"], kept);
    assert!(kept > 4 << 20 && kept < 5 << 20, "{kept}");
    let doctor = String::from_utf8_lossy(&sb.sessionpipe(&["doctor"]).stdout).into_owned();
    assert!(doctor.contains("5 hook calls were unreadable"), "{doctor}");
}

#[test]
fn without_a_daemon_the_hook_starts_a_worker_that_drains_and_exits() {
    let sb = Sandbox::new();
    for (i, event) in ["SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"]
        .iter()
        .enumerate()
    {
        let extra = json!({"source": "startup", "prompt": "hi", "reason": "exit", "n": i});
        assert_invisible(
            &sb.hook("claude-code", event, &payload(event, extra)),
            event,
        );
    }
    let events = sb.wait_for_events(4, Duration::from_secs(20));
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "session.started",
            "turn.started",
            "turn.ended",
            "session.ended"
        ]
    );
    let seqs: Vec<u64> = events
        .iter()
        .map(|e| e["session"]["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, [1, 2, 3, 4]);
    sb.wait_idle(Duration::from_secs(10));
    let status: Value =
        serde_json::from_slice(&sb.sessionpipe(&["status", "--json"]).stdout).unwrap();
    assert!(
        status["daemon"].is_null(),
        "the worker exits once idle: {status}"
    );
    assert_eq!(status["spool"]["pending"], 0);
}

#[test]
fn an_unwritable_state_dir_still_exits_zero_in_silence() {
    let sb = Sandbox::new();
    let mut c = sb.command(sessionpipe_testkit::sandbox::bin("sessionpipe-hook"));
    c.args(["claude-code", "Stop"])
        .env("SESSIONPIPE_STATE_DIR", "/proc/sessionpipe-cannot-be-here");
    let out = sessionpipe_testkit::sandbox::run_with_stdin(c, &payload("Stop", json!({})));
    assert_invisible(&out, "unwritable state dir");
}

#[test]
fn antigravity_is_answered_json_on_stdout() {
    let sb = Sandbox::new();
    let out = sb.hook("antigravity", "Stop", b"{}");
    assert!(out.status.success());
    assert_eq!(out.stdout, b"{}\n");
    let stale = sb.hook("antigravity", "PreToolUse", b"{}");
    let answer: Value = serde_json::from_slice(&stale.stdout).unwrap();
    assert_eq!(answer["decision"], "ask");
}

#[test]
fn a_second_daemon_refuses_to_start() {
    let sb = Sandbox::new();
    let first = sb.start_daemon();
    let second = sb.sessionpipe(&["daemon"]);
    assert_eq!(second.status.code(), Some(1));
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(
        said.contains("another sessionpipe daemon is running"),
        "{said}"
    );
    assert!(said.contains(&format!("pid {}", first.pid())), "{said}");
}

#[test]
fn the_environment_is_allowlisted_never_copied_whole() {
    let sb = Sandbox::new();
    let env = [
        ("ANTHROPIC_API_KEY", "sk-ant-secret-value"),
        (
            "CLAUDE_CODE_MESSAGING_TOKEN",
            "0123456789abcdef0123456789abcdef",
        ),
        ("CLAUDE_CODE_SESSION_ATTENDED", "1"),
        // No worker can start, so the job stays in the spool to be looked at.
        ("SESSIONPIPE_BIN", "/nonexistent/sessionpipe"),
    ];
    let out = sb.hook_with("claude-code", "Stop", &payload("Stop", json!({})), &env);
    assert_invisible(&out, "Stop");
    assert_eq!(sb.spooled(), 1);
    let spool = sb.state.join("spool");
    let job = std::fs::read_dir(&spool)
        .unwrap()
        .flatten()
        .find(|e| e.path().extension().is_some_and(|x| x == "job"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .unwrap();
    assert!(job.contains("CLAUDE_CODE_SESSION_ATTENDED"));
    assert!(
        !job.contains("sk-ant-secret-value") && !job.contains("MESSAGING_TOKEN"),
        "{job}"
    );

    let _daemon = sb.start_daemon();
    let events = sb.wait_for_events(2, Duration::from_secs(20));
    assert_eq!(events[1]["type"], "turn.ended");
    assert_eq!(events[1]["session"]["attended"], true);
    assert_eq!(sb.spooled(), 0);
}
