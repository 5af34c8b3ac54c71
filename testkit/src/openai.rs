//! A scripted OpenAI Responses API, for running the real Codex offline.
//!
//! This module owns [`MockOpenAI`]: an [`HttpServer`] answering `POST {base}/responses`
//! (Codex's `wire_api = "responses"` with a custom provider whose `base_url` is
//! [`MockOpenAI::base_url`]) as a stream of SSE `event:` / `data:` frames, the shape
//! Codex 0.171 reads: `response.created`, `response.output_item.added`,
//! `response.output_item.done` with the whole item, and `response.completed` with
//! usage. Any other path gets a 404 error body.
//!
//! What each request gets:
//!
//! - A *turn* request of the main thread (one that offers tools, whose `thread-id`
//!   header is its `session-id`) is answered from the [`Step`]s: the step whose index
//!   is the number of the model's outputs already in its `input` (`function_call`
//!   items and assistant messages). So the first request gets step 0, the request
//!   carrying that call's output gets step 1, a retried request gets the same answer
//!   again, and a resumed thread's next turn (whose input holds the turns before)
//!   goes on where the last one stopped. Past the end of the steps the answer is the
//!   text [`FALLBACK_TEXT`].
//! - Anything else (a compaction request, which offers no tools and says
//!   `request_kind: compaction` in `x-codex-turn-metadata`, or a subagent thread's
//!   request) gets a short text, so it never loops on tool calls.
//!
//! Every call id (`call_` and 24 hex digits) is fixed when the mock starts, so a test
//! can read them back with [`MockOpenAI::call_ids`] and find them in hook payloads.
//!
//! Started with [`RateLimits`] ([`MockOpenAI::start_with_limits`]), every response
//! carries the account's rate-limit headers as ChatGPT's backend sends them
//! (`x-codex-primary-used-percent`, `-window-minutes`, `-reset-at`, and the same for
//! `secondary`): codex-rs reads them into the `rate_limits` of the `token_count`
//! it writes to its rollout after each response.
//!
//! Started with a [`MockUsage`] ([`MockOpenAI::start_with_usage`]), each answer
//! from the steps reports those tokens (any other answer an estimate).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use crate::http::{HttpServer, Request, Response};
use crate::usage::MockUsage;

/// The text of answers that the steps do not cover.
pub const FALLBACK_TEXT: &str = "Done.";

/// The answer to a compaction request.
pub const SUMMARY_TEXT: &str = "Mock summary of the conversation.";

/// One model output the mock will send on the main thread.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// A `message` with one `output_text`.
    Text(String),
    /// A `function_call` of Codex's `exec_command` tool running `cmd`.
    Command(String),
}

impl Step {
    pub fn text(text: impl Into<String>) -> Step {
        Step::Text(text.into())
    }

    pub fn command(cmd: impl Into<String>) -> Step {
        Step::Command(cmd.into())
    }

    /// The common case: the model runs `cmd`, then answers `text`.
    pub fn command_then_text(cmd: impl Into<String>, text: impl Into<String>) -> Vec<Step> {
        vec![Step::command(cmd), Step::text(text)]
    }
}

/// One rate-limit window, as the headers give it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    pub used_percent: f64,
    pub window_minutes: u64,
    /// When the window resets, in epoch seconds.
    pub reset_at: i64,
}

/// The account's limits every response reports.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateLimits {
    pub primary: Window,
    pub secondary: Option<Window>,
}

impl RateLimits {
    /// The `x-codex-*` headers codex-rs parses (`codex-api/src/rate_limits.rs`).
    fn headers(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let windows = [
            ("primary", Some(self.primary)),
            ("secondary", self.secondary),
        ];
        for (name, w) in windows {
            let Some(w) = w else { continue };
            out.push((
                format!("x-codex-{name}-used-percent"),
                w.used_percent.to_string(),
            ));
            out.push((
                format!("x-codex-{name}-window-minutes"),
                w.window_minutes.to_string(),
            ));
            out.push((format!("x-codex-{name}-reset-at"), w.reset_at.to_string()));
        }
        out
    }
}

/// A step with its call id fixed.
#[derive(Clone, Debug)]
enum Planned {
    Text(String),
    Call { call_id: String, cmd: String },
}

/// A running scripted Responses API. It stops when dropped.
pub struct MockOpenAI {
    server: HttpServer,
    call_ids: Vec<String>,
}

impl MockOpenAI {
    /// Starts the server on `127.0.0.1:0`. Panics when it cannot bind.
    pub fn start(steps: Vec<Step>) -> MockOpenAI {
        MockOpenAI::serve(steps, Vec::new(), None)
    }

    /// `start`, with every response reporting `limits` in its headers.
    pub fn start_with_limits(steps: Vec<Step>, limits: RateLimits) -> MockOpenAI {
        MockOpenAI::serve(steps, limits.headers(), None)
    }

    /// `start`, each answer from the steps reporting `usage`.
    pub fn start_with_usage(steps: Vec<Step>, usage: MockUsage) -> MockOpenAI {
        MockOpenAI::serve(steps, Vec::new(), Some(usage))
    }

    fn serve(
        steps: Vec<Step>,
        headers: Vec<(String, String)>,
        usage: Option<MockUsage>,
    ) -> MockOpenAI {
        let ids = Ids::new();
        let plan: Vec<Planned> = steps
            .into_iter()
            .map(|s| match s {
                Step::Text(text) => Planned::Text(text),
                Step::Command(cmd) => Planned::Call {
                    call_id: ids.make("call_"),
                    cmd,
                },
            })
            .collect();
        let call_ids = plan
            .iter()
            .filter_map(|p| match p {
                Planned::Call { call_id, .. } => Some(call_id.clone()),
                Planned::Text(_) => None,
            })
            .collect();
        let server = HttpServer::start(move |request| {
            let mut response = answer(&plan, request, &ids, usage);
            if response.status() == 200 {
                for (name, value) in &headers {
                    response = response.with_header(name, value);
                }
            }
            response
        })
        .expect("MockOpenAI binds 127.0.0.1:0");
        MockOpenAI { server, call_ids }
    }

    /// `http://127.0.0.1:PORT/v1`: the value for a model provider's `base_url`.
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.server.base_url())
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.server.requests()
    }

    /// The ids of the steps' function calls, in step order.
    pub fn call_ids(&self) -> &[String] {
        &self.call_ids
    }
}

fn error(status: u16, message: &str) -> Response {
    Response::json(
        status,
        &json!({"error": {"type": "invalid_request_error", "message": message}}),
    )
}

fn answer(plan: &[Planned], request: &Request, ids: &Ids, usage: Option<MockUsage>) -> Response {
    let path = request.path().trim_end_matches('/');
    if !path.ends_with("/responses") {
        return error(404, &format!("no route for {path}"));
    }
    if !request.method.eq_ignore_ascii_case("POST") {
        return error(405, "use POST");
    }
    let Some(body) = request.json() else {
        return error(400, "body is not JSON");
    };
    let offers_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
    let main_thread = request.header("thread-id") == request.header("session-id");
    let mut chosen = None;
    let step = if offers_tools && main_thread {
        let answered = body["input"].as_array().map_or(0, |items| {
            items
                .iter()
                .filter(|i| {
                    i["type"] == "function_call"
                        || (i["type"] == "message" && i["role"] == "assistant")
                })
                .count()
        });
        match plan.get(answered) {
            Some(step) => {
                chosen = usage;
                step.clone()
            }
            None => Planned::Text(FALLBACK_TEXT.into()),
        }
    } else if offers_tools {
        Planned::Text("OK".into())
    } else {
        Planned::Text(SUMMARY_TEXT.into())
    };
    let item = match &step {
        Planned::Text(text) => json!({
            "type": "message", "id": ids.make("msg_"), "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }),
        Planned::Call { call_id, cmd } => json!({
            "type": "function_call", "id": ids.make("fc_"), "call_id": call_id,
            "name": "exec_command", "arguments": json!({"cmd": cmd}).to_string(),
        }),
    };
    let response_id = ids.make("resp_");
    let usage = chosen.unwrap_or(MockUsage {
        input: (request.body.len() as u64 / 4).max(1),
        output: (item.to_string().len() as u64 / 4).max(1),
        ..MockUsage::default()
    });
    Response::sse(stream(&response_id, item, usage.openai_responses()))
}

fn stream(id: &str, item: Value, usage: Value) -> Vec<(String, Value)> {
    [
        (
            "response.created",
            json!({"type": "response.created", "response": {"id": id}}),
        ),
        (
            "response.output_item.added",
            json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
        ),
        (
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        ),
        (
            "response.completed",
            json!({"type": "response.completed", "response": {"id": id, "usage": usage}}),
        ),
    ]
    .into_iter()
    .map(|(name, data)| (name.to_string(), data))
    .collect()
}

/// Random-looking hex ids without a random-number crate: a randomly seeded std
/// hasher over a counter, 96 bits per id.
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

    fn turn_request(input: Value) -> Value {
        json!({
            "model": "mock-model",
            "stream": true,
            "tools": [{"type": "function", "name": "exec_command"}],
            "input": input,
        })
    }

    fn post(client: &mut Client, body: &Value, thread: &str) -> Vec<(String, Value)> {
        let body = body.to_string();
        client.send(
            format!(
                "POST /v1/responses HTTP/1.1\r\nHost: x\r\nsession-id: s1\r\nthread-id: {thread}\r\n\
                 Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        );
        let reply = client.read_reply();
        assert_eq!(reply.status, 200);
        assert_eq!(reply.header("Content-Type"), Some("text/event-stream"));
        reply.sse()
    }

    fn done_item(events: &[(String, Value)]) -> Value {
        let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "response.created",
                "response.output_item.added",
                "response.output_item.done",
                "response.completed"
            ]
        );
        for (name, data) in events {
            assert_eq!(data["type"], name.as_str());
        }
        assert!(
            events[3].1["response"]["usage"]["total_tokens"]
                .as_u64()
                .unwrap()
                > 0
        );
        events[2].1["item"].clone()
    }

    #[test]
    fn a_command_then_its_output_then_text() {
        let mock = MockOpenAI::start(Step::command_then_text("echo hello", "It printed hello."));
        let ids = mock.call_ids().to_vec();
        assert_eq!(ids.len(), 1);
        assert!(
            ids[0].starts_with("call_") && ids[0].len() == 29,
            "{}",
            ids[0]
        );
        assert!(mock.base_url().ends_with("/v1"));
        let addr = mock.server.addr();
        let mut client = Client::connect(addr);

        let user = json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]});
        let call = done_item(&post(&mut client, &turn_request(json!([user])), "s1"));
        assert_eq!(call["type"], "function_call");
        assert_eq!(call["name"], "exec_command");
        assert_eq!(call["call_id"], ids[0].as_str());
        let args: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(args, json!({"cmd": "echo hello"}));

        let output =
            json!({"type": "function_call_output", "call_id": ids[0], "output": "hello\n"});
        let text = done_item(&post(
            &mut client,
            &turn_request(json!([user, call, output])),
            "s1",
        ));
        assert_eq!(text["type"], "message");
        assert_eq!(text["content"][0]["text"], "It printed hello.");

        // A resumed thread's next turn goes on past that answer: beyond the
        // script. Then a retry of the first request.
        let next = json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "more?"}]});
        let late = done_item(&post(
            &mut client,
            &turn_request(json!([user, call, output, text, next])),
            "s1",
        ));
        assert_eq!(late["content"][0]["text"], FALLBACK_TEXT);
        let again = done_item(&post(&mut client, &turn_request(json!([user])), "s1"));
        assert_eq!(again["call_id"], ids[0].as_str());
        assert_eq!(mock.requests().len(), 4);
    }

    #[test]
    fn compactions_subagents_and_unknown_paths_get_text_or_errors() {
        let mock = MockOpenAI::start(vec![Step::command("ls")]);
        let mut client = Client::connect(mock.server.addr());
        let compaction = json!({"model": "m", "input": [], "stream": true});
        let summary = done_item(&post(&mut client, &compaction, "s1"));
        assert_eq!(summary["content"][0]["text"], SUMMARY_TEXT);
        let sub = done_item(&post(&mut client, &turn_request(json!([])), "sub-thread"));
        assert_eq!(sub["content"][0]["text"], "OK");
        let missing = client.post_json("/v1/models", &json!({}));
        assert_eq!(missing.status, 404);
    }

    #[test]
    fn rate_limits_ride_on_every_answer() {
        let window = |used_percent, window_minutes, reset_at| Window {
            used_percent,
            window_minutes,
            reset_at,
        };
        let mock = MockOpenAI::start_with_limits(
            vec![Step::text("hi")],
            RateLimits {
                primary: window(12.5, 300, 1_795_990_000),
                secondary: Some(window(40.0, 10_080, 1_796_500_000)),
            },
        );
        let mut client = Client::connect(mock.server.addr());
        let body = turn_request(json!([])).to_string();
        client.send(
            format!(
                "POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
                 Content-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        );
        let reply = client.read_reply();
        for (name, value) in [
            ("x-codex-primary-used-percent", "12.5"),
            ("x-codex-primary-window-minutes", "300"),
            ("x-codex-primary-reset-at", "1795990000"),
            ("x-codex-secondary-used-percent", "40"),
            ("x-codex-secondary-window-minutes", "10080"),
            ("x-codex-secondary-reset-at", "1796500000"),
        ] {
            assert_eq!(reply.header(name), Some(value), "{name}");
        }
        let missing = client.post_json("/v1/models", &json!({}));
        assert_eq!(missing.header("x-codex-primary-used-percent"), None);
    }

    #[test]
    fn ids_are_distinct() {
        let ids = Ids::new();
        let a = ids.make("call_");
        assert_ne!(a, ids.make("call_"));
        assert!(a[5..].chars().all(|c| c.is_ascii_hexdigit()));
    }
}
