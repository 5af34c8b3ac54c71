//! GitHub Copilot CLI (`copilot-cli`): ADAPTERS.md's Copilot CLI row, as the
//! recorded runs of Copilot CLI 1.0.102 show it.
//!
//! Owns the mapping of Copilot's camelCase hook payloads (`sessionId`,
//! `timestamp` in epoch ms, `cwd`, `toolName`, `toolArgs`, `toolResult`,
//! `transcriptPath` on `agentStop` and `preCompact`), sessionpipe's own hooks
//! file `~/.copilot/hooks/sessionpipe.json` (`hooks_file.rs`), the session's
//! `events.jsonl` for tier 2 and facts (`transcript.rs`) and past sessions
//! (`backfill.rs`). Our entries are registered under the camelCase event names:
//! those are what give camelCase payloads (PascalCase names switch Copilot to
//! Claude-shaped snake_case ones, which this adapter does not read).
//!
//! **Where the recordings disagree with ADAPTERS.md, this follows the
//! recordings** (they are newer than the row):
//! - `permissionRequest` is not an attention. Copilot fires it before every tool
//!   call it gates, even under `--allow-all-tools`, before a tool it then runs
//!   without asking anyone; no entry is written for it, and a call that arrives
//!   anyway reports nothing. A person is really asked when a `notification` with
//!   `notification_type: permission_prompt` follows: that is the one
//!   `attention.needed`.
//! - No payload carries a turn id or a tool-call id (the transcript does): the
//!   events have none.
//! - Subagents (a `task` call's; ADAPTERS.md says only `subagent*`). Measured
//!   on 1.0.102: `subagentStart` / `subagentStop` carry the subagent as
//!   `agentId`, `agentType` (`agentName` too) and `parentAgentId`, and the
//!   session's `transcriptPath`; they are `subagent.started` / `.ended` in the
//!   session that transcript is named for (`…/session-state/<id>/events.jsonl`),
//!   not the one `sessionId` names: a subagent's subagent's start names
//!   neither the session nor its parent there. The subagent's own hooks
//!   (`userPromptSubmitted`, `userPromptTransformed`, `preToolUse`,
//!   `postToolUse`, `agentStop`) fire with its own id as `sessionId` (and
//!   `agentId`), and only the agent that started it as `parentAgentId` (for a
//!   subagent's subagent, that subagent): mapped alone they are a session of
//!   that id, so `subagentStart` names the subagent (`Mapping::subagent`) and
//!   the daemon puts its later calls under the session, as a subagent's
//!   (`harness::subagent::fold`: its tool calls with its `agent_id`, nothing of
//!   its prompt or stop, and control hands its `agentStop` nothing). Claude
//!   Code's and Codex's rows report subagents the same way. A subagent's
//!   `permissionRequest` and `notification` name the session as `sessionId`
//!   (the first with the subagent as `agentId`). In the session's
//!   `events.jsonl` the subagent's records are passed over (`transcript.rs`).
//! - `userPromptTransformed` is not registered. It fires after
//!   `userPromptSubmitted` with the same `prompt` and a `transformedPrompt`:
//!   the text as Copilot hands it to the model, its own context put in front
//!   (`<current_datetime>…</current_datetime>` on 1.0.102). It starts nothing
//!   the prompt did not already start, and its extra text is Copilot's, not the
//!   person's, so it would only repeat the turn's start with the wrong length.
//! - `errorOccurred` (not in the row) ends the turn with an error only when it
//!   says `recoverable: false`; a recoverable one is a retry Copilot makes.
//! - `events.jsonl` lags the hooks. Copilot queues its records and writes them
//!   once it has made none for 100 ms (`COPILOT_SESSIONFS_FLUSH_DEBOUNCE_MS`),
//!   and its hooks are records too: in `copilot -p` the file did not exist yet
//!   when `agentStop` and even `sessionEnd` fired (it came some 15 ms after the
//!   end), or held the ask without the reply. `agentStop` names no words, but
//!   Copilot writes each hook call down as it starts it (`hook.start`, with
//!   the call's payload): the Stop's turn is held until the file has that
//!   record of this `agentStop` (`StopWithout::Written`, by its `timestamp`),
//!   as Claude Code's Stop is held until its words are in.
//!
//! An `agentStop` may carry a verified control message back as
//! `{"decision":"block","reason":…}` (Claude Code's Stop answer): Copilot then
//! sends the model the reason as the next user message of the same run (its
//! hooks report it as a prompt, `userPromptSubmitted`, so it is a turn of its
//! own), and the next `agentStop` says `stop_hook_active: true`. That is
//! control's `turn` rung, measured on 1.0.102 in `-p`.
//!
//! Must not write any file of Copilot's but its own hooks file, and prints
//! nothing on any other hook: `permissionRequest` reads what is printed as a
//! decision, and sessionpipe never gives one.

mod backfill;
mod hooks_file;
mod transcript;

use harness::claude_shaped::{
    self, Call, Folder, NotMapped, Read, Row, Rule, Shaped, StopWithout, Table, Trigger,
};
use harness::install::{HookEvent, HookInstall, Host};
use harness::payload::{MAX_ERROR_CHARS, ToolKeys, cut_chars, hook_event, str_of};
use harness::transcript::TranscriptSource;
use harness::{Adapter, Job, MapError, Mapped, SessionFiles};
use protocol::*;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

pub struct CopilotCli;

const NAME: &str = "copilot-cli";

/// The hook events the table has rows for; `permissionRequest` and
/// `userPromptTransformed` fire too, and report nothing (no entry is written
/// for them).
static TABLE: Table = Table {
    harness: NAME,
    session_key: "sessionId",
    tool: ToolKeys {
        tool: "toolName",
        call_id: "toolCallId",
        turn_id: "turnId",
        agent_id: "agentId",
        input: "toolArgs",
        output: "toolResult",
        ms: "durationMs",
    },
    agent_keys: &["agentId"],
    folder: &[
        Folder::Payload("cwd"),
        Folder::Env("COPILOT_PROJECT_DIR"),
        Folder::HookCwd,
    ],
    model_key: None,
    transcript_key: Some("transcriptPath"),
    start_keys: &["source"],
    start_words: &[("new", StartSource::Startup)],
    end_words: &[("complete", EndReason::Exit)],
    folded_names: false,
    interruptions: false,
    timeout_s: 30,
    rows: &[
        Row::new(
            HookEvent::plain("sessionStart"),
            Rule::SessionStart,
            Read::AskedBefore,
        ),
        Row::new(
            HookEvent::plain("userPromptSubmitted"),
            Rule::Prompt,
            Read::Prompt,
        ),
        Row::new(
            HookEvent::plain("preToolUse"),
            Rule::ToolStart,
            Read::Nothing,
        ),
        Row::new(
            HookEvent::plain("postToolUse"),
            Rule::ToolEnd { ok: true },
            Read::Nothing,
        ),
        Row::new(
            HookEvent::plain("postToolUseFailure"),
            Rule::ToolEnd { ok: false },
            Read::Nothing,
        ),
        Row::new(
            HookEvent::plain("notification"),
            Rule::Notification,
            Read::Nothing,
        ),
        Row::new(
            HookEvent::plain("agentStop"),
            Rule::TurnEnd(TurnEndReason::Stop),
            Read::StopWords {
                otherwise: StopWithout::Written,
            },
        ),
        Row::new(
            HookEvent::plain("errorOccurred"),
            Rule::TurnEnd(TurnEndReason::Error),
            Read::AsItStands,
        ),
        Row::new(
            HookEvent::plain("subagentStart"),
            Rule::SubagentStart,
            Read::Nothing,
        ),
        Row::new(
            HookEvent::plain("subagentStop"),
            Rule::SubagentStop,
            Read::Nothing,
        ),
        Row::new(
            HookEvent::plain("preCompact"),
            Rule::Compact(Trigger::FromPayload),
            Read::Nothing,
        ),
        Row::new(HookEvent::plain("sessionEnd"), Rule::SessionEnd, Read::All),
    ],
};

/// `agentStop` takes Claude Code's Stop answer (`decision: block`, the message
/// as `reason`). Its `permissionRequest` takes decisions, which sessionpipe
/// never gives: a permission answer is refused as unsupported.
impl harness::control::ControlHooks for CopilotCli {
    fn turn_answer(&self, framed: &str) -> Option<String> {
        Some(harness::control::stop_block(framed))
    }
}

impl Adapter for CopilotCli {
    fn name(&self) -> &'static str {
        NAME
    }

    fn map(&self, job: &Job) -> Result<Mapped, MapError> {
        claude_shaped::map(self, job)
    }

    fn hooks(&self) -> Option<&dyn HookInstall> {
        Some(self)
    }

    fn files(&self, job: &Job) -> SessionFiles {
        claude_shaped::files(self, job)
    }

    fn transcript(&self) -> Option<&dyn TranscriptSource> {
        Some(&transcript::CopilotTranscript)
    }

    fn control(&self) -> Option<&dyn harness::control::ControlHooks> {
        Some(self)
    }

    /// The model and the branch from the `session.start` record of the
    /// session's `events.jsonl`, the title from its first ask.
    fn facts(&self, _job: &Job, files: &SessionFiles) -> SessionBlock {
        files
            .transcript
            .as_deref()
            .map(transcript::facts)
            .unwrap_or_default()
    }

    fn backfill(&self, host: &Host, since_ms: i64) -> Vec<harness::backfill::Backfilled> {
        backfill::sessions(&copilot_home(host), &host.home, since_ms)
    }
}

impl Shaped for CopilotCli {
    fn table(&self) -> &'static Table {
        &TABLE
    }

    /// A subagent's start and stop are the session's, under the id its
    /// transcript is named for.
    fn prepare(
        &self,
        job: &Job,
        mut p: Map<String, Value>,
    ) -> Result<Map<String, Value>, NotMapped> {
        let event = hook_event(job, &p);
        if matches!(event.as_str(), "subagentStart" | "subagentStop")
            && let Some(session) = transcript_session(&p)
        {
            p.insert("sessionId".into(), Value::String(session));
        }
        Ok(p)
    }

    /// The subagent a `subagentStart` starts: its own calls name it as their
    /// `sessionId` (and as `agentId`), and the daemon puts them under the
    /// session (`Mapping::subagent`).
    fn subagent(&self, call: &Call<'_>) -> Option<String> {
        (call.event == "subagentStart")
            .then(|| str_of(call.payload, "agentId"))
            .flatten()
    }

    /// A subagent's own calls (they carry `agentId`) read nothing: the only
    /// transcript they name, on `agentStop`, is the session's.
    fn own_call(&self, job: &Job, p: &Map<String, Value>) -> bool {
        let event = hook_event(job, p);
        matches!(event.as_str(), "subagentStart" | "subagentStop") || str_of(p, "agentId").is_none()
    }

    fn adjust(&self, call: &Call<'_>, event: &mut EventData) -> Result<(), NotMapped> {
        let agent_type =
            || str_of(call.payload, "agentType").or_else(|| str_of(call.payload, "agentName"));
        match event {
            EventData::SubagentStarted(s) => s.agent_type = agent_type(),
            EventData::SubagentEnded(s) => s.agent_type = agent_type(),
            // A result Copilot marks as anything but a success is a failed call
            // (a non-zero shell exit is still a success: the model reads it).
            EventData::ToolEnded(t) if t.ok => {
                let result = call.payload.get("toolResult");
                let kind = result
                    .and_then(|r| r.get("resultType"))
                    .and_then(Value::as_str);
                if let Some(kind) = kind.filter(|k| *k != "success") {
                    t.ok = false;
                    let text = result
                        .and_then(|r| r.get("textResultForLlm"))
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .unwrap_or_else(|| kind.to_string());
                    t.error = Some(cut_chars(&text, MAX_ERROR_CHARS));
                }
            }
            EventData::TurnEnded(t) if call.event == "errorOccurred" => {
                if call.payload.get("recoverable") != Some(&Value::Bool(false)) {
                    return Err(NotMapped::Ignored(
                        "a recoverable error: Copilot retries the call".into(),
                    ));
                }
                t.error = str_of(call.payload, "errorContext")
                    .or_else(|| error_message(call.payload))
                    .map(|e| cut_chars(&e, 200));
            }
            _ => {}
        }
        Ok(())
    }

    fn unlisted(&self, call: &Call<'_>) -> Result<Vec<EventData>, NotMapped> {
        Err(NotMapped::Ignored(match call.event {
            "permissionRequest" => "Copilot asks permissionRequest before every gated tool, \
                 asked or not (even under --allow-all-tools): a person is asked only when \
                 a permission_prompt notification follows"
                .into(),
            "userPromptTransformed" => "the prompt as Copilot passes it on: its turn started \
                 at userPromptSubmitted"
                .into(),
            other => format!("{other} is not mapped"),
        }))
    }

    fn version(&self, job: &Job) -> Option<String> {
        job.env("COPILOT_CLI_BINARY_VERSION")
            .filter(|v| !v.is_empty() && v.len() <= 64)
            .map(str::to_string)
    }

    /// `transcriptPath` where the call names it, else the session's
    /// `events.jsonl` under the home the hook ran in.
    fn transcript(&self, job: &Job, p: &Map<String, Value>) -> Option<PathBuf> {
        if let Some(named) = str_of(p, "transcriptPath") {
            return Some(PathBuf::from(named));
        }
        let id = str_of(p, "sessionId").filter(|id| safe_name(id))?;
        let home = job.home()?;
        Some(
            state_dir(Path::new(&home), job.env("COPILOT_HOME"))
                .join(id)
                .join("events.jsonl"),
        )
    }

    /// The start's own `timestamp` (epoch ms), else the hook's clock.
    fn asked_before(&self, job: &Job, p: &Map<String, Value>) -> i64 {
        p.get("timestamp")
            .and_then(Value::as_i64)
            .unwrap_or_else(|| job.at_ms())
    }

    /// `agentStop`'s `timestamp`: its `hook.start` record in `events.jsonl`
    /// carries the same payload (`transcript.rs`).
    fn stop_written_at(&self, _job: &Job, p: &Map<String, Value>) -> Option<i64> {
        p.get("timestamp").and_then(Value::as_i64)
    }
}

/// The session a `…/session-state/<id>/events.jsonl` transcript belongs to:
/// the session a subagent works for, however deep (a nested subagent's
/// `subagentStart` names neither it nor its parent as `sessionId`).
fn transcript_session(p: &Map<String, Value>) -> Option<String> {
    let path = str_of(p, "transcriptPath")?;
    let path = Path::new(&path);
    if path.file_name()? != "events.jsonl" {
        return None;
    }
    let dir = path.parent()?;
    if dir.parent()?.file_name()? != "session-state" {
        return None;
    }
    let id = dir.file_name()?.to_str()?;
    safe_name(id).then(|| id.to_string())
}

/// `error.message` of an `errorOccurred`.
fn error_message(p: &Map<String, Value>) -> Option<String> {
    p.get("error")?
        .get("message")?
        .as_str()
        .map(|m| m.trim_matches('"').to_string())
}

/// An id that is one plain path component.
fn safe_name(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Copilot's own folder: `$COPILOT_HOME` when set, else `~/.copilot`.
fn copilot_dir(home: &Path, copilot_home: Option<&str>) -> PathBuf {
    copilot_home
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| home.join(".copilot"))
}

/// Where Copilot keeps one folder per session.
fn state_dir(home: &Path, copilot_home: Option<&str>) -> PathBuf {
    copilot_dir(home, copilot_home).join("session-state")
}

pub(super) fn copilot_home(host: &Host) -> PathBuf {
    copilot_dir(&host.home, host.var("COPILOT_HOME"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::Mapping;
    use serde_json::json;
    use std::collections::BTreeMap;

    const SESSION: &str = "3b86adbb-8663-43ff-a239-ef79d1db838e";

    fn job(event: &str, payload: Value) -> Job {
        Job {
            harness: NAME.into(),
            event: event.into(),
            argv: vec![NAME.into(), event.into()],
            at_ns: 1_796_138_449_500_000_000,
            cwd: "/home/ann/proj".into(),
            payload: payload.to_string().into_bytes(),
            env: BTreeMap::from([
                ("HOME".to_string(), "/home/ann".to_string()),
                (
                    "COPILOT_CLI_BINARY_VERSION".to_string(),
                    "1.0.102".to_string(),
                ),
            ]),
            ..Default::default()
        }
    }

    fn base(extra: Value) -> Value {
        let mut p = json!({"sessionId": SESSION, "timestamp": 1_796_138_449_482_i64,
            "cwd": "/home/ann/proj"});
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        p
    }

    fn outcome(event: &str, extra: Value) -> Result<Value, String> {
        match CopilotCli.map(&job(event, base(extra))).unwrap() {
            Mapped::Events(m) => {
                assert_eq!(m.session_id, SESSION);
                assert_eq!(m.block.cwd.as_deref(), Some("~/proj"));
                assert_eq!(m.harness_version.as_deref(), Some("1.0.102"));
                assert_eq!(m.events.len(), 1);
                let (kind, data) = m.events[0].clone().into_parts();
                Ok(json!({"type": kind, "data": data}))
            }
            Mapped::Ignored(why) => Err(why),
        }
    }

    #[test]
    fn a_tool_call_turn_maps_in_order() {
        let start = outcome(
            "sessionStart",
            json!({"source": "new", "initialPrompt": "hi"}),
        );
        assert_eq!(start.unwrap()["data"], json!({"source": "startup"}));
        let prompt = outcome("userPromptSubmitted", json!({"prompt": "run echo hello"}));
        assert_eq!(prompt.unwrap()["data"], json!({"prompt_chars": 14}));
        let args = json!({"command": "echo hello", "description": "Print hello"});
        let pre = outcome("preToolUse", json!({"toolName": "bash", "toolArgs": args}));
        assert_eq!(pre.unwrap()["data"], json!({"tool": "bash", "input": args}));
        let result = json!({"resultType": "success", "textResultForLlm": "hello\n"});
        let post = outcome(
            "postToolUse",
            json!({"toolName": "bash", "toolArgs": args, "toolResult": result}),
        )
        .unwrap();
        assert_eq!(
            post["data"],
            json!({"tool": "bash", "ok": true, "input": args, "output": result})
        );
        let stop = outcome(
            "agentStop",
            json!({"transcriptPath": "/t/events.jsonl", "stopReason": "end_turn"}),
        );
        assert_eq!(stop.unwrap()["data"], json!({"reason": "stop"}));
        let end = outcome("sessionEnd", json!({"reason": "complete"}));
        assert_eq!(end.unwrap()["data"], json!({"reason": "exit"}));
        let err = outcome("sessionEnd", json!({"reason": "error"}));
        assert_eq!(err.unwrap()["data"], json!({"reason": "other"}));
    }

    #[test]
    fn a_permission_request_alone_asks_nobody_its_notification_does() {
        let why = outcome(
            "permissionRequest",
            json!({"hookName": "permissionRequest", "toolName": "bash",
                "toolInput": {"command": "echo hello"}, "permissionSuggestions": []}),
        )
        .unwrap_err();
        assert!(why.contains("--allow-all-tools"), "{why}");
        let asked = outcome(
            "notification",
            json!({"message": "Run command: touch x", "title": "Permission needed",
                "hook_event_name": "Notification", "notification_type": "permission_prompt"}),
        )
        .unwrap();
        assert_eq!(asked["type"], "attention.needed");
        assert_eq!(
            asked["data"],
            json!({"attention_id": "notif-1796138449500", "kind": "permission",
                "message": "Run command: touch x"})
        );
        assert!(outcome("userPromptTransformed", json!({"prompt": "x"})).is_err());
        assert!(TABLE.row("permissionRequest").is_none());
    }

    #[test]
    fn failures_errors_and_compactions() {
        let failed = outcome(
            "postToolUse",
            json!({"toolName": "view", "toolArgs": {"path": "/nope"},
                "toolResult": {"resultType": "failure", "textResultForLlm": "Path does not exist"}}),
        )
        .unwrap();
        assert_eq!(failed["data"]["ok"], false);
        assert_eq!(failed["data"]["error"], "Path does not exist");
        let retry = json!({"errorContext": "model_call", "recoverable": true,
            "error": {"message": "\"refused\"", "name": "Error"}});
        assert!(outcome("errorOccurred", retry).is_err());
        let fatal = json!({"errorContext": "model_call", "recoverable": false,
            "error": {"message": "\"refused\"", "name": "Error"}});
        assert_eq!(
            outcome("errorOccurred", fatal).unwrap()["data"],
            json!({"reason": "error", "error": "model_call"})
        );
        let compact = outcome(
            "preCompact",
            json!({"transcriptPath": "/t", "trigger": "manual", "customInstructions": ""}),
        );
        assert_eq!(compact.unwrap()["data"], json!({"trigger": "manual"}));
    }

    #[test]
    fn the_transcript_is_named_or_found_under_the_home() {
        let named = claude_shaped::files(
            &CopilotCli,
            &job(
                "agentStop",
                base(json!({"transcriptPath": "/x/events.jsonl"})),
            ),
        );
        assert_eq!(named.transcript, Some(PathBuf::from("/x/events.jsonl")));
        assert!(named.read.is_some());
        let found = claude_shaped::files(&CopilotCli, &job("sessionStart", base(json!({}))));
        assert_eq!(
            found.transcript,
            Some(PathBuf::from(format!(
                "/home/ann/.copilot/session-state/{SESSION}/events.jsonl"
            )))
        );
        assert_eq!(found.folder, Some(PathBuf::from("/home/ann/proj")));
    }

    #[test]
    fn the_stop_answer_is_a_block_with_the_message_as_reason() {
        use harness::control::ControlHooks;
        let out = CopilotCli.turn_answer("Message via x: \"go\"").unwrap();
        assert!(out.ends_with('\n'));
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            v,
            json!({"decision": "block", "reason": "Message via x: \"go\""})
        );
        assert_eq!(CopilotCli.permission_answer(true, None), None);
        assert!(CopilotCli.control().is_some());
    }

    const CHILD: &str = "c92694df-c967-4f62-9622-1556ebc78a56";
    const GRANDCHILD: &str = "2e98a37c-33c9-465f-adce-4a287b0d7769";

    /// A call as Copilot 1.0.102 made it (payloads of a recorded run).
    fn mapped(event: &str, payload: Value) -> Result<Mapping, String> {
        match CopilotCli.map(&job(event, payload)).unwrap() {
            Mapped::Events(m) => Ok(*m),
            Mapped::Ignored(why) => Err(why),
        }
    }

    fn transcript() -> String {
        format!("/home/ann/.copilot/session-state/{SESSION}/events.jsonl")
    }

    #[test]
    fn a_subagents_start_and_stop_are_the_sessions_named_by_its_transcript() {
        let start = mapped(
            "subagentStart",
            json!({"sessionId": SESSION, "timestamp": 1_796_524_679_499_i64, "cwd": "/home/ann/proj",
                "transcriptPath": transcript(), "agentName": "task", "agentId": CHILD,
                "agentType": "task", "parentAgentId": SESSION}),
        )
        .unwrap();
        assert_eq!(start.session_id, SESSION);
        assert_eq!(start.subagent.as_deref(), Some(CHILD));
        let (kind, data) = start.events[0].clone().into_parts();
        assert_eq!(kind, "subagent.started");
        assert_eq!(
            Value::Object(data),
            json!({"agent_id": CHILD, "agent_type": "task"})
        );
        let stop = mapped(
            "subagentStop",
            json!({"sessionId": SESSION, "transcriptPath": transcript(), "agentId": CHILD,
                "agentType": "task", "agentName": "task", "response": "Subagent done.",
                "stopReason": "end_turn", "stop_hook_active": false, "parentAgentId": SESSION}),
        )
        .unwrap();
        assert_eq!((stop.session_id.as_str(), stop.subagent), (SESSION, None));
        let (kind, data) = stop.events[0].clone().into_parts();
        assert_eq!(kind, "subagent.ended");
        assert_eq!(
            Value::Object(data),
            json!({"agent_id": CHILD, "agent_type": "task"})
        );
        // A subagent's subagent: its start names neither the session nor its
        // parent as `sessionId`, only the session's transcript.
        let nested = mapped(
            "subagentStart",
            json!({"sessionId": "01934790-15cd-40a4-8ab8-ad7ea08627cf", "transcriptPath": transcript(),
                "agentName": "general-purpose", "agentId": GRANDCHILD,
                "agentType": "general-purpose", "parentAgentId": CHILD}),
        )
        .unwrap();
        assert_eq!(nested.session_id, SESSION);
        assert_eq!(nested.subagent.as_deref(), Some(GRANDCHILD));
        assert!(TABLE.row("subagentStart").is_some() && TABLE.row("subagentStop").is_some());
    }

    #[test]
    fn a_subagents_own_calls_are_its_own_ids_and_read_nothing() {
        let own = |extra: Value| {
            let mut p = json!({"sessionId": CHILD, "timestamp": 1_796_524_680_054_i64,
                "cwd": "/home/ann/proj", "agentId": CHILD, "agentType": "task",
                "parentAgentId": SESSION});
            p.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            p
        };
        // Alone, a call under the subagent's id; the daemon puts it under the
        // session its `subagentStart` was reported in.
        let args = json!({"command": "echo from-subagent", "description": "Print from subagent"});
        let pre = mapped(
            "preToolUse",
            own(json!({"toolName": "bash", "toolArgs": args})),
        )
        .unwrap();
        assert_eq!((pre.session_id.as_str(), pre.subagent), (CHILD, None));
        let (kind, data) = pre.events[0].clone().into_parts();
        assert_eq!(kind, "tool.started");
        assert_eq!(
            Value::Object(data),
            json!({"tool": "bash", "agent_id": CHILD, "input": args})
        );
        let prompt = mapped("userPromptSubmitted", own(json!({"prompt": "Run echo."}))).unwrap();
        assert_eq!(prompt.events[0].kind(), "turn.started");
        // None of them reads the session's transcript, which is the only one
        // they name.
        let files = claude_shaped::files(
            &CopilotCli,
            &job(
                "agentStop",
                own(json!({"transcriptPath": transcript(), "stopReason": "end_turn"})),
            ),
        );
        assert_eq!((files.transcript, files.read.is_none()), (None, true));
        let files = claude_shaped::files(
            &CopilotCli,
            &job("preToolUse", own(json!({"toolName": "bash"}))),
        );
        assert_eq!(files.transcript, None);
        // The session's own `permissionRequest` about the subagent's call.
        let asked = mapped(
            "permissionRequest",
            json!({"hookName": "permissionRequest", "sessionId": SESSION, "toolName": "bash",
                "toolInput": {"command": "echo"}, "agentId": CHILD, "parentAgentId": SESSION}),
        );
        assert!(asked.is_err());
    }
}
