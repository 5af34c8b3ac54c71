//! Reading Claude Code's transcript (`<config>/projects/<slug>/<session>.jsonl`):
//! one JSON record per line, turned into the person's words, the agent's words,
//! tool calls, interruptions, and the facts the file holds (titles, the model,
//! a Remote Control link).
//!
//! `user` is the person's words and nothing else (ADAPTERS.md, Transcript row):
//! tool results, meta records, sidechains, task notifications, compaction
//! summaries and injected `<tag>` blocks are skipped; a queued mid-turn message
//! joins the running turn; a peer or channel message is an ask marked injected;
//! `[Request interrupted by user]` ends the turn. An assistant record's
//! `message.usage` is the response's tokens, counted once per `message.id`
//! (Claude Code writes one message as several records, each with the id and
//! the usage). Parsing only: no I/O here.

use harness::frames::{STOP_FEEDBACK, unframe};
use harness::transcript::{ReadOut, Rec, TranscriptSource, read_lines};
use harness::usage::{Usage, count};
use protocol::TitleSource;
use serde_json::Value;
use std::path::Path;

/// A line this long is a pasted image, not words: it is passed over unread.
pub const MAX_LINE: usize = 16 << 20;

pub struct ClaudeTranscript;

impl TranscriptSource for ClaudeTranscript {
    fn read(&self, path: &Path, cursor: u64) -> std::io::Result<ReadOut> {
        let (lines, cursor) = read_lines(path, cursor, MAX_LINE)?;
        let mut out = ReadOut {
            cursor,
            ..Default::default()
        };
        let (mut custom, mut ai) = (None, None);
        for line in lines {
            let l = parse_line(&line);
            out.recs.extend(l.recs);
            custom = l.custom_title.or(custom);
            ai = l.ai_title.or(ai);
            out.facts.model = l.model.or(out.facts.model.take());
            out.facts.url = l.url.or(out.facts.url.take());
            out.usage.extend(l.usage);
        }
        // The last title of each kind wins; the person's over Claude Code's.
        let title = custom
            .map(|t| (t, TitleSource::Custom))
            .or(ai.map(|t| (t, TitleSource::Harness)));
        if let Some((t, source)) = title {
            out.facts.title = Some(t);
            out.facts.title_source = Some(source);
        }
        Ok(out)
    }

    fn first_ask_chars(&self) -> usize {
        50
    }
}

/// What one line adds: records for the turn log, and facts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Line {
    pub recs: Vec<Rec>,
    /// `custom-title` (the person's) or `ai-title` (Claude Code's) text.
    pub custom_title: Option<String>,
    pub ai_title: Option<String>,
    pub model: Option<String>,
    pub url: Option<String>,
    /// An assistant record's tokens (a sidechain's too: it was paid for).
    pub usage: Option<Usage>,
}

const INTERRUPTED: &[&str] = &[
    "[Request interrupted by user]",
    "[Request interrupted by user for tool use]",
];

/// Parses one transcript line. A line that is not a JSON object says nothing.
pub fn parse_line(line: &str) -> Line {
    serde_json::from_str::<Value>(line)
        .map(|v| parse_value(&v))
        .unwrap_or_default()
}

/// Parses one transcript record.
pub fn parse_value(v: &Value) -> Line {
    let mut out = Line::default();
    let Some(r) = v.as_object() else {
        return out;
    };
    let flag = |k: &str| r.get(k).and_then(Value::as_bool).unwrap_or(false);
    let at_ms = r
        .get("timestamp")
        .and_then(Value::as_str)
        .and_then(protocol::time::parse_rfc3339_ms);
    if r.get("type").and_then(Value::as_str) == Some("assistant") {
        out.usage = at_ms.and_then(|at| usage_of(r.get("message")?, at));
    }
    if flag("isSidechain") {
        return out;
    }
    match r.get("type").and_then(Value::as_str).unwrap_or("") {
        "user" => user_record(r, at_ms, &mut out),
        "assistant" => {
            let msg = r.get("message");
            if let Some(model) = msg.and_then(|m| m.get("model")).and_then(Value::as_str)
                && !model.starts_with('<')
            {
                out.model = Some(model.to_string());
            }
            for part in msg
                .and_then(|m| m.get("content"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                match part.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        let words = part.get("text").and_then(Value::as_str).unwrap_or("");
                        if !words.trim().is_empty() {
                            out.recs.push(Rec::Reply {
                                words: words.to_string(),
                                at_ms,
                            });
                        }
                    }
                    Some("tool_use" | "server_tool_use") => out.recs.push(Rec::Tool),
                    _ => {}
                }
            }
        }
        "attachment" => {
            let a = r.get("attachment");
            let field = |k: &str| a.and_then(|a| a.get(k)).and_then(Value::as_str);
            let origin = a
                .and_then(|a| a.get("origin"))
                .and_then(|o| o.get("kind"))
                .and_then(Value::as_str);
            let by_person = origin.is_none_or(|k| k == "human");
            if field("type") == Some("queued_command")
                && field("commandMode").is_none_or(|m| m == "prompt")
                && by_person
            {
                let words = text_of(a.and_then(|a| a.get("prompt")));
                if !words.trim().is_empty() && !all_tag_blocks(&words) {
                    out.recs.push(Rec::More {
                        words: unframe(&words).0,
                    });
                }
            }
        }
        "custom-title" => {
            out.custom_title = r
                .get("customTitle")
                .and_then(Value::as_str)
                .map(str::to_string)
        }
        "ai-title" => out.ai_title = r.get("aiTitle").and_then(Value::as_str).map(str::to_string),
        "system" if r.get("subtype").and_then(Value::as_str) == Some("bridge_status") => {
            out.url = r.get("url").and_then(Value::as_str).map(str::to_string);
        }
        _ => {}
    }
    out
}

fn user_record(r: &serde_json::Map<String, Value>, at_ms: Option<i64>, out: &mut Line) {
    let flag = |k: &str| r.get(k).and_then(Value::as_bool).unwrap_or(false);
    if flag("isCompactSummary") || flag("repeatsCompactSummary") {
        return;
    }
    let content = r.get("message").and_then(|m| m.get("content"));
    if let Some(parts) = content.and_then(Value::as_array)
        && parts
            .iter()
            .any(|p| p.get("type").and_then(Value::as_str) == Some("tool_result"))
    {
        out.recs.push(Rec::Tool);
        return;
    }
    let words = text_of(content);
    let trimmed = words.trim();
    if INTERRUPTED.contains(&trimmed) {
        out.recs.push(Rec::Interrupted);
        return;
    }
    let origin = r.get("origin");
    let kind = origin.and_then(|o| o.get("kind")).and_then(Value::as_str);
    let prompt_id = r
        .get("promptId")
        .and_then(Value::as_str)
        .map(str::to_string);
    let ask = |words: String, injected: bool| Rec::Ask {
        words,
        prompt_id: prompt_id.clone(),
        at_ms,
        injected,
    };
    match kind {
        // Another session's message over Claude Code's inbox: an ask, but not the
        // person's. A subagent's hand-back is the agent's report, never an ask.
        Some("peer") => {
            let handback = origin
                .and_then(|o| o.get("handback"))
                .and_then(Value::as_bool)
                == Some(true);
            if !handback && let Some(inner) = inner_of(trimmed, "cross-session-message") {
                out.recs.push(ask(unframe(&inner).0, true));
            }
        }
        Some("channel") => {
            if let Some(inner) = inner_of(trimmed, "channel") {
                out.recs.push(ask(unframe(&inner).0, true));
            }
        }
        Some(k) if k != "human" => {}
        // A message sessionpipe's Stop hook delivered: the ask of a new turn when
        // it carries sessionpipe's frame; any other hook's feedback is skipped.
        _ if flag("isMeta") => {
            if let Some(reason) = trimmed.strip_prefix(STOP_FEEDBACK)
                && let (words, true) = unframe(reason)
            {
                out.recs.push(ask(words, true));
            }
        }
        _ => {
            if trimmed.is_empty() || all_tag_blocks(trimmed) {
                return;
            }
            out.recs.push(ask(unframe(&words).0, false));
        }
    }
}

/// An assistant message's `usage`, keyed by its `id`. Anthropic's
/// `input_tokens` leaves the cache's tokens out already. A message with no
/// id, or that used nothing (Claude Code's own `<synthetic>` ones), counts
/// nothing.
fn usage_of(msg: &Value, at_ms: i64) -> Option<Usage> {
    let key = msg
        .get("id")
        .and_then(Value::as_str)
        .filter(|k| !k.is_empty())?;
    let u = msg.get("usage")?;
    let model = msg
        .get("model")
        .and_then(Value::as_str)
        .filter(|m| !m.starts_with('<'));
    let usage = Usage {
        key: key.to_string(),
        at_ms,
        model: model.map(str::to_string),
        input: count(u, "input_tokens"),
        output: count(u, "output_tokens"),
        cache_read: count(u, "cache_read_input_tokens"),
        cache_write: count(u, "cache_creation_input_tokens"),
    };
    (!usage.is_empty()).then_some(usage)
}

/// A message's text: a string, or its text parts joined by blank lines.
fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n\n"),
        _ => String::new(),
    }
}

/// True when `s` is nothing but `<tag …>…</tag>` blocks and HTML comments (what
/// Claude Code injects: system reminders, local command output, …).
pub fn all_tag_blocks(s: &str) -> bool {
    let mut rest = s.trim();
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("<!--") {
            match after.find("-->") {
                Some(end) => rest = after[end + 3..].trim_start(),
                None => return false,
            }
            continue;
        }
        let Some(after) = rest.strip_prefix('<') else {
            return false;
        };
        let name_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .unwrap_or(after.len());
        if name_len == 0 {
            return false;
        }
        let name = &after[..name_len];
        let Some(open_end) = after.find('>') else {
            return false;
        };
        if after[..open_end].ends_with('/') {
            rest = after[open_end + 1..].trim_start();
            continue;
        }
        let close = format!("</{name}>");
        match after.find(&close) {
            Some(end) => rest = after[end + close.len()..].trim_start(),
            None => return false,
        }
    }
    true
}

/// The text inside `<tag …>…</tag>` somewhere in `s`, trimmed.
fn inner_of(s: &str, tag: &str) -> Option<String> {
    let start = s.find(&format!("<{tag}"))?;
    let open_end = start + s[start..].find('>')? + 1;
    let close = s[open_end..].find(&format!("</{tag}>"))? + open_end;
    Some(s[open_end..close].trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn recs(v: Value) -> Vec<Rec> {
        parse_line(&v.to_string()).recs
    }

    fn user(content: Value) -> Value {
        json!({"type": "user", "promptId": "p1", "timestamp": "2026-11-29T19:12:03.541Z", "message": {"role": "user", "content": content}})
    }

    #[test]
    fn the_persons_ask_with_its_prompt_id_and_time() {
        let r = recs(user(json!("Run the shell command.")));
        assert_eq!(
            r,
            [Rec::Ask {
                words: "Run the shell command.".into(),
                prompt_id: Some("p1".into()),
                at_ms: Some(1_795_979_523_541),
                injected: false
            }]
        );
        let parts = recs(user(
            json!([{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]),
        ));
        assert!(matches!(&parts[0], Rec::Ask { words, .. } if words == "a\n\nb"));
    }

    #[test]
    fn what_is_not_the_persons_words_is_skipped() {
        let skipped = [
            json!({"type": "user", "isMeta": true, "message": {"content": "Caveat: …"}}),
            json!({"type": "user", "isSidechain": true, "message": {"content": "subagent ask"}}),
            json!({"type": "user", "isCompactSummary": true, "message": {"content": "This session is being continued…"}}),
            json!({"type": "user", "origin": {"kind": "task-notification"}, "message": {"content": "<task-notification>x</task-notification>"}}),
            user(json!(
                "<command-name>/clear</command-name>\n<command-message>clear</command-message>"
            )),
            user(json!("<local-command-stdout>ok</local-command-stdout>")),
            user(json!("<!-- hidden -->")),
            json!({"type": "summary", "summary": "x"}),
            json!("not an object"),
        ];
        for v in skipped {
            assert!(recs(v.clone()).is_empty(), "{v}");
        }
        assert!(parse_line("{not json").recs.is_empty());
    }

    #[test]
    fn a_tool_result_is_a_tool_and_an_interruption_ends_the_turn() {
        assert_eq!(
            recs(user(
                json!([{"type": "tool_result", "tool_use_id": "t", "content": "hello"}])
            )),
            [Rec::Tool]
        );
        assert_eq!(
            recs(user(
                json!([{"type": "text", "text": "[Request interrupted by user for tool use]"}])
            )),
            [Rec::Interrupted]
        );
        assert_eq!(
            recs(user(json!("[Request interrupted by user]"))),
            [Rec::Interrupted]
        );
    }

    #[test]
    fn assistant_words_tool_calls_and_the_model() {
        let line = parse_line(
            &json!({"type": "assistant", "timestamp": "2026-11-29T19:12:04.012Z", "message": {"model": "claude-opus-5-5", "content": [
                {"type": "thinking", "thinking": "hmm"},
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}
            ]}})
            .to_string(),
        );
        assert_eq!(line.model.as_deref(), Some("claude-opus-5-5"));
        assert_eq!(line.recs.len(), 2);
        assert!(matches!(&line.recs[0], Rec::Reply { words, .. } if words == "Let me check."));
        assert_eq!(line.recs[1], Rec::Tool);
        let synthetic = parse_line(
            &json!({"type": "assistant", "message": {"model": "<synthetic>", "content": []}})
                .to_string(),
        );
        assert_eq!(synthetic.model, None);
    }

    #[test]
    fn an_assistant_messages_usage_is_keyed_by_its_id() {
        let rec = |text: &str, output: u64| {
            json!({"type": "assistant", "timestamp": "2026-11-29T19:12:04.012Z", "message": {
                "id": "msg_1", "model": "claude-opus-5-5",
                "content": [{"type": "text", "text": text}],
                "usage": {"input_tokens": 7, "output_tokens": output,
                          "cache_read_input_tokens": 1200, "cache_creation_input_tokens": 300}}})
        };
        let first = parse_line(&rec("Let me check.", 1).to_string())
            .usage
            .unwrap();
        let last = parse_line(&rec("Done.", 42).to_string()).usage.unwrap();
        assert_eq!(
            (first.key.as_str(), first.at_ms),
            ("msg_1", 1_795_979_524_012)
        );
        assert_eq!(
            (last.input, last.output, last.cache_read, last.cache_write),
            (7, 42, 1200, 300)
        );
        assert_eq!(last.model.as_deref(), Some("claude-opus-5-5"));
        let synthetic = json!({"type": "assistant", "timestamp": "2026-11-29T19:12:04.012Z",
            "message": {"id": "x", "model": "<synthetic>", "content": [],
                        "usage": {"input_tokens": 0, "output_tokens": 0}}});
        assert_eq!(parse_line(&synthetic.to_string()).usage, None);
        let sidechain = rec("sub", 3);
        let mut sidechain = sidechain.as_object().unwrap().clone();
        sidechain.insert("isSidechain".into(), json!(true));
        let line = parse_line(&Value::Object(sidechain).to_string());
        assert!(
            line.recs.is_empty() && line.usage.is_some(),
            "paid for all the same"
        );
    }

    #[test]
    fn queued_messages_join_the_turn_unless_not_the_persons() {
        let q = |origin: Value| json!({"type": "attachment", "attachment": {"type": "queued_command", "commandMode": "prompt", "prompt": [{"type": "text", "text": "and also this"}], "origin": origin}});
        assert_eq!(
            recs(q(json!({"kind": "human"}))),
            [Rec::More {
                words: "and also this".into()
            }]
        );
        assert_eq!(
            recs(q(Value::Null)),
            [Rec::More {
                words: "and also this".into()
            }]
        );
        assert!(recs(q(json!({"kind": "task-notification"}))).is_empty());
    }

    #[test]
    fn peer_and_channel_messages_are_injected_asks_and_hand_backs_are_not() {
        let peer = json!({"type": "user", "isMeta": true, "origin": {"kind": "peer"}, "message": {"content": "A message from another Claude session:\n<cross-session-message from-name=\"x\" from-mode=\"y\">please review</cross-session-message>"}});
        assert!(
            matches!(&recs(peer)[..], [Rec::Ask { words, injected: true, .. }] if words == "please review")
        );
        let handback = json!({"type": "user", "origin": {"kind": "peer", "handback": true}, "message": {"content": "<cross-session-message>report</cross-session-message>"}});
        assert!(recs(handback).is_empty());
        let channel = json!({"type": "user", "isMeta": true, "origin": {"kind": "channel", "server": "sessionpipe"}, "message": {"content": "<channel source=\"sessionpipe\" message_id=\"m1\">hello there</channel>"}});
        assert!(
            matches!(&recs(channel)[..], [Rec::Ask { words, injected: true, .. }] if words == "hello there")
        );
    }

    #[test]
    fn sessionpipes_frames_come_off_and_its_stop_hook_deliveries_are_asks() {
        let framed = user(json!(
            "Message via ann-phone (sessionpipe control, signed on the sender's device):\nrun the tests"
        ));
        assert!(
            matches!(&recs(framed)[..], [Rec::Ask { words, injected: false, .. }] if words == "run the tests")
        );
        let delivered = json!({"type": "user", "isMeta": true, "message": {"content": "Stop hook feedback:\nMessage via ann-phone (sessionpipe control, signed on the sender's device):\nand then deploy"}});
        assert!(
            matches!(&recs(delivered)[..], [Rec::Ask { words, injected: true, .. }] if words == "and then deploy")
        );
        let other_hook = json!({"type": "user", "isMeta": true, "message": {"content": "Stop hook feedback:\nlint failed"}});
        assert!(recs(other_hook).is_empty());
    }

    #[test]
    fn titles_and_the_remote_control_link() {
        assert_eq!(
            parse_line(r#"{"type":"custom-title","customTitle":"Fix the build"}"#)
                .custom_title
                .as_deref(),
            Some("Fix the build")
        );
        assert_eq!(
            parse_line(r#"{"type":"ai-title","aiTitle":"Build fixes"}"#)
                .ai_title
                .as_deref(),
            Some("Build fixes")
        );
        let url = parse_line(r#"{"type":"system","subtype":"bridge_status","url":"https://claude.ai/code/session_1"}"#).url;
        assert_eq!(url.as_deref(), Some("https://claude.ai/code/session_1"));
    }

    #[test]
    fn tag_blocks() {
        assert!(all_tag_blocks("<a>x</a>\n<b/>\n<!-- c -->"));
        assert!(!all_tag_blocks("<a>x</a> and words"));
        assert!(!all_tag_blocks("<svg>unclosed"));
        assert!(!all_tag_blocks("plain"));
        assert!(!all_tag_blocks("< 3 is less"));
    }
}
