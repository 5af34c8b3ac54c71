//! The person's settings for this machine: `config.json` in the state dir.
//!
//! Small and optional: a missing file is the defaults, an unreadable one is
//! reported and the defaults used (the daemon must start regardless).

use super::file::{self, FileError};
use serde::{Deserialize, Serialize};
use spool::StatePaths;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    /// Read transcripts into `turn.transcript` events (tier 2). Off by default:
    /// turned on when a destination takes tier 2, or by the person for local use.
    pub transcripts: bool,
    /// The machine name events carry instead of the hostname.
    pub machine: Option<String>,
    /// The highest tier a desktop notification's text may show (0: only what
    /// kind of attention; 1: the tool and its message). Default 1.
    pub notify_tier: Option<u8>,
    /// Notify when a turn ends while the person is away. Off by default.
    pub notify_turn_end: bool,
    /// Harnesses whose notifications are muted.
    pub muted: Vec<String>,
    /// Notifications paused from the tray (until turned back on).
    pub notifications_paused: bool,
    /// Start the app at login (the app's autostart follows this).
    pub open_at_login: bool,
}

impl Config {
    pub fn notify_tier(&self) -> u8 {
        self.notify_tier.unwrap_or(1).min(3)
    }
}

impl Config {
    /// The settings; the defaults when there is no file yet.
    pub fn load(paths: &StatePaths) -> Result<Config, FileError> {
        Ok(file::load(&paths.config())?.unwrap_or_default())
    }

    pub fn save(&self, paths: &StatePaths) -> Result<(), FileError> {
        file::save(&paths.config(), self)
    }
}
