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
//! - `subagentStart` / `subagentStop` are not registered: no recorded payload
//!   says where the subagent's id is (its own hooks carry it as `sessionId`).
//! - `errorOccurred` (not in the row) ends the turn with an error only when it
//!   says `recoverable: false`; a recoverable one is a retry Copilot makes.
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
use harness::payload::{MAX_ERROR_CHARS, ToolKeys, cut_chars, str_of};
use harness::transcript::TranscriptSource;
use harness::{Adapter, Job, MapError, Mapped, SessionFiles};
use protocol::*;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

pub struct CopilotCli;

const NAME: &str = "copilot-cli";

/// The hook events the table has rows for; `permissionRequest` and
/// `userPromptTransformed` fire too, and report nothing.
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
                otherwise: StopWithout::All,
            },
        ),
        Row::new(
            HookEvent::plain("errorOccurred"),
            Rule::TurnEnd(TurnEndReason::Error),
            Read::AsItStands,
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

    fn adjust(&self, call: &Call<'_>, event: &mut EventData) -> Result<(), NotMapped> {
        match event {
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
}
