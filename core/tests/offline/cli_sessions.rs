//! Naming a session on the command line as a person does: the 8 characters
//! `tail` prints, or any unique start of an id, wherever a session is named
//! (`tail --session`, `forget`); nothing or several matching is said, never
//! guessed. `tail --harness` and `--all`, and a tool's command on a tier-3
//! line.

use serde_json::json;
use sessionpipe_testkit::Sandbox;

const A: &str = "10027113-0000-4000-8000-00000000000a";
const B: &str = "10027113-0000-4000-8000-00000000000b";
const C: &str = "7f1c2d3e-0000-4000-8000-00000000000c";

fn hook(sb: &Sandbox, session: &str, event: &str, extra: serde_json::Value) {
    let mut p = json!({"session_id": session, "transcript_path": "/nowhere.jsonl", "cwd": "/w",
        "hook_event_name": event});
    p.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    assert!(
        sb.hook("claude-code", event, p.to_string().as_bytes())
            .status
            .success()
    );
}

fn said(out: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_session_is_named_by_a_unique_start_and_never_guessed() {
    let sb = Sandbox::new();
    for s in [A, B, C] {
        hook(
            &sb,
            s,
            "UserPromptSubmit",
            json!({"prompt": "go", "prompt_id": "p1"}),
        );
    }
    hook(
        &sb,
        C,
        "PreToolUse",
        json!({"tool_name": "Bash", "tool_use_id": "t1", "tool_input": {"command": "cargo test -q"}}),
    );
    sb.wait_until(std::time::Duration::from_secs(20), |evs| {
        evs.iter().any(|e| e["type"] == "tool.started")
    });

    // The 8 characters tail prints name C alone.
    let out = sb.sessionpipe(&["tail", "--no-follow", "--session", "7f1c2d3e"]);
    let (text, err) = said(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        !text.is_empty() && text.lines().all(|l| l.contains(" 7f1c2d3e ")),
        "{text}"
    );
    assert!(
        text.contains("tool.started Bash cargo test -q"),
        "the command, at tier 3: {text}"
    );
    let low = said(&sb.sessionpipe(&["tail", "--no-follow", "--tier", "1", "--session", "7f1c"])).0;
    assert!(!low.contains("cargo test"), "not below tier 3: {low}");
    // A and B share their first 8: both named, neither taken.
    let out = sb.sessionpipe(&["tail", "--no-follow", "--session", "claude-code:10027113"]);
    let (text, err) = said(&out);
    assert!(!out.status.success());
    assert!(text.is_empty(), "{text}");
    assert!(
        err.contains("matches 2 sessions") && err.contains(A) && err.contains(B),
        "{err}"
    );
    let out = sb.sessionpipe(&["tail", "--no-follow", "--session", "ffff"]);
    assert!(!out.status.success());
    assert!(
        said(&out).1.contains("no session matches \"ffff\""),
        "{:?}",
        said(&out)
    );

    // forget by a start: that one session goes.
    let out = sb.sessionpipe(&["forget", "7f1c2d"]);
    assert!(
        said(&out).0.contains(&format!("forgot claude-code:{C}")),
        "{:?}",
        said(&out)
    );
    let out = sb.sessionpipe(&["forget", "10027113"]);
    assert!(!out.status.success(), "an ambiguous start forgets nothing");
    assert!(sb.events().iter().any(|e| e["session"]["id"] == A));

    // --harness: only that harness; a name it does not know is refused with the list.
    let out = sb.sessionpipe(&["tail", "--no-follow", "--harness", "claude-code", "--all"]);
    assert!(out.status.success(), "{:?}", said(&out));
    assert!(said(&out).0.lines().all(|l| l.contains(" claude-code ")));
    let out = sb.sessionpipe(&["tail", "--no-follow", "--harness", "codex"]);
    assert!(out.status.success());
    assert_eq!(said(&out).0, "", "no codex session");
    let out = sb.sessionpipe(&["tail", "--harness", "nonesuch"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(said(&out).1.contains("claude-code"), "{:?}", said(&out));
}
