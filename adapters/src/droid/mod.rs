//! Factory Droid (`droid`): ADAPTERS.md's Droid row, as the recorded runs of
//! Droid 0.225.2 show it.
//!
//! Droid's hooks are Claude-shaped (a JSON payload per call with `session_id`,
//! `transcript_path`, `cwd`, `permission_mode`, `hook_event_name`), so this is
//! one table of the kit's Claude-shaped mapping, with Droid's tool names kept as
//! given (`Execute`, `Create`, ...). Owns that table, sessionpipe's entries in
//! `~/.factory/hooks.json` (`hooks_file.rs`), the session's transcript for tier 2
//! and facts (`transcript.rs`) and past sessions (`backfill.rs`).
//!
//! **Where the recordings disagree with ADAPTERS.md, this follows the
//! recordings** (they are newer than the row):
//! - `~/.factory/hooks.json` holds the event names **at the top level**
//!   (`{"PreToolUse": [{"matcher": "*", "hooks": [...]}], ...}`); Droid ignores a
//!   `{"hooks": {...}}` wrapper in silence, so our entries are never written in one.
//! - Droid has no `PermissionRequest`, `PostToolUseFailure` or `SubagentStart`:
//!   a person asked for a permission is a `Notification` with
//!   `notification_type: permission_prompt`, the one `attention.needed`.
//! - `message_id` is not a turn id (a prompt's and its Stop's differ), and no
//!   payload carries a tool-use id: the events carry neither.
//! - `droid exec` fires no `UserPromptSubmit`: the turn of a run that never
//!   named its prompt is opened by its first event inside the turn (`remember`).
//! - `SubagentStop` is not registered: no recorded payload says where the
//!   subagent's id is.
//!
//! A `Stop` may carry a verified control message back as
//! `{"decision":"block","reason":…}` (Claude Code's Stop answer): Droid then
//! sends the model the reason as the next user message of the same run (no
//! `UserPromptSubmit` fires for it: its turn is opened at its own `Stop`), and
//! the next `Stop` says `stop_hook_active: true`. That is control's `turn` rung,
//! measured on 0.225.2 in `droid exec`. Its `Stop` entry gets a longer timeout
//! than the rest, so Droid never ends the hook while it waits for control's
//! answer.
//!
//! Must not write any file of Droid's but its entries in `hooks.json`, and prints
//! nothing on any other hook.

mod backfill;
mod hooks_file;
mod transcript;

use harness::claude_shaped::{self, Folder, Read, Row, Rule, Shaped, StopWithout, Table, Trigger};
use harness::install::{HookEvent, HookInstall, Host};
use harness::payload::CLAUDE_TOOL_KEYS;
use harness::transcript::TranscriptSource;
use harness::{Adapter, Job, MapError, Mapped, Memo, SessionFiles};
use protocol::*;
use serde_json::Value;
use std::path::PathBuf;

pub struct Droid;

const NAME: &str = "droid";

/// The session's memo: a turn is running (its start was reported).
const MEMO_TURN: &str = "turn_open";

/// ADAPTERS.md's Droid row by the recorded payloads: the Claude Code mapping of
/// the events Droid has. Tool events take Droid's match-everything `*`.
static TABLE: Table = Table {
    harness: NAME,
    session_key: "session_id",
    tool: CLAUDE_TOOL_KEYS,
    agent_keys: &["agent_id"],
    folder: &[Folder::Payload("cwd"), Folder::HookCwd],
    model_key: None,
    transcript_key: Some("transcript_path"),
    start_keys: &["source"],
    start_words: &[],
    end_words: &[],
    folded_names: true,
    interruptions: false,
    timeout_s: 5,
    rows: &[
        Row::new(
            HookEvent::plain("SessionStart"),
            Rule::SessionStart,
            Read::AskedBefore,
        ),
        Row::new(
            HookEvent::plain("UserPromptSubmit"),
            Rule::Prompt,
            Read::Prompt,
        ),
        Row::new(
            HookEvent::with_matcher("PreToolUse", "*"),
            Rule::ToolStart,
            Read::Nothing,
        ),
        Row::new(
            HookEvent::with_matcher("PostToolUse", "*"),
            Rule::ToolEnd { ok: true },
            Read::Nothing,
        ),
        Row::new(
            HookEvent::plain("Notification"),
            Rule::Notification,
            Read::Nothing,
        ),
        Row::new(
            HookEvent::plain("Stop").timeout(10),
            Rule::TurnEnd(TurnEndReason::Stop),
            Read::StopWords {
                otherwise: StopWithout::All,
            },
        ),
        Row::new(
            HookEvent::plain("PreCompact"),
            Rule::Compact(Trigger::FromPayload),
            Read::Nothing,
        ),
        Row::new(HookEvent::plain("SessionEnd"), Rule::SessionEnd, Read::All),
    ],
};

/// `Stop` takes Claude Code's Stop answer (`decision: block`, the message as
/// `reason`). sessionpipe answers none of Droid's tool hooks: a permission
/// answer is refused as unsupported.
impl harness::control::ControlHooks for Droid {
    fn turn_answer(&self, framed: &str) -> Option<String> {
        Some(harness::control::stop_block(framed))
    }
}

impl Adapter for Droid {
    fn name(&self) -> &'static str {
        NAME
    }

    fn map(&self, job: &Job) -> Result<Mapped, MapError> {
        claude_shaped::map(self, job)
    }

    /// A turn no `UserPromptSubmit` opened (`droid exec`) is opened by its first
    /// event inside it: a tool, an ask, its Stop.
    fn remember(&self, _job: &Job, events: &mut Vec<EventData>, memo: &mut Memo) {
        open_turns(events, memo);
    }

    fn hooks(&self) -> Option<&dyn HookInstall> {
        Some(self)
    }

    fn files(&self, job: &Job) -> SessionFiles {
        claude_shaped::files(self, job)
    }

    fn transcript(&self) -> Option<&dyn TranscriptSource> {
        Some(&transcript::DroidTranscript)
    }

    fn control(&self) -> Option<&dyn harness::control::ControlHooks> {
        Some(self)
    }

    /// The model from the `<id>.settings.json` beside the transcript, the title
    /// from its `session_start` record.
    fn facts(&self, _job: &Job, files: &SessionFiles) -> SessionBlock {
        files
            .transcript
            .as_deref()
            .map(transcript::facts)
            .unwrap_or_default()
    }

    fn backfill(&self, host: &Host, since_ms: i64) -> Vec<harness::backfill::Backfilled> {
        backfill::sessions(&factory_dir(host).join("sessions"), &host.home, since_ms)
    }
}

impl Shaped for Droid {
    fn table(&self) -> &'static Table {
        &TABLE
    }

    fn version(&self, job: &Job) -> Option<String> {
        // Droid names its version nowhere in a hook call; its user agent does,
        // which a hook never sees.
        let _ = job;
        None
    }
}

/// Puts a `turn.started` before the first event of a turn nobody opened, and
/// keeps in `memo` whether a turn is running.
fn open_turns(events: &mut Vec<EventData>, memo: &mut Memo) {
    let mut out = Vec::with_capacity(events.len() + 1);
    for e in events.drain(..) {
        let open = memo.get(MEMO_TURN) == Some(&Value::Bool(true));
        match &e {
            EventData::TurnStarted(_) => {
                memo.insert(MEMO_TURN.into(), Value::Bool(true));
            }
            EventData::ToolStarted(_)
            | EventData::ToolEnded(_)
            | EventData::AttentionNeeded(_)
            | EventData::TurnEnded(_)
                if !open =>
            {
                out.push(EventData::TurnStarted(TurnStarted::default()));
                memo.insert(MEMO_TURN.into(), Value::Bool(true));
            }
            _ => {}
        }
        if matches!(
            e,
            EventData::TurnEnded(_) | EventData::SessionEnded(_) | EventData::SessionStarted(_)
        ) {
            memo.remove(MEMO_TURN);
        }
        out.push(e);
    }
    *events = out;
}

/// Droid's folder: `~/.factory`.
pub(super) fn factory_dir(host: &Host) -> PathBuf {
    host.home.join(".factory")
}

/// The event a job names (for tests that read jobs).
#[cfg(test)]
fn event_of(job: &Job) -> String {
    harness::payload::payload_object(job)
        .map(|p| harness::payload::hook_event(job, &p))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    const SESSION: &str = "9361b64e-b749-46bb-8a2e-0c95c93721fb";

    fn job(event: &str, extra: Value) -> Job {
        let mut p = json!({"session_id": SESSION,
            "transcript_path": format!("/home/ann/.factory/sessions/-home-ann-proj/{SESSION}.jsonl"),
            "cwd": "/home/ann/proj", "permission_mode": "auto-low", "hook_event_name": event});
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        Job {
            harness: NAME.into(),
            event: event.into(),
            argv: vec![NAME.into(), event.into()],
            at_ns: 1_796_138_540_100_000_000,
            payload: p.to_string().into_bytes(),
            env: BTreeMap::from([("HOME".to_string(), "/home/ann".to_string())]),
            ..Default::default()
        }
    }

    /// The events of a run of calls, through `map` and `remember` with one memo.
    fn run(calls: &[(&str, Value)]) -> Vec<Value> {
        let mut memo = Memo::new();
        let mut out = Vec::new();
        for (event, extra) in calls {
            let j = job(event, extra.clone());
            assert_eq!(event_of(&j), *event);
            let Mapped::Events(m) = Droid.map(&j).unwrap() else {
                continue;
            };
            assert_eq!(m.session_id, SESSION);
            assert_eq!(m.block.cwd.as_deref(), Some("~/proj"));
            let mut events = m.events;
            Droid.remember(&j, &mut events, &mut memo);
            for e in events {
                let (kind, data) = e.into_parts();
                out.push(json!({"type": kind, "data": data}));
            }
        }
        out
    }

    fn kinds(events: &[Value]) -> Vec<&str> {
        events.iter().map(|e| e["type"].as_str().unwrap()).collect()
    }

    #[test]
    fn an_exec_run_without_a_prompt_hook_still_opens_its_turn() {
        let input = json!({"command": "echo hello", "summary": "Print hello",
            "riskLevel": "low", "riskLevelReason": "Only prints text."});
        let events = run(&[
            ("SessionStart", json!({"source": "startup"})),
            (
                "PreToolUse",
                json!({"tool_name": "Execute", "tool_input": input}),
            ),
            (
                "PostToolUse",
                json!({"tool_name": "Execute", "tool_input": input,
                    "tool_response": "hello\n\n\n[Process exited with code 0]"}),
            ),
            (
                "Stop",
                json!({"message_id": "3f70", "stop_hook_active": false}),
            ),
            (
                "SessionEnd",
                json!({"reason": "other", "message_id": "3f70"}),
            ),
        ]);
        assert_eq!(
            kinds(&events),
            [
                "session.started",
                "turn.started",
                "tool.started",
                "tool.ended",
                "turn.ended",
                "session.ended"
            ]
        );
        assert_eq!(events[0]["data"], json!({"source": "startup"}));
        assert_eq!(events[1]["data"], json!({}));
        assert_eq!(
            events[2]["data"],
            json!({"tool": "Execute", "input": input})
        );
        assert_eq!(events[3]["data"]["ok"], true);
        assert_eq!(
            events[4]["data"],
            json!({"reason": "stop"}),
            "message_id is no turn id"
        );
        assert_eq!(events[5]["data"], json!({"reason": "other"}));
    }

    #[test]
    fn a_prompt_opens_its_own_turn_and_a_permission_prompt_asks_once() {
        let events = run(&[
            ("SessionStart", json!({"source": "startup"})),
            (
                "UserPromptSubmit",
                json!({"prompt": "run touch x", "message_id": "bf4b"}),
            ),
            (
                "PreToolUse",
                json!({"tool_name": "Execute", "tool_input": {"command": "touch x"}}),
            ),
            (
                "Notification",
                json!({"message": "Factory CLI needs permission to execute 1 tool(s)",
                    "notification_type": "permission_prompt"}),
            ),
            ("Stop", json!({})),
            ("SessionStart", json!({"source": "resume"})),
            ("PreCompact", json!({"trigger": "auto"})),
        ]);
        assert_eq!(
            kinds(&events),
            [
                "session.started",
                "turn.started",
                "tool.started",
                "attention.needed",
                "turn.ended",
                "session.started",
                "context.compacted"
            ]
        );
        assert_eq!(events[1]["data"], json!({"prompt_chars": 11}));
        assert_eq!(
            events[3]["data"],
            json!({"attention_id": "notif-1796138540100", "kind": "permission",
                "message": "Factory CLI needs permission to execute 1 tool(s)"})
        );
        assert_eq!(events[5]["data"], json!({"source": "resume"}));
        assert_eq!(events[6]["data"], json!({"trigger": "auto"}));
    }

    #[test]
    fn events_droid_lacks_are_not_registered() {
        let names = TABLE.names();
        for absent in ["PermissionRequest", "PostToolUseFailure", "SubagentStart"] {
            assert!(!names.contains(&absent), "{absent}");
        }
        assert!(matches!(
            Droid.map(&job("PermissionRequest", json!({}))).unwrap(),
            Mapped::Ignored(_)
        ));
    }

    #[test]
    fn the_stop_answer_is_a_block_with_the_message_as_reason() {
        use harness::control::ControlHooks;
        let out = Droid.turn_answer("Message via x: \"go\"").unwrap();
        assert!(out.ends_with('\n'));
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            v,
            json!({"decision": "block", "reason": "Message via x: \"go\""})
        );
        assert_eq!(Droid.permission_answer(true, None), None);
        assert!(Droid.control().is_some());
    }
}
