//! `sessionpipe ui --open`: the person's browser opened on the UI. It owns
//! choosing the opener (`$BROWSER` when set, as xdg-open and most tools take
//! it, else the desktop's own: `xdg-open`, macOS `open`, Windows `start`) and
//! saying plainly when there is none. It opens a file, never a URL carrying
//! the token: a command line is readable by every user of the machine.

use std::path::Path;
use std::process::{Command, Stdio};

#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    #[error(
        "no way to open a browser here ({tried} did not start: {why}); open the address `sessionpipe ui` prints"
    )]
    NoOpener { tried: String, why: std::io::Error },
    #[error("{opener} failed ({status}); open the address `sessionpipe ui` prints")]
    Failed {
        opener: String,
        status: std::process::ExitStatus,
    },
}

/// Opens `file` in the browser and waits for the opener (not the browser).
pub fn open(file: &Path) -> Result<(), BrowserError> {
    let mut cmd = opener();
    let shown = format!("{:?}", cmd.get_program());
    let status = cmd
        .arg(file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|why| BrowserError::NoOpener {
            tried: shown.clone(),
            why,
        })?;
    if status.success() {
        Ok(())
    } else {
        Err(BrowserError::Failed {
            opener: shown,
            status,
        })
    }
}

fn opener() -> Command {
    // `$BROWSER` may hold several, `:`-separated (the first is tried).
    if let Some(first) = std::env::var("BROWSER")
        .ok()
        .and_then(|b| b.split(':').next().map(str::to_string))
        .filter(|b| !b.trim().is_empty())
    {
        return Command::new(first);
    }
    if cfg!(target_os = "macos") {
        Command::new("open")
    } else if cfg!(windows) {
        let mut c = Command::new("cmd");
        c.args(["/C", "start", ""]);
        c
    } else {
        Command::new("xdg-open")
    }
}
