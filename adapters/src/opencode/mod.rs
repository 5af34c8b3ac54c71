//! OpenCode (`opencode`): ADAPTERS.md's OpenCode row.
//!
//! Owns the mapping of what sessionpipe's OpenCode plugin hands over, where that
//! plugin is installed (`plugin`), and reading OpenCode's store for tier 2, facts
//! and backfill (`store`, `transcript`, `backfill`), and the calls control's
//! `api` rung makes to OpenCode's own server (`server`). OpenCode has no shell hook:
//! the plugin (`sessionpipe.js`, running inside OpenCode) writes one job per bus
//! event or tool hook into the spool, in the hook's own job format, with the
//! event's type as the job's event. Each payload is `{type, directory, …}`: a bus
//! event's `properties` as OpenCode gave them, or a tool hook's `input` (`tool`,
//! `sessionID`, `callID`) with its `args`, and after it `title`, `exit`,
//! `truncated` and `output`.
//!
//! The mapping (measured on OpenCode 1.18.33, `conformance/harness/opencode/`):
//! `session.created` → `session.started` (a child session's `parentID` is its
//! parent) · `message.updated` of a user message → `turn.started` (`turn_id` the
//! message id; OpenCode updates a message several times, and a turn starts once)
//! · `tool.execute.before` / `after` → `tool.started` / `tool.ended` (OpenCode
//! calls `after` only for a tool that returned, so `ok`; a shell's own exit code
//! is its output, not the tool's failure) · `permission.asked` →
//! `attention.needed` permission, named by the tool call it asks about ·
//! `session.idle` → `turn.ended` stop · `session.error` → `turn.ended`
//! interrupt (an abort, `MessageAbortedError`) or error · `session.deleted` →
//! `session.ended`. `session.idle` names no turn: the session's memo fills in
//! the running one (`turns`), and an idle with no turn running (OpenCode goes
//! idle after an error, too) reports nothing. `session.deleted` does not fire when `opencode run` exits:
//! OpenCode has no session end otherwise, as the registry says.
//!
//! Like every adapter it does no I/O while mapping. Facts and turns come from
//! the store, read-only, after the job: a session's transcript is addressed
//! `<database>#<session id>`.

mod backfill;
mod plugin;
mod server;
mod store;
mod transcript;
mod turns;

use harness::install::{HookInstall, Host, Target};
use harness::payload::{MAX_MESSAGE_CHARS, capped, cwd_for, one_line, payload_object, str_of};
use harness::transcript::{ReadPlan, TranscriptSource, Want};
use harness::{Adapter, Job, MapError, Mapped, Mapping, Memo, SessionFiles};
use protocol::*;
use serde_json::{Map, Value};
use std::path::PathBuf;

pub struct OpenCode;

const NAME: &str = "opencode";

impl Adapter for OpenCode {
    fn name(&self) -> &'static str {
        NAME
    }

    fn map(&self, job: &Job) -> Result<Mapped, MapError> {
        let p = payload_object(job)?;
        let event = str_of(&p, "type").unwrap_or_else(|| job.event.clone());
        let session_id = match session_of(&event, &p) {
            Some(id) if valid_session_id(&id) => id,
            Some(id) => {
                return Err(MapError(format!(
                    "session id {id:?} is not a valid protocol session id"
                )));
            }
            None => return Err(MapError(format!("the {event} payload names no sessionID"))),
        };
        let events = match map_event(&event, &p) {
            Ok(events) => events,
            Err(why) => return Ok(Mapped::Ignored(why)),
        };
        let props = p.get("properties").and_then(Value::as_object);
        let info = props.and_then(|o| o.get("info")).and_then(Value::as_object);
        let mut block = SessionBlock {
            cwd: folder(&p).map(|f| cwd_for(job, &f)),
            ..Default::default()
        };
        if event == "session.created" {
            block.parent_id = info.and_then(|i| str_of(i, "parentID"));
        }
        Ok(Mapped::Events(Box::new(Mapping {
            session_id,
            block,
            harness_version: info
                .filter(|_| event == "session.created")
                .and_then(|i| str_of(i, "version")),
            events,
            subagent: None,
        })))
    }

    /// The turn bookkeeping (`turns`), and the session's server kept from
    /// every call (`server`).
    fn remember(&self, job: &Job, events: &mut Vec<EventData>, memo: &mut Memo) {
        if let Ok(p) = payload_object(job) {
            server::remember(&p, folder(&p), memo);
        }
        turns::remember(events, memo);
    }

    fn hooks(&self) -> Option<&dyn HookInstall> {
        Some(self)
    }

    fn api(&self) -> Option<&dyn harness::api::SessionApi> {
        Some(&server::Server)
    }

    /// The folder, the session's address in the store, and what the call reads:
    /// a user message the turns closed before it, the idle that ends a turn
    /// everything (its answer is in the store before OpenCode goes idle), a
    /// deleted session what is left.
    fn files(&self, job: &Job) -> SessionFiles {
        let Ok(p) = payload_object(job) else {
            return SessionFiles::default();
        };
        let event = str_of(&p, "type").unwrap_or_else(|| job.event.clone());
        let folder = folder(&p).map(PathBuf::from);
        let transcript = session_of(&event, &p).and_then(|id| {
            let home = job.home()?;
            let var = |k: &str| job.env(k).map(str::to_string);
            let database = store::database(&home, &var);
            database.is_file().then(|| store::address(&database, &id))
        });
        let plan = |want, after| {
            Some(ReadPlan {
                want,
                after,
                hold: false,
                interruption: false,
            })
        };
        let read = match event.as_str() {
            "message.updated" => message_id(&p).and_then(|id| plan(Want::ClosedBefore(id), false)),
            "session.idle" => plan(Want::All, true),
            "session.deleted" => plan(Want::All, false),
            _ => None,
        };
        SessionFiles {
            folder,
            transcript,
            read,
        }
    }

    /// The session row's title (OpenCode's own, once it named the session) and
    /// model, read-only; nothing when the store is missing or busy.
    fn facts(&self, job: &Job, _files: &SessionFiles) -> SessionBlock {
        let Ok(p) = payload_object(job) else {
            return SessionBlock::default();
        };
        let event = str_of(&p, "type").unwrap_or_else(|| job.event.clone());
        let (Some(id), Some(home)) = (session_of(&event, &p), job.home()) else {
            return SessionBlock::default();
        };
        let var = |k: &str| job.env(k).map(str::to_string);
        let database = store::database(&home, &var);
        if !database.is_file() {
            return SessionBlock::default();
        }
        store::open(&database)
            .and_then(|conn| transcript::session_row(&conn, &id).ok().flatten())
            .map(|row| row.facts())
            .unwrap_or_default()
    }

    fn transcript(&self) -> Option<&dyn TranscriptSource> {
        Some(&transcript::OpenCodeTranscript)
    }

    fn backfill(&self, host: &Host, since_ms: i64) -> Vec<harness::backfill::Backfilled> {
        let var = |k: &str| host.var(k).map(str::to_string);
        backfill::sessions(&store::database(&host.home, &var), &host.home, since_ms)
    }
}

/// OpenCode's config folder: `$XDG_CONFIG_HOME/opencode` (absolute), else
/// `~/.config/opencode`.
fn config_dir(host: &Host) -> PathBuf {
    match host.var("XDG_CONFIG_HOME").map(PathBuf::from) {
        Some(dir) if dir.is_absolute() => dir.join("opencode"),
        _ => host.home.join(".config/opencode"),
    }
}

impl HookInstall for OpenCode {
    /// `<config>/plugins/sessionpipe.js`, a file of our own. Found when
    /// OpenCode's config folder exists or `opencode` is on `PATH`.
    fn looked_for(&self, host: &Host) -> Vec<String> {
        vec![host.show(&config_dir(host)), "`opencode` on PATH".into()]
    }

    fn targets(&self, host: &Host) -> Vec<Target> {
        let dir = config_dir(host);
        if !dir.is_dir() && !host.on_path("opencode") {
            return Vec::new();
        }
        vec![Target {
            path: dir.join("plugins/sessionpipe.js"),
            format: &plugin::PLUGIN,
            owned: true,
        }]
    }

    fn note(&self) -> Option<&'static str> {
        Some(
            "OpenCode loads the plugin when it starts: an OpenCode already running is watched from its next start",
        )
    }
}

/// The session a payload is about: a bus event's `sessionID` (a session
/// event's `info.id` too), a tool hook's `input.sessionID`.
fn session_of(event: &str, p: &Map<String, Value>) -> Option<String> {
    let props = p.get("properties").and_then(Value::as_object);
    let from_props = props.and_then(|o| {
        str_of(o, "sessionID").or_else(|| {
            let info = o.get("info").and_then(Value::as_object)?;
            if event.starts_with("session.") {
                str_of(info, "id")
            } else {
                str_of(info, "sessionID")
            }
        })
    });
    from_props.or_else(|| {
        p.get("input")
            .and_then(Value::as_object)
            .and_then(|i| str_of(i, "sessionID"))
    })
}

/// The folder OpenCode runs the session in: the plugin's `directory`, else the
/// session's own.
fn folder(p: &Map<String, Value>) -> Option<String> {
    str_of(p, "directory").or_else(|| {
        p.get("properties")?
            .get("info")?
            .get("directory")?
            .as_str()
            .filter(|d| !d.is_empty())
            .map(str::to_string)
    })
}

/// A user message's id (`message.updated`).
fn message_id(p: &Map<String, Value>) -> Option<String> {
    let info = p.get("properties")?.get("info")?.as_object()?;
    (info.get("role").and_then(Value::as_str) == Some("user"))
        .then(|| str_of(info, "id"))
        .flatten()
}

/// The events of one call, or why it reports nothing.
fn map_event(event: &str, p: &Map<String, Value>) -> Result<Vec<EventData>, String> {
    let props = p.get("properties").and_then(Value::as_object);
    let input = p.get("input").and_then(Value::as_object);
    let one = |e| Ok(vec![e]);
    match event {
        "session.created" => one(EventData::SessionStarted(SessionStarted {
            source: StartSource::Startup,
        })),
        "message.updated" => match message_id(p) {
            Some(id) => one(EventData::TurnStarted(TurnStarted {
                turn_id: Some(id),
                ..Default::default()
            })),
            None => Err("message.updated of a message that is not the person's".into()),
        },
        "tool.execute.before" => {
            let i = input.ok_or("tool.execute.before without its input")?;
            one(EventData::ToolStarted(ToolStarted {
                tool: tool_name(i),
                call_id: str_of(i, "callID"),
                turn_id: None,
                agent_id: None,
                input: p.get("args").map(capped),
            }))
        }
        "tool.execute.after" => {
            let i = input.ok_or("tool.execute.after without its input")?;
            one(EventData::ToolEnded(ToolEnded {
                tool: tool_name(i),
                call_id: str_of(i, "callID"),
                input: i.get("args").map(capped),
                output: p.get("output").map(capped),
                ok: true,
                ..Default::default()
            }))
        }
        "permission.asked" => {
            let o = props.ok_or("permission.asked without its properties")?;
            let call = o
                .get("tool")
                .and_then(Value::as_object)
                .and_then(|t| str_of(t, "callID"));
            let attention_id = call
                .or_else(|| str_of(o, "id"))
                .ok_or("permission.asked names neither its tool call nor itself")?;
            let tool = str_of(o, "permission").map(|t| protocol::fit_tool_name(&t));
            one(EventData::AttentionNeeded(AttentionNeeded {
                attention_id,
                kind: AttentionKind::Permission,
                message: permission_message(o, tool.as_deref()),
                tool,
                agent_id: None,
            }))
        }
        "session.idle" => one(EventData::TurnEnded(TurnEnded::new(
            None,
            TurnEndReason::Stop,
        ))),
        // The running turn ends here: cancelled (an abort), or failed.
        "session.error" => {
            let error = props
                .and_then(|o| o.get("error"))
                .and_then(Value::as_object);
            let name = error.and_then(|e| str_of(e, "name")).unwrap_or_default();
            if name == "MessageAbortedError" {
                return one(EventData::TurnEnded(TurnEnded::new(
                    None,
                    TurnEndReason::Interrupt,
                )));
            }
            let message = error
                .and_then(|e| e.get("data"))
                .and_then(|d| d.get("message"))
                .and_then(Value::as_str)
                .map(|m| one_line(m, MAX_MESSAGE_CHARS))
                .or_else(|| (!name.is_empty()).then_some(name));
            let mut ended = TurnEnded::new(None, TurnEndReason::Error);
            ended.error = message;
            one(EventData::TurnEnded(ended))
        }
        "session.deleted" => one(EventData::SessionEnded(SessionEnded {
            reason: EndReason::Other,
        })),
        other => Err(format!("{other} is not mapped")),
    }
}

fn tool_name(input: &Map<String, Value>) -> String {
    harness::payload::tool_of(input, "tool").unwrap_or_else(|| "unknown".into())
}

/// `bash echo hello`: the permission and what it is asked for (its patterns).
fn permission_message(o: &Map<String, Value>, tool: Option<&str>) -> Option<String> {
    let patterns: Vec<&str> = o
        .get("patterns")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let text = match (tool, patterns.is_empty()) {
        (Some(t), false) => format!("{t} {}", patterns.join(" ")),
        (Some(t), true) => t.to_string(),
        (None, false) => patterns.join(" "),
        (None, true) => return None,
    };
    Some(one_line(&text, MAX_MESSAGE_CHARS))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    const S: &str = "ses_dc93617f6ffeY0aEUi3pxac0pn";

    fn job(payload: Value) -> Job {
        let event = payload["type"].as_str().unwrap().to_string();
        Job {
            harness: NAME.into(),
            argv: vec![NAME.into(), event.clone()],
            event,
            at_ns: 1_796_215_531_662_000_000,
            cwd: "/home/ann/src/app".into(),
            payload: payload.to_string().into_bytes(),
            env: BTreeMap::from([("HOME".to_string(), "/home/ann".to_string())]),
            ..Default::default()
        }
    }

    fn bus(kind: &str, properties: Value) -> Value {
        json!({"type": kind, "directory": "/home/ann/src/app", "properties": properties})
    }

    fn run(payloads: &[Value]) -> Vec<Value> {
        let mut memo = Memo::new();
        let mut out = Vec::new();
        for p in payloads {
            let j = job(p.clone());
            match OpenCode.map(&j).unwrap() {
                Mapped::Events(mut m) => {
                    assert_eq!(m.session_id, S);
                    OpenCode.remember(&j, &mut m.events, &mut memo);
                    for e in m.events {
                        let (kind, data) = e.into_parts();
                        out.push(json!({"type": kind, "data": data}));
                    }
                }
                Mapped::Ignored(_) => {}
            }
        }
        out
    }

    fn user(id: &str) -> Value {
        bus(
            "message.updated",
            json!({"sessionID": S, "info": {"id": id, "role": "user", "sessionID": S}}),
        )
    }

    #[test]
    fn a_turn_with_a_tool_call_in_order_with_its_ids() {
        let events = run(&[
            bus(
                "session.created",
                json!({"sessionID": S, "info": {"id": S, "version": "1.18.33", "directory": "/home/ann/src/app"}}),
            ),
            user("msg_1"),
            user("msg_1"),
            json!({"type": "tool.execute.before", "directory": "/home/ann/src/app",
                   "input": {"tool": "bash", "sessionID": S, "callID": "call_1"},
                   "args": {"command": "echo hello"}}),
            json!({"type": "tool.execute.after", "directory": "/home/ann/src/app",
                   "input": {"tool": "bash", "sessionID": S, "callID": "call_1",
                             "args": {"command": "echo hello"}},
                   "title": "echo hello", "exit": 0, "output": "hello\n"}),
            bus("session.idle", json!({"sessionID": S})),
            bus("session.idle", json!({"sessionID": S})),
        ]);
        assert_eq!(
            events,
            vec![
                json!({"type": "session.started", "data": {"source": "startup"}}),
                json!({"type": "turn.started", "data": {"turn_id": "msg_1"}}),
                json!({"type": "tool.started", "data": {"tool": "bash", "call_id": "call_1",
                       "turn_id": "msg_1", "input": {"command": "echo hello"}}}),
                json!({"type": "tool.ended", "data": {"tool": "bash", "call_id": "call_1",
                       "turn_id": "msg_1", "ok": true, "input": {"command": "echo hello"},
                       "output": "hello\n"}}),
                json!({"type": "turn.ended", "data": {"turn_id": "msg_1", "reason": "stop"}}),
            ]
        );
    }

    #[test]
    fn the_session_block_version_and_parent() {
        let j = job(bus(
            "session.created",
            json!({"sessionID": S, "info": {"id": S, "version": "1.18.33", "parentID": "ses_parent",
                   "directory": "/elsewhere"}}),
        ));
        let Mapped::Events(m) = OpenCode.map(&j).unwrap() else {
            panic!("mapped")
        };
        assert_eq!(m.harness_version.as_deref(), Some("1.18.33"));
        assert_eq!(
            m.block.cwd.as_deref(),
            Some("~/src/app"),
            "the plugin's directory"
        );
        assert_eq!(m.block.parent_id.as_deref(), Some("ses_parent"));
    }

    #[test]
    fn a_permission_is_named_by_its_tool_call() {
        let events = run(&[bus(
            "permission.asked",
            json!({"id": "per_1", "sessionID": S, "permission": "bash", "patterns": ["echo hello"],
                   "metadata": {"command": "echo hello"}, "always": ["echo *"],
                   "tool": {"messageID": "msg_2", "callID": "call_1"}}),
        )]);
        assert_eq!(
            events,
            vec![
                json!({"type": "attention.needed", "data": {"attention_id": "call_1",
                "kind": "permission", "tool": "bash", "message": "bash echo hello"}})
            ]
        );
        let events = run(&[bus(
            "permission.asked",
            json!({"id": "per_2", "sessionID": S, "permission": "webfetch", "patterns": []}),
        )]);
        assert_eq!(events[0]["data"]["attention_id"], "per_2");
    }

    #[test]
    fn a_deleted_session_ends_and_others_are_ignored_or_refused() {
        let events = run(&[bus(
            "session.deleted",
            json!({"sessionID": S, "info": {"id": S}}),
        )]);
        assert_eq!(
            events,
            vec![json!({"type": "session.ended", "data": {"reason": "other"}})]
        );
        let assistant = bus(
            "message.updated",
            json!({"sessionID": S, "info": {"id": "msg_2", "role": "assistant"}}),
        );
        assert!(matches!(
            OpenCode.map(&job(assistant)).unwrap(),
            Mapped::Ignored(_)
        ));
        let status = bus(
            "session.status",
            json!({"sessionID": S, "status": {"type": "busy"}}),
        );
        assert!(matches!(
            OpenCode.map(&job(status)).unwrap(),
            Mapped::Ignored(_)
        ));
        assert!(OpenCode.map(&job(bus("session.idle", json!({})))).is_err());
        assert!(
            OpenCode
                .map(&job(bus("session.idle", json!({"sessionID": "a b"}))))
                .is_err()
        );
    }

    #[test]
    fn an_abort_or_an_error_ends_the_running_turn_once() {
        let aborted = bus(
            "session.error",
            json!({"sessionID": S, "error": {"name": "MessageAbortedError", "data": {"message": "Aborted"}}}),
        );
        let idle = bus("session.idle", json!({"sessionID": S}));
        let events = run(&[user("msg_1"), aborted, idle.clone()]);
        assert_eq!(events.len(), 2, "{events:?}");
        assert_eq!(
            events[1],
            json!({"type": "turn.ended", "data": {"turn_id": "msg_1", "reason": "interrupt"}})
        );
        let failed = bus(
            "session.error",
            json!({"sessionID": S, "error": {"name": "APIError", "data": {"message": "bad\ngateway"}}}),
        );
        let events = run(&[user("msg_1"), failed, idle]);
        assert_eq!(
            events[1],
            json!({"type": "turn.ended", "data": {"turn_id": "msg_1", "reason": "error", "error": "bad gateway"}})
        );
    }

    #[test]
    fn what_each_call_reads() {
        let j = job(user("msg_1"));
        let read = OpenCode.files(&j).read.unwrap();
        assert_eq!(read.want, Want::ClosedBefore("msg_1".into()));
        assert!(!read.after);
        let idle = OpenCode.files(&job(bus("session.idle", json!({"sessionID": S}))));
        assert_eq!(
            idle.read.as_ref().map(|r| (&r.want, r.after)),
            Some((&Want::All, true))
        );
        assert_eq!(idle.folder, Some(PathBuf::from("/home/ann/src/app")));
        assert_eq!(idle.transcript, None, "no store in this home");
        let tool =
            json!({"type": "tool.execute.before", "input": {"tool": "bash", "sessionID": S}});
        assert!(OpenCode.files(&job(tool)).read.is_none());
    }

    #[test]
    fn the_store_gives_the_facts_and_the_address() {
        let s = transcript::testdb::Store::new();
        s.session(S, "Title here", 1, 2);
        let home = s.dir.path().join("home");
        let data = s.dir.path().join("data");
        std::fs::create_dir_all(data.join("opencode")).unwrap();
        std::fs::rename(&s.path, data.join("opencode/opencode.db")).unwrap();
        let _ = std::fs::rename(
            s.path.with_extension("db-wal"),
            data.join("opencode/opencode.db-wal"),
        );
        let mut j = job(bus("session.idle", json!({"sessionID": S})));
        j.env = BTreeMap::from([
            ("HOME".to_string(), home.to_string_lossy().into_owned()),
            (
                "XDG_DATA_HOME".to_string(),
                data.to_string_lossy().into_owned(),
            ),
        ]);
        let files = OpenCode.files(&j);
        let db = data.join("opencode/opencode.db");
        assert_eq!(files.transcript, Some(store::address(&db, S)));
        let facts = OpenCode.facts(&j, &files);
        assert_eq!(facts.model.as_deref(), Some("mock/mock-model"));
    }

    #[test]
    fn installed_in_the_config_folder_only_where_opencode_is() {
        let dir = tempfile::tempdir().unwrap();
        let host = Host {
            home: dir.path().to_path_buf(),
            vars: BTreeMap::new(),
        };
        assert!(OpenCode.targets(&host).is_empty());
        std::fs::create_dir_all(dir.path().join(".config/opencode")).unwrap();
        let t = OpenCode.targets(&host);
        assert_eq!(
            t[0].path,
            dir.path().join(".config/opencode/plugins/sessionpipe.js")
        );
        assert!(t[0].owned);
    }
}
