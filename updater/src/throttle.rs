//! When to check again, and what the person said: a small JSON file,
//! `updates.json` in the state directory the app passes, 0600.
//!
//! ```text
//! {"last_check": 1767225600, "last_seen": "0.2.0", "skip": "0.2.0"}
//! ```
//!
//! `last_check` is when a check was last started (Unix seconds), whatever
//! came of it, so a failing server is asked at most once a day too; a clock
//! that went back past it makes a check due (it would otherwise wait for as
//! long as the clock was off). Owns that file and the rule. Must not fetch
//! or decide what a manifest offers; the time is passed in, never read here.

use semver::Version;
use serde::{Deserialize, Serialize};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// At most one check in this long.
pub const INTERVAL: Duration = Duration::from_secs(24 * 60 * 60);

/// The file's name in the state directory.
pub const FILE_NAME: &str = "updates.json";

#[derive(Debug, thiserror::Error)]
pub enum ThrottleError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// When the last check started, in Unix seconds.
    #[serde(default)]
    pub last_check: Option<u64>,
    /// The newest version a verified manifest offered.
    #[serde(default)]
    pub last_seen: Option<Version>,
    /// The version the person chose to skip ("Skip this version").
    #[serde(default)]
    pub skip: Option<Version>,
}

impl State {
    /// Whether a check is due at `now`.
    pub fn due(&self, now: SystemTime) -> bool {
        match (self.last_check, unix(now)) {
            (None, _) => true,
            (Some(last), now) => now < last || now - last >= INTERVAL.as_secs(),
        }
    }

    /// When the next check is due (`None`: now).
    pub fn next_check(&self) -> Option<SystemTime> {
        self.last_check
            .map(|last| UNIX_EPOCH + Duration::from_secs(last) + INTERVAL)
    }

    pub fn checked_at(&mut self, now: SystemTime) {
        self.last_check = Some(unix(now));
    }
}

fn unix(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// `updates.json` in one state directory.
#[derive(Clone, Debug)]
pub struct StateFile {
    path: PathBuf,
}

impl StateFile {
    pub fn in_dir(dir: &Path) -> StateFile {
        StateFile {
            path: dir.join(FILE_NAME),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The state; a missing file is a first run. A file that is not ours (cut
    /// short, edited) counts as none: the worst that follows is one check
    /// more and the skip forgotten.
    pub fn load(&self) -> Result<State, ThrottleError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => Ok(serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                tracing::warn!("{}: {e}; starting afresh", self.path.display());
                State::default()
            })),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(State::default()),
            Err(source) => Err(self.error(source)),
        }
    }

    /// Writes `state` whole: a 0600 temp file beside it, renamed over it.
    pub fn save(&self, state: &State) -> Result<(), ThrottleError> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| self.error(e))?;
        let mut temp = tempfile::Builder::new()
            .prefix(".updates-")
            .tempfile_in(dir)
            .map_err(|e| self.error(e))?;
        let json = serde_json::to_vec(state).map_err(|e| self.error(e.into()))?;
        temp.write_all(&json).map_err(|e| self.error(e))?;
        temp.as_file().sync_all().map_err(|e| self.error(e))?;
        temp.persist(&self.path).map_err(|e| self.error(e.error))?;
        Ok(())
    }

    fn error(&self, source: io::Error) -> ThrottleError {
        ThrottleError::Io {
            path: self.path.clone(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_once_a_day_and_when_the_clock_went_back() {
        let t0 = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let mut state = State::default();
        assert!(state.due(t0), "never checked");
        state.checked_at(t0);
        assert!(!state.due(t0 + Duration::from_secs(60)));
        assert!(!state.due(t0 + INTERVAL - Duration::from_secs(1)));
        assert!(state.due(t0 + INTERVAL));
        assert!(state.due(t0 - Duration::from_secs(3600)), "clock went back");
        assert_eq!(state.next_check(), Some(t0 + INTERVAL));
    }

    #[test]
    fn the_file_round_trips_at_0600_and_a_broken_one_is_a_fresh_start() {
        let dir = tempfile::tempdir().unwrap();
        let file = StateFile::in_dir(dir.path());
        assert_eq!(file.load().unwrap(), State::default());
        let state = State {
            last_check: Some(5),
            last_seen: Some(Version::new(0, 2, 0)),
            skip: Some(Version::new(0, 2, 0)),
        };
        file.save(&state).unwrap();
        assert_eq!(file.load().unwrap(), state);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(file.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::write(file.path(), b"{\"last_check\": ").unwrap();
        assert_eq!(file.load().unwrap(), State::default());
    }
}
