//! Layer 1, signature: Standard Webhooks signatures (PROTOCOL-NOTES §5):
//! `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, keyed
//! with the bytes that `whsec_<base64>` encodes.
//!
//! This module owns the arithmetic: decoding a secret, signing (for tests and
//! senders that want a reference) and verifying with a timestamp tolerance. It never
//! logs a secret or a signature.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::invalid::Invalid;

/// How far `webhook-timestamp` may be from now, either way, in seconds: the
/// Standard Webhooks default, which bounds how long a captured request replays.
pub const TOLERANCE_S: i64 = 300;

/// The key bytes of a `whsec_…` secret.
pub fn decode_secret(secret: &str) -> Result<Vec<u8>, Invalid> {
    let b64 = secret
        .strip_prefix("whsec_")
        .ok_or("a webhook secret starts with whsec_")?;
    let key = STANDARD
        .decode(b64)
        .map_err(|_| Invalid::from("the webhook secret after whsec_ is not base64"))?;
    if key.is_empty() {
        return Err(Invalid::from("the webhook secret is empty"));
    }
    Ok(key)
}

fn mac(key: &[u8], id: &str, timestamp: &str, body: &[u8]) -> Hmac<Sha256> {
    let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
    m.update(id.as_bytes());
    m.update(b".");
    m.update(timestamp.as_bytes());
    m.update(b".");
    m.update(body);
    m
}

/// The `webhook-signature` value for a request: `v1,<base64>`.
pub fn sign(key: &[u8], id: &str, timestamp: &str, body: &[u8]) -> String {
    let tag = mac(key, id, timestamp, body).finalize().into_bytes();
    format!("v1,{}", STANDARD.encode(tag))
}

/// Checks the three headers against the body. `signatures` may list several
/// space-separated `v1,…` values (a sender rotating its secret); one match is
/// enough. The comparison is constant-time (`verify_slice`).
pub fn verify(
    key: &[u8],
    id: Option<&str>,
    timestamp: Option<&str>,
    signatures: Option<&str>,
    body: &[u8],
    now_s: i64,
) -> Result<(), &'static str> {
    let (Some(id), Some(ts), Some(sigs)) = (id, timestamp, signatures) else {
        return Err("missing webhook-id, webhook-timestamp or webhook-signature");
    };
    let at: i64 = ts
        .parse()
        .map_err(|_| "webhook-timestamp is not an integer")?;
    if (now_s - at).abs() > TOLERANCE_S {
        return Err("webhook-timestamp is too far from now");
    }
    for sig in sigs.split(' ') {
        let Some(b64) = sig.strip_prefix("v1,") else {
            continue;
        };
        let Ok(tag) = STANDARD.decode(b64) else {
            continue;
        };
        if mac(key, id, ts, body).verify_slice(&tag).is_ok() {
            return Ok(());
        }
    }
    Err("no webhook-signature matches")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Standard Webhooks specification's own example.
    #[test]
    fn the_reference_example() {
        let key = decode_secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let body = br#"{"test": 2432232314}"#;
        let sig = sign(&key, "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", body);
        assert_eq!(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        let id = Some("msg_p5jXN8AQM9LWM0D4loKWxJek");
        let ok = verify(&key, id, Some("1614265330"), Some(&sig), body, 1614265330);
        assert!(ok.is_ok());
        let rotated = format!("v1,AAAA {sig}");
        assert!(
            verify(
                &key,
                id,
                Some("1614265330"),
                Some(&rotated),
                body,
                1614265400
            )
            .is_ok()
        );
        assert!(verify(&key, id, Some("1614265330"), Some(&sig), b"{}", 1614265330).is_err());
        assert!(verify(&key, id, Some("1614265330"), Some(&sig), body, 1614266330).is_err());
        assert!(verify(&key, None, Some("1614265330"), Some(&sig), body, 1614265330).is_err());
        assert!(decode_secret("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").is_err());
    }
}
