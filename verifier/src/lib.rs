//! `sessionpipe_verifier`: the control verifier. Every check a machine runs on
//! a signed control command before anything runs (PROTOCOL-NOTES §6, CONTROL
//! §5 steps 1–5), in the spec's order and with its refusal codes, and the check
//! of a pairing proof (CONTROL §2).
//!
//! [`verify`] reads the exact `cmd` bytes into a [`Command`] (`command`, with a
//! `start`'s `files` in `files`), checks the machine, the signature (a day
//! [`Grant`] from an enrolled passkey plus the day key's `csig`, or a confirm
//! assertion over the command itself: `webauthn`, `grant`, `keys`), the age,
//! and only then records the nonce in the caller's [`NonceStore`]. A
//! command's session id is held to its harness's rule (`session_ids`), and a
//! polled envelope (its `expires_at` included) is read by [`carried`].
//!
//! No I/O at all: no files, no network, no clock (the caller passes `now`), no
//! database. The steps after it (the session's folder on the allowlist, an
//! open attention for an `allow`, start limits) are the daemon's. `vectors`
//! judges one conformance vector; `softkey` (feature `softkey`) is a software
//! authenticator for downstream tests.

mod command;
mod envelope;
mod files;
mod grant;
mod json;
mod keys;
mod nonces;
mod refusal;
pub mod session_ids;
#[cfg(any(test, feature = "softkey"))]
pub mod softkey;
pub mod vectors;
mod webauthn;

pub use command::{
    Body, Command, Decision, KEYS_SESSION, MAX_COMMAND_CHARS, MAX_NOTE_CHARS, MAX_TEXT_CHARS,
    SessionRef, parse_session, valid_machine_id,
};
pub use envelope::{Carried, carried};
pub use files::{FileRef, MAX_FILE_BYTES, MAX_FILES, MAX_TOTAL_BYTES};
pub use grant::{GRANT_LEAD_MS, Grant, MAX_GRANT_MS};
pub use keys::{ES256, MIN_RSA_BITS, RS256, TrustedKey};
pub use nonces::{MemoryNonces, NONCE_WINDOW_MS, NonceStore, Recorded};
pub use refusal::{AssertionFault, GrantFault, KeyFault, NonceStoreError, Refusal};
pub use webauthn::{Assertion, FLAG_UP, FLAG_UV};

use keys::is_b64url;
use serde::{Deserialize, Serialize};

/// How long ago a command may have been signed, by default.
pub const MAX_AGE_MS: i64 = 24 * 60 * 60 * 1000;
/// How far ahead of the machine's clock a command may be dated.
pub const MAX_AHEAD_MS: i64 = 5 * 60 * 1000;

/// What the receiver carried: the command string and its signatures.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signed {
    pub cmd: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csig: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<Grant>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<Assertion>,
}

/// What a command is judged against.
#[derive(Clone, Copy, Debug)]
pub struct Policy<'a> {
    /// This machine's id (`m_…`).
    pub machine: &'a str,
    /// The receiver's rp id (`control.signing.rp_id`).
    pub rp_id: &'a str,
    /// The passkeys enrolled on this machine for that receiver.
    pub trusted: &'a [TrustedKey],
    /// Now, epoch ms.
    pub now_ms: i64,
    /// 24 hours on a machine; a receiver's early word uses 10 minutes.
    pub max_age_ms: i64,
    /// The envelope's `expires_at`, epoch ms, when there is one.
    pub expires_at_ms: Option<i64>,
}

impl<'a> Policy<'a> {
    /// A machine's policy: 24 hours of age, no `expires_at`.
    pub fn new(machine: &'a str, rp_id: &'a str, trusted: &'a [TrustedKey], now_ms: i64) -> Self {
        Policy {
            machine,
            rp_id,
            trusted,
            now_ms,
            max_age_ms: MAX_AGE_MS,
            expires_at_ms: None,
        }
    }
}

/// Which signature vouched for the command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    Grant,
    Confirm,
}

impl Via {
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Grant => "grant",
            Via::Confirm => "confirm",
        }
    }
}

/// A command that passed every check, its nonce recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    pub via: Via,
    pub command: Command,
}

/// Runs the checks in order: the exact bytes parsed (and their shape), the
/// machine, the signature, the age, then the nonce recorded. The nonce is
/// recorded only once everything else passed, so a refused command never
/// burns its nonce.
pub fn verify(
    signed: &Signed,
    policy: &Policy,
    nonces: &mut dyn NonceStore,
) -> Result<Verified, Refusal> {
    let command = command::parse(&signed.cmd, policy.machine)?;
    let via = signature(signed, command.iat_ms, policy)?;
    age(command.iat_ms, policy)?;
    match nonces.record(&command.nonce, command.iat_ms, policy.now_ms) {
        Ok(Recorded::New) => Ok(Verified { via, command }),
        Ok(Recorded::Seen) => Err(Refusal::Replay),
        Err(_) => Err(Refusal::NonceStore),
    }
}

/// Either path is enough: a confirm that verifies wins even beside a bad
/// grant. When neither verifies, the grant's refusal is the one told (it is
/// the path every command takes; a confirm is the exception).
fn signature(signed: &Signed, iat_ms: i64, policy: &Policy) -> Result<Via, Refusal> {
    let confirm = signed.confirm.as_ref().map(|c| {
        let key = enrolled(policy, &c.cred)?;
        webauthn::check(key, c, signed.cmd.as_bytes(), policy.rp_id).map_err(Refusal::BadAssertion)
    });
    if let Some(Ok(())) = confirm {
        return Ok(Via::Confirm);
    }
    if let Some(g) = &signed.grant {
        return by_grant(g, signed, iat_ms, policy).map(|()| Via::Grant);
    }
    match confirm {
        Some(Err(refusal)) => Err(refusal),
        _ => Err(Refusal::Unsigned),
    }
}

/// The grant path: an enrolled passkey's assertion over the grant's exact
/// `str`, its terms, the command inside its window, the day key's `csig`.
fn by_grant(g: &Grant, signed: &Signed, iat_ms: i64, policy: &Policy) -> Result<(), Refusal> {
    let key = enrolled(policy, &g.assertion.cred)?;
    webauthn::check(key, &g.assertion, g.str.as_bytes(), policy.rp_id)
        .map_err(Refusal::BadAssertion)?;
    let terms = grant::terms(&g.str, policy.rp_id).map_err(Refusal::BadGrant)?;
    if !terms.covers(iat_ms) {
        return Err(Refusal::OutsideGrant);
    }
    let csig = signed.csig.as_deref().ok_or(Refusal::BadCsig)?;
    if !keys::csig_verifies(&terms.day, &signed.cmd, csig) {
        return Err(Refusal::BadCsig);
    }
    Ok(())
}

fn enrolled<'a>(policy: &Policy<'a>, cred: &str) -> Result<&'a TrustedKey, Refusal> {
    policy
        .trusted
        .iter()
        .find(|k| k.id == cred)
        .ok_or(Refusal::UntrustedKey)
}

/// Signed at most `max_age_ms` ago, at most 5 minutes ahead, and judged
/// before the envelope's `expires_at`.
fn age(iat_ms: i64, policy: &Policy) -> Result<(), Refusal> {
    if policy.now_ms.saturating_sub(iat_ms) > policy.max_age_ms {
        return Err(Refusal::TooOld);
    }
    if iat_ms.saturating_sub(policy.now_ms) > MAX_AHEAD_MS {
        return Err(Refusal::Future);
    }
    if policy.expires_at_ms.is_some_and(|exp| policy.now_ms >= exp) {
        return Err(Refusal::Expired);
    }
    Ok(())
}

/// The message a pairing proof is an assertion over.
pub fn pairing_message(machine: &str, code: &str) -> String {
    format!("sessionpipe.pair:{machine}:{code}")
}

/// Checks a pairing proof: `proof` is `key`'s own assertion (its credential
/// id is the key's) over sha256(`"sessionpipe.pair:" + machine + ":" + code`)
/// for `rp_id`. The daemon trusts the handed key only when this passes.
pub fn verify_enrollment(
    machine: &str,
    code: &str,
    key: &TrustedKey,
    proof: &Assertion,
    rp_id: &str,
) -> Result<(), Refusal> {
    if !is_b64url(&key.id, 16, 1400) {
        return Err(Refusal::BadFields(
            "key.id is not 16 to 1400 base64url characters".into(),
        ));
    }
    if proof.cred != key.id {
        return Err(Refusal::UntrustedKey);
    }
    webauthn::check(key, proof, pairing_message(machine, code).as_bytes(), rp_id)
        .map_err(Refusal::BadAssertion)
}

#[cfg(test)]
mod tests;
