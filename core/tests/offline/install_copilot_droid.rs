//! Copilot CLI's and Droid's installers through the real binaries, on realistic
//! files: `~/.copilot/hooks/sessionpipe.json` (a file of our own, in the
//! `{"version": 1, "hooks": {...}}` shape Copilot reads) and `~/.factory/hooks.json`
//! (Droid's, shared with the person's hooks, the event names at the top level).
//! Foreign hooks are kept, a file that is not plain JSON is skipped and left
//! byte-identical, uninstall gives the original bytes back, a symlinked file is
//! written through its link and a read-only one is left alone.

use serde_json::{Value, json};
use sessionpipe_testkit::{Sandbox, sandbox::bin};
use std::path::{Path, PathBuf};
use std::process::Output;

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

/// `sessionpipe ARGS` with a `PATH` holding no harness.
fn run(sb: &Sandbox, args: &[&str]) -> (String, Output) {
    let empty = sb.root().join("no-bin");
    std::fs::create_dir_all(&empty).unwrap();
    let out = sb
        .command(bin("sessionpipe"))
        .env("PATH", &empty)
        .args(args)
        .output()
        .unwrap();
    (String::from_utf8_lossy(&out.stdout).into_owned(), out)
}

fn copilot_file(sb: &Sandbox) -> PathBuf {
    sb.home.join(".copilot/hooks/sessionpipe.json")
}

fn droid_file(sb: &Sandbox) -> PathBuf {
    sb.home.join(".factory/hooks.json")
}

// ---------------------------------------------------------------- Copilot CLI

#[test]
fn copilot_gets_a_file_of_its_own_and_loses_it_again() {
    let sb = Sandbox::new();
    let (said, _) = run(&sb, &["install", "--harness", "copilot-cli"]);
    assert_eq!(
        said,
        "copilot-cli: not found (looked for ~/.copilot and `copilot` on PATH)\n"
    );
    std::fs::create_dir_all(sb.home.join(".copilot")).unwrap();
    let (said, out) = run(&sb, &["install", "--harness", "copilot-cli"]);
    assert!(out.status.success(), "{said}");
    assert_eq!(
        said,
        "copilot-cli: installed (~/.copilot/hooks/sessionpipe.json)\n"
    );
    let v: Value = serde_json::from_str(&read(&copilot_file(&sb))).unwrap();
    assert_eq!(v["version"], 1);
    let hooks = v["hooks"].as_object().unwrap();
    let mut names: Vec<&str> = hooks.keys().map(String::as_str).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "agentStop",
            "errorOccurred",
            "notification",
            "postToolUse",
            "postToolUseFailure",
            "preCompact",
            "preToolUse",
            "sessionEnd",
            "sessionStart",
            "subagentStart",
            "subagentStop",
            "userPromptSubmitted"
        ],
        "camelCase names, and no permissionRequest nor userPromptTransformed"
    );
    for (event, handlers) in hooks {
        let h = &handlers[0];
        assert_eq!(h["type"], "command");
        assert_eq!(h["timeoutSec"], 30);
        assert!(
            h["bash"]
                .as_str()
                .unwrap()
                .ends_with(&format!("sessionpipe-hook\" copilot-cli {event}")),
            "{h}"
        );
    }
    let (said, _) = run(&sb, &["status"]);
    assert!(
        said.contains("copilot-cli: current (~/.copilot/hooks/sessionpipe.json)"),
        "{said}"
    );
    let (said, _) = run(&sb, &["uninstall", "--harness", "copilot-cli"]);
    assert_eq!(
        said,
        "copilot-cli: removed (~/.copilot/hooks/sessionpipe.json)\n"
    );
    assert!(!copilot_file(&sb).exists(), "nothing of ours is left");
}

#[test]
fn an_install_from_before_subagents_is_outdated_and_upgraded() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.home.join(".copilot")).unwrap();
    write(&droid_file(&sb), THEIRS);
    run(&sb, &["install", "--harness", "copilot-cli"]);
    run(&sb, &["install", "--harness", "droid"]);
    // The files as the version before subagents wrote them.
    let mut copilot: Value = serde_json::from_str(&read(&copilot_file(&sb))).unwrap();
    let hooks = copilot["hooks"].as_object_mut().unwrap();
    hooks.remove("subagentStart").unwrap();
    hooks.remove("subagentStop").unwrap();
    write(
        &copilot_file(&sb),
        &serde_json::to_string_pretty(&copilot).unwrap(),
    );
    let mut droid: Value = serde_json::from_str(&read(&droid_file(&sb))).unwrap();
    droid
        .as_object_mut()
        .unwrap()
        .remove("SubagentStop")
        .unwrap();
    write(
        &droid_file(&sb),
        &serde_json::to_string_pretty(&droid).unwrap(),
    );

    let (said, _) = run(&sb, &["status"]);
    assert!(
        said.contains(
            "copilot-cli: outdated (~/.copilot/hooks/sessionpipe.json: 10 of 12 events current)"
        ),
        "{said}"
    );
    assert!(
        said.contains("droid: outdated (~/.factory/hooks.json: 8 of 9 events current)"),
        "{said}"
    );
    let (said, out) = run(&sb, &["install"]);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("copilot-cli: installed (~/.copilot/hooks/sessionpipe.json)"),
        "{said}"
    );
    assert!(
        said.contains("droid: installed (~/.factory/hooks.json)"),
        "{said}"
    );
    let (said, _) = run(&sb, &["status"]);
    assert!(said.contains("copilot-cli: current"), "{said}");
    assert!(said.contains("droid: current"), "{said}");
    let copilot: Value = serde_json::from_str(&read(&copilot_file(&sb))).unwrap();
    for event in ["subagentStart", "subagentStop"] {
        assert_eq!(
            copilot["hooks"][event].as_array().unwrap().len(),
            1,
            "{event}"
        );
    }
    let droid: Value = serde_json::from_str(&read(&droid_file(&sb))).unwrap();
    assert_eq!(droid["SubagentStop"].as_array().unwrap().len(), 1);
    assert_eq!(
        droid["PreToolUse"].as_array().unwrap().len(),
        2,
        "theirs and ours, once"
    );
    run(&sb, &["uninstall"]);
    assert!(!copilot_file(&sb).exists());
    assert_eq!(read(&droid_file(&sb)), THEIRS);
}

#[test]
fn copilot_keeps_a_handler_someone_added_to_our_file() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.home.join(".copilot")).unwrap();
    run(&sb, &["install", "--harness", "copilot-cli"]);
    let mut v: Value = serde_json::from_str(&read(&copilot_file(&sb))).unwrap();
    v["hooks"]["agentStop"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "command", "bash": "notify-send done", "timeoutSec": 5}));
    write(
        &copilot_file(&sb),
        &serde_json::to_string_pretty(&v).unwrap(),
    );
    let (said, _) = run(&sb, &["status"]);
    assert!(said.contains("copilot-cli: current"), "{said}");
    run(&sb, &["uninstall", "--harness", "copilot-cli"]);
    let left: Value = serde_json::from_str(&read(&copilot_file(&sb))).unwrap();
    assert_eq!(
        left,
        json!({"version": 1, "hooks": {"agentStop": [
            {"type": "command", "bash": "notify-send done", "timeoutSec": 5}]}})
    );
}

#[test]
fn copilot_comments_and_a_read_only_file_are_left_alone() {
    let sb = Sandbox::new();
    let commented = "{\n  // mine\n  \"version\": 1,\n  \"hooks\": {}\n}\n";
    write(&copilot_file(&sb), commented);
    let (said, _) = run(&sb, &["install", "--harness", "copilot-cli"]);
    assert!(
        said.starts_with("copilot-cli: skipped (~/.copilot/hooks/sessionpipe.json: not plain JSON"),
        "{said}"
    );
    assert_eq!(read(&copilot_file(&sb)), commented);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let plain = "{\"version\": 1, \"hooks\": {}}\n";
        write(&copilot_file(&sb), plain);
        std::fs::set_permissions(copilot_file(&sb), std::fs::Permissions::from_mode(0o444))
            .unwrap();
        let (said, _) = run(&sb, &["install", "--harness", "copilot-cli"]);
        assert!(
            said.contains("skipped") && said.contains("read-only"),
            "{said}"
        );
        assert_eq!(read(&copilot_file(&sb)), plain);
    }
}

// ---------------------------------------------------------------- Droid

/// The person's own Droid hooks, four-space indented, a guard on `Execute`.
const THEIRS: &str = "{\n    \"PreToolUse\": [\n        {\n            \"matcher\": \"Execute\",\n            \"hooks\": [\n                {\"type\": \"command\", \"command\": \"~/bin/guard.sh\", \"timeout\": 10}\n            ]\n        }\n    ]\n}\n";

#[test]
fn droid_entries_go_at_the_top_level_beside_theirs_and_uninstall_restores_the_bytes() {
    let sb = Sandbox::new();
    let (said, _) = run(&sb, &["install", "--harness", "droid"]);
    assert_eq!(
        said,
        "droid: not found (looked for ~/.factory and `droid` on PATH)\n"
    );
    write(&droid_file(&sb), THEIRS);
    let (said, out) = run(&sb, &["install", "--harness", "droid"]);
    assert!(out.status.success(), "{said}");
    assert_eq!(said, "droid: installed (~/.factory/hooks.json)\n");
    let text = read(&droid_file(&sb));
    let v: Value = serde_json::from_str(&text).unwrap();
    assert!(v.get("hooks").is_none(), "no wrapper Droid would ignore");
    let mut names: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "Notification",
            "PostToolUse",
            "PreCompact",
            "PreToolUse",
            "SessionEnd",
            "SessionStart",
            "Stop",
            "SubagentStop",
            "UserPromptSubmit"
        ]
    );
    assert_eq!(v["PreToolUse"][0]["hooks"][0]["command"], "~/bin/guard.sh");
    let ours = &v["PreToolUse"][1];
    assert_eq!(ours["matcher"], "*");
    assert!(
        ours["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .ends_with("sessionpipe-hook\" droid PreToolUse")
    );
    assert!(v["Stop"][0].get("matcher").is_none());
    assert!(
        text.contains("\n    \"Stop\": ["),
        "their indentation: {text}"
    );
    let (said, _) = run(&sb, &["status"]);
    assert!(
        said.contains("droid: current (~/.factory/hooks.json)"),
        "{said}"
    );
    let (said, _) = run(&sb, &["uninstall", "--harness", "droid"]);
    assert_eq!(said, "droid: removed (~/.factory/hooks.json)\n");
    assert_eq!(read(&droid_file(&sb)), THEIRS);
}

#[test]
fn droid_comments_a_duplicate_key_a_read_only_file_and_a_symlink() {
    let sb = Sandbox::new();
    let commented = "{\n  // mine\n  \"Stop\": []\n}\n";
    write(&droid_file(&sb), commented);
    let (said, _) = run(&sb, &["install", "--harness", "droid"]);
    assert!(
        said.starts_with("droid: skipped (~/.factory/hooks.json: not plain JSON"),
        "{said}"
    );
    assert_eq!(read(&droid_file(&sb)), commented);
    let doubled = "{\"Stop\": [], \"Stop\": []}\n";
    write(&droid_file(&sb), doubled);
    let (said, _) = run(&sb, &["install", "--harness", "droid"]);
    assert!(
        said.contains("skipped") && said.contains("duplicate key"),
        "{said}"
    );
    assert_eq!(read(&droid_file(&sb)), doubled);

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        write(&droid_file(&sb), THEIRS);
        std::fs::set_permissions(droid_file(&sb), std::fs::Permissions::from_mode(0o444)).unwrap();
        let (said, _) = run(&sb, &["install", "--harness", "droid"]);
        assert!(
            said.contains("skipped") && said.contains("read-only"),
            "{said}"
        );
        assert_eq!(read(&droid_file(&sb)), THEIRS);
        std::fs::set_permissions(droid_file(&sb), std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::remove_file(droid_file(&sb)).unwrap();

        // A dotfiles repository's file, linked in: written through, the link kept.
        let real = sb.root().join("dotfiles/droid-hooks.json");
        write(&real, THEIRS);
        std::os::unix::fs::symlink(&real, droid_file(&sb)).unwrap();
        let (said, _) = run(&sb, &["install", "--harness", "droid"]);
        assert_eq!(said, "droid: installed (~/.factory/hooks.json)\n");
        assert!(read(&real).contains("droid Stop"));
        run(&sb, &["uninstall", "--harness", "droid"]);
        let link = std::fs::symlink_metadata(droid_file(&sb)).unwrap();
        assert!(link.file_type().is_symlink());
        assert_eq!(read(&real), THEIRS);
    }
}
