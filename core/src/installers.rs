//! Layer 3, installers: `install`, `uninstall` and `status` of our hook entries,
//! for every registered harness or those named, on this machine.
//!
//! The mechanics (reading and writing a config file byte for byte, the ledger of
//! originals) are the harness kit's `install`; which files and entries are each
//! adapter's. This module joins the two for the CLI, the local API and `doctor`,
//! so each asks the same way. Uses layer 1 and the crates below.

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
        Ok(out)
    }
}
