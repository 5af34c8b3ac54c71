//! The real OpenCode, offline, end to end: `sessionpipe install` writes its
//! plugin into a temporary HOME's `~/.config/opencode/plugins/`, `opencode run`
//! runs whole turns against a scripted chat-completions API on loopback (one
//! `bash` call, then text), the plugin inside OpenCode hands its bus events and
//! tool hooks to the spool and wakes the daemon, and the daemon's events are
//! checked: the turn's events in order, a permission asked under an ask rule,
//! nothing lost while the daemon is stopped in the middle of a run (the plugin
//! starts a drain worker), and the turn's words at tier 2 from OpenCode's store.
//!
//! OpenCode comes from the npm registry (`e2e/package.json`). Without it the test
//! says so and passes, unless `SESSIONPIPE_REQUIRE_HARNESSES=1`, where it fails.
//! With `SESSIONPIPE_RECORD_FIXTURES=DIR` it also writes the payloads it saw as
//! conformance fixtures into DIR (`conformance/harness/opencode/`).

use serde_json::{Value, json};
use sessionpipe_core::conformance::harness::{fixture_from_job, jobs_in};
use sessionpipe_core::spool::Job;
use sessionpipe_testkit::chat::{MockChat, Step};
use sessionpipe_testkit::{Sandbox, sandbox::Daemon};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

const VERSION: &str = "1.18.33";
const ASK: &str = "run echo hello";
const ANSWER: &str = "It printed hello.";

struct Setup {
    sb: Sandbox,
    bin: PathBuf,
    archive: PathBuf,
    project: PathBuf,
}

/// A sandbox with OpenCode set up offline against `api` (every permission
/// `bash` rule given), transcripts on, and our plugin installed.
fn setup(bin: PathBuf, api: &MockChat, bash: &str) -> Setup {
    let sb = Sandbox::new();
    std::fs::create_dir_all(&sb.state).unwrap();
    std::fs::write(sb.state.join("config.json"), r#"{"transcripts": true}"#).unwrap();
    let config = sb.home.join(".config/opencode");
    std::fs::create_dir_all(&config).unwrap();
    let doc = json!({
        "$schema": "https://opencode.ai/config.json",
        "provider": {"mock": {"npm": "@ai-sdk/openai-compatible", "name": "Mock",
            "options": {"baseURL": api.base_url(), "apiKey": "test-not-a-key"},
            "models": {"mock-model": {"name": "Mock", "tool_call": true}}}},
        "model": "mock/mock-model",
        "small_model": "mock/mock-model",
        "enabled_providers": ["mock"],
        "autoupdate": false,
        "share": "disabled",
        "permission": {"bash": bash},
    });
    let person = serde_json::to_string_pretty(&doc).unwrap();
    std::fs::write(config.join("opencode.json"), &person).unwrap();

    let install = sb.sessionpipe(&["install", "--harness", "opencode"]);
    let said = String::from_utf8_lossy(&install.stdout);
    assert!(
        install.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&install.stderr)
    );
    assert_eq!(
        said,
        "opencode: installed (~/.config/opencode/plugins/sessionpipe.js)\n"
    );
    assert_eq!(
        std::fs::read_to_string(config.join("opencode.json")).unwrap(),
        person,
        "the person's config is never touched"
    );
    let project = sb.home.join("work/project");
    std::fs::create_dir_all(&project).unwrap();
    Setup {
        archive: sb.root().join("jobs"),
        sb,
        bin,
        project,
    }
}

impl Setup {
    fn daemon(&self) -> Daemon {
        self.sb
            .start_daemon_with(&[("SESSIONPIPE_JOB_ARCHIVE", self.archive.as_os_str())])
    }

    /// `opencode run` in the project, offline; `auto` approves what a rule asks.
    fn start(&self, auto: bool) -> Child {
        let mut c = self.sb.command(&self.bin);
        c.current_dir(&self.project)
            .env("SHELL", "/bin/bash")
            .env("SESSIONPIPE_JOB_ARCHIVE", &self.archive)
            .env("OPENCODE_DISABLE_MODELS_FETCH", "true")
            .env("OPENCODE_DISABLE_AUTOUPDATE", "true")
            .env("OPENCODE_DISABLE_DEFAULT_PLUGINS", "true")
            .env("OPENCODE_DISABLE_LSP_DOWNLOAD", "true")
            .env("OPENCODE_DISABLE_SHARE", "true")
            .args(["run", "--format", "json", "-m", "mock/mock-model"]);
        if auto {
            c.arg("--auto");
        }
        c.args(ASK.split(' '))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("opencode runs")
    }

    fn finish(&self, child: Child) {
        let out = wait_bounded(child, Duration::from_secs(180));
        assert!(
            out.status.success(),
            "opencode failed: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn jobs(&self) -> Vec<Job> {
        jobs_in(&self.archive).unwrap_or_default()
    }

    /// Writes the first job of `event` (that `pick` takes) as the fixture
    /// `DIR/<name>.json` when recording.
    fn record(&self, event: &str, name: &str, how: &str, pick: impl Fn(&Value) -> bool) {
        let Ok(dir) = std::env::var("SESSIONPIPE_RECORD_FIXTURES") else {
            return;
        };
        let job = self
            .jobs()
            .into_iter()
            .find(|j| {
                j.event == event
                    && serde_json::from_slice::<Value>(&j.payload).is_ok_and(|p| pick(&p))
            })
            .unwrap_or_else(|| panic!("no {event} job to record"));
        let how = format!(
            "{how}, against a scripted chat-completions API on loopback, plugin written by `sessionpipe install`"
        );
        let fixture = fixture_from_job(&job, VERSION, &how).unwrap();
        let text = serde_json::to_string_pretty(&fixture).unwrap() + "\n";
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(Path::new(&dir).join(format!("{name}.json")), text).unwrap();
    }
}

/// Waits for `child` for at most `bound`, killing it past that.
fn wait_bounded(mut child: Child, bound: Duration) -> std::process::Output {
    let until = Instant::now() + bound;
    while child.try_wait().unwrap().is_none() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    child.wait_with_output().unwrap()
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

fn opencode() -> Option<PathBuf> {
    sessionpipe_testkit::harnesses::opencode()
}

fn mock() -> MockChat {
    MockChat::start(vec![Step::bash("echo hello"), Step::text(ANSWER)])
}

fn turn_done(evs: &[Value]) -> bool {
    evs.iter().any(|e| e["type"] == "turn.transcript")
        && evs.iter().any(|e| e["type"] == "turn.ended")
}

#[test]
fn a_real_opencode_turn_becomes_protocol_events_through_the_plugin() {
    let Some(bin) = opencode() else {
        return;
    };
    let api = mock();
    let s = setup(bin, &api, "allow");
    let _daemon = s.daemon();
    s.finish(s.start(false));
    let events = s.sb.wait_until(Duration::from_secs(30), turn_done);
    let lifecycle: Vec<Value> = events
        .iter()
        .filter(|e| e["type"] != "turn.transcript")
        .cloned()
        .collect();
    assert_eq!(
        kinds(&lifecycle),
        [
            "session.started",
            "turn.started",
            "tool.started",
            "tool.ended",
            "turn.ended"
        ],
        "{events:#?}"
    );
    let session = events[0]["session"]["id"].as_str().unwrap();
    assert!(session.starts_with("ses_"), "{session}");
    for e in &events {
        assert_eq!(e["session"]["id"], session);
        assert_eq!(e["harness"]["name"], "opencode");
        assert_eq!(e["harness"]["version"], VERSION);
        assert_eq!(e["session"]["cwd"], "~/work/project");
    }
    let turn = lifecycle[1]["data"]["turn_id"].as_str().unwrap();
    assert!(turn.starts_with("msg_"), "{turn}");
    let call = &api.call_ids()[0];
    assert_eq!(
        lifecycle[2]["data"],
        json!({"tool": "bash", "call_id": call, "turn_id": turn,
               "input": {"command": "echo hello", "description": "Run echo hello"}})
    );
    assert_eq!(lifecycle[3]["data"]["ok"], true);
    assert_eq!(lifecycle[3]["data"]["call_id"], call.as_str());
    assert_eq!(lifecycle[3]["data"]["output"], "hello\n");
    assert_eq!(
        lifecycle[4]["data"],
        json!({"turn_id": turn, "reason": "stop"})
    );

    // Tier 2: the turn's words, from OpenCode's store.
    let words = events
        .iter()
        .find(|e| e["type"] == "turn.transcript")
        .unwrap();
    assert_eq!(words["data"]["user"], ASK);
    assert_eq!(words["data"]["assistant"], ANSWER);
    assert_eq!(words["data"]["turn"], 1);
    // Facts: OpenCode's model; its title is the side request's answer.
    let last = events.last().unwrap();
    assert_eq!(last["session"]["model"], "mock/mock-model");
    assert_eq!(
        last["session"]["title"],
        sessionpipe_testkit::chat::SIDE_TEXT
    );

    // Backfill finds the session in the store (known: it was sent already).
    let backfill = s.sb.sessionpipe(&["backfill", "--json"]);
    let said = String::from_utf8_lossy(&backfill.stdout);
    assert!(backfill.status.success(), "{said}");
    let found: Value = serde_json::from_slice(&backfill.stdout).unwrap();
    let ours = found
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["harness"] == "opencode")
        .unwrap();
    assert_eq!(ours["found"], 1, "{said}");

    // Status says current after OpenCode ran.
    let status = s.sb.sessionpipe(&["status"]);
    let said = String::from_utf8_lossy(&status.stdout);
    assert!(
        said.contains("opencode: current (~/.config/opencode/plugins/sessionpipe.js)"),
        "{said}"
    );

    let how = "opencode run, one bash call";
    s.record("session.created", "session-created", how, |_| true);
    s.record("message.updated", "message-updated-user", how, |_| true);
    s.record("tool.execute.before", "tool-execute-before", how, |_| true);
    s.record("tool.execute.after", "tool-execute-after", how, |_| true);
    s.record("session.idle", "session-idle", how, |_| true);
}

#[test]
fn an_ask_rule_is_an_attention_and_a_stopped_daemon_loses_nothing() {
    let Some(bin) = opencode() else {
        return;
    };
    let api = mock();
    let s = setup(bin, &api, "ask");
    let daemon = s.daemon();
    // The daemon goes as soon as the turn has started: the rest of the run
    // finds no daemon.
    let run = s.start(true);
    s.sb.wait_until(Duration::from_secs(60), |evs| {
        evs.iter().any(|e| e["type"] == "turn.started")
    });
    let (status, _) = daemon.terminate();
    assert!(status.success());
    s.finish(run);
    // The plugin found no daemon and started a drain worker: every event
    // arrives all the same, once.
    let events = s.sb.wait_until(Duration::from_secs(30), turn_done);
    let lifecycle: Vec<Value> = events
        .iter()
        .filter(|e| e["type"] != "turn.transcript")
        .cloned()
        .collect();
    assert_eq!(
        kinds(&lifecycle),
        [
            "session.started",
            "turn.started",
            "tool.started",
            "attention.needed",
            "attention.cleared",
            "tool.ended",
            "turn.ended"
        ],
        "{events:#?}"
    );
    let seqs: Vec<u64> = events
        .iter()
        .map(|e| e["session"]["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>());
    let attention = &lifecycle[3]["data"];
    assert_eq!(attention["kind"], "permission");
    assert_eq!(attention["attention_id"], api.call_ids()[0].as_str());
    assert_eq!(attention["tool"], "bash");
    assert_eq!(attention["message"], "bash echo hello");
    assert_eq!(s.sb.spooled(), 0, "the worker took every job");

    s.record(
        "permission.asked",
        "permission-asked",
        "opencode run --auto under a `bash: ask` rule",
        |_| true,
    );
}
