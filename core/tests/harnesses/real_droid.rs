//! The real Factory Droid, offline, end to end: `sessionpipe install` writes our
//! entries into a temporary HOME's `~/.factory/hooks.json`, the test adds a
//! bring-your-own model in `~/.factory/settings.json` pointing at a scripted
//! chat-completions API on loopback, Droid runs whole turns, its real hooks run
//! the real `sessionpipe-hook`, and the daemon turns them into events. That the
//! hooks fire at all is the proof the file is in the shape Droid reads: the
//! event names at the top level (a `{"hooks": ...}` wrapper Droid ignores in
//! silence).
//!
//! Two runs: `droid exec` with one `Execute` call (exec fires no
//! `UserPromptSubmit`, so the adapter opens the turn), and an ACP session
//! (`droid exec --output-format acp`) whose high-risk command makes Droid ask:
//! the `session/request_permission` it sends is answered here, and its
//! `Notification` hook is exactly one `attention.needed`. And a third, on a
//! machine paired with the workspace receiver: a signed control `prompt`
//! queued while a `droid exec` turn runs reaches its `Stop`, and the model's
//! next request carries it.
//!
//! And three runs whose `Task` calls (`--auto high`, where Droid offers the
//! tool) delegate to subagents, one and then two side by side. Droid runs each
//! as a session of its own, with its own id and every hook from `SessionStart`
//! to `SessionEnd`, whose `SessionStart` alone names the caller: everything
//! they report is `subagent.*` and tool calls with their `agent_id` in the
//! session that ran the task, which is the only session. On a paired machine, a
//! signed `prompt` queued while a subagent runs is not handed to the
//! subagent's own `Stop` but to the session's.
//!
//! Droid comes from the npm registry (`e2e/package.json`). Without it the test
//! says so and passes, unless `SESSIONPIPE_REQUIRE_HARNESSES=1`, where it fails.
//! With `SESSIONPIPE_RECORD_FIXTURES=DIR` it also writes the payloads it saw as
//! conformance fixtures into DIR.

use serde_json::{Value, json};
use sessionpipe_core::conformance::harness::{jobs_in, record_fixtures};
use sessionpipe_core::spool::Job;
use sessionpipe_testkit::chat::{MockChat, Step};
use sessionpipe_testkit::control::{self, Device};
use sessionpipe_testkit::{Sandbox, sandbox::Daemon};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

const VERSION: &str = "0.225.2";
pub(crate) const MODEL: &str = "custom:Mock-0";

pub(crate) struct Setup {
    pub(crate) sb: Sandbox,
    droid: PathBuf,
    path: String,
    archive: PathBuf,
    project: PathBuf,
    /// The paired device and its receiver, on a machine paired for control.
    paired: Option<(Device, sessionpipe_receiver::Handle)>,
    _daemon: Daemon,
}

pub(crate) fn setup(api: &MockChat) -> Option<Setup> {
    setup_with(api, false)
}

/// The sandbox with our hooks installed and `api` as Droid's model; with
/// `paired`, the machine paired with a workspace receiver for control
/// (allowing the project's folder), its daemon polling before this returns.
fn setup_with(api: &MockChat, paired: bool) -> Option<Setup> {
    let droid = sessionpipe_testkit::harnesses::droid()?;
    let sb = Sandbox::new();
    let archive = sb.root().join("jobs");
    let project = sb.home.join("work/project");
    std::fs::create_dir_all(&project).unwrap();
    let path = Sandbox::path_with(droid.parent().unwrap());
    let install = sb
        .command(sessionpipe_testkit::sandbox::bin("sessionpipe"))
        .env("PATH", &path)
        .args(["install", "--harness", "droid"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&install.stdout);
    assert!(
        install.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&install.stderr)
    );
    assert_eq!(said, "droid: installed (~/.factory/hooks.json)\n");
    let hooks: Value =
        serde_json::from_slice(&std::fs::read(sb.home.join(".factory/hooks.json")).unwrap())
            .unwrap();
    assert!(hooks.get("hooks").is_none(), "no wrapper: {hooks}");
    assert!(hooks["PreToolUse"].is_array() && hooks["Stop"].is_array());

    // A bring-your-own model on loopback, and the project trusted.
    let settings = json!({
        "customModels": [{"model": "mock-model", "displayName": "Mock", "baseUrl": api.base_url(),
            "apiKey": "not-a-key", "provider": "generic-chat-completion-api", "maxOutputTokens": 4096}],
        "trustedFolders": [project],
    });
    std::fs::write(sb.home.join(".factory/settings.json"), settings.to_string()).unwrap();
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
        droid,
        path,
        archive,
        project,
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
            said.contains("droid: current (~/.factory/hooks.json)"),
            "{said}"
        );
    }

    pub(crate) fn command(&self) -> std::process::Command {
        let mut c = self.sb.command(&self.droid);
        c.current_dir(&self.project)
            .env("PATH", &self.path)
            .env("SHELL", "/bin/bash")
            .env("FACTORY_AIRGAP_ENABLED", "true");
        c
    }

    pub(crate) fn jobs(&self) -> Vec<Job> {
        jobs_in(&self.archive).unwrap()
    }

    /// The events of `session`, once `done` holds for them.
    fn session_events(&self, session: &str, done: impl Fn(&[&Value]) -> bool) -> Vec<Value> {
        let events = self.sb.wait_until(Duration::from_secs(30), |evs| {
            let ours: Vec<&Value> = evs
                .iter()
                .filter(|e| e["session"]["id"] == session)
                .collect();
            done(&ours)
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

pub(crate) fn session_of(jobs: &[Job]) -> String {
    let start = jobs
        .iter()
        .find(|j| j.event == "SessionStart")
        .expect("SessionStart fired: Droid read our hooks file");
    let p: Value = serde_json::from_slice(&start.payload).unwrap();
    p["session_id"].as_str().unwrap().to_string()
}

pub(crate) fn execute(command: &str, risk: &str) -> Step {
    Step::tool(
        "Execute",
        json!({"command": command, "summary": format!("Run {command}"), "riskLevel": risk,
            "riskLevelReason": "A test's command."}),
    )
}

#[test]
fn a_real_droid_exec_turn_becomes_protocol_events() {
    let api = MockChat::start(vec![
        execute("echo hello", "low"),
        Step::text("It printed hello."),
    ]);
    let Some(s) = setup(&api) else {
        return;
    };
    let out = s
        .command()
        .args(["exec", "-m", MODEL, "run echo hello"])
        .stdin(Stdio::null())
        .output()
        .expect("droid runs");
    assert!(
        out.status.success(),
        "droid failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("It printed hello."));
    let results = api.tool_results();
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results[0].1.contains("hello"), "{results:?}");

    let jobs = s.jobs();
    let session = session_of(&jobs);
    let events = s.session_events(&session, |evs| {
        evs.iter().any(|e| e["type"] == "session.ended")
    });
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
        assert_eq!(e["harness"]["name"], "droid");
    }
    assert_eq!(events[0]["data"], json!({"source": "startup"}));
    assert_eq!(events[1]["data"], json!({}), "exec names no prompt");
    assert_eq!(
        events[2]["data"]["tool"], "Execute",
        "Droid's name, as given"
    );
    assert_eq!(events[2]["data"]["input"]["command"], "echo hello");
    assert_eq!(events[3]["data"]["ok"], true);
    assert!(
        events[3]["data"]["output"]
            .as_str()
            .unwrap()
            .contains("hello")
    );
    assert_eq!(events[4]["data"], json!({"reason": "stop"}));
    let fired: Vec<&str> = jobs.iter().map(|j| j.event.as_str()).collect();
    assert_eq!(
        fired,
        [
            "SessionStart",
            "PreToolUse",
            "PostToolUse",
            "Stop",
            "SessionEnd"
        ]
    );
    s.assert_current();
    s.record(&jobs, "droid exec, one Execute call");
}

/// One JSON-RPC conversation with `droid exec --output-format acp`.
struct Acp {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<Value>,
}

impl Acp {
    fn send(&mut self, v: Value) {
        writeln!(self.stdin, "{v}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Messages until one `pick` takes; panics after 60 s of silence.
    fn until(&mut self, mut pick: impl FnMut(&Value) -> bool) -> Value {
        loop {
            let m = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .expect("droid answers over ACP");
            if pick(&m) {
                return m;
            }
        }
    }
}

#[test]
fn a_real_permission_ask_becomes_one_attention() {
    let api = MockChat::start(vec![
        execute("touch made-by-mock.txt", "high"),
        Step::text("Created it."),
    ]);
    let Some(s) = setup(&api) else {
        return;
    };
    let mut child = s
        .command()
        .args(["exec", "--output-format", "acp", "-m", MODEL])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("droid runs");
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<Value>(&line)
                && tx.send(v).is_err()
            {
                break;
            }
        }
    });
    let mut acp = Acp {
        child,
        stdin,
        lines,
    };
    acp.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false},
        "clientInfo": {"name": "sessionpipe-test", "version": "0"}}}));
    acp.until(|m| m["id"] == 1);
    acp.send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": s.project, "mcpServers": []}}));
    let created = acp.until(|m| m["id"] == 2);
    let session = created["result"]["sessionId"].as_str().unwrap().to_string();
    acp.send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {
        "sessionId": session, "prompt": [{"type": "text", "text": "run touch made-by-mock.txt"}]}}),
    );
    let ask = acp.until(|m| m["method"] == "session/request_permission");
    acp.send(json!({"jsonrpc": "2.0", "id": ask["id"],
        "result": {"outcome": {"outcome": "selected", "optionId": "proceed_once"}}}));
    let done = acp.until(|m| m["id"] == 3);
    assert_eq!(done["result"]["stopReason"], "end_turn");
    assert!(
        s.project.join("made-by-mock.txt").exists(),
        "allowed, it ran"
    );

    let events = s.session_events(&session, |evs| {
        evs.iter().any(|e| e["type"] == "turn.ended")
    });
    let asks: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "attention.needed")
        .collect();
    assert_eq!(asks.len(), 1, "{events:#?}");
    assert_eq!(asks[0]["data"]["kind"], "permission");
    assert_eq!(
        asks[0]["data"]["message"],
        "Factory CLI needs permission to execute 1 tool(s)"
    );
    let k = kinds(&events);
    let at = |kind: &str| k.iter().position(|x| *x == kind).unwrap();
    assert!(at("tool.started") < at("attention.needed"), "{k:?}");
    assert!(at("attention.needed") < at("tool.ended"), "{k:?}");
    assert!(at("tool.ended") < at("turn.ended"), "{k:?}");
    drop(acp.stdin);
    let _ = acp.child.kill();
    let _ = acp.child.wait();
    let jobs = s.jobs();
    assert!(jobs.iter().any(|j| j.event == "Notification"));
    s.record(
        &jobs,
        "droid exec --output-format acp, a high-risk Execute call allowed over ACP",
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

/// A `Task` call that hands `words` to a `worker` subagent, and waits for it.
fn task(words: &str, description: &str) -> Step {
    Step::tool(
        "Task",
        json!({"subagent_type": "worker", "description": description, "prompt": words,
            "await": true}),
    )
}

/// The subagent sessions' `SessionStart` payloads (they name their caller).
fn subagent_starts(jobs: &[Job]) -> Vec<Value> {
    jobs.iter()
        .filter(|j| j.event == "SessionStart")
        .map(|j| serde_json::from_slice::<Value>(&j.payload).unwrap())
        .filter(|p| p.get("calling_session_id").is_some())
        .collect()
}

/// `droid exec --auto high PROMPT` in the project, run to its end.
fn exec_high(s: &Setup, prompt: &str) {
    let out = s
        .command()
        .args(["exec", "-m", MODEL, "--auto", "high", prompt])
        .stdin(Stdio::null())
        .output()
        .expect("droid runs");
    assert!(
        out.status.success(),
        "droid failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_real_droid_subagent_is_reported_in_the_session_that_ran_its_task() {
    let marker = "[[droid-subagent]]";
    let api = MockChat::start_with_agents(
        vec![
            task(
                &format!("{marker} Run echo from-subagent."),
                "Echo in a subagent",
            ),
            Step::text("The subagent printed it."),
        ],
        vec![(
            marker,
            vec![
                execute("echo from-subagent", "low"),
                Step::text("Subagent done."),
            ],
        )],
    );
    let Some(s) = setup(&api) else {
        return;
    };
    exec_high(&s, "Delegate the echo.");
    let jobs = s.jobs();
    let session = session_of(&jobs);
    let starts = subagent_starts(&jobs);
    assert_eq!(starts.len(), 1, "{starts:?}");
    assert_eq!(starts[0]["calling_session_id"], session.as_str());
    let agent = starts[0]["session_id"].as_str().unwrap().to_string();
    assert_ne!(agent, session);
    // The Task's result names the subagent's session too; SubagentStop does not.
    let task_result: Vec<Value> = jobs
        .iter()
        .filter(|j| j.event == "PostToolUse" || j.event == "SubagentStop")
        .map(|j| serde_json::from_slice(&j.payload).unwrap())
        .filter(|p: &Value| p["session_id"] == session.as_str())
        .collect();
    assert_eq!(task_result.len(), 2, "{task_result:?}");
    assert_eq!(task_result[0]["hook_event_name"], "SubagentStop");
    assert_eq!(task_result[0]["task_name"], "Echo in a subagent");
    assert!(
        task_result[1]["tool_response"]
            .as_str()
            .unwrap()
            .contains(&format!("session_id: {agent}"))
    );

    let events = s.session_events(&session, |evs| {
        evs.iter().any(|e| e["type"] == "session.ended")
    });
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
        assert_eq!(e["harness"]["name"], "droid");
    }
    assert_eq!(events[2]["data"]["tool"], "Task");
    assert!(events[2]["data"].get("agent_id").is_none());
    assert_eq!(events[3]["data"], json!({"agent_id": agent}));
    assert_eq!(events[4]["data"]["tool"], "Execute");
    assert_eq!(events[4]["data"]["input"]["command"], "echo from-subagent");
    assert_eq!(events[4]["data"]["agent_id"], agent.as_str());
    assert_eq!(events[5]["data"]["agent_id"], agent.as_str());
    assert_eq!(events[6]["data"], json!({"agent_id": agent}));
    assert_eq!(events[7]["data"]["tool"], "Task");
    assert!(events[7]["data"].get("agent_id").is_none());
    assert_eq!(events[8]["data"], json!({"reason": "stop"}));
    // The subagent's prompt, Stop and end are not the session's turn, and it
    // is no session of its own.
    let all = s.sb.events();
    assert!(
        all.iter().all(|e| e["session"]["id"] == session.as_str()),
        "{all:#?}"
    );
    assert_eq!(sessions_kept(&s), [session]);
    let fired: Vec<&str> = jobs.iter().map(|j| j.event.as_str()).collect();
    assert!(fired.contains(&"SubagentStop"), "{fired:?}");
    assert!(
        fired.contains(&"UserPromptSubmit"),
        "the subagent's prompt fired: {fired:?}"
    );
    s.record(
        &jobs,
        "droid exec --auto high, a Task call whose subagent runs one Execute call",
    );
}

#[test]
fn two_real_droid_subagents_side_by_side_each_start_and_end_once() {
    let (one, two) = ("[[droid-one]]", "[[droid-two]]");
    let api = MockChat::start_with_agents(
        vec![
            Step::Parallel(vec![
                task(&format!("{one} Run echo one."), "Echo one"),
                task(&format!("{two} Run echo two."), "Echo two"),
            ]),
            Step::text("Both printed."),
        ],
        vec![
            // The first one takes longer, so the second ends first.
            (
                one,
                vec![execute("sleep 1; echo one", "low"), Step::text("One done.")],
            ),
            (
                two,
                vec![execute("echo two", "low"), Step::text("Two done.")],
            ),
        ],
    );
    let Some(s) = setup(&api) else {
        return;
    };
    exec_high(&s, "Delegate both echoes.");
    let jobs = s.jobs();
    let session = session_of(&jobs);
    let starts = subagent_starts(&jobs);
    assert_eq!(starts.len(), 2, "{starts:?}");
    let agents: Vec<String> = starts
        .iter()
        .map(|p| p["session_id"].as_str().unwrap().to_string())
        .collect();
    let events = s.session_events(&session, |evs| {
        evs.iter().any(|e| e["type"] == "session.ended")
    });
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["session"]["seq"], i as u64 + 1);
    }
    let of = |kind: &str| -> Vec<String> {
        events
            .iter()
            .filter(|e| e["type"] == kind)
            .map(|e| e["data"]["agent_id"].as_str().unwrap().to_string())
            .collect()
    };
    let mut started = of("subagent.started");
    let mut ended = of("subagent.ended");
    started.sort();
    ended.sort();
    let mut want = agents.clone();
    want.sort();
    assert_eq!((started, ended), (want.clone(), want), "{events:#?}");
    // Each subagent's tool calls come between its start and its end.
    for agent in &agents {
        let at = |kind: &str| {
            events
                .iter()
                .position(|e| e["type"] == kind && e["data"]["agent_id"] == agent.as_str())
                .unwrap()
        };
        assert!(at("subagent.started") < at("tool.started"), "{events:#?}");
        assert!(at("tool.ended") < at("subagent.ended"), "{events:#?}");
    }
    let k = kinds(&events);
    assert_eq!(
        k.iter().filter(|x| **x == "turn.started").count(),
        1,
        "{k:?}"
    );
    let stops = jobs.iter().filter(|j| j.event == "SubagentStop").count();
    assert_eq!(stops, 2);
    assert_eq!(k.last(), Some(&"session.ended"));
    let all = s.sb.events();
    assert!(
        all.iter().all(|e| e["session"]["id"] == session.as_str()),
        "{all:#?}"
    );
    assert_eq!(sessions_kept(&s), [session]);
}

#[test]
fn a_signed_prompt_waits_out_a_subagents_stop_for_its_sessions() {
    let marker = "[[droid-slow-subagent]]";
    let api = MockChat::start_with_agents(
        vec![
            task(&format!("{marker} Run the slow command."), "Slow command"),
            Step::text("First answer."),
            Step::text("The tests pass."),
        ],
        vec![(
            marker,
            vec![execute("sleep 4", "low"), Step::text("Subagent done.")],
        )],
    );
    let Some(s) = setup_with(&api, true) else {
        return;
    };
    let device = &s.paired.as_ref().unwrap().0;
    let child = s
        .command()
        .args([
            "exec",
            "-m",
            MODEL,
            "--auto",
            "high",
            "Delegate the slow command.",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The subagent's command runs: the message comes while it does.
    let running = s.sb.wait_until(Duration::from_secs(60), |evs| {
        evs.iter()
            .any(|e| e["type"] == "tool.started" && e["data"]["agent_id"].is_string())
    });
    let sub_tool = running
        .iter()
        .find(|e| e["type"] == "tool.started" && e["data"]["agent_id"].is_string())
        .expect("the subagent's tool call was reported");
    let session = sub_tool["session"]["id"].as_str().unwrap().to_string();
    let words = "Also run the tests, please.";
    let id = device.enqueue(
        &device.sign(
            "prompt",
            &format!("droid:{session}"),
            json!({"text": words}),
        ),
        120,
    );
    let out = child.wait_with_output().expect("droid ends");
    assert!(
        out.status.success(),
        "droid failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    device.assert_delivered(&id, Duration::from_secs(30), "turn", "The tests pass.");
    // The words reached the session's conversation, never the subagent's.
    let bodies = api.completions();
    let is_subagents = |b: &Value| {
        b["messages"].as_array().is_some_and(|m| {
            m.iter()
                .any(|m| m["role"] == "user" && m.to_string().contains(marker))
        })
    };
    assert!(
        bodies
            .iter()
            .any(|b| !is_subagents(b) && b.to_string().contains(words))
    );
    assert!(
        bodies
            .iter()
            .filter(|b| is_subagents(b))
            .all(|b| !b.to_string().contains(words)),
        "the subagent was handed the message"
    );
    // Its Stop ran and went on; the session's second Stop is the continued turn.
    let stops: Vec<Value> = s
        .jobs()
        .iter()
        .filter(|j| j.event == "Stop")
        .map(|j| serde_json::from_slice(&j.payload).unwrap())
        .collect();
    let of = |id: &str| -> Vec<bool> {
        stops
            .iter()
            .filter(|p| p["session_id"] == id)
            .map(|p| p["stop_hook_active"] == true)
            .collect()
    };
    let agent = sub_tool["data"]["agent_id"].as_str().unwrap();
    assert_eq!(of(agent), [false], "{stops:?}");
    assert_eq!(of(&session), [false, true], "{stops:?}");
    let events = s.session_events(&session, |evs| {
        evs.iter().any(|e| e["type"] == "session.ended")
    });
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
            "turn.started",
            "turn.ended",
            "session.ended"
        ],
        "{events:#?}"
    );
}

/// True when one of the model's requests carries `words`.
fn asked_with(api: &MockChat, words: &str) -> bool {
    sessionpipe_testkit::http::any_body_has(&api.requests(), words)
}

#[test]
fn a_signed_prompt_reaches_a_running_droid_turn_at_its_stop() {
    // The turn runs a slow command, so the message comes while it runs.
    let api = MockChat::start(vec![
        execute("sleep 4", "low"),
        Step::text("First answer."),
        Step::text("The tests pass."),
    ]);
    let Some(s) = setup_with(&api, true) else {
        return;
    };
    let device = &s.paired.as_ref().unwrap().0;
    let child = s
        .command()
        .args(["exec", "-m", MODEL, "Do the thing."])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started =
        s.sb.wait_event_after(0, "tool.started", Duration::from_secs(60));
    let id_of_session = started["session"]["id"].as_str().unwrap().to_string();
    let session = format!("droid:{id_of_session}");
    let words = "Also run the tests, please.";
    let id = device.enqueue(
        &device.sign("prompt", &session, json!({"text": words})),
        120,
    );
    let out = child.wait_with_output().expect("droid ends");
    assert!(
        out.status.success(),
        "droid failed: {}\n{}",
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
    let events = s.session_events(&id_of_session, |evs| {
        evs.iter().any(|e| e["type"] == "session.ended")
    });
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
    // Droid stopped twice: the second `Stop` is the continued turn's, and
    // nothing was waiting for it.
    let stops: Vec<Value> = s
        .jobs()
        .iter()
        .filter(|j| j.event == "Stop")
        .map(|j| serde_json::from_slice(&j.payload).unwrap())
        .collect();
    let active: Vec<&Value> = stops.iter().map(|p| &p["stop_hook_active"]).collect();
    assert_eq!(active, [&json!(false), &json!(true)], "{stops:?}");
}
