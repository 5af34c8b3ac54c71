//! Putting a verified artifact in place, per platform, and starting the new
//! version once this one has quit.
//!
//! macOS: the artifact is the `.app` bundle as a `.tar.gz`. It is unpacked in
//! a staging directory beside the running bundle (same volume, so each step is
//! a rename), checked to hold the app's executable, then swapped in: the old
//! bundle is moved into the staging directory, the new one renamed to its
//! place, and on a failure of that rename the old one is put back. The staging
//! directory (the old bundle in it) is removed by its owner afterwards. These
//! are plain file operations, run by the tests on any Unix against a fake
//! bundle.
//!
//! Windows: the artifact is the `.msi`; once the app has said it quits,
//! `msiexec /i <msi> /passive /norestart` installs it over the running
//! install, then the app is started again. Written for Windows and untested:
//! nothing here runs Windows.
//!
//! Owns the swap and the hand-over. Must not download or decide whether an
//! update is taken; must leave the installed app as it was whenever it fails
//! before the swap, and put it back when the swap itself fails.

use std::io;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("this copy of the app does not update itself ({0})")]
    NotSelfUpdating(&'static str),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot unpack {archive}: {source}")]
    Unpack {
        archive: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("the update holds {found:?}, not one .app bundle")]
    NoBundle { found: Vec<String> },
    #[error("the update's bundle has no {expected}")]
    NoExecutable { expected: PathBuf },
    #[error("cannot move {bundle} aside (nothing was changed): {source}")]
    MoveAside {
        bundle: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot put the new bundle at {bundle} (the old one is back): {source}")]
    Swap {
        bundle: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "cannot put the new bundle at {bundle}, nor the old one back: it is at {previous}: {source}"
    )]
    SwapAndRollback {
        bundle: PathBuf,
        previous: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot start {program}: {source}")]
    Launch {
        program: String,
        #[source]
        source: io::Error,
    },
}

/// Where the unpacked update goes inside the staging directory.
const UNPACKED: &str = "unpacked";
/// Where the running bundle goes while the new one takes its place.
const PREVIOUS: &str = "previous.app";

/// Replaces `bundle` (a `.app` directory) with the one in `archive`, using
/// `staging` (an empty directory beside `bundle`) for the unpacked update and
/// the old bundle. `exe_in_bundle` (`Contents/MacOS/sessionpipe-app`) must be
/// a file in the new bundle, or nothing is swapped.
pub fn swap_bundle(
    bundle: &Path,
    exe_in_bundle: &Path,
    archive: &Path,
    staging: &Path,
) -> Result<(), InstallError> {
    let unpacked = staging.join(UNPACKED);
    unpack(archive, &unpacked)?;
    let new = only_bundle(&unpacked)?;
    let expected = new.join(exe_in_bundle);
    if !expected.is_file() {
        return Err(InstallError::NoExecutable {
            expected: exe_in_bundle.to_path_buf(),
        });
    }
    let previous = staging.join(PREVIOUS);
    std::fs::rename(bundle, &previous).map_err(|source| InstallError::MoveAside {
        bundle: bundle.to_path_buf(),
        source,
    })?;
    if let Err(source) = std::fs::rename(&new, bundle) {
        return Err(match std::fs::rename(&previous, bundle) {
            Ok(()) => InstallError::Swap {
                bundle: bundle.to_path_buf(),
                source,
            },
            Err(_) => InstallError::SwapAndRollback {
                bundle: bundle.to_path_buf(),
                previous,
                source,
            },
        });
    }
    Ok(())
}

/// Unpacks a `.tar.gz` into `dest` (made here). The tar crate keeps every
/// entry inside `dest` (no `..`, no absolute path, no write through a link)
/// and keeps the modes, so the executables stay executable.
fn unpack(archive: &Path, dest: &Path) -> Result<(), InstallError> {
    let fail = |source| InstallError::Unpack {
        archive: archive.to_path_buf(),
        source,
    };
    std::fs::create_dir(dest).map_err(|source| InstallError::Io {
        path: dest.to_path_buf(),
        source,
    })?;
    let file = std::fs::File::open(archive).map_err(fail)?;
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(io::BufReader::new(file)));
    tar.set_preserve_permissions(true);
    tar.set_preserve_mtime(true);
    tar.unpack(dest).map_err(fail)
}

/// The one `.app` directory `dir` holds.
fn only_bundle(dir: &Path) -> Result<PathBuf, InstallError> {
    let entries = std::fs::read_dir(dir).map_err(|source| InstallError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let found: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    match found.as_slice() {
        [one] if one.is_dir() && one.extension().is_some_and(|e| e == "app") => Ok(one.clone()),
        _ => Err(InstallError::NoBundle {
            found: found
                .iter()
                .filter_map(|p| p.file_name())
                .map(|n| n.to_string_lossy().into_owned())
                .collect(),
        }),
    }
}

/// What an install left, for `restart_after_exit`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Installed {
    /// The new bundle is in place at this path; opening it starts the new version.
    Bundle { bundle: PathBuf },
    /// The msi is downloaded and checked; it installs once the app has quit.
    Msi { msi: PathBuf, exe: PathBuf },
}

/// Starts, detached, what finishes the update once this process (`pid`) has
/// exited: on macOS, opening the new bundle (a second instance would only hand
/// over to this one); on Windows, the msi and then the app. The caller quits
/// right after.
pub fn restart_after_exit(installed: &Installed, pid: u32) -> Result<(), InstallError> {
    match installed {
        Installed::Bundle { bundle } => open_bundle_after(bundle, pid),
        Installed::Msi { msi, exe } => run_msi_after(msi, exe),
    }
}

#[cfg(target_os = "macos")]
fn open_bundle_after(bundle: &Path, pid: u32) -> Result<(), InstallError> {
    // `open` on the bundle once the old process is gone; sh's positional
    // arguments carry the pid and the path, never spliced into the script.
    let script = r#"while kill -0 "$1" 2>/dev/null; do sleep 0.2; done; exec /usr/bin/open "$2""#;
    std::process::Command::new("/bin/sh")
        .args(["-c", script, "sh"])
        .arg(pid.to_string())
        .arg(bundle)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map(drop)
        .map_err(|source| InstallError::Launch {
            program: "/bin/sh".into(),
            source,
        })
}

#[cfg(not(target_os = "macos"))]
fn open_bundle_after(_bundle: &Path, _pid: u32) -> Result<(), InstallError> {
    Err(InstallError::NotSelfUpdating(
        "an app bundle is opened on macOS only",
    ))
}

/// Untested (no Windows here). `start /wait` makes cmd wait for msiexec (a
/// GUI program) before starting the app again, whatever msiexec's outcome.
#[cfg(windows)]
fn run_msi_after(msi: &Path, exe: &Path) -> Result<(), InstallError> {
    use std::os::windows::process::CommandExt;
    const CREATE_NO_WINDOW: u32 = 0x0800_0000;
    let line = format!(
        r#"/C start "" /wait msiexec /i "{}" /passive /norestart & start "" "{}""#,
        msi.display(),
        exe.display()
    );
    std::process::Command::new("cmd")
        .raw_arg(line)
        .creation_flags(CREATE_NO_WINDOW)
        .spawn()
        .map(drop)
        .map_err(|source| InstallError::Launch {
            program: "msiexec".into(),
            source,
        })
}

#[cfg(not(windows))]
fn run_msi_after(_msi: &Path, _exe: &Path) -> Result<(), InstallError> {
    Err(InstallError::NotSelfUpdating(
        "an msi is run on Windows only",
    ))
}
