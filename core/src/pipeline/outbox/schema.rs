//! The pipeline's tables and their migrations: the events, the session
//! records, the sinks' cursors and the committed jobs, as one layer of the
//! outbox file (`sessionpipe_db`: each layer that owns tables there owns its
//! steps, and opening the file for writing runs the ones it lacks, in one
//! transaction, so a reader sees the old schema or the new, never half).
//!
//! A step is only ever appended: a file written by any earlier version walks
//! the same steps forward (a step of the one list earlier versions kept, in
//! which 3 to 5 were control's, keeps its number). A file newer than this
//! version knows is refused, never guessed at. A step is SQL, or Rust over
//! the rows where SQL cannot say it (the scrub of what earlier versions kept
//! unredacted). Nothing else about the outbox lives here, and no other
//! layer's tables.

use super::error::{OutboxError, Result};
use crate::pipeline::scrub;
use crate::pipeline::session::SessionRecord;
use rusqlite::{Connection, Transaction, params};
use sessionpipe_db::{DbError, Layer, Step};

/// Step N takes the pipeline's tables from the version before it to N.
pub const PIPELINE: Layer = Layer {
    name: "pipeline",
    steps: &[
        // 1: the tables of the first release, which set no `user_version`; a file it
        // wrote has them all already, so each is created only where missing.
        Step::sql(
            1,
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
        ),
        // 2: versions up to 0.1 kept session blocks, turn logs and held words as the
        // harness wrote them; everything stored goes through `secrets@1`.
        Step::code(2, scrub_at_rest),
        // (3 to 5 were control's tables, which control migrates now:
        // `control::store`.)
        // 6: retention prunes old events but never a session's record, so the
        // record keeps when the session was first seen (`first_ms`, epoch ms):
        // a session seen live before this version takes the time of its first
        // live event (seq 1 or the lowest left), while it is still there. The
        // record's other keys are left as they are (`json_set`), and a time that
        // does not read leaves the record alone.
        Step::sql(
            6,
            "
    UPDATE sessions SET record = json_set(sessions.record, '$.first_ms', f.ms)
    FROM (
        SELECT s.harness, s.session, (
            SELECT CAST(round(unixepoch(e.time, 'subsec') * 1000) AS INTEGER)
            FROM events e
            WHERE e.harness = s.harness AND e.session = s.session AND e.seq > 0
            ORDER BY e.seq LIMIT 1
        ) AS ms
        FROM sessions s
    ) AS f
    WHERE f.harness = sessions.harness AND f.session = sessions.session
      AND f.ms IS NOT NULL
      AND json_valid(sessions.record)
      AND json_type(sessions.record) = 'object'
      AND json_extract(sessions.record, '$.started') = 1
      AND coalesce(json_extract(sessions.record, '$.first_ms'), 0) = 0;
    ",
        ),
        // 7: the board reads the sessions active in its window and those still
        // working or waiting on the person, not every record the outbox has kept
        // (a year of use is 20 000 of them). Two columns SQLite computes from the
        // record itself, so every writer keeps them right: `last_ms` (the
        // record's, 0 when it has none) and `live` (1 while an attention is open,
        // or a turn runs in a session that has not ended: what `glance` calls
        // needs_you or working). A record that is not JSON is 0 in both. Indexed:
        // `last_ms` for the window, `live` (partial) for the few live ones.
        Step::sql(
            7,
            "
    ALTER TABLE sessions ADD COLUMN last_ms INTEGER GENERATED ALWAYS AS (
        CASE WHEN json_valid(record)
             THEN coalesce(json_extract(record, '$.last_ms'), 0) ELSE 0 END
    ) VIRTUAL;
    ALTER TABLE sessions ADD COLUMN live INTEGER GENERATED ALWAYS AS (
        CASE WHEN json_valid(record) THEN (
            coalesce(json_array_length(record, '$.open'), 0) > 0
            OR (json_type(record, '$.running_turn') = 'text'
                AND coalesce(json_extract(record, '$.ended'), 0) = 0)
        ) ELSE 0 END
    ) VIRTUAL;
    CREATE INDEX sessions_by_last ON sessions (last_ms);
    CREATE INDEX sessions_live ON sessions (live) WHERE live;
    ",
        ),
    ],
};

/// The first version with `sessions.last_ms` and `sessions.live` (step 7):
/// a reader of an older file (one the daemon has not opened since) reads
/// every record instead.
pub const BOARD_COLUMNS: i64 = 7;

/// The pipeline tables' version in the file, read without migrating; a file
/// newer than this build is refused.
pub fn version(conn: &Connection) -> Result<i64> {
    sessionpipe_db::version(conn, &PIPELINE).map_err(newer)
}

/// Runs the pipeline's steps the file lacks.
pub fn migrate(conn: &mut Connection) -> Result<()> {
    sessionpipe_db::migrate(conn, &PIPELINE).map_err(newer)
}

/// A layer's refusal of a newer file, as the outbox says it.
pub(super) fn newer(e: DbError) -> OutboxError {
    match e {
        DbError::Sqlite(e) => OutboxError::Sqlite(e),
        DbError::Newer { found, known, .. } => OutboxError::Newer { found, known },
    }
}

/// Rows per read while scrubbing: a year's outbox is not loaded at once.
const SCRUB_CHUNK: i64 = 2_000;

/// Step 2: `secrets@1` over every session record and every stored envelope.
/// A row this version cannot parse is left as it is (and counted in the log):
/// nothing is lost to a migration.
fn scrub_at_rest(tx: &Transaction<'_>) -> rusqlite::Result<bool> {
    let mut rewrote = 0usize;
    let mut unreadable = 0usize;
    let mut records = Vec::new();
    {
        let mut stmt = tx.prepare("SELECT harness, session, record FROM sessions")?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
            ))
        })?;
        for row in rows {
            records.push(row?);
        }
    }
    for (harness, session, text) in records {
        let Ok(mut record) = serde_json::from_str::<SessionRecord>(&text) else {
            unreadable += 1;
            continue;
        };
        if scrub::record(&mut record) {
            let json = serde_json::to_string(&record).expect("a session record serialises");
            tx.execute(
                "UPDATE sessions SET record = ?3 WHERE harness = ?1 AND session = ?2",
                params![harness, session, json],
            )?;
            rewrote += 1;
        }
    }
    let mut after = 0i64;
    loop {
        let chunk: Vec<(i64, String)> = {
            let mut stmt = tx.prepare_cached(
                "SELECT rowid, envelope FROM events WHERE rowid > ?1 ORDER BY rowid LIMIT ?2",
            )?;
            let rows =
                stmt.query_map(params![after, SCRUB_CHUNK], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let Some(&(last, _)) = chunk.last() else {
            break;
        };
        after = last;
        for (rowid, text) in chunk {
            let Ok(mut env) = serde_json::from_str::<protocol::Envelope>(&text) else {
                unreadable += 1;
                continue;
            };
            if scrub::envelope(&mut env) {
                let json = serde_json::to_string(&env).expect("an envelope serialises");
                tx.execute(
                    "UPDATE events SET envelope = ?2 WHERE rowid = ?1",
                    params![rowid, json],
                )?;
                rewrote += 1;
            }
        }
    }
    if unreadable > 0 {
        tracing::warn!(
            "outbox: {unreadable} stored rows could not be read to scrub; kept as they were"
        );
    }
    Ok(rewrote > 0)
}
