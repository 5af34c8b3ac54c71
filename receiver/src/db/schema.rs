//! The receiver's schema, one text for both databases, and the migrations that
//! bring a database up to it.
//!
//! This module owns the tables' definitions and the step each database is at
//! (`schema_steps`). It must not read or write rows of the other tables. A
//! step is written once in the SQL both accept, with SQLite's type names;
//! PostgreSQL gets `BIGINT` for `INTEGER` and `BYTEA` for `BLOB`. A step, once
//! released, never changes: a change is a new step. Several processes opening
//! one PostgreSQL at once take turns (an advisory lock inside the step's
//! transaction); a database a newer build moved past is refused, never
//! rewritten.

use super::database::{Db, Dialect, Tx};
use super::values::{DbError, args};

/// Every step, in order; the database records the last one it took.
const STEPS: &[&str] = &[
    // 1: events, sessions, the forgotten, the control side, and the page's
    // accounts (passkeys, sign-ins, invites, sink tokens, push).
    "CREATE TABLE sessions (
       owner TEXT NOT NULL,
       harness TEXT NOT NULL,
       id TEXT NOT NULL,
       block TEXT NOT NULL,
       block_seq INTEGER NOT NULL,
       state TEXT NOT NULL,
       in_turn INTEGER NOT NULL,
       attention TEXT,
              last_words TEXT,
       machine_id TEXT,
       first_ms INTEGER NOT NULL,
       last_ms INTEGER NOT NULL,
       PRIMARY KEY (owner, harness, id)
     );
     CREATE INDEX sessions_by_last ON sessions (owner, last_ms);
     CREATE TABLE events (
       owner TEXT NOT NULL,
       harness TEXT NOT NULL,
       session TEXT NOT NULL,
       seq INTEGER NOT NULL,
       event_type TEXT NOT NULL,
       event_time TEXT NOT NULL,
       arrived_ms INTEGER NOT NULL,
       body TEXT NOT NULL,
       PRIMARY KEY (owner, harness, session, seq)
     );
     CREATE INDEX events_by_arrival ON events (arrived_ms);
     CREATE TABLE forgotten (
       digest BLOB PRIMARY KEY,
       seq INTEGER NOT NULL,
       at_ms INTEGER NOT NULL
     );
     CREATE TABLE machines (
       id TEXT PRIMARY KEY,
       token_hash BLOB NOT NULL,
       name TEXT NOT NULL,
       paired_ms INTEGER NOT NULL,
       hello TEXT,
       hello_ms INTEGER,
       last_poll_ms INTEGER,
       poll_gen INTEGER NOT NULL DEFAULT 0
     );
     CREATE TABLE machine_keys (
       machine TEXT NOT NULL,
       id TEXT NOT NULL,
       key_json TEXT NOT NULL,
       account TEXT,
       added_ms INTEGER NOT NULL,
       PRIMARY KEY (machine, id)
     );
     CREATE TABLE pairings (
       code TEXT PRIMARY KEY,
       machine TEXT NOT NULL,
       first_pairing INTEGER NOT NULL,
       open_pairing INTEGER NOT NULL,
       check_digits TEXT NOT NULL,
       name TEXT NOT NULL,
       request TEXT NOT NULL,
       poll_key_hash BLOB,
       created_ms INTEGER NOT NULL,
       expires_ms INTEGER NOT NULL,
       key_json TEXT,
       proof_json TEXT,
       account TEXT,
       approved_ms INTEGER
     );
     CREATE TABLE messages (
       id TEXT PRIMARY KEY,
       machine TEXT NOT NULL,
       cmd TEXT NOT NULL,
       csig TEXT,
       grant_json TEXT,
       confirm_json TEXT,
       at_ms INTEGER NOT NULL,
       expires_ms INTEGER NOT NULL,
       deliveries INTEGER NOT NULL DEFAULT 0,
       last_delivered_ms INTEGER,
       taken_ms INTEGER,
       taken_until_ms INTEGER,
       final_ack TEXT,
       final_ms INTEGER,
       progress_seq INTEGER,
       progress_reply TEXT,
       acks INTEGER NOT NULL DEFAULT 0,
       duplicates INTEGER NOT NULL DEFAULT 0
     );
     CREATE INDEX messages_by_machine ON messages (machine, id);
     CREATE TABLE files (
       sha256 TEXT PRIMARY KEY,
       bytes BLOB NOT NULL,
       content_type TEXT NOT NULL,
       put_ms INTEGER NOT NULL,
       account TEXT
     );
     ALTER TABLE machines ADD COLUMN account TEXT;
     ALTER TABLE messages ADD COLUMN account TEXT;
     CREATE TABLE accounts (
       id TEXT PRIMARY KEY,
       name TEXT NOT NULL,
       user_handle BLOB NOT NULL UNIQUE,
       created_ms INTEGER NOT NULL
     );
     CREATE TABLE credentials (
       id TEXT PRIMARY KEY,
       account TEXT NOT NULL,
       passkey TEXT NOT NULL,
       spki TEXT NOT NULL,
       alg INTEGER NOT NULL,
       name TEXT NOT NULL,
       added_ms INTEGER NOT NULL,
       used_ms INTEGER
     );
     CREATE INDEX credentials_by_account ON credentials (account);
     CREATE TABLE ceremonies (
       id TEXT PRIMARY KEY,
       kind TEXT NOT NULL,
       account TEXT,
       name TEXT,
       state TEXT NOT NULL,
       expires_ms INTEGER NOT NULL
     );
     CREATE TABLE web_sessions (
       token_hash BLOB PRIMARY KEY,
       account TEXT NOT NULL,
       credential TEXT NOT NULL,
       created_ms INTEGER NOT NULL,
       expires_ms INTEGER NOT NULL
     );
     CREATE TABLE invites (
       code_hash BLOB PRIMARY KEY,
       account TEXT,
       created_by TEXT NOT NULL,
       expires_ms INTEGER NOT NULL
     );
     CREATE TABLE sink_tokens (
       token_hash BLOB PRIMARY KEY,
       account TEXT NOT NULL,
       machine TEXT,
       created_ms INTEGER NOT NULL
     );
     CREATE TABLE push_subscriptions (
       endpoint TEXT PRIMARY KEY,
       account TEXT NOT NULL,
       subscription TEXT NOT NULL,
       tier INTEGER NOT NULL,
       created_ms INTEGER NOT NULL
     );
     CREATE TABLE notify_urls (
       account TEXT NOT NULL,
       url TEXT NOT NULL,
       tier INTEGER NOT NULL,
       created_ms INTEGER NOT NULL,
       PRIMARY KEY (account, url)
     );
     CREATE TABLE nonces (
       nonce TEXT PRIMARY KEY,
       iat_ms INTEGER NOT NULL
     );
     CREATE TABLE settings (
       name TEXT PRIMARY KEY,
       value BLOB NOT NULL
     );",
    // 2: the client (an address, an IPv6 /64) that started a ceremony or an
    // open pairing, so that one client's share of them is bounded.
    "ALTER TABLE ceremonies ADD COLUMN client TEXT;
     CREATE INDEX ceremonies_by_client ON ceremonies (client, expires_ms);
     ALTER TABLE pairings ADD COLUMN client TEXT;
     CREATE INDEX pairings_by_client ON pairings (client, expires_ms);",
];

/// The step this build brings a database to.
pub const LATEST: i64 = STEPS.len() as i64;

/// A step's text in the database's own type names.
fn in_dialect(step: &str, dialect: Dialect) -> String {
    match dialect {
        Dialect::Sqlite => step.to_string(),
        Dialect::Postgres => step.replace("INTEGER", "BIGINT").replace("BLOB", "BYTEA"),
    }
}

async fn script(tx: &mut Tx<'_>, sql: String) -> Result<(), DbError> {
    match tx {
        Tx::Sqlite(t) => t.script(&sql),
        Tx::Postgres(t, _) => t.script(sql).await,
    }
}

/// Brings `db` to `LATEST` in one transaction.
pub async fn migrate(db: &Db) -> Result<(), DbError> {
    let dialect = db.dialect();
    db.transaction(move |mut tx| {
        Box::pin(async move {
            if dialect == Dialect::Postgres {
                // Receivers started together on one database migrate one at a
                // time; the lock ends with the transaction.
                tx.exec("SELECT pg_advisory_xact_lock(7303001)", vec![])
                    .await?;
            }
            script(
                &mut tx,
                in_dialect(
                    "CREATE TABLE IF NOT EXISTS schema_steps (
                       step INTEGER PRIMARY KEY,
                       at_ms INTEGER NOT NULL
                     )",
                    dialect,
                ),
            )
            .await?;
            let found = tx
                .row("SELECT MAX(step) FROM schema_steps", vec![])
                .await?
                .map(|r| r.opt_int(0))
                .transpose()?
                .flatten()
                .unwrap_or(0);
            if found > LATEST {
                return Err(DbError::Newer {
                    found,
                    known: LATEST,
                });
            }
            for (i, step) in STEPS.iter().enumerate().skip(found as usize) {
                script(&mut tx, in_dialect(step, dialect)).await?;
                tx.exec(
                    "INSERT INTO schema_steps (step, at_ms) VALUES ($1, $2)",
                    args![i as i64 + 1, protocol::time::now_ms()],
                )
                .await?;
            }
            tx.commit().await
        })
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Location;

    #[tokio::test]
    async fn a_database_a_newer_build_moved_past_is_refused_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(Location::Folder(dir.path())).await.unwrap();
        db.exec(
            "INSERT INTO schema_steps (step, at_ms) VALUES ($1, 0)",
            args![LATEST + 1],
        )
        .await
        .unwrap();
        drop(db);
        match Db::open(Location::Folder(dir.path())).await {
            Err(DbError::Newer { found, known }) => {
                assert_eq!((found, known), (LATEST + 1, LATEST));
            }
            other => panic!("expected Newer, got {:?}", other.err()),
        }
        // Opening again is idempotent for a database at LATEST.
        let dir2 = tempfile::tempdir().unwrap();
        drop(Db::open(Location::Folder(dir2.path())).await.unwrap());
        let db = Db::open(Location::Folder(dir2.path())).await.unwrap();
        let steps = db
            .rows("SELECT step FROM schema_steps", vec![])
            .await
            .unwrap();
        assert_eq!(steps.len() as i64, LATEST);
    }

    #[test]
    fn postgres_gets_its_own_type_names() {
        let pg = in_dialect(STEPS[0], Dialect::Postgres);
        assert!(pg.contains("seq BIGINT NOT NULL") && pg.contains("bytes BYTEA NOT NULL"));
        assert!(!pg.contains("INTEGER") && !pg.contains("BLOB"));
    }
}
