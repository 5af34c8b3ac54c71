//! The real GitHub Copilot CLI, offline, end to end: `sessionpipe install` writes
//! our hooks file `~/.copilot/hooks/sessionpipe.json` into a temporary HOME,
//! `copilot -p` runs a whole turn against a scripted chat-completions API on
//! loopback (Copilot's bring-your-own-provider mode, no GitHub sign-in), its real
//! hooks run the real `sessionpipe-hook`, and the daemon turns them into events.
//!
//! Three runs: one `bash` call under `--allow-all-tools` (Copilot still fires
//! `permissionRequest` before it, which must notify nobody; a handler of the
//! person's own beside ours shows it fired), a run without an allow flag,
//! where Copilot really asks (and, with no one to answer in `-p`, is denied):
//! exactly one `attention.needed`, and a run on a machine paired with the
//! workspace receiver, where a signed control `prompt` queued while the turn
//! runs reaches its `agentStop` and the model's next request carries it.
//!
//! Copilot CLI comes from the npm registry (`e2e/package.json`). Without it the
//! test says so and passes, unless `SESSIONPIPE_REQUIRE_HARNESSES=1`, where it
//! fails. With `SESSIONPIPE_RECORD_FIXTURES=DIR` it also writes the payloads it
//! saw as conformance fixtures into DIR.

use serde_json::{Value, json};
use sessionpipe_core::conformance::harness::{jobs_in, record_fixtures};
use sessionpipe_core::spool::Job;
use sessionpipe_testkit::chat::{MockChat, Step};
use sessionpipe_testkit::control::{self, Device};
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
    /// The paired device and its receiver, on a machine paired for control.
    paired: Option<(Device, sessionpipe_receiver::Handle)>,
    _daemon: Daemon,
}

fn setup() -> Option<Setup> {
    setup_with(false)
}

/// The sandbox with our hooks installed; with `paired`, the machine paired
/// with a workspace receiver for control (allowing the project's folder),
/// its daemon polling before this returns.
fn setup_with(paired: bool) -> Option<Setup> {
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
    let paired = paired.then(|| {
        let control::PairedMachine { rx, device } = control::paired_machine(&sb, &project);
        (device, rx)
    });
    let daemon = sb.start_daemon_with(&[("SESSIONPIPE_JOB_ARCHIVE", archive.as_os_str())]);
    if let Some((device, _)) = &paired {
        // The daemon polls once it said hello.
        device.wait_hello(Duration::from_secs(15), |h| h.is_object());
    }
    let s = Setup {
        sb,
        copilot,
        path,
        archive,
        project,
        marker,
        paired,
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

    /// `copilot -p PROMPT FLAGS...` in the project, against `api`, run to its end.
    fn run(&self, api: &MockChat, prompt: &str, flags: &[&str]) -> std::process::Output {
        self.command(api, prompt, flags)
            .output()
            .expect("copilot runs")
    }

    /// `copilot -p PROMPT FLAGS...` in the project, against `api`.
    fn command(&self, api: &MockChat, prompt: &str, flags: &[&str]) -> std::process::Command {
        let mut c = self.sb.command(&self.copilot);
        c.current_dir(&self.project)
            .env("PATH", &self.path)
            .env("SHELL", "/bin/bash")
            .env("COPILOT_OFFLINE", "true")
            .env("COPILOT_PROVIDER_BASE_URL", api.base_url())
            .env("COPILOT_MODEL", "mock-model")
            .args(["-p", prompt])
            .args(flags)
            .stdin(std::process::Stdio::null());
        c
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

/// True when one of the model's requests carries `words`.
fn asked_with(api: &MockChat, words: &str) -> bool {
    sessionpipe_testkit::http::any_body_has(&api.requests(), words)
}

#[test]
fn a_signed_prompt_reaches_a_running_copilot_turn_at_its_agent_stop() {
    let Some(s) = setup_with(true) else {
        return;
    };
    let device = &s.paired.as_ref().unwrap().0;
    // The turn runs a slow command, so the message comes while it runs.
    let api = MockChat::start(vec![
        Step::bash("sleep 4"),
        Step::text("First answer."),
        Step::text("The tests pass."),
    ]);
    let child = s
        .command(&api, "Do the thing.", &["--allow-all-tools"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started =
        s.sb.wait_event_after(0, "tool.started", Duration::from_secs(60));
    let session = format!("copilot-cli:{}", started["session"]["id"].as_str().unwrap());
    let words = "Also run the tests, please.";
    let id = device.enqueue(
        &device.sign("prompt", &session, json!({"text": words})),
        120,
    );
    let out = child.wait_with_output().expect("copilot ends");
    assert!(
        out.status.success(),
        "copilot failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Acked with the reply of the turn that answered it, read from the
    // session's own transcript.
    device.assert_delivered(&id, Duration::from_secs(30), "turn", "The tests pass.");
    // The model's next request carries the framed message, and the turn went
    // on to answer it.
    assert!(asked_with(&api, words), "no request carried the message");
    assert!(asked_with(&api, control::FRAMED), "not framed");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("The tests pass."), "{said}");
    let events = s.session_events(started["session"]["id"].as_str().unwrap());
    // The turn the message continued ends, and its continuation is a turn of
    // its own.
    assert_eq!(
        kinds(&events),
        [
            "session.started",
            "turn.started",
            "tool.started",
            "tool.ended",
            "turn.ended",
            "turn.started",
            "turn.ended",
            "session.ended"
        ],
        "{events:#?}"
    );
    // Copilot stopped twice: the second `agentStop` is the continued turn's,
    // and nothing was waiting for it.
    let stops: Vec<Value> = s
        .jobs()
        .iter()
        .filter(|j| j.event == "agentStop")
        .map(|j| serde_json::from_slice(&j.payload).unwrap())
        .collect();
    let active: Vec<&Value> = stops.iter().map(|p| &p["stop_hook_active"]).collect();
    assert_eq!(active, [&json!(false), &json!(true)], "{stops:?}");
}
