//! `sessionpipe install | uninstall | status` for Gemini CLI, through the real CLI
//! on realistic `~/.gemini/settings.json` files: other settings and other tools'
//! hooks, `hooksConfig`, tabs, CRLF, comments (which Gemini CLI allows and we do
//! not edit), and Antigravity's files in the same folder. The person's bytes
//! outside our entries never change, and uninstall gives back the original.

use serde_json::{Value, json};
use sessionpipe_testkit::{Sandbox, sandbox::bin};
use std::path::{Path, PathBuf};
use std::process::Output;

/// Settings as people have them: auth, a theme, an MCP server, a hook of their
/// own on file edits, and the hooks switch.
const SETTINGS: &str = r#"{
  "security": {
    "auth": {
      "selectedType": "oauth-personal"
    }
  },
  "ui": {
    "theme": "GitHub"
  },
  "mcpServers": {
    "github": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"]
    }
  },
  "hooksConfig": {
    "enabled": true
  },
  "hooks": {
    "BeforeTool": [
      {
        "matcher": "write_file|replace",
        "hooks": [
          {
            "name": "secret-scanner",
            "type": "command",
            "command": "$GEMINI_PROJECT_DIR/.gemini/hooks/scan.sh",
            "timeout": 10000
          }
        ]
      }
    ]
  }
}
"#;

const EVENTS: [&str; 8] = [
    "SessionStart",
    "BeforeAgent",
    "BeforeTool",
    "AfterTool",
    "Notification",
    "AfterAgent",
    "PreCompress",
    "SessionEnd",
];

fn settings(sb: &Sandbox) -> PathBuf {
    sb.home.join(".gemini/settings.json")
}

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

/// `sessionpipe ARGS` with `PATH` holding only `path` (no `gemini` unless put
/// there): what it printed on stdout, its notes (the `note:` lines on stderr),
/// and the whole output.
fn run_with_path(sb: &Sandbox, path: &str, args: &[&str]) -> (String, String, Output) {
    let out = sb
        .command(bin("sessionpipe"))
        .env("PATH", path)
        .args(args)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    let notes = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with("note: "))
        .map(|l| format!("{l}\n"))
        .collect();
    (said, notes, out)
}

fn run(sb: &Sandbox, args: &[&str]) -> (String, String, Output) {
    run_with_path(sb, "/nonexistent", args)
}

/// A folder holding an executable named `gemini`, for `PATH`.
fn gemini_on_path(sb: &Sandbox) -> String {
    let dir = sb.root().join("bin");
    std::fs::create_dir_all(&dir).unwrap();
    sessionpipe_testkit::executable::write_executable(&dir.join("gemini"), "#!/bin/sh\n");
    dir.display().to_string()
}

/// (event, group) of every group holding one of our handlers.
fn ours(v: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for (event, groups) in v["hooks"].as_object().into_iter().flatten() {
        for g in groups.as_array().into_iter().flatten() {
            let mine = g["hooks"].as_array().into_iter().flatten().any(|h| {
                h["command"]
                    .as_str()
                    .is_some_and(|c| c.contains("sessionpipe-hook"))
            });
            if mine {
                out.push((event.clone(), g.clone()));
            }
        }
    }
    out
}

#[test]
fn install_keeps_other_settings_and_hooks_and_uninstall_restores_the_bytes() {
    let sb = Sandbox::new();
    write(&settings(&sb), SETTINGS);
    let (said, notes, out) = run(&sb, &["install", "--harness", "gemini-cli"]);
    assert!(out.status.success(), "{said}{notes}");
    assert_eq!(said, "gemini-cli: installed (~/.gemini/settings.json)\n");
    assert_eq!(
        notes,
        "note: gemini-cli: Gemini CLI's own telemetry logs your prompts by default when it is on; set `telemetry.logPrompts` to false in its settings.json to stop that\n"
    );

    let v: Value = serde_json::from_str(&read(&settings(&sb))).unwrap();
    let groups = ours(&v);
    let events: Vec<&str> = groups.iter().map(|(e, _)| e.as_str()).collect();
    let mut want = EVENTS.to_vec();
    want.sort();
    let mut got = events.clone();
    got.sort();
    assert_eq!(got, want, "one entry per event, nothing else registered");
    let hook = std::fs::canonicalize(bin("sessionpipe-hook")).unwrap();
    for (event, group) in &groups {
        // Named, in milliseconds, the quoted hook binary with harness and event.
        assert_eq!(
            group["hooks"],
            json!([{"type": "command",
                    "command": format!("\"{}\" gemini-cli {event}", hook.display()),
                    "name": "sessionpipe", "timeout": 5000}]),
            "{event}"
        );
        let matcher = match event.as_str() {
            "BeforeTool" | "AfterTool" => Some(json!("*")),
            "PreCompress" => Some(json!("manual")),
            _ => None,
        };
        assert_eq!(group.get("matcher").cloned(), matcher, "{event}");
    }
    // Theirs untouched and first; the other settings and their order kept.
    assert_eq!(v["hooks"]["BeforeTool"][0]["matcher"], "write_file|replace");
    assert_eq!(
        v["hooks"]["BeforeTool"][0]["hooks"][0]["name"],
        "secret-scanner"
    );
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["security", "ui", "mcpServers", "hooksConfig", "hooks"]
    );
    assert!(read(&settings(&sb)).starts_with(&SETTINGS[..SETTINGS.find("\"hooks\"").unwrap()]));

    // Said once: a second install finds everything current and says nothing more.
    let (said, notes, _) = run(&sb, &["install", "--harness", "gemini-cli"]);
    assert_eq!(said, "gemini-cli: current (~/.gemini/settings.json)\n");
    assert_eq!(notes, "");
    let (said, _, _) = run(&sb, &["status"]);
    assert!(
        said.contains("gemini-cli: current (~/.gemini/settings.json)"),
        "{said}"
    );

    let (said, _, out) = run(&sb, &["uninstall", "--harness", "gemini-cli"]);
    assert!(out.status.success());
    assert_eq!(said, "gemini-cli: removed (~/.gemini/settings.json)\n");
    assert_eq!(read(&settings(&sb)), SETTINGS);
    let (said, _, _) = run(&sb, &["status"]);
    assert!(said.contains("gemini-cli: hooks not installed"), "{said}");
}

#[test]
fn a_file_edited_after_install_keeps_the_edit_and_loses_only_our_entries() {
    let sb = Sandbox::new();
    write(&settings(&sb), SETTINGS);
    run(&sb, &["install", "--harness", "gemini-cli"]);
    let edited = read(&settings(&sb)).replacen("\"GitHub\"", "\"Dracula\"", 1);
    std::fs::write(settings(&sb), &edited).unwrap();
    run(&sb, &["uninstall", "--harness", "gemini-cli"]);
    assert_eq!(
        read(&settings(&sb)),
        SETTINGS.replacen("GitHub", "Dracula", 1)
    );
}

#[test]
fn crlf_and_tabs_are_kept() {
    let sb = Sandbox::new();
    let original = "{\r\n\t\"ui\": {\r\n\t\t\"theme\": \"GitHub\"\r\n\t},\r\n\t\"hooks\": {\r\n\t\t\"AfterAgent\": []\r\n\t}\r\n}";
    write(&settings(&sb), original);
    run(&sb, &["install", "--harness", "gemini-cli"]);
    let text = read(&settings(&sb));
    assert!(
        !text.replace("\r\n", "").contains('\n'),
        "every newline stays CRLF"
    );
    for line in text.split("\r\n").skip(1) {
        let indent: String = line.chars().take_while(|c| c.is_whitespace()).collect();
        assert!(
            indent.chars().all(|c| c == '\t'),
            "tab indentation: {line:?}"
        );
    }
    assert!(!text.ends_with("\r\n"), "no final newline was added");
    assert_eq!(ours(&serde_json::from_str(&text).unwrap()).len(), 8);
    run(&sb, &["uninstall", "--harness", "gemini-cli"]);
    assert_eq!(read(&settings(&sb)), original);
}

#[test]
fn comments_are_skipped_and_left_byte_identical() {
    // Gemini CLI reads settings.json with comments; sessionpipe edits plain JSON only.
    let sb = Sandbox::new();
    let commented = "{\n  // my theme\n  \"ui\": { \"theme\": \"GitHub\" }\n}\n";
    write(&settings(&sb), commented);
    let (said, notes, out) = run(&sb, &["install", "--harness", "gemini-cli"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        said.starts_with(
            "gemini-cli: skipped (~/.gemini/settings.json: not plain JSON (line 2, column"
        ),
        "{said}"
    );
    assert_eq!(notes, "", "nothing installed, nothing to note");
    assert_eq!(read(&settings(&sb)), commented);
    let (said, _, _) = run(&sb, &["status"]);
    assert!(said.contains("gemini-cli: skipped"), "{said}");
    let (_, _, out) = run(&sb, &["uninstall", "--harness", "gemini-cli"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(read(&settings(&sb)), commented);
}

#[test]
fn found_by_settings_or_path_never_by_antigravitys_folder() {
    let sb = Sandbox::new();
    // Antigravity's home is ~/.gemini too: its files alone are no Gemini CLI.
    let agy = sb.home.join(".gemini/config/hooks.json");
    let agy_text = "{\n  \"my-linter\": {}\n}\n";
    write(&agy, agy_text);
    std::fs::create_dir_all(sb.home.join(".gemini/antigravity")).unwrap();
    let (said, notes, out) = run(&sb, &["install", "--harness", "gemini-cli"]);
    assert!(out.status.success());
    assert_eq!(
        said,
        "gemini-cli: not found (looked for ~/.gemini/settings.json and `gemini` on PATH)\n"
    );
    assert_eq!(notes, "");
    assert!(!settings(&sb).exists());

    // `gemini` on PATH: the settings file is created, and removed again.
    let path = gemini_on_path(&sb);
    let (said, _, _) = run_with_path(&sb, &path, &["install", "--harness", "gemini-cli"]);
    assert_eq!(said, "gemini-cli: installed (~/.gemini/settings.json)\n");
    assert_eq!(
        ours(&serde_json::from_str(&read(&settings(&sb))).unwrap()).len(),
        8
    );
    assert_eq!(
        read(&agy),
        agy_text,
        "Antigravity's file is not ours to touch"
    );
    run_with_path(&sb, &path, &["uninstall", "--harness", "gemini-cli"]);
    assert!(!settings(&sb).exists(), "a file we created is removed");

    // Gemini CLI's own home override moves its settings.
    let elsewhere = sb.root().join("gemini-home");
    let out = sb
        .command(bin("sessionpipe"))
        .env("PATH", &path)
        .env("GEMINI_CLI_HOME", &elsewhere)
        .args(["install", "--harness", "gemini-cli"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let moved = elsewhere.join(".gemini/settings.json");
    assert_eq!(ours(&serde_json::from_str(&read(&moved)).unwrap()).len(), 8);
    assert!(!settings(&sb).exists());
}

#[test]
fn hooks_switched_off_or_ours_disabled_is_inactive() {
    let sb = Sandbox::new();
    let off = SETTINGS.replace("\"enabled\": true", "\"enabled\": false");
    write(&settings(&sb), &off);
    let (said, _, out) = run(&sb, &["install", "--harness", "gemini-cli"]);
    assert!(out.status.success(), "{said}");
    assert_eq!(
        said,
        "gemini-cli: inactive (~/.gemini/settings.json: hooksConfig.enabled is false, so Gemini CLI runs no hooks)\n"
    );
    let (said, _, _) = run(&sb, &["status"]);
    assert!(said.contains("gemini-cli: inactive"), "{said}");
    run(&sb, &["uninstall", "--harness", "gemini-cli"]);
    assert_eq!(read(&settings(&sb)), off);

    // `/hooks disable sessionpipe` writes our name into hooksConfig.disabled.
    let disabled = SETTINGS.replace(
        "\"enabled\": true",
        "\"enabled\": true,\n    \"disabled\": [\"sessionpipe\"]",
    );
    write(&settings(&sb), &disabled);
    run(&sb, &["install", "--harness", "gemini-cli"]);
    let (said, _, _) = run(&sb, &["status"]);
    assert!(
        said.contains(
            "gemini-cli: inactive (~/.gemini/settings.json: hooksConfig.disabled names sessionpipe"
        ),
        "{said}"
    );
}

#[test]
fn an_older_hook_path_is_outdated_and_replaced_not_doubled() {
    let sb = Sandbox::new();
    write(&settings(&sb), SETTINGS);
    let old = sb.root().join("old-version/sessionpipe-hook");
    std::fs::create_dir_all(old.parent().unwrap()).unwrap();
    std::fs::copy(bin("sessionpipe-hook"), &old).unwrap();
    let out = sb
        .command(bin("sessionpipe"))
        .env("PATH", "/nonexistent")
        .env("SESSIONPIPE_HOOK_BIN", &old)
        .args(["install", "--harness", "gemini-cli"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let (said, _, _) = run(&sb, &["status"]);
    assert!(
        said.contains("gemini-cli: outdated (~/.gemini/settings.json: 0 of 8 events current, 8 entries from another version or edited)"),
        "{said}"
    );
    let (said, _, _) = run(&sb, &["install", "--harness", "gemini-cli"]);
    assert!(said.starts_with("gemini-cli: installed"), "{said}");
    let v: Value = serde_json::from_str(&read(&settings(&sb))).unwrap();
    let groups = ours(&v);
    assert_eq!(groups.len(), 8);
    assert!(
        groups
            .iter()
            .all(|(_, g)| !g.to_string().contains("old-version"))
    );
    run(&sb, &["uninstall", "--harness", "gemini-cli"]);
    assert_eq!(read(&settings(&sb)), SETTINGS);
}

#[test]
fn the_hook_prints_nothing_for_gemini_cli() {
    // Gemini CLI parses a hook's stdout as JSON or shows it as a message: ours
    // stays empty for every event we register.
    let sb = Sandbox::new();
    for event in EVENTS {
        let payload = json!({"session_id": "c7f81499-848f-494f-9084-55e439a09119",
                             "cwd": "/w", "hook_event_name": event});
        let out = sb.hook("gemini-cli", event, payload.to_string().as_bytes());
        assert!(out.status.success(), "{event}");
        assert!(out.stdout.is_empty(), "{event}: {:?}", out.stdout);
    }
}
