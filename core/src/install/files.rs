//! The installer's bookkeeping on disk: the original of every harness file before
//! our first write (byte for byte, never overwritten), what we last wrote (a
//! digest, so uninstall can tell an untouched file), and atomic writes.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

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

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub struct Ledger {
    state_dir: PathBuf,
    pub state: InstallState,
    changed: bool,
    /// A file got its first write in this run (a first install).
    first_write: bool,
}

impl Ledger {
    pub fn load(state_dir: &Path) -> Result<Ledger, String> {
        let path = state_dir.join("install.json");
        let state = match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| format!("{} is damaged: {e}", path.display()))?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => InstallState::default(),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
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
    pub fn save(&self) -> Result<(), String> {
        if !self.changed {
            return Ok(());
        }
        let path = self.state_dir.join("install.json");
        let json = serde_json::to_vec_pretty(&self.state).expect("install state serialises");
        crate::paths::create_private_dir(&self.state_dir)
            .and_then(|_| write_atomic(&path, &json))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
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
    ) -> Result<(), String> {
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
                let dir = self.state_dir.join("backups");
                crate::paths::create_private_dir(&dir)
                    .and_then(|_| write_atomic(&dir.join(&name), bytes))
                    .map_err(|e| format!("cannot back up {}: {e}", file.display()))?;
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

/// Writes `bytes` to `path` through a temp file in the same folder and a rename,
/// keeping the existing file's permissions.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.sessionpipe-{}", std::process::id()));
    let result = (|| {
        let mut f = fs::File::create(&tmp)?;
        if let Ok(meta) = fs::metadata(path) {
            f.set_permissions(meta.permissions())?;
        }
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}
