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

/// The real agents' conversations recorded in `conformance/acp` (OpenCode,
/// Gemini CLI, Qwen Code; its README says how), replayed through the
/// client's own parts: every line an agent wrote through `wire::classify`,
/// every update through the turn's fold, every permission request through
/// the mode's answer, as `agent.rs` does with them. What each prompt should
/// have got is worked out from the recorded JSON on its own.
mod recorded {
    use serde_json::Value;
    use sessionpipe_acp::turn::{Mode, Turn, TurnEnd};
    use sessionpipe_acp::wire::{self, Incoming};
    use std::collections::HashMap;
    use std::path::{Path, PathBuf};

    const AGENTS: [&str; 3] = ["opencode", "gemini-cli", "qwen-code"];

    fn folder() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/acp")
    }

    /// Whether the recordings are here (a crate copied alone has none).
    fn present() -> bool {
        let here = folder().is_dir();
        if !here {
            println!("skipped: no recordings at {}", folder().display());
        }
        here
    }

    /// One recording: each message, and whether the agent wrote it.
    fn messages(agent: &str, scenario: &str) -> Vec<(bool, Value)> {
        let path = folder().join(agent).join(format!("{scenario}.jsonl"));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let v: Value = serde_json::from_str(l)
                    .unwrap_or_else(|e| panic!("{}: {e}: {l}", path.display()));
                let inward = match v["dir"].as_str() {
                    Some("in") => true,
                    Some("out") => false,
                    other => panic!("{}: dir {other:?}", path.display()),
                };
                (inward, v["msg"].clone())
            })
            .collect()
    }

    /// What one prompt should have got, from the JSON alone: the text of
    /// its `agent_message_chunk`s in order, and each tool it named with its
    /// last status.
    struct Expected {
        reply: String,
        tools: Vec<(String, String)>,
    }

    fn expected(msgs: &[(bool, Value)], prompt: &Value) -> Expected {
        let id = &prompt["id"];
        let session = &prompt["params"]["sessionId"];
        let from = msgs.iter().position(|(i, m)| !*i && m == prompt).unwrap();
        let mut reply = String::new();
        let mut tools: Vec<(String, String)> = Vec::new();
        for (inward, m) in &msgs[from + 1..] {
            if *inward && m["id"] == *id && m.get("method").is_none() {
                break;
            }
            if !*inward || m["method"] != "session/update" || m["params"]["sessionId"] != *session {
                continue;
            }
            let u = &m["params"]["update"];
            match u["sessionUpdate"].as_str() {
                Some("agent_message_chunk") if u["content"]["type"] == "text" => {
                    reply.push_str(u["content"]["text"].as_str().unwrap());
                }
                Some("tool_call" | "tool_call_update") => {
                    let call = u["toolCallId"].as_str().unwrap().to_string();
                    let at = match tools.iter().position(|(c, _)| *c == call) {
                        Some(at) => at,
                        None => {
                            tools.push((call, "pending".into()));
                            tools.len() - 1
                        }
                    };
                    if let Some(s) = u["status"].as_str() {
                        tools[at].1 = s.to_string();
                    }
                }
                _ => {}
            }
        }
        Expected { reply, tools }
    }

    /// A prompt as the client took it.
    struct Prompted {
        text: String,
        end: TurnEnd,
        expected: Expected,
    }

    /// A request the agent made of the client, and what the recording
    /// answered it.
    struct Asked {
        id: Value,
        method: String,
        params: Value,
        answered: Value,
        /// What this client answers a permission request in safe mode.
        ours: Option<Value>,
    }

    /// One recording taken as the client takes it.
    struct Replayed {
        prompts: Vec<Prompted>,
        requests: Vec<Asked>,
        /// `initialize`'s answer, where the recording has one.
        init: Option<Value>,
        /// `session/update`s before and after `session/load`'s answer, and
        /// the kinds of those after.
        load: Option<(usize, Vec<String>)>,
        /// Updates that came with no turn of ours running (a load's replay),
        /// folded as a turn would fold them.
        outside: Turn,
        updates: usize,
    }

    fn replay(agent: &str, scenario: &str) -> Replayed {
        let msgs = messages(agent, scenario);
        let mut asked: HashMap<u64, Value> = HashMap::new();
        let mut turns: HashMap<String, Turn> = HashMap::new();
        let mut r = Replayed {
            prompts: Vec::new(),
            requests: Vec::new(),
            init: None,
            load: None,
            outside: Turn::new(Mode::Safe),
            updates: 0,
        };
        let mut after_load: Option<(usize, Vec<String>)> = None;
        for (at, (inward, m)) in msgs.iter().enumerate() {
            let whence = format!("{agent}/{scenario}.jsonl, message {at}");
            if !*inward {
                if let (Some(id), Some(method)) = (m["id"].as_u64(), m["method"].as_str()) {
                    asked.insert(id, m.clone());
                    if method == "session/prompt" {
                        let session = m["params"]["sessionId"].as_str().unwrap();
                        turns.insert(session.to_string(), Turn::new(Mode::Safe));
                    }
                }
                continue;
            }
            let line = serde_json::to_vec(m).unwrap();
            match wire::classify(&line) {
                Incoming::Answer { id, outcome } => {
                    let request = asked
                        .remove(&id)
                        .unwrap_or_else(|| panic!("{whence}: an answer to nothing asked"));
                    let result = outcome.unwrap_or_else(|e| panic!("{whence}: refused: {e:?}"));
                    match request["method"].as_str().unwrap() {
                        "initialize" => r.init = Some(result),
                        "session/load" => after_load = Some((r.updates, Vec::new())),
                        "session/prompt" => {
                            let session = request["params"]["sessionId"].as_str().unwrap();
                            let turn = turns.remove(session).expect("the prompt's turn");
                            let stop = result["stopReason"].as_str().unwrap().to_string();
                            r.prompts.push(Prompted {
                                text: request["params"]["prompt"][0]["text"]
                                    .as_str()
                                    .unwrap()
                                    .to_string(),
                                end: TurnEnd::of(turn, stop),
                                expected: expected(&msgs, &request),
                            });
                        }
                        _ => {}
                    }
                }
                Incoming::Notification { method, params } => {
                    assert_eq!(method, "session/update", "{whence}");
                    r.updates += 1;
                    if let Some((_, kinds)) = after_load.as_mut() {
                        kinds.push(
                            params["update"]["sessionUpdate"]
                                .as_str()
                                .unwrap_or_default()
                                .to_string(),
                        );
                    }
                    let session = params["sessionId"].as_str().unwrap_or_default();
                    match turns.get_mut(session) {
                        Some(turn) => turn.fold(&params["update"]),
                        None => r.outside.fold(&params["update"]),
                    };
                }
                Incoming::Request { id, method, params } => {
                    let answered = msgs[at + 1..]
                        .iter()
                        .find(|(i, a)| !*i && a["id"] == id && a.get("method").is_none())
                        .map(|(_, a)| a.clone())
                        .unwrap_or_else(|| panic!("{whence}: the request was never answered"));
                    let ours = (method == "session/request_permission").then(|| {
                        let session = params["sessionId"].as_str().unwrap_or_default();
                        let turn = turns.get_mut(session).expect("asked during a turn");
                        turn.answer_permission(&params)
                    });
                    r.requests.push(Asked {
                        id,
                        method,
                        params,
                        answered,
                        ours,
                    });
                }
                other => panic!("{whence}: {other:?}"),
            }
        }
        assert!(asked.is_empty(), "{agent}/{scenario}: unanswered {asked:?}");
        if let Some((before, kinds)) = after_load {
            r.load = Some((before, kinds));
        }
        r
    }

    fn option(params: &Value, kind: &str) -> Vec<String> {
        params["options"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| o["kind"] == kind)
            .map(|o| o["optionId"].as_str().unwrap().to_string())
            .collect()
    }

    fn chosen(answer: &Value) -> &str {
        assert_eq!(answer["outcome"]["outcome"], "selected", "{answer}");
        answer["outcome"]["optionId"].as_str().unwrap()
    }

    fn assert_as_expected(agent: &str, scenario: &str, p: &Prompted) {
        let at = format!("{agent}/{scenario}: {:?}", p.text);
        assert_eq!(p.end.reply, p.expected.reply, "{at}");
        let tools: Vec<(String, String)> = p
            .end
            .tools
            .iter()
            .map(|t| (t.id.clone(), t.status.clone()))
            .collect();
        assert_eq!(tools, p.expected.tools, "{at}");
        assert!(p.end.tools.iter().all(|t| !t.title.is_empty()), "{at}");
    }

    #[test]
    fn every_line_a_real_agent_wrote_is_json_rpc_the_client_reads() {
        if !present() {
            return;
        }
        for agent in AGENTS {
            for scenario in ["turn", "cancel", "load", "permission"] {
                let r = replay(agent, scenario);
                assert!(r.updates > 0, "{agent}/{scenario}");
                if let Some(init) = r.init {
                    assert_eq!(init["protocolVersion"], 1, "{agent}/{scenario}");
                    assert_eq!(
                        init["agentCapabilities"]["loadSession"], true,
                        "{agent}/{scenario}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_real_turns_reply_is_its_text_chunks_and_its_shell_calls_are_recorded() {
        if !present() {
            return;
        }
        for agent in AGENTS {
            let r = replay(agent, "turn");
            let said: Vec<(&str, &str, &str)> = r
                .prompts
                .iter()
                .map(|p| (p.text.as_str(), p.end.stop.as_str(), p.end.reply.as_str()))
                .collect();
            assert_eq!(
                said,
                [
                    ("run echo hello", "end_turn", "It printed hello."),
                    ("run echo again", "end_turn", "It printed again.")
                ],
                "{agent}"
            );
            for p in &r.prompts {
                assert_as_expected(agent, "turn", p);
                assert_eq!(p.end.tools.len(), 1, "{agent}: one shell call a prompt");
                assert_eq!(p.end.tools[0].status, "completed", "{agent}");
            }
            let r = replay(agent, "cancel");
            let said: Vec<(&str, &str)> = r
                .prompts
                .iter()
                .map(|p| (p.text.as_str(), p.end.stop.as_str()))
                .collect();
            assert_eq!(
                said,
                [
                    ("run sleep 30", "cancelled"),
                    ("are you still there?", "end_turn")
                ],
                "{agent}"
            );
            for p in &r.prompts {
                assert_as_expected(agent, "cancel", p);
            }
            assert_eq!(r.prompts[0].end.tools.len(), 1, "{agent}: the sleep");
            assert_eq!(r.prompts[1].end.reply, "Still here.", "{agent}");
        }
    }

    #[test]
    fn a_real_permission_request_has_id_zero_and_safe_rejects_once_auto_allows_once() {
        if !present() {
            return;
        }
        for (agent, reject, allow) in [
            ("opencode", "reject", "once"),
            ("gemini-cli", "cancel", "proceed_once"),
            ("qwen-code", "cancel", "proceed_once"),
        ] {
            let r = replay(agent, "permission");
            let asked: Vec<&Asked> = r
                .requests
                .iter()
                .filter(|a| a.method == "session/request_permission")
                .collect();
            assert_eq!(asked.len(), 1, "{agent}");
            let a = asked[0];
            assert_eq!(a.id, serde_json::json!(0), "{agent}: asked with id 0");
            assert_eq!(option(&a.params, "reject_once"), [reject], "{agent}");
            assert_eq!(option(&a.params, "allow_once"), [allow], "{agent}");
            let always = option(&a.params, "allow_always");
            assert!(!always.is_empty(), "{agent} offers an allow-always");
            let safe = a.ours.as_ref().unwrap();
            assert_eq!(chosen(safe), reject, "{agent}");
            assert_eq!(
                chosen(&a.answered["result"]),
                reject,
                "{agent}: as recorded"
            );
            let auto = Turn::new(Mode::Auto).answer_permission(&a.params);
            assert_eq!(chosen(&auto), allow, "{agent}");
            for answer in [safe, &auto] {
                assert!(!always.iter().any(|o| o == chosen(answer)), "{agent}");
            }
            assert_eq!(r.prompts.len(), 1, "{agent}");
            let p = &r.prompts[0];
            assert_as_expected(agent, "permission", p);
            assert_eq!(p.end.refused.len(), 1, "{agent}: {:?}", p.end.refused);
            assert!(p.end.refused[0].contains("touch marker"), "{agent}");
            assert!(
                p.end.tools.iter().all(|t| t.status != "completed"),
                "{agent}: the refused call did not run: {:?}",
                p.end.tools
            );
        }
        let gemini = replay("gemini-cli", "permission");
        assert_eq!(gemini.prompts[0].end.reply, "I was not allowed to.");
    }

    #[test]
    fn a_real_load_replays_history_that_is_no_reply_and_answers_before_or_after_it() {
        if !present() {
            return;
        }
        for agent in AGENTS {
            let r = replay(agent, "load");
            assert!(r.prompts.is_empty(), "{agent}");
            let (before, after) = r.load.clone().expect("session/load was answered");
            let history = r.outside.reply();
            for said in ["It printed hello.", "It printed again.", "Still here."] {
                assert!(history.contains(said), "{agent}: {history:?}");
            }
            let chunks_after = after
                .iter()
                .filter(|k| k.ends_with("_message_chunk") || k.starts_with("tool_call"))
                .count();
            if agent == "gemini-cli" {
                // Its answer comes after the first replayed update.
                assert_eq!(before, 1, "{agent}");
                assert!(chunks_after > 0, "{agent}: {after:?}");
            } else {
                assert!(before > 0, "{agent}");
                assert_eq!(chunks_after, 0, "{agent}: {after:?}");
            }
        }
    }

    #[test]
    fn qwens_own_request_is_one_the_client_answers_method_not_found() {
        if !present() {
            return;
        }
        for (scenario, id) in [("turn", 0), ("permission", 1)] {
            let r = replay("qwen-code", scenario);
            let drain: Vec<&Asked> = r
                .requests
                .iter()
                .filter(|a| a.method == "craft/drainMidTurnQueue")
                .collect();
            assert_eq!(drain.len(), 1, "{scenario}");
            assert_eq!(drain[0].id, serde_json::json!(id), "{scenario}");
            assert!(drain[0].ours.is_none());
            assert_eq!(
                drain[0].answered["error"]["code"],
                wire::METHOD_NOT_FOUND,
                "{scenario}"
            );
        }
    }
}
