//! Keys: an enrolled passkey as the machine keeps it (`{id, alg, spki}`), how
//! it becomes something that verifies (COSE -7 ES256 on P-256 with strict DER
//! signatures, -257 RS256 with a modulus of at least 2048 bits), a grant's day
//! key (P-256, raw `r‖s` signatures), and the base64url every field is in.
//! All the arithmetic is RustCrypto's; this file only chooses and decodes.

use crate::refusal::KeyFault;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use p256::pkcs8::DecodePublicKey;
use rsa::signature::Verifier;
use rsa::traits::PublicKeyParts;
use serde::{Deserialize, Serialize};
use sha2::Sha256;

/// COSE algorithm ES256: ECDSA on P-256 with SHA-256.
pub const ES256: i64 = -7;
/// COSE algorithm RS256: RSASSA-PKCS1-v1_5 with SHA-256.
pub const RS256: i64 = -257;
/// The smallest RSA modulus a passkey may have.
pub const MIN_RSA_BITS: usize = 2048;

/// A passkey enrolled on this machine: its credential id, COSE algorithm, and
/// public key as a base64url DER SubjectPublicKeyInfo.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustedKey {
    pub id: String,
    pub alg: i64,
    pub spki: String,
}

impl TrustedKey {
    /// Whether the key can verify anything: its algorithm is one of the two and
    /// its SPKI is a key of that algorithm (of at least 2048 bits for RSA).
    pub fn check(&self) -> Result<(), KeyFault> {
        PasskeyKey::decode(self).map(|_| ())
    }
}

/// `^[A-Za-z0-9_-]{min,max}$`, counted in characters (all ASCII when it holds).
pub(crate) fn is_b64url(s: &str, min: usize, max: usize) -> bool {
    (min..=max).contains(&s.len())
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
}

/// base64url without padding, canonical (no stray trailing bits).
pub(crate) fn b64(s: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(s).ok()
}

pub(crate) fn b64_encode(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// An enrolled passkey, decoded.
pub(crate) enum PasskeyKey {
    Es256(p256::ecdsa::VerifyingKey),
    Rs256(rsa::pkcs1v15::VerifyingKey<Sha256>),
}

impl PasskeyKey {
    pub(crate) fn decode(key: &TrustedKey) -> Result<PasskeyKey, KeyFault> {
        let der = b64(&key.spki).ok_or(KeyFault::Encoding)?;
        match key.alg {
            ES256 => p256::ecdsa::VerifyingKey::from_public_key_der(&der)
                .map(PasskeyKey::Es256)
                .map_err(|_| KeyFault::NotP256),
            RS256 => {
                let public =
                    rsa::PublicKey::from_public_key_der(&der).map_err(|_| KeyFault::NotRsa)?;
                let bits = public.n().bit_width_vartime() as usize;
                if bits < MIN_RSA_BITS {
                    return Err(KeyFault::ShortModulus(bits));
                }
                Ok(PasskeyKey::Rs256(rsa::pkcs1v15::VerifyingKey::new(public)))
            }
            other => Err(KeyFault::Alg(other)),
        }
    }

    /// Whether `sig` is this key's signature of `message` (SHA-256 taken here).
    /// ES256 signatures must be strict DER: the `der` crate refuses long-form
    /// lengths, padded integers and trailing bytes. High S is accepted, as
    /// authenticators and WebCrypto do not normalise it.
    pub(crate) fn verifies(&self, message: &[u8], sig: &[u8]) -> bool {
        match self {
            PasskeyKey::Es256(key) => p256::ecdsa::Signature::from_der(sig)
                .is_ok_and(|sig| key.verify(message, &sig).is_ok()),
            PasskeyKey::Rs256(key) => rsa::pkcs1v15::Signature::try_from(sig)
                .is_ok_and(|sig| key.verify(message, &sig).is_ok()),
        }
    }
}

/// A grant's day key from its `pub` (base64url SPKI), if it is a P-256 key.
pub(crate) fn day_key(spki: &str) -> Option<p256::ecdsa::VerifyingKey> {
    p256::ecdsa::VerifyingKey::from_public_key_der(&b64(spki)?).ok()
}

/// Whether `csig` (base64url of raw `r‖s`, 64 bytes) is the day key's
/// signature of the exact `cmd` bytes.
pub(crate) fn csig_verifies(day: &p256::ecdsa::VerifyingKey, cmd: &str, csig: &str) -> bool {
    b64(csig)
        .filter(|raw| raw.len() == 64)
        .and_then(|raw| p256::ecdsa::Signature::from_slice(&raw).ok())
        .is_some_and(|sig| day.verify(cmd.as_bytes(), &sig).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::signature::Signer;
    use p256::elliptic_curve::Generate;

    fn p256_pair() -> (p256::ecdsa::SigningKey, TrustedKey) {
        let signing =
            p256::ecdsa::SigningKey::try_generate_from_rng(&mut getrandom::SysRng).expect("random");
        let der =
            p256::pkcs8::EncodePublicKey::to_public_key_der(signing.verifying_key()).expect("spki");
        let trusted = TrustedKey {
            id: "AAAAAAAAAAAAAAAAAAAAAA".into(),
            alg: ES256,
            spki: b64_encode(der.as_bytes()),
        };
        (signing, trusted)
    }

    #[test]
    fn base64url_is_strict() {
        assert_eq!(b64("AQID").unwrap(), [1, 2, 3]);
        assert!(b64("AQID=").is_none(), "padding");
        assert!(b64("AQ+/").is_none(), "standard alphabet");
        assert!(b64("AR").is_none(), "stray trailing bits");
        assert!(
            is_b64url("ab-_09", 6, 6) && !is_b64url("ab-_0", 6, 6) && !is_b64url("ab+_09", 1, 9)
        );
    }

    #[test]
    fn es256_takes_strict_der_only() {
        let (signing, trusted) = p256_pair();
        let key = PasskeyKey::decode(&trusted).unwrap();
        let sig: p256::ecdsa::Signature = signing.sign(b"message");
        let der = sig.to_der().as_bytes().to_vec();
        assert!(key.verifies(b"message", &der));
        assert!(!key.verifies(b"other", &der));
        // Raw r‖s is not DER.
        assert!(!key.verifies(b"message", &sig.to_bytes()));
        // A trailing byte.
        let mut long = der.clone();
        long.push(0);
        assert!(!key.verifies(b"message", &long));
        // The same sequence with a long-form length (BER, not DER).
        let mut ber = vec![0x30, 0x81, der[1]];
        ber.extend_from_slice(&der[2..]);
        assert!(!key.verifies(b"message", &ber));
        // r padded with a needless zero byte.
        let (r, s) = (sig.r().to_bytes(), sig.s().to_bytes());
        let int = |v: &[u8], pad: bool| {
            let mut body: Vec<u8> = v.iter().copied().skip_while(|b| *b == 0).collect();
            if body[0] & 0x80 != 0 || pad {
                body.insert(0, 0);
            }
            let mut out = vec![0x02, body.len() as u8];
            out.extend(body);
            out
        };
        let seq = |r: Vec<u8>, s: Vec<u8>| {
            let mut out = vec![0x30, (r.len() + s.len()) as u8];
            out.extend(r);
            out.extend(s);
            out
        };
        assert!(key.verifies(b"message", &seq(int(&r, false), int(&s, false))));
        let padded = if r[0] & 0x80 == 0 {
            int(&r, true)
        } else {
            [vec![0x02, 34, 0], int(&r, false)[2..].to_vec()].concat()
        };
        assert!(!key.verifies(b"message", &seq(padded, int(&s, false))));
    }

    #[test]
    fn es256_accepts_high_s() {
        let (signing, trusted) = p256_pair();
        let key = PasskeyKey::decode(&trusted).unwrap();
        let sig: p256::ecdsa::Signature = signing.sign(b"message");
        let low = sig.normalize_s();
        // n − s is the other valid s; one of the two is high.
        let s = low.s();
        let high = p256::ecdsa::Signature::from_scalars(low.r(), -*s).unwrap();
        assert!(key.verifies(b"message", high.to_der().as_bytes()));
        assert!(key.verifies(b"message", low.to_der().as_bytes()));
    }

    #[test]
    fn keys_of_the_wrong_kind_are_refused() {
        let (_, p256_key) = p256_pair();
        let as_rsa = TrustedKey {
            alg: RS256,
            ..p256_key.clone()
        };
        assert_eq!(as_rsa.check(), Err(KeyFault::NotRsa));
        let bad_alg = TrustedKey {
            alg: -8,
            ..p256_key.clone()
        };
        assert_eq!(bad_alg.check(), Err(KeyFault::Alg(-8)));
        let not_b64 = TrustedKey {
            spki: "a+b".into(),
            ..p256_key.clone()
        };
        assert_eq!(not_b64.check(), Err(KeyFault::Encoding));
        let garbage = TrustedKey {
            spki: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA".into(),
            ..p256_key
        };
        assert_eq!(garbage.check(), Err(KeyFault::NotP256));
    }

    #[test]
    fn rsa_under_2048_bits_is_refused() {
        // A real 1024-bit RSA SPKI (e = 65537).
        let spki = "MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQC5U9xUi2BxxyGBc0Lo8lDoyfWkFvCrmCjbc9fN8cgzR5xDhsI7qlhUNRsi-lcr1DE8pNU90tbWIZua3HUMa3G9Wd0PBd_Cnx_Srb6VcJfyXsEmam-YKb56W7EnguRN0JIn4LuzeFPnHz8qZdyDpf79yiroJ4EyRoBVnBiIkEpo4QIDAQAB";
        let key = TrustedKey {
            id: "AAAAAAAAAAAAAAAAAAAAAA".into(),
            alg: RS256,
            spki: spki.into(),
        };
        assert_eq!(key.check(), Err(KeyFault::ShortModulus(1024)));
    }

    #[test]
    fn csig_is_raw_r_s_over_the_exact_bytes() {
        let (signing, trusted) = p256_pair();
        let day = day_key(&trusted.spki).unwrap();
        let sig: p256::ecdsa::Signature = signing.sign(b"{\"v\":1}");
        let raw = b64_encode(&sig.to_bytes());
        assert!(csig_verifies(&day, "{\"v\":1}", &raw));
        assert!(!csig_verifies(&day, "{\"v\": 1}", &raw));
        assert!(!csig_verifies(
            &day,
            "{\"v\":1}",
            &b64_encode(sig.to_der().as_bytes())
        ));
        assert!(!csig_verifies(&day, "{\"v\":1}", "not base64url!"));
    }
}
