//! What installing, removing and asking about the service came to, the same for
//! every manager, for the CLI to say.

use crate::state::lock::{self, Holder, Mode};
use spool::StatePaths;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Why the service could not be put in place or asked about.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The manager does not answer here (no user bus: a container, an SSH
    /// session without a user manager). The file is written all the same.
    #[error("{manager} is not reachable here ({why})")]
    Unreachable {
        manager: &'static str,
        why: String,
        /// What to do about it, in a sentence or two.
        advice: &'static str,
    },
    #[error("`{command}` failed: {why}")]
    Command { command: String, why: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot remove {path}: {source}")]
    Remove {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the service's file has no place: {0}")]
    NoPlace(&'static str),
    #[error("the sessionpipe binary's own path: {0}")]
    Program(String),
    #[error(transparent)]
    Unfit(#[from] super::render::Unfit),
}

/// What `install` would do: the file, its text, and the commands run then.
#[derive(Clone, Debug)]
pub struct Plan {
    pub path: PathBuf,
    pub text: String,
    pub then: Vec<String>,
}

/// What became of the daemon once the service was in place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Started {
    /// The service runs it (its pid, as the lock says).
    Running { pid: u32 },
    /// A daemon that is not the service's holds the lock: the service is
    /// enabled for the next login and not started, so as not to run a second.
    Other { pid: u32 },
    /// Started, but no daemon took the lock in time.
    NotSeen,
}

/// A service written and handed to its manager.
#[derive(Clone, Debug)]
pub struct Installed {
    /// Where its file is.
    pub unit: PathBuf,
    pub started: Started,
    /// The running service was started again (its file changed).
    pub restarted: bool,
    /// What the person should still know (lingering, logs).
    pub notes: Vec<String>,
}

/// The service taken away.
#[derive(Clone, Debug, Default)]
pub struct Removed {
    pub unit: PathBuf,
    /// There was a file (or a registered task) to remove.
    pub was_installed: bool,
    /// The manager stopped it (false: nothing ran, or the manager is not
    /// reachable).
    pub stopped: bool,
    /// The manager's own words when it could not be asked.
    pub unreachable: Option<String>,
}

/// The service as its manager and the lock see it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Status {
    pub manager: &'static str,
    pub unit: PathBuf,
    pub installed: bool,
    pub reachable: bool,
    /// Why the manager cannot be asked, when it cannot.
    pub unreachable: Option<String>,
    /// The manager's word for its state (systemd: `active`, `inactive`,
    /// `failed`...; launchd: `running`, `loaded`...; Task Scheduler: `Running`,
    /// `Ready`...).
    pub active: Option<String>,
    /// systemd's `is-enabled` (`enabled`, `disabled`...).
    pub enabled: Option<String>,
    /// The pid the manager runs it as.
    pub service_pid: Option<u32>,
    /// The daemon `sessionpipe status` finds: its pid and mode.
    pub daemon: Option<Daemon>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct Daemon {
    pub pid: u32,
    pub mode: &'static str,
    /// It is the service's own.
    pub service: bool,
}

impl Status {
    pub fn daemon_from(holder: Option<Holder>, service_pid: Option<u32>) -> Option<Daemon> {
        holder.map(|h| Daemon {
            pid: h.pid,
            mode: h.mode.as_str(),
            service: service_pid == Some(h.pid),
        })
    }
}

/// The running daemon (not a drain worker), if one holds the lock.
pub fn running_daemon(paths: &StatePaths) -> Option<u32> {
    lock::holder(paths)
        .filter(|h| h.mode == Mode::Daemon)
        .map(|h| h.pid)
}

/// Waits (up to `patience`) for a daemon to take the lock.
pub fn wait_for_daemon(paths: &StatePaths, patience: Duration) -> Started {
    let deadline = Instant::now() + patience;
    loop {
        if let Some(pid) = running_daemon(paths) {
            return Started::Running { pid };
        }
        if Instant::now() > deadline {
            return Started::NotSeen;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Writes `text` to `path` whole (a temporary beside it, then a rename),
/// making its folder first. Returns whether the file held something else.
pub fn write_file(path: &std::path::Path, text: &[u8]) -> Result<bool, ServiceError> {
    let err = |source| ServiceError::Write {
        path: path.to_path_buf(),
        source,
    };
    let before = std::fs::read(path).ok();
    if before.as_deref() == Some(text) {
        return Ok(false);
    }
    let dir = path.parent().ok_or(ServiceError::NoPlace("no folder"))?;
    std::fs::create_dir_all(dir).map_err(err)?;
    let tmp = dir.join(format!(
        ".{}.tmp",
        path.file_name().unwrap_or_default().to_string_lossy()
    ));
    std::fs::write(&tmp, text).map_err(err)?;
    std::fs::rename(&tmp, path).map_err(err)?;
    Ok(before.is_some())
}

/// Removes `path`; false when there was none.
pub fn remove_file(path: &std::path::Path) -> Result<bool, ServiceError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(ServiceError::Remove {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// A manager's command, its output read: `Err` with its words when it fails.
pub fn run(program: &str, args: &[&str]) -> Result<String, ServiceError> {
    let command = format!("{program} {}", args.join(" "));
    let out = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| ServiceError::Command {
            command: command.clone(),
            why: e.to_string(),
        })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(ServiceError::Command {
            command,
            why: words(&out),
        })
    }
}

/// A failed command's first line of stderr (else stdout, else its status).
pub fn words(out: &std::process::Output) -> String {
    let first = |b: &[u8]| {
        String::from_utf8_lossy(b)
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(str::to_string)
    };
    first(&out.stderr)
        .or_else(|| first(&out.stdout))
        .unwrap_or_else(|| out.status.to_string())
}
