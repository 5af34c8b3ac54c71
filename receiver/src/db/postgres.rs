//! The PostgreSQL side of `db`: a sqlx pool, typed binding and decoding, and
//! LISTEN/NOTIFY for waking the long-polls another receiver process holds.
//!
//! This module owns the pool and the listener connection. It must not build
//! statement text from data: every statement is a `&'static str` with bound
//! parameters, and only the migrations' fixed DDL is run as a script.

use super::values::{Arg, Cell, DbError, Row};
use sqlx::postgres::{PgListener, PgPool, PgPoolOptions, PgRow};
use sqlx::{Column, Postgres, Row as _, TypeInfo};
use std::time::Duration;

/// The one channel every receiver process listens on; a notification's payload
/// is the topic (a machine id) whose waiters should look again.
const CHANNEL: &str = "sessionpipe_receiver";

pub struct Pg {
    pool: PgPool,
}

type PgQuery<'q> = sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments>;

fn bind(mut q: PgQuery<'_>, args: Vec<Arg>) -> PgQuery<'_> {
    for a in args {
        q = match a {
            Arg::Int(v) => q.bind(v),
            Arg::Text(v) => q.bind(v),
            Arg::Bytes(v) => q.bind(v),
            Arg::NullInt => q.bind(None::<i64>),
            Arg::NullText => q.bind(None::<String>),
            Arg::NullBytes => q.bind(None::<Vec<u8>>),
        };
    }
    q
}

fn decode(r: &PgRow) -> Result<Row, DbError> {
    let mut cells = Vec::with_capacity(r.len());
    for (i, col) in r.columns().iter().enumerate() {
        let cell = match col.type_info().name() {
            "INT8" => r.try_get::<Option<i64>, _>(i)?.map(Cell::Int),
            "INT4" => r.try_get::<Option<i32>, _>(i)?.map(|v| Cell::Int(v.into())),
            "INT2" => r.try_get::<Option<i16>, _>(i)?.map(|v| Cell::Int(v.into())),
            "BOOL" => r
                .try_get::<Option<bool>, _>(i)?
                .map(|v| Cell::Int(v.into())),
            "BYTEA" => r.try_get::<Option<Vec<u8>>, _>(i)?.map(Cell::Bytes),
            "VOID" => None,
            _ => r.try_get::<Option<String>, _>(i)?.map(Cell::Text),
        };
        cells.push(cell.unwrap_or(Cell::Null));
    }
    Ok(Row(cells))
}

impl Pg {
    pub async fn connect(url: &str) -> Result<Pg, DbError> {
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(DbError::Url(
                "expected postgres://user@host/database".into(),
            ));
        }
        let pool = PgPoolOptions::new()
            // Long-polls hold no connection while they wait; a handful serves
            // a thousand machines.
            .max_connections(16)
            .acquire_timeout(Duration::from_secs(10))
            .connect(url)
            .await?;
        Ok(Pg { pool })
    }

    pub async fn begin(&self) -> Result<PgTx, DbError> {
        Ok(PgTx(self.pool.begin().await?))
    }

    pub async fn exec(&self, sql: &'static str, args: Vec<Arg>) -> Result<u64, DbError> {
        Ok(bind(sqlx::query(sql), args)
            .execute(&self.pool)
            .await?
            .rows_affected())
    }

    pub async fn rows(&self, sql: &'static str, args: Vec<Arg>) -> Result<Vec<Row>, DbError> {
        let rows = bind(sqlx::query(sql), args).fetch_all(&self.pool).await?;
        rows.iter().map(decode).collect()
    }

    pub async fn notify(&self, topic: &str) -> Result<(), DbError> {
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(CHANNEL)
            .bind(topic)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    pub async fn listen(&self) -> Result<Wakes, DbError> {
        let mut l = PgListener::connect_with(&self.pool).await?;
        l.listen(CHANNEL).await?;
        Ok(Wakes(l))
    }
}

pub struct PgTx(sqlx::Transaction<'static, Postgres>);

impl PgTx {
    pub async fn exec(&mut self, sql: &'static str, args: Vec<Arg>) -> Result<u64, DbError> {
        Ok(bind(sqlx::query(sql), args)
            .execute(&mut *self.0)
            .await?
            .rows_affected())
    }

    pub async fn rows(&mut self, sql: &'static str, args: Vec<Arg>) -> Result<Vec<Row>, DbError> {
        let rows = bind(sqlx::query(sql), args).fetch_all(&mut *self.0).await?;
        rows.iter().map(decode).collect()
    }

    /// The migrations' DDL: fixed text of this crate, several statements.
    pub async fn script(&mut self, sql: String) -> Result<(), DbError> {
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
            .execute(&mut *self.0)
            .await?;
        Ok(())
    }

    pub async fn commit(self) -> Result<(), DbError> {
        Ok(self.0.commit().await?)
    }
}

/// What the listener heard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Wake {
    /// Waiters on this topic should look again.
    Topic(String),
    /// The listener's connection was lost (and is being made again): what was
    /// sent meanwhile is unknown, so every waiter should look again.
    All,
}

/// The notifications of every receiver process on this database.
pub struct Wakes(PgListener);

impl Wakes {
    pub async fn next(&mut self) -> Wake {
        match self.0.try_recv().await {
            Ok(Some(n)) => Wake::Topic(n.payload().to_string()),
            Ok(None) => Wake::All,
            Err(_) => {
                // A refused reconnect: wait before the next try rather than spin.
                tokio::time::sleep(Duration::from_secs(1)).await;
                Wake::All
            }
        }
    }
}
