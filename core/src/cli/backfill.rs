//! `sessionpipe backfill [--days N] [--json]`, and the one backfill `install` runs.

use crate::cli::out::outln;

use crate::pipeline::outbox::Outbox;
use anyhow::Context;
use harness::install::Host;
use spool::StatePaths;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

pub fn run(paths: &StatePaths, days: u32, json: bool) -> anyhow::Result<ExitCode> {
    let counts = backfill(paths, days, !json)?;
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&counts).expect("counts serialise")
        );
    } else {
        for c in counts.iter().filter(|c| c.found > 0) {
            outln!(
                "{}: {} sessions, {} added, {} already known",
                c.harness,
                c.found,
                c.added,
                c.known
            );
        }
        if counts.iter().all(|c| c.found == 0) {
            outln!("no sessions in the last {days} days");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs the backfill, with a progress line on stderr when it is a terminal.
pub fn backfill(
    paths: &StatePaths,
    days: u32,
    show: bool,
) -> anyhow::Result<Vec<crate::backfill::HarnessCount>> {
    paths
        .ensure()
        .with_context(|| paths.root.display().to_string())?;
    let mut outbox = Outbox::open(&paths.outbox())?;
    let host = Host::from_env().context("HOME is not set")?;
    let config = crate::state::config::Config::load(paths)?;
    let machine = config.machine();
    let tty = show && std::io::stderr().is_terminal();
    let mut progress = |harness: &str, done: usize, total: usize| {
        if tty && (done == total || done.is_multiple_of(25)) {
            let width = 30;
            let filled = done * width / total.max(1);
            let bar = format!("{}{}", "#".repeat(filled), "-".repeat(width - filled));
            let _ = write!(std::io::stderr(), "\r{harness:<12} [{bar}] {done}/{total}");
            if done == total {
                let _ = writeln!(std::io::stderr());
            }
        }
    };
    let titles = crate::titles::Titles::new(paths);
    Ok(crate::backfill::run(
        &mut outbox,
        &host,
        days,
        &machine,
        Some(&titles),
        &mut progress,
    )?)
}

/// `install` backfills once per state dir: the marker says it did.
pub fn once_after_install(paths: &StatePaths) {
    let marker = paths.backfilled_marker();
    if marker.exists() {
        return;
    }
    match backfill(paths, 30, true) {
        Ok(counts) => {
            let added: usize = counts.iter().map(|c| c.added).sum();
            eprintln!("backfill: {added} past sessions of the last 30 days queued");
            let _ = std::fs::write(
                &marker,
                protocol::time::rfc3339_ms(protocol::time::now_ms()),
            );
        }
        Err(e) => eprintln!("backfill skipped: {e:#}"),
    }
}
