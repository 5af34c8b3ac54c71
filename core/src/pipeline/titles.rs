//! Remote titles inside the pipeline (ADAPTERS.md, "the one exception", and
//! the Claude Code row's Facts): when a session is asked about, and how the
//! name its harness's service gives it becomes the session's title.
//!
//! It owns the schedule (first when the session has a link, again a minute
//! later while it has no name, then every half hour) and the rule that such a
//! name is the session's `harness` title over everything but a `custom` one.
//! It must not read a sign-in or speak HTTP: the asking is handed in
//! (`RemoteTitles`, made by the layer above), so this layer never holds a
//! credential and a pipeline without it asks nothing. It must not ask either:
//! a due ask leaves here as a `DueAsk`, which ingest hands to the titles
//! worker (`title_worker`), so no hook call waits on the network here.

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

/// One live ask, ready to run away from the hook call that made it due: it
/// carries what it read off that call (whose sign-in to bear) and nothing of
/// the call itself, so it can run on another thread. It may take as long as
/// the ask's own bound (3 s); `None` is "keep the name it had".
pub type LiveAsk = Box<dyn FnOnce() -> Option<String> + Send>;

/// Asks a harness's service for a session's name. Every answer is already
/// cleaned and through `secrets@1`; `None` is "keep the name it had" (no
/// sign-in, a token about to expire, a 400/401/404, no answer in time).
pub trait RemoteTitles: Send + Sync {
    /// Whether the person turned remote titles on. Asked at every hook call
    /// of a linked session, so it must be cheap, and a change must show from
    /// the next call on (`titles off` needs no restart).
    fn on(&self) -> bool;
    /// The id the service knows the session by (its link's), when the
    /// harness has a service that names sessions and the session has one.
    fn remote_id(&self, harness: &str, block: &SessionBlock) -> Option<String>;
    /// The ask about a live session, prepared from its hook call (which says
    /// whose sign-in to bear) without asking yet; `None` when the call names
    /// no sign-in to ask with. Nothing is read or sent until it runs.
    fn live_ask(&self, job: &Job, files: &SessionFiles, remote_id: &str) -> Option<LiveAsk>;
    /// Asks about a past session (backfill, `titles on`).
    fn ask_past(&self, past: &Backfilled, remote_id: &str) -> Option<String>;
}

/// An ask a hook call made due, for the titles worker to run.
pub struct DueAsk {
    /// The call's own clock: the schedule runs on it.
    pub asked_ms: i64,
    pub ask: LiveAsk,
}

/// What an ask made away from its call heard, for the session's next call
/// to keep in its record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Heard {
    /// The name, or `None`: keep the one it had.
    pub title: Option<String>,
    /// The `asked_ms` of the ask (its call's clock).
    pub asked_ms: i64,
}

/// Whether a session last asked as `last` is asked again at `now_ms`.
pub fn due(last: Option<&RemoteTitle>, now_ms: i64) -> bool {
    match last {
        None => true,
        Some(r) if r.title.is_none() => now_ms - r.asked_ms >= UNNAMED_AGAIN_MS,
        Some(r) => now_ms - r.asked_ms >= NAMED_AGAIN_MS,
    }
}

/// Keeps what an ask heard in the session's record: its name (no answer
/// keeps the name it had) and when it was asked (the schedule's next ask).
pub fn heard(record: &mut SessionRecord, heard: Heard) {
    let had = record.remote_title.take().and_then(|r| r.title);
    record.remote_title = Some(RemoteTitle {
        title: heard.title.or(had),
        asked_ms: heard.asked_ms,
    });
}

/// Around one hook call (not a tool event), after the call's facts merged:
/// puts the remote name on the session's block, or, when an ask is due and
/// `can_ask` (the caller can hold the call back until the answer is in),
/// returns the ask without applying anything: the caller puts the call back
/// as it found it, has the ask run, and takes the call again once the
/// answer is heard, so the name lands on that call's own events.
pub fn around_call(
    titles: Option<&dyn RemoteTitles>,
    harness: &str,
    job: &Job,
    files: &SessionFiles,
    record: &mut SessionRecord,
    can_ask: bool,
) -> Option<DueAsk> {
    // The link first: it costs nothing, and the setting costs a stat.
    let (titles, remote) = titles.and_then(|t| Some((t, t.remote_id(harness, &record.block)?)))?;
    if !titles.on() {
        // Off: what was heard is forgotten, so nothing puts it back (and
        // turned on again, the session is asked at once).
        record.remote_title = None;
        return None;
    }
    let now = job.at_ms();
    if can_ask && due(record.remote_title.as_ref(), now) {
        match titles.live_ask(job, files, &remote) {
            Some(ask) => return Some(DueAsk { asked_ms: now, ask }),
            // No sign-in to ask with: asked all the same, so the schedule
            // (and not every call) says when to look for one again.
            None => heard(
                record,
                Heard {
                    title: None,
                    asked_ms: now,
                },
            ),
        }
    }
    apply(record);
    None
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
    use std::sync::{Arc, Mutex};

    /// A service that answers from a list and counts its asks.
    struct Scripted {
        on: bool,
        answers: Arc<Mutex<Vec<Option<String>>>>,
        asked: Arc<Mutex<usize>>,
    }

    impl RemoteTitles for Scripted {
        fn on(&self) -> bool {
            self.on
        }
        fn remote_id(&self, _harness: &str, block: &SessionBlock) -> Option<String> {
            block.url.clone()
        }
        fn live_ask(&self, _job: &Job, _files: &SessionFiles, _remote: &str) -> Option<LiveAsk> {
            let (answers, asked) = (self.answers.clone(), self.asked.clone());
            Some(Box::new(move || {
                *asked.lock().unwrap() += 1;
                answers.lock().unwrap().remove(0)
            }))
        }
        fn ask_past(&self, _past: &Backfilled, _remote: &str) -> Option<String> {
            None
        }
    }

    fn scripted(on: bool, answers: &[Option<&str>]) -> Scripted {
        Scripted {
            on,
            answers: Arc::new(Mutex::new(
                answers.iter().map(|a| a.map(str::to_string)).collect(),
            )),
            asked: Arc::new(Mutex::new(0)),
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

    /// One call as ingest makes it: a due ask puts the call back untouched,
    /// runs (the worker's part), and the call is taken again with the answer.
    fn call(t: &Scripted, record: &mut SessionRecord, at: i64) {
        let job = job_at(at);
        let files = SessionFiles::default();
        let before = record.clone();
        let Some(due) = around_call(Some(t), "claude-code", &job, &files, record, true) else {
            return;
        };
        assert_eq!(*record, before, "a due ask leaves the call as it was");
        let title = (due.ask)();
        heard(
            record,
            Heard {
                title,
                asked_ms: due.asked_ms,
            },
        );
        assert!(
            around_call(Some(t), "claude-code", &job, &files, record, true).is_none(),
            "answered: the same call is not asked about again"
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
    fn a_caller_that_cannot_hold_the_call_back_asks_nothing_and_keeps_the_name() {
        let t = scripted(true, &[Some("Other")]);
        let mut r = linked();
        r.remote_title = Some(RemoteTitle {
            title: Some("Named".into()),
            asked_ms: 1_000,
        });
        let job = job_at(1_000 + NAMED_AGAIN_MS);
        let files = SessionFiles::default();
        assert!(around_call(Some(&t), "claude-code", &job, &files, &mut r, false).is_none());
        assert_eq!(*t.asked.lock().unwrap(), 0);
        assert_eq!(r.block.title.as_deref(), Some("Named"));
        assert_eq!(r.remote_title.as_ref().map(|x| x.asked_ms), Some(1_000));
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
