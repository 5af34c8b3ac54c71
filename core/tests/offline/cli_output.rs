//! A closed stdout is the end of a command's output (`sessionpipe doctor | head
//! -1`): every command exits with its own code and says nothing on stderr, and
//! the work it was asked to do is done. The reader end of the pipe is closed
//! before the command starts, so every write fails; no timing is involved.

use sessionpipe_testkit::Sandbox;
use sessionpipe_testkit::sandbox::bin;
use std::process::Stdio;

/// Runs `sessionpipe ARGS` with a stdout nobody reads.
fn into_closed_pipe(sb: &Sandbox, args: &[&str]) -> std::process::Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    sb.command(bin("sessionpipe"))
        .args(args)
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn a_closed_stdout_ends_the_output_not_the_command() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.home.join(".claude")).unwrap();
    for args in [
        &["--help"][..],
        &["doctor"],
        &["status"],
        &["status", "--json"],
        &["sink", "list"],
        &["backfill", "--json"],
        &["tail", "--no-follow"],
        &["install", "--dry-run"],
    ] {
        let out = into_closed_pipe(&sb, args);
        let code = out.status.code();
        assert!(
            code == Some(0) || code == Some(1),
            "{args:?}: {:?} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "{args:?}: {stderr}"
        );
    }
    // The same exit code as with a reader, and the work done: an install still
    // writes its hooks though nobody reads its report.
    let doctor = sb.sessionpipe(&["doctor"]).status.code();
    assert_eq!(into_closed_pipe(&sb, &["doctor"]).status.code(), doctor);
    let out = into_closed_pipe(&sb, &["install", "--harness", "claude-code"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let settings = std::fs::read_to_string(sb.home.join(".claude/settings.json")).unwrap();
    assert!(settings.contains("sessionpipe-hook"), "{settings}");
}

#[cfg(unix)]
#[test]
fn ui_open_hands_the_browser_a_private_file_not_the_token() {
    use sessionpipe_testkit::executable::write_executable;
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let _daemon = sb.start_daemon();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let page = loop {
        let out = sb.sessionpipe(&["ui"]);
        if out.status.success() {
            break String::from_utf8_lossy(&out.stdout).trim().to_string();
        }
        assert!(std::time::Instant::now() < deadline, "the daemon's UI");
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    // A stand-in for the person's browser: it notes what it was given.
    let given = sb.home.join("browser-was-given");
    let browser = sb.home.join("browser");
    write_executable(
        &browser,
        &format!("#!/bin/sh\nprintf '%s' \"$*\" > '{}'\n", given.display()),
    );
    let out = sb
        .command(bin("sessionpipe"))
        .args(["ui", "--open"])
        .env("BROWSER", &browser)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("token="));
    let arg = std::fs::read_to_string(&given).unwrap();
    let token = page.split("token=").nth(1).unwrap();
    assert!(
        !arg.contains(token),
        "the token is not on the browser's command line: {arg}"
    );
    let file = std::path::Path::new(&arg);
    assert!(file.starts_with(&sb.state), "{arg}");
    assert_eq!(
        std::fs::metadata(file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert!(
        std::fs::read_to_string(file)
            .unwrap()
            .contains(&page.replace('&', "&amp;"))
    );
    // No opener at all: said plainly, and how to go on.
    let out = sb
        .command(bin("sessionpipe"))
        .args(["ui", "--open"])
        .env("BROWSER", sb.home.join("no-such-browser"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("open the address `sessionpipe ui` prints"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The status of `GET {base}/api/overview` bearing `token`, over plain HTTP.
fn api_status(base: &str, token: &str) -> u16 {
    use std::io::{Read, Write};
    let host = base.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(host).unwrap();
    write!(
        s,
        "GET /api/overview HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut head = String::new();
    s.read_to_string(&mut head).unwrap();
    head.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn ui_page(sb: &Sandbox) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let out = sb.sessionpipe(&["ui"]);
        if out.status.success() {
            return String::from_utf8_lossy(&out.stdout).trim().to_string();
        }
        assert!(std::time::Instant::now() < deadline, "the daemon's UI");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn the_ui_keeps_its_address_across_restarts_until_a_new_token() {
    let sb = Sandbox::new();
    let daemon = sb.start_daemon();
    let first = ui_page(&sb);
    let (base, token) = first.split_once("/#token=").unwrap();
    assert_eq!(api_status(base, token), 200);
    // Without the UI's files it says so, and how to get them.
    let out = sb.sessionpipe(&["ui"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("serves the API only"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doctor = String::from_utf8_lossy(&sb.sessionpipe(&["doctor"]).stdout).into_owned();
    assert!(doctor.contains("npm run build"), "{doctor}");
    daemon.terminate();
    let daemon = sb.start_daemon();
    assert_eq!(ui_page(&sb), first, "a bookmarked link still opens the UI");
    assert_eq!(api_status(base, token), 200);

    let out = sb.sessionpipe(&["ui", "--new-token"]);
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{said}");
    let fresh = said.lines().last().unwrap().trim().to_string();
    let (fresh_base, fresh_token) = fresh.split_once("/#token=").unwrap();
    assert_eq!(fresh_base, base, "the same port");
    assert_ne!(fresh_token, token);
    assert_eq!(api_status(base, token), 401, "the old token opens nothing");
    assert_eq!(api_status(base, fresh_token), 200);
    assert_eq!(ui_page(&sb), fresh);
    drop(daemon);
}

#[test]
fn config_get_and_set_check_as_the_settings_page_does() {
    let sb = Sandbox::new();
    let text = |out: &std::process::Output| String::from_utf8_lossy(&out.stdout).into_owned();
    let err = |out: &std::process::Output| String::from_utf8_lossy(&out.stderr).into_owned();
    // The defaults in effect, every setting named.
    let all: serde_json::Value =
        serde_json::from_slice(&sb.sessionpipe(&["config", "get", "--json"]).stdout).unwrap();
    assert_eq!(all["retention_days"], 30);
    assert_eq!(all["transcripts"], false);
    let out = sb.sessionpipe(&["config", "set", "retention_days", "14"]);
    assert_eq!(text(&out), "retention_days = 14\n", "{}", err(&out));
    let out = sb.sessionpipe(&["config", "set", "machine", "studio mac"]);
    assert!(out.status.success(), "{}", err(&out));
    assert_eq!(
        text(&sb.sessionpipe(&["config", "get", "machine"])),
        "studio mac\n"
    );
    let stored: serde_json::Value =
        serde_json::from_slice(&std::fs::read(sb.state.join("config.json")).unwrap()).unwrap();
    assert_eq!(
        (&stored["retention_days"], &stored["machine"]),
        (&serde_json::json!(14), &serde_json::json!("studio mac"))
    );
    // What the page refuses, this refuses, saying why; nothing stored changes.
    for (args, why) in [
        (
            &["config", "set", "retention_days", "-3"][..],
            "retention_days",
        ),
        (
            &["config", "set", "notify_tier", "9"],
            "notify_tier is 0 to 3",
        ),
        (&["config", "set", "transcripts", "yes"], "transcripts"),
        (
            &["config", "set", "nonesuch", "1"],
            "no setting \"nonesuch\"",
        ),
        (&["config", "set", "remote_titles", "true"], "titles on|off"),
        (&["config", "get", "nonesuch"], "no setting"),
    ] {
        let out = sb.sessionpipe(args);
        assert!(!out.status.success(), "{args:?}");
        assert!(err(&out).contains(why), "{args:?}: {}", err(&out));
    }
    let after: serde_json::Value =
        serde_json::from_slice(&std::fs::read(sb.state.join("config.json")).unwrap()).unwrap();
    assert_eq!(after, stored);
    // null is the default again.
    sb.sessionpipe(&["config", "set", "retention_days", "null"]);
    assert_eq!(
        text(&sb.sessionpipe(&["config", "get", "retention_days"])),
        "30\n"
    );
}
