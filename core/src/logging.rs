//! Layer 1, logging: the daemon's log through `tracing`, to stderr, or to
//! `daemon.log` in the state dir for a drain worker that has no terminal.
//!
//! Levels come from `SESSIONPIPE_LOG`, else `RUST_LOG` (the usual `info`,
//! `sessionpipe_core=debug` syntax), else the process's default: `info` for the
//! daemon (the CLI's `daemon`, the app's, a drain worker), `warn` for every
//! other command, which says what it did in its own words and leaves the
//! `info` lines (a pool account added, titles turned on) to the daemon's log.
//! A log file past 1 MiB is started over, the previous one kept as
//! `daemon.log.1`. Messages name jobs, files and
//! reasons; they never carry a payload, a token or a secret: that rule is every
//! caller's, and this module writes only what it is given.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

/// A log file past this size is started over (the previous one kept as `.1`).
const MAX_LOG_BYTES: u64 = 1 << 20;

static INIT: Once = Once::new();
static TARGET: Mutex<Option<LogFile>> = Mutex::new(None);

/// The level a daemon logs at unless told otherwise.
pub const DAEMON_LEVEL: &str = "info";
/// The level a command a person types logs at unless told otherwise.
pub const COMMAND_LEVEL: &str = "warn";

/// Installs the daemon's logger (`DAEMON_LEVEL` by default; once: when the
/// process already has one, nothing changes). Lines go to stderr until
/// `to_file` is called.
pub fn init() {
    init_at(DAEMON_LEVEL);
}

/// Installs the process's logger with `default` as its level where neither
/// `SESSIONPIPE_LOG` nor `RUST_LOG` names one (once; later calls change
/// nothing).
pub fn init_at(default: &str) {
    INIT.call_once(|| {
        let filter = std::env::var("SESSIONPIPE_LOG")
            .ok()
            .filter(|v| !v.is_empty())
            .or_else(|| std::env::var("RUST_LOG").ok().filter(|v| !v.is_empty()))
            .and_then(|v| EnvFilter::try_new(v).ok())
            .unwrap_or_else(|| EnvFilter::new(default));
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(Target)
            .with_ansi(false)
            .with_target(false)
            .try_init();
    });
}

/// Sends the log to `path` from now on, rotating it first when it is too big.
pub fn to_file(path: &Path) {
    init();
    if let Some(file) = LogFile::open(path) {
        *TARGET.lock().unwrap_or_else(|p| p.into_inner()) = Some(file);
    }
}

struct LogFile {
    path: PathBuf,
    file: File,
    len: u64,
}

impl LogFile {
    fn open(path: &Path) -> Option<LogFile> {
        if std::fs::metadata(path).is_ok_and(|m| m.len() > MAX_LOG_BYTES) {
            let _ = std::fs::rename(path, path.with_extension("log.1"));
        }
        let mut options = OpenOptions::new();
        options.create(true).append(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let file = options.open(path).ok()?;
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        Some(LogFile {
            path: path.to_path_buf(),
            file,
            len,
        })
    }
}

/// Where log lines go now: the file when one is set, else stderr.
struct Target;

/// One line's writer: holds the target while tracing writes the line.
struct Line;

impl Write for Line {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut target = TARGET.lock().unwrap_or_else(|p| p.into_inner());
        match target.as_mut() {
            Some(f) => {
                if f.len > MAX_LOG_BYTES
                    && let Some(fresh) = LogFile::open(&f.path)
                {
                    *f = fresh;
                }
                f.file.write_all(buf)?;
                f.len += buf.len() as u64;
                Ok(buf.len())
            }
            None => io::stderr().write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Target {
    type Writer = Line;

    fn make_writer(&'a self) -> Line {
        Line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_past_its_bound_is_started_over_and_the_old_one_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("daemon.log");
        std::fs::write(&path, vec![b'x'; MAX_LOG_BYTES as usize + 1]).unwrap();
        let f = LogFile::open(&path).unwrap();
        assert_eq!(f.len, 0);
        assert!(dir.path().join("daemon.log.1").exists());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
