//! What the events side keeps, in the receiver's database (`db`): every
//! event as it came (its body, its `time` and the time it arrived), each
//! session's block merged over its events, and a digest of every forgotten
//! session with the seq it was forgotten at.
//!
//! This module owns the rules that are about state: dedup on (harness,
//! session, seq) per owner, a `session.forgotten` deleting everything of its
//! session before the batch is answered (this batch's earlier events too) and
//! keeping anything at or below its seq from coming back, the session block
//! merge (a member from a later seq wins; an earlier seq only fills a gap),
//! and retention. It must not judge an event's shape (`check` does) nor speak
//! HTTP. One batch is one transaction; on PostgreSQL a session's events are
//! taken under a lock on that session, so two receiver processes given the
//! same event store it once, and a forget cannot race an append.
//!
//! A forgotten session leaves no readable trace: the tombstone is a SHA-256
//! of (owner, harness, session id), enough to refuse a retry and nothing more.

use crate::check::Key;
use crate::db::{Db, DbError, Dialect, Tx, args};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The owner of events sent with the receiver's own sink token.
pub const OPERATOR: &str = "";

/// Rows deleted per statement by a retention pass: small enough that ingest
/// never waits long behind one.
const PRUNE_BATCH: i64 = 500;

/// A forgotten session's tombstone is kept at least this long (a sender's
/// retries of its events come within hours).
const TOMBSTONE_MIN_MS: i64 = 7 * 24 * 3600 * 1000;

/// What one batch came to, in the order of its events.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ingested {
    pub accepted: u64,
    pub duplicates: u64,
}

/// One event that passed `check`, with its key.
pub struct Checked<'a> {
    pub key: Key,
    pub event: &'a Value,
}

fn digest(owner: &str, harness: &str, session: &str) -> Vec<u8> {
    let mut h = Sha256::new();
    for part in [owner, harness, session] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    h.finalize().to_vec()
}

/// `into`'s members overlaid with `from`'s (`seq` left out: it is the
/// event's, not the session's); with `later` false only missing ones are added.
fn merge(into: &mut Map<String, Value>, from: &Value, later: bool) {
    let Some(from) = from.as_object() else {
        return;
    };
    for (k, v) in from {
        if k == "seq" || v.is_null() {
            continue;
        }
        if later || !into.contains_key(k) {
            into.insert(k.clone(), v.clone());
        }
    }
}

/// The session's state as one batch changes it.
#[derive(Default)]
struct Open {
    forgotten_at: Option<i64>,
    block: Option<(Map<String, Value>, i64, i64)>,
    touched: bool,
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
    let block = match tx
        .row(
            "SELECT block, block_seq, first_ms FROM sessions
             WHERE owner = $1 AND harness = $2 AND id = $3",
            args![owner, harness, session],
        )
        .await?
    {
        Some(r) => {
            let block = serde_json::from_str::<Map<String, Value>>(&r.text(0)?).map_err(|_| {
                DbError::Corrupt {
                    what: "session block",
                }
            })?;
            Some((block, r.int(1)?, r.int(2)?))
        }
        None => None,
    };
    Ok(Open {
        forgotten_at,
        block,
        touched: false,
    })
}

/// Stores one batch's checked events: each is accepted or a duplicate, in
/// one transaction.
pub async fn ingest(
    db: &Db,
    owner: &str,
    events: &[Checked<'_>],
    now_ms: i64,
) -> Result<Ingested, DbError> {
    let dialect = db.dialect();
    let mut out = Ingested::default();
    let mut forgot = false;
    let mut tx = db.begin().await?;
    // Sessions are opened in key order, so two batches naming the same
    // sessions take their locks in the same order and never deadlock.
    let mut sessions: BTreeMap<(String, String), Open> = BTreeMap::new();
    for c in events {
        let sk = (c.key.0.clone(), c.key.1.clone());
        sessions.entry(sk).or_default();
    }
    for ((h, s), slot) in sessions.iter_mut() {
        *slot = open_session(&mut tx, dialect, owner, h, s).await?;
    }
    for c in events {
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
            open.forgotten_at = Some(seq);
            open.block = None;
            open.touched = false;
            out.accepted += 1;
            forgot = true;
            continue;
        }
        let body = serde_json::to_string(c.event).expect("a JSON value serialises");
        let stored = tx
            .exec(
                "INSERT INTO events (owner, harness, session, seq, event_type, event_time,
                   arrived_ms, body)
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
                    body
                ],
            )
            .await?;
        if stored == 0 {
            out.duplicates += 1;
            continue;
        }
        out.accepted += 1;
        let (block, block_seq, _) = open
            .block
            .get_or_insert_with(|| (Map::new(), i64::MIN, now_ms));
        merge(block, &c.event["session"], seq >= *block_seq);
        *block_seq = (*block_seq).max(seq);
        open.touched = true;
    }
    for ((harness, session), open) in &sessions {
        let (true, Some((block, block_seq, first_ms))) = (open.touched, &open.block) else {
            continue;
        };
        tx.exec(
            "INSERT INTO sessions (owner, harness, id, block, block_seq, first_ms, last_ms)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (owner, harness, id) DO UPDATE SET
               block = excluded.block, block_seq = excluded.block_seq,
               last_ms = excluded.last_ms",
            args![
                owner,
                harness,
                session,
                Value::Object(block.clone()).to_string(),
                *block_seq,
                *first_ms,
                now_ms
            ],
        )
        .await?;
    }
    tx.commit().await?;
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

/// The session's merged block and when it was first and last heard of.
pub async fn session_block(
    db: &Db,
    owner: &str,
    harness: &str,
    session: &str,
) -> Result<Option<(Value, i64, i64)>, DbError> {
    let Some(r) = db
        .row(
            "SELECT block, first_ms, last_ms FROM sessions
             WHERE owner = $1 AND harness = $2 AND id = $3",
            args![owner, harness, session],
        )
        .await?
    else {
        return Ok(None);
    };
    let block = serde_json::from_str(&r.text(0)?).map_err(|_| DbError::Corrupt {
        what: "session block",
    })?;
    Ok(Some((block, r.int(1)?, r.int(2)?)))
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
               "harness": {"name": "h"}, "session": s})
    }

    async fn put(db: &Db, evs: &[Value], now: i64) -> Ingested {
        let checked: Vec<Checked> = evs
            .iter()
            .map(|e| Checked {
                key: (
                    "h".into(),
                    "s".into(),
                    e["session"]["seq"].as_u64().unwrap(),
                ),
                event: e,
            })
            .collect();
        ingest(db, OPERATOR, &checked, now).await.unwrap()
    }

    #[tokio::test]
    async fn dedup_merge_forget_and_retention() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(Location::Folder(dir.path())).await.unwrap();
        let a = event(1, "turn.started", json!({"title": "new", "cwd": "/w"}));
        let b = event(0, "session.started", json!({"title": "old", "model": "m"}));
        assert_eq!(
            put(&db, &[a.clone(), b.clone(), a.clone()], 1_000).await,
            Ingested {
                accepted: 2,
                duplicates: 1
            }
        );
        let (block, first, last) = session_block(&db, OPERATOR, "h", "s")
            .await
            .unwrap()
            .unwrap();
        // seq 1 is later: its title wins; seq 0 only fills the model in.
        assert_eq!(
            block,
            json!({"title": "new", "cwd": "/w", "id": "s", "model": "m"})
        );
        assert_eq!((first, last), (1_000, 1_000));
        let seqs: Vec<u64> = read(&db, OPERATOR, "h", "s")
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
            read(&db, OPERATOR, "h", "s").await.unwrap().unwrap().len(),
            1
        );
        // A retry of anything up to the forget stays gone.
        assert_eq!(
            put(&db, &[a, b, f], 3_000).await,
            Ingested {
                accepted: 0,
                duplicates: 3
            }
        );
        let none: i64 = db
            .row(
                "SELECT COUNT(*) FROM forgotten WHERE digest = $1",
                args![b"h".to_vec()],
            )
            .await
            .unwrap()
            .unwrap()
            .int(0)
            .unwrap();
        assert_eq!(none, 0, "the tombstone holds a digest, not the id");

        assert_eq!(prune(&db, 2_500).await.unwrap(), 1);
        assert_eq!(counts(&db).await.unwrap(), (0, 0));
        assert!(
            session_block(&db, OPERATOR, "h", "s")
                .await
                .unwrap()
                .is_none()
        );
    }
}
