//! Where sessionpipe keeps secrets (sink tokens, webhook secrets): the OS keychain,
//! or, where none is unlocked (a headless box), a 0600 file in the state dir.
//! `doctor` and `status` say which. Values never reach a log or an event.
//!
//! `SESSIONPIPE_SECRETS=file` forces the file (tests; machines whose keychain
//! prompts). A secret is looked up in the keychain first, then the file.

use super::file::{self, FileError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const SERVICE: &str = "sessionpipe";

/// The store a secret went to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Backend {
    Keychain,
    File(PathBuf),
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Backend::Keychain => f.write_str("the OS keychain"),
            Backend::File(p) => write!(f, "{} (0600; no keychain was available)", p.display()),
        }
    }
}

pub struct Secrets {
    file: PathBuf,
}

impl Secrets {
    pub fn new(state_dir: &Path) -> Secrets {
        Secrets {
            file: spool::StatePaths::new(state_dir).secrets(),
        }
    }

    fn keychain_allowed() -> bool {
        std::env::var("SESSIONPIPE_SECRETS").as_deref() != Ok("file")
    }

    /// Stores `value` under `key`, in the keychain when it takes it.
    pub fn set(&self, key: &str, value: &str) -> Result<Backend, FileError> {
        if Self::keychain_allowed()
            && keyring::Entry::new(SERVICE, key)
                .and_then(|e| e.set_password(value))
                .is_ok()
        {
            // One place only: drop a copy an earlier file fallback may hold.
            let _ = self.file_update(|m| {
                m.remove(key);
            });
            return Ok(Backend::Keychain);
        }
        self.file_update(|m| {
            m.insert(key.to_string(), value.to_string());
        })?;
        Ok(Backend::File(self.file.clone()))
    }

    pub fn get(&self, key: &str) -> Option<String> {
        if Self::keychain_allowed()
            && let Ok(v) = keyring::Entry::new(SERVICE, key).and_then(|e| e.get_password())
        {
            return Some(v);
        }
        self.file_read().remove(key)
    }

    pub fn delete(&self, key: &str) {
        if Self::keychain_allowed()
            && let Ok(e) = keyring::Entry::new(SERVICE, key)
        {
            let _ = e.delete_credential();
        }
        let _ = self.file_update(|m| {
            m.remove(key);
        });
    }

    /// Where `key` is kept now, if anywhere.
    pub fn backend_of(&self, key: &str) -> Option<Backend> {
        if self.file_read().contains_key(key) {
            return Some(Backend::File(self.file.clone()));
        }
        self.get(key).map(|_| Backend::Keychain)
    }

    /// An exclusive lock beside the file, held while it is rewritten; `None`
    /// where the folder cannot take one (the write goes on unlocked).
    fn lock_file(&self) -> Option<std::fs::File> {
        let path = self.file.with_extension("json.lock");
        if let Some(dir) = path.parent() {
            let _ = spool::files::create_private_dir(dir);
        }
        let mut open = std::fs::OpenOptions::new();
        open.create(true).truncate(false).write(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut open, 0o600);
        let f = open.open(&path).ok()?;
        f.lock().ok()?;
        Some(f)
    }

    /// Removes the temp files of writes that never got to their rename (a
    /// process killed mid-write): each holds secrets. Only under the lock,
    /// so no write in progress is among them.
    fn sweep_temps(&self) {
        let (Some(dir), Some(name)) = (self.file.parent(), self.file.file_name()) else {
            return;
        };
        let prefix = format!(".{}.sessionpipe-", name.to_string_lossy());
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }

    /// The fallback file's secrets; a damaged file holds none that can be read.
    fn file_read(&self) -> BTreeMap<String, String> {
        file::load(&self.file).ok().flatten().unwrap_or_default()
    }

    fn file_update(
        &self,
        change: impl FnOnce(&mut BTreeMap<String, String>),
    ) -> Result<(), FileError> {
        // One writer at a time across processes (the daemon storing a
        // rotated sign-in while `pool add` stores another): a read, change
        // and write that interleaved would drop one of them.
        let held = self.lock_file();
        if held.is_some() {
            self.sweep_temps();
        }
        let mut m = self.file_read();
        change(&mut m);
        if m.is_empty() {
            let _ = std::fs::remove_file(&self.file);
            return Ok(());
        }
        file::save(&self.file, &m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_store_is_private_and_round_trips() {
        // The file path is taken whenever no keychain answers; force it here.
        let dir = tempfile::tempdir().unwrap();
        let s = Secrets {
            file: dir.path().join("secrets.json"),
        };
        s.file_update(|m| {
            m.insert("sink:a:token".into(), "t0ken".into());
        })
        .unwrap();
        assert_eq!(
            s.file_read().get("sink:a:token").map(String::as_str),
            Some("t0ken")
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&s.file).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        // A write killed before its rename left its temp file: the next
        // write takes it away.
        let stale = dir.path().join(".secrets.json.sessionpipe-999999");
        std::fs::write(&stale, "{\"sink:a:token\": \"t0ken\"}").unwrap();
        s.file_update(|m| {
            m.remove("sink:a:token");
        })
        .unwrap();
        assert!(!s.file.exists(), "an empty store leaves no file");
        assert!(!stale.exists(), "a dead write's temp file is swept");
    }
}
