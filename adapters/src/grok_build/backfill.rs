//! Grok Build's past sessions, for `sessionpipe backfill`: every
//! `<grok home>/sessions/<url-encoded cwd>/<session id>/summary.json` last active
//! since the cutoff, newest first, at most `MAX_SESSIONS` (ADAPTERS.md, Grok
//! Build row), each with its title, model, folder, branch and times from the
//! summary, its turns from the update stream beside it, and Grok's version.
//!
//! Owns only the listing; the files are read by `summary` and
//! `transcript::Stream`, as for a live session. Must not write under Grok's home.

use super::summary::{self, Summary, version};
use super::transcript::Stream;
use harness::backfill::Backfilled;
use harness::transcript::{MAX_LINE_BYTES, Rec, for_each_line};
use std::path::{Path, PathBuf};

/// The most sessions one backfill reports: the newest.
pub const MAX_SESSIONS: usize = 500;

pub fn sessions(grok_home: &Path, home: &Path, since_ms: i64) -> Vec<Backfilled> {
    let mut found: Vec<(PathBuf, Summary, i64)> = Vec::new();
    let Ok(folders) = std::fs::read_dir(grok_home.join("sessions")) else {
        return Vec::new();
    };
    for folder in folders.flatten() {
        let Ok(dirs) = std::fs::read_dir(folder.path()) else {
            continue;
        };
        for dir in dirs.flatten() {
            let Some(s) = summary::read(&dir.path().join("summary.json"), Some(home)) else {
                continue;
            };
            // A session Grok never marked active is timed by its creation.
            if let Some(last) = s.last_active_ms.or(s.created_ms)
                && last >= since_ms
            {
                found.push((dir.path(), s, last));
            }
        }
    }
    found.sort_by_key(|(_, _, last)| std::cmp::Reverse(*last));
    found.truncate(MAX_SESSIONS);
    let version = version(grok_home);
    found
        .into_iter()
        .filter_map(|(dir, s, last)| {
            Some(Backfilled {
                session_id: dir.file_name()?.to_str()?.to_string(),
                started_ms: s.created_ms.unwrap_or(last),
                last_ms: last,
                turns: turns(&dir.join("updates.jsonl")),
                block: s.block,
                version: version.clone(),
                ..Default::default()
            })
        })
        .collect()
}

/// The prompts in a session's update stream; `None` without one.
fn turns(updates: &Path) -> Option<u64> {
    let is_ask = |r: &Rec| matches!(r, Rec::Ask { .. });
    let mut stream = Stream::default();
    let mut asks = 0;
    for_each_line(updates, 0, MAX_LINE_BYTES, &mut |line| {
        stream.line(line);
        asks += stream.drain().filter(is_ask).count() as u64;
    })
    .ok()?;
    Some(asks + stream.finish().iter().filter(|r| is_ask(r)).count() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::TitleSource;
    use serde_json::json;

    fn session(home: &Path, id: &str, last_active: i64, prompts: usize) {
        let dir = home.join(".grok/sessions/%2Fhome%2Fann%2Fapp").join(id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("summary.json"),
            json!({"generated_title": format!("Session {id}"), "current_model_id": "grok-4",
                   "info": {"cwd": home.join("app")}, "head_branch": "dev",
                   "created_at": last_active - 60, "last_active_at": last_active})
            .to_string(),
        )
        .unwrap();
        let line = |text: &str| {
            json!({"timestamp": last_active, "method": "session/update", "params": {"sessionId": id,
                   "update": {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": text}}}})
            .to_string()
        };
        let reply = json!({"timestamp": last_active, "method": "session/update", "params": {"sessionId": id,
                   "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "ok"}}}})
        .to_string();
        let text: String = (0..prompts)
            .map(|i| format!("{}\n{reply}\n", line(&format!("ask {i}"))))
            .collect();
        std::fs::write(dir.join("updates.jsonl"), text).unwrap();
    }

    #[test]
    fn summaries_since_the_cutoff_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        std::fs::create_dir_all(home.join(".grok")).unwrap();
        std::fs::write(home.join(".grok/version.json"), r#"{"version":"1.0.77"}"#).unwrap();
        session(home, "old", 1_000, 1);
        session(home, "newer", 3_000, 3);
        session(home, "new", 2_000, 2);
        std::fs::create_dir_all(home.join(".grok/sessions/%2Fw/no-summary")).unwrap();
        let found = sessions(&home.join(".grok"), home, 1_500_000);
        let ids: Vec<&str> = found.iter().map(|b| b.session_id.as_str()).collect();
        assert_eq!(ids, ["newer", "new"]);
        let b = &found[0];
        assert_eq!((b.started_ms, b.last_ms), (2_940_000, 3_000_000));
        assert_eq!(b.turns, Some(3));
        assert_eq!(b.version.as_deref(), Some("1.0.77"));
        assert_eq!(
            (b.block.title.as_deref(), b.block.title_source),
            (Some("Session newer"), Some(TitleSource::Harness))
        );
        assert_eq!(
            (b.block.cwd.as_deref(), b.block.branch.as_deref()),
            (Some("~/app"), Some("dev"))
        );
        assert_eq!(b.block.model.as_deref(), Some("grok-4"));
        assert!(sessions(&home.join("nowhere"), home, 0).is_empty());
    }
}
