//! The database, opened: SQLite or PostgreSQL behind one set of calls (a
//! statement, a query, a transaction, the cross-process wake-up).
//!
//! This module owns the choice between the two and the transaction's shape
//! (`transaction`): on SQLite the body runs whole on the writer thread, on
//! PostgreSQL on the caller's task. It must not know a table's meaning.
//!
//! PostgreSQL's calls are boxed (`Box::pin(p.rows(..))`): sqlx's futures are
//! several kB, and a future awaiting one is that large whichever database it
//! runs on, for as long as it lives. A held long-poll lives for its whole
//! wait, 10 000 of them at once (BENCHMARKS.md, issue 29): its future is
//! 0.8 kB so, 4.8 kB with them inline. The box costs one allocation per
//! statement, beside a round trip to the server.

use super::postgres;
use super::sqlite;
use super::values::{Arg, DbError, Row};
use std::future::Future;
use std::path::Path;
use std::pin::Pin;

use postgres::Wakes;

/// What a transaction's body gives back: a future borrowing its `Tx`.
pub type TxFuture<'c, T> = Pin<Box<dyn Future<Output = T> + Send + 'c>>;

/// Which SQL the database speaks, where the two differ (types in DDL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
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
    /// Connects to the database as it is (`Db::open` migrates it too).
    pub async fn connect(at: Location<'_>) -> Result<Db, DbError> {
        Ok(match at {
            Location::Folder(dir) => {
                // Opening waits on the file's locks too: off the async workers.
                let path = dir.join("receiver.db");
                let opened = tokio::task::spawn_blocking(move || sqlite::Sqlite::open(&path))
                    .await
                    .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
                Db::Sqlite(opened?)
            }
            Location::Url(url) => Db::Postgres(postgres::Pg::connect(url).await?),
        })
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
                let tx = Box::pin(p.begin()).await.map_err(E::from)?;
                body(Tx::Postgres(tx, std::marker::PhantomData)).await
            }
        }
    }

    /// Runs one statement on its own; the rows it changed.
    pub async fn exec(&self, sql: &'static str, args: Vec<Arg>) -> Result<u64, DbError> {
        match self {
            Db::Sqlite(s) => s.exec(sql, args).await,
            Db::Postgres(p) => Box::pin(p.exec(sql, args)).await,
        }
    }

    /// Runs one query on its own; every row.
    pub async fn rows(&self, sql: &'static str, args: Vec<Arg>) -> Result<Vec<Row>, DbError> {
        match self {
            Db::Sqlite(s) => s.rows(sql, args).await,
            Db::Postgres(p) => Box::pin(p.rows(sql, args)).await,
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
            Db::Postgres(p) => Box::pin(p.notify(topic)).await,
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
            Tx::Postgres(t, _) => Box::pin(t.exec(sql, args)).await,
        }
    }

    pub async fn rows(&mut self, sql: &'static str, args: Vec<Arg>) -> Result<Vec<Row>, DbError> {
        match self {
            Tx::Sqlite(t) => t.rows(sql, &args),
            Tx::Postgres(t, _) => Box::pin(t.rows(sql, args)).await,
        }
    }

    pub async fn row(&mut self, sql: &'static str, args: Vec<Arg>) -> Result<Option<Row>, DbError> {
        Ok(self.rows(sql, args).await?.into_iter().next())
    }

    /// What the last transaction kept with `keep`, when the database can
    /// tell that nothing else changed it since (`T::default()` when
    /// something did); `None` where it cannot tell (PostgreSQL: another
    /// process may have written), and the caller reads what it needs.
    pub fn take_kept<T: Default + Send + 'static>(&mut self) -> Option<T> {
        match self {
            Tx::Sqlite(t) => Some(t.take_kept()),
            Tx::Postgres(..) => None,
        }
    }

    /// Keeps `value` for the next transaction's `take_kept`, if this one
    /// commits (a rollback forgets it).
    pub fn keep<T: Send + 'static>(&mut self, value: T) {
        if let Tx::Sqlite(t) = self {
            t.keep(value);
        }
    }

    pub async fn commit(self) -> Result<(), DbError> {
        match self {
            Tx::Sqlite(t) => t.commit(),
            Tx::Postgres(t, _) => Box::pin(t.commit()).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::args;

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

    /// A transaction that keeps `n` (committed), then one that takes what is
    /// kept and keeps nothing.
    async fn keep_then_take(db: &Db, n: Option<u32>, commit: bool) -> Option<u32> {
        db.transaction(move |mut tx| {
            Box::pin(async move {
                let was = tx.take_kept::<u32>();
                if let Some(n) = n {
                    tx.keep(n);
                }
                if commit {
                    tx.commit().await?;
                }
                Ok::<_, DbError>(was)
            })
        })
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn a_kept_value_lasts_only_while_nothing_else_changed_the_database() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(Location::Folder(dir.path())).await.unwrap();
        db.exec("CREATE TABLE t (a INTEGER)", vec![]).await.unwrap();
        assert_eq!(keep_then_take(&db, Some(7), true).await, Some(0));
        assert_eq!(keep_then_take(&db, Some(8), true).await, Some(7));
        assert_eq!(keep_then_take(&db, None, true).await, Some(8));
        assert_eq!(keep_then_take(&db, Some(9), false).await, Some(0));
        assert_eq!(
            keep_then_take(&db, Some(10), true).await,
            Some(0),
            "a rolled back transaction keeps nothing"
        );
        // A write through this database that is not such a transaction.
        db.exec("INSERT INTO t (a) VALUES (1)", vec![])
            .await
            .unwrap();
        assert_eq!(keep_then_take(&db, Some(11), true).await, Some(0));
        // Another connection's commit (another process on the same file).
        let other = rusqlite::Connection::open(dir.path().join("receiver.db")).unwrap();
        other.execute("INSERT INTO t (a) VALUES (2)", []).unwrap();
        assert_eq!(keep_then_take(&db, Some(12), true).await, Some(0));
        assert_eq!(keep_then_take(&db, None, true).await, Some(12));
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
