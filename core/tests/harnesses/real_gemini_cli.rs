//! The real Gemini CLI, offline, end to end: `sessionpipe install` writes hooks
//! into a temporary HOME's `~/.gemini/settings.json`, `gemini -p` runs a whole turn
//! against a scripted Gemini API on loopback (one `run_shell_command` call, then
//! text), its real hooks run the real `sessionpipe-hook`, the daemon turns them
//! into events. Two more runs give the payloads a plain turn does not: a failing
//! tool and a `/compress` (headless), and a permission prompt (a terminal session
//! under util-linux's `script`). With transcripts on (tier 2), two more: a turn
//! and its resumed session's next (`turn.transcript`, facts, backfill), and a
//! terminal session whose first turn the person cancels.
//!
//! Gemini CLI comes from the npm registry (`e2e/package.json`, installed by
//! `scripts/test.sh`) and runs as `node <package>/bundle/gemini.js`. Without it, or
//! without `node`, the test says so and passes, unless
//! `SESSIONPIPE_REQUIRE_HARNESSES=1` (set by the test script), where it fails.
//! With `SESSIONPIPE_RECORD_FIXTURES=DIR` it also writes the payloads it saw as
//! conformance fixtures into DIR, and with `SESSIONPIPE_RECORD_TRANSCRIPTS=DIR`
//! the tier-2 runs' chat files into DIR (`conformance/transcripts/gemini-cli/`,
//! read by `real_gemini_cli_transcripts.rs`).

use serde_json::{Value, json};
use sessionpipe_core::conformance::harness::{fixture_from_job, jobs_in, record_fixtures};
use sessionpipe_core::spool::Job;
use sessionpipe_testkit::gemini::{FALLBACK_TEXT, MockGemini};
use sessionpipe_testkit::{Sandbox, Turn, sandbox::Daemon};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

/// The installed package, its version, and `node` to run its bundle with.
struct Gemini {
    package: PathBuf,
    version: String,
    node: PathBuf,
}

fn gemini() -> Option<Gemini> {
    let package = sessionpipe_testkit::harnesses::installed("Gemini CLI", "@google/gemini-cli")?;
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(package.join("package.json")).ok()?).ok()?;
    let node = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("node"))
            .find(|p| p.is_file())
    });
    let Some(node) = node else {
        return sessionpipe_testkit::harnesses::missing("node is not on PATH");
    };
    Some(Gemini {
        version: manifest["version"].as_str().unwrap_or_default().to_string(),
        package,
        node,
    })
}

/// A sandbox with Gemini CLI's hooks installed and set up to run offline, and a
/// daemon keeping every job (and reading transcripts, when `transcripts`).
struct Setup {
    sb: Sandbox,
    gemini: Gemini,
    archive: PathBuf,
    project: PathBuf,
    _daemon: Daemon,
}

fn setup(gemini: Gemini, transcripts: bool) -> Setup {
    let sb = Sandbox::new();
    if transcripts {
        std::fs::create_dir_all(&sb.state).unwrap();
        std::fs::write(sb.state.join("config.json"), r#"{"transcripts": true}"#).unwrap();
    }
    let archive = sb.root().join("jobs");
    let project = sb.home.join("work/project");
    std::fs::create_dir_all(&project).unwrap();

    // `gemini` on PATH (npm's link to the bundle) is how the installer finds
    // Gemini CLI in a fresh HOME.
    let bin = gemini.package.join("../../.bin");
    let path = sessionpipe_testkit::Sandbox::path_with(&bin);
    let install = sb
        .command(sessionpipe_testkit::sandbox::bin("sessionpipe"))
        .env("PATH", &path)
        .args(["install", "--harness", "gemini-cli"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&install.stdout);
    assert!(
        install.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&install.stderr)
    );
    assert_eq!(said, "gemini-cli: installed (~/.gemini/settings.json)\n");
    assert!(String::from_utf8_lossy(&install.stderr).contains("telemetry.logPrompts"));

    // What running offline needs, added through the file beside our entries:
    // API-key auth (a base URL otherwise selects a gateway auth that headless
    // mode rejects), and no telemetry, usage statistics or update checks.
    let settings = sb.home.join(".gemini/settings.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
    let o = v.as_object_mut().unwrap();
    o.insert(
        "security".into(),
        json!({"auth": {"selectedType": "gemini-api-key"}}),
    );
    o.insert(
        "telemetry".into(),
        json!({"enabled": false, "logPrompts": false}),
    );
    o.insert("privacy".into(), json!({"usageStatisticsEnabled": false}));
    o.insert(
        "general".into(),
        json!({"enableAutoUpdate": false, "enableAutoUpdateNotification": false}),
    );
    std::fs::write(&settings, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    assert_current(&sb);

    let daemon = sb.start_daemon_with(&[("SESSIONPIPE_JOB_ARCHIVE", archive.as_os_str())]);
    Setup {
        sb,
        gemini,
        archive,
        project,
        _daemon: daemon,
    }
}

/// Our entries are all there and current (after Gemini CLI ran, too).
fn assert_current(sb: &Sandbox) {
    let status = sb.sessionpipe(&["status"]);
    let said = String::from_utf8_lossy(&status.stdout);
    assert!(
        said.contains("gemini-cli: current (~/.gemini/settings.json)"),
        "{said}"
    );
}

impl Setup {
    /// `gemini` in the project with the mock as its API, started the way the
    /// person's terminal would (no relaunch: the bundle runs in this process).
    fn command(&self, api: &MockGemini) -> Command {
        let mut c = self.sb.command(&self.gemini.node);
        c.arg(self.bundle());
        self.offline(&mut c, api);
        c
    }

    fn bundle(&self) -> PathBuf {
        self.gemini.package.join("bundle/gemini.js")
    }

    /// The folder and environment every run gets.
    fn offline(&self, c: &mut Command, api: &MockGemini) {
        c.current_dir(&self.project)
            .env("GEMINI_API_KEY", "test-not-a-key")
            .env("GOOGLE_GEMINI_BASE_URL", api.base_url())
            .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
            .env("GEMINI_CLI_NO_RELAUNCH", "true")
            .env("SHELL", "/bin/bash");
    }

    /// Runs `gemini -p PROMPT` headless, tools approved, and returns its JSON result.
    fn run(&self, api: &MockGemini, prompt: &str, extra: &[&str]) -> Value {
        let out = self
            .command(api)
            .args(["-p", prompt, "--approval-mode", "yolo"])
            .args(["-m", "gemini-2.5-flash", "-o", "json"])
            .args(extra)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("gemini runs");
        assert!(
            out.status.success(),
            "gemini failed: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("gemini prints its JSON result")
    }

    /// Gemini CLI in a terminal (`script`), started with `flags`; the person's
    /// keys go to its stdin.
    fn terminal(&self, api: &MockGemini, flags: &str) -> (Child, Keys) {
        let mut terminal = self.sb.command("script");
        self.offline(&mut terminal, api);
        let line = format!("exec \"$SP_NODE\" \"$SP_BUNDLE\" -m gemini-2.5-flash {flags}");
        let mut child = terminal
            .env("TERM", "xterm-256color")
            .env("SP_NODE", &self.gemini.node)
            .env("SP_BUNDLE", self.bundle())
            .args(["-qfec", &line, "/dev/null"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("script (util-linux) runs");
        let keys = Keys(child.stdin.take().unwrap());
        (child, keys)
    }

    /// Ctrl-C twice, the way out of a terminal session, and waits until every
    /// hook Gemini CLI started on its way out reached the daemon. Gemini CLI
    /// exits on the second Ctrl-C; one that is stuck is killed after 15 s and
    /// the test's assertions say what was missing.
    fn quit(&self, mut child: Child, mut keys: Keys) {
        keys.press(b"\x03", 500);
        keys.press(b"\x03", 0);
        for _ in 0..150 {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = child.kill();
        let _ = child.wait();
        // The hooks it started on its way out have spooled their jobs by now.
        std::thread::sleep(Duration::from_millis(300));
        self.sb
            .wait_until(Duration::from_secs(10), |_| self.sb.spooled() == 0);
    }

    /// The chat file the session's hooks name, copied to `DIR/<name>.jsonl`
    /// when recording transcripts.
    fn record_transcript(&self, name: &str) {
        let Ok(dir) = std::env::var("SESSIONPIPE_RECORD_TRANSCRIPTS") else {
            return;
        };
        let jobs = self.jobs();
        let ended = jobs.iter().rev().find(|j| j.event == "AfterAgent").unwrap();
        let p: Value = serde_json::from_slice(&ended.payload).unwrap();
        let chat = p["transcript_path"].as_str().unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(chat, Path::new(&dir).join(format!("{name}.jsonl"))).unwrap();
    }

    fn jobs(&self) -> Vec<Job> {
        jobs_in(&self.archive).unwrap()
    }

    fn events_when(&self, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        self.sb.wait_until(Duration::from_secs(20), done)
    }

    /// Writes one job as the fixture `DIR/<name>.json` when recording.
    fn record_as(&self, job: &Job, name: &str, how: &str) {
        if let Ok(dir) = std::env::var("SESSIONPIPE_RECORD_FIXTURES") {
            let how = format!(
                "{how}, against a scripted Gemini API on loopback, hooks written by `sessionpipe install`"
            );
            let fixture = fixture_from_job(job, &self.gemini.version, &how).unwrap();
            let text = serde_json::to_string_pretty(&fixture).unwrap() + "\n";
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(Path::new(&dir).join(format!("{name}.json")), text).unwrap();
        }
    }
}

/// The person's keys, into a terminal session.
struct Keys(ChildStdin);

impl Keys {
    fn press(&mut self, bytes: &[u8], then_ms: u64) {
        self.0.write_all(bytes).unwrap();
        self.0.flush().unwrap();
        std::thread::sleep(Duration::from_millis(then_ms));
    }
}

/// How every fixture here was recorded, after what was run.
const HOW: &str =
    "against a scripted Gemini API on loopback, hooks written by `sessionpipe install`";

fn kinds(events: &[&Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_real_gemini_cli_turn_becomes_protocol_events() {
    let Some(gemini) = gemini() else {
        return;
    };
    let s = setup(gemini, false);
    let api = MockGemini::shell_then_text("echo hello", "The command printed: hello");
    let result = s.run(
        &api,
        "Run the shell command, then tell me what it printed.",
        &[],
    );
    let session = result["session_id"].as_str().expect("a session id");
    assert_eq!(result["response"], "The command printed: hello");
    assert_eq!(api.stream_requests().len(), 2, "the call, then the text");

    let events = s.events_when(|evs| evs.iter().any(|e| e["type"] == "session.ended"));
    let all: Vec<&Value> = events.iter().collect();
    assert_eq!(
        kinds(&all),
        [
            "session.started",
            "turn.started",
            "tool.started",
            "tool.ended",
            "turn.ended",
            "session.ended"
        ],
        "{events:#?}"
    );
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["session"]["seq"], i as u64 + 1);
        assert_eq!(e["session"]["id"], session);
        assert_eq!(e["session"]["cwd"], "~/work/project");
        assert_eq!(e["harness"]["name"], "gemini-cli");
    }
    let prompt = "Run the shell command, then tell me what it printed.";
    assert_eq!(events[0]["data"], json!({"source": "startup"}));
    // Gemini CLI's payloads carry no turn id and no tool call id.
    assert_eq!(
        events[1]["data"],
        json!({"prompt_chars": prompt.chars().count()})
    );
    assert_eq!(
        events[2]["data"],
        json!({"tool": "run_shell_command", "input": {"command": "echo hello"}})
    );
    assert_eq!(events[3]["data"]["tool"], "run_shell_command");
    assert_eq!(events[3]["data"]["ok"], true);
    assert!(events[3]["data"].get("call_id").is_none());
    assert_eq!(events[3]["data"]["output"]["returnDisplay"], "hello");
    assert_eq!(events[4]["data"], json!({"reason": "stop"}));
    assert_eq!(events[5]["data"], json!({"reason": "exit"}));

    // PreCompress is registered for manual compressions only, so the automatic
    // check before each model call never ran the hook: one job per event above.
    let jobs = s.jobs();
    let fired: Vec<&str> = jobs.iter().map(|j| j.event.as_str()).collect();
    assert_eq!(
        fired,
        [
            "SessionStart",
            "BeforeAgent",
            "BeforeTool",
            "AfterTool",
            "AfterAgent",
            "SessionEnd"
        ]
    );
    assert!(
        jobs.iter()
            .all(|j| j.env.get("GEMINI_SESSION_ID").map(String::as_str) == Some(session)),
        "the hook keeps Gemini CLI's session variable"
    );
    assert_current(&s.sb);
    if let Ok(dir) = std::env::var("SESSIONPIPE_RECORD_FIXTURES") {
        let how = format!("gemini -p, one run_shell_command call, {HOW}");
        record_fixtures(&jobs, Path::new(&dir), &s.gemini.version, &how).unwrap();
    }
}

#[test]
fn a_failed_tool_and_a_manual_compression_from_real_runs() {
    let Some(gemini) = gemini() else {
        return;
    };
    let s = setup(gemini, false);

    // A tool that fails: `tool_response.error`.
    let missing = s.project.join("missing.txt");
    let api = MockGemini::start([
        Turn::tool_use("read_file", json!({"file_path": missing})),
        Turn::text("There is no such file."),
    ]);
    let first = s.run(&api, "Read missing.txt.", &[]);
    let session = first["session_id"].as_str().unwrap().to_string();

    // The same session again, compressed by hand: `/compress` is a command
    // headless mode runs (and then sends on as a prompt).
    let api = MockGemini::start([]);
    let again = s.run(&api, "/compress", &["--resume", "latest"]);
    assert_eq!(again["session_id"], session.as_str());
    let compressed = api.requests().iter().any(|r| {
        r.path().ends_with(":generateContent")
            && String::from_utf8_lossy(&r.body).contains("state_snapshot")
    });
    assert!(compressed, "Gemini CLI asked for a summary");

    let events =
        s.events_when(|evs| evs.iter().filter(|e| e["type"] == "session.ended").count() >= 2);
    let ours: Vec<&Value> = events
        .iter()
        .filter(|e| e["session"]["id"] == session.as_str())
        .collect();
    let failed = ours
        .iter()
        .find(|e| e["type"] == "tool.ended")
        .expect("a tool.ended");
    assert_eq!(failed["data"]["tool"], "read_file");
    assert_eq!(failed["data"]["ok"], false);
    assert_eq!(
        failed["data"]["error"],
        format!("File not found: {}", missing.display())
    );

    let compacted: Vec<&&Value> = ours
        .iter()
        .filter(|e| e["type"] == "context.compacted")
        .collect();
    assert_eq!(compacted.len(), 1, "{:#?}", kinds(&ours));
    assert_eq!(compacted[0]["data"], json!({"trigger": "manual"}));
    let sources: Vec<&str> = ours
        .iter()
        .filter(|e| e["type"] == "session.started")
        .map(|e| e["data"]["source"].as_str().unwrap())
        .collect();
    assert_eq!(sources, ["startup", "resume"]);
    assert_eq!(api.stream_requests().len(), 1, "the prompt's one turn");

    let jobs = s.jobs();
    let find = |event: &str, key: &str, value: &str| {
        jobs.iter()
            .find(|j| {
                let p: Value = serde_json::from_slice(&j.payload).unwrap();
                j.event == event && p[key] == value
            })
            .unwrap_or_else(|| panic!("no {event} with {key} {value}"))
    };
    let how = "gemini -p, the model reading a missing file";
    s.record_as(
        find("AfterTool", "tool_name", "read_file"),
        "after-tool-error",
        how,
    );
    let how = "gemini -p /compress --resume latest";
    s.record_as(
        find("PreCompress", "trigger", "manual"),
        "pre-compress-manual",
        how,
    );
    s.record_as(
        find("SessionStart", "source", "resume"),
        "session-start-resume",
        how,
    );
}

/// A terminal session, the one place Gemini CLI asks before running a command
/// (headless mode drops such tools, ACP asks over its own protocol): Notification
/// `ToolPermission`, then Esc (the call is cancelled) and Ctrl-C twice (exit).
/// `script` (util-linux) gives Gemini CLI the terminal it needs.
#[test]
fn a_permission_prompt_in_a_terminal_session() {
    let Some(gemini) = gemini() else {
        return;
    };
    let s = setup(gemini, false);
    let api = MockGemini::shell_then_text("touch made-by-test.txt", "Made it.");
    let (child, mut keys) = s.terminal(&api, "-i 'Make the file.'");
    let asked = s.events_when(|evs| evs.iter().any(|e| e["type"] == "attention.needed"));
    keys.press(b"\x1b", 1000);
    s.quit(child, keys);
    let events = s.events_when(|evs| evs.iter().any(|e| e["type"] == "session.ended"));
    assert!(
        asked.iter().any(|e| e["type"] == "attention.needed"),
        "no permission prompt: {asked:#?}"
    );

    let all: Vec<&Value> = events.iter().collect();
    assert_eq!(
        kinds(&all),
        [
            "session.started",
            "turn.started",
            "tool.started",
            "attention.needed",
            "attention.cleared",
            "session.ended"
        ],
        "{events:#?}"
    );
    let jobs = s.jobs();
    let notification = jobs
        .iter()
        .find(|j| j.event == "Notification")
        .expect("the Notification payload");
    let p: Value = serde_json::from_slice(&notification.payload).unwrap();
    assert!(
        p.get("tool_use_id").is_none() && p["details"].get("callId").is_none(),
        "Gemini CLI names no tool call here: {p}"
    );
    let id = format!("notif-{}", notification.at_ms());
    assert_eq!(
        events[3]["data"],
        json!({"attention_id": id, "kind": "permission",
               "message": "Tool Confirm Shell Command requires execution: touch made-by-test.txt"})
    );
    assert_eq!(
        events[4]["data"],
        json!({"attention_id": id, "how": "cancelled"})
    );
    assert!(!s.project.join("made-by-test.txt").exists());
    // Two of Gemini CLI's exit cleanups fire SessionEnd (measured on 0.61.0):
    // one session end all the same.
    let ends = jobs.iter().filter(|j| j.event == "SessionEnd").count();
    assert!(ends >= 2, "SessionEnd fired {ends} times");
    let how = "gemini -i in a terminal (`script`), the permission prompt cancelled with Esc";
    s.record_as(notification, "notification", how);
}

/// A token that `secrets@1` takes out of whatever carries it.
const TOKEN: &str = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// Each `turn.transcript` sits right after its turn's `turn.ended`.
fn each_after_its_end(events: &[Value]) {
    for t in of_type(events, "turn.transcript") {
        let i = events.iter().position(|e| e["id"] == t["id"]).unwrap();
        assert_eq!(
            events[i - 1]["type"],
            "turn.ended",
            "{:#?}",
            kinds(&events.iter().collect::<Vec<_>>())
        );
    }
}

/// Tier 2: a turn with words before and after a tool call, then the same
/// session resumed for a second turn. Each turn's `turn.transcript` comes with
/// its AfterAgent (Gemini CLI has written the turn by then: no hold), nothing
/// is sent twice across the resume, facts fill the session block, and
/// `backfill` finds the session once. (A resume's start names a fresh file,
/// which is the session's own file when the resume starts within the minute the
/// session did, as here; `real_gemini_cli_transcripts.rs` has the other case.)
#[test]
fn transcripts_facts_and_backfill_from_real_runs() {
    let Some(gemini) = gemini() else {
        return;
    };
    let s = setup(gemini, true);
    std::fs::create_dir_all(s.project.join(".git")).unwrap();
    std::fs::write(
        s.project.join(".git/config"),
        "[remote \"origin\"]\n\turl = https://ann:hunter2@github.com/ann/repo.git\n",
    )
    .unwrap();
    std::fs::write(s.project.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();

    let ask = format!("Use my token {TOKEN} and run the command, then tell me what it printed.");
    let api = MockGemini::start([
        Turn::tool_use("run_shell_command", json!({"command": "echo hello"}))
            .after_saying("Let me run it."),
        Turn::text("The command printed: hello"),
    ]);
    let session = s.run(&api, &ask, &[])["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    s.run(
        &MockGemini::start([]),
        "Anything else?",
        &["--resume", "latest"],
    );

    let events = s.events_when(|evs| {
        of_type(evs, "session.ended").len() >= 2 && of_type(evs, "turn.transcript").len() >= 2
    });
    assert!(
        events
            .iter()
            .all(|e| e["session"]["id"] == session.as_str())
    );
    let transcripts = of_type(&events, "turn.transcript");
    assert_eq!(
        transcripts.len(),
        2,
        "{:#?}",
        kinds(&events.iter().collect::<Vec<_>>())
    );
    let t1 = &transcripts[0]["data"];
    assert_eq!(t1["turn"], 1);
    let user = t1["user"].as_str().unwrap();
    assert!(
        !user.contains(TOKEN) && user.contains("[redacted]"),
        "{user}"
    );
    assert_eq!(
        t1["assistant"],
        "Let me run it.\n\nThe command printed: hello"
    );
    let t2 = &transcripts[1]["data"];
    assert_eq!(
        (
            t2["turn"].as_u64(),
            t2["user"].as_str(),
            t2["assistant"].as_str()
        ),
        (Some(2), Some("Anything else?"), Some(FALLBACK_TEXT))
    );
    each_after_its_end(&events);

    let last = &events.last().unwrap()["session"];
    assert_eq!(last["model"], "gemini-2.5-flash");
    assert_eq!(last["repo"], "https://github.com/ann/repo.git");
    assert_eq!(last["branch"], "main");
    assert_eq!(last["title_source"], "first-ask");
    let title = last["title"].as_str().unwrap();
    assert!(
        title.starts_with("Use my token") && !title.contains("ghp_"),
        "{title}"
    );
    let stored = std::fs::read(s.sb.state.join("outbox.db")).unwrap();
    assert!(!String::from_utf8_lossy(&stored).contains(TOKEN));
    let tier1 = s.sb.events_at(&["--tier", "1"]);
    assert!(tier1.iter().all(|e| e["type"] != "turn.transcript"));
    assert!(tier1.iter().any(|e| e["type"] == "tool.started"));
    let tier0 = s.sb.events_at(&["--tier", "0"]);
    assert!(
        tier0
            .iter()
            .all(|e| !e["type"].as_str().unwrap().starts_with("tool."))
    );

    // Backfill: the live session is known already; a machine that never saw it
    // live (another state dir) gets it once, from the chat file.
    let backfill = |state: &Path| {
        let out =
            s.sb.command(sessionpipe_testkit::sandbox::bin("sessionpipe"))
                .env("SESSIONPIPE_STATE_DIR", state)
                .args(["backfill", "--json"])
                .output()
                .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let counts: Value = serde_json::from_slice(&out.stdout).unwrap();
        let mine = counts
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["harness"] == "gemini-cli");
        let n = |k: &str| mine.unwrap()[k].as_u64().unwrap();
        (n("found"), n("added"), n("known"))
    };
    assert_eq!(backfill(&s.sb.state), (1, 0, 1));
    let fresh = s.sb.root().join("fresh-state");
    assert_eq!(backfill(&fresh), (1, 1, 0));
    assert_eq!(backfill(&fresh), (1, 0, 1));
    let tail =
        s.sb.command(sessionpipe_testkit::sandbox::bin("sessionpipe"))
            .env("SESSIONPIPE_STATE_DIR", &fresh)
            .args(["tail", "--json", "--no-follow", "--tier", "3"])
            .output()
            .unwrap();
    let past: Vec<Value> = String::from_utf8_lossy(&tail.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(past.len(), 1);
    let b = &past[0];
    assert_eq!(
        (b["type"].as_str(), b["session"]["seq"].as_u64()),
        (Some("session.backfill"), Some(0))
    );
    assert_eq!(b["session"]["id"], session.as_str());
    assert_eq!(b["session"]["cwd"], "~/work/project");
    assert_eq!(b["session"]["model"], "gemini-2.5-flash");
    assert_eq!(b["session"]["title"], last["title"]);
    assert_eq!(b["data"]["turns"], 2);
    // The file's times hold both turns (RFC 3339 in one format: text order).
    let (started, last) = (
        b["data"]["started_at"].as_str(),
        b["data"]["last_at"].as_str(),
    );
    assert!(
        started <= t1["at"].as_str() && last >= t2["at"].as_str(),
        "{b}"
    );
    s.record_transcript("tool-call-between-texts");
}

/// Tier 2 in a terminal session: the person stops the first turn (Esc) while
/// its command runs. Gemini CLI fires no AfterAgent for it and records
/// "Request cancelled."; the turn, with the words said before the call, is
/// sent when the next prompt's BeforeAgent is read, ahead of that turn.
#[test]
fn a_cancelled_turn_is_sent_when_the_next_one_starts() {
    let Some(gemini) = gemini() else {
        return;
    };
    let s = setup(gemini, true);
    // Whatever the next request's history holds, the answer is the fallback.
    let api = MockGemini::start([
        Turn::tool_use("run_shell_command", json!({"command": "sleep 5"}))
            .after_saying("Sleeping first."),
        Turn::text(FALLBACK_TEXT),
    ]);
    let (child, mut keys) = s.terminal(&api, "--approval-mode yolo -i 'Sleep a while.'");
    s.events_when(|evs| evs.iter().any(|e| e["type"] == "tool.started"));
    keys.press(b"\x1b", 1500);
    keys.press(b"Then say hi.", 500);
    keys.press(b"\r", 0);
    let events = s.events_when(|evs| of_type(evs, "turn.transcript").len() >= 2);
    s.record_transcript("interrupted-turn");
    s.quit(child, keys);

    let all: Vec<&Value> = events.iter().collect();
    let transcripts = of_type(&events, "turn.transcript");
    assert_eq!(transcripts.len(), 2, "{:#?}", kinds(&all));
    assert_eq!(
        transcripts[0]["data"]["user"]
            .as_str()
            .zip(transcripts[0]["data"]["assistant"].as_str()),
        Some(("Sleep a while.", "Sleeping first."))
    );
    let first = events
        .iter()
        .position(|e| e["id"] == transcripts[0]["id"])
        .unwrap();
    assert_eq!(
        events[first + 1]["type"],
        "turn.started",
        "{:#?}",
        kinds(&all)
    );
    assert_eq!(
        (
            transcripts[1]["data"]["turn"].as_u64(),
            transcripts[1]["data"]["user"].as_str()
        ),
        (Some(2), Some("Then say hi."))
    );
    assert_eq!(transcripts[1]["data"]["assistant"], FALLBACK_TEXT);
    let second = events
        .iter()
        .position(|e| e["id"] == transcripts[1]["id"])
        .unwrap();
    assert_eq!(events[second - 1]["type"], "turn.ended");
    assert_eq!(
        of_type(&events, "turn.ended").len(),
        1,
        "no AfterAgent for the cancelled turn"
    );
}
