//! What the page asks of the control state on an account's behalf: the
//! account's machines with their keys and last hello, and one message's state
//! and acks; and the one rendering of a message's state `view` shares.
//!
//! This module owns the rule that an account sees only its own: every query
//! here names the account. It must not change state (the store does) nor
//! speak HTTP.

use super::error::StoreError;
use super::store::{ControlStore, parse};
use crate::db::{Row, args};
use serde_json::{Value, json};

/// One message's state and acks, from a row of the 13 columns `view` and
/// `message_of` read (id, cmd, at_ms ... duplicates).
pub(super) fn message_json(r: &Row, now: i64) -> Result<Value, StoreError> {
    let time = |ms: Option<i64>| ms.map(protocol::time::rfc3339_ms);
    let (expires, deliveries, taken_until) = (r.int(3)?, r.int(4)?, r.opt_int(6)?);
    let fin = parse(r.opt_text(7)?, "final ack")?;
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
    let seq = r.opt_int(9)?;
    let reply = r.opt_text(10)?;
    Ok(json!({
        "id": r.text(0)?, "cmd": r.text(1)?, "state": state,
        "at": protocol::time::rfc3339_ms(r.int(2)?),
        "expires_at": protocol::time::rfc3339_ms(expires),
        "deliveries": deliveries,
        "acks": {
            "count": r.int(11)?, "duplicates": r.int(12)?,
            "final": fin, "final_received_at": time(r.opt_int(8)?),
            "taken_at": time(r.opt_int(5)?), "taken_until": time(taken_until),
            "progress": seq.map(|s| json!({"seq": s, "reply": reply})),
        },
    }))
}

impl ControlStore {
    /// One message as `view` shows it, with its machine, when it was queued
    /// by `account` (another account's, or the test door's, is `None`).
    pub async fn message_of(
        &self,
        id: &str,
        account: &str,
        now: i64,
    ) -> Result<Option<(String, Value)>, StoreError> {
        let Some(r) = self
            .db
            .row(
                "SELECT id, cmd, at_ms, expires_ms, deliveries, taken_ms, taken_until_ms,
                   final_ack, final_ms, progress_seq, progress_reply, acks, duplicates, machine
                 FROM messages WHERE id = $1 AND account = $2",
                args![id, account],
            )
            .await?
        else {
            return Ok(None);
        };
        Ok(Some((r.text(13)?, message_json(&r, now)?)))
    }

    /// The machines of `account`: id, name, last hello, when it last polled,
    /// its enrolled keys' ids.
    pub async fn machines_of(&self, account: &str) -> Result<Vec<MachineRow>, StoreError> {
        let mut out = Vec::new();
        for r in self
            .db
            .rows(
                "SELECT id, name, hello, last_poll_ms FROM machines WHERE account = $1
                 ORDER BY name, id",
                args![account],
            )
            .await?
        {
            let id = r.text(0)?;
            let keys = self.keys(&id).await?;
            out.push(MachineRow {
                name: r.text(1)?,
                hello: parse(r.opt_text(2)?, "hello")?,
                last_poll_ms: r.opt_int(3)?,
                keys,
                id,
            });
        }
        Ok(out)
    }

    /// Takes a command's nonce for good (the verifier's window is 25 hours;
    /// older ones go): false when some command took it already, whichever
    /// receiver process took it.
    pub async fn take_nonce(&self, nonce: &str, iat_ms: i64) -> Result<bool, StoreError> {
        let now = protocol::time::now_ms();
        self.db
            .exec(
                "DELETE FROM nonces WHERE iat_ms < $1",
                args![now - sessionpipe_verifier::NONCE_WINDOW_MS],
            )
            .await?;
        let n = self
            .db
            .exec(
                "INSERT INTO nonces (nonce, iat_ms) VALUES ($1, $2) ON CONFLICT (nonce) DO NOTHING",
                args![nonce, iat_ms],
            )
            .await?;
        Ok(n == 1)
    }

    /// The keys enrolled on `machine` for this receiver, as the verifier reads them.
    pub async fn keys(&self, machine: &str) -> Result<Vec<Value>, StoreError> {
        let mut keys = Vec::new();
        for r in self
            .db
            .rows(
                "SELECT key_json FROM machine_keys WHERE machine = $1 ORDER BY added_ms",
                args![machine],
            )
            .await?
        {
            keys.extend(parse(Some(r.text(0)?), "key")?);
        }
        Ok(keys)
    }
}

/// One of an account's machines.
#[derive(Clone, Debug, PartialEq)]
pub struct MachineRow {
    pub id: String,
    pub name: String,
    pub hello: Option<Value>,
    pub last_poll_ms: Option<i64>,
    /// `{id, alg, spki}` of each key the machine was handed.
    pub keys: Vec<Value>,
}

#[cfg(feature = "test-doors")]
impl ControlStore {
    /// The read door: the machine, its last hello, its keys, and every message
    /// kept with its state and acks. `None` when there is no such machine.
    pub async fn view(&self, machine: &str, now: i64) -> Result<Option<Value>, StoreError> {
        let Some(m) = self
            .db
            .row(
                "SELECT name, paired_ms, hello, hello_ms, last_poll_ms FROM machines WHERE id = $1",
                args![machine],
            )
            .await?
        else {
            return Ok(None);
        };
        let time = |ms: Option<i64>| ms.map(protocol::time::rfc3339_ms);
        let mut keys = Vec::new();
        for r in self
            .db
            .rows(
                "SELECT key_json, account FROM machine_keys WHERE machine = $1 ORDER BY added_ms",
                args![machine],
            )
            .await?
        {
            let mut k = parse(Some(r.text(0)?), "key")?.unwrap_or_default();
            k["account"] = json!(r.opt_text(1)?);
            keys.push(k);
        }
        let mut messages = Vec::new();
        for r in self
            .db
            .rows(
                "SELECT id, cmd, at_ms, expires_ms, deliveries, taken_ms, taken_until_ms,
                   final_ack, final_ms, progress_seq, progress_reply, acks, duplicates
                 FROM messages WHERE machine = $1 ORDER BY id",
                args![machine],
            )
            .await?
        {
            messages.push(message_json(&r, now)?);
        }
        Ok(Some(json!({
            "machine": machine, "name": m.text(0)?,
            "paired_at": protocol::time::rfc3339_ms(m.int(1)?),
            "hello": parse(m.opt_text(2)?, "hello")?, "hello_at": time(m.opt_int(3)?),
            "last_poll_at": time(m.opt_int(4)?),
            "keys": keys, "messages": messages,
        })))
    }
}
