//! One WebAuthn assertion (`navigator.credentials.get`) checked against an
//! enrolled key, for the bytes it must be over: the authenticator data is for
//! the rp id with the user present and verified, the client data is a
//! `webauthn.get` whose challenge is base64url(sha256(those bytes)) from an
//! origin on the rp id and not cross-origin, and the key signed authenticator
//! data ‖ sha256(client data). Which key and which bytes is the caller's call.

use crate::json;
use crate::keys::{PasskeyKey, TrustedKey, b64, b64_encode};
use crate::refusal::AssertionFault;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// A passkey assertion as the device sends it, every field base64url:
/// credential id, authenticator data, client data JSON, signature.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assertion {
    pub cred: String,
    pub ad: String,
    pub cd: String,
    pub sig: String,
}

/// User present (authenticator data flags, bit 0).
pub const FLAG_UP: u8 = 0x01;
/// User verified (bit 2): a fingerprint, a face or a PIN, not a touch alone.
pub const FLAG_UV: u8 = 0x04;

/// rp id hash (32) + flags (1) + signature counter (4); extensions may follow.
const AUTH_DATA_MIN: usize = 37;

/// Checks `a` as `key`'s assertion over `signed` for `rp_id`. The key is
/// decoded first, so an unusable enrolled key says so whatever the assertion.
pub(crate) fn check(
    key: &TrustedKey,
    a: &Assertion,
    signed: &[u8],
    rp_id: &str,
) -> Result<(), AssertionFault> {
    let public = PasskeyKey::decode(key).map_err(AssertionFault::Key)?;
    let ad = b64(&a.ad).ok_or(AssertionFault::Encoding("ad"))?;
    let cd = b64(&a.cd).ok_or(AssertionFault::Encoding("cd"))?;
    let sig = b64(&a.sig).ok_or(AssertionFault::Encoding("sig"))?;

    if ad.len() < AUTH_DATA_MIN {
        return Err(AssertionFault::ShortAuthData);
    }
    if ad[..32] != Sha256::digest(rp_id.as_bytes())[..] {
        return Err(AssertionFault::RpIdHash);
    }
    let flags = ad[32];
    if flags & FLAG_UP == 0 {
        return Err(AssertionFault::NotPresent);
    }
    if flags & FLAG_UV == 0 {
        return Err(AssertionFault::NotVerified);
    }

    check_client_data(&cd, signed, rp_id)?;

    let mut message = ad;
    message.extend_from_slice(&Sha256::digest(&cd));
    if !public.verifies(&message, &sig) {
        return Err(AssertionFault::Signature);
    }
    Ok(())
}

fn check_client_data(cd: &[u8], signed: &[u8], rp_id: &str) -> Result<(), AssertionFault> {
    let text = std::str::from_utf8(cd).map_err(|_| AssertionFault::ClientData("not UTF-8"))?;
    let map = json::object(text).map_err(|_| AssertionFault::ClientData("not a JSON object"))?;
    let field = |name| map.get(name).and_then(Value::as_str);
    match field("type") {
        Some("webauthn.get") => {}
        Some(other) => return Err(AssertionFault::Ceremony(other.to_string())),
        None => return Err(AssertionFault::ClientData("no type")),
    }
    if field("challenge") != Some(b64_encode(&Sha256::digest(signed)).as_str()) {
        return Err(AssertionFault::Challenge);
    }
    let origin = field("origin").ok_or(AssertionFault::ClientData("no origin"))?;
    if !origin_on_rp(origin, rp_id) {
        return Err(AssertionFault::Origin(origin.to_string()));
    }
    match map.get("crossOrigin") {
        None | Some(Value::Bool(false)) => Ok(()),
        Some(Value::Bool(true)) => Err(AssertionFault::CrossOrigin),
        Some(_) => Err(AssertionFault::ClientData("crossOrigin is not a boolean")),
    }
}

/// `https://<rp id or a subdomain of it>[:port]`, exactly as a browser
/// serialises an origin (lower case, no path); `http://` too when the rp id
/// is `localhost`.
pub(crate) fn origin_on_rp(origin: &str, rp_id: &str) -> bool {
    let rest = if let Some(rest) = origin.strip_prefix("https://") {
        rest
    } else if let Some(rest) = origin.strip_prefix("http://") {
        if rp_id != "localhost" {
            return false;
        }
        rest
    } else {
        return false;
    };
    let host = match rest.rsplit_once(':') {
        Some((host, port)) => {
            let digits =
                !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit());
            if !digits || port.parse::<u32>().map_or(true, |p| p > 65535) {
                return false;
            }
            host
        }
        None => rest,
    };
    let labels_ok = !host.is_empty()
        && host.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        });
    labels_ok
        && (host == rp_id
            || host
                .strip_suffix(rp_id)
                .is_some_and(|sub| sub.ends_with('.')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_on_the_rp_id() {
        let rp = "receiver.example";
        for ok in [
            "https://receiver.example",
            "https://app.receiver.example",
            "https://a.b.receiver.example:8443",
        ] {
            assert!(origin_on_rp(ok, rp), "{ok}");
        }
        for bad in [
            "http://receiver.example",
            "https://evil.example",
            "https://evilreceiver.example",
            "https://receiver.example.evil",
            "https://receiver.example/",
            "https://receiver.example:",
            "https://receiver.example:99999",
            "https://user@receiver.example",
            "https://Receiver.example",
            "https://.receiver.example",
            "https://receiver.example.",
            "receiver.example",
            "wss://receiver.example",
            "https://",
        ] {
            assert!(!origin_on_rp(bad, rp), "{bad}");
        }
    }

    #[test]
    fn http_only_for_localhost() {
        assert!(origin_on_rp("http://localhost:5173", "localhost"));
        assert!(origin_on_rp("http://localhost", "localhost"));
        assert!(origin_on_rp("https://localhost:8443", "localhost"));
        assert!(!origin_on_rp("http://127.0.0.1:5173", "localhost"));
        assert!(!origin_on_rp("http://localhost:5173", "receiver.example"));
    }
}
