//! What each control body must be (`schemas/control-*.json`, PROTOCOL-NOTES §6),
//! checked on the JSON value as it arrived so that a refusal names the member.
//!
//! This module owns the shapes only: required members, patterns and bounds
//! (the test doors' bodies in a build with them only). It
//! must not look at state (is the machine known, is the pairing pending: the store
//! and `http` decide) and it never judges a `cmd`: the receiver carries it byte for
//! byte and the machine verifies it. Members the schemas do not name are allowed
//! and kept, as the schemas allow them.

use serde_json::{Map, Value};

#[cfg(feature = "test-doors")]
/// The longest `cmd` the protocol allows (PROTOCOL-NOTES §6; the poll schema's
/// 12 000 predates the raise).
pub const CMD_MAX: usize = 48_000;

/// The most acks one `POST {control}/ack` may carry: a machine acks what one poll
/// brought, and a poll brings at most `POLL_MAX` messages.
pub const ACKS_MAX: usize = 100;

#[cfg(feature = "test-doors")]
/// The longest an envelope may live: `expires_at` ≤ 24 h after `at`.
pub const EXPIRES_MAX_S: u64 = 24 * 3600;

/// The largest integer JSON carries exactly (the schemas' bound on `seq`).
const MAX_SAFE: u64 = 9_007_199_254_740_991;

/// Which member is wrong, and how.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Malformed(pub String);

impl From<&str> for Malformed {
    fn from(s: &str) -> Self {
        Malformed(s.to_string())
    }
}

/// An ack's outcome (`control-ack.json`). Only `progress` and `taken` are not
/// final.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Progress,
    Taken,
    Delivered,
    Expired,
    Unsupported,
    Failed,
    Refused,
}

impl Outcome {
    fn from_word(w: &str) -> Option<Outcome> {
        Some(match w {
            "progress" => Outcome::Progress,
            "taken" => Outcome::Taken,
            "delivered" => Outcome::Delivered,
            "expired" => Outcome::Expired,
            "unsupported" => Outcome::Unsupported,
            "failed" => Outcome::Failed,
            "refused" => Outcome::Refused,
            _ => return None,
        })
    }

    pub fn is_final(self) -> bool {
        !matches!(self, Outcome::Progress | Outcome::Taken)
    }
}

/// One ack as checked: what the store acts on, and the whole ack as sent (kept
/// for the read door).
#[derive(Clone, Debug, PartialEq)]
pub struct Ack {
    pub id: String,
    pub outcome: Outcome,
    pub seq: Option<u64>,
    pub reply: Option<String>,
    pub raw: Value,
}

/// A `POST {control}/pair` body as checked.
#[derive(Clone, Debug, PartialEq)]
pub struct PairRequest {
    /// Set when the pairing adds a key to a machine already paired.
    pub machine: Option<String>,
    pub name: String,
    /// The open pairing's secret; the store keeps only its hash.
    pub poll_key: Option<String>,
    /// The body without `poll_key`, as kept.
    pub kept: Value,
}

/// A message to queue, as checked (the enqueue door's) or built (the page's).
#[derive(Clone, Debug, PartialEq)]
pub struct NewMessage {
    pub machine: String,
    pub cmd: String,
    pub csig: Option<String>,
    pub grant: Option<Value>,
    pub confirm: Option<Value>,
    pub expires_in_s: u64,
}

#[cfg(feature = "test-doors")]
/// An approval through the test door, as checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Approval {
    pub code: String,
    pub key: Value,
    pub proof: Value,
    pub account: Option<String>,
}

fn object<'a>(v: &'a Value, what: &str) -> Result<&'a Map<String, Value>, Malformed> {
    v.as_object()
        .ok_or_else(|| Malformed(format!("{what} must be a JSON object")))
}

fn string<'a>(o: &'a Map<String, Value>, k: &str) -> Result<Option<&'a str>, Malformed> {
    match o.get(k) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(Malformed(format!("{k}: must be a string"))),
    }
}

fn required<'a>(o: &'a Map<String, Value>, k: &str) -> Result<&'a str, Malformed> {
    string(o, k)?.ok_or_else(|| Malformed(format!("{k}: missing")))
}

/// A string of `min..=max` characters.
fn bounded(s: &str, k: &str, min: usize, max: usize) -> Result<(), Malformed> {
    let n = s.chars().count();
    if n < min || n > max {
        return Err(Malformed(format!("{k}: {min}-{max} characters")));
    }
    Ok(())
}

/// `^[A-Za-z0-9_-]*$`.
pub fn is_b64url(s: &str) -> bool {
    s.bytes()
        .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
}

/// `^m_[A-Za-z0-9_-]{16,40}$`.
pub fn valid_machine_id(s: &str) -> bool {
    s.strip_prefix("m_")
        .is_some_and(|r| (16..=40).contains(&r.len()) && is_b64url(r))
}

/// `^[a-z][a-z0-9-]{0,39}:[A-Za-z0-9._:-]{1,128}$`.
fn valid_session_ref(s: &str) -> bool {
    s.split_once(':')
        .is_some_and(|(h, id)| protocol::valid_harness_name(h) && protocol::valid_session_id(id))
}

/// A list of at most `max` items, each checked by `each`.
fn list(
    o: &Map<String, Value>,
    k: &str,
    max: usize,
    each: impl Fn(&Value) -> bool,
    rule: &str,
) -> Result<(), Malformed> {
    let Some(v) = o.get(k) else {
        return Ok(());
    };
    let items = v
        .as_array()
        .ok_or_else(|| Malformed(format!("{k}: must be a list")))?;
    if items.len() > max {
        return Err(Malformed(format!("{k}: at most {max} items")));
    }
    if !items.iter().all(each) {
        return Err(Malformed(format!("{k}: each {rule}")));
    }
    Ok(())
}

fn str_item(f: impl Fn(&str) -> bool) -> impl Fn(&Value) -> bool {
    move |v| v.as_str().is_some_and(&f)
}

const MODES: &[&str] = &["sdk", "waiter", "turn", "api", "resume", "fork"];

/// The members a pair body and a hello share: `name`, `harnesses`, `modes`,
/// `version` (required), `folders`, `mode` (optional).
fn machine_facts(o: &Map<String, Value>) -> Result<(), Malformed> {
    bounded(required(o, "name")?, "name", 1, 80)?;
    for k in ["harnesses", "modes"] {
        if !o.contains_key(k) {
            return Err(Malformed(format!("{k}: missing")));
        }
    }
    list(
        o,
        "harnesses",
        20,
        str_item(protocol::valid_harness_name),
        "a harness name",
    )?;
    list(
        o,
        "modes",
        MODES.len(),
        str_item(|m| MODES.contains(&m)),
        "one of sdk, waiter, turn, api, resume, fork",
    )?;
    bounded(required(o, "version")?, "version", 0, 40)?;
    list(
        o,
        "folders",
        50,
        str_item(|f| f.chars().count() <= 1024),
        "a string of at most 1024",
    )?;
    if let Some(m) = string(o, "mode")?
        && !matches!(m, "safe" | "auto")
    {
        return Err("mode: safe or auto".into());
    }
    Ok(())
}

/// `control-hello.json`.
pub fn hello(v: &Value) -> Result<(), Malformed> {
    let o = object(v, "a hello")?;
    machine_facts(o)?;
    if !o.contains_key("keys") {
        return Err("keys: missing".into());
    }
    list(
        o,
        "keys",
        50,
        str_item(|k| (16..=1400).contains(&k.len()) && is_b64url(k)),
        "a key id (16-1400 base64url)",
    )?;
    list(
        o,
        "waiting",
        500,
        str_item(valid_session_ref),
        "<harness>:<session id>",
    )?;
    list(o, "accounts", 20, account_ok, "{harness, id, email?}")?;
    list(
        o,
        "cancels",
        100,
        str_item(valid_session_ref),
        "<harness>:<session id>",
    )?;
    if o.get("files").is_some_and(|f| !f.is_boolean()) {
        return Err("files: a boolean".into());
    }
    // The tier this machine's events reach the receiver at (the page says
    // when it is 0); an extension member, so absent is fine.
    if o.get("tier")
        .is_some_and(|t| t.as_u64().is_none_or(|t| t > 3))
    {
        return Err("tier: 0, 1, 2 or 3".into());
    }
    Ok(())
}

fn account_ok(v: &Value) -> bool {
    let Some(a) = v.as_object() else {
        return false;
    };
    let harness = a
        .get("harness")
        .and_then(Value::as_str)
        .is_some_and(protocol::valid_harness_name);
    let id = a
        .get("id")
        .and_then(Value::as_str)
        .is_some_and(|s| (1..=128).contains(&s.chars().count()));
    let email = match a.get("email") {
        None => true,
        Some(e) => e.as_str().is_some_and(|s| s.chars().count() <= 254),
    };
    harness && id && email
}

/// `control-pair.json`, plus the open pairing's `poll_key`.
pub fn pair_request(v: &Value) -> Result<PairRequest, Malformed> {
    let o = object(v, "a pairing request")?;
    machine_facts(o)?;
    let machine = string(o, "machine")?.map(str::to_string);
    if machine.as_deref().is_some_and(|m| !valid_machine_id(m)) {
        return Err("machine: m_ then 16-40 base64url characters".into());
    }
    let poll_key = string(o, "poll_key")?.map(str::to_string);
    let key_ok = |k: &str| (16..=256).contains(&k.len()) && k.bytes().all(|c| c.is_ascii_graphic());
    if poll_key.as_deref().is_some_and(|k| !key_ok(k)) {
        return Err("poll_key: 16-256 visible ASCII characters".into());
    }
    let mut kept = o.clone();
    kept.remove("poll_key");
    Ok(PairRequest {
        machine,
        name: required(o, "name")?.to_string(),
        poll_key,
        kept: Value::Object(kept),
    })
}

#[cfg(feature = "test-doors")]
/// `control-key.json`: `{id, alg (-7 or -257), spki}`.
pub fn key(v: &Value) -> Result<(), Malformed> {
    let o = object(v, "key")?;
    let id = required(o, "id").map_err(|e| Malformed(format!("key.{e}")))?;
    if !(16..=1400).contains(&id.len()) || !is_b64url(id) {
        return Err("key.id: 16-1400 base64url characters".into());
    }
    if !matches!(o.get("alg").and_then(Value::as_i64), Some(-7 | -257)) {
        return Err("key.alg: -7 or -257".into());
    }
    let spki = required(o, "spki").map_err(|e| Malformed(format!("key.{e}")))?;
    if spki.is_empty() || !is_b64url(spki) {
        return Err("key.spki: base64url".into());
    }
    Ok(())
}

#[cfg(feature = "test-doors")]
/// An assertion `{cred, ad, cd, sig}`, each non-empty base64url; with `str` (a
/// grant's, 1-2000 characters) when `with_str`.
pub fn assertion(v: &Value, what: &str, with_str: bool) -> Result<(), Malformed> {
    let o = object(v, what)?;
    for k in ["cred", "ad", "cd", "sig"] {
        let s = required(o, k).map_err(|e| Malformed(format!("{what}.{e}")))?;
        if s.is_empty() || !is_b64url(s) {
            return Err(Malformed(format!("{what}.{k}: non-empty base64url")));
        }
    }
    if with_str {
        let s = required(o, "str").map_err(|e| Malformed(format!("{what}.{e}")))?;
        bounded(s, &format!("{what}.str"), 1, 2000)?;
    }
    Ok(())
}

/// `{"acks": [...]}` (`control-ack.json`), 1 to `ACKS_MAX` of them.
pub fn acks(v: &Value) -> Result<Vec<Ack>, Malformed> {
    let o = object(v, "an ack body")?;
    let list = o
        .get("acks")
        .and_then(Value::as_array)
        .ok_or("acks: must be a list")?;
    if list.is_empty() || list.len() > ACKS_MAX {
        return Err(Malformed(format!("acks: 1-{ACKS_MAX} items")));
    }
    list.iter()
        .enumerate()
        .map(|(i, a)| one_ack(a).map_err(|e| Malformed(format!("acks[{i}].{e}"))))
        .collect()
}

fn one_ack(v: &Value) -> Result<Ack, Malformed> {
    let o = object(v, "an ack")?;
    let id = required(o, "id")?;
    if !protocol::valid_ulid(id) {
        return Err("id: not a ULID".into());
    }
    let outcome = Outcome::from_word(required(o, "outcome")?)
        .ok_or("outcome: progress, taken, delivered, expired, unsupported, failed or refused")?;
    if !protocol::valid_time(required(o, "at")?) {
        return Err("at: RFC 3339 UTC with milliseconds".into());
    }
    if let Some(m) = string(o, "mode")?
        && !MODES.contains(&m)
    {
        return Err("mode: sdk, waiter, turn, api, resume or fork".into());
    }
    if let Some(s) = string(o, "session")?
        && !valid_session_ref(s)
    {
        return Err("session: <harness>:<session id>".into());
    }
    let code_ok = |c: &str| {
        (1..=40).contains(&c.len()) && c.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
    };
    if string(o, "code")?.is_some_and(|c| !code_ok(c)) {
        return Err("code: 1-40 of [a-z_]".into());
    }
    if let Some(d) = string(o, "detail")? {
        bounded(d, "detail", 0, 500)?;
    }
    let reply = string(o, "reply")?;
    if let Some(r) = reply {
        bounded(r, "reply", 0, 20_000)?;
    }
    let seq = match o.get("seq") {
        None => None,
        Some(s) => Some(
            s.as_u64()
                .filter(|s| *s <= MAX_SAFE)
                .ok_or("seq: an integer >= 0")?,
        ),
    };
    Ok(Ack {
        id: id.to_string(),
        outcome,
        seq,
        reply: reply.map(str::to_string),
        raw: v.clone(),
    })
}

#[cfg(feature = "test-doors")]
/// The enqueue door's body: `{machine, cmd, csig?, grant?, confirm?,
/// expires_in_s?}`. `cmd` is any non-empty string up to `CMD_MAX` characters:
/// whether it is a good command is the machine's to say.
pub fn new_message(v: &Value, default_expiry_s: u64) -> Result<NewMessage, Malformed> {
    let o = object(v, "a message")?;
    let machine = required(o, "machine")?;
    if !valid_machine_id(machine) {
        return Err("machine: m_ then 16-40 base64url characters".into());
    }
    let cmd = required(o, "cmd")?;
    bounded(cmd, "cmd", 1, CMD_MAX)?;
    let csig = match o.get("csig") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if is_b64url(s) => Some(s.clone()),
        Some(_) => return Err("csig: base64url".into()),
    };
    let part = |k: &str, with_str: bool| -> Result<Option<Value>, Malformed> {
        match o.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(g) => assertion(g, k, with_str).map(|()| Some(g.clone())),
        }
    };
    let grant = part("grant", true)?;
    let confirm = part("confirm", false)?;
    let expires_in_s = match o.get("expires_in_s") {
        None => default_expiry_s,
        Some(s) => s
            .as_u64()
            .filter(|s| (1..=EXPIRES_MAX_S).contains(s))
            .ok_or_else(|| Malformed(format!("expires_in_s: 1-{EXPIRES_MAX_S}")))?,
    };
    Ok(NewMessage {
        machine: machine.to_string(),
        cmd: cmd.to_string(),
        csig,
        grant,
        confirm,
        expires_in_s,
    })
}

#[cfg(feature = "test-doors")]
/// The approve door's body: `{code, key, proof, account?}`.
pub fn approval(v: &Value) -> Result<Approval, Malformed> {
    let o = object(v, "an approval")?;
    let code = required(o, "code")?;
    key(o.get("key").ok_or("key: missing")?)?;
    assertion(o.get("proof").ok_or("proof: missing")?, "proof", false)?;
    let account = string(o, "account")?;
    if let Some(a) = account {
        bounded(a, "account", 1, 200)?;
    }
    Ok(Approval {
        code: code.to_string(),
        key: o["key"].clone(),
        proof: o["proof"].clone(),
        account: account.map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hello_body() -> Value {
        json!({
            "name": "misha-air", "harnesses": ["claude-code"], "modes": ["turn", "resume"],
            "keys": ["AAAAAAAAAAAAAAAAAAAA"], "version": "0.1.0", "waiting": ["claude-code:abc"],
            "folders": ["~/src"], "mode": "safe", "accounts": [{"harness": "codex", "id": "x"}],
            "pool": {"anything": true}, "tier": 1, "cancels": ["claude-code:abc"]
        })
    }

    #[test]
    fn a_hello_names_what_is_wrong() {
        assert_eq!(hello(&hello_body()), Ok(()));
        let cases = [
            ("/name", json!(""), "name"),
            ("/harnesses", json!(["Claude"]), "harnesses"),
            ("/modes", json!(["telepathy"]), "modes"),
            ("/keys", json!(["short"]), "keys"),
            ("/version", json!(7), "version"),
            ("/waiting", json!(["no-colon"]), "waiting"),
            ("/mode", json!("yolo"), "mode"),
            ("/accounts", json!([{"id": "x"}]), "accounts"),
            ("/tier", json!(4), "tier"),
            ("/cancels", json!(["no-colon"]), "cancels"),
            ("/tier", json!("1"), "tier"),
        ];
        for (path, v, member) in cases {
            let mut h = hello_body();
            *h.pointer_mut(path).unwrap() = v;
            let why = hello(&h).unwrap_err();
            assert!(why.0.starts_with(member), "{path}: {why}");
        }
        for k in ["name", "harnesses", "modes", "keys", "version"] {
            let mut h = hello_body();
            h.as_object_mut().unwrap().remove(k);
            assert_eq!(hello(&h), Err(Malformed(format!("{k}: missing"))));
        }
    }

    #[test]
    fn acks_are_checked_one_by_one() {
        let ok = json!({"acks": [
            {"id": "01K6ZT0000000000000000000A", "outcome": "progress", "at": "2026-10-08T09:14:02.110Z",
             "seq": 3, "reply": "so far"},
            {"id": "01K6ZT0000000000000000000B", "outcome": "refused", "at": "2026-10-08T09:14:02.110Z",
             "code": "start_limit", "detail": "two running"}
        ]});
        let acks = acks(&ok).unwrap();
        assert_eq!(acks[0].outcome, Outcome::Progress);
        assert_eq!(
            (acks[0].seq, acks[0].reply.as_deref()),
            (Some(3), Some("so far"))
        );
        assert!(acks[1].outcome.is_final() && !Outcome::Taken.is_final());
        let bad = |ack: Value| super::acks(&json!({"acks": [ack]})).unwrap_err().0;
        let base = json!({"id": "01K6ZT0000000000000000000A", "outcome": "taken", "at": "2026-10-08T09:14:02.110Z"});
        let with = |k: &str, v: Value| {
            let mut a = base.clone();
            a[k] = v;
            a
        };
        assert!(bad(with("outcome", json!("done"))).starts_with("acks[0].outcome"));
        assert!(bad(with("id", json!("x"))).starts_with("acks[0].id"));
        assert!(bad(with("at", json!("2026-10-08T09:14:02Z"))).starts_with("acks[0].at"));
        assert!(bad(with("code", json!("Start-Limit"))).starts_with("acks[0].code"));
        assert!(bad(with("seq", json!(-1))).starts_with("acks[0].seq"));
        assert!(bad(with("mode", json!("fax"))).starts_with("acks[0].mode"));
        assert!(super::acks(&json!({"acks": []})).is_err());
    }

    #[test]
    fn pairing_and_messages() {
        let mut body = hello_body();
        body.as_object_mut().unwrap().remove("keys");
        body["poll_key"] = json!("k".repeat(43));
        let p = pair_request(&body).unwrap();
        assert_eq!(p.poll_key.as_deref(), Some("k".repeat(43).as_str()));
        assert!(p.kept.get("poll_key").is_none(), "never kept");
        body["poll_key"] = json!("short");
        assert!(pair_request(&body).unwrap_err().0.starts_with("poll_key"));
        body["poll_key"] = json!("k".repeat(43));
        body["machine"] = json!("m_short");
        assert!(pair_request(&body).unwrap_err().0.starts_with("machine"));

        let m = json!({"machine": "m_AAAAAAAAAAAAAAAAAAAAAA", "cmd": "{\"v\":1}", "csig": "abc",
                       "grant": {"str": "{}", "cred": "a", "ad": "b", "cd": "c", "sig": "d"}});
        let n = new_message(&m, 60).unwrap();
        assert_eq!((n.expires_in_s, n.cmd.as_str()), (60, "{\"v\":1}"));
        let mut over = m.clone();
        over["expires_in_s"] = json!(EXPIRES_MAX_S + 1);
        assert!(
            new_message(&over, 60)
                .unwrap_err()
                .0
                .starts_with("expires_in_s")
        );
        let mut long = m.clone();
        long["cmd"] = json!("x".repeat(CMD_MAX + 1));
        assert!(new_message(&long, 60).unwrap_err().0.starts_with("cmd"));
        let mut torn = m;
        torn["grant"]["sig"] = json!("");
        assert!(
            new_message(&torn, 60)
                .unwrap_err()
                .0
                .starts_with("grant.sig")
        );
    }
}
