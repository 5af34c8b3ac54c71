//! The sessionpipe protocol v1 as Rust types: the envelope, the session block, the
//! typed data of every event type, which tier carries which field, and validation.
//!
//! This module owns the wire shapes and their rules. It does no I/O and knows no
//! harness: adapters build `EventData`, the session stamper wraps it in an
//! `Envelope`, the outbox stores envelopes as JSON.

mod envelope;
mod events;
mod tiers;
mod validate;

#[cfg(test)]
pub(crate) use envelope::test_envelope;
pub use envelope::{Envelope, HarnessRef, PROTOCOL_VERSION, Privacy, SessionBlock, TitleSource};
pub use events::*;
pub use tiers::{KNOWN_TYPES, field_tier, type_tier};
pub use validate::{
    ValidationError, valid_harness_name, valid_session_id, valid_tool_name, valid_type, valid_ulid,
    validate_envelope,
};
