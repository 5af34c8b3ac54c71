//! An interactive program in a real terminal, for tests: util-linux `script`
//! gives it a pseudo-terminal (120 columns, 40 rows), a thread keeps every byte
//! it draws, and the test reads the screen roughly ([`Terminal::visible`]) and
//! types into it like a person. What the real interactive harnesses need
//! (Claude Code runs its status line and shows its dialogs only in one).
//!
//! It owns starting, reading and typing only: it knows no harness, writes no
//! config and never decides what a screen means.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// util-linux `script` from `PATH`; otherwise skip or fail as a missing
/// harness does ([`crate::harnesses::missing`]).
pub fn script_program() -> Option<PathBuf> {
    let found = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("script"))
        .find(|p| p.is_file());
    if found.is_none() {
        return crate::harnesses::missing(
            "util-linux `script` (a terminal for the interactive harnesses) is not on PATH",
        );
    }
    found
}

/// `'text'` for `sh`.
fn quoted(text: &std::ffi::OsStr) -> String {
    format!("'{}'", text.to_string_lossy().replace('\'', "'\\''"))
}

/// A program running in a terminal; killed when dropped.
pub struct Terminal {
    child: Child,
    screen: Arc<Mutex<Vec<u8>>>,
}

impl Terminal {
    /// Starts `program` (its arguments, working directory and the variables set
    /// on it; nothing else of this process's environment) in a terminal made by
    /// `script`. `TERM` is `xterm-256color` unless `program` sets it.
    pub fn start(script: &Path, program: &Command) -> Terminal {
        let mut line = format!(
            "stty cols 120 rows 40; exec {}",
            quoted(program.get_program())
        );
        for arg in program.get_args() {
            line.push(' ');
            line.push_str(&quoted(arg));
        }
        let mut c = Command::new(script);
        c.env_clear().env("TERM", "xterm-256color");
        for (key, value) in program.get_envs() {
            match value {
                Some(v) => c.env(key, v),
                None => c.env_remove(key),
            };
        }
        if let Some(dir) = program.get_current_dir() {
            c.current_dir(dir);
        }
        let mut child = c
            .args(["-q", "-e", "-c", &line, "/dev/null"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("script runs");
        let screen = Arc::new(Mutex::new(Vec::new()));
        let mut out = child.stdout.take().expect("stdout is piped");
        let sink = screen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = out.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .extend_from_slice(&buf[..n]);
            }
        });
        Terminal { child, screen }
    }

    /// Every byte drawn so far, escape sequences and all.
    pub fn screen(&self) -> String {
        let bytes = self.screen.lock().unwrap_or_else(|p| p.into_inner());
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// What the terminal showed so far, roughly: escape sequences and spaces
    /// taken out (Claude Code moves the cursor between words instead of
    /// printing spaces). A program that redraws only the cells that changed
    /// leaves out a letter already on the screen there (Claude Code once drew
    /// "1. Yes" as `1.Ys`), so wait for short phrases.
    pub fn visible(&self) -> String {
        let screen = self.screen();
        let mut out = String::new();
        let mut chars = screen.chars().peekable();
        while let Some(c) = chars.next() {
            match (c, chars.peek()) {
                ('\u{1b}', Some('[')) => {
                    chars.next();
                    while chars.next().is_some_and(|c| !('@'..='~').contains(&c)) {}
                }
                ('\u{1b}', Some(']')) => {
                    while chars.next().is_some_and(|c| c != '\u{7}' && c != '\u{1b}') {}
                }
                (c, _) if c.is_whitespace() || c.is_control() => {}
                (c, _) => out.push(c),
            }
        }
        out
    }

    /// Waits until [`Terminal::visible`] holds `text` (written without spaces);
    /// panics with the screen when `timeout` passes first.
    pub fn wait_for_text(&self, text: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while !self.visible().contains(text) {
            assert!(
                Instant::now() < deadline,
                "the terminal never showed {text:?}; the screen:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Sends `keys` as they are (a key press: `"1"`, `"\r"`, `"\u{1b}"`).
    pub fn press(&mut self, keys: &str) {
        let stdin = self.child.stdin.as_mut().expect("stdin is piped");
        stdin
            .write_all(keys.as_bytes())
            .expect("the terminal takes keys");
        stdin.flush().expect("the terminal takes keys");
    }

    /// Types like a person (a burst would read as a paste) and presses Enter.
    pub fn type_line(&mut self, text: &str) {
        for c in text.chars() {
            self.press(&c.to_string());
            std::thread::sleep(Duration::from_millis(30));
        }
        std::thread::sleep(Duration::from_millis(300));
        self.press("\r");
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
