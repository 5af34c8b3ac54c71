//! The installer's bookkeeping on disk: the original of every harness file before
//! our first write (byte for byte, never overwritten), what we last wrote (a
//! digest, so uninstall can tell an untouched file). Both are state files,
//! private from their first byte (0600 in 0700 folders) like every other: a
//! harness's settings may hold a key, and the ledger says where they all are.

use serde::{Deserialize, Serialize};
use spool::files::write_private_file;
use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Why the ledger cannot be read or written; nothing is written to a harness's
/// file without it.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("{path} is damaged: {source}")]
    Damaged {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: io::Error },
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: io::Error },
    #[error("cannot back up {path}: {source}")]
    Backup { path: PathBuf, source: io::Error },
}

/// What we know of one harness file we wrote.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FileRecord {
    pub harness: String,
    /// False when the file did not exist before our first write.
    pub existed: bool,
    /// The original's copy, relative to the state dir, when it existed.
    pub backup: Option<String>,
    /// SHA-256 (hex) of the bytes we last wrote.
    pub written: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct InstallState {
    pub files: BTreeMap<String, FileRecord>,
}

pub use crate::digest::sha256_hex;

pub struct Ledger {
    state_dir: PathBuf,
    pub state: InstallState,
    changed: bool,
    /// A file got its first write in this run (a first install).
    first_write: bool,
}

impl Ledger {
    pub fn load(state_dir: &Path) -> Result<Ledger, LedgerError> {
        let path = spool::StatePaths::new(state_dir).install_state();
        let state = match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|source| LedgerError::Damaged { path, source })?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => InstallState::default(),
            Err(source) => return Err(LedgerError::Read { path, source }),
        };
        Ok(Ledger {
            state_dir: state_dir.to_path_buf(),
            state,
            changed: false,
            first_write: false,
        })
    }

    /// True when a file got its first write through this ledger.
    pub fn first_write(&self) -> bool {
        self.first_write
    }

    /// Writes the ledger when anything in it changed.
    pub fn save(&self) -> Result<(), LedgerError> {
        if !self.changed {
            return Ok(());
        }
        let path = spool::StatePaths::new(&self.state_dir).install_state();
        let json = serde_json::to_vec_pretty(&self.state).expect("install state serialises");
        write_private_file(&path, &json).map_err(|source| LedgerError::Write { path, source })
    }

    pub fn record(&self, file: &Path) -> Option<&FileRecord> {
        self.state.files.get(&key(file))
    }

    /// Keeps the original of `file` before our first write to it. Returns the
    /// original's bytes (`None`: the file did not exist).
    pub fn keep_original(
        &mut self,
        harness: &str,
        file: &Path,
        current: Option<&[u8]>,
    ) -> Result<(), LedgerError> {
        if self.state.files.contains_key(&key(file)) {
            return Ok(()); // kept at our first write; never overwritten
        }
        let backup = match current {
            Some(bytes) => {
                let name = format!(
                    "{}-{}",
                    &sha256_hex(key(file).as_bytes())[..16],
                    file.file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default()
                );
                let dir = spool::StatePaths::new(&self.state_dir).backups();
                write_private_file(&dir.join(&name), bytes).map_err(|source| {
                    LedgerError::Backup {
                        path: file.to_path_buf(),
                        source,
                    }
                })?;
                Some(format!("backups/{name}"))
            }
            None => None,
        };
        self.changed = true;
        self.first_write = true;
        self.state.files.insert(
            key(file),
            FileRecord {
                harness: harness.into(),
                existed: current.is_some(),
                backup,
                written: String::new(),
            },
        );
        Ok(())
    }

    pub fn set_written(&mut self, file: &Path, bytes: &[u8]) {
        if let Some(r) = self.state.files.get_mut(&key(file)) {
            r.written = sha256_hex(bytes);
            self.changed = true;
        }
    }

    /// The original's bytes, as kept (`Some(None)`: it did not exist).
    pub fn original(&self, file: &Path) -> Option<Option<Vec<u8>>> {
        let r = self.record(file)?;
        match &r.backup {
            Some(rel) => fs::read(self.state_dir.join(rel)).ok().map(Some),
            None if !r.existed => Some(None),
            None => None,
        }
    }

    /// Forgets a file after uninstall, with its backup.
    pub fn forget(&mut self, file: &Path) {
        if let Some(r) = self.state.files.remove(&key(file)) {
            self.changed = true;
            if let Some(rel) = r.backup {
                let _ = fs::remove_file(self.state_dir.join(rel));
            }
        }
    }
}

fn key(file: &Path) -> String {
    file.to_string_lossy().into_owned()
}
