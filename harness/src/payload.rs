//! Helpers shared by adapters whose payloads are JSON objects (most of them are
//! Claude-shaped): reading fields, capping values, the attention message.
//!
//! Nothing here knows a particular harness; a quirk belongs in its adapter file.

use protocol::{ToolEnded, ToolStarted, valid_session_id};
use serde_json::{Map, Value};
use spool::Job;
use spool::paths::tilde;

/// The largest `input` or `output` carried on a tool event, as serialised JSON.
pub const MAX_TOOL_VALUE_BYTES: usize = 64 * 1024;
/// The longest attention message.
pub const MAX_MESSAGE_CHARS: usize = 200;
/// The longest error text on a tool event.
pub const MAX_ERROR_CHARS: usize = 2000;

/// The payload as a JSON object, or why it is not one.
pub fn payload_object(job: &Job) -> Result<Map<String, Value>, MapError> {
    if job.dropped > 0 {
        return Err(MapError(format!(
            "the payload was cut at {} bytes ({} more dropped)",
            job.payload.len(),
            job.dropped
        )));
    }
    if job.payload.iter().all(u8::is_ascii_whitespace) {
        return Err("the payload is empty".into());
    }
    match serde_json::from_slice::<Value>(&job.payload) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err("the payload is JSON but not an object".into()),
        Err(e) => Err(MapError(format!("the payload is not JSON: {e}"))),
    }
}

/// A non-empty string field.
pub fn str_of(p: &Map<String, Value>, key: &str) -> Option<String> {
    p.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// A non-negative integer field (accepts a whole float, as JS writes numbers).
pub fn u64_of(p: &Map<String, Value>, key: &str) -> Option<u64> {
    match p.get(key)? {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                .map(|f| f as u64)
        }),
        _ => None,
    }
}

/// The session id of a payload, checked against the protocol's charset.
pub fn session_id(p: &Map<String, Value>, key: &str) -> Result<String, MapError> {
    let id = str_of(p, key).ok_or_else(|| MapError(format!("the payload has no {key}")))?;
    if valid_session_id(&id) {
        Ok(id)
    } else {
        Err(MapError(format!(
            "session id {id:?} is not a valid protocol session id"
        )))
    }
}

/// A folder for `session.cwd`, with the harness's home written `~`.
pub fn cwd_for(job: &Job, folder: &str) -> String {
    tilde(folder, job.home().as_deref())
}

/// A tool's `input`/`output`, cut to `MAX_TOOL_VALUE_BYTES` of JSON. A value over
/// the bound becomes a string holding the start of its JSON and a marker.
///
/// `secrets@1` runs before the cut: a cut through a token leaves a piece that no
/// rule recognises any more, so the whole value is redacted first.
pub fn capped(v: &Value) -> Value {
    let json = v.to_string();
    if json.len() <= MAX_TOOL_VALUE_BYTES {
        return v.clone();
    }
    let mut clean = v.clone();
    redact::map_strings(&mut clean, &redact::secrets);
    let json = clean.to_string();
    let marker = format!("…[cut: {} bytes]", json.len());
    let keep = floor_char_boundary(&json, MAX_TOOL_VALUE_BYTES - marker.len());
    Value::String(format!("{}{marker}", &json[..keep]))
}

/// `s` cut to at most `max` characters, ending in `…` when cut. `secrets@1` runs
/// before a cut (see `capped`).
pub fn cut_chars(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let clean = redact::secrets(s);
    if clean.chars().count() <= max {
        return clean.into_owned();
    }
    let mut out: String = clean.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A one-line message naming a tool call: `Bash cat /x`, `Read ~/a.txt`.
/// Whitespace runs become one space; at most 200 characters.
pub fn tool_message(tool: &str, input: Option<&Value>) -> String {
    const KEYS: &[&str] = &[
        "command",
        "cmd",
        "file_path",
        "path",
        "url",
        "pattern",
        "query",
        "description",
        "prompt",
    ];
    let summary = input.and_then(|i| {
        let obj = i.as_object()?;
        KEYS.iter()
            .find_map(|k| obj.get(*k).and_then(Value::as_str))
            .or_else(|| obj.values().find_map(Value::as_str))
            .map(str::to_string)
    });
    let text = match summary {
        Some(s) if !s.trim().is_empty() => format!("{tool} {s}"),
        _ => tool.to_string(),
    };
    one_line(&text, MAX_MESSAGE_CHARS)
}

/// Collapses whitespace runs to one space, trims, and cuts to `max` characters.
pub fn one_line(s: &str, max: usize) -> String {
    // Redact before joining lines: a multi-line secret (a PEM block) is only
    // recognised in its own shape.
    let clean = redact::secrets(s);
    let joined = clean.split_whitespace().collect::<Vec<_>>().join(" ");
    cut_chars(&joined, max)
}

/// Number of characters in a string (Unicode scalar values).
pub fn char_count(s: &str) -> u64 {
    s.chars().count() as u64
}

/// The harness version in `AI_AGENT` (`claude-code_2-1-332_harness` → `2.1.332`),
/// when it names `harness`.
pub fn version_from_ai_agent(job: &Job, harness: &str) -> Option<String> {
    let mut parts = job.env("AI_AGENT")?.split('_');
    if parts.next()? != harness {
        return None;
    }
    let version = parts.next()?.replace('-', ".");
    let plausible = !version.is_empty()
        && version.len() <= 64
        && version
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.');
    plausible.then_some(version)
}

/// True for a canonical 8-4-4-4-12 hex UUID.
pub fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// Where a Claude-shaped payload keeps a tool call's fields. Harnesses that copy
/// Claude Code's hook payloads differ only in a few names (Codex's `turn_id`).
#[derive(Clone, Copy, Debug)]
pub struct ToolKeys {
    pub tool: &'static str,
    pub call_id: &'static str,
    pub turn_id: &'static str,
    pub agent_id: &'static str,
    pub input: &'static str,
    pub output: &'static str,
    pub ms: &'static str,
}

/// Claude Code's own names.
pub const CLAUDE_TOOL_KEYS: ToolKeys = ToolKeys {
    tool: "tool_name",
    call_id: "tool_use_id",
    turn_id: "prompt_id",
    agent_id: "agent_id",
    input: "tool_input",
    output: "tool_response",
    ms: "duration_ms",
};

/// The tool a payload names at `key`, as the protocol takes a tool name
/// (`protocol::fit_tool_name`). Every tool name an event carries comes from here.
pub fn tool_of(p: &Map<String, Value>, key: &str) -> Option<String> {
    str_of(p, key).map(|t| protocol::fit_tool_name(&t))
}

/// `tool.started` from a Claude-shaped payload; a call without a tool name is
/// `unknown`, never dropped.
pub fn tool_started(p: &Map<String, Value>, k: &ToolKeys) -> ToolStarted {
    ToolStarted {
        tool: tool_of(p, k.tool).unwrap_or_else(|| "unknown".into()),
        call_id: str_of(p, k.call_id),
        turn_id: str_of(p, k.turn_id),
        agent_id: str_of(p, k.agent_id),
        input: p.get(k.input).map(capped),
    }
}

/// `tool.ended` from a Claude-shaped payload, with the harness's verdict.
pub fn tool_ended(
    p: &Map<String, Value>,
    k: &ToolKeys,
    ok: bool,
    error: Option<String>,
) -> ToolEnded {
    let started = tool_started(p, k);
    ToolEnded {
        tool: started.tool,
        call_id: started.call_id,
        turn_id: started.turn_id,
        agent_id: started.agent_id,
        ms: u64_of(p, k.ms),
        ok,
        error: error
            .filter(|e| !e.is_empty())
            .map(|e| cut_chars(&e, MAX_ERROR_CHARS)),
        input: started.input,
        output: p.get(k.output).map(capped),
    }
}

/// An error as text: a string as is, anything else as its JSON; empty is none.
pub fn error_text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// A `turn.ended` error: the harness's error text (see `error_text`), cut to 200
/// characters, since the field names the error's class and not its whole story.
pub fn turn_error(v: Option<&Value>) -> Option<String> {
    error_text(v).map(|e| cut_chars(&e, 200))
}

/// The hook event a call is for: the word our entry passes in argv, else the
/// payload's `hook_event_name`.
pub fn hook_event(job: &Job, p: &Map<String, Value>) -> String {
    if job.event.is_empty() {
        str_of(p, "hook_event_name").unwrap_or_default()
    } else {
        job.event.clone()
    }
}

/// A file's modification time in epoch milliseconds (backfill's cutoff).
pub fn modified_ms(path: &std::path::Path) -> Option<i64> {
    let t = std::fs::metadata(path).ok()?.modified().ok()?;
    i64::try_from(t.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis()).ok()
}

/// A call that cannot be read at all: quarantined with this reason, never retried.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapError(pub String);

impl std::fmt::Display for MapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for MapError {
    fn from(s: String) -> Self {
        MapError(s)
    }
}

impl From<&str> for MapError {
    fn from(s: &str) -> Self {
        MapError(s.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_messages() {
        let input = json!({"command": "cat /x\n  && ls", "description": "d"});
        assert_eq!(tool_message("Bash", Some(&input)), "Bash cat /x && ls");
        assert_eq!(
            tool_message("Read", Some(&json!({"file_path": "/a"}))),
            "Read /a"
        );
        assert_eq!(
            tool_message("Weird", Some(&json!({"n": 1, "z": "zed"}))),
            "Weird zed"
        );
        assert_eq!(tool_message("Nothing", Some(&json!({"n": 1}))), "Nothing");
        let long = tool_message("Bash", Some(&json!({"command": "x".repeat(500)})));
        assert_eq!(long.chars().count(), 200);
        assert!(long.ends_with('…'));
    }

    #[test]
    fn capping_keeps_small_values_and_cuts_big_ones_on_a_char_boundary() {
        let small = json!({"a": "b"});
        assert_eq!(capped(&small), small);
        let big = json!({"s": "é".repeat(70_000)});
        let cut = capped(&big);
        let s = cut.as_str().unwrap();
        assert!(s.len() <= MAX_TOOL_VALUE_BYTES);
        assert!(s.ends_with("bytes]"));
    }

    #[test]
    fn version_from_the_agent_variable() {
        let mut job = Job::default();
        job.env
            .insert("AI_AGENT".into(), "claude-code_2-1-332_harness".into());
        assert_eq!(
            version_from_ai_agent(&job, "claude-code").as_deref(),
            Some("2.1.332")
        );
        assert_eq!(version_from_ai_agent(&job, "codex"), None);
        job.env
            .insert("AI_AGENT".into(), "claude-code_2 1;x_harness".into());
        assert_eq!(version_from_ai_agent(&job, "claude-code"), None);
    }

    #[test]
    fn a_cut_never_leaves_half_a_secret() {
        let token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
        let s = format!("rename the module {token} now");
        let cut = cut_chars(&s, 30);
        assert!(!cut.contains("ghp_0123"), "{cut}");
        let big = json!({"stdout": format!("{}{token}", "y".repeat(MAX_TOOL_VALUE_BYTES - 10))});
        let capped = capped(&big).to_string();
        assert!(!capped.contains("ghp_01"), "the cut went through the token");
    }

    #[test]
    fn uuids() {
        assert!(is_uuid("3bd5639e-04f7-44e6-a4c2-2f9bb68adad6"));
        assert!(!is_uuid("frill-vulture"));
        assert!(!is_uuid("3bd5639e04f744e6a4c22f9bb68adad6"));
    }
}
