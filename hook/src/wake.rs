//! Waking the daemon, or starting a drain worker when none answers.
//!
//! The wake is `spool::wake::poke`: one datagram, no connection, no reply, never
//! a wait.

use std::path::Path;
use std::process::{Command, Stdio};

pub fn wake_or_start_worker(state_dir: &Path) {
    let socket = spool::StatePaths::new(state_dir).wake_socket();
    if !spool::wake::poke(&socket) {
        start_worker(state_dir);
    }
}

/// Starts `sessionpipe daemon --drain` detached: its own process group, no stdio,
/// never waited for. It drains the spool and exits once idle.
fn start_worker(state_dir: &Path) {
    let bin = match std::env::var_os("SESSIONPIPE_BIN").filter(|v| !v.is_empty()) {
        Some(b) => b.into(),
        None => match std::env::current_exe() {
            Ok(exe) => exe.with_file_name(format!("sessionpipe{}", std::env::consts::EXE_SUFFIX)),
            Err(_) => return,
        },
    };
    let mut cmd = Command::new(bin);
    cmd.args(["daemon", "--drain"])
        .env("SESSIONPIPE_STATE_DIR", state_dir);
    spawn_detached(cmd);
}

/// Starts `cmd` in its own process group with no stdio, and never waits for it:
/// the hook exits at once and the child is re-parented, so a harness that kills
/// the hook's group (a timeout) or waits for its pipes never touches it.
pub fn spawn_detached(mut cmd: Command) {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let _ = cmd.spawn();
}
