//! The hook path, with the real binaries: whatever a harness hands the hook, it
//! exits 0 and prints nothing (but for the harnesses that parse stdout), and the
//! payloads that can be read become events, with or without a daemon running;
//! those of a session the daemon started over ACP go under the start's name.

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

/// A recorded Gemini CLI hook call (`conformance/harness/gemini-cli/<name>.json`)
/// as session `id`: its event, its stdin and the environment it ran with.
fn gemini_call(name: &str, id: &str) -> (String, Vec<u8>, Vec<(String, String)>) {
    const RECORDED: &str = "944abfd3-f0e4-4555-a23a-9172685971e3";
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/harness/gemini-cli")
        .join(format!("{name}.json"));
    let doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let input = &doc["input"];
    let stdin = input["stdin"].as_str().unwrap().replace(RECORDED, id);
    let env = input["env"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().replace(RECORDED, id)))
        .collect();
    (
        doc["event"].as_str().unwrap().to_string(),
        stdin.into_bytes(),
        env,
    )
}

/// Runs the recorded calls `names` of Gemini CLI as session `id`, with
/// `SESSIONPIPE_CONTROL_SESSION` set to `named` when given.
fn gemini_session(sb: &Sandbox, id: &str, named: Option<&str>, names: &[&str]) {
    for name in names {
        let (event, stdin, mut env) = gemini_call(name, id);
        if let Some(v) = named {
            env.push(("SESSIONPIPE_CONTROL_SESSION".into(), v.into()));
        }
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_invisible(&sb.hook_with("gemini-cli", &event, &stdin, &env), name);
    }
}

/// Each session's (type, seq) in append order, by session id.
fn by_session(events: &[Value]) -> std::collections::BTreeMap<String, Vec<(String, u64)>> {
    let mut out: std::collections::BTreeMap<String, Vec<(String, u64)>> = Default::default();
    for e in events {
        assert_eq!(e["harness"]["name"], "gemini-cli");
        out.entry(e["session"]["id"].as_str().unwrap().to_string())
            .or_default()
            .push((
                e["type"].as_str().unwrap().to_string(),
                e["session"]["seq"].as_u64().unwrap(),
            ));
    }
    out
}

/// ADAPTERS.md, Gemini CLI's Control row: a session the daemon started over
/// ACP fires Gemini CLI's hooks under Gemini CLI's own id, and its events go
/// under the start's name (what the start's ack names, `gemini-cli:<name>`).
/// The name is the agent's environment, else control's record of the start
/// (a hook the environment did not reach); a value of another harness, a
/// malformed one, or one a second session inherited names nothing.
#[test]
fn a_session_started_over_acp_reports_under_the_starts_name() {
    const NAME: &str = "7c1e2d3f-4a5b-4c6d-8e7f-a0b1c2d3e4f5";
    const RECORDED: &str = "0d9b6a52-8c4e-4f3a-9b1d-2e7f6a5c4b3d";
    let sb = Sandbox::new();
    // Control's record of a start over ACP (`control::acp`): its name, and
    // the id the agent gave the session.
    let outbox = sb.state.join("outbox.db");
    std::fs::create_dir_all(&sb.state).unwrap();
    use sessionpipe_core::control::store::{NamedSession, Store};
    let started = NamedSession {
        id: RECORDED.into(),
        how: "acp".into(),
        cwd: Some("/w".into()),
    };
    Store::open(&outbox)
        .unwrap()
        .name_session("gemini-cli", "recorded-start", &started, 1)
        .unwrap();
    let _daemon = sb.start_daemon();
    let whole = [
        "session-start",
        "before-agent",
        "after-agent",
        "session-end",
    ];
    let named = format!("gemini-cli:{NAME}");
    gemini_session(
        &sb,
        "11111111-1111-4111-8111-111111111111",
        Some(&named),
        &whole,
    );
    let claude = format!("claude-code:{NAME}");
    let start = ["session-start", "before-agent"];
    gemini_session(
        &sb,
        "22222222-2222-4222-8222-222222222222",
        Some(&claude),
        &start,
    );
    let bad = Some("gemini-cli:not a name");
    gemini_session(&sb, "33333333-3333-4333-8333-333333333333", bad, &start);
    gemini_session(&sb, RECORDED, None, &start);
    let events = sb.wait_for_events(10, Duration::from_secs(30));
    let started = |n: u64| -> Vec<(String, u64)> {
        [
            "session.started",
            "turn.started",
            "turn.ended",
            "session.ended",
        ][..n as usize]
            .iter()
            .zip(1..)
            .map(|(t, seq)| (t.to_string(), seq))
            .collect()
    };
    let sessions = by_session(&events);
    assert_eq!(
        sessions.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "22222222-2222-4222-8222-222222222222",
            "33333333-3333-4333-8333-333333333333",
            NAME,
            "recorded-start",
        ],
        "{events:#?}"
    );
    assert_eq!(sessions[NAME], started(4), "in order, its start first");
    assert_eq!(sessions["recorded-start"], started(2));
    assert_eq!(sessions["22222222-2222-4222-8222-222222222222"], started(2));
    assert_eq!(sessions["33333333-3333-4333-8333-333333333333"], started(2));
    // The call's own facts go with it under the name: the folder it names.
    let first = events.iter().find(|e| e["session"]["id"] == NAME).unwrap();
    assert_eq!(
        first["session"]["cwd"],
        "/tmp/sp-test-cBxrtL/home/work/project"
    );

    // A Gemini CLI the session started from its shell inherits the
    // variable: it is another session, under its own id, and the named one
    // is left as it was.
    let nested = "44444444-4444-4444-8444-444444444444";
    gemini_session(&sb, nested, Some(&named), &start);
    let events = sb.wait_for_events(12, Duration::from_secs(30));
    let sessions = by_session(&events);
    assert_eq!(sessions[nested], started(2), "{events:#?}");
    assert_eq!(sessions[NAME], started(4));
    assert_eq!(events.len(), 12);
}
