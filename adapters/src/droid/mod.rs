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
//!   `notification_type: permission_prompt`, the one `attention.needed`. Its
//!   nine events (the row's "nine Claude-shaped events") all get an entry.
//! - `message_id` is not a turn id (a prompt's and its Stop's differ), and no
//!   payload carries a tool-use id: the events carry neither.
//! - `droid exec` fires no `UserPromptSubmit`: the turn of a run that never
//!   named its prompt is opened by its first event inside the turn (`remember`).
//! - A subagent (a `Task` call's, offered under `--auto high`) is a Droid
//!   session of its own: its own `session_id` and transcript, and every hook
//!   from `SessionStart` to `SessionEnd` (its `UserPromptSubmit` too). Only its
//!   `SessionStart` names the session it works for, as `calling_session_id`.
//!   That start is the subagent's start: `subagent.started` in the caller's
//!   session, its `agent_id` the subagent's session id (Droid's hooks name no
//!   subagent type, so there is no `agent_type`), and the daemon puts the
//!   subagent's later calls under the caller too (`Mapping::subagent`,
//!   `harness::subagent::fold`): its tool calls and asks with its `agent_id`,
//!   its own `SessionEnd` as `subagent.ended`, nothing of its prompts or
//!   `Stop`s. The caller's `SubagentStop` comes after that end and names no
//!   subagent (`task_name` is the Task's description, `task_result` its
//!   report): it ends a subagent only where its own end never came through
//!   (the daemon restarted while it ran) and only one can be stopping
//!   (`subagents`). A subagent's transcript is no past session of its own
//!   either (`backfill.rs`).
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

use harness::claude_shaped::{
    self, Call, Folder, NotMapped, Read, Row, Rule, Shaped, StopWithout, Table, Trigger,
};
use harness::install::{HookEvent, HookInstall, Host};
use harness::payload::{CLAUDE_TOOL_KEYS, hook_event, str_of};
use harness::transcript::TranscriptSource;
use harness::{Adapter, Job, MapError, Mapped, Memo, SessionFiles};
use protocol::*;
use serde_json::{Map, Value};
use std::path::PathBuf;

pub struct Droid;

const NAME: &str = "droid";

/// The session's memo: a turn is running (its start was reported).
const MEMO_TURN: &str = "turn_open";

/// The session's memo: its subagents started and not ended yet, oldest first.
const MEMO_SUBAGENTS: &str = "subagents";

/// The session's memo: how many subagents' own ends were reported whose
/// `SubagentStop` has not come yet.
const MEMO_STOPS_DUE: &str = "subagent_stops_due";

/// The key of a subagent session's `SessionStart` that names its caller.
const CALLER: &str = "calling_session_id";

/// Hooks written beside the table's: `SubagentStop` names no subagent (only
/// its task's description and result), so it has no row; `remember` ends the
/// one subagent it can only be (`subagents`).
const SUBAGENT_STOP: HookEvent = HookEvent::plain("SubagentStop");

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
    fn remember(&self, job: &Job, events: &mut Vec<EventData>, memo: &mut Memo) {
        subagents(job, events, memo);
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

    /// A subagent session's `SessionStart` is its caller's: the subagent's
    /// id becomes the call's `agent_id`.
    fn prepare(
        &self,
        job: &Job,
        mut p: Map<String, Value>,
    ) -> Result<Map<String, Value>, NotMapped> {
        if let Some(caller) = subagent_start(job, &p) {
            let own = p.insert("session_id".into(), Value::String(caller));
            p.insert("agent_id".into(), own.unwrap_or_default());
        }
        Ok(p)
    }

    /// That start is `subagent.started` (Droid's hooks name no subagent type).
    fn adjust(&self, call: &Call<'_>, event: &mut EventData) -> Result<(), NotMapped> {
        if let EventData::SessionStarted(_) = event
            && subagent_start(call.job, call.payload).is_some()
            && let Some(agent_id) = str_of(call.payload, "agent_id")
        {
            *event = EventData::SubagentStarted(SubagentStarted {
                agent_id,
                agent_type: None,
            });
        }
        Ok(())
    }

    /// The subagent whose own later calls, under its own session id, the
    /// daemon folds into its caller's session.
    fn subagent(&self, call: &Call<'_>) -> Option<String> {
        subagent_start(call.job, call.payload)?;
        str_of(call.payload, "agent_id")
    }

    /// A subagent's start names its own transcript, not its caller's.
    fn own_call(&self, job: &Job, p: &Map<String, Value>) -> bool {
        subagent_start(job, p).is_none()
    }

    fn unlisted(&self, call: &Call<'_>) -> Result<Vec<EventData>, NotMapped> {
        match call.event {
            // Nothing from the call alone: `remember` knows which subagent.
            "SubagentStop" => Ok(Vec::new()),
            other => Err(NotMapped::Ignored(format!("{other} is not mapped"))),
        }
    }
}

/// The caller a subagent session's `SessionStart` names.
fn subagent_start(job: &Job, p: &Map<String, Value>) -> Option<String> {
    let event = hook_event(job, p);
    (event.eq_ignore_ascii_case("SessionStart"))
        .then(|| str_of(p, CALLER))
        .flatten()
}

/// Keeps in `memo` which subagents run, so each ends once: by its own
/// `SessionEnd`, folded into this session (`subagent.ended` with its id), or,
/// where that never came (the daemon restarted while it ran), at a
/// `SubagentStop` when only one subagent can be stopping.
fn subagents(job: &Job, events: &mut Vec<EventData>, memo: &mut Memo) {
    let mut open: Vec<String> = memo
        .get(MEMO_SUBAGENTS)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    let mut stops_due = memo
        .get(MEMO_STOPS_DUE)
        .and_then(Value::as_u64)
        .unwrap_or(0);
    events.retain(|e| match e {
        EventData::SubagentStarted(s) => {
            if !open.contains(&s.agent_id) {
                open.push(s.agent_id.clone());
            }
            true
        }
        EventData::SubagentEnded(s) => {
            let running = open.contains(&s.agent_id);
            open.retain(|id| *id != s.agent_id);
            stops_due += u64::from(running);
            running
        }
        _ => true,
    });
    if job.event.eq_ignore_ascii_case("SubagentStop") {
        if stops_due > 0 {
            stops_due -= 1;
        } else if open.len() == 1 {
            events.push(EventData::SubagentEnded(SubagentEnded {
                agent_id: open.remove(0),
                agent_type: None,
                background: None,
            }));
        }
    }
    let mut keep = |key: &str, v: Option<Value>| match v {
        Some(v) => {
            memo.insert(key.into(), v);
        }
        None => {
            memo.remove(key);
        }
    };
    keep(
        MEMO_SUBAGENTS,
        (!open.is_empty()).then(|| Value::from(open)),
    );
    keep(
        MEMO_STOPS_DUE,
        (stops_due > 0).then(|| Value::from(stops_due)),
    );
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
            // A subagent's tool calls and asks (with its `agent_id`) are
            // not a turn of the session's own.
            EventData::ToolStarted(ToolStarted { agent_id: None, .. })
            | EventData::ToolEnded(ToolEnded { agent_id: None, .. })
            | EventData::AttentionNeeded(AttentionNeeded { agent_id: None, .. })
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

    const SUB: &str = "3ddfe547-7f9e-4500-96bd-b16f5d3b8b87";
    const SUB_TWO: &str = "a15fbc7e-3531-4576-b86b-c276620a6081";

    #[test]
    fn a_subagent_sessions_start_is_its_callers_subagent_start() {
        // Droid 0.225.2: the subagent's own session, naming its caller.
        let mut j = job(
            "SessionStart",
            json!({"source": "startup", "calling_session_id": SESSION}),
        );
        let mut p: Value = serde_json::from_slice(&j.payload).unwrap();
        p["session_id"] = json!(SUB);
        p["transcript_path"] = json!(format!(
            "/home/ann/.factory/sessions/-home-ann-proj/{SUB}.jsonl"
        ));
        j.payload = p.to_string().into_bytes();
        let Mapped::Events(m) = Droid.map(&j).unwrap() else {
            panic!("ignored")
        };
        assert_eq!(m.session_id, SESSION);
        assert_eq!(m.subagent.as_deref(), Some(SUB));
        let (kind, data) = m.events[0].clone().into_parts();
        assert_eq!(
            (kind.as_str(), Value::Object(data)),
            ("subagent.started", json!({"agent_id": SUB}))
        );
        let files = claude_shaped::files(&Droid, &j);
        assert_eq!((files.transcript, files.read.is_none()), (None, true));
        // SubagentStop names no subagent: from the call alone, nothing.
        let stop = job(
            "SubagentStop",
            json!({"task_name": "Echo", "task_result": "Done.",
            "stop_hook_active": false}),
        );
        let Mapped::Events(m) = Droid.map(&stop).unwrap() else {
            panic!("ignored")
        };
        assert!(m.events.is_empty());
    }

    /// What `remember` makes of each call's events, one memo throughout.
    fn remembered(calls: Vec<(&str, Vec<EventData>)>) -> Vec<(String, Value)> {
        let mut memo = Memo::new();
        let mut out = Vec::new();
        for (event, mut events) in calls {
            let j = job(event, json!({}));
            Droid.remember(&j, &mut events, &mut memo);
            out.extend(
                events
                    .into_iter()
                    .map(|e| e.into_parts())
                    .map(|(k, d)| (k, d.get("agent_id").cloned().unwrap_or(Value::Null))),
            );
        }
        assert!(memo.is_empty(), "nothing left running: {memo:?}");
        out
    }

    fn started(id: &str) -> EventData {
        EventData::SubagentStarted(SubagentStarted {
            agent_id: id.into(),
            agent_type: None,
        })
    }

    fn ended(id: &str) -> EventData {
        EventData::SubagentEnded(SubagentEnded {
            agent_id: id.into(),
            agent_type: None,
            background: None,
        })
    }

    fn subagent_tool(id: &str) -> EventData {
        EventData::ToolStarted(ToolStarted {
            tool: "Execute".into(),
            agent_id: Some(id.into()),
            ..Default::default()
        })
    }

    #[test]
    fn each_subagent_ends_once_by_its_own_end_or_else_its_stop() {
        let kinds = |out: &[(String, Value)]| -> Vec<String> {
            out.iter()
                .map(|(k, a)| format!("{k} {}", a.as_str().unwrap_or("-")))
                .collect()
        };
        // As recorded: the subagent's own SessionEnd (folded in), then the
        // caller's SubagentStop, which adds nothing. Its tools open no turn.
        let out = remembered(vec![
            ("SessionStart", vec![started(SUB)]),
            ("PreToolUse", vec![subagent_tool(SUB)]),
            ("SessionEnd", vec![ended(SUB)]),
            ("SubagentStop", vec![]),
        ]);
        assert_eq!(
            kinds(&out),
            [
                format!("subagent.started {SUB}"),
                format!("tool.started {SUB}"),
                format!("subagent.ended {SUB}")
            ]
        );
        // Two side by side, the second ending first: each stop matches an end
        // already reported.
        let out = remembered(vec![
            ("SessionStart", vec![started(SUB)]),
            ("SessionStart", vec![started(SUB_TWO)]),
            ("SessionEnd", vec![ended(SUB_TWO)]),
            ("SubagentStop", vec![]),
            ("SessionEnd", vec![ended(SUB)]),
            ("SubagentStop", vec![]),
        ]);
        assert_eq!(
            kinds(&out)[2..],
            [
                format!("subagent.ended {SUB_TWO}"),
                format!("subagent.ended {SUB}")
            ]
        );
        // Its own end never came through (the daemon restarted while it ran):
        // the stop ends the one subagent running, and a late end is no second.
        let out = remembered(vec![
            ("SessionStart", vec![started(SUB)]),
            ("SubagentStop", vec![]),
            ("SessionEnd", vec![ended(SUB)]),
        ]);
        assert_eq!(kinds(&out)[1..], [format!("subagent.ended {SUB}")]);
    }

    #[test]
    fn a_stop_that_could_be_either_of_two_subagents_ends_neither() {
        let mut memo = Memo::new();
        for id in [SUB, SUB_TWO] {
            Droid.remember(
                &job("SessionStart", json!({})),
                &mut vec![started(id)],
                &mut memo,
            );
        }
        let mut events = Vec::new();
        Droid.remember(&job("SubagentStop", json!({})), &mut events, &mut memo);
        assert!(events.is_empty());
        assert_eq!(memo[MEMO_SUBAGENTS], json!([SUB, SUB_TWO]));
    }
}
