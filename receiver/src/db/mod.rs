//! Layer 1, db: the receiver's database: one SQLite file by default
//! (`DIR/receiver.db`, nothing to set up), or PostgreSQL for a team or many
//! machines (`--database postgres://...`), with one schema and one list of
//! migrations for both (`schema`).
//!
//! This module owns the connection to either database, the typed arguments and
//! rows the stores speak in, transactions, and the cross-process wake-up
//! (PostgreSQL's LISTEN/NOTIFY; a single SQLite file has one process). It must
//! not know a table's meaning (the stores do) nor speak HTTP.
//!
//! Statements are written once, in the SQL both accept (`$1`-numbered
//! parameters, `ON CONFLICT`, `RETURNING`, integers for flags and times); the
//! SQLite side rewrites `$n` to its own `?n`. SQLite runs on threads of its
//! own (a writer and a few readers, never an async worker), PostgreSQL
//! through a sqlx pool. A transaction is a body handed to `transaction`:
//! on SQLite it runs whole on the writer thread (one hand-over per
//! transaction, not one per statement), on PostgreSQL on the caller's task.

mod database;
mod open;
mod postgres;
mod schema;
mod sqlite;
pub(crate) mod values;

pub use database::{Db, Dialect, Location, Tx};
pub use postgres::Wake;
pub(crate) use values::args;
pub use values::{DbError, Row};
