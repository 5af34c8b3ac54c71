//! A sink's credentials go only where the person sent them and are never
//! printed: a URL with a password in it is refused (the token goes through
//! `--token-stdin`), a query-string token is masked in every listing, and a
//! discovery document that names an events endpoint on another origin is
//! refused at `sink add` and pauses a sink that has one, before any request
//! goes there. A file sink's new file is the person's alone.

use serde_json::{Value, json};
use sessionpipe_receiver::{Options, Receiver};
use sessionpipe_testkit::Sandbox;
use sessionpipe_testkit::http::{HttpServer, Response};
use std::time::{Duration, Instant};

const TOKEN: &str = "receiver-token-for-tests";
const QUERY_SECRET: &str = "q5ecret0123456789abcdef";

fn add(sb: &Sandbox, url: &str) -> std::process::Output {
    let mut c = sb.command(sessionpipe_testkit::sandbox::bin("sessionpipe"));
    c.args(["sink", "add", url, "--tier", "1", "--token-stdin"]);
    sessionpipe_testkit::sandbox::run_with_stdin(c, format!("{TOKEN}\n").as_bytes())
}

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_password_in_a_sink_url_is_refused_and_never_printed() {
    let sb = Sandbox::new();
    let out = add(&sb, "https://me:hunter2pass@receiver.example/x");
    assert!(!out.status.success());
    let said = text(&out);
    assert!(said.contains("--token-stdin"), "{said}");
    assert!(!said.contains("hunter2pass"), "{said}");
    assert!(!sb.state.join("sinks.json").exists(), "nothing stored");
    let out = add(&sb, "https://only-a-user@receiver.example/x");
    assert!(!out.status.success() && text(&out).contains("--token-stdin"));
}

#[test]
fn a_query_string_token_is_masked_everywhere_it_is_shown() {
    let sb = Sandbox::new();
    let receiver = Receiver::start(Options::new(TOKEN)).unwrap();
    let url = format!("{}/?key={QUERY_SECRET}", receiver.url());
    let out = add(&sb, &url);
    assert!(out.status.success(), "{}", text(&out));
    let _daemon = sb.start_daemon();
    let mut shown = vec![text(&out)];
    for args in [
        &["sink", "list"][..],
        &["sink", "list", "--json"],
        &["status"],
        &["status", "--json"],
        &["doctor"],
    ] {
        shown.push(text(&sb.sessionpipe(args)));
    }
    let ui: Value =
        serde_json::from_slice(&std::fs::read(sb.state.join("ui.json")).unwrap()).unwrap();
    let api = reqwest::blocking::Client::new()
        .get(format!("{}/api/sinks", ui["url"].as_str().unwrap()))
        .bearer_auth(ui["token"].as_str().unwrap())
        .send()
        .unwrap()
        .text()
        .unwrap();
    shown.push(api);
    for s in &shown {
        assert!(!s.contains(QUERY_SECRET), "a query token shown: {s}");
    }
    assert!(shown[1].contains("key=***"), "{}", shown[1]);
    // Kept (it is the URL the person gave), but only in the private sink list.
    let kept = std::fs::read_to_string(sb.state.join("sinks.json")).unwrap();
    assert!(kept.contains(QUERY_SECRET));
}

/// A receiver whose discovery names its events endpoint at `events`.
fn pointing_to(events: String) -> HttpServer {
    HttpServer::start(move |req| {
        if req.path() == "/.well-known/sessionpipe" {
            Response::json(
                200,
                &json!({"protocol": [1], "max_tier": 3, "endpoints": {"events": events}}),
            )
        } else {
            Response::json(500, &json!({"error": "not for events"}))
        }
    })
    .unwrap()
}

fn hook(sb: &Sandbox) {
    let p = json!({"session_id": "7f1c2d3e-0000-4000-8000-0000000000cc", "transcript_path": "/nowhere.jsonl", "cwd": "/w", "hook_event_name": "UserPromptSubmit", "prompt": "go", "prompt_id": "p1"});
    assert!(
        sb.hook("claude-code", "UserPromptSubmit", p.to_string().as_bytes())
            .status
            .success()
    );
}

#[test]
fn discovery_naming_another_origin_is_refused_and_pauses_a_sink_that_has_one() {
    let elsewhere = Receiver::start(Options::new(TOKEN)).unwrap();
    let events_elsewhere = format!("{}/v1/events", elsewhere.url());
    let sb = Sandbox::new();
    let doc = pointing_to(events_elsewhere.clone());
    let out = add(&sb, &doc.base_url());
    assert!(!out.status.success());
    assert!(text(&out).contains("another origin"), "{}", text(&out));
    assert!(!sb.state.join("sinks.json").exists());

    // Sinks that have one: kept by hand (or an older version), or found at the
    // daily re-read.
    let sink = |id: &str, events: &str, read_at: i64| {
        json!({"id": id, "kind": "http", "url": doc.base_url(), "tier": 1, "pii": false,
            "discovery": {"events": events, "max_tier": 3, "max_events": 50, "max_bytes": 262144,
                "capabilities": [], "read_at": read_at},
            "added_at": 0, "has_token": false, "has_webhook_secret": false})
    };
    let now = protocol::time::now_ms();
    let same_origin = format!("{}/v1/events", doc.base_url());
    std::fs::create_dir_all(&sb.state).unwrap();
    std::fs::write(
        sb.state.join("sinks.json"),
        json!({"sinks": [sink("s_byhand", &events_elsewhere, now), sink("s_reread", &same_origin, 0)]})
            .to_string(),
    )
    .unwrap();
    let _daemon = sb.start_daemon();
    hook(&sb);
    let deadline = Instant::now() + Duration::from_secs(15);
    let paused = loop {
        let doc: Value =
            serde_json::from_slice(&sb.sessionpipe(&["status", "--json"]).stdout).unwrap();
        let paused: Vec<String> = doc["sinks"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|s| s["sink"]["paused"].as_str().map(str::to_string))
            .collect();
        if paused.len() == 2 || Instant::now() > deadline {
            break paused;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(paused.len(), 2, "{paused:?}");
    assert!(
        paused.iter().all(|p| p.contains("another origin")),
        "{paused:?}"
    );
    assert_eq!(
        elsewhere.stats().posts,
        0,
        "nothing went to the other origin"
    );
    assert!(
        doc.requests().iter().all(|r| r.method == "GET"),
        "nor any event to the first"
    );
}

#[cfg(unix)]
#[test]
fn a_file_sinks_new_file_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let file = sb.root().join("events.jsonl");
    let out = sb.sessionpipe(&[
        "sink",
        "add",
        &format!("file:{}", file.display()),
        "--tier",
        "1",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let _daemon = sb.start_daemon();
    hook(&sb);
    let deadline = Instant::now() + Duration::from_secs(15);
    while !file.exists() {
        assert!(Instant::now() < deadline, "no file");
        std::thread::sleep(Duration::from_millis(50));
    }
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}
