//! `sessionpipe_db`: the one SQLite file the daemon keeps (`outbox.db`), as
//! every layer that owns tables in it opens it ([`open`], [`open_readonly`]:
//! one set of pragmas, private from its first byte), and how those tables
//! migrate. Each layer (the pipeline, control, …) owns its steps as a
//! [`Layer`]; [`migrate`] runs the steps of that one layer the file lacks, in
//! order, in one transaction, and keeps the layer's version in the file's
//! ledger (`schema_layers`). A layer migrates its own tables and nobody
//! else's, whichever layer opens the file first.
//!
//! Before layers kept their own versions, one list of steps numbered every
//! layer's together in SQLite's `user_version` (1 to 7). A step keeps the
//! number it had there, so a file written by any earlier version walks the
//! same steps forward: when it first becomes layered, its old `user_version`
//! is kept in the ledger and each layer takes from it where it stood. Steps
//! added since number on from 8, each layer on its own. A file, or a layer,
//! newer than this build knows is refused, never guessed at; a reader never
//! migrates.
//!
//! It knows no layer and no table but its ledger, and does no I/O but the
//! file.

use rusqlite::{
    Connection, OpenFlags, OptionalExtension, Transaction, TransactionBehavior, params,
};
use std::path::Path;
use std::time::Duration;

/// The `user_version` of a file whose layers keep their own versions in
/// `schema_layers` (the one list earlier versions kept ended at 7).
pub const LAYERED: i64 = 8;

/// The last number of the one list: steps added since number past it.
const ONE_LIST_LAST: i64 = 7;

/// The ledger row that keeps where the one list stood when the file became
/// layered (no layer is named so).
const ONE_LIST: &str = "(one list)";

const LEDGER: &str = "CREATE TABLE IF NOT EXISTS schema_layers (
    layer    TEXT PRIMARY KEY,
    version  INTEGER NOT NULL
) WITHOUT ROWID;";

/// Why the file could not be opened or migrated.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    /// A newer sessionpipe wrote the file or the layer's tables: this one
    /// would misread them, so it stops.
    #[error("{what} has schema {found}, newer than the {known} this sessionpipe knows")]
    Newer {
        what: String,
        found: i64,
        known: i64,
    },
}

/// One migration step of a layer.
pub struct Step {
    /// Its number: the version a layer has once it ran. Increasing within a
    /// layer; a step of the one list keeps its number there (1 to 7), a
    /// later one numbers past 7.
    pub n: i64,
    pub run: Run,
}

/// What a step does.
pub enum Run {
    Sql(&'static str),
    /// Rust over the rows, where SQL cannot say it. True when it rewrote
    /// rows whose old text must not stay in the file's free pages or its WAL
    /// (the file is vacuumed after the commit).
    Code(fn(&Transaction<'_>) -> rusqlite::Result<bool>),
}

impl Step {
    pub const fn sql(n: i64, sql: &'static str) -> Step {
        Step {
            n,
            run: Run::Sql(sql),
        }
    }

    pub const fn code(n: i64, run: fn(&Transaction<'_>) -> rusqlite::Result<bool>) -> Step {
        Step {
            n,
            run: Run::Code(run),
        }
    }
}

/// A layer's tables: its name in the ledger and its steps, in order. A step
/// is only ever appended.
pub struct Layer {
    pub name: &'static str,
    pub steps: &'static [Step],
}

impl Layer {
    /// The version this build writes: its last step's number.
    pub fn current(&self) -> i64 {
        self.steps.last().map_or(0, |s| s.n)
    }

    /// Where the layer stood in a file of the one list at `one_list`: its
    /// last step at or below it.
    fn stood_at(&self, one_list: i64) -> i64 {
        self.steps
            .iter()
            .map(|s| s.n)
            .filter(|n| *n <= one_list.min(ONE_LIST_LAST))
            .max()
            .unwrap_or(0)
    }
}

/// Opens (creating when needed) the file for writing, as every layer opens
/// it: private (0600), waiting up to 10 s for another writer, in WAL.
pub fn open(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
    }
    conn.busy_timeout(Duration::from_secs(10))?;
    // Pages that retention frees go back to the file system a few at a
    // time (`incremental_vacuum`). Only a file without tables yet takes
    // this at once; an older file switches at its next VACUUM (`retention`
    // runs one when that is cheap).
    conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    // FULL: a commit is on disk before its job file is unlinked.
    conn.pragma_update(None, "synchronous", "FULL")?;
    Ok(conn)
}

/// Opens an existing file for reading only (status, tail, the board).
pub fn open_readonly(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(Duration::from_secs(10))?;
    Ok(conn)
}

/// The file's own `user_version`.
fn file_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.pragma_query_value(None, "user_version", |r| r.get(0))
}

fn ledger_row(conn: &Connection, layer: &str) -> rusqlite::Result<Option<i64>> {
    conn.query_row(
        "SELECT version FROM schema_layers WHERE layer = ?1",
        params![layer],
        |r| r.get(0),
    )
    .optional()
}

/// The version of `layer`'s tables in the file, read without migrating
/// (0: none yet); a file or a layer newer than this build is refused.
pub fn version(conn: &Connection, layer: &Layer) -> Result<i64, DbError> {
    let at = match file_version(conn)? {
        newer if newer > LAYERED => {
            return Err(DbError::Newer {
                what: "the file".into(),
                found: newer,
                known: LAYERED,
            });
        }
        LAYERED => match ledger_row(conn, layer.name)? {
            Some(v) => v,
            None => layer.stood_at(ledger_row(conn, ONE_LIST)?.unwrap_or(0)),
        },
        one_list => layer.stood_at(one_list),
    };
    if at > layer.current() {
        return Err(DbError::Newer {
            what: format!("the {} tables", layer.name),
            found: at,
            known: layer.current(),
        });
    }
    Ok(at)
}

/// Runs the steps of `layer` the file lacks, in one transaction (a reader
/// sees the old tables or the new, never half). Concurrent openers queue on
/// the write lock and find the work done.
pub fn migrate(conn: &mut Connection, layer: &Layer) -> Result<(), DbError> {
    // Most opens find nothing to do, asked without a write lock (a layer
    // that stood where it should in the one list gets its own row still).
    if file_version(conn)? == LAYERED && ledger_row(conn, layer.name)? == Some(layer.current()) {
        return Ok(());
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let found = file_version(&tx)?;
    if found < LAYERED {
        // The file becomes layered: where the one list stood is kept for
        // every layer that comes to it later.
        tx.execute_batch(LEDGER)?;
        tx.execute(
            "INSERT OR REPLACE INTO schema_layers (layer, version) VALUES (?1, ?2)",
            params![ONE_LIST, found],
        )?;
        tx.pragma_update(None, "user_version", LAYERED)?;
    }
    let at = version(&tx, layer)?;
    let mut rewrote = false;
    for step in layer.steps.iter().filter(|s| s.n > at) {
        match step.run {
            Run::Sql(sql) => tx.execute_batch(sql)?,
            Run::Code(run) => rewrote |= run(&tx)?,
        }
    }
    tx.execute(
        "INSERT INTO schema_layers (layer, version) VALUES (?1, ?2)
         ON CONFLICT (layer) DO UPDATE SET version = excluded.version",
        params![layer.name, layer.current()],
    )?;
    tx.commit()?;
    if rewrote {
        // The old text sits in free pages and in the WAL until both are gone.
        // Best effort: a reader holding the file open makes VACUUM busy, and the
        // migration is committed either way.
        if let Err(e) = conn.execute_batch("VACUUM; PRAGMA wal_checkpoint(TRUNCATE);") {
            tracing::warn!("{}: vacuum after a rewrite: {e}", layer.name);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Layer = Layer {
        name: "a",
        steps: &[
            Step::sql(1, "CREATE TABLE a1 (x);"),
            Step::sql(4, "CREATE TABLE a4 (x);"),
        ],
    };
    const B: Layer = Layer {
        name: "b",
        steps: &[
            Step::sql(2, "CREATE TABLE b2 (x);"),
            Step::code(3, mark),
            Step::sql(8, "CREATE TABLE b8 (x);"),
        ],
    };

    fn mark(tx: &Transaction<'_>) -> rusqlite::Result<bool> {
        tx.execute_batch("INSERT INTO b2 VALUES ('marked');")?;
        Ok(true)
    }

    fn tables(conn: &Connection) -> Vec<String> {
        let mut stmt = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    #[test]
    fn each_layer_migrates_its_own_tables_whichever_comes_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.db");
        let mut b = open(&path).unwrap();
        migrate(&mut b, &B).unwrap();
        assert_eq!(tables(&b), ["b2", "b8", "schema_layers"]);
        assert_eq!(version(&b, &A).unwrap(), 0, "a has not come yet");
        let mut a = open(&path).unwrap();
        migrate(&mut a, &A).unwrap();
        assert_eq!((version(&a, &A).unwrap(), version(&a, &B).unwrap()), (4, 8));
        assert_eq!(file_version(&a).unwrap(), LAYERED);
        // Nothing left to do: the mark is made once.
        migrate(&mut a, &A).unwrap();
        migrate(&mut b, &B).unwrap();
        let marks: i64 = a
            .query_row("SELECT count(*) FROM b2", [], |r| r.get(0))
            .unwrap();
        assert_eq!(marks, 1);
    }

    /// A file of the one list at 3 had a1, b2 and b3's mark: each layer goes
    /// on from where it stood (a from 1, b from 3), whichever comes first.
    #[test]
    fn a_file_of_the_one_list_goes_on_where_each_layer_stood() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.db");
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch(
                "CREATE TABLE a1 (x); CREATE TABLE b2 (x); INSERT INTO b2 VALUES ('marked');
                 PRAGMA user_version = 3;",
            )
            .unwrap();
        }
        let ro = open_readonly(&path).unwrap();
        assert_eq!(
            (version(&ro, &A).unwrap(), version(&ro, &B).unwrap()),
            (1, 3)
        );
        drop(ro);
        let mut c = open(&path).unwrap();
        migrate(&mut c, &A).unwrap();
        assert_eq!(version(&c, &B).unwrap(), 3, "b still stands where it stood");
        migrate(&mut c, &B).unwrap();
        assert_eq!(tables(&c), ["a1", "a4", "b2", "b8", "schema_layers"]);
        let marks: i64 = c
            .query_row("SELECT count(*) FROM b2", [], |r| r.get(0))
            .unwrap();
        assert_eq!(marks, 1, "b3 is not run again");
    }

    #[test]
    fn a_newer_file_or_layer_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.db");
        let mut c = open(&path).unwrap();
        migrate(&mut c, &A).unwrap();
        c.execute("UPDATE schema_layers SET version = 9 WHERE layer = 'a'", [])
            .unwrap();
        match migrate(&mut c, &A) {
            Err(DbError::Newer {
                found: 9,
                known: 4,
                what,
            }) => {
                assert_eq!(what, "the a tables")
            }
            other => panic!("{other:?}"),
        }
        migrate(&mut c, &B).unwrap();
        c.pragma_update(None, "user_version", 99).unwrap();
        for got in [version(&c, &B).err(), migrate(&mut c, &B).err()] {
            assert!(
                matches!(
                    got,
                    Some(DbError::Newer {
                        found: 99,
                        known: LAYERED,
                        ..
                    })
                ),
                "{got:?}"
            );
        }
        assert_eq!(file_version(&c).unwrap(), 99);
    }
}
