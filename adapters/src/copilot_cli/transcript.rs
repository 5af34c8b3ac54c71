//! Copilot CLI's session log, `<copilot home>/session-state/<sessionId>/events.jsonl`,
//! for tier 2, facts and backfill: one JSON record a line, `{"type", "data", "id",
//! "timestamp", "parentId"}`.
//!
//! Owns which records are words: `user.message` (`data.content`, the person's ask
//! as typed; `transformedContent` is Copilot's own wrapping and is not read) and
//! `assistant.message` (`data.content`, then its `toolRequests`), with
//! `tool.execution_start` / `tool.execution_complete` as tool records; the
//! session's own `agentStop` as Copilot wrote its call down (`hook.start`,
//! its `input.timestamp` the call's): the turn is over, and all of it is in
//! the file (`Rec::Stopped`; Copilot writes the log late, `mod.rs`); and what
//! `session.start` says (the model, the version); and each request's tokens
//! (`session.usage_record`, a subagent's included: it was paid for).
//! Everything else (other hooks, the system prompt, the shutdown summary,
//! whose totals restate the usage records) is passed over, and so is
//! everything a subagent wrote into the session's log (a `task` call's): its
//! task is a `user.message` whose `source` is `agent-<its parent>`, its
//! replies and tools carry the `parentToolCallId` of the call that started it,
//! and its model is a `session.model_change` with `source: agent` (Copilot
//! 1.0.102, `conformance/transcripts/copilot-cli/nested-subagents.jsonl`).
//! Only the `task` call's own tool records and its result stay in the turn.
//! Must not write anything, and reads nothing but the file it is given.

use harness::transcript::{MAX_LINE_BYTES, ReadOut, Rec, TranscriptSource, for_each_line};
use harness::usage::{Usage, count, without_cache};
use protocol::SessionBlock;
use serde_json::Value;
use std::path::Path;

pub struct CopilotTranscript;

/// What one record of the log says.
#[derive(Debug, Default)]
pub(super) struct Record {
    pub recs: Vec<Rec>,
    pub session_id: Option<String>,
    pub cwd: Option<String>,
    pub model: Option<String>,
    pub version: Option<String>,
    pub at_ms: Option<i64>,
    /// A `session.usage_record`'s tokens (a subagent's request's too).
    pub usage: Option<Usage>,
}

fn text(v: &Value) -> Option<String> {
    v.as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// One line of the log, read.
pub(super) fn record(v: &Value) -> Record {
    let data = &v["data"];
    let at_ms = v["timestamp"]
        .as_str()
        .and_then(protocol::time::parse_rfc3339_ms);
    let mut r = Record {
        at_ms,
        ..Default::default()
    };
    if v["type"] == "session.usage_record" {
        r.usage = at_ms.and_then(|at| usage_of(v, at));
        return r;
    }
    if subagents(v["type"].as_str().unwrap_or(""), data) {
        return r;
    }
    match v["type"].as_str().unwrap_or("") {
        "session.start" => {
            r.session_id = text(&data["sessionId"]);
            r.model = text(&data["selectedModel"]);
            r.version = text(&data["copilotVersion"]);
            r.cwd = text(&data["context"]["cwd"]);
        }
        "session.model_change" => r.model = text(&data["newModel"]),
        "user.message" => {
            if let Some(words) = text(&data["content"]) {
                r.recs.push(Rec::Ask {
                    words,
                    prompt_id: None,
                    at_ms,
                    injected: false,
                });
            }
        }
        "assistant.message" => {
            if let Some(words) = text(&data["content"]) {
                r.recs.push(Rec::Reply { words, at_ms });
            }
            if data["toolRequests"]
                .as_array()
                .is_some_and(|t| !t.is_empty())
            {
                r.recs.push(Rec::Tool);
            }
        }
        "tool.execution_start" | "tool.execution_complete" => r.recs.push(Rec::Tool),
        "hook.start" if data["hookType"] == "agentStop" && data["input"]["agentId"].is_null() => {
            if let Some(at_ms) = data["input"]["timestamp"].as_i64().or(at_ms) {
                r.recs.push(Rec::Stopped { at_ms });
            }
        }
        _ => {}
    }
    r
}

/// One request's tokens, keyed by the record's own `id`. Copilot's service
/// speaks OpenAI's API, whose input count holds the cache's tokens; they are
/// taken out.
fn usage_of(v: &Value, at_ms: i64) -> Option<Usage> {
    let u = &v["data"]["usage"];
    let (cache_read, cache_write) = (count(u, "cacheReadTokens"), count(u, "cacheWriteTokens"));
    let usage = Usage {
        key: text(&v["id"])?,
        at_ms,
        model: text(&u["model"]),
        input: without_cache(count(u, "inputTokens"), cache_read, cache_write),
        output: count(u, "outputTokens"),
        cache_read,
        cache_write,
    };
    (!usage.is_empty()).then_some(usage)
}

/// True for a record a subagent wrote: its task, its words, its tools, its model.
fn subagents(kind: &str, data: &Value) -> bool {
    let source = data["source"].as_str().unwrap_or("");
    data["parentToolCallId"].is_string()
        || (kind == "user.message" && source.starts_with("agent-"))
        || (kind == "session.model_change" && source == "agent")
}

impl TranscriptSource for CopilotTranscript {
    fn read(&self, path: &Path, cursor: u64) -> std::io::Result<ReadOut> {
        let mut out = ReadOut::default();
        out.cursor = for_each_line(path, cursor, MAX_LINE_BYTES, &mut |line| {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                return;
            };
            let r = record(&v);
            out.recs.extend(r.recs);
            out.usage.extend(r.usage);
            if r.model.is_some() {
                out.facts.model = r.model;
            }
            if r.version.is_some() {
                out.version = r.version;
            }
        })?;
        Ok(out)
    }
}

/// The model the log's `session.start` (or a later model change) names: read
/// from the first lines only, so it stays cheap on a long log.
pub(super) fn facts(path: &Path) -> SessionBlock {
    use std::io::BufRead;
    let mut block = SessionBlock::default();
    let Ok(f) = std::fs::File::open(path) else {
        return block;
    };
    for line in std::io::BufReader::new(f).lines().take(4) {
        let Ok(line) = line else { break };
        if let Ok(v) = serde_json::from_str::<Value>(&line)
            && let Some(model) = record(&v).model
        {
            block.model = Some(model);
            break;
        }
    }
    block
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::transcript::{TurnLog, Want};

    const LOG: &str = concat!(
        r#"{"type":"session.start","data":{"sessionId":"s-1","copilotVersion":"1.0.102","selectedModel":"mock-model","context":{"cwd":"/w"}},"timestamp":"2026-12-01T15:20:49.437Z"}"#,
        "\n",
        r#"{"type":"hook.start","data":{"hookType":"sessionStart"},"timestamp":"2026-12-01T15:20:49.482Z"}"#,
        "\n",
        r#"{"type":"user.message","data":{"content":"run echo hello","transformedContent":"<current_datetime>x</current_datetime>\n\nrun echo hello"},"timestamp":"2026-12-01T15:20:49.581Z"}"#,
        "\n",
        r#"{"type":"system.message","data":{"role":"system","content":"You are the GitHub Copilot CLI"},"timestamp":"2026-12-01T15:20:49.582Z"}"#,
        "\n",
        r#"{"type":"assistant.message","data":{"content":"","toolRequests":[{"toolCallId":"c1","name":"bash"}]},"timestamp":"2026-12-01T15:20:49.600Z"}"#,
        "\n",
        r#"{"type":"tool.execution_complete","data":{"toolCallId":"c1","success":true},"timestamp":"2026-12-01T15:20:49.700Z"}"#,
        "\n",
        r#"{"type":"assistant.message","data":{"content":"It printed hello.","toolRequests":[]},"timestamp":"2026-12-01T15:20:49.753Z"}"#,
        "\n",
    );

    #[test]
    fn the_person_and_the_agent_in_one_turn() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        std::fs::write(&path, LOG).unwrap();
        let out = CopilotTranscript.read(&path, 0).unwrap();
        assert_eq!(out.cursor, LOG.len() as u64);
        assert_eq!(out.facts.model.as_deref(), Some("mock-model"));
        assert_eq!(out.version.as_deref(), Some("1.0.102"));
        let mut log = TurnLog::default();
        log.feed(out.recs);
        let turns = log.take(&Want::All);
        assert_eq!(turns.len(), 1);
        assert_eq!(turns[0].user, "run echo hello");
        assert_eq!(turns[0].assistant, "It printed hello.");
        assert_eq!(facts(&path).model.as_deref(), Some("mock-model"));
        // Nothing new after the cursor.
        assert!(
            CopilotTranscript
                .read(&path, out.cursor)
                .unwrap()
                .recs
                .is_empty()
        );
    }

    /// A real log (Copilot 1.0.102): a `task` call whose subagent hands a
    /// `bash` call to a subagent of its own.
    #[test]
    fn a_subagents_words_are_not_the_sessions_turn() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../conformance/transcripts/copilot-cli/nested-subagents.jsonl");
        let out = CopilotTranscript.read(&path, 0).unwrap();
        let mut log = TurnLog::default();
        log.feed(out.recs);
        let turns = log.take(&Want::All);
        assert_eq!(turns.len(), 1, "{turns:?}");
        assert_eq!(turns[0].user, "please delegate the echo");
        assert_eq!(turns[0].assistant, "All done.");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("GRANDCHILD: echo") && text.contains("Child done."));
        // Six requests, the subagents' among them: the shutdown summary's
        // totals (60 in, 30 out), each once.
        assert_eq!(out.usage.len(), 6);
        let sum = |f: fn(&Usage) -> u64| out.usage.iter().map(f).sum::<u64>();
        assert_eq!((sum(|u| u.input), sum(|u| u.output)), (60, 30));
        assert!(
            out.usage
                .iter()
                .all(|u| u.model.as_deref() == Some("mock-model"))
        );
    }

    /// The session's own `agentStop`, as Copilot wrote its call down, is the
    /// end of its turn; the subagents' (their `agentStop`s are in the same log)
    /// are not.
    #[test]
    fn the_sessions_stop_written_down_ends_its_turn() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../conformance/transcripts/copilot-cli/nested-subagents.jsonl");
        let text = std::fs::read_to_string(&path).unwrap();
        // The session's `agentStop` payload said `timestamp: 1796524698204`.
        let stop = 1_796_524_698_204;
        let at = text
            .find(r#""hookType":"agentStop","input":{"sessionId":"d853543d"#)
            .expect("the session's agentStop record");
        let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let dir = tempfile::tempdir().unwrap();
        let cut = dir.path().join("events.jsonl");
        // Copilot had written everything but the session's own Stop.
        std::fs::write(&cut, &text[..line_start]).unwrap();
        let mut log = TurnLog::default();
        let out = CopilotTranscript.read(&cut, 0).unwrap();
        log.feed(out.recs);
        assert!(!log.stopped_since(stop), "the subagents' Stops are not its");
        assert!(log.take(&Want::StoppedAt(stop)).is_empty());
        std::fs::write(&cut, &text).unwrap();
        log.feed(CopilotTranscript.read(&cut, out.cursor).unwrap().recs);
        assert!(log.stopped_since(stop) && !log.stopped_since(stop + 1));
        let turns = log.take(&Want::StoppedAt(stop));
        assert_eq!((turns.len(), turns[0].assistant.as_str()), (1, "All done."));
    }
}
