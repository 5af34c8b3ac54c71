//! `sessionpipe_core`: everything of sessionpipe except the hook path and the window.
//!
//! The daemon (`daemon`) takes job files from the spool (`spool`, `job`), turns them
//! into protocol events with one adapter per harness (`adapters`), stamps them with
//! the session's state (`session`) and appends them to the SQLite outbox (`outbox`).
//! The installers (`install`) write and remove our hook entries in harness configs.
//! This crate knows nothing of windows, trays or notifications: the app is a shell
//! over it.

pub mod adapters;
pub mod api;
pub mod backfill;
pub mod cli;
pub mod config;
pub mod conformance;
pub mod daemon;
pub mod facts;
pub mod ingest;
pub mod install;
pub mod job;
pub mod log;
pub mod notify;
pub mod outbox;
pub mod paths;
pub mod privacy;
pub mod protocol;
pub mod reading;
pub mod secrets;
pub mod session;
pub mod sinks;
pub mod spool;
pub mod tail;
pub mod time;
pub mod transcript;
pub mod worker;
