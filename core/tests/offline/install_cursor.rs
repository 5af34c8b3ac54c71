//! `sessionpipe install | uninstall | status` for Cursor on realistic
//! `~/.cursor/hooks.json` files (another tool's handlers, tabs, CRLF,
//! comments, a symlink, a read-only file), and a payload of the documented
//! shape through the installed hook. No Cursor runs here: the hooks file and
//! the payload are Cursor's hooks reference's shapes.

use serde_json::{Value, json};
use sessionpipe_testkit::{Sandbox, sandbox::bin};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

/// A hooks file as a person has one: a formatter after edits and a gate on
/// shell commands, tab-indented, CRLF.
const THEIRS: &str = "{\r\n\t\"version\": 1,\r\n\t\"hooks\": {\r\n\t\t\"afterFileEdit\": [{\"command\": \"./hooks/format.sh\"}],\r\n\t\t\"beforeShellExecution\": [{\"command\": \"./hooks/approve.sh\", \"matcher\": \"curl|wget\"}]\r\n\t}\r\n}\r\n";

fn file(sb: &Sandbox) -> PathBuf {
    sb.home.join(".cursor/hooks.json")
}

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

/// `sessionpipe ARGS` with nothing on `PATH`: Cursor is found by its folder.
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
fn theirs_are_kept_and_uninstall_gives_the_bytes_back() {
    let sb = Sandbox::new();
    write(&file(&sb), THEIRS);
    let (said, out) = run(&sb, &["install", "--harness", "cursor"]);
    assert!(out.status.success(), "{said}");
    assert_eq!(said, "cursor: installed (~/.cursor/hooks.json)\n");
    let text = read(&file(&sb));
    assert!(!text.replace("\r\n", "").contains('\n'), "CRLF kept");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["version"], 1);
    let hooks = v["hooks"].as_object().unwrap();
    let hook = std::fs::canonicalize(bin("sessionpipe-hook")).unwrap();
    assert_eq!(
        hooks["afterFileEdit"],
        json!([{"command": "./hooks/format.sh"},
               {"command": format!("\"{}\" cursor afterFileEdit", hook.display()), "timeout": 5}])
    );
    assert_eq!(
        hooks["beforeShellExecution"].as_array().unwrap().len(),
        1,
        "not ours to gate"
    );
    for event in [
        "sessionStart",
        "beforeSubmitPrompt",
        "preToolUse",
        "postToolUse",
        "postToolUseFailure",
        "subagentStart",
        "subagentStop",
        "preCompact",
        "stop",
        "sessionEnd",
    ] {
        assert_eq!(hooks[event].as_array().map(Vec::len), Some(1), "{event}");
    }
    assert_eq!(hooks["stop"][0]["loop_limit"], Value::Null);
    assert!(
        hooks["stop"][0]
            .as_object()
            .unwrap()
            .contains_key("loop_limit")
    );

    let (said, _) = run(&sb, &["install", "--harness", "cursor"]);
    assert_eq!(said, "cursor: current (~/.cursor/hooks.json)\n");
    let (said, _) = run(&sb, &["status"]);
    assert!(
        said.contains("cursor: current (~/.cursor/hooks.json)"),
        "{said}"
    );

    let (said, out) = run(&sb, &["uninstall", "--harness", "cursor"]);
    assert!(out.status.success());
    assert_eq!(said, "cursor: removed (~/.cursor/hooks.json)\n");
    assert_eq!(read(&file(&sb)), THEIRS, "byte for byte");
    let (said, _) = run(&sb, &["status"]);
    assert!(said.contains("cursor: hooks not installed"), "{said}");
}

#[test]
fn a_file_we_made_goes_and_an_edit_keeps_only_the_persons_part() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.home.join(".cursor")).unwrap();
    run(&sb, &["install", "--harness", "cursor"]);
    let text = read(&file(&sb));
    assert!(
        text.starts_with("{\n  \"version\": 1,\n  \"hooks\": {"),
        "{text}"
    );
    run(&sb, &["uninstall", "--harness", "cursor"]);
    assert!(!file(&sb).exists(), "the file we created is gone");

    run(&sb, &["install", "--harness", "cursor"]);
    let edited = read(&file(&sb)).replacen(
        "\"stop\": [",
        "\"stop\": [{\"command\": \"./hooks/audit.sh\"},",
        1,
    );
    std::fs::write(file(&sb), &edited).unwrap();
    run(&sb, &["uninstall", "--harness", "cursor"]);
    let left: Value = serde_json::from_str(&read(&file(&sb))).unwrap();
    assert_eq!(
        left,
        json!({"version": 1, "hooks": {"stop": [{"command": "./hooks/audit.sh"}]}})
    );
}

#[test]
fn comments_a_read_only_file_and_a_symlink() {
    let sb = Sandbox::new();
    let commented = "{\n  // my hooks\n  \"version\": 1,\n  \"hooks\": {}\n}\n";
    write(&file(&sb), commented);
    let (said, _) = run(&sb, &["install", "--harness", "cursor"]);
    assert!(
        said.starts_with("cursor: skipped (~/.cursor/hooks.json: not plain JSON"),
        "{said}"
    );
    assert_eq!(read(&file(&sb)), commented);

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        write(&file(&sb), THEIRS);
        std::fs::set_permissions(file(&sb), std::fs::Permissions::from_mode(0o444)).unwrap();
        let (said, _) = run(&sb, &["install", "--harness", "cursor"]);
        assert!(
            said.contains("skipped") && said.contains("read-only"),
            "{said}"
        );
        assert_eq!(read(&file(&sb)), THEIRS);
        std::fs::set_permissions(file(&sb), std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::remove_file(file(&sb)).unwrap();

        // A dotfiles repository's file, linked in: written through, the link kept.
        let real = sb.root().join("dotfiles/cursor-hooks.json");
        write(&real, THEIRS);
        std::os::unix::fs::symlink(&real, file(&sb)).unwrap();
        let (said, _) = run(&sb, &["install", "--harness", "cursor"]);
        assert_eq!(said, "cursor: installed (~/.cursor/hooks.json)\n");
        assert!(
            std::fs::symlink_metadata(file(&sb))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert!(read(&real).contains("cursor stop"));
        run(&sb, &["uninstall", "--harness", "cursor"]);
        assert!(
            std::fs::symlink_metadata(file(&sb))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(read(&real), THEIRS);
    }
}

#[test]
fn not_found_without_its_folder_or_cli() {
    let sb = Sandbox::new();
    let (said, out) = run(&sb, &["install", "--harness", "cursor"]);
    assert!(out.status.success());
    assert_eq!(
        said,
        "cursor: not found (looked for ~/.cursor and `cursor-agent` or `cursor` on PATH)\n"
    );
    assert!(!sb.home.join(".cursor").exists());
}

/// A documented-shape payload through the hook: the observer hook prints
/// nothing and the edit arrives as a workspace-relative `files.changed`.
#[test]
fn a_payload_of_the_documented_shape_becomes_events_and_prints_nothing() {
    let sb = Sandbox::new();
    let ws = sb.root().join("proj");
    let conv = "0b9a5f3c-2d4e-4a61-9c7b-5e8f1a2b3c4d";
    let call = |event: &str, extra: Value| {
        let mut p = json!({"conversation_id": conv, "generation_id": "g-1", "hook_event_name": event,
            "workspace_roots": [ws], "transcript_path": null, "cursor_version": "2.1.0"});
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let out = sb.hook("cursor", event, p.to_string().as_bytes());
        assert!(out.status.success());
        assert!(out.stdout.is_empty(), "{event} printed {:?}", out.stdout);
    };
    call("sessionStart", json!({"session_id": conv}));
    call("beforeSubmitPrompt", json!({"prompt": "fix it"}));
    call(
        "afterFileEdit",
        json!({"file_path": ws.join("src/main.ts")}),
    );
    call("stop", json!({"status": "completed", "loop_count": 0}));
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
    assert_eq!(events[2]["data"]["paths"], json!(["src/main.ts"]));
    assert_eq!(events[3]["data"]["turn_id"], "g-1");
}
