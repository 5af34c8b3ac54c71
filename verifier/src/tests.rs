//! `verify` and `verify_enrollment` end to end, on what the software
//! authenticator signs: every path verifies (ES256 and RS256, grant and
//! confirm, pairing), each broken knob and each check is refused with its
//! code, the checks come in their order, and the nonce is recorded last.

use super::*;
use crate::softkey::{
    CommandText, DayKey, SoftPasskey, enrollment_proof, grant, random_nonce, sign_with_confirm,
    sign_with_grant,
};
use std::sync::OnceLock;

const MACHINE: &str = "m_testmachine0000000001";
const RP: &str = "receiver.example";
const ORIGIN: &str = "https://receiver.example";
const SESSION: &str = "claude-code:8c132906-8c3f-4814-870a-afc3d05e1d2e";
const IAT: i64 = 1_790_800_000_000;
const NOW: i64 = IAT + 60_000;
const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;

fn es256() -> SoftPasskey {
    SoftPasskey::es256(RP, ORIGIN)
}

/// One RS256 passkey for the whole test binary (RSA keys are slow to make).
fn rs256() -> SoftPasskey {
    static ONE: OnceLock<SoftPasskey> = OnceLock::new();
    ONE.get_or_init(|| SoftPasskey::rs256(RP, ORIGIN)).clone()
}

fn prompt_at(iat: i64) -> String {
    CommandText::prompt(MACHINE, SESSION, "Add the Oct 8 row", &random_nonce(), iat).build()
}

fn prompt() -> String {
    prompt_at(IAT)
}

fn day_grant(passkey: &SoftPasskey, day: &DayKey) -> Grant {
    grant(passkey, day, IAT - MINUTE, IAT + 12 * HOUR, RP)
}

/// `cmd` under a fresh day grant from `passkey`.
fn granted(cmd: &str, passkey: &SoftPasskey) -> Signed {
    let day = DayKey::generate();
    sign_with_grant(cmd, &day, &day_grant(passkey, &day))
}

fn judge(signed: &Signed, trusted: &[TrustedKey]) -> Result<Verified, Refusal> {
    verify(
        signed,
        &Policy::new(MACHINE, RP, trusted, NOW),
        &mut MemoryNonces::new(),
    )
}

fn code(signed: &Signed, trusted: &[TrustedKey]) -> &'static str {
    match judge(signed, trusted) {
        Ok(v) => v.via.as_str(),
        Err(r) => r.code(),
    }
}

#[test]
fn a_granted_prompt_verifies() {
    let pk = es256();
    let cmd = prompt();
    let v = judge(&granted(&cmd, &pk), &[pk.trusted()]).unwrap();
    assert_eq!(v.via, Via::Grant);
    assert_eq!(v.command.kind(), "prompt");
    assert_eq!(v.command.machine, MACHINE);
    assert_eq!(v.command.session.to_string(), SESSION);
    assert_eq!(v.command.iat_ms, IAT);
    assert_eq!(v.command.nonce.len(), 22);
    assert_eq!(
        v.command.body,
        Body::Prompt {
            text: "Add the Oct 8 row".into()
        }
    );
}

#[test]
fn a_confirmed_prompt_verifies() {
    let pk = es256();
    let v = judge(&sign_with_confirm(&prompt(), &pk), &[pk.trusted()]).unwrap();
    assert_eq!(v.via, Via::Confirm);
}

#[test]
fn rs256_passkeys_verify_on_both_paths() {
    let pk = rs256();
    let trusted = [pk.trusted()];
    assert_eq!(trusted[0].alg, RS256);
    assert_eq!(code(&granted(&prompt(), &pk), &trusted), "grant");
    assert_eq!(
        code(&sign_with_confirm(&prompt(), &pk), &trusted),
        "confirm"
    );
}

#[test]
fn every_kind_verifies() {
    let pk = es256();
    let nonce = random_nonce;
    let new_key = es256().trusted();
    let cmds = [
        CommandText::start(
            MACHINE,
            SESSION,
            "Fix it",
            "/Users/misha/src",
            &nonce(),
            IAT,
        )
        .set(
            "files",
            serde_json::json!([{"name": "a.png", "type": "image/png", "size": 10,
                    "sha256": "0BNhTcFKN-4g_pIAVzerfTQn5-k1gK1W74pCIF5_ek4"}]),
        )
        .build(),
        CommandText::permission_answer(MACHINE, SESSION, "perm-1", Decision::Allow, &nonce(), IAT)
            .set("note", "fine")
            .build(),
        CommandText::cancel(MACHINE, SESSION, &nonce(), IAT).build(),
        CommandText::key_add(MACHINE, &new_key, Some("iPhone"), &nonce(), IAT).build(),
    ];
    let kinds: Vec<_> = cmds
        .iter()
        .map(|c| {
            judge(&sign_with_confirm(c, &pk), &[pk.trusted()])
                .unwrap()
                .command
        })
        .collect();
    assert!(matches!(&kinds[0].body, Body::Start { files, .. } if files.len() == 1));
    assert_eq!(kinds[1].note.as_deref(), Some("fine"));
    assert_eq!(kinds[2].body, Body::Cancel);
    assert_eq!(
        kinds[3].body,
        Body::KeyAdd {
            key: new_key,
            name: Some("iPhone".into())
        }
    );
}

/// What a knob breaks, the knob, and the fault it must give.
type Knob = (
    &'static str,
    fn(SoftPasskey) -> SoftPasskey,
    fn(&AssertionFault) -> bool,
);

#[test]
fn broken_assertions_are_refused() {
    let knobs: [Knob; 7] = [
        (
            "present only",
            |p| p.with_flags(FLAG_UP),
            |f| *f == AssertionFault::NotVerified,
        ),
        (
            "verified only",
            |p| p.with_flags(FLAG_UV),
            |f| *f == AssertionFault::NotPresent,
        ),
        (
            "a registration",
            |p| p.with_type("webauthn.create"),
            |f| matches!(f, AssertionFault::Ceremony(_)),
        ),
        (
            "another site",
            |p| p.with_origin("https://evil.example"),
            |f| matches!(f, AssertionFault::Origin(_)),
        ),
        (
            "plain http",
            |p| p.with_origin("http://receiver.example"),
            |f| matches!(f, AssertionFault::Origin(_)),
        ),
        (
            "cross-origin",
            |p| p.with_cross_origin(true),
            |f| *f == AssertionFault::CrossOrigin,
        ),
        (
            "another rp id",
            |p| p.with_auth_rp_id("evil.example"),
            |f| *f == AssertionFault::RpIdHash,
        ),
    ];
    for (what, knob, want) in knobs {
        for pk in [es256(), rs256()] {
            let trusted = [pk.trusted()];
            let broken = knob(pk);
            for signed in [
                granted(&prompt(), &broken),
                sign_with_confirm(&prompt(), &broken),
            ] {
                match judge(&signed, &trusted) {
                    Err(Refusal::BadAssertion(f)) => assert!(want(&f), "{what}: {f:?}"),
                    other => panic!("{what}: {other:?}"),
                }
            }
        }
    }
}

#[test]
fn any_origin_on_the_rp_id_is_fine() {
    for origin in [
        "https://app.receiver.example",
        "https://receiver.example:8443",
    ] {
        let pk = es256().with_origin(origin);
        assert_eq!(code(&granted(&prompt(), &pk), &[pk.trusted()]), "grant");
    }
    let local = SoftPasskey::es256("localhost", "http://localhost:5173");
    let day = DayKey::generate();
    let g = grant(&local, &day, IAT - MINUTE, IAT + HOUR, "localhost");
    let signed = sign_with_grant(&prompt(), &day, &g);
    let trusted = [local.trusted()];
    let policy = Policy::new(MACHINE, "localhost", &trusted, NOW);
    assert!(verify(&signed, &policy, &mut MemoryNonces::new()).is_ok());
}

#[test]
fn a_tampered_assertion_is_refused() {
    let pk = es256();
    let mut signed = sign_with_confirm(&prompt(), &pk);
    let confirm = signed.confirm.as_mut().unwrap();
    // Another assertion's signature, over other bytes.
    confirm.sig = pk.assert(b"other").sig;
    assert_eq!(
        judge(&signed, &[pk.trusted()]),
        Err(Refusal::BadAssertion(AssertionFault::Signature))
    );
    // A confirm made for another command.
    let mut other = sign_with_confirm(&prompt(), &pk);
    other.cmd = prompt();
    assert_eq!(
        judge(&other, &[pk.trusted()]),
        Err(Refusal::BadAssertion(AssertionFault::Challenge))
    );
}

#[test]
fn keys_not_enrolled_are_untrusted() {
    let (pk, stranger) = (es256(), es256());
    assert_eq!(
        code(&granted(&prompt(), &stranger), &[pk.trusted()]),
        "untrusted_key"
    );
    assert_eq!(
        code(&sign_with_confirm(&prompt(), &stranger), &[pk.trusted()]),
        "untrusted_key"
    );
    // A stranger claiming an enrolled id: its signature does not verify.
    let impostor = es256().with_id(pk.id());
    assert_eq!(
        code(&sign_with_confirm(&prompt(), &impostor), &[pk.trusted()]),
        "bad_assertion"
    );
    assert_eq!(
        code(&sign_with_confirm(&prompt(), &pk), &[]),
        "untrusted_key"
    );
}

#[test]
fn grants_are_for_the_rp_and_a_day_at_most() {
    let pk = es256();
    let trusted = [pk.trusted()];
    let day = DayKey::generate();
    let with = |g: Grant| sign_with_grant(&prompt(), &day, &g);
    let wrong_rp = grant(&pk, &day, IAT - MINUTE, IAT + HOUR, "evil.example");
    assert_eq!(code(&with(wrong_rp), &trusted), "bad_grant");
    let long = grant(&pk, &day, IAT - MINUTE, IAT - MINUTE + 24 * HOUR + 1, RP);
    assert_eq!(code(&with(long), &trusted), "bad_grant");
    let a_day = grant(&pk, &day, IAT - MINUTE, IAT - MINUTE + 24 * HOUR, RP);
    assert_eq!(code(&with(a_day), &trusted), "grant");
}

#[test]
fn commands_inside_their_grant_only() {
    let pk = es256();
    let trusted = [pk.trusted()];
    let day = DayKey::generate();
    let g = grant(&pk, &day, IAT, IAT + 2 * HOUR, RP);
    let at = |iat: i64| {
        let signed = sign_with_grant(&prompt_at(iat), &day, &g);
        let now = iat + MINUTE;
        match verify(
            &signed,
            &Policy::new(MACHINE, RP, &trusted, now),
            &mut MemoryNonces::new(),
        ) {
            Ok(_) => "ok",
            Err(r) => r.code(),
        }
    };
    assert_eq!(at(IAT - 5 * MINUTE), "ok");
    assert_eq!(at(IAT - 5 * MINUTE - 1), "outside_grant");
    assert_eq!(at(IAT + 2 * HOUR), "ok");
    assert_eq!(at(IAT + 2 * HOUR + 1), "outside_grant");
}

#[test]
fn csig_must_be_the_day_keys_over_the_exact_bytes() {
    let pk = es256();
    let trusted = [pk.trusted()];
    let day = DayKey::generate();
    let g = day_grant(&pk, &day);
    let cmd = prompt();
    let mut missing = sign_with_grant(&cmd, &day, &g);
    missing.csig = None;
    assert_eq!(code(&missing, &trusted), "bad_csig");
    let mut other_key = sign_with_grant(&cmd, &day, &g);
    other_key.csig = Some(DayKey::generate().csig(&cmd));
    assert_eq!(code(&other_key, &trusted), "bad_csig");
    let mut tampered = sign_with_grant(&cmd, &day, &g);
    tampered.cmd = cmd.replace("Add the Oct 8 row", "rm -rf ~");
    assert_eq!(code(&tampered, &trusted), "bad_csig");
    let mut respaced = sign_with_grant(&cmd, &day, &g);
    respaced.cmd = cmd.replace(",\"kind\"", ", \"kind\"");
    assert_eq!(
        code(&respaced, &trusted),
        "bad_csig",
        "the bytes, not their meaning"
    );
    let mut garbage = sign_with_grant(&cmd, &day, &g);
    garbage.csig = Some("AAAA".into());
    assert_eq!(code(&garbage, &trusted), "bad_csig");
}

#[test]
fn unsigned_commands() {
    let pk = es256();
    let day = DayKey::generate();
    let cmd = prompt();
    let bare = Signed {
        cmd: cmd.clone(),
        csig: None,
        grant: None,
        confirm: None,
    };
    assert_eq!(code(&bare, &[pk.trusted()]), "unsigned");
    let csig_only = Signed {
        csig: Some(day.csig(&cmd)),
        ..bare
    };
    assert_eq!(code(&csig_only, &[pk.trusted()]), "unsigned");
}

#[test]
fn either_path_is_enough() {
    let (pk, stranger) = (es256(), es256());
    let trusted = [pk.trusted()];
    let cmd = prompt();
    // A good confirm beside a grant from a stranger.
    let mut beside_bad = granted(&cmd, &stranger);
    beside_bad.confirm = sign_with_confirm(&cmd, &pk).confirm;
    assert_eq!(code(&beside_bad, &trusted), "confirm");
    // A good grant beside a confirm from a stranger.
    let mut bad_confirm = granted(&cmd, &pk);
    bad_confirm.confirm = sign_with_confirm(&cmd, &stranger).confirm;
    assert_eq!(code(&bad_confirm, &trusted), "grant");
    // Both good: the confirm, the stronger word, is the one told.
    let mut both = granted(&cmd, &pk);
    both.confirm = sign_with_confirm(&cmd, &pk).confirm;
    assert_eq!(code(&both, &trusted), "confirm");
    // Neither: the grant's refusal.
    let mut neither = granted(&cmd, &pk);
    neither.csig = None;
    neither.confirm = sign_with_confirm(&cmd, &stranger).confirm;
    assert_eq!(code(&neither, &trusted), "bad_csig");
}

#[test]
fn age() {
    let pk = es256();
    let trusted = [pk.trusted()];
    let signed = sign_with_confirm(&prompt(), &pk);
    let at = |policy: Policy| match verify(&signed, &policy, &mut MemoryNonces::new()) {
        Ok(_) => "ok",
        Err(r) => r.code(),
    };
    let policy = |now| Policy::new(MACHINE, RP, &trusted, now);
    assert_eq!(at(policy(IAT + 24 * HOUR)), "ok");
    assert_eq!(at(policy(IAT + 24 * HOUR + 1)), "too_old");
    assert_eq!(at(policy(IAT - 5 * MINUTE)), "ok");
    assert_eq!(at(policy(IAT - 5 * MINUTE - 1)), "future");
    let early_word = Policy {
        max_age_ms: 10 * MINUTE,
        ..policy(IAT + 10 * MINUTE + 1)
    };
    assert_eq!(at(early_word), "too_old");
    let expiring = |exp| Policy {
        expires_at_ms: Some(exp),
        ..policy(NOW)
    };
    assert_eq!(at(expiring(NOW + 1)), "ok");
    assert_eq!(at(expiring(NOW)), "too_old");
    let expired = verify(&signed, &expiring(NOW - 1), &mut MemoryNonces::new());
    assert_eq!(
        expired,
        Err(Refusal::Expired),
        "a daemon may ack it expired"
    );
}

/// A store that fails, or that has seen everything.
struct Store(Result<Recorded, NonceStoreError>, usize);

impl NonceStore for Store {
    fn record(&mut self, _: &str, _: i64, _: i64) -> Result<Recorded, NonceStoreError> {
        self.1 += 1;
        self.0.clone()
    }
}

#[test]
fn the_nonce_is_recorded_last() {
    let pk = es256();
    let trusted = [pk.trusted()];
    let policy = Policy::new(MACHINE, RP, &trusted, NOW);
    let signed = granted(&prompt(), &pk);
    let mut store = MemoryNonces::new();
    assert!(verify(&signed, &policy, &mut store).is_ok());
    assert_eq!(verify(&signed, &policy, &mut store), Err(Refusal::Replay));
    let mut failing = Store(Err(NonceStoreError("disk full".into())), 0);
    assert_eq!(
        verify(&signed, &policy, &mut failing),
        Err(Refusal::NonceStore)
    );
    let mut seen = Store(Ok(Recorded::Seen), 0);
    assert_eq!(verify(&signed, &policy, &mut seen), Err(Refusal::Replay));

    // A refused command never reaches the store, so it never burns its nonce.
    let mut untouched = Store(Ok(Recorded::New), 0);
    let mut bad = signed.clone();
    bad.csig = None;
    assert_eq!(verify(&bad, &policy, &mut untouched), Err(Refusal::BadCsig));
    let old = Policy {
        now_ms: IAT + 25 * HOUR,
        ..policy
    };
    assert_eq!(verify(&signed, &old, &mut untouched), Err(Refusal::TooOld));
    assert_eq!(untouched.1, 0);
}

#[test]
fn checks_run_in_the_spec_order() {
    let (pk, stranger) = (es256(), es256());
    let trusted = [pk.trusted()];
    // The machine before the signature.
    let elsewhere = CommandText::prompt(
        "m_anothermachine00000001",
        SESSION,
        "x",
        &random_nonce(),
        IAT,
    )
    .build();
    assert_eq!(
        code(&granted(&elsewhere, &stranger), &trusted),
        "wrong_machine"
    );
    // The shape before the signature.
    let bare = CommandText::prompt(MACHINE, SESSION, " ", &random_nonce(), IAT).build();
    assert_eq!(code(&granted(&bare, &stranger), &trusted), "bad_fields");
    // The signature before the age.
    let old = prompt_at(IAT - 48 * HOUR);
    assert_eq!(code(&granted(&old, &stranger), &trusted), "untrusted_key");
    assert_eq!(code(&sign_with_confirm(&old, &pk), &trusted), "too_old");
}

#[test]
fn pairing_proofs() {
    let code = "K7Q2-9XMV";
    for pk in [es256(), rs256()] {
        let key = pk.trusted();
        let proof = enrollment_proof(&pk, MACHINE, code);
        assert_eq!(verify_enrollment(MACHINE, code, &key, &proof, RP), Ok(()));
        let other_code = enrollment_proof(&pk, MACHINE, "OTHER-CODE");
        assert!(verify_enrollment(MACHINE, code, &key, &other_code, RP).is_err());
        let other_machine = enrollment_proof(&pk, "m_anothermachine00000001", code);
        assert!(verify_enrollment(MACHINE, code, &key, &other_machine, RP).is_err());
        assert!(verify_enrollment(MACHINE, code, &key, &proof, "evil.example").is_err());
        let unverified = enrollment_proof(&pk.clone().with_flags(FLAG_UP), MACHINE, code);
        assert!(verify_enrollment(MACHINE, code, &key, &unverified, RP).is_err());
    }
    // A receiver that swaps in its own key cannot make the proof.
    let (person, receiver) = (es256(), es256());
    let proof = enrollment_proof(&person, MACHINE, code);
    let swapped = TrustedKey {
        id: person.id().to_string(),
        ..receiver.trusted()
    };
    assert!(verify_enrollment(MACHINE, code, &swapped, &proof, RP).is_err());
    assert_eq!(
        verify_enrollment(MACHINE, code, &receiver.trusted(), &proof, RP),
        Err(Refusal::UntrustedKey)
    );
}

#[test]
fn signed_reads_the_envelope_shape() {
    let pk = es256();
    let signed = granted(&prompt(), &pk);
    let json = serde_json::to_value(&signed).unwrap();
    let grant = json["grant"].as_object().unwrap();
    assert_eq!(
        grant.keys().collect::<Vec<_>>(),
        ["str", "cred", "ad", "cd", "sig"]
    );
    assert!(json.get("confirm").is_none());
    let back: Signed = serde_json::from_value(json).unwrap();
    assert_eq!(back, signed);
    let nulls: Signed =
        serde_json::from_str(r#"{"cmd":"{}","csig":null,"grant":null,"confirm":null}"#).unwrap();
    assert_eq!((nulls.csig, nulls.grant, nulls.confirm), (None, None, None));
}

#[test]
fn codes_are_the_protocols() {
    let all = [
        Refusal::Malformed,
        Refusal::NotACommand,
        Refusal::WrongMachine,
        Refusal::UnknownKind,
        Refusal::BadSession,
        Refusal::BadFields(String::new()),
        Refusal::BadNonce,
        Refusal::TooOld,
        Refusal::Future,
        Refusal::Unsigned,
        Refusal::UntrustedKey,
        Refusal::BadAssertion(AssertionFault::Signature),
        Refusal::BadGrant(GrantFault::NotAGrant),
        Refusal::OutsideGrant,
        Refusal::BadCsig,
        Refusal::Replay,
        Refusal::NonceStore,
    ];
    let codes: Vec<_> = all.iter().map(Refusal::code).collect();
    assert_eq!(
        codes,
        [
            "malformed",
            "not_a_command",
            "wrong_machine",
            "unknown_kind",
            "bad_session",
            "bad_fields",
            "bad_nonce",
            "too_old",
            "future",
            "unsigned",
            "untrusted_key",
            "bad_assertion",
            "bad_grant",
            "outside_grant",
            "bad_csig",
            "replay",
            "nonce_store"
        ]
    );
    assert_eq!(Refusal::Expired.code(), "too_old");
}
