//! Layer 1, push: Web Push, the sending side: telling a person's phone or
//! browser that an agent needs them (`attention.needed`) through the push
//! service its browser chose.
//!
//! This module owns the three RFCs that make a push message: reading a
//! browser's `PushSubscription.toJSON()` ([`Subscription::from_json`]), the
//! message encryption of RFC 8291 (`aes128gcm`, RFC 8188, one record), the
//! VAPID identification of RFC 8292 (an ES256 JWT over the endpoint's
//! origin, [`Vapid`]), the `POST` of RFC 8030 with its `TTL`, `Urgency` and
//! `Topic` headers, and what the push service's answer means ([`send`]).
//!
//! It must not: log, print or put into an error the payload, the
//! subscription's keys, its endpoint (a capability URL) or the VAPID private
//! key; keep any state (the caller stores the VAPID key and the
//! subscriptions, and drops a subscription on [`PushError::Gone`]); send
//! but through [`Egress`] (where an endpoint may be, and the timeouts: a
//! subscription names any URL its maker likes); or retry (the caller
//! decides, from [`PushError::Retry`]).
//!
//! The cryptography is composed from RustCrypto crates (`p256` for ECDH and
//! ES256, `hkdf`, `sha2`, `aes-gcm`), following RFC 8291 §3.3–3.4 step by
//! step and checked against its Appendix A vector below. The maintained Web
//! Push crate on RustCrypto (`web-push-native`) was the first choice, but
//! its releases are still built on the previous RustCrypto generation
//! (`p256` 0.13, `aes-gcm` 0.10) and sign VAPID through `jwt-simple`, which
//! together bring a second copy of every elliptic-curve crate, RSA 0.9 and
//! about 120 crates more into a tree that already has `p256` 0.14 for the
//! control verifier; the part it would save is about seventy lines here.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::egress::{self, Egress, EgressError};

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes128Gcm, Key, Nonce};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use hkdf::Hkdf;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use p256::elliptic_curve::Generate;
use p256::elliptic_curve::sec1::ToSec1Point;
use p256::elliptic_curve::zeroize::Zeroize;
use p256::pkcs8::{DecodePrivateKey, EncodePrivateKey};
use p256::{PublicKey, SecretKey};
use reqwest::Url;
use reqwest::header::{AUTHORIZATION, CONTENT_ENCODING, CONTENT_TYPE, LOCATION, RETRY_AFTER};
use serde_json::{Value, json};
use sha2::Sha256;

/// The largest payload [`send`] takes, in bytes. A push service need accept
/// no more than 4096 octets of body (RFC 8030 §7.2); less the `aes128gcm`
/// header (86), the padding delimiter (1) and the AEAD tag (16), that is 3993
/// (RFC 8291 §4).
pub const MAX_PAYLOAD: usize = 3993;

/// The record size written in the header: RFC 8291's, and more than one
/// record of at most `MAX_PAYLOAD + 17` bytes needs, so it is always one.
const RECORD_SIZE: u32 = 4096;

/// How far ahead a VAPID token expires: RFC 8292 §2 allows up to 24 h; half
/// of that leaves room for a clock that runs ahead.
const VAPID_LIFETIME: Duration = Duration::from_secs(12 * 3600);

/// The receiver's VAPID key pair (P-256) and the contact it signs with.
///
/// `Debug` shows the public key and subject only.
#[derive(Clone)]
pub struct Vapid {
    key: SigningKey,
    subject: String,
}

/// Why a VAPID key or subject cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum VapidError {
    #[error("the VAPID subject must be a mailto: or https: URL without spaces")]
    Subject,
    #[error("the VAPID key is not a PKCS#8 P-256 private key")]
    Key,
    #[error("the VAPID key could not be encoded as PKCS#8")]
    Encoding,
    #[error("the system's random source failed")]
    Random,
}

impl Vapid {
    /// A new key pair for `subject` (a `mailto:` or `https:` URL: whom the
    /// push service may contact about this sender).
    pub fn generate(subject: &str) -> Result<Vapid, VapidError> {
        check_subject(subject)?;
        let key = SigningKey::try_generate().map_err(|_| VapidError::Random)?;
        Ok(Vapid {
            key,
            subject: subject.to_string(),
        })
    }

    /// The key pair kept by [`Vapid::to_pkcs8_der`], with its subject.
    pub fn from_pkcs8_der(der: &[u8], subject: &str) -> Result<Vapid, VapidError> {
        check_subject(subject)?;
        let key = SigningKey::from_pkcs8_der(der).map_err(|_| VapidError::Key)?;
        Ok(Vapid {
            key,
            subject: subject.to_string(),
        })
    }

    /// The private key as PKCS#8 DER, for the receiver's database. It is the
    /// secret half: keep it as a password is kept.
    pub fn to_pkcs8_der(&self) -> Result<Vec<u8>, VapidError> {
        let doc = self.key.to_pkcs8_der().map_err(|_| VapidError::Encoding)?;
        Ok(doc.as_bytes().to_vec())
    }

    /// The public key as the uncompressed 65-byte point, base64url without
    /// padding: the page's `applicationServerKey`, and the `k=` of every
    /// request.
    pub fn public_key_b64url(&self) -> String {
        B64.encode(self.key.verifying_key().to_sec1_point(false).as_bytes())
    }

    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// The `Authorization` header for a request to `endpoint` at `now`
    /// (RFC 8292 §3): `vapid t=<ES256 JWT>, k=<public key>`.
    fn authorization(&self, endpoint: &Url, now: SystemTime) -> String {
        let exp = now
            .checked_add(VAPID_LIFETIME)
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs());
        let header = B64.encode(br#"{"typ":"JWT","alg":"ES256"}"#);
        let claims = json!({
            "aud": endpoint.origin().ascii_serialization(),
            "exp": exp,
            "sub": self.subject,
        });
        let claims = B64.encode(claims.to_string());
        let signing_input = format!("{header}.{claims}");
        // JWS ES256 is the fixed 64-byte r || s, which is `Signature`'s form.
        let signature: Signature = self.key.sign(signing_input.as_bytes());
        let signature = B64.encode(signature.to_bytes());
        format!(
            "vapid t={signing_input}.{signature}, k={}",
            self.public_key_b64url()
        )
    }
}

impl fmt::Debug for Vapid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Vapid")
            .field("public_key", &self.public_key_b64url())
            .field("subject", &self.subject)
            .finish_non_exhaustive()
    }
}

fn check_subject(subject: &str) -> Result<(), VapidError> {
    if subject.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(VapidError::Subject);
    }
    if let Some(address) = subject.strip_prefix("mailto:") {
        return if address.contains('@') {
            Ok(())
        } else {
            Err(VapidError::Subject)
        };
    }
    match Url::parse(subject) {
        Ok(u) if u.scheme() == "https" && u.host().is_some() => Ok(()),
        _ => Err(VapidError::Subject),
    }
}

/// A browser's push subscription, as kept: the endpoint, and the keys in
/// base64url without padding. Made by [`Subscription::from_json`], which
/// checks them; [`send`] checks the keys again, so a row read back from a
/// database that was altered is refused rather than sent.
///
/// `Debug` shows the endpoint's origin only: the whole endpoint is a
/// capability, and `auth` is a secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Subscription {
    pub endpoint: String,
    /// The user agent's P-256 public key, uncompressed (65 bytes).
    pub p256dh: String,
    /// The 16-byte authentication secret.
    pub auth: String,
}

/// Why a push subscription cannot be used. The words never repeat the input.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SubscriptionError {
    #[error("a push subscription is a JSON object")]
    NotAnObject,
    #[error("{0} is missing or not a string")]
    Missing(&'static str),
    #[error("endpoint is not an absolute URL")]
    EndpointUrl,
    #[error("keys.p256dh is not base64url")]
    P256dhEncoding,
    #[error("keys.p256dh is not an uncompressed P-256 point (65 bytes)")]
    P256dhPoint,
    #[error("keys.auth is not base64url")]
    AuthEncoding,
    #[error("keys.auth must be 16 bytes, not {0}")]
    AuthLength(usize),
}

impl Subscription {
    /// Reads `PushSubscription.toJSON()`: `{"endpoint": "https://…",
    /// "keys": {"p256dh": "…", "auth": "…"}}` (other members, such as
    /// `expirationTime`, are ignored). Where the endpoint may be is
    /// [`Egress`]'s to say, when it is given and at every send.
    pub fn from_json(v: &Value) -> Result<Subscription, SubscriptionError> {
        let o = v.as_object().ok_or(SubscriptionError::NotAnObject)?;
        let endpoint = o
            .get("endpoint")
            .and_then(Value::as_str)
            .ok_or(SubscriptionError::Missing("endpoint"))?;
        let keys = o.get("keys");
        let key = |name: &'static str, path: &'static str| {
            keys.and_then(|k| k.get(name))
                .and_then(Value::as_str)
                .ok_or(SubscriptionError::Missing(path))
        };
        let p256dh = key("p256dh", "keys.p256dh")?;
        let auth = key("auth", "keys.auth")?;
        let url = Url::parse(endpoint).map_err(|_| SubscriptionError::EndpointUrl)?;
        if url.host().is_none() {
            return Err(SubscriptionError::EndpointUrl);
        }
        let (ua_public, auth) = decode_keys(p256dh, auth)?;
        Ok(Subscription {
            endpoint: endpoint.to_string(),
            // Kept in one spelling, whatever padding the browser used.
            p256dh: B64.encode(ua_public.to_sec1_point(false).as_bytes()),
            auth: B64.encode(auth),
        })
    }

    /// The same shape `from_json` reads.
    pub fn to_json(&self) -> Value {
        json!({
            "endpoint": self.endpoint,
            "keys": {"p256dh": self.p256dh, "auth": self.auth},
        })
    }
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let origin = Url::parse(&self.endpoint)
            .map(|u| u.origin().ascii_serialization())
            .unwrap_or_else(|_| "(not a URL)".into());
        f.debug_struct("Subscription")
            .field("endpoint_origin", &origin)
            .field("keys", &"[redacted]")
            .finish()
    }
}

/// Browsers send unpadded base64url; a padded one is taken too.
fn b64url(s: &str) -> Option<Vec<u8>> {
    B64.decode(s.trim_end_matches('=')).ok()
}

fn decode_keys(p256dh: &str, auth: &str) -> Result<(PublicKey, [u8; 16]), SubscriptionError> {
    let point = b64url(p256dh).ok_or(SubscriptionError::P256dhEncoding)?;
    // RFC 8291 §3.2: the uncompressed form (0x04 || x || y), on the curve.
    if point.len() != 65 || point[0] != 0x04 {
        return Err(SubscriptionError::P256dhPoint);
    }
    let ua_public =
        PublicKey::from_sec1_bytes(&point).map_err(|_| SubscriptionError::P256dhPoint)?;
    let auth = b64url(auth).ok_or(SubscriptionError::AuthEncoding)?;
    let auth: [u8; 16] = auth
        .as_slice()
        .try_into()
        .map_err(|_| SubscriptionError::AuthLength(auth.len()))?;
    Ok((ua_public, auth))
}

/// RFC 8030 §5.3.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Urgency {
    VeryLow,
    Low,
    #[default]
    Normal,
    High,
}

impl Urgency {
    pub fn as_str(self) -> &'static str {
        match self {
            Urgency::VeryLow => "very-low",
            Urgency::Low => "low",
            Urgency::Normal => "normal",
            Urgency::High => "high",
        }
    }
}

/// How one message is sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushOptions {
    /// How long the push service may hold the message for an offline device
    /// (`TTL`, seconds; 0 is "now or never").
    pub ttl_s: u32,
    pub urgency: Urgency,
    /// A message with the same topic replaces one still held (`Topic`: 1–32
    /// characters of the base64url alphabet).
    pub topic: Option<String>,
}

impl Default for PushOptions {
    /// An hour, normal urgency, no topic.
    fn default() -> Self {
        PushOptions {
            ttl_s: 3600,
            urgency: Urgency::Normal,
            topic: None,
        }
    }
}

/// The push service took the message (201, 202, or another 2xx).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivered {
    pub status: u16,
    /// The push message's resource (`Location`), when given.
    pub location: Option<String>,
}

/// Why a message was not taken. None of the words carry the payload, a key or
/// the endpoint.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    #[error("the subscription cannot be used: {0}")]
    Subscription(#[from] SubscriptionError),
    #[error("the payload is {len} bytes; a push message carries at most {max}")]
    TooLarge { len: usize, max: usize },
    #[error("a topic is 1-32 characters of the base64url alphabet")]
    Topic,
    #[error("the push service no longer knows this subscription ({status}): drop it")]
    Gone { status: u16 },
    #[error("the push service refused the message as too large (413)")]
    RefusedTooLarge,
    #[error("the push service asks to try again later ({status})")]
    Retry {
        status: u16,
        retry_after: Option<Duration>,
    },
    #[error("the push service refused the message ({0})")]
    Refused(u16),
    #[error("the push service's address is not sent to: {0}")]
    Address(#[from] EgressError),
    #[error("the push service could not be reached: {}", egress::reasons(.0))]
    Transport(reqwest::Error),
    #[error("the system's random source failed")]
    Random,
}

/// Encrypts `payload` for `sub`, signs for its push service and sends it
/// through `egress`. Nothing goes out when the payload is over
/// [`MAX_PAYLOAD`], the topic is malformed, the subscription's keys do not
/// decode, or its endpoint is not somewhere `egress` sends to; a redirect
/// is not followed (it is refused, 3xx).
pub async fn send(
    egress: &Egress,
    vapid: &Vapid,
    sub: &Subscription,
    payload: &[u8],
    opts: &PushOptions,
) -> Result<Delivered, PushError> {
    if payload.len() > MAX_PAYLOAD {
        return Err(PushError::TooLarge {
            len: payload.len(),
            max: MAX_PAYLOAD,
        });
    }
    if let Some(t) = &opts.topic
        && !valid_topic(t)
    {
        return Err(PushError::Topic);
    }
    let (client, endpoint) = egress.client_for(&sub.endpoint)?;
    let (ua_public, auth) = decode_keys(&sub.p256dh, &sub.auth)?;
    let body = encrypt(payload, &ua_public, &auth)?;
    let authorization = vapid.authorization(&endpoint, SystemTime::now());

    let mut request = client
        .post(endpoint)
        .header("TTL", opts.ttl_s.to_string())
        .header("Urgency", opts.urgency.as_str())
        .header(CONTENT_ENCODING, "aes128gcm")
        .header(CONTENT_TYPE, "application/octet-stream")
        .header(AUTHORIZATION, authorization)
        .body(body);
    if let Some(t) = &opts.topic {
        request = request.header("Topic", t.as_str());
    }
    // The URL is the endpoint, a capability: keep it out of the error.
    let response = request
        .send()
        .await
        .map_err(|e| PushError::Transport(e.without_url()))?;
    outcome(
        response.status().as_u16(),
        response.headers(),
        SystemTime::now(),
    )
}

/// What the push service's answer means (RFC 8030 §5, §8.4; RFC 8292 §4.2).
fn outcome(
    status: u16,
    headers: &reqwest::header::HeaderMap,
    now: SystemTime,
) -> Result<Delivered, PushError> {
    match status {
        // RFC 8030 answers 201 (202 when asked for a receipt); any other 2xx
        // still means the message was taken.
        200..=299 => Ok(Delivered {
            status,
            location: headers
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
        }),
        404 | 410 => Err(PushError::Gone { status }),
        413 => Err(PushError::RefusedTooLarge),
        429 | 500..=599 => Err(PushError::Retry {
            status,
            retry_after: headers
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| retry_after(v, now)),
        }),
        _ => Err(PushError::Refused(status)),
    }
}

/// `Retry-After`: delay-seconds or an HTTP-date (RFC 9110 §10.2.3); a date
/// already past is no wait.
fn retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(s) = value.parse::<u64>() {
        return Some(Duration::from_secs(s));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

fn valid_topic(t: &str) -> bool {
    (1..=32).contains(&t.len())
        && t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// RFC 8291 with a fresh application-server key pair and salt per message.
fn encrypt(payload: &[u8], ua_public: &PublicKey, auth: &[u8; 16]) -> Result<Vec<u8>, PushError> {
    let as_secret = SecretKey::try_generate().map_err(|_| PushError::Random)?;
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|_| PushError::Random)?;
    Ok(encrypt_with(payload, ua_public, auth, &as_secret, salt))
}

/// RFC 8291 §3.3–3.4 and RFC 8188 §2, one record. Deterministic given the
/// key pair and salt, for the RFC's test vector. `payload` is at most
/// `MAX_PAYLOAD` bytes.
fn encrypt_with(
    payload: &[u8],
    ua_public: &PublicKey,
    auth: &[u8; 16],
    as_secret: &SecretKey,
    salt: [u8; 16],
) -> Vec<u8> {
    let ua_point = ua_public.to_sec1_point(false);
    let as_point = as_secret.public_key().to_sec1_point(false);
    let shared = p256::ecdh::diffie_hellman(as_secret.to_nonzero_scalar(), ua_public.as_affine());

    // IKM = HKDF(auth, ecdh_secret, "WebPush: info" 0x00 ua_public as_public, 32)
    let mut key_info = Vec::with_capacity(14 + 65 + 65);
    key_info.extend_from_slice(b"WebPush: info\0");
    key_info.extend_from_slice(ua_point.as_bytes());
    key_info.extend_from_slice(as_point.as_bytes());
    let mut ikm = [0u8; 32];
    Hkdf::<Sha256>::new(Some(auth), shared.raw_secret_bytes())
        .expand(&key_info, &mut ikm)
        .expect("32 bytes are within HKDF-SHA-256's output limit");

    // CEK and NONCE from the salt and IKM (RFC 8188 §2.2, §2.3).
    let hk = Hkdf::<Sha256>::new(Some(&salt), &ikm);
    ikm.zeroize();
    let mut cek = [0u8; 16];
    let mut nonce = [0u8; 12];
    hk.expand(b"Content-Encoding: aes128gcm\0", &mut cek)
        .expect("16 bytes are within HKDF-SHA-256's output limit");
    hk.expand(b"Content-Encoding: nonce\0", &mut nonce)
        .expect("12 bytes are within HKDF-SHA-256's output limit");

    // The only (so the last) record: the payload, then the delimiter 0x02,
    // no padding.
    let mut plaintext = Vec::with_capacity(payload.len() + 1);
    plaintext.extend_from_slice(payload);
    plaintext.push(0x02);
    let cipher = Aes128Gcm::new(&Key::<Aes128Gcm>::from(cek));
    cek.zeroize();
    let sealed = cipher
        .encrypt(&Nonce::from(nonce), plaintext.as_slice())
        .expect("a record of at most 3994 bytes is within AES-GCM's limit");
    plaintext.zeroize();

    // Header: salt (16) || rs (4, big-endian) || idlen (1) || keyid (the
    // application server's public key, 65).
    let mut body = Vec::with_capacity(86 + sealed.len());
    body.extend_from_slice(&salt);
    body.extend_from_slice(&RECORD_SIZE.to_be_bytes());
    body.push(65);
    body.extend_from_slice(as_point.as_bytes());
    body.extend_from_slice(&sealed);
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::VerifyingKey;
    use p256::ecdsa::signature::Verifier;

    fn d(s: &str) -> Vec<u8> {
        B64.decode(s).expect("test vector is base64url")
    }

    fn ua_key() -> (SecretKey, String) {
        let secret = SecretKey::try_generate().expect("random");
        let public = B64.encode(secret.public_key().to_sec1_point(false).as_bytes());
        (secret, public)
    }

    fn sub_json(endpoint: &str, p256dh: &str, auth: &str) -> Value {
        json!({"endpoint": endpoint, "expirationTime": null, "keys": {"p256dh": p256dh, "auth": auth}})
    }

    const AUTH16: &str = "BTBZMqHH6r4Tts7J_aSIgg";

    // RFC 8291 Appendix A, every byte of the message.
    #[test]
    fn the_rfc_8291_example_encrypts_exactly() {
        let as_secret =
            SecretKey::from_slice(&d("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw")).unwrap();
        let ua_public = PublicKey::from_sec1_bytes(&d(
            "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
        ))
        .unwrap();
        let auth: [u8; 16] = d(AUTH16).try_into().unwrap();
        let salt: [u8; 16] = d("DGv6ra1nlYgDCS1FRnbzlw").try_into().unwrap();
        let body = encrypt_with(
            b"When I grow up, I want to be a watermelon",
            &ua_public,
            &auth,
            &as_secret,
            salt,
        );
        assert_eq!(
            B64.encode(&body),
            "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
        );
    }

    #[test]
    fn a_browser_subscription_is_read_and_kept_unpadded() {
        let (_, p256dh) = ua_key();
        let padded_auth = format!("{AUTH16}==");
        let sub = Subscription::from_json(&sub_json(
            "https://push.example.net/wpush/v2/abc",
            &p256dh,
            &padded_auth,
        ))
        .unwrap();
        assert_eq!(sub.endpoint, "https://push.example.net/wpush/v2/abc");
        assert_eq!(sub.p256dh, p256dh);
        assert_eq!(sub.auth, AUTH16);
        assert_eq!(Subscription::from_json(&sub.to_json()).unwrap(), sub);
        let shown = format!("{sub:?}");
        assert!(shown.contains("https://push.example.net"), "{shown}");
        assert!(!shown.contains("abc") && !shown.contains(AUTH16), "{shown}");
    }

    #[test]
    fn bad_subscriptions_are_refused_with_the_reason() {
        use SubscriptionError as E;
        let (_, p) = ua_key();
        let ok = "https://push.example.net/x";
        let cases: Vec<(Value, E)> = vec![
            (json!([]), E::NotAnObject),
            (
                json!({"keys": {"p256dh": p, "auth": AUTH16}}),
                E::Missing("endpoint"),
            ),
            (json!({"endpoint": ok}), E::Missing("keys.p256dh")),
            (
                json!({"endpoint": ok, "keys": {"p256dh": p}}),
                E::Missing("keys.auth"),
            ),
            (
                json!({"endpoint": ok, "keys": {"p256dh": 4, "auth": AUTH16}}),
                E::Missing("keys.p256dh"),
            ),
            (sub_json("push/x", &p, AUTH16), E::EndpointUrl),
            (sub_json(ok, "not base64!", AUTH16), E::P256dhEncoding),
            // The compressed form (33 bytes) of a real point.
            (
                sub_json(ok, &B64.encode(&d(&p)[..33]), AUTH16),
                E::P256dhPoint,
            ),
            // 65 bytes, 0x04 first, not on the curve.
            (sub_json(ok, &B64.encode([4u8; 65]), AUTH16), E::P256dhPoint),
            (sub_json(ok, &p, "%%%"), E::AuthEncoding),
            (sub_json(ok, &p, &B64.encode([7u8; 15])), E::AuthLength(15)),
            (sub_json(ok, &p, &B64.encode([7u8; 32])), E::AuthLength(32)),
        ];
        for (v, want) in cases {
            assert_eq!(Subscription::from_json(&v), Err(want), "{v}");
        }
        // Where the endpoint is, is the egress's to judge (`egress` tests it).
        for endpoint in ["http://127.0.0.1:9/push/x", "ftp://[::1]:9/push/x"] {
            assert!(Subscription::from_json(&sub_json(endpoint, &p, AUTH16)).is_ok());
        }
    }

    #[test]
    fn vapid_keys_round_trip_and_subjects_are_checked() {
        let v = Vapid::generate("mailto:ops@example.org").unwrap();
        let der = v.to_pkcs8_der().unwrap();
        let back = Vapid::from_pkcs8_der(&der, "https://example.org/contact").unwrap();
        assert_eq!(back.public_key_b64url(), v.public_key_b64url());
        assert_eq!(back.subject(), "https://example.org/contact");
        let k = d(&v.public_key_b64url());
        assert_eq!((k.len(), k[0]), (65, 4));
        assert!(!format!("{v:?}").contains(&B64.encode(&der)));
        for bad in [
            "",
            "ops@example.org",
            "mailto:nobody",
            "http://example.org",
            "https://",
            "mailto:a b@c",
        ] {
            assert_eq!(
                Vapid::generate(bad).unwrap_err(),
                VapidError::Subject,
                "{bad}"
            );
        }
        assert_eq!(
            Vapid::from_pkcs8_der(b"not der", "mailto:ops@example.org").unwrap_err(),
            VapidError::Key
        );
    }

    #[test]
    fn the_vapid_token_is_es256_over_the_origin() {
        let v = Vapid::generate("mailto:ops@example.org").unwrap();
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let url = Url::parse("https://push.example.net:8443/wpush/abc?x=1").unwrap();
        let h = v.authorization(&url, now);
        let (t, k) = h
            .strip_prefix("vapid t=")
            .and_then(|r| r.split_once(", k="))
            .unwrap();
        assert_eq!(k, v.public_key_b64url());
        let parts: Vec<&str> = t.split('.').collect();
        assert_eq!(parts.len(), 3);
        let header: Value = serde_json::from_slice(&d(parts[0])).unwrap();
        assert_eq!(header, json!({"typ": "JWT", "alg": "ES256"}));
        let claims: Value = serde_json::from_slice(&d(parts[1])).unwrap();
        assert_eq!(
            claims,
            json!({"aud": "https://push.example.net:8443", "exp": 1_800_000_000u64 + 12 * 3600, "sub": "mailto:ops@example.org"})
        );
        let key = VerifyingKey::from_sec1_bytes(&d(k)).unwrap();
        let sig = Signature::from_slice(&d(parts[2])).unwrap();
        key.verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &sig)
            .unwrap();
    }

    fn loopback_sub() -> Subscription {
        let (_, p) = ua_key();
        // Port 9 (discard): nothing is sent before these checks anyway.
        Subscription::from_json(&sub_json("http://127.0.0.1:9/push/x", &p, AUTH16)).unwrap()
    }

    #[tokio::test]
    async fn an_oversize_payload_or_bad_topic_is_refused_before_sending() {
        let egress = Egress::new(true, Duration::from_secs(5)).unwrap();
        let v = Vapid::generate("mailto:ops@example.org").unwrap();
        let sub = loopback_sub();
        let big = vec![b'a'; MAX_PAYLOAD + 1];
        let e = send(&egress, &v, &sub, &big, &PushOptions::default())
            .await
            .unwrap_err();
        assert!(
            matches!(e, PushError::TooLarge { len, max } if len == MAX_PAYLOAD + 1 && max == MAX_PAYLOAD),
            "{e:?}"
        );
        for topic in [
            "",
            "has space",
            "a-topic-that-is-longer-than-32-chars",
            "dot.ted",
        ] {
            let opts = PushOptions {
                topic: Some(topic.into()),
                ..PushOptions::default()
            };
            let e = send(&egress, &v, &sub, b"{}", &opts).await.unwrap_err();
            assert!(matches!(e, PushError::Topic), "{topic}: {e:?}");
        }
        let mut broken = sub.clone();
        broken.auth = B64.encode([1u8; 8]);
        let e = send(&egress, &v, &broken, b"{}", &PushOptions::default())
            .await
            .unwrap_err();
        assert!(
            matches!(e, PushError::Subscription(SubscriptionError::AuthLength(8))),
            "{e:?}"
        );
    }

    #[test]
    fn the_largest_payload_makes_a_4096_byte_body() {
        let (_, p) = ua_key();
        let (ua_public, auth) = decode_keys(&p, AUTH16).unwrap();
        let body = encrypt(&[b'a'; MAX_PAYLOAD], &ua_public, &auth).unwrap();
        assert_eq!(body.len(), 4096);
    }

    #[test]
    fn answers_map_to_outcomes() {
        use reqwest::header::{HeaderMap, HeaderValue};
        let now = UNIX_EPOCH + Duration::from_secs(1_000_000);
        let none = HeaderMap::new();
        let mut loc = HeaderMap::new();
        loc.insert(LOCATION, HeaderValue::from_static("/m/1"));
        assert_eq!(
            outcome(201, &loc, now).unwrap(),
            Delivered {
                status: 201,
                location: Some("/m/1".into())
            }
        );
        assert_eq!(outcome(202, &none, now).unwrap().status, 202);
        assert!(matches!(
            outcome(404, &none, now),
            Err(PushError::Gone { status: 404 })
        ));
        assert!(matches!(
            outcome(410, &none, now),
            Err(PushError::Gone { status: 410 })
        ));
        assert!(matches!(
            outcome(413, &none, now),
            Err(PushError::RefusedTooLarge)
        ));
        let mut ra = HeaderMap::new();
        ra.insert(RETRY_AFTER, HeaderValue::from_static("120"));
        assert!(matches!(
            outcome(429, &ra, now),
            Err(PushError::Retry { status: 429, retry_after: Some(d) }) if d == Duration::from_secs(120)
        ));
        let date = httpdate::fmt_http_date(now + Duration::from_secs(30));
        ra.insert(RETRY_AFTER, HeaderValue::from_str(&date).unwrap());
        assert!(matches!(
            outcome(503, &ra, now),
            Err(PushError::Retry { status: 503, retry_after: Some(d) }) if d == Duration::from_secs(30)
        ));
        assert!(matches!(
            outcome(500, &none, now),
            Err(PushError::Retry {
                status: 500,
                retry_after: None
            })
        ));
        assert_eq!(outcome(200, &none, now).unwrap().status, 200);
        for s in [301, 400, 401, 403] {
            assert!(matches!(outcome(s, &none, now), Err(PushError::Refused(x)) if x == s));
        }
    }
}
