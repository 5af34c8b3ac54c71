//! What the daemon reads from a harness's own files around one hook call: facts
//! (repo, branch, title, model, account, link) and the transcript's turns.
//!
//! Runs after the hook exited, inside the session's turn (the ingest thread or
//! the hold worker owns the session while it runs), on the session's record. It
//! returns events to put before and after the call's own, and the tokens of
//! the model responses it read (kept by the caller, whatever the sinks' tiers:
//! usage is local); it never writes the outbox and never fails: a file that
//! cannot be read only means fewer facts.

use crate::pipeline::session::{Hold, SessionRecord, TranscriptState};
use harness::transcript::{ReadPlan, Turn, Want};
use harness::usage::Usage;
use harness::{Adapter, SessionFiles};
use protocol::*;
use spool::Job;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

/// How long later hooks keep looking for a held turn's words.
pub const HOLD_MS: i64 = 60_000;

/// Events a read adds around a call's own, and a turn to keep re-reading for.
#[derive(Debug, Default)]
pub struct Around {
    pub before: Vec<EventData>,
    pub after: Vec<EventData>,
    /// The Stop's turn is not whole in the file yet.
    pub hold: Option<Hold>,
    /// The tokens of the model responses read (never an event).
    pub usage: Vec<Usage>,
}

/// What a read of the transcript found besides its turns.
#[derive(Debug, Default)]
struct Found {
    /// The account's limits, when they changed since the last ones sent.
    limits: Option<LimitsObserved>,
    usage: Vec<Usage>,
}

/// What the hold worker's read gives once the held turn is whole.
#[derive(Debug, Default)]
pub struct Held {
    pub events: Vec<EventData>,
    pub usage: Vec<Usage>,
}

/// Whether turns are sent (some destination takes tier 2) or only read for facts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Turns {
    Send,
    FactsOnly,
}

/// The transcript paths a record keeps redacted because they hold a secret (a
/// folder named with a key): the real paths, for this process's reads. A call
/// names its transcript again each time, so only a held turn's re-reads need
/// this, and after a restart the next call gives the path back.
#[derive(Default)]
pub struct LivePaths {
    paths: Mutex<HashMap<(String, String), PathBuf>>,
}

/// At most this many withheld paths are remembered (a path naming a secret is
/// rare; a daemon that runs for a year must not grow without end).
const LIVE_PATHS_MAX: usize = 256;

impl LivePaths {
    fn remember(&self, harness: &str, session: &str, path: PathBuf) {
        let mut m = self.paths.lock().unwrap_or_else(|p| p.into_inner());
        if m.len() >= LIVE_PATHS_MAX {
            m.clear();
        }
        m.insert((harness.to_string(), session.to_string()), path);
    }

    pub fn get(&self, harness: &str, session: &str) -> Option<PathBuf> {
        let m = self.paths.lock().unwrap_or_else(|p| p.into_inner());
        m.get(&(harness.to_string(), session.to_string())).cloned()
    }
}

/// What a call's reads need besides the call: whether turns are sent, and the
/// real transcript paths the records keep redacted.
pub struct Reads<'a> {
    pub turns: Turns,
    pub live: &'a LivePaths,
    /// Remote titles' asker, where the daemon has one (none asks nothing).
    pub titles: Option<&'a dyn crate::pipeline::titles::RemoteTitles>,
}

/// Reads facts and the transcript for one call of `adapter`'s session.
pub fn around_call(
    adapter: &dyn Adapter,
    job: &Job,
    files: &SessionFiles,
    tool_event: bool,
    record: &mut SessionRecord,
    reads: &Reads<'_>,
    session: &str,
) -> Around {
    let turns = reads.turns;
    let mut around = Around::default();
    if !tool_event {
        let mut facts = adapter.facts(job, files);
        if let Some(folder) = &files.folder {
            let (repo, branch) = harness::facts::git(folder);
            facts.repo = facts.repo.or(repo);
            facts.branch = facts.branch.or(branch);
        }
        crate::pipeline::scrub::block(&mut facts);
        record.block.merge(&facts);
    }
    let Some(source) = adapter.transcript() else {
        return around;
    };
    // A subagent that stopped: its own file's responses were paid for too.
    if let Some(sub) = adapter.subagent_transcript(job) {
        around.usage.extend(source.usage(&sub));
    }
    if let Some(actual) = &files.transcript {
        // The record keeps the path as it keeps everything: through secrets@1.
        let raw = actual.to_string_lossy();
        let kept = redact::secrets(&raw).into_owned();
        if kept != raw {
            reads.live.remember(adapter.name(), session, actual.clone());
        }
        match record.transcript.as_mut() {
            Some(t) if same_transcript(&t.path, &kept) => t.path = kept,
            _ => {
                record.transcript = Some(TranscriptState {
                    path: kept,
                    log: Default::default(),
                })
            }
        }
    }
    if record.transcript.is_none() {
        return around;
    }
    let now = job.at_ms();
    let held = record
        .hold
        .clone()
        .filter(|h| now <= h.until_ms && !tool_event);
    if files.read.is_none() && held.is_none() {
        return around;
    }
    // Limits go last, so a turn's transcript sits right after its end.
    let path = files
        .transcript
        .clone()
        .or_else(|| reads.live.get(adapter.name(), session));
    let found = read_new(source, record, path);
    around.usage.extend(found.usage);
    let limits = found.limits.map(EventData::LimitsObserved);
    let Some(state) = record.transcript.as_mut() else {
        return around;
    };
    let sent = |turns_out: Vec<Turn>, place: &mut Vec<EventData>| {
        if turns == Turns::Send {
            place.extend(turns_out.into_iter().map(|t| transcript_event(t, now)));
        }
    };
    if let Some(h) = &held {
        let t = state.log.take(&h.want());
        sent(t, &mut around.before);
    }
    if let Some(plan) = &files.read {
        if plan.interruption
            && let Some(running) = record.running_turn.clone().filter(|id| !id.is_empty())
            && state.log.interrupted(&running)
        {
            around.before.push(EventData::TurnEnded(TurnEnded::new(
                Some(running),
                TurnEndReason::Interrupt,
            )));
            record.running_turn = None;
        }
        let t = state.log.take(&plan.want);
        let place = if plan.after {
            &mut around.after
        } else {
            &mut around.before
        };
        sent(t, place);
        around.hold = hold_for(plan, job, record, now);
    }
    if let Some(h) = &record.hold {
        let gone = record
            .transcript
            .as_ref()
            .is_some_and(|t| t.log.sent(h.turn_id.as_deref()) || h.written(&t.log));
        if gone || now > h.until_ms {
            record.hold = None;
        }
    }
    if turns == Turns::FactsOnly {
        record.hold = None;
        around.hold = None;
    }
    around.after.extend(limits);
    around
}

/// True when two transcript paths name the same transcript: the same path, or
/// the same file compressed in place (Codex compresses an old rollout to
/// `<name>.zst`). Its reader counts the cursor in decompressed bytes, so the
/// cursor and the turns read so far stay good across the change.
fn same_transcript(a: &str, b: &str) -> bool {
    a.strip_suffix(".zst").unwrap_or(a) == b.strip_suffix(".zst").unwrap_or(b)
}

/// Reads the transcript past its cursor into the turn log, and merges the facts
/// it holds (a title, else the first ask, as `first-ask`).
/// `path` is where the transcript really is, when the record keeps it redacted.
fn read_new(
    source: &dyn harness::transcript::TranscriptSource,
    record: &mut SessionRecord,
    path: Option<PathBuf>,
) -> Found {
    let Some(state) = record.transcript.as_mut() else {
        return Found::default();
    };
    let path = path.unwrap_or_else(|| PathBuf::from(&state.path));
    let path = path.as_path();
    // A file shorter than the cursor was rewritten: read it again from the
    // start; what was sent stays sent (the log remembers the last turn), and
    // each response's tokens are kept once (by its key).
    if source.size(path).is_ok_and(|len| len < state.log.cursor) {
        state.log.restart();
    }
    let Ok(out) = source.read(path, state.log.cursor) else {
        return Found::default();
    };
    state.log.feed(out.recs);
    state.log.cursor = out.cursor;
    if out.version.is_some() {
        record.version = out.version;
    }
    let mut facts = out.facts;
    if facts.title.is_none()
        && let Some(ask) = &state.log.first_ask
    {
        facts.title = Some(harness::payload::one_line(ask, source.first_ask_chars()));
        facts.title_source = Some(TitleSource::FirstAsk);
    }
    crate::pipeline::scrub::block(&mut facts);
    record.block.merge(&facts);
    // An `ai-title` record is a `harness` title too: a remote name heard
    // before stays over it (the held turn's re-reads come through here).
    crate::pipeline::titles::apply(record);
    // Limits are sent when they changed, not at every read.
    let limits = out.limits.filter(|limits| {
        let seen = serde_json::to_value(limits).ok();
        let changed = record.last_limits != seen;
        if changed {
            record.last_limits = seen;
        }
        changed
    });
    Found {
        limits,
        usage: out.usage,
    }
}

/// The hold worker's read: once the held turn is whole, its transcript event
/// (nothing, where the Stop's own record came with no turn to send) and the
/// tokens read; `None` while it is not. `path` is where the transcript really
/// is, when the record keeps it redacted.
pub fn held_turn(
    adapter: &dyn Adapter,
    record: &mut SessionRecord,
    now_ms: i64,
    path: Option<PathBuf>,
) -> Option<Held> {
    let source = adapter.transcript()?;
    let hold = record.hold.clone()?;
    // Limits this read found follow the held turn. When the turn is not whole
    // yet, nothing of the read is kept (the caller saves no record), so the
    // next read finds them, and the tokens, again.
    let found = read_new(source, record, path);
    let state = record.transcript.as_mut()?;
    let mut out: Vec<EventData> = state
        .log
        .take(&hold.want())
        .into_iter()
        .map(|t| transcript_event(t, now_ms))
        .collect();
    if out.is_empty() && !hold.written(&state.log) {
        return None;
    }
    out.extend(found.limits.map(EventData::LimitsObserved));
    Some(Held {
        events: out,
        usage: found.usage,
    })
}

/// A Stop's turn the file does not have whole yet: hold it (ADAPTERS.md, Claude
/// Code Transcript row: re-read for a while, then at later hooks for a minute).
/// Whole by the Stop's words (Claude Code, Codex), or by the Stop's own record
/// in the file (Copilot CLI, whose Stop names no words).
fn hold_for(plan: &ReadPlan, job: &Job, record: &mut SessionRecord, now: i64) -> Option<Hold> {
    if !plan.hold {
        return None;
    }
    let turn_id = turn_id_of(job, record);
    let log = &record.transcript.as_ref()?.log;
    let (words, stopped_at) = match &plan.want {
        Want::EndedWith(words) => {
            if log.sent(turn_id.as_deref()) || log.last_turn_whole(words) {
                return None;
            }
            // Kept in the session's record: as redacted as everything else there.
            (redact::secrets(words).into_owned(), None)
        }
        Want::StoppedAt(at) if !log.stopped_since(*at) => (String::new(), Some(*at)),
        _ => return None,
    };
    let hold = Hold {
        turn_id,
        words,
        until_ms: now + HOLD_MS,
        stopped_at,
    };
    record.hold = Some(hold.clone());
    Some(hold)
}

/// The turn a call ends: the running one (the hooks' own record of it), when
/// its harness named it.
fn turn_id_of(_job: &Job, record: &SessionRecord) -> Option<String> {
    record.running_turn.clone().filter(|id| !id.is_empty())
}

fn transcript_event(t: Turn, now_ms: i64) -> EventData {
    EventData::TurnTranscript(TurnTranscript {
        turn: t.n,
        user: t.user,
        assistant: t.assistant,
        at: protocol::time::rfc3339_ms(t.at_ms.unwrap_or(now_ms)),
    })
}

/// Keeps `record.running_turn` in step with the events appended for a call. A
/// turn whose harness names no turn id runs all the same (held as `""`).
pub fn track_running_turn(record: &mut SessionRecord, events: &[EventData]) {
    for ev in events {
        match ev {
            EventData::TurnStarted(t) => {
                record.running_turn = Some(t.turn_id.clone().unwrap_or_default())
            }
            EventData::TurnEnded(t)
                if t.turn_id.is_none()
                    || t.turn_id == record.running_turn
                    || record.running_turn.as_deref() == Some("") =>
            {
                record.running_turn = None
            }
            EventData::SessionEnded(_) => record.running_turn = None,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::session::SessionRecord;
    use serde_json::{Value, json};
    use std::path::Path;

    /// A turn runs from its start to its end whether or not its harness names
    /// it (Copilot CLI and Droid name none), and only a named one is a turn id.
    #[test]
    fn a_turn_without_an_id_runs_until_it_ends() {
        let mut r = SessionRecord::default();
        let job = Job::default();
        track_running_turn(&mut r, &[EventData::TurnStarted(TurnStarted::default())]);
        assert_eq!(r.running_turn.as_deref(), Some(""));
        assert_eq!(turn_id_of(&job, &r), None);
        track_running_turn(
            &mut r,
            &[EventData::TurnEnded(TurnEnded::new(
                None,
                TurnEndReason::Stop,
            ))],
        );
        assert_eq!(r.running_turn, None);
        let named = TurnStarted {
            turn_id: Some("p-1".into()),
            ..Default::default()
        };
        track_running_turn(&mut r, &[EventData::TurnStarted(named)]);
        assert_eq!(turn_id_of(&job, &r).as_deref(), Some("p-1"));
        // Another turn's end leaves a named one running.
        let other = TurnEnded::new(Some("p-0".into()), TurnEndReason::Stop);
        track_running_turn(&mut r, &[EventData::TurnEnded(other)]);
        assert_eq!(r.running_turn.as_deref(), Some("p-1"));
        track_running_turn(
            &mut r,
            &[EventData::SessionEnded(SessionEnded {
                reason: EndReason::Exit,
            })],
        );
        assert_eq!(r.running_turn, None);
    }

    /// The daemon's reads around Copilot CLI's hooks, on a recorded
    /// `events.jsonl` written as Copilot writes it: late. Its `agentStop`
    /// names no words; the turn is held until the file has the Stop's own
    /// record (Copilot's `hook.start` of it), and sent then, whole.
    #[test]
    fn the_daemons_reads_as_copilot_writes_its_log_late() {
        let copilot = adapters::lookup("copilot-cli").unwrap();
        let recorded = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../conformance/transcripts/copilot-cli/nested-subagents.jsonl");
        let text = std::fs::read_to_string(recorded).unwrap();
        let sid = "d853543d-36c2-497b-bfd5-f40d94f99811";
        let stop_line = text
            .find(&format!(
                r#""hookType":"agentStop","input":{{"sessionId":"{sid}""#
            ))
            .unwrap();
        let before_stop = text[..stop_line].rfind('\n').unwrap() + 1;
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let path = home.join(format!(".copilot/session-state/{sid}/events.jsonl"));
        let kinds = |evs: &[EventData]| evs.iter().map(|e| e.kind()).collect::<Vec<_>>();
        let call = |record: &mut SessionRecord, event: &str, extra: Value| {
            let mut p = json!({"sessionId": sid, "cwd": "/w", "timestamp": 1_796_524_694_478_i64});
            p.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            let job = harness::Job {
                harness: "copilot-cli".into(),
                event: event.into(),
                payload: p.to_string().into_bytes(),
                env: [("HOME".to_string(), home.display().to_string())].into(),
                ..Default::default()
            };
            let live = LivePaths::default();
            let reads = Reads {
                turns: Turns::Send,
                live: &live,
                titles: None,
            };
            let files = copilot.files(&job);
            let around = around_call(copilot, &job, &files, false, record, &reads, sid);
            (
                kinds(&around.before),
                kinds(&around.after),
                around.hold.is_some(),
            )
        };
        let stop = json!({"transcriptPath": path, "stopReason": "end_turn",
            "stop_hook_active": false, "timestamp": 1_796_524_698_204_i64});
        let mut record = SessionRecord::default();

        // Nothing written yet when the prompt and the Stop fire.
        call(
            &mut record,
            "userPromptSubmitted",
            json!({"prompt": "please delegate the echo"}),
        );
        let (before, after, held) = call(&mut record, "agentStop", stop.clone());
        assert_eq!((before, after, held), (vec![], vec![], true));
        assert!(held_turn(copilot, &mut record, 0, None).is_none());
        // Written up to the Stop: the reply is in, the Stop's record is not.
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &text[..before_stop]).unwrap();
        assert!(held_turn(copilot, &mut record, 0, None).is_none());
        std::fs::write(&path, &text).unwrap();
        let sent = held_turn(copilot, &mut record, 0, None)
            .expect("whole")
            .events;
        let Some(EventData::TurnTranscript(t)) = sent.first() else {
            panic!("{sent:?}")
        };
        assert_eq!(
            (t.user.as_str(), t.assistant.as_str()),
            ("please delegate the echo", "All done.")
        );
        record.hold = None;
        let end = call(&mut record, "sessionEnd", json!({"reason": "complete"}));
        assert_eq!(end, (vec![], vec![], false), "nothing is sent twice");

        // A Stop read once its record is in sends its turn after its end.
        let mut record = SessionRecord::default();
        call(&mut record, "sessionStart", json!({"source": "new"}));
        let (_, after, held) = call(&mut record, "agentStop", stop);
        assert_eq!((after, held), (vec!["turn.transcript"], false));
    }

    /// The daemon's reads around Codex's hooks, on the
    /// recorded rollout cut where Codex had written it at each hook: the version
    /// and model at the start; a Stop whose words are not in the file yet holds
    /// its turn, and the held read sends the turn with the limits it found; a
    /// rollout compressed in place keeps its cursor.
    #[test]
    fn the_daemons_reads_as_codex_writes_its_rollout() {
        let codex = adapters::lookup("codex").unwrap();
        let recorded = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../conformance/transcripts/codex/one-turn.jsonl");
        let text = std::fs::read_to_string(recorded).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let dir = tempfile::tempdir().unwrap();
        let sid = "01a22900-3b7d-7f91-8b4f-43c8cf049ae8";
        let path = dir
            .path()
            .join(format!("rollout-2026-11-29T20-30-10-{sid}.jsonl"));
        let write = |n: usize| {
            let upto: String = lines[..n].iter().map(|l| format!("{l}\n")).collect();
            std::fs::write(&path, upto).unwrap();
        };
        let kinds = |evs: &[EventData]| evs.iter().map(|e| e.kind()).collect::<Vec<_>>();
        let call = |record: &mut SessionRecord, event: &str, extra: Value, rollout: &Path| {
            let mut p = json!({"session_id": sid, "turn_id": "01a22900-3b98-7782-a77f-480237f2596d",
                "transcript_path": rollout, "cwd": "/w", "hook_event_name": event});
            p.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            let job = harness::Job {
                harness: "codex".into(),
                event: event.into(),
                payload: p.to_string().into_bytes(),
                ..Default::default()
            };
            let live = LivePaths::default();
            let reads = Reads {
                turns: Turns::Send,
                live: &live,
                titles: None,
            };
            let around = around_call(codex, &job, &codex.files(&job), false, record, &reads, sid);
            (
                kinds(&around.before),
                kinds(&around.after),
                around.hold.is_some(),
            )
        };
        let mut record = SessionRecord::default();

        write(7); // Codex has written the thread's start, not the ask yet
        let start = call(&mut record, "SessionStart", json!({}), &path);
        assert_eq!(start, (vec![], vec![], false));
        assert_eq!(record.version.as_deref(), Some("0.171.0"));
        assert_eq!(record.block.model.as_deref(), Some("mock-model"));
        write(13); // the command's output, not the answer
        let words = json!({"last_assistant_message": "It printed hello."});
        let (_, after, held) = call(&mut record, "Stop", words, &path);
        assert_eq!((after, held), (vec![], true));
        write(lines.len());
        let sent = held_turn(codex, &mut record, 0, None).expect("whole");
        assert_eq!(kinds(&sent.events), ["turn.transcript", "limits.observed"]);
        // The responses' tokens come with it (each twice: Codex's two records).
        let keys: std::collections::BTreeSet<_> = sent.usage.iter().map(|u| &u.key).collect();
        assert_eq!(keys.len(), 2);

        // Codex compresses the rollout; its next hook names the `.zst`.
        let zst = path.with_extension("jsonl.zst");
        std::fs::write(&zst, zstd::encode_all(text.as_bytes(), 3).unwrap()).unwrap();
        std::fs::remove_file(&path).unwrap();
        let end = call(&mut record, "SessionEnd", json!({"reason": "other"}), &zst);
        assert_eq!(end, (vec![], vec![], false), "nothing is sent twice");
        let state = record.transcript.as_ref().unwrap();
        assert_eq!(
            (state.path.as_str(), state.log.cursor),
            (zst.to_str().unwrap(), text.len() as u64)
        );
    }
}
