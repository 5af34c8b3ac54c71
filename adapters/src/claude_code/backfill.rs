//! Claude Code's past sessions, for `sessionpipe backfill`: every
//! `<config>/projects/<slug>/<session>.jsonl` modified since the cutoff, read once
//! (streamed, lines over the cap passed over) for its times, turns, folder,
//! branch, model, version and title. Subagent transcripts (in a session's own
//! folder) are not sessions: only their model responses' tokens are read, as
//! the session's usage. Each session is handed to the caller's `each` as soon
//! as it is read (it may take the usage then), before the list is sorted.

use super::facts::account_id;
use super::transcript::{ClaudeTranscript, MAX_LINE, parse_value};
use harness::backfill::{Backfilled, Tally, modified_since};
use harness::transcript::TranscriptSource;
use harness::transcript::for_each_line;
use protocol::TitleSource;
use serde_json::Value;
use std::path::Path;

/// A `first-ask` title is this many characters of the first ask.
const FIRST_ASK_CHARS: usize = 50;

pub fn sessions(
    config_dirs: &[std::path::PathBuf],
    home: &Path,
    since_ms: i64,
    each: &mut dyn FnMut(&mut Backfilled),
) -> Vec<Backfilled> {
    let mut out = Vec::new();
    for config in config_dirs {
        let account = account_id(Some(home), config);
        let Ok(projects) = std::fs::read_dir(config.join("projects")) else {
            continue;
        };
        for project in projects.flatten() {
            let Ok(files) = std::fs::read_dir(project.path()) else {
                continue;
            };
            for f in files.flatten() {
                let path = f.path();
                if path.extension().is_some_and(|x| x == "jsonl")
                    && modified_since(&path, since_ms)
                    && let Some(mut b) = scan(&path, home)
                {
                    b.usage.extend(subagents_usage(&path));
                    b.block.account_id = account.clone();
                    b.config_dir = Some(config.clone());
                    each(&mut b);
                    out.push(b);
                }
            }
        }
    }
    out.sort_by_key(|b| std::cmp::Reverse(b.last_ms));
    out
}

/// The model responses of the session's subagents, each in its own file
/// beside the session's (`<session>/subagents/agent-*.jsonl`): paid for too.
fn subagents_usage(transcript: &Path) -> Vec<harness::usage::Usage> {
    let dir = transcript.with_extension("").join("subagents");
    let Ok(files) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for f in files.flatten() {
        let path = f.path();
        if path.extension().is_some_and(|x| x == "jsonl") {
            out.extend(ClaudeTranscript.usage(&path));
        }
    }
    out
}

/// What one transcript says of its session; `None` for a file with no record
/// that has a time (nothing happened in it).
fn scan(path: &Path, home: &Path) -> Option<Backfilled> {
    let mut t = Tally::of(path.file_stem()?.to_str()?);
    for_each_line(path, 0, MAX_LINE, &mut |line| {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            return;
        };
        let field = |k: &str| v.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
        if let Some(ms) = field("timestamp").and_then(protocol::time::parse_rfc3339_ms) {
            t.time(ms);
        }
        if t.block.cwd.is_none()
            && let Some(cwd) = field("cwd")
        {
            t.block.cwd = Some(spool::paths::tilde(cwd, Some(home)));
        }
        if let Some(branch) = field("gitBranch").filter(|b| *b != "HEAD") {
            t.block.branch = Some(branch.to_string());
        }
        if let Some(version) = field("version") {
            t.version = Some(version.to_string());
        }
        let parsed = parse_value(&v);
        t.recs(&parsed.recs);
        t.block.model = parsed.model.or(t.block.model.take());
        t.block.url = parsed.url.or(t.block.url.take());
        t.usage.extend(parsed.usage);
        if let Some(title) = parsed.custom_title {
            t.title(title, TitleSource::Custom);
        }
        if let Some(title) = parsed.ai_title {
            t.title(title, TitleSource::Harness);
        }
    })
    .ok()?;
    t.finish(FIRST_ASK_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transcript_becomes_one_backfilled_session() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        let project = home.join(".claude/projects/-home-ann-app");
        std::fs::create_dir_all(project.join("s1/subagents")).unwrap();
        let lines = [
            r#"{"type":"user","promptId":"p1","timestamp":"2026-11-01T10:00:00.000Z","cwd":"CWD","gitBranch":"main","version":"2.1.300","message":{"content":"fix the bug in the parser please, it drops the last line of every file"}}"#,
            r#"{"type":"assistant","timestamp":"2026-11-01T10:00:05.000Z","message":{"model":"claude-opus-5-5","content":[{"type":"text","text":"Done."}]}}"#,
            r#"{"type":"user","isMeta":true,"timestamp":"2026-11-01T10:01:00.000Z","message":{"content":"<local-command-stdout>x</local-command-stdout>"}}"#,
            r#"{"type":"user","promptId":"p2","timestamp":"2026-11-01T10:02:00.000Z","message":{"content":"thanks"}}"#,
            r#"{"type":"ai-title","aiTitle":"Parser fix"}"#,
        ]
        .join("\n")
        .replace("CWD", &home.join("app").display().to_string());
        std::fs::write(project.join("s1.jsonl"), lines + "\n").unwrap();
        // A subagent's file: not a session, but its response's tokens are the session's.
        let sub = r#"{"type":"assistant","isSidechain":true,"timestamp":"2026-11-01T10:00:03.000Z","message":{"id":"msg_sub","model":"claude-haiku-4-5","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":7,"output_tokens":3}}}"#;
        std::fs::write(
            project.join("s1/subagents/agent-a.jsonl"),
            format!("{{}}\n{sub}\n"),
        )
        .unwrap();
        std::fs::write(project.join("empty.jsonl"), "").unwrap();
        let found = sessions(&[home.join(".claude")], home, 0, &mut |_| {});
        assert_eq!(found.len(), 1);
        let b = &found[0];
        assert_eq!(b.session_id, "s1");
        assert_eq!(b.turns, Some(2));
        assert_eq!(b.block.cwd.as_deref(), Some("~/app"));
        assert_eq!(b.block.branch.as_deref(), Some("main"));
        assert_eq!(b.block.model.as_deref(), Some("claude-opus-5-5"));
        assert_eq!(
            (b.block.title.as_deref(), b.block.title_source),
            (Some("Parser fix"), Some(TitleSource::Harness))
        );
        assert_eq!(b.version.as_deref(), Some("2.1.300"));
        let sub: Vec<_> = b.usage.iter().filter(|u| u.key == "msg_sub").collect();
        assert_eq!(sub.len(), 1, "{:?}", b.usage);
        assert_eq!((sub[0].input, sub[0].output), (7, 3));
        assert_eq!(
            protocol::time::rfc3339_ms(b.started_ms),
            "2026-11-01T10:00:00.000Z"
        );
        assert_eq!(
            protocol::time::rfc3339_ms(b.last_ms),
            "2026-11-01T10:02:00.000Z"
        );
        // Handed over as it is read, the usage can be taken then.
        let mut taken = Vec::new();
        let found = sessions(&[home.join(".claude")], home, 0, &mut |b| {
            taken.append(&mut b.usage)
        });
        assert!(found[0].usage.is_empty());
        assert_eq!(taken, b.usage);
        assert!(
            sessions(&[home.join(".claude")], home, i64::MAX, &mut |_| {}).is_empty(),
            "older than the cutoff"
        );
    }
}
