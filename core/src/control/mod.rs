//! Layer 3, control: the channel back (PROTOCOL-NOTES §6, CONTROL.md). A paired
//! device signs commands, a receiver carries them, and this machine alone
//! verifies and delivers them.
//!
//! - `pair`: pairing from this machine (the CLI and the API call it), `off`.
//! - `wire`: the HTTP calls of the machine's side.
//! - `store`: what control keeps in the outbox file's control tables.
//! - `run`: the daemon's part: one long-poll per receiver, verification (the
//!   `sessionpipe-verifier` crate, no I/O of its own), the machine's checks,
//!   acks.
//! - `hub`: where verified messages meet the hooks and waiters of their
//!   session; `socket`: the local socket those ask on.
//!
//! Uses layers 1 and 2 and `sinks` (discovery, a sink's token); nothing above.
//! Never runs anything on a bearer token's word, and never answers `allow` for
//! a prompt it received no verified answer for.

pub mod hub;
pub mod pair;
pub mod run;
pub mod socket;
pub mod store;
pub mod wire;
