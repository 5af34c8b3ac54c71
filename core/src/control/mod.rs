//! Layer 3, control: the daemon's side of control (`sessionpipe_control`, the
//! channel back: PROTOCOL-NOTES §6, CONTROL.md). The crate verifies and
//! delivers; this module is what only the daemon and the command can do for
//! it:
//!
//! - `pair`: pairing from this machine (the CLI and the API call it), `off`:
//!   a sink's token, the settings' folders and mode, the secrets store.
//! - `host`: what control asks of the daemon (`sessionpipe_control::host::Host`:
//!   the settings in force, a machine token, a session's record, the
//!   harnesses seen, the pool's standing, `turn.progress` events), answered
//!   from the state, the pipeline and the pool; and what the pipeline asks of
//!   control (`AcpNames`).
//!
//! The crate's modules are named here as the rest of the core (and the app)
//! names them. Uses layers 1 and 2, `sinks` and `pool`; nothing above.

pub use sessionpipe_control::{
    ack, acp, ask, channel, files, hub, local, machine, queued, run, runs, socket, store, wire,
    worktrees,
};

pub mod host;
pub mod pair;
