//! A command a person types says what it did in its own words, and logs only
//! at `warn` and above: every command of the command line's definition
//! (walked, so a command added later is held to it too), run harmlessly in a
//! sandbox with a daemon running, in an order where each has something to
//! act on, writes no line in
//! the log's form (`2026-…Z  INFO pool: …`) to stderr, whether it succeeds or
//! says why not. `SESSIONPIPE_LOG` still asks for more. `daemon` is the one
//! command that logs (at `info`); it is not run here.

use sessionpipe_testkit::Sandbox;
use sessionpipe_testkit::sandbox::bin;
use std::collections::BTreeSet;
use std::io::Write;
use std::process::{Output, Stdio};
use std::time::Duration;

const UUID: &str = "8c132906-8c3f-4814-870a-afc3d05e1d2e";
/// Another session, the one a handoff is from.
const ASKER: &str = "3bd5639e-04f7-44e6-a4c2-2f9bb68adad6";
const TOKEN: &str = "receiver-token-for-cli-logs";

/// What runs for each command, in this order, as `(command, args)`;
/// `{…}` are filled in below (`{receiver}`: a receiver without control).
/// A command may run more than once.
const RUNS: &[(&str, &[&str])] = &[
    ("install", &["install", "--harness", "claude-code"]),
    ("status", &["status"]),
    ("status", &["status", "--json"]),
    ("tail", &["tail", "--no-follow"]),
    ("usage", &["usage", "--since", "7d"]),
    ("usage", &["usage", "--by", "session", "--json"]),
    ("doctor", &["doctor"]),
    ("config get", &["config", "get"]),
    ("config set", &["config", "set", "machine", "logs-box"]),
    ("sink add", &["sink", "add", "file:{root}/events.jsonl"]),
    ("sink add", &["sink", "add", "{receiver}", "--token-stdin"]),
    ("sink list", &["sink", "list"]),
    (
        "sink token",
        &["sink", "token", "{http_sink}", "--token-stdin"],
    ),
    ("sink test", &["sink", "test", "{file_sink}"]),
    ("sink remove", &["sink", "remove", "{http_sink}"]),
    ("replay", &["replay", "--from-start"]),
    ("backfill", &["backfill", "--days", "1"]),
    ("forget", &["forget", "claude-code:{uuid}"]),
    ("ui", &["ui"]),
    ("service install", &["service", "install", "--dry-run"]),
    ("service status", &["service", "status"]),
    ("service uninstall", &["service", "uninstall"]),
    ("completions", &["completions", "bash"]),
    ("man", &["man", "--dir", "{root}/man"]),
    ("control pair", &["control", "pair", "{receiver}"]),
    ("control status", &["control", "status"]),
    ("control keys", &["control", "keys"]),
    (
        "control keys remove",
        &["control", "keys", "remove", "AAAAAAAAAAAAAAAAAAAAAA"],
    ),
    (
        "control folders add",
        &["control", "folders", "add", "{root}"],
    ),
    ("control folders list", &["control", "folders", "list"]),
    (
        "control folders remove",
        &["control", "folders", "remove", "{root}"],
    ),
    ("control mode", &["control", "mode", "safe"]),
    ("control approvals", &["control", "approvals", "on"]),
    ("control approvals", &["control", "approvals", "off"]),
    ("control worktrees", &["control", "worktrees", "on"]),
    ("worktrees list", &["worktrees", "list"]),
    ("worktrees prune", &["worktrees", "prune", "--dry-run"]),
    ("control worktrees", &["control", "worktrees", "off"]),
    ("control off", &["control", "off"]),
    ("wait", &["wait", "--session", "claude-code:{uuid}"]),
    ("channel", &["channel", "--session", "claude-code:{uuid}"]),
    ("ask", &["ask", "claude-code:{uuid}", "say", "hi"]),
    (
        "handoff",
        &[
            "handoff",
            "claude-code:{uuid}",
            "say",
            "hi",
            "--from",
            "claude-code:{asker}",
        ],
    ),
    ("connect", &["connect", "{receiver}"]),
    ("pool add", &["pool", "add", "--import"]),
    ("pool add", &["pool", "add", "--login"]),
    ("pool status", &["pool", "status"]),
    ("pool disable", &["pool", "disable", "acct-1"]),
    ("pool enable", &["pool", "enable", "acct-1"]),
    ("pool on", &["pool", "on"]),
    ("pool off", &["pool", "off"]),
    ("pool remove", &["pool", "remove", "acct-1"]),
    ("titles on", &["titles", "on"]),
    ("titles refresh", &["titles", "refresh"]),
    ("titles off", &["titles", "off"]),
    (
        "conformance",
        &[
            "conformance",
            "{repo}/conformance/harness/claude-code/stop.json",
        ],
    ),
    ("uninstall", &["uninstall", "--harness", "claude-code"]),
];

/// Commands not run, and why.
const NOT_RUN: &[(&str, &str)] = &[("daemon", "the daemon is what logs")];

/// Every command a person can run, as its words after `sessionpipe`: each
/// one without subcommands, and each whose subcommand is optional.
fn runnable(cmd: &clap::Command, path: &str, out: &mut BTreeSet<String>) {
    let subs: Vec<&clap::Command> = cmd
        .get_subcommands()
        .filter(|s| s.get_name() != "help")
        .collect();
    if !path.is_empty() && (subs.is_empty() || !cmd.is_subcommand_required_set()) {
        out.insert(path.to_string());
    }
    for sub in subs {
        let name = if path.is_empty() {
            sub.get_name().to_string()
        } else {
            format!("{path} {}", sub.get_name())
        };
        runnable(sub, &name, out);
    }
}

/// A line in the log's form: a timestamp (`2026-12-06T03:06:46.125374Z`),
/// then a level.
fn is_log_line(line: &str) -> bool {
    let mut words = line.split_whitespace();
    let (Some(time), Some(level)) = (words.next(), words.next()) else {
        return false;
    };
    let t = time.as_bytes();
    let stamp = t.len() >= 20 && t[..4].iter().all(u8::is_ascii_digit) && t[4] == b'-';
    stamp && time.contains('T') && matches!(level, "TRACE" | "DEBUG" | "INFO" | "WARN" | "ERROR")
}

/// A sandbox where Claude Code is installed and signed in (for `install`,
/// `backfill` and `pool add --import`), and no user service manager answers.
fn claude_home() -> Sandbox {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let claude = sb.home.join(".claude");
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::write(claude.join("settings.json"), "{}\n").unwrap();
    let creds = serde_json::json!({"claudeAiOauth": {"accessToken": "sk-ant-oat01-logsFAKE0123456789",
        "refreshToken": "rt-fake", "expiresAt": protocol::time::now_ms() + 86_400_000}});
    std::fs::write(claude.join(".credentials.json"), creds.to_string()).unwrap();
    let account = serde_json::json!({"oauthAccount": {"accountUuid": "acct-1", "emailAddress": "one@example.com"}});
    std::fs::write(sb.home.join(".claude.json"), account.to_string()).unwrap();
    let runtime = sb.root().join("runtime");
    std::fs::create_dir_all(&runtime).unwrap();
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    sb
}

/// Runs `sessionpipe ARGS` in `sb` with `stdin`; `wait` (which blocks until
/// a message comes) is stopped after a second.
fn run(sb: &Sandbox, args: &[String], stdin: &str, env: &[(&str, &str)]) -> Output {
    let mut c = sb.command(bin("sessionpipe"));
    c.args(args)
        .env("XDG_RUNTIME_DIR", sb.root().join("runtime"))
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut pipe = child.stdin.take().unwrap();
    let _ = pipe.write_all(stdin.as_bytes());
    drop(pipe);
    if args[0] == "wait" {
        std::thread::sleep(Duration::from_secs(1));
        let _ = child.kill();
    }
    child.wait_with_output().unwrap()
}

/// The id of the sink of `kind` (`file`, `http`), from `sink list --json`.
fn sink_id(sb: &Sandbox, kind: &str) -> String {
    let list: serde_json::Value =
        serde_json::from_slice(&sb.sessionpipe(&["sink", "list", "--json"]).stdout).unwrap();
    list.as_array()
        .unwrap()
        .iter()
        .find(|s| s["kind"] == kind)
        .and_then(|s| s["id"].as_str())
        .unwrap_or_else(|| panic!("no {kind} sink: {list}"))
        .to_string()
}

#[cfg(unix)]
#[test]
fn no_command_but_the_daemon_writes_log_lines() {
    let mut all = BTreeSet::new();
    runnable(&sessionpipe_core::cli::definition(), "", &mut all);
    let covered: BTreeSet<String> = RUNS
        .iter()
        .map(|(c, _)| c.to_string())
        .chain(NOT_RUN.iter().map(|(c, _)| c.to_string()))
        .collect();
    assert_eq!(
        all, covered,
        "every command is run here (or said why not), and nothing else"
    );

    let sb = claude_home();
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let rx = sessionpipe_receiver::Receiver::start(sessionpipe_receiver::Options::new(TOKEN))
        .expect("the receiver starts");
    // A daemon runs, as it does for a person (`ui`, `pool on`, `ask` talk to
    // it); the pool's and claude.ai's APIs are a closed port, so nothing
    // leaves the machine. Its own log goes to its own stderr.
    let closed = std::ffi::OsStr::new("http://127.0.0.1:9");
    let mut daemon = sb.start_daemon_with(&[
        ("SESSIONPIPE_ANTHROPIC_API", closed),
        ("SESSIONPIPE_CLAUDE_OAUTH", closed),
    ]);
    let mut logged = Vec::new();
    for (name, args) in RUNS {
        let fill = |a: &str| {
            let a = a
                .replace("{root}", &sb.root().display().to_string())
                .replace("{repo}", &repo.display().to_string())
                .replace("{receiver}", &rx.url())
                .replace("{uuid}", UUID)
                .replace("{asker}", ASKER);
            if a.contains("{http_sink}") {
                return a.replace("{http_sink}", &sink_id(&sb, "http"));
            }
            if a.contains("{file_sink}") {
                return a.replace("{file_sink}", &sink_id(&sb, "file"));
            }
            a
        };
        let args: Vec<String> = args.iter().map(|a| fill(a)).collect();
        let stdin = if args.iter().any(|a| a == "--token-stdin") {
            "receiver-token-for-cli-logs\n"
        } else {
            ""
        };
        let out = run(&sb, &args, stdin, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        for line in stderr.lines().filter(|l| is_log_line(l)) {
            logged.push(format!("{name} ({}): {line}", args.join(" ")));
        }
    }
    assert!(logged.is_empty(), "log lines:\n{}", logged.join("\n"));

    // The daemon logs as it did: at `info`.
    let mut err = daemon.child.stderr.take().unwrap();
    let (status, _) = daemon.terminate();
    assert!(status.success(), "{status:?}");
    let mut said = String::new();
    std::io::Read::read_to_string(&mut err, &mut said).unwrap();
    assert!(
        said.lines().any(|l| is_log_line(l) && l.contains(" INFO ")),
        "the daemon's log: {said}"
    );
}

/// The log is still there for whoever asks: `SESSIONPIPE_LOG=info` shows
/// the line `pool add --import` logs, and `RUST_LOG` does too.
#[cfg(unix)]
#[test]
fn sessionpipe_log_or_rust_log_asks_for_more() {
    for var in ["SESSIONPIPE_LOG", "RUST_LOG"] {
        let sb = claude_home();
        let args = ["pool".to_string(), "add".into(), "--import".into()];
        let quiet = run(&sb, &args, "", &[]);
        assert!(quiet.status.success());
        assert!(
            String::from_utf8_lossy(&quiet.stdout).contains("added acct-1"),
            "its own words: {}",
            String::from_utf8_lossy(&quiet.stdout)
        );
        let quiet_err = String::from_utf8_lossy(&quiet.stderr).into_owned();
        assert!(!quiet_err.lines().any(is_log_line), "{quiet_err}");
        let told = run(&sb, &args, "", &[(var, "info")]);
        let told_err = String::from_utf8_lossy(&told.stderr).into_owned();
        assert!(
            told_err
                .lines()
                .any(|l| is_log_line(l) && l.contains("INFO") && l.contains("pool:")),
            "{var}=info: {told_err}"
        );
    }
}
