//! The two hook calls that may print for control (CONTROL.md §9): a Stop may
//! hand the model a verified message, a permission prompt may wait for a
//! verified answer. Which (harness, event) pairs those are is this table; the
//! bytes printed are the daemon's (made by the harness's adapter).
//!
//! Only where control is on (the state dir's `control.on` marker, present while
//! a receiver is paired or local approvals are on): otherwise the cost is one
//! failed `openat`, and the hook neither connects, waits nor prints. It parses
//! nothing: one request line naming the job it wrote, then whatever the daemon
//! answers until the stream ends. Any failure is silence.

use spool::StatePaths;
#[cfg(unix)]
use std::io::{Read, Write};
#[cfg(unix)]
use std::time::Duration;

/// What a hook call asks the daemon for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ask {
    Turn,
    Permission,
}

// Only the Unix socket's request uses these: Windows has no control socket.
#[cfg(unix)]
impl Ask {
    fn wire(self) -> &'static str {
        match self {
            Ask::Turn => "turn",
            Ask::Permission => "permission",
        }
    }

    /// How long the hook waits for the daemon's answer. A Stop's is at once
    /// (the daemon answers when its job is in); a permission prompt's is the
    /// daemon's 120 s window plus slack, within the installed hook timeout.
    fn patience(self) -> Duration {
        match self {
            Ask::Turn => Duration::from_secs(6),
            Ask::Permission => Duration::from_secs(128),
        }
    }
}

/// The hook calls that ask, per harness (the adapters' Control rows).
pub fn asks(harness: &str, event: &str) -> Option<Ask> {
    match (harness, event) {
        ("claude-code" | "codex" | "droid", "Stop") => Some(Ask::Turn),
        ("cursor", "stop") => Some(Ask::Turn),
        ("copilot-cli", "agentStop") => Some(Ask::Turn),
        ("claude-code" | "codex", "PermissionRequest") => Some(Ask::Permission),
        _ => None,
    }
}

/// The answer's bytes, when control is on and the daemon gives one.
pub fn ask_daemon(paths: &StatePaths, harness: &str, job: &str, ask: Ask) -> Option<Vec<u8>> {
    if !is_there(&paths.control_marker()) {
        return None;
    }
    ask_socket(&paths.control_socket(), harness, job, ask)
}

/// Whether the control marker is there, in one system call: on Linux an
/// `openat` with `O_PATH` (it opens no file for reading, so it never blocks,
/// whatever the marker is). `Path::exists` was a `statx` and, when that failed
/// (control off: the common case), std's second `statx` probing whether the
/// call exists at all.
fn is_there(marker: &std::path::Path) -> bool {
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // <fcntl.h> on these architectures.
        const O_PATH: i32 = 0o10000000;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(O_PATH)
            .open(marker)
            .is_ok()
    }
    #[cfg(not(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    )))]
    {
        marker.exists()
    }
}

#[cfg(unix)]
fn ask_socket(socket: &std::path::Path, harness: &str, job: &str, ask: Ask) -> Option<Vec<u8>> {
    let mut stream = std::os::unix::net::UnixStream::connect(socket).ok()?;
    stream.set_read_timeout(Some(ask.patience())).ok()?;
    stream
        .set_write_timeout(Some(Duration::from_secs(2)))
        .ok()?;
    // Job and harness names are sessionpipe's own (ASCII, no quotes).
    let line = format!(
        "{{\"op\":\"hook\",\"job\":\"{job}\",\"harness\":\"{harness}\",\"ask\":\"{}\"}}\n",
        ask.wire()
    );
    stream.write_all(line.as_bytes()).ok()?;
    let mut out = Vec::new();
    stream.take(1 << 20).read_to_end(&mut out).ok()?;
    (!out.is_empty()).then_some(out)
}

#[cfg(not(unix))]
fn ask_socket(_: &std::path::Path, _: &str, _: &str, _: Ask) -> Option<Vec<u8>> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_documented_answer_hooks_ask() {
        assert_eq!(asks("claude-code", "Stop"), Some(Ask::Turn));
        assert_eq!(
            asks("claude-code", "PermissionRequest"),
            Some(Ask::Permission)
        );
        assert_eq!(asks("codex", "PermissionRequest"), Some(Ask::Permission));
        assert_eq!(asks("codex", "Stop"), Some(Ask::Turn));
        assert_eq!(asks("cursor", "stop"), Some(Ask::Turn));
        assert_eq!(asks("copilot-cli", "agentStop"), Some(Ask::Turn));
        assert_eq!(asks("droid", "Stop"), Some(Ask::Turn));
        for (h, e) in [
            ("claude-code", "PreToolUse"),
            ("gemini-cli", "Notification"),
            ("devin", "PermissionRequest"),
            ("cursor", "preToolUse"),
            ("copilot-cli", "permissionRequest"),
            ("copilot-cli", "subagentStop"),
            ("droid", "SubagentStop"),
            ("droid", "PreToolUse"),
        ] {
            assert_eq!(asks(h, e), None, "{h} {e}");
        }
    }

    #[test]
    fn without_the_marker_nothing_is_asked() {
        let dir = std::env::temp_dir().join(format!("sp-hook-control-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let paths = StatePaths::new(&dir);
        assert!(!is_there(&paths.control_marker()));
        assert_eq!(ask_daemon(&paths, "claude-code", "x.job", Ask::Turn), None);
        std::fs::write(paths.control_marker(), b"").unwrap();
        assert!(is_there(&paths.control_marker()));
        // A marker only its owner can read is there all the same.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let unreadable = std::fs::Permissions::from_mode(0o000);
            std::fs::set_permissions(paths.control_marker(), unreadable).unwrap();
            assert!(is_there(&paths.control_marker()));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
