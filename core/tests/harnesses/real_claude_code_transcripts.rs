//! Tier 2 with the real Claude Code: its own transcript becomes `turn.transcript`
//! events (the person's words and the agent's, a secret redacted on the machine),
//! and each tier sees only what it may: tier 1 no transcript, tier 0 no tools,
//! `--pii` no email. Facts from Claude Code's files fill the session block.
//!
//! Needs Claude Code from npm like `real_claude_code.rs` (same skip/require rule).

use serde_json::Value;
use sessionpipe_testkit::{MockAnthropic, Sandbox, Script, Turn, sandbox::bin};
use std::path::Path;
use std::time::Duration;

const TOKEN: &str = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";

fn claude(
    sb: &Sandbox,
    claude: &Path,
    api: &MockAnthropic,
    project: &Path,
    args: &[&str],
) -> Value {
    let out = sb
        .command(claude)
        .current_dir(project)
        .env("ANTHROPIC_BASE_URL", api.base_url())
        .env("ANTHROPIC_API_KEY", "sk-test-not-a-key")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("SHELL", "/bin/bash")
        .args(args)
        .args(["--output-format", "json", "--allowedTools", "Bash"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn transcripts_tiers_and_facts_from_a_real_claude_code() {
    let Some(claude_bin) = sessionpipe_testkit::harnesses::claude() else {
        return;
    };
    let sb = Sandbox::new();
    let project = sb.home.join("work/repo");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    std::fs::write(
        project.join(".git/config"),
        "[remote \"origin\"]\n\turl = https://ann:hunter2@github.com/ann/repo.git\n",
    )
    .unwrap();
    std::fs::write(project.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::create_dir_all(&sb.state).unwrap();
    std::fs::write(sb.state.join("config.json"), r#"{"transcripts": true}"#).unwrap();
    let path = sessionpipe_testkit::Sandbox::path_with(claude_bin.parent().unwrap());
    let out = sb
        .command(bin("sessionpipe"))
        .env("PATH", &path)
        .args(["install"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let _daemon = sb.start_daemon();

    let ask = format!("Use my token {TOKEN} and mail ann@example.com the listing, please.");
    let api = MockAnthropic::start(Script::new([
        Turn::bash("ls").after_saying("Let me look first."),
        Turn::text("Done: the folder is empty."),
    ]));
    let first = claude(&sb, &claude_bin, &api, &project, &["-p", &ask]);
    let session = first["session_id"].as_str().unwrap().to_string();
    // A resumed session's history already holds two assistant messages: the mock
    // answers past its script with its fallback text.
    let api = MockAnthropic::start(Script::new([]));
    claude(
        &sb,
        &claude_bin,
        &api,
        &project,
        &["-p", "Anything else?", "--continue"],
    );

    let events = sb.wait_until(Duration::from_secs(30), |evs| {
        evs.iter().filter(|e| e["type"] == "session.ended").count() >= 2
            && evs
                .iter()
                .filter(|e| e["type"] == "turn.transcript")
                .count()
                >= 2
    });
    let mine: Vec<&Value> = events
        .iter()
        .filter(|e| e["session"]["id"] == session.as_str())
        .collect();
    let kinds: Vec<&str> = mine.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let transcripts: Vec<&&Value> = mine
        .iter()
        .filter(|e| e["type"] == "turn.transcript")
        .collect();
    assert_eq!(transcripts.len(), 2, "{kinds:?}");

    let t1 = &transcripts[0]["data"];
    assert_eq!(t1["turn"], 1);
    let user = t1["user"].as_str().unwrap();
    assert!(
        !user.contains(TOKEN) && user.contains("[redacted]"),
        "{user}"
    );
    assert!(
        user.contains("ann@example.com"),
        "pii@1 is the sink's choice: {user}"
    );
    assert_eq!(
        t1["assistant"],
        "Let me look first.\n\nDone: the folder is empty."
    );
    let t2 = &transcripts[1]["data"];
    assert_eq!(
        (t2["turn"].as_u64(), t2["user"].as_str()),
        (Some(2), Some("Anything else?"))
    );
    assert_eq!(
        t2["assistant"],
        sessionpipe_testkit::anthropic::FALLBACK_TEXT
    );
    // Each transcript sits right after its turn's end.
    for t in &transcripts {
        let i = mine.iter().position(|e| e["id"] == t["id"]).unwrap();
        assert_eq!(mine[i - 1]["type"], "turn.ended", "{kinds:?}");
    }

    // Facts: the repository without its credentials, the branch, the model, the
    // title from the first ask (redacted too).
    let last = mine.last().unwrap();
    assert_eq!(last["session"]["repo"], "https://github.com/ann/repo.git");
    assert_eq!(last["session"]["branch"], "main");
    assert_eq!(last["session"]["model"], "claude-opus-5-5");
    assert_eq!(last["session"]["title_source"], "first-ask");
    let title = last["session"]["title"].as_str().unwrap();
    assert!(
        title.starts_with("Use my token") && !title.contains("ghp_"),
        "{title}"
    );

    let stored = std::fs::read(sb.state.join("outbox.db")).unwrap();
    assert!(
        !String::from_utf8_lossy(&stored).contains(TOKEN),
        "the token never reached the outbox"
    );

    let pii = sb.events_at(&["--tier", "2", "--pii", "--session", &session]);
    let pii_user = pii.iter().find(|e| e["type"] == "turn.transcript").unwrap()["data"]["user"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        pii_user.contains("[email]") && !pii_user.contains("ann@example.com"),
        "{pii_user}"
    );
    let tier1 = sb.events_at(&["--tier", "1", "--session", &session]);
    assert!(tier1.iter().all(|e| e["type"] != "turn.transcript"));
    assert!(tier1.iter().any(|e| e["type"] == "tool.started"));
    let tier0 = sb.events_at(&["--tier", "0", "--session", &session]);
    assert!(
        tier0
            .iter()
            .all(|e| !e["type"].as_str().unwrap().starts_with("tool."))
    );
    assert!(tier0.iter().all(|e| e["type"] != "turn.transcript"));
}
