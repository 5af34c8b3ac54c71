//! What the control side keeps, in `DIR/control.db` beside the events' files
//! (SQLite, WAL): the paired machines (a SHA-256 of each one's token, never the
//! token; its last hello; when it last polled), the keys handed to them, the
//! pairings not read yet, every machine's queue with each message's acks, and
//! the bytes of a `start`'s files, by their base64url SHA-256.
//!
//! This module owns the tables and the rules that are about state: a pending
//! pairing is approved once and read as `paired` once (then gone), a machine's
//! token is made at that read and only its hash is written, a message is
//! delivered until its first final ack or its `expires_at`, a `taken` pauses it,
//! `progress` keeps its highest `seq`, a file is kept a while after it was put.
//! It must not speak HTTP, check a body's
//! shape (`shapes` does) or compare a secret (`http` does, in constant time).
//! Every call takes the time as an argument, so tests need no clock. Callers
//! hold it behind one mutex.
//!
//! Rows are bounded: pending pairings and live messages per machine by the
//! caller's limits, finished messages to `HISTORY_MAX` per machine, files to
//! `FILES_MAX`, and pairings, finished messages and files are dropped a while
//! after they end.

use super::Refused;
use super::shapes::{Ack, NewMessage, Outcome};
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Value, json};
use std::path::Path;

/// The schema this build writes; a file with a higher `user_version` is refused.
const SCHEMA: i64 = 2;

/// Finished (final or expired) messages kept per machine for the read door.
const HISTORY_MAX: i64 = 1000;

/// How long a pairing stays readable after its `expires_at` (as `expired`, or as
/// `paired` when it was approved in time), before it is gone (404).
const PAIR_KEEP_MS: i64 = 3600 * 1000;

/// How long a finished message stays for the read door.
const FINISHED_KEEP_MS: i64 = 24 * 3600 * 1000;

/// How long a file is served after it was put: past any message's
/// `expires_at` (at most 24 hours after it is queued, HTTP.md §3), with room
/// for a message queued a while after its files.
const FILE_KEEP_MS: i64 = 48 * 3600 * 1000;

/// Files kept at once; the oldest go first. Each is at most 25 MiB signed, so
/// a test's worth is a few commands of ten.
const FILES_MAX: i64 = 64;

/// Why the store failed (not a caller's mistake: those are `Refused`).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("control store: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("control store: schema {found} is newer than this receiver's {SCHEMA}")]
    Newer { found: i64 },
    #[error("control store: a stored {what} is not JSON")]
    Corrupt { what: &'static str },
    #[error("control store: {0}")]
    Io(std::io::Error),
}

/// A pairing to start.
pub struct NewPairing {
    pub code: String,
    pub machine: String,
    /// True when the machine is new: reading `paired` then hands over its token.
    pub first: bool,
    /// Started without the sink token (open pairing).
    pub open: bool,
    pub check: String,
    pub name: String,
    pub request: Value,
    pub poll_key_hash: Option<[u8; 32]>,
    pub created_ms: i64,
    pub expires_ms: i64,
}

/// A pairing as stored.
#[derive(Clone, Debug)]
pub struct Pairing {
    pub machine: String,
    pub name: String,
    pub check: String,
    pub first: bool,
    pub open: bool,
    pub poll_key_hash: Option<Vec<u8>>,
    pub expires_ms: i64,
    /// The key, its proof and the account, once approved.
    pub approved: Option<(Value, Value, Option<String>)>,
}

/// What one `POST {control}/ack` came to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AckReport {
    pub recorded: u64,
    /// Acks that changed nothing: after a final one, a second `taken`, a
    /// `progress` not above the kept `seq`.
    pub duplicates: u64,
    /// Ids that are not (or no longer) this machine's messages.
    pub unknown: Vec<String>,
}

/// A poll's answer from the store: the messages to hand out, and when a `taken`
/// pause ends (a poll waiting past it wakes then).
pub struct Due {
    pub messages: Vec<Value>,
    pub next_ms: Option<i64>,
}

pub struct ControlStore {
    conn: Connection,
}

fn parse(text: Option<String>, what: &'static str) -> Result<Option<Value>, StoreError> {
    text.map(|t| serde_json::from_str(&t).map_err(|_| StoreError::Corrupt { what }))
        .transpose()
}

impl ControlStore {
    /// Opens (or creates) `dir/control.db`.
    pub fn open(dir: &Path) -> Result<ControlStore, StoreError> {
        let path = dir.join("control.db");
        let conn = Connection::open(&path)?;
        // Queued prompts and the hashes of tokens: the owner's to read only
        // (SQLite gives its -wal and -shm files the same mode).
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                .map_err(StoreError::Io)?;
        }
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // A commit survives the process being killed; a power cut is not this
        // receiver's to survive (as for the events' files).
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        let found: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if found > SCHEMA {
            return Err(StoreError::Newer { found });
        }
        if found < 1 {
            conn.execute_batch(
                "BEGIN;
                 CREATE TABLE machines (
                   id TEXT PRIMARY KEY,
                   token_hash BLOB NOT NULL,
                   name TEXT NOT NULL,
                   paired_ms INTEGER NOT NULL,
                   hello TEXT,
                   hello_ms INTEGER,
                   last_poll_ms INTEGER
                 );
                 CREATE TABLE keys (
                   machine TEXT NOT NULL,
                   id TEXT NOT NULL,
                   key TEXT NOT NULL,
                   account TEXT,
                   added_ms INTEGER NOT NULL,
                   PRIMARY KEY (machine, id)
                 );
                 CREATE TABLE pairings (
                   code TEXT PRIMARY KEY,
                   machine TEXT NOT NULL,
                   first INTEGER NOT NULL,
                   open INTEGER NOT NULL,
                   check_digits TEXT NOT NULL,
                   name TEXT NOT NULL,
                   request TEXT NOT NULL,
                   poll_key_hash BLOB,
                   created_ms INTEGER NOT NULL,
                   expires_ms INTEGER NOT NULL,
                   key TEXT,
                   proof TEXT,
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
                   final TEXT,
                   final_ms INTEGER,
                   progress_seq INTEGER,
                   progress_reply TEXT,
                   acks INTEGER NOT NULL DEFAULT 0,
                   duplicates INTEGER NOT NULL DEFAULT 0
                 );
                 CREATE INDEX messages_by_machine ON messages (machine, id);
                 PRAGMA user_version = 1;
                 COMMIT;",
            )?;
        }
        if found < 2 {
            conn.execute_batch(
                "BEGIN;
                 CREATE TABLE files (
                   sha256 TEXT PRIMARY KEY,
                   bytes BLOB NOT NULL,
                   content_type TEXT NOT NULL,
                   put_ms INTEGER NOT NULL
                 );
                 PRAGMA user_version = 2;
                 COMMIT;",
            )?;
        }
        Ok(ControlStore { conn })
    }

    /// Drops pairings and finished messages past their keeping time.
    pub fn prune(&mut self, now: i64) -> Result<(), StoreError> {
        self.conn.execute(
            "DELETE FROM pairings WHERE expires_ms + ?1 < ?2",
            params![PAIR_KEEP_MS, now],
        )?;
        self.conn.execute(
            "DELETE FROM messages WHERE (final_ms IS NOT NULL AND final_ms + ?1 < ?2)
               OR (final_ms IS NULL AND expires_ms + ?1 < ?2)",
            params![FINISHED_KEEP_MS, now],
        )?;
        self.conn.execute(
            "DELETE FROM files WHERE put_ms + ?1 < ?2",
            params![FILE_KEEP_MS, now],
        )?;
        Ok(())
    }

    /// Keeps `bytes` to be served as `sha256` (the caller names it: the test
    /// door may file bytes under a hash that is not theirs), replacing a file of
    /// that name, and drops the oldest past `FILES_MAX`.
    pub fn put_file(
        &mut self,
        sha256: &str,
        bytes: &[u8],
        content_type: &str,
        now: i64,
    ) -> Result<(), StoreError> {
        self.prune(now)?;
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT OR REPLACE INTO files (sha256, bytes, content_type, put_ms)
             VALUES (?1, ?2, ?3, ?4)",
            params![sha256, bytes, content_type, now],
        )?;
        tx.execute(
            "DELETE FROM files WHERE sha256 NOT IN
               (SELECT sha256 FROM files ORDER BY put_ms DESC, rowid DESC LIMIT ?1)",
            [FILES_MAX],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// A file's bytes and content type, `None` when it was never put or is gone.
    pub fn file(
        &mut self,
        sha256: &str,
        now: i64,
    ) -> Result<Option<(Vec<u8>, String)>, StoreError> {
        self.prune(now)?;
        Ok(self
            .conn
            .query_row(
                "SELECT bytes, content_type FROM files WHERE sha256 = ?1",
                [sha256],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?)
    }

    pub fn machine_exists(&self, machine: &str) -> Result<bool, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT 1 FROM machines WHERE id = ?1",
                [machine],
                |_| Ok(()),
            )
            .optional()?
            .is_some())
    }

    /// The SHA-256 of the machine's token, `None` when there is no such machine.
    pub fn token_hash(&self, machine: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT token_hash FROM machines WHERE id = ?1",
                [machine],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// Starts a pairing, unless `max_pending` are pending already or it names a
    /// machine that is not paired.
    pub fn start_pairing(&mut self, p: &NewPairing, max_pending: usize) -> Result<(), Refused> {
        self.prune(p.created_ms)?;
        if !p.first && !self.machine_exists(&p.machine)? {
            return Err(Refused::NotFound("no such machine"));
        }
        let pending: i64 = self
            .conn
            .query_row(
                "SELECT COUNT(*) FROM pairings WHERE approved_ms IS NULL AND expires_ms > ?1",
                [p.created_ms],
                |r| r.get(0),
            )
            .map_err(StoreError::from)?;
        if pending as usize >= max_pending {
            return Err(Refused::Full("too many pairings pending"));
        }
        self.conn
            .execute(
                "INSERT INTO pairings (code, machine, first, open, check_digits, name, request,
                   poll_key_hash, created_ms, expires_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    p.code,
                    p.machine,
                    p.first,
                    p.open,
                    p.check,
                    p.name,
                    p.request.to_string(),
                    p.poll_key_hash.map(|h| h.to_vec()),
                    p.created_ms,
                    p.expires_ms
                ],
            )
            .map_err(StoreError::from)?;
        Ok(())
    }

    /// The pairing of `code`, unless it is gone.
    pub fn pairing(&mut self, code: &str, now: i64) -> Result<Option<Pairing>, StoreError> {
        self.prune(now)?;
        let row = self
            .conn
            .query_row(
                "SELECT machine, first, open, poll_key_hash, expires_ms, key, proof, account,
                   name, check_digits
                 FROM pairings WHERE code = ?1",
                [code],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, bool>(1)?,
                        r.get::<_, bool>(2)?,
                        r.get::<_, Option<Vec<u8>>>(3)?,
                        r.get::<_, i64>(4)?,
                        r.get::<_, Option<String>>(5)?,
                        r.get::<_, Option<String>>(6)?,
                        r.get::<_, Option<String>>(7)?,
                        (r.get::<_, String>(8)?, r.get::<_, String>(9)?),
                    ))
                },
            )
            .optional()?;
        let Some((
            machine,
            first,
            open,
            poll_key_hash,
            expires_ms,
            key,
            proof,
            account,
            (name, check),
        )) = row
        else {
            return Ok(None);
        };
        let approved = match (parse(key, "key")?, parse(proof, "proof")?) {
            (Some(k), Some(p)) => Some((k, p, account)),
            _ => None,
        };
        Ok(Some(Pairing {
            machine,
            name,
            check,
            first,
            open,
            poll_key_hash,
            expires_ms,
            approved,
        }))
    }

    /// The person's approval (through the test door): the key and its proof,
    /// carried as given. Returns the machine.
    pub fn approve(
        &mut self,
        code: &str,
        key: &Value,
        proof: &Value,
        account: Option<&str>,
        now: i64,
    ) -> Result<String, Refused> {
        let p = self
            .pairing(code, now)?
            .ok_or(Refused::NotFound("no such pairing"))?;
        if p.approved.is_some() {
            return Err(Refused::AlreadyApproved);
        }
        if now >= p.expires_ms {
            return Err(Refused::Expired);
        }
        self.conn
            .execute(
                "UPDATE pairings SET key = ?2, proof = ?3, account = ?4, approved_ms = ?5
                 WHERE code = ?1",
                params![code, key.to_string(), proof.to_string(), account, now],
            )
            .map_err(StoreError::from)?;
        Ok(p.machine)
    }

    /// Ends an approved pairing as it is read: the machine is created with the
    /// hash of its new token on a first pairing, the key is recorded, the pairing
    /// is gone. False when it was gone already (read by a racing request).
    pub fn finish_pairing(
        &mut self,
        code: &str,
        token_hash: Option<&[u8; 32]>,
        now: i64,
    ) -> Result<bool, StoreError> {
        let tx = self.conn.transaction()?;
        let row = tx
            .query_row(
                "SELECT machine, name, key, account FROM pairings
                 WHERE code = ?1 AND approved_ms IS NOT NULL",
                [code],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, Option<String>>(3)?,
                    ))
                },
            )
            .optional()?;
        let Some((machine, name, key, account)) = row else {
            return Ok(false);
        };
        tx.execute("DELETE FROM pairings WHERE code = ?1", [code])?;
        if let Some(hash) = token_hash {
            tx.execute(
                "INSERT INTO machines (id, token_hash, name, paired_ms) VALUES (?1, ?2, ?3, ?4)",
                params![machine, hash.to_vec(), name, now],
            )?;
        }
        let known = tx
            .query_row("SELECT 1 FROM machines WHERE id = ?1", [&machine], |_| {
                Ok(())
            })
            .optional()?
            .is_some();
        let key_id = serde_json::from_str::<Value>(&key)
            .ok()
            .and_then(|k| k["id"].as_str().map(str::to_string))
            .ok_or(StoreError::Corrupt { what: "key" })?;
        // A machine removed (`off`) while its new key's pairing was pending gets
        // no key row: there is no machine to hold it.
        if known {
            tx.execute(
                "INSERT OR REPLACE INTO keys (machine, id, key, account, added_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![machine, key_id, key, account, now],
            )?;
        }
        tx.commit()?;
        Ok(true)
    }

    pub fn set_hello(&mut self, machine: &str, hello: &Value, now: i64) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE machines SET hello = ?2, hello_ms = ?3 WHERE id = ?1",
            params![machine, hello.to_string(), now],
        )?;
        Ok(())
    }

    /// Removes the machine, its token, its keys, its queue and its pairings.
    pub fn remove_machine(&mut self, machine: &str) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        for table in [
            "machines WHERE id",
            "keys WHERE machine",
            "messages WHERE machine",
            "pairings WHERE machine",
        ] {
            tx.execute(&format!("DELETE FROM {table} = ?1"), [machine])?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Queues a message, unless the machine is unknown or has `max_live`
    /// messages waiting. Returns its envelope's id.
    pub fn enqueue(
        &mut self,
        m: &NewMessage,
        now: i64,
        max_live: usize,
    ) -> Result<String, Refused> {
        self.prune(now)?;
        if !self.machine_exists(&m.machine)? {
            return Err(Refused::NotFound("no such machine"));
        }
        let live: i64 = self
            .conn
            .query_row(
                "SELECT COUNT(*) FROM messages
                 WHERE machine = ?1 AND final IS NULL AND expires_ms > ?2",
                params![m.machine, now],
                |r| r.get(0),
            )
            .map_err(StoreError::from)?;
        if live as usize >= max_live {
            return Err(Refused::Full("the machine's queue is full"));
        }
        let id = ulid::Ulid::generate().to_string();
        let tx = self.conn.transaction().map_err(StoreError::from)?;
        tx.execute(
            "INSERT INTO messages (id, machine, cmd, csig, grant_json, confirm_json, at_ms, expires_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                id,
                m.machine,
                m.cmd,
                m.csig,
                m.grant.as_ref().map(Value::to_string),
                m.confirm.as_ref().map(Value::to_string),
                now,
                now + m.expires_in_s as i64 * 1000
            ],
        )
        .map_err(StoreError::from)?;
        tx.execute(
            "DELETE FROM messages WHERE machine = ?1 AND (final IS NOT NULL OR expires_ms <= ?2)
               AND id NOT IN (SELECT id FROM messages
                 WHERE machine = ?1 AND (final IS NOT NULL OR expires_ms <= ?2)
                 ORDER BY id DESC LIMIT ?3)",
            params![m.machine, now, HISTORY_MAX],
        )
        .map_err(StoreError::from)?;
        tx.commit().map_err(StoreError::from)?;
        Ok(id)
    }

    /// What a poll hands out now: every message without a final ack, not
    /// expired and not paused by `taken`, oldest first, at most `max`; each is
    /// counted as delivered once more. Also records the poll as the machine's
    /// heartbeat. `None` when there is no such machine (any more).
    pub fn due(&mut self, machine: &str, now: i64, max: usize) -> Result<Option<Due>, StoreError> {
        let tx = self.conn.transaction()?;
        let known = tx.execute(
            "UPDATE machines SET last_poll_ms = ?2 WHERE id = ?1",
            params![machine, now],
        )?;
        if known == 0 {
            return Ok(None);
        }
        let mut messages = Vec::new();
        {
            let mut q = tx.prepare(
                "SELECT id, cmd, csig, grant_json, confirm_json, at_ms, expires_ms FROM messages
                 WHERE machine = ?1 AND final IS NULL AND expires_ms > ?2
                   AND (taken_until_ms IS NULL OR taken_until_ms <= ?2)
                 ORDER BY id LIMIT ?3",
            )?;
            let rows = q.query_map(params![machine, now, max as i64], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Option<String>>(2)?,
                    r.get::<_, Option<String>>(3)?,
                    r.get::<_, Option<String>>(4)?,
                    r.get::<_, i64>(5)?,
                    r.get::<_, i64>(6)?,
                ))
            })?;
            for row in rows {
                let (id, cmd, csig, grant, confirm, at, expires) = row?;
                let mut env = json!({"id": id, "cmd": cmd});
                if let Some(c) = csig {
                    env["csig"] = Value::String(c);
                }
                if let Some(g) = parse(grant, "grant")? {
                    env["grant"] = g;
                }
                if let Some(c) = parse(confirm, "confirm")? {
                    env["confirm"] = c;
                }
                env["at"] = Value::String(protocol::time::rfc3339_ms(at));
                env["expires_at"] = Value::String(protocol::time::rfc3339_ms(expires));
                messages.push(env);
            }
        }
        for m in &messages {
            tx.execute(
                "UPDATE messages SET deliveries = deliveries + 1, last_delivered_ms = ?2
                 WHERE id = ?1",
                params![m["id"].as_str(), now],
            )?;
        }
        let next_ms: Option<i64> = tx.query_row(
            "SELECT MIN(taken_until_ms) FROM messages
             WHERE machine = ?1 AND final IS NULL AND expires_ms > ?2 AND taken_until_ms > ?2",
            params![machine, now],
            |r| r.get(0),
        )?;
        tx.commit()?;
        Ok(Some(Due { messages, next_ms }))
    }

    /// Records a machine's acks: the first final one wins and ends delivery;
    /// `taken` pauses it for `pause_ms` (once); `progress` keeps the highest
    /// `seq` and its reply. Anything else changes nothing and is counted.
    pub fn ack(
        &mut self,
        machine: &str,
        acks: &[Ack],
        now: i64,
        pause_ms: i64,
    ) -> Result<AckReport, StoreError> {
        let tx = self.conn.transaction()?;
        let mut report = AckReport::default();
        for a in acks {
            let row = tx
                .query_row(
                    "SELECT final IS NOT NULL, taken_ms IS NOT NULL, progress_seq FROM messages
                     WHERE id = ?1 AND machine = ?2",
                    params![a.id, machine],
                    |r| {
                        Ok((
                            r.get::<_, bool>(0)?,
                            r.get::<_, bool>(1)?,
                            r.get::<_, Option<i64>>(2)?,
                        ))
                    },
                )
                .optional()?;
            let Some((finished, taken, kept_seq)) = row else {
                report.unknown.push(a.id.clone());
                continue;
            };
            let changed = match a.outcome {
                _ if finished => false,
                o if o.is_final() => {
                    tx.execute(
                        "UPDATE messages SET final = ?2, final_ms = ?3 WHERE id = ?1",
                        params![a.id, a.raw.to_string(), now],
                    )?;
                    true
                }
                Outcome::Taken if !taken => {
                    tx.execute(
                        "UPDATE messages SET taken_ms = ?2, taken_until_ms = ?3 WHERE id = ?1",
                        params![a.id, now, now.saturating_add(pause_ms)],
                    )?;
                    true
                }
                Outcome::Progress => {
                    let seq = a.seq.unwrap_or(0) as i64;
                    let higher = kept_seq.is_none_or(|k| seq > k);
                    if higher {
                        tx.execute(
                            "UPDATE messages SET progress_seq = ?2, progress_reply = ?3 WHERE id = ?1",
                            params![a.id, seq, a.reply],
                        )?;
                    }
                    higher
                }
                _ => false,
            };
            if changed {
                report.recorded += 1;
            } else {
                report.duplicates += 1;
            }
            tx.execute(
                "UPDATE messages SET acks = acks + 1, duplicates = duplicates + ?2 WHERE id = ?1",
                params![a.id, i64::from(!changed)],
            )?;
        }
        tx.commit()?;
        Ok(report)
    }

    /// The read door: the machine, its last hello, its keys, and every message
    /// kept with its state and acks. `None` when there is no such machine.
    pub fn view(&self, machine: &str, now: i64) -> Result<Option<Value>, StoreError> {
        let row = self
            .conn
            .query_row(
                "SELECT name, paired_ms, hello, hello_ms, last_poll_ms FROM machines WHERE id = ?1",
                [machine],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, Option<String>>(2)?,
                        r.get::<_, Option<i64>>(3)?,
                        r.get::<_, Option<i64>>(4)?,
                    ))
                },
            )
            .optional()?;
        let Some((name, paired, hello, hello_ms, last_poll)) = row else {
            return Ok(None);
        };
        let time = |ms: Option<i64>| ms.map(protocol::time::rfc3339_ms);
        let mut keys = Vec::new();
        {
            let mut q = self
                .conn
                .prepare("SELECT key, account FROM keys WHERE machine = ?1 ORDER BY added_ms")?;
            let rows = q.query_map([machine], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))
            })?;
            for row in rows {
                let (key, account) = row?;
                let mut k = parse(Some(key), "key")?.unwrap_or_default();
                k["account"] = json!(account);
                keys.push(k);
            }
        }
        let mut messages = Vec::new();
        let mut q = self.conn.prepare(
            "SELECT id, cmd, at_ms, expires_ms, deliveries, taken_ms, taken_until_ms, final,
                    final_ms, progress_seq, progress_reply, acks, duplicates
             FROM messages WHERE machine = ?1 ORDER BY id",
        )?;
        let rows = q.query_map([machine], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, i64>(4)?,
                r.get::<_, Option<i64>>(5)?,
                r.get::<_, Option<i64>>(6)?,
                r.get::<_, Option<String>>(7)?,
                r.get::<_, Option<i64>>(8)?,
                r.get::<_, Option<i64>>(9)?,
                r.get::<_, Option<String>>(10)?,
                r.get::<_, i64>(11)?,
                r.get::<_, i64>(12)?,
            ))
        })?;
        for row in rows {
            let (
                id,
                cmd,
                at,
                expires,
                deliveries,
                taken,
                taken_until,
                fin,
                fin_ms,
                seq,
                reply,
                acks,
                dups,
            ) = row?;
            let fin = parse(fin, "final ack")?;
            let state = if fin.is_some() {
                "final"
            } else if expires <= now {
                "expired"
            } else if taken_until.is_some_and(|t| t > now) {
                "taken"
            } else if deliveries > 0 {
                "polled"
            } else {
                "queued"
            };
            messages.push(json!({
                "id": id, "cmd": cmd, "state": state,
                "at": protocol::time::rfc3339_ms(at), "expires_at": protocol::time::rfc3339_ms(expires),
                "deliveries": deliveries,
                "acks": {
                    "count": acks, "duplicates": dups,
                    "final": fin, "final_received_at": time(fin_ms),
                    "taken_at": time(taken), "taken_until": time(taken_until),
                    "progress": seq.map(|s| json!({"seq": s, "reply": reply})),
                },
            }));
        }
        Ok(Some(json!({
            "machine": machine, "name": name, "paired_at": protocol::time::rfc3339_ms(paired),
            "hello": parse(hello, "hello")?, "hello_at": time(hello_ms),
            "last_poll_at": time(last_poll),
            "keys": keys, "messages": messages,
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schema_1_file_gains_the_files_table_and_files_go_in_time() {
        let dir = tempfile::tempdir().unwrap();
        {
            let s = ControlStore::open(dir.path()).unwrap();
            // As a receiver before files left it.
            s.conn
                .execute_batch("DROP TABLE files; PRAGMA user_version = 1;")
                .unwrap();
        }
        let mut s = ControlStore::open(dir.path()).unwrap();
        let v: i64 = s
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, SCHEMA);
        s.put_file("h", b"bytes", "text/plain", 1_000).unwrap();
        assert_eq!(
            s.file("h", 2_000).unwrap(),
            Some((b"bytes".to_vec(), "text/plain".to_string()))
        );
        assert_eq!(s.file("h", 1_000 + FILE_KEEP_MS + 1).unwrap(), None);
        for i in 0..=FILES_MAX {
            s.put_file(&format!("f{i}"), b"x", "a/b", 10_000 + i)
                .unwrap();
        }
        assert_eq!(s.file("f0", 20_000).unwrap(), None);
        assert!(s.file(&format!("f{FILES_MAX}"), 20_000).unwrap().is_some());
    }
}
