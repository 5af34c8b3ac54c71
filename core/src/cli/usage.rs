//! `sessionpipe usage`: the tokens the agents used and their cost at API
//! prices, grouped by day, session, harness, account or model, as a table on
//! a terminal or one JSON document (`--json`, the shape of `GET /api/usage`).
//!
//! Reads the outbox read-only (with or without a daemon) and config.json's
//! `prices`; the report itself is `crate::usage`'s. Never writes.

use crate::cli::out::outln;
use crate::pipeline::outbox::Outbox;
use crate::state::config::Config;
use crate::usage::prices::Prices;
use crate::usage::{Ask, By, UsageReport, UsageRow};
use anyhow::Context;
use spool::StatePaths;
use std::process::ExitCode;

pub fn run(paths: &StatePaths, since: &str, by: By, json: bool) -> anyhow::Result<ExitCode> {
    let now = protocol::time::now_ms();
    // Days and dates are this machine's, as its person reads them.
    let tz = crate::usage::local_offset_minutes(now);
    let since_ms = crate::usage::parse_since(since, now, tz).context("--since")?;
    // A config.json that does not read prices nothing over the shipped table
    // (said), rather than refusing the report.
    let overrides = match Config::load(paths) {
        Ok(c) => c.prices,
        Err(e) => {
            tracing::warn!("config.json does not read ({e}); its prices are not used");
            Default::default()
        }
    };
    let prices = Prices::new(&overrides);
    let ask = Ask {
        since_ms,
        until_ms: now + 1,
        tz_offset_minutes: tz,
        by,
    };
    let ob = Outbox::open_readonly(&paths.outbox())?;
    let report = crate::usage::report(ob.as_ref(), &prices, ask)?;
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&report).expect("a report serialises")
        );
    } else {
        print_table(&report);
    }
    Ok(ExitCode::SUCCESS)
}

/// The report as columns: the row's key, responses, each kind of token, cost.
fn print_table(r: &UsageReport) {
    let head = match r.by {
        By::Day => "day",
        By::Session => "session",
        By::Harness => "harness",
        By::Account => "account",
        By::Model => "model",
    };
    let width = r
        .rows
        .iter()
        .map(|row| shown_key(r.by, row).chars().count())
        .chain([head.len(), 5])
        .max()
        .unwrap_or(5);
    outln!(
        "{head:<width$}  {:>9}  {:>12}  {:>12}  {:>12}  {:>12}  {:>12}",
        "responses",
        "input",
        "output",
        "cache read",
        "cache write",
        "cost (API)"
    );
    for row in &r.rows {
        line(&shown_key(r.by, row), row, width);
    }
    line("total", &r.total, width);
    if !r.total.unpriced.is_empty() {
        outln!(
            "* no price for {}: their tokens are counted, their cost is not",
            r.total.unpriced.join(", ")
        );
    }
    outln!(
        "since {}; prices: {} of {}{}",
        protocol::time::rfc3339_ms(r.since_ms),
        r.prices.source,
        r.prices.date,
        if r.prices.overridden.is_empty() {
            String::new()
        } else {
            format!(", config.json's for {}", r.prices.overridden.join(", "))
        }
    );
    outln!("{}", r.note);
}

fn shown_key(by: By, row: &UsageRow) -> String {
    match (by, row.key.as_str()) {
        (By::Account, "") => "(unknown)".into(),
        (By::Model, "") => "(not named)".into(),
        _ => row.key.clone(),
    }
}

fn line(key: &str, row: &UsageRow, width: usize) {
    let t = &row.tokens;
    let cost = match (row.api_equivalent_usd, row.unpriced.is_empty()) {
        (Some(usd), true) => format!("${usd:.2}"),
        (Some(usd), false) => format!("${usd:.2}*"),
        (None, _) => "no price*".into(),
    };
    outln!(
        "{key:<width$}  {:>9}  {:>12}  {:>12}  {:>12}  {:>12}  {cost:>12}",
        t.responses,
        t.input,
        t.output,
        t.cache_read,
        t.cache_write
    );
}
