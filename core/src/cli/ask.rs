//! `sessionpipe ask` and `sessionpipe handoff`: one session asks another on
//! this machine, over the daemon's control socket (the book's control page,
//! "Between sessions on this machine"). `ask` waits and prints the asked
//! session's whole answer; `handoff` returns at once and the answer comes back
//! into the asking session as a message of its own.
//!
//! Only the request and its answer pass here: the daemon picks the rung,
//! runs what it runs and holds the rules (control folders, never above
//! `safe`). Nothing is printed but the answer, or the reason there is none.

use crate::cli::out::outln;
use anyhow::{Context, bail};
use spool::StatePaths;
use std::process::ExitCode;

/// The asking session: `--from`, else the Claude Code session this runs in
/// (its tools see `CLAUDE_CODE_SESSION_ID`).
fn asker(from: Option<String>) -> Option<String> {
    from.or_else(|| {
        std::env::var("CLAUDE_CODE_SESSION_ID")
            .ok()
            .filter(|id| !id.is_empty())
            .map(|id| format!("claude-code:{id}"))
    })
}

fn request(
    op: &str,
    to: &str,
    task: &str,
    from: Option<String>,
    cwd: Option<String>,
) -> anyhow::Result<serde_json::Value> {
    if task.trim().is_empty() {
        bail!("the task is empty");
    }
    let cwd = match cwd {
        Some(c) => c,
        None => std::env::current_dir()
            .context("the current folder")?
            .to_string_lossy()
            .into_owned(),
    };
    Ok(serde_json::json!({"op": op, "to": to, "task": task, "from": asker(from), "cwd": cwd}))
}

#[cfg(unix)]
fn call(paths: &StatePaths, body: &serde_json::Value) -> anyhow::Result<serde_json::Value> {
    use std::io::{Read, Write};
    let mut stream = std::os::unix::net::UnixStream::connect(paths.control_socket())
        .context("the daemon's control socket (is sessionpipe running?)")?;
    stream.write_all(format!("{body}\n").as_bytes())?;
    let mut text = String::new();
    stream.read_to_string(&mut text)?;
    serde_json::from_str(text.trim()).context("the daemon's answer")
}

#[cfg(not(unix))]
fn call(_: &StatePaths, _: &serde_json::Value) -> anyhow::Result<serde_json::Value> {
    bail!("sessionpipe ask needs a Unix socket on this version")
}

/// `TO` or `--from` as given: a harness alone stays one (a new session);
/// `harness:id` may be a unique start of the id. A whole id the outbox does
/// not know yet (a session whose first event is still on its way) goes to
/// the daemon as given: it decides.
fn named(paths: &StatePaths, given: &str) -> anyhow::Result<String> {
    use super::session_arg::{SessionArgError, qualified};
    if !given.contains(':') {
        return Ok(given.to_string());
    }
    match qualified(paths, given) {
        Ok(q) => Ok(q),
        Err(SessionArgError::NoMatch(_) | SessionArgError::NoOutbox(_))
            if given
                .split_once(':')
                .is_some_and(|(_, id)| protocol::valid_session_id(id)) =>
        {
            Ok(given.to_string())
        }
        Err(e) => Err(e.into()),
    }
}

pub fn ask(
    paths: &StatePaths,
    to: &str,
    task: &str,
    from: Option<String>,
    cwd: Option<String>,
) -> anyhow::Result<ExitCode> {
    let to = &named(paths, to)?;
    let from = from.map(|f| named(paths, &f)).transpose()?;
    let answer = call(paths, &request("ask", to, task, from, cwd)?)?;
    if let Some(e) = answer["error"].as_str() {
        bail!("{e}");
    }
    outln!("{}", answer["reply"].as_str().unwrap_or_default());
    Ok(ExitCode::SUCCESS)
}

pub fn handoff(
    paths: &StatePaths,
    to: &str,
    task: &str,
    from: Option<String>,
    cwd: Option<String>,
) -> anyhow::Result<ExitCode> {
    let to = &named(paths, to)?;
    let from = from.map(|f| named(paths, &f)).transpose()?;
    let answer = call(paths, &request("handoff", to, task, from, cwd)?)?;
    if let Some(e) = answer["error"].as_str() {
        bail!("{e}");
    }
    outln!("Handed to {to}: its answer comes back to this session as a message.");
    Ok(ExitCode::SUCCESS)
}
