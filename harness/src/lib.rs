//! `sessionpipe_harness`: the kit every adapter is written against.
//!
//! An adapter (crate `sessionpipe-adapters`, one folder per harness) implements
//! `adapter::Adapter` with what this crate gives it: reading a hook payload
//! (`payload`), the declarative table of the Claude-shaped harnesses
//! (`claude_shaped`), turning a transcript into turns (`transcript`), the shape of
//! a past session (`backfill`), the facts every harness shares (`facts`), and the
//! installer's mechanics that write hook entries into a config file byte for byte
//! (`install`). The job an adapter maps is `spool::Job`, re-exported here.
//!
//! It holds no registry of harnesses and never reaches the pipeline (outbox,
//! sessions, sinks): the crate boundary keeps adapters pure mappings.

pub mod adapter;
pub mod backfill;
pub mod claude_shaped;
pub mod digest;
pub mod facts;
pub mod install;
pub mod payload;
pub mod transcript;

pub use adapter::{Adapter, MapError, Mapped, Mapping, Memo, SessionFiles};
pub use spool::Job;
