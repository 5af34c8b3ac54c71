//! `sessionpipe_core`: the daemon and the `sessionpipe` command, over the crates
//! below it (`spool`, `protocol`, `redact`, `harness`, `adapters`).
//!
//! The modules form layers, and a module imports only from its own layer's
//! lower neighbours or below (each module's opening doc names its layer; the
//! `layering` test holds the code to those lines):
//!
//! 1. `state`, `logging`, `runtime`: the machine's own files (settings, secrets,
//!    the daemon lock), the log, and the async runtime.
//! 2. `pipeline`: spool → adapter → session rules → secrets@1 → outbox; the
//!    privacy filter readers apply.
//! 3. services over the pipeline: `installers`, `backfill`, `sinks`, `notify`,
//!    `tail`, `conformance`. Control, the ACP driver and the account pool join
//!    this layer, each in a folder of its own, run by the daemon.
//! 4. `daemon`: the daemon's life (lock, wake socket, runtime) and its local API.
//! 5. `cli`: the `sessionpipe` command.
//!
//! This crate knows nothing of windows, trays or native notifications: the app
//! is a shell over it.

// The crates below, for the app and the tests, which depend on this one alone.
pub use {adapters, harness, protocol, spool};

pub mod backfill;
pub mod cli;
pub mod conformance;
pub mod daemon;
pub mod installers;
pub mod logging;
pub mod notify;
pub mod pipeline;
pub mod runtime;
pub mod sinks;
pub mod state;
pub mod tail;
