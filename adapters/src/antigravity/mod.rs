//! Antigravity (`antigravity`): ADAPTERS.md's Antigravity row.
//!
//! Owns the mapping of Antigravity's hook payloads, where its hooks are written
//! (`hooks`), and what its own files say of a conversation: the transcript under
//! `<data dir>/brain/<conversationId>/` (`transcript`), the conversation's link
//! (`facts`) and past conversations (`backfill`). Antigravity's payloads are
//! camelCase and carry no event name (it rides in argv), no prompt and no
//! tool-use id; it has no session end. What it cannot tell is left out, not made
//! up: a later invocation or a PostToolUse that names no tool is only a
//! heartbeat, which reaches tier-0 destinations alone.
//!
//! Must never register `PreToolUse` (`hooks` says why). Must only read
//! Antigravity's files, never its sign-in (`antigravity-oauth-token`).

mod backfill;
mod facts;
mod headless;
mod hooks;
mod places;
mod transcript;

use harness::Job;
use harness::install::{HookInstall, Host};
use harness::payload::{
    MAX_ERROR_CHARS, capped, cut_chars, cwd_for, error_text, payload_object, session_id, str_of,
    tool_of, turn_error, u64_of,
};
use harness::transcript::{ReadPlan, TranscriptSource, Want};
use harness::{Adapter, MapError, Mapped, Mapping, Memo, SessionFiles};
use places::{data_dirs, folder_of, transcript_in};
use protocol::*;
use serde_json::{Map, Value};
use std::path::PathBuf;

pub struct Antigravity;

/// The session's memo: a first invocation was seen (the conversation started).
const MEMO_SEEN: &str = "seen";
/// The session's memo: when the last heartbeat (or turn start) went out, epoch ms.
const MEMO_BEAT_MS: &str = "beat_ms";

const NAME: &str = "antigravity";

/// A heartbeat stands in for activity a tier-0 destination cannot see, at most
/// once a minute (PROTOCOL-NOTES §3).
const HEARTBEAT_EVERY_MS: i64 = 60_000;

impl Adapter for Antigravity {
    fn name(&self) -> &'static str {
        NAME
    }

    fn map(&self, job: &Job) -> Result<Mapped, MapError> {
        let p = payload_object(job)?;
        let session_id = session_id(&p, "conversationId")?;
        if job.event.is_empty() {
            return Err(
                "the hook ran without an event in argv, and Antigravity's payload names none"
                    .into(),
            );
        }
        let events = match job.event.as_str() {
            // The first invocation opens the conversation and its turn; Antigravity
            // has no prompt hook, so the turn carries no id and no prompt size.
            "PreInvocation" if u64_of(&p, "invocationNum") == Some(0) => vec![
                EventData::SessionStarted(SessionStarted {
                    source: StartSource::Unknown,
                }),
                EventData::TurnStarted(TurnStarted::default()),
            ],
            "PreInvocation" | "PostInvocation" => vec![heartbeat()],
            "PostToolUse" => vec![tool_result(&p).unwrap_or_else(heartbeat)],
            "Stop" => vec![EventData::TurnEnded(turn_end(&p))],
            "PreToolUse" => {
                return Ok(Mapped::Ignored(
                    "a stale PreToolUse entry (sessionpipe no longer registers it; `sessionpipe install` removes it)".into(),
                ));
            }
            other => return Ok(Mapped::Ignored(format!("{other} is not mapped"))),
        };
        let block = SessionBlock {
            cwd: first_workspace(&p).map(|folder| cwd_for(job, &folder)),
            // `auto` is Antigravity choosing per request: no model is named.
            model: str_of(&p, "modelName").filter(|m| !m.eq_ignore_ascii_case("auto")),
            ..Default::default()
        };
        Ok(Mapped::Events(Box::new(Mapping {
            session_id,
            block,
            harness_version: None,
            events,
            subagent: None,
        })))
    }

    /// A conversation starts once: a later first invocation is a new turn of it,
    /// not a new session. Heartbeats are kept to one a minute, counted from the
    /// last one or the turn's start (which a tier-0 destination sees itself).
    fn remember(&self, job: &Job, events: &mut Vec<EventData>, memo: &mut Memo) {
        if memo.contains_key(MEMO_SEEN) {
            events.retain(|e| !matches!(e, EventData::SessionStarted(_)));
        }
        memo.insert(MEMO_SEEN.into(), Value::Bool(true));
        let now = job.at_ms();
        let last = memo.get(MEMO_BEAT_MS).and_then(Value::as_i64);
        // A clock that went back counts as due, so heartbeats never stop for good.
        let due = last.is_none_or(|t| now < t || now - t >= HEARTBEAT_EVERY_MS);
        events.retain(|e| due || !matches!(e, EventData::SessionHeartbeat(_)));
        if events.iter().any(|e| {
            matches!(
                e,
                EventData::SessionHeartbeat(_) | EventData::TurnStarted(_)
            )
        }) {
            memo.insert(MEMO_BEAT_MS.into(), Value::from(now));
        }
    }

    fn hooks(&self) -> Option<&dyn HookInstall> {
        Some(self)
    }

    fn headless(&self) -> Option<&dyn harness::headless::Headless> {
        Some(self)
    }

    /// The transcript is the payload's `transcriptPath`, else the conversation's
    /// in the first data folder that has it. No hook names a prompt, so reads
    /// go by time: a first invocation (a new turn) reads the turns closed by an
    /// ask made before it; a Stop reads its turn as it stands (it names no words
    /// to wait for) and nothing asked after it.
    fn files(&self, job: &Job) -> SessionFiles {
        let Ok(p) = payload_object(job) else {
            return SessionFiles::default();
        };
        let plan = |want, after| {
            Some(ReadPlan {
                want,
                after,
                hold: false,
                interruption: false,
            })
        };
        let read = match job.event.as_str() {
            "PreInvocation" if u64_of(&p, "invocationNum") == Some(0) => {
                plan(Want::ClosedBy(job.at_ms()), false)
            }
            "Stop" => plan(Want::AskedBefore(job.at_ms()), true),
            _ => None,
        };
        let transcript = str_of(&p, "transcriptPath").map(PathBuf::from).or_else(|| {
            let (home, id) = (job.home()?, str_of(&p, "conversationId")?);
            data_dirs(&home)
                .map(|d| transcript_in(&d, &id))
                .find(|t| t.is_file())
        });
        SessionFiles {
            folder: first_workspace(&p).map(PathBuf::from),
            transcript,
            read,
        }
    }

    fn transcript(&self) -> Option<&dyn TranscriptSource> {
        Some(&transcript::AntigravityTranscript)
    }

    /// The conversation's link, read where a turn starts or ends: invocations
    /// and tool steps come many a turn, and the link does not change between.
    fn facts(&self, job: &Job, files: &SessionFiles) -> SessionBlock {
        if files.read.is_none() {
            return SessionBlock::default();
        }
        let url = payload_object(job).ok().and_then(|p| {
            let (home, id) = (job.home()?, str_of(&p, "conversationId")?);
            facts::url(
                &home,
                files.transcript.as_deref(),
                &id,
                files.folder.as_deref(),
            )
        });
        SessionBlock {
            url,
            ..Default::default()
        }
    }

    fn backfill(&self, host: &Host, since_ms: i64) -> Vec<harness::backfill::Backfilled> {
        backfill::conversations(&host.home, since_ms)
    }
}

fn heartbeat() -> EventData {
    EventData::SessionHeartbeat(Empty {})
}

/// `tool.ended` for a PostToolUse that names its tool (`toolCall.name`); none
/// when it names only a step, as every documented one does.
fn tool_result(p: &Map<String, Value>) -> Option<EventData> {
    let call = p.get("toolCall")?.as_object()?;
    let error = error_text(p.get("error"));
    Some(EventData::ToolEnded(ToolEnded {
        tool: tool_of(call, "name")?,
        ok: error.is_none(),
        error: error.map(|e| cut_chars(&e, MAX_ERROR_CHARS)),
        input: call.get("args").map(capped),
        ..Default::default()
    }))
}

/// `turn.ended`: `terminationReason: error` is an error, every other reason
/// (the model stopped, the person stopped it, a limit) a stop.
fn turn_end(p: &Map<String, Value>) -> TurnEnded {
    let reason = match str_of(p, "terminationReason").as_deref() {
        Some("error") => TurnEndReason::Error,
        _ => TurnEndReason::Stop,
    };
    let mut ended = TurnEnded::new(None, reason);
    ended.error = turn_error(p.get("error"));
    ended
}

/// The first of `workspacePaths` (a list, or one string) as a folder.
fn first_workspace(p: &Map<String, Value>) -> Option<String> {
    let first = match p.get("workspacePaths")? {
        Value::Array(list) => list.iter().find_map(Value::as_str)?,
        Value::String(one) => one.as_str(),
        _ => return None,
    };
    let folder = folder_of(first);
    (!folder.is_empty()).then_some(folder)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;
    use std::path::Path;

    const CONV: &str = "ec33ebf9-0cba-4100-8142-c61503f6c587";

    fn job(event: &str, extra: Value, at_ms: u64) -> Job {
        let mut p = json!({
            "conversationId": CONV,
            "workspacePaths": ["file:///home/ann/src/my%20app"],
            "transcriptPath": "/home/ann/.gemini/antigravity/brain/x/transcript.jsonl",
            "artifactDirectoryPath": "/home/ann/.gemini/antigravity/brain/x",
            "modelName": "gemini-3.1-pro",
        });
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        Job {
            harness: NAME.into(),
            event: event.into(),
            argv: vec![NAME.into(), event.into()],
            at_ns: at_ms * 1_000_000,
            payload: p.to_string().into_bytes(),
            env: BTreeMap::from([("HOME".to_string(), "/home/ann".to_string())]),
            ..Default::default()
        }
    }

    fn mapped(j: &Job) -> Mapping {
        match Antigravity.map(j).unwrap() {
            Mapped::Events(m) => *m,
            Mapped::Ignored(why) => panic!("ignored: {why}"),
        }
    }

    fn kinds_of(event: &str, extra: Value) -> Vec<Value> {
        mapped(&job(event, extra, 1))
            .events
            .into_iter()
            .map(|e| {
                let (kind, data) = e.into_parts();
                json!({"type": kind, "data": data})
            })
            .collect()
    }

    #[test]
    fn the_first_invocation_opens_the_session_and_its_turn() {
        let m = mapped(&job("PreInvocation", json!({"invocationNum": 0}), 1));
        assert_eq!(m.session_id, CONV);
        assert_eq!(m.block.cwd.as_deref(), Some("~/src/my app"));
        assert_eq!(m.block.model.as_deref(), Some("gemini-3.1-pro"));
        assert_eq!(
            kinds_of("PreInvocation", json!({"invocationNum": 0})),
            [
                json!({"type": "session.started", "data": {"source": "unknown"}}),
                json!({"type": "turn.started", "data": {}})
            ]
        );
        let beat = json!({"type": "session.heartbeat", "data": {}});
        for later in ["PreInvocation", "PostInvocation"] {
            let evs = kinds_of(later, json!({"invocationNum": 3}));
            assert_eq!(evs, std::slice::from_ref(&beat), "{later}");
        }
    }

    #[test]
    fn post_tool_use_is_a_heartbeat_unless_it_names_its_tool() {
        assert_eq!(
            kinds_of("PostToolUse", json!({"stepIdx": 4, "error": null}))[0]["type"],
            "session.heartbeat"
        );
        assert_eq!(
            kinds_of(
                "PostToolUse",
                json!({"stepIdx": 4, "toolCall": {"name": "run_command", "args": {"CommandLine": "ls"}}})
            )[0],
            json!({"type": "tool.ended", "data": {"tool": "run_command", "ok": true, "input": {"CommandLine": "ls"}}})
        );
        let failed = kinds_of(
            "PostToolUse",
            json!({"toolCall": {"name": "view_file"}, "error": "no such file"}),
        );
        assert_eq!(
            failed[0]["data"],
            json!({"tool": "view_file", "ok": false, "error": "no such file"})
        );
    }

    #[test]
    fn stop_ends_the_turn_by_its_termination_reason() {
        assert_eq!(
            kinds_of(
                "Stop",
                json!({"terminationReason": "model_stop", "fullyIdle": true})
            )[0],
            json!({"type": "turn.ended", "data": {"reason": "stop"}})
        );
        assert_eq!(
            kinds_of(
                "Stop",
                json!({"terminationReason": "error", "error": "quota exceeded"})
            )[0]["data"],
            json!({"reason": "error", "error": "quota exceeded"})
        );
    }

    #[test]
    fn calls_it_cannot_place() {
        let stale = job("PreToolUse", json!({"toolCall": {"name": "x"}}), 1);
        assert!(matches!(
            Antigravity.map(&stale).unwrap(),
            Mapped::Ignored(_)
        ));
        let mut no_event = job("", json!({}), 1);
        no_event.argv.truncate(1);
        assert!(Antigravity.map(&no_event).is_err());
        let mut no_id = job("Stop", json!({}), 1);
        no_id.payload = br#"{"workspacePaths": ["/w"]}"#.to_vec();
        assert!(Antigravity.map(&no_id).is_err());
    }

    #[test]
    fn one_start_per_conversation_and_a_heartbeat_a_minute() {
        let mut memo = Memo::new();
        let mut run = |event: &str, n: u64, at_ms: u64| -> Vec<&'static str> {
            let j = job(event, json!({"invocationNum": n}), at_ms);
            let mut evs = mapped(&j).events;
            Antigravity.remember(&j, &mut evs, &mut memo);
            evs.iter().map(EventData::kind).collect()
        };
        assert_eq!(
            run("PreInvocation", 0, 0),
            ["session.started", "turn.started"]
        );
        assert!(run("PreInvocation", 1, 30_000).is_empty());
        assert!(run("PostInvocation", 1, 59_999).is_empty());
        assert_eq!(run("PreInvocation", 2, 60_000), ["session.heartbeat"]);
        assert!(run("PreInvocation", 3, 61_000).is_empty());
        assert_eq!(run("Stop", 3, 62_000), ["turn.ended"]);
        // The next turn of the same conversation is a turn, not a new session.
        assert_eq!(run("PreInvocation", 0, 200_000), ["turn.started"]);
        assert!(run("PreInvocation", 1, 230_000).is_empty());
        // A clock that went back does not silence heartbeats.
        assert_eq!(run("PreInvocation", 2, 1_000), ["session.heartbeat"]);
    }

    #[test]
    fn workspace_paths_as_paths_or_file_uris() {
        for (given, folder) in [
            ("/srv/app", "/srv/app"),
            ("file:///srv/my%20app/%C3%A9", "/srv/my app/é"),
            ("FILE://localhost/srv/x", "/srv/x"),
            ("file:///C:/Users/ann/app", "C:/Users/ann/app"),
            ("file://nas/share/app", "//nas/share/app"),
            ("file:///bad%zz%4", "/bad%zz%4"),
            // Byte 7 inside a character: a path, not a URI (found by map_props).
            ("ࠀ 𐀀", "ࠀ 𐀀"),
            ("/home/é€x", "/home/é€x"),
        ] {
            assert_eq!(folder_of(given), folder, "{given}");
        }
        let one = json!({"workspacePaths": "/srv/one"});
        assert_eq!(
            first_workspace(one.as_object().unwrap()).as_deref(),
            Some("/srv/one")
        );
        let none = json!({"workspacePaths": []});
        assert_eq!(first_workspace(none.as_object().unwrap()), None);
    }

    #[test]
    fn a_new_turn_reads_the_closed_turns_and_a_stop_its_own() {
        let plan = |event: &str, n: u64| {
            Antigravity
                .files(&job(event, json!({"invocationNum": n}), 5))
                .read
        };
        let first = plan("PreInvocation", 0).unwrap();
        assert_eq!((first.want, first.after), (Want::ClosedBy(5), false));
        let stop = plan("Stop", 0).unwrap();
        assert_eq!(
            (stop.want, stop.after, stop.hold),
            (Want::AskedBefore(5), true, false)
        );
        assert_eq!(plan("PreInvocation", 1), None);
        assert_eq!(plan("PostToolUse", 1), None);
        let f = Antigravity.files(&job("Stop", json!({}), 5));
        assert_eq!(f.folder.as_deref(), Some(Path::new("/home/ann/src/my app")));
        assert_eq!(
            f.transcript.as_deref(),
            Some(Path::new(
                "/home/ann/.gemini/antigravity/brain/x/transcript.jsonl"
            ))
        );
    }

    #[test]
    fn without_a_transcript_path_the_data_folders_are_searched() {
        let home = tempfile::tempdir().unwrap();
        let mut j = job("Stop", json!({}), 5);
        j.env
            .insert("HOME".into(), home.path().display().to_string());
        let mut p: Value = serde_json::from_slice(&j.payload).unwrap();
        p.as_object_mut().unwrap().remove("transcriptPath");
        j.payload = p.to_string().into_bytes();
        assert_eq!(Antigravity.files(&j).transcript, None);
        let ide = transcript_in(&home.path().join(".gemini/antigravity-ide"), CONV);
        std::fs::create_dir_all(ide.parent().unwrap()).unwrap();
        std::fs::write(&ide, "").unwrap();
        assert_eq!(Antigravity.files(&j).transcript, Some(ide));
    }
}
