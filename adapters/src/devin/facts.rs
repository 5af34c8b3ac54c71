//! Facts about a Devin session from Devin's own files (ADAPTERS.md, Devin Facts
//! row): the model, folder and first prompt from the session store, the account
//! from the user config's `devin.org_id`. The version is `store::version`'s.
//!
//! Must not read `credentials.toml` or run `devin auth status` (which would name
//! the person): the org id is the only account id Devin keeps in a plain file.
//! Must not fail: a store that is missing, busy or of another shape only means
//! fewer facts.

use super::store;
use harness::Job;
use protocol::{SessionBlock, TitleSource};
use rusqlite::{Connection, OptionalExtension};
use serde_json::Value;
use std::path::Path;

/// What the `sessions` row says of one session.
#[derive(Debug, Default, PartialEq)]
pub struct Row {
    pub cwd: Option<String>,
    pub model: Option<String>,
    pub started_ms: Option<i64>,
    pub last_ms: Option<i64>,
}

/// The facts of the call's session (`session_id` of its payload).
pub fn facts(job: &Job, session: &str) -> SessionBlock {
    let Some(home) = job.home() else {
        return SessionBlock::default();
    };
    let var = |k: &str| job.env(k).map(str::to_string);
    let mut block = SessionBlock {
        account_id: account_id(&store::config_dir(&home, &var)),
        ..Default::default()
    };
    let database = store::database(&store::data_dir(&home, &var));
    if let Some(conn) = database.is_file().then(|| store::open(&database)).flatten() {
        if let Ok(Some(row)) = row(&conn, session) {
            block.cwd = row.cwd.map(|c| spool::paths::tilde(&c, Some(&home)));
            block.model = row.model;
        }
        block.title = super::transcript::first_prompt(&conn, session)
            .ok()
            .flatten();
        block.title_source = block.title.as_ref().map(|_| TitleSource::FirstAsk);
    }
    block
}

/// The `sessions` row of `session`; its times are unix seconds.
pub fn row(conn: &Connection, session: &str) -> rusqlite::Result<Option<Row>> {
    conn.query_row(
        "SELECT working_directory, model, created_at, last_activity_at FROM sessions WHERE id = ?1",
        [session],
        |r| {
            let text = |i| -> rusqlite::Result<Option<String>> {
                Ok(r.get::<_, Option<String>>(i)?.filter(|s| !s.is_empty()))
            };
            let time = |i| -> rusqlite::Result<Option<i64>> {
                Ok(store::epoch_ms(&store::column_value(r.get_ref(i)?)))
            };
            Ok(Row {
                cwd: text(0)?,
                model: text(1)?,
                started_ms: time(2)?,
                last_ms: time(3)?,
            })
        },
    )
    .optional()
}

/// `devin.org_id` of the user config (`{"devin": {"org_id": …}}`, or the dotted
/// key itself). The file may hold comments (Devin documents JSON with comments).
pub fn account_id(config_dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(config_dir.join("config.json")).ok()?;
    let v: Value = serde_json::from_str(&without_comments(&text)).ok()?;
    let id = v
        .pointer("/devin/org_id")
        .or_else(|| v.get("devin.org_id"))?;
    match id {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `text` with its `//` and `/* */` comments blanked out, strings left alone.
/// Only for reading: the installer never writes a file that has comments.
fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => out.extend(chars.next()),
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => while chars.next_if(|&n| n != '\n').is_some() {},
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for n in chars.by_ref() {
                    if last == '*' && n == '/' {
                        break;
                    }
                    last = n;
                }
                out.push(' ');
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devin::testdb::Store;

    #[test]
    fn the_store_names_folder_model_times_and_title() {
        let s = Store::new();
        s.session("frill-vulture", "/home/ann/src/app", "swe-2-medium");
        s.prompt("frill-vulture", "!git status", 1, true);
        s.prompt("frill-vulture", "Read the file sample.txt", 2, false);
        let conn = store::open(&s.path).unwrap();
        assert_eq!(
            row(&conn, "frill-vulture").unwrap(),
            Some(Row {
                cwd: Some("/home/ann/src/app".into()),
                model: Some("swe-2-medium".into()),
                started_ms: Some(1_790_157_600_000),
                last_ms: Some(1_790_157_700_000),
            })
        );
        assert_eq!(row(&conn, "nobody").unwrap(), None);

        let home = tempfile::tempdir().unwrap();
        let data = home.path().join(".local/share/devin/cli");
        std::fs::create_dir_all(&data).unwrap();
        std::fs::copy(&s.path, data.join("sessions.db")).unwrap();
        let job = Job {
            env: [("HOME".to_string(), home.path().display().to_string())].into(),
            ..Default::default()
        };
        let f = facts(&job, "frill-vulture");
        assert_eq!(f.model.as_deref(), Some("swe-2-medium"));
        assert_eq!(f.cwd.as_deref(), Some("/home/ann/src/app"));
        assert_eq!(
            (f.title.as_deref(), f.title_source),
            (
                Some("Read the file sample.txt"),
                Some(TitleSource::FirstAsk)
            )
        );
        assert_eq!(f.account_id, None);
    }

    #[test]
    fn the_account_is_the_org_id_of_a_config_with_or_without_comments() {
        let dir = tempfile::tempdir().unwrap();
        let write = |s: &str| std::fs::write(dir.path().join("config.json"), s).unwrap();
        assert_eq!(account_id(dir.path()), None);
        write(
            "{\n  // the org, set by `devin auth`\n  \"devin\": {\"org_id\": \"org-7f3a\" /* inline */},\n  \"url\": \"https://x.example/a//b\"\n}",
        );
        assert_eq!(account_id(dir.path()).as_deref(), Some("org-7f3a"));
        write(r#"{"devin.org_id": "org-dotted", "hooks": {}}"#);
        assert_eq!(account_id(dir.path()).as_deref(), Some("org-dotted"));
        write(r#"{"devin": {"org_id": ""}, "email": "ann@example.com"}"#);
        assert_eq!(account_id(dir.path()), None);
        assert_eq!(
            without_comments(r#"{"a": "x\"//y", /* z */ "b": 1} // end"#),
            r#"{"a": "x\"//y",   "b": 1} "#
        );
    }
}
