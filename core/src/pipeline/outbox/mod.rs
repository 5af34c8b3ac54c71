//! The outbox: an append-only SQLite store of envelopes, and the session records.
//!
//! It owns `session.seq`: a seq is assigned once, at append, monotonic per
//! (harness, session), starting at 1 (0 is `session.backfill`'s, and a
//! backfill sent again under a new name is 0 again: `append_resent_backfill`
//! says how the row keeps that apart). It also records
//! which spool jobs are committed, so a job deleted late (the daemon killed between
//! commit and unlink) is never appended twice. It does not filter, redact or
//! deliver; readers (tail, sinks) read envelopes back in append order. Its
//! schema and migrations are `schema`'s.

mod error;
mod schema;

use crate::pipeline::session::SessionRecord;
use protocol::Envelope;
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};
use std::path::Path;
use std::time::Duration;

/// How long a job's name is remembered after its commit. A job file still in the
/// spool after this long would be appended again; no crash leaves one that long.
const JOBS_DONE_KEEP_MS: i64 = 7 * 24 * 3600 * 1000;

pub use error::{OutboxError, Result};

pub struct Outbox {
    conn: Connection,
}

/// One stored event as read back.
#[derive(Clone, Debug)]
pub struct StoredEvent {
    pub rowid: i64,
    pub envelope: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub events: i64,
    pub sessions: i64,
    pub last_rowid: i64,
}

impl Outbox {
    /// Opens (creating when needed) the outbox for writing.
    pub fn open(path: &Path) -> Result<Outbox> {
        let mut conn = Connection::open(path)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
        }
        conn.busy_timeout(Duration::from_secs(10))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // FULL: a commit is on disk before its job file is unlinked.
        conn.pragma_update(None, "synchronous", "FULL")?;
        schema::migrate(&mut conn)?;
        Ok(Outbox { conn })
    }

    /// Opens the outbox for a sink's thread: it writes only its cursor, and a
    /// cursor lost to a power cut means events sent again (receivers dedup on
    /// (harness, session, seq)), never lost, so its commits skip the fsync.
    pub fn open_for_sink(path: &Path) -> Result<Outbox> {
        let ob = Outbox::open(path)?;
        ob.conn.pragma_update(None, "synchronous", "NORMAL")?;
        Ok(ob)
    }

    /// A connection of its own to the outbox file, migrated, for a service whose
    /// tables the schema holds but which reads and writes them itself
    /// (control); it never touches the events or sessions through it.
    pub fn side_connection(path: &Path) -> Result<Connection> {
        Ok(Outbox::open(path)?.conn)
    }

    /// Opens an existing outbox for reading only (tail, status). `None` while
    /// there is none yet: no file, or a file whose first writer has not made its
    /// tables yet.
    pub fn open_readonly(path: &Path) -> Result<Option<Outbox>> {
        if !path.exists() {
            return Ok(None);
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(Duration::from_secs(10))?;
        schema::check_known(schema::version(&conn)?)?;
        let ready: bool = conn.query_row(
            "SELECT count(*) = 2 FROM sqlite_master WHERE type = 'table' AND name IN ('events', 'sessions')",
            [],
            |r| r.get(0),
        )?;
        Ok(ready.then_some(Outbox { conn }))
    }

    /// Starts a write transaction (taken at once, so concurrent writers queue).
    pub fn begin(&mut self) -> Result<OutboxTx<'_>> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        Ok(OutboxTx { tx })
    }

    /// Appends one envelope in its own transaction and returns its seq.
    pub fn append(&mut self, envelope: &mut Envelope) -> Result<u64> {
        let tx = self.begin()?;
        let seq = tx.append(envelope)?;
        tx.commit()?;
        Ok(seq)
    }

    /// Up to `limit` events stored after `rowid`, oldest first.
    pub fn events_after(&self, rowid: i64, limit: usize) -> Result<Vec<StoredEvent>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT rowid, envelope FROM events WHERE rowid > ?1 ORDER BY rowid LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![rowid, limit as i64], |r| {
            Ok(StoredEvent {
                rowid: r.get(0)?,
                envelope: r.get(1)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// SQLite's change counter for this connection's view; it moves when another
    /// connection commits, so a follower polls this instead of the table.
    pub fn data_version(&self) -> Result<i64> {
        Ok(self
            .conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))?)
    }

    /// The schema version of the file (`schema::CURRENT` once opened to write).
    pub fn schema_version(&self) -> Result<i64> {
        schema::version(&self.conn)
    }

    pub fn counts(&self) -> Result<Counts> {
        let (events, last_rowid) = self.conn.query_row(
            "SELECT count(*), coalesce(max(rowid), 0) FROM events",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let sessions = self
            .conn
            .query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))?;
        Ok(Counts {
            events,
            sessions,
            last_rowid,
        })
    }

    /// The last rowid a sink took (0: nothing yet).
    pub fn sink_cursor(&self, sink: &str) -> Result<i64> {
        Ok(self
            .conn
            .query_row(
                "SELECT rowid FROM sink_cursors WHERE sink = ?1",
                params![sink],
                |r| r.get(0),
            )
            .optional()?
            .unwrap_or(0))
    }

    /// Moves a sink's cursor; only ever forward.
    pub fn set_sink_cursor(&mut self, sink: &str, rowid: i64) -> Result<()> {
        self.conn.execute(
            "INSERT INTO sink_cursors (sink, rowid, at_ms) VALUES (?1, ?2, ?3)
             ON CONFLICT (sink) DO UPDATE SET rowid = max(rowid, excluded.rowid), at_ms = excluded.at_ms",
            params![sink, rowid, protocol::time::now_ms()],
        )?;
        Ok(())
    }

    pub fn forget_cursor(&mut self, sink: &str) -> Result<()> {
        self.conn
            .execute("DELETE FROM sink_cursors WHERE sink = ?1", params![sink])?;
        Ok(())
    }

    /// How many events wait after `rowid`.
    pub fn count_after(&self, rowid: i64) -> Result<i64> {
        Ok(self.conn.query_row(
            "SELECT count(*) FROM events WHERE rowid > ?1",
            params![rowid],
            |r| r.get(0),
        )?)
    }

    /// One session's record, when the outbox knows the session.
    pub fn session(&self, harness: &str, session: &str) -> Result<Option<SessionRecord>> {
        let json: Option<String> = self
            .conn
            .query_row(
                "SELECT record FROM sessions WHERE harness = ?1 AND session = ?2",
                params![harness, session],
                |r| r.get(0),
            )
            .optional()?;
        Ok(json.map(|j| serde_json::from_str(&j).unwrap_or_default()))
    }

    /// The harnesses whose sessions the outbox holds.
    pub fn harnesses(&self) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare("SELECT DISTINCT harness FROM sessions ORDER BY harness")?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Every session's record, most recently active first.
    pub fn sessions(&self) -> Result<Vec<(String, String, SessionRecord)>> {
        let mut stmt = self
            .conn
            .prepare("SELECT harness, session, record FROM sessions")?;
        let rows = stmt.query_map([], |r| {
            let json: String = r.get(2)?;
            Ok((
                r.get(0)?,
                r.get(1)?,
                serde_json::from_str(&json).unwrap_or_default(),
            ))
        })?;
        let mut all: Vec<(String, String, SessionRecord)> =
            rows.collect::<rusqlite::Result<_>>()?;
        all.sort_by_key(|(_, _, r)| std::cmp::Reverse(r.last_ms));
        Ok(all)
    }

    /// A session's last `limit` events, oldest first.
    pub fn events_of(
        &self,
        harness: &str,
        session: &str,
        limit: usize,
    ) -> Result<Vec<StoredEvent>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT rowid, envelope FROM events WHERE harness = ?1 AND session = ?2
             ORDER BY seq DESC LIMIT ?3",
        )?;
        let rows = stmt.query_map(params![harness, session, limit as i64], |r| {
            Ok(StoredEvent {
                rowid: r.get(0)?,
                envelope: r.get(1)?,
            })
        })?;
        let mut v: Vec<StoredEvent> = rows.collect::<rusqlite::Result<_>>()?;
        v.reverse();
        Ok(v)
    }

    /// Forgets committed job names older than a week.
    pub fn prune_jobs_done(&self, now_ms: i64) -> Result<usize> {
        Ok(self.conn.execute(
            "DELETE FROM jobs_done WHERE at_ms < ?1",
            params![now_ms - JOBS_DONE_KEEP_MS],
        )?)
    }
}

/// A write transaction: session records, appends and job bookkeeping commit together.
pub struct OutboxTx<'a> {
    tx: rusqlite::Transaction<'a>,
}

impl OutboxTx<'_> {
    /// The outcome recorded for a job committed earlier, if any.
    pub fn job_outcome(&self, name: &str) -> Result<Option<String>> {
        Ok(self
            .tx
            .prepare_cached("SELECT outcome FROM jobs_done WHERE name = ?1")?
            .query_row(params![name], |r| r.get(0))
            .optional()?)
    }

    pub fn mark_job(&self, name: &str, outcome: &str, at_ms: i64) -> Result<()> {
        self.tx
            .prepare_cached(
                "INSERT OR REPLACE INTO jobs_done (name, outcome, at_ms) VALUES (?1, ?2, ?3)",
            )?
            .execute(params![name, outcome, at_ms])?;
        Ok(())
    }

    pub fn load_session(&self, harness: &str, session: &str) -> Result<SessionRecord> {
        let json: Option<String> = self
            .tx
            .prepare_cached("SELECT record FROM sessions WHERE harness = ?1 AND session = ?2")?
            .query_row(params![harness, session], |r| r.get(0))
            .optional()?;
        // A record this version cannot read starts over rather than stopping ingest.
        Ok(json
            .and_then(|j| serde_json::from_str(&j).ok())
            .unwrap_or_default())
    }

    pub fn save_session(&self, harness: &str, session: &str, record: &SessionRecord) -> Result<()> {
        let json = serde_json::to_string(record).expect("a session record serialises");
        self.tx
            .prepare_cached(
                "INSERT INTO sessions (harness, session, record) VALUES (?1, ?2, ?3)
             ON CONFLICT (harness, session) DO UPDATE SET record = excluded.record",
            )?
            .execute(params![harness, session, json])?;
        Ok(())
    }

    /// Assigns the next seq of the envelope's session, sets it, and stores it.
    pub fn append(&self, envelope: &mut Envelope) -> Result<u64> {
        let seq: i64 = self
            .tx
            .prepare_cached(
                "INSERT INTO sessions (harness, session, next_seq) VALUES (?1, ?2, 2)
             ON CONFLICT (harness, session) DO UPDATE SET next_seq = next_seq + 1
             RETURNING next_seq - 1",
            )?
            .query_row(params![envelope.harness.name, envelope.session.id], |r| {
                r.get(0)
            })?;
        envelope.session.seq = seq as u64;
        let json = serde_json::to_string(envelope).expect("an envelope serialises");
        self.tx
            .prepare_cached(
                "INSERT INTO events (harness, session, seq, type, time, envelope)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                envelope.harness.name,
                envelope.session.id,
                seq,
                envelope.kind,
                envelope.time,
                json
            ])?;
        Ok(seq as u64)
    }

    /// Deletes the session's events stored before `rowid` and empties its record
    /// (its seq counter stays, so the session's seq never repeats). Returns how
    /// many events went.
    pub fn delete_session_before(&self, harness: &str, session: &str, rowid: i64) -> Result<usize> {
        let n = self.tx.execute(
            "DELETE FROM events WHERE harness = ?1 AND session = ?2 AND rowid < ?3",
            params![harness, session, rowid],
        )?;
        self.tx.execute(
            "UPDATE sessions SET record = '{}' WHERE harness = ?1 AND session = ?2",
            params![harness, session],
        )?;
        Ok(n)
    }

    /// The rowid of the last stored event (for the caller's own append).
    pub fn last_rowid(&self) -> Result<i64> {
        Ok(self
            .tx
            .query_row("SELECT coalesce(max(rowid), 0) FROM events", [], |r| {
                r.get(0)
            })?)
    }

    /// True when the outbox has the session (any event of it).
    pub fn session_known(&self, harness: &str, session: &str) -> Result<bool> {
        Ok(self.tx.query_row(
            "SELECT EXISTS (SELECT 1 FROM sessions WHERE harness = ?1 AND session = ?2)",
            params![harness, session],
            |r| r.get(0),
        )?)
    }

    /// The name an ACP start of control gave the session `harness` knows as
    /// `id` (`control_sessions`, how `acp`, written by `control::acp`), when
    /// it gave one. Read here, not through control, because ingest and
    /// backfill sit below control and name a session inside their own
    /// transaction; indexed on (harness, id).
    pub fn acp_name(&self, harness: &str, id: &str) -> Result<Option<String>> {
        Ok(self
            .tx
            .prepare_cached(
                "SELECT name FROM control_sessions WHERE harness = ?1 AND id = ?2 AND how = 'acp'
                 ORDER BY at_ms LIMIT 1",
            )?
            .query_row(params![harness, id], |r| r.get(0))
            .optional()?)
    }

    /// Stores a `session.backfill` at seq 0 (the envelope's), leaving the
    /// session's live seq alone. False when it is there already.
    pub fn append_backfill(&self, envelope: &Envelope) -> Result<bool> {
        let json = serde_json::to_string(envelope).expect("an envelope serialises");
        let added = self.tx.execute(
            "INSERT OR IGNORE INTO events (harness, session, seq, type, time, envelope)
             VALUES (?1, ?2, 0, ?3, ?4, ?5)",
            params![
                envelope.harness.name,
                envelope.session.id,
                envelope.kind,
                envelope.time,
                json
            ],
        )?;
        self.tx.execute(
            "INSERT OR IGNORE INTO sessions (harness, session) VALUES (?1, ?2)",
            params![envelope.harness.name, envelope.session.id],
        )?;
        Ok(added == 1)
    }

    /// Stores a `session.backfill` sent again (remote titles: the session
    /// under its new name). The protocol has it at seq 0 again, and the
    /// envelope says 0; the row's `seq` column is `-n` for the session's n-th
    /// re-send instead, because the column's UNIQUE (harness, session, seq)
    /// is what keeps every live seq from being stored twice, and that guard
    /// stays whole. Nothing reads a seq from the column but the order of a
    /// session's own events, where a re-send sits below its live ones as a
    /// backfill does; sinks send the envelope as stored, by rowid.
    pub fn append_resent_backfill(&self, envelope: &Envelope) -> Result<()> {
        debug_assert_eq!(envelope.session.seq, 0);
        let json = serde_json::to_string(envelope).expect("an envelope serialises");
        self.tx.execute(
            "INSERT INTO events (harness, session, seq, type, time, envelope)
             SELECT ?1, ?2, min(0, coalesce(min(seq), 0)) - 1, ?3, ?4, ?5
             FROM events WHERE harness = ?1 AND session = ?2 AND seq <= 0",
            params![
                envelope.harness.name,
                envelope.session.id,
                envelope.kind,
                envelope.time,
                json
            ],
        )?;
        Ok(())
    }

    pub fn commit(self) -> Result<()> {
        Ok(self.tx.commit()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::session::{Stamp, envelope};
    use protocol::{EventData, SessionBlock, TurnEndReason, TurnEnded};

    fn sample(session: &str) -> Envelope {
        let block = SessionBlock::default();
        let stamp = Stamp {
            harness: "claude-code",
            harness_event: None,
            version: None,
            session_id: session,
            block: &block,
            time_ms: 0,
        };
        envelope(
            &stamp,
            0,
            EventData::TurnEnded(TurnEnded::new(None, TurnEndReason::Stop)),
        )
    }

    #[test]
    fn seq_starts_at_one_and_counts_per_session() {
        let dir = tempfile::tempdir().unwrap();
        let mut ob = Outbox::open(&dir.path().join("o.db")).unwrap();
        assert_eq!(ob.append(&mut sample("a")).unwrap(), 1);
        assert_eq!(ob.append(&mut sample("a")).unwrap(), 2);
        assert_eq!(ob.append(&mut sample("b")).unwrap(), 1);
        let stored = ob.events_after(0, 10).unwrap();
        assert_eq!(stored.len(), 3);
        let env: Envelope = serde_json::from_str(&stored[1].envelope).unwrap();
        assert_eq!(env.session.seq, 2);
    }

    #[test]
    fn a_resent_backfill_is_stored_again_and_leaves_every_seq_alone() {
        let dir = tempfile::tempdir().unwrap();
        let mut ob = Outbox::open(&dir.path().join("o.db")).unwrap();
        let tx = ob.begin().unwrap();
        assert!(tx.append_backfill(&sample("s")).unwrap());
        assert!(
            !tx.append_backfill(&sample("s")).unwrap(),
            "a backfill once"
        );
        assert_eq!(tx.append(&mut sample("s")).unwrap(), 1);
        tx.append_resent_backfill(&sample("s")).unwrap();
        tx.append_resent_backfill(&sample("s")).unwrap();
        assert_eq!(
            tx.append(&mut sample("s")).unwrap(),
            2,
            "the live seq goes on"
        );
        tx.commit().unwrap();
        let seqs: Vec<u64> = ob
            .events_after(0, 100)
            .unwrap()
            .iter()
            .map(|e| {
                serde_json::from_str::<Envelope>(&e.envelope)
                    .unwrap()
                    .session
                    .seq
            })
            .collect();
        assert_eq!(seqs, [0, 1, 0, 0, 2], "each re-send is delivered, as seq 0");
        let columns: Vec<i64> = ob
            .conn
            .prepare("SELECT seq FROM events ORDER BY rowid")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(columns, [0, 1, -1, -2, 2]);
    }

    #[test]
    fn seq_is_monotonic_and_unique_under_concurrent_appends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("o.db");
        Outbox::open(&path).unwrap();
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let mut ob = Outbox::open(&path).unwrap();
                    let mut seen = Vec::new();
                    for _ in 0..50 {
                        seen.push(ob.append(&mut sample("shared")).unwrap());
                    }
                    seen
                })
            })
            .collect();
        let mut all = Vec::new();
        for t in threads {
            let seen = t.join().unwrap();
            assert!(
                seen.windows(2).all(|w| w[0] < w[1]),
                "not monotonic within a writer"
            );
            all.extend(seen);
        }
        all.sort();
        assert_eq!(all, (1..=400).collect::<Vec<u64>>());
        let ob = Outbox::open_readonly(&path).unwrap().unwrap();
        let rows = ob.events_after(0, 1000).unwrap();
        let seqs: Vec<u64> = rows
            .iter()
            .map(|r| {
                serde_json::from_str::<Envelope>(&r.envelope)
                    .unwrap()
                    .session
                    .seq
            })
            .collect();
        assert!(
            seqs.windows(2).all(|w| w[0] < w[1]),
            "append order is seq order"
        );
    }

    #[test]
    fn session_records_and_job_marks_commit_together() {
        let dir = tempfile::tempdir().unwrap();
        let mut ob = Outbox::open(&dir.path().join("o.db")).unwrap();
        {
            let tx = ob.begin().unwrap();
            let mut rec = tx.load_session("h", "s").unwrap();
            rec.started = true;
            tx.save_session("h", "s", &rec).unwrap();
            tx.mark_job("j1", "ok", 5).unwrap();
            // dropped without commit
        }
        let tx = ob.begin().unwrap();
        assert_eq!(tx.job_outcome("j1").unwrap(), None);
        assert!(!tx.load_session("h", "s").unwrap().started);
        tx.mark_job("j1", "ok", 5).unwrap();
        tx.commit().unwrap();
        let tx = ob.begin().unwrap();
        assert_eq!(tx.job_outcome("j1").unwrap().as_deref(), Some("ok"));
    }
}
