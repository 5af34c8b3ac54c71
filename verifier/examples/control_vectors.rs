//! Writes the project's own control vectors (`conformance/control-vectors/`,
//! the shared vectors' format, numbered from 101 so they never meet the
//! protocol's): each a real command, signed by a software passkey's day grant
//! and `csig`, that is broken in one way only, so the verdict can only come
//! from the check it is about. Run from the repository:
//!
//! `cargo run -p sessionpipe-verifier --features softkey --example control_vectors -- conformance/control-vectors`
//!
//! Each run makes new keys and signatures; what each vector says stays the same.

use serde_json::{Value, json};
use sessionpipe_verifier::softkey::{self, CommandText, DayKey, SoftPasskey};
use std::path::PathBuf;

const MACHINE: &str = "m_testmachine0000000001";
const RP: &str = "receiver.example";
const ORIGIN: &str = "https://receiver.example";
const IAT: i64 = 1_790_800_000_000;
const NOW: i64 = IAT + 60_000;
const UUID: &str = "8c132906-8c3f-4814-870a-afc3d05e1d2e";

struct Signer {
    passkey: SoftPasskey,
    day: DayKey,
    grant: sessionpipe_verifier::Grant,
}

impl Signer {
    fn new() -> Signer {
        let passkey = SoftPasskey::es256(RP, ORIGIN);
        let day = DayKey::generate();
        let grant = softkey::grant(&passkey, &day, IAT - 60_000, IAT + 12 * 3_600_000, RP);
        Signer {
            passkey,
            day,
            grant,
        }
    }

    /// A vector for `cmd`, signed with the day grant.
    fn vector(&self, name: &str, description: &str, cmd: &str, expect: Value) -> Value {
        let signed = softkey::sign_with_grant(cmd, &self.day, &self.grant);
        json!({
            "name": name,
            "description": description,
            "input": {
                "signed": signed,
                "machine": MACHINE,
                "rp_id": RP,
                "trusted": [self.passkey.trusted()],
                "now": NOW,
            },
            "expect": expect,
        })
    }
}

fn refused(code: &str) -> Value {
    json!({"ok": false, "code": code})
}

fn ok(kind: &str) -> Value {
    json!({"ok": true, "via": "grant", "kind": kind})
}

/// A prompt with every member right but `member`, which is `value`.
fn prompt_with(member: &str, value: Value) -> String {
    CommandText::prompt(
        MACHINE,
        &format!("claude-code:{UUID}"),
        "Add the Oct 8 row",
        &softkey::random_nonce(),
        IAT,
    )
    .set(member, value)
    .build()
}

fn main() {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .expect("usage: control_vectors <folder>"),
    );
    std::fs::create_dir_all(&dir).expect("the folder");
    let s = Signer::new();
    let mut vectors: Vec<(u32, Value)> = Vec::new();
    let mut add = |n: u32, v: Value| vectors.push((n, v));

    // Session ids by their harness's rule (CONTROL §3.1, ADAPTERS.md "Ids").
    let sessions: &[(u32, &str, &str, &str, Value)] = &[
        (
            101,
            "session-claude-code-not-a-uuid",
            "claude-code:not-a-uuid",
            "A Claude Code session id is a UUID.",
            refused("bad_session"),
        ),
        (
            102,
            "session-claude-code-cut-uuid",
            "claude-code:834104cf-a9d5",
            "The first two groups of a UUID are not one.",
            refused("bad_session"),
        ),
        (
            103,
            "session-codex-not-a-uuid",
            "codex:a.b:c_d-e",
            "A Codex session id is a UUID (v7 from Codex itself).",
            refused("bad_session"),
        ),
        (
            104,
            "session-gemini-cli-not-a-uuid",
            "gemini-cli:conf-1",
            "A Gemini CLI session id is a UUID.",
            refused("bad_session"),
        ),
        (
            105,
            "session-copilot-cli-slug",
            "copilot-cli:frill-vulture",
            "A Copilot CLI session id is a UUID, not Devin's kind of slug.",
            refused("bad_session"),
        ),
        (
            106,
            "session-droid-opencode-id",
            "droid:ses_dc91f06baffeU4tc00OCOuQ87R",
            "A Droid session id is a UUID, not OpenCode's kind.",
            refused("bad_session"),
        ),
        (
            107,
            "session-antigravity-not-a-uuid",
            "antigravity:conversation-1",
            "An Antigravity conversation id is a UUID.",
            refused("bad_session"),
        ),
        (
            108,
            "session-grok-build-not-a-uuid",
            "grok-build:s1",
            "A Grok Build session id is a UUID (v7).",
            refused("bad_session"),
        ),
        (
            109,
            "session-devin-not-a-slug",
            "devin:Frill_Vulture",
            "A Devin session id is a lowercase word-word slug.",
            refused("bad_session"),
        ),
        (
            110,
            "session-opencode-not-an-id",
            "opencode:s-1",
            "An OpenCode session id starts ses_.",
            refused("bad_session"),
        ),
        (
            111,
            "valid-session-devin-slug",
            "devin:frill-vulture",
            "Devin's own word-word slug.",
            ok("prompt"),
        ),
        (
            112,
            "valid-session-opencode-id",
            "opencode:ses_dc91f06baffeU4tc00OCOuQ87R",
            "OpenCode's own session id.",
            ok("prompt"),
        ),
        (
            113,
            "valid-session-opencode-start-name",
            &format!("opencode:{UUID}"),
            "The name a start gave an OpenCode session (a UUID; control keeps it).",
            ok("prompt"),
        ),
        (
            114,
            "valid-session-devin-start-name",
            &format!("devin:{UUID}"),
            "The name a start gave a Devin session.",
            ok("prompt"),
        ),
        (
            115,
            "valid-session-codex-uuid7",
            "codex:01a0e5c5-5b2f-7c60-9287-31f9f0aa9f65",
            "A Codex session id as Codex writes it (UUIDv7).",
            ok("prompt"),
        ),
        (
            116,
            "valid-session-acp-agent",
            "goose:conf-1.x",
            "An agent only the ACP table lists: its sessions are named by a start, any name of the protocol's form.",
            ok("prompt"),
        ),
        (
            117,
            "valid-session-unknown-harness",
            "a-newer-harness:any.id_1",
            "A harness this verifier does not know: the machine answers unsupported, the verifier does not refuse.",
            ok("prompt"),
        ),
    ];
    for (n, name, session, description, expect) in sessions {
        let cmd = prompt_with("session", json!(session));
        add(*n, s.vector(name, description, &cmd, expect.clone()));
    }

    // Members every command carries, of the wrong JSON type: malformed.
    let types: &[(u32, &str, &str, Value, &str)] = &[
        (
            120,
            "iat-with-a-fraction",
            "iat",
            json!(1_790_800_000_000.5),
            "An iat that is not an integer.",
        ),
        (
            121,
            "iat-a-string",
            "iat",
            json!("1790800000000"),
            "An iat written as a string.",
        ),
        (
            122,
            "v-a-string",
            "v",
            json!("1"),
            "A version written as a string.",
        ),
        (
            123,
            "t-a-number",
            "t",
            json!(1),
            "A type that is not a string.",
        ),
        (
            124,
            "machine-a-number",
            "machine",
            json!(1),
            "A machine that is not a string.",
        ),
        (
            125,
            "kind-null",
            "kind",
            json!(null),
            "A kind that is null.",
        ),
        (
            126,
            "session-a-number",
            "session",
            json!(8),
            "A session that is not a string.",
        ),
        (
            127,
            "nonce-a-number",
            "nonce",
            json!(1234567890123456789u64),
            "A nonce that is not a string.",
        ),
        (
            128,
            "session-an-object",
            "session",
            json!({"harness": "claude-code", "id": UUID}),
            "A session written as an object.",
        ),
    ];
    for (n, name, member, value, description) in types {
        let cmd = prompt_with(member, value.clone());
        add(*n, s.vector(name, description, &cmd, refused("malformed")));
    }
    // The same type on a kind's own member (or the optional note) is that
    // member's: bad_fields.
    add(
        130,
        s.vector(
            "text-a-number",
            "A prompt's text that is not a string: a kind's member, bad_fields.",
            &prompt_with("text", json!(5)),
            refused("bad_fields"),
        ),
    );
    add(
        131,
        s.vector(
            "note-null",
            "A note that is null: bad_fields.",
            &prompt_with("note", json!(null)),
            refused("bad_fields"),
        ),
    );
    add(
        132,
        s.vector(
            "iat-zero",
            "An integer iat below 1: out of the schema's bounds, bad_fields.",
            &prompt_with("iat", json!(0)),
            refused("bad_fields"),
        ),
    );
    add(
        133,
        s.vector(
            "valid-iat-written-with-zero-fraction",
            "1790800000000.0 is an integer (JSON Schema's reading).",
            &prompt_with("iat", json!(1_790_800_000_000.0)),
            ok("prompt"),
        ),
    );

    // The receiver's envelope member `expires_at` (input.expires_at).
    let cmd = prompt_with("note", json!("from the envelope vectors"));
    let with_expiry = |name: &str, description: &str, at: Value, expect: Value| {
        let mut v = s.vector(name, description, &cmd, expect);
        v["input"]["expires_at"] = at;
        v
    };
    add(
        140,
        with_expiry(
            "expires-at-a-number",
            "The envelope's expires_at as epoch ms, not an RFC 3339 string.",
            json!(NOW + 3_600_000),
            refused("malformed"),
        ),
    );
    add(
        141,
        with_expiry(
            "expires-at-not-a-time",
            "The envelope's expires_at is a string but no time.",
            json!("tomorrow"),
            refused("malformed"),
        ),
    );
    add(
        142,
        with_expiry(
            "expires-at-past",
            "Past the envelope's expires_at (a daemon acks it expired).",
            json!("2026-09-30T20:00:00.000Z"),
            refused("too_old"),
        ),
    );
    add(
        143,
        with_expiry(
            "valid-expires-at-ahead",
            "Before the envelope's expires_at.",
            json!("2026-10-01T08:00:00.000Z"),
            ok("prompt"),
        ),
    );

    for (n, v) in &vectors {
        let path = dir.join(format!("{n}-{}.json", v["name"].as_str().unwrap()));
        let text = serde_json::to_string_pretty(v).unwrap() + "\n";
        std::fs::write(&path, text).expect("the vector is written");
    }
    println!("{} vectors in {}", vectors.len(), dir.display());
}
