//! Naming a session on the command line as a person does: the 8 characters
//! `tail` prints, or any unique start of an id, wherever a session is named
//! (`tail --session`, `forget`); nothing or several matching is said, never
//! guessed. `tail --harness` and `--all`, a tool's command on a tier-3
//! line, and `tail -n` read back from the end.

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

/// `tail -n N` prints the newest N events the tail shows (at its tier, of its
/// harness or session), read back from the end of the outbox in batches;
/// without `-n`, `--no-follow` prints everything; following goes on after
/// the newest.
#[test]
fn tail_n_prints_the_newest_it_shows_and_follows_on_from_there() {
    use sessionpipe_core::pipeline::outbox::Outbox;
    use sessionpipe_core::pipeline::session::{Stamp, envelope};
    use sessionpipe_core::protocol::{
        EventData, SessionBlock, ToolStarted, TurnEndReason, TurnEnded,
    };
    use std::io::BufRead;

    let sb = Sandbox::new();
    let path = sessionpipe_core::spool::StatePaths::new(&sb.state).outbox();
    std::fs::create_dir_all(&sb.state).unwrap();
    let mut ob = Outbox::open(&path).unwrap();
    let block = SessionBlock::default();
    // (harness, session, i, type) of each event, in append order.
    let mut all = Vec::new();
    let append = |ob: &mut Outbox, all: &mut Vec<(String, String, i64, &str)>, i: i64| {
        let (harness, session) = if i % 3 == 0 {
            ("codex", C)
        } else {
            ("claude-code", A)
        };
        let stamp = Stamp {
            harness,
            harness_event: None,
            version: None,
            session_id: session,
            block: &block,
            time_ms: 1_796_000_000_000 + i,
        };
        let data = if i % 7 == 0 {
            EventData::TurnEnded(TurnEnded::new(Some(format!("t{i}")), TurnEndReason::Stop))
        } else {
            EventData::ToolStarted(ToolStarted {
                tool: "Bash".into(),
                call_id: Some(format!("t{i}")),
                ..Default::default()
            })
        };
        let kind = data.kind();
        ob.append(&mut envelope(&stamp, 0, data)).unwrap();
        all.push((harness.to_string(), session.to_string(), i, kind));
    };
    for i in 0..1300 {
        append(&mut ob, &mut all, i);
    }
    let shown = |extra: &[&str]| -> Vec<i64> {
        sb.events_at(extra)
            .iter()
            .map(|e| {
                let id = e["data"]["turn_id"]
                    .as_str()
                    .or(e["data"]["call_id"].as_str());
                id.unwrap()[1..].parse().unwrap()
            })
            .collect()
    };
    type Kept<'a> = (String, String, i64, &'a str);
    let newest = |n: usize, keep: &dyn Fn(&Kept) -> bool| -> Vec<i64> {
        let v: Vec<i64> = all.iter().filter(|e| keep(e)).map(|e| e.2).collect();
        v[v.len().saturating_sub(n)..].to_vec()
    };
    assert_eq!(shown(&["-n", "5"]), [1295, 1296, 1297, 1298, 1299]);
    assert_eq!(shown(&[]).len(), 1300, "without -n: everything");
    assert!(shown(&["-n", "0"]).is_empty());
    // At tier 0 a tool call is not shown: 120 turn ends go back over 800
    // events, more than one read back.
    assert_eq!(
        shown(&["-n", "120", "--tier", "0"]),
        newest(120, &|e| e.3 == "turn.ended")
    );
    assert_eq!(
        shown(&["-n", "700", "--harness", "claude-code"]),
        newest(700, &|e| e.0 == "claude-code")
    );
    assert_eq!(
        shown(&["-n", "4", "--session", "7f1c2d3e"]),
        newest(4, &|e| e.1 == C)
    );
    assert_eq!(
        shown(&["-n", "10000", "--session", C]),
        newest(10_000, &|e| e.1 == C),
        "fewer than asked: all of them"
    );

    // Following: the newest 2, then what comes.
    let mut tail = sb
        .command(sessionpipe_testkit::sandbox::bin("sessionpipe"))
        .args(["tail", "--json", "-n", "2"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(tail.stdout.take().unwrap()).lines();
    let mut next = || -> i64 {
        let e: serde_json::Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        e["data"]["call_id"]
            .as_str()
            .or(e["data"]["turn_id"].as_str())
            .unwrap()[1..]
            .parse()
            .unwrap()
    };
    assert_eq!((next(), next()), (1298, 1299));
    append(&mut ob, &mut all, 1300);
    append(&mut ob, &mut all, 1301);
    assert_eq!((next(), next()), (1300, 1301));
    let _ = tail.kill();
    let _ = tail.wait();
}
