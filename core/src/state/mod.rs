//! Layer 1, state: the machine's own files of sessionpipe beside the outbox.
//! The person's settings (`config`), secrets in the keychain or a 0600 file
//! (`secrets`), and the daemon lock (`lock`); `file` reads and writes them.
//!
//! Uses only the crates below the core (spool, protocol); never a module of
//! this crate above it.

pub mod config;
pub mod file;
pub mod lock;
pub mod secrets;
