//! Why a command, a grant, an assertion or a pairing proof was refused: the
//! protocol's refusal codes (PROTOCOL-NOTES §6) and, beneath two of them, what
//! exactly was wrong. The codes are the wire's words; the details are for logs
//! and never change a verdict.

use thiserror::Error;

/// A verifier's refusal. [`Refusal::code`] is the `code` of the `refused` ack.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum Refusal {
    /// Over 48 000 characters, not JSON, not an object, a key twice, or a
    /// member every command carries of the wrong JSON type (`iat` not an
    /// integer, `machine` not a string, …); also a polled envelope whose own
    /// members are of the wrong type (`expires_at` not a time).
    #[error("malformed command")]
    Malformed,
    /// Not `{"v":1,"t":"sessionpipe.control",…}`.
    #[error("not a sessionpipe control command")]
    NotACommand,
    /// Signed for another machine (or names none).
    #[error("signed for another machine")]
    WrongMachine,
    #[error("unknown kind")]
    UnknownKind,
    /// Not `<harness>:<id>`, an id its harness's rule does not allow (a
    /// `claude-code` id that is not a UUID), or `key.add` and
    /// `sessionpipe:keys` apart.
    #[error("bad session")]
    BadSession,
    /// A field missing, out of its bounds, or foreign to the kind.
    #[error("bad fields: {0}")]
    BadFields(String),
    #[error("bad nonce")]
    BadNonce,
    #[error("signed more than the allowed age ago")]
    TooOld,
    /// Past the receiver's `expires_at`; the code is `too_old`, and a daemon
    /// may ack it `expired` instead of refusing it.
    #[error("past its expires_at")]
    Expired,
    #[error("signed more than 5 minutes ahead")]
    Future,
    /// Neither a grant nor a confirm (a `csig` alone vouches for nothing).
    #[error("unsigned")]
    Unsigned,
    /// The assertion names a credential this machine has not enrolled.
    #[error("signed by a key this machine does not trust")]
    UntrustedKey,
    #[error("bad assertion: {0}")]
    BadAssertion(AssertionFault),
    #[error("bad grant: {0}")]
    BadGrant(GrantFault),
    /// The command's `iat` is not within `grant iat − 5 min ..= grant exp`.
    #[error("signed outside its grant's window")]
    OutsideGrant,
    /// Missing, not 64 raw bytes, or not the day key's signature of `cmd`.
    #[error("bad csig")]
    BadCsig,
    /// The nonce was used before.
    #[error("replay")]
    Replay,
    /// The nonce could not be recorded, so the command must not run (the
    /// store's own error stays with the store's caller).
    #[error("the nonce could not be recorded")]
    NonceStore,
}

impl Refusal {
    /// The protocol's refusal code.
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::Malformed => "malformed",
            Refusal::NotACommand => "not_a_command",
            Refusal::WrongMachine => "wrong_machine",
            Refusal::UnknownKind => "unknown_kind",
            Refusal::BadSession => "bad_session",
            Refusal::BadFields(_) => "bad_fields",
            Refusal::BadNonce => "bad_nonce",
            Refusal::TooOld | Refusal::Expired => "too_old",
            Refusal::Future => "future",
            Refusal::Unsigned => "unsigned",
            Refusal::UntrustedKey => "untrusted_key",
            Refusal::BadAssertion(_) => "bad_assertion",
            Refusal::BadGrant(_) => "bad_grant",
            Refusal::OutsideGrant => "outside_grant",
            Refusal::BadCsig => "bad_csig",
            Refusal::Replay => "replay",
            Refusal::NonceStore => "nonce_store",
        }
    }
}

/// What was wrong with a WebAuthn assertion (a grant's, a confirm's or a
/// pairing proof).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum AssertionFault {
    /// `ad`, `cd` or `sig` is not base64url.
    #[error("{0} is not base64url")]
    Encoding(&'static str),
    #[error("authenticator data shorter than 37 bytes")]
    ShortAuthData,
    #[error("authenticator data for another rp id")]
    RpIdHash,
    #[error("user not present")]
    NotPresent,
    #[error("user not verified")]
    NotVerified,
    #[error("client data: {0}")]
    ClientData(&'static str),
    /// `type` is not `webauthn.get` (a registration, say).
    #[error("a {0:?} ceremony, not webauthn.get")]
    Ceremony(String),
    #[error("challenge over other bytes")]
    Challenge,
    #[error("origin {0:?} is not on the rp id")]
    Origin(String),
    #[error("cross-origin")]
    CrossOrigin,
    /// The enrolled key itself cannot be used.
    #[error("key: {0}")]
    Key(KeyFault),
    #[error("signature does not verify")]
    Signature,
}

/// Why a key (`{id, alg, spki}`) cannot verify anything.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum KeyFault {
    #[error("alg {0} is neither -7 nor -257")]
    Alg(i64),
    #[error("spki is not base64url")]
    Encoding,
    #[error("spki is not a P-256 public key")]
    NotP256,
    #[error("spki is not an RSA public key")]
    NotRsa,
    #[error("RSA modulus of {0} bits, under 2048")]
    ShortModulus(usize),
}

/// What was wrong with a grant's `str` once its assertion verified.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum GrantFault {
    #[error("str over 2000 characters")]
    TooLong,
    #[error("str is not a JSON object: {0}")]
    Json(String),
    /// Not `{"v":1,"t":"sessionpipe.grant",…}`.
    #[error("not a sessionpipe grant")]
    NotAGrant,
    #[error("{0} missing or of the wrong type")]
    Field(&'static str),
    #[error("a member foreign to a grant: {0}")]
    Foreign(String),
    #[error("for rp {0:?}")]
    WrongRp(String),
    #[error("exp before iat")]
    Backwards,
    #[error("longer than 24 hours")]
    TooLongLived,
    #[error("pub is not a P-256 day key")]
    DayKey,
}

/// A nonce store's failure, in its own words.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("the nonce store failed: {0}")]
pub struct NonceStoreError(pub String);
