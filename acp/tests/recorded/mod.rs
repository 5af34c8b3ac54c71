//! The real agents' conversations recorded in `conformance/acp` (OpenCode,
//! Gemini CLI, Qwen Code; its README says how), replayed through the
//! client's own parts: every line an agent wrote through `wire::classify`,
//! every update through the turn's fold, every permission request through
//! the mode's answer, as `agent.rs` does with them. What each prompt should
//! have got is worked out from the recorded JSON on its own.

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
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("{}: {e}: {l}", path.display()));
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
