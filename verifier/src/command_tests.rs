//! The shape checks of a command string, one by one and in their order, on
//! strings written by hand (no signature is looked at here).

use super::*;
use serde_json::json;

const MACHINE: &str = "m_testmachine0000000001";
const SESSION: &str = "claude-code:8c132906-8c3f-4814-870a-afc3d05e1d2e";
const NONCE: &str = "cqYzXKKBIJYfoLhtjAsanw";

/// A prompt's members, to change one at a time.
fn prompt() -> Map<String, Value> {
    let Value::Object(map) = json!({
        "v": 1, "t": "sessionpipe.control", "machine": MACHINE, "kind": "prompt",
        "session": SESSION, "text": "Add the Oct 8 row", "nonce": NONCE, "iat": 1790800000000i64,
    }) else {
        unreachable!()
    };
    map
}

fn with(mut map: Map<String, Value>, member: &str, value: Value) -> Map<String, Value> {
    map.insert(member.to_string(), value);
    map
}

fn without(mut map: Map<String, Value>, member: &str) -> Map<String, Value> {
    map.shift_remove(member);
    map
}

fn of(map: Map<String, Value>) -> Result<Command, Refusal> {
    parse(
        &serde_json::to_string(&Value::Object(map)).unwrap(),
        MACHINE,
    )
}

fn code(map: Map<String, Value>) -> &'static str {
    match of(map) {
        Ok(_) => "ok",
        Err(r) => r.code(),
    }
}

fn kind(kind: &str) -> Map<String, Value> {
    without(with(prompt(), "kind", json!(kind)), "text")
}

#[test]
fn a_prompt() {
    let cmd = of(prompt()).unwrap();
    assert_eq!(cmd.kind(), "prompt");
    assert_eq!(cmd.session.harness, "claude-code");
    assert_eq!(cmd.session.to_string(), SESSION);
    assert_eq!(cmd.nonce, NONCE);
    assert_eq!(cmd.iat_ms, 1790800000000);
    assert_eq!(cmd.note, None);
    assert_eq!(
        cmd.body,
        Body::Prompt {
            text: "Add the Oct 8 row".into()
        }
    );
}

#[test]
fn malformed() {
    for text in ["{v:1}", "", "[]", "\"cmd\"", "{\"v\":1,\"v\":1}"] {
        assert_eq!(parse(text, MACHINE), Err(Refusal::Malformed), "{text}");
    }
    let twice = serde_json::to_string(&Value::Object(prompt())).unwrap();
    let twice = twice.replacen("\"text\":", "\"text\":\"rm -rf ~\",\"text\":", 1);
    assert_eq!(parse(&twice, MACHINE), Err(Refusal::Malformed));
}

#[test]
fn the_whole_string_is_at_most_48000_characters() {
    // Text of 20 000 characters, some written as 6-character escapes, so the
    // string reaches the cap with the text within its own.
    let head = format!(
        r#"{{"v":1,"t":"sessionpipe.control","machine":"{MACHINE}","kind":"prompt","session":"{SESSION}","nonce":"{NONCE}","iat":1790800000000,"text":""#
    );
    let fixed = head.chars().count() + 2 + 20_000;
    let escapes = (MAX_COMMAND_CHARS - fixed) / 5;
    let pad = MAX_COMMAND_CHARS - fixed - 5 * escapes;
    let text = format!(
        "{}{}",
        "\\u0041".repeat(escapes),
        "x".repeat(20_000 - escapes)
    );
    let at_cap = format!("{head}{text}\"}}{}", " ".repeat(pad));
    assert_eq!(at_cap.chars().count(), MAX_COMMAND_CHARS);
    assert!(parse(&at_cap, MACHINE).is_ok());
    let over = format!("{at_cap} ");
    assert_eq!(parse(&over, MACHINE), Err(Refusal::Malformed));
    // Characters, not bytes: 20 000 three-byte characters are fine.
    let wide = with(prompt(), "text", json!("語".repeat(20_000)));
    assert_eq!(code(wide), "ok");
}

#[test]
fn not_a_command() {
    for (m, v) in [
        ("v", json!(2)),
        ("v", json!(1.5)),
        ("v", json!(0)),
        ("t", json!("ss-machine-cmd")),
        ("t", json!("")),
    ] {
        assert_eq!(code(with(prompt(), m, v)), "not_a_command");
    }
    assert_eq!(code(without(prompt(), "t")), "not_a_command");
    assert_eq!(code(without(prompt(), "v")), "not_a_command");
    // 1.0 is the number 1 (the schema's `const`).
    assert_eq!(code(with(prompt(), "v", json!(1.0))), "ok");
}

/// Every member a command carries whatever its kind, of another JSON type:
/// not a well-formed command at all (step 1), before any value is judged.
#[test]
fn envelope_members_of_the_wrong_type_are_malformed() {
    let others = [
        json!(null),
        json!(true),
        json!(7),
        json!(1.5),
        json!("1"),
        json!([]),
        json!({}),
    ];
    for (member, of_type) in [
        ("v", "number"),
        ("t", "string"),
        ("machine", "string"),
        ("kind", "string"),
        ("session", "string"),
        ("nonce", "string"),
        ("iat", "integer"),
    ] {
        for other in &others {
            let fits = match of_type {
                "number" => other.is_number(),
                "integer" => other.is_i64(),
                _ => other.is_string(),
            };
            if fits {
                continue;
            }
            assert_eq!(
                code(with(prompt(), member, other.clone())),
                "malformed",
                "{member}: {other}"
            );
        }
    }
    // The issue's own: an iat with a fraction, on every kind.
    for k in ["prompt", "cancel"] {
        let cmd = with(kind(k), "text", json!("x"));
        let cmd = if k == "cancel" {
            without(cmd, "text")
        } else {
            cmd
        };
        assert_eq!(
            code(with(cmd, "iat", json!(1790800000000.5))),
            "malformed",
            "{k}"
        );
    }
    // Before every value check: the first broken step is step 1.
    let broken = with(
        with(prompt(), "t", json!("ss-machine-cmd")),
        "machine",
        json!("m_anothermachine00000001"),
    );
    assert_eq!(
        code(with(broken, "iat", json!("1790800000000"))),
        "malformed"
    );
    // Written as a number with `.0`, an integer is still one.
    assert_eq!(
        of(with(prompt(), "iat", json!(1790800000000.0)))
            .unwrap()
            .iat_ms,
        1790800000000
    );
}

#[test]
fn wrong_machine() {
    assert_eq!(
        code(with(prompt(), "machine", json!("m_anothermachine00000001"))),
        "wrong_machine"
    );
    assert_eq!(code(without(prompt(), "machine")), "wrong_machine");
    assert_eq!(code(with(prompt(), "machine", json!(""))), "wrong_machine");
    assert!(valid_machine_id(MACHINE));
    for bad in [
        "m_short",
        "x_testmachine0000000001",
        "m_testmachine000000000!",
        &format!("m_{}", "a".repeat(41)),
    ] {
        assert!(!valid_machine_id(bad), "{bad}");
    }
    // A machine configured with a bad id refuses everything.
    let p = serde_json::to_string(&Value::Object(with(prompt(), "machine", json!("m_x")))).unwrap();
    assert_eq!(parse(&p, "m_x"), Err(Refusal::WrongMachine));
}

#[test]
fn unknown_kind() {
    assert_eq!(code(with(prompt(), "kind", json!("shell"))), "unknown_kind");
    assert_eq!(
        code(with(prompt(), "kind", json!("Prompt"))),
        "unknown_kind"
    );
    assert_eq!(code(without(prompt(), "kind")), "unknown_kind");
}

#[test]
fn sessions() {
    for bad in [
        "8c132906-8c3f-4814-870a-afc3d05e1d2e",
        ":abc",
        "Claude-code:abc",
        "1harness:abc",
        "claude_code:abc",
        "claude-code:",
        "claude-code:a b",
        &format!("claude-code:{}", "a".repeat(129)),
        &format!("{}:abc", "h".repeat(41)),
    ] {
        assert_eq!(
            code(with(prompt(), "session", json!(bad))),
            "bad_session",
            "{bad}"
        );
    }
    assert_eq!(code(without(prompt(), "session")), "bad_session");
    // A harness with no id rule takes the protocol's whole form.
    let odd = of(with(prompt(), "session", json!("cursor:a.b:c_d-e"))).unwrap();
    assert_eq!(
        (odd.session.harness.as_str(), odd.session.id.as_str()),
        ("cursor", "a.b:c_d-e")
    );
}

/// The id follows its harness's rule (CONTROL §3.1): a `claude-code` id is a
/// UUID, a Devin id a word-word slug, an OpenCode id `ses_…`; a session a
/// start named (a UUID) is a name every harness takes.
#[test]
fn session_ids_follow_their_harness_rule() {
    for bad in [
        "claude-code:not-a-uuid",
        "claude-code:s1",
        "claude-code:834104cf-a9d5",
        "codex:a.b:c_d-e",
        "gemini-cli:conf-1",
        "copilot-cli:frill-vulture",
        "droid:ses_dc91f06baffeU4tc00OCOuQ87R",
        "devin:Frill_Vulture",
        "opencode:s-1",
    ] {
        assert_eq!(
            code(with(prompt(), "session", json!(bad))),
            "bad_session",
            "{bad}"
        );
    }
    for ok in [
        "claude-code:8c132906-8c3f-4814-870a-afc3d05e1d2e",
        "codex:01a0e5c5-5b2f-7c60-9287-31f9f0aa9f65",
        "devin:frill-vulture",
        "devin:8c132906-8c3f-4814-870a-afc3d05e1d2e",
        "opencode:ses_dc91f06baffeU4tc00OCOuQ87R",
        "opencode:8c132906-8c3f-4814-870a-afc3d05e1d2e",
        "goose:8c132906-8c3f-4814-870a-afc3d05e1d2e",
        "kiro:any.id-at_all",
    ] {
        assert_eq!(code(with(prompt(), "session", json!(ok))), "ok", "{ok}");
    }
    // The key store is not a harness's session: its own rule stands.
    let key = json!({"id": "AAAAAAAAAAAAAAAAAAAAAA", "alg": -7, "spki": SPKI});
    let add = with(
        with(kind("key.add"), "key", key),
        "session",
        json!(KEYS_SESSION),
    );
    assert_eq!(code(add), "ok");
}

#[test]
fn the_key_store_is_a_session_of_its_own() {
    let key = json!({"id": "AAAAAAAAAAAAAAAAAAAAAA", "alg": -7, "spki": SPKI});
    let add = with(kind("key.add"), "key", key);
    assert_eq!(
        code(with(add.clone(), "session", json!(KEYS_SESSION))),
        "ok"
    );
    assert_eq!(
        code(add.clone()),
        "bad_session",
        "key.add on a coding session"
    );
    assert_eq!(
        code(with(add, "session", json!("sessionpipe:other"))),
        "bad_session"
    );
    assert_eq!(
        code(with(prompt(), "session", json!(KEYS_SESSION))),
        "bad_session"
    );
    assert_eq!(
        code(with(prompt(), "session", json!("sessionpipe:x"))),
        "bad_session"
    );
}

/// A real P-256 SPKI.
const SPKI: &str = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEWAizZO4AfhqX_OmXU6dlyX7o5kMr9ya5or17wSXFDOOJZSGJF9858Jc39BOoFXy1thqvyWnKqban6J4eUyhr_A";

#[test]
fn texts() {
    assert_eq!(
        code(with(prompt(), "text", json!("x".repeat(20_000)))),
        "ok"
    );
    for bad in [
        json!("x".repeat(20_001)),
        json!(""),
        json!("  \n\t "),
        json!("\u{feff}\u{3000}"),
        json!(5),
    ] {
        assert_eq!(
            code(with(prompt(), "text", bad.clone())),
            "bad_fields",
            "{bad}"
        );
    }
    assert_eq!(code(without(prompt(), "text")), "bad_fields");
}

#[test]
fn notes() {
    let cmd = of(with(prompt(), "note", json!("n".repeat(2_000)))).unwrap();
    assert_eq!(cmd.note.as_deref().map(str::len), Some(2_000));
    assert_eq!(
        code(with(prompt(), "note", json!("n".repeat(2_001)))),
        "bad_fields"
    );
    assert_eq!(code(with(prompt(), "note", json!(null))), "bad_fields");
}

#[test]
fn iat_is_an_integer() {
    for bad in [
        json!(0),
        json!(-5),
        json!(-0.0),
        json!(9_007_199_254_740_992i64),
        json!(18_446_744_073_709_551_615u64),
        json!(1e300),
    ] {
        assert_eq!(
            code(with(prompt(), "iat", bad.clone())),
            "bad_fields",
            "{bad}"
        );
    }
    assert_eq!(code(without(prompt(), "iat")), "bad_fields");
}

#[test]
fn fields_foreign_to_the_kind() {
    assert_eq!(
        code(with(prompt(), "decision", json!("allow"))),
        "bad_fields"
    );
    assert_eq!(code(with(prompt(), "cwd", json!("/tmp"))), "bad_fields");
    assert_eq!(code(with(prompt(), "extra", json!(1))), "bad_fields");
    assert_eq!(
        code(with(kind("cancel"), "text", json!("stop"))),
        "bad_fields"
    );
    assert_eq!(code(kind("cancel")), "ok");
    let files = json!([{"name": "a.png", "type": "image/png", "size": 1, "sha256": "0BNhTcFKN-4g_pIAVzerfTQn5-k1gK1W74pCIF5_ek4"}]);
    assert_eq!(code(with(prompt(), "files", files)), "bad_fields");
}

#[test]
fn permission_answers() {
    let answer = with(
        with(kind("permission.answer"), "for", json!("perm-1")),
        "decision",
        json!("deny"),
    );
    let cmd = of(answer.clone()).unwrap();
    assert_eq!(
        cmd.body,
        Body::PermissionAnswer {
            for_attention: "perm-1".into(),
            decision: Decision::Deny
        }
    );
    assert_eq!(code(without(answer.clone(), "for")), "bad_fields");
    assert_eq!(code(with(answer.clone(), "for", json!(""))), "bad_fields");
    assert_eq!(
        code(with(answer.clone(), "for", json!("p".repeat(129)))),
        "bad_fields"
    );
    assert_eq!(
        code(with(answer.clone(), "decision", json!("maybe"))),
        "bad_fields"
    );
    assert_eq!(code(without(answer, "decision")), "bad_fields");
}

#[test]
fn starts_run_in_an_absolute_folder() {
    let start = |cwd: Value| with(with(kind("start"), "text", json!("Fix it")), "cwd", cwd);
    for ok in [
        "/Users/misha/spacesheep",
        "/",
        "C:\\Users\\misha",
        "d:/work",
        "/a/..b/c.",
    ] {
        assert_eq!(code(start(json!(ok))), "ok", "{ok}");
    }
    for bad in [
        "spacesheep",
        "",
        "./x",
        "/a/../etc",
        "/a/./b",
        "C:relative",
        "/a\nb",
        "\\\\server\\share",
    ] {
        assert_eq!(code(start(json!(bad))), "bad_fields", "{bad}");
    }
    assert_eq!(
        code(start(json!(format!("/{}", "a".repeat(1_024))))),
        "bad_fields"
    );
    assert_eq!(code(without(start(json!("/a")), "cwd")), "bad_fields");
    let Body::Start { files, .. } = of(start(json!("/a"))).unwrap().body else {
        panic!()
    };
    assert!(files.is_empty());
}

#[test]
fn a_start_may_name_a_level_and_a_model_and_nothing_else_may() {
    let start = with(
        with(kind("start"), "text", json!("Fix it")),
        "cwd",
        json!("/a"),
    );
    let asked = with(
        with(start.clone(), "level", json!("edits")),
        "model",
        json!("claude-opus-4-5[1m]"),
    );
    let Body::Start { level, model, .. } = of(asked).unwrap().body else {
        panic!()
    };
    assert_eq!(
        (level.map(protocol::Level::as_str), model.as_deref()),
        (Some("edits"), Some("claude-opus-4-5[1m]"))
    );
    for (field, value) in [
        ("level", json!("bypassPermissions")),
        ("level", json!(1)),
        ("model", json!("")),
        ("model", json!("--dangerously-skip-permissions")),
        ("model", json!("gpt 5")),
        ("model", json!("m".repeat(101))),
    ] {
        assert_eq!(
            code(with(start.clone(), field, value.clone())),
            "bad_fields",
            "{field} {value}"
        );
    }
    let prompt = with(kind("prompt"), "text", json!("hi"));
    assert_eq!(
        code(with(prompt, "level", json!("safe"))),
        "bad_fields",
        "start only"
    );
}

#[test]
fn key_adds() {
    let add = |key: Value| {
        with(
            with(kind("key.add"), "session", json!(KEYS_SESSION)),
            "key",
            key,
        )
    };
    let cmd = of(with(
        add(json!({"id": "AAAAAAAAAAAAAAAAAAAAAA", "alg": -7, "spki": SPKI})),
        "name",
        json!("iPhone"),
    ))
    .unwrap();
    let Body::KeyAdd { key, name } = cmd.body else {
        panic!()
    };
    assert_eq!((key.alg, name.as_deref()), (-7, Some("iPhone")));
    for bad in [
        json!({"id": "AAAAAAAAAAAAAAAAAAAAAA", "alg": -8, "spki": SPKI}),
        json!({"id": "AAAAAAAAAAAAAAAAAAAAAA", "alg": -257, "spki": SPKI}),
        json!({"id": "short", "alg": -7, "spki": SPKI}),
        json!({"id": "AAAAAAAAAAAAAAAAAAAAAA", "alg": -7, "spki": "A".repeat(91)}),
        json!({"id": "AAAAAAAAAAAAAAAAAAAAAA", "alg": -7}),
        json!({"id": "AAAAAAAAAAAAAAAAAAAAAA", "alg": -7, "spki": SPKI, "name": "x"}),
        json!("AAAAAAAAAAAAAAAAAAAAAA"),
    ] {
        assert_eq!(code(add(bad.clone())), "bad_fields", "{bad}");
    }
    assert_eq!(code(without(add(json!(null)), "key")), "bad_fields");
    let good = add(json!({"id": "AAAAAAAAAAAAAAAAAAAAAA", "alg": -7, "spki": SPKI}));
    assert_eq!(code(with(good.clone(), "name", json!(""))), "bad_fields");
    assert_eq!(
        code(with(good, "name", json!("n".repeat(81)))),
        "bad_fields"
    );
    assert_eq!(
        code(with(
            prompt(),
            "key",
            json!({"id": "AAAAAAAAAAAAAAAAAAAAAA", "alg": -7, "spki": SPKI})
        )),
        "bad_fields"
    );
}

#[test]
fn nonces() {
    for ok in [
        "a".repeat(22),
        "a".repeat(64),
        "-_09azAZ-_09azAZ-_09az".into(),
    ] {
        assert_eq!(code(with(prompt(), "nonce", json!(ok))), "ok", "{ok}");
    }
    for bad in [
        json!("a".repeat(21)),
        json!("a".repeat(65)),
        json!(format!("{}+", "a".repeat(22))),
        json!(""),
    ] {
        assert_eq!(
            code(with(prompt(), "nonce", bad.clone())),
            "bad_nonce",
            "{bad}"
        );
    }
    assert_eq!(code(without(prompt(), "nonce")), "bad_nonce");
}

#[test]
fn the_first_broken_check_is_the_one_told() {
    let p = || with(prompt(), "nonce", json!("short"));
    assert_eq!(
        code(with(p(), "machine", json!("m_anothermachine00000001"))),
        "wrong_machine"
    );
    assert_eq!(
        code(with(with(p(), "kind", json!("shell")), "t", json!("x"))),
        "not_a_command"
    );
    assert_eq!(
        code(with(
            with(p(), "kind", json!("shell")),
            "session",
            json!("x")
        )),
        "unknown_kind"
    );
    assert_eq!(
        code(with(with(p(), "session", json!("x")), "text", json!(""))),
        "bad_session"
    );
    assert_eq!(code(with(p(), "text", json!(""))), "bad_fields");
    assert_eq!(code(p()), "bad_nonce");
}
