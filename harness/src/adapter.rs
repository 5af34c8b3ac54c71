//! What an adapter is: the trait every harness implements, and what one hook
//! call becomes.
//!
//! An adapter turns one hook call (a `Job`) into protocol events and says where its
//! harness's hooks are installed. It is pure: no I/O while mapping (facts and
//! transcripts from the harness's files are read by the daemon after the hook
//! exited, through `facts` and `transcript`), no seq, no ids, no clock but the
//! job's. The registry of adapters is the adapters crate's, not this one's.

use crate::install::HookInstall;
pub use crate::payload::MapError;
use protocol::{EventData, SessionBlock};
use serde_json::{Map, Value};
use spool::Job;

/// Per-session scratch an adapter keeps between hook calls (stored in the outbox
/// with the session, so it survives restarts).
pub type Memo = Map<String, Value>;

pub trait Adapter: Sync {
    /// The protocol's `harness.name`.
    fn name(&self) -> &'static str;
    /// Turns one hook call into events of one session, from the call alone.
    fn map(&self, job: &Job) -> Result<Mapped, MapError>;
    /// Adjusts a call's events with what the adapter remembers of the session
    /// (a compaction reported twice, a fallback that only counts when hooks are
    /// off). Runs after `map`, with the session's memo; most adapters need none.
    fn remember(&self, _job: &Job, _events: &mut Vec<EventData>, _memo: &mut Memo) {}
    /// True when the harness has a hook of its own for the files it changed
    /// (Cursor's `afterFileEdit`, Kiro's `PostFileSave`); otherwise the
    /// pipeline reads them from the edit tools' calls (`protocol::changes`).
    fn reports_file_changes(&self) -> bool {
        false
    }
    /// How this harness's hooks are written, when sessionpipe installs them.
    fn hooks(&self) -> Option<&dyn HookInstall> {
        None
    }
    /// Facts from the harness's own files for this call's session (account,
    /// registry title, link), read by the daemon after the hook exited. Only
    /// called on calls that are not tool events; cheap and never failing.
    fn facts(&self, _job: &Job, _files: &SessionFiles) -> SessionBlock {
        SessionBlock::default()
    }
    /// Where the call's session lives on disk and what it asks of the transcript
    /// (read from the same payload as `map`, only when the daemon needs it).
    fn files(&self, _job: &Job) -> SessionFiles {
        SessionFiles::default()
    }
    /// A subagent's own transcript this call names (Claude Code's
    /// SubagentStop `agent_transcript_path`): its model responses are read
    /// for the usage table, nothing else of it. `None` for most calls.
    fn subagent_transcript(&self, _job: &Job) -> Option<std::path::PathBuf> {
        None
    }
    /// The answers its hooks take from control (a Stop's block, a permission
    /// decision); `None` for a harness with no answer channel.
    fn control(&self) -> Option<&dyn crate::control::ControlHooks> {
        None
    }
    /// The harness's own local server, for control's `api` rung (a message
    /// into a live session, a cancel); `None` for a harness that has none.
    fn api(&self) -> Option<&dyn crate::api::SessionApi> {
        None
    }
    /// How control runs this harness without a terminal (a start, a
    /// resume, a fork); `None` for a harness it cannot drive headless.
    fn headless(&self) -> Option<&dyn crate::headless::Headless> {
        None
    }
    /// How this harness's transcript is read (tier 2).
    fn transcript(&self) -> Option<&dyn crate::transcript::TranscriptSource> {
        None
    }
    /// The sessions the harness's files hold that were active since `since_ms`
    /// (epoch ms), for `sessionpipe backfill`.
    fn backfill(
        &self,
        _host: &crate::install::Host,
        _since_ms: i64,
    ) -> Vec<crate::backfill::Backfilled> {
        Vec::new()
    }
    /// `backfill`, with `each` handed every session as soon as its files are
    /// read, before the rest are: it may take what it keeps at once (the
    /// session's usage), so a caller never holds every session's tokens
    /// together (a year's are tens of MB). A session read twice (one
    /// harness's copies of it) is handed over each time, though the list
    /// keeps one. By default, `backfill`'s list, handed over in its order.
    fn backfill_each(
        &self,
        host: &crate::install::Host,
        since_ms: i64,
        each: &mut dyn FnMut(&mut crate::backfill::Backfilled),
    ) -> Vec<crate::backfill::Backfilled> {
        let mut found = self.backfill(host, since_ms);
        found.iter_mut().for_each(each);
        found
    }
}

/// What one hook call becomes.
#[derive(Debug)]
pub enum Mapped {
    /// Events of one session, in order (possibly none).
    Events(Box<Mapping>),
    /// A call that reports nothing, on purpose; the reason is for logs and tests.
    Ignored(String),
}

#[derive(Debug, Default)]
pub struct Mapping {
    pub session_id: String,
    /// What the call says of the session (id and seq are filled in later).
    pub block: SessionBlock,
    pub harness_version: Option<String>,
    pub events: Vec<EventData>,
    /// A subagent this call started for the session, by the id the subagent's
    /// own hooks fire under when that is not the session's (a Droid subagent is
    /// a session of its own; a Copilot CLI subagent's hooks carry its own id):
    /// the daemon puts that id's later calls under this session, as a
    /// subagent's (`crate::subagent::fold`).
    pub subagent: Option<String>,
}

/// Where a call's session lives on disk, and what the call asks of its transcript.
#[derive(Clone, Debug, Default)]
pub struct SessionFiles {
    /// The folder the session runs in, absolute (for facts such as the repo).
    pub folder: Option<std::path::PathBuf>,
    /// The session's transcript, when the call names it.
    pub transcript: Option<std::path::PathBuf>,
    /// What this call asks of the transcript (read only where tier 2 is wanted).
    pub read: Option<crate::transcript::ReadPlan>,
}
