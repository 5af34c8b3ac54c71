//! Whose events a sink token sends: the receiver's own token (`--token`)
//! speaks for the receiver's operator, which is the first account made on it
//! once there is one; every other sink token was minted for one account (at a
//! pairing that account approved) and speaks for it alone.
//!
//! This module owns that mapping and the sink tokens' storage (only their
//! SHA-256 is kept). It must not judge events nor speak HTTP, and never logs
//! or returns a stored token.

use crate::db::{Db, DbError, args};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use std::sync::OnceLock;
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
    pub owner: String,
    pub machine: Option<String>,
}

/// The operator's account, once known: it never changes after it is set, so
/// a process keeps it once read.
#[derive(Default)]
pub struct Owners {
    operator: OnceLock<String>,
}

fn sha256(s: &str) -> Vec<u8> {
    Sha256::digest(s.as_bytes()).to_vec()
}

impl Owners {
    /// Who `given` speaks for, `None` when it is no sink token here.
    pub async fn sender_of(
        &self,
        db: &Db,
        operator_token: &str,
        given: &str,
    ) -> Result<Option<Sender>, DbError> {
        if bool::from(given.as_bytes().ct_eq(operator_token.as_bytes())) {
            return Ok(Some(Sender {
                owner: self.operator(db).await?,
                machine: None,
            }));
        }
        if !given.starts_with("spk_") {
            return Ok(None);
        }
        db.row(
            "SELECT account, machine FROM sink_tokens WHERE token_hash = $1",
            args![sha256(given)],
        )
        .await?
        .map(|r| {
            Ok(Sender {
                owner: r.text(0)?,
                machine: r.opt_text(1)?,
            })
        })
        .transpose()
    }

    /// The operator's account, or `NO_ACCOUNT` while there is none.
    pub async fn operator(&self, db: &Db) -> Result<String, DbError> {
        if let Some(a) = self.operator.get() {
            return Ok(a.clone());
        }
        let found = db
            .row(
                "SELECT value FROM settings WHERE name = $1",
                args![OPERATOR_ACCOUNT],
            )
            .await?
            .map(|r| r.bytes(0))
            .transpose()?
            .map(|b| String::from_utf8_lossy(&b).into_owned());
        Ok(match found {
            Some(a) => self.operator.get_or_init(|| a).clone(),
            None => NO_ACCOUNT.to_string(),
        })
    }

    /// Makes `account` the operator's, unless one is already: the events the
    /// operator's token sent so far become its. Whether it became the operator.
    pub async fn claim_operator(&self, db: &Db, account: &str) -> Result<bool, DbError> {
        let account = account.to_string();
        db.transaction(move |mut tx| {
            Box::pin(async move {
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

    /// Whether `account` is an account made on this receiver (a pairing
    /// approved through the test door names any account it likes).
    pub async fn is_account(&self, db: &Db, account: &str) -> Result<bool, DbError> {
        Ok(db
            .row("SELECT 1 FROM accounts WHERE id = $1", args![account])
            .await?
            .is_some())
    }

    /// A new sink token for `account`, handed to `machine` at its pairing.
    pub async fn mint(
        &self,
        db: &Db,
        account: &str,
        machine: &str,
        now_ms: i64,
    ) -> Result<String, DbError> {
        let mut b = [0u8; 32];
        getrandom::fill(&mut b).expect("the OS has a random source");
        let token = format!("spk_{}", URL_SAFE_NO_PAD.encode(b));
        db.exec(
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
        let db = Db::open(Location::Folder(dir.path())).await.unwrap();
        let owners = Owners::default();
        let owner_of = |given: &'static str| {
            let (owners, db) = (&owners, &db);
            async move {
                owners
                    .sender_of(db, "op", given)
                    .await
                    .unwrap()
                    .map(|s| s.owner)
            }
        };
        assert_eq!(owner_of("op").await.as_deref(), Some(""));
        assert_eq!(owner_of("nope").await, None);
        assert!(owners.claim_operator(&db, "a_first").await.unwrap());
        assert!(
            !owners.claim_operator(&db, "a_second").await.unwrap(),
            "once"
        );
        assert_eq!(owner_of("op").await.as_deref(), Some("a_first"));
        let t = owners.mint(&db, "a_second", "m_x", 1).await.unwrap();
        assert_eq!(
            owners.sender_of(&db, "op", &t).await.unwrap(),
            Some(Sender {
                owner: "a_second".into(),
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
