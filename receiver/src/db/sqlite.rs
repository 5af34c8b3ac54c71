//! The SQLite side of `db`: one file, WAL, opened 0600, one connection behind
//! an async mutex.
//!
//! This module owns that connection and the translation of the shared
//! statement text (`$n` parameters) to SQLite's (`?n`). It must not hold a
//! statement's lock across anything but the statement itself: a transaction
//! holds the mutex from `BEGIN IMMEDIATE` to its end, and nothing else.

use super::{Arg, Cell, DbError, Row};
use rusqlite::Connection;
use rusqlite::types::{ToSql, ToSqlOutput, ValueRef};
use std::path::Path;
use tokio::sync::{Mutex, MutexGuard};

pub struct Sqlite {
    conn: Mutex<Connection>,
}

impl Sqlite {
    pub fn open(path: &Path) -> Result<Sqlite, DbError> {
        // Created 0600 before SQLite opens it: it holds queued prompts and the
        // hashes of tokens (SQLite gives its -wal and -shm files the same mode).
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .open(path)?;
        }
        let conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // A commit survives the process being killed; a power cut is the
        // host's to survive (an fsync per batch would cap ingest at the disk's
        // flush rate).
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // A deleted row's bytes are overwritten, not left in a free page: a
        // forgotten session must be gone from the file, not only from queries.
        conn.pragma_update(None, "secure_delete", "ON")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.set_prepared_statement_cache_capacity(64);
        Ok(Sqlite {
            conn: Mutex::new(conn),
        })
    }

    pub async fn begin(&self) -> Result<SqliteTx<'_>, DbError> {
        let conn = self.conn.lock().await;
        conn.execute_batch("BEGIN IMMEDIATE")?;
        Ok(SqliteTx { conn, done: false })
    }

    pub async fn exec(&self, sql: &'static str, args: &[Arg]) -> Result<u64, DbError> {
        exec(&*self.conn.lock().await, sql, args)
    }

    pub async fn rows(&self, sql: &'static str, args: &[Arg]) -> Result<Vec<Row>, DbError> {
        rows(&*self.conn.lock().await, sql, args)
    }
}

impl Sqlite {
    /// Folds the write-ahead log into the file and cuts it to nothing, so the
    /// old page images of what was just deleted are gone from the disk too.
    pub async fn scrub(&self) -> Result<(), DbError> {
        let conn = self.conn.lock().await;
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        Ok(())
    }
}

pub struct SqliteTx<'a> {
    conn: MutexGuard<'a, Connection>,
    done: bool,
}

impl SqliteTx<'_> {
    pub fn exec(&mut self, sql: &'static str, args: &[Arg]) -> Result<u64, DbError> {
        exec(&self.conn, sql, args)
    }

    pub fn rows(&mut self, sql: &'static str, args: &[Arg]) -> Result<Vec<Row>, DbError> {
        rows(&self.conn, sql, args)
    }

    /// Several statements without parameters (the migrations' DDL).
    pub fn script(&mut self, sql: &str) -> Result<(), DbError> {
        Ok(self.conn.execute_batch(sql)?)
    }

    pub fn commit(mut self) -> Result<(), DbError> {
        self.conn.execute_batch("COMMIT")?;
        self.done = true;
        Ok(())
    }
}

impl Drop for SqliteTx<'_> {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
    }
}

/// `$12` → `?12`; the statements hold no `$` anywhere else.
fn native(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('?');
        } else {
            out.push(c);
        }
    }
    out
}

impl ToSql for Arg {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Arg::Int(v) => ToSqlOutput::Borrowed(ValueRef::Integer(*v)),
            Arg::Text(v) => ToSqlOutput::Borrowed(ValueRef::Text(v.as_bytes())),
            Arg::Bytes(v) => ToSqlOutput::Borrowed(ValueRef::Blob(v)),
            Arg::NullInt | Arg::NullText | Arg::NullBytes => ToSqlOutput::Borrowed(ValueRef::Null),
        })
    }
}

fn exec(conn: &Connection, sql: &str, args: &[Arg]) -> Result<u64, DbError> {
    let mut st = conn.prepare_cached(&native(sql))?;
    Ok(st.execute(rusqlite::params_from_iter(args.iter()))? as u64)
}

fn rows(conn: &Connection, sql: &str, args: &[Arg]) -> Result<Vec<Row>, DbError> {
    let mut st = conn.prepare_cached(&native(sql))?;
    let n = st.column_count();
    let mut q = st.query(rusqlite::params_from_iter(args.iter()))?;
    let mut out = Vec::new();
    while let Some(r) = q.next()? {
        let mut cells = Vec::with_capacity(n);
        for i in 0..n {
            cells.push(match r.get_ref(i)? {
                ValueRef::Null => Cell::Null,
                ValueRef::Integer(v) => Cell::Int(v),
                ValueRef::Real(v) => Cell::Int(v as i64),
                ValueRef::Text(t) => Cell::Text(String::from_utf8_lossy(t).into_owned()),
                ValueRef::Blob(b) => Cell::Bytes(b.to_vec()),
            });
        }
        out.push(Row(cells));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn numbered_parameters_become_sqlite_s() {
        assert_eq!(
            super::native("a = $1 AND b = $12 OR c = '$'"),
            "a = ?1 AND b = ?12 OR c = '$'"
        );
    }
}
