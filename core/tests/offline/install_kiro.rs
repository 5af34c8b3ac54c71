//! `sessionpipe install | uninstall | status` for Kiro: a file of our own in
//! `~/.kiro/hooks/` beside the person's, in Kiro's v1 schema; the person's
//! files never touched, a hook they add to ours kept, a file that is not plain
//! JSON skipped; and a payload of the documented shape through the installed
//! hook. No Kiro runs here: the file and payloads are Kiro's documented shapes.

use serde_json::{Value, json};
use sessionpipe_testkit::{Sandbox, sandbox::bin};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

const THEIRS: &str = "{\n  \"version\": \"v1\",\n  \"hooks\": [\n    {\"name\": \"lint-on-save\", \"trigger\": \"PostFileSave\", \"matcher\": \"\\\\.ts$\", \"action\": {\"type\": \"command\", \"command\": \"npm run lint\"}, \"timeout\": 30, \"enabled\": true}\n  ]\n}\n";

fn ours(sb: &Sandbox) -> PathBuf {
    sb.home.join(".kiro/hooks/sessionpipe.json")
}

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

fn run(sb: &Sandbox, args: &[&str]) -> (String, Output) {
    let out = sb
        .command(bin("sessionpipe"))
        .env("PATH", "/nonexistent")
        .args(args)
        .output()
        .unwrap();
    (String::from_utf8_lossy(&out.stdout).into_owned(), out)
}

#[test]
fn a_file_of_our_own_beside_theirs_and_gone_again() {
    let sb = Sandbox::new();
    let mine = sb.home.join(".kiro/hooks/lint.json");
    write(&mine, THEIRS);
    let (said, out) = run(&sb, &["install", "--harness", "kiro"]);
    assert!(out.status.success(), "{said}");
    assert_eq!(said, "kiro: installed (~/.kiro/hooks/sessionpipe.json)\n");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no hook when a session ends"));
    let v: Value = serde_json::from_str(&read(&ours(&sb))).unwrap();
    assert_eq!(v["version"], "v1");
    let hook = std::fs::canonicalize(bin("sessionpipe-hook")).unwrap();
    let hooks = v["hooks"].as_array().unwrap();
    let triggers: Vec<&str> = hooks
        .iter()
        .map(|h| h["trigger"].as_str().unwrap())
        .collect();
    assert_eq!(
        triggers,
        [
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "Stop",
            "PostFileSave"
        ]
    );
    for h in hooks {
        let t = h["trigger"].as_str().unwrap();
        assert_eq!(
            h["action"],
            json!({"type": "command", "command": format!("\"{}\" kiro {t}", hook.display())})
        );
        assert_eq!((&h["timeout"], &h["enabled"]), (&json!(5), &json!(true)));
    }
    assert_eq!(read(&mine), THEIRS);
    let (said, _) = run(&sb, &["status"]);
    assert!(
        said.contains("kiro: current (~/.kiro/hooks/sessionpipe.json)"),
        "{said}"
    );

    let (said, _) = run(&sb, &["uninstall", "--harness", "kiro"]);
    assert_eq!(said, "kiro: removed (~/.kiro/hooks/sessionpipe.json)\n");
    assert!(!ours(&sb).exists(), "a file that was all ours is removed");
    assert_eq!(read(&mine), THEIRS);
    let (said, _) = run(&sb, &["status"]);
    assert!(said.contains("kiro: hooks not installed"), "{said}");
}

#[test]
fn a_hook_the_person_adds_to_ours_is_kept_and_an_old_build_is_outdated() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.home.join(".kiro")).unwrap();
    let old = sb.root().join("old/sessionpipe-hook");
    std::fs::create_dir_all(old.parent().unwrap()).unwrap();
    std::fs::copy(bin("sessionpipe-hook"), &old).unwrap();
    let out = sb
        .command(bin("sessionpipe"))
        .env("PATH", "/nonexistent")
        .env("SESSIONPIPE_HOOK_BIN", &old)
        .args(["install", "--harness", "kiro"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let (said, _) = run(&sb, &["status"]);
    assert!(
        said.contains("kiro: outdated (") && said.contains("0 of 6 events current"),
        "{said}"
    );
    let (said, _) = run(&sb, &["install", "--harness", "kiro"]);
    assert!(said.starts_with("kiro: installed"), "{said}");
    assert!(!read(&ours(&sb)).contains("/old/"));

    let edited = read(&ours(&sb)).replacen(
        "\"hooks\": [",
        "\"hooks\": [{\"name\": \"notes\", \"trigger\": \"Stop\", \"action\": {\"type\": \"agent\", \"prompt\": \"Summarise\"}},",
        1,
    );
    std::fs::write(ours(&sb), &edited).unwrap();
    run(&sb, &["uninstall", "--harness", "kiro"]);
    let left: Value = serde_json::from_str(&read(&ours(&sb))).unwrap();
    assert_eq!(
        left,
        json!({"version": "v1", "hooks": [{"name": "notes", "trigger": "Stop", "action": {"type": "agent", "prompt": "Summarise"}}]})
    );
}

#[test]
fn a_file_that_is_not_plain_json_is_left_alone() {
    let sb = Sandbox::new();
    let commented = "{\n  // by hand\n  \"version\": \"v1\",\n  \"hooks\": []\n}\n";
    write(&ours(&sb), commented);
    let (said, _) = run(&sb, &["install", "--harness", "kiro"]);
    assert!(
        said.starts_with("kiro: skipped (~/.kiro/hooks/sessionpipe.json: not plain JSON"),
        "{said}"
    );
    let (said, _) = run(&sb, &["uninstall", "--harness", "kiro"]);
    assert!(said.starts_with("kiro: skipped"), "{said}");
    assert_eq!(read(&ours(&sb)), commented);
}

#[test]
fn not_found_without_its_folder_or_cli() {
    let sb = Sandbox::new();
    let (said, _) = run(&sb, &["install", "--harness", "kiro"]);
    assert_eq!(
        said,
        "kiro: not found (looked for ~/.kiro and `kiro-cli` or `kiro` on PATH)\n"
    );
    assert!(!sb.home.join(".kiro").exists());
}

/// Documented-shape payloads through the hook: nothing printed, a saved file
/// relative to the folder, and no `session.ended` ever (Kiro sends no end).
#[test]
fn payloads_of_the_documented_shape_become_events_and_print_nothing() {
    let sb = Sandbox::new();
    let cwd = sb.root().join("proj");
    let sid = "4f2c9d1e-8a7b-4c3d-9e0f-1a2b3c4d5e6f";
    let call = |event: &str, extra: Value| {
        let mut p = json!({"hook_event_name": event, "session_id": sid, "cwd": cwd});
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let out = sb.hook("kiro", event, p.to_string().as_bytes());
        assert!(out.status.success());
        assert!(out.stdout.is_empty(), "{event} printed {:?}", out.stdout);
    };
    call("SessionStart", json!({}));
    call("UserPromptSubmit", json!({"prompt": "add a test"}));
    call("PostFileSave", json!({"file_path": cwd.join("src/lib.rs")}));
    call("Stop", json!({}));
    let events = sb.wait_for_events(4, Duration::from_secs(20));
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "session.started",
            "turn.started",
            "files.changed",
            "turn.ended"
        ]
    );
    assert_eq!(events[2]["data"]["paths"], json!(["src/lib.rs"]));
}
