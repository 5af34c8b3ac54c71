//! Antigravity's past conversations, for `sessionpipe backfill`: every
//! `<data dir>/brain/<id>/.system_generated/logs/transcript.jsonl` modified since
//! the cutoff, read once (streamed, over-long lines passed over) for its times,
//! turns and first ask. A brain folder without a transcript, or a transcript in
//! which the person never asked anything, is not a conversation.

use super::transcript::{at_ms, records};
use harness::backfill::{Backfilled, Tally};
use harness::transcript::{MAX_LINE_BYTES, for_each_line};
use serde_json::Value;
use std::path::Path;

/// A `first-ask` title is this many characters of the first ask.
const FIRST_ASK_CHARS: usize = 80;

pub fn conversations(home: &Path, since_ms: i64) -> Vec<Backfilled> {
    let mut out = Vec::new();
    for data_dir in super::places::data_dirs(home) {
        let Ok(brain) = std::fs::read_dir(data_dir.join("brain")) else {
            continue;
        };
        for entry in brain.flatten() {
            let Some(id) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            let path = super::places::transcript_in(&data_dir, &id);
            let Some(modified) = harness::payload::modified_ms(&path).filter(|m| *m >= since_ms)
            else {
                continue;
            };
            out.extend(scan(&path, id, modified));
        }
    }
    out.sort_by_key(|b| std::cmp::Reverse(b.last_ms));
    out
}

/// One transcript as a backfilled session, when it holds an ask. Steps without
/// a time of their own take the file's: the conversation was at least that
/// recent.
fn scan(path: &Path, session_id: String, modified_ms: i64) -> Option<Backfilled> {
    let mut t = Tally::of(session_id);
    let mut timed = false;
    for_each_line(path, 0, MAX_LINE_BYTES, &mut |line| {
        let Ok(step) = serde_json::from_str::<Value>(line) else {
            return;
        };
        if let Some(ms) = at_ms(&step) {
            t.time(ms);
            timed = true;
        }
        t.recs(&records(&step));
    })
    .ok()?;
    if t.turns() == 0 {
        return None;
    }
    if !timed {
        t.time(modified_ms);
    }
    t.finish(FIRST_ASK_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_transcript_with_an_ask_is_a_conversation() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        let write = |dir: &str, id: &str, steps: &[Value]| {
            let t = super::super::places::transcript_in(&h.join(".gemini").join(dir), id);
            std::fs::create_dir_all(t.parent().unwrap()).unwrap();
            let text: String = steps.iter().map(|s| format!("{s}\n")).collect();
            std::fs::write(t, text).unwrap();
        };
        write(
            "antigravity-cli",
            "c1",
            &[
                json!({"type": "USER_INPUT", "created_at": "2026-11-20T09:00:00Z", "content": "<USER_REQUEST>Fix the\nauth bug</USER_REQUEST>"}),
                json!({"type": "PLANNER_RESPONSE", "created_at": "2026-11-20T09:00:05Z", "content": "Fixed."}),
                json!({"type": "USER_INPUT", "created_at": "2026-11-20T09:01:00Z", "content": "<USER_REQUEST>thanks</USER_REQUEST>"}),
            ],
        );
        write(
            "antigravity",
            "c2",
            &[json!({"type": "PLANNER_RESPONSE", "content": "x"})],
        );
        std::fs::create_dir_all(h.join(".gemini/antigravity-ide/brain/c3")).unwrap();
        let found = conversations(h, 0);
        assert_eq!(found.len(), 1, "{found:?}");
        let b = &found[0];
        assert_eq!(b.session_id, "c1");
        assert_eq!(b.turns, Some(2));
        assert_eq!(b.block.title.as_deref(), Some("Fix the auth bug"));
        assert_eq!(
            protocol::time::rfc3339_ms(b.started_ms),
            "2026-11-20T09:00:00.000Z"
        );
        assert_eq!(
            protocol::time::rfc3339_ms(b.last_ms),
            "2026-11-20T09:01:00.000Z"
        );
        assert!(
            conversations(h, i64::MAX).is_empty(),
            "older than the cutoff"
        );
    }
}
