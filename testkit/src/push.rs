//! A Web Push service on loopback, for tests (feature `push`): the part of a
//! browser vendor's push service and of the browser itself that a sender's
//! test needs.
//!
//! This module owns: handing out subscriptions as a browser's
//! `PushSubscription.toJSON()` would (a fresh P-256 key pair and 16-byte auth
//! secret each, the private half kept here), taking the sender's `POST`s on
//! them, checking each one's VAPID header (RFC 8292: the ES256 signature
//! against its `k=` key, `aud`, `exp`), decrypting its body (RFC 8291,
//! `aes128gcm`), recording what came, and answering as a push service does
//! (201, or 410 for an endpoint [`PushService::expire`]d).
//!
//! It must not share code with the sender it tests: the decryption and the
//! JWT check here are written from the RFCs on their own, on the RustCrypto
//! primitives, so a mistake in the sender cannot cancel out against the same
//! mistake here. It is test-only: its keys are throwaway.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes128Gcm, Key, Nonce};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use hkdf::Hkdf;
use p256::ecdsa::signature::Verifier;
use p256::ecdsa::{Signature, VerifyingKey};
use p256::elliptic_curve::Generate;
use p256::elliptic_curve::sec1::ToSec1Point;
use p256::{PublicKey, SecretKey};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::http::{HttpServer, Request, Response};

/// The largest body a push service must take (RFC 8030 §7.2); more is 413.
const MAX_BODY: usize = 4096;

/// One message as the push service received it.
#[derive(Clone, Debug)]
pub struct Received {
    /// The subscription's endpoint, as [`PushService::subscribe`] gave it.
    pub endpoint: String,
    pub ttl: Option<String>,
    pub urgency: Option<String>,
    pub topic: Option<String>,
    pub content_encoding: Option<String>,
    /// The VAPID check: what the verified token said, or why it failed.
    pub vapid: Result<VapidClaims, String>,
    /// The decrypted payload, or why it could not be decrypted.
    pub payload: Result<Vec<u8>, String>,
    /// What the service answered.
    pub status: u16,
}

impl Received {
    /// The `Authorization` header verified (signature, `aud`, `exp`, `sub`).
    pub fn vapid_verified(&self) -> bool {
        self.vapid.is_ok()
    }
}

/// A verified VAPID token's facts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VapidClaims {
    /// The `k=` public key, base64url as sent.
    pub key: String,
    pub aud: String,
    pub sub: String,
    /// Seconds since the epoch.
    pub exp: u64,
}

struct Subscriber {
    endpoint: String,
    secret: SecretKey,
    auth: [u8; 16],
    expired: bool,
}

#[derive(Default)]
struct State {
    origin: String,
    /// By path, `/push/<id>`.
    subscribers: HashMap<String, Subscriber>,
    received: Vec<Received>,
    /// Answers for the next messages, whatever their endpoint.
    forced: Vec<(u16, Option<String>)>,
    messages: u64,
}

/// A running push service; it stops when dropped.
pub struct PushService {
    server: HttpServer,
    state: Arc<Mutex<State>>,
}

impl PushService {
    /// Binds `127.0.0.1` on a free port.
    pub fn start() -> std::io::Result<PushService> {
        let state = Arc::new(Mutex::new(State::default()));
        let handler_state = Arc::clone(&state);
        let server = HttpServer::start(move |req| handle(&handler_state, req))?;
        lock(&state).origin = server.base_url();
        Ok(PushService { server, state })
    }

    /// `http://127.0.0.1:PORT`: what a VAPID token's `aud` must be.
    pub fn origin(&self) -> String {
        self.server.base_url()
    }

    /// A new subscription, as the browser's `PushSubscription.toJSON()`:
    /// `{"endpoint": "http://127.0.0.1:PORT/push/<id>", "expirationTime": null,
    /// "keys": {"p256dh": …, "auth": …}}`.
    ///
    /// # Panics
    ///
    /// When the system's random source fails.
    pub fn subscribe(&self) -> Value {
        let secret = SecretKey::try_generate().expect("the system's random source");
        let mut auth = [0u8; 16];
        getrandom::fill(&mut auth).expect("the system's random source");
        let mut id = [0u8; 16];
        getrandom::fill(&mut id).expect("the system's random source");
        let path = format!("/push/{}", B64.encode(id));
        let endpoint = format!("{}{path}", self.origin());
        let p256dh = B64.encode(secret.public_key().to_sec1_point(false).as_bytes());
        let json = json!({
            "endpoint": endpoint,
            "expirationTime": null,
            "keys": {"p256dh": p256dh, "auth": B64.encode(auth)},
        });
        lock(&self.state).subscribers.insert(
            path,
            Subscriber {
                endpoint,
                secret,
                auth,
                expired: false,
            },
        );
        json
    }

    /// From now on `endpoint` answers 410 Gone, as after the person
    /// unsubscribed. An endpoint this service never gave is ignored.
    pub fn expire(&self, endpoint: &str) {
        let mut st = lock(&self.state);
        if let Some(s) = st.subscribers.values_mut().find(|s| s.endpoint == endpoint) {
            s.expired = true;
        }
    }

    /// The next message, whatever its endpoint, is answered `status` (with
    /// `Retry-After` when given) after it is recorded; several calls queue.
    pub fn fail_next(&self, status: u16, retry_after: Option<&str>) {
        lock(&self.state)
            .forced
            .push((status, retry_after.map(str::to_string)));
    }

    /// Every message received so far, in arrival order (those answered with
    /// an error too).
    pub fn received(&self) -> Vec<Received> {
        lock(&self.state).received.clone()
    }

    /// Waits until at least `n` messages came (or `timeout` passed) and
    /// returns them all.
    pub fn wait_for(&self, n: usize, timeout: Duration) -> Vec<Received> {
        let end = Instant::now() + timeout;
        loop {
            let got = self.received();
            if got.len() >= n || Instant::now() >= end {
                return got;
            }
            thread::sleep(Duration::from_millis(10));
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn handle(state: &Mutex<State>, req: &Request) -> Response {
    let mut st = lock(state);
    let origin = st.origin.clone();
    let Some(sub) = st.subscribers.get(req.path()) else {
        return Response::json(404, &json!({"error": "no such subscription"}));
    };
    if !req.method.eq_ignore_ascii_case("POST") {
        return Response::json(405, &json!({"error": "POST a push message"}));
    }
    let vapid = check_vapid(req.header("authorization"), &origin, SystemTime::now());
    let content_encoding = req.header("content-encoding").map(str::to_string);
    let payload = if content_encoding.as_deref() == Some("aes128gcm") {
        decrypt(&req.body, &sub.secret, &sub.auth)
    } else {
        Err("Content-Encoding is not aes128gcm".to_string())
    };
    let mut answer = if sub.expired {
        (410, None)
    } else if req.body.len() > MAX_BODY {
        (413, None)
    } else if vapid.is_err() {
        // RFC 8292 §4.2: an invalid token is 403.
        (403, None)
    } else if payload.is_err() {
        (400, None)
    } else {
        (201, None)
    };
    let endpoint = sub.endpoint.clone();
    if !st.forced.is_empty() {
        answer = st.forced.remove(0);
    }
    st.messages += 1;
    let location = format!("/message/{}", st.messages);
    st.received.push(Received {
        endpoint,
        ttl: req.header("ttl").map(str::to_string),
        urgency: req.header("urgency").map(str::to_string),
        topic: req.header("topic").map(str::to_string),
        content_encoding,
        vapid,
        payload,
        status: answer.0,
    });
    let mut response = Response::new(answer.0, "text/plain", Vec::new());
    if answer.0 == 201 {
        response = response.with_header("Location", &location);
    }
    if let Some(ra) = &answer.1 {
        response = response.with_header("Retry-After", ra);
    }
    response
}

/// RFC 8292 §3: `vapid t=<JWT>, k=<key>`, the JWT ES256 signed by `k`, `aud`
/// this origin, `exp` in the future and at most 24 h ahead, `sub` a
/// `mailto:` or `https:` contact.
fn check_vapid(header: Option<&str>, origin: &str, now: SystemTime) -> Result<VapidClaims, String> {
    let header = header.ok_or("no Authorization header")?;
    let (scheme, params) = header
        .split_once(' ')
        .ok_or("Authorization is not `vapid t=…, k=…`")?;
    if !scheme.eq_ignore_ascii_case("vapid") {
        return Err(format!("the Authorization scheme is {scheme:?}, not vapid"));
    }
    let (mut t, mut k) = (None, None);
    for param in params.split(',') {
        match param.trim().split_once('=') {
            Some(("t", v)) => t = Some(v.trim()),
            Some(("k", v)) => k = Some(v.trim()),
            _ => {}
        }
    }
    let (t, k) = (
        t.ok_or("no t= in Authorization")?,
        k.ok_or("no k= in Authorization")?,
    );
    let key_bytes = B64.decode(k).map_err(|_| "k= is not base64url")?;
    if key_bytes.len() != 65 || key_bytes[0] != 4 {
        return Err("k= is not an uncompressed P-256 point".into());
    }
    let key = VerifyingKey::from_sec1_bytes(&key_bytes).map_err(|_| "k= is not a P-256 key")?;

    let mut parts = t.split('.');
    let (Some(h), Some(c), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("t= is not a JWS in compact form".into());
    };
    let header: Value = B64
        .decode(h)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or("the JWT header is not base64url JSON")?;
    if header.get("alg").and_then(Value::as_str) != Some("ES256") {
        return Err("the JWT's alg is not ES256".into());
    }
    let sig = B64
        .decode(s)
        .ok()
        .and_then(|b| Signature::from_slice(&b).ok())
        .ok_or("the JWT signature is not 64 bytes r || s")?;
    key.verify(format!("{h}.{c}").as_bytes(), &sig)
        .map_err(|_| "the JWT signature does not verify with k=")?;

    let claims: Value = B64
        .decode(c)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or("the JWT claims are not base64url JSON")?;
    let aud = claims
        .get("aud")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if aud != origin {
        return Err(format!("aud is {aud:?}, not {origin:?}"));
    }
    let exp = claims
        .get("exp")
        .and_then(Value::as_u64)
        .ok_or("exp is missing or not a number")?;
    let now_s = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    if exp <= now_s {
        return Err("exp is past".into());
    }
    if exp > now_s + 24 * 3600 {
        return Err("exp is more than 24 h ahead".into());
    }
    let sub = claims
        .get("sub")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !(sub.starts_with("mailto:") || sub.starts_with("https://")) {
        return Err("sub is not a mailto: or https: contact".into());
    }
    Ok(VapidClaims {
        key: k.to_string(),
        aud: aud.to_string(),
        sub: sub.to_string(),
        exp,
    })
}

/// RFC 8291 §3.4 and RFC 8188 §2, as the user agent does it, one record.
fn decrypt(body: &[u8], ua_secret: &SecretKey, auth: &[u8; 16]) -> Result<Vec<u8>, String> {
    // salt (16) || rs (4) || idlen (1) || keyid (idlen) || record
    if body.len() < 21 {
        return Err("shorter than the aes128gcm header".into());
    }
    let salt = &body[..16];
    let rs = u32::from_be_bytes([body[16], body[17], body[18], body[19]]) as usize;
    let idlen = body[20] as usize;
    if idlen != 65 {
        return Err(format!("keyid is {idlen} bytes, not the 65 of a P-256 key"));
    }
    let Some(as_key) = body.get(21..21 + idlen) else {
        return Err("shorter than its keyid".into());
    };
    let record = &body[21 + idlen..];
    if rs < 18 {
        return Err(format!("record size {rs} is below 18"));
    }
    if record.len() > rs {
        return Err("more than one record (RFC 8291 §4 allows one)".into());
    }
    let as_public = PublicKey::from_sec1_bytes(as_key).map_err(|_| "keyid is not a P-256 key")?;
    let ua_public = ua_secret.public_key();

    let shared = p256::ecdh::diffie_hellman(ua_secret.to_nonzero_scalar(), as_public.as_affine());
    let mut key_info = b"WebPush: info\0".to_vec();
    key_info.extend_from_slice(ua_public.to_sec1_point(false).as_bytes());
    key_info.extend_from_slice(as_key);
    let mut ikm = [0u8; 32];
    Hkdf::<Sha256>::new(Some(auth), shared.raw_secret_bytes())
        .expand(&key_info, &mut ikm)
        .map_err(|_| "HKDF")?;
    let hk = Hkdf::<Sha256>::new(Some(salt), &ikm);
    let mut cek = [0u8; 16];
    let mut nonce = [0u8; 12];
    hk.expand(b"Content-Encoding: aes128gcm\0", &mut cek)
        .map_err(|_| "HKDF")?;
    hk.expand(b"Content-Encoding: nonce\0", &mut nonce)
        .map_err(|_| "HKDF")?;

    let mut plain = Aes128Gcm::new(&Key::<Aes128Gcm>::from(cek))
        .decrypt(&Nonce::from(nonce), record)
        .map_err(|_| "the record does not decrypt (wrong keys, or tampered)")?;
    // Padding is zeros after the delimiter; the last record's delimiter is 2.
    while plain.last() == Some(&0) {
        plain.pop();
    }
    match plain.pop() {
        Some(2) => Ok(plain),
        Some(1) => Err("the record's delimiter says more records follow".into()),
        _ => Err("the record has no padding delimiter".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 8291 Appendix A, from the user agent's side.
    #[test]
    fn decrypts_the_rfc_8291_example() {
        let d = |s: &str| B64.decode(s).unwrap();
        let ua = SecretKey::from_slice(&d("q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94")).unwrap();
        let auth: [u8; 16] = d("BTBZMqHH6r4Tts7J_aSIgg").try_into().unwrap();
        let body = d(
            "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN",
        );
        assert_eq!(
            decrypt(&body, &ua, &auth).unwrap(),
            b"When I grow up, I want to be a watermelon"
        );
        let mut tampered = body.clone();
        *tampered.last_mut().unwrap() ^= 1;
        assert!(decrypt(&tampered, &ua, &auth).is_err());
        assert!(decrypt(&body[..20], &ua, &auth).is_err());
    }

    #[test]
    fn vapid_headers_that_are_not_right_are_told() {
        let now = SystemTime::now();
        for bad in [
            None,
            Some("Bearer x"),
            Some("vapid k=abc"),
            Some("vapid t=a.b.c, k=!!"),
        ] {
            assert!(
                check_vapid(bad, "http://127.0.0.1:1", now).is_err(),
                "{bad:?}"
            );
        }
    }
}
