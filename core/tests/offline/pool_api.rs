//! The Pool page's API and the board's account column over real HTTP, with
//! the real daemon: `GET /api/pool` as `pool status --json` says it (never a
//! credential), the switch refused with a 409 while no account could answer
//! and then writing and giving back Claude Code's settings, enable, disable,
//! remove and `import` as the CLI does them; and a session whose status line
//! named its account shows that account (by the pool's email once the pool
//! has it) and its fullest window on `/api/overview`.

use crate::api::Ui;
use reqwest::Method;
use serde_json::{Value, json};
use sessionpipe_testkit::Sandbox;
use sessionpipe_testkit::http::{HttpServer, Response};
use std::time::{Duration, Instant};

const ACCESS: &str = "sk-ant-oat01-poolAPIaccess0123456789";
const REFRESH: &str = "rt-pool-api-fake";
const SETTINGS: &str = "{\n  \"model\": \"opus\"\n}\n";

fn now_ms() -> i64 {
    protocol::time::now_ms()
}

/// `~/.claude` signed in as `acct-1`.
fn signed_in(sb: &Sandbox) {
    let dir = sb.home.join(".claude");
    std::fs::create_dir_all(&dir).unwrap();
    let creds = json!({"claudeAiOauth": {"accessToken": ACCESS, "refreshToken": REFRESH, "expiresAt": now_ms() + 86_400_000}});
    std::fs::write(dir.join(".credentials.json"), creds.to_string()).unwrap();
    std::fs::write(dir.join("settings.json"), SETTINGS).unwrap();
    let account =
        json!({"oauthAccount": {"accountUuid": "acct-1", "emailAddress": "one@example.com"}});
    std::fs::write(sb.home.join(".claude.json"), account.to_string()).unwrap();
}

/// A stand-in for the usage endpoint (the daemon reads an idle account's
/// windows there), so nothing leaves the machine.
fn usage_api() -> HttpServer {
    HttpServer::start(|req| match req.path() {
        "/api/oauth/usage" => Response::json(
            200,
            &json!({
                "five_hour": {"utilization": 93.0, "resets_at": "2100-01-01T00:00:00Z"},
                "seven_day": {"utilization": 12.0, "resets_at": "2100-01-05T00:00:00Z"},
            }),
        ),
        _ => Response::json(404, &json!({})),
    })
    .unwrap()
}

fn post(ui: &Ui, path: &str, body: Value) -> (u16, Value) {
    let (status, v) = ui.send(Method::POST, path, body);
    assert!(
        !v.to_string().contains(ACCESS) && !v.to_string().contains(REFRESH),
        "{path} answered a credential: {v}"
    );
    (status, v)
}

fn wait<T>(what: &str, mut done: impl FnMut() -> Option<T>) -> T {
    let until = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(v) = done() {
            return v;
        }
        assert!(Instant::now() < until, "{what} not within 15 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_pool_page_api_lists_switches_and_manages_accounts_as_the_cli_does() {
    let sb = Sandbox::new();
    signed_in(&sb);
    let api = usage_api();
    let _daemon = sb.start_daemon_with(&[(
        "SESSIONPIPE_ANTHROPIC_API",
        std::ffi::OsStr::new(&api.base_url()),
    )]);
    let ui = Ui::of(&sb);
    assert_eq!(
        ui.get("/api/pool"),
        json!({"on": false, "port": null, "live": false, "accounts": []})
    );

    // No account: the switch is refused and nothing is written.
    let (status, v) = post(&ui, "/api/pool/on", json!({}));
    assert_eq!(status, 409, "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("no account is in the pool"),
        "{v}"
    );
    let settings = sb.home.join(".claude/settings.json");
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), SETTINGS);

    // Import: a folder that is not absolute, or has no sign-in, says so.
    let (status, v) = post(&ui, "/api/pool/import", json!({"config_dir": ".claude"}));
    assert_eq!(status, 400, "{v}");
    let (status, v) = post(&ui, "/api/pool/import", json!({"config_dir": 7}));
    assert_eq!(status, 400, "{v}");
    let (status, v) = post(
        &ui,
        "/api/pool/import",
        json!({"config_dir": "~/.claude-none"}),
    );
    assert_eq!(status, 404, "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("no Claude Code sign-in"),
        "{v}"
    );
    let (status, v) = post(&ui, "/api/pool/import", Value::Null);
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        v["added"],
        json!([{"id": "acct-1", "email": "one@example.com", "from": "~/.claude", "again": false}])
    );
    assert_eq!(v["accounts"][0]["id"], "acct-1");
    assert_eq!(v["accounts"][0]["enabled"], true);
    assert!(v["accounts"][0]["expires_at"].is_string(), "{v}");

    // The running daemon reads the account's windows: the page shows them.
    let live = wait("the account's windows", || {
        let v = ui.get("/api/pool");
        (v["live"] == true && v["accounts"][0]["windows"].as_array()?.len() == 2).then_some(v)
    });
    let account = &live["accounts"][0];
    assert_eq!(account["email"], "one@example.com");
    assert_eq!(account["windows"][0]["id"], "five_hour");
    assert_eq!(account["windows"][0]["used_percent"], 93.0);
    assert_eq!(
        account["windows"][0]["resets_at"],
        "2100-01-01T00:00:00.000Z"
    );
    assert!(!live.to_string().contains(ACCESS));

    // Disabled, it takes no request: the switch is refused again.
    let (status, v) = post(&ui, "/api/pool/accounts/one@example.com/disable", json!({}));
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["accounts"][0]["enabled"], false);
    let (status, _) = post(&ui, "/api/pool/on", json!({}));
    assert_eq!(status, 409);
    let (status, v) = post(&ui, "/api/pool/accounts/acct-1/enable", json!({}));
    assert_eq!((status, &v["accounts"][0]["enabled"]), (200, &json!(true)));
    let (status, v) = post(&ui, "/api/pool/accounts/nobody/enable", json!({}));
    assert_eq!(status, 404, "{v}");
    assert!(v["error"].as_str().unwrap().contains("\"nobody\""), "{v}");

    // On: the three keys, and the pool says its port; off gives the bytes back.
    let (status, v) = post(&ui, "/api/pool/on", json!({}));
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["on"], true);
    assert_eq!(
        v["settings"],
        json!([{"file": "~/.claude/settings.json", "outcome": "on"}])
    );
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    let port = v["port"].as_u64().expect("a port while on");
    assert_eq!(
        written["env"]["ANTHROPIC_BASE_URL"],
        format!("http://127.0.0.1:{port}")
    );
    assert_eq!(ui.get("/api/pool")["on"], true);
    let (status, v) = post(&ui, "/api/pool/off", json!({}));
    assert_eq!(status, 200, "{v}");
    assert_eq!((&v["on"], &v["port"]), (&json!(false), &Value::Null));
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), SETTINGS);

    // Removed: the account and its sign-in go.
    let (status, v) = ui.send(Method::DELETE, "/api/pool/accounts/acct-1", Value::Null);
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["removed"], "acct-1");
    assert_eq!(v["accounts"], json!([]));
    let (status, _) = ui.send(Method::DELETE, "/api/pool/accounts/acct-1", Value::Null);
    assert_eq!(status, 404);
    let o = sb.sessionpipe(&["pool", "status", "--json"]);
    let cli: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(cli["accounts"], json!([]));
    // Nothing kept names the sign-in.
    let kept = std::fs::read_to_string(sb.state.join("pool.json")).unwrap_or_default()
        + &std::fs::read_to_string(sb.state.join("pool-status.json")).unwrap_or_default();
    assert!(!kept.contains(ACCESS) && !kept.contains(REFRESH), "{kept}");
}

#[test]
fn the_board_names_a_sessions_account_and_the_window_it_burns_most() {
    let sb = Sandbox::new();
    let config = sb.home.join(".claude");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        sb.home.join(".claude.json"),
        r#"{"oauthAccount": {"accountUuid": "acct-7", "emailAddress": "ann@example.com"}}"#,
    )
    .unwrap();
    let _daemon = sb.start_daemon();
    let ui = Ui::of(&sb);
    let session = "5501b74a-b3e0-40e8-8500-c07f70215828";
    let transcript = config.join(format!("projects/-work/{session}.jsonl"));
    let start = json!({"session_id": session, "transcript_path": transcript, "cwd": "/work",
                       "hook_event_name": "SessionStart", "source": "startup"});
    assert!(
        sb.hook("claude-code", "SessionStart", start.to_string().as_bytes())
            .status
            .success()
    );
    let board = wait("the session on the board", || {
        let v = ui.get("/api/overview");
        (v["sessions"].as_array()?.len() == 1).then_some(v)
    });
    assert_eq!(
        board["sessions"][0]["account"],
        Value::Null,
        "no limits yet"
    );

    // The status line: Claude Code's limits for the config dir's account.
    let line = json!({"session_id": session, "transcript_path": transcript, "cwd": "/work",
    "rate_limits": {
        "five_hour": {"used_percentage": 23.0, "resets_at": 1_795_987_162},
        "seven_day": {"used_percentage": 41.5, "resets_at": 1_796_242_762},
    }});
    assert!(
        sb.hook("claude-code", "StatusLine", line.to_string().as_bytes())
            .status
            .success()
    );
    let account = wait("the session's account", || {
        let v = ui.get("/api/overview");
        let a = v["sessions"][0]["account"].clone();
        (!a.is_null()).then_some(a)
    });
    assert_eq!(
        account,
        json!({"id": "acct-7", "email": null, "near": false, "window": {
            "id": "seven_day", "used_percent": 41.5, "resets_at": "2026-12-02T20:19:22.000Z",
            "runs_out_at": null}}),
        "named by its id while the pool does not know it"
    );

    // Once the pool has the account, it is named by its email.
    let pool = json!({"accounts": [{"id": "acct-7", "email": "ann@example.com", "enabled": true}]});
    std::fs::write(sb.state.join("pool.json"), pool.to_string()).unwrap();
    assert_eq!(
        ui.get("/api/overview")["sessions"][0]["account"]["email"],
        "ann@example.com"
    );
}
