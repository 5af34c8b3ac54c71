//! The receiver over real HTTP: every answer of the binding and HTTPS
//! (`binding`), HTTPS with a certificate got over ACME from pebble (`acme`), the store across restarts on SQLite and PostgreSQL
//! (`persistence`), the control side: pairing and who may call what
//! (`control_pairing`), a machine's queue (`control_queue`); Web Push against
//! a loopback push service (`push`); the systemd unit (`service_unit`); a
//! database held by another connection stalling only the writes
//! (`database_held`); the page's guard on every state-changing call
//! (`page_guard`); the build that ships, without test doors (`shipped`); the
//! start-up log of a page that cannot be shown (`page_missing`); the book's
//! reference of the binary's flags (`reference_docs`); two processes on one
//! PostgreSQL under load while one is killed and the database restarted
//! (`load_fault`). One test binary.

// Unix only: pebble is a Linux package here, and the test reads the kept
// files' mode bits.
#[cfg(unix)]
mod acme;
mod binding;
mod common;
mod control_pairing;
mod control_queue;
mod database_held;
mod load_fault;
mod page_guard;
mod page_missing;
mod persistence;
mod push;
mod reference_docs;
mod service_unit;
mod shipped;
