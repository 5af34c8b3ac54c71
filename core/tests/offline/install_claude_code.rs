//! `sessionpipe install | uninstall | status` for Claude Code, through the real CLI
//! on realistic settings files: other tools' hooks, tabs, CRLF, comments, several
//! config dirs. The person's bytes outside our entries never change.

use serde_json::Value;
use sessionpipe_testkit::{Sandbox, sandbox::bin};
use std::path::{Path, PathBuf};
use std::process::Output;

const OTHERS: &str = r#"{
  "model": "opus",
  "permissions": {
    "allow": ["Bash(ls:*)"]
  },
  "hooks": {
    "Stop": [
      {
        "hooks": [
          { "type": "command", "command": "notify-send 'Claude is done'" }
        ]
      }
    ],
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [{ "type": "command", "command": "/usr/local/bin/guard.sh", "timeout": 30 }]
      }
    ]
  },
  "statusLine": { "type": "command", "command": "~/.claude/line.sh" }
}
"#;

fn run(sb: &Sandbox, args: &[&str]) -> (String, Output) {
    let out = sb.sessionpipe(args);
    (String::from_utf8_lossy(&out.stdout).into_owned(), out)
}

fn settings(sb: &Sandbox) -> PathBuf {
    sb.home.join(".claude/settings.json")
}

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn our_commands(v: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (event, groups) in v["hooks"].as_object().into_iter().flatten() {
        for g in groups.as_array().into_iter().flatten() {
            for h in g["hooks"].as_array().into_iter().flatten() {
                let c = h["command"].as_str().unwrap_or("");
                if c.contains("sessionpipe-hook") {
                    out.push((event.clone(), c.to_string()));
                }
            }
        }
    }
    out
}

#[test]
fn install_keeps_other_hooks_and_uninstall_restores_the_bytes() {
    let sb = Sandbox::new();
    write(&settings(&sb), OTHERS);
    let (said, out) = run(&sb, &["install", "--harness", "claude-code"]);
    assert!(out.status.success(), "{said}");
    assert_eq!(said, "claude-code: installed (~/.claude/settings.json)\n");

    let text = std::fs::read_to_string(settings(&sb)).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let ours = our_commands(&v);
    assert_eq!(ours.len(), 14, "one entry per event");
    let hook = std::fs::canonicalize(bin("sessionpipe-hook")).unwrap();
    assert!(ours.contains(&(
        "Stop".into(),
        format!("\"{}\" claude-code Stop", hook.display())
    )));
    // Theirs, untouched and first.
    assert_eq!(
        v["hooks"]["Stop"][0]["hooks"][0]["command"],
        "notify-send 'Claude is done'"
    );
    assert_eq!(v["hooks"]["PreToolUse"][0]["matcher"], "Bash");
    assert_eq!(v["model"], "opus");
    // Matchers only on tool and permission events, timeout 5.
    let pre = &v["hooks"]["PreToolUse"][1];
    assert_eq!(pre["matcher"], "");
    assert_eq!(pre["hooks"][0]["timeout"], 5);
    assert!(v["hooks"]["Stop"][1].get("matcher").is_none());
    assert!(v["hooks"]["SessionStart"][0].get("matcher").is_none());
    assert_eq!(v["hooks"]["PermissionRequest"][0]["matcher"], "");
    // Key order kept: ours come after theirs, new events after theirs too.
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["model", "permissions", "hooks", "statusLine"]);
    // The original is kept byte for byte.
    let backups: Vec<PathBuf> = std::fs::read_dir(sb.state.join("backups"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(backups.len(), 1);
    assert_eq!(std::fs::read_to_string(&backups[0]).unwrap(), OTHERS);

    let (said, _) = run(&sb, &["install"]);
    assert!(
        said.contains("claude-code: current (~/.claude/settings.json)"),
        "{said}"
    );
    let (said, _) = run(&sb, &["status"]);
    assert!(said.contains("claude-code: current"), "{said}");

    let installed = std::fs::read(settings(&sb)).unwrap();
    let (said, out) = run(&sb, &["uninstall", "--dry-run", "--harness", "claude-code"]);
    assert!(out.status.success());
    assert_eq!(
        said,
        "claude-code: would remove (~/.claude/settings.json)\n"
    );
    assert_eq!(
        std::fs::read(settings(&sb)).unwrap(),
        installed,
        "a dry run writes nothing"
    );
    let (said, out) = run(&sb, &["uninstall", "--harness", "claude-code"]);
    assert!(out.status.success());
    assert_eq!(said, "claude-code: removed (~/.claude/settings.json)\n");
    assert_eq!(std::fs::read_to_string(settings(&sb)).unwrap(), OTHERS);
    let (said, _) = run(&sb, &["status"]);
    assert!(said.contains("claude-code: hooks not installed"), "{said}");
}

#[test]
fn a_file_edited_after_install_keeps_the_edit_and_loses_only_our_entries() {
    let sb = Sandbox::new();
    write(&settings(&sb), OTHERS);
    run(&sb, &["install"]);
    let text = std::fs::read_to_string(settings(&sb)).unwrap();
    let edited = text.replacen("\"model\": \"opus\"", "\"model\": \"sonnet\"", 1);
    std::fs::write(settings(&sb), &edited).unwrap();
    run(&sb, &["uninstall"]);
    assert_eq!(
        std::fs::read_to_string(settings(&sb)).unwrap(),
        OTHERS.replacen("opus", "sonnet", 1)
    );
}

#[test]
fn comments_or_trailing_commas_are_skipped_and_left_byte_identical() {
    let sb = Sandbox::new();
    let jsonc = "{\n  // my settings\n  \"model\": \"opus\",\n}\n";
    write(&settings(&sb), jsonc);
    let (said, out) = run(&sb, &["install"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        said.starts_with(
            "claude-code: skipped (~/.claude/settings.json: not plain JSON (line 2, column"
        ),
        "{said}"
    );
    assert_eq!(std::fs::read_to_string(settings(&sb)).unwrap(), jsonc);
    let (said, _) = run(&sb, &["status"]);
    assert!(said.contains("claude-code: skipped"), "{said}");
    let (_, out) = run(&sb, &["uninstall"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(settings(&sb)).unwrap(), jsonc);
}

#[test]
fn crlf_and_tabs_are_kept() {
    let sb = Sandbox::new();
    let original = "{\r\n\t\"model\": \"opus\",\r\n\t\"hooks\": {\r\n\t\t\"Stop\": []\r\n\t}\r\n}";
    write(&settings(&sb), original);
    run(&sb, &["install"]);
    let text = std::fs::read_to_string(settings(&sb)).unwrap();
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
    run(&sb, &["uninstall"]);
    assert_eq!(std::fs::read_to_string(settings(&sb)).unwrap(), original);
}

#[test]
fn every_config_dir_gets_hooks() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.home.join(".claude")).unwrap();
    std::fs::create_dir_all(sb.home.join(".claude-work/projects")).unwrap();
    write(&sb.home.join(".claude-personal/settings.json"), "{}\n");
    std::fs::create_dir_all(sb.home.join(".claude-empty")).unwrap(); // neither: not a config dir
    let custom = sb.root().join("elsewhere/claude");
    std::fs::create_dir_all(&custom).unwrap();
    let out = sb
        .command(bin("sessionpipe"))
        .env("CLAUDE_CONFIG_DIR", &custom)
        .arg("install")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}");
    for dir in [
        sb.home.join(".claude"),
        sb.home.join(".claude-work"),
        sb.home.join(".claude-personal"),
        custom.clone(),
    ] {
        let v: Value =
            serde_json::from_slice(&std::fs::read(dir.join("settings.json")).unwrap()).unwrap();
        assert_eq!(our_commands(&v).len(), 14, "{}", dir.display());
    }
    assert!(!sb.home.join(".claude-empty/settings.json").exists());
    // Files we created are removed again; the one the person had is restored.
    sb.command(bin("sessionpipe"))
        .env("CLAUDE_CONFIG_DIR", &custom)
        .arg("uninstall")
        .output()
        .unwrap();
    assert!(!sb.home.join(".claude/settings.json").exists());
    assert!(!custom.join("settings.json").exists());
    assert_eq!(
        std::fs::read_to_string(sb.home.join(".claude-personal/settings.json")).unwrap(),
        "{}\n"
    );
}

#[test]
fn an_older_hook_path_is_outdated_and_replaced_not_doubled() {
    let sb = Sandbox::new();
    write(&settings(&sb), OTHERS);
    let old = sb.root().join("old-version/sessionpipe-hook");
    std::fs::create_dir_all(old.parent().unwrap()).unwrap();
    std::fs::copy(bin("sessionpipe-hook"), &old).unwrap();
    let out = sb
        .command(bin("sessionpipe"))
        .env("SESSIONPIPE_HOOK_BIN", &old)
        .arg("install")
        .output()
        .unwrap();
    assert!(out.status.success());
    let (said, _) = run(&sb, &["status"]);
    assert!(said.contains("claude-code: outdated (~/.claude/settings.json: 0 of 14 events current, 14 entries from another version or edited)"), "{said}");
    let (said, _) = run(&sb, &["install"]);
    assert!(said.starts_with("claude-code: installed"), "{said}");
    let v: Value = serde_json::from_slice(&std::fs::read(settings(&sb)).unwrap()).unwrap();
    let ours = our_commands(&v);
    assert_eq!(ours.len(), 14);
    assert!(ours.iter().all(|(_, c)| !c.contains("old-version")));
    // The backup is still the file before our very first write.
    run(&sb, &["uninstall"]);
    assert_eq!(std::fs::read_to_string(settings(&sb)).unwrap(), OTHERS);
}

#[test]
fn not_found_writes_nothing_and_dry_run_writes_nothing() {
    let sb = Sandbox::new();
    let out = sb
        .command(bin("sessionpipe"))
        .env("PATH", "/nonexistent")
        .args(["install", "--harness", "claude-code"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "claude-code: not found (looked for ~/.claude, ~/.claude-* and `claude` on PATH)\n"
    );
    assert!(out.status.success());
    assert!(!sb.home.join(".claude").exists());

    write(&settings(&sb), OTHERS);
    let (said, _) = run(&sb, &["install", "--dry-run", "--harness", "claude-code"]);
    assert_eq!(
        said,
        "claude-code: would install (~/.claude/settings.json)\n"
    );
    assert_eq!(std::fs::read_to_string(settings(&sb)).unwrap(), OTHERS);
    assert!(!sb.state.join("install.json").exists());
}

#[test]
fn json_output_and_usage_errors() {
    let sb = Sandbox::new();
    write(&settings(&sb), OTHERS);
    let (said, out) = run(&sb, &["install", "--json"]);
    assert!(out.status.success());
    let v: Value = serde_json::from_str(&said).unwrap();
    assert_eq!(v[0]["harness"], "claude-code");
    assert_eq!(v[0]["summary"], "installed");
    assert_eq!(v[0]["files"][0]["state"], "installed");
    let (_, out) = run(&sb, &["install", "--harness", "nonesuch"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("nonesuch") && err.contains("claude-code, codex"),
        "refused with the names it knows: {err}"
    );
    let (_, out) = run(&sb, &["tail", "--tier", "7"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_settings_file_that_is_not_an_object_or_has_odd_hooks_is_skipped() {
    let sb = Sandbox::new();
    for odd in [
        "[1, 2]\n",
        "{\"hooks\": []}\n",
        "{\"hooks\": {\"Stop\": {}}}\n",
    ] {
        write(&settings(&sb), odd);
        let (said, out) = run(&sb, &["install"]);
        assert_eq!(out.status.code(), Some(1), "{odd}: {said}");
        assert!(said.contains("skipped"), "{said}");
        assert_eq!(std::fs::read_to_string(settings(&sb)).unwrap(), odd);
    }
}
