//! Layer 4, events: the events side of the binding (PROTOCOL-NOTES §5,
//! HTTP.md §2): `POST /v1/events` with every answer of the binding's error
//! table, its settings, its counters, and its test doors (with the
//! `test-doors` feature only).
//!
//! This module owns the side's state (`Events`) and its router. The steps of
//! a batch are `batch`'s; what is kept is `store`'s. It never logs a body, a
//! token, a secret or an `authorization` header.

mod batch;
#[cfg(feature = "test-doors")]
pub mod doors;
#[cfg(feature = "test-doors")]
mod fault;
mod state;

pub use batch::router;
#[cfg(feature = "test-doors")]
pub use fault::Fault;
pub use state::{EVENTS_PATH, Events, Settings, Stats};
