//! A verified credential's COSE public key as the protocol's key: `alg` and
//! the base64url SubjectPublicKeyInfo DER that machines enroll and verify
//! signatures with (`sessionpipe-verifier`'s `TrustedKey`).
//!
//! This module owns that conversion and the kinds of key the protocol takes
//! (ES256 on P-256; RS256 of 2048 bits or more, as the verifier's
//! `MIN_RSA_BITS`). It must not verify anything: webauthn-rs did, before.

use super::{AccountError, b64};
use p256::pkcs8::EncodePublicKey;
use webauthn_rs::prelude::{COSEAlgorithm, COSEKey, COSEKeyType, ECDSACurve};

pub const ES256: i64 = -7;
pub const RS256: i64 = -257;

/// The protocol refuses shorter RSA moduli: refusing them here keeps a
/// passkey the machines would not enroll from being registered.
const MIN_RSA_BITS: u32 = 2048;

/// `(alg, spki)` of a credential's public key.
pub fn protocol_key(key: &COSEKey) -> Result<(i64, String), AccountError> {
    match (&key.type_, &key.key) {
        (COSEAlgorithm::ES256, COSEKeyType::EC_EC2(ec))
            if matches!(ec.curve, ECDSACurve::SECP256R1) =>
        {
            if ec.x.len() != 32 || ec.y.len() != 32 {
                return Err(AccountError::UnsupportedKey);
            }
            let mut point = Vec::with_capacity(65);
            point.push(0x04);
            point.extend_from_slice(&ec.x);
            point.extend_from_slice(&ec.y);
            let public = p256::PublicKey::from_sec1_bytes(&point)
                .map_err(|_| AccountError::UnsupportedKey)?;
            let der = public
                .to_public_key_der()
                .map_err(|_| AccountError::UnsupportedKey)?;
            Ok((ES256, b64(der.as_bytes())))
        }
        (COSEAlgorithm::RS256, COSEKeyType::RSA(k)) => {
            let n = rsa::BoxedUint::from_be_slice_vartime(&k.n);
            if n.bit_width_vartime() < MIN_RSA_BITS {
                return Err(AccountError::UnsupportedKey);
            }
            let e = rsa::BoxedUint::from_be_slice_vartime(&k.e);
            let public = rsa::PublicKey::new(n, e).map_err(|_| AccountError::UnsupportedKey)?;
            let der = public
                .to_public_key_der()
                .map_err(|_| AccountError::UnsupportedKey)?;
            Ok((RS256, b64(der.as_bytes())))
        }
        _ => Err(AccountError::UnsupportedKey),
    }
}
