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

pub fn run(paths: &StatePaths, days: u32, only: &[String], json: bool) -> anyhow::Result<ExitCode> {
    let counts = backfill(paths, days, only, Show::for_stderr(json))?;
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&counts).expect("counts serialise")
        );
    } else {
        for c in counts.iter().filter(|c| c.found > 0) {
            outln!(
                "{}: {}, {} added, {} already known",
                c.harness,
                crate::cli::out::count(c.found as u64, "session", "sessions"),
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
    only: &[String],
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
        only,
        &machine,
        Some(&titles),
        &mut progress,
    );
    drop(filed);
    shown.finish();
    Ok(counts?)
}

/// `install` backfills once per state dir (30 days; `days` when asked,
/// which runs even after the first): the marker says it did. Its progress
/// is JSON records when `install --json` was asked for.
pub fn once_after_install(paths: &StatePaths, days: Option<u32>, json: bool) {
    let marker = paths.backfilled_marker();
    if marker.exists() && days.is_none() {
        return;
    }
    let days = days.unwrap_or(30);
    match backfill(paths, days, &[], Show::for_stderr(json)) {
        Ok(counts) => {
            let added: usize = counts.iter().map(|c| c.added).sum();
            eprintln!(
                "backfill: {} of the last {} queued",
                crate::cli::out::count(added as u64, "past session", "past sessions"),
                crate::cli::out::count(u64::from(days), "day", "days")
            );
            // A state file like every other: private from its first byte.
            let _ = spool::files::write_private_file(
                &marker,
                protocol::time::rfc3339_ms(protocol::time::now_ms()).as_bytes(),
            );
        }
        Err(e) => eprintln!("backfill skipped: {e:#}"),
    }
}
