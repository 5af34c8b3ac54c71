//! SHA-256 digests written as hex: whole (the installer's record of what it
//! wrote) or cut to a prefix (ids minted from content, a turn's fingerprint).

use sha2::{Digest, Sha256};

/// The whole digest of `data`, 64 hex digits.
pub fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// The first `bytes` bytes of the digest of `data`, as `2 * bytes` hex digits.
pub fn sha256_prefix(data: &[u8], bytes: usize) -> String {
    let d = Sha256::digest(data);
    hex::encode(&d[..bytes.min(d.len())])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_digests() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(sha256_prefix(b"abc", 8), "ba7816bf8f01cfea");
    }
}
