//! Tier 2 with the real Copilot CLI and Droid: with transcripts on, every run's
//! turn reaches the outbox as one `turn.transcript` with the prompt's words and
//! the model's reply, read from the harness's own session log.
//!
//! Copilot writes its `events.jsonl` late: it queues its records (its hooks'
//! calls among them) and writes them once none came for 100 ms, so in
//! `copilot -p` the file is often not there yet when `agentStop` and even
//! `sessionEnd` fire. The daemon holds the Stop's turn until the file has
//! Copilot's own record of that `agentStop`. Several runs, with and without a
//! tool call, each in a session of its own: before that hold almost none of
//! them had its transcript. Droid writes its session file before its `Stop`;
//! its runs are checked the same way.
//!
//! Needs the harnesses from npm like `real_copilot_cli.rs` and `real_droid.rs`
//! (same skip/require rule).

use serde_json::Value;
use sessionpipe_testkit::Sandbox;
use sessionpipe_testkit::chat::{MockChat, Step};
use std::process::Stdio;
use std::time::Duration;

/// Turns `transcripts` on in the running daemon (it follows config.json).
fn transcripts_on(sb: &Sandbox) {
    let out = sb.sessionpipe(&["config", "set", "transcripts", "true"]);
    assert!(out.status.success(), "{out:?}");
}

/// The id of the `n`th session (from 0) the outbox has a start of, waited for.
fn nth_session(sb: &Sandbox, n: usize) -> String {
    let started = |evs: &[Value]| -> Vec<String> {
        evs.iter()
            .filter(|e| e["type"] == "session.started")
            .map(|e| e["session"]["id"].as_str().unwrap().to_string())
            .collect()
    };
    let evs = sb.wait_until(Duration::from_secs(30), |evs| started(evs).len() > n);
    started(&evs)
        .get(n)
        .cloned()
        .unwrap_or_else(|| panic!("no session {n}: {evs:#?}"))
}

/// The session's `turn.transcript` once it ended: exactly one, after its
/// turn's end, with `user` and `assistant`.
fn assert_one_transcript(sb: &Sandbox, session: &str, user: &str, assistant: &str) {
    let ours = |evs: &[Value]| -> Vec<Value> {
        evs.iter()
            .filter(|e| e["session"]["id"] == session)
            .cloned()
            .collect()
    };
    let has = |evs: &[Value], kind: &str| evs.iter().any(|e| e["type"] == kind);
    // The held turn's longest wait is 5.4 s.
    let evs = ours(&sb.wait_until(Duration::from_secs(30), |evs| {
        let evs = ours(evs);
        has(&evs, "session.ended") && has(&evs, "turn.transcript")
    }));
    let kinds: Vec<&str> = evs.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let transcripts: Vec<&Value> = evs
        .iter()
        .filter(|e| e["type"] == "turn.transcript")
        .collect();
    assert_eq!(transcripts.len(), 1, "{kinds:?}");
    let at = |kind: &str| kinds.iter().position(|k| *k == kind).unwrap();
    assert!(at("turn.ended") < at("turn.transcript"), "{kinds:?}");
    let data = &transcripts[0]["data"];
    assert_eq!(
        (
            data["turn"].as_u64(),
            data["user"].as_str(),
            data["assistant"].as_str()
        ),
        (Some(1), Some(user), Some(assistant)),
        "{kinds:?}"
    );
}

#[test]
fn every_real_copilot_run_has_its_turn_transcript() {
    let Some(s) = crate::real_copilot_cli::setup() else {
        return;
    };
    transcripts_on(&s.sb);
    for run in 0..4 {
        let prompt = format!("Tell me about run {run}, please.");
        let reply = format!("Run {run} went well.");
        // Every other run calls a tool before it answers.
        let steps = match run % 2 {
            0 => vec![Step::text(&reply)],
            _ => vec![Step::bash("echo hello"), Step::text(&reply)],
        };
        let api = MockChat::start(steps);
        let out = s.run(&api, &prompt, &["--allow-all-tools"]);
        assert!(
            out.status.success() && String::from_utf8_lossy(&out.stdout).contains(&reply),
            "copilot failed: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let session = nth_session(&s.sb, run);
        assert_one_transcript(&s.sb, &session, &prompt, &reply);
    }
}

#[test]
fn every_real_droid_exec_run_has_its_turn_transcript() {
    let reply = "It printed hello.";
    let api = MockChat::start(vec![
        crate::real_droid::execute("echo hello", "low"),
        Step::text(reply),
    ]);
    let Some(s) = crate::real_droid::setup(&api) else {
        return;
    };
    transcripts_on(&s.sb);
    for run in 0..3 {
        let prompt = format!("Run echo hello for run {run}.");
        let out = s
            .command()
            .args(["exec", "-m", crate::real_droid::MODEL, &prompt])
            .stdin(Stdio::null())
            .output()
            .expect("droid runs");
        assert!(
            out.status.success(),
            "droid failed: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let session = nth_session(&s.sb, run);
        assert_one_transcript(&s.sb, &session, &prompt, reply);
    }
}
