//! A config file in a temporary home with its own state dir, and an installer
//! over it: what the property tests of every config format install into and
//! uninstall from (the JSON editor's here, Codex's TOML in the adapters). For
//! tests only (`test-util`); it owns no rule of the installer's.

use super::{ConfigFormat, HookInstall, Host, Installer, Target};
use std::path::{Path, PathBuf};

/// One file, `name`, holding `text`, in a fresh temporary home.
pub struct Scratch {
    _tmp: tempfile::TempDir,
    pub host: Host,
    /// The installer's state dir (its ledger and backups).
    pub state: PathBuf,
    pub file: PathBuf,
    format: &'static dyn ConfigFormat,
}

impl Scratch {
    pub fn new(name: &str, text: &str, format: &'static dyn ConfigFormat) -> Scratch {
        let tmp = tempfile::tempdir().expect("a temp dir");
        let host = Host {
            home: tmp.path().join("home"),
            vars: Default::default(),
        };
        std::fs::create_dir_all(&host.home).expect("home");
        let file = host.home.join(name);
        std::fs::write(&file, text).expect("write");
        Scratch {
            state: tmp.path().join("state"),
            _tmp: tmp,
            host,
            file,
            format,
        }
    }

    /// An installer that writes, with no opt-in entries.
    pub fn installer<'a>(&'a self, hook_bin: &'a Path) -> Installer<'a> {
        Installer {
            host: &self.host,
            state_dir: &self.state,
            hook_bin,
            dry_run: false,
            opt_in: &[],
        }
    }

    pub fn read(&self) -> String {
        std::fs::read_to_string(&self.file).expect("read")
    }
}

/// The one file is the harness's only target.
impl HookInstall for Scratch {
    fn targets(&self, _host: &Host) -> Vec<Target> {
        vec![Target::shared(self.file.clone(), self.format)]
    }
}
