//! Claude Code (`claude-code`): ADAPTERS.md's Claude Code row.
//!
//! Hooks live in `settings.json` of every config dir; every payload carries
//! `session_id` (a UUID), `cwd`, `transcript_path` and most carry `prompt_id`.
//! Two other harnesses run the hooks in `~/.claude/settings.json` too and hand
//! them payloads that are not Claude Code's: Grok Build (camelCase twins,
//! `hookEventName` + `workspaceRoot`) and Devin (no `transcript_path`, a slug for a
//! session id). Both report nothing here; their own adapters report them.

mod backfill;
mod facts;
mod frames;
mod limits;
mod status_line;
mod transcript;

pub use status_line::ENTRY as STATUS_LINE_ENTRY;

use harness::Job;
use harness::install::{
    ClaudeHooks, HookEvent, HookInstall, HooksLayout, Host, OptionalTarget, Target,
};
use harness::payload::{
    CLAUDE_TOOL_KEYS, MAX_MESSAGE_CHARS, char_count, cwd_for, error_text, is_uuid, one_line,
    payload_object, session_id, str_of, tool_ended, tool_message, tool_started,
    version_from_ai_agent,
};
use harness::transcript::{ReadPlan, TranscriptSource, Want};
use harness::{Adapter, MapError, Mapped, Mapping, Memo, SessionFiles};
use protocol::*;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::path::PathBuf;

pub struct ClaudeCode;

const NAME: &str = "claude-code";

/// The wrappers Claude Code puts around prompts it injects itself. A closed list,
/// narrower than the transcript reader's, so that a person's own pasted markup is
/// never taken for an injection (ADAPTERS.md, Quirks).
const INJECTED_TAGS: &[&str] = &[
    "task-notification",
    "cross-session-message",
    "system-reminder",
    "local-command-stdout",
];

impl Adapter for ClaudeCode {
    fn name(&self) -> &'static str {
        NAME
    }

    fn map(&self, job: &Job) -> Result<Mapped, MapError> {
        let p = payload_object(job)?;
        if p.contains_key("hookEventName") && p.contains_key("workspaceRoot") {
            return Ok(Mapped::Ignored(
                "a Grok Build payload in Claude Code's hooks (grok-build reports it)".into(),
            ));
        }
        let sid = str_of(&p, "session_id").unwrap_or_default();
        if !p.contains_key("transcript_path") && !is_uuid(&sid) {
            return Ok(Mapped::Ignored(
                "a Devin payload in Claude Code's hooks (devin reports it)".into(),
            ));
        }
        let session_id = session_id(&p, "session_id")?;
        let event = harness::payload::hook_event(job, &p);
        let events = if event == limits::EVENT {
            let config = facts::config_dir(job, &self.files(job));
            let account = config.and_then(|c| facts::account_id(job.home().as_deref(), &c));
            match limits::observed(&p, account) {
                Some(l) => vec![EventData::LimitsObserved(l)],
                None => return Ok(Mapped::Ignored("a status line without limits".into())),
            }
        } else {
            match map_event(&event, &p, job)? {
                Some(events) => events,
                None => return Ok(Mapped::Ignored(format!("{event} is not mapped"))),
            }
        };
        Ok(Mapped::Events(Box::new(Mapping {
            session_id,
            block: session_facts(job, &p),
            harness_version: version_from_ai_agent(job, NAME),
            events,
        })))
    }

    /// One compaction is one event (`common::one_compaction`). Claude Code fires
    /// hooks between the two (the compaction's own SubagentStop, a SessionStart
    /// with source `compact`), measured on 2.1.332.
    fn remember(&self, job: &Job, events: &mut Vec<EventData>, memo: &mut Memo) {
        harness::payload::one_compaction(&job.event, events, memo);
    }

    fn hooks(&self) -> Option<&dyn HookInstall> {
        Some(self)
    }

    fn files(&self, job: &Job) -> SessionFiles {
        let Ok(p) = payload_object(job) else {
            return SessionFiles::default();
        };
        let plan = |want, after, hold, interruption| {
            Some(ReadPlan {
                want,
                after,
                hold,
                interruption,
            })
        };
        let read = match job.event.as_str() {
            "UserPromptSubmit" => match str_of(&p, "prompt_id") {
                Some(id) => plan(Want::ClosedBefore(id), false, false, true),
                None => plan(Want::Closed, false, false, true),
            },
            "PreCompact" | "SessionStart" => plan(Want::Closed, false, false, true),
            "Stop" => match str_of(&p, "last_assistant_message") {
                Some(words) => plan(Want::EndedWith(words), true, true, false),
                // Ended on a tool call or a thinking block: read once, as it stands.
                None => plan(Want::All, true, false, false),
            },
            "StopFailure" => plan(Want::All, true, false, false),
            "SessionEnd" => plan(Want::All, false, false, false),
            _ => None,
        };
        SessionFiles {
            folder: str_of(&p, "cwd")
                .or_else(|| job.env("CLAUDE_PROJECT_DIR").map(str::to_string))
                .map(PathBuf::from),
            transcript: str_of(&p, "transcript_path").map(PathBuf::from),
            read,
        }
    }

    fn transcript(&self) -> Option<&dyn TranscriptSource> {
        Some(&transcript::ClaudeTranscript)
    }

    fn facts(&self, job: &Job, files: &SessionFiles) -> SessionBlock {
        facts::facts(job, files)
    }

    fn backfill(&self, host: &Host, since_ms: i64) -> Vec<harness::backfill::Backfilled> {
        backfill::sessions(&config_dirs(host), &host.home, since_ms)
    }
}

/// What stdin and the hook's environment say of the session.
fn session_facts(job: &Job, p: &Map<String, Value>) -> SessionBlock {
    let folder = str_of(p, "cwd")
        .or_else(|| job.env("CLAUDE_PROJECT_DIR").map(str::to_string))
        .unwrap_or_else(|| job.cwd.clone());
    let url = job
        .env("CLAUDE_CODE_HOST_SESSION_ID")
        .map(|id| format!("claude://code/continue/{id}"));
    let attended = if job.env("CLAUDE_CODE_SESSION_ATTENDED") == Some("1")
        || job.env("SESSIONPIPE_CONTROL_JOB").is_some()
        || url.is_some()
    {
        Some(true)
    } else if job.env("CLAUDE_CODE_SESSION_ATTENDED") == Some("0") {
        Some(false)
    } else {
        None
    };
    SessionBlock {
        cwd: (!folder.is_empty()).then(|| cwd_for(job, &folder)),
        model: str_of(p, "model"),
        url,
        attended,
        ..Default::default()
    }
}

fn map_event(
    event: &str,
    p: &Map<String, Value>,
    job: &Job,
) -> Result<Option<Vec<EventData>>, MapError> {
    let turn_id = || str_of(p, "prompt_id");
    let agent_id = || str_of(p, "agent_id");
    let tool = || str_of(p, "tool_name").unwrap_or_else(|| "unknown".to_string());
    let one = |e| Ok(Some(vec![e]));
    match event {
        "SessionStart" => {
            let word = str_of(p, "source").or_else(|| str_of(p, "trigger"));
            one(EventData::SessionStarted(SessionStarted {
                source: StartSource::from_word(word.as_deref().unwrap_or("")),
            }))
        }
        "UserPromptSubmit" => {
            let prompt = p.get("prompt").and_then(Value::as_str);
            one(EventData::TurnStarted(TurnStarted {
                turn_id: turn_id(),
                prompt_chars: prompt.map(char_count),
                // Forwarded as is when the payload has the key (none recorded yet).
                submitted_by: p.get("source").and_then(Value::as_str).map(str::to_string),
                injected: prompt.filter(|t| is_injected(t)).map(|_| true),
            }))
        }
        "PreToolUse" => one(EventData::ToolStarted(tool_started(p, &CLAUDE_TOOL_KEYS))),
        "PostToolUse" | "PostToolUseFailure" => {
            let ok = event == "PostToolUse";
            let error = if ok { None } else { error_text(p.get("error")) };
            one(EventData::ToolEnded(tool_ended(
                p,
                &CLAUDE_TOOL_KEYS,
                ok,
                error,
            )))
        }
        "PermissionRequest" => {
            let tool = tool();
            let input = p.get("tool_input");
            one(EventData::AttentionNeeded(AttentionNeeded {
                attention_id: permission_attention_id(
                    &str_of(p, "prompt_id").unwrap_or_default(),
                    &tool,
                    input.unwrap_or(&Value::Null),
                ),
                kind: AttentionKind::Permission,
                message: Some(tool_message(&tool, input)),
                tool: Some(tool),
                agent_id: agent_id(),
            }))
        }
        "Notification" => {
            let kind = match str_of(p, "notification_type").as_deref() {
                Some("permission_prompt") => AttentionKind::Permission,
                Some("idle_prompt") => AttentionKind::Idle,
                Some("elicitation_dialog") => AttentionKind::Elicitation,
                _ => AttentionKind::Question,
            };
            one(EventData::AttentionNeeded(AttentionNeeded {
                attention_id: format!("notif-{}", job.at_ms()),
                kind,
                tool: None,
                message: str_of(p, "message").map(|m| one_line(&m, MAX_MESSAGE_CHARS)),
                agent_id: agent_id(),
            }))
        }
        "Stop" => {
            let mut ended = TurnEnded::new(turn_id(), TurnEndReason::Stop);
            ended.background = background(p, None);
            one(EventData::TurnEnded(ended))
        }
        "StopFailure" => {
            let mut ended = TurnEnded::new(turn_id(), TurnEndReason::Error);
            ended.error = harness::payload::turn_error(p.get("error"));
            one(EventData::TurnEnded(ended))
        }
        "SubagentStart" | "SubagentStop" => {
            let Some(agent) = agent_id() else {
                return Err("a subagent hook without agent_id".into());
            };
            let agent_type = str_of(p, "agent_type");
            one(if event == "SubagentStart" {
                EventData::SubagentStarted(SubagentStarted {
                    agent_id: agent,
                    agent_type,
                })
            } else {
                // Claude Code still lists the stopping subagent as running.
                let background = background(p, Some(&agent));
                EventData::SubagentEnded(SubagentEnded {
                    agent_id: agent,
                    agent_type,
                    background,
                })
            })
        }
        "PreCompact" | "PostCompact" => {
            let trigger = match str_of(p, "trigger").as_deref() {
                Some("manual") => CompactTrigger::Manual,
                _ => CompactTrigger::Auto,
            };
            one(EventData::ContextCompacted(ContextCompacted { trigger }))
        }
        "SessionEnd" => {
            let reason = EndReason::from_word(&str_of(p, "reason").unwrap_or_default());
            one(EventData::SessionEnded(SessionEnded { reason }))
        }
        _ => Ok(None),
    }
}

/// `perm-` + the first 16 hex digits of `sha256(prompt_id | tool | input)`, the
/// input as `JSON.stringify` writes it (compact, the payload's key order).
pub fn permission_attention_id(prompt_id: &str, tool: &str, input: &Value) -> String {
    let mut h = Sha256::new();
    h.update(prompt_id.as_bytes());
    h.update(b"|");
    h.update(tool.as_bytes());
    h.update(b"|");
    h.update(input.to_string().as_bytes());
    let digest = h.finalize();
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("perm-{hex}")
}

/// True when the prompt is one of Claude Code's own wrappers, after trimming:
/// `<name …>…</name>` or `<name …/>` with `name` on the closed list or `command-…`.
pub fn is_injected(prompt: &str) -> bool {
    let t = prompt.trim();
    let Some(rest) = t.strip_prefix('<') else {
        return false;
    };
    let name_len = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .unwrap_or(rest.len());
    let name = &rest[..name_len];
    let listed = INJECTED_TAGS.contains(&name) || name.starts_with("command-");
    if !listed || name_len == rest.len() {
        return false;
    }
    let after = &rest[name_len..];
    if !(after.starts_with('>') || after.starts_with('/') || after.starts_with(char::is_whitespace))
    {
        return false;
    }
    let Some(open_end) = after.find('>') else {
        return false;
    };
    after[..open_end].ends_with('/') || after.contains(&format!("</{name}>"))
}

/// The background work a Stop lists, less sessionpipe's own waiter and (for a
/// SubagentStop) the subagent that is stopping.
fn background(p: &Map<String, Value>, except_agent: Option<&str>) -> Option<Vec<Value>> {
    let tasks = p.get("background_tasks")?.as_array()?;
    let kept: Vec<Value> = tasks
        .iter()
        .filter(|t| {
            let field = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or("");
            let ours = ["command", "description"]
                .iter()
                .any(|k| field(k).contains("sessionpipe wait"));
            let itself = except_agent.is_some_and(|a| field("id") == a);
            !ours && !itself
        })
        .cloned()
        .collect();
    (!kept.is_empty()).then_some(kept)
}

static HOOKS: ClaudeHooks = ClaudeHooks {
    layout: HooksLayout {
        events: &[
            HookEvent::plain("SessionStart"),
            HookEvent::plain("UserPromptSubmit"),
            HookEvent::matched("PreToolUse"),
            HookEvent::matched("PostToolUse"),
            HookEvent::matched("PostToolUseFailure"),
            HookEvent::matched("PermissionRequest"),
            HookEvent::plain("Notification"),
            HookEvent::plain("Stop"),
            HookEvent::plain("StopFailure"),
            HookEvent::plain("SubagentStart"),
            HookEvent::plain("SubagentStop"),
            HookEvent::plain("PreCompact"),
            HookEvent::plain("PostCompact"),
            HookEvent::plain("SessionEnd"),
        ],
        timeout_s: 5,
        timeout_unit_ms: false,
        handler_name: None,
    },
    accepted_events: None,
};

impl HookInstall for ClaudeCode {
    /// `settings.json` of every config dir. Not found when none exists and
    /// `claude` is not on `PATH`.
    fn targets(&self, host: &Host) -> Vec<Target> {
        config_dirs(host)
            .into_iter()
            .map(|d| Target::shared(d.join("settings.json"), &HOOKS))
            .collect()
    }

    /// `install --status-line`: the `statusLine` entry, beside the hooks in the
    /// same `settings.json` of every config dir.
    fn optional(&self, host: &Host) -> Vec<OptionalTarget> {
        config_dirs(host)
            .into_iter()
            .map(|d| OptionalTarget {
                name: status_line::ENTRY,
                target: Target::shared(d.join("settings.json"), &status_line::STATUS_LINE),
            })
            .collect()
    }
}

/// Every config dir: `~/.claude`, `$CLAUDE_CONFIG_DIR`, and each `~/.claude-*`
/// holding `projects/` or `settings.json` (one per account). None found and
/// `claude` on `PATH`: `~/.claude`, which Claude Code will create.
fn config_dirs(host: &Host) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    let default = host.home.join(".claude");
    if default.is_dir() {
        dirs.push(default.clone());
    }
    if let Some(dir) = host.var("CLAUDE_CONFIG_DIR") {
        dirs.push(PathBuf::from(dir));
    }
    if let Ok(entries) = std::fs::read_dir(&host.home) {
        let mut extra: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(".claude-"))
            .map(|e| e.path())
            .filter(|d| d.join("projects").is_dir() || d.join("settings.json").is_file())
            .collect();
        extra.sort();
        dirs.extend(extra);
    }
    if dirs.is_empty() && host.on_path("claude") {
        dirs.push(default);
    }
    dirs.dedup();
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(event: &str, payload: Value) -> Job {
        Job {
            name: "t.job".into(),
            harness: NAME.into(),
            event: event.into(),
            argv: vec![NAME.into(), event.into()],
            at_ns: 1_700_000_000_123_000_000,
            payload: payload.to_string().into_bytes(),
            env: [("HOME".to_string(), "/home/ann".to_string())].into(),
            ..Default::default()
        }
    }

    fn base(event: &str) -> Value {
        json!({
            "session_id": "3bd5639e-04f7-44e6-a4c2-2f9bb68adad6",
            "transcript_path": "/home/ann/.claude/projects/x/3bd5639e.jsonl",
            "cwd": "/home/ann/src/app",
            "prompt_id": "p-1",
            "hook_event_name": event,
        })
    }

    fn with(event: &str, extra: Value) -> Value {
        let mut p = base(event);
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        p
    }

    fn events(event: &str, extra: Value, memo: &mut Memo) -> Vec<EventData> {
        let j = job(event, with(event, extra));
        match ClaudeCode.map(&j).unwrap() {
            Mapped::Events(mut m) => {
                assert_eq!(m.block.cwd.as_deref(), Some("~/src/app"));
                ClaudeCode.remember(&j, &mut m.events, memo);
                m.events
            }
            Mapped::Ignored(why) => panic!("ignored: {why}"),
        }
    }

    fn only(event: &str, extra: Value) -> Value {
        let evs = events(event, extra, &mut Memo::new());
        assert_eq!(evs.len(), 1, "{evs:?}");
        let (kind, data) = evs[0].clone().into_parts();
        json!({"type": kind, "data": data})
    }

    #[test]
    fn session_end_reasons() {
        for (word, want) in [
            ("clear", "clear"),
            ("logout", "logout"),
            ("exit", "exit"),
            ("prompt_input_exit", "exit"),
            ("other", "other"),
            ("bypass_permissions_disabled", "other"),
        ] {
            let e = only("SessionEnd", json!({"reason": word}));
            assert_eq!(e["data"]["reason"], want, "{word}");
        }
    }

    #[test]
    fn session_start_source_from_source_or_trigger() {
        assert_eq!(
            only("SessionStart", json!({"source": "resume"}))["data"]["source"],
            "resume"
        );
        assert_eq!(
            only("SessionStart", json!({"trigger": "compact"}))["data"]["source"],
            "compact"
        );
        assert_eq!(
            only("SessionStart", json!({"source": "new"}))["data"]["source"],
            "unknown"
        );
    }

    #[test]
    fn notification_kinds_and_ids() {
        for (t, kind) in [
            ("permission_prompt", "permission"),
            ("idle_prompt", "idle"),
            ("elicitation_dialog", "elicitation"),
            ("auth_success", "question"),
        ] {
            let e = only(
                "Notification",
                json!({"notification_type": t, "message": "Claude needs\nyou", "agent_id": "a1"}),
            );
            assert_eq!(e["data"]["kind"], kind);
            assert_eq!(e["data"]["attention_id"], "notif-1700000000123");
            assert_eq!(e["data"]["message"], "Claude needs you");
            assert_eq!(e["data"]["agent_id"], "a1");
        }
    }

    #[test]
    fn permission_attention_id_is_stable_and_matches_the_recorded_fixture() {
        let input = json!({"command": "cat /nonexistent-file-xyz", "description": "Try to read a file that doesn't exist"});
        let id = permission_attention_id("5e6e20e7-82a4-4865-8967-b2c9adae76c4", "Bash", &input);
        assert_eq!(id, "perm-1bb18c870624a063");
    }

    #[test]
    fn tool_failure_carries_the_error() {
        let e = only(
            "PostToolUseFailure",
            json!({"tool_name": "Bash", "tool_use_id": "t1", "error": "exit 1", "tool_input": {"command": "false"}}),
        );
        assert_eq!(e["type"], "tool.ended");
        assert_eq!(e["data"]["ok"], false);
        assert_eq!(e["data"]["error"], "exit 1");
        assert_eq!(e["data"]["call_id"], "t1");
    }

    #[test]
    fn stop_failure_is_an_error_turn_end() {
        let e = only("StopFailure", json!({"error": "rate_limit"}));
        assert_eq!(
            e["data"],
            json!({"turn_id": "p-1", "reason": "error", "error": "rate_limit"})
        );
    }

    #[test]
    fn background_work_less_our_waiter_and_the_stopping_subagent() {
        let tasks = json!([
            {"id": "a1", "type": "subagent", "status": "running"},
            {"id": "b2", "type": "shell", "command": "sessionpipe wait --session claude-code:x"},
            {"id": "c3", "type": "shell", "command": "npm test"}
        ]);
        let stop = only("Stop", json!({"background_tasks": tasks}));
        let ids: Vec<_> = stop["data"]["background"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].clone())
            .collect();
        assert_eq!(ids, vec![json!("a1"), json!("c3")]);
        let sub = only(
            "SubagentStop",
            json!({"agent_id": "a1", "agent_type": "Explore", "background_tasks": tasks}),
        );
        let ids: Vec<_> = sub["data"]["background"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].clone())
            .collect();
        assert_eq!(ids, vec![json!("c3")]);
        let lone = only(
            "SubagentStop",
            json!({"agent_id": "a1", "background_tasks": [{"id": "a1"}]}),
        );
        assert_eq!(lone["data"], json!({"agent_id": "a1"}));
    }

    #[test]
    fn one_compaction_is_one_event() {
        let mut memo = Memo::new();
        assert_eq!(
            events("PreCompact", json!({"trigger": "manual"}), &mut memo).len(),
            1
        );
        assert_eq!(
            events("PostCompact", json!({"trigger": "manual"}), &mut memo).len(),
            0
        );
        let alone = events("PostCompact", json!({"trigger": "auto"}), &mut memo);
        assert_eq!(alone.len(), 1);
        assert_eq!(alone[0].clone().into_parts().1["trigger"], "auto");
    }

    #[test]
    fn prompt_fields() {
        let e = only("UserPromptSubmit", json!({"prompt": "héllo"}));
        assert_eq!(e["data"], json!({"turn_id": "p-1", "prompt_chars": 5}));
        let e = only(
            "UserPromptSubmit",
            json!({"prompt": "<task-notification>\n<task-id>x</task-id>\n</task-notification>", "source": "loop_wakeup"}),
        );
        assert_eq!(e["data"]["injected"], true);
        assert_eq!(e["data"]["submitted_by"], "loop_wakeup");
    }

    #[test]
    fn injected_is_a_closed_list_of_closed_wrappers() {
        assert!(is_injected("  <system-reminder>x</system-reminder>\n"));
        assert!(is_injected(
            "<cross-session-message from-name=\"a\">hi</cross-session-message>"
        ));
        assert!(is_injected("<command-name>/clear</command-name>"));
        assert!(is_injected("<local-command-stdout/>"));
        assert!(!is_injected("<svg viewBox=\"0 0 1 1\"></svg>"));
        assert!(!is_injected("<system-reminder>unclosed"));
        assert!(!is_injected("<system-reminders>x</system-reminders>"));
        assert!(!is_injected(
            "please read <system-reminder>x</system-reminder>"
        ));
        assert!(!is_injected("<div>"));
    }

    #[test]
    fn other_harnesses_payloads_report_nothing() {
        let grok = json!({"hookEventName": "pre_tool_use", "workspaceRoot": "/w", "session_id": "0199a3f0-0000-7000-8000-000000000000", "transcript_path": "/x"});
        assert!(matches!(
            ClaudeCode.map(&job("PreToolUse", grok)).unwrap(),
            Mapped::Ignored(_)
        ));
        let devin =
            json!({"hook_event_name": "Stop", "session_id": "frill-vulture", "prompt_id": "p"});
        assert!(matches!(
            ClaudeCode.map(&job("Stop", devin)).unwrap(),
            Mapped::Ignored(_)
        ));
    }

    #[test]
    fn unmapped_events_are_ignored_and_bad_payloads_are_errors() {
        assert!(matches!(
            ClaudeCode
                .map(&job("ConfigChange", base("ConfigChange")))
                .unwrap(),
            Mapped::Ignored(_)
        ));
        let mut bad = job("Stop", json!({}));
        bad.payload = b"not json".to_vec();
        assert!(ClaudeCode.map(&bad).is_err());
        bad.payload = b"[1]".to_vec();
        assert!(ClaudeCode.map(&bad).is_err());
        let spaced = job(
            "Stop",
            json!({"session_id": "a b", "transcript_path": "/x"}),
        );
        assert!(ClaudeCode.map(&spaced).is_err());
    }

    #[test]
    fn attended_and_url_from_the_environment() {
        let mut j = job("Stop", base("Stop"));
        j.env
            .insert("CLAUDE_CODE_SESSION_ATTENDED".into(), "0".into());
        let Mapped::Events(m) = ClaudeCode.map(&j).unwrap() else {
            panic!()
        };
        assert_eq!(m.block.attended, Some(false));
        assert_eq!(m.block.url, None);
        j.env
            .insert("CLAUDE_CODE_HOST_SESSION_ID".into(), "local_abc".into());
        let Mapped::Events(m) = ClaudeCode.map(&j).unwrap() else {
            panic!()
        };
        assert_eq!(m.block.attended, Some(true));
        assert_eq!(
            m.block.url.as_deref(),
            Some("claude://code/continue/local_abc")
        );
    }
}
