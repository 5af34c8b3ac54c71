//! How control drives a harness without a terminal (CONTROL.md §6 `start`,
//! `resume`, `fork`; ADAPTERS.md, each row's Control and Start options lines):
//! the argument list of one headless run, the environment it needs to land in
//! the session's own config dir, which permission levels the installed build
//! offers, where a session's live process and transcript are, and a reader
//! for the run's own output stream (the session id it picked, the reply as it
//! grows, how it ended).
//!
//! Owns only the harness's words: it starts no process, reads no socket and
//! decides no rung. The daemon's control picks the rung, runs the process,
//! caps and times it, and acks. Never a flag that bypasses the harness's own
//! permissions or sandbox: no level maps to one.

use std::path::{Path, PathBuf};

/// A permission level a `start` may name (the protocol's: a signed command
/// names it, and the verifier reads it).
pub use protocol::Level;

/// What a run asks of the harness beyond its words.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// `None`: no permission flag at all (an `inherit` machine's start that
    /// named no level: the person's own config decides).
    pub level: Option<Level>,
    /// A model id, passed as two arguments.
    pub model: Option<String>,
    /// MCP tool names (`mcp__<server>`) a receiver may let the run use
    /// without asking (`control.session_tools`, already filtered).
    pub allowed_tools: Vec<String>,
}

/// One headless run: a new session, or a turn added to one that exists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Run<'a> {
    /// A new session. `id` is the command's session id: a harness that takes
    /// an id of ours uses it, one that picks its own ignores it.
    Start { id: &'a str },
    /// The next turn of the session `id` (the harness's own id), no live
    /// process holding it.
    Resume { id: &'a str },
    /// A copy of the session `id`, which a live process holds: a new session
    /// with its history.
    Fork { id: &'a str },
}

/// Where a session of this harness lives on this machine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Place {
    /// Its transcript file, when one exists.
    pub transcript: Option<PathBuf>,
    /// Environment a run needs to find the session (Claude Code's
    /// `CLAUDE_CONFIG_DIR` for a config dir other than `~/.claude`).
    pub env: Vec<(String, String)>,
}

/// A live process that holds a session (ADAPTERS.md: the session registry and
/// the process ancestry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Live {
    pub pid: u32,
    /// Claude Code's cross-session inbox, when the record names one whose
    /// protocol this daemon speaks (`peerProtocol: 1`); `None` otherwise.
    pub inbox: Option<PathBuf>,
}

/// What a live session's inbox did with a message (Claude Code's
/// cross-session socket).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InboxOutcome {
    /// The session took it: it answers in a turn of its own.
    Taken,
    /// Held unread (the sender's class does not match the session's): it
    /// will be dropped, so the next rung takes the message.
    Held,
    /// Never reached the session: the next rung takes the message.
    Missed(String),
    /// It may have reached the session: nothing else may deliver it again.
    Unsure(String),
}

/// The program line of one run: `program` found on `PATH`, `args` exactly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    /// Where the run must start (a harness that takes its folder as an
    /// argument still runs there).
    pub cwd: PathBuf,
    /// For a harness that reads its turn from stdin: what it is fed. None:
    /// stdin is closed and the turn is in `args`.
    pub input: Option<Input>,
}

/// What a reply says after its turn was stopped by a verified `cancel`: a
/// headless run's and an ACP turn's alike.
pub const CANCELLED: &str = "(The turn was cancelled.)";

/// What a run that reads its turn from stdin is fed (Claude Code's
/// `--input-format stream-json`): `turn`, written at once, and `interrupt`,
/// the line that asks the running turn to stop, written when a verified
/// `cancel` comes. Stdin stays open until the run says how its turn ended;
/// then it closes and the process exits on its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    /// One or more lines, each ending in a newline.
    pub turn: String,
    pub interrupt: String,
}

/// Why a run cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotOffered {
    #[error("this harness has no headless {0}")]
    Run(&'static str),
    #[error("the level `{0}` is not offered by this harness here")]
    Level(&'static str),
    #[error("this harness takes no model here")]
    Model,
}

/// How a run is going, as its own output says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// The session id the harness names (its `init`, `thread.started`...).
    pub session: Option<String>,
    /// The reply so far, whole (not a delta).
    pub reply: String,
    /// Set once the run says how it ended: `Ok` with the final reply, or the
    /// harness's own words for a failure.
    pub end: Option<Result<String, String>>,
}

/// Reads one run's output line by line.
pub trait StreamReader: Send {
    /// Takes one line of stdout and updates `progress`.
    fn line(&mut self, line: &str, progress: &mut Progress);
}

/// A harness control can run headless.
pub trait Headless: Sync {
    /// The CLI's name on `PATH` (`claude`, `codex`, `agy`).
    fn program(&self) -> &'static str;
    /// The levels the installed build offers, given its `--help` text
    /// (empty when the harness has none; a level maps only to a mode the
    /// build lists). Ordered least to most.
    fn levels(&self, help: &str) -> Vec<Level>;
    /// The level a start that names none runs at on an `auto` machine (an
    /// `inherit` machine passes none; a `safe` one `Safe`).
    fn auto_default(&self) -> Level {
        Level::Auto
    }
    /// Whether a start may name a model.
    fn takes_model(&self) -> bool {
        true
    }
    /// The models the hello lists for this harness (its own cache; empty
    /// when any well-formed model is simply passed on).
    fn models(&self, _host: &crate::install::Host) -> Vec<String> {
        Vec::new()
    }
    /// The arguments of `run` in `cwd` with `text` (already framed) and
    /// `options` (the level already checked against `levels`); `help` is the
    /// installed build's `--help` text, for flags only some builds have.
    fn launch(
        &self,
        run: &Run<'_>,
        cwd: &Path,
        text: &str,
        options: &Options,
        place: &Place,
        help: &str,
    ) -> Result<Launch, NotOffered>;
    /// A reader of one run's stdout.
    fn reader(&self) -> Box<dyn StreamReader>;
    /// Where the session `id` lives on this machine.
    fn place(&self, _host: &crate::install::Host, _id: &str) -> Place {
        Place::default()
    }
    /// The live process holding the session `id`, if one does.
    fn live(&self, _host: &crate::install::Host, _id: &str) -> Option<Live> {
        None
    }
    /// Hands `framed` (the in-place frame) to a live session's inbox at
    /// `socket`, as `from` (who sent it, in words); `memo` is what the
    /// adapter remembered of the session (its permission mode).
    fn inbox(
        &self,
        _socket: &Path,
        _from: &str,
        _framed: &str,
        _memo: &serde_json::Map<String, serde_json::Value>,
    ) -> InboxOutcome {
        InboxOutcome::Missed("this harness has no inbox".into())
    }
    /// Whether a run of this harness may fork a live session (Claude Code's
    /// `--fork-session`); otherwise a live session takes no headless turn.
    fn forks(&self) -> bool {
        false
    }
    /// Whether the harness picks its own session ids (the command's id is
    /// then kept as an alias of the one it picked).
    fn picks_ids(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_read_back_and_order_least_to_most() {
        for l in Level::ALL {
            assert_eq!(Level::parse(l.as_str()), Some(l));
        }
        assert!(Level::Read < Level::Safe && Level::Edits < Level::Auto);
        assert_eq!(Level::parse("bypass"), None);
    }
}
