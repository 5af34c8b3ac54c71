//! OpenCode's past sessions, for `sessionpipe backfill`: every row of the store's
//! `session` table updated since the cutoff (`time_updated`, epoch ms), with its
//! folder, title, model, parent, times, how many asks it holds and its
//! answers' tokens.
//!
//! Reads the store read-only, one query for the sessions, one count and one
//! read of the answers' rows per session, never the messages' parts. A store that is missing or busy
//! backfills nothing now; `backfill` may run again.

use super::{store, transcript};
use harness::backfill::Backfilled;
use rusqlite::Connection;
use std::path::Path;

pub fn sessions(database: &Path, home: &Path, since_ms: i64) -> Vec<Backfilled> {
    if !database.is_file() {
        return Vec::new();
    }
    let Some(conn) = store::open(database) else {
        return Vec::new();
    };
    let mut out: Vec<Backfilled> = ids_since(&conn, since_ms)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|id| one(&conn, id, home))
        .collect();
    out.sort_by_key(|b| std::cmp::Reverse(b.last_ms));
    out
}

fn ids_since(conn: &Connection, since_ms: i64) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare("SELECT id FROM session WHERE time_updated >= ?1")?;
    stmt.query_map([since_ms], |r| r.get(0))?.collect()
}

/// One session as the store has it. The version is left out: a backfilled
/// session's events are stamped by what runs now, not what ran it.
fn one(conn: &Connection, id: String, home: &Path) -> Option<Backfilled> {
    let row = transcript::session_row(conn, &id).ok()??;
    let last_ms = row.updated_ms?;
    let mut b = Backfilled {
        started_ms: row.created_ms.unwrap_or(last_ms).min(last_ms),
        last_ms,
        turns: asks(conn, &id).ok(),
        usage: usage(conn, &id).unwrap_or_default(),
        block: row.facts(),
        ..Default::default()
    };
    b.block.cwd = row
        .directory
        .as_deref()
        .map(|c| spool::paths::tilde(c, Some(home)));
    b.session_id = id;
    Some(b)
}

/// How many messages of the person's the session holds (each one a turn).
fn asks(conn: &Connection, id: &str) -> rusqlite::Result<u64> {
    let n: i64 = conn.query_row(
        "SELECT count(*) FROM message WHERE session_id = ?1 AND json_extract(data, '$.role') = 'user'",
        [id],
        |r| r.get(0),
    )?;
    Ok(n.unsigned_abs())
}

/// The tokens of the session's answers, as the live reads take them.
fn usage(conn: &Connection, id: &str) -> rusqlite::Result<Vec<harness::usage::Usage>> {
    let mut stmt = conn.prepare(
        "SELECT id, time_created, data FROM message
          WHERE session_id = ?1 AND json_extract(data, '$.role') = 'assistant'",
    )?;
    let rows = stmt.query_map([id], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, i64>(1)?,
            r.get::<_, String>(2)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (msg, created, data) = row?;
        let data: serde_json::Value = serde_json::from_str(&data).unwrap_or_default();
        out.extend(transcript::usage_of(&msg, created, &data));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::opencode::transcript::testdb::Store;

    #[test]
    fn sessions_updated_since_the_cutoff() {
        let s = Store::new();
        s.session("ses_a", "Fix the build", 1_000, 5_000);
        s.message("ses_a", "msg_1", 1_100, r#"{"role":"user"}"#, &[]);
        s.message("ses_a", "msg_2", 1_200, r#"{"role":"assistant"}"#, &[]);
        s.message("ses_a", "msg_3", 1_300, r#"{"role":"user"}"#, &[]);
        s.session("ses_b", "New session - 2026", 2_000, 3_000);
        let found = sessions(&s.path, Path::new("/home/ann"), 2_500);
        assert_eq!(
            found
                .iter()
                .map(|b| b.session_id.as_str())
                .collect::<Vec<_>>(),
            ["ses_a", "ses_b"]
        );
        let a = &found[0];
        assert_eq!(a.block.cwd.as_deref(), Some("~/src/app"));
        assert_eq!(a.block.title.as_deref(), Some("Fix the build"));
        assert_eq!(a.block.model.as_deref(), Some("mock/mock-model"));
        assert_eq!((a.started_ms, a.last_ms, a.turns), (1_000, 5_000, Some(2)));
        assert_eq!(found[1].block.title, None, "a placeholder is no title");
        assert!(sessions(&s.path, Path::new("/h"), 5_001).is_empty());
        assert!(sessions(&s.dir.path().join("none.db"), Path::new("/h"), 0).is_empty());
    }
}
