//! `sessionpipe status`: hooks per harness, the daemon, the spool, the outbox,
//! and each sink: how far behind it is and its last error.

use crate::install::{self, Host, Installer};
use crate::outbox::Outbox;
use crate::paths::StatePaths;
use crate::spool::Spool;
use serde_json::json;
use std::process::ExitCode;

pub fn run(paths: &StatePaths, as_json: bool) -> Result<ExitCode, String> {
    let host = Host::from_env()?;
    let hook_bin = install::hook_binary()?;
    let installer = Installer {
        host: &host,
        state_dir: &paths.root,
        hook_bin: &hook_bin,
        dry_run: true,
        opt_in: &[],
    };
    let harnesses: Vec<_> = install::select(&[])?
        .into_iter()
        .map(|a| installer.status(a))
        .collect();
    let daemon = crate::daemon::running(paths);
    let (pending, quarantined) = Spool::new(paths.spool(), paths.quarantine()).counts();
    let reader = Outbox::open_readonly(&paths.outbox()).map_err(|e| format!("outbox: {e}"))?;
    let outbox = match &reader {
        Some(o) => Some(o.counts().map_err(|e| format!("outbox: {e}"))?),
        None => None,
    };
    let sinks: Vec<serde_json::Value> = crate::sinks::SinkList::load(paths)?
        .sinks
        .iter()
        .map(|s| {
            // Events stored after the cursor: an upper bound of what it still
            // has to get (some are filtered out for its tier).
            let behind = reader
                .as_ref()
                .and_then(|o| o.sink_cursor(&s.id).and_then(|c| o.count_after(c)).ok())
                .unwrap_or(0);
            json!({"sink": s, "behind": behind, "line": s.describe()})
        })
        .collect();

    if as_json {
        let doc = json!({
            "harnesses": harnesses,
            "daemon": daemon.as_ref().map(|(pid, mode)| json!({"pid": pid, "mode": mode})),
            "spool": {"pending": pending, "quarantined": quarantined},
            "outbox": outbox.as_ref().map(|c| json!({"events": c.events, "sessions": c.sessions})),
            "sinks": sinks,
            "state_dir": paths.root,
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&doc).expect("status serialises")
        );
        return Ok(ExitCode::SUCCESS);
    }
    for h in &harnesses {
        println!("{}", h.line());
    }
    match daemon {
        Some((pid, mode)) => println!("daemon: running (pid {pid}, {mode})"),
        None => println!("daemon: not running (hooks start a worker when they fire)"),
    }
    println!("spool: {pending} waiting, {quarantined} quarantined");
    match outbox {
        Some(c) => println!("outbox: {} events from {} sessions", c.events, c.sessions),
        None => println!("outbox: empty"),
    }
    if sinks.is_empty() {
        println!("sinks: none (events stay on this machine)");
    }
    for s in &sinks {
        let error = s["sink"]["last_error"]
            .as_str()
            .map(|e| format!("; last error: {e}"))
            .unwrap_or_default();
        println!(
            "sink {}: {} events behind{error}",
            s["line"].as_str().unwrap_or(""),
            s["behind"]
        );
    }
    Ok(ExitCode::SUCCESS)
}
