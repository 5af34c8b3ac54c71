//! Remote titles (ADAPTERS.md, "the one exception", and the Claude Code row's
//! Facts), through the real daemon, hook and CLI against a loopback server
//! standing in for the API (`SESSIONPIPE_ANTHROPIC_API`): nothing is asked
//! while off; on, the session takes claude.ai's name and the bearer sent is
//! the config dir's own sign-in, which no event, outbox row, log line or
//! printed line ever holds; turning it on re-sends a session sent under
//! another name as `session.backfill`; an expiring sign-in, a redirect, an
//! answer over 1 MiB, an answer about another session, a 401 and a 404 all
//! keep the name; a backfill takes the name too; and the workspace's receiver
//! takes the newer title from the re-send though its seq 0 is a duplicate.

use serde_json::{Value, json};
use sessionpipe_receiver::{Options as ReceiverOptions, Receiver};
use sessionpipe_testkit::Sandbox;
use sessionpipe_testkit::http::{HttpServer, Request, Response};
use sessionpipe_testkit::sandbox::{bin, run_with_stdin};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The sign-in's access token: it must reach the API's header and nothing else.
const TOKEN: &str = "sk-ant-oat01-remotetitlesFAKE0123456789abcdefghij";
const SESSION: &str = "6a0c3f5e-5b7d-4c61-9a1e-0d2f4b8c7e11";
const REMOTE: &str = "session_01RemoteTitleAbc";
const NAME: &str = "Fix the login page";
const LOCAL: &str = "local auto name";
const PID: &str = "4242";
const RECEIVER_TOKEN: &str = "receiver-token-for-titles";

/// `found` once it finds something, within 20 s.
fn wait_until<T>(found: impl Fn() -> Option<T>) -> T {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(v) = found() {
            return v;
        }
        assert!(std::time::Instant::now() < deadline, "not within 20 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// How the stand-in API answers.
#[derive(Clone, Debug)]
enum Mode {
    /// `{response_shape: {id: cse_… twin, title}}` for whatever was asked.
    Named,
    NotFound,
    Unauthorized,
    /// A 302 to the trap server.
    Redirect(String),
    /// A title, padded past 1 MiB, with its length declared.
    Large,
    /// The same, chunked (no length declared).
    LargeChunked,
    /// A title for another session.
    OtherId,
}

struct Api {
    server: HttpServer,
    mode: Arc<Mutex<Mode>>,
}

impl Api {
    fn start() -> Api {
        let mode = Arc::new(Mutex::new(Mode::Named));
        let m = mode.clone();
        let server = HttpServer::start(move |r: &Request| answer(&m.lock().unwrap(), r)).unwrap();
        Api { server, mode }
    }

    fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    fn asked(&self) -> Vec<Request> {
        self.server.requests()
    }
}

fn answer(mode: &Mode, r: &Request) -> Response {
    let Some(asked) = r.path().strip_prefix("/v1/code/sessions/") else {
        return Response::new(404, "text/plain", "");
    };
    // claude.ai answers an ask about `session_X` naming it `cse_X`.
    let twin = asked.replacen("session_", "cse_", 1);
    let named = |title: &str, pad: usize| {
        json!({"response_shape": {"id": twin, "title": title, "status": "idle",
            "pad": "x".repeat(pad)}})
        .to_string()
    };
    match mode {
        Mode::Named => Response::new(200, "application/json", named(NAME, 0)),
        Mode::NotFound => Response::new(404, "application/json", r#"{"error":"not_found"}"#),
        Mode::Unauthorized => Response::new(401, "application/json", r#"{"error":"auth"}"#),
        Mode::Redirect(to) => Response::new(302, "text/plain", "").with_header("location", to),
        Mode::Large => Response::new(200, "application/json", named("Too big", 1 << 20)),
        Mode::LargeChunked => {
            let body = named("Too big", 1 << 20).into_bytes();
            let chunks = body.chunks(64 * 1024).map(<[u8]>::to_vec).collect();
            Response::stream(200, "application/json", chunks)
        }
        Mode::OtherId => Response::new(
            200,
            "application/json",
            json!({"response_shape": {"id": "cse_01SomeoneElse", "title": "Not yours"}})
                .to_string(),
        ),
    }
}

/// A home signed in to Claude Code (`~/.claude`), with one Claude app
/// session: its transcript (which names its claude.ai link) and its live
/// registry entry (which names the link too, and an `auto` name).
fn home(sb: &Sandbox) -> PathBuf {
    let config = sb.home.join(".claude");
    sign_in(&config, now_ms() + 3_600_000);
    std::fs::write(
        sb.home.join(".claude.json"),
        r#"{"oauthAccount":{"accountUuid":"acct-7","emailAddress":"ann@example.com"}}"#,
    )
    .unwrap();
    transcript(&config, SESSION, REMOTE)
}

fn sign_in(config: &Path, expires_ms: i64) {
    std::fs::create_dir_all(config).unwrap();
    std::fs::write(
        config.join(".credentials.json"),
        json!({"claudeAiOauth": {"accessToken": TOKEN, "refreshToken": "sk-ant-ort01-neverused",
            "expiresAt": expires_ms, "scopes": ["user:inference"]}})
        .to_string(),
    )
    .unwrap();
}

/// A session's transcript (with its link) and registry entry; its path.
fn transcript(config: &Path, session: &str, remote: &str) -> PathBuf {
    let dir = config.join("projects/-home-work");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{session}.jsonl"));
    let lines = [
        json!({"type": "user", "promptId": "p0", "timestamp": "2026-11-20T09:00:00.000Z",
            "cwd": "/home/work", "message": {"content": "the login page is broken"}}),
        json!({"type": "system", "subtype": "bridge_status", "timestamp": "2026-11-20T09:00:01.000Z",
            "url": format!("https://claude.ai/code/{remote}")}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();
    std::fs::create_dir_all(config.join("sessions")).unwrap();
    std::fs::write(
        config.join(format!("sessions/{PID}.json")),
        json!({"pid": 4242, "sessionId": session, "name": LOCAL, "nameSource": "auto",
            "bridgeSessionId": remote})
        .to_string(),
    )
    .unwrap();
    path
}

/// `sessionpipe ARGS` with the API pointed at the stand-in.
fn sessionpipe(sb: &Sandbox, api: &Api, args: &[&str]) -> Output {
    sb.command(bin("sessionpipe"))
        .args(args)
        .env("SESSIONPIPE_ANTHROPIC_API", api.server.base_url())
        .output()
        .expect("sessionpipe runs")
}

/// `titles ACTION --json`, which must succeed: what it printed, and all of it,
/// its log asked for at `info` (a command logs only warnings unless asked) so
/// the reasons it gives, and the token it must never hold, are in what is read.
fn titles(sb: &Sandbox, api: &Api, action: &str, printed: &mut String) -> Value {
    let out = sb
        .command(bin("sessionpipe"))
        .args(["titles", action, "--json"])
        .env("SESSIONPIPE_ANTHROPIC_API", api.server.base_url())
        .env("SESSIONPIPE_LOG", "info")
        .output()
        .expect("sessionpipe runs");
    printed.push_str(&String::from_utf8_lossy(&out.stdout));
    printed.push_str(&String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "titles {action}: {out:?}");
    serde_json::from_slice(&out.stdout).expect("one JSON document")
}

fn hook(sb: &Sandbox, transcript: &Path, event: &str, prompt_id: &str) {
    let payload = json!({"session_id": SESSION, "transcript_path": transcript, "cwd": "/home/work",
        "hook_event_name": event, "prompt_id": prompt_id, "prompt": "go on", "source": "startup"});
    let out = sb.hook_with(
        "claude-code",
        event,
        payload.to_string().as_bytes(),
        &[("CLAUDE_PID", PID)],
    );
    assert!(out.status.success());
}

fn wait_for(sb: &Sandbox, n: usize, kind: &str) -> Value {
    sb.wait_event_after(n, kind, Duration::from_secs(20))
}

fn title(e: &Value) -> (Option<&str>, Option<&str>) {
    (
        e["session"]["title"].as_str(),
        e["session"]["title_source"].as_str(),
    )
}

/// Every byte of every file under `dir`, with the files' names.
fn files_holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if std::fs::read(&p)
                .is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes()))
            {
                found.push(p);
            }
        }
    }
    found
}

#[test]
fn off_asks_nothing_and_on_names_the_session_and_resends_it_without_the_token_anywhere() {
    let sb = Sandbox::new();
    let transcript = home(&sb);
    let api = Api::start();
    // The workspace's receiver, behind a tier-0 sink.
    let receiver = Receiver::start(ReceiverOptions::new(RECEIVER_TOKEN)).unwrap();
    let mut add = sb.command(bin("sessionpipe"));
    add.args([
        "sink",
        "add",
        &receiver.url(),
        "--tier",
        "0",
        "--token-stdin",
    ]);
    let out = run_with_stdin(add, format!("{RECEIVER_TOKEN}\n").as_bytes());
    assert!(out.status.success(), "{out:?}");
    let mut daemon = sb.start_daemon_with(&[(
        "SESSIONPIPE_ANTHROPIC_API",
        std::ffi::OsStr::new(&api.server.base_url()),
    )]);

    hook(&sb, &transcript, "SessionStart", "p0");
    let started = wait_for(&sb, 0, "session.started");
    hook(&sb, &transcript, "UserPromptSubmit", "p1");
    let turn = wait_for(&sb, 1, "turn.started");
    assert_eq!(title(&started), (Some(LOCAL), Some("harness")));
    assert_eq!(title(&turn), (Some(LOCAL), Some("harness")));
    assert!(api.asked().is_empty(), "nothing is asked while it is off");

    let mut printed = String::new();
    let on = titles(&sb, &api, "on", &mut printed);
    assert_eq!(on["remote_titles"], true);
    assert_eq!(
        on["resent"],
        json!({"asked": 1, "named": 1, "resent": 1}),
        "{on}"
    );
    let asked = api.asked();
    assert_eq!(asked.len(), 1);
    let r = &asked[0];
    assert_eq!(
        (r.method.as_str(), r.path()),
        ("GET", "/v1/code/sessions/session_01RemoteTitleAbc")
    );
    assert_eq!(
        r.header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));

    let evs = sb.events();
    let resent: Vec<&Value> = evs
        .iter()
        .filter(|e| e["type"] == "session.backfill")
        .collect();
    assert_eq!(resent.len(), 1, "one re-send");
    let b = resent[0];
    assert_eq!(b["session"]["id"], SESSION);
    assert_eq!(b["session"]["seq"], 0, "the protocol's backfill: seq 0");
    assert_eq!(title(b), (Some(NAME), Some("harness")));
    assert_eq!(
        b["session"]["url"],
        format!("https://claude.ai/code/{REMOTE}")
    );
    assert_eq!(b["data"]["started_at"], "2026-11-20T09:00:00.000Z");

    // The next hook call: the name stays over the registry's `auto` one,
    // and it is not asked again inside the half hour.
    let before = evs.len();
    hook(&sb, &transcript, "UserPromptSubmit", "p2");
    let later = wait_for(&sb, before, "turn.started");
    assert_eq!(title(&later), (Some(NAME), Some("harness")));
    assert_eq!(api.asked().len(), 1);
    assert_eq!(later["session"]["seq"], 3, "the live seq goes on untouched");

    // Refreshed under the same name: asked, nothing sent again.
    let again = titles(&sb, &api, "refresh", &mut printed);
    assert_eq!(
        again["resent"],
        json!({"asked": 1, "named": 1, "resent": 0})
    );
    let off = titles(&sb, &api, "off", &mut printed);
    assert_eq!(off["remote_titles"], false);
    assert_eq!(sb.events().len(), before + 1);

    // The receiver had the session under the local name (seq 1 and 2) before
    // the re-send came at seq 0: it takes the newer title all the same.
    let named = wait_until(|| {
        receiver
            .session("claude-code", SESSION)
            .filter(|(block, ..)| block["title"] == NAME)
    });
    assert_eq!(named.0["title_source"], "harness", "{:?}", named.0);
    let kept = receiver.events("claude-code", SESSION).unwrap().unwrap();
    let backfills = kept
        .iter()
        .filter(|e| e["type"] == "session.backfill")
        .count();
    assert_eq!(backfills, 1, "stored once");

    daemon.child.kill().unwrap();
    let mut log = String::new();
    daemon
        .child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    let _ = daemon.child.wait();
    assert!(log.contains("SESSIONPIPE_ANTHROPIC_API is set"), "{log}");
    let tail = sb.sessionpipe(&["tail", "--json", "--no-follow"]);
    for (what, text) in [
        (
            "the events",
            String::from_utf8_lossy(&tail.stdout).into_owned(),
        ),
        ("the daemon's log", log),
        ("what the CLI printed", printed),
    ] {
        assert!(!text.contains(TOKEN), "the token is in {what}");
        assert!(
            !text.contains("remotetitlesFAKE"),
            "part of the token is in {what}"
        );
    }
    let state = sb.root().join("state");
    assert_eq!(
        files_holding(&state, "remotetitlesFAKE"),
        Vec::<PathBuf>::new()
    );
    assert!(
        !files_holding(&state, NAME).is_empty(),
        "the search would find it"
    );
}

#[test]
fn on_before_the_session_names_it_live_and_a_404_keeps_its_name() {
    let sb = Sandbox::new();
    let transcript = home(&sb);
    let api = Api::start();
    let mut printed = String::new();
    // Nothing sent yet: asked about, named, nothing to re-send.
    let on = titles(&sb, &api, "on", &mut printed);
    assert_eq!(on["resent"], json!({"asked": 1, "named": 1, "resent": 0}));
    let _daemon = sb.start_daemon_with(&[(
        "SESSIONPIPE_ANTHROPIC_API",
        std::ffi::OsStr::new(&api.server.base_url()),
    )]);
    hook(&sb, &transcript, "SessionStart", "p0");
    let started = wait_for(&sb, 0, "session.started");
    assert_eq!(title(&started), (Some(NAME), Some("harness")), "{started}");
    let live = api.asked();
    assert_eq!(live.len(), 2);
    assert_eq!(
        live[1].header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );

    // Another session of the same home, which claude.ai answers 404 for.
    api.set(Mode::NotFound);
    let other = "7b1d4a6f-6c8e-4d72-8b2f-1e3a5c9d8f22";
    let path = transcript_of(&sb, other, "session_02Missing");
    let payload = json!({"session_id": other, "transcript_path": path, "cwd": "/home/work",
        "hook_event_name": "SessionStart", "source": "startup"});
    let n = sb.events().len();
    assert!(
        sb.hook_with(
            "claude-code",
            "SessionStart",
            payload.to_string().as_bytes(),
            &[("CLAUDE_PID", PID)]
        )
        .status
        .success()
    );
    let e = wait_for(&sb, n, "session.started");
    assert_eq!(e["session"]["id"], other);
    assert_eq!(
        title(&e),
        (Some(LOCAL), Some("harness")),
        "a 404 keeps the name"
    );
    assert_eq!(api.asked().len(), 3);
    assert_eq!(api.asked()[2].path(), "/v1/code/sessions/session_02Missing");

    let doctor = sb.sessionpipe(&["doctor"]);
    let said = String::from_utf8_lossy(&doctor.stdout);
    assert!(said.contains("remote titles are on"), "{said}");
}

fn transcript_of(sb: &Sandbox, session: &str, remote: &str) -> PathBuf {
    transcript(&sb.home.join(".claude"), session, remote)
}

#[test]
fn an_expiring_token_a_redirect_a_huge_answer_or_another_sessions_title_keeps_the_name() {
    let sb = Sandbox::new();
    home(&sb);
    let api = Api::start();
    let trap = HttpServer::start(|_r: &Request| {
        Response::new(
            200,
            "application/json",
            r#"{"response_shape":{"id":"cse_01RemoteTitleAbc","title":"Trapped"}}"#,
        )
    })
    .unwrap();
    let mut printed = String::new();
    // Sent under its files' name while off.
    let out = sessionpipe(&sb, &api, &["backfill", "--json"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        api.asked().is_empty(),
        "a backfill asks nothing while it is off"
    );
    let first = sb.events();
    assert_eq!(title(&first[0]).1, Some("first-ask"));

    // Each refusal, with the reason the log gives for it.
    let refused = [
        (Mode::NotFound, "the API answered 404"),
        (Mode::Unauthorized, "the API answered 401"),
        (
            Mode::Redirect(format!("{}/v1/code/sessions/{REMOTE}", trap.base_url())),
            "redirect (302), which is never followed",
        ),
        (Mode::Large, "over 1 MiB and was not read"),
        (Mode::LargeChunked, "over 1 MiB and was not read"),
        (Mode::OtherId, "the answer names another session"),
    ];
    for (i, (mode, why)) in refused.iter().enumerate() {
        api.set(mode.clone());
        let mut said = String::new();
        let r = titles(&sb, &api, if i == 0 { "on" } else { "refresh" }, &mut said);
        assert_eq!(
            r["resent"],
            json!({"asked": 1, "named": 0, "resent": 0}),
            "{mode:?}: {r}"
        );
        assert!(said.contains(why), "{mode:?}: {said}");
        printed.push_str(&said);
    }
    assert_eq!(api.asked().len(), refused.len());
    assert!(trap.requests().is_empty(), "the redirect was not followed");

    // A sign-in within a minute of its expiry is not used: nothing is asked.
    api.set(Mode::Named);
    sign_in(&sb.home.join(".claude"), now_ms() + 30_000);
    let mut said = String::new();
    let r = titles(&sb, &api, "refresh", &mut said);
    assert_eq!(r["resent"], json!({"asked": 1, "named": 0, "resent": 0}));
    assert!(said.contains("expires within a minute"), "{said}");
    printed.push_str(&said);
    assert_eq!(api.asked().len(), refused.len(), "nothing asked with it");
    let creds = std::fs::read_to_string(sb.home.join(".claude/.credentials.json")).unwrap();
    assert!(creds.contains("sk-ant-ort01-neverused"), "never refreshed");
    assert_eq!(sb.events().len(), 1, "nothing was sent again");

    // The same home with a good sign-in: re-sent (so each refusal above was one).
    sign_in(&sb.home.join(".claude"), now_ms() + 3_600_000);
    let r = titles(&sb, &api, "refresh", &mut printed);
    assert_eq!(r["resent"], json!({"asked": 1, "named": 1, "resent": 1}));
    let evs = sb.events();
    assert_eq!(evs.len(), 2);
    assert_eq!(
        (evs[1]["type"].as_str(), evs[1]["session"]["seq"].as_u64()),
        (Some("session.backfill"), Some(0))
    );
    assert_eq!(title(&evs[1]), (Some(NAME), Some("harness")));

    // A backfill takes the name too.
    let newer = "8c2e5b7a-7d9f-4e83-9c3a-2f4b6d0e9a33";
    transcript_of(&sb, newer, "session_03Newer");
    let out = sessionpipe(&sb, &api, &["backfill", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let evs = sb.events();
    let b = evs
        .iter()
        .find(|e| e["session"]["id"] == newer)
        .expect("backfilled");
    assert_eq!(title(b), (Some(NAME), Some("harness")));
    assert!(!printed.contains(TOKEN));
}

#[test]
fn the_titles_page_api_turns_it_on_and_off_as_the_cli_does() {
    let sb = Sandbox::new();
    let transcript = home(&sb);
    let api = Api::start();
    let _daemon = sb.start_daemon_with(&[(
        "SESSIONPIPE_ANTHROPIC_API",
        std::ffi::OsStr::new(&api.server.base_url()),
    )]);
    let ui = crate::api::Ui::of(&sb);
    hook(&sb, &transcript, "SessionStart", "p0");
    wait_for(&sb, 0, "session.started");
    assert_eq!(ui.get("/api/titles"), json!({"remote_titles": false}));
    // Not through the settings: turning it on is more than a setting.
    let (status, answer) = ui.send(
        reqwest::Method::PUT,
        "/api/settings",
        json!({"remote_titles": true}),
    );
    assert_eq!(status, 400, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("/api/titles"));
    let (status, _) = ui.send(reqwest::Method::PUT, "/api/titles", json!({"on": "yes"}));
    assert_eq!(status, 400);
    assert!(api.asked().is_empty());

    let (status, on) = ui.send(reqwest::Method::PUT, "/api/titles", json!({"on": true}));
    assert_eq!(status, 200, "{on}");
    assert_eq!(
        on,
        json!({"remote_titles": true, "resent": {"asked": 1, "named": 1, "resent": 1}})
    );
    assert_eq!(ui.get("/api/settings")["remote_titles"], true);
    let b = sb.wait_event_after(1, "session.backfill", Duration::from_secs(10));
    assert_eq!(title(&b), (Some(NAME), Some("harness")));
    let (_, off) = ui.send(reqwest::Method::PUT, "/api/titles", json!({"on": false}));
    assert_eq!(off, json!({"remote_titles": false, "resent": null}));
    assert!(!on.to_string().contains(TOKEN));
}

/// A stand-in API that holds each answer it was armed for until the test
/// lets it go (at most 2.5 s, inside the ask's 3 s bound, so a test that
/// fails does not hang): how a slow claude.ai is played.
struct Gated {
    server: HttpServer,
    armed: Arc<std::sync::atomic::AtomicBool>,
    /// Rung when an armed ask has come in and is being held.
    held: Mutex<std::sync::mpsc::Receiver<()>>,
    release: std::sync::mpsc::Sender<()>,
    /// Set once a held ask has been answered.
    answered: Arc<std::sync::atomic::AtomicBool>,
}

impl Gated {
    fn start() -> Gated {
        use std::sync::atomic::{AtomicBool, Ordering};
        let armed = Arc::new(AtomicBool::new(false));
        let answered = Arc::new(AtomicBool::new(false));
        let (held_tx, held_rx) = std::sync::mpsc::channel::<()>();
        let (release, release_rx) = std::sync::mpsc::channel::<()>();
        let (a, done) = (armed.clone(), answered.clone());
        let gate = Mutex::new((held_tx, release_rx));
        let server = HttpServer::start(move |r: &Request| {
            if a.load(Ordering::SeqCst) {
                let gate = gate.lock().unwrap();
                let _ = gate.0.send(());
                let _ = gate.1.recv_timeout(Duration::from_millis(2_500));
                done.store(true, Ordering::SeqCst);
            }
            answer(&Mode::Named, r)
        })
        .unwrap();
        Gated {
            server,
            armed,
            held: Mutex::new(held_rx),
            release,
            answered,
        }
    }
}

#[test]
fn a_slow_answer_holds_only_its_own_session_and_its_name_still_arrives() {
    use std::sync::atomic::Ordering;
    let sb = Sandbox::new();
    let transcript = home(&sb);
    let api = Gated::start();
    // On before the daemon starts (its re-send asks at once, ungated).
    let out = sb
        .command(bin("sessionpipe"))
        .args(["titles", "on", "--json"])
        .env("SESSIONPIPE_ANTHROPIC_API", api.server.base_url())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(api.server.requests().len(), 1);
    api.armed.store(true, Ordering::SeqCst);
    let _daemon = sb.start_daemon_with(&[(
        "SESSIONPIPE_ANTHROPIC_API",
        std::ffi::OsStr::new(&api.server.base_url()),
    )]);

    // The linked session's first call makes an ask due; claude.ai sits on it.
    hook(&sb, &transcript, "SessionStart", "p0");
    api.held
        .lock()
        .unwrap()
        .recv_timeout(Duration::from_secs(20))
        .expect("the live ask came in");

    // Meanwhile another session (no link, so nothing to ask) goes on.
    let other = "9d3f6c8b-8e0a-4f94-8d4b-3a5c7e1f0b44";
    let payload = json!({"session_id": other, "cwd": "/home/work",
        "hook_event_name": "SessionStart", "source": "startup"});
    let out = sb.hook_with(
        "claude-code",
        "SessionStart",
        payload.to_string().as_bytes(),
        &[],
    );
    assert!(out.status.success());
    let evs = wait_until(|| {
        let evs = sb.events();
        evs.iter()
            .any(|e| e["session"]["id"] == other)
            .then_some(evs)
    });
    assert!(
        !api.answered.load(Ordering::SeqCst),
        "the other session's event waited for the slow answer"
    );
    assert!(
        evs.iter().all(|e| e["session"]["id"] != SESSION),
        "the asked session's call waits for its own answer: {evs:?}"
    );

    // Let claude.ai answer: the asked session's call lands under its name.
    api.release.send(()).unwrap();
    let evs = wait_until(|| {
        let evs = sb.events();
        evs.iter()
            .any(|e| e["session"]["id"] == SESSION)
            .then_some(evs)
    });
    let started: Vec<&Value> = evs
        .iter()
        .filter(|e| e["session"]["id"] == SESSION)
        .collect();
    assert_eq!(started.len(), 1, "once: {evs:?}");
    assert_eq!(started[0]["type"], "session.started");
    assert_eq!(started[0]["session"]["seq"], 1);
    assert_eq!(title(started[0]), (Some(NAME), Some("harness")));
    assert_eq!(
        evs[0]["session"]["id"], other,
        "the other session went first"
    );
    assert_eq!(api.server.requests().len(), 2, "asked once live");

    // Not asked again within the minute, and the name stays.
    let n = evs.len();
    hook(&sb, &transcript, "UserPromptSubmit", "p1");
    let turn = wait_for(&sb, n, "turn.started");
    assert_eq!(title(&turn), (Some(NAME), Some("harness")));
    assert_eq!(api.server.requests().len(), 2);
}

/// The daemon's own long work shows in `GET /api/progress` while it runs:
/// turning titles on in the page, its re-send's ask held by a slow claude.ai,
/// is filed as the daemon's; when it ends the API says none.
#[test]
fn the_pages_titles_resend_shows_its_progress_while_it_runs() {
    use std::sync::atomic::Ordering;
    let sb = Sandbox::new();
    home(&sb);
    let api = Gated::start();
    api.armed.store(true, Ordering::SeqCst);
    let daemon = sb.start_daemon_with(&[(
        "SESSIONPIPE_ANTHROPIC_API",
        std::ffi::OsStr::new(&api.server.base_url()),
    )]);
    let ui = crate::api::Ui::of(&sb);
    assert_eq!(ui.get("/api/progress"), json!({"progress": null}));
    let turning_on = std::thread::spawn({
        let ui = crate::api::Ui::of(&sb);
        move || ui.send(reqwest::Method::PUT, "/api/titles", json!({"on": true}))
    });
    api.held
        .lock()
        .unwrap()
        .recv_timeout(Duration::from_secs(20))
        .expect("the re-send's ask came in");
    let mut now = ui.get("/api/progress")["progress"].clone();
    for k in ["started_at", "updated_at"] {
        assert!(now[k].as_str().unwrap().ends_with('Z'), "{now}");
        now.as_object_mut().unwrap().remove(k);
    }
    assert_eq!(
        now,
        json!({"what": "titles", "stage": "sending", "done": 0, "total": 1,
            "harness": "claude-code", "pid": daemon.pid()})
    );
    api.release.send(()).unwrap();
    let (status, on) = turning_on.join().unwrap();
    assert_eq!((status, &on["resent"]["asked"]), (200, &json!(1)), "{on}");
    assert_eq!(ui.get("/api/progress"), json!({"progress": null}));
}
