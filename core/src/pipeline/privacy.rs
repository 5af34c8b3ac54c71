//! `filter(event, tier, pii)`: what a destination at a tier may see of an event.
//!
//! A pure allowlist per event type (`protocol::field_tier`): a type above the tier
//! drops the event, a field not named for the tier is dropped, an unknown type or
//! field never passes. With `pii`, `pii@1` runs on every string, the machine name
//! becomes a hash and the account id is dropped. `secrets@1` already ran on every
//! stored event (see `ingest`), so every filtered event says so.

use protocol::{Envelope, field_tier, type_tier};
use serde_json::Value;

/// The view of `env` at `tier` (0–3), or `None` when the tier does not carry it.
pub fn filter(env: &Envelope, tier: u8, pii: bool, home: Option<&str>) -> Option<Envelope> {
    carried(env, tier)?;
    filter_owned(env.clone(), tier, pii, home)
}

/// `filter` of an envelope the caller no longer needs (a sink's batch, each
/// envelope just read): the view is made in place, without a copy.
pub fn filter_owned(
    mut env: Envelope,
    tier: u8,
    pii: bool,
    home: Option<&str>,
) -> Option<Envelope> {
    carried(&env, tier)?;
    env.tier = tier;
    if env.kind != "native" {
        let kind = &env.kind;
        env.data
            .retain(|field, _| field_tier(kind, field).is_some_and(|t| t <= tier));
    }
    env.privacy.rulesets = vec!["secrets@1".to_string()];
    env.privacy.pii = pii;
    if pii {
        env.privacy.rulesets.push("pii@1".to_string());
        apply_pii(&mut env, home);
    }
    Some(env)
}

/// Whether `tier` carries an event of `env`'s type at all.
fn carried(env: &Envelope, tier: u8) -> Option<()> {
    let min = type_tier(&env.kind)?;
    // A heartbeat stands in for the actions a tier-0 destination cannot see; a
    // destination that sees them has no use for it (PROTOCOL-NOTES §3).
    (min <= tier && !(env.kind == "session.heartbeat" && tier > 0)).then_some(())
}

fn apply_pii(env: &mut Envelope, home: Option<&str>) {
    let clean = |s: &str| redact::pii(s, home).into_owned();
    for v in env.data.values_mut() {
        redact::map_strings(v, &|s| redact::pii(s, home));
    }
    let s = &mut env.session;
    for field in [
        &mut s.cwd,
        &mut s.repo,
        &mut s.branch,
        &mut s.title,
        &mut s.url,
    ] {
        if let Some(v) = field.as_mut() {
            *v = clean(v);
        }
    }
    s.machine = s.machine.as_deref().map(redact::machine_hash);
    s.account_id = None;
    // limits.observed names the account in its data too.
    env.data.remove("account_id");
}

/// The string values of an event's data, for tests and summaries.
pub fn data_strings(env: &Envelope) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            Value::Object(m) => m.values().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    env.data.values().for_each(|v| walk(v, &mut out));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::test_envelope;
    use serde_json::json;

    fn env(kind: &str, data: Value) -> Envelope {
        let mut e = test_envelope(kind, data);
        e.session.machine = Some("ann-laptop".into());
        e.session.account_id = Some("acct-1".into());
        e.session.title = Some("mail ann@example.com".into());
        e.privacy.rulesets = vec!["secrets@1".into()];
        e
    }

    fn keys(e: &Envelope) -> Vec<String> {
        e.data.keys().cloned().collect()
    }

    #[test]
    fn tool_events_by_tier() {
        let e = env(
            "tool.ended",
            json!({"tool": "Bash", "call_id": "c", "ms": 3, "ok": true, "input": {"command": "ls"}, "output": "x", "surprise": 1}),
        );
        assert!(filter(&e, 0, false, None).is_none());
        assert_eq!(
            keys(&filter(&e, 1, false, None).unwrap()),
            ["tool", "call_id", "ms", "ok"]
        );
        assert_eq!(
            keys(&filter(&e, 2, false, None).unwrap()),
            ["tool", "call_id", "ms", "ok"]
        );
        let full = filter(&e, 3, false, None).unwrap();
        assert_eq!(
            keys(&full),
            ["tool", "call_id", "ms", "ok", "input", "output"]
        );
        assert_eq!(full.tier, 3);
    }

    #[test]
    fn per_type_fields_at_each_tier() {
        let started = env(
            "turn.started",
            json!({"turn_id": "t", "prompt_chars": 5, "injected": true}),
        );
        assert_eq!(
            keys(&filter(&started, 0, false, None).unwrap()),
            ["turn_id"]
        );
        assert_eq!(
            keys(&filter(&started, 1, false, None).unwrap()),
            ["turn_id", "prompt_chars", "injected"]
        );
        let att = env(
            "attention.needed",
            json!({"attention_id": "a", "kind": "permission", "tool": "Bash", "message": "Bash ls"}),
        );
        assert_eq!(
            keys(&filter(&att, 0, false, None).unwrap()),
            ["attention_id", "kind"]
        );
        let tr = env(
            "turn.transcript",
            json!({"turn": 1, "user": "u", "assistant": "a", "at": "x"}),
        );
        assert!(filter(&tr, 1, false, None).is_none());
        assert_eq!(filter(&tr, 2, false, None).unwrap().tier, 2);
    }

    #[test]
    fn heartbeats_only_below_tier_one() {
        let hb = env("session.heartbeat", json!({}));
        assert!(filter(&hb, 0, false, None).is_some());
        assert!(filter(&hb, 1, false, None).is_none());
    }

    #[test]
    fn unknown_types_never_pass() {
        assert!(filter(&env("custom.thing", json!({"a": 1})), 3, false, None).is_none());
    }

    #[test]
    fn pii_hashes_the_machine_drops_the_account_and_cleans_strings() {
        let e = env(
            "attention.needed",
            json!({"attention_id": "a", "kind": "question", "message": "write to bob@example.org"}),
        );
        let f = filter(&e, 1, true, None).unwrap();
        assert_eq!(f.privacy.rulesets, ["secrets@1", "pii@1"]);
        assert!(f.privacy.pii);
        assert_eq!(f.session.account_id, None);
        let machine = f.session.machine.unwrap();
        assert_eq!(machine.len(), 8);
        assert_ne!(machine, "ann-laptop");
        assert!(!f.data["message"].as_str().unwrap().contains("bob@"));
        assert!(!f.session.title.unwrap().contains("ann@"));
        let limits = env(
            "limits.observed",
            json!({"account_id": "acct-1", "windows": []}),
        );
        assert!(
            filter(&limits, 0, true, None)
                .unwrap()
                .data
                .get("account_id")
                .is_none()
        );
        assert_eq!(
            filter(&limits, 0, false, None).unwrap().data["account_id"],
            "acct-1"
        );
        let plain = filter(&e, 1, false, None).unwrap();
        assert_eq!(plain.session.machine.as_deref(), Some("ann-laptop"));
    }
}
