//! Layer 2, store: what the events side keeps, in the receiver's database
//! (`db`): every event as it came (its body, its `time` and the time it
//! arrived), each session's block merged over its events, and a digest of every
//! forgotten session with the seq it was forgotten at.
//!
//! This module owns the rules that are about state: dedup on (harness,
//! session, seq) per owner, a `session.forgotten` deleting everything of its
//! session before the batch is answered (this batch's earlier events too) and
//! keeping anything at or below its seq from coming back, each session's
//! board state kept beside its events (folded by `board`), and retention. It must not judge an event's shape (`check` does) nor speak
//! HTTP. One batch is one transaction; on PostgreSQL a session's events are
//! taken under a lock on that session, so two receiver processes given the
//! same event store it once, and a forget cannot race an append. On SQLite
//! the sessions a batch leaves are remembered for the next (`Remembered`)
//! while nothing else writes the file.
//!
//! A forgotten session leaves no readable trace: the tombstone is a SHA-256
//! of (owner, harness, session id), enough to refuse a retry and nothing more.

use crate::board::{self, Folded, State};
use crate::check::Key;
use crate::db::{Db, DbError, Dialect, Row, Tx, args};
use crate::owners::{Owner, Owners};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};

/// Rows deleted per statement by a retention pass: small enough that ingest
/// never waits long behind one.
const PRUNE_BATCH: i64 = 500;

/// A forgotten session's tombstone is kept at least this long (a sender's
/// retries of its events come within hours).
const TOMBSTONE_MIN_MS: i64 = 7 * 24 * 3600 * 1000;

/// What one batch came to, in the order of its events.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ingested {
    /// The account its events were stored under.
    pub owner: String,
    pub accepted: u64,
    pub duplicates: u64,
    /// The `attention.needed` events stored by this batch (not duplicates,
    /// nor one whose session already has a later event), for `notify`.
    pub attentions: Vec<Value>,
}

/// One event that passed `check`, with its key and the text it is stored as
/// (made by the caller, off the database's one writer).
pub struct Checked {
    pub key: Key,
    pub event: Value,
    body: String,
}

impl Checked {
    pub fn new(key: Key, event: Value) -> Checked {
        let body = serde_json::to_string(&event).expect("a JSON value serialises");
        Checked { key, event, body }
    }
}

fn digest(owner: &str, harness: &str, session: &str) -> Vec<u8> {
    let mut h = Sha256::new();
    for part in [owner, harness, session] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    h.finalize().to_vec()
}

/// The sessions the last batches left, kept on SQLite's writer between
/// batches (`Tx::take_kept`: trusted only while nothing else changed the
/// database), so that a batch naming the sessions the last one named reads
/// and parses none of them again: a sender's backlog names the same few
/// sessions batch after batch. Keyed by (owner, harness, session).
#[derive(Default)]
struct Remembered(HashMap<(String, String, String), Open>);

/// The most sessions remembered; past it, the memory starts over (a batch
/// names at most 50).
const REMEMBERED_MAX: usize = 512;

/// The session's state as one batch changes it.
#[derive(Default)]
struct Open {
    forgotten_at: Option<i64>,
    /// What is folded so far and the session's first time, once it exists.
    folded: Option<(Folded, i64)>,
    touched: bool,
}

/// A `sessions` row's board columns, read from column `at` on: block,
/// block_seq, state, in_turn, attention, last_words, first_ms, last_ms.
fn folded_of(r: &Row, at: usize) -> Result<(Folded, i64, i64), DbError> {
    let corrupt = |_| DbError::Corrupt { what: "session" };
    let block = serde_json::from_str::<Map<String, Value>>(&r.text(at)?).map_err(corrupt)?;
    let attention = r
        .opt_text(at + 4)?
        .map(|a| serde_json::from_str(&a).map_err(corrupt))
        .transpose()?;
    Ok((
        Folded {
            block,
            seq: r.int(at + 1)?,
            state: State::parse(&r.text(at + 2)?),
            in_turn: r.flag(at + 3)?,
            attention,
            last_words: r.opt_text(at + 5)?,
        },
        r.int(at + 6)?,
        r.int(at + 7)?,
    ))
}

/// The event id of what is held at a key (a retry of the same event has the
/// same id; a re-send under a new name does not).
async fn held_id(
    tx: &mut Tx<'_>,
    owner: &str,
    harness: &str,
    session: &str,
    seq: i64,
) -> Result<Option<String>, DbError> {
    let body = tx
        .row(
            "SELECT body FROM events WHERE owner = $1 AND harness = $2 AND session = $3 AND seq = $4",
            args![owner, harness, session, seq],
        )
        .await?
        .map(|r| r.text(0))
        .transpose()?;
    Ok(body.and_then(|b| {
        serde_json::from_str::<Value>(&b)
            .ok()?
            .get("id")?
            .as_str()
            .map(str::to_string)
    }))
}

async fn open_session(
    tx: &mut Tx<'_>,
    dialect: Dialect,
    owner: &str,
    harness: &str,
    session: &str,
) -> Result<Open, DbError> {
    let digest = digest(owner, harness, session);
    if dialect == Dialect::Postgres {
        // One session's batch at a time over every process; released at commit.
        tx.exec(
            "SELECT pg_advisory_xact_lock(hashtextextended(encode($1, 'hex'), 0))",
            args![digest.clone()],
        )
        .await?;
    }
    let forgotten_at = tx
        .row("SELECT seq FROM forgotten WHERE digest = $1", args![digest])
        .await?
        .map(|r| r.int(0))
        .transpose()?;
    let folded = match tx
        .row(
            "SELECT block, block_seq, state, in_turn, attention, last_words, first_ms, last_ms
             FROM sessions WHERE owner = $1 AND harness = $2 AND id = $3",
            args![owner, harness, session],
        )
        .await?
    {
        Some(r) => {
            let (f, first, _) = folded_of(&r, 0)?;
            Some((f, first))
        }
        None => None,
    };
    Ok(Open {
        forgotten_at,
        folded,
        touched: false,
    })
}

/// Stores one batch's checked events: each is accepted or a duplicate, in
/// one transaction.
/// `machine`: the paired machine the batch's sink token was minted for,
/// kept on each session it names (the board's link from a session to its
/// machine; a name could be changed or shared).
pub async fn ingest(
    db: &Db,
    owner: &Owner,
    machine: Option<&str>,
    events: Vec<Checked>,
    now_ms: i64,
) -> Result<Ingested, DbError> {
    let dialect = db.dialect();
    let (owner, machine) = (owner.clone(), machine.map(str::to_string));
    let (out, forgot, events) = db
        .transaction(move |mut tx| {
            Box::pin(async move {
                let owner = match owner {
                    Owner::Account(a) => a,
                    Owner::Operator => Owners::operator_in(&mut tx, dialect).await?,
                };
                let mut out = Ingested {
                    owner,
                    ..Ingested::default()
                };
                let owner = out.owner.clone();
                let owner = owner.as_str();
                let mut forgot = false;
                // Sessions are opened in key order, so two batches naming the
                // same sessions take their locks in the same order and never
                // deadlock.
                let mut sessions: BTreeMap<(String, String), Open> = BTreeMap::new();
                for c in &events {
                    sessions
                        .entry((c.key.0.clone(), c.key.1.clone()))
                        .or_default();
                }
                let mut remembered = tx.take_kept::<Remembered>();
                for ((h, s), slot) in sessions.iter_mut() {
                    let known = remembered
                        .as_mut()
                        .and_then(|r| r.0.remove(&(owner.to_string(), h.clone(), s.clone())));
                    *slot = match known {
                        Some(open) => open,
                        None => open_session(&mut tx, dialect, owner, h, s).await?,
                    };
                }
                for c in &events {
                    let (harness, session, seq) = (&c.key.0, &c.key.1, c.key.2 as i64);
                    let open = sessions
                        .get_mut(&(harness.clone(), session.clone()))
                        .expect("every session was opened");
                    if open.forgotten_at.is_some_and(|f| seq <= f) {
                        out.duplicates += 1;
                        continue;
                    }
                    if c.event["type"] == "session.forgotten" {
                        forget(&mut tx, owner, harness, session, seq, now_ms).await?;
                        // As the tombstone keeps it: the higher of the two.
                        open.forgotten_at = Some(open.forgotten_at.map_or(seq, |f| f.max(seq)));
                        open.folded = None;
                        open.touched = false;
                        out.accepted += 1;
                        forgot = true;
                        continue;
                    }
                    let stored = tx
                        .exec(
                            "INSERT INTO events (owner, harness, session, seq, event_type,
                               event_time, arrived_ms, body)
                             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                             ON CONFLICT (owner, harness, session, seq) DO NOTHING",
                            args![
                                owner,
                                harness,
                                session,
                                seq,
                                c.event["type"].as_str().unwrap_or(""),
                                c.event["time"].as_str().unwrap_or(""),
                                now_ms,
                                c.body.as_str()
                            ],
                        )
                        .await?
                        > 0;
                    if stored {
                        out.accepted += 1;
                    } else {
                        out.duplicates += 1;
                    }
                    // A duplicate still folds its block in: a re-sent seq 0 may
                    // bring a better title. A backfill that is not a retry of
                    // the one held (new here, or under a new event id) is the
                    // session's newer name: the sender sends one for a session
                    // it sent before only to rename it (see `board::rename`).
                    let renamed = c.event["type"] == "session.backfill"
                        && (stored || {
                            let held = held_id(&mut tx, owner, harness, session, seq).await?;
                            held.as_deref() != c.event["id"].as_str()
                        });
                    let (folded, _) = open
                        .folded
                        .get_or_insert_with(|| (Folded::default(), now_ms));
                    // Told only when it is the session's latest: one that
                    // arrives after a later event (batches may overtake one
                    // another) may already be answered.
                    if stored && seq >= folded.seq && c.event["type"] == "attention.needed" {
                        out.attentions.push(c.event.clone());
                    }
                    board::fold(folded, &c.event, seq, stored);
                    if renamed {
                        board::rename(folded, &c.event);
                    }
                    open.touched = true;
                }
                for ((harness, session), open) in &sessions {
                    let (true, Some((f, first_ms))) = (open.touched, &open.folded) else {
                        continue;
                    };
                    tx.exec(
                        "INSERT INTO sessions (owner, harness, id, block, block_seq, state,
                           in_turn, attention, last_words, first_ms, last_ms, machine_id)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
                         ON CONFLICT (owner, harness, id) DO UPDATE SET
                           block = excluded.block, block_seq = excluded.block_seq,
                           state = excluded.state, in_turn = excluded.in_turn,
                           attention = excluded.attention, last_words = excluded.last_words,
                           last_ms = excluded.last_ms,
                           machine_id = COALESCE(excluded.machine_id, sessions.machine_id)",
                        args![
                            owner,
                            harness,
                            session,
                            serde_json::to_string(&f.block).expect("a JSON map serialises"),
                            f.seq,
                            f.state.as_str(),
                            f.in_turn,
                            f.attention.as_ref().map(Value::to_string),
                            f.last_words.clone(),
                            *first_ms,
                            now_ms,
                            machine.as_deref()
                        ],
                    )
                    .await?;
                }
                if let Some(mut r) = remembered {
                    if r.0.len() + sessions.len() > REMEMBERED_MAX {
                        r.0.clear();
                    }
                    for ((h, s), mut open) in sessions {
                        open.touched = false;
                        r.0.insert((owner.to_string(), h, s), open);
                    }
                    tx.keep(r);
                }
                tx.commit().await?;
                // Handed back to be freed by the caller, not by the writer.
                Ok::<_, DbError>((out, forgot, events))
            })
        })
        .await?;
    drop(events);
    if forgot {
        db.scrub().await?;
    }
    Ok(out)
}

/// Deletes everything of the session and keeps its tombstone at `seq` (or
/// higher, when it was forgotten before at a higher one).
async fn forget(
    tx: &mut Tx<'_>,
    owner: &str,
    harness: &str,
    session: &str,
    seq: i64,
    now_ms: i64,
) -> Result<(), DbError> {
    tx.exec(
        "INSERT INTO forgotten (digest, seq, at_ms) VALUES ($1, $2, $3)
         ON CONFLICT (digest) DO UPDATE SET
           seq = CASE WHEN excluded.seq > forgotten.seq THEN excluded.seq ELSE forgotten.seq END,
           at_ms = excluded.at_ms",
        args![digest(owner, harness, session), seq, now_ms],
    )
    .await?;
    tx.exec(
        "DELETE FROM events WHERE owner = $1 AND harness = $2 AND session = $3",
        args![owner, harness, session],
    )
    .await?;
    tx.exec(
        "DELETE FROM sessions WHERE owner = $1 AND harness = $2 AND id = $3",
        args![owner, harness, session],
    )
    .await?;
    Ok(())
}

/// The session's stored events in seq order, `None` when nothing is stored
/// (never stored, forgotten, or pruned).
pub async fn read(
    db: &Db,
    owner: &str,
    harness: &str,
    session: &str,
) -> Result<Option<Vec<Value>>, DbError> {
    let rows = db
        .rows(
            "SELECT body FROM events WHERE owner = $1 AND harness = $2 AND session = $3
             ORDER BY seq",
            args![owner, harness, session],
        )
        .await?;
    if rows.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        out.push(
            serde_json::from_str(&r.text(0)?).map_err(|_| DbError::Corrupt { what: "event" })?,
        );
    }
    Ok(Some(out))
}

/// One session as the board keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionRow {
    pub harness: String,
    pub id: String,
    pub folded: Folded,
    pub first_ms: i64,
    pub last_ms: i64,
    /// The paired machine whose sink token sent it, when one did.
    pub machine_id: Option<String>,
}

fn session_of(r: &Row) -> Result<SessionRow, DbError> {
    let (folded, first_ms, last_ms) = folded_of(r, 2)?;
    Ok(SessionRow {
        harness: r.text(0)?,
        id: r.text(1)?,
        folded,
        first_ms,
        last_ms,
        machine_id: r.opt_text(10)?,
    })
}

/// The session's board row, `None` when nothing of it is kept.
pub async fn session(
    db: &Db,
    owner: &str,
    harness: &str,
    session: &str,
) -> Result<Option<SessionRow>, DbError> {
    db.row(
        "SELECT harness, id, block, block_seq, state, in_turn, attention, last_words,
           first_ms, last_ms, machine_id
         FROM sessions WHERE owner = $1 AND harness = $2 AND id = $3",
        args![owner, harness, session],
    )
    .await?
    .as_ref()
    .map(session_of)
    .transpose()
}

/// The owner's sessions, last heard of first, at most `limit`.
pub async fn sessions(db: &Db, owner: &str, limit: usize) -> Result<Vec<SessionRow>, DbError> {
    db.rows(
        "SELECT harness, id, block, block_seq, state, in_turn, attention, last_words,
           first_ms, last_ms, machine_id
         FROM sessions WHERE owner = $1 ORDER BY last_ms DESC LIMIT $2",
        args![owner, limit],
    )
    .await?
    .iter()
    .map(session_of)
    .collect()
}

/// A session's last `limit` events in seq order, each with when it arrived.
pub async fn timeline(
    db: &Db,
    owner: &str,
    harness: &str,
    session: &str,
    limit: usize,
) -> Result<Vec<(Value, i64)>, DbError> {
    let rows = db
        .rows(
            "SELECT body, arrived_ms FROM events
             WHERE owner = $1 AND harness = $2 AND session = $3
             ORDER BY seq DESC LIMIT $4",
            args![owner, harness, session, limit],
        )
        .await?;
    let mut out = Vec::with_capacity(rows.len());
    for r in rows.iter().rev() {
        let body =
            serde_json::from_str(&r.text(0)?).map_err(|_| DbError::Corrupt { what: "event" })?;
        out.push((body, r.int(1)?));
    }
    Ok(out)
}

/// A session's changes (`protocol::changes`), read from its events of the
/// types they need, newest first a page at a time, within the reading's
/// bounds.
pub async fn changes(
    db: &Db,
    owner: &str,
    harness: &str,
    session: &str,
    cwd: Option<&str>,
) -> Result<protocol::changes::Changes, DbError> {
    use protocol::changes::{READ_PAGE, READ_TYPES, Reading};
    let [a, b, c] = READ_TYPES;
    let mut reading = Reading::default();
    let mut before = i64::MAX;
    loop {
        let rows = db
            .rows(
                "SELECT event_type, event_time, body, seq FROM events
                 WHERE owner = $1 AND harness = $2 AND session = $3 AND seq < $4
                   AND event_type IN ($5, $6, $7)
                 ORDER BY seq DESC LIMIT $8",
                args![owner, harness, session, before, a, b, c, READ_PAGE],
            )
            .await?;
        for r in &rows {
            before = r.int(3)?;
            let body = r.text(2)?;
            let mut env: Value =
                serde_json::from_str(&body).map_err(|_| DbError::Corrupt { what: "event" })?;
            let data = env.get_mut("data").map(Value::take).unwrap_or_default();
            if !reading.feed(r.text(0)?, r.text(1)?, data, body.len()) {
                return Ok(reading.changes(cwd));
            }
        }
        if rows.len() < READ_PAGE {
            return Ok(reading.changes(cwd));
        }
    }
}

/// Every stored (harness, session, seq) of `owner`, sorted.
pub async fn keys(db: &Db, owner: &str) -> Result<Vec<Key>, DbError> {
    let rows = db
        .rows(
            "SELECT harness, session, seq FROM events WHERE owner = $1
             ORDER BY harness, session, seq",
            args![owner],
        )
        .await?;
    rows.iter()
        .map(|r| Ok((r.text(0)?, r.text(1)?, r.int(2)? as u64)))
        .collect()
}

/// (sessions with something stored, events stored), over every owner.
pub async fn counts(db: &Db) -> Result<(usize, usize), DbError> {
    let r = db
        .row(
            "SELECT (SELECT COUNT(*) FROM
                      (SELECT 1 AS one FROM events GROUP BY owner, harness, session) AS g),
                    (SELECT COUNT(*) FROM events)",
            vec![],
        )
        .await?
        .ok_or(DbError::Corrupt { what: "count" })?;
    Ok((r.int(0)? as usize, r.int(1)? as usize))
}

/// Deletes what arrived before `before_ms`, a batch at a time: events, the
/// sessions last heard of before then, tombstones at least a week old too.
/// Returns the events deleted.
pub async fn prune(db: &Db, before_ms: i64) -> Result<u64, DbError> {
    let mut events = 0;
    loop {
        let n = db
            .exec(
                "DELETE FROM events WHERE (owner, harness, session, seq) IN
                   (SELECT owner, harness, session, seq FROM events
                    WHERE arrived_ms < $1 LIMIT $2)",
                args![before_ms, PRUNE_BATCH],
            )
            .await?;
        events += n;
        if n < PRUNE_BATCH as u64 {
            break;
        }
        // Lets a waiting batch in between two deletes.
        tokio::task::yield_now().await;
    }
    db.exec("DELETE FROM sessions WHERE last_ms < $1", args![before_ms])
        .await?;
    db.exec(
        "DELETE FROM forgotten WHERE at_ms < $1",
        args![before_ms.min(protocol::time::now_ms() - TOMBSTONE_MIN_MS)],
    )
    .await?;
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Location;
    use serde_json::json;

    fn event(seq: u64, ty: &str, session: Value) -> Value {
        let mut s = session;
        s["id"] = json!("s");
        s["seq"] = json!(seq);
        json!({"id": format!("e{seq}"), "type": ty, "time": "2026-01-01T00:00:00Z",
               "harness": {"name": "h"}, "session": s, "data": {}})
    }

    async fn put(db: &Db, evs: &[Value], now: i64) -> Ingested {
        let checked: Vec<Checked> = evs
            .iter()
            .map(|e| {
                Checked::new(
                    (
                        "h".into(),
                        "s".into(),
                        e["session"]["seq"].as_u64().unwrap(),
                    ),
                    e.clone(),
                )
            })
            .collect();
        ingest(
            db,
            &Owner::Account(crate::owners::NO_ACCOUNT.into()),
            None,
            checked,
            now,
        )
        .await
        .unwrap()
    }

    async fn title(db: &Db) -> String {
        let row = session(db, crate::owners::NO_ACCOUNT, "h", "s")
            .await
            .unwrap()
            .unwrap();
        row.folded.block["title"].as_str().unwrap().to_string()
    }

    #[tokio::test]
    async fn a_backfill_sent_again_under_a_new_id_renames_the_session() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(Location::Folder(dir.path())).await.unwrap();
        let titled = |id: &str, title: &str, source: &str| {
            let mut e = event(
                0,
                "session.backfill",
                json!({"title": title, "title_source": source, "cwd": "~/w"}),
            );
            e["id"] = json!(id);
            e
        };
        let first = titled("b1", "older name", "harness");
        assert_eq!(
            put(&db, std::slice::from_ref(&first), 1_000).await.accepted,
            1
        );
        // The session went on live under the local name (seq 1, later).
        let live = event(
            1,
            "turn.started",
            json!({"title": "local auto name", "title_source": "harness"}),
        );
        assert_eq!(put(&db, &[live], 1_200).await.accepted, 1);
        // A retry of the backfill (its own id) is an earlier event: the later
        // name of the same source stays.
        assert_eq!(put(&db, &[first], 1_500).await.duplicates, 1);
        assert_eq!(title(&db).await, "local auto name");
        // Sent again under a new id with claude.ai's name: a duplicate key,
        // not stored, and the newer name of the same source is taken.
        let again = titled("b2", "Fix the login page", "harness");
        assert_eq!(put(&db, &[again], 2_000).await.duplicates, 1);
        assert_eq!(title(&db).await, "Fix the login page");
        // Never over a better source.
        let mine = event(
            2,
            "turn.ended",
            json!({"title": "Mine", "title_source": "custom"}),
        );
        put(&db, &[mine], 3_000).await;
        put(&db, &[titled("b3", "Renamed again", "harness")], 4_000).await;
        assert_eq!(title(&db).await, "Mine");
        let seqs: Vec<u64> = read(&db, crate::owners::NO_ACCOUNT, "h", "s")
            .await
            .unwrap()
            .unwrap()
            .iter()
            .map(|e| e["session"]["seq"].as_u64().unwrap())
            .collect();
        assert_eq!(seqs, [0, 1, 2], "no event is stored twice");
    }

    #[tokio::test]
    async fn a_backfill_after_a_sessions_live_events_renames_it() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(Location::Folder(dir.path())).await.unwrap();
        let live = |seq, title: &str| {
            event(
                seq,
                "turn.started",
                json!({"title": title, "title_source": "harness", "cwd": "~/w"}),
            )
        };
        put(
            &db,
            &[live(1, "local auto name"), live(2, "local auto name")],
            1_000,
        )
        .await;
        // Never backfilled before: seq 0 is free, stored, and names it.
        let again = event(
            0,
            "session.backfill",
            json!({"title": "Fix the login page",
            "title_source": "harness", "cwd": "~/elsewhere"}),
        );
        assert_eq!(put(&db, &[again], 2_000).await.accepted, 1);
        assert_eq!(title(&db).await, "Fix the login page");
        let row = session(&db, crate::owners::NO_ACCOUNT, "h", "s")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            row.folded.block["cwd"], "~/w",
            "other members only fill gaps"
        );
        assert_eq!(row.folded.seq, 2, "the state stays the live events'");
    }

    #[tokio::test]
    async fn a_session_remembered_between_batches_is_read_again_once_anything_else_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(Location::Folder(dir.path())).await.unwrap();
        let titled = event(1, "turn.started", json!({"title": "kept", "cwd": "/w"}));
        put(&db, &[titled], 1_000).await;
        // Remembered from the batch before: the block goes on from it.
        put(&db, &[event(2, "turn.ended", json!({}))], 2_000).await;
        let row = session(&db, crate::owners::NO_ACCOUNT, "h", "s")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(row.folded.block["title"], "kept");
        assert_eq!((row.first_ms, row.last_ms), (1_000, 2_000));
        // A write that is not a batch's (as a retention pass or a claim
        // makes): what was remembered is no longer trusted.
        db.exec("DELETE FROM sessions", vec![]).await.unwrap();
        put(&db, &[event(3, "turn.started", json!({}))], 3_000).await;
        let row = session(&db, crate::owners::NO_ACCOUNT, "h", "s")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            Value::Object(row.folded.block.clone()),
            json!({"id": "s"}),
            "read again from the table, not from memory"
        );
        assert_eq!(row.first_ms, 3_000);
    }

    #[tokio::test]
    async fn an_attention_that_arrives_after_a_later_event_of_its_session_is_stored_not_told() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(Location::Folder(dir.path())).await.unwrap();
        put(&db, &[event(5, "turn.ended", json!({}))], 1_000).await;
        let late = put(&db, &[event(3, "attention.needed", json!({}))], 2_000).await;
        assert_eq!((late.accepted, late.attentions.len()), (1, 0));
        let now = put(&db, &[event(6, "attention.needed", json!({}))], 3_000).await;
        assert_eq!((now.accepted, now.attentions.len()), (1, 1));
    }

    #[tokio::test]
    async fn dedup_fold_forget_and_retention() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(Location::Folder(dir.path())).await.unwrap();
        let a = event(1, "turn.started", json!({"title": "new", "cwd": "/w"}));
        let b = event(0, "session.started", json!({"title": "old", "model": "m"}));
        assert_eq!(
            put(&db, &[a.clone(), b.clone(), a.clone()], 1_000).await,
            Ingested {
                owner: String::new(),
                accepted: 2,
                duplicates: 1,
                attentions: vec![]
            }
        );
        let row = session(&db, crate::owners::NO_ACCOUNT, "h", "s")
            .await
            .unwrap()
            .unwrap();
        // seq 1 is later: its title wins; seq 0 only fills the model in.
        assert_eq!(
            Value::Object(row.folded.block.clone()),
            json!({"title": "new", "cwd": "/w", "id": "s", "model": "m"})
        );
        assert_eq!(row.folded.state, State::Working);
        assert_eq!((row.first_ms, row.last_ms), (1_000, 1_000));
        let seqs: Vec<u64> = read(&db, crate::owners::NO_ACCOUNT, "h", "s")
            .await
            .unwrap()
            .unwrap()
            .iter()
            .map(|e| e["session"]["seq"].as_u64().unwrap())
            .collect();
        assert_eq!(seqs, [0, 1]);

        let f = event(2, "session.forgotten", json!({}));
        let c = event(3, "turn.ended", json!({}));
        assert_eq!(put(&db, &[f.clone(), c.clone()], 2_000).await.accepted, 2);
        assert_eq!(
            read(&db, crate::owners::NO_ACCOUNT, "h", "s")
                .await
                .unwrap()
                .unwrap()
                .len(),
            1
        );
        // A retry of anything up to the forget stays gone.
        assert_eq!(
            put(&db, &[a, b, f], 3_000).await,
            Ingested {
                owner: String::new(),
                accepted: 0,
                duplicates: 3,
                attentions: vec![]
            }
        );
        let tombstones = db
            .rows("SELECT digest FROM forgotten", vec![])
            .await
            .unwrap();
        assert_eq!(tombstones.len(), 1);
        assert_eq!(
            tombstones[0].bytes(0).unwrap().len(),
            32,
            "a digest, not the id"
        );

        assert_eq!(prune(&db, 2_500).await.unwrap(), 1);
        assert_eq!(counts(&db).await.unwrap(), (0, 0));
        assert!(
            session(&db, crate::owners::NO_ACCOUNT, "h", "s")
                .await
                .unwrap()
                .is_none()
        );
    }
}
