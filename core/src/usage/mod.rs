//! Layer 3, usage: the tokens the person's agents used, and what they would
//! cost at API prices, as `sessionpipe usage` and the local API's Usage
//! answers say them.
//!
//! Reads the outbox's usage sums (`pipeline::outbox::usage`, filled by the
//! daemon's transcript reads and by backfill) and prices them at read time
//! (`prices`): cost is never stored, so a new price table or an override in
//! config.json reprices the past. The cost is always the API-equivalent one
//! (list prices per token): for a subscription it is what the same tokens
//! would have cost, not what was paid, and every answer says so. Reads only;
//! nothing here is sent anywhere.

pub mod glance;
pub mod prices;

use crate::pipeline::outbox::usage::{Cell, Grouping, Span, SumKey, Tokens};
use crate::pipeline::outbox::{Outbox, OutboxError};
use prices::{PriceSource, Priced, Prices};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

const DAY_MS: i64 = 86_400_000;

/// Said beside every cost.
pub const COST_NOTE: &str = "cost is at API list prices: for a subscription, what the same tokens \
     would cost through the API, not what was paid";

/// What a report is grouped by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum By {
    Day,
    Session,
    Harness,
    Account,
    Model,
}

impl By {
    fn grouping(self) -> Grouping {
        Grouping {
            day: self == By::Day,
            harness: self == By::Session || self == By::Harness,
            session: self == By::Session,
            account: self == By::Account,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            By::Day => "day",
            By::Session => "session",
            By::Harness => "harness",
            By::Account => "account",
            By::Model => "model",
        }
    }
}

/// Why a `--since` is not a time.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "{0:?} is not a time: a number of days (7d), a date (2026-11-01, its midnight here) or RFC 3339"
)]
pub struct NotATime(pub String);

/// A `since`: `7d` (days before `now_ms`), a date (its midnight where the
/// clock is `tz_offset_minutes` from UTC) or an RFC 3339 time; epoch ms.
pub fn parse_since(s: &str, now_ms: i64, tz_offset_minutes: i32) -> Result<i64, NotATime> {
    let s = s.trim();
    if let Some(days) = s.strip_suffix('d').and_then(|d| d.parse::<u32>().ok()) {
        return Ok(now_ms - i64::from(days) * DAY_MS);
    }
    if s.len() == 10 {
        return protocol::time::parse_rfc3339_ms(&format!("{s}T00:00:00Z"))
            .map(|utc| utc - i64::from(tz_offset_minutes) * 60_000)
            .ok_or_else(|| NotATime(s.to_string()));
    }
    protocol::time::parse_rfc3339_ms(s).ok_or_else(|| NotATime(s.to_string()))
}

/// This machine's offset from UTC at `now_ms`, in whole quarter hours (what
/// the usage sums' days can start at): the CLI's and the tray's days.
pub fn local_offset_minutes(now_ms: i64) -> i32 {
    let Ok(t) = jiff::Timestamp::from_millisecond(now_ms) else {
        return 0;
    };
    let minutes = t
        .to_zoned_datetime(jiff::tz::TimeZone::system())
        .offset()
        .seconds()
        / 60;
    (f64::from(minutes) / 15.0).round() as i32 * 15
}

/// One model's tokens in a row, and their cost.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ModelUsage {
    /// As the harness named it (`""`: none named).
    pub model: String,
    pub tokens: Tokens,
    /// At API list prices; `null`: the model has no price.
    pub api_equivalent_usd: Option<f64>,
    /// The price table's name it was priced under.
    pub priced_as: Option<String>,
}

/// One row of a report: its key (a day `YYYY-MM-DD`, `harness:session`, a
/// harness, an account, a model), its tokens and its cost.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct UsageRow {
    pub key: String,
    pub tokens: Tokens,
    /// The cost of its priced models at API list prices (`null`: none is).
    pub api_equivalent_usd: Option<f64>,
    /// Models in the row with no price: their tokens are counted, not their cost.
    pub unpriced: Vec<String>,
    /// The newest activity in the row (epoch ms, to the quarter hour).
    pub last_ms: i64,
    pub models: Vec<ModelUsage>,
}

/// `sessionpipe usage --json` and `GET /api/usage`.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct UsageReport {
    pub by: By,
    /// The span, epoch ms: from `since`, up to now.
    pub since_ms: i64,
    pub until_ms: i64,
    /// Days start at midnight this many minutes from UTC.
    pub tz_offset_minutes: i32,
    /// Newest first for days; most costly (then most tokens) first otherwise.
    pub rows: Vec<UsageRow>,
    pub total: UsageRow,
    pub prices: PriceSource,
    pub note: String,
}

/// What a report reads: the span, the days' time zone, the grouping.
#[derive(Clone, Copy, Debug)]
pub struct Ask {
    pub since_ms: i64,
    pub until_ms: i64,
    pub tz_offset_minutes: i32,
    pub by: By,
}

/// The report `ask` asks for, from `ob`'s sums at `prices` (no outbox yet:
/// nothing used).
pub fn report(ob: Option<&Outbox>, prices: &Prices, ask: Ask) -> Result<UsageReport, OutboxError> {
    let cells = cells_of(ob, &ask, ask.by.grouping())?;
    let mut rows: BTreeMap<String, Vec<Cell>> = BTreeMap::new();
    for c in cells {
        rows.entry(key_of(ask.by, &c)).or_default().push(c);
    }
    let mut rows: Vec<UsageRow> = rows
        .into_iter()
        .map(|(key, cells)| row(prices, key, cells.iter()))
        .collect();
    sort(ask.by, &mut rows);
    let everything: Vec<Cell> = rows
        .iter()
        .flat_map(|r| r.models.iter().map(|m| cell_of(m, r.last_ms)))
        .collect();
    let total = row(prices, "total".into(), everything.iter());
    Ok(UsageReport {
        by: ask.by,
        since_ms: ask.since_ms,
        until_ms: ask.until_ms,
        tz_offset_minutes: ask.tz_offset_minutes,
        rows,
        total,
        prices: prices.source.clone(),
        note: COST_NOTE.into(),
    })
}

/// One day's tokens of one harness, account and model (`GET /api/usage/days`).
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct DayCell {
    /// `YYYY-MM-DD`, in the asked time zone.
    pub day: String,
    pub harness: String,
    /// `""`: not known.
    pub account: String,
    pub model: String,
    pub tokens: Tokens,
    /// At API list prices; `null`: the model has no price.
    pub api_equivalent_usd: Option<f64>,
}

/// Each day's tokens per harness, account and model in the span, days in
/// order (the Usage page's chart and its filters).
pub fn day_cells(
    ob: Option<&Outbox>,
    prices: &Prices,
    ask: Ask,
) -> Result<Vec<DayCell>, OutboxError> {
    let g = Grouping {
        day: true,
        harness: true,
        session: false,
        account: true,
    };
    let cells = cells_of(ob, &ask, g)?;
    let mut out: Vec<DayCell> = cells
        .into_iter()
        .map(|c| DayCell {
            api_equivalent_usd: prices.cost(&c.model, &c.tokens).usd(),
            day: c.day.map(day_text).unwrap_or_default(),
            harness: c.harness.unwrap_or_default(),
            account: c.account.unwrap_or_default(),
            model: c.model,
            tokens: c.tokens,
        })
        .collect();
    out.sort_by(|a, b| {
        (&a.day, &a.harness, &a.account, &a.model).cmp(&(&b.day, &b.harness, &b.account, &b.model))
    });
    Ok(out)
}

/// The `limit` sessions that cost most in `ask`'s span (then used most
/// tokens, then by key), most first: the first rows of `report` by session,
/// made for those sessions only. A year is 20 000 sessions; they are ranked
/// on the sums' numbers, and texts and rows are made for the few kept.
pub fn top_sessions(
    ob: Option<&Outbox>,
    prices: &Prices,
    ask: Ask,
    limit: usize,
) -> Result<Vec<UsageRow>, OutboxError> {
    let Some(ob) = ob else {
        return Ok(Vec::new());
    };
    let sums = ob.usage_sums(&span_of(&ask), By::Session.grouping())?;
    let session = |k: &SumKey| [k.texts[SumKey::HARNESS], k.texts[SumKey::SESSION]];
    let mut model_price = HashMap::new();
    let mut ranks: HashMap<[u32; 2], (f64, u64)> = HashMap::new();
    for (k, tokens, _) in sums.groups() {
        let model = k.texts[SumKey::MODEL];
        let price = *model_price
            .entry(model)
            .or_insert_with(|| prices.find(sums.text(model).unwrap_or("")).map(|(_, p)| p));
        let rank = ranks.entry(session(k)).or_default();
        rank.0 += price.and_then(|p| prices::usd_at(p, tokens)).unwrap_or(0.0);
        rank.1 += tokens.total();
    }
    let key = |s: &[u32; 2]| {
        let text = |n| sums.text(n).unwrap_or("");
        format!("{}:{}", text(s[0]), text(s[1]))
    };
    let order = |a: &([u32; 2], (f64, u64)), b: &([u32; 2], (f64, u64))| {
        (b.1.0)
            .total_cmp(&a.1.0)
            .then(b.1.1.cmp(&a.1.1))
            .then_with(|| key(&a.0).cmp(&key(&b.0)))
    };
    let mut ranked: Vec<([u32; 2], (f64, u64))> = ranks.into_iter().collect();
    if ranked.len() > limit {
        ranked.select_nth_unstable_by(limit, order);
        ranked.truncate(limit);
    }
    ranked.sort_by(order);
    let place: HashMap<[u32; 2], usize> = ranked
        .iter()
        .enumerate()
        .map(|(i, (s, _))| (*s, i))
        .collect();
    let mut cells: Vec<Vec<Cell>> = vec![Vec::new(); ranked.len()];
    for (k, tokens, last) in sums.groups() {
        if let Some(&i) = place.get(&session(k)) {
            cells[i].push(sums.cell(k, tokens, last));
        }
    }
    Ok(ranked
        .iter()
        .zip(cells)
        .map(|((s, _), cells)| row(prices, key(s), cells.iter()))
        .collect())
}

/// The sums `ask` spans, grouped by `g` (none without an outbox yet).
fn cells_of(ob: Option<&Outbox>, ask: &Ask, g: Grouping) -> Result<Vec<Cell>, OutboxError> {
    match ob {
        Some(ob) => ob.usage_cells(&span_of(ask), g),
        None => Ok(Vec::new()),
    }
}

/// The sums' span `ask` asks for.
fn span_of(ask: &Ask) -> Span<'static> {
    Span {
        from_ms: ask.since_ms,
        until_ms: ask.until_ms,
        offset_minutes: ask.tz_offset_minutes,
        only: None,
    }
}

/// A day (days since 1970-01-01) as `YYYY-MM-DD`.
pub fn day_text(day: i64) -> String {
    protocol::time::rfc3339_ms(day * DAY_MS)[..10].to_string()
}

fn key_of(by: By, c: &Cell) -> String {
    let text = |s: &Option<String>| s.clone().unwrap_or_default();
    match by {
        By::Day => c.day.map(day_text).unwrap_or_default(),
        By::Session => format!("{}:{}", text(&c.harness), text(&c.session)),
        By::Harness => text(&c.harness),
        By::Account => text(&c.account),
        By::Model => c.model.clone(),
    }
}

/// One model's line of a row back as a cell, for the total.
fn cell_of(m: &ModelUsage, last_ms: i64) -> Cell {
    Cell {
        day: None,
        harness: None,
        session: None,
        account: None,
        model: m.model.clone(),
        tokens: m.tokens,
        last_ms,
    }
}

/// A row from its cells: summed per model, each model priced.
pub fn row<'a>(prices: &Prices, key: String, cells: impl Iterator<Item = &'a Cell>) -> UsageRow {
    let mut per_model: BTreeMap<String, Tokens> = BTreeMap::new();
    let mut last_ms = 0;
    for c in cells {
        per_model.entry(c.model.clone()).or_default().add(&c.tokens);
        last_ms = last_ms.max(c.last_ms);
    }
    let mut out = UsageRow {
        key,
        tokens: Tokens::default(),
        api_equivalent_usd: None,
        unpriced: Vec::new(),
        last_ms,
        models: Vec::new(),
    };
    for (model, tokens) in per_model {
        out.tokens.add(&tokens);
        let (usd, priced_as) = match prices.cost(&model, &tokens) {
            Priced::Usd { usd, as_model } => (Some(usd), Some(as_model)),
            Priced::None => (None, None),
        };
        match usd {
            Some(usd) => *out.api_equivalent_usd.get_or_insert(0.0) += usd,
            None => out.unpriced.push(model.clone()),
        }
        out.models.push(ModelUsage {
            model,
            tokens,
            api_equivalent_usd: usd,
            priced_as,
        });
    }
    out
}

/// Days newest first; anything else by cost, then tokens, then its key.
fn sort(by: By, rows: &mut [UsageRow]) {
    if by == By::Day {
        rows.sort_by(|a, b| b.key.cmp(&a.key));
        return;
    }
    rows.sort_by(|a, b| {
        let cost = |r: &UsageRow| r.api_equivalent_usd.unwrap_or(0.0);
        cost(b)
            .total_cmp(&cost(a))
            .then(b.tokens.total().cmp(&a.tokens.total()))
            .then(a.key.cmp(&b.key))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::usage::Usage;

    #[test]
    fn since_is_days_a_date_or_a_time() {
        let now = 1_796_000_000_000;
        assert_eq!(parse_since("7d", now, 0), Ok(now - 7 * DAY_MS));
        assert_eq!(
            parse_since("2026-11-01", now, 0).map(protocol::time::rfc3339_ms),
            Ok("2026-11-01T00:00:00.000Z".to_string())
        );
        // A date is its midnight where the clock is: India's is 18:30 UTC before.
        assert_eq!(
            parse_since("2026-11-01", now, 330).map(protocol::time::rfc3339_ms),
            Ok("2026-10-31T18:30:00.000Z".to_string())
        );
        assert!(parse_since("2026-11-01T09:30:00Z", now, 60).is_ok());
        assert!(parse_since("last week", now, 0).is_err());
        assert_eq!(day_text(20_000), "2024-10-04");
    }

    /// Two sessions, two models (one priced by config.json, one priced
    /// nowhere): each grouping adds the same tokens, and only the priced
    /// model has a cost.
    #[test]
    fn a_report_groups_sums_and_prices_what_has_a_price() {
        let dir = tempfile::tempdir().unwrap();
        let mut ob = Outbox::open(&dir.path().join("o.db")).unwrap();
        let now = 1_796_000_000_000 / DAY_MS * DAY_MS + 12 * 3_600_000;
        let u = |key: &str, model: &str, at_ms: i64| Usage {
            key: key.into(),
            at_ms,
            model: Some(model.into()),
            input: 1_000_000,
            output: 100_000,
            cache_read: 0,
            cache_write: 0,
        };
        let block = protocol::SessionBlock {
            account_id: Some("acct-1".into()),
            ..Default::default()
        };
        let tx = ob.begin().unwrap();
        tx.put_usage(
            "claude-code",
            "s1",
            &block,
            &[u("m1", "priced", now), u("m2", "priced", now - DAY_MS)],
        )
        .unwrap();
        tx.put_usage(
            "codex",
            "s2",
            &Default::default(),
            &[u("r1", "mystery", now)],
        )
        .unwrap();
        tx.commit().unwrap();
        let price = crate::state::config::ModelPrice {
            input: 2.0,
            output: 10.0,
            ..Default::default()
        };
        let prices = Prices::new(&BTreeMap::from([("priced".to_string(), price)]));
        let ask = |by| Ask {
            since_ms: now - 7 * DAY_MS,
            until_ms: now + DAY_MS,
            tz_offset_minutes: 0,
            by,
        };
        for by in [By::Day, By::Session, By::Harness, By::Account, By::Model] {
            let r = report(Some(&ob), &prices, ask(by)).unwrap();
            assert_eq!(r.total.tokens.input, 3_000_000, "{by:?}");
            assert_eq!(r.total.api_equivalent_usd, Some(6.0), "{by:?}");
            assert_eq!(r.total.unpriced, ["mystery"], "{by:?}");
        }
        let days = report(Some(&ob), &prices, ask(By::Day)).unwrap();
        let keys: Vec<&str> = days.rows.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, [day_text(now / DAY_MS), day_text(now / DAY_MS - 1)]);
        let sessions = report(Some(&ob), &prices, ask(By::Session)).unwrap();
        assert_eq!(
            sessions.rows[0].key, "claude-code:s1",
            "the costly one first"
        );
        assert_eq!(sessions.rows[1].api_equivalent_usd, None);
        for limit in [0, 1, 2, 5] {
            let top = top_sessions(Some(&ob), &prices, ask(By::Session), limit).unwrap();
            let want = &sessions.rows[..limit.min(sessions.rows.len())];
            let keys = |rows: &[UsageRow]| -> Vec<(String, Tokens, Option<f64>)> {
                rows.iter()
                    .map(|r| (r.key.clone(), r.tokens, r.api_equivalent_usd))
                    .collect()
            };
            assert_eq!(keys(&top), keys(want), "the top {limit}");
        }
        let accounts = report(Some(&ob), &prices, ask(By::Account)).unwrap();
        let keys: Vec<&str> = accounts.rows.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, ["acct-1", ""]);
    }
}
