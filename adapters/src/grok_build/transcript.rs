//! Reading Grok Build's session update stream, the `transcript_path` of every
//! hook: `<grok home>/sessions/<url-encoded cwd>/<session id>/updates.jsonl`.
//!
//! Owns the stream's format: turning its lines into the person's words, the
//! agent's words, tool calls and turn ends (`Rec`s), and naming Grok's version
//! (`version.json` in the home the path is under). Parsing only: the reads are
//! `for_each_line`'s, and which turns go out is `TurnLog`'s. Must not write
//! anything of Grok's.
//!
//! The format is ADAPTERS.md's Grok Build row; no Grok Build runs where this was
//! written, so its tests use streams made from that row
//! (`conformance/transcripts/grok-build/README.md`). One ACP update per line,
//! `{timestamp, method, params: {sessionId, update}}`, `timestamp` in unix
//! seconds, the update's kind in `update.sessionUpdate`:
//!
//! - `user_message_chunk` is the prompt and `agent_message_chunk` the agent's
//!   words, the text in `update.content.text`; chunks that follow one another
//!   are one message. A thought, a plan or any other update between two chunks
//!   does not part them; a tool call, the other side's words or a turn's end do.
//! - `tool_call` and `tool_call_update` are tool calls (`Rec::Tool`).
//! - `turn_completed` ends the turn and names it: its `prompt_id` is the hooks'
//!   `promptId`, and becomes the turn's, so reads that stop at a prompt (and a
//!   Stop's hold) find it (`Rec::Done`).
//! - Thoughts and Grok's own `_x.ai/session/update` records are not words.
//!
//! A message cut by the end of a read is sent as two pieces, a blank line
//! between them; a read never leaves words behind for a later one, since no
//! later read may come (a session's end).

use super::summary::{epoch_ms, home_of, version};
use harness::transcript::{MAX_LINE_BYTES, ReadOut, Rec, TranscriptSource, for_each_line};
use serde_json::Value;
use std::path::Path;

pub struct GrokTranscript;

impl TranscriptSource for GrokTranscript {
    fn read(&self, path: &Path, cursor: u64) -> std::io::Result<ReadOut> {
        let mut stream = Stream::default();
        let end = for_each_line(path, cursor, MAX_LINE_BYTES, &mut |line| stream.line(line))?;
        Ok(ReadOut {
            recs: stream.finish(),
            version: home_of(path).and_then(|home| version(&home)),
            cursor: end,
            ..Default::default()
        })
    }
}

/// Grok's method for its own records, which carry no words.
const GROK_METHOD: &str = "_x.ai/session/update";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Person,
    Agent,
}

/// The message being put together from its chunks.
#[derive(Debug)]
struct Message {
    side: Side,
    words: String,
    at_ms: Option<i64>,
}

/// Turns lines into `Rec`s, in order, joining chunks into messages.
#[derive(Debug, Default)]
pub struct Stream {
    recs: Vec<Rec>,
    message: Option<Message>,
}

impl Stream {
    /// Reads one line; a line that is not a JSON object says nothing.
    pub fn line(&mut self, line: &str) {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            return;
        };
        let update = v.pointer("/params/update");
        let kind = update
            .and_then(|u| u.get("sessionUpdate"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let grok_own = v.get("method").and_then(Value::as_str) == Some(GROK_METHOD);
        let text = || {
            update
                .and_then(|u| u.pointer("/content/text"))
                .and_then(Value::as_str)
                .unwrap_or("")
        };
        let at_ms = v.get("timestamp").and_then(epoch_ms);
        match kind {
            "turn_completed" => {
                self.end_message();
                let prompt_id = update
                    .and_then(|u| u.get("prompt_id"))
                    .and_then(Value::as_str)
                    .filter(|p| !p.is_empty())
                    .map(str::to_string);
                self.recs.push(Rec::Done { prompt_id });
            }
            _ if grok_own => {}
            "user_message_chunk" => self.chunk(Side::Person, text(), at_ms),
            "agent_message_chunk" => self.chunk(Side::Agent, text(), at_ms),
            "tool_call" | "tool_call_update" => {
                self.end_message();
                self.recs.push(Rec::Tool);
            }
            _ => {}
        }
    }

    fn chunk(&mut self, side: Side, text: &str, at_ms: Option<i64>) {
        if self.message.as_ref().is_some_and(|m| m.side != side) {
            self.end_message();
        }
        let m = self.message.get_or_insert(Message {
            side,
            words: String::new(),
            at_ms,
        });
        m.words.push_str(text);
    }

    fn end_message(&mut self) {
        let Some(m) = self.message.take() else {
            return;
        };
        self.recs.push(match m.side {
            // A prompt is a turn even without text (an image alone).
            Side::Person => Rec::Ask {
                words: m.words,
                prompt_id: None,
                at_ms: m.at_ms,
                injected: false,
            },
            Side::Agent if m.words.trim().is_empty() => return,
            Side::Agent => Rec::Reply {
                words: m.words,
                at_ms: m.at_ms,
            },
        });
    }

    /// The records finished so far (a message still being put together stays).
    pub fn drain(&mut self) -> std::vec::Drain<'_, Rec> {
        self.recs.drain(..)
    }

    /// Every record, the last message included.
    pub fn finish(mut self) -> Vec<Rec> {
        self.end_message();
        self.recs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const SID: &str = "019a72c4-3e1d-7b58-a0f2-6c1d9e4b8a37";

    fn update(at: f64, update: Value) -> String {
        json!({"timestamp": at, "method": "session/update", "params": {"sessionId": SID, "update": update}})
            .to_string()
    }

    fn chunk(kind: &str, at: f64, text: &str) -> String {
        update(
            at,
            json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}}),
        )
    }

    fn recs(lines: &[String]) -> Vec<Rec> {
        let mut s = Stream::default();
        for l in lines {
            s.line(l);
        }
        s.finish()
    }

    #[test]
    fn chunks_make_messages_and_the_turns_end_names_it() {
        let r = recs(&[
            chunk("user_message_chunk", 1_794_391_201.0, "Read sample.txt "),
            chunk("user_message_chunk", 1_794_391_201.0, "and reply"),
            chunk("agent_thought_chunk", 1_794_391_202.0, "hmm"),
            chunk("agent_message_chunk", 1_794_391_202.5, "Let me "),
            update(1_794_391_202.6, json!({"sessionUpdate": "plan", "entries": []})),
            chunk("agent_message_chunk", 1_794_391_202.7, "read it."),
            update(
                1_794_391_203.0,
                json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "read", "status": "pending"}),
            ),
            update(
                1_794_391_203.2,
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"}),
            ),
            chunk("agent_message_chunk", 1_794_391_204.0, "alpha-token-"),
            chunk("agent_message_chunk", 1_794_391_204.1, "marker-42"),
            json!({"timestamp": 1_794_391_204.2, "method": GROK_METHOD,
                   "params": {"sessionId": SID, "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "not words"}}}})
            .to_string(),
            json!({"timestamp": 1_794_391_205, "method": GROK_METHOD,
                   "params": {"sessionId": SID, "update": {"sessionUpdate": "turn_completed", "prompt_id": "p1"}}})
            .to_string(),
        ]);
        assert_eq!(
            r,
            [
                Rec::Ask {
                    words: "Read sample.txt and reply".into(),
                    prompt_id: None,
                    at_ms: Some(1_794_391_201_000),
                    injected: false
                },
                Rec::Reply {
                    words: "Let me read it.".into(),
                    at_ms: Some(1_794_391_202_500)
                },
                Rec::Tool,
                Rec::Tool,
                Rec::Reply {
                    words: "alpha-token-marker-42".into(),
                    at_ms: Some(1_794_391_204_000)
                },
                Rec::Done {
                    prompt_id: Some("p1".into())
                },
            ]
        );
    }

    #[test]
    fn an_image_alone_is_a_prompt_and_junk_is_nothing() {
        let image = update(
            1.0,
            json!({"sessionUpdate": "user_message_chunk", "content": {"type": "image", "data": "…"}}),
        );
        assert!(matches!(&recs(&[image])[..], [Rec::Ask { words, .. }] if words.is_empty()));
        let junk = [
            "not json".to_string(),
            "[]".to_string(),
            update(1.0, json!({"sessionUpdate": "available_commands_update"})),
            chunk("agent_message_chunk", 1.0, "   "),
        ];
        assert!(recs(&junk).is_empty());
    }

    #[test]
    fn the_reader_reads_from_its_cursor_and_names_the_version() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join(".grok");
        let path = home.join(format!("sessions/%2Fw/{SID}/updates.jsonl"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(home.join("version.json"), r#"{"version":"1.0.77"}"#).unwrap();
        let first = chunk("user_message_chunk", 1.0, "hi") + "\n";
        std::fs::write(&path, &first).unwrap();
        let out = GrokTranscript.read(&path, 0).unwrap();
        assert_eq!((out.recs.len(), out.cursor), (1, first.len() as u64));
        assert_eq!(out.version.as_deref(), Some("1.0.77"));
        let more = first.clone() + &chunk("agent_message_chunk", 2.0, "hello") + "\n";
        std::fs::write(&path, &more).unwrap();
        let out = GrokTranscript.read(&path, out.cursor).unwrap();
        assert!(matches!(&out.recs[..], [Rec::Reply { words, .. }] if words == "hello"));
    }
}
