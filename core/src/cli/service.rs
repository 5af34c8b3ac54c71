//! `sessionpipe service install [--dry-run] | uninstall | status [--json]`: the
//! daemon as a per-user service where no tray app runs it (systemd --user on
//! Linux, launchd on macOS, a logon task on Windows), and what `connect` does
//! about a daemon when none runs.

use crate::cli::out::{Stdout, outln};
use crate::service::{self, Installed, MANAGER, ServiceError, Started, Status};
use clap::Subcommand;
use spool::StatePaths;
use std::io::Write;
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum ServiceAction {
    /// Run the daemon as a user service that starts at login and after a
    /// failure, and start it now (unless a daemon runs already).
    Install {
        /// Print the file it would write (stdout) and where, with what it
        /// would run then (stderr); write nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Stop and disable the service and remove its file.
    Uninstall,
    /// Whether it is installed, what the service manager says of it, and
    /// whether the daemon runs.
    Status {
        /// Print JSON instead of lines (its shape: docs/src/reference/json.md).
        #[arg(long)]
        json: bool,
    },
}

pub fn run(paths: &StatePaths, action: ServiceAction) -> anyhow::Result<ExitCode> {
    match action {
        ServiceAction::Install { dry_run } => install(paths, dry_run),
        ServiceAction::Uninstall => uninstall(paths),
        ServiceAction::Status { json } => status(paths, json),
    }
}

fn install(paths: &StatePaths, dry_run: bool) -> anyhow::Result<ExitCode> {
    let spec = service::spec()?;
    let plan = service::plan(paths, &spec)?;
    if dry_run {
        // The file alone on stdout, so that it can be checked as it is
        // (`plutil -lint`, `systemd-analyze verify`).
        eprintln!(
            "would write {} and run: {}",
            plan.path.display(),
            plan.then.join("; ")
        );
        let _ = Stdout.write_all(plan.text.as_bytes());
        return Ok(ExitCode::SUCCESS);
    }
    match service::install(paths, &spec) {
        Ok(done) => Ok(say_installed(&done)),
        Err(e @ ServiceError::Unreachable { advice, .. }) => {
            outln!("wrote {}", plan.path.display());
            eprintln!("sessionpipe: {e}: nothing was started.");
            eprintln!("{advice}");
            Ok(ExitCode::from(1))
        }
        Err(e) => Err(e.into()),
    }
}

fn say_installed(done: &Installed) -> ExitCode {
    outln!("installed {} ({MANAGER})", done.unit.display());
    let code = match &done.started {
        Started::Running { pid } if done.restarted => {
            outln!("daemon: running as the service (pid {pid}), started again on the new file");
            ExitCode::SUCCESS
        }
        Started::Running { pid } => {
            outln!("daemon: running as the service (pid {pid})");
            ExitCode::SUCCESS
        }
        Started::Other { pid } => {
            outln!(
                "daemon: already running (pid {pid}), not as the service: no second one \
                 started; the service starts it from the next login"
            );
            ExitCode::SUCCESS
        }
        Started::NotSeen => {
            eprintln!("sessionpipe: the service started, but no daemon runs yet: see its log");
            ExitCode::from(1)
        }
    };
    for n in &done.notes {
        eprintln!("note: {n}");
    }
    code
}

fn uninstall(paths: &StatePaths) -> anyhow::Result<ExitCode> {
    let removed = service::uninstall(paths)?;
    if removed.stopped {
        outln!("stopped the service's daemon");
    }
    if removed.was_installed {
        outln!("removed {}", removed.unit.display());
    } else {
        outln!(
            "service: not installed (no {}); nothing to remove",
            removed.unit.display()
        );
    }
    if let Some(why) = removed
        .unreachable
        .as_ref()
        .filter(|_| removed.was_installed)
    {
        eprintln!("note: {MANAGER} is not reachable ({why}): nothing was stopped");
    }
    Ok(ExitCode::SUCCESS)
}

fn status(paths: &StatePaths, json: bool) -> anyhow::Result<ExitCode> {
    let s = service::status(paths)?;
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&s).expect("the status serialises")
        );
        return Ok(ExitCode::SUCCESS);
    }
    for line in lines(&s) {
        outln!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}

fn lines(s: &Status) -> Vec<String> {
    let mut out = vec![format!(
        "service: {} ({})",
        if s.installed {
            "installed"
        } else {
            "not installed"
        },
        s.unit.display()
    )];
    out.push(match (&s.unreachable, &s.active) {
        (Some(why), _) => format!("{}: not reachable ({why})", s.manager),
        (None, active) => {
            let mut words: Vec<&str> = vec![active.as_deref().unwrap_or("unknown")];
            words.extend(s.enabled.as_deref());
            let pid = s
                .service_pid
                .map(|p| format!(" (pid {p})"))
                .unwrap_or_default();
            format!("{}: {}{pid}", s.manager, words.join(", "))
        }
    });
    out.push(match &s.daemon {
        Some(d) if d.service => {
            format!("daemon: running (pid {}, {}), the service's", d.pid, d.mode)
        }
        Some(d) => format!(
            "daemon: running (pid {}, {}), not the service's",
            d.pid, d.mode
        ),
        None => "daemon: not running".to_string(),
    });
    out
}

/// What `connect` does once the machine is paired: commands from the
/// receiver reach it through a running daemon. One running is enough; where a
/// tray app can run it, say so; elsewhere install the service. Never changes
/// `connect`'s outcome: what failed is said, with what to do.
pub fn after_connect(paths: &StatePaths) {
    if let Some(pid) = service::running_daemon(paths) {
        outln!("daemon: running (pid {pid})");
        return;
    }
    if service::tray_here() {
        outln!(
            "daemon: not running: start sessionpipe-app (its tray runs the daemon), \
             or run `sessionpipe service install`"
        );
        return;
    }
    outln!("daemon: not running, and no tray here: installing the service ({MANAGER})");
    let ok = match install(paths, false) {
        Ok(code) => code == ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sessionpipe: {e:#}");
            false
        }
    };
    if !ok {
        eprintln!(
            "note: until a daemon runs, the receiver's commands wait for it \
             (`sessionpipe daemon` runs one in the foreground)"
        );
    }
}
