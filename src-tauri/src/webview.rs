//! `sessionpipe-window`: the sessionpipe app's window, a program of its own that
//! the tray (`sessionpipe-app`, `window.rs`) starts. It shows one web view on the
//! daemon's UI (or, without a URL, the bundled waiting page in
//! `src-tauri/fallback/`), follows the tray's commands on stdin (`show URL`:
//! navigate and bring forward; `go URL`: navigate; `show`: bring forward; the
//! first line says where the window opens), and exits when its window closes or
//! its stdin ends (the tray quit or died).
//!
//! Its own program so that WebKit is loaded only while the window is open: the
//! tray, which runs all day, never maps it. Must not start a daemon, a tray,
//! notifications or an instance lock: it is a view, and the tray owns everything
//! else. The page is a remote (loopback) URL with no IPC: it talks to the
//! daemon's API itself.

// Release builds on Windows are GUI programs: no console window behind it.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

use anyhow::Context;
use std::io::BufRead;
use tauri::{
    AppHandle, Manager, RunEvent, Url, WebviewUrl, WebviewWindow, WebviewWindowBuilder, WindowEvent,
};

const LABEL: &str = "main";

fn main() -> std::process::ExitCode {
    if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        eprintln!(
            "sessionpipe-window is the window of sessionpipe-app, which starts it; run sessionpipe-app"
        );
        return std::process::ExitCode::from(2);
    }
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("sessionpipe-window: {err}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<()> {
    let mut first = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut first)
        .context("no first command on stdin")?;
    let (_, page) = parse(&first);
    let app = tauri::Builder::default()
        .setup(move |app| {
            let url = match page {
                Some(url) => WebviewUrl::External(url),
                None => WebviewUrl::App("index.html".into()),
            };
            let window = WebviewWindowBuilder::new(app, LABEL, url)
                .title("sessionpipe")
                .inner_size(900.0, 640.0)
                .min_inner_size(420.0, 320.0)
                .build()?;
            bring_forward(&window);
            follow_stdin(app.handle().clone());
            Ok(())
        })
        .build(tauri::generate_context!())?;
    // The window is the program: once it is gone, so is the process, at once
    // (nothing to save), so that the tray never hands a command to a window
    // that is closing: it starts a new one.
    app.run(|_, event| {
        if let RunEvent::WindowEvent {
            event: WindowEvent::Destroyed,
            ..
        } = event
        {
            std::process::exit(0);
        }
    });
    Ok(())
}

fn follow_stdin(app: AppHandle) {
    let spawned = std::thread::Builder::new()
        .name("commands".into())
        .spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                let (command, url) = parse(&line);
                let handle = app.clone();
                let _ = app.run_on_main_thread(move || apply(&handle, &command, url));
            }
            // The tray is gone: so is its window.
            app.exit(0);
        });
    if let Err(e) = spawned {
        tracing::warn!("the window cannot follow the tray: {e}");
    }
}

/// `show URL` → ("show", Some(URL)); `show` → ("show", None).
fn parse(line: &str) -> (String, Option<Url>) {
    let line = line.trim();
    let (command, arg) = line.split_once(' ').unwrap_or((line, ""));
    (command.to_string(), Url::parse(arg.trim()).ok())
}

fn apply(app: &AppHandle, command: &str, url: Option<Url>) {
    let Some(window) = app.get_webview_window(LABEL) else {
        return;
    };
    if let Some(url) = url
        && window.url().ok().as_ref() != Some(&url)
    {
        // Within the same page only the fragment changes: the UI follows
        // `hashchange`, nothing reloads.
        let _ = window.navigate(url);
    }
    if command == "show" {
        bring_forward(&window);
    }
}

fn bring_forward(window: &WebviewWindow) {
    let _ = window.show();
    let _ = window.unminimize();
    let _ = window.set_focus();
}
