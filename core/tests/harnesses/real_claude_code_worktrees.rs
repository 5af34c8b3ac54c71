//! A started session's own worktree (`control worktrees on`) on the real
//! Claude Code, offline: the machine paired with the workspace receiver, the
//! start signed for real, the real daemon running the real `claude -p`
//! against a scripted Anthropic API, in a real git repository. The file the
//! model makes lands in the session's worktree beside the checkout (the
//! control folders admit it there), on `sessionpipe/<short id>`, not in the
//! checkout; the session's events carry the worktree and its branch (what
//! the board shows); a follow-up prompt resumes it in the same worktree.
//! Once its session ended and its work is merged, `worktrees prune` removes
//! it and its branch; a second session's worktree with an uncommitted file
//! is kept, and the output says why.

use super::real_claude_code_runs::{setup, uuid};
use serde_json::{Value, json};
use sessionpipe_testkit::git::git;
use sessionpipe_testkit::{MockAnthropic, Sandbox, Script, Turn};
use std::time::Duration;

/// Lets the sandbox's Claude Code run `touch` without asking (the person's
/// own rule, which a `safe` run keeps), next to the hooks `install` wrote.
fn allow_touch(sb: &Sandbox) {
    let settings = sb.home.join(".claude/settings.json");
    let mut s: Value = serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
    s["permissions"] = json!({"allow": ["Bash(touch:*)"]});
    std::fs::write(&settings, s.to_string()).unwrap();
}

/// The session's record in `worktrees list --json`.
fn listed(sb: &Sandbox, session: &str) -> Value {
    let all: Value =
        serde_json::from_str(&sb.sessionpipe_ok(&["worktrees", "list", "--json"])).unwrap();
    all["worktrees"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["session"] == session)
        .cloned()
        .unwrap_or(Value::Null)
}

/// Waits until the outbox says the session ended.
fn wait_ended(sb: &Sandbox, session: &str) {
    let until = std::time::Instant::now() + Duration::from_secs(30);
    while listed(sb, session)["state"] != "ended" {
        assert!(
            std::time::Instant::now() < until,
            "the session never ended: {}",
            listed(sb, session)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_started_session_works_in_its_own_worktree_which_prune_removes_once_ended_and_merged() {
    let Some(claude) = sessionpipe_testkit::harnesses::claude() else {
        return;
    };
    let api = MockAnthropic::start(Script::new([
        Turn::bash("touch note.txt"),
        Turn::text("Made the note."),
        Turn::bash("touch second.txt"),
        Turn::text("Made the second one."),
    ]));
    let s = setup(&claude, &api);
    allow_touch(&s.sb);
    std::fs::write(s.project.join("README"), "the project\n").unwrap();
    git(&s.project, &["init", "-q", "-b", "main"]);
    git(&s.project, &["add", "."]);
    git(&s.project, &["commit", "-q", "-m", "first"]);
    let project = std::fs::canonicalize(&s.project).unwrap();
    let work = project.parent().unwrap().to_path_buf();
    // The whole of ~/work is a control folder: the worktree goes beside the
    // checkout. Both settings are read live by the running daemon.
    s.sb.sessionpipe_ok(&["control", "folders", "add", work.to_str().unwrap()]);
    assert_eq!(
        s.sb.sessionpipe_ok(&["control", "worktrees", "on"]),
        "worktrees: on\n"
    );

    let id = uuid();
    let short: String = id
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(8)
        .collect();
    let session = format!("claude-code:{id}");
    let worktree = work.join("project.worktrees").join(&short);
    let branch = format!("sessionpipe/{short}");
    let msg = s.device.enqueue(
        &s.device
            .sign_start(&session, "Make a note.", &s.project, &[]),
        600,
    );
    let ack = s.device.final_ack(&msg, Duration::from_secs(120));
    assert_eq!(
        (ack["outcome"].as_str(), ack["reply"].as_str()),
        (Some("delivered"), Some("Made the note.")),
        "{ack}"
    );
    assert!(
        worktree.join("note.txt").is_file(),
        "the model's file is in the worktree"
    );
    assert!(
        !project.join("note.txt").exists(),
        "and not in the checkout"
    );
    assert_eq!(
        git(&worktree, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        branch
    );
    assert_eq!(
        git(&project, &["status", "--porcelain"]),
        "",
        "the checkout is clean"
    );
    // What the board shows: the session's folder is the worktree, its branch
    // the session's own.
    let events = s.sb.events();
    let started = events
        .iter()
        .find(|e| e["type"] == "session.started" && e["session"]["id"] == id.as_str())
        .expect("the session started");
    assert_eq!(
        (
            started["session"]["cwd"]
                .as_str()
                .map(|c| c.replace('~', s.sb.home.to_str().unwrap())),
            started["session"]["branch"].as_str()
        ),
        (
            Some(worktree.to_string_lossy().into_owned()),
            Some(branch.as_str())
        ),
        "{started}"
    );

    // A follow-up prompt resumes it in the same worktree.
    let msg = s.device.enqueue(
        &s.device
            .sign("prompt", &session, json!({"text": "One more file."})),
        600,
    );
    let ack = s.device.final_ack(&msg, Duration::from_secs(120));
    assert_eq!(
        (
            ack["outcome"].as_str(),
            ack["mode"].as_str(),
            ack["reply"].as_str()
        ),
        (
            Some("delivered"),
            Some("resume"),
            Some("Made the second one.")
        ),
        "{ack}"
    );
    assert!(worktree.join("second.txt").is_file());
    assert!(!project.join("second.txt").exists());

    // A second session (a new conversation: the script's first turn again)
    // leaves a file it never commits.
    let other_id = uuid();
    let other_short: String = other_id
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(8)
        .collect();
    let other = format!("claude-code:{other_id}");
    let other_tree = work.join("project.worktrees").join(&other_short);
    let msg = s.device.enqueue(
        &s.device
            .sign_start(&other, "Make a note too.", &s.project, &[]),
        600,
    );
    let ack = s.device.final_ack(&msg, Duration::from_secs(120));
    assert_eq!(ack["outcome"], "delivered", "{ack}");
    assert!(other_tree.join("note.txt").is_file());

    // Ended, but its files are uncommitted: kept, and said why.
    wait_ended(&s.sb, &session);
    wait_ended(&s.sb, &other);
    let first = listed(&s.sb, &session);
    assert_eq!(
        (first["branch"].as_str(), first["uncommitted"].as_u64()),
        (Some(branch.as_str()), Some(2)),
        "{first}"
    );
    let pruned = s.sb.sessionpipe_ok(&["worktrees", "prune"]);
    assert!(
        pruned.contains(&format!(
            "kept {}: 2 uncommitted change(s)",
            worktree.display()
        )),
        "{pruned}"
    );
    // Committed on its branch but in no other: still kept.
    git(&worktree, &["add", "-A"]);
    git(&worktree, &["commit", "-q", "-m", "the session's notes"]);
    let pruned = s.sb.sessionpipe_ok(&["worktrees", "prune", "--dry-run"]);
    assert!(
        pruned.contains(&format!(
            "kept {}: 1 commit(s) no other branch, tag or remote holds",
            worktree.display()
        )),
        "{pruned}"
    );
    // Merged into the checkout's branch: nothing is only there any more.
    git(&project, &["merge", "-q", "--ff-only", &branch]);
    let pruned = s.sb.sessionpipe_ok(&["worktrees", "prune"]);
    assert_eq!(
        pruned,
        format!(
            "removed {} and its branch {branch}\nkept {}: 1 uncommitted change(s)\n",
            worktree.display(),
            other_tree.display()
        )
    );
    assert!(!worktree.exists());
    assert!(project.join("note.txt").is_file(), "the merged work stays");
    let branches = git(&project, &["branch", "--list", "sessionpipe/*"]);
    assert!(!branches.contains(&branch), "{branches}");
    assert!(
        other_tree.join("note.txt").is_file(),
        "the kept one is untouched"
    );
    assert_eq!(listed(&s.sb, &session), Value::Null, "off the record");
    drop(s.rx);
}
