//! Layer 1, check: checks of one event as it arrived (a JSON value, not the
//! sender's typed envelope) against the envelope's rules (PROTOCOL-NOTES §1–§3,
//! `schemas/event.json`): every member by name, so a rejection says which one.
//! The syntactic rules and the tier table are the protocol crate's, the one
//! copy both sides read.
//!
//! This module owns the per-event verdict (the key to store under, or the reason
//! to reject). It must not look at batch-level concerns (protocol above 1 and tier
//! above `max_tier` refuse the whole batch, see `events`), and it never judges the
//! `data` of a type beyond it being an object: extra keys are kept, unknown types
//! are stored.

use serde_json::{Map, Value};

/// The protocol versions this receiver speaks.
pub const SUPPORTED: &[u64] = &[1];

/// The largest integer JSON carries exactly (the schemas' bound on `seq`).
const MAX_SAFE: u64 = 9_007_199_254_740_991;

/// Why one event is rejected: which member, and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected(pub String);

impl std::fmt::Display for Rejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Rejected {}

impl From<&str> for Rejected {
    fn from(s: &str) -> Self {
        Rejected(s.to_string())
    }
}

/// The dedup key: (harness.name, session.id, seq).
pub type Key = (String, String, u64);

/// The event's `protocol` when it is a non-negative integer (for the batch-level
/// "above what we speak" check, which runs before any event is judged).
pub fn protocol_of(event: &Value) -> Option<u64> {
    event.get("protocol")?.as_u64()
}

/// The event's `tier` when it is a non-negative integer.
pub fn tier_of(event: &Value) -> Option<u64> {
    event.get("tier")?.as_u64()
}

/// The key to store `event` under, or why it is rejected.
pub fn check_event(event: &Value) -> Result<Key, Rejected> {
    let e = event.as_object().ok_or("not an object")?;
    match e.get("protocol").and_then(Value::as_u64) {
        Some(1) => {}
        _ => return Err("protocol: must be the integer 1".into()),
    }
    let id = str_of(e, "id")?;
    if !protocol::valid_ulid(id) {
        return Err("id: not a ULID".into());
    }
    let kind = str_of(e, "type")?;
    if !protocol::valid_type(kind) {
        return Err("type: does not match the type pattern".into());
    }
    if !protocol::valid_time(str_of(e, "time")?) {
        return Err("time: not RFC 3339 UTC with milliseconds".into());
    }
    let tier = match e.get("tier").and_then(Value::as_u64) {
        Some(t) if t <= 3 => t,
        _ => return Err("tier: must be an integer 0-3".into()),
    };
    if let Some(min) = protocol::type_tier(kind).map(u64::from)
        && tier < min
    {
        return Err(Rejected(format!(
            "type: {kind} is never sent below tier {min}"
        )));
    }

    let harness = obj_of(e, "harness")?;
    let name = str_of(harness, "name").map_err(|r| Rejected(format!("harness.{r}")))?;
    if !protocol::valid_harness_name(name) {
        return Err("harness.name: not a registry name".into());
    }
    for k in ["version", "event"] {
        if let Some(v) = harness.get(k) {
            match v.as_str() {
                Some(s) if s.chars().count() <= 64 => {}
                _ => return Err(Rejected(format!("harness.{k}: a string of at most 64"))),
            }
        }
    }

    let session = obj_of(e, "session")?;
    let sid = str_of(session, "id").map_err(|r| Rejected(format!("session.{r}")))?;
    if !protocol::valid_session_id(sid) {
        return Err("session.id: 1-128 characters of [A-Za-z0-9._:-]".into());
    }
    let seq = match session.get("seq").and_then(Value::as_u64) {
        Some(s) if s <= MAX_SAFE => s,
        _ => return Err("session.seq: must be an integer >= 0".into()),
    };
    for (k, max) in protocol::BLOCK_BOUNDS {
        if let Some(v) = session.get(*k) {
            match v.as_str() {
                Some(s) if s.chars().count() <= *max => {}
                _ => return Err(Rejected(format!("session.{k}: a string of at most {max}"))),
            }
        }
    }
    if let Some(v) = session.get("title_source")
        && !matches!(v.as_str(), Some("custom" | "harness" | "first-ask"))
    {
        return Err("session.title_source: custom, harness or first-ask".into());
    }
    match session.get("parent_id") {
        None | Some(Value::Null) => {}
        Some(Value::String(p)) if protocol::valid_session_id(p) => {}
        Some(_) => return Err("session.parent_id: a session id or null".into()),
    }

    let privacy = obj_of(e, "privacy")?;
    let rulesets = privacy
        .get("rulesets")
        .and_then(Value::as_array)
        .ok_or("privacy.rulesets: must be a list")?;
    let mut has_secrets = false;
    for r in rulesets {
        let r = r.as_str().filter(|r| is_ruleset(r));
        let r = r.ok_or("privacy.rulesets: each like name@1")?;
        has_secrets |= r == "secrets@1";
    }
    if !privacy.get("pii").is_some_and(Value::is_boolean) {
        return Err("privacy.pii: must be a boolean".into());
    }
    if tier > 0 && !has_secrets {
        return Err(Rejected(format!("privacy: tier {tier} without secrets@1")));
    }

    if !e.get("data").is_some_and(Value::is_object) {
        return Err("data: must be an object".into());
    }
    Ok((name.to_string(), sid.to_string(), seq))
}

fn str_of<'a>(o: &'a Map<String, Value>, k: &str) -> Result<&'a str, Rejected> {
    match o.get(k) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(Rejected(format!("{k}: must be a string"))),
        None => Err(Rejected(format!("{k}: missing"))),
    }
}

fn obj_of<'a>(o: &'a Map<String, Value>, k: &str) -> Result<&'a Map<String, Value>, Rejected> {
    o.get(k)
        .and_then(Value::as_object)
        .ok_or_else(|| Rejected(format!("{k}: must be an object")))
}

/// `^[a-z][a-z0-9-]*@\d+$`.
fn is_ruleset(r: &str) -> bool {
    let Some((name, version)) = r.split_once('@') else {
        return false;
    };
    is_harness_name_unbounded(name)
        && !version.is_empty()
        && version.bytes().all(|c| c.is_ascii_digit())
}

fn is_harness_name_unbounded(n: &str) -> bool {
    let b = n.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event() -> Value {
        json!({
            "protocol": 1, "id": "01J9ZQ4G8Y3V2N6T0M5K7H1B2C", "type": "session.started",
            "time": "2026-09-28T02:05:03.861Z", "tier": 0,
            "harness": {"name": "claude-code", "event": "SessionStart"},
            "session": {
                "id": "abc-1", "seq": 0, "cwd": "~/x", "parent_id": null,
                "title_source": "harness"
            },
            "privacy": {"rulesets": ["secrets@1"], "pii": false},
            "data": {"source": "startup", "extra": [1, 2]}
        })
    }

    fn with(path: &str, v: Value) -> Value {
        let mut e = event();
        *e.pointer_mut(path).unwrap() = v;
        e
    }

    #[test]
    fn a_good_event_gives_its_key() {
        let key = check_event(&event()).unwrap();
        assert_eq!(key, ("claude-code".into(), "abc-1".into(), 0));
        assert!(
            check_event(&with("/type", json!("x.y"))).is_ok(),
            "unknown types"
        );
    }

    #[test]
    fn each_rule_names_the_member() {
        let cases = [
            ("/protocol", json!(0), "protocol"),
            ("/id", json!("01J9ZQ4G8Y3V2N6T0M5K7H1B2I"), "id"),
            ("/type", json!("Session.started"), "type"),
            ("/time", json!("2026-02-30T02:05:03.861Z"), "time"),
            ("/time", json!("2026-09-28T02:05:03Z"), "time"),
            ("/tier", json!(4), "tier"),
            ("/harness/name", json!("Claude"), "harness.name"),
            ("/session/id", json!("a/b"), "session.id"),
            ("/session/seq", json!(-1), "session.seq"),
            ("/session/seq", json!(1.5), "session.seq"),
            ("/session/title_source", json!("me"), "session.title_source"),
            ("/privacy/rulesets", json!(["Secrets"]), "privacy.rulesets"),
            ("/privacy/pii", json!("no"), "privacy.pii"),
            ("/data", json!([]), "data"),
        ];
        for (path, v, member) in cases {
            let why = check_event(&with(path, v)).unwrap_err();
            assert!(why.0.starts_with(member), "{path}: {why}");
        }
    }

    #[test]
    fn tier_rules() {
        let mut e = with("/type", json!("tool.ended"));
        assert!(check_event(&e).unwrap_err().0.contains("below tier 1"));
        e["tier"] = json!(1);
        assert!(check_event(&e).is_ok());
        e["privacy"]["rulesets"] = json!([]);
        assert!(check_event(&e).unwrap_err().0.contains("secrets@1"));
    }

    #[test]
    fn times_and_types() {
        assert!(protocol::valid_time("2024-02-29T23:59:59.999Z"));
        assert!(!protocol::valid_time("2023-02-29T00:00:00.000Z"));
        assert!(!protocol::valid_time("2024-01-01T24:00:00.000Z"));
        assert!(!protocol::valid_time("2024-01-01T00:00:00.000+00:00"));
        for ok in ["native", "a.b", "x1.y_2.z"] {
            assert!(protocol::valid_type(ok), "{ok}");
        }
        for bad in ["a", "a.", ".a", "a.B", "a_b.c", "a.b-c"] {
            assert!(!protocol::valid_type(bad), "{bad}");
        }
    }
}
