//! The release's update manifest, written and signed: what the release
//! workflow runs on a tag (never shipped in the app).
//!
//! ```text
//! release-manifest keygen
//!     a new release key: the secret's value (base64 of the 32-byte Ed25519
//!     seed) and the public half to put in manifest::RELEASE_PUBLIC_KEY
//! release-manifest sign --version 0.2.0 --published 2026-05-01T12:00:00Z \
//!         --base-url https://github.com/OWNER/REPO/releases/download/v0.2.0 \
//!         --out dist [--notes TEXT] darwin-aarch64=dist/x.app.tar.gz ...
//!     writes dist/latest.json (each artifact's url, sha256 and size) and
//!     dist/latest.json.sig, signed with the seed in $SESSIONPIPE_UPDATE_KEY
//! ```
//!
//! Owns the writing side of the format `manifest` reads. Must not sign with a
//! key whose public half is not the one compiled into the app: such a release
//! could never be installed, so it fails here instead.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::SigningKey;
use sessionpipe_updater::manifest::{self, Artifact, Manifest, Sha256};
use sha2::Digest;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const KEY_VAR: &str = "SESSIONPIPE_UPDATE_KEY";

#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error(
        "usage: release-manifest keygen | sign --version V --published RFC3339 --base-url URL --out DIR [--notes TEXT] PLATFORM=FILE..."
    )]
    Usage,
    #[error("{0}")]
    BadArgument(String),
    #[error("${KEY_VAR} is not the base64 of a 32-byte Ed25519 seed")]
    BadKey,
    #[error(
        "the key in ${KEY_VAR} is not the one compiled into the app ({0}): the app would refuse this release"
    )]
    NotTheAppsKey(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the written manifest does not verify: {0}")]
    Verify(#[from] manifest::ManifestError),
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("keygen") if args.len() == 1 => keygen(),
        Some("sign") => sign(&args[1..]),
        _ => Err(Failure::Usage),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("release-manifest: {e}");
            ExitCode::FAILURE
        }
    }
}

fn keygen() -> Result<(), Failure> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|_| Failure::BadKey)?;
    let key = SigningKey::from_bytes(&seed);
    println!(
        "{KEY_VAR} (the secret; keep it nowhere else): {}",
        STANDARD.encode(seed)
    );
    let public = key.verifying_key().to_bytes();
    let bytes: Vec<String> = public.iter().map(|b| format!("0x{b:02x}")).collect();
    println!("RELEASE_PUBLIC_KEY: [{}]", bytes.join(", "));
    Ok(())
}

fn sign(args: &[String]) -> Result<(), Failure> {
    let mut flags: BTreeMap<&str, &str> = BTreeMap::new();
    let mut files: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if let Some(flag) = arg.strip_prefix("--") {
            let value = rest.next().ok_or(Failure::Usage)?;
            flags.insert(flag, value);
        } else {
            let (platform, file) = arg.split_once('=').ok_or(Failure::Usage)?;
            files.insert(platform.to_string(), PathBuf::from(file));
        }
    }
    let flag = |name: &str| flags.get(name).copied().ok_or(Failure::Usage);
    let version = flag("version")?
        .parse()
        .map_err(|e| Failure::BadArgument(format!("--version: {e}")))?;
    let base_url = flag("base-url")?.trim_end_matches('/');
    let out = PathBuf::from(flag("out")?);
    if files.is_empty() {
        return Err(Failure::Usage);
    }

    let key = release_key()?;
    let compiled = manifest::public_key(&manifest::RELEASE_PUBLIC_KEY)?;
    if key.verifying_key() != compiled {
        return Err(Failure::NotTheAppsKey(
            if manifest::RELEASE_KEY_IS_PLACEHOLDER {
                "still the placeholder".into()
            } else {
                hex::encode(manifest::RELEASE_PUBLIC_KEY)
            },
        ));
    }

    let mut artifacts = BTreeMap::new();
    for (platform, file) in files {
        artifacts.insert(platform, artifact(base_url, &file)?);
    }
    let manifest = Manifest {
        version,
        notes: flags.get("notes").copied().unwrap_or_default().to_string(),
        published: flag("published")?.to_string(),
        artifacts,
    };
    let mut bytes = serde_json::to_vec_pretty(&manifest).expect("a manifest serialises");
    bytes.push(b'\n');
    let signature = manifest::sign(&bytes, &key);
    // What the app will do with them, before they are published.
    manifest::verify(&bytes, signature.as_bytes(), &compiled)?;
    write(&out.join("latest.json"), &bytes)?;
    write(&out.join("latest.json.sig"), signature.as_bytes())?;
    println!("{}", String::from_utf8_lossy(&bytes));
    Ok(())
}

fn release_key() -> Result<SigningKey, Failure> {
    let text = std::env::var(KEY_VAR).map_err(|_| Failure::BadKey)?;
    let seed: [u8; 32] = STANDARD
        .decode(text.trim())
        .map_err(|_| Failure::BadKey)?
        .try_into()
        .map_err(|_| Failure::BadKey)?;
    Ok(SigningKey::from_bytes(&seed))
}

/// `file`'s entry: its URL under `base_url`, its digest and size.
fn artifact(base_url: &str, file: &Path) -> Result<Artifact, Failure> {
    let name = file
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| {
            n.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        })
        .ok_or_else(|| {
            Failure::BadArgument(format!("{}: a file name of [A-Za-z0-9._-]", file.display()))
        })?;
    let bytes = std::fs::read(file).map_err(|source| Failure::Io {
        path: file.to_path_buf(),
        source,
    })?;
    Ok(Artifact {
        url: format!("{base_url}/{name}"),
        sha256: Sha256(sha2::Sha256::digest(&bytes).into()),
        size: bytes.len() as u64,
    })
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    std::fs::write(path, bytes).map_err(|source| Failure::Io {
        path: path.to_path_buf(),
        source,
    })
}
