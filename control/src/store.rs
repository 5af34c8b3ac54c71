//! What control keeps, in its own tables of the outbox file (`CONTROL`, the
//! control layer's migration steps, run by whoever opens them first): the
//! paired receivers, the passkeys enrolled at this machine, the nonces of
//! every verified command (25 h), what became of each message a receiver
//! sent (its final ack, sent or not yet), and the session names control gave
//! out; and the one question another layer asks of them (`acp_name`).
//!
//! It owns these rows and nothing else: it never reads or writes events or
//! sessions, never holds a token (the machine token is in the secrets store)
//! and never decides anything; `run` and `pair` do.

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use serde::{Deserialize, Serialize};
use sessionpipe_db::{Layer, Step};
use std::path::Path;

/// Control's tables and their migrations, as one layer of the outbox file
/// (their numbers are the ones they had in the one list every layer shared).
pub const CONTROL: Layer = Layer {
    name: "control",
    steps: &[
        // 3: receivers: one row per paired receiver (the machine token is in
        // the keychain, never here). keys: the passkeys the person enrolled at
        // this machine, per receiver. nonces: every verified command's nonce,
        // recorded before it runs, kept 25 h. messages: what became of each
        // message a receiver sent, so a redelivery gets the same final ack and
        // a restart sends the acks not yet sent.
        Step::sql(
            3,
            "
    CREATE TABLE control_receivers (
        origin      TEXT PRIMARY KEY,
        machine     TEXT NOT NULL,
        control_url TEXT NOT NULL,
        rp_id       TEXT NOT NULL,
        wait_max_s  INTEGER NOT NULL,
        account     TEXT,
        paired_ms   INTEGER NOT NULL,
        stopped     TEXT
    ) WITHOUT ROWID;
    CREATE TABLE control_keys (
        receiver  TEXT NOT NULL,
        id        TEXT NOT NULL,
        alg       INTEGER NOT NULL,
        spki      TEXT NOT NULL,
        name      TEXT,
        added_ms  INTEGER NOT NULL,
        PRIMARY KEY (receiver, id)
    ) WITHOUT ROWID;
    CREATE TABLE control_nonces (
        nonce    TEXT PRIMARY KEY,
        iat_ms   INTEGER NOT NULL,
        seen_ms  INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE control_messages (
        receiver  TEXT NOT NULL,
        id        TEXT NOT NULL,
        nonce     TEXT,
        session   TEXT,
        kind      TEXT,
        command   TEXT,
        state     TEXT NOT NULL,
        ack       TEXT,
        ack_sent  INTEGER NOT NULL DEFAULT 0,
        at_ms     INTEGER NOT NULL,
        PRIMARY KEY (receiver, id)
    ) WITHOUT ROWID;
    ",
        ),
        // 4: control's headless runs. sessions: a session name control gave
        // out (a start's id, a session it forked) and the harness's own id
        // behind it, so later messages to the name reach the same session (a
        // harness that picks its ids; the fork a live session's messages go
        // to). begun: a message whose process started, so a restart never
        // runs it twice.
        Step::sql(
            4,
            "
    CREATE TABLE control_sessions (
        harness  TEXT NOT NULL,
        name     TEXT NOT NULL,
        id       TEXT NOT NULL,
        how      TEXT NOT NULL,
        cwd      TEXT,
        at_ms    INTEGER NOT NULL,
        PRIMARY KEY (harness, name)
    ) WITHOUT ROWID;
    ALTER TABLE control_messages ADD COLUMN begun INTEGER NOT NULL DEFAULT 0;
    ",
        ),
        // 5: ingest asks control_sessions the other way round, by the
        // harness's own id (which name an ACP start gave the session its hooks
        // report, `acp_name`), once per session it has not seen; without an
        // index that is a scan.
        Step::sql(
            5,
            "
    CREATE INDEX control_sessions_by_id ON control_sessions (harness, id);
    ",
        ),
    ],
};

/// How long a nonce is remembered: the spec's 25 h (a command is valid 24 h,
/// plus the 5 min a device's clock may run ahead, plus slack).
pub const NONCE_KEEP_MS: i64 = 25 * 3600 * 1000;
/// How long a message's final ack is remembered for a redelivery to get it again.
const MESSAGE_KEEP_MS: i64 = 48 * 3600 * 1000;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the control tables: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("the outbox: {0}")]
    File(#[from] sessionpipe_db::DbError),
}

pub type Result<T> = std::result::Result<T, StoreError>;

/// A receiver this machine is paired with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Receiver {
    /// The receiver's origin (`https://host[:port]`): its name here.
    pub origin: String,
    /// The machine id the receiver gave this machine (`m_…`).
    pub machine: String,
    /// `endpoints.control`, absolute.
    pub control_url: String,
    /// `control.signing.rp_id`: passkeys are made for it.
    pub rp_id: String,
    pub wait_max_s: u64,
    /// Who approved the pairing, in the receiver's words.
    pub account: Option<String>,
    pub paired_ms: i64,
    /// Why polling stopped (a 401: the receiver removed this machine).
    pub stopped: Option<String>,
}

impl Receiver {
    /// What `status` and the tray say of a receiver no longer polled.
    pub fn stopped_line(&self) -> Option<String> {
        self.stopped
            .as_deref()
            .map(|why| format!("control with {} stopped: {why}", self.origin))
    }

    /// The key the machine token is kept under in the secrets store.
    pub fn token_key(&self) -> String {
        format!("control:{}", self.origin)
    }
}

/// A passkey the person enrolled at this machine for one receiver.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Key {
    pub receiver: String,
    pub id: String,
    pub alg: i64,
    pub spki: String,
    pub name: Option<String>,
    pub added_ms: i64,
}

impl Key {
    pub fn trusted(&self) -> sessionpipe_verifier::TrustedKey {
        sessionpipe_verifier::TrustedKey {
            id: self.id.clone(),
            alg: self.alg,
            spki: self.spki.clone(),
        }
    }
}

/// Where a message stands on this machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Verified, its nonce recorded, waiting for a way in (a Stop, a waiter, a
    /// permission hook).
    Queued,
    /// A final ack is decided (sent or not yet: `ack_sent`).
    Final,
}

impl State {
    fn as_str(self) -> &'static str {
        match self {
            State::Queued => "queued",
            State::Final => "final",
        }
    }
    fn parse(s: &str) -> State {
        if s == "queued" {
            State::Queued
        } else {
            State::Final
        }
    }
}

/// One message a receiver sent, as kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub receiver: String,
    pub id: String,
    pub nonce: Option<String>,
    pub session: Option<String>,
    /// The verified command (JSON of `run::Queued`) while it is queued.
    pub command: Option<String>,
    pub state: State,
    /// The final ack (JSON), once decided.
    pub ack: Option<String>,
    pub ack_sent: bool,
    /// Its headless process started (a restart must not run it again).
    pub begun: bool,
}

/// A session name control gave out and the harness's own session behind it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedSession {
    /// The harness's own id.
    pub id: String,
    /// `start` (the harness picked its id for a start of ours) or `fork`
    /// (messages to a live session go to this copy of it).
    pub how: String,
    pub cwd: Option<String>,
}

pub struct Store {
    conn: Connection,
}

impl Store {
    /// Opens the control tables of the outbox file at `outbox` (creating the
    /// file when needed, migrating control's tables and no others).
    pub fn open(outbox: &Path) -> Result<Store> {
        let mut conn = sessionpipe_db::open(outbox)?;
        sessionpipe_db::migrate(&mut conn, &CONTROL)?;
        Ok(Store { conn })
    }

    /// Reads what is paired without migrating a file (status, doctor). `None`
    /// when the file is missing or has no control tables yet.
    pub fn open_readonly(outbox: &Path) -> Result<Option<Store>> {
        if !outbox.exists() {
            return Ok(None);
        }
        let conn = sessionpipe_db::open_readonly(outbox)?;
        let has = sessionpipe_db::version(&conn, &CONTROL)? > 0;
        Ok(has.then_some(Store { conn }))
    }

    /// What the tray says when polling stopped somewhere (`None`: all well).
    pub fn stopped_line(outbox: &Path) -> Option<String> {
        let store = Store::open_readonly(outbox).ok()??;
        let lines: Vec<String> = store
            .receivers()
            .ok()?
            .iter()
            .filter_map(Receiver::stopped_line)
            .collect();
        (!lines.is_empty()).then(|| lines.join("; "))
    }

    pub fn receivers(&self) -> Result<Vec<Receiver>> {
        let mut stmt = self.conn.prepare(
            "SELECT origin, machine, control_url, rp_id, wait_max_s, account, paired_ms, stopped
             FROM control_receivers ORDER BY paired_ms",
        )?;
        let rows = stmt.query_map([], receiver_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    pub fn receiver(&self, origin: &str) -> Result<Option<Receiver>> {
        Ok(self
            .conn
            .query_row(
                "SELECT origin, machine, control_url, rp_id, wait_max_s, account, paired_ms, stopped
                 FROM control_receivers WHERE origin = ?1",
                params![origin],
                receiver_row,
            )
            .optional()?)
    }

    /// Saves a pairing: the receiver and the key it proved, in one transaction.
    pub fn pair(&mut self, receiver: &Receiver, key: &Key) -> Result<()> {
        let tx = self.write()?;
        tx.execute(
            "INSERT INTO control_receivers
               (origin, machine, control_url, rp_id, wait_max_s, account, paired_ms, stopped)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, NULL)
             ON CONFLICT (origin) DO UPDATE SET machine = excluded.machine,
               control_url = excluded.control_url, rp_id = excluded.rp_id,
               wait_max_s = excluded.wait_max_s,
               account = coalesce(excluded.account, account), stopped = NULL",
            params![
                receiver.origin,
                receiver.machine,
                receiver.control_url,
                receiver.rp_id,
                receiver.wait_max_s as i64,
                receiver.account,
                receiver.paired_ms
            ],
        )?;
        insert_key(&tx, key)?;
        tx.commit()?;
        Ok(())
    }

    /// Adds a key a trusted device vouched for (`key.add`).
    pub fn add_key(&mut self, key: &Key) -> Result<()> {
        insert_key(&self.conn, key)?;
        Ok(())
    }

    /// Removes a receiver, its keys and what it sent.
    pub fn remove_receiver(&mut self, origin: &str) -> Result<bool> {
        let tx = self.write()?;
        let n = tx.execute(
            "DELETE FROM control_receivers WHERE origin = ?1",
            params![origin],
        )?;
        tx.execute(
            "DELETE FROM control_keys WHERE receiver = ?1",
            params![origin],
        )?;
        tx.execute(
            "DELETE FROM control_messages WHERE receiver = ?1",
            params![origin],
        )?;
        tx.commit()?;
        Ok(n > 0)
    }

    /// Marks a receiver as no longer polled, and why (`None`: polled again).
    pub fn set_stopped(&self, origin: &str, why: Option<&str>) -> Result<()> {
        self.conn.execute(
            "UPDATE control_receivers SET stopped = ?2 WHERE origin = ?1",
            params![origin, why],
        )?;
        Ok(())
    }

    /// Every enrolled key, or one receiver's.
    pub fn keys(&self, receiver: Option<&str>) -> Result<Vec<Key>> {
        let mut stmt = self.conn.prepare(
            "SELECT receiver, id, alg, spki, name, added_ms FROM control_keys
             WHERE ?1 IS NULL OR receiver = ?1 ORDER BY added_ms, id",
        )?;
        let rows = stmt.query_map(params![receiver], |r| {
            Ok(Key {
                receiver: r.get(0)?,
                id: r.get(1)?,
                alg: r.get(2)?,
                spki: r.get(3)?,
                name: r.get(4)?,
                added_ms: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Removes one key by its id; how many went (a key id is per receiver, so
    /// the same passkey enrolled for two receivers goes from both).
    pub fn remove_key(&mut self, id: &str) -> Result<usize> {
        Ok(self
            .conn
            .execute("DELETE FROM control_keys WHERE id = ?1", params![id])?)
    }

    /// The message a receiver sent under `id`, if it came before.
    pub fn message(&self, receiver: &str, id: &str) -> Result<Option<Message>> {
        Ok(self
            .conn
            .query_row(
                "SELECT receiver, id, nonce, session, command, state, ack, ack_sent, begun
                 FROM control_messages WHERE receiver = ?1 AND id = ?2",
                params![receiver, id],
                message_row,
            )
            .optional()?)
    }

    /// Messages still waiting for a way in (after a restart they queue again).
    pub fn queued(&self) -> Result<Vec<Message>> {
        let mut stmt = self.conn.prepare(
            "SELECT receiver, id, nonce, session, command, state, ack, ack_sent, begun
             FROM control_messages WHERE state = 'queued' ORDER BY at_ms",
        )?;
        let rows = stmt.query_map([], message_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Final acks not yet taken by their receiver.
    pub fn unsent_acks(&self, receiver: &str) -> Result<Vec<(String, String)>> {
        let mut stmt = self.conn.prepare(
            "SELECT id, ack FROM control_messages
             WHERE receiver = ?1 AND state = 'final' AND ack_sent = 0 AND ack IS NOT NULL
             ORDER BY at_ms LIMIT 100",
        )?;
        let rows = stmt.query_map(params![receiver], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    pub fn mark_acks_sent(&mut self, receiver: &str, ids: &[String]) -> Result<()> {
        let tx = self.write()?;
        for id in ids {
            tx.execute(
                "UPDATE control_messages SET ack_sent = 1 WHERE receiver = ?1 AND id = ?2",
                params![receiver, id],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// A redelivered message whose final ack went before: send it again.
    pub fn resend_ack(&self, receiver: &str, id: &str) -> Result<()> {
        self.conn.execute(
            "UPDATE control_messages SET ack_sent = 0 WHERE receiver = ?1 AND id = ?2 AND state = 'final'",
            params![receiver, id],
        )?;
        Ok(())
    }

    /// Runs `verify` with a nonce store inside one write transaction, and keeps
    /// the message with what `verify` decided in the same commit: a command's
    /// nonce and its row are on disk together or not at all, so a kill between
    /// verification and delivery can never let it run twice.
    pub fn admit<T>(
        &mut self,
        receiver: &str,
        id: &str,
        now_ms: i64,
        verify: impl FnOnce(&mut dyn sessionpipe_verifier::NonceStore) -> T,
        keep: impl FnOnce(&T) -> Admitted,
    ) -> Result<T> {
        let tx = self.write()?;
        let verdict = {
            let mut nonces = TxNonces { tx: &tx };
            verify(&mut nonces)
        };
        let row = keep(&verdict);
        tx.execute(
            "INSERT INTO control_messages
               (receiver, id, nonce, session, kind, command, state, ack, ack_sent, at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 0, ?9)
             ON CONFLICT (receiver, id) DO NOTHING",
            params![
                receiver,
                id,
                row.nonce,
                row.session,
                row.kind,
                row.command,
                row.state.as_str(),
                row.ack,
                now_ms
            ],
        )?;
        tx.commit()?;
        Ok(verdict)
    }

    /// Decides a queued message's final ack.
    pub fn finish(&self, receiver: &str, id: &str, ack: &str) -> Result<()> {
        self.conn.execute(
            "UPDATE control_messages SET state = 'final', ack = ?3, ack_sent = 0, command = NULL
             WHERE receiver = ?1 AND id = ?2 AND state = 'queued'",
            params![receiver, id, ack],
        )?;
        Ok(())
    }

    /// A message's headless process is about to start.
    pub fn set_begun(&self, receiver: &str, id: &str) -> Result<()> {
        self.conn.execute(
            "UPDATE control_messages SET begun = 1 WHERE receiver = ?1 AND id = ?2",
            params![receiver, id],
        )?;
        Ok(())
    }

    /// How many starts were admitted since `since_ms` (the hourly cap).
    pub fn starts_since(&self, since_ms: i64) -> Result<usize> {
        Ok(self.conn.query_row(
            "SELECT count(*) FROM control_messages WHERE kind = 'start' AND at_ms >= ?1",
            params![since_ms],
            |r| r.get::<_, i64>(0),
        )? as usize)
    }

    /// Keeps what a session name control gave out stands for.
    pub fn name_session(
        &self,
        harness: &str,
        name: &str,
        session: &NamedSession,
        now_ms: i64,
    ) -> Result<()> {
        self.conn.execute(
            "INSERT INTO control_sessions (harness, name, id, how, cwd, at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (harness, name) DO UPDATE SET id = ?3, how = ?4, cwd = ?5, at_ms = ?6",
            params![harness, name, session.id, session.how, session.cwd, now_ms],
        )?;
        Ok(())
    }

    /// The session behind a name control gave out, if it gave one.
    pub fn named_session(&self, harness: &str, name: &str) -> Result<Option<NamedSession>> {
        Ok(self
            .conn
            .query_row(
                "SELECT id, how, cwd FROM control_sessions WHERE harness = ?1 AND name = ?2",
                params![harness, name],
                |r| {
                    Ok(NamedSession {
                        id: r.get(0)?,
                        how: r.get(1)?,
                        cwd: r.get(2)?,
                    })
                },
            )
            .optional()?)
    }

    /// Forgets nonces past 25 h and final messages past two days.
    pub fn prune(&self, now_ms: i64) -> Result<()> {
        self.conn.execute(
            "DELETE FROM control_nonces WHERE seen_ms < ?1",
            params![now_ms - NONCE_KEEP_MS],
        )?;
        self.conn.execute(
            "DELETE FROM control_messages WHERE state = 'final' AND ack_sent = 1 AND at_ms < ?1",
            params![now_ms - MESSAGE_KEEP_MS],
        )?;
        Ok(())
    }

    fn write(&mut self) -> Result<Transaction<'_>> {
        Ok(self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?)
    }
}

/// The name an ACP start of control gave the session `harness` knows as
/// `id` (how `acp`; the first, when it gave two), asked on `conn` inside the
/// asker's own transaction: ingest and backfill name a session as they write
/// it. None in a file whose control tables were never made.
pub fn acp_name(conn: &Connection, harness: &str, id: &str) -> rusqlite::Result<Option<String>> {
    let made: bool = conn
        .prepare_cached(
            "SELECT count(*) = 1 FROM sqlite_master WHERE type = 'table' AND name = 'control_sessions'",
        )?
        .query_row([], |r| r.get(0))?;
    if !made {
        return Ok(None);
    }
    conn.prepare_cached(
        "SELECT name FROM control_sessions WHERE harness = ?1 AND id = ?2 AND how = 'acp'
         ORDER BY at_ms LIMIT 1",
    )?
    .query_row(params![harness, id], |r| r.get(0))
    .optional()
}

/// The row `admit` keeps for a message, from the verdict.
#[derive(Clone, Debug)]
pub struct Admitted {
    pub nonce: Option<String>,
    pub session: Option<String>,
    pub kind: Option<String>,
    pub command: Option<String>,
    pub state: State,
    pub ack: Option<String>,
}

/// The nonce store the verifier is handed: the write transaction `admit` holds.
struct TxNonces<'a> {
    tx: &'a Transaction<'a>,
}

impl sessionpipe_verifier::NonceStore for TxNonces<'_> {
    fn record(
        &mut self,
        nonce: &str,
        iat_ms: i64,
        now_ms: i64,
    ) -> std::result::Result<sessionpipe_verifier::Recorded, sessionpipe_verifier::NonceStoreError>
    {
        let fresh = self
            .tx
            .execute(
                "INSERT INTO control_nonces (nonce, iat_ms, seen_ms) VALUES (?1, ?2, ?3)
                 ON CONFLICT (nonce) DO NOTHING",
                params![nonce, iat_ms, now_ms],
            )
            .map_err(|e| sessionpipe_verifier::NonceStoreError(e.to_string()))?;
        Ok(if fresh == 1 {
            sessionpipe_verifier::Recorded::New
        } else {
            sessionpipe_verifier::Recorded::Seen
        })
    }
}

fn insert_key(conn: &Connection, key: &Key) -> rusqlite::Result<usize> {
    conn.execute(
        "INSERT INTO control_keys (receiver, id, alg, spki, name, added_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (receiver, id) DO UPDATE SET alg = excluded.alg, spki = excluded.spki,
           name = coalesce(excluded.name, name)",
        params![
            key.receiver,
            key.id,
            key.alg,
            key.spki,
            key.name,
            key.added_ms
        ],
    )
}

fn receiver_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Receiver> {
    Ok(Receiver {
        origin: r.get(0)?,
        machine: r.get(1)?,
        control_url: r.get(2)?,
        rp_id: r.get(3)?,
        wait_max_s: r.get::<_, i64>(4)?.max(1) as u64,
        account: r.get(5)?,
        paired_ms: r.get(6)?,
        stopped: r.get(7)?,
    })
}

fn message_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Message> {
    Ok(Message {
        receiver: r.get(0)?,
        id: r.get(1)?,
        nonce: r.get(2)?,
        session: r.get(3)?,
        command: r.get(4)?,
        state: State::parse(&r.get::<_, String>(5)?),
        ack: r.get(6)?,
        ack_sent: r.get::<_, i64>(7)? != 0,
        begun: r.get::<_, i64>(8)? != 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sessionpipe_verifier::{NonceStore, Recorded};

    fn admitted(state: State, ack: Option<&str>) -> Admitted {
        Admitted {
            nonce: Some("n".into()),
            session: Some("claude-code:s".into()),
            kind: Some("prompt".into()),
            command: (state == State::Queued).then(|| "{}".to_string()),
            state,
            ack: ack.map(str::to_string),
        }
    }

    #[test]
    fn a_nonce_and_its_message_are_kept_together_and_a_nonce_only_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("outbox.db")).unwrap();
        let first = store
            .admit(
                "https://r",
                "m1",
                1_000,
                |n| n.record("nonce-1", 900, 1_000),
                |_| admitted(State::Queued, None),
            )
            .unwrap();
        assert_eq!(first.unwrap(), Recorded::New);
        let again = store
            .admit(
                "https://r",
                "m2",
                1_001,
                |n| n.record("nonce-1", 900, 1_001),
                |_| admitted(State::Final, Some("{\"outcome\":\"refused\"}")),
            )
            .unwrap();
        assert_eq!(again.unwrap(), Recorded::Seen, "a replay");
        assert_eq!(store.queued().unwrap().len(), 1);
        assert_eq!(store.unsent_acks("https://r").unwrap().len(), 1);

        // A failed verification rolls nothing back that was not written.
        store
            .admit(
                "https://r",
                "m3",
                1_002,
                |_n: &mut dyn NonceStore| (),
                |_| admitted(State::Final, Some("{}")),
            )
            .unwrap();
        store
            .finish("https://r", "m1", "{\"outcome\":\"delivered\"}")
            .unwrap();
        assert!(store.queued().unwrap().is_empty());
        let unsent: Vec<String> = store
            .unsent_acks("https://r")
            .unwrap()
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert_eq!(unsent.len(), 3);
        store.mark_acks_sent("https://r", &unsent).unwrap();
        assert!(store.unsent_acks("https://r").unwrap().is_empty());
        // A redelivery gets its final ack again.
        store.resend_ack("https://r", "m1").unwrap();
        assert_eq!(store.unsent_acks("https://r").unwrap()[0].0, "m1");
    }

    #[test]
    fn nonces_outlive_their_commands_by_the_window_only() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("outbox.db")).unwrap();
        store
            .admit(
                "https://r",
                "m1",
                0,
                |n| n.record("old", 0, 0),
                |_| admitted(State::Final, Some("{}")),
            )
            .unwrap()
            .unwrap();
        store.prune(NONCE_KEEP_MS - 1).unwrap();
        let seen = store
            .admit(
                "https://r",
                "m2",
                1,
                |n| n.record("old", 0, 1),
                |_| admitted(State::Final, Some("{}")),
            )
            .unwrap()
            .unwrap();
        assert_eq!(seen, Recorded::Seen, "still inside 25 h");
        store.prune(NONCE_KEEP_MS + 10).unwrap();
        let fresh = store
            .admit(
                "https://r",
                "m3",
                2,
                |n| n.record("old", 0, 2),
                |_| admitted(State::Final, Some("{}")),
            )
            .unwrap()
            .unwrap();
        assert_eq!(fresh, Recorded::New);
    }

    /// Only an ACP start's name names a session's hooks (a fork's row is
    /// the fork's, not a name its hooks report under), the first when two
    /// gave one; a file without control's tables names nothing.
    #[test]
    fn acp_names_are_asked_by_the_harness_own_id() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("outbox.db");
        let bare = sessionpipe_db::open(&path).unwrap();
        assert_eq!(acp_name(&bare, "gemini-cli", "g-acp").unwrap(), None);
        let store = Store::open(&path).unwrap();
        let named = |id: &str, how: &str| NamedSession {
            id: id.into(),
            how: how.into(),
            cwd: None,
        };
        store
            .name_session("gemini-cli", "started", &named("g-acp", "acp"), 1)
            .unwrap();
        store
            .name_session("gemini-cli", "forked", &named("g-fork", "fork"), 1)
            .unwrap();
        store
            .name_session("gemini-cli", "again", &named("g-acp", "acp"), 2)
            .unwrap();
        assert_eq!(
            acp_name(&bare, "gemini-cli", "g-acp").unwrap().as_deref(),
            Some("started")
        );
        assert_eq!(acp_name(&bare, "gemini-cli", "g-fork").unwrap(), None);
        assert_eq!(acp_name(&bare, "codex", "g-acp").unwrap(), None);
    }

    #[test]
    fn a_pairing_keeps_receiver_and_key_and_off_forgets_both() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("outbox.db")).unwrap();
        let r = Receiver {
            origin: "https://r".into(),
            machine: "m_0123456789abcdefgh".into(),
            control_url: "https://r/v1/control".into(),
            rp_id: "r".into(),
            wait_max_s: 25,
            account: Some("ann".into()),
            paired_ms: 1,
            stopped: None,
        };
        let k = Key {
            receiver: r.origin.clone(),
            id: "cred1".into(),
            alg: -7,
            spki: "AA".into(),
            name: None,
            added_ms: 1,
        };
        store.pair(&r, &k).unwrap();
        assert_eq!(store.receivers().unwrap(), vec![r.clone()]);
        assert_eq!(store.keys(Some("https://r")).unwrap().len(), 1);
        store.set_stopped("https://r", Some("401")).unwrap();
        assert_eq!(
            store
                .receiver("https://r")
                .unwrap()
                .unwrap()
                .stopped
                .as_deref(),
            Some("401")
        );
        // Pairing again resumes polling.
        store.pair(&r, &k).unwrap();
        assert_eq!(store.receiver("https://r").unwrap().unwrap().stopped, None);
        assert!(store.remove_receiver("https://r").unwrap());
        assert!(store.receivers().unwrap().is_empty());
        assert!(store.keys(None).unwrap().is_empty());
    }
}
