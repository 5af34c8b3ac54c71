//! `sessionpipe-updater`: the desktop app's own updates.
//!
//! The dmg's app (macOS) and the msi's (Windows) update themselves from a
//! signed update manifest (`manifest`): at most once a day (`throttle`) the
//! app fetches `latest.json` and `latest.json.sig`, verifies the Ed25519
//! signature with the key compiled in, and, when it offers a newer version
//! with an artifact for this platform, offers it to the person; on their
//! word the artifact is downloaded and checked (`fetch`) and installed
//! (`install`): the `.app` bundle swapped in, or the msi run. A packaged Linux
//! install (the deb) leaves updates to apt and never asks anything.
//!
//! This file owns the decisions that join them: how this copy was installed
//! (`Installation`), whether a check is due, what a check found, and where an
//! install downloads to. Must not show anything or quit the app: the app's
//! shell does that with what it is told here.

pub mod fetch;
pub mod install;
pub mod manifest;
pub mod throttle;

pub use fetch::FetchError;
pub use install::{InstallError, Installed};
pub use manifest::{ManifestError, Update};
pub use semver::Version;
pub use throttle::ThrottleError;

use fetch::{Fetcher, UrlPolicy};
use reqwest::Url;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error(transparent)]
    Fetch(#[from] FetchError),
    #[error(transparent)]
    Install(#[from] InstallError),
    #[error(transparent)]
    State(#[from] ThrottleError),
}

impl Error {
    /// The manifest offers nothing newer: the usual answer, not a failure.
    pub fn is_up_to_date(&self) -> bool {
        matches!(self, Error::Manifest(ManifestError::NotNewer { .. }))
    }
}

/// How this copy of the app was installed, which says how it is updated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Installation {
    /// A macOS `.app` bundle (from the dmg): the `.app.tar.gz` replaces it.
    Bundle {
        bundle: PathBuf,
        /// The running executable inside it (`Contents/MacOS/sessionpipe-app`).
        exe_in_bundle: PathBuf,
        platform: String,
    },
    /// Windows (from the msi): the next msi installs over it.
    Msi { exe: PathBuf, platform: String },
    /// Linux from the deb (the binary under /usr/bin): apt updates it.
    Apt,
    /// Anything else (a build run where cargo put it, an app outside a
    /// bundle): it does not update itself.
    NotInstalled,
}

impl Installation {
    /// This process's.
    pub fn detect() -> Installation {
        match std::env::current_exe() {
            Ok(exe) => Installation::detect_for(std::env::consts::OS, std::env::consts::ARCH, &exe),
            Err(_) => Installation::NotInstalled,
        }
    }

    /// For an executable at `exe` on `os`/`arch` (as `std::env::consts` names them).
    pub fn detect_for(os: &str, arch: &str, exe: &Path) -> Installation {
        if os == "linux" {
            return if exe.parent() == Some(Path::new("/usr/bin")) {
                Installation::Apt
            } else {
                Installation::NotInstalled
            };
        }
        let Some(platform) = manifest::platform_key(os, arch) else {
            return Installation::NotInstalled;
        };
        match os {
            "macos" => bundle_of(exe).map_or(Installation::NotInstalled, |(bundle, inside)| {
                Installation::Bundle {
                    bundle,
                    exe_in_bundle: inside,
                    platform,
                }
            }),
            "windows" => Installation::Msi {
                exe: exe.to_path_buf(),
                platform,
            },
            _ => Installation::NotInstalled,
        }
    }

    /// What the app says about its updates when it does not make them.
    pub fn left_to(&self) -> Option<&'static str> {
        match self {
            Installation::Bundle { .. } | Installation::Msi { .. } => None,
            Installation::Apt => Some("updates come from apt"),
            Installation::NotInstalled => Some("this copy is not an installed app"),
        }
    }

    fn platform(&self) -> Option<&str> {
        match self {
            Installation::Bundle { platform, .. } | Installation::Msi { platform, .. } => {
                Some(platform)
            }
            Installation::Apt | Installation::NotInstalled => None,
        }
    }
}

/// `X.app/Contents/MacOS/exe` → (`X.app`, `Contents/MacOS/exe`).
fn bundle_of(exe: &Path) -> Option<(PathBuf, PathBuf)> {
    let macos = exe.parent()?;
    let contents = macos.parent()?;
    let bundle = contents.parent()?;
    let named = |p: &Path, name: &str| p.file_name().is_some_and(|n| n == name);
    let is_app = bundle.extension().is_some_and(|e| e == "app");
    if !(named(macos, "MacOS") && named(contents, "Contents") && is_app) {
        return None;
    }
    Some((
        bundle.to_path_buf(),
        exe.strip_prefix(bundle).ok()?.to_path_buf(),
    ))
}

/// What a check found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Check {
    /// A newer signed version with this platform's artifact.
    Available(Update),
    /// A newer version the person chose to skip.
    Skipped(Version),
    /// The last check was less than a day ago; nothing was asked.
    NotDue { next: Option<SystemTime> },
    /// This copy does not update itself (apt does, or it is not installed);
    /// nothing was asked.
    LeftTo(&'static str),
}

/// What an `Updater` is made of.
#[derive(Clone, Debug)]
pub struct Config {
    /// The running version.
    pub running: Version,
    /// `latest.json`'s URL; its signature is at the same URL plus `.sig`.
    pub manifest_url: String,
    /// The Ed25519 public key manifests must be signed with.
    pub public_key: [u8; 32],
    /// Where `updates.json` (and, on Windows, the downloaded msi) goes.
    pub state_dir: PathBuf,
    pub installation: Installation,
    /// The longest wait for an answer or for the next bytes of one.
    pub stall: Duration,
    /// The longest a whole download may take.
    pub deadline: Duration,
}

impl Config {
    /// The release key and the usual bounds.
    pub fn new(
        running: Version,
        manifest_url: impl Into<String>,
        state_dir: impl Into<PathBuf>,
        installation: Installation,
    ) -> Config {
        Config {
            running,
            manifest_url: manifest_url.into(),
            public_key: manifest::RELEASE_PUBLIC_KEY,
            state_dir: state_dir.into(),
            installation,
            stall: Duration::from_secs(30),
            deadline: Duration::from_secs(30 * 60),
        }
    }
}

pub struct Updater {
    config: Config,
    key: ed25519_dalek::VerifyingKey,
    manifest_url: Url,
    signature_url: Url,
    fetcher: Fetcher,
    state: throttle::StateFile,
}

impl Updater {
    /// Refuses a key that is no Ed25519 key and a manifest URL that is not
    /// https (or http to this machine).
    pub fn new(config: Config) -> Result<Updater, Error> {
        let key = manifest::public_key(&config.public_key)?;
        let (manifest_url, policy) = UrlPolicy::for_manifest(&config.manifest_url)?;
        let mut signature_url = manifest_url.clone();
        signature_url.set_path(&format!(
            "{}{}",
            manifest_url.path(),
            manifest::SIGNATURE_SUFFIX
        ));
        let fetcher = Fetcher::new(policy, config.stall, config.deadline)?;
        let state = throttle::StateFile::in_dir(&config.state_dir);
        Ok(Updater {
            config,
            key,
            manifest_url,
            signature_url,
            fetcher,
            state,
        })
    }

    /// A check, unless one was made less than a day before `now`.
    pub fn check_if_due(&self, now: SystemTime) -> Result<Check, Error> {
        if let Some(why) = self.config.installation.left_to() {
            return Ok(Check::LeftTo(why));
        }
        let state = self.state.load()?;
        if !state.due(now) {
            return Ok(Check::NotDue {
                next: state.next_check(),
            });
        }
        self.check_now(now)
    }

    /// A check now: the manifest and its signature fetched and verified, then
    /// what it offers this app. Not newer, or nothing for this platform, is an
    /// error (`Error::is_up_to_date` tells the first).
    pub fn check_now(&self, now: SystemTime) -> Result<Check, Error> {
        let Some(platform) = self.config.installation.platform() else {
            return Ok(Check::LeftTo(
                self.config.installation.left_to().unwrap_or_default(),
            ));
        };
        // Counted when started, so a failing server is asked once a day too.
        let mut state = self.state.load()?;
        state.checked_at(now);
        self.state.save(&state)?;

        let bytes = self
            .fetcher
            .get_small(&self.manifest_url, fetch::MANIFEST_LIMIT)?;
        let signature = self
            .fetcher
            .get_small(&self.signature_url, fetch::SIGNATURE_LIMIT)?;
        let manifest = manifest::verify(&bytes, &signature, &self.key)?;
        if state.last_seen.as_ref() < Some(&manifest.version) {
            state.last_seen = Some(manifest.version.clone());
            self.state.save(&state)?;
        }
        let update = manifest.offer(&self.config.running, platform)?;
        if state.skip.as_ref() == Some(update.version()) {
            return Ok(Check::Skipped(update.version().clone()));
        }
        Ok(Check::Available(update))
    }

    /// The person's "Skip this version": not offered again (a later one is).
    pub fn skip(&self, version: &Version) -> Result<(), Error> {
        let mut state = self.state.load()?;
        state.skip = Some(version.clone());
        Ok(self.state.save(&state)?)
    }

    /// Downloads `update`'s artifact, checks it against the manifest and puts
    /// it in place: the bundle swapped (macOS), or the msi ready to run
    /// (Windows). Whatever fails before the swap leaves the installed app as
    /// it was and no file behind.
    pub fn install(&self, update: &Update) -> Result<Installed, Error> {
        // An `Update` is verified; one from another updater's config is not
        // this app's to take.
        if Some(update.platform()) != self.config.installation.platform()
            || update.version() <= &self.config.running
        {
            return Err(ManifestError::NotNewer {
                offered: update.version().clone(),
                running: self.config.running.clone(),
            }
            .into());
        }
        match &self.config.installation {
            Installation::Bundle {
                bundle,
                exe_in_bundle,
                ..
            } => {
                self.install_bundle(update, bundle, exe_in_bundle)?;
                Ok(Installed::Bundle {
                    bundle: bundle.clone(),
                })
            }
            Installation::Msi { exe, .. } => {
                let dir = self.config.state_dir.join("updates");
                std::fs::create_dir_all(&dir).map_err(|source| InstallError::Io {
                    path: dir.clone(),
                    source,
                })?;
                let msi = dir.join(format!("sessionpipe-{}.msi", update.version()));
                self.fetcher.download(update.artifact(), &msi)?;
                Ok(Installed::Msi {
                    msi,
                    exe: exe.clone(),
                })
            }
            other => Err(InstallError::NotSelfUpdating(other.left_to().unwrap_or_default()).into()),
        }
    }

    fn install_bundle(
        &self,
        update: &Update,
        bundle: &Path,
        exe_in_bundle: &Path,
    ) -> Result<(), Error> {
        let parent = bundle.parent().unwrap_or(Path::new("."));
        // Beside the bundle, so every step after the download is a rename.
        let staging = tempfile::Builder::new()
            .prefix(".sessionpipe-update-")
            .tempdir_in(parent)
            .map_err(|source| InstallError::Io {
                path: parent.to_path_buf(),
                source,
            })?;
        let archive = staging.path().join("update.app.tar.gz");
        self.fetcher.download(update.artifact(), &archive)?;
        match install::swap_bundle(bundle, exe_in_bundle, &archive, staging.path()) {
            Ok(()) => {}
            Err(e @ InstallError::SwapAndRollback { .. }) => {
                // The old bundle is in there: never removed.
                let _ = staging.keep();
                return Err(e.into());
            }
            Err(e) => return Err(e.into()),
        }
        // The old bundle goes with the staging directory.
        if let Err(e) = staging.close() {
            tracing::warn!("the update is in; the old bundle was not all removed: {e}");
        }
        Ok(())
    }
}

// Unix: the fake bundle's modes are checked.
#[cfg(all(test, unix))]
mod tests;
