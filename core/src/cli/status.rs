//! `sessionpipe status`: hooks per harness, the daemon, the spool, the outbox.

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
    let outbox = match Outbox::open_readonly(&paths.outbox()).map_err(|e| format!("outbox: {e}"))? {
        Some(o) => Some(o.counts().map_err(|e| format!("outbox: {e}"))?),
        None => None,
    };

    if as_json {
        let doc = json!({
            "harnesses": harnesses,
            "daemon": daemon.as_ref().map(|(pid, mode)| json!({"pid": pid, "mode": mode})),
            "spool": {"pending": pending, "quarantined": quarantined},
            "outbox": outbox.as_ref().map(|c| json!({"events": c.events, "sessions": c.sessions})),
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
    Ok(ExitCode::SUCCESS)
}
