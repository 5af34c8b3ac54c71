//! The ACP client against the scripted test agent (testkit's `acp-test-agent`),
//! one behaviour per test: a whole turn and what the client said, permissions
//! by mode (asked with JSON-RPC id 0), a cancel, a reopened session whose
//! replayed history is not the reply, a request the client does not offer,
//! and the error paths: authentication required, a crash mid-turn, malformed
//! output, an agent that never answers, one that floods updates, one that
//! will not exit, and one whose tool runs in a session of its own (as
//! OpenCode's and Gemini CLI's shells do), ended by a stop and by a drop
//! mid-turn. Each ends within its bound and leaves no process behind.
//! Module `recorded` replays the real agents' recorded conversations
//! (`conformance/acp`) through the client's line classification and turn.

use sessionpipe_acp::{AcpError, Agent, Bounds, Launch, Mode};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

struct Scripted {
    dir: tempfile::TempDir,
}

impl Scripted {
    fn new() -> Scripted {
        Scripted {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn launch(&self, modes: &str) -> Launch {
        let d = self.dir.path();
        Launch {
            program: sessionpipe_testkit::sandbox::bin("acp-test-agent"),
            args: Vec::new(),
            cwd: d.to_path_buf(),
            env: vec![
                ("SP_TEST_AGENT".into(), modes.into()),
                (
                    "SP_TEST_AGENT_LOG".into(),
                    self.log().to_string_lossy().into(),
                ),
                (
                    "SP_TEST_AGENT_PIDS".into(),
                    self.pids_file().to_string_lossy().into(),
                ),
            ],
        }
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("said.jsonl")
    }

    fn pids_file(&self) -> PathBuf {
        self.dir.path().join("pids")
    }

    /// What the client wrote to the agent, message by message.
    fn said(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.log())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Every process the agent said it was (itself, and a child it started).
    fn pids(&self) -> Vec<u32> {
        std::fs::read_to_string(self.pids_file())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    fn cwd(&self) -> &Path {
        self.dir.path()
    }
}

fn bounds(answer_ms: u64) -> Bounds {
    Bounds {
        answer: Duration::from_millis(answer_ms),
        grace: Duration::from_millis(500),
    }
}

/// True while `pid` is a live process (a zombie counts as gone: nothing runs).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// A process's group and session (`/proc/<pid>/stat`'s fifth and sixth
/// fields).
#[cfg(target_os = "linux")]
fn group_and_session(pid: u32) -> (i32, i32) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    (rest[2].parse().unwrap(), rest[3].parse().unwrap())
}

fn assert_all_gone(s: &Scripted) {
    let pids = s.pids();
    assert!(!pids.is_empty(), "the agent said who it was");
    let until = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|p| alive(*p)) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    for p in pids {
        assert!(!alive(p), "process {p} is left behind");
    }
}

fn grew() -> tokio::sync::watch::Sender<u64> {
    tokio::sync::watch::channel(0).0
}

#[tokio::test]
async fn a_turn_runs_and_the_client_says_exactly_what_acp_asks() {
    let s = Scripted::new();
    let agent = Agent::start(&s.launch(""), bounds(10_000)).await.unwrap();
    assert!(agent.can_load());
    let session = agent.new_session(s.cwd()).await.unwrap();
    let end = agent
        .prompt(&session, "hello", Mode::Safe, grew())
        .await
        .unwrap();
    assert_eq!(end.stop, "end_turn");
    assert_eq!(end.reply, "Echo: hello");
    assert_eq!(end.tools.len(), 1);
    assert_eq!(end.tools[0].status, "completed");
    agent.stop().await;
    let said = s.said();
    let init = &said[0];
    assert_eq!(init["method"], "initialize");
    assert_eq!(init["params"]["protocolVersion"], 1);
    assert_eq!(
        init["params"]["clientCapabilities"]["fs"],
        serde_json::json!({"readTextFile": false, "writeTextFile": false})
    );
    assert_eq!(init["params"]["clientCapabilities"]["terminal"], false);
    assert_eq!(init["params"]["clientInfo"]["name"], "sessionpipe");
    let new = &said[1];
    assert_eq!(new["method"], "session/new");
    assert_eq!(new["params"]["cwd"], s.cwd().to_string_lossy().as_ref());
    assert_eq!(new["params"]["mcpServers"], serde_json::json!([]));
    let prompt = &said[2];
    assert_eq!(
        prompt["params"]["prompt"],
        serde_json::json!([{"type": "text", "text": "hello"}])
    );
    assert_all_gone(&s);
}

#[tokio::test]
async fn a_permission_asked_with_id_zero_is_refused_in_safe_and_allowed_once_in_auto() {
    for (mode, chose) in [(Mode::Safe, "reject-once"), (Mode::Auto, "allow-once")] {
        let s = Scripted::new();
        let agent = Agent::start(&s.launch("permission"), bounds(10_000))
            .await
            .unwrap();
        let session = agent.new_session(s.cwd()).await.unwrap();
        let end = agent
            .prompt(&session, "touch it", mode, grew())
            .await
            .unwrap();
        assert!(
            end.reply.contains(&format!("permission: {chose}")),
            "{end:?}"
        );
        assert_eq!(end.refused.is_empty(), mode == Mode::Auto, "{end:?}");
        agent.stop().await;
        let answer = s
            .said()
            .into_iter()
            .find(|m| m["id"] == 0 && m.get("result").is_some())
            .expect("the request with id 0 was answered");
        assert_eq!(answer["result"]["outcome"]["optionId"], chose);
        assert_all_gone(&s);
    }
}

#[tokio::test]
async fn a_cancel_ends_the_running_turn_as_cancelled() {
    let s = Scripted::new();
    let agent = std::sync::Arc::new(
        Agent::start(&s.launch("slow"), bounds(10_000))
            .await
            .unwrap(),
    );
    let session = agent.new_session(s.cwd()).await.unwrap();
    let (tx, mut rx) = tokio::sync::watch::channel(0);
    let turn = {
        let (agent, session) = (agent.clone(), session.clone());
        tokio::spawn(async move { agent.prompt(&session, "work", Mode::Safe, tx).await })
    };
    rx.changed().await.unwrap();
    assert_eq!(agent.reply_so_far(&session).as_deref(), Some("working"));
    assert!(agent.running(&session));
    agent.cancel(&session).await.unwrap();
    let end = tokio::time::timeout(Duration::from_secs(10), turn)
        .await
        .expect("the turn ends soon after its cancel")
        .unwrap()
        .unwrap();
    assert_eq!(end.stop, "cancelled");
    assert!(!agent.running(&session));
    agent.stop().await;
    assert_all_gone(&s);
}

#[tokio::test]
async fn a_reopened_session_replays_its_history_and_the_next_reply_is_only_the_turns() {
    let s = Scripted::new();
    let first = Agent::start(&s.launch(""), bounds(10_000)).await.unwrap();
    let session = first.new_session(s.cwd()).await.unwrap();
    first
        .prompt(&session, "one", Mode::Safe, grew())
        .await
        .unwrap();
    first.stop().await;
    let again = Agent::start(&s.launch(""), bounds(10_000)).await.unwrap();
    again.load_session(&session, s.cwd()).await.unwrap();
    let end = again
        .prompt(&session, "two", Mode::Safe, grew())
        .await
        .unwrap();
    assert_eq!(end.reply, "Echo: two");
    again.stop().await;
    assert_all_gone(&s);
}

#[tokio::test]
async fn a_request_the_client_does_not_offer_is_method_not_found_and_the_turn_goes_on() {
    let s = Scripted::new();
    let agent = Agent::start(&s.launch("nonstandard"), bounds(10_000))
        .await
        .unwrap();
    let session = agent.new_session(s.cwd()).await.unwrap();
    let end = agent
        .prompt(&session, "hi", Mode::Safe, grew())
        .await
        .unwrap();
    assert_eq!(end.reply, "Echo: hi");
    agent.stop().await;
    let refused = s
        .said()
        .into_iter()
        .find(|m| m.get("error").is_some())
        .expect("the agent's request was answered");
    assert_eq!(refused["error"]["code"], -32601);
}

#[tokio::test]
async fn an_agent_that_wants_a_sign_in_is_refused_in_its_own_words() {
    let s = Scripted::new();
    let agent = Agent::start(&s.launch("auth"), bounds(10_000))
        .await
        .unwrap();
    let err = agent.new_session(s.cwd()).await.unwrap_err();
    assert!(matches!(err, AcpError::AuthRequired { .. }), "{err:?}");
    assert!(err.to_string().contains("acp-test-agent login"), "{err}");
    agent.stop().await;
    assert_all_gone(&s);
}

#[tokio::test]
async fn a_crash_mid_turn_fails_with_what_the_agent_said() {
    let s = Scripted::new();
    let agent = Agent::start(&s.launch("crash"), bounds(10_000))
        .await
        .unwrap();
    let session = agent.new_session(s.cwd()).await.unwrap();
    let err = agent
        .prompt(&session, "hi", Mode::Safe, grew())
        .await
        .unwrap_err();
    let words = err.to_string();
    assert!(words.contains("fatal: the model went away"), "{words}");
    assert!(words.contains('3'), "its exit status: {words}");
    assert!(agent.ended());
    agent.stop().await;
    assert_all_gone(&s);
}

#[tokio::test]
async fn malformed_output_ends_the_turn_at_once() {
    let s = Scripted::new();
    let agent = Agent::start(&s.launch("malformed"), bounds(10_000))
        .await
        .unwrap();
    let session = agent.new_session(s.cwd()).await.unwrap();
    let err = tokio::time::timeout(
        Duration::from_secs(10),
        agent.prompt(&session, "hi", Mode::Safe, grew()),
    )
    .await
    .expect("not left waiting")
    .unwrap_err();
    assert!(matches!(err, AcpError::Broke(_)), "{err:?}");
    assert!(err.to_string().contains("this is not json"), "{err}");
    agent.stop().await;
    assert_all_gone(&s);
}

#[tokio::test]
async fn an_agent_that_never_answers_is_given_up_on_within_the_bound() {
    let s = Scripted::new();
    let began = Instant::now();
    let err = Agent::start(&s.launch("silent"), bounds(1_000))
        .await
        .err()
        .expect("no answer, no agent");
    assert!(matches!(err, AcpError::NoAnswer { .. }), "{err:?}");
    assert!(began.elapsed() < Duration::from_secs(5));
    // Dropping the half-started agent ended its process group.
    assert_all_gone(&s);
}

#[tokio::test]
async fn a_flood_of_updates_is_taken_in_bounded_memory() {
    let s = Scripted::new();
    let agent = Agent::start(&s.launch("flood"), bounds(10_000))
        .await
        .unwrap();
    let session = agent.new_session(s.cwd()).await.unwrap();
    let end = tokio::time::timeout(
        Duration::from_secs(60),
        agent.prompt(&session, "go", Mode::Safe, grew()),
    )
    .await
    .expect("a flood ends")
    .unwrap();
    assert_eq!(end.stop, "end_turn");
    assert!(end.reply.starts_with('…'), "the oldest part was dropped");
    assert!(end.reply.len() <= sessionpipe_acp::turn::MAX_REPLY + 3);
    agent.stop().await;
    assert_all_gone(&s);
}

#[tokio::test]
async fn an_agent_that_ignores_its_closed_stdin_and_its_children_are_ended() {
    let s = Scripted::new();
    let agent = Agent::start(&s.launch("child,stubborn"), bounds(10_000))
        .await
        .unwrap();
    assert_eq!(s.pids().len(), 2, "the agent and the child it started");
    let began = Instant::now();
    agent.stop().await;
    assert!(began.elapsed() < Duration::from_secs(5));
    assert_all_gone(&s);
}

/// The agent and a tool it started with `setsid`: neither its group nor its
/// session is the agent's, so only the walk of the agent's descendants
/// reaches it.
#[cfg(target_os = "linux")]
fn assert_detached(s: &Scripted) {
    let pids = s.pids();
    assert_eq!(pids.len(), 2, "the agent and the tool it started");
    let (agent, tool) = (group_and_session(pids[0]), group_and_session(pids[1]));
    assert_ne!(agent.0, tool.0, "the tool is in a group of its own");
    assert_ne!(agent.1, tool.1, "the tool is in a session of its own");
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_tool_in_a_session_of_its_own_is_ended_with_a_stopped_agent() {
    let s = Scripted::new();
    let agent = Agent::start(&s.launch("detached"), bounds(10_000))
        .await
        .unwrap();
    assert_detached(&s);
    let session = agent.new_session(s.cwd()).await.unwrap();
    agent
        .prompt(&session, "hi", Mode::Safe, grew())
        .await
        .unwrap();
    agent.stop().await;
    assert_all_gone(&s);
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_tool_in_a_session_of_its_own_is_ended_with_an_agent_dropped_mid_turn() {
    let s = Scripted::new();
    let agent = Agent::start(&s.launch("detached,slow"), bounds(10_000))
        .await
        .unwrap();
    assert_detached(&s);
    let session = agent.new_session(s.cwd()).await.unwrap();
    let (tx, mut rx) = tokio::sync::watch::channel(0);
    {
        let turn = agent.prompt(&session, "work", Mode::Safe, tx);
        tokio::pin!(turn);
        tokio::select! {
            ended = &mut turn => panic!("the slow turn ended by itself: {ended:?}"),
            _ = rx.changed() => {}
        }
    }
    assert_eq!(agent.reply_so_far(&session).as_deref(), Some("working"));
    drop(agent);
    assert_all_gone(&s);
}

/// The real agents' recorded conversations, replayed (`recorded/mod.rs`).
mod recorded;
