//! Builds and runs the tray process: the plugins (single instance, autostart,
//! the opener for links), the daemon (`backend`), the tray (`tray`),
//! notifications (`notices`) and, unless started hidden, the window (`window`).
//!
//! Owns the wiring and the app's life: one instance per user (a second launch
//! opens the first one's window and exits), the window's closing leaves the tray
//! running, and "Quit" ends the process (the embedded daemon with it: the core
//! loses nothing to a stop at any instant; the window process follows). Must not
//! hold behaviour of its own.

use crate::backend;
use crate::window::Window;
use sessionpipe_core::paths::StatePaths;
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};
use tauri::{Manager, RunEvent};

/// Starts the app in the tray only (what the login item passes).
pub const HIDDEN_ARG: &str = "--hidden";

/// How long the first window waits for the embedded daemon's address before it
/// shows the waiting page instead.
const FIRST_WINDOW_WAIT: Duration = Duration::from_secs(3);

/// What every part of the shell shares, managed by Tauri.
pub struct Shared {
    pub paths: StatePaths,
    /// The window's process.
    pub window: Window,
    /// Asks the tray to refresh now (after a menu change).
    refresh: Sender<()>,
}

impl Shared {
    pub fn refresh_now(&self) {
        let _ = self.refresh.send(());
    }
}

pub fn run(hidden: bool) -> Result<(), String> {
    let paths = StatePaths::from_env()?;
    let app = tauri::Builder::default()
        // First: a second launch hands its arguments to the first and exits here.
        .plugin(tauri_plugin_single_instance::init(|app, argv, _cwd| {
            if !argv.iter().any(|a| a == HIDDEN_ARG) {
                crate::window::open(app, None);
            }
        }))
        .plugin(
            tauri_plugin_autostart::Builder::new()
                .arg(HIDDEN_ARG)
                .build(),
        )
        .plugin(tauri_plugin_opener::init())
        .setup(move |app| {
            // A menu-bar app: no Dock icon, no app menu.
            #[cfg(target_os = "macos")]
            app.set_activation_policy(tauri::ActivationPolicy::Accessory);
            let resources = app.path().resource_dir().ok();
            backend::start(paths.clone(), backend::ui_dir(resources));
            let (refresh, refresh_rx) = std::sync::mpsc::channel::<()>();
            app.manage(Shared {
                paths: paths.clone(),
                window: Window::default(),
                refresh,
            });
            let handle = app.handle().clone();
            crate::tray::build(&handle)?;
            crate::tray::spawn_refresher(handle.clone(), refresh_rx);
            crate::notices::spawn(handle.clone(), paths.clone());
            if !hidden {
                open_first_window(handle, paths.clone());
            }
            Ok(())
        })
        .build(crate::context())
        .map_err(|e| e.to_string())?;
    app.run(|_app, event| {
        // Closing the last window leaves the tray; only "Quit" (an exit with a
        // code) ends the app.
        if let RunEvent::ExitRequested {
            code: None, api, ..
        } = event
        {
            api.prevent_exit();
        }
    });
    Ok(())
}

/// Opens the window once the embedded daemon serves the UI (it takes a few
/// milliseconds), or after `FIRST_WINDOW_WAIT` on the waiting page.
fn open_first_window(app: tauri::AppHandle, paths: StatePaths) {
    let _ = std::thread::Builder::new()
        .name("first-window".into())
        .spawn(move || {
            let until = Instant::now() + FIRST_WINDOW_WAIT;
            while backend::ui_address(&paths).is_none() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(50));
            }
            crate::window::open(&app, None);
        });
}
