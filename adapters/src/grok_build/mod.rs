//! Grok Build (`grok-build`): ADAPTERS.md's Grok Build row.
//!
//! Owns the mapping of Grok's hook payloads and sessionpipe's own hooks file in
//! Grok's hooks folder. Grok writes every key twice, its own camelCase beside
//! Claude Code's snake_case; either may be the one present, so the payload is read
//! through `twins` first. `promptId` names the turn on turn events only.
//!
//! Must not write any file but its own (Grok merges every `*.json` of the folder).
//! Must not report the `Stop` Grok fires as its process ends, after `SessionEnd`:
//! no turn ended then. Grok's payloads that reach Claude Code's hooks are the
//! `claude-code` adapter's to drop, not this one's.
//!
//! Tier 2 and facts: the session's update stream (`transcript.rs`), the
//! `summary.json` beside it and Grok's `version.json` (`summary.rs`), and past
//! sessions (`backfill.rs`). The stream names a turn only at its end
//! (`turn_completed.prompt_id`, the hooks' `promptId`); a Stop waits for its
//! words as Claude Code's does, since no run of Grok was measured for when its
//! stream is written.

mod backfill;
mod summary;
mod transcript;

use harness::claude_shaped::{
    self, Call, Folder, NotMapped, Read, Row, Rule, Shaped, StopWithout, Table, Trigger,
};
use harness::install::{ClaudeHooks, HookEvent, HookInstall, Host, Target};
use harness::payload::{ToolKeys, str_of};
use harness::transcript::TranscriptSource;
use harness::{Adapter, Job, MapError, Mapped, SessionFiles};
use protocol::*;
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::sync::LazyLock;

pub struct GrokBuild;

const NAME: &str = "grok-build";

/// (Claude Code's name, Grok's own name) of each key Grok writes twice.
const TWINS: &[(&str, &str)] = &[
    ("hook_event_name", "hookEventName"),
    ("session_id", "sessionId"),
    ("tool_name", "toolName"),
    ("tool_use_id", "toolUseId"),
    ("tool_input", "toolInput"),
    ("tool_response", "toolResult"),
    ("duration_ms", "durationMs"),
    ("transcript_path", "transcriptPath"),
    ("last_assistant_message", "lastAssistantMessage"),
    ("notification_type", "notificationType"),
];

const STOP_WORDS: Read = Read::StopWords {
    otherwise: StopWithout::All,
};

/// ADAPTERS.md's Grok Build row, read after `twins`. The turn is `promptId` (it
/// has no twin, and is absent from tool events). Event names arrive PascalCase
/// from our entries' argv and snake_case in Grok's `hookEventName`, read alike.
/// An omitted matcher matches everything; only Notification is narrowed.
///
/// The reads are Claude Code's (its Transcript row), by Grok's event names, but
/// no read looks for an interruption (StopCancelled reports it), and two differ
/// because the stream closes a turn itself (`turn_completed`), so a read finds
/// every finished turn closed, its hooks reported or not: a start sends only
/// the turns asked before it (an earlier run's; a daemon catching up would
/// otherwise send this run's ahead of everything), and a compaction, which
/// comes inside a turn, reads nothing: what it could send went with the turn's
/// prompt.
static TABLE: Table = Table {
    harness: NAME,
    session_key: "session_id",
    tool: ToolKeys {
        tool: "tool_name",
        call_id: "tool_use_id",
        turn_id: "promptId",
        agent_id: "agent_id",
        input: "tool_input",
        output: "tool_response",
        ms: "duration_ms",
    },
    agent_keys: &["agent_id"],
    folder: &[
        Folder::Payload("cwd"),
        Folder::Payload("workspaceRoot"),
        Folder::Env("GROK_WORKSPACE_ROOT"),
    ],
    model_key: None,
    transcript_key: Some("transcript_path"),
    start_keys: &["source"],
    start_words: &[("new", StartSource::Startup), ("load", StartSource::Resume)],
    end_words: &[("shutdown", EndReason::Exit)],
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
            HookEvent::plain("PreToolUse"),
            Rule::ToolStart,
            Read::Nothing,
        ),
        Row::new(
            HookEvent::plain("PostToolUse"),
            Rule::ToolEnd { ok: true },
            Read::Nothing,
        ),
        Row::new(
            HookEvent::plain("PostToolUseFailure"),
            Rule::ToolEnd { ok: false },
            Read::Nothing,
        ),
        Row::new(
            HookEvent::with_matcher("Notification", "permission_prompt"),
            Rule::PermissionPrompt,
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
        // `max_turns`, `permission_cancelled`: the turn was cut short, not finished.
        Row::new(
            HookEvent::plain("StopCancelled"),
            Rule::TurnEnd(TurnEndReason::Interrupt),
            Read::AsItStands,
        ),
        Row::new(
            HookEvent::plain("PreCompact"),
            Rule::Compact(Trigger::FromPayload),
            Read::Nothing,
        ),
        Row::new(HookEvent::plain("SessionEnd"), Rule::SessionEnd, Read::All),
    ],
};

static HOOKS: LazyLock<ClaudeHooks> = LazyLock::new(|| ClaudeHooks {
    layout: TABLE.layout(),
    accepted_events: None,
});

impl Adapter for GrokBuild {
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
        Some(&transcript::GrokTranscript)
    }

    /// `summary.json` beside the session's update stream.
    fn facts(&self, job: &Job, files: &SessionFiles) -> SessionBlock {
        files
            .transcript
            .as_ref()
            .and_then(|t| summary::read(&t.with_file_name("summary.json"), job.home().as_deref()))
            .map(|s| s.block)
            .unwrap_or_default()
    }

    fn backfill(&self, host: &Host, since_ms: i64) -> Vec<harness::backfill::Backfilled> {
        backfill::sessions(&grok_home(host), &host.home, since_ms)
    }
}

impl Shaped for GrokBuild {
    fn table(&self) -> &'static Table {
        &TABLE
    }

    fn prepare(&self, _job: &Job, p: Map<String, Value>) -> Result<Map<String, Value>, NotMapped> {
        Ok(twins(p))
    }

    /// The second Stop, as the process ends: after SessionEnd, no turn.
    fn adjust(&self, call: &Call<'_>, event: &mut EventData) -> Result<(), NotMapped> {
        if let EventData::TurnEnded(t) = event
            && call.event == "Stop"
            && t.turn_id.is_none()
            && str_of(call.payload, "reason").as_deref() == Some("shutdown")
        {
            return Err(NotMapped::Ignored(
                "the Stop Grok fires as its process ends (no turn ended)".into(),
            ));
        }
        Ok(())
    }

    /// The start's own `timestamp`, else the hook's clock.
    fn asked_before(&self, job: &Job, p: &Map<String, Value>) -> i64 {
        p.get("timestamp")
            .and_then(summary::epoch_ms)
            .unwrap_or_else(|| job.at_ms())
    }
}

/// The payload with each Claude Code key filled from Grok's own twin when only
/// that one is there. Where both are, they carry the same value.
fn twins(mut p: Map<String, Value>) -> Map<String, Value> {
    for (snake, camel) in TWINS {
        if !p.contains_key(*snake)
            && let Some(v) = p.get(*camel).cloned()
        {
            p.insert((*snake).to_string(), v);
        }
    }
    p
}

/// Grok's home: `$GROK_HOME`, else `~/.grok`.
fn grok_home(host: &Host) -> PathBuf {
    host.var("GROK_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| host.home.join(".grok"))
}

impl HookInstall for GrokBuild {
    /// `<grok home>/hooks/sessionpipe.json`, a file of our own. Not found when
    /// Grok's home does not exist and `grok` is not on `PATH`.
    fn looked_for(&self, host: &Host) -> Vec<String> {
        vec![host.show(&grok_home(host)), "`grok` on PATH".into()]
    }

    fn targets(&self, host: &Host) -> Vec<Target> {
        let home = grok_home(host);
        if !home.is_dir() && !host.on_path("grok") {
            return Vec::new();
        }
        vec![Target {
            path: home.join("hooks/sessionpipe.json"),
            format: &*HOOKS,
            owned: true,
        }]
    }

    fn note(&self) -> Option<&'static str> {
        Some(
            "Grok Build runs these hooks in a folder once it is trusted (a headless `grok -p` trusts its own)",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::transcript::{ReadPlan, Want};
    use serde_json::json;
    use std::collections::BTreeMap;
    use std::path::Path;

    const SESSION: &str = "019a7c3e-5b1f-7d2a-9c4e-3f8a2b6d1e90";

    fn job(event: &str, payload: Value) -> Job {
        Job {
            harness: NAME.into(),
            event: event.into(),
            argv: vec![NAME.into(), event.into()],
            at_ns: 1_700_000_000_123_000_000,
            payload: payload.to_string().into_bytes(),
            env: BTreeMap::from([("HOME".to_string(), "/home/ann".to_string())]),
            ..Default::default()
        }
    }

    /// A payload with both spellings, as Grok writes them.
    fn both(event_snake: &str, extra: Value) -> Value {
        let mut p = json!({
            "hookEventName": event_snake, "sessionId": SESSION, "session_id": SESSION,
            "workspaceRoot": "/home/ann/src/app", "cwd": "/home/ann/src/app",
            "timestamp": "2026-11-11T10:00:00Z", "permissionMode": "default",
        });
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        p
    }

    fn outcome(event: &str, payload: Value) -> Result<(SessionBlock, Value), String> {
        match GrokBuild.map(&job(event, payload)).unwrap() {
            Mapped::Events(m) => {
                assert_eq!(m.session_id, SESSION);
                assert_eq!(m.events.len(), 1);
                let (kind, data) = m.events[0].clone().into_parts();
                Ok((m.block, json!({"type": kind, "data": data})))
            }
            Mapped::Ignored(why) => Err(why),
        }
    }

    fn only(event: &str, payload: Value) -> Value {
        outcome(event, payload).unwrap().1
    }

    #[test]
    fn either_twin_is_read() {
        let camel_only = json!({"hookEventName": "post_tool_use", "sessionId": SESSION, "cwd": "/w",
            "toolName": "bash", "toolUseId": "tu-1", "toolInput": {"command": "ls"},
            "toolResult": {"stdout": "a"}, "durationMs": 41});
        let snake_only = json!({"hook_event_name": "PostToolUse", "session_id": SESSION, "cwd": "/w",
            "tool_name": "bash", "tool_use_id": "tu-1", "tool_input": {"command": "ls"},
            "tool_response": {"stdout": "a"}, "duration_ms": 41});
        let want = json!({"tool": "bash", "call_id": "tu-1", "ms": 41, "ok": true,
            "input": {"command": "ls"}, "output": {"stdout": "a"}});
        assert_eq!(only("PostToolUse", camel_only)["data"], want);
        assert_eq!(only("PostToolUse", snake_only.clone())["data"], want);
        // Run by the event Grok names when argv has none, in either case.
        let mut j = job("", snake_only);
        j.argv = vec![NAME.into()];
        assert!(matches!(GrokBuild.map(&j).unwrap(), Mapped::Events(_)));
        let registered = |e: &str| TABLE.row(e).map(|r| r.hook.name);
        assert_eq!(registered("pre_tool_use"), Some("PreToolUse"));
        assert_eq!(registered("stop_failure"), Some("StopFailure"));
        assert_eq!(registered("subagent_start"), None);
    }

    #[test]
    fn session_sources_and_end_reasons() {
        for (word, want) in [("new", "startup"), ("load", "resume"), ("odd", "unknown")] {
            let e = only(
                "SessionStart",
                both("session_start", json!({"source": word})),
            );
            assert_eq!(e["data"]["source"], want, "{word}");
        }
        for (word, want) in [("shutdown", "exit"), ("clear", "clear"), ("x", "other")] {
            let e = only("SessionEnd", both("session_end", json!({"reason": word})));
            assert_eq!(e["data"]["reason"], want, "{word}");
        }
    }

    #[test]
    fn turns_are_named_by_prompt_id() {
        let p = |extra| both("user_prompt_submit", extra);
        assert_eq!(
            only(
                "UserPromptSubmit",
                p(json!({"promptId": "pr-1", "prompt": "hi there"}))
            )["data"],
            json!({"turn_id": "pr-1", "prompt_chars": 8})
        );
        let stop = only(
            "Stop",
            both("stop", json!({"promptId": "pr-1", "reason": "end_turn"})),
        );
        assert_eq!(stop["data"], json!({"turn_id": "pr-1", "reason": "stop"}));
        for why in ["max_turns", "permission_cancelled"] {
            let c = only(
                "StopCancelled",
                both("stop_cancelled", json!({"promptId": "pr-1", "reason": why})),
            );
            assert_eq!(c["data"], json!({"turn_id": "pr-1", "reason": "interrupt"}));
        }
        let f = only(
            "StopFailure",
            both(
                "stop_failure",
                json!({"promptId": "pr-1", "error": "rate_limited"}),
            ),
        );
        assert_eq!(
            f["data"],
            json!({"turn_id": "pr-1", "reason": "error", "error": "rate_limited"})
        );
    }

    #[test]
    fn the_stop_after_session_end_reports_nothing() {
        let late = both("stop", json!({"reason": "shutdown"}));
        assert!(outcome("Stop", late).is_err());
        // A Stop that names its turn is a turn end, whatever its reason says.
        let named = both("stop", json!({"reason": "shutdown", "promptId": "pr-2"}));
        assert_eq!(only("Stop", named)["data"]["turn_id"], "pr-2");
    }

    #[test]
    fn permission_prompts_only() {
        let e = only(
            "Notification",
            both(
                "notification",
                json!({"notificationType": "permission_prompt", "message": "Allow bash:\n rm x?"}),
            ),
        );
        assert_eq!(
            e["data"],
            json!({"attention_id": "notif-1700000000123", "kind": "permission", "message": "Allow bash: rm x?"})
        );
        let with_tool = only(
            "Notification",
            both(
                "notification",
                json!({"notification_type": "permission_prompt", "toolName": "bash",
                       "toolUseId": "tu-9", "toolInput": {"command": "rm x"}}),
            ),
        );
        assert_eq!(
            with_tool["data"],
            json!({"attention_id": "tu-9", "kind": "permission", "tool": "bash", "message": "bash rm x"})
        );
        let idle = both("notification", json!({"notificationType": "idle_prompt"}));
        assert!(outcome("Notification", idle).is_err());
    }

    #[test]
    fn failures_and_compaction() {
        let e = only(
            "PostToolUseFailure",
            both(
                "post_tool_use_failure",
                json!({"toolName": "bash", "error": "exit 1"}),
            ),
        );
        assert_eq!(
            (e["data"]["ok"].clone(), e["data"]["error"].clone()),
            (json!(false), json!("exit 1"))
        );
        assert_eq!(
            only(
                "PreCompact",
                both("pre_compact", json!({"trigger": "manual"}))
            )["data"],
            json!({"trigger": "manual"})
        );
        assert!(outcome("SubagentStart", both("subagent_start", json!({}))).is_err());
    }

    #[test]
    fn the_folder_is_cwd_then_workspace_root_then_the_environment() {
        let (block, _) = outcome("Stop", both("stop", json!({"promptId": "p"}))).unwrap();
        assert_eq!(block.cwd.as_deref(), Some("~/src/app"));
        let bare = json!({"sessionId": SESSION, "workspaceRoot": "/srv/w", "promptId": "p"});
        let (block, _) = outcome("Stop", bare).unwrap();
        assert_eq!(block.cwd.as_deref(), Some("/srv/w"));
        let mut j = job("Stop", json!({"sessionId": SESSION, "promptId": "p"}));
        j.env
            .insert("GROK_WORKSPACE_ROOT".into(), "/home/ann/w".into());
        let Mapped::Events(m) = GrokBuild.map(&j).unwrap() else {
            panic!()
        };
        assert_eq!(m.block.cwd.as_deref(), Some("~/w"));
    }

    #[test]
    fn read_plans_follow_the_turn_and_name_the_stream() {
        let stream = "/home/ann/.grok/sessions/%2Fhome%2Fann%2Fsrc%2Fapp/s/updates.jsonl";
        let files = |event: &str, snake: &str, extra: Value| {
            let mut p = both(snake, extra);
            p["transcriptPath"] = json!(stream);
            GrokBuild.files(&job(event, p))
        };
        let plan = |want, after, hold| {
            Some(ReadPlan {
                want,
                after,
                hold,
                interruption: false,
            })
        };
        let f = files(
            "UserPromptSubmit",
            "user_prompt_submit",
            json!({"promptId": "p1"}),
        );
        assert_eq!(f.read, plan(Want::ClosedBefore("p1".into()), false, false));
        assert_eq!(f.transcript, Some(PathBuf::from(stream)));
        assert_eq!(f.folder, Some(PathBuf::from("/home/ann/src/app")));
        let stop = json!({"promptId": "p1", "lastAssistantMessage": "Done."});
        assert_eq!(
            files("Stop", "stop", stop).read,
            plan(Want::EndedWith("Done.".into()), true, true)
        );
        assert_eq!(
            files("Stop", "stop", json!({})).read,
            plan(Want::All, true, false)
        );
        for (event, snake) in [
            ("StopCancelled", "stop_cancelled"),
            ("StopFailure", "stop_failure"),
        ] {
            assert_eq!(
                files(event, snake, json!({})).read,
                plan(Want::All, true, false)
            );
        }
        assert_eq!(
            files("SessionEnd", "session_end", json!({})).read,
            plan(Want::All, false, false)
        );
        let start = files("SessionStart", "session_start", json!({"source": "load"}));
        let at = protocol::time::parse_rfc3339_ms("2026-11-11T10:00:00Z").unwrap();
        assert_eq!(start.read, plan(Want::AskedBefore(at), false, false));
        for (event, snake) in [
            ("PreCompact", "pre_compact"),
            ("PreToolUse", "pre_tool_use"),
        ] {
            assert_eq!(files(event, snake, json!({})).read, None, "{event}");
        }
    }

    #[test]
    fn facts_come_from_the_summary_beside_the_stream() {
        let tmp = tempfile::tempdir().unwrap();
        let stream = tmp.path().join("updates.jsonl");
        std::fs::write(
            tmp.path().join("summary.json"),
            r#"{"generated_title": "Fix it", "current_model_id": "grok-4", "head_branch": "dev"}"#,
        )
        .unwrap();
        let files = SessionFiles {
            transcript: Some(stream),
            ..Default::default()
        };
        let f = GrokBuild.facts(&job("Stop", json!({})), &files);
        assert_eq!(
            (
                f.title.as_deref(),
                f.title_source,
                f.model.as_deref(),
                f.branch.as_deref()
            ),
            (
                Some("Fix it"),
                Some(TitleSource::Harness),
                Some("grok-4"),
                Some("dev")
            )
        );
        let none = GrokBuild.facts(&job("Stop", json!({})), &SessionFiles::default());
        assert_eq!(none, SessionBlock::default());
    }

    #[test]
    fn our_own_file_in_grok_home() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let host = |vars: &[(&str, &Path)]| Host {
            home: home.clone(),
            vars: vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.display().to_string()))
                .collect(),
        };
        assert!(GrokBuild.targets(&host(&[])).is_empty());
        std::fs::create_dir_all(home.join(".grok")).unwrap();
        assert_eq!(
            GrokBuild.targets(&host(&[]))[0].path,
            home.join(".grok/hooks/sessionpipe.json")
        );
        let elsewhere = tmp.path().join("grok-home");
        std::fs::create_dir_all(&elsewhere).unwrap();
        assert_eq!(
            GrokBuild.targets(&host(&[("GROK_HOME", &elsewhere)]))[0].path,
            elsewhere.join("hooks/sessionpipe.json")
        );
    }
}
