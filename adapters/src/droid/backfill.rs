//! Droid's past sessions, for `sessionpipe backfill`: every
//! `~/.factory/sessions/<folder>/<id>.jsonl` modified since the cutoff, read once,
//! streamed, for the session's times, turns, folder, model and title.
//!
//! Owns only the listing and what one transcript adds up to; the records are
//! read by `transcript::record`, as the live reader reads them. Must not write
//! anything under Droid's folder. A transcript with no ask of the person's is not
//! a session, and neither is a subagent's (its `session_start` names the session
//! that called it, whose part it is, as it is live).

use super::transcript::{record, settings_model};
use harness::backfill::{Backfilled, Tally, modified_since, newest_first};
use harness::transcript::{MAX_LINE_BYTES, for_each_line};
use serde_json::Value;
use std::path::Path;

/// A `first-ask` title is this many characters of the first ask.
const FIRST_ASK_CHARS: usize = 80;

/// The sessions of `sessions_dir` (`~/.factory/sessions`), newest first.
pub fn sessions(sessions_dir: &Path, home: &Path, since_ms: i64) -> Vec<Backfilled> {
    let Ok(folders) = std::fs::read_dir(sessions_dir) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for folder in folders.flatten() {
        let Ok(files) = std::fs::read_dir(folder.path()) else {
            continue;
        };
        for f in files.flatten() {
            let path = f.path();
            let is_transcript = path.extension().is_some_and(|x| x == "jsonl") && path.is_file();
            if is_transcript
                && modified_since(&path, since_ms)
                && let Some(b) = scan(&path, home)
            {
                found.push(b);
            }
        }
    }
    newest_first(found)
}

fn scan(path: &Path, home: &Path) -> Option<Backfilled> {
    let id = path.file_stem()?.to_str()?.to_string();
    let mut t = Tally::of(id);
    let mut subagent = false;
    for_each_line(path, 0, MAX_LINE_BYTES, &mut |line| {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            return;
        };
        let r = record(&v);
        subagent |= r.caller.is_some();
        if let Some(ms) = r.at_ms {
            t.time(ms);
        }
        if let Some(cwd) = r.cwd {
            t.block.cwd = Some(spool::paths::tilde(&cwd, Some(home)));
        }
        if let Some((title, source)) = r.title {
            t.title(title, source);
        }
        t.block.model = r.model.or(t.block.model.take());
        t.recs(&r.recs);
    })
    .ok()?;
    if subagent || t.turns() == 0 {
        return None;
    }
    if let Some(model) = settings_model(path) {
        t.block.model = Some(model);
    }
    t.finish(FIRST_ASK_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_session_with_an_ask_is_found_with_its_facts() {
        let home = tempfile::tempdir().unwrap();
        let sessions_dir = home.path().join(".factory/sessions");
        let folder = sessions_dir.join("-home-ann-proj");
        std::fs::create_dir_all(&folder).unwrap();
        let id = "9361b64e-b749-46bb-8a2e-0c95c93721fb";
        let cwd = home.path().join("proj");
        let text = [
            json!({"type": "session_start", "id": id, "title": "run echo hello", "cwd": cwd}),
            json!({"type": "message", "timestamp": "2026-12-01T15:22:20.173Z",
                "message": {"role": "user", "content": [{"type": "text", "text": "run echo hello"}]}}),
            json!({"type": "message", "timestamp": "2026-12-01T15:22:21.000Z",
                "message": {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}}),
        ]
        .iter()
        .map(|v| format!("{v}\n"))
        .collect::<String>();
        std::fs::write(folder.join(format!("{id}.jsonl")), text).unwrap();
        std::fs::write(
            folder.join(format!("{id}.settings.json")),
            r#"{"model":"custom:Mock-0"}"#,
        )
        .unwrap();
        std::fs::write(
            folder.join("empty.jsonl"),
            "{\"type\":\"session_start\",\"id\":\"e\"}\n",
        )
        .unwrap();
        // A `Task` call's subagent, in a file of its own (Droid 0.225.2).
        let sub = [
            json!({"type": "session_start", "id": "sub", "title": "Worker: Echo in subagent",
                "callingSessionId": id, "callingToolUseId": "call_1", "cwd": cwd}),
            json!({"type": "message", "timestamp": "2026-12-01T15:22:20.500Z",
                "message": {"role": "user", "content": [{"type": "text", "text": "# Task Tool Invocation"}]}}),
            json!({"type": "message", "timestamp": "2026-12-01T15:22:20.900Z",
                "message": {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}}),
        ]
        .iter()
        .map(|v| format!("{v}\n"))
        .collect::<String>();
        std::fs::write(folder.join("sub.jsonl"), sub).unwrap();

        let found = sessions(&sessions_dir, home.path(), 0);
        assert_eq!(found.len(), 1, "{found:?}");
        let b = &found[0];
        assert_eq!(b.session_id, id);
        assert_eq!(b.block.cwd.as_deref(), Some("~/proj"));
        assert_eq!(b.block.model.as_deref(), Some("custom:Mock-0"));
        assert_eq!(b.block.title.as_deref(), Some("run echo hello"));
        assert_eq!(b.turns, Some(1));
        assert!(sessions(&sessions_dir, home.path(), i64::MAX).is_empty());
    }
}
