//! Layer 3, installers: `install`, `uninstall` and `status` of our hook entries,
//! for every registered harness or those named, on this machine.
//!
//! The mechanics (reading and writing a config file byte for byte, the ledger of
//! originals) are the harness kit's `install`; which files and entries are each
//! adapter's. This module joins the two for the CLI, the local API and `doctor`,
//! so each asks the same way. Uses layer 1 and the crates below.
//!
//! It also owns the offers: a harness found here whose hooks are not
//! installed (installed after setup, say) is offered to the person until they
//! install it or decline it; `uninstall --harness X` declines it too, so what
//! the person took out is never offered back (`harness-declined.json`).

use adapters::UnknownHarness;
use harness::install::{self, HarnessReport, Host, Installer};
use spool::StatePaths;
use std::path::PathBuf;

/// What to do to each harness's files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Status,
    Install,
    Uninstall,
}

/// One harness acted on.
#[derive(Clone, Debug)]
pub struct Acted {
    pub report: HarnessReport,
    /// What the person should know, said when this install first wrote the
    /// harness's hooks.
    pub first_install_note: Option<&'static str>,
    /// The harness's note, whatever happened (the UI shows it beside the row).
    pub note: Option<&'static str>,
}

/// Why the installers could not act at all.
#[derive(Debug, thiserror::Error)]
pub enum InstallersError {
    #[error(transparent)]
    Harness(#[from] UnknownHarness),
    #[error("HOME is not set")]
    NoHome,
    #[error(transparent)]
    HookBinary(#[from] install::HookBinaryError),
    #[error(transparent)]
    Ledger(#[from] install::LedgerError),
    #[error(transparent)]
    File(#[from] crate::state::file::FileError),
}

/// The harnesses the person declined (`harness-declined.json`).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Declined {
    harnesses: Vec<String>,
}

fn declined_path(paths: &StatePaths) -> PathBuf {
    paths.root.join("harness-declined.json")
}

fn declined(paths: &StatePaths) -> Result<Declined, InstallersError> {
    Ok(crate::state::file::load(&declined_path(paths))?.unwrap_or_default())
}

/// Harnesses found here, hooks not installed, not declined: what the UI and
/// the tray offer to watch.
pub fn offers(paths: &StatePaths) -> Result<Vec<HarnessReport>, InstallersError> {
    let declined = declined(paths)?;
    Ok(Installers::from_env(paths)?
        .act(Action::Status, &[], true, &[])?
        .into_iter()
        .map(|a| a.report)
        .filter(|r| r.summary == "missing" && !declined.harnesses.contains(&r.harness))
        .collect())
}

/// The person said no to watching `harness`: it is not offered again
/// (installing it later is still theirs to do).
pub fn decline(paths: &StatePaths, harness: &str) -> Result<(), InstallersError> {
    adapters::installable(&[harness.to_string()])?;
    let mut d = declined(paths)?;
    if !d.harnesses.iter().any(|h| h == harness) {
        d.harnesses.push(harness.to_string());
        crate::state::file::save(&declined_path(paths), &d)?;
    }
    Ok(())
}

fn undecline(paths: &StatePaths, harnesses: &[String]) -> Result<(), InstallersError> {
    let mut d = declined(paths)?;
    let before = d.harnesses.len();
    d.harnesses.retain(|h| !harnesses.contains(h));
    if d.harnesses.len() != before {
        crate::state::file::save(&declined_path(paths), &d)?;
    }
    Ok(())
}

/// The machine as the installers see it, with the hook binary our entries run.
pub struct Installers {
    host: Host,
    hook_bin: PathBuf,
    state_dir: PathBuf,
}

impl Installers {
    /// This process's machine: its home, environment and hook binary.
    pub fn from_env(paths: &StatePaths) -> Result<Installers, InstallersError> {
        Ok(Installers {
            host: Host::from_env().ok_or(InstallersError::NoHome)?,
            hook_bin: install::hook_binary()?,
            state_dir: paths.root.clone(),
        })
    }

    /// Acts on the harnesses named (all with an installer when none is),
    /// writing optional entries named in `opt_in` (`install --status-line`).
    pub fn act(
        &self,
        action: Action,
        names: &[String],
        dry_run: bool,
        opt_in: &[&str],
    ) -> Result<Vec<Acted>, InstallersError> {
        let installer = Installer {
            host: &self.host,
            state_dir: &self.state_dir,
            hook_bin: &self.hook_bin,
            dry_run: dry_run || action == Action::Status,
            opt_in,
        };
        let mut out = Vec::new();
        for adapter in adapters::installable(names)? {
            let Some(hooks) = adapter.hooks() else {
                continue; // `installable` keeps only adapters with installers
            };
            let name = adapter.name();
            let (report, first_install_note) = match action {
                Action::Status => (installer.status(name, hooks), None),
                Action::Install => installer.install(name, hooks)?,
                Action::Uninstall => (installer.uninstall(name, hooks)?, None),
            };
            let note = hooks.note();
            out.push(Acted {
                report,
                first_install_note,
                note,
            });
        }
        // What the person did by name is their answer to an offer.
        if !dry_run {
            let state = StatePaths::new(&self.state_dir);
            match action {
                Action::Install => {
                    let done: Vec<String> = out
                        .iter()
                        .filter(|a| !a.report.files.is_empty())
                        .map(|a| a.report.harness.clone())
                        .collect();
                    undecline(&state, &done)?;
                }
                Action::Uninstall => {
                    // Named, or every one found (uninstalling all of them).
                    for a in out.iter().filter(|a| !a.report.files.is_empty()) {
                        decline(&state, &a.report.harness)?;
                    }
                }
                Action::Status => {}
            }
        }
        Ok(out)
    }
}
