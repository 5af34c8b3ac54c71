//! Codex (`codex`): ADAPTERS.md's Codex row.
//!
//! Two ways in. Codex's hooks (`$CODEX_HOME/hooks.json`, Claude-shaped payloads
//! with Codex's own `turn_id`) map one to one. Its legacy `notify` program is handed
//! one JSON argument (not stdin) after each turn, `agent-turn-complete`: the
//! fallback for a person whose hooks are off (or not trusted yet), so it reports the
//! turn's end only in a session whose Stop hook was never seen (`remember`).
//!
//! Only the person's own threads are sessions. An ephemeral thread (`codex exec
//! --ephemeral`, Codex Desktop's background work) has no rollout: its hooks say
//! `transcript_path: null` and report nothing. A subagent's hooks arrive with its
//! parent's `session_id` and belong to that session: its tool calls and permission
//! prompts carry its `agent_id`, and its own prompt, turn-end and compaction hooks
//! report nothing, because the parent's turn and context are the person's and
//! `subagent.*` says when the subagent ran.
//!
//! Mapping hooks is pure. The notify call and its `config.toml` entry live in
//! `notify`: telling the person's thread from an ephemeral or a subagent one
//! there takes a look at Codex's rollout folder, the one read the mapping makes of
//! the harness's files. The worker reads the rest after the hook exited: the
//! session's rollout (`transcript`: turns, facts, limits), named by `files`, which
//! never names a subagent's own rollout, and past rollouts for `backfill`. It
//! calls nothing and never grants hook trust.

mod backfill;
mod headless;
mod notify;
#[cfg(test)]
mod notify_props;
mod transcript;

use harness::claude_shaped::one_compaction;
use harness::claude_shaped::{
    self, Call, Folder, NotMapped, PermissionId, Read, Row, Rule, Shaped, StopWithout, Table,
    Trigger,
};
use harness::install::{ClaudeHooks, HookEvent, HookInstall, Host, Target};
use harness::payload::{ToolKeys, str_of};
use harness::transcript::TranscriptSource;
use harness::{Adapter, Job, MapError, Mapped, Memo, SessionFiles};
use notify::{CodexNotify, NOTIFY_EVENT};
use protocol::*;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

pub struct Codex;

const NAME: &str = "codex";

/// The memo mark of a session whose Stop hook ran: its hooks are on, so notify
/// (which fires after the same turn's Stop) has nothing to add.
const HOOKS_ON: &str = "stop_hook_seen";

/// What a subagent's hooks report in its parent's session: its start and stop,
/// and its tool calls and permission prompts (with its `agent_id`). Its prompt,
/// turn end or compaction is not the parent's.
const SUBAGENT_EVENTS: &[&str] = &[
    "SubagentStart",
    "SubagentStop",
    "PreToolUse",
    "PostToolUse",
    "PermissionRequest",
];

const STOP_WORDS: Read = Read::StopWords {
    otherwise: StopWithout::All,
};

/// ADAPTERS.md's Codex row. Codex has no PostToolUseFailure and marks no failure
/// in `tool_response` (a failed command's output is just its output), so every
/// tool end is ok. Its PermissionRequest carries no tool use id (0.171): the same
/// request always mints the same id, as Claude Code's does (CONTROL.md §6).
/// PreModelRequest, PostModelRequest and whatever Codex adds next have no row.
/// Codex writes a turn's last message before it runs the Stop hook (0.171.0,
/// every run measured), but a Stop still holds its turn to the words it names,
/// as Claude Code's does, in case a build writes later.
static TABLE: Table = Table {
    harness: NAME,
    session_key: "session_id",
    tool: ToolKeys {
        tool: "tool_name",
        call_id: "tool_use_id",
        turn_id: "turn_id",
        agent_id: "agent_id",
        input: "tool_input",
        output: "tool_response",
        ms: "duration_ms",
    },
    agent_keys: &["agent_id", "subagent_id"],
    folder: &[Folder::Payload("cwd"), Folder::HookCwd],
    model_key: Some("model"),
    transcript_key: Some("transcript_path"),
    start_keys: &["source"],
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
            HookEvent::matched("PermissionRequest")
                .timeout(harness::control::PERMISSION_HOOK_TIMEOUT_S),
            Rule::Permission(PermissionId::ToolUseOrMinted),
            Read::Nothing,
        ),
        Row::new(
            HookEvent::matched("PostToolUse"),
            Rule::ToolEnd { ok: true },
            Read::Nothing,
        ),
        Row::new(
            HookEvent::plain("Stop"),
            Rule::TurnEnd(TurnEndReason::Stop),
            STOP_WORDS,
        ),
        // Codex clamps these two to 3 s (and warns on every start otherwise).
        Row::new(
            HookEvent::plain("Interrupt").timeout(3),
            Rule::TurnEnd(TurnEndReason::Interrupt),
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
        Row::new(
            HookEvent::plain("SessionEnd").timeout(3),
            Rule::SessionEnd,
            Read::All,
        ),
    ],
};

static HOOKS: LazyLock<ClaudeHooks> = LazyLock::new(|| ClaudeHooks {
    layout: TABLE.layout(),
    accepted_events: None,
});

/// Codex's hooks take Claude Code's shapes: a Stop's block (`decision:
/// block` with the message as `reason`, which Codex feeds the model as the
/// next turn's input) and a `PermissionRequest`'s decision.
impl harness::control::ControlHooks for Codex {
    fn turn_answer(&self, framed: &str) -> Option<String> {
        Some(harness::control::stop_block(framed))
    }

    fn permission_answer(&self, allow: bool, note: Option<&str>) -> Option<String> {
        Some(harness::control::permission_decision(allow, note))
    }
}

impl Adapter for Codex {
    fn name(&self) -> &'static str {
        NAME
    }

    fn map(&self, job: &Job) -> Result<Mapped, MapError> {
        if job.event == NOTIFY_EVENT {
            return notify::map_call(job);
        }
        claude_shaped::map(self, job)
    }

    /// One compaction is one event (PreCompact, PostCompact); a notify after the
    /// session's Stop hook has run reports nothing, since the hooks are on.
    fn remember(&self, job: &Job, events: &mut Vec<EventData>, memo: &mut Memo) {
        one_compaction(&job.event, events, memo);
        match job.event.as_str() {
            "Stop" => {
                memo.insert(HOOKS_ON.into(), Value::Bool(true));
            }
            NOTIFY_EVENT if memo.contains_key(HOOKS_ON) => events.clear(),
            _ => {}
        }
    }

    fn hooks(&self) -> Option<&dyn HookInstall> {
        Some(self)
    }

    /// The session's folder and rollout, and what the call asks of the rollout.
    /// Nothing is read for a subagent's calls: its SubagentStart and tool calls
    /// name its own rollout, which never becomes the session's, and its
    /// SubagentStop names the parent's with the subagent's words. A notify call
    /// has no hook payload, and names nothing.
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
        Some(&transcript::CodexTranscript)
    }

    fn backfill(&self, host: &Host, since_ms: i64) -> Vec<harness::backfill::Backfilled> {
        backfill::sessions(&codex_home(host), &host.home, since_ms, &mut |_| {})
    }

    fn backfill_each(
        &self,
        host: &Host,
        since_ms: i64,
        each: &mut dyn FnMut(&mut harness::backfill::Backfilled),
    ) -> Vec<harness::backfill::Backfilled> {
        backfill::sessions(&codex_home(host), &host.home, since_ms, each)
    }
}

impl Shaped for Codex {
    fn table(&self) -> &'static Table {
        &TABLE
    }

    fn prepare(&self, _job: &Job, p: Map<String, Value>) -> Result<Map<String, Value>, NotMapped> {
        if matches!(p.get("transcript_path"), Some(Value::Null)) {
            return Err(NotMapped::Ignored(
                "an ephemeral thread (no rollout): not the person's session".into(),
            ));
        }
        Ok(p)
    }

    /// A subagent's calls belong to its parent's session, with its `agent_id`;
    /// its own prompt, turn end or compaction is not the parent's.
    fn adjust(&self, call: &Call<'_>, event: &mut EventData) -> Result<(), NotMapped> {
        let Some(subagent) = subagent_of(call.payload, call.session_id) else {
            return Ok(());
        };
        if !SUBAGENT_EVENTS.contains(&call.event) {
            return Err(NotMapped::Ignored(format!(
                "a subagent's {}: not its parent's turn or context (subagent.* says it ran)",
                call.event
            )));
        }
        match event {
            EventData::ToolStarted(t) => t.agent_id = Some(subagent),
            EventData::ToolEnded(t) => t.agent_id = Some(subagent),
            EventData::AttentionNeeded(a) => a.agent_id = Some(subagent),
            _ => {}
        }
        Ok(())
    }

    fn own_call(&self, _job: &Job, p: &Map<String, Value>) -> bool {
        str_of(p, "session_id").is_some_and(|sid| subagent_of(p, &sid).is_none())
    }
}

/// `$CODEX_HOME`, else `~/.codex`.
fn codex_home(host: &Host) -> PathBuf {
    host.var("CODEX_HOME")
        .map_or_else(|| host.home.join(".codex"), PathBuf::from)
}

/// The subagent a hook call belongs to: the payload's `agent_id` or `subagent_id`,
/// else the thread its rollout (`transcript_path`) is named for when that is not
/// the session's own. `None` for the parent's own calls.
fn subagent_of(p: &Map<String, Value>, session_id: &str) -> Option<String> {
    str_of(p, "agent_id")
        .or_else(|| str_of(p, "subagent_id"))
        .or_else(|| {
            let thread = transcript::rollout_thread(Path::new(&str_of(p, "transcript_path")?))?;
            (!thread.eq_ignore_ascii_case(session_id)).then_some(thread)
        })
}

impl HookInstall for Codex {
    /// `hooks.json` and `config.toml` in `$CODEX_HOME` (default `~/.codex`). Not
    /// found when neither that folder nor `~/.codex` exists and `codex` is not on
    /// `PATH`.
    fn looked_for(&self, host: &Host) -> Vec<String> {
        let default = host.home.join(".codex");
        let mut places = vec![host.show(&default)];
        if codex_home(host) != default {
            places.push(host.show(&codex_home(host)));
        }
        places.push("`codex` on PATH".into());
        places
    }

    fn targets(&self, host: &Host) -> Vec<Target> {
        let default = host.home.join(".codex");
        let dir = codex_home(host);
        if !dir.is_dir() && !default.is_dir() && !host.on_path("codex") {
            return Vec::new();
        }
        vec![
            Target::shared(dir.join("hooks.json"), &*HOOKS),
            Target::shared(dir.join("config.toml"), &CodexNotify),
        ]
    }

    fn note(&self) -> Option<&'static str> {
        Some(
            "Codex runs the hooks in hooks.json only once you trust them: open Codex and \
             review them with /hooks. Until then only its notify reports, and only turn \
             ends; sessionpipe never grants that trust itself.",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::transcript::Want;
    use serde_json::json;

    const SID: &str = "01a228da-29ef-7781-ba5c-ad8687516197";
    const SUB: &str = "01a228da-fe3f-75f3-9ab9-1a3e5cff805a";
    const TURN: &str = "01a228da-2a11-7d01-90e4-efabe9a62bba";

    fn rollout(thread: &str) -> String {
        format!("/home/ann/.codex/sessions/2026/11/29/rollout-2026-11-29T19-48-35-{thread}.jsonl")
    }

    fn job(event: &str, payload: Value) -> Job {
        Job {
            name: "t.job".into(),
            harness: NAME.into(),
            event: event.into(),
            argv: vec![NAME.into(), event.into()],
            at_ns: 1_795_981_716_000_000_000,
            payload: payload.to_string().into_bytes(),
            env: [("HOME".to_string(), "/home/ann".to_string())].into(),
            ..Default::default()
        }
    }

    fn payload(event: &str, extra: Value) -> Value {
        let mut p = json!({
            "session_id": SID,
            "turn_id": TURN,
            "transcript_path": rollout(SID),
            "cwd": "/home/ann/src/app",
            "hook_event_name": event,
            "model": "gpt-6-astra",
            "permission_mode": "bypassPermissions",
        });
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        p
    }

    fn mapped(j: &Job, memo: &mut Memo) -> Option<Vec<EventData>> {
        match Codex.map(j).unwrap() {
            Mapped::Events(mut m) => {
                Codex.remember(j, &mut m.events, memo);
                Some(m.events)
            }
            Mapped::Ignored(_) => None,
        }
    }

    fn only(event: &str, extra: Value) -> Value {
        let j = job(event, payload(event, extra));
        let Mapped::Events(m) = Codex.map(&j).unwrap() else {
            panic!("{event} ignored")
        };
        assert_eq!(m.session_id, SID);
        assert_eq!(m.block.cwd.as_deref(), Some("~/src/app"));
        assert_eq!(m.block.model.as_deref(), Some("gpt-6-astra"));
        assert_eq!(m.events.len(), 1, "{:?}", m.events);
        let (kind, data) = m.events[0].clone().into_parts();
        json!({"type": kind, "data": data})
    }

    fn ignored(event: &str, p: Value) -> bool {
        matches!(Codex.map(&job(event, p)).unwrap(), Mapped::Ignored(_))
    }

    #[test]
    fn session_and_turn_events() {
        let e = only("SessionStart", json!({"source": "startup"}));
        assert_eq!(
            e,
            json!({"type": "session.started", "data": {"source": "startup"}})
        );
        assert_eq!(
            only("SessionStart", json!({"source": "compact"}))["data"]["source"],
            "compact"
        );
        let e = only("UserPromptSubmit", json!({"prompt": "héllo"}));
        assert_eq!(e["data"], json!({"turn_id": TURN, "prompt_chars": 5}));
        let e = only(
            "Stop",
            json!({"stop_hook_active": false, "last_assistant_message": "done"}),
        );
        assert_eq!(e["data"], json!({"turn_id": TURN, "reason": "stop"}));
        let e = only("Interrupt", json!({}));
        assert_eq!(e["data"], json!({"turn_id": TURN, "reason": "interrupt"}));
        for (word, want) in [
            ("other", "other"),
            ("exit", "exit"),
            ("logout", "logout"),
            ("new", "other"),
        ] {
            assert_eq!(
                only("SessionEnd", json!({"reason": word}))["data"]["reason"],
                want
            );
        }
    }

    #[test]
    fn tool_calls_are_always_ok_and_keep_their_ids() {
        let call = json!({"tool_name": "Bash", "tool_input": {"command": "ls /nope"}, "tool_use_id": "call_1"});
        let started = only("PreToolUse", call.clone());
        assert_eq!(
            started["data"],
            json!({"tool": "Bash", "call_id": "call_1", "turn_id": TURN, "input": {"command": "ls /nope"}})
        );
        let mut end = call;
        end["tool_response"] = json!("ls: cannot access '/nope': No such file or directory\n");
        let ended = only("PostToolUse", end);
        assert_eq!(ended["data"]["ok"], true);
        assert!(ended["data"].get("error").is_none());
        assert_eq!(
            ended["data"]["output"],
            "ls: cannot access '/nope': No such file or directory\n"
        );
        assert!(
            ended["data"].get("agent_id").is_none(),
            "the parent's own call"
        );
    }

    #[test]
    fn permission_requests_mint_a_stable_id_without_a_tool_use_id() {
        let ask = json!({"tool_name": "Bash", "tool_input": {"command": "touch /x", "description": "Need to write"}});
        let a = only("PermissionRequest", ask.clone());
        let b = only("PermissionRequest", ask.clone());
        assert_eq!(a["data"]["attention_id"], b["data"]["attention_id"]);
        assert_eq!(a["data"]["kind"], "permission");
        assert_eq!(a["data"]["tool"], "Bash");
        assert_eq!(a["data"]["message"], "Bash touch /x");
        assert!(
            a["data"]["attention_id"]
                .as_str()
                .unwrap()
                .starts_with("perm-")
        );
        let mut with_id = ask;
        with_id["tool_use_id"] = json!("call_9");
        assert_eq!(
            only("PermissionRequest", with_id)["data"]["attention_id"],
            "call_9"
        );
    }

    #[test]
    fn subagents_and_compactions() {
        let e = only(
            "SubagentStart",
            json!({"agent_id": SUB, "agent_type": "default", "transcript_path": rollout(SUB)}),
        );
        assert_eq!(
            e,
            json!({"type": "subagent.started", "data": {"agent_id": SUB, "agent_type": "default"}})
        );
        let e = only(
            "SubagentStop",
            json!({"agent_id": SUB, "agent_type": "default", "last_assistant_message": "x"}),
        );
        assert_eq!(e["type"], "subagent.ended");
        assert!(
            Codex
                .map(&job("SubagentStop", payload("SubagentStop", json!({}))))
                .is_err()
        );

        let mut memo = Memo::new();
        let pre = job(
            "PreCompact",
            payload("PreCompact", json!({"trigger": "auto"})),
        );
        let post = job(
            "PostCompact",
            payload("PostCompact", json!({"trigger": "auto"})),
        );
        let first = mapped(&pre, &mut memo).unwrap();
        assert_eq!(first[0].clone().into_parts().1["trigger"], "auto");
        assert!(
            mapped(&post, &mut memo).unwrap().is_empty(),
            "one compaction, one event"
        );
        assert_eq!(
            mapped(&post, &mut memo).unwrap().len(),
            1,
            "a PostCompact alone still reports"
        );
    }

    #[test]
    fn a_subagents_hooks_belong_to_its_parent_with_its_agent_id() {
        let call = json!({"tool_name": "Bash", "tool_input": {"command": "echo sub"}, "tool_use_id": "call_s"});
        // 0.171 names the subagent in the payload.
        let mut named = call.clone();
        named["agent_id"] = json!(SUB);
        named["transcript_path"] = json!(rollout(SUB));
        assert_eq!(only("PreToolUse", named)["data"]["agent_id"], SUB);
        let mut alt = call.clone();
        alt["subagent_id"] = json!("agent-7");
        assert_eq!(only("PostToolUse", alt)["data"]["agent_id"], "agent-7");
        // Else the thread its rollout is named for, lowercased.
        let mut by_file = call.clone();
        by_file["transcript_path"] =
            json!(rollout(&SUB.to_uppercase()).replace(".jsonl", ".jsonl.zst"));
        assert_eq!(only("PreToolUse", by_file.clone())["data"]["agent_id"], SUB);
        let mut perm = by_file;
        perm["tool_use_id"] = json!(null);
        assert_eq!(only("PermissionRequest", perm)["data"]["agent_id"], SUB);
        // Its own prompt, turn end, compaction and lifecycle are not the parent's.
        for event in [
            "UserPromptSubmit",
            "Stop",
            "Interrupt",
            "PreCompact",
            "SessionStart",
            "SessionEnd",
        ] {
            let p = payload(
                event,
                json!({"agent_id": SUB, "agent_type": "default", "transcript_path": rollout(SUB), "prompt": "Run echo sub"}),
            );
            assert!(ignored(event, p), "{event}");
        }
    }

    #[test]
    fn ephemeral_threads_and_unmapped_events_report_nothing() {
        for event in [
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "Stop",
            "SessionEnd",
        ] {
            assert!(
                ignored(event, payload(event, json!({"transcript_path": null}))),
                "{event}"
            );
        }
        for event in ["PreModelRequest", "PostModelRequest", "SomethingNew"] {
            assert!(
                ignored(event, payload(event, json!({"kind": "sampling"}))),
                "{event}"
            );
        }
        let mut bad = job("Stop", json!({}));
        bad.payload = b"not json".to_vec();
        assert!(Codex.map(&bad).is_err());
        assert!(
            Codex
                .map(&job("Stop", json!({"session_id": "a b"})))
                .is_err()
        );
    }

    fn notify_job(thread: &str, home: &Path) -> Job {
        let arg = json!({
            "type": "agent-turn-complete", "thread-id": thread, "turn-id": TURN,
            "cwd": "/home/ann/src/app", "client": "codex_exec",
            "input-messages": ["Run echo hello"], "last-assistant-message": "It printed hello.",
        });
        let mut j = job(NOTIFY_EVENT, json!({}));
        j.payload.clear();
        j.argv.push(arg.to_string());
        j.env
            .insert("CODEX_HOME".into(), home.to_string_lossy().into_owned());
        j
    }

    #[test]
    fn notify_ends_a_turn_only_while_the_hooks_are_off() {
        // No sessions folder there: the thread cannot be told, so notify reports.
        let home = Path::new("/nonexistent/codex-home");
        let notify = notify_job(SID, home);
        let mut memo = Memo::new();
        let Mapped::Events(m) = Codex.map(&notify).unwrap() else {
            panic!()
        };
        assert_eq!(m.session_id, SID);
        assert_eq!(m.block.cwd.as_deref(), Some("~/src/app"));
        let events = mapped(&notify, &mut memo).unwrap();
        assert_eq!(
            events[0].clone().into_parts(),
            (
                "turn.ended".into(),
                json!({"turn_id": TURN, "reason": "stop"})
                    .as_object()
                    .unwrap()
                    .clone()
            )
        );
        // Once a Stop hook ran for the session, notify repeats it: nothing.
        mapped(&job("Stop", payload("Stop", json!({}))), &mut memo).unwrap();
        assert!(mapped(&notify, &mut memo).unwrap().is_empty());

        // Chained after the person's own notify, the payload is still the last argument.
        let mut chained = notify_job(SID, home);
        chained.argv.insert(2, "--previous-notify".into());
        chained.argv.insert(3, "[\"say\"]".into());
        assert_eq!(mapped(&chained, &mut Memo::new()).unwrap().len(), 1);
        let mut start = notify_job(SID, home);
        *start.argv.last_mut().unwrap() =
            json!({"type": "agent-turn-start", "thread-id": SID}).to_string();
        assert!(matches!(Codex.map(&start).unwrap(), Mapped::Ignored(_)));
        let mut bare = notify_job(SID, home);
        bare.argv.pop();
        assert!(Codex.map(&bare).is_err());
    }

    #[test]
    fn each_call_names_the_sessions_rollout_and_what_to_read() {
        let files = |event: &str, extra: Value| Codex.files(&job(event, payload(event, extra)));
        let plan = |event: &str, extra: Value| files(event, extra).read.unwrap();
        let f = files("Stop", json!({"last_assistant_message": "done"}));
        assert_eq!(f.transcript, Some(PathBuf::from(rollout(SID))));
        assert_eq!(f.folder, Some(PathBuf::from("/home/ann/src/app")));
        let stop = f.read.unwrap();
        assert_eq!(stop.want, Want::EndedWith("done".into()));
        assert!(stop.after && stop.hold && !stop.interruption);
        assert_eq!(plan("Stop", json!({})).want, Want::All, "no words named");
        let prompt = plan("UserPromptSubmit", json!({"prompt": "x"}));
        assert_eq!(prompt.want, Want::ClosedBefore(TURN.into()));
        assert!(!prompt.after && prompt.interruption);
        for event in ["SessionStart", "PreCompact"] {
            let p = plan(event, json!({}));
            assert_eq!((p.want, p.interruption), (Want::Closed, true), "{event}");
        }
        let interrupt = plan("Interrupt", json!({}));
        assert_eq!((interrupt.want, interrupt.after), (Want::All, true));
        assert_eq!(plan("SessionEnd", json!({})).want, Want::All);
        assert!(
            files("PreToolUse", json!({"tool_name": "Bash"}))
                .read
                .is_none()
        );
        assert!(files("PostCompact", json!({})).read.is_none());
    }

    #[test]
    fn a_subagents_rollout_is_never_the_sessions() {
        let sub_call = json!({"tool_name": "Bash", "transcript_path": rollout(SUB)});
        for (event, extra) in [
            ("PreToolUse", sub_call),
            (
                "SubagentStart",
                json!({"agent_id": SUB, "transcript_path": rollout(SUB)}),
            ),
            // Codex names the parent's rollout here, and the subagent's words.
            (
                "SubagentStop",
                json!({"agent_id": SUB, "last_assistant_message": "sub finished"}),
            ),
        ] {
            let f = Codex.files(&job(event, payload(event, extra)));
            assert_eq!((f.transcript, f.read), (None, None), "{event}");
        }
        let notify = notify_job(SID, Path::new("/nonexistent"));
        assert!(Codex.files(&notify).transcript.is_none());
    }

    #[test]
    fn subagent_ids_from_rollout_names() {
        assert_eq!(
            transcript::rollout_thread(Path::new(&rollout(SID))).as_deref(),
            Some(SID)
        );
        assert_eq!(
            transcript::rollout_thread(Path::new("/x/notes.jsonl")),
            None
        );
        assert_eq!(
            transcript::rollout_thread(Path::new("/x/rollout-short.jsonl")),
            None
        );
    }

    #[test]
    fn installs_into_codex_home_or_is_not_found() {
        let home = tempfile::tempdir().unwrap();
        let host = |vars: &[(&str, &str)]| Host {
            home: home.path().to_path_buf(),
            vars: vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        assert!(Codex.targets(&host(&[("PATH", "/nonexistent")])).is_empty());
        let custom = home.path().join("custom-codex");
        std::fs::create_dir_all(&custom).unwrap();
        let targets = Codex.targets(&host(&[("CODEX_HOME", custom.to_str().unwrap())]));
        let paths: Vec<_> = targets.iter().map(|t| t.path.clone()).collect();
        assert_eq!(
            paths,
            [custom.join("hooks.json"), custom.join("config.toml")]
        );
        std::fs::create_dir_all(home.path().join(".codex")).unwrap();
        assert_eq!(
            Codex.targets(&host(&[]))[0].path,
            home.path().join(".codex/hooks.json")
        );
        assert!(Codex.note().unwrap().contains("/hooks"));
    }
}
