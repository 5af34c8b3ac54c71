//! The receiver over real HTTP: every answer of the binding (`binding`), and the
//! binary's store across restarts (`persistence`). One test binary.

mod binding;
mod common;
mod persistence;
