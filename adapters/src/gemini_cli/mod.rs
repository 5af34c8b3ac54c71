//! Gemini CLI (`gemini-cli`): ADAPTERS.md's Gemini CLI row.
//!
//! Owns the mapping of Gemini CLI's hook calls to protocol events and where its
//! hooks are installed (the `hooks` key of `~/.gemini/settings.json`). Like every
//! adapter it must not do I/O while mapping: what the payload and the hook's
//! environment say is all it has.
//!
//! What Gemini CLI 0.61.0 sends (measured, `conformance/harness/gemini-cli/`): every
//! payload carries `session_id` (a UUID), `transcript_path`, `cwd`,
//! `hook_event_name` and `timestamp`, and **no** prompt, turn or tool-call id, so
//! `turn_id` and `call_id` are never set. Decisions this file makes, each with its
//! evidence:
//!
//! - **PreCompress** fires with `trigger: auto` before every model call, before
//!   Gemini CLI even compares the context with its threshold
//!   (`ChatCompressionService.compress`): it is no sign of a compaction and
//!   reports nothing (a real automatic compaction is therefore not reported by
//!   the hooks). `trigger: manual` is the person's `/compress`, which Gemini CLI
//!   carries out whatever the context's size, and becomes `context.compacted`
//!   manual; the hook fires before the summary exists, so the rare `/compress`
//!   that finds nothing old enough to summarise is reported all the same. The
//!   installer registers PreCompress with the matcher `manual` (Gemini CLI
//!   matches lifecycle events on the trigger), so the hook does not even run
//!   before every model call: Gemini CLI waits for its hooks.
//! - **Notification** `ToolPermission` names no tool call (`details` is the
//!   confirmation dialog: `type`, `title`, and `command` / `filePath` / …), so its
//!   `attention_id` is minted as Common conventions say for notifications without
//!   an id: `notif-<epoch ms>` of the hook call. No tool name is set, since the
//!   dialog's title is not one; the message carries Gemini CLI's own sentence and
//!   the subject. Other notification types are not mapped.
//! - **SessionEnd** fires two or three times when an interactive session exits
//!   (several exit cleanups each fire it): one session end is one event.
//!
//! Tier 2 (`transcript.rs`, `backfill.rs`): the chat file every hook names is
//! written as the turn goes, each record at once, so a turn is whole in it when
//! its AfterAgent runs and no read waits for words (measured, see `files`).
//! Since no hook names a prompt, a call's read takes the turns asked before the
//! call (`Want::AskedBefore` its `timestamp`): Gemini CLI runs one turn at a
//! time, and records a prompt only after BeforeAgent returns.

mod backfill;
mod transcript;

use harness::Job;
use harness::install::{
    ClaudeHooks, ConfigFormat, Ctx, EntryState, HookEvent, HookInstall, HooksLayout, Host, Skip,
    Target,
};
use harness::payload::{
    MAX_MESSAGE_CHARS, ToolKeys, char_count, cwd_for, error_text, one_line, payload_object,
    session_id, str_of, tool_ended, tool_started,
};
use harness::transcript::{ReadPlan, TranscriptSource, Want};
use harness::{Adapter, MapError, Mapped, Mapping, Memo, SessionFiles};
use protocol::*;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::path::PathBuf;

pub struct GeminiCli;

const NAME: &str = "gemini-cli";

/// The `name` on each of our handlers; Gemini CLI's `/hooks disable` and
/// `hooksConfig.disabled` name hooks by it.
const HANDLER_NAME: &str = "sessionpipe";

/// Gemini CLI's tool payloads carry no call, turn or agent id and no duration;
/// the empty key reads nothing from them.
const GEMINI_TOOL_KEYS: ToolKeys = ToolKeys {
    tool: "tool_name",
    call_id: "",
    turn_id: "",
    agent_id: "",
    input: "tool_input",
    output: "tool_response",
    ms: "",
};

/// The memo's mark that the session's last call was a SessionEnd.
const ENDED: &str = "ended";

impl Adapter for GeminiCli {
    fn name(&self) -> &'static str {
        NAME
    }

    fn map(&self, job: &Job) -> Result<Mapped, MapError> {
        let p = payload_object(job)?;
        let session_id = session_id(&p, "session_id")?;
        let event = harness::payload::hook_event(job, &p);
        let events = match map_event(&event, &p, job) {
            Ok(events) => events,
            Err(why) => return Ok(Mapped::Ignored(why)),
        };
        Ok(Mapped::Events(Box::new(Mapping {
            session_id,
            block: session_facts(job, &p),
            // Neither the payload nor the hook's environment names the version.
            harness_version: None,
            events,
            subagent: None,
        })))
    }

    /// A SessionEnd right after a SessionEnd is the same exit (an interactive
    /// session fires it from each of its exit cleanups): it reports nothing.
    fn remember(&self, _job: &Job, events: &mut Vec<EventData>, memo: &mut Memo) {
        if !matches!(events.as_slice(), [EventData::SessionEnded(_)]) {
            memo.remove(ENDED);
        } else if memo.insert(ENDED.into(), Value::Bool(true)).is_some() {
            events.clear();
        }
    }

    fn hooks(&self) -> Option<&dyn HookInstall> {
        Some(self)
    }

    /// The folder, the chat file, and the turns asked before the call. Every
    /// read is once, as the file stands: its AfterAgent found the turn's last
    /// record written every time (three headless turns and an interactive one on
    /// 0.61.0), and its `prompt_response` repeats the last chunk of the stream,
    /// so it names no words to wait for.
    ///
    /// A resumed session's SessionStart names a fresh file that Gemini CLI then
    /// leaves (the session goes on in its old one, which every later hook names):
    /// that start names no transcript, so the old file's cursor is kept and its
    /// turns are not sent again.
    fn files(&self, job: &Job) -> SessionFiles {
        let Ok(p) = payload_object(job) else {
            return SessionFiles::default();
        };
        let folder = Some(PathBuf::from(folder(job, &p))).filter(|f| !f.as_os_str().is_empty());
        let event = harness::payload::hook_event(job, &p);
        let resumed = event == "SessionStart" && str_of(&p, "source").as_deref() == Some("resume");
        if resumed {
            return SessionFiles {
                folder,
                ..Default::default()
            };
        }
        let at = str_of(&p, "timestamp")
            .and_then(|t| protocol::time::parse_rfc3339_ms(&t))
            .unwrap_or_else(|| job.at_ms());
        let after = match event.as_str() {
            "AfterAgent" => Some(true),
            "SessionStart" | "BeforeAgent" | "PreCompress" | "SessionEnd" => Some(false),
            _ => None,
        };
        SessionFiles {
            folder,
            transcript: str_of(&p, "transcript_path").map(PathBuf::from),
            read: after.map(|after| ReadPlan {
                want: Want::AskedBefore(at),
                after,
                hold: false,
                interruption: false,
            }),
        }
    }

    fn transcript(&self) -> Option<&dyn TranscriptSource> {
        Some(&transcript::GeminiTranscript)
    }

    fn backfill(&self, host: &Host, since_ms: i64) -> Vec<harness::backfill::Backfilled> {
        backfill::sessions(&gemini_dir(host), &host.home, since_ms)
    }
}

/// The session's folder: the payload's `cwd`, else the hook's environment.
fn folder(job: &Job, p: &Map<String, Value>) -> String {
    str_of(p, "cwd")
        .or_else(|| job.env("GEMINI_PROJECT_DIR").map(str::to_string))
        .or_else(|| job.env("GEMINI_CWD").map(str::to_string))
        .unwrap_or_else(|| job.cwd.clone())
}

/// What stdin and the hook's environment say of the session: its folder.
fn session_facts(job: &Job, p: &Map<String, Value>) -> SessionBlock {
    let folder = folder(job, p);
    SessionBlock {
        cwd: (!folder.is_empty()).then(|| cwd_for(job, &folder)),
        ..Default::default()
    }
}

/// `<home>/.gemini`, the home being `$GEMINI_CLI_HOME` when set (Gemini CLI's
/// own override), else `~`.
fn gemini_dir(host: &Host) -> PathBuf {
    host.var("GEMINI_CLI_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| host.home.clone())
        .join(".gemini")
}

/// The events of one call, or why it reports nothing.
fn map_event(event: &str, p: &Map<String, Value>, job: &Job) -> Result<Vec<EventData>, String> {
    let one = |e| Ok(vec![e]);
    match event {
        "SessionStart" => one(EventData::SessionStarted(SessionStarted {
            source: StartSource::from_word(&str_of(p, "source").unwrap_or_default()),
        })),
        "BeforeAgent" => one(EventData::TurnStarted(TurnStarted {
            prompt_chars: p.get("prompt").and_then(Value::as_str).map(char_count),
            ..Default::default()
        })),
        "BeforeTool" => one(EventData::ToolStarted(tool_started(p, &GEMINI_TOOL_KEYS))),
        "AfterTool" => {
            let error = tool_error(p);
            one(EventData::ToolEnded(tool_ended(
                p,
                &GEMINI_TOOL_KEYS,
                error.is_none(),
                error,
            )))
        }
        "Notification" => match str_of(p, "notification_type").as_deref() {
            Some("ToolPermission") => one(EventData::AttentionNeeded(AttentionNeeded {
                attention_id: format!("notif-{}", job.at_ms()),
                kind: AttentionKind::Permission,
                tool: None,
                message: permission_message(p),
                agent_id: None,
            })),
            other => Err(format!("Notification {other:?} is not mapped")),
        },
        "AfterAgent" => one(EventData::TurnEnded(TurnEnded::new(
            None,
            TurnEndReason::Stop,
        ))),
        "PreCompress" => match str_of(p, "trigger").as_deref() {
            Some("manual") => one(EventData::ContextCompacted(ContextCompacted {
                trigger: CompactTrigger::Manual,
            })),
            _ => Err("PreCompress fires before every model call unless it is manual".into()),
        },
        "SessionEnd" => one(EventData::SessionEnded(SessionEnded {
            reason: EndReason::from_word(&str_of(p, "reason").unwrap_or_default()),
        })),
        _ => Err(format!("{event} is not mapped")),
    }
}

/// The tool's failure: `tool_response.error` (`{message, type}`), its message
/// when it has one. A command that exits non-zero is no failure of the tool:
/// Gemini CLI reports its exit code in the output.
fn tool_error(p: &Map<String, Value>) -> Option<String> {
    let error = p.get("tool_response")?.get("error")?;
    error
        .get("message")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .map(str::to_string)
        .or_else(|| error_text(Some(error)))
}

/// Gemini CLI's own sentence (`Tool Confirm Shell Command requires execution`)
/// and what the dialog asks about: the command, file, MCP tool or question.
fn permission_message(p: &Map<String, Value>) -> Option<String> {
    let subject = p.get("details").and_then(Value::as_object).and_then(|d| {
        ["command", "filePath", "toolName", "prompt"]
            .iter()
            .find_map(|k| d.get(*k).and_then(Value::as_str))
            .filter(|s| !s.trim().is_empty())
    });
    let text = match (str_of(p, "message"), subject) {
        (Some(m), Some(s)) => format!("{m}: {s}"),
        (Some(m), None) => m,
        (None, Some(s)) => s.to_string(),
        (None, None) => return None,
    };
    Some(one_line(&text, MAX_MESSAGE_CHARS))
}

/// `settings.json` is Gemini CLI's whole settings file: our entries are the
/// Claude-shaped ones under `hooks`, and `hooksConfig` can switch them off.
struct GeminiSettings(ClaudeHooks);

impl ConfigFormat for GeminiSettings {
    fn judge(&self, text: &str, ctx: &Ctx<'_>) -> Result<EntryState, Skip> {
        self.0.judge(text, ctx)
    }

    fn add(&self, text: &str, ctx: &Ctx<'_>) -> Result<String, Skip> {
        self.0.add(text, ctx)
    }

    fn remove(&self, text: &str, original: Option<&str>, ctx: &Ctx<'_>) -> Result<String, Skip> {
        self.0.remove(text, original, ctx)
    }

    /// `hooksConfig.enabled: false` turns every hook off; `hooksConfig.disabled`
    /// lists hooks by name (what `/hooks disable sessionpipe` writes).
    fn inactive(&self, text: &str) -> Option<String> {
        let v: Value = serde_json::from_str(text.trim_start_matches('\u{feff}')).ok()?;
        let config = v.get("hooksConfig")?;
        if config.get("enabled") == Some(&Value::Bool(false)) {
            return Some("hooksConfig.enabled is false, so Gemini CLI runs no hooks".into());
        }
        let named = config
            .get("disabled")
            .and_then(Value::as_array)
            .is_some_and(|names| names.iter().any(|n| n == HANDLER_NAME));
        named.then(|| "hooksConfig.disabled names sessionpipe, so Gemini CLI skips it".into())
    }
}

static HOOKS: GeminiSettings = GeminiSettings(ClaudeHooks {
    layout: HooksLayout {
        // Tool matchers are regular expressions, `*` matching every tool.
        // Lifecycle matchers are exact triggers: PreCompress only when manual
        // (see the module comment). Notification gets no matcher: Gemini CLI
        // 0.61.0 ignores it there. BeforeModel, AfterModel and
        // BeforeToolSelection report nothing and are not registered.
        events: Cow::Borrowed(&[
            HookEvent::plain("SessionStart"),
            HookEvent::plain("BeforeAgent"),
            HookEvent::with_matcher("BeforeTool", "*"),
            HookEvent::with_matcher("AfterTool", "*"),
            HookEvent::plain("Notification"),
            HookEvent::plain("AfterAgent"),
            HookEvent::with_matcher("PreCompress", "manual"),
            HookEvent::plain("SessionEnd"),
        ]),
        timeout_s: 5,
        timeout_unit_ms: true,
        handler_name: Some(HANDLER_NAME),
    },
    accepted_events: None,
});

impl HookInstall for GeminiCli {
    /// `<home>/.gemini/settings.json`, the home being `$GEMINI_CLI_HOME` when set
    /// (Gemini CLI's own override), else `~`. Found when that file exists or
    /// `gemini` is on `PATH`; the `.gemini` folder alone is no sign of Gemini CLI,
    /// since Antigravity keeps its own hooks and data there too
    /// (`config/hooks.json`, `antigravity/`).
    fn looked_for(&self, host: &Host) -> Vec<String> {
        vec![
            host.show(&gemini_dir(host).join("settings.json")),
            "`gemini` on PATH".into(),
        ]
    }

    fn targets(&self, host: &Host) -> Vec<Target> {
        let settings = gemini_dir(host).join("settings.json");
        if !settings.is_file() && !host.on_path("gemini") {
            return Vec::new();
        }
        vec![Target::shared(settings, &HOOKS)]
    }

    fn note(&self) -> Option<&'static str> {
        Some(
            "Gemini CLI's own telemetry logs your prompts by default when it is on; set `telemetry.logPrompts` to false in its settings.json to stop that",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SID: &str = "c7f81499-848f-494f-9084-55e439a09119";

    fn job(event: &str, payload: Value) -> Job {
        Job {
            name: "t.job".into(),
            harness: NAME.into(),
            event: event.into(),
            argv: vec![NAME.into(), event.into()],
            cwd: "/home/ann/src/app".into(),
            at_ns: 1_700_000_000_123_000_000,
            payload: payload.to_string().into_bytes(),
            env: [("HOME".to_string(), "/home/ann".to_string())].into(),
            ..Default::default()
        }
    }

    /// The base fields of every payload, as Gemini CLI 0.61.0 writes them.
    fn with(event: &str, extra: Value) -> Value {
        let mut p = json!({
            "session_id": SID,
            "transcript_path": "/home/ann/.gemini/tmp/app/chats/session-2026-11-29T19-48-c7f81499.jsonl",
            "cwd": "/home/ann/src/app",
            "hook_event_name": event,
            "timestamp": "2026-11-29T19:48:36.780Z",
        });
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        p
    }

    fn mapped(j: &Job, memo: &mut Memo) -> Result<Vec<EventData>, String> {
        match GeminiCli.map(j).unwrap() {
            Mapped::Events(mut m) => {
                assert_eq!(m.session_id, SID);
                GeminiCli.remember(j, &mut m.events, memo);
                Ok(m.events)
            }
            Mapped::Ignored(why) => Err(why),
        }
    }

    fn only(event: &str, extra: Value) -> Value {
        let evs = mapped(&job(event, with(event, extra)), &mut Memo::new()).unwrap();
        assert_eq!(evs.len(), 1, "{evs:?}");
        let (kind, data) = evs[0].clone().into_parts();
        json!({"type": kind, "data": data})
    }

    fn ignored(event: &str, extra: Value) -> String {
        mapped(&job(event, with(event, extra)), &mut Memo::new()).unwrap_err()
    }

    #[test]
    fn session_start_sources() {
        for (word, want) in [
            ("startup", "startup"),
            ("resume", "resume"),
            ("clear", "clear"),
            ("new", "unknown"),
        ] {
            let e = only("SessionStart", json!({"source": word}));
            assert_eq!(
                e,
                json!({"type": "session.started", "data": {"source": want}})
            );
        }
    }

    #[test]
    fn a_prompt_is_a_turn_without_an_id() {
        let e = only("BeforeAgent", json!({"prompt": "héllo"}));
        assert_eq!(
            e,
            json!({"type": "turn.started", "data": {"prompt_chars": 5}})
        );
        let e = only(
            "AfterAgent",
            json!({"prompt": "héllo", "prompt_response": "Done.", "stop_hook_active": false}),
        );
        assert_eq!(e, json!({"type": "turn.ended", "data": {"reason": "stop"}}));
    }

    #[test]
    fn tool_calls_start_and_end() {
        let input = json!({"command": "echo hello"});
        let e = only(
            "BeforeTool",
            json!({"tool_name": "run_shell_command", "tool_input": input}),
        );
        assert_eq!(
            e,
            json!({"type": "tool.started", "data": {"tool": "run_shell_command", "input": input}})
        );
        let response = json!({"llmContent": "Output: hello", "returnDisplay": "hello"});
        let e = only(
            "AfterTool",
            json!({"tool_name": "run_shell_command", "tool_input": input, "tool_response": response}),
        );
        assert_eq!(
            e["data"],
            json!({"tool": "run_shell_command", "ok": true, "input": input, "output": response})
        );
    }

    #[test]
    fn a_tool_error_ends_the_call_not_ok() {
        // Measured: read_file of a missing file.
        let failed = only(
            "AfterTool",
            json!({"tool_name": "read_file", "tool_input": {"file_path": "/x/missing.txt"},
                   "tool_response": {"llmContent": "Could not read file.", "returnDisplay": "File not found.",
                                     "error": {"message": "File not found: /x/missing.txt", "type": "file_not_found"}}}),
        );
        assert_eq!(failed["data"]["ok"], false);
        assert_eq!(failed["data"]["error"], "File not found: /x/missing.txt");
        let bare = only(
            "AfterTool",
            json!({"tool_name": "t", "tool_response": {"error": {"type": "execution_failed"}}}),
        );
        assert_eq!(bare["data"]["error"], "{\"type\":\"execution_failed\"}");
        for fine in [json!({"error": null}), json!("plain text"), json!({})] {
            let e = only(
                "AfterTool",
                json!({"tool_name": "t", "tool_response": fine}),
            );
            assert_eq!(e["data"]["ok"], true, "{fine}");
            assert!(e["data"].get("error").is_none());
        }
        // A command that exits non-zero ran fine as far as the tool is concerned.
        let exit = only(
            "AfterTool",
            json!({"tool_name": "run_shell_command", "tool_response": {"llmContent": "Exit Code: 2"}}),
        );
        assert_eq!(exit["data"]["ok"], true);
    }

    #[test]
    fn a_tool_permission_is_a_minted_permission_attention() {
        // Measured: an interactive session asking to run `touch`.
        let e = only(
            "Notification",
            json!({"notification_type": "ToolPermission",
                   "message": "Tool Confirm Shell Command requires execution",
                   "details": {"type": "exec", "title": "Confirm Shell Command",
                               "command": "touch made-by-test.txt", "rootCommand": "touch"}}),
        );
        assert_eq!(
            e,
            json!({"type": "attention.needed", "data": {
                "attention_id": "notif-1700000000123",
                "kind": "permission",
                "message": "Tool Confirm Shell Command requires execution: touch made-by-test.txt"}})
        );
        let edit = only(
            "Notification",
            json!({"notification_type": "ToolPermission", "details": {"type": "edit", "fileName": "a.txt", "filePath": "/w/a.txt"}}),
        );
        assert_eq!(edit["data"]["message"], "/w/a.txt");
        let bare = only(
            "Notification",
            json!({"notification_type": "ToolPermission"}),
        );
        assert!(bare["data"].get("message").is_none());
        assert!(ignored("Notification", json!({"notification_type": "Other"})).contains("Other"));
    }

    #[test]
    fn only_a_manual_compression_is_a_compaction() {
        assert_eq!(
            only("PreCompress", json!({"trigger": "manual"})),
            json!({"type": "context.compacted", "data": {"trigger": "manual"}})
        );
        assert!(ignored("PreCompress", json!({"trigger": "auto"})).contains("every model call"));
        ignored("PreCompress", json!({}));
    }

    #[test]
    fn session_end_reasons() {
        for (word, want) in [
            ("exit", "exit"),
            ("clear", "clear"),
            ("logout", "logout"),
            ("prompt_input_exit", "exit"),
            ("other", "other"),
        ] {
            let e = only("SessionEnd", json!({"reason": word}));
            assert_eq!(e["data"]["reason"], want, "{word}");
        }
    }

    #[test]
    fn one_exit_is_one_session_end() {
        let mut memo = Memo::new();
        let end = job("SessionEnd", with("SessionEnd", json!({"reason": "exit"})));
        assert_eq!(mapped(&end, &mut memo).unwrap().len(), 1);
        assert_eq!(mapped(&end, &mut memo).unwrap().len(), 0);
        assert_eq!(mapped(&end, &mut memo).unwrap().len(), 0);
        // Resumed later: its next end counts again.
        let start = job(
            "SessionStart",
            with("SessionStart", json!({"source": "resume"})),
        );
        assert_eq!(mapped(&start, &mut memo).unwrap().len(), 1);
        assert_eq!(mapped(&end, &mut memo).unwrap().len(), 1);
    }

    #[test]
    fn the_folder_is_the_payloads_cwd_else_the_environments() {
        let j = job("AfterAgent", with("AfterAgent", json!({})));
        let Mapped::Events(m) = GeminiCli.map(&j).unwrap() else {
            panic!()
        };
        assert_eq!(m.block.cwd.as_deref(), Some("~/src/app"));
        let mut p = with("AfterAgent", json!({}));
        p.as_object_mut().unwrap().remove("cwd");
        let mut j = job("AfterAgent", p);
        j.env
            .insert("GEMINI_PROJECT_DIR".into(), "/home/ann/other".into());
        let Mapped::Events(m) = GeminiCli.map(&j).unwrap() else {
            panic!()
        };
        assert_eq!(m.block.cwd.as_deref(), Some("~/other"));
    }

    #[test]
    fn unregistered_events_are_ignored_and_bad_payloads_are_errors() {
        for event in ["BeforeModel", "AfterModel", "BeforeToolSelection"] {
            assert!(ignored(event, json!({})).contains("not mapped"));
        }
        // The event name comes from argv, else from the payload.
        let mut j = job("", with("AfterAgent", json!({})));
        j.argv = vec![NAME.into()];
        assert_eq!(mapped(&j, &mut Memo::new()).unwrap().len(), 1);
        let mut bad = job("AfterAgent", json!({}));
        assert!(GeminiCli.map(&bad).is_err(), "no session id");
        bad.payload = b"not json".to_vec();
        assert!(GeminiCli.map(&bad).is_err());
        let spaced = job("AfterAgent", json!({"session_id": "a b"}));
        assert!(GeminiCli.map(&spaced).is_err());
    }

    #[test]
    fn each_turn_call_reads_the_turns_asked_before_it() {
        let asked = protocol::time::parse_rfc3339_ms("2026-11-29T19:48:36.780Z").unwrap();
        let files = |event: &str, extra: Value| GeminiCli.files(&job(event, with(event, extra)));
        for (event, after) in [
            ("SessionStart", false),
            ("BeforeAgent", false),
            ("AfterAgent", true),
            ("SessionEnd", false),
        ] {
            let f = files(event, json!({"source": "startup"}));
            assert_eq!(
                f.read,
                Some(ReadPlan {
                    want: Want::AskedBefore(asked),
                    after,
                    hold: false,
                    interruption: false
                }),
                "{event}"
            );
            assert_eq!(f.folder, Some(PathBuf::from("/home/ann/src/app")));
            assert!(
                f.transcript
                    .unwrap()
                    .ends_with("session-2026-11-29T19-48-c7f81499.jsonl")
            );
        }
        for event in ["BeforeTool", "AfterTool", "Notification"] {
            assert_eq!(files(event, json!({})).read, None, "{event}");
        }
        // A resumed start names a file the session then leaves.
        let resumed = files("SessionStart", json!({"source": "resume"}));
        assert!(resumed.transcript.is_none() && resumed.read.is_none());
        // No timestamp: the hook call's own time.
        let mut p = with("AfterAgent", json!({}));
        p.as_object_mut().unwrap().remove("timestamp");
        let plan = GeminiCli.files(&job("AfterAgent", p)).read.unwrap();
        assert_eq!(plan.want, Want::AskedBefore(1_700_000_000_123));
    }

    #[test]
    fn hooks_off_or_ours_disabled_is_inactive() {
        let off = r#"{"hooksConfig": {"enabled": false}, "hooks": {}}"#;
        assert!(HOOKS.inactive(off).unwrap().contains("enabled is false"));
        let named = r#"{"hooksConfig": {"disabled": ["other", "sessionpipe"]}}"#;
        assert!(HOOKS.inactive(named).unwrap().contains("names sessionpipe"));
        for fine in [
            r#"{"hooksConfig": {"enabled": true, "disabled": ["other"]}}"#,
            r#"{"hooks": {"disabled": ["sessionpipe"]}}"#,
            "{}",
        ] {
            assert_eq!(HOOKS.inactive(fine), None, "{fine}");
        }
    }

    #[test]
    fn found_by_its_settings_file_or_on_path_never_by_the_folder_alone() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join(".gemini/config")).unwrap();
        std::fs::write(home.join(".gemini/config/hooks.json"), "{}").unwrap();
        let mut host = Host {
            home: home.clone(),
            vars: [("PATH".to_string(), "/nonexistent".to_string())].into(),
        };
        assert!(GeminiCli.targets(&host).is_empty(), "Antigravity's folder");
        std::fs::write(home.join(".gemini/settings.json"), "{}").unwrap();
        let found = GeminiCli.targets(&host);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].path, home.join(".gemini/settings.json"));

        let elsewhere = dir.path().join("gemini-home");
        host.vars
            .insert("GEMINI_CLI_HOME".into(), elsewhere.display().to_string());
        assert!(GeminiCli.targets(&host).is_empty());
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("gemini"), "").unwrap();
        host.vars.insert("PATH".into(), bin.display().to_string());
        assert_eq!(
            GeminiCli.targets(&host)[0].path,
            elsewhere.join(".gemini/settings.json")
        );
    }
}
