//! Real ceremonies against webauthn-authenticator-rs's software passkey
//! (the test kit's `Phone`): the options this module makes are answered, and
//! the answers go through every check of webauthn-rs.

use super::*;
use crate::db::Location;
use p256::pkcs8::DecodePublicKey;
use serde_json::{Value, json};
use webauthn_rs::prelude::{COSEKeyType, Passkey};

const T0: i64 = 1_760_000_000_000;
const ORIGIN: &str = "http://localhost:8080";

/// The client the ceremonies are started from.
const CLIENT: &str = "192.0.2.1";

async fn accounts() -> (tempfile::TempDir, Arc<Db>, Accounts) {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(Location::Folder(dir.path())).await.unwrap());
    let origin = Url::parse(ORIGIN).unwrap();
    let accounts = Accounts::new(Arc::clone(&db), "localhost", "sessionpipe", &origin, 16).unwrap();
    (dir, db, accounts)
}

/// A phone: the test kit's software passkey, and what its platform keeps.
pub(crate) use sessionpipe_testkit::passkey::Phone;

async fn register(
    accounts: &Accounts,
    phone: &mut Phone,
    name: &str,
    invite: Option<&str>,
    now: i64,
) -> Result<(Account, Credential, bool), AccountError> {
    let (options, ceremony) = accounts
        .register_start(name, invite, false, CLIENT, now)
        .await?;
    let answer = phone.create(&options);
    accounts
        .register_finish(&ceremony, &format!("{name}'s phone"), &answer, now + 1000)
        .await
}

async fn sign_in(
    accounts: &Accounts,
    phone: &mut Phone,
    now: i64,
) -> Result<(Account, Credential), AccountError> {
    let (options, ceremony) = accounts.signin_start(CLIENT, now).await?;
    let answer = phone.get(&options);
    accounts.signin_finish(&ceremony, &answer, now + 1000).await
}

fn code_of<T: std::fmt::Debug>(r: Result<T, AccountError>) -> &'static str {
    r.expect_err("refused").code()
}

/// The words of a `bad_credential` refusal.
fn why<T: std::fmt::Debug>(r: Result<T, AccountError>) -> &'static str {
    match r.expect_err("refused") {
        AccountError::BadCredential(why) => why,
        other => panic!("not bad_credential: {other:?}"),
    }
}

#[tokio::test]
async fn first_registration_is_open_then_invites_are_needed() {
    let (_dir, _db, accounts) = accounts().await;
    assert!(!accounts.any_account().await.unwrap());
    assert_eq!(accounts.registration_mode(false).await.unwrap(), "open");
    assert_eq!(
        (accounts.rp_id(), accounts.rp_name()),
        ("localhost", "sessionpipe")
    );

    let (options, ceremony) = accounts
        .register_start("Ann", None, false, CLIENT, T0)
        .await
        .unwrap();
    // What the page decodes: binary members as base64url strings; a
    // discoverable, user-verified passkey of a kind the protocol takes.
    let pk = &options;
    assert_eq!(pk["rp"]["id"], "localhost");
    assert_eq!(pk["rp"]["name"], "sessionpipe");
    assert_eq!(pk["user"]["name"], "Ann");
    assert_eq!(unb64(pk["challenge"].as_str().unwrap()).unwrap().len(), 32);
    assert_eq!(unb64(pk["user"]["id"].as_str().unwrap()).unwrap().len(), 16);
    assert_eq!(pk["authenticatorSelection"]["residentKey"], "required");
    assert_eq!(pk["authenticatorSelection"]["userVerification"], "required");
    let algs: Vec<i64> = pk["pubKeyCredParams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["alg"].as_i64().unwrap())
        .collect();
    assert_eq!(algs, [-7, -257]);

    let mut phone = Phone::new();
    let answer = phone.create(&options);
    let (ann, cred, first) = accounts
        .register_finish(&ceremony, "Ann's phone", &answer, T0 + 1000)
        .await
        .unwrap();
    assert!(first);
    assert!(ann.id.starts_with("a_") && ann.id.len() == 24, "{}", ann.id);
    assert_eq!((ann.name.as_str(), ann.created_ms), ("Ann", T0 + 1000));
    assert_eq!(cred.id, b64(phone.credential()));
    assert_eq!((cred.account.as_str(), cred.alg), (ann.id.as_str(), -7));
    assert_eq!((cred.name.as_str(), cred.used_ms), ("Ann's phone", None));
    assert_eq!(
        accounts.credential(&cred.id).await.unwrap(),
        Some(cred.clone())
    );
    assert_eq!(accounts.account(&ann.id).await.unwrap(), Some(ann.clone()));

    // One use: the same finish again finds no ceremony.
    let again = accounts
        .register_finish(&ceremony, "Ann's phone", &answer, T0 + 2000)
        .await;
    assert_eq!(code_of(again), "ceremony_expired");

    assert!(accounts.any_account().await.unwrap());
    assert_eq!(accounts.registration_mode(false).await.unwrap(), "invite");
    assert_eq!(accounts.registration_mode(true).await.unwrap(), "open");
    let refused = accounts
        .register_start("Bob", None, false, CLIENT, T0)
        .await;
    assert_eq!(code_of(refused), "invite_needed");

    // Opened by the operator: a second account, not the first.
    let mut bob = Phone::new();
    let (options, ceremony) = accounts
        .register_start("Bob", None, true, CLIENT, T0)
        .await
        .unwrap();
    let answer = bob.create(&options);
    let (b, _, first) = accounts
        .register_finish(&ceremony, "Bob's laptop", &answer, T0)
        .await
        .unwrap();
    assert!(!first);
    assert_ne!(b.id, ann.id);
}

#[tokio::test]
async fn a_first_registration_overtaken_by_another_needs_an_invite() {
    let (_dir, _db, accounts) = accounts().await;
    let (o1, c1) = accounts
        .register_start("Ann", None, false, CLIENT, T0)
        .await
        .unwrap();
    let (o2, c2) = accounts
        .register_start("Eve", None, false, CLIENT, T0)
        .await
        .unwrap();
    let (a1, a2) = (Phone::new().create(&o1), Phone::new().create(&o2));
    let (_, _, first) = accounts.register_finish(&c1, "one", &a1, T0).await.unwrap();
    assert!(first);
    let late = accounts.register_finish(&c2, "two", &a2, T0).await;
    assert_eq!(code_of(late), "invite_needed");
}

#[tokio::test]
async fn invites_add_a_device_or_make_an_account_once() {
    let (_dir, _db, accounts) = accounts().await;
    let mut phone = Phone::new();
    let (ann, cred, _) = register(&accounts, &mut phone, "Ann", None, T0)
        .await
        .unwrap();

    let code = accounts.invite(&ann.id, true, T0).await.unwrap();
    assert_eq!(code.len(), 22);
    let mut laptop = Phone::new();
    // A device invite keeps the account's name, whatever is typed.
    let (options, ceremony) = accounts
        .register_start("", Some(&code), false, CLIENT, T0)
        .await
        .unwrap();
    assert_eq!(options["user"]["name"], "Ann");
    // The account's passkeys are excluded: the same authenticator is not
    // registered twice.
    assert_eq!(options["excludeCredentials"][0]["id"], json!(cred.id));
    let answer = laptop.create(&options);
    let (same, second, first) = accounts
        .register_finish(&ceremony, "Ann's laptop", &answer, T0 + 2000)
        .await
        .unwrap();
    assert!(!first);
    assert_eq!(same, ann);
    assert_eq!(second.account, ann.id);
    // The same user handle: a discoverable sign-in from either names Ann.
    assert_eq!(laptop.user(), phone.user());
    let all = accounts.credentials(&ann.id).await.unwrap();
    assert_eq!(
        all.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
        [cred.id.as_str(), second.id.as_str()]
    );
    // Used up.
    let reused = accounts
        .register_start("", Some(&code), false, CLIENT, T0)
        .await;
    assert_eq!(code_of(reused), "bad_invite");

    let code = accounts.invite(&ann.id, false, T0).await.unwrap();
    let mut bobs = Phone::new();
    let (bob, bob_cred, first) = register(&accounts, &mut bobs, "Bob", Some(&code), T0)
        .await
        .unwrap();
    assert!(!first);
    assert_ne!(bob.id, ann.id);
    assert_eq!(
        (bob.name.as_str(), bob_cred.account.as_str()),
        ("Bob", bob.id.as_str())
    );
    assert_ne!(bobs.user(), phone.user());
    let reused = register(&accounts, &mut Phone::new(), "Eve", Some(&code), T0).await;
    assert_eq!(code_of(reused), "bad_invite");

    // An invite is used up at finish: two registrations started with one
    // code make one account.
    let code = accounts.invite(&ann.id, false, T0).await.unwrap();
    let (o1, c1) = accounts
        .register_start("Cy", Some(&code), false, CLIENT, T0)
        .await
        .unwrap();
    let (o2, c2) = accounts
        .register_start("Di", Some(&code), false, CLIENT, T0)
        .await
        .unwrap();
    let (a1, a2) = (Phone::new().create(&o1), Phone::new().create(&o2));
    accounts.register_finish(&c1, "one", &a1, T0).await.unwrap();
    let second = accounts.register_finish(&c2, "two", &a2, T0).await;
    assert_eq!(code_of(second), "bad_invite");

    // Expired after 24 hours; unknown codes and odd strings alike.
    let code = accounts.invite(&ann.id, true, T0).await.unwrap();
    let late = accounts
        .register_start("", Some(&code), false, CLIENT, T0 + INVITE_MS)
        .await;
    assert_eq!(code_of(late), "bad_invite");
    for bad in ["", "x", "AAAAAAAAAAAAAAAAAAAAAA", "not a code at all!!!!"] {
        let r = accounts
            .register_start("Eve", Some(bad), true, CLIENT, T0)
            .await;
        assert_eq!(code_of(r), "bad_invite", "{bad:?}");
    }
    let unknown = accounts.invite("a_nobody", true, T0).await;
    assert_eq!(code_of(unknown), "unknown_account");
}

#[tokio::test]
async fn invites_are_kept_as_hashes_and_bounded() {
    let (_dir, db, accounts) = accounts().await;
    let (ann, _, _) = register(&accounts, &mut Phone::new(), "Ann", None, T0)
        .await
        .unwrap();
    let code = accounts.invite(&ann.id, true, T0).await.unwrap();
    let rows = db
        .rows("SELECT code_hash, account, created_by FROM invites", vec![])
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].bytes(0).unwrap(), secret_hash(&code));
    assert_eq!(rows[0].opt_text(1).unwrap(), Some(ann.id.clone()));
    for _ in 1..INVITES_MAX {
        accounts.invite(&ann.id, false, T0).await.unwrap();
    }
    assert_eq!(
        code_of(accounts.invite(&ann.id, false, T0).await),
        "too_many_invites"
    );
    // Once they expire, there is room again (and pruning drops them).
    accounts
        .invite(&ann.id, false, T0 + INVITE_MS)
        .await
        .unwrap();
    let left = db
        .rows("SELECT code_hash FROM invites", vec![])
        .await
        .unwrap();
    assert_eq!(left.len(), 1);
}

#[tokio::test]
async fn discoverable_sign_in_finds_the_account_and_keeps_the_counter() {
    let (_dir, db, accounts) = accounts().await;
    let mut phone = Phone::new();
    let (ann, cred, _) = register(&accounts, &mut phone, "Ann", None, T0)
        .await
        .unwrap();
    let mut bobs = Phone::new();
    let code = accounts.invite(&ann.id, false, T0).await.unwrap();
    let (bob, _, _) = register(&accounts, &mut bobs, "Bob", Some(&code), T0)
        .await
        .unwrap();

    let (options, ceremony) = accounts.signin_start(CLIENT, T0 + 5000).await.unwrap();
    assert_eq!(options["rpId"], "localhost");
    assert_eq!(options["userVerification"], "required");
    assert!(options.get("allowCredentials").is_none());
    assert_eq!(
        unb64(options["challenge"].as_str().unwrap()).unwrap().len(),
        32
    );
    let answer = phone.get(&options);
    let (who, used) = accounts
        .signin_finish(&ceremony, &answer, T0 + 6000)
        .await
        .unwrap();
    assert_eq!(who, ann);
    assert_eq!(used.id, cred.id);
    assert_eq!(used.used_ms, Some(T0 + 6000));
    assert_eq!(
        accounts
            .credential(&cred.id)
            .await
            .unwrap()
            .unwrap()
            .used_ms,
        Some(T0 + 6000)
    );
    let again = accounts.signin_finish(&ceremony, &answer, T0 + 6000).await;
    assert_eq!(code_of(again), "ceremony_expired");

    let (who, _) = sign_in(&accounts, &mut bobs, T0 + 7000).await.unwrap();
    assert_eq!(who, bob);

    // The stored passkey follows the authenticator's counter: the soft
    // passkey counts every signature, and webauthn-rs refuses one that does
    // not go up.
    let counter = |db: Arc<Db>, id: String| async move {
        let r = db
            .row("SELECT passkey FROM credentials WHERE id = $1", args![id])
            .await
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(&r.text(0).unwrap()).unwrap();
        v["cred"]["counter"].as_u64().unwrap()
    };
    let before = counter(Arc::clone(&db), cred.id.clone()).await;
    assert!(before >= 1);
    sign_in(&accounts, &mut phone, T0 + 8000).await.unwrap();
    assert_eq!(counter(Arc::clone(&db), cred.id.clone()).await, before + 1);
}

#[tokio::test]
async fn localhost_takes_any_port_and_other_origins_are_refused() {
    let (_dir, _db, accounts) = accounts().await;
    let mut phone = Phone::at("http://localhost:5173");
    register(&accounts, &mut phone, "Ann", None, T0)
        .await
        .unwrap();
    sign_in(&accounts, &mut phone, T0).await.unwrap();

    // A passkey of another site cannot register here.
    let (options, ceremony) = accounts
        .register_start("Eve", None, true, CLIENT, T0)
        .await
        .unwrap();
    let mut options = options;
    options["rp"]["id"] = json!("evil.example");
    let mut other = Phone::at("https://evil.example");
    let answer = other.create(&options);
    let r = accounts.register_finish(&ceremony, "x", &answer, T0).await;
    assert_eq!(why(r), "it was made on another site");

    let https = Url::parse("https://phone.example.net").unwrap();
    let (_dir2, db2, _) = accounts_db().await;
    assert!(Accounts::new(Arc::clone(&db2), "phone.example.net", "x", &https, 16).is_ok());
    assert!(Accounts::new(Arc::clone(&db2), "example.net", "x", &https, 16).is_ok());
    for (rp, origin) in [
        ("other.net", "https://phone.example.net"),
        ("phone.example.net", "http://phone.example.net"),
        ("127.0.0.1", "http://127.0.0.1:8080"),
    ] {
        let r = Accounts::new(Arc::clone(&db2), rp, "x", &Url::parse(origin).unwrap(), 16);
        assert_eq!(code_of(r.map(|_| ())), "config", "{rp} {origin}");
    }
}

async fn accounts_db() -> (tempfile::TempDir, Arc<Db>, ()) {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(Location::Folder(dir.path())).await.unwrap());
    (dir, db, ())
}

#[tokio::test]
async fn tampered_late_and_unknown_answers_are_refused() {
    let (_dir, _db, accounts) = accounts().await;
    let mut phone = Phone::new();

    // A registration whose client data was changed.
    let (options, ceremony) = accounts
        .register_start("Ann", None, false, CLIENT, T0)
        .await
        .unwrap();
    let mut answer = phone.create(&options);
    let cd = unb64(answer["response"]["clientDataJSON"].as_str().unwrap()).unwrap();
    let mut cd: Value = serde_json::from_slice(&cd).unwrap();
    cd["challenge"] = json!(b64(&[7u8; 32]));
    answer["response"]["clientDataJSON"] = json!(b64(cd.to_string().as_bytes()));
    let r = accounts.register_finish(&ceremony, "p", &answer, T0).await;
    assert_eq!(why(r), "it answers another challenge");
    // The refused finish used the ceremony up.
    let answer = phone.create(&options);
    let r = accounts.register_finish(&ceremony, "p", &answer, T0).await;
    assert_eq!(code_of(r), "ceremony_expired");
    assert!(!accounts.any_account().await.unwrap());

    // Too late: five minutes.
    let (options, ceremony) = accounts
        .register_start("Ann", None, false, CLIENT, T0)
        .await
        .unwrap();
    let answer = phone.create(&options);
    let r = accounts
        .register_finish(&ceremony, "p", &answer, T0 + CEREMONY_MS)
        .await;
    assert_eq!(code_of(r), "ceremony_expired");

    // Not a response at all; a bad device name.
    let (options, ceremony) = accounts
        .register_start("Ann", None, false, CLIENT, T0)
        .await
        .unwrap();
    let r = accounts
        .register_finish(&ceremony, "p", &json!({"id": "x"}), T0)
        .await;
    assert_eq!(code_of(r), "bad_credential");
    let answer = phone.create(&options);
    let r = accounts.register_finish("nope", "p", &answer, T0).await;
    assert_eq!(code_of(r), "ceremony_expired");
    for bad in ["", "   ", "a\nb", &"x".repeat(NAME_MAX + 1)] {
        let r = accounts.register_finish(&ceremony, bad, &answer, T0).await;
        assert_eq!(code_of(r), "bad_name", "{bad:?}");
    }
    assert_eq!(
        code_of(accounts.register_start(" ", None, false, CLIENT, T0).await),
        "bad_name"
    );
    let (ann, _, _) = register(&accounts, &mut phone, "Ann", None, T0)
        .await
        .unwrap();

    // A sign-in whose signature was changed.
    let (options, ceremony) = accounts.signin_start(CLIENT, T0).await.unwrap();
    let mut answer = phone.get(&options);
    let mut sig = unb64(answer["response"]["signature"].as_str().unwrap()).unwrap();
    let last = sig.len() - 1;
    sig[last] ^= 1;
    answer["response"]["signature"] = json!(b64(&sig));
    let r = accounts.signin_finish(&ceremony, &answer, T0).await;
    assert_eq!(why(r), "its signature or its data do not verify");

    // Answering another ceremony's challenge.
    let (options, _) = accounts.signin_start(CLIENT, T0).await.unwrap();
    let answer = phone.get(&options);
    let (_, ceremony) = accounts.signin_start(CLIENT, T0).await.unwrap();
    let r = accounts.signin_finish(&ceremony, &answer, T0).await;
    assert_eq!(why(r), "it answers another challenge");

    // Another account's user handle beside Ann's passkey.
    let code = accounts.invite(&ann.id, false, T0).await.unwrap();
    let mut bobs = Phone::new();
    register(&accounts, &mut bobs, "Bob", Some(&code), T0)
        .await
        .unwrap();
    let (options, ceremony) = accounts.signin_start(CLIENT, T0).await.unwrap();
    let mut answer = phone.get(&options);
    answer["response"]["userHandle"] = json!(b64(bobs.user()));
    let r = accounts.signin_finish(&ceremony, &answer, T0).await;
    assert_eq!(why(r), "its user handle is not its account's");

    // No user handle: not a discoverable answer.
    let (options, ceremony) = accounts.signin_start(CLIENT, T0).await.unwrap();
    let mut answer = phone.get(&options);
    answer["response"]["userHandle"] = Value::Null;
    let r = accounts.signin_finish(&ceremony, &answer, T0).await;
    assert_eq!(why(r), "it names no account (no user handle)");

    // A passkey this receiver never registered.
    let (options, ceremony) = accounts.signin_start(CLIENT, T0).await.unwrap();
    let mut answer = phone.get(&options);
    let other = b64(&[9u8; 32]);
    answer["id"] = json!(other);
    answer["rawId"] = json!(other);
    let r = accounts.signin_finish(&ceremony, &answer, T0).await;
    assert_eq!(code_of(r), "unknown_credential");

    // A sign-in ceremony is not a registration's, nor the other way round.
    let (_, ceremony) = accounts.signin_start(CLIENT, T0).await.unwrap();
    let r = accounts.register_finish(&ceremony, "p", &answer, T0).await;
    assert_eq!(code_of(r), "ceremony_expired");

    // Late.
    let (options, ceremony) = accounts.signin_start(CLIENT, T0).await.unwrap();
    let answer = phone.get(&options);
    let r = accounts
        .signin_finish(&ceremony, &answer, T0 + CEREMONY_MS + 1)
        .await;
    assert_eq!(code_of(r), "ceremony_expired");
}

#[tokio::test]
async fn the_stored_spki_is_the_credentials_cose_key() {
    let (_dir, db, accounts) = accounts().await;
    let (_, cred, _) = register(&accounts, &mut Phone::new(), "Ann", None, T0)
        .await
        .unwrap();
    let r = db
        .row(
            "SELECT passkey, spki, alg FROM credentials WHERE id = $1",
            args![cred.id.as_str()],
        )
        .await
        .unwrap()
        .unwrap();
    let passkey: Passkey = serde_json::from_str(&r.text(0).unwrap()).unwrap();
    assert_eq!(b64(passkey.cred_id()), cred.id);
    let COSEKeyType::EC_EC2(ec) = &passkey.get_public_key().key else {
        panic!("not an EC2 key");
    };
    let mut point = vec![4u8];
    point.extend_from_slice(&ec.x);
    point.extend_from_slice(&ec.y);
    let from_cose = p256::PublicKey::from_sec1_bytes(&point).unwrap();
    let spki = unb64(&r.text(1).unwrap()).unwrap();
    let from_spki = p256::PublicKey::from_public_key_der(&spki).unwrap();
    assert_eq!(from_spki, from_cose);
    assert_eq!(r.int(2).unwrap(), -7);
    // What the machines' verifier takes as a key (the same SPKI, whole).
    assert!(p256::ecdsa::VerifyingKey::from_public_key_der(&spki).is_ok());
    assert_eq!(r.text(1).unwrap(), cred.spki);
}

#[test]
fn rsa_keys_become_spki_and_short_or_other_keys_are_refused() {
    use rsa::traits::PublicKeyParts;
    use webauthn_rs::prelude::{COSEAlgorithm, COSEKey, COSEOKPKey, COSERSAKey, EDDSACurve};
    // Any odd 2048-bit modulus is a well-formed key (primality is not
    // checked, and generating a real one takes seconds in a debug build).
    let mut n = random::<256>().to_vec();
    n[0] |= 0x80;
    n[255] |= 1;
    let key = COSEKey {
        type_: COSEAlgorithm::RS256,
        key: COSEKeyType::RSA(COSERSAKey {
            n: n.clone().into(),
            e: [1, 0, 1],
        }),
    };
    let (alg, spki) = keys::protocol_key(&key).unwrap();
    assert_eq!(alg, -257);
    let public = rsa::PublicKey::from_public_key_der(&unb64(&spki).unwrap()).unwrap();
    assert_eq!(public.n().to_be_bytes().as_ref(), n.as_slice());
    assert_eq!(public.e().to_be_bytes().as_ref().last(), Some(&1));

    let short = COSEKey {
        type_: COSEAlgorithm::RS256,
        key: COSEKeyType::RSA(COSERSAKey {
            n: n[..128].to_vec().into(),
            e: [1, 0, 1],
        }),
    };
    assert_eq!(code_of(keys::protocol_key(&short)), "unsupported_key");
    let ed = COSEKey {
        type_: COSEAlgorithm::EDDSA,
        key: COSEKeyType::EC_OKP(COSEOKPKey {
            curve: EDDSACurve::ED25519,
            x: vec![0u8; 32].into(),
        }),
    };
    assert_eq!(code_of(keys::protocol_key(&ed)), "unsupported_key");
}

#[tokio::test]
async fn sessions_are_kept_as_hashes_and_end() {
    let (_dir, db, accounts) = accounts().await;
    let mut phone = Phone::new();
    let (ann, cred, _) = register(&accounts, &mut phone, "Ann", None, T0)
        .await
        .unwrap();
    let token = accounts.open_session(&ann.id, &cred.id, T0).await.unwrap();
    assert_eq!(token.len(), 43);
    assert_eq!(unb64(&token).unwrap().len(), 32);
    assert_eq!(
        accounts.session(&token, T0 + 1).await.unwrap(),
        Some((ann.clone(), cred.id.clone()))
    );
    let rows = db
        .rows("SELECT token_hash, expires_ms FROM web_sessions", vec![])
        .await
        .unwrap();
    assert_eq!(rows[0].bytes(0).unwrap(), secret_hash(&token));
    assert_eq!(rows[0].int(1).unwrap(), T0 + SESSION_MS);

    assert_eq!(
        accounts.session(&token, T0 + SESSION_MS).await.unwrap(),
        None
    );
    for bad in [
        "",
        "x",
        &b64(&[0u8; 32]),
        "not a token with spaces in it ok",
    ] {
        assert_eq!(accounts.session(bad, T0).await.unwrap(), None, "{bad:?}");
    }
    // Another account's credential does not open a session for this one.
    let code = accounts.invite(&ann.id, false, T0).await.unwrap();
    let (bob, bob_cred, _) = register(&accounts, &mut Phone::new(), "Bob", Some(&code), T0)
        .await
        .unwrap();
    let r = accounts.open_session(&ann.id, &bob_cred.id, T0).await;
    assert_eq!(code_of(r), "unknown_credential");
    let bobs = accounts
        .open_session(&bob.id, &bob_cred.id, T0)
        .await
        .unwrap();

    accounts.close_session(&token).await.unwrap();
    assert_eq!(accounts.session(&token, T0).await.unwrap(), None);
    accounts.close_session(&token).await.unwrap();
    assert!(accounts.session(&bobs, T0).await.unwrap().is_some());

    // A removed passkey's sessions end with it.
    db.exec("DELETE FROM credentials WHERE id = $1", args![bob_cred.id])
        .await
        .unwrap();
    assert_eq!(accounts.session(&bobs, T0).await.unwrap(), None);

    // Expired rows are pruned.
    let t = accounts.open_session(&ann.id, &cred.id, T0).await.unwrap();
    accounts
        .invite(&ann.id, true, T0 + SESSION_MS)
        .await
        .unwrap();
    assert_eq!(accounts.session(&t, T0).await.unwrap(), None);
}

#[tokio::test]
async fn ceremonies_are_kept_in_the_database_for_any_process() {
    // Two `Accounts` on one database (two receiver processes on one
    // PostgreSQL, in miniature): a start on one finishes on the other.
    let (_dir, db, one) = accounts().await;
    let origin = Url::parse(ORIGIN).unwrap();
    let two = Accounts::new(Arc::clone(&db), "localhost", "sessionpipe", &origin, 16).unwrap();
    let mut phone = Phone::new();
    let (options, ceremony) = one
        .register_start("Ann", None, false, CLIENT, T0)
        .await
        .unwrap();
    let answer = phone.create(&options);
    let (ann, _, _) = two
        .register_finish(&ceremony, "phone", &answer, T0)
        .await
        .unwrap();
    let (options, ceremony) = two.signin_start(CLIENT, T0).await.unwrap();
    let answer = phone.get(&options);
    let (who, _) = one.signin_finish(&ceremony, &answer, T0).await.unwrap();
    assert_eq!(who, ann);
    let rows = db
        .rows("SELECT kind, state FROM ceremonies", vec![])
        .await
        .unwrap();
    assert!(rows.is_empty(), "finished ceremonies are gone");

    // Expired ones are pruned.
    one.signin_start(CLIENT, T0).await.unwrap();
    one.signin_start(CLIENT, T0 + CEREMONY_MS + PRUNE_EVERY_MS)
        .await
        .unwrap();
    let rows = db.rows("SELECT id FROM ceremonies", vec![]).await.unwrap();
    assert_eq!(rows.len(), 1);
}

#[tokio::test]
async fn one_client_has_its_share_of_ceremonies_and_no_more() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(Location::Folder(dir.path())).await.unwrap());
    let origin = Url::parse(ORIGIN).unwrap();
    let accounts = Accounts::new(Arc::clone(&db), "localhost", "sessionpipe", &origin, 3).unwrap();
    let (flood, other) = ("192.0.2.66", "2001:db8:1:2::/64");
    for i in 0..3 {
        accounts.signin_start(flood, T0 + i).await.unwrap();
    }
    // The fourth waits for the first to end: five minutes after it began.
    match accounts.signin_start(flood, T0 + 1000).await {
        Err(AccountError::ClientBusy { wait }) => {
            assert_eq!(wait.as_millis() as i64, CEREMONY_MS - 1000);
        }
        other => panic!("expected ClientBusy, got {other:?}"),
    }
    assert_eq!(
        code_of(accounts.register_start("Eve", None, false, flood, T0).await),
        "rate_limited"
    );
    // Another client registers and signs in meanwhile.
    let mut phone = Phone::new();
    let (options, ceremony) = accounts
        .register_start("Ann", None, false, other, T0)
        .await
        .unwrap();
    let answer = phone.create(&options);
    accounts
        .register_finish(&ceremony, "phone", &answer, T0 + 1)
        .await
        .unwrap();
    let (options, ceremony) = accounts.signin_start(other, T0 + 2).await.unwrap();
    let answer = phone.get(&options);
    accounts
        .signin_finish(&ceremony, &answer, T0 + 3)
        .await
        .unwrap();
    // A finished ceremony is no longer under way: its slot is free again.
    for _ in 0..3 {
        let (options, ceremony) = accounts.signin_start(other, T0 + 4).await.unwrap();
        let answer = phone.get(&options);
        accounts
            .signin_finish(&ceremony, &answer, T0 + 5)
            .await
            .unwrap();
    }
    // Once the flood's ceremonies end, the client has its share back.
    accounts
        .signin_start(flood, T0 + CEREMONY_MS)
        .await
        .unwrap();
}

#[test]
fn error_codes_are_stable_and_words_hold_no_secret() {
    let all = [
        AccountError::BadName,
        AccountError::InviteNeeded,
        AccountError::BadInvite,
        AccountError::CeremonyExpired,
        AccountError::BadCredential("x"),
        AccountError::UnsupportedKey,
        AccountError::CredentialExists,
        AccountError::UnknownCredential,
        AccountError::UnknownAccount,
        AccountError::TooManyInvites,
        AccountError::Busy,
        AccountError::ClientBusy {
            wait: std::time::Duration::from_secs(5),
        },
        AccountError::Config("c".into()),
        AccountError::Corrupt("passkey"),
    ];
    let codes: Vec<_> = all.iter().map(AccountError::code).collect();
    assert_eq!(
        codes,
        [
            "bad_name",
            "invite_needed",
            "bad_invite",
            "ceremony_expired",
            "bad_credential",
            "unsupported_key",
            "credential_exists",
            "unknown_credential",
            "unknown_account",
            "too_many_invites",
            "busy",
            "rate_limited",
            "config",
            "storage"
        ]
    );
    for e in &all {
        assert!(!e.to_string().is_empty());
        assert!((400..600).contains(&e.status()));
    }
}

#[tokio::test]
async fn two_processes_on_one_postgresql_share_everything_and_one_is_first() {
    let Some(pg) = sessionpipe_testkit::postgres::start_or_skip("accounts on postgres") else {
        return;
    };
    let url = pg.create_database("accounts").unwrap();
    let origin = Url::parse(ORIGIN).unwrap();
    let open = || async { Arc::new(Db::open(Location::Url(&url)).await.unwrap()) };
    let one = Accounts::new(open().await, "localhost", "sessionpipe", &origin, 16).unwrap();
    let two = Accounts::new(open().await, "localhost", "sessionpipe", &origin, 16).unwrap();

    // Two first registrations finishing at once, one on each process: one
    // account is the first, the other needs an invite.
    let (mut ann, mut eve) = (Phone::new(), Phone::new());
    let (o1, c1) = one
        .register_start("Ann", None, false, CLIENT, T0)
        .await
        .unwrap();
    let (o2, c2) = two
        .register_start("Eve", None, false, CLIENT, T0)
        .await
        .unwrap();
    let (a1, a2) = (ann.create(&o1), eve.create(&o2));
    let (r1, r2) = tokio::join!(
        one.register_finish(&c1, "Ann's phone", &a1, T0),
        two.register_finish(&c2, "Eve's phone", &a2, T0),
    );
    let (first, late, mut phone) = match (r1, r2) {
        (Ok(a), Err(e)) => (a, e, ann),
        (Err(e), Ok(a)) => (a, e, eve),
        other => panic!("one first account: {other:?}"),
    };
    assert!(first.2);
    assert_eq!(late.code(), "invite_needed");
    let (account, cred, _) = first;

    // An invite made on one is used on the other; a sign-in started on one
    // finishes on the other; a session opened on one is read on the other.
    let code = one.invite(&account.id, true, T0).await.unwrap();
    let mut laptop = Phone::new();
    let (options, ceremony) = two
        .register_start("", Some(&code), false, CLIENT, T0)
        .await
        .unwrap();
    let answer = laptop.create(&options);
    let (same, _, _) = one
        .register_finish(&ceremony, "laptop", &answer, T0 + 1)
        .await
        .unwrap();
    assert_eq!(same, account);
    assert_eq!(two.credentials(&account.id).await.unwrap().len(), 2);
    let (options, ceremony) = one.signin_start(CLIENT, T0 + 2).await.unwrap();
    let answer = phone.get(&options);
    let again = answer.clone();
    let (who, used) = two.signin_finish(&ceremony, &answer, T0 + 3).await.unwrap();
    assert_eq!((who, used.id.as_str()), (account.clone(), cred.id.as_str()));
    let r = one.signin_finish(&ceremony, &again, T0 + 3).await;
    assert_eq!(code_of(r), "ceremony_expired");
    assert_eq!(
        one.credential(&cred.id).await.unwrap().unwrap().used_ms,
        Some(T0 + 3)
    );
    let token = one.open_session(&account.id, &cred.id, T0).await.unwrap();
    assert_eq!(
        two.session(&token, T0 + 4).await.unwrap(),
        Some((account, cred.id))
    );
    two.close_session(&token).await.unwrap();
    assert_eq!(one.session(&token, T0 + 4).await.unwrap(), None);

    // One client's starts at once, half on each process: its share, no more.
    let (one, two) = (Arc::new(one), Arc::new(two));
    let mut starts = tokio::task::JoinSet::new();
    for i in 0..40 {
        let on = Arc::clone(if i % 2 == 0 { &one } else { &two });
        starts.spawn(async move { on.signin_start("192.0.2.99", T0 + 10).await });
    }
    let done = starts.join_all().await;
    let kept = done.iter().filter(|r| r.is_ok()).count();
    assert_eq!(kept, 16, "the share of one client, over two processes");
    assert!(
        done.iter()
            .filter_map(|r| r.as_ref().err())
            .all(|e| e.code() == "rate_limited")
    );
}
