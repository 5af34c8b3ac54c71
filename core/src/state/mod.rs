//! Layer 1, state: the machine's own files of sessionpipe beside the outbox.
//! The person's settings (`config`) and the settings in force as they change
//! (`live_config`), secrets in the keychain or a 0600 file
//! (`secrets`), the daemon lock (`lock`), where its UI answers (`ui_file`) and
//! when hook calls were lost (`losses`), the machine name as the config changes
//! (`machine_name`), how far a long work is (`progress`); `file` reads and
//! writes them, `socket_file` places the daemon's sockets, private from their
//! first moment.
//!
//! Uses only the crates below the core (spool, protocol, adapters for the
//! harness names); never a module of this crate above it.

pub mod config;
pub mod file;
pub mod live_config;
pub mod lock;
pub mod losses;
pub mod machine_name;
pub mod progress;
pub mod secrets;
#[cfg(unix)]
pub mod socket_file;
pub mod ui_file;
