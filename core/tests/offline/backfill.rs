//! `sessionpipe backfill`: past sessions from the harnesses' own files become one
//! `session.backfill` each, at seq 0; running it again adds nothing; `install`
//! runs it once; a session a control start named over ACP is backfilled by
//! that name. Its progress goes to stderr (plain lines off a terminal, one
//! JSON record per line with `--json`; stdout keeps its one document) and to
//! the daemon's `GET /api/progress` while it runs.

use serde_json::Value;
use sessionpipe_testkit::Sandbox;

fn write_claude_transcript(sb: &Sandbox, session: &str, ask: &str) {
    let dir = sb.home.join(".claude/projects/-home-work");
    std::fs::create_dir_all(&dir).unwrap();
    let lines = [
        format!(r#"{{"type":"user","promptId":"p1","timestamp":"2026-11-20T09:00:00.000Z","cwd":"{}","gitBranch":"dev","message":{{"content":"{ask}"}}}}"#, sb.home.join("work").display()),
        r#"{"type":"assistant","timestamp":"2026-11-20T09:00:09.000Z","message":{"model":"claude-opus-5-5","content":[{"type":"text","text":"ok"}]}}"#.to_string(),
    ];
    std::fs::write(
        dir.join(format!("{session}.jsonl")),
        lines.join("\n") + "\n",
    )
    .unwrap();
}

#[test]
fn past_sessions_are_backfilled_once() {
    let sb = Sandbox::new();
    write_claude_transcript(
        &sb,
        "11111111-2222-4333-8444-555555555555",
        "rename the module ghp_0123456789abcdefghijklmnopqrstuvwxyzAB",
    );
    let out = sb.sessionpipe(&["backfill", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let counts: Value = serde_json::from_slice(&out.stdout).unwrap();
    let claude = counts
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["harness"] == "claude-code")
        .unwrap();
    assert_eq!(
        (claude["found"].as_u64(), claude["added"].as_u64()),
        (Some(1), Some(1))
    );

    let evs = sb.events();
    assert_eq!(evs.len(), 1);
    let e = &evs[0];
    assert_eq!(e["type"], "session.backfill");
    assert_eq!(e["session"]["seq"], 0);
    assert_eq!(e["session"]["cwd"], "~/work");
    assert_eq!(e["session"]["branch"], "dev");
    assert_eq!(e["session"]["title_source"], "first-ask");
    assert!(
        !e["session"]["title"].as_str().unwrap().contains("ghp_"),
        "secrets@1 ran on the title"
    );
    assert_eq!(e["data"]["started_at"], "2026-11-20T09:00:00.000Z");
    assert_eq!(e["data"]["last_at"], "2026-11-20T09:00:09.000Z");
    assert_eq!(e["data"]["turns"], 1);

    let again = sb.sessionpipe(&["backfill", "--json"]);
    let counts: Value = serde_json::from_slice(&again.stdout).unwrap();
    let claude = counts
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["harness"] == "claude-code")
        .unwrap();
    assert_eq!(
        (claude["added"].as_u64(), claude["known"].as_u64()),
        (Some(0), Some(1))
    );
    assert_eq!(sb.events().len(), 1);

    // A session that went on live after its backfill keeps its own seq from 1.
    let live = serde_json::json!({"session_id": "11111111-2222-4333-8444-555555555555", "transcript_path": "/x", "cwd": "/w", "hook_event_name": "Stop", "prompt_id": "p"});
    let _d = sb.start_daemon();
    sb.hook("claude-code", "Stop", live.to_string().as_bytes());
    let evs = sb.wait_for_events(3, std::time::Duration::from_secs(10));
    let seqs: Vec<u64> = evs
        .iter()
        .map(|e| e["session"]["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, [0, 1, 2]);
}

#[test]
fn install_backfills_once() {
    let sb = Sandbox::new();
    write_claude_transcript(&sb, "aaaaaaaa-2222-4333-8444-555555555555", "first");
    let out = sb.sessionpipe(&["install"]);
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("backfill: 1 past session of the last 30 days queued"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    write_claude_transcript(&sb, "bbbbbbbb-2222-4333-8444-555555555555", "second");
    let out = sb.sessionpipe(&["install"]);
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("backfill"),
        "only once"
    );
    assert_eq!(sb.events().len(), 1);
}

/// A session the daemon started over ACP is known by the start's name (its
/// hooks' events carry it): found in Gemini CLI's files by Gemini CLI's own
/// id, it is backfilled under the name, and once.
#[test]
fn a_session_started_over_acp_is_backfilled_under_the_starts_name() {
    const NAME: &str = "7c1e2d3f-4a5b-4c6d-8e7f-a0b1c2d3e4f5";
    // Recorded from Gemini CLI 0.61.0 (`conformance/transcripts/gemini-cli/`).
    const ID: &str = "2f294531-86d2-41d8-8d37-2fde68024ecb";
    let sb = Sandbox::new();
    let chats = sb.home.join(".gemini/tmp/project/chats");
    std::fs::create_dir_all(&chats).unwrap();
    let recorded = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/transcripts/gemini-cli/tool-call-between-texts.jsonl");
    std::fs::copy(
        recorded,
        chats.join("session-2026-11-29T20-44-2f294531.jsonl"),
    )
    .unwrap();
    std::fs::create_dir_all(&sb.state).unwrap();
    use sessionpipe_core::control::store::{NamedSession, Store};
    let started = NamedSession {
        id: ID.into(),
        how: "acp".into(),
        cwd: Some("/w".into()),
    };
    Store::open(&sb.state.join("outbox.db"))
        .unwrap()
        .name_session("gemini-cli", NAME, &started, 1)
        .unwrap();
    let gemini = |out: std::process::Output| -> (u64, u64, u64) {
        let counts: Value = serde_json::from_slice(&out.stdout).unwrap();
        let c = counts
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["harness"] == "gemini-cli")
            .unwrap()
            .clone();
        let n = |k: &str| c[k].as_u64().unwrap();
        (n("found"), n("added"), n("known"))
    };
    assert_eq!(gemini(sb.sessionpipe(&["backfill", "--json"])), (1, 1, 0));
    // Its tokens, kept as the files were read, are under that name too.
    let usage = sb.sessionpipe(&[
        "usage",
        "--json",
        "--since",
        "2026-11-01",
        "--by",
        "session",
    ]);
    let report: Value = serde_json::from_slice(&usage.stdout).unwrap();
    let keys: Vec<&str> = report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["key"].as_str())
        .collect();
    assert_eq!(keys, [format!("gemini-cli:{NAME}")], "{report:#}");
    let evs = sb.events();
    assert_eq!(evs.len(), 1);
    assert_eq!(
        (
            evs[0]["type"].as_str(),
            evs[0]["harness"]["name"].as_str(),
            evs[0]["session"]["id"].as_str()
        ),
        (Some("session.backfill"), Some("gemini-cli"), Some(NAME))
    );
    assert_eq!(gemini(sb.sessionpipe(&["backfill", "--json"])), (1, 0, 1));
    assert_eq!(sb.events().len(), 1);
}

/// `n` small Claude Code transcripts, each its own session.
fn write_claude_transcripts(sb: &Sandbox, n: usize) {
    for i in 0..n {
        write_claude_transcript(sb, &format!("{i:08x}-2222-4333-8444-555555555555"), "go");
    }
}

#[test]
fn progress_goes_to_stderr_as_plain_lines_off_a_terminal() {
    let sb = Sandbox::new();
    write_claude_transcripts(&sb, 25);
    let out = sb.sessionpipe(&["backfill"]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        stdout, "claude-code: 25 sessions, 25 added, 0 already known\n",
        "stdout is the report alone"
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("backfill: "))
        .collect();
    // A line at each tenth of the sessions (25: at 3, 5, 8, 10, ...), and at the end.
    assert_eq!(
        lines.first(),
        Some(&"backfill: 3/25 sessions (12%)"),
        "{stderr}"
    );
    assert_eq!(
        lines.last(),
        Some(&"backfill: 25/25 sessions (100%)"),
        "{stderr}"
    );
    assert!(lines.len() >= 10, "{stderr}");
    assert!(
        !stderr.contains('\r') && !stderr.contains('\u{1b}'),
        "no bar: {stderr:?}"
    );
    assert!(
        !sb.state.join("progress.json").exists(),
        "the progress file goes at the end"
    );

    // Nothing to send: nothing said.
    let empty = Sandbox::new().sessionpipe(&["backfill"]);
    assert!(empty.status.success());
    assert_eq!(String::from_utf8_lossy(&empty.stderr), "");
}

/// On a terminal: a bar on stderr, cleared before the report; no colour under
/// `NO_COLOR` (the sandbox sets it), colour without.
#[test]
fn progress_is_a_bar_on_a_terminal() {
    let Some(script) = sessionpipe_testkit::terminal::script_program() else {
        return;
    };
    let sb = Sandbox::new();
    write_claude_transcripts(&sb, 300);
    let mut command = sb.command(sessionpipe_testkit::sandbox::bin("sessionpipe"));
    command.args(["backfill", "--days", "1"]);
    let term = sessionpipe_testkit::Terminal::start(&script, &command);
    term.wait_for_text(
        "claude-code:300sessions,300added",
        std::time::Duration::from_secs(60),
    );
    let screen = term.screen();
    assert!(screen.contains("backfill: ["), "{screen:?}");
    assert!(screen.contains("/300 sessions"), "{screen:?}");
    assert!(!screen.contains("\u{1b}[36m"), "NO_COLOR: {screen:?}");
    drop(term);

    let sb = Sandbox::new();
    write_claude_transcripts(&sb, 300);
    let mut command = sb.command(sessionpipe_testkit::sandbox::bin("sessionpipe"));
    command.arg("backfill").env_remove("NO_COLOR");
    let term = sessionpipe_testkit::Terminal::start(&script, &command);
    term.wait_for_text(
        "claude-code:300sessions,300added",
        std::time::Duration::from_secs(60),
    );
    assert!(term.screen().contains("\u{1b}[36m"), "{:?}", term.screen());
}

#[test]
fn with_json_progress_is_records_on_stderr_and_stdout_keeps_its_document() {
    let sb = Sandbox::new();
    write_claude_transcripts(&sb, 40);
    let out = sb.sessionpipe(&["backfill", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let counts: Value = serde_json::from_slice(&out.stdout).expect("stdout: one JSON document");
    let claude = counts
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["harness"] == "claude-code")
        .unwrap();
    assert_eq!(
        claude,
        &serde_json::json!({"harness": "claude-code", "found": 40, "added": 40, "known": 0})
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    let records: Vec<Value> = stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect();
    let p = |r: &Value| r["progress"].clone();
    let harnesses = sessionpipe_core::adapters::REGISTRY.len() as u64;
    assert_eq!(
        p(&records[0]),
        serde_json::json!({"what": "backfill", "stage": "reading", "done": 0,
            "total": harnesses, "harness": "claude-code"}),
        "{stderr}"
    );
    let sending: Vec<Value> = records
        .iter()
        .map(p)
        .filter(|r| r["stage"] == "sending")
        .collect();
    assert_eq!(
        sending[0]["done"], 0,
        "the sending stage opens with its total"
    );
    assert!(
        sending
            .iter()
            .all(|r| r["total"] == 40 && r["what"] == "backfill")
    );
    assert_eq!(
        sending.last().unwrap()["done"],
        40,
        "and closes with it done"
    );
    let dones: Vec<u64> = sending
        .iter()
        .map(|r| r["done"].as_u64().unwrap())
        .collect();
    assert!(dones.is_sorted(), "{dones:?}");
}

/// A backfill the CLI runs shows in the daemon's API while it runs: 3000
/// sessions take long enough to be seen; when it ends the API says none.
#[test]
fn the_daemons_api_shows_a_backfill_while_it_runs() {
    let sb = Sandbox::new();
    write_claude_transcripts(&sb, 3000);
    let _d = sb.start_daemon();
    let ui = crate::api::Ui::of(&sb);
    assert_eq!(
        ui.get("/api/progress"),
        serde_json::json!({"progress": null})
    );
    let mut child = sb
        .command(sessionpipe_testkit::sandbox::bin("sessionpipe"))
        .arg("backfill")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut seen = Vec::new();
    while child.try_wait().unwrap().is_none() {
        let now = ui.get("/api/progress")["progress"].clone();
        if now["stage"] == "sending" {
            seen.push(now);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(child.wait().unwrap().success());
    assert!(!seen.is_empty(), "the backfill was never seen in the API");
    let first = &seen[0];
    assert_eq!(
        (
            first["what"].as_str(),
            first["total"].as_u64(),
            first["pid"].as_u64()
        ),
        (Some("backfill"), Some(3000), Some(u64::from(child.id())))
    );
    assert!(first["started_at"].as_str().unwrap().ends_with('Z'));
    assert!(seen.iter().all(|p| p["done"].as_u64().unwrap() <= 3000));
    assert_eq!(
        ui.get("/api/progress"),
        serde_json::json!({"progress": null})
    );

    // A file its writer left (killed before it could remove it) is stale:
    // nobody holds the lock.
    let left = serde_json::json!({"what": "backfill", "stage": "sending", "done": 5,
        "total": 9, "pid": 1, "started_at": "x", "updated_at": "x"});
    std::fs::write(sb.state.join("progress.json"), left.to_string()).unwrap();
    assert_eq!(
        ui.get("/api/progress"),
        serde_json::json!({"progress": null})
    );
}

#[test]
fn one_install_sets_a_new_machine_up_and_backfill_takes_one_harness() {
    let sb = Sandbox::new();
    write_claude_transcript(&sb, "11111111-2222-4333-8444-5555555555aa", "first");
    let r =
        sessionpipe_receiver::Receiver::start(sessionpipe_receiver::Options::new("tok-1")).unwrap();
    let mut c = sb.command(sessionpipe_testkit::sandbox::bin("sessionpipe"));
    c.args([
        "install",
        "--harness",
        "claude-code",
        "--sink",
        &r.url(),
        "--token-stdin",
        "--tier",
        "1",
        "--backfill",
        "30",
        "--machine",
        "new-box",
    ]);
    let out = sessionpipe_testkit::sandbox::run_with_stdin(c, b"tok-1\n");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("claude-code: installed"));
    let sinks: Value =
        serde_json::from_slice(&sb.sessionpipe(&["sink", "list", "--json"]).stdout).unwrap();
    assert_eq!(sinks[0]["tier"], 1);
    assert_eq!(sinks[0]["has_token"], true);
    let evs = sb.events();
    assert_eq!(evs.len(), 1, "backfilled");
    assert_eq!(evs[0]["session"]["machine"], "new-box");
    // Again: the sink is kept (not added twice), a bad name is said before anything.
    let mut c = sb.command(sessionpipe_testkit::sandbox::bin("sessionpipe"));
    c.args(["install", "--sink", &r.url(), "--token-stdin"]);
    let out = sessionpipe_testkit::sandbox::run_with_stdin(c, b"tok-1\n");
    assert!(String::from_utf8_lossy(&out.stderr).contains("is there already"));
    let out = sb.sessionpipe(&["install", "--machine", " "]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a name"));

    // With --json, its backfill's progress is JSON records too (stderr), and
    // stdout the install's document alone.
    let out = sb.sessionpipe(&[
        "install",
        "--json",
        "--harness",
        "claude-code",
        "--backfill",
        "30",
    ]);
    assert!(out.status.success());
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc[0]["harness"], "claude-code");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let records: Vec<Value> = stderr
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(
        records.iter().any(|r| r["progress"]["what"] == "backfill"),
        "{stderr}"
    );
    assert!(
        !stderr
            .lines()
            .any(|l| l.starts_with("backfill: ") && l.contains(" sessions (")),
        "no plain progress lines: {stderr}"
    );

    // backfill --harness: only that harness's files are read.
    let out = sb.sessionpipe(&["backfill", "--json", "--harness", "codex"]);
    let counts: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = counts
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["harness"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["codex"]);
}
