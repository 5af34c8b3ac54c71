//! `sessionpipe_redact`: the redaction rulesets of the sessionpipe protocol
//! (PROTOCOL-NOTES §4), as pure functions.
//!
//! - `secrets@1` ([`secrets`]): always on above tier 0, before the outbox. Replaces a
//!   credential's value with `[redacted]` and keeps the sentence around it.
//! - `pii@1` ([`pii`], [`pii_session`], [`machine_hash`]): opt-in per sink. Emails,
//!   phone numbers and the home directory in every string; the session block's
//!   machine and account.
//!
//! Both string rules are linear-time (the `regex` crate and hand-written scanners, no
//! backtracking), idempotent (`f(f(s)) == f(s)`: a string a rule changed is checked
//! again, see `spans::to_fixed_point`), and return `Cow::Borrowed` when nothing
//! changed. This crate does no I/O and keeps no state, except [`vectors`],
//! which reads the conformance vector files it is pointed at. It does not decide
//! which fields an event keeps at a tier (the core's `filter` does) or which sinks get
//! `pii@1`.

mod json;
mod names;
mod pii;
mod secrets;
mod spans;
mod values;
pub mod vectors;

use std::borrow::Cow;

/// The text that replaces a secret value.
pub const REDACTED: &str = values::REDACTED;
/// The text that replaces an email address under `pii@1`.
pub const EMAIL: &str = pii::EMAIL;
/// The text that replaces a phone number under `pii@1`.
pub const PHONE: &str = pii::PHONE;

/// `secrets@1` on one string. Replaces a secret value, keeps the sentence
/// (`password: [redacted]`).
pub fn secrets(s: &str) -> Cow<'_, str> {
    spans::to_fixed_point(s, secrets::redact)
}

/// `pii@1` on one string: emails → `[email]`, phone numbers → `[phone]`, home paths →
/// `~` (`home` given by the caller, e.g. `/Users/alice`; `None` leaves paths alone).
pub fn pii<'a>(s: &'a str, home: Option<&str>) -> Cow<'a, str> {
    spans::to_fixed_point(s, |s| pii::redact(s, home))
}

/// `pii@1`'s session-block rule, in place: `machine` becomes [`machine_hash`] of it,
/// `account_id` is dropped. The block's other strings take [`pii`] like any string.
pub fn pii_session(block: &mut serde_json::Map<String, serde_json::Value>) {
    pii::session(block)
}

/// Applies a string function to every string value inside a JSON value (object keys
/// are left alone). A string is replaced only when `f` returns `Cow::Owned`.
pub fn map_strings(v: &mut serde_json::Value, f: &dyn Fn(&str) -> Cow<'_, str>) {
    json::map_strings(v, f)
}

/// `pii@1`'s machine rule: the first 8 hex digits of SHA-256 of the machine name.
pub fn machine_hash(machine: &str) -> String {
    pii::machine_hash(machine)
}
