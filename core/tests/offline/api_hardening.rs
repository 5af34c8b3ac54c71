//! The local API tried as an attacker would, over real sockets: clients that
//! trickle bytes or say nothing are cut off at the deadlines, a crowd of them
//! cannot keep the person's UI out for longer than that, a request with two
//! `Host` headers is refused, and settings are checked against what they are.

use serde_json::{Value, json};
use sessionpipe_testkit::Sandbox;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// The API's limits (sessionpipe-listener's `LOCAL_API`), with slack.
const HEADER_DEADLINE: Duration = Duration::from_secs(5);
const SLACK: Duration = Duration::from_secs(3);
const CAP: usize = 64;

fn ui_of(sb: &Sandbox) -> (String, String) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(b) = std::fs::read(sb.state.join("ui.json")) {
            let doc: Value = serde_json::from_slice(&b).unwrap();
            let url = doc["url"].as_str().unwrap().to_string();
            return (url, doc["token"].as_str().unwrap().to_string());
        }
        assert!(Instant::now() < deadline, "no ui.json");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn addr(url: &str) -> String {
    url.trim_start_matches("http://").to_string()
}

/// Sends raw bytes and reads the whole answer (the server closes).
fn raw(url: &str, request: &str) -> String {
    let mut s = TcpStream::connect(addr(url)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// Reads until the server closes; how long it took.
fn closed_after(mut s: TcpStream) -> Duration {
    let t = Instant::now();
    let mut buf = [0u8; 512];
    while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
    t.elapsed()
}

#[test]
fn slow_clients_are_cut_off_and_cannot_keep_the_ui_out() {
    let sb = Sandbox::new();
    let _d = sb.start_daemon();
    let (url, token) = ui_of(&sb);
    let overview = format!(
        "GET /api/overview HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n",
        addr(&url)
    );
    // Twelve that say nothing, twelve that trickle a header forever.
    let started = Instant::now();
    let silent: Vec<TcpStream> = (0..12)
        .map(|_| TcpStream::connect(addr(&url)).unwrap())
        .collect();
    let tricklers: Vec<_> = (0..12)
        .map(|_| {
            let mut s = TcpStream::connect(addr(&url)).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
            std::thread::spawn(move || {
                let _ = s.write_all(b"GET /api/overview HTTP/1.1\r\nX-Slow: ");
                let t = Instant::now();
                while t.elapsed() < Duration::from_secs(30) {
                    if s.write_all(b"a").is_err() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
                t.elapsed()
            })
        })
        .collect();
    // The person's UI is answered meanwhile.
    assert!(raw(&url, &overview).starts_with("HTTP/1.1 200"));
    for s in silent {
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        closed_after(s);
    }
    for t in tricklers {
        let lasted = t.join().unwrap();
        assert!(
            lasted < HEADER_DEADLINE + SLACK,
            "a trickler lasted {lasted:?}"
        );
    }
    assert!(
        started.elapsed() < HEADER_DEADLINE + SLACK,
        "all cut off by {:?}",
        started.elapsed()
    );

    // A crowd at the cap: one more is closed at once, and once the crowd is
    // cut off the UI is answered again.
    let crowd: Vec<TcpStream> = (0..CAP)
        .map(|_| TcpStream::connect(addr(&url)).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let over = TcpStream::connect(addr(&url)).unwrap();
    over.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    assert!(
        closed_after(over) < Duration::from_secs(2),
        "over the cap: closed at once"
    );
    for s in crowd {
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        closed_after(s);
    }
    assert!(raw(&url, &overview).starts_with("HTTP/1.1 200"));
}

#[test]
fn a_request_with_two_host_headers_is_refused() {
    let sb = Sandbox::new();
    let _d = sb.start_daemon();
    let (url, token) = ui_of(&sb);
    let host = addr(&url);
    let one = raw(
        &url,
        &format!(
            "GET /api/overview HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
        ),
    );
    assert!(one.starts_with("HTTP/1.1 200"), "{one}");
    for (first, second) in [
        (host.as_str(), "evil.example"),
        ("evil.example", host.as_str()),
        (host.as_str(), host.as_str()),
    ] {
        let two = raw(
            &url,
            &format!(
                "GET /api/overview HTTP/1.1\r\nHost: {first}\r\nHost: {second}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
            ),
        );
        assert!(
            !two.starts_with("HTTP/1.1 200"),
            "{first} then {second}: {two}"
        );
        assert!(!two.contains("\"sessions\""), "{two}");
    }
}

#[test]
fn settings_are_checked_against_what_they_are() {
    let sb = Sandbox::new();
    let _d = sb.start_daemon();
    let (url, token) = ui_of(&sb);
    let client = reqwest::blocking::Client::new();
    let put = |body: Value| {
        let r = client
            .put(format!("{url}/api/settings"))
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .unwrap();
        let status = r.status().as_u16();
        let text = r.text().unwrap_or_default();
        (
            status,
            serde_json::from_str::<Value>(&text).unwrap_or(Value::Null),
        )
    };
    let (status, _) = put(json!({"machine": "ann-laptop", "muted": ["codex"]}));
    assert_eq!(status, 200);
    let config = std::fs::read(sb.state.join("config.json")).unwrap();
    for bad in [
        json!({"machine": "../../etc"}),
        json!({"machine": "a/b"}),
        json!({"machine": ""}),
        json!({"machine": " padded"}),
        json!({"machine": "nul\u{0}name"}),
        json!({"machine": "x".repeat(81)}),
        json!({"muted": ["claude-code\u{0}"]}),
        json!({"muted": ["no-such-harness"]}),
        json!({"muted": "codex"}),
        json!({"notify_tier": 4}),
        json!({"transcripts": "yes"}),
    ] {
        let (status, why) = put(bad.clone());
        assert_eq!(status, 400, "{bad}: {why}");
        assert!(why["error"].is_string(), "{bad}: {why}");
    }
    assert_eq!(
        std::fs::read(sb.state.join("config.json")).unwrap(),
        config,
        "a refused change leaves the file as it was"
    );
}
