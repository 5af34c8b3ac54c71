//! The tokens model responses used, kept in the outbox file beside the
//! session records: a layer of its own (`usage`, its own migration steps in
//! the file's ledger), never an event and never sent to a sink.
//!
//! Two tables. `usage` has one row per model response, keyed by (harness,
//! session, the response's key), so a transcript read again (a restart, a
//! held turn's re-read, a backfill of a session the daemon watched live)
//! never counts a response twice; a response read again with larger counts
//! (Claude Code writes a message's records as it streams) keeps the larger.
//! `usage_quarters` adds them up per quarter of an hour (UTC), harness,
//! session, model and account, kept in step by the one writer here, so a
//! year of use is read in a few tens of thousands of rows, and any time
//! zone's days (every one is a whole number of quarters from UTC) are sums
//! of quarters.
//!
//! Owns these tables, their writer and their reads. Prices and cost are not
//! here (`crate::usage`): this keeps tokens.

use super::error::Result;
use harness::usage::Usage;
use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use sessionpipe_db::{Layer, Step};

/// Step N takes the usage tables to N (steps number past the one list's 7).
pub const USAGE: Layer = Layer {
    name: "usage",
    steps: &[Step::sql(
        8,
        "
    CREATE TABLE usage (
        harness     TEXT NOT NULL,
        session     TEXT NOT NULL,
        key         TEXT NOT NULL,
        at_ms       INTEGER NOT NULL,
        model       TEXT NOT NULL,
        account     TEXT NOT NULL,
        input       INTEGER NOT NULL,
        output      INTEGER NOT NULL,
        cache_read  INTEGER NOT NULL,
        cache_write INTEGER NOT NULL,
        PRIMARY KEY (harness, session, key)
    ) WITHOUT ROWID;
    CREATE TABLE usage_quarters (
        quarter     INTEGER NOT NULL,
        harness     TEXT NOT NULL,
        session     TEXT NOT NULL,
        model       TEXT NOT NULL,
        account     TEXT NOT NULL,
        responses   INTEGER NOT NULL,
        input       INTEGER NOT NULL,
        output      INTEGER NOT NULL,
        cache_read  INTEGER NOT NULL,
        cache_write INTEGER NOT NULL,
        PRIMARY KEY (quarter, harness, session, model, account)
    ) WITHOUT ROWID;
    CREATE INDEX usage_quarters_by_session ON usage_quarters (harness, session);
    ",
    )],
};

/// A quarter of an hour: the finest time the sums keep.
pub const QUARTER_MS: i64 = 900_000;

/// Token counts, summed (`responses`: how many model responses they are).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Tokens {
    pub responses: u64,
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

impl Tokens {
    pub fn add(&mut self, o: &Tokens) {
        self.responses += o.responses;
        self.input += o.input;
        self.output += o.output;
        self.cache_read += o.cache_read;
        self.cache_write += o.cache_write;
    }

    /// Every token, whatever its class.
    pub fn total(&self) -> u64 {
        self.input + self.output + self.cache_read + self.cache_write
    }

    /// One model response's counts.
    fn of(u: &Usage) -> Tokens {
        Tokens {
            responses: 1,
            input: u.input,
            output: u.output,
            cache_read: u.cache_read,
            cache_write: u.cache_write,
        }
    }

    /// A response read again: each count the larger of the two (a message
    /// Claude Code wrote as it streamed has its whole output last).
    fn larger(&self, o: &Tokens) -> Tokens {
        Tokens {
            responses: 1,
            input: self.input.max(o.input),
            output: self.output.max(o.output),
            cache_read: self.cache_read.max(o.cache_read),
            cache_write: self.cache_write.max(o.cache_write),
        }
    }
}

/// Whose responses a write is: the session, its account where known, and
/// the model a response that names none answered with (the session's).
#[derive(Clone, Copy, Debug)]
pub struct Whose<'a> {
    pub harness: &'a str,
    pub session: &'a str,
    pub account: Option<&'a str>,
    pub model: Option<&'a str>,
}

/// What a read of the sums is grouped by, beside the model (always: a
/// price is a model's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Grouping {
    pub day: bool,
    pub harness: bool,
    pub session: bool,
    pub account: bool,
}

/// One group's sums. A field the grouping left out is `None`; `day` counts
/// days since 1970-01-01 in the read's time zone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cell {
    pub day: Option<i64>,
    pub harness: Option<String>,
    pub session: Option<String>,
    pub account: Option<String>,
    /// `""` when no model was named.
    pub model: String,
    pub tokens: Tokens,
    /// The newest quarter in the group, as epoch ms.
    pub last_ms: i64,
}

/// Which sums a read takes: a span of time (to the quarter hour: the
/// quarters `from_ms` and `until_ms` fall in are whole in it), in a time
/// zone, maybe one session.
#[derive(Clone, Copy, Debug)]
pub struct Span<'a> {
    pub from_ms: i64,
    pub until_ms: i64,
    /// The time zone's offset from UTC, in minutes (days start at its midnight).
    pub offset_minutes: i32,
    pub only: Option<(&'a str, &'a str)>,
}

/// A count as SQLite keeps it (a signed 64-bit integer).
fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The four token columns from `first` on, as `Tokens` of `responses`.
fn tokens_at(r: &rusqlite::Row<'_>, first: usize, responses: u64) -> rusqlite::Result<Tokens> {
    let n =
        |i: usize| -> rusqlite::Result<u64> { Ok(u64::try_from(r.get::<_, i64>(i)?).unwrap_or(0)) };
    Ok(Tokens {
        responses,
        input: n(first)?,
        output: n(first + 1)?,
        cache_read: n(first + 2)?,
        cache_write: n(first + 3)?,
    })
}

/// Keeps `rows` for `whose`, each response once; returns how many rows it
/// added or grew.
pub fn put(conn: &Connection, whose: &Whose<'_>, rows: &[Usage]) -> Result<usize> {
    let kept = conn
        .prepare_cached("SELECT 1 FROM usage WHERE harness = ?1 AND session = ?2 LIMIT 1")?
        .exists(params![whose.harness, whose.session])?;
    if !kept {
        return put_first(conn, whose, rows);
    }
    let mut changed = 0;
    for u in rows.iter().filter(|u| !u.is_empty()) {
        let model = u.model.as_deref().or(whose.model).unwrap_or("");
        let account = whose.account.unwrap_or("");
        let new = Tokens::of(u);
        let old = conn
            .prepare_cached(
                "SELECT at_ms, model, account, input, output, cache_read, cache_write FROM usage
                 WHERE harness = ?1 AND session = ?2 AND key = ?3",
            )?
            .query_row(params![whose.harness, whose.session, u.key], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    tokens_at(r, 3, 1)?,
                ))
            })
            .optional()?;
        match old {
            None => {
                conn.prepare_cached(
                    "INSERT INTO usage (harness, session, key, at_ms, model, account,
                         input, output, cache_read, cache_write)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                )?
                .execute(params![
                    whose.harness,
                    whose.session,
                    u.key,
                    u.at_ms,
                    model,
                    account,
                    int(new.input),
                    int(new.output),
                    int(new.cache_read),
                    int(new.cache_write)
                ])?;
                add_to_quarter(conn, whose, u.at_ms, model, account, &new)?;
            }
            Some((at_ms, model, account, was)) => {
                let grown = was.larger(&new);
                if grown == was {
                    continue;
                }
                conn.prepare_cached(
                    "UPDATE usage SET input = ?4, output = ?5, cache_read = ?6, cache_write = ?7
                     WHERE harness = ?1 AND session = ?2 AND key = ?3",
                )?
                .execute(params![
                    whose.harness,
                    whose.session,
                    u.key,
                    int(grown.input),
                    int(grown.output),
                    int(grown.cache_read),
                    int(grown.cache_write)
                ])?;
                let more = Tokens {
                    responses: 0,
                    input: grown.input - was.input,
                    output: grown.output - was.output,
                    cache_read: grown.cache_read - was.cache_read,
                    cache_write: grown.cache_write - was.cache_write,
                };
                add_to_quarter(conn, whose, at_ms, &model, &account, &more)?;
            }
        }
        changed += 1;
    }
    Ok(changed)
}

/// Gives a session's responses kept before its account, or the model it
/// answered with, was known the one it has now: a session is one account's,
/// and a response that named no model answered with the session's. Looked
/// for in the session's few quarter sums (by their index); the responses
/// themselves are rewritten only when some are found.
pub fn adopt(conn: &Connection, whose: &Whose<'_>) -> Result<()> {
    for (column, known) in [("account", whose.account), ("model", whose.model)] {
        let Some(known) = known.filter(|k| !k.is_empty()) else {
            continue;
        };
        let unknown = conn
            .prepare_cached(&format!(
                "SELECT 1 FROM usage_quarters
                 WHERE harness = ?1 AND session = ?2 AND {column} = '' LIMIT 1"
            ))?
            .exists(params![whose.harness, whose.session])?;
        if !unknown {
            continue;
        }
        let (model, account) = match column {
            "model" => ("?3", "account"),
            _ => ("model", "?3"),
        };
        conn.prepare_cached(&format!(
            "UPDATE usage SET {column} = ?3 WHERE harness = ?1 AND session = ?2 AND {column} = ''"
        ))?
        .execute(params![whose.harness, whose.session, known])?;
        conn.prepare_cached(&format!(
            "INSERT INTO usage_quarters (quarter, harness, session, model, account,
                 responses, input, output, cache_read, cache_write)
             SELECT quarter, harness, session, {model}, {account},
                 responses, input, output, cache_read, cache_write
             FROM usage_quarters WHERE harness = ?1 AND session = ?2 AND {column} = ''
             ON CONFLICT (quarter, harness, session, model, account) DO UPDATE SET
                 responses = responses + excluded.responses, input = input + excluded.input,
                 output = output + excluded.output, cache_read = cache_read + excluded.cache_read,
                 cache_write = cache_write + excluded.cache_write"
        ))?
        .execute(params![whose.harness, whose.session, known])?;
        conn.prepare_cached(&format!(
            "DELETE FROM usage_quarters WHERE harness = ?1 AND session = ?2 AND {column} = ''"
        ))?
        .execute(params![whose.harness, whose.session])?;
    }
    Ok(())
}

/// `put` for a session with no response kept yet (every one a backfill
/// finds, a live session's first read): nothing to compare with in the
/// table, so its rows are merged here first, as `put` would grow them one by
/// one (a key's first row gives its time and model, each count its largest),
/// and each response is one INSERT and each quarter one sum: a third of the
/// statements, for the same rows and sums.
fn put_first(conn: &Connection, whose: &Whose<'_>, rows: &[Usage]) -> Result<usize> {
    struct Merged<'a> {
        key: &'a str,
        at_ms: i64,
        model: &'a str,
        tokens: Tokens,
    }
    let account = whose.account.unwrap_or("");
    let mut merged: Vec<Merged<'_>> = Vec::with_capacity(rows.len());
    let mut at: std::collections::HashMap<&str, usize> =
        std::collections::HashMap::with_capacity(rows.len());
    let mut changed = 0;
    for u in rows.iter().filter(|u| !u.is_empty()) {
        let new = Tokens::of(u);
        match at.entry(u.key.as_str()) {
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(merged.len());
                merged.push(Merged {
                    key: &u.key,
                    at_ms: u.at_ms,
                    model: u.model.as_deref().or(whose.model).unwrap_or(""),
                    tokens: new,
                });
            }
            std::collections::hash_map::Entry::Occupied(e) => {
                let was = &mut merged[*e.get()].tokens;
                let grown = was.larger(&new);
                if grown == *was {
                    continue;
                }
                *was = grown;
            }
        }
        changed += 1;
    }
    let mut insert = conn.prepare_cached(
        "INSERT INTO usage (harness, session, key, at_ms, model, account,
             input, output, cache_read, cache_write)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?;
    // (quarter, model) -> sums: the account is the session's, one for all.
    let mut quarters: std::collections::BTreeMap<(i64, &str), Tokens> = Default::default();
    for m in &merged {
        let t = &m.tokens;
        insert.execute(params![
            whose.harness,
            whose.session,
            m.key,
            m.at_ms,
            m.model,
            account,
            int(t.input),
            int(t.output),
            int(t.cache_read),
            int(t.cache_write)
        ])?;
        quarters
            .entry((m.at_ms.div_euclid(QUARTER_MS), m.model))
            .or_default()
            .add(t);
    }
    for ((quarter, model), t) in &quarters {
        add_to_quarter(conn, whose, quarter * QUARTER_MS, model, account, t)?;
    }
    Ok(changed)
}

fn add_to_quarter(
    conn: &Connection,
    whose: &Whose<'_>,
    at_ms: i64,
    model: &str,
    account: &str,
    t: &Tokens,
) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO usage_quarters (quarter, harness, session, model, account,
             responses, input, output, cache_read, cache_write)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
         ON CONFLICT (quarter, harness, session, model, account) DO UPDATE SET
             responses = responses + excluded.responses, input = input + excluded.input,
             output = output + excluded.output, cache_read = cache_read + excluded.cache_read,
             cache_write = cache_write + excluded.cache_write",
    )?
    .execute(params![
        at_ms.div_euclid(QUARTER_MS),
        whose.harness,
        whose.session,
        model,
        account,
        int(t.responses),
        int(t.input),
        int(t.output),
        int(t.cache_read),
        int(t.cache_write)
    ])?;
    Ok(())
}

/// Deletes a session's usage (`forget`). Returns how many responses went.
pub fn forget(conn: &Connection, harness: &str, session: &str) -> Result<usize> {
    let n = conn.execute(
        "DELETE FROM usage WHERE harness = ?1 AND session = ?2",
        params![harness, session],
    )?;
    conn.execute(
        "DELETE FROM usage_quarters WHERE harness = ?1 AND session = ?2",
        params![harness, session],
    )?;
    Ok(n)
}

/// True when the file has the usage tables (a file no writer of this
/// version has opened yet has none: nothing was counted there).
pub fn present(conn: &Connection) -> Result<bool> {
    Ok(sessionpipe_db::version(conn, &USAGE).map_err(super::schema::newer)? > 0)
}

/// The sums in `span`, grouped by `g` and the model, in no particular order.
pub fn cells(conn: &Connection, span: &Span<'_>, g: Grouping) -> Result<Vec<Cell>> {
    Ok(sums(conn, span, g)?.into_cells())
}

/// The sums in `span`, grouped by `g` and the model, keyed by numbers
/// (`Sums`).
///
/// The rows are read in the table's own order and added up here: SQLite's
/// GROUP BY sorts every row it reads first (a year's 60 000 quarter sums
/// took 160 ms that way, against about 10 ms to read them).
pub fn sums(conn: &Connection, span: &Span<'_>, g: Grouping) -> Result<Sums> {
    let mut out = Sums::default();
    if !present(conn)? {
        return Ok(out);
    }
    let pick = |on: bool, col: &'static str| if on { col } else { "NULL" };
    let filter = if span.only.is_some() {
        "AND harness = ?3 AND session = ?4"
    } else {
        "AND ?3 IS NULL AND ?4 IS NULL"
    };
    let sql = format!(
        "SELECT quarter, {harness}, {session}, {account}, model,
                responses, input, output, cache_read, cache_write
         FROM usage_quarters WHERE quarter >= ?1 AND quarter < ?2 {filter}",
        harness = pick(g.harness, "harness"),
        session = pick(g.session, "session"),
        account = pick(g.account, "account"),
    );
    let (h, s) = span.only.unzip();
    let offset_s = i64::from(span.offset_minutes) * 60;
    let mut stmt = conn.prepare_cached(&sql)?;
    // Whole quarters: the one `from_ms` falls in, up to the one `until_ms`
    // falls in, both included.
    let mut rows = stmt.query(params![
        span.from_ms.div_euclid(QUARTER_MS),
        span.until_ms.div_euclid(QUARTER_MS) + 1,
        h,
        s
    ])?;
    while let Some(r) = rows.next()? {
        let quarter: i64 = r.get(0)?;
        let day = g
            .day
            .then(|| (quarter * (QUARTER_MS / 1000) + offset_s).div_euclid(86_400));
        let mut texts = [NONE; 4];
        for (i, k) in texts.iter_mut().enumerate() {
            let text = r.get_ref(i + 1)?.as_str_or_null();
            *k = out.names.of(text.map_err(rusqlite::Error::from)?);
        }
        let responses = u64::try_from(r.get::<_, i64>(5)?).unwrap_or(0);
        let t = tokens_at(r, 6, responses)?;
        let sum = out.groups.entry(SumKey { day, texts }).or_default();
        sum.0.add(&t);
        sum.1 = sum.1.max(quarter);
    }
    Ok(out)
}

/// A read's sums before they are texts: each group keyed by the numbers of
/// its texts, each text kept once. A year's read is 60 000 rows over a few
/// harnesses, accounts and models (and, by session, 20 000 sessions): a
/// text per row cost more than the read, and a caller that keeps a few
/// groups of many (the top sessions) makes texts only for those.
#[derive(Default)]
pub struct Sums {
    names: Names,
    groups: std::collections::HashMap<SumKey, (Tokens, i64)>,
}

/// A group of `Sums`: its day, and the numbers of its harness, session,
/// account and model (`Sums::text`; `NONE` where the grouping left it out).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SumKey {
    pub day: Option<i64>,
    pub texts: [u32; 4],
}

impl SumKey {
    pub const HARNESS: usize = 0;
    pub const SESSION: usize = 1;
    pub const ACCOUNT: usize = 2;
    pub const MODEL: usize = 3;
}

impl Sums {
    /// Each group, its tokens and its newest quarter.
    pub fn groups(&self) -> impl Iterator<Item = (&SumKey, &Tokens, i64)> {
        self.groups.iter().map(|(k, (t, q))| (k, t, *q))
    }

    /// The text numbered `n` (`None`: left out of the grouping).
    pub fn text(&self, n: u32) -> Option<&str> {
        self.names.texts.get(n as usize).map(String::as_str)
    }

    /// One group as a `Cell`.
    pub fn cell(&self, key: &SumKey, tokens: &Tokens, last_quarter: i64) -> Cell {
        let text = |i: usize| self.text(key.texts[i]).map(str::to_string);
        Cell {
            day: key.day,
            harness: text(SumKey::HARNESS),
            session: text(SumKey::SESSION),
            account: text(SumKey::ACCOUNT),
            model: text(SumKey::MODEL).unwrap_or_default(),
            tokens: *tokens,
            last_ms: last_quarter * QUARTER_MS,
        }
    }

    /// Every group as a `Cell`.
    pub fn into_cells(self) -> Vec<Cell> {
        self.groups().map(|(k, t, q)| self.cell(k, t, q)).collect()
    }
}

/// The number of a text a read did not ask for (`NULL`).
const NONE: u32 = u32::MAX;

/// The texts a read met, each numbered once.
#[derive(Default)]
struct Names {
    numbers: std::collections::HashMap<String, u32>,
    texts: Vec<String>,
}

impl Names {
    fn of(&mut self, text: Option<&str>) -> u32 {
        let Some(text) = text else {
            return NONE;
        };
        if let Some(n) = self.numbers.get(text) {
            return *n;
        }
        let n = self.texts.len() as u32;
        self.texts.push(text.to_string());
        self.numbers.insert(text.to_string(), n);
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open() -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = sessionpipe_db::open(&dir.path().join("o.db")).unwrap();
        sessionpipe_db::migrate(&mut conn, &USAGE).unwrap();
        (dir, conn)
    }

    fn u(key: &str, at_ms: i64, input: u64, output: u64) -> Usage {
        Usage {
            key: key.into(),
            at_ms,
            model: None,
            input,
            output,
            cache_read: 100,
            cache_write: 10,
        }
    }

    const WHOSE: Whose<'static> = Whose {
        harness: "claude-code",
        session: "s1",
        account: Some("acct"),
        model: Some("m1"),
    };
    const DAY: i64 = 86_400_000;
    const T0: i64 = 1_796_000_000_000 / DAY * DAY; // a UTC midnight

    fn all(conn: &Connection, g: Grouping) -> Vec<Cell> {
        let span = Span {
            from_ms: 0,
            until_ms: i64::MAX / 2,
            offset_minutes: 0,
            only: None,
        };
        let mut c = cells(conn, &span, g).unwrap();
        c.sort_by_key(|c| (c.day, c.harness.clone(), c.session.clone()));
        c
    }

    #[test]
    fn a_response_read_again_counts_once_and_keeps_its_larger_numbers() {
        let (_d, conn) = open();
        // Claude Code's records of one message: the first with what the
        // stream's start said, the last with the whole output.
        let rows = [
            u("msg_1", T0, 7, 1),
            u("msg_1", T0, 7, 42),
            u("msg_2", T0 + 60_000, 3, 5),
        ];
        assert_eq!(put(&conn, &WHOSE, &rows).unwrap(), 3);
        assert_eq!(put(&conn, &WHOSE, &rows).unwrap(), 0, "read again: nothing");
        let c = all(&conn, Grouping::default());
        assert_eq!(c.len(), 1);
        assert_eq!(
            c[0].model, "m1",
            "the session's model, where none was named"
        );
        let t = c[0].tokens;
        assert_eq!(
            (t.responses, t.input, t.output, t.cache_read, t.cache_write),
            (2, 10, 47, 200, 20)
        );
        let row: (i64, i64) = conn
            .query_row("SELECT count(*), sum(output) FROM usage", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!(row, (2, 47), "the quarters and the responses agree");
        // A span that ends inside a response's quarter has it.
        let now = Span {
            from_ms: T0 - DAY,
            until_ms: T0 + 1,
            offset_minutes: 0,
            only: None,
        };
        assert_eq!(cells(&conn, &now, Grouping::default()).unwrap().len(), 1);
        assert_eq!(forget(&conn, "claude-code", "s1").unwrap(), 2);
        assert!(all(&conn, Grouping::default()).is_empty());
    }

    /// Responses kept before the session's account and model were known
    /// (a transcript read before the status line or the first record that
    /// names them) are theirs once a write knows them, in the responses and
    /// the sums alike, merged with the sums already kept under them.
    #[test]
    fn responses_kept_before_the_account_and_model_were_known_are_given_them() {
        let (_d, conn) = open();
        let unknown = Whose {
            account: None,
            model: None,
            ..WHOSE
        };
        put(
            &conn,
            &unknown,
            &[u("a", T0, 1, 1), u("b", T0 + 60_000, 2, 2)],
        )
        .unwrap();
        let other = Whose {
            session: "s2",
            ..unknown
        };
        put(&conn, &other, &[u("c", T0, 5, 5)]).unwrap();
        let by_account = Grouping {
            session: true,
            account: true,
            ..Default::default()
        };
        assert_eq!(all(&conn, by_account)[0].account.as_deref(), Some(""));
        adopt(&conn, &WHOSE).unwrap();
        put(&conn, &WHOSE, &[u("d", T0 + 120_000, 4, 4)]).unwrap();
        let c = all(&conn, by_account);
        assert_eq!(c.len(), 2, "{c:?}");
        let mine = c
            .iter()
            .find(|c| c.session.as_deref() == Some("s1"))
            .unwrap();
        assert_eq!(
            (mine.account.as_deref(), mine.model.as_str()),
            (Some("acct"), "m1")
        );
        assert_eq!((mine.tokens.responses, mine.tokens.input), (3, 7));
        let theirs = c
            .iter()
            .find(|c| c.session.as_deref() == Some("s2"))
            .unwrap();
        assert_eq!(
            (theirs.account.as_deref(), theirs.model.as_str()),
            (Some(""), ""),
            "another session keeps its own"
        );
        let kept: Vec<(String, String)> = conn
            .prepare("SELECT account, model FROM usage WHERE session = 's1'")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert!(
            kept.iter().all(|k| k == &("acct".into(), "m1".into())),
            "{kept:?}"
        );
        // A response read again after is still the same one.
        assert_eq!(put(&conn, &WHOSE, &[u("a", T0, 1, 1)]).unwrap(), 0);
        assert_eq!(forget(&conn, "claude-code", "s1").unwrap(), 3);
    }

    /// A session's first write merges its rows before SQLite sees them; the
    /// tables must be what writing them one by one makes.
    #[test]
    fn a_first_write_at_once_keeps_what_one_by_one_keeps() {
        let rows = [
            u("msg_1", T0, 7, 1),
            Usage {
                model: Some("m2".into()),
                ..u("msg_2", T0 + 60_000, 3, 5)
            },
            u("msg_1", T0 + 1_000, 9, 42),
            u("msg_3", T0 + 20 * 60_000, 4, 4),
            u("msg_2", T0, 0, 0),
            u("msg_1", T0, 7, 1),
        ];
        let dump = |conn: &Connection, sql: &str| -> Vec<Vec<String>> {
            let mut stmt = conn.prepare(sql).unwrap();
            let n = stmt.column_count();
            stmt.query_map([], |r| {
                (0..n)
                    .map(|i| Ok(format!("{:?}", r.get_ref(i)?)))
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .unwrap()
            .map(|row| row.unwrap())
            .collect()
        };
        let tables = |conn: &Connection| {
            (
                dump(conn, "SELECT * FROM usage ORDER BY key"),
                dump(conn, "SELECT * FROM usage_quarters ORDER BY quarter, model"),
            )
        };
        let (_d, at_once) = open();
        let (_e, one_by_one) = open();
        let changed = put(&at_once, &WHOSE, &rows).unwrap();
        let mut each = 0;
        for r in &rows {
            each += put(&one_by_one, &WHOSE, std::slice::from_ref(r)).unwrap();
        }
        assert_eq!((changed, each), (4, 4));
        assert_eq!(tables(&at_once), tables(&one_by_one));
        assert_eq!(tables(&at_once).1.len(), 3, "two quarters, two models");
    }

    #[test]
    fn days_follow_the_readers_time_zone_and_sessions_stay_apart() {
        let (_d, conn) = open();
        // 23:30 UTC: the day before at UTC, the next day at UTC+1.
        put(&conn, &WHOSE, &[u("a", T0 - 30 * 60_000, 1, 1)]).unwrap();
        let other = Whose {
            session: "s2",
            account: None,
            ..WHOSE
        };
        put(&conn, &other, &[u("a", T0 + 60_000, 2, 2)]).unwrap();
        let by_day = |offset_minutes| {
            let span = Span {
                from_ms: T0 - DAY,
                until_ms: T0 + DAY,
                offset_minutes,
                only: None,
            };
            let mut c = cells(
                &conn,
                &span,
                Grouping {
                    day: true,
                    ..Default::default()
                },
            )
            .unwrap();
            c.sort_by_key(|c| c.day);
            c.iter()
                .map(|c| (c.day.unwrap() - T0 / DAY, c.tokens.input))
                .collect::<Vec<_>>()
        };
        assert_eq!(by_day(0), [(-1, 1), (0, 2)]);
        assert_eq!(by_day(60), [(0, 3)]);
        let by_session = all(
            &conn,
            Grouping {
                session: true,
                account: true,
                ..Default::default()
            },
        );
        let got: Vec<_> = by_session
            .iter()
            .map(|c| (c.session.as_deref(), c.account.as_deref(), c.tokens.input))
            .collect();
        assert_eq!(
            got,
            [(Some("s1"), Some("acct"), 1), (Some("s2"), Some(""), 2)]
        );
        let one = Span {
            from_ms: 0,
            until_ms: i64::MAX / 2,
            offset_minutes: 0,
            only: Some(("claude-code", "s2")),
        };
        let c = cells(&conn, &one, Grouping::default()).unwrap();
        assert_eq!((c.len(), c[0].tokens.input), (1, 2));
    }
}
