//! OpenCode's store: one SQLite database for every session
//! (`<data dir>/opencode/opencode.db`), and how this adapter gets into it.
//!
//! Owns where the store is (`$XDG_DATA_HOME`, absolute, else `~/.local/share`),
//! the `<database>#<session id>` address a session's transcript goes by (there is
//! no per-session file), and opening the database. It must never write to the
//! database or create it: every connection is opened read-only, without the
//! create flag, and set `query_only`. OpenCode writes to it while it runs (in WAL
//! mode), so a busy or locked database is "nothing to read now", never an error.

use rusqlite::{Connection, ErrorCode, OpenFlags};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a read waits for OpenCode to finish a write before it gives up for
/// now. Short: the daemon reads inside the session's turn, and the next event
/// reads again anyway.
const BUSY_WAIT: Duration = Duration::from_millis(250);

/// The store's file: `$XDG_DATA_HOME/opencode/opencode.db` when that variable is
/// an absolute path, else `~/.local/share/opencode/opencode.db` (OpenCode uses
/// the XDG folders on every platform).
pub fn database(home: &Path, var: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    let data = match var("XDG_DATA_HOME").map(PathBuf::from) {
        Some(dir) if dir.is_absolute() => dir,
        _ => home.join(".local/share"),
    };
    data.join("opencode").join("opencode.db")
}

/// The transcript address of one session: `<database>#<session id>`.
pub fn address(database: &Path, session_id: &str) -> PathBuf {
    let mut s = database.as_os_str().to_owned();
    s.push("#");
    s.push(session_id);
    PathBuf::from(s)
}

/// The database and session id of an address. The id is after the last `#`:
/// a protocol session id never holds one, a folder name may.
pub fn split(address: &Path) -> Option<(PathBuf, String)> {
    let s = address.to_str()?;
    let (db, id) = s.rsplit_once('#')?;
    (!db.is_empty() && !id.is_empty()).then(|| (PathBuf::from(db), id.to_string()))
}

/// Opens the store read-only. `None` when it does not exist or cannot be opened
/// (a missing store is never created: there is no create flag).
pub fn open(database: &Path) -> Option<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(database, flags).ok()?;
    conn.busy_timeout(BUSY_WAIT).ok()?;
    // Belt and braces: a statement that would write is refused by SQLite.
    conn.pragma_update(None, "query_only", true).ok()?;
    Some(conn)
}

/// True for the errors that mean OpenCode holds the database right now.
pub fn busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_follows_xdg_and_an_address_splits_back() {
        let home = Path::new("/home/ann");
        let none = |_: &str| None;
        let db = database(home, &none);
        assert_eq!(db, Path::new("/home/ann/.local/share/opencode/opencode.db"));
        let xdg = |k: &str| (k == "XDG_DATA_HOME").then(|| "/x/data".to_string());
        assert_eq!(
            database(home, &xdg),
            Path::new("/x/data/opencode/opencode.db")
        );
        let relative = |_: &str| Some("rel".to_string());
        assert_eq!(database(home, &relative), db);
        let a = address(&db, "ses_1");
        assert_eq!(split(&a), Some((db, "ses_1".to_string())));
        assert_eq!(split(Path::new("/no/hash")), None);
    }

    #[test]
    fn a_missing_store_is_not_created() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("opencode.db");
        assert!(open(&db).is_none());
        assert!(!db.exists());
    }
}
