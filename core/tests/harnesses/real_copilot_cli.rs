//! The real GitHub Copilot CLI, offline, end to end: `sessionpipe install` writes
//! our hooks file `~/.copilot/hooks/sessionpipe.json` into a temporary HOME,
//! `copilot -p` runs a whole turn against a scripted chat-completions API on
//! loopback (Copilot's bring-your-own-provider mode, no GitHub sign-in), its real
//! hooks run the real `sessionpipe-hook`, and the daemon turns them into events.
//!
//! Five runs: one `bash` call under `--allow-all-tools` (Copilot still fires
//! `permissionRequest` before it, which must notify nobody; a handler of the
//! person's own beside ours shows it fired), a run without an allow flag,
//! where Copilot really asks (and, with no one to answer in `-p`, is denied):
//! exactly one `attention.needed`, a run on a machine paired with the
//! workspace receiver, where a signed control `prompt` queued while the turn
//! runs reaches its `agentStop` and the model's next request carries it, and
//! two runs whose `task` call delegates to a subagent (and, in the second, that
//! subagent to one of its own): the subagents' hooks fire under their own ids,
//! and everything they report is `subagent.*` and tool calls with their
//! `agent_id` in the session that ran the task, which is the only session.
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

pub(crate) struct Setup {
    pub(crate) sb: Sandbox,
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

pub(crate) fn setup() -> Option<Setup> {
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
    pub(crate) fn run(&self, api: &MockChat, prompt: &str, flags: &[&str]) -> std::process::Output {
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

    pub(crate) fn jobs(&self) -> Vec<Job> {
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
pub(crate) fn session_of(jobs: &[Job]) -> String {
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

/// The ids of the sessions the outbox keeps a record of.
fn sessions_kept(s: &Setup) -> Vec<String> {
    let outbox =
        sessionpipe_core::pipeline::outbox::Outbox::open_readonly(&s.sb.state.join("outbox.db"))
            .unwrap()
            .expect("the daemon made its outbox");
    outbox
        .sessions()
        .unwrap()
        .into_iter()
        .map(|(_, id, _)| id)
        .collect()
}

/// A `task` call that hands `words` to a subagent of `agent_type`, and waits.
fn task(words: &str, agent_type: &str) -> Step {
    Step::tool(
        "task",
        json!({"name": "helper", "prompt": words, "agent_type": agent_type,
            "description": "Delegate the echo", "mode": "sync"}),
    )
}

/// The payloads of the calls of `event`, in order.
fn payloads(jobs: &[Job], event: &str) -> Vec<Value> {
    jobs.iter()
        .filter(|j| j.event == event)
        .map(|j| serde_json::from_slice(&j.payload).unwrap())
        .collect()
}

#[test]
fn a_real_copilot_subagent_is_reported_in_the_session_that_ran_its_task() {
    let Some(s) = setup() else {
        return;
    };
    let marker = "[[subagent-one]]";
    let api = MockChat::start_with_agents(
        vec![
            task(&format!("{marker} Run echo from-subagent."), "task"),
            Step::text("The subagent printed it."),
        ],
        vec![(
            marker,
            vec![
                Step::bash("echo from-subagent"),
                Step::text("Subagent done."),
            ],
        )],
    );
    let out = s.run(&api, "Delegate the echo.", &["--allow-all-tools"]);
    assert!(
        out.status.success(),
        "copilot failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("The subagent printed it."));
    let results = api.tool_results();
    assert!(
        results.iter().any(|(_, r)| r.contains("from-subagent")),
        "{results:?}"
    );

    let jobs = s.jobs();
    let session = session_of(&jobs);
    let start = &payloads(&jobs, "subagentStart")[0];
    let agent = start["agentId"].as_str().unwrap().to_string();
    assert_ne!(agent, session);
    assert_eq!(start["sessionId"], session.as_str());
    // The subagent's own hooks fire under its own id, naming the session as
    // its parent.
    let own = &payloads(&jobs, "preToolUse")[1];
    assert_eq!(
        (own["sessionId"].as_str(), own["parentAgentId"].as_str()),
        (Some(agent.as_str()), Some(session.as_str()))
    );
    assert!(
        payloads(&jobs, "userPromptSubmitted")
            .iter()
            .any(|p| p["sessionId"] == agent.as_str())
    );
    assert!(
        payloads(&jobs, "agentStop")
            .iter()
            .any(|p| p["sessionId"] == agent.as_str())
    );

    let events = s.session_events(&session);
    assert_eq!(
        kinds(&events),
        [
            "session.started",
            "turn.started",
            "tool.started",
            "subagent.started",
            "tool.started",
            "tool.ended",
            "subagent.ended",
            "tool.ended",
            "turn.ended",
            "session.ended"
        ],
        "{events:#?}"
    );
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["session"]["seq"], i as u64 + 1);
        assert_eq!(e["harness"]["name"], "copilot-cli");
    }
    assert_eq!(events[2]["data"]["tool"], "task");
    assert!(events[2]["data"].get("agent_id").is_none());
    let named = json!({"agent_id": agent, "agent_type": "task"});
    assert_eq!(events[3]["data"], named);
    assert_eq!(events[4]["data"]["tool"], "bash");
    assert_eq!(events[4]["data"]["input"]["command"], "echo from-subagent");
    assert_eq!(events[4]["data"]["agent_id"], agent.as_str());
    assert_eq!(events[5]["data"]["agent_id"], agent.as_str());
    assert_eq!(events[5]["data"]["ok"], true);
    assert_eq!(events[6]["data"], named);
    assert_eq!(events[7]["data"]["tool"], "task");
    assert!(events[7]["data"].get("agent_id").is_none());
    assert_eq!(events[8]["data"], json!({"reason": "stop"}));

    // The subagent's prompt and stop are not the session's turn, and it is no
    // session of its own.
    let all = s.sb.events();
    assert!(
        all.iter().all(|e| e["session"]["id"] == session.as_str()),
        "{all:#?}"
    );
    assert_eq!(sessions_kept(&s), [session]);
    s.record(
        &jobs,
        "copilot -p --allow-all-tools, a task call whose subagent runs one bash call",
    );
}

#[test]
fn a_real_nested_copilot_subagent_reports_in_the_first_session_too() {
    let Some(s) = setup() else {
        return;
    };
    let (outer, inner) = ("[[agent-outer]]", "[[agent-inner]]");
    let api = MockChat::start_with_agents(
        vec![
            task(
                &format!("{outer} Delegate the echo further."),
                "general-purpose",
            ),
            Step::text("All done."),
        ],
        vec![
            (
                outer,
                vec![
                    task(&format!("{inner} Run echo from-inner."), "general-purpose"),
                    Step::text("Outer done."),
                ],
            ),
            (
                inner,
                vec![Step::bash("echo from-inner"), Step::text("Inner done.")],
            ),
        ],
    );
    let out = s.run(
        &api,
        "Delegate the echo twice over.",
        &["--allow-all-tools"],
    );
    assert!(
        out.status.success(),
        "copilot failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let jobs = s.jobs();
    let session = session_of(&jobs);
    let starts = payloads(&jobs, "subagentStart");
    assert_eq!(starts.len(), 2, "{starts:?}");
    let first = starts[0]["agentId"].as_str().unwrap().to_string();
    let second = starts[1]["agentId"].as_str().unwrap().to_string();
    // The inner subagent names only the outer one as its parent; its start
    // names the session by its transcript alone.
    assert_eq!(starts[1]["parentAgentId"], first.as_str());
    assert_ne!(starts[1]["sessionId"], session.as_str());
    assert!(
        starts[1]["transcriptPath"]
            .as_str()
            .unwrap()
            .ends_with(&format!("session-state/{session}/events.jsonl"))
    );

    let events = s.session_events(&session);
    assert_eq!(
        kinds(&events),
        [
            "session.started",
            "turn.started",
            "tool.started",
            "subagent.started",
            "tool.started",
            "subagent.started",
            "tool.started",
            "tool.ended",
            "subagent.ended",
            "tool.ended",
            "subagent.ended",
            "tool.ended",
            "turn.ended",
            "session.ended"
        ],
        "{events:#?}"
    );
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["session"]["seq"], i as u64 + 1);
    }
    let agent = |i: usize| events[i]["data"]["agent_id"].as_str().map(str::to_string);
    assert_eq!(agent(2), None, "the session's own task call");
    assert_eq!(agent(3).as_deref(), Some(first.as_str()));
    assert_eq!(
        (events[4]["data"]["tool"].as_str(), agent(4).as_deref()),
        (Some("task"), Some(first.as_str()))
    );
    assert_eq!(agent(5).as_deref(), Some(second.as_str()));
    assert_eq!(
        (events[6]["data"]["tool"].as_str(), agent(6).as_deref()),
        (Some("bash"), Some(second.as_str()))
    );
    assert_eq!(agent(7).as_deref(), Some(second.as_str()));
    assert_eq!(agent(8).as_deref(), Some(second.as_str()));
    assert_eq!(agent(9).as_deref(), Some(first.as_str()));
    assert_eq!(agent(10).as_deref(), Some(first.as_str()));
    assert_eq!(agent(11), None);
    let all = s.sb.events();
    assert!(
        all.iter().all(|e| e["session"]["id"] == session.as_str()),
        "{all:#?}"
    );
    assert_eq!(sessions_kept(&s), [session]);
    s.record(&jobs, "copilot -p --allow-all-tools, a task call whose subagent hands a bash call to a subagent of its own");
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
