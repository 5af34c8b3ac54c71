//! `sessionpipe-app`: the sessionpipe desktop app.
//!
//! A thin shell over the `sessionpipe_core` library: it runs the daemon (or
//! attaches to one already running) and adds what only a desktop has, the tray
//! icon and menu, native notifications, autostart, and a window on the daemon's
//! web UI. No protocol, ingest or notification logic lives in this crate: the
//! core decides, the shell shows.
//!
//! Two programs: this one, the tray, which runs all day (tao's event loop and
//! tray-icon, the crates under Tauri's own tray, and no web view), and
//! `sessionpipe-window` (`webview.rs`, Tauri), which it starts when the window
//! opens. This file reads the command line and prepares the environment.

// Release builds on Windows are GUI programs: no console window behind the app.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

mod app;
mod approvals;
mod backend;
mod board;
mod daemon_api;
mod instance;
mod local_receiver;
mod notices;
mod offers;
mod prefs;
mod shared;
mod tray;
mod update;
mod window;

use std::process::ExitCode;

const USAGE: &str = "\
sessionpipe-app: sessionpipe in the tray (runs the daemon, or attaches to one)

Usage: sessionpipe-app [--hidden]

Options:
  --hidden     Start in the tray without opening the window (how login starts it)
  -h, --help   Print this help
  -V, --version
               Print the version

A second launch opens the first one's window instead of starting again.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("-V" | "--version") => {
            say(&format!("sessionpipe-app {}", env!("CARGO_PKG_VERSION")));
            return ExitCode::SUCCESS;
        }
        Some("-h" | "--help") => {
            say(USAGE);
            return ExitCode::SUCCESS;
        }
        None => tray(false),
        Some(prefs::HIDDEN_ARG) if args.len() == 1 => tray(true),
        Some(_) => {
            eprintln!("sessionpipe-app: unknown arguments {args:?}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("sessionpipe-app: {err}");
            ExitCode::FAILURE
        }
    }
}

/// One line to stdout; a closed stdout (`--help | head -1`) is not an error.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stdout(), "{line}");
}

/// GDK's GL variable as the person's environment had it, for the window.
#[cfg(target_os = "linux")]
static GDK_GL: std::sync::OnceLock<Option<std::ffi::OsString>> = std::sync::OnceLock::new();

fn tray(hidden: bool) -> anyhow::Result<()> {
    // The embedded daemon's allocator cap, before any thread (GTK's, D-Bus's,
    // the app's own) takes an arena of its own: it is the process's, and the
    // daemon sets it only once its runtime starts, after all of those.
    sessionpipe_core::runtime::cap_malloc_arenas();
    // On X11, GTK picks its visuals through GLX at start-up, which loads Mesa (and
    // LLVM with it): about 50 MB resident in a process that never draws with GL.
    // The tray's menus do not; the web view, which may, runs in the window's
    // program, which gets the variable back as it was (`for_the_window`).
    #[cfg(target_os = "linux")]
    {
        GDK_GL.get_or_init(|| std::env::var_os("GDK_GL"));
        // SAFETY: the first thing the process does, before any thread exists, so
        // nothing reads the environment while it changes.
        unsafe { std::env::set_var("GDK_GL", "disable") };
    }
    app::run(hidden)
}

/// The window process's environment: the tray's, with GDK's GL as it was.
pub(crate) fn for_the_window(cmd: &mut std::process::Command) {
    #[cfg(target_os = "linux")]
    match GDK_GL.get().cloned().flatten() {
        Some(value) => {
            cmd.env("GDK_GL", value);
        }
        None => {
            cmd.env_remove("GDK_GL");
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
}
