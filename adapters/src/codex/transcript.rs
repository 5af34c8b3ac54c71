//! Reading Codex's rollout (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread>.jsonl`,
//! or `….jsonl.zst` once Codex has compressed it): one JSON record per line
//! (`{timestamp, type, payload}`), turned into the turn log's records, the facts
//! the file holds and the account's limits (ADAPTERS.md, Codex row: Transcript,
//! Limits, Facts).
//!
//! - `response_item` `message`: the person's words (`role: user`, `input_text`)
//!   and the agent's (`role: assistant`, `output_text`). What Codex puts in a user
//!   message itself is skipped: a text that opens with a `<tag>` (environment
//!   context, instructions, a subagent's notification…), the AGENTS.md block, and
//!   any part whose recorded provenance is not the person's. Its `<turn_aborted>`
//!   note, like the `turn_aborted` event, ends the turn as it stands.
//! - Any other `response_item` that is a call or a call's output is a tool call.
//! - `event_msg` `task_complete`, written just after the Stop hook ran, says the
//!   turn is over whatever its last words were, so a Stop whose words the file
//!   does not end with (Codex strips hidden markup, such as citations, from the
//!   words it hands the hook) is held only until that record lands.
//! - `session_meta`: the thread's id, `cli_version`, `git`, and whether it is a
//!   subagent's thread; `turn_context`: the model; `event_msg` `token_count`: the
//!   rate-limit snapshot.
//! - The tokens of each model response: `token_usage_record`'s `usage` (Codex
//!   0.171 on) and `token_count`'s `info.last_token_usage` (every version),
//!   which say the same response twice. Each is keyed by the thread's running
//!   total after it (`thread_token_usage` / `total_token_usage`), the one
//!   thing both name alike, so the response is counted once whichever is read.
//!
//! Parsing and reading only: it never writes, and never reads anything but the
//! rollout it is handed.

use harness::payload::is_uuid;
use harness::transcript::{MAX_LINE_BYTES, ReadOut, Rec, TranscriptSource};
use harness::usage::{Usage, count, without_cache};
use protocol::{LimitWindow, LimitsObserved};
use serde_json::Value;
use std::io::{BufReader, Read};
use std::path::Path;

pub struct CodexTranscript;

impl TranscriptSource for CodexTranscript {
    fn read(&self, path: &Path, cursor: u64) -> std::io::Result<ReadOut> {
        let mut out = ReadOut::default();
        let end = for_each_line(path, cursor, &mut |line| {
            let l = parse_line(line);
            out.recs.extend(l.recs);
            if let Some(meta) = l.meta {
                out.version = meta.version.or(out.version.take());
                out.facts.branch = meta.branch.or(out.facts.branch.take());
                out.facts.repo = meta.repo.or(out.facts.repo.take());
            }
            out.facts.model = l.model.or(out.facts.model.take());
            out.limits = l.limits.or(out.limits.take());
            out.usage
                .extend(l.usage.map(|u| answered_by(u, &out.facts.model)));
        })?;
        out.cursor = end;
        Ok(out)
    }

    /// A compressed rollout's cursor counts decompressed bytes, so its size is
    /// counted the same way (see `for_each_line`).
    fn size(&self, path: &Path) -> std::io::Result<u64> {
        if !compressed(path) {
            return Ok(std::fs::metadata(path)?.len());
        }
        let mut decoder = zstd::Decoder::new(std::fs::File::open(path)?)?;
        std::io::copy(&mut decoder, &mut std::io::sink())
    }
}

/// True for a rollout Codex has compressed (`….jsonl.zst`).
pub fn compressed(path: &Path) -> bool {
    path.extension().is_some_and(|x| x == "zst")
}

/// Calls `f` with each complete line of the rollout after `cursor` and returns
/// the new cursor (`harness::transcript::for_each_line`'s rules).
///
/// A plain rollout is read from the cursor on. A compressed one cannot be entered
/// in the middle (a zstd frame decodes from its start), so it is decompressed from
/// the start and the first `cursor` decompressed bytes are passed over: the cursor
/// counts bytes of the decompressed text, which are the bytes of the plain file it
/// was made from. That keeps the cursor good when Codex compresses a rollout the
/// daemon has been reading (the same turns, at the same offsets), and a compressed
/// rollout's size is measured the same way. The cost: each read of a compressed
/// rollout decompresses it from the start (CPU in proportion to the whole file,
/// memory for one line). Codex compresses rollouts it is done with, so this is
/// the rare path; a live session's rollout is plain.
pub fn for_each_line(path: &Path, cursor: u64, f: &mut dyn FnMut(&str)) -> std::io::Result<u64> {
    if !compressed(path) {
        return harness::transcript::for_each_line(path, cursor, MAX_LINE_BYTES, f);
    }
    let mut r = BufReader::new(zstd::Decoder::new(std::fs::File::open(path)?)?);
    let skipped = std::io::copy(&mut (&mut r).take(cursor), &mut std::io::sink())?;
    if skipped < cursor {
        return Ok(cursor); // shorter than the cursor: `size` tells the caller
    }
    harness::transcript::for_each_line_in(&mut r, cursor, MAX_LINE_BYTES, f)
}

/// What one rollout line adds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Line {
    pub recs: Vec<Rec>,
    /// The record's time (epoch ms).
    pub at_ms: Option<i64>,
    pub meta: Option<Meta>,
    /// `turn_context`'s model.
    pub model: Option<String>,
    /// A `token_count` snapshot of the account's own limits that says something.
    pub limits: Option<LimitsObserved>,
    /// A model response's tokens (no model: `turn_context` names it).
    pub usage: Option<Usage>,
}

/// What `session_meta` says of the thread.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Meta {
    /// The thread's id (`payload.id`).
    pub id: Option<String>,
    pub cwd: Option<String>,
    pub version: Option<String>,
    pub branch: Option<String>,
    /// `git.repository_url`, credentials stripped.
    pub repo: Option<String>,
    /// A subagent's thread (`source.subagent`): part of its parent's session.
    pub subagent: bool,
}

/// Parses one rollout line. A line that is not a JSON object says nothing.
pub fn parse_line(line: &str) -> Line {
    serde_json::from_str::<Value>(line)
        .map(|v| parse_value(&v))
        .unwrap_or_default()
}

/// Parses one rollout record.
pub fn parse_value(v: &Value) -> Line {
    let mut out = Line {
        at_ms: v
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(protocol::time::parse_rfc3339_ms),
        ..Default::default()
    };
    let Some(p) = v.get("payload").filter(|p| p.is_object()) else {
        return out;
    };
    let kind = p.get("type").and_then(Value::as_str).unwrap_or_default();
    match v.get("type").and_then(Value::as_str).unwrap_or_default() {
        "session_meta" => out.meta = Some(meta_of(p)),
        "turn_context" => out.model = text(p, "model"),
        "event_msg" if kind == "token_count" => {
            out.limits = limits_of(p);
            out.usage = p.get("info").and_then(|i| {
                usage_of(
                    i.get("last_token_usage")?,
                    i.get("total_token_usage")?,
                    out.at_ms?,
                )
            });
        }
        "token_usage_record" => {
            out.usage = usage_of(
                p.get("usage").unwrap_or(&Value::Null),
                p.get("thread_token_usage").unwrap_or(&Value::Null),
                out.at_ms.unwrap_or_default(),
            )
            .filter(|_| out.at_ms.is_some());
        }
        "event_msg" if kind == "turn_aborted" => out.recs.push(Rec::Interrupted),
        "event_msg" if kind == "task_complete" => out.recs.push(Rec::Done {
            prompt_id: text(p, "turn_id"),
        }),
        "response_item" if kind == "message" => message(p, out.at_ms, &mut out.recs),
        "response_item" if kind.ends_with("_call") || kind.ends_with("_output") => {
            out.recs.push(Rec::Tool)
        }
        _ => {}
    }
    out
}

/// A response's tokens with the model of the turn it answered, when the read
/// saw that turn's `turn_context` (else the daemon takes the session's).
pub fn answered_by(mut u: Usage, model: &Option<String>) -> Usage {
    u.model = model.clone();
    u
}

/// One response's tokens (`usage`), keyed by the thread's total after it
/// (`total`). Codex counts as OpenAI does: `input_tokens` is the whole prompt,
/// its cached part included, and `output_tokens` holds the reasoning tokens.
fn usage_of(usage: &Value, total: &Value, at_ms: i64) -> Option<Usage> {
    let after = total.get("total_tokens")?.as_u64()?;
    let (cache_read, cache_write) = (
        count(usage, "cached_input_tokens"),
        count(usage, "cache_write_input_tokens"),
    );
    let u = Usage {
        key: format!("total-{after}"),
        at_ms,
        model: None,
        input: without_cache(count(usage, "input_tokens"), cache_read, cache_write),
        output: count(usage, "output_tokens"),
        cache_read,
        cache_write,
    };
    (!u.is_empty()).then_some(u)
}

/// A non-empty string field.
fn text(p: &Value, key: &str) -> Option<String> {
    p.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .map(str::to_string)
}

/// True when a `session_meta` payload names a subagent's thread.
pub fn is_subagent(meta: &Value) -> bool {
    meta.pointer("/source/subagent").is_some()
}

fn meta_of(p: &Value) -> Meta {
    let git = p.get("git").cloned().unwrap_or_default();
    Meta {
        id: text(p, "id"),
        cwd: text(p, "cwd"),
        version: text(p, "cli_version"),
        branch: text(&git, "branch"),
        repo: text(&git, "repository_url").map(|u| harness::facts::strip_credentials(&u)),
        subagent: is_subagent(p),
    }
}

/// Codex's interruption note, which it writes as a user message.
const ABORTED_TAG: &str = "<turn_aborted>";
/// How Codex opens the AGENTS.md instructions it sends as a user message.
const AGENTS_MD: &str = "# AGENTS.md instructions for ";

fn message(p: &Value, at_ms: Option<i64>, recs: &mut Vec<Rec>) {
    let parts = p.get("content").and_then(Value::as_array);
    let parts = parts.map(Vec::as_slice).unwrap_or_default();
    match p.get("role").and_then(Value::as_str) {
        Some("assistant") => {
            // Codex's own `last_assistant_message` joins the parts without a separator.
            let words: String = parts
                .iter()
                .filter(|c| c.get("type").and_then(Value::as_str) == Some("output_text"))
                .filter_map(|c| c.get("text").and_then(Value::as_str))
                .collect();
            if !words.trim().is_empty() {
                recs.push(Rec::Reply { words, at_ms });
            }
        }
        Some("user") => {
            let meta = p.get("internal_chat_message_metadata_passthrough");
            let provenance = |i: usize| {
                meta?
                    .get("content_item_metadata")?
                    .get(i)?
                    .pointer("/provenance/type")?
                    .as_str()
            };
            let mut words = Vec::new();
            for (i, part) in parts.iter().enumerate() {
                if part.get("type").and_then(Value::as_str) != Some("input_text") {
                    continue; // an image, a file
                }
                let t = part.get("text").and_then(Value::as_str).unwrap_or_default();
                let start = t.trim_start();
                if start.starts_with(ABORTED_TAG) {
                    recs.push(Rec::Interrupted);
                    return;
                }
                let codexs = provenance(i).is_some_and(|by| by != "user")
                    || opens_with_tag(start)
                    || start.starts_with(AGENTS_MD);
                if !codexs && !start.is_empty() {
                    words.push(t);
                }
            }
            if !words.is_empty() {
                recs.push(Rec::Ask {
                    words: words.join("\n\n"),
                    prompt_id: meta.and_then(|m| text(m, "turn_id")),
                    at_ms,
                    injected: false,
                });
            }
        }
        _ => {} // developer and system messages are Codex's
    }
}

/// True when `s` opens with an XML-like tag (`<environment_context>`,
/// `<subagent_notification>`…): how Codex marks what it adds to a user message.
fn opens_with_tag(s: &str) -> bool {
    let Some(rest) = s
        .strip_prefix('<')
        .filter(|r| r.starts_with(|c: char| c.is_ascii_alphabetic()))
    else {
        return false;
    };
    let name = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .unwrap_or(rest.len());
    name > 0 && rest[name..].starts_with(['>', ' ', '/', '\n'])
}

/// A `token_count`'s `rate_limits`, when it is the account's own bucket
/// (`limit_id` `codex` or none: Codex overwrites one snapshot with whichever
/// bucket the server named last) and names at least one window.
fn limits_of(p: &Value) -> Option<LimitsObserved> {
    let rl = p.get("rate_limits").filter(|r| r.is_object())?;
    match rl.get("limit_id") {
        None | Some(Value::Null) => {}
        Some(id) if id.as_str() == Some("codex") => {}
        Some(_) => return None,
    }
    let windows: Vec<LimitWindow> = ["primary", "secondary"]
        .into_iter()
        .filter_map(|id| {
            let w = rl.get(id)?;
            Some(LimitWindow {
                id: id.to_string(),
                window_minutes: w.get("window_minutes").and_then(Value::as_u64),
                used_percent: w.get("used_percent")?.as_f64()?,
                resets_at: w
                    .get("resets_at")
                    .and_then(Value::as_i64)
                    .and_then(|s| s.checked_mul(1000))
                    .map(protocol::time::rfc3339_ms),
            })
        })
        .collect();
    (!windows.is_empty()).then_some(LimitsObserved {
        windows,
        ..Default::default()
    })
}

/// The thread a rollout file is named for (`rollout-<time>-<thread id>.jsonl`,
/// possibly `.zst`), lowercased.
pub fn rollout_thread(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_suffix(".zst").unwrap_or(name);
    let stem = stem.strip_prefix("rollout-")?.strip_suffix(".jsonl")?;
    let id = stem.get(stem.len().checked_sub(36)?..)?;
    is_uuid(id).then(|| id.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::transcript::{TurnLog, Want};
    use serde_json::json;
    use std::path::PathBuf;

    /// A rollout recorded from the real Codex (`conformance/transcripts/codex/`).
    pub fn recorded(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("../conformance/transcripts/codex/{name}"))
    }

    fn read_all(name: &str) -> ReadOut {
        CodexTranscript.read(&recorded(name), 0).unwrap()
    }

    fn asks(recs: &[Rec]) -> Vec<(&str, Option<&str>)> {
        recs.iter()
            .filter_map(|r| match r {
                Rec::Ask {
                    words, prompt_id, ..
                } => Some((words.as_str(), prompt_id.as_deref())),
                _ => None,
            })
            .collect()
    }

    fn window(id: &str, minutes: u64, used: f64, resets: &str) -> LimitWindow {
        LimitWindow {
            id: id.into(),
            window_minutes: Some(minutes),
            used_percent: used,
            resets_at: Some(resets.into()),
        }
    }

    /// Codex says each response twice (`token_usage_record`, then
    /// `token_count`): both under one key, with the turn's model.
    #[test]
    fn each_responses_tokens_once_by_the_threads_running_total() {
        let out = read_all("two-turns.jsonl");
        let mut keys: Vec<&str> = out.usage.iter().map(|u| u.key.as_str()).collect();
        keys.dedup();
        assert_eq!(keys, ["total-15", "total-30", "total-45"]);
        assert!(out.usage.iter().all(|u| (u.input, u.output) == (10, 5)));
        assert!(
            out.usage
                .iter()
                .all(|u| u.model.as_deref() == Some("mock-model"))
        );
        let cached = parse_line(
            &json!({"timestamp": "2026-11-29T20:30:11.076Z", "type": "event_msg", "payload": {
                "type": "token_count", "info": {
                    "total_token_usage": {"total_tokens": 900},
                    "last_token_usage": {"input_tokens": 700, "cached_input_tokens": 600,
                                         "output_tokens": 200, "reasoning_output_tokens": 50}}}})
            .to_string(),
        );
        let u = cached.usage.unwrap();
        assert_eq!(
            (u.key.as_str(), u.input, u.cache_read, u.output),
            ("total-900", 100, 600, 200)
        );
    }

    #[test]
    fn a_recorded_turn_its_facts_and_limits() {
        let out = read_all("one-turn.jsonl");
        let ask = "Run the shell command, then tell me what it printed.";
        // The environment context before it is Codex's, not the person's.
        assert_eq!(
            asks(&out.recs),
            [(ask, Some("01a22900-3b98-7782-a77f-480237f2596d"))]
        );
        assert_eq!(
            out.recs[1..],
            [
                Rec::Tool,
                Rec::Tool,
                Rec::Reply {
                    words: "It printed hello.".into(),
                    at_ms: protocol::time::parse_rfc3339_ms("2026-11-29T20:30:11.160Z"),
                },
                Rec::Done {
                    prompt_id: Some("01a22900-3b98-7782-a77f-480237f2596d".into())
                }
            ]
        );
        assert_eq!(out.version.as_deref(), Some("0.171.0"));
        assert_eq!(out.facts.model.as_deref(), Some("mock-model"));
        assert_eq!(out.facts.repo, None, "not a repository");
        assert_eq!(
            out.limits,
            Some(LimitsObserved {
                windows: vec![
                    window("primary", 300, 12.5, "2026-11-29T22:06:40.000Z"),
                    window("secondary", 10_080, 40.0, "2026-12-05T19:46:40.000Z"),
                ],
                ..Default::default()
            })
        );
        assert_eq!(
            out.cursor,
            std::fs::metadata(recorded("one-turn.jsonl")).unwrap().len()
        );

        let mut log = TurnLog::default();
        let (before_end, end) = out.recs.split_at(out.recs.len() - 1);
        log.feed(before_end.to_vec());
        let turns = log.take(&Want::EndedWith("It printed hello.".into()));
        assert_eq!((turns[0].user.as_str(), turns[0].n), (ask, 1));
        assert_eq!(turns[0].assistant, "It printed hello.");
        assert_eq!(log.first_ask.as_deref(), Some(ask));

        // Words the file does not end with (hidden markup Codex stripped for
        // the hook): the turn is whole once `task_complete` is written.
        let mut log = TurnLog::default();
        log.feed(before_end.to_vec());
        let stripped = Want::EndedWith("It printed **hello**.".into());
        assert!(log.take(&stripped).is_empty());
        log.feed(end.to_vec());
        assert_eq!(log.take(&stripped).len(), 1);
    }

    #[test]
    fn two_turns_read_incrementally_as_codex_writes_them() {
        let all = std::fs::read(recorded("two-turns.jsonl")).unwrap();
        // Where the first turn's `task_complete` ends, and a line cut in half.
        let (first, cut) = (17_840, 20_000);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rollout.jsonl");
        std::fs::write(&path, &all[..first]).unwrap();
        let one = CodexTranscript.read(&path, 0).unwrap();
        assert_eq!(one.cursor, first as u64);
        assert_eq!(
            asks(&one.recs),
            [(
                "Run the shell command, then tell me what it printed.",
                Some("01a22900-3e52-7d10-bdf2-751ee7f7f324")
            )],
            "the AGENTS.md block and the environment context are Codex's"
        );
        assert_eq!(one.facts.branch.as_deref(), Some("main"));
        assert_eq!(
            one.facts.repo.as_deref(),
            Some("https://github.com/ann/repo.git")
        );
        assert!(one.limits.is_some());

        std::fs::write(&path, &all[..cut]).unwrap();
        let partial = CodexTranscript.read(&path, one.cursor).unwrap();
        assert!(partial.cursor < cut as u64, "a half-written line waits");
        std::fs::write(&path, &all).unwrap();
        let two = CodexTranscript.read(&path, partial.cursor).unwrap();
        assert_eq!(two.cursor, all.len() as u64);
        let mut recs = partial.recs;
        recs.extend(two.recs);
        assert_eq!(
            asks(&recs),
            [(
                "Anything else?",
                Some("01a22900-406e-7300-9708-84caa656cd62")
            )]
        );
        assert_eq!(two.version, None, "session_meta was read before");
        // The second turn's snapshot names another bucket (`codex_other`): not
        // the account's limits.
        assert_eq!(two.limits, None);

        let mut log = TurnLog::default();
        log.feed(one.recs);
        log.feed(recs);
        let turns = log.take(&Want::EndedWith("Nothing else to do.".into()));
        let sides: Vec<_> = turns
            .iter()
            .map(|t| (t.n, t.user.as_str(), t.assistant.as_str()))
            .collect();
        assert_eq!(
            sides,
            [
                (
                    1,
                    "Run the shell command, then tell me what it printed.",
                    "It printed hello."
                ),
                (2, "Anything else?", "Nothing else to do.")
            ]
        );
    }

    #[test]
    fn a_compressed_rollout_reads_like_the_plain_one() {
        let (plain, zst) = (recorded("two-turns.jsonl"), recorded("two-turns.jsonl.zst"));
        let len = std::fs::metadata(&plain).unwrap().len();
        assert_eq!(CodexTranscript.size(&zst).unwrap(), len);
        assert_eq!(CodexTranscript.size(&plain).unwrap(), len);
        for cursor in [0, 17_840] {
            let a = CodexTranscript.read(&plain, cursor).unwrap();
            let b = CodexTranscript.read(&zst, cursor).unwrap();
            assert_eq!((a.recs, a.cursor, a.limits), (b.recs, b.cursor, b.limits));
        }
        let past = CodexTranscript.read(&zst, len + 10).unwrap();
        assert!(past.recs.is_empty() && past.cursor == len + 10);
    }

    #[test]
    fn an_interruption_ends_the_turn_as_it_stands() {
        let out = read_all("interrupted.jsonl");
        let turn = "01a22900-4630-7951-8c39-8ccd90de3d9b";
        assert_eq!(asks(&out.recs), [("Sleep for a while.", Some(turn))]);
        // Codex's `<turn_aborted>` note and its `turn_aborted` event.
        assert_eq!(
            out.recs[1..],
            [Rec::Tool, Rec::Tool, Rec::Interrupted, Rec::Interrupted]
        );
        let mut log = TurnLog::default();
        log.feed(out.recs);
        assert!(log.interrupted(turn));
        let t = log.take(&Want::Closed);
        assert_eq!((t.len(), t[0].assistant.as_str()), (1, ""));
    }

    #[test]
    fn a_subagents_report_is_not_an_ask_and_its_thread_is_told() {
        let parent = read_all("subagent-parent.jsonl");
        assert_eq!(
            asks(&parent.recs),
            [(
                "Ask a helper to run echo sub.",
                Some("01a22900-5371-7eb0-83a3-94394e52de15")
            )]
        );
        let first = |name: &str| {
            let text = std::fs::read_to_string(recorded(name)).unwrap();
            parse_line(text.lines().next().unwrap()).meta.unwrap()
        };
        let sub = first("subagent.jsonl");
        assert!(sub.subagent);
        assert_eq!(
            sub.id.as_deref(),
            Some("01a22900-53d9-71f1-b69d-47758aef3b22")
        );
        assert!(!first("subagent-parent.jsonl").subagent);
        let fork = read_all("fork.jsonl");
        assert_eq!(
            asks(&fork.recs),
            [(
                "What did the first turn print?",
                Some("01a22900-421f-7c40-af5a-cf0e29d0ae81")
            )]
        );
    }

    fn user(parts: Value, meta: Value) -> Vec<Rec> {
        let line = json!({"timestamp": "2026-11-29T20:30:11.592Z", "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": parts,
                "internal_chat_message_metadata_passthrough": meta}});
        parse_line(&line.to_string()).recs
    }

    #[test]
    fn only_the_persons_words_are_an_ask() {
        let text = |t: &str| json!({"type": "input_text", "text": t});
        for codexs in [
            "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>",
            "<user_instructions>be brief</user_instructions>",
            "<skill name=\"x\">…</skill>",
            "# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>x</INSTRUCTIONS>",
        ] {
            assert!(
                user(json!([text(codexs)]), Value::Null).is_empty(),
                "{codexs}"
            );
        }
        for persons in ["< 3 is less than 4", "<3 thanks", "plain words"] {
            assert_eq!(
                user(json!([text(persons)]), Value::Null).len(),
                1,
                "{persons}"
            );
        }
        // Each part by its recorded provenance; an image is not words.
        let recs = user(
            json!([text("hook context"), {"type": "input_image", "image_url": "data:x"}, text("mine")]),
            json!({"turn_id": "t1", "content_item_metadata": [
                {"provenance": {"type": "hook"}}, {"provenance": {"type": "user"}}, {"provenance": {"type": "user"}}]}),
        );
        assert_eq!(asks(&recs), [("mine", Some("t1"))]);
        assert!(user(json!("not a list"), Value::Null).is_empty());
        let developer = json!({"type": "response_item", "payload": {"type": "message", "role": "developer", "content": [text("x")]}});
        assert!(parse_line(&developer.to_string()).recs.is_empty());
        assert_eq!(parse_line("{not json"), Line::default());
    }

    #[test]
    fn calls_of_every_kind_are_tools_and_parts_join_as_codex_joins_them() {
        for kind in [
            "function_call",
            "custom_tool_call_output",
            "local_shell_call",
            "web_search_call",
            "tool_search_output",
        ] {
            let line = json!({"type": "response_item", "payload": {"type": kind}});
            assert_eq!(parse_line(&line.to_string()).recs, [Rec::Tool], "{kind}");
        }
        let reasoning = json!({"type": "response_item", "payload": {"type": "reasoning"}});
        assert!(parse_line(&reasoning.to_string()).recs.is_empty());
        let reply = json!({"type": "response_item", "payload": {"type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": "Two "}, {"type": "refusal"}, {"type": "output_text", "text": "files."}]}});
        assert_eq!(
            parse_line(&reply.to_string()).recs,
            [Rec::Reply {
                words: "Two files.".into(),
                at_ms: None
            }]
        );
    }

    #[test]
    fn limits_only_from_the_accounts_own_bucket_with_a_window() {
        let count = |rl: Value| {
            let line = json!({"type": "event_msg", "payload": {"type": "token_count", "info": null, "rate_limits": rl}});
            parse_line(&line.to_string()).limits
        };
        let w = json!({"used_percent": 5.0, "window_minutes": 300, "resets_at": null});
        let seen = count(json!({"primary": w, "secondary": null})).unwrap();
        assert_eq!(
            seen.windows,
            [LimitWindow {
                id: "primary".into(),
                window_minutes: Some(300),
                used_percent: 5.0,
                resets_at: None
            }]
        );
        assert!(count(json!({"limit_id": "codex", "primary": w})).is_some());
        assert_eq!(
            count(json!({"limit_id": "codex_other", "primary": w})),
            None
        );
        assert_eq!(
            count(json!({"limit_id": "codex", "primary": null, "secondary": null})),
            None
        );
        assert_eq!(count(Value::Null), None);
    }

    #[test]
    fn session_meta_facts_without_credentials() {
        let line = json!({"timestamp": "2026-11-29T20:30:11.000Z", "type": "session_meta", "payload": {
            "id": "01a22900-3e2c-7763-90fd-d0504f2cc628", "cwd": "/home/ann/app", "cli_version": "0.171.0",
            "source": "cli", "git": {"branch": "dev", "repository_url": "https://ann:tok@github.com/ann/app.git"}}});
        let meta = parse_line(&line.to_string()).meta.unwrap();
        assert_eq!(
            meta,
            Meta {
                id: Some("01a22900-3e2c-7763-90fd-d0504f2cc628".into()),
                cwd: Some("/home/ann/app".into()),
                version: Some("0.171.0".into()),
                branch: Some("dev".into()),
                repo: Some("https://github.com/ann/app.git".into()),
                subagent: false,
            }
        );
    }
}
