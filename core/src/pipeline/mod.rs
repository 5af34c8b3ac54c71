//! Layer 2, pipeline: from a job in the spool to an envelope in the outbox.
//!
//! `ingest` takes jobs in arrival order and maps each with its harness's adapter;
//! `edited` adds the files an edit tool changed (`files.changed`);
//! `append` runs the session rules over a call's events and appends them;
//! `names` says which session a call goes under (a control start's name for
//! a session the daemon started over ACP), and `subagents` which session a
//! subagent whose hooks fire under its own id works for; `session` holds the protocol's
//! session rules and what is remembered of a session; `reading` reads facts
//! and transcripts around a call; `holds` waits for a turn's words to reach
//! a transcript; `local` adds the daemon's own
//! events to a session (control's `turn.progress`); `outbox` is the SQLite store that
//! assigns `session.seq`; `scrub` runs `secrets@1` over all it keeps; `privacy`
//! is the per-tier filter readers apply; `titles` says when a session's
//! harness's service is asked for its name, and how that name is applied (the
//! asking itself is handed in from above); `title_worker` runs those asks
//! away from ingest, holding only the asked session.
//!
//! Uses layer 1 (`state`) and the crates below; never the services or the
//! daemon above it.

pub mod append;
pub mod edited;
pub mod holds;
pub mod ingest;
pub mod local;
pub mod names;
pub mod outbox;
pub mod privacy;
pub mod reading;
pub mod scrub;
pub mod session;
pub mod subagents;
pub mod title_worker;
pub mod titles;
