//! The Windows logon task `\sessionpipe`, registered with `schtasks /Create
//! /XML` from a copy kept in the state dir (`service-task.xml`, UTF-16 as the
//! task's XML declares). Written to Microsoft's task schema; it has not run on
//! Windows here. The daemon is a console program: a logon task shows its
//! window (the tray app is the way on a Windows desktop).

use super::outcome::{
    self, Installed, Plan, Removed, ServiceError, Started, Status, remove_file, running_daemon,
    wait_for_daemon, write_file,
};
use super::render::{Spec, TASK_NAME, task_xml};
use spool::StatePaths;
use std::path::PathBuf;
use std::time::Duration;

pub const MANAGER: &str = "Task Scheduler";

const ADVICE: &str = "The task's XML is written; register it with `schtasks /Create /TN \
sessionpipe /XML <that file>`, or run `sessionpipe daemon` yourself.";

const PATIENCE: Duration = Duration::from_secs(10);

pub fn xml_path(paths: &StatePaths) -> PathBuf {
    paths.root.join("service-task.xml")
}

/// `DOMAIN\user`, whom the task runs as and at whose logon.
fn user() -> String {
    let var = |k| std::env::var(k).ok().filter(|v: &String| !v.is_empty());
    match (var("USERDOMAIN"), var("USERNAME")) {
        (Some(d), Some(u)) => format!("{d}\\{u}"),
        (None, Some(u)) => u,
        _ => outcome::run("whoami", &[]).unwrap_or_default(),
    }
}

pub fn plan(paths: &StatePaths, spec: &Spec) -> Result<Plan, ServiceError> {
    let path = xml_path(paths);
    Ok(Plan {
        then: vec![
            format!(
                "schtasks /Create /TN {TASK_NAME} /XML \"{}\" /F",
                path.display()
            ),
            format!("schtasks /Run /TN {TASK_NAME}"),
        ],
        text: task_xml(spec, &user()),
        path,
    })
}

/// The text as UTF-16 (little-endian, with its mark), as the XML declares.
fn utf16(text: &str) -> Vec<u8> {
    let mut out = vec![0xFF, 0xFE];
    for unit in text.encode_utf16() {
        out.extend_from_slice(&unit.to_le_bytes());
    }
    out
}

pub fn install(paths: &StatePaths, spec: &Spec) -> Result<Installed, ServiceError> {
    let plan = plan(paths, spec)?;
    write_file(&plan.path, &utf16(&plan.text))?;
    reachable()?;
    let xml = plan.path.to_string_lossy().into_owned();
    outcome::run(
        "schtasks",
        &["/Create", "/TN", TASK_NAME, "/XML", &xml, "/F"],
    )?;
    let started = match running_daemon(paths) {
        Some(pid) if !running() => Started::Other { pid },
        Some(pid) => Started::Running { pid },
        None => {
            outcome::run("schtasks", &["/Run", "/TN", TASK_NAME])?;
            wait_for_daemon(paths, PATIENCE)
        }
    };
    Ok(Installed {
        unit: plan.path,
        started,
        restarted: false,
        notes: Vec::new(),
    })
}

pub fn uninstall(paths: &StatePaths) -> Result<Removed, ServiceError> {
    let unit = xml_path(paths);
    let mut removed = Removed {
        unit: unit.clone(),
        ..Removed::default()
    };
    match reachable() {
        Ok(()) => {
            if query().is_some() {
                removed.stopped = running();
                if removed.stopped {
                    let _ = outcome::run("schtasks", &["/End", "/TN", TASK_NAME]);
                }
                outcome::run("schtasks", &["/Delete", "/TN", TASK_NAME, "/F"])?;
                removed.was_installed = true;
            }
        }
        Err(ServiceError::Unreachable { why, .. }) => removed.unreachable = Some(why),
        Err(e) => return Err(e),
    }
    removed.was_installed |= remove_file(&unit)?;
    Ok(removed)
}

pub fn status(paths: &StatePaths) -> Result<Status, ServiceError> {
    let reach = reachable();
    let active = reach.is_ok().then(query).flatten();
    Ok(Status {
        manager: MANAGER,
        unit: xml_path(paths),
        installed: active.is_some(),
        reachable: reach.is_ok(),
        unreachable: reach.err().map(|e| e.to_string()),
        active,
        enabled: None,
        service_pid: None,
        daemon: Status::daemon_from(crate::state::lock::holder(paths), None),
    })
}

/// `Unreachable` when there is no `schtasks` to ask.
fn reachable() -> Result<(), ServiceError> {
    match std::process::Command::new("schtasks")
        .arg("/?")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
    {
        Ok(_) => Ok(()),
        Err(e) => Err(ServiceError::Unreachable {
            manager: MANAGER,
            why: format!("schtasks does not run: {e}"),
            advice: ADVICE,
        }),
    }
}

/// The task's status word (`Ready`, `Running`, in the system's language),
/// when it is registered.
fn query() -> Option<String> {
    let line = outcome::run(
        "schtasks",
        &["/Query", "/TN", TASK_NAME, "/FO", "CSV", "/NH"],
    )
    .ok()?;
    let last = line.lines().next()?.rsplit("\",\"").next()?;
    Some(last.trim_matches('"').to_string())
}

/// Whether the task runs now (its status word is `Running`: an English
/// system's word; elsewhere this says no).
fn running() -> bool {
    query().is_some_and(|w| w == "Running")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_xml_is_written_as_utf16_with_its_mark() {
        assert_eq!(super::utf16("<a/>"), b"\xFF\xFE<\0a\0/\0>\0");
    }
}
