//! A scripted Anthropic Messages API, for running the real Claude Code offline.
//!
//! This module owns [`MockAnthropic`]: an [`HttpServer`] answering
//! `POST /v1/messages` (with or without `?beta=true`) the way the real API does,
//! streamed as SSE (`message_start`, `content_block_start`, `content_block_delta` with
//! `text_delta` / `input_json_delta`, `content_block_stop`, `message_delta` with the
//! stop reason and usage, `message_stop`) or, for `"stream": false` (or absent), as a
//! whole JSON Message. `POST /v1/messages/count_tokens` gets a token estimate; any
//! other path gets a 404 error body.
//!
//! What each request gets:
//!
//! - A *main* request (one that offers tools and has no `x-claude-code-agent-id`
//!   header, which Claude Code puts on its subagents' requests) is answered from the
//!   [`Script`]: the
//!   turn whose index is the number of assistant messages already in the
//!   conversation. So the first request gets turn 0 and the request carrying its
//!   `tool_result` gets turn 1, and a retried request gets the same answer again.
//!   Past the end of the script, or when the turn is a tool use but the request
//!   offers no tools, the answer is the text `Done.`.
//! - A compaction request (Claude Code sends it shaped like a main request, tools
//!   and all, with a last user text asking for an `<analysis>` and a `<summary>`
//!   block) gets [`SUMMARY_TEXT`], so compaction works and does not consume a turn.
//! - Any other request (a subagent's, title generation, quota checks, summaries:
//!   whatever the harness asks for its own purposes) gets a short text, so a scripted
//!   `Agent` tool call does not make the subagent call `Agent` again.
//!
//! Every tool use id is fixed when the mock starts (`toolu_` and 24 base62
//! characters), so a test can read them back with [`MockAnthropic::tool_use_ids`] and
//! find them in hook payloads and transcripts.
//!
//! [`MockAnthropic::start_with_headers`] puts extra headers on every
//! answer, as the real API puts its `anthropic-ratelimit-unified-*` headers on its own.
//!
//! A script [`Script::with_usage`] reports the test's [`MockUsage`] on each of
//! its scripted answers (the stream's start says its input and cache tokens and
//! 1 output token, its `message_delta` the whole usage, as the real API does);
//! any other answer reports an estimate.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

use serde_json::{Value, json};

use crate::http::{HttpServer, Request, Response};
use crate::usage::MockUsage;

/// The text of answers that the script does not cover.
pub const FALLBACK_TEXT: &str = "Done.";

/// The answer to a compaction request.
pub const SUMMARY_TEXT: &str =
    "<analysis>Mock analysis.</analysis>\n<summary>Mock summary of the conversation.</summary>";

/// One assistant message the mock will send.
#[derive(Clone, Debug, PartialEq)]
pub enum Turn {
    /// A text answer, stop reason `end_turn`.
    Text(String),
    /// One `tool_use` block, stop reason `tool_use`; `preface` is text the model
    /// says first, in a block of its own (words before a tool call).
    ToolUse {
        /// The tool's name as the harness offers it (`Bash`).
        name: String,
        /// The tool's input.
        input: Value,
        preface: Option<String>,
    },
}

impl Turn {
    /// A text answer.
    pub fn text(text: impl Into<String>) -> Turn {
        Turn::Text(text.into())
    }

    /// A call of tool `name` with `input`.
    pub fn tool_use(name: impl Into<String>, input: Value) -> Turn {
        Turn::ToolUse {
            name: name.into(),
            input,
            preface: None,
        }
    }

    /// This tool call, with `text` said before it in the same message.
    pub fn after_saying(self, text: impl Into<String>) -> Turn {
        match self {
            Turn::ToolUse { name, input, .. } => Turn::ToolUse {
                name,
                input,
                preface: Some(text.into()),
            },
            text_turn => text_turn,
        }
    }

    /// A call of Claude Code's `Bash` tool running `command`.
    pub fn bash(command: impl Into<String>) -> Turn {
        let command = command.into();
        let description = format!("Run {command}");
        Turn::tool_use(
            "Bash",
            json!({"command": command, "description": description}),
        )
    }
}

/// The ordered turns of the main conversation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Script {
    turns: Vec<Turn>,
    /// The pause between the stream's events (a slow model).
    pace: Option<std::time::Duration>,
    /// The tokens each scripted answer reports (else an estimate).
    usage: Option<MockUsage>,
    /// The tokens each answer to a subagent reports (else an estimate).
    subagent_usage: Option<MockUsage>,
}

impl Script {
    /// A script of these turns, in order.
    pub fn new(turns: impl IntoIterator<Item = Turn>) -> Script {
        Script {
            turns: turns.into_iter().collect(),
            pace: None,
            usage: None,
            subagent_usage: None,
        }
    }

    /// The same script, its streamed answers `pace` apart event by event.
    pub fn paced(mut self, pace: std::time::Duration) -> Script {
        self.pace = Some(pace);
        self
    }

    /// The same script, each of its answers reporting `usage`.
    pub fn with_usage(mut self, usage: MockUsage) -> Script {
        self.usage = Some(usage);
        self
    }

    /// The same script, each answer to a subagent (a request naming its
    /// agent) reporting `usage`.
    pub fn with_subagent_usage(mut self, usage: MockUsage) -> Script {
        self.subagent_usage = Some(usage);
        self
    }

    /// The common case: the model runs `command` with Bash, then answers `text`.
    pub fn bash_then_text(command: impl Into<String>, text: impl Into<String>) -> Script {
        Script::new([Turn::bash(command), Turn::text(text)])
    }
}

/// A turn with its tool use id fixed: the blocks of one assistant message.
#[derive(Clone, Debug)]
struct Planned {
    blocks: Vec<Block>,
    /// What it reports, when the test chose (a scripted answer's).
    usage: Option<MockUsage>,
}

#[derive(Clone, Debug)]
enum Block {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
}

impl Planned {
    fn text(text: impl Into<String>) -> Planned {
        Planned {
            blocks: vec![Block::Text(text.into())],
            usage: None,
        }
    }
}

/// A running scripted Anthropic API. It stops when dropped.
pub struct MockAnthropic {
    server: HttpServer,
    tool_use_ids: Vec<String>,
}

impl MockAnthropic {
    /// Starts the server on `127.0.0.1:0`. Panics when it cannot bind.
    pub fn start(script: Script) -> MockAnthropic {
        MockAnthropic::start_with_headers(script, Vec::new())
    }

    /// `start`, with `headers` on every answer.
    pub fn start_with_headers(script: Script, headers: Vec<(String, String)>) -> MockAnthropic {
        MockAnthropic::start_with_headers_for(script, move |_| headers.clone())
    }

    /// `start`, with the headers `headers_for` gives each request on its
    /// answer (an upstream whose accounts answer differently).
    pub fn start_with_headers_for(
        script: Script,
        headers_for: impl Fn(&Request) -> Vec<(String, String)> + Send + Sync + 'static,
    ) -> MockAnthropic {
        let mut ids = Ids::new();
        let (pace, usage) = (script.pace, script.usage);
        let usages = (usage, script.subagent_usage);
        let plan: Vec<Planned> = script
            .turns
            .into_iter()
            .map(|turn| match turn {
                Turn::Text(text) => Planned {
                    usage,
                    ..Planned::text(text)
                },
                Turn::ToolUse {
                    name,
                    input,
                    preface,
                } => {
                    let mut blocks: Vec<Block> = preface.into_iter().map(Block::Text).collect();
                    blocks.push(Block::ToolUse {
                        id: ids.make("toolu_"),
                        name,
                        input,
                    });
                    Planned { blocks, usage }
                }
            })
            .collect();
        let tool_use_ids = plan
            .iter()
            .flat_map(|p| &p.blocks)
            .filter_map(|b| match b {
                Block::ToolUse { id, .. } => Some(id.clone()),
                Block::Text(_) => None,
            })
            .collect();
        let ids = std::sync::Mutex::new(ids);
        let server = HttpServer::start(move |request| {
            let mut ids = ids
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let headers = headers_for(request);
            let answered = answer(&plan, usages, request, &mut ids);
            let answered = match pace {
                Some(p) => answered.paced(p),
                None => answered,
            };
            headers
                .iter()
                .fold(answered, |r, (name, value)| r.with_header(name, value))
        })
        .expect("MockAnthropic binds 127.0.0.1:0");
        MockAnthropic {
            server,
            tool_use_ids,
        }
    }

    /// `http://127.0.0.1:PORT`: the value for `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.server.requests()
    }

    /// The ids of the script's tool uses, in script order.
    pub fn tool_use_ids(&self) -> &[String] {
        &self.tool_use_ids
    }
}

fn error(status: u16, kind: &str, message: &str) -> Response {
    Response::json(
        status,
        &json!({"type": "error", "error": {"type": kind, "message": message}}),
    )
}

/// `usages`: what the main conversation's answers report (a compaction's
/// and one past the script's included), and what a subagent's do.
fn answer(
    plan: &[Planned],
    usages: (Option<MockUsage>, Option<MockUsage>),
    request: &Request,
    ids: &mut Ids,
) -> Response {
    let path = request.path().trim_end_matches('/');
    let known = matches!(path, "/v1/messages" | "/v1/messages/count_tokens");
    if !known {
        return error(404, "not_found_error", &format!("no route for {path}"));
    }
    if !request.method.eq_ignore_ascii_case("POST") {
        return error(405, "invalid_request_error", "use POST");
    }
    let Some(body) = request.json() else {
        return error(400, "invalid_request_error", "body is not JSON");
    };
    if path == "/v1/messages/count_tokens" {
        return Response::json(
            200,
            &json!({"input_tokens": estimate_tokens(&request.body)}),
        );
    }

    let offers_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
    let subagent = request.header("x-claude-code-agent-id").is_some();
    let main = |text| Planned {
        usage: usages.0,
        ..Planned::text(text)
    };
    let turn = if asks_for_summary(&body) {
        if subagent {
            Planned::text(SUMMARY_TEXT)
        } else {
            main(SUMMARY_TEXT)
        }
    } else if offers_tools && !subagent {
        let index = body["messages"]
            .as_array()
            .map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count());
        plan.get(index)
            .cloned()
            .unwrap_or_else(|| main(FALLBACK_TEXT))
    } else if subagent {
        Planned {
            usage: usages.1,
            ..Planned::text(side_text(&body))
        }
    } else {
        Planned::text(side_text(&body))
    };

    let model = body["model"].as_str().unwrap_or("claude-mock").to_string();
    let message_id = ids.make("msg_");
    let usage = turn.usage.unwrap_or(MockUsage {
        input: estimate_tokens(&request.body),
        output: output_tokens(&turn),
        ..MockUsage::default()
    });
    let request_id = ids.make("req_");
    let response = if body["stream"].as_bool().unwrap_or(false) {
        Response::sse(stream_events(&turn, &model, &message_id, &usage))
    } else {
        Response::json(200, &whole_message(&turn, &model, &message_id, &usage))
    };
    response.with_header("request-id", &request_id)
}

/// True when the last message's text asks for a `<summary>` block: a compaction.
fn asks_for_summary(body: &Value) -> bool {
    let Some(last) = body["messages"].as_array().and_then(|m| m.last()) else {
        return false;
    };
    if last["role"] != "user" {
        return false;
    }
    let mentions = |text: &str| text.contains("<summary>");
    match &last["content"] {
        Value::String(text) => mentions(text),
        Value::Array(blocks) => blocks
            .iter()
            .any(|b| b["type"] == "text" && b["text"].as_str().is_some_and(mentions)),
        _ => false,
    }
}

/// The text for a request the script does not drive. Claude Code asks for session
/// titles as JSON, so a request whose system prompt mentions JSON gets a JSON text.
fn side_text(body: &Value) -> String {
    let system = match &body["system"] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if system.contains("JSON") || system.contains("json") {
        json!({"title": "Mock session"}).to_string()
    } else {
        "OK".to_string()
    }
}

fn estimate_tokens(body: &[u8]) -> u64 {
    (body.len() as u64 / 4).max(1)
}

fn output_tokens(turn: &Planned) -> u64 {
    let len: usize = turn
        .blocks
        .iter()
        .map(|b| match b {
            Block::Text(text) => text.len(),
            Block::ToolUse { name, input, .. } => name.len() + input.to_string().len(),
        })
        .sum();
    (len as u64 / 4).max(1)
}

fn stop_reason(turn: &Planned) -> &'static str {
    if turn
        .blocks
        .iter()
        .any(|b| matches!(b, Block::ToolUse { .. }))
    {
        "tool_use"
    } else {
        "end_turn"
    }
}

fn whole_message(turn: &Planned, model: &str, id: &str, usage: &MockUsage) -> Value {
    let content: Vec<Value> = turn
        .blocks
        .iter()
        .map(|b| match b {
            Block::Text(text) => json!({"type": "text", "text": text}),
            Block::ToolUse { id, name, input } => {
                json!({"type": "tool_use", "id": id, "name": name, "input": input})
            }
        })
        .collect();
    json!({
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason(turn),
        "stop_sequence": null,
        "usage": usage.anthropic(usage.output),
    })
}

/// Splits `s` into about `parts` pieces on character boundaries.
fn pieces(s: &str, parts: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    if chars.is_empty() {
        return Vec::new();
    }
    let size = chars.len().div_ceil(parts.max(1));
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

fn stream_events(turn: &Planned, model: &str, id: &str, usage: &MockUsage) -> Vec<(String, Value)> {
    let mut events: Vec<(String, Value)> = Vec::new();
    let mut push = |name: &str, data: Value| events.push((name.to_string(), data));
    push(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": null,
            "stop_sequence": null,
            "usage": usage.anthropic(1),
        }}),
    );
    for (index, block) in turn.blocks.iter().enumerate() {
        match block {
            Block::Text(text) => {
                push(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": index,
                           "content_block": {"type": "text", "text": ""}}),
                );
                push("ping", json!({"type": "ping"}));
                for piece in pieces(text, 3) {
                    push(
                        "content_block_delta",
                        json!({"type": "content_block_delta", "index": index,
                               "delta": {"type": "text_delta", "text": piece}}),
                    );
                }
            }
            Block::ToolUse {
                id: tool_id,
                name,
                input,
            } => {
                push(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": index,
                           "content_block": {"type": "tool_use", "id": tool_id, "name": name, "input": {}}}),
                );
                push("ping", json!({"type": "ping"}));
                for piece in pieces(&input.to_string(), 3) {
                    push(
                        "content_block_delta",
                        json!({"type": "content_block_delta", "index": index,
                               "delta": {"type": "input_json_delta", "partial_json": piece}}),
                    );
                }
            }
        }
        push(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
    }
    push(
        "message_delta",
        json!({"type": "message_delta",
               "delta": {"stop_reason": stop_reason(turn), "stop_sequence": null},
               "usage": usage.anthropic(usage.output)}),
    );
    push("message_stop", json!({"type": "message_stop"}));
    events
}

/// Random-looking base62 ids without a random-number crate: std's randomly seeded
/// hasher mixes a counter.
struct Ids {
    seed: RandomState,
    counter: u64,
}

impl Ids {
    fn new() -> Ids {
        Ids {
            seed: RandomState::new(),
            counter: 0,
        }
    }

    /// `prefix` followed by 24 base62 characters.
    fn make(&mut self, prefix: &str) -> String {
        const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        let mut id = String::from(prefix);
        let mut word = 0u64;
        for i in 0..24 {
            if i % 8 == 0 {
                let mut hasher = self.seed.build_hasher();
                hasher.write_u64(self.counter);
                self.counter += 1;
                word = hasher.finish();
            }
            id.push(ALPHABET[(word % 62) as usize] as char);
            word /= 62;
        }
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::raw::Client;

    fn main_request(messages: Value) -> Value {
        json!({
            "model": "claude-test",
            "max_tokens": 1024,
            "stream": true,
            "system": [{"type": "text", "text": "You are Claude Code"}],
            "tools": [{"name": "Bash", "input_schema": {"type": "object"}}],
            "messages": messages,
        })
    }

    /// Rebuilds the assistant content from a stream, the way a client would.
    fn assemble(events: &[(String, Value)]) -> (Vec<Value>, String) {
        let mut blocks: Vec<Value> = Vec::new();
        let mut partial = String::new();
        let mut stop = String::new();
        for (name, data) in events {
            assert_eq!(data["type"], name.as_str(), "event name matches data.type");
            match name.as_str() {
                "content_block_start" => blocks.push(data["content_block"].clone()),
                "content_block_delta" => {
                    let block = blocks.last_mut().unwrap();
                    match data["delta"]["type"].as_str().unwrap() {
                        "text_delta" => {
                            let text = block["text"].as_str().unwrap().to_string()
                                + data["delta"]["text"].as_str().unwrap();
                            block["text"] = json!(text);
                        }
                        "input_json_delta" => {
                            partial.push_str(data["delta"]["partial_json"].as_str().unwrap())
                        }
                        other => panic!("unexpected delta {other}"),
                    }
                }
                "content_block_stop" => {
                    let block = blocks.last_mut().unwrap();
                    if block["type"] == "tool_use" {
                        block["input"] = serde_json::from_str(&partial).unwrap();
                    }
                }
                "message_delta" => stop = data["delta"]["stop_reason"].as_str().unwrap().into(),
                _ => {}
            }
        }
        assert_eq!(events.first().unwrap().0, "message_start");
        assert_eq!(events.last().unwrap().0, "message_stop");
        (blocks, stop)
    }

    #[test]
    fn bash_then_text_over_a_real_socket() {
        let mock = MockAnthropic::start(Script::bash_then_text("echo hello", "All done."));
        let ids = mock.tool_use_ids().to_vec();
        assert_eq!(ids.len(), 1);
        assert!(
            ids[0].starts_with("toolu_") && ids[0].len() == 30,
            "{}",
            ids[0]
        );
        assert!(ids[0][6..].chars().all(|c| c.is_ascii_alphanumeric()));

        let addr = mock
            .base_url()
            .trim_start_matches("http://")
            .parse()
            .unwrap();
        let mut client = Client::connect(addr);
        let first = client.post_json(
            "/v1/messages?beta=true",
            &main_request(json!([{"role": "user", "content": "run it"}])),
        );
        assert_eq!(first.status, 200);
        assert_eq!(first.header("Content-Type"), Some("text/event-stream"));
        let (blocks, stop) = assemble(&first.sse());
        assert_eq!(stop, "tool_use");
        assert_eq!(
            blocks,
            vec![json!({"type": "tool_use", "id": ids[0], "name": "Bash",
                        "input": {"command": "echo hello", "description": "Run echo hello"}})]
        );

        // Same connection: the tool result comes back.
        let second = client.post_json(
            "/v1/messages?beta=true",
            &main_request(json!([
                {"role": "user", "content": "run it"},
                {"role": "assistant", "content": blocks},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": ids[0], "content": "hello"}]},
            ])),
        );
        let (blocks, stop) = assemble(&second.sse());
        assert_eq!(stop, "end_turn");
        assert_eq!(blocks, vec![json!({"type": "text", "text": "All done."})]);

        let requests = mock.requests();
        assert_eq!(requests.len(), 2);
        assert_eq!(requests[0].query(), Some("beta=true"));
        assert_eq!(
            requests[1].json().unwrap()["messages"][2]["content"][0]["tool_use_id"],
            ids[0]
        );
    }

    #[test]
    fn side_requests_non_streaming_and_unknown_paths() {
        let mock = MockAnthropic::start(Script::bash_then_text("echo hello", "done"));
        let addr = mock
            .base_url()
            .trim_start_matches("http://")
            .parse()
            .unwrap();
        let mut client = Client::connect(addr);

        // No tools, not streamed: a whole JSON message with text.
        let quota = client.post_json(
            "/v1/messages",
            &json!({"model": "m", "max_tokens": 1,
                    "messages": [{"role": "user", "content": "quota"}]}),
        );
        let message = quota.json();
        assert_eq!(message["type"], "message");
        assert_eq!(message["stop_reason"], "end_turn");
        assert_eq!(message["content"][0]["text"], "OK");
        assert!(message["id"].as_str().unwrap().starts_with("msg_"));

        // A main request that is not streamed still follows the script.
        let mut body = main_request(json!([{"role": "user", "content": "go"}]));
        body["stream"] = json!(false);
        let whole = client.post_json("/v1/messages", &body).json();
        assert_eq!(whole["stop_reason"], "tool_use");
        assert_eq!(whole["content"][0]["id"], mock.tool_use_ids()[0].as_str());

        // Beyond the script: fallback text.
        let late = client.post_json(
            "/v1/messages",
            &main_request(json!([
                {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                {"role": "user", "content": "c"}, {"role": "assistant", "content": "d"},
                {"role": "user", "content": "e"}])),
        );
        let (blocks, _) = assemble(&late.sse());
        assert_eq!(blocks[0]["text"], FALLBACK_TEXT);

        let count = client.post_json(
            "/v1/messages/count_tokens?beta=true",
            &json!({"messages": []}),
        );
        assert!(count.json()["input_tokens"].as_u64().unwrap() >= 1);

        let missing = client.post_json("/v1/models", &json!({}));
        assert_eq!(missing.status, 404);
        assert_eq!(missing.json()["error"]["type"], "not_found_error");
        assert_eq!(mock.requests().len(), 5);
    }

    #[test]
    fn subagent_requests_get_text() {
        let mock = MockAnthropic::start(Script::bash_then_text("echo hello", "done"));
        let addr = mock
            .base_url()
            .trim_start_matches("http://")
            .parse()
            .unwrap();
        let mut client = Client::connect(addr);
        let body = main_request(json!([{"role": "user", "content": "Say hi."}])).to_string();
        client.send(
            format!(
                "POST /v1/messages?beta=true HTTP/1.1\r\nHost: x\r\n\
                 x-claude-code-agent-id: a4226aedf4e798a31\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        );
        let (blocks, stop) = assemble(&client.read_reply().sse());
        assert_eq!(stop, "end_turn");
        assert_eq!(blocks[0]["type"], "text");
    }

    #[test]
    fn compaction_gets_a_summary() {
        let mock = MockAnthropic::start(Script::bash_then_text("echo hello", "done"));
        let addr = mock
            .base_url()
            .trim_start_matches("http://")
            .parse()
            .unwrap();
        let mut client = Client::connect(addr);
        let reply = client.post_json(
            "/v1/messages?beta=true",
            &main_request(json!([{"role": "user", "content": [
                {"type": "text", "text": "Respond with an <analysis> block followed by a <summary> block."}]}])),
        );
        let (blocks, _) = assemble(&reply.sse());
        assert_eq!(blocks[0]["text"], SUMMARY_TEXT);
    }

    #[test]
    fn ids_are_distinct() {
        let mut ids = Ids::new();
        let a = ids.make("toolu_");
        let b = ids.make("toolu_");
        assert_ne!(a, b);
        assert_eq!(a.len(), 30);
    }
}
