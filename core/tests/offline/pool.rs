//! The account pool through the real CLI and daemon, without a harness:
//! `pool on` refused while nothing could answer Claude Code's requests (no
//! account, no daemon); the listener on loopback only, refusing a request
//! without its token and forwarding one with it to the API
//! (`SESSIONPIPE_ANTHROPIC_API`, a loopback server here) with the account's
//! bearer; `pool off` closes it and gives the settings back byte for byte;
//! and `pool add --login` against a loopback sign-in server.

use serde_json::{Value, json};
use sessionpipe_testkit::Sandbox;
use sessionpipe_testkit::http::{HttpServer, Response};
use sessionpipe_testkit::sandbox::{Daemon, bin};
use std::io::{BufRead, Write};
use std::process::Output;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const ACCESS: &str = "sk-ant-oat01-poolFAKEaccess0123456789";
const SETTINGS: &str = "{\n\t\"model\": \"opus\"\r\n}";

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// `~/.claude` signed in as `acct-1`.
fn signed_in(sb: &Sandbox) {
    let dir = sb.home.join(".claude");
    std::fs::create_dir_all(&dir).unwrap();
    let creds = json!({"claudeAiOauth": {"accessToken": ACCESS, "refreshToken": "rt-fake", "expiresAt": now_ms() + 86_400_000}});
    std::fs::write(dir.join(".credentials.json"), creds.to_string()).unwrap();
    std::fs::write(dir.join("settings.json"), SETTINGS).unwrap();
    let account =
        json!({"oauthAccount": {"accountUuid": "acct-1", "emailAddress": "one@example.com"}});
    std::fs::write(sb.home.join(".claude.json"), account.to_string()).unwrap();
}

fn said(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn listener(sb: &Sandbox) -> (String, String) {
    let v: Value =
        serde_json::from_slice(&std::fs::read(sb.home.join(".claude/settings.json")).unwrap())
            .unwrap();
    (
        v["env"]["ANTHROPIC_BASE_URL"].as_str().unwrap().to_string(),
        v["env"]["ANTHROPIC_AUTH_TOKEN"]
            .as_str()
            .unwrap()
            .to_string(),
    )
}

/// A sandbox signed in as `acct-1`, imported, a daemon whose pool talks to
/// `api`, and the pool on: its listener's URL and token, once it listens.
fn pooled(api: &HttpServer) -> (Sandbox, Daemon, String, String) {
    let sb = Sandbox::new();
    signed_in(&sb);
    let o = sb.sessionpipe(&["pool", "add", "--import"]);
    assert!(o.status.success(), "{}", said(&o));
    let daemon = sb.start_daemon_with(&[(
        "SESSIONPIPE_ANTHROPIC_API",
        std::ffi::OsStr::new(&api.base_url()),
    )]);
    let o = sb.sessionpipe(&["pool", "on"]);
    assert!(o.status.success(), "{}", said(&o));
    assert!(
        said(&o).contains("~/.claude/settings.json: on"),
        "{}",
        said(&o)
    );
    let (url, token) = listener(&sb);
    let addr = url.trim_start_matches("http://").to_string();
    wait("the listener", || {
        std::net::TcpStream::connect(&addr).is_ok()
    });
    (sb, daemon, url, token)
}

fn wait(what: &str, done: impl Fn() -> bool) {
    let until = Instant::now() + Duration::from_secs(15);
    while !done() {
        assert!(Instant::now() < until, "{what} not within 15 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn pool_on_is_refused_while_nothing_could_answer_claude_code() {
    let sb = Sandbox::new();
    signed_in(&sb);
    let o = sb.sessionpipe(&["pool", "on"]);
    assert_eq!(o.status.code(), Some(1), "{}", said(&o));
    assert!(
        said(&o).contains("no account is in the pool"),
        "{}",
        said(&o)
    );
    let o = sb.sessionpipe(&["pool", "add", "--import"]);
    assert!(o.status.success(), "{}", said(&o));
    assert!(
        said(&o).contains("added acct-1 (one@example.com) from ~/.claude"),
        "{}",
        said(&o)
    );
    assert!(!said(&o).contains(ACCESS));
    let o = sb.sessionpipe(&["pool", "on"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(said(&o).contains("no daemon runs"), "{}", said(&o));
    assert_eq!(
        std::fs::read_to_string(sb.home.join(".claude/settings.json")).unwrap(),
        SETTINGS
    );
    // What is kept names the account, never its sign-in.
    let kept = std::fs::read_to_string(sb.root().join("state/pool.json")).unwrap_or_default()
        + &std::fs::read_to_string(sb.root().join("state/pool-status.json")).unwrap_or_default();
    assert!(
        !kept.contains(ACCESS) && !kept.contains("rt-fake"),
        "{kept}"
    );
    let o = sb.sessionpipe(&["pool", "status", "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["on"], false);
    assert_eq!(v["accounts"][0]["id"], "acct-1");
    assert_eq!(v["accounts"][0]["status"], "unknown");
    let o = sb.sessionpipe(&["pool", "disable", "one@example.com"]);
    assert!(o.status.success(), "{}", said(&o));
    let o = sb.sessionpipe(&["pool", "remove", "nobody"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        said(&o).contains("no account in the pool is \"nobody\""),
        "{}",
        said(&o)
    );
}

#[test]
fn the_listener_is_loopbacks_own_and_takes_only_its_token() {
    let api = HttpServer::start(|req| {
        let auth = req.header("authorization").unwrap_or("").to_string();
        Response::json(200, &json!({"bearer": auth}))
            .with_header("anthropic-ratelimit-unified-status", "allowed")
    })
    .unwrap();
    let (sb, _daemon, url, token) = pooled(&api);
    let addr = url.trim_start_matches("http://").to_string();

    let c = reqwest::blocking::Client::new();
    let r = c
        .post(format!("{url}/v1/messages"))
        .body("{}")
        .send()
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = c
        .post(format!("{url}/v1/messages"))
        .bearer_auth("not-it")
        .body("{}")
        .send()
        .unwrap();
    assert_eq!(r.status(), 401);
    // (The daemon's own read of the account's usage goes to the same server.)
    let paths: Vec<String> = api
        .requests()
        .iter()
        .map(|r| r.path().to_string())
        .collect();
    assert!(
        paths.iter().all(|p| p == "/api/oauth/usage"),
        "nothing without the token went up: {paths:?}"
    );
    let r = c
        .post(format!("{url}/v1/messages"))
        .bearer_auth(&token)
        .body("{}")
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = r.json().unwrap();
    assert_eq!(v["bearer"], format!("Bearer {ACCESS}"));

    // Claude Code signed in again and the person imports again: the running
    // daemon bears the new sign-in (pool.json's text is the same as before).
    let creds = json!({"claudeAiOauth": {"accessToken": "sk-ant-oat01-poolFAKEsecond", "refreshToken": "rt-2", "expiresAt": now_ms() + 86_400_000}});
    std::fs::write(sb.home.join(".claude/.credentials.json"), creds.to_string()).unwrap();
    let o = sb.sessionpipe(&["pool", "add", "--import"]);
    assert!(said(&o).contains("updated acct-1"), "{}", said(&o));
    wait("the new sign-in", || {
        let r = c
            .post(format!("{url}/v1/messages"))
            .bearer_auth(&token)
            .body("{}")
            .send()
            .unwrap();
        r.json::<Value>().unwrap()["bearer"] == "Bearer sk-ant-oat01-poolFAKEsecond"
    });

    // Nothing listens on the machine's other addresses.
    let port: u16 = addr.rsplit(':').next().unwrap().parse().unwrap();
    for ip in other_addresses() {
        assert!(
            std::net::TcpStream::connect_timeout(&(ip, port).into(), Duration::from_millis(500))
                .is_err(),
            "the pool answers on {ip}"
        );
    }

    let o = sb.sessionpipe(&["pool", "off"]);
    assert!(o.status.success(), "{}", said(&o));
    assert_eq!(
        std::fs::read_to_string(sb.home.join(".claude/settings.json")).unwrap(),
        SETTINGS
    );
    wait("the listener to close", || {
        std::net::TcpStream::connect(&addr).is_err()
    });
}

/// The machine's non-loopback IPv4 addresses (from `hostname -I`).
fn other_addresses() -> Vec<std::net::IpAddr> {
    let out = std::process::Command::new("hostname").arg("-I").output();
    let Ok(out) = out else { return Vec::new() };
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|a| a.parse::<std::net::IpAddr>().ok())
        .filter(|a| a.is_ipv4() && !a.is_loopback())
        .collect()
}

#[test]
fn an_account_signs_in_with_the_code_the_page_shows() {
    let oauth = HttpServer::start(|req| match req.path() {
        "/v1/oauth/token" => Response::json(
            200,
            &json!({
                "access_token": "at-login", "refresh_token": "rt-login", "expires_in": 28800,
                "account": {"uuid": "acct-login", "email_address": "login@example.com"},
            }),
        ),
        "/api/oauth/profile" => Response::json(
            200,
            &json!({"account": {"uuid": "acct-login", "email": "login@example.com"}}),
        ),
        _ => Response::json(404, &json!({})),
    })
    .unwrap();
    let sb = Sandbox::new();
    let mut child = sb
        .command(bin("sessionpipe"))
        .args(["pool", "add", "--login"])
        .env("SESSIONPIPE_CLAUDE_OAUTH", oauth.base_url())
        .env("SESSIONPIPE_ANTHROPIC_API", oauth.base_url())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut url = String::new();
    while !url.starts_with("https://") {
        url.clear();
        assert!(
            err.read_line(&mut url).unwrap() > 0,
            "no sign-in link was printed"
        );
    }
    let url = url::Url::parse(url.trim()).unwrap();
    assert_eq!(url.host_str(), Some("claude.com"));
    let state = url
        .query_pairs()
        .find(|(k, _)| k == "state")
        .unwrap()
        .1
        .to_string();
    writeln!(child.stdin.take().unwrap(), "the-code#{state}").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("added acct-login (login@example.com)"));
    let exchange = oauth
        .requests()
        .into_iter()
        .find(|r| r.path() == "/v1/oauth/token")
        .unwrap();
    assert_eq!(exchange.json().unwrap()["code"], "the-code");
    let o = sb.sessionpipe(&["pool", "status", "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["accounts"][0]["id"], "acct-login");
    assert!(!String::from_utf8_lossy(&o.stdout).contains("at-login"));
}

#[test]
fn a_sessions_account_near_its_limit_asks_for_attention_once() {
    let api = HttpServer::start(|_| {
        Response::json(200, &json!({"type": "message"}))
            .with_header("anthropic-ratelimit-unified-status", "allowed_warning")
            .with_header("anthropic-ratelimit-unified-5h-utilization", "0.93")
            .with_header("anthropic-ratelimit-unified-5h-reset", "4102444800")
    })
    .unwrap();
    let (sb, _daemon, url, token) = pooled(&api);

    // A session its hooks started, then two of its requests through the pool.
    let session = "5e55b0a1-0000-4000-8000-00000000a11e";
    let start = json!({"session_id": session, "hook_event_name": "SessionStart", "cwd": sb.home.display().to_string(), "source": "startup"});
    assert!(
        sb.hook("claude-code", "SessionStart", start.to_string().as_bytes())
            .status
            .success()
    );
    sb.wait_until(Duration::from_secs(10), |evs| {
        evs.iter().any(|e| e["type"] == "session.started")
    });
    let uid = json!({"device_id": "d", "account_uuid": "", "session_id": session}).to_string();
    let body = json!({"model": "m", "messages": [], "metadata": {"user_id": uid}}).to_string();
    let c = reqwest::blocking::Client::new();
    for _ in 0..2 {
        let r = c
            .post(format!("{url}/v1/messages"))
            .bearer_auth(&token)
            .body(body.clone())
            .send()
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    let events = sb.wait_until(Duration::from_secs(10), |evs| {
        evs.iter().any(|e| e["type"] == "attention.needed")
    });
    let asked: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "attention.needed")
        .collect();
    assert_eq!(asked.len(), 1, "{events:#?}");
    assert_eq!(asked[0]["session"]["id"], session);
    assert_eq!(asked[0]["data"]["kind"], "question");
    let message = asked[0]["data"]["message"].as_str().unwrap();
    assert!(
        message.contains("five hour limit of account acct-1 is 93% used")
            && message.contains("resets at 2100-01-01"),
        "{message}"
    );
    let limits: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "limits.observed")
        .collect();
    assert_eq!(limits.len(), 1, "the second answer changed nothing");
    assert_eq!(limits[0]["data"]["account_id"], "acct-1");
}
