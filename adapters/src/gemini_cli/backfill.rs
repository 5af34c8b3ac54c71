//! Gemini CLI's past sessions, for `sessionpipe backfill`: every chat file
//! (`<gemini home>/.gemini/tmp/<project>/chats/session-*.jsonl`, and the whole-JSON
//! `session-*.json` of older versions, which Gemini CLI still lists) modified
//! since the cutoff, read once, streamed, for the session's times, turns,
//! folder, model and title.
//!
//! Owns only the listing and what one file adds up to; the records are read by
//! `transcript::Parser`, as the live reader reads them. Must not write anything
//! under Gemini CLI's home.
//!
//! Not sessions: a subagent's own file (`kind: subagent`, in a folder of its
//! parent's), and a file that holds no prompt. Gemini CLI leaves one of those
//! behind each time a session is resumed: the start names a fresh file, then
//! goes on in the old one (measured on 0.61.0), so two files share a session id;
//! and a `.json` session converted on resume goes on as a `.jsonl` beside it. A
//! session is therefore the newest of its files.

use super::transcript::{Parser, Record};
use harness::backfill::{Backfilled, Tally, modified_since, newest_first};
use harness::transcript::{MAX_LINE_BYTES, for_each_line};
use protocol::TitleSource;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A `first-ask` title is this many characters of the first ask.
const FIRST_ASK_CHARS: usize = 80;

/// The sessions of `<gemini_dir>/tmp/*/chats/`, newest first.
pub fn sessions(gemini_dir: &Path, home: &Path, since_ms: i64) -> Vec<Backfilled> {
    let mut found = Vec::new();
    let Ok(projects) = std::fs::read_dir(gemini_dir.join("tmp")) else {
        return Vec::new();
    };
    for project in projects.flatten() {
        let Ok(chats) = std::fs::read_dir(project.path().join("chats")) else {
            continue;
        };
        let mut cwd = None;
        for f in chats.flatten() {
            let path = f.path();
            if !is_session_file(&path) || !modified_since(&path, since_ms) {
                continue;
            }
            let Some(mut b) = scan(&path) else {
                continue;
            };
            let folder = cwd.get_or_insert_with(|| project_root(&project.path(), gemini_dir));
            b.block.cwd = folder
                .as_ref()
                .map(|p| spool::paths::tilde(&p.to_string_lossy(), Some(home)));
            found.push(b);
        }
    }
    newest_first(found)
}

/// `session-*.jsonl` or `session-*.json`, as Gemini CLI lists its sessions.
fn is_session_file(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.starts_with("session-")
        && (name.ends_with(".jsonl") || name.ends_with(".json"))
        && path.is_file()
}

/// What one file adds up to, record by record: the skeleton's `Tally`, and what
/// only Gemini CLI's records say (a subagent's file).
#[derive(Default)]
struct File {
    parser: Parser,
    tally: Tally,
    subagent: bool,
}

impl File {
    fn add(&mut self, v: &Value) {
        let r: Record = self.parser.record(v);
        let t = &mut self.tally;
        t.session_id = r.session_id.or(t.session_id.take());
        self.subagent |= r.kind.as_deref() == Some("subagent");
        if let Some(summary) = r.summary {
            t.title(summary, TitleSource::Harness);
        }
        t.block.model = r.model.or(t.block.model.take());
        t.usage.extend(r.usage);
        for ms in r.times {
            t.time(ms);
        }
        t.recs(&r.recs);
    }
}

/// The session one file holds; `None` for no session (see the module comment).
fn scan(path: &Path) -> Option<Backfilled> {
    let mut f = File::default();
    if path.extension().is_some_and(|x| x == "jsonl") {
        for_each_line(path, 0, MAX_LINE_BYTES, &mut |line| {
            if let Ok(v) = serde_json::from_str::<Value>(line) {
                f.add(&v);
            }
        })
        .ok()?;
    } else {
        // An older version's whole-JSON file: its metadata, then its messages.
        let mut whole: Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
        let messages = whole.get_mut("messages").map(Value::take);
        f.add(&whole);
        for m in messages
            .as_ref()
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            f.add(m);
        }
    }
    if f.subagent || f.tally.turns() == 0 {
        return None;
    }
    f.tally.finish(FIRST_ASK_CHARS)
}

/// The folder a project's chats belong to: the `.project_root` Gemini CLI keeps
/// in its folder, else the entry of its project registry (`projects.json`,
/// folder → name) that names this folder, or whose SHA-256 this folder is
/// named by (older versions named it so).
fn project_root(project: &Path, gemini_dir: &Path) -> Option<PathBuf> {
    if let Ok(root) = std::fs::read_to_string(project.join(".project_root"))
        && !root.trim().is_empty()
    {
        return Some(PathBuf::from(root.trim()));
    }
    let name = project.file_name()?.to_str()?;
    let registry: Value =
        serde_json::from_slice(&std::fs::read(gemini_dir.join("projects.json")).ok()?).ok()?;
    registry
        .get("projects")?
        .as_object()?
        .iter()
        .find(|(path, slug)| slug.as_str() == Some(name) || sha256_hex(path) == name)
        .map(|(path, _)| PathBuf::from(path))
}

fn sha256_hex(s: &str) -> String {
    harness::digest::sha256_hex(s.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SID: &str = "da37ea1e-f168-47e4-857f-af1b2dbcdac1";

    fn write_lines(path: &Path, lines: &[Value]) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(path, text).unwrap();
    }

    fn meta(at: &str) -> Value {
        json!({"sessionId": SID, "projectHash": "h", "startTime": at, "lastUpdated": at, "kind": "main"})
    }

    #[test]
    fn a_chat_file_becomes_one_session() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        let gemini = home.join(".gemini");
        let project = gemini.join("tmp/app");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(
            project.join(".project_root"),
            home.join("src/app").display().to_string(),
        )
        .unwrap();
        let long =
            "please fix the parser: it drops the last line of every file it reads, every time";
        write_lines(
            &project.join("chats/session-2026-11-29T20-19-da37ea1e.jsonl"),
            &[
                meta("2026-11-29T20:19:28.082Z"),
                json!({"id": "u1", "timestamp": "2026-11-29T20:19:29.119Z", "type": "user", "content": [{"text": long}]}),
                json!({"id": "g1", "timestamp": "2026-11-29T20:19:32.260Z", "type": "gemini", "content": "Fixed.", "model": "gemini-2.5-pro"}),
                json!({"id": "u2", "timestamp": "2026-11-29T20:20:00.000Z", "type": "user", "content": [{"text": "thanks"}]}),
                json!({"$set": {"lastUpdated": "2026-11-29T20:20:05.000Z"}}),
            ],
        );
        // The fresh file a resume leaves behind, with the same id and no prompt.
        write_lines(
            &project.join("chats/session-2026-11-29T20-30-da37ea1e.jsonl"),
            &[meta("2026-11-29T20:30:00.000Z")],
        );
        // A subagent's own file, one folder down, and a file that is no session.
        write_lines(
            &project.join(format!("chats/{SID}/sub.jsonl")),
            &[meta("2026-11-29T20:19:30.000Z")],
        );
        std::fs::write(project.join("chats/notes.txt"), "x").unwrap();

        let found = sessions(&gemini, home, 0);
        assert_eq!(found.len(), 1, "{found:?}");
        let b = &found[0];
        assert_eq!(b.session_id, SID);
        assert_eq!(b.turns, Some(2));
        assert_eq!(b.block.cwd.as_deref(), Some("~/src/app"));
        assert_eq!(b.block.model.as_deref(), Some("gemini-2.5-pro"));
        assert_eq!(b.block.title_source, Some(TitleSource::FirstAsk));
        assert_eq!(b.block.title.as_deref().unwrap().chars().count(), 80);
        assert_eq!(
            protocol::time::rfc3339_ms(b.started_ms),
            "2026-11-29T20:19:28.082Z"
        );
        assert_eq!(
            protocol::time::rfc3339_ms(b.last_ms),
            "2026-11-29T20:20:05.000Z"
        );
        assert!(sessions(&gemini, home, i64::MAX).is_empty(), "too old");
    }

    #[test]
    fn an_older_whole_json_file_its_summary_and_a_hashed_folder() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        let gemini = home.join(".gemini");
        let root = "/srv/work/api";
        let project = gemini.join("tmp").join(sha256_hex(root));
        std::fs::create_dir_all(project.join("chats")).unwrap();
        std::fs::write(
            gemini.join("projects.json"),
            json!({"projects": {"/elsewhere": "other"}}).to_string(),
        )
        .unwrap();
        let mut legacy = meta("2026-10-01T08:00:00.000Z");
        legacy["summary"] = json!("Add the health endpoint");
        legacy["messages"] = json!([
            {"id": "u1", "timestamp": "2026-10-01T08:00:01.000Z", "type": "user", "content": [{"text": "add /health"}]},
            {"id": "g1", "timestamp": "2026-10-01T08:00:09.000Z", "type": "gemini", "content": "Added."}
        ]);
        std::fs::write(
            project.join("chats/session-2026-10-01T08-00-da37ea1e.json"),
            legacy.to_string(),
        )
        .unwrap();
        // The registry is only asked when `.project_root` is missing.
        assert_eq!(sessions(&gemini, home, 0)[0].block.cwd, None);
        std::fs::write(
            gemini.join("projects.json"),
            json!({"projects": {root: "api"}}).to_string(),
        )
        .unwrap();
        let b = &sessions(&gemini, home, 0)[0];
        assert_eq!(b.block.cwd.as_deref(), Some(root));
        assert_eq!(
            (b.block.title.as_deref(), b.block.title_source),
            (Some("Add the health endpoint"), Some(TitleSource::Harness))
        );
        assert_eq!(
            (b.turns, protocol::time::rfc3339_ms(b.last_ms).as_str()),
            (Some(1), "2026-10-01T08:00:09.000Z")
        );
    }
}
