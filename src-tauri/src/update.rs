//! The app's own updates, in the tray: a thread that asks the updater once a
//! day whether a newer signed version is out, and the menu lines that offer
//! it ("Update to 0.2.0 and restart", "Skip 0.2.0") and act on a click.
//!
//! Every decision is `sessionpipe_updater`'s: whether this copy updates itself
//! (the dmg's app and the msi's do; a deb install leaves it to apt and the
//! thread never starts), when a check is due, what a manifest may offer, the
//! download, its checks and the install. This module only shows and asks.
//! The manifest's URL is compiled in by the release workflow
//! (`SESSIONPIPE_UPDATE_URL` at build time); the same variable at run time
//! overrides it (a loopback update server, to try an update); a build with
//! neither never checks. Must not block the main thread: every request runs
//! on a thread of its own.

use crate::shared::Shared;
use sessionpipe_updater::{Check, Config, Installation, Update, Updater, Version, install};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime};

const URL_VAR: &str = "SESSIONPIPE_UPDATE_URL";
const BUILT_URL: Option<&str> = option_env!("SESSIONPIPE_UPDATE_URL");

/// How often the thread asks whether a check is due: the updater's throttle
/// answers once a day; looking hourly catches a machine that slept past it.
const LOOK: Duration = Duration::from_secs(60 * 60);

/// What an update's menu line does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Act {
    /// Install it and restart (again, after a failure).
    Install,
    Skip,
    /// Words while it installs.
    Busy,
}

/// One menu line of the update's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub act: Act,
    pub text: String,
    pub enabled: bool,
}

enum Phase {
    Quiet,
    Offered(Update),
    Installing(Version),
    /// The install failed (the log says why); the person may try again.
    Failed(Update),
}

struct Running {
    updater: Updater,
    shared: Arc<Shared>,
    /// Ends the app as "Quit" does (the event loop's).
    quit: Box<dyn Fn() + Send + Sync>,
}

static RUNNING: OnceLock<Running> = OnceLock::new();
static PHASE: Mutex<Phase> = Mutex::new(Phase::Quiet);

fn phase() -> std::sync::MutexGuard<'static, Phase> {
    PHASE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Starts the daily check, where this copy updates itself and knows where
/// from; `quit` ends the app once an update is in.
pub fn start(shared: Arc<Shared>, quit: impl Fn() + Send + Sync + 'static) {
    let installation = Installation::detect();
    if let Some(why) = installation.left_to() {
        tracing::info!("the app does not update itself: {why}");
        return;
    }
    let Some(url) = std::env::var(URL_VAR).ok().or(BUILT_URL.map(String::from)) else {
        tracing::info!("this build has no update URL: it does not update itself");
        return;
    };
    let running = match env!("CARGO_PKG_VERSION").parse::<Version>() {
        Ok(v) => v,
        Err(e) => return tracing::warn!("the app's version: {e}"),
    };
    let config = Config::new(running, url, &shared.paths.root, installation);
    let updater = match Updater::new(config) {
        Ok(u) => u,
        Err(e) => return tracing::warn!("updates: {e}"),
    };
    let running = RUNNING.get_or_init(|| Running {
        updater,
        shared,
        quit: Box::new(quit),
    });
    let spawned = std::thread::Builder::new()
        .name("updates".into())
        .spawn(move || {
            loop {
                look(running);
                std::thread::sleep(LOOK);
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("cannot start the updates' thread: {e}");
    }
}

fn look(running: &Running) {
    match running.updater.check_if_due(SystemTime::now()) {
        Ok(Check::Available(update)) => {
            tracing::info!("sessionpipe {} is out", update.version());
            let mut now = phase();
            // Never under a click being carried out.
            if !matches!(*now, Phase::Installing(_)) {
                *now = Phase::Offered(update);
            }
            drop(now);
            running.shared.refresh_now();
        }
        Ok(Check::Skipped(v)) => tracing::debug!("sessionpipe {v} is out, skipped"),
        Ok(Check::NotDue { .. } | Check::LeftTo(_)) => {}
        Err(e) if e.is_up_to_date() => tracing::debug!("updates: {e}"),
        Err(e) => tracing::warn!("updates: {e}"),
    }
}

/// The update's menu lines now (none, mostly).
pub fn lines() -> Vec<Line> {
    let line = |act, text: String, enabled| Line { act, text, enabled };
    match &*phase() {
        Phase::Quiet => Vec::new(),
        Phase::Offered(u) => vec![
            line(
                Act::Install,
                format!("Update to {} and restart", u.version()),
                true,
            ),
            line(Act::Skip, format!("Skip {}", u.version()), true),
        ],
        Phase::Installing(v) => vec![line(Act::Busy, format!("Updating to {v}…"), false)],
        Phase::Failed(u) => vec![line(
            Act::Install,
            format!("Updating to {} failed: try again", u.version()),
            true,
        )],
    }
}

/// Acts on an update line's click.
pub fn on_menu(act: Act) {
    let Some(running) = RUNNING.get() else {
        return;
    };
    match act {
        Act::Install => {
            let mut now = phase();
            let (Phase::Offered(update) | Phase::Failed(update)) = &*now else {
                return;
            };
            let update = update.clone();
            *now = Phase::Installing(update.version().clone());
            drop(now);
            let spawned = std::thread::Builder::new()
                .name("update-install".into())
                .spawn(move || install_and_restart(running, update));
            if let Err(e) = spawned {
                tracing::warn!("cannot start the update's thread: {e}");
            }
        }
        Act::Skip => {
            let mut now = phase();
            if let Phase::Offered(update) = &*now {
                if let Err(e) = running.updater.skip(update.version()) {
                    tracing::warn!("skip {}: {e}", update.version());
                }
                *now = Phase::Quiet;
            }
        }
        Act::Busy => return,
    }
    running.shared.refresh_now();
}

/// Downloads, checks and installs `update`, then hands over to what starts
/// the new version and quits; a failure is told in the menu and the log.
fn install_and_restart(running: &Running, update: Update) {
    let done = running
        .updater
        .install(&update)
        .map_err(|e| e.to_string())
        .and_then(|installed| {
            install::restart_after_exit(&installed, std::process::id()).map_err(|e| e.to_string())
        });
    match done {
        Ok(()) => {
            tracing::info!(
                "sessionpipe {} is installed: the app restarts",
                update.version()
            );
            (running.quit)();
        }
        Err(e) => {
            tracing::warn!("updating to {}: {e}", update.version());
            *phase() = Phase::Failed(update);
            running.shared.refresh_now();
        }
    }
}
