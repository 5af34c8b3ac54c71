//! What the control side keeps, in the receiver's database (`db`): the paired
//! machines (a SHA-256 of each one's token, never the
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
//! Every call takes the time as an argument, so tests need no clock.
//!
//! Several receiver processes may share one PostgreSQL: every change that
//! must happen once is one conditional statement (`UPDATE ... WHERE final_ack
//! IS NULL`, `DELETE ... RETURNING`), and a poll's hand-out is made under the
//! machine's row (its `poll_gen` names the one poll that may take messages),
//! so a message goes to one long-poll at a time whichever process holds it.
//!
//! Rows are bounded: pending pairings and live messages per machine by the
//! caller's limits, finished messages to `HISTORY_MAX` per machine, files to
//! `FILES_MAX`, and pairings, finished messages and files are dropped a while
//! after they end.

use super::error::{Refused, StoreError};
use super::shapes::{Ack, NewMessage, Outcome};
use crate::db::{Db, Dialect, Row, args};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

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

/// The pruning of what has ended runs at most this often per process.
const PRUNE_EVERY_MS: i64 = 10_000;

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
    /// The client that started an open pairing (`ClientKey`), held to its
    /// share of them; `None` with the sink token.
    pub client: Option<String>,
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

/// What a poll's look at the queue came to.
pub enum Look {
    Due(Due),
    /// A newer poll of the same machine holds the queue now.
    Superseded,
    /// No such machine (any more).
    Gone,
}

pub struct ControlStore {
    pub(super) db: Arc<Db>,
    last_prune_ms: AtomicI64,
}

pub(super) fn parse(text: Option<String>, what: &'static str) -> Result<Option<Value>, StoreError> {
    text.map(|t| serde_json::from_str(&t).map_err(|_| StoreError::Corrupt { what }))
        .transpose()
}

fn count(row: Option<Row>) -> Result<i64, StoreError> {
    Ok(row.map(|r| r.int(0)).transpose()?.unwrap_or(0))
}

impl ControlStore {
    pub fn new(db: Arc<Db>) -> ControlStore {
        ControlStore {
            db,
            last_prune_ms: AtomicI64::new(i64::MIN),
        }
    }

    /// Drops pairings, finished messages and files past their keeping time;
    /// at most every `PRUNE_EVERY_MS` unless `now` went backwards (a test's
    /// clock).
    pub async fn prune(&self, now: i64) -> Result<(), StoreError> {
        let last = self.last_prune_ms.load(Ordering::Relaxed);
        if now >= last && now.saturating_sub(last) < PRUNE_EVERY_MS {
            return Ok(());
        }
        self.last_prune_ms.store(now, Ordering::Relaxed);
        self.db
            .exec(
                "DELETE FROM pairings WHERE expires_ms + $1 < $2",
                args![PAIR_KEEP_MS, now],
            )
            .await?;
        self.db
            .exec(
                "DELETE FROM messages WHERE (final_ms IS NOT NULL AND final_ms + $1 < $2)
                   OR (final_ms IS NULL AND expires_ms + $1 < $2)",
                args![FINISHED_KEEP_MS, now],
            )
            .await?;
        self.db
            .exec(
                "DELETE FROM files WHERE put_ms + $1 < $2",
                args![FILE_KEEP_MS, now],
            )
            .await?;
        Ok(())
    }

    /// Keeps `bytes` to be served as `sha256` (the caller names it: the test
    /// door may file bytes under a hash that is not theirs), replacing a file of
    /// that name, and drops the oldest past `FILES_MAX`.
    pub async fn put_file(
        &self,
        sha256: &str,
        bytes: &[u8],
        content_type: &str,
        account: Option<&str>,
        now: i64,
    ) -> Result<(), StoreError> {
        self.prune(now).await?;
        let put = args![sha256, bytes, content_type, now, account];
        self.db
            .transaction(move |mut tx| {
                Box::pin(async move {
                    tx.exec(
                        "INSERT INTO files (sha256, bytes, content_type, put_ms, account)
                         VALUES ($1, $2, $3, $4, $5)
                         ON CONFLICT (sha256) DO UPDATE SET bytes = excluded.bytes,
                           content_type = excluded.content_type, put_ms = excluded.put_ms,
                           account = excluded.account",
                        put,
                    )
                    .await?;
                    tx.exec(
                        "DELETE FROM files WHERE sha256 NOT IN
                           (SELECT sha256 FROM files ORDER BY put_ms DESC, sha256 DESC LIMIT $1)",
                        args![FILES_MAX],
                    )
                    .await?;
                    tx.commit().await
                })
            })
            .await?;
        Ok(())
    }

    /// A file's bytes and content type for a machine of `account`: a file an
    /// account put from the page is that account's machines' only; one put
    /// through the test door (no account) is any machine's here. `None` when
    /// it was never put, is gone, or is another account's.
    pub async fn file(
        &self,
        sha256: &str,
        account: Option<&str>,
        now: i64,
    ) -> Result<Option<(Vec<u8>, String)>, StoreError> {
        self.prune(now).await?;
        let Some(r) = self
            .db
            .row(
                "SELECT bytes, content_type FROM files
                                  WHERE sha256 = $1 AND put_ms + $2 >= $3 AND (account IS NULL OR account = $4)",
                args![sha256, FILE_KEEP_MS, now, account.unwrap_or("")],
            )
            .await?
        else {
            return Ok(None);
        };
        Ok(Some((r.bytes(0)?, r.text(1)?)))
    }

    pub async fn machine_exists(&self, machine: &str) -> Result<bool, StoreError> {
        Ok(self
            .db
            .row("SELECT 1 FROM machines WHERE id = $1", args![machine])
            .await?
            .is_some())
    }

    /// The SHA-256 of the machine's token and the account it belongs to
    /// (`None` for one paired through the test door), `None` when there is
    /// no such machine.
    pub async fn token_hash(
        &self,
        machine: &str,
    ) -> Result<Option<(Vec<u8>, Option<String>)>, StoreError> {
        let Some(r) = self
            .db
            .row(
                "SELECT token_hash, account FROM machines WHERE id = $1",
                args![machine],
            )
            .await?
        else {
            return Ok(None);
        };
        Ok(Some((r.bytes(0)?, r.opt_text(1)?)))
    }

    /// The account a machine belongs to: `Some(None)` for one paired through
    /// the test door, `None` when there is no such machine.
    pub async fn machine_account(
        &self,
        machine: &str,
    ) -> Result<Option<Option<String>>, StoreError> {
        Ok(self
            .db
            .row("SELECT account FROM machines WHERE id = $1", args![machine])
            .await?
            .map(|r| r.opt_text(0))
            .transpose()?)
    }

    /// Starts a pairing, unless `max_pending` are pending already, its
    /// client has `per_client` pending, or it names a machine that is not
    /// paired. Counted and kept in one transaction, so that a client's
    /// starts at once, on any processes, take turns.
    pub async fn start_pairing(
        &self,
        p: &NewPairing,
        max_pending: usize,
        per_client: usize,
    ) -> Result<(), Refused> {
        self.prune(p.created_ms).await?;
        if !p.first && !self.machine_exists(&p.machine).await? {
            return Err(Refused::NotFound("no such machine"));
        }
        let dialect = self.db.dialect();
        let row = args![
            &p.code,
            &p.machine,
            p.first,
            p.open,
            &p.check,
            &p.name,
            p.request.to_string(),
            p.poll_key_hash.map(|h| h.to_vec()),
            p.created_ms,
            p.expires_ms,
            p.client.as_deref()
        ];
        let (client, now, expires) = (p.client.clone(), p.created_ms, p.expires_ms);
        self.db
            .transaction(move |mut tx| {
                Box::pin(async move {
                    if let Some(client) = &client {
                        if dialect == Dialect::Postgres {
                            tx.exec(
                                "SELECT pg_advisory_xact_lock(7303004, hashtext($1))",
                                args![client.as_str()],
                            )
                            .await?;
                        }
                        let mine = tx
                            .row(
                                "SELECT COUNT(*), MIN(expires_ms) FROM pairings
                                 WHERE client = $1 AND approved_ms IS NULL AND expires_ms > $2",
                                args![client.as_str(), now],
                            )
                            .await?;
                        if let Some(r) = mine
                            && r.int(0)? as usize >= per_client
                        {
                            let ends = r.opt_int(1)?.unwrap_or(expires);
                            return Err(Refused::ClientFull {
                                what: "too many pairings are pending",
                                wait: std::time::Duration::from_millis(
                                    ends.saturating_sub(now).max(0) as u64,
                                ),
                            });
                        }
                    }
                    let pending = count(
                        tx.row(
                            "SELECT COUNT(*) FROM pairings
                             WHERE approved_ms IS NULL AND expires_ms > $1",
                            args![now],
                        )
                        .await?,
                    )?;
                    if pending as usize >= max_pending {
                        return Err(Refused::Full("too many pairings pending"));
                    }
                    tx.exec(
                        "INSERT INTO pairings (code, machine, first_pairing, open_pairing,
                           check_digits, name, request, poll_key_hash, created_ms, expires_ms,
                           client)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
                        row,
                    )
                    .await?;
                    tx.commit().await?;
                    Ok(())
                })
            })
            .await
    }

    /// The pairing of `code`, unless it is gone.
    pub async fn pairing(&self, code: &str, now: i64) -> Result<Option<Pairing>, StoreError> {
        self.prune(now).await?;
        let Some(r) = self
            .db
            .row(
                "SELECT machine, first_pairing, open_pairing, poll_key_hash, expires_ms, key_json,
                   proof_json, account, name, check_digits
                 FROM pairings WHERE code = $1 AND expires_ms + $2 >= $3",
                args![code, PAIR_KEEP_MS, now],
            )
            .await?
        else {
            return Ok(None);
        };
        let approved = match (
            parse(r.opt_text(5)?, "key")?,
            parse(r.opt_text(6)?, "proof")?,
        ) {
            (Some(k), Some(p)) => Some((k, p, r.opt_text(7)?)),
            _ => None,
        };
        Ok(Some(Pairing {
            machine: r.text(0)?,
            first: r.flag(1)?,
            open: r.flag(2)?,
            poll_key_hash: r.opt_bytes(3)?,
            expires_ms: r.int(4)?,
            approved,
            name: r.text(8)?,
            check: r.text(9)?,
        }))
    }

    /// The person's approval: the key and its proof, carried as given. Returns
    /// the machine. Approved once, whichever process is asked.
    pub async fn approve(
        &self,
        code: &str,
        key: &Value,
        proof: &Value,
        account: Option<&str>,
        now: i64,
    ) -> Result<String, Refused> {
        let p = self
            .pairing(code, now)
            .await?
            .ok_or(Refused::NotFound("no such pairing"))?;
        if p.approved.is_some() {
            return Err(Refused::AlreadyApproved);
        }
        if now >= p.expires_ms {
            return Err(Refused::Expired);
        }
        if !p.first {
            // A key for a known machine is its own account's to approve.
            let owner = self.machine_account(&p.machine).await?.flatten();
            if owner.is_some() && owner.as_deref() != account {
                return Err(Refused::NotFound("no such pairing"));
            }
        }
        let n = self
            .db
            .exec(
                "UPDATE pairings SET key_json = $2, proof_json = $3, account = $4,
                   approved_ms = $5
                 WHERE code = $1 AND approved_ms IS NULL",
                args![code, key.to_string(), proof.to_string(), account, now],
            )
            .await
            .map_err(StoreError::from)?;
        if n == 0 {
            return Err(Refused::AlreadyApproved);
        }
        Ok(p.machine)
    }

    /// Ends an approved pairing as it is read: the machine is created with the
    /// hash of its new token on a first pairing, the key is recorded, the pairing
    /// is gone. False when it was gone already (read by a racing request).
    pub async fn finish_pairing(
        &self,
        code: &str,
        token_hash: Option<&[u8; 32]>,
        now: i64,
    ) -> Result<bool, StoreError> {
        let (code, token_hash) = (code.to_string(), token_hash.map(|h| h.to_vec()));
        self.db
            .transaction(move |mut tx| {
                Box::pin(async move {
                    let Some(r) = tx
                        .row(
                            "DELETE FROM pairings WHERE code = $1 AND approved_ms IS NOT NULL
                             RETURNING machine, name, key_json, account",
                            args![code],
                        )
                        .await?
                    else {
                        return Ok(false);
                    };
                    let (machine, name, key, account) =
                        (r.text(0)?, r.text(1)?, r.text(2)?, r.opt_text(3)?);
                    if let Some(hash) = token_hash {
                        tx.exec(
                            "INSERT INTO machines (id, token_hash, name, paired_ms, account)
                             VALUES ($1, $2, $3, $4, $5)",
                            args![&machine, hash, name, now, account.clone()],
                        )
                        .await?;
                    }
                    let known = tx
                        .row("SELECT 1 FROM machines WHERE id = $1", args![&machine])
                        .await?
                        .is_some();
                    let key_id = serde_json::from_str::<Value>(&key)
                        .ok()
                        .and_then(|k| k["id"].as_str().map(str::to_string))
                        .ok_or(StoreError::Corrupt { what: "key" })?;
                    // A machine removed (`off`) while its new key's pairing was
                    // pending gets no key row: there is no machine to hold it.
                    if known {
                        tx.exec(
                            "INSERT INTO machine_keys (machine, id, key_json, account, added_ms)
                             VALUES ($1, $2, $3, $4, $5)
                             ON CONFLICT (machine, id) DO UPDATE SET key_json = excluded.key_json,
                               account = excluded.account, added_ms = excluded.added_ms",
                            args![&machine, key_id, key, account, now],
                        )
                        .await?;
                    }
                    tx.commit().await?;
                    Ok(true)
                })
            })
            .await
    }

    pub async fn set_hello(
        &self,
        machine: &str,
        hello: &Value,
        now: i64,
    ) -> Result<(), StoreError> {
        self.db
            .exec(
                "UPDATE machines SET hello = $2, hello_ms = $3 WHERE id = $1",
                args![machine, hello.to_string(), now],
            )
            .await?;
        Ok(())
    }

    /// Removes the machine, its token, its keys, its queue and its pairings.
    pub async fn remove_machine(&self, machine: &str) -> Result<(), StoreError> {
        let machine = machine.to_string();
        self.db
            .transaction(move |mut tx| {
                Box::pin(async move {
                    for sql in [
                        "DELETE FROM machines WHERE id = $1",
                        "DELETE FROM machine_keys WHERE machine = $1",
                        "DELETE FROM messages WHERE machine = $1",
                        "DELETE FROM pairings WHERE machine = $1",
                    ] {
                        tx.exec(sql, args![&machine]).await?;
                    }
                    tx.commit().await
                })
            })
            .await?;
        Ok(())
    }

    /// Queues a message, unless the machine is unknown or has `max_live`
    /// messages waiting. Returns its envelope's id.
    pub async fn enqueue(
        &self,
        m: &NewMessage,
        account: Option<&str>,
        now: i64,
        max_live: usize,
    ) -> Result<String, Refused> {
        self.prune(now).await?;
        if !self.machine_exists(&m.machine).await? {
            return Err(Refused::NotFound("no such machine"));
        }
        let live = count(
            self.db
                .row(
                    "SELECT COUNT(*) FROM messages
                     WHERE machine = $1 AND final_ack IS NULL AND expires_ms > $2",
                    args![&m.machine, now],
                )
                .await
                .map_err(StoreError::from)?,
        )?;
        if live as usize >= max_live {
            return Err(Refused::Full("the machine's queue is full"));
        }
        let id = ulid::Ulid::generate().to_string();
        let insert = args![
            &id,
            &m.machine,
            &m.cmd,
            m.csig.clone(),
            m.grant.as_ref().map(Value::to_string),
            m.confirm.as_ref().map(Value::to_string),
            now,
            now + m.expires_in_s as i64 * 1000,
            account
        ];
        let machine = m.machine.clone();
        self.db
            .transaction(move |mut tx| {
                Box::pin(async move {
                    tx.exec(
                        "INSERT INTO messages (id, machine, cmd, csig, grant_json, confirm_json,
                           at_ms, expires_ms, account)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                        insert,
                    )
                    .await?;
                    tx.exec(
                        "DELETE FROM messages
                         WHERE machine = $1 AND (final_ack IS NOT NULL OR expires_ms <= $2)
                           AND id NOT IN (SELECT id FROM messages
                             WHERE machine = $1 AND (final_ack IS NOT NULL OR expires_ms <= $2)
                             ORDER BY id DESC LIMIT $3)",
                        args![&machine, now, HISTORY_MAX],
                    )
                    .await?;
                    tx.commit().await
                })
            })
            .await
            .map_err(StoreError::from)?;
        Ok(id)
    }

    /// A new poll of the machine: its generation, which ends any older poll
    /// (in any process) at its next look. `None` when there is no such machine.
    pub async fn begin_poll(&self, machine: &str) -> Result<Option<i64>, StoreError> {
        self.db
            .row(
                "UPDATE machines SET poll_gen = poll_gen + 1 WHERE id = $1 RETURNING poll_gen",
                args![machine],
            )
            .await?
            .map(|r| r.int(0))
            .transpose()
            .map_err(StoreError::from)
    }

    /// What the poll of generation `gen` hands out now: every message without a
    /// final ack, not expired and not paused by `taken`, oldest first, at most
    /// `max`; each is counted as delivered once more. Also records the poll as
    /// the machine's heartbeat. The machine's row is held while this runs, so
    /// no other poll takes the same messages meanwhile.
    pub async fn due(
        &self,
        machine: &str,
        poll_gen: i64,
        now: i64,
        max: usize,
    ) -> Result<Look, StoreError> {
        let machine = machine.to_string();
        self.db
            .transaction(move |mut tx| {
                Box::pin(async move {
                    let mine = tx
                        .exec(
                            "UPDATE machines SET last_poll_ms = $2 WHERE id = $1 AND poll_gen = $3",
                            args![&machine, now, poll_gen],
                        )
                        .await?;
                    if mine == 0 {
                        let exists = tx
                            .row("SELECT 1 FROM machines WHERE id = $1", args![&machine])
                            .await?
                            .is_some();
                        return Ok(if exists { Look::Superseded } else { Look::Gone });
                    }
                    let rows = tx
                        .rows(
                            "SELECT id, cmd, csig, grant_json, confirm_json, at_ms, expires_ms
                             FROM messages
                             WHERE machine = $1 AND final_ack IS NULL AND expires_ms > $2
                               AND (taken_until_ms IS NULL OR taken_until_ms <= $2)
                             ORDER BY id LIMIT $3",
                            args![&machine, now, max],
                        )
                        .await?;
                    let mut messages = Vec::with_capacity(rows.len());
                    for r in rows {
                        let id = r.text(0)?;
                        let mut env = json!({"id": id, "cmd": r.text(1)?});
                        if let Some(c) = r.opt_text(2)? {
                            env["csig"] = Value::String(c);
                        }
                        if let Some(g) = parse(r.opt_text(3)?, "grant")? {
                            env["grant"] = g;
                        }
                        if let Some(c) = parse(r.opt_text(4)?, "confirm")? {
                            env["confirm"] = c;
                        }
                        env["at"] = Value::String(protocol::time::rfc3339_ms(r.int(5)?));
                        env["expires_at"] = Value::String(protocol::time::rfc3339_ms(r.int(6)?));
                        tx.exec(
                            "UPDATE messages SET deliveries = deliveries + 1,
                               last_delivered_ms = $2
                             WHERE id = $1",
                            args![id, now],
                        )
                        .await?;
                        messages.push(env);
                    }
                    let next_ms = tx
                        .row(
                            "SELECT MIN(taken_until_ms) FROM messages
                             WHERE machine = $1 AND final_ack IS NULL AND expires_ms > $2
                               AND taken_until_ms > $2",
                            args![&machine, now],
                        )
                        .await?
                        .map(|r| r.opt_int(0))
                        .transpose()?
                        .flatten();
                    tx.commit().await?;
                    Ok(Look::Due(Due { messages, next_ms }))
                })
            })
            .await
    }

    /// Records a machine's acks: the first final one wins and ends delivery;
    /// `taken` pauses it for `pause_ms` (once); `progress` keeps the highest
    /// `seq` and its reply. Anything else changes nothing and is counted. Each
    /// change is one conditional statement, so racing acks change it once.
    pub async fn ack(
        &self,
        machine: &str,
        acks: &[Ack],
        now: i64,
        pause_ms: i64,
    ) -> Result<AckReport, StoreError> {
        let (machine, acks) = (machine.to_string(), acks.to_vec());
        self.db
            .transaction(move |mut tx| {
                Box::pin(async move {
                    let mut report = AckReport::default();
                    for a in &acks {
                        let known = tx
                            .row(
                                "SELECT 1 FROM messages WHERE id = $1 AND machine = $2",
                                args![&a.id, &machine],
                            )
                            .await?
                            .is_some();
                        if !known {
                            report.unknown.push(a.id.clone());
                            continue;
                        }
                        let changed = match a.outcome {
                            o if o.is_final() => {
                                tx.exec(
                                    "UPDATE messages SET final_ack = $2, final_ms = $3
                                     WHERE id = $1 AND final_ack IS NULL",
                                    args![&a.id, a.raw.to_string(), now],
                                )
                                .await?
                            }
                            Outcome::Taken => {
                                tx.exec(
                                    "UPDATE messages SET taken_ms = $2, taken_until_ms = $3
                                     WHERE id = $1 AND final_ack IS NULL AND taken_ms IS NULL",
                                    args![&a.id, now, now.saturating_add(pause_ms)],
                                )
                                .await?
                            }
                            Outcome::Progress => {
                                let seq = a.seq.unwrap_or(0) as i64;
                                tx.exec(
                                    "UPDATE messages SET progress_seq = $2, progress_reply = $3
                                     WHERE id = $1 AND final_ack IS NULL
                                       AND (progress_seq IS NULL OR progress_seq < $2)",
                                    args![&a.id, seq, a.reply.clone()],
                                )
                                .await?
                            }
                            _ => 0,
                        } > 0;
                        if changed {
                            report.recorded += 1;
                        } else {
                            report.duplicates += 1;
                        }
                        tx.exec(
                            "UPDATE messages SET acks = acks + 1, duplicates = duplicates + $2
                             WHERE id = $1",
                            args![&a.id, i64::from(!changed)],
                        )
                        .await?;
                    }
                    tx.commit().await?;
                    Ok(report)
                })
            })
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Location;

    #[tokio::test]
    async fn files_go_in_time_and_past_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Db::open(Location::Folder(dir.path())).await.unwrap());
        let s = ControlStore::new(db);
        s.put_file("h", b"bytes", "text/plain", None, 1_000)
            .await
            .unwrap();
        s.put_file("a", b"mine", "text/plain", Some("a_1"), 1_000)
            .await
            .unwrap();
        assert_eq!(
            s.file("a", None, 2_000).await.unwrap(),
            None,
            "another account's"
        );
        assert!(s.file("a", Some("a_1"), 2_000).await.unwrap().is_some());
        assert!(
            s.file("h", Some("a_1"), 2_000).await.unwrap().is_some(),
            "the test door's files are any machine's"
        );
        assert_eq!(
            s.file("h", None, 2_000).await.unwrap(),
            Some((b"bytes".to_vec(), "text/plain".to_string()))
        );
        assert_eq!(
            s.file("h", None, 1_000 + FILE_KEEP_MS + 1).await.unwrap(),
            None
        );
        for i in 0..=FILES_MAX {
            s.put_file(&format!("f{i}"), b"x", "a/b", None, 10_000 + i)
                .await
                .unwrap();
        }
        assert_eq!(s.file("f0", None, 20_000).await.unwrap(), None);
        assert!(
            s.file(&format!("f{FILES_MAX}"), None, 20_000)
                .await
                .unwrap()
                .is_some()
        );
    }
}
