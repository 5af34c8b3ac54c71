//! The daemon's start and exit, tried as an unlucky user would: SIGTERM in the
//! middle of a backlog (out within half a second, nothing lost or doubled), a
//! `ui.json` left by a daemon that was killed (never believed), a state dir an
//! older version or a person left 0755 (made private at start), every file a
//! full run leaves in the state dir private under a umask that would let others
//! read it, and a full disk that refuses the hook's job (the loss is told, with
//! when).

use serde_json::{Value, json};
use sessionpipe_testkit::Sandbox;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

const SESSION: &str = "6a1c2d3e-0000-4000-8000-00000000c0de";

/// A Claude Code tool call, as its hook gives it.
fn tool_call(sb: &Sandbox, n: usize, no_worker: bool) {
    let payload = json!({
        "session_id": SESSION,
        "transcript_path": sb.home.join("t.jsonl"),
        "cwd": sb.home,
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_use_id": format!("toolu_{n:05}"),
        "tool_input": {"command": format!("echo {n}")},
    });
    let env: &[(&str, &str)] = if no_worker {
        &[("SESSIONPIPE_BIN", "/nonexistent")]
    } else {
        &[]
    };
    let out = sb.hook_with(
        "claude-code",
        "PreToolUse",
        payload.to_string().as_bytes(),
        env,
    );
    assert!(out.status.success() && out.stdout.is_empty());
}

fn tool_ids(evs: &[Value]) -> Vec<String> {
    evs.iter()
        .filter(|e| e["type"] == "tool.started")
        .map(|e| e["data"]["call_id"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn sigterm_in_a_backlog_exits_within_half_a_second_and_keeps_every_job() {
    const JOBS: usize = 2500;
    let sb = std::sync::Arc::new(Sandbox::new());
    // A backlog: hooks that found no daemon and could start no worker.
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let sb = sb.clone();
            std::thread::spawn(move || {
                for n in (w..JOBS).step_by(4) {
                    tool_call(&sb, n, true);
                }
            })
        })
        .collect();
    writers.into_iter().for_each(|w| w.join().unwrap());
    assert_eq!(sb.spooled(), JOBS);

    let daemon = sb.start_daemon();
    assert!(sb.state.join("ui.json").exists());
    let (status, took) = daemon.terminate();
    println!(
        "SIGTERM to exit: {took:?}, {} jobs left in the spool",
        sb.spooled()
    );
    assert!(status.success(), "{status:?}");
    // Half a second, with slack for a loaded 2-core machine.
    assert!(took < Duration::from_millis(1000), "{took:?}");
    assert!(
        !sb.state.join("ui.json").exists(),
        "ui.json goes with its daemon"
    );
    assert!(!sb.sessionpipe(&["ui"]).status.success());

    // Whatever the first took is committed once; the rest comes now.
    let daemon = sb.start_daemon();
    let evs = sb.wait_until(Duration::from_secs(30), |evs| tool_ids(evs).len() >= JOBS);
    let ids = tool_ids(&evs);
    assert_eq!(ids.len(), JOBS, "none lost, none doubled");
    assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), JOBS);
    assert_eq!(sb.spooled(), 0);

    // A daemon killed outright leaves its ui.json: never believed.
    daemon.kill();
    assert!(sb.state.join("ui.json").exists());
    let ui = sb.sessionpipe(&["ui"]);
    assert!(
        !ui.status.success(),
        "{}",
        String::from_utf8_lossy(&ui.stdout)
    );
    // (Its wake.sock is left too, so the new daemon is waited for by its link.)
    let _daemon = sb.start_daemon();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !sb.sessionpipe(&["ui"]).status.success() {
        assert!(
            std::time::Instant::now() < deadline,
            "the new daemon's link"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(unix)]
#[test]
fn a_state_dir_others_could_read_is_made_private_at_start() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.state.join("spool")).unwrap();
    std::fs::write(sb.state.join("config.json"), "{}").unwrap();
    std::fs::write(sb.state.join("sinks.json"), r#"{"sinks": []}"#).unwrap();
    for (p, m) in [
        ("", 0o755),
        ("spool", 0o755),
        ("config.json", 0o644),
        ("sinks.json", 0o644),
    ] {
        std::fs::set_permissions(sb.state.join(p), std::fs::Permissions::from_mode(m)).unwrap();
    }
    let doctor = sb.sessionpipe(&["doctor"]);
    let said = String::from_utf8_lossy(&doctor.stdout);
    assert!(said.contains("mode 755"), "doctor tells before: {said}");
    let _daemon = sb.start_daemon();
    for p in ["", "spool", "spool/quarantine"] {
        assert_eq!(mode(&sb.state.join(p)), 0o700, "{p}");
    }
    for p in [
        "config.json",
        "sinks.json",
        "outbox.db",
        "wake.sock",
        "daemon.lock",
        "ui.json",
    ] {
        assert_eq!(mode(&sb.state.join(p)), 0o600, "{p}");
    }
}

/// Mounts a tmpfs of `kib` KiB at `dir`; false where this user may not mount.
fn tiny_disk(dir: &Path, kib: u32) -> bool {
    std::fs::create_dir_all(dir).unwrap();
    std::process::Command::new("mount")
        .args([
            "-t",
            "tmpfs",
            "-o",
            &format!("size={kib}k,mode=0700"),
            "tmpfs",
        ])
        .arg(dir)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

struct Unmount<'a>(&'a Path);

impl Drop for Unmount<'_> {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(self.0).status();
    }
}

#[test]
fn a_full_disk_loses_a_payload_visibly_and_says_since_when() {
    let sb = Sandbox::new();
    let disk = sb.state.clone();
    if !tiny_disk(&disk, 2048) {
        println!("skipped: a full disk needs a tmpfs, and this user may not mount one");
        return;
    }
    let _unmount = Unmount(&disk);
    // A daemon ran once (it makes the markers while there is space).
    sb.start_daemon().terminate();
    assert!(sb.sessionpipe(&["status", "--json"]).status.success());
    let status = |sb: &Sandbox| -> Value {
        serde_json::from_slice(&sb.sessionpipe(&["status", "--json"]).stdout).unwrap()
    };
    assert!(status(&sb)["spool"]["lost"].is_null());

    // Fill it: a job no longer fits.
    let filler = disk.join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    let block = vec![0u8; 64 * 1024];
    while std::io::Write::write_all(&mut f, &block).is_ok() {}
    drop(f);
    let before = std::time::SystemTime::now();
    tool_call(&sb, 1, true);
    tool_call(&sb, 2, true);
    assert_eq!(sb.spooled(), 0, "the disk refused the jobs");

    let doc = status(&sb);
    let lost = &doc["spool"]["lost"];
    assert!(
        lost["first"].is_string() && lost["last"].is_string(),
        "{doc:#}"
    );
    let first = protocol::time::parse_rfc3339_ms(lost["first"].as_str().unwrap()).unwrap();
    let at = before
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert!(first >= at - 2000, "{lost}");
    let human = String::from_utf8_lossy(&sb.sessionpipe(&["status"]).stdout).into_owned();
    assert!(human.contains("hook calls were lost from"), "{human}");
    let doctor = sb.sessionpipe(&["doctor"]);
    let said = String::from_utf8_lossy(&doctor.stdout);
    assert!(said.contains("problem") && said.contains("lost"), "{said}");
    assert_eq!(doctor.status.code(), Some(1));

    // Space again: the next call is spooled, and the loss is still told.
    std::fs::remove_file(&filler).unwrap();
    tool_call(&sb, 3, true);
    assert_eq!(sb.spooled(), 1);
    assert_eq!(status(&sb)["spool"]["lost"]["first"], lost["first"]);
}

/// Every path under `root` (itself included) that is not this user's alone,
/// as `path mode`: a folder must be 0700 and anything else (a file, a
/// socket) 0600. Links are not followed. Also every path seen, relative.
#[cfg(unix)]
fn modes_under(root: &Path) -> (Vec<String>, BTreeSet<String>) {
    use std::os::unix::fs::PermissionsExt;
    let mut loose = Vec::new();
    let mut seen = BTreeSet::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(path) = stack.pop() {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.file_type().is_symlink() {
            continue;
        }
        let mode = meta.permissions().mode() & 0o777;
        let want = if meta.is_dir() { 0o700 } else { 0o600 };
        let name = path.strip_prefix(root).unwrap().display().to_string();
        if mode != want {
            loose.push(format!("{name:?} is {mode:o}, not {want:o}"));
        }
        seen.insert(name);
        if meta.is_dir() {
            stack.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        }
    }
    (loose, seen)
}

/// Runs `sessionpipe ARGS`, which must succeed.
#[cfg(unix)]
fn ok(sb: &Sandbox, args: &[&str]) {
    let out = sb.sessionpipe(args);
    assert!(
        out.status.success(),
        "{args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A full run under a umask that leaves a file others may read unless the
/// code makes it private: pairing (a sink, the machine's token), then with
/// the daemon running (it makes the dir private only at its start) install
/// and its backfill, a backfill, the pool, control's settings, the UI's
/// token and page, hook calls into the outbox, and the daemon's exit. Every
/// file and folder the state dir holds after each part is 0600 or 0700,
/// whatever it is called, so a new state file is held to it too.
#[cfg(unix)]
#[test]
fn every_file_a_full_run_leaves_in_the_state_dir_is_private() {
    use sessionpipe_testkit::control;
    let sb = Sandbox::new().with_umask(0o022);
    let private = |when: &str| {
        let (loose, seen) = modes_under(&sb.state);
        assert!(loose.is_empty(), "{when}:\n{}", loose.join("\n"));
        seen
    };
    let project = sb.home.join("work/project");
    std::fs::create_dir_all(&project).unwrap();
    // Claude Code here: settings the installer keeps a backup of, and a
    // sign-in the pool imports.
    let claude = sb.home.join(".claude");
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::write(claude.join("settings.json"), "{\"model\": \"opus\"}\n").unwrap();
    let expires = protocol::time::now_ms() + 86_400_000;
    let creds = json!({"claudeAiOauth": {"accessToken": "sk-ant-oat01-modesFAKE0123456789",
        "refreshToken": "rt-fake", "expiresAt": expires}});
    std::fs::write(claude.join(".credentials.json"), creds.to_string()).unwrap();
    let account =
        json!({"oauthAccount": {"accountUuid": "acct-1", "emailAddress": "one@example.com"}});
    std::fs::write(sb.home.join(".claude.json"), account.to_string()).unwrap();

    // A sink and control: `sink add` and `control pair` with a receiver (no
    // keychain here: the tokens go to secrets.json).
    let _paired = control::paired_machine(&sb, &project);
    private("after sink add and control pair");

    // The pool's API is a closed port: nothing leaves the machine.
    let daemon = sb.start_daemon_with(&[(
        "SESSIONPIPE_ANTHROPIC_API",
        std::ffi::OsStr::new("http://127.0.0.1:9"),
    )]);
    ok(&sb, &["install", "--harness", "claude-code"]);
    ok(&sb, &["backfill", "--days", "1"]);
    ok(&sb, &["pool", "add", "--import"]);
    ok(
        &sb,
        &["control", "folders", "add", project.to_str().unwrap()],
    );
    ok(&sb, &["control", "approvals", "on"]);
    ok(&sb, &["config", "set", "machine", "modes-box"]);
    ok(&sb, &["ui", "--new-token"]);
    let open = sb
        .command(sessionpipe_testkit::sandbox::bin("sessionpipe"))
        .args(["ui", "--open"])
        .env("BROWSER", "/bin/true")
        .output()
        .unwrap();
    assert!(
        open.status.success(),
        "{}",
        String::from_utf8_lossy(&open.stderr)
    );
    let before = sb.events().len();
    tool_call(&sb, 1, false);
    sb.wait_event_after(before, "tool.started", Duration::from_secs(20));
    sb.wait_idle(Duration::from_secs(10));
    let seen = private("with the daemon running");
    for name in [
        "install.json",
        "backfilled",
        "backups",
        "config.json",
        "sinks.json",
        "secrets.json",
        "pool.json",
        "outbox.db",
        "daemon.lock",
        "wake.sock",
        "control.on",
        "ui.json",
        "ui-open.html",
        "ui-saved.json",
        "pool-status.json",
        "control.sock",
    ] {
        assert!(seen.contains(name), "no {name} in the state dir: {seen:?}");
    }
    assert!(
        seen.iter().any(|p| p.starts_with("backups/")),
        "the settings' backup: {seen:?}"
    );

    let (status, _) = daemon.terminate();
    assert!(status.success(), "{status:?}");
    private("after the daemon's exit");
}
