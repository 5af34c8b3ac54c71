//! Layer 2, owners: whose events a sink token sends: the receiver's own token
//! (`--token`) speaks for the receiver's operator, which is the first account
//! made on it once there is one; every other sink token was minted for one
//! account (at a pairing that account approved) and speaks for it alone.
//!
//! This module owns that mapping, the comparison with the receiver's own
//! token (constant time), and the sink tokens' storage (only their SHA-256 is
//! kept). It must not judge events nor speak HTTP, and never logs or returns
//! a stored token.

use crate::db::{Db, DbError, Dialect, Tx, args};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use std::sync::{Arc, OnceLock};
use subtle::ConstantTimeEq;

/// The `settings` row naming the operator's account.
const OPERATOR_ACCOUNT: &str = "operator_account";

/// The owner of events sent with the operator's token before any account
/// exists (they are the first account's from then on).
pub const NO_ACCOUNT: &str = "";

/// Who a batch's sink token speaks for: the account owning its events, and
/// the paired machine the token was minted for (none for the operator's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sender {
    pub owner: Owner,
    pub machine: Option<String>,
}

/// The account a sink token's events belong to, as far as the token says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Owner {
    Account(String),
    /// The operator's token while this process has not seen an account claim
    /// it: whoever stores under it reads the claim in the same transaction
    /// (`operator_in`), so a claim cannot fall between the read and the
    /// write (events stored under `NO_ACCOUNT` after the claim moved them
    /// would stay behind), and a batch costs no read of its own.
    Operator,
}

/// PostgreSQL's advisory lock key for the operator's claim: taken exclusive
/// by the claim, shared by a transaction storing under the operator's token
/// before it reads the claim.
const OPERATOR_LOCK: i64 = 0x5e55_1014_0000_0001;

/// The sink tokens on a database, and the receiver's own.
pub struct Owners {
    db: Arc<Db>,
    /// The receiver's own bearer token (`--token`).
    operator_token: String,
    /// The operator's account, once known: it never changes after it is
    /// set, so a process keeps it once read.
    operator: OnceLock<String>,
}

/// Reads the operator's claim (`settings` row `OPERATOR_ACCOUNT`).
const CLAIM_READ: &str = "SELECT value FROM settings WHERE name = $1";

/// The account a claim's row names, if there is one.
fn claimed(row: Option<crate::db::Row>) -> Result<Option<String>, DbError> {
    Ok(row
        .map(|r| r.bytes(0))
        .transpose()?
        .map(|b| String::from_utf8_lossy(&b).into_owned()))
}

fn sha256(s: &str) -> Vec<u8> {
    Sha256::digest(s.as_bytes()).to_vec()
}

impl Owners {
    pub fn new(db: Arc<Db>, operator_token: impl Into<String>) -> Owners {
        Owners {
            db,
            operator_token: operator_token.into(),
            operator: OnceLock::new(),
        }
    }

    /// Whether `given` is the receiver's own token, compared in constant time
    /// so that the answer's timing says nothing about the token. A machine's
    /// token is not it: it opens the machine's own calls only.
    pub fn is_operator_token(&self, given: &str) -> bool {
        bool::from(given.as_bytes().ct_eq(self.operator_token.as_bytes()))
    }

    /// The receiver's own token: what an open pairing hands the machine to
    /// send its events with (CONTROL §2).
    pub fn operator_token(&self) -> &str {
        &self.operator_token
    }

    /// Who `given` speaks for, `None` when it is no sink token here.
    pub async fn sender_of(&self, given: &str) -> Result<Option<Sender>, DbError> {
        if self.is_operator_token(given) {
            let owner = match self.operator.get() {
                Some(a) => Owner::Account(a.clone()),
                None => Owner::Operator,
            };
            return Ok(Some(Sender {
                owner,
                machine: None,
            }));
        }
        if !given.starts_with("spk_") {
            return Ok(None);
        }
        self.db
            .row(
                "SELECT account, machine FROM sink_tokens WHERE token_hash = $1",
                args![sha256(given)],
            )
            .await?
            .map(|r| {
                Ok(Sender {
                    owner: Owner::Account(r.text(0)?),
                    machine: r.opt_text(1)?,
                })
            })
            .transpose()
    }

    /// The account `owner` names, the operator's read now when the token did
    /// not settle it (for a read; a write reads it in its transaction). Only
    /// the test doors' event reads ask it.
    #[cfg(any(test, feature = "test-doors"))]
    pub async fn account_of(&self, owner: Owner) -> Result<String, DbError> {
        match owner {
            Owner::Account(a) => Ok(a),
            Owner::Operator => self.operator().await,
        }
    }

    /// Keeps the operator's account once a storing transaction found it.
    pub fn settle_operator(&self, account: &str) {
        if account != NO_ACCOUNT {
            let _ = self.operator.set(account.to_string());
        }
    }

    /// The operator's account, or `NO_ACCOUNT` while there is none.
    pub async fn operator(&self) -> Result<String, DbError> {
        if let Some(a) = self.operator.get() {
            return Ok(a.clone());
        }
        let found = claimed(self.db.row(CLAIM_READ, args![OPERATOR_ACCOUNT]).await?)?;
        Ok(match found {
            Some(a) => self.operator.get_or_init(|| a).clone(),
            None => NO_ACCOUNT.to_string(),
        })
    }

    /// Makes `account` the operator's, unless one is already: the events the
    /// operator's token sent so far become its. Whether it became the operator.
    pub async fn claim_operator(&self, account: &str) -> Result<bool, DbError> {
        let account = account.to_string();
        let dialect = self.db.dialect();
        self.db
            .transaction(move |mut tx| {
                Box::pin(async move {
                    if dialect == Dialect::Postgres {
                        // Waits out every transaction storing under the
                        // operator's token that read no claim yet.
                        tx.exec("SELECT pg_advisory_xact_lock($1)", args![OPERATOR_LOCK])
                            .await?;
                    }
                    let n = tx
                        .exec(
                            "INSERT INTO settings (name, value) VALUES ($1, $2)
                         ON CONFLICT (name) DO NOTHING",
                            args![OPERATOR_ACCOUNT, account.as_bytes()],
                        )
                        .await?;
                    if n == 1 {
                        tx.exec(
                            "UPDATE events SET owner = $1 WHERE owner = $2",
                            args![&account, NO_ACCOUNT],
                        )
                        .await?;
                        tx.exec(
                            "UPDATE sessions SET owner = $1 WHERE owner = $2",
                            args![&account, NO_ACCOUNT],
                        )
                        .await?;
                    }
                    tx.commit().await?;
                    Ok(n == 1)
                })
            })
            .await
    }

    /// The operator's account as a transaction storing under the operator's
    /// token sees it (`NO_ACCOUNT` while none claimed it): on PostgreSQL it
    /// first shares the claim's lock, so a claim either committed before this
    /// read or waits for this transaction to commit and then moves its events.
    pub(crate) async fn operator_in(tx: &mut Tx<'_>, dialect: Dialect) -> Result<String, DbError> {
        if dialect == Dialect::Postgres {
            tx.exec(
                "SELECT pg_advisory_xact_lock_shared($1)",
                args![OPERATOR_LOCK],
            )
            .await?;
        }
        let found = claimed(tx.row(CLAIM_READ, args![OPERATOR_ACCOUNT]).await?)?;
        Ok(found.unwrap_or_else(|| NO_ACCOUNT.to_string()))
    }

    /// Whether `account` is an account made on this receiver (a pairing
    /// approved through the test door names any account it likes).
    pub async fn is_account(&self, account: &str) -> Result<bool, DbError> {
        Ok(self
            .db
            .row("SELECT 1 FROM accounts WHERE id = $1", args![account])
            .await?
            .is_some())
    }

    /// A new sink token for `account`, handed to `machine` at its pairing.
    pub async fn mint(&self, account: &str, machine: &str, now_ms: i64) -> Result<String, DbError> {
        let mut b = [0u8; 32];
        getrandom::fill(&mut b).expect("the OS has a random source");
        let token = format!("spk_{}", URL_SAFE_NO_PAD.encode(b));
        self.db
            .exec(
                "INSERT INTO sink_tokens (token_hash, account, machine, created_ms)
             VALUES ($1, $2, $3, $4)",
                args![sha256(&token), account, machine, now_ms],
            )
            .await?;
        Ok(token)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Location;

    #[tokio::test]
    async fn the_operator_token_becomes_the_first_account_s_and_minted_ones_their_own() {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Db::open(Location::Folder(dir.path())).await.unwrap());
        let owners = Owners::new(Arc::clone(&db), "op");
        let owner_of = |given: &'static str| {
            let owners = &owners;
            async move {
                match owners.sender_of(given).await.unwrap() {
                    Some(s) => Some(owners.account_of(s.owner).await.unwrap()),
                    None => None,
                }
            }
        };
        assert_eq!(owner_of("op").await.as_deref(), Some(""));
        assert_eq!(owner_of("nope").await, None);
        assert!(owners.claim_operator("a_first").await.unwrap());
        assert!(!owners.claim_operator("a_second").await.unwrap(), "once");
        assert_eq!(owner_of("op").await.as_deref(), Some("a_first"));
        let t = owners.mint("a_second", "m_x", 1).await.unwrap();
        assert_eq!(
            owners.sender_of(&t).await.unwrap(),
            Some(Sender {
                owner: Owner::Account("a_second".into()),
                machine: Some("m_x".into())
            })
        );
        assert_eq!(owner_of("spk_forged").await, None);
        let stored = db
            .rows("SELECT token_hash FROM sink_tokens", vec![])
            .await
            .unwrap();
        assert_eq!(
            stored[0].bytes(0).unwrap().len(),
            32,
            "only its hash is kept"
        );
    }
}
