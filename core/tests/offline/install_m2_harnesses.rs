//! Antigravity, Devin and Grok Build through the real binaries: `sessionpipe
//! install | uninstall | status` on realistic files (other tools' hooks, tabs,
//! CRLF, comments), the hook's stdout, and payloads becoming events. None of the
//! three harnesses can run here, so their payloads are the rows' and the shared
//! recordings' (Devin).

use serde_json::{Value, json};
use sessionpipe_testkit::{Sandbox, sandbox::bin};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

/// A `PATH` holding only the named fake executables, so that whatever is on the
/// machine's own `PATH` does not decide what is found.
fn path_with(sb: &Sandbox, bins: &[&str]) -> PathBuf {
    let dir = sb.root().join(format!("bin-{}", bins.join("-")));
    std::fs::create_dir_all(&dir).unwrap();
    for b in bins {
        let p = dir.join(b);
        sessionpipe_testkit::executable::write_executable(&p, "#!/bin/sh\n");
    }
    dir
}

/// `sessionpipe ARGS` with `PATH` from `path_with` and extra environment.
fn cli(sb: &Sandbox, path: &Path, env: &[(&str, &Path)], args: &[&str]) -> (String, Output) {
    let mut c: Command = sb.command(bin("sessionpipe"));
    c.env("PATH", path).args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    (String::from_utf8_lossy(&out.stdout).into_owned(), out)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

/// The outbox's events once the drain worker the hooks started is done. Waiting
/// for the worker first keeps `tail` off an outbox that is still being created
/// (reading one then fails with "no such table").
fn settled_events(sb: &Sandbox, n: usize) -> Vec<Value> {
    sb.wait_idle(Duration::from_secs(20));
    sb.wait_for_events(n, Duration::from_secs(20))
}

// ---------------------------------------------------------------- Devin

const DEVIN_CONFIG: &str = "{\r\n\t\"devin\": {\r\n\t\t\"org_id\": \"org-4a1c\"\r\n\t},\r\n\t\"read_config_from\": {\r\n\t\t\"claude\": true\r\n\t},\r\n\t\"hooks\": {\r\n\t\t\"Stop\": [\r\n\t\t\t{\r\n\t\t\t\t\"hooks\": [\r\n\t\t\t\t\t{\"type\": \"command\", \"command\": \"notify-send 'Devin is done'\"}\r\n\t\t\t\t]\r\n\t\t\t}\r\n\t\t]\r\n\t}\r\n}\r\n";

fn devin_config(sb: &Sandbox) -> PathBuf {
    sb.home.join(".config/devin/config.json")
}

#[test]
fn devin_install_writes_its_eight_events_and_uninstall_restores_the_bytes() {
    let sb = Sandbox::new();
    let none = path_with(&sb, &[]);
    write(&devin_config(&sb), DEVIN_CONFIG);
    let (said, out) = cli(&sb, &none, &[], &["install", "--harness", "devin"]);
    assert!(out.status.success(), "{said}");
    assert_eq!(said, "devin: installed (~/.config/devin/config.json)\n");
    assert!(stderr(&out).contains("note: devin: `/hooks` inside devin lists"));

    let text = read(&devin_config(&sb));
    assert!(!text.replace("\r\n", "").contains('\n'), "CRLF kept");
    assert!(
        text.split("\r\n").all(|l| l
            .chars()
            .take_while(|c| c.is_whitespace())
            .all(|c| c == '\t')),
        "tabs kept"
    );
    let v: Value = serde_json::from_str(&text).unwrap();
    let mut events: Vec<&str> = v["hooks"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    events.sort();
    assert_eq!(
        events,
        [
            "PermissionRequest",
            "PostCompaction",
            "PostToolUse",
            "PreToolUse",
            "SessionEnd",
            "SessionStart",
            "Stop",
            "UserPromptSubmit"
        ]
    );
    for (event, groups) in v["hooks"].as_object().unwrap() {
        let ours = groups.as_array().unwrap().last().unwrap();
        let tool_event = matches!(
            event.as_str(),
            "PreToolUse" | "PostToolUse" | "PermissionRequest"
        );
        assert_eq!(ours.get("matcher").is_some(), tool_event, "{event}");
        if tool_event {
            assert_eq!(ours["matcher"], "", "a regex matching every tool");
        }
        assert_eq!(ours["hooks"][0]["timeout"], 5);
        assert!(
            ours["hooks"][0]["command"]
                .as_str()
                .unwrap()
                .ends_with(&format!("sessionpipe-hook\" devin {event}"))
        );
    }
    assert_eq!(
        v["hooks"]["Stop"][0]["hooks"][0]["command"],
        "notify-send 'Devin is done'"
    );
    assert_eq!(v["devin"]["org_id"], "org-4a1c");

    let (said, _) = cli(&sb, &none, &[], &["status"]);
    assert!(
        said.contains("devin: current (~/.config/devin/config.json)"),
        "{said}"
    );
    let (said, out) = cli(&sb, &none, &[], &["uninstall", "--harness", "devin"]);
    assert!(out.status.success());
    assert_eq!(said, "devin: removed (~/.config/devin/config.json)\n");
    assert_eq!(read(&devin_config(&sb)), DEVIN_CONFIG);
    let (said, _) = cli(&sb, &none, &[], &["status"]);
    assert!(
        said.contains("devin: hooks not installed (~/.config/devin/config.json)"),
        "{said}"
    );
}

#[test]
fn devin_is_inactive_while_its_file_names_an_event_devin_rejects() {
    let sb = Sandbox::new();
    let none = path_with(&sb, &[]);
    let foreign = "{\n  \"hooks\": {\n    \"Notification\": [\n      {\"hooks\": [{\"type\": \"command\", \"command\": \"beep\"}]}\n    ]\n  }\n}\n";
    write(&devin_config(&sb), foreign);
    let (said, out) = cli(&sb, &none, &[], &["install", "--harness", "devin"]);
    assert!(out.status.success(), "{said}");
    assert_eq!(
        said,
        "devin: inactive (~/.config/devin/config.json: the file names events the harness does not know (Notification), so it loads none of the hooks in it)\n"
    );
    let (said, _) = cli(&sb, &none, &[], &["status"]);
    assert!(said.contains("devin: inactive ("), "{said}");
    // Our entries are byte-current all the same: install again writes nothing.
    let before = read(&devin_config(&sb));
    cli(&sb, &none, &[], &["install", "--harness", "devin"]);
    assert_eq!(read(&devin_config(&sb)), before);
    cli(&sb, &none, &[], &["uninstall", "--harness", "devin"]);
    assert_eq!(read(&devin_config(&sb)), foreign);
}

#[test]
fn a_devin_config_with_comments_is_skipped_and_left_alone() {
    let sb = Sandbox::new();
    let none = path_with(&sb, &[]);
    let commented = "{\n  // signed in as ann\n  \"devin\": {\"org_id\": \"org-1\"}\n}\n";
    write(&devin_config(&sb), commented);
    let (said, out) = cli(&sb, &none, &[], &["install", "--harness", "devin"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        said.starts_with("devin: skipped (~/.config/devin/config.json: not plain JSON (line 2"),
        "{said}"
    );
    assert_eq!(read(&devin_config(&sb)), commented);
    let (said, _) = cli(&sb, &none, &[], &["status"]);
    assert!(said.contains("devin: skipped"), "{said}");
}

#[test]
fn devin_is_found_by_its_config_dir_or_path_and_follows_xdg() {
    let sb = Sandbox::new();
    let none = path_with(&sb, &[]);
    let (said, _) = cli(&sb, &none, &[], &["install", "--harness", "devin"]);
    assert_eq!(
        said,
        "devin: not found (looked for ~/.config/devin and `devin` on PATH)\n"
    );
    assert!(!sb.home.join(".config").exists());

    let xdg = sb.root().join("xdg");
    let with_devin = path_with(&sb, &["devin"]);
    let env = [("XDG_CONFIG_HOME", xdg.as_path())];
    let (said, out) = cli(&sb, &with_devin, &env, &["install", "--harness", "devin"]);
    assert!(out.status.success(), "{said}");
    let created = xdg.join("devin/config.json");
    let v: Value = serde_json::from_str(&read(&created)).unwrap();
    assert_eq!(v["hooks"].as_object().unwrap().len(), 8);
    // A file we created is removed again.
    cli(&sb, &with_devin, &env, &["uninstall", "--harness", "devin"]);
    assert!(!created.exists());
}

#[test]
fn the_shared_devin_recordings_pass() {
    let shared =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance/harness/devin");
    if !shared.is_dir() {
        eprintln!(
            "skipped: {} is absent (a clone elsewhere)",
            shared.display()
        );
        return;
    }
    let sb = Sandbox::new();
    let out = sb.sessionpipe(&["conformance", shared.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.ends_with("6 passed, 0 failed\n"), "{text}");
}

#[test]
fn a_devin_tool_it_was_refused_ends_with_the_session_and_no_stop() {
    let sb = Sandbox::new();
    let env = [("DEVIN_PROJECT_DIR", "/srv/devin-proj")];
    let base =
        json!({"session_id": "frill-vulture", "prompt_id": "715ae593-e501-4349-b11f-ed487c21047f"});
    let call = "call_e4ee5fa9d8e744d18ac42d8e#42f1582708a345a09d67f3e7324bcede";
    for (event, extra) in [
        (
            "SessionStart",
            json!({"source": "startup", "prompt_id": null}),
        ),
        ("UserPromptSubmit", json!({"prompt": "delete build/"})),
        (
            "PreToolUse",
            json!({"tool_name": "exec", "tool_use_id": call, "tool_input": {"command": "rm -rf build"}}),
        ),
        (
            "PermissionRequest",
            json!({"tool_name": "exec", "tool_use_id": call, "tool_input": {"command": "rm -rf build"}}),
        ),
        ("SessionEnd", json!({"reason": "other"})),
    ] {
        let mut p = base.clone();
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        p["hook_event_name"] = json!(event);
        let out = sb.hook_with("devin", event, p.to_string().as_bytes(), &env);
        assert!(out.status.success() && out.stdout.is_empty(), "{event}");
    }
    let events = settled_events(&sb, 6);
    assert_eq!(
        kinds(&events),
        [
            "session.started",
            "turn.started",
            "tool.started",
            "attention.needed",
            "attention.cleared",
            "session.ended"
        ]
    );
    assert_eq!(events[3]["data"]["attention_id"], call);
    assert_eq!(
        events[4]["data"],
        json!({"attention_id": call, "how": "cancelled"})
    );
    assert!(
        events
            .iter()
            .all(|e| e["session"]["cwd"] == "/srv/devin-proj")
    );
}

// ---------------------------------------------------------------- Grok Build

fn grok_file(home: &Path) -> PathBuf {
    home.join("hooks/sessionpipe.json")
}

#[test]
fn grok_gets_a_file_of_its_own_and_loses_it_again() {
    let sb = Sandbox::new();
    let none = path_with(&sb, &[]);
    let grok = sb.home.join(".grok");
    let theirs = "{\"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]}]}}";
    write(&grok.join("hooks/mine.json"), theirs);
    let (said, out) = cli(&sb, &none, &[], &["install", "--harness", "grok-build"]);
    assert!(out.status.success(), "{said}");
    assert_eq!(
        said,
        "grok-build: installed (~/.grok/hooks/sessionpipe.json)\n"
    );
    assert!(stderr(&out).contains("once it is trusted"));
    let v: Value = serde_json::from_str(&read(&grok_file(&grok))).unwrap();
    let hooks = v["hooks"].as_object().unwrap();
    assert_eq!(hooks.len(), 11);
    for (event, groups) in hooks {
        let g = &groups[0];
        if event == "Notification" {
            assert_eq!(g["matcher"], "permission_prompt");
        } else {
            assert!(
                g.get("matcher").is_none(),
                "{event}: an omitted matcher matches all"
            );
        }
        assert_eq!(g["hooks"][0]["timeout"], 5);
    }
    assert!(hooks.contains_key("StopCancelled") && hooks.contains_key("PreCompact"));
    assert_eq!(read(&grok.join("hooks/mine.json")), theirs);
    let (said, _) = cli(&sb, &none, &[], &["status"]);
    assert!(
        said.contains("grok-build: current (~/.grok/hooks/sessionpipe.json)"),
        "{said}"
    );

    let (said, _) = cli(&sb, &none, &[], &["uninstall", "--harness", "grok-build"]);
    assert_eq!(
        said,
        "grok-build: removed (~/.grok/hooks/sessionpipe.json)\n"
    );
    assert!(
        !grok_file(&grok).exists(),
        "a file that was all ours is removed"
    );
    assert_eq!(read(&grok.join("hooks/mine.json")), theirs);
    let (said, _) = cli(&sb, &none, &[], &["status"]);
    assert!(
        said.contains("grok-build: hooks not installed (~/.grok/hooks/sessionpipe.json)"),
        "{said}"
    );
}

#[test]
fn grok_home_an_older_hook_and_an_edited_file() {
    let sb = Sandbox::new();
    let with_grok = path_with(&sb, &["grok"]);
    let grok = sb.root().join("grok-home");
    let env = [("GROK_HOME", grok.as_path())];
    // Found by `grok` on PATH though its home does not exist yet.
    let old = sb.root().join("old/sessionpipe-hook");
    std::fs::create_dir_all(old.parent().unwrap()).unwrap();
    std::fs::copy(bin("sessionpipe-hook"), &old).unwrap();
    let old_env = [
        ("GROK_HOME", grok.as_path()),
        ("SESSIONPIPE_HOOK_BIN", old.as_path()),
    ];
    let (said, out) = cli(
        &sb,
        &with_grok,
        &old_env,
        &["install", "--harness", "grok-build"],
    );
    assert!(out.status.success(), "{said}");
    let (said, _) = cli(&sb, &with_grok, &env, &["status"]);
    assert!(
        said.contains("grok-build: outdated (") && said.contains("0 of 11 events current"),
        "{said}"
    );
    let (said, _) = cli(
        &sb,
        &with_grok,
        &env,
        &["install", "--harness", "grok-build"],
    );
    assert!(said.starts_with("grok-build: installed"), "{said}");
    assert!(!read(&grok_file(&grok)).contains("/old/"));

    // The person adds a hook of their own to our file: uninstall keeps it. (Into
    // the list that is there: a second "PostToolUse" key would be skipped, since
    // Grok reads only the last.)
    let text = read(&grok_file(&grok));
    let edited = text.replacen(
        "\"PostToolUse\": [",
        "\"PostToolUse\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"log.sh\"}]},",
        1,
    );
    assert_ne!(edited, text);
    std::fs::write(grok_file(&grok), &edited).unwrap();
    cli(
        &sb,
        &with_grok,
        &env,
        &["uninstall", "--harness", "grok-build"],
    );
    let left: Value = serde_json::from_str(&read(&grok_file(&grok))).unwrap();
    assert_eq!(
        left,
        json!({"hooks": {"PostToolUse": [{"hooks": [{"type": "command", "command": "log.sh"}]}]}})
    );
}

#[test]
fn grok_is_not_found_without_its_home_or_binary() {
    let sb = Sandbox::new();
    let none = path_with(&sb, &[]);
    let (said, out) = cli(&sb, &none, &[], &["install", "--harness", "grok-build"]);
    assert!(out.status.success());
    assert_eq!(
        said,
        "grok-build: not found (looked for ~/.grok and `grok` on PATH)\n"
    );
    assert!(!sb.home.join(".grok").exists());
}

#[test]
fn grok_payloads_become_events_and_the_shutdown_stop_reports_nothing() {
    let sb = Sandbox::new();
    let sid = "019a72c4-3e1d-7b58-a0f2-6c1d9e4b8a37";
    let call = |event: &str, snake: &str, extra: Value| {
        let mut p = json!({"hookEventName": snake, "hook_event_name": event, "sessionId": sid,
            "session_id": sid, "workspaceRoot": "/srv/grok", "cwd": "/srv/grok",
            "timestamp": "2026-11-11T10:00:00Z", "permissionMode": "default"});
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let out = sb.hook("grok-build", event, p.to_string().as_bytes());
        assert!(out.status.success() && out.stdout.is_empty(), "{event}");
    };
    call("SessionStart", "session_start", json!({"source": "new"}));
    call(
        "UserPromptSubmit",
        "user_prompt_submit",
        json!({"promptId": "pr-1", "prompt": "hi"}),
    );
    call(
        "PostToolUse",
        "post_tool_use",
        json!({"toolName": "bash", "toolUseId": "tu-1", "durationMs": 12}),
    );
    call(
        "Stop",
        "stop",
        json!({"promptId": "pr-1", "reason": "end_turn"}),
    );
    call("SessionEnd", "session_end", json!({"reason": "shutdown"}));
    call("Stop", "stop", json!({"reason": "shutdown"}));
    let events = settled_events(&sb, 5);
    assert_eq!(
        kinds(&events),
        [
            "session.started",
            "turn.started",
            "tool.ended",
            "turn.ended",
            "session.ended"
        ]
    );
    assert_eq!(events[2]["data"]["ms"], 12);
    assert_eq!(events[4]["data"]["reason"], "exit");
}

// ---------------------------------------------------------------- Antigravity

const AGY_HOOKS: &str = "{\r\n\t\"my-linter\": {\r\n\t\t\"PostToolUse\": [\r\n\t\t\t{\r\n\t\t\t\t\"matcher\": \"run_command\",\r\n\t\t\t\t\"hooks\": [{\"type\": \"command\", \"command\": \"./scripts/lint.sh\", \"timeout\": 10}]\r\n\t\t\t}\r\n\t\t]\r\n\t},\r\n\t\"safety-gate\": {\r\n\t\t\"enabled\": false,\r\n\t\t\"PreToolUse\": [{\"matcher\": \"run_command\", \"hooks\": [{\"command\": \"./scripts/safety.sh\"}]}]\r\n\t}\r\n}\r\n";

fn agy_hooks(sb: &Sandbox) -> PathBuf {
    sb.home.join(".gemini/config/hooks.json")
}

#[test]
fn antigravity_gets_its_named_entry_and_uninstall_restores_the_bytes() {
    let sb = Sandbox::new();
    let none = path_with(&sb, &[]);
    write(&agy_hooks(&sb), AGY_HOOKS);
    let (said, out) = cli(&sb, &none, &[], &["install", "--harness", "antigravity"]);
    assert!(out.status.success(), "{said}");
    assert_eq!(
        said,
        "antigravity: installed (~/.gemini/config/hooks.json)\n"
    );
    assert!(stderr(&out).contains("when a conversation starts"));
    let text = read(&agy_hooks(&sb));
    assert!(
        text.starts_with(&AGY_HOOKS[..AGY_HOOKS.len() - 5]),
        "theirs first, untouched"
    );
    assert!(!text.replace("\r\n", "").contains('\n'), "CRLF kept");
    let v: Value = serde_json::from_str(&text).unwrap();
    let hook = std::fs::canonicalize(bin("sessionpipe-hook")).unwrap();
    let handler = |event: &str| json!({"type": "command", "command": format!("\"{}\" antigravity {event}", hook.display()), "timeout": 5});
    assert_eq!(
        v["sessionpipe"],
        json!({
            "enabled": true,
            "PreInvocation": [handler("PreInvocation")],
            "PostInvocation": [handler("PostInvocation")],
            "PostToolUse": [{"matcher": "*", "hooks": [handler("PostToolUse")]}],
            "Stop": [handler("Stop")],
        })
    );
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["my-linter", "safety-gate", "sessionpipe"]);
    let (said, _) = cli(&sb, &none, &[], &["status"]);
    assert!(
        said.contains("antigravity: current (~/.gemini/config/hooks.json)"),
        "{said}"
    );
    let (said, _) = cli(&sb, &none, &[], &["uninstall", "--harness", "antigravity"]);
    assert_eq!(said, "antigravity: removed (~/.gemini/config/hooks.json)\n");
    assert_eq!(read(&agy_hooks(&sb)), AGY_HOOKS);
    let (said, _) = cli(&sb, &none, &[], &["status"]);
    assert!(
        said.contains("antigravity: hooks not installed (~/.gemini/config/hooks.json)"),
        "{said}"
    );
}

#[test]
fn a_stale_antigravity_pre_tool_use_is_reported_and_removed_on_install() {
    let sb = Sandbox::new();
    let none = path_with(&sb, &[]);
    let hook = std::fs::canonicalize(bin("sessionpipe-hook")).unwrap();
    let cmd = |e: &str| format!("\\\"{}\\\" antigravity {e}", hook.display());
    // What an older sessionpipe wrote: the same entry, with a PreToolUse.
    let stale = format!(
        "{{\n  \"other\": {{\"Stop\": [{{\"type\": \"command\", \"command\": \"x\"}}]}},\n  \"sessionpipe\": {{\"enabled\": true, \"PreToolUse\": [{{\"matcher\": \"*\", \"hooks\": [{{\"type\": \"command\", \"command\": \"{}\", \"timeout\": 5}}]}}], \"Stop\": [{{\"type\": \"command\", \"command\": \"{}\", \"timeout\": 5}}]}}\n}}\n",
        cmd("PreToolUse"),
        cmd("Stop")
    );
    write(&agy_hooks(&sb), &stale);
    let (said, _) = cli(&sb, &none, &[], &["status"]);
    assert!(
        said.contains("antigravity: outdated (~/.gemini/config/hooks.json: a stale PreToolUse hook, which Antigravity reads as a deny (sessionpipe no longer registers it), from another version or edited)"),
        "{said}"
    );
    let (said, out) = cli(&sb, &none, &[], &["install", "--harness", "antigravity"]);
    assert!(out.status.success(), "{said}");
    let text = read(&agy_hooks(&sb));
    assert!(!text.contains("PreToolUse"), "{text}");
    assert!(text.starts_with("{\n  \"other\": {\"Stop\": [{\"type\": \"command\", \"command\": \"x\"}]},\n  \"sessionpipe\": {\n"));
    let (said, _) = cli(&sb, &none, &[], &["status"]);
    assert!(said.contains("antigravity: current"), "{said}");
    // A stale entry still loaded is answered with an ask, never `{}` (a deny).
    let out = sb.hook("antigravity", "PreToolUse", b"{\"conversationId\": \"c\"}");
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["decision"], "ask");
}

#[test]
fn antigravity_is_found_by_its_own_traces_not_by_gemini_cli() {
    let sb = Sandbox::new();
    let none = path_with(&sb, &[]);
    write(&sb.home.join(".gemini/settings.json"), "{}\n");
    let (said, _) = cli(&sb, &none, &[], &["install", "--harness", "antigravity"]);
    assert_eq!(
        said,
        "antigravity: not found (looked for ~/.gemini/config, ~/.gemini/antigravity* and `agy` or `antigravity` on PATH)\n"
    );
    assert!(!sb.home.join(".gemini/config").exists());

    std::fs::create_dir_all(sb.home.join(".gemini/antigravity")).unwrap();
    let (said, _) = cli(&sb, &none, &[], &["install", "--harness", "antigravity"]);
    assert_eq!(
        said,
        "antigravity: installed (~/.gemini/config/hooks.json)\n"
    );
    cli(&sb, &none, &[], &["uninstall", "--harness", "antigravity"]);
    assert!(!agy_hooks(&sb).exists(), "a file we created is removed");

    let commented = "{\n  // mine\n  \"a\": {}\n}\n";
    write(&agy_hooks(&sb), commented);
    let (said, out) = cli(&sb, &none, &[], &["install", "--harness", "antigravity"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        said.starts_with("antigravity: skipped (~/.gemini/config/hooks.json: not plain JSON"),
        "{said}"
    );
    assert_eq!(read(&agy_hooks(&sb)), commented);
}

#[test]
fn antigravity_hooks_answer_json_and_heartbeats_reach_only_tier_zero() {
    let sb = Sandbox::new();
    let call = |event: &str, extra: Value| {
        let mut p = json!({"conversationId": "ec33ebf9-0cba-4100-8142-c61503f6c587",
            "workspacePaths": ["file:///srv/agy%20proj"], "modelName": "auto"});
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let out = sb.hook("antigravity", event, p.to_string().as_bytes());
        assert!(out.status.success(), "{event}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "{}\n", "{event}");
    };
    // Hooks installed mid-conversation: a later invocation is the first call seen.
    call("PreInvocation", json!({"invocationNum": 2}));
    call("PostToolUse", json!({"stepIdx": 3}));
    call(
        "PostToolUse",
        json!({"stepIdx": 4, "toolCall": {"name": "run_command", "args": {}}}),
    );
    call(
        "Stop",
        json!({"terminationReason": "model_stop", "fullyIdle": true}),
    );
    let all = settled_events(&sb, 3);
    assert_eq!(
        kinds(&all),
        ["session.started", "tool.ended", "turn.ended"],
        "{all:?}"
    );
    let tier0 = sb.events_at(&["--tier", "0"]);
    assert_eq!(
        kinds(&tier0),
        ["session.started", "session.heartbeat", "turn.ended"],
        "one heartbeat a minute, where nothing else shows the work"
    );
    assert_eq!(tier0[0]["session"]["cwd"], "/srv/agy proj");
    assert!(
        tier0[0]["session"].get("model").is_none(),
        "auto names no model"
    );
}
