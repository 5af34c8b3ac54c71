//! The account pool (ADAPTERS.md, Claude Code row, *Pool*): opt-in, and
//! nothing of it runs until the person turns it on at the machine.
//!
//! This crate owns the pool's own logic: where the vendor's endpoints are
//! (`endpoints`), reading Claude Code's own sign-in to copy or to bear once
//! (`claude_login`), the accounts and which session is pinned to which
//! (`accounts`), signing an account in and refreshing it (`oauth`), the idle
//! accounts' usage (`usage`), the rate-limit windows read off an answer
//! (`limits`), the `metadata.user_id` rewrite (`user_id`), the loopback
//! proxy itself (`proxy`) and the answer's body on its way back (`relay`).
//!
//! It must not know the daemon, the outbox or any file of ours: where
//! credentials are kept is handed in (`accounts::Vault`), and what becomes of
//! the windows a session's answer carried is the caller's (`proxy::Observer`).
//! It never keeps or logs a request's or an answer's body, and no credential
//! reaches a log, an error or a `Debug` line.

pub mod accounts;
pub mod claude_login;
pub mod endpoints;
pub mod limits;
pub mod oauth;
pub mod proxy;
pub mod relay;
pub mod usage;
pub mod user_id;
