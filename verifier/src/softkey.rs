//! A software authenticator for tests (feature `softkey`): passkeys that make
//! real WebAuthn assertions (authenticator data with UP|UV, a `webauthn.get`
//! client data JSON with the challenge and origin, an ES256 DER or RS256
//! signature), day keys, grants, signed commands, pairing proofs and command
//! strings. It signs and nothing else: whatever it makes goes through every
//! check of `verify`. Knobs make the broken assertions the verifier must
//! refuse. Never for production: its keys live in memory.

use crate::keys::{ES256, RS256, b64_encode};
use crate::{Assertion, Decision, FLAG_UP, FLAG_UV, Grant, Signed, TrustedKey, pairing_message};
use p256::elliptic_curve::Generate;
use p256::pkcs8::EncodePublicKey;
use rsa::signature::{Keypair, SignatureEncoding, Signer};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::sync::{Arc, OnceLock};

/// A passkey in memory, for one rp id and origin.
#[derive(Clone)]
pub struct SoftPasskey {
    id: String,
    key: PasskeySigner,
    rp_id: String,
    origin: String,
    flags: u8,
    ceremony: String,
    cross_origin: bool,
    auth_rp_id: Option<String>,
}

#[derive(Clone)]
enum PasskeySigner {
    Es256(p256::ecdsa::SigningKey),
    Rs256(Arc<rsa::pkcs1v15::SigningKey<Sha256>>),
}

impl SoftPasskey {
    /// A new P-256 passkey.
    pub fn es256(rp_id: &str, origin: &str) -> Self {
        let key = p256::ecdsa::SigningKey::try_generate_from_rng(&mut getrandom::SysRng)
            .expect("the system's random source");
        Self::with_signer(PasskeySigner::Es256(key), rp_id, origin)
    }

    /// An RS256 passkey on the process's one RSA-2048 key (made on first use:
    /// generating one takes seconds in a debug build). Each has its own
    /// credential id; [`SoftPasskey::rs256_fresh`] has a key of its own.
    pub fn rs256(rp_id: &str, origin: &str) -> Self {
        static SHARED: OnceLock<Arc<rsa::pkcs1v15::SigningKey<Sha256>>> = OnceLock::new();
        let key = SHARED.get_or_init(|| Arc::new(new_rsa_key())).clone();
        Self::with_signer(PasskeySigner::Rs256(key), rp_id, origin)
    }

    /// An RS256 passkey with a newly generated RSA-2048 key.
    pub fn rs256_fresh(rp_id: &str, origin: &str) -> Self {
        Self::with_signer(PasskeySigner::Rs256(Arc::new(new_rsa_key())), rp_id, origin)
    }

    fn with_signer(key: PasskeySigner, rp_id: &str, origin: &str) -> Self {
        SoftPasskey {
            id: random_b64(32),
            key,
            rp_id: rp_id.to_string(),
            origin: origin.to_string(),
            flags: FLAG_UP | FLAG_UV,
            ceremony: "webauthn.get".into(),
            cross_origin: false,
            auth_rp_id: None,
        }
    }

    /// The credential id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The key as a machine enrolls it.
    pub fn trusted(&self) -> TrustedKey {
        let (alg, der) = match &self.key {
            PasskeySigner::Es256(k) => (ES256, k.verifying_key().to_public_key_der()),
            PasskeySigner::Rs256(k) => (RS256, k.verifying_key().to_public_key_der()),
        };
        TrustedKey {
            id: self.id.clone(),
            alg,
            spki: b64_encode(der.expect("an SPKI encodes").as_bytes()),
        }
    }

    /// An assertion over `signed_bytes`: the challenge is
    /// base64url(sha256(signed_bytes)).
    pub fn assert(&self, signed_bytes: &[u8]) -> Assertion {
        let rp = self.auth_rp_id.as_deref().unwrap_or(&self.rp_id);
        let mut ad = Sha256::digest(rp.as_bytes()).to_vec();
        ad.push(self.flags);
        ad.extend_from_slice(&1u32.to_be_bytes());
        let cd = compact(&json!({
            "type": self.ceremony,
            "challenge": b64_encode(&Sha256::digest(signed_bytes)),
            "origin": self.origin,
            "crossOrigin": self.cross_origin,
        }));
        let mut message = ad.clone();
        message.extend_from_slice(&Sha256::digest(cd.as_bytes()));
        let sig = match &self.key {
            PasskeySigner::Es256(k) => {
                let sig: p256::ecdsa::Signature = k.sign(&message);
                sig.to_der().as_bytes().to_vec()
            }
            PasskeySigner::Rs256(k) => k.sign(&message).to_vec(),
        };
        Assertion {
            cred: self.id.clone(),
            ad: b64_encode(&ad),
            cd: b64_encode(cd.as_bytes()),
            sig: b64_encode(&sig),
        }
    }

    /// Knob: another credential id (the key stays).
    pub fn with_id(mut self, id: &str) -> Self {
        self.id = id.to_string();
        self
    }

    /// Knob: the authenticator data flags (UP = 0x01, UV = 0x04).
    pub fn with_flags(mut self, flags: u8) -> Self {
        self.flags = flags;
        self
    }

    /// Knob: the client data `type` (`webauthn.create`, say).
    pub fn with_type(mut self, ceremony: &str) -> Self {
        self.ceremony = ceremony.to_string();
        self
    }

    /// Knob: the client data `origin`.
    pub fn with_origin(mut self, origin: &str) -> Self {
        self.origin = origin.to_string();
        self
    }

    /// Knob: the client data `crossOrigin`.
    pub fn with_cross_origin(mut self, cross_origin: bool) -> Self {
        self.cross_origin = cross_origin;
        self
    }

    /// Knob: authenticator data made for another rp id.
    pub fn with_auth_rp_id(mut self, rp_id: &str) -> Self {
        self.auth_rp_id = Some(rp_id.to_string());
        self
    }
}

fn new_rsa_key() -> rsa::pkcs1v15::SigningKey<Sha256> {
    let private =
        rsa::PrivateKey::new(&mut getrandom::SysRng, 2048).expect("an RSA-2048 key generates");
    rsa::pkcs1v15::SigningKey::new(private)
}

/// A device's day key (P-256), which a grant names and which signs `csig`.
#[derive(Clone)]
pub struct DayKey(p256::ecdsa::SigningKey);

impl DayKey {
    pub fn generate() -> Self {
        DayKey(
            p256::ecdsa::SigningKey::try_generate_from_rng(&mut getrandom::SysRng)
                .expect("the system's random source"),
        )
    }

    /// Its SPKI, base64url: a grant's `pub`.
    pub fn spki_b64(&self) -> String {
        let der = self
            .0
            .verifying_key()
            .to_public_key_der()
            .expect("an SPKI encodes");
        b64_encode(der.as_bytes())
    }

    /// `csig`: raw `r‖s` over the exact bytes of `cmd`, base64url.
    pub fn csig(&self, cmd: &str) -> String {
        let sig: p256::ecdsa::Signature = self.0.sign(cmd.as_bytes());
        b64_encode(&sig.to_bytes())
    }
}

/// A day grant: `passkey`'s assertion over the grant string naming `day`.
pub fn grant(passkey: &SoftPasskey, day: &DayKey, iat_ms: i64, exp_ms: i64, rp: &str) -> Grant {
    let text = compact(&json!({
        "v": 1,
        "t": "sessionpipe.grant",
        "pub": day.spki_b64(),
        "iat": iat_ms,
        "exp": exp_ms,
        "rp": rp,
    }));
    Grant {
        assertion: passkey.assert(text.as_bytes()),
        str: text,
    }
}

/// `cmd` signed by `day` under `grant`.
pub fn sign_with_grant(cmd: &str, day: &DayKey, grant: &Grant) -> Signed {
    Signed {
        cmd: cmd.to_string(),
        csig: Some(day.csig(cmd)),
        grant: Some(grant.clone()),
        confirm: None,
    }
}

/// `cmd` confirmed by one assertion of `passkey` over it.
pub fn sign_with_confirm(cmd: &str, passkey: &SoftPasskey) -> Signed {
    Signed {
        cmd: cmd.to_string(),
        csig: None,
        grant: None,
        confirm: Some(passkey.assert(cmd.as_bytes())),
    }
}

/// A pairing proof: `passkey`'s assertion for `machine` and pairing `code`.
pub fn enrollment_proof(passkey: &SoftPasskey, machine: &str, code: &str) -> Assertion {
    passkey.assert(pairing_message(machine, code).as_bytes())
}

/// 16 random bytes, base64url: 22 characters.
pub fn random_nonce() -> String {
    random_b64(16)
}

fn random_b64(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes).expect("the system's random source");
    b64_encode(&bytes)
}

/// `value` as compact JSON, its members in the order they were written.
pub fn compact(value: &Value) -> String {
    serde_json::to_string(value).expect("a JSON value serialises")
}

/// A command string being written: members in order, then [`CommandText::build`].
#[derive(Clone, Debug)]
pub struct CommandText(Map<String, Value>);

impl CommandText {
    /// `{"v":1,"t":"sessionpipe.control","machine","kind","session","nonce","iat"}`.
    pub fn new(machine: &str, kind: &str, session: &str, nonce: &str, iat_ms: i64) -> Self {
        let Value::Object(map) = json!({
            "v": 1,
            "t": "sessionpipe.control",
            "machine": machine,
            "kind": kind,
            "session": session,
            "nonce": nonce,
            "iat": iat_ms,
        }) else {
            unreachable!("an object literal")
        };
        CommandText(map)
    }

    pub fn prompt(machine: &str, session: &str, text: &str, nonce: &str, iat_ms: i64) -> Self {
        Self::new(machine, "prompt", session, nonce, iat_ms).set("text", text)
    }

    pub fn start(
        machine: &str,
        session: &str,
        text: &str,
        cwd: &str,
        nonce: &str,
        iat_ms: i64,
    ) -> Self {
        Self::new(machine, "start", session, nonce, iat_ms)
            .set("text", text)
            .set("cwd", cwd)
    }

    pub fn permission_answer(
        machine: &str,
        session: &str,
        for_attention: &str,
        decision: Decision,
        nonce: &str,
        iat_ms: i64,
    ) -> Self {
        Self::new(machine, "permission.answer", session, nonce, iat_ms)
            .set("for", for_attention)
            .set("decision", decision.as_str())
    }

    pub fn cancel(machine: &str, session: &str, nonce: &str, iat_ms: i64) -> Self {
        Self::new(machine, "cancel", session, nonce, iat_ms)
    }

    /// A `key.add` on `sessionpipe:keys`.
    pub fn key_add(
        machine: &str,
        key: &TrustedKey,
        name: Option<&str>,
        nonce: &str,
        iat_ms: i64,
    ) -> Self {
        let added = Self::new(machine, "key.add", crate::KEYS_SESSION, nonce, iat_ms).set(
            "key",
            json!({"id": key.id, "alg": key.alg, "spki": key.spki}),
        );
        match name {
            Some(n) => added.set("name", n),
            None => added,
        }
    }

    /// Sets a member (a `note`, `files`, or one a test wants foreign).
    pub fn set(mut self, member: &str, value: impl Into<Value>) -> Self {
        self.0.insert(member.to_string(), value.into());
        self
    }

    /// Takes a member out.
    pub fn remove(mut self, member: &str) -> Self {
        self.0.shift_remove(member);
        self
    }

    /// The command string, compact.
    pub fn build(&self) -> String {
        compact(&Value::Object(self.0.clone()))
    }
}
