//! Reading a Devin session's conversation out of its store (ADAPTERS.md, Devin
//! Transcript row): the main chain of `message_nodes`, turned into the person's
//! words, the agent's words and tool calls.
//!
//! `message_nodes` is a forest that keeps abandoned branches; the conversation is
//! the one chain that ends at `sessions.main_chain_id`, walked towards its root
//! through `parent_node_id` by a recursive CTE, never by reading every node. The
//! cursor bounds the walk: it stops at the first node the last read already
//! passed, so a Stop never re-reads the chain's root (a 17 kB system prompt), and
//! at `MAX_NODES` from the tip, so a long chain keeps its newest nodes.
//!
//! The cursor is one more than the newest node read (0: nothing read yet), so a
//! node numbered 0 is read too. Node ids grow as Devin adds nodes (an edit or a
//! retry branches off with new, larger ids), so "not newer than the cursor" is
//! both the node read last and the fork point of a new branch.
//!
//! `role: "system"` and injected `user` messages (no `metadata.is_user_input`)
//! are never the person's words and are skipped; `tool` messages only mark the
//! turn as not over. Reads only, through `store::open`.

use super::store::{self, column_value, epoch_ms};
use harness::transcript::{ReadOut, Rec, TranscriptSource};
use protocol::{SessionBlock, TitleSource};
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;
use std::path::Path;

/// The most nodes one read walks, counted from the tip: where a chain is longer,
/// the newest are kept (the oldest are the system prompt and turns long sent).
pub const MAX_NODES: u32 = 4000;

/// A `first-ask` title is this many characters of the person's first prompt.
pub const TITLE_CHARS: usize = 80;

pub struct DevinTranscript;

impl TranscriptSource for DevinTranscript {
    /// `path` is a `<database>#<session id>` address (`store::address`).
    fn read(&self, path: &Path, cursor: u64) -> std::io::Result<ReadOut> {
        let (database, session) = store::split(path)
            .ok_or_else(|| std::io::Error::other("not a <database>#<session> address"))?;
        let mut out = ReadOut {
            cursor,
            ..Default::default()
        };
        let Some(conn) = store::open(&database) else {
            return Err(std::io::Error::other("the Devin store cannot be opened"));
        };
        match walk(&conn, &session, cursor) {
            Ok(walked) => {
                out.cursor = walked.cursor;
                out.recs = walked.recs;
            }
            // Devin is writing: nothing to read now, the next hook reads again.
            Err(e) if store::busy(&e) => return Ok(out),
            Err(e) => return Err(std::io::Error::other(e)),
        }
        // The title is the store's, not the chain's first ask: the chain may be
        // cut at MAX_NODES, and an equal-source title read later would replace it.
        out.facts = SessionBlock {
            title: first_prompt(&conn, &session).ok().flatten(),
            ..Default::default()
        };
        if out.facts.title.is_some() {
            out.facts.title_source = Some(TitleSource::FirstAsk);
        }
        out.version = database.parent().and_then(super::store::version);
        Ok(out)
    }

    fn first_ask_chars(&self) -> usize {
        TITLE_CHARS
    }
}

/// What one walk found: records oldest first, the new cursor, and how many nodes
/// it read (the proof that a bounded walk stays bounded).
#[derive(Debug, Default)]
pub struct Walked {
    pub recs: Vec<Rec>,
    pub cursor: u64,
    pub nodes: usize,
}

/// The main chain from its tip back to the first node not newer than `cursor`,
/// at most `MAX_NODES` of it, as records in chain order.
pub fn walk(conn: &Connection, session: &str, cursor: u64) -> rusqlite::Result<Walked> {
    let mut walked = Walked {
        cursor,
        ..Default::default()
    };
    let tip: Option<i64> = conn
        .query_row(
            "SELECT main_chain_id FROM sessions WHERE id = ?1",
            [session],
            |r| r.get(0),
        )
        .optional()?
        .flatten();
    let Some(tip) = tip else {
        return Ok(walked);
    };
    // The walk carries each node's message up with it, so a node the bound stops
    // at is never read at all.
    let mut stmt = conn.prepare_cached(
        "WITH RECURSIVE chain(node_id, parent_node_id, chat_message, created_at, depth) AS (
             SELECT node_id, parent_node_id, chat_message, created_at, 0
               FROM message_nodes
              WHERE session_id = ?1 AND node_id = ?2 AND node_id >= ?3
             UNION ALL
             SELECT m.node_id, m.parent_node_id, m.chat_message, m.created_at, c.depth + 1
               FROM chain c
               JOIN message_nodes m ON m.session_id = ?1 AND m.node_id = c.parent_node_id
              WHERE m.node_id >= ?3 AND c.depth + 1 < ?4
         )
         SELECT node_id, chat_message, created_at FROM chain ORDER BY depth DESC",
    )?;
    let floor = i64::try_from(cursor).unwrap_or(i64::MAX);
    let rows = stmt.query_map(params![session, tip, floor, MAX_NODES], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, Option<String>>(1)?,
            column_value(r.get_ref(2)?),
        ))
    })?;
    for row in rows {
        let (node, message, saved_at) = row?;
        walked.nodes += 1;
        let message: Value = message
            .and_then(|m| serde_json::from_str(&m).ok())
            .unwrap_or(Value::Null);
        walked.recs.extend(records(&message, epoch_ms(&saved_at)));
        walked.cursor = walked.cursor.max(next_cursor(node));
    }
    Ok(walked)
}

/// The cursor after reading `node`: one more, so that 0 means "nothing read".
fn next_cursor(node: i64) -> u64 {
    u64::try_from(node).map_or(0, |n| n.saturating_add(1))
}

/// What one `chat_message` says. `saved_ms` is the row's `created_at`: the time
/// the batch was last saved, only a fallback for a message without its own.
pub fn records(message: &Value, saved_ms: Option<i64>) -> Vec<Rec> {
    let field = |k: &str| message.get(k);
    let meta = |k: &str| field("metadata").and_then(|m| m.get(k));
    let at_ms = meta("created_at").and_then(epoch_ms).or(saved_ms);
    let words = text_of(field("content"));
    let mut out = Vec::new();
    match field("role").and_then(Value::as_str) {
        Some("user") => {
            let by_person = match meta("is_user_input") {
                Some(Value::Bool(b)) => *b,
                Some(Value::Number(n)) => n.as_i64() == Some(1),
                _ => false,
            };
            if by_person && !words.trim().is_empty() {
                out.push(Rec::Ask {
                    words,
                    prompt_id: None,
                    at_ms,
                    injected: false,
                });
            }
        }
        Some("assistant") => {
            if !words.trim().is_empty() {
                out.push(Rec::Reply { words, at_ms });
            }
            let calls = field("tool_calls").and_then(Value::as_array);
            if calls.is_some_and(|c| !c.is_empty()) {
                out.push(Rec::Tool);
            }
        }
        Some("tool") => out.push(Rec::Tool),
        _ => {} // system: Cognition's prompt, profiles, skills, system_info
    }
    out
}

/// A message's text: a string, or its text parts joined by blank lines.
fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.as_str()),
                _ if p.get("type").and_then(Value::as_str) == Some("text") => {
                    p.get("text").and_then(Value::as_str)
                }
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n\n"),
        _ => String::new(),
    }
}

/// The session's `first-ask` title: its earliest prompt that is not a shell
/// command, one line of `TITLE_CHARS`. `sessions.title` is the titler's output
/// (a backticked command, a raw tool call mid-turn) and is never a title.
pub fn first_prompt(conn: &Connection, session: &str) -> rusqlite::Result<Option<String>> {
    let words: Option<String> = conn
        .query_row(
            "SELECT content FROM prompt_history
              WHERE session_id = ?1 AND is_shell = 0 AND trim(content) != ''
              ORDER BY timestamp, id LIMIT 1",
            [session],
            |r| r.get(0),
        )
        .optional()?;
    Ok(words.map(|w| harness::payload::one_line(&w, TITLE_CHARS)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devin::testdb::{Store, ask, reply, system, tool_call, tool_result};
    use serde_json::json;

    #[test]
    fn messages_become_asks_replies_and_tools() {
        let at = protocol::time::parse_rfc3339_ms("2026-10-08T22:23:16.000Z");
        assert_eq!(
            records(&ask("Read sample.txt", "2026-10-08T22:23:16.000Z"), Some(5)),
            [Rec::Ask {
                words: "Read sample.txt".into(),
                prompt_id: None,
                at_ms: at,
                injected: false
            }]
        );
        assert_eq!(
            records(&tool_call("Let me look."), None),
            [
                Rec::Reply {
                    words: "Let me look.".into(),
                    at_ms: None
                },
                Rec::Tool
            ]
        );
        assert_eq!(records(&tool_result("alpha"), None), [Rec::Tool]);
        let parts = json!({"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "image"}, "b"]});
        assert!(
            matches!(&records(&parts, Some(7))[..], [Rec::Reply { words, at_ms: Some(7) }] if words == "a\n\nb")
        );
        for skipped in [
            system("You are Devin."),
            json!({"role": "user", "content": "<system_info>…</system_info>", "metadata": {}}),
            json!({"role": "user", "content": "  ", "metadata": {"is_user_input": true}}),
            json!({"role": "assistant", "content": ""}),
            json!("not an object"),
        ] {
            assert!(records(&skipped, None).is_empty(), "{skipped}");
        }
        let numeric = json!({"role": "user", "content": "hi", "metadata": {"is_user_input": 1}});
        assert_eq!(records(&numeric, None).len(), 1);
    }

    #[test]
    fn only_the_main_chain_is_read_and_the_cursor_bounds_the_walk() {
        let s = Store::new();
        s.session("frill-vulture", "/w", "swe-2-medium");
        // 1 system, 2 ask, 3 abandoned reply, 4 the reply kept.
        s.node("frill-vulture", 1, None, &system("You are Devin."));
        s.node(
            "frill-vulture",
            2,
            Some(1),
            &ask("first", "2026-10-08T22:23:16Z"),
        );
        s.node("frill-vulture", 3, Some(2), &reply("abandoned"));
        s.node("frill-vulture", 4, Some(2), &reply("kept"));
        s.tip("frill-vulture", 4);
        let conn = store::open(&s.path).unwrap();
        let w = walk(&conn, "frill-vulture", 0).unwrap();
        assert_eq!(w.nodes, 3, "nodes 1, 2 and 4; never the abandoned 3");
        assert_eq!(w.cursor, 5);
        let replies: Vec<_> = w
            .recs
            .iter()
            .filter_map(|r| match r {
                Rec::Reply { words, .. } => Some(words.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(replies, ["kept"]);
        // Nothing new: the tip is behind the cursor and no node is read.
        let again = walk(&conn, "frill-vulture", w.cursor).unwrap();
        assert_eq!((again.nodes, again.cursor), (0, 5));
        // Two more nodes: only they are read, the root and the first turn are not.
        s.node(
            "frill-vulture",
            5,
            Some(4),
            &ask("second", "2026-10-08T22:24:00Z"),
        );
        s.node("frill-vulture", 6, Some(5), &reply("done"));
        s.tip("frill-vulture", 6);
        let next = walk(&conn, "frill-vulture", w.cursor).unwrap();
        assert_eq!((next.nodes, next.cursor), (2, 7));
        // An edit branches off node 4 with new ids: the walk stops at the fork.
        s.node(
            "frill-vulture",
            7,
            Some(4),
            &ask("second, edited", "2026-10-08T22:25:00Z"),
        );
        s.node("frill-vulture", 8, Some(7), &reply("edited"));
        s.tip("frill-vulture", 8);
        assert_eq!(walk(&conn, "frill-vulture", 7).unwrap().nodes, 2);
        assert_eq!(walk(&conn, "nobody", 0).unwrap().nodes, 0);
    }

    #[test]
    fn a_long_chain_keeps_its_newest_nodes() {
        let s = Store::new();
        s.session("long", "/w", "m");
        s.chain("long", 4500, |n| {
            if n % 2 == 1 {
                ask(&format!("ask {n}"), "2026-10-08T22:00:00Z")
            } else {
                reply(&format!("reply {n}"))
            }
        });
        let conn = store::open(&s.path).unwrap();
        let w = walk(&conn, "long", 0).unwrap();
        assert_eq!(w.nodes, MAX_NODES as usize);
        assert_eq!(w.cursor, 4501);
        assert!(
            matches!(&w.recs[0], Rec::Ask { words, .. } if words == "ask 501"),
            "{:?}",
            w.recs[0]
        );
    }

    #[test]
    fn a_busy_store_is_nothing_to_read_now() {
        let s = Store::new();
        s.session("frill-vulture", "/w", "m");
        s.node(
            "frill-vulture",
            1,
            None,
            &ask("hello", "2026-10-08T22:23:16Z"),
        );
        s.tip("frill-vulture", 1);
        let path = store::address(&s.path, "frill-vulture");
        let lock = s.lock();
        let started = std::time::Instant::now();
        let out = DevinTranscript.read(&path, 0).unwrap();
        assert!(out.recs.is_empty());
        assert_eq!(out.cursor, 0);
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        drop(lock);
        let out = DevinTranscript.read(&path, 0).unwrap();
        assert_eq!(out.recs.len(), 1);
        assert_eq!(out.cursor, 2);
    }

    #[test]
    fn the_title_is_the_first_prompt_that_is_not_a_shell_command() {
        let s = Store::new();
        s.session("frill-vulture", "/w", "m");
        s.prompt("frill-vulture", "ls -la", 1, true);
        s.prompt(
            "frill-vulture",
            "Read the file sample.txt\nand reply",
            2,
            false,
        );
        s.prompt("frill-vulture", "later", 3, false);
        let conn = store::open(&s.path).unwrap();
        assert_eq!(
            first_prompt(&conn, "frill-vulture").unwrap().as_deref(),
            Some("Read the file sample.txt and reply")
        );
        let out = DevinTranscript
            .read(&store::address(&s.path, "frill-vulture"), 0)
            .unwrap();
        assert_eq!(
            (out.facts.title.as_deref(), out.facts.title_source),
            (
                Some("Read the file sample.txt and reply"),
                Some(TitleSource::FirstAsk)
            )
        );
        assert!(DevinTranscript.read(Path::new("/no/address"), 0).is_err());
    }
}
