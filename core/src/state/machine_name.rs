//! The machine name events carry, kept in step with `config.json`: the file is
//! looked at (one `stat`) each time the name is asked for, and read again only
//! when its modification time or length changed, so a rename in the UI or the
//! CLI reaches the next event without restarting the daemon.
//!
//! Owns that cache only. Must not write the config, nor decide what a name may
//! be (`Config::machine` does).

use super::config::Config;
use spool::StatePaths;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// The name, shared by the ingest and the workers that add events beside it.
#[derive(Clone, Debug)]
pub struct MachineName {
    /// Where the name is read again from; `None` for a fixed name.
    paths: Option<StatePaths>,
    cache: Arc<Mutex<Cached>>,
}

#[derive(Debug)]
struct Cached {
    /// What the file looked like when `name` was read (`None`: no file).
    stamp: Option<(SystemTime, u64)>,
    name: String,
}

impl MachineName {
    /// The name `config.json` in `paths` gives, followed as the file changes.
    pub fn follow(paths: &StatePaths) -> MachineName {
        let stamp = stamp_of(&paths.config());
        let name = read(paths);
        MachineName {
            paths: Some(paths.clone()),
            cache: Arc::new(Mutex::new(Cached { stamp, name })),
        }
    }

    /// A name that never changes (tests, and callers without a state dir).
    pub fn fixed(name: impl Into<String>) -> MachineName {
        MachineName {
            paths: None,
            cache: Arc::new(Mutex::new(Cached {
                stamp: None,
                name: name.into(),
            })),
        }
    }

    /// The name now.
    pub fn get(&self) -> String {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(paths) = &self.paths {
            let stamp = stamp_of(&paths.config());
            if stamp != cache.stamp {
                cache.name = read(paths);
                cache.stamp = stamp;
            }
        }
        cache.name.clone()
    }
}

impl From<String> for MachineName {
    fn from(name: String) -> MachineName {
        MachineName::fixed(name)
    }
}

impl From<&str> for MachineName {
    fn from(name: &str) -> MachineName {
        MachineName::fixed(name)
    }
}

/// What a file looks like (modification time and length), for the caches
/// that follow `config.json` without reading it each time.
pub(crate) fn stamp_of(path: &std::path::Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// The config's name; an unreadable file gives the hostname, as at start.
fn read(paths: &StatePaths) -> String {
    Config::load(paths).unwrap_or_default().machine()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rename_in_the_config_reaches_the_next_call() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        paths.ensure().unwrap();
        let name = MachineName::follow(&paths);
        assert_eq!(
            name.get(),
            super::super::config::hostname(),
            "no file: the hostname"
        );
        let mut config = Config {
            machine: Some("studio".into()),
            ..Config::default()
        };
        config.save(&paths).unwrap();
        assert_eq!(name.get(), "studio");
        let clone = name.clone();
        config.machine = Some("attic-box".into());
        config.save(&paths).unwrap();
        assert_eq!(clone.get(), "attic-box", "every holder sees the new name");
        assert_eq!(name.get(), "attic-box");
        assert_eq!(MachineName::fixed("x").get(), "x");
    }
}
