//! The real GitHub Copilot CLI, offline, end to end: `sessionpipe install` writes
//! our hooks file `~/.copilot/hooks/sessionpipe.json` into a temporary HOME,
//! `copilot -p` runs a whole turn against a scripted chat-completions API on
//! loopback (Copilot's bring-your-own-provider mode, no GitHub sign-in), its real
//! hooks run the real `sessionpipe-hook`, and the daemon turns them into events.
//!
//! Two runs: one `bash` call under `--allow-all-tools` (Copilot still fires
//! `permissionRequest` before it, which must notify nobody; a handler of the
//! person's own beside ours shows it fired), and a run without an allow flag,
//! where Copilot really asks (and, with no one to answer in `-p`, is denied):
//! exactly one `attention.needed`.
//!
//! Copilot CLI comes from the npm registry (`e2e/package.json`). Without it the
//! test says so and passes, unless `SESSIONPIPE_REQUIRE_HARNESSES=1`, where it
//! fails. With `SESSIONPIPE_RECORD_FIXTURES=DIR` it also writes the payloads it
//! saw as conformance fixtures into DIR.

use serde_json::{Value, json};
use sessionpipe_core::conformance::harness::{jobs_in, record_fixtures};
use sessionpipe_core::spool::Job;
use sessionpipe_testkit::chat::{MockChat, Step};
use sessionpipe_testkit::{Sandbox, sandbox::Daemon};
use std::path::{Path, PathBuf};
use std::time::Duration;

const VERSION: &str = "1.0.102";

struct Setup {
    sb: Sandbox,
    copilot: PathBuf,
    path: String,
    archive: PathBuf,
    project: PathBuf,
    /// A file the person's own `permissionRequest` handler touches.
    marker: PathBuf,
    _daemon: Daemon,
}

fn setup() -> Option<Setup> {
    let copilot = sessionpipe_testkit::harnesses::copilot()?;
    let sb = Sandbox::new();
    let archive = sb.root().join("jobs");
    let project = sb.home.join("work/project");
    std::fs::create_dir_all(&project).unwrap();
    // `copilot` on PATH is how the installer finds Copilot in a fresh HOME.
    let path = Sandbox::path_with(copilot.parent().unwrap());
    let install = sb
        .command(sessionpipe_testkit::sandbox::bin("sessionpipe"))
        .env("PATH", &path)
        .args(["install", "--harness", "copilot-cli"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&install.stdout);
    assert!(
        install.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&install.stderr)
    );
    assert_eq!(
        said,
        "copilot-cli: installed (~/.copilot/hooks/sessionpipe.json)\n"
    );

    // The person's own handler for `permissionRequest`, in the same file:
    // kept by us, and the proof that Copilot fired it.
    let file = sb.home.join(".copilot/hooks/sessionpipe.json");
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(doc["version"], 1);
    assert!(doc["hooks"].get("permissionRequest").is_none());
    let marker = sb.root().join("permission-request-fired");
    doc["hooks"]["permissionRequest"] = json!([{"type": "command",
        "bash": format!("touch '{}'", marker.display()), "timeoutSec": 10}]);
    std::fs::write(&file, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let daemon = sb.start_daemon_with(&[("SESSIONPIPE_JOB_ARCHIVE", archive.as_os_str())]);
    let s = Setup {
        sb,
        copilot,
        path,
        archive,
        project,
        marker,
        _daemon: daemon,
    };
    s.assert_current();
    Some(s)
}

impl Setup {
    fn assert_current(&self) {
        let status = self
            .sb
            .command(sessionpipe_testkit::sandbox::bin("sessionpipe"))
            .env("PATH", &self.path)
            .arg("status")
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&status.stdout);
        assert!(
            said.contains("copilot-cli: current (~/.copilot/hooks/sessionpipe.json)"),
            "{said}"
        );
    }

    /// `copilot -p PROMPT FLAGS...` in the project, against `api`.
    fn run(&self, api: &MockChat, prompt: &str, flags: &[&str]) -> std::process::Output {
        self.sb
            .command(&self.copilot)
            .current_dir(&self.project)
            .env("PATH", &self.path)
            .env("SHELL", "/bin/bash")
            .env("COPILOT_OFFLINE", "true")
            .env("COPILOT_PROVIDER_BASE_URL", api.base_url())
            .env("COPILOT_MODEL", "mock-model")
            .args(["-p", prompt])
            .args(flags)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("copilot runs")
    }

    fn jobs(&self) -> Vec<Job> {
        jobs_in(&self.archive).unwrap()
    }

    fn session_events(&self, session: &str) -> Vec<Value> {
        let events = self.sb.wait_until(Duration::from_secs(30), |evs| {
            evs.iter()
                .any(|e| e["type"] == "session.ended" && e["session"]["id"] == session)
        });
        events
            .into_iter()
            .filter(|e| e["session"]["id"] == session)
            .collect()
    }

    fn record(&self, jobs: &[Job], how: &str) {
        if let Ok(dir) = std::env::var("SESSIONPIPE_RECORD_FIXTURES") {
            let how = format!(
                "{how}, against a scripted chat-completions API on loopback, hooks written by `sessionpipe install`"
            );
            record_fixtures(jobs, Path::new(&dir), VERSION, &how).unwrap();
        }
    }
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

/// The session id the run's hooks named.
fn session_of(jobs: &[Job]) -> String {
    let start = jobs
        .iter()
        .find(|j| j.event == "sessionStart")
        .expect("sessionStart fired");
    let p: Value = serde_json::from_slice(&start.payload).unwrap();
    p["sessionId"].as_str().unwrap().to_string()
}

#[test]
fn a_real_copilot_turn_becomes_protocol_events_and_its_permission_request_asks_nobody() {
    let Some(s) = setup() else {
        return;
    };
    let api = MockChat::start(vec![
        Step::bash("echo hello"),
        Step::text("It printed hello."),
    ]);
    let out = s.run(&api, "run echo hello", &["--allow-all-tools"]);
    assert!(
        out.status.success(),
        "copilot failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("It printed hello."));
    let results = api.tool_results();
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results[0].1.contains("hello"), "{results:?}");

    let jobs = s.jobs();
    let session = session_of(&jobs);
    let events = s.session_events(&session);
    assert_eq!(
        kinds(&events),
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
        assert_eq!(e["session"]["cwd"], "~/work/project");
        assert_eq!(e["harness"]["name"], "copilot-cli");
        assert_eq!(e["harness"]["version"], VERSION);
    }
    assert_eq!(events[0]["data"], json!({"source": "startup"}));
    assert_eq!(events[1]["data"], json!({"prompt_chars": 14}));
    assert_eq!(events[2]["data"]["tool"], "bash");
    assert_eq!(events[2]["data"]["input"]["command"], "echo hello");
    assert_eq!(events[3]["data"]["ok"], true);
    assert_eq!(events[3]["data"]["output"]["resultType"], "success");
    assert_eq!(events[4]["data"], json!({"reason": "stop"}));
    assert_eq!(events[5]["data"], json!({"reason": "exit"}));

    // Copilot fired permissionRequest (the person's handler ran) before the
    // tool it ran unasked: nobody was told.
    assert!(s.marker.exists(), "permissionRequest fired");
    assert!(!events.iter().any(|e| e["type"] == "attention.needed"));
    let fired: Vec<&str> = jobs.iter().map(|j| j.event.as_str()).collect();
    assert_eq!(
        fired,
        [
            "sessionStart",
            "userPromptSubmitted",
            "preToolUse",
            "postToolUse",
            "agentStop",
            "sessionEnd"
        ]
    );
    s.assert_current();
    s.record(&jobs, "copilot -p --allow-all-tools, one bash call");
}

#[test]
fn a_real_permission_ask_becomes_one_attention() {
    let Some(s) = setup() else {
        return;
    };
    let api = MockChat::start(vec![
        Step::bash("touch made-by-mock.txt"),
        Step::text("I was not allowed to."),
    ]);
    // No allow flag: Copilot asks, and in `-p` nobody can answer, so it denies.
    let out = s.run(&api, "run touch made-by-mock.txt", &[]);
    assert!(
        !s.project.join("made-by-mock.txt").exists(),
        "the denied command did not run: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let jobs = s.jobs();
    let session = session_of(&jobs);
    let events = s.session_events(&session);
    let asks: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "attention.needed")
        .collect();
    assert_eq!(asks.len(), 1, "{events:#?}");
    assert_eq!(asks[0]["data"]["kind"], "permission");
    assert_eq!(
        asks[0]["data"]["message"],
        "Run command: touch made-by-mock.txt"
    );
    assert!(jobs.iter().any(|j| j.event == "notification"));
    assert!(s.marker.exists(), "permissionRequest fired before the ask");
    let k = kinds(&events);
    let at = |kind: &str| k.iter().position(|x| *x == kind).unwrap();
    assert!(at("tool.started") < at("attention.needed"), "{k:?}");
    assert!(at("attention.needed") < at("turn.ended"), "{k:?}");
    s.record(
        &jobs,
        "copilot -p without an allow flag, a bash call denied",
    );
}
