//! Copilot CLI's past sessions, for `sessionpipe backfill`: every
//! `<copilot home>/session-state/<id>/events.jsonl` modified since the cutoff,
//! read once, streamed, for the session's times, turns, folder, model and
//! first-ask title.
//!
//! Owns only the listing and what one log adds up to; the records are read by
//! `transcript::record`, as the live reader reads them. Must not write anything
//! under Copilot's folder. A log with no ask of the person's is not a session.

use super::transcript::record;
use harness::backfill::{Backfilled, Tally, modified_since, newest_first};
use harness::transcript::{MAX_LINE_BYTES, for_each_line};
use serde_json::Value;
use std::path::Path;

/// A `first-ask` title is this many characters of the first ask.
const FIRST_ASK_CHARS: usize = 80;

/// The sessions of `<copilot_dir>/session-state/`, newest first.
pub fn sessions(copilot_dir: &Path, home: &Path, since_ms: i64) -> Vec<Backfilled> {
    let Ok(dirs) = std::fs::read_dir(copilot_dir.join("session-state")) else {
        return Vec::new();
    };
    let found = dirs.flatten().filter_map(|d| {
        let log = d.path().join("events.jsonl");
        if !log.is_file() || !modified_since(&log, since_ms) {
            return None;
        }
        let id = d.file_name().to_str()?.to_string();
        scan(&log, id, home)
    });
    newest_first(found.collect::<Vec<_>>())
}

fn scan(log: &Path, id: String, home: &Path) -> Option<Backfilled> {
    let mut t = Tally::of(id);
    for_each_line(log, 0, MAX_LINE_BYTES, &mut |line| {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            return;
        };
        let r = record(&v);
        if let Some(ms) = r.at_ms {
            t.time(ms);
        }
        if let Some(cwd) = r.cwd {
            t.block.cwd = Some(spool::paths::tilde(&cwd, Some(home)));
        }
        t.block.model = r.model.or(t.block.model.take());
        t.version = r.version.or(t.version.take());
        t.usage.extend(r.usage);
        t.recs(&r.recs);
    })
    .ok()?;
    if t.turns() == 0 {
        return None;
    }
    t.finish(FIRST_ASK_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_with_an_ask_is_found_with_its_facts() {
        let home = tempfile::tempdir().unwrap();
        let copilot = home.path().join(".copilot");
        let state = copilot.join("session-state");
        let one = state.join("3b86adbb-8663-43ff-a239-ef79d1db838e");
        std::fs::create_dir_all(&one).unwrap();
        let cwd = home.path().join("proj");
        let log = format!(
            "{}\n{}\n{}\n",
            serde_json::json!({"type": "session.start", "timestamp": "2026-12-01T15:20:49.437Z",
                "data": {"sessionId": "3b86adbb-8663-43ff-a239-ef79d1db838e", "selectedModel": "mock-model",
                    "copilotVersion": "1.0.102", "context": {"cwd": cwd}}}),
            serde_json::json!({"type": "user.message", "timestamp": "2026-12-01T15:20:49.581Z",
                "data": {"content": "run echo hello"}}),
            serde_json::json!({"type": "assistant.message", "timestamp": "2026-12-01T15:20:50.000Z",
                "data": {"content": "hello", "toolRequests": []}}),
        );
        std::fs::write(one.join("events.jsonl"), log).unwrap();
        // A session that never got an ask.
        let empty = state.join("7282f9c6-1b1a-4c4b-a52b-2efa7ccdb02c");
        std::fs::create_dir_all(&empty).unwrap();
        std::fs::write(
            empty.join("events.jsonl"),
            "{\"type\":\"session.start\",\"data\":{}}\n",
        )
        .unwrap();

        let found = sessions(&copilot, home.path(), 0);
        assert_eq!(found.len(), 1);
        let b = &found[0];
        assert_eq!(b.session_id, "3b86adbb-8663-43ff-a239-ef79d1db838e");
        assert_eq!(b.block.cwd.as_deref(), Some("~/proj"));
        assert_eq!(b.block.model.as_deref(), Some("mock-model"));
        assert_eq!(b.block.title.as_deref(), Some("run echo hello"));
        assert_eq!(b.version.as_deref(), Some("1.0.102"));
        assert_eq!(b.turns, Some(1));
        assert!(b.last_ms > b.started_ms);
        assert!(sessions(&copilot, home.path(), i64::MAX).is_empty());
    }
}
