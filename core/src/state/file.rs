//! A JSON file of the state dir, read whole and written whole: absent is `None`,
//! damaged is an error that names the file, and every write is private (0600 in
//! a 0700 folder) and atomic. Settings, sinks and the secrets fallback use it.

use serde::Serialize;
use serde::de::DeserializeOwned;
use std::io;
use std::path::{Path, PathBuf};

/// Why a state file cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: io::Error },
    #[error("{path} is damaged: {source}")]
    Damaged {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: io::Error },
}

/// The file's value; `None` when there is no file.
pub fn load<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, FileError> {
    match std::fs::read(path) {
        Ok(bytes) => {
            serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|source| FileError::Damaged {
                    path: path.to_path_buf(),
                    source,
                })
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(FileError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Writes `value` as pretty JSON, private and atomic.
pub fn save<T: Serialize>(path: &Path, value: &T) -> Result<(), FileError> {
    let json = serde_json::to_vec_pretty(value).expect("state files serialise");
    spool::files::write_private_file(path, &json).map_err(|source| FileError::Write {
        path: path.to_path_buf(),
        source,
    })
}
