//! Reading Gemini CLI's chat file, the `transcript_path` of every hook:
//! `~/.gemini/tmp/<project>/chats/session-<date>T<HH-MM>-<id8>.jsonl`.
//!
//! Owns the file's format: turning its records into the person's words, the
//! agent's words, tool calls and interruptions (`Rec`s), and the facts it holds
//! (the model, Gemini CLI's own title). Parsing only: the reads are
//! `for_each_line`'s, and which turns go out is `TurnLog`'s. Must not write the
//! file or keep anything of it but what a `Rec` carries.
//!
//! Gemini CLI 0.61.0 appends one JSON record per line and writes each at once
//! (`appendFileSync`), so a turn's last words are in the file before its
//! AfterAgent hook runs (measured: `conformance/transcripts/gemini-cli/`):
//!
//! - the session's metadata first: `sessionId`, `projectHash`, `startTime`,
//!   `lastUpdated`, `kind` (`main`, or `subagent` for a subagent's own file);
//! - messages `{id, timestamp, type, content, …}`, `type` being `user`,
//!   `gemini`, `info`, `error` or `warning`. A `user` message's content is parts:
//!   the prompt's text (`displayContent` holds what the person typed when it
//!   differs, e.g. before `@file` expansion), or the `functionResponse` parts that
//!   carry a tool's result back to the model. A `gemini` message's content is its
//!   text, beside `model`, `thoughts` and `tokens`;
//! - `{"$set": {…}}`: a later `lastUpdated`, the session's `summary` (Gemini
//!   CLI's title for it, written at a later start of Gemini CLI), or `messages`,
//!   the whole history restated (at start, and after a compression);
//! - `{"$rewindTo": id}` after `/rewind`.
//!
//! What is read, and why:
//!
//! - **A message written again is not said again.** Gemini CLI rewrites a
//!   message whole, under its id, when it adds to it: its tool calls once they
//!   ran, its token counts. The words are in the first write, which never has
//!   tool calls (a message that only calls tools is a new one with no text), so
//!   a `gemini` record with `toolCalls` is a tool call and no more words, and a
//!   record repeating the message just before it adds nothing else.
//! - `$set.messages` restates what was said already and is passed over; so is
//!   `$rewindTo`, since what was sent stays sent.
//! - A `user` record whose text opens with Gemini CLI's own context blocks
//!   (`<session_context>`, `<hook_context>`, which it leaves out of a resumed
//!   history too) is nobody's words.
//! - `info` "Request cancelled." is what Gemini CLI records when the person
//!   stops a turn (Esc): the turn ends there, and no AfterAgent fires for it.
//! - Thoughts, token counts, `info`, `error` and `warning` notices are not words.
//!   A `gemini` message's `tokens` are its response's usage, counted once per
//!   message id (the message written again repeats them).

use harness::payload::str_of;
use harness::transcript::{MAX_LINE_BYTES, ReadOut, Rec, TranscriptSource, for_each_line};
use harness::usage::{Usage, count, without_cache};
use protocol::TitleSource;
use serde_json::{Map, Value};
use std::path::Path;

pub struct GeminiTranscript;

impl TranscriptSource for GeminiTranscript {
    fn read(&self, path: &Path, cursor: u64) -> std::io::Result<ReadOut> {
        let mut out = ReadOut::default();
        let mut parser = Parser::default();
        let end = for_each_line(path, cursor, MAX_LINE_BYTES, &mut |line| {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                return;
            };
            let r = parser.record(&v);
            out.recs.extend(r.recs);
            out.facts.model = r.model.or(out.facts.model.take());
            out.usage.extend(r.usage);
            if let Some(title) = r.summary {
                out.facts.title = Some(title);
                out.facts.title_source = Some(TitleSource::Harness);
            }
        })?;
        out.cursor = end;
        Ok(out)
    }
}

/// What one record adds: `Rec`s for the turn log, facts, and (for backfill) the
/// session's id, kind and times.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Record {
    pub recs: Vec<Rec>,
    pub model: Option<String>,
    /// Gemini CLI's own title for the session.
    pub summary: Option<String>,
    pub session_id: Option<String>,
    pub kind: Option<String>,
    /// The instants the record names (epoch ms).
    pub times: Vec<i64>,
    /// A `gemini` message's tokens.
    pub usage: Option<Usage>,
}

/// What Gemini CLI records when the person stops a turn.
const CANCELLED: &str = "Request cancelled.";

/// Gemini CLI's own context blocks, which open a `user` record that is not the
/// person's (its `isIgnoredUserContent` skips the same).
const CONTEXT_BLOCKS: &[&str] = &["<session_context>", "<hook_context>"];

/// Reads records in file order; remembers the last message's id, since a
/// message written again follows itself (see the module comment).
#[derive(Debug, Default)]
pub struct Parser {
    last_id: Option<String>,
}

impl Parser {
    pub fn record(&mut self, v: &Value) -> Record {
        let mut out = Record::default();
        let Some(r) = v.as_object() else {
            return out;
        };
        let time = |k: &str| {
            r.get(k)
                .and_then(Value::as_str)
                .and_then(protocol::time::parse_rfc3339_ms)
        };
        if let Some(set) = r.get("$set").and_then(Value::as_object) {
            metadata(set, &mut out);
            return out;
        }
        let Some(id) = str_of(r, "id") else {
            // The session's metadata (it has no id), or a rewind.
            if r.contains_key("projectHash") {
                metadata(r, &mut out);
            }
            return out;
        };
        let again = self.last_id.replace(id.clone()) == Some(id.clone());
        let at_ms = time("timestamp");
        out.times.extend(at_ms);
        match r.get("type").and_then(Value::as_str).unwrap_or("") {
            "gemini" => {
                out.model = str_of(r, "model");
                out.usage = at_ms.and_then(|at| usage_of(&id, r.get("tokens")?, &out.model, at));
                let calls = r
                    .get("toolCalls")
                    .and_then(Value::as_array)
                    .is_some_and(|c| !c.is_empty());
                if calls {
                    out.recs.push(Rec::Tool);
                } else if !again {
                    let words = text_of(r.get("content"));
                    if !words.trim().is_empty() {
                        out.recs.push(Rec::Reply { words, at_ms });
                    }
                }
            }
            "user" if !again => {
                let content = r.get("content");
                if parts(content).any(|p| p.get("functionResponse").is_some()) {
                    out.recs.push(Rec::Tool);
                    return out;
                }
                let words = match r.get("displayContent") {
                    Some(shown) if !shown.is_null() => text_of(Some(shown)),
                    _ => text_of(content),
                };
                let trimmed = words.trim_start();
                if !trimmed.is_empty() && !CONTEXT_BLOCKS.iter().any(|b| trimmed.starts_with(b)) {
                    out.recs.push(Rec::Ask {
                        words,
                        prompt_id: Some(id),
                        at_ms,
                        injected: false,
                    });
                }
            }
            "info" if text_of(r.get("content")).trim() == CANCELLED => {
                out.recs.push(Rec::Interrupted)
            }
            _ => {}
        }
        out
    }
}

/// A message's `tokens`, as Gemini's API counts them: `input` is the whole
/// prompt, `cached` included; `tool` is the prompt of a tool's use (input
/// too); `thoughts` are billed as output.
fn usage_of(id: &str, t: &Value, model: &Option<String>, at_ms: i64) -> Option<Usage> {
    let cache_read = count(t, "cached");
    let u = Usage {
        key: id.to_string(),
        at_ms,
        model: model.clone(),
        input: without_cache(count(t, "input"), cache_read, 0) + count(t, "tool"),
        output: count(t, "output") + count(t, "thoughts"),
        cache_read,
        cache_write: 0,
    };
    (!u.is_empty()).then_some(u)
}

/// The metadata fields of the first record or of a `$set`.
fn metadata(m: &Map<String, Value>, out: &mut Record) {
    out.session_id = str_of(m, "sessionId");
    out.kind = str_of(m, "kind");
    out.summary = str_of(m, "summary")
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    for k in ["startTime", "lastUpdated"] {
        out.times.extend(
            m.get(k)
                .and_then(Value::as_str)
                .and_then(protocol::time::parse_rfc3339_ms),
        );
    }
}

/// A content's parts: a list, or one part on its own.
fn parts(content: Option<&Value>) -> impl Iterator<Item = &Value> {
    let list: &[Value] = match content {
        Some(Value::Array(a)) => a,
        Some(one @ Value::Object(_)) => std::slice::from_ref(one),
        _ => &[],
    };
    list.iter()
}

/// A content's words: a string, or its text parts run together (they are
/// pieces of one message, as Gemini CLI joins them), thoughts left out.
fn text_of(content: Option<&Value>) -> String {
    if let Some(Value::String(s)) = content {
        return s.clone();
    }
    parts(content)
        .filter(|p| p.get("thought") != Some(&Value::Bool(true)))
        .filter_map(|p| p.as_str().or_else(|| p.get("text").and_then(Value::as_str)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn recs(lines: &[Value]) -> Vec<Rec> {
        let mut p = Parser::default();
        lines.iter().flat_map(|l| p.record(l).recs).collect()
    }

    fn user(id: &str, content: Value) -> Value {
        json!({"id": id, "timestamp": "2026-11-29T20:19:29.119Z", "type": "user", "content": content})
    }

    fn gemini(id: &str, content: &str) -> Value {
        json!({"id": id, "timestamp": "2026-11-29T20:19:29.827Z", "type": "gemini", "content": content,
               "thoughts": [], "tokens": {"input": 10}, "model": "gemini-2.5-flash"})
    }

    #[test]
    fn the_persons_ask_and_the_agents_words() {
        let r = recs(&[
            user("u1", json!([{"text": "Run it."}])),
            gemini("g1", "It printed hello."),
        ]);
        assert_eq!(
            r,
            [
                Rec::Ask {
                    words: "Run it.".into(),
                    prompt_id: Some("u1".into()),
                    at_ms: Some(1_795_983_569_119),
                    injected: false
                },
                Rec::Reply {
                    words: "It printed hello.".into(),
                    at_ms: Some(1_795_983_569_827)
                }
            ]
        );
        // What the person typed, when Gemini CLI sent more (an `@file`'s text).
        let typed = json!({"id": "u2", "type": "user",
            "content": [{"text": "Explain @a.txt"}, {"text": "\n--- Content from referenced files ---\nsecret stuff"}],
            "displayContent": [{"text": "Explain @a.txt"}]});
        assert!(
            matches!(&recs(&[typed])[..], [Rec::Ask { words, .. }] if words == "Explain @a.txt")
        );
    }

    #[test]
    fn a_message_written_again_with_its_tool_calls_is_one_tool_call() {
        let mut with_calls = gemini("g1", "Let me run it.");
        with_calls["toolCalls"] =
            json!([{"id": "c1", "name": "run_shell_command", "args": {}, "status": "success"}]);
        let result = user(
            "u2",
            json!([{"functionResponse": {"id": "c1", "name": "run_shell_command", "response": {"output": "hello"}}}]),
        );
        let r = recs(&[
            gemini("g1", "Let me run it."),
            json!({"$set": {"lastUpdated": "2026-11-29T20:19:29.827Z"}}),
            with_calls,
            result,
            gemini("g2", "Done."),
            gemini("g2", "Done."), // written again with its token counts
        ]);
        let words: Vec<&str> = r
            .iter()
            .filter_map(|r| match r {
                Rec::Reply { words, .. } => Some(words.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(words, ["Let me run it.", "Done."]);
        assert_eq!(r.iter().filter(|r| **r == Rec::Tool).count(), 2);
    }

    #[test]
    fn what_is_not_words_is_skipped() {
        let skipped = [
            json!({"sessionId": "s", "projectHash": "h", "startTime": "2026-11-29T20:19:28.082Z", "kind": "main"}),
            json!({"$set": {"messages": [{"id": "x", "type": "user", "content": [{"text": "restated"}]}]}}),
            json!({"$rewindTo": "u1"}),
            user(
                "c",
                json!([{"text": "<session_context>\nThis is the Gemini CLI.</session_context>"}]),
            ),
            user("h", json!("<hook_context>added</hook_context>")),
            user("e", json!([{"text": "  "}])),
            json!({"id": "i", "type": "info", "content": "Update available"}),
            json!({"id": "w", "type": "error", "content": "[API Error: quota]"}),
            json!({"id": "t", "type": "gemini", "content": [{"text": "pondering", "thought": true}]}),
            json!("not an object"),
        ];
        for v in skipped {
            assert!(recs(std::slice::from_ref(&v)).is_empty(), "{v}");
        }
    }

    #[test]
    fn a_cancelled_request_ends_the_turn() {
        let r = recs(&[json!({"id": "i", "type": "info", "content": "Request cancelled."})]);
        assert_eq!(r, [Rec::Interrupted]);
    }

    #[test]
    fn facts_and_times() {
        let mut p = Parser::default();
        let meta = p.record(
            &json!({"sessionId": "s1", "projectHash": "h", "startTime": "2026-11-29T20:19:28.082Z",
                                     "lastUpdated": "2026-11-29T20:19:28.082Z", "kind": "main"}),
        );
        assert_eq!(
            (meta.session_id.as_deref(), meta.kind.as_deref()),
            (Some("s1"), Some("main"))
        );
        assert_eq!(meta.times, [1_795_983_568_082, 1_795_983_568_082]);
        let title = p.record(&json!({"$set": {"summary": " Fix the parser "}}));
        assert_eq!(title.summary.as_deref(), Some("Fix the parser"));
        assert_eq!(
            p.record(&gemini("g", "x")).model.as_deref(),
            Some("gemini-2.5-flash")
        );
    }

    #[test]
    fn the_reader_reads_from_its_cursor() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.jsonl");
        let lines = [
            user("u1", json!([{"text": "one"}])),
            gemini("g1", "One."),
            json!({"$set": {"summary": "Counting"}}),
        ];
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&path, &text).unwrap();
        let first = GeminiTranscript.read(&path, 0).unwrap();
        assert_eq!(first.recs.len(), 2);
        assert_eq!(first.cursor, text.len() as u64);
        assert_eq!(first.facts.model.as_deref(), Some("gemini-2.5-flash"));
        assert_eq!(
            (first.facts.title.as_deref(), first.facts.title_source),
            (Some("Counting"), Some(TitleSource::Harness))
        );
        let again = GeminiTranscript.read(&path, first.cursor).unwrap();
        assert!(again.recs.is_empty());
    }

    /// A recorded session (Gemini CLI 0.61.0): a message written again with
    /// its tool calls repeats its tokens under its id.
    #[test]
    fn each_messages_tokens_under_its_id() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../conformance/transcripts/gemini-cli/tool-call-between-texts.jsonl");
        let out = GeminiTranscript.read(&path, 0).unwrap();
        let mut keys: Vec<&str> = out.usage.iter().map(|u| u.key.as_str()).collect();
        keys.dedup();
        assert_eq!(keys.len(), 3, "{keys:?}");
        let first = &out.usage[0];
        assert_eq!((first.input, first.output, first.cache_read), (12217, 8, 0));
        assert_eq!(first.model.as_deref(), Some("gemini-2.5-flash"));
        let cached = json!({"id": "g", "timestamp": "2026-11-29T20:19:29.827Z", "type": "gemini",
            "content": "x", "model": "m",
            "tokens": {"input": 1000, "output": 10, "cached": 800, "thoughts": 5, "tool": 3}});
        let u = Parser::default().record(&cached).usage.unwrap();
        assert_eq!((u.input, u.cache_read, u.output), (203, 800, 15));
    }
}
