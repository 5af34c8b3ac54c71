//! The real Claude Code through the account pool, offline: two config dirs
//! with their own (made-up) sign-ins imported with `pool add --import`, the
//! daemon's listener written into their settings by `pool on`, and `claude
//! -p` runs whose every request reaches a scripted Messages API on loopback
//! (`SESSIONPIPE_ANTHROPIC_API`, the test-only setting DESIGN.md names)
//! through the pool. What the API receives is what the pool sent.

use serde_json::Value;
use sessionpipe_testkit::{MockAnthropic, Sandbox, Script, Turn};
use std::io::BufRead;
use std::path::Path;
use std::time::{Duration, Instant};

/// A config dir signed in as `account` with access token `access`.
fn signed_in(config: &Path, claude_json: &Path, account: &str, access: &str) {
    std::fs::create_dir_all(config).unwrap();
    let creds = serde_json::json!({"claudeAiOauth": {
        "accessToken": access,
        "refreshToken": format!("{access}-refresh"),
        // A day away: nothing is refreshed in this test.
        "expiresAt": (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64) + 86_400_000,
        "scopes": ["user:inference"],
    }});
    std::fs::write(config.join(".credentials.json"), creds.to_string()).unwrap();
    let mut doc: Value = std::fs::read(claude_json)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| serde_json::json!({}));
    doc["oauthAccount"] = serde_json::json!({"accountUuid": account, "emailAddress": format!("{account}@example.com")});
    std::fs::write(claude_json, doc.to_string()).unwrap();
}

fn sessionpipe(sb: &Sandbox, path: &str, args: &[&str]) -> String {
    let out = sb
        .command(sessionpipe_testkit::sandbox::bin("sessionpipe"))
        .env("PATH", path)
        .args(args)
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "sessionpipe {args:?}: {said}");
    said
}

/// Runs `claude -p` in `project` under `config` with partial messages on;
/// returns its session id and how long after the first text delta the
/// result came.
fn run_claude(
    sb: &Sandbox,
    claude: &Path,
    config: Option<&Path>,
    project: &Path,
    args: &[&str],
) -> (String, Duration) {
    let mut cmd = sb.command(claude);
    cmd.current_dir(project)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("SHELL", "/bin/bash")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .args(args)
        .args([
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    if let Some(c) = config {
        cmd.env("CLAUDE_CONFIG_DIR", c);
    }
    let mut child = cmd.spawn().expect("claude runs");
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let (mut first_delta, mut session, mut result) = (None, None, None);
    for line in stdout.lines() {
        let line = line.unwrap();
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if first_delta.is_none()
            && v["type"] == "stream_event"
            && v["event"]["delta"]["type"] == "text_delta"
        {
            first_delta = Some(Instant::now());
        }
        if v["type"] == "result" {
            session = v["session_id"].as_str().map(str::to_string);
            result = Some((Instant::now(), v));
        }
    }
    let out = child.wait_with_output().unwrap();
    let (at, v) = result.unwrap_or_else(|| {
        panic!(
            "claude printed no result: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(v["subtype"], "success", "{v}");
    let first = first_delta.expect("a text delta was streamed");
    (session.expect("a session id"), at - first)
}

fn bearer(r: &sessionpipe_testkit::http::Request) -> String {
    r.header("authorization").unwrap_or("").to_string()
}

fn user_id(r: &sessionpipe_testkit::http::Request) -> Option<Value> {
    let body = r.json()?;
    serde_json::from_str(body["metadata"]["user_id"].as_str()?).ok()
}

#[test]
fn real_claude_code_runs_through_the_pool_with_each_sessions_own_account() {
    let Some(claude) = sessionpipe_testkit::harnesses::claude() else {
        return;
    };
    let sb = Sandbox::new();
    let project = sb.home.join("work/project");
    std::fs::create_dir_all(&project).unwrap();
    let path = Sandbox::path_with(claude.parent().unwrap());
    let default_dir = sb.home.join(".claude");
    let second_dir = sb.home.join(".claude-b");
    sessionpipe_testkit::harnesses::claude_first_run_done(&sb.home, &project);
    signed_in(
        &default_dir,
        &sb.home.join(".claude.json"),
        "acct-a",
        "sk-ant-oat01-aaaa",
    );
    std::fs::create_dir_all(&second_dir).unwrap();
    std::fs::copy(
        sb.home.join(".claude.json"),
        second_dir.join(".claude.json"),
    )
    .unwrap();
    signed_in(
        &second_dir,
        &second_dir.join(".claude.json"),
        "acct-b",
        "sk-ant-oat01-bbbb",
    );
    std::fs::write(
        second_dir.join("settings.json"),
        "{\n    \"model\": \"sonnet\"\n}\n",
    )
    .unwrap();
    sessionpipe(&sb, &path, &["install", "--harness", "claude-code"]);
    // As the hooks left them: what `pool off` must give back.
    let settings_before = std::fs::read_to_string(second_dir.join("settings.json")).unwrap();
    let added = sessionpipe(&sb, &path, &["pool", "add", "--import"]);
    assert!(
        added.contains("added acct-a (acct-a@example.com) from ~/.claude"),
        "{added}"
    );
    assert!(added.contains("added acct-b"), "{added}");

    // Every answer says how much of each window its account used; once
    // `rejecting` names a bearer, that account's answers say it is rejected
    // until 2100 (the 5-hour window full).
    let rejecting: std::sync::Arc<std::sync::Mutex<Option<String>>> = Default::default();
    let api = {
        let rejecting = rejecting.clone();
        MockAnthropic::start_with_headers_for(
            Script::new([
                Turn::text("Pooled hello."),
                Turn::text("Pooled again."),
                Turn::text("Rejected, and told so."),
                Turn::text("On the other account."),
            ])
            .paced(Duration::from_millis(400)),
            move |r| {
                let rejected = rejecting.lock().unwrap().as_deref() == Some(bearer(r).as_str());
                let (status, five_hour) = if rejected {
                    ("rejected", "1.0")
                } else {
                    ("allowed", "0.37")
                };
                let mut headers = vec![
                    ("anthropic-ratelimit-unified-status", status),
                    ("anthropic-ratelimit-unified-5h-utilization", five_hour),
                    ("anthropic-ratelimit-unified-5h-reset", "4102444800"),
                    ("anthropic-ratelimit-unified-7d-utilization", "0.12"),
                    ("anthropic-ratelimit-unified-7d-reset", "4102444800"),
                ];
                if rejected {
                    headers.push(("anthropic-ratelimit-unified-reset", "4102444800"));
                    headers.push((
                        "anthropic-ratelimit-unified-representative-claim",
                        "five_hour",
                    ));
                }
                headers
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            },
        )
    };
    let _daemon = sb.start_daemon_with(&[
        (
            "SESSIONPIPE_ANTHROPIC_API",
            std::ffi::OsStr::new(&api.base_url()),
        ),
        // No refresh or sign-in is due; anything that tried would fail here.
        (
            "SESSIONPIPE_CLAUDE_OAUTH",
            std::ffi::OsStr::new("http://127.0.0.1:9"),
        ),
    ]);
    let on = sessionpipe(&sb, &path, &["pool", "on"]);
    assert!(on.contains("~/.claude/settings.json"), "{on}");
    let settings: Value =
        serde_json::from_slice(&std::fs::read(default_dir.join("settings.json")).unwrap()).unwrap();
    let listener = settings["env"]["ANTHROPIC_BASE_URL"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(listener.starts_with("http://127.0.0.1:"), "{listener}");
    let token = settings["env"]["ANTHROPIC_AUTH_TOKEN"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        settings["env"]["_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL"],
        "1"
    );
    wait_listening(&listener);

    // Two sessions: one per config dir's Claude Code, each pinned to an account.
    let (first, streamed) = run_claude(&sb, &claude, None, &project, &["-p", "Say hello."]);
    assert!(
        streamed >= Duration::from_millis(400),
        "the answer reached Claude Code as it streamed ({streamed:?} from its first words to its end)"
    );
    let (second, _) = run_claude(
        &sb,
        &claude,
        Some(&second_dir),
        &project,
        &["-p", "Say hello."],
    );
    // The first again, resumed: it keeps its account.
    let (resumed, _) = run_claude(
        &sb,
        &claude,
        None,
        &project,
        &["-p", "Again.", "--resume", &first],
    );
    assert_eq!(resumed, first);

    let requests: Vec<_> = api
        .requests()
        .into_iter()
        .filter(|r| r.path().starts_with("/v1/messages"))
        .collect();
    assert!(!requests.is_empty());
    let mut account_of = std::collections::HashMap::new();
    for r in &requests {
        let b = bearer(r);
        assert!(
            b == "Bearer sk-ant-oat01-aaaa" || b == "Bearer sk-ant-oat01-bbbb",
            "the account's bearer: {b}"
        );
        assert!(
            r.header("anthropic-beta")
                .unwrap_or("")
                .split(',')
                .any(|x| x == "oauth-2025-04-20")
        );
        assert!(
            !format!("{:?}", r).contains(&token),
            "the listener's token never goes up"
        );
        if let Some(uid) = user_id(r) {
            let account = uid["account_uuid"].as_str().unwrap().to_string();
            let expected = if b.ends_with("aaaa") {
                "acct-a"
            } else {
                "acct-b"
            };
            assert_eq!(
                account, expected,
                "user_id names the account that bears the request"
            );
            let session = uid["session_id"].as_str().unwrap().to_string();
            let prior = account_of.insert(session.clone(), account.clone());
            assert!(
                prior.is_none_or(|p| p == account),
                "{session} stayed on its account"
            );
        }
    }
    assert_ne!(
        account_of[&first], account_of[&second],
        "two sessions, two accounts"
    );

    // Each session's answers' windows, on its own events, with its account.
    let events = sb.wait_until(Duration::from_secs(20), |evs| {
        [&first, &second].iter().all(|s| {
            evs.iter()
                .any(|e| e["type"] == "limits.observed" && e["session"]["id"] == s.as_str())
        })
    });
    for s in [&first, &second] {
        let limits: Vec<&Value> = events
            .iter()
            .filter(|e| e["type"] == "limits.observed" && e["session"]["id"] == s.as_str())
            .collect();
        assert_eq!(limits.len(), 1, "one while nothing changed: {limits:#?}");
        let d = &limits[0]["data"];
        assert_eq!(d["account_id"], account_of[s].as_str());
        assert_eq!(d["status"], "allowed");
        assert_eq!(d["windows"][0]["id"], "five_hour");
        assert_eq!(d["windows"][0]["window_minutes"], 300);
        assert_eq!(d["windows"][0]["used_percent"], 37.0);
        assert_eq!(d["windows"][1]["id"], "seven_day");
    }

    // The first session's account is rejected on its next answer: that
    // session's later requests and a new session's all go to the other one,
    // and the first session is told it hit a limit.
    let spent = account_of[&first].clone();
    let spent_bearer = if spent == "acct-a" {
        "Bearer sk-ant-oat01-aaaa"
    } else {
        "Bearer sk-ant-oat01-bbbb"
    };
    *rejecting.lock().unwrap() = Some(spent_bearer.to_string());
    let seen = api.requests().len();
    run_claude(
        &sb,
        &claude,
        None,
        &project,
        &["-p", "Once more.", "--resume", &first],
    );
    let after_rejection: Vec<_> = api.requests().into_iter().skip(seen).collect();
    let told = after_rejection
        .iter()
        .position(|r| bearer(r) == spent_bearer)
        .expect("the pinned account carried the session's next request");
    let (third, _) = run_claude(&sb, &claude, None, &project, &["-p", "Say hello."]);
    let later: Vec<_> = api.requests().into_iter().skip(seen + told + 1).collect();
    assert!(!later.is_empty());
    for r in &later {
        assert_ne!(
            bearer(r),
            spent_bearer,
            "a rejected account is skipped until its reset: {}",
            r.target
        );
    }
    let events = sb.wait_until(Duration::from_secs(20), |evs| {
        evs.iter().any(|e| {
            e["type"] == "attention.needed"
                && e["session"]["id"] == first.as_str()
                && e["data"]["attention_id"]
                    .as_str()
                    .is_some_and(|a| a.starts_with("pool-limit:"))
        })
    });
    assert!(
        events.iter().any(|e| e["type"] == "limits.observed"
            && e["session"]["id"] == first.as_str()
            && e["data"]["status"] == "rejected"
            && e["data"]["account_id"] == spent.as_str()),
        "the rejection reached the session's limits"
    );
    assert!(
        events
            .iter()
            .filter(|e| e["session"]["id"] == third.as_str())
            .all(|e| e["type"] != "limits.observed" || e["data"]["account_id"] != spent.as_str()),
        "the new session is on the other account"
    );

    let status = sessionpipe(&sb, &path, &["pool", "status", "--json"]);
    let status: Value = serde_json::from_str(status.trim()).unwrap();
    assert_eq!(status["on"], true);
    assert!(
        !status.to_string().contains("sk-ant-"),
        "no credential in pool status"
    );
    let spent_view = status["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == spent.as_str())
        .unwrap();
    assert_eq!(spent_view["status"], "rejected", "{status}");
    assert!(
        spent_view["until"]
            .as_str()
            .is_some_and(|u| u.starts_with("2100-")),
        "{status}"
    );

    // Off: every settings file is as it was.
    sessionpipe(&sb, &path, &["pool", "off"]);
    assert_eq!(
        std::fs::read_to_string(second_dir.join("settings.json")).unwrap(),
        settings_before
    );
    let after: Value =
        serde_json::from_slice(&std::fs::read(default_dir.join("settings.json")).unwrap()).unwrap();
    assert!(
        after
            .get("env")
            .is_none_or(|e| e.get("ANTHROPIC_BASE_URL").is_none()),
        "{after}"
    );
}

/// Waits for the daemon to pick up `pool on` (it looks every 2 s).
fn wait_listening(url: &str) {
    let addr = url.trim_start_matches("http://");
    let until = Instant::now() + Duration::from_secs(15);
    while std::net::TcpStream::connect(addr).is_err() {
        assert!(
            Instant::now() < until,
            "the pool's listener did not open at {url}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
