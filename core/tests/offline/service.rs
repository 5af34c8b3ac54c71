//! `sessionpipe service`: the systemd user unit it writes, checked by systemd's
//! own `systemd-analyze verify` (from a binary path with a blank, `%`, `$` and a
//! quote in it, so the quoting is systemd's to judge), its `ExecStart` run as
//! written, with its `Environment`, starting the daemon `status` then finds;
//! `install` where no user manager answers (what a container or a bare SSH
//! session has), and `connect`, which installs the service where no daemon and
//! no tray runs. Linux only: the launchd and Task Scheduler texts are unit
//! tests of `service::render`.
#![cfg(target_os = "linux")]

use serde_json::Value;
use sessionpipe_testkit::Sandbox;
use sessionpipe_testkit::control;
use sessionpipe_testkit::sandbox::bin;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A folder name systemd must be told carefully: a blank, a specifier and a
/// variable.
const ODD: &str = "odd dir 100% $HOME";

/// The `sessionpipe` binary linked (or copied) into `ODD`.
fn odd_binary(sb: &Sandbox) -> PathBuf {
    linked_binary(sb, ODD)
}

/// The `sessionpipe` binary linked (or copied) into the folder `name`.
fn linked_binary(sb: &Sandbox, name: &str) -> PathBuf {
    let dir = sb.root().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("sessionpipe");
    if std::fs::hard_link(bin("sessionpipe"), &exe).is_err() {
        std::fs::copy(bin("sessionpipe"), &exe).unwrap();
    }
    exe
}

/// A state dir with a blank and a `%` in its name.
fn odd_state(sb: &Sandbox) -> PathBuf {
    sb.root().join("state 100%")
}

/// An empty runtime dir (0700), so that no test reaches a real user manager.
fn runtime_dir(sb: &Sandbox) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = sb.root().join("runtime");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

fn run(mut c: Command) -> (i32, String, String) {
    let out = c.output().expect("it runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `sessionpipe service ARGS` from `exe`, with `state` as the state dir.
fn service(sb: &Sandbox, exe: &Path, state: &Path, args: &[&str]) -> (i32, String, String) {
    let mut c = sb.command(exe);
    c.arg("service")
        .args(args)
        .env("SESSIONPIPE_STATE_DIR", state)
        .env("XDG_RUNTIME_DIR", runtime_dir(sb));
    run(c)
}

/// A unit line's words as systemd reads them (what we write: bare words, or
/// double-quoted ones with `\\` and `\"`; `%%` always, and `$$` in
/// `ExecStart`'s arguments, not in its program).
fn words(value: &str, exec: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = value.chars().peekable();
    loop {
        while chars.peek() == Some(&' ') {
            chars.next();
        }
        let Some(&first) = chars.peek() else {
            return out;
        };
        let quoted = first == '"';
        if quoted {
            chars.next();
        }
        let mut word = String::new();
        while let Some(c) = chars.next() {
            match c {
                '"' if quoted => break,
                ' ' if !quoted => break,
                '\\' => word.push(chars.next().expect("an escaped character")),
                '%' => {
                    assert_eq!(chars.next(), Some('%'), "a lone % in {value}");
                    word.push('%');
                }
                '$' if exec && !out.is_empty() => {
                    assert_eq!(chars.next(), Some('$'), "a lone $ in {value}");
                    word.push('$');
                }
                c => word.push(c),
            }
        }
        out.push(word);
    }
}

/// The unit's `ExecStart` words and `Environment` pairs.
fn exec_and_env(unit: &str) -> (Vec<String>, Vec<(String, String)>) {
    let mut exec = Vec::new();
    let mut env = Vec::new();
    for line in unit.lines() {
        if let Some(v) = line.strip_prefix("ExecStart=") {
            exec = words(v, true);
        }
        if let Some(v) = line.strip_prefix("Environment=") {
            for w in words(v, false) {
                let (k, v) = w.split_once('=').expect("KEY=value");
                env.push((k.to_string(), v.to_string()));
            }
        }
    }
    (exec, env)
}

/// The unit `service install --dry-run` prints from `exe` for `state`.
fn dry_run_unit(sb: &Sandbox, exe: &Path, state: &Path) -> String {
    let (code, unit, err) = service(sb, exe, state, &["install", "--dry-run"]);
    assert_eq!(code, 0, "{err}");
    unit
}

#[test]
fn install_dry_run_prints_the_unit_and_where_it_would_go_and_writes_nothing() {
    let sb = Sandbox::new();
    let exe = std::fs::canonicalize(bin("sessionpipe")).unwrap();
    let (code, unit, err) = service(&sb, &exe, &sb.state, &["install", "--dry-run"]);
    assert_eq!(code, 0, "{err}");
    let path = sb.home.join(".config/systemd/user/sessionpipe.service");
    assert!(
        err.contains(&format!("would write {}", path.display()))
            && err.contains("systemctl --user enable --now sessionpipe.service"),
        "{err}"
    );
    assert!(
        unit.lines()
            .any(|l| l == format!("ExecStart={} daemon", exe.display())),
        "{unit}"
    );
    assert!(
        unit.lines().any(|l| l
            == format!(
                "Environment=\"SESSIONPIPE_STATE_DIR={}\"",
                sb.state.display()
            )),
        "{unit}"
    );
    for line in [
        "Restart=on-failure",
        "StandardOutput=journal",
        "WantedBy=default.target",
    ] {
        assert!(unit.lines().any(|l| l == line), "{line}: {unit}");
    }
    assert!(!path.exists(), "a dry run wrote {}", path.display());
    assert!(!sb.state.exists(), "a dry run made the state dir");

    // XDG_CONFIG_HOME, when set, is where the unit goes.
    let config = sb.root().join("config");
    let mut c = sb.command(bin("sessionpipe"));
    c.args(["service", "install", "--dry-run"])
        .env("XDG_CONFIG_HOME", &config);
    let (code, _, err) = run(c);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(&format!(
            "would write {}",
            config.join("systemd/user/sessionpipe.service").display()
        )),
        "{err}"
    );
}

#[test]
fn the_unit_passes_systemd_analyze_verify_from_an_oddly_named_folder() {
    if Command::new("systemd-analyze")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_err()
    {
        eprintln!(
            "skipped: no systemd-analyze (Debian's `systemd` package; scripts/test.sh installs it)"
        );
        return;
    }
    let sb = Sandbox::new();
    let exe = odd_binary(&sb);
    let unit = dry_run_unit(&sb, &exe, &odd_state(&sb));
    let units = sb.root().join("units");
    std::fs::create_dir_all(&units).unwrap();
    let file = units.join("sessionpipe.service");
    std::fs::write(&file, &unit).unwrap();
    let verify = |file: &Path| {
        let mut c = sb.command("systemd-analyze");
        c.args(["--user", "verify"])
            .arg(file)
            .env("XDG_RUNTIME_DIR", runtime_dir(&sb));
        run(c)
    };
    let passes = |file: &Path, unit: &str| {
        let (code, out, err) = verify(file);
        assert_eq!(code, 0, "verify failed: {out}{err}\n{unit}");
        let about_ours: Vec<&str> = err.lines().filter(|l| l.contains("sessionpipe")).collect();
        assert!(
            about_ours.is_empty(),
            "verify warns: {about_ours:?}\n{unit}"
        );
    };
    passes(&file, &unit);

    // A path with a quote or a backslash, which systemd takes as no program's
    // name, is run through env.
    let quoted = linked_binary(&sb, r"it's a \ folder");
    let unit_quoted = dry_run_unit(&sb, &quoted, &odd_state(&sb));
    assert!(
        unit_quoted.contains("ExecStart=/usr/bin/env \""),
        "{unit_quoted}"
    );
    let file_quoted = sb.root().join("quoted/sessionpipe.service");
    std::fs::create_dir_all(file_quoted.parent().unwrap()).unwrap();
    std::fs::write(&file_quoted, &unit_quoted).unwrap();
    passes(&file_quoted, &unit_quoted);

    // Verify looks for the program at the path it read: gone, it says so,
    // so the quoting above was read back as exactly that path.
    std::fs::remove_file(&exe).unwrap();
    let (code, _, err) = verify(&file);
    assert_ne!(code, 0, "verify passed without the program");
    assert!(err.contains(&exe.display().to_string()), "{err}");
}

#[test]
fn the_units_exec_start_runs_the_daemon_that_status_then_finds() {
    let sb = Sandbox::new();
    let exe = odd_binary(&sb);
    let state = odd_state(&sb);
    let unit = dry_run_unit(&sb, &exe, &state);
    let (exec, env) = exec_and_env(&unit);
    let canonical = std::fs::canonicalize(&exe).unwrap();
    assert_eq!(
        exec,
        [canonical.to_string_lossy().as_ref(), "daemon"],
        "{unit}"
    );
    assert!(
        env.contains(&(
            "SESSIONPIPE_STATE_DIR".into(),
            state.to_string_lossy().into_owned()
        )),
        "{env:?}"
    );
    // As a user manager runs it: HOME and the unit's environment, no other.
    let mut c = Command::new(&exec[0]);
    c.args(&exec[1..])
        .env_clear()
        .env("HOME", &sb.home)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut daemon = c.spawn().expect("ExecStart runs");
    let deadline = Instant::now() + Duration::from_secs(15);
    let found = loop {
        let mut s = sb.command(bin("sessionpipe"));
        s.args(["status", "--json"])
            .env("SESSIONPIPE_STATE_DIR", &state);
        let (_, out, _) = run(s);
        let doc: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
        if !doc["daemon"].is_null() || Instant::now() > deadline {
            break doc;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let (_, service_status, _) = service(&sb, &exe, &state, &["status", "--json"]);
    let _ = daemon.kill();
    let _ = daemon.wait();
    assert_eq!(found["daemon"]["mode"], "daemon", "{found}");
    assert_eq!(found["daemon"]["pid"], daemon.id(), "{found}");
    let s: Value = serde_json::from_str(&service_status).unwrap();
    assert_eq!(s["daemon"]["pid"], daemon.id(), "{s}");
    assert_eq!(s["daemon"]["service"], false, "{s}");
}

#[test]
fn install_without_a_user_manager_says_so_leaves_the_unit_and_uninstall_takes_it_away() {
    let sb = Sandbox::new();
    let exe = bin("sessionpipe");
    let unit = sb.home.join(".config/systemd/user/sessionpipe.service");
    let (code, out, err) = service(&sb, &exe, &sb.state, &["install"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains(&format!("wrote {}", unit.display())), "{out}");
    assert!(
        err.contains("systemd --user is not reachable here")
            && err.contains("nothing was started")
            && err.contains("loginctl enable-linger $USER"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&unit).unwrap(),
        dry_run_unit(&sb, &exe, &sb.state),
        "the unit written is the one a dry run prints"
    );

    let (code, out, err) = service(&sb, &exe, &sb.state, &["status", "--json"]);
    assert_eq!(code, 0, "{err}");
    let s: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(s["installed"], true, "{s}");
    assert_eq!(s["reachable"], false, "{s}");
    assert_eq!(s["unit"], unit.to_string_lossy().as_ref(), "{s}");
    assert!(s["daemon"].is_null(), "{s}");
    let (_, human, _) = service(&sb, &exe, &sb.state, &["status"]);
    assert!(
        human.contains("service: installed")
            && human.contains("systemd --user: not reachable")
            && human.contains("daemon: not running"),
        "{human}"
    );

    let (code, out, err) = service(&sb, &exe, &sb.state, &["uninstall"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&format!("removed {}", unit.display())),
        "{out}"
    );
    assert!(!unit.exists());
    let (code, out, err) = service(&sb, &exe, &sb.state, &["uninstall"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("not installed") && out.contains("nothing to remove"),
        "{out}"
    );
    assert!(err.is_empty(), "nothing to say about a manager: {err}");
}

/// A receiver with control on, for `connect`.
fn receiver() -> sessionpipe_receiver::Handle {
    let mut o = sessionpipe_receiver::Options::new(control::TOKEN);
    o.control = Some(sessionpipe_receiver::ControlOptions::new("localhost"));
    sessionpipe_receiver::Receiver::start(o).unwrap()
}

fn connect(sb: &Sandbox, rx: &sessionpipe_receiver::Handle) {
    let folder = sb.home.to_string_lossy().into_owned();
    control::pair_by(
        sb,
        &["connect", &rx.url(), "--token-stdin", "--folder", &folder],
        Some(&format!("{}\n", control::TOKEN)),
        &rx.url(),
        control::TOKEN,
    );
}

#[test]
fn connect_installs_the_service_where_no_daemon_and_no_tray_runs_and_not_beside_a_daemon() {
    let rx = receiver();
    let unit = |sb: &Sandbox| sb.home.join(".config/systemd/user/sessionpipe.service");

    // No daemon, no desktop (the sandbox has no DISPLAY): the service, which
    // here has no user manager to start it (connect still succeeds).
    let bare = Sandbox::new();
    connect(&bare, &rx);
    let written = std::fs::read_to_string(unit(&bare)).expect("connect wrote the unit");
    assert!(written.contains("ExecStart="), "{written}");

    // A daemon runs: it is the one, and no unit is written.
    let busy = Sandbox::new();
    let _daemon = busy.start_daemon();
    connect(&busy, &rx);
    assert!(!unit(&busy).exists(), "a unit beside a running daemon");
}
