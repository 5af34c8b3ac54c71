//! The command string (`cmd`) read from its exact bytes into a [`Command`],
//! with the shape checks in the order their codes come: malformed,
//! not_a_command, wrong_machine, unknown_kind, bad_session, bad_fields,
//! bad_nonce. Nothing here looks at a signature or a clock; `verify` runs
//! those after, on the same bytes.
//!
//! Each member's refusal is the code of the step that owns it. A member every
//! command carries (`v`, `t`, `machine`, `kind`, `session`, `nonce`, `iat`)
//! of the wrong JSON type makes the string no well-formed command, whatever
//! its kind: `malformed`, step 1, before any value is judged. Its value (or
//! its absence) is then its own step's: `v`/`t` `not_a_command`, `machine`
//! `wrong_machine`, `kind` `unknown_kind`, `session` `bad_session` (the
//! form, the key store, the harness's id rule: `session_ids`), `iat` outside
//! 1..2^53 − 1 `bad_fields` (the schema's bounds), `nonce` `bad_nonce`. The
//! members a kind adds and the optional `note` are content: `bad_fields`,
//! their types included.

use crate::files::{self, FileRef};
use crate::json;
use crate::keys::{ES256, RS256, TrustedKey, is_b64url};
use crate::refusal::Refusal;
use crate::session_ids;
use protocol::Level;
use serde_json::{Map, Value};

/// The whole command string, in characters.
pub const MAX_COMMAND_CHARS: usize = 48_000;
/// A `prompt`'s or `start`'s text, in characters.
pub const MAX_TEXT_CHARS: usize = 20_000;
pub const MAX_NOTE_CHARS: usize = 2_000;
/// `for`, an attention id (the command schema's bound).
pub const MAX_FOR_CHARS: usize = 128;
/// `cwd` (the command schema's bound).
pub const MAX_CWD_CHARS: usize = 1_024;
/// A `key.add`'s `name` (the command schema's bound).
pub const MAX_KEY_NAME_CHARS: usize = 80;
/// The only session a `key.add` may name, and the only kind it takes.
pub const KEYS_SESSION: &str = "sessionpipe:keys";
/// The largest `iat` (2^53 − 1, what a JavaScript device can write exactly).
const MAX_IAT: i64 = 9_007_199_254_740_991;

/// A verified command, as the daemon acts on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    pub machine: String,
    pub session: SessionRef,
    pub nonce: String,
    /// When the device signed it, epoch ms on the device's clock.
    pub iat_ms: i64,
    pub note: Option<String>,
    pub body: Body,
}

impl Command {
    /// The protocol's name of the kind (`prompt`, `permission.answer`, …).
    pub fn kind(&self) -> &'static str {
        self.body.kind()
    }
}

/// `<harness>:<id>`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionRef {
    pub harness: String,
    pub id: String,
}

impl std::fmt::Display for SessionRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.harness, self.id)
    }
}

/// What the command asks, by kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    Prompt {
        text: String,
    },
    Start {
        text: String,
        cwd: String,
        /// Empty when the command has no `files`.
        files: Vec<FileRef>,
        /// The permission level asked for (`read` · `safe` · `edits` ·
        /// `auto`); `None`: the machine's default.
        level: Option<Level>,
        /// A model id for the harness; `None`: its own default.
        model: Option<String>,
    },
    PermissionAnswer {
        for_attention: String,
        decision: Decision,
    },
    Cancel,
    KeyAdd {
        key: TrustedKey,
        name: Option<String>,
    },
}

impl Body {
    pub fn kind(&self) -> &'static str {
        match self {
            Body::Prompt { .. } => "prompt",
            Body::Start { .. } => "start",
            Body::PermissionAnswer { .. } => "permission.answer",
            Body::Cancel => "cancel",
            Body::KeyAdd { .. } => "key.add",
        }
    }
}

/// A `permission.answer`'s `decision`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Deny,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Deny => "deny",
        }
    }
}

/// Members every kind carries (`note` is optional on every kind).
const COMMON: &[&str] = &[
    "v", "t", "machine", "kind", "session", "nonce", "iat", "note",
];

/// The kinds and the members each adds to [`COMMON`].
const KINDS: &[(&str, &[&str])] = &[
    ("prompt", &["text"]),
    ("start", &["text", "cwd", "files", "level", "model"]),
    ("permission.answer", &["for", "decision"]),
    ("cancel", &[]),
    ("key.add", &["key", "name"]),
];

/// Reads `cmd` into a command for `machine`, or says which shape check failed.
pub(crate) fn parse(cmd: &str, machine: &str) -> Result<Command, Refusal> {
    if cmd.chars().count() > MAX_COMMAND_CHARS {
        return Err(Refusal::Malformed);
    }
    let map = json::object(cmd).map_err(|_| Refusal::Malformed)?;
    if !envelope_typed(&map) {
        return Err(Refusal::Malformed);
    }

    if map.get("v").and_then(Value::as_f64) != Some(1.0)
        || map.get("t").and_then(Value::as_str) != Some("sessionpipe.control")
    {
        return Err(Refusal::NotACommand);
    }

    match map.get("machine").and_then(Value::as_str) {
        Some(m) if valid_machine_id(m) && m == machine => {}
        _ => return Err(Refusal::WrongMachine),
    }

    let kind = map.get("kind").and_then(Value::as_str);
    let (kind, extra) = KINDS
        .iter()
        .find(|(k, _)| Some(*k) == kind)
        .ok_or(Refusal::UnknownKind)?;

    let session = map
        .get("session")
        .and_then(Value::as_str)
        .and_then(parse_session)
        .ok_or(Refusal::BadSession)?;
    // The key store is a session of its own: it takes key.add and nothing
    // else, key.add goes nowhere else, and the harness name is ours alone.
    let reserved = session.harness == "sessionpipe";
    let key_store = reserved && session.id == "keys";
    if (*kind == "key.add") != key_store || (reserved && !key_store) {
        return Err(Refusal::BadSession);
    }
    if !reserved && !session_ids::follows_rule(&session.harness, &session.id) {
        return Err(Refusal::BadSession);
    }

    if let Some(foreign) = map
        .keys()
        .find(|k| !COMMON.contains(&k.as_str()) && !extra.contains(&k.as_str()))
    {
        return Err(Refusal::BadFields(format!(
            "{foreign} is foreign to {kind}"
        )));
    }
    let iat_ms = map
        .get("iat")
        .and_then(integer)
        .filter(|iat| (1..=MAX_IAT).contains(iat))
        .ok_or_else(|| bad("iat is not an integer from 1 to 2^53 − 1"))?;
    let note = match map.get("note") {
        None => None,
        Some(Value::String(n)) if n.chars().count() <= MAX_NOTE_CHARS => Some(n.clone()),
        Some(_) => return Err(bad("note is not a string of at most 2000 characters")),
    };
    let body = body(kind, &map)?;

    let nonce = map
        .get("nonce")
        .and_then(Value::as_str)
        .filter(|n| is_b64url(n, 22, 64))
        .ok_or(Refusal::BadNonce)?;

    Ok(Command {
        machine: machine.to_string(),
        session,
        nonce: nonce.to_string(),
        iat_ms,
        note,
        body,
    })
}

/// Whether each member every command carries, where present, is of its JSON
/// type (`schemas/control-command.json`): `v` a number, `iat` an integer,
/// the rest strings. Absent members are their own steps' to refuse.
fn envelope_typed(map: &Map<String, Value>) -> bool {
    let typed = |member: &str, of_type: fn(&Value) -> bool| map.get(member).is_none_or(of_type);
    typed("v", Value::is_number)
        && ["t", "machine", "kind", "session", "nonce"]
            .iter()
            .all(|m| typed(m, Value::is_string))
        && typed("iat", is_integer)
}

/// An integer as JSON Schema counts one: a number with no fractional part
/// (`1790800000000`, and `1790800000000.0` too; never `1790800000000.5`).
fn is_integer(v: &Value) -> bool {
    v.is_i64()
        || v.is_u64()
        || v.as_f64()
            .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
}

/// An integer's value, when it fits an `i64` (one written with a `.0` is
/// exact up to 2^53, past every bound it is held to).
fn integer(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| {
        let f = v.as_f64().filter(|_| is_integer(v))?;
        (f.abs() <= MAX_IAT as f64).then_some(f as i64)
    })
}

/// A model id: 1–100 characters of letters, digits and `._:/@[]-`, so it
/// passes as one argument and can never read as a flag.
fn valid_model(m: &str) -> bool {
    (1..=100).contains(&m.len())
        && !m.starts_with('-')
        && m.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._:/@[]-".contains(c))
}

fn bad(detail: &str) -> Refusal {
    Refusal::BadFields(detail.to_string())
}

fn body(kind: &str, map: &Map<String, Value>) -> Result<Body, Refusal> {
    Ok(match kind {
        "prompt" => Body::Prompt { text: text(map)? },
        "start" => Body::Start {
            text: text(map)?,
            cwd: map
                .get("cwd")
                .and_then(Value::as_str)
                .filter(|c| absolute_folder(c))
                .ok_or_else(|| bad("cwd is not an absolute folder"))?
                .to_string(),
            files: match map.get("files") {
                None => Vec::new(),
                Some(list) => files::parse(list).map_err(Refusal::BadFields)?,
            },
            level: match map.get("level") {
                None => None,
                Some(l) => Some(
                    l.as_str()
                        .and_then(Level::parse)
                        .ok_or_else(|| bad("level is none of read, safe, edits, auto"))?,
                ),
            },
            model: match map.get("model") {
                None => None,
                Some(Value::String(m)) if valid_model(m) => Some(m.clone()),
                Some(_) => return Err(bad("model is not a model id of 1 to 100 characters")),
            },
        },
        "permission.answer" => Body::PermissionAnswer {
            for_attention: map
                .get("for")
                .and_then(Value::as_str)
                .filter(|f| (1..=MAX_FOR_CHARS).contains(&f.chars().count()))
                .ok_or_else(|| bad("for is not an attention id of 1 to 128 characters"))?
                .to_string(),
            decision: match map.get("decision").and_then(Value::as_str) {
                Some("allow") => Decision::Allow,
                Some("deny") => Decision::Deny,
                _ => return Err(bad("decision is neither allow nor deny")),
            },
        },
        "cancel" => Body::Cancel,
        "key.add" => Body::KeyAdd {
            key: new_key(map.get("key"))?,
            name: match map.get("name") {
                None => None,
                Some(Value::String(n)) if (1..=MAX_KEY_NAME_CHARS).contains(&n.chars().count()) => {
                    Some(n.clone())
                }
                Some(_) => return Err(bad("name is not a string of 1 to 80 characters")),
            },
        },
        _ => unreachable!("KINDS names every kind"),
    })
}

/// 1–20 000 characters, not all whitespace.
fn text(map: &Map<String, Value>) -> Result<String, Refusal> {
    let text = map
        .get("text")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("text missing"))?;
    if text.chars().count() > MAX_TEXT_CHARS {
        return Err(bad("text over 20000 characters"));
    }
    // U+FEFF too, as JavaScript's trim() takes it: a device's check and this
    // one must agree on what is blank.
    if text.chars().all(|c| c.is_whitespace() || c == '\u{feff}') {
        return Err(bad("text is empty or only whitespace"));
    }
    Ok(text.to_string())
}

/// The key a `key.add` carries: exactly `{id, alg, spki}`, a key that can
/// verify (it goes into the trust store as it is).
fn new_key(v: Option<&Value>) -> Result<TrustedKey, Refusal> {
    let map = v
        .and_then(Value::as_object)
        .ok_or_else(|| bad("key is missing or not an object"))?;
    if let Some(foreign) = map
        .keys()
        .find(|k| !["id", "alg", "spki"].contains(&k.as_str()))
    {
        return Err(Refusal::BadFields(format!(
            "key.{foreign} is foreign to a key"
        )));
    }
    let id = map
        .get("id")
        .and_then(Value::as_str)
        .filter(|id| is_b64url(id, 16, 1400))
        .ok_or_else(|| bad("key.id is not 16 to 1400 base64url characters"))?;
    let alg = map
        .get("alg")
        .and_then(Value::as_i64)
        .filter(|a| *a == ES256 || *a == RS256)
        .ok_or_else(|| bad("key.alg is neither -7 nor -257"))?;
    let spki = map
        .get("spki")
        .and_then(Value::as_str)
        .filter(|s| is_b64url(s, 40, 2000))
        .ok_or_else(|| bad("key.spki is not 40 to 2000 base64url characters"))?;
    let key = TrustedKey {
        id: id.to_string(),
        alg,
        spki: spki.to_string(),
    };
    key.check()
        .map_err(|e| Refusal::BadFields(format!("key: {e}")))?;
    Ok(key)
}

/// `m_` then 16–40 base64url characters.
pub fn valid_machine_id(id: &str) -> bool {
    id.strip_prefix("m_")
        .is_some_and(|rest| is_b64url(rest, 16, 40))
}

/// `<harness>:<id>`: the harness `[a-z][a-z0-9-]{0,39}`, the id 1–128 of
/// `[A-Za-z0-9._:-]` (the rest of the string, colons and all).
pub fn parse_session(s: &str) -> Option<SessionRef> {
    let (harness, id) = s.split_once(':')?;
    let h = harness.as_bytes();
    let harness_ok = !h.is_empty()
        && h.len() <= 40
        && h[0].is_ascii_lowercase()
        && h.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-');
    let id_ok = !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"._:-".contains(&c));
    (harness_ok && id_ok).then(|| SessionRef {
        harness: harness.to_string(),
        id: id.to_string(),
    })
}

/// An absolute folder, POSIX (`/…`) or Windows (`C:\…`), with no control
/// characters and no `.` or `..` step: the machine compares it with its
/// allowlist, and a `..` would walk out of an allowed folder.
fn absolute_folder(cwd: &str) -> bool {
    if cwd.chars().count() > MAX_CWD_CHARS || cwd.chars().any(char::is_control) {
        return false;
    }
    let b = cwd.as_bytes();
    let rest = if let Some(rest) = cwd.strip_prefix('/') {
        rest
    } else if b.len() >= 3
        && b[0].is_ascii_alphabetic()
        && b[1] == b':'
        && matches!(b[2], b'\\' | b'/')
    {
        &cwd[3..]
    } else {
        return false;
    };
    rest.split(['/', '\\'])
        .all(|step| step != "." && step != "..")
}

#[cfg(test)]
#[path = "command_tests.rs"]
mod tests;
