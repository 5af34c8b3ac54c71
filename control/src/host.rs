//! What control needs of the daemon that runs it, handed in (`Host`): its
//! settings in force (`Settings`, the control part of `config.json`), a
//! receiver's machine token from the secrets store, what the outbox's record
//! of a session says (`SessionFacts`), the harnesses the outbox has seen, the
//! pool's standing for the hello; and where a run's growing reply becomes
//! `turn.progress` events of its session (`ProgressEvents`, only where a
//! destination takes tier 2). The core's `control::host` answers them from
//! its state, pipeline and pool.
//!
//! Only the questions: nothing here reads a file or decides anything. Every
//! call may block (a keychain, SQLite); control makes them on the blocking
//! pool.

use harness::Memo;
use sessionpipe_verifier::SessionRef;
use std::time::Duration;

/// What control asks of the daemon.
pub trait Host: Send + Sync + 'static {
    /// Control's settings as they are in force now (while `config.json`
    /// does not read, the last that did).
    fn settings(&self) -> Settings;
    /// The machine token kept under `key` in the secrets store.
    fn token(&self, key: &str) -> Option<String>;
    /// What the outbox's record of `session` says; none without an outbox,
    /// for a session it does not hold, or when it cannot be read.
    fn session(&self, session: &SessionRef) -> Option<SessionFacts>;
    /// The harnesses the outbox has seen a session of (the hello's).
    fn harnesses(&self) -> Vec<String>;
    /// The hello's `pool`, once the person added an account: whether it is
    /// on and each account's standing, nothing secret.
    fn pool(&self) -> Option<serde_json::Value>;
    /// The hello's `limits`: each account's limit windows as the machine last
    /// heard them, with when the last hour's pace runs one out before it
    /// resets; none when no window was heard.
    fn limits(&self) -> Option<serde_json::Value> {
        None
    }
    /// The tier of the sink that sends this machine's events to the receiver
    /// at `origin` (`https://host[:port]`); none without one. The hello says
    /// it, so the page can say when the machine hides what its agents ask.
    fn sink_tier(&self, origin: &str) -> Option<u8>;
    /// The sessions whose turn runs now (their hooks said so and they have
    /// not ended), with what their adapter remembered of each: the hello
    /// lists those whose harness's server can stop them.
    fn running(&self) -> Vec<(SessionRef, Memo)>;
}

/// Where a run's growing reply goes as `turn.progress` events.
pub trait ProgressEvents: Send + Sync {
    /// Appends `event` to `harness`'s session `session` (nothing for a
    /// session its hooks did not start); why not, when it could not.
    fn append(
        &self,
        harness: &str,
        session: &str,
        event: protocol::EventData,
    ) -> Result<(), String>;
}

/// What the outbox's record of a session says, as control reads it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionFacts {
    /// Its folder as the record keeps it (home as `~`).
    pub cwd: Option<String>,
    /// The attentions open now, by id.
    pub open: Vec<String>,
    /// A turn of it is running.
    pub running: bool,
    /// What its adapter remembered of it (its server, its permission mode).
    pub memo: Memo,
}

/// Control's settings (`config.json`'s `control_*`, `acp_*` and
/// `local_approvals`, and the machine's name), as the daemon holds them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    /// The name the hello and a pairing say this machine is.
    pub machine: String,
    /// The folders a command may act in (absolute); a session whose folder
    /// is not inside one of them is refused `folder`.
    pub control_folders: Vec<String>,
    /// The mode the hello reports (`safe`, `auto`, `inherit`).
    pub control_mode: Option<String>,
    /// The person answers permission prompts at this machine too.
    pub local_approvals: bool,
    /// A start inside a git repository runs in a new worktree of its own
    /// (`worktrees`).
    pub control_worktrees: bool,
    /// Sessions a receiver may have started running at once (2), and started
    /// in any hour (10); beyond either, `start_limit`.
    pub control_starts_running: Option<u32>,
    pub control_starts_hourly: Option<u32>,
    /// Headless processes at once (3); more wait their turn.
    pub control_runs_at_once: Option<u32>,
    /// The longest a headless run may take, minutes (30).
    pub control_run_minutes: Option<u32>,
    /// How long an idle ACP agent is kept (10 minutes), and how long it may
    /// take to answer what is not a turn (120 s).
    pub acp_idle_minutes: Option<u32>,
    pub acp_answer_seconds: Option<u32>,
}

/// Control's caps as the daemon applies them (the settings', or the defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunCaps {
    pub starts_running: usize,
    pub starts_hourly: usize,
    pub runs_at_once: usize,
    pub run_minutes: u64,
}

impl Settings {
    pub fn run_caps(&self) -> RunCaps {
        RunCaps {
            starts_running: self.control_starts_running.unwrap_or(2) as usize,
            starts_hourly: self.control_starts_hourly.unwrap_or(10) as usize,
            runs_at_once: self.control_runs_at_once.unwrap_or(3).max(1) as usize,
            run_minutes: u64::from(self.control_run_minutes.unwrap_or(30).max(1)),
        }
    }

    /// How long an idle ACP agent is kept, and how long it may take to
    /// answer what is not a turn.
    pub fn acp_bounds(&self) -> (Duration, Duration) {
        let minutes = u64::from(self.acp_idle_minutes.unwrap_or(10).max(1));
        let seconds = u64::from(self.acp_answer_seconds.unwrap_or(120).max(1));
        (
            Duration::from_secs(minutes * 60),
            Duration::from_secs(seconds),
        )
    }
}
