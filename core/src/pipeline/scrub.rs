//! `secrets@1` over everything sessionpipe keeps or sends: every string of an
//! envelope (its data and its session block), a session block before it is
//! merged into a session's record, and a record kept by an earlier version.
//!
//! Ids stay as they are (the session id, a parent or delegating session's id):
//! they are keys, checked against the protocol's charset, and a receiver's dedup
//! runs on them. A repository URL keeps its host and path and loses what a
//! credential rides in (userinfo, query, fragment) before the ruleset runs.

use crate::pipeline::session::SessionRecord;
use protocol::{Envelope, SessionBlock};
use std::borrow::Cow;

/// `secrets@1` on one string, in place.
fn text(s: &mut String) -> bool {
    match redact::secrets(s) {
        Cow::Owned(clean) => {
            *s = clean;
            true
        }
        Cow::Borrowed(_) => false,
    }
}

fn field(v: &mut Option<String>) -> bool {
    v.as_mut().is_some_and(text)
}

/// Every string of a session block but its ids. True when anything changed.
pub fn block(b: &mut SessionBlock) -> bool {
    let mut changed = false;
    if let Some(repo) = b.repo.as_mut() {
        let bare = harness::facts::strip_credentials(repo);
        changed |= bare != *repo;
        *repo = bare;
    }
    for f in [
        &mut b.machine,
        &mut b.cwd,
        &mut b.repo,
        &mut b.branch,
        &mut b.model,
        &mut b.title,
        &mut b.url,
        &mut b.account_id,
    ] {
        changed |= field(f);
    }
    changed
}

/// Every string of an envelope's data and session block, before the outbox:
/// nothing stored, and so nothing sent, carries a secret. True when changed.
pub fn envelope(env: &mut Envelope) -> bool {
    let mut changed = false;
    for value in env.data.values_mut() {
        let before = value.clone();
        redact::map_strings(value, &redact::secrets);
        changed |= *value != before;
    }
    changed |= block(&mut env.session);
    changed |= field(&mut env.harness.version);
    changed
}

/// A quarantined job's bytes as the quarantine keeps them: `secrets@1` over
/// its text (bytes that are not UTF-8 are kept as U+FFFD: a diagnostic copy).
pub fn quarantined(bytes: Vec<u8>) -> Vec<u8> {
    let text = String::from_utf8_lossy(&bytes);
    match redact::secrets(&text) {
        Cow::Owned(clean) => clean.into_bytes(),
        Cow::Borrowed(_) => match text {
            Cow::Borrowed(_) => bytes,
            Cow::Owned(lossy) => lossy.into_bytes(),
        },
    }
}

/// A session's record as an earlier version kept it: its block, the turns its
/// transcript log holds, a held turn's words. True when anything changed.
pub fn record(r: &mut SessionRecord) -> bool {
    let mut changed = block(&mut r.block);
    if let Some(t) = r.transcript.as_mut() {
        // A path naming a secret: the next call names the real one again.
        changed |= text(&mut t.path);
        changed |= t.log.scrub();
    }
    if let Some(h) = r.hold.as_mut() {
        changed |= text(&mut h.words);
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";

    #[test]
    fn the_session_block_loses_its_secrets_and_keeps_its_ids() {
        let mut b = SessionBlock {
            id: format!("s-{TOKEN}"),
            repo: Some(format!(
                "https://github.com/acme/w.git?access_token={TOKEN}"
            )),
            branch: Some(TOKEN.into()),
            cwd: Some("~/work/AKIAIOSFODNN7EXAMPLE/app".into()),
            title: Some(format!("rotate {TOKEN}")),
            parent_id: Some("p-1".into()),
            ..Default::default()
        };
        assert!(block(&mut b));
        assert_eq!(b.repo.as_deref(), Some("https://github.com/acme/w.git"));
        assert_eq!(b.branch.as_deref(), Some("[redacted]"));
        assert!(!b.cwd.as_deref().unwrap().contains("AKIA"), "{:?}", b.cwd);
        assert_eq!(b.title.as_deref(), Some("rotate [redacted]"));
        assert_eq!(b.id, format!("s-{TOKEN}"), "an id is a key, not text");
        assert!(!block(&mut b), "once is enough");
    }

    #[test]
    fn every_string_of_an_envelope_is_scrubbed() {
        let mut env = protocol::test_envelope(
            "turn.transcript",
            serde_json::json!({"turn": 1, "user": format!("my token is {TOKEN}"), "assistant": "ok", "at": "x"}),
        );
        env.session.cwd = Some(format!("~/{TOKEN}"));
        assert!(envelope(&mut env));
        let json = serde_json::to_string(&env).unwrap();
        assert!(!json.contains("ghp_0123"), "{json}");
    }
}
