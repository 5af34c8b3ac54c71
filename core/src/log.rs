//! The daemon's log: one line per message, to stderr, or to `daemon.log` in the
//! state dir for a worker that has no terminal. Messages name jobs, files and
//! reasons; they never carry a payload, a token or a secret.

use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

static FILE: Mutex<Option<std::fs::File>> = Mutex::new(None);
/// A log file past this size is started over (the previous one kept as `.1`).
const MAX_LOG_BYTES: u64 = 1 << 20;

/// Sends the log to `path` instead of stderr.
pub fn to_file(path: &Path) {
    if std::fs::metadata(path).is_ok_and(|m| m.len() > MAX_LOG_BYTES) {
        let _ = std::fs::rename(path, path.with_extension("log.1"));
    }
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    if let Ok(f) = options.open(path) {
        *FILE.lock().unwrap_or_else(|p| p.into_inner()) = Some(f);
    }
}

fn line(level: &str, msg: &str) {
    let text = format!(
        "{} {level} {msg}\n",
        crate::time::rfc3339_ms(crate::time::now_ms())
    );
    let mut guard = FILE.lock().unwrap_or_else(|p| p.into_inner());
    match guard.as_mut() {
        Some(f) => {
            let _ = f.write_all(text.as_bytes());
        }
        None => {
            let _ = std::io::stderr().write_all(text.as_bytes());
        }
    }
}

pub fn info(msg: &str) {
    line("info", msg);
}

pub fn warn(msg: &str) {
    line("warn", msg);
}
