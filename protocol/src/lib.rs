//! `sessionpipe_protocol`: the sessionpipe protocol v1 as Rust types, shared by
//! the sender (the core) and the receiver.
//!
//! Owns the wire shapes and their rules: the envelope and the session block
//! (`envelope`), the typed data of every event type (`events`), which tier
//! carries which type and field (`tiers`: the one table both sides read), the
//! syntactic rules and a whole-envelope check (`validate`), the protocol's
//! time format (`time`), the permission levels a control `start` names
//! (`level`), and what an attention says to a person wherever it is shown
//! (`asked`: the notification's, the push's and the page's words), and what a
//! session changed, read from its events (`changes`: the edit tools' inputs,
//! the paths `files.changed` names, the per-turn review). No I/O,
//! no harness, no storage: adapters build `EventData`, the core wraps it in
//! an `Envelope`, a receiver checks what it got.

pub mod asked;
pub mod changes;
mod envelope;
mod events;
mod level;
mod tiers;
pub mod time;
mod validate;

#[cfg(any(test, feature = "test-util"))]
pub use envelope::test_envelope;
pub use envelope::{
    BLOCK_BOUNDS, Envelope, HarnessRef, PROTOCOL_VERSION, Privacy, SessionBlock, TitleSource,
};
pub use events::*;
pub use level::Level;
pub use tiers::{KNOWN_TYPES, field_tier, type_tier};
pub use validate::{
    HARNESS_DISPLAY_NAMES, ValidationError, fit_tool_name, harness_display_name,
    valid_harness_name, valid_machine_name, valid_session_id, valid_time, valid_tool_name,
    valid_type, valid_ulid, validate_envelope,
};
