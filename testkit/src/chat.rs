//! A scripted OpenAI chat-completions API, for running real harnesses offline.
//!
//! This module owns [`MockChat`]: an [`HttpServer`] answering
//! `POST {base}/chat/completions` the way OpenAI's streaming chat API does, for the
//! harnesses whose bring-your-own-model setting speaks it (GitHub Copilot CLI,
//! Factory Droid, OpenCode). Point the harness's base URL at
//! [`MockChat::base_url`] (`http://127.0.0.1:PORT/v1`). It must not know any
//! harness: the tool a step calls and its arguments come from the test.
//!
//! What each request gets:
//!
//! - A *turn* request (one that offers `tools`) is answered from the [`Step`]s: the
//!   step whose index is the number of assistant messages already in its
//!   `messages`. So the first request gets step 0, the request carrying that tool
//!   call's result gets step 1, a retried request gets the same answer again, and a
//!   later turn of the same conversation goes on where the last one stopped. Past
//!   the end of the steps the answer is the text [`FALLBACK_TEXT`].
//! - A subagent's conversation (a harness's task tool starts one, with the task's
//!   words as its first user message) gets its own steps the same way when the
//!   mock was started with [`MockChat::start_with_agents`]: the first agent
//!   whose marker is in one of the request's user messages answers it.
//! - A request that offers no tools (a title or summary a harness asks for on the
//!   side) gets the text [`SIDE_TEXT`] and moves no step.
//! - With `"stream": true` the answer is SSE: `data: {chat.completion.chunk}`
//!   frames (the role, then `delta.content` or `delta.tool_calls` with the name and
//!   then the arguments, then a chunk with `finish_reason` `stop` or `tool_calls`,
//!   then a usage chunk when `stream_options.include_usage` asks for one) and
//!   `data: [DONE]`. Without it, one `chat.completion` JSON body.
//! - `GET {base}/models` lists [`MODEL`]; any other path gets a 404 error body.
//!
//! Every tool-call id (`call_` and 24 hex digits) is fixed when the mock starts, so
//! a test can read them back with [`MockChat::call_ids`] and find them in a
//! transcript. [`MockChat::requests`] is the log of every request received, and
//! [`MockChat::tool_results`] the tool results the harness sent back.
//!
//! The API here is shared by several harnesses' tests: extend it, don't change it.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value, json};

use crate::http::{HttpServer, Request, Response};
use crate::usage::MockUsage;

/// The text of turn answers past the end of the steps.
pub const FALLBACK_TEXT: &str = "Done.";

/// The text of answers to requests that offer no tools.
pub const SIDE_TEXT: &str = "OK";

/// The model id `GET /models` lists (any model id a request names is accepted).
pub const MODEL: &str = "mock-model";

/// One assistant output the mock will send.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// A message whose content is this text (`finish_reason: stop`).
    Text(String),
    /// One call of the tool `name` with these `arguments` (a JSON object, sent as
    /// its string form; `finish_reason: tool_calls`).
    Tool { name: String, arguments: Value },
    /// Several tool calls in one message (each a [`Step::Tool`]; anything else
    /// in it is left out), which a harness runs side by side.
    Parallel(Vec<Step>),
}

impl Step {
    /// A text answer.
    pub fn text(text: impl Into<String>) -> Step {
        Step::Text(text.into())
    }

    /// A call of the tool `name` with `arguments`, whatever they hold (Droid's
    /// `Execute` wants `command`, `summary`, `riskLevel` and `riskLevelReason`).
    pub fn tool(name: impl Into<String>, arguments: Value) -> Step {
        Step::Tool {
            name: name.into(),
            arguments,
        }
    }

    /// A call of a tool named `bash` with `{"command": command, "description":
    /// ...}` (Copilot CLI's and OpenCode's shell tool).
    pub fn bash(command: impl Into<String>) -> Step {
        let command = command.into();
        Step::tool(
            "bash",
            json!({"command": command, "description": format!("Run {command}")}),
        )
    }
}

/// A step with its call ids fixed.
#[derive(Clone, Debug)]
enum Planned {
    Text(String),
    Calls(Vec<Call>),
}

/// One tool call of a planned step.
#[derive(Clone, Debug)]
struct Call {
    call_id: String,
    name: String,
    arguments: String,
}

/// A running scripted chat-completions API. It stops when dropped.
pub struct MockChat {
    server: HttpServer,
    call_ids: Vec<String>,
}

/// Every conversation's steps: the main one's, and each subagent's by its marker.
struct Script {
    main: Vec<Planned>,
    agents: Vec<(String, Vec<Planned>)>,
    /// The tokens each answer from `main` reports (else an estimate).
    usage: Option<MockUsage>,
}

impl Script {
    /// The steps that answer a request whose user messages are `asked`.
    fn plan_for(&self, asked: &[String]) -> &[Planned] {
        self.agents
            .iter()
            .find(|(marker, _)| asked.iter().any(|text| text.contains(marker.as_str())))
            .map_or(&self.main, |(_, plan)| plan)
    }
}

impl MockChat {
    /// Starts the server on `127.0.0.1:0`. Panics when it cannot bind.
    pub fn start(steps: Vec<Step>) -> MockChat {
        MockChat::serve(steps, Vec::new(), None)
    }

    /// `start`, each answer from `steps` reporting `usage`.
    pub fn start_with_usage(steps: Vec<Step>, usage: MockUsage) -> MockChat {
        MockChat::serve(steps, Vec::new(), Some(usage))
    }

    /// Starts the server with `steps` for the main conversation and, for each
    /// `(marker, steps)` of `agents`, the steps of a subagent's conversation: one
    /// whose user messages carry `marker` (write it into the task a step of
    /// `steps` gives). Tool-call ids are fixed across all of them, main first.
    pub fn start_with_agents(steps: Vec<Step>, agents: Vec<(&str, Vec<Step>)>) -> MockChat {
        MockChat::serve(steps, agents, None)
    }

    fn serve(
        steps: Vec<Step>,
        agents: Vec<(&str, Vec<Step>)>,
        usage: Option<MockUsage>,
    ) -> MockChat {
        let ids = Ids::new();
        let call = |name: String, arguments: Value| Call {
            call_id: ids.make("call_"),
            name,
            arguments: arguments.to_string(),
        };
        let plan = |steps: Vec<Step>| -> Vec<Planned> {
            steps
                .into_iter()
                .map(|s| match s {
                    Step::Text(text) => Planned::Text(text),
                    Step::Tool { name, arguments } => Planned::Calls(vec![call(name, arguments)]),
                    Step::Parallel(steps) => Planned::Calls(
                        steps
                            .into_iter()
                            .filter_map(|s| match s {
                                Step::Tool { name, arguments } => Some(call(name, arguments)),
                                _ => None,
                            })
                            .collect(),
                    ),
                })
                .collect()
        };
        let script = Script {
            main: plan(steps),
            agents: agents
                .into_iter()
                .map(|(marker, steps)| (marker.to_string(), plan(steps)))
                .collect(),
            usage,
        };
        let call_ids = std::iter::once(&script.main)
            .chain(script.agents.iter().map(|(_, p)| p))
            .flatten()
            .flat_map(|p| match p {
                Planned::Calls(calls) => calls.iter().map(|c| c.call_id.clone()).collect(),
                Planned::Text(_) => Vec::new(),
            })
            .collect();
        let server = HttpServer::start(move |request| answer(&script, request, &ids))
            .expect("MockChat binds");
        MockChat { server, call_ids }
    }

    /// `http://127.0.0.1:PORT/v1`: the value for a provider's base URL.
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.server.base_url())
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.server.requests()
    }

    /// The JSON bodies of the chat-completions requests received so far.
    pub fn completions(&self) -> Vec<Value> {
        self.requests()
            .iter()
            .filter(|r| {
                r.path()
                    .trim_end_matches('/')
                    .ends_with("/chat/completions")
            })
            .filter_map(Request::json)
            .collect()
    }

    /// The ids of the steps' tool calls, in step order (the main steps', then
    /// each agent's).
    pub fn call_ids(&self) -> &[String] {
        &self.call_ids
    }

    /// Every `role: tool` message the harness sent back, as `(tool_call_id,
    /// content as text)`, first seen first, each id once.
    pub fn tool_results(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for body in self.completions() {
            let Some(messages) = body["messages"].as_array() else {
                continue;
            };
            for m in messages.iter().filter(|m| m["role"] == "tool") {
                let id = m["tool_call_id"].as_str().unwrap_or_default().to_string();
                if out.iter().any(|(seen, _)| *seen == id) {
                    continue;
                }
                out.push((id, content_text(&m["content"])));
            }
        }
        out
    }
}

/// A message's content as text: a string, or the `text` of its parts.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

fn error(status: u16, message: &str) -> Response {
    Response::json(
        status,
        &json!({"error": {"type": "invalid_request_error", "message": message}}),
    )
}

fn answer(script: &Script, request: &Request, ids: &Ids) -> Response {
    let path = request.path().trim_end_matches('/');
    if path.ends_with("/models") && request.method.eq_ignore_ascii_case("GET") {
        return Response::json(
            200,
            &json!({"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "mock"}]}),
        );
    }
    if !path.ends_with("/chat/completions") {
        return error(404, &format!("no route for {path}"));
    }
    if !request.method.eq_ignore_ascii_case("POST") {
        return error(405, "use POST");
    }
    let Some(body) = request.json() else {
        return error(400, "body is not JSON");
    };
    let offers_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
    let mut chosen = None;
    let step = if offers_tools {
        let messages = body["messages"].as_array().map_or(&[][..], Vec::as_slice);
        let answered = messages.iter().filter(|m| m["role"] == "assistant").count();
        let asked: Vec<String> = messages
            .iter()
            .filter(|m| m["role"] == "user")
            .map(|m| content_text(&m["content"]))
            .collect();
        let plan = script.plan_for(&asked);
        match plan.get(answered) {
            Some(step) => {
                if std::ptr::eq(plan, script.main.as_slice()) {
                    chosen = script.usage;
                }
                step.clone()
            }
            None => Planned::Text(FALLBACK_TEXT.into()),
        }
    } else {
        Planned::Text(SIDE_TEXT.into())
    };
    let model = body["model"].as_str().unwrap_or(MODEL).to_string();
    let id = ids.make("chatcmpl-");
    let usage = chosen.unwrap_or_else(|| MockUsage {
        input: (request.body.len() as u64 / 4).max(1),
        output: match &step {
            Planned::Text(t) => t.len() as u64 / 4,
            Planned::Calls(calls) => {
                calls.iter().map(|c| c.arguments.len() as u64).sum::<u64>() / 4
            }
        }
        .max(1),
        ..MockUsage::default()
    });
    let usage = usage.openai_chat();
    if body["stream"] == true {
        let include_usage = body["stream_options"]["include_usage"] == true;
        let chunks = stream(&id, &model, &step, include_usage.then_some(usage));
        Response::stream(200, "text/event-stream", chunks).with_header("Cache-Control", "no-cache")
    } else {
        Response::json(200, &whole(&id, &model, &step, usage))
    }
}

fn created() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn chunk(id: &str, model: &str, choices: Value) -> Value {
    json!({
        "id": id, "object": "chat.completion.chunk", "created": created(),
        "model": model, "choices": choices,
    })
}

fn delta(id: &str, model: &str, delta: Value, finish: Option<&str>) -> Value {
    chunk(
        id,
        model,
        json!([{"index": 0, "delta": delta, "finish_reason": finish}]),
    )
}

/// The SSE frames of one streamed answer, each its own chunk on the wire.
fn stream(id: &str, model: &str, step: &Planned, usage: Option<Value>) -> Vec<Vec<u8>> {
    let mut frames = vec![delta(
        id,
        model,
        json!({"role": "assistant", "content": ""}),
        None,
    )];
    let finish = match step {
        Planned::Text(text) => {
            frames.push(delta(id, model, json!({"content": text}), None));
            "stop"
        }
        Planned::Calls(calls) => {
            for (index, c) in calls.iter().enumerate() {
                frames.push(delta(
                    id,
                    model,
                    json!({"tool_calls": [{"index": index, "id": c.call_id, "type": "function",
                        "function": {"name": c.name, "arguments": ""}}]}),
                    None,
                ));
                frames.push(delta(
                    id,
                    model,
                    json!({"tool_calls": [{"index": index, "function": {"arguments": c.arguments}}]}),
                    None,
                ));
            }
            "tool_calls"
        }
    };
    frames.push(delta(id, model, json!({}), Some(finish)));
    if let Some(usage) = usage {
        let mut last = chunk(id, model, json!([]));
        last["usage"] = usage;
        frames.push(last);
    }
    let mut out: Vec<Vec<u8>> = frames
        .into_iter()
        .map(|f| format!("data: {f}\n\n").into_bytes())
        .collect();
    out.push(b"data: [DONE]\n\n".to_vec());
    out
}

/// A non-streamed `chat.completion`.
fn whole(id: &str, model: &str, step: &Planned, usage: Value) -> Value {
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    let finish = match step {
        Planned::Text(text) => {
            message.insert("content".into(), json!(text));
            "stop"
        }
        Planned::Calls(calls) => {
            message.insert("content".into(), Value::Null);
            let calls: Vec<Value> = calls
                .iter()
                .map(|c| {
                    json!({"id": c.call_id, "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments}})
                })
                .collect();
            message.insert("tool_calls".into(), Value::Array(calls));
            "tool_calls"
        }
    };
    json!({
        "id": id, "object": "chat.completion", "created": created(), "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage,
    })
}

/// Random-looking hex ids without a random-number crate: a randomly seeded std
/// hasher over a counter.
struct Ids {
    seed: RandomState,
    counter: AtomicU64,
}

impl Ids {
    fn new() -> Ids {
        Ids {
            seed: RandomState::new(),
            counter: AtomicU64::new(0),
        }
    }

    /// `prefix` followed by 24 hex digits.
    fn make(&self, prefix: &str) -> String {
        let word = |salt: u64| {
            let mut h = self.seed.build_hasher();
            h.write_u64(self.counter.fetch_add(1, Ordering::Relaxed));
            h.write_u64(salt);
            h.finish()
        };
        let (a, b) = (word(1), word(2));
        format!("{prefix}{a:016x}{:08x}", b >> 32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::raw::Client;

    fn turn(messages: Value) -> Value {
        json!({
            "model": "m", "stream": true, "stream_options": {"include_usage": true},
            "tools": [{"type": "function", "function": {"name": "bash"}}],
            "messages": messages,
        })
    }

    /// The `data:` payloads of a streamed reply, `[DONE]` as a string.
    fn frames(client: &mut Client, body: &Value) -> Vec<Value> {
        let reply = client.post_json("/v1/chat/completions", body);
        assert_eq!(reply.status, 200);
        assert_eq!(reply.header("Content-Type"), Some("text/event-stream"));
        let text = String::from_utf8(reply.body).unwrap();
        text.split("\n\n")
            .filter(|f| !f.trim().is_empty())
            .map(|f| {
                let data = f.strip_prefix("data: ").expect("only data: lines");
                serde_json::from_str(data).unwrap_or_else(|_| json!(data))
            })
            .collect()
    }

    /// The assistant message a client would assemble from the chunks.
    fn assemble(frames: &[Value]) -> (Value, String) {
        assert_eq!(frames.last(), Some(&json!("[DONE]")));
        let mut content = String::new();
        let mut call = json!({"id": null, "name": "", "arguments": ""});
        let mut finish = String::new();
        for f in &frames[..frames.len() - 1] {
            assert_eq!(f["object"], "chat.completion.chunk");
            let Some(choice) = f["choices"].get(0) else {
                continue;
            };
            let d = &choice["delta"];
            if let Some(c) = d["content"].as_str() {
                content.push_str(c);
            }
            if let Some(tc) = d["tool_calls"].get(0) {
                if let Some(id) = tc["id"].as_str() {
                    call["id"] = json!(id);
                }
                let name = call["name"].as_str().unwrap().to_string()
                    + tc["function"]["name"].as_str().unwrap_or("");
                let args = call["arguments"].as_str().unwrap().to_string()
                    + tc["function"]["arguments"].as_str().unwrap_or("");
                call["name"] = json!(name);
                call["arguments"] = json!(args);
            }
            if let Some(r) = choice["finish_reason"].as_str() {
                finish = r.to_string();
            }
        }
        (json!({"content": content, "call": call}), finish)
    }

    #[test]
    fn a_tool_call_with_any_arguments_then_text_then_fallback() {
        let args = json!({"command": "echo hello", "summary": "Print", "riskLevel": "low",
            "riskLevelReason": "Only prints."});
        let mock = MockChat::start(vec![
            Step::tool("Execute", args.clone()),
            Step::text("It printed hello."),
        ]);
        assert!(mock.base_url().ends_with("/v1"));
        let ids = mock.call_ids().to_vec();
        assert_eq!(ids.len(), 1);
        assert!(ids[0].starts_with("call_") && ids[0].len() == 29);
        let mut client = Client::connect(mock.server.addr());

        let user = json!({"role": "user", "content": "run echo hello"});
        let first = frames(&mut client, &turn(json!([user])));
        let (msg, finish) = assemble(&first);
        assert_eq!(finish, "tool_calls");
        assert_eq!(msg["call"]["id"], ids[0].as_str());
        assert_eq!(msg["call"]["name"], "Execute");
        let sent: Value = serde_json::from_str(msg["call"]["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(sent, args);
        let usage = &first[first.len() - 2];
        assert_eq!(usage["choices"], json!([]));
        assert!(usage["usage"]["total_tokens"].as_u64().unwrap() > 0);

        let assistant = json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": ids[0], "type": "function", "function": {"name": "Execute", "arguments": "{}"}}]});
        let tool = json!({"role": "tool", "tool_call_id": ids[0],
            "content": [{"type": "text", "text": "hello\n"}]});
        let (msg, finish) = assemble(&frames(&mut client, &turn(json!([user, assistant, tool]))));
        assert_eq!(finish, "stop");
        assert_eq!(msg["content"], "It printed hello.");

        let done = json!({"role": "assistant", "content": "It printed hello."});
        let next = json!({"role": "user", "content": "more"});
        let (msg, _) = assemble(&frames(
            &mut client,
            &turn(json!([user, assistant, tool, done, next])),
        ));
        assert_eq!(msg["content"], FALLBACK_TEXT);
        // A retry of the first request gets the first step again.
        let (msg, _) = assemble(&frames(&mut client, &turn(json!([user]))));
        assert_eq!(msg["call"]["id"], ids[0].as_str());

        assert_eq!(mock.completions().len(), 4);
        assert_eq!(mock.requests().len(), 4);
        assert_eq!(
            mock.tool_results(),
            vec![(ids[0].clone(), "hello\n".into())]
        );
    }

    #[test]
    fn side_requests_whole_bodies_models_and_unknown_paths() {
        let mock = MockChat::start(vec![Step::bash("ls")]);
        let mut client = Client::connect(mock.server.addr());
        // No tools: a side answer, not the script.
        let side = json!({"model": "m", "stream": true, "messages": []});
        let (msg, finish) = assemble(&frames(&mut client, &side));
        assert_eq!(
            (msg["content"].as_str(), finish.as_str()),
            (Some(SIDE_TEXT), "stop")
        );
        // No usage chunk unless asked.
        let f = frames(&mut client, &side);
        assert!(f.iter().all(|c| c.get("usage").is_none()));

        let mut whole = turn(json!([{"role": "user", "content": "go"}]));
        whole["stream"] = json!(false);
        let reply = client.post_json("/v1/chat/completions", &whole).json();
        assert_eq!(reply["object"], "chat.completion");
        let call = &reply["choices"][0]["message"]["tool_calls"][0];
        assert_eq!(call["function"]["name"], "bash");
        let args: Value =
            serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(args["command"], "ls");
        assert_eq!(reply["choices"][0]["finish_reason"], "tool_calls");

        assert_eq!(client.post_json("/v1/embeddings", &json!({})).status, 404);
    }

    #[test]
    fn a_subagents_conversation_gets_its_own_steps_by_its_marker() {
        let mock = MockChat::start_with_agents(
            vec![
                Step::tool("task", json!({"prompt": "[[one]] run echo"})),
                Step::text("Delegated."),
            ],
            vec![(
                "[[one]]",
                vec![Step::bash("echo one"), Step::text("One done.")],
            )],
        );
        let ids = mock.call_ids().to_vec();
        assert_eq!(ids.len(), 2, "the main call, then the agent's");
        let mut client = Client::connect(mock.server.addr());
        let parent = json!({"role": "user", "content": "delegate"});
        let (msg, _) = assemble(&frames(&mut client, &turn(json!([parent]))));
        assert_eq!(msg["call"]["name"], "task");
        // The subagent's first request: its task, as text parts, no answer yet.
        let task = json!({"role": "user", "content": [{"type": "text", "text": "<ctx/> [[one]] run echo"}]});
        let (msg, _) = assemble(&frames(&mut client, &turn(json!([task]))));
        assert_eq!(msg["call"]["id"], ids[1].as_str());
        let answered = json!({"role": "assistant", "content": "x"});
        let (msg, _) = assemble(&frames(&mut client, &turn(json!([task, answered]))));
        assert_eq!(msg["content"], "One done.");
        // The parent's next request carries the task only in its call, not as a
        // user message: the main steps go on.
        let call = json!({"role": "assistant", "content": null, "tool_calls": [{"id": ids[0],
            "type": "function", "function": {"name": "task", "arguments": "{\"prompt\": \"[[one]] run echo\"}"}}]});
        let result = json!({"role": "tool", "tool_call_id": ids[0], "content": "One done."});
        let (msg, _) = assemble(&frames(&mut client, &turn(json!([parent, call, result]))));
        assert_eq!(msg["content"], "Delegated.");
    }

    #[test]
    fn parallel_calls_go_in_one_message() {
        let mock = MockChat::start(vec![Step::Parallel(vec![
            Step::bash("echo a"),
            Step::bash("echo b"),
        ])]);
        let ids = mock.call_ids().to_vec();
        assert_eq!(ids.len(), 2);
        let mut client = Client::connect(mock.server.addr());
        let user = json!([{"role": "user", "content": "go"}]);
        let streamed = frames(&mut client, &turn(user.clone()));
        let named: Vec<(u64, &str)> = streamed
            .iter()
            .filter_map(|f| f["choices"][0]["delta"]["tool_calls"][0].as_object())
            .filter_map(|c| Some((c["index"].as_u64()?, c.get("id")?.as_str()?)))
            .collect();
        assert_eq!(named, [(0, ids[0].as_str()), (1, ids[1].as_str())]);
        let mut whole = turn(user);
        whole["stream"] = json!(false);
        let reply = client.post_json("/v1/chat/completions", &whole).json();
        let calls = reply["choices"][0]["message"]["tool_calls"]
            .as_array()
            .unwrap();
        let commands: Vec<String> = calls
            .iter()
            .map(|c| {
                let args: Value =
                    serde_json::from_str(c["function"]["arguments"].as_str().unwrap()).unwrap();
                args["command"].as_str().unwrap().to_string()
            })
            .collect();
        assert_eq!(commands, ["echo a", "echo b"]);
    }
}
