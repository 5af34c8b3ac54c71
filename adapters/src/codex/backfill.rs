//! Codex's past sessions, for `sessionpipe backfill`: every rollout under
//! `$CODEX_HOME/sessions/YYYY/MM/DD/` (`rollout-*.jsonl`, or `.jsonl.zst` once
//! compressed) modified since the cutoff, read once, streamed, for its times,
//! turns, folder, branch, repository, model, title and version.
//!
//! Only the person's own threads are sessions (ADAPTERS.md, Codex row: Threads):
//! a subagent's rollout (`session_meta.source.subagent`) is part of its parent's
//! session and is passed over; a fork the person made (`forked_from_id` alone) is
//! a session of its own; an ephemeral thread wrote no rollout, so there is
//! nothing of it here. A session's rollout lives in the folder of the day it
//! started, so no folder is passed over by its date: each file's time decides.
//!
//! It reads the rollouts and nothing else of Codex's, and writes nothing: what
//! becomes of the sessions it finds is `harness::backfill`'s.

use super::transcript::{Meta, answered_by, compressed, for_each_line, parse_line};
use harness::backfill::{Backfilled, Tally, modified_since, newest_first};
use std::path::{Path, PathBuf};

/// A `first-ask` title is this many characters of the first ask (the default of
/// `TranscriptSource::first_ask_chars`, as the live reader uses).
const FIRST_ASK_CHARS: usize = 80;

/// The sessions of `codex_home` active since `since_ms`, newest first, each
/// handed to `each` as soon as its rollout is read. One session per thread: a
/// rollout caught while Codex compresses it can be there twice (plain and
/// `.zst`); the one that says more wins. `each` sees both copies (their
/// responses are the same ones, under the same keys).
pub fn sessions(
    codex_home: &Path,
    home: &Path,
    since_ms: i64,
    each: &mut dyn FnMut(&mut Backfilled),
) -> Vec<Backfilled> {
    newest_first(
        rollouts(&codex_home.join("sessions"))
            .into_iter()
            .filter(|path| modified_since(path, since_ms))
            .filter_map(|path| scan(&path, home))
            .map(|mut b| {
                each(&mut b);
                b
            }),
    )
}

/// Every `rollout-*.jsonl[.zst]` three folders down (`YYYY/MM/DD`).
pub(super) fn rollouts(sessions: &Path) -> Vec<PathBuf> {
    let subdirs = |dir: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.is_dir())
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    for year in subdirs(sessions) {
        for month in subdirs(&year) {
            for day in subdirs(&month) {
                let Ok(files) = std::fs::read_dir(&day) else {
                    continue;
                };
                out.extend(files.flatten().map(|f| f.path()).filter(|p| {
                    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
                    let plain = if compressed(p) {
                        name.strip_suffix(".zst").unwrap_or_default()
                    } else {
                        name
                    };
                    name.starts_with("rollout-") && plain.ends_with(".jsonl")
                }));
            }
        }
    }
    out
}

/// What one rollout says of its session; `None` for a subagent's thread or a
/// file with nothing that has a time.
fn scan(path: &Path, home: &Path) -> Option<Backfilled> {
    let mut t = Tally::default();
    let mut meta: Option<Meta> = None;
    let mut subagent = false;
    for_each_line(path, 0, &mut |line| {
        if subagent {
            return; // known at the first line; the rest is not read
        }
        let l = parse_line(line);
        if let Some(ms) = l.at_ms {
            t.time(ms);
        }
        if let Some(m) = l.meta {
            subagent |= m.subagent;
            // A rollout's own `session_meta` comes first; keep it.
            meta.get_or_insert(m);
        }
        t.block.model = l.model.or(t.block.model.take());
        t.usage
            .extend(l.usage.map(|u| answered_by(u, &t.block.model)));
        t.recs(&l.recs);
    })
    .ok()?;
    if subagent {
        return None;
    }
    let meta = meta.unwrap_or_default();
    t.session_id = meta.id.or_else(|| super::transcript::rollout_thread(path));
    t.version = meta.version;
    t.block.cwd = meta.cwd.map(|c| spool::paths::tilde(&c, Some(home)));
    t.block.branch = meta.branch;
    t.block.repo = meta.repo;
    t.finish(FIRST_ASK_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::TitleSource;

    fn recorded(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("../conformance/transcripts/codex/{name}"))
    }

    /// A Codex home whose sessions folder holds the recorded rollouts, named as
    /// Codex names them.
    fn codex_home() -> tempfile::TempDir {
        let home = tempfile::tempdir().unwrap();
        let day = home.path().join("sessions/2026/11/29");
        std::fs::create_dir_all(&day).unwrap();
        for (file, thread) in [
            ("one-turn.jsonl", "01a22900-3b7d-7f91-8b4f-43c8cf049ae8"),
            (
                "two-turns.jsonl.zst",
                "01a22900-3e2c-7763-90fd-d0504f2cc628",
            ),
            ("fork.jsonl", "01a22900-41c8-7062-8d2a-4fc8bc768239"),
            ("interrupted.jsonl", "01a22900-4619-78a1-88c2-ccf708befe80"),
            (
                "subagent-parent.jsonl",
                "01a22900-5352-7a83-9ac7-eda7e6ae6f7a",
            ),
            ("subagent.jsonl", "01a22900-53d9-71f1-b69d-47758aef3b22"),
        ] {
            let zst = if file.ends_with(".zst") { ".zst" } else { "" };
            let name = format!("rollout-2026-11-29T20-30-10-{thread}.jsonl{zst}");
            std::fs::copy(recorded(file), day.join(name)).unwrap();
        }
        std::fs::write(day.join("notes.txt"), "not a rollout").unwrap();
        home
    }

    #[test]
    fn the_persons_threads_from_plain_and_compressed_rollouts() {
        let codex = codex_home();
        let home = Path::new("/work/cxrec/home");
        let found = sessions(codex.path(), home, 0, &mut |_| {});
        let ids: Vec<&str> = found.iter().map(|b| &b.session_id[..]).collect();
        assert_eq!(
            ids,
            [
                "01a22900-5352-7a83-9ac7-eda7e6ae6f7a",
                "01a22900-4619-78a1-88c2-ccf708befe80",
                "01a22900-41c8-7062-8d2a-4fc8bc768239",
                "01a22900-3e2c-7763-90fd-d0504f2cc628",
                "01a22900-3b7d-7f91-8b4f-43c8cf049ae8",
            ],
            "newest first; the subagent's thread is its parent's"
        );
        let two = &found[3];
        assert_eq!(two.turns, Some(2));
        assert_eq!(two.version.as_deref(), Some("0.171.0"));
        assert_eq!(two.block.cwd.as_deref(), Some("~/work/repo"));
        assert_eq!(two.block.branch.as_deref(), Some("main"));
        assert_eq!(
            two.block.repo.as_deref(),
            Some("https://github.com/ann/repo.git")
        );
        assert_eq!(two.block.model.as_deref(), Some("mock-model"));
        assert_eq!(
            (two.block.title.as_deref(), two.block.title_source),
            (
                Some("Run the shell command, then tell me what it printed."),
                Some(TitleSource::FirstAsk)
            )
        );
        assert_eq!(
            protocol::time::rfc3339_ms(two.started_ms),
            "2026-11-29T20:30:11.564Z"
        );
        assert_eq!(
            protocol::time::rfc3339_ms(two.last_ms),
            "2026-11-29T20:30:12.201Z"
        );
        // A fork is a session of its own, with its own turns.
        let fork = &found[2];
        assert_eq!(fork.turns, Some(1));
        assert_eq!(
            fork.block.title.as_deref(),
            Some("What did the first turn print?")
        );
        assert_eq!(found[1].turns, Some(1), "the interrupted turn counts");

        assert!(
            sessions(codex.path(), home, i64::MAX, &mut |_| {}).is_empty(),
            "older than the cutoff"
        );
        assert!(sessions(&codex.path().join("missing"), home, 0, &mut |_| {}).is_empty());
    }

    #[test]
    fn a_rollout_caught_mid_compression_is_one_session() {
        let codex = codex_home();
        let day = codex.path().join("sessions/2026/11/29");
        let thread = "01a22900-3e2c-7763-90fd-d0504f2cc628";
        // The plain file, cut after the first turn, beside its compressed copy.
        let plain = std::fs::read(recorded("two-turns.jsonl")).unwrap();
        std::fs::write(
            day.join(format!("rollout-2026-11-29T20-30-10-{thread}.jsonl")),
            &plain[..17_840],
        )
        .unwrap();
        // `each` sees both copies as they are read; the first copy's
        // responses are the second's first ones, under the same keys.
        let mut seen: Vec<Vec<String>> = Vec::new();
        let found = sessions(codex.path(), Path::new("/h"), 0, &mut |b| {
            if b.session_id == thread {
                seen.push(
                    std::mem::take(&mut b.usage)
                        .into_iter()
                        .map(|u| u.key)
                        .collect(),
                );
            }
        });
        let mine: Vec<_> = found.iter().filter(|b| b.session_id == thread).collect();
        assert_eq!(mine.len(), 1);
        assert_eq!(mine[0].turns, Some(2), "the one that says more");
        assert!(mine[0].usage.is_empty(), "taken as it was read");
        seen.sort_by_key(Vec::len);
        assert_eq!(seen.len(), 2);
        assert!(
            !seen[0].is_empty() && seen[1].starts_with(&seen[0]),
            "{seen:?}"
        );
    }
}
