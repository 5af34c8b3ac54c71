//! The receiver over real HTTP: every answer of the binding (`binding`), the
//! binary's store across restarts (`persistence`), and the control side: pairing
//! and who may call what (`control_pairing`), a machine's queue
//! (`control_queue`). One test binary.

mod binding;
mod common;
mod control_pairing;
mod control_queue;
mod persistence;
mod push;
