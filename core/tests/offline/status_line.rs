//! Claude Code's account limits through its status line (ADAPTERS.md, Claude
//! Code row, Limits), end to end: `install --status-line` and what it never
//! replaces, the real `sessionpipe-hook claude-code StatusLine` (the line it
//! prints, the jobs it queues and holds back), the daemon's `limits.observed`,
//! and the real Claude Code running the status line in a terminal against a
//! scripted API whose answers carry the `anthropic-ratelimit-unified-*` headers.

use serde_json::{Value, json};
use sessionpipe_testkit::sandbox::{Sandbox, bin};
use sessionpipe_testkit::terminal::{Terminal, script_program};
use sessionpipe_testkit::{MockAnthropic, Script, Turn};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const SESSION: &str = "5501b74a-b3e0-40e8-8500-c07f70215827";

fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A status line payload as Claude Code 2.1.332 sends it (trimmed), for a session
/// of the config dir `config`.
fn payload(config: &Path, limits: Value) -> Vec<u8> {
    json!({
        "session_id": SESSION,
        "transcript_path": config.join(format!("projects/-work/{SESSION}.jsonl")),
        "cwd": "/work",
        "model": {"id": "claude-opus-5-5", "display_name": "Opus 5.5"},
        "version": "2.1.332",
        "rate_limits": limits,
    })
    .to_string()
    .into_bytes()
}

fn limits(five_hour: f64, seven_day: f64) -> Value {
    json!({
        "five_hour": {"used_percentage": five_hour, "resets_at": 1_795_987_162},
        "seven_day": {"used_percentage": seven_day, "resets_at": 1_796_242_762},
    })
}

/// The hook as Claude Code runs the status line, with no worker to take the
/// jobs (so the spool can be counted).
fn status_line(sb: &Sandbox, stdin: &[u8]) -> Output {
    let out = sb.hook_with(
        "claude-code",
        "StatusLine",
        stdin,
        &[("SESSIONPIPE_BIN", "/nonexistent/sessionpipe")],
    );
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "",
        "never a word on stderr"
    );
    out
}

fn printed(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("the line is UTF-8")
}

/// Moves the memory of every config dir's last job `seconds` into the past.
pub(crate) fn age_memory(sb: &Sandbox, seconds: u64) {
    for entry in std::fs::read_dir(sb.state.join("status-line"))
        .unwrap()
        .flatten()
    {
        let text = std::fs::read_to_string(entry.path()).unwrap();
        let (at, digest) = text.trim().split_once(' ').unwrap();
        let at: u64 = at.parse().unwrap();
        std::fs::write(entry.path(), format!("{} {digest}\n", at - seconds)).unwrap();
    }
}

#[test]
fn the_hook_prints_the_limits_and_queues_only_changes_at_most_once_a_minute() {
    let sb = Sandbox::new();
    let config = sb.home.join(".claude");
    let first = status_line(&sb, &payload(&config, limits(23.0, 41.0)));
    assert_eq!(printed(&first), "5h 23% · week 41%\n");
    assert_eq!(sb.spooled(), 1, "the first limits seen are queued");

    let same = status_line(&sb, &payload(&config, limits(23.0, 41.0)));
    assert_eq!(printed(&same), "5h 23% · week 41%\n");
    assert_eq!(sb.spooled(), 1, "unchanged: nothing queued");

    let changed = status_line(&sb, &payload(&config, limits(24.4, 41.0)));
    assert_eq!(
        printed(&changed),
        "5h 24% · week 41%\n",
        "the line is always current"
    );
    assert_eq!(sb.spooled(), 1, "changed within the minute: held back");

    // Another config dir (another account) has a minute of its own.
    let other = sb.home.join(".claude-work");
    status_line(&sb, &payload(&other, limits(5.0, 6.0)));
    assert_eq!(sb.spooled(), 2);

    age_memory(&sb, 61);
    status_line(&sb, &payload(&config, limits(24.4, 41.0)));
    assert_eq!(
        sb.spooled(),
        3,
        "past the minute the held-back change goes out"
    );
    status_line(&sb, &payload(&config, limits(24.4, 41.0)));
    assert_eq!(sb.spooled(), 3);

    // The job is the payload as Claude Code sent it, under the StatusLine event.
    let spool = sb.state.join("spool");
    let mut jobs: Vec<PathBuf> = std::fs::read_dir(&spool)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    jobs.sort();
    let job = sessionpipe_core::spool::Job::read(&jobs[2]).expect("a readable job");
    assert_eq!(
        (job.harness.as_str(), job.event.as_str()),
        ("claude-code", "StatusLine")
    );
    let sent: Value = serde_json::from_slice(&job.payload).unwrap();
    assert_eq!(sent["rate_limits"]["five_hour"]["used_percentage"], 24.4);
}

#[test]
fn no_limits_or_garbage_print_nothing_and_queue_nothing() {
    let sb = Sandbox::new();
    let config = sb.home.join(".claude");
    let before_first_answer = payload(&config, Value::Null);
    let mut no_limits: Value = serde_json::from_slice(&before_first_answer).unwrap();
    no_limits.as_object_mut().unwrap().remove("rate_limits");
    for stdin in [
        no_limits.to_string().into_bytes(),
        before_first_answer,
        payload(&config, json!({})),
        b"not json at all\n\x1b[31m".to_vec(),
        b"{\"rate_limits\": {\"five_hour\": {\"used_percentage\": 23".to_vec(),
        vec![0xff; 4096],
        Vec::new(),
    ] {
        let out = status_line(&sb, &stdin);
        assert_eq!(printed(&out), "", "{}", String::from_utf8_lossy(&stdin));
    }
    assert_eq!(sb.spooled(), 0);
    // A spend limit past 100% and a window Claude Code adds later still show.
    let out = status_line(
        &sb,
        &payload(
            &config,
            json!({"spend_limit": {"used_percentage": 112.5, "resets_at": 1_796_500_000},
                   "seven_day_opus": {"used_percentage": 3}}),
        ),
    );
    assert_eq!(printed(&out), "spend 113% · seven_day_opus 3%\n");
}

/// A hook call through the real binary (the daemon takes it).
fn hook(sb: &Sandbox, event: &str, stdin: &[u8]) {
    let out = sb.hook("claude-code", event, stdin);
    assert!(out.status.success());
}

fn wait_for(sb: &Sandbox, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let events = sb.wait_until(Duration::from_secs(60), &done);
    assert!(done(&events), "timed out: {events:#?}");
    events
}

#[test]
fn the_daemon_turns_a_status_line_into_limits_observed_and_clears_no_attention() {
    let sb = Sandbox::new();
    let config = sb.home.join(".claude");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        sb.home.join(".claude.json"),
        r#"{"oauthAccount": {"accountUuid": "acct-7", "emailAddress": "ann@example.com"}}"#,
    )
    .unwrap();
    let _daemon = sb.start_daemon();
    let base = json!({
        "session_id": SESSION,
        "transcript_path": config.join(format!("projects/-work/{SESSION}.jsonl")),
        "cwd": "/work",
        "prompt_id": "p-1",
    });
    let mut ask = base.clone();
    ask["hook_event_name"] = json!("PermissionRequest");
    ask["tool_name"] = json!("Bash");
    ask["tool_input"] = json!({"command": "rm -rf build"});
    hook(&sb, "PermissionRequest", ask.to_string().as_bytes());
    let spend = json!({"used_percentage": 112.5, "resets_at": 1_796_500_000,
                       "used_usd": 56.25, "limit_usd": 50, "period": "monthly"});
    let mut all = limits(23.0, 41.5);
    all["spend_limit"] = spend;
    let out = sb.hook("claude-code", "StatusLine", &payload(&config, all));
    assert_eq!(printed(&out), "5h 23% · week 42% · spend 113%\n");

    let events = wait_for(&sb, |evs| {
        evs.iter().any(|e| e["type"] == "limits.observed")
    });
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["session.started", "attention.needed", "limits.observed"],
        "the status line clears no attention"
    );
    let limits = &events[2];
    assert_eq!(limits["harness"]["event"], "StatusLine");
    assert_eq!(limits["session"]["id"], SESSION);
    assert_eq!(
        limits["data"],
        json!({
            "account_id": "acct-7",
            "windows": [
                {"id": "five_hour", "window_minutes": 300, "used_percent": 23.0,
                 "resets_at": "2026-11-29T21:19:22.000Z"},
                {"id": "seven_day", "window_minutes": 10080, "used_percent": 41.5,
                 "resets_at": "2026-12-02T20:19:22.000Z"},
                {"id": "spend_limit", "used_percent": 112.5,
                 "resets_at": "2026-12-05T19:46:40.000Z"},
            ]
        }),
        "never the money of the spend limit"
    );
    // Tier 0 carries it (PROTOCOL-NOTES §3).
    let tier0 = sb.events_at(&["--tier", "0"]);
    assert!(tier0.iter().any(|e| e["type"] == "limits.observed"));

    // The person answers: the attention clears at the next hook, as before.
    let mut tool = base.clone();
    tool["hook_event_name"] = json!("PreToolUse");
    tool["tool_name"] = json!("Bash");
    tool["tool_use_id"] = json!("toolu_1");
    tool["tool_input"] = json!({"command": "rm -rf build"});
    hook(&sb, "PreToolUse", tool.to_string().as_bytes());
    wait_for(&sb, |evs| {
        evs.iter().any(|e| e["type"] == "attention.cleared")
    });
}

// ---- The installer ------------------------------------------------------------

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

fn read_settings(sb: &Sandbox) -> Value {
    serde_json::from_slice(&std::fs::read(settings(sb)).unwrap()).unwrap()
}

fn our_status_line(hook: &Path) -> Value {
    json!({
        "type": "command",
        "command": format!("\"{}\" claude-code StatusLine", hook.display()),
        "refreshInterval": 60,
    })
}

const PLAIN: &str =
    "{\n  \"model\": \"opus\",\n  \"permissions\": {\n    \"allow\": [\"Bash(ls:*)\"]\n  }\n}\n";

#[test]
fn install_status_line_writes_it_beside_the_hooks_and_uninstall_restores_the_bytes() {
    let sb = Sandbox::new();
    write(&settings(&sb), PLAIN);
    let (said, out) = run(
        &sb,
        &[
            "install",
            "--dry-run",
            "--status-line",
            "--harness",
            "claude-code",
        ],
    );
    assert!(out.status.success());
    assert_eq!(
        said,
        "claude-code: would install (~/.claude/settings.json, status-line in ~/.claude/settings.json)\n"
    );
    assert_eq!(std::fs::read_to_string(settings(&sb)).unwrap(), PLAIN);

    let (said, out) = run(
        &sb,
        &["install", "--harness", "claude-code", "--status-line"],
    );
    assert!(out.status.success(), "{said}");
    assert_eq!(
        said,
        "claude-code: installed (~/.claude/settings.json, status-line in ~/.claude/settings.json)\n"
    );
    let hook = std::fs::canonicalize(bin("sessionpipe-hook")).unwrap();
    let v = read_settings(&sb);
    assert_eq!(v["statusLine"], our_status_line(&hook));
    assert_eq!(v["hooks"]["Stop"].as_array().unwrap().len(), 1);
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["model", "permissions", "hooks", "statusLine"]);

    let (said, _) = run(&sb, &["status"]);
    assert!(
        said.contains(
            "claude-code: current (~/.claude/settings.json, status-line in ~/.claude/settings.json)"
        ),
        "{said}"
    );
    // A later plain install keeps it, and changes nothing.
    let written = std::fs::read_to_string(settings(&sb)).unwrap();
    let (said, _) = run(&sb, &["install"]);
    assert!(
        said.contains("claude-code: current (~/.claude/settings.json, status-line in"),
        "{said}"
    );
    assert_eq!(std::fs::read_to_string(settings(&sb)).unwrap(), written);

    let (said, out) = run(&sb, &["uninstall", "--json"]);
    assert!(out.status.success());
    let report: Value = serde_json::from_str(&said).unwrap();
    let files = report[0]["files"].as_array().unwrap();
    assert_eq!(files.len(), 2);
    assert_eq!(files[0]["state"], "removed");
    assert!(files[0].get("entry").is_none());
    assert_eq!(files[1]["entry"], "status-line");
    assert_eq!(files[1]["state"], "removed");
    assert_eq!(std::fs::read_to_string(settings(&sb)).unwrap(), PLAIN);
    let (said, _) = run(&sb, &["status"]);
    assert!(
        said.contains("claude-code: hooks not installed (~/.claude/settings.json)\n"),
        "{said}"
    );
}

#[test]
fn the_persons_own_status_line_is_kept_and_said_so() {
    let sb = Sandbox::new();
    let theirs = "{\n  \"statusLine\": { \"type\": \"command\", \"command\": \"~/.claude/line.sh\" },\n  \"model\": \"opus\"\n}\n";
    write(&settings(&sb), theirs);
    let (said, out) = run(&sb, &["install", "--status-line"]);
    assert!(out.status.success(), "kept is no failure: {said}");
    assert!(
        said.contains(
            "claude-code: installed (~/.claude/settings.json); kept (status-line in ~/.claude/settings.json: the statusLine there is the person's own, and is kept; sessionpipe's is not written)"
        ),
        "{said}"
    );
    let v = read_settings(&sb);
    assert_eq!(
        v["statusLine"],
        json!({"type": "command", "command": "~/.claude/line.sh"})
    );
    let (said, _) = run(&sb, &["install", "--status-line", "--json"]);
    let report: Value = serde_json::from_str(&said).unwrap();
    assert_eq!(report[0]["summary"], "current");
    assert_eq!(report[0]["files"][1]["entry"], "status-line");
    assert_eq!(report[0]["files"][1]["state"], "kept");
    assert!(
        report[0]["files"][1]["reason"]
            .as_str()
            .unwrap()
            .contains("person's own")
    );
    // Status has nothing of ours there to report; uninstall gives the bytes back.
    let (said, _) = run(&sb, &["status"]);
    assert!(
        said.contains("claude-code: current (~/.claude/settings.json)\n"),
        "{said}"
    );
    let (said, _) = run(&sb, &["uninstall", "--harness", "claude-code"]);
    assert_eq!(said, "claude-code: removed (~/.claude/settings.json)\n");
    assert_eq!(std::fs::read_to_string(settings(&sb)).unwrap(), theirs);
}

#[test]
fn without_the_flag_nothing_of_the_status_line_changes_and_an_old_one_is_renewed() {
    let sb = Sandbox::new();
    write(&settings(&sb), PLAIN);
    run(&sb, &["install"]);
    assert!(
        read_settings(&sb).get("statusLine").is_none(),
        "opt-in only"
    );
    run(&sb, &["uninstall"]);
    assert_eq!(std::fs::read_to_string(settings(&sb)).unwrap(), PLAIN);

    // Installed by an older version at another path: status says so, and a
    // plain install renews it (and the hooks) in place.
    let old = sb.root().join("old-version/sessionpipe-hook");
    std::fs::create_dir_all(old.parent().unwrap()).unwrap();
    std::fs::copy(bin("sessionpipe-hook"), &old).unwrap();
    let out = sb
        .command(bin("sessionpipe"))
        .env("SESSIONPIPE_HOOK_BIN", &old)
        .args(["install", "--status-line"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let (said, _) = run(&sb, &["status"]);
    assert!(
        said.contains("status-line in ~/.claude/settings.json: the statusLine is from another version or edited"),
        "{said}"
    );
    let (said, _) = run(&sb, &["install"]);
    assert!(
        said.contains("claude-code: installed (~/.claude/settings.json, status-line in ~/.claude/settings.json)"),
        "{said}"
    );
    let hook = std::fs::canonicalize(bin("sessionpipe-hook")).unwrap();
    assert_eq!(read_settings(&sb)["statusLine"], our_status_line(&hook));
    run(&sb, &["uninstall"]);
    assert_eq!(std::fs::read_to_string(settings(&sb)).unwrap(), PLAIN);
}

#[test]
fn an_edit_after_install_survives_the_removal_of_both() {
    let sb = Sandbox::new();
    write(&settings(&sb), PLAIN);
    run(&sb, &["install", "--status-line"]);
    let text = std::fs::read_to_string(settings(&sb)).unwrap();
    std::fs::write(settings(&sb), text.replacen("opus", "sonnet", 1)).unwrap();
    let (said, _) = run(&sb, &["uninstall", "--harness", "claude-code"]);
    assert_eq!(
        said,
        "claude-code: removed (~/.claude/settings.json, status-line in ~/.claude/settings.json)\n"
    );
    assert_eq!(
        std::fs::read_to_string(settings(&sb)).unwrap(),
        PLAIN.replacen("opus", "sonnet", 1)
    );
}

#[test]
fn a_settings_file_created_for_both_is_removed_again() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.home.join(".claude")).unwrap();
    let (said, out) = run(&sb, &["install", "--status-line"]);
    assert!(out.status.success(), "{said}");
    let v = read_settings(&sb);
    assert!(v["statusLine"].is_object() && v["hooks"].is_object());
    let (said, _) = run(&sb, &["uninstall"]);
    assert!(
        said.contains("removed (~/.claude/settings.json, status-line in"),
        "{said}"
    );
    assert!(!settings(&sb).exists());
}

// ---- The real Claude Code -----------------------------------------------------

/// A token Claude Code takes for an LLM gateway's (`aud: claude-gateway`; it
/// reads the claim without checking a signature): with a custom base URL, that
/// is what makes it read the `anthropic-ratelimit-unified-*` headers.
fn gateway_token() -> String {
    use base64::Engine;
    let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(r#"{"aud":"claude-gateway","exp":9999999999}"#);
    format!("test.{claims}.not-signed")
}

#[test]
fn a_real_claude_code_status_line_carries_the_limits_to_limits_observed() {
    let Some(claude) = sessionpipe_testkit::harnesses::claude() else {
        return;
    };
    let Some(script) = script_program() else {
        return;
    };
    let sb = Sandbox::new();
    let project = sb.home.join("work/project");
    std::fs::create_dir_all(&project).unwrap();
    let now = now_s();
    let (five_reset, week_reset) = (now + 3_600, now + 3 * 86_400);
    let headers = [
        ("status", "allowed".to_string()),
        ("5h-utilization", "0.23".into()),
        ("5h-reset", five_reset.to_string()),
        ("7d-utilization", "0.415".into()),
        ("7d-reset", week_reset.to_string()),
        ("reset", five_reset.to_string()),
        ("representative-claim", "five_hour".into()),
    ]
    .into_iter()
    .map(|(k, v)| (format!("anthropic-ratelimit-unified-{k}"), v))
    .collect();
    let api = MockAnthropic::start_with_headers(Script::new([Turn::text("Hello.")]), headers);

    // The person's settings name the API (so the config dir's account is
    // `api-…`); onboarding and the folder's trust are done.
    write(
        &settings(&sb),
        &json!({"env": {"ANTHROPIC_BASE_URL": api.base_url()}}).to_string(),
    );
    sessionpipe_testkit::harnesses::claude_first_run_done(&sb.home, &project);
    let path = sessionpipe_testkit::Sandbox::path_with(claude.parent().unwrap());
    let install = sb
        .command(bin("sessionpipe"))
        .env("PATH", &path)
        .args(["install", "--harness", "claude-code", "--status-line"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&install.stdout);
    assert!(
        said.contains("status-line in ~/.claude/settings.json"),
        "{said}"
    );
    let _daemon = sb.start_daemon();

    // `script` gives Claude Code the terminal it runs its status line in:
    // `claude -p` never runs one.
    let mut command = sb.command(&claude);
    command
        .current_dir(&project)
        .env("PATH", &path)
        .env("SHELL", "/bin/bash")
        .env("ANTHROPIC_BASE_URL", api.base_url())
        .env("ANTHROPIC_AUTH_TOKEN", gateway_token())
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
    let mut term = Terminal::start(&script, &command);
    term.wait_for_text("❯", Duration::from_secs(60));
    term.type_line("Say hello.");

    let events = wait_for(&sb, |evs| {
        evs.iter().any(|e| e["type"] == "limits.observed")
    });
    term.wait_for_text("5h23%·week42%", Duration::from_secs(30));
    let observed = events
        .iter()
        .find(|e| e["type"] == "limits.observed")
        .unwrap();
    let turn = events
        .iter()
        .find(|e| e["type"] == "turn.started")
        .expect("the prompt's hook");
    assert_eq!(observed["session"]["id"], turn["session"]["id"]);
    assert_eq!(observed["harness"]["event"], "StatusLine");
    let origin_digest =
        sessionpipe_core::harness::digest::sha256_prefix(api.base_url().as_bytes(), 8);
    let rfc = |s: u64| sessionpipe_core::protocol::time::rfc3339_ms(s as i64 * 1000);
    assert_eq!(
        observed["data"],
        json!({
            "account_id": format!("api-{origin_digest}"),
            "windows": [
                {"id": "five_hour", "window_minutes": 300, "used_percent": 23.0,
                 "resets_at": rfc(five_reset)},
                {"id": "seven_day", "window_minutes": 10080, "used_percent": 41.5,
                 "resets_at": rfc(week_reset)},
            ]
        })
    );
    // Claude Code runs the line again and again; unchanged limits are one event.
    std::thread::sleep(Duration::from_secs(3));
    let count = sb
        .events()
        .iter()
        .filter(|e| e["type"] == "limits.observed")
        .count();
    assert_eq!(count, 1);
}
