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
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const ACCESS: &str = "sk-ant-oat01-poolFAKEaccess0123456789";
const SETTINGS: &str = "{\n\t\"model\": \"opus\"\r\n}";

fn now_ms() -> i64 {
    protocol::time::now_ms()
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
pub(crate) fn pooled(api: &HttpServer) -> (Sandbox, Daemon, String, String) {
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

/// One request through the pool's listener as Claude Code sends it for
/// `session` (its `metadata.user_id` names the session), answered 200.
pub(crate) fn ask_as(url: &str, token: &str, session: &str) {
    let uid = json!({"device_id": "d", "account_uuid": "", "session_id": session}).to_string();
    let body = json!({"model": "m", "messages": [], "metadata": {"user_id": uid}}).to_string();
    let r = reqwest::blocking::Client::new()
        .post(format!("{url}/v1/messages"))
        .bearer_auth(token)
        .body(body)
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
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
    for _ in 0..2 {
        ask_as(&url, &token, session);
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

/// Where the kill test's randomness comes from: `SESSIONPIPE_TEST_SEED`
/// when set (to repeat a run), else the clock; printed either way.
fn seed() -> u64 {
    let seed = std::env::var("SESSIONPIPE_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| now_ms() as u64);
    eprintln!("seed {seed} (SESSIONPIPE_TEST_SEED={seed} repeats it)");
    seed
}

/// splitmix64: small, seeded, good enough to pick delays.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % n.max(1)
    }
}

/// The pair a refresh token was spent for, and when.
struct Spent {
    account: String,
    at: Instant,
    access: String,
    refresh: String,
}

/// Whether the next rotation's answer waits on the wire.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Hold {
    Off,
    /// The next rotation waits once it has rotated.
    Armed,
    /// One waits (rotated, not answered) until `release`.
    Holding,
}

#[derive(Default)]
struct Counts {
    /// Rotations: a live refresh token spent for a new pair.
    answered: usize,
    /// A spent token taken again within the leeway (a lost answer).
    reused: usize,
    /// A spent token past the leeway, or one never issued: `invalid_grant`.
    refused: usize,
}

struct Lineages {
    /// Each account's live refresh token (the latest issued).
    live: HashMap<String, String>,
    spent: HashMap<String, Spent>,
    /// Every token issued, access and refresh.
    issued: Vec<String>,
    counts: Counts,
    by_account: HashMap<String, usize>,
    leeway: Duration,
    down: bool,
    /// What was presented while down: (account of the token, whether live).
    heard_down: Vec<(String, bool)>,
    hold: Hold,
    rng: Rng,
    n: u64,
}

/// A token server that rotates as a rotating OAuth server does: every
/// answer a new access and refresh token, the refresh token presented spent.
/// A spent one presented again within `leeway` gets the pair it got first;
/// later it is refused. Without a leeway no client could survive being
/// killed after the server rotated but before its answer was stored (or
/// while it was still on the wire): the only refresh token it kept is
/// spent, and the new one is lost. Servers with rotation give such a grace
/// for exactly that (Okta's rotation grace period, for one).
struct Rotating {
    state: Mutex<Lineages>,
    changed: std::sync::Condvar,
}

/// The server's answers: short-lived tokens (60 s, inside the pool's five
/// minutes' refresh margin), so every look refreshes every account.
const ROTATED_EXPIRES_IN: i64 = 60;

impl Rotating {
    fn new(seed: u64, leeway: Duration, accounts: &[(&str, &str)]) -> Rotating {
        Rotating {
            state: Mutex::new(Lineages {
                live: accounts
                    .iter()
                    .map(|(a, rt)| (a.to_string(), rt.to_string()))
                    .collect(),
                spent: HashMap::new(),
                issued: Vec::new(),
                counts: Counts::default(),
                by_account: HashMap::new(),
                leeway,
                down: false,
                heard_down: Vec::new(),
                hold: Hold::Off,
                rng: Rng(seed ^ 0x5eed),
                n: 0,
            }),
            changed: std::sync::Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Lineages> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn answer(&self, req: &sessionpipe_testkit::http::Request) -> Response {
        if req.path() != "/v1/oauth/token" {
            return Response::json(404, &json!({}));
        }
        let body = req.json().unwrap_or(Value::Null);
        let presented = body["refresh_token"].as_str().unwrap_or("").to_string();
        let pair = |access: &str, refresh: &str| {
            Response::json(
                200,
                &json!({"access_token": access, "refresh_token": refresh, "expires_in": ROTATED_EXPIRES_IN}),
            )
        };
        let refused = Response::json(
            400,
            &json!({"error": "invalid_grant", "error_description": "Refresh token not found or invalid"}),
        );
        let mut s = self.lock();
        let live_of = s
            .live
            .iter()
            .find(|(_, rt)| **rt == presented)
            .map(|(a, _)| a.clone());
        if s.down {
            let account = live_of
                .clone()
                .or_else(|| s.spent.get(&presented).map(|p| p.account.clone()))
                .unwrap_or_default();
            s.heard_down.push((account, live_of.is_some()));
            drop(s);
            return Response::json(
                503,
                &json!({"error": {"type": "overloaded_error", "message": "Overloaded"}}),
            );
        }
        if let Some(account) = live_of {
            s.n += 1;
            let (access, refresh) = (
                format!("at-{account}-rotated-{}", s.n),
                format!("rt-{account}-rotated-{}", s.n),
            );
            s.live.insert(account.clone(), refresh.clone());
            s.spent.insert(
                presented,
                Spent {
                    account: account.clone(),
                    at: Instant::now(),
                    access: access.clone(),
                    refresh: refresh.clone(),
                },
            );
            s.issued.extend([access.clone(), refresh.clone()]);
            s.counts.answered += 1;
            *s.by_account.entry(account).or_default() += 1;
            // Rotated, not yet answered: the answer is on the wire a while
            // (held until the test has killed the daemon, or a few ms).
            if s.hold == Hold::Armed {
                s.hold = Hold::Holding;
                self.changed.notify_all();
                while s.hold == Hold::Holding {
                    s = self.changed.wait(s).unwrap_or_else(|p| p.into_inner());
                }
            } else {
                let pause = s.rng.below(15);
                drop(s);
                std::thread::sleep(Duration::from_millis(pause));
            }
            return pair(&access, &refresh);
        }
        let again = s
            .spent
            .get(&presented)
            .filter(|p| p.at.elapsed() <= s.leeway)
            .map(|p| (p.access.clone(), p.refresh.clone()));
        match again {
            Some((access, refresh)) => {
                s.counts.reused += 1;
                pair(&access, &refresh)
            }
            None => {
                s.counts.refused += 1;
                refused
            }
        }
    }

    /// Holds the next rotation's answer; true once one is held.
    fn hold_next(&self, within: Duration) -> bool {
        let until = Instant::now() + within;
        let mut s = self.lock();
        s.hold = Hold::Armed;
        while s.hold != Hold::Holding {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                s.hold = Hold::Off;
                return false;
            }
            s = self
                .changed
                .wait_timeout(s, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        true
    }

    fn release(&self) {
        self.lock().hold = Hold::Off;
        self.changed.notify_all();
    }
}

/// A config dir signed in as `account` with Claude Code's own sign-in
/// (`access`, `refresh`, expiring at `expires_at_ms`); `~/.claude` keeps its
/// `.claude.json` in home, any other dir inside itself.
fn claude_code_signed_in(
    sb: &Sandbox,
    dir: &str,
    account: &str,
    (access, refresh, expires_at_ms): (&str, &str, i64),
) -> std::path::PathBuf {
    let path = sb.home.join(dir);
    std::fs::create_dir_all(&path).unwrap();
    rewrite_credentials(&path, access, refresh, expires_at_ms);
    std::fs::write(path.join("settings.json"), "{}").unwrap();
    let claude_json = if dir == ".claude" {
        sb.home.join(".claude.json")
    } else {
        path.join(".claude.json")
    };
    let who = json!({"oauthAccount": {"accountUuid": account, "emailAddress": format!("{account}@example.com")}});
    std::fs::write(claude_json, who.to_string()).unwrap();
    path
}

/// Claude Code's credentials file with this sign-in (as Claude Code writes
/// it when it signs in or refreshes).
fn rewrite_credentials(dir: &std::path::Path, access: &str, refresh: &str, expires_at_ms: i64) {
    let creds = json!({"claudeAiOauth": {"accessToken": access, "refreshToken": refresh, "expiresAt": expires_at_ms, "scopes": ["user:inference"]}});
    std::fs::write(dir.join(".credentials.json"), creds.to_string()).unwrap();
}

fn import(sb: &Sandbox, dir: &std::path::Path) {
    let o = sb.sessionpipe(&[
        "pool",
        "add",
        "--import",
        "--config-dir",
        &dir.display().to_string(),
    ]);
    assert!(o.status.success(), "{}", said(&o));
}

/// Each account's sign-in as the daemon stored it (the secrets file: no
/// keychain answers in a sandbox): account id -> (access, refresh).
fn stored(sb: &Sandbox) -> HashMap<String, (String, String)> {
    let path = sb.state.join("secrets.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{} is not there ({e}): was a keychain used?",
            path.display()
        )
    });
    let m: HashMap<String, String> = serde_json::from_str(&text).unwrap();
    m.iter()
        .filter_map(|(k, v)| {
            let id = k.strip_prefix("pool:account:")?;
            let t: Value = serde_json::from_str(v).unwrap();
            Some((
                id.to_string(),
                (
                    t["access"].as_str().unwrap().to_string(),
                    t["refresh"].as_str().unwrap().to_string(),
                ),
            ))
        })
        .collect()
}

fn pool_status(sb: &Sandbox) -> Value {
    let o = sb.sessionpipe(&["pool", "status", "--json"]);
    assert!(o.status.success(), "{}", said(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// A daemon whose pool talks to `base` for sign-ins and the API, looking
/// every 50 ms, and what it logs (read off its stderr until it ends).
fn pool_daemon(sb: &Sandbox, base: &str) -> (Daemon, std::thread::JoinHandle<String>) {
    let mut daemon = sb.start_daemon_with(&[
        ("SESSIONPIPE_CLAUDE_OAUTH", std::ffi::OsStr::new(base)),
        ("SESSIONPIPE_ANTHROPIC_API", std::ffi::OsStr::new(base)),
        ("SESSIONPIPE_POOL_LOOK_MS", std::ffi::OsStr::new("50")),
    ]);
    let mut err = daemon.child.stderr.take().unwrap();
    let log = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    (daemon, log)
}

fn wait_long(what: &str, within: Duration, done: impl Fn() -> bool) {
    let until = Instant::now() + within;
    while !done() {
        assert!(Instant::now() < until, "{what} not within {within:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn refreshes_rotate_through_a_daemon_killed_at_random_points() {
    let seed = seed();
    let mut rng = Rng(seed);
    let t0 = Instant::now();
    let accounts = [
        ("acct-1", ".claude", "rt-acct-1-first"),
        ("acct-2", ".claude-b", "rt-acct-2-first"),
    ];
    let server = Arc::new(Rotating::new(
        seed,
        // A few seconds: a restarted daemon's first look is at once.
        Duration::from_secs(10),
        &accounts.map(|(a, _, rt)| (a, rt)),
    ));
    let answering = server.clone();
    let http = HttpServer::start(move |req| answering.answer(req)).unwrap();
    let base = http.base_url();
    let sb = Sandbox::new();
    for (account, dir, rt) in accounts {
        let path = claude_code_signed_in(
            &sb,
            dir,
            account,
            (&format!("at-{account}-first"), rt, now_ms() + 60_000),
        );
        import(&sb, &path);
    }

    // Killed (SIGKILL) over and over: at a random moment, or while a
    // rotated answer is on the wire, the server having spent the token the
    // daemon holds.
    let (mut kills, mut on_the_wire) = (0, 0);
    let mut logs = String::new();
    loop {
        let (answered, both) = {
            let s = server.lock();
            (s.counts.answered, s.by_account.len() == accounts.len())
        };
        if answered >= 50 && both && kills >= 10 {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(240),
            "only {answered} refreshes in 4 minutes"
        );
        let (daemon, log) = pool_daemon(&sb, &base);
        if rng.below(2) == 0 {
            assert!(
                server.hold_next(Duration::from_secs(20)),
                "the daemon refreshed nothing within 20 s"
            );
            daemon.kill();
            server.release();
            on_the_wire += 1;
        } else {
            std::thread::sleep(Duration::from_millis(rng.below(500)));
            daemon.kill();
        }
        kills += 1;
        logs += &log.join().unwrap();
        let refused = server.lock().counts.refused;
        assert_eq!(refused, 0, "a spent token was presented past the leeway");
    }
    let killed_for = t0.elapsed();

    // Left alone, the daemon refreshes both accounts again.
    let before: HashMap<String, usize> = server.lock().by_account.clone();
    let (daemon, log) = pool_daemon(&sb, &base);
    wait_long("both accounts refreshed", Duration::from_secs(20), || {
        let s = server.lock();
        accounts
            .iter()
            .all(|(a, ..)| s.by_account.get(*a) > before.get(*a))
    });

    // The server goes down: refreshes fail, and each account stays usable
    // until its token expires, saying why.
    server.lock().down = true;
    wait_long("both refreshes failing", Duration::from_secs(20), || {
        let v = pool_status(&sb);
        v["live"] == true
            && v["accounts"].as_array().unwrap().iter().all(|a| {
                a["refresh_error"]
                    .as_str()
                    .is_some_and(|e| e.contains("503"))
            })
    });
    let v = pool_status(&sb);
    for a in v["accounts"].as_array().unwrap() {
        assert_eq!(a["status"], "unknown", "{a}");
        let until = a["expires_at"].as_str().unwrap();
        assert!(until > protocol_now().as_str(), "{a}");
    }
    let o = sb.sessionpipe(&["pool", "status"]);
    assert!(
        said(&o).contains("last refresh failed: the sign-in server answered 503 (overloaded_error) (its sign-in works until"),
        "{}",
        said(&o)
    );
    daemon.kill();
    logs += &log.join().unwrap();
    {
        let s = server.lock();
        assert!(!s.heard_down.is_empty());
        for (account, live) in &s.heard_down {
            assert!(*live, "{account} presented a spent token");
        }
    }

    // What is kept is each account's live refresh token ...
    let kept = stored(&sb);
    {
        let s = server.lock();
        for (account, ..) in accounts {
            assert_eq!(
                kept.get(account).map(|(_, r)| r),
                s.live.get(account),
                "{account}'s stored refresh token is not its live one"
            );
        }
    }
    // ... and no token is in the log or pool-status.json.
    let said_status =
        std::fs::read_to_string(sb.state.join("pool-status.json")).unwrap_or_default();
    for t in &server.lock().issued {
        assert!(!logs.contains(t.as_str()), "the log holds a token");
        assert!(
            !said_status.contains(t.as_str()),
            "pool-status.json holds a token"
        );
    }

    // The server takes them without its leeway.
    {
        let mut s = server.lock();
        s.down = false;
        s.leeway = Duration::ZERO;
    }
    let before: HashMap<String, usize> = server.lock().by_account.clone();
    let (daemon, log) = pool_daemon(&sb, &base);
    wait_long("both accounts refreshed", Duration::from_secs(20), || {
        let s = server.lock();
        accounts
            .iter()
            .all(|(a, ..)| s.by_account.get(*a) > before.get(*a))
    });
    daemon.kill();
    logs += &log.join().unwrap();
    let s = server.lock();
    assert_eq!(s.counts.refused, 0, "a spent token was refused");
    assert!(
        s.counts.reused >= on_the_wire,
        "each answer lost on the wire is taken again: {} of {on_the_wire}",
        s.counts.reused
    );
    assert!(!logs.contains("must be signed in again"), "{logs}");
    eprintln!(
        "seed {seed}: {} refreshes ({:?}), {kills} kills ({on_the_wire} with an answer on the wire), \
         {} spent tokens taken again within the leeway, in {:?} ({:?} in all)",
        s.counts.answered,
        s.by_account,
        s.counts.reused,
        killed_for,
        t0.elapsed()
    );
}

/// Now as RFC 3339 in UTC with milliseconds (as `expires_at` is written).
fn protocol_now() -> String {
    protocol::time::rfc3339_ms(now_ms())
}

#[test]
fn an_imported_account_takes_claude_codes_newer_sign_in_instead_of_refreshing_a_spent_one() {
    // The sign-in server knows what Claude Code left live: acct-1's `rt-cc-2`
    // (Claude Code spent `rt-cc-1` on it) and acct-3's own `rt-c-1`.
    let oauth = HttpServer::start(|req| {
        let presented = req
            .json()
            .and_then(|b| b["refresh_token"].as_str().map(str::to_string));
        let pair = |a: &str, r: &str| {
            Response::json(
                200,
                &json!({"access_token": a, "refresh_token": r, "expires_in": 28800}),
            )
        };
        match (req.path(), presented.as_deref()) {
            ("/v1/oauth/token", Some("rt-cc-2")) => pair("at-pool-3", "rt-pool-3"),
            ("/v1/oauth/token", Some("rt-c-1")) => pair("at-c-2", "rt-c-2"),
            ("/v1/oauth/token", _) => Response::json(400, &json!({"error": "invalid_grant"})),
            _ => Response::json(404, &json!({})),
        }
    })
    .unwrap();
    let sb = Sandbox::new();
    let soon = now_ms() + 60_000;
    let one = claude_code_signed_in(&sb, ".claude", "acct-1", ("at-cc-1", "rt-cc-1", soon));
    let two = claude_code_signed_in(&sb, ".claude-b", "acct-2", ("at-b-1", "rt-b-1", soon));
    let three = claude_code_signed_in(&sb, ".claude-c", "acct-3", ("at-c-1", "rt-c-1", soon));
    for dir in [&one, &two, &three] {
        import(&sb, dir);
    }
    let kept: Value =
        serde_json::from_slice(&std::fs::read(sb.state.join("pool.json")).unwrap()).unwrap();
    assert_eq!(
        kept["accounts"][0]["imported_from"]["config_dir"],
        one.display().to_string(),
        "{kept}"
    );

    // Claude Code refreshed its own since: acct-1's copy now expires later
    // but is due too (taken, then refreshed), acct-2's is good for hours
    // (taken, not refreshed). acct-3's config dir was signed in as another
    // account since: its sign-in is not acct-3's to take.
    rewrite_credentials(&one, "at-cc-2", "rt-cc-2", soon + 60_000);
    rewrite_credentials(&two, "at-b-2", "rt-b-2", now_ms() + 8 * 3_600_000);
    rewrite_credentials(&three, "at-x-1", "rt-x-1", now_ms() + 8 * 3_600_000);
    std::fs::write(
        three.join(".claude.json"),
        json!({"oauthAccount": {"accountUuid": "acct-x"}}).to_string(),
    )
    .unwrap();
    let files =
        || [&one, &two, &three].map(|d| std::fs::read(d.join(".credentials.json")).unwrap());
    let claude_codes = files();

    let (daemon, log) = pool_daemon(&sb, &oauth.base_url());
    wait_long(
        "the three sign-ins settled",
        Duration::from_secs(20),
        || {
            let kept = stored(&sb);
            let refresh = |a: &str| kept.get(a).map(|(_, r)| r.clone()).unwrap_or_default();
            refresh("acct-1") == "rt-pool-3"
                && refresh("acct-2") == "rt-b-2"
                && refresh("acct-3") == "rt-c-2"
        },
    );
    let v = pool_status(&sb);
    for a in v["accounts"].as_array().unwrap() {
        assert!(a["refresh_error"].is_null(), "{a}");
        assert_eq!(a["status"], "unknown", "{a}");
    }
    daemon.kill();
    let log = log.join().unwrap();
    let presented: Vec<String> = oauth
        .requests()
        .iter()
        .filter(|r| r.path() == "/v1/oauth/token")
        .filter_map(|r| r.json()?["refresh_token"].as_str().map(str::to_string))
        .collect();
    assert_eq!(presented, ["rt-cc-2", "rt-c-1"], "no spent token went up");
    assert_eq!(
        files(),
        claude_codes,
        "Claude Code's files are as it wrote them"
    );
    assert_eq!(
        log.matches("took Claude Code's newer sign-in").count(),
        2,
        "{log}"
    );
    for t in [
        "at-cc-2",
        "rt-cc-2",
        "at-b-2",
        "rt-b-2",
        "at-pool-3",
        "rt-pool-3",
        "at-x-1",
    ] {
        assert!(!log.contains(t), "the log holds a token");
    }
}
