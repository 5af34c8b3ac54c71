//! `pii@1`: emails become `[email]`, phone numbers `[phone]`, the person's home
//! directory `~`; on the session block, `machine` becomes the first 8 hex digits of its
//! SHA-256 and `account_id` is dropped.
//!
//! It owns those rules and their pre-checks. It must not redact credentials
//! (`secrets` does), guess the home directory (the caller passes it), or turn plain
//! runs of digits (ids, timestamps, versions, IP addresses) into phones: a phone needs
//! a leading `+` or the punctuation of a written number.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;
use sha2::{Digest, Sha256};

use crate::spans::{Spans, is_replacement_end, is_replacement_start};

pub(crate) const EMAIL: &str = "[email]";
pub(crate) const PHONE: &str = "[phone]";
const HOME: &str = "~";

/// An address: local part, `@`, dotted domain ending in a letter TLD.
static EMAIL_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[A-Za-z0-9._%+-]+@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,24}(?-u:\b)").expect("email")
});

/// A written phone number: international (`+44 20 7946 0958`, `+14155551234`) or
/// North American with punctuation (`(415) 555-1234`, `1-800-555-1234`).
static PHONE_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"\+[0-9]{1,3}(?:[ .-]?\(?[0-9]{1,4}\)?){2,6}",
        r"|(?:1[ .-])?(?:\([0-9]{3}\) ?|[0-9]{3}[ .-])[0-9]{3}[ .-][0-9]{4}",
    ))
    .expect("phone")
});

/// `pii@1` on one string.
pub(crate) fn redact<'a>(s: &'a str, home: Option<&str>) -> Cow<'a, str> {
    let mut spans = Spans::new();
    // A home is a path (`/Users/alice`, `C:\Users\alice`): not `/`, `C:\` or `~`.
    if let Some(home) = home.map(|h| h.trim_end_matches(['/', '\\']))
        && home.contains(['/', '\\'])
        && !home.starts_with('~')
    {
        homes(s, home, &mut spans);
    }
    if s.contains('@') {
        emails(s, &mut spans);
    }
    if s.bytes().any(|c| c.is_ascii_digit()) {
        phones(s, &mut spans);
    }
    spans.apply(s)
}

/// `/Users/alice` at a path boundary on both sides (not `/Users/alice2`, not
/// `/data/Users/alice`, not `~/Users/alice`, a folder inside the home).
fn homes(s: &str, home: &str, spans: &mut Spans) {
    let b = s.as_bytes();
    for (i, _) in s.match_indices(home) {
        let end = i + home.len();
        let before_ok = i == 0 || !(is_path_char(b[i - 1]) || is_replacement_end(b[i - 1]));
        let after_ok = b.get(end).is_none_or(|&c| !is_path_char(c));
        if before_ok && after_ok {
            spans.push(i, end, HOME);
        }
    }
}

fn is_path_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.')
}

/// Emails, except scp-style remotes (`git@github.com:org/repo`), which name a
/// server, not a person.
fn emails(s: &str, spans: &mut Spans) {
    let b = s.as_bytes();
    for m in EMAIL_RE.find_iter(s) {
        let scp_remote = b.get(m.end()) == Some(&b':')
            && b.get(m.end() + 1).is_some_and(|c| !c.is_ascii_whitespace());
        if !scp_remote {
            spans.push(m.start(), m.end(), EMAIL);
        }
    }
}

/// Phones with 8 to 15 digits, not glued to a word, a number or a version.
fn phones(s: &str, spans: &mut Spans) {
    let b = s.as_bytes();
    for m in PHONE_RE.find_iter(s) {
        let digits = m.as_str().bytes().filter(u8::is_ascii_digit).count();
        let before_ok = m.start() == 0 || {
            let c = b[m.start() - 1];
            !(c.is_ascii_alphanumeric()
                || matches!(c, b'_' | b'+' | b'-' | b'.' | b'/')
                || is_replacement_end(c))
        };
        let after_ok = match b.get(m.end()) {
            None => true,
            Some(&c) if c.is_ascii_alphanumeric() || c == b'_' || is_replacement_start(c) => false,
            Some(b'.' | b'-') => !b.get(m.end() + 1).is_some_and(u8::is_ascii_digit),
            Some(_) => true,
        };
        if (8..=15).contains(&digits) && before_ok && after_ok {
            spans.push(m.start(), m.end(), PHONE);
        }
    }
}

/// The first 8 hex digits of SHA-256 of `machine`.
pub(crate) fn machine_hash(machine: &str) -> String {
    hex::encode(&Sha256::digest(machine.as_bytes())[..4])
}

/// The session-block rules of `pii@1`, in place: `machine` hashed, `account_id`
/// dropped. Other fields are left to the string rule.
pub(crate) fn session(block: &mut serde_json::Map<String, serde_json::Value>) {
    if let Some(serde_json::Value::String(m)) = block.get_mut("machine") {
        *m = machine_hash(m);
    }
    block.shift_remove("account_id");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(s: &str) -> String {
        redact(s, Some("/Users/alice")).into_owned()
    }

    #[test]
    fn emails_but_not_remotes_or_packages() {
        assert_eq!(run("a.b+c@x.example.com."), "[email].");
        assert_eq!(
            run("git clone git@github.com:org/repo.git"),
            "git clone git@github.com:org/repo.git"
        );
        assert_eq!(
            run("npm i react@18.2.0 @types/node"),
            "npm i react@18.2.0 @types/node"
        );
        assert_eq!(run("mail a@b.io: thanks"), "mail [email]: thanks");
    }

    #[test]
    fn phones_but_not_numbers() {
        assert_eq!(run("call 1-800-555-1234 now"), "call [phone] now");
        assert_eq!(run("415.555.1234"), "[phone]");
        for s in [
            "id 14155551234",
            "at 1767225600000",
            "2026-01-15 10:00:00+00:00",
            "v100.200.30000",
            "x+12345678",
            "git diff +12 -3",
            "10.0.0.1 and 192.168.100.200",
            "uuid 123e4567-e89b-12d3-a456-426614174000",
        ] {
            assert_eq!(run(s), s, "{s}");
        }
    }

    #[test]
    fn home_at_path_boundaries_only() {
        assert_eq!(run("/Users/alice"), "~");
        assert_eq!(run("\"/Users/alice/x\""), "\"~/x\"");
        assert_eq!(run("/Users/alice2/x"), "/Users/alice2/x");
        assert_eq!(run("/data/Users/alice/x"), "/data/Users/alice/x");
        assert_eq!(redact("/Users/alice/x", Some("/Users/alice/")), "~/x");
        assert_eq!(redact("/x", Some("/")), "/x");
        assert_eq!(redact("C:\\x C:", Some("C:\\")), "C:\\x C:");
        assert_eq!(
            redact("C:\\Users\\alice\\x", Some("C:\\Users\\alice")),
            "~\\x"
        );
        assert_eq!(redact("/x", None), "/x");
    }

    #[test]
    fn machine_hash_is_eight_hex() {
        assert_eq!(machine_hash("misha-air"), "81b4709a");
        assert_eq!(machine_hash("").len(), 8);
    }
}
