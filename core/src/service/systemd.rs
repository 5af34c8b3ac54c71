//! The systemd user unit: `~/.config/systemd/user/sessionpipe.service`
//! (`$XDG_CONFIG_HOME` first), run by the person's own manager through
//! `systemctl --user`. Its log is the journal (`journalctl --user -u
//! sessionpipe`).

use super::outcome::{
    self, Installed, Plan, Removed, ServiceError, Started, Status, remove_file, running_daemon,
    wait_for_daemon, write_file,
};
use super::render::{SYSTEMD_UNIT, Spec, systemd_unit};
use spool::StatePaths;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

pub const MANAGER: &str = "systemd --user";

const ADVICE: &str = "The unit is written; it starts once a user manager runs. On an SSH \
box, `loginctl enable-linger $USER` (once; sudo if it asks) starts your user manager at boot \
and keeps it after you log out: log in again, then run `sessionpipe service install`. In a \
container without systemd, run `sessionpipe daemon` under the container's own supervisor.";

/// How long `install` waits for the started daemon to take the lock.
const PATIENCE: Duration = Duration::from_secs(10);

/// Where the unit goes: `$XDG_CONFIG_HOME/systemd/user`, else
/// `~/.config/systemd/user` (the first place a user manager looks).
pub fn unit_path() -> Result<PathBuf, ServiceError> {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| spool::paths::home_dir().map(|h| h.join(".config")))
        .ok_or(ServiceError::NoPlace("set HOME or XDG_CONFIG_HOME"))?;
    Ok(config.join("systemd/user").join(SYSTEMD_UNIT))
}

pub fn plan(_paths: &StatePaths, spec: &Spec) -> Result<Plan, ServiceError> {
    Ok(Plan {
        path: unit_path()?,
        text: systemd_unit(spec),
        then: vec![
            "systemctl --user daemon-reload".into(),
            format!("systemctl --user enable --now {SYSTEMD_UNIT}"),
        ],
    })
}

pub fn install(paths: &StatePaths, spec: &Spec) -> Result<Installed, ServiceError> {
    let plan = plan(paths, spec)?;
    let changed = write_file(&plan.path, plan.text.as_bytes())?;
    reachable()?;
    systemctl(&["daemon-reload"])?;
    let service_pid = main_pid();
    let mut restarted = false;
    let started = match running_daemon(paths).filter(|pid| Some(*pid) != service_pid) {
        Some(pid) => {
            systemctl(&["enable", SYSTEMD_UNIT])?;
            Started::Other { pid }
        }
        None => {
            systemctl(&["enable", "--now", SYSTEMD_UNIT])?;
            if changed && service_pid.is_some() {
                // It ran the unit as it was: it runs the new one from now.
                systemctl(&["restart", SYSTEMD_UNIT])?;
                restarted = true;
            }
            wait_for_daemon(paths, PATIENCE)
        }
    };
    if started == Started::NotSeen && query("is-active").as_deref() == Some("failed") {
        return Err(ServiceError::Command {
            command: format!("systemctl --user start {SYSTEMD_UNIT}"),
            why: "the service failed: `journalctl --user -u sessionpipe` says why".into(),
        });
    }
    let mut notes = vec!["its log: `journalctl --user -u sessionpipe`".to_string()];
    if let Started::Other { pid } = started {
        notes.push(format!(
            "`systemctl --user start {SYSTEMD_UNIT}` starts it once pid {pid} stops"
        ));
    }
    if lingers() == Some(false) {
        notes.push(
            "your user manager stops when you log out, and the daemon with it: \
             `loginctl enable-linger $USER` keeps it running and starts it at boot \
             (what an SSH box wants)"
                .into(),
        );
    }
    Ok(Installed {
        unit: plan.path,
        started,
        restarted,
        notes,
    })
}

pub fn uninstall(_paths: &StatePaths) -> Result<Removed, ServiceError> {
    let unit = unit_path()?;
    let mut removed = Removed {
        unit: unit.clone(),
        ..Removed::default()
    };
    let reach = match reachable() {
        Ok(()) => true,
        Err(ServiceError::Unreachable { why, .. }) => {
            removed.unreachable = Some(why);
            false
        }
        Err(e) => return Err(e),
    };
    if reach {
        removed.stopped = matches!(
            query("is-active").as_deref(),
            Some("active" | "activating" | "reloading" | "deactivating")
        );
        if unit.is_file() {
            systemctl(&["disable", "--now", SYSTEMD_UNIT])?;
        } else if removed.stopped {
            systemctl(&["stop", SYSTEMD_UNIT])?;
        }
    }
    removed.was_installed = remove_file(&unit)?;
    if reach && removed.was_installed {
        systemctl(&["daemon-reload"])?;
    }
    Ok(removed)
}

pub fn status(paths: &StatePaths) -> Result<Status, ServiceError> {
    let unit = unit_path()?;
    let reach = reachable();
    let (active, enabled, service_pid) = if reach.is_ok() {
        (query("is-active"), query("is-enabled"), main_pid())
    } else {
        (None, None, None)
    };
    Ok(Status {
        manager: MANAGER,
        installed: unit.is_file(),
        unit,
        reachable: reach.is_ok(),
        unreachable: match reach {
            Err(ServiceError::Unreachable { why, .. }) => Some(why),
            Err(e) => Some(e.to_string()),
            Ok(()) => None,
        },
        active,
        enabled,
        service_pid,
        daemon: Status::daemon_from(crate::state::lock::holder(paths), service_pid),
    })
}

/// `Unreachable` unless a user manager answers (`systemctl --user
/// show-environment`: no user bus in a container or a bare SSH session).
fn reachable() -> Result<(), ServiceError> {
    let unreachable = |why: String| ServiceError::Unreachable {
        manager: MANAGER,
        why,
        advice: ADVICE,
    };
    match Command::new("systemctl")
        .args(["--user", "show-environment"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
    {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(unreachable(outcome::words(&out))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(unreachable("systemctl is not installed".into()))
        }
        Err(e) => Err(unreachable(format!("systemctl does not run: {e}"))),
    }
}

fn systemctl(args: &[&str]) -> Result<String, ServiceError> {
    let mut all = vec!["--user"];
    all.extend_from_slice(args);
    outcome::run("systemctl", &all)
}

/// What `systemctl --user VERB sessionpipe.service` prints (`is-active`,
/// `is-enabled` say their word with a failing status when it is not the good one).
fn query(verb: &str) -> Option<String> {
    let out = Command::new("systemctl")
        .args(["--user", verb, SYSTEMD_UNIT])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let word = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (!word.is_empty()).then_some(word)
}

/// The service's main pid, while it runs.
fn main_pid() -> Option<u32> {
    systemctl(&["show", "--property=MainPID", "--value", SYSTEMD_UNIT])
        .ok()?
        .parse()
        .ok()
        .filter(|pid| *pid != 0)
}

/// Whether logind keeps this person's manager after they log out (`None`:
/// logind cannot say).
fn lingers() -> Option<bool> {
    let uid = outcome::run("id", &["-u"]).ok()?;
    match outcome::run(
        "loginctl",
        &["show-user", &uid, "--property=Linger", "--value"],
    )
    .ok()?
    .as_str()
    {
        "yes" => Some(true),
        "no" => Some(false),
        _ => None,
    }
}
