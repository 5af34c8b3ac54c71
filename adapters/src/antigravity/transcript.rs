//! Reading Antigravity's transcript
//! (`<data dir>/brain/<conversationId>/.system_generated/logs/transcript.jsonl`):
//! one JSON step per line, turned into the person's words, the agent's words and
//! tool calls (ADAPTERS.md, Antigravity Transcript row).
//!
//! A `USER_INPUT` step is an ask; the person's words are inside its
//! `<USER_REQUEST>` blocks, and the blocks Antigravity adds beside them (the
//! editor's state, a settings change) are never the person's. A
//! `PLANNER_RESPONSE` is the agent's words, and its `tool_calls` mean the turn
//! goes on. Every other step (tool output, checkpoints) only says nothing to
//! this reader. Parsing only: the lines come from `read_lines`.

use harness::transcript::{MAX_LINE_BYTES, ReadOut, Rec, TranscriptSource, read_lines};
use serde_json::Value;
use std::path::Path;

pub struct AntigravityTranscript;

impl TranscriptSource for AntigravityTranscript {
    fn read(&self, path: &Path, cursor: u64) -> std::io::Result<ReadOut> {
        let (lines, cursor) = read_lines(path, cursor, MAX_LINE_BYTES)?;
        Ok(ReadOut {
            recs: lines.iter().flat_map(|l| parse_line(l)).collect(),
            cursor,
            ..Default::default()
        })
    }
}

/// What one line says; a line that is not a JSON object says nothing.
pub fn parse_line(line: &str) -> Vec<Rec> {
    serde_json::from_str::<Value>(line)
        .map(|v| records(&v))
        .unwrap_or_default()
}

/// What one step says.
pub fn records(step: &Value) -> Vec<Rec> {
    let content = step.get("content").and_then(Value::as_str).unwrap_or("");
    let at_ms = at_ms(step);
    let mut out = Vec::new();
    match step.get("type").and_then(Value::as_str) {
        Some("USER_INPUT") => {
            if let Some(words) = request_words(content) {
                out.push(Rec::Ask {
                    words,
                    prompt_id: None,
                    at_ms,
                    injected: false,
                });
            }
        }
        Some("PLANNER_RESPONSE") => {
            if !content.trim().is_empty() {
                out.push(Rec::Reply {
                    words: content.to_string(),
                    at_ms,
                });
            }
            let calls = step.get("tool_calls").and_then(Value::as_array);
            if calls.is_some_and(|c| !c.is_empty()) {
                out.push(Rec::Tool);
            }
        }
        _ => {}
    }
    out
}

/// When the step was made (`created_at`, RFC 3339), if it says.
pub fn at_ms(step: &Value) -> Option<i64> {
    step.get("created_at")
        .and_then(Value::as_str)
        .and_then(protocol::time::parse_rfc3339_ms)
}

const OPEN: &str = "<USER_REQUEST>";
const CLOSE: &str = "</USER_REQUEST>";

/// The person's words in a `USER_INPUT`'s content: the text of its
/// `<USER_REQUEST>` blocks (several when sends were joined into one step), or
/// the content itself when it is plain words with no tag at all. Content that is
/// only Antigravity's own blocks is nobody's words.
fn request_words(content: &str) -> Option<String> {
    let mut blocks = Vec::new();
    let mut rest = content;
    while let Some(start) = rest.find(OPEN) {
        let inner = &rest[start + OPEN.len()..];
        let end = inner.find(CLOSE).unwrap_or(inner.len());
        blocks.push(inner[..end].trim());
        rest = inner.get(end + CLOSE.len()..).unwrap_or("");
    }
    let words = if blocks.is_empty() {
        let plain = content.trim();
        if plain.starts_with('<') {
            return None;
        }
        plain.to_string()
    } else {
        blocks.join("\n\n")
    };
    (!words.is_empty()).then_some(words)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(v: Value) -> Vec<Rec> {
        parse_line(&v.to_string())
    }

    #[test]
    fn the_persons_words_are_inside_the_user_request() {
        let r = line(
            json!({"type": "USER_INPUT", "created_at": "2026-11-20T09:00:00Z",
            "content": "<USER_REQUEST>\nFix the auth bug\n</USER_REQUEST><ADDITIONAL_METADATA>open: auth.ts</ADDITIONAL_METADATA>"}),
        );
        assert_eq!(
            r,
            [Rec::Ask {
                words: "Fix the auth bug".into(),
                prompt_id: None,
                at_ms: protocol::time::parse_rfc3339_ms("2026-11-20T09:00:00Z"),
                injected: false
            }]
        );
        let joined = line(json!({"type": "USER_INPUT",
            "content": "<USER_REQUEST>one</USER_REQUEST>\n<USER_REQUEST>two"}));
        assert!(
            matches!(&joined[..], [Rec::Ask { words, at_ms: None, .. }] if words == "one\n\ntwo")
        );
        let plain = line(json!({"type": "USER_INPUT", "content": " just words "}));
        assert!(matches!(&plain[..], [Rec::Ask { words, .. }] if words == "just words"));
        for nobody in [
            json!({"type": "USER_INPUT", "content": "<USER_SETTINGS_CHANGE>Model Selection</USER_SETTINGS_CHANGE>"}),
            json!({"type": "USER_INPUT", "content": "<USER_REQUEST>  </USER_REQUEST>"}),
            json!({"type": "USER_INPUT"}),
        ] {
            assert!(line(nobody.clone()).is_empty(), "{nobody}");
        }
    }

    #[test]
    fn planner_responses_are_the_agents_words_and_tool_calls() {
        let r = line(
            json!({"type": "PLANNER_RESPONSE", "content": "I will check the route.",
            "tool_calls": [{"name": "view_file", "args": {"AbsolutePath": "/a.ts"}}], "thinking": "private"}),
        );
        assert_eq!(
            r,
            [
                Rec::Reply {
                    words: "I will check the route.".into(),
                    at_ms: None
                },
                Rec::Tool
            ]
        );
        assert_eq!(
            line(json!({"type": "PLANNER_RESPONSE", "content": "", "tool_calls": [{"name": "x"}]})),
            [Rec::Tool]
        );
        assert!(line(json!({"type": "GENERIC", "content": "tool output"})).is_empty());
        assert!(parse_line("{not json").is_empty());
    }

    #[test]
    fn reads_complete_lines_from_the_cursor() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("transcript.jsonl");
        let ask = json!({"type": "USER_INPUT", "content": "<USER_REQUEST>hi</USER_REQUEST>"});
        std::fs::write(&p, format!("{ask}\n{{\"type\":\"PLANNER_RES")).unwrap();
        let first = AntigravityTranscript.read(&p, 0).unwrap();
        assert_eq!(first.recs.len(), 1);
        let more = format!(
            "{ask}\n{}\n",
            json!({"type": "PLANNER_RESPONSE", "content": "hello"})
        );
        std::fs::write(&p, more).unwrap();
        let next = AntigravityTranscript.read(&p, first.cursor).unwrap();
        assert!(matches!(&next.recs[..], [Rec::Reply { words, .. }] if words == "hello"));
    }
}
