//! `sessionpipe-app`: the sessionpipe desktop app.
//!
//! This is a thin Tauri v2 shell. The daemon (adapters, privacy filter, outbox,
//! sinks, control, ACP driver, pool proxy) lives in the `sessionpipe_core`
//! library (crate `core/`); the shell will embed it and add what only a desktop
//! has: the tray icon and menu, native notifications, autostart, and the web UI
//! built from `ui/` into `ui/dist` and embedded here at compile time.
//!
//! For now it only opens the main window (declared in `tauri.conf.json`) with a
//! placeholder page, and exits when the window is closed. It does not depend on
//! the core yet, and starts no daemon: on a machine without the app, run
//! `sessionpipe daemon` headless.

// Release builds on Windows are GUI programs: no console window behind the app.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("sessionpipe-app: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Builds the Tauri app from `tauri.conf.json` (which opens the main window)
/// and runs its event loop until the last window is closed.
fn run() -> tauri::Result<()> {
    tauri::Builder::default().run(tauri::generate_context!())
}
