//! Devin's session store: one SQLite database for every session
//! (`<data dir>/sessions.db`), and how this adapter gets into it.
//!
//! Owns where the store and Devin's data and config folders are, the
//! `<database>#<session id>` address a session's transcript goes by (there is no
//! per-session file), opening the database, and the installed version beside it
//! (`_versions/current`). It must never write to the
//! database or create it: every connection is opened read-only, without the
//! create flag, and set `query_only`. Devin writes to it while it runs, so a
//! busy or locked database is "nothing to read now", never an error.

use rusqlite::{Connection, ErrorCode, OpenFlags};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a read waits for Devin to finish a write before it gives up for now.
/// Short: the daemon reads inside the session's turn, and the next hook reads
/// again anyway.
const BUSY_WAIT: Duration = Duration::from_millis(250);

/// Devin's data folder, which holds `sessions.db` and `_versions/`:
/// `%APPDATA%\devin\cli` on Windows, else `$XDG_DATA_HOME/devin/cli` (an absolute
/// one, as XDG asks) or `~/.local/share/devin/cli`.
pub fn data_dir(home: &Path, var: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    base_dir(home, var, "XDG_DATA_HOME", ".local/share").join("cli")
}

/// Devin's config folder, which holds `config.json`: `%APPDATA%\devin` on
/// Windows, else `$XDG_CONFIG_HOME/devin` (absolute) or `~/.config/devin`.
pub fn config_dir(home: &Path, var: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    base_dir(home, var, "XDG_CONFIG_HOME", ".config")
}

fn base_dir(
    home: &Path,
    var: &dyn Fn(&str) -> Option<String>,
    xdg: &str,
    fallback: &str,
) -> PathBuf {
    if cfg!(windows)
        && let Some(appdata) = var("APPDATA")
    {
        return Path::new(&appdata).join("devin");
    }
    match var(xdg).map(PathBuf::from) {
        Some(dir) if dir.is_absolute() => dir.join("devin"),
        _ => home.join(fallback).join("devin"),
    }
}

/// The store's file in `data_dir`.
pub fn database(data_dir: &Path) -> PathBuf {
    data_dir.join("sessions.db")
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

/// True for the errors that mean Devin holds the database right now.
pub fn busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// Epoch milliseconds from a time as Devin stores it: unix seconds (the
/// `sessions` and `message_nodes` columns), milliseconds (a number too large to
/// be seconds), or an RFC 3339 string (what a message's own metadata may hold).
pub fn epoch_ms(v: &Value) -> Option<i64> {
    /// Past this, a number is milliseconds: seconds would be after year 5000.
    const MS_FROM: f64 = 1e11;
    match v {
        Value::Number(n) => {
            let f = n.as_f64()?;
            let ms = if f.abs() >= MS_FROM { f } else { f * 1000.0 };
            (ms > 0.0).then_some(ms as i64)
        }
        Value::String(s) => match s.trim().parse::<f64>() {
            Ok(f) => epoch_ms(&Value::from(f)),
            Err(_) => protocol::time::parse_rfc3339_ms(s.trim()),
        },
        _ => None,
    }
}

/// A column read as JSON-ish: integers, reals and text, whatever type Devin
/// gave it.
pub fn column_value(v: rusqlite::types::ValueRef<'_>) -> Value {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Integer(i) => Value::from(i),
        ValueRef::Real(f) => Value::from(f),
        ValueRef::Text(t) => Value::from(String::from_utf8_lossy(t).into_owned()),
        _ => Value::Null,
    }
}

/// The installed version: the name `_versions/current` points at
/// (`_versions/3000.11.3`, or a path inside it such as `…/3000.11.3/bin/devin`).
pub fn version(data_dir: &Path) -> Option<String> {
    let target = std::fs::read_link(data_dir.join("_versions").join("current")).ok()?;
    target
        .iter()
        .rev()
        .filter_map(|c| c.to_str())
        .find(|c| plausible_version(c))
        .map(str::to_string)
}

/// A version names itself with a digit first and no more than letters, digits,
/// dots, dashes and pluses (`3000.11.3`, `3000.12.0-rc1`).
fn plausible_version(s: &str) -> bool {
    s.len() <= 64
        && s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_address_names_the_database_and_the_session() {
        let a = address(
            Path::new("/h/.local/share/devin/cli/sessions.db"),
            "frill-vulture",
        );
        assert_eq!(
            a,
            Path::new("/h/.local/share/devin/cli/sessions.db#frill-vulture")
        );
        assert_eq!(
            split(&a),
            Some((
                PathBuf::from("/h/.local/share/devin/cli/sessions.db"),
                "frill-vulture".to_string()
            ))
        );
        let odd = address(Path::new("/h/a#b/sessions.db"), "s1");
        assert_eq!(split(&odd).unwrap().0, Path::new("/h/a#b/sessions.db"));
        assert_eq!(split(Path::new("/no/hash")), None);
    }

    #[test]
    fn folders_follow_xdg() {
        let home = Path::new("/home/ann");
        let none = |_: &str| None;
        assert_eq!(
            data_dir(home, &none),
            Path::new("/home/ann/.local/share/devin/cli")
        );
        assert_eq!(
            config_dir(home, &none),
            Path::new("/home/ann/.config/devin")
        );
        let xdg = |k: &str| (k == "XDG_DATA_HOME").then(|| "/x/data".to_string());
        assert_eq!(data_dir(home, &xdg), Path::new("/x/data/devin/cli"));
        let relative = |_: &str| Some("rel".to_string());
        assert_eq!(
            config_dir(home, &relative),
            Path::new("/home/ann/.config/devin")
        );
    }

    #[test]
    fn times_in_seconds_milliseconds_or_text() {
        assert_eq!(epoch_ms(&json!(1_790_157_600)), Some(1_790_157_600_000));
        assert_eq!(
            epoch_ms(&json!(1_790_157_600_123_i64)),
            Some(1_790_157_600_123)
        );
        assert_eq!(epoch_ms(&json!(1_790_157_600.5)), Some(1_790_157_600_500));
        assert_eq!(
            epoch_ms(&json!("2026-10-08T22:23:16.000Z")),
            protocol::time::parse_rfc3339_ms("2026-10-08T22:23:16.000Z")
        );
        assert_eq!(epoch_ms(&json!("1790157600")), Some(1_790_157_600_000));
        assert_eq!(epoch_ms(&json!(null)), None);
        assert_eq!(epoch_ms(&json!("soon")), None);
    }

    #[test]
    fn a_missing_store_is_not_created() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("sessions.db");
        assert!(open(&db).is_none());
        assert!(!db.exists());
    }

    #[test]
    fn the_version_is_where_current_points() {
        let dir = tempfile::tempdir().unwrap();
        let versions = dir.path().join("_versions");
        std::fs::create_dir_all(versions.join("3000.11.3/bin")).unwrap();
        assert_eq!(version(dir.path()), None);
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("3000.11.3", versions.join("current")).unwrap();
            assert_eq!(version(dir.path()).as_deref(), Some("3000.11.3"));
            std::fs::remove_file(versions.join("current")).unwrap();
            std::os::unix::fs::symlink(
                versions.join("3000.11.3/bin/devin"),
                versions.join("current"),
            )
            .unwrap();
            assert_eq!(version(dir.path()).as_deref(), Some("3000.11.3"));
        }
        assert!(plausible_version("3000.12.0-rc1"));
        assert!(!plausible_version("bin"));
        assert!(!plausible_version("3000 11"));
    }
}
