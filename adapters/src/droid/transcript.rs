//! Droid's session transcript, `~/.factory/sessions/<cwd with / as ->/<id>.jsonl`
//! (the payload's `transcript_path`), for tier 2, facts and backfill, and the
//! `<id>.settings.json` beside it for the model.
//!
//! Owns which records are words. The file opens with a `session_start` record
//! (`id`, `title`, `cwd`); then `message` records whose `message.role` is `user`
//! or `assistant` and whose `content` is a list of parts: `text`, `tool_use`,
//! `tool_result`. Droid writes its own things as user messages too, and they are
//! not the person's: a hook's record (`hookEventName`, no content) and its
//! context (`<system-reminder>` text). `agent_turn_outcome` closes a turn. A
//! subagent's session (a `Task` call's) has a file of its own, whose
//! `session_start` names its caller (`callingSessionId`).
//! Must not write anything, and reads nothing but the files it is given.

use harness::transcript::{MAX_LINE_BYTES, ReadOut, Rec, TranscriptSource, for_each_line};
use protocol::{SessionBlock, TitleSource};
use serde_json::Value;
use std::path::{Path, PathBuf};

pub struct DroidTranscript;

/// What one record of the transcript says.
#[derive(Debug, Default)]
pub(super) struct Record {
    pub recs: Vec<Rec>,
    pub session_id: Option<String>,
    pub cwd: Option<String>,
    pub title: Option<(String, TitleSource)>,
    pub model: Option<String>,
    pub at_ms: Option<i64>,
    /// The session a subagent's session works for (`session_start`'s
    /// `callingSessionId`).
    pub caller: Option<String>,
}

fn nonempty(v: &Value) -> Option<String> {
    v.as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// Droid's own words in a user message: its context and reminders.
fn injected(text: &str) -> bool {
    text.trim_start().starts_with("<system-reminder>")
}

/// One line of the transcript, read.
pub(super) fn record(v: &Value) -> Record {
    let at_ms = v["timestamp"]
        .as_str()
        .and_then(protocol::time::parse_rfc3339_ms);
    let mut r = Record {
        at_ms,
        ..Default::default()
    };
    match v["type"].as_str().unwrap_or("") {
        "session_start" => {
            r.session_id = nonempty(&v["id"]);
            r.cwd = nonempty(&v["cwd"]);
            r.caller = nonempty(&v["callingSessionId"]);
            let source = if v["isSessionTitleManuallySet"] == true {
                TitleSource::Custom
            } else {
                TitleSource::Harness
            };
            r.title = nonempty(&v["title"]).map(|t| (t, source));
        }
        "message" => {
            let m = &v["message"];
            if m.get("hookEventName").is_some() {
                return r;
            }
            r.model = nonempty(&m["modelId"]);
            let parts = m["content"].as_array().map(Vec::as_slice).unwrap_or(&[]);
            let user = m["role"] == "user";
            let mut words = Vec::new();
            let mut tool = false;
            for p in parts {
                match p["type"].as_str().unwrap_or("") {
                    "text" => {
                        if let Some(t) = nonempty(&p["text"]).filter(|t| !(user && injected(t))) {
                            words.push(t);
                        }
                    }
                    "tool_use" | "tool_result" => tool = true,
                    _ => {}
                }
            }
            if !words.is_empty() {
                let words = words.join("\n");
                r.recs.push(if user {
                    Rec::Ask {
                        words,
                        prompt_id: None,
                        at_ms,
                        injected: false,
                    }
                } else {
                    Rec::Reply { words, at_ms }
                });
            }
            if tool {
                r.recs.push(Rec::Tool);
            }
        }
        "agent_turn_outcome" => r.recs.push(Rec::Done { prompt_id: None }),
        _ => {}
    }
    r
}

impl TranscriptSource for DroidTranscript {
    fn read(&self, path: &Path, cursor: u64) -> std::io::Result<ReadOut> {
        let mut out = ReadOut::default();
        out.cursor = for_each_line(path, cursor, MAX_LINE_BYTES, &mut |line| {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                return;
            };
            let r = record(&v);
            out.recs.extend(r.recs);
            if let Some((title, source)) = r.title {
                out.facts.title = Some(title);
                out.facts.title_source = Some(source);
            }
        })?;
        if let Some(model) = settings_model(path) {
            out.facts.model = Some(model);
        }
        Ok(out)
    }
}

/// `<id>.settings.json` beside `<id>.jsonl`.
fn settings_of(transcript: &Path) -> Option<PathBuf> {
    let stem = transcript.file_stem()?.to_str()?;
    Some(transcript.with_file_name(format!("{stem}.settings.json")))
}

/// The model the session's settings name (`custom:Mock-0`).
pub(super) fn settings_model(transcript: &Path) -> Option<String> {
    let text = std::fs::read(settings_of(transcript)?).ok()?;
    let v: Value = serde_json::from_slice(&text).ok()?;
    nonempty(&v["model"])
}

/// The model (settings) and the title (the `session_start` record, the
/// transcript's first line).
pub(super) fn facts(transcript: &Path) -> SessionBlock {
    use std::io::BufRead;
    let mut block = SessionBlock {
        model: settings_model(transcript),
        ..Default::default()
    };
    let first = std::fs::File::open(transcript)
        .ok()
        .and_then(|f| std::io::BufReader::new(f).lines().next()?.ok());
    if let Some((title, source)) = first
        .and_then(|l| serde_json::from_str::<Value>(&l).ok())
        .and_then(|v| record(&v).title)
    {
        block.title = Some(title);
        block.title_source = Some(source);
    }
    block
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::transcript::{TurnLog, Want};
    use serde_json::json;

    fn lines() -> String {
        [
            json!({"type": "session_start", "id": "s-1", "title": "run echo hello", "cwd": "/w",
                "isSessionTitleManuallySet": false}),
            json!({"type": "message", "id": "h1", "timestamp": "2026-12-01T15:22:20.124Z",
                "message": {"role": "user", "content": [], "visibility": "user_only",
                    "hookEventName": "SessionStart"}}),
            json!({"type": "message", "id": "context-1", "timestamp": "2026-12-01T15:22:20.171Z",
                "message": {"role": "user", "content": [{"type": "text", "text": "<system-reminder>\nskills</system-reminder>"}]}}),
            json!({"type": "message", "id": "u1", "timestamp": "2026-12-01T15:22:20.173Z",
                "message": {"role": "user", "content": [{"type": "text", "text": "run echo hello"}]}}),
            json!({"type": "message", "id": "a1", "timestamp": "2026-12-01T15:22:20.254Z",
                "message": {"role": "assistant", "modelId": "custom:Mock-0",
                    "content": [{"type": "tool_use", "id": "call_1", "name": "Execute", "input": {}}]}}),
            json!({"type": "message", "id": "r1", "timestamp": "2026-12-01T15:22:20.316Z",
                "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "hello"}]}}),
            json!({"type": "message", "id": "a2", "timestamp": "2026-12-01T15:22:20.346Z",
                "message": {"role": "assistant", "content": [{"type": "text", "text": "It printed hello."}]}}),
            json!({"type": "agent_turn_outcome", "turnId": "u1", "reason": "completed"}),
        ]
        .iter()
        .map(|v| format!("{v}\n"))
        .collect()
    }

    #[test]
    fn the_persons_words_not_droids_and_the_agents_reply() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s-1.jsonl");
        std::fs::write(&path, lines()).unwrap();
        std::fs::write(
            dir.path().join("s-1.settings.json"),
            r#"{"model": "custom:Mock-0"}"#,
        )
        .unwrap();
        let out = DroidTranscript.read(&path, 0).unwrap();
        assert_eq!(out.facts.model.as_deref(), Some("custom:Mock-0"));
        assert_eq!(out.facts.title.as_deref(), Some("run echo hello"));
        let mut log = TurnLog::default();
        log.feed(out.recs);
        let turns = log.take(&Want::All);
        assert_eq!(turns.len(), 1, "{turns:?}");
        assert_eq!(turns[0].user, "run echo hello");
        assert_eq!(turns[0].assistant, "It printed hello.");
        let f = facts(&path);
        assert_eq!(f.title_source, Some(TitleSource::Harness));
        assert_eq!(f.model.as_deref(), Some("custom:Mock-0"));
    }
}
