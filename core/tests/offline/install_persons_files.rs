//! `sessionpipe install | uninstall | status` on harness configs that are the
//! person's in ways beyond their bytes: a symlink into a dotfiles repository
//! (written through, never replaced), a dangling one (left dangling), a file made
//! read-only (left alone, mode and bytes), and a key written twice where our
//! entries are read or written (skipped in every format, since the harness reads
//! the last of the two).

use harness::digest::sha256_hex;
use serde_json::Value;
use sessionpipe_testkit::Sandbox;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Output;

const SETTINGS: &str = r#"{
  "model": "opus",
  "hooks": {
    "Stop": [
      { "hooks": [{ "type": "command", "command": "notify-send done" }] }
    ]
  }
}
"#;

fn run(sb: &Sandbox, args: &[&str]) -> (String, Output) {
    let out = sb.sessionpipe(args);
    (String::from_utf8_lossy(&out.stdout).into_owned(), out)
}

/// `cmd` (`install`, `uninstall`, `status`) for one harness: what it said of
/// it, and the exit code. `status` reports every harness: its line is picked.
fn act(sb: &Sandbox, cmd: &str, harness: &str) -> (String, Option<i32>) {
    let (said, out) = if cmd == "status" {
        run(sb, &[cmd])
    } else {
        run(sb, &[cmd, "--harness", harness])
    };
    let said = match cmd {
        "status" => said
            .lines()
            .find(|l| l.starts_with(&format!("{harness}: ")))
            .map(|l| format!("{l}\n"))
            .unwrap_or_default(),
        _ => said,
    };
    (said, out.status.code())
}

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn sha(p: &Path) -> String {
    sha256_hex(&std::fs::read(p).unwrap())
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn is_link(p: &Path) -> bool {
    p.symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
}

/// The sessionpipe handlers in a Claude-shaped file.
fn ours(p: &Path) -> usize {
    let v: Value = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
    v["hooks"]
        .as_object()
        .into_iter()
        .flatten()
        .flat_map(|(_, groups)| groups.as_array().into_iter().flatten())
        .flat_map(|g| g["hooks"].as_array().into_iter().flatten())
        .filter(|h| {
            h["command"]
                .as_str()
                .is_some_and(|c| c.contains("sessionpipe-hook"))
        })
        .count()
}

/// `~/.claude/settings.json` -> `~/dotfiles/claude/settings.json`.
fn dotfiles(sb: &Sandbox) -> (PathBuf, PathBuf) {
    let link = sb.home.join(".claude/settings.json");
    let target = sb.home.join("dotfiles/claude/settings.json");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    symlink(&target, &link).unwrap();
    (link, target)
}

// ---------------------------------------------------------------- symlinks

#[test]
fn a_symlinked_settings_file_is_written_through_its_link_and_restored_there() {
    let sb = Sandbox::new();
    let (link, target) = dotfiles(&sb);
    write(&target, SETTINGS);
    chmod(&target, 0o640);
    let before = sha(&target);

    let (said, out) = run(&sb, &["install", "--harness", "claude-code"]);
    assert!(out.status.success(), "{said}");
    assert_eq!(said, "claude-code: installed (~/.claude/settings.json)\n");
    assert!(is_link(&link), "the link is still a link");
    assert_eq!(std::fs::read_link(&link).unwrap(), target);
    assert_eq!(ours(&target), 14, "our hooks are in the dotfiles' file");
    assert!(
        std::fs::read_to_string(&target)
            .unwrap()
            .contains("notify-send done")
    );
    assert_eq!(mode(&target), 0o640, "the target's permissions are kept");
    let beside: Vec<_> = std::fs::read_dir(target.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        beside,
        ["settings.json"],
        "no temp file left in the repository"
    );
    // The ledger knows the file by the path the person has.
    let ledger = std::fs::read_to_string(sb.state.join("install.json")).unwrap();
    assert!(ledger.contains(&*link.to_string_lossy()), "{ledger}");
    assert!(!ledger.contains("dotfiles"), "{ledger}");

    let (said, _) = act(&sb, "status", "claude-code");
    assert_eq!(said, "claude-code: current (~/.claude/settings.json)\n");

    let (said, out) = run(&sb, &["uninstall", "--harness", "claude-code"]);
    assert!(out.status.success(), "{said}");
    assert_eq!(said, "claude-code: removed (~/.claude/settings.json)\n");
    assert_eq!(sha(&target), before, "the target's original bytes");
    assert!(is_link(&link));
    assert_eq!(std::fs::read_link(&link).unwrap(), target);
    assert_eq!(mode(&target), 0o640);
}

#[test]
fn a_relative_link_chain_is_followed_to_its_end() {
    let sb = Sandbox::new();
    let codex = sb.home.join(".codex");
    let real = sb.home.join("dotfiles/codex/hooks.json");
    write(&real, "{}\n");
    std::fs::create_dir_all(&codex).unwrap();
    // hooks.json -> ../dotfiles/current.json -> codex/hooks.json
    symlink("codex/hooks.json", sb.home.join("dotfiles/current.json")).unwrap();
    symlink("../dotfiles/current.json", codex.join("hooks.json")).unwrap();

    let (said, out) = run(&sb, &["install", "--harness", "codex"]);
    assert!(out.status.success(), "{said}");
    assert!(is_link(&codex.join("hooks.json")));
    assert!(is_link(&sb.home.join("dotfiles/current.json")));
    assert!(ours(&real) > 0);
    run(&sb, &["uninstall", "--harness", "codex"]);
    assert_eq!(std::fs::read_to_string(&real).unwrap(), "{}\n");
    assert!(is_link(&codex.join("hooks.json")));
}

#[test]
fn a_file_we_created_and_the_person_then_linked_is_emptied_not_removed() {
    let sb = Sandbox::new();
    let settings = sb.home.join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    run(&sb, &["install", "--harness", "claude-code"]);
    assert!(settings.is_file(), "a new file of ours");
    // A dotfiles manager adopts it: moved into the repository, linked back.
    let target = sb.home.join("dotfiles/claude/settings.json");
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    std::fs::rename(&settings, &target).unwrap();
    symlink(&target, &settings).unwrap();

    let (said, out) = run(&sb, &["uninstall", "--harness", "claude-code"]);
    assert!(out.status.success(), "{said}");
    assert!(is_link(&settings), "the person's link stays");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "{}\n");
}

#[test]
fn a_dangling_link_is_skipped_and_left_dangling() {
    let sb = Sandbox::new();
    let (link, target) = dotfiles(&sb);
    let why = format!(
        "a symlink to {}, which does not exist: sessionpipe creates nothing there",
        target.display()
    );
    for cmd in ["install", "status", "uninstall"] {
        let (said, code) = act(&sb, cmd, "claude-code");
        assert_eq!(
            said,
            format!("claude-code: skipped (~/.claude/settings.json: {why})\n"),
            "{cmd}"
        );
        if cmd != "status" {
            assert_eq!(code, Some(1), "{cmd}: {said}");
        }
        assert!(is_link(&link), "{cmd}");
        assert_eq!(std::fs::read_link(&link).unwrap(), target);
        assert!(!sb.home.join("dotfiles").exists(), "{cmd}: nothing created");
    }
    assert!(!sb.state.join("backups").exists());
}

// ---------------------------------------------------------------- read-only

#[test]
fn a_read_only_file_is_skipped_with_its_mode_and_left_as_it_is() {
    let sb = Sandbox::new();
    let settings = sb.home.join(".claude/settings.json");
    write(&settings, SETTINGS);
    chmod(&settings, 0o444);
    let before = sha(&settings);
    let why = "read-only (mode 0444): make it writable to let sessionpipe edit it";

    let (said, out) = run(&sb, &["install", "--harness", "claude-code"]);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert_eq!(
        said,
        format!("claude-code: skipped (~/.claude/settings.json: {why})\n")
    );
    assert_eq!(sha(&settings), before);
    assert_eq!(mode(&settings), 0o444);
    assert!(
        !sb.state.join("backups").exists(),
        "nothing kept, nothing written"
    );
    let (said, _) = act(&sb, "status", "claude-code");
    assert_eq!(
        said,
        format!("claude-code: skipped (~/.claude/settings.json: {why})\n")
    );
    let (said, _) = run(&sb, &["install", "--dry-run", "--harness", "claude-code"]);
    assert!(said.contains("skipped"), "{said}");
    assert_eq!(sha(&settings), before);

    // Through a link, the mode of the file it names is what counts.
    let sb = Sandbox::new();
    let (link, target) = dotfiles(&sb);
    write(&target, SETTINGS);
    chmod(&target, 0o555);
    let (said, out) = run(&sb, &["install", "--harness", "claude-code"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(said.contains("read-only (mode 0555)"), "{said}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), SETTINGS);
    assert!(is_link(&link));
}

#[test]
fn a_file_made_read_only_after_install_keeps_our_entries_until_made_writable() {
    let sb = Sandbox::new();
    let settings = sb.home.join(".claude/settings.json");
    write(&settings, SETTINGS);
    chmod(&settings, 0o600);
    run(&sb, &["install", "--harness", "claude-code"]);
    chmod(&settings, 0o400);
    let installed = sha(&settings);

    // Its hooks run: status says so; install has nothing to write.
    let (said, _) = act(&sb, "status", "claude-code");
    assert_eq!(said, "claude-code: current (~/.claude/settings.json)\n");
    let (said, out) = run(&sb, &["uninstall", "--harness", "claude-code"]);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("skipped (~/.claude/settings.json: read-only (mode 0400)"),
        "{said}"
    );
    assert_eq!(sha(&settings), installed);
    assert_eq!(mode(&settings), 0o400);

    chmod(&settings, 0o600);
    let (said, out) = run(&sb, &["uninstall", "--harness", "claude-code"]);
    assert!(out.status.success(), "{said}");
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), SETTINGS);
    assert_eq!(mode(&settings), 0o600);
}

// ---------------------------------------------------------------- doubled keys

/// Installs `harness` with `file` holding `text`: it must be skipped naming
/// `key`, the file byte-identical, `status` and `uninstall` skipping it too.
fn refused(sb: &Sandbox, harness: &str, file: &Path, text: &str, key: &str) {
    write(file, text);
    let before = sha(file);
    let shown = format!("~/{}", file.strip_prefix(&sb.home).unwrap().display());
    for cmd in ["install", "status", "uninstall"] {
        let (said, code) = act(sb, cmd, harness);
        let why = format!("{shown}: not plain JSON (duplicate key \"{key}\" on lines ");
        assert!(said.contains(&why), "{harness} {cmd}: {said}");
        assert!(!said.contains(&format!("current ({shown}")), "{said}");
        if cmd != "status" {
            assert_eq!(code, Some(1), "{harness} {cmd}: {said}");
        }
        assert_eq!(sha(file), before, "{harness} {cmd}: byte-identical");
    }
}

#[test]
fn a_doubled_hooks_key_is_skipped_and_status_never_says_current() {
    let sb = Sandbox::new();
    let settings = sb.home.join(".claude/settings.json");
    // The harness reads the second "hooks"; we would have written into the first.
    let doubled = "{\n  \"hooks\": {},\n  \"model\": \"opus\",\n  \"hooks\": {\"Stop\": []}\n}\n";
    refused(&sb, "claude-code", &settings, doubled, "hooks");
    let (said, _) = run(&sb, &["install", "--harness", "claude-code"]);
    assert!(said.contains("on lines 2 and 4"), "{said}");

    // Ours in the first, a second "hooks" added by hand: the hooks that run are
    // the second's, and nothing may say current.
    write(&settings, "{\n  \"model\": \"opus\"\n}\n");
    run(&sb, &["install", "--harness", "claude-code"]);
    let text = std::fs::read_to_string(&settings).unwrap();
    let edited = text.replacen("\n}", ",\n  \"hooks\": {}\n}", 1);
    assert_ne!(edited, text);
    refused(&sb, "claude-code", &settings, &edited, "hooks");
}

#[test]
fn a_doubled_key_under_hooks_is_skipped_in_every_claude_shaped_format() {
    let sb = Sandbox::new();
    // Claude Code: an event twice.
    refused(
        &sb,
        "claude-code",
        &sb.home.join(".claude/settings.json"),
        "{\"hooks\": {\"Stop\": [],\n \"Stop\": []}}",
        "Stop",
    );
    // Codex hooks.json: a handler's command twice (its config.toml is fine, and installed).
    let codex = sb.home.join(".codex/hooks.json");
    let text = "{\"hooks\": {\"Stop\": [{\"hooks\": [\n  {\"type\": \"command\", \"command\": \"a\", \"command\": \"b\"}\n]}]}}\n";
    write(&codex, text);
    let (said, out) = run(&sb, &["install", "--harness", "codex"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        said.contains("hooks.json: not plain JSON (duplicate key \"command\" on lines 2 and 2"),
        "{said}"
    );
    assert!(said.contains("installed (~/.codex/config.toml)"), "{said}");
    assert_eq!(std::fs::read_to_string(&codex).unwrap(), text);
    // Gemini CLI: "hooks" twice.
    refused(
        &sb,
        "gemini-cli",
        &sb.home.join(".gemini/settings.json"),
        "{\"hooks\": {},\n\"hooks\": {}}\n",
        "hooks",
    );
    // Devin: a group's "hooks" twice.
    refused(
        &sb,
        "devin",
        &sb.home.join(".config/devin/config.json"),
        "{\"hooks\": {\"Stop\": [{\"hooks\": [], \"hooks\": []}]}}\n",
        "hooks",
    );
    // Grok Build's own file, edited by hand.
    refused(
        &sb,
        "grok-build",
        &sb.home.join(".grok/hooks/sessionpipe.json"),
        "{\"hooks\": {\"Stop\": [{\"matcher\": \"\", \"matcher\": \"x\", \"hooks\": []}]}}\n",
        "matcher",
    );
}

#[test]
fn a_doubled_status_line_is_skipped_and_the_hooks_still_go_in() {
    let sb = Sandbox::new();
    let settings = sb.home.join(".claude/settings.json");
    let text = "{\n  \"statusLine\": {\"type\": \"command\", \"command\": \"a.sh\"},\n  \"statusLine\": {\"type\": \"command\", \"command\": \"b.sh\"}\n}\n";
    write(&settings, text);
    let (said, out) = run(
        &sb,
        &["install", "--status-line", "--harness", "claude-code"],
    );
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("skipped (status-line in ~/.claude/settings.json: not plain JSON (duplicate key \"statusLine\" on lines 2 and 3"),
        "{said}"
    );
    assert!(
        said.contains("installed (~/.claude/settings.json)"),
        "{said}"
    );
    let now = std::fs::read_to_string(&settings).unwrap();
    assert!(
        now.contains("a.sh\"},\n  \"statusLine\": {\"type\": \"command\", \"command\": \"b.sh\"}"),
        "{now}"
    );
    run(&sb, &["uninstall", "--harness", "claude-code"]);
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), text);
}

#[test]
fn codex_config_toml_with_a_doubled_key_is_not_toml_and_is_skipped() {
    let sb = Sandbox::new();
    let config = sb.home.join(".codex/config.toml");
    for (text, why) in [
        (
            "model = \"o3\"\nnotify = [\"say\"]\nnotify = [\"ding\"]\n",
            "(line 3, column 1: duplicate key `notify`)",
        ),
        (
            "[tui]\nnotifications = true\n\n[tui]\nnotifications = false\n",
            "(line 4, column 2: duplicate key `tui`)",
        ),
        (
            "model = \"o3\"\nmodel = \"o4\"\n",
            "(line 2, column 1: duplicate key `model`)",
        ),
    ] {
        write(&config, text);
        let before = sha(&config);
        for cmd in ["install", "status", "uninstall"] {
            let (said, _) = act(&sb, cmd, "codex");
            assert!(
                said.contains(&format!("~/.codex/config.toml: not valid TOML {why}")),
                "{cmd} {text:?}: {said}"
            );
            assert_eq!(sha(&config), before, "{cmd}");
        }
    }
}

#[test]
fn antigravity_repairs_a_doubled_entry_of_its_own_and_keeps_the_persons_doubles() {
    let sb = Sandbox::new();
    let hooks = sb.home.join(".gemini/config/hooks.json");
    // Their hook named twice (Antigravity reads the last), and ours twice.
    let theirs = "{\n  \"lint\": {\"Stop\": []},\n  \"lint\": {\"Stop\": []}";
    write(
        &hooks,
        &format!("{theirs},\n  \"sessionpipe\": {{}},\n  \"sessionpipe\": {{}}\n}}\n"),
    );
    let (said, _) = act(&sb, "status", "antigravity");
    assert!(
        said.contains("outdated (~/.gemini/config/hooks.json: 2 entries named sessionpipe)"),
        "{said}"
    );
    let (said, out) = run(&sb, &["install", "--harness", "antigravity"]);
    assert!(out.status.success(), "{said}");
    let text = std::fs::read_to_string(&hooks).unwrap();
    assert!(text.starts_with(theirs), "{text}");
    assert_eq!(text.matches("\"sessionpipe\"").count(), 1, "{text}");
    let (said, _) = act(&sb, "status", "antigravity");
    assert!(said.contains("current"), "{said}");
}
