//! `sessionpipe backfill [--days N] [--json]`, and the one backfill `install` runs.
//! Its progress goes to stderr (`progress`: a bar, plain lines, or `--json`
//! records) and to `progress.json` for the UI and the tray; stdout has the
//! report alone.

use crate::cli::out::outln;
use crate::cli::progress::{Show, Shown};

use crate::pipeline::outbox::Outbox;
use crate::state::progress::{Progress, Publisher};
use anyhow::Context;
use harness::install::Host;
use spool::StatePaths;
use std::process::ExitCode;

pub fn run(paths: &StatePaths, days: u32, json: bool) -> anyhow::Result<ExitCode> {
    let counts = backfill(paths, days, Show::for_stderr(json))?;
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

/// Runs the backfill, its progress shown as `show` says and filed.
pub fn backfill(
    paths: &StatePaths,
    days: u32,
    show: Show,
) -> anyhow::Result<Vec<crate::backfill::HarnessCount>> {
    paths
        .ensure()
        .with_context(|| paths.root.display().to_string())?;
    let mut outbox = Outbox::open(&paths.outbox())?;
    let host = Host::from_env().context("HOME is not set")?;
    let config = crate::state::config::Config::load(paths)?;
    let machine = config.machine();
    let mut shown = Shown::new(show);
    let mut filed = Publisher::start(paths);
    let mut progress = |p: &Progress| {
        shown.tell(p);
        filed.tell(p);
    };
    let titles = crate::titles::Titles::new(paths);
    let counts = crate::backfill::run(
        &mut outbox,
        &host,
        days,
        &machine,
        Some(&titles),
        &mut progress,
    );
    drop(filed);
    shown.finish();
    Ok(counts?)
}

/// `install` backfills once per state dir: the marker says it did.
pub fn once_after_install(paths: &StatePaths) {
    let marker = paths.backfilled_marker();
    if marker.exists() {
        return;
    }
    match backfill(paths, 30, Show::for_stderr(false)) {
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
