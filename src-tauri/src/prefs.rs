//! The settings the tray menu changes, "Pause notifications", "Open at login"
//! and "Phone page on this computer", kept in the core's `config.json` (the same file the UI's Settings
//! write), and the OS's login item kept in step with `open_at_login`.
//!
//! `config.json` is the truth: a change made in the UI reaches the login item on
//! the tray's next refresh. A config file that cannot be read is never written
//! over (the person's other settings are in it); meanwhile the last settings
//! that read are in force, followed through the core's `LiveConfig`, the one
//! the embedded daemon holds too.
//! Must not hold settings of its own or act on `notifications_paused` (the core's
//! `notify::decide` does).

use anyhow::Context;
use sessionpipe_core::spool::StatePaths;
use sessionpipe_core::state::config::Config;
use sessionpipe_core::state::live_config::LiveConfig;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

/// The login item's name (`~/.config/autostart/sessionpipe.desktop` on Linux).
const LOGIN_ITEM: &str = "sessionpipe";

/// The settings in force now: while `config.json` does not read, the last
/// that did (the defaults only until one did), said once in the log.
pub fn load(paths: &StatePaths) -> Config {
    Config::clone(&live(paths).now())
}

/// The settings of the state dir `paths`, followed for the app's life: one
/// `LiveConfig` for the tray, the notifications and the embedded daemon, so
/// a file that does not read is said once however many read it.
pub fn live(paths: &StatePaths) -> LiveConfig {
    static FOLLOWED: Mutex<BTreeMap<PathBuf, LiveConfig>> = Mutex::new(BTreeMap::new());
    let mut followed = FOLLOWED.lock().unwrap_or_else(|p| p.into_inner());
    followed
        .entry(paths.config())
        .or_insert_with(|| LiveConfig::follow(paths))
        .clone()
}

/// Changes one setting in `config.json` (read, change, write).
fn update(paths: &StatePaths, change: impl FnOnce(&mut Config)) -> anyhow::Result<Config> {
    let mut config = Config::load(paths)?;
    change(&mut config);
    config.save(paths)?;
    Ok(config)
}

/// Flips `notifications_paused`.
pub fn toggle_paused(paths: &StatePaths) -> anyhow::Result<bool> {
    update(paths, |c| c.notifications_paused = !c.notifications_paused)
        .map(|c| c.notifications_paused)
}

/// Flips `local_receiver` (the phone page on this computer).
pub fn toggle_local_receiver(paths: &StatePaths) -> anyhow::Result<bool> {
    update(paths, |c| c.local_receiver = !c.local_receiver).map(|c| c.local_receiver)
}

/// Flips `open_at_login` and the login item with it.
pub fn toggle_open_at_login(paths: &StatePaths) -> anyhow::Result<bool> {
    let config = update(paths, |c| c.open_at_login = !c.open_at_login)?;
    follow_open_at_login(config.open_at_login)?;
    Ok(config.open_at_login)
}

/// Makes the OS's login item say what `open_at_login` says: this very program,
/// started `--hidden` (in the tray, no window). An item that exists is written
/// again, so that one left by an install elsewhere (a build tree, an older
/// package) starts the program that runs now.
pub fn follow_open_at_login(wanted: bool) -> anyhow::Result<()> {
    let login = login_item()?;
    if wanted {
        return login.enable().map_err(anyhow::Error::from);
    }
    if login.is_enabled()? {
        return login.disable().map_err(anyhow::Error::from);
    }
    Ok(())
}

/// Starts the app in the tray only: what the login item passes. Here, with
/// the login item, so that `shared` (above the window and the backend, which
/// read the settings here) need not be imported by this module.
pub const HIDDEN_ARG: &str = "--hidden";

fn login_item() -> anyhow::Result<auto_launch::AutoLaunch> {
    let exe = std::env::current_exe().context("where this program is")?;
    let mut builder = auto_launch::AutoLaunchBuilder::new();
    builder.set_app_name(LOGIN_ITEM).set_args(&[HIDDEN_ARG]);
    // On macOS a Launch Agent (the crate's default) runs this binary as it is.
    builder.set_app_path(&exe.display().to_string());
    builder.build().map_err(anyhow::Error::from)
}
