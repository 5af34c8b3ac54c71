//! The WebAuthn ceremonies: registering a passkey (a new account's first, or
//! another device of an account through a device invite) and discoverable
//! sign-in, each a start that keeps webauthn-rs's state in `ceremonies` and a
//! finish that takes it back once.
//!
//! This module owns what a ceremony may do: who may register (`Basis`), that
//! a finish deletes its ceremony before anything else (a second finish, or a
//! finish after a refused one, finds nothing), that the invite is used up in
//! the transaction that stores the credential, and that a sign-in's user
//! handle is its credential's account's. It must not relax webauthn-rs's
//! checks, and never puts a challenge or a credential's bytes in an error.

use super::{
    Account, AccountError, Accounts, CEREMONIES_MAX, CEREMONY_MS, Credential, account_of, b64,
    keys, person_name, random, unb64,
};
use crate::db::{Dialect, args};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::time::Duration;
use webauthn_rs::prelude::{
    CredentialID, DiscoverableAuthentication, DiscoverableKey, Passkey, PasskeyRegistration,
    PublicKeyCredential, RegisterPublicKeyCredential, Uuid, WebauthnError,
};

/// Why a registration may make what it makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Basis {
    /// No account existed: this one may be the first, and only if it still is
    /// at finish.
    First,
    /// The operator opened registration.
    Open,
    /// An invite: used up at finish.
    Invite,
}

/// A registration between start and finish (the `state` column).
#[derive(Serialize, Deserialize)]
struct Registering {
    passkey: PasskeyRegistration,
    basis: Basis,
    /// The WebAuthn user handle (16 bytes, base64url): the account's, or the
    /// one the new account will get.
    user: String,
    /// The invite's key (SHA-256 of its code, base64url).
    invite: Option<String>,
}

/// The credential algorithms offered: the two the protocol's keys can be.
fn offered_algorithms() -> Value {
    json!([
        {"type": "public-key", "alg": keys::ES256},
        {"type": "public-key", "alg": keys::RS256},
    ])
}

/// Words for a person about a refused answer (webauthn-rs's own are fixed
/// words too, but mapping them keeps any future detail out).
fn refused(e: &WebauthnError) -> AccountError {
    AccountError::BadCredential(match e {
        WebauthnError::MismatchedChallenge => "it answers another challenge",
        WebauthnError::InvalidRPOrigin => "it was made on another site",
        WebauthnError::InvalidRPIDHash => "it was made for another site",
        WebauthnError::InvalidClientDataType => "it is not this kind of answer",
        WebauthnError::UserNotPresent => "the person was not present",
        WebauthnError::UserNotVerified => "the person was not verified (PIN or biometrics)",
        WebauthnError::CredentialPossibleCompromise => {
            "its signature counter went backwards (a cloned passkey?)"
        }
        WebauthnError::CredentialExcludedFromRequest => "this passkey is registered already",
        WebauthnError::CredentialAlteredAlgFromRequest | WebauthnError::COSEKeyInvalidAlgorithm => {
            "its kind of key was not offered"
        }
        _ => "its signature or its data do not verify",
    })
}

impl Accounts {
    /// The options for `navigator.credentials.create` (the JSON of
    /// PublicKeyCredentialCreationOptions, binary members as base64url
    /// strings), and the ceremony's id. `name` is the new account's (a
    /// device invite keeps its account's, and ignores it); `invite` a code
    /// from `invite()`; without one, registration must be open. `client` is
    /// who asks (`ClientKey`), held to its share of ceremonies.
    pub async fn register_start(
        &self,
        name: &str,
        invite: Option<&str>,
        open_registration: bool,
        client: &str,
        now_ms: i64,
    ) -> Result<(Value, String), AccountError> {
        self.prune(now_ms).await?;
        let (basis, joins, invite_hash) = match invite {
            Some(code) => {
                let found = self
                    .live_invite(code, now_ms)
                    .await?
                    .ok_or(AccountError::BadInvite)?;
                (Basis::Invite, found.account, Some(b64(&found.hash)))
            }
            None if open_registration => (Basis::Open, None, None),
            None if !self.any_account().await? => (Basis::First, None, None),
            None => return Err(AccountError::InviteNeeded),
        };
        let (user_name, handle, exclude) = match &joins {
            Some(account) => {
                let r = self
                    .db
                    .row(
                        "SELECT name, user_handle FROM accounts WHERE id = $1",
                        args![account.as_str()],
                    )
                    .await?
                    // The inviter's account is gone.
                    .ok_or(AccountError::BadInvite)?;
                let handle = Uuid::from_slice(&r.bytes(1)?)
                    .map_err(|_| AccountError::Corrupt("user handle"))?;
                let exclude = self
                    .credentials(account)
                    .await?
                    .iter()
                    .map(|c| {
                        unb64(&c.id)
                            .map(CredentialID::from)
                            .ok_or(AccountError::Corrupt("credential id"))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                (r.text(0)?, handle, Some(exclude))
            }
            None => (person_name(name)?, new_user_handle(), None),
        };
        let (ccr, passkey) = self
            .webauthn
            .start_passkey_registration(handle, &user_name, &user_name, exclude)
            .map_err(|e| AccountError::Config(e.to_string()))?;
        let mut options =
            serde_json::to_value(&ccr.public_key).map_err(|_| AccountError::Corrupt("options"))?;
        // Sign-in is discoverable: the passkey must be kept on the
        // authenticator (webauthn-rs asks for "discouraged"; the state it
        // keeps does not check either way).
        if let Some(sel) = options
            .get_mut("authenticatorSelection")
            .and_then(Value::as_object_mut)
        {
            sel.insert("residentKey".into(), json!("required"));
            sel.insert("requireResidentKey".into(), json!(true));
        }
        // Exactly the kinds the protocol's keys can be, whatever webauthn-rs
        // would offer.
        options["pubKeyCredParams"] = offered_algorithms();
        let state = Registering {
            passkey,
            basis,
            user: b64(handle.as_bytes()),
            invite: invite_hash,
        };
        let id = self
            .keep_ceremony(
                "register",
                joins.as_deref(),
                joins.is_none().then_some(user_name.as_str()),
                serde_json::to_string(&state).map_err(|_| AccountError::Corrupt("ceremony"))?,
                client,
                now_ms,
            )
            .await?;
        Ok((options, id))
    }

    /// Verifies the attestation (user verification required), stores the
    /// credential under the new account or the device invite's, uses up the
    /// invite and ends the ceremony; the account, the credential, and whether
    /// this made the receiver's first account.
    pub async fn register_finish(
        &self,
        ceremony: &str,
        device_name: &str,
        credential: &Value,
        now_ms: i64,
    ) -> Result<(Account, Credential, bool), AccountError> {
        let device = person_name(device_name)?;
        let (joins, name, state) = self.take_ceremony(ceremony, "register", now_ms).await?;
        let state: Registering =
            serde_json::from_str(&state).map_err(|_| AccountError::Corrupt("ceremony"))?;
        let response: RegisterPublicKeyCredential = serde_json::from_value(credential.clone())
            .map_err(|_| AccountError::BadCredential("it is not a registration response"))?;
        let passkey = self
            .webauthn
            .finish_passkey_registration(&response, &state.passkey)
            .map_err(|e| refused(&e))?;
        let (alg, spki) = keys::protocol_key(passkey.get_public_key())?;
        let id = b64(passkey.cred_id());
        let passkey_json =
            serde_json::to_string(&passkey).map_err(|_| AccountError::Corrupt("passkey"))?;
        let handle = unb64(&state.user).ok_or(AccountError::Corrupt("ceremony"))?;

        let dialect = self.db.dialect();
        let invite = state
            .invite
            .as_deref()
            .map(|h| unb64(h).ok_or(AccountError::Corrupt("ceremony")))
            .transpose()?;
        let must_be_first = state.basis == Basis::First;
        let (account, first) = self
            .db
            .transaction({
                // What the credential is returned with below, kept out here.
                let (joins, id, spki, device) =
                    (joins.clone(), id.clone(), spki.clone(), device.clone());
                move |mut tx| {
                    Box::pin(async move {
                        if dialect == Dialect::Postgres {
                            // Two first registrations on two processes must not
                            // both be the first (SQLite's transactions take the
                            // write lock at once).
                            tx.exec("SELECT pg_advisory_xact_lock(7303002)", vec![])
                                .await?;
                        }
                        if let Some(hash) = invite {
                            let used = tx
                                .row(
                                    "DELETE FROM invites WHERE code_hash = $1 AND expires_ms > $2
                                 RETURNING account",
                                    args![hash, now_ms],
                                )
                                .await?
                                .ok_or(AccountError::BadInvite)?;
                            if used.opt_text(0)? != joins {
                                return Err(AccountError::Corrupt("invite"));
                            }
                        }
                        let first = tx
                            .row("SELECT id FROM accounts LIMIT 1", vec![])
                            .await?
                            .is_none();
                        if must_be_first && !first {
                            // Someone else's registration made the first account
                            // meanwhile.
                            return Err(AccountError::InviteNeeded);
                        }
                        let account = match &joins {
                            Some(account) => tx
                                .row(
                                    "SELECT id, name, created_ms FROM accounts WHERE id = $1",
                                    args![account.as_str()],
                                )
                                .await?
                                .map(|r| account_of(&r, 0))
                                .transpose()?
                                .ok_or(AccountError::BadInvite)?,
                            None => {
                                let account = Account {
                                    id: format!("a_{}", b64(&random::<16>())),
                                    name: name.ok_or(AccountError::Corrupt("ceremony"))?,
                                    created_ms: now_ms,
                                };
                                tx.exec(
                                    "INSERT INTO accounts (id, name, user_handle, created_ms)
                                 VALUES ($1, $2, $3, $4)",
                                    args![
                                        account.id.as_str(),
                                        account.name.as_str(),
                                        handle,
                                        now_ms
                                    ],
                                )
                                .await?;
                                account
                            }
                        };
                        let added = tx
                            .exec(
                                "INSERT INTO credentials (id, account, passkey, spki, alg, name,
                               added_ms, used_ms)
                             VALUES ($1, $2, $3, $4, $5, $6, $7, NULL)
                             ON CONFLICT (id) DO NOTHING",
                                args![
                                    id.as_str(),
                                    account.id.as_str(),
                                    passkey_json,
                                    spki.as_str(),
                                    alg,
                                    device.as_str(),
                                    now_ms
                                ],
                            )
                            .await?;
                        if added == 0 {
                            return Err(AccountError::CredentialExists);
                        }
                        tx.commit().await?;
                        Ok((account, first))
                    })
                }
            })
            .await?;
        let credential = Credential {
            id,
            account: account.id.clone(),
            name: device,
            alg,
            spki,
            added_ms: now_ms,
            used_ms: None,
        };
        Ok((account, credential, first && joins.is_none()))
    }

    /// The options for `navigator.credentials.get` (the JSON of
    /// PublicKeyCredentialRequestOptions: no `allowCredentials`, user
    /// verification required), and the ceremony's id; `client` as for
    /// `register_start`.
    pub async fn signin_start(
        &self,
        client: &str,
        now_ms: i64,
    ) -> Result<(Value, String), AccountError> {
        self.prune(now_ms).await?;
        // Its `mediation` (conditional) is left to the page: a sign-in button
        // asks without it.
        let (rcr, state) = self
            .webauthn
            .start_discoverable_authentication()
            .map_err(|e| AccountError::Config(e.to_string()))?;
        let mut options =
            serde_json::to_value(&rcr.public_key).map_err(|_| AccountError::Corrupt("options"))?;
        if let Some(o) = options.as_object_mut() {
            o.remove("allowCredentials");
        }
        let state = serde_json::to_string(&state).map_err(|_| AccountError::Corrupt("ceremony"))?;
        let id = self
            .keep_ceremony("signin", None, None, state, client, now_ms)
            .await?;
        Ok((options, id))
    }

    /// Discoverable sign-in: finds the credential the answer names, checks
    /// that its user handle is that credential's account's, verifies it, keeps
    /// the passkey's new counter and the time it was used.
    pub async fn signin_finish(
        &self,
        ceremony: &str,
        credential: &Value,
        now_ms: i64,
    ) -> Result<(Account, Credential), AccountError> {
        let (_, _, state) = self.take_ceremony(ceremony, "signin", now_ms).await?;
        let state: DiscoverableAuthentication =
            serde_json::from_str(&state).map_err(|_| AccountError::Corrupt("ceremony"))?;
        let response: PublicKeyCredential = serde_json::from_value(credential.clone())
            .map_err(|_| AccountError::BadCredential("it is not a sign-in response"))?;
        let (handle, raw_id) = self
            .webauthn
            .identify_discoverable_authentication(&response)
            .map_err(|_| AccountError::BadCredential("it names no account (no user handle)"))?;
        let id = b64(raw_id);
        let r = self
            .db
            .row(
                "SELECT c.passkey, c.name, c.alg, c.spki, c.added_ms, c.used_ms,
                        a.id, a.name, a.created_ms, a.user_handle
                 FROM credentials c JOIN accounts a ON a.id = c.account
                 WHERE c.id = $1",
                args![id.as_str()],
            )
            .await?
            .ok_or(AccountError::UnknownCredential)?;
        if r.bytes(9)? != handle.as_bytes() {
            return Err(AccountError::BadCredential(
                "its user handle is not its account's",
            ));
        }
        let mut passkey: Passkey =
            serde_json::from_str(&r.text(0)?).map_err(|_| AccountError::Corrupt("passkey"))?;
        let result = self
            .webauthn
            .finish_discoverable_authentication(
                &response,
                state,
                &[DiscoverableKey::from(&passkey)],
            )
            .map_err(|e| refused(&e))?;
        if !result.user_verified() {
            return Err(AccountError::BadCredential(
                "the person was not verified (PIN or biometrics)",
            ));
        }
        passkey.update_credential(&result);
        let passkey_json =
            serde_json::to_string(&passkey).map_err(|_| AccountError::Corrupt("passkey"))?;
        let updated = self
            .db
            .exec(
                "UPDATE credentials SET passkey = $2, used_ms = $3 WHERE id = $1",
                args![id.as_str(), passkey_json, now_ms],
            )
            .await?;
        if updated == 0 {
            return Err(AccountError::UnknownCredential);
        }
        let account = account_of(&r, 6)?;
        let credential = Credential {
            id,
            account: account.id.clone(),
            name: r.text(1)?,
            alg: r.int(2)?,
            spki: r.text(3)?,
            added_ms: r.int(4)?,
            used_ms: Some(now_ms),
        };
        Ok((account, credential))
    }

    /// Keeps a ceremony's state, and the client that started it, for
    /// `CEREMONY_MS`; its id (16 random bytes, base64url). Refused while
    /// `client` has its share under way (until the first of them ends), or
    /// too many are, over all clients: counted and kept in one transaction,
    /// so that a client's starts at once, on any processes, take turns.
    async fn keep_ceremony(
        &self,
        kind: &'static str,
        account: Option<&str>,
        name: Option<&str>,
        state: String,
        client: &str,
        now_ms: i64,
    ) -> Result<String, AccountError> {
        let id = b64(&random::<16>());
        let (dialect, per_client) = (self.db.dialect(), self.per_client);
        let (account, name, client) = (
            account.map(str::to_string),
            name.map(str::to_string),
            client.to_string(),
        );
        let kept = id.clone();
        self.db
            .transaction(move |mut tx| {
                Box::pin(async move {
                    if dialect == Dialect::Postgres {
                        tx.exec(
                            "SELECT pg_advisory_xact_lock(7303003, hashtext($1))",
                            args![client.as_str()],
                        )
                        .await?;
                    }
                    let mine = tx
                        .row(
                            "SELECT COUNT(*), MIN(expires_ms) FROM ceremonies
                             WHERE client = $1 AND expires_ms > $2",
                            args![client.as_str(), now_ms],
                        )
                        .await?;
                    if let Some(r) = mine
                        && r.int(0)? >= per_client
                    {
                        let ends = r.opt_int(1)?.unwrap_or(now_ms + CEREMONY_MS);
                        return Err(AccountError::ClientBusy {
                            wait: Duration::from_millis(ends.saturating_sub(now_ms).max(0) as u64),
                        });
                    }
                    let live = tx
                        .row(
                            "SELECT COUNT(*) FROM ceremonies WHERE expires_ms > $1",
                            args![now_ms],
                        )
                        .await?
                        .map(|r| r.int(0))
                        .transpose()?
                        .unwrap_or(0);
                    if live >= CEREMONIES_MAX {
                        return Err(AccountError::Busy);
                    }
                    tx.exec(
                        "INSERT INTO ceremonies (id, kind, account, name, state, expires_ms, client)
                         VALUES ($1, $2, $3, $4, $5, $6, $7)",
                        args![
                            kept.as_str(),
                            kind,
                            account.as_deref(),
                            name.as_deref(),
                            state,
                            now_ms + CEREMONY_MS,
                            client.as_str()
                        ],
                    )
                    .await?;
                    tx.commit().await?;
                    Ok(())
                })
            })
            .await?;
        Ok(id)
    }

    /// Takes a ceremony of `kind` out of the table (one statement: of two
    /// finishes, on any processes, one gets it): its account, name and state,
    /// or `CeremonyExpired` when it is gone, expired or of another kind.
    async fn take_ceremony(
        &self,
        id: &str,
        kind: &'static str,
        now_ms: i64,
    ) -> Result<(Option<String>, Option<String>, String), AccountError> {
        let r = self
            .db
            .row(
                "DELETE FROM ceremonies WHERE id = $1 AND kind = $2
                 RETURNING account, name, state, expires_ms",
                args![id, kind],
            )
            .await?
            .ok_or(AccountError::CeremonyExpired)?;
        if r.int(3)? <= now_ms {
            return Err(AccountError::CeremonyExpired);
        }
        Ok((r.opt_text(0)?, r.opt_text(1)?, r.text(2)?))
    }
}

/// A new account's WebAuthn user handle: 16 random bytes (a v4 UUID, as
/// webauthn-rs reads user handles back as UUIDs).
fn new_user_handle() -> Uuid {
    let mut b = random::<16>();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    Uuid::from_bytes(b)
}
