//! The outbox: an append-only SQLite store of envelopes, and the session records.
//!
//! It owns `session.seq`: a seq is assigned once, at append, monotonic per
//! (harness, session), starting at 1 (0 is `session.backfill`'s, and a
//! backfill sent again under a new name is 0 again: `append_resent_backfill`
//! says how the row keeps that apart). It also records
//! which spool jobs are committed, so a job deleted late (the daemon killed between
//! commit and unlink) is never appended twice. It does not filter, redact or
//! deliver; readers (tail, sinks) read envelopes back in append order. Its
//! schema and migrations are `schema`'s; the tokens of model responses, kept
//! beside the session records in a layer of their own, are `usage`'s.

mod error;
mod schema;
pub mod tally;
pub mod usage;

use crate::pipeline::session::{Glance, SessionRecord};
use protocol::Envelope;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use std::path::Path;

/// How long a job's name is remembered after its commit. A job file still in the
/// spool after this long would be appended again; no crash leaves one that long.
const JOBS_DONE_KEEP_MS: i64 = 7 * 24 * 3600 * 1000;

pub use error::{OutboxError, Result};

/// How far ahead of the clock an event's time may be and still count as a
/// time (`prune_batch`): a day, for clocks a little off.
pub const FUTURE_SLACK_MS: i64 = 24 * 3600 * 1000;

/// What one `prune_batch` did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PruneStep {
    /// Events deleted.
    pub deleted: usize,
    /// It stopped at its limit, not at an event it keeps: another may delete more.
    pub more: bool,
}

/// The outbox file's pages (`Outbox::pages`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pages {
    pub page_size: i64,
    pub page_count: i64,
    /// Pages holding nothing, waiting to be reused or given back.
    pub free: i64,
    /// The file gives free pages back with `incremental_vacuum`.
    pub incremental: bool,
}

impl Pages {
    /// Bytes in pages that hold something: what a VACUUM copies.
    pub fn used_bytes(&self) -> i64 {
        (self.page_count - self.free) * self.page_size
    }
}

/// The outbox's size on disk: the file and its WAL (0 for what is not there).
pub fn size_on_disk(path: &Path) -> u64 {
    let wal = {
        let mut p = path.as_os_str().to_owned();
        p.push("-wal");
        std::path::PathBuf::from(p)
    };
    [path, wal.as_path()]
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum()
}

pub struct Outbox {
    conn: Connection,
}

/// A question another layer answers from its own tables in the outbox file,
/// inside the outbox's transaction: the name it gave a session the harness
/// knows by its own id (control's ACP starts, whose hooks report under the
/// harness's id). The pipeline asks; it names no table of that layer.
pub trait GivenNames: Send + Sync {
    fn name_of(
        &self,
        conn: &Connection,
        harness: &str,
        id: &str,
    ) -> rusqlite::Result<Option<String>>;
}

/// One stored event as read back.
#[derive(Clone, Debug)]
pub struct StoredEvent {
    pub rowid: i64,
    pub envelope: String,
}

/// `Outbox::board_sessions`'s read: the window by `last_ms`, the live ones
/// through their own (partial) index (by `last_ms`, SQLite would read every
/// older record to compute `live`).
const BOARD_SQL: &str = "SELECT harness, session, record FROM sessions WHERE last_ms >= ?1
     UNION ALL
     SELECT harness, session, record FROM sessions INDEXED BY sessions_live
     WHERE live AND last_ms < ?1";

/// A `harness, session, record` row as the session readers return it (a
/// record that does not read is an empty one).
fn session_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(String, String, SessionRecord)> {
    let json: String = r.get(2)?;
    Ok((
        r.get(0)?,
        r.get(1)?,
        serde_json::from_str(&json).unwrap_or_default(),
    ))
}

/// Which events a backward read (`Outbox::events_before`) takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Only<'a> {
    All,
    Harness(&'a str),
    /// One session of one harness.
    Session(&'a str, &'a str),
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub events: i64,
    pub sessions: i64,
    pub last_rowid: i64,
}

impl Outbox {
    /// Opens (creating when needed) the outbox for writing, its pipeline
    /// tables migrated (the file as every layer opens it: private, WAL, a
    /// commit on disk before its job file is unlinked).
    pub fn open(path: &Path) -> Result<Outbox> {
        let mut conn = sessionpipe_db::open(path)?;
        schema::migrate(&mut conn)?;
        sessionpipe_db::migrate(&mut conn, &usage::USAGE).map_err(schema::newer)?;
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

    /// Opens the outbox for retention's own thread: it only deletes what every
    /// sink took, and a delete lost to a power cut is done again at the next
    /// pass, so its commits skip the fsync too.
    pub fn open_for_retention(path: &Path) -> Result<Outbox> {
        Outbox::open_for_sink(path)
    }

    /// Opens an existing outbox for reading only (tail, status). `None` while
    /// there is none yet: no file, or a file whose first writer has not made its
    /// tables yet.
    pub fn open_readonly(path: &Path) -> Result<Option<Outbox>> {
        if !path.exists() {
            return Ok(None);
        }
        let conn = sessionpipe_db::open_readonly(path)?;
        schema::version(&conn)?;
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

    /// Up to `limit` events stored before `rowid` that `only` takes, newest
    /// first: how a reader shows the end of a long outbox without reading the
    /// rest. One session is found through its (harness, session, seq) index;
    /// a harness, by walking back from `rowid` (an index of a harness holds
    /// most of the outbox).
    pub fn events_before(
        &self,
        rowid: i64,
        limit: usize,
        only: Only<'_>,
    ) -> Result<Vec<StoredEvent>> {
        let row = |r: &rusqlite::Row<'_>| {
            Ok(StoredEvent {
                rowid: r.get(0)?,
                envelope: r.get(1)?,
            })
        };
        let limit = limit as i64;
        let rows = match only {
            Only::All => self
                .conn
                .prepare_cached(
                    "SELECT rowid, envelope FROM events WHERE rowid < ?1
                     ORDER BY rowid DESC LIMIT ?2",
                )?
                .query_map(params![rowid, limit], row)?
                .collect::<rusqlite::Result<_>>()?,
            Only::Harness(harness) => self
                .conn
                .prepare_cached(
                    "SELECT rowid, envelope FROM events WHERE rowid < ?1 AND +harness = ?3
                     ORDER BY rowid DESC LIMIT ?2",
                )?
                .query_map(params![rowid, limit, harness], row)?
                .collect::<rusqlite::Result<_>>()?,
            Only::Session(harness, session) => self
                .conn
                .prepare_cached(
                    "SELECT rowid, envelope FROM events
                     WHERE harness = ?3 AND session = ?4 AND rowid < ?1
                     ORDER BY rowid DESC LIMIT ?2",
                )?
                .query_map(params![rowid, limit, harness, session], row)?
                .collect::<rusqlite::Result<_>>()?,
        };
        Ok(rows)
    }

    /// The rowid of the newest event (0 with none); no count.
    pub fn newest_rowid(&self) -> Result<i64> {
        Ok(self
            .conn
            .query_row("SELECT coalesce(max(rowid), 0) FROM events", [], |r| {
                r.get(0)
            })?)
    }

    /// SQLite's change counter for this connection's view; it moves when another
    /// connection commits, so a follower polls this instead of the table.
    pub fn data_version(&self) -> Result<i64> {
        Ok(self
            .conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))?)
    }

    /// The version of the file's pipeline tables (the last step's number
    /// once opened to write).
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

    /// Puts a sink's cursor back to `rowid` (`replay`: the events after it
    /// go again; receivers take each event once, by its id).
    pub fn rewind_sink_cursor(&mut self, sink: &str, rowid: i64) -> Result<()> {
        self.conn.execute(
            "INSERT INTO sink_cursors (sink, rowid, at_ms) VALUES (?1, ?2, ?3)
             ON CONFLICT (sink) DO UPDATE SET rowid = excluded.rowid, at_ms = excluded.at_ms",
            params![sink, rowid.max(0), protocol::time::now_ms()],
        )?;
        Ok(())
    }

    /// The rowid before the first event stored at or after `time` (RFC 3339,
    /// as events carry it): where a replay `--since` starts. The last rowid
    /// when none is that new.
    pub fn rowid_before_time(&self, time: &str) -> Result<i64> {
        let first: Option<i64> = self.conn.query_row(
            "SELECT min(rowid) FROM events WHERE time >= ?1",
            params![time],
            |r| r.get(0),
        )?;
        match first {
            Some(r) => Ok(r - 1),
            None => self.newest_rowid(),
        }
    }

    pub fn forget_cursor(&mut self, sink: &str) -> Result<()> {
        self.conn
            .execute("DELETE FROM sink_cursors WHERE sink = ?1", params![sink])?;
        Ok(())
    }

    /// Deletes from the oldest end of the outbox up to `limit` events that
    /// every sink has taken (rowid at most `taken`) and that are older than
    /// `before_ms`, in one short write transaction, and says whether more
    /// may follow.
    ///
    /// It walks in rowid (append) order and stops at the first event younger
    /// than `before_ms`, so what it reads is what it deletes, whatever the
    /// outbox's size: an older event appended after a younger one (a
    /// backfill of past sessions) waits until the younger one is old too. An
    /// event whose time cannot be read, or lies more than `FUTURE_SLACK_MS`
    /// ahead of `now_ms` (a clock set wrong for a while), holds nothing up:
    /// it goes with the first old event appended after it, and stays while
    /// none is. The newest event always stays: rowids are SQLite's largest
    /// plus one, and a cursor past a deleted newest rowid would skip the next
    /// event given that rowid again.
    pub fn prune_batch(
        &mut self,
        taken: i64,
        before_ms: i64,
        now_ms: i64,
        limit: usize,
    ) -> Result<PruneStep> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let newest: i64 = tx.query_row("SELECT coalesce(max(rowid), 0) FROM events", [], |r| {
            r.get(0)
        })?;
        let bound = taken.min(newest - 1);
        if bound <= 0 {
            return Ok(PruneStep::default());
        }
        let rows: Vec<(i64, String)> = {
            let mut stmt = tx.prepare_cached(
                "SELECT rowid, time FROM events WHERE rowid <= ?1 ORDER BY rowid LIMIT ?2",
            )?;
            let rows =
                stmt.query_map(params![bound, limit as i64], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let mut through = None;
        let mut young = false;
        for (rowid, time) in &rows {
            match protocol::time::parse_rfc3339_ms(time) {
                Some(t) if t < before_ms => through = Some(*rowid),
                Some(t) if t <= now_ms + FUTURE_SLACK_MS => {
                    young = true;
                    break;
                }
                _ => {} // no age to keep it by: it goes with what follows
            }
        }
        let Some(through) = through else {
            return Ok(PruneStep::default());
        };
        // Everything below `through` is in `rows` (the walk starts at the
        // oldest event), so the range is exactly what was judged old.
        let deleted = tx.execute("DELETE FROM events WHERE rowid <= ?1", params![through])?;
        tx.commit()?;
        Ok(PruneStep {
            deleted,
            more: !young && rows.len() == limit,
        })
    }

    /// The file's pages: its size, what is free in it, how it gives pages back.
    pub fn pages(&self) -> Result<Pages> {
        let get = |pragma: &str| -> Result<i64> {
            Ok(self.conn.pragma_query_value(None, pragma, |r| r.get(0))?)
        };
        Ok(Pages {
            page_size: get("page_size")?,
            page_count: get("page_count")?,
            free: get("freelist_count")?,
            incremental: get("auto_vacuum")? == 2,
        })
    }

    /// Gives up to `pages` free pages back to the file system (a file in
    /// incremental auto-vacuum; a no-op otherwise). One short write.
    pub fn incremental_vacuum(&self, pages: i64) -> Result<()> {
        // It frees a page per step: stepped to its end, not run once.
        let mut stmt = self
            .conn
            .prepare(&format!("PRAGMA incremental_vacuum({})", pages.max(1)))?;
        let mut rows = stmt.query([])?;
        while rows.next()?.is_some() {}
        Ok(())
    }

    /// Rewrites the whole file once, in incremental auto-vacuum from then on.
    /// Holds the write lock for as long as copying what the file holds takes.
    pub fn vacuum_to_incremental(&self) -> Result<()> {
        self.conn
            .execute_batch("PRAGMA auto_vacuum = INCREMENTAL; VACUUM;")?;
        Ok(())
    }

    /// Copies the WAL into the file and empties it (best effort: a reader in
    /// the middle of a read leaves it for the next time).
    pub fn checkpoint(&self) -> Result<()> {
        self.conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        Ok(())
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
        let rows = stmt.query_map([], session_row)?;
        let mut all: Vec<(String, String, SessionRecord)> =
            rows.collect::<rusqlite::Result<_>>()?;
        all.sort_by_key(|(_, _, r)| std::cmp::Reverse(r.last_ms));
        Ok(all)
    }

    /// When a session last did something here (epoch ms; `None` with no
    /// session, or a file not migrated to the board's columns yet): one
    /// lookup in `sessions_by_last`. Retention rewrites a large file only
    /// when this is a while ago.
    pub fn last_activity_ms(&self) -> Result<Option<i64>> {
        if self.schema_version()? < schema::BOARD_COLUMNS {
            return Ok(None);
        }
        Ok(self
            .conn
            .query_row("SELECT max(last_ms) FROM sessions", [], |r| r.get(0))?)
    }

    /// The sessions a board shows from `since_ms` (epoch ms) on: each one
    /// active since then, and any older one still live (an attention open, or
    /// a turn running in a session that has not ended); most recently active
    /// first. Only those records are read (`sessions.last_ms` and `live`,
    /// indexed); a file the daemon has not migrated yet is read whole.
    pub fn board_sessions(&self, since_ms: i64) -> Result<Vec<(String, String, SessionRecord)>> {
        let keep = |r: &SessionRecord| r.last_ms >= since_ms || r.glance() != Glance::Done;
        if self.schema_version()? < schema::BOARD_COLUMNS {
            let mut all = self.sessions()?;
            all.retain(|(_, _, r)| keep(r));
            return Ok(all);
        }
        let mut stmt = self.conn.prepare_cached(BOARD_SQL)?;
        let rows = stmt.query_map(params![since_ms], session_row)?;
        let mut found: Vec<(String, String, SessionRecord)> =
            rows.collect::<rusqlite::Result<_>>()?;
        found.retain(|(_, _, r)| keep(r));
        found.sort_by(|a, b| {
            (std::cmp::Reverse(a.2.last_ms), &a.0, &a.1).cmp(&(
                std::cmp::Reverse(b.2.last_ms),
                &b.0,
                &b.1,
            ))
        });
        Ok(found)
    }

    /// The sessions whose id starts with `start` (harness, id), most recently
    /// active first: how a session named by the start of its id is found.
    /// Only those records are read (a file not migrated yet: all of them).
    pub fn sessions_starting(&self, start: &str) -> Result<Vec<(String, String)>> {
        if self.schema_version()? < schema::BOARD_COLUMNS {
            return Ok(self
                .sessions()?
                .into_iter()
                .filter(|(_, id, _)| id.starts_with(start))
                .map(|(h, id, _)| (h, id))
                .collect());
        }
        let mut stmt = self.conn.prepare_cached(
            "SELECT harness, session FROM sessions WHERE substr(session, 1, length(?1)) = ?1
             ORDER BY last_ms DESC, harness, session",
        )?;
        let rows = stmt.query_map(params![start], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
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

    /// The events of type `kind` stored after row `after` up to row `upto`,
    /// oldest first, at most `limit` (a reader that follows one type as it
    /// comes: `pace`).
    pub fn events_of_type_after(
        &self,
        after: i64,
        upto: i64,
        kind: &str,
        limit: usize,
    ) -> Result<Vec<StoredEvent>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT rowid, envelope FROM events WHERE rowid > ?1 AND rowid <= ?2 AND type = ?3
             ORDER BY rowid LIMIT ?4",
        )?;
        let rows = stmt.query_map(params![after, upto, kind, limit as i64], |r| {
            Ok(StoredEvent {
                rowid: r.get(0)?,
                envelope: r.get(1)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The rowid of the last stored event (0 when there is none).
    pub fn max_rowid(&self) -> Result<i64> {
        Ok(self
            .conn
            .query_row("SELECT coalesce(max(rowid), 0) FROM events", [], |r| {
                r.get(0)
            })?)
    }

    /// The session's events of the three `types` before `seq`, newest first,
    /// at most `limit` (a session's changes are read from them in pages:
    /// `protocol::changes::Reading`).
    pub fn events_of_types_before(
        &self,
        harness: &str,
        session: &str,
        types: [&str; 3],
        seq: i64,
        limit: usize,
    ) -> Result<Vec<(i64, StoredEvent)>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT rowid, envelope, seq FROM events
             WHERE harness = ?1 AND session = ?2 AND seq < ?3 AND type IN (?4, ?5, ?6)
             ORDER BY seq DESC LIMIT ?7",
        )?;
        let args = params![
            harness,
            session,
            seq,
            types[0],
            types[1],
            types[2],
            limit as i64
        ];
        let rows = stmt.query_map(args, |r| {
            Ok((
                r.get(2)?,
                StoredEvent {
                    rowid: r.get(0)?,
                    envelope: r.get(1)?,
                },
            ))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The session's events of type `kind` among its last `within`, newest
    /// first. Only their envelopes are read: the board looks for a few
    /// `attention.needed` among events that carry whole tool outputs.
    pub fn recent_of_type(
        &self,
        harness: &str,
        session: &str,
        kind: &str,
        within: usize,
    ) -> Result<Vec<StoredEvent>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT e.rowid, e.envelope FROM (
                 SELECT rowid AS r, seq, type FROM events
                 WHERE harness = ?1 AND session = ?2 ORDER BY seq DESC LIMIT ?4
             ) AS recent JOIN events e ON e.rowid = recent.r
             WHERE recent.type = ?3 ORDER BY recent.seq DESC",
        )?;
        let rows = stmt.query_map(params![harness, session, kind, within as i64], |r| {
            Ok(StoredEvent {
                rowid: r.get(0)?,
                envelope: r.get(1)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The tokens kept in `span`, grouped by `g` and the model (`usage`).
    pub fn usage_cells(
        &self,
        span: &usage::Span<'_>,
        g: usage::Grouping,
    ) -> Result<Vec<usage::Cell>> {
        usage::cells(&self.conn, span, g)
    }

    /// The same, keyed by numbers (`usage::Sums`): for a reader that keeps
    /// few of many groups.
    pub fn usage_sums(&self, span: &usage::Span<'_>, g: usage::Grouping) -> Result<usage::Sums> {
        usage::sums(&self.conn, span, g)
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

    /// Keeps the tokens of model responses a read of the session's files
    /// found (`usage`): each response once, however often it is read, under
    /// the session's account, and its model where a response names none;
    /// responses kept before those were known are given them at the next
    /// write (`adopt`).
    pub fn put_usage(
        &self,
        harness: &str,
        session: &str,
        block: &protocol::SessionBlock,
        rows: &[harness::usage::Usage],
    ) -> Result<usize> {
        if rows.is_empty() {
            return Ok(0);
        }
        let whose = usage::Whose {
            harness,
            session,
            account: block.account_id.as_deref().filter(|a| !a.is_empty()),
            model: block.model.as_deref(),
        };
        usage::adopt(&self.tx, &whose)?;
        usage::put(&self.tx, &whose, rows)
    }

    /// Deletes the session's events stored before `rowid` and empties its record
    /// (its seq counter stays, so the session's seq never repeats), and deletes
    /// its usage. Returns how many events went.
    pub fn delete_session_before(&self, harness: &str, session: &str, rowid: i64) -> Result<usize> {
        usage::forget(&self.tx, harness, session)?;
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

    /// The name another layer gave the session `harness` knows as `id`
    /// (control's ACP starts: `names`), when it gave one, asked inside this
    /// transaction: ingest and backfill name a session within their own.
    pub fn given_name(
        &self,
        names: &dyn GivenNames,
        harness: &str,
        id: &str,
    ) -> Result<Option<String>> {
        Ok(names.name_of(&self.tx, harness, id)?)
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

    fn sample(session: &str) -> Envelope {
        at(session, 0)
    }

    /// A `turn.ended` of `session` stamped `time_ms`.
    fn at(session: &str, time_ms: i64) -> Envelope {
        crate::pipeline::session::turn_ended_at(session, time_ms)
    }

    const DAY: i64 = 86_400_000;
    const NOW: i64 = 1_796_000_000_000; // 2026-11-29

    fn rowids(ob: &Outbox) -> Vec<i64> {
        ob.events_after(0, 1000)
            .unwrap()
            .iter()
            .map(|e| e.rowid)
            .collect()
    }

    /// Every batch `prune_batch` gives, as a pass runs them.
    fn prune_all(ob: &mut Outbox, taken: i64, keep_days: i64, limit: usize) -> usize {
        let mut deleted = 0;
        loop {
            let step = ob
                .prune_batch(taken, NOW - keep_days * DAY, NOW, limit)
                .unwrap();
            deleted += step.deleted;
            if !step.more {
                return deleted;
            }
        }
    }

    #[test]
    fn prune_takes_the_old_end_that_every_sink_took_and_stops_at_the_first_young_event() {
        let dir = tempfile::tempdir().unwrap();
        let mut ob = Outbox::open(&dir.path().join("o.db")).unwrap();
        for (s, days_ago) in [
            ("a", 40),
            ("a", 39),
            ("b", 35),
            ("b", 10),
            ("c", 38),
            ("b", 1),
        ] {
            ob.append(&mut at(s, NOW - days_ago * DAY)).unwrap();
        }
        // A sink that took only the first two holds the rest back.
        assert_eq!(prune_all(&mut ob, 2, 30, 500), 2);
        assert_eq!(rowids(&ob), [3, 4, 5, 6]);
        // Every sink took all: the old end goes, up to the first event
        // younger than 30 days; the older one appended after it waits.
        assert_eq!(prune_all(&mut ob, i64::MAX, 30, 500), 1);
        assert_eq!(rowids(&ob), [4, 5, 6]);
        // Nothing at all is older than 60 days now.
        assert_eq!(prune_all(&mut ob, i64::MAX, 60, 500), 0);
        // Once the young one is old too (a shorter window), both go; the
        // newest event stays whatever its age.
        assert_eq!(prune_all(&mut ob, i64::MAX, 0, 500), 2);
        assert_eq!(rowids(&ob), [6]);
        // Sessions keep their records and their seq goes on.
        for s in ["a", "b", "c"] {
            assert!(ob.session("claude-code", s).unwrap().is_some(), "{s}");
        }
        assert_eq!(ob.append(&mut at("a", NOW)).unwrap(), 3);
        assert_eq!(ob.append(&mut at("c", NOW)).unwrap(), 2);
        assert_eq!(ob.counts().unwrap().last_rowid, 8, "rowids never go back");
    }

    #[test]
    fn prune_goes_in_batches_of_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        let mut ob = Outbox::open(&dir.path().join("o.db")).unwrap();
        for i in 0..7 {
            ob.append(&mut at("a", NOW - (50 - i) * DAY)).unwrap();
        }
        let step = ob.prune_batch(i64::MAX, NOW - 30 * DAY, NOW, 3).unwrap();
        assert_eq!(
            step,
            PruneStep {
                deleted: 3,
                more: true
            }
        );
        let step = ob.prune_batch(i64::MAX, NOW - 30 * DAY, NOW, 3).unwrap();
        assert_eq!(
            step,
            PruneStep {
                deleted: 3,
                more: true
            }
        );
        // The last one is the newest: it stays, and the pass ends.
        let step = ob.prune_batch(i64::MAX, NOW - 30 * DAY, NOW, 3).unwrap();
        assert_eq!(
            step,
            PruneStep {
                deleted: 0,
                more: false
            }
        );
        assert_eq!(rowids(&ob), [7]);
    }

    #[test]
    fn an_event_from_the_future_goes_with_the_old_ones_after_it_and_stays_without() {
        let dir = tempfile::tempdir().unwrap();
        let mut ob = Outbox::open(&dir.path().join("o.db")).unwrap();
        for t in [
            NOW - 40 * DAY,
            NOW + 900 * DAY,
            NOW - 39 * DAY,
            NOW + 900 * DAY,
        ] {
            ob.append(&mut at("a", t)).unwrap();
        }
        ob.append(&mut at("a", NOW - DAY)).unwrap();
        assert_eq!(prune_all(&mut ob, i64::MAX, 30, 500), 3);
        assert_eq!(rowids(&ob), [4, 5], "no old event after it: it stays");
    }

    #[test]
    fn a_sink_keeps_what_it_has_not_taken_and_status_counts_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut ob = Outbox::open(&dir.path().join("o.db")).unwrap();
        for days_ago in [40, 39, 38, 2] {
            ob.append(&mut at("a", NOW - days_ago * DAY)).unwrap();
        }
        // The paused sink took the first event only.
        assert_eq!(ob.count_older_after(1, NOW - 30 * DAY).unwrap().count, 2);
        assert_eq!(ob.count_older_after(4, NOW - 30 * DAY).unwrap().count, 0);
        assert_eq!(prune_all(&mut ob, 1, 30, 500), 1);
        assert_eq!(rowids(&ob), [2, 3, 4]);
    }

    #[test]
    fn a_new_outbox_gives_freed_pages_back_and_an_old_one_switches_once() {
        let dir = tempfile::tempdir().unwrap();
        let fresh = dir.path().join("new.db");
        let mut ob = Outbox::open(&fresh).unwrap();
        assert!(ob.pages().unwrap().incremental, "set at creation");
        let mut big = at("a", NOW - 40 * DAY);
        big.session.title = Some("x".repeat(3000));
        for _ in 0..300 {
            ob.append(&mut big.clone()).unwrap();
        }
        ob.append(&mut at("a", NOW)).unwrap();
        ob.checkpoint().unwrap();
        let before = ob.pages().unwrap();
        assert_eq!(prune_all(&mut ob, i64::MAX, 30, 100), 300);
        let before_free = ob.pages().unwrap().free;
        assert!(before_free > 100);
        ob.incremental_vacuum(64).unwrap();
        assert_eq!(
            ob.pages().unwrap().free,
            before_free - 64,
            "64 pages a step"
        );
        while ob.pages().unwrap().free > 0 {
            ob.incremental_vacuum(64).unwrap();
        }
        let after = ob.pages().unwrap();
        assert!(
            after.page_count * 4 < before.page_count,
            "{before:?} -> {after:?}"
        );
        ob.checkpoint().unwrap();
        assert!(size_on_disk(&fresh) < (before.page_count * before.page_size) as u64 / 4);

        // A file made before: no auto-vacuum, until one VACUUM switches it.
        let old = dir.path().join("old.db");
        {
            let c = Connection::open(&old).unwrap();
            c.execute_batch("PRAGMA auto_vacuum = NONE; CREATE TABLE t (x);")
                .unwrap();
        }
        let ob = Outbox::open(&old).unwrap();
        assert!(!ob.pages().unwrap().incremental);
        ob.vacuum_to_incremental().unwrap();
        assert!(ob.pages().unwrap().incremental);
    }

    /// A session record of `session` last active at `last_ms`, in `state`.
    fn record(ob: &mut Outbox, session: &str, last_ms: i64, state: &str) {
        use crate::pipeline::session::OpenAttention;
        let tx = ob.begin().unwrap();
        let mut r = tx.load_session("claude-code", session).unwrap();
        r.started = true;
        r.last_ms = last_ms;
        match state {
            "needs_you" => r.open.push(OpenAttention {
                id: "perm-1".into(),
                agent_id: None,
                permission: true,
            }),
            "working" => r.running_turn = Some(String::new()),
            // A turn left running by a session that ended: done.
            "ended" => {
                r.running_turn = Some("t1".into());
                r.ended = true;
            }
            _ => {}
        }
        tx.save_session("claude-code", session, &r).unwrap();
        tx.commit().unwrap();
    }

    #[test]
    fn the_board_reads_its_window_and_the_live_sessions_and_a_start_finds_its_sessions() {
        let dir = tempfile::tempdir().unwrap();
        let mut ob = Outbox::open(&dir.path().join("o.db")).unwrap();
        for (s, days_ago, state) in [
            ("recent", 0, "done"),
            ("yesterday", 2, "done"),
            ("stuck", 200, "working"),
            ("asking", 90, "needs_you"),
            ("gone", 300, "ended"),
            ("recent-asking", 0, "needs_you"),
        ] {
            record(&mut ob, s, NOW - days_ago * DAY - 1000, state);
        }
        // A record that is not JSON is no session of the board's.
        ob.conn
            .execute(
                "INSERT INTO sessions (harness, session, record) VALUES ('claude-code', 'bad', 'not json')",
                [],
            )
            .unwrap();
        let board: Vec<String> = ob
            .board_sessions(NOW - DAY)
            .unwrap()
            .into_iter()
            .map(|(_, s, _)| s)
            .collect();
        assert_eq!(board, ["recent", "recent-asking", "asking", "stuck"]);
        let starting = |start: &str| -> Vec<String> {
            ob.sessions_starting(start)
                .unwrap()
                .into_iter()
                .map(|(_, s)| s)
                .collect()
        };
        let by_records: Vec<String> = ob
            .sessions()
            .unwrap()
            .into_iter()
            .map(|(_, s, _)| s)
            .collect();
        assert_eq!(
            starting(""),
            by_records,
            "the same order, most recent first"
        );
        assert_eq!(by_records.len(), 7);
        assert_eq!(starting("rec"), ["recent", "recent-asking"]);
        assert_eq!(starting("recent-"), ["recent-asking"]);
        assert!(starting("x").is_empty());
        // Through the indexes, not a scan of every record.
        let mut stmt = ob
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN {BOARD_SQL}"))
            .unwrap();
        let plan: Vec<String> = stmt
            .query_map([NOW], |r| r.get(3))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        drop(stmt);
        let plan = plan.join("; ");
        assert!(
            plan.contains("sessions_by_last") && plan.contains("sessions_live"),
            "{plan}"
        );
        // The columns follow every write: answered, the prompt is not live.
        let tx = ob.begin().unwrap();
        let mut r = tx.load_session("claude-code", "asking").unwrap();
        r.open.clear();
        tx.save_session("claude-code", "asking", &r).unwrap();
        tx.commit().unwrap();
        let board: Vec<String> = ob
            .board_sessions(NOW - DAY)
            .unwrap()
            .into_iter()
            .map(|(_, s, _)| s)
            .collect();
        assert_eq!(board, ["recent", "recent-asking", "stuck"]);
    }

    #[test]
    fn a_backward_read_takes_the_newest_of_all_a_harness_or_a_session() {
        let dir = tempfile::tempdir().unwrap();
        let mut ob = Outbox::open(&dir.path().join("o.db")).unwrap();
        for i in 0..30 {
            let mut env = at(if i % 3 == 0 { "b" } else { "a" }, NOW + i);
            if i % 5 == 0 {
                env.harness.name = "codex".into();
            }
            ob.append(&mut env).unwrap();
        }
        assert_eq!(ob.newest_rowid().unwrap(), 30);
        let ids = |v: Vec<StoredEvent>| v.iter().map(|e| e.rowid).collect::<Vec<_>>();
        assert_eq!(
            ids(ob.events_before(31, 3, Only::All).unwrap()),
            [30, 29, 28]
        );
        assert_eq!(ids(ob.events_before(28, 2, Only::All).unwrap()), [27, 26]);
        assert_eq!(
            ids(ob.events_before(31, 4, Only::Harness("codex")).unwrap()),
            [26, 21, 16, 11]
        );
        // Session b of claude-code: rows 4, 7, 10, ... but not 1, 16 (codex).
        assert_eq!(
            ids(ob
                .events_before(20, 10, Only::Session("claude-code", "b"))
                .unwrap()),
            [19, 13, 10, 7, 4]
        );
        assert!(ob.events_before(1, 10, Only::All).unwrap().is_empty());
    }

    #[test]
    fn recent_of_type_reads_only_the_kind_asked_among_the_last_events() {
        let dir = tempfile::tempdir().unwrap();
        let mut ob = Outbox::open(&dir.path().join("o.db")).unwrap();
        for i in 0..12 {
            let mut env = at(if i % 4 == 3 { "b" } else { "a" }, NOW + i);
            if i % 3 == 0 {
                env.kind = "attention.needed".into();
            }
            ob.append(&mut env).unwrap();
        }
        // Session a: rows 1, 2, 3, 5, 6, 7, 9, 10, 11; attentions at 1, 7, 10.
        let ids = |v: Vec<StoredEvent>| v.iter().map(|e| e.rowid).collect::<Vec<_>>();
        let of = |within| {
            ids(ob
                .recent_of_type("claude-code", "a", "attention.needed", within)
                .unwrap())
        };
        assert_eq!(of(100), [10, 7, 1]);
        assert_eq!(of(4), [10, 7], "among a's last 4: 11, 10, 9, 7");
        assert_eq!(of(1), Vec::<i64>::new());
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
