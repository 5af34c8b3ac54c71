//! What the page's API (`/app/api/`) answers with, as types: each one is what
//! a handler serializes, and `typescript` declares them for the phone page in
//! `web-shared/src/generated/page-api.ts`. A member renamed here shows in the
//! page's build, not at run time.
//!
//! Owns these shapes and nothing else: the handlers (`sign_in`,
//! `board_routes`, `control_routes`) fill them. What a handler carries as it
//! was stored (an event's members, a machine's hello, the board's attention)
//! stays JSON here and is declared with the shape the layer that stores it
//! guarantees; `typescript` says which, and its test checks the board's.

use serde::Serialize;
use serde_json::Value;

/// `GET /app/api/config`: what the page needs before anyone signs in.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Config {
    /// The passkeys' relying party: the receiver's host.
    pub rp_id: String,
    pub rp_name: String,
    /// `open` (anyone may make an account) or `invite`.
    pub registration: &'static str,
    /// Some account exists (the first one registers without an invite).
    pub accounts: bool,
    /// The VAPID key a push subscription is made with (base64url).
    pub vapid_public_key: String,
}

#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Account {
    pub id: String,
    pub name: String,
    pub created_at: String,
}

/// A passkey on the account; `{id, alg, spki}` is exactly the protocol's key.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Credential {
    pub id: String,
    /// The device's name, as the person gave it.
    pub name: String,
    /// -7 (ES256) or -257 (RS256).
    pub alg: i64,
    pub spki: String,
    pub added_at: String,
    pub used_at: Option<String>,
}

/// `register/start` and `signin/start`: the ceremony's id and the options
/// for `navigator.credentials` (webauthn-rs's, read by the page's `passkey`).
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Ceremony {
    pub ceremony: String,
    #[serde(rename = "publicKey")]
    #[cfg_attr(test, ts(as = "serde_json::Map<String, Value>"))]
    pub public_key: Value,
}

/// `register/finish` and `signin/finish`: who signed in, with which passkey.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SignedIn {
    pub account: Account,
    pub credential: Credential,
}

/// `GET /app/api/me`.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Me {
    pub account: Account,
    /// The id of the credential this session signed in with.
    pub credential: String,
    pub credentials: Vec<Credential>,
    pub machines: Vec<Machine>,
}

/// `POST /app/api/invites`.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Invite {
    pub code: String,
    pub url: String,
    pub expires_at: String,
}

/// A machine of the account, as the board and `me` list it.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Machine {
    pub id: String,
    pub name: String,
    /// It polled within two long-polls.
    pub online: bool,
    pub last_poll_at: Option<String>,
    /// Its last hello, as it sent it (the page reads it as its `Hello`).
    pub hello: Option<Value>,
    /// The ids of the passkeys it was handed.
    #[cfg_attr(test, ts(as = "Vec<String>"))]
    pub keys: Vec<Value>,
}

/// `GET /app/api/board`.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Board {
    pub machines: Vec<Machine>,
    pub sessions: Vec<Session>,
}

/// A session on the board: the block's members the sender gave (null when
/// none did), its state and its open attention.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Session {
    /// `harness:id`
    pub key: String,
    pub harness: String,
    pub id: String,
    /// The machine's name the events carry.
    pub machine: Option<String>,
    /// The paired machine that sent it (its token's, else by name).
    pub machine_id: Option<String>,
    pub state: crate::board::State,
    pub title: Option<String>,
    pub cwd: Option<String>,
    pub model: Option<String>,
    pub repo: Option<String>,
    pub branch: Option<String>,
    pub first_at: String,
    pub last_at: String,
    pub last_words: Option<String>,
    /// As the board folded it (`board::fold`).
    #[cfg_attr(test, ts(as = "Option<Attention>"))]
    pub attention: Option<Value>,
    /// What the open attention says, in the words the desktop notification
    /// and the Web Push use (`protocol::asked`).
    pub attention_words: Option<protocol::asked::AttentionWords>,
    /// Its machine's last hello lists it in `cancels`: a `cancel` ends its
    /// running turn now, through the harness's own interrupt (the page's Stop).
    pub can_stop: bool,
}

// Never serialized from this type (so a test-only one): it declares the JSON
// the board folds, and the test below folds one and reads it back as this.
/// An open attention, as the board keeps it (`board::fold`).
#[cfg(test)]
#[derive(Debug, serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct Attention {
    pub id: String,
    /// `permission`, `question`, `elicitation`, `idle`, `error`.
    pub kind: String,
    #[serde(default)]
    #[ts(optional)]
    pub tool: Option<String>,
    #[serde(default)]
    #[ts(optional)]
    pub message: Option<String>,
    /// The `attention.needed`'s time.
    pub at: String,
    /// The tier it came at (null for one folded before the board kept it).
    #[serde(default)]
    pub tier: Option<u8>,
}

/// `GET /app/api/sessions/{key}`: the session and its last events.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SessionPage {
    pub session: Session,
    pub events: Vec<SessionEvent>,
}

/// An event of a timeline: its envelope's members as stored (validated on
/// the way in), and when it arrived here.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SessionEvent {
    /// The session's `seq`.
    #[cfg_attr(test, ts(as = "u64"))]
    pub seq: Value,
    #[serde(rename = "type")]
    #[cfg_attr(test, ts(as = "String"))]
    pub kind: Value,
    #[cfg_attr(test, ts(as = "String"))]
    pub time: Value,
    pub arrived_at: String,
    #[cfg_attr(test, ts(as = "u8"))]
    pub tier: Value,
    #[cfg_attr(test, ts(as = "serde_json::Map<String, Value>"))]
    pub data: Value,
}

/// `GET /app/api/pair/{code}`: a pairing to approve.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Pairing {
    pub code: String,
    pub machine: String,
    /// The machine's name, as it asked.
    pub name: String,
    /// The six digits the machine shows.
    pub check: String,
    pub expires_at: String,
    /// The account's first machine.
    pub first: bool,
    pub status: PairingStatus,
}

#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum PairingStatus {
    Pending,
    Approved,
    Expired,
}

/// `POST /app/api/pair/{code}/approve`: the machine now paired.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Approved {
    pub machine: String,
}

/// `POST /app/api/commands`: the command queued for its machine.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Queued {
    pub id: String,
}

/// `POST /app/api/files`.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Uploaded {
    pub sha256: String,
    pub size: usize,
}

#[cfg(test)]
mod tests {
    use super::Attention;
    use serde_json::json;

    /// `Session::attention` is declared as `Attention`: what the board
    /// folds from an `attention.needed` reads back as one, with and
    /// without its optional members.
    #[test]
    fn the_boards_attention_is_what_the_page_api_declares() {
        for data in [
            json!({"attention_id": "a1", "kind": "permission", "tool": "Bash", "message": "rm -rf build"}),
            json!({"attention_id": "a2", "kind": "idle", "message": ""}),
        ] {
            let mut folded = crate::board::Folded::default();
            let event = json!({
                "type": "attention.needed", "time": "2026-12-06T06:00:00.000Z", "tier": 1,
                "session": {"id": "s1", "seq": 1}, "data": data,
            });
            crate::board::fold(&mut folded, &event, 1, true);
            let folded = folded.attention.expect("an open attention");
            let read: Attention =
                serde_json::from_value(folded.clone()).unwrap_or_else(|e| panic!("{folded}: {e}"));
            assert_eq!(read.id, data["attention_id"]);
            assert_eq!(read.kind, data["kind"]);
            assert_eq!(read.tool.as_deref(), data["tool"].as_str());
            // An empty message is left out, as the page reads it.
            let message = data["message"].as_str().filter(|m| !m.is_empty());
            assert_eq!(read.message.as_deref(), message);
            assert_eq!(read.at, "2026-12-06T06:00:00.000Z");
            assert_eq!(read.tier, Some(1));
        }
    }
}
