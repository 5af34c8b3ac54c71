//! The SQLite side of `db`: one file, WAL, opened 0600, and the threads that
//! own its connections: one writer (every write, every transaction) and a few
//! readers (the plain `SELECT`s), so that no SQLite call runs on an async
//! worker. A statement waiting out another process's write lock
//! (`busy_timeout`) or a checkpoint holds the writer thread, never the
//! runtime: discovery, held long-polls and reads go on meanwhile.
//!
//! This module owns those threads, the connections, and the translation of
//! the shared statement text (`$n` parameters) to SQLite's (`?n`). A job is a
//! closure run on a thread's connection; its answer comes back over a
//! oneshot channel, and a panic inside it is carried back to the caller
//! rather than killing the thread. A transaction is one job: its body runs
//! to its end on the writer, every statement answered at once (a body that
//! waits on anything else is refused, `DbError::Stalled`).

use super::values::{Arg, Cell, DbError, Row};
use rusqlite::Connection;
use rusqlite::types::{ToSql, ToSqlOutput, ValueRef};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::thread::JoinHandle;
use std::time::Duration;

/// Reader threads: reads are microseconds each, so a few keep up with many
/// workers; more than one lets a read go on while another waits.
const READERS: usize = 4;

/// How long a statement waits for another connection's lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Work for a connection's thread.
type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// A connection's thread (or a few sharing one queue), fed through a channel.
struct Threads {
    queue: Option<mpsc::Sender<Job>>,
    handles: Vec<JoinHandle<()>>,
}

impl Threads {
    /// `conns.len()` threads, each owning one connection, taking jobs off one
    /// queue in turn.
    fn spawn(name: &str, conns: Vec<Connection>) -> Result<Threads, DbError> {
        let (queue, jobs) = mpsc::channel::<Job>();
        let jobs = Arc::new(Mutex::new(jobs));
        let mut handles = Vec::with_capacity(conns.len());
        for (i, mut conn) in conns.into_iter().enumerate() {
            let jobs = Arc::clone(&jobs);
            let handle = std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn(move || {
                    loop {
                        // Held only while waiting for the next job: the
                        // others wait their turn to take one.
                        let next = jobs.lock().unwrap_or_else(|p| p.into_inner()).recv();
                        match next {
                            Ok(job) => job(&mut conn),
                            Err(_) => return,
                        }
                    }
                })?;
            handles.push(handle);
        }
        Ok(Threads {
            queue: Some(queue),
            handles,
        })
    }

    /// Runs `f` on one of these threads' connections; its answer, or a panic
    /// of it resumed here.
    async fn run<R, F>(&self, f: F) -> Result<R, DbError>
    where
        F: FnOnce(&mut Connection) -> R + Send + 'static,
        R: Send + 'static,
    {
        let (answer, answered) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |conn| {
            let _ = answer.send(std::panic::catch_unwind(AssertUnwindSafe(|| f(conn))));
        });
        self.queue
            .as_ref()
            .ok_or(DbError::Closed)?
            .send(job)
            .map_err(|_| DbError::Closed)?;
        match answered.await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            Err(_) => Err(DbError::Closed),
        }
    }
}

impl Drop for Threads {
    fn drop(&mut self) {
        // The queue closed, each thread ends after the jobs already queued.
        self.queue = None;
        // Waited for from a plain thread (a `Handle`'s stop: the file is
        // closed when it returns); on an async worker, never.
        if tokio::runtime::Handle::try_current().is_ok() {
            return;
        }
        let me = std::thread::current().id();
        for h in self.handles.drain(..) {
            if h.thread().id() != me {
                let _ = h.join();
            }
        }
    }
}

pub struct Sqlite {
    writer: Threads,
    readers: Threads,
    /// Only the writer's jobs lock it (never contended).
    kept: Arc<Mutex<Kept>>,
}

/// What the writer's transactions keep between them (`SqliteTx::take_kept`),
/// and the database's state when it was kept: trusted only while nothing but
/// those transactions changed the file. The connection's count of changed
/// rows moves with any other write made through it, and `data_version` with
/// any commit of another connection (another process).
#[derive(Default)]
pub struct Kept {
    value: Option<Box<dyn std::any::Any + Send>>,
    mark: (u64, i64),
}

fn data_version(conn: &Connection) -> Result<i64, DbError> {
    Ok(conn.query_row("PRAGMA data_version", [], |r| r.get(0))?)
}

impl Kept {
    /// Forgets the value when the database changed since it was kept.
    fn check(&mut self, conn: &Connection) -> Result<(), DbError> {
        if self.value.is_some() && self.mark != (conn.total_changes(), data_version(conn)?) {
            self.value = None;
        }
        Ok(())
    }
}

/// A connection to `path` with the settings every one of ours has.
fn connect(path: &Path) -> Result<Connection, DbError> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
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
        let conn = connect(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // A commit survives the process being killed; a power cut is the
        // host's to survive (an fsync per batch would cap ingest at the disk's
        // flush rate).
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // A deleted row's bytes are overwritten, not left in a free page: a
        // forgotten session must be gone from the file, not only from queries.
        conn.pragma_update(None, "secure_delete", "ON")?;
        let mut readers = Vec::with_capacity(READERS);
        for _ in 0..READERS {
            let r = connect(path)?;
            // A write sent to a reader by mistake fails loudly.
            r.pragma_update(None, "query_only", "ON")?;
            readers.push(r);
        }
        Ok(Sqlite {
            writer: Threads::spawn("sessionpipe-receiver-db-writer", vec![conn])?,
            readers: Threads::spawn("sessionpipe-receiver-db-reader", readers)?,
            kept: Arc::default(),
        })
    }

    /// Runs `body` as one transaction on the writer: `BEGIN IMMEDIATE` (the
    /// write lock at once, so two read-then-write steps never interleave),
    /// the body to its end, rolled back unless it committed.
    pub async fn transaction<T, E, B>(&self, body: B) -> Result<T, E>
    where
        B: FnOnce(SqliteTx<'_>) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<DbError> + Send + 'static,
    {
        let kept = Arc::clone(&self.kept);
        self.writer
            .run(move |conn| {
                conn.execute_batch("BEGIN IMMEDIATE")
                    .map_err(|e| E::from(e.into()))?;
                let mut kept = kept.lock().unwrap_or_else(|p| p.into_inner());
                kept.check(conn).map_err(E::from)?;
                body(SqliteTx {
                    conn,
                    kept: &mut kept,
                    keeping: None,
                    done: false,
                })
            })
            .await
            .map_err(E::from)?
    }

    pub async fn exec(&self, sql: &'static str, args: Vec<Arg>) -> Result<u64, DbError> {
        self.writer.run(move |c| exec(c, sql, &args)).await?
    }

    /// A plain `SELECT` goes to a reader; anything else (`... RETURNING`) to
    /// the writer.
    pub async fn rows(&self, sql: &'static str, args: Vec<Arg>) -> Result<Vec<Row>, DbError> {
        let on = if is_read(sql) {
            &self.readers
        } else {
            &self.writer
        };
        on.run(move |c| rows(c, sql, &args)).await?
    }

    /// Folds the write-ahead log into the file and cuts it to nothing, so the
    /// old page images of what was just deleted are gone from the disk too.
    pub async fn scrub(&self) -> Result<(), DbError> {
        self.writer
            .run(|c| {
                c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
                Ok(())
            })
            .await?
    }
}

/// Whether `sql` only reads: it starts with `SELECT` (`WITH` may write).
fn is_read(sql: &str) -> bool {
    let s = sql.trim_start();
    s.len() >= 6 && s[..6].eq_ignore_ascii_case("select")
}

/// Drives `fut` to its end on this thread: every statement of a SQLite
/// transaction answers at once, so one poll is enough; a body still pending
/// after it waits on something else, which would hold the writer, and is
/// refused.
pub fn finish_now<T, E: From<DbError>>(fut: impl Future<Output = Result<T, E>>) -> Result<T, E> {
    let mut fut = std::pin::pin!(fut);
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(r) => r,
        Poll::Pending => Err(E::from(DbError::Stalled)),
    }
}

pub struct SqliteTx<'c> {
    conn: &'c mut Connection,
    kept: &'c mut Kept,
    /// What this transaction keeps once it commits.
    keeping: Option<Box<dyn std::any::Any + Send>>,
    done: bool,
}

impl SqliteTx<'_> {
    /// What the last transaction to keep a `T` left, when nothing else has
    /// changed the database since (`T::default()` otherwise); taken, so it is
    /// kept again only by `keep`.
    pub fn take_kept<T: Default + Send + 'static>(&mut self) -> T {
        self.kept
            .value
            .take()
            .and_then(|v| v.downcast::<T>().ok())
            .map_or_else(T::default, |v| *v)
    }

    /// Keeps `value` for the next transaction, if this one commits.
    pub fn keep<T: Send + 'static>(&mut self, value: T) {
        self.keeping = Some(Box::new(value));
    }

    pub fn exec(&mut self, sql: &'static str, args: &[Arg]) -> Result<u64, DbError> {
        exec(self.conn, sql, args)
    }

    pub fn rows(&mut self, sql: &'static str, args: &[Arg]) -> Result<Vec<Row>, DbError> {
        rows(self.conn, sql, args)
    }

    /// Several statements without parameters (the migrations' DDL).
    pub fn script(&mut self, sql: &str) -> Result<(), DbError> {
        Ok(self.conn.execute_batch(sql)?)
    }

    pub fn commit(mut self) -> Result<(), DbError> {
        self.conn.execute_batch("COMMIT")?;
        self.done = true;
        if let Some(value) = self.keeping.take() {
            self.kept.mark = (self.conn.total_changes(), data_version(self.conn)?);
            self.kept.value = Some(value);
        }
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

thread_local! {
    /// Each statement's SQLite text, made once per thread: the statements
    /// are the program's own constants, so this holds a few dozen at most.
    static NATIVE: std::cell::RefCell<std::collections::HashMap<(usize, usize), std::rc::Rc<str>>> =
        Default::default();
}

/// `native(sql)`, looked up by the constant's address after the first time
/// (a statement's translation was a string built on every call).
fn native_of(sql: &'static str) -> std::rc::Rc<str> {
    NATIVE.with(|m| {
        std::rc::Rc::clone(
            m.borrow_mut()
                .entry((sql.as_ptr() as usize, sql.len()))
                .or_insert_with(|| native(sql).into()),
        )
    })
}

fn exec(conn: &Connection, sql: &'static str, args: &[Arg]) -> Result<u64, DbError> {
    let mut st = conn.prepare_cached(&native_of(sql))?;
    Ok(st.execute(rusqlite::params_from_iter(args.iter()))? as u64)
}

fn rows(conn: &Connection, sql: &'static str, args: &[Arg]) -> Result<Vec<Row>, DbError> {
    let mut st = conn.prepare_cached(&native_of(sql))?;
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

    #[test]
    fn only_a_select_is_a_read() {
        assert!(super::is_read("\n  SELECT 1"));
        assert!(super::is_read("select x FROM t"));
        assert!(!super::is_read("UPDATE t SET a = 1 RETURNING a"));
        assert!(!super::is_read("WITH x AS (SELECT 1) DELETE FROM t"));
        assert!(!super::is_read("SEL"));
    }
}
