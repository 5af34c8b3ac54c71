//! The outbox's schema and its migrations: SQLite's `user_version` says which
//! steps a file has had, and opening it for writing runs the ones it lacks, in
//! one transaction, so a reader sees the old schema or the new, never half.
//!
//! A step is only ever appended: a file written by any earlier version walks the
//! same steps forward. A file newer than this version knows is refused, never
//! guessed at. Nothing else about the outbox lives here.

use super::error::{OutboxError, Result};
use rusqlite::{Connection, TransactionBehavior};

/// Step N takes a file from `user_version` N-1 to N.
const STEPS: &[&str] = &[
    // 1: the tables of the first release, which set no `user_version`; a file it
    // wrote has them all already, so each is created only where missing.
    "
    CREATE TABLE IF NOT EXISTS events (
        rowid    INTEGER PRIMARY KEY,
        harness  TEXT NOT NULL,
        session  TEXT NOT NULL,
        seq      INTEGER NOT NULL,
        type     TEXT NOT NULL,
        time     TEXT NOT NULL,
        envelope TEXT NOT NULL,
        UNIQUE (harness, session, seq)
    );
    CREATE TABLE IF NOT EXISTS sessions (
        harness  TEXT NOT NULL,
        session  TEXT NOT NULL,
        next_seq INTEGER NOT NULL DEFAULT 1,
        record   TEXT NOT NULL DEFAULT '{}',
        PRIMARY KEY (harness, session)
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS sink_cursors (
        sink    TEXT PRIMARY KEY,
        rowid   INTEGER NOT NULL,
        at_ms   INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS jobs_done (
        name    TEXT PRIMARY KEY,
        outcome TEXT NOT NULL,
        at_ms   INTEGER NOT NULL
    ) WITHOUT ROWID;
    ",
];

/// The schema version this build writes.
pub const CURRENT: i64 = STEPS.len() as i64;

/// The file's schema version.
pub fn version(conn: &Connection) -> Result<i64> {
    Ok(conn.pragma_query_value(None, "user_version", |r| r.get(0))?)
}

/// Refuses a file written by a newer sessionpipe.
pub fn check_known(found: i64) -> Result<()> {
    if found > CURRENT {
        return Err(OutboxError::Newer {
            found,
            known: CURRENT,
        });
    }
    Ok(())
}

/// Runs the steps the file lacks. Concurrent openers queue on the write lock and
/// find the work done.
pub fn migrate(conn: &mut Connection) -> Result<()> {
    if version(conn)? == CURRENT {
        return Ok(());
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let found = version(&tx)?;
    check_known(found)?;
    for (done, step) in STEPS.iter().enumerate().skip(found as usize) {
        tx.execute_batch(step)?;
        tx.pragma_update(None, "user_version", done as i64 + 1)?;
    }
    tx.commit()?;
    Ok(())
}
