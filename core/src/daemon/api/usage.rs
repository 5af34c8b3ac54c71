//! The Usage page's answers: `GET /api/usage` (the report `sessionpipe usage
//! --json` prints), `GET /api/usage/days` (each day per harness, account and
//! model), `GET /api/usage/sessions` (the sessions that used most) and
//! `GET /api/usage/limits` (each account's windows and their pace: `pace`).
//!
//! Each reads the outbox's usage sums read-only and prices them with the
//! settings in force (`prices` over the shipped table); nothing is written
//! and nothing leaves the machine. The report is `crate::usage`'s; this
//! owns the queries' words and the answers' shapes (`shapes`).

use super::error::ApiError;
use super::shapes::{LimitStanding, UsageDays, UsageLimits, UsageSession, UsageSessions};
use super::views::Ctx;
use crate::pipeline::outbox::Outbox;
use crate::runtime::blocking;
use crate::usage::prices::Prices;
use crate::usage::{Ask, By, COST_NOTE};
use axum::Json;
use axum::extract::{Query, State};

/// A usage answer, serialised straight into the response's bytes: a year's
/// days are 3 000 cells, which as a `serde_json::Value` first took ten times
/// their 800 KB of JSON (and the daemon kept the memory).
type Answer<T> = Result<Json<T>, ApiError>;

/// The query every usage answer takes.
#[derive(serde::Deserialize)]
pub struct UsageQuery {
    /// `7d`, a date or an RFC 3339 time (default `30d`).
    pub since: Option<String>,
    /// `GET /api/usage`'s grouping (default `day`).
    pub by: Option<String>,
    /// The page's time zone, minutes east of UTC (default 0).
    pub tz_offset_minutes: Option<i32>,
    /// `GET /api/usage/sessions`: how many (default 10, at most 100).
    pub limit: Option<usize>,
}

/// The most sessions one answer lists.
const SESSIONS_MAX: usize = 100;

impl UsageQuery {
    fn ask(&self, by: By) -> Result<Ask, ApiError> {
        let now = protocol::time::now_ms();
        let since = self.since.as_deref().unwrap_or("30d");
        let tz = self.tz_offset_minutes.unwrap_or(0);
        if tz.abs() > 18 * 60 || tz % 15 != 0 {
            return Err(ApiError::BadRequest(format!(
                "tz_offset_minutes is a whole number of quarter hours within 18 hours of UTC, not {tz}"
            )));
        }
        let since_ms = crate::usage::parse_since(since, now, tz)
            .map_err(|e| ApiError::BadRequest(format!("since: {e}")))?;
        Ok(Ask {
            since_ms,
            until_ms: now + 1,
            tz_offset_minutes: tz,
            by,
        })
    }

    fn by(&self) -> Result<By, ApiError> {
        let name = self.by.as_deref().unwrap_or("day");
        [By::Day, By::Session, By::Harness, By::Account, By::Model]
            .into_iter()
            .find(|b| b.name() == name)
            .ok_or_else(|| {
                ApiError::BadRequest(format!(
                    "by is day, session, harness, account or model, not {name:?}"
                ))
            })
    }
}

/// The prices in force: the shipped table with the settings' over it.
fn prices(ctx: &Ctx) -> Prices {
    Prices::new(&ctx.config.now().prices)
}

/// `GET /api/usage?since=&by=&tz_offset_minutes=`.
pub async fn report(
    State(ctx): State<Ctx>,
    Query(q): Query<UsageQuery>,
) -> Answer<crate::usage::UsageReport> {
    let ask = q.ask(q.by()?)?;
    let (paths, prices) = (ctx.paths.clone(), prices(&ctx));
    blocking(move || {
        let ob = Outbox::open_readonly(&paths.outbox())?;
        Ok(Json(crate::usage::report(ob.as_ref(), &prices, ask)?))
    })
    .await
}

/// `GET /api/usage/days?since=&tz_offset_minutes=`.
pub async fn days(State(ctx): State<Ctx>, Query(q): Query<UsageQuery>) -> Answer<UsageDays> {
    let ask = q.ask(By::Day)?;
    let (paths, prices) = (ctx.paths.clone(), prices(&ctx));
    blocking(move || {
        let ob = Outbox::open_readonly(&paths.outbox())?;
        let cells = crate::usage::day_cells(ob.as_ref(), &prices, ask)?;
        Ok(Json(UsageDays {
            since_ms: ask.since_ms,
            until_ms: ask.until_ms,
            tz_offset_minutes: ask.tz_offset_minutes,
            cells,
            prices: prices.source.clone(),
            note: COST_NOTE.into(),
        }))
    })
    .await
}

/// `GET /api/usage/sessions?since=&limit=`.
pub async fn sessions(
    State(ctx): State<Ctx>,
    Query(q): Query<UsageQuery>,
) -> Answer<UsageSessions> {
    let ask = q.ask(By::Session)?;
    let limit = q.limit.unwrap_or(10).min(SESSIONS_MAX);
    let (paths, prices) = (ctx.paths.clone(), prices(&ctx));
    blocking(move || {
        let ob = Outbox::open_readonly(&paths.outbox())?;
        let mut sessions = Vec::new();
        for row in crate::usage::top_sessions(ob.as_ref(), &prices, ask, limit)? {
            let (harness, id) = row.key.split_once(':').unwrap_or((&row.key, ""));
            let (harness, id) = (harness.to_string(), id.to_string());
            let record = match &ob {
                Some(ob) => ob.session(&harness, &id)?,
                None => None,
            };
            let block = record.map(|r| r.block).unwrap_or_default();
            sessions.push(UsageSession {
                harness,
                id,
                title: block.title,
                account: block.account_id,
                usage: row,
            });
        }
        Ok(Json(UsageSessions {
            since_ms: ask.since_ms,
            until_ms: ask.until_ms,
            sessions,
            prices: prices.source.clone(),
            note: COST_NOTE.into(),
        }))
    })
    .await
}

/// `GET /api/usage/limits`.
pub async fn limits(State(ctx): State<Ctx>) -> Answer<UsageLimits> {
    let paths = ctx.paths.clone();
    let alerts = ctx.config.now().pace_alerts();
    blocking(move || {
        let now = protocol::time::now_ms();
        let names = crate::pace::account_names(&paths);
        let windows = crate::pace::Pace::load(&paths)
            .standing(now)
            .into_iter()
            .map(|s| {
                let account = Some(s.key.account).filter(|a| !a.is_empty());
                LimitStanding {
                    email: account.as_deref().and_then(|a| names.of(a)),
                    account,
                    harness: s.key.harness,
                    window: s.key.window,
                    used_percent: s.used_percent,
                    resets_at: s.key.resets_at,
                    seen_at: protocol::time::rfc3339_ms(s.seen_ms),
                    runs_out_at: s.runs_out_ms.map(protocol::time::rfc3339_ms),
                }
            })
            .collect();
        Ok(Json(UsageLimits { windows, alerts }))
    })
    .await
}
