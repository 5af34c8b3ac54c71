//! Cursor (`cursor`): ADAPTERS.md's Cursor row, read against Cursor's hooks
//! reference (cursor.com/docs/hooks). No Cursor runs where this was written:
//! the payloads it is tested on are built from the documented shapes and say so
//! (`conformance/harness/cursor/`), and the row is still *recording pending*.
//!
//! Owns the mapping of Cursor's agent hooks (camelCase names, the common fields
//! `conversation_id`, `generation_id`, `model`, `cursor_version`,
//! `workspace_roots[]`, `transcript_path | null`) and our entries in the
//! person's `~/.cursor/hooks.json` (`hooks_file.rs`). The conversation is the
//! session, the generation (one per user message) the turn, the first workspace
//! root the session's folder. `afterFileEdit` becomes `files.changed`, its path
//! relative to the workspace (or the home). A `stop` may carry a verified
//! control message back as `followup_message`, which Cursor submits as the
//! next user message: control's `turn` rung.
//!
//! Must not print anything on any other hook: Cursor's observer hooks ignore
//! stdout, and a permission hook (`preToolUse`, `subagentStart`) reads what is
//! printed as its decision, where an empty answer fails open and anything
//! malformed may block. Must never answer a permission itself. Must not read
//! `user_email` (an account id is never an email), nor register the shell, MCP,
//! read-file or Tab hooks, which are permission gates or noise. No transcript
//! reader: Cursor documents where its transcript is, not what is in it.

mod hooks_file;

use harness::claude_shaped::{
    self, Call, Folder, NotMapped, Read, Row, Rule, Shaped, Table, Trigger,
};
use harness::install::{HookEvent, HookInstall};
use harness::payload::{ToolKeys, payload_object, str_of};
use harness::{Adapter, Job, MapError, Mapped, Memo, SessionFiles};
use protocol::*;
use serde_json::{Map, Value};

pub struct Cursor;

const NAME: &str = "cursor";

/// Where `prepare` puts the first of `workspace_roots`, for the table's folder.
const ROOT_KEY: &str = "_sessionpipe_workspace_root";

/// The session memo: a subagent's id by the key of its task (`task_key`).
const MEMO_SUBAGENTS: &str = "subagents";
/// The most subagents the memo holds at once.
const MAX_SUBAGENTS: usize = 64;

/// ADAPTERS.md's Cursor row. `session_id` (sessionStart, sessionEnd) is the
/// conversation's id again; the generation names the turn on every event that
/// carries it. Tool times are `duration` (ms), a tool's result `tool_output`
/// (a JSON string, kept as given).
static TABLE: Table = Table {
    harness: NAME,
    session_key: "conversation_id",
    tool: ToolKeys {
        tool: "tool_name",
        call_id: "tool_use_id",
        turn_id: "generation_id",
        agent_id: "agent_id",
        input: "tool_input",
        output: "tool_output",
        ms: "duration",
    },
    agent_keys: &["subagent_id"],
    folder: &[Folder::Payload(ROOT_KEY), Folder::Payload("cwd")],
    model_key: Some("model"),
    transcript_key: None,
    start_keys: &[],
    start_words: &[],
    end_words: &[
        ("completed", EndReason::Exit),
        ("window_close", EndReason::Exit),
        ("user_close", EndReason::Exit),
    ],
    folded_names: false,
    interruptions: false,
    timeout_s: 5,
    rows: &[
        Row::new(
            HookEvent::plain("sessionStart"),
            Rule::SessionStart,
            Read::Nothing,
        ),
        Row::new(
            HookEvent::plain("beforeSubmitPrompt"),
            Rule::Prompt,
            Read::Nothing,
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
        Row::new(
            HookEvent::plain("stop"),
            Rule::TurnEnd(TurnEndReason::Stop),
            Read::Nothing,
        ),
        Row::new(
            HookEvent::plain("sessionEnd"),
            Rule::SessionEnd,
            Read::Nothing,
        ),
    ],
};

/// The one event mapped beside the table: a file the agent edited.
const FILE_EDIT: &str = "afterFileEdit";

/// The key a subagent's task goes by when its `subagentStop` names no id
/// (Cursor's reference lists none there): `task-` and 16 hex of its sha256.
fn task_key(task: &str) -> String {
    format!(
        "task-{}",
        harness::digest::sha256_prefix(task.as_bytes(), 8)
    )
}

impl Adapter for Cursor {
    fn reports_file_changes(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        NAME
    }

    fn map(&self, job: &Job) -> Result<Mapped, MapError> {
        claude_shaped::map(self, job)
    }

    /// A subagent's end names the id its start had: a `subagentStop` without
    /// one is matched to the start of the same task in the session's memo.
    fn remember(&self, job: &Job, events: &mut Vec<EventData>, memo: &mut Memo) {
        let Ok(p) = payload_object(job) else { return };
        let task = str_of(&p, "task").map(|t| task_key(&t));
        for e in events.iter_mut() {
            match e {
                EventData::SubagentStarted(s) => {
                    if let Some(key) = &task {
                        let known = memo
                            .entry(MEMO_SUBAGENTS)
                            .or_insert_with(|| Value::Object(Map::new()));
                        if let Some(m) = known.as_object_mut() {
                            // Bounded: a subagent whose end never came is forgotten.
                            if m.len() >= MAX_SUBAGENTS
                                && let Some(oldest) = m.keys().next().cloned()
                            {
                                m.remove(&oldest);
                            }
                            m.insert(key.clone(), Value::String(s.agent_id.clone()));
                        }
                    }
                }
                EventData::SubagentEnded(s) => {
                    let Some(key) = &task else { continue };
                    let known = memo
                        .get_mut(MEMO_SUBAGENTS)
                        .and_then(Value::as_object_mut)
                        .and_then(|m| m.remove(key));
                    if let Some(Value::String(id)) = known
                        && s.agent_id == *key
                    {
                        s.agent_id = id;
                    }
                }
                _ => {}
            }
        }
    }

    fn hooks(&self) -> Option<&dyn HookInstall> {
        Some(self)
    }

    fn files(&self, job: &Job) -> SessionFiles {
        claude_shaped::files(self, job)
    }

    fn control(&self) -> Option<&dyn harness::control::ControlHooks> {
        Some(self)
    }
}

/// Cursor's `stop` takes `followup_message`, submitted as the next user
/// message of the conversation. Its permission hooks take decisions, which
/// sessionpipe never gives: a permission answer is refused as unsupported.
impl harness::control::ControlHooks for Cursor {
    fn turn_answer(&self, framed: &str) -> Option<String> {
        let mut out = serde_json::json!({ "followup_message": framed }).to_string();
        out.push('\n');
        Some(out)
    }
}

impl Shaped for Cursor {
    fn table(&self) -> &'static Table {
        &TABLE
    }

    /// The payload in the table's words: the first workspace root as the
    /// folder, a failure's `error_message` (or its `failure_type`) as `error`,
    /// `subagent_type` as `agent_type`, and a subagent's task key where its
    /// `subagentStop` names no id.
    fn prepare(
        &self,
        job: &Job,
        mut p: Map<String, Value>,
    ) -> Result<Map<String, Value>, NotMapped> {
        if let Some(root) = roots(&p).into_iter().next() {
            p.insert(ROOT_KEY.into(), Value::String(root));
        }
        if job.event == "postToolUseFailure" && str_of(&p, "error").is_none() {
            let why = str_of(&p, "error_message").or_else(|| str_of(&p, "failure_type"));
            if let Some(why) = why {
                p.insert("error".into(), Value::String(why));
            }
        }
        if let Some(t) = str_of(&p, "subagent_type") {
            p.entry("agent_type").or_insert(Value::String(t));
        }
        if job.event == "subagentStop"
            && str_of(&p, "subagent_id").is_none()
            && let Some(task) = str_of(&p, "task")
        {
            p.insert("subagent_id".into(), Value::String(task_key(&task)));
        }
        Ok(p)
    }

    /// A `stop` says how the loop ended: `aborted` is an interruption,
    /// `error` an error; `completed` (or none) the turn's end.
    fn adjust(&self, call: &Call<'_>, event: &mut EventData) -> Result<(), NotMapped> {
        if let EventData::TurnEnded(t) = event {
            t.reason = match str_of(call.payload, "status").as_deref() {
                Some("aborted") => TurnEndReason::Interrupt,
                Some("error") => TurnEndReason::Error,
                _ => TurnEndReason::Stop,
            };
        }
        Ok(())
    }

    /// `afterFileEdit` → `files.changed`, its path relative to the workspace.
    fn unlisted(&self, call: &Call<'_>) -> Result<Vec<EventData>, NotMapped> {
        if call.event != FILE_EDIT {
            return Err(NotMapped::Ignored(format!("{} is not mapped", call.event)));
        }
        let home = call.job.home().map(|h| h.to_string_lossy().into_owned());
        let file = str_of(call.payload, "file_path");
        let paths = protocol::changes::relative_paths(
            file.as_deref(),
            &roots(call.payload),
            home.as_deref(),
        );
        if paths.is_empty() {
            return Err(NotMapped::Ignored(
                "the edit names no file inside the workspace or the home".into(),
            ));
        }
        Ok(vec![EventData::FilesChanged(FilesChanged { paths })])
    }

    fn version(&self, job: &Job) -> Option<String> {
        payload_object(job)
            .ok()
            .and_then(|p| str_of(&p, "cursor_version"))
            .filter(|v| v.len() <= 64)
    }
}

/// The payload's `workspace_roots`, the non-empty strings of it.
fn roots(p: &Map<String, Value>) -> Vec<String> {
    p.get("workspace_roots")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::install::Host;
    use serde_json::json;
    use std::collections::BTreeMap;

    const CONV: &str = "0b9a5f3c-2d4e-4a61-9c7b-5e8f1a2b3c4d";
    const GEN: &str = "7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f";

    fn job(event: &str, extra: Value) -> Job {
        let mut p = json!({
            "conversation_id": CONV, "generation_id": GEN, "model": "claude-4.5-sonnet",
            "hook_event_name": event, "cursor_version": "2.1.0",
            "workspace_roots": ["/home/ann/src/app"], "user_email": "ann@example.com",
            "transcript_path": null,
        });
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        Job {
            harness: NAME.into(),
            event: event.into(),
            argv: vec![NAME.into(), event.into()],
            at_ns: 1_700_000_000_123_000_000,
            payload: p.to_string().into_bytes(),
            env: BTreeMap::from([("HOME".to_string(), "/home/ann".to_string())]),
            ..Default::default()
        }
    }

    fn mapped(j: &Job) -> Result<(Box<harness::Mapping>, Value), String> {
        match Cursor.map(j).unwrap() {
            Mapped::Events(m) => {
                assert_eq!(m.session_id, CONV);
                assert_eq!(m.events.len(), 1);
                let (kind, data) = m.events[0].clone().into_parts();
                Ok((m, json!({"type": kind, "data": data})))
            }
            Mapped::Ignored(why) => Err(why),
        }
    }

    fn only(event: &str, extra: Value) -> Value {
        mapped(&job(event, extra)).unwrap().1
    }

    #[test]
    fn the_session_is_the_conversation_and_the_turn_its_generation() {
        let (m, e) = mapped(&job(
            "sessionStart",
            json!({"session_id": CONV, "is_background_agent": false, "composer_mode": "agent"}),
        ))
        .unwrap();
        assert_eq!(
            e,
            json!({"type": "session.started", "data": {"source": "unknown"}})
        );
        assert_eq!(m.block.cwd.as_deref(), Some("~/src/app"));
        assert_eq!(m.block.model.as_deref(), Some("claude-4.5-sonnet"));
        assert_eq!(m.block.account_id, None, "an email is never an account id");
        assert_eq!(m.harness_version.as_deref(), Some("2.1.0"));
        assert_eq!(
            only(
                "beforeSubmitPrompt",
                json!({"prompt": "fix the bug", "attachments": []})
            )["data"],
            json!({"turn_id": GEN, "prompt_chars": 11})
        );
    }

    #[test]
    fn tools_succeed_and_fail_in_their_own_hooks() {
        let input = json!({"command": "npm test"});
        let started = only(
            "preToolUse",
            json!({"tool_name": "Shell", "tool_input": input, "tool_use_id": "abc123", "cwd": "/home/ann/src/app"}),
        );
        assert_eq!(
            started["data"],
            json!({"tool": "Shell", "call_id": "abc123", "turn_id": GEN, "input": input})
        );
        let ok = only(
            "postToolUse",
            json!({"tool_name": "Shell", "tool_input": input, "tool_use_id": "abc123",
                   "tool_output": "{\"exitCode\":0}", "duration": 5432}),
        );
        assert_eq!(
            (&ok["data"]["ok"], &ok["data"]["ms"], &ok["data"]["output"]),
            (&json!(true), &json!(5432), &json!("{\"exitCode\":0}"))
        );
        let failed = only(
            "postToolUseFailure",
            json!({"tool_name": "Shell", "tool_use_id": "abc123", "error_message": "Command timed out after 30s",
                   "failure_type": "timeout", "duration": 5000, "is_interrupt": false}),
        );
        assert_eq!(
            (&failed["data"]["ok"], &failed["data"]["error"]),
            (&json!(false), &json!("Command timed out after 30s"))
        );
        let bare = only(
            "postToolUseFailure",
            json!({"tool_name": "Read", "failure_type": "permission_denied"}),
        );
        assert_eq!(bare["data"]["error"], "permission_denied");
    }

    #[test]
    fn a_stop_says_how_the_loop_ended() {
        for (status, reason) in [
            ("completed", "stop"),
            ("aborted", "interrupt"),
            ("error", "error"),
        ] {
            let e = only("stop", json!({"status": status, "loop_count": 0}));
            assert_eq!(
                e["data"],
                json!({"turn_id": GEN, "reason": reason}),
                "{status}"
            );
        }
        for (why, reason) in [
            ("completed", "exit"),
            ("user_close", "exit"),
            ("window_close", "exit"),
            ("aborted", "other"),
        ] {
            let e = only(
                "sessionEnd",
                json!({"session_id": CONV, "reason": why, "duration_ms": 45000}),
            );
            assert_eq!(e["data"]["reason"], reason, "{why}");
        }
        assert_eq!(
            only(
                "preCompact",
                json!({"trigger": "manual", "context_usage_percent": 85})
            )["data"],
            json!({"trigger": "manual"})
        );
    }

    #[test]
    fn file_edits_are_relative_to_the_workspace() {
        let e = only(
            "afterFileEdit",
            json!({"file_path": "/home/ann/src/app/src/main.ts",
                   "edits": [{"old_string": "a", "new_string": "b"}]}),
        );
        assert_eq!(
            e,
            json!({"type": "files.changed", "data": {"paths": ["src/main.ts"]}})
        );
        let home = only("afterFileEdit", json!({"file_path": "/home/ann/.zshrc"}));
        assert_eq!(home["data"]["paths"], json!(["~/.zshrc"]));
        assert!(mapped(&job("afterFileEdit", json!({"file_path": "/etc/hosts"}))).is_err());
        assert!(mapped(&job("afterShellExecution", json!({"command": "ls"}))).is_err());
    }

    #[test]
    fn a_subagents_end_names_the_id_its_start_had() {
        let start = job(
            "subagentStart",
            json!({"subagent_id": "abc-123", "subagent_type": "explore",
                   "task": "Explore the auth flow", "parent_conversation_id": CONV}),
        );
        let stop = job(
            "subagentStop",
            json!({"subagent_type": "explore", "status": "completed", "task": "Explore the auth flow"}),
        );
        let mut memo = Memo::new();
        let run = |j: &Job, memo: &mut Memo| {
            let Mapped::Events(m) = Cursor.map(j).unwrap() else {
                panic!()
            };
            let mut events = m.events;
            Cursor.remember(j, &mut events, memo);
            Value::Object(events[0].clone().into_parts().1)
        };
        assert_eq!(
            run(&start, &mut memo),
            json!({"agent_id": "abc-123", "agent_type": "explore"})
        );
        assert_eq!(
            run(&stop, &mut memo),
            json!({"agent_id": "abc-123", "agent_type": "explore"})
        );
        // Without its start (a daemon that missed it) the end still names one id.
        let alone = run(&stop, &mut Memo::new());
        assert_eq!(alone["agent_id"], task_key("Explore the auth flow"));
    }

    #[test]
    fn the_stop_answer_is_a_followup_message() {
        let out = Cursor.turn_answer("Message via x: \"go\"").unwrap();
        assert!(out.ends_with('\n'));
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v, json!({"followup_message": "Message via x: \"go\""}));
        use harness::control::ControlHooks;
        assert_eq!(Cursor.permission_answer(true, None), None);
    }

    #[test]
    fn found_by_its_folder_or_its_cli() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().to_path_buf();
        let host = |path: &str| Host {
            home: home.clone(),
            vars: [("PATH".to_string(), path.to_string())].into(),
        };
        assert!(Cursor.targets(&host("")).is_empty());
        let bin = home.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("cursor-agent"), "").unwrap();
        assert_eq!(
            Cursor.targets(&host(bin.to_str().unwrap()))[0].path,
            home.join(".cursor/hooks.json")
        );
        std::fs::create_dir_all(home.join(".cursor")).unwrap();
        assert_eq!(
            Cursor.targets(&host(""))[0].path,
            home.join(".cursor/hooks.json")
        );
        assert!(!Cursor.targets(&host(""))[0].owned);
    }

    /// Every fixture of ours says it was built from the documented shape.
    #[test]
    fn the_fixtures_say_they_are_built_not_recorded() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../conformance/harness")
            .join(NAME);
        let mut n = 0;
        for f in std::fs::read_dir(dir).unwrap() {
            let doc: Value =
                serde_json::from_slice(&std::fs::read(f.unwrap().path()).unwrap()).unwrap();
            let how = doc["recorded"]["how"].as_str().unwrap();
            assert!(
                how.contains("documented shape") && how.contains("not recorded"),
                "{how}"
            );
            n += 1;
        }
        assert!(n >= 10, "{n} fixtures");
    }
}
