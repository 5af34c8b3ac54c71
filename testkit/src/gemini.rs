//! A scripted Gemini API (`generativelanguage` v1beta), for running the real
//! Gemini CLI offline.
//!
//! This module owns [`MockGemini`]: an [`HttpServer`] answering what Gemini CLI
//! 0.61.0 asks of its base URL (`GOOGLE_GEMINI_BASE_URL`):
//!
//! - `POST /v1beta/models/<model>:streamGenerateContent?alt=sse`, the main
//!   conversation, streamed as SSE `data: <GenerateContentResponse>` chunks. The
//!   answer is the script's turn whose index is the number of `model` contents
//!   already in the request, so the first request gets turn 0 and the one carrying
//!   its `functionResponse` gets turn 1, and a retried request gets the same answer
//!   again. A [`Turn::ToolUse`] becomes one `functionCall` part (`args` = its
//!   input), after a text part with its preface when it has one (words before a
//!   tool call); a [`Turn::Text`] is streamed in two chunks, the finish reason and
//!   usage on the last, as the real API does. Past the end of the script the
//!   answer is [`FALLBACK_TEXT`].
//! - `POST …:generateContent`, Gemini CLI's own side requests (compression
//!   summaries and their check, routing, session summaries): one whole response
//!   with a text — a `<state_snapshot>` for a compression, `{}` where JSON is asked
//!   for, else `OK`.
//! - `POST …:countTokens`: an estimate. Anything else: 404 in Google's error shape.
//!
//! Nothing here checks the API key; the test reads the requests back with
//! [`MockGemini::requests`].

use std::sync::Arc;

use serde_json::{Value, json};

use crate::anthropic::Turn;
use crate::http::{HttpServer, Request, Response};

/// The text of answers that the script does not cover.
pub const FALLBACK_TEXT: &str = "Done.";

/// The answer to a compression request.
pub const SNAPSHOT_TEXT: &str =
    "<state_snapshot>Mock summary of the conversation.</state_snapshot>";

/// A running scripted Gemini API. It stops when dropped.
pub struct MockGemini {
    server: HttpServer,
}

impl MockGemini {
    /// Starts the server on `127.0.0.1:0` with these turns of the main
    /// conversation. Panics when it cannot bind.
    pub fn start(turns: impl IntoIterator<Item = Turn>) -> MockGemini {
        let turns: Arc<Vec<Turn>> = Arc::new(turns.into_iter().collect());
        let server = HttpServer::start(move |request| answer(&turns, request))
            .expect("the mock Gemini API binds a loopback port");
        MockGemini { server }
    }

    /// The common case: the model runs `command` with `run_shell_command`, then
    /// answers `text`.
    pub fn shell_then_text(command: &str, text: &str) -> MockGemini {
        MockGemini::start([
            Turn::tool_use("run_shell_command", json!({"command": command})),
            Turn::text(text),
        ])
    }

    /// `http://127.0.0.1:PORT`, for `GOOGLE_GEMINI_BASE_URL`.
    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.server.requests()
    }

    /// The main conversation's requests (the streamed ones), in arrival order.
    pub fn stream_requests(&self) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|r| method_of(r) == Some("streamGenerateContent"))
            .collect()
    }
}

/// `streamGenerateContent` of `/v1beta/models/gemini-2.5-flash:streamGenerateContent`.
fn method_of(request: &Request) -> Option<&str> {
    let rest = request.path().strip_prefix("/v1beta/models/")?;
    Some(rest.rsplit_once(':')?.1)
}

fn answer(turns: &[Turn], request: &Request) -> Response {
    let body = request.json().unwrap_or(Value::Null);
    match (request.method.as_str(), method_of(request)) {
        ("POST", Some("streamGenerateContent")) => {
            let model_turns = body["contents"]
                .as_array()
                .map_or(0, |c| c.iter().filter(|c| c["role"] == "model").count());
            let turn = turns
                .get(model_turns)
                .cloned()
                .unwrap_or_else(|| Turn::text(FALLBACK_TEXT));
            stream(&turn, estimate_tokens(&request.body))
        }
        ("POST", Some("generateContent")) => {
            let text = side_text(&body);
            let parts = json!([{"text": text}]);
            Response::json(
                200,
                &response_chunk(parts, Some(estimate_tokens(&request.body))),
            )
        }
        ("POST", Some("countTokens")) => {
            Response::json(200, &json!({"totalTokens": estimate_tokens(&request.body)}))
        }
        _ => Response::json(
            404,
            &json!({"error": {"code": 404, "message": format!("{} is not served by the mock", request.target), "status": "NOT_FOUND"}}),
        ),
    }
}

/// The text for a side request: a compression asks for a `<state_snapshot>`, a
/// JSON-mode request gets an empty object.
fn side_text(body: &Value) -> &'static str {
    if body.to_string().contains("state_snapshot") {
        SNAPSHOT_TEXT
    } else if body["generationConfig"]["responseMimeType"] == "application/json" {
        "{}"
    } else {
        "OK"
    }
}

/// One `GenerateContentResponse`; `usage` (the prompt's tokens) marks the last
/// chunk, which carries the finish reason.
fn response_chunk(parts: Value, usage: Option<u64>) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    let mut chunk = json!({"candidates": [], "modelVersion": "gemini-2.5-flash"});
    if let Some(prompt_tokens) = usage {
        candidate["finishReason"] = json!("STOP");
        chunk["usageMetadata"] = json!({
            "promptTokenCount": prompt_tokens,
            "candidatesTokenCount": 8,
            "totalTokenCount": prompt_tokens + 8,
        });
    }
    chunk["candidates"] = json!([candidate]);
    chunk
}

fn stream(turn: &Turn, prompt_tokens: u64) -> Response {
    let chunks: Vec<Value> = match turn {
        Turn::ToolUse {
            name,
            input,
            preface,
        } => {
            let call = json!({"functionCall": {"name": name, "args": input}});
            let parts = match preface {
                Some(words) => json!([{"text": words}, call]),
                None => json!([call]),
            };
            vec![response_chunk(parts, Some(prompt_tokens))]
        }
        Turn::Text(text) => {
            // Two chunks, split after the first word, as a real stream would be.
            let cut = text.find(' ').unwrap_or(text.len());
            let (head, tail) = text.split_at(cut);
            vec![
                response_chunk(json!([{"text": head}]), None),
                response_chunk(json!([{"text": tail}]), Some(prompt_tokens)),
            ]
        }
    };
    let bytes = chunks
        .iter()
        .map(|c| format!("data: {c}\r\n\r\n").into_bytes())
        .collect();
    Response::stream(200, "text/event-stream", bytes)
}

fn estimate_tokens(body: &[u8]) -> u64 {
    (body.len() as u64 / 4).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::raw::Client;

    fn client(mock: &MockGemini) -> Client {
        Client::connect(
            mock.base_url()
                .trim_start_matches("http://")
                .parse()
                .unwrap(),
        )
    }

    const STREAM: &str = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse";

    /// The `data:` payloads of an SSE body.
    fn chunks(body: &[u8]) -> Vec<Value> {
        String::from_utf8(body.to_vec())
            .unwrap()
            .split("\r\n\r\n")
            .filter(|e| !e.is_empty())
            .map(|e| serde_json::from_str(e.strip_prefix("data: ").unwrap()).unwrap())
            .collect()
    }

    #[test]
    fn a_shell_call_then_text_over_a_real_socket() {
        let mock = MockGemini::shell_then_text("echo hello", "It printed hello.");
        let mut c = client(&mock);
        let prompt = json!({"role": "user", "parts": [{"text": "run it"}]});
        let first = c.post_json(STREAM, &json!({"contents": [prompt]}));
        assert_eq!(first.status, 200);
        assert_eq!(first.header("Content-Type"), Some("text/event-stream"));
        let call = chunks(&first.body);
        assert_eq!(call.len(), 1);
        let candidate = &call[0]["candidates"][0];
        assert_eq!(
            candidate["content"]["parts"][0]["functionCall"],
            json!({"name": "run_shell_command", "args": {"command": "echo hello"}})
        );
        assert_eq!(candidate["finishReason"], "STOP");
        assert!(
            call[0]["usageMetadata"]["promptTokenCount"]
                .as_u64()
                .unwrap()
                >= 1
        );

        // Same connection: the function's response comes back, text streams.
        let second = c.post_json(
            STREAM,
            &json!({"contents": [
                prompt,
                {"role": "model", "parts": [{"functionCall": {"name": "run_shell_command", "args": {}}}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "run_shell_command", "response": {"output": "hello"}}}]},
            ]}),
        );
        let text = chunks(&second.body);
        assert_eq!(text.len(), 2);
        assert!(text[0]["candidates"][0].get("finishReason").is_none());
        let said: String = text
            .iter()
            .map(|c| {
                c["candidates"][0]["content"]["parts"][0]["text"]
                    .as_str()
                    .unwrap()
            })
            .collect();
        assert_eq!(said, "It printed hello.");
        assert_eq!(text[1]["candidates"][0]["finishReason"], "STOP");

        // Beyond the script: the fallback text.
        let late = c.post_json(
            STREAM,
            &json!({"contents": [prompt, {"role": "model", "parts": [{"text": "a"}]},
                                 prompt, {"role": "model", "parts": [{"text": "b"}]}, prompt]}),
        );
        let said: String = chunks(&late.body)
            .iter()
            .map(|c| {
                c["candidates"][0]["content"]["parts"][0]["text"]
                    .as_str()
                    .unwrap()
            })
            .collect();
        assert_eq!(said, FALLBACK_TEXT);
        assert_eq!(mock.stream_requests().len(), 3);
    }

    #[test]
    fn words_before_a_call_come_first_in_the_same_message() {
        let mock =
            MockGemini::start([
                Turn::tool_use("run_shell_command", json!({"command": "ls"}))
                    .after_saying("Let me look."),
            ]);
        let reply = client(&mock).post_json(
            STREAM,
            &json!({"contents": [{"role": "user", "parts": [{"text": "look"}]}]}),
        );
        let parts = &chunks(&reply.body)[0]["candidates"][0]["content"]["parts"];
        assert_eq!(parts[0], json!({"text": "Let me look."}));
        assert_eq!(parts[1]["functionCall"]["name"], "run_shell_command");
    }

    #[test]
    fn side_requests_token_counts_and_unknown_paths() {
        let mock = MockGemini::start([]);
        let mut c = client(&mock);
        let text = |reply: &crate::http::raw::Reply| {
            reply.json()["candidates"][0]["content"]["parts"][0]["text"]
                .as_str()
                .unwrap()
                .to_string()
        };
        let summary = c.post_json(
            "/v1beta/models/gemini-2.5-flash:generateContent",
            &json!({"contents": [{"role": "user", "parts": [{"text": "Generate a new <state_snapshot>."}]}]}),
        );
        assert_eq!(text(&summary), SNAPSHOT_TEXT);
        let json_mode = c.post_json(
            "/v1beta/models/gemini-2.5-flash-lite:generateContent",
            &json!({"contents": [], "generationConfig": {"responseMimeType": "application/json"}}),
        );
        assert_eq!(text(&json_mode), "{}");
        let plain = c.post_json(
            "/v1beta/models/gemini-2.5-flash-lite:generateContent",
            &json!({"contents": []}),
        );
        assert_eq!(text(&plain), "OK");
        let count = c.post_json(
            "/v1beta/models/gemini-2.5-flash:countTokens",
            &json!({"contents": []}),
        );
        assert!(count.json()["totalTokens"].as_u64().unwrap() >= 1);
        let missing = c.post_json("/v1beta/models", &json!({}));
        assert_eq!(missing.status, 404);
        assert_eq!(missing.json()["error"]["status"], "NOT_FOUND");
        assert_eq!(mock.requests().len(), 5);
        assert!(mock.stream_requests().is_empty());
    }
}
