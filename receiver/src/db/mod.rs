//! The receiver's database: one SQLite file by default (`DIR/receiver.db`,
//! nothing to set up), or PostgreSQL for a team or many machines
//! (`--database postgres://...`), with one schema and one list of migrations for
//! both (`schema`).
//!
//! This module owns the connection to either database, the typed arguments and
//! rows the stores speak in, transactions, and the cross-process wake-up
//! (PostgreSQL's LISTEN/NOTIFY; a single SQLite file has one process). It must
//! not know a table's meaning (the stores do) nor speak HTTP.
//!
//! Statements are written once, in the SQL both accept (`$1`-numbered
//! parameters, `ON CONFLICT`, `RETURNING`, integers for flags and times); the
//! SQLite side rewrites `$n` to its own `?n`. SQLite runs on threads of its
//! own (a writer and a few readers, never an async worker), PostgreSQL
//! through a sqlx pool. A transaction is a body handed to `transaction`:
//! on SQLite it runs whole on the writer thread (one hand-over per
//! transaction, not one per statement), on PostgreSQL on the caller's task.

mod postgres;
mod schema;
mod sqlite;

use std::future::Future;
use std::path::Path;
use std::pin::Pin;

pub use postgres::{Wake, Wakes};

/// What a transaction's body gives back: a future borrowing its `Tx`.
pub type TxFuture<'c, T> = Pin<Box<dyn Future<Output = T> + Send + 'c>>;

/// Why the database failed: the words say which part, never a password.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("postgres: {0}")]
    Postgres(#[from] sqlx::Error),
    #[error("the database's schema is at step {found}, newer than this receiver's {known}")]
    Newer { found: i64, known: i64 },
    #[error("column {column}: expected {expected}")]
    Type {
        column: usize,
        expected: &'static str,
    },
    #[error("a stored {what} is not valid")]
    Corrupt { what: &'static str },
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("database URL: {0}")]
    Url(String),
    #[error("the database's threads are gone (the receiver is stopping)")]
    Closed,
    #[error("a transaction waited on something other than its own statements")]
    Stalled,
}

/// Which SQL the database speaks, where the two differ (types in DDL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

/// One statement argument, typed so that a NULL still tells PostgreSQL its type.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    Int(i64),
    Text(String),
    Bytes(Vec<u8>),
    NullInt,
    NullText,
    NullBytes,
}

impl From<i64> for Arg {
    fn from(v: i64) -> Arg {
        Arg::Int(v)
    }
}
impl From<u64> for Arg {
    fn from(v: u64) -> Arg {
        Arg::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}
impl From<usize> for Arg {
    fn from(v: usize) -> Arg {
        Arg::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}
impl From<bool> for Arg {
    fn from(v: bool) -> Arg {
        Arg::Int(i64::from(v))
    }
}
impl From<&str> for Arg {
    fn from(v: &str) -> Arg {
        Arg::Text(v.to_string())
    }
}
impl From<String> for Arg {
    fn from(v: String) -> Arg {
        Arg::Text(v)
    }
}
impl From<&String> for Arg {
    fn from(v: &String) -> Arg {
        Arg::Text(v.clone())
    }
}
impl From<Vec<u8>> for Arg {
    fn from(v: Vec<u8>) -> Arg {
        Arg::Bytes(v)
    }
}
impl From<&[u8]> for Arg {
    fn from(v: &[u8]) -> Arg {
        Arg::Bytes(v.to_vec())
    }
}
impl From<Option<i64>> for Arg {
    fn from(v: Option<i64>) -> Arg {
        v.map_or(Arg::NullInt, Arg::Int)
    }
}
impl From<Option<&str>> for Arg {
    fn from(v: Option<&str>) -> Arg {
        v.map_or(Arg::NullText, Arg::from)
    }
}
impl From<Option<String>> for Arg {
    fn from(v: Option<String>) -> Arg {
        v.map_or(Arg::NullText, Arg::Text)
    }
}
impl From<Option<Vec<u8>>> for Arg {
    fn from(v: Option<Vec<u8>>) -> Arg {
        v.map_or(Arg::NullBytes, Arg::Bytes)
    }
}

/// The arguments of one statement: `args![a, b]`.
#[macro_export]
#[doc(hidden)]
macro_rules! args {
    ($($a:expr),* $(,)?) => { vec![$($crate::db::Arg::from($a)),*] };
}
pub(crate) use args;

/// One value read back.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Int(i64),
    Text(String),
    Bytes(Vec<u8>),
    Null,
}

/// One row read back, its cells in the statement's column order.
#[derive(Clone, Debug, PartialEq)]
pub struct Row(pub(crate) Vec<Cell>);

impl Row {
    fn cell(&self, i: usize) -> &Cell {
        self.0.get(i).unwrap_or(&Cell::Null)
    }

    pub fn int(&self, i: usize) -> Result<i64, DbError> {
        self.opt_int(i)?.ok_or(DbError::Type {
            column: i,
            expected: "an integer",
        })
    }

    pub fn opt_int(&self, i: usize) -> Result<Option<i64>, DbError> {
        match self.cell(i) {
            Cell::Int(v) => Ok(Some(*v)),
            Cell::Null => Ok(None),
            _ => Err(DbError::Type {
                column: i,
                expected: "an integer",
            }),
        }
    }

    pub fn flag(&self, i: usize) -> Result<bool, DbError> {
        Ok(self.int(i)? != 0)
    }

    pub fn text(&self, i: usize) -> Result<String, DbError> {
        self.opt_text(i)?.ok_or(DbError::Type {
            column: i,
            expected: "text",
        })
    }

    pub fn opt_text(&self, i: usize) -> Result<Option<String>, DbError> {
        match self.cell(i) {
            Cell::Text(v) => Ok(Some(v.clone())),
            Cell::Null => Ok(None),
            _ => Err(DbError::Type {
                column: i,
                expected: "text",
            }),
        }
    }

    pub fn bytes(&self, i: usize) -> Result<Vec<u8>, DbError> {
        self.opt_bytes(i)?.ok_or(DbError::Type {
            column: i,
            expected: "bytes",
        })
    }

    pub fn opt_bytes(&self, i: usize) -> Result<Option<Vec<u8>>, DbError> {
        match self.cell(i) {
            Cell::Bytes(v) => Ok(Some(v.clone())),
            Cell::Null => Ok(None),
            _ => Err(DbError::Type {
                column: i,
                expected: "bytes",
            }),
        }
    }
}

/// The database, opened and migrated.
pub enum Db {
    Sqlite(sqlite::Sqlite),
    Postgres(postgres::Pg),
}

/// Where the database is: a folder for the SQLite file, or a PostgreSQL URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location<'a> {
    Folder(&'a Path),
    Url(&'a str),
}

impl Db {
    /// Opens the database and brings its schema up to this build's, refusing one
    /// that a newer build has moved past.
    pub async fn open(at: Location<'_>) -> Result<Db, DbError> {
        let db = match at {
            Location::Folder(dir) => Db::Sqlite(sqlite::Sqlite::open(&dir.join("receiver.db"))?),
            Location::Url(url) => Db::Postgres(postgres::Pg::connect(url).await?),
        };
        schema::migrate(&db).await?;
        Ok(db)
    }

    pub fn dialect(&self) -> Dialect {
        match self {
            Db::Sqlite(_) => Dialect::Sqlite,
            Db::Postgres(_) => Dialect::Postgres,
        }
    }

    /// Runs `body` as one transaction: committed when the body commits,
    /// rolled back when it returns without (an error, or an early answer).
    /// SQLite's is `BEGIN IMMEDIATE` (the write lock at once, so two
    /// read-then-write steps never interleave) on the writer thread, so the
    /// body must await nothing but its own statements; PostgreSQL's is a
    /// pooled connection's. Write it as
    /// `db.transaction(move |mut tx| Box::pin(async move { ... }))`.
    pub async fn transaction<T, E, B>(&self, body: B) -> Result<T, E>
    where
        B: for<'c> FnOnce(Tx<'c>) -> TxFuture<'c, Result<T, E>> + Send + 'static,
        T: Send + 'static,
        E: From<DbError> + Send + 'static,
    {
        match self {
            Db::Sqlite(s) => {
                s.transaction(move |tx| sqlite::finish_now(body(Tx::Sqlite(tx))))
                    .await
            }
            Db::Postgres(p) => {
                let tx = p.begin().await.map_err(E::from)?;
                body(Tx::Postgres(tx, std::marker::PhantomData)).await
            }
        }
    }

    /// Runs one statement on its own; the rows it changed.
    pub async fn exec(&self, sql: &'static str, args: Vec<Arg>) -> Result<u64, DbError> {
        match self {
            Db::Sqlite(s) => s.exec(sql, args).await,
            Db::Postgres(p) => p.exec(sql, args).await,
        }
    }

    /// Runs one query on its own; every row.
    pub async fn rows(&self, sql: &'static str, args: Vec<Arg>) -> Result<Vec<Row>, DbError> {
        match self {
            Db::Sqlite(s) => s.rows(sql, args).await,
            Db::Postgres(p) => p.rows(sql, args).await,
        }
    }

    /// Runs one query on its own; its first row.
    pub async fn row(&self, sql: &'static str, args: Vec<Arg>) -> Result<Option<Row>, DbError> {
        Ok(self.rows(sql, args).await?.into_iter().next())
    }

    /// After a delete that must leave nothing behind (a forgotten session):
    /// SQLite's log is folded in and cut; PostgreSQL's dead rows are already
    /// unreadable and go at its next vacuum.
    pub async fn scrub(&self) -> Result<(), DbError> {
        match self {
            Db::Sqlite(s) => s.scrub().await,
            Db::Postgres(_) => Ok(()),
        }
    }

    /// Tells every receiver process on this database (this one included) that
    /// `topic` changed: PostgreSQL's NOTIFY; nothing for SQLite, whose one
    /// process wakes its own waiters.
    pub async fn notify(&self, topic: &str) -> Result<(), DbError> {
        match self {
            Db::Sqlite(_) => Ok(()),
            Db::Postgres(p) => p.notify(topic).await,
        }
    }

    /// The wake-ups other processes send, for PostgreSQL; `None` for SQLite.
    pub async fn wakes(&self) -> Result<Option<Wakes>, DbError> {
        match self {
            Db::Sqlite(_) => Ok(None),
            Db::Postgres(p) => Ok(Some(p.listen().await?)),
        }
    }
}

/// A transaction; dropped without `commit`, it is rolled back.
pub enum Tx<'c> {
    Sqlite(sqlite::SqliteTx<'c>),
    Postgres(postgres::PgTx, std::marker::PhantomData<&'c ()>),
}

impl Tx<'_> {
    pub async fn exec(&mut self, sql: &'static str, args: Vec<Arg>) -> Result<u64, DbError> {
        match self {
            Tx::Sqlite(t) => t.exec(sql, &args),
            Tx::Postgres(t, _) => t.exec(sql, args).await,
        }
    }

    pub async fn rows(&mut self, sql: &'static str, args: Vec<Arg>) -> Result<Vec<Row>, DbError> {
        match self {
            Tx::Sqlite(t) => t.rows(sql, &args),
            Tx::Postgres(t, _) => t.rows(sql, args).await,
        }
    }

    pub async fn row(&mut self, sql: &'static str, args: Vec<Arg>) -> Result<Option<Row>, DbError> {
        Ok(self.rows(sql, args).await?.into_iter().next())
    }

    pub async fn commit(self) -> Result<(), DbError> {
        match self {
            Tx::Sqlite(t) => t.commit(),
            Tx::Postgres(t, _) => t.commit().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_statement_text_runs_on_sqlite_with_typed_nulls() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(Location::Folder(dir.path())).await.unwrap();
        db.exec(
            "CREATE TABLE t (a INTEGER, b TEXT, c BLOB, PRIMARY KEY (a))",
            vec![],
        )
        .await
        .unwrap();
        let seen = db
            .transaction(|mut tx| {
                Box::pin(async move {
                    let n = tx
                        .exec(
                            "INSERT INTO t (a, b, c) VALUES ($1, $2, $3) ON CONFLICT (a) DO NOTHING",
                            args![7i64, None::<&str>, vec![1u8, 2]],
                        )
                        .await?;
                    // `$2` before `$1` in the text still binds by number.
                    let r = tx
                        .row(
                            "SELECT a, b, c FROM t WHERE c = $2 AND a = $1",
                            args![7i64, vec![1u8, 2]],
                        )
                        .await?;
                    Ok::<_, DbError>((n, r))
                })
            })
            .await
            .unwrap();
        assert_eq!(seen.0, 1);
        let r = seen.1.unwrap();
        assert_eq!(r.int(0).unwrap(), 7);
        assert_eq!(r.opt_text(1).unwrap(), None);
        assert_eq!(r.bytes(2).unwrap(), vec![1, 2]);
        assert!(r.text(0).is_err(), "an integer is not text");
        let rows = db.rows("SELECT a FROM t", vec![]).await.unwrap();
        assert!(
            rows.is_empty(),
            "a transaction ended without commit is rolled back"
        );
    }

    #[tokio::test]
    async fn a_sqlite_transaction_that_waits_on_anything_else_or_panics_leaves_the_writer_working()
    {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(Location::Folder(dir.path())).await.unwrap();
        db.exec("CREATE TABLE t (a INTEGER PRIMARY KEY)", vec![])
            .await
            .unwrap();
        let stalled = db
            .transaction(|mut tx| {
                Box::pin(async move {
                    tx.exec("INSERT INTO t (a) VALUES (1)", vec![]).await?;
                    // Something that is not one of its statements: waiting on
                    // it would hold the writer thread.
                    std::future::pending::<()>().await;
                    tx.commit().await
                })
            })
            .await;
        assert!(matches!(stalled, Err(DbError::Stalled)), "{stalled:?}");
        let db = std::sync::Arc::new(db);
        let again = std::sync::Arc::clone(&db);
        let outcome = tokio::spawn(async move {
            again
                .transaction(|mut tx| {
                    Box::pin(async move {
                        tx.exec("INSERT INTO t (a) VALUES (2)", vec![]).await?;
                        if tx.row("SELECT 1", vec![]).await?.is_some() {
                            panic!("a bug in a body");
                        }
                        tx.commit().await
                    })
                })
                .await
        })
        .await;
        assert!(
            outcome.is_err_and(|e| e.is_panic()),
            "the body's panic reaches its caller"
        );
        db.exec("INSERT INTO t (a) VALUES (3)", vec![])
            .await
            .unwrap();
        let rows = db.rows("SELECT a FROM t ORDER BY a", vec![]).await.unwrap();
        let kept: Vec<i64> = rows.iter().map(|r| r.int(0).unwrap()).collect();
        assert_eq!(
            kept,
            vec![3],
            "both bodies rolled back, the writer still writes"
        );
    }
}
