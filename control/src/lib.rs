//! `sessionpipe_control`: the channel back (PROTOCOL-NOTES §6, CONTROL.md). A
//! paired device signs commands, a receiver carries them, and this machine
//! alone verifies and delivers them. The daemon runs it; the core's `control`
//! module is the daemon's side of it (pairing, and what control asks of the
//! daemon: `Host`).
//!
//! - `wire`: the HTTP calls of the machine's side.
//! - `store`: what control keeps in its own tables of the outbox file, their
//!   migration steps (on `sessionpipe-db`), and the one question the
//!   pipeline asks of them (`acp_name`).
//! - `run`: the daemon's part: one long-poll per receiver, verification (the
//!   `sessionpipe-verifier` crate, no I/O of its own), the machine's checks,
//!   acks.
//! - `admit`: verification and the machine's own checks, in one commit.
//! - `hub`: where verified messages meet the hooks and waiters of their
//!   session; `socket`: the local socket those ask on; `replies`: the reply
//!   of a prompt handed over in place, from the session's transcript.
//! - `api`: the rung of a harness's own server (a prompt into a live
//!   session, a cancel); `local`: what the desktop window asks (which
//!   sessions a Stop ends, and a Stop, by the same rungs).
//! - `ladder`: the rungs past the hub (resume, fork, start), `runs` the
//!   headless processes they run, `files` a start's attachments.
//! - `worktrees`: a start's own git worktree (`control worktrees on`), the
//!   record of those made, and which of them `prune` may remove.
//! - `acp`: the rung of agents driven over the Agent Client Protocol (a
//!   start, its session's next prompts, a cancel), on the `sessionpipe-acp`
//!   client; `held` the agents it holds.
//! - `progress`: a run's growing reply as `progress` acks and
//!   `turn.progress` events.
//! - `ask`: one session asks another on this machine; `channel`: Claude
//!   Code's channel, an MCP server on stdio fed by the control socket.
//! - `machine`: the handle every part shares, and how acks leave; `ack`
//!   what an ack says and its one serializer (every bound applied);
//!   `queued` a verified message as it waits, and the form it is kept in.
//! - `host`: what control needs of the daemon, handed in (its settings in
//!   force, the machine token, what the outbox knows of a session, the
//!   pool's standing, where `turn.progress` events go); `runtime` the
//!   blocking pool its SQLite and keychain steps run on.
//!
//! It must not know the daemon, the pipeline, the sinks or any file of the
//! daemon's but its own tables and the state dir's sockets and markers
//! (`spool`): the compiler holds it below the daemon and above the pipeline
//! (what it needs of them comes through `host`). Never runs anything on a
//! bearer token's word, and never answers `allow` for a prompt it received no
//! verified answer for.

pub mod ack;
pub mod acp;
mod admit;
mod api;
pub mod ask;
pub mod channel;
pub mod files;
mod held;
pub mod host;
pub mod hub;
mod ladder;
pub mod local;
pub mod machine;
mod progress;
pub mod queued;
mod replies;
pub mod run;
pub mod runs;
pub mod runtime;
pub mod socket;
pub mod store;
pub mod wire;
pub mod worktrees;
