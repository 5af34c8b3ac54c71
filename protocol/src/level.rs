//! The permission levels a control `start` may name, least to most
//! (CONTROL.md, `start`; ADAPTERS.md, Start options): one reading for the
//! verifier that checks a signed command, the harness kit that maps a level
//! to a harness's own flags, and the machine's mode that caps it.

/// A permission level a `start` may name, least to most (ADAPTERS.md, Start
/// options). A machine's mode is the ceiling: `safe` (and `inherit`) allow
/// `read` and `safe`, `auto` allows every level its harness offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Looks, changes nothing.
    Read,
    /// Nothing that needs approval runs unattended.
    Safe,
    /// File edits inside the folder are accepted.
    Edits,
    /// The harness's own auto mode.
    Auto,
}

impl Level {
    pub const ALL: [Level; 4] = [Level::Read, Level::Safe, Level::Edits, Level::Auto];

    pub fn as_str(self) -> &'static str {
        match self {
            Level::Read => "read",
            Level::Safe => "safe",
            Level::Edits => "edits",
            Level::Auto => "auto",
        }
    }

    pub fn parse(s: &str) -> Option<Level> {
        Level::ALL.into_iter().find(|l| l.as_str() == s)
    }
}
