//! The Claude-shaped harnesses, as one table each: the harnesses whose hooks copy
//! Claude Code's (`{"hooks": {"<Event>": [...]}}`, a JSON payload per call with a
//! session id, a turn id, tool names and inputs). A `Table` says, per native
//! event, which protocol event it becomes (`Rule`), what the call reads of the
//! transcript (`Read`), and how its hook entry is written (`HookEvent`); where the
//! ids, the folder and the model come from; and the few words a harness spells its
//! own way. `map` and `files` run any table; what a harness does that no table
//! says (Grok's twin keys, Codex's subagents, Devin's tool result) is its
//! `Shaped` impl's, and stays in its adapter's folder.
//!
//! Nothing here knows a particular harness. No I/O: `files` only names files.

use crate::adapter::{MapError, Mapped, Mapping, Memo, SessionFiles};
use crate::install::{HookEvent, HooksLayout};
use crate::payload::{
    MAX_MESSAGE_CHARS, ToolKeys, char_count, cwd_for, error_text, hook_event, one_line,
    payload_object, session_id, str_of, tool_ended, tool_message, tool_of, tool_started,
    turn_error,
};
use crate::transcript::{ReadPlan, Want};
use protocol::{
    AttentionKind, AttentionNeeded, CompactTrigger, ContextCompacted, EndReason, EventData,
    SessionBlock, SessionEnded, SessionStarted, StartSource, SubagentEnded, SubagentStarted,
    TurnEndReason, TurnEnded, TurnStarted,
};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use spool::Job;
use std::borrow::Cow;
use std::path::PathBuf;

/// One harness's Claude-shaped hooks.
#[derive(Debug)]
pub struct Table {
    pub harness: &'static str,
    /// The payload key of the session id.
    pub session_key: &'static str,
    /// Where a tool call's fields are; `tool.turn_id` is the turn id's key for
    /// every event.
    pub tool: ToolKeys,
    /// Where a subagent's id is, first key first.
    pub agent_keys: &'static [&'static str],
    /// Where the session's folder comes from, first found first.
    pub folder: &'static [Folder],
    /// The payload key of the model, when the payload names one.
    pub model_key: Option<&'static str>,
    /// The payload key of the transcript's path, when it has one.
    pub transcript_key: Option<&'static str>,
    /// Where `SessionStart` finds its source word, first key first, and the
    /// harness's own words for the protocol's sources.
    pub start_keys: &'static [&'static str],
    pub start_words: &'static [(&'static str, StartSource)],
    /// The harness's own words for the protocol's end reasons.
    pub end_words: &'static [(&'static str, EndReason)],
    /// Event names match ignoring case and `_` (`pre_tool_use` is `PreToolUse`).
    pub folded_names: bool,
    /// Prompts, compactions and starts look for the running turn's interruption
    /// in the transcript (the harness writes one there).
    pub interruptions: bool,
    /// Hook timeout in seconds, unless an event says otherwise.
    pub timeout_s: u64,
    pub rows: &'static [Row],
}

/// One native event.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    /// The entry written for it (its name, matcher, timeout).
    pub hook: HookEvent,
    pub rule: Rule,
    pub read: Read,
}

impl Row {
    pub const fn new(hook: HookEvent, rule: Rule, read: Read) -> Row {
        Row { hook, rule, read }
    }
}

/// Where a session's folder is read.
#[derive(Clone, Copy, Debug)]
pub enum Folder {
    /// A payload key.
    Payload(&'static str),
    /// An environment variable the hook saw.
    Env(&'static str),
    /// The hook process's own working directory: for `session.cwd` only, never
    /// for the folder facts are read in.
    HookCwd,
}

/// What a native event becomes.
#[derive(Clone, Copy, Debug)]
pub enum Rule {
    /// `session.started`, its source from `start_keys`.
    SessionStart,
    /// `turn.started`: the turn id and the prompt's length.
    Prompt,
    ToolStart,
    /// `tool.ended`; a failure carries the payload's `error`.
    ToolEnd {
        ok: bool,
    },
    /// `attention.needed` permission for the tool call the payload names.
    Permission(PermissionId),
    /// `attention.needed` of the kind `notification_type` says.
    Notification,
    /// A `permission_prompt` notification as a permission attention; any other
    /// notification reports nothing.
    PermissionPrompt,
    /// `turn.ended`; an error carries the payload's `error` class.
    TurnEnd(TurnEndReason),
    SubagentStart,
    SubagentStop,
    Compact(Trigger),
    /// `session.ended`, its reason from `reason` and `end_words`.
    SessionEnd,
}

/// How a permission attention is named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PermissionId {
    /// Always minted from the request (`permission_attention_id`), as Claude
    /// Code's payload carries no tool-use id.
    Minted,
    /// The payload's tool-use id, minted only where a build leaves it out.
    ToolUseOrMinted,
}

/// What started a compaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// `manual` when the payload's `trigger` says so, else `auto`.
    FromPayload,
    /// The harness says nothing of who asked: `auto`.
    Auto,
}

/// What a call asks of the session's transcript.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    Nothing,
    /// A prompt: the turns closed before its own (by its turn id when it names
    /// one), which is not its to send.
    Prompt,
    /// The turns a later ask closed (a start, a compaction).
    Closed,
    /// The turns asked before the call (a start, where every finished turn in
    /// the file is closed and a catching-up daemon must not send this run's).
    AskedBefore,
    /// A Stop: its turn, held until its `last_assistant_message` is the file's
    /// last words; without words, as `otherwise` says.
    StopWords {
        otherwise: StopWithout,
    },
    /// The turn as it stands, after the call's own event (a failed or cancelled
    /// turn).
    AsItStands,
    /// Everything there is (the session's end), and the running turn's
    /// interruption where the harness wrote one (a turn stopped, then the
    /// session closed: no other hook says so).
    All,
}

/// What a Stop that names no words reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopWithout {
    /// Everything, as it stands (a turn that ended on a tool call).
    All,
    /// The turns asked before the call (its own, not a later one).
    AskedBefore,
    /// Its turn, held until the transcript has the harness's own record of
    /// this Stop (`Shaped::stop_written_at`; Copilot CLI writes every hook
    /// call into its log, and writes the log late); everything as it stands
    /// where the call gives no time.
    Written,
}

/// Why a call maps to nothing.
#[derive(Debug)]
pub enum NotMapped {
    /// On purpose: the reason is for logs and tests.
    Ignored(String),
    /// The call cannot be read at all: quarantined with this reason.
    Invalid(MapError),
}

impl From<MapError> for NotMapped {
    fn from(e: MapError) -> Self {
        NotMapped::Invalid(e)
    }
}

/// One call, as the table sees it.
pub struct Call<'a> {
    pub job: &'a Job,
    pub payload: &'a Map<String, Value>,
    /// The event as the table names it (its row's), or as the call named it.
    pub event: &'a str,
    pub session_id: &'a str,
}

/// What a Claude-shaped harness does beside its table.
pub trait Shaped: Sync {
    fn table(&self) -> &'static Table;
    /// The payload as the table reads it (Grok fills its twin keys), or why the
    /// call is not this harness's to report (another harness's payload, an
    /// ephemeral thread).
    fn prepare(
        &self,
        _job: &Job,
        payload: Map<String, Value>,
    ) -> Result<Map<String, Value>, NotMapped> {
        Ok(payload)
    }
    /// Changes the table's event, or says the call reports nothing after all.
    fn adjust(&self, _call: &Call<'_>, _event: &mut EventData) -> Result<(), NotMapped> {
        Ok(())
    }
    /// Events the table has no row for (Claude Code's status line).
    fn unlisted(&self, call: &Call<'_>) -> Result<Vec<EventData>, NotMapped> {
        Err(NotMapped::Ignored(format!("{} is not mapped", call.event)))
    }
    /// What the call says of the session beyond the table's folder and model.
    fn block(&self, _call: &Call<'_>, _block: &mut SessionBlock) {}
    fn version(&self, _job: &Job) -> Option<String> {
        None
    }
    /// False for calls whose transcript is not the session's (a subagent's).
    fn own_call(&self, _job: &Job, _payload: &Map<String, Value>) -> bool {
        true
    }
    /// The id a subagent this call started fires its own hooks under, when
    /// that is not the session's (`Mapping::subagent`).
    fn subagent(&self, _call: &Call<'_>) -> Option<String> {
        None
    }
    /// The session's transcript, as the call names it.
    fn transcript(&self, job: &Job, payload: &Map<String, Value>) -> Option<PathBuf> {
        let _ = job;
        str_of(payload, self.table().transcript_key?).map(PathBuf::from)
    }
    /// The instant a call's `AskedBefore` reads compare with.
    fn asked_before(&self, job: &Job, _payload: &Map<String, Value>) -> i64 {
        job.at_ms()
    }
    /// The time a Stop's own record in the transcript carries
    /// (`StopWithout::Written`, `Rec::Stopped`), where the harness writes one.
    fn stop_written_at(&self, _job: &Job, _payload: &Map<String, Value>) -> Option<i64> {
        None
    }
}

impl Table {
    /// The row of `event`.
    pub fn row(&self, event: &str) -> Option<&'static Row> {
        let fold = |s: &str| s.replace('_', "").to_ascii_lowercase();
        self.rows.iter().find(|r| {
            if self.folded_names {
                fold(r.hook.name) == fold(event)
            } else {
                r.hook.name == event
            }
        })
    }

    /// How the hook entries are written: one per row.
    pub fn layout(&self) -> HooksLayout {
        HooksLayout {
            events: Cow::Owned(self.rows.iter().map(|r| r.hook).collect()),
            timeout_s: self.timeout_s,
            timeout_unit_ms: false,
            handler_name: None,
        }
    }

    /// The event names of the rows.
    pub fn names(&self) -> Vec<&'static str> {
        self.rows.iter().map(|r| r.hook.name).collect()
    }

    /// The session's folder as facts are read in it (never the hook's own).
    fn folder(&self, job: &Job, p: &Map<String, Value>) -> Option<String> {
        self.folder.iter().find_map(|f| match f {
            Folder::Payload(k) => str_of(p, k),
            Folder::Env(k) => job.env(k).map(str::to_string),
            Folder::HookCwd => None,
        })
    }

    /// The folder `session.cwd` shows: the facts' folder, else the hook's own.
    fn shown_folder(&self, job: &Job, p: &Map<String, Value>) -> Option<String> {
        self.folder(job, p).or_else(|| {
            self.folder
                .iter()
                .any(|f| matches!(f, Folder::HookCwd))
                .then(|| job.cwd.clone())
                .filter(|c| !c.is_empty())
        })
    }

    fn turn_id(&self, p: &Map<String, Value>) -> Option<String> {
        str_of(p, self.tool.turn_id)
    }

    fn agent_id(&self, p: &Map<String, Value>) -> Option<String> {
        self.agent_keys.iter().find_map(|k| str_of(p, k))
    }

    fn start_source(&self, p: &Map<String, Value>) -> StartSource {
        let word = self.start_keys.iter().find_map(|k| str_of(p, k));
        let word = word.as_deref().unwrap_or("");
        self.start_words
            .iter()
            .find(|(w, _)| *w == word)
            .map(|(_, s)| *s)
            .unwrap_or_else(|| StartSource::from_word(word))
    }

    fn end_reason(&self, p: &Map<String, Value>) -> EndReason {
        let word = str_of(p, "reason").unwrap_or_default();
        self.end_words
            .iter()
            .find(|(w, _)| *w == word)
            .map(|(_, r)| *r)
            .unwrap_or_else(|| EndReason::from_word(&word))
    }
}

/// Maps one call of a Claude-shaped harness.
pub fn map(shaped: &dyn Shaped, job: &Job) -> Result<Mapped, MapError> {
    let table = shaped.table();
    let p = match shaped.prepare(job, payload_object(job)?) {
        Ok(p) => p,
        Err(NotMapped::Ignored(why)) => return Ok(Mapped::Ignored(why)),
        Err(NotMapped::Invalid(e)) => return Err(e),
    };
    let session = session_id(&p, table.session_key)?;
    let named = hook_event(job, &p);
    let row = table.row(&named);
    let call = Call {
        job,
        payload: &p,
        event: row.map_or(named.as_str(), |r| r.hook.name),
        session_id: &session,
    };
    let events = match row {
        Some(row) => event_of(table, &row.rule, &call).and_then(|mut e| {
            shaped.adjust(&call, &mut e)?;
            Ok(vec![e])
        }),
        None => shaped.unlisted(&call),
    };
    let events = match events {
        Ok(e) => e,
        Err(NotMapped::Ignored(why)) => return Ok(Mapped::Ignored(why)),
        Err(NotMapped::Invalid(e)) => return Err(e),
    };
    let mut block = SessionBlock {
        cwd: table.shown_folder(job, &p).map(|f| cwd_for(job, &f)),
        model: table.model_key.and_then(|k| str_of(&p, k)),
        ..Default::default()
    };
    shaped.block(&call, &mut block);
    Ok(Mapped::Events(Box::new(Mapping {
        session_id: session.clone(),
        block,
        harness_version: shaped.version(job),
        subagent: shaped.subagent(&call),
        events,
    })))
}

/// Where the call's session lives on disk and what the call reads of it.
pub fn files(shaped: &dyn Shaped, job: &Job) -> SessionFiles {
    let table = shaped.table();
    let Some(p) = payload_object(job)
        .ok()
        .and_then(|p| shaped.prepare(job, p).ok())
    else {
        return SessionFiles::default();
    };
    let own = shaped.own_call(job, &p);
    let read = table
        .row(&hook_event(job, &p))
        .and_then(|row| plan(shaped, row.read, job, &p))
        .filter(|_| own);
    SessionFiles {
        folder: table.folder(job, &p).map(PathBuf::from),
        transcript: shaped.transcript(job, &p).filter(|_| own),
        read,
    }
}

fn plan(shaped: &dyn Shaped, read: Read, job: &Job, p: &Map<String, Value>) -> Option<ReadPlan> {
    let table = shaped.table();
    let plan = |want, after, hold, interruption| {
        Some(ReadPlan {
            want,
            after,
            hold,
            interruption: interruption && table.interruptions,
        })
    };
    match read {
        Read::Nothing => None,
        Read::Prompt => match table.turn_id(p) {
            Some(id) => plan(Want::ClosedBefore(id), false, false, true),
            None => plan(Want::Closed, false, false, true),
        },
        Read::Closed => plan(Want::Closed, false, false, true),
        Read::AskedBefore => plan(
            Want::AskedBefore(shaped.asked_before(job, p)),
            false,
            false,
            false,
        ),
        Read::StopWords { otherwise } => match str_of(p, "last_assistant_message") {
            Some(words) => plan(Want::EndedWith(words), true, true, false),
            None => match otherwise {
                StopWithout::All => plan(Want::All, true, false, false),
                StopWithout::AskedBefore => plan(
                    Want::AskedBefore(shaped.asked_before(job, p)),
                    true,
                    false,
                    false,
                ),
                StopWithout::Written => match shaped.stop_written_at(job, p) {
                    Some(at) => plan(Want::StoppedAt(at), true, true, false),
                    None => plan(Want::All, true, false, false),
                },
            },
        },
        Read::AsItStands => plan(Want::All, true, false, false),
        Read::All => plan(Want::All, false, false, true),
    }
}

/// The table's event for one call.
fn event_of(table: &Table, rule: &Rule, call: &Call<'_>) -> Result<EventData, NotMapped> {
    let p = call.payload;
    let k = &table.tool;
    Ok(match rule {
        Rule::SessionStart => EventData::SessionStarted(SessionStarted {
            source: table.start_source(p),
        }),
        Rule::Prompt => EventData::TurnStarted(TurnStarted {
            turn_id: table.turn_id(p),
            prompt_chars: p.get("prompt").and_then(Value::as_str).map(char_count),
            ..Default::default()
        }),
        Rule::ToolStart => EventData::ToolStarted(tool_started(p, k)),
        Rule::ToolEnd { ok: true } => EventData::ToolEnded(tool_ended(p, k, true, None)),
        Rule::ToolEnd { ok: false } => {
            EventData::ToolEnded(tool_ended(p, k, false, error_text(p.get("error"))))
        }
        Rule::Permission(naming) => {
            let tool = tool_of(p, k.tool).unwrap_or_else(|| "unknown".into());
            let input = p.get(k.input);
            let minted = || {
                permission_attention_id(
                    &table.turn_id(p).unwrap_or_default(),
                    &tool,
                    input.unwrap_or(&Value::Null),
                )
            };
            let attention_id = match naming {
                PermissionId::Minted => minted(),
                PermissionId::ToolUseOrMinted => str_of(p, k.call_id).unwrap_or_else(minted),
            };
            EventData::AttentionNeeded(AttentionNeeded {
                attention_id,
                kind: AttentionKind::Permission,
                message: Some(tool_message(&tool, input)),
                tool: Some(tool),
                agent_id: table.agent_id(p),
            })
        }
        Rule::Notification => {
            let kind = match str_of(p, "notification_type").as_deref() {
                Some("permission_prompt") => AttentionKind::Permission,
                Some("idle_prompt") => AttentionKind::Idle,
                Some("elicitation_dialog") => AttentionKind::Elicitation,
                _ => AttentionKind::Question,
            };
            EventData::AttentionNeeded(AttentionNeeded {
                attention_id: format!("notif-{}", call.job.at_ms()),
                kind,
                tool: None,
                message: str_of(p, "message").map(|m| one_line(&m, MAX_MESSAGE_CHARS)),
                agent_id: table.agent_id(p),
            })
        }
        Rule::PermissionPrompt => {
            if let Some(kind) = str_of(p, "notification_type").filter(|k| k != "permission_prompt")
            {
                return Err(NotMapped::Ignored(format!(
                    "a {kind} notification is not a permission prompt"
                )));
            }
            let tool = tool_of(p, k.tool);
            let message = str_of(p, "message")
                .map(|m| one_line(&m, MAX_MESSAGE_CHARS))
                .or_else(|| tool.as_deref().map(|t| tool_message(t, p.get(k.input))));
            EventData::AttentionNeeded(AttentionNeeded {
                attention_id: str_of(p, k.call_id)
                    .unwrap_or_else(|| format!("notif-{}", call.job.at_ms())),
                kind: AttentionKind::Permission,
                tool,
                message,
                agent_id: table.agent_id(p),
            })
        }
        Rule::TurnEnd(reason) => {
            let mut ended = TurnEnded::new(table.turn_id(p), *reason);
            if *reason == TurnEndReason::Error {
                ended.error = turn_error(p.get("error"));
            }
            EventData::TurnEnded(ended)
        }
        Rule::SubagentStart | Rule::SubagentStop => {
            let agent_id = table.agent_id(p).ok_or_else(|| {
                NotMapped::Invalid(MapError("a subagent hook without agent_id".into()))
            })?;
            let agent_type = str_of(p, "agent_type");
            if matches!(rule, Rule::SubagentStart) {
                EventData::SubagentStarted(SubagentStarted {
                    agent_id,
                    agent_type,
                })
            } else {
                EventData::SubagentEnded(SubagentEnded {
                    agent_id,
                    agent_type,
                    background: None,
                })
            }
        }
        Rule::Compact(trigger) => EventData::ContextCompacted(ContextCompacted {
            trigger: match (trigger, str_of(p, "trigger").as_deref()) {
                (Trigger::FromPayload, Some("manual")) => CompactTrigger::Manual,
                _ => CompactTrigger::Auto,
            },
        }),
        Rule::SessionEnd => EventData::SessionEnded(SessionEnded {
            reason: table.end_reason(p),
        }),
    })
}

/// `perm-` + the first 16 hex digits of `sha256(prompt_id | tool | input)`, the
/// input as `JSON.stringify` writes it (compact, the payload's key order): the
/// same request always names the same attention (ADAPTERS.md, Ids).
pub fn permission_attention_id(prompt_id: &str, tool: &str, input: &Value) -> String {
    let mut h = Sha256::new();
    h.update(prompt_id.as_bytes());
    h.update(b"|");
    h.update(tool.as_bytes());
    h.update(b"|");
    h.update(input.to_string().as_bytes());
    format!("perm-{}", hex::encode(&h.finalize()[..8]))
}

/// The session's memo: a PreCompact ran and its PostCompact has not yet.
const MEMO_COMPACTING: &str = "compacting";

/// One compaction is one `context.compacted`, for a harness that fires a hook
/// before it and one after: the PreCompact reports it, and the PostCompact that
/// follows reports nothing; a PostCompact alone (its PreCompact hook did not run)
/// still reports it. For an adapter's `remember`, with the session's memo.
pub fn one_compaction(event: &str, events: &mut Vec<protocol::EventData>, memo: &mut Memo) {
    match event {
        "PreCompact" => {
            memo.insert(MEMO_COMPACTING.into(), Value::Bool(true));
        }
        "PostCompact" if memo.remove(MEMO_COMPACTING).is_some() => events.clear(),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    static ROWS: &[Row] = &[
        Row::new(
            HookEvent::plain("SessionStart"),
            Rule::SessionStart,
            Read::Closed,
        ),
        Row::new(
            HookEvent::matched("PreToolUse"),
            Rule::ToolStart,
            Read::Nothing,
        ),
        Row::new(
            HookEvent::plain("Stop"),
            Rule::TurnEnd(TurnEndReason::Stop),
            Read::StopWords {
                otherwise: StopWithout::All,
            },
        ),
    ];
    static TABLE: Table = Table {
        harness: "test",
        session_key: "session_id",
        tool: crate::payload::CLAUDE_TOOL_KEYS,
        agent_keys: &["agent_id"],
        folder: &[Folder::Payload("cwd"), Folder::HookCwd],
        model_key: Some("model"),
        transcript_key: Some("transcript_path"),
        start_keys: &["source"],
        start_words: &[("new", StartSource::Startup)],
        end_words: &[],
        folded_names: true,
        interruptions: true,
        timeout_s: 5,
        rows: ROWS,
    };
    struct Plain;
    impl Shaped for Plain {
        fn table(&self) -> &'static Table {
            &TABLE
        }
    }

    fn job(event: &str, p: Value) -> Job {
        Job {
            event: event.into(),
            cwd: "/hook/cwd".into(),
            payload: p.to_string().into_bytes(),
            ..Default::default()
        }
    }

    #[test]
    fn a_row_maps_its_event_with_the_tables_words_and_keys() {
        let Mapped::Events(m) = map(
            &Plain,
            &job(
                "session_start",
                json!({"session_id": "s", "source": "new", "model": "m"}),
            ),
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!(m.events[0].kind(), "session.started");
        assert_eq!(m.events[0].clone().into_parts().1["source"], "startup");
        assert_eq!(m.block.cwd.as_deref(), Some("/hook/cwd"));
        assert_eq!(m.block.model.as_deref(), Some("m"));
        assert!(matches!(
            map(&Plain, &job("Unknown", json!({"session_id": "s"}))).unwrap(),
            Mapped::Ignored(_)
        ));
        assert!(
            map(&Plain, &job("Stop", json!({}))).is_err(),
            "no session id"
        );
    }

    #[test]
    fn reads_follow_the_row() {
        let stop = files(
            &Plain,
            &job(
                "Stop",
                json!({"session_id": "s", "transcript_path": "/t", "last_assistant_message": "Done."}),
            ),
        );
        assert_eq!(stop.transcript, Some(PathBuf::from("/t")));
        assert_eq!(stop.folder, None, "the hook's folder is not the session's");
        let plan = stop.read.unwrap();
        assert_eq!(plan.want, Want::EndedWith("Done.".into()));
        assert!(plan.after && plan.hold);
        let start = files(&Plain, &job("SessionStart", json!({"session_id": "s"})));
        assert!(start.read.unwrap().interruption);
        assert_eq!(
            files(&Plain, &job("PreToolUse", json!({"session_id": "s"}))).read,
            None
        );
        let names = TABLE.layout();
        assert_eq!(names.events.len(), 3);
    }

    #[test]
    fn permission_ids_are_stable_and_match_the_recorded_fixture() {
        let input = json!({"command": "cat /nonexistent-file-xyz", "description": "Try to read a file that doesn't exist"});
        let id = permission_attention_id("5e6e20e7-82a4-4865-8967-b2c9adae76c4", "Bash", &input);
        assert_eq!(id, "perm-1bb18c870624a063");
    }
}
