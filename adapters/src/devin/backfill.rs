//! Devin's past sessions, for `sessionpipe backfill`: every row of the store's
//! `sessions` table active since the cutoff (`last_activity_at`, unix seconds),
//! with its folder, model, times, first prompt and prompt count.
//!
//! Reads the store read-only, one query per table, never the message chains (a
//! store holds hundreds of thousands of nodes). A store that is missing or busy
//! backfills nothing now; `backfill` may run again.

use super::{facts, store, transcript};
use harness::backfill::Backfilled;
use protocol::TitleSource;
use rusqlite::Connection;
use std::path::Path;

pub fn sessions(data_dir: &Path, config_dir: &Path, home: &Path, since_ms: i64) -> Vec<Backfilled> {
    let database = store::database(data_dir);
    if !database.is_file() {
        return Vec::new();
    }
    let Some(conn) = store::open(&database) else {
        return Vec::new();
    };
    let account = facts::account_id(config_dir);
    let mut out: Vec<Backfilled> = ids_since(&conn, since_ms)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|id| one(&conn, id, home))
        .collect();
    for b in &mut out {
        b.block.account_id = account.clone();
    }
    out.sort_by_key(|b| std::cmp::Reverse(b.last_ms));
    out
}

/// Sessions whose last activity is at or after `since_ms`.
fn ids_since(conn: &Connection, since_ms: i64) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare("SELECT id FROM sessions WHERE last_activity_at >= ?1")?;
    // Whole seconds, rounded up: a session last active in an earlier second is
    // older than the cutoff.
    let since_s = since_ms.div_euclid(1000) + i64::from(since_ms.rem_euclid(1000) > 0);
    stmt.query_map([since_s], |r| r.get(0))?.collect()
}

/// One session as the store has it. The version is left out: `_versions/current`
/// names what is installed now, not what ran a past session.
fn one(conn: &Connection, id: String, home: &Path) -> Option<Backfilled> {
    let row = facts::row(conn, &id).ok()??;
    let last_ms = row.last_ms?;
    let mut b = Backfilled {
        started_ms: row.started_ms.unwrap_or(last_ms).min(last_ms),
        last_ms,
        turns: prompts(conn, &id).ok(),
        ..Default::default()
    };
    b.block.cwd = row.cwd.map(|c| spool::paths::tilde(&c, Some(home)));
    b.block.model = row.model;
    b.block.title = transcript::first_prompt(conn, &id).ok().flatten();
    b.block.title_source = b.block.title.as_ref().map(|_| TitleSource::FirstAsk);
    b.session_id = id;
    Some(b)
}

/// How many prompts the person sent in the session (each one a turn), shell
/// commands left out.
fn prompts(conn: &Connection, id: &str) -> rusqlite::Result<u64> {
    let n: i64 = conn.query_row(
        "SELECT count(*) FROM prompt_history WHERE session_id = ?1 AND is_shell = 0",
        [id],
        |r| r.get(0),
    )?;
    Ok(n.unsigned_abs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devin::testdb::Store;

    #[test]
    fn sessions_active_since_the_cutoff() {
        let s = Store::new();
        s.session("frill-vulture", "/home/ann/src/app", "swe-2-medium");
        s.prompt("frill-vulture", "Read the file sample.txt", 1, false);
        s.prompt("frill-vulture", "ls", 2, true);
        s.prompt("frill-vulture", "thanks", 3, false);
        s.session("quiet-otter", "/srv", "swe-2-medium");
        let dir = s.path.parent().unwrap();
        let found = sessions(dir, dir, Path::new("/home/ann"), 1_790_157_700_000);
        assert_eq!(found.len(), 2);
        let b = found
            .iter()
            .find(|b| b.session_id == "frill-vulture")
            .unwrap();
        assert_eq!(b.block.cwd.as_deref(), Some("~/src/app"));
        assert_eq!(b.block.model.as_deref(), Some("swe-2-medium"));
        assert_eq!(b.block.title.as_deref(), Some("Read the file sample.txt"));
        assert_eq!(b.turns, Some(2));
        assert_eq!(
            (b.started_ms, b.last_ms),
            (1_790_157_600_000, 1_790_157_700_000)
        );
        let quiet = found
            .iter()
            .find(|b| b.session_id == "quiet-otter")
            .unwrap();
        assert_eq!((quiet.block.title.as_ref(), quiet.turns), (None, Some(0)));
        assert!(sessions(dir, dir, Path::new("/h"), 1_790_157_700_001).is_empty());
        assert!(sessions(&dir.join("none"), dir, Path::new("/h"), 0).is_empty());
        let _lock = s.lock();
        assert!(sessions(dir, dir, Path::new("/h"), 0).is_empty(), "busy");
    }
}
