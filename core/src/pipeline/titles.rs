//! Remote titles inside the pipeline (ADAPTERS.md, "the one exception", and
//! the Claude Code row's Facts): when a session is asked about, and how the
//! name its harness's service gives it becomes the session's title.
//!
//! It owns the schedule (first when the session has a link, again a minute
//! later while it has no name, then every half hour) and the rule that such a
//! name is the session's `harness` title over everything but a `custom` one.
//! It must not read a sign-in or speak HTTP: the asking is handed in
//! (`RemoteTitles`, made by the layer above), so this layer never holds a
//! credential and a pipeline without it asks nothing.

use crate::pipeline::session::{RemoteTitle, SessionRecord};
use harness::SessionFiles;
use harness::backfill::Backfilled;
use protocol::{SessionBlock, TitleSource};
use spool::Job;

/// While a session has no name yet: the next ask a minute after the last
/// (claude.ai names a session a few seconds after its first message).
pub const UNNAMED_AGAIN_MS: i64 = 60_000;
/// Once it has one: every half hour (a rename in the Claude app reaches the
/// transcript on its own; this catches claude.ai's own renames).
pub const NAMED_AGAIN_MS: i64 = 30 * 60_000;

/// Asks a harness's service for a session's name. Every answer is already
/// cleaned and through `secrets@1`; `None` is "keep the name it had" (no
/// sign-in, a token about to expire, a 400/401/404, no answer in time).
pub trait RemoteTitles: Send + Sync {
    /// Whether the person turned remote titles on (read each time, so
    /// `titles off` holds from the next hook call).
    fn on(&self) -> bool;
    /// The id the service knows the session by (its link's), when the
    /// harness has a service that names sessions and the session has one.
    fn remote_id(&self, harness: &str, block: &SessionBlock) -> Option<String>;
    /// Asks about a live session; its hook call says whose sign-in to bear.
    fn ask_live(&self, job: &Job, files: &SessionFiles, remote_id: &str) -> Option<String>;
    /// Asks about a past session (backfill, `titles on`).
    fn ask_past(&self, past: &Backfilled, remote_id: &str) -> Option<String>;
}

/// Whether a session last asked as `last` is asked again at `now_ms`.
pub fn due(last: Option<&RemoteTitle>, now_ms: i64) -> bool {
    match last {
        None => true,
        Some(r) if r.title.is_none() => now_ms - r.asked_ms >= UNNAMED_AGAIN_MS,
        Some(r) => now_ms - r.asked_ms >= NAMED_AGAIN_MS,
    }
}

/// Around one hook call (not a tool event), after the call's facts merged:
/// asks when due, and puts the remote name on the session's block. Runs under
/// the session's lock, so the ask's own bound (3 s) is all it may cost.
pub fn around_call(
    titles: Option<&dyn RemoteTitles>,
    harness: &str,
    job: &Job,
    files: &SessionFiles,
    record: &mut SessionRecord,
) {
    // The link first: it costs nothing, and the setting is a file read.
    let Some((titles, remote)) =
        titles.and_then(|t| Some((t, t.remote_id(harness, &record.block)?)))
    else {
        return;
    };
    if !titles.on() {
        // Off: what was heard is forgotten, so nothing puts it back (and
        // turned on again, the session is asked at once).
        record.remote_title = None;
        return;
    }
    let now = job.at_ms();
    if due(record.remote_title.as_ref(), now) {
        let asked = titles.ask_live(job, files, &remote);
        let had = record.remote_title.take().and_then(|r| r.title);
        record.remote_title = Some(RemoteTitle {
            // No answer keeps the name it had.
            title: asked.or(had),
            asked_ms: now,
        });
    }
    apply(record);
}

/// Puts the remote name the record holds on its block, over any title but a
/// `custom` one. The harness's own facts merge first on every call (its
/// registry's `auto` name is a `harness` title too), so this runs after them.
pub fn apply(record: &mut SessionRecord) {
    let Some(title) = record.remote_title.as_ref().and_then(|r| r.title.clone()) else {
        return;
    };
    name(&mut record.block, title);
}

/// `title` as the block's `harness` title, unless the block has a `custom` one.
/// True when the block's title changed.
pub fn name(block: &mut SessionBlock, title: String) -> bool {
    if block.title_source == Some(TitleSource::Custom) || title.is_empty() {
        return false;
    }
    let changed = block.title.as_deref() != Some(title.as_str());
    block.title = Some(title);
    block.title_source = Some(TitleSource::Harness);
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A service that answers from a list and counts its asks.
    struct Scripted {
        on: bool,
        answers: Mutex<Vec<Option<String>>>,
        asked: Mutex<usize>,
    }

    impl RemoteTitles for Scripted {
        fn on(&self) -> bool {
            self.on
        }
        fn remote_id(&self, _harness: &str, block: &SessionBlock) -> Option<String> {
            block.url.clone()
        }
        fn ask_live(&self, _job: &Job, _files: &SessionFiles, _remote: &str) -> Option<String> {
            *self.asked.lock().unwrap() += 1;
            self.answers.lock().unwrap().remove(0)
        }
        fn ask_past(&self, _past: &Backfilled, _remote: &str) -> Option<String> {
            None
        }
    }

    fn scripted(on: bool, answers: &[Option<&str>]) -> Scripted {
        Scripted {
            on,
            answers: Mutex::new(answers.iter().map(|a| a.map(str::to_string)).collect()),
            asked: Mutex::new(0),
        }
    }

    fn job_at(ms: i64) -> Job {
        Job {
            at_ns: ms as u64 * 1_000_000,
            ..Default::default()
        }
    }

    fn linked() -> SessionRecord {
        let mut r = SessionRecord::default();
        r.block.url = Some("https://claude.ai/code/session_01A".into());
        r.block.title = Some("first words".into());
        r.block.title_source = Some(TitleSource::FirstAsk);
        r
    }

    fn call(t: &Scripted, record: &mut SessionRecord, at: i64) {
        around_call(
            Some(t),
            "claude-code",
            &job_at(at),
            &Default::default(),
            record,
        );
    }

    #[test]
    fn asked_a_minute_later_while_unnamed_then_every_half_hour() {
        let t = scripted(true, &[None, Some("Named"), None]);
        let mut r = linked();
        call(&t, &mut r, 1_000);
        assert_eq!(*t.asked.lock().unwrap(), 1);
        call(&t, &mut r, 1_000 + UNNAMED_AGAIN_MS - 1);
        assert_eq!(*t.asked.lock().unwrap(), 1, "not again within the minute");
        assert_eq!(r.block.title.as_deref(), Some("first words"));
        let named_at = 1_000 + UNNAMED_AGAIN_MS;
        call(&t, &mut r, named_at);
        assert_eq!(*t.asked.lock().unwrap(), 2);
        assert_eq!(
            (r.block.title.as_deref(), r.block.title_source),
            (Some("Named"), Some(TitleSource::Harness))
        );
        call(&t, &mut r, named_at + NAMED_AGAIN_MS - 1);
        assert_eq!(
            *t.asked.lock().unwrap(),
            2,
            "named: not within the half hour"
        );
        call(&t, &mut r, named_at + NAMED_AGAIN_MS);
        assert_eq!(*t.asked.lock().unwrap(), 3);
        assert_eq!(
            r.block.title.as_deref(),
            Some("Named"),
            "no answer keeps it"
        );
    }

    #[test]
    fn off_or_without_a_link_nothing_is_asked() {
        let t = scripted(false, &[Some("Named")]);
        let mut r = linked();
        call(&t, &mut r, 1_000);
        let on = scripted(true, &[Some("Named")]);
        let mut unlinked = SessionRecord::default();
        call(&on, &mut unlinked, 1_000);
        assert_eq!(*t.asked.lock().unwrap() + *on.asked.lock().unwrap(), 0);
        assert_eq!(r.block.title.as_deref(), Some("first words"));
        assert!(r.remote_title.is_none() && unlinked.remote_title.is_none());
    }

    #[test]
    fn a_custom_title_is_never_replaced_and_the_name_outlasts_the_registry() {
        let t = scripted(true, &[Some("Named")]);
        let mut r = linked();
        r.block.title = Some("Mine".into());
        r.block.title_source = Some(TitleSource::Custom);
        call(&t, &mut r, 1_000);
        assert_eq!(r.block.title.as_deref(), Some("Mine"));

        // The registry's `auto` name merges on the next call; the remote
        // name is put back over it.
        let mut r = linked();
        r.remote_title = Some(RemoteTitle {
            title: Some("Named".into()),
            asked_ms: 1_000,
        });
        r.block.merge(&SessionBlock {
            title: Some("local auto".into()),
            title_source: Some(TitleSource::Harness),
            ..Default::default()
        });
        call(&t, &mut r, 2_000);
        assert_eq!(r.block.title.as_deref(), Some("Named"));
    }
}
