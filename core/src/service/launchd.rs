//! The launchd agent: `~/Library/LaunchAgents/org.sessionpipe.daemon.plist`,
//! loaded into the person's GUI domain (`launchctl bootstrap gui/$UID`), its
//! output in `~/Library/Logs/sessionpipe.log`. Written to Apple's documented
//! keys; it has not run on a Mac here (the release workflow lints the plist).

use super::outcome::{
    self, Installed, Plan, Removed, ServiceError, Started, Status, remove_file, running_daemon,
    wait_for_daemon, write_file,
};
use super::render::{LAUNCHD_LABEL, Spec, launchd_plist};
use spool::StatePaths;
use std::path::PathBuf;
use std::time::Duration;

pub const MANAGER: &str = "launchd";

const ADVICE: &str = "The agent is written; launchd loads it at your next login to this Mac's \
desktop (a GUI domain exists only while you are logged in there). Until then, run `sessionpipe \
daemon` yourself.";

const PATIENCE: Duration = Duration::from_secs(10);

fn home() -> Result<PathBuf, ServiceError> {
    spool::paths::home_dir().ok_or(ServiceError::NoPlace("set HOME"))
}

pub fn plist_path() -> Result<PathBuf, ServiceError> {
    Ok(home()?.join(format!("Library/LaunchAgents/{LAUNCHD_LABEL}.plist")))
}

fn log_path() -> Result<String, ServiceError> {
    Ok(home()?
        .join("Library/Logs/sessionpipe.log")
        .to_string_lossy()
        .into_owned())
}

/// `gui/<uid>`, the person's login domain.
fn domain() -> Result<String, ServiceError> {
    Ok(format!("gui/{}", outcome::run("id", &["-u"])?))
}

pub fn plan(_paths: &StatePaths, spec: &Spec) -> Result<Plan, ServiceError> {
    let path = plist_path()?;
    Ok(Plan {
        then: vec![format!(
            "launchctl bootstrap gui/$UID {}",
            path.to_string_lossy()
        )],
        text: launchd_plist(spec, &log_path()?),
        path,
    })
}

pub fn install(paths: &StatePaths, spec: &Spec) -> Result<Installed, ServiceError> {
    let plan = plan(paths, spec)?;
    let changed = write_file(&plan.path, plan.text.as_bytes())?;
    let domain = reachable()?;
    let target = format!("{domain}/{LAUNCHD_LABEL}");
    let (loaded, service_pid) = printed(&target);
    let plist = plan.path.to_string_lossy().into_owned();
    let mut restarted = false;
    let started = match running_daemon(paths).filter(|pid| Some(*pid) != service_pid) {
        // Loaded, RunAtLoad would start a second daemon (and KeepAlive start
        // it again and again): it loads at the next login instead.
        Some(pid) => Started::Other { pid },
        None => {
            let _ = outcome::run("launchctl", &["enable", &target]);
            if loaded && changed {
                let _ = outcome::run("launchctl", &["bootout", &target]);
                restarted = service_pid.is_some();
            }
            if !loaded || changed {
                outcome::run("launchctl", &["bootstrap", &domain, &plist])?;
            } else {
                outcome::run("launchctl", &["kickstart", &target])?;
            }
            wait_for_daemon(paths, PATIENCE)
        }
    };
    Ok(Installed {
        unit: plan.path,
        started,
        restarted,
        notes: vec![format!("its log: {}", log_path()?)],
    })
}

pub fn uninstall(_paths: &StatePaths) -> Result<Removed, ServiceError> {
    let unit = plist_path()?;
    let mut removed = Removed {
        unit: unit.clone(),
        ..Removed::default()
    };
    match reachable() {
        Ok(domain) => {
            let target = format!("{domain}/{LAUNCHD_LABEL}");
            let (loaded, pid) = printed(&target);
            if loaded {
                outcome::run("launchctl", &["bootout", &target])?;
                removed.stopped = pid.is_some();
            }
        }
        Err(ServiceError::Unreachable { why, .. }) => removed.unreachable = Some(why),
        Err(e) => return Err(e),
    }
    removed.was_installed = remove_file(&unit)?;
    Ok(removed)
}

pub fn status(paths: &StatePaths) -> Result<Status, ServiceError> {
    let unit = plist_path()?;
    let reach = reachable();
    let (active, service_pid) = match &reach {
        Ok(domain) => {
            let target = format!("{domain}/{LAUNCHD_LABEL}");
            let text = outcome::run("launchctl", &["print", &target]).ok();
            let state = text
                .as_deref()
                .and_then(|t| field(t, "state"))
                .or(text.as_ref().map(|_| "loaded".to_string()));
            (
                state,
                text.as_deref().and_then(|t| field(t, "pid")?.parse().ok()),
            )
        }
        Err(_) => (None, None),
    };
    Ok(Status {
        manager: MANAGER,
        installed: unit.is_file(),
        unit,
        reachable: reach.is_ok(),
        unreachable: reach.err().map(|e| match e {
            ServiceError::Unreachable { why, .. } => why,
            e => e.to_string(),
        }),
        active,
        enabled: None,
        service_pid,
        daemon: Status::daemon_from(crate::state::lock::holder(paths), service_pid),
    })
}

/// The GUI domain, when launchd has one for this person.
fn reachable() -> Result<String, ServiceError> {
    let unreachable = |why: String| ServiceError::Unreachable {
        manager: MANAGER,
        why,
        advice: ADVICE,
    };
    let domain = domain().map_err(|e| unreachable(e.to_string()))?;
    match outcome::run("launchctl", &["print", &domain]) {
        Ok(_) => Ok(domain),
        Err(ServiceError::Command { why, .. }) => Err(unreachable(why)),
        Err(e) => Err(unreachable(e.to_string())),
    }
}

/// Whether the agent is loaded, and its pid while it runs.
fn printed(target: &str) -> (bool, Option<u32>) {
    match outcome::run("launchctl", &["print", target]) {
        Ok(text) => (true, field(&text, "pid").and_then(|p| p.parse().ok())),
        Err(_) => (false, None),
    }
}

/// A top-level `key = value` line of `launchctl print` (one tab deep).
fn field(text: &str, key: &str) -> Option<String> {
    text.lines()
        .filter(|l| l.starts_with('\t') && !l.starts_with("\t\t"))
        .find_map(|l| {
            let (k, v) = l.trim().split_once(" = ")?;
            (k == key).then(|| v.trim().to_string())
        })
}

#[cfg(test)]
mod tests {
    #[test]
    fn launchctl_print_fields_are_read_at_the_top_level_only() {
        let text = "gui/501/org.sessionpipe.daemon = {\n\
                    \tactive count = 1\n\
                    \tstate = running\n\
                    \tpid = 4242\n\
                    \tenvironment = {\n\
                    \t\tpid = 1\n\
                    \t}\n}\n";
        assert_eq!(super::field(text, "state").as_deref(), Some("running"));
        assert_eq!(super::field(text, "pid").as_deref(), Some("4242"));
        assert_eq!(super::field(text, "missing"), None);
    }
}
