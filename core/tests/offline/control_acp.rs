//! Control over ACP through the real daemon and the workspace receiver, with
//! the scripted test agent (testkit's `acp-test-agent`) standing in for an
//! installed agent of the table (`goose`, named by `SESSIONPIPE_ACP_GOOSE`): the
//! hello offers it, a signed `start` runs a session whose reply is the ack, a
//! `prompt` continues the same ACP session in the same process, a `cancel`
//! ends a running turn, an agent that wants a sign-in fails the start in its
//! own words, and stopping the daemon leaves no agent process behind. The
//! error paths each end in their ack within their bound with no process
//! left: a crash mid-turn (`failed`, with what the agent said), an agent that
//! never answers (`failed` at `acp_answer_seconds`), garbage on its stdout
//! (`failed` at once: stdout is the protocol's), and a flood of updates
//! (`delivered`, the reply bounded to its newest words). Standing
//! in for Gemini CLI, a harness with hooks of its own, the session it started
//! is the one its hooks report: under the start's name.

use serde_json::{Value, json};
use sessionpipe_testkit::Sandbox;
use sessionpipe_testkit::control::{self, Device};
use std::path::PathBuf;
use std::time::{Duration, Instant};

struct Machine {
    sb: Sandbox,
    project: PathBuf,
    device: Device,
    _rx: sessionpipe_receiver::Handle,
}

impl Machine {
    fn new() -> Machine {
        let sb = Sandbox::new();
        let project = sb.home.join("work/project");
        std::fs::create_dir_all(&project).unwrap();
        let control::PairedMachine { rx, device } = control::paired_machine(&sb, &project);
        let path = sb.state.join("config.json");
        let mut config: Value = std::fs::read_to_string(&path)
            .ok()
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or_else(|| json!({}));
        config["acp_answer_seconds"] = json!(10);
        std::fs::write(&path, config.to_string()).unwrap();
        Machine {
            sb,
            project,
            device,
            _rx: rx,
        }
    }

    /// Waits (at most 10 s) until no process the agent noted is alive.
    fn all_ended(&self, what: &str) {
        let until = Instant::now() + Duration::from_secs(10);
        while self.pids().iter().any(|p| alive(*p)) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
        }
        let left: Vec<u32> = self.pids().into_iter().filter(|p| alive(*p)).collect();
        assert!(left.is_empty(), "{what}: left behind: {left:?}");
    }

    fn file(&self, name: &str) -> PathBuf {
        self.sb.root().join(name)
    }

    fn daemon(&self, modes: &str) -> sessionpipe_testkit::sandbox::Daemon {
        let agent = sessionpipe_testkit::sandbox::bin("acp-test-agent");
        let (log, pids) = (self.file("agent.jsonl"), self.file("agent.pids"));
        self.sb.start_daemon_with(&[
            ("SESSIONPIPE_ACP_GOOSE", agent.as_os_str()),
            ("SP_TEST_AGENT", modes.as_ref()),
            ("SP_TEST_AGENT_LOG", log.as_os_str()),
            ("SP_TEST_AGENT_PIDS", pids.as_os_str()),
        ])
    }

    fn said(&self) -> Vec<Value> {
        std::fs::read_to_string(self.file("agent.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    fn pids(&self) -> Vec<u32> {
        std::fs::read_to_string(self.file("agent.pids"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    fn start(&self, session: &str, text: &str) -> String {
        self.device.enqueue(
            &self.device.sign_start(session, text, &self.project, &[]),
            60,
        )
    }
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('Z'))
    })
}

/// The final ack of `id`, which must be `delivered` in mode `api`.
fn delivered(device: &Device, id: &str) -> Value {
    let ack = device.final_ack(id, Duration::from_secs(30));
    assert_eq!(
        (ack["outcome"].as_str(), ack["mode"].as_str()),
        (Some("delivered"), Some("api")),
        "{ack}"
    );
    ack
}

const NAME: &str = "7c1e2d3f-4a5b-4c6d-8e7f-a0b1c2d3e4f5";

#[test]
fn a_start_over_acp_answers_in_its_ack_and_a_prompt_continues_the_same_session() {
    let m = Machine::new();
    let daemon = m.daemon("");
    let hello = m.device.wait_hello(Duration::from_secs(20), |h| {
        h["starts"]["goose"].is_object()
    });
    assert_eq!(
        hello["starts"]["goose"]["levels"],
        json!(["safe"]),
        "{hello}"
    );
    assert!(
        hello["harnesses"]
            .as_array()
            .unwrap()
            .contains(&json!("goose"))
    );
    assert!(hello["modes"].as_array().unwrap().contains(&json!("api")));
    let session = format!("goose:{NAME}");
    let id = m.start(&session, "Tidy the folder.");
    let ack = m.device.final_ack(&id, Duration::from_secs(30));
    assert_eq!(
        (
            ack["outcome"].as_str(),
            ack["mode"].as_str(),
            ack["session"].as_str()
        ),
        (Some("delivered"), Some("api"), Some(session.as_str())),
        "{ack}"
    );
    let reply = ack["reply"].as_str().unwrap();
    assert!(reply.starts_with("Echo: Tidy the folder."), "{reply}");

    let id = m.device.enqueue(
        &m.device
            .sign("prompt", &session, json!({"text": "Then the docs."})),
        60,
    );
    let ack = delivered(&m.device, &id);
    assert!(
        ack["reply"].as_str().unwrap().contains("Then the docs."),
        "{ack}"
    );
    let said = m.said();
    let count = |method: &str| said.iter().filter(|x| x["method"] == method).count();
    assert_eq!(count("initialize"), 1, "one process for the session");
    assert_eq!(count("session/new"), 1);
    let prompts: Vec<&Value> = said
        .iter()
        .filter(|x| x["method"] == "session/prompt")
        .collect();
    assert_eq!(prompts.len(), 2);
    assert_eq!(
        prompts[0]["params"]["sessionId"], prompts[1]["params"]["sessionId"],
        "the same ACP session"
    );
    assert_eq!(
        said[1]["params"]["cwd"],
        m.project.to_string_lossy().as_ref()
    );

    // Stopping the daemon ends the agent it held.
    let pids = m.pids();
    assert_eq!(pids.len(), 1);
    daemon.terminate();
    let until = Instant::now() + Duration::from_secs(10);
    while pids.iter().any(|p| alive(*p)) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!pids.iter().any(|p| alive(*p)), "no agent is left behind");
}

#[test]
fn a_cancel_ends_a_running_turn_and_both_are_delivered() {
    let m = Machine::new();
    let _daemon = m.daemon("slow");
    m.device.wait_hello(Duration::from_secs(20), |h| {
        h["starts"]["goose"].is_object()
    });
    let session = format!("goose:{NAME}");
    let start = m.start(&session, "Work for a while.");
    // The turn is running once its first words came back.
    let until = Instant::now() + Duration::from_secs(20);
    while !m.said().iter().any(|x| x["method"] == "session/prompt") && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let cancel = m
        .device
        .enqueue(&m.device.sign("cancel", &session, json!({})), 60);
    let ack = delivered(&m.device, &cancel);
    assert!(ack.get("reply").is_none(), "{ack}");
    let ack = m.device.final_ack(&start, Duration::from_secs(20));
    assert_eq!(ack["outcome"], "delivered", "{ack}");
    let reply = ack["reply"].as_str().unwrap();
    assert!(reply.starts_with("working"), "{reply}");
    assert!(reply.contains("(The turn was cancelled.)"), "{reply}");
    assert!(
        m.said().iter().any(|x| x["method"] == "session/cancel"),
        "through session/cancel"
    );
}

#[test]
fn an_agent_that_wants_a_sign_in_fails_the_start_in_its_own_words() {
    let m = Machine::new();
    let _daemon = m.daemon("auth");
    m.device.wait_hello(Duration::from_secs(20), |h| {
        h["starts"]["goose"].is_object()
    });
    let id = m.start(&format!("goose:{NAME}"), "Tidy the folder.");
    let ack = m.device.final_ack(&id, Duration::from_secs(30));
    assert_eq!(ack["outcome"], "failed", "{ack}");
    let detail = ack["detail"].as_str().unwrap();
    assert!(detail.contains("acp-test-agent login"), "{detail}");
    assert!(detail.contains("terminal"), "{detail}");
    let until = Instant::now() + Duration::from_secs(10);
    while m.pids().iter().any(|p| alive(*p)) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!m.pids().iter().any(|p| alive(*p)), "the agent was ended");
}

/// ADAPTERS.md, Gemini CLI's Control row: a session the daemon started over
/// ACP fires Gemini CLI's hooks under the agent's own id, and its events go
/// under the start's name, the session the ack named. Here the hook is fired
/// without the agent's environment (a terminal resuming the session): the
/// record the start kept is what names it.
#[test]
fn the_hooks_of_a_session_started_over_acp_report_under_the_starts_name() {
    let m = Machine::new();
    let agent = sessionpipe_testkit::sandbox::bin("acp-test-agent");
    let (log, pids) = (m.file("agent.jsonl"), m.file("agent.pids"));
    let _daemon = m.sb.start_daemon_with(&[
        ("SESSIONPIPE_ACP_GEMINI_CLI", agent.as_os_str()),
        ("SP_TEST_AGENT_LOG", log.as_os_str()),
        ("SP_TEST_AGENT_PIDS", pids.as_os_str()),
    ]);
    m.device.wait_hello(Duration::from_secs(20), |h| {
        h["starts"]["gemini-cli"].is_object()
    });
    let session = format!("gemini-cli:{NAME}");
    let id = m.start(&session, "Tidy the folder.");
    let ack = delivered(&m.device, &id);
    assert_eq!(ack["session"], session.as_str(), "{ack}");
    // The test agent names its first session `ta-<pid>-1`.
    let own = format!("ta-{}-1", m.pids()[0]);
    for (event, extra) in [
        ("SessionStart", json!({"source": "resume"})),
        ("BeforeAgent", json!({"prompt": "And the docs."})),
    ] {
        let mut payload = json!({"session_id": own, "transcript_path": "/nowhere/chat.jsonl",
                                 "cwd": m.project, "hook_event_name": event});
        payload
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let out =
            m.sb.hook("gemini-cli", event, payload.to_string().as_bytes());
        assert!(out.status.success(), "{out:?}");
    }
    let events = m.sb.wait_until(Duration::from_secs(30), |evs| {
        evs.iter().any(|e| e["type"] == "turn.started")
    });
    let seen: Vec<(&str, &str, u64)> = events
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap(),
                e["session"]["id"].as_str().unwrap(),
                e["session"]["seq"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [("session.started", NAME, 1), ("turn.started", NAME, 2)],
        "one session, the start's"
    );
}

/// A start whose agent fails in one of its ways: the final ack, and how long
/// it took from the start's enqueue.
fn failing_start(m: &Machine, mode: &str) -> (Value, Duration) {
    let _daemon = m.daemon(mode);
    m.device.wait_hello(Duration::from_secs(20), |h| {
        h["starts"]["goose"].is_object()
    });
    let t = Instant::now();
    let id = m.start(&format!("goose:{NAME}"), "Tidy the folder.");
    let ack = m.device.final_ack(&id, Duration::from_secs(120));
    let took = t.elapsed();
    m.all_ended(mode);
    (ack, took)
}

#[test]
fn an_agent_that_crashes_mid_turn_fails_the_start_with_what_it_said() {
    let m = Machine::new();
    let (ack, _) = failing_start(&m, "crash");
    assert_eq!(ack["outcome"], "failed", "{ack}");
    let detail = ack["detail"].as_str().unwrap();
    assert!(detail.contains("the model went away"), "{detail}");
}

#[test]
fn an_agent_that_never_answers_fails_the_start_within_its_bound() {
    let m = Machine::new();
    // acp_answer_seconds is 10 here.
    let (ack, took) = failing_start(&m, "silent");
    assert_eq!(ack["outcome"], "failed", "{ack}");
    assert!(took < Duration::from_secs(60), "{took:?}");
}

#[test]
fn an_agent_that_writes_garbage_fails_the_start_at_once() {
    let m = Machine::new();
    let (ack, took) = failing_start(&m, "malformed");
    assert_eq!(ack["outcome"], "failed", "{ack}");
    let detail = ack["detail"].as_str().unwrap();
    assert!(detail.contains("broke the protocol"), "{detail}");
    assert!(took < Duration::from_secs(30), "{took:?}");
}

#[test]
fn a_flood_of_updates_is_delivered_as_a_bounded_reply() {
    let m = Machine::new();
    let daemon = m.daemon("flood");
    m.device.wait_hello(Duration::from_secs(20), |h| {
        h["starts"]["goose"].is_object()
    });
    let id = m.start(&format!("goose:{NAME}"), "Say a lot.");
    let ack = delivered(&m.device, &id);
    let reply = ack["reply"].as_str().unwrap();
    // 20 000 chunks of 1 000 characters: the newest words only, bounded.
    assert!(reply.chars().count() <= 20_000, "{}", reply.len());
    assert!(
        reply.ends_with(&"x".repeat(100)),
        "the newest words are kept"
    );
    daemon.terminate();
    m.all_ended("flood");
}
