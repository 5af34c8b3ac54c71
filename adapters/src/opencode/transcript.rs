//! Reading an OpenCode session out of its store (tier 2 and facts): its
//! messages in order, each with its parts, turned into the person's words, the
//! agent's words and tool calls; and the session row's title and model.
//!
//! Schema (OpenCode 1.18, measured): `session` (`id`, `directory`, `title`,
//! `model` as JSON `{id, providerID}`, `parent_id`, `time_created`,
//! `time_updated` in epoch ms), `message` (`id`, `session_id`, `time_created`,
//! `data`: JSON with `role`, `time.completed` once an assistant message is done,
//! `summary` on a compaction's), `part` (`message_id`, `id`, `data`: JSON with
//! `type` `text` (`text`, `synthetic`), `tool`, `step-start`, ...). Ids sort in
//! the order OpenCode made them. A whole assistant message's `tokens` (`input`,
//! `output`, `reasoning`, `cache.read`, `cache.write`; its steps summed, as
//! OpenCode's own `stats` reads them) and `providerID`/`modelID` are its usage.
//!
//! The cursor counts the session's messages read. A read stops before the first
//! message that is not whole yet (an assistant message without `time.completed`,
//! a user message whose parts are not written), so no words are read twice and
//! none are read half. Fewer messages than the cursor (OpenCode's revert took
//! some back) reads the session again from the start (`size`). Reads only,
//! through `store::open`.

use super::store;
use harness::transcript::{ReadOut, Rec, TranscriptSource};
use harness::usage::{Usage, count};
use protocol::{SessionBlock, TitleSource};
use rusqlite::{Connection, OptionalExtension};
use serde_json::Value;
use std::path::Path;

/// The most messages one read takes; the next read goes on from there.
pub const MAX_MESSAGES: i64 = 2000;

/// The titles OpenCode gives a session before it names it: not a title.
const PLACEHOLDER_TITLES: &[&str] = &["New session - ", "Child session - "];

pub struct OpenCodeTranscript;

impl TranscriptSource for OpenCodeTranscript {
    /// `path` is a `<database>#<session id>` address (`store::address`).
    fn read(&self, path: &Path, cursor: u64) -> std::io::Result<ReadOut> {
        let (database, session) = store::split(path)
            .ok_or_else(|| std::io::Error::other("not a <database>#<session> address"))?;
        let mut out = ReadOut {
            cursor,
            ..Default::default()
        };
        let Some(conn) = store::open(&database) else {
            return Err(std::io::Error::other("the OpenCode store cannot be opened"));
        };
        match messages(&conn, &session, cursor) {
            Ok(read) => {
                out.recs = read.recs;
                out.usage = read.usage;
                out.cursor = cursor + read.taken;
            }
            // OpenCode is writing: nothing to read now, the next event reads again.
            Err(e) if store::busy(&e) => return Ok(out),
            Err(e) => return Err(std::io::Error::other(e)),
        }
        if let Ok(Some(row)) = session_row(&conn, &session) {
            out.version = row.version.clone();
            out.facts = row.facts();
        }
        Ok(out)
    }

    /// How many messages the session has now, in the cursor's units.
    fn size(&self, path: &Path) -> std::io::Result<u64> {
        let (database, session) = store::split(path)
            .ok_or_else(|| std::io::Error::other("not a <database>#<session> address"))?;
        let conn = store::open(&database)
            .ok_or_else(|| std::io::Error::other("the OpenCode store cannot be opened"))?;
        let n: i64 = conn
            .query_row(
                "SELECT count(*) FROM message WHERE session_id = ?1",
                [&session],
                |r| r.get(0),
            )
            .map_err(std::io::Error::other)?;
        Ok(n.unsigned_abs())
    }
}

/// What a read of the session's messages found.
#[derive(Debug, Default)]
pub struct Messages {
    pub recs: Vec<Rec>,
    pub usage: Vec<Usage>,
    /// How many messages it took.
    pub taken: u64,
}

/// The records and usage of the session's messages after the first `skip`,
/// stopping before the first one not whole yet.
pub fn messages(conn: &Connection, session: &str, skip: u64) -> rusqlite::Result<Messages> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, time_created, data FROM message WHERE session_id = ?1
          ORDER BY time_created, id LIMIT ?2 OFFSET ?3",
    )?;
    let skip_i = i64::try_from(skip).unwrap_or(i64::MAX);
    let rows: Vec<(String, i64, String)> = stmt
        .query_map(rusqlite::params![session, MAX_MESSAGES, skip_i], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut parts =
        conn.prepare_cached("SELECT data FROM part WHERE message_id = ?1 ORDER BY id")?;
    let mut read = Messages::default();
    for (id, created, data) in rows {
        let message: Value = serde_json::from_str(&data).unwrap_or(Value::Null);
        let its_parts: Vec<Value> = parts
            .query_map([&id], |r| r.get::<_, String>(0))?
            .filter_map(|p| p.ok().and_then(|p| serde_json::from_str(&p).ok()))
            .collect();
        match records(&id, created, &message, &its_parts) {
            Some(mut r) => read.recs.append(&mut r),
            None => break,
        }
        read.usage.extend(usage_of(&id, created, &message));
        read.taken += 1;
    }
    Ok(read)
}

/// A whole assistant message's tokens. OpenCode's `input` leaves the cache's
/// tokens out, as its own `stats` adds them; `reasoning` is billed as output.
pub fn usage_of(id: &str, created_ms: i64, message: &Value) -> Option<Usage> {
    if message.get("role").and_then(Value::as_str) != Some("assistant") {
        return None;
    }
    let t = message.get("tokens")?;
    let cache = t.get("cache").cloned().unwrap_or_default();
    let model = message.get("modelID").and_then(Value::as_str).map(|m| {
        match message.get("providerID").and_then(Value::as_str) {
            Some(p) if !p.is_empty() => format!("{p}/{m}"),
            _ => m.to_string(),
        }
    });
    let u = Usage {
        key: id.to_string(),
        at_ms: message
            .pointer("/time/completed")
            .and_then(Value::as_i64)
            .unwrap_or(created_ms),
        model,
        input: count(t, "input"),
        output: count(t, "output") + count(t, "reasoning"),
        cache_read: count(&cache, "read"),
        cache_write: count(&cache, "write"),
    };
    (!u.is_empty()).then_some(u)
}

/// What one message says; `None` when it is not whole yet.
pub fn records(id: &str, created_ms: i64, message: &Value, parts: &[Value]) -> Option<Vec<Rec>> {
    let texts = || {
        parts
            .iter()
            .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
            .filter(|p| p.get("synthetic").and_then(Value::as_bool) != Some(true))
            .filter(|p| p.get("ignored").and_then(Value::as_bool) != Some(true))
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .filter(|t| !t.trim().is_empty())
            .collect::<Vec<_>>()
    };
    match message.get("role").and_then(Value::as_str) {
        Some("user") => {
            if parts.is_empty() {
                return None;
            }
            let words = texts().join("\n\n");
            if words.is_empty() {
                // A compaction's request or an attachment alone: no ask.
                return Some(Vec::new());
            }
            Some(vec![Rec::Ask {
                words,
                prompt_id: Some(id.to_string()),
                at_ms: Some(created_ms),
                injected: false,
            }])
        }
        Some("assistant") => {
            message.pointer("/time/completed")?;
            if message.get("summary").and_then(Value::as_bool) == Some(true) {
                return Some(Vec::new());
            }
            let at_ms = message
                .pointer("/time/completed")
                .and_then(Value::as_i64)
                .or(Some(created_ms));
            let mut out = Vec::new();
            for p in parts {
                match p.get("type").and_then(Value::as_str) {
                    Some("text") if p.get("synthetic").and_then(Value::as_bool) != Some(true) => {
                        if let Some(t) = p.get("text").and_then(Value::as_str)
                            && !t.trim().is_empty()
                        {
                            out.push(Rec::Reply {
                                words: t.to_string(),
                                at_ms,
                            });
                        }
                    }
                    Some("tool") => out.push(Rec::Tool),
                    _ => {}
                }
            }
            Some(out)
        }
        _ => Some(Vec::new()),
    }
}

/// What the `session` row says.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    pub directory: Option<String>,
    pub title: Option<String>,
    pub model: Option<String>,
    pub parent: Option<String>,
    pub version: Option<String>,
    pub created_ms: Option<i64>,
    pub updated_ms: Option<i64>,
}

impl Row {
    /// The facts it gives: OpenCode's own title (not a placeholder) and model.
    pub fn facts(&self) -> SessionBlock {
        let title = self
            .title
            .clone()
            .filter(|t| !t.trim().is_empty())
            .filter(|t| !PLACEHOLDER_TITLES.iter().any(|p| t.starts_with(p)));
        SessionBlock {
            title_source: title.as_ref().map(|_| TitleSource::Harness),
            title,
            model: self.model.clone(),
            parent_id: self.parent.clone(),
            ..Default::default()
        }
    }
}

/// The `session` row of `session`.
pub fn session_row(conn: &Connection, session: &str) -> rusqlite::Result<Option<Row>> {
    conn.query_row(
        "SELECT directory, title, model, parent_id, version, time_created, time_updated
           FROM session WHERE id = ?1",
        [session],
        |r| {
            let text = |i| -> rusqlite::Result<Option<String>> {
                Ok(r.get::<_, Option<String>>(i)?.filter(|s| !s.is_empty()))
            };
            Ok(Row {
                directory: text(0)?,
                title: text(1)?,
                model: text(2)?.as_deref().and_then(model_name),
                parent: text(3)?,
                version: text(4)?,
                created_ms: r.get(5)?,
                updated_ms: r.get(6)?,
            })
        },
    )
    .optional()
}

/// A model as OpenCode names it, `<provider>/<model>`, from the column's JSON
/// (`{"id": …, "providerID": …}`); a bare id when no provider is given.
pub fn model_name(json: &str) -> Option<String> {
    let v: Value = serde_json::from_str(json).ok()?;
    let id = v.get("id").or_else(|| v.get("modelID"))?.as_str()?;
    match v.get("providerID").and_then(Value::as_str) {
        Some(p) if !p.is_empty() => Some(format!("{p}/{id}")),
        _ => Some(id.to_string()),
    }
}

#[cfg(test)]
pub mod testdb {
    //! A store with the columns this adapter reads, as OpenCode 1.18 makes them.

    use rusqlite::Connection;
    use std::path::PathBuf;

    pub struct Store {
        pub dir: tempfile::TempDir,
        pub path: PathBuf,
        pub conn: Connection,
    }

    impl Store {
        pub fn new() -> Store {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("opencode.db");
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(
                "PRAGMA journal_mode=WAL;
                 CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL,
                   parent_id text, slug text NOT NULL, directory text NOT NULL,
                   title text NOT NULL, version text NOT NULL, model text,
                   time_created integer NOT NULL, time_updated integer NOT NULL);
                 CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL,
                   time_created integer NOT NULL, time_updated integer NOT NULL,
                   data text NOT NULL);
                 CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL,
                   session_id text NOT NULL, time_created integer NOT NULL,
                   time_updated integer NOT NULL, data text NOT NULL);",
            )
            .unwrap();
            Store { dir, path, conn }
        }

        pub fn session(&self, id: &str, title: &str, created: i64, updated: i64) {
            self.conn
                .execute(
                    "INSERT INTO session VALUES (?1, 'global', NULL, 'quiet-cabin', '/home/ann/src/app',
                       ?2, '1.18.33', '{\"id\":\"mock-model\",\"providerID\":\"mock\"}', ?3, ?4)",
                    rusqlite::params![id, title, created, updated],
                )
                .unwrap();
        }

        pub fn message(&self, session: &str, id: &str, at: i64, data: &str, parts: &[&str]) {
            self.conn
                .execute(
                    "INSERT INTO message VALUES (?1, ?2, ?3, ?3, ?4)",
                    rusqlite::params![id, session, at, data],
                )
                .unwrap();
            for (i, p) in parts.iter().enumerate() {
                self.conn
                    .execute(
                        "INSERT INTO part VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                        rusqlite::params![format!("prt_{id}_{i:03}"), id, session, at, p],
                    )
                    .unwrap();
            }
        }

        pub fn complete(&self, id: &str, at: i64) {
            self.conn
                .execute(
                    "UPDATE message SET data = json_set(data, '$.time.completed', ?2) WHERE id = ?1",
                    rusqlite::params![id, at],
                )
                .unwrap();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testdb::Store;
    use super::*;

    const S: &str = "ses_dc93617f6ffeY0aEUi3pxac0pn";

    fn turn(s: &Store) {
        s.session(S, "Title here", 1_796_215_531_529, 1_796_215_537_583);
        s.message(
            S,
            "msg_1",
            1_796_215_531_662,
            r#"{"role":"user","time":{"created":1796215531662}}"#,
            &[r#"{"type":"text","text":"run echo hello"}"#],
        );
        s.message(
            S,
            "msg_2",
            1_796_215_533_880,
            r#"{"role":"assistant","time":{"created":1796215533880,"completed":1796215536767},
                "modelID":"mock-model","providerID":"mock",
                "tokens":{"input":11,"output":7,"reasoning":2,"cache":{"read":100,"write":20}}}"#,
            &[
                r#"{"type":"step-start"}"#,
                r#"{"type":"tool","tool":"bash","callID":"call_abc0","state":{"status":"completed"}}"#,
            ],
        );
        s.message(
            S,
            "msg_3",
            1_796_215_536_778,
            r#"{"role":"assistant","time":{"created":1796215536778}}"#,
            &[r#"{"type":"text","text":"It printed hello."}"#],
        );
    }

    #[test]
    fn a_turn_is_read_up_to_the_first_message_not_whole() {
        let s = Store::new();
        turn(&s);
        let address = store::address(&s.path, S);
        let out = OpenCodeTranscript.read(&address, 0).unwrap();
        assert_eq!(out.cursor, 2, "the running answer is left for later");
        let u = &out.usage[..];
        assert_eq!(u.len(), 1, "the whole answer's usage alone");
        assert_eq!(
            (u[0].key.as_str(), u[0].model.as_deref(), u[0].at_ms),
            ("msg_2", Some("mock/mock-model"), 1_796_215_536_767)
        );
        assert_eq!(
            (u[0].input, u[0].output, u[0].cache_read, u[0].cache_write),
            (11, 9, 100, 20)
        );
        assert_eq!(
            out.recs,
            vec![
                Rec::Ask {
                    words: "run echo hello".into(),
                    prompt_id: Some("msg_1".into()),
                    at_ms: Some(1_796_215_531_662),
                    injected: false
                },
                Rec::Tool
            ]
        );
        assert_eq!(out.facts.title.as_deref(), Some("Title here"));
        assert_eq!(out.facts.title_source, Some(TitleSource::Harness));
        assert_eq!(out.facts.model.as_deref(), Some("mock/mock-model"));
        assert_eq!(out.version.as_deref(), Some("1.18.33"));

        s.complete("msg_3", 1_796_215_537_508);
        let out = OpenCodeTranscript.read(&address, 2).unwrap();
        assert_eq!(out.cursor, 3);
        assert_eq!(
            out.recs,
            vec![Rec::Reply {
                words: "It printed hello.".into(),
                at_ms: Some(1_796_215_537_508)
            }]
        );
        assert_eq!(OpenCodeTranscript.size(&address).unwrap(), 3);
        let again = OpenCodeTranscript.read(&address, 3).unwrap();
        assert!(again.recs.is_empty());
        assert_eq!(again.cursor, 3);
    }

    #[test]
    fn placeholders_synthetic_parts_and_summaries_are_no_words() {
        let s = Store::new();
        s.session(S, "New session - 2026-12-02T12:45:31.529Z", 1, 2);
        s.message(
            S,
            "msg_1",
            10,
            r#"{"role":"user"}"#,
            &[
                r#"{"type":"text","text":"Called the Read tool","synthetic":true}"#,
                r#"{"type":"text","text":"look"}"#,
            ],
        );
        s.message(
            S,
            "msg_2",
            11,
            r#"{"role":"assistant","summary":true,"time":{"completed":12}}"#,
            &[r#"{"type":"text","text":"summary of it all"}"#],
        );
        s.message(S, "msg_3", 13, r#"{"role":"user"}"#, &[]);
        let out = OpenCodeTranscript
            .read(&store::address(&s.path, S), 0)
            .unwrap();
        assert_eq!(out.cursor, 2, "a user message without its parts waits");
        assert!(matches!(&out.recs[..], [Rec::Ask { words, .. }] if words == "look"));
        assert_eq!(out.facts.title, None);
        assert_eq!(out.facts.title_source, None);
    }

    #[test]
    fn model_names_carry_their_provider() {
        assert_eq!(
            model_name(r#"{"id":"gpt-5","providerID":"openai"}"#).as_deref(),
            Some("openai/gpt-5")
        );
        assert_eq!(model_name(r#"{"id":"x"}"#).as_deref(), Some("x"));
        assert_eq!(model_name("nope"), None);
    }
}
