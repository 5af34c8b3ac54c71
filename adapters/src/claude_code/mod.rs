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
mod headless;
pub mod inbox;
mod limits;
mod status_line;
mod transcript;

pub use facts::{FIRST_PARTY_KEY, account as config_dir_account, claude_ai_session, config_dir_of};
pub use status_line::ENTRY as STATUS_LINE_ENTRY;

pub use facts::config_dirs;
use harness::claude_shaped::{
    self, Call, Folder, NotMapped, PermissionId, Read, Row, Rule, Shaped, StopWithout, Table,
    Trigger,
};
use harness::install::{ClaudeHooks, HookEvent, HookInstall, Host, OptionalTarget, Target};
use harness::payload::{CLAUDE_TOOL_KEYS, is_uuid, str_of, version_from_ai_agent};
use harness::transcript::TranscriptSource;
use harness::{Adapter, Job, MapError, Mapped, Memo, SessionFiles};
use protocol::*;
use serde_json::{Map, Value};
use std::sync::LazyLock;

pub use harness::claude_shaped::permission_attention_id;

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

const STOP_WORDS: Read = Read::StopWords {
    otherwise: StopWithout::All,
};

/// ADAPTERS.md's Claude Code row: Mapping, Ids, and the Transcript reads.
static TABLE: Table = Table {
    harness: NAME,
    session_key: "session_id",
    tool: CLAUDE_TOOL_KEYS,
    agent_keys: &["agent_id"],
    folder: &[
        Folder::Payload("cwd"),
        Folder::Env("CLAUDE_PROJECT_DIR"),
        Folder::HookCwd,
    ],
    model_key: Some("model"),
    transcript_key: Some("transcript_path"),
    start_keys: &["source", "trigger"],
    start_words: &[],
    end_words: &[],
    folded_names: false,
    interruptions: true,
    timeout_s: 5,
    rows: &[
        Row::new(
            HookEvent::plain("SessionStart"),
            Rule::SessionStart,
            Read::Closed,
        ),
        Row::new(
            HookEvent::plain("UserPromptSubmit"),
            Rule::Prompt,
            Read::Prompt,
        ),
        Row::new(
            HookEvent::matched("PreToolUse"),
            Rule::ToolStart,
            Read::Nothing,
        ),
        Row::new(
            HookEvent::matched("PostToolUse"),
            Rule::ToolEnd { ok: true },
            Read::Nothing,
        ),
        Row::new(
            HookEvent::matched("PostToolUseFailure"),
            Rule::ToolEnd { ok: false },
            Read::Nothing,
        ),
        Row::new(
            HookEvent::matched("PermissionRequest")
                .timeout(harness::control::PERMISSION_HOOK_TIMEOUT_S),
            Rule::Permission(PermissionId::Minted),
            Read::Nothing,
        ),
        Row::new(
            HookEvent::plain("Notification"),
            Rule::Notification,
            Read::Nothing,
        ),
        Row::new(
            HookEvent::plain("Stop"),
            Rule::TurnEnd(TurnEndReason::Stop),
            STOP_WORDS,
        ),
        Row::new(
            HookEvent::plain("StopFailure"),
            Rule::TurnEnd(TurnEndReason::Error),
            Read::AsItStands,
        ),
        Row::new(
            HookEvent::plain("SubagentStart"),
            Rule::SubagentStart,
            Read::Nothing,
        ),
        Row::new(
            HookEvent::plain("SubagentStop"),
            Rule::SubagentStop,
            Read::Nothing,
        ),
        Row::new(
            HookEvent::plain("PreCompact"),
            Rule::Compact(Trigger::FromPayload),
            Read::Closed,
        ),
        Row::new(
            HookEvent::plain("PostCompact"),
            Rule::Compact(Trigger::FromPayload),
            Read::Nothing,
        ),
        Row::new(HookEvent::plain("SessionEnd"), Rule::SessionEnd, Read::All),
    ],
};

/// `install --status-line`'s entry.
static STATUS_LINE: status_line::StatusLine = status_line::StatusLine { harness: NAME };

static HOOKS: LazyLock<ClaudeHooks> = LazyLock::new(|| ClaudeHooks {
    layout: TABLE.layout(),
    accepted_events: None,
});

/// The Control rows: a Stop takes a message (`turn`), a `PermissionRequest` a
/// decision.
impl harness::control::ControlHooks for ClaudeCode {
    fn turn_answer(&self, framed: &str) -> Option<String> {
        Some(harness::control::stop_block(framed))
    }
    fn permission_answer(&self, allow: bool, note: Option<&str>) -> Option<String> {
        Some(harness::control::permission_decision(allow, note))
    }
    fn accounts(&self, host: &Host) -> Vec<harness::control::Account> {
        config_dirs(host)
            .iter()
            .filter_map(|dir| facts::account(Some(&host.home), dir))
            .map(|a| harness::control::Account {
                harness: NAME.to_string(),
                ..a
            })
            .fold(Vec::new(), |mut all, a| {
                if !all.contains(&a) {
                    all.push(a);
                }
                all
            })
    }
}

impl Adapter for ClaudeCode {
    fn name(&self) -> &'static str {
        NAME
    }

    fn map(&self, job: &Job) -> Result<Mapped, MapError> {
        claude_shaped::map(self, job)
    }

    /// One compaction is one event (`claude_shaped::one_compaction`). Claude Code fires
    /// hooks between the two (the compaction's own SubagentStop, a SessionStart
    /// with source `compact`), measured on 2.1.332.
    fn remember(&self, job: &Job, events: &mut Vec<EventData>, memo: &mut Memo) {
        claude_shaped::one_compaction(&job.event, events, memo);
        // The session's permission mode, for control's inbox rung (a session
        // that bypasses permissions holds an inbox line and drops it).
        if let Some(mode) = facts::permission_mode(&job.payload) {
            memo.insert(facts::MEMO_PERMISSION_MODE.into(), Value::String(mode));
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

    fn headless(&self) -> Option<&dyn harness::headless::Headless> {
        Some(self)
    }

    fn transcript(&self) -> Option<&dyn TranscriptSource> {
        Some(&transcript::ClaudeTranscript)
    }

    /// SubagentStop names the subagent's own transcript
    /// (`<session>/subagents/agent-<id>.jsonl`): its responses are the
    /// session's usage too. Only a `.jsonl` file is read.
    fn subagent_transcript(&self, job: &Job) -> Option<std::path::PathBuf> {
        if job.event != "SubagentStop" {
            return None;
        }
        let p = harness::payload::payload_object(job).ok()?;
        let path = std::path::PathBuf::from(str_of(&p, "agent_transcript_path")?);
        (path.is_absolute() && path.extension().is_some_and(|x| x == "jsonl")).then_some(path)
    }

    fn facts(&self, job: &Job, files: &SessionFiles) -> SessionBlock {
        facts::facts(job, files)
    }

    fn backfill(&self, host: &Host, since_ms: i64) -> Vec<harness::backfill::Backfilled> {
        backfill::sessions(&config_dirs(host), &host.home, since_ms, &mut |_| {})
    }

    fn backfill_each(
        &self,
        host: &Host,
        since_ms: i64,
        each: &mut dyn FnMut(&mut harness::backfill::Backfilled),
    ) -> Vec<harness::backfill::Backfilled> {
        backfill::sessions(&config_dirs(host), &host.home, since_ms, each)
    }
}

impl Shaped for ClaudeCode {
    fn table(&self) -> &'static Table {
        &TABLE
    }

    /// Two other harnesses run the hooks in `~/.claude/settings.json` and hand
    /// them payloads that are not Claude Code's; their own adapters report them.
    fn prepare(&self, _job: &Job, p: Map<String, Value>) -> Result<Map<String, Value>, NotMapped> {
        if p.contains_key("hookEventName") && p.contains_key("workspaceRoot") {
            return Err(NotMapped::Ignored(
                "a Grok Build payload in Claude Code's hooks (grok-build reports it)".into(),
            ));
        }
        let sid = str_of(&p, "session_id").unwrap_or_default();
        if !p.contains_key("transcript_path") && !is_uuid(&sid) {
            return Err(NotMapped::Ignored(
                "a Devin payload in Claude Code's hooks (devin reports it)".into(),
            ));
        }
        Ok(p)
    }

    /// Who submitted a prompt and whether Claude Code injected it; the
    /// background work a Stop or SubagentStop lists.
    fn adjust(&self, call: &Call<'_>, event: &mut EventData) -> Result<(), NotMapped> {
        let p = call.payload;
        match event {
            EventData::TurnStarted(t) => {
                // Forwarded as is when the payload has the key (none recorded yet).
                t.submitted_by = p.get("source").and_then(Value::as_str).map(str::to_string);
                t.injected = p
                    .get("prompt")
                    .and_then(Value::as_str)
                    .filter(|t| is_injected(t))
                    .map(|_| true);
            }
            EventData::TurnEnded(t) if call.event == "Stop" => t.background = background(p, None),
            // Claude Code still lists the stopping subagent as running.
            EventData::SubagentEnded(s) => s.background = background(p, Some(&s.agent_id)),
            _ => {}
        }
        Ok(())
    }

    /// The status line's limits (`install --status-line`), which no hook has.
    fn unlisted(&self, call: &Call<'_>) -> Result<Vec<EventData>, NotMapped> {
        if call.event != limits::EVENT {
            return Err(NotMapped::Ignored(format!("{} is not mapped", call.event)));
        }
        let job = call.job;
        let config = facts::config_dir(job, &claude_shaped::files(self, job));
        let account = config.and_then(|c| facts::account_id(job.home().as_deref(), &c));
        match limits::observed(call.payload, account) {
            Some(l) => Ok(vec![EventData::LimitsObserved(l)]),
            None => Err(NotMapped::Ignored("a status line without limits".into())),
        }
    }

    /// The link and whether a person is there, from the hook's environment.
    fn block(&self, call: &Call<'_>, block: &mut SessionBlock) {
        let job = call.job;
        block.url = job
            .env("CLAUDE_CODE_HOST_SESSION_ID")
            .map(|id| format!("claude://code/continue/{id}"));
        block.attended = if job.env("CLAUDE_CODE_SESSION_ATTENDED") == Some("1")
            || job.env("SESSIONPIPE_CONTROL_JOB").is_some()
            || block.url.is_some()
        {
            Some(true)
        } else if job.env("CLAUDE_CODE_SESSION_ATTENDED") == Some("0") {
            Some(false)
        } else {
            None
        };
    }

    fn version(&self, job: &Job) -> Option<String> {
        version_from_ai_agent(job, NAME)
    }
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

impl HookInstall for ClaudeCode {
    /// `settings.json` of every config dir. Not found when none exists and
    /// `claude` is not on `PATH`.
    fn looked_for(&self, host: &Host) -> Vec<String> {
        let mut places = vec![
            host.show(&host.home.join(".claude")),
            host.show(&host.home.join(".claude-*")),
        ];
        if let Some(dir) = host.var("CLAUDE_CONFIG_DIR") {
            places.push(host.show(std::path::Path::new(dir)));
        }
        places.push("`claude` on PATH".into());
        places
    }

    fn targets(&self, host: &Host) -> Vec<Target> {
        config_dirs(host)
            .into_iter()
            .map(|d| Target::shared(d.join("settings.json"), &*HOOKS))
            .collect()
    }

    /// `install --status-line`: the `statusLine` entry, beside the hooks in the
    /// same `settings.json` of every config dir.
    fn optional(&self, host: &Host) -> Vec<OptionalTarget> {
        config_dirs(host)
            .into_iter()
            .map(|d| OptionalTarget {
                name: status_line::ENTRY,
                target: Target::shared(d.join("settings.json"), &STATUS_LINE),
            })
            .collect()
    }
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

    #[test]
    fn a_subagents_stop_names_its_own_transcript_for_usage() {
        let path = "/home/ann/.claude/projects/-w/s1/subagents/agent-a1.jsonl";
        let stop = json!({"session_id": "s1", "agent_id": "a1", "agent_transcript_path": path});
        assert_eq!(
            ClaudeCode.subagent_transcript(&job("SubagentStop", stop.clone())),
            Some(std::path::PathBuf::from(path))
        );
        assert_eq!(ClaudeCode.subagent_transcript(&job("Stop", stop)), None);
        let relative = json!({"session_id": "s1", "agent_transcript_path": "agent-a1.jsonl"});
        assert_eq!(
            ClaudeCode.subagent_transcript(&job("SubagentStop", relative)),
            None
        );
        let other = json!({"session_id": "s1", "agent_transcript_path": "/etc/passwd"});
        assert_eq!(
            ClaudeCode.subagent_transcript(&job("SubagentStop", other)),
            None
        );
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
