//! What an adapter's backfill finds: one past session as the harness's own
//! files tell it, for `sessionpipe backfill` (the daemon appends it as a
//! `session.backfill` at seq 0).

use protocol::SessionBlock;

/// What a harness's files say of one past session.
#[derive(Clone, Debug, Default)]
pub struct Backfilled {
    pub session_id: String,
    pub block: SessionBlock,
    pub version: Option<String>,
    pub started_ms: i64,
    pub last_ms: i64,
    pub turns: Option<u64>,
}
