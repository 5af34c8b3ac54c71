//! `sessionpipe channel`: runs the MCP server of Claude Code's channel on this
//! process's stdin and stdout (`control::channel`), for the session that
//! started it.
//!
//! Owns only the choice of session and whether to wait at all. Stdout is the
//! protocol's: nothing here prints to it, and what goes wrong goes to stderr,
//! which Claude Code keeps in its MCP log.

use crate::control::channel::{self, Waiter};
use anyhow::bail;
use spool::StatePaths;
use std::process::ExitCode;

/// The harness whose sessions have a channel.
const HARNESS: &str = "claude-code";

pub fn run(paths: &StatePaths, session: Option<&str>) -> anyhow::Result<ExitCode> {
    let session = match session {
        Some(s) if s.contains(':') => Some(s.to_string()),
        Some(s) if !s.is_empty() => Some(format!("{HARNESS}:{s}")),
        Some(_) => bail!("--session is <harness>:<id> or a Claude Code session id"),
        // Claude Code names its session to every MCP server it starts.
        None => std::env::var("CLAUDE_CODE_SESSION_ID")
            .ok()
            .filter(|id| !id.is_empty())
            .map(|id| format!("{HARNESS}:{id}")),
    };
    let waiter = match session {
        None => {
            eprintln!(
                "sessionpipe channel: no session (no --session, no CLAUDE_CODE_SESSION_ID): answering only"
            );
            None
        }
        // A session that didn't ask for the channel would drop every message
        // it was handed, so none is taken for it.
        Some(_) if !channel::started_with_channel() => {
            eprintln!(
                "sessionpipe channel: this session did not ask for the channel (an interactive `claude {} server:{}`): answering only",
                channel::FLAG,
                channel::SERVER
            );
            None
        }
        Some(s) => Some(Waiter::new(paths.control_socket(), s)),
    };
    let stdin = std::io::stdin().lock();
    channel::serve(stdin, std::io::stdout(), waiter)?;
    Ok(ExitCode::SUCCESS)
}
