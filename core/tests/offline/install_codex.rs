//! `sessionpipe install | uninstall | status` for Codex, through the real CLI on
//! realistic files: a `hooks.json` with other tools' hooks, a `config.toml` with
//! comments, tables, `[projects."…"]`, a notify of its own (chained, never
//! replaced), a notify stranded inside a table (moved), CRLF. The person's bytes
//! outside our entries never change, and uninstall gives back the originals.

use serde_json::Value;
use sessionpipe_testkit::{Sandbox, sandbox::bin};
use std::path::{Path, PathBuf};
use std::process::Output;

const HOOKS: &str = r#"{
  "hooks": {
    "Stop": [
      {
        "hooks": [
          { "type": "command", "command": "~/.codex/bin/ding.sh", "timeout": 10 }
        ]
      }
    ]
  }
}
"#;

/// A config as people have them: comments, a provider, trusted projects, and the
/// notify that Codex Computer Use writes.
const CONFIG: &str = r#"# Codex settings
model = "gpt-6-astra"            # the default
approval_policy = "on-request"
notify = ["/Applications/Codex.app/Contents/Resources/notify", "--source", "codex"]

# Providers I use
[model_providers.local]
name = "Local"
base_url = "http://127.0.0.1:11434/v1"

[projects."/Users/ann/src/app"]
trust_level = "trusted"
"#;

/// The quirk: a notify line appended at the end lands in the last table.
const MISPLACED: &str = r#"model = "gpt-6-astra"

[projects."/Users/ann/src/app"]
trust_level = "trusted"
notify = ["terminal-notifier", "-title", "Codex"]
"#;

fn codex_dir(sb: &Sandbox) -> PathBuf {
    sb.home.join(".codex")
}

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

fn run(sb: &Sandbox, args: &[&str]) -> (String, String, Output) {
    let out = sb.sessionpipe(args);
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out,
    )
}

fn hook_path() -> String {
    std::fs::canonicalize(bin("sessionpipe-hook"))
        .unwrap()
        .display()
        .to_string()
}

/// `(event, command, timeout, matcher)` of every sessionpipe handler in hooks.json.
fn our_handlers(text: &str) -> Vec<(String, String, u64, Option<String>)> {
    let v: Value = serde_json::from_str(text).unwrap();
    let mut out = Vec::new();
    for (event, groups) in v["hooks"].as_object().unwrap() {
        for g in groups.as_array().unwrap() {
            for h in g["hooks"].as_array().unwrap() {
                let c = h["command"].as_str().unwrap_or("");
                if c.contains("sessionpipe-hook") {
                    let matcher = g["matcher"].as_str().map(str::to_string);
                    out.push((
                        event.clone(),
                        c.to_string(),
                        h["timeout"].as_u64().unwrap(),
                        matcher,
                    ));
                }
            }
        }
    }
    out
}

/// The top-level `notify` of a config.toml, as Codex reads it.
fn notify_of(text: &str) -> Option<Vec<String>> {
    let doc: toml_edit::DocumentMut = text.parse().unwrap();
    let array = doc.get("notify")?.as_array()?;
    Some(
        array
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect(),
    )
}

#[test]
fn install_chains_the_existing_notify_and_uninstall_restores_both_files() {
    let sb = Sandbox::new();
    let dir = codex_dir(&sb);
    write(&dir.join("hooks.json"), HOOKS);
    write(&dir.join("config.toml"), CONFIG);

    let (said, note, out) = run(&sb, &["install", "--harness", "codex"]);
    assert!(out.status.success(), "{said}{note}");
    assert_eq!(
        said,
        "codex: installed (~/.codex/hooks.json, ~/.codex/config.toml)\n"
    );
    assert!(note.contains("note: codex: Codex runs the hooks"), "{note}");
    assert!(note.contains("/hooks"), "{note}");

    // hooks.json: theirs first and untouched, ours one per event, two clamped to 3 s.
    let hooks = read(&dir.join("hooks.json"));
    let v: Value = serde_json::from_str(&hooks).unwrap();
    assert_eq!(
        v["hooks"]["Stop"][0]["hooks"][0]["command"],
        "~/.codex/bin/ding.sh"
    );
    let ours = our_handlers(&hooks);
    assert_eq!(ours.len(), 12, "{ours:#?}");
    let hook = hook_path();
    for (event, command, timeout, matcher) in &ours {
        assert_eq!(command, &format!("\"{hook}\" codex {event}"));
        // A permission prompt's hook may wait for a verified answer (control).
        let want = match event.as_str() {
            "SessionEnd" | "Interrupt" => 3,
            "PermissionRequest" => sessionpipe_core::harness::control::PERMISSION_HOOK_TIMEOUT_S,
            _ => 5,
        };
        assert_eq!(*timeout, want, "{event}");
        let tool_event = matches!(
            event.as_str(),
            "PreToolUse" | "PostToolUse" | "PermissionRequest"
        );
        assert_eq!(matcher.is_some(), tool_event, "{event}");
    }

    // config.toml: one line changed, in place, the person's notify carried along.
    let config = read(&dir.join("config.toml"));
    let argv = notify_of(&config).expect("a top-level notify");
    assert_eq!(
        argv[..4],
        [hook.as_str(), "codex", "notify", "--previous-notify"]
    );
    let previous: Vec<String> = serde_json::from_str(&argv[4]).unwrap();
    assert_eq!(
        previous,
        [
            "/Applications/Codex.app/Contents/Resources/notify",
            "--source",
            "codex"
        ]
    );
    let changed: Vec<(&str, &str)> = CONFIG
        .lines()
        .zip(config.lines())
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(changed.len(), 1, "{changed:#?}");
    assert!(changed[0].1.starts_with("notify = ["));
    assert_eq!(CONFIG.lines().count(), config.lines().count());

    let (said, note, _) = run(&sb, &["install", "--harness", "codex"]);
    assert_eq!(
        said,
        "codex: current (~/.codex/hooks.json, ~/.codex/config.toml)\n"
    );
    assert!(note.is_empty(), "the note is said once: {note}");
    let (said, _, _) = run(&sb, &["status"]);
    assert!(said.contains("codex: current"), "{said}");

    let (said, _, out) = run(&sb, &["uninstall", "--harness", "codex"]);
    assert!(out.status.success());
    assert_eq!(
        said,
        "codex: removed (~/.codex/hooks.json, ~/.codex/config.toml)\n"
    );
    assert_eq!(read(&dir.join("hooks.json")), HOOKS);
    assert_eq!(read(&dir.join("config.toml")), CONFIG);
    let (said, _, _) = run(&sb, &["status"]);
    assert!(said.contains("codex: hooks not installed"), "{said}");
}

#[test]
fn a_file_edited_after_install_keeps_the_edit_and_gets_its_notify_back() {
    let sb = Sandbox::new();
    let config = codex_dir(&sb).join("config.toml");
    write(&config, CONFIG);
    run(&sb, &["install", "--harness", "codex"]);
    let edited = read(&config).replace("on-request", "never");
    std::fs::write(&config, &edited).unwrap();
    run(&sb, &["uninstall", "--harness", "codex"]);
    assert_eq!(read(&config), CONFIG.replace("on-request", "never"));
}

#[test]
fn a_notify_stranded_in_a_table_is_moved_above_it() {
    let sb = Sandbox::new();
    let config = codex_dir(&sb).join("config.toml");
    write(&config, MISPLACED);
    let (said, _, out) = run(&sb, &["install", "--harness", "codex"]);
    assert!(out.status.success(), "{said}");
    let text = read(&config);
    let argv = notify_of(&text).expect("notify at the top level now");
    let previous: Vec<String> = serde_json::from_str(&argv[4]).unwrap();
    assert_eq!(previous, ["terminal-notifier", "-title", "Codex"]);
    let doc: toml_edit::DocumentMut = text.parse().unwrap();
    assert!(
        doc["projects"]["/Users/ann/src/app"]
            .get("notify")
            .is_none(),
        "{text}"
    );
    assert_eq!(
        doc["projects"]["/Users/ann/src/app"]["trust_level"].as_str(),
        Some("trusted")
    );
    run(&sb, &["uninstall", "--harness", "codex"]);
    assert_eq!(read(&config), MISPLACED);

    // One of ours stranded there (an old install appended it) is outdated, and
    // installing takes it out.
    let stranded = format!(
        "{MISPLACED}notify = [\"{}\", \"codex\", \"notify\"]\n",
        hook_path()
    )
    .replace(
        "notify = [\"terminal-notifier\", \"-title\", \"Codex\"]\n",
        "",
    );
    write(&config, &stranded);
    let (said, _, _) = run(&sb, &["status"]);
    assert!(
        said.contains(r#"outdated (~/.codex/config.toml: our notify sits inside [projects."/Users/ann/src/app"], where Codex never reads it)"#),
        "{said}"
    );
    run(&sb, &["install", "--harness", "codex"]);
    let text = read(&config);
    assert_eq!(text.matches("sessionpipe-hook").count(), 1, "{text}");
    assert_eq!(notify_of(&text).unwrap().len(), 3, "nothing to chain");
    assert!(text.ends_with("trust_level = \"trusted\"\n"), "{text}");
}

#[test]
fn crlf_files_stay_crlf_and_come_back_byte_for_byte() {
    let sb = Sandbox::new();
    let dir = codex_dir(&sb);
    let config = CONFIG.replace('\n', "\r\n");
    let hooks = HOOKS.replace('\n', "\r\n");
    write(&dir.join("config.toml"), &config);
    write(&dir.join("hooks.json"), &hooks);
    run(&sb, &["install", "--harness", "codex"]);
    for file in ["config.toml", "hooks.json"] {
        let text = read(&dir.join(file));
        assert!(
            !text.replace("\r\n", "").contains('\n'),
            "{file}: every newline stays CRLF"
        );
    }
    run(&sb, &["uninstall", "--harness", "codex"]);
    assert_eq!(read(&dir.join("config.toml")), config);
    assert_eq!(read(&dir.join("hooks.json")), hooks);
}

#[test]
fn fresh_files_are_created_and_removed_again() {
    let sb = Sandbox::new();
    let dir = codex_dir(&sb);
    std::fs::create_dir_all(&dir).unwrap();
    let (said, _, _) = run(&sb, &["status"]);
    assert!(said.contains("codex: hooks not installed"), "{said}");
    run(&sb, &["install", "--harness", "codex"]);
    let config = read(&dir.join("config.toml"));
    assert_eq!(
        config,
        format!("notify = [\"{}\", \"codex\", \"notify\"]\n", hook_path())
    );
    assert_eq!(our_handlers(&read(&dir.join("hooks.json"))).len(), 12);
    run(&sb, &["uninstall", "--harness", "codex"]);
    assert!(!dir.join("config.toml").exists());
    assert!(!dir.join("hooks.json").exists());
}

#[test]
fn codex_home_is_where_the_files_go_and_nothing_is_found_without_codex() {
    let sb = Sandbox::new();
    let out = sb
        .command(bin("sessionpipe"))
        .env("PATH", "/nonexistent")
        .args(["install", "--harness", "codex"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "codex: not found (looked for ~/.codex and `codex` on PATH)\n"
    );
    assert!(!codex_dir(&sb).exists());

    let custom = sb.root().join("elsewhere/codex");
    std::fs::create_dir_all(&custom).unwrap();
    let out = sb
        .command(bin("sessionpipe"))
        .env("CODEX_HOME", &custom)
        .args(["install", "--harness", "codex"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(custom.join("hooks.json").is_file());
    assert!(custom.join("config.toml").is_file());
    assert!(!codex_dir(&sb).exists());

    // `codex` on PATH is enough: a fresh home gets ~/.codex.
    let fake = sb.root().join("bin");
    std::fs::create_dir_all(&fake).unwrap();
    std::fs::write(fake.join("codex"), "").unwrap();
    let out = sb
        .command(bin("sessionpipe"))
        .env("PATH", &fake)
        .args(["install", "--harness", "codex"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("codex: installed"));
    assert!(codex_dir(&sb).join("config.toml").is_file());
}

#[test]
fn an_older_hook_path_is_outdated_and_replaced_keeping_the_chain() {
    let sb = Sandbox::new();
    let dir = codex_dir(&sb);
    write(&dir.join("config.toml"), CONFIG);
    let old = sb.root().join("old-version/sessionpipe-hook");
    std::fs::create_dir_all(old.parent().unwrap()).unwrap();
    std::fs::copy(bin("sessionpipe-hook"), &old).unwrap();
    let out = sb
        .command(bin("sessionpipe"))
        .env("SESSIONPIPE_HOOK_BIN", &old)
        .args(["install", "--harness", "codex"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let (said, _, _) = run(&sb, &["status"]);
    assert!(
        said.contains("~/.codex/config.toml: the notify entry is from another version or edited"),
        "{said}"
    );
    assert!(said.contains("0 of 12 events current"), "{said}");
    let (said, _, _) = run(&sb, &["install", "--harness", "codex"]);
    assert!(said.starts_with("codex: installed"), "{said}");
    let argv = notify_of(&read(&dir.join("config.toml"))).unwrap();
    assert_eq!(argv[0], hook_path());
    let previous: Vec<String> = serde_json::from_str(&argv[4]).unwrap();
    assert_eq!(
        previous[0],
        "/Applications/Codex.app/Contents/Resources/notify"
    );
    assert_eq!(
        read(&dir.join("hooks.json")).matches("old-version").count(),
        0
    );
    run(&sb, &["uninstall", "--harness", "codex"]);
    assert_eq!(read(&dir.join("config.toml")), CONFIG);
}

#[test]
fn a_config_that_is_not_toml_is_skipped_and_left_alone() {
    let sb = Sandbox::new();
    let config = codex_dir(&sb).join("config.toml");
    let broken = "model = \"o3\"\n[projects\n";
    write(&config, broken);
    let (said, _, out) = run(&sb, &["install", "--harness", "codex"]);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("skipped (~/.codex/config.toml: not valid TOML (line 2, column"),
        "{said}"
    );
    assert_eq!(read(&config), broken);
    let (said, _, _) = run(&sb, &["status"]);
    assert!(said.contains("skipped (~/.codex/config.toml"), "{said}");
    let (_, _, out) = run(&sb, &["uninstall", "--harness", "codex"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(read(&config), broken);
}
