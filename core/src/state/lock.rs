//! The per-user daemon lock (`daemon.lock`): one daemon or drain worker holds it
//! exclusively and writes its pid and mode into it; anyone may ask who holds it.
//!
//! Owns taking the lock and reading its holder. Must not decide what a daemon
//! does once it holds it (`daemon` does), nor wait for anything but the lock.

use spool::StatePaths;
use std::fs::{File, TryLockError};
use std::io::{Read, Seek, Write};

/// What the lock's holder runs as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `sessionpipe daemon`, or the app's embedded daemon: runs until stopped.
    Daemon,
    /// A drain worker a hook started: takes the spool and exits once idle.
    Drain,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Daemon => "daemon",
            Mode::Drain => "drain",
        }
    }

    fn parse(word: &str) -> Mode {
        match word {
            "drain" => Mode::Drain,
            _ => Mode::Daemon,
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who holds the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Holder {
    pub pid: u32,
    pub mode: Mode,
    /// It runs stdout sinks: its stdout goes to a terminal, a pipe or a file
    /// (not /dev/null, a journal or nowhere).
    pub stdout_sinks: bool,
}

/// Who holds the daemon lock, if anyone.
pub fn holder(paths: &StatePaths) -> Option<Holder> {
    let mut file = File::open(paths.daemon_lock()).ok()?;
    match file.try_lock_shared() {
        Ok(()) => {
            let _ = file.unlock();
            None
        }
        Err(_) => {
            let mut text = String::new();
            file.read_to_string(&mut text).ok()?;
            let mut parts = text.split_whitespace();
            let pid = parts.next()?.parse().ok()?;
            let mode = Mode::parse(parts.next().unwrap_or("daemon"));
            let stdout_sinks = parts.next() == Some("stdout");
            Some(Holder {
                pid,
                mode,
                stdout_sinks,
            })
        }
    }
}

/// The lock, held while this value lives.
pub struct Lock {
    _file: File,
}

/// One attempt at the lock: `Ok(None)` when someone else holds it.
/// `stdout_sinks`: the holder says it runs stdout sinks (`Holder`).
pub fn try_acquire(
    paths: &StatePaths,
    mode: Mode,
    stdout_sinks: bool,
) -> std::io::Result<Option<Lock>> {
    let mut file = spool::files::open_lock_file(&paths.daemon_lock())?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return Ok(None),
        Err(TryLockError::Error(e)) => return Err(e),
    }
    let _ = file.set_len(0);
    let _ = file.rewind();
    let stdout = if stdout_sinks { " stdout" } else { "" };
    let _ = writeln!(file, "{} {mode}{stdout}", std::process::id());
    let _ = file.flush();
    Ok(Some(Lock { _file: file }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time_and_it_says_who() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        assert_eq!(holder(&paths), None);
        let lock = try_acquire(&paths, Mode::Drain, false).unwrap().unwrap();
        assert!(try_acquire(&paths, Mode::Daemon, true).unwrap().is_none());
        let h = holder(&paths).unwrap();
        assert_eq!((h.pid, h.mode), (std::process::id(), Mode::Drain));
        drop(lock);
        assert_eq!(holder(&paths), None);
    }
}
