//! The update manifest and its signature: what a release offers, and whether
//! this app may take it.
//!
//! A release publishes two files side by side: `latest.json`, the manifest,
//! and `latest.json.sig`, the standard base64 of the 64-byte Ed25519 signature
//! over `latest.json`'s exact bytes (one line). The signature is checked
//! against the public key compiled into the app before a byte of the JSON is
//! parsed; then the version must be newer than the running one (semver) and
//! there must be an artifact for this platform.
//!
//! ```text
//! {"version": "0.2.0", "notes": "...", "published": "2026-05-01T12:00:00Z",
//!  "artifacts": {"darwin-aarch64": {"url": "https://...", "sha256": "<64 hex>", "size": 123}}}
//! ```
//!
//! Owns the format, the signature check and the offer's rules. Must not fetch,
//! write or install anything; must not parse what is not signed.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use semver::Version;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// What is appended to the manifest's URL to get its signature's.
pub const SIGNATURE_SUFFIX: &str = ".sig";

/// The public key release manifests are signed with, compiled into the app.
///
/// PLACEHOLDER: this key was generated for the placeholder and its private
/// half was never stored; nobody can sign with it, so a build carrying it
/// takes no update. Before the first release that updates itself, put the
/// release key's public half here (`cargo run -p sessionpipe-updater
/// --example release-manifest -- keygen` prints both halves): the release
/// workflow refuses to sign with a key that is not this one.
pub const RELEASE_PUBLIC_KEY: [u8; 32] = [
    0xf9, 0x03, 0x77, 0xa3, 0xf4, 0xc6, 0xfc, 0x95, 0xec, 0xa9, 0x05, 0x49, 0x5e, 0x02, 0xf8, 0xe7,
    0x5b, 0x87, 0x0a, 0xa1, 0xe7, 0x23, 0x83, 0xf3, 0xbb, 0x2b, 0x0f, 0xca, 0x37, 0x08, 0xae, 0x7e,
];

/// True while `RELEASE_PUBLIC_KEY` is the placeholder.
pub const RELEASE_KEY_IS_PLACEHOLDER: bool = true;

#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("the update key is not an Ed25519 public key")]
    BadKey,
    #[error("the manifest's signature is not the base64 of 64 bytes")]
    SignatureEncoding,
    #[error("the manifest's signature does not verify with this app's update key")]
    BadSignature,
    #[error("the signed manifest is not a valid update manifest: {0}")]
    Format(#[source] serde_json::Error),
    #[error("the manifest offers {offered}, not newer than the running {running}")]
    NotNewer { offered: Version, running: Version },
    #[error("the manifest for {version} has no artifact for {platform} (it has {offered:?})")]
    NoArtifact {
        version: Version,
        platform: String,
        offered: Vec<String>,
    },
}

/// A release as its manifest describes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub version: Version,
    /// The release notes, shown as they are.
    #[serde(default)]
    pub notes: String,
    /// When it was published (RFC 3339); informative, nothing depends on it.
    #[serde(default)]
    pub published: String,
    /// By platform key (`darwin-aarch64`, `darwin-x86_64`, `windows-x86_64`).
    pub artifacts: BTreeMap<String, Artifact>,
}

/// One platform's installer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    pub url: String,
    pub sha256: Sha256,
    pub size: u64,
}

/// A SHA-256 digest, written as 64 hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Sha256(pub [u8; 32]);

#[derive(Debug, thiserror::Error)]
#[error("a sha256 is 64 hex digits")]
pub struct NotASha256;

impl TryFrom<String> for Sha256 {
    type Error = NotASha256;
    fn try_from(text: String) -> Result<Sha256, NotASha256> {
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(text.trim(), &mut bytes).map_err(|_| NotASha256)?;
        Ok(Sha256(bytes))
    }
}

impl From<Sha256> for String {
    fn from(digest: Sha256) -> String {
        hex::encode(digest.0)
    }
}

impl fmt::Display for Sha256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for Sha256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sha256({self})")
    }
}

/// A newer release for this platform, from a manifest whose signature held.
/// Only `Manifest::offer` makes one, so holding one means all the checks passed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Update {
    version: Version,
    notes: String,
    platform: String,
    artifact: Artifact,
}

impl Update {
    pub fn version(&self) -> &Version {
        &self.version
    }

    pub fn notes(&self) -> &str {
        &self.notes
    }

    pub fn platform(&self) -> &str {
        &self.platform
    }

    pub fn artifact(&self) -> &Artifact {
        &self.artifact
    }
}

/// The key as ed25519-dalek takes it; a byte string that is no point, or a
/// weak (small-order) one, is refused.
pub fn public_key(bytes: &[u8; 32]) -> Result<VerifyingKey, ManifestError> {
    let key = VerifyingKey::from_bytes(bytes).map_err(|_| ManifestError::BadKey)?;
    if key.is_weak() {
        return Err(ManifestError::BadKey);
    }
    Ok(key)
}

/// Checks `signature` (the `.sig` file's text) over `bytes` (the manifest's),
/// then parses them. `verify_strict`: no malleable signature, no weak key.
pub fn verify(
    bytes: &[u8],
    signature: &[u8],
    key: &VerifyingKey,
) -> Result<Manifest, ManifestError> {
    let text = std::str::from_utf8(signature).map_err(|_| ManifestError::SignatureEncoding)?;
    let raw = STANDARD
        .decode(text.trim())
        .map_err(|_| ManifestError::SignatureEncoding)?;
    let raw: [u8; 64] = raw
        .try_into()
        .map_err(|_| ManifestError::SignatureEncoding)?;
    key.verify_strict(bytes, &Signature::from_bytes(&raw))
        .map_err(|_| ManifestError::BadSignature)?;
    serde_json::from_slice(bytes).map_err(ManifestError::Format)
}

/// The `.sig` file's text for `bytes`: what the release workflow publishes.
pub fn sign(bytes: &[u8], key: &SigningKey) -> String {
    let signature: Signature = key.sign(bytes);
    format!("{}\n", STANDARD.encode(signature.to_bytes()))
}

impl Manifest {
    /// The update this manifest offers an app at `running` on `platform`: a
    /// version that is not newer (the same, or a downgrade) is never offered.
    pub fn offer(self, running: &Version, platform: &str) -> Result<Update, ManifestError> {
        if self.version <= *running {
            return Err(ManifestError::NotNewer {
                offered: self.version,
                running: running.clone(),
            });
        }
        let Some(artifact) = self.artifacts.get(platform).cloned() else {
            return Err(ManifestError::NoArtifact {
                version: self.version,
                platform: platform.to_string(),
                offered: self.artifacts.into_keys().collect(),
            });
        };
        Ok(Update {
            version: self.version,
            notes: self.notes,
            platform: platform.to_string(),
            artifact,
        })
    }
}

/// The manifest's key for an OS and architecture as Rust names them
/// (`std::env::consts`); `None` where the app does not update itself.
pub fn platform_key(os: &str, arch: &str) -> Option<String> {
    let os = match os {
        "macos" => "darwin",
        "windows" => "windows",
        _ => return None,
    };
    matches!(arch, "aarch64" | "x86_64").then(|| format!("{os}-{arch}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> SigningKey {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).unwrap();
        SigningKey::from_bytes(&seed)
    }

    const BODY: &str = r#"{"version":"0.2.0","notes":"n","published":"2026-05-01T12:00:00Z",
        "artifacts":{"darwin-aarch64":{"url":"https://x/a.app.tar.gz","sha256":"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff","size":3}},
        "from_a_later_format":true}"#;

    #[test]
    fn a_signed_manifest_verifies_and_one_changed_byte_does_not() {
        let key = key();
        let sig = sign(BODY.as_bytes(), &key);
        let manifest = verify(BODY.as_bytes(), sig.as_bytes(), &key.verifying_key()).unwrap();
        assert_eq!(manifest.version, Version::new(0, 2, 0));
        assert_eq!(manifest.artifacts["darwin-aarch64"].size, 3);
        let tampered = BODY.replace("\"size\":3", "\"size\":4");
        assert!(matches!(
            verify(tampered.as_bytes(), sig.as_bytes(), &key.verifying_key()),
            Err(ManifestError::BadSignature)
        ));
        let other = self::key().verifying_key();
        assert!(matches!(
            verify(BODY.as_bytes(), sig.as_bytes(), &other),
            Err(ManifestError::BadSignature)
        ));
        assert!(matches!(
            verify(BODY.as_bytes(), b"not base64!", &key.verifying_key()),
            Err(ManifestError::SignatureEncoding)
        ));
    }

    #[test]
    fn only_a_newer_version_with_this_platforms_artifact_is_offered() {
        let manifest: Manifest = serde_json::from_str(BODY).unwrap();
        let update = manifest
            .clone()
            .offer(&Version::new(0, 1, 9), "darwin-aarch64")
            .unwrap();
        assert_eq!(update.version(), &Version::new(0, 2, 0));
        for running in ["0.2.0", "0.2.1", "1.0.0"] {
            assert!(matches!(
                manifest
                    .clone()
                    .offer(&running.parse().unwrap(), "darwin-aarch64"),
                Err(ManifestError::NotNewer { .. })
            ));
        }
        // A pre-release of 0.2.0 is older than 0.2.0 (semver's order).
        assert!(
            manifest
                .clone()
                .offer(&"0.2.0-rc.1".parse().unwrap(), "darwin-aarch64")
                .is_ok()
        );
        assert!(matches!(
            manifest.offer(&Version::new(0, 1, 0), "windows-x86_64"),
            Err(ManifestError::NoArtifact { offered, .. }) if offered == ["darwin-aarch64"]
        ));
    }

    #[test]
    fn platform_keys_and_the_compiled_key() {
        assert_eq!(
            platform_key("macos", "aarch64").as_deref(),
            Some("darwin-aarch64")
        );
        assert_eq!(
            platform_key("windows", "x86_64").as_deref(),
            Some("windows-x86_64")
        );
        assert_eq!(platform_key("linux", "x86_64"), None);
        assert!(public_key(&RELEASE_PUBLIC_KEY).is_ok());
        // The identity point: a weak key, which would accept forged signatures.
        let mut identity = [0u8; 32];
        identity[0] = 1;
        assert!(matches!(public_key(&identity), Err(ManifestError::BadKey)));
    }
}
