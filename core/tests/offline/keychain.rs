//! A sink's token goes to the real OS keychain (the Secret Service, here
//! gnome-keyring on a private D-Bus session), never to the 0600 file, and comes
//! back from it in a later session to authenticate against a real receiver.
//!
//! Needs `dbus-run-session` and `gnome-keyring-daemon`; without them it says so
//! and passes, unless `SESSIONPIPE_REQUIRE_HARNESSES=1` (set by the test script),
//! where it fails.

use serde_json::{Value, json};
use sessionpipe_receiver::{Options, Receiver};
use sessionpipe_testkit::Sandbox;
use sessionpipe_testkit::sandbox::bin;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

const TOKEN: &str = "keychain-token-for-tests";
const S: &str = "7f1c2d3e-0000-4000-8000-0000000000cc";

fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
        .unwrap_or(false)
}

/// Runs `script` in a fresh D-Bus session with the sandbox's keyring unlocked.
fn in_unlocked_session(sb: &Sandbox, script: &str, envs: &[(&str, &str)]) -> Output {
    let mut c = sb.command("dbus-run-session");
    c.args(["--", "sh", "-ec"])
        .arg(format!(
            "printf pw | gnome-keyring-daemon --unlock --components=secrets >/dev/null\n{script}"
        ))
        .env("XDG_DATA_HOME", sb.root().join("xdg-data"))
        .env("SP", bin("sessionpipe"))
        .envs(envs.iter().copied());
    c.output().expect("dbus-run-session runs")
}

fn said(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn sink_token_lives_in_the_keychain_and_authenticates_later() {
    if !on_path("dbus-run-session") || !on_path("gnome-keyring-daemon") {
        assert!(
            std::env::var("SESSIONPIPE_REQUIRE_HARNESSES").as_deref() != Ok("1"),
            "dbus-run-session and gnome-keyring-daemon are required here"
        );
        eprintln!("skipped: no dbus-run-session or gnome-keyring-daemon on PATH");
        return;
    }
    let receiver = Receiver::start(Options::new(TOKEN)).unwrap();
    let url = receiver.url();
    let sb = Sandbox::new();

    let add = in_unlocked_session(
        &sb,
        r#"printf '%s\n' "$TOKEN" | "$SP" sink add "$URL" --tier 1 --token-stdin"#,
        &[("TOKEN", TOKEN), ("URL", &url)],
    );
    let out = said(&add);
    assert!(add.status.success(), "{out}");
    assert!(out.contains("secret kept in the OS keychain"), "{out}");
    assert!(
        !sb.state.join("secrets.json").exists(),
        "the token must not fall back to the file when a keychain is unlocked"
    );
    let id = out.split_whitespace().nth(1).unwrap().to_string();
    // Nothing on disk outside the keyring holds the token in clear.
    for entry in walk(&sb.state) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(TOKEN),
            "{} holds the token",
            entry.display()
        );
    }

    // A new login session: the keyring unlocks again and gives the token back.
    let test = in_unlocked_session(&sb, r#""$SP" sink test "$ID""#, &[("ID", &id)]);
    assert!(test.status.success(), "{}", said(&test));

    // Without a keychain (locked, or not yet unlocked after login) the token
    // cannot be read: `sink test` says so and fails ...
    let no_keychain = sb.sessionpipe(&["sink", "test", &id]);
    let out = said(&no_keychain);
    assert!(!no_keychain.status.success(), "{out}");
    assert!(out.contains("token cannot be read"), "{out}");

    // ... and a daemon holds the events rather than sending them without the
    // token (which would get the sink paused by a 401).
    let daemon = sb.start_daemon();
    let payload = json!({"session_id": S, "transcript_path": "/nowhere.jsonl", "cwd": "/w",
        "hook_event_name": "UserPromptSubmit", "prompt": "go", "prompt_id": "p1"});
    assert!(
        sb.hook(
            "claude-code",
            "UserPromptSubmit",
            payload.to_string().as_bytes()
        )
        .status
        .success()
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let waiting = loop {
        let list: Vec<Value> =
            serde_json::from_slice(&sb.sessionpipe(&["sink", "list", "--json"]).stdout).unwrap();
        if list[0]["last_error"].as_str().is_some() || Instant::now() > deadline {
            break list[0].clone();
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        waiting["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("locked keychain")),
        "{waiting}"
    );
    assert!(waiting["paused"].is_null(), "{waiting}");
    assert!(stored(&receiver).is_empty());
    daemon.kill();

    // Once the keychain is unlocked, the same daemon's events go, with the token.
    let done = sb.root().join("delivered");
    let done_s = done.to_string_lossy().into_owned();
    let mut session = sb.command("dbus-run-session");
    session
        .args(["--", "sh", "-ec"])
        .arg(
            "printf pw | gnome-keyring-daemon --unlock --components=secrets >/dev/null\n\
             \"$SP\" daemon --no-api & d=$!\n\
             while [ ! -e \"$DONE\" ]; do sleep 0.1; done\n\
             kill $d; wait $d || true",
        )
        .env("XDG_DATA_HOME", sb.root().join("xdg-data"))
        .env("SP", bin("sessionpipe"))
        .env("DONE", &done_s)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut session = session.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while stored(&receiver).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::fs::write(&done, b"").unwrap();
    let _ = session.wait();
    let events = stored(&receiver);
    assert!(
        !events.is_empty(),
        "nothing delivered once the keychain unlocked"
    );
    assert_eq!(events[0]["type"], "session.started", "{events:?}");
}

fn stored(r: &sessionpipe_receiver::Handle) -> Vec<Value> {
    r.events("claude-code", S).unwrap().unwrap_or_default()
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
