//! The machine name events carry, kept in step with `config.json`: read from
//! the settings in force (`LiveConfig`, which looks at the file with one
//! `stat` and reads it again only when it changed), so a rename in the UI or
//! the CLI reaches the next event without restarting the daemon.
//!
//! Owns which name is asked for only. Must not write the config, nor decide
//! what a name may be (`Config::machine` does).

use super::live_config::LiveConfig;
use spool::StatePaths;

/// The name, shared by the ingest and the workers that add events beside it.
#[derive(Clone)]
pub struct MachineName {
    source: Source,
}

#[derive(Clone)]
enum Source {
    Live(LiveConfig),
    Fixed(String),
}

impl std::fmt::Debug for MachineName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("MachineName").field(&self.get()).finish()
    }
}

impl MachineName {
    /// The name `config.json` in `paths` gives, followed as the file changes.
    pub fn follow(paths: &StatePaths) -> MachineName {
        MachineName::live(LiveConfig::follow(paths))
    }

    /// The name the settings in force give, as they change (the daemon's).
    pub fn live(config: LiveConfig) -> MachineName {
        MachineName {
            source: Source::Live(config),
        }
    }

    /// A name that never changes (tests, and callers without a state dir).
    pub fn fixed(name: impl Into<String>) -> MachineName {
        MachineName {
            source: Source::Fixed(name.into()),
        }
    }

    /// The name now; while the file does not read, the last settings that
    /// did give it (the hostname until one ever read).
    pub fn get(&self) -> String {
        match &self.source {
            Source::Live(config) => config.now().machine(),
            Source::Fixed(name) => name.clone(),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rename_in_the_config_reaches_the_next_call() {
        use super::super::config::Config;
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
