//! The app's one window, seen from the tray: the daemon's web UI (`ui.json`'s url
//! with the token in the fragment), the same files a browser gets from a
//! headless daemon, shown by `sessionpipe-window` (`webview.rs`), which this
//! module starts.
//!
//! The web view lives in its own program so that the tray never loads WebKit,
//! closing the window gives back everything WebKit took (its web and network
//! processes with it), and the tray never starts GL (see `main`). Owns starting
//! that process (the `sessionpipe-window` beside this binary), pointing it at a session (`&session=
//! harness:id`) or at a new address when the daemon behind the UI changes (the
//! app took over, or the daemon restarted with a new token), all over the
//! child's stdin: `show URL` (navigate and bring forward; the first line says
//! where the window opens), `go URL` (navigate). The URL carries the API token,
//! so it never goes on a command line, which other local users can read.
//! Closing the window ends that process and leaves the tray running; the tray's
//! end closes the child's stdin, which ends the window. Must not talk to the API
//! itself: the page does.

use crate::backend::{self, UiAddress};
use sessionpipe_core::spool::StatePaths;
use std::io::Write;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;

/// The window's program, beside this one.
const WINDOW_PROGRAM: &str = "sessionpipe-window";

/// The window process, when one runs.
#[derive(Default)]
pub struct Window {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    child: Option<(Child, ChildStdin)>,
    /// The daemon address the window was last pointed at.
    shown: Option<UiAddress>,
}

impl Window {
    /// Opens the window (or brings it forward), on `session` when given.
    pub fn open(&self, paths: &StatePaths, session: Option<&str>) {
        let address = backend::ui_address(paths);
        let line = match address.as_ref().map(|a| a.page(session)) {
            Some(page) => format!("show {page}\n"),
            None => "show\n".into(),
        };
        if let Some(key) = session {
            tracing::info!("the window opens on {key}");
        }
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if inner.alive() && inner.send(&line) {
            if address.is_some() {
                inner.shown = address;
            }
            return;
        }
        match spawn(&line) {
            Ok(child) => {
                inner.child = Some(child);
                inner.shown = address;
            }
            Err(e) => tracing::warn!("cannot open the window: {e}"),
        }
    }

    /// Points an open window at `address` when the daemon behind the UI changed
    /// since the window loaded it (or it shows the waiting page and a daemon now
    /// serves the UI). Otherwise the window is left where the person is. Also
    /// collects a window process that has ended.
    pub fn follow(&self, address: Option<&UiAddress>) {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let Some(address) = address else {
            inner.alive();
            return;
        };
        if !inner.alive() || inner.shown.as_ref() == Some(address) {
            return;
        }
        if inner.send(&format!("go {}\n", address.page(None))) {
            inner.shown = Some(address.clone());
        }
    }
}

impl Inner {
    /// Whether the window process still runs; one that ended is collected.
    fn alive(&mut self) -> bool {
        let running = match &mut self.child {
            Some((child, _)) => matches!(child.try_wait(), Ok(None)),
            None => false,
        };
        if !running {
            self.child = None;
        }
        running
    }

    /// Sends one command line; a window that cannot take it is ended.
    fn send(&mut self, line: &str) -> bool {
        let Some((child, stdin)) = self.child.as_mut() else {
            return false;
        };
        if stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.flush())
            .is_ok()
        {
            return true;
        }
        let _ = child.kill();
        let _ = child.wait();
        self.child = None;
        false
    }
}

/// Starts the window process with `first` as its first command.
fn spawn(first: &str) -> std::io::Result<(Child, ChildStdin)> {
    let exe = std::env::current_exe()?;
    let program = exe.with_file_name(format!("{WINDOW_PROGRAM}{}", std::env::consts::EXE_SUFFIX));
    let mut cmd = Command::new(&program);
    cmd.stdin(Stdio::piped()).stdout(Stdio::null());
    crate::for_the_window(&mut cmd);
    let mut child = cmd
        .spawn()
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", program.display())))?;
    let sent = match child.stdin.take() {
        Some(mut stdin) => stdin
            .write_all(first.as_bytes())
            .and_then(|()| stdin.flush())
            .map(|()| stdin),
        None => Err(std::io::Error::other("the window process has no stdin")),
    };
    sent.inspect_err(|_| {
        let _ = child.kill();
        let _ = child.wait();
    })
    .map(|stdin| (child, stdin))
}
