//! Layer 3, service: `sessionpipe daemon` as a per-user service that starts at
//! login and again after a failure, where no tray app runs it: a systemd user
//! unit on Linux, a launchd agent on macOS, a logon task on Windows.
//!
//! The service runs this very binary (its canonical path) with `daemon`, and
//! the environment that decides where sessionpipe and the harnesses keep their
//! files, as set where it is installed: the daemon must find the state dir the
//! hooks write to, and the harnesses' files its facts come from. `PATH` goes
//! too on Unix, where a user manager's own is bare: the daemon starts agents
//! (ACP sessions, asks) by name.
//!
//! Only one daemon runs per state dir (the lock): installing where one already
//! runs outside the service enables the service and starts nothing.
//!
//! Every manager's module is compiled (and so type-checked) on every OS; the
//! one of this OS is used. The text of each is `render`'s, tested everywhere;
//! the launchd and Task Scheduler halves have not run on a Mac or on Windows.

#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
mod launchd;
mod outcome;
mod render;
#[cfg_attr(not(windows), allow(dead_code))]
mod schtasks;
#[cfg_attr(any(target_os = "macos", windows), allow(dead_code))]
mod systemd;

#[cfg(target_os = "macos")]
use launchd as platform;
#[cfg(windows)]
use schtasks as platform;
#[cfg(not(any(target_os = "macos", windows)))]
use systemd as platform;

pub use outcome::{
    Daemon, Installed, Plan, Removed, ServiceError, Started, Status, running_daemon,
};
pub use render::{Spec, launchd_plist, systemd_unit, task_xml};
use spool::StatePaths;

/// The variables the service carries over when they are set, and whether each
/// is a path (made absolute, as the daemon's working folder is another).
const CARRIED: &[(&str, bool)] = &[
    ("SESSIONPIPE_STATE_DIR", true),
    ("XDG_STATE_HOME", true),
    ("XDG_CONFIG_HOME", true),
    ("XDG_DATA_HOME", true),
    ("CLAUDE_CONFIG_DIR", true),
    ("CODEX_HOME", true),
    ("GEMINI_CLI_HOME", true),
    ("GROK_HOME", true),
    ("COPILOT_HOME", true),
    ("SESSIONPIPE_UI_DIR", true),
    ("SESSIONPIPE_SECRETS", false),
    ("SESSIONPIPE_LOG", false),
];

/// Who runs the service here: `systemd --user`, `launchd`, `Task Scheduler`.
pub const MANAGER: &str = platform::MANAGER;

/// The service of this binary and this environment.
pub fn spec() -> Result<Spec, ServiceError> {
    let exe = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .map_err(|e| ServiceError::Program(e.to_string()))?;
    let program = exe
        .to_str()
        .ok_or_else(|| ServiceError::Program(format!("{} is not UTF-8", exe.display())))?
        // Windows' canonical form is a verbatim path, which cmd.exe cannot run.
        .trim_start_matches(r"\\?\")
        .to_string();
    let mut env = Vec::new();
    for (key, is_path) in CARRIED {
        let Some(value) = std::env::var_os(key).filter(|v| !v.is_empty()) else {
            continue;
        };
        let value = if *is_path {
            std::path::absolute(&value).unwrap_or_else(|_| value.into())
        } else {
            value.into()
        };
        if let Some(v) = value.to_str() {
            env.push((key.to_string(), v.to_string()));
        }
    }
    if cfg!(unix)
        && let Some(path) = std::env::var("PATH").ok().filter(|p| !p.is_empty())
    {
        env.push(("PATH".to_string(), path));
    }
    Ok(Spec::new(program, vec!["daemon".to_string()], env)?)
}

/// The file `install` would write, its text, and what it would run then.
pub fn plan(paths: &StatePaths, spec: &Spec) -> Result<Plan, ServiceError> {
    platform::plan(paths, spec)
}

/// Writes the service's file, hands it to the manager and starts it (unless a
/// daemon runs already). `Unreachable` leaves the file written.
pub fn install(paths: &StatePaths, spec: &Spec) -> Result<Installed, ServiceError> {
    platform::install(paths, spec)
}

/// Stops and disables the service and removes its file; nothing to remove is
/// not an error.
pub fn uninstall(paths: &StatePaths) -> Result<Removed, ServiceError> {
    platform::uninstall(paths)
}

/// Installed or not, what the manager says, and the daemon the lock names.
pub fn status(paths: &StatePaths) -> Result<Status, ServiceError> {
    platform::status(paths)
}

/// A tray can run the daemon here: a desktop session, and the app beside this
/// binary (as the deb, the dmg and `scripts/run.sh` put it).
pub fn tray_here() -> bool {
    let desktop = if cfg!(any(target_os = "macos", windows)) {
        std::env::var_os("SSH_CONNECTION").is_none()
    } else {
        ["DISPLAY", "WAYLAND_DISPLAY"]
            .iter()
            .any(|v| std::env::var_os(v).is_some_and(|v| !v.is_empty()))
    };
    let app = format!("sessionpipe-app{}", std::env::consts::EXE_SUFFIX);
    desktop
        && std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().map(|d| d.join(&app).is_file()))
            .unwrap_or(false)
}
