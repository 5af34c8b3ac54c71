//! Layer 4, control: the control side of the binding (PROTOCOL-NOTES §6,
//! HTTP.md §3): pairing, the machine calls (hello, the per-machine long-poll,
//! acks, off, a `start`'s files), and, with the `test-doors` feature only,
//! the test doors that stand in for a person at a device (approve a pairing,
//! queue a signed message, put a file, read a machine's queue back).
//!
//! This module owns the control settings, the refusals and their statuses,
//! and the side's state (`Control`): the store, the tokens, and one wake-up
//! per machine (woken here, and from other receiver processes on the same
//! PostgreSQL through the database's notifications). It must not sign or
//! verify: the receiver carries keys, proofs and signed commands byte for
//! byte and the machine judges them. A bearer token never authorises a
//! command here either; it only says which machine is asking. Machine tokens
//! and poll keys are kept as SHA-256 hashes, compared in constant time, and
//! never logged.

#[cfg(feature = "test-doors")]
pub mod doors;
mod error;
mod http;
mod options;
mod owned;
pub mod shapes;
mod state;
pub mod store;

pub use http::router;
pub use options::{CONTROL_PATH, ControlOptions};
pub use state::{Control, file_sha256};
